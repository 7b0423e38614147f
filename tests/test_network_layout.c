/* The MLP's widths and parameter layout (docs/networks.md §2), against closed formulas
 * written here from tiny-cuda-nn's rules, over a table of shapes, and a few shapes worked
 * out by hand from tiny-cuda-nn's sources. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "model/network_layout.h"

/*
 * The rules, as tiny-cuda-nn states them:
 *  - widths are padded to multiples of 16: FullyFusedMLP::REQUIRED_ALIGNMENT() and
 *    CutlassMLP::REQUIRED_ALIGNMENT() both return 16 (fully_fused_mlp.h, cutlass_mlp.h);
 *    the padded output width is next_multiple(output_width, REQUIRED_ALIGNMENT())
 *    (fully_fused_mlp.cu and cutlass_mlp.cu constructors); the input is padded by the
 *    encoding in front, set_alignment(minimum_alignment(network)) in
 *    network_with_input_encoding.h;
 *  - the weight matrices, in order: (n_neurons x padded_in), n_hidden_layers - 1 times
 *    (n_neurons x n_neurons), (padded_out x n_neurons); a CutlassMLP with no hidden layer
 *    has the one matrix (padded_out x padded_in); each is a GPUMatrix<T, RM> (row-major,
 *    rows = fan_out), placed back to back by set_params_impl (current_pos += n_elements).
 */
static uint32_t pad16(uint32_t v) {
    return (v + 15) / 16 * 16;
}

/* n_params in closed form. */
static uint64_t expected_n_params(uint32_t in, uint32_t width, uint32_t hidden, uint32_t out) {
    const uint64_t pi = pad16(in), po = pad16(out), w = width;
    if (hidden == 0) {
        return pi * po;
    }
    return pi * w + (uint64_t)(hidden - 1) * w * w + w * po;
}

/* Offset of layer k in closed form. */
static uint64_t expected_offset(uint32_t in, uint32_t width, uint32_t k) {
    const uint64_t pi = pad16(in), w = width;
    return k == 0 ? 0 : pi * w + (uint64_t)(k - 1) * w * w;
}

static gj__network_layout layout_of(gj_network_type otype, uint32_t in, uint32_t width, uint32_t hidden, uint32_t out,
                                    gj_activation act, gj_activation out_act) {
    gj__network_config c;
    memset(&c, 0, sizeof c);
    c.otype = otype;
    c.n_input_dims = in;
    c.n_neurons = width;
    c.n_hidden_layers = hidden;
    c.n_output_dims = out;
    c.activation = act;
    c.output_activation = out_act;
    gj__network_layout l;
    gj__network_layout_compute(&c, &l);
    return l;
}

static void check_shape(gj_network_type otype, uint32_t in, uint32_t width, uint32_t hidden, uint32_t out) {
    const gj__network_layout l = layout_of(otype, in, width, hidden, out, GJ_ACTIVATION_TANH, GJ_ACTIVATION_SIGMOID);
    char shape[96];
    snprintf(shape, sizeof shape, "%u -> %u x %u -> %u", in, width, hidden, out);
    if (l.n_params != expected_n_params(in, width, hidden, out)) {
        fail_msg("%s: n_params %llu, expected %llu", shape, (unsigned long long)l.n_params,
                 (unsigned long long)expected_n_params(in, width, hidden, out));
    }
    assert_int_equal(l.input_width, in);
    assert_int_equal(l.padded_input_width, pad16(in));
    assert_int_equal(l.output_width, out);
    assert_int_equal(l.padded_output_width, pad16(out));
    assert_int_equal(l.n_layers, hidden == 0 ? 1 : hidden + 1);
    for (uint32_t k = 0; k < l.n_layers; k++) {
        const gj__network_layer *layer = &l.layers[k];
        const int first = k == 0, last = k + 1 == l.n_layers;
        assert_int_equal(layer->fan_in, first ? pad16(in) : width);
        assert_int_equal(layer->fan_out, last ? pad16(out) : width);
        assert_int_equal(layer->activation, last ? GJ_ACTIVATION_SIGMOID : GJ_ACTIVATION_TANH);
        if (layer->offset != expected_offset(in, width, k)) {
            fail_msg("%s: layer %u at %llu, expected %llu", shape, k, (unsigned long long)layer->offset,
                     (unsigned long long)expected_offset(in, width, k));
        }
    }
    /* Back to back, nothing after the last. */
    const gj__network_layer *last = &l.layers[l.n_layers - 1];
    assert_int_equal(last->offset + (uint64_t)last->fan_in * last->fan_out, l.n_params);
}

