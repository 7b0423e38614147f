/*
 * gj_codegen_options.gradients_fp32 on the GPU: fp16 encodings (F = 1, 2, 4, 8; hash and
 * dense grids; level- and point-major kernels) whose backward passes accumulate dL/dparams
 * in fp32 into the caller's float array. Each case runs gj_backward (with and without
 * dL/dx) and gj_backward_backward in overwrite and accumulate mode, with the module made
 * with the option and with the default one, and checks:
 *   - the fp32 gradients against the double-precision CPU reference (tools/reference),
 *     within the fp32 bounds of tests/support/gpu_bounds.h (no fp16 rounding at all);
 *   - the fp32 gradients against the default fp16 path, within that path's fp16 bounds;
 *   - that the float array holds values no fp16 array could (no fp16 buffer or cast in
 *     between), and dL/dx against the reference.
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

#define N_POINTS 1531 /* not a multiple of any block */
#define N_CASES 16    /* F x grid type x order */

static const uint32_t f_values[] = {1, 2, 4, 8};

typedef struct fp32_case {
    char name[96];
    char json[320];
    uint32_t n_dims;
    gj_order order;
    gj_encoding *enc;
    gj_gpu_compile_job jobs[2]; /* [0]: gradients_fp32 = 1, [1]: the default (fp16 accumulation for F >= 2) */
} fp32_case;

static struct {
    gj_context *ctx;
    gj_runtime_info info;
    fp32_case cases[N_CASES];
} the_suite;

static void describe(fp32_case *c, size_t i) {
    const uint32_t f = f_values[i % 4];
    const int dense = (i / 4) % 2;
    c->order = i / 8 ? GJ_ORDER_POINT_MAJOR : GJ_ORDER_LEVEL_MAJOR;
    c->n_dims = dense ? 2 : 3;
    /* Small tables: coarse levels in shared memory (level-major), finer ones hashed. */
    snprintf(c->json, sizeof c->json,
             "{\"otype\": \"%s\", \"n_levels\": 4, \"n_features_per_level\": %u, \"log2_hashmap_size\": 10, "
             "\"base_resolution\": %u, \"per_level_scale\": 2.0, \"precision\": \"fp16\"}",
             dense ? "DenseGrid" : "HashGrid", f, dense ? 4u : 8u);
    snprintf(c->name, sizeof c->name, "%s/F%u/D%u/%s-major", dense ? "Dense" : "Hash", f, c->n_dims,
             c->order == GJ_ORDER_LEVEL_MAJOR ? "level" : "point");
}

/* ---------------------------------------------------------------- data */

typedef struct data {
    gj_ref_encoding ref;
    uint32_t D, n_out;
    uint64_t n, n_params;
    float *x;
    double *params;  /* fp16-representable */
    double *dl_dy;   /* n * n_out, point-major, fp16-representable */
    double *h;       /* n * D, float-representable */
    double *prefill; /* fp16-representable, so both paths start from the same values */
    double *ref_g, *ref_bb, *ref_dx; /* reference: prefill + gradients; dL/dx */
} data;

static void make_data(const fp32_case *c, size_t index, data *d) {
    memset(d, 0, sizeof *d);
    gj_ref_from_encoding(&d->ref, c->enc);
    d->D = gj_encoding_n_dims(c->enc);
    d->n_out = gj_encoding_n_output_dims(c->enc);
    d->n = N_POINTS;
    d->n_params = gj_encoding_n_params(c->enc);
    gj_gpu_rng rng = {0xF32F32ull + index};
    d->x = malloc(d->n * d->D * sizeof(float));
    d->h = malloc(d->n * d->D * sizeof(double));
    d->params = malloc(d->n_params * sizeof(double));
    d->prefill = malloc(d->n_params * sizeof(double));
    d->dl_dy = malloc(d->n * d->n_out * sizeof(double));
    d->ref_g = malloc(d->n_params * sizeof(double));
    d->ref_bb = malloc(d->n_params * sizeof(double));
    d->ref_dx = malloc(d->n * d->D * sizeof(double));
    assert_true(d->x && d->h && d->params && d->prefill && d->dl_dy && d->ref_g && d->ref_bb && d->ref_dx);
    for (uint64_t i = 0; i < d->n * d->D; ++i) {
        d->x[i] = gj_gpu_rng_float(&rng, 0.0f, 1.0f);
        d->h[i] = gj_gpu_rng_float(&rng, -1.0f, 1.0f);
    }
    for (uint64_t p = 0; p < d->n_params; ++p) {
        d->params[p] = gj_gpu_round(gj_gpu_rng_float(&rng, -1.0f, 1.0f), GJ_PRECISION_FP16);
        d->prefill[p] = gj_gpu_round(gj_gpu_rng_float(&rng, -0.5f, 0.5f), GJ_PRECISION_FP16);
    }
    for (uint64_t k = 0; k < d->n * d->n_out; ++k) {
        d->dl_dy[k] = gj_gpu_round(gj_gpu_rng_float(&rng, -1.0f, 1.0f), GJ_PRECISION_FP16);
    }
}

