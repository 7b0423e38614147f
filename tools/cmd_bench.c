/* gridjit bench: kernel timings of the passes with CUDA events, and the compile time. */
#include "bench_inputs.h"
#include "bench_network.h"
#include "cli_gpu.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const CMD = "bench";

#define DEFAULT_POINTS (1u << 21)
#define MIN_ITERATIONS 20
#define WARMUP 5

enum {
    PASS_FORWARD = 1 << 0,        /* y */
    PASS_FORWARD_DYDX = 1 << 1,   /* y and dy/dx */
    PASS_BACKWARD = 1 << 2,       /* dL/dparams */
    PASS_BACKWARD_INPUT = 1 << 3, /* dL/dparams and dL/dx, one launch */
    PASS_STEP = 1 << 4,           /* forward, then backward with dL/dx */
    PASS_ALL = (1 << 5) - 1
};

static const struct {
    const char *name;
    unsigned bit;
} pass_names[] = {
    {"forward", PASS_FORWARD},
    {"forward_dydx", PASS_FORWARD_DYDX},
    {"backward", PASS_BACKWARD},
    {"backward_input", PASS_BACKWARD_INPUT},
    {"step", PASS_STEP},
};
#define N_PASSES (sizeof pass_names / sizeof pass_names[0])

static void usage(void) {
    printf("Usage: gridjit bench --config C [--dims D] [--points N] [--pass P] [--json]\n"
           "                     [--block B] [--ppt P] [--order level|point] [--layout soa|aos]\n"
           "                     [--levels-per-thread G] [--iterations K] [--gradients fp32|auto]\n"
           "                     [--calls C] [--input uniform|rays|file:PATH] [--rays R] [--samples S]\n"
           "                     [--seed X] [--dx-from dydx|compact|params]\n"
           "       gridjit bench --config NETWORK_OR_MODEL --dims IN [--output-dims OUT] [--points N]\n"
           "                     [--iterations K] [--output fp32|fp16] [--json]\n"
           "\n"
           "Times the generated kernels on the GPU: N points (by default uniform random in\n"
           "[0,1)^D from a fixed seed; see --input), parameters from gj_init_params, then per\n"
           "pass a warm-up and K back-to-back launches, each between two CUDA events; prints\n"
           "the median time\n"
           "and the points per second. The compile time (generate, NVRTC, load) is measured\n"
           "with CUDA_CACHE_DISABLE=1 and gridjit's disk cache off, so it is a cold compile.\n"
           "\n"
           "A network or model configuration is timed through its network module: see\n"
           "`gridjit bench --config NETWORK --help`, docs/cli.md.\n"
           "\n"
           "Passes:\n"
           "  forward         y\n"
           "  forward_dydx    y and dy/dx\n"
           "  backward        dL/dparams (overwrite: includes zeroing the gradient)\n"
           "  backward_input  dL/dparams and dL/dx (see --dx-from)\n"
           "  step            forward, then backward with dL/dparams and dL/dx (with\n"
           "                  --dx-from dydx the forward writes dy/dx, as tiny-cuda-nn's step)\n"
           "  all             every one of the above (default)\n"
           "\n"
           "Options:\n"
           "  -c, --config C       configuration: a JSON file, or inline JSON starting with '{'\n"
           "  -d, --dims D         number of input dimensions (default: the configuration's, else 3)\n"
           "  -P, --points N       points per launch (default 2097152 = 2^21)\n"
           "  -p, --pass P         a pass above, or a comma-separated list of them\n"
           "  -j, --json           print one JSON object: {\"config\", \"n_dims\", \"n_points\",\n"
           "                       \"device\", \"block\", \"points_per_thread\", \"order\", \"layout\",\n"
           "                       \"gradients\", \"dx_from\", \"compile_ms\",\n"
           "                       \"iterations\", \"passes\": {PASS: {\"median_ms\", \"points_per_s\"}},\n"
           "                       \"calls\": {\"count\", \"forward\": {\"host_us\", \"wall_us\"},\n"
           "                       \"backward\": {...}} (with --calls C > 0)}\n"
           "  -b, --block B        threads per block of the kernels (default 256)\n"
           "  -t, --ppt P          points per thread (default 1)\n"
           "      --order O        level (level-major, default) or point (point-major)\n"
           "  -l, --layout L       soa (feature-major outputs and dL/dy, the encoding's own layout,\n"
           "                       as tiny-cuda-nn's kernels; default) or aos (point-major)\n"
           "      --levels-per-thread G\n"
           "                       level-major kernels: levels each thread handles per point\n"
           "                       (default 0: chosen per pass, layout and table sizes,\n"
           "                       docs/runtime.md)\n"
           "  -i, --iterations K   timed launches per pass, at least %d (default 50)\n"
           "      --gradients G    fp32: dL/dparams accumulated in fp32 (a float array) whatever\n"
           "                       the precision; auto (default): as the precision says\n"
           "      --calls C        also time C back-to-back gj_forward and gj_backward calls (after\n"
           "                       a warm-up) on the host clock: microseconds per call until the\n"
           "                       last call returns (host) and until the GPU is done (wall); with\n"
           "                       a tiny --points this is the launch overhead (default 1000, 0: off)\n"
           "      --input I        uniform (default): N points uniform in [0,1)^D;\n"
           "                       rays: R rays x S samples, each ray from outside the domain\n"
           "                       through a random point near its centre, its samples\n"
           "                       stratified between entry and exit and consecutive in memory\n"
           "                       (sorted along the ray, as NeRF-style training feeds them);\n"
           "                       file:PATH: float32 points, D per point, little-endian\n"
           "      --rays R         rays of --input rays (default 8192)\n"
           "      --samples S      samples per ray (default 256; R x S replaces --points)\n"
           "      --seed X         seed of the random inputs (default fixed)\n"
           "      --dx-from F      how backward_input and step get dL/dx: dydx (default, as\n"
           "                       tiny-cuda-nn's): from the dy/dx of a forward pass (step: its\n"
           "                       own; backward_input: one made before timing), a streaming\n"
           "                       launch after the dL/dparams kernels; compact: the same from\n"
           "                       the forward's compact dy/dx (dy_dx_compact, half the bytes);\n"
           "                       params: fused into the gradient kernels, from the parameters\n"
           "  -h, --help           show this help\n",
           MIN_ITERATIONS);
}

