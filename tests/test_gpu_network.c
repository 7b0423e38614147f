/*
 * A network alone on the GPU (gj_network_module, docs/networks.md §8) against the double
 * reference (tools/reference/mlp_reference.c), for shapes that cover every width, hidden
 * layers 0 to 4, activations that keep their output and ones that keep z (Sine, SiLU), and
 * batches that are not multiples of 32: the initialisation (bit for bit against the
 * reference's tiny-cuda-nn rule), inference, forward (the same outputs, bit for bit),
 * dL/dparams (overwrite and accumulate) and dL/dinput, within fp16 tolerances. Each shape
 * prints one PASS or FAIL line with its largest relative errors. The programs are compiled
 * on worker threads first (the disk cache keeps them for the next run). Then models (an
 * encoding and its network in one kernel per pass) against the two references chained:
 * outputs, the network's and the encoding's parameter gradients, and dL/dx; again with the
 * backward without dL/dinput served unfused (the network's kernel, then the encoding's), as
 * while the fused one compiles behind a model's first steps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_reference.h"
#include "cache_support.h"
#include "gpu_harness.h"
#include "gridjit.h"
#include "mlp_reference.h"
#include "network_sources.h"

typedef struct shape {
    const char *otype;
    unsigned neurons, hidden;
    gj_activation act, out_act;
    unsigned in, out;
    uint64_t n;
} shape;

static const shape shapes[] = {
    {"FullyFusedMLP", 64, 2, GJ_ACTIVATION_RELU, GJ_ACTIVATION_NONE, 3, 1, 1000},
    {"FullyFusedMLP", 16, 1, GJ_ACTIVATION_TANH, GJ_ACTIVATION_SIGMOID, 5, 3, 77},
    {"FullyFusedMLP", 128, 4, GJ_ACTIVATION_SILU, GJ_ACTIVATION_NONE, 32, 16, 333},
    {"FullyFusedMLP", 64, 1, GJ_ACTIVATION_SINE, GJ_ACTIVATION_SOFTPLUS, 16, 2, 513}, /* no ones: SIREN's z stays small */
    {"FullyFusedMLP", 128, 2, GJ_ACTIVATION_LEAKY_RELU, GJ_ACTIVATION_TANH, 20, 4, 257},
    {"CutlassMLP", 32, 0, GJ_ACTIVATION_RELU, GJ_ACTIVATION_SQUAREPLUS, 9, 3, 65},
    {"FullyFusedMLP", 32, 4, GJ_ACTIVATION_SQUAREPLUS, GJ_ACTIVATION_SILU, 64, 5, 100},
    /* Outputs wider than one chunk of 128 columns: tiny-cuda-nn's test_random_input.py shape
     * (3 -> 8 x 128 -> 256), and a network without hidden layers (its forward chunks go
     * through the warp's second buffer) with a rest of 80 columns. */
    {"FullyFusedMLP", 128, 8, GJ_ACTIVATION_RELU, GJ_ACTIVATION_NONE, 3, 256, 300},
    {"CutlassMLP", 16, 0, GJ_ACTIVATION_RELU, GJ_ACTIVATION_SIGMOID, 16, 200, 70},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

static gj_network *make_network(gj_context *ctx, const shape *s) {
    char json[512];
    gj_test_network_json(json, sizeof json, s->otype, s->neurons, s->hidden, s->act, s->out_act);
    gj_network *net = NULL;
    return gj_network_create(ctx, json, s->in, s->out, &net) == GJ_OK ? net : NULL;
}

/* What a warm-up thread compiles: a network shape or a model. */
typedef struct warm_job {
    const shape *network;
    const char *model_json;
    unsigned model_dims;
} warm_job;

/* Compiles a shape's two programs: one point through inference, forward and backward. */
static void *warm(void *arg) {
    const warm_job *job = arg;
    gj_context *ctx = NULL;
    if (gj_context_create(&ctx) != GJ_OK) {
        return NULL;
    }
    gj_network *net = NULL;
    if (job->network) {
        net = make_network(ctx, job->network);
    } else if (gj_network_create(ctx, job->model_json, job->model_dims, 0, &net) != GJ_OK) {
        net = NULL;
    }
    gj_network_module *m = NULL;
    if (net && gj_network_module_create(ctx, net, &m) == GJ_OK) {
        void *buffer = NULL;
        const size_t bytes = 4u << 20;
        if (gj_device_alloc(ctx, bytes, &buffer) == GJ_OK) {
            char *b = buffer;
            gj_network_pass_desc d;
            gj_network_pass_desc_init(&d);
            d.n = 1;
            d.params = b;
            d.input = (const float *)(b + (1u << 20));
            d.output = (float *)(b + (2u << 20));
            d.dL_doutput = d.output;
            d.context = b + (3u << 20);
            d.dL_dinput = (float *)(b + (2u << 20) + 4096);
            if (!job->network) {
                d.encoding_params = b;
                d.dL_dencoding_params = b + (1u << 20);
            }
            (void)gj_network_inference(m, NULL, &d);
            (void)gj_network_forward(m, NULL, &d);
            (void)gj_network_backward(m, NULL, &d);
            (void)gj_stream_synchronize(ctx, NULL);
            gj_device_free(ctx, buffer);
        }
    }
    gj_network_module_destroy(m);
    gj_network_destroy(net);
    gj_context_destroy(ctx);
    return NULL;
}

static void compile_in_parallel(void);

static double *floats_to_doubles(const float *f, size_t n) {
    double *d = malloc((n ? n : 1) * sizeof *d);
    assert_non_null(d);
    for (size_t i = 0; i < n; ++i) {
        d[i] = f[i];
    }
    return d;
}

static float *download_floats(gj_context *ctx, const void *device, size_t n) {
    float *h = malloc((n ? n : 1) * sizeof *h);
    assert_non_null(h);
    for (size_t i = 0; i < n; ++i) {
        h[i] = NAN; /* a copy that does not happen cannot pass */
    }
    gj_gpu_get(ctx, h, device, n * sizeof *h);
    return h;
}