/* The reference gradients, starting from start (the prefill, or zeros). */
static void run_reference(data *d, const double *start) {
    memcpy(d->ref_g, start, d->n_params * sizeof(double));
    memcpy(d->ref_bb, start, d->n_params * sizeof(double));
    for (uint64_t i = 0; i < d->n; ++i) {
        const float *x = d->x + i * d->D;
        const double *g = d->dl_dy + i * d->n_out;
        gj_ref_backward(&d->ref, d->params, x, 1.0, i, d->n, g, d->ref_g, d->ref_dx + i * d->D);
        gj_ref_backward_backward(&d->ref, d->params, x, 1.0, d->h + i * d->D, g, d->ref_bb, NULL, NULL);
    }
}

static void free_data(data *d) {
    free(d->x);
    free(d->h);
    free(d->params);
    free(d->prefill);
    free(d->dl_dy);
    free(d->ref_g);
    free(d->ref_bb);
    free(d->ref_dx);
}

/* ------------------------------------------------------------ the passes */

/* What one module computed: dL/dparams of backward with dL/dx (fused), without, and of
 * backward_backward, in the module's gradient precision; dL/dx of the fused launch. */
typedef struct results {
    double *fused, *alone, *bb, *dx;
} results;

static void run_module(gj_context *ctx, gj_module *m, const data *d, const double *start, gj_grad_mode mode,
                       results *r) {
    const gj_precision gp = gj_module_gradient_element_size(m) == 4 ? GJ_PRECISION_FP32 : GJ_PRECISION_FP16;
    const size_t nD = d->n * d->D;
    void *x = gj_gpu_upload_floats(ctx, d->x, nD);
    void *params = gj_gpu_upload(ctx, d->params, d->n_params, GJ_PRECISION_FP16);
    void *dl_dy = gj_gpu_upload(ctx, d->dl_dy, d->n * d->n_out, GJ_PRECISION_FP16);
    float *hf = malloc(nD * sizeof(float));
    assert_non_null(hf);
    for (size_t i = 0; i < nD; ++i) {
        hf[i] = (float)d->h[i];
    }
    void *h = gj_gpu_upload_floats(ctx, hf, nD);
    free(hf);
    void *fused = gj_gpu_upload(ctx, start, d->n_params, gp);
    void *alone = gj_gpu_upload(ctx, start, d->n_params, gp);
    void *bb = gj_gpu_upload(ctx, start, d->n_params, gp);
    void *dx = gj_gpu_alloc(ctx, nD * sizeof(float));

    gj_backward_desc b;
    gj_backward_desc_init(&b);
    b.n = d->n;
    b.x = x;
    b.params = params;
    b.dL_dy = dl_dy;
    b.dL_dparams_mode = mode;
    b.dL_dparams = fused;
    b.dL_dx = dx;
    gj_gpu_ok(ctx, gj_backward(m, NULL, &b), "gj_backward (params, input)");
    b.dL_dparams = alone;
    b.dL_dx = NULL;
    gj_gpu_ok(ctx, gj_backward(m, NULL, &b), "gj_backward (params)");
    gj_backward_backward_desc bbd;
    gj_backward_backward_desc_init(&bbd);
    bbd.n = d->n;
    bbd.x = x;
    bbd.params = params;
    bbd.dL_ddLdx = h;
    bbd.dL_dy = dl_dy;
    bbd.dL_dparams = bb;
    bbd.dL_dparams_mode = mode;
    gj_gpu_ok(ctx, gj_backward_backward(m, NULL, &bbd), "gj_backward_backward (params)");
    gj_gpu_sync(ctx);

    r->fused = malloc(d->n_params * sizeof(double));
    r->alone = malloc(d->n_params * sizeof(double));
    r->bb = malloc(d->n_params * sizeof(double));
    r->dx = malloc(nD * sizeof(double));
    assert_true(r->fused && r->alone && r->bb && r->dx);
    gj_gpu_download(ctx, r->fused, fused, d->n_params, gp);
    gj_gpu_download(ctx, r->alone, alone, d->n_params, gp);
    gj_gpu_download(ctx, r->bb, bb, d->n_params, gp);
    gj_gpu_download(ctx, r->dx, dx, nD, GJ_PRECISION_FP32);
    void *all[] = {x, params, dl_dy, h, fused, alone, bb, dx};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) {
        gj_gpu_free(ctx, all[i]);
    }
}

