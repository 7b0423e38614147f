/*
 * The network module's host side without a GPU, on the fake libcuda of tests/fake_cuda
 * (which runs nothing), for a network alone and a model: programs compiled with NVRTC on
 * first use, one per part, kernels
 * looked up, launches made with the plan's geometry (one per pass, plus the zeroing of an
 * overwritten dL/dparams), the initialisation copied; argument errors named. What the
 * kernels compute is test_gpu_network's (and tests/emulated/'s) business.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache_support.h"
#include "fake_driver.h"
#include "gridjit.h"
#include "codegen/network_codegen.h" /* gj__network_part: the parts the test hooks report */
#include "runtime/device_program.h" /* gj__module_test_refuse_loads (a GJ_TEST_HOOKS build) */
#include "test_env.h"

#include <stdatomic.h>

/* network_background.c's hold (a GJ_TEST_HOOKS build): a thread compiling behind the passes
 * waits while it is nonzero. */
extern atomic_int gj__network_test_hold_background;
extern atomic_uint gj__network_test_made_at_start;
/* network_backward_choice.c's choice and its rule (api/network_module.h). */
int gj__network_backward_fused(gj_network_module *m, gj_stream stream, const char *call);
int gj__network_fused_backward_fits(unsigned gradient_size, uint64_t gradient_table_bytes, uint64_t l2_bytes);
/* network_step_choice.c's choice and its rule (api/network_module.h). */
int gj__network_step_as_passes(const gj_network_module *m);
int gj__network_step_passes_fit(const gj_network *net, int recompute);

static gj_fake_driver fake;

static int setup(void **state) {
    (void)state;
    /* The counts below are those of modules without tiers, whatever the machine's CPUs; the
     * tests of tiers turn them on for their own modules. */
    setenv("GRIDJIT_NETWORK_TIERS", "0", 1);
    return gj_fake_driver_open(&fake) == 0 ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    gj_fake_driver_close(&fake);
    return 0;
}

/* A pass over n points with its arrays at fixed offsets of one device buffer b (nothing
 * runs: the fake driver only takes the pointers): the parameters, input, output and context. */
static gj_network_pass_desc desc_over(char *b, uint64_t n) {
    gj_network_pass_desc d;
    gj_network_pass_desc_init(&d);
    d.n = n;
    d.params = b;
    d.input = (const float *)(b + 4096);
    d.output = (float *)(b + 8192);
    d.context = b + 16384;
    return d;
}

/* A context whose disk cache is a fresh directory (dir, made here from template, a name
 * ending in XXXXXX, under GRIDJIT_TEST_TMP). */
static gj_context *context_with_fresh_cache(const char *template, char *dir, size_t size) {
    const char *base = getenv("GRIDJIT_TEST_TMP");
    snprintf(dir, size, "%s/%s", base && base[0] ? base : "/tmp", template);
    assert_non_null(mkdtemp(dir));
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    assert_int_equal(gj_context_set_cache_dir(ctx, dir), GJ_OK);
    return ctx;
}

static void passes_launch_their_kernels(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    gj_network *net = NULL;
    assert_int_equal(gj_network_create(ctx, "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 16, \"n_hidden_layers\": 1}",
                                       3, 2, &net),
                     GJ_OK);
    gj_network_module *m = NULL;
    assert_int_equal(gj_network_module_create(ctx, net, &m), GJ_OK);
    /* 100 points: 4 tiles of 32; context: the padded input (16) alone, the backward recomputing
     * the hidden layer (16 wide: by default). */
    assert_int_equal(gj_network_module_context_bytes(m, 100), 4 * 32 * 16 * 2);
    assert_int_equal(gj_network_module_context_bytes(NULL, 100), 0);
    void *buffer = NULL;
    assert_int_equal(gj_device_alloc(ctx, 1 << 20, &buffer), GJ_OK);
    char *b = buffer;
    gj_network_pass_desc d = desc_over(b, 100);
    d.dL_doutput = (const float *)(b + 65536);
    d.dL_dparams = (float *)(b + 131072);
    d.dL_dinput = (float *)(b + 196608);

    fake.reset_counts();
    assert_int_equal(gj_network_inference(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuLaunchKernel"), 1);
    assert_int_equal(fake.count("cuLibraryLoadData"), 1); /* the inference program, compiled now */
    assert_int_equal(gj_network_inference(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuLibraryLoadData"), 1); /* and only once */
    fake.reset_counts();
    assert_int_equal(gj_network_forward(m, NULL, &d), GJ_OK);
    /* The forward's program and the backward's two (to the parameters; with dL/dinput),
     * compiled side by side on first use. */
    assert_int_equal(fake.count("cuLibraryLoadData"), 3);
    assert_int_equal(fake.count("cuLaunchKernel"), 1);
    fake.reset_counts();
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuLaunchKernel"), 2); /* zeroing dL/dparams, then the backward pass */
    assert_int_equal(fake.count("cuLibraryLoadData"), 0);
    fake.reset_counts();
    d.dL_dparams_mode = GJ_GRAD_ACCUMULATE;
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuLaunchKernel"), 1);
    assert_int_equal(fake.count("cuLibraryLoadData"), 0);
    d.dL_dinput = NULL; /* the other kernel, loaded with the first */
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuLaunchKernel"), 2);
    assert_int_equal(fake.count("cuLibraryLoadData"), 0);
    d.dL_dinput = (float *)(b + 196608);

    /* The loss scale reaches the backward kernels as their last argument (NAME_backward's
     * sixth, NAME_backward_input's seventh); 0, the default, as 1. */
    d.dL_dparams_mode = GJ_GRAD_OVERWRITE;
    fake.capture_argument("_backward_input", 6);
    d.dL_doutput_scale = 128.0f;
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    assert_true(fake.captured_float() == 128.0f);
    d.dL_doutput_scale = 0.0f;
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    assert_true(fake.captured_float() == 1.0f);
    fake.capture_argument("_backward", 5);
    d.dL_dinput = NULL;
    d.dL_doutput_scale = 1024.0f;
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    assert_true(fake.captured_float() == 1024.0f);
    fake.capture_argument(NULL, -1);
    /* unscale_gradients: a network's finishing pass divides dL/dparams (and dL/dinput) by the
     * scale; an encoding's fp32 gradients are a model's alone. */
    fake.capture_argument("_finish", 10);
    d.unscale_gradients = 1;
    fake.reset_counts();
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuLaunchKernel"), 3); /* zeroing, the backward, the finishing pass */
    assert_true(fake.captured_float() == 1.0f / 1024.0f);
    d.dL_doutput_scale = 0.0f; /* no scale: nothing to divide, no pass */
    fake.reset_counts();
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuLaunchKernel"), 2);
    fake.capture_argument(NULL, -1);
    d.unscale_gradients = 0;
    d.dL_dencoding_params_fp32 = (float *)(b + 4096);
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "dL_dencoding_params_fp32 are for a model"));
    d.dL_dencoding_params_fp32 = NULL;
    d.dL_dinput = (float *)(b + 196608);
    const float bad_scales[] = {-1.0f, INFINITY, NAN};
    for (size_t i = 0; i < sizeof bad_scales / sizeof bad_scales[0]; ++i) {
        fake.reset_counts();
        d.dL_doutput_scale = bad_scales[i];
        assert_int_equal(gj_network_backward(m, NULL, &d), GJ_ERROR_INVALID_ARGUMENT);
        assert_non_null(strstr(gj_context_errmsg(ctx), "dL_doutput_scale"));
        assert_int_equal(fake.count("cuLaunchKernel"), 0);
    }
    d.dL_doutput_scale = 0.0f;
    /* A descriptor of the layout before dL_doutput_scale (a caller compiled against that
     * header): read as before, without a scale. */
    gj_network_pass_desc older = d;
    older.struct_size = (uint32_t)offsetof(gj_network_pass_desc, dL_doutput_scale);
    older.dL_doutput_scale = -5.0f; /* past its end: never read */
    fake.capture_argument("_backward_input", 6);
    assert_int_equal(gj_network_backward(m, NULL, &older), GJ_OK);
    assert_true(fake.captured_float() == 1.0f);
    fake.capture_argument(NULL, -1);
    older.struct_size -= 8; /* shorter than any layout published */
    assert_int_equal(gj_network_backward(m, NULL, &older), GJ_ERROR_INVALID_ARGUMENT);

    gj_network_init_desc init;
    gj_network_init_desc_init(&init);
    assert_int_equal(init.seed, 1337);
    init.params = b;
    init.params_fp32 = (float *)(b + 4096);
    assert_int_equal(gj_network_init_params(m, NULL, &init), GJ_OK);
    init.params = NULL;
    init.params_fp32 = NULL;
    assert_int_equal(gj_network_init_params(m, NULL, &init), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "params or params_fp32"));
    assert_int_equal(gj_network_init_params(m, NULL, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "desc is NULL"));
    gj_network_init_desc unprepared = init;
    unprepared.struct_size = 8;
    assert_int_equal(gj_network_init_params(m, NULL, &unprepared), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "not prepared by gj_network_init_desc_init"));
    init.params = b;
    init.encoding_params = b + 8192; /* a network alone has none */
    assert_int_equal(gj_network_init_params(m, NULL, &init), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "encoding_params are for a model"));
    init.params = NULL;
    init.encoding_params = NULL;

    /* Argument errors: named, nothing launched. */
    fake.reset_counts();
    gj_network_pass_desc bad;
    memset(&bad, 0, sizeof bad);
    assert_int_equal(gj_network_inference(m, NULL, &bad), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "gj_network_inference: desc is not prepared"));
    gj_network_pass_desc_init(&bad);
    bad.n = 5;
    bad.params = b;
    assert_int_equal(gj_network_forward(m, NULL, &bad), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "gj_network_forward: input, output (or output_fp16) and context"));
    assert_int_equal(gj_network_backward(m, NULL, &bad), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "dL_doutput"));
    bad.params = NULL;
    assert_int_equal(gj_network_inference(m, NULL, &bad), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "params must not be NULL"));
    bad.params = b;
    bad.input = d.input;
    bad.output = d.output;
    bad.encoding_params = b;
    assert_int_equal(gj_network_inference(m, NULL, &bad), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "this network has no encoding"));
    bad.encoding_params = NULL;
    bad.n = 0;
    assert_int_equal(gj_network_inference(m, NULL, &bad), GJ_OK); /* nothing to do */
    assert_int_equal(fake.count("cuLaunchKernel"), 0);
    assert_int_equal(gj_network_inference(NULL, NULL, &d), GJ_ERROR_INVALID_ARGUMENT);

    gj_device_free(ctx, buffer);
    gj_network_module_destroy(m);
    gj_network_module_destroy(NULL);
    gj_network_destroy(net);
    gj_context_destroy(ctx);
}

/* A module of net made with the environment variable name set to value (NULL: unset); the
 * module reads it when made, so it is unset again afterwards. */
static gj_network_module *module_with_env(gj_context *ctx, gj_network *net, const char *name, const char *value) {
    if (value) {
        setenv(name, value, 1);
    } else {
        unsetenv(name);
    }
    gj_network_module *m = NULL;
    assert_int_equal(gj_network_module_create(ctx, net, &m), GJ_OK);
    unsetenv(name);
    return m;
}

/* The grid of each pass over n points with GRIDJIT_NETWORK_WAVES set to waves (NULL: unset):
 * inference, forward, backward (accumulating: no zeroing launch). */
static void grids_with_waves(gj_context *ctx, gj_network *net, const char *waves, char *b, uint64_t n,
                             unsigned grids[3]) {
    gj_network_module *m = module_with_env(ctx, net, "GRIDJIT_NETWORK_WAVES", waves);
    gj_network_pass_desc d = desc_over(b, n);
    d.dL_doutput = (const float *)(b + 65536);
    d.dL_dparams = (float *)(b + 131072);
    d.dL_dparams_mode = GJ_GRAD_ACCUMULATE;
    assert_int_equal(gj_network_inference(m, NULL, &d), GJ_OK);
    grids[0] = fake.last_grid_x();
    assert_int_equal(gj_network_forward(m, NULL, &d), GJ_OK);
    grids[1] = fake.last_grid_x();
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    grids[2] = fake.last_grid_x();
    gj_network_module_destroy(m);
}

/* The forward passes' grids stop at 8 waves (the kernels walk the remaining tiles), the
 * backward's at one; GRIDJIT_NETWORK_WAVES (1 ... 64) changes the former, anything else is
 * ignored. Nothing runs: the fake driver records the grid. */
