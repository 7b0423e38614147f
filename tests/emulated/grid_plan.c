/* See grid_plan.h: thin wrappers, so that the C++ test uses the runtime's functions. */
#include "grid_plan.h"

#include "base/diag.h"
#include "codegen/facts.h"
#include "codegen/options.h"
#include "runtime/module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gj_emu_shape {
    gj__module_shape shape;
};

gj_emu_shape *gj_emu_shape_create(const gj_encoding *enc, const gj_codegen_options *opts, unsigned aggregate_min,
                                  char *err, size_t err_size) {
    gj__diag diag;
    gj__diag_init(&diag);
    gj_codegen_options resolved;
    if (gj__codegen_options_resolve(&diag, opts, &resolved) != GJ_OK) {
        snprintf(err, err_size, "%s", gj__diag_message(&diag));
        gj__diag_forget(&diag);
        return NULL;
    }
    gj__diag_forget(&diag);
    gj_emu_shape *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    gj__module_shape_make(&s->shape, enc, &resolved);
    s->shape.aggregate_min = aggregate_min;
    return s;
}

void gj_emu_shape_destroy(gj_emu_shape *shape) {
    free(shape);
}

uint32_t gj_emu_shape_levels_per_thread(const gj_emu_shape *shape, int point_major_rows, int backward_params) {
    return gj__levels_per_thread(&shape->shape, backward_params ? GJ__GROUP_BACKWARD_PARAMS : GJ__GROUP_FORWARD, point_major_rows);
}

static void copy_dims(gj_emu_plan_launch *launch, int kernel, const gj__launch_dims *dims) {
    launch->kernel = kernel;
    launch->grid_x = dims->grid_x;
    launch->grid_y = dims->grid_y;
    launch->block = dims->block;
    launch->shared_bytes = dims->shared_bytes;
}

static int refused(gj__diag *diag, gj_status status, char *err, size_t err_size) {
    if (status != GJ_OK) {
        snprintf(err, err_size, "%s", gj__diag_message(diag));
    }
    gj__diag_forget(diag); /* the per-thread message of a diagnostics on the stack */
    return status == GJ_OK ? 0 : -1;
}

static void gradients(const gj__module_shape *shape, int have, gj_grad_mode mode, int *scratch, size_t *zero_bytes,
                      gj_emu_plan_launch *cast) {
    gj__grad_plan plan;
    gj__gradient_plan(shape, have, mode, &plan);
    *scratch = plan.scratch;
    *zero_bytes = plan.zero_bytes;
    gj__launch_dims dims;
    gj__elementwise_dims(shape, &dims);
    copy_dims(cast, plan.scratch ? GJ__KERNEL_CAST_GRADIENTS : -1, &dims);
}

int gj_emu_plan_forward(const gj_emu_shape *shape, const gj_forward_desc *desc, gj_forward_args *args,
                        gj_emu_plan_launch *launch, char *err, size_t err_size) {
    gj__diag diag;
    gj__diag_init(&diag);
    if (refused(&diag, gj__check_forward(&diag, &shape->shape, desc), err, err_size)) {
        return -1;
    }
    gj__launch_dims dims;
    gj__forward_args(&shape->shape, desc, args, &dims);
    copy_dims(launch, gj__forward_kernel(desc, args), &dims);
    return 0;
}

int gj_emu_plan_backward(const gj_emu_shape *shape, const gj_backward_desc *desc, uint32_t most,
                         gj_backward_args *args, gj_emu_plan_launch *main, gj_emu_plan_launch *coarse, int *zero_dx,
                         int *grad_scratch, size_t *grad_zero_bytes, gj_emu_plan_launch *cast, char *err,
                         size_t err_size) {
    gj__diag diag;
    gj__diag_init(&diag);
    if (refused(&diag, gj__check_backward(&diag, &shape->shape, desc), err, err_size)) {
        return -1;
    }
    gj__launch_dims dims;
    gj__backward_args(&shape->shape, desc, args, &dims);
    gradients(&shape->shape, desc->dL_dparams != NULL, desc->dL_dparams_mode, grad_scratch, grad_zero_bytes, cast);
    *zero_dx = desc->dL_dx != NULL && shape->shape.level_major;
    const int uses_coarse = gj__backward_uses_coarse(&shape->shape, desc);
    if (uses_coarse) {
        args->coarse_blocks = gj__coarse_blocks(&shape->shape, desc->n, most);
    }
    gj__kernel_id main_kernel, coarse_kernel;
    gj__backward_kernels(desc, args, &main_kernel, &coarse_kernel);
    copy_dims(main, main_kernel, &dims);
    gj__launch_dims coarse_dims;
    gj__coarse_dims(&shape->shape, args->coarse_blocks, &coarse_dims);
    copy_dims(coarse, uses_coarse ? (int)coarse_kernel : -1, &coarse_dims);
    return 0;
}

int gj_emu_plan_dx_from_dydx(const gj_emu_shape *shape, const gj_backward_desc *desc, gj_backward_desc *grads,
                             gj_dx_from_dydx_args *args, gj_emu_plan_launch *launch) {
    if (!gj__backward_split(desc, grads)) {
        return 0;
    }
    gj__launch_dims dims;
    gj__dx_from_dydx_args(&shape->shape, desc, args, &dims);
    copy_dims(launch, GJ__KERNEL_DX_FROM_DYDX, &dims);
    return 1;
}

int gj_emu_plan_backward_backward(const gj_emu_shape *shape, const gj_backward_backward_desc *desc,
                                  gj_backward_backward_args *args, gj_emu_plan_launch *launch, int *grad_scratch,
                                  size_t *grad_zero_bytes, gj_emu_plan_launch *cast, char *err, size_t err_size) {
    gj__diag diag;
    gj__diag_init(&diag);
    if (refused(&diag, gj__check_backward_backward(&diag, &shape->shape, desc), err, err_size)) {
        return -1;
    }
    gj__launch_dims dims;
    gj__backward_backward_args(&shape->shape, desc, args, &dims);
    gradients(&shape->shape, desc->dL_dparams != NULL, desc->dL_dparams_mode, grad_scratch, grad_zero_bytes, cast);
    copy_dims(launch, GJ__KERNEL_BACKWARD_BACKWARD, &dims);
    return 0;
}

int gj_emu_aggregation_possible(const gj_encoding *enc, const gj_codegen_options *opts) {
    const gj__config *c = &enc->config;
    if (c->n_dims > 3 || c->n_features_per_level > 4 || c->interpolation == GJ_INTERP_NEAREST ||
        c->stochastic_interpolation) {
        return 0;
    }
    (void)opts; /* every level aggregates: global atomics and the coarse kernels' shared sums alike */
    return enc->layout.n_levels > 0;
}
