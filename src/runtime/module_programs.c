/* The programs of a module (docs/runtime.md, "Programs"): each part is compiled through
 * the disk cache for a device architecture the first time a launch needs one of its
 * kernels (or all at once, in parallel, when the module is prepared), and loaded once
 * with cuLibraryLoadData, which serves every context and device of that architecture. */
#include "runtime/module.h"

#include "base/clock.h"
#include "compile/encoding_unit.h"
#include "compile/parallel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rounds of (find or compile, load) before a binary the driver refuses is given up on. */
#define GJ__LOAD_ROUNDS 4

#ifdef GJ_TEST_HOOKS
/* Test builds only (tests/test_gpu_cache.c): while positive, each cuLibraryLoadData is
 * refused as the driver refuses a binary it cannot use, and the count goes down. */
atomic_int gj__module_test_refuse_loads;
#endif

static CUresult library_load(gj_module *m, const gj_program *prog, CUlibrary *out) {
#ifdef GJ_TEST_HOOKS
    int left = atomic_load(&gj__module_test_refuse_loads);
    while (left > 0 && !atomic_compare_exchange_weak(&gj__module_test_refuse_loads, &left, left - 1)) {
    }
    if (left > 0) {
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
#endif
    return m->drv->LibraryLoadData(out, gj_program_binary(prog, NULL), NULL, NULL, 0, NULL, NULL, 0);
}

/* ------------------------------------------------------------ compiling */

/* The part of enc for arch_name, through the cache. */
static gj_status compile_part(gj_module *m, gj__part part, const char *arch_name, gj_program **prog) {
    gj__arch arch;
    gj_status status = gj__arch_parse(m->diag, arch_name, &arch);
    gj__encoding_unit unit;
    if (status == GJ_OK) {
        status = gj__encoding_unit_make(m->rt->compiler, &m->enc, &m->opts, part, &arch, 1, &unit);
    }
    if (status == GJ_OK) {
        status = gj__compile(m->rt->compiler, &unit.request, prog);
        gj__encoding_unit_free(&unit);
    }
    return status;
}

/* The newest NVRTC architecture not newer than sm (or the newest of all when the device
 * is newer than every one), for PTX that the driver compiles; 0 when there is none. */
static int fallback_arch(gj_module *m, int sm) {
    gj__nvrtc *nv = NULL;
    if (gj__nvrtc_get(m->rt->compiler->nvrtc, m->diag, &nv) != GJ_OK) {
        return 0;
    }
    int best = 0;
    for (int i = 0; i < nv->n_archs; i++) {
        if (nv->archs[i] <= sm && nv->archs[i] > best) {
            best = nv->archs[i];
        }
    }
    return best;
}

/* Without NVRTC and without a cubin entry for the device: a PTX entry of the device's
 * architecture or an older one (the driver compiles PTX for newer devices). The first
 * entry found wins; GJ_ERROR_NO_NVRTC with the original message when none. */
static gj_status cached_ptx(gj_module *m, gj__part part, int sm, gj_program **prog) {
    static const int candidates[] = {121, 120, 110, 103, 100, 90, 89, 88, 87, 86, 80, 75};
    char first_error[GJ__MESSAGE_MAX];
    snprintf(first_error, sizeof first_error, "%s", gj__diag_message(m->diag));
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; ++i) {
        if (candidates[i] > sm) {
            continue;
        }
        char arch[24];
        snprintf(arch, sizeof arch, "compute_%d", candidates[i]);
        gj_program_destroy(*prog);
        *prog = NULL;
        if (compile_part(m, part, arch, prog) == GJ_OK) {
            gj__log(m->diag, GJ_LOG_INFO, "no cubin for sm_%d and no NVRTC: loading the cached PTX for %s", sm, arch);
            return GJ_OK;
        }
    }
    gj_program_destroy(*prog);
    *prog = NULL;
    return gj__fail(m->diag, GJ_ERROR_NO_NVRTC, "%s", first_error);
}

