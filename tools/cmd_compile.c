/* gridjit compile: NVRTC compilation of a configuration (or of a source of your own
 * around encodings) to a cubin or PTX file. */
#include "cli_common.h"
#include "cli_network.h"
#include "cli_program.h"
#include "cli_source.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static const char *const CMD = "compile";

static void usage(void) {
    printf("Usage: gridjit compile --config C [--dims D] --arch ARCH [--ptx] [-o FILE]\n"
           "                       [--json] [--pass P] [--gradients fp32|auto] [--cache-dir DIR]\n"
           "                       [--no-cache] [--keep-source]\n"
           "       gridjit compile --config NETWORK_OR_MODEL [--dims D] [--output-dims N] --arch ARCH\n"
           "                       [the options above]\n"
           "       gridjit compile --source FILE --encoding NAME=CONFIG[:DIMS]... --kernel K...\n"
           "                       [--network NAME=CONFIG[:IN:OUT]]...\n"
           "                       --arch ARCH [--option OPT]... [the options above]\n"
           "\n"
           "A network or model configuration compiles its whole generated unit (the kernels\n"
           "gj_network_inference, _forward, _backward, _zero, _backward_input; a model\n"
           "whose inference runs in two passes has _inference_features instead of\n"
           "_inference, and where its forward for training runs so too (the rule, or\n"
           "GRIDJIT_NETWORK_FORWARD_FEATURES=1) _forward_features instead of _forward;\n"
           "docs/networks.md), default\n"
           "output network.cubin; --dims is then a network's input width or a model's encoding\n"
           "dimensions, --output-dims its output width (default: \"n_output_dims\").\n"
           "\n"
           "Generates the source of an encoding (or takes a source of your own, with each\n"
           "encoding or network offered to it as the header NAME.cuh), compiles it with NVRTC\n"
           "and writes the cubin or PTX to FILE (atomically: a reader never sees a partial\n"
           "file).\n"
           "Prints the compile time and whether the binary came from the disk cache, the size\n"
           "and the kernels (name expression -> lowered name). The binary comes from the disk\n"
           "cache when a verified entry exists (docs/cache.md), and goes into it otherwise;\n"
           "without NVRTC only cached programs compile. On a compile error the full compiler\n"
           "log, with the numbered source lines around each error, goes to stderr and the\n"
           "exit status is 1.\n"
           "\n"
           "Options:\n"
           "  -c, --config C   configuration: a JSON file, or inline JSON starting with '{'\n"
           "  -d, --dims D     number of input dimensions (default: the configuration's\n"
           "                   \"n_dims_to_encode\", else 3)\n"
           "  -a, --arch ARCH  target: sm_XX, sm_XXa or sm_XXf for a cubin (e.g. sm_90),\n"
           "                   compute_XX[a|f] for PTX\n"
           "      --ptx        PTX instead of a cubin (sm_90 becomes compute_90)\n"
           "  -o, --output FILE\n"
           "                   where to write (default, in the current directory:\n"
           "                   encoding.cubin, or encoding.ptx for PTX; with --source\n"
           "                   kernels.cubin or kernels.ptx; a network or model:\n"
           "                   network.cubin or network.ptx)\n"
           "  -j, --json       print exactly one JSON object: {\"arch\", \"kind\" (\"cubin\" or \"ptx\"),\n"
           "                   \"bytes\", \"compile_ms\", \"kernels\": [lowered names], \"output\",\n"
           "                   \"key\" (32 hex digits), \"cache\" (\"hit\", \"miss\" or \"off\")}\n"
           "      --cache-dir DIR  the writable cache directory (default: GRIDJIT_CACHE_DIR, else\n"
           "                   $XDG_CACHE_HOME/gridjit, else ~/.cache/gridjit)\n"
           "      --no-cache   neither read nor write the disk cache\n"
           "      --keep-source  keep the generated source beside the cache entry (KEY.cu)\n"
           "  -p, --pass P     forward, backward, backward_backward or all (default), or a\n"
           "                   comma-separated list: the kernels and device functions of those\n"
           "                   passes\n"
           GJ_CLI_GRADIENTS_HELP
           "%s"
           "  -h, --help       show this help\n",
           gj_cli_source_help);
}

