/* Helpers of the GPU tests (tests/test_gpu_*.c): skipping without a device, device
 * buffers that fail the test on error, precision-aware transfers, and compiling many
 * programs at once (one NVRTC compile per worker thread). */
#ifndef GJ_TEST_GPU_HARNESS_H
#define GJ_TEST_GPU_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "gridjit.h"

/*
 * 1 when gj_runtime_probe finds a usable device. Otherwise 0, after printing once
 * "SKIPPED: no CUDA device: <message>" so that the reason shows in the test log.
 * *info (may be NULL) receives the probe's result.
 */
int gj_gpu_available(gj_runtime_info *info);

/* Exit status of a test binary none of whose tests can run here (ctest's SKIP_RETURN_CODE,
 * tests/CMakeLists.txt): reported as skipped, never as passed. */
#define GJ_TEST_SKIP_ALL 77

/* Fails the running test with the context's message unless status is GJ_OK. */
void gj_gpu_ok(gj_context *ctx, gj_status status, const char *what);

/* Device memory (fails the test on error); bytes == 0 gives NULL. */
void *gj_gpu_alloc(gj_context *ctx, size_t bytes);
void gj_gpu_free(gj_context *ctx, void *ptr);
void gj_gpu_put(gj_context *ctx, void *device, const void *host, size_t bytes);
void gj_gpu_get(gj_context *ctx, void *host, const void *device, size_t bytes);
void gj_gpu_sync(gj_context *ctx);

/* The value v takes once stored in precision (float, or fp16 round-to-nearest-even). */
double gj_gpu_round(double v, gj_precision precision);
size_t gj_gpu_element_size(gj_precision precision);
/* count values (already representable: see gj_gpu_round) to a device array of precision. */
void *gj_gpu_upload(gj_context *ctx, const double *host, size_t count, gj_precision precision);
void gj_gpu_put_elements(gj_context *ctx, void *device, const double *host, size_t count, gj_precision precision);
/* count elements of precision from the device, as doubles. */
void gj_gpu_download(gj_context *ctx, double *host, const void *device, size_t count, gj_precision precision);
void *gj_gpu_upload_floats(gj_context *ctx, const float *host, size_t count);

/* A small deterministic generator (splitmix64) for test data. */
typedef struct gj_gpu_rng {
    uint64_t state;
} gj_gpu_rng;
uint64_t gj_gpu_rng_next(gj_gpu_rng *rng);
/* Uniform in [lo, hi) as a float. */
float gj_gpu_rng_float(gj_gpu_rng *rng, float lo, float hi);

/* The networks' measure of agreement with a reference: max |a - b| / max(max |b|, floor), and
 * infinity where a holds a value that is not finite. */
double gj_gpu_rel_error(const double *a, const double *b, size_t n, double floor);

typedef struct gj_gpu_compile_job {
    const gj_encoding *enc;     /* read only: shared by the workers */
    gj_codegen_options opts;
    char arch[24];
    gj_program *prog;           /* the result, or NULL */
    gj_status status;
    char message[2048];         /* the context's message on failure */
} gj_gpu_compile_job;

/* Runs every job's gj_compile, on up to one thread per CPU, each with its own context.
 * A job with more than one level per thread needs the level-group kernels, which only
 * gj_module_create's module programs hold: it is gj_precompile'd into the disk cache
 * instead (prog stays NULL). */
void gj_gpu_compile_all(gj_gpu_compile_job *jobs, size_t n_jobs);
/* The module of a compiled job: gj_module_load of its program, or gj_module_create (which
 * finds the precompiled programs in the cache) for a job without one. */
gj_status gj_gpu_module_for_job(gj_context *ctx, const gj_gpu_compile_job *job, gj_module **out);

#endif
