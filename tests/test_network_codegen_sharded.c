/*
 * Generated network code (docs/networks.md §7): what the unit states matches the layout, it
 * is deterministic, and it compiles with NVRTC for sm_80 and sm_90, every width and every
 * activation (as hidden and as output activation) at least once, alone and behind an
 * encoding, with a caller's kernel that instantiates every device function. The full matrix
 * is test_network_codegen_exhaustive_sharded.
 *
 * Run as: test_network_codegen_sharded SHARD N_SHARDS (ctest registers 4 shards). Its NVRTC
 * compiles take some four minutes one after the other on a 2-core machine and three or four
 * times that under AddressSanitizer (which intercepts NVRTC's allocations too): the twelve
 * networks of every_width_and_activation_compiles are dealt over the shards, and each other
 * test runs in one shard of its own (owner_shard).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gridjit.h"
#include "codegen/kernels.h"
#include "codegen/network_codegen.h"
#include "model/network.h"
#include "network_sources.h"
#include "test_env.h"

static int shard = 0, n_shards = 1;

static gj_network *make(gj_context *ctx, const char *json, uint32_t in, uint32_t out) {
    gj_network *net = NULL;
    if (gj_network_create(ctx, json, in, out, &net) != GJ_OK) {
        fail_msg("%s: %s", json, gj_context_errmsg(ctx));
    }
    return net;
}

static void expect_line(const char *source, const char *line) {
    if (!strstr(source, line)) {
        fail_msg("the unit lacks \"%s\"", line);
    }
}

/* The step's program of net (generated as opts say) has lines a and b. */
static void expect_step_lines(const gj_network *net, const gj_codegen_options *opts, const char *a, const char *b) {
    char *src = gj__network_codegen(net, opts, GJ__NETWORK_PART_STEP, "");
    expect_line(src, a);
    expect_line(src, b);
    free(src);
}

