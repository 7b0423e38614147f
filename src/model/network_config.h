/* Network configuration: tiny-cuda-nn's MLP JSON keys (docs/networks.md §1) parsed and checked. */
#ifndef GJ_MODEL_NETWORK_CONFIG_H
#define GJ_MODEL_NETWORK_CONFIG_H

#include "base/strbuf.h"
#include "gridjit.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;

typedef struct gj__network_config {
    gj_network_type otype;  /* canonical: the class tiny-cuda-nn serves it with */
    uint32_t n_neurons;     /* 16, 32, 64 or 128 */
    uint32_t n_hidden_layers;
    gj_activation activation;
    gj_activation output_activation;
    uint32_t n_input_dims;  /* the MLP's input width before padding */
    uint32_t n_output_dims; /* before padding */
} gj__network_config;

/*
 * Parses a network object into *out. n_input_dims_arg and n_output_dims_arg: the caller's
 * widths, 0 if none (then the keys "n_input_dims" / "n_output_dims" must give them; when
 * both are given they must agree). With input_from_encoding the object is a model's
 * "network" part: its input is the encoding's output, n_input_dims_arg wide, and the key
 * "n_input_dims" is refused. flags, ignored: as gj__config_parse_ex. On failure returns
 * GJ_ERROR_INVALID_CONFIG with a one-line message naming the key in err.
 */
gj_status gj__network_config_parse_object(const struct cJSON *object, uint32_t n_input_dims_arg,
                                          uint32_t n_output_dims_arg, bool input_from_encoding, uint32_t flags,
                                          gj__strbuf *ignored, gj__network_config *out, char *err, size_t err_size);
/* The same from JSON text (a network alone). */
gj_status gj__network_config_parse_ex(const char *json, uint32_t n_input_dims_arg, uint32_t n_output_dims_arg,
                                      uint32_t flags, gj__strbuf *ignored, gj__network_config *out, char *err,
                                      size_t err_size);

/* Canonical JSON on one line (every key, canonical spellings; "n_input_dims" only when
 * with_input_dims), which the parser reads back to an identical struct. malloc()ed; NULL on OOM. */
char *gj__network_config_to_json(const gj__network_config *config, bool with_input_dims);

/* "FullyFusedMLP", "CutlassMLP"; "None", "ReLU", "LeakyReLU", "Exponential", "Sine",
 * "Sigmoid", "Squareplus", "Softplus", "Tanh", "SiLU" (tiny-cuda-nn's spellings). */
const char *gj__network_type_name(gj_network_type otype);
const char *gj__activation_name(gj_activation activation);

#endif
