/* gj_module: made for an encoding (programs compiled on first use) or from a given
 * program; prepared (compiled now, in parallel); destroyed; described. */
#include "runtime/module.h"

#include "compile/encoding_unit.h"
#include "codegen/options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The backward's warp aggregation (docs/runtime.md, "Launch shapes"): from this many lanes
 * of a warp in the cell of the lane before them. Measured on an H200 with samples along
 * rays: 2 gave the fastest backward; uniform points never reach it. */
#define GJ__DEFAULT_AGGREGATE_MIN 2ull

/* ------------------------------------------------------------------ probe */

static gj_status describe_device(const gj__diag *ctx, gj__driver *drv, gj_runtime_info *info) {
    CUcontext current = NULL;
    CUdevice device = 0;
    gj_status status = gj__cuda_check(ctx, drv, drv->CtxGetCurrent(&current), "cuCtxGetCurrent");
    if (status == GJ_OK) { /* no context is created here: the current one's device, else device 0 */
        status = current ? gj__cuda_check(ctx, drv, drv->CtxGetDevice(&device), "cuCtxGetDevice")
                         : gj__cuda_check(ctx, drv, drv->DeviceGet(&device, 0), "cuDeviceGet");
    }
    if (status == GJ_OK) {
        status = gj__cuda_check(ctx, drv, drv->DeviceGetName(info->device_name, (int)sizeof info->device_name, device),
                                "cuDeviceGetName");
    }
    if (status == GJ_OK) {
        status = gj__cuda_check(
            ctx, drv, drv->DeviceGetAttribute(&info->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
            "cuDeviceGetAttribute");
    }
    if (status == GJ_OK) {
        status = gj__cuda_check(
            ctx, drv, drv->DeviceGetAttribute(&info->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
            "cuDeviceGetAttribute");
    }
    info->device = (int)device;
    snprintf(info->arch, sizeof info->arch, "sm_%d%d", info->cc_major, info->cc_minor);
    return status;
}

gj_status gj__runtime_probe(gj__runtime *rt, gj_runtime_info *info) {
    memset(info, 0, sizeof *info);
    gj__driver *drv = NULL;
    gj_status status = gj__driver_get(rt->driver, rt->diag, &drv);
    if (status == GJ_ERROR_NO_DEVICE) {
        info->driver_found = 1;
    }
    if (status != GJ_OK) {
        return status;
    }
    info->driver_found = 1;
    info->driver_version = drv->version;
    info->device_count = drv->device_count;
    return describe_device(rt->diag, drv, info);
}

static gj_status check_load_arguments(const gj__diag *ctx, const char *call, const gj_encoding *enc,
                                      const gj_codegen_options *opts, gj_module **out, gj_codegen_options *resolved) {
    if (out) {
        *out = NULL;
    }
    if (!enc || !out) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "%s: enc and out must not be NULL", call);
    }
    gj_status status = gj__codegen_options_resolve(ctx, opts, resolved);
    if (status == GJ_OK && resolved->device_functions_only) {
        status = gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT,
                          "%s: device_functions_only must be 0: a module needs the __global__ kernels", call);
    }
    return status;
}

/* The program must be what enc and opts compile to: its kernels, and (where it kept
 * it) its source. A program of another configuration or other options would run
 * wrong kernels with the checks of this module. */
