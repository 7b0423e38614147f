/*
 * Inputs outside [0, 1]: NaN, +-Inf, negative, above 1, huge, subnormal. Every pass must
 * run without a fault (run this binary under compute-sanitizer memcheck for the
 * out-of-bounds proof), and points whose coordinates are finite and moderate
 * (|x| <= 1e30, so that scale * x stays finite) must give finite results equal to the
 * CPU reference, whatever the other points hold. Gradients with respect to the
 * parameters are checked on a second run over those points alone (a NaN point may
 * legitimately spread NaN into the parameters it touches).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridjit.h"
#include "cpu_reference.h"
#include "gpu_bounds.h"
#include "gpu_harness.h"

#define N_POINTS 997

typedef struct input_case {
    const char *name;
    const char *json;
    uint32_t n_dims;
    gj_order order;
    uint32_t ppt;
} input_case;

static const input_case cases[] = {
    {"hash_linear_d3_fp32",
     "{\"otype\": \"HashGrid\", \"n_levels\": 6, \"n_features_per_level\": 2, \"log2_hashmap_size\": 12, "
     "\"base_resolution\": 4, \"precision\": \"fp32\"}",
     3, GJ_ORDER_LEVEL_MAJOR, 1},
    {"dense_smoothstep_d2_fp16",
     "{\"otype\": \"DenseGrid\", \"n_levels\": 4, \"n_features_per_level\": 4, \"base_resolution\": 4, "
     "\"per_level_scale\": 2.0, \"interpolation\": \"Smoothstep\", \"precision\": \"fp16\"}",
     2, GJ_ORDER_POINT_MAJOR, 2},
    {"tiled_nearest_d4_f1_fp16",
     "{\"otype\": \"TiledGrid\", \"n_levels\": 3, \"n_features_per_level\": 1, \"base_resolution\": 6, "
     "\"per_level_scale\": 2.0, \"interpolation\": \"Nearest\", \"precision\": \"fp16\"}",
     4, GJ_ORDER_LEVEL_MAJOR, 1},
    {"hash_baseconvert_smoothstep_d7_stochastic",
     "{\"otype\": \"HashGrid\", \"n_levels\": 3, \"n_features_per_level\": 8, \"log2_hashmap_size\": 10, "
     "\"base_resolution\": 2, \"hash\": \"BaseConvert\", \"interpolation\": \"Smoothstep\", "
     "\"stochastic_interpolation\": true, \"precision\": \"fp32\"}",
     7, GJ_ORDER_POINT_MAJOR, 1},
    {"tiled_odd_base_d3_fp16", /* levels at odd entry offsets: no misaligned vector reductions */
     "{\"otype\": \"TiledGrid\", \"n_levels\": 4, \"n_features_per_level\": 2, \"base_resolution\": 25, "
     "\"per_level_scale\": 1.5, \"precision\": \"fp16\"}",
     3, GJ_ORDER_LEVEL_MAJOR, 1},
    {"hash_rng_fixed_point_d2",
     "{\"otype\": \"HashGrid\", \"n_levels\": 5, \"n_features_per_level\": 2, \"log2_hashmap_size\": 10, "
     "\"base_resolution\": 8, \"hash\": \"Rng\", \"fixed_point_pos\": true, \"precision\": \"fp32\"}",
     2, GJ_ORDER_LEVEL_MAJOR, 4},
};
#define N_CASES (sizeof cases / sizeof cases[0])

static const float specials[] = {
    NAN, INFINITY, -INFINITY, -0.0f, 0.0f, -0.5f, -1.0f, -1e30f, 1.0f, 1.5f, 2.0f, 1e9f, -1e9f, 1e30f,
    FLT_MAX, -FLT_MAX, 1e-40f /* subnormal */, 0.99999994f, -1e-7f, 3.0f,
};
#define N_SPECIALS (sizeof specials / sizeof specials[0])

