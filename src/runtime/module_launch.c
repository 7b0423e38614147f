/* The launches: one public function per pass. Checks first (module_args.c), then, in the
 * stream's context and in stream order: zero what the kernels accumulate into, the
 * kernel(s), and for fp16 parameters with F = 1 (without gradients_fp32) the cast of the
 * fp32 gradients into the caller's array. */
#include "runtime/l1_carveout.h"
#include "runtime/module.h"

#include <string.h>

/* ------------------------------------------------------------- small steps */

/* The level-group kernels whose launches may stage point-major rows in shared memory (the
 * coarse kernels' shared memory holds their sums instead). */
static int stages(gj__kernel_id id) {
    return gj__kernel(id)->rows && id != GJ__KERNEL_BACKWARD_ROWS_COARSE && id != GJ__KERNEL_BACKWARD_INPUT_ROWS_COARSE;
}

/* The resident blocks a multiprocessor a launch of kernel id is held to (0: as many as fit;
 * gj__module_cap_residency): the one-level forward kernels of a level-major module (no shared
 * memory of their own) to shape.forward_warps_per_sm warps, the level-group forwards to
 * shape.staged_forward_warps_per_sm (staged_dydx_forward_warps_per_sm with dy/dx) where they
 * stage point-major rows and to shape.grouped_forward_warps_per_sm where they do not, in whole
 * blocks (at least one); none where that takes more blocks than a cap can hold (small
 * blocks), which leaves a staging launch its staging carveout. */
static int capped_blocks(const gj_module *m, gj__kernel_id id, const gj__launch_dims *dims) {
    if (!m->shape.level_major) {
        return 0;
    }
    uint32_t warps = 0;
    if (id == GJ__KERNEL_FORWARD || id == GJ__KERNEL_FORWARD_DYDX) {
        warps = m->shape.forward_warps_per_sm;
    } else if (id == GJ__KERNEL_FORWARD_ROWS || id == GJ__KERNEL_FORWARD_DYDX_ROWS) {
        warps = !dims->shared_bytes            ? m->shape.grouped_forward_warps_per_sm
                : id == GJ__KERNEL_FORWARD_ROWS ? m->shape.staged_forward_warps_per_sm
                                                : m->shape.staged_dydx_forward_warps_per_sm;
    }
    if (!warps) {
        return 0;
    }
    const uint32_t blocks = warps / ((dims->block + 31) / 32);
    return blocks == 0 ? 1 : blocks <= GJ__CAP_MAX_BLOCKS ? (int)blocks : 0;
}

static gj_status launch(gj_module *m, gj__launch_scope *scope, gj__kernel_id id, const gj__launch_dims *dims,
                        void *args, gj_stream stream, const char *call) {
    CUfunction function = NULL;
    gj_status status = gj__module_function(m, scope, id, call, &function);
    const int blocks = capped_blocks(m, id, dims);
    gj__launch_dims capped = *dims;
    if (status == GJ_OK && blocks) {
        /* A capped launch's carveout is the cap's; where none can be had (the device's shared
         * memory unknown, staging over 48 KiB a block), it launches as it is. */
        uint32_t bytes = 0;
        status = gj__module_cap_residency(m, scope, id, function, blocks, dims->shared_bytes, &bytes, call);
        capped.shared_bytes = bytes ? bytes : dims->shared_bytes;
        dims = &capped;
    } else if (status == GJ_OK && stages(id)) {
        status = gj__module_fit_carveout(m, scope, id, function, dims->block, dims->shared_bytes, call);
    }
    if (status != GJ_OK) {
        return status;
    }
    void *params[] = {args};
    return gj__cuda_checkf(m->diag, m->drv,
                           m->drv->LaunchKernel(function, dims->grid_x, dims->grid_y, 1, dims->block, 1, 1,
                                                dims->shared_bytes, (CUstream)stream, params, NULL),
                           "%s: cuLaunchKernel(%s, grid %ux%u, block %u, %u bytes shared)", call, gj__kernel_suffix(id),
                           dims->grid_x, dims->grid_y, dims->block, dims->shared_bytes);
}

