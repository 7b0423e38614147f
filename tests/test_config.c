/* The JSON configuration: defaults, every accepted value, every refusal and its message,
 * and the canonical JSON round trip (docs/design.md §1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"

/* ------------------------------------------------------------ helpers */

static gj__config parse_ok(const char *json, uint32_t n_dims) {
    gj__config c;
    char err[1024] = "";
    gj_status s = gj__config_parse(json, n_dims, &c, err, sizeof err);
    if (s != GJ_OK) {
        fail_msg("expected %s (n_dims %u) to parse, got status %d: %s", json, n_dims, (int)s, err);
    }
    assert_string_equal(err, "");
    return c;
}

/* Parses json expecting GJ_ERROR_INVALID_CONFIG with a one-line message containing want. */
static void expect_error_dims(const char *json, uint32_t n_dims, const char *want) {
    gj__config c;
    memset(&c, 0xAB, sizeof c);
    char err[1024] = "";
    gj_status s = gj__config_parse(json, n_dims, &c, err, sizeof err);
    if (s != GJ_ERROR_INVALID_CONFIG) {
        fail_msg("expected %s (n_dims %u) to be refused, got status %d", json ? json : "(NULL)", n_dims, (int)s);
    }
    if (!strstr(err, want)) {
        fail_msg("message for %s\n  is: %s\n  lacks: %s", json ? json : "(NULL)", err, want);
    }
    if (strchr(err, '\n') || strchr(err, '\r')) {
        fail_msg("message is not one line: %s", err);
    }
    /* A refused configuration leaves a zeroed struct, never a half-filled one. */
    gj__config zero;
    memset(&zero, 0, sizeof zero);
    assert_memory_equal(&c, &zero, sizeof c);
}

static void expect_error(const char *json, const char *want) {
    expect_error_dims(json, 0, want);
}