typedef struct input_suite {
    gj_context *ctx;
    gj_runtime_info info;
    int have_gpu;
    gj_encoding *enc[N_CASES];
    gj_codegen_options opts[N_CASES];
    gj_gpu_compile_job jobs[N_CASES];
} input_suite;

static input_suite the_suite;

/* ------------------------------------------------------------------ data */

typedef struct input_data {
    gj_ref_encoding ref;
    gj_precision precision;
    uint32_t D, n_out;
    uint64_t n, n_params;
    float *x;
    int *ordinary;    /* 1: every coordinate finite with |x| <= 1e30 (or any bits, fixed point) */
    double *params, *g, *h;
} input_data;

static void make_data(size_t index, const gj_encoding *enc, input_data *d) {
    memset(d, 0, sizeof *d);
    gj_ref_from_encoding(&d->ref, enc);
    d->precision = gj_encoding_precision(enc);
    d->D = gj_encoding_n_dims(enc);
    d->n_out = gj_encoding_n_output_dims(enc);
    d->n = N_POINTS;
    d->n_params = gj_encoding_n_params(enc);
    d->x = malloc(d->n * d->D * sizeof(float));
    d->ordinary = malloc(d->n * sizeof(int));
    d->params = malloc(d->n_params * sizeof(double));
    d->g = malloc(d->n * d->n_out * sizeof(double));
    d->h = malloc(d->n * d->D * sizeof(double));
    assert_true(d->x && d->ordinary && d->params && d->g && d->h);
    gj_gpu_rng rng = {0x1A9075ull + index};
    const int fixed = gj_encoding_fixed_point_pos(enc);
    for (uint64_t i = 0; i < d->n; ++i) {
        d->ordinary[i] = 1;
        for (uint32_t k = 0; k < d->D; ++k) {
            float v;
            if (fixed) {
                /* Any 32 bits are a fixed-point position, including NaN and Inf patterns. */
                const uint32_t bits = (uint32_t)(gj_gpu_rng_next(&rng) >> 32);
                memcpy(&v, &bits, sizeof v);
            } else if (gj_gpu_rng_next(&rng) % 2) {
                v = specials[gj_gpu_rng_next(&rng) % N_SPECIALS];
                d->ordinary[i] &= isfinite(v) && fabsf(v) <= 1e30f;
            } else {
                v = gj_gpu_rng_float(&rng, 0.0f, 1.0f);
            }
            d->x[i * d->D + k] = v;
            d->h[i * d->D + k] = gj_gpu_rng_float(&rng, -1.0f, 1.0f);
        }
    }
    for (uint64_t p = 0; p < d->n_params; ++p) {
        d->params[p] = gj_gpu_round(gj_gpu_rng_float(&rng, -1.0f, 1.0f), d->precision);
    }
    for (uint64_t k = 0; k < d->n * d->n_out; ++k) {
        d->g[k] = gj_gpu_round(gj_gpu_rng_float(&rng, -1.0f, 1.0f), d->precision);
    }
}

static void free_data(input_data *d) {
    free(d->x);
    free(d->ordinary);
    free(d->params);
    free(d->g);
    free(d->h);
}

/* -------------------------------------------------------------- passes */

typedef struct outputs {
    double *y, *dx, *ddldy, *bb_dx, *dparams, *bb_dparams;
} outputs;

static void alloc_outputs(outputs *o, uint64_t n, uint32_t D, uint32_t n_out, uint64_t n_params) {
    o->y = malloc(n * n_out * sizeof(double));
    o->ddldy = malloc(n * n_out * sizeof(double));
    o->dx = malloc(n * D * sizeof(double));
    o->bb_dx = malloc(n * D * sizeof(double));
    o->dparams = malloc(n_params * sizeof(double));
    o->bb_dparams = malloc(n_params * sizeof(double));
    assert_true(o->y && o->ddldy && o->dx && o->bb_dx && o->dparams && o->bb_dparams);
}

static void free_outputs(outputs *o) {
    free(o->y);
    free(o->ddldy);
    free(o->dx);
    free(o->bb_dx);
    free(o->dparams);
    free(o->bb_dparams);
}

