/* Per-level scale, resolution, entries, offsets and index modes (docs/design.md §2, §4).
 * Expected numbers are worked out by hand in the comments, not taken from our output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/layout.h"

/* ------------------------------------------------------------ helpers */

static gj__config config_of(const char *json, uint32_t n_dims) {
    gj__config c;
    char err[1024] = "";
    if (gj__config_parse(json, n_dims, &c, err, sizeof err) != GJ_OK) {
        fail_msg("config %s: %s", json, err);
    }
    return c;
}

static gj__layout layout_of(const char *json, uint32_t n_dims) {
    gj__config c = config_of(json, n_dims);
    gj__layout layout;
    char err[1024] = "";
    gj_status s = gj__layout_compute(&c, &layout, err, sizeof err);
    if (s != GJ_OK) {
        fail_msg("layout of %s (D=%u): status %d: %s", json, n_dims, (int)s, err);
    }
    return layout;
}

/* The layout must be refused with GJ_ERROR_LAYOUT_TOO_LARGE, a one-line message
 * containing every string in wants (NULL-terminated), and a zeroed result. */
static void expect_too_large(const char *json, uint32_t n_dims, const char *const *wants) {
    gj__config c = config_of(json, n_dims);
    gj__layout layout;
    memset(&layout, 0xCD, sizeof layout);
    char err[1024] = "";
    gj_status s = gj__layout_compute(&c, &layout, err, sizeof err);
    if (s != GJ_ERROR_LAYOUT_TOO_LARGE) {
        fail_msg("expected %s (D=%u) to be too large, got status %d", json, n_dims, (int)s);
    }
    for (; *wants; ++wants) {
        if (!strstr(err, *wants)) {
            fail_msg("message for %s\n  is: %s\n  lacks: %s", json, err, *wants);
        }
    }
    assert_null(strchr(err, '\n'));
    assert_int_equal(layout.n_levels, 0);
    assert_int_equal(layout.n_params, 0);
}

typedef struct expected_level {
    uint32_t resolution;
    uint32_t entries;
    gj__index_mode mode;
} expected_level;

static void check_levels(const gj__layout *layout, const expected_level *want, uint32_t n, uint32_t f) {
    assert_int_equal(layout->n_levels, n);
    uint64_t offset = 0;
    for (uint32_t l = 0; l < n; ++l) {
        const gj__level *got = &layout->levels[l];
        if (got->resolution != want[l].resolution || got->entries != want[l].entries ||
            got->index_mode != want[l].mode || got->offset != offset) {
            fail_msg("level %u: resolution %u entries %u mode %d offset %llu; want %u %u %d %llu", l, got->resolution,
                     got->entries, (int)got->index_mode, (unsigned long long)got->offset, want[l].resolution,
                     want[l].entries, (int)want[l].mode, (unsigned long long)offset);
        }
        offset += want[l].entries;
    }
    assert_int_equal(layout->n_entries, offset);
    assert_int_equal(layout->n_params, offset * f);
    assert_int_equal(layout->n_output_dims, n * f);
}

#define D GJ__INDEX_DENSE
#define H GJ__INDEX_HASH
#define W GJ__INDEX_WRAP

/* ---------------------------------------------------------- max bases */

static void max_base_is_the_largest_resolution_whose_power_fits(void **state) {
    (void)state;
    for (uint32_t d = 1; d <= 10; ++d) {
        uint64_t m = gj__max_base(d);
        uint64_t power = 1;
        uint64_t next = 1;
        for (uint32_t i = 0; i < d; ++i) {
            power *= m;
            next *= m + 1; /* at most 2^32 for D = 1, 2, 4 and 10^10 for D = 10: no overflow */
        }
        assert_true(power <= UINT32_MAX);
        assert_true(next > UINT32_MAX);
    }
    assert_int_equal(gj__max_base(0), 0);
    for (uint32_t d = 11; d <= 40; ++d) {
        assert_int_equal(gj__max_base(d), 0); /* beyond 10 dimensions: always hashed or wrapped */
    }
}

/* -------------------------------------------------------------- tcnn */

