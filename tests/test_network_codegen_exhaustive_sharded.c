/*
 * Every width with every activation, as hidden and as output activation, compiles with NVRTC
 * (label exhaustive: about 160 units, several minutes): each width × each hidden activation
 * (its output activation cycling), and each width × each output activation (ReLU hidden),
 * alternately for sm_80 and sm_90, hidden layers cycling from 1 to 4.
 *
 * Run as: test_network_codegen_exhaustive_sharded SHARD N_SHARDS (ctest registers the
 * 8 shards: one after the other, the 80 units take about 10 minutes on 2 cores).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "gridjit.h"
#include "network_sources.h"
#include "test_env.h"

static int shard = 0, n_shards = 1;

static void every_combination_compiles(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    static const unsigned widths[] = {16, 32, 64, 128};
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    unsigned count = 0;
    for (unsigned w = 0; w < 4; ++w) {
        for (unsigned a = 0; a < 20; ++a) {
            const gj_activation hidden = a < 10 ? (gj_activation)a : GJ_ACTIVATION_RELU;
            const gj_activation output = a < 10 ? (gj_activation)((a + w + 1) % 10) : (gj_activation)(a - 10);
            if ((int)(count % (unsigned)n_shards) != shard) {
                ++count;
                continue;
            }
            char json[512];
            gj_test_network_json(json, sizeof json, "FullyFusedMLP", widths[w], 1 + count % 4, hidden, output);
            gj_network *net = NULL;
            if (gj_network_create(ctx, json, 3 + 5 * a, 1 + a % 7, &net) != GJ_OK) {
                fail_msg("%s: %s", json, gj_context_errmsg(ctx));
            }
            char *unit = gj_test_network_unit(ctx, net, 0);
            const char *arch = count % 2 ? "sm_90" : "sm_80";
            const double ms = gj_test_network_compile(ctx, net, unit, 0, arch);
            printf("compiled %s for %s in %.0f ms\n", json, arch, ms);
            free(unit);
            gj_network_destroy(net);
            ++count;
        }
    }
    gj_context_destroy(ctx);
}

int main(int argc, char **argv) {
    if (gj_test_shard_args(argc, argv, &shard, &n_shards) != 0) {
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_combination_compiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
