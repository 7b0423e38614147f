/*
 * Every pass of the generated kernels against the double-precision CPU reference
 * (tests/support/cpu_reference.h), over a pairwise-covering matrix of configurations:
 * grid types, hashes, interpolations, F in {1,2,4,8}, D in {1,2,3,4,7}, fp16 and fp32,
 * max_level scalar (all levels, part of them) and per point, stochastic interpolation,
 * fixed_point_pos, kernel shapes (order, block size, points per thread), output layout
 * and padding, gradient mode. Every pair of values of any two of these occurs in some
 * case. All programs are compiled up front in parallel; each case is one test.
 *
 * Without a CUDA device every test is skipped with the reason printed.
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
#include "encoding.h"
#include "gpu_harness.h"
#include "pairwise.h"

/* ------------------------------------------------------------ the matrix */

enum {
    P_TYPE, P_HASH, P_INTERP, P_F, P_D, P_PRECISION, P_MAX_LEVEL, P_STOCHASTIC, P_FIXED_POINT, P_KERNEL, P_OUTPUT,
    P_MODE, N_PARAMS
};

static const gj_pw_param matrix_params[N_PARAMS] = {
    {"type", 3},   {"hash", 5},        {"interpolation", 3}, {"F", 4},      {"D", 5},      {"precision", 2},
    {"max_level", 3}, {"stochastic", 2}, {"fixed_point", 2}, {"kernel", 3}, {"output", 2}, {"mode", 2},
};

static const char *const type_names[] = {"Hash", "Dense", "Tiled"};
static const char *const hash_names[] = {"Prime", "CoherentPrime", "ReversedPrime", "Rng", "BaseConvert"};
static const char *const interp_names[] = {"Nearest", "Linear", "Smoothstep"};
static const uint32_t f_values[] = {1, 2, 4, 8};
static const uint32_t d_values[] = {1, 2, 3, 4, 7};
static const char *const precision_names[] = {"fp16", "fp32"};
static const float max_level_scalars[] = {1.0f, 0.6f, -1.0f /* per point */};
/* Kernel shapes: order, block size, points per thread. */
static const struct {
    gj_order order;
    uint32_t block, ppt;
} kernel_shapes[] = {{GJ_ORDER_LEVEL_MAJOR, 256, 1}, {GJ_ORDER_POINT_MAJOR, 128, 2}, {GJ_ORDER_LEVEL_MAJOR, 64, 4}};

static int allowed(const int *row) {
    (void)row;
    return 1;
}

#define MAX_CASES 64
#define N_POINTS 1531 /* not a multiple of any block * points-per-thread */
#define N_DYDX_POINTS 64 /* points whose dy/dx is checked against one-hot backward passes */

typedef struct gpu_case {
    int row[N_PARAMS];
    char name[200];
    char json[512];
    uint32_t n_dims;
    gj_codegen_options opts;
    gj_data_layout layout;
    float max_level; /* < 0: per point */
    gj_grad_mode mode;
    gj_encoding *enc;
} gpu_case;

typedef struct suite {
    gj_context *ctx;
    gj_runtime_info info;
    int have_gpu;
    size_t n_cases;
    gpu_case cases[MAX_CASES];
    gj_gpu_compile_job jobs[MAX_CASES];
} suite;

static suite the_suite;

/* Level counts and resolutions per D and grid type: small tables, a coarse level that is
 * indexed densely and finer ones that are hashed (Hash) or wrapped (Tiled). */
static void describe_case(gpu_case *c) {
    const int *r = c->row;
    const uint32_t d = d_values[r[P_D]], f = f_values[r[P_F]];
    const int dense = r[P_TYPE] == 1;
    static const uint32_t hash_log2[] = {5, 9, 11, 13, 12}; /* per D index: level 0 dense, level 2+ hashed */
    uint32_t base = d == 7 ? 2 : (dense && d >= 3 ? 4 : 8);
    uint32_t levels = dense && d == 7 ? 3 : 4;
    const char *scale = dense && d >= 3 ? "1.5" : "2.0";
    c->n_dims = d;
    snprintf(c->json, sizeof c->json,
             "{\"otype\": \"Grid\", \"type\": \"%s\", \"n_levels\": %u, \"n_features_per_level\": %u, "
             "\"log2_hashmap_size\": %u, \"base_resolution\": %u, \"per_level_scale\": %s, "
             "\"interpolation\": \"%s\", \"hash\": \"%s\", \"stochastic_interpolation\": %s, "
             "\"fixed_point_pos\": %s, \"precision\": \"%s\"}",
             type_names[r[P_TYPE]], levels, f, hash_log2[r[P_D]], base, scale, interp_names[r[P_INTERP]],
             hash_names[r[P_HASH]], r[P_STOCHASTIC] ? "true" : "false", r[P_FIXED_POINT] ? "true" : "false",
             precision_names[r[P_PRECISION]]);
    gj_codegen_options_init(&c->opts);
    c->opts.order = kernel_shapes[r[P_KERNEL]].order;
    c->opts.block_size = kernel_shapes[r[P_KERNEL]].block;
    c->opts.points_per_thread = kernel_shapes[r[P_KERNEL]].ppt;
    c->opts.output_width_multiple = r[P_OUTPUT] ? 16 : 1;
    c->layout = r[P_OUTPUT] ? GJ_LAYOUT_SOA : GJ_LAYOUT_AOS;
    c->max_level = max_level_scalars[r[P_MAX_LEVEL]];
    c->mode = r[P_MODE] ? GJ_GRAD_ACCUMULATE : GJ_GRAD_OVERWRITE;
    snprintf(c->name, sizeof c->name, "%s/%s/%s/F%u/D%u/%s/ml%s/%s%s/%s-b%u-p%u/%s%s/%s", type_names[r[P_TYPE]],
             hash_names[r[P_HASH]], interp_names[r[P_INTERP]], f, d, precision_names[r[P_PRECISION]],
             c->max_level < 0 ? "point" : (c->max_level == 1.0f ? "1" : "0.6"), r[P_STOCHASTIC] ? "stoch" : "det",
             r[P_FIXED_POINT] ? "/fixed" : "", c->opts.order == GJ_ORDER_LEVEL_MAJOR ? "level" : "point",
             c->opts.block_size, c->opts.points_per_thread, r[P_OUTPUT] ? "soa" : "aos",
             r[P_OUTPUT] ? "-pad16" : "", r[P_MODE] ? "accumulate" : "overwrite");
}

