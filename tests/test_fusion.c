/*
 * The fusion contract (docs/design.md §7): the output of `--device-functions-only` pasted into a
 * caller's own kernel compiles with NVRTC alone, and so does the full translation unit
 * with nvcc alone. Two encodings can share one translation unit.
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
#include "test_env.h"

static char *device_functions(gj_context *ctx, const char *json, const char *name, int unroll_levels) {
    gj_encoding *enc = NULL;
    if (gj_encoding_create(ctx, json, 0, &enc) != GJ_OK) {
        fail_msg("%s", gj_context_errmsg(ctx));
    }
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.device_functions_only = 1;
    opts.name = name;
    opts.unroll_levels = unroll_levels;
    char *source = NULL;
    assert_int_equal(gj_encoding_generate(ctx, enc, &opts, &source, NULL), GJ_OK);
    gj_encoding_destroy(enc);
    return source;
}

/* A caller's kernel: encodes with two encodings, then runs both backward passes. */
static const char user_kernel[] =
    "\n// ---- the caller's own fused kernel ----\n"
    "__global__ void my_fused(const float* xs, const gj_half* pa, const float* pb, gj_half* ga, float* gb, float* out) {\n"
    "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    grid_a_in_t x; grid_b_in_t xb;\n"
    "    for (int d = 0; d < 3; ++d) x.v[d] = xs[3 * i + d];\n"
    "    for (int d = 0; d < 2; ++d) xb.v[d] = xs[3 * i + d];\n"
    "    alignas(4) gj_u8 ctx_a[12], ctx_b[8];\n"
    "    grid_a_out_t a = grid_a(x, pa, ctx_a);\n"
    "    grid_b_out_t b = grid_b(xb, pb, ctx_b, 0.5f);\n"
    "    float s = 0.0f;\n"
    "    for (int k = 0; k < 32; ++k) s += gj_to_float(a.v[k]);\n"
    "    for (int k = 0; k < 16; ++k) s += b.v[k];\n"
    "    out[i] = s;\n"
    "    grid_a_in_t dx; grid_b_in_t dxb, ddx;\n"
    "    grid_a_bwd(a, pa, ctx_a, ga, &dx);\n"
    "    grid_b_bwd(b, pb, ctx_b, gb, &dxb, 0.5f, i, 1024);\n"
    "    grid_b_out_t ddy;\n"
    "    grid_b_bwdbwd(dxb, b, pb, ctx_b, gb, &ddx, &ddy);\n"
    "    out[i] += dx.v[0] + ddx.v[0] + ddy.v[0];\n"
    "}\n";

static void device_functions_fuse_into_a_callers_kernel(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    /* One encoding with unrolled levels, one looping over its table: both forms fuse. */
    char *a = device_functions(ctx, "{\"otype\":\"HashGrid\"}", "grid_a", 1);
    char *b = device_functions(ctx,
                               "{\"otype\":\"DenseGrid\",\"n_levels\":8,\"base_resolution\":4,\"precision\":\"fp32\","
                               "\"interpolation\":\"Smoothstep\",\"stochastic_interpolation\":true,\"n_dims_to_encode\":2}",
                               "grid_b", 0);
    const size_t size = strlen(a) + strlen(b) + sizeof user_kernel + 1;
    char *source = malloc(size);
    assert_non_null(source);
    snprintf(source, size, "%s%s%s", a, b, user_kernel);
    const char *names[] = {"&my_fused"};
    gj_program *prog = NULL;
    const gj_status status = gj_compile_source(ctx, source, names, 1, "sm_90", &prog);
    if (status != GJ_OK) {
        fail_msg("%s\n%s", gj_context_errmsg(ctx), prog ? gj_program_log(prog) : "");
    }
    assert_int_equal(gj_program_kind(prog), GJ_BINARY_CUBIN);
    gj_program_destroy(prog);
    free(source);
    free(a);
    free(b);
    gj_context_destroy(ctx);
}

/* `gridjit dump` compiles alone with nvcc, when nvcc is installed (the CUDA toolkit). */
static void full_translation_unit_compiles_with_nvcc(void **state) {
    (void)state;
    const char *nvcc = access("/usr/local/cuda/bin/nvcc", X_OK) == 0 ? "/usr/local/cuda/bin/nvcc" : NULL;
    if (!nvcc && system("command -v nvcc >/dev/null 2>&1") == 0) {
        nvcc = "nvcc";
    }
    if (!nvcc) {
        printf("SKIPPED: nvcc not found\n");
        skip();
    }
    const char *tmp = getenv("GRIDJIT_TEST_TMP");
    char command[8192];
    snprintf(command, sizeof command,
             "mkdir -p '%s' && '%s' dump --config '{\"otype\":\"HashGrid\",\"n_levels\":4,\"n_features_per_level\":4}' "
             "--dims 3 > '%s/dump.cu' && '%s' dump --config '{\"otype\":\"HashGrid\",\"n_levels\":4,\"n_features_per_level\":4}' "
             "--dims 3 | cmp -s - '%s/dump.cu' && %s -std=c++17 -arch=sm_90 -cubin -o '%s/dump.cubin' '%s/dump.cu'",
             tmp, getenv("GRIDJIT_CLI"), tmp, getenv("GRIDJIT_CLI"), tmp, nvcc, tmp, tmp);
    assert_int_equal(system(command), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(device_functions_fuse_into_a_callers_kernel),
        cmocka_unit_test(full_translation_unit_compiles_with_nvcc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