static void forward_grids_stop_at_the_waves_asked_for(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    gj_network *net = NULL;
    assert_int_equal(gj_network_create(ctx, "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 16, \"n_hidden_layers\": 1}",
                                       3, 2, &net),
                     GJ_OK);
    void *buffer = NULL;
    assert_int_equal(gj_device_alloc(ctx, 1 << 20, &buffer), GJ_OK);
    const uint64_t n = 1ull << 26; /* far more tiles than 64 waves of blocks take */
    unsigned def[3], two[3], one[3], bad[3];
    grids_with_waves(ctx, net, NULL, buffer, n, def);
    const unsigned wave = def[2];
    assert_true(wave > 0);
    assert_int_equal(def[0], 8 * wave);
    assert_int_equal(def[1], 8 * wave);
    grids_with_waves(ctx, net, "2", buffer, n, two);
    assert_int_equal(two[0], 2 * wave);
    assert_int_equal(two[1], 2 * wave);
    assert_int_equal(two[2], wave);
    grids_with_waves(ctx, net, "64", buffer, n, one);
    assert_int_equal(one[1], 64 * wave);
    const char *ignored[] = {"0", "65", "-1", "2x", ""};
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; ++i) {
        grids_with_waves(ctx, net, ignored[i], buffer, n, bad);
        assert_int_equal(bad[1], 8 * wave);
    }
    /* A small batch needs fewer blocks than any cap. */
    grids_with_waves(ctx, net, "1", buffer, 100, one);
    assert_true(one[0] >= 1 && one[0] < wave);
    gj_device_free(ctx, buffer);
    gj_network_destroy(net);
    gj_context_destroy(ctx);
}

/* A model: its fused programs, the encoding's parameters and gradients, its errors. */
static void a_model_launches_fused_kernels(void **state) {
    (void)state;
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    gj_network *net = NULL;
    assert_int_equal(gj_network_create(ctx, "{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 4}, \"network\": "
                                            "{\"n_neurons\": 16, \"n_hidden_layers\": 1, \"n_output_dims\": 1}}", 3, 0, &net),
                     GJ_OK);
    gj_network_module *m = (gj_network_module *)&net; /* must be reset on failure */
    assert_int_equal(gj_network_module_create(ctx, NULL, &m), GJ_ERROR_INVALID_ARGUMENT);
    assert_null(m);
    assert_int_equal(gj_network_module_create(ctx, net, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_network_module_create(NULL, net, &m), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_network_module_create(ctx, net, &m), GJ_OK);
    assert_int_equal(gj_network_module_encoding_gradient_size(m), 2); /* fp16, F = 2 */
    assert_int_equal(gj_network_module_encoding_gradient_size(NULL), 0);
    if (!gj_test_have_nvrtc()) {
        gj_network_module_destroy(m);
        gj_network_destroy(net);
        gj_context_destroy(ctx);
        skip();
    }
    void *buffer = NULL;
    assert_int_equal(gj_device_alloc(ctx, 1 << 22, &buffer), GJ_OK);
    char *b = buffer;
    gj_network_pass_desc d = desc_over(b, 50);
    assert_int_equal(gj_network_inference(m, NULL, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "encoding_params must not be NULL"));
    d.encoding_params = b + (1 << 20);
    fake.reset_counts();
    assert_int_equal(gj_network_inference(m, NULL, &d), GJ_OK);
    assert_int_equal(gj_network_forward(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuLaunchKernel"), 2);
    assert_int_equal(fake.count("cuLibraryLoadData"), 3); /* inference; forward and backward */
    d.dL_doutput = (const float *)(b + 65536);
    d.dL_dencoding_params = b + (2 << 20);
    fake.reset_counts();
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuLaunchKernel"), 2); /* zeroing the encoding's gradients, the backward pass */
    d.dL_dparams = (float *)(b + 131072);
    fake.reset_counts();
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuLaunchKernel"), 3);
    assert_int_equal(fake.count("cuLibraryLoadData"), 0); /* the training program, loaded before */
    fake.capture_argument("_backward", 8); /* the model's backward kernel: the loss scale is its ninth argument */
    d.dL_doutput_scale = 128.0f;
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    assert_true(fake.captured_float() == 128.0f);
    fake.capture_argument(NULL, -1);
    d.dL_doutput_scale = 0.0f;
    /* fp32 encoding gradients of an encoding the kernels sum in fp16: they sum into
     * dL_dencoding_params (zeroed), then the finishing kernel converts them; with
     * unscale_gradients it divides them and dL/dparams by the loss scale (its last argument). */
    d.dL_dencoding_params_fp32 = (float *)(b + (3 << 20));
    d.dL_doutput_scale = 128.0f;
    fake.reset_counts();
    fake.capture_argument("_finish", 10);
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuLaunchKernel"), 4); /* two zeroings, the backward, the finishing pass */
    assert_true(fake.captured_float() == 1.0f);
    d.unscale_gradients = 1;
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    assert_true(fake.captured_float() == 1.0f / 128.0f);
    fake.capture_argument(NULL, -1);
    d.dL_dparams_mode = GJ_GRAD_ACCUMULATE; /* divided in place: overwrite only */
    fake.reset_counts();
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "unscale_gradients needs dL_dparams_mode GJ_GRAD_OVERWRITE"));
    d.dL_dparams_mode = GJ_GRAD_OVERWRITE;
    d.dL_dencoding_params_fp32 = NULL; /* fp16 gradients cannot be divided without underflow */
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "fp16 dL_dencoding_params cannot be unscaled"));
    d.unscale_gradients = 2;
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "unscale_gradients = 2"));
    d.unscale_gradients = 0;
    d.dL_dencoding_params_fp32 = (float *)(b + (3 << 20));
    d.dL_dencoding_params = NULL; /* the fp16 sums need a buffer */
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "needs dL_dencoding_params too"));
    assert_int_equal(fake.count("cuLaunchKernel"), 0);
    /* A descriptor of the layout before these fields: read without them. */
    gj_network_pass_desc scale_only = d;
    scale_only.dL_dencoding_params = b + (2 << 20);
    scale_only.struct_size = (uint32_t)offsetof(gj_network_pass_desc, dL_dencoding_params_fp32);
    scale_only.unscale_gradients = 7; /* past its end: never read */
    assert_int_equal(gj_network_backward(m, NULL, &scale_only), GJ_OK);
    assert_int_equal(fake.count("cuLaunchKernel"), 3); /* no finishing pass */
    d.dL_dencoding_params = b + (2 << 20);
    d.dL_dencoding_params_fp32 = NULL;
    d.dL_doutput_scale = 0.0f;
    /* dL/dinput: the third program (gj_network_backward_input: dL/d(features) into the module's
     * workspace, allocated now) and the encoding module's backward with dL/dx, both loaded on
     * this first use only; launches: zeroing the network's gradients, the network's backward,
     * the encoding's backward (its coarse levels summed in shared memory and the rest). */
    d.dL_dinput = (float *)(b + (3 << 20));
    fake.reset_counts();
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuLaunchKernel"), 4);
    assert_int_equal(fake.count("cuLibraryLoadData"), 2);
    assert_int_equal(fake.count("cuMemAlloc"), 1);
    fake.reset_counts();
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuLaunchKernel"), 4);
    assert_int_equal(fake.count("cuLibraryLoadData"), 0);
    assert_int_equal(fake.count("cuMemAlloc"), 0); /* the workspace, kept */
    /* More points than it holds: a larger one (the smaller is kept, not freed: work queued, or
     * a CUDA graph, may still use it); fewer points: the larger serves. */
    d.n = 500;
    fake.reset_counts();
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuMemAlloc"), 1);
    assert_int_equal(fake.count("cuMemFree"), 0);
    d.n = 50;
    fake.reset_counts();
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuMemAlloc"), 0);
    d.dL_dinput = NULL;
    d.input = NULL;
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "reads it again"));

    gj_network_init_desc init;
    gj_network_init_desc_init(&init);
    init.encoding_params = b;
    fake.reset_counts();
    assert_int_equal(gj_network_init_params(m, NULL, &init), GJ_OK);
    assert_int_equal(fake.count("cuMemcpyAsync"), 1); /* the encoding's alone */
    /* Every array at once: the network's fp16 and fp32, then the encoding's in its precision
     * and in fp32, one copy each. */
    init.params = b + (1 << 20);
    init.params_fp32 = (float *)(b + (2 << 20));
    init.encoding_params_fp32 = (float *)(b + (3 << 20));
    fake.reset_counts();
    assert_int_equal(gj_network_init_params(m, NULL, &init), GJ_OK);
    assert_int_equal(fake.count("cuMemcpyAsync"), 4);
    gj_device_free(ctx, buffer);
    fake.reset_counts();
    gj_network_module_destroy(m);
    assert_int_equal(fake.count("cuMemFree"), 2); /* both workspaces */
    gj_network_destroy(net);
    gj_context_destroy(ctx);
}

/* Tiers (docs/networks.md §10): where the fused backward is not in the disk cache, a model's
 * first forward for training compiles the unfused backward's programs and a thread compiles the
 * fused one; until that is loaded the backward runs unfused (the network's kernel writing
 * dL/d(features) into a buffer of the stream's, the encoding's backward), then fused. A module
 * made where the cache holds it takes it at once. */
static const char tier_model[] = "{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 4}, \"network\": "
                                 "{\"n_neurons\": 16, \"n_hidden_layers\": 1, \"n_output_dims\": 1}}";

/* The trace of one backward of m (the network's and the encoding's gradients). */
static const char *tier_backward(gj_network_module *m, gj_network_pass_desc *d, gj_stream stream) {
    fake.trace_start();
    assert_int_equal(gj_network_backward(m, stream, d), GJ_OK);
    return fake.trace();
}

static void expect_in(const char *what, const char *trace, const char *part, int present) {
    if ((strstr(trace, part) != NULL) != present) {
        fail_msg("%s: \"%s\" %s in: %s", what, part, present ? "missing" : "present", trace);
    }
}

/* What the tests of tiers share: a context on a fresh cache (tiers on for the modules made
 * after), the model, and a pass over one device buffer with both parts' gradients asked for
 * (the encoding's but where encoding_gradients is 0). */
typedef struct tier_fixture {
    gj_context *ctx;
    gj_network *net;
    void *buffer;
    gj_network_pass_desc d;
} tier_fixture;

/* A pass of tier_model over one device buffer b (both parts' gradients asked for, the
 * encoding's but where encoding_gradients is 0). */
static gj_network_pass_desc tier_desc(char *b, int encoding_gradients) {
    gj_network_pass_desc d = desc_over(b, 50);
    d.encoding_params = b + (1 << 20);
    d.dL_doutput = (const float *)(b + 65536);
    d.dL_dparams = (float *)(b + 131072);
    d.dL_dencoding_params = encoding_gradients ? b + (2 << 20) : NULL;
    return d;
}

/* A cache holding tier_model's programs of the unfused passes, not the fused backward's nor the
 * step's (a thread that gave up: the test hook's -1), made once: the tests below start from
 * copies of it, so that each compiles only what it is about (under valgrind NVRTC takes about
 * half a minute a program). */
static char tier_base[4096];

static void make_tier_base(void) {
    setenv("GRIDJIT_NETWORK_TIERS", "1", 1);
    gj_context *ctx = context_with_fresh_cache("gj_network_tier_base_XXXXXX", tier_base, sizeof tier_base);
    gj_network *net = NULL;
    assert_int_equal(gj_network_create(ctx, tier_model, 3, 0, &net), GJ_OK);
    void *buffer = NULL;
    assert_int_equal(gj_device_alloc(ctx, 1 << 22, &buffer), GJ_OK);
    gj_network_pass_desc d = tier_desc(buffer, 0);
    gj_network_module *m = NULL;
    assert_int_equal(gj_network_module_create(ctx, net, &m), GJ_OK);
    atomic_store(&gj__network_test_hold_background, -1);
    assert_int_equal(gj_network_forward(m, NULL, &d), GJ_OK);
    assert_int_equal(gj_network_module_wait_compiles(m), GJ_ERROR_INTERNAL); /* given up */
    atomic_store(&gj__network_test_hold_background, 0);
    gj_network_module_destroy(m);
    gj_device_free(ctx, buffer);
    gj_network_destroy(net);
    gj_context_destroy(ctx);
}

/* A context on a fresh copy of tier_base (dir, from template). */
static gj_context *tier_context(const char *template, char *dir, size_t size) {
    if (!tier_base[0]) {
        make_tier_base();
    }
    gj_context *ctx = context_with_fresh_cache(template, dir, size);
    char command[9000];
    snprintf(command, sizeof command, "cp -a '%s/.' '%s/'", tier_base, dir);
    assert_int_equal(system(command), 0);
    return ctx;
}

/* Skips the test where NVRTC is missing (the tiers compile). */
static void tier_setup(tier_fixture *f, const char *template, int encoding_gradients) {
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    setenv("GRIDJIT_NETWORK_TIERS", "1", 1);
    char dir[4096];
    f->ctx = tier_context(template, dir, sizeof dir);
    f->net = NULL;
    assert_int_equal(gj_network_create(f->ctx, tier_model, 3, 0, &f->net), GJ_OK);
    f->buffer = NULL;
    assert_int_equal(gj_device_alloc(f->ctx, 1 << 22, &f->buffer), GJ_OK);
    f->d = tier_desc(f->buffer, encoding_gradients);
}

/* A training step of tier_model over one device buffer b: 100 points (one output: 100 values),
 * both parts' gradients. */