/* Where backward_input and step take dL/dx from (--dx-from). */
typedef enum dx_source { DX_FROM_DYDX, DX_FROM_COMPACT, DX_FROM_PARAMS } dx_source;
static const char *const dx_source_names[] = {"dydx", "compact", "params"};

typedef struct bench_args {
    const char *config, *dims;
    uint32_t n_points, block, ppt, iterations, levels_per_thread;
    gj_bench_input input;
    unsigned passes;
    gj_order order;
    gj_data_layout layout;
    int json;
    int gradients_fp32;
    dx_source dx_from; /* --dx-from */
    uint32_t calls; /* --calls: host timing of back-to-back calls; 0: off */
} bench_args;

static int parse_pass_list(const char *text, unsigned *passes) {
    *passes = 0;
    const char *p = text;
    while (*p) {
        const size_t len = strcspn(p, ",");
        unsigned bit = 0;
        if (len == 3 && strncmp(p, "all", 3) == 0) {
            bit = PASS_ALL;
        }
        for (size_t i = 0; i < N_PASSES && !bit; ++i) {
            if (strlen(pass_names[i].name) == len && strncmp(p, pass_names[i].name, len) == 0) {
                bit = pass_names[i].bit;
            }
        }
        if (!bit) {
            return gj_cli_usage_error(CMD, "--pass: unknown pass '%.*s' (forward, forward_dydx, backward, "
                                           "backward_input, step or all)", (int)len, p);
        }
        *passes |= bit;
        p += len + (p[len] == ',');
    }
    return *passes ? GJ_CLI_OK : gj_cli_usage_error(CMD, "--pass: empty");
}

static int parse_order(const char *text, gj_order *order) {
    if (strcmp(text, "level") == 0) {
        *order = GJ_ORDER_LEVEL_MAJOR;
    } else if (strcmp(text, "point") == 0) {
        *order = GJ_ORDER_POINT_MAJOR;
    } else {
        return gj_cli_usage_error(CMD, "--order: must be level or point (got '%s')", text);
    }
    return GJ_CLI_OK;
}

