/* A module's devices (docs/runtime.md, "Contexts and devices"): a launch runs in its
 * stream's context (runtime/scope.h); the module keeps per device what depends on it, the
 * multiprocessor count and the fp32 gradient buffer, while the compiled programs are
 * shared by every device of one architecture. */
#include "runtime/module.h"

#include <stdio.h>
#include <string.h>

/* The module's record of a device, made on first use. Call with m->lock held. */
static gj_status device_of(gj_module *m, const gj__scope *where, const char *call, gj__module_device **out) {
    for (size_t i = 0; i < m->n_devices; ++i) {
        if (m->devices[i].device == where->device) {
            *out = &m->devices[i];
            return GJ_OK;
        }
    }
    if (m->n_devices == GJ__MODULE_MAX_DEVICES) {
        return gj__fail(m->diag, GJ_ERROR_INTERNAL, "%s: more than %d devices", call, GJ__MODULE_MAX_DEVICES);
    }
    int sms = 0;
    char what[96];
    snprintf(what, sizeof what, "%s: cuDeviceGetAttribute", call);
    gj_status status = gj__cuda_check(
        m->diag, m->drv, m->drv->DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, where->device), what);
    if (status != GJ_OK) {
        return status;
    }
    gj__module_device *d = &m->devices[m->n_devices++];
    memset(d, 0, sizeof *d);
    d->device = where->device;
    d->sm = where->sm;
    /* Two blocks per multiprocessor keep every one busy while each block's shared sums
     * serve many points. */
    d->coarse_blocks = sms > 0 ? 2u * (uint32_t)sms : 1u;
    *out = d;
    return GJ_OK;
}

gj_status gj__module_enter(gj_module *m, gj_stream stream, const char *call, gj__launch_scope *scope) {
    memset(scope, 0, sizeof *scope);
    gj_status status = gj__scope_enter(m->diag, m->drv, stream, call, &scope->where);
    if (status == GJ_OK) {
        pthread_mutex_lock(&m->lock);
        status = device_of(m, &scope->where, call, &scope->device);
        pthread_mutex_unlock(&m->lock);
        if (status != GJ_OK) {
            gj__scope_leave(m->drv, &scope->where);
        }
    }
    return status;
}

void gj__module_leave(gj_module *m, gj__launch_scope *scope) {
    gj__scope_leave(m->drv, &scope->where);
}

gj_status gj__module_function(gj_module *m, gj__launch_scope *scope, gj__kernel_id id, const char *call,
                              CUfunction *out) {
    const gj__module_program *program = NULL;
    pthread_mutex_lock(&m->lock);
    gj_status status = gj__module_program_for(m, scope->device->sm, id, &program);
    CUkernel kernel = status == GJ_OK ? program->kernels[id] : NULL;
    pthread_mutex_unlock(&m->lock);
    if (status == GJ_OK && !kernel) {
        status = gj__fail(m->diag, GJ_ERROR_PASS_NOT_COMPILED, "%s: the module's program has no %s_%s kernel", call,
                          m->opts.name, gj__kernel_suffix(id));
    }
    if (status != GJ_OK) {
        return status;
    }
    char what[96];
    snprintf(what, sizeof what, "%s: cuKernelGetFunction", call);
    /* The kernel's instance in the current context (the library serves every context). */
    return gj__cuda_check(m->diag, m->drv, m->drv->KernelGetFunction(out, kernel), what);
}

void gj__module_free_scratch(gj_module *m) {
    for (size_t i = 0; i < m->n_devices; ++i) {
        gj__module_device *d = &m->devices[i];
        if (!d->scratch) {
            continue;
        }
        /* cuMemFree needs a context; the buffer's own is the safe one. */
        CUcontext popped;
        if (m->drv->CtxPushCurrent(d->scratch_context) == CUDA_SUCCESS) {
            m->drv->MemFree(d->scratch);
            m->drv->CtxPopCurrent(&popped);
        }
        d->scratch = 0;
        d->scratch_bytes = 0;
        d->scratch_context = NULL;
    }
}