/* Returns 1 when the shape passes; prints its line either way. */
static int check_shape(gj_context *ctx, const shape *s) {
    gj_network *net = make_network(ctx, s);
    assert_non_null(net);
    gj_network_module *m = NULL;
    gj_gpu_ok(ctx, gj_network_module_create(ctx, net, &m), "gj_network_module_create");
    const uint64_t n = s->n, n_params = gj_network_n_params(net);
    const unsigned in = s->in, out = s->out;

    /* Initialisation: tiny-cuda-nn's rule, the same floats as the reference's. */
    void *params = gj_gpu_alloc(ctx, n_params * 2);
    float *params32 = gj_gpu_alloc(ctx, n_params * 4);
    gj_network_init_desc init;
    gj_network_init_desc_init(&init);
    init.params = params;
    init.params_fp32 = params32;
    init.seed = 42;
    gj_gpu_ok(ctx, gj_network_init_params(m, NULL, &init), "gj_network_init_params");
    gj_ref_mlp ref;
    gj_ref_mlp_from_network(&ref, net);
    ref.fp16_hidden = true; /* as the kernels keep h between layers */
    float *expected = malloc(n_params * sizeof *expected);
    gj_ref_pcg32 rng;
    gj_ref_pcg32_seed(&rng, 42, 1);
    gj_ref_mlp_init_params(&ref, &rng, 1.0f, expected);
    float *got32 = download_floats(ctx, params32, n_params);
    uint16_t *halves = malloc(n_params * 2);
    memset(halves, 0xFF, n_params * 2); /* NaNs */
    gj_gpu_get(ctx, halves, params, n_params * 2);
    int init_ok = memcmp(expected, got32, n_params * 4) == 0;
    double *w = malloc(n_params * sizeof *w);
    float *wf = malloc(n_params * sizeof *wf);
    gj_halves_to_floats(halves, wf, n_params);
    for (uint64_t i = 0; i < n_params; ++i) {
        uint16_t h;
        gj_floats_to_halves(&got32[i], &h, 1);
        init_ok &= h == halves[i];
        w[i] = wf[i];
    }

    /* Data: inputs representable in fp16 (the kernels round them), dL/dy of order 1. */
    gj_gpu_rng r = {1234 + s->neurons + s->in};
    float *x = malloc(n * in * sizeof *x), *dy = malloc(n * out * sizeof *dy);
    for (uint64_t i = 0; i < n * in; ++i) {
        x[i] = (float)gj_gpu_round(gj_gpu_rng_float(&r, -1.0f, 1.0f), GJ_PRECISION_FP16);
    }
    for (uint64_t i = 0; i < n * out; ++i) { /* fp16 values, so that dL_doutput_fp16 can hold them too */
        dy[i] = (float)gj_gpu_round(gj_gpu_rng_float(&r, -1.0f, 1.0f), GJ_PRECISION_FP16);
    }
    float *d_x = gj_gpu_upload_floats(ctx, x, n * in), *d_dy = gj_gpu_upload_floats(ctx, dy, n * out);
    uint16_t *dy16 = malloc(n * out * 2 + 2);
    assert_non_null(dy16);
    gj_floats_to_halves(dy, dy16, n * out);
    void *d_dy16 = gj_gpu_alloc(ctx, n * out * 2);
    gj_gpu_put(ctx, d_dy16, dy16, n * out * 2);
    free(dy16);
    float *d_dx3 = gj_gpu_alloc(ctx, n * in * 4);
    float *d_y = gj_gpu_alloc(ctx, n * out * 4), *d_y2 = gj_gpu_alloc(ctx, n * out * 4);
    float *d_dw = gj_gpu_alloc(ctx, n_params * 4), *d_dx = gj_gpu_alloc(ctx, n * in * 4);
    float *d_dx2 = gj_gpu_alloc(ctx, n * in * 4);
    void *d_ctx = gj_gpu_alloc(ctx, gj_network_module_context_bytes(m, n));

    gj_network_pass_desc d;
    gj_network_pass_desc_init(&d);
    d.n = n;
    d.input = d_x;
    d.params = params;
    d.output = d_y;
    gj_gpu_ok(ctx, gj_network_inference(m, NULL, &d), "gj_network_inference");
    d.output = d_y2;
    d.context = d_ctx;
    gj_gpu_ok(ctx, gj_network_forward(m, NULL, &d), "gj_network_forward");
    d.dL_doutput = d_dy;
    d.dL_dparams = d_dw;
    d.dL_dinput = d_dx;
    gj_gpu_ok(ctx, gj_network_backward(m, NULL, &d), "gj_network_backward");
    gj_gpu_sync(ctx);
    float *y = download_floats(ctx, d_y, n * out), *y2 = download_floats(ctx, d_y2, n * out);
    float *dw = download_floats(ctx, d_dw, n_params), *dx = download_floats(ctx, d_dx, n * in);
    /* Accumulate: the same sums again on top; dL/dinput alone: the same dL/dx. */
    d.dL_dparams_mode = GJ_GRAD_ACCUMULATE;
    d.dL_dinput = NULL;
    gj_gpu_ok(ctx, gj_network_backward(m, NULL, &d), "gj_network_backward (accumulate)");
    d.dL_dparams = NULL;
    d.dL_dinput = d_dx2;
    gj_gpu_ok(ctx, gj_network_backward(m, NULL, &d), "gj_network_backward (dL/dinput alone)");
    /* The same dL/dy as fp16 values read in place (dL_doutput_fp16): the same dL/dx bit for bit. */
    d.dL_doutput = NULL;
    d.dL_doutput_fp16 = d_dy16;
    d.dL_dinput = d_dx3;
    gj_gpu_ok(ctx, gj_network_backward(m, NULL, &d), "gj_network_backward (dL/dinput from fp16 dL/doutput)");
    d.dL_doutput_fp16 = NULL;
    d.dL_doutput = d_dy;
    /* Inference into fp16 outputs (output_fp16, 16-byte aligned): the floats' fp16 bits exactly. */
    d.output = NULL;
    d.output_fp16 = d_y2;
    gj_gpu_ok(ctx, gj_network_inference(m, NULL, &d), "gj_network_inference (fp16 outputs)");
    d.output_fp16 = NULL;
    gj_gpu_sync(ctx);
    float *dw2 = download_floats(ctx, d_dw, n_params), *dx2 = download_floats(ctx, d_dx2, n * in);
    float *dx3 = download_floats(ctx, d_dx3, n * in);
    const int same_dx_fp16_dy = memcmp(dx2, dx3, n * in * 4) == 0;
    free(dx3);
    uint16_t *halves_out = malloc(n * out * 2 + 2), *want_out = malloc(n * out * 2 + 2);
    assert_non_null(halves_out);
    assert_non_null(want_out);
    gj_gpu_get(ctx, halves_out, d_y2, n * out * 2);
    gj_floats_to_halves(y, want_out, n * out);
    const int same_fp16 = memcmp(halves_out, want_out, n * out * 2) == 0;
    free(halves_out), free(want_out);

    /* The reference, on the GPU's fp16 weights. */
    double *y_ref = calloc(n * out, sizeof *y_ref), *dx_ref = calloc(n * in, sizeof *dx_ref);
    double *dw_ref = calloc(n_params, sizeof *dw_ref);
    double xi[GJ_NETWORK_MAX_INPUT_DIMS], yi[GJ_NETWORK_MAX_OUTPUT_DIMS + 15], dyi[GJ_NETWORK_MAX_OUTPUT_DIMS + 15] = {0},
           dxi[GJ_NETWORK_MAX_INPUT_DIMS];
    for (uint64_t i = 0; i < n; ++i) {
        for (unsigned c = 0; c < in; ++c) {
            xi[c] = x[i * in + c];
        }
        gj_ref_mlp_forward(&ref, w, xi, yi);
        for (unsigned c = 0; c < out; ++c) {
            y_ref[i * out + c] = yi[c];
            dyi[c] = dy[i * out + c];
        }
        gj_ref_mlp_backward(&ref, w, xi, dyi, dw_ref, dxi);
        for (unsigned c = 0; c < in; ++c) {
            dx_ref[i * in + c] = dxi[c];
        }
    }
    double *yd = floats_to_doubles(y, n * out), *dwd = floats_to_doubles(dw, n_params);
    double *dxd = floats_to_doubles(dx, n * in), *dw2d = floats_to_doubles(dw2, n_params);
    for (uint64_t i = 0; i < n_params; ++i) {
        dw2d[i] *= 0.5;
    }
    const double e_y = gj_gpu_rel_error(yd, y_ref, n * out, 1e-3);
    const double e_dw = gj_gpu_rel_error(dwd, dw_ref, n_params, 1e-3);
    const double e_dx = gj_gpu_rel_error(dxd, dx_ref, n * in, 1e-3);
    const double e_acc = gj_gpu_rel_error(dw2d, dwd, n_params, 1e-6);
    const int same_forward = memcmp(y, y2, n * out * 4) == 0;
    const int same_dx = memcmp(dx, dx2, n * in * 4) == 0;
    const int ok = init_ok && same_forward && same_dx && same_fp16 && same_dx_fp16_dy && e_y <= 1e-2 && e_dw <= 2e-2 &&
                   e_dx <= 2e-2 && e_acc <= 1e-4;
    char *hyper = gj_network_hyperparams(net);
    printf("%s network %s, %llu points: output %.2e, dL/dparams %.2e, dL/dinput %.2e (tolerances 1e-2, 2e-2, 2e-2); "
           "accumulate %.1e; init %s; forward = inference %s; dL/dinput alone %s; fp16 outputs %s; "
           "from fp16 dL/doutput %s\n",
           ok ? "PASS" : "FAIL", hyper, (unsigned long long)n, e_y, e_dw, e_dx, e_acc, init_ok ? "exact" : "DIFFERS",
           same_forward ? "yes" : "NO", same_dx ? "same" : "DIFFERS", same_fp16 ? "the same" : "DIFFER",
           same_dx_fp16_dy ? "the same dL/dinput" : "DIFFERS");
    gj_free(hyper);

    free(y_ref), free(dx_ref), free(dw_ref), free(yd), free(dwd), free(dxd), free(dw2d);
    free(y), free(y2), free(dw), free(dx), free(dw2), free(dx2), free(x), free(dy);
    free(expected), free(got32), free(halves), free(w), free(wf);
    gj_gpu_free(ctx, d_x), gj_gpu_free(ctx, d_dy), gj_gpu_free(ctx, d_y), gj_gpu_free(ctx, d_y2);
    gj_gpu_free(ctx, d_dw), gj_gpu_free(ctx, d_dx), gj_gpu_free(ctx, d_dx2), gj_gpu_free(ctx, d_ctx);
    gj_gpu_free(ctx, d_dy16), gj_gpu_free(ctx, d_dx3);
    gj_gpu_free(ctx, params), gj_gpu_free(ctx, params32);
    gj_network_module_destroy(m);
    gj_network_destroy(net);
    return ok;
}

