/* Per-level scale, resolution, table size, offset and index mode (docs/design.md §2 and §4). */
#include "model/layout.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_ENTRIES_FLOAT_CAP 2147483647u /* the reference's max_params: UINT32_MAX / 2 */

/* The largest float below 2^32: a scale at or above it has no uint32 resolution. */
#define MAX_SCALE 4294967040.0f

uint32_t gj__max_base(uint32_t n_dims) {
    /* max_base(D)^D <= UINT32_MAX < (max_base(D) + 1)^D. Beyond D = 10 the reference
     * always hashes, so no resolution counts as densely indexable there. */
    static const uint32_t max_bases[] = {0, 0xFFFFFFFF, 0xFFFF, 0x659, 0xFF, 0x54, 0x28, 0x17, 0xF, 0xB, 0x9};
    return n_dims < sizeof max_bases / sizeof max_bases[0] ? max_bases[n_dims] : 0;
}

/* base^exp, saturating at UINT64_MAX. */
static uint64_t pow_saturating(uint64_t base, uint32_t exp) {
    uint64_t result = 1;
    for (uint32_t i = 0; i < exp; ++i) {
        if (base != 0 && result > UINT64_MAX / base) {
            return UINT64_MAX;
        }
        result *= base;
    }
    return result;
}

__attribute__((format(printf, 3, 4))) static gj_status fail(char *err, size_t err_size, const char *fmt, ...) {
    if (err && err_size > 0) {
        va_list args;
        va_start(args, fmt);
        vsnprintf(err, err_size, fmt, args);
        va_end(args);
    }
    return GJ_ERROR_LAYOUT_TOO_LARGE;
}

/* The reference's grid_scale(), in float: exp2f(level * log2_per_level_scale) *
 * base_resolution - 1, each operation rounded to float on its own. A compiler may not
 * fuse the multiply and the subtraction into one FMA here (that changes the last bit
 * of some scales, and so the literals and resolutions on some compilers and machines):
 * the steps are separate statements, and the build adds -ffp-contract=off, which
 * forbids contraction across statements too (GCC's -ffp-contract=fast would do it). */
static float level_scale(const gj__config *c, uint32_t level) {
    const float log2_per_level_scale = log2f(c->per_level_scale);
    const float exponent = (float)level * log2_per_level_scale;
    const float grown = exp2f(exponent) * (float)c->base_resolution;
    return grown - 1.0f;
}

/*
 * Table entries of one level before the per-type cap. The reference compares
 * std::pow((float)resolution, D) with (float)(2^31 - 1) = 2^31; std::pow(float, unsigned)
 * is a double computation in C++11, and powf() gives the same decision for every
 * resolution and D <= 32 (checked exhaustively near 2^31). Below the cap the power is
 * exact, so at most 2^31 + 128 entries remain (D = 1 where (float)resolution rounds
 * down to 2^31), which fits in uint32. dense: resolution^D, saturating.
 */
static uint64_t uncapped_entries(uint32_t resolution, uint32_t n_dims, uint64_t dense) {
    uint64_t entries = powf((float)resolution, (float)n_dims) > (float)MAX_ENTRIES_FLOAT_CAP
                           ? MAX_ENTRIES_FLOAT_CAP
                           : dense;
    return (entries + 7) / 8 * 8; /* aligned memory accesses */
}

/*
 * docs/design.md §4, decided once per level:
 *  - Hash: hashed whenever the table is smaller than the dense grid (stride). When
 *    resolution > max_base(D) the stride is taken as 0xFFFFFFFF, more than any table
 *    (<= 2^31 + 128 entries), so Hash never reaches WRAP.
 *  - resolution <= max_base(D): the dense index fits in uint32 -> DENSE (mod entries;
 *    Tiled wraps there, Dense and an unhashed Hash level never exceed entries).
 *  - otherwise WRAP: Tiled levels finer than max_base(D), and Dense levels of D > 10
 *    (max_base 0), whose resolution^D <= 2^31 - 1 (checked before) so that the exact
 *    Horner sum modulo entries is the plain dense index.
 */
static gj__index_mode index_mode(gj_grid_type type, uint32_t resolution, uint32_t n_dims, uint32_t entries,
                                 uint64_t dense) {
    const int dense_fits = resolution <= gj__max_base(n_dims);
    const uint64_t stride = dense_fits ? dense : 0xFFFFFFFFu;
    if (type == GJ_GRID_HASH && entries < stride) {
        return GJ__INDEX_HASH;
    }
    return dense_fits ? GJ__INDEX_DENSE : GJ__INDEX_WRAP;
}

