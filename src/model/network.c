/* gj_network: a checked network or model configuration, its layouts, and its getters. */
#include "model/network.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gj_status gj__network_make_ex(const char *json, uint32_t n_input_dims, uint32_t n_output_dims, uint32_t flags,
                              gj__strbuf *ignored, gj_network **out, char *err, size_t err_size) {
    *out = NULL;
    gj_network *net = calloc(1, sizeof *net);
    if (!net) {
        snprintf(err, err_size, "out of memory");
        return GJ_ERROR_OUT_OF_MEMORY;
    }
    gj_status s = gj__model_config_parse_ex(json, n_input_dims, n_output_dims, flags, ignored, &net->config, err,
                                            err_size);
    if (s == GJ_OK && net->config.has_encoding) {
        char part_err[1024] = "";
        s = gj__encoding_from_config(&net->config.encoding, &net->encoding, part_err, sizeof part_err);
        if (s != GJ_OK) {
            snprintf(err, err_size, "encoding: %s", part_err); /* named as the parser names it */
        }
    }
    if (s != GJ_OK) {
        free(net);
        return s;
    }
    gj__network_layout_compute(&net->config.network, &net->layout);
    /* tinycudann's Network feeds its MLP through an identity encoding, which pads with
     * ones; a grid encoding pads with zeros (docs/networks.md §2). */
    net->n_input_dims = net->encoding ? net->config.encoding.n_dims : net->config.network.n_input_dims;
    net->input_padding = net->encoding ? 0.0f : 1.0f;
    *out = net;
    return GJ_OK;
}

void gj_network_destroy(gj_network *net) {
    if (net) {
        gj_encoding_destroy(net->encoding);
        free(net);
    }
}

const gj_encoding *gj_network_encoding(const gj_network *net) {
    return net ? net->encoding : NULL;
}

gj_network_type gj_network_otype(const gj_network *net) {
    return net ? net->config.network.otype : GJ_NETWORK_FULLY_FUSED_MLP;
}

uint32_t gj_network_n_neurons(const gj_network *net) {
    return net ? net->config.network.n_neurons : 0;
}

uint32_t gj_network_n_hidden_layers(const gj_network *net) {
    return net ? net->config.network.n_hidden_layers : 0;
}

gj_activation gj_network_activation(const gj_network *net) {
    return net ? net->config.network.activation : GJ_ACTIVATION_NONE;
}

gj_activation gj_network_output_activation(const gj_network *net) {
    return net ? net->config.network.output_activation : GJ_ACTIVATION_NONE;
}

uint32_t gj_network_n_input_dims(const gj_network *net) {
    return net ? net->n_input_dims : 0;
}

uint32_t gj_network_input_width(const gj_network *net) {
    return net ? net->layout.input_width : 0;
}

uint32_t gj_network_padded_input_width(const gj_network *net) {
    return net ? net->layout.padded_input_width : 0;
}

float gj_network_input_padding(const gj_network *net) {
    return net ? net->input_padding : 0.0f;
}

uint32_t gj_network_n_output_dims(const gj_network *net) {
    return net ? net->layout.output_width : 0;
}

uint32_t gj_network_padded_output_width(const gj_network *net) {
    return net ? net->layout.padded_output_width : 0;
}

uint64_t gj_network_n_mlp_params(const gj_network *net) {
    return net ? net->layout.n_params : 0;
}

uint64_t gj_network_n_params(const gj_network *net) {
    return net ? net->layout.n_params + (net->encoding ? gj_encoding_n_params(net->encoding) : 0) : 0;
}

uint32_t gj_network_n_layers(const gj_network *net) {
    return net ? net->layout.n_layers : 0;
}

void gj_network_layer_info_init(gj_network_layer_info *info) {
    if (info) {
        memset(info, 0, sizeof *info);
        info->struct_size = (uint32_t)sizeof *info;
    }
}

gj_status gj_network_layer(const gj_network *net, uint32_t layer, gj_network_layer_info *out) {
    /* The first published layout is the present one: nothing smaller is a real struct. */
    if (!net || !out || layer >= net->layout.n_layers || out->struct_size != sizeof *out) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    const gj__network_layer *l = &net->layout.layers[layer];
    out->layer = layer;
    out->fan_in = l->fan_in;
    out->fan_out = l->fan_out;
    out->offset = l->offset;
    out->n_params = (uint64_t)l->fan_in * l->fan_out;
    out->activation = l->activation;
    return GJ_OK;
}

char *gj_network_hyperparams(const gj_network *net) {
    return net ? gj__model_config_to_json(&net->config) : NULL;
}