static gj_network_train_desc tier_train_desc(char *b) {
    gj_network_train_desc t;
    gj_network_train_desc_init(&t);
    t.n = 100;
    t.input = (const float *)(b + 4096);
    t.target = (const float *)(b + 8192);
    t.params = b;
    t.encoding_params = b + (1 << 20);
    t.dL_dparams = (float *)(b + 131072);
    t.dL_dencoding_params = b + (2 << 20);
    t.loss = (float *)(b + (3 << 20));
    return t;
}

static void tier_teardown(tier_fixture *f) {
    setenv("GRIDJIT_NETWORK_TIERS", "0", 1);
    gj_device_free(f->ctx, f->buffer);
    gj_network_destroy(f->net);
    gj_context_destroy(f->ctx);
}

static void a_model_backward_runs_unfused_while_the_fused_one_compiles(void **state) {
    (void)state;
    tier_fixture f;
    tier_setup(&f, "gj_network_tiers_XXXXXX", 1);
    gj_context *ctx = f.ctx;
    gj_network *net = f.net;
    gj_network_pass_desc d = f.d;
    gj_network_module *m = NULL;
    assert_int_equal(gj_network_module_create(ctx, net, &m), GJ_OK);
    assert_int_equal(gj_network_module_wait_compiles(m), GJ_OK); /* nothing compiles yet */
    assert_int_equal(gj_network_module_wait_compiles(NULL), GJ_ERROR_INVALID_ARGUMENT);

    atomic_store(&gj__network_test_hold_background, 1);
    fake.reset_counts();
    assert_int_equal(gj_network_forward(m, NULL, &d), GJ_OK);
    /* The forward's program, the network's backward with dL/dinput, the encoding module's
     * backward program (the one form of its two that its backward from feature-major dL/dy
     * takes: the backward below loads nothing); not the fused backward (held). */
    assert_int_equal(fake.count("cuLibraryLoadData"), 3);
    /* The thread was started once they were made: they compile without it beside them. */
    const unsigned made = atomic_load(&gj__network_test_made_at_start);
    assert_true(made & (1u << GJ__NETWORK_PART_TRAINING));
    assert_true(made & (1u << GJ__NETWORK_PART_TRAINING_INPUT));
    assert_false(made & (1u << GJ__NETWORK_PART_BACKWARD));
    fake.reset_counts();
    const char *t = tier_backward(m, &d, NULL);
    expect_in("unfused", t, "launch(gj_network_input_zero,A)", 1);
    expect_in("unfused", t, "launch(gj_network_backward_input,A)", 1);
    expect_in("unfused", t, "launch(gj_encode_backward", 1);
    expect_in("unfused", t, "launch(gj_network_backward,", 0);
    expect_in("unfused", t, "launch(gj_network_zero,", 0);
    assert_int_equal(fake.count("cuMemAlloc"), 1); /* the stream's dL/d(features) */
    assert_int_equal(fake.count("cuLibraryLoadData"), 0);
    /* The same stream again: its buffer; another stream: one of its own (backward passes may
     * run on several streams at once). */
    fake.reset_counts();
    tier_backward(m, &d, NULL);
    assert_int_equal(fake.count("cuMemAlloc"), 0);
    CUstream other = fake.stream_create(fake.current());
    assert_non_null(other);
    tier_backward(m, &d, (gj_stream)other);
    assert_int_equal(fake.count("cuMemAlloc"), 1);
    tier_backward(m, &d, (gj_stream)other);
    assert_int_equal(fake.count("cuMemAlloc"), 1);
    /* Without the encoding's gradients the encoding's backward has nothing to do. */
    gj_network_pass_desc network_only = d;
    network_only.dL_dencoding_params = NULL;
    t = tier_backward(m, &network_only, NULL);
    expect_in("the network's gradients alone", t, "launch(gj_network_backward_input,A)", 1);
    expect_in("the network's gradients alone", t, "launch(gj_encode_backward", 0);
    /* Another forward meanwhile compiles nothing. */
    fake.reset_counts();
    assert_int_equal(gj_network_forward(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuLibraryLoadData"), 0);

    atomic_store(&gj__network_test_hold_background, 0);
    assert_int_equal(gj_network_module_wait_compiles(m), GJ_OK);
    assert_int_equal(fake.count("cuLibraryLoadData"), 1); /* the fused backward, on its thread */
    t = tier_backward(m, &d, NULL);
    expect_in("fused", t, "launch(gj_network_zero,A)", 1);
    expect_in("fused", t, "launch(gj_network_backward,A)", 1);
    expect_in("fused", t, "launch(gj_network_backward_input", 0);
    expect_in("fused", t, "launch(gj_encode_backward", 0);
    gj_network_module_destroy(m);

    /* A module made now finds the fused backward in the cache: no thread (one held would keep
     * the backward unfused), the fused program from the first forward on. */
    atomic_store(&gj__network_test_hold_background, 1);
    assert_int_equal(gj_network_module_create(ctx, net, &m), GJ_OK);
    fake.reset_counts();
    assert_int_equal(gj_network_forward(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuLibraryLoadData"), 2); /* the forward's and the fused backward's */
    t = tier_backward(m, &d, NULL);
    expect_in("cached", t, "launch(gj_network_backward,A)", 1);
    expect_in("cached", t, "launch(gj_network_backward_input", 0);
    atomic_store(&gj__network_test_hold_background, 0);
    gj_network_module_destroy(m);

    /* GRIDJIT_NETWORK_TIERS_OVERLAP=1: the thread starts before the passes apart's programs are
     * made, beside them (here it gives up at once: the test hook's -1). */
    setenv("GRIDJIT_NETWORK_TIERS_OVERLAP", "1", 1);
    char overlap_dir[4096];
    gj_context *ctx3 = tier_context("gj_network_tiers_overlap_XXXXXX", overlap_dir, sizeof overlap_dir);
    gj_network_module *m3 = NULL;
    assert_int_equal(gj_network_module_create(ctx3, net, &m3), GJ_OK);
    unsetenv("GRIDJIT_NETWORK_TIERS_OVERLAP");
    atomic_store(&gj__network_test_hold_background, -1);
    assert_int_equal(gj_network_forward(m3, NULL, &d), GJ_OK);
    assert_int_equal(gj_network_module_wait_compiles(m3), GJ_ERROR_INTERNAL); /* given up */
    atomic_store(&gj__network_test_hold_background, 0);
    assert_false(atomic_load(&gj__network_test_made_at_start) & (1u << GJ__NETWORK_PART_TRAINING));
    gj_network_module_destroy(m3);
    gj_context_destroy(ctx3);

    /* Tiers off: the fused backward compiles with the forward, as always. */
    setenv("GRIDJIT_NETWORK_TIERS", "0", 1);
    char dir[4096];
    gj_context *ctx2 = tier_context("gj_network_no_tiers_XXXXXX", dir, sizeof dir);
    gj_network_module *m2 = NULL;
    assert_int_equal(gj_network_module_create(ctx2, net, &m2), GJ_OK);
    atomic_store(&gj__network_test_hold_background, 1);
    fake.reset_counts();
    assert_int_equal(gj_network_forward(m2, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuLibraryLoadData"), 2);
    t = tier_backward(m2, &d, NULL);
    expect_in("without tiers", t, "launch(gj_network_backward,A)", 1);
    atomic_store(&gj__network_test_hold_background, 0);
    gj_network_module_destroy(m2);
    gj_context_destroy(ctx2);
    tier_teardown(&f);
}

/* Whether a model's first forward for training made the programs of the backward apart (the
 * forward's, the network's backward with dL/dinput, the encoding module's backward; 3 loads, no
 * thread) and its backwards without dL/dinput run apart (the network's kernel writing
 * dL/d(features), then the encoding's), or the fused one's (tiers off: the forward's and the
 * fused backward's, 2 loads). The cache holds the programs apart (tier_base). */
static void expect_backward(tier_fixture *f, int tiers, int apart) {
    setenv("GRIDJIT_NETWORK_TIERS", tiers ? "1" : "0", 1);
    gj_network_module *m = NULL;
    assert_int_equal(gj_network_module_create(f->ctx, f->net, &m), GJ_OK);
    atomic_store(&gj__network_test_hold_background, 1); /* a thread started would hold */
    fake.reset_counts();
    gj_network_pass_desc d = f->d;
    assert_int_equal(gj_network_forward(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuLibraryLoadData"), apart ? 3 : 2);
    if (apart) {
        assert_int_equal(gj_network_module_wait_compiles(m), GJ_OK); /* no thread: returns at once */
    }
    for (int i = 0; i < 2; ++i) {
        const char *t = tier_backward(m, &d, NULL);
        const char *what = apart ? "apart" : "fused";
        expect_in(what, t, "launch(gj_network_backward_input,A)", apart);
        expect_in(what, t, "launch(gj_encode_backward", apart);
        expect_in(what, t, "launch(gj_network_backward,", !apart);
    }
    assert_int_equal(fake.count("cuLibraryLoadData"), apart ? 3 : 2); /* nothing more loaded */
    atomic_store(&gj__network_test_hold_background, 0);
    gj_network_module_destroy(m);
}

/* A model's backward runs apart where its encoding's fp16 gradient tables take more than three
 * quarters of the device's L2 or its gradients are fp32 sums (network_backward_choice.c), or where
 * GRIDJIT_NETWORK_FUSED_BACKWARD=0 says so; its first forward then compiles the programs apart and
 * no thread the fused backward, tiers on or off. =1, or a device that does not give its L2 size,
 * keeps fp16 sums fused. */
static void a_model_backward_runs_apart_where_its_gradients_outgrow_l2(void **state) {
    (void)state;
    assert_true(gj__network_fused_backward_fits(2, 3u << 20, 4u << 20));
    assert_false(gj__network_fused_backward_fits(2, (3u << 20) + 1, 4u << 20));
    assert_false(gj__network_fused_backward_fits(4, 1u << 20, 4u << 20)); /* fp32 sums: apart */
    /* C1's fp16 sums (2^19 entries a level, 28.5 MB) fused on an H100's 50 MiB, 2^20's apart. */
    assert_true(gj__network_fused_backward_fits(2, 28459008u, 50u << 20));
    assert_false(gj__network_fused_backward_fits(2, 55721984u, 50u << 20));
    assert_false(gj__network_fused_backward_fits(2, 1, 0));
    tier_fixture f;
    tier_setup(&f, "gj_network_apart_XXXXXX", 1);
    gj_network_module *probe = NULL;
    assert_int_equal(gj_network_module_create(f.ctx, f.net, &probe), GJ_OK);
    const uint64_t bytes = gj_network_module_encoding_gradient_size(probe) *
                           gj_encoding_n_params(gj_network_encoding(f.net));
    gj_network_module_destroy(probe);
    assert_true(bytes > 1000000 && bytes < (1u << 30)); /* tier_model's: 1,646,592 fp16 sums */
    const int fits = (int)((bytes * 4 + 2) / 3), short_of = (int)(bytes * 4 / 3) - 1;

    fake.set_l2_bytes(short_of); /* the rule: apart */
    expect_backward(&f, 1, 1);
    expect_backward(&f, 0, 1);
    fake.set_l2_bytes(fits); /* fused */
    expect_backward(&f, 0, 0);
    fake.set_l2_bytes(0); /* not said: fused */
    expect_backward(&f, 0, 0);

    setenv("GRIDJIT_NETWORK_FUSED_BACKWARD", "0", 1); /* the knob: apart whatever the L2 */
    fake.set_l2_bytes(1 << 30);
    expect_backward(&f, 1, 1);
    expect_backward(&f, 0, 1);
    setenv("GRIDJIT_NETWORK_FUSED_BACKWARD", "1", 1);
    fake.set_l2_bytes(short_of);
    expect_backward(&f, 0, 0);
    unsetenv("GRIDJIT_NETWORK_FUSED_BACKWARD");

    /* fp32 sums run apart whatever the L2, and where the device does not say (the choice itself:
     * the launches are those above, and their programs would take minutes under valgrind). */
    static const char fp32_model[] = "{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 4, \"precision\": "
                                     "\"fp32\"}, \"network\": {\"n_neurons\": 16, \"n_hidden_layers\": 1, "
                                     "\"n_output_dims\": 1}}";
    gj_network *fp32_net = NULL;
    assert_int_equal(gj_network_create(f.ctx, fp32_model, 3, 0, &fp32_net), GJ_OK);
    static const int l2_said[] = {1 << 30, 0};
    for (int i = 0; i < 2; ++i) {
        fake.set_l2_bytes(l2_said[i]);
        gj_network_module *fp32 = NULL, *fp16 = NULL;
        assert_int_equal(gj_network_module_create(f.ctx, fp32_net, &fp32), GJ_OK);
        assert_int_equal(gj_network_module_create(f.ctx, f.net, &fp16), GJ_OK);
        assert_int_equal(gj_network_module_encoding_gradient_size(fp32), 4);
        fake.reset_counts();
        assert_false(gj__network_backward_fused(fp32, NULL, "test"));
        assert_true(gj__network_backward_fused(fp16, NULL, "test"));
        const long asked = fake.count("cuDeviceGetAttribute");
        assert_true(asked > 0);
        assert_false(gj__network_backward_fused(fp32, NULL, "test"));
        assert_true(gj__network_backward_fused(fp16, NULL, "test"));
        assert_int_equal(fake.count("cuDeviceGetAttribute"), asked); /* asked once a module */
        gj_network_module_destroy(fp32);
        gj_network_module_destroy(fp16);
    }
    gj_network_destroy(fp32_net);
    fake.set_l2_bytes(0);
    tier_teardown(&f);
}

/* The training step the same way: where its program is not cached, the first step compiles the
 * programs of the passes apart (the forward's, the network's backward with dL/dinput and the
 * loss kernel, Adam's, the encoding's backward) while a thread compiles the step's (and the
 * encoding's forward); until it is loaded the step runs as those passes, with the loss's
 * factors of the fused kernel, its outputs and context in the stream's buffer. */
static void a_model_training_step_runs_unfused_while_its_program_compiles(void **state) {
    (void)state;
    tier_fixture f;
    tier_setup(&f, "gj_network_tiers_step_XXXXXX", 0);
    char *b = f.buffer;
    gj_network_train_desc t = tier_train_desc(b);
    gj_network_module *m = NULL;
    assert_int_equal(gj_network_module_create(f.ctx, f.net, &m), GJ_OK);

    atomic_store(&gj__network_test_hold_background, 1);
    fake.reset_counts();
    fake.capture_argument("_loss", 4); /* grad_factor = 2 * 128 / 100 */
    fake.trace_start();
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_OK);
    const char *tr = fake.trace();
    /* The forward's program, the network's backward with dL/dinput, Adam's, the encoding
     * module's backward program (the form its backward takes). */
    assert_int_equal(fake.count("cuLibraryLoadData"), 4);
    const unsigned made = atomic_load(&gj__network_test_made_at_start); /* the thread after them */
    assert_true(made & (1u << GJ__NETWORK_PART_ADAM));
    assert_true(made & (1u << GJ__NETWORK_PART_TRAINING_INPUT));
    assert_false(made & (1u << GJ__NETWORK_PART_STEP));
    assert_int_equal(fake.count("cuMemAlloc"), 1); /* the stream's buffer */
    expect_in("unfused step", tr, "launch(gj_network_forward,A) launch(gj_network_input_zero,A) "
                                  "launch(gj_network_input_zero,A) launch(gj_network_loss,A) "
                                  "launch(gj_network_backward_input,A) memset(A) launch(gj_encode_backward", 1);
    expect_in("unfused step", tr, "train_features", 0);
    assert_true(fake.captured_float() == (float)(2.0 * 128.0 / 100.0));
    fake.capture_argument("_loss", 5); /* loss_factor = 1 / 100 */
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_OK);
    assert_true(fake.captured_float() == (float)(1.0 / 100.0));
    fake.capture_argument(NULL, -1);
    /* Adam is there already. */
    fake.reset_counts();
    gj_network_adam_desc a;
    gj_network_adam_desc_init(&a);
    a.params = b;
    a.params_fp32 = a.first_moments = a.second_moments = (float *)(b + 4096);
    a.steps = (uint32_t *)(b + 8192);
    a.dL_dparams = (float *)(b + 131072);
    a.encoding_params = b + (1 << 20);
    a.encoding_params_fp32 = a.encoding_first_moments = a.encoding_second_moments = (float *)(b + 4096);
    a.encoding_steps = (uint32_t *)(b + 8192);
    a.dL_dencoding_params = b + (2 << 20);
    assert_int_equal(gj_network_adam_step(m, NULL, &a), GJ_OK);
    assert_int_equal(fake.count("cuLibraryLoadData"), 0);

    atomic_store(&gj__network_test_hold_background, 0);
    fake.reset_counts();
    assert_int_equal(gj_network_module_wait_compiles(m), GJ_OK);
    /* On the thread: the step's program, and beside it the encoding's forward program (the form
     * its forward into feature-major features takes). */
    assert_int_equal(fake.count("cuLibraryLoadData"), 2);
    fake.trace_start();
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_OK);
    tr = fake.trace();
    expect_in("fused step", tr, "launch(gj_network_train_features,A)", 1);
    expect_in("fused step", tr, "launch(gj_network_loss", 0);
    assert_int_equal(fake.count("cuLibraryLoadData"), 2); /* nothing more */
    gj_network_module_destroy(m);
    tier_teardown(&f);
}

/* A model's step as its passes (GRIDJIT_NETWORK_STEP_PASSES=1 here; by the rule the 64-wide
 * models of two or more hidden layers that recompute): the forward for training, the loss kernel of the forward's
 * program, the backward. While the fused backward compiles on a thread the backward is served
 * apart as the backward passes are (and the step's own program is never compiled); once it is
 * loaded, the fused backward, after zeroing the encoding's gradients. */
static void a_model_step_runs_as_its_passes(void **state) {
    (void)state;
    setenv("GRIDJIT_NETWORK_STEP_PASSES", "1", 1);
    tier_fixture f;
    tier_setup(&f, "gj_network_tiers_passes_XXXXXX", 0);
    char *b = f.buffer;
    gj_network_train_desc t = tier_train_desc(b);
    gj_network_module *m = NULL;
    assert_int_equal(gj_network_module_create(f.ctx, f.net, &m), GJ_OK);
    assert_true(gj__network_step_as_passes(m));

    atomic_store(&gj__network_test_hold_background, 1);
    fake.reset_counts();
    fake.capture_argument("_loss", 4); /* grad_factor = 2 * 128 / 100 */
    fake.trace_start();
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_OK);
    const char *tr = fake.trace();
    assert_int_equal(fake.count("cuLibraryLoadData"), 4); /* forward's, with dL/dinput, Adam's, the encoding's */
    const unsigned made = atomic_load(&gj__network_test_made_at_start);
    assert_true(made & (1u << GJ__NETWORK_PART_TRAINING_INPUT));
    assert_false(made & (1u << GJ__NETWORK_PART_BACKWARD));
    expect_in("the step's passes, the backward apart", tr,
              "launch(gj_network_forward,A) launch(gj_network_input_zero,A) launch(gj_network_input_zero,A) "
              "launch(gj_network_loss,A) launch(gj_network_backward_input,A) memset(A) launch(gj_encode_backward", 1);
    assert_true(fake.captured_float() == (float)(2.0 * 128.0 / 100.0));
    fake.capture_argument(NULL, -1);

    atomic_store(&gj__network_test_hold_background, 0);
    fake.reset_counts();
    assert_int_equal(gj_network_module_wait_compiles(m), GJ_OK);
    assert_int_equal(fake.count("cuLibraryLoadData"), 1); /* the thread's: the fused backward */
    fake.reset_counts();
    fake.capture_argument("_backward", 8); /* dy_scale: dL/dy carries the loss scale already */
    fake.trace_start();
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_OK);
    tr = fake.trace();
    expect_in("the step's passes, the backward fused", tr,
              "launch(gj_network_forward,A) launch(gj_network_zero,A) launch(gj_network_zero,A) "
              "launch(gj_network_loss,A) launch(gj_network_zero,A) launch(gj_network_backward,A)", 1);
    assert_true(fake.captured_float() == 1.0f);
    fake.capture_argument(NULL, -1);
    expect_in("the step's passes", tr, "train_features", 0);
    assert_int_equal(fake.count("cuLibraryLoadData"), 0); /* never the step's own program */
    fake.capture_argument("_backward", 9); /* dy_half: the loss kernel writes fp16 values */
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_OK);
    const float dy_half = fake.captured_float();
    fake.capture_argument(NULL, -1);
    uint32_t dy_half_bits;
    memcpy(&dy_half_bits, &dy_half, sizeof dy_half_bits);
    assert_int_equal(dy_half_bits, 1);
    gj_network_module_destroy(m);

    /* The rule where no knob says: 64-wide models of two or more hidden layers that recompute. */
    unsetenv("GRIDJIT_NETWORK_STEP_PASSES");
    static const struct {
        const char *network;
        int passes;
    } shapes[] = {{"\"n_neurons\": 64, \"n_hidden_layers\": 3", 1}, {"\"n_neurons\": 64, \"n_hidden_layers\": 4", 1},
                  {"\"n_neurons\": 64, \"n_hidden_layers\": 2", 1},
                  {"\"n_neurons\": 64, \"n_hidden_layers\": 1", 0}, {"\"n_neurons\": 32, \"n_hidden_layers\": 2", 0},
                  {"\"n_neurons\": 128, \"n_hidden_layers\": 2", 0}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; ++i) {
        char json[256];
        snprintf(json, sizeof json, "{\"encoding\": {\"otype\": \"HashGrid\"}, \"network\": {%s, \"n_output_dims\": 16}}",
                 shapes[i].network);
        gj_network *net = NULL;
        assert_int_equal(gj_network_create(f.ctx, json, 3, 0, &net), GJ_OK);
        gj_network_module *rule = NULL;
        assert_int_equal(gj_network_module_create(f.ctx, net, &rule), GJ_OK);
        if (gj__network_step_as_passes(rule) != shapes[i].passes) {
            fail_msg("%s: the step %s as its passes", json, shapes[i].passes ? "should run" : "should not run");
        }
        setenv("GRIDJIT_NETWORK_STEP_PASSES", shapes[i].passes ? "0" : "1", 1); /* the knob overrides */
        gj_network_module *knob = NULL;
        assert_int_equal(gj_network_module_create(f.ctx, net, &knob), GJ_OK);
        assert_int_equal(gj__network_step_as_passes(knob), !shapes[i].passes);
        unsetenv("GRIDJIT_NETWORK_STEP_PASSES");
        gj_network_module_destroy(rule);
        gj_network_module_destroy(knob);
        gj_network_destroy(net);
    }
    gj_network *alone = NULL;
    assert_int_equal(gj_network_create(f.ctx, "{\"n_neurons\": 64, \"n_hidden_layers\": 2}", 32, 16, &alone), GJ_OK);
    assert_false(gj__network_step_passes_fit(alone, 1)); /* a network alone: its own kernel */
    gj_network_destroy(alone);
    tier_teardown(&f);
}

/* A step as passes whose forward runs in two passes (GRIDJIT_NETWORK_FORWARD_FEATURES=1 here; by
 * the rule the 64 x 4 model's): the features between the forward's two kernels and the context
 * that its second kernel writes are in different buffers (they once shared the stream's buffer,
 * and the network's kernel wrote the context over features other blocks had still to read). */
static void a_step_s_two_pass_forward_keeps_its_features_apart(void **state) {
    (void)state;
    setenv("GRIDJIT_NETWORK_STEP_PASSES", "1", 1);
    setenv("GRIDJIT_NETWORK_FORWARD_FEATURES", "1", 1);
    tier_fixture f;
    tier_setup(&f, "gj_network_tiers_features_XXXXXX", 0);
    setenv("GRIDJIT_NETWORK_TIERS", "0", 1); /* the fused backward: one path, whatever the CPUs */
    char *b = f.buffer;
    gj_network_train_desc t = tier_train_desc(b);
    gj_network_module *m = NULL;
    assert_int_equal(gj_network_module_create(f.ctx, f.net, &m), GJ_OK);
    unsetenv("GRIDJIT_NETWORK_STEP_PASSES");
    unsetenv("GRIDJIT_NETWORK_FORWARD_FEATURES");
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_OK); /* compiles */
    fake.trace_start();
    fake.capture_pointer("_forward_features", 1); /* f */
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_OK);
    expect_in("the step's two-pass forward", fake.trace(),
              "launch(gj_network_forward_features,A) launch(gj_network_zero,A)", 1);
    expect_in("the step's two-pass forward", fake.trace(), "launch(gj_encode_forward", 1);
    const uint64_t features = fake.captured_pointer();
    fake.capture_pointer("_forward_features", 4); /* ctx */
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_OK);
    const uint64_t context = fake.captured_pointer();
    fake.capture_argument(NULL, -1);
    const gj_encoding *enc = gj_network_encoding(f.net);
    const uint64_t feature_bytes = t.n * gj_encoding_n_output_dims(enc) * 2; /* fp16, feature-major */
    const uint64_t context_bytes = gj_network_module_context_bytes(m, t.n);
    assert_true(features != 0 && context != 0);
    if (!(features + feature_bytes <= context || context + context_bytes <= features)) {
        fail_msg("the features [%#llx, +%llu) overlap the context [%#llx, +%llu)", (unsigned long long)features,
                 (unsigned long long)feature_bytes, (unsigned long long)context, (unsigned long long)context_bytes);
    }
    gj_network_module_destroy(m);
    tier_teardown(&f);
}

