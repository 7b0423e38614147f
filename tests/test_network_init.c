/*
 * The network initialisation gj_network_init_params uploads (src/model/network_init.c) is
 * tiny-cuda-nn's rule, float for float, as the independent reference implements it
 * (tools/reference/mlp_reference.c): every width, Xavier and SIREN bounds, seeds, scale.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "mlp_reference.h"
#include "model/network.h"
#include "model/network_init.h"

static void same_floats_as_the_reference(void **state) {
    (void)state;
    static const struct {
        const char *json;
        uint32_t in, out;
        uint64_t seed;
        float scale;
    } cases[] = {
        {"{\"n_neurons\": 64, \"n_hidden_layers\": 2}", 3, 1, 1337, 1.0f},
        {"{\"n_neurons\": 16, \"n_hidden_layers\": 1, \"activation\": \"Sine\"}", 2, 3, 42, 1.0f},
        {"{\"n_neurons\": 128, \"n_hidden_layers\": 4, \"activation\": \"Tanh\"}", 100, 17, 7, 0.5f},
        {"{\"otype\": \"CutlassMLP\", \"n_neurons\": 32, \"n_hidden_layers\": 0}", 40, 5, 1, 2.0f},
        {"{\"n_neurons\": 32, \"n_hidden_layers\": 3, \"activation\": \"Sine\"}", 1024, 128, 99, 1.0f},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        struct gj_network *net = NULL;
        char err[256];
        assert_int_equal(gj__network_make_ex(cases[c].json, cases[c].in, cases[c].out, 0, NULL, &net, err, sizeof err),
                         GJ_OK);
        const uint64_t n = net->layout.n_params;
        float *ours = malloc(n * sizeof *ours), *theirs = malloc(n * sizeof *theirs);
        assert_non_null(ours);
        assert_non_null(theirs);
        gj__network_init_params(&net->layout, net->config.network.activation, cases[c].seed, cases[c].scale, ours);
        gj_ref_mlp ref;
        gj_ref_mlp_from_network(&ref, net);
        gj_ref_pcg32 rng;
        gj_ref_pcg32_seed(&rng, cases[c].seed, 1);
        gj_ref_mlp_init_params(&ref, &rng, cases[c].scale, theirs);
        assert_memory_equal(ours, theirs, n * sizeof *ours);
        for (uint32_t l = 0; l < net->layout.n_layers; ++l) {
            const float b = gj__network_init_bound(&net->layout, net->config.network.activation, l, cases[c].scale);
            assert_true(b == gj_ref_mlp_init_bound(&ref, l, cases[c].scale));
            const gj__network_layer *layer = &net->layout.layers[l];
            for (uint64_t i = 0; i < (uint64_t)layer->fan_in * layer->fan_out; ++i) {
                assert_true(ours[layer->offset + i] >= -b && ours[layer->offset + i] <= b);
            }
        }
        free(ours);
        free(theirs);
        gj_network_destroy(net);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_floats_as_the_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
