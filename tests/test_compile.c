/* Compiling CUDA source with NVRTC: binaries, lowered names, architectures, failures
 * and their annotated logs. Runs without a GPU; needs libnvrtc (skips visibly without). */
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
#include "compile/arch.h"
#include "compile/log.h"
#include "compile/options.h"
#include "compile/program.h"

/* A self-contained kernel (NVRTC has no CUDA headers built in), templated so that
 * its name is mangled. */
static const char templated_source[] = "template <typename T, int N>\n"
                                       "__global__ void scale(T *x, T factor)\n"
                                       "{\n"
                                       "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                       "    if (i < N) {\n"
                                       "        x[i] *= factor;\n"
                                       "    }\n"
                                       "}\n"
                                       "extern \"C\" __global__ void plain(int *y) { y[threadIdx.x] = 7; }\n";
static const char *const templated_names[] = {"&scale<float, 4>", "&plain"};
/* How the Itanium C++ ABI mangles void scale<float, 4>(float *, float), as g++ does
 * for the same host declaration (nm on a host object file). */
static const char scale_mangled[] = "_Z5scaleIfLi4EEvPT_S0_";

/* Line 4 uses a name that does not exist. */
static const char broken_source[] = "// line 1\n"
                                    "__global__ void broken(float *x)\n"
                                    "{\n"
                                    "    x[0] = undefined_name;\n"
                                    "}\n"
                                    "// line 6\n"
                                    "// line 7\n"
                                    "// line 8\n"
                                    "// line 9\n";

/* ------------------------------------------------------------ fixtures */

/* GRIDJIT_NVRTC as the test run was given it (tests that change it put it back), so
 * that GRIDJIT_NVRTC=off or =/path/to/libnvrtc.so applies to the whole run. */
static char *original_nvrtc_env;

static void restore_nvrtc_env(void) {
    if (original_nvrtc_env) {
        setenv("GRIDJIT_NVRTC", original_nvrtc_env, 1);
    } else {
        unsetenv("GRIDJIT_NVRTC");
    }
}

static int context_setup(void **state) {
    restore_nvrtc_env();
    gj_context *ctx = NULL;
    if (gj_context_create(&ctx) != GJ_OK) {
        return -1;
    }
    gj_context_set_log(ctx, NULL, NULL);
    /* These tests are about NVRTC: every compile must really compile (the disk cache has
     * tests of its own). */
    gj_context_set_cache_enabled(ctx, 0);
    *state = ctx;
    return 0;
}

static int context_teardown(void **state) {
    gj_context_destroy(*state);
    restore_nvrtc_env();
    return 0;
}

static gj__nvrtc *nvrtc_or_skip(gj_context *ctx) {
    gj__nvrtc *n = NULL;
    gj_status status = gj__nvrtc_get(&ctx->nvrtc, &ctx->diag, &n);
    if (status == GJ_ERROR_NO_NVRTC) {
        print_message("SKIPPED: NVRTC cannot be loaded here: %s\n", gj_context_errmsg(ctx));
        skip();
    }
    assert_int_equal(status, GJ_OK);
    return n;
}

/* Compiles source for arch, expecting success; the caller destroys the program. */
static gj_program *compile_ok(gj_context *ctx, const char *source, const char *const *names, size_t n,
                              const char *arch) {
    gj_program *prog = NULL;
    gj_status status = gj_compile_source(ctx, source, names, n, arch, &prog);
    if (status != GJ_OK) {
        fail_msg("%s: %s: %s", arch, gj_status_name(status), gj_context_errmsg(ctx));
    }
    assert_non_null(prog);
    return prog;
}

static int contains_bytes(const void *haystack, size_t size, const char *needle) {
    return memmem(haystack, size, needle, strlen(needle)) != NULL;
}

/* An ELF file for NVIDIA's CUDA machine (e_machine EM_CUDA = 190, little-endian). */
static void assert_cuda_elf(const gj_program *prog) {
    size_t size = 0;
    const unsigned char *binary = gj_program_binary(prog, &size);
    assert_non_null(binary);
    assert_true(size > 64);
    assert_memory_equal(binary, "\x7f" "ELF", 4);
    assert_int_equal(binary[18] | binary[19] << 8, 190);
}

/* ------------------------------------------------------------ cubin, PTX */

static void cubin_holds_the_lowered_names(void **state) {
    gj_context *ctx = *state;
    nvrtc_or_skip(ctx);
    gj_program *prog = compile_ok(ctx, templated_source, templated_names, 2, "sm_80");
    assert_int_equal(gj_program_kind(prog), GJ_BINARY_CUBIN);
    assert_string_equal(gj_program_arch(prog), "sm_80");
    assert_cuda_elf(prog);

    assert_int_equal(gj_program_n_kernels(prog), 2);
    assert_string_equal(gj_program_kernel_name(prog, 0), "&scale<float, 4>");
    assert_string_equal(gj_program_kernel_name(prog, 1), "&plain");
    assert_null(gj_program_kernel_name(prog, 2));
    assert_null(gj_program_lowered_name(prog, 2));
    assert_string_equal(gj_program_lowered_name(prog, 0), scale_mangled);
    assert_string_equal(gj_program_lowered_name(prog, 1), "plain"); /* extern "C": not mangled */

    size_t size = 0;
    const void *binary = gj_program_binary(prog, &size);
    assert_true(contains_bytes(binary, size, scale_mangled));
    assert_true(contains_bytes(binary, size, "plain"));

    assert_string_equal(gj_program_source(prog), templated_source);
    assert_ptr_not_equal(gj_program_source(prog), templated_source); /* a copy */
    assert_string_equal(gj_program_log(prog), "");                   /* a clean compile says nothing */
    assert_true(gj_program_compile_ms(prog) > 0.0);
    gj_program_destroy(prog);
}

static void ptx_is_nul_terminated_text(void **state) {
    gj_context *ctx = *state;
    nvrtc_or_skip(ctx);
    gj_program *prog = compile_ok(ctx, templated_source, templated_names, 2, "compute_80");
    assert_int_equal(gj_program_kind(prog), GJ_BINARY_PTX);
    assert_string_equal(gj_program_arch(prog), "compute_80");
    size_t size = 0;
    const char *ptx = gj_program_binary(prog, &size);
    assert_non_null(ptx);
    assert_int_equal(size, strlen(ptx) + 1); /* the size counts the NUL */
    assert_non_null(strstr(ptx, ".version"));
    assert_non_null(strstr(ptx, ".target sm_80"));
    assert_non_null(strstr(ptx, ".entry " /* PTX names the kernel after ".entry" */));
    assert_non_null(strstr(ptx, gj_program_lowered_name(prog, 0)));
    assert_string_equal(gj_program_lowered_name(prog, 0), scale_mangled);
    gj_program_destroy(prog);
}

static void no_name_expressions_is_fine(void **state) {
    gj_context *ctx = *state;
    nvrtc_or_skip(ctx);
    gj_program *prog = compile_ok(ctx, templated_source, NULL, 0, "sm_80");
    assert_int_equal(gj_program_n_kernels(prog), 0);
    assert_null(gj_program_lowered_name(prog, 0));
    assert_cuda_elf(prog);
    gj_program_destroy(prog);
}

/* ------------------------------------------------------------ every arch */

/* "sm_XX" with suffix; GJ_OK with an ELF, or a refusal naming the arch. Never a
 * "compilation failed" that would send the user looking for a bug in the source. */
static int probe_variant(gj_context *ctx, int sm, const char *suffix) {
    char arch[32];
    snprintf(arch, sizeof arch, "sm_%d%s", sm, suffix);
    gj_program *prog = NULL;
    gj_status status = gj_compile_source(ctx, templated_source, templated_names, 2, arch, &prog);
    if (status == GJ_ERROR_UNSUPPORTED_ARCH) {
        assert_null(prog);
        assert_non_null(strstr(gj_context_errmsg(ctx), arch));
        return 0;
    }
    if (status != GJ_OK) {
        fail_msg("%s: %s: %s", arch, gj_status_name(status), gj_context_errmsg(ctx));
    }
    assert_int_equal(gj_program_kind(prog), GJ_BINARY_CUBIN);
    assert_string_equal(gj_program_arch(prog), arch);
    assert_cuda_elf(prog);
    gj_program_destroy(prog);
    return 1;
}

static void every_supported_arch_gives_an_elf(void **state) {
    gj_context *ctx = *state;
    gj__nvrtc *n = nvrtc_or_skip(ctx);
    char accepted[1024] = "";
    size_t used = 0;
    int n_a = 0;
    for (int i = 0; i < n->n_archs; i++) {
        assert_int_equal(probe_variant(ctx, n->archs[i], ""), 1); /* listed: must work */
        static const char *const suffixes[] = {"a", "f"};
        for (size_t s = 0; s < 2; s++) {
            if (probe_variant(ctx, n->archs[i], suffixes[s])) {
                n_a += s == 0;
                used += (size_t)snprintf(accepted + used, sizeof accepted - used, " sm_%d%s", n->archs[i], suffixes[s]);
            }
        }
    }
    print_message("%d plain archs; accepted variants:%s\n", n->n_archs, accepted);
    /* NVRTC has had sm_90a since 12.0. */
    if (gj__nvrtc_supports(n, 90)) {
        assert_true(n_a >= 1);
        assert_non_null(strstr(accepted, " sm_90a"));
    }
}

/* ------------------------------------------------------------ failures */

static void broken_source_keeps_its_log(void **state) {
    gj_context *ctx = *state;
    nvrtc_or_skip(ctx);
    static const char *const names[] = {"&broken"};
    gj_program *prog = NULL;
    assert_int_equal(gj_compile_source(ctx, broken_source, names, 1, "sm_80", &prog), GJ_ERROR_COMPILE);
    assert_non_null(prog);
    size_t size = 99;
    assert_null(gj_program_binary(prog, &size));
    assert_int_equal(size, 0);
    assert_int_equal(gj_program_kind(prog), GJ_BINARY_NONE);
    assert_int_equal(gj_program_n_kernels(prog), 0);
    assert_string_equal(gj_program_arch(prog), "sm_80");
    assert_string_equal(gj_program_source(prog), broken_source);

    const char *log = gj_program_log(prog);
    assert_non_null(strstr(log, "error"));
    assert_non_null(strstr(log, "gridjit.cu(4)"));
    assert_non_null(strstr(log, "undefined_name"));
    /* The offending line, numbered and marked, with its neighbours. */
    const char *marked = strstr(log, "4 |     x[0] = undefined_name;");
    assert_non_null(marked);
    const char *line_start = marked;
    while (line_start > log && line_start[-1] != '\n') {
        line_start--;
    }
    assert_non_null(memchr(line_start, '>', (size_t)(marked - line_start)));
    assert_non_null(strstr(log, "1 | // line 1"));
    assert_non_null(strstr(log, "7 | // line 7"));
    assert_null(strstr(log, "8 | // line 8"));

    const char *message = gj_context_errmsg(ctx);
    assert_non_null(strstr(message, "sm_80"));
    assert_non_null(strstr(message, "1 error;"));
    assert_non_null(strstr(message, "undefined_name"));
    gj_program_destroy(prog);
}

static void errors_are_counted(void **state) {
    gj_context *ctx = *state;
    nvrtc_or_skip(ctx);
    static const char source[] = "__global__ void k(float *x)\n"
                                 "{\n"
                                 "    x[0] = first_missing;\n"
                                 "    x[1] = second_missing;\n"
                                 "}\n";
    gj_program *prog = NULL;
    assert_int_equal(gj_compile_source(ctx, source, NULL, 0, "compute_80", &prog), GJ_ERROR_COMPILE);
    assert_non_null(prog);
    const char *message = gj_context_errmsg(ctx);
    assert_non_null(strstr(message, "compute_80"));
    assert_non_null(strstr(message, "2 errors;"));
    assert_non_null(strstr(message, "first_missing")); /* the first, not the second */
    assert_null(strstr(message, "second_missing"));
    assert_non_null(strstr(gj_program_log(prog), "3 |     x[0] = first_missing;"));
    assert_non_null(strstr(gj_program_log(prog), "4 |     x[1] = second_missing;"));
    gj_program_destroy(prog);
}

/* A name expression naming nothing fails the compilation (NVRTC reports it). */
static void unknown_name_expression_fails(void **state) {
    gj_context *ctx = *state;
    nvrtc_or_skip(ctx);
    static const char *const names[] = {"&does_not_exist"};
    gj_program *prog = NULL;
    gj_status status = gj_compile_source(ctx, templated_source, names, 1, "sm_80", &prog);
    assert_int_equal(status, GJ_ERROR_COMPILE);
    assert_non_null(prog);
    assert_non_null(strstr(gj_program_log(prog), "does_not_exist"));
    gj_program_destroy(prog);
}

static void warnings_keep_the_binary(void **state) {
    gj_context *ctx = *state;
    nvrtc_or_skip(ctx);
    static const char source[] = "__global__ void k(float *x)\n"
                                 "{\n"
                                 "    int unused_variable;\n"
                                 "    x[0] = 1.0f;\n"
                                 "}\n";
    gj_program *prog = compile_ok(ctx, source, NULL, 0, "sm_80");
    assert_cuda_elf(prog);
    const char *log = gj_program_log(prog);
    assert_non_null(strstr(log, "warning"));
    assert_non_null(strstr(log, "3 |     int unused_variable;"));
    gj_program_destroy(prog);
}

/* ------------------------------------------------------------ architectures */

static void malformed_archs_are_refused(void **state) {
    gj_context *ctx = *state; /* parsed before NVRTC is needed: runs without it */
    static const char *const bad[] = {"sm90",   "sm_",        "foo",     "",         "sm_9",    "sm_1234",
                                      "sm_90x", "sm_90aa",    "compute_", "SM_90",   "sm_090",  " sm_90",
                                      "sm_90 ", "compute90",  "sm_-90",  "sm_9a",    "sm_90af", "lto_90"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gj_program *prog = (gj_program *)1;
        gj_status status = gj_compile_source(ctx, templated_source, NULL, 0, bad[i], &prog);
        if (status != GJ_ERROR_INVALID_ARGUMENT) { /* a malformed value, not an arch NVRTC lacks */
            fail_msg("\"%s\": %s", bad[i], gj_status_name(status));
        }
        assert_null(prog);
        assert_non_null(strstr(gj_context_errmsg(ctx), "sm_XX"));
        assert_null(gj_compile_options_string(bad[i]));
    }
    gj_program *prog = (gj_program *)1;
    assert_int_equal(gj_compile_source(ctx, templated_source, NULL, 0, NULL, &prog), GJ_ERROR_INVALID_ARGUMENT);
    assert_null(prog);
    assert_null(gj_compile_options_string(NULL));
}

static void arch_parse_reads_every_form(void **state) {
    (void)state;
    static const struct {
        const char *text;
        int sm;
        char suffix;
        gj_binary_kind kind;
    } good[] = {
        {"sm_75", 75, 0, GJ_BINARY_CUBIN},          {"sm_90a", 90, 'a', GJ_BINARY_CUBIN},
        {"sm_100f", 100, 'f', GJ_BINARY_CUBIN},     {"sm_121", 121, 0, GJ_BINARY_CUBIN},
        {"compute_80", 80, 0, GJ_BINARY_PTX},       {"compute_90a", 90, 'a', GJ_BINARY_PTX},
        {"compute_120f", 120, 'f', GJ_BINARY_PTX},  {"sm_10", 10, 0, GJ_BINARY_CUBIN},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        gj__arch arch;
        assert_int_equal(gj__arch_parse(NULL, good[i].text, &arch), GJ_OK);
        assert_int_equal(arch.sm, good[i].sm);
        assert_int_equal(arch.suffix, good[i].suffix);
        assert_int_equal(arch.kind, good[i].kind);
        assert_string_equal(arch.name, good[i].text);
    }
}

static void unsupported_arch_lists_the_supported(void **state) {
    gj_context *ctx = *state;
    nvrtc_or_skip(ctx);
    gj_program *prog = (gj_program *)1;
    assert_int_equal(gj_compile_source(ctx, templated_source, NULL, 0, "sm_10", &prog), GJ_ERROR_UNSUPPORTED_ARCH);
    assert_null(prog);
    char message[2048]; /* copied: the next call on the context empties it */
    snprintf(message, sizeof message, "%s", gj_context_errmsg(ctx));
    assert_non_null(strstr(message, "sm_10 "));
    char *supported = NULL;
    assert_int_equal(gj_nvrtc_supported_archs(ctx, &supported), GJ_OK);
    assert_non_null(strstr(message, supported));
    gj_free(supported);
    assert_int_equal(gj_compile_source(ctx, templated_source, NULL, 0, "compute_10", &prog), GJ_ERROR_UNSUPPORTED_ARCH);
    assert_null(prog);
}

/* ------------------------------------------------------------ options */

static void options_are_stated_once(void **state) {
    (void)state;
    char *options = gj_compile_options_string("sm_90a");
    assert_non_null(options);
    assert_true(strncmp(options, "--gpu-architecture=sm_90a\n", 26) == 0);
    assert_non_null(strstr(options, "\n-std=c++17\n"));
    assert_null(strstr(options, "fast_math"));  /* results must track a double reference */
    assert_null(strstr(options, "fmad=false")); /* contraction stays on, as in tiny-cuda-nn */
    size_t lines = 0;
    for (const char *p = options; *p; p++) {
        lines += *p == '\n';
    }
    assert_int_equal(options[strlen(options) - 1], '\n');

    gj__arch arch;
    assert_int_equal(gj__arch_parse(NULL, "compute_100f", &arch), GJ_OK);
    const char *list[GJ__MAX_COMPILE_OPTIONS];
    char buffer[GJ__COMPILE_OPTIONS_BUFFER];
    /* gj_compile_options_string states a whole unit's options: split compilation. */
    assert_non_null(strstr(options, "-split-compile=2\n"));
    /* A cubin target defines GJ_CUBIN_TARGET (generated code may rely on running where it was
     * compiled for); PTX does not. */
    assert_non_null(strstr(options, "\n-DGJ_CUBIN_TARGET\n"));
    size_t n = gj__compile_options(arch.name, GJ__OPTIONS_SPLIT, list, GJ__MAX_COMPILE_OPTIONS, buffer, sizeof buffer);
    assert_int_equal(n, lines - 1);
    assert_string_equal(list[n - 1], "-split-compile=2");
    for (size_t i = 0; i < n; i++) {
        assert_null(strstr(list[i], "GJ_CUBIN_TARGET"));
    }
    /* A module program's (one kernel group) and a user source's: not split. */
    assert_int_equal(gj__compile_options(arch.name, 0, list, GJ__MAX_COMPILE_OPTIONS, buffer, sizeof buffer), lines - 2);
    assert_null(list[n]);
    assert_string_equal(list[0], "--gpu-architecture=compute_100f");
    /* Too little room is reported, not overrun. */
    assert_int_equal(gj__compile_options(arch.name, GJ__OPTIONS_SPLIT, list, n, buffer, sizeof buffer), 0);
    assert_int_equal(gj__compile_options(arch.name, 0, list, GJ__MAX_COMPILE_OPTIONS, buffer, 10), 0);
    gj_free(options);
}

/* GRIDJIT_FAST_COMPILE=min, mid or max adds NVRTC's --Ofast-compile at that level to every
 * program's options (a measuring knob; the options are part of the cache key); anything
 * else adds nothing. */
static void fast_compile_is_asked_for_by_name(void **state) {
    gj_context *ctx = *state;
    gj__arch arch;
    assert_int_equal(gj__arch_parse(NULL, "sm_90", &arch), GJ_OK);
    const char *list[GJ__MAX_COMPILE_OPTIONS];
    char buffer[GJ__COMPILE_OPTIONS_BUFFER];
    unsetenv("GRIDJIT_FAST_COMPILE");
    const unsigned flags = gj__compile_option_flags(1, 1);
    assert_int_equal(flags, GJ__OPTIONS_LINEINFO | GJ__OPTIONS_SPLIT);
    const size_t plain = gj__compile_options(arch.name, flags, list, GJ__MAX_COMPILE_OPTIONS, buffer, sizeof buffer);
    assert_true(plain > 0);
    static const char *const levels[] = {"min", "mid", "max"};
    for (int i = 0; i < 3; i++) {
        setenv("GRIDJIT_FAST_COMPILE", levels[i], 1);
        const size_t n = gj__compile_options(arch.name, gj__compile_option_flags(1, 1), list, GJ__MAX_COMPILE_OPTIONS,
                                             buffer, sizeof buffer);
        assert_int_equal(n, plain + 1);
        char want[32];
        snprintf(want, sizeof want, "--Ofast-compile=%s", levels[i]);
        assert_string_equal(list[n - 1], want);
    }
    setenv("GRIDJIT_FAST_COMPILE", "fast", 1);
    assert_int_equal(gj__compile_option_flags(0, 0), 0u);
    setenv("GRIDJIT_FAST_COMPILE", "mid", 1);
    char *stated = gj_compile_options_string("sm_90");
    assert_non_null(stated);
    assert_non_null(strstr(stated, "\n--Ofast-compile=mid\n"));
    gj_free(stated);
    unsetenv("GRIDJIT_FAST_COMPILE");
    /* NVRTC takes it (from CUDA 12.8): the same source compiles. */
    nvrtc_or_skip(ctx);
    setenv("GRIDJIT_FAST_COMPILE", "mid", 1);
    gj_program *prog = NULL;
    const gj_status status = gj_compile_source(ctx, templated_source, NULL, 0, "sm_90", &prog);
    unsetenv("GRIDJIT_FAST_COMPILE");
    if (status != GJ_OK) {
        fail_msg("%s: %s", gj_status_name(status), gj_context_errmsg(ctx));
    }
    gj_program_destroy(prog);
}

/* ------------------------------------------------------------ no NVRTC */

static void disabled_nvrtc_is_reported(void **state) {
    gj_context *ctx = *state;
    setenv("GRIDJIT_NVRTC", "off", 1);
    gj_program *prog = (gj_program *)1;
    assert_int_equal(gj_compile_source(ctx, templated_source, NULL, 0, "sm_80", &prog), GJ_ERROR_NO_NVRTC);
    assert_null(prog);
    assert_non_null(strstr(gj_context_errmsg(ctx), "GRIDJIT_NVRTC"));
    setenv("GRIDJIT_NVRTC", "/nonexistent/libnvrtc.so", 1);
    assert_int_equal(gj_compile_source(ctx, templated_source, NULL, 0, "sm_80", &prog), GJ_ERROR_NO_NVRTC);
    assert_null(prog);
    assert_non_null(strstr(gj_context_errmsg(ctx), "/nonexistent/libnvrtc.so"));
}

/* ------------------------------------------------------------ arguments */

static void null_arguments_are_refused(void **state) {
    gj_context *ctx = *state;
    gj_program *prog = (gj_program *)1;
    const char *const null_name[] = {NULL};
    const char *const empty_name[] = {""};
    assert_int_equal(gj_compile_source(NULL, templated_source, NULL, 0, "sm_80", &prog), GJ_ERROR_INVALID_ARGUMENT);
    assert_null(prog);
    prog = (gj_program *)1;
    assert_int_equal(gj_compile_source(ctx, NULL, NULL, 0, "sm_80", &prog), GJ_ERROR_INVALID_ARGUMENT);
    assert_null(prog);
    assert_int_equal(gj_compile_source(ctx, templated_source, NULL, 0, "sm_80", NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_compile_source(ctx, templated_source, NULL, 1, "sm_80", &prog), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_compile_source(ctx, templated_source, null_name, 1, "sm_80", &prog),
                     GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "name_expressions[0]"));
    assert_int_equal(gj_compile_source(ctx, templated_source, empty_name, 1, "sm_80", &prog),
                     GJ_ERROR_INVALID_ARGUMENT);
    assert_null(prog);

    prog = (gj_program *)1;
    assert_int_equal(gj_compile(NULL, NULL, NULL, "sm_80", &prog), GJ_ERROR_INVALID_ARGUMENT);
    assert_null(prog);
    assert_int_equal(gj_compile(ctx, NULL, NULL, "sm_80", &prog), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_compile(ctx, NULL, NULL, "sm_80", NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_null(ctx->nvrtc.lib); /* nothing was loaded to refuse them */

    gj_program_destroy(NULL);
    size_t size = 5;
    assert_int_equal(gj_program_kind(NULL), GJ_BINARY_NONE);
    assert_null(gj_program_binary(NULL, &size));
    assert_int_equal(size, 0);
    assert_null(gj_program_binary(NULL, NULL));
    assert_null(gj_program_arch(NULL));
    assert_int_equal(gj_program_n_kernels(NULL), 0);
    assert_null(gj_program_kernel_name(NULL, 0));
    assert_null(gj_program_lowered_name(NULL, 0));
    assert_null(gj_program_log(NULL));
    assert_null(gj_program_source(NULL));
    assert_true(gj_program_compile_ms(NULL) == 0.0);
}

static void empty_program_has_empty_log(void **state) {
    (void)state;
    gj_program *prog = gj__program_new();
    assert_non_null(prog);
    assert_string_equal(gj_program_log(prog), "");
    assert_int_equal(gj_program_kind(prog), GJ_BINARY_NONE);
    gj_program_destroy(prog);
}

/* ------------------------------------------------------------ annotation (no NVRTC) */

static const char ten_lines[] = "line one\nline two\nline three\nline four\nline five\n"
                                "line six\nline seven\nline eight\nline nine\nline ten\n";

static void annotation_shows_numbered_context(void **state) {
    (void)state;
    const char *log = "gridjit.cu(5): error: something is wrong\n"
                      "  line five\n"
                      "       ^\n"
                      "\n"
                      "1 error detected in the compilation of \"gridjit.cu\".\n";
    char *out = gj__annotate_log(log, ten_lines, "gridjit.cu");
    assert_non_null(out);
    /* The original text is all still there, in order. */
    const char *header = strstr(out, "gridjit.cu(5): error: something is wrong\n  line five\n       ^\n");
    assert_non_null(header);
    const char *summary = strstr(out, "1 error detected");
    assert_non_null(summary);
    /* Lines 2..8, the fifth marked, between the caret block and the summary. */
    const char *expected[] = {"     2 | line two\n",   "     3 | line three\n", "  >     5 | line five\n",
                              "     6 | line six\n",  "     8 | line eight\n"};
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        const char *at = strstr(out, expected[i]);
        if (!at) {
            fail_msg("missing \"%s\" in:\n%s", expected[i], out);
        }
        assert_true(at > header && at < summary);
    }
    assert_null(strstr(out, "| line one"));
    assert_null(strstr(out, "| line nine"));
    assert_null(strstr(out, ">     4"));
    gj_free(out);
}

static void annotation_clips_at_the_edges(void **state) {
    (void)state;
    char *out = gj__annotate_log("gridjit.cu(1): error: first\ngridjit.cu(10): warning #1: last", ten_lines, "gridjit.cu");
    assert_non_null(out);
    assert_non_null(strstr(out, "  >     1 | line one\n"));
    assert_non_null(strstr(out, "     4 | line four\n"));
    assert_non_null(strstr(out, "     7 | line seven\n"));
    assert_non_null(strstr(out, "  >    10 | line ten\n"));
    assert_null(strstr(out, "     0 |"));
    assert_null(strstr(out, "    11 |"));
    /* Each block keeps its own context: line 1's comes before the second header. */
    assert_true(strstr(out, "     4 | line four") < strstr(out, "gridjit.cu(10)"));
    /* The last log line had no newline; the context still starts on a line of its own. */
    assert_non_null(strstr(out, "last\n"));
    gj_free(out);
}

static void annotation_ignores_what_it_cannot_place(void **state) {
    (void)state;
    /* A line past the end, another file's line, an indented echo, plain text. */
    const char *log = "gridjit.cu(99): error: past the end\n"
                      "other.cuh(3): error: in another file\n"
                      "    foo(3): error: indented, so NVRTC's echo of source\n"
                      "Remark: nothing to see\n";
    char *out = gj__annotate_log(log, ten_lines, "gridjit.cu");
    assert_non_null(out);
    assert_string_equal(out, log);
    gj_free(out);

    out = gj__annotate_log(NULL, NULL, "gridjit.cu");
    assert_non_null(out);
    assert_string_equal(out, "");
    gj_free(out);
    out = gj__annotate_log("gridjit.cu(2): error: x\n", NULL, "gridjit.cu");
    assert_string_equal(out, "gridjit.cu(2): error: x\n");
    gj_free(out);
    out = gj__annotate_log("gridjit.cu(2): error: x\n", "", "gridjit.cu");
    assert_string_equal(out, "gridjit.cu(2): error: x\n");
    gj_free(out);
}

static void annotation_drops_carriage_returns(void **state) {
    (void)state;
    char *out = gj__annotate_log("gridjit.cu(2): error: x\n", "a\r\nb\r\nc", "gridjit.cu");
    assert_non_null(out);
    assert_non_null(strstr(out, "     1 | a\n"));
    assert_non_null(strstr(out, "  >     2 | b\n"));
    assert_non_null(strstr(out, "     3 | c\n"));
    assert_null(strchr(out, '\r'));
    gj_free(out);
}

int main(void) {
    const char *env = getenv("GRIDJIT_NVRTC");
    original_nvrtc_env = env ? strdup(env) : NULL;
#define T(name) cmocka_unit_test_setup_teardown(name, context_setup, context_teardown)
    const struct CMUnitTest tests[] = {
        T(cubin_holds_the_lowered_names),
        T(ptx_is_nul_terminated_text),
        T(no_name_expressions_is_fine),
        T(every_supported_arch_gives_an_elf),
        T(broken_source_keeps_its_log),
        T(errors_are_counted),
        T(unknown_name_expression_fails),
        T(warnings_keep_the_binary),
        T(malformed_archs_are_refused),
        T(arch_parse_reads_every_form),
        T(unsupported_arch_lists_the_supported),
        T(options_are_stated_once),
        T(fast_compile_is_asked_for_by_name),
        T(disabled_nvrtc_is_reported),
        T(null_arguments_are_refused),
        T(empty_program_has_empty_log),
        T(annotation_shows_numbered_context),
        T(annotation_clips_at_the_edges),
        T(annotation_ignores_what_it_cannot_place),
        T(annotation_drops_carriage_returns),
    };
#undef T
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    free(original_nvrtc_env);
    return failed;
}
