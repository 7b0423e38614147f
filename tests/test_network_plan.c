/* The network kernels' block plan (src/codegen/network_plan.c) and its hints: the choices a
 * layout gets, hints that replace them where the block still fits, and the generated code
 * stating what the plan says (the runtime launches with the same numbers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridjit.h"
#include "codegen/network_codegen.h"
#include "codegen/network_plan.h"
#include "api/network_module.h"
#include "model/network.h"
#include "network_sources.h"
#include "test_env.h"

static struct gj_network *make(const char *json, uint32_t in, uint32_t out) {
    struct gj_network *net = NULL;
    char err[512] = "";
    if (gj__network_make_ex(json, in, out, 0, NULL, &net, err, sizeof err) != GJ_OK) {
        fail_msg("%s: %s", json, err);
    }
    return net;
}

/* A model of tiny-cuda-nn's default HashGrid (3 dimensions) and a FullyFusedMLP to 16 outputs. */
static struct gj_network *make_model(uint32_t width, uint32_t hidden) {
    char config[256];
    snprintf(config, sizeof config,
             "{\"encoding\": {\"otype\": \"HashGrid\"}, \"network\": {\"otype\": \"FullyFusedMLP\", "
             "\"n_neurons\": %u, \"n_hidden_layers\": %u}}",
             width, hidden);
    return make(config, 3, 16);
}

/* The generated source of one program of net, named "net" (non-null: the caller frees it). */
static char *source_of(struct gj_network *net, gj__network_part part) {
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.name = "net";
    char *src = gj__network_codegen(net, &opts, part, "");
    assert_non_null(src);
    return src;
}

/* Field by field (the struct has padding). */
static void assert_same_plan(const gj__network_plan *a, const gj__network_plan *b) {
    assert_int_equal(a->stride, b->stride);
    assert_int_equal(a->scratch_halves, b->scratch_halves);
    assert_int_equal(a->ctx_halves, b->ctx_halves);
    assert_int_equal(a->staged_halves, b->staged_halves);
    assert_int_equal(a->warps, b->warps);
    assert_int_equal(a->forward_warps, b->forward_warps);
    assert_int_equal(a->stage, b->stage);
    assert_int_equal(a->stage_backward, b->stage_backward);
    assert_int_equal(a->smem_grads, b->smem_grads);
    assert_int_equal(a->input_smem_grads, b->input_smem_grads);
    assert_int_equal(a->forward_bytes, b->forward_bytes);
    assert_int_equal(a->backward_bytes, b->backward_bytes);
    assert_int_equal(a->backward_input_bytes, b->backward_input_bytes);
}

/* The 32 -> 64 -> 64 -> 16 MLP behind tiny-cuda-nn's default HashGrid (7168 parameters):
 * staged weights, block sums, and the most warps whose backward block leaves room for a
 * second block (96 KiB): 4. */
static const char small[] = "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64, \"n_hidden_layers\": 2}";

static void a_layout_gets_the_plan_s_choices(void **state) {
    (void)state;
    struct gj_network *net = make(small, 32, 16);
    gj__network_plan p;
    gj__network_plan_make(&net->layout, NULL, GJ__NETWORK_PLAN_PORTABLE, &p);
    assert_int_equal(p.stride, 72);
    assert_int_equal(p.warps, 4);
    assert_true(p.stage && p.stage_backward && p.smem_grads);
    assert_int_equal(p.staged_halves, (32 + 8) * 64 + (64 + 8) * 64 + (64 + 8) * 16);
    assert_int_equal(p.backward_bytes, 2 * p.staged_halves + 4 * 7168 + 2 * 64 * 72 * 4);
    assert_true(p.backward_bytes <= 96 * 1024);
    /* A model's backward with dL/dinput keeps no block sums: the same block less their bytes. */
    assert_false(p.input_smem_grads);
    assert_int_equal(p.backward_input_bytes, p.backward_bytes - 4 * 7168);
    /* Its training step's kernel takes the backward's blocks (staged already). */
    assert_false(p.step_stage);
    assert_int_equal(p.step_bytes, p.backward_bytes);
    assert_int_equal(p.step_input_bytes, p.backward_input_bytes);
    /* Zero hints are no hints. */
    gj__network_plan_hints none = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    gj__network_plan q;
    gj__network_plan_make(&net->layout, &none, GJ__NETWORK_PLAN_PORTABLE, &q);
    assert_same_plan(&p, &q);
    gj_network_destroy(net);
}

