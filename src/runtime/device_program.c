/* Compiling and loading a program for a device architecture (see device_program.h). */
#include "runtime/device_program.h"

#include "base/clock.h"
#include "compile/program.h"

#include <stdio.h>
#include <stdlib.h>

/* Rounds of (find or compile, load) before a binary the driver refuses is given up on. */
#define GJ__LOAD_ROUNDS 4

#ifdef GJ_TEST_HOOKS
/* Test builds only (tests/test_gpu_cache.c): while positive, each load is refused as the
 * driver refuses a binary it cannot use, and the count goes down. */
atomic_int gj__module_test_refuse_loads;
#endif

CUresult gj__library_load(gj__driver *drv, const gj_program *prog, CUlibrary *out) {
#ifdef GJ_TEST_HOOKS
    int left = atomic_load(&gj__module_test_refuse_loads);
    while (left > 0 && !atomic_compare_exchange_weak(&gj__module_test_refuse_loads, &left, left - 1)) {
    }
    if (left > 0) {
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
#endif
    return drv->LibraryLoadData(out, gj_program_binary(prog, NULL), NULL, NULL, 0, NULL, NULL, 0);
}

gj_status gj__program_load(const gj__diag *d, gj__driver *drv, const gj_program *prog, const char *const *lowered,
                           size_t n, CUlibrary *library, CUkernel *kernels) {
    *library = NULL;
    const double start = gj__now_ms();
    gj_status status = gj__cuda_check(d, drv, gj__library_load(drv, prog, library), "cuLibraryLoadData");
    for (size_t i = 0; status == GJ_OK && i < n; ++i) {
        kernels[i] = NULL;
        if (!lowered[i]) {
            continue;
        }
        status = gj__cuda_checkf(d, drv, drv->LibraryGetKernel(&kernels[i], *library, lowered[i]),
                                 "cuLibraryGetKernel(%s)", lowered[i]);
        CUfunction function = NULL;
        if (status == GJ_OK) {
            status = gj__cuda_checkf(d, drv, drv->KernelGetFunction(&function, kernels[i]), "cuKernelGetFunction(%s)",
                                     lowered[i]);
        }
    }
    if (status == GJ_OK && gj__log_enabled(d, GJ_LOG_INFO)) {
        size_t first = 0; /* the program's first kernel names it in the log */
        while (first < n && !lowered[first]) {
            first++;
        }
        gj__log(d, GJ_LOG_INFO, "loaded %s (key %.8s) for the device: %.1f ms (t=%.1f)",
                first < n ? lowered[first] : "a program", gj_program_cache_key(prog), gj__now_ms() - start, start);
    }
    if (status == GJ_OK) {
        return GJ_OK;
    }
    if (*library) {
        drv->LibraryUnload(*library);
        *library = NULL;
    }
    const char *arch = gj_program_arch(prog);
    return status == GJ_ERROR_CUDA
               ? gj__fail(d, status, "%s (the program targets %s)", gj__diag_message(d), arch ? arch : "?")
               : status;
}

/* The newest NVRTC architecture not newer than sm; 0 when there is none. */
static int fallback_arch(const gj__diag *d, gj__compiler *compiler, int sm) {
    gj__nvrtc *nv = NULL;
    if (gj__nvrtc_get(compiler->nvrtc, d, &nv) != GJ_OK) {
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
 * architecture or an older one (the driver compiles PTX for newer devices). */
static gj_status cached_ptx(const gj__diag *d, gj__compile_for_arch_fn compile, void *user, int sm, gj_program **prog) {
    static const int candidates[] = {121, 120, 110, 103, 100, 90, 89, 88, 87, 86, 80, 75};
    char first_error[GJ__MESSAGE_MAX];
    snprintf(first_error, sizeof first_error, "%s", gj__diag_message(d));
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; ++i) {
        if (candidates[i] > sm) {
            continue;
        }
        char arch[24];
        snprintf(arch, sizeof arch, "compute_%d", candidates[i]);
        gj_program_destroy(*prog);
        *prog = NULL;
        if (compile(user, arch, prog) == GJ_OK) {
            gj__log(d, GJ_LOG_INFO, "no cubin for sm_%d and no NVRTC: loading the cached PTX for %s", sm, arch);
            return GJ_OK;
        }
    }
    gj_program_destroy(*prog);
    *prog = NULL;
    return gj__fail(d, GJ_ERROR_NO_NVRTC, "%s", first_error);
}

static gj_status compile_for_device(const gj__diag *d, gj__compiler *compiler, gj__compile_for_arch_fn compile,
                                    void *user, int sm, gj_program **prog) {
    char arch[24];
    snprintf(arch, sizeof arch, "sm_%d", sm);
    gj_status status = compile(user, arch, prog);
    if (status == GJ_ERROR_NO_NVRTC) {
        return cached_ptx(d, compile, user, sm, prog);
    }
    if (status != GJ_ERROR_UNSUPPORTED_ARCH) {
        return status;
    }
    const int fallback = fallback_arch(d, compiler, sm);
    if (fallback == 0) {
        return gj__fail(d, GJ_ERROR_UNSUPPORTED_ARCH,
                        "NVRTC cannot compile for the device (%s) or any older architecture", arch);
    }
    gj__log(d, GJ_LOG_INFO, "NVRTC does not know %s: compiling PTX for compute_%d for the driver to finish", arch,
            fallback);
    snprintf(arch, sizeof arch, "compute_%d", fallback);
    return compile(user, arch, prog);
}

gj_status gj__device_program(const gj__diag *d, gj__compiler *compiler, gj__compile_for_arch_fn compile, gj__load_fn load,
                             void *user, int sm, gj_program *ready) {
    gj_status status = GJ_OK;
    for (int round = 0; round < GJ__LOAD_ROUNDS; ++round) {
        gj_program *prog = ready;
        ready = NULL;
        if (!prog) {
            status = compile_for_device(d, compiler, compile, user, sm, &prog);
        }
        if (status == GJ_OK) {
            status = load(user, prog);
        }
        const int refused_hit = status == GJ_ERROR_CUDA && gj_program_cache_status(prog) == GJ_CACHE_HIT;
        if (refused_hit) {
            gj__compile_invalidate(compiler, prog, gj__diag_message(d));
        }
        gj_program_destroy(prog); /* also the log-only program of a failed compile */
        if (!refused_hit) {
            return status;
        }
        status = GJ_OK;
    }
    return gj__fail(d, GJ_ERROR_CUDA, "the driver refused every binary for this device (sm_%d)", sm);
}