/* ---------------------------------------------------------- test data */

typedef struct case_data {
    gj_ref_encoding ref;
    gj_precision precision;
    uint32_t D, L, F, n_out, width;
    uint64_t n, n_params;
    float *x;             /* n * D */
    float *max_level;     /* n (per point), or NULL */
    double *params;       /* n_params, representable in the precision */
    double *dl_dy;        /* n * width in the case's layout, representable */
    double *h;            /* n * D: dL/d(dL/dx), floats */
    double *prefill;      /* n_params: what accumulate mode adds to */
} case_data;

static double point_max_level(const gpu_case *c, const case_data *d, uint64_t i) {
    return c->max_level < 0 ? (double)d->max_level[i] : (double)c->max_level;
}

static size_t out_index(const case_data *d, gj_data_layout layout, uint64_t i, uint32_t k) {
    return layout == GJ_LAYOUT_SOA ? (size_t)k * d->n + i : (size_t)i * d->width + k;
}

static void make_data(const gpu_case *c, case_data *d) {
    memset(d, 0, sizeof *d);
    gj_ref_from_config(&d->ref, &c->enc->config, &c->enc->layout);
    d->precision = gj_encoding_precision(c->enc);
    d->D = gj_encoding_n_dims(c->enc);
    d->L = gj_encoding_n_levels(c->enc);
    d->F = gj_encoding_n_features_per_level(c->enc);
    d->n_out = gj_encoding_n_output_dims(c->enc);
    const uint32_t m = c->opts.output_width_multiple;
    d->width = (d->n_out + m - 1) / m * m;
    d->n = N_POINTS;
    d->n_params = gj_encoding_n_params(c->enc);
    gj_gpu_rng rng = {0x5EED0000ull + (uint64_t)(c - the_suite.cases)};
    d->x = malloc(d->n * d->D * sizeof(float));
    d->params = malloc(d->n_params * sizeof(double));
    d->prefill = malloc(d->n_params * sizeof(double));
    d->dl_dy = malloc(d->n * d->width * sizeof(double));
    d->h = malloc(d->n * d->D * sizeof(double));
    assert_true(d->x && d->params && d->prefill && d->dl_dy && d->h);
    for (uint64_t i = 0; i < d->n * d->D; ++i) {
        if (c->enc->config.fixed_point_pos) {
            /* A uint32 fixed-point position in [0, 2^32), carried in the float's bits. */
            const uint32_t bits = (uint32_t)(gj_gpu_rng_next(&rng) >> 32);
            memcpy(&d->x[i], &bits, sizeof bits);
        } else {
            d->x[i] = gj_gpu_rng_float(&rng, 0.0f, 1.0f);
        }
        d->h[i] = gj_gpu_rng_float(&rng, -1.0f, 1.0f);
    }
    for (uint64_t p = 0; p < d->n_params; ++p) {
        d->params[p] = gj_gpu_round(gj_gpu_rng_float(&rng, -1.0f, 1.0f), d->precision);
        d->prefill[p] = c->mode == GJ_GRAD_ACCUMULATE ? gj_gpu_round(gj_gpu_rng_float(&rng, -0.5f, 0.5f), d->precision) : 0.0;
    }
    for (uint64_t k = 0; k < d->n * d->width; ++k) {
        d->dl_dy[k] = gj_gpu_round(gj_gpu_rng_float(&rng, -1.0f, 1.0f), d->precision); /* padding too: ignored */
    }
    if (c->max_level < 0) {
        d->max_level = malloc(d->n * sizeof(float));
        assert_non_null(d->max_level);
        for (uint64_t i = 0; i < d->n; ++i) {
            d->max_level[i] = gj_gpu_rng_float(&rng, 0.0f, 1.0f);
        }
    }
}

