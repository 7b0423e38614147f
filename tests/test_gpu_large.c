/*
 * Batches beyond 2^31 points: no 32-bit index overflows in the kernels or the runtime.
 * n = 2^31 + 4113 points in one launch (D = 1, 2 levels, fp32: about 43 GiB of device
 * memory at the peak), level-major and point-major kernels; the points are a periodic
 * pattern, so the CPU reference can check windows at the start, around 2^31 and at the
 * end. Skipped without a device, or without enough device memory (with a message).
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

#define N_POINTS ((1ull << 31) + 4113ull)
#define PERIOD (1ull << 24) /* floats in one copy of each pattern */
#define WINDOW 2048ull

static const char CONFIG[] = "{\"otype\": \"DenseGrid\", \"n_levels\": 2, \"n_features_per_level\": 1, "
                             "\"base_resolution\": 16, \"per_level_scale\": 2.0, \"precision\": \"fp32\"}";

typedef struct large {
    gj_context *ctx;
    gj_encoding *enc;
    gj_module *m;
    gj_ref_encoding ref;
    float *x_pattern, *g_pattern, *h_pattern;
    double *params;
    uint64_t n_params;
} large;

/* Allocates or skips the test when the device has not got the memory. */
static void *alloc_or_skip(large *t, size_t bytes) {
    void *ptr = NULL;
    gj_status status = gj_device_alloc(t->ctx, bytes, &ptr);
    if (status != GJ_OK) {
        printf("SKIPPED: cannot allocate %.1f GiB of device memory: %s\n", (double)bytes / (1u << 30),
               gj_context_errmsg(t->ctx));
        skip();
    }
    return ptr;
}

/* Fills count floats on the device with the periodic pattern (PERIOD floats). */
static void fill(large *t, void *device, uint64_t count, const float *pattern) {
    for (uint64_t at = 0; at < count; at += PERIOD) {
        const uint64_t chunk = count - at < PERIOD ? count - at : PERIOD;
        gj_gpu_put(t->ctx, (float *)device + at, pattern, chunk * sizeof(float));
    }
}

/* The windows of points checked: [0, W), [2^31 - W, 2^31 + W), [n - W, n). */
static uint64_t window_point(uint64_t j) {
    if (j < WINDOW) {
        return j;
    }
    if (j < 3 * WINDOW) {
        return (1ull << 31) - WINDOW + (j - WINDOW);
    }
    return N_POINTS - WINDOW + (j - 3 * WINDOW);
}
#define N_CHECKED (4 * WINDOW)

static void download_window(large *t, const void *device, uint32_t per_point, double *out) {
    float buffer[WINDOW * 2];
    for (int w = 0; w < 3; ++w) {
        const uint64_t first = window_point(w == 0 ? 0 : w == 1 ? WINDOW : 3 * WINDOW);
        const uint64_t count = w == 1 ? 2 * WINDOW : WINDOW;
        for (uint64_t part = 0; part < count; part += WINDOW) {
            gj_gpu_get(t->ctx, buffer, (const float *)device + (first + part) * per_point, WINDOW * per_point * sizeof(float));
            const uint64_t j0 = (w == 0 ? 0 : w == 1 ? WINDOW : 3 * WINDOW) + part;
            for (uint64_t k = 0; k < WINDOW * per_point; ++k) {
                out[j0 * per_point + k] = buffer[k];
            }
        }
    }
}

static void expect(const char *what, uint64_t j, double gpu, double ref, double tol, size_t *failures) {
    if (!(fabs(gpu - ref) <= tol)) {
        if (*failures < 10) {
            printf("  %s at point %llu: gpu %.9g, expected %.9g (tolerance %.3g)\n", what,
                   (unsigned long long)window_point(j), gpu, ref, tol);
        }
        ++*failures;
    }
}

static void run_order(large *t, gj_order order, uint32_t ppt) {
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.order = order;
    opts.points_per_thread = ppt;
    opts.block_size = order == GJ_ORDER_LEVEL_MAJOR ? 256 : 128;
    gj_gpu_ok(t->ctx, gj_module_create(t->ctx, t->enc, &opts, &t->m), "gj_module_create");
    const uint32_t n_out = 2;
    /* The points of the windows, their inputs and the bounds (gpu_bounds.h). */
    float x[N_CHECKED];
    double g[N_CHECKED * 2], h[N_CHECKED];
    for (uint64_t j = 0; j < N_CHECKED; ++j) {
        const uint64_t i = window_point(j);
        x[j] = t->x_pattern[i % PERIOD];
        h[j] = t->h_pattern[i % PERIOD];
        for (uint32_t k = 0; k < n_out; ++k) {
            g[j * n_out + k] = t->g_pattern[(i * n_out + k) % PERIOD];
        }
    }
    gj_bounds b;
    gj_bounds_measure(&b, &t->ref, N_CHECKED, x, t->params, g, h, NULL, 1.0);
    double *got = malloc(N_CHECKED * 2 * sizeof(double));
    assert_non_null(got);
    size_t failures = 0;

    void *params = gj_gpu_upload(t->ctx, t->params, t->n_params, GJ_PRECISION_FP32);
    void *dev_x = alloc_or_skip(t, N_POINTS * sizeof(float));
    fill(t, dev_x, N_POINTS, t->x_pattern);

    /* forward */
    void *y = alloc_or_skip(t, N_POINTS * n_out * sizeof(float));
    gj_forward_desc f;
    gj_forward_desc_init(&f);
    f.n = N_POINTS;
    f.x = dev_x;
    f.params = params;
    f.y = y;
    gj_gpu_ok(t->ctx, gj_forward(t->m, NULL, &f), "gj_forward");
    gj_gpu_sync(t->ctx);
    download_window(t, y, n_out, got);
    gj_gpu_free(t->ctx, y);
    for (uint64_t j = 0; j < N_CHECKED; ++j) {
        double ref[2];
        gj_ref_forward(&t->ref, t->params, &x[j], 1.0, ref);
        for (uint32_t k = 0; k < n_out; ++k) {
            expect("y", j, got[j * n_out + k], ref[k], gj_bound_y(&b, j, k), &failures);
        }
    }

    /* backward, dL/dx */
    void *dl_dy = alloc_or_skip(t, N_POINTS * n_out * sizeof(float));
    fill(t, dl_dy, N_POINTS * n_out, t->g_pattern);
    void *dx = alloc_or_skip(t, N_POINTS * sizeof(float));
    gj_backward_desc bw;
    gj_backward_desc_init(&bw);
    bw.n = N_POINTS;
    bw.x = dev_x;
    bw.params = params;
    bw.dL_dy = dl_dy;
    bw.dL_dx = dx;
    gj_gpu_ok(t->ctx, gj_backward(t->m, NULL, &bw), "gj_backward");
    gj_gpu_sync(t->ctx);
    download_window(t, dx, 1, got);
    gj_gpu_free(t->ctx, dx);
    for (uint64_t j = 0; j < N_CHECKED; ++j) {
        double ref;
        gj_ref_backward(&t->ref, t->params, &x[j], 1.0, window_point(j), N_POINTS, g + j * n_out, NULL, &ref);
        expect("dL/dx", j, got[j], ref, gj_bound_dx(&b, j), &failures);
    }

    /* backward of backward, dL/dx */
    void *dev_h = alloc_or_skip(t, N_POINTS * sizeof(float));
    fill(t, dev_h, N_POINTS, t->h_pattern);
    void *bb_dx = alloc_or_skip(t, N_POINTS * sizeof(float));
    gj_backward_backward_desc bb;
    gj_backward_backward_desc_init(&bb);
    bb.n = N_POINTS;
    bb.x = dev_x;
    bb.params = params;
    bb.dL_ddLdx = dev_h;
    bb.dL_dy = dl_dy;
    bb.dL_dx = bb_dx;
    gj_gpu_ok(t->ctx, gj_backward_backward(t->m, NULL, &bb), "gj_backward_backward");
    gj_gpu_sync(t->ctx);
    download_window(t, bb_dx, 1, got);
    for (uint64_t j = 0; j < N_CHECKED; ++j) {
        double ref;
        gj_ref_backward_backward(&t->ref, t->params, &x[j], 1.0, &h[j], g + j * n_out, NULL, NULL, &ref);
        expect("backward_backward dL/dx", j, got[j], ref, gj_bound_bb_dx(&b, j), &failures);
    }
    gj_gpu_free(t->ctx, bb_dx);
    gj_gpu_free(t->ctx, dev_h);
    gj_gpu_free(t->ctx, dl_dy);
    gj_gpu_free(t->ctx, dev_x);
    gj_gpu_free(t->ctx, params);
    gj_bounds_free(&b);
    free(got);
    gj_module_destroy(t->m);
    t->m = NULL;
    if (failures) {
        fail_msg("%zu wrong values beyond the first ones shown", failures);
    }
}

