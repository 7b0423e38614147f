/* `gridjit info` with network and model configurations, run as a child process: the summary,
 * the JSON object against the layout rules of docs/networks.md computed here, the widths from
 * options or keys, refusals; eval's checks of its files and its outputs through the fake libcuda. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_support.h"
#include "gridjit.h"
#include "run_cli.h"
#include "test_env.h"

#define RUN(result, ...) gj_test_run_cli_checked(NULL, (const char *const[]){__VA_ARGS__, NULL}, (result))

static void assert_success(const gj_cli_result *r) {
    if (r->status != 0) {
        print_message("stderr: %s\n", r->err);
    }
    assert_int_equal(r->status, 0);
    assert_true(r->out_len > 0);
    assert_int_equal(r->err_len, 0);
}

/* A refusal: the status, nothing on stdout, one "gridjit info: ..." message naming want. */
static void assert_refused(const gj_cli_result *r, int status, const char *want) {
    if (r->status != status || !strstr(r->err, want)) {
        fail_msg("status %d (expected %d), stderr: %s(expected to name '%s')", r->status, status, r->err, want);
    }
    assert_int_equal(r->out_len, 0);
    assert_true(strncmp(r->err, "gridjit ", 8) == 0);
}

static const cJSON *member(const cJSON *object, const char *key) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
    if (!item) {
        fail_msg("JSON output lacks \"%s\"", key);
    }
    return item;
}

static uint64_t integer(const cJSON *object, const char *key) {
    const cJSON *item = member(object, key);
    assert_true(cJSON_IsNumber(item));
    const double v = cJSON_GetNumberValue(item);
    assert_true(v >= 0 && v == floor(v));
    return (uint64_t)v;
}

/* info --json with up to two more options; exactly one object on stdout. */
static cJSON *info_json(const char *config, const char *opt1, const char *val1, const char *opt2, const char *val2) {
    gj_cli_result r;
    if (opt2) {
        RUN(&r, "info", "--json", "--config", config, opt1, val1, opt2, val2);
    } else if (opt1) {
        RUN(&r, "info", "--json", "--config", config, opt1, val1);
    } else {
        RUN(&r, "info", "--json", "--config", config);
    }
    assert_success(&r);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(r.out, &end, 0);
    assert_non_null(root);
    while (*end == '\n') {
        ++end;
    }
    assert_int_equal(*end, '\0');
    gj_cli_result_free(&r);
    return root;
}

/* The network object against docs/networks.md §2, computed here. */
static void check_network_object(const cJSON *mlp, uint32_t in, uint32_t width, uint32_t hidden, uint32_t out,
                                 double padding) {
    const uint32_t pin = (in + 15) / 16 * 16, pout = (out + 15) / 16 * 16;
    assert_int_equal(integer(mlp, "input_width"), in);
    assert_int_equal(integer(mlp, "padded_input_width"), pin);
    assert_true(cJSON_GetNumberValue(member(mlp, "input_padding")) == padding);
    assert_int_equal(integer(mlp, "n_output_dims"), out);
    assert_int_equal(integer(mlp, "padded_output_width"), pout);
    assert_int_equal(integer(mlp, "params_offset"), 0);
    const cJSON *layers = member(mlp, "layers");
    const uint32_t n_layers = hidden == 0 ? 1 : hidden + 1;
    assert_int_equal(cJSON_GetArraySize(layers), n_layers);
    uint64_t offset = 0;
    for (uint32_t l = 0; l < n_layers; l++) {
        const cJSON *layer = cJSON_GetArrayItem(layers, (int)l);
        const uint32_t fan_in = l == 0 ? pin : width, fan_out = l + 1 == n_layers ? pout : width;
        assert_int_equal(integer(layer, "layer"), l);
        assert_int_equal(integer(layer, "fan_in"), fan_in);
        assert_int_equal(integer(layer, "fan_out"), fan_out);
        assert_int_equal(integer(layer, "offset"), offset);
        assert_int_equal(integer(layer, "n_params"), (uint64_t)fan_in * fan_out);
        assert_true(cJSON_IsString(member(layer, "activation")));
        offset += (uint64_t)fan_in * fan_out;
    }
    assert_int_equal(integer(mlp, "n_params"), offset);
}