static void hints_replace_the_choices(void **state) {
    (void)state;
    struct gj_network *net = make(small, 32, 16);
    gj__network_plan_hints hints = {2, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    gj__network_plan p;
    gj__network_plan_make(&net->layout, &hints, GJ__NETWORK_PLAN_PORTABLE, &p);
    assert_int_equal(p.warps, 2);
    assert_false(p.stage);
    assert_false(p.stage_backward);
    assert_int_equal(p.staged_halves, 0);
    assert_false(p.smem_grads);
    assert_int_equal(p.forward_bytes, 64 * 72 * 2);     /* one buffer a warp, 2 warps */
    assert_int_equal(p.backward_bytes, 2 * 64 * 72 * 2); /* two buffers a warp */
    assert_int_equal(p.backward_input_bytes, p.backward_bytes);
    /* The block-sums hint sets both backward kernels' choice. */
    gj__network_plan_hints sums = {0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    gj__network_plan_make(&net->layout, &sums, GJ__NETWORK_PLAN_PORTABLE, &p);
    assert_true(p.smem_grads && p.input_smem_grads);
    assert_int_equal(p.backward_input_bytes, p.backward_bytes);
    /* One at a time: 8 warps alone keeps the plan's staging and block sums. */
    gj__network_plan_hints eight = {8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    gj__network_plan_make(&net->layout, &eight, GJ__NETWORK_PLAN_PORTABLE, &p);
    assert_int_equal(p.warps, 8);
    assert_true(p.stage && p.smem_grads);
    /* A warp count that is not 1, 2, 4 or 8 is no hint. */
    gj__network_plan_hints three = {3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    gj__network_plan_make(&net->layout, &three, GJ__NETWORK_PLAN_PORTABLE, &p);
    assert_int_equal(p.warps, 4);
    gj_network_destroy(net);
}

/* 128 wide, 2 hidden layers (49 KiB of weights): the forward passes stage them, the backward,
 * whose block also holds the block sums and two buffers a warp, reads them from global memory;
 * the hint 1 stages them in both, 0 in neither. */
static void wide_weights_are_staged_by_the_forward_passes(void **state) {
    (void)state;
    struct gj_network *net =
        make("{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 128, \"n_hidden_layers\": 2}", 32, 16);
    gj__network_plan p;
    gj__network_plan_make(&net->layout, NULL, GJ__NETWORK_PLAN_PORTABLE, &p);
    const uint64_t staged = (32 + 8) * 128 + (128 + 8) * 128 + (128 + 8) * 16;
    assert_true(p.stage);
    assert_false(p.stage_backward);
    assert_int_equal(p.staged_halves, staged);
    assert_int_equal(p.forward_bytes, 2 * staged + p.scratch_halves * p.forward_warps);
    assert_int_equal(p.backward_bytes, (p.smem_grads ? 4 * net->layout.n_params : 0) + 2 * p.scratch_halves * p.warps);
    gj__network_plan_hints on = {0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, off = {0, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    gj__network_plan both, neither;
    gj__network_plan_make(&net->layout, &on, GJ__NETWORK_PLAN_PORTABLE, &both);
    assert_true(both.stage && both.stage_backward);
    assert_int_equal(both.backward_bytes, 2 * staged + (both.smem_grads ? 4 * net->layout.n_params : 0) +
                                              2 * both.scratch_halves * both.warps);
    /* The training step's kernel stages them where the forward does (docs/networks.md §10): its
     * blocks are the backward's plus the weights. */
    assert_true(p.step_stage);
    assert_int_equal(p.step_bytes, p.backward_bytes + 2 * staged);
    assert_int_equal(p.step_input_bytes, p.backward_input_bytes + 2 * staged);
    gj__network_plan_make(&net->layout, &off, GJ__NETWORK_PLAN_PORTABLE, &neither);
    assert_false(neither.stage || neither.stage_backward || neither.step_stage);
    assert_int_equal(neither.forward_bytes, neither.scratch_halves * neither.forward_warps);
    assert_int_equal(neither.step_bytes, neither.backward_bytes);
    /* Past the forward limit (128 x 4: 116 KiB), nothing is staged. */
    struct gj_network *deep =
        make("{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 128, \"n_hidden_layers\": 4}", 32, 16);
    gj__network_plan_make(&deep->layout, NULL, GJ__NETWORK_PLAN_PORTABLE, &p);
    assert_false(p.stage || p.stage_backward);
    gj_network_destroy(deep);
    gj_network_destroy(net);
}

/* The blocks the plan gives the backward and the forward passes (measured on the H200,
 * network_plan.c): as many backward warps as fit 96 KiB (two blocks on sm_90, one within the
 * 99 KiB a block may take on sm_86 and sm_89), block sums kept where they fit; the forward
 * passes the backward's warps, at least four, two where they read the weights from global
 * memory. */
static void backward_and_forward_passes_get_their_own_warps(void **state) {
    (void)state;
    static const struct {
        unsigned neurons, hidden, warps, forward_warps;
        int smem_grads;
    } cases[] = {
        {64, 1, 8, 8, 1},  /* 91 KiB */
        {64, 2, 4, 4, 1},  /* with block sums eight warps take 116 KiB */
        {64, 3, 2, 4, 1},  /* four backward warps would take 105 KiB */
        {128, 1, 2, 4, 1}, /* 106 KiB: likewise */
        {64, 4, 4, 4, 0},  /* sums (60 KiB) past their share; eight warps staged: 106 KiB */
        {64, 6, 8, 8, 0},  /* staged by the forward passes only */
        {64, 8, 8, 2, 0},  /* nothing staged: two forward warps */
        {128, 4, 4, 2, 0}, /* likewise */
        {128, 2, 4, 4, 0}, /* the backward reads its weights (eight warps: 136 KiB) */
        {32, 2, 8, 8, 1},
        {16, 4, 8, 8, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        char json[160];
        snprintf(json, sizeof json, "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": %u, \"n_hidden_layers\": %u}",
                 cases[i].neurons, cases[i].hidden);
        struct gj_network *net = make(json, 32, 16);
        gj__network_plan p;
        gj__network_plan_make(&net->layout, NULL, GJ__NETWORK_PLAN_PORTABLE, &p);
        print_message("%u x %u: %u / %u warps, block sums %d, %u bytes backward\n", cases[i].neurons, cases[i].hidden,
                      p.forward_warps, p.warps, p.smem_grads, p.backward_bytes);
        assert_int_equal(p.warps, cases[i].warps);
        assert_int_equal(p.forward_warps, cases[i].forward_warps);
        assert_int_equal(p.smem_grads, cases[i].smem_grads);
        assert_true(p.backward_bytes <= 96 * 1024);
        assert_true(p.forward_bytes <= 96 * 1024);
        assert_int_equal(p.forward_bytes, 2 * (p.staged_halves + p.forward_scratch_halves * p.forward_warps));
        gj_network_destroy(net);
    }
}

/* GRIDJIT_NETWORK_WARPS's hint sets both blocks; the forward passes' hint only theirs. */
static void the_forward_warps_hint_leaves_the_backward(void **state) {
    (void)state;
    struct gj_network *net = make(small, 32, 16);
    gj__network_plan p;
    gj__network_plan_hints forward_two = {0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, eight_then_one = {8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    gj__network_plan_make(&net->layout, &forward_two, GJ__NETWORK_PLAN_PORTABLE, &p);
    assert_int_equal(p.warps, 4);
    assert_int_equal(p.forward_warps, 2);
    assert_int_equal(p.forward_bytes, 2 * (p.staged_halves + p.forward_scratch_halves * 2));
    gj__network_plan_make(&net->layout, &eight_then_one, GJ__NETWORK_PLAN_PORTABLE, &p);
    assert_int_equal(p.warps, 8);
    assert_int_equal(p.forward_warps, 1);
    net->hints = forward_two;
    char *src = source_of(net, GJ__NETWORK_PART_ALL);
    assert_non_null(strstr(src, "    static constexpr int WARPS = 4;"));
    assert_non_null(strstr(src, "    static constexpr int FORWARD_WARPS = 2;"));
    assert_non_null(strstr(src, "void __launch_bounds__(32 * net_config::FORWARD_WARPS)\nnet_inference("));
    assert_non_null(strstr(src, "void __launch_bounds__(32 * net_config::WARPS)\nnet_backward_input("));
    free(src);
    gj_network_destroy(net);
}

/* 128 wide, 8 hidden layers: block sums (532 KiB) cannot fit, so a hint asking for them is
 * dropped whole and the plan stays as it was. */
static void hints_that_do_not_fit_are_dropped(void **state) {
    (void)state;
    struct gj_network *net =
        make("{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 128, \"n_hidden_layers\": 8}", 32, 16);
    gj__network_plan plain, hinted;
    gj__network_plan_make(&net->layout, NULL, GJ__NETWORK_PLAN_PORTABLE, &plain);
    assert_false(plain.smem_grads);
    gj__network_plan_hints hints = {8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    gj__network_plan_make(&net->layout, &hints, GJ__NETWORK_PLAN_PORTABLE, &hinted);
    assert_same_plan(&plain, &hinted);
    gj_network_destroy(net);
}

/* The generated configuration states the hinted plan. */
static void generated_code_follows_the_hints(void **state) {
    (void)state;
    struct gj_network *net = make(small, 32, 16);
    char *plain = source_of(net, GJ__NETWORK_PART_TRAINING);
    assert_non_null(strstr(plain, "WARPS = 4;"));
    assert_non_null(strstr(plain, "STAGE = true;"));
    assert_non_null(strstr(plain, "STAGE_BWD = true;"));
    net->hints = (gj__network_plan_hints){2, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    char *hinted = source_of(net, GJ__NETWORK_PART_TRAINING);
    assert_non_null(strstr(hinted, "WARPS = 2;"));
    assert_non_null(strstr(hinted, "STAGE = false;"));
    assert_non_null(strstr(hinted, "STAGE_BWD = false;"));
    assert_non_null(strstr(hinted, "SMEM_GRADS = false;"));
    /* No minimum of blocks unless asked for; then every kernel's bounds state it. */
    assert_non_null(strstr(plain, "void __launch_bounds__(32 * net_config::FORWARD_WARPS)\nnet_forward("));
    assert_null(strstr(plain, "__launch_bounds__(32 * net_config::FORWARD_WARPS, "));
    net->hints = (gj__network_plan_hints){0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    char *bounded = source_of(net, GJ__NETWORK_PART_TRAINING);
    char *bounded_backward = source_of(net, GJ__NETWORK_PART_BACKWARD);
    assert_non_null(strstr(bounded, "void __launch_bounds__(32 * net_config::FORWARD_WARPS, 2)\nnet_forward("));
    assert_non_null(strstr(bounded_backward, "void __launch_bounds__(32 * net_config::WARPS, 2)\nnet_backward("));
    free(bounded_backward);
    net->hints = (gj__network_plan_hints){0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}; /* out of range: no hint */
    char *unbounded = source_of(net, GJ__NETWORK_PART_TRAINING);
    assert_string_equal(unbounded, plain);
    free(plain);
    free(hinted);
    free(bounded);
    free(unbounded);
    gj_network_destroy(net);
}


/* On sm_90 to sm_110 (227 KiB a block, 228 a multiprocessor) a backward block may take 112
 * KiB, two a multiprocessor, and forward passes that stage weights the backward reads from
 * global memory take eight warps: the plans measured faster on the H200 (network_plan.c);
 * every other shape's large plan is its portable one. */
static void large_plans_take_two_blocks_of_112_kib(void **state) {
    (void)state;
    static const struct {
        unsigned neurons, hidden, warps, forward_warps;
    } cases[] = {
        {64, 3, 4, 4},  /* portable: 2 / 4 */
        {128, 1, 4, 4}, /* portable: 2 / 4 */
        {64, 4, 8, 4},  /* portable: 4 / 4 */
        {128, 2, 4, 8}, /* portable: 4 / 4; a forward block of 116.25 KiB, one a multiprocessor */
        {64, 1, 8, 8},  {64, 2, 4, 4}, {64, 6, 8, 8}, {64, 8, 8, 2}, {32, 2, 8, 8}, {16, 4, 8, 8}, {128, 8, 4, 2}, {128, 4, 4, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        char json[160];
        snprintf(json, sizeof json, "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": %u, \"n_hidden_layers\": %u}",
                 cases[i].neurons, cases[i].hidden);
        struct gj_network *net = make(json, 32, 16);
        gj__network_plan portable, large;
        gj__network_plan_make(&net->layout, NULL, GJ__NETWORK_PLAN_PORTABLE, &portable);
        gj__network_plan_make(&net->layout, NULL, GJ__NETWORK_PLAN_LARGE, &large);
        print_message("%u x %u: large %u / %u warps, %u / %u bytes; portable %u / %u\n", cases[i].neurons,
                      cases[i].hidden, large.forward_warps, large.warps, large.forward_bytes, large.backward_bytes,
                      portable.forward_warps, portable.warps);
        assert_int_equal(large.warps, cases[i].warps);
        assert_int_equal(large.forward_warps, cases[i].forward_warps);
        assert_true(large.backward_bytes <= 112 * 1024);
        assert_true(large.forward_bytes <= 227 * 1024); /* what a block may take there */
        const int differs = portable.warps != large.warps || portable.forward_warps != large.forward_warps;
        assert_int_equal(!gj__network_plan_equal(&portable, &large), differs);
        /* What depends on the layout alone is the same in both (a context's size, the scratch). */
        assert_int_equal(large.ctx_halves, portable.ctx_halves);
        assert_int_equal(large.scratch_halves, portable.scratch_halves);
        gj_network_destroy(net);
    }
}

/* Which architectures get the large plan, in C and in the generated code's condition. */
static void the_class_of_an_architecture(void **state) {
    (void)state;
    static const int portable[] = {0 /* PTX */, 75, 80, 86, 87, 89, 120, 121};
    static const int large[] = {90, 100, 103, 110};
    for (size_t i = 0; i < sizeof portable / sizeof *portable; ++i) {
        assert_int_equal(gj__network_plan_class_of(portable[i]), GJ__NETWORK_PLAN_PORTABLE);
    }
    for (size_t i = 0; i < sizeof large / sizeof *large; ++i) {
        assert_int_equal(gj__network_plan_class_of(large[i]), GJ__NETWORK_PLAN_LARGE);
    }
}

/* unit, then text (malloc()ed). */
static char *appended(const char *unit, const char *text) {
    const size_t size = strlen(unit) + strlen(text) + 1;
    char *out = malloc(size);
    assert_non_null(out);
    snprintf(out, size, "%s%s", unit, text);
    return out;
}

/* Where the plans differ the unit states both, the large one under GJ__NETWORK_PLAN_LARGE_IF;
 * compiled with NVRTC as a cubin for each architecture, NAME_config holds the plan of the
 * class that gj__network_plan_class_of gives it, and as PTX the portable one (a static_assert
 * appended to the unit checks it). Where they agree the unit states one (64 x 2: as before
 * plans were made per class). */
static void each_architecture_compiles_its_class_s_plan(void **state) {
    (void)state;
    struct gj_network *net = make("{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64, \"n_hidden_layers\": 3}", 32, 16);
    char *src = source_of(net, GJ__NETWORK_PART_ALL);
    assert_non_null(strstr(src, "#if defined(GJ_CUBIN_TARGET) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && "
                                "__CUDA_ARCH__ < 1200 // cubins for sm_90 to sm_110: 227 KiB a block\n"
                                "    static constexpr int WARPS = 4;"));
    assert_non_null(strstr(src, "#else\n    static constexpr int WARPS = 2;"));
    assert_non_null(strstr(src, "// Kernels (cubins for sm_90 to sm_110): 4 warps per block (forward), 4 (backward)"));
    assert_non_null(strstr(src, "// Kernels (other architectures, PTX): 4 warps per block (forward), 2 (backward)"));
    free(src);
    struct gj_network *same = make(small, 32, 16);
    char *one = source_of(same, GJ__NETWORK_PART_ALL);
    assert_null(strstr(one, "__CUDA_ARCH__ >= 900 && __CUDA_ARCH__ < 1200"));
    assert_non_null(strstr(one, "// Kernels: 4 warps per block (forward), 4 (backward)"));
    free(one);
    gj_network_destroy(same);
    if (!gj_test_have_nvrtc()) {
        gj_network_destroy(net);
        skip();
    }
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    char *unit = gj_test_network_unit(ctx, net, 1);
    static const int archs[] = {80, 86, 89, 90, 100, 103, 110, 120};
    for (size_t i = 0; i < sizeof archs / sizeof *archs; ++i) {
        gj__network_plan p;
        gj__network_plan_make(&net->layout, NULL, gj__network_plan_class_of(archs[i]), &p);
        char check[256], arch[16];
        snprintf(check, sizeof check, "\nstatic_assert(mlp_config::WARPS == %u && mlp_config::FORWARD_WARPS == %u, "
                 "\"the plan of the class\");\n", p.warps, p.forward_warps);
        snprintf(arch, sizeof arch, "sm_%d", archs[i]);
        char *checked = appended(unit, check);
        const double ms = gj_test_network_compile(ctx, net, checked, 1, arch);
        print_message("%s: %u / %u warps (%.0f ms)\n", arch, p.forward_warps, p.warps, ms);
        free(checked);
    }
    /* PTX, for compute_90 too, states the portable plan (the driver may finish it for sm_120). */
    gj__network_plan portable;
    gj__network_plan_make(&net->layout, NULL, GJ__NETWORK_PLAN_PORTABLE, &portable);
    char check[256];
    snprintf(check, sizeof check, "\nstatic_assert(mlp_config::WARPS == %u, \"the portable plan\");\n", portable.warps);
    char *checked = appended(unit, check);
    const char *names[] = {"&mlp_user"};
    gj_program *prog = NULL;
    if (gj_compile_source(ctx, checked, names, 1, "compute_90", &prog) != GJ_OK) {
        fail_msg("compute_90: %s\n%s", gj_context_errmsg(ctx), prog ? gj_program_log(prog) : "");
    }
    assert_int_equal(gj_program_kind(prog), GJ_BINARY_PTX);
    gj_program_destroy(prog);
    free(checked);
    free(unit);
    gj_context_destroy(ctx);
    gj_network_destroy(net);
}

/* A model's inference and forward kernels ask for two blocks a multiprocessor where its
 * network is at most 64 wide (measured faster on the H200: network_codegen.c) and, if wider
 * than 32, its forward blocks have at most four warps (two blocks of eight would cap a thread's
 * registers at 128); its backward kernels, wider models and networks alone ask for none, and a
 * hint's minimum replaces the rule in every kernel. */
static void narrow_models_forward_kernels_ask_for_two_blocks(void **state) {
    (void)state;
    static const char model64[] = "{\"encoding\": {\"otype\": \"HashGrid\"}, \"network\": {\"otype\": "
                                  "\"FullyFusedMLP\", \"n_neurons\": 64, \"n_hidden_layers\": 2}}";
    static const char model128[] = "{\"encoding\": {\"otype\": \"HashGrid\"}, \"network\": {\"otype\": "
                                   "\"FullyFusedMLP\", \"n_neurons\": 128, \"n_hidden_layers\": 2}}";
    struct gj_network *narrow = make(model64, 3, 16), *wide = make(model128, 3, 16), *alone = make(small, 32, 16);
    /* The fused inference kernel (a model's inference over features is
     * a_model_s_inference_over_features's). */
    narrow->hints.inference_features = -1;
    wide->hints.inference_features = -1;
    char *inference = source_of(narrow, GJ__NETWORK_PART_INFERENCE);
    /* By default the 64-wide model recomputes, and its forward takes the inference kernel's
     * bounds; keeping its context, the forward's own. */
    char *recomputing_forward = source_of(narrow, GJ__NETWORK_PART_TRAINING);
    assert_non_null(strstr(recomputing_forward, "__launch_bounds__(32 * net_config::INFERENCE_WARPS, "
                                                "net_config::INFERENCE_MIN_BLOCKS)\nnet_forward("));
    free(recomputing_forward);
    narrow->hints.recompute = -1;
    char *forward = source_of(narrow, GJ__NETWORK_PART_TRAINING);
    char *backward = source_of(narrow, GJ__NETWORK_PART_BACKWARD);
    char *wide_inference = source_of(wide, GJ__NETWORK_PART_INFERENCE);
    char *alone_inference = source_of(alone, GJ__NETWORK_PART_INFERENCE);
    /* A model's inference kernel states its bounds in net_config, per class (the large class's
     * one block of 16 warps asks for one: a_model_s_inference_takes_one_wide_block). */
    static const char model_bounds[] =
        "__launch_bounds__(32 * net_config::INFERENCE_WARPS, net_config::INFERENCE_MIN_BLOCKS)\nnet_inference(";
    assert_non_null(strstr(inference, model_bounds));
    assert_non_null(strstr(inference, "#else\n"));
    assert_non_null(strstr(strstr(inference, "#else\n"), "static constexpr int INFERENCE_MIN_BLOCKS = 2;"));
    assert_non_null(strstr(forward, "__launch_bounds__(32 * net_config::FORWARD_WARPS, 2)\nnet_forward("));
    assert_non_null(strstr(backward, "__launch_bounds__(32 * net_config::WARPS)\nnet_backward("));
    assert_non_null(strstr(wide_inference, model_bounds));
    assert_non_null(strstr(wide_inference, "static constexpr int INFERENCE_MIN_BLOCKS = 0;"));
    assert_null(strstr(wide_inference, "INFERENCE_MIN_BLOCKS = 2;"));
    assert_non_null(strstr(alone_inference, "__launch_bounds__(32 * net_config::FORWARD_WARPS)\nnet_inference("));
    assert_null(strstr(alone_inference, "INFERENCE_WARPS"));
    /* 64 x 6 and 64 x 1 take eight forward warps: none; 16 x 8, as many, but narrow: two. */
    static const struct {
        uint32_t width, hidden;
        int two;
    } shapes[] = {{64, 6, 0}, {64, 1, 0}, {16, 8, 1}, {32, 4, 1}, {64, 8, 1}, {64, 3, 1}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; ++i) {
        struct gj_network *model = make_model(shapes[i].width, shapes[i].hidden);
        uint32_t most_warps = 0;
        for (int c = 0; c < GJ__NETWORK_PLAN_CLASSES; ++c) {
            gj__network_plan p;
            gj__network_plan_make(&model->layout, NULL, (gj__network_plan_class)c, &p);
            most_warps = p.forward_warps > most_warps ? p.forward_warps : most_warps;
        }
        /* The premise: the shapes without the bound are those with eight forward warps. */
        assert_true(shapes[i].two || most_warps == 8);
        model->hints.recompute = -1; /* the forward's own block (recomputing: the inference's) */
        char *src = source_of(model, GJ__NETWORK_PART_TRAINING);
        const int two = strstr(src, "__launch_bounds__(32 * net_config::FORWARD_WARPS, 2)\nnet_forward(") != NULL;
        if (two != shapes[i].two) {
            fail_msg("%ux%u (%u forward warps): two blocks %d, expected %d", shapes[i].width, shapes[i].hidden,
                     most_warps, two, shapes[i].two);
        }
        free(src);
        /* The inference kernel's minimum in the portable plan is the forward's. */
        model->hints.inference_features = -1;
        src = source_of(model, GJ__NETWORK_PART_INFERENCE);
        const char *portable = strstr(src, "#else\n") ? strstr(src, "#else\n") : src;
        assert_non_null(strstr(portable, shapes[i].two ? "INFERENCE_MIN_BLOCKS = 2;" : "INFERENCE_MIN_BLOCKS = 0;"));
        free(src);
        gj_network_destroy(model);
    }
    narrow->hints.min_blocks = 3;
    char *hinted = source_of(narrow, GJ__NETWORK_PART_INFERENCE);
    assert_non_null(strstr(hinted, model_bounds));
    assert_non_null(strstr(hinted, "static constexpr int INFERENCE_MIN_BLOCKS = 3;"));
    assert_null(strstr(hinted, "INFERENCE_MIN_BLOCKS = 1;")); /* a hint leaves the plans' shapes */
    /* GRIDJIT_NETWORK_FORWARD_REGISTERS's hint: a register budget instead of the bounds (CUDA
     * takes one or the other), the forward passes' alone; it compiles. */
    narrow->hints.forward_registers = 200;
    char *budget = source_of(narrow, GJ__NETWORK_PART_INFERENCE);
    char *budget_backward = source_of(narrow, GJ__NETWORK_PART_BACKWARD);
    assert_non_null(strstr(budget, "__maxnreg__(200)\nnet_inference("));
    assert_null(strstr(budget, "__launch_bounds__"));
    assert_non_null(strstr(budget_backward, "__launch_bounds__(32 * net_config::WARPS, 3)\nnet_backward("));
    if (gj_test_have_nvrtc()) {
        gj_context *ctx = NULL;
        assert_int_equal(gj_context_create(&ctx), GJ_OK);
        const char *names[] = {"&net_inference"};
        gj_program *prog = NULL;
        if (gj_compile_source(ctx, budget, names, 1, "sm_90", &prog) != GJ_OK) {
            fail_msg("%s\n%s", gj_context_errmsg(ctx), prog ? gj_program_log(prog) : "");
        }
        gj_program_destroy(prog);
        gj_context_destroy(ctx);
    }
    narrow->hints.forward_registers = 300; /* out of range: no budget */
    char *unbudgeted = source_of(narrow, GJ__NETWORK_PART_INFERENCE);
    assert_string_equal(unbudgeted, hinted);
    free(budget);
    free(budget_backward);
    free(unbudgeted);
    free(inference);
    free(forward);
    free(backward);
    free(wide_inference);
    free(alone_inference);
    free(hinted);
    gj_network_destroy(narrow);
    gj_network_destroy(wide);
    gj_network_destroy(alone);
}

/* Undoes the fused backward's global sums in a model's plan p of class c (the network's own
 * plan: network), asserting that they are the one difference in its block sums: the large
 * class, where the network's plan sums per block and the model recomputes, 32-wide hidden
 * layers excepted (a_model_s_fused_backward_sums_in_global_memory). */
static void without_fused_sums(gj__network_plan *p, const gj__network_plan *network, int c, uint32_t hidden_width,
                               uint64_t n_params) {
    const int rule = c == GJ__NETWORK_PLAN_LARGE && network->smem_grads && p->recompute && hidden_width != 32;
    assert_int_equal(p->smem_grads, rule ? 0 : network->smem_grads);
    if (rule) {
        assert_int_equal(p->backward_bytes + 4 * ((n_params + 3) / 4 * 4), network->backward_bytes);
        p->smem_grads = network->smem_grads;
        p->backward_bytes = network->backward_bytes;
    }
}

/* p as gj__network_plan_make made it: without the staging of the step's targets that
 * gj__network_plans_make adds (model: a network behind an encoding). */
static void without_step_staging(gj__network_plan *p, int model) {
    uint32_t *bytes = model ? &p->step_input_bytes : &p->step_bytes;
    *bytes -= (uint32_t)(2 * p->step_target_halves * p->warps);
    p->step_fetch_targets = 0;
    p->step_target_halves = 0;
    p->features_fetch = 0; /* a model's inference over features (a_model_s_inference_over_features) */
    p->features_bytes = 0;
}

/* The training step fetches its targets ahead, in a staging of 32 rows a warp counted in its
 * block, unless that would leave the block alone on a multiprocessor where two fitted (64 x 4's
 * blocks of eight warps); a hint either way; the same in every class. */
static void the_step_fetches_its_targets_ahead(void **state) {
    (void)state;
    struct gj_network *m64x2 = make_model(64, 2), *m64x4 = make_model(64, 4), *alone = make(small, 32, 16);
    const struct {
        struct gj_network *net;
        int model, hint, fetch;
    } cases[] = {
        {m64x2, 1, 0, 1}, {m64x2, 1, -1, 0}, {m64x4, 1, 0, 0}, {m64x4, 1, 1, 1},
        {alone, 0, 0, 1}, {alone, 0, -1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        gj__network_plan plans[GJ__NETWORK_PLAN_CLASSES], one;
        cases[i].net->hints.step_fetch_targets = cases[i].hint;
        gj__network_plans_make(&cases[i].net->layout, &cases[i].net->hints, gj__network_feature_bytes(cases[i].net), 0,
                               plans);
        for (int c = 0; c < GJ__NETWORK_PLAN_CLASSES; ++c) {
            gj__network_plan_make(&cases[i].net->layout, &cases[i].net->hints, (gj__network_plan_class)c, &one);
            assert_int_equal(plans[c].step_fetch_targets, cases[i].fetch);
            const uint32_t halves = cases[i].fetch ? 64 * 16 : 0; /* 32 rows of 16 float targets */
            assert_int_equal(plans[c].step_target_halves, halves);
            const uint32_t staging = 2 * halves * one.warps;
            assert_int_equal(plans[c].step_input_bytes, one.step_input_bytes + (cases[i].model ? staging : 0));
            assert_int_equal(plans[c].step_bytes, one.step_bytes + (cases[i].model ? 0 : staging));
            if (c == GJ__NETWORK_PLAN_LARGE && cases[i].net == m64x4) {
                /* two blocks of eight warps fit 228 KiB without the staging, one with it */
                assert_int_equal(one.warps, 8);
                assert_true(2 * (one.step_input_bytes + 1024) <= 228 * 1024);
                assert_true(2 * (one.step_input_bytes + 2 * 64 * 16 * 8 + 1024) > 228 * 1024);
            }
        }
        cases[i].net->hints.step_fetch_targets = 0;
    }
    gj_network_destroy(m64x2);
    gj_network_destroy(m64x4);
    gj_network_destroy(alone);
}

/* The small sums: a model's fused backward gets room for its encoding's leading small levels'
 * fp32 sums (C1: level 0, 4096 entries of 2 features, 32 KiB) after the warps' scratch where its
 * block still fits, two a multiprocessor on the large class (64 x 2: 80.3 + 32 KiB), within 96
 * KiB on the portable one (no); by default where the plan recomputes (64 x 2, not 128 x 2, nor a
 * model keeping its context), with the hint 1 wherever it fits, with -1 nowhere; never for a
 * network alone or where the sums would not fit. The generated backward program states it, and
 * its encoding's leading small floats, and compiles. */
static void a_model_s_backward_may_sum_its_small_levels_in_shared_memory(void **state) {
    (void)state;
    struct gj_network *model = make_model(64, 2);
    const uint32_t floats = gj__network_small_floats(model);
    assert_int_equal(floats, 4096 * 2);
    gj__network_plan plain[GJ__NETWORK_PLAN_CLASSES], hinted[GJ__NETWORK_PLAN_CLASSES], alone[GJ__NETWORK_PLAN_CLASSES];
    gj__network_plan by_default[GJ__NETWORK_PLAN_CLASSES];
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), floats, by_default);
    model->hints.small_sums = -1;
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), floats, plain);
    model->hints.small_sums = 1;
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), floats, hinted);
    gj__network_plans_make(&model->layout, &model->hints, 0, floats, alone);
    for (int c = 0; c < GJ__NETWORK_PLAN_CLASSES; ++c) {
        assert_true(by_default[c].recompute);
        assert_true(gj__network_plan_equal(&by_default[c], &hinted[c]));
    }
    const gj__network_plan *large = &hinted[GJ__NETWORK_PLAN_LARGE];
    assert_int_equal(large->small_sums_floats, floats);
    assert_int_equal(large->backward_bytes, plain[GJ__NETWORK_PLAN_LARGE].backward_bytes + 4 * floats);
    assert_true(2 * (large->backward_bytes + 1024) <= 228 * 1024);
    assert_int_equal(large->backward_input_bytes, plain[GJ__NETWORK_PLAN_LARGE].backward_input_bytes);
    assert_int_equal(large->step_input_bytes, plain[GJ__NETWORK_PLAN_LARGE].step_input_bytes);
    assert_true(gj__network_plan_equal(&hinted[GJ__NETWORK_PLAN_PORTABLE], &plain[GJ__NETWORK_PLAN_PORTABLE]));
    for (int c = 0; c < GJ__NETWORK_PLAN_CLASSES; ++c) {
        assert_int_equal(plain[c].small_sums_floats, 0);
        assert_int_equal(alone[c].small_sums_floats, 0);
    }
    char *src = source_of(model, GJ__NETWORK_PART_BACKWARD);
    assert_non_null(strstr(src, "    static constexpr gj_u32 SMALL_SUMS_FLOATS = 8192;"));
    assert_non_null(strstr(src, "    static constexpr gj_u32 SMALL_FLOATS = 8192;"));
    free(src);
    if (gj_test_have_nvrtc()) { /* the whole unit: sm_90's cubin sums them, sm_80's does not */
        gj_context *ctx = NULL;
        assert_int_equal(gj_context_create(&ctx), GJ_OK);
        char *unit = gj_test_network_unit(ctx, model, 0);
        gj_test_network_compile(ctx, model, unit, 0, "sm_90");
        gj_test_network_compile(ctx, model, unit, 0, "sm_80");
        free(unit);
        gj_context_destroy(ctx);
    }
    gj_network_destroy(model);
    /* Not by default where the plan keeps the context: a model told to keep it, or 128 wide;
     * the hint still asks for them there. */
    model = make_model(64, 2);
    model->hints.recompute = -1;
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), floats, by_default);
    model->hints.small_sums = 1;
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), floats, hinted);
    assert_int_equal(by_default[GJ__NETWORK_PLAN_LARGE].small_sums_floats, 0);
    assert_int_equal(hinted[GJ__NETWORK_PLAN_LARGE].small_sums_floats, floats);
    gj_network_destroy(model);
    model = make_model(128, 2);
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), floats, by_default);
    for (int c = 0; c < GJ__NETWORK_PLAN_CLASSES; ++c) {
        assert_false(by_default[c].recompute);
        assert_int_equal(by_default[c].small_sums_floats, 0);
    }
    gj_network_destroy(model);
    /* 64 wide, 2 and 4 hidden layers (measured) stage the backward's weights and recompute; 8
     * hidden layers do not stage them (70 KB), and keep their context, in every class. */
    static const struct {
        uint32_t hidden;
        int recomputes;
    } depths[] = {{2, 1}, {4, 1}, {8, 0}};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; ++i) {
        model = make_model(64, depths[i].hidden);
        gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), floats, by_default);
        for (int c = 0; c < GJ__NETWORK_PLAN_CLASSES; ++c) {
            assert_int_equal(by_default[c].recompute, depths[i].recomputes);
            assert_int_equal(by_default[c].stage_backward, depths[i].recomputes);
            assert_int_equal(by_default[c].pass_ctx_halves,
                             depths[i].recomputes ? 32 * 32 : by_default[c].ctx_halves); /* C1: 32 features */
        }
        gj_network_destroy(model);
    }
    /* Sums that would leave the block alone on a multiprocessor (here 12 levels' worth) are none. */
    model = make_model(64, 2);
    model->hints.small_sums = 1;
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), 12 * 4096, hinted);
    for (int c = 0; c < GJ__NETWORK_PLAN_CLASSES; ++c) {
        assert_int_equal(hinted[c].small_sums_floats, 0);
    }
    gj_network_destroy(model);
}

