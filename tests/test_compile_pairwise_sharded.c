/*
 * NVRTC compilation of a pairwise covering set of configurations: every value of
 * every code-changing option meets every value of every other option at least once.
 * Each configuration is compiled with all its passes to an sm_90 cubin (gj_compile's
 * unit), and every third also as the two largest level-group module programs
 * (forward_dydx_rows, backward_input_rows), which that unit leaves out.
 *
 * max_level (scalar or per point) is not a code option: the same kernels read either
 * at run time, so it does not multiply the compile matrix (the GPU tests cover both).
 *
 * Run as: test_compile_pairwise_sharded SHARD N_SHARDS (ctest registers the shards).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridjit.h"
#include "api/context.h"
#include "codegen/kernels.h"
#include "compile/arch.h"
#include "compile/encoding_unit.h"
#include "pairwise.h"
#include "test_env.h"

enum { P_HASH, P_TYPE, P_INTERP, P_F, P_PRECISION, P_DIMS, P_FIXED, P_STOCHASTIC, N_PARAMS };

static const gj_pw_param params[N_PARAMS] = {
    {"hash", 5}, {"type", 3}, {"interpolation", 3}, {"F", 4},
    {"precision", 2}, {"dims", 7}, {"fixed_point_pos", 2}, {"stochastic", 2},
};
static const char *const hashes[] = {"Prime", "CoherentPrime", "ReversedPrime", "Rng", "BaseConvert"};
static const char *const types[] = {"Hash", "Dense", "Tiled"};
static const char *const interps[] = {"Nearest", "Linear", "Smoothstep"};
static const int features[] = {1, 2, 4, 8};
static const char *const precisions[] = {"fp16", "fp32"};
static const int dims[] = {1, 2, 3, 4, 7, 12, 32};

static int allowed(const int *row) {
    const int d = dims[row[P_DIMS]];
    if (d > 7 && row[P_HASH] != 4 && row[P_TYPE] == 0) {
        return 0; /* a Hash grid with a prime hash or Rng takes at most 7 dimensions */
    }
    if (d == 32 && row[P_TYPE] == 1) {
        return 0; /* a dense 32-D grid needs at least 2^32 entries: refused by design */
    }
    return 1;
}

/* Small grids keep the compile fast; base resolution small enough for Dense. */
static void config_json(const int *row, char *json, size_t size) {
    const int d = dims[row[P_DIMS]];
    const int base = d >= 12 ? 2 : d >= 7 ? 4 : 8;
    snprintf(json, size,
             "{\"otype\":\"Grid\",\"type\":\"%s\",\"n_levels\":2,\"n_features_per_level\":%d,\"log2_hashmap_size\":12,"
             "\"base_resolution\":%d,\"per_level_scale\":2.0,\"interpolation\":\"%s\",\"hash\":\"%s\","
             "\"fixed_point_pos\":%s,\"stochastic_interpolation\":%s,\"precision\":\"%s\",\"n_dims_to_encode\":%d}",
             types[row[P_TYPE]], features[row[P_F]], base, interps[row[P_INTERP]], hashes[row[P_HASH]],
             row[P_FIXED] ? "true" : "false", row[P_STOCHASTIC] ? "true" : "false", precisions[row[P_PRECISION]], d);
}

static int shard = 0, n_shards = 1;
static int rows[512 * N_PARAMS];
static size_t n_rows;

static void covering_set_covers_every_pair(void **state) {
    (void)state;
    assert_true(n_rows > 0);
    assert_true(gj_pw_check(params, N_PARAMS, allowed, rows, n_rows));
    printf("pairwise covering set: %zu configurations (full product: %d)\n", n_rows, 5 * 3 * 3 * 4 * 2 * 7 * 2 * 2);
}

/* The level-group programs of a module with default options (level-major), compiled as
 * gj_module_create's module would: each has its kernels, and no compiler message. */