/* Zeroes bytes at ptr on the stream, 32 bits at a time where the size and address allow. */
static gj_status zero(gj_module *m, CUdeviceptr ptr, size_t bytes, gj_stream stream, const char *call) {
    if (bytes % 4 == 0 && ptr % 4 == 0) {
        return gj__cuda_checkf(m->diag, m->drv, m->drv->MemsetD32Async(ptr, 0u, bytes / 4, (CUstream)stream),
                               "%s: cuMemsetD32Async", call);
    }
    return gj__cuda_checkf(m->diag, m->drv, m->drv->MemsetD8Async(ptr, 0u, bytes, (CUstream)stream),
                           "%s: cuMemsetD8Async", call);
}

static CUdeviceptr device_address(const void *ptr) {
    return (CUdeviceptr)(uintptr_t)ptr;
}

/* ------------------------------------------------------- fp32 gradient buffer */

/* An fp32 buffer of n_params for the scope's device, made once and kept. */
static gj_status scratch(gj_module *m, gj__launch_scope *scope, const char *call, CUdeviceptr *out) {
    const size_t bytes = (size_t)m->shape.n_params * sizeof(float);
    pthread_mutex_lock(&m->lock);
    gj__module_device *d = scope->device;
    gj_status status = GJ_OK;
    if (!d->scratch) {
        status = gj__cuda_checkf(m->diag, m->drv, m->drv->MemAlloc(&d->scratch, bytes),
                                 "%s: cuMemAlloc (fp32 gradient buffer, %zu bytes)", call, bytes);
        if (status == GJ_OK) {
            d->scratch_bytes = bytes;
            d->scratch_context = scope->where.context;
        } else {
            d->scratch = 0;
        }
    }
    *out = d->scratch;
    pthread_mutex_unlock(&m->lock);
    return status;
}

/* Where the kernel accumulates dL/dparams (gj__gradient_plan): the caller's array (zeroed
 * first when overwriting), or for fp16 parameters with F = 1 the zeroed fp32 buffer. */
static gj_status prepare_gradients(gj_module *m, gj__launch_scope *scope, const gj__grad_plan *plan, void *dL_dparams,
                                   gj_stream stream, const char *call, void **target) {
    *target = dL_dparams;
    gj_status status = GJ_OK;
    if (plan->scratch) {
        CUdeviceptr buffer = 0;
        status = scratch(m, scope, call, &buffer);
        *target = (void *)(uintptr_t)buffer;
    }
    if (status == GJ_OK && plan->zero_bytes) {
        status = zero(m, device_address(*target), plan->zero_bytes, stream, call);
    }
    return status;
}

/* With the buffer: dst = (accumulate ? dst : 0) + buffer, rounded once to fp16. */
static gj_status finish_gradients(gj_module *m, gj__launch_scope *scope, const gj__grad_plan *plan, void *dL_dparams,
                                  gj_grad_mode mode, gj_stream stream, const char *call) {
    if (!plan->scratch) {
        return GJ_OK;
    }
    gj_cast_args args;
    memset(&args, 0, sizeof args);
    args.n = m->shape.n_params;
    args.src = (const float *)(uintptr_t)scope->device->scratch;
    args.dst = dL_dparams;
    args.accumulate = mode == GJ_GRAD_ACCUMULATE;
    gj__launch_dims dims;
    gj__elementwise_dims(&m->shape, &dims);
    return launch(m, scope, GJ__KERNEL_CAST_GRADIENTS, &dims, &args, stream, call);
}

/* ------------------------------------------------------------------ passes */

/* The start of every pass: the module, its argument checks (check returns its status),
 * the stream's context. Returns 0 when there is nothing to launch (n == 0 or a refusal). */
#define GJ__BEGIN(module, desc, check, call, status, scope)                                     \
    if (!(module)) {                                                                            \
        return GJ_ERROR_INVALID_ARGUMENT; /* no context to hold a message */                    \
    }                                                                                           \
    gj__diag_clear((module)->diag);                                                             \
    gj_status status = check((module)->diag, &(module)->shape, desc);                           \
    if (status != GJ_OK || (desc)->n == 0) {                                                    \
        return status;                                                                          \
    }                                                                                           \
    gj__launch_scope scope;                                                                     \
    status = gj__module_enter(module, stream, call, &scope);                                    \
    if (status != GJ_OK) {                                                                      \
        return status;                                                                          \
    }