static void tcnn_check_numbers(void **state) {
    (void)state;
    /* docs/design.md §2: D=3, HashGrid, base 32, log2 16, F=2, 20 levels, per_level_scale 1.5.
     * Level 0: scale 31, resolution 32, 32^3 = 32768 < 2^16 entries, dense (table >= grid).
     * Level 1: scale ~47, resolution 48, 48^3 = 110592 > 65536 -> 65536, hashed.
     * Level 2: scale ~71, resolution 72 -> 65536, hashed; and so on to level 19.
     * n_params = (32768 + 19 * 65536) * 2 = 2555904. */
    gj__layout layout = layout_of("{\"otype\": \"HashGrid\", \"n_levels\": 20, \"n_features_per_level\": 2, "
                                  "\"log2_hashmap_size\": 16, \"base_resolution\": 32, \"per_level_scale\": 1.5}",
                                  3);
    assert_int_equal(layout.n_levels, 20);
    assert_true(layout.levels[0].scale == 31.0f);
    assert_int_equal(layout.levels[0].resolution, 32);
    assert_int_equal(layout.levels[0].entries, 32768);
    assert_int_equal(layout.levels[0].index_mode, GJ__INDEX_DENSE);
    assert_int_equal(layout.levels[1].resolution, 48);
    assert_int_equal(layout.levels[1].entries, 65536);
    assert_int_equal(layout.levels[1].offset, 32768);
    assert_int_equal(layout.levels[1].index_mode, GJ__INDEX_HASH);
    assert_int_equal(layout.levels[2].resolution, 72);
    assert_int_equal(layout.levels[2].entries, 65536);
    assert_int_equal(layout.levels[2].offset, 32768 + 65536);
    for (uint32_t l = 1; l < 20; ++l) {
        assert_int_equal(layout.levels[l].entries, 65536);
        assert_int_equal(layout.levels[l].index_mode, GJ__INDEX_HASH);
    }
    assert_int_equal(layout.n_entries, 1277952);
    assert_int_equal(layout.n_params, 2555904);
    assert_int_equal(layout.n_output_dims, 40);
}

static void scale_follows_the_float_formula(void **state) {
    (void)state;
    gj__layout layout = layout_of("{\"n_levels\": 20, \"base_resolution\": 32, \"per_level_scale\": 1.5}", 3);
    for (uint32_t l = 0; l < 20; ++l) {
        const gj__level *level = &layout.levels[l];
        /* docs/design.md §2, in float, as the reference's grid_scale(). */
        float want = exp2f((float)l * log2f(1.5f)) * 32.0f - 1.0f;
        assert_true(level->scale == want);
        /* And, independently, close to the real-number value 32 * 1.5^l - 1. */
        double exact = 32.0 * pow(1.5, l) - 1.0;
        assert_true(fabs(level->scale - exact) <= 1e-5 * exact);
        assert_int_equal(level->resolution, (uint32_t)ceilf(want) + 1);
    }
}

/* -------------------------------------------------------------- Dense */

static void dense_2d_powers_of_two(void **state) {
    (void)state;
    /* D=2, base 16, pls 2: scales 15, 31, 63 -> resolutions 16, 32, 64
     * -> entries 256, 1024, 4096 (all multiples of 8); offsets 0, 256, 1280; 5376 entries. */
    gj__layout layout = layout_of("{\"type\": \"Dense\", \"n_levels\": 3, \"per_level_scale\": 2}", 2);
    static const expected_level want[] = {{16, 256, D}, {32, 1024, D}, {64, 4096, D}};
    check_levels(&layout, want, 3, 2);
    assert_true(layout.levels[0].scale == 15.0f);
    assert_true(layout.levels[1].scale == 31.0f);
    assert_true(layout.levels[2].scale == 63.0f);
    assert_int_equal(layout.levels[2].offset, 1280);
    assert_int_equal(layout.n_params, 10752);
}

static void dense_3d_powers_of_two(void **state) {
    (void)state;
    /* D=3: 16^3 = 4096, 32^3 = 32768, 64^3 = 262144; offsets 0, 4096, 36864; total 299008; F=4. */
    gj__layout layout = layout_of("{\"otype\": \"DenseGrid\", \"n_levels\": 3, \"per_level_scale\": 2, "
                                  "\"n_features_per_level\": 4}",
                                  3);
    static const expected_level want[] = {{16, 4096, D}, {32, 32768, D}, {64, 262144, D}};
    check_levels(&layout, want, 3, 4);
    assert_int_equal(layout.n_params, 299008 * 4);
}