static void networks_match_the_reference(void **state) {
    (void)state;
    compile_in_parallel();
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    int failed = 0;
    for (size_t i = 0; i < N_SHAPES; ++i) {
        failed += !check_shape(ctx, &shapes[i]);
    }
    gj_context_destroy(ctx);
    if (failed) {
        fail_msg("%d of %zu network shapes failed (the FAIL lines above)", failed, N_SHAPES);
    }
}

/* ------------------------------------------------------------------ models */

typedef struct model_shape {
    const char *json;
    unsigned dims;
    uint64_t n;
} model_shape;

static const model_shape models[] = {
    {"{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 8, \"log2_hashmap_size\": 15}, \"network\": "
     "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64, \"n_hidden_layers\": 2, \"n_output_dims\": 4}}", 3, 1000},
    {"{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 4, \"n_features_per_level\": 4, \"precision\": "
     "\"fp32\", \"base_resolution\": 4}, \"network\": {\"n_neurons\": 32, \"n_hidden_layers\": 1, \"activation\": "
     "\"Tanh\", \"output_activation\": \"Sigmoid\", \"n_output_dims\": 3}}", 2, 257},
    {"{\"encoding\": {\"otype\": \"DenseGrid\", \"n_levels\": 5, \"n_features_per_level\": 1, \"base_resolution\": 4, "
     "\"per_level_scale\": 1.5}, \"network\": {\"n_neurons\": 128, \"n_hidden_layers\": 2, \"activation\": \"SiLU\", "
     "\"n_output_dims\": 2}}", 3, 100},
    {"{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 6, \"log2_hashmap_size\": 14}, \"network\": "
     "{\"n_neurons\": 64, \"n_hidden_layers\": 2, \"output_activation\": \"Tanh\", \"n_output_dims\": 150}}", 3, 90},
};
#define N_MODELS (sizeof models / sizeof models[0])