static int parse_layout(const char *text, gj_data_layout *layout) {
    if (strcmp(text, "soa") == 0) {
        *layout = GJ_LAYOUT_SOA;
    } else if (strcmp(text, "aos") == 0) {
        *layout = GJ_LAYOUT_AOS;
    } else {
        return gj_cli_usage_error(CMD, "--layout: must be soa or aos (got '%s')", text);
    }
    return GJ_CLI_OK;
}

/* Long options without a short form (--order: -o is where output goes in the other
 * commands, docs/cli.md). */
enum {
    OPT_ORDER = 256,
    OPT_LEVELS_PER_THREAD,
    OPT_INPUT,
    OPT_RAYS,
    OPT_SAMPLES,
    OPT_SEED,
    OPT_GRADIENTS,
    OPT_CALLS,
    OPT_DX_FROM
};

static int parse_dx_from(const char *text, dx_source *from) {
    for (int s = DX_FROM_DYDX; s <= DX_FROM_PARAMS; ++s) {
        if (strcmp(text, dx_source_names[s]) == 0) {
            *from = (dx_source)s;
            return GJ_CLI_OK;
        }
    }
    return gj_cli_usage_error(CMD, "--dx-from: must be dydx, compact or params (got '%s')", text);
}

static int parse_seed(const char *text, uint64_t *seed) {
    char *end = NULL;
    errno = 0;
    const unsigned long long value = strtoull(text, &end, 0);
    if (errno || !*text || *end || text[0] == '-') {
        return gj_cli_usage_error(CMD, "--seed: expected an unsigned 64-bit number (got '%s')", text);
    }
    *seed = value;
    return GJ_CLI_OK;
}

static int parse_args(int argc, char **argv, bench_args *args) {
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'}, {"dims", required_argument, NULL, 'd'},
        {"points", required_argument, NULL, 'P'}, {"pass", required_argument, NULL, 'p'},
        {"json", no_argument, NULL, 'j'},         {"block", required_argument, NULL, 'b'},
        {"ppt", required_argument, NULL, 't'},    {"order", required_argument, NULL, OPT_ORDER},
        {"iterations", required_argument, NULL, 'i'}, {"help", no_argument, NULL, 'h'},
        {"layout", required_argument, NULL, 'l'},
        {"levels-per-thread", required_argument, NULL, OPT_LEVELS_PER_THREAD},
        {"input", required_argument, NULL, OPT_INPUT}, {"rays", required_argument, NULL, OPT_RAYS},
        {"samples", required_argument, NULL, OPT_SAMPLES}, {"seed", required_argument, NULL, OPT_SEED},
        {"gradients", required_argument, NULL, OPT_GRADIENTS},
        {"calls", required_argument, NULL, OPT_CALLS},
        {"dx-from", required_argument, NULL, OPT_DX_FROM},
        {NULL, 0, NULL, 0},
    };
    int opt, rc = GJ_CLI_OK;
    while (rc == GJ_CLI_OK && (opt = getopt_long(argc, argv, ":c:d:P:p:jb:t:i:l:h", options, NULL)) != -1) {
        switch (opt) {
        case 'c': args->config = optarg; break;
        case 'd': args->dims = optarg; break;
        case 'P': rc = gj_cli_parse_u32(CMD, "--points", optarg, 1, UINT32_MAX, &args->n_points); break;
        case 'p': rc = parse_pass_list(optarg, &args->passes); break;
        case 'j': args->json = 1; break;
        case 'b': rc = gj_cli_parse_u32(CMD, "--block", optarg, 32, 1024, &args->block); break;
        case 't': rc = gj_cli_parse_u32(CMD, "--ppt", optarg, 1, 16, &args->ppt); break;
        case OPT_ORDER: rc = parse_order(optarg, &args->order); break;
        case 'l': rc = parse_layout(optarg, &args->layout); break;
        case 'i': rc = gj_cli_parse_u32(CMD, "--iterations", optarg, MIN_ITERATIONS, 100000, &args->iterations); break;
        case OPT_LEVELS_PER_THREAD:
            rc = gj_cli_parse_u32(CMD, "--levels-per-thread", optarg, 0, 128, &args->levels_per_thread);
            break;
        case OPT_INPUT: rc = gj_bench_parse_input(CMD, optarg, &args->input); break;
        case OPT_RAYS: rc = gj_cli_parse_u32(CMD, "--rays", optarg, 1, UINT32_MAX, &args->input.rays); break;
        case OPT_SAMPLES: rc = gj_cli_parse_u32(CMD, "--samples", optarg, 1, UINT32_MAX, &args->input.samples); break;
        case OPT_SEED: rc = parse_seed(optarg, &args->input.seed); break;
        case OPT_GRADIENTS: rc = gj_cli_parse_gradients(CMD, optarg, &args->gradients_fp32); break;
        case OPT_CALLS: rc = gj_cli_parse_u32(CMD, "--calls", optarg, 0, 1000000, &args->calls); break;
        case OPT_DX_FROM: rc = parse_dx_from(optarg, &args->dx_from); break;
        case 'h': usage(); return -1;
        default: return gj_cli_bad_option(CMD, opt, argv, options);
        }
    }
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_no_operands(CMD, argc, argv, options);
    }
    if (rc == GJ_CLI_OK && !args->config) {
        rc = gj_cli_usage_error(CMD, "--config is required (a file or inline JSON)");
    }
    return rc;
}

