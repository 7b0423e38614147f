/*
 * A stand-in for libcuda that gridjit loads with GRIDJIT_DRIVER=PATH, for tests of the
 * runtime's launch path on machines without a GPU (tests/test_launch_path.c,
 * tests/test_threads.c). It runs nothing: it keeps just enough state to answer like a
 * driver (devices of compute capability 9.0, primary and extra contexts with the
 * current-context stack of each thread, streams, libraries whose kernels are instantiated
 * per context) and counts every call, so that a test can say which driver calls a launch
 * makes. A function handle is valid only in the context (and the context lifetime, see
 * gjfake_context_renew) it was made in; a launch with another one fails as the driver's
 * does, with CUDA_ERROR_INVALID_HANDLE.
 *
 * Exported: cuGetProcAddress_v2 (the one symbol gridjit takes with dlsym) and the gjfake_*
 * controls below. Memory from cuMemAlloc is host memory (never written by the fake);
 * copies and memsets do nothing. Everything lives in static pools: nothing to free.
 */
#include <cuda.h>
#include <cudaTypedefs.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_API __attribute__((visibility("default")))

static void trace(const char *format, ...); /* the stream-order trace, gjfake_trace_start */

/* ------------------------------------------------------------------ counters */

#define FAKE_ENTRIES(X)                                                                                   \
    X(GetErrorName) X(GetErrorString) X(Init) X(DriverGetVersion) X(DeviceGet) X(DeviceGetCount)          \
    X(DeviceGetName) X(DeviceGetAttribute) X(DevicePrimaryCtxRetain) X(DevicePrimaryCtxRelease)           \
    X(CtxGetCurrent) X(CtxSetCurrent) X(CtxGetDevice) X(CtxGetId) X(CtxSynchronize) X(LibraryLoadData)    \
    X(LibraryUnload) X(LibraryGetKernel) X(KernelGetFunction) X(LaunchKernel) X(MemAlloc) X(MemFree)      \
    X(MemcpyHtoD) X(MemcpyDtoH) X(MemsetD8Async) X(MemsetD32Async) X(StreamSynchronize) X(EventCreate)     \
    X(EventRecord) X(EventSynchronize) X(EventElapsedTime) X(EventDestroy) X(EventQuery) X(StreamGetCtx)  \
    X(CtxPushCurrent) X(CtxPopCurrent) X(OccupancyMaxActiveBlocksPerMultiprocessor)                        \
    X(OccupancyMaxPotentialBlockSize) X(FuncGetAttribute) X(FuncSetAttribute) X(DeviceCanAccessPeer)      \
    X(CtxEnablePeerAccess) X(MemcpyPeerAsync) X(MemcpyDtoDAsync) X(MemcpyAsync) X(MemcpyHtoDAsync)        \
    X(MemcpyDtoHAsync) X(StreamCreate) X(StreamDestroy) X(StreamWaitEvent) X(FuncGetParamInfo)   \
    X(StreamIsCapturing) X(StreamCreateWithPriority) X(CtxGetStreamPriorityRange) X(StreamGetId)

enum {
#define FAKE_ID(name) ID_##name,
    FAKE_ENTRIES(FAKE_ID)
#undef FAKE_ID
    ID_COUNT
};

static const char *const entry_names[ID_COUNT] = {
#define FAKE_NAME(name) "cu" #name,
    FAKE_ENTRIES(FAKE_NAME)
#undef FAKE_NAME
};

static atomic_ulong counts[ID_COUNT];

#define COUNT(name) atomic_fetch_add(&counts[ID_##name], 1ul)

/* How often the entry point "cuNAME" was called since the last reset; -1: no such entry. */
FAKE_API long gjfake_count(const char *name) {
    for (int i = 0; i < ID_COUNT; ++i) {
        if (strcmp(entry_names[i], name) == 0) {
            return (long)atomic_load(&counts[i]);
        }
    }
    return -1;
}

