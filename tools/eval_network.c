/*
 * gridjit eval --config NETWORK_OR_MODEL: a network alone, or a model (an encoding and its
 * network), over float32 files through its network module (docs/networks.md §8, §9):
 * inference without dL/dy; with it the forward for training, then the backward with
 * dL/dparams (fp32, the network's then the encoding's, the order of the parameters file)
 * and dL/dinput. For comparing a model's outputs and gradients with another
 * implementation's (tinycudann's, given its parameters).
 */
#include "eval_network.h"

#include "cli_network.h"

#include <stdlib.h>
#include <string.h>

static const char *const CMD = "eval";

typedef struct net_data {
    uint32_t n_in, n_out;
    uint64_t n_mlp, n_enc; /* the network's parameters, then the encoding's (0 alone) */
    size_t n;              /* points */
    float *x, *params, *dl_dy;
} net_data;

/* The options an encoding's eval has and a network's has not: usage errors naming them. */
static int refuse_encoding_options(const gj_cli_eval_args *args) {
    const char *option = args->dl_ddldx    ? "--dl-ddldx: only for an encoding configuration (a network or model "
                                             "has no backward-of-backward pass)"
                         : args->max_level ? "--max-level: only for an encoding configuration"
                         : args->arch      ? "--arch: only for an encoding configuration (a network's or model's "
                                             "module compiles for the device it runs on)"
                                           : NULL;
    return option ? gj_cli_usage_error(CMD, "%s", option) : GJ_CLI_OK;
}

static int read_inputs(const gj_cli_eval_args *args, const gj_network *net, net_data *d) {
    memset(d, 0, sizeof *d);
    d->n_in = gj_network_n_input_dims(net);
    d->n_out = gj_network_n_output_dims(net);
    d->n_mlp = gj_network_n_mlp_params(net);
    d->n_enc = gj_network_n_params(net) - d->n_mlp;
    int rc = gj_cli_eval_read_points(args->points, d->n_in, gj_network_encoding(net) ? "D" : "n_input_dims", &d->x,
                                     &d->n);
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_eval_read_exact("--params", args->params, (size_t)(d->n_mlp + d->n_enc), "n_params", &d->params);
    }
    size_t n_y = 0;
    rc = rc ? rc : gj_cli_eval_output_count(d->n, d->n_out, &n_y);
    if (rc == GJ_CLI_OK && args->dl_dy) {
        rc = gj_cli_eval_read_exact("--dl-dy", args->dl_dy, n_y, "N * n_output_dims", &d->dl_dy);
    }
    return rc;
}

typedef struct net_device {
    void *x, *params, *eparams, *y, *context, *dl_dy, *dparams, *dx, *deparams, *esums;
} net_device;

/* The inputs uploaded (the network's weights as fp16, the encoding's in its precision) and the
 * outputs allocated; the gradients zeroed, so that N = 0, which launches nothing, gives zeros. */
static int upload(gj_cli_gpu *gpu, const gj_network_module *m, const gj_network *net, const net_data *d,
                  net_device *dev) {
    const gj_encoding *enc = gj_network_encoding(net);
    const gj_precision enc_precision = enc ? gj_encoding_precision(enc) : GJ_PRECISION_FP32;
    const size_t n_x = d->n * d->n_in, n_y = d->n * d->n_out;
    int rc = gj_cli_gpu_upload(gpu, d->x, n_x, GJ_PRECISION_FP32, &dev->x);
    rc = rc ? rc : gj_cli_gpu_upload(gpu, d->params, (size_t)d->n_mlp, GJ_PRECISION_FP16, &dev->params);
    rc = rc ? rc : gj_cli_gpu_upload(gpu, d->params + d->n_mlp, (size_t)d->n_enc, enc_precision, &dev->eparams);
    rc = rc ? rc : gj_cli_gpu_alloc(gpu, n_y * sizeof(float), &dev->y);
    if (d->dl_dy) {
        rc = rc ? rc : gj_cli_gpu_upload(gpu, d->dl_dy, n_y, GJ_PRECISION_FP32, &dev->dl_dy);
        rc = rc ? rc : gj_cli_gpu_alloc(gpu, (size_t)gj_network_module_context_bytes(m, d->n), &dev->context);
        rc = rc ? rc : gj_cli_gpu_zeros(gpu, (size_t)d->n_mlp, GJ_PRECISION_FP32, &dev->dparams);
        rc = rc ? rc : gj_cli_gpu_alloc(gpu, n_x * sizeof(float), &dev->dx);
        rc = rc ? rc : gj_cli_gpu_zeros(gpu, (size_t)d->n_enc, GJ_PRECISION_FP32, &dev->deparams);
        /* Where a model's kernels sum its encoding's gradients in fp16, the buffer they sum in. */
        if (gj_network_module_encoding_gradient_size(m) == 2) {
            rc = rc ? rc : gj_cli_gpu_alloc(gpu, (size_t)d->n_enc * 2, &dev->esums);
        }
    }
    return rc;
}

