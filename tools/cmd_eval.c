/* gridjit eval: evaluates an encoding on raw float32 files, for debugging and for
 * cross-checking other implementations; a network's or model's configuration goes to
 * tools/eval_network.c. */
#include "cli_network.h"
#include "eval_files.h"
#include "eval_network.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const CMD = "eval";

static void usage(void) {
    printf("Usage: gridjit eval --config C [--dims D] --points P --params W [--dl-dy G]\n"
           "                    [--dl-ddldx H] [--max-level M] --out-dir DIR [--arch ARCH]\n"
           "       gridjit eval --config NETWORK_OR_MODEL [--dims D] [--output-dims OUT]\n"
           "                    --points P --params W [--dl-dy G] --out-dir DIR\n"
           "\n"
           "Runs the encoding (or the network, or the model: an encoding and its network)\n"
           "on the GPU over data files. Every file is raw little-endian float32, arrays\n"
           "point-major (x0 y0 z0 x1 ...):\n"
           "  P  N * D floats: the points (N is the size of P divided by 4 * D)\n"
           "  W  n_params floats: the parameters (rounded to fp16 when the precision is\n"
           "     fp16; a network's weights are fp16; a model's: the network's, then the\n"
           "     encoding's)\n"
           "  G  N * n_output_dims floats: dL/dy (an encoding's rounded likewise)\n"
           "  H  N * D floats: dL/d(dL/dx), for the backward-of-backward pass (encodings)\n"
           "Writes to DIR (each file atomically):\n"
           "  y.f32           N * n_output_dims   always\n"
           "  dparams.f32     n_params            with G: dL/dparams (in W's order)\n"
           "  dx.f32          N * D               with G: dL/dx\n"
           "  bb_dparams.f32  n_params            with G and H: backward of backward, dL/dparams\n"
           "  bb_ddldy.f32    N * n_output_dims   with G and H: dL/d(dL/dy)\n"
           "  bb_dx.f32       N * D               with G and H: dL/dx\n"
           "\n"
           "Options:\n"
           "  -c, --config C      configuration: a JSON file, or inline JSON starting with '{'\n"
           "  -d, --dims D        number of input dimensions (default: the configuration's, else\n"
           "                      3; a network alone's \"n_input_dims\")\n"
           "      --output-dims OUT  a network's or model's output width (default: the\n"
           "                      network object's \"n_output_dims\")\n"
           "  -P, --points P      the points file\n"
           "  -W, --params W      the parameters file\n"
           "  -G, --dl-dy G       the dL/dy file\n"
           "  -H, --dl-ddldx H    the dL/d(dL/dx) file (needs --dl-dy; encodings only)\n"
           "  -m, --max-level M   a number in [0, 1] for every point, or a file of N floats\n"
           "                      (default 1: all levels; encodings only)\n"
           "  -o, --out-dir DIR   where to write (created if missing)\n"
           "  -a, --arch ARCH     compile for ARCH (e.g. compute_90 for PTX) instead of the\n"
           "                      device's own architecture (encodings only)\n"
           "  -h, --help          show this help\n"
           "\n"
           "A network's or model's passes are its module's (docs/networks.md): inference\n"
           "without G; with G the forward for training, then the backward with dL/dinput.\n"
           "Needs a CUDA device; without one it says so and exits 1.\n");
}

typedef gj_cli_eval_args eval_args;

