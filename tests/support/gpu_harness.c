/* GPU test helpers (see gpu_harness.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gpu_harness.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int gj_gpu_available(gj_runtime_info *info) {
    static int known = -1;
    static gj_runtime_info probed;
    if (known < 0) {
        gj_context *ctx = NULL;
        gj_status status = gj_context_create(&ctx);
        if (status == GJ_OK) {
            gj_context_set_log(ctx, NULL, NULL);
            status = gj_runtime_probe(ctx, &probed);
        }
        known = status == GJ_OK;
        if (known) {
            printf("GPU: %s (%s), driver %d\n", probed.device_name, probed.arch, probed.driver_version);
        } else {
            printf("SKIPPED: no CUDA device: %s: %s\n", gj_status_name(status), ctx ? gj_context_errmsg(ctx) : "");
        }
        fflush(stdout);
        gj_context_destroy(ctx);
    }
    if (info) {
        *info = probed;
    }
    return known;
}

void gj_gpu_ok(gj_context *ctx, gj_status status, const char *what) {
    if (status != GJ_OK) {
        fail_msg("%s: %s: %s", what, gj_status_name(status), gj_context_errmsg(ctx));
    }
}

void *gj_gpu_alloc(gj_context *ctx, size_t bytes) {
    void *ptr = NULL;
    gj_gpu_ok(ctx, gj_device_alloc(ctx, bytes, &ptr), "gj_device_alloc");
    return ptr;
}

void gj_gpu_free(gj_context *ctx, void *ptr) {
    gj_device_free(ctx, ptr);
}

void gj_gpu_put(gj_context *ctx, void *device, const void *host, size_t bytes) {
    gj_gpu_ok(ctx, gj_memcpy_to_device(ctx, device, host, bytes), "gj_memcpy_to_device");
}

void gj_gpu_get(gj_context *ctx, void *host, const void *device, size_t bytes) {
    gj_gpu_ok(ctx, gj_memcpy_to_host(ctx, host, device, bytes), "gj_memcpy_to_host");
}

void gj_gpu_sync(gj_context *ctx) {
    gj_gpu_ok(ctx, gj_stream_synchronize(ctx, NULL), "gj_stream_synchronize");
}

double gj_gpu_round(double v, gj_precision precision) {
    float f = (float)v;
    if (precision == GJ_PRECISION_FP16) {
        uint16_t h;
        gj_floats_to_halves(&f, &h, 1);
        gj_halves_to_floats(&h, &f, 1);
    }
    return f;
}

size_t gj_gpu_element_size(gj_precision precision) {
    return precision == GJ_PRECISION_FP16 ? 2 : 4;
}

void gj_gpu_put_elements(gj_context *ctx, void *device, const double *host, size_t count, gj_precision precision) {
    const size_t size = gj_gpu_element_size(precision);
    float *floats = malloc(count * sizeof(float) + 1);
    void *packed = malloc(count * size + 1);
    assert_non_null(floats);
    assert_non_null(packed);
    for (size_t i = 0; i < count; ++i) {
        floats[i] = (float)host[i];
    }
    if (precision == GJ_PRECISION_FP16) {
        gj_floats_to_halves(floats, packed, count);
    } else {
        memcpy(packed, floats, count * sizeof(float));
    }
    gj_gpu_put(ctx, device, packed, count * size);
    free(floats);
    free(packed);
}

void *gj_gpu_upload(gj_context *ctx, const double *host, size_t count, gj_precision precision) {
    void *device = gj_gpu_alloc(ctx, count * gj_gpu_element_size(precision));
    gj_gpu_put_elements(ctx, device, host, count, precision);
    return device;
}

void gj_gpu_download(gj_context *ctx, double *host, const void *device, size_t count, gj_precision precision) {
    const size_t size = gj_gpu_element_size(precision);
    void *packed = malloc(count * size + 1);
    float *floats = malloc(count * sizeof(float) + 1);
    assert_non_null(packed);
    assert_non_null(floats);
    gj_gpu_get(ctx, packed, device, count * size);
    if (precision == GJ_PRECISION_FP16) {
        gj_halves_to_floats(packed, floats, count);
    } else {
        memcpy(floats, packed, count * sizeof(float));
    }
    for (size_t i = 0; i < count; ++i) {
        host[i] = floats[i];
    }
    free(packed);
    free(floats);
}

void *gj_gpu_upload_floats(gj_context *ctx, const float *host, size_t count) {
    void *device = gj_gpu_alloc(ctx, count * sizeof(float));
    gj_gpu_put(ctx, device, host, count * sizeof(float));
    return device;
}

uint64_t gj_gpu_rng_next(gj_gpu_rng *rng) {
    uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float gj_gpu_rng_float(gj_gpu_rng *rng, float lo, float hi) {
    const float u = (float)(gj_gpu_rng_next(rng) >> 40) * (1.0f / 16777216.0f);
    const float v = lo + (hi - lo) * u;
    return v < hi ? v : lo; /* rounding can reach hi: keep the interval half-open */
}