/* network_background.c's hold (a GJ_TEST_HOOKS build): a thread compiling behind the passes
 * waits while it is nonzero. */
extern atomic_int gj__network_test_hold_background;

/* A model's pass descriptor over n points: inputs, the network's and the encoding's parameters,
 * the outputs. */
static gj_network_pass_desc model_desc(uint64_t n, const float *x, const void *params, const void *eparams, float *y) {
    gj_network_pass_desc d;
    gj_network_pass_desc_init(&d);
    d.n = n;
    d.input = x;
    d.params = params;
    d.encoding_params = eparams;
    d.output = y;
    return d;
}

/* A model's n_mlp network weights (fp16, on the device) by tiny-cuda-nn's initialisation. */
static void *initialised_weights(gj_context *ctx, gj_network_module *m, uint64_t n_mlp) {
    void *params = gj_gpu_alloc(ctx, n_mlp * 2);
    gj_network_init_desc init;
    gj_network_init_desc_init(&init);
    init.params = params;
    gj_gpu_ok(ctx, gj_network_init_params(m, NULL, &init), "gj_network_init_params");
    return params;
}

/* unfused: the module's fused backward is held on its thread (tiers on, a cache without it), so
 * that every backward without dL/dinput runs unfused (docs/networks.md §10, "Tiers"). */
