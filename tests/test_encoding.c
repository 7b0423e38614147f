/* The public gj_encoding API: creation, errors on the context, getters, levels and the
 * hyperparameter round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "gridjit.h"

#include "model/encoding.h"

static int setup(void **state) {
    gj_context *ctx = NULL;
    if (gj_context_create(&ctx) != GJ_OK) {
        return -1;
    }
    *state = ctx;
    return 0;
}

static int teardown(void **state) {
    gj_context_destroy(*state);
    return 0;
}

static gj_encoding *create_ok(gj_context *ctx, const char *json, uint32_t n_dims) {
    gj_encoding *enc = NULL;
    gj_status s = gj_encoding_create(ctx, json, n_dims, &enc);
    if (s != GJ_OK) {
        fail_msg("gj_encoding_create(%s, %u): %s: %s", json, n_dims, gj_status_name(s), gj_context_errmsg(ctx));
    }
    assert_non_null(enc);
    return enc;
}

static void tcnn_check_through_the_public_api(void **state) {
    gj_context *ctx = *state;
    /* docs/design.md §2 check: 32^3 + 19 * 2^16 entries of 2 features = 2555904 parameters. */
    gj_encoding *enc = create_ok(ctx,
                                 "{\"otype\": \"HashGrid\", \"n_levels\": 20, \"n_features_per_level\": 2, "
                                 "\"log2_hashmap_size\": 16, \"base_resolution\": 32, \"per_level_scale\": 1.5}",
                                 3);
    assert_int_equal(gj_encoding_n_dims(enc), 3);
    assert_int_equal(gj_encoding_n_levels(enc), 20);
    assert_int_equal(gj_encoding_n_features_per_level(enc), 2);
    assert_int_equal(gj_encoding_n_output_dims(enc), 40);
    assert_true(gj_encoding_n_params(enc) == 2555904);
    assert_int_equal(gj_encoding_precision(enc), GJ_PRECISION_FP16);
    assert_int_equal(gj_encoding_grid_type(enc), GJ_GRID_HASH);
    assert_int_equal(gj_encoding_interpolation(enc), GJ_INTERP_LINEAR);
    assert_int_equal(gj_encoding_hash(enc), GJ_HASH_COHERENT_PRIME);

    gj_level_info info;
    memset(&info, 0xFF, sizeof info);
    assert_int_equal(gj_encoding_level(enc, 0, &info), GJ_OK);
    assert_int_equal(info.level, 0);
    assert_true(info.scale == 31.0f);
    assert_int_equal(info.resolution, 32);
    assert_int_equal(info.entries, 32768);
    assert_true(info.offset == 0);
    assert_int_equal(info.hashed, 0); /* the table holds the whole 32^3 grid */
    assert_int_equal(gj_encoding_level(enc, 1, &info), GJ_OK);
    assert_int_equal(info.level, 1);
    assert_int_equal(info.resolution, 48);
    assert_int_equal(info.entries, 65536);
    assert_true(info.offset == 32768);
    assert_int_equal(info.hashed, 1);
    assert_int_equal(gj_encoding_level(enc, 19, &info), GJ_OK);
    assert_true(info.offset == 32768 + 18 * 65536);
    assert_int_equal(gj_encoding_level(enc, 20, &info), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_encoding_level(enc, UINT32_MAX, &info), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_encoding_level(enc, 0, NULL), GJ_ERROR_INVALID_ARGUMENT);
    gj_encoding_destroy(enc);
}

