/* gj_network through the public header (include/gridjit.h, docs/networks.md): making networks
 * and models, their getters and layer table, errors on the context, the lenient report, the
 * hyperparameters' round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridjit.h"

static gj_context *ctx;

static int setup(void **state) {
    (void)state;
    return gj_context_create(&ctx) == GJ_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    gj_context_destroy(ctx);
    return 0;
}

static gj_network *make(const char *json, uint32_t n_in, uint32_t n_out) {
    gj_network *net = NULL;
    gj_status s = gj_network_create(ctx, json, n_in, n_out, &net);
    if (s != GJ_OK) {
        fail_msg("%s: %s: %s", json, gj_status_name(s), gj_context_errmsg(ctx));
    }
    assert_string_equal(gj_context_errmsg(ctx), "");
    return net;
}

static const char ff64x2[] = "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64, \"n_hidden_layers\": 2, "
                             "\"activation\": \"Tanh\", \"output_activation\": \"Sigmoid\"}";

static void a_network_alone(void **state) {
    (void)state;
    gj_network *net = make(ff64x2, 3, 1);
    assert_null(gj_network_encoding(net));
    assert_int_equal(gj_network_otype(net), GJ_NETWORK_FULLY_FUSED_MLP);
    assert_int_equal(gj_network_n_neurons(net), 64);
    assert_int_equal(gj_network_n_hidden_layers(net), 2);
    assert_int_equal(gj_network_activation(net), GJ_ACTIVATION_TANH);
    assert_int_equal(gj_network_output_activation(net), GJ_ACTIVATION_SIGMOID);
    assert_int_equal(gj_network_n_input_dims(net), 3);
    assert_int_equal(gj_network_input_width(net), 3);
    assert_int_equal(gj_network_padded_input_width(net), 16);
    /* tinycudann's Network pads through an identity encoding, with ones. */
    assert_true(gj_network_input_padding(net) == 1.0f);
    assert_int_equal(gj_network_n_output_dims(net), 1);
    assert_int_equal(gj_network_padded_output_width(net), 16);
    /* 64 x 16 + 64 x 64 + 16 x 64 (tests/test_network_layout.c works it out). */
    assert_int_equal(gj_network_n_params(net), 6144);
    assert_int_equal(gj_network_n_mlp_params(net), 6144);
    assert_int_equal(gj_network_n_layers(net), 3);

    const uint32_t fan_in[] = {16, 64, 64}, fan_out[] = {64, 64, 16};
    const uint64_t offset[] = {0, 1024, 5120};
    const gj_activation act[] = {GJ_ACTIVATION_TANH, GJ_ACTIVATION_TANH, GJ_ACTIVATION_SIGMOID};
    for (uint32_t k = 0; k < 3; k++) {
        gj_network_layer_info info;
        gj_network_layer_info_init(&info);
        assert_int_equal(info.struct_size, sizeof info);
        assert_int_equal(gj_network_layer(net, k, &info), GJ_OK);
        assert_int_equal(info.layer, k);
        assert_int_equal(info.fan_in, fan_in[k]);
        assert_int_equal(info.fan_out, fan_out[k]);
        assert_int_equal(info.offset, offset[k]);
        assert_int_equal(info.n_params, (uint64_t)fan_in[k] * fan_out[k]);
        assert_int_equal(info.activation, act[k]);
    }
    gj_network_destroy(net);
}

static void widths_from_the_keys(void **state) {
    (void)state;
    gj_network *net = make("{\"otype\": \"CutlassMLP\", \"n_neurons\": 32, \"n_hidden_layers\": 0, "
                           "\"n_input_dims\": 20, \"n_output_dims\": 17}",
                           0, 0);
    assert_int_equal(gj_network_n_input_dims(net), 20);
    assert_int_equal(gj_network_padded_input_width(net), 32);
    assert_int_equal(gj_network_padded_output_width(net), 32);
    assert_int_equal(gj_network_n_layers(net), 1);
    assert_int_equal(gj_network_n_params(net), 32 * 32);
    gj_network_destroy(net);
}

static const char model[] = "{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 12, \"n_features_per_level\": 2,"
                            " \"log2_hashmap_size\": 15},"
                            " \"network\": {\"otype\": \"FullyFusedMLP\", \"n_neurons\": 32, \"n_hidden_layers\": 3}}";

