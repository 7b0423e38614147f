/*
 * gridjit bench --config NETWORK_OR_MODEL: a network alone, or a model's fused kernels, through
 * gj_network_module (docs/networks.md §8, §9): the cold compile of each program (inference; training) measured by the first call,
 * then per pass a warm-up and K launches between CUDA events, the median printed.
 */
#include "bench_network.h"

#include "cli_gpu.h"
#include "cli_network.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static const char *const CMD = "bench";

#define WARMUP 5

static void usage(void) {
    printf("Usage: gridjit bench --config NETWORK --dims IN --output-dims OUT [--points N]\n"
           "                     [--iterations K] [--output fp32|fp16] [--json]\n"
           "       gridjit bench --config MODEL --dims D [--output-dims OUT] [...]\n"
           "\n"
           "A network configuration ({\"otype\": \"FullyFusedMLP\", ...}) or a model\n"
           "({\"encoding\": {...}, \"network\": {...}}: its fused kernels) is timed through its\n"
           "network module: N points uniform in [0,1)^IN (a model: D), tiny-cuda-nn's\n"
           "initialisation (a model's encoding: gridjit's uniform one), then\n"
           "per pass a warm-up and K launches between CUDA events; the median is printed.\n"
           "compile_ms: the first inference call, the first forward + backward and the\n"
           "first fused training step with Adam, each compiling its programs cold (gridjit's\n"
           "and the driver's caches off); training_all and train_step_all: from the same\n"
           "starts until a model's fused backward or step, compiled behind the first steps\n"
           "where tiers are on (GRIDJIT_NETWORK_TIERS), is loaded too (the passes are timed\n"
           "after). GRIDJIT_LOG_LEVEL=info prints each program's compile, store and load\n"
           "times on stderr.\n"
           "\n"
           "Passes: inference; forward (keeping the context); backward (dL/dparams, fp32,\n"
           "overwritten: includes zeroing; a model's encoding's too); backward_input (and\n"
           "dL/dinput); step (forward, then backward with dL/dparams); fused_step (the\n"
           "training step, gj_network_train_step: forward, L2 loss against random targets in\n"
           "[0,1), backward to the parameters, the loss; a model's as its own program or as\n"
           "its passes, GRIDJIT_NETWORK_STEP_PASSES); train_step (fused_step, then\n"
           "gj_network_adam_step: what tiny-cuda-nn's training step does).\n"
           "\n"
           "Options: -c/--config, -d/--dims (the network's input width, a model's encoding\n"
           "dimensions), --output-dims\n"
           "(default: the network object's \"n_output_dims\"), -P/--points (default 2^21),\n"
           "-i/--iterations (default 50), --output (what inference and the forward write\n"
           "and the backward reads as dL/doutput: fp32, the default, or fp16 values as\n"
           "tiny-cuda-nn's networks write them and PyTorch hands their gradient back, half\n"
           "the bytes: gj_network_pass_desc.output_fp16, dL_doutput_fp16), -j/--json (one\n"
           "object: {\"config\",\n"
           "\"n_points\", \"output\", \"device\", \"compile_ms\": {\"inference\", \"training\",\n"
           "\"training_all\",\n"
           "\"train_step\", \"train_step_all\"}, \"iterations\", \"final_loss\" (train_step's last),\n"
           "\"passes\": {PASS: {\"median_ms\", \"points_per_s\"}}}).\n");
}

int gj_cli_bench_is_network(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; ++i) {
        if (strcmp(argv[i], "--config") == 0 || strcmp(argv[i], "-c") == 0) {
            char *text = NULL;
            if (gj_cli_read_config(CMD, argv[i + 1], &text) != GJ_CLI_OK) {
                return 0; /* the encoding path reports it */
            }
            const int network = gj_cli_classify_config(text) != GJ_CLI_CONFIG_ENCODING;
            free(text);
            return network;
        }
    }
    return 0;
}

typedef struct run {
    gj_context *ctx;
    gj_network_module *m;
    gj_network_pass_desc d;
    gj_network_train_desc t;
    gj_network_adam_desc a;
} run;