/* A model's inference in two passes: by default where the large class's fused kernel would not
 * take the wide block of 16 warps (64 x 4, 128 x 2), the hint 1 everywhere, -1 nowhere. Its
 * inference program then has the network's kernel over the features instead of the fused one, in
 * the inference kernel's block; by default (and with the hint features_fetch 1; -1 none) each
 * warp's staging of a tile's features (32 x the network's inputs, fp16) after it where the block
 * still fits: on the large
 * class within the most a plan takes (the wide block is alone anyway), on the portable one within
 * its 96 KiB; a network alone has none. Compiled, each class's NAME_config states the choice. */
static void a_model_s_inference_over_features(void **state) {
    (void)state;
    static const struct {
        uint32_t width, hidden;
        int two; /* by default */
    } shapes[] = {{64, 2, 0}, {64, 4, 1}, {128, 2, 1}, {16, 8, 0}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; ++i) {
        struct gj_network *model = make_model(shapes[i].width, shapes[i].hidden);
        gj__network_plan plans[GJ__NETWORK_PLAN_CLASSES], fetching[GJ__NETWORK_PLAN_CLASSES],
            alone[GJ__NETWORK_PLAN_CLASSES], off[GJ__NETWORK_PLAN_CLASSES];
        gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), 0, plans);
        assert_int_equal(gj__network_inference_features(model), shapes[i].two);
        assert_int_equal(shapes[i].two, plans[GJ__NETWORK_PLAN_LARGE].inference_warps != 16);
        model->hints.features_fetch = 1;
        gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), 0, fetching);
        gj__network_plans_make(&model->layout, &model->hints, 0, 0, alone);
        model->hints.features_fetch = -1;
        gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), 0, off);
        model->hints.features_fetch = 0;
        for (int c = 0; c < GJ__NETWORK_PLAN_CLASSES; ++c) {
            /* by default as the hint 1; -1 none */
            assert_int_equal(plans[c].features_fetch, fetching[c].features_fetch);
            assert_int_equal(plans[c].features_bytes, fetching[c].features_bytes);
            assert_false(off[c].features_fetch);
            assert_int_equal(off[c].features_bytes, off[c].inference_bytes);
            assert_false(alone[c].features_fetch);
            const gj__network_plan *p = &fetching[c];
            const uint32_t staging = 2 * 32 * model->layout.input_width * p->inference_warps; /* fp16 */
            if (p->features_fetch) {
                assert_int_equal(p->features_bytes, p->inference_bytes + staging);
                assert_true(p->features_bytes <= (c == GJ__NETWORK_PLAN_LARGE ? 160u : 96u) * 1024u);
            } else {
                assert_int_equal(p->features_bytes, p->inference_bytes);
                /* Beyond the budget, or (the large class's blocks that share a multiprocessor)
                 * fewer of them a multiprocessor. */
                assert_true(c == GJ__NETWORK_PLAN_LARGE ? p->inference_warps != 16
                                                        : p->inference_bytes + staging > 96u * 1024u);
            }
        }
        print_message("%u x %u: two passes %d by default; features fetched ahead %d (large), %d (portable)\n",
                      shapes[i].width, shapes[i].hidden, shapes[i].two, fetching[GJ__NETWORK_PLAN_LARGE].features_fetch,
                      fetching[GJ__NETWORK_PLAN_PORTABLE].features_fetch);
        /* The 64 x 2 model's wide block and its portable one both fetch ahead. */
        if (i == 0) {
            assert_true(fetching[GJ__NETWORK_PLAN_LARGE].features_fetch &&
                        fetching[GJ__NETWORK_PLAN_PORTABLE].features_fetch);
            assert_int_equal(fetching[GJ__NETWORK_PLAN_LARGE].inference_warps, 16);
        }
        char *by_default = source_of(model, GJ__NETWORK_PART_INFERENCE);
        model->hints.inference_features = 1;
        char *fetch = source_of(model, GJ__NETWORK_PART_INFERENCE); /* with the fetch: the rule */
        model->hints.features_fetch = -1;
        char *two = source_of(model, GJ__NETWORK_PART_INFERENCE);
        model->hints.inference_features = -1;
        char *fused = source_of(model, GJ__NETWORK_PART_INFERENCE);
        model->hints.features_fetch = 1;
        char *fused_hinted = source_of(model, GJ__NETWORK_PART_INFERENCE);
        assert_string_equal(fused_hinted, fused); /* no staging where no kernel runs over features */
        free(fused_hinted);
        model->hints.features_fetch = 0;
        assert_string_equal(by_default, shapes[i].two ? fetch : fused);
        assert_non_null(strstr(two, "__launch_bounds__(32 * net_config::INFERENCE_WARPS, net_config::INFERENCE_MIN_BLOCKS)\n"
                                    "net_inference_features("));
        assert_null(strstr(two, "\nnet_inference("));
        assert_non_null(strstr(fused, "\nnet_inference("));
        assert_null(strstr(fused, "net_inference_features("));
        model->hints.inference_features = 0;
        if (i == 0 && gj_test_have_nvrtc()) {
            gj_context *ctx = NULL;
            assert_int_equal(gj_context_create(&ctx), GJ_OK);
            static const char *const arch[] = {"sm_90", "sm_86", "sm_90"};
            for (int c = 0; c < 3; ++c) {
                const int fetched = c < 2;
                char check[160];
                snprintf(check, sizeof check,
                         "\nstatic_assert(net_inference_config::FEATURES_FETCH == %s, \"the class's choice\");\n",
                         fetched ? "true" : "false");
                char *checked = appended(fetched ? fetch : two, check);
                const char *names[] = {"&net_inference_features"};
                gj_program *prog = NULL;
                if (gj_compile_source(ctx, checked, names, 1, arch[c], &prog) != GJ_OK) {
                    fail_msg("%s: %s\n%s", arch[c], gj_context_errmsg(ctx), prog ? gj_program_log(prog) : "");
                }
                gj_program_destroy(prog);
                free(checked);
            }
            gj_context_destroy(ctx);
        }
        free(by_default);
        free(two);
        free(fused);
        free(fetch);
        gj_network_destroy(model);
    }
}