static gj_status scale_too_large(const gj__config *c, uint32_t level, float scale, char *err, size_t err_size) {
    if (level == 0) {
        return fail(err, err_size,
                    "level 0: base_resolution %u is too large (the resolution must stay below 2^32); "
                    "lower base_resolution",
                    c->base_resolution);
    }
    return fail(err, err_size,
                "level %u: scale %g (base_resolution %u * per_level_scale %.9g^%u - 1) does not fit a 32-bit "
                "resolution (at most 4294967039); lower per_level_scale or base_resolution, or use fewer levels "
                "(n_levels)",
                level, (double)scale, c->base_resolution, (double)c->per_level_scale, level);
}

static gj_status dense_too_large(const gj__config *c, uint32_t level, uint32_t resolution, uint64_t needed,
                                 char *err, size_t err_size) {
    char count[32];
    if (needed == UINT64_MAX) {
        snprintf(count, sizeof count, "more than 1.8e19");
    } else {
        snprintf(count, sizeof count, "%llu", (unsigned long long)needed);
    }
    return fail(err, err_size,
                "level %u: a Dense grid of resolution %u in %u dimensions needs %u^%u = %s entries, more than the "
                "2147483647 a level can hold; use \"type\": \"Hash\" (or \"Tiled\"), fewer levels (n_levels), or a "
                "lower per_level_scale or base_resolution",
                level, resolution, c->n_dims, resolution, c->n_dims, count);
}

static gj_status compute_level(const gj__config *c, uint32_t level, gj__level *out, char *err, size_t err_size) {
    const float scale = level_scale(c, level);
    if (!isfinite(scale) || scale >= MAX_SCALE) {
        return scale_too_large(c, level, scale, err, err_size);
    }
    const uint32_t resolution = (uint32_t)ceilf(fmaxf(scale, 0.0f)) + 1;
    const uint64_t dense = pow_saturating(resolution, c->n_dims); /* the dense grid's points */
    uint64_t entries = uncapped_entries(resolution, c->n_dims, dense);
    if (c->type == GJ_GRID_TILED) {
        /* A tiled level needs no more entries than the base grid: it repeats. */
        const uint64_t tile = pow_saturating(c->base_resolution, c->n_dims);
        entries = entries < tile ? entries : tile;
    } else if (c->type == GJ_GRID_HASH) {
        const uint64_t table = (uint64_t)1 << c->log2_hashmap_size;
        entries = entries < table ? entries : table;
    } else if (dense > MAX_ENTRIES_FLOAT_CAP) {
        return dense_too_large(c, level, resolution, dense, err, err_size);
    }
    out->scale = scale;
    out->resolution = resolution;
    out->entries = (uint32_t)entries;
    out->index_mode = index_mode(c->type, resolution, c->n_dims, out->entries, dense);
    return GJ_OK;
}

gj_status gj__layout_compute(const gj__config *config, gj__layout *out, char *err, size_t err_size) {
    if (err && err_size > 0) {
        err[0] = '\0';
    }
    if (!config || !out) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    memset(out, 0, sizeof *out);
    if (config->n_levels < 1 || config->n_levels > GJ_MAX_LEVELS) {
        fail(err, err_size, "n_levels: must be an integer from 1 to %u (got %u)", GJ_MAX_LEVELS, config->n_levels);
        return GJ_ERROR_INVALID_CONFIG;
    }
    if (config->n_dims < 1 || config->n_dims > GJ__MAX_DIMS_BASE_CONVERT) {
        fail(err, err_size, "n_dims_to_encode: must be an integer from 1 to %u (got %u)", GJ__MAX_DIMS_BASE_CONVERT,
             config->n_dims);
        return GJ_ERROR_INVALID_CONFIG;
    }
    uint64_t offset = 0;
    for (uint32_t l = 0; l < config->n_levels; ++l) {
        gj_status s = compute_level(config, l, &out->levels[l], err, err_size);
        if (s != GJ_OK) {
            memset(out, 0, sizeof *out);
            return s;
        }
        out->levels[l].offset = offset;
        offset += out->levels[l].entries;
    }
    out->n_levels = config->n_levels;
    out->n_entries = offset;
    out->n_params = offset * config->n_features_per_level;
    out->n_output_dims = config->n_levels * config->n_features_per_level;
    return GJ_OK;
}
