/*
 * The disk cache meets the driver (docs/cache.md, "Failure policy"): a cached binary the driver refuses
 * is a miss (removed, compiled again, replaced); without NVRTC and without a cubin for
 * the device, a cached PTX entry is loaded through the driver; without either, the
 * error names the precompile command.
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

#include "gpu_harness.h"
#include "gridjit.h"
#include "test_env.h"

#include "runtime/device_program.h" /* gj__module_test_refuse_loads (a GJ_TEST_HOOKS build) */

static const char config[] =
    "{\"otype\":\"HashGrid\",\"n_levels\":4,\"n_features_per_level\":2,\"log2_hashmap_size\":12,\"precision\":\"fp32\"}";

#define N_POINTS 1000u

static char *cache_dir(const char *name) {
    static char path[4096];
    const char *tmp = getenv("GRIDJIT_TEST_TMP");
    snprintf(path, sizeof path, "%s/%s", tmp ? tmp : "/tmp", name);
    char command[3 * sizeof path + 64];
    snprintf(command, sizeof command, "rm -rf '%s' && mkdir -p '%s' && chmod 700 '%s'", path, path, path);
    assert_int_equal(system(command), 0);
    return path;
}

static gj_context *context_for(const char *dir, int nvrtc) {
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    assert_int_equal(gj_context_set_cache_enabled(ctx, 1), GJ_OK);
    assert_int_equal(gj_context_set_cache_dir(ctx, dir), GJ_OK);
    assert_int_equal(gj_context_set_cache_path(ctx, ""), GJ_OK);
    assert_int_equal(gj_context_set_nvrtc_enabled(ctx, nvrtc), GJ_OK);
    return ctx;
}

/* y for N_POINTS fixed points, with parameters from gj_init_params (seed 7). */
static void run_forward(gj_context *ctx, gj_module *m, float *y_host) {
    const uint32_t D = 3, width = gj_module_output_width(m);
    float x[N_POINTS * 3];
    gj_gpu_rng rng = {42};
    for (uint32_t k = 0; k < N_POINTS * D; ++k) {
        x[k] = gj_gpu_rng_float(&rng, 0.0f, 1.0f);
    }
    void *dx = gj_gpu_upload_floats(ctx, x, N_POINTS * D);
    void *params = gj_gpu_alloc(ctx, gj_module_n_params(m) * sizeof(float));
    void *y = gj_gpu_alloc(ctx, (size_t)N_POINTS * width * sizeof(float));
    gj_init_desc init;
    gj_init_desc_init(&init);
    init.params = params;
    init.seed = 7;
    gj_gpu_ok(ctx, gj_init_params(m, NULL, &init), "gj_init_params");
    gj_forward_desc f;
    gj_forward_desc_init(&f);
    f.n = N_POINTS;
    f.x = dx;
    f.params = params;
    f.y = y;
    gj_gpu_ok(ctx, gj_forward(m, NULL, &f), "gj_forward");
    gj_gpu_get(ctx, y_host, y, (size_t)N_POINTS * width * sizeof(float));
    gj_gpu_free(ctx, dx);
    gj_gpu_free(ctx, params);
    gj_gpu_free(ctx, y);
}