static int check_model(gj_context *ctx, const model_shape *s, int unfused) {
    gj_network *net = NULL;
    gj_gpu_ok(ctx, gj_network_create(ctx, s->json, s->dims, 0, &net), "gj_network_create");
    const gj_encoding *enc = gj_network_encoding(net);
    gj_network_module *m = NULL;
    gj_gpu_ok(ctx, gj_network_module_create(ctx, net, &m), "gj_network_module_create");
    const uint64_t n = s->n, n_mlp = gj_network_n_mlp_params(net), n_enc = gj_encoding_n_params(enc);
    const unsigned D = s->dims, out = gj_network_n_output_dims(net), feats = gj_network_input_width(net);
    const gj_precision precision = gj_encoding_precision(enc);
    const size_t grad_size = gj_network_module_encoding_gradient_size(m);

    /* Network weights: tiny-cuda-nn's initialisation; encoding parameters of order 1. */
    void *params = initialised_weights(ctx, m, n_mlp);
    uint16_t *halves = malloc(n_mlp * 2);
    memset(halves, 0xFF, n_mlp * 2); /* NaNs */
    float *wf = malloc(n_mlp * sizeof *wf);
    double *w = malloc(n_mlp * sizeof *w);
    gj_gpu_get(ctx, halves, params, n_mlp * 2);
    gj_halves_to_floats(halves, wf, n_mlp);
    for (uint64_t i = 0; i < n_mlp; ++i) {
        w[i] = wf[i];
    }
    gj_gpu_rng r = {77 + s->n};
    double *ep = malloc(n_enc * sizeof *ep);
    for (uint64_t i = 0; i < n_enc; ++i) {
        ep[i] = gj_gpu_round(gj_gpu_rng_float(&r, -1.0f, 1.0f), precision);
    }
    void *eparams = gj_gpu_upload(ctx, ep, n_enc, precision);
    float *x = malloc(n * D * sizeof *x), *dy = malloc(n * out * sizeof *dy);
    for (uint64_t i = 0; i < n * D; ++i) {
        x[i] = gj_gpu_rng_float(&r, 0.0f, 1.0f);
    }
    for (uint64_t i = 0; i < n * out; ++i) {
        dy[i] = gj_gpu_rng_float(&r, -1.0f, 1.0f);
    }
    float *d_x = gj_gpu_upload_floats(ctx, x, n * D), *d_dy = gj_gpu_upload_floats(ctx, dy, n * out);
    float *d_y = gj_gpu_alloc(ctx, n * out * 4), *d_y2 = gj_gpu_alloc(ctx, n * out * 4);
    float *d_dw = gj_gpu_alloc(ctx, n_mlp * 4), *d_dx = gj_gpu_alloc(ctx, n * D * 4);
    void *d_de = gj_gpu_alloc(ctx, n_enc * grad_size), *d_ctx = gj_gpu_alloc(ctx, gj_network_module_context_bytes(m, n));

    gj_network_pass_desc d = model_desc(n, d_x, params, eparams, d_y);
    gj_gpu_ok(ctx, gj_network_inference(m, NULL, &d), "gj_network_inference (model)");
    d.output = d_y2;
    d.context = d_ctx;
    gj_gpu_ok(ctx, gj_network_forward(m, NULL, &d), "gj_network_forward (model)");
    d.dL_doutput = d_dy;
    d.dL_dparams = d_dw;
    d.dL_dencoding_params = d_de;
    d.dL_dinput = d_dx;
    gj_gpu_ok(ctx, gj_network_backward(m, NULL, &d), "gj_network_backward (model)");
    /* Without dL/dinput the backward is another kernel (the fused one, docs/networks.md §9):
     * the same parameter gradients. */
    float *d_dw2 = gj_gpu_alloc(ctx, n_mlp * 4);
    void *d_de2 = gj_gpu_alloc(ctx, n_enc * grad_size);
    d.dL_dparams = d_dw2;
    d.dL_dencoding_params = d_de2;
    d.dL_dinput = NULL;
    gj_gpu_ok(ctx, gj_network_backward(m, NULL, &d), "gj_network_backward (model, no dL/dinput)");
    /* The encoding's gradients in fp32 and a loss scale of 128 undone by the library's finishing
     * pass (dL_dencoding_params_fp32, unscale_gradients): the gradients of the loss itself,
     * with dL/dinput and without. */
    float *d_dw3 = gj_gpu_alloc(ctx, n_mlp * 4), *d_dw4 = gj_gpu_alloc(ctx, n_mlp * 4);
    float *d_de3 = gj_gpu_alloc(ctx, n_enc * 4), *d_de4 = gj_gpu_alloc(ctx, n_enc * 4);
    float *d_dx3 = gj_gpu_alloc(ctx, n * D * 4);
    void *d_sums = grad_size == 2 ? gj_gpu_alloc(ctx, n_enc * 2) : NULL;
    d.dL_doutput_scale = 128.0f;
    d.unscale_gradients = 1;
    d.dL_dencoding_params = d_sums;
    d.dL_dparams = d_dw3;
    d.dL_dencoding_params_fp32 = d_de3;
    d.dL_dinput = d_dx3;
    gj_gpu_ok(ctx, gj_network_backward(m, NULL, &d), "gj_network_backward (model, fp32, unscaled)");
    d.dL_dparams = d_dw4;
    d.dL_dencoding_params_fp32 = d_de4;
    d.dL_dinput = NULL;
    gj_gpu_ok(ctx, gj_network_backward(m, NULL, &d), "gj_network_backward (model, fp32, unscaled, no dL/dinput)");
    gj_gpu_sync(ctx);
    float *y = download_floats(ctx, d_y, n * out), *y2 = download_floats(ctx, d_y2, n * out);
    float *dw = download_floats(ctx, d_dw, n_mlp), *dx = download_floats(ctx, d_dx, n * D);
    float *dw2 = download_floats(ctx, d_dw2, n_mlp);
    double *de = malloc(n_enc * sizeof *de), *de2 = malloc(n_enc * sizeof *de2);
    gj_gpu_download(ctx, de, d_de, n_enc, grad_size == 2 ? GJ_PRECISION_FP16 : GJ_PRECISION_FP32);
    gj_gpu_download(ctx, de2, d_de2, n_enc, grad_size == 2 ? GJ_PRECISION_FP16 : GJ_PRECISION_FP32);

    /* The references chained: encoding (features rounded as the GPU stores them), network. */
    gj_ref_encoding eref;
    gj_ref_from_encoding(&eref, enc);
    gj_ref_mlp mref;
    gj_ref_mlp_from_network(&mref, net);
    mref.fp16_hidden = true; /* as the kernels keep h between layers */
    double *y_ref = calloc(n * out, sizeof *y_ref), *dx_ref = calloc(n * D, sizeof *dx_ref);
    double *dw_ref = calloc(n_mlp, sizeof *dw_ref), *de_ref = calloc(n_enc, sizeof *de_ref);
    double f[GJ_NETWORK_MAX_INPUT_DIMS], yi[GJ_NETWORK_MAX_OUTPUT_DIMS + 15], dyi[GJ_NETWORK_MAX_OUTPUT_DIMS + 15] = {0},
           df[GJ_NETWORK_MAX_INPUT_DIMS], dxi[GJ_REF_MAX_DIMS];
    for (uint64_t i = 0; i < n; ++i) {
        gj_ref_forward(&eref, ep, x + i * D, 1.0, f);
        for (unsigned k = 0; k < feats; ++k) {
            f[k] = gj_gpu_round(f[k], GJ_PRECISION_FP16);
        }
        gj_ref_mlp_forward(&mref, w, f, yi);
        for (unsigned c = 0; c < out; ++c) {
            y_ref[i * out + c] = yi[c];
            dyi[c] = dy[i * out + c];
        }
        gj_ref_mlp_backward(&mref, w, f, dyi, dw_ref, df);
        gj_ref_backward(&eref, ep, x + i * D, 1.0, i, n, df, de_ref, dxi);
        for (unsigned c = 0; c < D; ++c) {
            dx_ref[i * D + c] = dxi[c];
        }
    }
    double *yd = floats_to_doubles(y, n * out), *dwd = floats_to_doubles(dw, n_mlp), *dxd = floats_to_doubles(dx, n * D);
    const double e_y = gj_gpu_rel_error(yd, y_ref, n * out, 1e-3);
    const double e_dw = gj_gpu_rel_error(dwd, dw_ref, n_mlp, 1e-3);
    const double e_de = gj_gpu_rel_error(de, de_ref, n_enc, 1e-3);
    const double e_dx = gj_gpu_rel_error(dxd, dx_ref, n * D, 1e-3);
    double *dw2d = floats_to_doubles(dw2, n_mlp);
    const double e_dw2 = gj_gpu_rel_error(dw2d, dw_ref, n_mlp, 1e-3), e_de2 = gj_gpu_rel_error(de2, de_ref, n_enc, 1e-3);
    const int same_forward = memcmp(y, y2, n * out * 4) == 0;
    const double tol_de = grad_size == 2 ? 5e-2 : 3e-2; /* fp16 sums of many points */
    float *dw3 = download_floats(ctx, d_dw3, n_mlp), *dw4 = download_floats(ctx, d_dw4, n_mlp);
    float *de3 = download_floats(ctx, d_de3, n_enc), *de4 = download_floats(ctx, d_de4, n_enc);
    float *dx3 = download_floats(ctx, d_dx3, n * D);
    double *u[5] = {floats_to_doubles(dw3, n_mlp), floats_to_doubles(de3, n_enc), floats_to_doubles(dx3, n * D),
                    floats_to_doubles(dw4, n_mlp), floats_to_doubles(de4, n_enc)};
    const double e_unscaled[5] = {gj_gpu_rel_error(u[0], dw_ref, n_mlp, 1e-3), gj_gpu_rel_error(u[1], de_ref, n_enc, 1e-3),
                                  gj_gpu_rel_error(u[2], dx_ref, n * D, 1e-3), gj_gpu_rel_error(u[3], dw_ref, n_mlp, 1e-3),
                                  gj_gpu_rel_error(u[4], de_ref, n_enc, 1e-3)};
    const int unscaled_ok = e_unscaled[0] <= 2e-2 && e_unscaled[1] <= tol_de && e_unscaled[2] <= 3e-2 &&
                            e_unscaled[3] <= 2e-2 && e_unscaled[4] <= tol_de;
    printf("%s model %s: fp32 encoding gradients, loss scale 128 undone: network %.2e, encoding %.2e, dL/dx %.2e; "
           "without dL/dinput%s: network %.2e, encoding %.2e\n",
           unscaled_ok ? "PASS" : "FAIL", s->json, e_unscaled[0], e_unscaled[1], e_unscaled[2],
           unfused ? " (unfused)" : "", e_unscaled[3], e_unscaled[4]);
    for (int i = 0; i < 5; ++i) {
        free(u[i]);
    }
    free(dw3), free(dw4), free(de3), free(de4), free(dx3);
    gj_gpu_free(ctx, d_dw3), gj_gpu_free(ctx, d_dw4), gj_gpu_free(ctx, d_de3), gj_gpu_free(ctx, d_de4);
    gj_gpu_free(ctx, d_dx3);
    if (d_sums) {
        gj_gpu_free(ctx, d_sums);
    }
    const int ok = same_forward && e_y <= 1e-2 && e_dw <= 2e-2 && e_de <= tol_de && e_dx <= 3e-2 && e_dw2 <= 2e-2 &&
                   e_de2 <= tol_de && unscaled_ok;
    printf("%s model %s (%u dims), %llu points: output %.2e, network dL/dparams %.2e, encoding dL/dparams %.2e "
           "(%s), dL/dx %.2e (tolerances 1e-2, 2e-2, %.0e, 3e-2); without dL/dinput%s: network %.2e, encoding %.2e; "
           "forward = inference %s\n",
           ok ? "PASS" : "FAIL", s->json, D, (unsigned long long)n, e_y, e_dw, e_de, grad_size == 2 ? "fp16" : "fp32",
           e_dx, tol_de, unfused ? " (unfused)" : "", e_dw2, e_de2, same_forward ? "yes" : "NO");

    free(y_ref), free(dx_ref), free(dw_ref), free(de_ref), free(yd), free(dwd), free(dxd), free(dw2d);
    free(y), free(y2), free(dw), free(dx), free(de), free(x), free(dy), free(ep), free(halves), free(wf), free(w);
    free(dw2), free(de2);
    gj_gpu_free(ctx, d_dw2), gj_gpu_free(ctx, d_de2);
    gj_gpu_free(ctx, d_x), gj_gpu_free(ctx, d_dy), gj_gpu_free(ctx, d_y), gj_gpu_free(ctx, d_y2);
    gj_gpu_free(ctx, d_dw), gj_gpu_free(ctx, d_dx), gj_gpu_free(ctx, d_de), gj_gpu_free(ctx, d_ctx);
    gj_gpu_free(ctx, params), gj_gpu_free(ctx, eparams);
    if (unfused) {
        atomic_store(&gj__network_test_hold_background, 0);
        gj_gpu_ok(ctx, gj_network_module_wait_compiles(m), "gj_network_module_wait_compiles");
    }
    gj_network_module_destroy(m);
    gj_network_destroy(net);
    return ok;
}

