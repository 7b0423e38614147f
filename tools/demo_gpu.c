/* The GPU part of `gridjit demo`: a module whose programs are compiled for the device
 * (in parallel, each listed with its time and where it came from), a warm reload, the
 * parameters initialised, forward and backward on 2^20 random points, a sample compared
 * with the CPU reference, timings. */
#include "cli_gpu.h"
#include "cli_program.h"

#include "cpu_reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What the demo runs: forward and backward (its module compiles nothing else). */
#define DEMO_PASSES (GJ_PASS_FORWARD | GJ_PASS_BACKWARD)

static const char *const CMD = "demo";

#define DEMO_POINTS (1u << 20)
#define DEMO_SAMPLE 1000u
#define DEMO_REPEAT 10

typedef struct demo_gpu {
    gj_cli_gpu *gpu; /* opened by the caller */
    gj_module *m;
    uint32_t D, n_out;
    uint64_t n_params;
    gj_precision precision;
    float *x, *params32; /* host: points, parameters as initialised (fp32 copy) */
    double *dl_dy;       /* host: dL/dy as the GPU sees it (rounded to the precision) */
    void *dev_x, *dev_params, *dev_params32, *dev_y, *dev_dl_dy, *dev_grad, *dev_dx;
} demo_gpu;

/* v as the GPU holds it in that precision: rounded to fp16 and back where it is fp16. */
static float as_stored(float v, gj_precision precision) {
    if (precision == GJ_PRECISION_FP16) {
        uint16_t h;
        gj_floats_to_halves(&v, &h, 1);
        gj_halves_to_floats(&h, &v, 1);
    }
    return v;
}

/* The module, every program compiled now for this device: each one listed. */
static int make_module(demo_gpu *d, const gj_encoding *enc) {
    printf("compiling the forward and backward programs for %s (in parallel; a module otherwise compiles\n"
           "each on first use)\n",
           d->gpu->info.arch);
    fflush(stdout);
    const double start = gj_cli_now_ms();
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = DEMO_PASSES;
    int rc = gj_cli_gpu_module(d->gpu, enc, &opts, NULL, &d->m);
    if (rc != GJ_CLI_OK) {
        return rc;
    }
    const double total = gj_cli_now_ms() - start;
    for (size_t i = 0; i < gj_module_n_programs(d->m); ++i) {
        gj_module_program_info info;
        if (gj_module_describe_program(d->m, i, &info) == GJ_OK) {
            printf("  %-18s %-8s %8.1f ms  %7zu bytes  %s\n", info.program, info.arch, info.compile_ms,
                   info.binary_bytes, gj_cli_cache_phrase(info.cache, GJ_CLI_CACHE_WHERE));
        }
    }
    printf("module     ready in %.1f ms (generate, compile or find, load)\n", total);
    return GJ_CLI_OK;
}

/* Warm start: what a process pays to get the kernels again once they are in the disk
 * cache (keys, reads, checks, cuLibraryLoadData of each program). The fastest of three. */
static int time_warm_load(demo_gpu *d, const gj_encoding *enc) {
    double best = -1.0;
    gj_cache_status cache = GJ_CACHE_HIT;
    for (int k = 0; k < 3; ++k) {
        gj_module *m = NULL;
        const double start = gj_cli_now_ms();
        gj_codegen_options opts;
        gj_codegen_options_init(&opts);
        opts.passes = DEMO_PASSES;
        const gj_status status = gj_cli_gpu_prepared_module(d->gpu->ctx, enc, &opts, &m);
        const double ms = gj_cli_now_ms() - start;
        for (size_t i = 0; status == GJ_OK && i < gj_module_n_programs(m); ++i) {
            gj_module_program_info info;
            if (gj_module_describe_program(m, i, &info) == GJ_OK && info.cache != GJ_CACHE_HIT) {
                cache = info.cache;
            }
        }
        gj_module_destroy(m);
        if (status != GJ_OK) {
            return gj_cli_status_error(CMD, d->gpu->ctx, status, "cannot reload the module");
        }
        best = best < 0.0 || ms < best ? ms : best;
    }
    printf("warm load  %8.3f ms (%s: every program's key, read, check, cuLibraryLoadData)\n", best,
           cache == GJ_CACHE_HIT ? "from the disk cache" : "disk cache off: includes the compiles");
    return GJ_CLI_OK;
}

static int prepare(demo_gpu *d) {
    const size_t n = DEMO_POINTS;
    d->x = malloc(n * d->D * sizeof(float));
    d->params32 = malloc(d->n_params * sizeof(float));
    d->dl_dy = malloc((size_t)DEMO_SAMPLE * d->n_out * sizeof(double));
    float *dl_dy = malloc(n * d->n_out * sizeof(float));
    if (!d->x || !d->params32 || !d->dl_dy || !dl_dy) {
        free(dl_dy);
        gj_cli_error(CMD, "out of memory");
        return GJ_CLI_FAILURE;
    }
    uint64_t state = 0x9E3779B97F4A7C15ull; /* one stream: the points, then dL/dy */
    gj_cli_random_floats(&state, d->x, n * d->D, 0.0f, 1.0f);
    gj_cli_random_floats(&state, dl_dy, n * d->n_out, -1.0f, 1.0f);
    const size_t element = gj_module_element_size(d->m);
    int rc = gj_cli_gpu_upload(d->gpu, d->x, n * d->D, GJ_PRECISION_FP32, &d->dev_x);
    rc = rc ? rc : gj_cli_gpu_upload(d->gpu, dl_dy, n * d->n_out, d->precision, &d->dev_dl_dy);
    rc = rc ? rc : gj_cli_gpu_alloc(d->gpu, d->n_params * element, &d->dev_params);
    rc = rc ? rc : gj_cli_gpu_alloc(d->gpu, d->n_params * sizeof(float), &d->dev_params32);
    rc = rc ? rc : gj_cli_gpu_alloc(d->gpu, d->n_params * element, &d->dev_grad);
    rc = rc ? rc : gj_cli_gpu_alloc(d->gpu, n * d->n_out * element, &d->dev_y);
    rc = rc ? rc : gj_cli_gpu_alloc(d->gpu, n * d->D * sizeof(float), &d->dev_dx);
    /* The sample's dL/dy as the GPU reads it: rounded to the parameters' precision. */
    for (size_t k = 0; rc == GJ_CLI_OK && k < (size_t)DEMO_SAMPLE * d->n_out; ++k) {
        d->dl_dy[k] = as_stored(dl_dy[k], d->precision);
    }
    free(dl_dy);
    return rc;
}

static int init_params(demo_gpu *d) {
    gj_init_desc init;
    gj_init_desc_init(&init);
    init.params = d->dev_params;
    init.params_fp32 = d->dev_params32;
    init.seed = 1337;
    gj_status status = gj_init_params(d->m, NULL, &init);
    if (status == GJ_OK) {
        status = gj_memcpy_to_host(d->gpu->ctx, d->params32, d->dev_params32, d->n_params * sizeof(float));
    }
    if (status != GJ_OK) {
        return gj_cli_status_error(CMD, d->gpu->ctx, status, "cannot initialise the parameters");
    }
    printf("parameters %llu, uniform in [-1e-4, 1e-4] (seed 1337)\n", (unsigned long long)d->n_params);
    return GJ_CLI_OK;
}

static gj_status forward(demo_gpu *d) {
    gj_forward_desc f;
    gj_forward_desc_init(&f);
    f.n = DEMO_POINTS;
    f.x = d->dev_x;
    f.params = d->dev_params;
    f.y = d->dev_y;
    return gj_forward(d->m, NULL, &f);
}

static gj_status backward(demo_gpu *d) {
    gj_backward_desc b;
    gj_backward_desc_init(&b);
    b.n = DEMO_POINTS;
    b.x = d->dev_x;
    b.params = d->dev_params;
    b.dL_dy = d->dev_dl_dy;
    b.dL_dparams = d->dev_grad;
    b.dL_dx = d->dev_dx;
    return gj_backward(d->m, NULL, &b);
}

/* Mean wall time of DEMO_REPEAT back-to-back launches after one warm-up (including
 * the launch overhead: `gridjit bench` measures the kernels alone). */
static int time_pass(demo_gpu *d, gj_status (*pass)(demo_gpu *), const char *name) {
    gj_status status = pass(d);
    status = status ? status : gj_stream_synchronize(d->gpu->ctx, NULL);
    const double start = gj_cli_now_ms();
    for (int i = 0; status == GJ_OK && i < DEMO_REPEAT; ++i) {
        status = pass(d);
    }
    status = status ? status : gj_stream_synchronize(d->gpu->ctx, NULL);
    if (status != GJ_OK) {
        return gj_cli_status_error(CMD, d->gpu->ctx, status, name);
    }
    const double ms = (gj_cli_now_ms() - start) / DEMO_REPEAT;
    printf("%-10s %8.3f ms for %u points (%.3g points/s)\n", name, ms, DEMO_POINTS, DEMO_POINTS / (ms * 1e-3));
    return GJ_CLI_OK;
}

/* The first DEMO_SAMPLE points against the CPU reference, which uses the same fp32
 * parameters (rounded to fp16 where the module stores fp16). The largest difference is
 * reported relative to the largest |value|: fp16 outputs differ by their rounding
 * (~5e-4 relative), fp32 ones by float rounding (~1e-6). */