static void getters_report_the_configuration(void **state) {
    gj_context *ctx = *state;
    gj_encoding *enc = create_ok(ctx,
                                 "{\"otype\": \"DenseGrid\", \"n_features\": 12, \"n_features_per_level\": 4, "
                                 "\"interpolation\": \"Smoothstep\", \"hash\": \"BaseConvert\", "
                                 "\"precision\": \"fp32\", \"base_resolution\": 4, \"per_level_scale\": 2}",
                                 2);
    assert_int_equal(gj_encoding_n_dims(enc), 2);
    assert_int_equal(gj_encoding_n_levels(enc), 3);
    assert_int_equal(gj_encoding_n_features_per_level(enc), 4);
    assert_int_equal(gj_encoding_n_output_dims(enc), 12);
    /* Dense D=2, base 4, pls 2: resolutions 4, 8, 16 -> 16 + 64 + 256 = 336 entries * 4. */
    assert_true(gj_encoding_n_params(enc) == 336 * 4);
    assert_int_equal(gj_encoding_precision(enc), GJ_PRECISION_FP32);
    assert_int_equal(gj_encoding_grid_type(enc), GJ_GRID_DENSE);
    assert_int_equal(gj_encoding_interpolation(enc), GJ_INTERP_SMOOTHSTEP);
    assert_int_equal(gj_encoding_hash(enc), GJ_HASH_BASE_CONVERT);
    gj_level_info info;
    assert_int_equal(gj_encoding_level(enc, 2, &info), GJ_OK);
    assert_int_equal(info.resolution, 16);
    assert_int_equal(info.entries, 256);
    assert_true(info.offset == 80);
    assert_int_equal(info.hashed, 0);
    gj_encoding_destroy(enc);

    /* n_dims from the configuration. */
    enc = create_ok(ctx, "{\"n_dims_to_encode\": 5, \"hash\": \"Prime\"}", 0);
    assert_int_equal(gj_encoding_n_dims(enc), 5);
    gj_encoding_destroy(enc);
    enc = create_ok(ctx, "{}", 0);
    assert_int_equal(gj_encoding_n_dims(enc), 3);
    gj_encoding_destroy(enc);
}

static void config_errors_reach_the_context(void **state) {
    gj_context *ctx = *state;
    gj_encoding *enc = (gj_encoding *)(uintptr_t)0x1; /* must be overwritten with NULL */
    assert_int_equal(gj_encoding_create(ctx, "{\"n_features_per_level\": 3}", 3, &enc), GJ_ERROR_INVALID_CONFIG);
    assert_null(enc);
    assert_string_equal(gj_context_errmsg(ctx), "n_features_per_level: must be 1, 2, 4 or 8 (got 3)");

    enc = (gj_encoding *)(uintptr_t)0x1;
    assert_int_equal(gj_encoding_create(ctx, "{\"hash\": \"Prime\"}", 9, &enc), GJ_ERROR_INVALID_CONFIG);
    assert_null(enc);
    assert_non_null(strstr(gj_context_errmsg(ctx), "dimensions: must be from 1 to 7 for a Hash grid with hash \"Prime\""));

    assert_int_equal(gj_encoding_create(ctx, NULL, 3, &enc), GJ_ERROR_INVALID_CONFIG);
    assert_null(enc);
    assert_non_null(strstr(gj_context_errmsg(ctx), "no JSON text"));

    assert_int_equal(gj_encoding_create(ctx, "{\"n_levels\": 2,", 3, &enc), GJ_ERROR_INVALID_CONFIG);
    assert_non_null(strstr(gj_context_errmsg(ctx), "invalid JSON"));
}

static void layout_errors_reach_the_context(void **state) {
    gj_context *ctx = *state;
    gj_encoding *enc = (gj_encoding *)(uintptr_t)0x1;
    assert_int_equal(gj_encoding_create(ctx, "{\"type\": \"Dense\", \"n_levels\": 8, \"per_level_scale\": 2}", 3, &enc),
                     GJ_ERROR_LAYOUT_TOO_LARGE);
    assert_null(enc);
    assert_non_null(strstr(gj_context_errmsg(ctx), "level 7"));
    assert_non_null(strstr(gj_context_errmsg(ctx), "Dense"));
}

static void arguments_are_checked_at_the_door(void **state) {
    gj_context *ctx = *state;
    gj_encoding *enc = (gj_encoding *)(uintptr_t)0x1;
    assert_int_equal(gj_encoding_create(NULL, "{}", 3, &enc), GJ_ERROR_INVALID_ARGUMENT);
    assert_null(enc);
    assert_int_equal(gj_encoding_create(ctx, "{}", 3, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "gj_encoding_create"));

    gj_encoding_destroy(NULL);
    assert_int_equal(gj_encoding_n_dims(NULL), 0);
    assert_int_equal(gj_encoding_n_levels(NULL), 0);
    assert_int_equal(gj_encoding_n_features_per_level(NULL), 0);
    assert_int_equal(gj_encoding_n_output_dims(NULL), 0);
    assert_true(gj_encoding_n_params(NULL) == 0);
    gj_level_info info;
    assert_int_equal(gj_encoding_level(NULL, 0, &info), GJ_ERROR_INVALID_ARGUMENT);
    assert_null(gj_encoding_hyperparams(NULL));
}