static void refused_cached_binary_is_a_miss(void **state) {
    (void)state;
    if (!gj_gpu_available(NULL) || !gj_test_have_nvrtc()) {
        skip();
    }
    const char *dir = cache_dir("refused");
    gj_context *first = context_for(dir, 1);
    gj_encoding *enc = NULL;
    gj_module *m = NULL;
    assert_int_equal(gj_encoding_create(first, config, 3, &enc), GJ_OK);
    /* The forward pass has five programs: forward and forward with dy/dx, each in its one-
     * level and its level-group (_rows) form, and the helpers. */
    gj_gpu_ok(first, gj_module_create(first, enc, NULL, &m), "first gj_module_create");
    gj_gpu_ok(first, gj_module_prepare(m, GJ_PASS_FORWARD), "first gj_module_prepare");
    assert_int_equal(gj_module_n_programs(m), 5);
    gj_module_destroy(m);
    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(first, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.compiles, 5);
    assert_int_equal(stats.entries, 5);

    /* A second process finds the entries, but the driver refuses one once. */
    gj_context *second = context_for(dir, 1);
    atomic_store(&gj__module_test_refuse_loads, 1);
    gj_gpu_ok(second, gj_module_create(second, enc, NULL, &m), "gj_module_create after a refused load");
    gj_gpu_ok(second, gj_module_prepare(m, GJ_PASS_FORWARD), "gj_module_prepare after a refused load");
    assert_int_equal(atomic_load(&gj__module_test_refuse_loads), 0);
    assert_int_equal(gj_context_cache_stats(second, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.hits, 5);     /* the entries were found and verified ... */
    assert_int_equal(stats.corrupt, 1);  /* ... one refused by the driver, so counted as broken ... */
    assert_int_equal(stats.compiles, 1); /* ... and compiled again */
    assert_int_equal(stats.entries, 5);  /* the replacement took its place */
    float *y = malloc(sizeof(float) * N_POINTS * gj_module_output_width(m));
    assert_non_null(y);
    run_forward(second, m, y);
    gj_module_destroy(m);

    /* A third finds the replacement and loads it. */
    gj_context *third = context_for(dir, 1);
    gj_gpu_ok(third, gj_module_create(third, enc, NULL, &m), "gj_module_create from the replacement");
    gj_gpu_ok(third, gj_module_prepare(m, GJ_PASS_FORWARD), "gj_module_prepare from the replacement");
    assert_int_equal(gj_context_cache_stats(third, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.hits, 5);
    assert_int_equal(stats.compiles, 0);
    gj_module_destroy(m);
    free(y);
    gj_encoding_destroy(enc);
    gj_context_destroy(third);
    gj_context_destroy(second);
    gj_context_destroy(first);
}

static void cached_ptx_loads_without_nvrtc(void **state) {
    (void)state;
    gj_runtime_info info;
    if (!gj_gpu_available(&info) || !gj_test_have_nvrtc()) {
        skip();
    }
    const char *dir = cache_dir("ptx");
    /* With NVRTC: PTX entries for an older architecture, and the reference output from a cubin. */
    gj_context *builder = context_for(dir, 1);
    gj_encoding *enc = NULL;
    gj_module *m = NULL;
    assert_int_equal(gj_encoding_create(builder, config, 3, &enc), GJ_OK);
    gj_precompile_report report;
    gj_gpu_ok(builder, gj_precompile(builder, enc, NULL, "compute_75", 0, &report), "gj_precompile compute_75");
    assert_int_equal(report.compiled, report.programs);
    gj_context *uncached = context_for(dir, 1);
    assert_int_equal(gj_context_set_cache_enabled(uncached, 0), GJ_OK);
    gj_gpu_ok(uncached, gj_module_create(uncached, enc, NULL, &m), "gj_module_create (cubin, uncached)");
    const size_t count = (size_t)N_POINTS * gj_module_output_width(m);
    float *expected = malloc(sizeof(float) * count), *y = malloc(sizeof(float) * count);
    assert_true(expected && y);
    run_forward(uncached, m, expected);
    gj_module_destroy(m);

    /* Without NVRTC: no cubin entry for this device, so the PTX entry, compiled by the driver. */
    gj_context *offline = context_for(dir, 0);
    gj_gpu_ok(offline, gj_module_create(offline, enc, NULL, &m), "gj_module_create without NVRTC");
    run_forward(offline, m, y);
    for (size_t k = 0; k < count; ++k) {
        /* Same arithmetic in both binaries; allow an fp32 ulp or two for instruction selection. */
        if (fabsf(y[k] - expected[k]) > 1e-6f * fabsf(expected[k]) + 1e-12f) {
            fail_msg("y[%zu]: PTX %.9g, cubin %.9g", k, (double)y[k], (double)expected[k]);
        }
    }
    gj_module_destroy(m);
    free(expected);
    free(y);
    gj_encoding_destroy(enc);
    gj_context_destroy(offline);
    gj_context_destroy(uncached);
    gj_context_destroy(builder);
}

static void nothing_cached_and_no_nvrtc_names_the_precompile_command(void **state) {
    (void)state;
    if (!gj_gpu_available(NULL)) {
        skip();
    }
    const char *dir = cache_dir("empty");
    gj_context *offline = context_for(dir, 0);
    gj_encoding *enc = NULL;
    gj_module *m = NULL;
    assert_int_equal(gj_encoding_create(offline, config, 3, &enc), GJ_OK);
    gj_gpu_ok(offline, gj_module_create(offline, enc, NULL, &m), "gj_module_create (compiles nothing yet)");
    assert_int_equal(gj_module_prepare(m, GJ_PASS_ALL), GJ_ERROR_NO_NVRTC);
    gj_module_destroy(m);
    printf("message: %s\n", gj_context_errmsg(offline));
    assert_non_null(strstr(gj_context_errmsg(offline), "gridjit precompile"));
    gj_encoding_destroy(enc);
    gj_context_destroy(offline);
}

int main(void) {
    if (!gj_gpu_available(NULL)) {
        return GJ_TEST_SKIP_ALL; /* ctest reports the binary as skipped; the reason is printed above */
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refused_cached_binary_is_a_miss),
        cmocka_unit_test(cached_ptx_loads_without_nvrtc),
        cmocka_unit_test(nothing_cached_and_no_nvrtc_names_the_precompile_command),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