/* A model whose encoding is fp32 stages its features as they are, 4 bytes each: its staging is
 * twice the fp16 model's (a staging of fp16 room overran the next warp's, and the block's, on
 * the GPU), and fits or not by that size; by default it fetches none (the hint 1 asks). */
static void an_fp32_model_stages_fp32_features(void **state) {
    (void)state;
    struct gj_network *half = make_model(64, 2);
    struct gj_network *single = make("{\"encoding\": {\"otype\": \"HashGrid\", \"precision\": \"fp32\"}, "
                                     "\"network\": {\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64, "
                                     "\"n_hidden_layers\": 2}}",
                                     3, 16);
    assert_int_equal(gj__network_feature_bytes(half), 2);
    assert_int_equal(gj__network_feature_bytes(single), 4);
    gj__network_plan h[GJ__NETWORK_PLAN_CLASSES], s[GJ__NETWORK_PLAN_CLASSES];
    /* by default only fp16 features are fetched (fp32's measured no faster) */
    gj__network_plans_make(&single->layout, &single->hints, gj__network_feature_bytes(single), 0, s);
    for (int c = 0; c < GJ__NETWORK_PLAN_CLASSES; ++c) {
        assert_false(s[c].features_fetch);
        assert_int_equal(s[c].features_bytes, s[c].inference_bytes);
    }
    half->hints.features_fetch = single->hints.features_fetch = 1;
    gj__network_plans_make(&half->layout, &half->hints, gj__network_feature_bytes(half), 0, h);
    gj__network_plans_make(&single->layout, &single->hints, gj__network_feature_bytes(single), 0, s);
    int fetching = 0;
    for (int c = 0; c < GJ__NETWORK_PLAN_CLASSES; ++c) {
        assert_int_equal(s[c].inference_bytes, h[c].inference_bytes); /* the same network */
        const uint64_t staging = 4ull * 32 * single->layout.input_width * s[c].inference_warps;
        const uint64_t budget = (c == GJ__NETWORK_PLAN_LARGE ? 160u : 96u) * 1024u;
        if (s[c].features_fetch) {
            assert_int_equal(s[c].features_bytes, s[c].inference_bytes + staging);
            assert_true(s[c].features_bytes <= budget);
            assert_true(h[c].features_fetch);
            assert_int_equal(s[c].features_bytes - s[c].inference_bytes, 2 * (h[c].features_bytes - h[c].inference_bytes));
            fetching++;
        } else {
            assert_int_equal(s[c].features_bytes, s[c].inference_bytes);
        }
    }
    assert_true(fetching > 0); /* the portable class's block has room for it */
    gj_network_destroy(half);
    gj_network_destroy(single);
}

