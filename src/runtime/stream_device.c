/* Device facts of a stream (stream_device.h). */
#include "runtime/stream_device.h"

#include "runtime/scope.h"

gj_status gj__stream_device_attribute(gj__runtime *rt, gj_stream stream, CUdevice_attribute attribute,
                                      const char *call, int *value) {
    *value = 0;
    gj__driver *drv = NULL;
    gj_status status = gj__driver_get(rt->driver, rt->diag, &drv);
    if (status != GJ_OK) {
        return status;
    }
    gj__scope where;
    status = gj__scope_enter(rt->diag, drv, stream, call, &where);
    if (status != GJ_OK) {
        return status;
    }
    CUdevice device;
    int sm = 0;
    status = gj__scope_device(rt->diag, drv, call, &device, &sm);
    if (status == GJ_OK) {
        status = gj__cuda_checkf(rt->diag, drv, drv->DeviceGetAttribute(value, attribute, device),
                                 "%s: cuDeviceGetAttribute(%d)", call, (int)attribute);
    }
    gj__scope_leave(drv, &where);
    return status;
}

gj_status gj__stream_multiprocessors(gj__runtime *rt, gj_stream stream, const char *call, int *count) {
    return gj__stream_device_attribute(rt, stream, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, call, count);
}
