/* The encoding configuration: tcnn-compatible JSON keys, checked one by one (docs/design.md §1). */
#include "model/config.h"
#include "base/format.h"
#include "base/strbuf.h"
#include "model/json_reader.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ names */

static const gj__name_value otype_names[] = {
    {"Grid", GJ__OTYPE_GRID},
    {"HashGrid", GJ__OTYPE_HASH_GRID},
    {"DenseGrid", GJ__OTYPE_DENSE_GRID},
    {"TiledGrid", GJ__OTYPE_TILED_GRID},
};
static const gj__name_value grid_type_names[] = {
    {"Hash", GJ_GRID_HASH},
    {"Dense", GJ_GRID_DENSE},
    {"Tiled", GJ_GRID_TILED},
};
static const gj__name_value interpolation_names[] = {
    {"Nearest", GJ_INTERP_NEAREST},
    {"Linear", GJ_INTERP_LINEAR},
    {"Smoothstep", GJ_INTERP_SMOOTHSTEP},
};
static const gj__name_value hash_names[] = {
    {"Prime", GJ_HASH_PRIME},
    {"CoherentPrime", GJ_HASH_COHERENT_PRIME},
    {"ReversedPrime", GJ_HASH_REVERSED_PRIME},
    {"Rng", GJ_HASH_RNG},
    {"BaseConvert", GJ_HASH_BASE_CONVERT},
};
static const gj__name_value precision_names[] = {
    {"fp16", GJ_PRECISION_FP16},
    {"fp32", GJ_PRECISION_FP32},
};

const char *gj__grid_type_name(gj_grid_type type) {
    return gj__name_of(grid_type_names, GJ__COUNT_OF(grid_type_names), (int)type);
}
const char *gj__interpolation_name(gj_interpolation interp) {
    return gj__name_of(interpolation_names, GJ__COUNT_OF(interpolation_names), (int)interp);
}
const char *gj__hash_name(gj_hash hash) {
    return gj__name_of(hash_names, GJ__COUNT_OF(hash_names), (int)hash);
}
const char *gj__precision_name(gj_precision precision) {
    return gj__name_of(precision_names, GJ__COUNT_OF(precision_names), (int)precision);
}
const char *gj__otype_name(gj__otype otype) {
    return gj__name_of(otype_names, GJ__COUNT_OF(otype_names), (int)otype);
}

/* ------------------------------------------------------------ keys */

typedef enum key_id {
    KEY_OTYPE,
    KEY_TYPE,
    KEY_N_LEVELS,
    KEY_N_FEATURES,
    KEY_N_GRID_FEATURES,
    KEY_N_FEATURES_PER_LEVEL,
    KEY_LOG2_HASHMAP_SIZE,
    KEY_BASE_RESOLUTION,
    KEY_PER_LEVEL_SCALE,
    KEY_INTERPOLATION,
    KEY_HASH,
    KEY_STOCHASTIC_INTERPOLATION,
    KEY_FIXED_POINT_POS,
    KEY_N_DIMS_TO_ENCODE,
    KEY_PRECISION,
    KEY_COUNT
} key_id;

static const char *const key_names[KEY_COUNT] = {
    "otype",
    "type",
    "n_levels",
    "n_features",
    "n_grid_features",
    "n_features_per_level",
    "log2_hashmap_size",
    "base_resolution",
    "per_level_scale",
    "interpolation",
    "hash",
    "stochastic_interpolation",
    "fixed_point_pos",
    "n_dims_to_encode",
    "precision",
};

/* The object the messages suggest. */
#define EXAMPLE "{\"otype\": \"HashGrid\"}"

/* The reader of one encoding object; its items are this key list's slots. */
typedef struct parser {
    gj__json_reader r;
    const cJSON *items[KEY_COUNT]; /* NULL: key absent */
} parser;

#define fail(p, ...) gj__jr_fail(&(p)->r, __VA_ARGS__)

static gj_status get_enum(parser *p, key_id key, const gj__name_value *table, size_t n, int fallback, int *out) {
    return gj__jr_get_enum(&p->r, (size_t)key, table, n, fallback, out);
}

static gj_status get_uint(parser *p, key_id key, uint32_t lo, uint32_t hi, uint32_t fallback, uint32_t *out) {
    return gj__jr_get_uint(&p->r, (size_t)key, lo, hi, fallback, out);
}

