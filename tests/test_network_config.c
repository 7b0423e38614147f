/* The network and model configurations (docs/networks.md §1): tiny-cuda-nn's defaults,
 * every accepted value and spelling, every refusal and its message, the lenient parse, and
 * the canonical JSON round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_config.h"
#include "model/network_config.h"

/* ------------------------------------------------------------ helpers */

static gj__network_config parse_ok(const char *json, uint32_t n_in, uint32_t n_out) {
    gj__network_config c;
    char err[1024] = "";
    gj_status s = gj__network_config_parse_ex(json, n_in, n_out, 0, NULL, &c, err, sizeof err);
    if (s != GJ_OK) {
        fail_msg("expected %s (%u -> %u) to parse, got status %d: %s", json, n_in, n_out, (int)s, err);
    }
    assert_string_equal(err, "");
    return c;
}

/* Refused with GJ_ERROR_INVALID_CONFIG, a one-line message containing want, a zeroed struct. */
static void expect_error_dims(const char *json, uint32_t n_in, uint32_t n_out, const char *want) {
    gj__network_config c;
    memset(&c, 0xAB, sizeof c);
    char err[1024] = "";
    gj_status s = gj__network_config_parse_ex(json, n_in, n_out, 0, NULL, &c, err, sizeof err);
    if (s != GJ_ERROR_INVALID_CONFIG) {
        fail_msg("expected %s to be refused, got status %d", json ? json : "(NULL)", (int)s);
    }
    if (!strstr(err, want)) {
        fail_msg("message for %s\n  is: %s\n  lacks: %s", json ? json : "(NULL)", err, want);
    }
    assert_null(strchr(err, '\n'));
    gj__network_config zero;
    memset(&zero, 0, sizeof zero);
    assert_memory_equal(&c, &zero, sizeof c);
}

static void expect_error(const char *json, const char *want) {
    expect_error_dims(json, 3, 1, want);
}

static gj__model_config model_ok(const char *json, uint32_t n_in, uint32_t n_out) {
    gj__model_config m;
    char err[1024] = "";
    gj_status s = gj__model_config_parse_ex(json, n_in, n_out, 0, NULL, &m, err, sizeof err);
    if (s != GJ_OK) {
        fail_msg("expected model %s to parse, got status %d: %s", json, (int)s, err);
    }
    return m;
}

static void expect_model_error(const char *json, uint32_t n_in, uint32_t n_out, const char *want) {
    gj__model_config m;
    memset(&m, 0xAB, sizeof m);
    char err[1024] = "";
    gj_status s = gj__model_config_parse_ex(json, n_in, n_out, 0, NULL, &m, err, sizeof err);
    if (s != GJ_ERROR_INVALID_CONFIG) {
        fail_msg("expected model %s to be refused, got status %d", json ? json : "(NULL)", (int)s);
    }
    if (!strstr(err, want)) {
        fail_msg("message for model %s\n  is: %s\n  lacks: %s", json ? json : "(NULL)", err, want);
    }
    assert_null(strchr(err, '\n'));
    gj__model_config zero;
    memset(&zero, 0, sizeof zero);
    assert_memory_equal(&m, &zero, sizeof m);
}

/* ----------------------------------------------------------- defaults */

/* tiny-cuda-nn's network.cu: otype "MLP" (a CutlassMLP), 128 neurons, 5 hidden layers,
 * ReLU, no output activation. */
static void empty_object_gives_tcnn_defaults(void **state) {
    (void)state;
    gj__network_config c = parse_ok("{}", 3, 1);
    assert_int_equal(c.otype, GJ_NETWORK_CUTLASS_MLP);
    assert_int_equal(c.n_neurons, 128);
    assert_int_equal(c.n_hidden_layers, 5);
    assert_int_equal(c.activation, GJ_ACTIVATION_RELU);
    assert_int_equal(c.output_activation, GJ_ACTIVATION_NONE);
    assert_int_equal(c.n_input_dims, 3);
    assert_int_equal(c.n_output_dims, 1);
}

