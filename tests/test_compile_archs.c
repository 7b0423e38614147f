/*
 * One encoding (all passes) to a cubin for every architecture the loaded NVRTC
 * supports, plain and with the "a" suffix where NVRTC accepts it, and to PTX.
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
#include "test_env.h"

static const char config[] = "{\"otype\":\"HashGrid\",\"n_levels\":4,\"n_features_per_level\":2,\"log2_hashmap_size\":14}";

static gj_status compile_for(gj_context *ctx, gj_encoding *enc, const char *arch, gj_program **prog) {
    const gj_status status = gj_compile(ctx, enc, NULL, arch, prog);
    if (status == GJ_OK) {
        size_t size = 0;
        gj_program_binary(*prog, &size);
        printf("  %-14s %8zu bytes  %.2f s\n", arch, size, gj_program_compile_ms(*prog) / 1000.0);
    }
    return status;
}

static void every_supported_arch_gets_a_cubin(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    gj_context *ctx = NULL;
    gj_encoding *enc = NULL;
    char *archs = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    assert_int_equal(gj_encoding_create(ctx, config, 3, &enc), GJ_OK);
    assert_int_equal(gj_nvrtc_supported_archs(ctx, &archs), GJ_OK);
    int plain = 0, suffixed = 0;
    for (char *arch = strtok(archs, " "); arch; arch = strtok(NULL, " ")) {
        for (int variant = 0; variant < 2; ++variant) {
            char name[32];
            snprintf(name, sizeof name, "%s%s", arch, variant ? "a" : "");
            gj_program *prog = NULL;
            const gj_status status = compile_for(ctx, enc, name, &prog);
            if (variant == 1 && status == GJ_ERROR_UNSUPPORTED_ARCH) {
                continue; /* NVRTC has no arch-specific variant of this one */
            }
            if (status != GJ_OK) {
                fail_msg("%s: %s\n%s", name, gj_context_errmsg(ctx), prog ? gj_program_log(prog) : "");
            }
            size_t size = 0;
            const unsigned char *binary = gj_program_binary(prog, &size);
            assert_int_equal(gj_program_kind(prog), GJ_BINARY_CUBIN);
            assert_true(size > 4 && memcmp(binary, "\x7f" "ELF", 4) == 0);
            assert_string_equal(gj_program_arch(prog), name);
            gj_program_destroy(prog);
            variant ? ++suffixed : ++plain;
        }
    }
    printf("%d architectures, %d arch-specific variants\n", plain, suffixed);
    assert_true(plain >= 10); /* NVRTC 13: sm_75 ... sm_121 */
    assert_true(suffixed >= 1);
    gj_free(archs);
    gj_encoding_destroy(enc);
    gj_context_destroy(ctx);
}

static void ptx_for_a_virtual_arch(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    gj_context *ctx = NULL;
    gj_encoding *enc = NULL;
    gj_program *prog = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    assert_int_equal(gj_encoding_create(ctx, config, 3, &enc), GJ_OK);
    assert_int_equal(gj_compile(ctx, enc, NULL, "compute_90", &prog), GJ_OK);
    assert_int_equal(gj_program_kind(prog), GJ_BINARY_PTX);
    size_t size = 0;
    const char *ptx = gj_program_binary(prog, &size);
    assert_int_equal(strlen(ptx) + 1, size);
    assert_non_null(strstr(ptx, ".version"));
    assert_non_null(strstr(ptx, ".target sm_90"));
    for (size_t k = 0; k < gj_program_n_kernels(prog); ++k) {
        char entry[512];
        snprintf(entry, sizeof entry, ".entry %s(", gj_program_lowered_name(prog, k));
        assert_non_null(strstr(ptx, entry));
    }
    gj_program_destroy(prog);
    gj_encoding_destroy(enc);
    gj_context_destroy(ctx);
}

int main(void) {
    setenv("GRIDJIT_CACHE_DISABLE", "1", 1); /* exercise NVRTC, not the disk cache */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_supported_arch_gets_a_cubin),
        cmocka_unit_test(ptx_for_a_virtual_arch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
