/* gridjit dump: the generated CUDA source of a configuration (or the unit NVRTC sees for
 * a source of your own), on stdout. */
#include "cli_common.h"
#include "cli_network.h"
#include "cli_source.h"

#include <string.h>

#include <stdlib.h>

static const char *const CMD = "dump";

static void usage(void) {
    printf("Usage: gridjit dump --config C [--dims D] [--pass P] [--device-functions-only]\n"
           "                    [--name NAME] [--pad-to N] [--gradients fp32|auto]\n"
           "       gridjit dump --config NETWORK_OR_MODEL [--dims D] [--output-dims N]\n"
           "                    [--device-functions-only] [--name NAME]\n"
           "       gridjit dump --source FILE --encoding NAME=CONFIG[:DIMS]... [--kernel K]...\n"
           "                    [--network NAME=CONFIG[:IN:OUT]]...\n"
           "\n"
           "Prints the generated CUDA source on stdout: by default one self-contained\n"
           "translation unit (device functions and __global__ kernels) that compiles with\n"
           "NVRTC or nvcc alone. The output is byte-identical from run to run. With --source:\n"
           "the unit NVRTC sees, each header NAME.cuh after a '// ===== NAME.cuh =====' line,\n"
           "then the source.\n"
           "\n"
           "A network configuration ({\"otype\": \"FullyFusedMLP\", ...}) gives the network's\n"
           "device functions (NAME, NAME_fwd, NAME_bwd; default name gj_network) and its\n"
           "kernels; a model ({\"encoding\": {...}, \"network\": {...}}) its encoding's device\n"
           "functions (NAME_encoding), then the network's and the fused model kernels\n"
           "(docs/networks.md §7, §9); --device-functions-only leaves the kernels out.\n"
           "\n"
           "Options:\n"
           "  -c, --config C   configuration: a JSON file, or inline JSON starting with '{'\n"
           "  -d, --dims D     number of input dimensions (default: the configuration's\n"
           "                   \"n_dims_to_encode\", else 3)\n"
           "  -p, --pass P     forward, backward, backward_backward or all (default), or a\n"
           "                   comma-separated list\n"
           "  -f, --device-functions-only\n"
           "                   only the device functions and what they need, without\n"
           "                   __global__ kernels, for pasting into another kernel\n"
           "  -n, --name NAME  name of the forward device function (default gj_encode;\n"
           "                   the other passes add _bwd and _bwdbwd; gj_network for a\n"
           "                   network or model)\n"
           "      --output-dims N\n"
           "                   a network's or model's output width (default: the network\n"
           "                   object's \"n_output_dims\"); --dims is then a network's input\n"
           "                   width, or a model's encoding dimensions\n"
           "  -w, --pad-to N   pad the output width with zeros up to a multiple of N\n"
           GJ_CLI_GRADIENTS_HELP
           "%s"
           "  -h, --help       show this help\n",
           gj_cli_source_help);
}

typedef struct dump_args {
    gj_cli_source source;
    const char *config;
    const char *dims;
    const char *passes;
    const char *name;
    const char *pad_to;
    const char *gradients;
    const char *outputs;
    int device_functions_only;
} dump_args;

enum { OPT_GRADIENTS = 256, OPT_OUTPUT_DIMS };

static int parse_args(int argc, char **argv, dump_args *args) {
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'},
        {"dims", required_argument, NULL, 'd'},
        {"pass", required_argument, NULL, 'p'},
        {"device-functions-only", no_argument, NULL, 'f'},
        {"name", required_argument, NULL, 'n'},
        {"pad-to", required_argument, NULL, 'w'},
        {"gradients", required_argument, NULL, OPT_GRADIENTS},
        {"output-dims", required_argument, NULL, OPT_OUTPUT_DIMS},
        GJ_CLI_SOURCE_LONG_OPTIONS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char letters[] = ":c:d:p:fn:w:" GJ_CLI_SOURCE_SHORT_OPTIONS "h";
    int opt, rc = GJ_CLI_OK;
    while (rc == GJ_CLI_OK && (opt = getopt_long(argc, argv, letters, options, NULL)) != -1) {
        switch (opt) {
        case 's':
        case 'e':
        case GJ_CLI_SOURCE_NETWORK:
        case 'k':
        case 'O': rc = gj_cli_source_add(CMD, &args->source, opt, optarg); break;
        case 'c': args->config = optarg; break;
        case 'd': args->dims = optarg; break;
        case 'p': args->passes = optarg; break;
        case 'f': args->device_functions_only = 1; break;
        case 'n': args->name = optarg; break;
        case 'w': args->pad_to = optarg; break;
        case OPT_GRADIENTS: args->gradients = optarg; break;
        case OPT_OUTPUT_DIMS: args->outputs = optarg; break;
        case 'h': usage(); return -1;
        default: return gj_cli_bad_option(CMD, opt, argv, options);
        }
    }
    if (rc != GJ_CLI_OK || (rc = gj_cli_no_operands(CMD, argc, argv, options)) != GJ_CLI_OK) {
        return rc;
    }
    return gj_cli_source_check(CMD, &args->source, args->config != NULL,
                               "give --config (an encoding) or --source (a source of your own), one of them", NULL,
                               args->gradients);
}