/* ------------------------------------------------------------------ data */

typedef struct bench_buffers {
    void *x, *params, *y, *dy_dx, *dl_dy, *dparams, *dx;
    /* The dy/dx that backward_input and step take dL/dx from (--dx-from dydx), or its compact
     * form (--dx-from compact); both NULL: from the parameters. */
    float *dx_from;
    void *dx_from_compact;
} bench_buffers;

/* count floats uniform in [lo, hi) from their own fixed seed: the same data every run. */
static int upload_random(gj_cli_gpu *gpu, size_t count, uint64_t seed, float lo, float hi, gj_precision precision,
                         void **ptr) {
    float *host = malloc(count * sizeof(float));
    if (!host) {
        gj_cli_error(CMD, "out of memory (%zu floats)", count);
        return GJ_CLI_FAILURE;
    }
    uint64_t state = seed;
    gj_cli_random_floats(&state, host, count, lo, hi);
    int rc = gj_cli_gpu_upload(gpu, host, count, precision, ptr);
    free(host);
    return rc;
}

/* The points of args->input, uploaded. */
static int upload_points(gj_cli_gpu *gpu, const bench_args *args, uint32_t n_dims, void **ptr) {
    const size_t count = (size_t)args->n_points * n_dims;
    float *host = malloc(count * sizeof(float));
    if (!host) {
        gj_cli_error(CMD, "out of memory (%zu floats)", count);
        return GJ_CLI_FAILURE;
    }
    int rc = gj_bench_make_points(CMD, &args->input, n_dims, args->n_points, host);
    rc = rc ? rc : gj_cli_gpu_upload(gpu, host, count, GJ_PRECISION_FP32, ptr);
    free(host);
    return rc;
}