static void otype_spellings(void **state) {
    (void)state;
    static const struct {
        const char *name;
        gj_network_type want;
    } cases[] = {
        {"FullyFusedMLP", GJ_NETWORK_FULLY_FUSED_MLP}, {"fullyfusedmlp", GJ_NETWORK_FULLY_FUSED_MLP},
        {"FULLYFUSEDMLP", GJ_NETWORK_FULLY_FUSED_MLP}, {"MegakernelMLP", GJ_NETWORK_FULLY_FUSED_MLP},
        {"CutlassMLP", GJ_NETWORK_CUTLASS_MLP},        {"cutlassMLP", GJ_NETWORK_CUTLASS_MLP},
        {"MLP", GJ_NETWORK_CUTLASS_MLP},               {"mlp", GJ_NETWORK_CUTLASS_MLP},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char json[128];
        snprintf(json, sizeof json, "{\"otype\": \"%s\"}", cases[i].name);
        assert_int_equal(parse_ok(json, 3, 1).otype, cases[i].want);
    }
    assert_string_equal(gj__network_type_name(GJ_NETWORK_FULLY_FUSED_MLP), "FullyFusedMLP");
    assert_string_equal(gj__network_type_name(GJ_NETWORK_CUTLASS_MLP), "CutlassMLP");
    expect_error("{\"otype\": \"HashGrid\"}",
                 "otype: must be \"FullyFusedMLP\", \"CutlassMLP\", \"MLP\" or \"MegakernelMLP\" (got \"HashGrid\")");
    expect_error("{\"otype\": \"FullyFused\"}", "letter case does not matter");
    expect_error("{\"otype\": 1}", "(got 1)");
}

static void n_neurons_is_16_32_64_or_128(void **state) {
    (void)state;
    const uint32_t widths[] = {16, 32, 64, 128};
    for (int i = 0; i < 4; i++) {
        char json[128];
        snprintf(json, sizeof json, "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": %u}", widths[i]);
        assert_int_equal(parse_ok(json, 3, 1).n_neurons, widths[i]);
        snprintf(json, sizeof json, "{\"otype\": \"CutlassMLP\", \"n_neurons\": %u.0}", widths[i]);
        assert_int_equal(parse_ok(json, 3, 1).n_neurons, widths[i]);
    }
    expect_error("{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 48}", "n_neurons: must be 16, 32, 64 or 128 (got 48)");
    expect_error("{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 256}", "(got 256)");
    expect_error("{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 0}", "(got 0)");
    expect_error("{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64.5}", "(got 64.5)");
    expect_error("{\"otype\": \"FullyFusedMLP\", \"n_neurons\": \"64\"}", "(got \"64\")");
    expect_error("{\"otype\": \"FullyFusedMLP\", \"n_neurons\": -64}", "(got -64)");
    /* A CutlassMLP is told why: tiny-cuda-nn would take the width. */
    expect_error("{\"otype\": \"CutlassMLP\", \"n_neurons\": 96}", "tiny-cuda-nn's CutlassMLP takes other widths");
    char err[1024];
    gj__network_config c;
    gj__network_config_parse_ex("{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 96}", 3, 1, 0, NULL, &c, err,
                                sizeof err);
    assert_null(strstr(err, "CutlassMLP takes"));
}

static void n_hidden_layers_per_otype(void **state) {
    (void)state;
    for (uint32_t n = 1; n <= GJ_NETWORK_MAX_HIDDEN_LAYERS; n++) {
        char json[128];
        snprintf(json, sizeof json, "{\"otype\": \"FullyFusedMLP\", \"n_hidden_layers\": %u}", n);
        assert_int_equal(parse_ok(json, 3, 1).n_hidden_layers, n);
    }
    /* tiny-cuda-nn's FullyFusedMLP throws for 0; its CutlassMLP makes one matrix. */
    expect_error("{\"otype\": \"FullyFusedMLP\", \"n_hidden_layers\": 0}",
                 "n_hidden_layers: must be an integer from 1 to 32 for a FullyFusedMLP (0 to 32 for a CutlassMLP) "
                 "(got 0)");
    assert_int_equal(parse_ok("{\"otype\": \"MLP\", \"n_hidden_layers\": 0}", 3, 1).n_hidden_layers, 0);
    expect_error("{\"otype\": \"MLP\", \"n_hidden_layers\": 33}", "n_hidden_layers: must be an integer from 0 to 32 "
                                                                 "(got 33)");
    expect_error("{\"otype\": \"FullyFusedMLP\", \"n_hidden_layers\": 2.5}", "(got 2.5)");
    expect_error("{\"otype\": \"FullyFusedMLP\", \"n_hidden_layers\": true}", "(got true)");
}