static void dense_every_dimension_1_to_7(void **state) {
    (void)state;
    /* base 2, pls 2: resolutions 2, 4, 8; entries = res^D rounded up to 8. */
    static const expected_level want[7][3] = {
        {{2, 8, D}, {4, 8, D}, {8, 8, D}},             /* D=1: 2, 4, 8 -> 8, 8, 8 */
        {{2, 8, D}, {4, 16, D}, {8, 64, D}},           /* D=2: 4 -> 8, 16, 64 */
        {{2, 8, D}, {4, 64, D}, {8, 512, D}},          /* D=3 */
        {{2, 16, D}, {4, 256, D}, {8, 4096, D}},       /* D=4 */
        {{2, 32, D}, {4, 1024, D}, {8, 32768, D}},     /* D=5 */
        {{2, 64, D}, {4, 4096, D}, {8, 262144, D}},    /* D=6 */
        {{2, 128, D}, {4, 16384, D}, {8, 2097152, D}}, /* D=7: 8^7 = 2^21; 8 <= max_base(7) = 23 */
    };
    for (uint32_t d = 1; d <= 7; ++d) {
        gj__layout layout = layout_of("{\"type\": \"Dense\", \"n_levels\": 3, \"base_resolution\": 2, "
                                      "\"per_level_scale\": 2, \"n_features_per_level\": 1}",
                                      d);
        check_levels(&layout, want[d - 1], 3, 1);
    }
}

static void dense_rounds_entries_up_to_8(void **state) {
    (void)state;
    /* D=1, base 5, pls 2: scales 4, 9, 19 -> resolutions 5, 10, 20 -> 8, 16, 24 entries. */
    gj__layout layout = layout_of("{\"type\": \"Dense\", \"n_levels\": 3, \"base_resolution\": 5, "
                                  "\"per_level_scale\": 2}",
                                  1);
    static const expected_level want[] = {{5, 8, D}, {10, 16, D}, {20, 24, D}};
    check_levels(&layout, want, 3, 2);
    /* D=2, base 3, pls 1: resolution 3 on both levels, 9 -> 16 entries. */
    layout = layout_of("{\"type\": \"Dense\", \"n_levels\": 2, \"base_resolution\": 3, \"per_level_scale\": 1}", 2);
    static const expected_level want2[] = {{3, 16, D}, {3, 16, D}};
    check_levels(&layout, want2, 2, 2);
}

static void dense_beyond_ten_dimensions_wraps_exactly(void **state) {
    (void)state;
    /* D > 10: max_base is 0, so the index is never the uint32 dense sum but the exact
     * Horner sum modulo entries (WRAP), which for Dense equals the plain dense index. */
    gj__layout layout = layout_of("{\"type\": \"Dense\", \"hash\": \"BaseConvert\", \"n_levels\": 1, "
                                  "\"base_resolution\": 4}",
                                  12);
    static const expected_level want12[] = {{4, 16777216, W}}; /* 4^12 = 2^24 */
    check_levels(&layout, want12, 1, 2);

    layout = layout_of("{\"type\": \"Dense\", \"hash\": \"BaseConvert\", \"n_levels\": 1, \"base_resolution\": 1}", 32);
    static const expected_level want32[] = {{1, 8, W}}; /* scale 0 -> resolution 1; 1 -> 8 */
    check_levels(&layout, want32, 1, 2);

    layout = layout_of("{\"type\": \"Dense\", \"hash\": \"BaseConvert\", \"n_levels\": 1, \"base_resolution\": 2}", 30);
    static const expected_level want30[] = {{2, 1073741824, W}}; /* 2^30 */
    check_levels(&layout, want30, 1, 2);

    /* D = 10, resolution 8 <= max_base(10) = 9: densely indexed, 8^10 = 2^30 entries. */
    layout = layout_of("{\"type\": \"Dense\", \"hash\": \"BaseConvert\", \"n_levels\": 1, \"base_resolution\": 8}", 10);
    static const expected_level want10[] = {{8, 1073741824, D}};
    check_levels(&layout, want10, 1, 2);
}

static void dense_levels_beyond_2_31_are_refused(void **state) {
    (void)state;
    /* D=3, base 16, pls 2: level l has resolution 16 * 2^l; level 7: 2048^3 = 2^33 entries. */
    static const char *const wants[] = {"level 7",  "Dense",      "2048^3 = 8589934592", "2147483647",
                                        "\"type\": \"Hash\"", "n_levels", "per_level_scale",    NULL};
    expect_too_large("{\"type\": \"Dense\", \"n_levels\": 8, \"per_level_scale\": 2}", 3, wants);
    /* Seven levels fit: 2^12 + 2^15 + ... + 2^30 = 1227132928 entries. */
    gj__layout layout = layout_of("{\"type\": \"Dense\", \"n_levels\": 7, \"per_level_scale\": 2}", 3);
    assert_int_equal(layout.levels[6].entries, 1073741824);
    assert_int_equal(layout.n_entries, 1227132928);
    /* 2^31 itself is one too many (D=31, resolution 2). */
    static const char *const wants31[] = {"level 0", "2^31 = 2147483648", NULL};
    expect_too_large("{\"type\": \"Dense\", \"hash\": \"BaseConvert\", \"n_levels\": 1, \"base_resolution\": 2}", 31,
                     wants31);
    /* A power beyond 64 bits is reported without wrapping around. */
    static const char *const wants_huge[] = {"level 0", "1000^32", "more than 1.8e19", NULL};
    expect_too_large("{\"type\": \"Dense\", \"hash\": \"BaseConvert\", \"n_levels\": 1, \"base_resolution\": 1000}",
                     32, wants_huge);
}

