/* gridjit: the command-line tool. Dispatches to one entry point per subcommand (cli.h). */
#include "cli_common.h"
#include "cli_suggest.h"

#include <stdio.h>
#include <string.h>

typedef struct gj_cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} gj_cli_command;

/* One line per subcommand. */
static const gj_cli_command commands[] = {
    {"info", gj_cli_info, "print the parameter layout and hyperparameters of an encoding, network or model"},
    {"dump", gj_cli_dump, "print the generated CUDA source of a configuration"},
    {"compile", gj_cli_compile, "compile a configuration with NVRTC to a cubin or PTX file"},
    {"demo", gj_cli_demo, "show the whole pipeline on tcnn's default HashGrid configuration"},
    {"precompile", gj_cli_precompile, "compile configurations x architectures into a cache directory"},
    {"cache", gj_cli_cache, "list, check, prune or clear the disk cache of compiled binaries"},
    {"eval", gj_cli_eval, "run an encoding on the GPU over float32 files (outputs and gradients)"},
    {"bench", gj_cli_bench, "time the kernels of every pass on the GPU, and the compile"},
};
static const size_t n_commands = sizeof commands / sizeof commands[0];

static void usage(FILE *out) {
    fprintf(out,
            "Usage: gridjit COMMAND [OPTIONS]\n"
            "       gridjit COMMAND --help\n"
            "       gridjit --version\n"
            "\n"
            "Generates, compiles and inspects CUDA code for multiresolution hash-grid\n"
            "encodings and fully fused MLPs (alone or behind an encoding), configured as in\n"
            "tiny-cuda-nn.\n"
            "\n"
            "Commands:\n");
    for (size_t i = 0; i < n_commands; ++i) {
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    }
    fprintf(out,
            "\n"
            "--config takes a file name or inline JSON (text starting with '{').\n"
            "Exit status: 0 success, 1 failure (bad configuration, compile error, I/O),\n"
            "2 bad command line.\n");
}

/* The library version, NVRTC's when it can be loaded, and the GPU when there is one
 * (useful in bug reports). */
static int version(void) {
    printf("gridjit %s\n", gj_version_string());
    gj_context *ctx = NULL;
    int major = 0, minor = 0;
    if (gj_context_create(&ctx) == GJ_OK) {
        gj_context_set_log(ctx, NULL, NULL);
        if (gj_nvrtc_version(ctx, &major, &minor) == GJ_OK) {
            printf("NVRTC %d.%d\n", major, minor);
        } else {
            printf("NVRTC not available (%s)\n", gj_context_errmsg(ctx));
        }
        gj_runtime_info info;
        if (gj_runtime_probe(ctx, &info) == GJ_OK) {
            printf("GPU %s (%s), driver %d.%d\n", info.device_name, info.arch, info.driver_version / 1000,
                   info.driver_version % 1000 / 10);
        } else {
            printf("GPU not available (%s)\n", gj_context_errmsg(ctx));
        }
    }
    gj_context_destroy(ctx);
    return gj_cli_flush_stdout("--version");
}

/* "gridjit: unknown command 'x'", with the closest command, or top-level option, when one is close. */
static int unknown(const char *name) {
    const char *names[sizeof commands / sizeof commands[0] + 3];
    size_t n = 0;
    if (name[0] == '-') {
        names[n++] = "--help";
        names[n++] = "--version";
    } else {
        for (size_t i = 0; i < n_commands; ++i) {
            names[n++] = commands[i].name;
        }
        names[n++] = "help";
    }
    const char *closest = gj_cli_closest(name, strlen(name), names, n);
    fprintf(stderr, "gridjit: unknown %s '%s'", name[0] == '-' ? "option" : "command", name);
    if (closest) {
        fprintf(stderr, "; did you mean '%s'?", closest);
    }
    fprintf(stderr, "\nTry 'gridjit --help' for the list of commands.\n");
    return GJ_CLI_USAGE;
}

static const gj_cli_command *find_command(const char *name) {
    for (size_t i = 0; i < n_commands; ++i) {
        if (strcmp(commands[i].name, name) == 0) {
            return &commands[i];
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return GJ_CLI_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        /* "gridjit help COMMAND" is "gridjit COMMAND --help". */
        if (strcmp(name, "help") == 0 && argc > 2) {
            const gj_cli_command *command = find_command(argv[2]);
            if (!command) {
                return unknown(argv[2]);
            }
            char *help_argv[] = {argv[2], "--help", NULL};
            gj_cli_getopt_reset();
            return command->run(2, help_argv);
        }
        usage(stdout);
        return gj_cli_flush_stdout("--help");
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
        return version();
    }
    const gj_cli_command *command = find_command(name);
    if (!command) {
        return unknown(name);
    }
    gj_cli_getopt_reset();
    return command->run(argc - 1, argv + 1);
}