static void activations_in_tcnn_spellings(void **state) {
    (void)state;
    static const struct {
        const char *name;
        gj_activation want;
    } cases[] = {
        {"None", GJ_ACTIVATION_NONE},           {"ReLU", GJ_ACTIVATION_RELU},
        {"relu", GJ_ACTIVATION_RELU},           {"LeakyReLU", GJ_ACTIVATION_LEAKY_RELU},
        {"leakyrelu", GJ_ACTIVATION_LEAKY_RELU}, {"Exponential", GJ_ACTIVATION_EXPONENTIAL},
        {"Sine", GJ_ACTIVATION_SINE},           {"SINE", GJ_ACTIVATION_SINE},
        {"Sigmoid", GJ_ACTIVATION_SIGMOID},     {"Squareplus", GJ_ACTIVATION_SQUAREPLUS},
        {"SquarePlus", GJ_ACTIVATION_SQUAREPLUS}, {"Softplus", GJ_ACTIVATION_SOFTPLUS},
        {"Tanh", GJ_ACTIVATION_TANH},           {"SiLU", GJ_ACTIVATION_SILU},
        {"silu", GJ_ACTIVATION_SILU},           {"none", GJ_ACTIVATION_NONE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char json[160];
        snprintf(json, sizeof json, "{\"activation\": \"%s\", \"output_activation\": \"%s\"}", cases[i].name,
                 cases[i].name);
        gj__network_config c = parse_ok(json, 3, 1);
        assert_int_equal(c.activation, cases[i].want);
        assert_int_equal(c.output_activation, cases[i].want);
    }
    const char *canonical[] = {"None", "ReLU", "LeakyReLU", "Exponential", "Sine",
                               "Sigmoid", "Squareplus", "Softplus", "Tanh", "SiLU"};
    for (int a = 0; a < 10; a++) {
        assert_string_equal(gj__activation_name((gj_activation)a), canonical[a]);
    }
    expect_error("{\"activation\": \"ReLU6\"}",
                 "activation: must be \"None\", \"ReLU\", \"LeakyReLU\", \"Exponential\", \"Sine\", \"Sigmoid\", "
                 "\"Squareplus\", \"Softplus\", \"Tanh\" or \"SiLU\" (got \"ReLU6\"); letter case does not matter");
    expect_error("{\"output_activation\": \"Linear\"}", "output_activation: must be");
    expect_error("{\"output_activation\": null}", "(got null)");
}

static void widths_from_keys_or_arguments(void **state) {
    (void)state;
    gj__network_config c = parse_ok("{\"n_input_dims\": 5, \"n_output_dims\": 7}", 0, 0);
    assert_int_equal(c.n_input_dims, 5);
    assert_int_equal(c.n_output_dims, 7);
    c = parse_ok("{\"n_input_dims\": 5, \"n_output_dims\": 7}", 5, 7); /* agreeing */
    assert_int_equal(c.n_input_dims, 5);
    c = parse_ok("{}", 1024, 1024); /* the largest */
    assert_int_equal(c.n_input_dims, 1024);
    assert_int_equal(c.n_output_dims, 1024);
    expect_error_dims("{\"n_input_dims\": 5}", 4, 1,
                      "n_input_dims: the configuration says 5 but the caller passed n_input_dims = 4");
    expect_error_dims("{\"n_output_dims\": 2}", 3, 1,
                      "n_output_dims: the configuration says 2 but the caller passed n_output_dims = 1");
    expect_error_dims("{}", 0, 1, "n_input_dims: required: give the key \"n_input_dims\"");
    expect_error_dims("{}", 3, 0, "n_output_dims: required");
    expect_error_dims("{}", 1025, 1, "n_input_dims: must be from 1 to 1024 (got n_input_dims = 1025)");
    expect_error_dims("{}", 3, 1025, "n_output_dims: must be from 1 to 1024 (got n_output_dims = 1025)");
    expect_error_dims("{\"n_input_dims\": 0}", 0, 1, "n_input_dims: must be an integer from 1 to 1024 (got 0)");
    expect_error_dims("{\"n_output_dims\": 1025}", 3, 0, "n_output_dims: must be an integer from 1 to 1024 (got 1025)");
}

static void unknown_keys_and_json_errors(void **state) {
    (void)state;
    expect_error("{\"n_neuron\": 64}", "unknown key 'n_neuron'; did you mean 'n_neurons'? (keys are case-sensitive)");
    expect_error("{\"N_HIDDEN_LAYERS\": 2}", "did you mean 'n_hidden_layers'?");
    expect_error("{\"output_activaton\": \"None\"}", "did you mean 'output_activation'?");
    /* tiny-cuda-nn 2.0's MLPs read no "feedback_alignment" (older releases did). */
    expect_error("{\"feedback_alignment\": true}",
                 "unknown key 'feedback_alignment' (known keys: otype, n_neurons, n_hidden_layers, activation, "
                 "output_activation, n_input_dims, n_output_dims)");
    expect_error("{\"n_neurons\": 64, \"n_neurons\": 32}", "n_neurons: given twice");
    expect_error(NULL, "no JSON text (NULL)");
    expect_error("", "empty text; expected a JSON object such as {\"otype\": \"FullyFusedMLP\"");
    expect_error("{\"n_neurons\": 64,}", "invalid JSON near line 1");
    expect_error("{'otype': 'MLP'}", "JSON strings take double quotes");
    expect_error("[]", "must be a JSON object such as {\"otype\": \"FullyFusedMLP\"");
}

/* GJ_CONFIG_IGNORE_UNKNOWN_KEYS: skipped keys reported with the strict parser's message,
 * known keys still checked. */
static void unknown_keys_can_be_skipped(void **state) {
    (void)state;
    char err[1024], strict[1024];
    gj__network_config c, plain;
    gj__strbuf ignored;
    gj__sb_init(&ignored);
    const char *json = "{\"n_neuron\": 1, \"n_neurons\": 32, \"loss\": {\"otype\": \"L2\"}}";
    assert_int_equal(gj__network_config_parse_ex(json, 3, 1, GJ_CONFIG_IGNORE_UNKNOWN_KEYS, &ignored, &c, err,
                                                 sizeof err),
                     GJ_OK);
    plain = parse_ok("{\"n_neurons\": 32}", 3, 1);
    assert_memory_equal(&c, &plain, sizeof c);
    char *text = gj__sb_take(&ignored);
    assert_non_null(text);
    char *second = strchr(text, '\n');
    assert_non_null(second);
    *second++ = '\0';
    assert_null(strchr(second, '\n'));
    assert_int_equal(gj__network_config_parse_ex("{\"n_neuron\": 1}", 3, 1, 0, NULL, &c, strict, sizeof strict),
                     GJ_ERROR_INVALID_CONFIG);
    assert_string_equal(text, strict);
    assert_non_null(strstr(second, "unknown key 'loss' (known keys: otype,"));
    free(text);
    assert_int_equal(gj__network_config_parse_ex("{\"x\": 1, \"n_neurons\": 3}", 3, 1, GJ_CONFIG_IGNORE_UNKNOWN_KEYS,
                                                 NULL, &c, err, sizeof err),
                     GJ_ERROR_INVALID_CONFIG);
    assert_non_null(strstr(err, "n_neurons: must be 16"));
}

/* Every configuration written back canonically parses to the same struct, and the
 * canonical text is a fixed point. */
static void canonical_json_round_trips(void **state) {
    (void)state;
    const char *configs[] = {
        "{}",
        "{\"otype\": \"megakernelmlp\", \"n_neurons\": 16, \"n_hidden_layers\": 1, \"activation\": \"sine\"}",
        "{\"otype\": \"mlp\", \"n_hidden_layers\": 0, \"output_activation\": \"SIGMOID\"}",
        "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64, \"n_hidden_layers\": 2, \"activation\": \"LeakyReLU\", "
        "\"output_activation\": \"Exponential\"}",
    };
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        gj__network_config c = parse_ok(configs[i], 27, 3);
        char *text = gj__network_config_to_json(&c, true);
        assert_non_null(text);
        gj__network_config again = parse_ok(text, 0, 0);
        assert_memory_equal(&c, &again, sizeof c);
        char *text2 = gj__network_config_to_json(&again, true);
        assert_string_equal(text, text2);
        free(text);
        free(text2);
    }
    gj__network_config c = parse_ok("{\"otype\": \"mlp\", \"activation\": \"leakyrelu\"}", 3, 1);
    char *text = gj__network_config_to_json(&c, true);
    assert_string_equal(text, "{\"otype\": \"CutlassMLP\", \"n_neurons\": 128, \"n_hidden_layers\": 5, "
                              "\"activation\": \"LeakyReLU\", \"output_activation\": \"None\", \"n_input_dims\": 3, "
                              "\"n_output_dims\": 1}");
    free(text);
    text = gj__network_config_to_json(&c, false);
    assert_null(strstr(text, "n_input_dims"));
    free(text);
}