static gj_status get_bool(parser *p, key_id key, bool *out) {
    return gj__jr_get_bool(&p->r, (size_t)key, out);
}

/* ------------------------------------------------------------ the keys */

static gj_status parse_types(parser *p, gj__config *c) {
    int v;
    gj_status s = get_enum(p, KEY_OTYPE, otype_names, GJ__COUNT_OF(otype_names), GJ__OTYPE_GRID, &v);
    if (s) {
        return s;
    }
    c->otype = (gj__otype)v;
    /* The otype only sets the default type, as in the reference. */
    int default_type = c->otype == GJ__OTYPE_TILED_GRID   ? GJ_GRID_TILED
                       : c->otype == GJ__OTYPE_DENSE_GRID ? GJ_GRID_DENSE
                                                          : GJ_GRID_HASH;
    s = get_enum(p, KEY_TYPE, grid_type_names, GJ__COUNT_OF(grid_type_names), default_type, &v);
    c->type = (gj_grid_type)v;
    return s;
}

static gj_status parse_features_per_level(parser *p, gj__config *c) {
    uint32_t f;
    const cJSON *item = p->items[KEY_N_FEATURES_PER_LEVEL];
    gj_status s = get_uint(p, KEY_N_FEATURES_PER_LEVEL, 0, UINT32_MAX, 2, &f);
    if (s == GJ_OK && (f == 1 || f == 2 || f == 4 || f == 8)) {
        c->n_features_per_level = f;
        return GJ_OK;
    }
    char got[64];
    gj__jr_describe(item, got, sizeof got);
    return fail(p, "n_features_per_level: must be 1, 2, 4 or 8 (got %s)", got);
}

/* n_levels, or n_features / n_grid_features = n_levels * F (not both). */
static gj_status parse_levels(parser *p, gj__config *c) {
    const uint32_t f = c->n_features_per_level;
    key_id features = p->items[KEY_N_FEATURES] ? KEY_N_FEATURES : KEY_N_GRID_FEATURES;
    if (p->items[KEY_N_FEATURES] && p->items[KEY_N_GRID_FEATURES]) {
        return fail(p, "n_features: may not be given together with n_grid_features (they mean the same); give one");
    }
    if (!p->items[features]) {
        return get_uint(p, KEY_N_LEVELS, 1, GJ_MAX_LEVELS, 16, &c->n_levels);
    }
    if (p->items[KEY_N_LEVELS]) {
        return fail(p,
                    "n_levels: may not be given together with %s (%s = n_levels * n_features_per_level); "
                    "give one of them",
                    key_names[features], key_names[features]);
    }
    const cJSON *item = p->items[features];
    if (cJSON_IsNumber(item)) {
        double v = item->valuedouble;
        if (v == floor(v) && v >= f && v <= (double)f * GJ_MAX_LEVELS && fmod(v, f) == 0) {
            c->n_levels = (uint32_t)v / f;
            return GJ_OK;
        }
    }
    char got[64];
    gj__jr_describe(item, got, sizeof got);
    return fail(p, "%s: must be a multiple of n_features_per_level (%u) from %u to %u, i.e. 1 to %u levels (got %s)",
                key_names[features], f, f, f * GJ_MAX_LEVELS, GJ_MAX_LEVELS, got);
}

static gj_status parse_per_level_scale(parser *p, gj__config *c) {
    const cJSON *item = p->items[KEY_PER_LEVEL_SCALE];
    if (!item) {
        if (c->type != GJ_GRID_DENSE) {
            c->per_level_scale = 2.0f;
        } else if (c->n_levels == 1) {
            /* The reference divides by n_levels - 1 = 0 here (NaN); one level has no
             * second scale, so any value gives the same grid. */
            c->per_level_scale = 1.0f;
        } else {
            /* Reach resolution 256 at the last level, computed in float as the reference. */
            c->per_level_scale = expf(logf(256.0f / (float)c->base_resolution) / (float)(c->n_levels - 1));
        }
        return GJ_OK;
    }
    /* Range-checked in double first: converting a double beyond FLT_MAX to float is undefined. */
    if (cJSON_IsNumber(item) && item->valuedouble > 0.0 && item->valuedouble <= FLT_MAX) {
        float v = (float)item->valuedouble;
        if (v > 0.0f) { /* not rounded to 0 */
            c->per_level_scale = v;
            return GJ_OK;
        }
    }
    char got[64];
    gj__jr_describe(item, got, sizeof got);
    return fail(p, "per_level_scale: must be a number greater than 0 that fits a 32-bit float, usually 1.2 to 2 "
                   "(got %s)", got);
}

