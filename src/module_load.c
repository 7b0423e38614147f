/* gj_module: compile for the device, load a program, look the kernels up, destroy. */
#include "module.h"
#include "cache.h"

#include "codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ probe */

static gj_status describe_device(gj_context *ctx, gj__driver *drv, gj_runtime_info *info) {
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

gj_status gj_runtime_probe(gj_context *ctx, gj_runtime_info *info) {
    if (info) {
        memset(info, 0, sizeof *info);
    }
    if (!ctx || !info) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "gj_runtime_probe: ctx and info must not be NULL");
    }
    gj__driver *drv = NULL;
    gj_status status = gj__driver_get(ctx, &drv);
    if (status == GJ_ERROR_NO_DEVICE) {
        info->driver_found = 1;
    }
    if (status != GJ_OK) {
        return status;
    }
    info->driver_found = 1;
    info->driver_version = drv->version;
    info->device_count = drv->device_count;
    return describe_device(ctx, drv, info);
}

/* ------------------------------------------------------------------- load */

static gj_status check_load_arguments(gj_context *ctx, const char *call, const gj_encoding *enc,
                                      const gj_codegen_options *opts, gj_module **out, gj_codegen_options *resolved) {
    if (out) {
        *out = NULL;
    }
    if (!ctx || !enc || !out) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "%s: ctx, enc and out must not be NULL", call);
    }
    gj_codegen_options unset = {0}; /* zero fields mean "default" to the resolver */
    gj_status status = gj__codegen_options_resolve(ctx, opts ? opts : &unset, resolved);
    if (status == GJ_OK && resolved->device_functions_only) {
        status = gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT,
                          "%s: device_functions_only must be 0: a module needs the __global__ kernels", call);
    }
    return status;
}

static const char *lowered_name_of(const gj_program *prog, const char *expression) {
    for (size_t i = 0; i < gj_program_n_kernels(prog); ++i) {
        const char *name = gj_program_kernel_name(prog, i);
        if (name && strcmp(name, expression) == 0) {
            return gj_program_lowered_name(prog, i);
        }
    }
    return NULL;
}

/* The program must be what enc and opts compile to: its kernels, and (where it kept
 * it) its source. A program of another configuration or other options would run
 * wrong kernels with the checks of this module. */