enum { P_INFERENCE, P_FORWARD, P_BACKWARD, P_BACKWARD_INPUT, P_STEP, P_FUSED_STEP, P_TRAIN_STEP, P_COUNT };
static const char *const pass_name[P_COUNT] = {"inference", "forward",    "backward",  "backward_input",
                                               "step",      "fused_step", "train_step"};

static gj_status one_pass(run *r, int pass) {
    gj_network_pass_desc d = r->d;
    switch (pass) {
    case P_INFERENCE: return gj_network_inference(r->m, NULL, &d);
    case P_FORWARD: return gj_network_forward(r->m, NULL, &d);
    case P_BACKWARD: d.dL_dinput = NULL; return gj_network_backward(r->m, NULL, &d);
    case P_BACKWARD_INPUT: return gj_network_backward(r->m, NULL, &d);
    case P_FUSED_STEP: return gj_network_train_step(r->m, NULL, &r->t);
    case P_TRAIN_STEP: {
        gj_status s = gj_network_train_step(r->m, NULL, &r->t);
        return s == GJ_OK ? gj_network_adam_step(r->m, NULL, &r->a) : s;
    }
    default: {
        gj_status s = gj_network_forward(r->m, NULL, &d);
        d.dL_dinput = NULL;
        return s == GJ_OK ? gj_network_backward(r->m, NULL, &d) : s;
    }
    }
}

/* A device buffer of bytes zeros. */
static int upload_zeros(gj_cli_gpu *gpu, size_t bytes, void **ptr) {
    int rc = gj_cli_gpu_alloc(gpu, bytes, ptr);
    void *zeros = rc == GJ_CLI_OK && bytes ? calloc(1, bytes) : NULL;
    if (rc != GJ_CLI_OK || bytes == 0) {
        return rc;
    }
    if (!zeros) {
        return gj_cli_status_error(CMD, gpu->ctx, GJ_ERROR_OUT_OF_MEMORY, "host buffer");
    }
    const gj_status s = gj_memcpy_to_device(gpu->ctx, *ptr, zeros, bytes);
    free(zeros);
    return s == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(CMD, gpu->ctx, s, "cannot clear device memory");
}