enum { OPT_PTX = 256, OPT_NO_CACHE, OPT_CACHE_DIR, OPT_KEEP_SOURCE, OPT_GRADIENTS, OPT_OUTPUT_DIMS };

typedef struct compile_args {
    gj_cli_source source; /* --source mode */
    const char *config;
    const char *dims;
    const char *arch;
    const char *output;
    const char *passes;
    const char *gradients;
    const char *outputs; /* --output-dims: a network's or model's */
    int ptx;
    int json;
    int use_cache; /* --no-cache clears it */
    const char *cache_dir;
    int keep_source;
} compile_args;

static int parse_args(int argc, char **argv, compile_args *args) {
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'},
        {"dims", required_argument, NULL, 'd'},
        {"arch", required_argument, NULL, 'a'},
        {"ptx", no_argument, NULL, OPT_PTX},
        {"output", required_argument, NULL, 'o'},
        {"json", no_argument, NULL, 'j'},
        {"no-cache", no_argument, NULL, OPT_NO_CACHE},
        {"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
        {"keep-source", no_argument, NULL, OPT_KEEP_SOURCE},
        {"pass", required_argument, NULL, 'p'},
        {"gradients", required_argument, NULL, OPT_GRADIENTS},
        {"output-dims", required_argument, NULL, OPT_OUTPUT_DIMS},
        GJ_CLI_SOURCE_LONG_OPTIONS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char letters[] = ":c:d:a:o:jp:" GJ_CLI_SOURCE_SHORT_OPTIONS "h";
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
        case 'a': args->arch = optarg; break;
        case OPT_PTX: args->ptx = 1; break;
        case 'o': args->output = optarg; break;
        case 'j': args->json = 1; break;
        case OPT_NO_CACHE: args->use_cache = 0; break;
        case OPT_CACHE_DIR: args->cache_dir = optarg; break;
        case OPT_KEEP_SOURCE: args->keep_source = 1; break;
        case 'p': args->passes = optarg; break;
        case OPT_GRADIENTS: args->gradients = optarg; break;
        case OPT_OUTPUT_DIMS: args->outputs = optarg; break;
        case 'h': usage(); return -1;
        default: return gj_cli_bad_option(CMD, opt, argv, options);
        }
    }
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_no_operands(CMD, argc, argv, options);
    }
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_source_check(CMD, &args->source, args->config != NULL,
                                 "give --config (an encoding) or --source (a source of your own), one of them",
                                 " to compile and look up", args->gradients);
    }
    if (rc == GJ_CLI_OK && !args->source.file &&
        (args->source.n_encoding_specs || args->source.n_kernels || args->source.n_options)) {
        rc = gj_cli_usage_error(CMD, "--encoding, --kernel and --option go with --source");
    }
    if (rc == GJ_CLI_OK && !args->arch) {
        rc = gj_cli_usage_error(CMD, "--arch is required (e.g. --arch sm_90, or --arch compute_90 for PTX)");
    }
    if (rc == GJ_CLI_OK && args->cache_dir && args->cache_dir[0] == '\0') {
        rc = gj_cli_usage_error(CMD, "--cache-dir: empty directory name");
    }
    if (rc == GJ_CLI_OK && args->output && args->output[0] == '\0') {
        rc = gj_cli_usage_error(CMD, "--output: empty file name");
    }
    return rc;
}

/* --ptx turns "sm_XX..." into "compute_XX..."; a malformed name, or an output file whose
 * extension says the other kind, is a bad command line. */
static int target_arch(const compile_args *args, char *out, size_t size) {
    if (!gj_cli_target_arch(args->arch, strlen(args->arch), args->ptx, out, size)) {
        return gj_cli_usage_error(CMD, "--arch: expected sm_XX, sm_XXa or sm_XXf (cubin) or compute_XX, compute_XXa "
                                       "or compute_XXf (PTX), e.g. sm_90 (got '%s')", args->arch);
    }
    const int ptx = strncmp(out, "compute_", 8) == 0;
    const char *dot = args->output ? strrchr(args->output, '.') : NULL;
    if (dot && (strcmp(dot, ptx ? ".cubin" : ".ptx") == 0)) {
        return gj_cli_usage_error(CMD, "--arch %s makes %s, but -o %s names %s (use %s, or -o FILE%s)", out,
                                  ptx ? "PTX" : "a cubin", args->output, ptx ? "a cubin" : "PTX",
                                  ptx ? "--arch sm_XX for a cubin" : "--ptx or --arch compute_XX for PTX",
                                  ptx ? ".ptx" : ".cubin");
    }
    return GJ_CLI_OK;
}