static void dense_one_dimension_at_the_2_31_edge(void **state) {
    (void)state;
    /* base 2147483520 = 2^31 - 128 is a float; scale = 2^31 - 129 rounds (float spacing 128)
     * to 2147483520, resolution 2147483521 <= 2^31 - 1: allowed, rounded up to 2147483528. */
    gj__layout layout = layout_of("{\"type\": \"Dense\", \"n_levels\": 1, \"base_resolution\": 2147483520}", 1);
    static const expected_level want[] = {{2147483521u, 2147483528u, D}};
    check_levels(&layout, want, 1, 2);
    /* base 2^31: scale 2^31 - 1 rounds to 2^31, resolution 2^31 + 1: refused. */
    static const char *const wants[] = {"level 0", "2147483649", NULL};
    expect_too_large("{\"type\": \"Dense\", \"n_levels\": 1, \"base_resolution\": 2147483648}", 1, wants);
}

static void dense_default_scale_layouts(void **state) {
    (void)state;
    /* One level: the default per_level_scale must not poison the scale with NaN. */
    gj__layout layout = layout_of("{\"type\": \"Dense\", \"n_levels\": 1}", 3);
    static const expected_level want[] = {{16, 4096, D}};
    check_levels(&layout, want, 1, 2);
    assert_true(layout.levels[0].scale == 15.0f);
    /* Sixteen levels from 16 towards 256: the last resolution is 256 give or take float rounding. */
    layout = layout_of("{\"otype\": \"DenseGrid\"}", 2);
    assert_int_equal(layout.levels[0].resolution, 16);
    assert_in_range(layout.levels[15].resolution, 256, 257);
    for (uint32_t l = 1; l < 16; ++l) {
        assert_true(layout.levels[l].resolution > layout.levels[l - 1].resolution);
        assert_false(isnan(layout.levels[l].scale));
    }
}

/* -------------------------------------------------------------- Tiled */

static void tiled_is_capped_at_base_to_the_d(void **state) {
    (void)state;
    /* D=2, base 10, pls 2: resolutions 10, 20, 40; dense 100 -> 104, 400, 1600, each capped
     * at 10^2 = 100 (not a multiple of 8, as in the reference). */
    gj__layout layout = layout_of("{\"otype\": \"TiledGrid\", \"n_levels\": 3, \"base_resolution\": 10}", 2);
    static const expected_level want[] = {{10, 100, D}, {20, 100, D}, {40, 100, D}};
    check_levels(&layout, want, 3, 2);

    /* pls < 1: the dense grid is smaller than the tile: D=2, base 16, pls 0.5: res 16, 8, 4. */
    layout = layout_of("{\"type\": \"Tiled\", \"n_levels\": 3, \"per_level_scale\": 0.5}", 2);
    static const expected_level want_small[] = {{16, 256, D}, {8, 64, D}, {4, 16, D}};
    check_levels(&layout, want_small, 3, 2);
}

static void tiled_wraps_beyond_max_base(void **state) {
    (void)state;
    /* D=3, base 16, pls 2, 8 levels: resolutions 16 ... 2048, all capped at 16^3 = 4096.
     * 1024 <= max_base(3) = 1625 is dense; 2048 is not: WRAP. */
    gj__layout layout = layout_of("{\"type\": \"Tiled\", \"n_levels\": 8}", 3);
    static const expected_level want[] = {{16, 4096, D},  {32, 4096, D},  {64, 4096, D},   {128, 4096, D},
                                          {256, 4096, D}, {512, 4096, D}, {1024, 4096, D}, {2048, 4096, W}};
    check_levels(&layout, want, 8, 2);
}