/* Fills opts from the command line (usage errors printed). */
static int make_options(const dump_args *args, gj_codegen_options *opts) {
    gj_codegen_options_init(opts);
    int rc = GJ_CLI_OK;
    if (args->passes) {
        rc = gj_cli_parse_passes(CMD, args->passes, &opts->passes);
    }
    if (rc == GJ_CLI_OK && args->pad_to) {
        rc = gj_cli_parse_u32(CMD, "--pad-to", args->pad_to, 1, UINT32_MAX, &opts->output_width_multiple);
    }
    if (rc == GJ_CLI_OK && args->gradients) {
        rc = gj_cli_parse_gradients(CMD, args->gradients, &opts->gradients_fp32);
    }
    if (args->name) {
        opts->name = args->name; /* the library checks that it is a C identifier */
    }
    opts->device_functions_only = args->device_functions_only;
    return rc;
}

/* --source: the unit NVRTC sees. */
static int dump_source(dump_args *args) {
    gj_context *ctx = NULL;
    int rc = gj_cli_source_open_context(CMD, &ctx, &args->source);
    if (rc == GJ_CLI_OK) {
        char *unit = NULL;
        const gj_status status = gj_user_source_generate(ctx, &args->source.desc, &unit);
        rc = status == GJ_OK ? gj_cli_write_stdout(CMD, unit, strlen(unit))
                             : gj_cli_status_error(CMD, ctx, status, "cannot assemble the unit");
        gj_free(unit);
    }
    gj_cli_source_close(&args->source);
    gj_context_destroy(ctx);
    return rc;
}

/* A network or model configuration (json): its unit. */
static int dump_network(const dump_args *args, const gj_codegen_options *opts, const char *json) {
    uint32_t n_dims = 0, n_outputs = 0;
    int rc = gj_cli_parse_network_widths(CMD, args->dims, args->outputs, &n_dims, &n_outputs);
    char where[512];
    gj_cli_config_where(args->config, where, sizeof where);
    gj_context *ctx = NULL;
    gj_network *net = NULL;
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_open_network(CMD, json, where, n_dims, n_outputs, &ctx, &net);
    }
    if (rc == GJ_CLI_OK) {
        char *source = NULL;
        size_t length = 0;
        const gj_status status = gj_network_generate(ctx, net, opts, &source, &length);
        rc = status == GJ_OK ? gj_cli_write_stdout(CMD, source, length)
                             : gj_cli_status_error(CMD, ctx, status, "cannot generate the source");
        gj_free(source);
    }
    gj_network_destroy(net);
    gj_context_destroy(ctx);
    return rc;
}

int gj_cli_dump(int argc, char **argv) {
    static dump_args args;
    memset(&args, 0, sizeof args);
    int rc = parse_args(argc, argv, &args);
    if (rc == -1) {
        return gj_cli_flush_stdout(CMD);
    }
    if (rc == GJ_CLI_OK && args.source.file) {
        return dump_source(&args);
    }
    gj_codegen_options opts;
    uint32_t n_dims = 0;
    if (rc == GJ_CLI_OK) {
        rc = make_options(&args, &opts);
    }
    char *text = NULL;
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_read_config(CMD, args.config, &text);
    }
    if (rc == GJ_CLI_OK && gj_cli_classify_config(text) != GJ_CLI_CONFIG_ENCODING) {
        rc = dump_network(&args, &opts, text);
        free(text);
        return rc;
    }
    free(text);
    if (rc == GJ_CLI_OK && args.outputs) {
        rc = gj_cli_usage_error(CMD, "--output-dims: only for a network or model configuration");
    }
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_parse_dims(CMD, args.dims, &n_dims);
    }
    if (rc != GJ_CLI_OK) {
        return rc;
    }
    gj_context *ctx = NULL;
    gj_encoding *enc = NULL;
    rc = gj_cli_open(CMD, args.config, n_dims, &ctx, &enc);
    if (rc == GJ_CLI_OK) {
        char *source = NULL;
        size_t length = 0;
        gj_status status = gj_encoding_generate(ctx, enc, &opts, &source, &length);
        rc = status == GJ_OK ? gj_cli_write_stdout(CMD, source, length)
                             : gj_cli_status_error(CMD, ctx, status, "cannot generate the source");
        gj_free(source);
    }
    gj_cli_close(ctx, enc);
    return rc;
}