/* Every network shape's and model's programs, one thread each (they compile cold once). */
static void compile_in_parallel(void) {
    enum { N = N_SHAPES + N_MODELS };
    pthread_t threads[N];
    warm_job jobs[N];
    for (size_t i = 0; i < N; ++i) {
        jobs[i].network = i < N_SHAPES ? &shapes[i] : NULL;
        jobs[i].model_json = i < N_SHAPES ? NULL : models[i - N_SHAPES].json;
        jobs[i].model_dims = i < N_SHAPES ? 0 : models[i - N_SHAPES].dims;
        pthread_create(&threads[i], NULL, warm, &jobs[i]);
    }
    for (size_t i = 0; i < N; ++i) {
        pthread_join(threads[i], NULL);
    }
}

static void models_match_the_references(void **state) {
    (void)state;
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    int failed = 0;
    for (size_t i = 0; i < N_MODELS; ++i) {
        failed += !check_model(ctx, &models[i], 0);
    }
    gj_context_destroy(ctx);
    if (failed) {
        fail_msg("%d of %zu models failed (the FAIL lines above)", failed, N_MODELS);
    }
}

/* A context with a cache of its own (scratch directory `name`, *dir to free) for a module
 * knob, the environment variable `knob` set to value (read when each module is made). */
static gj_context *knob_context(const char *name, const char *knob, const char *value, char **dir) {
    *dir = gjt_scratch(name);
    setenv(knob, value, 1);
    return gjt_context(*dir, NULL);
}

/* The same with the backward without dL/dinput served unfused, as while a model's fused backward
 * compiles behind its first steps: a cache of its own, without the fused programs. */
static void models_match_the_references_unfused(void **state) {
    (void)state;
    char *dir = NULL;
    gj_context *ctx = knob_context("unfused_models", "GRIDJIT_NETWORK_TIERS", "1", &dir);
    int failed = 0;
    for (size_t i = 0; i < N_MODELS; ++i) {
        atomic_store(&gj__network_test_hold_background, 1);
        failed += !check_model(ctx, &models[i], 1);
    }
    unsetenv("GRIDJIT_NETWORK_TIERS");
    gj_context_destroy(ctx);
    free(dir);
    if (failed) {
        fail_msg("%d of %zu models failed unfused (the FAIL lines above)", failed, N_MODELS);
    }
}

/* A network module's context for 100 points (4 tiles). */
static uint64_t context_of(gj_context *ctx, const shape *sh) {
    gj_network *net = make_network(ctx, sh);
    gj_network_module *m = NULL;
    gj_gpu_ok(ctx, gj_network_module_create(ctx, net, &m), "gj_network_module_create");
    const uint64_t bytes = gj_network_module_context_bytes(m, 100);
    gj_network_module_destroy(m);
    gj_network_destroy(net);
    return bytes;
}

/* Every network and model against the reference with GRIDJIT_NETWORK_RECOMPUTE set to value
 * (read when a module is made; a cache of its own, scratch), and the contexts it keeps: the
 * first shape's (64 x 2 behind 3 inputs, padded to 16) first_bytes for 100 points; the second's
 * (16 x 1, Tanh and Sigmoid out: nothing to recompute) everything, 16 + 16 + 16 rows. */