/* Runs forward, backward and backward-of-backward over n points (AoS, overwrite). */
static void run_gpu(gj_context *ctx, gj_module *m, const input_data *d, uint64_t n, const float *x, const double *g,
                    const double *h, outputs *o) {
    const gj_precision pr = d->precision;
    const size_t e = gj_gpu_element_size(pr);
    float *hf = malloc(n * d->D * sizeof(float) + 1);
    assert_non_null(hf);
    for (uint64_t k = 0; k < n * d->D; ++k) {
        hf[k] = (float)h[k];
    }
    void *dx_ = gj_gpu_upload_floats(ctx, x, n * d->D), *dh = gj_gpu_upload_floats(ctx, hf, n * d->D);
    void *dp = gj_gpu_upload(ctx, d->params, d->n_params, pr), *dg = gj_gpu_upload(ctx, g, n * d->n_out, pr);
    void *y = gj_gpu_alloc(ctx, n * d->n_out * e), *ddldy = gj_gpu_alloc(ctx, n * d->n_out * e);
    void *grad = gj_gpu_alloc(ctx, d->n_params * e), *bb_grad = gj_gpu_alloc(ctx, d->n_params * e);
    void *gx = gj_gpu_alloc(ctx, n * d->D * sizeof(float)), *bb_gx = gj_gpu_alloc(ctx, n * d->D * sizeof(float));
    void *dydx = gj_gpu_alloc(ctx, n * d->n_out * d->D * sizeof(float));
    free(hf);

    gj_forward_desc f;
    gj_forward_desc_init(&f);
    f.n = n;
    f.x = dx_;
    f.params = dp;
    f.y = y;
    f.dy_dx = dydx;
    gj_gpu_ok(ctx, gj_forward(m, NULL, &f), "gj_forward");
    gj_backward_desc b;
    gj_backward_desc_init(&b);
    b.n = n;
    b.x = dx_;
    b.params = dp;
    b.dL_dy = dg;
    b.dL_dparams = grad;
    b.dL_dx = gx;
    gj_gpu_ok(ctx, gj_backward(m, NULL, &b), "gj_backward");
    gj_backward_backward_desc bb;
    gj_backward_backward_desc_init(&bb);
    bb.n = n;
    bb.x = dx_;
    bb.params = dp;
    bb.dL_ddLdx = dh;
    bb.dL_dy = dg;
    bb.dL_dparams = bb_grad;
    bb.dL_ddLdy = ddldy;
    bb.dL_dx = bb_gx;
    gj_gpu_ok(ctx, gj_backward_backward(m, NULL, &bb), "gj_backward_backward");
    gj_gpu_sync(ctx); /* an illegal address or a trap shows here */

    gj_gpu_download(ctx, o->y, y, n * d->n_out, pr);
    gj_gpu_download(ctx, o->ddldy, ddldy, n * d->n_out, pr);
    gj_gpu_download(ctx, o->dx, gx, n * d->D, GJ_PRECISION_FP32);
    gj_gpu_download(ctx, o->bb_dx, bb_gx, n * d->D, GJ_PRECISION_FP32);
    gj_gpu_download(ctx, o->dparams, grad, d->n_params, pr);
    gj_gpu_download(ctx, o->bb_dparams, bb_grad, d->n_params, pr);
    void *all[] = {dx_, dh, dp, dg, y, ddldy, grad, bb_grad, gx, bb_gx, dydx};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; ++k) {
        gj_gpu_free(ctx, all[k]);
    }
}

/* ------------------------------------------------------------- checks */

static size_t failures;

static void expect(const char *name, const char *what, uint64_t index, double gpu, double ref, double tol) {
    if (!isfinite(gpu) || !(fabs(gpu - ref) <= tol)) {
        if (failures < 10) {
            printf("  %s: %s[%llu]: gpu %.9g, expected %.9g (tolerance %.3g)\n", name, what,
                   (unsigned long long)index, gpu, ref, tol);
        }
        ++failures;
    }
}