/* The largest D of this configuration: only a grid that hashes with a prime or the Rng hash
 * (7 constants, 64 bits of state) is limited; Dense and Tiled grids never hash. */
static uint32_t max_dims(const gj__config *c) {
    return c->type == GJ_GRID_HASH && c->hash != GJ_HASH_BASE_CONVERT ? GJ__MAX_DIMS_PRIME : GJ__MAX_DIMS_BASE_CONVERT;
}

/* "1 to 7 for a Hash grid with hash "X" (...)", or "1 to 32": the limit of this configuration. */
static void dims_limit(const gj__config *c, char *out, size_t size) {
    if (max_dims(c) == GJ__MAX_DIMS_PRIME) {
        snprintf(out, size, "1 to %u for a Hash grid with hash \"%s\" (up to %u with \"hash\": \"BaseConvert\", or "
                            "with \"type\": \"Dense\" or \"Tiled\")",
                 GJ__MAX_DIMS_PRIME, gj__hash_name(c->hash), GJ__MAX_DIMS_BASE_CONVERT);
    } else {
        snprintf(out, size, "1 to %u", GJ__MAX_DIMS_BASE_CONVERT);
    }
}

static gj_status parse_dims(parser *p, gj__config *c, uint32_t n_dims_arg) {
    const uint32_t max = max_dims(c);
    const cJSON *item = p->items[KEY_N_DIMS_TO_ENCODE];
    char limit[200];
    dims_limit(c, limit, sizeof limit);
    uint32_t from_key = 3;
    if (item) {
        const double v = cJSON_IsNumber(item) ? item->valuedouble : 0.0;
        if (!cJSON_IsNumber(item) || v != floor(v) || v < 1.0 || v > (double)max) {
            char got[64];
            gj__jr_describe(item, got, sizeof got);
            return fail(p, "n_dims_to_encode: must be an integer from %s (got %s)", limit, got);
        }
        from_key = (uint32_t)v;
    }
    if (item && n_dims_arg != 0 && from_key != n_dims_arg) {
        return fail(p, "n_dims_to_encode: the configuration says %u but the caller passed n_dims = %u; "
                       "remove the key or make them agree", from_key, n_dims_arg);
    }
    c->n_dims = n_dims_arg ? n_dims_arg : from_key;
    if (c->n_dims <= max) {
        return GJ_OK;
    }
    return fail(p, "dimensions: must be from %s (got n_dims = %u)", limit, c->n_dims);
}

static gj_status parse_options(parser *p, gj__config *c) {
    int v;
    gj_status s = get_enum(p, KEY_INTERPOLATION, interpolation_names, GJ__COUNT_OF(interpolation_names),
                           GJ_INTERP_LINEAR, &v);
    c->interpolation = (gj_interpolation)v;
    if (s == GJ_OK) {
        s = get_enum(p, KEY_HASH, hash_names, GJ__COUNT_OF(hash_names), GJ_HASH_COHERENT_PRIME, &v);
        c->hash = (gj_hash)v;
    }
    if (s == GJ_OK) {
        s = get_bool(p, KEY_STOCHASTIC_INTERPOLATION, &c->stochastic_interpolation);
    }
    if (s == GJ_OK) {
        s = get_bool(p, KEY_FIXED_POINT_POS, &c->fixed_point_pos);
    }
    if (s == GJ_OK) {
        s = get_enum(p, KEY_PRECISION, precision_names, GJ__COUNT_OF(precision_names), GJ_PRECISION_FP16, &v);
        c->precision = (gj_precision)v;
    }
    return s;
}

/* Keys are read in dependency order: type before per_level_scale, F before n_features,
 * hash before the dimension limit. */
