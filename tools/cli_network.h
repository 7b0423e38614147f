/* Network and model configurations on the command line: telling them from encodings, making
 * the gj_network, and the summary `gridjit info` prints of one (docs/cli.md). */
#ifndef GJ_CLI_NETWORK_H
#define GJ_CLI_NETWORK_H

#include "gridjit.h"

#include <stdint.h>
#include <stdio.h>

/* What a --config holds. */
typedef enum gj_cli_config_kind {
    GJ_CLI_CONFIG_ENCODING = 0, /* anything else, including text that is not JSON (the
                                   encoding parser then says what is wrong) */
    GJ_CLI_CONFIG_NETWORK = 1,  /* an MLP otype, or a key only networks have (n_neurons, ...) */
    GJ_CLI_CONFIG_MODEL = 2     /* an "encoding" or "network" key, or otype NetworkWithInputEncoding */
} gj_cli_config_kind;

gj_cli_config_kind gj_cli_classify_config(const char *json);

/* A network's --dims and --output-dims texts (each optional: NULL leaves its width 0, the
 * configuration's key then) to widths in range; a usage error naming the option otherwise
 * (gj_cli_parse_u32). */
int gj_cli_parse_network_widths(const char *cmd, const char *dims_text, const char *outputs_text,
                                uint32_t *n_input_dims, uint32_t *n_output_dims);

/* Creates ctx and net from json (gj_network_create); where names the JSON's source in
 * messages ("" inline, " in 'FILE'"). On failure prints "gridjit CMD: ..." and returns
 * GJ_CLI_FAILURE with both NULL. Release with gj_network_destroy and gj_context_destroy. */
int gj_cli_open_network(const char *cmd, const char *json, const char *where, uint32_t n_input_dims,
                        uint32_t n_output_dims, gj_context **ctx, gj_network **net);

/* tiny-cuda-nn's spelling of an activation ("ReLU", "LeakyReLU", ...). */
const char *gj_cli_activation_name(gj_activation activation);

/* info's summary of a network or model: for a model the model line, the encoding's summary
 * (gj_cli_print_encoding), then the network's hyperparameters, widths and layer table. */
int gj_cli_print_network(FILE *out, const gj_network *net);

#endif