static gj_status check_program(gj__runtime *rt, const gj_encoding *enc, const gj_codegen_options *opts,
                               const gj_program *prog) {
    static const char call[] = "gj_module_load";
    const gj__diag *ctx = rt->diag;
    size_t size = 0;
    const void *binary = gj_program_binary(prog, &size);
    const gj_binary_kind kind = gj_program_kind(prog);
    if (!binary || size == 0 || (kind != GJ_BINARY_CUBIN && kind != GJ_BINARY_PTX)) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "%s: the program holds no cubin or PTX (failed compile?)", call);
    }
    for (int k = 0; k < GJ__KERNEL_COUNT; ++k) {
        if (!gj__kernel_present((gj__kernel_id)k, opts)) {
            continue;
        }
        char expression[128];
        gj__kernel_expression(expression, sizeof expression, opts->name, (gj__kernel_id)k);
        if (!gj__program_lowered(prog, expression)) {
            return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT,
                            "%s: the program has no kernel %s: it was compiled for other codegen options", call,
                            expression);
        }
    }
    const char *source = gj_program_source(prog);
    if (source && source[0]) {
        char *expected = gj__encoding_source(rt->compiler, enc, opts, GJ__PART_ALL);
        if (!expected) {
            return gj__fail(rt->diag, GJ_ERROR_OUT_OF_MEMORY, "%s: out of memory generating the source to compare", call);
        }
        const int same = strcmp(expected, source) == 0;
        free(expected);
        if (!same) {
            return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT,
                            "%s: the program was compiled from other source than this encoding and these codegen "
                            "options generate (another configuration or other options)",
                            call);
        }
    }
    return GJ_OK;
}

/* An unsigned number from the environment, or fallback when unset or not a number. */
static uint64_t env_number(const char *name, uint64_t fallback) {
    const char *text = getenv(name);
    if (!text || !*text) {
        return fallback;
    }
    char *end = NULL;
    errno = 0;
    const unsigned long long value = strtoull(text, &end, 10);
    return (errno || *end || text[0] == '-') ? fallback : (uint64_t)value;
}

/* A resident-warps cap from the environment (at most 64), or fallback when unset. */
static uint32_t env_warps(const char *name, uint32_t fallback) {
    const uint64_t warps = env_number(name, fallback);
    return warps > 64 ? 64u : (uint32_t)warps;
}

/* Coarse blocks per multiprocessor from the environment (1 to 32), or fallback when unset. */
static uint32_t env_blocks_per_sm(const char *name, uint32_t fallback) {
    const uint64_t blocks = env_number(name, fallback);
    return blocks < 1 ? 1u : blocks > 32 ? 32u : (uint32_t)blocks;
}

/* Overrides of the launch shapes from the environment (docs/runtime.md, "Launch shapes"),
 * read once per module: GRIDJIT_LEVELS_PER_THREAD (where the options leave it automatic),
 * GRIDJIT_AGGREGATE_MIN, GRIDJIT_STAGE_CARVEOUT, GRIDJIT_FORWARD_WARPS_PER_SM,
 * GRIDJIT_STAGED_FORWARD_WARPS_PER_SM and GRIDJIT_GROUPED_FORWARD_WARPS_PER_SM (the one-level
 * forwards', the staging ones' with or without dy/dx, and the other level-group forwards'
 * resident warps a multiprocessor, at most 64, 0: no cap; unset: the shape's default,
 * gj__module_shape_make), GRIDJIT_COARSE_BLOCKS_PER_SM and GRIDJIT_COARSE_BESIDE_BLOCKS_PER_SM
 * (the coarse kernels' blocks, 1 to 32, after and beside the main backward kernel) and
 * GRIDJIT_COARSE_BESIDE_MIN_POINTS (0: never beside). */
