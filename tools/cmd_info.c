/* gridjit info: the layout of a configuration (an encoding, a network or a model), as a
 * summary or as one JSON object. */
#include "cli_common.h"
#include "cli_network.h"
#include "info_json.h"

#include <stdlib.h>
#include <string.h>

static const char *const CMD = "info";

static void usage(void) {
    printf("Usage: gridjit info --config C [--dims D] [--output-dims N] [--json]\n"
           "\n"
           "Prints the hyperparameters and the parameter layout of a configuration:\n"
           " - an encoding: n_params, n_output_dims and the level table;\n"
           " - a network ({\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64, ...}): its widths, given\n"
           "   and padded to multiples of 16, n_params and the weight matrices;\n"
           " - a model ({\"encoding\": {...}, \"network\": {...}}): both, the network's parameters\n"
           "   first, then the encoding's (tinycudann's order).\n"
           "\n"
           "Options:\n"
           "  -c, --config C   configuration: a JSON file, or inline JSON starting with '{'\n"
           "  -d, --dims D     input dimensions: the encoding's (default: the configuration's\n"
           "                   \"n_dims_to_encode\", else 3), or a network's input width (default:\n"
           "                   its \"n_input_dims\"; one of the two is required)\n"
           "      --output-dims N\n"
           "                   a network's or model's output width (default: the network\n"
           "                   object's \"n_output_dims\"; one of the two is required)\n"
           "  -j, --json       print exactly one JSON object; for an encoding:\n"
           "                   {\"n_dims\", \"n_levels\", \"n_features_per_level\", \"n_params\",\n"
           "                    \"n_output_dims\", \"levels\": [{\"level\", \"scale\", \"resolution\",\n"
           "                    \"entries\", \"offset\", \"hashed\"}], \"hyperparams\": {...}};\n"
           "                   for a network or model:\n"
           "                   {\"kind\": \"network\" or \"model\", \"n_input_dims\", \"n_output_dims\",\n"
           "                    \"n_params\", \"encoding\": {the encoding's object, \"params_offset\"}\n"
           "                    (a model only), \"network\": {\"input_width\",\n"
           "                    \"padded_input_width\", \"input_padding\", \"n_output_dims\",\n"
           "                    \"padded_output_width\", \"n_params\", \"params_offset\", \"layers\":\n"
           "                    [{\"layer\", \"fan_in\", \"fan_out\", \"offset\", \"n_params\",\n"
           "                    \"activation\"}]}, \"hyperparams\": {...}}\n"
           "  -h, --help       show this help\n"
           "\n"
           "Level columns: scale = exp2(level * log2(per_level_scale)) * base_resolution - 1\n"
           "(float, printed to round-trip); resolution = ceil(scale) + 1; entries = table entries\n"
           "of the level, each n_features_per_level values; offset = index of the level's first\n"
           "entry (its first parameter is offset * n_features_per_level); index = 'hash' when\n"
           "corners are hashed, 'dense' when indexed directly (modulo the entries).\n"
           "Layer columns: weight (row o, column i) of a layer is parameter offset + o * fan_in + i\n"
           "(row-major, one row per output); activation = what follows the product.\n"
           "\"hyperparams\" is the canonical configuration; it parses back to the same one.\n");
}

/* Prints json (deleted here) as the only output. */
static int print_json(cJSON *root) {
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) {
        gj_cli_error(CMD, "cannot build the JSON output (out of memory, or bad hyperparameters from the library)");
        return GJ_CLI_FAILURE;
    }
    printf("%s\n", text);
    free(text);
    return gj_cli_flush_stdout(CMD);
}

/* Built in memory first so that a failure half-way prints nothing on stdout. */
static int print_summary(const gj_encoding *enc, const gj_network *net) {
    char *text = NULL;
    size_t size = 0;
    FILE *memory = open_memstream(&text, &size);
    int ok = memory && (net ? gj_cli_print_network(memory, net) : gj_cli_print_encoding(memory, enc)) == GJ_CLI_OK;
    if (memory) {
        ok = (fclose(memory) == 0) && ok;
    }
    int rc = GJ_CLI_FAILURE;
    if (ok) {
        rc = gj_cli_write_stdout(CMD, text, size);
    } else {
        gj_cli_error(CMD, "cannot print the summary (out of memory, or bad hyperparameters from the library)");
    }
    free(text);
    return rc;
}

static int info_encoding(const char *json, const char *where, const char *dims_text, int json_output) {
    uint32_t n_dims = 0;
    int rc = gj_cli_parse_dims(CMD, dims_text, &n_dims);
    gj_context *ctx = NULL;
    gj_encoding *enc = NULL;
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_open_json_where(CMD, json, where, n_dims, &ctx, &enc);
    }
    if (rc == GJ_CLI_OK) {
        rc = json_output ? print_json(gj_cli_encoding_json(enc)) : print_summary(enc, NULL);
    }
    gj_cli_close(ctx, enc);
    return rc;
}

static int info_network(const char *json, const char *where, const char *dims_text, const char *outputs_text,
                        int json_output) {
    uint32_t n_dims = 0, n_outputs = 0;
    int rc = gj_cli_parse_network_widths(CMD, dims_text, outputs_text, &n_dims, &n_outputs);
    gj_context *ctx = NULL;
    gj_network *net = NULL;
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_open_network(CMD, json, where, n_dims, n_outputs, &ctx, &net);
    }
    if (rc == GJ_CLI_OK) {
        rc = json_output ? print_json(gj_cli_network_json(net)) : print_summary(NULL, net);
    }
    gj_network_destroy(net);
    gj_context_destroy(ctx);
    return rc;
}

int gj_cli_info(int argc, char **argv) {
    enum { OPT_OUTPUT_DIMS = 1000 };
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'},
        {"dims", required_argument, NULL, 'd'},
        {"output-dims", required_argument, NULL, OPT_OUTPUT_DIMS},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config = NULL, *dims_text = NULL, *outputs_text = NULL;
    int json = 0, opt;
    while ((opt = getopt_long(argc, argv, ":c:d:jh", options, NULL)) != -1) {
        switch (opt) {
        case 'c': config = optarg; break;
        case 'd': dims_text = optarg; break;
        case OPT_OUTPUT_DIMS: outputs_text = optarg; break;
        case 'j': json = 1; break;
        case 'h': usage(); return gj_cli_flush_stdout(CMD);
        default: return gj_cli_bad_option(CMD, opt, argv, options);
        }
    }
    int rc = gj_cli_no_operands(CMD, argc, argv, options);
    if (rc == GJ_CLI_OK && !config) {
        rc = gj_cli_usage_error(CMD, "--config is required (a file or inline JSON)");
    }
    char *text = NULL;
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_read_config(CMD, config, &text);
    }
    if (rc != GJ_CLI_OK) {
        return rc;
    }
    char where[512];
    gj_cli_config_where(config, where, sizeof where);
    if (gj_cli_classify_config(text) != GJ_CLI_CONFIG_ENCODING) {
        rc = info_network(text, where, dims_text, outputs_text, json);
    } else if (outputs_text) {
        rc = gj_cli_usage_error(CMD, "--output-dims: only for a network or model configuration (this one is an "
                                     "encoding: it has neither \"network\" nor a network key such as \"n_neurons\")");
    } else {
        rc = info_encoding(text, where, dims_text, json);
    }
    free(text);
    return rc;
}