static void free_data(case_data *d) {
    free(d->x);
    free(d->max_level);
    free(d->params);
    free(d->dl_dy);
    free(d->h);
    free(d->prefill);
}

/* dL/dy of point i without padding, for the reference. */
static void point_dl_dy(const case_data *d, gj_data_layout layout, uint64_t i, double *g) {
    for (uint32_t k = 0; k < d->n_out; ++k) {
        g[k] = d->dl_dy[out_index(d, layout, i, k)];
    }
}

/* -------------------------------------------------------- the reference */

typedef struct reference {
    double *y;          /* n * n_out */
    double *dy_dx;      /* N_DYDX_POINTS * n_out * D: [(i * n_out + k) * D + dim] */
    double *dparams;    /* n_params: prefill + gradient */
    double *dx;         /* n * D */
    double *bb_dparams; /* n_params: prefill + gradient */
    double *bb_ddldy;   /* n * n_out */
    double *bb_dx;      /* n * D */
} reference;

static void run_reference(const gpu_case *c, const case_data *d, reference *r) {
    const size_t nD = d->n * d->D, nO = d->n * d->n_out;
    r->y = calloc(nO, sizeof(double));
    r->dy_dx = calloc((size_t)N_DYDX_POINTS * d->n_out * d->D, sizeof(double));
    r->dparams = malloc(d->n_params * sizeof(double));
    r->bb_dparams = malloc(d->n_params * sizeof(double));
    r->dx = calloc(nD, sizeof(double));
    r->bb_ddldy = calloc(nO, sizeof(double));
    r->bb_dx = calloc(nD, sizeof(double));
    double *g = calloc(d->n_out, sizeof(double)), *onehot = calloc(d->n_out, sizeof(double));
    assert_true(r->y && r->dy_dx && r->dparams && r->bb_dparams && r->dx && r->bb_ddldy && r->bb_dx && g && onehot);
    memcpy(r->dparams, d->prefill, d->n_params * sizeof(double));
    memcpy(r->bb_dparams, d->prefill, d->n_params * sizeof(double));
    for (uint64_t i = 0; i < d->n; ++i) {
        const float *x = d->x + i * d->D;
        const double m = point_max_level(c, d, i);
        point_dl_dy(d, c->layout, i, g);
        gj_ref_forward(&d->ref, d->params, x, m, r->y + i * d->n_out);
        gj_ref_backward(&d->ref, d->params, x, m, i, d->n, g, r->dparams, r->dx + i * d->D);
        gj_ref_backward_backward(&d->ref, d->params, x, m, d->h + i * d->D, g, r->bb_dparams,
                                 r->bb_ddldy + i * d->n_out, r->bb_dx + i * d->D);
        for (uint32_t k = 0; i < N_DYDX_POINTS && k < d->n_out; ++k) {
            /* dL/dx for dL/dy = e_k is dy_k/dx; stochastic choice only affects params. */
            memset(onehot, 0, d->n_out * sizeof(double));
            onehot[k] = 1.0;
            gj_ref_backward(&d->ref, d->params, x, m, i, d->n, onehot, NULL, r->dy_dx + ((size_t)i * d->n_out + k) * d->D);
        }
    }
    free(g);
    free(onehot);
}

static void free_reference(reference *r) {
    free(r->y);
    free(r->dy_dx);
    free(r->dparams);
    free(r->dx);
    free(r->bb_dparams);
    free(r->bb_ddldy);
    free(r->bb_dx);
}

/* ------------------------------------------------------------ magnitudes */

/*
 * Error bounds need the size of what the GPU sums, not of the result (which may cancel).
 * For each point and active level: theta_max = the largest |parameter| over the 2^D
 * corners visited; and per table entry the number of contributions and the sum of
 * their absolute values. Weights w(t) are in [0, 1] (Linear, Smoothstep on t in [0,1)),
 * |w'| <= W1 (1 Linear, 1.5 Smoothstep, 0 Nearest), |w''|, w'^2 <= W2 (0, 1, 6).
 */
typedef struct magnitudes {
    double *theta_max;   /* n * L */
    double *count;       /* n_params: contributions to each parameter */
    double *bwd;         /* n_params: sum of |weight * dL/dy| */
    double *bb;          /* n_params: sum of |dL/dy| * sum_d |H_d| * scale * W1 */
    double w1, w2;
} magnitudes;

static double weight_of(gj_interpolation interp, double t) {
    return interp == GJ_INTERP_SMOOTHSTEP ? t * t * (3.0 - 2.0 * t) : interp == GJ_INTERP_LINEAR ? t : 0.0;
}

