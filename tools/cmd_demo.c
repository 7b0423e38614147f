/* gridjit demo: the whole pipeline on tiny-cuda-nn's default HashGrid configuration. */
#include "cli_gpu.h"
#include "cli_program.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const CMD = "demo";

/* tcnn's HashGrid defaults, D = 3. */
static const char DEMO_CONFIG[] = "{\"otype\": \"HashGrid\", \"n_levels\": 16, \"n_features_per_level\": 2, "
                                  "\"log2_hashmap_size\": 19, \"base_resolution\": 16, \"per_level_scale\": 2.0}";
#define DEMO_DIMS 3u

static void usage(void) {
    printf("Usage: gridjit demo [--arch ARCH] [--out-dir DIR]\n"
           "\n"
           "Runs the pipeline on tiny-cuda-nn's default HashGrid configuration (D = 3):\n"
           "  %s\n"
           "prints the level table, generates the CUDA source and writes it to\n"
           "DIR/encoding.cu, and says where the disk cache is. Where a GPU exists it makes a\n"
           "module for it, compiling its programs (listed with their times, or found in the\n"
           "disk cache), times a warm reload, initialises the parameters, runs forward and\n"
           "backward on 2^20 random points, compares a sample with the CPU reference and\n"
           "prints the timings. Without one it compiles the whole unit with NVRTC for ARCH,\n"
           "writes DIR/encoding.cubin and prints the compile time, cubin size and kernel\n"
           "names; its last lines say what was skipped (running the kernels, the check\n"
           "against the CPU reference) and why (exit status 0).\n"
           "\n"
           "Without NVRTC the compile step says 'skipped' and why, and the exit status is\n"
           "still 0 (generation worked); a compile error exits 1 with the compiler log.\n"
           "\n"
           "Options:\n"
           "  -a, --arch ARCH     target of the compile step without a GPU (default sm_90)\n"
           "  -o, --out-dir DIR   where to write (created if missing; default: a new directory\n"
           "                      $TMPDIR/gridjit-demo-XXXXXX, /tmp when TMPDIR is not set)\n"
           "  -h, --help          show this help\n",
           DEMO_CONFIG);
}

typedef struct demo_args {
    const char *arch;
    const char *out_dir;
} demo_args;

static int parse_args(int argc, char **argv, demo_args *args) {
    static const struct option options[] = {
        {"arch", required_argument, NULL, 'a'},
        {"out-dir", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, ":a:o:h", options, NULL)) != -1) {
        switch (opt) {
        case 'a': args->arch = optarg; break;
        case 'o': args->out_dir = optarg; break;
        case 'h': usage(); return -1;
        default: return gj_cli_bad_option(CMD, opt, argv, options);
        }
    }
    int rc = gj_cli_no_operands(CMD, argc, argv, options);
    if (rc == GJ_CLI_OK && args->out_dir && args->out_dir[0] == '\0') {
        rc = gj_cli_usage_error(CMD, "--out-dir: empty directory name");
    }
    return rc;
}

/* DIR/NAME, malloc()ed. */
static char *join(const char *dir, const char *name) {
    size_t size = strlen(dir) + strlen(name) + 2;
    char *path = malloc(size);
    if (path) {
        snprintf(path, size, "%s/%s", dir, name);
    }
    return path;
}

/* A new directory of our own for each run (mkdtemp: never another user's or an old run's). */
static char *default_out_dir(void) {
    const char *tmp = getenv("TMPDIR");
    char *dir = join(tmp && tmp[0] ? tmp : "/tmp", "gridjit-demo-XXXXXX");
    if (dir && !mkdtemp(dir)) {
        gj_cli_error(CMD, "cannot create a directory %s: %s (set TMPDIR, or give --out-dir)", dir, strerror(errno));
        free(dir);
        return NULL;
    }
    return dir;
}

static size_t count_lines(const char *text, size_t length) {
    size_t lines = 0;
    for (size_t i = 0; i < length; ++i) {
        lines += text[i] == '\n';
    }
    return lines + (length > 0 && text[length - 1] != '\n');
}