static int prepare(gj_cli_gpu *gpu, gj_module *m, const gj_encoding *enc, const bench_args *args, bench_buffers *b) {
    const gj_precision precision = gj_encoding_precision(enc);
    const size_t n = args->n_points, d = gj_encoding_n_dims(enc), width = gj_module_output_width(m);
    const size_t element = gj_module_element_size(m), n_out = gj_encoding_n_output_dims(enc);
    size_t dydx = 0;
    gj_cli_mul_size(n_out * n, d, sizeof(float), &dydx);
    int rc = upload_points(gpu, args, (uint32_t)d, &b->x);
    rc = rc ? rc : gj_cli_gpu_alloc(gpu, (size_t)gj_module_n_params(m) * element, &b->params);
    rc = rc ? rc : gj_cli_gpu_alloc(gpu, n * width * element, &b->y);
    rc = rc ? rc : upload_random(gpu, n * width, 0xD1B54A32D192ED03ull, -1.0f, 1.0f, precision, &b->dl_dy);
    rc = rc ? rc : gj_cli_gpu_alloc(gpu, (size_t)gj_module_n_params(m) * gj_module_gradient_element_size(m), &b->dparams);
    rc = rc ? rc : gj_cli_gpu_alloc(gpu, n * d * sizeof(float), &b->dx);
    const unsigned dx_passes = (unsigned)(PASS_BACKWARD_INPUT | PASS_STEP);
    if (rc == GJ_CLI_OK && (args->passes & (PASS_FORWARD_DYDX | (args->dx_from == DX_FROM_DYDX ? dx_passes : 0u)))) {
        rc = gj_cli_gpu_alloc(gpu, dydx, &b->dy_dx);
    }
    if (rc == GJ_CLI_OK && args->dx_from == DX_FROM_COMPACT && (args->passes & dx_passes)) {
        rc = gj_cli_gpu_alloc(gpu, dydx / 2, &b->dx_from_compact);
    }
    if (rc == GJ_CLI_OK) {
        gj_init_desc init;
        gj_init_desc_init(&init);
        init.params = b->params;
        init.seed = 1337;
        gj_status status = gj_init_params(m, NULL, &init);
        rc = status == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(CMD, gpu->ctx, status, "cannot initialise parameters");
    }
    if (rc == GJ_CLI_OK && args->dx_from == DX_FROM_DYDX) {
        b->dx_from = b->dy_dx;
    }
    if (rc == GJ_CLI_OK && (b->dx_from || b->dx_from_compact)) { /* what backward_input reads: a forward pass's */
        gj_forward_desc f;
        gj_forward_desc_init(&f);
        f.n = n;
        f.x = b->x;
        f.params = b->params;
        f.dy_dx = b->dx_from;
        f.dy_dx_compact = b->dx_from_compact;
        gj_status status = gj_forward(m, NULL, &f);
        rc = status == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(CMD, gpu->ctx, status, "cannot compute dy/dx");
    }
    return rc;
}

/* ---------------------------------------------------------------- timing */

/* b->dx_from (or b->dx_from_compact) is set when backward_input and step take dL/dx from
 * dy/dx (--dx-from dydx, compact). */
static gj_status run_pass(gj_module *m, unsigned pass, uint64_t n, gj_data_layout layout, const bench_buffers *b) {
    gj_forward_desc f;
    gj_forward_desc_init(&f);
    f.n = n;
    f.x = b->x;
    f.params = b->params;
    f.y = b->y;
    f.y_layout = layout;
    gj_backward_desc g;
    gj_backward_desc_init(&g);
    g.n = n;
    g.x = b->x;
    g.params = b->params;
    g.dL_dy = b->dl_dy;
    g.dL_dy_layout = layout;
    g.dL_dparams = b->dparams;
    switch (pass) {
    case PASS_FORWARD: return gj_forward(m, NULL, &f);
    case PASS_FORWARD_DYDX: f.dy_dx = b->dy_dx; return gj_forward(m, NULL, &f);
    case PASS_BACKWARD: return gj_backward(m, NULL, &g);
    case PASS_BACKWARD_INPUT:
        g.dL_dx = b->dx;
        g.dy_dx = b->dx_from;
        g.dy_dx_compact = b->dx_from_compact;
        return gj_backward(m, NULL, &g);
    default: {
        g.dL_dx = b->dx;
        f.dy_dx = b->dx_from;
        g.dy_dx = b->dx_from;
        f.dy_dx_compact = b->dx_from_compact;
        g.dy_dx_compact = b->dx_from_compact;
        gj_status status = gj_forward(m, NULL, &f);
        return status == GJ_OK ? gj_backward(m, NULL, &g) : status;
    }
    }
}

