/*
 * The backward-of-backward pass against finite differences of the GPU's own backward
 * pass (fp32), for D = 1..4 with Linear and Smoothstep (the reference implementation
 * gets this wrong for every D but 2, docs/design.md §8.1; here nothing comes from a reference).
 *
 * Given H = dLoss/d(dL/dx) and the backward pass dL/dx(x, theta, g), the pass computes
 * the gradients of S = sum_i H_i . dL/dx_i with respect to x, theta and g = dL/dy. S is
 * linear in theta and in g, so central differences with a step of 1 are exact there
 * (up to float rounding). In x, S is a polynomial of degree <= 3 in each coordinate
 * inside a cell (Smoothstep weights are cubic), so a central difference followed by one
 * Richardson step, (4 D(h/2) - D(h)) / 3, is exact too; the points are chosen with every
 * cell coordinate t in [0.25, 0.75] at every level, and h small enough that x +- h stays
 * in the same cells. What remains is float rounding in the GPU's dL/dx, bounded below.
 *
 * Point-major kernels: dL/dx sums its levels in registers in a fixed order, so a point
 * the perturbation does not touch gives bit-identical dL/dx, and differences isolate
 * the points that matter.
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
#include "gpu_harness.h"

#define N_POINTS 64
#define N_LEVELS 3
#define N_FEATURES 2
#define N_SAMPLED_PARAMS 24
#define STEP_X 0.025f /* the finest scale is 7: a step moves t by at most 0.175 */

typedef struct fd_case {
    char name[64];
    char json[512];
    uint32_t n_dims;
    gj_interpolation interp;
} fd_case;

#define N_CASES 8
static fd_case cases[N_CASES];

typedef struct fd_suite {
    gj_context *ctx;
    gj_runtime_info info;
    int have_gpu;
    gj_encoding *enc[N_CASES];
    gj_codegen_options opts;
    gj_gpu_compile_job jobs[N_CASES];
} fd_suite;

static fd_suite the_suite;

/* ----------------------------------------------------------- one case */

typedef struct fd_state {
    gj_context *ctx;
    gj_module *m;
    gj_ref_encoding ref;
    uint32_t D, n_out;
    uint64_t n_params;
    float x[N_POINTS * 4];
    double params[4096 * N_FEATURES * N_LEVELS];
    double g[N_POINTS * N_LEVELS * N_FEATURES];
    float h[N_POINTS * 4];
    void *dev_x, *dev_params, *dev_g, *dev_h, *dev_dx;
    double w1, w2;
} fd_state;

/* Points whose cell coordinate is in [0.25, 0.75] in every dimension at every level. */
static void choose_points(fd_state *s, gj_gpu_rng *rng) {
    for (uint32_t i = 0; i < N_POINTS; ++i) {
        for (int attempt = 0;; ++attempt) {
            assert_true(attempt < 10000000);
            float *x = s->x + i * s->D;
            for (uint32_t d = 0; d < s->D; ++d) {
                x[d] = gj_gpu_rng_float(rng, 0.02f, 0.98f);
            }
            int inside = 1;
            for (uint32_t l = 0; l < N_LEVELS && inside; ++l) {
                uint32_t c[GJ_REF_MAX_DIMS];
                double t[GJ_REF_MAX_DIMS];
                gj_ref_locate(&s->ref, l, x, c, t);
                for (uint32_t d = 0; d < s->D; ++d) {
                    inside &= t[d] >= 0.25 && t[d] <= 0.75;
                }
            }
            if (inside) {
                break;
            }
        }
    }
}