/* The number of calls of every entry point together. */
FAKE_API long gjfake_count_all(void) {
    long total = 0;
    for (int i = 0; i < ID_COUNT; ++i) {
        total += (long)atomic_load(&counts[i]);
    }
    return total;
}

FAKE_API void gjfake_reset_counts(void) {
    for (int i = 0; i < ID_COUNT; ++i) {
        atomic_store(&counts[i], 0ul);
    }
}

/* -------------------------------------------------------------------- state */

#define N_DEVICES 2
#define MAX_CONTEXTS 16
#define MAX_STREAMS 64
#define MAX_EVENTS 256
#define MAX_LIBRARIES 256
#define MAX_KERNELS 4096
#define MAX_FUNCTIONS 16384
#define STACK_DEPTH 16

struct CUctx_st {
    int device;
    atomic_ullong id;
};
struct CUstream_st {
    CUcontext context;
};
struct CUlib_st {
    int loaded;
};
struct CUkern_st {
    CUlibrary library;
    char name[256];
};
struct CUfunc_st {
    CUkernel kernel;
    CUcontext context;
    unsigned long long context_id;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUctx_st contexts[MAX_CONTEXTS]; /* [0, N_DEVICES): the primary contexts */
static int n_contexts = N_DEVICES;
static atomic_ullong next_context_id = 1;
static struct CUstream_st streams[MAX_STREAMS];
static int n_streams;
static struct CUlib_st libraries[MAX_LIBRARIES];
static int n_libraries;
static struct CUkern_st kernels[MAX_KERNELS];
static int n_kernels;
static struct CUfunc_st functions[MAX_FUNCTIONS];
static int n_functions;

static _Thread_local CUcontext stack[STACK_DEPTH];
static _Thread_local int depth;

static CUcontext current(void) {
    return depth ? stack[depth - 1] : NULL;
}

static unsigned long long new_id(void) {
    return atomic_fetch_add(&next_context_id, 1ull);
}

/* A context of its own on device (0 or 1), with a fresh id. */
FAKE_API CUcontext gjfake_context_create(int device) {
    pthread_mutex_lock(&lock);
    CUcontext c = NULL;
    if (n_contexts < MAX_CONTEXTS && device >= 0 && device < N_DEVICES) {
        c = &contexts[n_contexts++];
        c->device = device;
        atomic_store(&c->id, new_id());
    }
    pthread_mutex_unlock(&lock);
    return c;
}

/* As if c were destroyed and another context made at the same address: a new id, and the
 * functions made in the old one no longer launch. */
FAKE_API void gjfake_context_renew(CUcontext c) {
    atomic_store(&c->id, new_id());
}

/* A stream of context c. */
FAKE_API CUstream gjfake_stream_create(CUcontext c) {
    pthread_mutex_lock(&lock);
    CUstream s = n_streams < MAX_STREAMS ? &streams[n_streams++] : NULL;
    if (s) {
        s->context = c;
    }
    pthread_mutex_unlock(&lock);
    return s;
}

/* The primary context of device (what cuDevicePrimaryCtxRetain gives). */
FAKE_API CUcontext gjfake_primary(int device) {
    return &contexts[device];
}

/* The calling thread's current context (cuCtxGetCurrent), without counting. */
FAKE_API CUcontext gjfake_current(void) {
    return current();
}

/* Makes c current on the calling thread (cuCtxSetCurrent), without counting. */
FAKE_API void gjfake_set_current(CUcontext c) {
    if (depth == 0) {
        depth = 1;
    }
    stack[depth - 1] = c;
}

static void init_state(void) {
    for (int d = 0; d < N_DEVICES; ++d) {
        contexts[d].device = d;
        atomic_store(&contexts[d].id, new_id());
    }
}
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* ------------------------------------------------------------ entry points */

static CUresult fake_GetErrorName(CUresult error, const char **out) {
    COUNT(GetErrorName);
    *out = error == CUDA_ERROR_INVALID_HANDLE ? "CUDA_ERROR_INVALID_HANDLE"
           : error == CUDA_ERROR_INVALID_CONTEXT ? "CUDA_ERROR_INVALID_CONTEXT"
                                                 : "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
}

static CUresult fake_GetErrorString(CUresult error, const char **out) {
    COUNT(GetErrorString);
    (void)error;
    *out = "reported by the fake driver";
    return CUDA_SUCCESS;
}

static CUresult fake_Init(unsigned flags) {
    COUNT(Init);
    (void)flags;
    pthread_once(&once, init_state);
    return CUDA_SUCCESS;
}

static CUresult fake_DriverGetVersion(int *version) {
    COUNT(DriverGetVersion);
    *version = 13000;
    return CUDA_SUCCESS;
}

static CUresult fake_DeviceGet(CUdevice *device, int ordinal) {
    COUNT(DeviceGet);
    if (ordinal < 0 || ordinal >= N_DEVICES) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *device = ordinal;
    return CUDA_SUCCESS;
}

static CUresult fake_DeviceGetCount(int *count) {
    COUNT(DeviceGetCount);
    *count = N_DEVICES;
    return CUDA_SUCCESS;
}

static CUresult fake_DeviceGetName(char *name, int size, CUdevice device) {
    COUNT(DeviceGetName);
    (void)device;
    strncpy(name, "gridjit fake device", (size_t)size);
    name[size - 1] = '\0';
    return CUDA_SUCCESS;
}

/* Each device's compute capability (10 * major + minor): 9.0 unless a test sets another. */
static atomic_int capability[N_DEVICES] = {90, 90};

FAKE_API void gjfake_set_capability(int device, int major, int minor) {
    if (device >= 0 && device < N_DEVICES) {
        atomic_store(&capability[device], 10 * major + minor);
    }
}

/* What CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE answers: 0 (a device that does not say) until set. */
static atomic_int l2_bytes;

FAKE_API void gjfake_set_l2_bytes(int bytes) { atomic_store(&l2_bytes, bytes); }

static CUresult fake_DeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice device) {
    COUNT(DeviceGetAttribute);
    const int cc = device >= 0 && device < N_DEVICES ? atomic_load(&capability[device]) : 90;
    switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = cc / 10; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = cc % 10; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *value = 228 * 1024; break; /* sm_90's */
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *value = atomic_load(&l2_bytes); break;
    default: *value = 0; break;
    }
    return CUDA_SUCCESS;
}

