/* gj_network: a parsed network (and its encoding, for a model) and its layout,
 * immutable once made. */
#ifndef GJ_MODEL_NETWORK_H
#define GJ_MODEL_NETWORK_H

#include "model/encoding.h"
#include "model/model_config.h"
#include "model/network_layout.h"

struct gj_network {
    gj__model_config config;
    gj__network_layout layout;
    gj_encoding *encoding; /* owned; NULL for a network alone */
    uint32_t n_input_dims; /* the width of what the caller feeds */
    float input_padding;   /* what the MLP's padding input columns hold */
    gj__network_plan_hints hints; /* zero (the plan's own choices) but in a module's private
                                     copy, set before its first use */
};

/* Parses json (gj__model_config_parse_ex) and computes the layouts. On failure *out is
 * NULL and err holds a one-line message naming the key at fault. */
gj_status gj__network_make_ex(const char *json, uint32_t n_input_dims, uint32_t n_output_dims, uint32_t flags,
                              gj__strbuf *ignored, struct gj_network **out, char *err, size_t err_size);

#endif