static int parse_args(int argc, char **argv, eval_args *args) {
    enum { OPT_OUTPUT_DIMS = 1000 };
    static const struct option options[] = {
        {"output-dims", required_argument, NULL, OPT_OUTPUT_DIMS},
        {"config", required_argument, NULL, 'c'},   {"dims", required_argument, NULL, 'd'},
        {"points", required_argument, NULL, 'P'},   {"params", required_argument, NULL, 'W'},
        {"dl-dy", required_argument, NULL, 'G'},    {"dl-ddldx", required_argument, NULL, 'H'},
        {"max-level", required_argument, NULL, 'm'}, {"out-dir", required_argument, NULL, 'o'},
        {"arch", required_argument, NULL, 'a'},     {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, ":c:d:P:W:G:H:m:o:a:h", options, NULL)) != -1) {
        switch (opt) {
        case 'c': args->config = optarg; break;
        case 'd': args->dims = optarg; break;
        case 'P': args->points = optarg; break;
        case 'W': args->params = optarg; break;
        case 'G': args->dl_dy = optarg; break;
        case 'H': args->dl_ddldx = optarg; break;
        case 'm': args->max_level = optarg; break;
        case 'o': args->out_dir = optarg; break;
        case 'a': args->arch = optarg; break;
        case OPT_OUTPUT_DIMS: args->output_dims = optarg; break;
        case 'h': usage(); return -1;
        default: return gj_cli_bad_option(CMD, opt, argv, options);
        }
    }
    int rc = gj_cli_no_operands(CMD, argc, argv, options);
    const char *missing = !args->config ? "--config" : !args->points ? "--points" : !args->params ? "--params"
                          : !args->out_dir ? "--out-dir" : NULL;
    if (rc == GJ_CLI_OK && missing) {
        rc = gj_cli_usage_error(CMD, "%s is required", missing);
    }
    if (rc == GJ_CLI_OK && args->dl_ddldx && !args->dl_dy) {
        rc = gj_cli_usage_error(CMD, "--dl-ddldx needs --dl-dy (the backward-of-backward pass takes both)");
    }
    if (rc == GJ_CLI_OK && args->out_dir[0] == '\0') {
        rc = gj_cli_usage_error(CMD, "--out-dir: empty directory name");
    }
    return rc;
}

/* ----------------------------------------------------------------- inputs */

typedef struct eval_data {
    uint32_t n_dims, n_out;
    uint64_t n_params;
    size_t n;                /* points */
    float *x, *params, *dl_dy, *dl_ddldx, *max_level_per_point;
    float max_level;
} eval_data;

static void free_data(eval_data *d) {
    free(d->x);
    free(d->params);
    free(d->dl_dy);
    free(d->dl_ddldx);
    free(d->max_level_per_point);
}

/* --max-level: a number in [0, 1], else the name of a file of N floats. */
static int read_max_level(const eval_args *args, eval_data *d) {
    d->max_level = 1.0f;
    if (!args->max_level) {
        return GJ_CLI_OK;
    }
    char *end = NULL;
    errno = 0;
    const float value = strtof(args->max_level, &end);
    if (end != args->max_level && *end == '\0' && errno == 0) {
        if (!(value >= 0.0f && value <= 1.0f)) {
            gj_cli_error(CMD, "--max-level: must be in [0, 1] (got %s)", args->max_level);
            return GJ_CLI_FAILURE;
        }
        d->max_level = value;
        return GJ_CLI_OK;
    }
    return gj_cli_eval_read_exact("--max-level", args->max_level, d->n, "N", &d->max_level_per_point);
}

static int read_inputs(const eval_args *args, const gj_encoding *enc, eval_data *d) {
    memset(d, 0, sizeof *d);
    d->n_dims = gj_encoding_n_dims(enc);
    d->n_out = gj_encoding_n_output_dims(enc);
    d->n_params = gj_encoding_n_params(enc);
    int rc = gj_cli_eval_read_points(args->points, d->n_dims, "D", &d->x, &d->n);
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_eval_read_exact("--params", args->params, (size_t)d->n_params, "n_params", &d->params);
    }
    size_t n_y = 0;
    rc = rc ? rc : gj_cli_eval_output_count(d->n, d->n_out, &n_y);
    if (rc == GJ_CLI_OK && args->dl_dy) {
        rc = gj_cli_eval_read_exact("--dl-dy", args->dl_dy, n_y, "N * n_output_dims", &d->dl_dy);
    }
    if (rc == GJ_CLI_OK && args->dl_ddldx) {
        rc = gj_cli_eval_read_exact("--dl-ddldx", args->dl_ddldx, d->n * d->n_dims, "N * D", &d->dl_ddldx);
    }
    if (rc == GJ_CLI_OK) {
        rc = read_max_level(args, d);
    }
    return rc;
}

/* ----------------------------------------------------------------- device */

typedef struct eval_device {
    void *x, *params, *max_level, *y, *dl_dy, *dparams, *dx, *dl_ddldx, *bb_dparams, *bb_ddldy, *bb_dx;
} eval_device;

