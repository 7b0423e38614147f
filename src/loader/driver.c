/* The CUDA driver API through dlopen() and cuGetProcAddress (see driver.h). */
#include "loader/driver.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every entry point with the CUDA version of the signature declared in driver.h. */
typedef struct entry_point {
    const char *name;
    int version;
    size_t offset;
    int optional; /* newer than gridjit's minimum driver: left NULL where missing */
} entry_point;

#define GJ__ENTRY(field, version) {"cu" #field, version, offsetof(gj__driver, field), 0}
#define GJ__OPTIONAL_ENTRY(field, version) {"cu" #field, version, offsetof(gj__driver, field), 1}
static const entry_point entry_points[] = {
    GJ__ENTRY(GetErrorName, 6000),
    GJ__ENTRY(GetErrorString, 6000),
    GJ__ENTRY(Init, 2000),
    GJ__ENTRY(DriverGetVersion, 2020),
    GJ__ENTRY(DeviceGet, 2000),
    GJ__ENTRY(DeviceGetCount, 2000),
    GJ__ENTRY(DeviceGetName, 2000),
    GJ__ENTRY(DeviceGetAttribute, 2000),
    GJ__ENTRY(DevicePrimaryCtxRetain, 7000),
    GJ__ENTRY(DevicePrimaryCtxRelease, 11000),
    GJ__ENTRY(CtxGetCurrent, 4000),
    GJ__ENTRY(CtxSetCurrent, 4000),
    GJ__ENTRY(CtxGetDevice, 2000),
    GJ__ENTRY(CtxGetId, 12000), /* a context's identity for its lifetime: the launch caches' key */
    GJ__ENTRY(CtxSynchronize, 2000),
    GJ__ENTRY(LibraryLoadData, 12000),
    GJ__ENTRY(LibraryUnload, 12000),
    GJ__ENTRY(LibraryGetKernel, 12000),
    GJ__ENTRY(KernelGetFunction, 12000),
    GJ__ENTRY(LaunchKernel, 4000),
    GJ__ENTRY(MemAlloc, 3020),
    GJ__ENTRY(MemFree, 3020),
    GJ__ENTRY(MemcpyHtoD, 3020),
    GJ__ENTRY(MemcpyDtoH, 3020),
    GJ__ENTRY(MemsetD8Async, 3020),
    GJ__ENTRY(MemsetD32Async, 3020),
    GJ__ENTRY(StreamSynchronize, 2000),
    GJ__ENTRY(StreamGetId, 12000), /* a stream's identity for its lifetime: per-stream workspaces' key */
    GJ__ENTRY(EventCreate, 2000),
    GJ__ENTRY(EventRecord, 2000),
    GJ__ENTRY(EventSynchronize, 2000),
    GJ__ENTRY(EventElapsedTime, 2000),
    GJ__ENTRY(EventDestroy, 4000),
    GJ__ENTRY(EventQuery, 2000),
    GJ__ENTRY(StreamGetCtx, 9020),
    GJ__ENTRY(CtxPushCurrent, 4000),
    GJ__ENTRY(CtxPopCurrent, 4000),
    GJ__ENTRY(OccupancyMaxActiveBlocksPerMultiprocessor, 6050),
    GJ__ENTRY(OccupancyMaxPotentialBlockSize, 6050),
    GJ__ENTRY(FuncGetAttribute, 2020),
    GJ__ENTRY(FuncSetAttribute, 9000),
    GJ__ENTRY(DeviceCanAccessPeer, 4000),
    GJ__ENTRY(CtxEnablePeerAccess, 4000),
    GJ__ENTRY(MemcpyPeerAsync, 4000),
    GJ__ENTRY(MemcpyDtoDAsync, 3020),
    GJ__ENTRY(MemcpyAsync, 4000),
    GJ__ENTRY(MemcpyHtoDAsync, 3020),
    GJ__ENTRY(MemcpyDtoHAsync, 3020),
    GJ__ENTRY(StreamCreate, 2000),
    GJ__ENTRY(StreamDestroy, 4000),
    GJ__ENTRY(StreamWaitEvent, 3020),
    GJ__ENTRY(StreamIsCapturing, 10000),
    GJ__ENTRY(StreamCreateWithPriority, 5050),
    GJ__ENTRY(CtxGetStreamPriorityRange, 5050),
    GJ__OPTIONAL_ENTRY(FuncGetParamInfo, 12040),
};
#undef GJ__ENTRY
#undef GJ__OPTIONAL_ENTRY