static int setup(void **state) {
    large *t = calloc(1, sizeof *t);
    if (!t || gj_context_create(&t->ctx) != GJ_OK) {
        return -1;
    }
    gj_context_set_log(t->ctx, NULL, NULL);
    if (gj_encoding_create(t->ctx, CONFIG, 1, &t->enc) != GJ_OK) {
        printf("%s\n", gj_context_errmsg(t->ctx));
        return -1;
    }
    gj_ref_from_encoding(&t->ref, t->enc);
    t->n_params = gj_encoding_n_params(t->enc);
    t->x_pattern = malloc(PERIOD * sizeof(float));
    t->g_pattern = malloc(PERIOD * sizeof(float));
    t->h_pattern = malloc(PERIOD * sizeof(float));
    t->params = malloc(t->n_params * sizeof(double));
    if (!t->x_pattern || !t->g_pattern || !t->h_pattern || !t->params) {
        return -1;
    }
    gj_gpu_rng rng = {0x1A26Eull};
    for (uint64_t k = 0; k < PERIOD; ++k) {
        t->x_pattern[k] = gj_gpu_rng_float(&rng, 0.0f, 1.0f);
        t->g_pattern[k] = gj_gpu_rng_float(&rng, -1.0f, 1.0f);
        t->h_pattern[k] = gj_gpu_rng_float(&rng, -1.0f, 1.0f);
    }
    for (uint64_t p = 0; p < t->n_params; ++p) {
        t->params[p] = gj_gpu_rng_float(&rng, -1.0f, 1.0f);
    }
    *state = t;
    return 0;
}

static int teardown(void **state) {
    large *t = *state;
    gj_module_destroy(t->m);
    gj_encoding_destroy(t->enc);
    gj_context_destroy(t->ctx);
    free(t->x_pattern);
    free(t->g_pattern);
    free(t->h_pattern);
    free(t->params);
    free(t);
    return 0;
}

static void level_major_beyond_2_31(void **state) {
    if (!gj_gpu_available(NULL)) {
        skip();
    }
    run_order(*state, GJ_ORDER_LEVEL_MAJOR, 1);
}

static void point_major_beyond_2_31(void **state) {
    if (!gj_gpu_available(NULL)) {
        skip();
    }
    run_order(*state, GJ_ORDER_POINT_MAJOR, 4);
}

int main(void) {
    if (!gj_gpu_available(NULL)) {
        return GJ_TEST_SKIP_ALL; /* ctest reports the binary as skipped; the reason is printed above */
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(level_major_beyond_2_31, setup, teardown),
        cmocka_unit_test_setup_teardown(point_major_beyond_2_31, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