static void a_model(void **state) {
    (void)state;
    gj_network *net = make(model, 2, 4);
    const gj_encoding *enc = gj_network_encoding(net);
    assert_non_null(enc);
    assert_int_equal(gj_encoding_n_dims(enc), 2);
    assert_int_equal(gj_encoding_n_levels(enc), 12);
    assert_int_equal(gj_network_n_input_dims(net), 2);
    /* 12 levels x 2 features = 24, padded with zeros to 32. */
    assert_int_equal(gj_network_input_width(net), 24);
    assert_int_equal(gj_network_padded_input_width(net), 32);
    assert_true(gj_network_input_padding(net) == 0.0f);
    /* 32 x 32 + 2 x 32 x 32 + 16 x 32 = 1024 + 2048 + 512, then the encoding's. */
    assert_int_equal(gj_network_n_mlp_params(net), 3584);
    assert_int_equal(gj_network_n_params(net), 3584 + gj_encoding_n_params(enc));
    assert_true(gj_encoding_n_params(enc) > 0);
    gj_network_destroy(net);
}

static void errors_are_on_the_context(void **state) {
    (void)state;
    gj_network *net = (gj_network *)&net; /* anything but NULL */
    assert_int_equal(gj_network_create(ctx, "{\"n_neurons\": 48}", 3, 1, &net), GJ_ERROR_INVALID_CONFIG);
    assert_null(net);
    assert_string_equal(gj_context_errmsg(ctx), "n_neurons: must be 16, 32, 64 or 128 (got 48); tiny-cuda-nn's "
                                                "CutlassMLP takes other widths, gridjit's generated MLPs do not");
    assert_int_equal(gj_network_create(ctx, "{\"encoding\": {}, \"network\": {\"activation\": \"gelu\"}}", 3, 1, &net),
                     GJ_ERROR_INVALID_CONFIG);
    assert_non_null(strstr(gj_context_errmsg(ctx), "network: activation: must be"));
    /* A layout the encoding's checks refuse is named after the part too. */
    assert_int_equal(gj_network_create(ctx, "{\"encoding\": {\"otype\": \"DenseGrid\", \"n_levels\": 4, "
                                            "\"base_resolution\": 2048}, \"network\": {}}",
                                       3, 1, &net),
                     GJ_ERROR_LAYOUT_TOO_LARGE);
    assert_non_null(strstr(gj_context_errmsg(ctx), "encoding: level 0: a Dense grid"));
    assert_int_equal(gj_network_create(ctx, ff64x2, 0, 1, &net), GJ_ERROR_INVALID_CONFIG);
    assert_non_null(strstr(gj_context_errmsg(ctx), "n_input_dims: required"));
    assert_int_equal(gj_network_create(ctx, ff64x2, 3, 1, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "out must not be NULL"));
    assert_int_equal(gj_network_create(NULL, ff64x2, 3, 1, &net), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_network_create_ex(ctx, ff64x2, 3, 1, 0x10, NULL, &net), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "unknown flag bits 0x10"));
    /* A success empties the message. */
    net = make(ff64x2, 3, 1);
    gj_network_destroy(net);
}

static void unknown_keys_are_skipped_on_request(void **state) {
    (void)state;
    const char *json = "{\"loss\": {\"otype\": \"RelativeL2\"}, \"optimizer\": {\"otype\": \"Adam\"},"
                       " \"encoding\": {\"otype\": \"HashGrid\"},"
                       " \"network\": {\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64,"
                       " \"feedback_alignment\": false}}";
    gj_network *net = NULL;
    char *ignored = (char *)"x";
    assert_int_equal(gj_network_create_ex(ctx, json, 3, 1, 0, &ignored, &net), GJ_ERROR_INVALID_CONFIG);
    assert_null(ignored);
    assert_null(net);
    assert_int_equal(gj_network_create_ex(ctx, json, 3, 1, GJ_CONFIG_IGNORE_UNKNOWN_KEYS, &ignored, &net), GJ_OK);
    assert_non_null(net);
    assert_non_null(ignored);
    assert_string_equal(ignored, "unknown key 'loss' (known keys: otype, encoding, network)\n"
                                 "unknown key 'optimizer' (known keys: otype, encoding, network)\n"
                                 "network: unknown key 'feedback_alignment' (known keys: otype, n_neurons, "
                                 "n_hidden_layers, activation, output_activation, n_input_dims, n_output_dims)");
    assert_int_equal(gj_network_n_neurons(net), 64);
    gj_free(ignored);
    gj_network_destroy(net);
    /* Nothing skipped: NULL. */
    ignored = (char *)"x";
    assert_int_equal(gj_network_create_ex(ctx, ff64x2, 3, 1, GJ_CONFIG_IGNORE_UNKNOWN_KEYS, &ignored, &net), GJ_OK);
    assert_null(ignored);
    gj_network_destroy(net);
}