/* Point-wise results of the ordinary points of the full run (tolerances: gpu_bounds.h). */
static void check_points(const input_case *c, const input_data *d, const outputs *o) {
    double *g_ref = malloc(d->n_out * sizeof(double)), *y = malloc(d->n_out * sizeof(double));
    double *ddldy = malloc(d->n_out * sizeof(double)), dx[GJ_REF_MAX_DIMS], bbdx[GJ_REF_MAX_DIMS];
    assert_true(g_ref && y && ddldy);
    gj_bounds b;
    gj_bounds_measure(&b, &d->ref, d->n, d->x, d->params, d->g, d->h, NULL, 1.0);
    const int fp16 = d->precision == GJ_PRECISION_FP16;
    for (uint64_t i = 0; i < d->n; ++i) {
        if (!d->ordinary[i]) {
            continue;
        }
        const float *x = d->x + i * d->D;
        memcpy(g_ref, d->g + i * d->n_out, d->n_out * sizeof(double));
        gj_ref_forward(&d->ref, d->params, x, 1.0, y);
        gj_ref_backward(&d->ref, d->params, x, 1.0, i, d->n, g_ref, NULL, dx);
        gj_ref_backward_backward(&d->ref, d->params, x, 1.0, d->h + i * d->D, g_ref, NULL, ddldy, bbdx);
        for (uint32_t k = 0; k < d->n_out; ++k) {
            expect(c->name, "y", i * d->n_out + k, o->y[i * d->n_out + k], y[k],
                   gj_bound_y(&b, i, k) + gj_bound_half(fp16, y[k]));
            expect(c->name, "bb_ddldy", i * d->n_out + k, o->ddldy[i * d->n_out + k], ddldy[k],
                   gj_bound_bb_ddldy(&b, i, k) + gj_bound_half(fp16, ddldy[k]));
        }
        for (uint32_t k = 0; k < d->D; ++k) {
            expect(c->name, "dx", i * d->D + k, o->dx[i * d->D + k], dx[k], gj_bound_dx(&b, i));
            expect(c->name, "bb_dx", i * d->D + k, o->bb_dx[i * d->D + k], bbdx[k], gj_bound_bb_dx(&b, i));
        }
    }
    gj_bounds_free(&b);
    free(g_ref);
    free(y);
    free(ddldy);
}

/* The parameter gradients of a run over the ordinary points only. */
static void check_params(gj_context *ctx, gj_module *m, const input_case *c, const input_data *d) {
    uint64_t n = 0;
    float *x = malloc(d->n * d->D * sizeof(float));
    double *g = malloc(d->n * d->n_out * sizeof(double)), *h = malloc(d->n * d->D * sizeof(double));
    assert_true(x && g && h);
    for (uint64_t i = 0; i < d->n; ++i) {
        if (d->ordinary[i]) {
            memcpy(x + n * d->D, d->x + i * d->D, d->D * sizeof(float));
            memcpy(g + n * d->n_out, d->g + i * d->n_out, d->n_out * sizeof(double));
            memcpy(h + n * d->D, d->h + i * d->D, d->D * sizeof(double));
            ++n;
        }
    }
    assert_true(n > 50);
    outputs o;
    alloc_outputs(&o, n, d->D, d->n_out, d->n_params);
    run_gpu(ctx, m, d, n, x, g, h, &o);
    double *ref = calloc(d->n_params, sizeof(double)), *bb_ref = calloc(d->n_params, sizeof(double));
    assert_true(ref && bb_ref);
    for (uint64_t i = 0; i < n; ++i) {
        gj_ref_backward(&d->ref, d->params, x + i * d->D, 1.0, i, n, g + i * d->n_out, ref, NULL);
        gj_ref_backward_backward(&d->ref, d->params, x + i * d->D, 1.0, h + i * d->D, g + i * d->n_out, bb_ref, NULL,
                                 NULL);
    }
    gj_bounds b;
    gj_bounds_measure(&b, &d->ref, n, x, d->params, g, h, NULL, 1.0);
    const int fp16 = d->precision == GJ_PRECISION_FP16;
    for (uint64_t p = 0; p < d->n_params; ++p) {
        expect(c->name, "dparams", p, o.dparams[p], ref[p], gj_bound_dparams(&b, p, 0, 0.0, fp16, ref[p]));
        expect(c->name, "bb_dparams", p, o.bb_dparams[p], bb_ref[p], gj_bound_dparams(&b, p, 1, 0.0, fp16, bb_ref[p]));
    }
    gj_bounds_free(&b);
    free(ref);
    free(bb_ref);
    free_outputs(&o);
    free(x);
    free(g);
    free(h);
}