/* One thread a module: a first step that comes while the backward's thread runs (held here)
 * compiles the step's program then and there and runs fused, starting no thread of its own. */
static void a_step_while_the_backward_s_thread_runs_compiles_its_own(void **state) {
    (void)state;
    tier_fixture f;
    tier_setup(&f, "gj_network_tiers_busy_XXXXXX", 1);
    char *b = f.buffer;
    gj_network_module *m = NULL;
    assert_int_equal(gj_network_module_create(f.ctx, f.net, &m), GJ_OK);
    atomic_store(&gj__network_test_hold_background, 1);
    assert_int_equal(gj_network_forward(m, NULL, &f.d), GJ_OK); /* the backward's thread, held */
    const unsigned made = atomic_load(&gj__network_test_made_at_start);
    gj_network_train_desc t = tier_train_desc(b);
    fake.trace_start();
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_OK);
    expect_in("a step beside the backward's thread", fake.trace(), "train_features", 1);
    assert_int_equal(atomic_load(&gj__network_test_made_at_start), made); /* no thread asked for */
    atomic_store(&gj__network_test_hold_background, 0);
    assert_int_equal(gj_network_module_wait_compiles(m), GJ_OK);
    gj_network_module_destroy(m);
    tier_teardown(&f);
}

/* A module destroyed while its thread compiles waits for it; a thread whose program fails
 * (the driver refuses it) is reported by gj_network_module_wait_compiles, and the backward then
 * compiles the fused program itself. */