/* S_i = sum_d H_id * (dL/dx)_id from the GPU backward pass, for the current device x and params. */
static void eval_s(fd_state *s, const float *x, double *out) {
    if (x) {
        gj_gpu_put(s->ctx, s->dev_x, x, sizeof(float) * N_POINTS * s->D);
    }
    gj_backward_desc b;
    gj_backward_desc_init(&b);
    b.n = N_POINTS;
    b.x = s->dev_x;
    b.params = s->dev_params;
    b.dL_dy = s->dev_g;
    b.dL_dx = s->dev_dx;
    gj_gpu_ok(s->ctx, gj_backward(s->m, NULL, &b), "gj_backward");
    float dx[N_POINTS * 4];
    gj_gpu_get(s->ctx, dx, s->dev_dx, sizeof(float) * N_POINTS * s->D);
    for (uint32_t i = 0; i < N_POINTS; ++i) {
        double sum = 0.0;
        for (uint32_t d = 0; d < s->D; ++d) {
            sum += (double)s->h[i * s->D + d] * dx[i * s->D + d];
        }
        out[i] = sum;
    }
}

/* Bound on the float error of S_i: dL/dx sums L * F * 2^D terms of <= D + 4 roundings
 * (recursive summation, Higham §4.2) whose absolute values add up to at most
 * sum_l scale_l * W1 * 2 |theta|max * sum_f |g_lf| per component; S adds D of them. */
static double s_error_bound(const fd_state *s, uint32_t i, double theta_max) {
    double mag = 0.0;
    for (uint32_t l = 0; l < N_LEVELS; ++l) {
        double gl = 0.0;
        for (uint32_t f = 0; f < N_FEATURES; ++f) {
            gl += fabs(s->g[i * s->n_out + l * N_FEATURES + f]);
        }
        mag += s->ref.levels[l].scale * s->w1 * 2.0 * theta_max * gl;
    }
    double hsum = 0.0;
    for (uint32_t d = 0; d < s->D; ++d) {
        hsum += fabs(s->h[i * s->D + d]);
    }
    const double k = (double)N_LEVELS * N_FEATURES * (1u << s->D) * (s->D + 4) + s->D;
    return k * 5.9604644775390625e-08 * mag * hsum;
}

static void expect_close(const char *name, const char *what, size_t index, double gpu, double fd, double tol) {
    if (!(fabs(gpu - fd) <= tol)) {
        fail_msg("%s: %s[%zu]: backward_backward %.9g, finite differences %.9g, |difference| %.3g > %.3g", name, what,
                 index, gpu, fd, fabs(gpu - fd), tol);
    }
}

/* d S / d x: central differences at h and h/2, one Richardson step. The error: rounding
 * of S (bound e_i) divided by the step, amplified by the extrapolation: each difference
 * quotient is off by <= 2 e_i / (x+ - x-), and (4 D(h/2) - D(h)) / 3 by <= (4 * 2 + 1) / 3
 * times that of D(h) = 3 e_i / h_actual... taken as 4 e_i / (h/2). */
static void check_dx(fd_state *s, const char *name, const double *bb_dx, double theta_max) {
    double plus[N_POINTS], minus[N_POINTS], fd[2][N_POINTS * 4];
    float xp[N_POINTS * 4], xm[N_POINTS * 4];
    for (int half = 0; half < 2; ++half) {
        const float step = half ? STEP_X / 2 : STEP_X;
        for (uint32_t e = 0; e < s->D; ++e) {
            memcpy(xp, s->x, sizeof(float) * N_POINTS * s->D);
            memcpy(xm, s->x, sizeof(float) * N_POINTS * s->D);
            for (uint32_t i = 0; i < N_POINTS; ++i) {
                xp[i * s->D + e] += step;
                xm[i * s->D + e] -= step;
            }
            eval_s(s, xp, plus);
            eval_s(s, xm, minus);
            for (uint32_t i = 0; i < N_POINTS; ++i) {
                const double dxe = (double)xp[i * s->D + e] - (double)xm[i * s->D + e];
                fd[half][i * s->D + e] = (plus[i] - minus[i]) / dxe;
            }
        }
    }
    gj_gpu_put(s->ctx, s->dev_x, s->x, sizeof(float) * N_POINTS * s->D);
    for (uint32_t i = 0; i < N_POINTS; ++i) {
        const double noise = 4.0 * s_error_bound(s, i, theta_max) / (STEP_X / 2);
        for (uint32_t e = 0; e < s->D; ++e) {
            const size_t at = i * s->D + e;
            const double richardson = (4.0 * fd[1][at] - fd[0][at]) / 3.0;
            /* + 1e-5 relative: the GPU's own bb_dx rounding, small beside the rest. */
            expect_close(name, "dL/dx", at, bb_dx[at], richardson, noise + 1e-5 * fabs(richardson) + 1e-9);
        }
    }
}