static void all_match_with_recompute(const char *scratch, const char *value, const char *what,
                                     uint64_t first_bytes) {
    char *dir = NULL;
    gj_context *ctx = knob_context(scratch, "GRIDJIT_NETWORK_RECOMPUTE", value, &dir);
    int failed = 0;
    for (size_t i = 0; i < N_SHAPES; ++i) {
        failed += !check_shape(ctx, &shapes[i]);
    }
    for (size_t i = 0; i < N_MODELS; ++i) {
        failed += !check_model(ctx, &models[i], 0);
    }
    assert_int_equal(context_of(ctx, &shapes[0]), first_bytes);
    assert_int_equal(context_of(ctx, &shapes[1]), 4 * 32 * (16 + 16 + 16) * 2);
    unsetenv("GRIDJIT_NETWORK_RECOMPUTE");
    gj_context_destroy(ctx);
    free(dir);
    if (failed) {
        fail_msg("%d of %zu networks and models failed %s (the FAIL lines above)", failed, N_SHAPES + N_MODELS,
                 what);
    }
}

/* The pass kernels recomputing the hidden layers' outputs in the backward wherever the
 * activations allow it (GRIDJIT_NETWORK_RECOMPUTE=1; by default only up to 64 wide): the
 * eligible ones (ReLU and no output activation) keep a context of their input rows alone, 128
 * wide too, the others (Sine, SiLU, an output activation) all of it. */
static void networks_and_models_match_the_references_recomputing(void **state) {
    (void)state;
    all_match_with_recompute("recomputing", "1", "recomputing", 4 * 32 * 16 * 2);
}

/* The same keeping the whole context (GRIDJIT_NETWORK_RECOMPUTE=0; the small levels' sums then
 * none either), as every network did before the recompute was measured faster up to 64 wide:
 * 64 x 2 behind 3 inputs keeps its input, two hidden layers' outputs and the output. */
static void networks_and_models_match_the_references_keeping(void **state) {
    (void)state;
    all_match_with_recompute("keeping", "0", "keeping the context", 4 * 32 * (16 + 64 + 64 + 16) * 2);
}

/* The models with their fused backward summing the encoding's leading small levels in the
 * block's shared memory wherever the block fits (GRIDJIT_NETWORK_SMALL_SUMS=1; by default only
 * where the model recomputes; the large class, as the H200's cubins are), against the reference
 * as before. */
static void models_match_the_references_summing_small_levels(void **state) {
    (void)state;
    char *dir = NULL;
    gj_context *ctx = knob_context("small_sums", "GRIDJIT_NETWORK_SMALL_SUMS", "1", &dir);
    int failed = 0;
    for (size_t i = 0; i < N_MODELS; ++i) {
        failed += !check_model(ctx, &models[i], 0);
    }
    unsetenv("GRIDJIT_NETWORK_SMALL_SUMS");
    gj_context_destroy(ctx);
    free(dir);
    if (failed) {
        fail_msg("%d of %zu models failed summing small levels (the FAIL lines above)", failed, N_MODELS);
    }
}

/* A model's inference in two passes (GRIDJIT_NETWORK_INFERENCE_FEATURES=1: the encoding module's
 * forward into features, then the network over them; fetch: GRIDJIT_NETWORK_FEATURES_FETCH=1,
 * each warp's next tile's features copied ahead) against the fused kernel (the knob 0), bit for
 * bit: the same features, the same network. n points; the features go through the stream's
 * buffer in chunks of 128 MiB, so 2^21 + 1003 points of 32 fp16 features take two, the last of a
 * count that is not a multiple of 8 (its tiles' features read value by value). The second model
 * is fp32: its staging holds fp32 features (with the fetch). training: the forward for
 * training instead (GRIDJIT_NETWORK_FORWARD_FEATURES=1 against the fused forward), its outputs and
 * context compared (a model that recomputes: its context is the input rows). staged: the fused
 * module with its encoding's small levels gathered from its block's shared memory (the rule for fp16
 * values; GRIDJIT_NETWORK_STAGE_SMALL_LEVELS=1, which stages fp32 values too), else without
 * (GRIDJIT_NETWORK_STAGE_SMALL_LEVELS=0). */