static void measure(const gpu_case *c, const case_data *d, magnitudes *mg) {
    const gj_interpolation interp = gj_encoding_interpolation(c->enc);
    mg->w1 = interp == GJ_INTERP_SMOOTHSTEP ? 1.5 : interp == GJ_INTERP_LINEAR ? 1.0 : 0.0;
    mg->w2 = interp == GJ_INTERP_SMOOTHSTEP ? 6.0 : interp == GJ_INTERP_LINEAR ? 1.0 : 0.0;
    mg->theta_max = calloc(d->n * d->L, sizeof(double));
    mg->count = calloc(d->n_params, sizeof(double));
    mg->bwd = calloc(d->n_params, sizeof(double));
    mg->bb = calloc(d->n_params, sizeof(double));
    double *g = calloc(d->n_out, sizeof(double));
    assert_true(mg->theta_max && mg->count && mg->bwd && mg->bb && g);
    const int stochastic = c->enc->config.stochastic_interpolation;
    for (uint64_t i = 0; i < d->n; ++i) {
        const double m = point_max_level(c, d, i);
        point_dl_dy(d, c->layout, i, g);
        double hsum = 0.0;
        for (uint32_t k = 0; k < d->D; ++k) {
            hsum += fabs(d->h[i * d->D + k]);
        }
        for (uint32_t l = 0; l < d->L; ++l) {
            uint32_t cell[GJ_REF_MAX_DIMS], corner[GJ_REF_MAX_DIMS];
            double t[GJ_REF_MAX_DIMS];
            gj_ref_locate(&d->ref, l, d->x + i * d->D, cell, t);
            const int active = gj_ref_level_active(&d->ref, l, m);
            double theta = 0.0;
            for (uint32_t b = 0; b < (1u << d->D); ++b) {
                double weight = 1.0;
                for (uint32_t k = 0; k < d->D; ++k) {
                    const int up = (b >> k) & 1u;
                    corner[k] = cell[k] + (uint32_t)up;
                    const double w = weight_of(interp, t[k]);
                    weight *= up ? w : 1.0 - w;
                }
                if (stochastic) {
                    weight = 1.0; /* one corner gets weight 1: bound it by all */
                }
                const uint64_t base = (d->ref.levels[l].offset + gj_ref_corner_index(&d->ref, l, corner)) * d->F;
                for (uint32_t f = 0; f < d->F; ++f) {
                    theta = fmax(theta, fabs(d->params[base + f]));
                    if (active) {
                        mg->count[base + f] += 1.0;
                        mg->bwd[base + f] += weight * fabs(g[l * d->F + f]);
                        mg->bb[base + f] += fabs(g[l * d->F + f]) * hsum * d->ref.levels[l].scale * mg->w1;
                    }
                }
            }
            mg->theta_max[i * d->L + l] = theta;
        }
    }
    free(g);
}

static void free_magnitudes(magnitudes *mg) {
    free(mg->theta_max);
    free(mg->count);
    free(mg->bwd);
    free(mg->bb);
}

/* ------------------------------------------------------------ comparison */

static const double U32 = 5.9604644775390625e-08; /* 2^-24: unit roundoff of float */
static const double U16 = 4.8828125e-04;          /* 2^-11: unit roundoff of fp16 */
static const double SUB16 = 2.98023223876953125e-08; /* 2^-25: half the fp16 subnormal spacing */

/* Fails the test when some |gpu - expected| > tol (or gpu is NaN where expected is not),
 * printing the first offenders. */
static void compare(const gpu_case *c, const char *what, const double *gpu, const double *expected, const double *tol,
                    size_t count) {
    size_t bad = 0, first = 0;
    double worst = 0.0;
    for (size_t i = 0; i < count; ++i) {
        const double err = fabs(gpu[i] - expected[i]);
        const int wrong = !(err <= tol[i]); /* NaN counts as wrong */
        if (wrong) {
            if (bad < 5) {
                printf("  %s[%zu]: gpu %.9g, expected %.9g, |error| %.3g > tolerance %.3g\n", what, i, gpu[i],
                       expected[i], err, tol[i]);
            }
            if (!bad) {
                first = i;
            }
            ++bad;
        }
        if (tol[i] > 0 && err / tol[i] > worst) {
            worst = err / tol[i];
        }
    }
    if (bad) {
        fail_msg("%s: %s: %zu of %zu values outside the tolerance (first at %zu)", c->name, what, bad, count, first);
    }
    (void)worst;
}

/* Each fp16 value rounded once from an fp32 result: u16 relative, or half the subnormal step. */
static double half_rounding(gj_precision precision, double value) {
    return precision == GJ_PRECISION_FP16 ? U16 * fabs(value) + SUB16 : 0.0;
}

/* ---------------------------------------------------------- device state */

typedef struct device_data {
    void *x, *params, *max_level, *dl_dy, *h;
    void *y, *y2, *dy_dx, *dparams, *dparams_only, *dx, *dx_only, *bb_dparams, *bb_ddldy, *bb_dx, *bb_dx_only;
} device_data;