static void unit_states_the_layout(void **state) {
    (void)state;
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    gj_network *net = make(ctx, "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64, \"n_hidden_layers\": 2, "
                                "\"activation\": \"Tanh\", \"output_activation\": \"Sigmoid\"}", 3, 5);
    char *a = NULL, *b = NULL;
    size_t length = 0;
    assert_int_equal(gj_network_generate(ctx, net, NULL, &a, &length), GJ_OK);
    assert_int_equal(length, strlen(a));
    assert_int_equal(gj_network_generate(ctx, net, NULL, &b, NULL), GJ_OK);
    assert_string_equal(a, b); /* byte-identical for identical inputs */
    expect_line(a, "struct gj_network_config {");
    expect_line(a, "static constexpr int IN = 3;");
    expect_line(a, "static constexpr int IN_P = 16;");
    expect_line(a, "static constexpr int W = 64;");
    expect_line(a, "static constexpr int OUT = 5;");
    expect_line(a, "static constexpr int OUT_P = 16;");
    expect_line(a, "static constexpr int NL = 3;");
    expect_line(a, "static constexpr int ACT = 8;");
    expect_line(a, "static constexpr int OUT_ACT = 5;");
    expect_line(a, "static constexpr float INPUT_PADDING = 1.0f;");
    expect_line(a, "static constexpr gj_u64 N_PARAMS = 6144ull;");
    /* 32 rows of the input (16), two hidden layers' kept values (64 each), the output (16). */
    expect_line(a, "static constexpr gj_u64 CTX_HALVES = 5120ull;");
    expect_line(a, "//   layer 0: 64 x 16 at 0, then Tanh");
    expect_line(a, "//   layer 2: 16 x 64 at 5120, then Sigmoid");
    expect_line(a, "gj_network_out_t gj_network(const T* x");
    expect_line(a, "gj_network_out_t gj_network_fwd(const T* x");
    expect_line(a, "void gj_network_bwd(const T* dL_dy");
    expect_line(a, "gj_network_inference(gj_u64 n");
    expect_line(a, "gj_network_forward(gj_u64 n");
    expect_line(a, "gj_network_backward(gj_u64 n");
    expect_line(a, "// ===== templates/network.cuh =====");
    gj_free(a);
    gj_free(b);

    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.device_functions_only = 1;
    opts.name = "mine";
    assert_int_equal(gj_network_generate(ctx, net, &opts, &a, NULL), GJ_OK);
    assert_null(strstr(a, "__global__"));
    expect_line(a, "mine_out_t mine_fwd(");
    gj_free(a);

    opts.name = "1bad";
    assert_int_equal(gj_network_generate(ctx, net, &opts, &a, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_null(a);
    assert_int_equal(gj_network_generate(ctx, NULL, NULL, &a, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "gj_network_generate"));
    assert_int_equal(gj_network_generate(ctx, net, NULL, NULL, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_network_generate(NULL, net, NULL, &a, NULL), GJ_ERROR_INVALID_ARGUMENT);
    gj_network_destroy(net);

    /* A model: the encoding's device functions first, then the network's, then the fused kernels. */
    net = make(ctx, "{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 8}, \"network\": {\"otype\": "
                    "\"FullyFusedMLP\", \"n_neurons\": 32, \"n_hidden_layers\": 1, \"n_output_dims\": 4}}", 3, 0);
    assert_int_equal(gj_network_generate(ctx, net, NULL, &a, NULL), GJ_OK);
    expect_line(a, "struct gj_network_encoding_config {");
    expect_line(a, "static constexpr int N_OUT_PADDED = 16;");
    expect_line(a, "static constexpr int IN = 16;");
    expect_line(a, "static constexpr float INPUT_PADDING = 0.0f;");
    expect_line(a, "struct gj_network_encoding_ops {");
    /* The whole unit: the fused backward to the parameters (the encoding's dL/dparams alone, one
     * instance of its per-level code) and the network's backward writing dL/d(features) for the
     * backward with dL/dinput. */
    expect_line(a, "gj_model_backward_kernel<gj_network_config, gj_network_encoding_ops>(n, x, gj_nn_dy(dL_dy, dy_half != 0), dy_scale,");
    expect_line(a, "gj_model_backward_features_kernel<gj_network_input_config>(n, gj_nn_dy(dL_dy, dy_half != 0), dy_scale, params,");
    expect_line(a, "gj_levels_backward<config, gj_network_encoding_levels, true>(x, dy.v, p, g, unused, false,");
    expect_line(a, "// ===== templates/model_kernels.cuh =====");
    assert_true(strstr(a, "struct gj_network_encoding_config") < strstr(a, "struct gj_network_config"));
    gj_free(a);
    /* A module's programs: the forward for training (NAME_forward alone), the backward
     * (NAME_backward, no dL/dinput, and NAME_zero), and the backward with dL/dinput
     * (NAME_backward_input alone, whose encoding has its forward device functions only: the
     * encoding's backward with dL/dx is its own module's); a network alone has no such
     * program's kernel. */
    gj_codegen_options module_opts;
    gj_codegen_options_init(&module_opts);
    module_opts.name = GJ__NETWORK_DEFAULT_NAME;
    char *training = gj__network_codegen(net, &module_opts, GJ__NETWORK_PART_TRAINING, "");
    char *backward = gj__network_codegen(net, &module_opts, GJ__NETWORK_PART_BACKWARD, "");
    char *with_input = gj__network_codegen(net, &module_opts, GJ__NETWORK_PART_TRAINING_INPUT, "");
    assert_non_null(training);
    assert_non_null(backward);
    assert_non_null(with_input);
    assert_non_null(strstr(training, "gj_network_forward("));
    assert_null(strstr(training, "gj_network_backward"));
    assert_null(strstr(training, "gj_network_inference("));
    assert_null(strstr(training, "void bwd_params("));
    assert_non_null(strstr(backward, "gj_network_backward("));
    assert_non_null(strstr(backward, "gj_network_zero("));
    assert_non_null(strstr(backward, "gj_network_finish("));
    assert_non_null(strstr(backward, "void bwd_params("));
    /* The level loop's form reads dL/d(features) where the network's backward leaves them. */
    assert_non_null(strstr(backward, "void bwd_params_row("));
    expect_line(backward, "    static constexpr bool READS_ROW = true;");
    assert_null(strstr(backward, "gj_network_forward("));
    assert_null(strstr(backward, "gj_network_backward_input("));
    assert_non_null(strstr(with_input, "gj_network_backward_input("));
    assert_non_null(strstr(with_input, "gj_network_encoding_config::param_t* dL_dfeatures"));
    /* Its own zeroing and finishing kernels: the passes it serves need no other program. */
    assert_non_null(strstr(with_input, "gj_network_input_zero("));
    assert_non_null(strstr(with_input, "gj_network_input_finish("));
    /* The loss as a pass of its own is the forward's (the step run as passes needs no other). */
    expect_line(training, "    gj_nn_l2_loss_kernel(n, y, y_half != 0, target, grad_factor, loss_factor, dL_dy, loss);");
    assert_null(strstr(with_input, "gj_nn_l2_loss_kernel(n"));
    assert_null(strstr(with_input, "gj_network_zero("));
    assert_null(strstr(backward, "gj_network_input_zero("));
    assert_null(strstr(with_input, "gj_network_backward("));
    assert_null(strstr(with_input, "gj_network_forward("));
    assert_null(strstr(with_input, "gj_network_inference("));
    assert_null(strstr(with_input, "void bwd_params("));
    /* The training step's program of a model: the network's kernel between the encoding
     * module's forward and backward (no encoding code of its own but the forward's device
     * functions) and its zeroing; none of the other passes' kernels, nor Adam's, whose program
     * is its own, typed with the encoding's parameters and gradient sums. */
    char *step = gj__network_codegen(net, &module_opts, GJ__NETWORK_PART_STEP, "");
    assert_non_null(step);
    expect_line(step, "gj_model_train_features_kernel<gj_network_step_config>(n, f, target, grad_factor, loss_factor, params,");
    expect_line(step, "struct gj_network_step_config : gj_network_input_config {");
    expect_line(step, "gj_network_train_features(gj_u64 n, gj_network_encoding_config::param_t* f, const float* target, float grad_factor,");
    assert_non_null(strstr(step, "gj_network_train_zero("));
    assert_null(strstr(step, "gj_network_adam("));
    assert_null(strstr(step, "void bwd_params("));
    assert_null(strstr(step, "gj_network_train_step("));
    assert_null(strstr(step, "gj_network_forward("));
    assert_null(strstr(step, "gj_network_backward("));
    assert_null(strstr(step, "gj_network_inference("));
    assert_null(strstr(step, "gj_network_zero("));
    free(step);
    char *adam = gj__network_codegen(net, &module_opts, GJ__NETWORK_PART_ADAM, "");
    assert_non_null(adam);
    expect_line(adam, "        const float* grads, gj_u64 n_enc, gj_network_encoding_config::param_t* eparams,");
    expect_line(adam, "        gj_u32* esteps, const gj_network_encoding_config::grad_t* egrads, gj_nn_adam_hyper h) {");
    expect_line(adam, "// One program of a network module: the Adam kernel.");
    assert_null(strstr(adam, "gj_network_train_features("));
    assert_null(strstr(adam, "gj_network_train_zero("));
    assert_null(strstr(adam, "gj_network_backward("));
    free(adam);
    assert_null(strstr(with_input, "gj_levels_backward<"));
    size_t count = 0;
    char **names = gj__network_kernel_names(net, &module_opts, GJ__NETWORK_PART_TRAINING_INPUT, &count);
    assert_int_equal(count, 3);
    assert_string_equal(names[0], "&gj_network_backward_input");
    assert_string_equal(names[1], "&gj_network_input_zero");
    assert_string_equal(names[2], "&gj_network_input_finish");
    gj__free_string_list(names, count);
    names = gj__network_kernel_names(net, &module_opts, GJ__NETWORK_PART_TRAINING, &count);
    assert_int_equal(count, 2);
    assert_string_equal(names[0], "&gj_network_forward");
    assert_string_equal(names[1], "&gj_network_loss");
    gj__free_string_list(names, count);
    names = gj__network_kernel_names(net, &module_opts, GJ__NETWORK_PART_BACKWARD, &count);
    assert_int_equal(count, 3);
    assert_string_equal(names[0], "&gj_network_backward");
    assert_string_equal(names[1], "&gj_network_zero");
    assert_string_equal(names[2], "&gj_network_finish");
    gj__free_string_list(names, count);
    names = gj__network_kernel_names(net, &module_opts, GJ__NETWORK_PART_STEP, &count);
    assert_int_equal(count, 2);
    assert_string_equal(names[0], "&gj_network_train_zero");
    assert_string_equal(names[1], "&gj_network_train_features");
    gj__free_string_list(names, count);
    names = gj__network_kernel_names(net, &module_opts, GJ__NETWORK_PART_ADAM, &count);
    assert_int_equal(count, 1);
    assert_string_equal(names[0], "&gj_network_adam");
    gj__free_string_list(names, count);
    names = gj__network_kernel_names(net, &module_opts, GJ__NETWORK_PART_ALL, &count);
    assert_int_equal(count, 12);
    gj__free_string_list(names, count);
    free(backward);
    free(training);
    free(with_input);
    opts.name = NULL;
    assert_int_equal(gj_network_generate(ctx, net, &opts, &a, NULL), GJ_OK); /* device functions only */
    assert_null(strstr(a, "__global__"));
    assert_null(strstr(a, "model_kernels.cuh"));
    gj_free(a);
    gj_network_destroy(net);
    /* A network alone's training step is one kernel: forward, loss and backward. */
    net = make(ctx, "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 32, \"n_hidden_layers\": 1}", 3, 2);
    char *alone_step = gj__network_codegen(net, &module_opts, GJ__NETWORK_PART_STEP, "");
    assert_non_null(alone_step);
    expect_line(alone_step, "    gj_nn_train_kernel<gj_network_step_config>(n, x, target, grad_factor, loss_factor, params, ring, y,");
    assert_null(strstr(alone_step, "gj_network_train_features("));
    assert_null(strstr(alone_step, "gj_network_adam("));
    free(alone_step);
    char *alone_adam = gj__network_codegen(net, &module_opts, GJ__NETWORK_PART_ADAM, "");
    assert_non_null(alone_adam);
    expect_line(alone_adam, "        const float* grads, gj_u64 n_enc, gj_half* eparams,");
    free(alone_adam);
    names = gj__network_kernel_names(net, &module_opts, GJ__NETWORK_PART_STEP, &count);
    assert_int_equal(count, 2);
    assert_string_equal(names[0], "&gj_network_train_step");
    assert_string_equal(names[1], "&gj_network_train_zero");
    gj__free_string_list(names, count);
    gj_network_destroy(net);
    gj_context_destroy(ctx);
}

/* Twelve networks: every width, every activation as hidden and as output activation, hidden
 * layers 1 to 8 and CutlassMLPs without any, odd widths, outputs wider than one 128-column
 * chunk (256 behind 8 x 128, 1000 without hidden layers); sm_80 and sm_90 in turn. */
static void every_width_and_activation_compiles(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    static const struct {
        const char *otype;
        unsigned neurons, hidden, in, out;
    } shapes[12] = {{"FullyFusedMLP", 16, 1, 3, 1},  {"FullyFusedMLP", 32, 2, 32, 16}, {"FullyFusedMLP", 64, 3, 7, 3},
                    {"FullyFusedMLP", 128, 2, 64, 4}, {"CutlassMLP", 64, 0, 5, 2},     {"FullyFusedMLP", 16, 8, 17, 33},
                    {"FullyFusedMLP", 32, 1, 100, 7}, {"MLP", 64, 2, 2, 16},          {"FullyFusedMLP", 128, 1, 1, 128},
                    {"FullyFusedMLP", 64, 4, 1024, 1}, {"FullyFusedMLP", 128, 8, 3, 256},
                    {"CutlassMLP", 16, 0, 16, 1000}};
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    for (unsigned i = (unsigned)shard; i < 12; i += (unsigned)n_shards) {
        char json[512];
        gj_test_network_json(json, sizeof json, shapes[i].otype, shapes[i].neurons, shapes[i].hidden,
                             (gj_activation)(i % 10), (gj_activation)((i + 3) % 10));
        gj_network *net = make(ctx, json, shapes[i].in, shapes[i].out);
        char *unit = gj_test_network_unit(ctx, net, 0);
        const char *arch = i % 2 ? "sm_90" : "sm_80";
        const double ms = gj_test_network_compile(ctx, net, unit, 0, arch);
        printf("compiled %s (%u -> %u) for %s in %.0f ms\n", json, shapes[i].in, shapes[i].out, arch, ms);
        free(unit);
        gj_network_destroy(net);
    }
    gj_context_destroy(ctx);
}

/* The weight-gradient sums in registers of the backward and step kernels (templates/network.cuh,
 * gj_nn_wgrad_regs): the rules by default, a module's hint as a number (-1: none); and the
 * kernels compile with every layer kept (255 floats a lane) where the first, hidden and last
 * layers share one shape (64 -> 64 x 1 -> 64) or the network is one layer, and with some
 * hidden layers kept and the others summed per round (32 x 6, 40 floats a lane). The step also
 * states whether it fetches its targets ahead (the plan's rule, or off by the hint). */
static void step_sums_in_registers(void **state) {
    (void)state;
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.name = GJ__NETWORK_DEFAULT_NAME;
    gj_network *net = make(ctx, "{\"n_neurons\": 64, \"n_hidden_layers\": 2}", 32, 16);
    expect_step_lines(net, &opts, "    static constexpr int SUM_REGISTERS = WARPS <= 4 ? 24 : 0;\n", /* the backward kernels' */
                      "    static constexpr int SUM_REGISTERS = WARPS <= 4 ? 24 : 0; // weight-gradient sums kept in "
                      "registers: floats a lane"); /* the step's */
    /* The step fetches its targets ahead: 32 rows of 16 floats a warp (the plan's). */
    expect_step_lines(net, &opts,
                      "    static constexpr bool FETCH_TARGETS = true; // a tile's targets fetched while its forward runs",
                      "    static constexpr gj_u64 TARGET_HALVES = 1024ull; // a warp's staging for them");
    net->hints.sum_registers = -1;
    expect_step_lines(net, &opts, "    static constexpr int SUM_REGISTERS = 0;\n",
                      "    static constexpr int SUM_REGISTERS = 0; // weight-gradient sums kept in registers: floats a lane");
    net->hints.step_fetch_targets = -1;
    expect_step_lines(net, &opts,
                      "    static constexpr bool FETCH_TARGETS = false; // a tile's targets fetched while its forward runs",
                      "    static constexpr gj_u64 TARGET_HALVES = 0ull; // a warp's staging for them");
    gj_network_destroy(net);
    /* 128 neurons: none in the backward kernels (slower so), the rule in the step. */
    net = make(ctx, "{\"n_neurons\": 128, \"n_hidden_layers\": 2}", 32, 16);
    expect_step_lines(net, &opts, "    static constexpr int SUM_REGISTERS = 0;\n",
                      "    static constexpr int SUM_REGISTERS = WARPS <= 4 ? 24 : 0; // weight-gradient sums kept in "
                      "registers: floats a lane");
    gj_network_destroy(net);
    if (!gj_test_have_nvrtc()) {
        gj_context_destroy(ctx);
        skip();
    }
    static const struct {
        const char *json;
        unsigned in, out;
        int budget;
    } cases[3] = {{"{\"n_neurons\": 64, \"n_hidden_layers\": 1}", 64, 64, 255},
                  {"{\"otype\": \"CutlassMLP\", \"n_neurons\": 64, \"n_hidden_layers\": 0}", 64, 3, 255},
                  {"{\"n_neurons\": 32, \"n_hidden_layers\": 6, \"activation\": \"Tanh\"}", 5, 4, 40}};
    for (unsigned i = 0; i < 3; ++i) {
        net = make(ctx, cases[i].json, cases[i].in, cases[i].out);
        net->hints.sum_registers = cases[i].budget;
        net->hints.step_fetch_targets = i == 2 ? -1 : 0; /* the targets read after the forward too */
        char *unit = gj_test_network_unit(ctx, net, 0);
        char line[96];
        snprintf(line, sizeof line, "    static constexpr int SUM_REGISTERS = %d;", cases[i].budget);
        assert_non_null(strstr(unit, line));
        gj_test_network_compile(ctx, net, unit, 0, "sm_90");
        free(unit);
        gj_network_destroy(net);
    }
    gj_context_destroy(ctx);
}

/* Recomputing (GRIDJIT_NETWORK_RECOMPUTE): the config states RECOMPUTE where the activations
 * allow it (hidden ones that keep h, no output activation): by default where the hidden layers
 * are at most 64 wide, with the hint 1 wider too, with -1 nowhere; such units compile for sm_90
 * and sm_80, networks and a model; elsewhere the hint leaves the unit as it was. */
static void recomputing_units(void **state) {
    (void)state;
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    static const struct {
        const char *json;
        unsigned in, out;
        int eligible, by_default;
    } cases[] = {{"{\"n_neurons\": 64, \"n_hidden_layers\": 2}", 32, 16, 1, 1},
                 {"{\"n_neurons\": 128, \"n_hidden_layers\": 3, \"activation\": \"LeakyReLU\"}", 3, 256, 1, 0},
                 {"{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 8}, \"network\": {\"n_neurons\": 32, "
                  "\"n_hidden_layers\": 4, \"activation\": \"Squareplus\", \"n_output_dims\": 4}}", 3, 0, 1, 1},
                 {"{\"n_neurons\": 64, \"n_hidden_layers\": 2, \"activation\": \"SiLU\"}", 32, 16, 0, 0},
                 {"{\"n_neurons\": 64, \"n_hidden_layers\": 2, \"output_activation\": \"Sigmoid\"}", 32, 16, 0, 0}};
    const int nvrtc = gj_test_have_nvrtc();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        gj_network *net = make(ctx, cases[i].json, cases[i].in, cases[i].out);
        const char *line = "    static constexpr bool RECOMPUTE = true;";
        char *by_default = gj_test_network_unit(ctx, net, 0);
        assert_int_equal(strstr(by_default, line) != NULL, cases[i].by_default);
        net->hints.recompute = -1;
        char *plain = gj_test_network_unit(ctx, net, 0);
        net->hints.recompute = 1;
        char *unit = gj_test_network_unit(ctx, net, 0);
        assert_string_equal(by_default, cases[i].by_default ? unit : plain);
        free(by_default);
        if (cases[i].eligible) {
            expect_line(unit, line);
            if (nvrtc) {
                gj_test_network_compile(ctx, net, unit, 0, "sm_90");
                gj_test_network_compile(ctx, net, unit, 0, "sm_80");
            }
        } else {
            assert_null(strstr(unit, line));
            assert_string_equal(unit, plain);
        }
        assert_null(strstr(plain, line));
        free(plain);
        free(unit);
        gj_network_destroy(net);
    }
    gj_context_destroy(ctx);
    if (!nvrtc) {
        skip();
    }
}

/* A model's unit (encoding + network device functions, the fused kernels) compiles, and its
 * device functions fuse into a caller's kernel. */
static void model_device_functions_fuse(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    static const char *const models[] = {
        "{\"encoding\": {\"otype\": \"HashGrid\"}, \"network\": {\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64, "
        "\"n_hidden_layers\": 2, \"n_output_dims\": 16}}",
        "{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 5, \"n_features_per_level\": 4, \"precision\": "
        "\"fp32\"}, \"network\": {\"otype\": \"FullyFusedMLP\", \"n_neurons\": 128, \"n_hidden_layers\": 1, "
        "\"activation\": \"SiLU\", \"output_activation\": \"Softplus\", \"n_output_dims\": 3}}"};
    for (unsigned i = 0; i < 2; ++i) {
        gj_network *net = make(ctx, models[i], 3, 0);
        char *unit = gj_test_network_unit(ctx, net, 0);
        gj_test_network_compile(ctx, net, unit, 0, i ? "sm_80" : "sm_90");
        free(unit);
        gj_network_destroy(net);
    }
    /* A network's device functions alone (no kernels) also compile. */
    gj_network *net = make(ctx, "{\"n_neurons\": 32, \"n_hidden_layers\": 2}", 8, 2);
    char *unit = gj_test_network_unit(ctx, net, 1);
    assert_null(strstr(unit, "gj_nn_forward_kernel<"));
    gj_test_network_compile(ctx, net, unit, 1, "sm_90");
    free(unit);
    gj_network_destroy(net);
    gj_context_destroy(ctx);
}

/* A network offered to a user source as a header, beside an encoding (gj_source_desc's
 * networks): the caller fuses them in a kernel of their own. */
static const char fused_user_source[] =
    "#include \"grid.cuh\"\n"
    "#include \"mlp.cuh\"\n"
    "extern \"C\" __global__ void mine(int n, const float* x, const gj_half* gp, const gj_half* wp, float* y) {\n"
    "    __shared__ __align__(16) gj_u16 scratch[8 * mlp_config::SCRATCH_HALVES];\n"
    "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    grid_in_t in;\n"
    "    for (int d = 0; d < 3; ++d) in.v[d] = i < n ? x[3 * i + d] : 0.0f;\n"
    "    const grid_out_t f = grid(in, gp, nullptr);\n"
    "    const mlp_out_t o = mlp(f.v, i < n, wp, scratch + (threadIdx.x / 32) * mlp_config::SCRATCH_HALVES);\n"
    "    if (i < n) y[i] = o.v[0];\n"
    "}\n";

static void networks_are_offered_to_user_sources(void **state) {
    (void)state;
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    gj_encoding *enc = NULL;
    assert_int_equal(gj_encoding_create(ctx, "{\"otype\": \"HashGrid\", \"n_levels\": 8}", 3, &enc), GJ_OK);
    gj_network *net = make(ctx, "{\"n_neurons\": 32, \"n_hidden_layers\": 1}", 16, 1);
    gj_source_encoding grid = {"grid", enc, NULL};
    gj_source_network mlp = {"mlp", net, NULL};
    const char *kernels[] = {"mine"};
    gj_source_desc desc;
    gj_source_desc_init(&desc);
    desc.source = fused_user_source;
    desc.encodings = &grid;
    desc.n_encodings = 1;
    desc.networks = &mlp;
    desc.n_networks = 1;
    desc.kernels = kernels;
    desc.n_kernels = 1;
    char *unit = NULL;
    assert_int_equal(gj_user_source_generate(ctx, &desc, &unit), GJ_OK);
    assert_non_null(strstr(unit, "// ===== mlp.cuh ====="));
    assert_non_null(strstr(unit, "struct mlp_config {"));
    assert_true(strstr(unit, "// ===== grid.cuh =====") < strstr(unit, "// ===== mlp.cuh ====="));
    gj_free(unit);
    /* Two headers of one name are refused. */
    gj_source_network clash = {"grid", net, NULL};
    desc.networks = &clash;
    assert_int_equal(gj_user_source_generate(ctx, &desc, &unit), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "two headers are named \"grid\""));
    desc.networks = &mlp;
    if (gj_test_have_nvrtc()) {
        gj_program *prog = NULL;
        const gj_status status = gj_compile_user(ctx, &desc, "sm_90", &prog);
        if (status != GJ_OK) {
            fail_msg("%s\n%s", gj_context_errmsg(ctx), prog ? gj_program_log(prog) : "");
        }
        assert_int_equal(gj_program_n_kernels(prog), 1);
        gj_program_destroy(prog);
    }
    gj_network_destroy(net);
    gj_encoding_destroy(enc);
    gj_context_destroy(ctx);
}

/* `gridjit dump` of a network compiles alone with nvcc, when nvcc is installed. */
static void dump_compiles_with_nvcc(void **state) {
    (void)state;
    const char *nvcc = access("/usr/local/cuda/bin/nvcc", X_OK) == 0 ? "/usr/local/cuda/bin/nvcc" : NULL;
    if (!nvcc && system("command -v nvcc >/dev/null 2>&1") == 0) {
        nvcc = "nvcc";
    }
    if (!nvcc || !getenv("GRIDJIT_CLI")) {
        printf("SKIPPED: nvcc not found, or not run through ctest\n");
        skip();
    }
    const char *tmp = getenv("GRIDJIT_TEST_TMP");
    char command[8192];
    snprintf(command, sizeof command,
             "mkdir -p '%s' && '%s' dump --config '{\"otype\":\"FullyFusedMLP\",\"n_neurons\":16,\"n_hidden_layers\":1,"
             "\"activation\":\"SiLU\"}' --dims 3 --output-dims 2 > '%s/network.cu' && %s -std=c++17 -arch=sm_80 -cubin "
             "-o '%s/network.cubin' '%s/network.cu'",
             tmp, getenv("GRIDJIT_CLI"), tmp, nvcc, tmp, tmp);
    assert_int_equal(system(command), 0);
}

/* The shard that runs a test other than the twelve networks': the three long ones (step_sums
 * 20 s, recomputing 55 s, the models 20 s alone here) on shards of their own. */
static int owner_shard(unsigned test) {
    return (int)(test % (unsigned)n_shards);
}

int main(int argc, char **argv) {
    if (gj_test_shard_args(argc, argv, &shard, &n_shards) != 0) {
        return 2;
    }
    const struct CMUnitTest others[] = {
        cmocka_unit_test(step_sums_in_registers),
        cmocka_unit_test(recomputing_units),
        cmocka_unit_test(model_device_functions_fuse),
        cmocka_unit_test(unit_states_the_layout),
        cmocka_unit_test(networks_are_offered_to_user_sources),
        cmocka_unit_test(dump_compiles_with_nvcc),
    };
    struct CMUnitTest tests[1 + sizeof others / sizeof others[0]];
    size_t n = 0;
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(every_width_and_activation_compiles);
    for (unsigned i = 0; i < sizeof others / sizeof others[0]; ++i) {
        if (owner_shard(i) == shard) {
            tests[n++] = others[i];
        }
    }
    return _cmocka_run_group_tests("network_codegen", tests, n, NULL, NULL);
}
