/* The MLP's parameter layout (docs/networks.md §2), from tiny-cuda-nn's FullyFusedMLP and
 * CutlassMLP constructors: the weight matrices in the order the input meets them, each
 * row-major with one row per output neuron, back to back with no padding between them. */
#include "model/network_layout.h"

#include <string.h>

uint32_t gj__network_pad(uint32_t value) {
    return (value + GJ_NETWORK_ALIGNMENT - 1) / GJ_NETWORK_ALIGNMENT * GJ_NETWORK_ALIGNMENT;
}

static void add_layer(gj__network_layout *out, uint32_t fan_in, uint32_t fan_out, gj_activation activation) {
    gj__network_layer *layer = &out->layers[out->n_layers++];
    layer->fan_in = fan_in;
    layer->fan_out = fan_out;
    layer->offset = out->n_params;
    layer->activation = activation;
    out->n_params += (uint64_t)fan_in * fan_out;
}

void gj__network_layout_compute(const gj__network_config *c, gj__network_layout *out) {
    memset(out, 0, sizeof *out);
    out->input_width = c->n_input_dims;
    out->padded_input_width = gj__network_pad(c->n_input_dims);
    out->output_width = c->n_output_dims;
    out->padded_output_width = gj__network_pad(c->n_output_dims);
    if (c->n_hidden_layers == 0) {
        /* A CutlassMLP without hidden layers: one matrix from the input to the output. */
        add_layer(out, out->padded_input_width, out->padded_output_width, c->output_activation);
        return;
    }
    add_layer(out, out->padded_input_width, c->n_neurons, c->activation);
    for (uint32_t i = 1; i < c->n_hidden_layers; ++i) {
        add_layer(out, c->n_neurons, c->n_neurons, c->activation);
    }
    add_layer(out, c->n_neurons, out->padded_output_width, c->output_activation);
}