static void upload_case(gj_context *ctx, const gpu_case *c, const case_data *d, device_data *dev) {
    const size_t e = gj_gpu_element_size(d->precision), nD = d->n * d->D, nW = d->n * d->width;
    memset(dev, 0, sizeof *dev);
    dev->x = gj_gpu_upload_floats(ctx, d->x, nD);
    dev->params = gj_gpu_upload(ctx, d->params, d->n_params, d->precision);
    if (d->max_level) {
        dev->max_level = gj_gpu_upload_floats(ctx, d->max_level, d->n);
    }
    dev->dl_dy = gj_gpu_upload(ctx, d->dl_dy, nW, d->precision);
    float *h = malloc(nD * sizeof(float));
    assert_non_null(h);
    for (size_t i = 0; i < nD; ++i) {
        h[i] = (float)d->h[i];
    }
    dev->h = gj_gpu_upload_floats(ctx, h, nD);
    free(h);
    dev->y = gj_gpu_alloc(ctx, nW * e);
    dev->y2 = gj_gpu_alloc(ctx, nW * e);
    dev->dy_dx = gj_gpu_alloc(ctx, (size_t)d->n_out * d->n * d->D * sizeof(float));
    /* Gradient arrays start as the prefill (garbage would do for overwrite: it must go). */
    double *start = malloc(d->n_params * sizeof(double));
    assert_non_null(start);
    for (uint64_t p = 0; p < d->n_params; ++p) {
        start[p] = c->mode == GJ_GRAD_ACCUMULATE ? d->prefill[p] : 1234.0;
    }
    dev->dparams = gj_gpu_upload(ctx, start, d->n_params, d->precision);
    dev->dparams_only = gj_gpu_upload(ctx, start, d->n_params, d->precision);
    dev->bb_dparams = gj_gpu_upload(ctx, start, d->n_params, d->precision);
    free(start);
    dev->dx = gj_gpu_alloc(ctx, nD * sizeof(float));
    dev->dx_only = gj_gpu_alloc(ctx, nD * sizeof(float));
    dev->bb_ddldy = gj_gpu_alloc(ctx, nW * e);
    dev->bb_dx = gj_gpu_alloc(ctx, nD * sizeof(float));
    dev->bb_dx_only = gj_gpu_alloc(ctx, nD * sizeof(float));
    /* Outputs that are written (not accumulated) start as NaN patterns: a skipped element shows. */
    const size_t junk_size = (size_t)d->n_out * nD * sizeof(float) > nW * 4 ? (size_t)d->n_out * nD * sizeof(float) : nW * 4;
    void *junk = malloc(junk_size);
    assert_non_null(junk);
    memset(junk, 0xff, junk_size);
    gj_gpu_put(ctx, dev->y, junk, nW * e);
    gj_gpu_put(ctx, dev->y2, junk, nW * e);
    gj_gpu_put(ctx, dev->bb_ddldy, junk, nW * e);
    gj_gpu_put(ctx, dev->dx, junk, nD * sizeof(float));
    gj_gpu_put(ctx, dev->dx_only, junk, nD * sizeof(float));
    gj_gpu_put(ctx, dev->bb_dx, junk, nD * sizeof(float));
    gj_gpu_put(ctx, dev->bb_dx_only, junk, nD * sizeof(float));
    gj_gpu_put(ctx, dev->dy_dx, junk, (size_t)d->n_out * nD * sizeof(float));
    free(junk);
}

static void free_device(gj_context *ctx, device_data *dev) {
    void **all[] = {&dev->x, &dev->params, &dev->max_level, &dev->dl_dy, &dev->h, &dev->y, &dev->y2, &dev->dy_dx,
                    &dev->dparams, &dev->dparams_only, &dev->dx, &dev->dx_only, &dev->bb_dparams, &dev->bb_ddldy,
                    &dev->bb_dx, &dev->bb_dx_only};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) {
        gj_gpu_free(ctx, *all[i]);
        *all[i] = NULL;
    }
}

static void run_gpu(gj_context *ctx, gj_module *m, const gpu_case *c, const case_data *d, device_data *dev) {
    gj_forward_desc f;
    gj_forward_desc_init(&f);
    f.n = d->n;
    f.x = dev->x;
    f.params = dev->params;
    f.y = dev->y;
    f.y_layout = c->layout;
    f.max_level_per_point = dev->max_level;
    f.max_level = c->max_level < 0 ? 1.0f : c->max_level;
    gj_gpu_ok(ctx, gj_forward(m, NULL, &f), "gj_forward (y)");
    f.y = dev->y2;
    f.dy_dx = dev->dy_dx;
    gj_gpu_ok(ctx, gj_forward(m, NULL, &f), "gj_forward (y, dy/dx)");

    gj_backward_desc b;
    gj_backward_desc_init(&b);
    b.n = d->n;
    b.x = dev->x;
    b.params = dev->params;
    b.dL_dy = dev->dl_dy;
    b.dL_dy_layout = c->layout;
    b.dL_dparams_mode = c->mode;
    b.max_level_per_point = dev->max_level;
    b.max_level = f.max_level;
    b.dL_dparams = dev->dparams; /* fused: both gradients in one launch */
    b.dL_dx = dev->dx;
    gj_gpu_ok(ctx, gj_backward(m, NULL, &b), "gj_backward (params, input)");
    b.dL_dparams = dev->dparams_only;
    b.dL_dx = NULL;
    gj_gpu_ok(ctx, gj_backward(m, NULL, &b), "gj_backward (params)");
    b.dL_dparams = NULL;
    b.dL_dx = dev->dx_only;
    gj_gpu_ok(ctx, gj_backward(m, NULL, &b), "gj_backward (input)");

    gj_backward_backward_desc bb;
    gj_backward_backward_desc_init(&bb);
    bb.n = d->n;
    bb.x = dev->x;
    bb.params = dev->params;
    bb.dL_ddLdx = dev->h;
    bb.dL_dy = dev->dl_dy;
    bb.dL_dy_layout = c->layout;
    bb.dL_dparams = dev->bb_dparams;
    bb.dL_dparams_mode = c->mode;
    bb.dL_ddLdy = dev->bb_ddldy;
    bb.dL_ddLdy_layout = c->layout;
    bb.dL_dx = dev->bb_dx;
    bb.max_level_per_point = dev->max_level;
    bb.max_level = f.max_level;
    gj_gpu_ok(ctx, gj_backward_backward(m, NULL, &bb), "gj_backward_backward (all)");
    bb.dL_dparams = NULL;
    bb.dL_ddLdy = NULL;
    bb.dL_dx = dev->bb_dx_only;
    gj_gpu_ok(ctx, gj_backward_backward(m, NULL, &bb), "gj_backward_backward (input)");
    gj_gpu_sync(ctx);
}

