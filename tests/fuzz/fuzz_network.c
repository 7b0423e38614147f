/* Fuzz target: a network or model configuration through gj_network_create_ex and its
 * getters.
 *
 * Input: 3 option bytes, then the JSON text (up to the end or a NUL).
 *   [0] n_input_dims: the byte * 5 (0: from the configuration; above 1024: refused)
 *   [1] n_output_dims: the byte (0: from the configuration; above 128: refused)
 *   [2] bit 0: GJ_CONFIG_IGNORE_UNKNOWN_KEYS
 *
 * Checks: a refusal leaves no network and says why; skipped keys are reported only when
 * asked, and the strict parser refuses that text; an accepted network has widths padded to
 * multiples of 16, a layer table that tiles its parameters exactly (the first layer reads
 * the padded input, the last writes the padded output), n_params = the MLP's + the
 * encoding's, and gj_network_hyperparams() parses back, with no arguments, to the same
 * text and counts. */
#include "fuzz_common.h"

#include "gridjit.h"

static gj_context *ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    gjf_offline();
    ctx = gjf_quiet_context();
    return 0;
}

static void check_widths(const gj_network *net) {
    const uint32_t in = gj_network_input_width(net), pin = gj_network_padded_input_width(net);
    const uint32_t out = gj_network_n_output_dims(net), pout = gj_network_padded_output_width(net);
    GJF_CHECK(in >= 1 && in <= GJ_NETWORK_MAX_INPUT_DIMS && pin % 16 == 0 && pin >= in && pin < in + 16, "input %u/%u",
              in, pin);
    GJF_CHECK(out >= 1 && out <= GJ_NETWORK_MAX_OUTPUT_DIMS && pout % 16 == 0 && pout >= out && pout < out + 16,
              "output %u/%u", out, pout);
    const gj_encoding *enc = gj_network_encoding(net);
    GJF_CHECK(!enc || (in == gj_encoding_n_output_dims(enc) && gj_network_n_input_dims(net) == gj_encoding_n_dims(enc)),
              "a model's widths are not its encoding's");
    GJF_CHECK(gj_network_input_padding(net) == (enc ? 0.0f : 1.0f), "padding %g", (double)gj_network_input_padding(net));
}

static void check_layers(const gj_network *net) {
    const uint32_t n = gj_network_n_layers(net), hidden = gj_network_n_hidden_layers(net);
    GJF_CHECK(n == (hidden ? hidden + 1 : 1) && n <= GJ_NETWORK_MAX_HIDDEN_LAYERS + 1, "%u layers, %u hidden", n, hidden);
    uint64_t next = 0;
    for (uint32_t l = 0; l < n; ++l) {
        gj_network_layer_info info;
        gj_network_layer_info_init(&info);
        GJF_CHECK(gj_network_layer(net, l, &info) == GJ_OK, "layer %u", l);
        GJF_CHECK(info.offset == next && info.n_params == (uint64_t)info.fan_in * info.fan_out, "layer %u", l);
        GJF_CHECK(l > 0 || info.fan_in == gj_network_padded_input_width(net), "layer 0 reads %u", info.fan_in);
        GJF_CHECK(l + 1 < n || info.fan_out == gj_network_padded_output_width(net), "last writes %u", info.fan_out);
        GJF_CHECK(l + 1 == n || info.fan_out == gj_network_n_neurons(net), "layer %u writes %u", l, info.fan_out);
        GJF_CHECK(info.activation == (l + 1 == n ? gj_network_output_activation(net) : gj_network_activation(net)),
                  "layer %u activation", l);
        next += info.n_params;
    }
    gj_network_layer_info info;
    gj_network_layer_info_init(&info);
    GJF_CHECK(gj_network_layer(net, n, &info) != GJ_OK, "layer n_layers accepted");
    GJF_CHECK(next == gj_network_n_mlp_params(net), "layers sum to %llu", (unsigned long long)next);
    const gj_encoding *enc = gj_network_encoding(net);
    GJF_CHECK(gj_network_n_params(net) == next + (enc ? gj_encoding_n_params(enc) : 0), "n_params");
}

static void check_round_trip(const gj_network *net) {
    char *text = gj_network_hyperparams(net);
    GJF_CHECK(text != NULL, "gj_network_hyperparams");
    gj_network *again = NULL;
    gj_status status = gj_network_create(ctx, text, 0, 0, &again);
    GJF_CHECK(status == GJ_OK, "%s does not parse back: %s", text, gj_context_errmsg(ctx));
    char *text2 = gj_network_hyperparams(again);
    GJF_CHECK(text2 && strcmp(text, text2) == 0, "%s then %s", text, text2 ? text2 : "NULL");
    GJF_CHECK(gj_network_n_params(net) == gj_network_n_params(again), "n_params");
    GJF_CHECK(gj_network_padded_input_width(net) == gj_network_padded_input_width(again), "input width");
    gj_free(text2);
    gj_free(text);
    gj_network_destroy(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3) {
        return 0;
    }
    gjf_reader r = {data, size};
    const uint32_t n_in = 5u * gjf_u8(&r);
    const uint32_t n_out = gjf_u8(&r);
    const uint32_t flags = (gjf_u8(&r) & 1) ? GJ_CONFIG_IGNORE_UNKNOWN_KEYS : 0;
    char *json = gjf_strndup(r.p, r.left);
    gj_network *net = (gj_network *)&r; /* must be overwritten */
    char *ignored = (char *)&r;
    gj_status status = gj_network_create_ex(ctx, json, n_in, n_out, flags, &ignored, &net);
    GJF_CHECK(ignored == NULL || (status == GJ_OK && flags && ignored[0] != '\0'),
              "skipped keys reported where none can be");
    if (status != GJ_OK) {
        GJF_CHECK(net == NULL, "a refused configuration left a network");
        GJF_CHECK(gj_context_errmsg(ctx)[0] != '\0', "%s without a message", gj_status_name(status));
        free(json);
        return 0;
    }
    GJF_CHECK(net != NULL && gj_context_errmsg(ctx)[0] == '\0', "mismatch");
    if (ignored) {
        gj_network *strict = (gj_network *)&r;
        GJF_CHECK(gj_network_create(ctx, json, n_in, n_out, &strict) == GJ_ERROR_INVALID_CONFIG && strict == NULL,
                  "the strict parser accepts what was skipped");
        GJF_CHECK(strstr(ignored, "unknown key '") != NULL, "ignored: %s", ignored);
        gj_free(ignored);
    }
    check_widths(net);
    check_layers(net);
    check_round_trip(net);
    gj_network_destroy(net);
    free(json);
    return 0;
}
