/*
 * The dL/dparams bound of tests/support/gpu_bounds.h against a CPU model of the kernel's
 * float arithmetic (templates/grid_level.cuh: w = t t (3 - 2t) or t, factors w or 1 - w in
 * float, their float product times dL/dy, summed in float). Runs without a device, so a
 * bound too tight for real float rounding shows up here, not only on a GPU. The model is
 * written from the kernel's operation order, not from its output.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gridjit.h"
#include "cpu_reference.h"
#include "gpu_bounds.h"
#include "gpu_harness.h"

static float weight_f(gj_interpolation interp, float t) {
    return interp == GJ_INTERP_SMOOTHSTEP ? t * t * (3.0f - 2.0f * t) : t;
}

/* Float backward of one point (all levels active), as the kernel rounds it; skip_level:
 * a level whose first corner is left out (a deliberate bug), or UINT32_MAX for none. */
static void float_backward(const gj_ref_encoding *ref, const float *x, const float *g, uint32_t skip_level,
                           float *grad) {
    const uint32_t D = ref->n_dims, F = ref->n_features_per_level;
    for (uint32_t l = 0; l < ref->n_levels; ++l) {
        uint32_t cell[GJ_REF_MAX_DIMS], v[GJ_REF_MAX_DIMS];
        double t[GJ_REF_MAX_DIMS];
        float w[GJ_REF_MAX_DIMS];
        gj_ref_locate(ref, l, x, cell, t);
        for (uint32_t d = 0; d < D; ++d) {
            w[d] = weight_f(ref->interpolation, (float)t[d]);
        }
        for (uint64_t c = l == skip_level ? 1 : 0; c < (1ull << D); ++c) {
            float product = 1.0f;
            for (uint32_t d = 0; d < D; ++d) {
                const int up = (int)((c >> d) & 1u);
                v[d] = cell[d] + (uint32_t)up;
                product *= up ? w[d] : 1.0f - w[d];
            }
            const uint64_t base = (ref->levels[l].offset + gj_ref_corner_index(ref, l, v)) * F;
            for (uint32_t f = 0; f < F; ++f) {
                grad[base + f] += product * g[l * F + f];
            }
        }
    }
}

/* Counts the parameters whose float model is outside the bound; skip: see float_backward. */
static size_t outside(const char *json, uint32_t D, uint64_t n, uint32_t skip_level) {
    gj_context *ctx = NULL;
    gj_encoding *enc = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    assert_int_equal(gj_encoding_create(ctx, json, D, &enc), GJ_OK);
    gj_ref_encoding ref;
    gj_ref_from_encoding(&ref, enc);
    const uint32_t n_out = ref.n_levels * ref.n_features_per_level;
    const uint64_t n_params = ref.n_params;
    float *x = malloc(n * D * sizeof(float)), *g = malloc(n * n_out * sizeof(float));
    float *grad = calloc(n_params, sizeof(float));
    double *params = calloc(n_params, sizeof(double)), *gd = malloc(n * n_out * sizeof(double));
    double *expected = calloc(n_params, sizeof(double));
    assert_true(x && g && grad && params && gd && expected);
    gj_gpu_rng rng = {0xB0D5ull + D};
    for (uint64_t k = 0; k < n * D; ++k) {
        x[k] = gj_gpu_rng_float(&rng, 0.0f, 1.0f);
    }
    for (uint64_t k = 0; k < n * n_out; ++k) {
        g[k] = gj_gpu_rng_float(&rng, -1.0f, 1.0f);
        gd[k] = g[k];
    }
    for (uint64_t i = 0; i < n; ++i) {
        gj_ref_backward(&ref, params, x + i * D, 1.0, i, n, gd + i * n_out, expected, NULL);
        float_backward(&ref, x + i * D, g + i * n_out, i == 0 ? skip_level : UINT32_MAX, grad);
    }
    gj_bounds b;
    gj_bounds_measure(&b, &ref, n, x, params, gd, NULL, NULL, 1.0);
    size_t count = 0;
    for (uint64_t p = 0; p < n_params; ++p) {
        const double tol = gj_bound_dparams(&b, p, 0, 0.0, 0, expected[p]);
        if (!(fabs(grad[p] - expected[p]) <= tol)) {
            if (count < 5 && skip_level == UINT32_MAX) {
                printf("  p %llu: float %.9g, reference %.9g, bound %.3g\n", (unsigned long long)p, (double)grad[p],
                       expected[p], tol);
            }
            ++count;
        }
    }
    gj_bounds_free(&b);
    free(x);
    free(g);
    free(grad);
    free(params);
    free(gd);
    free(expected);
    gj_encoding_destroy(enc);
    gj_context_destroy(ctx);
    return count;
}

static const char *const smoothstep = "{\"otype\": \"HashGrid\", \"n_levels\": 5, \"n_features_per_level\": 2, "
                                      "\"log2_hashmap_size\": 10, \"base_resolution\": 4, "
                                      "\"interpolation\": \"Smoothstep\"}";
static const char *const linear = "{\"otype\": \"HashGrid\", \"n_levels\": 4, \"n_features_per_level\": 2, "
                                  "\"log2_hashmap_size\": 12, \"base_resolution\": 4}";

/* Near w(t) = 1 the float 1 - w carries w's rounding error absolutely: single terms with
 * tiny weights are off by far more than (D + 3) roundings of their own size. */
static void float_backward_within_bound(void **state) {
    (void)state;
    assert_int_equal(outside(smoothstep, 2, 2000, UINT32_MAX), 0);
    assert_int_equal(outside(smoothstep, 3, 1000, UINT32_MAX), 0);
    assert_int_equal(outside(linear, 2, 2000, UINT32_MAX), 0);
    assert_int_equal(outside(linear, 3, 1000, UINT32_MAX), 0);
}

/* One corner term of one point left out: its parameters leave the bound. */
static void missing_term_detected(void **state) {
    (void)state;
    assert_true(outside(smoothstep, 2, 2000, 1) >= 1);
    assert_true(outside(linear, 3, 1000, 2) >= 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(float_backward_within_bound),
        cmocka_unit_test(missing_term_detected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