/* gj_encoding_create_ex: strict with flags 0, skips unknown keys with the flag and says
 * which, refuses unknown flag bits. */
static void create_ex_skips_unknown_keys_on_request(void **state) {
    gj_context *ctx = *state;
    static const char json[] = "{\"otype\": \"HashGrid\", \"n_levels\": 4, \"nested\": {\"a\": 1}, "
                               "\"interpolaton\": \"Linear\"}";
    gj_encoding *enc = (gj_encoding *)ctx;
    char *ignored = (char *)ctx;
    assert_int_equal(gj_encoding_create_ex(ctx, json, 3, 0, &ignored, &enc), GJ_ERROR_INVALID_CONFIG);
    assert_null(enc);
    assert_null(ignored);
    assert_non_null(strstr(gj_context_errmsg(ctx), "unknown key 'nested'"));

    assert_int_equal(gj_encoding_create_ex(ctx, json, 3, GJ_CONFIG_IGNORE_UNKNOWN_KEYS, &ignored, &enc), GJ_OK);
    assert_non_null(enc);
    assert_string_equal(gj_context_errmsg(ctx), "");
    assert_int_equal(gj_encoding_n_levels(enc), 4);
    assert_non_null(ignored);
    assert_string_equal(ignored, "unknown key 'nested' (known keys: otype, type, n_levels, n_features, "
                                 "n_grid_features, n_features_per_level, log2_hashmap_size, base_resolution, "
                                 "per_level_scale, interpolation, hash, stochastic_interpolation, fixed_point_pos, "
                                 "n_dims_to_encode, precision)\n"
                                 "unknown key 'interpolaton'; did you mean 'interpolation'? (keys are case-sensitive)");
    gj_free(ignored);
    /* The same encoding as without the unknown keys. */
    gj_encoding *plain = create_ok(ctx, "{\"otype\": \"HashGrid\", \"n_levels\": 4}", 3);
    assert_memory_equal(enc, plain, sizeof *enc);
    gj_encoding_destroy(plain);
    gj_encoding_destroy(enc);

    /* Nothing skipped: ignored is NULL. A NULL ignored is fine. */
    ignored = (char *)ctx;
    assert_int_equal(gj_encoding_create_ex(ctx, "{}", 0, GJ_CONFIG_IGNORE_UNKNOWN_KEYS, &ignored, &enc), GJ_OK);
    assert_null(ignored);
    gj_encoding_destroy(enc);
    assert_int_equal(gj_encoding_create_ex(ctx, json, 3, GJ_CONFIG_IGNORE_UNKNOWN_KEYS, NULL, &enc), GJ_OK);
    assert_int_equal(gj_encoding_n_levels(enc), 4);
    gj_encoding_destroy(enc);

    /* Errors other than unknown keys stay errors, and leave nothing behind. */
    ignored = (char *)ctx;
    assert_int_equal(gj_encoding_create_ex(ctx, "{\"foo\": 1, \"n_levels\": \"4\"}", 3,
                                           GJ_CONFIG_IGNORE_UNKNOWN_KEYS, &ignored, &enc),
                     GJ_ERROR_INVALID_CONFIG);
    assert_null(enc);
    assert_null(ignored);
    assert_non_null(strstr(gj_context_errmsg(ctx), "n_levels"));

    /* Unknown flag bits are named. */
    assert_int_equal(gj_encoding_create_ex(ctx, "{}", 0, 0x6u, &ignored, &enc), GJ_ERROR_INVALID_ARGUMENT);
    assert_null(enc);
    assert_non_null(strstr(gj_context_errmsg(ctx), "unknown flag bits 0x6"));
    assert_int_equal(gj_encoding_create_ex(ctx, "{}", 0, 0, NULL, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_encoding_create_ex(NULL, "{}", 0, 0, NULL, &enc), GJ_ERROR_INVALID_ARGUMENT);
}

/* create -> hyperparams -> create gives a byte-identical encoding. */
static void check_hyperparams_round_trip(gj_context *ctx, const char *json, uint32_t n_dims) {
    gj_encoding *first = create_ok(ctx, json, n_dims);
    char *text = gj_encoding_hyperparams(first);
    assert_non_null(text);
    gj_encoding *second = create_ok(ctx, text, 0);
    if (memcmp(first, second, sizeof *first) != 0) {
        fail_msg("hyperparams of %s do not recreate it: %s", json, text);
    }
    for (uint32_t l = 0; l < gj_encoding_n_levels(first); ++l) {
        gj_level_info a;
        gj_level_info b;
        assert_int_equal(gj_encoding_level(first, l, &a), GJ_OK);
        assert_int_equal(gj_encoding_level(second, l, &b), GJ_OK);
        assert_true(a.scale == b.scale);
        assert_int_equal(a.resolution, b.resolution);
        assert_int_equal(a.entries, b.entries);
        assert_true(a.offset == b.offset);
        assert_int_equal(a.hashed, b.hashed);
    }
    /* Passing the same n_dims again agrees with n_dims_to_encode. */
    gj_encoding *third = create_ok(ctx, text, gj_encoding_n_dims(first));
    assert_memory_equal(first, third, sizeof *first);
    gj_free(text);
    gj_encoding_destroy(first);
    gj_encoding_destroy(second);
    gj_encoding_destroy(third);
}

static void hyperparams_round_trip(void **state) {
    gj_context *ctx = *state;
    check_hyperparams_round_trip(ctx, "{}", 0);
    check_hyperparams_round_trip(ctx, "{}", 2);
    check_hyperparams_round_trip(ctx, "{\"otype\": \"DenseGrid\"}", 3);
    check_hyperparams_round_trip(ctx, "{\"otype\": \"DenseGrid\", \"n_levels\": 1}", 3);
    check_hyperparams_round_trip(ctx, "{\"otype\": \"DenseGrid\", \"n_levels\": 7, \"base_resolution\": 5}", 2);
    check_hyperparams_round_trip(ctx, "{\"otype\": \"TiledGrid\", \"per_level_scale\": 1.3819128799677}", 3);
    check_hyperparams_round_trip(ctx,
                                 "{\"otype\": \"HashGrid\", \"n_levels\": 20, \"log2_hashmap_size\": 16, "
                                 "\"base_resolution\": 32, \"per_level_scale\": 1.5, \"precision\": \"FP32\", "
                                 "\"interpolation\": \"nearest\", \"stochastic_interpolation\": true, "
                                 "\"fixed_point_pos\": true, \"hash\": \"rng\"}",
                                 4);
    check_hyperparams_round_trip(ctx, "{\"hash\": \"BaseConvert\", \"n_levels\": 2, \"base_resolution\": 2}", 16);
    check_hyperparams_round_trip(ctx,
                                 "{\"n_levels\": 128, \"n_features_per_level\": 8, \"log2_hashmap_size\": 31, "
                                 "\"base_resolution\": 2048, \"per_level_scale\": 1}",
                                 3);
}

static void hyperparams_use_canonical_spellings(void **state) {
    gj_context *ctx = *state;
    gj_encoding *enc = create_ok(ctx, "{\"otype\": \"tiledgrid\", \"n_grid_features\": 8}", 2);
    char *text = gj_encoding_hyperparams(enc);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"otype\": \"TiledGrid\""));
    assert_non_null(strstr(text, "\"type\": \"Tiled\""));
    assert_non_null(strstr(text, "\"n_levels\": 4"));
    assert_non_null(strstr(text, "\"n_dims_to_encode\": 2"));
    assert_non_null(strstr(text, "\"precision\": \"fp16\""));
    gj_free(text);
    gj_encoding_destroy(enc);
}