static void free_results(results *r) {
    free(r->fused);
    free(r->alone);
    free(r->bb);
    free(r->dx);
}

/* ------------------------------------------------------------- checks */

static size_t failures;

/* |a - b| <= tol(p) for every p; prints the first few misses and a summary line. */
static void compare(const char *name, const char *what, const double *a, const double *b, const double *tol, size_t n) {
    size_t bad = 0;
    double worst = 0.0;
    for (size_t p = 0; p < n; ++p) {
        const double err = fabs(a[p] - b[p]);
        if (!(err <= tol[p])) {
            if (bad < 5) {
                printf("  %s: %s[%zu]: %.9g vs %.9g, |difference| %.3g > %.3g\n", name, what, p, a[p], b[p], err,
                       tol[p]);
            }
            ++bad;
        } else if (tol[p] > 0 && err / tol[p] > worst) {
            worst = err / tol[p];
        }
    }
    if (bad) {
        printf("FAILED %s: %s: %zu of %zu values outside the tolerance\n", name, what, bad, n);
        failures += bad;
    } else {
        printf("  ok %-34s largest |difference| / tolerance %.3g\n", what, worst);
    }
}

/* dL/dparams of the fp32 module against the reference (fp32 bounds) and the fp16 module
 * (its fp16 bounds plus the fp32 ones). */
static void check_dparams(const char *name, const char *what, const gj_bounds *b, const data *d, const double *start,
                          int second_order, const double *expected, const double *fp32, const double *fp16) {
    double *tol32 = malloc(d->n_params * sizeof(double)), *tol16 = malloc(d->n_params * sizeof(double));
    assert_true(tol32 && tol16);
    for (uint64_t p = 0; p < d->n_params; ++p) {
        tol32[p] = gj_bound_dparams(b, p, second_order, start[p], 0, expected[p]);
        tol16[p] = tol32[p] + gj_bound_dparams(b, p, second_order, start[p], 1, expected[p]);
    }
    char label[96];
    snprintf(label, sizeof label, "%s vs reference", what);
    compare(name, label, fp32, expected, tol32, d->n_params);
    snprintf(label, sizeof label, "%s vs fp16 path", what);
    compare(name, label, fp32, fp16, tol16, d->n_params);
    /* A float array that went through fp16 (a buffer and a cast) would hold fp16 values only. */
    size_t beyond_fp16 = 0;
    for (uint64_t p = 0; p < d->n_params; ++p) {
        beyond_fp16 += gj_gpu_round(fp32[p], GJ_PRECISION_FP16) != fp32[p];
    }
    if (beyond_fp16 == 0) {
        printf("FAILED %s: %s: every value is an fp16 value: not accumulated in fp32\n", name, what);
        failures++;
    }
    free(tol32);
    free(tol16);
}

static void run_mode(gj_context *ctx, const fp32_case *c, gj_module *m32, gj_module *m16, data *d, gj_grad_mode mode) {
    const int accumulate = mode == GJ_GRAD_ACCUMULATE;
    double *zeros = calloc(d->n_params, sizeof(double)), *garbage = malloc(d->n_params * sizeof(double));
    assert_true(zeros && garbage);
    for (uint64_t p = 0; p < d->n_params; ++p) {
        garbage[p] = 1234.0; /* overwrite mode must replace it */
    }
    const double *expected_start = accumulate ? d->prefill : zeros;
    run_reference(d, expected_start);
    results r32, r16;
    run_module(ctx, m32, d, accumulate ? d->prefill : garbage, mode, &r32);
    run_module(ctx, m16, d, accumulate ? d->prefill : garbage, mode, &r16);

    double *g = malloc(d->n * d->n_out * sizeof(double));
    assert_non_null(g);
    memcpy(g, d->dl_dy, d->n * d->n_out * sizeof(double));
    gj_bounds b;
    gj_bounds_measure(&b, &d->ref, d->n, d->x, d->params, g, d->h, NULL, 1.0);
    free(g);
    char name[160];
    snprintf(name, sizeof name, "%s/%s", c->name, accumulate ? "accumulate" : "overwrite");
    printf("%s\n", name);
    check_dparams(name, "dparams (with dL/dx)", &b, d, expected_start, 0, d->ref_g, r32.fused, r16.fused);
    check_dparams(name, "dparams (alone)", &b, d, expected_start, 0, d->ref_g, r32.alone, r16.alone);
    check_dparams(name, "bb dparams", &b, d, expected_start, 1, d->ref_bb, r32.bb, r16.bb);
    const size_t nD = d->n * d->D;
    double *tol = malloc(nD * sizeof(double));
    assert_non_null(tol);
    for (uint64_t i = 0; i < d->n; ++i) {
        for (uint32_t k = 0; k < d->D; ++k) {
            tol[i * d->D + k] = gj_bound_dx(&b, i);
        }
    }
    compare(name, "dx", r32.dx, d->ref_dx, tol, nD);
    free(tol);
    gj_bounds_free(&b);
    free_results(&r32);
    free_results(&r16);
    free(zeros);
    free(garbage);
}