gj_status gj_forward(gj_module *module, gj_stream stream, const gj_forward_desc *desc) {
    static const char call[] = "gj_forward";
    gj_forward_desc widened;
    desc = gj__forward_desc_widened(desc, &widened);
    GJ__BEGIN(module, desc, gj__check_forward, call, status, scope)
    gj_forward_args args;
    gj__launch_dims dims;
    gj__forward_args(&module->shape, desc, &args, &dims);
    status = launch(module, &scope, gj__forward_kernel(desc, &args), &dims, &args, stream, call);
    gj__module_leave(module, &scope);
    return status;
}

/* The main backward kernel and the coarse one (its small levels): independent (other
 * parameters; dL/dx summed atomically), so from coarse_beside_min_points points the coarse
 * kernel runs on the context's side stream, queued first so that its blocks take their
 * places before the main kernel's fill the device, and the caller's stream waits for both.
 * Both functions are resolved (compiled on first use) before the fork: the side stream's lock
 * is held only around launches. */
static gj_status main_and_coarse(gj_module *m, gj__launch_scope *scope, gj__kernel_id main_kernel,
                                 gj__kernel_id coarse_kernel, const gj__launch_dims *dims, gj_backward_args *args,
                                 uint64_t n, gj_stream stream, const char *call) {
    const uint64_t beside = m->shape.coarse_beside_min_points;
    const gj__side_stream *side = NULL;
    gj_status status = GJ_OK;
    if (beside && n >= beside) {
        CUfunction f;
        status = gj__module_function(m, scope, main_kernel, call, &f);
        if (status == GJ_OK) {
            status = gj__module_function(m, scope, coarse_kernel, call, &f);
        }
        if (status == GJ_OK) {
            status = gj__side_fork(&m->beside, m->diag, m->drv, &scope->where, stream, call, &side);
        }
    }
    if (status != GJ_OK) {
        return status;
    }
    /* After the main kernel a few blocks per multiprocessor (GJ__COARSE_BLOCKS_PER_SM) hide the
     * coarse loop's load latency while each block's shared sums still serve many points; beside
     * it (GJ__COARSE_BESIDE_BLOCKS_PER_SM) the main kernel's warps hide it, and fewer blocks take
     * fewer of its places and flush fewer copies of the sums. */
    const uint32_t per_sm = side ? m->shape.coarse_beside_blocks_per_sm : m->shape.coarse_blocks_per_sm;
    args->coarse_blocks = gj__coarse_blocks(&m->shape, n, per_sm * scope->device->multiprocessors);
    gj__launch_dims coarse_dims;
    gj__coarse_dims(&m->shape, args->coarse_blocks, &coarse_dims);
    if (!side) {
        status = launch(m, scope, main_kernel, dims, args, stream, call);
        return status == GJ_OK ? launch(m, scope, coarse_kernel, &coarse_dims, args, stream, call) : status;
    }
    status = launch(m, scope, coarse_kernel, &coarse_dims, args, (gj_stream)side->stream, call);
    if (status == GJ_OK) {
        status = launch(m, scope, main_kernel, dims, args, stream, call);
    }
    const gj_status joined = gj__side_join(&m->beside, m->diag, m->drv, side, stream, call);
    return status == GJ_OK ? joined : status;
}

/* The gradient kernels of a backward launch: dL/dparams and/or dL/dx from the parameters
 * (the main kernel, its small levels, the fp16 gradient cast). */
static gj_status gradient_kernels(gj_module *module, gj__launch_scope *scope, const gj_backward_desc *desc,
                                  gj_stream stream, const char *call) {
    gj_backward_args args;
    gj__launch_dims dims;
    gj__backward_args(&module->shape, desc, &args, &dims);
    gj__grad_plan plan;
    gj__gradient_plan(&module->shape, desc->dL_dparams != NULL, desc->dL_dparams_mode, &plan);
    gj_status status = prepare_gradients(module, scope, &plan, desc->dL_dparams, stream, call, &args.dL_dparams);
    if (status == GJ_OK && desc->dL_dx && module->shape.level_major) {
        /* Level-major blocks add their level's share of dL/dx atomically. */
        status = zero(module, device_address(desc->dL_dx), (size_t)desc->n * module->shape.n_dims * sizeof(float),
                      stream, call);
    }
    /* Small levels (shared memory): a second kernel of coarse_blocks blocks per level sums
     * them (main_and_coarse sets the count), and the first one leaves them out. */
    const int coarse = gj__backward_uses_coarse(&module->shape, desc);
    gj__kernel_id main_kernel, coarse_kernel;
    gj__backward_kernels(desc, &args, &main_kernel, &coarse_kernel);
    if (status == GJ_OK && coarse) {
        status = main_and_coarse(module, scope, main_kernel, coarse_kernel, &dims, &args, desc->n, stream, call);
    } else if (status == GJ_OK) {
        status = launch(module, scope, main_kernel, &dims, &args, stream, call);
    }
    if (status == GJ_OK) {
        status = finish_gradients(module, scope, &plan, desc->dL_dparams, desc->dL_dparams_mode, stream, call);
    }
    return status;
}