double gj_gpu_rel_error(const double *a, const double *b, size_t n, double floor) {
    double err = 0.0, scale = floor;
    for (size_t i = 0; i < n; ++i) {
        if (!isfinite(a[i])) {
            return INFINITY;
        }
        err = fmax(err, fabs(a[i] - b[i]));
        scale = fmax(scale, fabs(b[i]));
    }
    return err / scale;
}

/* ------------------------------------------------------- parallel compiles */

typedef struct compile_pool {
    gj_gpu_compile_job *jobs;
    size_t n_jobs;
    size_t next;
    pthread_mutex_t lock;
} compile_pool;

static void compile_one(gj_gpu_compile_job *job) {
    gj_context *ctx = NULL;
    job->prog = NULL;
    job->status = gj_context_create(&ctx);
    if (job->status == GJ_OK) {
        gj_context_set_log(ctx, NULL, NULL);
        if (job->opts.levels_per_thread > 1) {
            /* gj_compile's whole unit has no level-group kernels: compile every module
             * program into the test's disk cache, where gj_gpu_module_for_job finds them. */
            job->status = gj_precompile(ctx, job->enc, &job->opts, job->arch, 1, NULL);
        } else {
            job->status = gj_compile(ctx, job->enc, &job->opts, job->arch, &job->prog);
        }
        if (job->status != GJ_OK) {
            snprintf(job->message, sizeof job->message, "%s%s%s", gj_context_errmsg(ctx),
                     job->prog ? "\n" : "", job->prog ? gj_program_log(job->prog) : "");
            gj_program_destroy(job->prog);
            job->prog = NULL;
        }
    }
    gj_context_destroy(ctx);
}

static void *compile_worker(void *arg) {
    compile_pool *pool = arg;
    for (;;) {
        pthread_mutex_lock(&pool->lock);
        const size_t i = pool->next++;
        pthread_mutex_unlock(&pool->lock);
        if (i >= pool->n_jobs) {
            return NULL;
        }
        compile_one(&pool->jobs[i]);
    }
}

gj_status gj_gpu_module_for_job(gj_context *ctx, const gj_gpu_compile_job *job, gj_module **out) {
    if (job->prog) {
        return gj_module_load(ctx, job->enc, &job->opts, job->prog, out);
    }
    return gj_module_create(ctx, job->enc, &job->opts, out);
}

void gj_gpu_compile_all(gj_gpu_compile_job *jobs, size_t n_jobs) {
    compile_pool pool = {jobs, n_jobs, 0, PTHREAD_MUTEX_INITIALIZER};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t n_threads = cpus > 0 ? (size_t)cpus : 1;
    if (n_threads > n_jobs) {
        n_threads = n_jobs;
    }
    if (n_threads > 32) {
        n_threads = 32;
    }
    pthread_t threads[32];
    size_t started = 0;
    for (; started < n_threads; ++started) {
        if (pthread_create(&threads[started], NULL, compile_worker, &pool) != 0) {
            break;
        }
    }
    if (started == 0) {
        compile_worker(&pool); /* no threads: compile here */
    }
    for (size_t t = 0; t < started; ++t) {
        pthread_join(threads[t], NULL);
    }
}