/* ------------------------------------------------------------- models */

static const char model_json[] =
    "{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 8, \"n_features_per_level\": 4},"
    " \"network\": {\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64, \"n_hidden_layers\": 2, \"n_output_dims\": 3}}";

static void a_model_has_an_encoding_and_a_network(void **state) {
    (void)state;
    gj__model_config m = model_ok(model_json, 2, 0);
    assert_true(m.has_encoding);
    assert_int_equal(m.encoding.n_dims, 2);
    assert_int_equal(m.encoding.n_levels, 8);
    /* The network's input is the encoding's output: 8 levels x 4 features. */
    assert_int_equal(m.network.n_input_dims, 32);
    assert_int_equal(m.network.n_output_dims, 3);
    assert_int_equal(m.network.otype, GJ_NETWORK_FULLY_FUSED_MLP);
    /* tinycudann's hyperparams() of a model, otype included, parse too. */
    m = model_ok("{\"otype\": \"NetworkWithInputEncoding\", \"encoding\": {}, \"network\": {}}", 0, 4);
    assert_int_equal(m.encoding.n_dims, 3);
    assert_int_equal(m.network.n_input_dims, 32); /* the default HashGrid: 16 levels x 2 */
    assert_int_equal(m.network.n_output_dims, 4);
    /* Anything without those keys is a network alone. */
    m = model_ok("{\"otype\": \"FullyFusedMLP\"}", 5, 6);
    assert_false(m.has_encoding);
    assert_int_equal(m.network.n_input_dims, 5);
}