/* The part for a device of architecture sm: its exact cubin, else PTX the driver finishes. */
static gj_status compile_for_device(gj_module *m, gj__part part, int sm, gj_program **prog) {
    char arch[24];
    snprintf(arch, sizeof arch, "sm_%d", sm);
    gj_status status = compile_part(m, part, arch, prog);
    if (status == GJ_ERROR_NO_NVRTC) {
        return cached_ptx(m, part, sm, prog);
    }
    if (status != GJ_ERROR_UNSUPPORTED_ARCH) {
        return status;
    }
    const int fallback = fallback_arch(m, sm);
    if (fallback == 0) {
        return gj__fail(m->diag, GJ_ERROR_UNSUPPORTED_ARCH,
                        "NVRTC cannot compile for the device (%s) or any older architecture", arch);
    }
    gj__log(m->diag, GJ_LOG_INFO, "NVRTC does not know %s: compiling PTX for compute_%d for the driver to finish",
            arch, fallback);
    snprintf(arch, sizeof arch, "compute_%d", fallback);
    return compile_part(m, part, arch, prog);
}

/* ------------------------------------------------------------ loading */

/* Adds the program's target to a driver error (a binary for another device is the
 * usual cause). */
static gj_status name_target(gj_module *m, gj_status status, const char *arch) {
    if (status != GJ_ERROR_CUDA) {
        return status;
    }
    return gj__fail(m->diag, status, "%s (the program targets %s)", gj__diag_message(m->diag), arch);
}

/* Loads prog as a new program of the module and looks up the kernels of part in it,
 * each in the current context too, so that a binary the device cannot run fails here
 * rather than at a launch. */
static gj_status load(gj_module *m, gj__part part, int sm, const gj_program *prog, const gj__module_program **out) {
    if (m->n_programs == GJ__MODULE_MAX_PROGRAMS) {
        return gj__fail(m->diag, GJ_ERROR_INTERNAL, "a module holds at most %d programs", GJ__MODULE_MAX_PROGRAMS);
    }
    gj__module_program *p = &m->programs[m->n_programs];
    memset(p, 0, sizeof *p);
    p->part = part;
    p->sm = sm;
    snprintf(p->arch, sizeof p->arch, "%s", gj_program_arch(prog) ? gj_program_arch(prog) : "?");
    p->compile_ms = gj_program_compile_ms(prog);
    p->cache = gj_program_cache_status(prog);
    gj_program_binary(prog, &p->binary_bytes);
    gj_status status = gj__cuda_check(m->diag, m->drv, library_load(m, prog, &p->library), "cuLibraryLoadData");
    for (int k = 0; status == GJ_OK && k < GJ__KERNEL_COUNT; ++k) {
        if (!gj__kernel_in_unit((gj__kernel_id)k, m->opts.passes, part)) {
            continue;
        }
        char expression[128];
        gj__kernel_expression(expression, sizeof expression, m->opts.name, (gj__kernel_id)k);
        const char *lowered = gj__program_lowered(prog, expression);
        if (!lowered) {
            status = gj__fail(m->diag, GJ_ERROR_INVALID_ARGUMENT, "the program has no kernel %s", expression);
            break;
        }
        status = gj__cuda_check(m->diag, m->drv, m->drv->LibraryGetKernel(&p->kernels[k], p->library, lowered),
                                "cuLibraryGetKernel");
        CUfunction function = NULL;
        if (status == GJ_OK) {
            status = gj__cuda_check(m->diag, m->drv, m->drv->KernelGetFunction(&function, p->kernels[k]),
                                    "cuKernelGetFunction");
        }
    }
    if (status != GJ_OK) {
        if (p->library) {
            m->drv->LibraryUnload(p->library);
        }
        return name_target(m, status, p->arch);
    }
    m->n_programs++;
    *out = p;
    return GJ_OK;
}

/* Compile (or find in the cache) and load, again while the driver refuses a cached
 * binary: that entry is forgotten, and the next round compiles anew. */