/* Parses a configuration made from a printf format. */
static gj__config parse_fmt(uint32_t n_dims, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static gj__config parse_fmt(uint32_t n_dims, const char *fmt, ...) {
    char json[512];
    va_list args;
    va_start(args, fmt);
    vsnprintf(json, sizeof json, fmt, args);
    va_end(args);
    return parse_ok(json, n_dims);
}

/* ----------------------------------------------------------- defaults */

static void empty_object_gives_every_default(void **state) {
    (void)state;
    gj__config c = parse_ok("{}", 0);
    assert_int_equal(c.otype, GJ__OTYPE_GRID);
    assert_int_equal(c.type, GJ_GRID_HASH);
    assert_int_equal(c.n_dims, 3);
    assert_int_equal(c.n_levels, 16);
    assert_int_equal(c.n_features_per_level, 2);
    assert_int_equal(c.log2_hashmap_size, 19);
    assert_int_equal(c.base_resolution, 16);
    assert_true(c.per_level_scale == 2.0f);
    assert_int_equal(c.interpolation, GJ_INTERP_LINEAR);
    assert_int_equal(c.hash, GJ_HASH_COHERENT_PRIME);
    assert_false(c.stochastic_interpolation);
    assert_false(c.fixed_point_pos);
    assert_int_equal(c.precision, GJ_PRECISION_FP16);
}

static void whitespace_around_the_object_is_fine(void **state) {
    (void)state;
    gj__config c = parse_ok(" \n\t{ \"n_levels\" :\n 4 }\n ", 0);
    assert_int_equal(c.n_levels, 4);
}

static void n_dims_argument_is_used(void **state) {
    (void)state;
    assert_int_equal(parse_ok("{}", 2).n_dims, 2);
    assert_int_equal(parse_ok("{}", 7).n_dims, 7);
    assert_int_equal(parse_ok("{\"hash\": \"BaseConvert\"}", 32).n_dims, 32);
}

/* -------------------------------------------------------- otype / type */

static void otype_sets_the_default_type(void **state) {
    (void)state;
    static const struct {
        const char *otype;
        gj__otype parsed;
        gj_grid_type type;
    } cases[] = {
        {"Grid", GJ__OTYPE_GRID, GJ_GRID_HASH},
        {"grid", GJ__OTYPE_GRID, GJ_GRID_HASH},
        {"GRID", GJ__OTYPE_GRID, GJ_GRID_HASH},
        {"HashGrid", GJ__OTYPE_HASH_GRID, GJ_GRID_HASH},
        {"hashgrid", GJ__OTYPE_HASH_GRID, GJ_GRID_HASH},
        {"HASHGRID", GJ__OTYPE_HASH_GRID, GJ_GRID_HASH},
        {"DenseGrid", GJ__OTYPE_DENSE_GRID, GJ_GRID_DENSE},
        {"denseGRID", GJ__OTYPE_DENSE_GRID, GJ_GRID_DENSE},
        {"TiledGrid", GJ__OTYPE_TILED_GRID, GJ_GRID_TILED},
        {"tiledgrid", GJ__OTYPE_TILED_GRID, GJ_GRID_TILED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        gj__config c = parse_fmt(0, "{\"otype\": \"%s\"}", cases[i].otype);
        assert_int_equal(c.otype, cases[i].parsed);
        assert_int_equal(c.type, cases[i].type);
    }
}

static void type_overrides_otype(void **state) {
    (void)state;
    static const struct {
        const char *otype;
        const char *type;
        gj_grid_type want;
    } cases[] = {
        {"DenseGrid", "Hash", GJ_GRID_HASH},   {"DenseGrid", "hash", GJ_GRID_HASH},
        {"HashGrid", "Dense", GJ_GRID_DENSE},  {"HashGrid", "DENSE", GJ_GRID_DENSE},
        {"Grid", "Tiled", GJ_GRID_TILED},      {"Grid", "tIlEd", GJ_GRID_TILED},
        {"TiledGrid", "Hash", GJ_GRID_HASH},   {"TiledGrid", "Dense", GJ_GRID_DENSE},
        {"TiledGrid", "Tiled", GJ_GRID_TILED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        gj__config c = parse_fmt(0, "{\"otype\": \"%s\", \"type\": \"%s\"}", cases[i].otype, cases[i].type);
        assert_int_equal(c.type, cases[i].want);
    }
    assert_int_equal(parse_ok("{\"type\": \"Dense\"}", 0).otype, GJ__OTYPE_GRID);
}

static void bad_otype_and_type_are_refused(void **state) {
    (void)state;
    expect_error("{\"otype\": \"Frequency\"}",
                 "otype: must be \"Grid\", \"HashGrid\", \"DenseGrid\" or \"TiledGrid\" (got \"Frequency\")");
    expect_error("{\"otype\": \"\"}", "otype: must be");
    expect_error("{\"otype\": \"HashGrid \"}", "(got \"HashGrid \")");
    expect_error("{\"otype\": 1}", "otype: must be \"Grid\"");
    expect_error("{\"otype\": null}", "(got null)");
    expect_error("{\"type\": \"Sparse\"}", "type: must be \"Hash\", \"Dense\" or \"Tiled\" (got \"Sparse\")");
    expect_error("{\"type\": \"HashGrid\"}", "type: must be \"Hash\", \"Dense\" or \"Tiled\" (got \"HashGrid\")");
    expect_error("{\"type\": [\"Hash\"]}", "type: must be \"Hash\", \"Dense\" or \"Tiled\" (got an array)");
    expect_error("{\"type\": {}}", "(got an object)");
    expect_error("{\"type\": true}", "(got true)");
}

/* ------------------------------------------------ levels and features */

static void n_levels_accepts_1_to_128(void **state) {
    (void)state;
    assert_int_equal(parse_ok("{\"n_levels\": 1}", 0).n_levels, 1);
    assert_int_equal(parse_ok("{\"n_levels\": 128}", 0).n_levels, 128);
    assert_int_equal(parse_ok("{\"n_levels\": 12.0}", 0).n_levels, 12);
    assert_int_equal(parse_ok("{\"n_levels\": 1.6e1}", 0).n_levels, 16);
}

static void n_levels_refusals_name_the_key(void **state) {
    (void)state;
    expect_error("{\"n_levels\": 0}", "n_levels: must be an integer from 1 to 128 (got 0)");
    expect_error("{\"n_levels\": 129}", "n_levels: must be an integer from 1 to 128 (got 129)");
    expect_error("{\"n_levels\": 2.5}", "n_levels: must be an integer from 1 to 128 (got 2.5)");
    expect_error("{\"n_levels\": -1}", "n_levels: must be an integer from 1 to 128 (got -1)");
    expect_error("{\"n_levels\": 1e300}", "(got 1e+300)");
    expect_error("{\"n_levels\": 4294967312}", "(got 4294967312)"); /* 2^32 + 16 must not wrap to 16 */
    expect_error("{\"n_levels\": \"16\"}", "n_levels: must be an integer from 1 to 128 (got \"16\")");
    expect_error("{\"n_levels\": true}", "n_levels: must be an integer from 1 to 128 (got true)");
    expect_error("{\"n_levels\": null}", "(got null)");
    expect_error("{\"n_levels\": 0.1}", "(got 0.1)");
}

static void n_features_gives_the_level_count(void **state) {
    (void)state;
    /* L = n_features / F */
    assert_int_equal(parse_ok("{\"n_features\": 32}", 0).n_levels, 16);
    assert_int_equal(parse_ok("{\"n_features\": 2}", 0).n_levels, 1);
    assert_int_equal(parse_ok("{\"n_features\": 256}", 0).n_levels, 128);
    assert_int_equal(parse_ok("{\"n_grid_features\": 8, \"n_features_per_level\": 4}", 0).n_levels, 2);
    assert_int_equal(parse_ok("{\"n_features\": 1024, \"n_features_per_level\": 8}", 0).n_levels, 128);
    assert_int_equal(parse_ok("{\"n_features_per_level\": 1, \"n_features\": 7}", 0).n_levels, 7);
}

static void n_features_must_be_a_multiple_of_f(void **state) {
    (void)state;
    expect_error("{\"n_features\": 7}",
                 "n_features: must be a multiple of n_features_per_level (2) from 2 to 256, i.e. 1 to 128 levels "
                 "(got 7)");
    expect_error("{\"n_features\": 0}", "n_features: must be a multiple of n_features_per_level (2)");
    expect_error("{\"n_features\": 258}", "(got 258)");
    expect_error("{\"n_features\": 12, \"n_features_per_level\": 8}",
                 "n_features: must be a multiple of n_features_per_level (8) from 8 to 1024");
    expect_error("{\"n_grid_features\": 6, \"n_features_per_level\": 4}",
                 "n_grid_features: must be a multiple of n_features_per_level (4)");
    expect_error("{\"n_features\": 3.5}", "(got 3.5)");
    expect_error("{\"n_features\": \"32\"}", "n_features: must be a multiple");
    expect_error("{\"n_features\": -32}", "(got -32)");
}

static void n_levels_and_n_features_conflict(void **state) {
    (void)state;
    expect_error("{\"n_levels\": 16, \"n_features\": 32}", "n_levels: may not be given together with n_features");
    expect_error("{\"n_features\": 32, \"n_levels\": 16}", "one of them");
    expect_error("{\"n_levels\": 16, \"n_grid_features\": 32}",
                 "n_levels: may not be given together with n_grid_features");
    expect_error("{\"n_features\": 32, \"n_grid_features\": 32}",
                 "n_features: may not be given together with n_grid_features");
}

static void features_per_level_is_1_2_4_or_8(void **state) {
    (void)state;
    static const uint32_t ok[] = {1, 2, 4, 8};
    for (size_t i = 0; i < 4; ++i) {
        assert_int_equal(parse_fmt(0, "{\"n_features_per_level\": %u}", ok[i]).n_features_per_level, ok[i]);
    }
    expect_error("{\"n_features_per_level\": 3}", "n_features_per_level: must be 1, 2, 4 or 8 (got 3)");
    expect_error("{\"n_features_per_level\": 0}", "n_features_per_level: must be 1, 2, 4 or 8 (got 0)");
    expect_error("{\"n_features_per_level\": 16}", "(got 16)");
    expect_error("{\"n_features_per_level\": 2.5}", "n_features_per_level: must be 1, 2, 4 or 8 (got 2.5)");
    expect_error("{\"n_features_per_level\": -2}", "(got -2)");
    expect_error("{\"n_features_per_level\": \"2\"}", "n_features_per_level: must be 1, 2, 4 or 8 (got \"2\")");
    expect_error("{\"n_features_per_level\": false}", "(got false)");
}

/* --------------------------------------------------- sizes and scales */

static void log2_hashmap_size_is_1_to_31(void **state) {
    (void)state;
    assert_int_equal(parse_ok("{\"log2_hashmap_size\": 1}", 0).log2_hashmap_size, 1);
    assert_int_equal(parse_ok("{\"log2_hashmap_size\": 31}", 0).log2_hashmap_size, 31);
    expect_error("{\"log2_hashmap_size\": 0}", "log2_hashmap_size: must be an integer from 1 to 31 (got 0)");
    expect_error("{\"log2_hashmap_size\": 32}", "log2_hashmap_size: must be an integer from 1 to 31 (got 32)");
    expect_error("{\"log2_hashmap_size\": 19.5}", "(got 19.5)");
    expect_error("{\"log2_hashmap_size\": \"19\"}", "(got \"19\")");
}

static void base_resolution_is_a_positive_integer(void **state) {
    (void)state;
    assert_int_equal(parse_ok("{\"base_resolution\": 1}", 0).base_resolution, 1);
    assert_int_equal(parse_ok("{\"base_resolution\": 4294967295}", 0).base_resolution, 4294967295u);
    expect_error("{\"base_resolution\": 0}", "base_resolution: must be an integer from 1 to 4294967295 (got 0)");
    expect_error("{\"base_resolution\": -16}", "(got -16)");
    expect_error("{\"base_resolution\": 4294967296}", "(got 4294967296)");
    expect_error("{\"base_resolution\": 16.5}", "base_resolution: must be an integer from 1 to 4294967295 (got 16.5)");
    expect_error("{\"base_resolution\": [16]}", "(got an array)");
}

static void per_level_scale_is_a_positive_float(void **state) {
    (void)state;
    assert_true(parse_ok("{\"per_level_scale\": 1.5}", 0).per_level_scale == 1.5f);
    assert_true(parse_ok("{\"per_level_scale\": 2}", 0).per_level_scale == 2.0f);
    assert_true(parse_ok("{\"per_level_scale\": 0.5}", 0).per_level_scale == 0.5f);
    /* The double from the JSON text is rounded to float, as the reference reads a float. */
    assert_true(parse_ok("{\"per_level_scale\": 1.3819128799677}", 0).per_level_scale == 1.3819128799677f);
    assert_true(parse_ok("{\"per_level_scale\": 3.4e38}", 0).per_level_scale == 3.4e38f);
    assert_true(parse_ok("{\"per_level_scale\": 1e-40}", 0).per_level_scale == 1e-40f); /* subnormal float */
    /* An explicit value wins over the Dense default. */
    assert_true(parse_ok("{\"type\": \"Dense\", \"per_level_scale\": 1.25}", 0).per_level_scale == 1.25f);

    expect_error("{\"per_level_scale\": 0}", "per_level_scale: must be a number greater than 0 that fits a 32-bit float");
    expect_error("{\"per_level_scale\": 0}", "(got 0)");
    expect_error("{\"per_level_scale\": -2}", "(got -2)");
    expect_error("{\"per_level_scale\": 1e39}", "(got 1e+39)");    /* float overflow */
    expect_error("{\"per_level_scale\": 1e-50}", "(got 1e-50)");   /* rounds to float 0 */
    expect_error("{\"per_level_scale\": \"2.0\"}", "per_level_scale: must be a number greater than 0");
    expect_error("{\"per_level_scale\": true}", "(got true)");
}

static void dense_default_per_level_scale_reaches_256(void **state) {
    (void)state;
    /* exp(ln(256 / base) / (L - 1)): base 16, L 16 -> 16^(1/15) = 2^(4/15) = 1.20302503... */
    gj__config c = parse_ok("{\"otype\": \"DenseGrid\"}", 0);
    assert_float_equal(c.per_level_scale, 1.2030250360821166, 1e-6);
    /* Computed in float exactly as the reference's expression. */
    assert_true(c.per_level_scale == expf(logf(256.0f / 16.0f) / 15.0f));

    /* base 64, L 3 -> (256/64)^(1/2) = 2 */
    c = parse_ok("{\"type\": \"Dense\", \"base_resolution\": 64, \"n_levels\": 3}", 0);
    assert_float_equal(c.per_level_scale, 2.0, 1e-6);
    /* base 512 > 256: the default shrinks the grid, 0.5 for L 2 */
    c = parse_ok("{\"type\": \"Dense\", \"base_resolution\": 512, \"n_levels\": 2}", 0);
    assert_float_equal(c.per_level_scale, 0.5, 1e-6);
    /* The default follows type, not otype: DenseGrid made Hash keeps 2. */
    assert_true(parse_ok("{\"otype\": \"DenseGrid\", \"type\": \"Hash\"}", 0).per_level_scale == 2.0f);
    assert_true(parse_ok("{\"otype\": \"TiledGrid\"}", 0).per_level_scale == 2.0f);
}

static void dense_single_level_default_is_not_nan(void **state) {
    (void)state;
    /* The reference divides by L - 1 = 0: NaN for base 256 (0/0), inf or 0 otherwise. */
    static const uint32_t bases[] = {1, 16, 256, 1000};
    for (size_t i = 0; i < 4; ++i) {
        gj__config c = parse_fmt(0, "{\"type\": \"Dense\", \"n_levels\": 1, \"base_resolution\": %u}", bases[i]);
        assert_false(isnan(c.per_level_scale));
        assert_true(c.per_level_scale == 1.0f);
    }
    gj__config c = parse_ok("{\"type\": \"Dense\", \"n_features\": 2}", 0);
    assert_true(c.per_level_scale == 1.0f);
}

/* ---------------------------------------------------- enums and flags */

static void interpolation_values(void **state) {
    (void)state;
    static const struct {
        const char *name;
        gj_interpolation want;
    } cases[] = {
        {"Nearest", GJ_INTERP_NEAREST},       {"nearest", GJ_INTERP_NEAREST},       {"NEAREST", GJ_INTERP_NEAREST},
        {"Linear", GJ_INTERP_LINEAR},         {"linear", GJ_INTERP_LINEAR},         {"LiNeAr", GJ_INTERP_LINEAR},
        {"Smoothstep", GJ_INTERP_SMOOTHSTEP}, {"SmoothStep", GJ_INTERP_SMOOTHSTEP}, {"smoothstep", GJ_INTERP_SMOOTHSTEP},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        assert_int_equal(parse_fmt(0, "{\"interpolation\": \"%s\"}", cases[i].name).interpolation, cases[i].want);
    }
    expect_error("{\"interpolation\": \"Cubic\"}",
                 "interpolation: must be \"Nearest\", \"Linear\" or \"Smoothstep\" (got \"Cubic\")");
    expect_error("{\"interpolation\": 1}", "interpolation: must be \"Nearest\", \"Linear\" or \"Smoothstep\" (got 1)");
}

static void hash_values(void **state) {
    (void)state;
    static const struct {
        const char *name;
        gj_hash want;
    } cases[] = {
        {"Prime", GJ_HASH_PRIME},
        {"prime", GJ_HASH_PRIME},
        {"CoherentPrime", GJ_HASH_COHERENT_PRIME},
        {"coherentprime", GJ_HASH_COHERENT_PRIME},
        {"COHERENTPRIME", GJ_HASH_COHERENT_PRIME},
        {"ReversedPrime", GJ_HASH_REVERSED_PRIME},
        {"reversedPRIME", GJ_HASH_REVERSED_PRIME},
        {"Rng", GJ_HASH_RNG},
        {"RNG", GJ_HASH_RNG},
        {"BaseConvert", GJ_HASH_BASE_CONVERT},
        {"baseconvert", GJ_HASH_BASE_CONVERT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        assert_int_equal(parse_fmt(0, "{\"hash\": \"%s\"}", cases[i].name).hash, cases[i].want);
    }
    expect_error("{\"hash\": \"Murmur\"}",
                 "hash: must be \"Prime\", \"CoherentPrime\", \"ReversedPrime\", \"Rng\" or \"BaseConvert\" "
                 "(got \"Murmur\")");
    expect_error("{\"hash\": \"Coherent Prime\"}", "(got \"Coherent Prime\")");
}

static void boolean_flags(void **state) {
    (void)state;
    gj__config c = parse_ok("{\"stochastic_interpolation\": true, \"fixed_point_pos\": false}", 0);
    assert_true(c.stochastic_interpolation);
    assert_false(c.fixed_point_pos);
    c = parse_ok("{\"stochastic_interpolation\": false, \"fixed_point_pos\": true}", 0);
    assert_false(c.stochastic_interpolation);
    assert_true(c.fixed_point_pos);
    expect_error("{\"stochastic_interpolation\": 1}", "stochastic_interpolation: must be true or false (got 1)");
    expect_error("{\"fixed_point_pos\": \"true\"}", "fixed_point_pos: must be true or false (got \"true\")");
    expect_error("{\"fixed_point_pos\": null}", "fixed_point_pos: must be true or false (got null)");
}

static void precision_values(void **state) {
    (void)state;
    assert_int_equal(parse_ok("{\"precision\": \"fp16\"}", 0).precision, GJ_PRECISION_FP16);
    assert_int_equal(parse_ok("{\"precision\": \"FP16\"}", 0).precision, GJ_PRECISION_FP16);
    assert_int_equal(parse_ok("{\"precision\": \"fp32\"}", 0).precision, GJ_PRECISION_FP32);
    assert_int_equal(parse_ok("{\"precision\": \"Fp32\"}", 0).precision, GJ_PRECISION_FP32);
    expect_error("{\"precision\": \"fp64\"}", "precision: must be \"fp16\" or \"fp32\" (got \"fp64\")");
    expect_error("{\"precision\": 32}", "precision: must be \"fp16\" or \"fp32\" (got 32)");
}

/* --------------------------------------------------------- dimensions */

static void n_dims_to_encode_key(void **state) {
    (void)state;
    assert_int_equal(parse_ok("{\"n_dims_to_encode\": 4}", 0).n_dims, 4);
    assert_int_equal(parse_ok("{\"n_dims_to_encode\": 4}", 4).n_dims, 4); /* agreeing is fine */
    assert_int_equal(parse_ok("{\"n_dims_to_encode\": 1}", 0).n_dims, 1);
    expect_error_dims("{\"n_dims_to_encode\": 4}", 3,
                      "n_dims_to_encode: the configuration says 4 but the caller passed n_dims = 3");
    /* The message states the limit of the configuration at hand (the default: a Hash grid
     * with CoherentPrime, 7), and how to get more. */
    expect_error("{\"n_dims_to_encode\": 0}",
                 "n_dims_to_encode: must be an integer from 1 to 7 for a Hash grid with hash \"CoherentPrime\" (up to "
                 "32 with \"hash\": \"BaseConvert\", or with \"type\": \"Dense\" or \"Tiled\") (got 0)");
    expect_error("{\"n_dims_to_encode\": 0, \"type\": \"Dense\"}", "n_dims_to_encode: must be an integer from 1 to 32 (got 0)");
    expect_error("{\"n_dims_to_encode\": 33, \"hash\": \"BaseConvert\"}",
                 "n_dims_to_encode: must be an integer from 1 to 32 (got 33)");
    expect_error("{\"n_dims_to_encode\": 33, \"otype\": \"TiledGrid\"}",
                 "n_dims_to_encode: must be an integer from 1 to 32 (got 33)");
    expect_error("{\"n_dims_to_encode\": 2.5}", "(got 2.5)");
    expect_error("{\"n_dims_to_encode\": \"3\"}", "(got \"3\")");
}

static void dimension_limits_per_hash(void **state) {
    (void)state;
    static const char *const primes[] = {"Prime", "CoherentPrime", "ReversedPrime", "Rng"};
    char json[128];
    char want[160];
    for (size_t h = 0; h < 4; ++h) {
        for (uint32_t d = 1; d <= 7; ++d) {
            assert_int_equal(parse_fmt(d, "{\"hash\": \"%s\"}", primes[h]).n_dims, d);
            assert_int_equal(parse_fmt(0, "{\"hash\": \"%s\", \"n_dims_to_encode\": %u}", primes[h], d).n_dims, d);
        }
        /* Through the argument the message says "dimensions"; through the key it names the key. */
        snprintf(json, sizeof json, "{\"hash\": \"%s\"}", primes[h]);
        snprintf(want, sizeof want, "dimensions: must be from 1 to 7 for a Hash grid with hash \"%s\"", primes[h]);
        expect_error_dims(json, 8, want);
        expect_error_dims(json, 8, "(up to 32 with \"hash\": \"BaseConvert\", or with \"type\": \"Dense\" or "
                                   "\"Tiled\") (got n_dims = 8)");
        expect_error_dims(json, 40, "(got n_dims = 40)");
        snprintf(json, sizeof json, "{\"hash\": \"%s\", \"n_dims_to_encode\": 8}", primes[h]);
        snprintf(want, sizeof want, "n_dims_to_encode: must be an integer from 1 to 7 for a Hash grid with hash \"%s\"",
                 primes[h]);
        expect_error(json, want);
        expect_error(json, "(got 8)");
    }
    for (uint32_t d = 1; d <= 32; ++d) {
        assert_int_equal(parse_ok("{\"hash\": \"BaseConvert\"}", d).n_dims, d);
        assert_int_equal(parse_fmt(0, "{\"hash\": \"BaseConvert\", \"n_dims_to_encode\": %u}", d).n_dims, d);
    }
    expect_error_dims("{\"hash\": \"BaseConvert\"}", 33, "dimensions: must be from 1 to 32 (got n_dims = 33)");
    /* The default hash is CoherentPrime, so the limit applies to "{}" too. */
    expect_error_dims("{}", 8, "dimensions: must be from 1 to 7 for a Hash grid with hash \"CoherentPrime\"");
}

/* Dense and Tiled grids never hash: up to 32 dimensions whatever "hash" says (its default,
 * CoherentPrime, included); 33 is refused. */
static void dense_and_tiled_take_32_dimensions(void **state) {
    (void)state;
    static const char *const grids[] = {"{\"otype\": \"DenseGrid\"", "{\"otype\": \"TiledGrid\"",
                                        "{\"type\": \"Dense\", \"hash\": \"Prime\"", "{\"type\": \"Tiled\", \"hash\": \"Rng\""};
    for (size_t g = 0; g < sizeof grids / sizeof grids[0]; ++g) {
        for (uint32_t d = 1; d <= 32; ++d) {
            assert_int_equal(parse_fmt(d, "%s}", grids[g]).n_dims, d);
            assert_int_equal(parse_fmt(0, "%s, \"n_dims_to_encode\": %u}", grids[g], d).n_dims, d);
        }
        char json[128];
        snprintf(json, sizeof json, "%s}", grids[g]);
        expect_error_dims(json, 33, "dimensions: must be from 1 to 32 (got n_dims = 33)");
        snprintf(json, sizeof json, "%s, \"n_dims_to_encode\": 33}", grids[g]);
        expect_error(json, "n_dims_to_encode: must be an integer from 1 to 32 (got 33)");
    }
}

/* --------------------------------------------------------- JSON itself */

static void json_errors(void **state) {
    (void)state;
    /* Messages read well after the CLI's "invalid configuration: " (no doubled word). */
    expect_error(NULL, "no JSON text (NULL)");
    expect_error("", "empty text");
    expect_error("   ", "invalid JSON");
    expect_error("{", "invalid JSON");
    expect_error("{\"n_levels\": 4,}", "invalid JSON near line 1");
    expect_error("{} x", "invalid JSON near line 1, column 4 (at 'x')");
    expect_error("{\"n_levels\": 4}}", "(at '}')");
    expect_error("{n_levels: 4}", "invalid JSON near line 1");
    /* Python-style quotes get a hint. */
    expect_error("{'otype': 'HashGrid'}", "JSON strings take double quotes");
    /* The missing comma is on line 3. */
    expect_error("{\n  \"n_levels\": 4\n  \"hash\": \"Prime\"\n}", "line 3");
    expect_error("{\"n_levels\": 4, \"otype\": \"Hash", "invalid JSON");
}

static void top_level_must_be_an_object(void **state) {
    (void)state;
    expect_error("[]", "the configuration must be a JSON object such as {\"otype\": \"HashGrid\"} (got an array)");
    expect_error("16", "(got 16)");
    expect_error("null", "(got null)");
    expect_error("\"HashGrid\"", "(got \"HashGrid\")");
    expect_error("true", "(got true)");
}

static void unknown_keys_are_named(void **state) {
    (void)state;
    expect_error("{\"foo\": 1}", "unknown key 'foo' (known keys: otype, type, n_levels");
    expect_error("{\"foo\": 1}", "precision)");
    /* Close misspellings get a suggestion. */
    expect_error("{\"n_level\": 4}", "unknown key 'n_level'; did you mean 'n_levels'?");
    expect_error("{\"N_LEVELS\": 4}", "unknown key 'N_LEVELS'; did you mean 'n_levels'? (keys are case-sensitive)");
    expect_error("{\"log2_hashmapsize\": 4}", "did you mean 'log2_hashmap_size'?");
    expect_error("{\"Otype\": \"Grid\"}", "did you mean 'otype'?");
    /* tcnn keys of other encodings are not ours. */
    expect_error("{\"n_frequencies\": 12}", "unknown key 'n_frequencies'");
    /* A key with control characters still gives one line. */
    expect_error("{\"a\\nb\": 1}", "unknown key 'a?b'");
    expect_error("{\"\": 1}", "unknown key ''");
    /* Unknown keys are found before values are checked. */
    expect_error("{\"n_levels\": 0, \"bogus\": 1}", "unknown key 'bogus'");
}

/* GJ_CONFIG_IGNORE_UNKNOWN_KEYS: unknown keys skipped, each reported with the strict
 * parser's message on its own line; the known keys parse as without the unknown ones;
 * everything else stays an error. */
static void unknown_keys_can_be_skipped(void **state) {
    (void)state;
    const uint32_t flag = GJ_CONFIG_IGNORE_UNKNOWN_KEYS;
    char err[1024], strict[1024];
    gj__config c, plain;
    gj__strbuf ignored;
    gj__sb_init(&ignored);
    const char *json = "{\"n_level\": 4, \"n_levels\": 3, \"foo\": [1, 2], \"N_FEATURES_PER_LEVEL\": 4}";
    assert_int_equal(gj__config_parse_ex(json, 0, flag, &ignored, &c, err, sizeof err), GJ_OK);
    assert_string_equal(err, "");
    plain = parse_ok("{\"n_levels\": 3}", 0);
    assert_memory_equal(&c, &plain, sizeof c);
    char *text = gj__sb_take(&ignored);
    assert_non_null(text);
    /* One line per key, in order, each exactly what the strict parser says for it. */
    char *first = text, *second = strchr(first, '\n');
    assert_non_null(second);
    *second++ = '\0';
    char *third = strchr(second, '\n');
    assert_non_null(third);
    *third++ = '\0';
    assert_null(strchr(third, '\n'));
    assert_int_equal(gj__config_parse("{\"n_level\": 4}", 0, &c, strict, sizeof strict), GJ_ERROR_INVALID_CONFIG);
    assert_string_equal(first, strict);
    assert_string_equal(first, "unknown key 'n_level'; did you mean 'n_levels'? (keys are case-sensitive)");
    assert_int_equal(gj__config_parse("{\"foo\": 1}", 0, &c, strict, sizeof strict), GJ_ERROR_INVALID_CONFIG);
    assert_string_equal(second, strict);
    assert_non_null(strstr(second, "unknown key 'foo' (known keys: otype,"));
    assert_string_equal(third, "unknown key 'N_FEATURES_PER_LEVEL'; did you mean 'n_features_per_level'? (keys are "
                               "case-sensitive)");
    free(text);

    /* Without a place for the messages, and with nothing to skip. */
    assert_int_equal(gj__config_parse_ex(json, 0, flag, NULL, &c, err, sizeof err), GJ_OK);
    assert_memory_equal(&c, &plain, sizeof c);
    gj__sb_init(&ignored);
    assert_int_equal(gj__config_parse_ex("{\"n_levels\": 3}", 0, flag, &ignored, &c, err, sizeof err), GJ_OK);
    assert_int_equal(ignored.len, 0);
    gj__sb_free(&ignored);

    /* Known keys are still checked, skipped keys or not; flags 0 is the strict parser. */
    gj__sb_init(&ignored);
    assert_int_equal(gj__config_parse_ex("{\"bogus\": 1, \"n_levels\": 0}", 0, flag, &ignored, &c, err, sizeof err),
                     GJ_ERROR_INVALID_CONFIG);
    assert_non_null(strstr(err, "n_levels"));
    gj__sb_free(&ignored);
    assert_int_equal(gj__config_parse_ex("{\"n_levels\": 2, \"n_levels\": 3, \"x\": 1}", 0, flag, NULL, &c, err,
                                         sizeof err),
                     GJ_ERROR_INVALID_CONFIG);
    assert_non_null(strstr(err, "given twice"));
    assert_int_equal(gj__config_parse_ex("{\"bogus\": 1}", 0, 0, NULL, &c, err, sizeof err), GJ_ERROR_INVALID_CONFIG);
    assert_non_null(strstr(err, "unknown key 'bogus'"));
    assert_int_equal(gj__config_parse_ex("[1]", 0, flag, NULL, &c, err, sizeof err), GJ_ERROR_INVALID_CONFIG);
}

static void long_values_are_cut_in_messages(void **state) {
    (void)state;
    char json[512];
    char long_value[301];
    memset(long_value, 'x', 300);
    long_value[300] = '\0';
    snprintf(json, sizeof json, "{\"hash\": \"%s\"}", long_value);
    expect_error(json, "xxx...\")");
    gj__config c;
    char err[1024];
    assert_int_equal(gj__config_parse(json, 0, &c, err, sizeof err), GJ_ERROR_INVALID_CONFIG);
    assert_true(strlen(err) < 250);
}

static void duplicate_keys_are_refused(void **state) {
    (void)state;
    expect_error("{\"n_levels\": 4, \"n_levels\": 4}", "n_levels: given twice; give each key once");
    expect_error("{\"hash\": \"Prime\", \"otype\": \"Grid\", \"hash\": \"Rng\"}", "hash: given twice");
}

static void error_buffer_may_be_small_or_absent(void **state) {
    (void)state;
    gj__config c;
    assert_int_equal(gj__config_parse("{\"n_levels\": 0}", 0, &c, NULL, 0), GJ_ERROR_INVALID_CONFIG);
    char small[8];
    assert_int_equal(gj__config_parse("{\"n_levels\": 0}", 0, &c, small, sizeof small), GJ_ERROR_INVALID_CONFIG);
    assert_string_equal(small, "n_level");
    char one[1] = {'z'};
    assert_int_equal(gj__config_parse("{\"n_levels\": 0}", 0, &c, one, 0), GJ_ERROR_INVALID_CONFIG);
    assert_int_equal(one[0], 'z'); /* size 0: not written */
    assert_int_equal(gj__config_parse("{}", 0, &c, NULL, 0), GJ_OK);
    assert_int_equal(gj__config_parse("{}", 0, NULL, NULL, 0), GJ_ERROR_INVALID_CONFIG);
}

/* ---------------------------------------------------------- canonical */

static void names_are_canonical(void **state) {
    (void)state;
    assert_string_equal(gj__grid_type_name(GJ_GRID_HASH), "Hash");
    assert_string_equal(gj__grid_type_name(GJ_GRID_DENSE), "Dense");
    assert_string_equal(gj__grid_type_name(GJ_GRID_TILED), "Tiled");
    assert_string_equal(gj__interpolation_name(GJ_INTERP_NEAREST), "Nearest");
    assert_string_equal(gj__interpolation_name(GJ_INTERP_LINEAR), "Linear");
    assert_string_equal(gj__interpolation_name(GJ_INTERP_SMOOTHSTEP), "Smoothstep");
    assert_string_equal(gj__hash_name(GJ_HASH_PRIME), "Prime");
    assert_string_equal(gj__hash_name(GJ_HASH_COHERENT_PRIME), "CoherentPrime");
    assert_string_equal(gj__hash_name(GJ_HASH_REVERSED_PRIME), "ReversedPrime");
    assert_string_equal(gj__hash_name(GJ_HASH_RNG), "Rng");
    assert_string_equal(gj__hash_name(GJ_HASH_BASE_CONVERT), "BaseConvert");
    assert_string_equal(gj__precision_name(GJ_PRECISION_FP16), "fp16");
    assert_string_equal(gj__precision_name(GJ_PRECISION_FP32), "fp32");
    assert_string_equal(gj__otype_name(GJ__OTYPE_GRID), "Grid");
    assert_string_equal(gj__otype_name(GJ__OTYPE_HASH_GRID), "HashGrid");
    assert_string_equal(gj__otype_name(GJ__OTYPE_DENSE_GRID), "DenseGrid");
    assert_string_equal(gj__otype_name(GJ__OTYPE_TILED_GRID), "TiledGrid");
}

static void canonical_json_of_the_defaults(void **state) {
    (void)state;
    gj__config c = parse_ok("{}", 0);
    char *json = gj__config_to_json(&c);
    assert_non_null(json);
    /* Every key, in the documented order. */
    assert_string_equal(json, "{\"otype\": \"Grid\", \"type\": \"Hash\", \"n_levels\": 16, \"n_features_per_level\": 2, "
                              "\"log2_hashmap_size\": 19, \"base_resolution\": 16, \"per_level_scale\": 2, "
                              "\"interpolation\": \"Linear\", \"hash\": \"CoherentPrime\", "
                              "\"stochastic_interpolation\": false, \"fixed_point_pos\": false, "
                              "\"n_dims_to_encode\": 3, \"precision\": \"fp16\"}");
    free(json);
    assert_null(gj__config_to_json(NULL));
}

static void canonical_json_normalises_spelling(void **state) {
    (void)state;
    gj__config c = parse_ok("{\"otype\": \"hashgrid\", \"type\": \"TILED\", \"hash\": \"rng\", "
                            "\"interpolation\": \"SMOOTHSTEP\", \"precision\": \"FP32\", \"n_features\": 8}",
                            0);
    char *json = gj__config_to_json(&c);
    assert_non_null(json);
    assert_non_null(strstr(json, "\"otype\": \"HashGrid\""));
    assert_non_null(strstr(json, "\"type\": \"Tiled\""));
    assert_non_null(strstr(json, "\"hash\": \"Rng\""));
    assert_non_null(strstr(json, "\"interpolation\": \"Smoothstep\""));
    assert_non_null(strstr(json, "\"precision\": \"fp32\""));
    assert_non_null(strstr(json, "\"n_levels\": 4")); /* n_features 8 / F 2 */
    assert_null(strstr(json, "n_features\""));
    free(json);
}

/* parse -> JSON -> parse gives the same bytes, and the JSON is a fixed point. */
static void check_round_trip(const char *json, uint32_t n_dims) {
    gj__config first = parse_ok(json, n_dims);
    char *text = gj__config_to_json(&first);
    assert_non_null(text);

    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    assert_int_equal(cJSON_GetArraySize(root), 13);
    cJSON_Delete(root);

    gj__config second = parse_ok(text, 0);
    if (memcmp(&first, &second, sizeof first) != 0) {
        fail_msg("round trip of %s changed the configuration: %s", json, text);
    }
    char *again = gj__config_to_json(&second);
    assert_non_null(again);
    assert_string_equal(text, again);
    free(again);
    free(text);
}

static void round_trip_of_many_configurations(void **state) {
    (void)state;
    static const char *const otypes[] = {"Grid", "hashgrid", "DenseGrid", "TILEDGRID"};
    static const char *const types[] = {NULL, "Hash", "dense", "Tiled"};
    static const char *const hashes[] = {"Prime", "CoherentPrime", "ReversedPrime", "Rng", "BaseConvert"};
    static const char *const interps[] = {"Nearest", "Linear", "Smoothstep"};
    static const uint32_t fs[] = {1, 2, 4, 8};
    char json[512];
    char type[32];
    unsigned n = 0;
    for (size_t o = 0; o < 4; ++o) {
        for (size_t t = 0; t < 4; ++t) {
            for (size_t h = 0; h < 5; ++h) {
                for (size_t i = 0; i < 3; ++i, ++n) {
                    snprintf(type, sizeof type, types[t] ? "\"type\": \"%s\", " : "%s", types[t] ? types[t] : "");
                    snprintf(json, sizeof json,
                             "{\"otype\": \"%s\", %s\"hash\": \"%s\", \"interpolation\": \"%s\", "
                             "\"n_features_per_level\": %u, \"n_levels\": %u, \"base_resolution\": %u, "
                             "\"precision\": \"%s\", \"stochastic_interpolation\": %s, \"fixed_point_pos\": %s}",
                             otypes[o], type, hashes[h], interps[i], fs[n % 4], 1 + n % 128, 1 + (n * 7) % 300,
                             n % 2 ? "fp32" : "fp16", n % 3 ? "true" : "false", n % 5 ? "false" : "true");
                    check_round_trip(json, 1 + n % 7);
                }
            }
        }
    }
    /* Awkward floats: the %.9g text must give back the very same float. */
    static const char *const scales[] = {"1.5",        "1.3819128799677", "1.0000001", "0.99999994", "1e-30",
                                         "3.4028e38",  "1e-40",           "2.7182818", "1.2599210498948732",
                                         "1.4142135", "0.1",             "1.2030250"};
    for (size_t s = 0; s < sizeof scales / sizeof scales[0]; ++s) {
        snprintf(json, sizeof json, "{\"per_level_scale\": %s}", scales[s]);
        check_round_trip(json, 0);
    }
    /* Dense defaults of many shapes (irrational scales). */
    for (uint32_t levels = 1; levels <= 128; levels += 9) {
        for (uint32_t base = 1; base <= 1000; base += 111) {
            snprintf(json, sizeof json, "{\"type\": \"Dense\", \"n_levels\": %u, \"base_resolution\": %u}", levels, base);
            check_round_trip(json, 2);
        }
    }
    check_round_trip("{\"hash\": \"BaseConvert\", \"n_dims_to_encode\": 32, \"log2_hashmap_size\": 31}", 0);
    check_round_trip("{\"hash\": \"BaseConvert\"}", 24);
    check_round_trip("{\"base_resolution\": 4294967295, \"log2_hashmap_size\": 1, \"n_features\": 1024, "
                     "\"n_features_per_level\": 8}",
                     0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(empty_object_gives_every_default),
        cmocka_unit_test(whitespace_around_the_object_is_fine),
        cmocka_unit_test(n_dims_argument_is_used),
        cmocka_unit_test(otype_sets_the_default_type),
        cmocka_unit_test(type_overrides_otype),
        cmocka_unit_test(bad_otype_and_type_are_refused),
        cmocka_unit_test(n_levels_accepts_1_to_128),
        cmocka_unit_test(n_levels_refusals_name_the_key),
        cmocka_unit_test(n_features_gives_the_level_count),
        cmocka_unit_test(n_features_must_be_a_multiple_of_f),
        cmocka_unit_test(n_levels_and_n_features_conflict),
        cmocka_unit_test(features_per_level_is_1_2_4_or_8),
        cmocka_unit_test(log2_hashmap_size_is_1_to_31),
        cmocka_unit_test(base_resolution_is_a_positive_integer),
        cmocka_unit_test(per_level_scale_is_a_positive_float),
        cmocka_unit_test(dense_default_per_level_scale_reaches_256),
        cmocka_unit_test(dense_single_level_default_is_not_nan),
        cmocka_unit_test(interpolation_values),
        cmocka_unit_test(hash_values),
        cmocka_unit_test(boolean_flags),
        cmocka_unit_test(precision_values),
        cmocka_unit_test(n_dims_to_encode_key),
        cmocka_unit_test(dimension_limits_per_hash),
        cmocka_unit_test(dense_and_tiled_take_32_dimensions),
        cmocka_unit_test(json_errors),
        cmocka_unit_test(top_level_must_be_an_object),
        cmocka_unit_test(unknown_keys_are_named),
        cmocka_unit_test(unknown_keys_can_be_skipped),
        cmocka_unit_test(long_values_are_cut_in_messages),
        cmocka_unit_test(duplicate_keys_are_refused),
        cmocka_unit_test(error_buffer_may_be_small_or_absent),
        cmocka_unit_test(names_are_canonical),
        cmocka_unit_test(canonical_json_of_the_defaults),
        cmocka_unit_test(canonical_json_normalises_spelling),
        cmocka_unit_test(round_trip_of_many_configurations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