static int disabled_by_env(const char *value) {
    return value && (strcmp(value, "off") == 0 || strcmp(value, "0") == 0 || strcmp(value, "none") == 0);
}

/* dlopen()s the driver library; on failure records what was tried. */
static gj_status open_library(const gj__diag *d, void **handle) {
    const char *env = getenv("GRIDJIT_DRIVER");
    if (disabled_by_env(env)) {
        return gj__fail(d, GJ_ERROR_NO_DRIVER, "CUDA driver disabled by GRIDJIT_DRIVER=%s", env);
    }
    const char *defaults[] = {"libcuda.so.1", "libcuda.so"};
    const char *only[] = {env};
    const int from_env = env && env[0];
    const char **names = from_env ? only : defaults;
    const size_t n_names = from_env ? 1 : 2;
    char tried[1536] = "";
    size_t used = 0;
    for (size_t i = 0; i < n_names; ++i) {
        *handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (*handle) {
            return GJ_OK;
        }
        const char *why = dlerror();
        int written = snprintf(tried + used, sizeof tried - used, "%s%s (%s)", i ? "; " : "", names[i],
                               why ? why : "not found");
        used = written > 0 && (size_t)written < sizeof tried - used ? used + (size_t)written : sizeof tried - 1;
    }
    return gj__fail(d, GJ_ERROR_NO_DRIVER, "CUDA driver not found: tried %s%s", tried,
                    from_env ? " (set by GRIDJIT_DRIVER)" : "");
}

static gj_status resolve_all(const gj__diag *d, gj__driver *drv) {
    PFN_cuGetProcAddress_v12000 get_proc = (PFN_cuGetProcAddress_v12000)dlsym(drv->handle, "cuGetProcAddress_v2");
    if (!get_proc) {
        return gj__fail(d, GJ_ERROR_NO_DRIVER,
                        "CUDA driver too old: libcuda has no cuGetProcAddress_v2 (gridjit needs a CUDA 12.0 or newer driver)");
    }
    for (size_t i = 0; i < sizeof entry_points / sizeof entry_points[0]; ++i) {
        const entry_point *e = &entry_points[i];
        void *fn = NULL;
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        CUresult r = get_proc(e->name, &fn, e->version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found);
        if (r == CUDA_ERROR_STUB_LIBRARY) {
            return gj__fail(d, GJ_ERROR_NO_DRIVER,
                            "CUDA driver not usable: cuGetProcAddress failed: CUDA_ERROR_STUB_LIBRARY (the library "
                            "loaded is the CUDA toolkit's stub, not a driver)");
        }
        if ((r != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS || !fn) && e->optional) {
            continue; /* stays NULL: callers check */
        }
        if (r != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS || !fn) {
            return gj__fail(d, GJ_ERROR_NO_DRIVER,
                            "CUDA driver too old or incomplete: cuGetProcAddress(\"%s\", version %d) failed "
                            "(result %d, %s); gridjit needs a CUDA 12.0 or newer driver",
                            e->name, e->version, (int)r,
                            found == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? "version not sufficient" : "symbol not found");
        }
        memcpy((char *)drv + e->offset, &fn, sizeof fn);
    }
    return GJ_OK;
}

/* Names a CUresult even when the driver cannot (or is not loaded far enough to). */
static void describe(const gj__driver *drv, CUresult result, const char **name, const char **text) {
    *name = NULL;
    *text = NULL;
    if (drv && drv->GetErrorName) {
        drv->GetErrorName(result, name);
    }
    if (drv && drv->GetErrorString) {
        drv->GetErrorString(result, text);
    }
    if (!*name) {
        *name = "CUDA_ERROR_UNKNOWN_CODE";
    }
    if (!*text) {
        *text = "no description";
    }
}