/* ------------------------------------------------------------- checks */

static void check_forward(gj_context *ctx, const gpu_case *c, const case_data *d, const reference *r,
                          const magnitudes *mg, const device_data *dev) {
    const size_t nW = d->n * d->width;
    double *gpu = malloc(nW * sizeof(double)), *expected = malloc(nW * sizeof(double)), *tol = malloc(nW * sizeof(double));
    assert_true(gpu && expected && tol);
    /* Forward, per output: sum over 2^D corners of (product of D weights) * theta, in
     * float: each corner term carries <= D + 2 roundings, the sum 2^D more (recursive
     * summation bound, Higham §4.2): (2^D (D + 3)) u32 * theta_max, as sum W |theta| <=
     * theta_max. fp16 outputs are then rounded once. Padding columns must be exactly 0. */
    const double k_y = (double)(1u << d->D) * (d->D + 3);
    for (uint64_t i = 0; i < d->n; ++i) {
        for (uint32_t k = 0; k < d->width; ++k) {
            const size_t at = out_index(d, c->layout, i, k);
            if (k < d->n_out) {
                expected[at] = r->y[i * d->n_out + k];
                tol[at] = k_y * U32 * mg->theta_max[i * d->L + k / d->F] + half_rounding(d->precision, expected[at]);
            } else {
                expected[at] = 0.0;
                tol[at] = 0.0;
            }
        }
    }
    gj_gpu_download(ctx, gpu, dev->y, nW, d->precision);
    compare(c, "y", gpu, expected, tol, nW);
    gj_gpu_download(ctx, gpu, dev->y2, nW, d->precision);
    compare(c, "y (with dy/dx)", gpu, expected, tol, nW);
    free(gpu);
    free(expected);
    free(tol);

    /* dy_k/dx_d = scale * w'(t_d) * sum over the other dims' corners of W * (theta_up - theta_low):
     * magnitude <= scale * W1 * 2 theta_max, with 2^D (D + 3) roundings as above. */
    const size_t n_check = (size_t)N_DYDX_POINTS * d->n_out * d->D;
    float *raw = malloc((size_t)d->n_out * d->n * d->D * sizeof(float));
    double *g2 = malloc(n_check * sizeof(double)), *e2 = malloc(n_check * sizeof(double)), *t2 = malloc(n_check * sizeof(double));
    assert_true(raw && g2 && e2 && t2);
    gj_gpu_get(ctx, raw, dev->dy_dx, (size_t)d->n_out * d->n * d->D * sizeof(float));
    for (uint64_t i = 0; i < N_DYDX_POINTS; ++i) {
        for (uint32_t k = 0; k < d->n_out; ++k) {
            const uint32_t l = k / d->F;
            for (uint32_t dim = 0; dim < d->D; ++dim) {
                const size_t at = ((size_t)i * d->n_out + k) * d->D + dim;
                g2[at] = raw[((size_t)k * d->n + i) * d->D + dim];
                e2[at] = r->dy_dx[at];
                t2[at] = k_y * U32 * d->ref.levels[l].scale * mg->w1 * 2.0 * mg->theta_max[i * d->L + l];
            }
        }
    }
    compare(c, "dy_dx", g2, e2, t2, n_check);
    free(raw);
    free(g2);
    free(e2);
    free(t2);
}

/* sum over active levels and features of |dL/dy| * scale * W1 * 2 theta_max (the size of
 * the terms of dL/dx), and the same for the backward-of-backward outputs. */
static double dx_magnitude(const case_data *d, const magnitudes *mg, const double *g, uint64_t i, int second_order,
                           double hsum) {
    double sum = 0.0;
    for (uint32_t l = 0; l < d->L; ++l) {
        double gl = 0.0;
        for (uint32_t f = 0; f < d->F; ++f) {
            gl += fabs(g[l * d->F + f]);
        }
        const double s = d->ref.levels[l].scale;
        sum += second_order ? gl * s * s * hsum * mg->w2 * 4.0 * mg->theta_max[i * d->L + l]
                            : gl * s * mg->w1 * 2.0 * mg->theta_max[i * d->L + l];
    }
    return sum;
}