/* A model whose encoding's parameter tables outgrow 40 MiB (the sm_90 GPUs' L2 is 50-60 MiB) runs
 * its inference, and its forward for training where it recomputes, in two passes whatever its
 * network: C1's fp16 tables (28.5 MB) stay fused, 2^20 entries a level (55.7 MB) and C1 in fp32
 * (56.9 MB) do not, nor fp32 with 2^18 (29.6 MB). The hint -1 keeps them fused. */
static void a_model_with_tables_past_l2_runs_in_two_passes(void **state) {
    (void)state;
    static const struct {
        const char *precision;
        int log2;
        uint64_t bytes; /* its parameter tables */
        int two;
    } tables[] = {{"fp16", 19, 28459008u, 0}, {"fp16", 20, 55721984u, 1}, {"fp16", 22, 0, 1},
                  {"fp32", 18, 0, 0},         {"fp32", 19, 56918016u, 1}};
    for (size_t i = 0; i < sizeof tables / sizeof *tables; ++i) {
        char config[320];
        snprintf(config, sizeof config,
                 "{\"encoding\": {\"otype\": \"HashGrid\", \"precision\": \"%s\", \"log2_hashmap_size\": %d}, "
                 "\"network\": {\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64, \"n_hidden_layers\": 2}}",
                 tables[i].precision, tables[i].log2);
        struct gj_network *model = make(config, 3, 16);
        if (tables[i].bytes) {
            assert_int_equal((uint64_t)gj__network_feature_bytes(model) * model->encoding->layout.n_params,
                             tables[i].bytes);
        }
        assert_int_equal(gj__network_inference_features(model), tables[i].two);
        assert_int_equal(gj__network_forward_features(model), tables[i].two); /* 64 x 2 recomputes */
        char *src = source_of(model, GJ__NETWORK_PART_INFERENCE);
        assert_true((strstr(src, "net_inference_features(") != NULL) == tables[i].two);
        free(src);
        model->hints.inference_features = -1;
        assert_false(gj__network_inference_features(model));
        assert_false(gj__network_forward_features(model));
        gj_network_destroy(model);
    }
}

