/* Entering the context a launch runs in (see scope.h). Nothing is formatted unless a
 * driver call fails. */
#include "runtime/scope.h"

#include <string.h>

gj_status gj__scope_device(const gj__diag *d, gj__driver *drv, const char *call, CUdevice *device, int *sm) {
    int major = 0, minor = 0;
    gj_status status = gj__cuda_checkf(d, drv, drv->CtxGetDevice(device), "%s: cuCtxGetDevice", call);
    if (status == GJ_OK) {
        status = gj__cuda_checkf(d, drv, drv->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, *device),
                                 "%s: cuDeviceGetAttribute", call);
    }
    if (status == GJ_OK) {
        status = gj__cuda_checkf(d, drv, drv->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, *device),
                                 "%s: cuDeviceGetAttribute", call);
    }
    *sm = major * 10 + minor;
    return status;
}

gj_status gj__scope_enter(const gj__diag *d, gj__driver *drv, gj_stream stream, const char *call, gj__scope *scope) {
    memset(scope, 0, sizeof *scope);
    CUcontext current = NULL;
    gj_status status = gj__cuda_checkf(d, drv, drv->CtxGetCurrent(&current), "%s: cuCtxGetCurrent", call);
    if (status == GJ_OK && !stream && !current) {
        status = gj__driver_current_context(d, drv, &current); /* device 0's primary context */
    }
    if (status == GJ_OK && stream) {
        CUcontext owner = NULL;
        status = gj__cuda_checkf(d, drv, drv->StreamGetCtx((CUstream)stream, &owner), "%s: cuStreamGetCtx", call);
        if (status == GJ_OK && owner != current && !current) {
            /* A thread without a context (a PyTorch autograd worker, say) keeps the stream's,
             * as the CUDA runtime's first call on a thread would leave it: popping it would
             * leave the runtime's next call there to find none (and torch to warn). */
            status = gj__cuda_checkf(d, drv, drv->CtxSetCurrent(owner), "%s: cuCtxSetCurrent", call);
            current = owner;
        } else if (status == GJ_OK && owner != current) {
            status = gj__cuda_checkf(d, drv, drv->CtxPushCurrent(owner), "%s: cuCtxPushCurrent", call);
            scope->pushed = status == GJ_OK;
            current = owner;
        }
    }
    scope->context = current;
    if (status == GJ_OK) {
        status = gj__cuda_checkf(d, drv, drv->CtxGetId(current, &scope->context_id), "%s: cuCtxGetId", call);
    }
    if (status != GJ_OK) {
        gj__scope_leave(drv, scope);
    }
    return status;
}

void gj__scope_leave(gj__driver *drv, gj__scope *scope) {
    if (scope->pushed) {
        CUcontext popped;
        drv->CtxPopCurrent(&popped);
        scope->pushed = 0;
    }
}