static const char model[] = "{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 8, \"n_features_per_level\": 4,"
                            " \"log2_hashmap_size\": 14},"
                            " \"network\": {\"otype\": \"FullyFusedMLP\", \"n_neurons\": 32, \"n_hidden_layers\": 3,"
                            " \"output_activation\": \"Sigmoid\", \"n_output_dims\": 4}}";

static void info_json_of_a_model(void **state) {
    (void)state;
    cJSON *root = info_json(model, "--dims", "2", NULL, NULL);
    assert_string_equal(cJSON_GetStringValue(member(root, "kind")), "model");
    assert_int_equal(integer(root, "n_input_dims"), 2);
    assert_int_equal(integer(root, "n_output_dims"), 4);
    const cJSON *encoding = member(root, "encoding");
    assert_int_equal(integer(encoding, "n_dims"), 2);
    assert_int_equal(integer(encoding, "n_levels"), 8);
    assert_int_equal(cJSON_GetArraySize(member(encoding, "levels")), 8);
    /* 8 levels x 4 features = 32 inputs; 32 x 32 + 2 x 32 x 32 + 16 x 32 = 3584 network
     * parameters, which come first. */
    const cJSON *mlp = member(root, "network");
    check_network_object(mlp, 32, 32, 3, 4, 0.0);
    assert_int_equal(integer(mlp, "n_params"), 3584);
    assert_int_equal(integer(encoding, "params_offset"), 3584);
    assert_int_equal(integer(root, "n_params"), 3584 + integer(encoding, "n_params"));
    assert_string_equal(cJSON_GetStringValue(member(cJSON_GetArrayItem(member(mlp, "layers"), 3), "activation")),
                        "Sigmoid");
    const cJSON *hyperparams = member(root, "hyperparams");
    assert_string_equal(cJSON_GetStringValue(member(hyperparams, "otype")), "NetworkWithInputEncoding");
    /* The hyperparameters describe the same model, with no option. */
    char *text = cJSON_PrintUnformatted(hyperparams);
    cJSON *again = info_json(text, NULL, NULL, NULL, NULL);
    assert_true(cJSON_Compare(root, again, 1));
    free(text);
    cJSON_Delete(again);
    cJSON_Delete(root);
}

static void info_json_of_networks(void **state) {
    (void)state;
    static const struct {
        const char *config;
        const char *dims, *outputs; /* NULL: from the keys */
        uint32_t in, width, hidden, out;
    } cases[] = {
        {"{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64, \"n_hidden_layers\": 2}", "3", "1", 3, 64, 2, 1},
        {"{\"otype\": \"CutlassMLP\", \"n_neurons\": 16, \"n_hidden_layers\": 0, \"n_input_dims\": 33, "
         "\"n_output_dims\": 17}",
         NULL, NULL, 33, 16, 0, 17},
        {"{\"otype\": \"mlp\", \"n_neurons\": 128, \"n_hidden_layers\": 8, \"n_output_dims\": 128}", "1024", NULL, 1024,
         128, 8, 128},
        {"{\"n_neurons\": 32, \"n_input_dims\": 16}", NULL, "16", 16, 32, 5, 16}, /* tiny-cuda-nn's 5 hidden layers */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *root;
        if (cases[i].dims && cases[i].outputs) {
            root = info_json(cases[i].config, "--dims", cases[i].dims, "--output-dims", cases[i].outputs);
        } else if (cases[i].dims) {
            root = info_json(cases[i].config, "--dims", cases[i].dims, NULL, NULL);
        } else if (cases[i].outputs) {
            root = info_json(cases[i].config, "--output-dims", cases[i].outputs, NULL, NULL);
        } else {
            root = info_json(cases[i].config, NULL, NULL, NULL, NULL);
        }
        assert_string_equal(cJSON_GetStringValue(member(root, "kind")), "network");
        assert_null(cJSON_GetObjectItemCaseSensitive(root, "encoding"));
        assert_int_equal(integer(root, "n_input_dims"), cases[i].in);
        check_network_object(member(root, "network"), cases[i].in, cases[i].width, cases[i].hidden, cases[i].out, 1.0);
        assert_int_equal(integer(root, "n_params"), integer(member(root, "network"), "n_params"));
        cJSON_Delete(root);
    }
}

static void info_summary_of_a_model(void **state) {
    (void)state;
    gj_cli_result r;
    RUN(&r, "info", "--config", model, "--dims", "2");
    assert_success(&r);
    const char *words[] = {"model         NetworkWithInputEncoding, 2 inputs -> 4 outputs",
                           "the network's 3584, then the encoding's",
                           "encoding      Hash grid, 2 dimensions, 8 levels x 4 features",
                           "level           scale",
                           "network       FullyFusedMLP, 32 neurons x 3 hidden layers, ReLU, output activation Sigmoid",
                           "input         32 (the encoding's output), padded to 32 (the padding columns hold 0",
                           "output        4, padded to 16",
                           "n_params      3584 (parameters 0 .. 3583)",
                           "layer   fan_in  fan_out        offset    n_params  activation",
                           "    3       32       16          3072         512  Sigmoid"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        if (!strstr(r.out, words[i])) {
            fail_msg("info summary lacks '%s':\n%s", words[i], r.out);
        }
    }
    /* The encoding part comes first, the network's after. */
    assert_true(strstr(r.out, "encoding      Hash") < strstr(r.out, "network       FullyFused"));
    gj_cli_result_free(&r);
    RUN(&r, "info", "--config", "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 16, \"n_hidden_layers\": 1}", "--dims",
        "5", "--output-dims", "2");
    assert_success(&r);
    assert_non_null(strstr(r.out, "input         5, padded to 16 (the padding columns hold 1, as tinycudann's Network"));
    assert_null(strstr(r.out, "level"));
    gj_cli_result_free(&r);
}

static void info_reads_a_model_file(void **state) {
    (void)state;
    char *dir = gj_test_scratch_dir("info_model_file");
    assert_non_null(dir);
    char path[4096];
    snprintf(path, sizeof path, "%s/model.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(model, f);
    fclose(f);
    cJSON *from_file = info_json(path, "--dims", "2", NULL, NULL);
    cJSON *inline_json = info_json(model, "--dims", "2", NULL, NULL);
    assert_true(cJSON_Compare(from_file, inline_json, 1));
    cJSON_Delete(from_file);
    cJSON_Delete(inline_json);
    /* A bad file is named in the message. */
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"encoding\": {}, \"network\": {\"n_neurons\": 20}}", f);
    fclose(f);
    gj_cli_result r;
    RUN(&r, "info", "--config", path, "--output-dims", "1");
    assert_refused(&r, 1, "model.json': network: n_neurons: must be 16, 32, 64 or 128 (got 20)");
    gj_cli_result_free(&r);
    free(dir);
}

