/*
 * The CUDA driver API, loaded with dlopen() so that gridjit never links libcuda:
 * a machine without a driver can still generate and compile.
 *
 * Loading: GRIDJIT_DRIVER=off (or 0, none) behaves as if there were no driver (for
 * tests); GRIDJIT_DRIVER=PATH loads that file only; otherwise "libcuda.so.1", then
 * "libcuda.so". cuGetProcAddress_v2 is the only symbol taken with dlsym(); every other
 * entry point comes through it, with the CUDA version whose ABI gridjit was written
 * against (so a newer driver keeps giving us the signature we call) and the legacy
 * default stream. The driver must be CUDA 12.0 or newer (cuLibrary*).
 *
 * One gj__driver_loader per gj_context; the driver is loaded on first use and kept until
 * the context goes. Safe to use from several threads.
 */
#ifndef GJ_LOADER_DRIVER_H
#define GJ_LOADER_DRIVER_H

#include "base/diag.h"

#include <cudaTypedefs.h>
#include <pthread.h>

typedef struct gj__driver {
    void *handle;
    int version; /* cuDriverGetVersion, e.g. 13000 */
    int device_count;
    /* Primary contexts this gj_context retained (device 0's when a call found no current
     * context; any device's through gj_runtime_set_device), one per ordinal, released
     * with the gj_context. */
    pthread_mutex_t primary_lock;
    CUcontext *primaries; /* device_count entries, NULL where not retained */

    PFN_cuGetErrorName_v6000 GetErrorName;
    PFN_cuGetErrorString_v6000 GetErrorString;
    PFN_cuInit_v2000 Init;
    PFN_cuDriverGetVersion_v2020 DriverGetVersion;
    PFN_cuDeviceGet_v2000 DeviceGet;
    PFN_cuDeviceGetCount_v2000 DeviceGetCount;
    PFN_cuDeviceGetName_v2000 DeviceGetName;
    PFN_cuDeviceGetAttribute_v2000 DeviceGetAttribute;
    PFN_cuDevicePrimaryCtxRetain_v7000 DevicePrimaryCtxRetain;
    PFN_cuDevicePrimaryCtxRelease_v11000 DevicePrimaryCtxRelease;
    PFN_cuCtxGetCurrent_v4000 CtxGetCurrent;
    PFN_cuCtxSetCurrent_v4000 CtxSetCurrent;
    PFN_cuCtxGetDevice_v2000 CtxGetDevice;
    PFN_cuCtxGetId_v12000 CtxGetId;
    PFN_cuCtxSynchronize_v2000 CtxSynchronize;
    PFN_cuLibraryLoadData_v12000 LibraryLoadData;
    PFN_cuLibraryUnload_v12000 LibraryUnload;
    PFN_cuLibraryGetKernel_v12000 LibraryGetKernel;
    PFN_cuKernelGetFunction_v12000 KernelGetFunction;
    PFN_cuLaunchKernel_v4000 LaunchKernel;
    PFN_cuMemAlloc_v3020 MemAlloc;
    PFN_cuMemFree_v3020 MemFree;
    PFN_cuMemcpyHtoD_v3020 MemcpyHtoD;
    PFN_cuMemcpyDtoH_v3020 MemcpyDtoH;
    PFN_cuMemsetD8Async_v3020 MemsetD8Async;
    PFN_cuMemsetD32Async_v3020 MemsetD32Async;
    PFN_cuStreamSynchronize_v2000 StreamSynchronize;
    PFN_cuStreamGetId_v12000 StreamGetId;
    PFN_cuEventCreate_v2000 EventCreate;
    PFN_cuEventRecord_v2000 EventRecord;
    PFN_cuEventSynchronize_v2000 EventSynchronize;
    PFN_cuEventElapsedTime_v2000 EventElapsedTime;
    PFN_cuEventDestroy_v4000 EventDestroy;
    PFN_cuEventQuery_v2000 EventQuery;
    PFN_cuStreamGetCtx_v9020 StreamGetCtx;
    PFN_cuCtxPushCurrent_v4000 CtxPushCurrent;
    PFN_cuCtxPopCurrent_v4000 CtxPopCurrent;
    PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050 OccupancyMaxActiveBlocksPerMultiprocessor;
    PFN_cuOccupancyMaxPotentialBlockSize_v6050 OccupancyMaxPotentialBlockSize;
    PFN_cuFuncGetAttribute_v2020 FuncGetAttribute;
    PFN_cuFuncSetAttribute_v9000 FuncSetAttribute;
    PFN_cuDeviceCanAccessPeer_v4000 DeviceCanAccessPeer;
    PFN_cuCtxEnablePeerAccess_v4000 CtxEnablePeerAccess;
    PFN_cuMemcpyPeerAsync_v4000 MemcpyPeerAsync;
    PFN_cuMemcpyDtoDAsync_v3020 MemcpyDtoDAsync;
    PFN_cuMemcpyAsync_v4000 MemcpyAsync;
    PFN_cuMemcpyHtoDAsync_v3020 MemcpyHtoDAsync;
    PFN_cuMemcpyDtoHAsync_v3020 MemcpyDtoHAsync;
    PFN_cuStreamCreate_v2000 StreamCreate;
    PFN_cuStreamDestroy_v4000 StreamDestroy;
    PFN_cuStreamWaitEvent_v3020 StreamWaitEvent;
    PFN_cuStreamIsCapturing_v10000 StreamIsCapturing;
    PFN_cuStreamCreateWithPriority_v5050 StreamCreateWithPriority;
    PFN_cuCtxGetStreamPriorityRange_v5050 CtxGetStreamPriorityRange;
    /* Optional (a CUDA 12.4 driver or newer); NULL otherwise. */
    PFN_cuFuncGetParamInfo_v12040 FuncGetParamInfo;
} gj__driver;