static void a_failed_or_abandoned_compile_behind_the_passes(void **state) {
    (void)state;
    tier_fixture f;
    tier_setup(&f, "gj_network_tiers_fail_XXXXXX", 0);
    gj_context *ctx = f.ctx;
    gj_network *net = f.net;
    gj_network_pass_desc d = f.d;

    gj_network_module *m = NULL;
    assert_int_equal(gj_network_module_create(ctx, net, &m), GJ_OK);
    assert_int_equal(gj_network_forward(m, NULL, &d), GJ_OK); /* its thread compiles now */
    gj_network_module_destroy(m);                             /* and is waited for */

    char dir[4096];
    gj_context *ctx2 = tier_context("gj_network_tiers_fail2_XXXXXX", dir, sizeof dir);
    assert_int_equal(gj_network_module_create(ctx2, net, &m), GJ_OK);
    atomic_store(&gj__network_test_hold_background, 1);
    assert_int_equal(gj_network_forward(m, NULL, &d), GJ_OK);
    atomic_store(&gj__module_test_refuse_loads, 1); /* the thread's load, when let go */
    atomic_store(&gj__network_test_hold_background, 0);
    assert_int_equal(gj_network_module_wait_compiles(m), GJ_ERROR_CUDA);
    if (!strstr(gj_context_errmsg(ctx2), "compiled behind the passes failed")) {
        fail_msg("the failure says: %s", gj_context_errmsg(ctx2));
    }
    assert_int_equal(atomic_load(&gj__module_test_refuse_loads), 0);
    fake.reset_counts();
    const char *t = tier_backward(m, &d, NULL);
    expect_in("after the failure", t, "launch(gj_network_backward,A)", 1);
    assert_int_equal(fake.count("cuLibraryLoadData"), 1); /* compiled (cached) and loaded here */
    assert_int_equal(gj_network_module_wait_compiles(m), GJ_OK); /* made since */
    gj_network_module_destroy(m);
    gj_context_destroy(ctx2);
    tier_teardown(&f);
}

/* A process that exits while its thread compiles waits for it (the compiler's and the driver's
 * static destructors must not run under it): the child's fused backward is in the cache after. */
static void exit_waits_for_the_compile_behind_the_passes(void **state) {
    (void)state;
    tier_fixture f;
    tier_setup(&f, "gj_network_tiers_exit_XXXXXX", 0);
    gj_context *ctx = f.ctx;
    gj_network *net = f.net;
    gj_network_pass_desc d = f.d;
    fflush(NULL);
    const pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        /* cmocka's handlers would jump back into the test in this process: a crash is a crash */
        signal(SIGSEGV, SIG_DFL);
        signal(SIGBUS, SIG_DFL);
        signal(SIGILL, SIG_DFL);
        signal(SIGFPE, SIG_DFL);
        signal(SIGABRT, SIG_DFL);
        gj_network_module *m = NULL;
        const int ok = gj_network_module_create(ctx, net, &m) == GJ_OK && gj_network_forward(m, NULL, &d) == GJ_OK &&
                       gj_network_backward(m, NULL, &d) == GJ_OK;
        exit(ok ? 0 : 3); /* its thread still compiling */
    }
    int wstatus = 0;
    assert_int_equal(waitpid(child, &wstatus, 0), child);
    if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
        fail_msg("the child %s %d", WIFEXITED(wstatus) ? "exited with" : "was killed by signal",
                 WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : WTERMSIG(wstatus));
    }
    atomic_store(&gj__network_test_hold_background, 1); /* a thread now would keep it unfused */
    gj_network_module *m = NULL;
    assert_int_equal(gj_network_module_create(ctx, net, &m), GJ_OK);
    fake.reset_counts();
    assert_int_equal(gj_network_forward(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuLibraryLoadData"), 2); /* both from the child's cache entries */
    const char *t = tier_backward(m, &d, NULL);
    expect_in("after the child", t, "launch(gj_network_backward,A)", 1);
    atomic_store(&gj__network_test_hold_background, 0);
    gj_network_module_destroy(m);
    tier_teardown(&f);
}

/* The fused training step and Adam (docs/networks.md §10) on the fake driver: their own program,
 * compiled on first use; the gradients and the loss zeroed, then one launch whose loss factors
 * follow the points, the outputs and the loss scale; the warps' context slots allocated once;
 * argument errors named before anything is launched. */
static void the_training_step_launches_its_program(void **state) {
    (void)state;
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    gj_network *net = NULL;
    assert_int_equal(gj_network_create(ctx, "{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 4}, \"network\": "
                                            "{\"n_neurons\": 16, \"n_hidden_layers\": 1, \"n_output_dims\": 3}}", 3, 0, &net),
                     GJ_OK);
    gj_network_module *m = NULL;
    assert_int_equal(gj_network_module_create(ctx, net, &m), GJ_OK);
    void *buffer = NULL;
    assert_int_equal(gj_device_alloc(ctx, 1 << 22, &buffer), GJ_OK);
    char *b = buffer;
    gj_network_train_desc t;
    gj_network_train_desc_init(&t);
    assert_int_equal(t.struct_size, sizeof t);
    assert_true(t.loss_scale == 0.0f && !t.output && !t.loss);
    assert_int_equal(gj_network_train_step(NULL, NULL, &t), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_network_train_step(m, NULL, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "desc is NULL"));
    t.n = 100;
    fake.reset_counts();
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "input, target, params, encoding_params and dL_dparams"));
    t.input = (const float *)(b + 4096);
    t.target = (const float *)(b + 8192);
    t.params = b;
    t.encoding_params = b + (1 << 20);
    t.dL_dparams = (float *)(b + 131072);
    t.dL_dencoding_params = b + (2 << 20);
    t.loss_scale = -1.0f;
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "loss_scale = -1"));
    t.loss_scale = 0.0f;
    t.n = (uint64_t)GJ_MAX_POINTS + 1;
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "exceeds GJ_MAX_POINTS"));
    t.n = 0; /* nothing to do, nothing compiled */
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_OK);
    assert_int_equal(fake.count("cuLaunchKernel"), 0);
    if (!gj_test_have_nvrtc()) {
        gj_device_free(ctx, buffer);
        gj_network_module_destroy(m);
        gj_network_destroy(net);
        gj_context_destroy(ctx);
        skip();
    }
    /* The model's step: the encoding module's forward, the network's kernel, the encoding
     * module's backward; the step's program, Adam's and the encoding's programs for its forward
     * and its backward to the parameters (of each, the one form of two that the launch takes:
     * the steps after load nothing), made on the first step; the features and the warps'
     * context slots allocated once. */
    t.n = 100;
    fake.reset_counts();
    fake.capture_argument("_train_features", 3); /* grad_factor = 2 * 128 / (100 points x 3 outputs) */
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_OK);
    assert_int_equal(fake.count("cuLibraryLoadData"), 4);
    assert_int_equal(fake.count("cuMemAlloc"), 2);
    const int launches = fake.count("cuLaunchKernel");
    assert_true(launches >= 4); /* at least a forward, the zeroing, the network's kernel, a backward */
    assert_true(fake.captured_float() == (float)(2.0 * 128.0 / 300.0));
    t.loss = (float *)(b + (3 << 20));
    t.loss_scale = 4.0f;
    fake.capture_argument("_train_features", 4); /* loss_factor = 1 / 300 */
    fake.reset_counts();
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_OK);
    assert_int_equal(fake.count("cuLaunchKernel"), launches + 1); /* and the loss zeroed */
    assert_int_equal(fake.count("cuLibraryLoadData"), 0);
    assert_int_equal(fake.count("cuMemAlloc"), 0);
    assert_true(fake.captured_float() == (float)(1.0 / 300.0));
    fake.capture_argument("_train_features", 3);
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_OK);
    assert_true(fake.captured_float() == (float)(2.0 * 4.0 / 300.0));
    fake.capture_argument(NULL, -1);
    t.dL_dencoding_params = NULL;
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "dL_dencoding_params (a model)"));

    /* Adam: one launch over both parameter sets, every array named when missing. */
    gj_network_adam_desc a;
    gj_network_adam_desc_init(&a);
    assert_true(a.learning_rate == 1e-3f && a.beta1 == 0.9f && a.beta2 == 0.999f);
    assert_int_equal(gj_network_adam_step(m, NULL, &a), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "params must not be NULL"));
    char *arrays[6];
    for (int i = 0; i < 6; ++i) {
        arrays[i] = b + (1 << 21) + i * 65536;
    }
    a.params = arrays[0], a.params_fp32 = (float *)arrays[1], a.first_moments = (float *)arrays[2];
    a.second_moments = (float *)arrays[3], a.steps = (uint32_t *)arrays[4], a.dL_dparams = (const float *)arrays[5];
    assert_int_equal(gj_network_adam_step(m, NULL, &a), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "encoding_params must not be NULL (a model)"));
    a.encoding_params = arrays[0], a.encoding_params_fp32 = (float *)arrays[1];
    a.encoding_first_moments = (float *)arrays[2], a.encoding_second_moments = (float *)arrays[3];
    a.encoding_steps = (uint32_t *)arrays[4], a.dL_dencoding_params = arrays[5];
    a.beta2 = 1.0f;
    assert_int_equal(gj_network_adam_step(m, NULL, &a), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "beta2 = 1"));
    a.beta2 = 0.99f;
    a.learning_rate = NAN;
    assert_int_equal(gj_network_adam_step(m, NULL, &a), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "learning_rate = nan"));
    a.learning_rate = 1e-2f;
    fake.reset_counts();
    assert_int_equal(gj_network_adam_step(m, NULL, &a), GJ_OK);
    assert_int_equal(fake.count("cuLaunchKernel"), 1);
    assert_int_equal(fake.count("cuLibraryLoadData"), 0); /* made with the step's program */
    fake.reset_counts();
    gj_network_module_destroy(m);
    assert_int_equal(fake.count("cuMemFree"), 2); /* the features and the slots */
    gj_network_destroy(net);

    /* A network alone: one kernel after the zeroing; the encoding's arrays refused. */
    assert_int_equal(gj_network_create(ctx, "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 16, \"n_hidden_layers\": 1}",
                                       3, 2, &net),
                     GJ_OK);
    assert_int_equal(gj_network_module_create(ctx, net, &m), GJ_OK);
    t.encoding_params = NULL;
    t.loss = NULL;
    t.dL_dencoding_params = b;
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "this network has no encoding"));
    t.dL_dencoding_params = NULL;
    fake.reset_counts();
    fake.capture_argument("_train_step", 3); /* grad_factor = 2 * 4 / (100 points x 2 outputs) */
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_OK);
    assert_int_equal(fake.count("cuLibraryLoadData"), 2); /* the step's program and Adam's */
    assert_int_equal(fake.count("cuLaunchKernel"), 2);
    assert_true(fake.captured_float() == (float)(2.0 * 4.0 / 200.0));
    fake.capture_argument(NULL, -1);
    a.encoding_params = NULL, a.encoding_params_fp32 = NULL, a.encoding_first_moments = NULL;
    a.encoding_second_moments = NULL, a.encoding_steps = NULL;
    assert_int_equal(gj_network_adam_step(m, NULL, &a), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "dL_dencoding_params must be NULL: this network has no encoding"));
    a.dL_dencoding_params = NULL;
    fake.reset_counts();
    assert_int_equal(gj_network_adam_step(m, NULL, &a), GJ_OK);
    assert_int_equal(fake.count("cuLaunchKernel"), 1);
    assert_int_equal(fake.count("cuLibraryLoadData"), 0);
    gj_network_module_destroy(m);
    /* Adam first, in a module of its own: its program alone; then the step's. */
    assert_int_equal(gj_network_module_create(ctx, net, &m), GJ_OK);
    fake.reset_counts();
    assert_int_equal(gj_network_adam_step(m, NULL, &a), GJ_OK);
    assert_int_equal(fake.count("cuLibraryLoadData"), 1);
    fake.reset_counts();
    assert_int_equal(gj_network_train_step(m, NULL, &t), GJ_OK);
    assert_int_equal(fake.count("cuLibraryLoadData"), 1);
    gj_device_free(ctx, buffer);
    gj_network_module_destroy(m);
    gj_network_destroy(net);
    gj_context_destroy(ctx);
}