static int compare_floats(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Median of iterations launches, each timed between its own pair of events. */
static int time_pass(gj_cli_gpu *gpu, gj_module *m, unsigned pass, const bench_args *args, const bench_buffers *b,
                     double *median_ms) {
    const uint32_t k = args->iterations;
    gj_event **events = calloc(k + 1, sizeof *events);
    float *ms = calloc(k, sizeof *ms);
    gj_status status = events && ms ? GJ_OK : GJ_ERROR_OUT_OF_MEMORY;
    for (uint32_t i = 0; status == GJ_OK && i <= k; ++i) {
        status = gj_event_create(gpu->ctx, &events[i]);
    }
    for (int i = 0; status == GJ_OK && i < WARMUP; ++i) {
        status = run_pass(m, pass, args->n_points, args->layout, b);
    }
    if (status == GJ_OK) {
        status = gj_stream_synchronize(gpu->ctx, NULL);
    }
    status = status ? status : gj_event_record(events[0], NULL);
    for (uint32_t i = 0; status == GJ_OK && i < k; ++i) {
        status = run_pass(m, pass, args->n_points, args->layout, b);
        status = status ? status : gj_event_record(events[i + 1], NULL);
    }
    for (uint32_t i = 0; status == GJ_OK && i < k; ++i) {
        status = gj_event_elapsed_ms(events[i], events[i + 1], &ms[i]);
    }
    if (status == GJ_OK) {
        qsort(ms, k, sizeof *ms, compare_floats);
        *median_ms = k % 2 ? ms[k / 2] : 0.5 * ((double)ms[k / 2 - 1] + (double)ms[k / 2]);
    }
    for (uint32_t i = 0; events && i <= k; ++i) {
        gj_event_destroy(events[i]);
    }
    free(events);
    free(ms);
    return status == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(CMD, gpu->ctx, status, "timing failed");
}

/* ------------------------------------------------------- host time per call */

/* What a caller's thread pays per call, the launch overhead at a small batch: per pass
 * (forward, backward), microseconds per call until the last of --calls back-to-back calls
 * returns (host) and until the stream has finished them (wall). */
typedef struct call_timing {
    double host_us[2], wall_us[2];
} call_timing;

static int time_calls(gj_cli_gpu *gpu, gj_module *m, const bench_args *args, const bench_buffers *b,
                      call_timing *t) {
    static const unsigned passes[2] = {PASS_FORWARD, PASS_BACKWARD};
    gj_status status = GJ_OK;
    for (int p = 0; p < 2 && status == GJ_OK; ++p) {
        for (int i = 0; status == GJ_OK && i < 20; ++i) { /* warm-up: programs loaded, caches filled */
            status = run_pass(m, passes[p], args->n_points, args->layout, b);
        }
        status = status ? status : gj_stream_synchronize(gpu->ctx, NULL);
        const double start = gj_cli_now_ms();
        for (uint32_t i = 0; status == GJ_OK && i < args->calls; ++i) {
            status = run_pass(m, passes[p], args->n_points, args->layout, b);
        }
        const double returned = gj_cli_now_ms();
        status = status ? status : gj_stream_synchronize(gpu->ctx, NULL);
        t->host_us[p] = (returned - start) * 1e3 / args->calls;
        t->wall_us[p] = (gj_cli_now_ms() - start) * 1e3 / args->calls;
    }
    return status == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(CMD, gpu->ctx, status, "timing the calls failed");
}

/* ----------------------------------------------------------------- output */

typedef struct bench_result {
    double compile_ms;
    double median_ms[N_PASSES];
    int measured[N_PASSES];
    call_timing calls; /* with args->calls > 0 */
} bench_result;

static int print_text(const bench_args *args, const gj_cli_gpu *gpu, const gj_encoding *enc, const bench_result *r) {
    char levels[32] = "automatic";
    if (args->levels_per_thread) {
        snprintf(levels, sizeof levels, "%u", args->levels_per_thread);
    }
    printf("gridjit bench on %s (%s): N = %u %s points, D = %u, %s%s, block %u, %u point%s per thread, %s-major, "
           "levels per thread %s, %s outputs, dL/dx from %s\n",
           gpu->info.device_name, gpu->info.arch, args->n_points, gj_bench_input_name(args->input.kind),
           gj_encoding_n_dims(enc), gj_encoding_precision(enc) == GJ_PRECISION_FP16 ? "fp16" : "fp32",
           args->gradients_fp32 ? " (fp32 gradients)" : "", args->block, args->ppt, args->ppt == 1 ? "" : "s",
           args->order == GJ_ORDER_LEVEL_MAJOR ? "level" : "point", levels, args->layout == GJ_LAYOUT_SOA ? "SoA" : "AoS",
           args->dx_from == DX_FROM_PARAMS ? "the parameters" : args->dx_from == DX_FROM_COMPACT ? "compact dy/dx" : "dy/dx");
    printf("compile          %10.1f ms (generate + NVRTC + load, CUDA_CACHE_DISABLE=1)\n", r->compile_ms);
    printf("%-16s %10s %14s   (median of %u launches)\n", "pass", "ms", "points/s", args->iterations);
    for (size_t i = 0; i < N_PASSES; ++i) {
        if (r->measured[i]) {
            printf("%-16s %10.4f %14.4g\n", pass_names[i].name, r->median_ms[i],
                   (double)args->n_points / (r->median_ms[i] * 1e-3));
        }
    }
    if (args->calls) {
        printf("per call         forward %.2f us host, %.2f us wall; backward %.2f us host, %.2f us wall "
               "(%u calls of %u points)\n",
               r->calls.host_us[0], r->calls.wall_us[0], r->calls.host_us[1], r->calls.wall_us[1], args->calls,
               args->n_points);
    }
    return GJ_CLI_OK;
}

static int add_number(cJSON *object, const char *key, double value, const char *format) {
    char text[64];
    snprintf(text, sizeof text, format, value);
    return cJSON_AddRawToObject(object, key, text) != NULL;
}

/* "input": {"kind", and "rays", "samples" for rays, "path" for a file, "seed"}. */
static int add_input(cJSON *root, const gj_bench_input *input) {
    cJSON *object = cJSON_AddObjectToObject(root, "input");
    int ok = object && cJSON_AddStringToObject(object, "kind", gj_bench_input_name(input->kind));
    if (ok && input->kind == GJ_BENCH_INPUT_RAYS) {
        ok = add_number(object, "rays", input->rays, "%.0f") && add_number(object, "samples", input->samples, "%.0f");
    }
    if (ok && input->kind == GJ_BENCH_INPUT_FILE) {
        ok = cJSON_AddStringToObject(object, "path", input->path) != NULL;
    }
    if (ok && input->kind != GJ_BENCH_INPUT_FILE) {
        char seed[32];
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)input->seed);
        ok = cJSON_AddRawToObject(object, "seed", seed) != NULL;
    }
    return ok;
}