typedef struct gj__driver_loader {
    pthread_mutex_t lock;
    gj__driver *drv; /* NULL until loaded */
} gj__driver_loader;

void gj__driver_loader_init(gj__driver_loader *l);
void gj__driver_loader_release(gj__driver_loader *l);

/*
 * The context's driver, loaded and initialised (cuInit) on first use.
 * GJ_ERROR_NO_DRIVER: no library, a stub library, or one too old, with a message
 * saying what was tried. GJ_ERROR_NO_DEVICE: a driver, but no device.
 * A failed load is not remembered: the next call tries again.
 */
gj_status gj__driver_get(gj__driver_loader *l, const gj__diag *d, gj__driver **out);
/* The driver if it has been loaded already, else NULL (for release paths). */
gj__driver *gj__driver_loaded(gj__driver_loader *l);

/* Dynamic shared memory a launch may take without opting in to more (cuFuncSetAttribute). */
#define GJ__DEFAULT_SHARED_BYTES (48u * 1024u)

/* GJ_OK for CUDA_SUCCESS; otherwise GJ_ERROR_CUDA with
 * "CALL failed: CUDA_ERROR_NAME (description)" recorded on ctx. */
gj_status gj__cuda_check(const gj__diag *d, const gj__driver *drv, CUresult result, const char *call);
/* The same with the call's description as a format, formatted only on failure: what the
 * launch path uses, so that a successful launch formats nothing. */
gj_status gj__cuda_checkf(const gj__diag *d, const gj__driver *drv, CUresult result, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * The context rule of every launch: the calling thread's current CUDA context; when
 * there is none, device 0's primary context, retained once per gj_context (released
 * when the gj_context is destroyed) and made current on this thread. Thread-safe.
 */
gj_status gj__driver_current_context(const gj__diag *d, gj__driver *drv, CUcontext *out);

/* Makes device ordinal's primary context current on the calling thread, retaining it
 * once per gj_context (as cudaSetDevice does for the CUDA runtime). Thread-safe. */
gj_status gj__driver_use_device(const gj__diag *d, gj__driver *drv, int ordinal, CUcontext *out);

/* The device of the current context (made current as above) and its compute capability. */
gj_status gj__driver_current_device(const gj__diag *d, gj__driver *drv, CUdevice *device, int *cc_major, int *cc_minor);

#endif