/* The carveout set on the first inference launch of a module made with
 * GRIDJIT_NETWORK_CARVEOUT = env (NULL: unset); then what a forward pass set. */
static void carveouts_with(gj_context *ctx, gj_network *net, const char *env, char *b, int got[2]) {
    gj_network_module *m = module_with_env(ctx, net, "GRIDJIT_NETWORK_CARVEOUT", env);
    gj_network_pass_desc d = desc_over(b, 1000);
    d.encoding_params = b + (1 << 20);
    fake.reset_carveout();
    assert_int_equal(gj_network_inference(m, NULL, &d), GJ_OK);
    got[0] = fake.last_carveout();
    fake.reset_carveout();
    assert_int_equal(gj_network_inference(m, NULL, &d), GJ_OK); /* set once */
    assert_int_equal(gj_network_forward(m, NULL, &d), GJ_OK);
    got[1] = fake.last_carveout();
    gj_network_module_destroy(m);
}

/* A model's inference kernel asks for shared memory for at most half of a multiprocessor's
 * (the fake's 228 KiB), leaving the rest to L1, and so does its forward where it recomputes (64
 * wide: by default; keeping the context, a_recomputing_model_forward_takes_the_inference_block);
 * a network alone leaves the choice to the driver; GRIDJIT_NETWORK_CARVEOUT gives a percent, -1 the driver's
 * choice, and anything else is ignored. Nothing runs: the fake driver records the value. */
static void a_model_inference_leaves_l1_to_its_encoding(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    gj_network *model = NULL, *alone = NULL;
    assert_int_equal(gj_network_create(ctx, "{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 4}, \"network\": "
                                            "{\"n_neurons\": 64, \"n_hidden_layers\": 4, \"n_output_dims\": 1}}", 3, 0, &model),
                     GJ_OK);
    assert_int_equal(gj_network_create(ctx, "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64, \"n_hidden_layers\": 4}",
                                       8, 1, &alone),
                     GJ_OK);
    void *buffer = NULL;
    assert_int_equal(gj_device_alloc(ctx, 1 << 22, &buffer), GJ_OK);
    int got[2];
    /* The fused inference kernel's (in two passes, by default, the inference gathers in the
     * encoding module's kernel, which chooses its own). */
    setenv("GRIDJIT_NETWORK_INFERENCE_FEATURES", "0", 1);
    carveouts_with(ctx, model, NULL, buffer, got);
    const int rule = got[0];
    assert_true(rule >= 1 && rule <= 50);
    assert_int_equal(got[1], rule); /* recomputing (by default), its forward runs in the inference's block */
    carveouts_with(ctx, model, "75", buffer, got);
    assert_int_equal(got[0], 75);
    carveouts_with(ctx, model, "-1", buffer, got);
    assert_int_equal(got[0], -1);
    carveouts_with(ctx, model, "0", buffer, got);
    assert_int_equal(got[0], 0);
    const char *ignored[] = {"101", "-2", "50%", ""};
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; ++i) {
        carveouts_with(ctx, model, ignored[i], buffer, got);
        assert_int_equal(got[0], rule);
    }
    unsetenv("GRIDJIT_NETWORK_INFERENCE_FEATURES");
    /* A network alone: no encoding gathers to keep L1 for. */
    gj_network_module *m = NULL;
    assert_int_equal(gj_network_module_create(ctx, alone, &m), GJ_OK);
    gj_network_pass_desc d = desc_over(buffer, 1000);
    fake.reset_carveout();
    assert_int_equal(gj_network_inference(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.last_carveout(), GJ_FAKE_NO_CARVEOUT);
    gj_network_module_destroy(m);
    gj_device_free(ctx, buffer);
    gj_network_destroy(alone);
    gj_network_destroy(model);
    gj_context_destroy(ctx);
}

/* What the stand-in driver saw of a model module's launches, the module made with the
 * environment variable knob set to value (NULL: unset): the inference, the forward and the
 * fused backward (accumulating: no zeroing launch), each one's block and shared memory, the
 * forward's carveout; and the module's context for 64 points. */
typedef struct knob_launches {
    unsigned block[3], shared[3];
    int forward_carveout;
    uint64_t context_64;
} knob_launches;

static knob_launches launches_with(gj_context *ctx, gj_network *model, const char *knob, const char *value, char *b) {
    knob_launches r;
    memset(&r, 0, sizeof r); /* compared whole: the padding too */
    /* No thread compiling the fused backward behind the first one (on hosts of six CPUs or more):
     * the backward launched is the fused kernel whatever the compile's timing. */
    setenv("GRIDJIT_NETWORK_TIERS", "0", 1);
    gj_network_module *m = module_with_env(ctx, model, knob, value);
    unsetenv("GRIDJIT_NETWORK_TIERS");
    r.context_64 = gj_network_module_context_bytes(m, 64);
    gj_network_pass_desc d = desc_over(b, 1000);
    d.encoding_params = b + (1 << 20);
    assert_int_equal(gj_network_inference(m, NULL, &d), GJ_OK);
    r.block[0] = fake.last_block_x();
    r.shared[0] = fake.last_shared();
    fake.reset_carveout();
    assert_int_equal(gj_network_forward(m, NULL, &d), GJ_OK);
    r.block[1] = fake.last_block_x();
    r.shared[1] = fake.last_shared();
    r.forward_carveout = fake.last_carveout();
    d.dL_doutput = (const float *)(b + 65536);
    d.dL_dparams = (float *)(b + 131072);
    d.dL_dencoding_params = b + (2 << 20);
    d.dL_dparams_mode = GJ_GRAD_ACCUMULATE;
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    assert_int_equal(gj_network_module_wait_compiles(m), GJ_OK);
    r.block[2] = fake.last_block_x();
    r.shared[2] = fake.last_shared();
    gj_network_module_destroy(m);
    return r;
}

/* A small model (its programs compile quickly: under valgrind NVRTC takes about half a minute a
 * program): level 0 of its encoding (16^3 entries) is small, its inference kernel takes the wide
 * block of 16 warps; with a context and a device buffer of 4 MiB. */
typedef struct small_model {
    gj_context *ctx;
    gj_network *model;
    void *buffer;
} small_model;

static small_model small_model_open(void) {
    static const char json[] = "{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 2}, \"network\": "
                               "{\"n_neurons\": 16, \"n_hidden_layers\": 1, \"n_output_dims\": 4}}";
    small_model s = {NULL, NULL, NULL};
    assert_int_equal(gj_context_create(&s.ctx), GJ_OK);
    assert_int_equal(gj_network_create(s.ctx, json, 3, 0, &s.model), GJ_OK);
    assert_int_equal(gj_device_alloc(s.ctx, 1 << 22, &s.buffer), GJ_OK);
    return s;
}

static void small_model_close(small_model *s) {
    gj_device_free(s->ctx, s->buffer);
    gj_network_destroy(s->model);
    gj_context_destroy(s->ctx);
}

/* The small model's first level (16^3 entries of 2 fp16 values) as its fused inference block copies
 * it into shared memory. */
enum { SMALL_LEVEL_BYTES = 4096 * 2 * 2 };

/* launches_with the small model, the knob 0 (r[0]), 1 (r[1]) and unset (r[2], the rule). */
static void knob_off_and_on(const char *knob, knob_launches r[3]) {
    small_model s = small_model_open();
    r[0] = launches_with(s.ctx, s.model, knob, "0", s.buffer);
    r[1] = launches_with(s.ctx, s.model, knob, "1", s.buffer);
    r[2] = launches_with(s.ctx, s.model, knob, NULL, s.buffer);
    small_model_close(&s);
}

/* A model's inference in two passes (GRIDJIT_NETWORK_INFERENCE_FEATURES=1; by default only where
 * its fused kernel would not take the wide block, and this small model's takes it): its network's
 * kernel over the features runs in the inference kernel's block (the wide block of 16 warps on
 * the fake's sm_90) with its shared memory less the fused kernel's copy of the encoding's first
 * level (16^3 entries of 2 fp16 values), or by default (GRIDJIT_NETWORK_FEATURES_FETCH unset; 0
 * turns it off) each warp's staging of a tile's features after that (32 x 4 fp16 values, the
 * encoding's 2 levels of 2 features); the forward follows the inference (two passes, or fused
 * with the copy), the backward is the same either way. */
static void a_model_s_inference_runs_in_two_passes(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    knob_launches r[3], f[3];
    setenv("GRIDJIT_NETWORK_FEATURES_FETCH", "0", 1);
    knob_off_and_on("GRIDJIT_NETWORK_INFERENCE_FEATURES", r);
    unsetenv("GRIDJIT_NETWORK_FEATURES_FETCH");
    knob_off_and_on("GRIDJIT_NETWORK_INFERENCE_FEATURES", f); /* the fetch by default */
    assert_memory_equal(&r[2], &r[0], sizeof r[0]); /* by default: fused */
    assert_memory_equal(&f[0], &r[0], sizeof r[0]); /* fetching is the two passes' alone */
    assert_int_equal(r[0].block[0], 512);
    assert_int_equal(r[1].block[0], 512);
    assert_int_equal(f[1].block[0], 512);
    assert_int_equal(r[1].shared[0] + SMALL_LEVEL_BYTES, r[0].shared[0]); /* the fused block's small level */
    assert_int_equal(f[1].shared[0], r[1].shared[0] + 2 * 32 * 4 * 16);
    assert_memory_equal(&r[1].block[1], &r[0].block[1], 2 * sizeof r[0].block[1]);
    assert_int_equal(r[1].shared[1] + SMALL_LEVEL_BYTES, r[0].shared[1]); /* the forward follows */
    assert_int_equal(r[1].shared[2], r[0].shared[2]);
}

/* By default (its values are fp16) and with GRIDJIT_NETWORK_STAGE_SMALL_LEVELS=1 the small model's
 * fused inference block copies its encoding's first level (small: 16^3 entries of 2 fp16 values,
 * 16 KiB) into its shared memory, not with 0; its forward (recomputing: in the inference kernel's
 * block) the same; the backward's block is the same either way. */
static void a_model_s_inference_block_stages_its_small_levels(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    knob_launches r[3];
    knob_off_and_on("GRIDJIT_NETWORK_STAGE_SMALL_LEVELS", r);
    assert_memory_equal(&r[2], &r[1], sizeof r[0]); /* the rule */
    assert_int_equal(r[1].block[0], 512);
    assert_int_equal(r[1].shared[0], r[0].shared[0] + SMALL_LEVEL_BYTES);
    assert_int_equal(r[1].shared[1], r[0].shared[1] + SMALL_LEVEL_BYTES);
    assert_int_equal(r[1].shared[2], r[0].shared[2]);
}

/* GRIDJIT_NETWORK_FORWARD_FEATURES=1 (a measuring knob): the small model (it recomputes) runs its
 * forward for training in two passes as well, the encoding's forward then the network's kernel over
 * the features writing the context, on the caller's stream; its inference stays fused (the rule). */
static void a_model_s_forward_runs_in_two_passes(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    small_model s = small_model_open();
    gj_network_module *m = module_with_env(s.ctx, s.model, "GRIDJIT_NETWORK_FORWARD_FEATURES", "1");
    gj_network_pass_desc d = desc_over(s.buffer, 2 * 4096 + 5);
    d.encoding_params = (char *)s.buffer + (1 << 20);
    assert_int_equal(gj_network_forward(m, NULL, &d), GJ_OK); /* compiles */
    fake.trace_start();
    assert_int_equal(gj_network_forward(m, NULL, &d), GJ_OK);
    assert_string_equal(fake.trace(), "launch(gj_encode_forward,A) launch(gj_network_forward_features,A)");
    fake.trace_start();
    assert_int_equal(gj_network_inference(m, NULL, &d), GJ_OK);
    expect_in("the inference", fake.trace(), "launch(gj_network_inference,A)", 1);
    gj_network_module_destroy(m);
    small_model_close(&s);
}

/* The y_half argument (the kernels' last) of the latest launch of the kernel named ...suffix at
 * argument index, after the call made by run; run returns its status. */
static uint32_t y_half_of(const char *suffix, int index, gj_status (*run)(gj_network_module *, gj_stream,
                                                                           const gj_network_pass_desc *),
                          gj_network_module *m, const gj_network_pass_desc *d) {
    fake.capture_argument(suffix, index);
    assert_int_equal(run(m, NULL, d), GJ_OK);
    const float bits = fake.captured_float();
    fake.capture_argument(NULL, -1);
    uint32_t half;
    memcpy(&half, &bits, sizeof half);
    return half;
}

/* The small model's y_half (its kernels' last argument) for h (output_fp16: 1) and d (output: 0),
 * fused (two 0: inference n, x, y, params, eparams, y_half; the forward with the context before
 * y_half) or in two passes (two 1: n, f, y, params, [ctx,] y_half). */