static void check_dx(gj_context *ctx, const gpu_case *c, const case_data *d, const magnitudes *mg, const void *device,
                     const double *expected, int second_order, const char *what) {
    const size_t nD = d->n * d->D;
    double *gpu = malloc(nD * sizeof(double)), *tol = malloc(nD * sizeof(double)), *g = malloc(d->n_out * sizeof(double));
    assert_true(gpu && tol && g);
    /* dL/dx sums L * F * 2^D terms of D + 3 float operations each (D + 4 and a factor D
     * for the backward of backward, which also sums over the D components of H):
     * recursive summation bound k * u32 * (sum of |terms|), the sum bounded by
     * dx_magnitude. dL/dx is float for both precisions (the fp16 inputs are exact). */
    const double k = (double)d->L * d->F * (1u << d->D) * (d->D + 4) * (second_order ? d->D : 1);
    for (uint64_t i = 0; i < d->n; ++i) {
        point_dl_dy(d, c->layout, i, g);
        double hsum = 0.0;
        for (uint32_t dim = 0; dim < d->D; ++dim) {
            hsum += fabs(d->h[i * d->D + dim]);
        }
        const double mag = dx_magnitude(d, mg, g, i, second_order, hsum);
        for (uint32_t dim = 0; dim < d->D; ++dim) {
            tol[i * d->D + dim] = k * U32 * mag;
        }
    }
    gj_gpu_download(ctx, gpu, device, nD, GJ_PRECISION_FP32);
    compare(c, what, gpu, expected, tol, nD);
    free(gpu);
    free(tol);
    free(g);
}

static void check_dparams(gj_context *ctx, const gpu_case *c, const case_data *d, const magnitudes *mg,
                          const void *device, const double *expected, const double *mag, double roundings,
                          const char *what) {
    const size_t n = d->n_params;
    double *gpu = malloc(n * sizeof(double)), *tol = malloc(n * sizeof(double));
    assert_true(gpu && tol);
    const int fp16_atomics = d->precision == GJ_PRECISION_FP16 && d->F > 1;
    for (size_t p = 0; p < n; ++p) {
        /* The parameter sums count contributions (atomics, any order) of `roundings` float
         * operations each: (count + roundings) u32 * sum |terms| (+ the prefill). */
        const double sum_abs = mag[p] + fabs(d->prefill[p]);
        tol[p] = (mg->count[p] + roundings) * U32 * sum_abs;
        if (fp16_atomics) {
            /* fp16 gradients (F >= 2) are accumulated with half2 atomics: each contribution is
             * rounded to fp16 and each partial sum too, |partial| <= sum |terms|:
             * (count + 1) * (u16 * sum |terms| + SUB16). */
            tol[p] += (mg->count[p] + 1.0) * (U16 * sum_abs + SUB16);
        } else {
            /* fp32 accumulation; fp16 parameters with F = 1 are cast once at the end. */
            tol[p] += half_rounding(d->precision, expected[p]);
        }
    }
    gj_gpu_download(ctx, gpu, device, n, d->precision);
    compare(c, what, gpu, expected, tol, n);
    free(gpu);
    free(tol);
}

static void check_ddldy(gj_context *ctx, const gpu_case *c, const case_data *d, const reference *r,
                        const magnitudes *mg, const device_data *dev) {
    const size_t nW = d->n * d->width;
    double *gpu = malloc(nW * sizeof(double)), *expected = malloc(nW * sizeof(double)), *tol = malloc(nW * sizeof(double));
    assert_true(gpu && expected && tol);
    /* dL/d(dL/dy_lf) = sum_d H_d * dy_lf/dx_d: D * 2^D (D + 3) roundings times
     * sum_d |H_d| * scale * W1 * 2 theta_max; then rounded once to fp16. Padding: 0. */
    const double k = (double)d->D * (1u << d->D) * (d->D + 3);
    for (uint64_t i = 0; i < d->n; ++i) {
        double hsum = 0.0;
        for (uint32_t dim = 0; dim < d->D; ++dim) {
            hsum += fabs(d->h[i * d->D + dim]);
        }
        for (uint32_t kk = 0; kk < d->width; ++kk) {
            const size_t at = out_index(d, c->layout, i, kk);
            if (kk < d->n_out) {
                const uint32_t l = kk / d->F;
                expected[at] = r->bb_ddldy[i * d->n_out + kk];
                tol[at] = k * U32 * hsum * d->ref.levels[l].scale * mg->w1 * 2.0 * mg->theta_max[i * d->L + l] +
                          half_rounding(d->precision, expected[at]);
            } else {
                expected[at] = 0.0;
                tol[at] = 0.0;
            }
        }
    }
    gj_gpu_download(ctx, gpu, dev->bb_ddldy, nW, d->precision);
    compare(c, "bb_ddldy", gpu, expected, tol, nW);
    free(gpu);
    free(expected);
    free(tol);
}