/* d S / d g_ik: S is linear in g, so steps of about +-1 give the derivative exactly but
 * for the rounding of S at both ends: <= (e+ + e-) / (g+ - g-) with e bounded for |g| <= 2.
 * The steps are the float values actually stored, so rounding of g +- 1 does not matter. */
static void check_ddldy(fd_state *s, const char *name, const double *bb_ddldy, double theta_max) {
    double plus[N_POINTS], minus[N_POINTS], g[N_POINTS * N_LEVELS * N_FEATURES], span[N_POINTS];
    const size_t n_g = (size_t)N_POINTS * s->n_out;
    for (uint32_t k = 0; k < s->n_out; ++k) {
        for (int sign = 0; sign < 2; ++sign) {
            memcpy(g, s->g, n_g * sizeof(double));
            for (uint32_t i = 0; i < N_POINTS; ++i) {
                const double moved = (float)(s->g[i * s->n_out + k] + (sign ? -1.0 : 1.0));
                g[i * s->n_out + k] = moved;
                span[i] = sign ? span[i] - moved : moved;
            }
            gj_gpu_put_elements(s->ctx, s->dev_g, g, n_g, GJ_PRECISION_FP32);
            eval_s(s, NULL, sign ? minus : plus);
        }
        for (uint32_t i = 0; i < N_POINTS; ++i) {
            const double fd = (plus[i] - minus[i]) / span[i];
            const double tol = 2.0 * 2.0 * s_error_bound(s, i, theta_max) / span[i] + 1e-5 * fabs(fd) + 1e-9;
            expect_close(name, "dL/d(dL/dy)", i * s->n_out + k, bb_ddldy[i * s->n_out + k], fd, tol);
        }
    }
    gj_gpu_put_elements(s->ctx, s->dev_g, s->g, n_g, GJ_PRECISION_FP32);
}

/* d (sum_i S_i) / d theta_p for sampled parameters p (corners that points visit). Points
 * the parameter does not touch give identical S at both ends and drop out. */
static void check_dparams(fd_state *s, const char *name, const double *bb_dparams, double theta_max) {
    double plus[N_POINTS], minus[N_POINTS];
    for (uint32_t j = 0; j < N_SAMPLED_PARAMS; ++j) {
        const uint32_t i = j % N_POINTS, l = j % N_LEVELS, b = (j * 5u) % (1u << s->D), f = j % N_FEATURES;
        uint32_t cell[GJ_REF_MAX_DIMS], corner[GJ_REF_MAX_DIMS];
        double t[GJ_REF_MAX_DIMS];
        gj_ref_locate(&s->ref, l, s->x + i * s->D, cell, t);
        for (uint32_t d = 0; d < s->D; ++d) {
            corner[d] = cell[d] + ((b >> d) & 1u);
        }
        const uint64_t p = (s->ref.levels[l].offset + gj_ref_corner_index(&s->ref, l, corner)) * N_FEATURES + f;
        float moved[2];
        for (int sign = 0; sign < 2; ++sign) {
            moved[sign] = (float)(s->params[p] + (sign ? -1.0 : 1.0)); /* the stored step, exactly */
            gj_gpu_put(s->ctx, (char *)s->dev_params + p * sizeof(float), &moved[sign], sizeof moved[sign]);
            eval_s(s, NULL, sign ? minus : plus);
        }
        const float original = (float)s->params[p];
        gj_gpu_put(s->ctx, (char *)s->dev_params + p * sizeof(float), &original, sizeof original);
        const double span = (double)moved[0] - (double)moved[1];
        double fd = 0.0, tol = 1e-9;
        for (uint32_t q = 0; q < N_POINTS; ++q) {
            if (plus[q] != minus[q]) {
                fd += (plus[q] - minus[q]) / span;
                /* the rounding of S at both ends, |theta| up to |theta|max + 1 there */
                tol += 2.0 * s_error_bound(s, q, theta_max + 1.0) / span;
            }
        }
        expect_close(name, "dL/dparams", (size_t)p, bb_dparams[p], fd, tol + 1e-5 * fabs(fd));
    }
}

