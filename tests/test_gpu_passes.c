/*
 * Every pass of the generated kernels against the double-precision CPU reference
 * (tools/reference/cpu_reference.h), over a pairwise-covering matrix of configurations:
 * grid types, hashes, interpolations, F in {1,2,4,8}, D in {1,2,3,4,7}, fp16 and fp32,
 * max_level scalar (all levels, part of them) and per point, stochastic interpolation,
 * fixed_point_pos, kernel shapes (order, block size, points per thread, levels per
 * thread), output layout and padding, gradient mode. Every pair of values of any two of
 * these occurs in some case. Two more cases, outside the matrix, take a Dense and a Tiled
 * grid to D = 8, past the prime hashes' limit, which those grids do not have (they never
 * hash). All programs are compiled up front in parallel; each case is one test.
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
#include "gpu_bounds.h"
#include "gpu_harness.h"
#include "pairwise.h"

/* ------------------------------------------------------------ the matrix */

enum {
    P_TYPE, P_HASH, P_INTERP, P_F, P_D, P_PRECISION, P_MAX_LEVEL, P_STOCHASTIC, P_FIXED_POINT, P_KERNEL, P_OUTPUT,
    P_MODE, N_PARAMS
};

static const gj_pw_param matrix_params[N_PARAMS] = {
    {"type", 3},   {"hash", 5},        {"interpolation", 3}, {"F", 4},      {"D", 5},      {"precision", 2},
    {"max_level", 3}, {"stochastic", 2}, {"fixed_point", 2}, {"kernel", 5}, {"output", 2}, {"mode", 2},
};

static const char *const type_names[] = {"Hash", "Dense", "Tiled"};
static const char *const hash_names[] = {"Prime", "CoherentPrime", "ReversedPrime", "Rng", "BaseConvert"};
static const char *const interp_names[] = {"Nearest", "Linear", "Smoothstep"};
static const uint32_t f_values[] = {1, 2, 4, 8};
/* The matrix takes the first five; D = 8 is for the extra Dense and Tiled cases only. */
static const uint32_t d_values[] = {1, 2, 3, 4, 7, 8};
#define D_INDEX_EIGHT 5
static const char *const precision_names[] = {"fp16", "fp32"};
static const float max_level_scalars[] = {1.0f, 0.6f, -1.0f /* per point */};
/* Kernel shapes: order, block size, points per thread, levels per thread (0: chosen per
 * launch; groups of 3 leave a short last group of the 4-level grids; 4 is every level in
 * one group; groups of whole 32-bit words stage point-major rows in shared memory). */