static const char *kind_name(gj_binary_kind kind) {
    return kind == GJ_BINARY_PTX ? "ptx" : "cubin";
}

static int print_json(const gj_program *prog, const char *path) {
    size_t size = 0;
    gj_program_binary(prog, &size);
    char number[64];
    cJSON *root = cJSON_CreateObject();
    cJSON *kernels = NULL;
    int ok = root && cJSON_AddStringToObject(root, "arch", gj_program_arch(prog)) &&
             cJSON_AddStringToObject(root, "kind", kind_name(gj_program_kind(prog)));
    snprintf(number, sizeof number, "%zu", size);
    ok = ok && cJSON_AddRawToObject(root, "bytes", number);
    snprintf(number, sizeof number, "%.3f", gj_program_compile_ms(prog));
    ok = ok && cJSON_AddRawToObject(root, "compile_ms", number) &&
         (kernels = cJSON_AddArrayToObject(root, "kernels")) != NULL;
    for (size_t i = 0; ok && i < gj_program_n_kernels(prog); ++i) {
        ok = cJSON_AddItemToArray(kernels, cJSON_CreateString(gj_program_lowered_name(prog, i)));
    }
    ok = ok && cJSON_AddStringToObject(root, "output", path);
    const char *key = gj_program_cache_key(prog);
    ok = ok && (key[0] ? cJSON_AddStringToObject(root, "key", key) != NULL : cJSON_AddNullToObject(root, "key") != NULL);
    const char *cache = gj_cli_cache_phrase(gj_program_cache_status(prog), GJ_CLI_CACHE_WORD);
    ok = ok && cJSON_AddStringToObject(root, "cache", cache);
    char *text = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) {
        gj_cli_error(CMD, "out of memory");
        return GJ_CLI_FAILURE;
    }
    printf("%s\n", text);
    free(text);
    return gj_cli_flush_stdout(CMD);
}

static int print_summary(const gj_program *prog, const char *path) {
    size_t size = 0;
    gj_program_binary(prog, &size);
    const gj_cache_status cache = gj_program_cache_status(prog);
    printf("arch       %s (%s)\n", gj_program_arch(prog), kind_name(gj_program_kind(prog)));
    printf("output     %s (%zu bytes)\n", path, size);
    printf("compile    %.1f ms (%s)\n", gj_program_compile_ms(prog), gj_cli_cache_phrase(cache, GJ_CLI_CACHE_HOW));
    const char *key = gj_program_cache_key(prog);
    printf("cache      %s%s%s\n", gj_cli_cache_phrase(cache, GJ_CLI_CACHE_WORD), key[0] ? ", key " : "", key);
    printf("kernels    %zu\n", gj_program_n_kernels(prog));
    for (size_t i = 0; i < gj_program_n_kernels(prog); ++i) {
        printf("  %s -> %s\n", gj_program_kernel_name(prog, i), gj_program_lowered_name(prog, i));
    }
    return gj_cli_flush_stdout(CMD);
}

/* Compiles (the log on stderr on failure, and the compiler's warnings on success); *prog
 * is set only on success. */
static int compile(gj_context *ctx, const gj_encoding *enc, const gj_codegen_options *opts, const gj_source_desc *desc,
                   const char *arch, gj_program **prog) {
    const gj_status status = gj_cli_compile_program(ctx, enc, opts, desc, arch, prog);
    if (status != GJ_OK) {
        return gj_cli_status_error(CMD, ctx, status, NULL);
    }
    const char *log = gj_program_log(*prog);
    if (log && log[0]) {
        fprintf(stderr, "gridjit %s: compiler messages:\n%s\n", CMD, log);
    }
    return GJ_CLI_OK;
}

