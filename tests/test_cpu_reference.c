/*
 * The CPU reference (tools/reference/cpu_reference.c) against values derived independently:
 * O'Neill's published PCG32 outputs, hashes and indices worked out by hand, grids whose
 * interpolant is known in closed form, and finite differences of its own passes.
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

#include "cpu_reference.h"

/* ------------------------------------------------------------------ helpers */

/* splitmix64: deterministic test randomness independent of the PCG32 under test. */
static uint64_t test_rng_state = 0x9E3779B97F4A7C15ULL;

static uint64_t test_rand_u64(void) {
    uint64_t z = (test_rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double test_uniform(double lo, double hi) {
    return lo + (hi - lo) * ((double)(test_rand_u64() >> 11) / 9007199254740992.0);
}

static uint64_t round_up8(uint64_t n) {
    return (n + 7u) / 8u * 8u;
}

static uint64_t ipow(uint64_t base, uint32_t exponent) {
    uint64_t r = 1;
    for (uint32_t i = 0; i < exponent; ++i) {
        r *= base;
    }
    return r;
}

/* Per-level table written out from docs/design.md §2 (not gj__layout_compute, which is another module). */
static void spec_layout(gj_ref_encoding *ref, uint32_t base_resolution, float per_level_scale, uint32_t log2_size) {
    float log2_scale = log2f(per_level_scale);
    uint64_t offset = 0;
    for (uint32_t l = 0; l < ref->n_levels; ++l) {
        float scale = exp2f((float)l * log2_scale) * (float)base_resolution - 1.0f;
        uint32_t resolution = (uint32_t)ceilf(scale < 0.0f ? 0.0f : scale) + 1u;
        uint64_t entries = powf((float)resolution, (float)ref->n_dims) > 2147483647.0f
                               ? 2147483647u
                               : ipow(resolution, ref->n_dims);
        entries = round_up8(entries);
        if (ref->type == GJ_GRID_TILED && entries > ipow(base_resolution, ref->n_dims)) {
            entries = ipow(base_resolution, ref->n_dims);
        }
        if (ref->type == GJ_GRID_HASH && entries > ((uint64_t)1 << log2_size)) {
            entries = (uint64_t)1 << log2_size;
        }
        ref->levels[l] = (gj_ref_level){scale, resolution, (uint32_t)entries, offset};
        offset += entries;
    }
    ref->n_params = offset * ref->n_features_per_level;
}

static void make_ref(gj_ref_encoding *ref, uint32_t n_dims, uint32_t n_feat, uint32_t n_levels, gj_grid_type type,
                     gj_hash hash, gj_interpolation interp) {
    memset(ref, 0, sizeof(*ref));
    ref->n_dims = n_dims;
    ref->n_levels = n_levels;
    ref->n_features_per_level = n_feat;
    ref->type = type;
    ref->hash = hash;
    ref->interpolation = interp;
}

static double *random_params(const gj_ref_encoding *ref) {
    double *p = malloc(ref->n_params * sizeof(double));
    assert_non_null(p);
    for (uint64_t i = 0; i < ref->n_params; ++i) {
        p[i] = test_uniform(-1.0, 1.0);
    }
    return p;
}

static double *zeros(uint64_t n) {
    double *p = calloc(n ? n : 1, sizeof(double));
    assert_non_null(p);
    return p;
}

static double max_scale(const gj_ref_encoding *ref) {
    double s = 1.0;
    for (uint32_t l = 0; l < ref->n_levels; ++l) {
        s = fmax(s, (double)ref->levels[l].scale);
    }
    return s;
}

/* A point in [0,1]^D whose fractions t lie in [margin, 1 - margin] at every level, so that
 * finite differences never cross a cell boundary. */
static void pick_interior_point(const gj_ref_encoding *ref, double margin, double *x) {
    for (int attempt = 0; attempt < 100000; ++attempt) {
        for (uint32_t d = 0; d < ref->n_dims; ++d) {
            x[d] = test_uniform(0.0, 1.0);
        }
        bool ok = true;
        for (uint32_t l = 0; l < ref->n_levels && ok; ++l) {
            uint32_t c[GJ_REF_MAX_DIMS];
            double t[GJ_REF_MAX_DIMS];
            gj_ref_locate_double(ref, l, x, c, t);
            for (uint32_t d = 0; d < ref->n_dims; ++d) {
                ok = ok && t[d] >= margin && t[d] <= 1.0 - margin;
            }
        }
        if (ok) {
            return;
        }
    }
    fail_msg("no interior point found");
}

/* Parameter indices the point reads (all corners of all levels), plus some random others. */
static size_t params_to_check(const gj_ref_encoding *ref, const double *x, uint64_t *out, size_t max_out) {
    size_t n = 0;
    for (uint32_t l = 0; l < ref->n_levels; ++l) {
        uint32_t c[GJ_REF_MAX_DIMS], v[GJ_REF_MAX_DIMS];
        double t[GJ_REF_MAX_DIMS];
        gj_ref_locate_double(ref, l, x, c, t);
        for (uint64_t b = 0; b < ((uint64_t)1 << ref->n_dims); ++b) {
            for (uint32_t d = 0; d < ref->n_dims; ++d) {
                v[d] = c[d] + (uint32_t)((b >> d) & 1u);
            }
            uint64_t base = (ref->levels[l].offset + gj_ref_corner_index(ref, l, v)) * ref->n_features_per_level;
            for (uint32_t f = 0; f < ref->n_features_per_level; ++f) {
                if (n < max_out) {
                    out[n++] = base + f;
                } else { /* reservoir-style replacement keeps the sample spread over levels */
                    out[test_rand_u64() % max_out] = base + f;
                }
            }
        }
    }
    for (int i = 0; i < 16; ++i) {
        if (n < max_out + 16) {
            out[n++] = test_rand_u64() % ref->n_params;
        }
    }
    return n;
}

static const char *case_name(const gj_ref_encoding *ref) {
    static char buf[160];
    static const char *types[] = {"Hash", "Dense", "Tiled"};
    static const char *interps[] = {"Nearest", "Linear", "Smoothstep"};
    snprintf(buf, sizeof(buf), "D=%u F=%u L=%u %s hash=%d %s", ref->n_dims, ref->n_features_per_level,
             ref->n_levels, types[ref->type], (int)ref->hash, interps[ref->interpolation]);
    return buf;
}

static void expect_close(double got, double want, double rel_tol, const gj_ref_encoding *ref, const char *what,
                         uint64_t index) {
    double tol = rel_tol * (1.0 + fabs(want));
    if (!(fabs(got - want) <= tol)) {
        fail_msg("%s: %s[%llu] = %.12g, finite differences give %.12g", case_name(ref), what,
                 (unsigned long long)index, got, want);
    }
}

/* ------------------------------------------------------------------ PCG32 */

static void pcg32_matches_oneill_demo(void **state) {
    (void)state;
    /* pcg32-demo.c, pcg32_srandom_r(&rng, 42u, 54u), first round of 32-bit outputs. */
    static const uint32_t expected[6] = {0xa15c02b7u, 0x7b47f409u, 0xba1d3330u,
                                         0x83d2f293u, 0xbfa4784bu, 0xcbed606eu};
    gj_ref_pcg32 rng;
    gj_ref_pcg32_seed(&rng, 42u, 54u);
    for (int i = 0; i < 6; ++i) {
        assert_int_equal(gj_ref_pcg32_next(&rng), expected[i]);
    }
}

static void pcg32_next_float_uses_top_23_bits(void **state) {
    (void)state;
    /* First output 0xa15c02b7 >> 9 = 0x50ae01 = 5287425; as mantissa of [1,2) minus 1:
     * 5287425 / 2^23 = 0.6303101778030396 (exact in float). */
    gj_ref_pcg32 rng;
    gj_ref_pcg32_seed(&rng, 42u, 54u);
    float u = gj_ref_pcg32_next_float(&rng);
    assert_true((double)u == 5287425.0 / 8388608.0);
    for (int i = 0; i < 1000; ++i) {
        u = gj_ref_pcg32_next_float(&rng);
        assert_true(u >= 0.0f && u < 1.0f);
    }
}

static void pcg32_advance_equals_steps(void **state) {
    (void)state;
    static const uint64_t deltas[] = {0, 1, 2, 3, 17, 64, 1000, 123457};
    for (size_t i = 0; i < sizeof(deltas) / sizeof(deltas[0]); ++i) {
        gj_ref_pcg32 stepped, jumped;
        gj_ref_pcg32_seed(&stepped, 1337u, 1u);
        jumped = stepped;
        for (uint64_t k = 0; k < deltas[i]; ++k) {
            (void)gj_ref_pcg32_next(&stepped);
        }
        gj_ref_pcg32_advance(&jumped, deltas[i]);
        assert_true(stepped.state == jumped.state);
        assert_int_equal(gj_ref_pcg32_next(&stepped), gj_ref_pcg32_next(&jumped));
    }
    /* 2^64 - 1 steps ahead is one step back (the LCG's period is 2^64). */
    gj_ref_pcg32 rng, back;
    gj_ref_pcg32_seed(&rng, 7u, 3u);
    back = rng;
    (void)gj_ref_pcg32_next(&back);
    gj_ref_pcg32_advance(&back, UINT64_MAX);
    assert_true(back.state == rng.state);
}

/* Seeding as docs/design.md §5 states it, then `steps` plain steps: independent of advance(). */
static gj_ref_pcg32 pcg32_1337_after(uint64_t steps) {
    gj_ref_pcg32 rng;
    gj_ref_pcg32_seed(&rng, 1337u, 1u);
    for (uint64_t k = 0; k < steps; ++k) {
        (void)gj_ref_pcg32_next(&rng);
    }
    return rng;
}

static void stochastic_sample_is_advanced_pcg(void **state) {
    (void)state;
    /* point 5 of 11 at level 3: 5 + 3 * 11 = 38 steps. */
    gj_ref_pcg32 rng = pcg32_1337_after(38);
    float expected = gj_ref_pcg32_next_float(&rng);
    assert_true(gj_ref_stochastic_sample(5, 11, 3) == expected);
}

/* ------------------------------------------------------------------ hashes, indices */

static void hashes_match_hand_values(void **state) {
    (void)state;
    const uint32_t v[3] = {1, 2, 3};
    /* 2 * 2654435761 = 5308871522 = 1013904226 (mod 2^32); 3 * 805459861 = 2416379583.
     * CoherentPrime: 1 ^ 1013904226 ^ 2416379583 = 2892625372. */
    assert_int_equal(gj_ref_hash(GJ_HASH_COHERENT_PRIME, 3, v), 2892625372u);
    /* Prime: 1958374283 ^ 1013904226 ^ 2416379583 = 3637747286. */
    assert_int_equal(gj_ref_hash(GJ_HASH_PRIME, 3, v), 3637747286u);
    /* ReversedPrime, D=2: factors 2165219737, 1434869437:
     * 1 * 2165219737 ^ (2 * 1434869437 = 2869738874) = 704781539. */
    assert_int_equal(gj_ref_hash(GJ_HASH_REVERSED_PRIME, 2, v), 704781539u);
    /* BaseConvert: k = 1 * 2531011 = 2531011; k = 2531013 * 2531011 = 2225505807 (mod 2^32);
     * k = 2225505810 * 2531011 = 3091413942 (mod 2^32). */
    assert_int_equal(gj_ref_hash(GJ_HASH_BASE_CONVERT, 3, v), 3091413942u);
    /* Prime hashes of the origin are 0; BaseConvert of one coordinate is v * 2531011. */
    const uint32_t origin[7] = {0};
    assert_int_equal(gj_ref_hash(GJ_HASH_PRIME, 7, origin), 0u);
    const uint32_t seven = 7;
    assert_int_equal(gj_ref_hash(GJ_HASH_BASE_CONVERT, 1, &seven), 7u * 2531011u);
    /* D=7 Prime of e_6 is the last prime. */
    const uint32_t e6[7] = {0, 0, 0, 0, 0, 0, 1};
    assert_int_equal(gj_ref_hash(GJ_HASH_PRIME, 7, e6), 2165219737u);
}

static void rng_hash_is_pcg_advanced_by_packed_corner(void **state) {
    (void)state;
    /* D=2: 32 bits per dimension; (3, 0) -> step 3. */
    const uint32_t a[2] = {3, 0};
    gj_ref_pcg32 rng = pcg32_1337_after(3);
    assert_int_equal(gj_ref_hash(GJ_HASH_RNG, 2, a), gj_ref_pcg32_next(&rng));
    /* D=3: floor(64/3) = 21 bits per dimension; (1, 1, 0) -> 1 ^ (1 << 21) = 2097153 steps. */
    const uint32_t b[3] = {1, 1, 0};
    rng = pcg32_1337_after(2097153u);
    assert_int_equal(gj_ref_hash(GJ_HASH_RNG, 3, b), gj_ref_pcg32_next(&rng));
    /* Wider shifts, with advance() (checked against plain steps above) for the long jumps:
     * D=2, (0, 1) -> 1 << 32; D=4, 16 bits per dimension, (0, 0, 0, 5) -> 5 << 48. */
    const uint32_t d2[2] = {0, 1}, d4[4] = {0, 0, 0, 5};
    rng = pcg32_1337_after(0);
    gj_ref_pcg32_advance(&rng, (uint64_t)1 << 32);
    assert_int_equal(gj_ref_hash(GJ_HASH_RNG, 2, d2), gj_ref_pcg32_next(&rng));
    rng = pcg32_1337_after(0);
    gj_ref_pcg32_advance(&rng, (uint64_t)5 << 48);
    assert_int_equal(gj_ref_hash(GJ_HASH_RNG, 4, d4), gj_ref_pcg32_next(&rng));
    /* D=1: the coordinate itself. */
    const uint32_t c = 10;
    rng = pcg32_1337_after(10);
    assert_int_equal(gj_ref_hash(GJ_HASH_RNG, 1, &c), gj_ref_pcg32_next(&rng));
}

static void max_bases_match_spec(void **state) {
    (void)state;
    static const uint32_t expected[] = {0, 0xFFFFFFFFu, 0xFFFFu, 0x659u, 0xFFu, 0x54u, 0x28u, 0x17u, 0xFu, 0xBu, 0x9u};
    for (uint32_t d = 0; d <= 10; ++d) {
        assert_int_equal(gj_ref_max_base(d), expected[d]);
    }
    /* Each is the largest r with r^D < 2^32 (D >= 2). */
    for (uint32_t d = 2; d <= 10; ++d) {
        long double r = expected[d];
        assert_true(powl(r, d) < 4294967296.0L);
        assert_true(powl(r + 1, d) >= 4294967296.0L);
    }
    assert_int_equal(gj_ref_max_base(12), 0u);
}

static void set_level(gj_ref_encoding *ref, uint32_t l, uint32_t resolution, uint32_t entries) {
    ref->levels[l] = (gj_ref_level){(float)resolution - 1.0f, resolution, entries, 0};
}

static void corner_index_follows_spec(void **state) {
    (void)state;
    gj_ref_encoding ref;

    /* Dense D=2, resolution 5, 32 entries: 3 + 5 * 4 = 23. Out of range corner (7, 9):
     * 7 + 45 = 52 -> 52 mod 32 = 20. */
    make_ref(&ref, 2, 1, 1, GJ_GRID_DENSE, GJ_HASH_COHERENT_PRIME, GJ_INTERP_LINEAR);
    set_level(&ref, 0, 5, 32);
    assert_int_equal(gj_ref_corner_index(&ref, 0, (const uint32_t[]){3, 4}), 23u);
    assert_int_equal(gj_ref_corner_index(&ref, 0, (const uint32_t[]){7, 9}), 20u);
    /* Negative cells wrap in uint32: (0xFFFFFFFF, 0) -> 0xFFFFFFFF mod 32 = 31. */
    assert_int_equal(gj_ref_corner_index(&ref, 0, (const uint32_t[]){0xFFFFFFFFu, 0}), 31u);

    /* Tiled D=2, resolution 9, 16 entries: (5, 6) -> 5 + 54 = 59 -> 59 mod 16 = 11. */
    ref.type = GJ_GRID_TILED;
    set_level(&ref, 0, 9, 16);
    assert_int_equal(gj_ref_corner_index(&ref, 0, (const uint32_t[]){5, 6}), 11u);

    /* Hash D=3, resolution 40 (<= 0x659), 1024 entries < 40^3 = 64000: hashed.
     * CoherentPrime (1,2,3) = 2892625372 (above); mod 1024 = 2892625372 - 2824827 * 1024 = 476. */
    make_ref(&ref, 3, 1, 1, GJ_GRID_HASH, GJ_HASH_COHERENT_PRIME, GJ_INTERP_LINEAR);
    set_level(&ref, 0, 40, 1024);
    assert_int_equal(gj_ref_corner_index(&ref, 0, (const uint32_t[]){1, 2, 3}), 476u);
    /* Same table but 64000 entries >= stride: dense index 1 + 80 + 4800 = 4881. */
    set_level(&ref, 0, 40, 64000);
    assert_int_equal(gj_ref_corner_index(&ref, 0, (const uint32_t[]){1, 2, 3}), 4881u);

    /* Hash D=3, resolution 2000 > 0x659: stride 0xFFFFFFFF, always hashed. BaseConvert
     * (1,2,3) = 3091413942 = 0xB8433BB6; mod 2^20 = 0x33BB6 = 211894. */
    ref.hash = GJ_HASH_BASE_CONVERT;
    set_level(&ref, 0, 2000, 1u << 20);
    assert_int_equal(gj_ref_corner_index(&ref, 0, (const uint32_t[]){1, 2, 3}), 211894u);

    /* Tiled D=3, resolution 2000 > 0x659: gridjit takes the dense index exactly modulo
     * the table. (1999, 1998, 1997) -> 1999 + 1998 * 2000 + 1997 * 2000^2 = 7991997999
     * (fits in 64 bits); mod 4096 checked against plain 64-bit arithmetic. */
    ref.type = GJ_GRID_TILED;
    set_level(&ref, 0, 2000, 4096);
    uint64_t exact = 1999u + 1998u * 2000u + 1997ull * 2000u * 2000u;
    assert_true(exact == 7991997999ull);
    assert_int_equal(gj_ref_corner_index(&ref, 0, (const uint32_t[]){1999, 1998, 1997}), (uint32_t)(exact % 4096u));
    /* Dense D=2, resolution 70000 > 0xFFFF, 1000003 entries: 70001 + 69999 * 70000 = 4900000001. */
    make_ref(&ref, 2, 1, 1, GJ_GRID_DENSE, GJ_HASH_PRIME, GJ_INTERP_LINEAR);
    set_level(&ref, 0, 70000, 1000003u);
    assert_int_equal(gj_ref_corner_index(&ref, 0, (const uint32_t[]){70001, 69999}),
                     (uint32_t)(4900000001ull % 1000003u));

    /* D=12 (BaseConvert): never dense, even when the table could hold 2^12 corners. */
    make_ref(&ref, 12, 1, 1, GJ_GRID_HASH, GJ_HASH_BASE_CONVERT, GJ_INTERP_LINEAR);
    set_level(&ref, 0, 2, 1u << 20);
    uint32_t v12[12] = {1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1};
    assert_int_equal(gj_ref_corner_index(&ref, 0, v12), gj_ref_hash(GJ_HASH_BASE_CONVERT, 12, v12) % (1u << 20));
}

/* ------------------------------------------------------------------ cells */

static void float_to_cell_saturates_like_cuda(void **state) {
    (void)state;
    uint32_t c;
    float t;
    gj_ref_float_to_cell(2.5f, &c, &t);
    assert_int_equal(c, 2u);
    assert_true(t == 0.5f);
    gj_ref_float_to_cell(-0.25f, &c, &t); /* floor -1 -> 0xFFFFFFFF, t = 0.75 */
    assert_int_equal(c, 0xFFFFFFFFu);
    assert_true(t == 0.75f);
    gj_ref_float_to_cell(3e9f, &c, &t);
    assert_int_equal(c, 0x7FFFFFFFu);
    assert_true(t == 0.0f);
    gj_ref_float_to_cell(-3e9f, &c, &t);
    assert_int_equal(c, 0x80000000u);
    gj_ref_float_to_cell(NAN, &c, &t);
    assert_int_equal(c, 0u);
    assert_true(isnan(t));
    gj_ref_float_to_cell(INFINITY, &c, &t);
    assert_int_equal(c, 0x7FFFFFFFu);
    assert_true(isnan(t));
    gj_ref_float_to_cell(-INFINITY, &c, &t);
    assert_int_equal(c, 0x80000000u);
}

static void locate_uses_float_fma(void **state) {
    (void)state;
    gj_ref_encoding ref;
    make_ref(&ref, 2, 1, 1, GJ_GRID_DENSE, GJ_HASH_PRIME, GJ_INTERP_LINEAR);
    ref.levels[0] = (gj_ref_level){15.0f, 16, 256, 0};
    /* 0.3f = 0.300000011920928955078125; 15 * 0.3f + 0.5 = 5.0000001788..., rounds to 5.0f:
     * cell 5, t = 0 exactly (in double, t would be 1.79e-7). 0.25f: 4.25 exactly. */
    const float x[2] = {0.3f, 0.25f};
    uint32_t c[2];
    double t[2];
    gj_ref_locate(&ref, 0, x, c, t);
    assert_int_equal(c[0], 5u);
    assert_true(t[0] == 0.0);
    assert_int_equal(c[1], 4u);
    assert_true(t[1] == 0.25);
    /* x = 0x1.dbcde4p-6: 15 x = 116933655 / 2^28 exactly; + 1/2 = 251151383 / 2^28
     * = 0x1.df0882ep-1, one rounding (fma) -> 0x1.df0882p-1. Rounding the product first
     * (0x1.be1106p-2) and then the sum would give 0x1.df0884p-1 instead. */
    const float x_fma[2] = {0x1.dbcde4p-6f, 0.0f};
    gj_ref_locate(&ref, 0, x_fma, c, t);
    assert_int_equal(c[0], 0u);
    assert_true(t[0] == 0x1.df0882p-1);
    assert_true(t[1] == 0.5);
}

static void fixed_point_locate_matches_hand_values(void **state) {
    (void)state;
    gj_ref_encoding ref;
    make_ref(&ref, 3, 1, 1, GJ_GRID_HASH, GJ_HASH_PRIME, GJ_INTERP_LINEAR);
    ref.fixed_point_pos = true;
    ref.levels[0] = (gj_ref_level){15.0f, 16, 1024, 0};
    /* cell = (uint32)(4294967296f / 15f): 286331153.07 rounds to float 286331168; half 143165584.
     * bits 0x80000000: pos = 2290649232, cell 7, rest 286331056 -> float 286331072,
     *   t = (15 / 2^32) * 286331072 = 0.9999997019767761 (float).
     * bits 0xFFFFFFFF: pos wraps to 143165583 < half -> cell 0 + 15, rest 143165359 ->
     *   float 143165360, t = 0.4999992549419403.
     * bits 0x3f000000 (0.5f): pos = 1200130192, cell 4, rest 54805520, t = 0.19140607118606567. */
    uint32_t bits[3] = {0x80000000u, 0xFFFFFFFFu, 0x3f000000u};
    float x[3];
    memcpy(x, bits, sizeof(x));
    uint32_t c[3];
    double t[3];
    gj_ref_locate(&ref, 0, x, c, t);
    assert_int_equal(c[0], 7u);
    assert_int_equal(c[1], 15u);
    assert_int_equal(c[2], 4u);
    assert_true(t[0] == 0x1.fffff6p-1);
    assert_true(t[1] == 0x1.ffffcep-2);
    assert_true(t[2] == 0x1.87ffe8p-3);

    /* The passes use that cell: D=1 Dense, resolution 16; 0.5f -> cell 4, t as above.
     * dL/dx keeps the float-path formula scale * w'(t) * (theta_5 - theta_4). */
    make_ref(&ref, 1, 1, 1, GJ_GRID_DENSE, GJ_HASH_PRIME, GJ_INTERP_LINEAR);
    ref.fixed_point_pos = true;
    ref.levels[0] = (gj_ref_level){15.0f, 16, 16, 0};
    double params[16];
    for (int e = 0; e < 16; ++e) {
        params[e] = e * e;
    }
    const double tt = 0x1.87ffe8p-3, dL_dy = 1.0;
    double y, dL_dx;
    gj_ref_forward(&ref, params, &x[2], 1.0, &y);
    assert_true(fabs(y - ((1 - tt) * 16.0 + tt * 25.0)) < 1e-12);
    gj_ref_backward(&ref, params, &x[2], 1.0, 0, 1, &dL_dy, NULL, &dL_dx);
    assert_true(fabs(dL_dx - 15.0 * 9.0) < 1e-12);
}

/* ------------------------------------------------------------------ closed-form grids */

/* Dense D=2, two levels (resolutions 8 and 16); theta of level l at (v0, v1) = a + b v0 + c v1
 * (all F features offset by f). Linear interpolation reproduces it exactly inside the grid:
 * y = a + b p0 + c p1 with p = scale x + 0.5, and dy/dx = (b, c) * scale. */
static void fill_linear_grid(const gj_ref_encoding *ref, const double coef[][3], double *params) {
    for (uint32_t l = 0; l < ref->n_levels; ++l) {
        uint32_t res = ref->levels[l].resolution;
        for (uint32_t v1 = 0; v1 < res; ++v1) {
            for (uint32_t v0 = 0; v0 < res; ++v0) {
                for (uint32_t f = 0; f < ref->n_features_per_level; ++f) {
                    params[(ref->levels[l].offset + v0 + res * v1) * ref->n_features_per_level + f] =
                        coef[l][0] + coef[l][1] * v0 + coef[l][2] * v1 + f;
                }
            }
        }
    }
}

static void interpolation_matches_closed_form(void **state) {
    (void)state;
    const double coef[2][3] = {{0.5, 0.25, -0.75}, {-1.0, 0.125, 0.0625}};
    for (int smooth = 0; smooth < 2; ++smooth) {
        gj_ref_encoding ref;
        make_ref(&ref, 2, 2, 2, GJ_GRID_DENSE, GJ_HASH_PRIME, smooth ? GJ_INTERP_SMOOTHSTEP : GJ_INTERP_LINEAR);
        spec_layout(&ref, 8, 2.0f, 19);
        assert_int_equal(ref.levels[0].resolution, 8u);
        assert_int_equal(ref.levels[1].resolution, 16u);
        double *params = zeros(ref.n_params);
        fill_linear_grid(&ref, coef, params);
        for (int i = 0; i < 50; ++i) {
            /* x <= 0.9 keeps corner c + 1 below the resolution (no wrap). */
            const float x[2] = {(float)test_uniform(0.0, 0.9), (float)test_uniform(0.0, 0.9)};
            const double dL_dy[4] = {0.5, -2.0, 1.5, 3.0};
            double y[4], dL_dx[2], expect_dx[2] = {0, 0};
            gj_ref_forward(&ref, params, x, 1.0, y);
            gj_ref_backward(&ref, params, x, 1.0, 0, 1, dL_dy, NULL, dL_dx);
            for (uint32_t l = 0; l < 2; ++l) {
                double s = ref.levels[l].scale, q[2], dq[2];
                for (int d = 0; d < 2; ++d) { /* position along the grid, and its x-derivative */
                    double p = s * x[d] + 0.5, t = p - floor(p);
                    q[d] = floor(p) + (smooth ? t * t * (3 - 2 * t) : t);
                    dq[d] = s * (smooth ? 6 * t * (1 - t) : 1.0);
                }
                for (uint32_t f = 0; f < 2; ++f) {
                    double want = coef[l][0] + coef[l][1] * q[0] + coef[l][2] * q[1] + f;
                    assert_true(fabs(y[l * 2 + f] - want) < 1e-5);
                    expect_dx[0] += dL_dy[l * 2 + f] * coef[l][1] * dq[0];
                    expect_dx[1] += dL_dy[l * 2 + f] * coef[l][2] * dq[1];
                }
            }
            /* t differs from the float one by rounding only: loose tolerance. */
            assert_true(fabs(dL_dx[0] - expect_dx[0]) < 1e-3 * (1 + fabs(expect_dx[0])));
            assert_true(fabs(dL_dx[1] - expect_dx[1]) < 1e-3 * (1 + fabs(expect_dx[1])));
        }
        free(params);
    }
}

static void nearest_reads_one_corner(void **state) {
    (void)state;
    gj_ref_encoding ref;
    make_ref(&ref, 2, 1, 1, GJ_GRID_DENSE, GJ_HASH_PRIME, GJ_INTERP_NEAREST);
    spec_layout(&ref, 4, 2.0f, 19); /* scale 3, resolution 4, 16 entries */
    assert_int_equal(ref.levels[0].entries, 16u);
    double params[16];
    for (int e = 0; e < 16; ++e) {
        params[e] = e;
    }
    /* p = 3 x + 0.5: (0.1, 0.6) -> (0.8, 2.3) -> cell (0, 2) -> entry 8;
     * (0.9, 0.9) -> (3.2, 3.2) -> (3, 3) -> 15; (0.45, 0.2) -> (1.85, 1.1) -> (1, 1) -> 5. */
    const float xs[3][2] = {{0.1f, 0.6f}, {0.9f, 0.9f}, {0.45f, 0.2f}};
    const int entry[3] = {8, 15, 5};
    for (int i = 0; i < 3; ++i) {
        double y, grad[16] = {0}, dL_dx[2] = {7, 7}, dL_ddLdy = 7, dL_dx2[2] = {7, 7};
        const double dL_dy = 2.5, dL_ddLdx[2] = {1, 1};
        gj_ref_forward(&ref, params, xs[i], 1.0, &y);
        assert_true(y == entry[i]);
        gj_ref_backward(&ref, params, xs[i], 1.0, 0, 1, &dL_dy, grad, dL_dx);
        for (int e = 0; e < 16; ++e) {
            assert_true(grad[e] == (e == entry[i] ? 2.5 : 0.0));
        }
        assert_true(dL_dx[0] == 0.0 && dL_dx[1] == 0.0);
        gj_ref_backward_backward(&ref, params, xs[i], 1.0, dL_ddLdx, &dL_dy, grad, &dL_ddLdy, dL_dx2);
        assert_true(grad[entry[i]] == 2.5); /* unchanged */
        assert_true(dL_ddLdy == 0.0 && dL_dx2[0] == 0.0 && dL_dx2[1] == 0.0);
    }
}

/* ------------------------------------------------------------------ max_level, stochastic */

static void level_activity_follows_max_level(void **state) {
    (void)state;
    gj_ref_encoding ref;
    make_ref(&ref, 2, 1, 4, GJ_GRID_HASH, GJ_HASH_PRIME, GJ_INTERP_LINEAR);
    /* L = 4: m L + 1e-3 bounds the active levels. */
    const struct {
        double m;
        uint32_t n_active;
    } cases[] = {{1.0, 4}, {0.5, 3}, {0.25, 2}, {0.0, 1}, {0.499875, 3}, {0.4995, 2}, {-1.0, 0}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        for (uint32_t l = 0; l < 4; ++l) {
            assert_int_equal(gj_ref_level_active(&ref, l, cases[i].m), l < cases[i].n_active);
        }
    }
}

static void inactive_levels_are_zero_and_get_no_gradient(void **state) {
    (void)state;
    gj_ref_encoding ref;
    make_ref(&ref, 3, 2, 4, GJ_GRID_HASH, GJ_HASH_COHERENT_PRIME, GJ_INTERP_SMOOTHSTEP);
    spec_layout(&ref, 4, 1.5f, 8);
    double *params = random_params(&ref);
    const double m = 0.5; /* levels 0..2 active */
    const uint32_t n_out = 8;
    double x[3];
    pick_interior_point(&ref, 0.0, x);
    const float xf[3] = {(float)x[0], (float)x[1], (float)x[2]};
    double y[8], y_all[8], dL_dy[8], dL_dy_masked[8], H[3] = {0.3, -0.7, 1.1};
    for (uint32_t i = 0; i < n_out; ++i) {
        dL_dy[i] = test_uniform(-1, 1);
        dL_dy_masked[i] = i < 6 ? dL_dy[i] : 0.0;
    }
    gj_ref_forward(&ref, params, xf, m, y);
    gj_ref_forward(&ref, params, xf, 1.0, y_all);
    for (uint32_t i = 0; i < n_out; ++i) {
        assert_true(y[i] == (i < 6 ? y_all[i] : 0.0));
    }
    assert_true(y_all[6] != 0.0);

    double *g = zeros(ref.n_params), *g_masked = zeros(ref.n_params);
    double dx[3], dx_masked[3];
    gj_ref_backward(&ref, params, xf, m, 0, 1, dL_dy, g, dx);
    gj_ref_backward(&ref, params, xf, 1.0, 0, 1, dL_dy_masked, g_masked, dx_masked);
    for (uint64_t i = 0; i < ref.n_params; ++i) {
        assert_true(g[i] == g_masked[i]);
    }
    for (uint64_t i = ref.levels[3].offset * 2; i < ref.n_params; ++i) {
        assert_true(g[i] == 0.0);
    }
    for (int d = 0; d < 3; ++d) {
        assert_true(dx[d] == dx_masked[d]);
    }

    double ddy[8], ddy_all[8], dx2[3], dx2_masked[3];
    memset(g, 0, ref.n_params * sizeof(double));
    memset(g_masked, 0, ref.n_params * sizeof(double));
    gj_ref_backward_backward(&ref, params, xf, m, H, dL_dy, g, ddy, dx2);
    gj_ref_backward_backward(&ref, params, xf, 1.0, H, dL_dy_masked, g_masked, ddy_all, dx2_masked);
    for (uint32_t i = 0; i < n_out; ++i) {
        assert_true(ddy[i] == (i < 6 ? ddy_all[i] : 0.0));
    }
    assert_true(ddy_all[6] != 0.0);
    for (uint64_t i = 0; i < ref.n_params; ++i) {
        assert_true(g[i] == g_masked[i]);
    }
    for (int d = 0; d < 3; ++d) {
        assert_true(dx2[d] == dx2_masked[d]);
    }
    free(g);
    free(g_masked);
    free(params);
}

static void stochastic_backward_picks_the_sampled_corner(void **state) {
    (void)state;
    gj_ref_encoding ref;
    make_ref(&ref, 3, 2, 2, GJ_GRID_DENSE, GJ_HASH_PRIME, GJ_INTERP_LINEAR);
    spec_layout(&ref, 4, 2.0f, 19); /* resolutions 4 and 8: 64 and 512 entries */
    double *params = random_params(&ref);
    double *g = zeros(ref.n_params);
    const uint64_t n_points = 7;
    int n_upper = 0;
    for (uint64_t point = 0; point < 40; ++point) {
        const float x[3] = {(float)test_uniform(0, 0.9), (float)test_uniform(0, 0.9), (float)test_uniform(0, 0.9)};
        const double dL_dy[4] = {1.0, -2.0, 3.0, 0.5};
        double dx_stoch[3], dx_exact[3];
        memset(g, 0, ref.n_params * sizeof(double));
        ref.stochastic_interpolation = false;
        gj_ref_backward(&ref, params, x, 1.0, point, n_points, dL_dy, NULL, dx_exact);
        ref.stochastic_interpolation = true;
        gj_ref_backward(&ref, params, x, 1.0, point, n_points, dL_dy, g, dx_stoch);
        for (int d = 0; d < 3; ++d) {
            assert_true(dx_stoch[d] == dx_exact[d]); /* dL/dx is never stochastic */
        }
        for (uint32_t l = 0; l < 2; ++l) {
            /* u from plain PCG steps; per dimension lower corner iff u >= t (Linear: w = t). */
            gj_ref_pcg32 rng = pcg32_1337_after(point + l * n_points);
            float u = gj_ref_pcg32_next_float(&rng);
            uint32_t res = ref.levels[l].resolution, entry = 0, stride = 1;
            for (int d = 0; d < 3; ++d) {
                float p = fmaf(ref.levels[l].scale, x[d], 0.5f);
                float t = p - floorf(p);
                uint32_t v = (uint32_t)floorf(p) + (u >= t ? 0u : 1u);
                n_upper += u < t;
                entry += v * stride;
                stride *= res;
            }
            entry %= ref.levels[l].entries; /* corner c + 1 may wrap */
            for (uint32_t e = 0; e < ref.levels[l].entries; ++e) {
                for (uint32_t f = 0; f < 2; ++f) {
                    double want = e == entry ? dL_dy[l * 2 + f] : 0.0;
                    assert_true(g[(ref.levels[l].offset + e) * 2 + f] == want);
                }
            }
        }
    }
    assert_true(n_upper > 0 && n_upper < 240); /* both branches were exercised */
    free(g);
    free(params);
}

/* ------------------------------------------------------------------ finite differences */

/* Table geometry per grid type, small enough to check quickly and exercising wrap and
 * hashing (Hash: 16 entries, hashed from the first level on for D >= 2). */
static void layout_for_type(gj_ref_encoding *ref) {
    if (ref->type == GJ_GRID_HASH) {
        spec_layout(ref, 5, 2.0f, 4); /* resolutions 5, 10, 20 */
    } else if (ref->type == GJ_GRID_DENSE) {
        spec_layout(ref, 2, 1.5f, 19); /* resolutions 2, 3, 5 */
    } else {
        spec_layout(ref, 2, 2.0f, 19); /* resolutions 2, 4, 8, tiles of 2^D */
    }
}

static double dot(const double *a, const double *b, uint64_t n) {
    double s = 0.0;
    for (uint64_t i = 0; i < n; ++i) {
        s += a[i] * b[i];
    }
    return s;
}

/* S = sum dL_dy . y(x, params). */
static double forward_loss(const gj_ref_encoding *ref, const double *params, const double *x, const double *dL_dy) {
    double y[GJ_REF_MAX_LEVELS * 8];
    gj_ref_forward_xd(ref, params, x, 1.0, y);
    return dot(y, dL_dy, (uint64_t)ref->n_levels * ref->n_features_per_level);
}

/* L2 = sum_d H_d (dL/dx)_d, with dL/dx from the backward pass. */
static double backward_loss(const gj_ref_encoding *ref, const double *params, const double *x, const double *dL_dy,
                            const double *H) {
    double dL_dx[GJ_REF_MAX_DIMS];
    gj_ref_backward_xd(ref, params, x, 1.0, 0, 1, dL_dy, NULL, dL_dx);
    return dot(dL_dx, H, ref->n_dims);
}

/* The scalar whose gradient is checked: S when H is NULL, else L2. */
typedef struct loss_args {
    const double *dL_dy, *H;
} loss_args;

static double loss(const gj_ref_encoding *ref, const double *params, const double *x, const loss_args *a) {
    return a->H ? backward_loss(ref, params, x, a->dL_dy, a->H) : forward_loss(ref, params, x, a->dL_dy);
}

/* d loss / dx_k. Inside a cell the loss is a polynomial of degree <= 3 in x_k, so the central
 * difference's error is exactly c h^2; Richardson extrapolation over h and h/2 removes it,
 * leaving rounding only. h * scale = 1e-4 stays well inside the cell margin. */
static double fd_input(const gj_ref_encoding *ref, const double *params, const double *x, uint32_t k,
                       const loss_args *a) {
    double central[2];
    for (int i = 0; i < 2; ++i) {
        double h = (i ? 0.5e-4 : 1e-4) / max_scale(ref), xp[GJ_REF_MAX_DIMS], xm[GJ_REF_MAX_DIMS];
        memcpy(xp, x, sizeof(double) * ref->n_dims);
        memcpy(xm, x, sizeof(double) * ref->n_dims);
        xp[k] += h;
        xm[k] -= h;
        central[i] = (loss(ref, params, xp, a) - loss(ref, params, xm, a)) / (2 * h);
    }
    return (4.0 * central[1] - central[0]) / 3.0;
}

/* d loss / d params[i]: the loss is linear in the parameters, so a unit step is exact. */
static double fd_param(const gj_ref_encoding *ref, double *params, const double *x, uint64_t i, const loss_args *a) {
    double keep = params[i];
    params[i] = keep + 1.0;
    double plus = loss(ref, params, x, a);
    params[i] = keep - 1.0;
    double minus = loss(ref, params, x, a);
    params[i] = keep;
    return (plus - minus) / 2.0;
}

/* Directional check over all parameters: d/de loss(params + e delta) against grad . delta. */
static void check_param_direction(const gj_ref_encoding *ref, const double *params, const double *grad,
                                  const double *x, const loss_args *a, const char *what) {
    double *delta = zeros(ref->n_params), *moved = zeros(ref->n_params);
    for (uint64_t i = 0; i < ref->n_params; ++i) {
        delta[i] = test_uniform(-1, 1);
        moved[i] = params[i] + delta[i];
    }
    double plus = loss(ref, moved, x, a);
    for (uint64_t i = 0; i < ref->n_params; ++i) {
        moved[i] = params[i] - delta[i];
    }
    double minus = loss(ref, moved, x, a);
    expect_close(dot(grad, delta, ref->n_params), (plus - minus) / 2.0, 1e-9, ref, what, 0);
    free(delta);
    free(moved);
}

/* The parameter gradient at the corners the point reads, at random other entries, and along
 * a random direction through all of them. */
static void check_param_gradient(const gj_ref_encoding *ref, double *params, const double *grad, const double *x,
                                 const loss_args *a, const char *what) {
    uint64_t idx[96 + 16];
    size_t n = params_to_check(ref, x, idx, 96);
    for (size_t i = 0; i < n; ++i) {
        expect_close(grad[idx[i]], fd_param(ref, params, x, idx[i], a), 1e-9, ref, what, idx[i]);
    }
    check_param_direction(ref, params, grad, x, a, what);
}

static void random_fill(double *v, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
        v[i] = test_uniform(-1, 1);
    }
}

static void check_backward_one_point(const gj_ref_encoding *ref, double *params) {
    double x[GJ_REF_MAX_DIMS], dL_dy[GJ_REF_MAX_LEVELS * 8], dL_dx[GJ_REF_MAX_DIMS];
    pick_interior_point(ref, 0.05, x);
    random_fill(dL_dy, ref->n_levels * ref->n_features_per_level);
    double *grad = zeros(ref->n_params);
    gj_ref_backward_xd(ref, params, x, 1.0, 0, 1, dL_dy, grad, dL_dx);
    const loss_args a = {dL_dy, NULL};
    for (uint32_t d = 0; d < ref->n_dims; ++d) {
        expect_close(dL_dx[d], fd_input(ref, params, x, d, &a), 1e-7, ref, "dL/dx", d);
    }
    check_param_gradient(ref, params, grad, x, &a, "dL/dparams");
    free(grad);
}

static const gj_grid_type all_types[3] = {GJ_GRID_HASH, GJ_GRID_DENSE, GJ_GRID_TILED};
static const uint32_t all_features[4] = {1, 2, 4, 8};

static void backward_matches_finite_differences(void **state) {
    (void)state;
    static const uint32_t dims[5] = {1, 2, 3, 4, 7};
    uint32_t n_case = 0;
    for (int di = 0; di < 5; ++di) {
        for (int interp = GJ_INTERP_LINEAR; interp <= GJ_INTERP_SMOOTHSTEP; ++interp) {
            for (int fi = 0; fi < 4; ++fi) {
                for (int ti = 0; ti < 3; ++ti, ++n_case) {
                    gj_ref_encoding ref;
                    uint32_t n_levels = dims[di] == 7 ? 2 : 3;
                    make_ref(&ref, dims[di], all_features[fi], n_levels, all_types[ti], (gj_hash)(n_case % 5),
                             (gj_interpolation)interp);
                    layout_for_type(&ref);
                    double *params = random_params(&ref);
                    for (int point = 0; point < 2; ++point) {
                        check_backward_one_point(&ref, params);
                    }
                    free(params);
                }
            }
        }
    }
}

static void check_backward_backward_one_point(const gj_ref_encoding *ref, double *params) {
    uint32_t n_out = ref->n_levels * ref->n_features_per_level;
    double x[GJ_REF_MAX_DIMS], H[GJ_REF_MAX_DIMS], dL_dy[GJ_REF_MAX_LEVELS * 8];
    pick_interior_point(ref, 0.05, x);
    random_fill(H, ref->n_dims);
    random_fill(dL_dy, n_out);
    double *grad = zeros(ref->n_params), dL_ddLdy[GJ_REF_MAX_LEVELS * 8], dL_dx[GJ_REF_MAX_DIMS];
    gj_ref_backward_backward_xd(ref, params, x, 1.0, H, dL_dy, grad, dL_ddLdy, dL_dx);
    const loss_args a = {dL_dy, H};
    for (uint32_t k = 0; k < ref->n_dims; ++k) {
        expect_close(dL_dx[k], fd_input(ref, params, x, k, &a), 1e-7, ref, "bwdbwd dL/dx", k);
    }
    for (uint32_t i = 0; i < n_out; ++i) { /* L2 is linear in dL_dy: a unit step is exact */
        double keep = dL_dy[i];
        dL_dy[i] = keep + 1.0;
        double plus = loss(ref, params, x, &a);
        dL_dy[i] = keep - 1.0;
        double minus = loss(ref, params, x, &a);
        dL_dy[i] = keep;
        expect_close(dL_ddLdy[i], (plus - minus) / 2.0, 1e-9, ref, "bwdbwd dL/ddLdy", i);
    }
    check_param_gradient(ref, params, grad, x, &a, "bwdbwd dL/dparams");
    free(grad);
}

static void backward_backward_matches_finite_differences(void **state) {
    (void)state;
    uint32_t n_case = 0;
    for (uint32_t n_dims = 1; n_dims <= 4; ++n_dims) {
        for (int interp = GJ_INTERP_LINEAR; interp <= GJ_INTERP_SMOOTHSTEP; ++interp) {
            for (int fi = 0; fi < 4; ++fi) {
                for (int ti = 0; ti < 3; ++ti, ++n_case) {
                    gj_ref_encoding ref;
                    make_ref(&ref, n_dims, all_features[fi], 3, all_types[ti], (gj_hash)(n_case % 5),
                             (gj_interpolation)interp);
                    layout_for_type(&ref);
                    double *params = random_params(&ref);
                    for (int point = 0; point < 2; ++point) {
                        check_backward_backward_one_point(&ref, params);
                    }
                    free(params);
                }
            }
        }
    }
}

/* The Smoothstep Hessian has a diagonal (w'') term that the reference gets wrong (docs/design.md §8.1):
 * a closed form for D=1, one level: y = (1 - w) theta_c + w theta_{c+1}, so with
 * L2 = H dL_dy dy/dx: dL2/dx = H dL_dy s^2 w''(t) (theta_{c+1} - theta_c). */
static void backward_backward_1d_smoothstep_closed_form(void **state) {
    (void)state;
    gj_ref_encoding ref;
    make_ref(&ref, 1, 1, 1, GJ_GRID_DENSE, GJ_HASH_PRIME, GJ_INTERP_SMOOTHSTEP);
    spec_layout(&ref, 8, 2.0f, 19); /* scale 7, resolution 8 */
    double params[8] = {0.1, -0.4, 0.9, 0.3, -0.2, 0.7, 0.05, -0.6};
    const double x = 0.3, H = 0.8, dL_dy = 1.7;
    double p = 7.0 * x + 0.5, t = p - floor(p);
    int c = (int)floor(p); /* 2 */
    double diff = params[c + 1] - params[c];
    double dL_dx, dL_ddLdy, grad[8] = {0};
    gj_ref_backward_backward_xd(&ref, params, &x, 1.0, &H, &dL_dy, grad, &dL_ddLdy, &dL_dx);
    assert_true(fabs(dL_dx - H * dL_dy * 49.0 * (6 - 12 * t) * diff) < 1e-12);
    assert_true(fabs(dL_ddLdy - H * 7.0 * 6 * t * (1 - t) * diff) < 1e-12);
    assert_true(fabs(grad[c + 1] - H * dL_dy * 7.0 * 6 * t * (1 - t)) < 1e-12);
    assert_true(fabs(grad[c] + H * dL_dy * 7.0 * 6 * t * (1 - t)) < 1e-12);
}

/* ------------------------------------------------------------------ float path, edge inputs */

static void float_path_agrees_with_double_path(void **state) {
    (void)state;
    gj_ref_encoding ref;
    make_ref(&ref, 3, 4, 3, GJ_GRID_HASH, GJ_HASH_PRIME, GJ_INTERP_SMOOTHSTEP);
    layout_for_type(&ref);
    double *params = random_params(&ref);
    for (int i = 0; i < 20; ++i) {
        double xd[3];
        pick_interior_point(&ref, 0.01, xd);
        float xf[3];
        for (int d = 0; d < 3; ++d) {
            xf[d] = (float)xd[d];
            xd[d] = xf[d];
        }
        double yf[12], yd[12];
        gj_ref_forward(&ref, params, xf, 1.0, yf);
        gj_ref_forward_xd(&ref, params, xd, 1.0, yd);
        for (int j = 0; j < 12; ++j) {
            assert_true(fabs(yf[j] - yd[j]) < 1e-5);
        }
    }
    free(params);
}

static void non_finite_inputs_stay_in_bounds(void **state) {
    (void)state;
    gj_ref_encoding ref;
    make_ref(&ref, 2, 2, 3, GJ_GRID_DENSE, GJ_HASH_PRIME, GJ_INTERP_LINEAR);
    layout_for_type(&ref);
    double *params = random_params(&ref);
    double *grad = zeros(ref.n_params);
    const float inputs[4][2] = {{NAN, 0.5f}, {INFINITY, 0.5f}, {-INFINITY, 1e30f}, {-3.0f, 5.0f}};
    for (int i = 0; i < 4; ++i) {
        double y[6], dL_dy[6] = {1, 1, 1, 1, 1, 1}, dx[2], H[2] = {1, 1}, ddy[6];
        gj_ref_forward(&ref, params, inputs[i], 1.0, y);
        gj_ref_backward(&ref, params, inputs[i], 1.0, 0, 1, dL_dy, grad, dx);
        gj_ref_backward_backward(&ref, params, inputs[i], 1.0, H, dL_dy, grad, ddy, dx);
        if (i < 2) {
            assert_true(isnan(y[0]));
        } else if (i == 3) {
            assert_true(isfinite(y[0])); /* outside [0,1] but finite: wraps, stays finite */
        }
    }
    free(grad);
    free(params);
}

static void backward_accumulates_into_dL_dparams(void **state) {
    (void)state;
    gj_ref_encoding ref;
    make_ref(&ref, 2, 2, 2, GJ_GRID_TILED, GJ_HASH_PRIME, GJ_INTERP_LINEAR);
    layout_for_type(&ref);
    double *params = random_params(&ref);
    double *fresh = zeros(ref.n_params), *acc = zeros(ref.n_params);
    for (uint64_t i = 0; i < ref.n_params; ++i) {
        acc[i] = 1.0;
    }
    const float x[2] = {0.3f, 0.6f};
    const double dL_dy[4] = {1, -1, 0.5, 2};
    gj_ref_backward(&ref, params, x, 1.0, 0, 1, dL_dy, fresh, NULL);
    gj_ref_backward(&ref, params, x, 1.0, 0, 1, dL_dy, acc, NULL);
    for (uint64_t i = 0; i < ref.n_params; ++i) {
        assert_true(fabs(acc[i] - (1.0 + fresh[i])) < 1e-15);
    }
    free(fresh);
    free(acc);
    free(params);
}

static void from_encoding_copies_fields(void **state) {
    (void)state;
    gj_context *ctx = NULL;
    gj_encoding *enc = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    assert_int_equal(gj_encoding_create(ctx,
                                        "{\"otype\": \"TiledGrid\", \"n_levels\": 2, \"n_features_per_level\": 4, "
                                        "\"base_resolution\": 16, \"interpolation\": \"Smoothstep\", \"hash\": \"Rng\", "
                                        "\"fixed_point_pos\": true, \"stochastic_interpolation\": true}",
                                        3, &enc),
                     GJ_OK);
    gj_ref_encoding ref;
    gj_ref_from_encoding(&ref, enc);
    assert_int_equal(ref.n_dims, 3);
    assert_int_equal(ref.n_levels, 2);
    assert_int_equal(ref.n_features_per_level, 4);
    assert_int_equal(ref.type, GJ_GRID_TILED);
    assert_int_equal(ref.hash, GJ_HASH_RNG);
    assert_int_equal(ref.interpolation, GJ_INTERP_SMOOTHSTEP);
    assert_true(ref.fixed_point_pos && ref.stochastic_interpolation);
    assert_true(ref.levels[1].scale == 31.0f);
    assert_int_equal(ref.levels[1].resolution, 32);
    assert_int_equal(ref.levels[1].entries, 4096);
    assert_int_equal(ref.levels[1].offset, 4096);
    assert_int_equal(ref.n_params, 32768);
    gj_encoding_destroy(enc);
    gj_context_destroy(ctx);
}

static void spec_layout_helper_matches_spec_example(void **state) {
    (void)state;
    /* docs/design.md §2 check: D=3 HashGrid, base 32, log2 16, F=2, 20 levels, scale 1.5. */
    gj_ref_encoding ref;
    make_ref(&ref, 3, 2, 20, GJ_GRID_HASH, GJ_HASH_COHERENT_PRIME, GJ_INTERP_LINEAR);
    spec_layout(&ref, 32, 1.5f, 16);
    assert_int_equal(ref.levels[0].entries, 32768u);
    assert_int_equal(ref.levels[1].entries, 65536u);
    assert_int_equal(ref.levels[2].entries, 65536u);
    assert_int_equal(ref.n_params, 2555904u);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pcg32_matches_oneill_demo),
        cmocka_unit_test(pcg32_next_float_uses_top_23_bits),
        cmocka_unit_test(pcg32_advance_equals_steps),
        cmocka_unit_test(stochastic_sample_is_advanced_pcg),
        cmocka_unit_test(hashes_match_hand_values),
        cmocka_unit_test(rng_hash_is_pcg_advanced_by_packed_corner),
        cmocka_unit_test(max_bases_match_spec),
        cmocka_unit_test(corner_index_follows_spec),
        cmocka_unit_test(float_to_cell_saturates_like_cuda),
        cmocka_unit_test(locate_uses_float_fma),
        cmocka_unit_test(fixed_point_locate_matches_hand_values),
        cmocka_unit_test(interpolation_matches_closed_form),
        cmocka_unit_test(nearest_reads_one_corner),
        cmocka_unit_test(level_activity_follows_max_level),
        cmocka_unit_test(inactive_levels_are_zero_and_get_no_gradient),
        cmocka_unit_test(stochastic_backward_picks_the_sampled_corner),
        cmocka_unit_test(backward_matches_finite_differences),
        cmocka_unit_test(backward_backward_matches_finite_differences),
        cmocka_unit_test(backward_backward_1d_smoothstep_closed_form),
        cmocka_unit_test(float_path_agrees_with_double_path),
        cmocka_unit_test(non_finite_inputs_stay_in_bounds),
        cmocka_unit_test(backward_accumulates_into_dL_dparams),
        cmocka_unit_test(from_encoding_copies_fields),
        cmocka_unit_test(spec_layout_helper_matches_spec_example),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
