/* The runtime's own launch planning (src/runtime/module_args.c), for the C++ test of the
 * emulated kernels: argument checks, kernel argument structs, launch dims, the kernel a
 * launch takes, the coarse kernels' blocks and what is zeroed, as gj_forward,
 * gj_backward and gj_backward_backward (module_launch.c) compute them before launching. */
#ifndef GJ_EMULATED_GRID_PLAN_H
#define GJ_EMULATED_GRID_PLAN_H

#include "gridjit.h"
#include "templates/kernel_args.cuh"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gj_emu_plan_launch {
    int kernel; /* gj__kernel_id */
    unsigned grid_x, grid_y, block, shared_bytes;
} gj_emu_plan_launch;

typedef struct gj_emu_shape gj_emu_shape;

/* The module shape of enc with opts (resolved here), levels_per_thread as the options'
 * and aggregate_min as the module would read them from the environment. NULL with err. */
gj_emu_shape *gj_emu_shape_create(const gj_encoding *enc, const gj_codegen_options *opts, unsigned aggregate_min,
                                  char *err, size_t err_size);
void gj_emu_shape_destroy(gj_emu_shape *shape);
uint32_t gj_emu_shape_levels_per_thread(const gj_emu_shape *shape, int point_major_rows, int backward_params);

/* Whether the backward's warp aggregation can apply to enc with opts: the templates enable
 * it for D <= 3, F <= 4, interpolation other than Nearest, no stochastic interpolation
 * (gj_warp_runs), on every level: those that take global atomics and the small levels of
 * level-major order, which the coarse kernels sum in shared memory. The test's expectation. */
int gj_emu_aggregation_possible(const gj_encoding *enc, const gj_codegen_options *opts);

/* Each returns 0, or -1 with err when the runtime's checks refuse the descriptor. */
int gj_emu_plan_forward(const gj_emu_shape *shape, const gj_forward_desc *desc, gj_forward_args *args,
                        gj_emu_plan_launch *launch, char *err, size_t err_size);
/* coarse->kernel is -1 when the launch has no coarse kernel; most: the device's coarse
 * blocks per level. zero_dx: the runtime zeroes dL/dx first (level-major). grad_scratch:
 * dL/dparams is accumulated in an fp32 buffer of n_params (zeroed), then cast with
 * cast (GJ__KERNEL_CAST_GRADIENTS); grad_zero_bytes: bytes of the target zeroed first. */
int gj_emu_plan_backward(const gj_emu_shape *shape, const gj_backward_desc *desc, uint32_t most,
                         gj_backward_args *args, gj_emu_plan_launch *main, gj_emu_plan_launch *coarse, int *zero_dx,
                         int *grad_scratch, size_t *grad_zero_bytes, gj_emu_plan_launch *cast, char *err,
                         size_t err_size);
/* A backward launch with desc->dy_dx: *grads is the descriptor of its gradient kernels
 * (plan them with gj_emu_plan_backward when it has an output), and with dL/dx from dy/dx
 * (return 1) args and launch are that launch's. */
int gj_emu_plan_dx_from_dydx(const gj_emu_shape *shape, const gj_backward_desc *desc, gj_backward_desc *grads,
                             gj_dx_from_dydx_args *args, gj_emu_plan_launch *launch);
int gj_emu_plan_backward_backward(const gj_emu_shape *shape, const gj_backward_backward_desc *desc,
                                  gj_backward_backward_args *args, gj_emu_plan_launch *launch, int *grad_scratch,
                                  size_t *grad_zero_bytes, gj_emu_plan_launch *cast, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif
