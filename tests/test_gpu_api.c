/*
 * The runtime API on a device: probing, the context rule, parameter initialisation
 * (against PCG32 on the host), empty batches, passes not compiled, pointer checks with
 * real device pointers, PTX programs, gradient modes, the stream order of a backward whose
 * coarse kernel runs on a side stream, device-memory helpers.
 * Skipped without a device (the reason is printed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridjit.h"
#include "cpu_reference.h"
#include "api/context.h"
#include "gpu_harness.h"

static const char FP32_CONFIG[] = "{\"otype\": \"HashGrid\", \"n_levels\": 4, \"n_features_per_level\": 2, "
                                  "\"log2_hashmap_size\": 14, \"base_resolution\": 8, \"precision\": \"fp32\"}";
static const char FP16_CONFIG[] = "{\"otype\": \"HashGrid\", \"n_levels\": 4, \"n_features_per_level\": 2, "
                                  "\"log2_hashmap_size\": 14, \"base_resolution\": 8, \"precision\": \"fp16\"}";

typedef struct api {
    gj_context *ctx;
    gj_encoding *enc32, *enc16;
} api;

static int setup(void **state) {
    api *a = calloc(1, sizeof *a);
    if (!a || gj_context_create(&a->ctx) != GJ_OK) {
        return -1;
    }
    gj_context_set_log(a->ctx, NULL, NULL);
    if (gj_encoding_create(a->ctx, FP32_CONFIG, 3, &a->enc32) != GJ_OK ||
        gj_encoding_create(a->ctx, FP16_CONFIG, 3, &a->enc16) != GJ_OK) {
        printf("%s\n", gj_context_errmsg(a->ctx));
        return -1;
    }
    *state = a;
    return 0;
}

static int teardown(void **state) {
    api *a = *state;
    gj_encoding_destroy(a->enc32);
    gj_encoding_destroy(a->enc16);
    gj_context_destroy(a->ctx);
    free(a);
    return 0;
}

#define NEED_GPU()                       \
    do {                                 \
        if (!gj_gpu_available(NULL)) {   \
            skip();                      \
        }                                \
    } while (0)

static void probe_reports_the_device(void **state) {
    api *a = *state;
    NEED_GPU();
    gj_runtime_info info;
    gj_gpu_ok(a->ctx, gj_runtime_probe(a->ctx, &info), "gj_runtime_probe");
    assert_int_equal(info.driver_found, 1);
    assert_true(info.driver_version >= 12000);
    assert_true(info.device_count >= 1);
    assert_true(info.device_name[0] != '\0');
    assert_true(info.cc_major >= 5);
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d%d", info.cc_major, info.cc_minor);
    assert_string_equal(info.arch, arch);
}

/* No current context: the runtime makes device 0's primary context current. */
static void no_context_means_the_primary_context(void **state) {
    api *a = *state;
    NEED_GPU();
    gj_runtime_info info;
    gj_gpu_ok(a->ctx, gj_runtime_probe(a->ctx, &info), "gj_runtime_probe"); /* loads the driver */
    gj__driver *drv = gj__driver_loaded(&a->ctx->driver);
    assert_non_null(drv);
    assert_int_equal(drv->CtxSetCurrent(NULL), CUDA_SUCCESS);
    gj_module *m = NULL;
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = GJ_PASS_FORWARD;
    gj_gpu_ok(a->ctx, gj_module_create(a->ctx, a->enc32, &opts, &m), "gj_module_create");
    /* Creating a module touches no context; the first call that runs on the GPU does. */
    CUcontext current = NULL, primary = NULL;
    assert_int_equal(drv->CtxGetCurrent(&current), CUDA_SUCCESS);
    assert_null(current);
    gj_gpu_ok(a->ctx, gj_module_prepare(m, GJ_PASS_FORWARD), "gj_module_prepare");
    CUdevice device0;
    assert_int_equal(drv->CtxGetCurrent(&current), CUDA_SUCCESS);
    assert_non_null(current);
    assert_int_equal(drv->DeviceGet(&device0, 0), CUDA_SUCCESS);
    assert_int_equal(drv->DevicePrimaryCtxRetain(&primary, device0), CUDA_SUCCESS);
    assert_ptr_equal(current, primary);
    assert_int_equal(drv->DevicePrimaryCtxRelease(device0), CUDA_SUCCESS);
    /* A launch from a thread state without a context sets it again. */
    assert_int_equal(drv->CtxSetCurrent(NULL), CUDA_SUCCESS);
    void *buffer = gj_gpu_alloc(a->ctx, 1024);
    assert_int_equal(drv->CtxGetCurrent(&current), CUDA_SUCCESS);
    assert_ptr_equal(current, primary);
    gj_gpu_free(a->ctx, buffer);
    gj_module_destroy(m);
}

/* Element i: (next_float of PCG32(seed, 1) advanced by i) * 2 - 1, times 1e-4 * scale,
 * in float as the kernel computes it (no contraction: ISO C, -ffp-contract=off). */
static float expected_init(uint64_t seed, uint64_t i, float scale) {
    gj_ref_pcg32 rng;
    gj_ref_pcg32_seed(&rng, seed, 1);
    gj_ref_pcg32_advance(&rng, i);
    const float u = gj_ref_pcg32_next_float(&rng);
    return (u * 2.0f - 1.0f) * 1e-4f * scale;
}

static void check_init(api *a, const gj_encoding *enc, uint64_t seed, float scale) {
    gj_module *m = NULL;
    gj_gpu_ok(a->ctx, gj_module_create(a->ctx, enc, NULL, &m), "gj_module_create");
    const uint64_t n = gj_module_n_params(m);
    const gj_precision precision = gj_encoding_precision(enc);
    void *params = gj_gpu_alloc(a->ctx, n * gj_module_element_size(m));
    float *copy = gj_gpu_alloc(a->ctx, n * sizeof(float));
    gj_init_desc d;
    gj_init_desc_init(&d);
    d.params = params;
    d.params_fp32 = copy;
    d.seed = seed;
    d.scale = scale;
    gj_gpu_ok(a->ctx, gj_init_params(m, NULL, &d), "gj_init_params");
    double *values = malloc(n * sizeof(double));
    float *fp32 = malloc(n * sizeof(float));
    assert_true(values && fp32);
    gj_gpu_download(a->ctx, values, params, n, precision);
    gj_gpu_get(a->ctx, fp32, copy, n * sizeof(float));
    size_t distinct = 0;
    for (uint64_t i = 0; i < n; ++i) {
        const float e = expected_init(seed, i, scale);
        if (fp32[i] != e || values[i] != gj_gpu_round(e, precision)) {
            fail_msg("seed %llu, scale %g: element %llu is %.9g (fp32 copy %.9g), expected %.9g",
                     (unsigned long long)seed, (double)scale, (unsigned long long)i, values[i], (double)fp32[i],
                     (double)e);
        }
        assert_true(fabsf(fp32[i]) <= 1e-4f * scale);
        distinct += i > 0 && fp32[i] != fp32[i - 1];
    }
    assert_true(distinct > n / 2); /* not a constant */
    /* Deterministic: a second call gives the same bits. */
    float *again = malloc(n * sizeof(float));
    assert_non_null(again);
    d.params_fp32 = copy;
    gj_gpu_ok(a->ctx, gj_init_params(m, NULL, &d), "gj_init_params (again)");
    gj_gpu_get(a->ctx, again, copy, n * sizeof(float));
    assert_memory_equal(again, fp32, n * sizeof(float));
    free(again);
    free(values);
    free(fp32);
    gj_gpu_free(a->ctx, params);
    gj_gpu_free(a->ctx, copy);
    gj_module_destroy(m);
}

static void init_params_follow_pcg32(void **state) {
    api *a = *state;
    NEED_GPU();
    check_init(a, a->enc32, 0, 1.0f);
    check_init(a, a->enc32, 42, 3.5f);
    check_init(a, a->enc16, 1337, 1.0f);
    check_init(a, a->enc16, 7, 100.0f); /* up to 1e-2: normal fp16 numbers */
}

static void empty_batch_is_a_no_op(void **state) {
    api *a = *state;
    NEED_GPU();
    gj_module *m = NULL;
    gj_gpu_ok(a->ctx, gj_module_create(a->ctx, a->enc32, NULL, &m), "gj_module_create");
    gj_forward_desc f;
    gj_forward_desc_init(&f); /* n = 0, every pointer NULL */
    assert_int_equal(gj_forward(m, NULL, &f), GJ_OK);
    gj_backward_desc b;
    gj_backward_desc_init(&b);
    assert_int_equal(gj_backward(m, NULL, &b), GJ_OK);
    gj_backward_backward_desc bb;
    gj_backward_backward_desc_init(&bb);
    assert_int_equal(gj_backward_backward(m, NULL, &bb), GJ_OK);
    /* With real buffers nothing is written either (not even zeroing in overwrite mode). */
    const uint64_t n_params = gj_module_n_params(m);
    float *sentinel = malloc(n_params * sizeof(float)), *after = malloc(n_params * sizeof(float));
    assert_true(sentinel && after);
    for (uint64_t p = 0; p < n_params; ++p) {
        sentinel[p] = (float)p;
    }
    void *grad = gj_gpu_upload_floats(a->ctx, sentinel, n_params);
    void *params = gj_gpu_alloc(a->ctx, n_params * sizeof(float));
    void *x = gj_gpu_alloc(a->ctx, 64), *dy = gj_gpu_alloc(a->ctx, 256);
    b.x = x;
    b.params = params;
    b.dL_dy = dy;
    b.dL_dparams = grad;
    assert_int_equal(gj_backward(m, NULL, &b), GJ_OK);
    gj_gpu_sync(a->ctx);
    gj_gpu_get(a->ctx, after, grad, n_params * sizeof(float));
    assert_memory_equal(after, sentinel, n_params * sizeof(float));
    free(sentinel);
    free(after);
    gj_gpu_free(a->ctx, grad);
    gj_gpu_free(a->ctx, params);
    gj_gpu_free(a->ctx, x);
    gj_gpu_free(a->ctx, dy);
    gj_module_destroy(m);
}

static void pass_not_compiled(void **state) {
    api *a = *state;
    NEED_GPU();
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = GJ_PASS_FORWARD;
    gj_module *m = NULL;
    gj_gpu_ok(a->ctx, gj_module_create(a->ctx, a->enc32, &opts, &m), "gj_module_create");
    assert_int_equal(gj_module_passes(m), GJ_PASS_FORWARD);
    gj_backward_desc b;
    gj_backward_desc_init(&b);
    b.n = 10;
    assert_int_equal(gj_backward(m, NULL, &b), GJ_ERROR_PASS_NOT_COMPILED);
    assert_non_null(strstr(gj_context_errmsg(a->ctx), "backward"));
    gj_backward_backward_desc bb;
    gj_backward_backward_desc_init(&bb);
    bb.n = 10;
    assert_int_equal(gj_backward_backward(m, NULL, &bb), GJ_ERROR_PASS_NOT_COMPILED);
    gj_module_destroy(m);
}

static void misaligned_pointers_are_refused(void **state) {
    api *a = *state;
    NEED_GPU();
    gj_module *m = NULL;
    gj_gpu_ok(a->ctx, gj_module_create(a->ctx, a->enc32, NULL, &m), "gj_module_create");
    char *block = gj_gpu_alloc(a->ctx, 1 << 20);
    gj_forward_desc f;
    gj_forward_desc_init(&f);
    f.n = 16;
    f.x = (const float *)block;
    f.params = block + 4096;
    f.y = block + 8192 + 2; /* fp32 outputs need 4 bytes */
    assert_int_equal(gj_forward(m, NULL, &f), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(a->ctx), "y must be aligned"));
    f.y = block + 8192;
    f.params = block + 4096 + 8; /* parameters need 16 */
    assert_int_equal(gj_forward(m, NULL, &f), GJ_ERROR_INVALID_ARGUMENT);
    f.params = block + 4096;
    gj_gpu_ok(a->ctx, gj_forward(m, NULL, &f), "gj_forward (aligned)");
    gj_gpu_sync(a->ctx);
    gj_gpu_free(a->ctx, block);
    gj_module_destroy(m);
}

/* Runs a forward pass over fixed data and returns y (n * n_out floats). */
static float *forward_once(api *a, gj_module *m, uint64_t n) {
    const uint32_t d = gj_encoding_n_dims(a->enc32), n_out = gj_encoding_n_output_dims(a->enc32);
    const uint64_t n_params = gj_module_n_params(m);
    float *x = malloc(n * d * sizeof(float)), *p = malloc(n_params * sizeof(float));
    float *y = malloc(n * n_out * sizeof(float));
    assert_true(x && p && y);
    gj_gpu_rng rng = {99};
    for (uint64_t k = 0; k < n * d; ++k) {
        x[k] = gj_gpu_rng_float(&rng, 0.0f, 1.0f);
    }
    for (uint64_t k = 0; k < n_params; ++k) {
        p[k] = gj_gpu_rng_float(&rng, -1.0f, 1.0f);
    }
    void *dx = gj_gpu_upload_floats(a->ctx, x, n * d), *dp = gj_gpu_upload_floats(a->ctx, p, n_params);
    void *dy = gj_gpu_alloc(a->ctx, n * n_out * sizeof(float));
    gj_forward_desc f;
    gj_forward_desc_init(&f);
    f.n = n;
    f.x = dx;
    f.params = dp;
    f.y = dy;
    gj_gpu_ok(a->ctx, gj_forward(m, NULL, &f), "gj_forward");
    gj_gpu_get(a->ctx, y, dy, n * n_out * sizeof(float));
    gj_gpu_free(a->ctx, dx);
    gj_gpu_free(a->ctx, dp);
    gj_gpu_free(a->ctx, dy);
    free(x);
    free(p);
    return y;
}

/* A PTX program (the driver compiles it) loads through gj_module_load and computes what
 * the cubin computes: the same PTX goes through ptxas either way, and ptxas does not
 * change floating-point results; a tiny relative slack guards against a different
 * ptxas scheduling an FMA differently. */
static void ptx_program_matches_cubin(void **state) {
    api *a = *state;
    NEED_GPU();
    gj_runtime_info info;
    gj_gpu_ok(a->ctx, gj_runtime_probe(a->ctx, &info), "gj_runtime_probe");
    char arch[24];
    snprintf(arch, sizeof arch, "compute_%d%d", info.cc_major, info.cc_minor);
    gj_program *prog = NULL;
    gj_gpu_ok(a->ctx, gj_compile(a->ctx, a->enc32, NULL, arch, &prog), "gj_compile (PTX)");
    assert_int_equal(gj_program_kind(prog), GJ_BINARY_PTX);
    gj_module *ptx = NULL, *cubin = NULL;
    gj_gpu_ok(a->ctx, gj_module_load(a->ctx, a->enc32, NULL, prog, &ptx), "gj_module_load (PTX)");
    gj_program_destroy(prog); /* the module keeps nothing of it */
    gj_gpu_ok(a->ctx, gj_module_create(a->ctx, a->enc32, NULL, &cubin), "gj_module_create");
    const uint64_t n = 3001;
    float *y1 = forward_once(a, ptx, n), *y2 = forward_once(a, cubin, n);
    const uint32_t n_out = gj_encoding_n_output_dims(a->enc32);
    for (uint64_t k = 0; k < n * n_out; ++k) {
        if (!(fabsf(y1[k] - y2[k]) <= 1e-6f * fabsf(y2[k]) + 1e-30f)) {
            fail_msg("y[%llu]: PTX %.9g, cubin %.9g", (unsigned long long)k, (double)y1[k], (double)y2[k]);
        }
    }
    free(y1);
    free(y2);
    gj_module_destroy(ptx);
    gj_module_destroy(cubin);
}

/* Accumulate adds to what is there; overwrite replaces whatever was there. */
static void gradient_modes(void **state) {
    api *a = *state;
    NEED_GPU();
    gj_module *m = NULL;
    gj_gpu_ok(a->ctx, gj_module_create(a->ctx, a->enc32, NULL, &m), "gj_module_create");
    const uint64_t n = 2048, n_params = gj_module_n_params(m);
    const uint32_t d = gj_encoding_n_dims(a->enc32), n_out = gj_encoding_n_output_dims(a->enc32);
    float *host = malloc((n * (d + n_out) + n_params) * sizeof(float));
    assert_non_null(host);
    gj_gpu_rng rng = {5};
    for (uint64_t k = 0; k < n * (d + n_out) + n_params; ++k) {
        host[k] = k < n * d ? gj_gpu_rng_float(&rng, 0.0f, 1.0f) : gj_gpu_rng_float(&rng, -1.0f, 1.0f);
    }
    void *x = gj_gpu_upload_floats(a->ctx, host, n * d);
    void *dy = gj_gpu_upload_floats(a->ctx, host + n * d, n * n_out);
    void *params = gj_gpu_upload_floats(a->ctx, host + n * (d + n_out), n_params);
    float *garbage = malloc(n_params * sizeof(float)), *once = malloc(n_params * sizeof(float));
    float *twice = malloc(n_params * sizeof(float));
    assert_true(garbage && once && twice);
    for (uint64_t p = 0; p < n_params; ++p) {
        garbage[p] = 1e6f;
    }
    void *grad = gj_gpu_upload_floats(a->ctx, garbage, n_params);
    gj_backward_desc b;
    gj_backward_desc_init(&b);
    b.n = n;
    b.x = x;
    b.params = params;
    b.dL_dy = dy;
    b.dL_dparams = grad;
    gj_gpu_ok(a->ctx, gj_backward(m, NULL, &b), "gj_backward (overwrite)");
    gj_gpu_get(a->ctx, once, grad, n_params * sizeof(float));
    b.dL_dparams_mode = GJ_GRAD_ACCUMULATE;
    gj_gpu_ok(a->ctx, gj_backward(m, NULL, &b), "gj_backward (accumulate)");
    gj_gpu_get(a->ctx, twice, grad, n_params * sizeof(float));
    size_t nonzero = 0;
    for (uint64_t p = 0; p < n_params; ++p) {
        /* Twice the same sum; the atomics may add in another order: float rounding of a
         * sum of a few terms of |value| <= 1, far below 1e-4. */
        assert_true(fabsf(once[p]) < 1e5f); /* the garbage is gone */
        if (!(fabsf(twice[p] - 2.0f * once[p]) <= 1e-4f)) {
            fail_msg("parameter %llu: once %.9g, after accumulating again %.9g", (unsigned long long)p,
                     (double)once[p], (double)twice[p]);
        }
        nonzero += once[p] != 0.0f;
    }
    assert_true(nonzero > 100);
    free(host);
    free(garbage);
    free(once);
    free(twice);
    gj_gpu_free(a->ctx, x);
    gj_gpu_free(a->ctx, dy);
    gj_gpu_free(a->ctx, params);
    gj_gpu_free(a->ctx, grad);
    gj_module_destroy(m);
}

/* One forward -> backward -> forward chain on stream: the backward's dL/dy is what the first
 * forward writes, the second forward reads the backward's gradients as its parameters. With
 * sync, a synchronisation after each call. grad and y2 receive the results. */
typedef struct chain {
    uint64_t n;
    void *x, *params, *dy, *grad, *y2;
    const float *zeros, *garbage; /* host: dL/dy's and the gradient's contents before the chain */
} chain;

