/* Launching a user kernel, and what the driver says about it (occupancy, attributes):
 * each in the context of the stream given (or the current context). A launch formats no
 * text and asks the driver nothing about the device once its context has seen the kernel
 * (gj__kernel_function); messages are made only on failure. */
#include "runtime/user_module.h"

#include <string.h>


void gj_launch_config_init(gj_launch_config *config) {
    if (config) {
        memset(config, 0, sizeof *config);
        config->struct_size = (uint32_t)sizeof *config;
        config->grid[0] = config->grid[1] = config->grid[2] = 1;
        config->block[0] = config->block[1] = config->block[2] = 1;
    }
}

static gj_status check_config(gj_kernel *k, const gj_launch_config *c, const char *call) {
    const gj__diag *d = k->module->diag;
    if (!c) {
        return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT, "%s(%s): config must not be NULL", call, k->name);
    }
    if (c->struct_size != sizeof *c) {
        return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT,
                        "%s(%s): config->struct_size is %u (expected %zu): prepare it with gj_launch_config_init()",
                        call, k->name, c->struct_size, sizeof *c);
    }
    const uint64_t threads = (uint64_t)c->block[0] * c->block[1] * c->block[2];
    if (!c->grid[0] || !c->grid[1] || !c->grid[2] || !threads || threads > 1024) {
        return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT,
                        "%s(%s): grid %ux%ux%u, block %ux%ux%u: every extent must be at least 1 and a block at most "
                        "1024 threads",
                        call, k->name, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1], c->block[2]);
    }
    return GJ_OK;
}

/* Lets a launch take more than 48 KiB of dynamic shared memory (the driver's default). */
static gj_status allow_shared(gj_kernel *k, CUfunction f, uint32_t bytes, const char *call) {
    if (bytes <= GJ__DEFAULT_SHARED_BYTES) {
        return GJ_OK;
    }
    return gj__cuda_checkf(k->module->diag, k->module->drv,
                           k->module->drv->FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)bytes),
                           "%s(%s): cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, %u)", call, k->name, bytes);
}

/* A packed parameter buffer against what the kernel declares (extent: the end of its last
 * parameter, 0 where the driver cannot say): too small is refused; larger (a C struct's
 * trailing padding) is trimmed to the parameters' extent, which the driver insists on. */
static gj_status fit_packed(gj_kernel *k, size_t extent, size_t *size, const char *call) {
    if (extent == 0) {
        return GJ_OK;
    }
    if (*size < extent) {
        return gj__fail(k->module->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s(%s): the kernel's parameters take %zu bytes, the buffer holds %zu", call, k->name,
                        extent, *size);
    }
    *size = extent;
    return GJ_OK;
}

/* The launch itself, in the scope entered for it. */
static gj_status launch_in(gj_kernel *k, const gj_launch_config *c, const gj__scope *where, void **params,
                           void **extra, const char *call) {
    struct gj_user_module *m = k->module;
    CUfunction f = NULL;
    size_t extent = 0;
    gj_status status = gj__kernel_function(k, where, call, &f, extra ? &extent : NULL); /* packed: the extent too */
    if (status == GJ_OK) {
        status = allow_shared(k, f, c->shared_bytes, call);
    }
    if (status == GJ_OK && extra) {
        status = fit_packed(k, extent, (size_t *)extra[3], call); /* CU_LAUNCH_PARAM_BUFFER_SIZE's value */
    }
    if (status == GJ_OK) {
        status = gj__cuda_checkf(m->diag, m->drv,
                                 m->drv->LaunchKernel(f, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1],
                                                      c->block[2], c->shared_bytes, (CUstream)c->stream, params, extra),
                                 "%s(%s, grid %ux%ux%u, block %ux%ux%u, %u bytes shared)", call, k->name,
                                 c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1], c->block[2],
                                 c->shared_bytes);
    }
    return status;
}

static gj_status launch(gj_kernel *k, const gj_launch_config *c, void **params, void **extra, const char *call) {
    if (!k) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    struct gj_user_module *m = k->module;
    gj__diag_clear(m->diag);
    gj_status status = check_config(k, c, call);
    if (status != GJ_OK) {
        return status;
    }
    gj__scope where;
    status = gj__scope_enter(m->diag, m->drv, c->stream, call, &where);
    if (status != GJ_OK) {
        return status;
    }
    status = launch_in(k, c, &where, params, extra, call);
    gj__scope_leave(m->drv, &where);
    return status;
}