static void compile_rows_parts(gj_context *ctx, const gj_encoding *enc, size_t r, const char *json) {
    static const gj__part parts[] = {GJ__PART_FORWARD_DYDX_ROWS, GJ__PART_BACKWARD_INPUT_ROWS};
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    gj__arch arch;
    assert_int_equal(gj__arch_parse(NULL, "sm_90", &arch), GJ_OK);
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; ++i) {
        gj__encoding_unit unit;
        gj_program *prog = NULL;
        assert_int_equal(gj__encoding_unit_make(&ctx->compiler, enc, &opts, parts[i], &arch, 0, &unit), GJ_OK);
        const gj_status status = gj__compile(&ctx->compiler, &unit.request, &prog);
        if (status != GJ_OK || gj_program_log(prog)[0] != '\0') {
            fail_msg("config %zu, program %s: %s\n%s\n%s", r, gj__part_name(parts[i]), gj_context_errmsg(ctx), json,
                     prog ? gj_program_log(prog) : "");
        }
        assert_int_equal(gj_program_n_kernels(prog), parts[i] == GJ__PART_BACKWARD_INPUT_ROWS ? 2 : 1);
        for (size_t k = 0; k < gj_program_n_kernels(prog); ++k) {
            assert_non_null(strstr(gj_program_kernel_name(prog, k), "_rows"));
        }
        gj_program_destroy(prog);
        gj__encoding_unit_free(&unit);
    }
}

static void compile_shard(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    gj_context_set_cache_enabled(ctx, 0); /* every run compiles, so the messages below are seen */
    int compiled = 0;
    for (size_t r = (size_t)shard; r < n_rows; r += (size_t)n_shards) {
        char json[1024];
        config_json(rows + r * N_PARAMS, json, sizeof json);
        gj_encoding *enc = NULL;
        gj_status status = gj_encoding_create(ctx, json, 0, &enc);
        if (status != GJ_OK) {
            fail_msg("config %zu refused: %s\n%s", r, gj_context_errmsg(ctx), json);
        }
        gj_program *prog = NULL;
        status = gj_compile(ctx, enc, NULL, "sm_90", &prog);
        if (status != GJ_OK) {
            fail_msg("config %zu failed to compile: %s\n%s\n%s", r, gj_context_errmsg(ctx), json,
                     prog ? gj_program_log(prog) : "");
        }
        /* Generated code compiles without a single compiler message (a warning would reach
         * every user as `compiler messages`). */
        if (gj_program_log(prog)[0] != '\0') {
            fail_msg("config %zu compiled with messages:\n%s\n%s", r, json, gj_program_log(prog));
        }
        size_t size = 0;
        const unsigned char *binary = gj_program_binary(prog, &size);
        assert_int_equal(gj_program_kind(prog), GJ_BINARY_CUBIN);
        assert_true(size > 4 && memcmp(binary, "\x7f" "ELF", 4) == 0);
        assert_int_equal(gj_program_n_kernels(prog), 11); /* every kernel of every pass (not the _rows forms) */
        for (size_t k = 0; k < gj_program_n_kernels(prog); ++k) {
            const char *lowered = gj_program_lowered_name(prog, k);
            assert_non_null(lowered);
            assert_true(strncmp(lowered, "_Z", 2) == 0);
            assert_non_null(memmem(binary, size, lowered, strlen(lowered)));
        }
        printf("  [%zu] %.2f s  %s\n", r, gj_program_compile_ms(prog) / 1000.0, json);
        ++compiled;
        if (r % 3 == 0) {
            compile_rows_parts(ctx, enc, r, json);
        }
        gj_program_destroy(prog);
        gj_encoding_destroy(enc);
    }
    assert_true(compiled > 0);
    gj_context_destroy(ctx);
}

int main(int argc, char **argv) {
    if (gj_test_shard_args(argc, argv, &shard, &n_shards) != 0) {
        return 2;
    }
    /* This test is about NVRTC compiling every combination: never answer from the disk cache. */
    setenv("GRIDJIT_CACHE_DISABLE", "1", 1);
    n_rows = gj_pw_generate(params, N_PARAMS, allowed, rows, 512);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(covering_set_covers_every_pair),
        cmocka_unit_test(compile_shard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