static void section(const char *title) {
    printf("\n== %s\n", title);
}

/* Generates the default translation unit and writes it to out_dir/encoding.cu. */
static int generate(gj_context *ctx, const gj_encoding *enc, const char *out_dir) {
    section("Source");
    char *source = NULL;
    size_t length = 0;
    gj_codegen_options opts;
    gj_codegen_options_init(&opts); /* the defaults: every pass, kernels included */
    gj_status status = gj_encoding_generate(ctx, enc, &opts, &source, &length);
    if (status != GJ_OK) {
        return gj_cli_status_error(CMD, ctx, status, "cannot generate the source");
    }
    char *path = join(out_dir, "encoding.cu");
    int rc = path ? gj_cli_write_file_atomic(CMD, path, source, length) : GJ_CLI_FAILURE;
    if (rc == GJ_CLI_OK) {
        printf("written    %s\n", path);
        printf("size       %zu bytes, %zu lines\n", length, count_lines(source, length));
    }
    free(path);
    gj_free(source);
    return rc;
}

static void print_program(const gj_program *prog, const char *path) {
    size_t size = 0;
    gj_program_binary(prog, &size);
    printf("arch       %s\n", gj_program_arch(prog));
    printf("time       %.1f ms (%s)\n", gj_program_compile_ms(prog),
           gj_cli_cache_phrase(gj_program_cache_status(prog), GJ_CLI_CACHE_HOW));
    printf("cubin      %zu bytes, written to %s\n", size, path);
    printf("kernels    %zu\n", gj_program_n_kernels(prog));
    for (size_t i = 0; i < gj_program_n_kernels(prog); ++i) {
        printf("  %s -> %s\n", gj_program_kernel_name(prog, i), gj_program_lowered_name(prog, i));
    }
}

/* What the run left out, for the closing lines: why (empty when it was done). */
typedef struct demo_skipped {
    char run[512];     /* running the kernels and the CPU check: no GPU */
    const char *no_gpu; /* the same in a few words (the probe's status) */
    char compile[512]; /* compiling without a GPU: no NVRTC */
    const char *binary; /* the file compile() wrote, or NULL */
} demo_skipped;

/* Compiles the whole unit to a cubin. Without NVRTC it reports "skipped" and succeeds: the
 * demo has still shown the generated source. */
static int compile(gj_context *ctx, const gj_encoding *enc, const char *arch, const char *out_dir,
                   demo_skipped *skipped) {
    section("Compile (NVRTC)");
    printf("no GPU here (%s): compiling the whole unit for %s, as `gridjit compile` does\n", skipped->no_gpu,
           arch);
    gj_program *prog = NULL;
    fflush(stdout); /* the compile takes a moment: show what came before */
    gj_codegen_options opts;
    gj_codegen_options_init(&opts); /* the same source as generate() wrote */
    const gj_status status = gj_cli_compile_program(ctx, enc, &opts, NULL, arch, &prog);
    if (status == GJ_ERROR_NO_NVRTC) {
        snprintf(skipped->compile, sizeof skipped->compile, "%s (%s)", gj_status_message(status),
                 gj_context_errmsg(ctx));
        printf("skipped: %s\n", skipped->compile);
        return GJ_CLI_OK;
    }
    if (status != GJ_OK) {
        return gj_cli_status_error(CMD, ctx, status, NULL);
    }
    size_t size = 0;
    const void *binary = gj_program_binary(prog, &size);
    skipped->binary = gj_program_kind(prog) == GJ_BINARY_PTX ? "encoding.ptx" : "encoding.cubin";
    char *path = join(out_dir, skipped->binary);
    int rc = path ? gj_cli_write_file_atomic(CMD, path, binary, size) : GJ_CLI_FAILURE;
    if (rc == GJ_CLI_OK) {
        print_program(prog, path);
    } else {
        skipped->binary = NULL;
    }
    free(path);
    gj_program_destroy(prog);
    return rc;
}