static void run_case(void **state) {
    const size_t index = (size_t)(uintptr_t)*state;
    input_suite *s = &the_suite;
    if (!s->have_gpu) {
        skip();
    }
    const input_case *c = &cases[index];
    if (s->jobs[index].status != GJ_OK) {
        fail_msg("%s: compile failed: %s", c->name, s->jobs[index].message);
    }
    gj_module *m = NULL;
    gj_gpu_ok(s->ctx, gj_gpu_module_for_job(s->ctx, &s->jobs[index], &m), "the module");
    input_data d;
    make_data(index, s->enc[index], &d);
    outputs o;
    alloc_outputs(&o, d.n, d.D, d.n_out, d.n_params);
    failures = 0;
    run_gpu(s->ctx, m, &d, d.n, d.x, d.g, d.h, &o); /* the whole mix: must not fault */
    check_points(c, &d, &o);
    check_params(s->ctx, m, c, &d);
    free_outputs(&o);
    free_data(&d);
    gj_module_destroy(m);
    if (failures) {
        fail_msg("%s: %zu results wrong or not finite (first ones above)", c->name, failures);
    }
}

static int suite_setup(void **state) {
    (void)state;
    input_suite *s = &the_suite;
    if (gj_context_create(&s->ctx) != GJ_OK) {
        return -1;
    }
    gj_context_set_log(s->ctx, NULL, NULL);
    for (size_t i = 0; i < N_CASES; ++i) {
        if (gj_encoding_create(s->ctx, cases[i].json, cases[i].n_dims, &s->enc[i]) != GJ_OK) {
            printf("%s: %s\n", cases[i].name, gj_context_errmsg(s->ctx));
            return -1;
        }
        gj_codegen_options_init(&s->opts[i]);
        s->opts[i].order = cases[i].order;
        s->opts[i].points_per_thread = cases[i].ppt;
    }
    s->have_gpu = gj_gpu_available(&s->info);
    if (!s->have_gpu) {
        return 0;
    }
    for (size_t i = 0; i < N_CASES; ++i) {
        s->jobs[i].enc = s->enc[i];
        s->jobs[i].opts = s->opts[i];
        snprintf(s->jobs[i].arch, sizeof s->jobs[i].arch, "%.15s", s->info.arch);
    }
    gj_gpu_compile_all(s->jobs, N_CASES);
    return 0;
}

static int suite_teardown(void **state) {
    (void)state;
    input_suite *s = &the_suite;
    for (size_t i = 0; i < N_CASES; ++i) {
        gj_program_destroy(s->jobs[i].prog);
        gj_encoding_destroy(s->enc[i]);
    }
    gj_context_destroy(s->ctx);
    return 0;
}

int main(void) {
    if (!gj_gpu_available(NULL)) {
        return GJ_TEST_SKIP_ALL; /* ctest reports the binary as skipped; the reason is printed above */
    }
    struct CMUnitTest tests[N_CASES];
    for (size_t i = 0; i < N_CASES; ++i) {
        tests[i] = (struct CMUnitTest){cases[i].name, run_case, NULL, NULL, (void *)(uintptr_t)i};
    }
    return _cmocka_run_group_tests("test_gpu_inputs", tests, N_CASES, suite_setup, suite_teardown);
}
