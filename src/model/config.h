/* Encoding configuration: the tcnn-compatible JSON keys (docs/design.md §1) parsed and checked. */
#ifndef GJ_MODEL_CONFIG_H
#define GJ_MODEL_CONFIG_H

#include "base/strbuf.h"
#include "gridjit.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;

typedef enum gj__otype { GJ__OTYPE_GRID, GJ__OTYPE_HASH_GRID, GJ__OTYPE_DENSE_GRID, GJ__OTYPE_TILED_GRID } gj__otype;

typedef struct gj__config {
    gj__otype otype;
    gj_grid_type type;
    uint32_t n_dims;               /* D */
    uint32_t n_levels;             /* L */
    uint32_t n_features_per_level; /* F */
    uint32_t log2_hashmap_size;
    uint32_t base_resolution;
    float per_level_scale;
    gj_interpolation interpolation;
    gj_hash hash;
    bool stochastic_interpolation;
    bool fixed_point_pos;
    gj_precision precision;
} gj__config;

/* Largest D: a Hash grid with a prime or the Rng hash takes 7 (the primes are 7 constants);
 * BaseConvert, and Dense and Tiled grids (which never hash), 32. */
#define GJ__MAX_DIMS_PRIME 7
#define GJ__MAX_DIMS_BASE_CONVERT 32

/*
 * Parses json into *out. n_dims_arg: the caller's dimension count, 0 if none.
 * On failure returns GJ_ERROR_INVALID_CONFIG and writes to err a one-line message
 * that names the key and says what is allowed, e.g.
 *   "n_features_per_level: must be 1, 2, 4 or 8 (got 3)".
 */
gj_status gj__config_parse(const char *json, uint32_t n_dims_arg, gj__config *out, char *err, size_t err_size);
/* The same with GJ_CONFIG_* flags (checked by the caller). With GJ_CONFIG_IGNORE_UNKNOWN_KEYS
 * an unknown key is skipped and, when ignored is not NULL, the message the strict parse
 * would give for it is appended to ignored as a line ('\n' between lines). */
gj_status gj__config_parse_ex(const char *json, uint32_t n_dims_arg, uint32_t flags, gj__strbuf *ignored,
                              gj__config *out, char *err, size_t err_size);

/* The same from an already parsed JSON object (a model's "encoding" part). */
gj_status gj__config_parse_object(const struct cJSON *object, uint32_t n_dims_arg, uint32_t flags, gj__strbuf *ignored,
                                  gj__config *out, char *err, size_t err_size);

/* Canonical JSON of the configuration (all keys, canonical spellings) on one line, which
 * gj__config_parse() reads back to an identical struct. malloc()ed; NULL on OOM. */
char *gj__config_to_json(const gj__config *config);

/* Canonical names: "Hash", "Dense", "Tiled"; "Nearest", "Linear", "Smoothstep";
 * "Prime", "CoherentPrime", "ReversedPrime", "Rng", "BaseConvert"; "fp16", "fp32";
 * "Grid", "HashGrid", "DenseGrid", "TiledGrid". */
const char *gj__grid_type_name(gj_grid_type type);
const char *gj__interpolation_name(gj_interpolation interp);
const char *gj__hash_name(gj_hash hash);
const char *gj__precision_name(gj_precision precision);
const char *gj__otype_name(gj__otype otype);

#endif