/* A model's forward for training in two passes (the hint forward_features 1; -1 never): only
 * where its forward recomputes, so runs in the inference kernel's block (64 x 2, 64 x 4, 16 x 8;
 * not 128 x 2, which keeps its context); by the rule where its inference runs in two passes
 * too (64 x 4). Its training program then has
 * NAME_forward_features (the network over the features, writing the context) instead of
 * NAME_forward; the backward's program has the same code. Compiled for sm_90, with the fetch too. */
static void a_model_s_forward_over_features(void **state) {
    (void)state;
    static const struct {
        uint32_t width, hidden;
        int recomputes, by_default;
    } shapes[] = {{64, 2, 1, 0}, {64, 4, 1, 1}, {128, 2, 0, 0}, {16, 8, 1, 0}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; ++i) {
        struct gj_network *model = make_model(shapes[i].width, shapes[i].hidden);
        gj__network_plan plans[GJ__NETWORK_PLAN_CLASSES];
        gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), 0, plans);
        assert_int_equal(plans[GJ__NETWORK_PLAN_PORTABLE].recompute, shapes[i].recomputes);
        /* by the rule: where it recomputes and its inference runs in two passes as well */
        assert_int_equal(gj__network_forward_features(model), shapes[i].by_default);
        /* The sources below without the fetch: its FEATURES_FETCH, in every program's config, is
         * set only where a kernel runs over features. */
        model->hints.features_fetch = -1;
        char *by_default = source_of(model, GJ__NETWORK_PART_TRAINING);
        model->hints.forward_features = -1;
        assert_false(gj__network_forward_features(model));
        char *fused = source_of(model, GJ__NETWORK_PART_TRAINING);
        char *backward = source_of(model, GJ__NETWORK_PART_BACKWARD);
        model->hints.forward_features = 1;
        assert_int_equal(gj__network_forward_features(model), shapes[i].recomputes);
        assert_int_equal(gj__network_has_kernel(model, GJ__NK_FORWARD_FEATURES), shapes[i].recomputes);
        assert_int_equal(gj__network_has_kernel(model, GJ__NK_FORWARD), !shapes[i].recomputes);
        char *two = source_of(model, GJ__NETWORK_PART_TRAINING);
        char *backward_two = source_of(model, GJ__NETWORK_PART_BACKWARD);
        /* The same code (the header's comment says how the forward runs) */
        const char *end = "// ===========================================================================\n\n";
        assert_non_null(strstr(backward, end));
        assert_string_equal(strstr(backward_two, end), strstr(backward, end));
        if (shapes[i].recomputes) {
            assert_non_null(strstr(two, "__launch_bounds__(32 * net_config::INFERENCE_WARPS, net_config::INFERENCE_MIN_BLOCKS)\n"
                                        "net_forward_features("));
            assert_null(strstr(two, "\nnet_forward("));
        } else {
            assert_string_equal(two, fused);
        }
        assert_non_null(strstr(fused, "\nnet_forward("));
        assert_null(strstr(fused, "net_forward_features("));
        assert_string_equal(by_default, shapes[i].by_default ? two : fused);
        if (i == 0 && gj_test_have_nvrtc()) {
            gj_context *ctx = NULL;
            assert_int_equal(gj_context_create(&ctx), GJ_OK);
            for (int fetch = 0; fetch < 2; ++fetch) {
                model->hints.features_fetch = fetch ? 1 : -1;
                char *source = source_of(model, GJ__NETWORK_PART_TRAINING);
                const char *names[] = {"&net_forward_features"};
                gj_program *prog = NULL;
                if (gj_compile_source(ctx, source, names, 1, "sm_90", &prog) != GJ_OK) {
                    fail_msg("fetch %d: %s\n%s", fetch, gj_context_errmsg(ctx), prog ? gj_program_log(prog) : "");
                }
                gj_program_destroy(prog);
                free(source);
            }
            model->hints.features_fetch = 0;
            gj_context_destroy(ctx);
        }
        free(by_default);
        free(fused);
        free(two);
        free(backward);
        free(backward_two);
        gj_network_destroy(model);
    }
}