gj_status gj__cuda_check(const gj__diag *d, const gj__driver *drv, CUresult result, const char *call) {
    if (result == CUDA_SUCCESS) {
        return GJ_OK;
    }
    const char *name, *text;
    describe(drv, result, &name, &text);
    return gj__fail(d, GJ_ERROR_CUDA, "%s failed: %s (%s)", call, name, text);
}

gj_status gj__cuda_checkf(const gj__diag *d, const gj__driver *drv, CUresult result, const char *fmt, ...) {
    if (result == CUDA_SUCCESS) {
        return GJ_OK;
    }
    char call[512];
    va_list args;
    va_start(args, fmt);
    vsnprintf(call, sizeof call, fmt, args);
    va_end(args);
    return gj__cuda_check(d, drv, result, call);
}

/* cuInit: no device and a stub or mismatched driver are "absent", not CUDA errors. */
static gj_status init_driver(const gj__diag *d, gj__driver *drv) {
    CUresult r = drv->Init(0);
    const char *name, *text;
    describe(drv, r, &name, &text);
    switch (r) {
    case CUDA_SUCCESS:
        return GJ_OK;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
        return gj__fail(d, GJ_ERROR_NO_DEVICE, "no CUDA device: cuInit failed: %s (%s); driver version %d", name,
                        text, drv->version);
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
        return gj__fail(d, GJ_ERROR_NO_DRIVER, "CUDA driver not usable: cuInit failed: %s (%s)", name, text);
    default:
        return gj__fail(d, GJ_ERROR_CUDA, "cuInit failed: %s (%s)", name, text);
    }
}

static gj_status count_devices(const gj__diag *d, gj__driver *drv) {
    gj_status status = gj__cuda_check(d, drv, drv->DeviceGetCount(&drv->device_count), "cuDeviceGetCount");
    if (status == GJ_OK && drv->device_count <= 0) {
        status = gj__fail(d, GJ_ERROR_NO_DEVICE, "no CUDA device: the driver (version %d) reports 0 devices",
                          drv->version);
    }
    if (status == GJ_OK) {
        drv->primaries = calloc((size_t)drv->device_count, sizeof *drv->primaries);
        if (!drv->primaries) {
            status = gj__fail(d, GJ_ERROR_OUT_OF_MEMORY, "out of memory loading the CUDA driver");
        }
    }
    return status;
}

static gj_status load(const gj__diag *d, gj__driver *drv) {
    gj_status status = open_library(d, &drv->handle);
    if (status == GJ_OK) {
        status = resolve_all(d, drv);
    }
    if (status == GJ_OK) {
        status = gj__cuda_check(d, drv, drv->DriverGetVersion(&drv->version), "cuDriverGetVersion");
    }
    if (status == GJ_OK) {
        status = init_driver(d, drv);
    }
    if (status == GJ_OK) {
        status = count_devices(d, drv);
    }
    return status;
}

void gj__driver_loader_init(gj__driver_loader *l) {
    pthread_mutex_init(&l->lock, NULL);
    l->drv = NULL;
}

static void release_driver(gj__driver *driver);

void gj__driver_loader_release(gj__driver_loader *l) {
    release_driver(l->drv);
    l->drv = NULL;
    pthread_mutex_destroy(&l->lock);
}

gj__driver *gj__driver_loaded(gj__driver_loader *l) {
    pthread_mutex_lock(&l->lock);
    gj__driver *drv = l->drv;
    pthread_mutex_unlock(&l->lock);
    return drv;
}

static gj_status load_locked(gj__driver_loader *l, const gj__diag *d) {
    if (l->drv) {
        return GJ_OK;
    }
    gj__driver *drv = calloc(1, sizeof *drv);
    if (!drv) {
        return gj__fail(d, GJ_ERROR_OUT_OF_MEMORY, "out of memory loading the CUDA driver");
    }
    pthread_mutex_init(&drv->primary_lock, NULL);
    gj_status status = load(d, drv);
    if (status != GJ_OK) {
        release_driver(drv);
        return status;
    }
    l->drv = drv;
    return GJ_OK;
}

