/* Network and model configurations on the command line (cli_network.h). */
#include "cli_network.h"
#include "cli_common.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <string.h>
#include <strings.h>

/* ---------------------------------------------------------------- kinds */

/* Keys that only a network object has (tiny-cuda-nn's MLP keys and the widths). */
static const char *const network_keys[] = {"n_neurons", "n_hidden_layers", "activation", "output_activation",
                                           "n_input_dims", "n_output_dims"};
static const char *const network_otypes[] = {"FullyFusedMLP", "CutlassMLP", "MLP", "MegakernelMLP"};

gj_cli_config_kind gj_cli_classify_config(const char *json) {
    cJSON *root = cJSON_Parse(json);
    gj_cli_config_kind kind = GJ_CLI_CONFIG_ENCODING;
    const cJSON *otype = cJSON_GetObjectItemCaseSensitive(root, "otype");
    const char *name = cJSON_IsString(otype) ? otype->valuestring : "";
    if (!cJSON_IsObject(root)) {
        kind = GJ_CLI_CONFIG_ENCODING;
    } else if (cJSON_GetObjectItemCaseSensitive(root, "encoding") || cJSON_GetObjectItemCaseSensitive(root, "network") ||
               strcasecmp(name, "NetworkWithInputEncoding") == 0) {
        kind = GJ_CLI_CONFIG_MODEL;
    } else {
        for (size_t i = 0; i < sizeof network_otypes / sizeof network_otypes[0]; ++i) {
            kind = strcasecmp(name, network_otypes[i]) == 0 ? GJ_CLI_CONFIG_NETWORK : kind;
        }
        for (size_t i = 0; i < sizeof network_keys / sizeof network_keys[0]; ++i) {
            kind = cJSON_GetObjectItemCaseSensitive(root, network_keys[i]) ? GJ_CLI_CONFIG_NETWORK : kind;
        }
    }
    cJSON_Delete(root);
    return kind;
}

int gj_cli_parse_network_widths(const char *cmd, const char *dims_text, const char *outputs_text,
                                uint32_t *n_input_dims, uint32_t *n_output_dims) {
    int rc = GJ_CLI_OK;
    if (dims_text) {
        rc = gj_cli_parse_u32(cmd, "--dims", dims_text, 1, GJ_NETWORK_MAX_INPUT_DIMS, n_input_dims);
    }
    if (rc == GJ_CLI_OK && outputs_text) {
        rc = gj_cli_parse_u32(cmd, "--output-dims", outputs_text, 1, GJ_NETWORK_MAX_OUTPUT_DIMS, n_output_dims);
    }
    return rc;
}

int gj_cli_open_network(const char *cmd, const char *json, const char *where, uint32_t n_input_dims,
                        uint32_t n_output_dims, gj_context **ctx, gj_network **net) {
    *ctx = NULL;
    *net = NULL;
    gj_status status = gj_context_create(ctx);
    if (status != GJ_OK) {
        return gj_cli_status_error(cmd, NULL, status, "cannot create a context");
    }
    status = gj_network_create(*ctx, json, n_input_dims, n_output_dims, net); /* *net stays NULL on failure */
    return status == GJ_OK ? GJ_CLI_OK : gj_cli_config_refused(cmd, ctx, status, where);
}

/* -------------------------------------------------------------- summary */

const char *gj_cli_activation_name(gj_activation activation) {
    static const char *const names[] = {"None",    "ReLU",       "LeakyReLU", "Exponential", "Sine",
                                        "Sigmoid", "Squareplus", "Softplus",  "Tanh",        "SiLU"};
    return (unsigned)activation < sizeof names / sizeof names[0] ? names[activation] : "?";
}

static void print_layers(FILE *out, const gj_network *net) {
    fprintf(out, "%5s  %7s  %7s  %12s  %10s  %s\n", "layer", "fan_in", "fan_out", "offset", "n_params", "activation");
    for (uint32_t l = 0; l < gj_network_n_layers(net); ++l) {
        gj_network_layer_info info;
        gj_network_layer_info_init(&info);
        if (gj_network_layer(net, l, &info) != GJ_OK) {
            continue;
        }
        fprintf(out, "%5" PRIu32 "  %7" PRIu32 "  %7" PRIu32 "  %12" PRIu64 "  %10" PRIu64 "  %s\n", info.layer,
                info.fan_in, info.fan_out, info.offset, info.n_params, gj_cli_activation_name(info.activation));
    }
}

static int print_mlp(FILE *out, const gj_network *net) {
    const gj_encoding *enc = gj_network_encoding(net);
    const char *otype = gj_network_otype(net) == GJ_NETWORK_FULLY_FUSED_MLP ? "FullyFusedMLP" : "CutlassMLP";
    if (gj_network_n_hidden_layers(net) == 0) {
        fprintf(out, "network       %s without hidden layers (one matrix), output activation %s\n", otype,
                gj_cli_activation_name(gj_network_output_activation(net)));
    } else {
        fprintf(out, "network       %s, %" PRIu32 " neurons x %" PRIu32 " hidden layers, %s, output activation %s\n",
                otype, gj_network_n_neurons(net), gj_network_n_hidden_layers(net),
                gj_cli_activation_name(gj_network_activation(net)),
                gj_cli_activation_name(gj_network_output_activation(net)));
    }
    /* A model's hyperparameters hold the encoding's too: its summary printed them already. */
    if (gj_cli_print_hyperparams(out, gj_network_hyperparams(net), enc ? "network" : NULL) != GJ_CLI_OK) {
        return GJ_CLI_FAILURE;
    }
    fprintf(out, "input         %" PRIu32 "%s, padded to %" PRIu32 " (the padding columns hold %g%s)\n",
            gj_network_input_width(net), enc ? " (the encoding's output)" : "", gj_network_padded_input_width(net),
            (double)gj_network_input_padding(net), enc ? ", as a grid encoding pads" : ", as tinycudann's Network");
    fprintf(out, "output        %" PRIu32 ", padded to %" PRIu32 "\n", gj_network_n_output_dims(net),
            gj_network_padded_output_width(net));
    fprintf(out, "n_params      %" PRIu64 " (parameters 0 .. %" PRIu64 ")\n\n", gj_network_n_mlp_params(net),
            gj_network_n_mlp_params(net) - 1);
    print_layers(out, net);
    return GJ_CLI_OK;
}

int gj_cli_print_network(FILE *out, const gj_network *net) {
    const gj_encoding *enc = gj_network_encoding(net);
    if (!enc) {
        return print_mlp(out, net);
    }
    const uint64_t mlp = gj_network_n_mlp_params(net), total = gj_network_n_params(net);
    fprintf(out, "model         NetworkWithInputEncoding, %" PRIu32 " inputs -> %" PRIu32 " outputs\n",
            gj_network_n_input_dims(net), gj_network_n_output_dims(net));
    fprintf(out, "n_params      %" PRIu64 ": the network's %" PRIu64 ", then the encoding's %" PRIu64
                 " (parameters %" PRIu64 " .. %" PRIu64 ")\n\n",
            total, mlp, total - mlp, mlp, total - 1);
    if (gj_cli_print_encoding(out, enc) != GJ_CLI_OK) {
        return GJ_CLI_FAILURE;
    }
    fprintf(out, "\n");
    return print_mlp(out, net);
}