/* --------------------------------------------------------------- a case */

static void run_case(void **state) {
    gpu_case *c = *state;
    suite *s = &the_suite;
    if (!s->have_gpu) {
        skip();
    }
    gj_gpu_compile_job *job = &s->jobs[c - s->cases];
    if (job->status != GJ_OK) {
        fail_msg("%s: compile failed: %s: %s\n%s", c->name, gj_status_name(job->status), c->json, job->message);
    }
    gj_module *m = NULL;
    gj_gpu_ok(s->ctx, gj_module_load(s->ctx, c->enc, &c->opts, job->prog, &m), "gj_module_load");
    assert_int_equal(gj_module_output_width(m), c->opts.output_width_multiple == 16
                                                    ? (gj_encoding_n_output_dims(c->enc) + 15) / 16 * 16
                                                    : gj_encoding_n_output_dims(c->enc));
    case_data d;
    make_data(c, &d);
    reference r;
    run_reference(c, &d, &r);
    magnitudes mg;
    measure(c, &d, &mg);
    device_data dev;
    upload_case(s->ctx, c, &d, &dev);
    run_gpu(s->ctx, m, c, &d, &dev);

    check_forward(s->ctx, c, &d, &r, &mg, &dev);
    check_dx(s->ctx, c, &d, &mg, dev.dx, r.dx, 0, "dx (fused)");
    check_dx(s->ctx, c, &d, &mg, dev.dx_only, r.dx, 0, "dx (alone)");
    check_dparams(s->ctx, c, &d, &mg, dev.dparams, r.dparams, mg.bwd, d.D + 3.0, "dparams (fused)");
    check_dparams(s->ctx, c, &d, &mg, dev.dparams_only, r.dparams, mg.bwd, d.D + 3.0, "dparams (alone)");
    check_ddldy(s->ctx, c, &d, &r, &mg, &dev);
    check_dx(s->ctx, c, &d, &mg, dev.bb_dx, r.bb_dx, 1, "bb_dx");
    check_dx(s->ctx, c, &d, &mg, dev.bb_dx_only, r.bb_dx, 1, "bb_dx (alone)");
    check_dparams(s->ctx, c, &d, &mg, dev.bb_dparams, r.bb_dparams, mg.bb, (d.D + 4.0) * d.D, "bb_dparams");

    free_device(s->ctx, &dev);
    free_magnitudes(&mg);
    free_reference(&r);
    free_data(&d);
    gj_module_destroy(m);
}

/* ------------------------------------------------------------ the suite */

static int suite_setup(void **state) {
    (void)state;
    suite *s = &the_suite;
    if (gj_context_create(&s->ctx) != GJ_OK) {
        return -1;
    }
    gj_context_set_log(s->ctx, NULL, NULL);
    for (size_t i = 0; i < s->n_cases; ++i) {
        gpu_case *c = &s->cases[i];
        gj_status status = gj_encoding_create(s->ctx, c->json, c->n_dims, &c->enc);
        if (status != GJ_OK) {
            printf("configuration of %s refused: %s\n", c->name, gj_context_errmsg(s->ctx));
            return -1;
        }
    }
    s->have_gpu = gj_gpu_available(&s->info);
    if (!s->have_gpu) {
        return 0;
    }
    for (size_t i = 0; i < s->n_cases; ++i) {
        s->jobs[i].enc = s->cases[i].enc;
        s->jobs[i].opts = s->cases[i].opts;
        snprintf(s->jobs[i].arch, sizeof s->jobs[i].arch, "%s", s->info.arch);
    }
    printf("compiling %zu configurations for %s\n", s->n_cases, s->info.arch);
    fflush(stdout);
    gj_gpu_compile_all(s->jobs, s->n_cases);
    return 0;
}

static int suite_teardown(void **state) {
    (void)state;
    suite *s = &the_suite;
    for (size_t i = 0; i < s->n_cases; ++i) {
        gj_program_destroy(s->jobs[i].prog);
        gj_encoding_destroy(s->cases[i].enc);
    }
    gj_context_destroy(s->ctx);
    return 0;
}

int main(void) {
    suite *s = &the_suite;
    int rows[MAX_CASES * N_PARAMS];
    s->n_cases = gj_pw_generate(matrix_params, N_PARAMS, allowed, rows, MAX_CASES);
    if (!gj_pw_check(matrix_params, N_PARAMS, allowed, rows, s->n_cases)) {
        printf("the case matrix does not cover every pair\n");
        return 1;
    }
    struct CMUnitTest *tests = calloc(s->n_cases, sizeof *tests);
    if (!tests) {
        return 1;
    }
    for (size_t i = 0; i < s->n_cases; ++i) {
        gpu_case *c = &s->cases[i];
        memcpy(c->row, rows + i * N_PARAMS, sizeof c->row);
        describe_case(c);
        tests[i].name = c->name;
        tests[i].test_func = run_case;
        tests[i].initial_state = c;
    }
    const int failed = _cmocka_run_group_tests("test_gpu_passes", tests, s->n_cases, suite_setup, suite_teardown);
    free(tests);
    return failed;
}