static void tiled_base_power_does_not_overflow(void **state) {
    (void)state;
    /* D=8, base 16: 16^8 = 2^32 (the reference's uint32 powi gives 0 here). The level's
     * own 16^8 exceeds 2^31 -> 2^31 - 1 -> 2^31 after rounding; min(2^31, 2^32) = 2^31.
     * 16 > max_base(8) = 15: WRAP. n_params = 2^31 * 2 = 2^32 does not fit 32 bits. */
    gj__layout layout = layout_of("{\"type\": \"Tiled\", \"hash\": \"BaseConvert\", \"n_levels\": 1}", 8);
    static const expected_level want[] = {{16, 2147483648u, W}};
    check_levels(&layout, want, 1, 2);
    assert_true(layout.n_params == 4294967296ull);

    /* D=10, base 9: 9 <= max_base(10) = 9, 9^10 = 3486784401 > 2^31 -> 2^31, below the
     * tile 9^10: dense index. Level 1 (resolution 18) wraps. */
    layout = layout_of("{\"type\": \"Tiled\", \"hash\": \"BaseConvert\", \"n_levels\": 2, \"base_resolution\": 9}", 10);
    static const expected_level want10[] = {{9, 2147483648u, D}, {18, 2147483648u, W}};
    check_levels(&layout, want10, 2, 2);
}

static void tiled_one_dimension_past_2_31(void **state) {
    (void)state;
    /* D=1, base 2147483656 = 2^31 + 8: (float)base = 2^31, scale 2^31 - 1 rounds to 2^31,
     * resolution 2^31 + 1. (float)resolution = 2^31 is not above (float)(2^31 - 1) = 2^31,
     * so, as in the reference, the exact 2^31 + 1 is kept and rounded up to 2^31 + 8,
     * which the tile (2^31 + 8) does not cap. Hash caps it at 2^log2. */
    gj__layout layout = layout_of("{\"type\": \"Tiled\", \"n_levels\": 1, \"base_resolution\": 2147483656}", 1);
    static const expected_level want[] = {{2147483649u, 2147483656u, D}};
    check_levels(&layout, want, 1, 2);
    layout = layout_of("{\"type\": \"Hash\", \"n_levels\": 1, \"base_resolution\": 2147483656, "
                       "\"log2_hashmap_size\": 31}",
                       1);
    static const expected_level want_hash[] = {{2147483649u, 2147483648u, H}};
    check_levels(&layout, want_hash, 1, 2);
}

/* --------------------------------------------------------------- Hash */

static void hash_every_dimension_1_to_7(void **state) {
    (void)state;
    /* base 2, pls 2, 4 levels, table 2^4 = 16: resolutions 2, 4, 8, 16; dense 2^(D(l+1)),
     * rounded up to 8, capped at 16. Hashed exactly when the table is smaller than the grid. */
    static const expected_level want[7][4] = {
        /* D=1: 2, 4, 8, 16 -> 8, 8, 8, 16; never smaller than the grid */
        {{2, 8, D}, {4, 8, D}, {8, 8, D}, {16, 16, D}},
        /* D=2: 4, 16, 64, 256 -> 8, 16, 16, 16 */
        {{2, 8, D}, {4, 16, D}, {8, 16, H}, {16, 16, H}},
        /* D=3: 8, 64, ... -> 8, 16, 16, 16 */
        {{2, 8, D}, {4, 16, H}, {8, 16, H}, {16, 16, H}},
        /* D=4: 16, 256, ... -> 16 each; 16 = 16 is dense */
        {{2, 16, D}, {4, 16, H}, {8, 16, H}, {16, 16, H}},
        /* D=5..7: 32 and more -> 16 each, all hashed */
        {{2, 16, H}, {4, 16, H}, {8, 16, H}, {16, 16, H}},
        {{2, 16, H}, {4, 16, H}, {8, 16, H}, {16, 16, H}},
        {{2, 16, H}, {4, 16, H}, {8, 16, H}, {16, 16, H}},
    };
    static const char *const hashes[] = {"Prime", "CoherentPrime", "ReversedPrime", "Rng", "BaseConvert"};
    char json[256];
    for (size_t h = 0; h < 5; ++h) {
        for (uint32_t d = 1; d <= 7; ++d) {
            snprintf(json, sizeof json,
                     "{\"otype\": \"HashGrid\", \"hash\": \"%s\", \"n_levels\": 4, \"base_resolution\": 2, "
                     "\"log2_hashmap_size\": 4, \"n_features_per_level\": 1}",
                     hashes[h]);
            gj__layout layout = layout_of(json, d);
            check_levels(&layout, want[d - 1], 4, 1);
        }
    }
}