static const struct {
    gj_order order;
    uint32_t block, ppt, lpt;
} kernel_shapes[] = {{GJ_ORDER_LEVEL_MAJOR, 256, 1, 0}, {GJ_ORDER_POINT_MAJOR, 128, 2, 0},
                     {GJ_ORDER_LEVEL_MAJOR, 64, 4, 1},  {GJ_ORDER_LEVEL_MAJOR, 128, 1, 3},
                     {GJ_ORDER_LEVEL_MAJOR, 64, 2, 4}};

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
    static const uint32_t hash_log2[] = {5, 9, 11, 13, 12, 12}; /* per D index: level 0 dense, level 2+ hashed */
    uint32_t base = d >= 7 ? 2 : (dense && d >= 3 ? 4 : 8);
    if (r[P_TYPE] == 2) {
        /* Tiled with an odd base: base^D entries leave the levels after the first at odd
         * entry offsets, where paired vector reductions would be misaligned. */
        base += base == 8 ? -1 : 1;
    }
    uint32_t levels = dense && d >= 7 ? 3 : 4;
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
    c->opts.levels_per_thread = kernel_shapes[r[P_KERNEL]].lpt;
    c->opts.output_width_multiple = r[P_OUTPUT] ? 16 : 1;
    c->layout = r[P_OUTPUT] ? GJ_LAYOUT_SOA : GJ_LAYOUT_AOS;
    c->max_level = max_level_scalars[r[P_MAX_LEVEL]];
    c->mode = r[P_MODE] ? GJ_GRAD_ACCUMULATE : GJ_GRAD_OVERWRITE;
    snprintf(c->name, sizeof c->name, "%s/%s/%s/F%u/D%u/%s/ml%s/%s%s/%s-b%u-p%u-l%u/%s%s/%s", type_names[r[P_TYPE]],
             hash_names[r[P_HASH]], interp_names[r[P_INTERP]], f, d, precision_names[r[P_PRECISION]],
             c->max_level < 0 ? "point" : (c->max_level == 1.0f ? "1" : "0.6"), r[P_STOCHASTIC] ? "stoch" : "det",
             r[P_FIXED_POINT] ? "/fixed" : "", c->opts.order == GJ_ORDER_LEVEL_MAJOR ? "level" : "point",
             c->opts.block_size, c->opts.points_per_thread, c->opts.levels_per_thread, r[P_OUTPUT] ? "soa" : "aos",
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
    gj_ref_from_encoding(&d->ref, c->enc);
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
        if (gj_encoding_fixed_point_pos(c->enc)) {
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

/* ------------------------------------------------------------ comparison */

/* Mismatches of the running case; the case fails at its end, after every check ran, so
 * that one run shows everything that is wrong. */
static size_t case_failures;

/* Counts the values with |gpu - expected| > tol (or gpu NaN where expected is not),
 * printing the first few and the summary. */
static void compare(const gpu_case *c, const char *what, const double *gpu, const double *expected, const double *tol,
                    size_t count) {
    size_t bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < count; ++i) {
        const double err = fabs(gpu[i] - expected[i]);
        if (!(err <= tol[i])) { /* NaN counts as wrong */
            if (bad < 5) {
                printf("  %s: %s[%zu]: gpu %.9g, expected %.9g, |error| %.3g > tolerance %.3g\n", c->name, what, i,
                       gpu[i], expected[i], err, tol[i]);
            }
            ++bad;
        } else if (tol[i] > 0 && err / tol[i] > worst) {
            worst = err / tol[i];
        }
    }
    if (bad) {
        printf("FAILED %s: %s: %zu of %zu values outside the tolerance\n", c->name, what, bad, count);
        case_failures += bad;
    } else {
        printf("  ok %-16s largest |error| / tolerance %.3g\n", what, worst);
    }
}

/* ---------------------------------------------------------- device state */

typedef struct device_data {
    void *x, *params, *max_level, *dl_dy, *h;
    void *y, *y2, *dy_dx, *dparams, *dparams_only, *dx, *dx_only, *bb_dparams, *bb_ddldy, *bb_dx, *bb_dx_only;
    void *dparams_dydx, *dx_dydx, *dx_dydx_only; /* backward with the forward's dy/dx */
    void *dy_dx_compact, *dx_compact;            /* the compact round trip */
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
    dev->dparams_dydx = gj_gpu_upload(ctx, start, d->n_params, d->precision);
    free(start);
    dev->dx = gj_gpu_alloc(ctx, nD * sizeof(float));
    dev->dx_only = gj_gpu_alloc(ctx, nD * sizeof(float));
    dev->bb_ddldy = gj_gpu_alloc(ctx, nW * e);
    dev->bb_dx = gj_gpu_alloc(ctx, nD * sizeof(float));
    dev->bb_dx_only = gj_gpu_alloc(ctx, nD * sizeof(float));
    dev->dx_dydx = gj_gpu_alloc(ctx, nD * sizeof(float));
    dev->dx_dydx_only = gj_gpu_alloc(ctx, nD * sizeof(float));
    dev->dy_dx_compact = gj_gpu_alloc(ctx, (size_t)d->n_out * nD * 2);
    dev->dx_compact = gj_gpu_alloc(ctx, nD * sizeof(float));
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
    gj_gpu_put(ctx, dev->dx_dydx, junk, nD * sizeof(float));
    gj_gpu_put(ctx, dev->dx_dydx_only, junk, nD * sizeof(float));
    gj_gpu_put(ctx, dev->dx_compact, junk, nD * sizeof(float));
    gj_gpu_put(ctx, dev->dy_dx, junk, (size_t)d->n_out * nD * sizeof(float));
    free(junk);
}

static void free_device(gj_context *ctx, device_data *dev) {
    void **all[] = {&dev->x, &dev->params, &dev->max_level, &dev->dl_dy, &dev->h, &dev->y, &dev->y2, &dev->dy_dx,
                    &dev->dparams, &dev->dparams_only, &dev->dx, &dev->dx_only, &dev->bb_dparams, &dev->bb_ddldy,
                    &dev->bb_dx, &dev->bb_dx_only, &dev->dparams_dydx, &dev->dx_dydx, &dev->dx_dydx_only,
                    &dev->dy_dx_compact, &dev->dx_compact};
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
    /* dL/dx from the dy/dx of the forward pass above (same x, params, max level). */
    b.dy_dx = dev->dy_dx;
    b.dL_dx = dev->dx_dydx_only;
    gj_gpu_ok(ctx, gj_backward(m, NULL, &b), "gj_backward (input from dy/dx)");
    b.dL_dparams = dev->dparams_dydx;
    b.dL_dx = dev->dx_dydx;
    gj_gpu_ok(ctx, gj_backward(m, NULL, &b), "gj_backward (params, input from dy/dx)");
    /* The compact round trip: dy/dx alone into its compact form, dL/dx alone from it. */
    f.y = NULL;
    f.dy_dx = NULL;
    f.dy_dx_compact = dev->dy_dx_compact;
    gj_gpu_ok(ctx, gj_forward(m, NULL, &f), "gj_forward (compact dy/dx)");
    b.dy_dx = NULL;
    b.dy_dx_compact = dev->dy_dx_compact;
    b.dL_dparams = NULL;
    b.dL_dx = dev->dx_compact;
    gj_gpu_ok(ctx, gj_backward(m, NULL, &b), "gj_backward (input from compact dy/dx)");

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

/* Tolerances: tests/support/gpu_bounds.h (fp32 rounding bounds from the sizes of the
 * terms summed; fp16 outputs rounded once; fp16 atomics rounding every partial sum). */

static int is_fp16(const case_data *d) {
    return d->precision == GJ_PRECISION_FP16;
}

static void check_forward(gj_context *ctx, const gpu_case *c, const case_data *d, const reference *r,
                          const gj_bounds *b, const device_data *dev) {
    const size_t nW = d->n * d->width;
    double *gpu = malloc(nW * sizeof(double)), *expected = malloc(nW * sizeof(double)), *tol = malloc(nW * sizeof(double));
    assert_true(gpu && expected && tol);
    for (uint64_t i = 0; i < d->n; ++i) {
        for (uint32_t k = 0; k < d->width; ++k) {
            const size_t at = out_index(d, c->layout, i, k);
            if (k < d->n_out) {
                expected[at] = r->y[i * d->n_out + k];
                tol[at] = gj_bound_y(b, i, k) + gj_bound_half(is_fp16(d), expected[at]);
            } else {
                expected[at] = 0.0; /* padding: exactly 0 */
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

    /* dy/dx is float for both precisions (the fp16 parameters are exact inputs). */
    const size_t n_check = (size_t)N_DYDX_POINTS * d->n_out * d->D;
    float *raw = malloc((size_t)d->n_out * d->n * d->D * sizeof(float));
    double *g2 = malloc(n_check * sizeof(double)), *e2 = malloc(n_check * sizeof(double)), *t2 = malloc(n_check * sizeof(double));
    assert_true(raw && g2 && e2 && t2);
    gj_gpu_get(ctx, raw, dev->dy_dx, (size_t)d->n_out * d->n * d->D * sizeof(float));
    for (uint64_t i = 0; i < N_DYDX_POINTS; ++i) {
        for (uint32_t k = 0; k < d->n_out; ++k) {
            for (uint32_t dim = 0; dim < d->D; ++dim) {
                const size_t at = ((size_t)i * d->n_out + k) * d->D + dim;
                g2[at] = raw[((size_t)k * d->n + i) * d->D + dim]; /* the kernel's layout: [(k * n + i) * D + d] */
                e2[at] = r->dy_dx[at];
                t2[at] = gj_bound_dydx(b, i, k);
            }
        }
    }
    compare(c, "dy_dx", g2, e2, t2, n_check);
    free(raw);
    free(g2);
    free(e2);
    free(t2);
}

/* dL/dx from compact dy/dx, on the points whose dy/dx the reference keeps: within the fp32
 * bound plus each term's fp16 rounding of dy/dx in units of its level's scale (half an ulp,
 * 2^-11 relative, or 2^-25 of the scale below fp16's normal range). */
static void check_dx_compact(gj_context *ctx, const gpu_case *c, const case_data *d, const reference *r,
                             const gj_bounds *b, const device_data *dev) {
    const size_t nD = d->n * d->D, count = (size_t)N_DYDX_POINTS * d->D;
    double *gpu = malloc(nD * sizeof(double)), *expected = malloc(count * sizeof(double));
    double *tol = malloc(count * sizeof(double)), *g = malloc(d->n_out * sizeof(double));
    assert_true(gpu && expected && tol && g);
    gj_gpu_download(ctx, gpu, dev->dx_compact, nD, GJ_PRECISION_FP32);
    for (uint64_t i = 0; i < N_DYDX_POINTS; ++i) {
        point_dl_dy(d, c->layout, i, g);
        for (uint32_t dim = 0; dim < d->D; ++dim) {
            double rounding = 0.0;
            for (uint32_t k = 0; k < d->n_out; ++k) {
                const double v = r->dy_dx[((size_t)i * d->n_out + k) * d->D + dim];
                rounding += fabs(g[k]) * (fabs(v) * 0x1p-11 + d->ref.levels[k / d->F].scale * 0x1p-25);
            }
            expected[i * d->D + dim] = r->dx[i * d->D + dim];
            tol[i * d->D + dim] = gj_bound_dx(b, i) + rounding;
        }
    }
    compare(c, "dx (compact dy/dx)", gpu, expected, tol, count);
    free(gpu);
    free(expected);
    free(tol);
    free(g);
}

/* dL/dx is float for both precisions. */
static void check_dx(gj_context *ctx, const gpu_case *c, const case_data *d, const gj_bounds *b, const void *device,
                     const double *expected, int second_order, const char *what) {
    const size_t nD = d->n * d->D;
    double *gpu = malloc(nD * sizeof(double)), *tol = malloc(nD * sizeof(double));
    assert_true(gpu && tol);
    for (uint64_t i = 0; i < d->n; ++i) {
        const double t = second_order ? gj_bound_bb_dx(b, i) : gj_bound_dx(b, i);
        for (uint32_t dim = 0; dim < d->D; ++dim) {
            tol[i * d->D + dim] = t;
        }
    }
    gj_gpu_download(ctx, gpu, device, nD, GJ_PRECISION_FP32);
    compare(c, what, gpu, expected, tol, nD);
    free(gpu);
    free(tol);
}

static void check_dparams(gj_context *ctx, const gpu_case *c, const case_data *d, const gj_bounds *b,
                          const void *device, const double *expected, int second_order, const char *what) {
    const size_t n = d->n_params;
    double *gpu = malloc(n * sizeof(double)), *tol = malloc(n * sizeof(double));
    assert_true(gpu && tol);
    for (size_t p = 0; p < n; ++p) {
        tol[p] = gj_bound_dparams(b, p, second_order, d->prefill[p], is_fp16(d), expected[p]);
    }
    gj_gpu_download(ctx, gpu, device, n, d->precision);
    compare(c, what, gpu, expected, tol, n);
    free(gpu);
    free(tol);
}

static void check_ddldy(gj_context *ctx, const gpu_case *c, const case_data *d, const reference *r,
                        const gj_bounds *b, const device_data *dev) {
    const size_t nW = d->n * d->width;
    double *gpu = malloc(nW * sizeof(double)), *expected = malloc(nW * sizeof(double)), *tol = malloc(nW * sizeof(double));
    assert_true(gpu && expected && tol);
    for (uint64_t i = 0; i < d->n; ++i) {
        for (uint32_t k = 0; k < d->width; ++k) {
            const size_t at = out_index(d, c->layout, i, k);
            if (k < d->n_out) {
                expected[at] = r->bb_ddldy[i * d->n_out + k];
                tol[at] = gj_bound_bb_ddldy(b, i, k) + gj_bound_half(is_fp16(d), expected[at]);
            } else {
                expected[at] = 0.0; /* padding: exactly 0 */
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
    gj_gpu_ok(s->ctx, gj_gpu_module_for_job(s->ctx, job, &m), "the module");
    assert_int_equal(gj_module_output_width(m), c->opts.output_width_multiple == 16
                                                    ? (gj_encoding_n_output_dims(c->enc) + 15) / 16 * 16
                                                    : gj_encoding_n_output_dims(c->enc));
    case_data d;
    make_data(c, &d);
    reference r;
    run_reference(c, &d, &r);
    double *g = malloc(d.n * d.n_out * sizeof(double));
    assert_non_null(g);
    for (uint64_t i = 0; i < d.n; ++i) {
        point_dl_dy(&d, c->layout, i, g + i * d.n_out);
    }
    gj_bounds b;
    gj_bounds_measure(&b, &d.ref, d.n, d.x, d.params, g, d.h, d.max_level, c->max_level);
    free(g);
    device_data dev;
    upload_case(s->ctx, c, &d, &dev);
    run_gpu(s->ctx, m, c, &d, &dev);

    case_failures = 0;
    check_forward(s->ctx, c, &d, &r, &b, &dev);
    check_dx(s->ctx, c, &d, &b, dev.dx, r.dx, 0, "dx (fused)");
    check_dx(s->ctx, c, &d, &b, dev.dx_only, r.dx, 0, "dx (alone)");
    check_dparams(s->ctx, c, &d, &b, dev.dparams, r.dparams, 0, "dparams (fused)");
    check_dparams(s->ctx, c, &d, &b, dev.dparams_only, r.dparams, 0, "dparams (alone)");
    check_dx(s->ctx, c, &d, &b, dev.dx_dydx, r.dx, 0, "dx (from dy/dx)");
    check_dx(s->ctx, c, &d, &b, dev.dx_dydx_only, r.dx, 0, "dx (from dy/dx, alone)");
    check_dparams(s->ctx, c, &d, &b, dev.dparams_dydx, r.dparams, 0, "dparams (beside dx from dy/dx)");
    check_dx_compact(s->ctx, c, &d, &r, &b, &dev);
    check_ddldy(s->ctx, c, &d, &r, &b, &dev);
    check_dx(s->ctx, c, &d, &b, dev.bb_dx, r.bb_dx, 1, "bb_dx");
    check_dx(s->ctx, c, &d, &b, dev.bb_dx_only, r.bb_dx, 1, "bb_dx (alone)");
    check_dparams(s->ctx, c, &d, &b, dev.bb_dparams, r.bb_dparams, 1, "bb_dparams");

    free_device(s->ctx, &dev);
    gj_bounds_free(&b);
    free_reference(&r);
    free_data(&d);
    gj_module_destroy(m);
    if (case_failures) {
        fail_msg("%s: %zu values outside the tolerance (listed above)", c->name, case_failures);
    }
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
        snprintf(s->jobs[i].arch, sizeof s->jobs[i].arch, "%.15s", s->info.arch);
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
    if (!gj_gpu_available(NULL)) {
        return GJ_TEST_SKIP_ALL; /* ctest reports the binary as skipped; the reason is printed above */
    }
    suite *s = &the_suite;
    int rows[MAX_CASES * N_PARAMS];
    s->n_cases = gj_pw_generate(matrix_params, N_PARAMS, allowed, rows, MAX_CASES);
    if (!gj_pw_check(matrix_params, N_PARAMS, allowed, rows, s->n_cases)) {
        printf("the case matrix does not cover every pair\n");
        return 1;
    }
    /* The D = 8 cases (type, hash, interpolation, F, D, precision, max_level, stochastic,
     * fixed_point, kernel shape, output, mode): Dense with the default hash, which it does
     * not use; Tiled with Prime, Smoothstep, fp32, point-major, SoA output, accumulating. */
    static const int eight[][N_PARAMS] = {
        {1, 1, 1, 1, D_INDEX_EIGHT, 0, 0, 0, 0, 0, 0, 0},
        {2, 0, 2, 2, D_INDEX_EIGHT, 1, 1, 0, 0, 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof eight / sizeof eight[0] && s->n_cases < MAX_CASES; ++i) {
        memcpy(rows + s->n_cases * N_PARAMS, eight[i], sizeof eight[i]);
        s->n_cases++;
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
