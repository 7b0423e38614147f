/* Where a launch runs (docs/runtime.md, "Contexts and devices"): in the context of the
 * stream it is given (made current for the launch when another one is), else the
 * current context, else device 0's primary context. A module keeps per device what
 * depends on it: the multiprocessor count and the fp32 gradient buffer; the compiled
 * programs are shared by every device of one architecture. */
#include "runtime/module.h"

#include <stdio.h>
#include <string.h>

/* The device record of the current context, made on first use. Call with m->lock held. */
static gj_status device_of(gj_module *m, const char *call, gj__module_device **out) {
    CUdevice device;
    char what[96];
    snprintf(what, sizeof what, "%s: cuCtxGetDevice", call);
    gj_status status = gj__cuda_check(m->diag, m->drv, m->drv->CtxGetDevice(&device), what);
    for (size_t i = 0; status == GJ_OK && i < m->n_devices; ++i) {
        if (m->devices[i].device == device) {
            *out = &m->devices[i];
            return GJ_OK;
        }
    }
    if (status == GJ_OK && m->n_devices == GJ__MODULE_MAX_DEVICES) {
        status = gj__fail(m->diag, GJ_ERROR_INTERNAL, "%s: more than %d devices", call, GJ__MODULE_MAX_DEVICES);
    }
    int major = 0, minor = 0, sms = 0;
    if (status == GJ_OK) {
        snprintf(what, sizeof what, "%s: cuDeviceGetAttribute", call);
        status = gj__cuda_check(m->diag, m->drv,
                                m->drv->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device), what);
    }
    if (status == GJ_OK) {
        status = gj__cuda_check(m->diag, m->drv,
                                m->drv->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device), what);
    }
    if (status == GJ_OK) {
        status = gj__cuda_check(m->diag, m->drv,
                                m->drv->DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device), what);
    }
    if (status != GJ_OK) {
        return status;
    }
    gj__module_device *d = &m->devices[m->n_devices++];
    memset(d, 0, sizeof *d);
    d->device = device;
    d->sm = major * 10 + minor;
    /* Two blocks per multiprocessor keep every one busy while each block's shared sums
     * serve many points. */
    d->coarse_blocks = sms > 0 ? 2u * (uint32_t)sms : 1u;
    *out = d;
    return GJ_OK;
}

gj_status gj__module_enter(gj_module *m, gj_stream stream, const char *call, gj__launch_scope *scope) {
    memset(scope, 0, sizeof *scope);
    CUcontext current = NULL;
    char what[96];
    snprintf(what, sizeof what, "%s: cuCtxGetCurrent", call);
    gj_status status = gj__cuda_check(m->diag, m->drv, m->drv->CtxGetCurrent(&current), what);
    if (status == GJ_OK && !stream && !current) {
        status = gj__driver_current_context(m->diag, m->drv, &current); /* device 0's primary context */
    }
    if (status == GJ_OK && stream) {
        CUcontext owner = NULL;
        snprintf(what, sizeof what, "%s: cuStreamGetCtx", call);
        status = gj__cuda_check(m->diag, m->drv, m->drv->StreamGetCtx((CUstream)stream, &owner), what);
        if (status == GJ_OK && owner != current) {
            snprintf(what, sizeof what, "%s: cuCtxPushCurrent", call);
            status = gj__cuda_check(m->diag, m->drv, m->drv->CtxPushCurrent(owner), what);
            scope->pushed = status == GJ_OK;
            current = owner;
        }
    }
    scope->context = current;
    if (status == GJ_OK) {
        pthread_mutex_lock(&m->lock);
        status = device_of(m, call, &scope->device);
        pthread_mutex_unlock(&m->lock);
    }
    if (status != GJ_OK) {
        gj__module_leave(m, scope);
    }
    return status;
}

void gj__module_leave(gj_module *m, gj__launch_scope *scope) {
    if (scope->pushed) {
        CUcontext popped;
        m->drv->CtxPopCurrent(&popped);
        scope->pushed = 0;
    }
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