static int compare(demo_gpu *d, const gj_encoding *enc) {
    gj_ref_encoding ref;
    gj_ref_from_encoding(&ref, enc);
    double *params = malloc(d->n_params * sizeof(double));
    float *y = malloc((size_t)DEMO_SAMPLE * d->n_out * sizeof(float)), *dx = malloc((size_t)DEMO_SAMPLE * d->D * sizeof(float));
    double *y_ref = malloc(d->n_out * sizeof(double)), dx_ref[GJ_REF_MAX_DIMS];
    int rc = GJ_CLI_OK;
    if (!params || !y || !dx || !y_ref) {
        gj_cli_error(CMD, "out of memory");
        rc = GJ_CLI_FAILURE;
    }
    for (uint64_t p = 0; rc == GJ_CLI_OK && p < d->n_params; ++p) {
        params[p] = as_stored(d->params32[p], d->precision);
    }
    rc = rc ? rc : gj_cli_gpu_download(d->gpu, d->dev_y, (size_t)DEMO_SAMPLE * d->n_out, d->precision, y);
    rc = rc ? rc : gj_cli_gpu_download(d->gpu, d->dev_dx, (size_t)DEMO_SAMPLE * d->D, GJ_PRECISION_FP32, dx);
    double y_err = 0, y_max = 0, dx_err = 0, dx_max = 0;
    for (uint32_t i = 0; rc == GJ_CLI_OK && i < DEMO_SAMPLE; ++i) {
        gj_ref_forward(&ref, params, d->x + (size_t)i * d->D, 1.0, y_ref);
        gj_ref_backward(&ref, params, d->x + (size_t)i * d->D, 1.0, i, DEMO_POINTS, d->dl_dy + (size_t)i * d->n_out,
                        NULL, dx_ref);
        for (uint32_t k = 0; k < d->n_out; ++k) {
            y_err = fmax(y_err, fabs(y[(size_t)i * d->n_out + k] - y_ref[k]));
            y_max = fmax(y_max, fabs(y_ref[k]));
        }
        for (uint32_t k = 0; k < d->D; ++k) {
            dx_err = fmax(dx_err, fabs(dx[(size_t)i * d->D + k] - dx_ref[k]));
            dx_max = fmax(dx_max, fabs(dx_ref[k]));
        }
    }
    if (rc == GJ_CLI_OK) {
        const double y_rel = y_err / fmax(y_max, 1e-30), dx_rel = dx_err / fmax(dx_max, 1e-30);
        const double y_limit = d->precision == GJ_PRECISION_FP16 ? 2e-3 : 1e-5;
        printf("check      %u points against the CPU reference (double precision):\n", DEMO_SAMPLE);
        printf("  y        largest difference %.3g (%.2g of the largest |y|)\n", y_err, y_rel);
        printf("  dL/dx    largest difference %.3g (%.2g of the largest |dL/dx|)\n", dx_err, dx_rel);
        if (!(y_rel <= y_limit) || !(dx_rel <= 1e-4)) {
            gj_cli_error(CMD, "the GPU disagrees with the CPU reference beyond rounding");
            rc = GJ_CLI_FAILURE;
        } else {
            printf("  agrees within %s rounding\n", d->precision == GJ_PRECISION_FP16 ? "fp16" : "fp32");
        }
    }
    free(params);
    free(y);
    free(dx);
    free(y_ref);
    return rc;
}

int gj_cli_demo_gpu(gj_cli_gpu *gpu, const gj_encoding *enc) {
    demo_gpu d;
    memset(&d, 0, sizeof d);
    d.gpu = gpu;
    printf("\n== GPU\n");
    printf("device     %s (%s), driver %d.%d\n", gpu->info.device_name, gpu->info.arch, gpu->info.driver_version / 1000,
           gpu->info.driver_version % 1000 / 10);
    d.D = gj_encoding_n_dims(enc);
    d.n_out = gj_encoding_n_output_dims(enc);
    d.n_params = gj_encoding_n_params(enc);
    d.precision = gj_encoding_precision(enc);
    int rc = make_module(&d, enc);
    rc = rc ? rc : time_warm_load(&d, enc);
    rc = rc ? rc : prepare(&d);
    rc = rc ? rc : init_params(&d);
    rc = rc ? rc : time_pass(&d, forward, "forward");
    rc = rc ? rc : time_pass(&d, backward, "backward");
    rc = rc ? rc : compare(&d, enc);
    gj_cli_gpu_close(gpu); /* the buffers, before the module they were used with */
    gj_module_destroy(d.m);
    free(d.x);
    free(d.params32);
    free(d.dl_dy);
    return rc;
}
