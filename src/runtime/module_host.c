/* Host-side conveniences: device memory and copies for programs without the CUDA
 * runtime, and fp16 <-> float conversions for the arrays of fp16 modules. */
#include "runtime/module.h"

#include <stdio.h>
#include <string.h>

/* The driver and the current context (the context rule of driver.h). */
static gj_status ready(gj__runtime *rt, gj__driver **drv) {
    gj_status status = gj__driver_get(rt->driver, rt->diag, drv);
    CUcontext current;
    if (status == GJ_OK) {
        status = gj__driver_current_context(rt->diag, *drv, &current);
    }
    return status;
}

gj_status gj__device_alloc(gj__runtime *rt, size_t bytes, void **ptr) {
    *ptr = NULL;
    if (bytes == 0) {
        return GJ_OK;
    }
    gj__driver *drv = NULL;
    gj_status status = ready(rt, &drv);
    CUdeviceptr address = 0;
    if (status == GJ_OK) {
        char what[80];
        snprintf(what, sizeof what, "gj_device_alloc: cuMemAlloc(%zu bytes)", bytes);
        status = gj__cuda_check(rt->diag, drv, drv->MemAlloc(&address, bytes), what);
    }
    if (status == GJ_OK) {
        *ptr = (void *)(uintptr_t)address;
    }
    return status;
}

void gj__device_free(gj__runtime *rt, void *ptr) {
    gj__driver *drv = gj__driver_loaded(rt->driver);
    if (!ptr || !drv) {
        return; /* without a loaded driver nothing can have been allocated */
    }
    CUresult r = drv->MemFree((CUdeviceptr)(uintptr_t)ptr);
    if (r != CUDA_SUCCESS) {
        gj__cuda_check(rt->diag, drv, r, "gj_device_free: cuMemFree");
        gj__log(rt->diag, GJ_LOG_WARNING, "%s", gj__diag_message(rt->diag));
    }
}

gj_status gj__memcpy(gj__runtime *rt, void *dst, const void *src, size_t bytes, int to_device) {
    const char *call = to_device ? "gj_memcpy_to_device" : "gj_memcpy_to_host";
    if (bytes && (!dst || !src)) {
        return gj__fail(rt->diag, GJ_ERROR_INVALID_ARGUMENT, "%s: dst and src must not be NULL", call);
    }
    if (bytes == 0) {
        return GJ_OK;
    }
    gj__driver *drv = NULL;
    gj_status status = ready(rt, &drv);
    if (status == GJ_OK && to_device) {
        status = gj__cuda_check(rt->diag, drv, drv->MemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, bytes),
                                "gj_memcpy_to_device: cuMemcpyHtoD");
    } else if (status == GJ_OK) {
        status = gj__cuda_check(rt->diag, drv, drv->MemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, bytes),
                                "gj_memcpy_to_host: cuMemcpyDtoH");
    }
    return status;
}

gj_status gj__use_device(gj__runtime *rt, int device) {
    gj__driver *drv = NULL;
    gj_status status = gj__driver_get(rt->driver, rt->diag, &drv);
    CUcontext primary;
    if (status == GJ_OK) {
        status = gj__driver_use_device(rt->diag, drv, device, &primary);
    }
    return status;
}

gj_status gj__memcpy_async(gj__runtime *rt, void *dst, const void *src, size_t bytes, gj_stream stream) {
    if (bytes && (!dst || !src)) {
        return gj__fail(rt->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_memcpy_async: dst and src must not be NULL");
    }
    if (bytes == 0) {
        return GJ_OK;
    }
    gj__driver *drv = NULL;
    gj_status status = gj__driver_get(rt->driver, rt->diag, &drv);
    gj__scope where;
    if (status == GJ_OK) {
        status = gj__scope_enter(rt->diag, drv, stream, "gj_memcpy_async", &where);
    }
    if (status == GJ_OK) {
        /* Unified addressing: the driver tells host from device memory, and one device's
         * from another's, by the addresses (a peer copy where the devices differ). */
        char what[80];
        snprintf(what, sizeof what, "gj_memcpy_async: cuMemcpyAsync(%zu bytes)", bytes);
        status = gj__cuda_check(rt->diag, drv,
                                drv->MemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes,
                                                 (CUstream)stream),
                                what);
        gj__scope_leave(drv, &where);
    }
    return status;
}

gj_status gj__stream_synchronize(gj__runtime *rt, gj_stream stream) {
    gj__driver *drv = NULL;
    gj_status status = ready(rt, &drv);
    if (status == GJ_OK) {
        status = gj__cuda_check(rt->diag, drv, drv->StreamSynchronize((CUstream)stream), "cuStreamSynchronize");
    }
    return status;
}