static CUresult fake_DevicePrimaryCtxRetain(CUcontext *out, CUdevice device) {
    COUNT(DevicePrimaryCtxRetain);
    *out = &contexts[device];
    return CUDA_SUCCESS;
}

static CUresult fake_DevicePrimaryCtxRelease(CUdevice device) {
    COUNT(DevicePrimaryCtxRelease);
    (void)device;
    return CUDA_SUCCESS;
}

static CUresult fake_CtxGetCurrent(CUcontext *out) {
    COUNT(CtxGetCurrent);
    *out = current();
    return CUDA_SUCCESS;
}

static CUresult fake_CtxSetCurrent(CUcontext c) {
    COUNT(CtxSetCurrent);
    if (!c) {
        if (depth) {
            --depth;
        }
        return CUDA_SUCCESS;
    }
    gjfake_set_current(c);
    return CUDA_SUCCESS;
}

static CUresult fake_CtxGetDevice(CUdevice *device) {
    COUNT(CtxGetDevice);
    if (!current()) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    *device = current()->device;
    return CUDA_SUCCESS;
}

static CUresult fake_CtxGetId(CUcontext c, unsigned long long *id) {
    COUNT(CtxGetId);
    c = c ? c : current();
    if (!c) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    *id = atomic_load(&c->id);
    return CUDA_SUCCESS;
}

static CUresult fake_CtxSynchronize(void) {
    COUNT(CtxSynchronize);
    return CUDA_SUCCESS;
}