static void model_y_half(small_model *s, int two, const gj_network_pass_desc *d, const gj_network_pass_desc *h) {
    static const char *const knob[2] = {"0", "1"};
    static const char *const inference[2] = {"_inference", "_inference_features"};
    static const char *const forward[2] = {"_forward", "_forward_features"};
    setenv("GRIDJIT_NETWORK_INFERENCE_FEATURES", knob[two], 1);
    gj_network_module *m = module_with_env(s->ctx, s->model, "GRIDJIT_NETWORK_FORWARD_FEATURES", knob[two]);
    unsetenv("GRIDJIT_NETWORK_INFERENCE_FEATURES");
    assert_int_equal(y_half_of(inference[two], 5 - two, gj_network_inference, m, h), 1);
    assert_int_equal(y_half_of(inference[two], 5 - two, gj_network_inference, m, d), 0);
    assert_int_equal(y_half_of(forward[two], 6 - two, gj_network_forward, m, h), 1);
    assert_int_equal(y_half_of(forward[two], 6 - two, gj_network_forward, m, d), 0);
    gj_network_module_destroy(m);
}

/* A network alone beside the small model (16 -> 16 x 1 -> 4) and its module (*net to destroy). */
static gj_network_module *small_network_module(gj_context *ctx, gj_network **net) {
    assert_int_equal(gj_network_create(ctx, "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 16, \"n_hidden_layers\": 1}",
                                       16, 4, net),
                     GJ_OK);
    gj_network_module *m = NULL;
    assert_int_equal(gj_network_module_create(ctx, *net, &m), GJ_OK);
    return m;
}

/* output_fp16 (instead of output): every kernel that writes a forward pass's outputs takes it as
 * its y and is told so by its last argument, y_half (1; 0 for output): a network's inference and
 * forward, a model's fused ones, and a model's kernels over its features (two passes); one of
 * output and output_fp16, never both. */
static void fp16_outputs_reach_every_forward_kernel(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    small_model s = small_model_open();
    char *b = s.buffer;
    gj_network *net = NULL;
    gj_network_module *m = small_network_module(s.ctx, &net);
    gj_network_pass_desc d = desc_over(b, 100), h = d;
    h.output = NULL;
    h.output_fp16 = b + 32768;
    assert_int_equal(y_half_of("_inference", 4, gj_network_inference, m, &h), 1);
    assert_int_equal(y_half_of("_inference", 4, gj_network_inference, m, &d), 0);
    assert_int_equal(y_half_of("_forward", 5, gj_network_forward, m, &h), 1);
    assert_int_equal(y_half_of("_forward", 5, gj_network_forward, m, &d), 0);
    h.output = d.output; /* both */
    fake.reset_counts();
    assert_int_equal(gj_network_inference(m, NULL, &h), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(s.ctx), "give output (floats) or output_fp16 (fp16 values), not both"));
    assert_int_equal(gj_network_forward(m, NULL, &h), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(fake.count("cuLaunchKernel"), 0);
    h.output = NULL;
    gj_network_module_destroy(m);
    gj_network_destroy(net);

    /* The small model, fused (its inference: n, x, y, params, eparams, y_half; its forward with
     * the context before y_half), then in two passes (n, f, y, params, [ctx,] y_half). */
    d.encoding_params = h.encoding_params = b + (1 << 20);
    model_y_half(&s, 0, &d, &h);
    model_y_half(&s, 1, &d, &h);
    small_model_close(&s);
}

/* dL_doutput_fp16 (instead of dL_doutput): every backward kernel reads dL/dy in place and is told
 * so by its last argument, dy_half (1; 0 for dL_doutput): a network's backward and its backward
 * with dL/dinput (n, dy, params, ctx, dparams, [dx,] dy_scale, dy_half), a model's fused backward
 * (n, x, dy, params, eparams, ctx, dparams, deparams, dy_scale, dy_half) and its backward writing
 * dL/d(features) (n, dy, params, ctx, dparams, features, dy_scale, dy_half); one of dL_doutput and
 * dL_doutput_fp16, never both, and one of them given. */
static void fp16_dL_doutput_reaches_every_backward_kernel(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    small_model s = small_model_open();
    char *b = s.buffer;
    gj_network *net = NULL;
    gj_network_module *m = small_network_module(s.ctx, &net);
    gj_network_pass_desc d = desc_over(b, 100), h;
    d.dL_doutput = (const float *)(b + 65536);
    d.dL_dparams = (float *)(b + 131072);
    h = d;
    h.dL_doutput = NULL;
    h.dL_doutput_fp16 = b + 65536;
    assert_int_equal(y_half_of("_backward", 6, gj_network_backward, m, &h), 1);
    assert_int_equal(y_half_of("_backward", 6, gj_network_backward, m, &d), 0);
    d.dL_dinput = h.dL_dinput = (float *)(b + 196608);
    assert_int_equal(y_half_of("_backward_input", 7, gj_network_backward, m, &h), 1);
    assert_int_equal(y_half_of("_backward_input", 7, gj_network_backward, m, &d), 0);
    h.dL_doutput = d.dL_doutput; /* both */
    fake.reset_counts();
    assert_int_equal(gj_network_backward(m, NULL, &h), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(s.ctx), "give dL_doutput (floats) or dL_doutput_fp16 (fp16 values), not both"));
    h.dL_doutput = h.dL_doutput_fp16 = NULL; /* neither */
    assert_int_equal(gj_network_backward(m, NULL, &h), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(s.ctx), "dL_doutput (or dL_doutput_fp16) and context must not be NULL"));
    assert_int_equal(fake.count("cuLaunchKernel"), 0);
    gj_network_module_destroy(m);
    gj_network_destroy(net);

    /* The small model: its fused backward (no thread compiling behind it), then with dL/dinput. */
    setenv("GRIDJIT_NETWORK_TIERS", "0", 1);
    m = module_with_env(s.ctx, s.model, "GRIDJIT_NETWORK_FUSED_BACKWARD", "1");
    unsetenv("GRIDJIT_NETWORK_TIERS");
    d.encoding_params = (const void *)(b + (1 << 20));
    d.dL_dencoding_params = b + (2 << 20);
    d.dL_dinput = NULL;
    h = d;
    h.dL_doutput = NULL;
    h.dL_doutput_fp16 = b + 65536;
    assert_int_equal(y_half_of("_backward", 9, gj_network_backward, m, &h), 1);
    assert_int_equal(y_half_of("_backward", 9, gj_network_backward, m, &d), 0);
    d.dL_dinput = h.dL_dinput = (float *)(b + 196608);
    assert_int_equal(y_half_of("_backward_input", 7, gj_network_backward, m, &h), 1);
    assert_int_equal(y_half_of("_backward_input", 7, gj_network_backward, m, &d), 0);
    gj_network_module_destroy(m);
    small_model_close(&s);
}

/* A model recomputing in the backward (GRIDJIT_NETWORK_RECOMPUTE=1, and by default: its hidden
 * layer is 16 wide) keeps the input rows alone (a context of 32 rows of 16 halves a tile: 2
 * levels of 2 features, padded), and its forward then runs in the inference kernel's block of 16
 * warps with the inference's carveout; the backward keeps its block. With the knob 0 the forward
 * keeps its own block and leaves the carveout to the driver, and the context holds every layer.
 * (The fused inference kernel: GRIDJIT_NETWORK_INFERENCE_FEATURES=0.) */
static void a_recomputing_model_forward_takes_the_inference_block(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    knob_launches r[3];
    setenv("GRIDJIT_NETWORK_INFERENCE_FEATURES", "0", 1); /* the fused inference kernel's block */
    knob_off_and_on("GRIDJIT_NETWORK_RECOMPUTE", r);
    unsetenv("GRIDJIT_NETWORK_INFERENCE_FEATURES");
    assert_memory_equal(&r[2], &r[1], sizeof r[1]);
    assert_int_equal(r[0].context_64, 2 * 32 * (16 + 16 + 16) * 2);
    assert_int_equal(r[1].context_64, 2 * 32 * 16 * 2);
    assert_int_equal(r[0].block[0], 512); /* the fake is an sm_90: the wide inference block */
    assert_int_equal(r[1].block[0], 512);
    assert_int_not_equal(r[0].block[1], 512); /* the forward's own block */
    assert_int_equal(r[0].forward_carveout, GJ_FAKE_NO_CARVEOUT);
    assert_int_equal(r[1].block[1], 512); /* recomputing: the inference's block, shared memory, carveout */
    assert_int_equal(r[1].shared[1], r[1].shared[0]);
    assert_true(r[1].forward_carveout >= 1 && r[1].forward_carveout <= 50);
    assert_int_equal(r[1].block[2], r[0].block[2]);
}

/* GRIDJIT_NETWORK_SMALL_SUMS=1, and by default where the model recomputes (this one does): a
 * model's fused backward (level 0 of its encoding, 4096 entries of 2 features, is small) takes
 * 32 KiB more shared memory for the small level's sums, on the fake's sm_90 (the large class);
 * the forward keeps its own. */
static void a_model_backward_summing_small_levels_takes_their_room(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    knob_launches r[3];
    knob_off_and_on("GRIDJIT_NETWORK_SMALL_SUMS", r);
    assert_memory_equal(&r[2], &r[1], sizeof r[1]);
    assert_int_equal(r[1].shared[1], r[0].shared[1]);
    assert_int_equal(r[1].block[2], r[0].block[2]);
    assert_int_equal(r[1].shared[2], r[0].shared[2] + 4096 * 2 * 4);
    assert_int_equal(r[1].context_64, r[0].context_64);
}

/* gj_network_precompile fills the cache with what a module needs: a module made afterwards
 * without NVRTC loads both programs from it. */