/* Dense and Tiled grids never hash, so the prime hashes' 7-dimension limit is not theirs:
 * D = 8 and 12 through the public API, the layout worked out by hand, and the generated
 * unit compiled with NVRTC where it is available (the hash code's static_assert on D > 7
 * must not be instantiated). */
static void dense_and_tiled_above_seven_dimensions(void **state) {
    gj_context *ctx = *state;
    /* Dense, D = 8, base 3, per_level_scale 1.5: scales 2 and 3.5, resolutions 3 and 5;
     * 3^8 = 6561 -> 6568 and 5^8 = 390625 -> 390632 entries (multiples of 8). */
    gj_encoding *dense = create_ok(ctx,
                                   "{\"otype\": \"DenseGrid\", \"n_levels\": 2, \"base_resolution\": 3, "
                                   "\"per_level_scale\": 1.5}",
                                   8);
    gj_level_info info;
    assert_int_equal(gj_encoding_level(dense, 1, &info), GJ_OK);
    assert_int_equal(info.resolution, 5);
    assert_int_equal(info.entries, 390632);
    assert_true(info.offset == 6568);
    assert_int_equal(info.hashed, 0);
    assert_true(gj_encoding_n_params(dense) == (6568 + 390632) * 2);
    /* Tiled, D = 12, base 2, scale 2: resolutions 2 and 4, each level one 2^12 tile. */
    gj_encoding *tiled = create_ok(ctx, "{\"otype\": \"TiledGrid\", \"n_levels\": 2, \"base_resolution\": 2, "
                                        "\"hash\": \"Prime\", \"n_dims_to_encode\": 12}",
                                   0);
    assert_int_equal(gj_encoding_n_dims(tiled), 12);
    assert_int_equal(gj_encoding_level(tiled, 1, &info), GJ_OK);
    assert_int_equal(info.resolution, 4);
    assert_int_equal(info.entries, 4096);
    assert_int_equal(info.hashed, 0);
    assert_true(gj_encoding_n_params(tiled) == 2 * 4096 * 2);
    /* 32 dimensions: a level of at most 2^31 entries, n_params beyond 2^32 counted exactly. */
    gj_encoding *wide = create_ok(ctx, "{\"otype\": \"TiledGrid\", \"n_levels\": 2, \"base_resolution\": 2}", 32);
    assert_true(gj_encoding_n_params(wide) == 2ull * 2147483648ull * 2);
    gj_encoding_destroy(wide);

    int major = 0, minor = 0;
    if (gj_nvrtc_version(ctx, &major, &minor) != GJ_OK) {
        print_message("[  SKIPPED ] the NVRTC compile of D = 8 and 12: %s\n", gj_context_errmsg(ctx));
    } else {
        const gj_encoding *encodings[] = {dense, tiled};
        for (size_t i = 0; i < 2; ++i) {
            gj_program *prog = NULL;
            const gj_status status = gj_compile(ctx, encodings[i], NULL, "sm_90", &prog);
            if (status != GJ_OK) {
                fail_msg("compiling D = %u: %s: %s\n%s", gj_encoding_n_dims(encodings[i]), gj_status_name(status),
                         gj_context_errmsg(ctx), prog ? gj_program_log(prog) : "");
            }
            assert_true(gj_program_n_kernels(prog) > 0);
            gj_program_destroy(prog);
        }
    }
    gj_encoding_destroy(dense);
    gj_encoding_destroy(tiled);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(tcnn_check_through_the_public_api, setup, teardown),
        cmocka_unit_test_setup_teardown(getters_report_the_configuration, setup, teardown),
        cmocka_unit_test_setup_teardown(config_errors_reach_the_context, setup, teardown),
        cmocka_unit_test_setup_teardown(layout_errors_reach_the_context, setup, teardown),
        cmocka_unit_test_setup_teardown(arguments_are_checked_at_the_door, setup, teardown),
        cmocka_unit_test_setup_teardown(create_ex_skips_unknown_keys_on_request, setup, teardown),
        cmocka_unit_test_setup_teardown(hyperparams_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(hyperparams_use_canonical_spellings, setup, teardown),
        cmocka_unit_test_setup_teardown(dense_and_tiled_above_seven_dimensions, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