static void hash_many_dimensions(void **state) {
    (void)state;
    /* D=16, base 2, pls 2, log2 19: 2^16 = 65536 entries; 4^16 = 2^32 -> 2^31 -> 2^19.
     * max_base(16) = 0: stride 0xFFFFFFFF, always hashed. */
    gj__layout layout = layout_of("{\"hash\": \"BaseConvert\", \"n_levels\": 2, \"base_resolution\": 2}", 16);
    static const expected_level want16[] = {{2, 65536, H}, {4, 524288, H}};
    check_levels(&layout, want16, 2, 2);
    /* D=32, base 1: one entry rounded up to 8, still hashed. */
    layout = layout_of("{\"hash\": \"BaseConvert\", \"n_levels\": 1, \"base_resolution\": 1}", 32);
    static const expected_level want32[] = {{1, 8, H}};
    check_levels(&layout, want32, 1, 2);
    /* D=24, base 3, log2 10: 3^24 -> 1024. */
    layout = layout_of("{\"hash\": \"BaseConvert\", \"n_levels\": 1, \"base_resolution\": 3, "
                       "\"log2_hashmap_size\": 10}",
                       24);
    static const expected_level want24[] = {{3, 1024, H}};
    check_levels(&layout, want24, 1, 2);
}

static void hash_scales_below_one(void **state) {
    (void)state;
    /* D=2, base 16, pls 0.5: scales 15, 7, 3, 1, 0, -0.5 (exact: powers of two)
     * -> resolutions 16, 8, 4, 2, 1, 1 (a negative scale counts as 0)
     * -> entries 256, 64, 16, 8 (4), 8 (1), 8 (1); the table (2^19) is never smaller. */
    gj__layout layout = layout_of("{\"n_levels\": 6, \"per_level_scale\": 0.5}", 2);
    static const expected_level want[] = {{16, 256, D}, {8, 64, D}, {4, 16, D}, {2, 8, D}, {1, 8, D}, {1, 8, D}};
    check_levels(&layout, want, 6, 2);
    assert_true(layout.levels[4].scale == 0.0f);
    assert_true(layout.levels[5].scale == -0.5f);
}

static void hash_resolution_near_2_32(void **state) {
    (void)state;
    /* base 2^32 - 512 is a float; scale 2^32 - 513 rounds (spacing 256) back to it:
     * resolution 4294966785, entries capped to 2^19, hashed. */
    gj__layout layout = layout_of("{\"n_levels\": 1, \"base_resolution\": 4294966784}", 1);
    static const expected_level want[] = {{4294966785u, 524288, H}};
    check_levels(&layout, want, 1, 2);
    /* base 2^32 - 256: scale rounds to 4294967040, whose resolution would be 2^32 - 255:
     * refused, as are larger bases. */
    static const char *const wants[] = {"level 0", "base_resolution 4294967040 is too large", NULL};
    expect_too_large("{\"n_levels\": 1, \"base_resolution\": 4294967040}", 1, wants);
    static const char *const wants_max[] = {"base_resolution 4294967295", NULL};
    expect_too_large("{\"n_levels\": 1, \"base_resolution\": 4294967295}", 1, wants_max);
}

static void levels_whose_scale_overflows_are_refused(void **state) {
    (void)state;
    /* base 16, pls 2: level l has scale 2^(l+4) - 1; level 27: 2^31 - 1 rounds to 2^31
     * (resolution 2^31 + 1); level 28: 2^32 - 1 rounds to 2^32: refused. */
    gj__layout layout = layout_of("{\"n_levels\": 28}", 3);
    assert_int_equal(layout.levels[27].resolution, 2147483649u);
    assert_int_equal(layout.levels[27].entries, 524288);
    static const char *const wants[] = {"level 28", "per_level_scale", "base_resolution", "n_levels", NULL};
    expect_too_large("{\"n_levels\": 29}", 3, wants);
    /* Large per_level_scale: level 2 of 16 * (10^6)^2 = 1.6e13. */
    static const char *const wants_big[] = {"level 2", "per_level_scale 1000000^2", NULL};
    expect_too_large("{\"n_levels\": 3, \"per_level_scale\": 1e6}", 3, wants_big);
    /* The float itself overflows to infinity at level 1. */
    static const char *const wants_inf[] = {"level 1", "inf", NULL};
    expect_too_large("{\"n_levels\": 2, \"per_level_scale\": 3e38}", 3, wants_inf);
}

/* ------------------------------------------------------ totals, checks */

