/* gj_user_module and gj_kernel: a user's compiled source, loaded once per architecture,
 * and its kernels launched in their stream's context (docs/fusion.md). */
#ifndef GJ_RUNTIME_USER_MODULE_H
#define GJ_RUNTIME_USER_MODULE_H

#include "compile/user_unit.h"
#include "runtime/module.h"

#define GJ__USER_MAX_PROGRAMS 16

/* The source compiled for one architecture and its library. */
typedef struct gj__user_program {
    int sm;         /* the device architecture it serves; -1: any (a given program) */
    char arch[24];
    int cubin_sm;   /* the architecture of its cubin (sm_90 and sm_90a: 90); 0 for PTX (the
                       driver finishes it for the device) or a binary of unknown target */
    CUlibrary library;
    CUkernel *kernels; /* one per kernel name */
} gj__user_program;

struct gj_kernel {
    struct gj_user_module *module;
    size_t index;
    char *expression; /* "&name" */
    const char *name; /* what messages call it: the expression as the caller names the kernel
                         (without the "&" that a plain name takes) */
    char *lowered;
    /* The end of its last parameter (cuFuncGetParamInfo), asked once, by the first packed
     * launch, under the module's lock: what packed launches are checked and trimmed to.
     * 0: not known (yet). */
    size_t param_extent;
    int param_extent_known;
    /* gj_kernel_set_shared_carveout's percent (-1: the driver's choice), set on the kernel's
     * function in each context where it is resolved once carveout_set is nonzero. */
    int carveout;
    int carveout_set;
};

struct gj_user_module {
    gj__runtime *rt;
    const gj__diag *diag;
    gj__driver *drv;
    pthread_mutex_t lock;
    int have_unit;      /* 0: made from a given program, which serves every device */
    gj__user_unit unit; /* to compile for another architecture */
    size_t n_kernels;
    struct gj_kernel *kernels;
    gj__user_program programs[GJ__USER_MAX_PROGRAMS];
    size_t n_programs;
    gj__context_cache contexts; /* per context: the kernels' functions (made with the kernels) */
};

/* gj_user_module_create; cached_only: only where the disk cache holds the current device's
 * program (else GJ_ERROR_NOT_FOUND, with no message, and nothing compiled). */
gj_status gj__user_module_create(gj__runtime *rt, const gj_source_desc *desc, int cached_only,
                                 struct gj_user_module **out);
gj_status gj__user_module_load(gj__runtime *rt, const gj_program *prog, struct gj_user_module **out);
/* The kernel's function in the scope's context, with one lock and no driver call once the
 * context has seen it; on first use there its program is compiled and loaded for the
 * context's device. param_extent (may be NULL: then the driver is not asked for it) receives
 * gj_kernel.param_extent (0: unknown), learnt on the first such call. */
gj_status gj__kernel_function(gj_kernel *k, const gj__scope *where, const char *call, CUfunction *out,
                              size_t *param_extent);
/* The architecture (90 for sm_90 or sm_90a) of the cubin that serves the scope's context, or 0
 * where that is PTX (for the device's architecture or an older one, which the driver
 * finishes: NVRTC does not know the device, or a precompiled PTX) or its target is not
 * known. The program is compiled and loaded if the context has not seen it; after that no
 * driver call. */
gj_status gj__kernel_cubin_sm(gj_kernel *k, const gj__scope *where, const char *call, int *sm);

/* Fills config's grid, block and shared_bytes (its stream is set) for a launch of code whose
 * cubin was compiled for cubin_sm (gj__kernel_cubin_sm; 0: PTX), in that launch's context
 * (what the driver is asked there answers for its device). A status other than GJ_OK stops
 * the launch. */
typedef gj_status (*gj__launch_shape)(void *arg, int cubin_sm, gj_launch_config *config);

/* gj_kernel_launch with a geometry that depends on the code the kernel was compiled to (a
 * network module's plan per architecture class): one scope and one lookup of the kernel's
 * function, as gj_kernel_launch; shape is called between them. */
gj_status gj__kernel_launch_shaped(gj_kernel *k, gj_stream stream, gj__launch_shape shape, void *arg, void **args,
                                   const char *call);

#endif