static int compare_floats(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The median of iterations timed launches of pass, after a warm-up. */
static gj_status time_pass(run *r, int pass, uint32_t iterations, float *median) {
    gj_event *start = NULL, *end = NULL;
    float *ms = calloc(iterations, sizeof *ms);
    gj_status s = ms ? gj_event_create(r->ctx, &start) : GJ_ERROR_OUT_OF_MEMORY;
    if (s == GJ_OK) {
        s = gj_event_create(r->ctx, &end);
    }
    for (int i = 0; s == GJ_OK && i < WARMUP; ++i) {
        s = one_pass(r, pass);
    }
    for (uint32_t i = 0; s == GJ_OK && i < iterations; ++i) {
        s = gj_event_record(start, NULL);
        if (s == GJ_OK) {
            s = one_pass(r, pass);
        }
        if (s == GJ_OK) {
            s = gj_event_record(end, NULL);
        }
        if (s == GJ_OK) {
            s = gj_event_elapsed_ms(start, end, &ms[i]);
        }
    }
    if (s == GJ_OK) {
        qsort(ms, iterations, sizeof *ms, compare_floats);
        *median = ms[iterations / 2];
    }
    gj_event_destroy(start);
    gj_event_destroy(end);
    free(ms);
    return s;
}

static int bench(const char *config_text, uint32_t n_in, uint32_t n_out, uint32_t n_points, uint32_t iterations,
                 int output_fp16, int json_output, const char *where) {
    gj_context *ctx = NULL;
    gj_network *net = NULL;
    int rc = gj_cli_open_network(CMD, config_text, where, n_in, n_out, &ctx, &net);
    gj_cli_gpu gpu;
    memset(&gpu, 0, sizeof gpu);
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_gpu_open(CMD, ctx, &gpu, NULL);
    }
    run r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    if (rc == GJ_CLI_OK) {
        const gj_status s = gj_network_module_create(ctx, net, &r.m);
        rc = s == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(CMD, ctx, s, "cannot make the network module");
    }
    const uint32_t in = net ? gj_network_n_input_dims(net) : 0, out = net ? gj_network_n_output_dims(net) : 0;
    const uint64_t n = n_points, n_params = net ? gj_network_n_mlp_params(net) : 0;
    void *x = NULL, *y = NULL, *dy = NULL, *params = NULL, *context = NULL, *dw = NULL, *dx = NULL;
    float *host = NULL;
    if (rc == GJ_CLI_OK) {
        host = malloc((n * (in > out ? in : out) + 1) * sizeof *host);
        rc = host ? GJ_CLI_OK : gj_cli_status_error(CMD, ctx, GJ_ERROR_OUT_OF_MEMORY, "host buffer");
    }
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    if (rc == GJ_CLI_OK) {
        gj_cli_random_floats(&seed, host, n * in, 0.0f, 1.0f);
        rc = gj_cli_gpu_upload(&gpu, host, n * in, GJ_PRECISION_FP32, &x);
    }
    if (rc == GJ_CLI_OK) {
        gj_cli_random_floats(&seed, host, n * out, -1.0f, 1.0f);
        rc = gj_cli_gpu_upload(&gpu, host, n * out, output_fp16 ? GJ_PRECISION_FP16 : GJ_PRECISION_FP32, &dy);
    }
    const gj_encoding *enc = net ? gj_network_encoding(net) : NULL;
    const uint64_t n_enc = enc ? gj_encoding_n_params(enc) : 0;
    const size_t enc_size = enc && gj_encoding_precision(enc) == GJ_PRECISION_FP32 ? 4 : 2;
    void *eparams = NULL, *de = NULL;
    const size_t bytes[7] = {n * out * 4, n_params * 2, r.m ? gj_network_module_context_bytes(r.m, n) : 0,
                             n_params * 4, n * in * 4, n_enc * enc_size,
                             n_enc * (r.m ? gj_network_module_encoding_gradient_size(r.m) : 0)};
    void **ptrs[7] = {&y, &params, &context, &dw, &dx, &eparams, &de};
    for (int i = 0; rc == GJ_CLI_OK && i < 7; ++i) {
        rc = gj_cli_gpu_alloc(&gpu, bytes[i], ptrs[i]);
    }
    /* The training step's: targets, fp32 master weights, Adam's moments and step counts (zeroed). */
    void *target = NULL, *master = NULL, *emaster = NULL, *loss = NULL, *state[6] = {NULL};
    if (rc == GJ_CLI_OK) {
        gj_cli_random_floats(&seed, host, n * out, 0.0f, 1.0f);
        rc = gj_cli_gpu_upload(&gpu, host, n * out, GJ_PRECISION_FP32, &target);
    }
    const size_t state_count[6] = {n_params, n_params, n_params, n_enc, n_enc, n_enc};
    for (int i = 0; rc == GJ_CLI_OK && i < 6; ++i) {
        rc = upload_zeros(&gpu, 4 * state_count[i], &state[i]);
    }
    const size_t fp32_bytes[3] = {4 * n_params, 4 * n_enc, 4};
    void **fp32_ptrs[3] = {&master, &emaster, &loss};
    for (int i = 0; rc == GJ_CLI_OK && i < 3; ++i) {
        rc = gj_cli_gpu_alloc(&gpu, fp32_bytes[i], fp32_ptrs[i]);
    }
    if (rc == GJ_CLI_OK) {
        gj_network_init_desc init;
        gj_network_init_desc_init(&init);
        init.params = params;
        init.params_fp32 = master;
        init.encoding_params = eparams;
        init.encoding_params_fp32 = emaster;
        const gj_status s = gj_network_init_params(r.m, NULL, &init);
        rc = s == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(CMD, ctx, s, "cannot initialise the parameters");
    }
    gj_network_pass_desc_init(&r.d);
    r.d.n = n;
    r.d.input = x;
    r.d.params = params;
    r.d.output = output_fp16 ? NULL : y; /* y holds n x out floats: room for either */
    r.d.output_fp16 = output_fp16 ? y : NULL;
    r.d.context = context;
    r.d.dL_doutput = output_fp16 ? NULL : dy; /* dL/doutput in the outputs' precision, as PyTorch hands it back */
    r.d.dL_doutput_fp16 = output_fp16 ? dy : NULL;
    r.d.dL_dparams = dw;
    r.d.dL_dinput = dx;
    r.d.encoding_params = eparams;
    r.d.dL_dencoding_params = de;
    gj_network_train_desc_init(&r.t);
    r.t.n = n;
    r.t.input = x;
    r.t.target = target;
    r.t.params = params;
    r.t.encoding_params = eparams;
    r.t.dL_dparams = dw;
    r.t.dL_dencoding_params = enc ? de : NULL;
    r.t.loss = loss;
    gj_network_adam_desc_init(&r.a);
    r.a.params = params;
    r.a.params_fp32 = master;
    r.a.first_moments = state[0];
    r.a.second_moments = state[1];
    r.a.steps = state[2];
    r.a.dL_dparams = dw;
    if (enc) {
        r.a.encoding_params = eparams;
        r.a.encoding_params_fp32 = emaster;
        r.a.encoding_first_moments = state[3];
        r.a.encoding_second_moments = state[4];
        r.a.encoding_steps = state[5];
        r.a.dL_dencoding_params = de;
    }
    static const int compiled_by[3] = {P_INFERENCE, P_STEP, P_TRAIN_STEP};
    double compile_ms[3] = {0, 0, 0}, all_ms[3] = {0, 0, 0};
    for (int p = 0; rc == GJ_CLI_OK && p < 3; ++p) {
        const double t0 = gj_cli_now_ms();
        gj_status s = one_pass(&r, compiled_by[p]);
        if (s == GJ_OK) {
            s = gj_stream_synchronize(ctx, NULL);
        }
        compile_ms[p] = gj_cli_now_ms() - t0;
        /* A model's fused backward or step may still compile behind the first steps (tiers):
         * all their programs are there when it is, and the passes are timed after. */
        if (s == GJ_OK) {
            s = gj_network_module_wait_compiles(r.m);
            all_ms[p] = gj_cli_now_ms() - t0;
        }
        rc = s == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(CMD, ctx, s, "cannot run the network");
    }
    float median[P_COUNT] = {0};
    for (int p = 0; rc == GJ_CLI_OK && p < P_COUNT; ++p) {
        const gj_status s = time_pass(&r, p, iterations, &median[p]);
        rc = s == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(CMD, ctx, s, "timing failed");
    }
    float final_loss = 0.0f; /* the last train_step's: a check that training ran (finite) */
    if (rc == GJ_CLI_OK) {
        const gj_status s = gj_memcpy_to_host(ctx, &final_loss, loss, sizeof final_loss);
        rc = s == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(CMD, ctx, s, "cannot read the loss");
    }
    if (rc == GJ_CLI_OK) {
        char *hyper = gj_network_hyperparams(net);
        if (json_output) {
            cJSON *root = cJSON_CreateObject(), *passes = cJSON_CreateObject(), *compile = cJSON_CreateObject();
            cJSON_AddItemToObject(root, "config", cJSON_Parse(hyper));
            cJSON_AddNumberToObject(root, "n_points", (double)n);
            cJSON_AddStringToObject(root, "output", output_fp16 ? "fp16" : "fp32");
            cJSON_AddStringToObject(root, "device", gpu.info.device_name);
            cJSON_AddNumberToObject(compile, "inference", compile_ms[0]);
            cJSON_AddNumberToObject(compile, "training", compile_ms[1]);
            cJSON_AddNumberToObject(compile, "training_all", all_ms[1]);
            cJSON_AddNumberToObject(compile, "train_step", compile_ms[2]);
            cJSON_AddNumberToObject(compile, "train_step_all", all_ms[2]);
            cJSON_AddItemToObject(root, "compile_ms", compile);
            cJSON_AddNumberToObject(root, "iterations", iterations);
            cJSON_AddNumberToObject(root, "final_loss", final_loss);
            for (int p = 0; p < P_COUNT; ++p) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddNumberToObject(o, "median_ms", median[p]);
                cJSON_AddNumberToObject(o, "points_per_s", median[p] > 0 ? n / (median[p] * 1e-3) : 0);
                cJSON_AddItemToObject(passes, pass_name[p], o);
            }
            cJSON_AddItemToObject(root, "passes", passes);
            char *text = cJSON_PrintUnformatted(root);
            printf("%s\n", text ? text : "{}");
            cJSON_free(text);
            cJSON_Delete(root);
        } else {
            printf("network   %s\ndevice    %s\npoints    %llu\noutput    %s\n"
                   "compile   inference %.0f ms, training %.0f ms (all its programs %.0f ms), train_step %.0f "
                   "ms (%.0f ms) (cold)\n"
                   "loss      %g (after the last train_step)\n",
                   hyper, gpu.info.device_name, (unsigned long long)n, output_fp16 ? "fp16" : "fp32", compile_ms[0], compile_ms[1], all_ms[1],
                   compile_ms[2], all_ms[2], (double)final_loss);
            for (int p = 0; p < P_COUNT; ++p) {
                printf("%-15s %9.4f ms  %8.1f M points/s\n", pass_name[p], median[p],
                       median[p] > 0 ? n / (median[p] * 1e3) : 0.0);
            }
        }
        gj_free(hyper);
    }
    free(host);
    gj_cli_gpu_close(&gpu);
    gj_network_module_destroy(r.m);
    gj_network_destroy(net);
    gj_context_destroy(ctx);
    return rc;
}