static void params_beyond_32_bits_are_exact(void **state) {
    (void)state;
    /* 128 levels of 2^31 entries, F=8: base 2048 (2048^3 = 2^33 -> capped to 2^31 entries),
     * pls 1 so every level is alike; table 2^31. n_params = 2^31 * 128 * 8 = 2^41. */
    gj__layout layout = layout_of("{\"n_levels\": 128, \"n_features_per_level\": 8, \"log2_hashmap_size\": 31, "
                                  "\"base_resolution\": 2048, \"per_level_scale\": 1}",
                                  3);
    assert_int_equal(layout.n_levels, 128);
    for (uint32_t l = 0; l < 128; ++l) {
        assert_int_equal(layout.levels[l].entries, 2147483648u);
        assert_true(layout.levels[l].offset == (uint64_t)l * 2147483648u);
        assert_int_equal(layout.levels[l].index_mode, GJ__INDEX_HASH);
    }
    assert_true(layout.levels[127].offset == 272730423296ull);
    assert_true(layout.n_entries == 274877906944ull);  /* 2^38 */
    assert_true(layout.n_params == 2199023255552ull);  /* 2^41 */
    assert_int_equal(layout.n_output_dims, 1024);
}

static void index_mode_invariants(void **state) {
    (void)state;
    /* Over many shapes: HASH only for Hash grids whose table is smaller than the grid,
     * WRAP only beyond max_base (and never for Hash; for Dense only when D > 10). */
    static const char *const types[] = {"Hash", "Dense", "Tiled"};
    static const char *const scales[] = {"0.7", "1.26", "1.5", "2"};
    char json[256];
    for (size_t t = 0; t < 3; ++t) {
        for (uint32_t d = 1; d <= 32; d += (d < 8 ? 1 : 5)) {
            for (size_t s = 0; s < 4; ++s) {
                for (uint32_t base = 1; base <= 64; base *= 4) {
                    snprintf(json, sizeof json,
                             "{\"type\": \"%s\", \"hash\": \"BaseConvert\", \"n_levels\": 12, \"base_resolution\": %u, "
                             "\"per_level_scale\": %s, \"log2_hashmap_size\": 14}",
                             types[t], base, scales[s]);
                    gj__config c = config_of(json, d);
                    gj__layout layout;
                    if (gj__layout_compute(&c, &layout, NULL, 0) != GJ_OK) {
                        assert_int_equal(c.type, GJ_GRID_DENSE); /* only Dense levels get too large here */
                        continue;
                    }
                    uint64_t offset = 0;
                    for (uint32_t l = 0; l < layout.n_levels; ++l) {
                        const gj__level *level = &layout.levels[l];
                        int fits = level->resolution <= gj__max_base(d);
                        assert_int_equal(level->offset, offset);
                        offset += level->entries;
                        assert_true(level->entries >= 1);
                        if (c.type != GJ_GRID_TILED) {
                            assert_int_equal(level->entries % 8, 0);
                        }
                        switch (level->index_mode) {
                        case GJ__INDEX_HASH: assert_int_equal(c.type, GJ_GRID_HASH); break;
                        case GJ__INDEX_DENSE: assert_true(fits); break;
                        case GJ__INDEX_WRAP:
                            assert_false(fits);
                            assert_true(c.type == GJ_GRID_TILED || (c.type == GJ_GRID_DENSE && d > 10));
                            break;
                        default: fail_msg("bad index mode %d", (int)level->index_mode);
                        }
                    }
                    assert_int_equal(layout.n_entries, offset);
                    assert_int_equal(layout.n_params, offset * c.n_features_per_level);
                }
            }
        }
    }
}

static void bad_arguments_are_refused(void **state) {
    (void)state;
    gj__config c = config_of("{}", 3);
    gj__layout layout;
    char err[256];
    assert_int_equal(gj__layout_compute(NULL, &layout, err, sizeof err), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj__layout_compute(&c, NULL, err, sizeof err), GJ_ERROR_INVALID_ARGUMENT);
    c.n_levels = 0;
    assert_int_equal(gj__layout_compute(&c, &layout, err, sizeof err), GJ_ERROR_INVALID_CONFIG);
    assert_non_null(strstr(err, "n_levels"));
    c.n_levels = GJ_MAX_LEVELS + 1;
    assert_int_equal(gj__layout_compute(&c, &layout, err, sizeof err), GJ_ERROR_INVALID_CONFIG);
    c = config_of("{}", 3);
    c.n_dims = 0;
    assert_int_equal(gj__layout_compute(&c, &layout, err, sizeof err), GJ_ERROR_INVALID_CONFIG);
    assert_non_null(strstr(err, "n_dims_to_encode"));
    c.n_dims = 33;
    assert_int_equal(gj__layout_compute(&c, &layout, NULL, 0), GJ_ERROR_INVALID_CONFIG);
    /* A working layout leaves err empty. */
    c = config_of("{}", 3);
    strcpy(err, "stale");
    assert_int_equal(gj__layout_compute(&c, &layout, err, sizeof err), GJ_OK);
    assert_string_equal(err, "");
}