gj_status gj__driver_get(gj__driver_loader *l, const gj__diag *d, gj__driver **out) {
    pthread_mutex_lock(&l->lock);
    gj_status status = load_locked(l, d);
    *out = status == GJ_OK ? l->drv : NULL;
    pthread_mutex_unlock(&l->lock);
    return status;
}

gj_status gj__driver_use_device(const gj__diag *d, gj__driver *drv, int ordinal, CUcontext *out) {
    *out = NULL;
    if (ordinal < 0 || ordinal >= drv->device_count) {
        return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT, "device %d does not exist: this host has %d (0 to %d)", ordinal,
                        drv->device_count, drv->device_count - 1);
    }
    gj_status status = GJ_OK;
    pthread_mutex_lock(&drv->primary_lock);
    if (!drv->primaries[ordinal]) {
        CUdevice device;
        status = gj__cuda_check(d, drv, drv->DeviceGet(&device, ordinal), "cuDeviceGet");
        if (status == GJ_OK) {
            status = gj__cuda_check(d, drv, drv->DevicePrimaryCtxRetain(&drv->primaries[ordinal], device),
                                    "cuDevicePrimaryCtxRetain");
        }
        if (status != GJ_OK) {
            drv->primaries[ordinal] = NULL;
        }
    }
    CUcontext primary = drv->primaries[ordinal];
    pthread_mutex_unlock(&drv->primary_lock);
    if (status == GJ_OK) {
        status = gj__cuda_check(d, drv, drv->CtxSetCurrent(primary), "cuCtxSetCurrent");
    }
    if (status == GJ_OK) {
        *out = primary;
    }
    return status;
}

gj_status gj__driver_current_context(const gj__diag *d, gj__driver *drv, CUcontext *out) {
    *out = NULL;
    gj_status status = gj__cuda_check(d, drv, drv->CtxGetCurrent(out), "cuCtxGetCurrent");
    if (status != GJ_OK || *out) {
        return status;
    }
    return gj__driver_use_device(d, drv, 0, out);
}

gj_status gj__driver_current_device(const gj__diag *d, gj__driver *drv, CUdevice *device, int *cc_major, int *cc_minor) {
    CUcontext current;
    gj_status status = gj__driver_current_context(d, drv, &current);
    if (status == GJ_OK) {
        status = gj__cuda_check(d, drv, drv->CtxGetDevice(device), "cuCtxGetDevice");
    }
    if (status == GJ_OK) {
        status = gj__cuda_check(d, drv,
                                drv->DeviceGetAttribute(cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, *device),
                                "cuDeviceGetAttribute");
    }
    if (status == GJ_OK) {
        status = gj__cuda_check(d, drv,
                                drv->DeviceGetAttribute(cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, *device),
                                "cuDeviceGetAttribute");
    }
    return status;
}

/*
 * The library handle is deliberately never dlclose()d: after cuInit the driver runs
 * threads of its own and keeps process-wide state that other users of libcuda in the
 * process share; unloading it under them is unsafe. dlopen() reference counts, so
 * keeping one reference per context costs nothing.
 */
static void release_driver(gj__driver *driver) {
    if (!driver) {
        return;
    }
    CUcontext current = NULL;
    if (driver->primaries && driver->CtxGetCurrent(&current) != CUDA_SUCCESS) {
        current = NULL;
    }
    for (int i = 0; driver->primaries && i < driver->device_count; ++i) {
        if (!driver->primaries[i]) {
            continue;
        }
        if (current == driver->primaries[i]) {
            driver->CtxSetCurrent(NULL); /* do not leave this thread pointing at a context we let go */
        }
        CUdevice device;
        if (driver->DeviceGet(&device, i) == CUDA_SUCCESS) {
            driver->DevicePrimaryCtxRelease(device);
        }
    }
    free(driver->primaries);
    pthread_mutex_destroy(&driver->primary_lock);
    free(driver);
}