static void model_errors_name_the_part(void **state) {
    (void)state;
    expect_model_error("{\"encoding\": {\"n_levels\": 0}, \"network\": {}}", 3, 1,
                       "encoding: n_levels: must be an integer from 1 to 128 (got 0)");
    expect_model_error("{\"encoding\": {}, \"network\": {\"n_neurons\": 48}}", 3, 1,
                       "network: n_neurons: must be 16, 32, 64 or 128 (got 48)");
    expect_model_error("{\"encoding\": {}, \"network\": {\"n_neuron\": 64}}", 3, 1,
                       "network: unknown key 'n_neuron'; did you mean 'n_neurons'?");
    expect_model_error("{\"encoding\": {}}", 3, 1, "network: missing: a model configuration has an \"encoding\" and "
                                                   "a \"network\" object");
    expect_model_error("{\"network\": {}}", 3, 1, "encoding: missing");
    expect_model_error("{\"encoding\": {}, \"network\": {\"n_input_dims\": 32}}", 3, 1,
                       "network: n_input_dims: not used in a model configuration: the network's input is the "
                       "encoding's output (32 features)");
    expect_model_error("{\"encoding\": {}, \"network\": {}}", 3, 0, "network: n_output_dims: required");
    expect_model_error("{\"encoding\": {\"n_dims_to_encode\": 2}, \"network\": {}}", 3, 1,
                       "encoding: n_dims_to_encode: the configuration says 2 but the caller passed n_dims = 3");
    expect_model_error("{\"encoding\": [], \"network\": {}}", 3, 1,
                       "encoding: the configuration must be a JSON object");
    expect_model_error("{\"encoding\": {}, \"network\": 4}", 3, 1, "network: the network configuration must be a "
                                                                    "JSON object");
    expect_model_error("{\"otype\": \"Model\", \"encoding\": {}, \"network\": {}}", 3, 1,
                       "otype: must be \"NetworkWithInputEncoding\" (got \"Model\")");
    /* instant-ngp's files carry tiny-cuda-nn's training keys, which are not gridjit's. */
    expect_model_error("{\"loss\": {}, \"encoding\": {}, \"network\": {}}", 3, 1,
                       "unknown key 'loss' (known keys: otype, encoding, network)");
    expect_model_error("{\"encodng\": {}, \"network\": {}}", 3, 1, "did you mean 'encoding'?");
    expect_model_error("{\"encoding\": {}, \"network\": {}, \"network\": {}}", 3, 1, "network: given twice");
    expect_model_error("{\"encoding\": ", 3, 1, "invalid JSON");
    expect_model_error("[]", 3, 1, "such as {\"encoding\": {\"otype\": \"HashGrid\"}, \"network\"");
    expect_model_error(NULL, 3, 1, "no JSON text (NULL)");
    /* The network alone keeps its own messages, without a part name. */
    expect_model_error("{\"n_neurons\": 48}", 3, 1, "n_neurons: must be");
}