static gj_status check_program(gj_context *ctx, const gj_encoding *enc, const gj_codegen_options *opts,
                               const gj_program *prog) {
    static const char call[] = "gj_module_load";
    size_t size = 0;
    const void *binary = gj_program_binary(prog, &size);
    const gj_binary_kind kind = gj_program_kind(prog);
    if (!binary || size == 0 || (kind != GJ_BINARY_CUBIN && kind != GJ_BINARY_PTX)) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "%s: the program holds no cubin or PTX (failed compile?)", call);
    }
    for (int k = 0; k < GJ__KERNEL_COUNT; ++k) {
        if (!gj__kernel_present((gj__kernel_id)k, opts->passes)) {
            continue;
        }
        char expression[128];
        gj__kernel_expression(expression, sizeof expression, opts->name, (gj__kernel_id)k);
        if (!lowered_name_of(prog, expression)) {
            return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT,
                            "%s: the program has no kernel %s: it was compiled for other codegen options", call,
                            expression);
        }
    }
    const char *source = gj_program_source(prog);
    if (source && source[0]) {
        char *expected = gj__codegen(enc, opts);
        if (!expected) {
            return gj__fail(ctx, GJ_ERROR_OUT_OF_MEMORY, "%s: out of memory generating the source to compare", call);
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

/* Adds the program's target to a driver error (a binary for another device is the
 * usual cause). The message is copied first: gj__fail writes over it. */
static gj_status name_target(gj_module *m, gj_status status) {
    if (status != GJ_ERROR_CUDA) {
        return status;
    }
    char message[sizeof m->ctx->errmsg];
    memcpy(message, m->ctx->errmsg, sizeof message);
    message[sizeof message - 1] = '\0';
    return gj__fail(m->ctx, status, "%s (the program targets %s)", message, m->arch);
}

/* Looks each kernel up and loads it into the current context now, so that a binary the
 * device cannot run fails here rather than at the first launch. */
static gj_status find_kernels(gj_module *m, const gj_codegen_options *opts, const gj_program *prog) {
    for (int k = 0; k < GJ__KERNEL_COUNT; ++k) {
        if (!gj__kernel_present((gj__kernel_id)k, opts->passes)) {
            continue;
        }
        char expression[128];
        gj__kernel_expression(expression, sizeof expression, opts->name, (gj__kernel_id)k);
        const char *lowered = lowered_name_of(prog, expression);
        gj_status status = gj__cuda_check(m->ctx, m->drv, m->drv->LibraryGetKernel(&m->kernels[k], m->library, lowered),
                                          "gj_module_load: cuLibraryGetKernel");
        CUfunction function = NULL;
        if (status == GJ_OK) {
            status = gj__cuda_check(m->ctx, m->drv, m->drv->KernelGetFunction(&function, m->kernels[k]),
                                    "gj_module_load: cuKernelGetFunction");
        }
        if (status != GJ_OK) {
            return name_target(m, status);
        }
    }
    return GJ_OK;
}

/* Blocks per level of NAME_backward_coarse: two per multiprocessor of the current device
 * keep every multiprocessor busy while each block's shared sums serve many points. */
static gj_status choose_coarse_blocks(gj_module *m) {
    CUdevice device;
    int major = 0, minor = 0, sms = 0;
    gj_status status = gj__driver_current_device(m->ctx, m->drv, &device, &major, &minor);
    if (status == GJ_OK) {
        status = gj__cuda_check(m->ctx, m->drv,
                                m->drv->DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
                                "gj_module_load: cuDeviceGetAttribute");
    }
    m->coarse_blocks = sms > 0 ? 2u * (uint32_t)sms : 1u;
    return status;
}

/* Test hook (tests/test_gpu_cache.c): while positive, each cuLibraryLoadData is refused as
 * the driver refuses a binary it cannot use, and the count goes down. */
int gj__module_test_refuse_loads = 0;

static CUresult library_load(gj_module *m, const gj_program *prog) {
    if (gj__module_test_refuse_loads > 0) {
        --gj__module_test_refuse_loads;
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    return m->drv->LibraryLoadData(&m->library, gj_program_binary(prog, NULL), NULL, NULL, 0, NULL, NULL, 0);
}

static gj_status load_library(gj_module *m, const gj_program *prog) {
    CUcontext current;
    gj_status status = gj__driver_current_context(m->ctx, m->drv, &current);
    if (status == GJ_OK) {
        status = choose_coarse_blocks(m);
    }
    if (status == GJ_OK) {
        status = gj__cuda_check(m->ctx, m->drv, library_load(m, prog), "gj_module_load: cuLibraryLoadData");
    }
    return name_target(m, status);
}

gj_status gj_module_load(gj_context *ctx, const gj_encoding *enc, const gj_codegen_options *opts,
                         const gj_program *prog, gj_module **out) {
    gj_codegen_options resolved;
    gj_status status = check_load_arguments(ctx, "gj_module_load", enc, opts, out, &resolved);
    if (status == GJ_OK && !prog) {
        status = gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "gj_module_load: prog must not be NULL");
    }
    if (status == GJ_OK) {
        status = check_program(ctx, enc, &resolved, prog);
    }
    gj__driver *drv = NULL;
    if (status == GJ_OK) {
        status = gj__driver_get(ctx, &drv);
    }
    if (status != GJ_OK) {
        return status;
    }
    gj_module *m = calloc(1, sizeof *m);
    if (!m) {
        return gj__fail(ctx, GJ_ERROR_OUT_OF_MEMORY, "gj_module_load: out of memory");
    }
    m->ctx = ctx;
    m->drv = drv;
    gj__module_shape_make(&m->shape, enc, &resolved);
    snprintf(m->arch, sizeof m->arch, "%s", gj_program_arch(prog) ? gj_program_arch(prog) : "?");
    status = load_library(m, prog);
    if (status == GJ_OK) {
        status = find_kernels(m, &resolved, prog);
    }
    if (status != GJ_OK) {
        gj_module_destroy(m);
        return status;
    }
    *out = m;
    return GJ_OK;
}

/* ------------------------------------------------------------------ create */

/* Rounds of (find or compile, load) before gj_module_create gives up on refused binaries. */
#define GJ__MODULE_LOAD_ROUNDS 4

/* The newest NVRTC architecture not newer than sm (or the newest of all when the device
 * is newer than every one), for PTX that the driver compiles; 0 when there is none. */
static int fallback_arch(gj_context *ctx, int sm) {
    char *archs = NULL;
    if (gj_nvrtc_supported_archs(ctx, &archs) != GJ_OK || !archs) {
        return 0;
    }
    int best = 0;
    for (const char *p = strstr(archs, "sm_"); p; p = strstr(p + 3, "sm_")) {
        const int value = atoi(p + 3);
        if (value <= sm && value > best) {
            best = value;
        }
    }
    gj_free(archs);
    return best;
}

/* Without NVRTC and without a cubin entry for the device: a PTX entry of the device's
 * architecture or an older one (the driver compiles PTX for newer devices). The first
 * entry found in the cache wins; GJ_ERROR_NO_NVRTC (the original message) when none. */
static gj_status cached_ptx(gj_context *ctx, const gj_encoding *enc, const gj_codegen_options *opts, int sm,
                            gj_program **prog) {
    static const int candidates[] = {121, 120, 110, 103, 100, 90, 89, 88, 87, 86, 80, 75};
    char first_error[sizeof ctx->errmsg];
    snprintf(first_error, sizeof first_error, "%s", ctx->errmsg);
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; ++i) {
        if (candidates[i] > sm) {
            continue;
        }
        char arch[24];
        snprintf(arch, sizeof arch, "compute_%d", candidates[i]);
        gj_program_destroy(*prog);
        *prog = NULL;
        if (gj_compile(ctx, enc, opts, arch, prog) == GJ_OK) {
            gj__log(ctx, GJ_LOG_INFO, "no cubin for sm_%d and no NVRTC: loading the cached PTX for %s", sm, arch);
            return GJ_OK;
        }
    }
    gj_program_destroy(*prog);
    *prog = NULL;
    return gj__fail(ctx, GJ_ERROR_NO_NVRTC, "%s", first_error);
}

static gj_status compile_for_device(gj_context *ctx, gj__driver *drv, const gj_encoding *enc,
                                    const gj_codegen_options *opts, gj_program **prog) {
    CUdevice device;
    int major = 0, minor = 0;
    gj_status status = gj__driver_current_device(ctx, drv, &device, &major, &minor);
    if (status != GJ_OK) {
        return status;
    }
    char arch[24];
    snprintf(arch, sizeof arch, "sm_%d%d", major, minor);
    status = gj_compile(ctx, enc, opts, arch, prog);
    if (status == GJ_ERROR_NO_NVRTC) {
        return cached_ptx(ctx, enc, opts, major * 10 + minor, prog);
    }
    if (status != GJ_ERROR_UNSUPPORTED_ARCH) {
        return status;
    }
    const int fallback = fallback_arch(ctx, major * 10 + minor);
    if (fallback == 0) {
        return gj__fail(ctx, GJ_ERROR_UNSUPPORTED_ARCH,
                        "gj_module_create: NVRTC cannot compile for the device (%s) or any older architecture", arch);
    }
    gj__log(ctx, GJ_LOG_INFO, "NVRTC does not know %s: compiling PTX for compute_%d for the driver to finish", arch,
            fallback);
    snprintf(arch, sizeof arch, "compute_%d", fallback);
    return gj_compile(ctx, enc, opts, arch, prog);
}

gj_status gj_module_create(gj_context *ctx, const gj_encoding *enc, const gj_codegen_options *opts, gj_module **out) {
    gj_codegen_options resolved;
    gj_status status = check_load_arguments(ctx, "gj_module_create", enc, opts, out, &resolved);
    gj__driver *drv = NULL;
    if (status == GJ_OK) {
        status = gj__driver_get(ctx, &drv);
    }
    /* A binary from the disk cache that the driver refuses (any load error, e.g.
     * CUDA_ERROR_UNSUPPORTED_PTX_VERSION or CUDA_ERROR_NO_BINARY_FOR_GPU) is a miss: the
     * entry goes, and the next round compiles again (or finds another entry). */
    for (int round = 0; status == GJ_OK && round < GJ__MODULE_LOAD_ROUNDS; ++round) {
        gj_program *prog = NULL;
        status = compile_for_device(ctx, drv, enc, &resolved, &prog);
        if (status == GJ_OK) {
            status = gj_module_load(ctx, enc, &resolved, prog, out);
        }
        const int refused_hit = status == GJ_ERROR_CUDA && gj_program_cache_status(prog) == GJ_CACHE_HIT;
        if (refused_hit) {
            gj__cache_invalidate(ctx, prog, gj_context_errmsg(ctx));
            status = GJ_OK; /* try again */
        }
        gj_program_destroy(prog); /* also the log-only program of a failed compile */
        if (!refused_hit) {
            return status;
        }
    }
    return status == GJ_OK ? gj__fail(ctx, GJ_ERROR_CUDA, "gj_module_create: the driver refused every binary for this device")
                           : status;
}

/* ----------------------------------------------------------------- destroy */

void gj_module_destroy(gj_module *module) {
    if (!module) {
        return;
    }
    gj__module_free_scratch(module);
    if (module->library) {
        module->drv->LibraryUnload(module->library); /* context-independent: no context needed */
    }
    free(module);
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