int gj_cli_bench_network(int argc, char **argv) {
    enum { OPT_OUTPUT_DIMS = 1000, OPT_OUTPUT };
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'},  {"dims", required_argument, NULL, 'd'},
        {"output-dims", required_argument, NULL, OPT_OUTPUT_DIMS}, {"output", required_argument, NULL, OPT_OUTPUT},
        {"points", required_argument, NULL, 'P'},  {"iterations", required_argument, NULL, 'i'},
        {"json", no_argument, NULL, 'j'},          {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config = NULL;
    uint32_t n_in = 0, n_out = 0, n_points = 1u << 21, iterations = 50;
    int json = 0, output_fp16 = 0, opt, rc = GJ_CLI_OK;
    optind = 1;
    while (rc == GJ_CLI_OK && (opt = getopt_long(argc, argv, ":c:d:P:i:jh", options, NULL)) != -1) {
        switch (opt) {
        case 'c': config = optarg; break;
        case 'd': rc = gj_cli_parse_u32(CMD, "--dims", optarg, 1, GJ_NETWORK_MAX_INPUT_DIMS, &n_in); break;
        case OPT_OUTPUT_DIMS:
            rc = gj_cli_parse_u32(CMD, "--output-dims", optarg, 1, GJ_NETWORK_MAX_OUTPUT_DIMS, &n_out);
            break;
        case OPT_OUTPUT:
            if (strcmp(optarg, "fp16") == 0 || strcmp(optarg, "fp32") == 0) {
                output_fp16 = optarg[2] == '1';
            } else {
                rc = gj_cli_usage_error(CMD, "--output: must be fp32 or fp16 (got '%s')", optarg);
            }
            break;
        case 'P': rc = gj_cli_parse_u32(CMD, "--points", optarg, 1, 1u << 28, &n_points); break;
        case 'i': rc = gj_cli_parse_u32(CMD, "--iterations", optarg, 1, 100000, &iterations); break;
        case 'j': json = 1; break;
        case 'h': usage(); return gj_cli_flush_stdout(CMD);
        default: return gj_cli_bad_option(CMD, opt, argv, options);
        }
    }
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_no_operands(CMD, argc, argv, options);
    }
    char *text = NULL;
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_read_config(CMD, config, &text);
    }
    if (rc == GJ_CLI_OK) {
        char where[512];
        gj_cli_config_where(config, where, sizeof where);
        rc = bench(text, n_in, n_out, n_points, iterations, output_fp16, json, where);
    }
    free(text);
    const int flushed = gj_cli_flush_stdout(CMD);
    return rc != GJ_CLI_OK ? rc : flushed;
}