/* A model's inference kernel on the large class: one block of 16 warps, rows as wide as the
 * network's input or output, one m-tile at a time, within 63 KiB (so that the 64 KiB carveout
 * holds it); the portable class, networks alone, models whose block would not fit and hints keep
 * the forward kernel's shape. Compiled, NAME_inference_config states the class's shape. */
/* By the rule (fp16 values) and with the hint 1 (GRIDJIT_NETWORK_STAGE_SMALL_LEVELS=1) a model's
 * wide inference block (large class) copies its encoding's leading small levels into its shared
 * memory: C1's first level, 16^3 entries of 2 fp16 values (gj__network_small_floats), after the
 * warps' buffers; not the kernel over features (features_bytes), not the portable class, not with
 * the hint -1, not fp32 values by the rule, nor where the block is not the wide one (64 x 4) or
 * there are no small levels. */
static void the_wide_block_stages_the_small_levels(void **state) {
    (void)state;
    struct gj_network *model = make_model(64, 2);
    const uint32_t floats = gj__network_small_floats(model);
    assert_int_equal(floats, 4096 * 2);
    gj__network_plan with[GJ__NETWORK_PLAN_CLASSES], without[GJ__NETWORK_PLAN_CLASSES];
    assert_int_equal(gj__network_feature_bytes(model), 2);
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), floats, with);
    assert_int_equal(with[GJ__NETWORK_PLAN_LARGE].inference_table_values, floats); /* the rule */
    /* fp32 values (a model of fp32 parameters): by the rule no, with the hint 1 yes. */
    gj__network_plan wide32[GJ__NETWORK_PLAN_CLASSES];
    gj__network_plans_make(&model->layout, &model->hints, 4, floats, wide32);
    assert_int_equal(wide32[GJ__NETWORK_PLAN_LARGE].inference_table_values, 0);
    model->hints.small_levels_staged = 1;
    gj__network_plans_make(&model->layout, &model->hints, 4, floats, wide32);
    assert_int_equal(wide32[GJ__NETWORK_PLAN_LARGE].inference_table_values, floats);
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), floats, with);
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), 0, without);
    const gj__network_plan *large = &with[GJ__NETWORK_PLAN_LARGE];
    assert_int_equal(large->inference_warps, 16);
    assert_int_equal(large->inference_table_values, floats);
    assert_int_equal(large->inference_bytes, 2 * (large->staged_halves + 16 * 32 * 40) + 2 * floats);
    assert_int_equal(large->features_bytes, without[GJ__NETWORK_PLAN_LARGE].features_bytes);
    assert_int_equal(with[GJ__NETWORK_PLAN_PORTABLE].inference_table_values, 0);
    assert_int_equal(without[GJ__NETWORK_PLAN_LARGE].inference_table_values, 0);
    model->hints.small_levels_staged = -1;
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), floats, with);
    assert_int_equal(with[GJ__NETWORK_PLAN_LARGE].inference_table_values, 0);
    assert_int_equal(with[GJ__NETWORK_PLAN_LARGE].inference_bytes, without[GJ__NETWORK_PLAN_LARGE].inference_bytes);
    /* Copied 16 bytes at a time: a count that is not a multiple of 8 values is rounded down. */
    model->hints.small_levels_staged = 1;
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), 8 * 1000 + 5, with);
    assert_int_equal(with[GJ__NETWORK_PLAN_LARGE].inference_table_values, 8 * 1000);
    gj_network_destroy(model);
    model = make_model(64, 4);
    model->hints.small_levels_staged = 1;
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), floats, with);
    assert_int_equal(with[GJ__NETWORK_PLAN_LARGE].inference_table_values, 0);
    gj_network_destroy(model);
}

