/* `gridjit info` with network and model configurations, run as a child process: the summary,
 * the JSON object against the layout rules of docs/networks.md computed here, the widths from
 * options or keys, refusals, and the other commands' refusal of networks. */
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
    /* Encodings are still encodings, with their own messages. */
    RUN(&r, "info", "--config", "{\"n_levels\": 4, \"bogus_key\": 1}");
    assert_refused(&r, 1, "unknown key 'bogus_key'");
    gj_cli_result_free(&r);
}

/* The commands that take encodings only say so, rather than the encoding parser's complaint. */
static void other_commands_refuse_networks_plainly(void **state) {
    (void)state;
    gj_cli_result r;
    RUN(&r, "eval", "--config", "{\"otype\": \"CutlassMLP\"}", "--points", "/nonexistent", "--params", "/nonexistent",
        "--out-dir", "/nonexistent");
    assert_refused(&r, 1, "is a network configuration: `gridjit eval` takes encodings only so far");
    gj_cli_result_free(&r);
}

/* precompile of a model, a network and an encoding together: a model module's eight programs
 * (inference, the forward for training, the backward, the backward with dL/dinput, and its
 * encoding module's four for dL/dx), a network's four (the same but the encoding's), for two
 * architectures;
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
    assert_non_null(strstr(r.out, r.retried ? ": 0 programs compiled, 36 already cached, 0 failed"
                                            : ": 36 programs compiled, 0 already cached, 0 failed"));
    gj_cli_result_free(&r);
    RUN(&r, "precompile", "--config", network, "--config", small_model, "--arch", "sm_90,sm_80", "--cache-dir", dir);
    assert_success(&r);
    assert_non_null(strstr(r.out, ": 0 programs compiled, 36 already cached, 0 failed"));
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
        cmocka_unit_test(other_commands_refuse_networks_plainly),
        cmocka_unit_test(precompile_takes_networks),
        cmocka_unit_test(dump_prints_networks_and_models),
        cmocka_unit_test(sources_take_networks),
        cmocka_unit_test(compile_takes_networks),
        cmocka_unit_test(help_documents_the_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