gj_status gj__kernel_launch_shaped(gj_kernel *k, gj_stream stream, gj__launch_shape shape, void *arg, void **args,
                                   const char *call) {
    if (!k || !shape) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    struct gj_user_module *m = k->module;
    gj__diag_clear(m->diag);
    gj__scope where;
    gj_status status = gj__scope_enter(m->diag, m->drv, stream, call, &where);
    if (status != GJ_OK) {
        return status;
    }
    int sm = 0;
    gj_launch_config c;
    gj_launch_config_init(&c);
    c.stream = stream;
    /* The program first, then the shape, then the function: shape may set the kernel's
     * carveout, which a function resolved after it takes (one more lookup under the lock). */
    status = gj__kernel_cubin_sm(k, &where, call, &sm);
    if (status == GJ_OK) {
        status = shape(arg, sm, &c);
    }
    if (status == GJ_OK) {
        status = check_config(k, &c, call);
    }
    if (status == GJ_OK) {
        status = launch_in(k, &c, &where, args, NULL, call);
    }
    gj__scope_leave(m->drv, &where);
    return status;
}

gj_status gj_kernel_launch(gj_kernel *kernel, const gj_launch_config *config, void **args) {
    return launch(kernel, config, args, NULL, "gj_kernel_launch");
}

gj_status gj_kernel_launch_packed(gj_kernel *kernel, const gj_launch_config *config, const void *args,
                                  size_t args_size) {
    size_t size = args_size;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, (void *)args, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    if (kernel && args_size && !args) {
        return gj__fail(kernel->module->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "gj_kernel_launch_packed(%s): args is NULL with %zu bytes", kernel->name, args_size);
    }
    return launch(kernel, config, NULL, extra, "gj_kernel_launch_packed");
}

/* The kernel's function in the current context, for the queries below. */
static gj_status current_function(gj_kernel *k, const char *call, gj__scope *where, CUfunction *f) {
    gj__diag_clear(k->module->diag);
    gj_status status = gj__scope_enter(k->module->diag, k->module->drv, NULL, call, where);
    if (status == GJ_OK) {
        status = gj__kernel_function(k, where, call, f, NULL);
        if (status != GJ_OK) {
            gj__scope_leave(k->module->drv, where);
        }
    }
    return status;
}

gj_status gj_kernel_occupancy(gj_kernel *kernel, uint32_t block_size, uint32_t shared_bytes, int *blocks_per_sm) {
    static const char call[] = "gj_kernel_occupancy";
    if (!kernel || !blocks_per_sm) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    *blocks_per_sm = 0;
    gj__scope where;
    CUfunction f;
    gj_status status = current_function(kernel, call, &where, &f);
    if (status != GJ_OK) {
        return status;
    }
    struct gj_user_module *m = kernel->module;
    status = allow_shared(kernel, f, shared_bytes, call);
    if (status == GJ_OK) {
        status = gj__cuda_checkf(m->diag, m->drv,
                                 m->drv->OccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, f, (int)block_size,
                                                                                   shared_bytes),
                                 "%s(%s, block %u, %u bytes shared)", call, kernel->name, block_size,
                                 shared_bytes);
    }
    gj__scope_leave(m->drv, &where);
    return status;
}

gj_status gj_kernel_suggest_block(gj_kernel *kernel, uint32_t shared_bytes, int *block_size, int *min_grid) {
    static const char call[] = "gj_kernel_suggest_block";
    if (!kernel || !block_size || !min_grid) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj__scope where;
    CUfunction f;
    gj_status status = current_function(kernel, call, &where, &f);
    if (status != GJ_OK) {
        return status;
    }
    struct gj_user_module *m = kernel->module;
    status = gj__cuda_checkf(m->diag, m->drv,
                             m->drv->OccupancyMaxPotentialBlockSize(min_grid, block_size, f, NULL, shared_bytes, 0),
                             "%s(%s): cuOccupancyMaxPotentialBlockSize", call, kernel->name);
    gj__scope_leave(m->drv, &where);
    return status;
}

gj_status gj_kernel_attributes(gj_kernel *kernel, int *registers, int *static_shared_bytes) {
    static const char call[] = "gj_kernel_attributes";
    if (!kernel || !registers || !static_shared_bytes) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj__scope where;
    CUfunction f;
    gj_status status = current_function(kernel, call, &where, &f);
    if (status != GJ_OK) {
        return status;
    }
    struct gj_user_module *m = kernel->module;
    status = gj__cuda_check(m->diag, m->drv, m->drv->FuncGetAttribute(registers, CU_FUNC_ATTRIBUTE_NUM_REGS, f),
                            "cuFuncGetAttribute(NUM_REGS)");
    if (status == GJ_OK) {
        status = gj__cuda_check(m->diag, m->drv,
                                m->drv->FuncGetAttribute(static_shared_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f),
                                "cuFuncGetAttribute(SHARED_SIZE_BYTES)");
    }
    gj__scope_leave(m->drv, &where);
    return status;
}