static void model_skips_unknown_keys_per_part(void **state) {
    (void)state;
    const char *json = "{\"loss\": {\"otype\": \"L2\"}, \"optimizer\": {},"
                       " \"encoding\": {\"otype\": \"HashGrid\", \"nested\": []},"
                       " \"network\": {\"otype\": \"FullyFusedMLP\", \"n_neuron\": 16, \"n_output_dims\": 1}}";
    gj__model_config m;
    char err[1024] = "";
    gj__strbuf ignored;
    gj__sb_init(&ignored);
    const uint32_t lenient = GJ_CONFIG_IGNORE_UNKNOWN_KEYS;
    assert_int_equal(gj__model_config_parse_ex(json, 3, 0, lenient, &ignored, &m, err, sizeof err), GJ_OK);
    char *text = gj__sb_take(&ignored);
    assert_non_null(text);
    assert_string_equal(text, "unknown key 'loss' (known keys: otype, encoding, network)\n"
                              "unknown key 'optimizer' (known keys: otype, encoding, network)\n"
                              "encoding: unknown key 'nested' (known keys: otype, type, n_levels, n_features, "
                              "n_grid_features, n_features_per_level, log2_hashmap_size, base_resolution, "
                              "per_level_scale, interpolation, hash, stochastic_interpolation, fixed_point_pos, "
                              "n_dims_to_encode, precision)\n"
                              "network: unknown key 'n_neuron'; did you mean 'n_neurons'? (keys are case-sensitive)");
    free(text);
    assert_int_equal(m.network.n_neurons, 128); /* the misspelt key was skipped, not read */
    /* Strict, the first unknown key fails. */
    assert_int_equal(gj__model_config_parse_ex(json, 3, 0, 0, NULL, &m, err, sizeof err), GJ_ERROR_INVALID_CONFIG);
    assert_non_null(strstr(err, "unknown key 'loss'"));
}

static void model_canonical_json_round_trips(void **state) {
    (void)state;
    gj__model_config m = model_ok(model_json, 2, 0);
    char *text = gj__model_config_to_json(&m);
    assert_non_null(text);
    assert_non_null(strstr(text, "{\"otype\": \"NetworkWithInputEncoding\", \"encoding\": {\"otype\": \"HashGrid\""));
    assert_non_null(strstr(text, "\"network\": {\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64"));
    assert_null(strstr(text, "n_input_dims"));
    gj__model_config again = model_ok(text, 0, 0);
    assert_memory_equal(&m, &again, sizeof m);
    free(text);
    gj__model_config alone = model_ok("{\"otype\": \"CutlassMLP\", \"n_hidden_layers\": 0}", 9, 2);
    text = gj__model_config_to_json(&alone);
    again = model_ok(text, 0, 0);
    assert_memory_equal(&alone, &again, sizeof alone);
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(empty_object_gives_tcnn_defaults),
        cmocka_unit_test(otype_spellings),
        cmocka_unit_test(n_neurons_is_16_32_64_or_128),
        cmocka_unit_test(n_hidden_layers_per_otype),
        cmocka_unit_test(activations_in_tcnn_spellings),
        cmocka_unit_test(widths_from_keys_or_arguments),
        cmocka_unit_test(unknown_keys_and_json_errors),
        cmocka_unit_test(unknown_keys_can_be_skipped),
        cmocka_unit_test(canonical_json_round_trips),
        cmocka_unit_test(a_model_has_an_encoding_and_a_network),
        cmocka_unit_test(model_errors_name_the_part),
        cmocka_unit_test(model_skips_unknown_keys_per_part),
        cmocka_unit_test(model_canonical_json_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