static void run_case(void **state) {
    const size_t index = (size_t)(uintptr_t)*state;
    fd_suite *suite = &the_suite;
    if (!suite->have_gpu) {
        skip();
    }
    const fd_case *c = &cases[index];
    gj_gpu_compile_job *job = &suite->jobs[index];
    if (job->status != GJ_OK) {
        fail_msg("%s: compile failed: %s\n%s", c->name, gj_status_name(job->status), job->message);
    }
    fd_state *s = calloc(1, sizeof *s);
    assert_non_null(s);
    s->ctx = suite->ctx;
    gj_gpu_ok(s->ctx, gj_gpu_module_for_job(s->ctx, job, &s->m), "the module");
    const gj_encoding *enc = suite->enc[index];
    gj_ref_from_encoding(&s->ref, enc);
    s->D = c->n_dims;
    s->n_out = N_LEVELS * N_FEATURES;
    s->n_params = gj_encoding_n_params(enc);
    assert_true(s->n_params <= sizeof s->params / sizeof s->params[0]);
    s->w1 = c->interp == GJ_INTERP_SMOOTHSTEP ? 1.5 : 1.0;
    s->w2 = c->interp == GJ_INTERP_SMOOTHSTEP ? 6.0 : 1.0;
    gj_gpu_rng rng = {0xFD0000ull + index};
    choose_points(s, &rng);
    double theta_max = 0.0;
    for (uint64_t p = 0; p < s->n_params; ++p) {
        s->params[p] = gj_gpu_rng_float(&rng, -1.0f, 1.0f);
        theta_max = fmax(theta_max, fabs(s->params[p]));
    }
    for (size_t k = 0; k < (size_t)N_POINTS * s->n_out; ++k) {
        s->g[k] = gj_gpu_rng_float(&rng, -1.0f, 1.0f);
    }
    for (size_t k = 0; k < (size_t)N_POINTS * s->D; ++k) {
        s->h[k] = gj_gpu_rng_float(&rng, -1.0f, 1.0f);
    }
    s->dev_x = gj_gpu_upload_floats(s->ctx, s->x, (size_t)N_POINTS * s->D);
    s->dev_params = gj_gpu_upload(s->ctx, s->params, s->n_params, GJ_PRECISION_FP32);
    s->dev_g = gj_gpu_upload(s->ctx, s->g, (size_t)N_POINTS * s->n_out, GJ_PRECISION_FP32);
    s->dev_h = gj_gpu_upload_floats(s->ctx, s->h, (size_t)N_POINTS * s->D);
    s->dev_dx = gj_gpu_alloc(s->ctx, sizeof(float) * N_POINTS * s->D);

    /* The pass under test. */
    void *bb_dparams = gj_gpu_alloc(s->ctx, s->n_params * sizeof(float));
    void *bb_ddldy = gj_gpu_alloc(s->ctx, sizeof(float) * N_POINTS * s->n_out);
    void *bb_dx = gj_gpu_alloc(s->ctx, sizeof(float) * N_POINTS * s->D);
    gj_backward_backward_desc bb;
    gj_backward_backward_desc_init(&bb);
    bb.n = N_POINTS;
    bb.x = s->dev_x;
    bb.params = s->dev_params;
    bb.dL_ddLdx = s->dev_h;
    bb.dL_dy = s->dev_g;
    bb.dL_dparams = bb_dparams;
    bb.dL_ddLdy = bb_ddldy;
    bb.dL_dx = bb_dx;
    gj_gpu_ok(s->ctx, gj_backward_backward(s->m, NULL, &bb), "gj_backward_backward");
    double *out_dparams = malloc(s->n_params * sizeof(double));
    double out_ddldy[N_POINTS * N_LEVELS * N_FEATURES], out_dx[N_POINTS * 4];
    assert_non_null(out_dparams);
    gj_gpu_download(s->ctx, out_dparams, bb_dparams, s->n_params, GJ_PRECISION_FP32);
    gj_gpu_download(s->ctx, out_ddldy, bb_ddldy, (size_t)N_POINTS * s->n_out, GJ_PRECISION_FP32);
    gj_gpu_download(s->ctx, out_dx, bb_dx, (size_t)N_POINTS * s->D, GJ_PRECISION_FP32);

    check_dx(s, c->name, out_dx, theta_max);
    check_ddldy(s, c->name, out_ddldy, theta_max);
    check_dparams(s, c->name, out_dparams, theta_max);

    free(out_dparams);
    gj_gpu_free(s->ctx, bb_dparams);
    gj_gpu_free(s->ctx, bb_ddldy);
    gj_gpu_free(s->ctx, bb_dx);
    gj_gpu_free(s->ctx, s->dev_x);
    gj_gpu_free(s->ctx, s->dev_params);
    gj_gpu_free(s->ctx, s->dev_g);
    gj_gpu_free(s->ctx, s->dev_h);
    gj_gpu_free(s->ctx, s->dev_dx);
    gj_module_destroy(s->m);
    free(s);
}