static void launch_tuning(gj__module_shape *shape) {
    if (shape->levels_per_thread == 0) {
        const uint64_t levels = env_number("GRIDJIT_LEVELS_PER_THREAD", 0);
        shape->levels_per_thread = levels > 128 ? 128u : (uint32_t)levels;
    }
    const uint64_t aggregate = env_number("GRIDJIT_AGGREGATE_MIN", GJ__DEFAULT_AGGREGATE_MIN);
    shape->aggregate_min = aggregate > 32 ? 32u : (uint32_t)aggregate;
    shape->stage_carveout = env_number("GRIDJIT_STAGE_CARVEOUT", 1) != 0;
    shape->forward_warps_per_sm = env_warps("GRIDJIT_FORWARD_WARPS_PER_SM", shape->forward_warps_per_sm);
    shape->staged_forward_warps_per_sm =
        env_warps("GRIDJIT_STAGED_FORWARD_WARPS_PER_SM", shape->staged_forward_warps_per_sm);
    shape->staged_dydx_forward_warps_per_sm =
        env_warps("GRIDJIT_STAGED_FORWARD_WARPS_PER_SM", shape->staged_dydx_forward_warps_per_sm);
    shape->grouped_forward_warps_per_sm =
        env_warps("GRIDJIT_GROUPED_FORWARD_WARPS_PER_SM", shape->grouped_forward_warps_per_sm);
    shape->coarse_blocks_per_sm = env_blocks_per_sm("GRIDJIT_COARSE_BLOCKS_PER_SM", shape->coarse_blocks_per_sm);
    shape->coarse_beside_blocks_per_sm =
        env_blocks_per_sm("GRIDJIT_COARSE_BESIDE_BLOCKS_PER_SM", shape->coarse_beside_blocks_per_sm);
    shape->coarse_beside_min_points = env_number("GRIDJIT_COARSE_BESIDE_MIN_POINTS", shape->coarse_beside_min_points);
}

static gj_status new_module(gj__runtime *rt, const gj_encoding *enc, const gj_codegen_options *resolved,
                            const char *call, gj_module **out) {
    gj__driver *drv = NULL;
    gj_status status = gj__driver_get(rt->driver, rt->diag, &drv);
    if (status != GJ_OK) {
        return status;
    }
    gj_module *m = calloc(1, sizeof *m);
    if (!m || gj__context_cache_init(&m->contexts, GJ__KERNEL_COUNT) != 0) {
        free(m);
        return gj__fail(rt->diag, GJ_ERROR_OUT_OF_MEMORY, "%s: out of memory", call);
    }
    m->rt = rt;
    m->diag = rt->diag;
    m->drv = drv;
    memcpy(&m->enc, enc, sizeof m->enc);
    m->opts = *resolved;
    snprintf(m->name, sizeof m->name, "%s", resolved->name);
    m->opts.name = m->name;
    gj__module_shape_make(&m->shape, &m->enc, &m->opts);
    launch_tuning(&m->shape);
    pthread_mutex_init(&m->lock, NULL);
    gj__side_streams_init(&m->beside);
    *out = m;
    return GJ_OK;
}

gj_status gj__module_create(gj__runtime *rt, const gj_encoding *enc, const gj_codegen_options *opts, gj_module **out) {
    gj_codegen_options resolved;
    gj_status status = check_load_arguments(rt->diag, "gj_module_create", enc, opts, out, &resolved);
    return status == GJ_OK ? new_module(rt, enc, &resolved, "gj_module_create", out) : status;
}

gj_status gj__module_load(gj__runtime *rt, const gj_encoding *enc, const gj_codegen_options *opts,
                          const gj_program *prog, gj_module **out) {
    const gj__diag *ctx = rt->diag;
    gj_codegen_options resolved;
    gj_status status = check_load_arguments(ctx, "gj_module_load", enc, opts, out, &resolved);
    if (status == GJ_OK && !prog) {
        status = gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "gj_module_load: prog must not be NULL");
    }
    if (status == GJ_OK && resolved.levels_per_thread > 1 && resolved.order == GJ_ORDER_LEVEL_MAJOR) {
        status = gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT,
                          "gj_module_load: levels_per_thread %u needs the level-group kernels, which a program from "
                          "gj_compile does not hold (they are module programs of their own): use gj_module_create, "
                          "or levels_per_thread 0 or 1",
                          resolved.levels_per_thread);
    }
    if (status == GJ_OK) {
        status = check_program(rt, enc, &resolved, prog);
    }
    gj_module *m = NULL;
    if (status == GJ_OK) {
        status = new_module(rt, enc, &resolved, "gj_module_load", &m);
    }
    if (status != GJ_OK) {
        return status;
    }
    /* The given program, loaded now: its kernels serve every device it can run on. It has
     * no level-group (_rows) kernels: every launch takes one level per block. */
    m->given = 1;
    m->shape.levels_per_thread = 1;
    CUcontext current;
    status = gj__driver_current_context(ctx, m->drv, &current);
    if (status == GJ_OK) {
        status = gj__module_load_program(m, &m->programs[0], GJ__PART_ALL, prog);
    }
    if (status != GJ_OK) {
        gj_module_destroy(m);
        return status;
    }
    m->programs[0].sm = -1;
    m->n_programs = 1;
    *out = m; /* prog is not kept: the caller may destroy it */
    return GJ_OK;
}