static CUresult fake_LibraryLoadData(CUlibrary *out, const void *code, CUjit_option *jit_options, void **jit_values,
                                     unsigned n_jit, CUlibraryOption *options, void **values, unsigned n_options) {
    COUNT(LibraryLoadData);
    (void)code, (void)jit_options, (void)jit_values, (void)n_jit, (void)options, (void)values, (void)n_options;
    pthread_mutex_lock(&lock);
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (n_libraries < MAX_LIBRARIES) {
        *out = &libraries[n_libraries++];
        (*out)->loaded = 1;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

static CUresult fake_LibraryUnload(CUlibrary library) {
    COUNT(LibraryUnload);
    library->loaded = 0;
    return CUDA_SUCCESS;
}

static CUresult fake_LibraryGetKernel(CUkernel *out, CUlibrary library, const char *name) {
    COUNT(LibraryGetKernel);
    pthread_mutex_lock(&lock);
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (!library->loaded || strlen(name) >= sizeof kernels[0].name) {
        r = CUDA_ERROR_NOT_FOUND;
    } else if (n_kernels < MAX_KERNELS) {
        CUkernel k = &kernels[n_kernels++];
        k->library = library;
        strcpy(k->name, name);
        *out = k;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

static CUresult fake_KernelGetFunction(CUfunction *out, CUkernel kernel) {
    COUNT(KernelGetFunction);
    CUcontext c = current();
    if (!c) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    const unsigned long long id = atomic_load(&c->id);
    pthread_mutex_lock(&lock);
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    for (int i = 0; i < n_functions; ++i) {
        if (functions[i].kernel == kernel && functions[i].context == c && functions[i].context_id == id) {
            *out = &functions[i];
            r = CUDA_SUCCESS;
            break;
        }
    }
    if (r != CUDA_SUCCESS && n_functions < MAX_FUNCTIONS) {
        CUfunction f = &functions[n_functions++];
        f->kernel = kernel;
        f->context = c;
        f->context_id = id;
        *out = f;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

static atomic_int next_launch_error;
static atomic_uint last_grid_x, last_grid_y; /* the x and y dimensions of the last successful launch's grid */
static atomic_uint last_block_x, last_shared; /* its block's x dimension, its dynamic shared memory */

/* The next cuLaunchKernel (of any thread) fails with error. */
FAKE_API void gjfake_fail_next_launch(CUresult error) {
    atomic_store(&next_launch_error, (int)error);
}

/* Of each successful launch of a kernel whose name ends in captured_suffix: its grid's x
 * dimension, and its argument `captured_index` (-1: none), the argument's first 4 bytes: the
 * driver cannot know how many arguments a kernel takes, so the test names a kernel and one of
 * its arguments. */
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;
static int captured_index = -1;
static char captured_suffix[64];
static size_t captured_size = 4; /* bytes of the argument kept: 4, or 8 for a pointer */
static uint64_t captured_word;
static unsigned captured_grid;

static void capture_bytes(const char *kernel_suffix, int index, size_t size) {
    pthread_mutex_lock(&capture_lock);
    captured_suffix[0] = '\0';
    captured_index = -1;
    if (kernel_suffix && strlen(kernel_suffix) < sizeof captured_suffix) {
        strcpy(captured_suffix, kernel_suffix);
        captured_index = index;
    }
    captured_size = size;
    captured_word = 0u;
    captured_grid = 0u;
    pthread_mutex_unlock(&capture_lock);
}

FAKE_API void gjfake_capture_argument(const char *kernel_suffix, int index) {
    capture_bytes(kernel_suffix, index, 4);
}

/* The same for a pointer argument: its 8 bytes (gjfake_captured_pointer). */
FAKE_API void gjfake_capture_pointer(const char *kernel_suffix, int index) {
    capture_bytes(kernel_suffix, index, 8);
}

static void capture(const char *kernel, void **params, unsigned grid_x) {
    pthread_mutex_lock(&capture_lock);
    const size_t n = strlen(kernel), m = strlen(captured_suffix);
    if (m && n >= m && strcmp(kernel + n - m, captured_suffix) == 0) {
        captured_grid = grid_x;
        if (captured_index >= 0 && params) {
            captured_word = 0u;
            memcpy(&captured_word, params[captured_index], captured_size); /* little-endian: the low bytes */
        }
    }
    pthread_mutex_unlock(&capture_lock);
}

/* The grid's x dimension of the last such launch (0 until one). */
FAKE_API unsigned gjfake_captured_grid_x(void) {
    pthread_mutex_lock(&capture_lock);
    const unsigned grid = captured_grid;
    pthread_mutex_unlock(&capture_lock);
    return grid;
}

/* The 4 bytes of the captured argument as a float (0 until a launch captured one). */
FAKE_API float gjfake_captured_float(void) {
    pthread_mutex_lock(&capture_lock);
    const uint32_t word = (uint32_t)captured_word;
    pthread_mutex_unlock(&capture_lock);
    float value;
    memcpy(&value, &word, sizeof value);
    return value;
}

/* The captured pointer argument (gjfake_capture_pointer; 0 until a launch captured one). */
FAKE_API uint64_t gjfake_captured_pointer(void) {
    pthread_mutex_lock(&capture_lock);
    const uint64_t word = captured_word;
    pthread_mutex_unlock(&capture_lock);
    return word;
}

static CUresult fake_LaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                  unsigned bz, unsigned shared, CUstream stream, void **params, void **extra) {
    COUNT(LaunchKernel);
    (void)gz, (void)by, (void)bz, (void)params, (void)extra;
    const int injected = atomic_exchange(&next_launch_error, 0);
    if (injected) {
        return (CUresult)injected;
    }
    CUcontext c = current();
    if (!c || (stream && stream->context != c)) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (!f || f->context != c || f->context_id != atomic_load(&c->id) || !f->kernel->library->loaded) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    atomic_store(&last_grid_x, gx);
    atomic_store(&last_grid_y, gy);
    atomic_store(&last_block_x, bx);
    atomic_store(&last_shared, shared);
    /* A mangled name (_Z<length><name><parameters>) captured and traced by its name alone. */
    const char *name = f->kernel->name;
    char plain[256];
    char *end = NULL;
    const unsigned long length = strncmp(name, "_Z", 2) == 0 ? strtoul(name + 2, &end, 10) : 0;
    if (length && length < sizeof plain && strlen(end) >= length) {
        memcpy(plain, end, length);
        plain[length] = '\0';
        name = plain;
    }
    capture(name, params, gx);
    trace("launch(%s,%S)", name, stream);
    return CUDA_SUCCESS;
}

/* The value of the last cuFuncSetAttribute(PREFERRED_SHARED_MEMORY_CARVEOUT) (of any thread and
 * function), and the function it was set on; GJFAKE_NO_CARVEOUT until the first or after
 * gjfake_reset_carveout. */
#define GJFAKE_NO_CARVEOUT (-1000)
static _Atomic int last_carveout = GJFAKE_NO_CARVEOUT;

/* The dynamic shared memory a block may opt into on a device of compute capability cc (as
 * the CUDA programming guide's table gives it). */
static int max_block_shared(int cc) {
    if (cc == 80 || cc == 87) {
        return 163 * 1024;
    }
    if (cc >= 90 && cc < 120) {
        return 227 * 1024;
    }
    return 99 * 1024; /* 8.6, 8.9, 12.x */
}

static CUresult fake_FuncSetAttribute(CUfunction f, CUfunction_attribute attribute, int value) {
    COUNT(FuncSetAttribute);
    if (attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES && f) {
        const int device = f->context->device;
        const int cc = device >= 0 && device < N_DEVICES ? atomic_load(&capability[device]) : 90;
        if (value < 0 || value > max_block_shared(cc)) {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    if (attribute == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) {
        if (value < -1 || value > 100) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        atomic_store(&last_carveout, value);
    }
    return CUDA_SUCCESS;
}

FAKE_API int gjfake_last_carveout(void) {
    return atomic_load(&last_carveout);
}

FAKE_API void gjfake_reset_carveout(void) {
    atomic_store(&last_carveout, GJFAKE_NO_CARVEOUT);
}

/* The grid's x dimension of the last successful cuLaunchKernel (of any thread). */
FAKE_API unsigned gjfake_last_grid_x(void) {
    return atomic_load(&last_grid_x);
}

/* Its y dimension (a level-major launch: the levels or level groups). */
FAKE_API unsigned gjfake_last_grid_y(void) {
    return atomic_load(&last_grid_y);
}

/* Its block's x dimension and dynamic shared memory. */
FAKE_API unsigned gjfake_last_block_x(void) {
    return atomic_load(&last_block_x);
}

FAKE_API unsigned gjfake_last_shared(void) {
    return atomic_load(&last_shared);
}

static CUresult fake_MemAlloc(CUdeviceptr *out, size_t bytes) {
    COUNT(MemAlloc);
    void *p = NULL;
    if (posix_memalign(&p, 256, bytes ? bytes : 1) != 0) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

static CUresult fake_MemFree(CUdeviceptr p) {
    COUNT(MemFree);
    free((void *)(uintptr_t)p);
    return CUDA_SUCCESS;
}

/* The calls a launch path test does not look into: counted, successful. */
#define FAKE_NOOP(name, params)  \
    static CUresult fake_##name params { \
        COUNT(name);             \
        return CUDA_SUCCESS;     \
    }
FAKE_NOOP(MemcpyHtoD, (CUdeviceptr d, const void *h, size_t n))
FAKE_NOOP(MemcpyDtoH, (void *h, CUdeviceptr d, size_t n))
FAKE_NOOP(StreamSynchronize, (CUstream s))
FAKE_NOOP(EventSynchronize, (CUevent e))
FAKE_NOOP(EventDestroy, (CUevent e))
FAKE_NOOP(EventQuery, (CUevent e))
FAKE_NOOP(CtxEnablePeerAccess, (CUcontext c, unsigned flags))
FAKE_NOOP(MemcpyPeerAsync, (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream st))
FAKE_NOOP(MemcpyDtoDAsync, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st))
FAKE_NOOP(MemcpyAsync, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st))
FAKE_NOOP(MemcpyHtoDAsync, (CUdeviceptr d, const void *h, size_t n, CUstream st))
FAKE_NOOP(MemcpyDtoHAsync, (void *h, CUdeviceptr d, size_t n, CUstream st))
FAKE_NOOP(StreamDestroy, (CUstream s))
#undef FAKE_NOOP

static CUresult fake_EventCreate(CUevent *e, unsigned flags) {
    COUNT(EventCreate);
    (void)flags;
    static char events[MAX_EVENTS];
    static atomic_uint next_event;
    *e = (CUevent)(void *)&events[atomic_fetch_add(&next_event, 1u) % MAX_EVENTS];
    return CUDA_SUCCESS;
}

/* The stream order of what was queued since gjfake_trace_start, one entry per call, in the
 * order made: "memset(A)", "record(E1,A)" (event E1 recorded on stream A), "wait(B,E1)"
 * (stream B waits for E1), "launch(KERNEL,B)". Streams are named A, B, ... and events E1,
 * E2, ... in the order they first appear (the NULL stream is a stream like the others). */
static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static int tracing;
static char trace_text[8192];
static const void *trace_streams[26], *trace_events[64];
static int n_trace_streams, n_trace_events;

FAKE_API void gjfake_trace_start(void) {
    pthread_mutex_lock(&trace_lock);
    tracing = 1;
    trace_text[0] = '\0';
    n_trace_streams = n_trace_events = 0;
    pthread_mutex_unlock(&trace_lock);
}

/* The trace so far, entries separated by spaces ("" when none). */
FAKE_API const char *gjfake_trace(void) {
    return trace_text;
}

/* The index of p among the first n of seen, added when new (-1: no room). Under trace_lock. */
static int trace_index(const void **seen, int *n, int most, const void *p) {
    for (int i = 0; i < *n; ++i) {
        if (seen[i] == p) {
            return i;
        }
    }
    if (*n == most) {
        return -1;
    }
    seen[*n] = p;
    return (*n)++;
}

/* Appends one entry; %S takes a CUstream, %E a CUevent, %s a string. */
static void trace(const char *format, ...) {
    pthread_mutex_lock(&trace_lock);
    if (tracing) {
        va_list args;
        va_start(args, format);
        size_t at = strlen(trace_text);
        if (at && at < sizeof trace_text - 1) {
            trace_text[at++] = ' ';
        }
        for (const char *c = format; *c && at < sizeof trace_text - 1; ++c) {
            char piece[300];
            if (*c != '%') {
                piece[0] = *c, piece[1] = '\0';
            } else if (*++c == 'S') {
                const int i = trace_index(trace_streams, &n_trace_streams, 26, va_arg(args, CUstream));
                snprintf(piece, sizeof piece, "%c", i < 0 ? '?' : 'A' + i);
            } else if (*c == 'E') {
                const int i = trace_index(trace_events, &n_trace_events, 64, va_arg(args, CUevent));
                snprintf(piece, sizeof piece, "E%d", i + 1);
            } else {
                snprintf(piece, sizeof piece, "%s", va_arg(args, const char *));
            }
            const size_t len = strlen(piece);
            if (at + len < sizeof trace_text) {
                memcpy(trace_text + at, piece, len + 1);
                at += len;
            }
        }
        trace_text[at] = '\0';
        va_end(args);
    }
    pthread_mutex_unlock(&trace_lock);
}

static CUresult fake_MemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
    COUNT(MemsetD8Async);
    (void)d, (void)v, (void)n;
    trace("memset(%S)", s);
    return CUDA_SUCCESS;
}

static CUresult fake_MemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream s) {
    COUNT(MemsetD32Async);
    (void)d, (void)v, (void)n;
    trace("memset(%S)", s);
    return CUDA_SUCCESS;
}

static CUresult fake_EventRecord(CUevent e, CUstream s) {
    COUNT(EventRecord);
    trace("record(%E,%S)", e, s);
    return CUDA_SUCCESS;
}

static CUresult fake_StreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
    COUNT(StreamWaitEvent);
    (void)flags;
    trace("wait(%S,%E)", s, e);
    return CUDA_SUCCESS;
}

static CUresult fake_EventElapsedTime(float *ms, CUevent a, CUevent b) {
    COUNT(EventElapsedTime);
    (void)a, (void)b;
    *ms = 0.5f; /* nothing ran; a finite time keeps the rates the bench prints finite */
    return CUDA_SUCCESS;
}

/* A stream's identity: its place in the table (they are never reused here), 0 for the NULL
 * stream (of the calling thread's context). */
static CUresult fake_StreamGetId(CUstream s, unsigned long long *id) {
    COUNT(StreamGetId);
    *id = s ? (unsigned long long)(s - streams) + 1 : 0;
    return CUDA_SUCCESS;
}

static CUresult fake_StreamGetCtx(CUstream s, CUcontext *out) {
    COUNT(StreamGetCtx);
    *out = s ? s->context : current();
    return CUDA_SUCCESS;
}

static CUresult fake_CtxPushCurrent(CUcontext c) {
    COUNT(CtxPushCurrent);
    if (depth == STACK_DEPTH) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    stack[depth++] = c;
    return CUDA_SUCCESS;
}

static CUresult fake_CtxPopCurrent(CUcontext *out) {
    COUNT(CtxPopCurrent);
    if (!depth) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    *out = stack[--depth];
    return CUDA_SUCCESS;
}

static CUresult fake_OccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction f, int block, size_t shared) {
    COUNT(OccupancyMaxActiveBlocksPerMultiprocessor);
    (void)f, (void)shared;
    *blocks = block > 0 ? 2048 / block : 0;
    return CUDA_SUCCESS;
}

static CUresult fake_OccupancyMaxPotentialBlockSize(int *min_grid, int *block, CUfunction f, CUoccupancyB2DSize fn,
                                                    size_t shared, int limit) {
    COUNT(OccupancyMaxPotentialBlockSize);
    (void)f, (void)fn, (void)shared, (void)limit;
    *min_grid = 264;
    *block = 256;
    return CUDA_SUCCESS;
}

static CUresult fake_FuncGetAttribute(int *value, CUfunction_attribute a, CUfunction f) {
    COUNT(FuncGetAttribute);
    (void)a, (void)f;
    *value = 0;
    return CUDA_SUCCESS;
}

static CUresult fake_DeviceCanAccessPeer(int *can, CUdevice a, CUdevice b) {
    COUNT(DeviceCanAccessPeer);
    (void)a, (void)b;
    *can = 1;
    return CUDA_SUCCESS;
}

/* Every kernel takes two parameters here, a pointer and an int (bytes 0-7 and 8-11); as the
 * driver, the index past the last one is CUDA_ERROR_INVALID_VALUE (the only way to find the
 * count). */
static CUresult fake_FuncGetParamInfo(CUfunction f, size_t index, size_t *offset, size_t *size) {
    COUNT(FuncGetParamInfo);
    if (!f || index > 1) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *offset = index == 0 ? 0 : 8;
    if (size) {
        *size = index == 0 ? 8 : 4;
    }
    return CUDA_SUCCESS;
}

/* What cuStreamIsCapturing answers for every stream (gjfake_set_capturing); NONE at first. */
static atomic_int capture_status = CU_STREAM_CAPTURE_STATUS_NONE;

FAKE_API void gjfake_set_capturing(int status) {
    atomic_store(&capture_status, status);
}

static CUresult fake_StreamIsCapturing(CUstream s, CUstreamCaptureStatus *out) {
    COUNT(StreamIsCapturing);
    (void)s;
    *out = (CUstreamCaptureStatus)atomic_load(&capture_status);
    return CUDA_SUCCESS;
}

/* The range recent drivers give: 0 (least) to -5 (greatest). */
static CUresult fake_CtxGetStreamPriorityRange(int *least, int *greatest) {
    COUNT(CtxGetStreamPriorityRange);
    *least = 0;
    *greatest = -5;
    return current() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* The priority of the last stream made with cuStreamCreateWithPriority (0 until one is). */
static atomic_int last_priority;

FAKE_API int gjfake_last_priority(void) {
    return atomic_load(&last_priority);
}

static CUresult fake_StreamCreateWithPriority(CUstream *out, unsigned flags, int priority) {
    COUNT(StreamCreateWithPriority);
    (void)flags;
    atomic_store(&last_priority, priority);
    *out = gjfake_stream_create(current());
    return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult fake_StreamCreate(CUstream *out, unsigned flags) {
    COUNT(StreamCreate);
    (void)flags;
    *out = gjfake_stream_create(current());
    return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* ---------------------------------------------------------- cuGetProcAddress */

typedef struct entry {
    const char *name;
    void *fn;
} entry;

static const entry table[] = {
#define FAKE_ROW(name) {"cu" #name, (void *)fake_##name},
    FAKE_ENTRIES(FAKE_ROW)
#undef FAKE_ROW
};

FAKE_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                      CUdriverProcAddressQueryResult *status) {
    (void)version, (void)flags;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i) {
        if (strcmp(table[i].name, symbol) == 0) {
            *pfn = table[i].fn;
            if (status) {
                *status = CU_GET_PROC_ADDRESS_SUCCESS;
            }
            return CUDA_SUCCESS;
        }
    }
    *pfn = NULL;
    if (status) {
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
    return CUDA_ERROR_NOT_FOUND;
}
