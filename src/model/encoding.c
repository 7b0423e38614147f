/* gj_encoding: a checked configuration and its parameter layout, and its getters. */
#include "model/encoding.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gj_status gj__encoding_make(const char *json, uint32_t n_dims, gj_encoding **out, char *err, size_t err_size) {
    return gj__encoding_make_ex(json, n_dims, 0, NULL, out, err, err_size);
}

gj_status gj__encoding_make_ex(const char *json, uint32_t n_dims, uint32_t flags, gj__strbuf *ignored,
                               gj_encoding **out, char *err, size_t err_size) {
    *out = NULL;
    gj__config config;
    gj_status s = gj__config_parse_ex(json, n_dims, flags, ignored, &config, err, err_size);
    if (s != GJ_OK) {
        return s;
    }
    return gj__encoding_from_config(&config, out, err, err_size);
}

gj_status gj__encoding_from_config(const gj__config *config, gj_encoding **out, char *err, size_t err_size) {
    *out = NULL;
    gj_encoding *enc = calloc(1, sizeof *enc);
    if (!enc) {
        snprintf(err, err_size, "out of memory");
        return GJ_ERROR_OUT_OF_MEMORY;
    }
    memcpy(&enc->config, config, sizeof *config); /* padding too: encodings compare with memcmp */
    gj_status s = gj__layout_compute(&enc->config, &enc->layout, err, err_size);
    if (s != GJ_OK) {
        free(enc);
        return s;
    }
    *out = enc;
    return GJ_OK;
}

void gj_encoding_destroy(gj_encoding *enc) {
    free(enc);
}

uint32_t gj_encoding_n_dims(const gj_encoding *enc) {
    return enc ? enc->config.n_dims : 0;
}

uint32_t gj_encoding_n_levels(const gj_encoding *enc) {
    return enc ? enc->config.n_levels : 0;
}

uint32_t gj_encoding_n_features_per_level(const gj_encoding *enc) {
    return enc ? enc->config.n_features_per_level : 0;
}

uint32_t gj_encoding_n_output_dims(const gj_encoding *enc) {
    return enc ? enc->layout.n_output_dims : 0;
}

uint64_t gj_encoding_n_params(const gj_encoding *enc) {
    return enc ? enc->layout.n_params : 0;
}

gj_precision gj_encoding_precision(const gj_encoding *enc) {
    return enc ? enc->config.precision : GJ_PRECISION_FP16;
}

gj_grid_type gj_encoding_grid_type(const gj_encoding *enc) {
    return enc ? enc->config.type : GJ_GRID_HASH;
}

gj_interpolation gj_encoding_interpolation(const gj_encoding *enc) {
    return enc ? enc->config.interpolation : GJ_INTERP_LINEAR;
}

gj_hash gj_encoding_hash(const gj_encoding *enc) {
    return enc ? enc->config.hash : GJ_HASH_COHERENT_PRIME;
}

gj_status gj_encoding_level(const gj_encoding *enc, uint32_t level, gj_level_info *out) {
    if (!enc || !out || level >= enc->layout.n_levels) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    const gj__level *l = &enc->layout.levels[level];
    out->level = level;
    out->scale = l->scale;
    out->resolution = l->resolution;
    out->entries = l->entries;
    out->offset = l->offset;
    out->hashed = l->index_mode == GJ__INDEX_HASH;
    return GJ_OK;
}

char *gj_encoding_hyperparams(const gj_encoding *enc) {
    return enc ? gj__config_to_json(&enc->config) : NULL;
}

uint32_t gj_encoding_base_resolution(const gj_encoding *enc) {
    return enc ? enc->config.base_resolution : 0;
}

float gj_encoding_per_level_scale(const gj_encoding *enc) {
    return enc ? enc->config.per_level_scale : 0.0f;
}

uint32_t gj_encoding_log2_hashmap_size(const gj_encoding *enc) {
    return enc ? enc->config.log2_hashmap_size : 0;
}

int gj_encoding_stochastic_interpolation(const gj_encoding *enc) {
    return enc ? enc->config.stochastic_interpolation : 0;
}

int gj_encoding_fixed_point_pos(const gj_encoding *enc) {
    return enc ? enc->config.fixed_point_pos : 0;
}
