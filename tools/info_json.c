/* The objects `gridjit info --json` prints (info_json.h, docs/cli.md). */
#include "info_json.h"
#include "cli_network.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

/* Integers as raw text so that no value is ever printed in exponent form. */
static int add_u64(cJSON *object, const char *key, uint64_t value) {
    char text[32];
    snprintf(text, sizeof text, "%" PRIu64, value);
    return cJSON_AddRawToObject(object, key, text) != NULL;
}

/* A float with enough digits to round-trip (9 significant); null if not finite. */
static int add_float(cJSON *object, const char *key, float value) {
    char text[32];
    if (!isfinite(value)) {
        return cJSON_AddNullToObject(object, key) != NULL;
    }
    snprintf(text, sizeof text, "%.9g", (double)value);
    return cJSON_AddRawToObject(object, key, text) != NULL;
}

/* The library's hyperparameters text, parsed, as member key of root. */
static int add_parsed(cJSON *root, const char *key, char *text) {
    cJSON *hyperparams = text ? cJSON_Parse(text) : NULL;
    gj_free(text);
    if (!cJSON_IsObject(hyperparams) || !cJSON_AddItemToObject(root, key, hyperparams)) {
        cJSON_Delete(hyperparams);
        return 0;
    }
    return 1;
}

/* -------------------------------------------------------------- encodings */

static int add_level(cJSON *levels, const gj_encoding *enc, uint32_t l) {
    gj_level_info info;
    cJSON *level = cJSON_CreateObject();
    if (!level || !cJSON_AddItemToArray(levels, level) || gj_encoding_level(enc, l, &info) != GJ_OK) {
        return 0;
    }
    return add_u64(level, "level", info.level) && add_float(level, "scale", info.scale) &&
           add_u64(level, "resolution", info.resolution) && add_u64(level, "entries", info.entries) &&
           add_u64(level, "offset", info.offset) && cJSON_AddBoolToObject(level, "hashed", info.hashed) != NULL;
}

cJSON *gj_cli_encoding_json(const gj_encoding *enc) {
    cJSON *root = cJSON_CreateObject();
    cJSON *levels = NULL;
    int ok = root && add_u64(root, "n_dims", gj_encoding_n_dims(enc)) &&
             add_u64(root, "n_levels", gj_encoding_n_levels(enc)) &&
             add_u64(root, "n_features_per_level", gj_encoding_n_features_per_level(enc)) &&
             add_u64(root, "n_params", gj_encoding_n_params(enc)) &&
             add_u64(root, "n_output_dims", gj_encoding_n_output_dims(enc)) &&
             (levels = cJSON_AddArrayToObject(root, "levels")) != NULL;
    for (uint32_t l = 0; ok && l < gj_encoding_n_levels(enc); ++l) {
        ok = add_level(levels, enc, l);
    }
    ok = ok && add_parsed(root, "hyperparams", gj_encoding_hyperparams(enc));
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

/* ---------------------------------------------------------------- networks */

static int add_layer(cJSON *layers, const gj_network *net, uint32_t l) {
    gj_network_layer_info info;
    gj_network_layer_info_init(&info);
    cJSON *layer = cJSON_CreateObject();
    if (!layer || !cJSON_AddItemToArray(layers, layer) || gj_network_layer(net, l, &info) != GJ_OK) {
        return 0;
    }
    return add_u64(layer, "layer", info.layer) && add_u64(layer, "fan_in", info.fan_in) &&
           add_u64(layer, "fan_out", info.fan_out) && add_u64(layer, "offset", info.offset) &&
           add_u64(layer, "n_params", info.n_params) &&
           cJSON_AddStringToObject(layer, "activation", gj_cli_activation_name(info.activation)) != NULL;
}

/* The MLP's part: its widths, parameter count and layer table. */
static cJSON *mlp_json(const gj_network *net) {
    cJSON *mlp = cJSON_CreateObject();
    cJSON *layers = NULL;
    int ok = mlp && add_u64(mlp, "input_width", gj_network_input_width(net)) &&
             add_u64(mlp, "padded_input_width", gj_network_padded_input_width(net)) &&
             add_float(mlp, "input_padding", gj_network_input_padding(net)) &&
             add_u64(mlp, "n_output_dims", gj_network_n_output_dims(net)) &&
             add_u64(mlp, "padded_output_width", gj_network_padded_output_width(net)) &&
             add_u64(mlp, "n_params", gj_network_n_mlp_params(net)) && add_u64(mlp, "params_offset", 0) &&
             (layers = cJSON_AddArrayToObject(mlp, "layers")) != NULL;
    for (uint32_t l = 0; ok && l < gj_network_n_layers(net); ++l) {
        ok = add_layer(layers, net, l);
    }
    if (!ok) {
        cJSON_Delete(mlp);
        return NULL;
    }
    return mlp;
}

cJSON *gj_cli_network_json(const gj_network *net) {
    const gj_encoding *enc = gj_network_encoding(net);
    cJSON *root = cJSON_CreateObject();
    int ok = root && cJSON_AddStringToObject(root, "kind", enc ? "model" : "network") != NULL &&
             add_u64(root, "n_input_dims", gj_network_n_input_dims(net)) &&
             add_u64(root, "n_output_dims", gj_network_n_output_dims(net)) &&
             add_u64(root, "n_params", gj_network_n_params(net));
    if (ok && enc) {
        cJSON *encoding = gj_cli_encoding_json(enc);
        if (encoding && !cJSON_AddItemToObject(root, "encoding", encoding)) {
            cJSON_Delete(encoding);
            encoding = NULL;
        }
        /* The encoding's parameters follow the network's (tinycudann's order). */
        ok = encoding && add_u64(encoding, "params_offset", gj_network_n_mlp_params(net));
    }
    cJSON *mlp = ok ? mlp_json(net) : NULL;
    if (mlp && !cJSON_AddItemToObject(root, "network", mlp)) {
        cJSON_Delete(mlp);
        mlp = NULL;
    }
    ok = ok && mlp && add_parsed(root, "hyperparams", gj_network_hyperparams(net));
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}