static int infers_alike(gj_context *ctx, const char *json, unsigned dims, uint64_t n, int fetch, int training,
                        int staged) {
    gj_network *net = NULL;
    gj_gpu_ok(ctx, gj_network_create(ctx, json, dims, 0, &net), "gj_network_create");
    gj_network_module *two = NULL, *one = NULL;
    setenv("GRIDJIT_NETWORK_INFERENCE_FEATURES", "1", 1);
    setenv("GRIDJIT_NETWORK_FEATURES_FETCH", fetch ? "1" : "0", 1);
    setenv("GRIDJIT_NETWORK_FORWARD_FEATURES", training ? "1" : "0", 1);
    gj_gpu_ok(ctx, gj_network_module_create(ctx, net, &two), "gj_network_module_create");
    unsetenv("GRIDJIT_NETWORK_FORWARD_FEATURES");
    setenv("GRIDJIT_NETWORK_INFERENCE_FEATURES", "0", 1);
    setenv("GRIDJIT_NETWORK_STAGE_SMALL_LEVELS", staged ? "1" : "0", 1);
    gj_gpu_ok(ctx, gj_network_module_create(ctx, net, &one), "gj_network_module_create (fused)");
    unsetenv("GRIDJIT_NETWORK_STAGE_SMALL_LEVELS");
    unsetenv("GRIDJIT_NETWORK_INFERENCE_FEATURES");
    unsetenv("GRIDJIT_NETWORK_FEATURES_FETCH");
    const gj_encoding *enc = gj_network_encoding(net);
    const uint64_t n_mlp = gj_network_n_mlp_params(net), n_enc = gj_encoding_n_params(enc);
    const unsigned out = gj_network_n_output_dims(net);
    void *params = initialised_weights(ctx, two, n_mlp);
    gj_gpu_rng r = {5 + n};
    double *ep = malloc(n_enc * sizeof *ep);
    float *x = malloc(n * dims * sizeof *x);
    assert_non_null(ep);
    assert_non_null(x);
    for (uint64_t i = 0; i < n_enc; ++i) {
        ep[i] = gj_gpu_rng_float(&r, -1.0f, 1.0f);
    }
    for (uint64_t i = 0; i < n * dims; ++i) {
        x[i] = gj_gpu_rng_float(&r, 0.0f, 1.0f);
    }
    void *eparams = gj_gpu_upload(ctx, ep, n_enc, gj_encoding_precision(enc));
    float *d_x = gj_gpu_upload_floats(ctx, x, n * dims);
    float *d_y1 = gj_gpu_alloc(ctx, n * out * 4), *d_y2 = gj_gpu_alloc(ctx, n * out * 4);
    gj_network_pass_desc d = model_desc(n, d_x, params, eparams, d_y2);
    const uint64_t ctx_floats = training ? gj_network_module_context_bytes(one, n) / 4 : 0;
    void *d_ctx1 = training ? gj_gpu_alloc(ctx, ctx_floats * 4) : NULL;
    void *d_ctx2 = training ? gj_gpu_alloc(ctx, ctx_floats * 4) : NULL;
    d.context = d_ctx2;
    gj_gpu_ok(ctx, training ? gj_network_forward(two, NULL, &d) : gj_network_inference(two, NULL, &d),
              "the pass in two");
    d.output = d_y1;
    d.context = d_ctx1;
    gj_gpu_ok(ctx, training ? gj_network_forward(one, NULL, &d) : gj_network_inference(one, NULL, &d),
              "the pass fused");
    gj_gpu_sync(ctx);
    float *y1 = download_floats(ctx, d_y1, n * out), *y2 = download_floats(ctx, d_y2, n * out);
    uint64_t differ = 0;
    for (uint64_t i = 0; i < n * out; ++i) {
        differ += memcmp(&y1[i], &y2[i], sizeof *y1) != 0 || y1[i] != y1[i];
    }
    uint64_t context_differ = 0;
    if (training) {
        float *c1 = download_floats(ctx, d_ctx1, ctx_floats), *c2 = download_floats(ctx, d_ctx2, ctx_floats);
        context_differ = memcmp(c1, c2, ctx_floats * 4) != 0;
        free(c1), free(c2);
    }
    differ += context_differ;
    /* Into fp16 outputs (output_fp16) from both modules: the kernels round every output to fp16
     * before either store, so these are the floats' fp16 bits exactly; the two passes' 16-byte
     * aligned (whole pieces, and a second chunk of the batch at its offset), the fused kernel's a
     * half past an aligned start (value by value). */
    uint16_t *want = malloc(n * out * sizeof *want);
    assert_non_null(want);
    gj_floats_to_halves(y1, want, n * out);
    uint16_t *d_h = gj_gpu_alloc(ctx, (n * out + 8) * 2);
    uint64_t half_differ = 0;
    for (int fused = 0; fused < 2; ++fused) {
        d.output = NULL;
        d.output_fp16 = d_h + fused;
        d.context = training ? (fused ? d_ctx1 : d_ctx2) : NULL;
        gj_network_module *m = fused ? one : two;
        gj_gpu_ok(ctx, training ? gj_network_forward(m, NULL, &d) : gj_network_inference(m, NULL, &d),
                  "the pass into fp16 outputs");
        gj_gpu_sync(ctx);
        uint16_t *h = malloc((n * out + 8) * sizeof *h);
        assert_non_null(h);
        gj_gpu_get(ctx, h, d_h, (n * out + 8) * sizeof *h);
        half_differ += memcmp(h + fused, want, n * out * sizeof *h) != 0;
        free(h);
    }
    gj_gpu_free(ctx, d_h);
    free(want);
    if (training) {
        gj_gpu_free(ctx, d_ctx1), gj_gpu_free(ctx, d_ctx2);
    }
    differ += half_differ;
    printf("%s %s in two passes%s against the fused kernel%s: %s, %llu points, %llu of %llu outputs differ%s%s\n",
           differ ? "FAIL" : "PASS", training ? "forward for training" : "inference",
           fetch ? " (features fetched ahead)" : "",
           staged ? " (its small levels gathered from shared memory)" : "", json, (unsigned long long)n,
           (unsigned long long)(differ - context_differ - half_differ), (unsigned long long)(n * out),
           context_differ ? "; the contexts differ" : "",
           half_differ ? "; the fp16 outputs differ from the floats' fp16 values" : "");
    free(y1), free(y2), free(x), free(ep);
    gj_gpu_free(ctx, d_x), gj_gpu_free(ctx, d_y1), gj_gpu_free(ctx, d_y2), gj_gpu_free(ctx, params);
    gj_gpu_free(ctx, eparams);
    gj_network_module_destroy(two);
    gj_network_module_destroy(one);
    gj_network_destroy(net);
    return differ == 0;
}

static void models_infer_alike_in_one_pass_and_two(void **state) {
    (void)state;
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    int failed = 0;
    for (size_t i = 0; i < N_MODELS; ++i) {
        failed += !infers_alike(ctx, models[i].json, models[i].dims, models[i].n, 0, 0, 0);
        failed += !infers_alike(ctx, models[i].json, models[i].dims, models[i].n, 1, 0, 1);
    }
    static const char c1[] = "{\"encoding\": {\"otype\": \"HashGrid\"}, \"network\": {\"otype\": \"FullyFusedMLP\", "
                             "\"n_neurons\": 64, \"n_hidden_layers\": 2, \"n_output_dims\": 16}}";
    for (int fetch = 0; fetch < 2; ++fetch) {
        for (int training = 0; training < 2; ++training) {
            /* The fused module's small levels staged (the rule) with the fetch, not without it. */
            failed += !infers_alike(ctx, c1, 3, (1u << 21) + 1003, fetch, training, fetch);
            failed += !infers_alike(ctx, c1, 3, 4096, fetch, training, 0);
        }
    }
    gj_context_destroy(ctx);
    if (failed) {
        fail_msg("%d models infer differently in two passes (the FAIL lines above)", failed);
    }
}

int main(void) {
    if (!gj_gpu_available(NULL)) {
        return GJ_TEST_SKIP_ALL;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(networks_match_the_reference),
        cmocka_unit_test(models_match_the_references),
        cmocka_unit_test(models_infer_alike_in_one_pass_and_two),
        cmocka_unit_test(models_match_the_references_unfused),
        cmocka_unit_test(networks_and_models_match_the_references_recomputing),
        cmocka_unit_test(networks_and_models_match_the_references_keeping),
        cmocka_unit_test(models_match_the_references_summing_small_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