static void a_table_of_shapes(void **state) {
    (void)state;
    const uint32_t widths[] = {16, 32, 64, 128};
    const uint32_t hiddens[] = {1, 2, 3, 5, 8, 16, 32};
    const uint32_t ins[] = {1, 2, 3, 15, 16, 17, 31, 32, 33, 64, 100, 1024};
    const uint32_t outs[] = {1, 3, 4, 15, 16, 17, 32, 100, 128};
    int shapes = 0;
    for (size_t w = 0; w < 4; w++) {
        for (size_t h = 0; h < sizeof hiddens / sizeof hiddens[0]; h++) {
            for (size_t i = 0; i < sizeof ins / sizeof ins[0]; i++) {
                for (size_t o = 0; o < sizeof outs / sizeof outs[0]; o++) {
                    check_shape(GJ_NETWORK_FULLY_FUSED_MLP, ins[i], widths[w], hiddens[h], outs[o]);
                    check_shape(GJ_NETWORK_CUTLASS_MLP, ins[i], widths[w], hiddens[h], outs[o]);
                    shapes += 2;
                }
            }
            /* A CutlassMLP without hidden layers (the width does not matter). */
            for (size_t i = 0; i < sizeof ins / sizeof ins[0]; i++) {
                check_shape(GJ_NETWORK_CUTLASS_MLP, ins[i], widths[w], 0, outs[h % 9]);
                shapes++;
            }
        }
    }
    assert_true(shapes > 3000);
}

/*
 * Shapes worked out by hand from tiny-cuda-nn's code, and what each checks.
 */
static void shapes_checked_by_hand(void **state) {
    (void)state;
    /* tinycudann.Network(3, 1, {"otype": "FullyFusedMLP", "n_neurons": 64, "n_hidden_layers": 2}):
     * cpp_api.cu create_network wraps the MLP in an Identity encoding; create_encoding pads
     * its 3 outputs to next_multiple(3, lcm(8, 1)) = 8, then NetworkWithInputEncoding's
     * set_alignment(16) to next_multiple(8, lcm(16, 1)) = 16, which becomes the MLP's
     * "n_input_dims". Matrices 64 x 16, 64 x 64 and next_multiple(1, 16) = 16 x 64:
     * 1024 + 4096 + 1024 = 6144 parameters; the output layer starts at 1024 + 4096 = 5120. */
    gj__network_layout l = layout_of(GJ_NETWORK_FULLY_FUSED_MLP, 3, 64, 2, 1, GJ_ACTIVATION_RELU, GJ_ACTIVATION_NONE);
    assert_int_equal(l.n_params, 6144);
    assert_int_equal(l.padded_input_width, 16);
    assert_int_equal(l.padded_output_width, 16);
    assert_int_equal(l.layers[1].offset, 1024);
    assert_int_equal(l.layers[2].offset, 5120);

    /* Behind the default HashGrid (16 levels x 2 features = 32 inputs, already a multiple
     * of 16): FullyFusedMLP 64 neurons, 1 hidden layer, 16 outputs (the shape of
     * instant-ngp's NeRF density network). Matrices 64 x 32 and 16 x 64: 2048 + 1024 = 3072. */
    l = layout_of(GJ_NETWORK_FULLY_FUSED_MLP, 32, 64, 1, 16, GJ_ACTIVATION_RELU, GJ_ACTIVATION_NONE);
    assert_int_equal(l.n_params, 3072);
    assert_int_equal(l.n_layers, 2);
    assert_int_equal(l.layers[1].offset, 2048);

    /* 31 inputs (not a multiple of 16) padded to 32; 64 neurons, 2 hidden layers, 3 outputs
     * padded to 16. Matrices 64 x 32, 64 x 64, 16 x 64: 2048 + 4096 + 1024 = 7168. */
    l = layout_of(GJ_NETWORK_FULLY_FUSED_MLP, 31, 64, 2, 3, GJ_ACTIVATION_RELU, GJ_ACTIVATION_SIGMOID);
    assert_int_equal(l.n_params, 7168);
    assert_int_equal(l.layers[2].fan_out, 16);
    assert_int_equal(l.layers[2].activation, GJ_ACTIVATION_SIGMOID);

    /* A CutlassMLP with n_hidden_layers 0 (cutlass_mlp.cu: the one matrix
     * m_padded_output_width x m_input_width): 3 inputs -> 16, 4 outputs -> 16: 16 x 16 = 256,
     * its activation the output activation. */
    l = layout_of(GJ_NETWORK_CUTLASS_MLP, 3, 64, 0, 4, GJ_ACTIVATION_RELU, GJ_ACTIVATION_EXPONENTIAL);
    assert_int_equal(l.n_params, 256);
    assert_int_equal(l.n_layers, 1);
    assert_int_equal(l.layers[0].activation, GJ_ACTIVATION_EXPONENTIAL);

    /* The widest: 1024 inputs (128 levels x 8 features), 128 neurons, 32 hidden layers,
     * 128 outputs: 128 x 1024 + 31 x 128 x 128 + 128 x 128 = 131072 + 507904 + 16384 = 655360. */
    l = layout_of(GJ_NETWORK_FULLY_FUSED_MLP, 1024, 128, 32, 128, GJ_ACTIVATION_RELU, GJ_ACTIVATION_NONE);
    assert_int_equal(l.n_params, 655360);
    assert_int_equal(l.n_layers, 33);
    assert_int_equal(l.layers[32].offset, 131072 + 507904);
}

static void padding_rounds_up_to_16(void **state) {
    (void)state;
    assert_int_equal(gj__network_pad(1), 16);
    assert_int_equal(gj__network_pad(16), 16);
    assert_int_equal(gj__network_pad(17), 32);
    assert_int_equal(gj__network_pad(1023), 1024);
    assert_int_equal(GJ_NETWORK_ALIGNMENT, 16);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_table_of_shapes),
        cmocka_unit_test(shapes_checked_by_hand),
        cmocka_unit_test(padding_rounds_up_to_16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