static int print_json(const bench_args *args, const gj_cli_gpu *gpu, const gj_encoding *enc, const bench_result *r) {
    char *config = gj_encoding_hyperparams(enc);
    cJSON *root = cJSON_CreateObject(), *passes = NULL;
    int ok = config && root && cJSON_AddRawToObject(root, "config", config) &&
             add_number(root, "n_dims", gj_encoding_n_dims(enc), "%.0f") &&
             add_number(root, "n_points", args->n_points, "%.0f") &&
             cJSON_AddStringToObject(root, "device", gpu->info.device_name) &&
             add_number(root, "block", args->block, "%.0f") && add_number(root, "points_per_thread", args->ppt, "%.0f") &&
             cJSON_AddStringToObject(root, "order", args->order == GJ_ORDER_LEVEL_MAJOR ? "level" : "point") &&
             cJSON_AddStringToObject(root, "layout", args->layout == GJ_LAYOUT_SOA ? "soa" : "aos") &&
             add_number(root, "levels_per_thread", args->levels_per_thread, "%.0f") && add_input(root, &args->input) &&
             cJSON_AddStringToObject(root, "gradients", args->gradients_fp32 ? "fp32" : "auto") &&
             cJSON_AddStringToObject(root, "dx_from", dx_source_names[args->dx_from]) &&
             add_number(root, "compile_ms", r->compile_ms, "%.3f") &&
             add_number(root, "iterations", args->iterations, "%.0f") &&
             (passes = cJSON_AddObjectToObject(root, "passes")) != NULL;
    for (size_t i = 0; ok && i < N_PASSES; ++i) {
        if (r->measured[i]) {
            cJSON *pass = cJSON_AddObjectToObject(passes, pass_names[i].name);
            ok = pass && add_number(pass, "median_ms", r->median_ms[i], "%.6f") &&
                 add_number(pass, "points_per_s", (double)args->n_points / (r->median_ms[i] * 1e-3), "%.6e");
        }
    }
    if (ok && args->calls) {
        cJSON *calls = cJSON_AddObjectToObject(root, "calls");
        ok = calls && add_number(calls, "count", args->calls, "%.0f");
        static const char *const names[2] = {"forward", "backward"};
        for (int p = 0; ok && p < 2; ++p) {
            cJSON *pass = cJSON_AddObjectToObject(calls, names[p]);
            ok = pass && add_number(pass, "host_us", r->calls.host_us[p], "%.3f") &&
                 add_number(pass, "wall_us", r->calls.wall_us[p], "%.3f");
        }
    }
    char *text = ok ? cJSON_Print(root) : NULL;
    int rc = GJ_CLI_FAILURE;
    if (text) {
        rc = gj_cli_write_stdout(CMD, text, strlen(text));
        rc = rc ? rc : gj_cli_write_stdout(CMD, "\n", 1);
    } else {
        gj_cli_error(CMD, "out of memory writing JSON");
    }
    cJSON_free(text);
    cJSON_Delete(root);
    gj_free(config);
    return rc;
}