static void run_chain(api *a, gj_module *m, const chain *c, gj_stream stream, int sync, float *grad, float *y2) {
    const size_t n_params = gj_module_n_params(m), outputs = c->n * gj_module_output_width(m);
    gj_gpu_put(a->ctx, c->dy, c->zeros, outputs * sizeof(float));
    gj_gpu_put(a->ctx, c->grad, c->garbage, n_params * sizeof(float));
    gj_gpu_sync(a->ctx);
    gj_forward_desc f;
    gj_forward_desc_init(&f);
    f.n = c->n;
    f.x = c->x;
    f.params = c->params;
    f.y = c->dy;
    gj_gpu_ok(a->ctx, gj_forward(m, stream, &f), "gj_forward (dL/dy)");
    if (sync) {
        gj_gpu_ok(a->ctx, gj_stream_synchronize(a->ctx, stream), "gj_stream_synchronize");
    }
    gj_backward_desc b;
    gj_backward_desc_init(&b);
    b.n = c->n;
    b.x = c->x;
    b.params = c->params;
    b.dL_dy = c->dy;
    b.dL_dparams = c->grad;
    gj_gpu_ok(a->ctx, gj_backward(m, stream, &b), "gj_backward");
    if (sync) {
        gj_gpu_ok(a->ctx, gj_stream_synchronize(a->ctx, stream), "gj_stream_synchronize");
    }
    f.params = c->grad;
    f.y = c->y2;
    gj_gpu_ok(a->ctx, gj_forward(m, stream, &f), "gj_forward (of the gradients)");
    gj_gpu_ok(a->ctx, gj_stream_synchronize(a->ctx, stream), "gj_stream_synchronize");
    gj_gpu_get(a->ctx, grad, c->grad, n_params * sizeof(float));
    gj_gpu_get(a->ctx, y2, c->y2, outputs * sizeof(float));
}

/* got within float summation-order rounding of want (sums of up to a few thousand terms of
 * |value| <= 1); a kernel that ran before its input was written or after its output was
 * read is far off. */
static void expect_close(const char *what, const float *got, const float *want, size_t count) {
    for (size_t i = 0; i < count; ++i) {
        if (!(fabsf(got[i] - want[i]) <= 1e-3f * fmaxf(1.0f, fabsf(want[i])))) {
            fail_msg("%s %zu: %.9g, with a synchronisation after each call %.9g", what, i, (double)got[i],
                     (double)want[i]);
        }
    }
}

/* A backward of enough points runs its small levels' kernel on a side stream of the
 * context, beside the main kernel (runtime/side_stream.h): it still follows what the
 * caller's stream queued before it and precedes what it queues after, on a stream of the
 * caller's and on the NULL stream, as the same calls each followed by a synchronisation. */