static void info_refuses_bad_networks(void **state) {
    (void)state;
    gj_cli_result r;
    const char *ff = "{\"otype\": \"FullyFusedMLP\"}";
    RUN(&r, "info", "--config", ff, "--output-dims", "1");
    assert_refused(&r, 1, "n_input_dims: required");
    assert_non_null(strstr(r.err, "--dims"));
    gj_cli_result_free(&r);
    RUN(&r, "info", "--config", ff, "--dims", "3");
    assert_refused(&r, 1, "n_output_dims: required");
    gj_cli_result_free(&r);
    RUN(&r, "info", "--config", "{\"otype\": \"FullyFusedMLP\", \"n_input_dims\": 4}", "--dims", "3", "--output-dims",
        "1");
    assert_refused(&r, 1, "n_input_dims: the configuration says 4 but the caller passed n_input_dims = 3");
    gj_cli_result_free(&r);
    RUN(&r, "info", "--config", ff, "--dims", "3", "--output-dims", "1025");
    assert_refused(&r, 2, "--output-dims: must be an integer in 1..1024");
    gj_cli_result_free(&r);
    RUN(&r, "info", "--config", ff, "--dims", "1025", "--output-dims", "1");
    assert_refused(&r, 2, "--dims: must be an integer in 1..1024");
    gj_cli_result_free(&r);
    RUN(&r, "info", "--config", "{\"otype\": \"FullyFusedMLP\", \"n_hidden_layers\": 0}", "--dims", "3",
        "--output-dims", "1");
    assert_refused(&r, 1, "n_hidden_layers: must be an integer from 1 to 32 for a FullyFusedMLP");
    gj_cli_result_free(&r);
    RUN(&r, "info", "--config", "{\"encoding\": {\"n_levels\": 0}, \"network\": {}}", "--output-dims", "1");
    assert_refused(&r, 1, "encoding: n_levels: must be an integer from 1 to 128 (got 0)");
    gj_cli_result_free(&r);
    RUN(&r, "info", "--config", "{\"loss\": {}, \"encoding\": {}, \"network\": {}}", "--output-dims", "1");
    assert_refused(&r, 1, "unknown key 'loss' (known keys: otype, encoding, network)");
    gj_cli_result_free(&r);
    /* An encoding takes no output width. */
    RUN(&r, "info", "--config", "{\"otype\": \"HashGrid\"}", "--output-dims", "1");
    assert_refused(&r, 2, "--output-dims: only for a network or model configuration");
    gj_cli_result_free(&r);
    /* bench's output precision: fp32 or fp16, checked before anything is made. */
    RUN(&r, "bench", "--config", ff, "--dims", "3", "--output-dims", "1", "--output", "fp8");
    assert_refused(&r, 2, "--output: must be fp32 or fp16 (got 'fp8')");
    gj_cli_result_free(&r);
    /* Encodings are still encodings, with their own messages. */
    RUN(&r, "info", "--config", "{\"n_levels\": 4, \"bogus_key\": 1}");
    assert_refused(&r, 1, "unknown key 'bogus_key'");
    gj_cli_result_free(&r);
}