static void a_model_s_inference_takes_one_wide_block(void **state) {
    (void)state;
    static const struct {
        uint32_t width, hidden;
        int wide;
    } shapes[] = {{64, 2, 1}, {32, 2, 1}, {16, 2, 1}, {64, 1, 1}, {64, 3, 0}, {64, 4, 0}, {128, 2, 0}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; ++i) {
        struct gj_network *model = make_model(shapes[i].width, shapes[i].hidden);
        gj__network_plan plans[GJ__NETWORK_PLAN_CLASSES], alone[GJ__NETWORK_PLAN_CLASSES], one;
        gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), 0, plans);
        gj__network_plans_make(&model->layout, &model->hints, 0, 0, alone);
        for (int c = 0; c < GJ__NETWORK_PLAN_CLASSES; ++c) {
            without_step_staging(&plans[c], 1);
            without_step_staging(&alone[c], 0);
            gj__network_plan_make(&model->layout, NULL, (gj__network_plan_class)c, &one);
            without_fused_sums(&plans[c], &one, c, shapes[i].width, model->layout.n_params);
            assert_same_plan(&plans[c], &one); /* the rest of the plan is the network's */
            assert_true(gj__network_plan_equal(&alone[c], &one));
            assert_int_equal(one.inference_warps, one.forward_warps);
            assert_int_equal(one.inference_stride, one.stride);
            assert_int_equal(one.inference_bytes, one.forward_bytes);
            assert_int_equal(one.inference_min_blocks, 0);
            assert_int_equal(one.inference_m_tiles, 0);
        }
        const gj__network_plan *large = &plans[GJ__NETWORK_PLAN_LARGE];
        assert_true(gj__network_plan_equal(&plans[GJ__NETWORK_PLAN_PORTABLE], &alone[GJ__NETWORK_PLAN_PORTABLE]));
        print_message("%u x %u: inference %u warps, rows of %u, %u bytes\n", shapes[i].width, shapes[i].hidden,
                      large->inference_warps, large->inference_stride, large->inference_bytes);
        if (shapes[i].wide) {
            assert_int_equal(large->inference_warps, 16);
            assert_int_equal(large->inference_stride, 32 + 8); /* 16 levels x 2 features, 16 outputs */
            assert_int_equal(large->inference_scratch_halves, 32 * 40);
            assert_int_equal(large->inference_min_blocks, 1);
            assert_int_equal(large->inference_m_tiles, 1);
            assert_int_equal(large->inference_bytes, 2 * (large->staged_halves + 16 * 32 * 40));
            assert_true(large->inference_bytes <= 63 * 1024);
            assert_false(gj__network_plan_equal(large, &alone[GJ__NETWORK_PLAN_LARGE]));
        } else {
            assert_true(gj__network_plan_equal(large, &alone[GJ__NETWORK_PLAN_LARGE]));
            assert_true(2 * (large->staged_halves + 16 * 32 * 40) > 63 * 1024 || !large->stage);
        }
        gj_network_destroy(model);
    }
    /* A hint measures the other shapes. */
    struct gj_network *model = make_model(64, 2);
    model->hints.inference_features = -1; /* the fused kernel, compiled below */
    gj__network_plan plans[GJ__NETWORK_PLAN_CLASSES];
    model->hints.forward_warps = 4;
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), 0, plans);
    assert_int_equal(plans[GJ__NETWORK_PLAN_LARGE].inference_warps, 4);
    model->hints.forward_warps = 0;
    model->hints.forward_registers = 168;
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), 0, plans);
    assert_int_equal(plans[GJ__NETWORK_PLAN_LARGE].inference_warps, 4);
    model->hints.forward_registers = 0;
    if (!gj_test_have_nvrtc()) {
        gj_network_destroy(model);
        skip();
    }
    /* Each class's kernel as NVRTC compiles it (a cubin for sm_90: the wide block; sm_86 and PTX
     * for compute_90: the forward kernel's shape). */
    char *src = source_of(model, GJ__NETWORK_PART_INFERENCE);
    static const struct {
        const char *arch;
        int warps, stride, m_tiles;
    } targets[] = {{"sm_90", 16, 40, 1}, {"sm_100", 16, 40, 1}, {"sm_86", 4, 72, 0}, {"compute_90", 4, 72, 0}};
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    for (size_t i = 0; i < sizeof targets / sizeof *targets; ++i) {
        char check[320];
        snprintf(check, sizeof check,
                 "\nstatic_assert(net_inference_config::FORWARD_WARPS == %d && net_inference_config::S == %d && "
                 "net_inference_config::FORWARD_M_TILES == %d && net_config::FORWARD_WARPS == 4, \"the class's shape\");\n",
                 targets[i].warps, targets[i].stride, targets[i].m_tiles);
        char *checked = appended(src, check);
        const char *names[] = {"&net_inference"};
        gj_program *prog = NULL;
        if (gj_compile_source(ctx, checked, names, 1, targets[i].arch, &prog) != GJ_OK) {
            fail_msg("%s: %s\n%s", targets[i].arch, gj_context_errmsg(ctx), prog ? gj_program_log(prog) : "");
        }
        gj_program_destroy(prog);
        free(checked);
    }
    gj_context_destroy(ctx);
    free(src);
    gj_network_destroy(model);
}

/* A model's fused backward on the large class adds the network's weight gradients to global
 * memory each round where the plan recomputes, 32-wide hidden layers excepted (measured:
 * network_plan.c, fused_sums): its block loses the sums' 4 bytes a parameter; the portable
 * class, a network alone, the backward with dL/dinput, the step and a model keeping its context
 * keep their plans. GRIDJIT_NETWORK_FUSED_BLOCK_SUMS=1 keeps the block sums, =0 drops them in
 * both classes; GRIDJIT_NETWORK_BLOCK_SUMS decides for every backward kernel. The generated
 * program states both classes' choices. */
static void a_model_s_fused_backward_sums_in_global_memory(void **state) {
    (void)state;
    const int L = GJ__NETWORK_PLAN_LARGE, P = GJ__NETWORK_PLAN_PORTABLE;
    struct gj_network *model = make_model(64, 2), *narrow = make_model(32, 2);
    const uint32_t floats = gj__network_small_floats(model);
    gj__network_plan m[GJ__NETWORK_PLAN_CLASSES], alone[GJ__NETWORK_PLAN_CLASSES], hinted[GJ__NETWORK_PLAN_CLASSES];
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), floats, m);
    gj__network_plans_make(&model->layout, &model->hints, 0, floats, alone);
    assert_true(alone[L].smem_grads && alone[P].smem_grads);
    assert_false(m[L].smem_grads);
    assert_true(m[P].smem_grads);
    assert_int_equal(m[L].small_sums_floats, floats);
    assert_int_equal(m[L].backward_bytes, alone[L].backward_bytes - 4 * 7168 + 4 * floats);
    model->hints.fused_smem_grads = 1; /* the network's plan for the fused backward */
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), floats, hinted);
    model->hints.fused_smem_grads = 0;
    assert_true(hinted[L].smem_grads);
    assert_int_equal(m[L].backward_input_bytes, hinted[L].backward_input_bytes);
    assert_int_equal(m[L].step_input_bytes, hinted[L].step_input_bytes);
    assert_int_equal(m[L].input_smem_grads, hinted[L].input_smem_grads);
    assert_true(gj__network_plan_equal(&m[P], &hinted[P]));
    char *src = source_of(model, GJ__NETWORK_PART_BACKWARD);
    assert_non_null(strstr(src, "(cubins for sm_90 to sm_110): 4 warps per block (forward), 4 (backward), weights "
                                "staged in shared memory, parameter gradients summed in global memory; shared memory "
                                "35072 bytes (forward), 86272 (backward)."));
    assert_non_null(strstr(src, "(other architectures, PTX): 4 warps per block (forward), 4 (backward), weights staged "
                                "in shared memory, parameter gradients summed per block in shared memory"));
    free(src);
    /* 32 wide keeps them; the hint 0 drops them there too, in both classes. */
    gj__network_plans_make(&narrow->layout, &narrow->hints, gj__network_feature_bytes(narrow), floats, m);
    assert_true(m[L].smem_grads && m[P].smem_grads);
    setenv("GRIDJIT_NETWORK_FUSED_BLOCK_SUMS", "0", 1);
    gj__network_plan_hints_from_env(&narrow->hints);
    gj__network_plans_make(&narrow->layout, &narrow->hints, gj__network_feature_bytes(narrow), floats, hinted);
    assert_false(hinted[L].smem_grads || hinted[P].smem_grads);
    /* The hint 1: the network's plan. */
    setenv("GRIDJIT_NETWORK_FUSED_BLOCK_SUMS", "1", 1);
    gj__network_plan_hints_from_env(&model->hints);
    unsetenv("GRIDJIT_NETWORK_FUSED_BLOCK_SUMS");
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), floats, hinted);
    assert_true(hinted[L].smem_grads && hinted[P].smem_grads);
    assert_int_equal(hinted[L].backward_bytes, alone[L].backward_bytes + 4 * floats);
    /* GRIDJIT_NETWORK_BLOCK_SUMS=1 keeps every backward kernel's sums, this one's too. */
    model->hints.fused_smem_grads = 0;
    model->hints.smem_grads = 1;
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), floats, hinted);
    assert_true(hinted[L].smem_grads);
    /* A model keeping its context keeps its block sums. */
    model->hints.smem_grads = 0;
    model->hints.recompute = -1;
    gj__network_plans_make(&model->layout, &model->hints, gj__network_feature_bytes(model), floats, hinted);
    assert_false(hinted[L].recompute);
    assert_true(hinted[L].smem_grads);
    gj_network_destroy(model);
    gj_network_destroy(narrow);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_layout_gets_the_plan_s_choices),
        cmocka_unit_test(hints_replace_the_choices),
        cmocka_unit_test(hints_that_do_not_fit_are_dropped),
        cmocka_unit_test(wide_weights_are_staged_by_the_forward_passes),
        cmocka_unit_test(generated_code_follows_the_hints),
        cmocka_unit_test(backward_and_forward_passes_get_their_own_warps),
        cmocka_unit_test(the_forward_warps_hint_leaves_the_backward),
        cmocka_unit_test(large_plans_take_two_blocks_of_112_kib),
        cmocka_unit_test(the_class_of_an_architecture),
        cmocka_unit_test(each_architecture_compiles_its_class_s_plan),
        cmocka_unit_test(narrow_models_forward_kernels_ask_for_two_blocks),
        cmocka_unit_test(a_model_s_inference_takes_one_wide_block),
        cmocka_unit_test(the_wide_block_stages_the_small_levels),
        cmocka_unit_test(a_model_s_inference_over_features),
        cmocka_unit_test(an_fp32_model_stages_fp32_features),
        cmocka_unit_test(a_model_s_forward_over_features),
        cmocka_unit_test(a_model_with_tables_past_l2_runs_in_two_passes),
        cmocka_unit_test(a_model_s_backward_may_sum_its_small_levels_in_shared_memory),
        cmocka_unit_test(the_step_fetches_its_targets_ahead),
        cmocka_unit_test(a_model_s_fused_backward_sums_in_global_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