/* ------------------------------------------------------------------ main */

static int bench(const bench_args *args, gj_context *ctx, const gj_encoding *enc) {
    gj_cli_gpu gpu;
    int rc = gj_cli_gpu_open(CMD, ctx, &gpu, NULL);
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = GJ_PASS_FORWARD | GJ_PASS_BACKWARD;
    opts.block_size = args->block;
    opts.points_per_thread = args->ppt;
    opts.order = args->order;
    opts.levels_per_thread = args->levels_per_thread;
    opts.gradients_fp32 = args->gradients_fp32;
    bench_result result;
    memset(&result, 0, sizeof result);
    gj_module *m = NULL;
    if (rc == GJ_CLI_OK) {
        const double start = gj_cli_now_ms();
        rc = gj_cli_gpu_module(&gpu, enc, &opts, NULL, &m);
        result.compile_ms = gj_cli_now_ms() - start;
    }
    bench_buffers buffers;
    memset(&buffers, 0, sizeof buffers);
    if (rc == GJ_CLI_OK) {
        rc = prepare(&gpu, m, enc, args, &buffers);
    }
    for (size_t i = 0; rc == GJ_CLI_OK && i < N_PASSES; ++i) {
        if (args->passes & pass_names[i].bit) {
            rc = time_pass(&gpu, m, pass_names[i].bit, args, &buffers, &result.median_ms[i]);
            result.measured[i] = rc == GJ_CLI_OK;
        }
    }
    if (rc == GJ_CLI_OK && args->calls) {
        rc = time_calls(&gpu, m, args, &buffers, &result.calls);
    }
    if (rc == GJ_CLI_OK) {
        rc = args->json ? print_json(args, &gpu, enc, &result) : print_text(args, &gpu, enc, &result);
    }
    gj_cli_gpu_close(&gpu);
    gj_module_destroy(m);
    return rc;
}

int gj_cli_bench(int argc, char **argv) {
    /* Cold compiles: the driver's JIT/NVRTC cubin cache (read when the driver loads) and
     * gridjit's disk cache (read when first used) are both off for this process. */
    setenv("CUDA_CACHE_DISABLE", "1", 1);
    setenv("GRIDJIT_CACHE_DISABLE", "1", 1);
    if (gj_cli_bench_is_network(argc, argv)) {
        return gj_cli_bench_network(argc, argv);
    }
    bench_args args = {.layout = GJ_LAYOUT_SOA, .n_points = DEFAULT_POINTS, .block = 256, .ppt = 1, .iterations = 50,
                       .passes = PASS_ALL, .order = GJ_ORDER_LEVEL_MAJOR, .levels_per_thread = 0, .calls = 1000,
                       .input = {.kind = GJ_BENCH_INPUT_UNIFORM, .rays = 8192, .samples = 256,
                                 .seed = 0x9E3779B97F4A7C15ull}};
    int rc = parse_args(argc, argv, &args);
    if (rc == -1) {
        return gj_cli_flush_stdout(CMD);
    }
    if (rc != GJ_CLI_OK) {
        return rc;
    }
    uint32_t n_dims = 0;
    rc = gj_cli_parse_dims(CMD, args.dims, &n_dims);
    gj_context *ctx = NULL;
    gj_encoding *enc = NULL;
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_open(CMD, args.config, n_dims, &ctx, &enc);
    }
    if (rc == GJ_CLI_OK) {
        rc = gj_bench_input_points(CMD, &args.input, gj_encoding_n_dims(enc), args.n_points, &args.n_points);
    }
    if (rc == GJ_CLI_OK) {
        rc = bench(&args, ctx, enc);
    }
    gj_cli_close(ctx, enc);
    int flushed = gj_cli_flush_stdout(CMD);
    return rc != GJ_CLI_OK ? rc : flushed;
}