static int run_passes(gj_cli_gpu *gpu, gj_network_module *m, const net_data *d, const net_device *dev) {
    gj_network_pass_desc p;
    gj_network_pass_desc_init(&p);
    p.n = d->n;
    p.input = dev->x;
    p.params = dev->params;
    p.encoding_params = dev->eparams;
    p.output = dev->y;
    gj_status status;
    if (!d->dl_dy) {
        status = gj_network_inference(m, NULL, &p);
    } else {
        p.context = dev->context;
        status = gj_network_forward(m, NULL, &p);
        p.dL_doutput = dev->dl_dy;
        p.dL_dparams = dev->dparams;
        p.dL_dinput = dev->dx;
        if (d->n_enc) {
            p.dL_dencoding_params = dev->esums; /* NULL where the sums are fp32: they go to the fp32 buffer */
            p.dL_dencoding_params_fp32 = dev->deparams;
        }
        if (status == GJ_OK) {
            status = gj_network_backward(m, NULL, &p);
        }
    }
    if (status == GJ_OK) {
        status = gj_stream_synchronize(gpu->ctx, NULL);
    }
    return status == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(CMD, gpu->ctx, status, "the GPU passes failed");
}

/* dparams.f32: the network's gradients, then the encoding's, as the parameters file orders them. */
static int save_dparams(gj_cli_gpu *gpu, const char *dir, const net_data *d, const net_device *dev) {
    const size_t n_params = (size_t)(d->n_mlp + d->n_enc);
    float *host = calloc(n_params ? n_params : 1, sizeof *host);
    if (!host) {
        gj_cli_error(CMD, "out of memory");
        return GJ_CLI_FAILURE;
    }
    int rc = gj_cli_gpu_download(gpu, dev->dparams, (size_t)d->n_mlp, GJ_PRECISION_FP32, host);
    rc = rc ? rc : gj_cli_gpu_download(gpu, dev->deparams, (size_t)d->n_enc, GJ_PRECISION_FP32, host + d->n_mlp);
    rc = rc ? rc : gj_cli_eval_write_floats(dir, "dparams.f32", host, n_params);
    free(host);
    return rc;
}

static int evaluate(const gj_cli_eval_args *args, gj_context *ctx, const gj_network *net) {
    net_data data;
    int rc = read_inputs(args, net, &data);
    gj_cli_gpu gpu = {0};
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_gpu_open(CMD, ctx, &gpu, NULL);
    }
    gj_network_module *m = NULL;
    if (rc == GJ_CLI_OK) {
        const gj_status s = gj_network_module_create(ctx, net, &m);
        rc = s == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(CMD, ctx, s, "cannot make the network module");
    }
    net_device dev;
    memset(&dev, 0, sizeof dev);
    rc = rc ? rc : upload(&gpu, m, net, &data, &dev);
    rc = rc ? rc : run_passes(&gpu, m, &data, &dev);
    rc = rc ? rc : gj_cli_make_dirs(CMD, args->out_dir);
    rc = rc ? rc : gj_cli_eval_save(&gpu, args->out_dir, "y.f32", dev.y, data.n * data.n_out, GJ_PRECISION_FP32);
    if (data.dl_dy) {
        rc = rc ? rc : save_dparams(&gpu, args->out_dir, &data, &dev);
        rc = rc ? rc : gj_cli_eval_save(&gpu, args->out_dir, "dx.f32", dev.dx, data.n * data.n_in, GJ_PRECISION_FP32);
    }
    if (rc == GJ_CLI_OK) {
        printf("evaluated %zu points (%s, %u inputs, %u outputs, %llu parameters) on %s; wrote %s\n", data.n,
               gj_network_encoding(net) ? "model" : "network", data.n_in, data.n_out,
               (unsigned long long)(data.n_mlp + data.n_enc), gpu.info.device_name, args->out_dir);
    }
    gj_cli_gpu_close(&gpu); /* the buffers, before the module's programs go */
    gj_network_module_destroy(m);
    free(data.x);
    free(data.params);
    free(data.dl_dy);
    return rc;
}

int gj_cli_eval_network(const gj_cli_eval_args *args, const char *json, const char *where) {
    uint32_t n_in = 0, n_out = 0;
    int rc = refuse_encoding_options(args);
    rc = rc ? rc : gj_cli_parse_network_widths(CMD, args->dims, args->output_dims, &n_in, &n_out);
    gj_context *ctx = NULL;
    gj_network *net = NULL;
    rc = rc ? rc : gj_cli_open_network(CMD, json, where, n_in, n_out, &ctx, &net);
    rc = rc ? rc : evaluate(args, ctx, net);
    gj_network_destroy(net);
    gj_context_destroy(ctx);
    return rc;
}