static gj_status compile_and_load(gj_module *m, gj__part part, int sm, gj_program *ready,
                                  const gj__module_program **out) {
    gj_status status = GJ_OK;
    for (int round = 0; round < GJ__LOAD_ROUNDS; ++round) {
        gj_program *prog = ready;
        ready = NULL;
        if (!prog) {
            status = compile_for_device(m, part, sm, &prog);
        }
        if (status == GJ_OK) {
            status = load(m, part, sm, prog, out);
        }
        const int refused_hit = status == GJ_ERROR_CUDA && gj_program_cache_status(prog) == GJ_CACHE_HIT;
        if (refused_hit) {
            gj__compile_invalidate(m->rt->compiler, prog, gj__diag_message(m->diag));
        }
        gj_program_destroy(prog); /* also the log-only program of a failed compile */
        if (!refused_hit) {
            return status;
        }
        status = GJ_OK;
    }
    return gj__fail(m->diag, GJ_ERROR_CUDA, "the driver refused every binary for this device (sm_%d)", sm);
}

static const gj__module_program *find(const gj_module *m, gj__part part, int sm) {
    for (size_t i = 0; i < m->n_programs; ++i) {
        if (m->programs[i].part == part && m->programs[i].sm == sm) {
            return &m->programs[i];
        }
    }
    return NULL;
}

gj_status gj__module_program_for(gj_module *m, int sm, gj__kernel_id id, const gj__module_program **out) {
    if (m->given) {
        *out = &m->programs[0]; /* one program with every kernel, for whatever device runs it */
        return GJ_OK;
    }
    const gj__part part = gj__kernel(id)->part;
    *out = find(m, part, sm);
    return *out ? GJ_OK : compile_and_load(m, part, sm, NULL, out);
}

/* ------------------------------------------------------------ prepare */

typedef struct pending {
    gj__part part;
    gj__encoding_unit unit;
} pending;

/* Whether NVRTC compiles sm_XY cubins here: then every part has one target and the
 * compiles can run side by side (the fallbacks take the one-by-one path). */
static int compiles_cubins_for(gj_module *m, int sm) {
    gj__nvrtc *nv = NULL;
    const int yes = gj__nvrtc_get(m->rt->compiler->nvrtc, m->diag, &nv) == GJ_OK && gj__nvrtc_supports(nv, sm);
    gj__diag_clear(m->diag);
    return yes;
}

gj_status gj__module_prepare_for(gj_module *m, int sm, uint32_t passes) {
    if (m->given) {
        return GJ_OK;
    }
    pending todo[GJ__PART_COUNT];
    gj__compile_job jobs[GJ__PART_COUNT];
    size_t n = 0;
    gj_status status = GJ_OK;
    const int parallel = compiles_cubins_for(m, sm);
    char arch_name[24];
    snprintf(arch_name, sizeof arch_name, "sm_%d", sm);
    gj__arch arch;
    gj__arch_parse(NULL, arch_name, &arch);
    for (int p = GJ__PART_ALL + 1; status == GJ_OK && p < GJ__PART_COUNT; ++p) {
        const int wanted = (gj__part_pass((gj__part)p) & passes) != 0;
        if (!wanted || find(m, (gj__part)p, sm)) {
            continue;
        }
        if (!parallel) { /* the fallbacks, one by one */
            const gj__module_program *ignored;
            status = compile_and_load(m, (gj__part)p, sm, NULL, &ignored);
            continue;
        }
        todo[n].part = (gj__part)p;
        status = gj__encoding_unit_make(m->rt->compiler, &m->enc, &m->opts, (gj__part)p, &arch, 1, &todo[n].unit);
        if (status == GJ_OK) {
            memset(&jobs[n], 0, sizeof jobs[n]);
            jobs[n].request = &todo[n].unit.request;
            n++;
        }
    }
    gj__compile_all(m->rt->compiler, jobs, n, 0);
    for (size_t i = 0; i < n; ++i) {
        if (status == GJ_OK && jobs[i].status != GJ_OK) {
            status = gj__fail(m->diag, jobs[i].status, "%s", jobs[i].message);
        }
        const gj__module_program *ignored;
        if (status == GJ_OK) {
            status = compile_and_load(m, todo[i].part, sm, jobs[i].program, &ignored);
        } else {
            gj_program_destroy(jobs[i].program);
        }
        gj__encoding_unit_free(&todo[i].unit);
    }
    return status;
}

void gj__module_unload_all(gj_module *m) {
    for (size_t i = 0; i < m->n_programs; ++i) {
        if (m->programs[i].library) {
            m->drv->LibraryUnload(m->programs[i].library); /* context-independent */
        }
    }
    m->n_programs = 0;
}