static int suite_setup(void **state) {
    (void)state;
    fd_suite *s = &the_suite;
    if (gj_context_create(&s->ctx) != GJ_OK) {
        return -1;
    }
    gj_context_set_log(s->ctx, NULL, NULL);
    gj_codegen_options_init(&s->opts);
    s->opts.passes = GJ_PASS_BACKWARD | GJ_PASS_BACKWARD_BACKWARD;
    s->opts.order = GJ_ORDER_POINT_MAJOR;
    s->opts.block_size = 64;
    for (size_t i = 0; i < N_CASES; ++i) {
        if (gj_encoding_create(s->ctx, cases[i].json, cases[i].n_dims, &s->enc[i]) != GJ_OK) {
            printf("%s: %s\n", cases[i].name, gj_context_errmsg(s->ctx));
            return -1;
        }
    }
    s->have_gpu = gj_gpu_available(&s->info);
    if (!s->have_gpu) {
        return 0;
    }
    for (size_t i = 0; i < N_CASES; ++i) {
        s->jobs[i].enc = s->enc[i];
        s->jobs[i].opts = s->opts;
        snprintf(s->jobs[i].arch, sizeof s->jobs[i].arch, "%.15s", s->info.arch);
    }
    gj_gpu_compile_all(s->jobs, N_CASES);
    return 0;
}

static int suite_teardown(void **state) {
    (void)state;
    fd_suite *s = &the_suite;
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
        fd_case *c = &cases[i];
        c->n_dims = (uint32_t)(i / 2 + 1);
        c->interp = i % 2 ? GJ_INTERP_SMOOTHSTEP : GJ_INTERP_LINEAR;
        /* Dense grids with scales 1, 3, 7 (resolutions 2, 4, 8): at most 8^4 entries. */
        snprintf(c->json, sizeof c->json,
                 "{\"otype\": \"DenseGrid\", \"n_levels\": %d, \"n_features_per_level\": %d, "
                 "\"base_resolution\": 2, \"per_level_scale\": 2.0, \"interpolation\": \"%s\", "
                 "\"precision\": \"fp32\"}",
                 N_LEVELS, N_FEATURES, c->interp == GJ_INTERP_SMOOTHSTEP ? "Smoothstep" : "Linear");
        snprintf(c->name, sizeof c->name, "bwdbwd_fd_D%u_%s", c->n_dims,
                 c->interp == GJ_INTERP_SMOOTHSTEP ? "Smoothstep" : "Linear");
        tests[i] = (struct CMUnitTest){c->name, run_case, NULL, NULL, (void *)(uintptr_t)i};
    }
    return _cmocka_run_group_tests("test_gpu_bwdbwd_fd", tests, N_CASES, suite_setup, suite_teardown);
}