/* The closing lines: where the files are, then what was not done and why (last, so that a
 * run without a GPU does not end as if it had shown everything). */
static void closing(const char *out_dir, const demo_skipped *skipped) {
    section("Done");
    printf("files      %s (encoding.cu%s%s)\n", out_dir, skipped->binary ? ", " : "",
           skipped->binary ? skipped->binary : "");
    if (skipped->compile[0]) {
        printf("skipped    compiling: %s\n", skipped->compile);
    }
    if (skipped->run[0]) {
        printf("skipped    running the kernels and checking them against the CPU reference: no GPU here (%s)\n",
               skipped->run);
    }
}

/* Where compiled programs go, and how to move or turn it off. */
static void cache_note(gj_context *ctx) {
    const char *dir = gj_context_cache_dir(ctx);
    if (dir) {
        printf("disk cache %s (GRIDJIT_CACHE_DIR moves it, GRIDJIT_CACHE_DISABLE=1 turns it off,\n"
               "           `gridjit cache stats` and `gridjit cache clear` look after it)\n",
               dir);
    } else {
        printf("disk cache off or not usable: every compile starts from scratch\n");
    }
}

static int demo(const demo_args *args, const char *out_dir) {
    gj_context *ctx = NULL;
    gj_encoding *enc = NULL;
    int rc = gj_cli_open_json(CMD, DEMO_CONFIG, DEMO_DIMS, &ctx, &enc);
    if (rc != GJ_CLI_OK) {
        return rc;
    }
    printf("gridjit %s demo: tiny-cuda-nn's default HashGrid, %u input dimensions\n", gj_version_string(), DEMO_DIMS);
    printf("config     %s\n\n", DEMO_CONFIG);
    rc = gj_cli_print_encoding(stdout, enc);
    if (rc != GJ_CLI_OK) {
        gj_cli_error(CMD, "cannot print the hyperparameters (bad JSON from the library)");
    } else {
        rc = generate(ctx, enc, out_dir);
    }
    if (rc == GJ_CLI_OK) {
        cache_note(ctx);
        /* With a GPU: its module; without one: the whole unit, for the architecture asked. */
        gj_cli_gpu gpu;
        gj_status probe = GJ_OK;
        demo_skipped skipped = {.binary = NULL};
        gj_cli_gpu_open(CMD, ctx, &gpu, &probe);
        if (probe != GJ_OK) {
            skipped.no_gpu = gj_status_message(probe);
            snprintf(skipped.run, sizeof skipped.run, "%s: %s", skipped.no_gpu, gj_context_errmsg(ctx));
        }
        rc = probe == GJ_OK ? gj_cli_demo_gpu(&gpu, enc)
                            : compile(ctx, enc, args->arch ? args->arch : "sm_90", out_dir, &skipped);
        if (rc == GJ_CLI_OK) {
            closing(out_dir, &skipped);
        }
    }
    gj_cli_close(ctx, enc);
    int flushed = gj_cli_flush_stdout(CMD);
    return rc != GJ_CLI_OK ? rc : flushed;
}

int gj_cli_demo(int argc, char **argv) {
    demo_args args = {0};
    int rc = parse_args(argc, argv, &args);
    if (rc == -1) {
        return gj_cli_flush_stdout(CMD);
    }
    if (rc != GJ_CLI_OK) {
        return rc;
    }
    char *out_dir = args.out_dir ? strdup(args.out_dir) : default_out_dir();
    if (!out_dir) {
        gj_cli_error(CMD, "out of memory");
        return GJ_CLI_FAILURE;
    }
    rc = gj_cli_make_dirs(CMD, out_dir);
    /* Absolute, so that the printed paths can be opened from anywhere. */
    char *absolute = rc == GJ_CLI_OK ? realpath(out_dir, NULL) : NULL;
    if (rc == GJ_CLI_OK) {
        rc = demo(&args, absolute ? absolute : out_dir);
    }
    free(absolute);
    free(out_dir);
    return rc;
}