/* n floats v0, v0 + step, ... written to DIR/NAME. */
static void write_ramp(const char *dir, const char *name, size_t n, float v0, float step) {
    float *v = malloc((n ? n : 1) * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n; ++i) {
        v[i] = v0 + step * (float)(i % 97);
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_int_equal(gj_test_write_file(path, (const char *)v, n * sizeof *v), 0);
    free(v);
}

/* DIR/out/NAME's size in bytes, or -1 when it was not written. */
static long out_size(const char *dir, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/out/%s", dir, name);
    size_t size = 0;
    char *data = gj_test_read_file(path, &size);
    free(data);
    return data ? (long)size : -1;
}

#define EVAL_MODEL                                                                                                    \
    "{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 2, \"log2_hashmap_size\": 8}, \"network\": "             \
    "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 16, \"n_hidden_layers\": 1, \"n_output_dims\": 3}}"
#define EVAL_NETWORK "{\"otype\": \"CutlassMLP\", \"n_neurons\": 16, \"n_hidden_layers\": 1}"
enum { EVAL_MODEL_PARAMS = 512 + 1024 }; /* 16 x 16 + 16 x 16 (output padded to 16), then 2 levels x 2^8 x 2 */

/* eval of networks and models: the checks it makes before the GPU (the sizes its help states,
 * the encodings' options refused), each message naming what is wrong; without a driver, "no
 * GPU" once every input passed. */
static void eval_checks_network_inputs(void **state) {
    (void)state;
    char *dir = gj_test_scratch_dir("eval_network_checks");
    assert_non_null(dir);
    write_ramp(dir, "p50x3.f32", 150, 0.0f, 0.01f);
    write_ramp(dir, "p50x5.f32", 250, 0.0f, 0.01f);
    write_ramp(dir, "w.f32", EVAL_MODEL_PARAMS, -0.5f, 0.01f);
    write_ramp(dir, "w_short.f32", EVAL_MODEL_PARAMS - 1, -0.5f, 0.01f);
    write_ramp(dir, "g50x3.f32", 150, -0.5f, 0.01f);
    write_ramp(dir, "g49x3.f32", 147, -0.5f, 0.01f);
    char p3[1024], p5[1024], w[1024], w_short[1024], g[1024], g_short[1024], out[1024];
    snprintf(p3, sizeof p3, "%s/p50x3.f32", dir);
    snprintf(p5, sizeof p5, "%s/p50x5.f32", dir);
    snprintf(w, sizeof w, "%s/w.f32", dir);
    snprintf(w_short, sizeof w_short, "%s/w_short.f32", dir);
    snprintf(g, sizeof g, "%s/g50x3.f32", dir);
    snprintf(g_short, sizeof g_short, "%s/g49x3.f32", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    gj_cli_result r;
    RUN(&r, "eval", "--config", EVAL_MODEL, "--points", p3, "--params", w, "--out-dir", out, "--max-level", "0.5");
    assert_refused(&r, 2, "--max-level: only for an encoding configuration");
    gj_cli_result_free(&r);
    RUN(&r, "eval", "--config", EVAL_MODEL, "--points", p3, "--params", w, "--dl-dy", g, "--dl-ddldx", p3,
        "--out-dir", out);
    assert_refused(&r, 2, "--dl-ddldx: only for an encoding configuration");
    gj_cli_result_free(&r);
    RUN(&r, "eval", "--config", EVAL_MODEL, "--points", p3, "--params", w, "--out-dir", out, "--arch", "sm_80");
    assert_refused(&r, 2, "--arch: only for an encoding configuration");
    gj_cli_result_free(&r);
    RUN(&r, "eval", "--config", "{\"otype\": \"HashGrid\"}", "--points", p3, "--params", w, "--out-dir", out,
        "--output-dims", "3");
    assert_refused(&r, 2, "--output-dims: only for a network or model configuration");
    gj_cli_result_free(&r);
    /* The network's own errors name the key. */
    RUN(&r, "eval", "--config", "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 24}", "--dims", "5", "--output-dims",
        "2", "--points", p5, "--params", w, "--out-dir", out);
    assert_refused(&r, 1, "n_neurons");
    gj_cli_result_free(&r);
    /* Sizes: P a multiple of D, W n_params, G N * n_output_dims. */
    RUN(&r, "eval", "--config", EVAL_MODEL, "--points", p5, "--params", w, "--out-dir", out);
    assert_refused(&r, 1, "holds 250 floats, not a multiple of D = 3");
    gj_cli_result_free(&r);
    RUN(&r, "eval", "--config", EVAL_MODEL, "--points", p3, "--params", w_short, "--out-dir", out);
    assert_refused(&r, 1, "holds 1535 floats; expected n_params = 1536");
    gj_cli_result_free(&r);
    RUN(&r, "eval", "--config", EVAL_MODEL, "--points", p3, "--params", w, "--dl-dy", g_short, "--out-dir", out);
    assert_refused(&r, 1, "holds 147 floats; expected N * n_output_dims = 150");
    gj_cli_result_free(&r);
    /* A network alone: N * n_input_dims points; its output width from --output-dims. */
    RUN(&r, "eval", "--config", EVAL_NETWORK, "--dims", "3", "--points", p5, "--params", w, "--out-dir", out,
        "--output-dims", "3");
    assert_refused(&r, 1, "holds 250 floats, not a multiple of n_input_dims = 3");
    gj_cli_result_free(&r);
    /* Every input accepted: without a driver the GPU is what is missing, and nothing is written. */
    setenv("GRIDJIT_DRIVER", "off", 1);
    RUN(&r, "eval", "--config", EVAL_MODEL, "--points", p3, "--params", w, "--dl-dy", g, "--out-dir", out);
    unsetenv("GRIDJIT_DRIVER");
    assert_refused(&r, 1, "gridjit eval: no GPU");
    gj_cli_result_free(&r);
    assert_int_equal(out_size(dir, "y.f32"), -1);
    free(dir);
}

/* eval of a model and of a network through the fake libcuda of tests/fake_cuda (NVRTC compiles for
 * real, nothing runs, the downloads leave zeros): the files its help lists, of the sizes it
 * states, and the summary line. The values are checked on a device (tests/test_gpu_cli.c). */
static void eval_writes_network_outputs(void **state) {
    (void)state;
    const char *fake = getenv("GRIDJIT_FAKE_DRIVER");
    if (!fake) {
        printf("SKIPPED: GRIDJIT_FAKE_DRIVER is not set\n");
        skip();
    }
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    char *dir = gj_test_scratch_dir("eval_network_outputs");
    assert_non_null(dir);
    write_ramp(dir, "p.f32", 150, 0.0f, 0.01f);
    write_ramp(dir, "w.f32", EVAL_MODEL_PARAMS, -0.5f, 0.01f);
    write_ramp(dir, "g.f32", 150, -0.5f, 0.01f);
    char p[1024], w[1024], g[1024], out[1024];
    snprintf(p, sizeof p, "%s/p.f32", dir);
    snprintf(w, sizeof w, "%s/w.f32", dir);
    snprintf(g, sizeof g, "%s/g.f32", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    setenv("GRIDJIT_DRIVER", fake, 1);
    gj_cli_result r;
    RUN(&r, "eval", "--config", EVAL_MODEL, "--points", p, "--params", w, "--dl-dy", g, "--out-dir", out);
    assert_success(&r);
    assert_non_null(strstr(r.out, "evaluated 50 points (model, 3 inputs, 3 outputs, 1536 parameters) on "));
    gj_cli_result_free(&r);
    assert_int_equal(out_size(dir, "y.f32"), 150 * 4);
    assert_int_equal(out_size(dir, "dparams.f32"), EVAL_MODEL_PARAMS * 4);
    assert_int_equal(out_size(dir, "dx.f32"), 150 * 4);
    assert_int_equal(out_size(dir, "bb_dx.f32"), -1);

    /* A network alone, 3 inputs to 5 outputs, inference: y alone (16 x 16 + 16 x 16 weights). */
    char *dir2 = gj_test_scratch_dir("eval_network_inference");
    assert_non_null(dir2);
    write_ramp(dir2, "w.f32", 512, -0.5f, 0.01f);
    char w2[1024], out2[1024];
    snprintf(w2, sizeof w2, "%s/w.f32", dir2);
    snprintf(out2, sizeof out2, "%s/out", dir2);
    RUN(&r, "eval", "--config", EVAL_NETWORK, "--dims", "3", "--output-dims", "5", "--points", p, "--params", w2,
        "--out-dir", out2);
    unsetenv("GRIDJIT_DRIVER");
    assert_success(&r);
    assert_non_null(strstr(r.out, "evaluated 50 points (network, 3 inputs, 5 outputs, 512 parameters) on "));
    gj_cli_result_free(&r);
    assert_int_equal(out_size(dir2, "y.f32"), 50 * 5 * 4);
    assert_int_equal(out_size(dir2, "dparams.f32"), -1);
    assert_int_equal(out_size(dir2, "dx.f32"), -1);
    free(dir2);
    free(dir);
}

/* precompile of a model and a network together: a model module's fourteen programs
 * (inference, the forward for training, the backward, the backward with dL/dinput, the
 * training step, Adam, and its encoding module's eight for dL/dx and the training step), a
 * network's six (the same but the encoding's), for two architectures;
 * again, all of them found in the cache. A network's errors name the configuration and the key. */
static void precompile_takes_networks(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    char *dir = gj_test_scratch_dir("precompile_networks");
    gj_cli_result r;
    static const char small_model[] = "{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 2}, \"network\": "
                                "{\"n_neurons\": 16, \"n_hidden_layers\": 1, \"n_output_dims\": 3}}";
    static const char network[] = "{\"otype\": \"CutlassMLP\", \"n_neurons\": 16, \"n_hidden_layers\": 0, "
                                  "\"n_input_dims\": 5, \"n_output_dims\": 2}";
    RUN(&r, "precompile", "--config", small_model, "--config", network, "--arch", "sm_80,sm_90", "--cache-dir", dir);
    assert_success(&r);
    assert_non_null(strstr(r.out, "precompiled 2 configurations x 2 architectures"));
    /* A retried run finds what the first attempt compiled (run_cli.h). */
    assert_non_null(strstr(r.out, r.retried ? ": 0 programs compiled, 40 already cached, 0 failed"
                                            : ": 40 programs compiled, 0 already cached, 0 failed"));
    gj_cli_result_free(&r);
    RUN(&r, "precompile", "--config", network, "--config", small_model, "--arch", "sm_90,sm_80", "--cache-dir", dir);
    assert_success(&r);
    assert_non_null(strstr(r.out, ": 0 programs compiled, 40 already cached, 0 failed"));
    gj_cli_result_free(&r);
    /* --output-dims gives a model its width; a width given both ways must agree. */
    RUN(&r, "precompile", "--config", network, "--output-dims", "4", "--arch", "sm_90", "--cache-dir", dir);
    assert_refused(&r, 1, "n_output_dims: the configuration says 2 but the caller passed n_output_dims = 4");
    gj_cli_result_free(&r);
    RUN(&r, "precompile", "--config", "{\"encoding\": {\"otype\": \"HashGrid\"}, \"network\": {\"n_neurons\": 16}}",
        "--arch", "sm_80", "--cache-dir", dir);
    assert_refused(&r, 1, "network: n_output_dims");
    gj_cli_result_free(&r);
    RUN(&r, "precompile", "--config", "{\"otype\": \"HashGrid\"}", "--output-dims", "2", "--arch", "sm_80",
        "--cache-dir", dir);
    assert_refused(&r, 2, "--output-dims: only for a network or model configuration");
    gj_cli_result_free(&r);
    free(dir);
}

/* dump prints a network's unit (device functions and kernels) and a model's (the encoding's
 * device functions, then the network's), byte-identical from run to run. */
static void dump_prints_networks_and_models(void **state) {
    (void)state;
    gj_cli_result r, again;
    RUN(&r, "dump", "--config", "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 32, \"n_hidden_layers\": 1}", "--dims",
        "5", "--output-dims", "2", "--name", "tiny");
    assert_success(&r);
    const char *words[] = {"struct tiny_config {", "static constexpr int IN = 5;", "tiny_out_t tiny(", "void tiny_bwd(",
                           "tiny_inference(", "tiny_backward("};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        if (!strstr(r.out, words[i])) {
            fail_msg("dump of a network lacks '%s'", words[i]);
        }
    }
    RUN(&again, "dump", "--config", "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 32, \"n_hidden_layers\": 1}",
        "--dims", "5", "--output-dims", "2", "--name", "tiny");
    assert_string_equal(r.out, again.out);
    gj_cli_result_free(&again);
    gj_cli_result_free(&r);
    RUN(&r, "dump", "--config", model, "-f");
    assert_success(&r);
    assert_non_null(strstr(r.out, "gj_network_encoding_out_t gj_network_encoding("));
    assert_non_null(strstr(r.out, "gj_network_out_t gj_network_fwd("));
    assert_null(strstr(r.out, "__global__"));
    gj_cli_result_free(&r);
    RUN(&r, "dump", "--config", "{\"n_neurons\": 16}", "--dims", "3");
    assert_refused(&r, 1, "n_output_dims");
    gj_cli_result_free(&r);
}

/* --network offers a network to a source of one's own, as --encoding offers an encoding:
 * dump shows its header, compile builds the kernel that calls it; malformed specs are
 * usage errors naming the option. */
static void sources_take_networks(void **state) {
    (void)state;
    static const char source[] =
        "#include \"geo.cuh\"\n"
        "#include \"mlp.cuh\"\n"
        "extern \"C\" __global__ void __launch_bounds__(128) field(const float* xs, const gj_half* pg,\n"
        "        const gj_half* pm, float* out, int n) {\n"
        "    __shared__ __align__(16) gj_u16 scratch[4][mlp_config::SCRATCH_HALVES];\n"
        "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    geo_in_t x;\n"
        "    for (int d = 0; d < geo_config::D; ++d) x.v[d] = i < n ? xs[3 * i + d] : 0.0f;\n"
        "    const geo_out_t f = geo(x, pg, nullptr);\n"
        "    const mlp_out_t y = mlp(&f.v[0], i < n, pm, scratch[threadIdx.x / 32]);\n"
        "    if (i < n) out[i] = y.v[0];\n"
        "}\n";
    char *dir = gjt_scratch("cli_network_source");
    char file[2200], cubin[2200];
    snprintf(file, sizeof file, "%s/field.cu", dir);
    snprintf(cubin, sizeof cubin, "%s/field.cubin", dir);
    gjt_write_file(file, source, strlen(source));
    const char *geo = "geo={\"otype\": \"HashGrid\", \"n_levels\": 8}:3";
    const char *mlp = "mlp={\"otype\": \"FullyFusedMLP\", \"n_neurons\": 32, \"n_hidden_layers\": 2}:16:1";
    gj_cli_result r;
    RUN(&r, "dump", "--source", file, "--encoding", geo, "--network", mlp);
    assert_success(&r);
    const char *header = strstr(r.out, "// ===== mlp.cuh =====");
    assert_non_null(header);
    assert_non_null(strstr(header, "struct mlp_config {"));
    assert_non_null(strstr(header, "mlp_out_t mlp_fwd("));
    assert_true(strstr(r.out, "// ===== geo.cuh =====") < header);
    gj_cli_result_free(&r);
    if (gj_test_have_nvrtc()) {
        RUN(&r, "compile", "--source", file, "--encoding", geo, "--network", mlp, "--kernel", "field", "--arch", "sm_90",
            "--no-cache", "-o", cubin);
        assert_success(&r);
        assert_non_null(strstr(r.out, "&field -> field"));
        gj_cli_result_free(&r);
    }
    RUN(&r, "dump", "--source", file, "--encoding", geo, "--network", "mlp={\"otype\": \"FullyFusedMLP\"}:16");
    assert_refused(&r, 2, "--network mlp: expected NAME=CONFIG[:IN:OUT]");
    gj_cli_result_free(&r);
    RUN(&r, "dump", "--source", file, "--network", "{\"otype\": \"FullyFusedMLP\"}");
    assert_refused(&r, 2, "--network: expected NAME=CONFIG[:IN:OUT]");
    gj_cli_result_free(&r);
    RUN(&r, "dump", "--source", file, "--network", "mlp={\"otype\": \"FullyFusedMLP\"}:16:0");
    assert_refused(&r, 2, "OUT must be at least 1");
    gj_cli_result_free(&r);
    RUN(&r, "dump", "--source", file, "--network", "mlp={\"otype\": \"FullyFusedMLP\", \"n_neurons\": 48}:16:1");
    assert_refused(&r, 1, "--network mlp");
    assert_non_null(strstr(r.err, "n_neurons"));
    gj_cli_result_free(&r);
    free(dir);
}

/* compile of a network: its whole unit, the four kernels, into network.cubin or -o FILE. */
static void compile_takes_networks(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/net.cubin", getenv("GRIDJIT_TEST_TMP"));
    gj_cli_result r;
    RUN(&r, "compile", "--config", "{\"n_neurons\": 16, \"n_hidden_layers\": 1}", "--dims", "3", "--output-dims", "2",
        "--arch", "sm_80", "-o", path);
    assert_success(&r);
    assert_non_null(strstr(r.out, "&gj_network_backward -> gj_network_backward"));
    gj_cli_result_free(&r);
    RUN(&r, "compile", "--config", "{\"otype\": \"HashGrid\"}", "--output-dims", "2", "--arch", "sm_80");
    assert_refused(&r, 2, "--output-dims: only for a network or model configuration");
    gj_cli_result_free(&r);
}

static void help_documents_the_options(void **state) {
    (void)state;
    gj_cli_result r;
    RUN(&r, "info", "--help");
    assert_success(&r);
    const char *words[] = {"--output-dims", "\"kind\"", "\"layers\"", "\"params_offset\"", "\"input_padding\"",
                           "{\"encoding\": {...}, \"network\": {...}}"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        if (!strstr(r.out, words[i])) {
            fail_msg("info --help lacks '%s'", words[i]);
        }
    }
    gj_cli_result_free(&r);
}

int main(void) {
    if (!gj_test_cli_path()) {
        printf("GRIDJIT_CLI is not set: run through ctest\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(info_json_of_a_model),
        cmocka_unit_test(info_json_of_networks),
        cmocka_unit_test(info_summary_of_a_model),
        cmocka_unit_test(info_reads_a_model_file),
        cmocka_unit_test(info_refuses_bad_networks),
        cmocka_unit_test(eval_checks_network_inputs),
        cmocka_unit_test(eval_writes_network_outputs),
        cmocka_unit_test(precompile_takes_networks),
        cmocka_unit_test(dump_prints_networks_and_models),
        cmocka_unit_test(sources_take_networks),
        cmocka_unit_test(compile_takes_networks),
        cmocka_unit_test(help_documents_the_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