static void precompiled_programs_serve_without_nvrtc(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    static const char json[] = "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 32, \"n_hidden_layers\": 2, "
                               "\"activation\": \"Tanh\"}";
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    gj_network *net = NULL;
    assert_int_equal(gj_network_create(ctx, json, 7, 3, &net), GJ_OK);
    gj_precompile_report report;
    memset(&report, 0xFF, sizeof report);
    assert_int_equal(gj_network_precompile(ctx, net, "sm_90", &report), GJ_OK);
    /* inference, the forward for training, the backward, the backward with dL/dinput, the
     * fused training step, Adam */
    assert_int_equal(report.programs, 6);
    assert_int_equal(report.compiled + report.cached, 6);
    assert_true(report.ms >= 0.0);
    /* Again: all found in the cache, nothing compiled. */
    assert_int_equal(gj_network_precompile(ctx, net, "sm_90", &report), GJ_OK);
    assert_int_equal(report.programs, 6);
    assert_int_equal(report.cached, 6);
    assert_int_equal(report.compiled, 0);
    assert_int_equal(gj_network_precompile(ctx, NULL, "sm_90", NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_network_precompile(ctx, net, "sm90", NULL), GJ_ERROR_INVALID_ARGUMENT);
    gj_network_destroy(net);
    gj_context_destroy(ctx);

    setenv("GRIDJIT_NVRTC", "off", 1);
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    int major = 0, minor = 0;
    assert_int_equal(gj_nvrtc_version(ctx, &major, &minor), GJ_ERROR_NO_NVRTC);
    assert_int_equal(gj_network_create(ctx, json, 7, 3, &net), GJ_OK);
    gj_network_module *m = NULL;
    assert_int_equal(gj_network_module_create(ctx, net, &m), GJ_OK);
    void *buffer = NULL;
    assert_int_equal(gj_device_alloc(ctx, 1 << 20, &buffer), GJ_OK);
    char *b = buffer;
    gj_network_pass_desc d = desc_over(b, 40);
    d.dL_doutput = (const float *)(b + 65536);
    d.dL_dparams = (float *)(b + 131072);
    fake.reset_counts();
    const gj_status inference = gj_network_inference(m, NULL, &d);
    if (inference != GJ_OK) {
        fail_msg("inference without NVRTC: %s", gj_context_errmsg(ctx));
    }
    assert_int_equal(gj_network_forward(m, NULL, &d), GJ_OK);
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    d.dL_dinput = (float *)(b + 196608);
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    assert_int_equal(fake.count("cuLibraryLoadData"), 4);
    unsetenv("GRIDJIT_NVRTC");
    gj_device_free(ctx, buffer);
    gj_network_module_destroy(m);
    gj_network_destroy(net);
    gj_context_destroy(ctx);
}

/* A model precompiled: a module made afterwards without NVRTC runs every pass, its encoding
 * module's programs for dL/dx (with and without the encoding's dL/dparams) found in the cache
 * too. */
static void a_precompiled_model_trains_without_nvrtc(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    static const char json[] = "{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 4}, \"network\": "
                               "{\"n_neurons\": 16, \"n_hidden_layers\": 1, \"n_output_dims\": 1}}";
    char dir[4096];
    gj_context *ctx = context_with_fresh_cache("gj_model_precompile_XXXXXX", dir, sizeof dir);
    gj_network *net = NULL;
    assert_int_equal(gj_network_create(ctx, json, 3, 0, &net), GJ_OK);
    gj_precompile_report report;
    assert_int_equal(gj_network_precompile(ctx, net, "sm_90", &report), GJ_OK);
    assert_int_equal(report.programs, 14);
    assert_int_equal(report.compiled, 14);
    gj_network_destroy(net);
    gj_context_destroy(ctx);

    setenv("GRIDJIT_NVRTC", "off", 1);
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    assert_int_equal(gj_context_set_cache_dir(ctx, dir), GJ_OK);
    assert_int_equal(gj_network_create(ctx, json, 3, 0, &net), GJ_OK);
    gj_network_module *m = NULL;
    assert_int_equal(gj_network_module_create(ctx, net, &m), GJ_OK);
    /* 40 points: 2 tiles of 16 x 32 halves (the input rows: it recomputes by default). */
    assert_int_equal(gj_network_module_context_bytes(m, 40), 2048);
    void *buffer = NULL;
    assert_int_equal(gj_device_alloc(ctx, 1 << 22, &buffer), GJ_OK);
    char *b = buffer;
    gj_network_pass_desc d = desc_over(b, 40);
    d.encoding_params = b + (1 << 20);
    d.dL_doutput = (const float *)(b + 65536);
    d.dL_dparams = (float *)(b + 131072);
    d.dL_dencoding_params = b + (2 << 20);
    d.dL_dinput = (float *)(b + (3 << 20));
    fake.reset_counts();
    assert_int_equal(gj_network_inference(m, NULL, &d), GJ_OK);
    assert_int_equal(gj_network_forward(m, NULL, &d), GJ_OK);
    const gj_status with_dx = gj_network_backward(m, NULL, &d);
    if (with_dx != GJ_OK) {
        fail_msg("backward without NVRTC: %s", gj_context_errmsg(ctx));
    }
    d.dL_dencoding_params = NULL; /* dL/dx alone: the encoding's backward_dx */
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    d.dL_dinput = NULL;
    d.dL_dencoding_params = b + (2 << 20);
    assert_int_equal(gj_network_backward(m, NULL, &d), GJ_OK);
    /* inference, forward, backward, training_input, the encoding's backward_input and backward_dx */
    assert_int_equal(fake.count("cuLibraryLoadData"), 6);
    unsetenv("GRIDJIT_NVRTC");
    gj_device_free(ctx, buffer);
    gj_network_module_destroy(m);
    gj_network_destroy(net);
    gj_context_destroy(ctx);
}

/* A network's training programs (the forward, the two backwards) are made together, all but
 * the first on threads of their own: without NVRTC and with an empty cache the pass fails with the program's own error,
 * and a later pass tries again (nothing half made is kept). */
static void training_programs_fail_together(void **state) {
    (void)state;
    setenv("GRIDJIT_NVRTC", "off", 1);
    char dir[4096];
    gj_context *ctx = context_with_fresh_cache("gj_network_no_nvrtc_XXXXXX", dir, sizeof dir);
    gj_network *net = NULL;
    assert_int_equal(gj_network_create(ctx, "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 16, \"n_hidden_layers\": 1}",
                                       3, 2, &net),
                     GJ_OK);
    gj_network_module *m = NULL;
    assert_int_equal(gj_network_module_create(ctx, net, &m), GJ_OK);
    void *buffer = NULL;
    assert_int_equal(gj_device_alloc(ctx, 1 << 20, &buffer), GJ_OK);
    gj_network_pass_desc d = desc_over(buffer, 40);
    for (int attempt = 0; attempt < 2; ++attempt) {
        fake.reset_counts();
        assert_int_equal(gj_network_forward(m, NULL, &d), GJ_ERROR_NO_NVRTC);
        const char *message = gj_context_errmsg(ctx);
        if (!strstr(message, "NVRTC")) {
            fail_msg("the failed forward pass says: %s", message);
        }
        assert_int_equal(fake.count("cuLibraryLoadData"), 0);
        assert_int_equal(fake.count("cuLaunchKernel"), 0);
    }
    unsetenv("GRIDJIT_NVRTC");
    gj_device_free(ctx, buffer);
    gj_network_module_destroy(m);
    gj_network_destroy(net);
    gj_context_destroy(ctx);
    rmdir(dir);
}

/* Without NVRTC and with an empty cache every program of a model fails: the programs compile
 * side by side, so the first failure stops none of the others, and the message names all
 * fourteen: the network module's six and the encoding module's eight (its backward with
 * dL/dx; its forward and backward for the training step). */
static void a_failed_precompile_names_every_program(void **state) {
    (void)state;
    setenv("GRIDJIT_NVRTC", "off", 1);
    char dir[4096];
    gj_context *ctx = context_with_fresh_cache("gj_network_precompile_XXXXXX", dir, sizeof dir);
    gj_network *net = NULL;
    assert_int_equal(gj_network_create(ctx, "{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 4}, \"network\": "
                                            "{\"n_neurons\": 16, \"n_hidden_layers\": 1, \"n_output_dims\": 1}}", 3, 0, &net),
                     GJ_OK);
    gj_precompile_report report;
    memset(&report, 0xFF, sizeof report);
    assert_int_equal(gj_network_precompile(ctx, net, "sm_90", &report), GJ_ERROR_NO_NVRTC);
    assert_int_equal(report.programs, 14);
    assert_int_equal(report.compiled, 0);
    assert_int_equal(report.cached, 0);
    const char *message = gj_context_errmsg(ctx);
    if (!strstr(message, "14 of 14 programs failed") || !strstr(message, "gj_network_inference.cu") ||
        !strstr(message, "gj_network_training.cu") || !strstr(message, "gj_network_backward.cu") ||
        !strstr(message, "gj_network_training_input.cu") || !strstr(message, "gj_network_train_step.cu") ||
        !strstr(message, "gj_network_adam.cu") ||
        !strstr(message, "encoding backward_input,") || !strstr(message, "encoding backward_input_rows") ||
        !strstr(message, "encoding backward_dx,") || !strstr(message, "encoding backward_dx_rows") ||
        !strstr(message, "encoding forward,") || !strstr(message, "encoding forward_rows") ||
        !strstr(message, "encoding backward,") || !strstr(message, "encoding backward_rows")) {
        fail_msg("the message does not name every program: %s", message);
    }
    unsetenv("GRIDJIT_NVRTC");
    gj_network_destroy(net);
    gj_context_destroy(ctx);
    rmdir(dir);
}


/* The backward pass of a 32 -> 64 x 3 -> 16 network over 1000 points on stream (accumulating:
 * one launch): the block's threads and dynamic shared memory the fake driver saw. */
static void backward_block(gj_context *ctx, gj_network_module *m, gj_stream stream, char *b, unsigned *threads,
                           unsigned *shared) {
    gj_network_pass_desc d = desc_over(b, 1000);
    d.dL_doutput = (const float *)(b + 65536);
    d.dL_dparams = (float *)(b + 131072);
    d.dL_dparams_mode = GJ_GRAD_ACCUMULATE;
    fake.reset_counts();
    const gj_status status = gj_network_backward(m, stream, &d);
    if (status != GJ_OK) {
        fail_msg("gj_network_backward: %s", gj_context_errmsg(ctx));
    }
    assert_int_equal(fake.count("cuLaunchKernel"), 1);
    *threads = fake.last_block_x();
    *shared = fake.last_shared();
}

static const char plan_classes_net[] = "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64, \"n_hidden_layers\": 3}";

/* One module on two devices: the cubins for sm_90 state the large plan (four warps a backward
 * block of 105 KiB), those for sm_86 the portable one (two warps; the fake driver refuses
 * more than 99 KiB there), and each launch takes the plan of the code it launches
 * (docs/networks.md §7). */
static void each_architecture_launches_its_own_plan(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    fake.set_capability(1, 8, 6);
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    gj_network *net = NULL;
    assert_int_equal(gj_network_create(ctx, plan_classes_net, 32, 16, &net), GJ_OK);
    gj_network_module *m = NULL;
    assert_int_equal(gj_network_module_create(ctx, net, &m), GJ_OK);
    void *buffer = NULL;
    assert_int_equal(gj_device_alloc(ctx, 1 << 20, &buffer), GJ_OK);
    unsigned threads = 0, shared = 0;
    backward_block(ctx, m, NULL, buffer, &threads, &shared); /* device 0: 9.0 */
    assert_int_equal(threads, 128);
    assert_true(shared > 96 * 1024 && shared <= 112 * 1024);
    const unsigned large_shared = shared;
    CUstream other = fake.stream_create(fake.context_create(1)); /* device 1: 8.6 */
    backward_block(ctx, m, (gj_stream)other, buffer, &threads, &shared);
    assert_int_equal(threads, 64);
    assert_true(shared <= 96 * 1024);
    assert_int_equal(large_shared - shared, 2 * 64 * (64 + 8) * 2); /* two more warps, each two buffers of 32 rows */
    backward_block(ctx, m, NULL, buffer, &threads, &shared); /* and back */
    assert_int_equal(threads, 128);
    assert_int_equal(shared, large_shared);
    gj_device_free(ctx, buffer);
    gj_network_module_destroy(m);
    gj_network_destroy(net);
    gj_context_destroy(ctx);
}

/* PTX states the portable plan whatever architecture it was compiled for: the driver may
 * finish compute_90 PTX (precompiled; no NVRTC to compile for the device) for an sm_120 GPU,
 * whose blocks take at most 99 KiB (the fake driver refuses more, as the real one does). */
static void ptx_takes_the_portable_plan(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    char dir[512];
    gj_context *ctx = context_with_fresh_cache("plan_ptx_XXXXXX", dir, sizeof dir);
    gj_network *net = NULL;
    assert_int_equal(gj_network_create(ctx, plan_classes_net, 32, 16, &net), GJ_OK);
    assert_int_equal(gj_network_precompile(ctx, net, "compute_90", NULL), GJ_OK);
    gj_network_destroy(net);
    gj_context_destroy(ctx);

    setenv("GRIDJIT_NVRTC", "off", 1);
    fake.set_capability(0, 12, 0);
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    assert_int_equal(gj_context_set_cache_dir(ctx, dir), GJ_OK);
    assert_int_equal(gj_network_create(ctx, plan_classes_net, 32, 16, &net), GJ_OK);
    gj_network_module *m = NULL;
    assert_int_equal(gj_network_module_create(ctx, net, &m), GJ_OK);
    void *buffer = NULL;
    assert_int_equal(gj_device_alloc(ctx, 1 << 20, &buffer), GJ_OK);
    unsigned threads = 0, shared = 0;
    backward_block(ctx, m, NULL, buffer, &threads, &shared);
    assert_int_equal(threads, 64); /* the portable plan's two warps */
    assert_true(shared <= 96 * 1024);
    /* And on an sm_90 device (device 1), the same PTX: the same plan. */
    CUstream other = fake.stream_create(fake.context_create(1));
    backward_block(ctx, m, (gj_stream)other, buffer, &threads, &shared);
    assert_int_equal(threads, 64);
    gj_device_free(ctx, buffer);
    gj_network_module_destroy(m);
    gj_network_destroy(net);
    gj_context_destroy(ctx);
    gjt_remove_tree(dir);
}

/* What the plan tests change: every device back to 9.0, NVRTC back on. */
static int restore_devices(void **state) {
    (void)state;
    fake.set_capability(0, 9, 0);
    fake.set_capability(1, 9, 0);
    unsetenv("GRIDJIT_NVRTC");
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(passes_launch_their_kernels),
        cmocka_unit_test(a_model_launches_fused_kernels),
        cmocka_unit_test(a_model_backward_runs_unfused_while_the_fused_one_compiles),
        cmocka_unit_test(a_failed_or_abandoned_compile_behind_the_passes),
        cmocka_unit_test(a_model_backward_runs_apart_where_its_gradients_outgrow_l2),
        cmocka_unit_test(a_model_training_step_runs_unfused_while_its_program_compiles),
        cmocka_unit_test(a_model_step_runs_as_its_passes),
        cmocka_unit_test(a_step_s_two_pass_forward_keeps_its_features_apart),
        cmocka_unit_test(a_step_while_the_backward_s_thread_runs_compiles_its_own),
        cmocka_unit_test(exit_waits_for_the_compile_behind_the_passes),
        cmocka_unit_test(the_training_step_launches_its_program),
        cmocka_unit_test(forward_grids_stop_at_the_waves_asked_for),
        cmocka_unit_test(a_model_inference_leaves_l1_to_its_encoding),
        cmocka_unit_test(a_recomputing_model_forward_takes_the_inference_block),
        cmocka_unit_test(a_model_s_inference_runs_in_two_passes),
        cmocka_unit_test(a_model_s_forward_runs_in_two_passes),
        cmocka_unit_test(a_model_s_inference_block_stages_its_small_levels),
        cmocka_unit_test(fp16_outputs_reach_every_forward_kernel),
        cmocka_unit_test(fp16_dL_doutput_reaches_every_backward_kernel),
        cmocka_unit_test(a_model_backward_summing_small_levels_takes_their_room),
        cmocka_unit_test(precompiled_programs_serve_without_nvrtc),
        cmocka_unit_test(a_precompiled_model_trains_without_nvrtc),
        cmocka_unit_test(training_programs_fail_together),
        cmocka_unit_test(a_failed_precompile_names_every_program),
        cmocka_unit_test_teardown(each_architecture_launches_its_own_plan, restore_devices),
        cmocka_unit_test_teardown(ptx_takes_the_portable_plan, restore_devices),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
