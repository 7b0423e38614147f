/* See network_sources.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "network_sources.h"
#include "codegen/network_codegen.h" /* gj__network_inference_features: which inference kernel */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const activation_names[] = {"None",    "ReLU",       "LeakyReLU", "Exponential", "Sine",
                                               "Sigmoid", "Squareplus", "Softplus",  "Tanh",        "SiLU"};

void gj_test_network_json(char *buffer, size_t size, const char *otype, unsigned n_neurons, unsigned hidden,
                          gj_activation activation, gj_activation output_activation) {
    snprintf(buffer, size,
             "{\"otype\": \"%s\", \"n_neurons\": %u, \"n_hidden_layers\": %u, \"activation\": \"%s\", "
             "\"output_activation\": \"%s\"}",
             otype, n_neurons, hidden, activation_names[activation], activation_names[output_activation]);
}

/* Every lane a point; the warp's scratch in dynamic shared memory, its context in global memory. */
static const char network_user[] =
    "\n// ---- a caller's kernel: every device function of the network ----\n"
    "extern \"C\" __global__ void mlp_user(int n, const float* x, float* y, const gj_half* params, gj_u16* ctx,\n"
    "                                      float* dparams, float* dx) {\n"
    "    extern __shared__ __align__(16) gj_u16 smem[];\n"
    "    gj_u16* scratch = smem + (threadIdx.x / 32) * mlp_config::SCRATCH_HALVES;\n"
    "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    const bool active = i < n;\n"
    "    gj_u16* warp_ctx = ctx + (i / 32) * mlp_config::CTX_HALVES;\n"
    "    mlp_out_t a = mlp(x + i * mlp_config::IN, active, params, scratch);\n"
    "    mlp_out_t b = mlp_fwd(x + i * mlp_config::IN, active, params, scratch, warp_ctx);\n"
    "    for (int k = 0; k < mlp_config::OUT; ++k) if (active) y[i * mlp_config::OUT + k] = a.v[k] + b.v[k];\n"
    "    mlp_bwd(active ? b.v : nullptr, params, scratch, warp_ctx, dparams, active ? dx + i * mlp_config::IN : nullptr);\n"
    "}\n";

static const char model_user[] =
    "\n// ---- a caller's fused kernel: the encoding, then the network ----\n"
    "extern \"C\" __global__ void model_user(int n, const float* x, float* y, const mlp_encoding_config::param_t* eparams,\n"
    "                                        const gj_half* params, gj_u16* ctx, float* dparams,\n"
    "                                        mlp_encoding_config::grad_t* deparams) {\n"
    "    extern __shared__ __align__(16) gj_u16 smem[];\n"
    "    gj_u16* scratch = smem + (threadIdx.x / 32) * mlp_config::SCRATCH_HALVES;\n"
    "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    const bool active = i < n;\n"
    "    mlp_encoding_in_t in;\n"
    "    for (int d = 0; d < mlp_encoding_config::D; ++d) in.v[d] = active ? x[i * mlp_encoding_config::D + d] : 0.0f;\n"
    "    alignas(4) gj_u8 ectx[4 * mlp_encoding_config::D];\n"
    "    mlp_encoding_out_t f = mlp_encoding(in, eparams, ectx);\n"
    "    gj_u16* warp_ctx = ctx + (i / 32) * mlp_config::CTX_HALVES;\n"
    "    mlp_out_t o = mlp_fwd(f.v, active, params, scratch, warp_ctx);\n"
    "    for (int k = 0; k < mlp_config::OUT; ++k) if (active) y[i * mlp_config::OUT + k] = o.v[k];\n"
    "    float df[mlp_config::IN];\n"
    "    mlp_bwd(active ? o.v : nullptr, params, scratch, warp_ctx, dparams, df);\n"
    "    mlp_encoding_out_t dy;\n"
    "    for (int k = 0; k < mlp_encoding_config::N_OUT_PADDED; ++k)\n"
    "        dy.v[k] = gj_from_float<mlp_encoding_config::param_t>(k < mlp_config::IN ? df[k] : 0.0f);\n"
    "    if (active) mlp_encoding_bwd(dy, eparams, ectx, deparams, nullptr);\n"
    "}\n";

char *gj_test_network_unit(gj_context *ctx, const gj_network *net, int device_functions_only) {
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.name = "mlp";
    opts.device_functions_only = device_functions_only;
    char *source = NULL;
    if (gj_network_generate(ctx, net, &opts, &source, NULL) != GJ_OK) {
        fail_msg("gj_network_generate: %s", gj_context_errmsg(ctx));
    }
    const char *user = gj_network_encoding(net) ? model_user : network_user;
    const size_t size = strlen(source) + strlen(user) + 1;
    char *unit = malloc(size);
    assert_non_null(unit);
    snprintf(unit, size, "%s%s", source, user);
    gj_free(source);
    return unit;
}

double gj_test_network_compile(gj_context *ctx, const gj_network *net, const char *unit, int device_functions_only,
                               const char *arch) {
    const int model = gj_network_encoding(net) != NULL;
    const char *all[] = {gj__network_inference_features(net) ? "&mlp_inference_features" : "&mlp_inference", "&mlp_forward", "&mlp_backward", "&mlp_zero",
                         model ? "&model_user" : "&mlp_user"};
    const char *one[] = {model ? "&model_user" : "&mlp_user"};
    const int with_kernels = !device_functions_only;
    const char *const *names = with_kernels ? all : one;
    const size_t n_names = with_kernels ? 5 : 1;
    gj_program *prog = NULL;
    const gj_status status = gj_compile_source(ctx, unit, names, n_names, arch, &prog);
    if (status != GJ_OK) {
        char *hyper = gj_network_hyperparams(net);
        fail_msg("%s for %s: %s\n%s", arch, hyper, gj_context_errmsg(ctx), prog ? gj_program_log(prog) : "");
    }
    assert_int_equal(gj_program_kind(prog), GJ_BINARY_CUBIN);
    assert_int_equal(gj_program_n_kernels(prog), n_names);
    const double ms = gj_program_compile_ms(prog);
    gj_program_destroy(prog);
    return ms;
}