static void run_case(void **state) {
    fp32_case *c = *state;
    gj_context *ctx = the_suite.ctx;
    for (int k = 0; k < 2; ++k) {
        if (c->jobs[k].status != GJ_OK) {
            fail_msg("%s: compile failed: %s\n%s", c->name, gj_status_name(c->jobs[k].status), c->jobs[k].message);
        }
    }
    gj_module *m32 = NULL, *m16 = NULL;
    gj_gpu_ok(ctx, gj_gpu_module_for_job(ctx, &c->jobs[0], &m32), "the module (fp32)");
    gj_gpu_ok(ctx, gj_gpu_module_for_job(ctx, &c->jobs[1], &m16), "the module (default)");
    assert_int_equal(gj_module_gradient_element_size(m32), 4);
    assert_int_equal(gj_module_gradient_element_size(m16), 2);
    assert_int_equal(gj_module_element_size(m32), 2);
    data d;
    make_data(c, (size_t)(c - the_suite.cases), &d);
    failures = 0;
    run_mode(ctx, c, m32, m16, &d, GJ_GRAD_OVERWRITE);
    run_mode(ctx, c, m32, m16, &d, GJ_GRAD_ACCUMULATE);
    free_data(&d);
    gj_module_destroy(m32);
    gj_module_destroy(m16);
    if (failures) {
        fail_msg("%s: %zu values outside the tolerance (listed above)", c->name, failures);
    }
}

/* -------------------------------------------------------------- the suite */

static int suite_setup(void **state) {
    (void)state;
    if (gj_context_create(&the_suite.ctx) != GJ_OK) {
        return -1;
    }
    gj_context_set_log(the_suite.ctx, NULL, NULL);
    gj_gpu_available(&the_suite.info);
    gj_gpu_compile_job jobs[2 * N_CASES];
    for (size_t i = 0; i < N_CASES; ++i) {
        fp32_case *c = &the_suite.cases[i];
        if (gj_encoding_create(the_suite.ctx, c->json, c->n_dims, &c->enc) != GJ_OK) {
            printf("%s refused: %s\n", c->name, gj_context_errmsg(the_suite.ctx));
            return -1;
        }
        for (int k = 0; k < 2; ++k) {
            gj_gpu_compile_job *job = &jobs[2 * i + k];
            memset(job, 0, sizeof *job);
            job->enc = c->enc;
            gj_codegen_options_init(&job->opts);
            job->opts.passes = GJ_PASS_BACKWARD | GJ_PASS_BACKWARD_BACKWARD;
            job->opts.order = c->order;
            job->opts.gradients_fp32 = k == 0;
            snprintf(job->arch, sizeof job->arch, "%.15s", the_suite.info.arch);
        }
    }
    printf("compiling %d programs for %s\n", 2 * N_CASES, the_suite.info.arch);
    fflush(stdout);
    gj_gpu_compile_all(jobs, 2 * N_CASES);
    for (size_t i = 0; i < N_CASES; ++i) {
        memcpy(the_suite.cases[i].jobs, &jobs[2 * i], sizeof the_suite.cases[i].jobs);
    }
    return 0;
}

static int suite_teardown(void **state) {
    (void)state;
    for (size_t i = 0; i < N_CASES; ++i) {
        for (int k = 0; k < 2; ++k) {
            gj_program_destroy(the_suite.cases[i].jobs[k].prog);
        }
        gj_encoding_destroy(the_suite.cases[i].enc);
    }
    gj_context_destroy(the_suite.ctx);
    return 0;
}

int main(void) {
    if (!gj_gpu_available(NULL)) {
        return GJ_TEST_SKIP_ALL; /* the reason is printed above */
    }
    struct CMUnitTest tests[N_CASES];
    for (size_t i = 0; i < N_CASES; ++i) {
        describe(&the_suite.cases[i], i);
        tests[i].name = the_suite.cases[i].name;
        tests[i].test_func = run_case;
        tests[i].initial_state = &the_suite.cases[i];
        tests[i].setup_func = NULL;
        tests[i].teardown_func = NULL;
    }
    return _cmocka_run_group_tests("test_gpu_gradients_fp32", tests, N_CASES, suite_setup, suite_teardown);
}