static gj_status parse_object(parser *p, uint32_t n_dims_arg, gj__config *c) {
    gj_status s = parse_types(p, c);
    if (s == GJ_OK) {
        s = parse_features_per_level(p, c);
    }
    if (s == GJ_OK) {
        s = parse_levels(p, c);
    }
    if (s == GJ_OK) {
        s = get_uint(p, KEY_LOG2_HASHMAP_SIZE, 1, 31, 19, &c->log2_hashmap_size);
    }
    if (s == GJ_OK) {
        s = get_uint(p, KEY_BASE_RESOLUTION, 1, UINT32_MAX, 16, &c->base_resolution);
    }
    if (s == GJ_OK) {
        s = parse_per_level_scale(p, c);
    }
    if (s == GJ_OK) {
        s = parse_options(p, c);
    }
    if (s == GJ_OK) {
        s = parse_dims(p, c, n_dims_arg);
    }
    return s;
}

gj_status gj__config_parse(const char *json, uint32_t n_dims_arg, gj__config *out, char *err, size_t err_size) {
    return gj__config_parse_ex(json, n_dims_arg, 0, NULL, out, err, err_size);
}

gj_status gj__config_parse_object(const cJSON *object, uint32_t n_dims_arg, uint32_t flags, gj__strbuf *ignored,
                                  gj__config *out, char *err, size_t err_size) {
    parser p;
    gj__jr_init(&p.r, key_names, KEY_COUNT, p.items, flags, ignored, err, err_size);
    if (!out) {
        return fail(&p, "no place to store the result (out is NULL)");
    }
    /* Zeroed, padding included, so that equal configurations compare equal with memcmp. */
    memset(out, 0, sizeof *out);
    gj_status s = gj__jr_read_object(&p.r, object, "configuration", EXAMPLE);
    if (s == GJ_OK) {
        s = parse_object(&p, n_dims_arg, out);
    }
    if (s != GJ_OK) {
        memset(out, 0, sizeof *out);
    }
    return s;
}

gj_status gj__config_parse_ex(const char *json, uint32_t n_dims_arg, uint32_t flags, gj__strbuf *ignored,
                              gj__config *out, char *err, size_t err_size) {
    parser p;
    gj__jr_init(&p.r, key_names, KEY_COUNT, p.items, flags, ignored, err, err_size);
    if (!out) {
        return fail(&p, "no place to store the result (out is NULL)");
    }
    memset(out, 0, sizeof *out);
    if (!json) {
        return fail(&p, "no JSON text (NULL); pass \"{}\" for the defaults");
    }
    cJSON *root = NULL;
    gj_status s = gj__jr_parse_text(&p.r, json, EXAMPLE, &root);
    if (s == GJ_OK) {
        s = gj__config_parse_object(root, n_dims_arg, flags, ignored, out, err, err_size);
    }
    cJSON_Delete(root);
    return s;
}

/* ------------------------------------------------------------- writing */

char *gj__config_to_json(const gj__config *c) {
    if (!c) {
        return NULL;
    }
    gj__strbuf sb;
    gj__sb_init(&sb);
    gj__sb_printf(&sb, "{\"otype\": \"%s\", \"type\": \"%s\", ", gj__otype_name(c->otype),
                  gj__grid_type_name(c->type));
    gj__sb_printf(&sb, "\"n_levels\": %u, \"n_features_per_level\": %u, ", c->n_levels, c->n_features_per_level);
    gj__sb_printf(&sb, "\"log2_hashmap_size\": %u, \"base_resolution\": %u, ", c->log2_hashmap_size,
                  c->base_resolution);
    char scale[48];
    gj__format_float(scale, sizeof scale, c->per_level_scale); /* '.' in any locale */
    gj__sb_printf(&sb, "\"per_level_scale\": %s, ", scale);
    gj__sb_printf(&sb, "\"interpolation\": \"%s\", \"hash\": \"%s\", ", gj__interpolation_name(c->interpolation),
                  gj__hash_name(c->hash));
    gj__sb_printf(&sb, "\"stochastic_interpolation\": %s, \"fixed_point_pos\": %s, ",
                  c->stochastic_interpolation ? "true" : "false", c->fixed_point_pos ? "true" : "false");
    gj__sb_printf(&sb, "\"n_dims_to_encode\": %u, \"precision\": \"%s\"}", c->n_dims,
                  gj__precision_name(c->precision));
    return gj__sb_take(&sb);
}