static int run(const compile_args *args, gj_context *ctx, const gj_encoding *enc, const gj_network *net,
               const gj_codegen_options *opts) {
    char arch[64];
    int rc = target_arch(args, arch, sizeof arch);
    gj_program *prog = NULL;
    if (rc == GJ_CLI_OK && net) {
        const gj_status status = gj_network_compile(ctx, net, opts, arch, &prog);
        rc = status == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(CMD, ctx, status, NULL);
        if (status != GJ_OK && prog) {
            fprintf(stderr, "%s\n", gj_program_log(prog));
            gj_program_destroy(prog);
        }
    } else if (rc == GJ_CLI_OK) {
        rc = compile(ctx, enc, opts, args->source.file ? &args->source.desc : NULL, arch, &prog);
    }
    if (rc != GJ_CLI_OK) {
        return rc;
    }
    const char *path = args->output;
    if (!path) {
        const int ptx = gj_program_kind(prog) == GJ_BINARY_PTX;
        /* The defaults --help states. */
        path = net                ? (ptx ? "network.ptx" : "network.cubin")
               : args->source.file ? (ptx ? "kernels.ptx" : "kernels.cubin")
               : ptx               ? "encoding.ptx"
                                   : "encoding.cubin";
    }
    size_t size = 0;
    const void *binary = gj_program_binary(prog, &size);
    rc = gj_cli_write_file_atomic(CMD, path, binary, size);
    if (rc == GJ_CLI_OK) {
        rc = args->json ? print_json(prog, path) : print_summary(prog, path);
    }
    gj_program_destroy(prog);
    return rc;
}

/* --cache-dir, --no-cache, --keep-source over the environment's settings. */
static int configure_cache(const compile_args *args, gj_context *ctx) {
    gj_status status = GJ_OK;
    if (args->cache_dir) {
        status = gj_context_set_cache_dir(ctx, args->cache_dir);
    }
    if (status == GJ_OK && !args->use_cache) {
        status = gj_context_set_cache_enabled(ctx, 0);
    }
    if (status == GJ_OK && args->keep_source) {
        status = gj_context_set_cache_keep_source(ctx, 1);
    }
    return status == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(CMD, ctx, status, "cache settings");
}

int gj_cli_compile(int argc, char **argv) {
    static compile_args args;
    memset(&args, 0, sizeof args);
    args.use_cache = 1;
    int rc = parse_args(argc, argv, &args);
    if (rc == -1) {
        return gj_cli_flush_stdout(CMD);
    }
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    uint32_t n_dims = 0, n_outputs = 0;
    if (rc == GJ_CLI_OK && args.passes) {
        rc = gj_cli_parse_passes(CMD, args.passes, &opts.passes);
    }
    if (rc == GJ_CLI_OK && args.gradients) {
        rc = gj_cli_parse_gradients(CMD, args.gradients, &opts.gradients_fp32);
    }
    /* A network or model configuration: its whole unit (docs/networks.md §7). */
    char *text = NULL;
    if (rc == GJ_CLI_OK && !args.source.file) {
        rc = gj_cli_read_config(CMD, args.config, &text);
    }
    const int network = text && gj_cli_classify_config(text) != GJ_CLI_CONFIG_ENCODING;
    if (rc == GJ_CLI_OK && args.outputs && !network) {
        rc = gj_cli_usage_error(CMD, "--output-dims: only for a network or model configuration");
    }
    if (rc == GJ_CLI_OK && !network) {
        rc = gj_cli_parse_dims(CMD, args.dims, &n_dims);
    } else if (rc == GJ_CLI_OK) { /* --output-dims of an encoding was refused above */
        rc = gj_cli_parse_network_widths(CMD, args.dims, args.outputs, &n_dims, &n_outputs);
    }
    if (rc != GJ_CLI_OK) {
        free(text);
        return rc;
    }
    gj_context *ctx = NULL;
    gj_encoding *enc = NULL;
    gj_network *net = NULL;
    if (network) {
        char where[512];
        gj_cli_config_where(args.config, where, sizeof where);
        rc = gj_cli_open_network(CMD, text, where, n_dims, n_outputs, &ctx, &net);
    } else {
        rc = args.source.file ? gj_cli_source_open_context(CMD, &ctx, &args.source)
                              : gj_cli_open(CMD, args.config, n_dims, &ctx, &enc);
    }
    free(text);
    if (rc == GJ_CLI_OK) {
        rc = configure_cache(&args, ctx);
    }
    if (rc == GJ_CLI_OK) {
        rc = run(&args, ctx, enc, net, &opts);
    }
    gj_cli_source_close(&args.source);
    gj_network_destroy(net);
    gj_cli_close(ctx, enc);
    return rc;
}
