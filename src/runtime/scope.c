/* Entering the context a launch runs in (see scope.h). */
#include "runtime/scope.h"

#include <stdio.h>
#include <string.h>

gj_status gj__device_sm(const gj__diag *d, gj__driver *drv, CUdevice device, const char *call, int *sm) {
    int major = 0, minor = 0;
    char what[96];
    snprintf(what, sizeof what, "%s: cuDeviceGetAttribute", call);
    gj_status status = gj__cuda_check(
        d, drv, drv->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device), what);
    if (status == GJ_OK) {
        status = gj__cuda_check(
            d, drv, drv->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device), what);
    }
    *sm = major * 10 + minor;
    return status;
}

gj_status gj__scope_enter(const gj__diag *d, gj__driver *drv, gj_stream stream, const char *call, gj__scope *scope) {
    memset(scope, 0, sizeof *scope);
    CUcontext current = NULL;
    char what[96];
    snprintf(what, sizeof what, "%s: cuCtxGetCurrent", call);
    gj_status status = gj__cuda_check(d, drv, drv->CtxGetCurrent(&current), what);
    if (status == GJ_OK && !stream && !current) {
        status = gj__driver_current_context(d, drv, &current); /* device 0's primary context */
    }
    if (status == GJ_OK && stream) {
        CUcontext owner = NULL;
        snprintf(what, sizeof what, "%s: cuStreamGetCtx", call);
        status = gj__cuda_check(d, drv, drv->StreamGetCtx((CUstream)stream, &owner), what);
        if (status == GJ_OK && owner != current) {
            snprintf(what, sizeof what, "%s: cuCtxPushCurrent", call);
            status = gj__cuda_check(d, drv, drv->CtxPushCurrent(owner), what);
            scope->pushed = status == GJ_OK;
            current = owner;
        }
    }
    scope->context = current;
    if (status == GJ_OK) {
        snprintf(what, sizeof what, "%s: cuCtxGetDevice", call);
        status = gj__cuda_check(d, drv, drv->CtxGetDevice(&scope->device), what);
    }
    if (status == GJ_OK) {
        status = gj__device_sm(d, drv, scope->device, call, &scope->sm);
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