static gj_status prepare(gj_module *module, uint32_t passes, uint32_t part_mask, const char *call) {
    gj__launch_scope scope;
    gj_status status = gj__module_enter(module, NULL, call, &scope);
    if (status == GJ_OK) {
        status = gj__module_prepare_for(module, scope.device->sm, passes & module->shape.passes, part_mask);
        gj__module_leave(module, &scope);
    }
    return status;
}

gj_status gj_module_prepare(gj_module *module, uint32_t passes) {
    static const char call[] = "gj_module_prepare";
    if (!module) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj__diag_clear(module->diag);
    if (passes == 0 || (passes & ~(uint32_t)GJ_PASS_ALL)) {
        return gj__fail(module->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: passes must be GJ_PASS_* bits (got 0x%x)", call, passes);
    }
    return prepare(module, passes, 0, call);
}

gj_status gj__module_prepare_parts(gj_module *module, uint32_t part_mask, const char *call) {
    gj__diag_clear(module->diag);
    return prepare(module, GJ_PASS_ALL, part_mask, call);
}

/* ----------------------------------------------------------------- destroy */

void gj_module_destroy(gj_module *module) {
    if (!module) {
        return;
    }
    gj__module_free_scratch(module);
    gj__side_streams_destroy(&module->beside, module->drv);
    gj__module_unload_all(module);
    gj__context_cache_free(&module->contexts);
    pthread_mutex_destroy(&module->lock);
    free(module);
}

size_t gj_module_n_programs(const gj_module *module) {
    if (!module) {
        return 0;
    }
    pthread_mutex_lock((pthread_mutex_t *)&module->lock);
    const size_t n = module->n_programs;
    pthread_mutex_unlock((pthread_mutex_t *)&module->lock);
    return n;
}

gj_status gj_module_describe_program(const gj_module *module, size_t i, gj_module_program_info *out) {
    if (!module || !out) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    pthread_mutex_lock((pthread_mutex_t *)&module->lock);
    const int have = i < module->n_programs;
    if (have) {
        const gj__module_program *p = &module->programs[i];
        memset(out, 0, sizeof *out);
        out->program = gj__part_name(p->part);
        snprintf(out->arch, sizeof out->arch, "%s", p->arch);
        out->compile_ms = p->compile_ms;
        out->cache = p->cache;
        out->binary_bytes = p->binary_bytes;
    }
    pthread_mutex_unlock((pthread_mutex_t *)&module->lock);
    return have ? GJ_OK : GJ_ERROR_NOT_FOUND;
}

uint32_t gj_module_passes(const gj_module *module) {
    return module ? module->shape.passes : 0;
}

uint32_t gj_module_output_width(const gj_module *module) {
    return module ? module->shape.padded_width : 0;
}

uint64_t gj_module_n_params(const gj_module *module) {
    return module ? module->shape.n_params : 0;
}

size_t gj_module_element_size(const gj_module *module) {
    return module ? gj__shape_element_size(&module->shape) : 0;
}

size_t gj_module_gradient_element_size(const gj_module *module) {
    return module ? module->shape.grad_element_size : 0;
}