/* dL/dx from the forward's dy/dx (desc->dy_dx or dy_dx_compact), a streaming launch of its own. */
static gj_status dx_from_dydx(gj_module *m, gj__launch_scope *scope, const gj_backward_desc *desc, gj_stream stream,
                              const char *call) {
    gj_dx_from_dydx_args args;
    gj__launch_dims dims;
    gj__dx_from_dydx_args(&m->shape, desc, &args, &dims);
    return launch(m, scope, GJ__KERNEL_DX_FROM_DYDX, &dims, &args, stream, call);
}

gj_status gj_backward(gj_module *module, gj_stream stream, const gj_backward_desc *desc) {
    static const char call[] = "gj_backward";
    gj_backward_desc widened;
    desc = gj__backward_desc_widened(desc, &widened);
    GJ__BEGIN(module, desc, gj__check_backward, call, status, scope)
    /* With the forward's dy/dx, the gradient kernels compute dL/dparams alone (if asked). */
    gj_backward_desc grads;
    const int dx_from_dydx_pass = gj__backward_split(desc, &grads);
    if (grads.dL_dparams || grads.dL_dx) {
        status = gradient_kernels(module, &scope, &grads, stream, call);
    }
    if (status == GJ_OK && dx_from_dydx_pass) {
        status = dx_from_dydx(module, &scope, desc, stream, call);
    }
    gj__module_leave(module, &scope);
    return status;
}

gj_status gj_backward_backward(gj_module *module, gj_stream stream, const gj_backward_backward_desc *desc) {
    static const char call[] = "gj_backward_backward";
    GJ__BEGIN(module, desc, gj__check_backward_backward, call, status, scope)
    gj_backward_backward_args args;
    gj__launch_dims dims;
    gj__backward_backward_args(&module->shape, desc, &args, &dims);
    gj__grad_plan plan;
    gj__gradient_plan(&module->shape, desc->dL_dparams != NULL, desc->dL_dparams_mode, &plan);
    status = prepare_gradients(module, &scope, &plan, desc->dL_dparams, stream, call, &args.dL_dparams);
    if (status == GJ_OK) {
        status = launch(module, &scope, GJ__KERNEL_BACKWARD_BACKWARD, &dims, &args, stream, call);
    }
    if (status == GJ_OK) {
        status = finish_gradients(module, &scope, &plan, desc->dL_dparams, desc->dL_dparams_mode, stream, call);
    }
    gj__module_leave(module, &scope);
    return status;
}

gj_status gj_init_params(gj_module *module, gj_stream stream, const gj_init_desc *desc) {
    static const char call[] = "gj_init_params";
    if (!module) {
        return GJ_ERROR_INVALID_ARGUMENT; /* no context to hold a message */
    }
    gj__diag_clear(module->diag);
    gj_status status = gj__check_init(module->diag, &module->shape, desc);
    if (status != GJ_OK || module->shape.n_params == 0) {
        return status;
    }
    gj__launch_scope scope;
    status = gj__module_enter(module, stream, call, &scope);
    if (status != GJ_OK) {
        return status;
    }
    gj_init_args args;
    memset(&args, 0, sizeof args);
    args.n = module->shape.n_params;
    args.params = desc->params;
    args.params_fp32 = desc->params_fp32;
    args.seed = desc->seed;
    args.scale = desc->scale;
    gj__launch_dims dims;
    gj__elementwise_dims(&module->shape, &dims);
    status = launch(module, &scope, GJ__KERNEL_INIT_PARAMS, &dims, &args, stream, call);
    gj__module_leave(module, &scope);
    return status;
}