static void null_and_bad_arguments(void **state) {
    (void)state;
    gj_network_destroy(NULL);
    assert_null(gj_network_encoding(NULL));
    assert_int_equal(gj_network_n_params(NULL), 0);
    assert_int_equal(gj_network_n_layers(NULL), 0);
    assert_int_equal(gj_network_padded_input_width(NULL), 0);
    assert_null(gj_network_hyperparams(NULL));
    gj_network *net = make(ff64x2, 3, 1);
    gj_network_layer_info info;
    gj_network_layer_info_init(&info);
    assert_int_equal(gj_network_layer(net, 3, &info), GJ_ERROR_INVALID_ARGUMENT); /* 3 layers: 0..2 */
    assert_int_equal(gj_network_layer(net, 0, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_network_layer(NULL, 0, &info), GJ_ERROR_INVALID_ARGUMENT);
    memset(&info, 0, sizeof info); /* not prepared by its _init */
    assert_int_equal(gj_network_layer(net, 0, &info), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(info.fan_in, 0); /* nothing written */
    gj_network_layer_info_init(&info);
    info.struct_size += 8; /* a newer header than this library */
    assert_int_equal(gj_network_layer(net, 0, &info), GJ_ERROR_INVALID_ARGUMENT);
    gj_network_layer_info_init(NULL);
    gj_network_destroy(net);
}

/* The hyperparameters make the same network again, without any argument. */
static void check_round_trip(const char *json, uint32_t n_in, uint32_t n_out) {
    gj_network *net = make(json, n_in, n_out);
    char *text = gj_network_hyperparams(net);
    assert_non_null(text);
    gj_network *again = make(text, 0, 0);
    char *text2 = gj_network_hyperparams(again);
    assert_string_equal(text, text2);
    assert_int_equal(gj_network_n_params(net), gj_network_n_params(again));
    assert_int_equal(gj_network_n_input_dims(net), gj_network_n_input_dims(again));
    assert_int_equal(gj_network_n_output_dims(net), gj_network_n_output_dims(again));
    assert_int_equal(gj_network_padded_input_width(net), gj_network_padded_input_width(again));
    assert_int_equal(gj_network_activation(net), gj_network_activation(again));
    assert_int_equal(gj_network_output_activation(net), gj_network_output_activation(again));
    assert_int_equal(gj_network_otype(net), gj_network_otype(again));
    assert_int_equal(gj_network_encoding(net) == NULL, gj_network_encoding(again) == NULL);
    gj_free(text);
    gj_free(text2);
    gj_network_destroy(net);
    gj_network_destroy(again);
}

static void hyperparams_round_trip(void **state) {
    (void)state;
    check_round_trip(ff64x2, 3, 1);
    check_round_trip("{\"otype\": \"mlp\", \"n_hidden_layers\": 0, \"activation\": \"silu\"}", 40, 100);
    check_round_trip(model, 2, 4);
    check_round_trip("{\"encoding\": {\"otype\": \"DenseGrid\", \"n_levels\": 3, \"n_features_per_level\": 1, "
                     "\"base_resolution\": 4, \"per_level_scale\": 1.5}, "
                     "\"network\": {\"otype\": \"MegakernelMLP\", \"n_neurons\": 16, \"n_hidden_layers\": 1, "
                     "\"output_activation\": \"Squareplus\", \"n_output_dims\": 2}}",
                     4, 0);
    gj_network *net = make(ff64x2, 3, 1);
    char *text = gj_network_hyperparams(net);
    assert_string_equal(text, "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64, \"n_hidden_layers\": 2, "
                              "\"activation\": \"Tanh\", \"output_activation\": \"Sigmoid\", \"n_input_dims\": 3, "
                              "\"n_output_dims\": 1}");
    gj_free(text);
    gj_network_destroy(net);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_network_alone),
        cmocka_unit_test(widths_from_the_keys),
        cmocka_unit_test(a_model),
        cmocka_unit_test(errors_are_on_the_context),
        cmocka_unit_test(unknown_keys_are_skipped_on_request),
        cmocka_unit_test(null_and_bad_arguments),
        cmocka_unit_test(hyperparams_round_trip),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