static void backward_keeps_the_stream_order(void **state) {
    api *a = *state;
    NEED_GPU();
    gj_module *m = NULL;
    gj_gpu_ok(a->ctx, gj_module_create(a->ctx, a->enc32, NULL, &m), "gj_module_create");
    chain c = {1u << 20, NULL, NULL, NULL, NULL, NULL, NULL, NULL}; /* past the side stream's threshold */
    const size_t n_params = gj_module_n_params(m), outputs = c.n * gj_module_output_width(m);
    const uint32_t d = gj_encoding_n_dims(a->enc32);
    float *host = malloc((c.n * d + n_params) * sizeof(float));
    assert_non_null(host);
    gj_gpu_rng rng = {11};
    for (uint64_t k = 0; k < c.n * d + n_params; ++k) {
        host[k] = k < c.n * d ? gj_gpu_rng_float(&rng, 0.0f, 1.0f) : gj_gpu_rng_float(&rng, -1.0f, 1.0f);
    }
    c.x = gj_gpu_upload_floats(a->ctx, host, c.n * d);
    c.params = gj_gpu_upload_floats(a->ctx, host + c.n * d, n_params);
    c.dy = gj_gpu_alloc(a->ctx, outputs * sizeof(float));
    c.grad = gj_gpu_alloc(a->ctx, n_params * sizeof(float));
    c.y2 = gj_gpu_alloc(a->ctx, outputs * sizeof(float));
    float *zeros = calloc(outputs, sizeof(float)), *garbage = malloc(n_params * sizeof(float));
    assert_true(zeros && garbage);
    for (size_t p = 0; p < n_params; ++p) {
        garbage[p] = 1e6f; /* overwritten by the backward */
    }
    c.zeros = zeros;
    c.garbage = garbage;
    float *grad[2], *y2[2];
    for (int k = 0; k < 2; ++k) {
        grad[k] = malloc(n_params * sizeof(float));
        y2[k] = malloc(outputs * sizeof(float));
        assert_true(grad[k] && y2[k]);
    }
    gj_stream stream = NULL;
    gj_gpu_ok(a->ctx, gj_stream_create(a->ctx, 1, &stream), "gj_stream_create");
    const gj_stream streams[] = {stream, NULL};
    for (int s = 0; s < 2; ++s) {
        run_chain(a, m, &c, streams[s], 1, grad[0], y2[0]);
        run_chain(a, m, &c, streams[s], 0, grad[1], y2[1]);
        expect_close("gradient", grad[1], grad[0], n_params);
        expect_close("forward of the gradients, output", y2[1], y2[0], outputs);
    }
    /* The first level (9^3 entries of 2 features) is one of the small ones: its sums came. */
    size_t nonzero = 0;
    for (size_t p = 0; p < 729 * 2; ++p) {
        nonzero += grad[1][p] != 0.0f && fabsf(grad[1][p]) < 1e5f;
    }
    assert_true(nonzero > 700 * 2);
    gj_stream_destroy(a->ctx, stream);
    for (int k = 0; k < 2; ++k) {
        free(grad[k]);
        free(y2[k]);
    }
    free(host);
    free(zeros);
    free(garbage);
    void *buffers[] = {c.x, c.params, c.dy, c.grad, c.y2};
    for (size_t i = 0; i < 5; ++i) {
        gj_gpu_free(a->ctx, buffers[i]);
    }
    gj_module_destroy(m);
}

static void device_memory_round_trip(void **state) {
    api *a = *state;
    NEED_GPU();
    unsigned char in[4099], out[4099];
    for (size_t i = 0; i < sizeof in; ++i) {
        in[i] = (unsigned char)(i * 7 + 3);
    }
    void *device = gj_gpu_alloc(a->ctx, sizeof in);
    assert_non_null(device);
    assert_int_equal((uintptr_t)device % 256, 0);
    gj_gpu_put(a->ctx, device, in, sizeof in);
    memset(out, 0, sizeof out);
    gj_gpu_get(a->ctx, out, device, sizeof out);
    assert_memory_equal(in, out, sizeof in);
    gj_gpu_free(a->ctx, device);
    assert_int_equal(gj_memcpy_to_device(a->ctx, NULL, in, 4), GJ_ERROR_INVALID_ARGUMENT);
}

int main(void) {
    if (!gj_gpu_available(NULL)) {
        return GJ_TEST_SKIP_ALL; /* ctest reports the binary as skipped; the reason is printed above */
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(no_context_means_the_primary_context, setup, teardown),
        cmocka_unit_test_setup_teardown(probe_reports_the_device, setup, teardown),
        cmocka_unit_test_setup_teardown(init_params_follow_pcg32, setup, teardown),
        cmocka_unit_test_setup_teardown(empty_batch_is_a_no_op, setup, teardown),
        cmocka_unit_test_setup_teardown(pass_not_compiled, setup, teardown),
        cmocka_unit_test_setup_teardown(misaligned_pointers_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(ptx_program_matches_cubin, setup, teardown),
        cmocka_unit_test_setup_teardown(gradient_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(backward_keeps_the_stream_order, setup, teardown),
        cmocka_unit_test_setup_teardown(device_memory_round_trip, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