static void layout_is_deterministic_bytes(void **state) {
    (void)state;
    gj__config c = config_of("{\"n_levels\": 5, \"per_level_scale\": 1.3}", 3);
    gj__layout a;
    gj__layout b;
    memset(&a, 0x11, sizeof a);
    memset(&b, 0x22, sizeof b);
    assert_int_equal(gj__layout_compute(&c, &a, NULL, 0), GJ_OK);
    assert_int_equal(gj__layout_compute(&c, &b, NULL, 0), GJ_OK);
    assert_memory_equal(&a, &b, sizeof a);
}

/* The level scale rounds after the multiply and after the subtraction, never as one fused
 * multiply-add (docs/design.md §2): a contracting compiler would give other literals for
 * some configurations. Finds configurations where the two differ and checks the layout
 * matches the separately rounded value there. */
static float separately_rounded(float per_level_scale, uint32_t base, uint32_t level) {
    volatile float exponent = (float)level * log2f(per_level_scale);
    volatile float grown = exp2f(exponent) * (float)base;
    return grown - 1.0f;
}

static void scale_is_never_contracted(void **state) {
    (void)state;
    int differing = 0;
    for (int k = 0; k < 400 && differing < 20; k++) {
        const float per_level_scale = 1.2f + 0.00137f * (float)k;
        const uint32_t base = 3 + (uint32_t)(k % 29);
        char json[256];
        snprintf(json, sizeof json, "{\"otype\": \"HashGrid\", \"n_levels\": 16, \"base_resolution\": %u, "
                 "\"per_level_scale\": %.9g}", base, (double)per_level_scale);
        gj__config c;
        gj__layout layout;
        assert_int_equal(gj__config_parse(json, 3, &c, NULL, 0), GJ_OK);
        assert_int_equal(gj__layout_compute(&c, &layout, NULL, 0), GJ_OK);
        for (uint32_t l = 0; l < 16; l++) {
            const float plain = separately_rounded(c.per_level_scale, base, l);
            const float fused = fmaf(exp2f((float)l * log2f(c.per_level_scale)), (float)base, -1.0f);
            differing += plain != fused;
            assert_true(layout.levels[l].scale == plain);
        }
    }
    assert_true(differing > 0); /* the check above was tested where it matters */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(max_base_is_the_largest_resolution_whose_power_fits),
        cmocka_unit_test(tcnn_check_numbers),
        cmocka_unit_test(scale_follows_the_float_formula),
        cmocka_unit_test(dense_2d_powers_of_two),
        cmocka_unit_test(dense_3d_powers_of_two),
        cmocka_unit_test(dense_every_dimension_1_to_7),
        cmocka_unit_test(dense_rounds_entries_up_to_8),
        cmocka_unit_test(dense_beyond_ten_dimensions_wraps_exactly),
        cmocka_unit_test(dense_levels_beyond_2_31_are_refused),
        cmocka_unit_test(dense_one_dimension_at_the_2_31_edge),
        cmocka_unit_test(dense_default_scale_layouts),
        cmocka_unit_test(tiled_is_capped_at_base_to_the_d),
        cmocka_unit_test(tiled_wraps_beyond_max_base),
        cmocka_unit_test(tiled_base_power_does_not_overflow),
        cmocka_unit_test(tiled_one_dimension_past_2_31),
        cmocka_unit_test(hash_every_dimension_1_to_7),
        cmocka_unit_test(hash_many_dimensions),
        cmocka_unit_test(hash_scales_below_one),
        cmocka_unit_test(hash_resolution_near_2_32),
        cmocka_unit_test(levels_whose_scale_overflows_are_refused),
        cmocka_unit_test(params_beyond_32_bits_are_exact),
        cmocka_unit_test(index_mode_invariants),
        cmocka_unit_test(bad_arguments_are_refused),
        cmocka_unit_test(layout_is_deterministic_bytes),
        cmocka_unit_test(scale_is_never_contracted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