static int upload(gj_cli_gpu *gpu, const eval_data *d, gj_precision precision, eval_device *dev) {
    const size_t n_x = d->n * d->n_dims, n_y = d->n * d->n_out;
    int rc = gj_cli_gpu_upload(gpu, d->x, n_x, GJ_PRECISION_FP32, &dev->x);
    rc = rc ? rc : gj_cli_gpu_upload(gpu, d->params, (size_t)d->n_params, precision, &dev->params);
    rc = rc ? rc : gj_cli_gpu_upload(gpu, d->max_level_per_point, d->max_level_per_point ? d->n : 0, GJ_PRECISION_FP32,
                                     &dev->max_level);
    rc = rc ? rc : gj_cli_gpu_alloc(gpu, n_y * (precision == GJ_PRECISION_FP16 ? 2 : 4), &dev->y);
    if (d->dl_dy) {
        rc = rc ? rc : gj_cli_gpu_upload(gpu, d->dl_dy, n_y, precision, &dev->dl_dy);
        /* Zeroed so that N = 0, which launches nothing, still gives zero gradients. */
        rc = rc ? rc : gj_cli_gpu_zeros(gpu, (size_t)d->n_params, precision, &dev->dparams);
        rc = rc ? rc : gj_cli_gpu_alloc(gpu, n_x * sizeof(float), &dev->dx);
    }
    if (d->dl_ddldx) {
        rc = rc ? rc : gj_cli_gpu_upload(gpu, d->dl_ddldx, n_x, GJ_PRECISION_FP32, &dev->dl_ddldx);
        rc = rc ? rc : gj_cli_gpu_zeros(gpu, (size_t)d->n_params, precision, &dev->bb_dparams);
        rc = rc ? rc : gj_cli_gpu_alloc(gpu, n_y * (precision == GJ_PRECISION_FP16 ? 2 : 4), &dev->bb_ddldy);
        rc = rc ? rc : gj_cli_gpu_alloc(gpu, n_x * sizeof(float), &dev->bb_dx);
    }
    return rc;
}

static int run_passes(gj_cli_gpu *gpu, gj_module *m, const eval_data *d, eval_device *dev) {
    gj_forward_desc fwd;
    gj_forward_desc_init(&fwd);
    fwd.n = d->n;
    fwd.x = dev->x;
    fwd.params = dev->params;
    fwd.y = dev->y;
    fwd.max_level_per_point = dev->max_level;
    fwd.max_level = d->max_level;
    gj_status status = gj_forward(m, NULL, &fwd);
    if (status == GJ_OK && d->dl_dy) {
        gj_backward_desc bwd;
        gj_backward_desc_init(&bwd);
        bwd.n = d->n;
        bwd.x = dev->x;
        bwd.params = dev->params;
        bwd.dL_dy = dev->dl_dy;
        bwd.dL_dparams = dev->dparams;
        bwd.dL_dx = dev->dx;
        bwd.max_level_per_point = dev->max_level;
        bwd.max_level = d->max_level;
        status = gj_backward(m, NULL, &bwd);
    }
    if (status == GJ_OK && d->dl_ddldx) {
        gj_backward_backward_desc bb;
        gj_backward_backward_desc_init(&bb);
        bb.n = d->n;
        bb.x = dev->x;
        bb.params = dev->params;
        bb.dL_ddLdx = dev->dl_ddldx;
        bb.dL_dy = dev->dl_dy;
        bb.dL_dparams = dev->bb_dparams;
        bb.dL_ddLdy = dev->bb_ddldy;
        bb.dL_dx = dev->bb_dx;
        bb.max_level_per_point = dev->max_level;
        bb.max_level = d->max_level;
        status = gj_backward_backward(m, NULL, &bb);
    }
    if (status == GJ_OK) {
        status = gj_stream_synchronize(gpu->ctx, NULL);
    }
    return status == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(CMD, gpu->ctx, status, "the GPU passes failed");
}

static int save_outputs(gj_cli_gpu *gpu, const char *dir, const eval_data *d, gj_precision precision,
                        const eval_device *dev) {
    const size_t n_x = d->n * d->n_dims, n_y = d->n * d->n_out, n_p = (size_t)d->n_params;
    int rc = gj_cli_eval_save(gpu, dir, "y.f32", dev->y, n_y, precision);
    if (d->dl_dy) {
        rc = rc ? rc : gj_cli_eval_save(gpu, dir, "dparams.f32", dev->dparams, n_p, precision);
        rc = rc ? rc : gj_cli_eval_save(gpu, dir, "dx.f32", dev->dx, n_x, GJ_PRECISION_FP32);
    }
    if (d->dl_ddldx) {
        rc = rc ? rc : gj_cli_eval_save(gpu, dir, "bb_dparams.f32", dev->bb_dparams, n_p, precision);
        rc = rc ? rc : gj_cli_eval_save(gpu, dir, "bb_ddldy.f32", dev->bb_ddldy, n_y, precision);
        rc = rc ? rc : gj_cli_eval_save(gpu, dir, "bb_dx.f32", dev->bb_dx, n_x, GJ_PRECISION_FP32);
    }
    return rc;
}

static int evaluate(const eval_args *args, gj_context *ctx, const gj_encoding *enc) {
    eval_data data;
    int rc = read_inputs(args, enc, &data);
    gj_cli_gpu gpu = {0};
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_gpu_open(CMD, ctx, &gpu, NULL);
    }
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = GJ_PASS_FORWARD | (args->dl_dy ? GJ_PASS_BACKWARD : 0) | (args->dl_ddldx ? GJ_PASS_BACKWARD_BACKWARD : 0);
    gj_module *module = NULL;
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_gpu_module(&gpu, enc, &opts, args->arch, &module);
    }
    const gj_precision precision = gj_encoding_precision(enc);
    eval_device dev;
    memset(&dev, 0, sizeof dev);
    if (rc == GJ_CLI_OK) {
        rc = upload(&gpu, &data, precision, &dev);
    }
    if (rc == GJ_CLI_OK) {
        rc = run_passes(&gpu, module, &data, &dev);
    }
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_make_dirs(CMD, args->out_dir);
    }
    if (rc == GJ_CLI_OK) {
        rc = save_outputs(&gpu, args->out_dir, &data, precision, &dev);
    }
    if (rc == GJ_CLI_OK) {
        printf("evaluated %zu points (D = %u, %u outputs, %llu parameters, %s) on %s; wrote %s\n", data.n, data.n_dims,
               data.n_out, (unsigned long long)data.n_params, precision == GJ_PRECISION_FP16 ? "fp16" : "fp32",
               gpu.info.device_name, args->out_dir);
    }
    gj_cli_gpu_close(&gpu);
    gj_module_destroy(module);
    free_data(&data);
    return rc;
}

/* An encoding's eval, its configuration read: json, where naming its source in messages. */
static int eval_encoding(const eval_args *args, const char *json, const char *where) {
    if (args->output_dims) {
        return gj_cli_usage_error(CMD, "--output-dims: only for a network or model configuration");
    }
    uint32_t n_dims = 0;
    int rc = gj_cli_parse_dims(CMD, args->dims, &n_dims);
    gj_context *ctx = NULL;
    gj_encoding *enc = NULL;
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_open_json_where(CMD, json, where, n_dims, &ctx, &enc);
    }
    if (rc == GJ_CLI_OK) {
        rc = evaluate(args, ctx, enc);
    }
    gj_cli_close(ctx, enc);
    return rc;
}

int gj_cli_eval(int argc, char **argv) {
    eval_args args;
    memset(&args, 0, sizeof args);
    int rc = parse_args(argc, argv, &args);
    if (rc == -1) {
        return gj_cli_flush_stdout(CMD);
    }
    if (rc != GJ_CLI_OK) {
        return rc;
    }
    char *json = NULL;
    rc = gj_cli_read_config(CMD, args.config, &json);
    if (rc == GJ_CLI_OK) {
        char where[512];
        gj_cli_config_where(args.config, where, sizeof where);
        rc = gj_cli_classify_config(json) == GJ_CLI_CONFIG_ENCODING ? eval_encoding(&args, json, where)
                                                                   : gj_cli_eval_network(&args, json, where);
    }
    free(json);
    int flushed = gj_cli_flush_stdout(CMD);
    return rc != GJ_CLI_OK ? rc : flushed;
}
