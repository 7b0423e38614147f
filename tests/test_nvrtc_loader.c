/* Loading libnvrtc at run time: search order, GRIDJIT_NVRTC, failures and messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridjit.h"
#include "api/context.h"

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
    *state = ctx;
    return 0;
}

static int context_teardown(void **state) {
    gj_context_destroy(*state);
    restore_nvrtc_env();
    return 0;
}

/* The loaded NVRTC, or a visible skip when this machine has none. */
static gj__nvrtc *nvrtc_or_skip(gj_context *ctx) {
    gj__nvrtc *n = NULL;
    gj_status status = gj__nvrtc_get(&ctx->nvrtc, &ctx->diag, &n);
    if (status == GJ_ERROR_NO_NVRTC) {
        print_message("SKIPPED: NVRTC cannot be loaded here: %s\n", gj_context_errmsg(ctx));
        skip();
    }
    assert_int_equal(status, GJ_OK);
    assert_non_null(n);
    return n;
}

/* The absolute path of the file that defines address (dladdr). */
static void path_of(const void *address, char *path, size_t size) {
    Dl_info info;
    assert_true(dladdr(address, &info) != 0);
    assert_non_null(info.dli_fname);
    assert_true(info.dli_fname[0] == '/');
    snprintf(path, size, "%s", info.dli_fname);
}

/* ------------------------------------------------------------ loading */

static void loads_once_per_context(void **state) {
    gj_context *ctx = *state;
    gj__nvrtc *first = nvrtc_or_skip(ctx);
    gj__nvrtc *second = NULL;
    assert_int_equal(gj__nvrtc_get(&ctx->nvrtc, &ctx->diag, &second), GJ_OK);
    assert_ptr_equal(first, second);
    assert_ptr_equal(ctx->nvrtc.lib, first);
    assert_non_null(first->handle);
    assert_non_null(first->CompileProgram);
    assert_non_null(first->GetLoweredName);
}

/* The soname that was opened names the major version that nvrtcVersion reports. */
static void version_matches_the_soname(void **state) {
    gj_context *ctx = *state;
    gj__nvrtc *n = nvrtc_or_skip(ctx);
    int major = 0, minor = -1;
    assert_int_equal(gj_nvrtc_version(ctx, &major, &minor), GJ_OK);
    assert_int_equal(major, n->major);
    assert_int_equal(minor, n->minor);
    assert_true(major >= 11);
    assert_true(minor >= 0);
    const char *dot = strstr(n->path, ".so.");
    if (dot) {
        assert_int_equal(atoi(dot + 4), major);
    }
    print_message("NVRTC %d.%d from %s\n", major, minor, n->path);
}

static void supported_archs_are_listed_in_order(void **state) {
    gj_context *ctx = *state;
    gj__nvrtc *n = nvrtc_or_skip(ctx);
    char *archs = NULL;
    assert_int_equal(gj_nvrtc_supported_archs(ctx, &archs), GJ_OK);
    assert_non_null(archs);
    /* "sm_75 sm_80 ...": one token per entry of NVRTC's list, ascending, no trailing space. */
    int count = 0, previous = 0;
    for (const char *p = archs; *p;) {
        int sm = 0, used = 0;
        assert_int_equal(sscanf(p, "sm_%d%n", &sm, &used), 1);
        assert_true(sm > previous);
        assert_int_equal(sm, n->archs[count]);
        assert_true(gj__nvrtc_supports(n, sm));
        previous = sm;
        count++;
        p += used;
        if (*p) {
            assert_int_equal(*p, ' ');
            p++;
            assert_true(*p != '\0');
        }
    }
    assert_int_equal(count, n->n_archs);
    /* Every NVRTC from 12.0 on targets Ampere and Hopper; none targets sm_10. */
    assert_non_null(strstr(archs, "sm_80"));
    assert_non_null(strstr(archs, "sm_90"));
    assert_false(gj__nvrtc_supports(n, 10));
    print_message("supported: %s\n", archs);
    gj_free(archs);
}

/* ------------------------------------------------------------ GRIDJIT_NVRTC */

static void off_behaves_as_absent(void **state) {
    gj_context *ctx = *state;
    static const char *const values[] = {"off", "0"};
    for (size_t i = 0; i < 2; i++) {
        setenv("GRIDJIT_NVRTC", values[i], 1);
        gj__nvrtc *n = (gj__nvrtc *)1;
        assert_int_equal(gj__nvrtc_get(&ctx->nvrtc, &ctx->diag, &n), GJ_ERROR_NO_NVRTC);
        assert_null(n);
        assert_null(ctx->nvrtc.lib);
        assert_non_null(strstr(gj_context_errmsg(ctx), "GRIDJIT_NVRTC"));
        int major = -1, minor = -1;
        assert_int_equal(gj_nvrtc_version(ctx, &major, &minor), GJ_ERROR_NO_NVRTC);
        char *archs = (char *)1;
        assert_int_equal(gj_nvrtc_supported_archs(ctx, &archs), GJ_ERROR_NO_NVRTC);
        assert_null(archs);
    }
}

static void missing_path_is_named(void **state) {
    gj_context *ctx = *state;
    setenv("GRIDJIT_NVRTC", "/nonexistent/libnvrtc.so", 1);
    gj__nvrtc *n = NULL;
    assert_int_equal(gj__nvrtc_get(&ctx->nvrtc, &ctx->diag, &n), GJ_ERROR_NO_NVRTC);
    assert_null(n);
    const char *message = gj_context_errmsg(ctx);
    assert_non_null(strstr(message, "/nonexistent/libnvrtc.so"));
    /* dlerror()'s reason is part of it. */
    assert_non_null(strstr(message, "No such file"));
}

/* A failure is not remembered: once the environment allows it, the same context loads. */
static void a_failed_load_is_retried(void **state) {
    gj_context *ctx = *state;
    setenv("GRIDJIT_NVRTC", "off", 1);
    gj__nvrtc *n = NULL;
    assert_int_equal(gj__nvrtc_get(&ctx->nvrtc, &ctx->diag, &n), GJ_ERROR_NO_NVRTC);
    restore_nvrtc_env();
    nvrtc_or_skip(ctx);
}

static void absolute_path_is_used(void **state) {
    gj_context *ctx = *state;
    gj__nvrtc *found = nvrtc_or_skip(ctx);
    char path[4096];
    path_of((const void *)found->Version, path, sizeof path);

    gj_context *other = NULL;
    assert_int_equal(gj_context_create(&other), GJ_OK);
    setenv("GRIDJIT_NVRTC", path, 1);
    gj__nvrtc *n = NULL;
    assert_int_equal(gj__nvrtc_get(&other->nvrtc, &other->diag, &n), GJ_OK);
    assert_string_equal(n->path, path);
    assert_int_equal(n->major, found->major);
    assert_int_equal(n->minor, found->minor);
    gj_context_destroy(other);
}

/* A library that loads but is not NVRTC: the first missing entry point is named. */
static void a_library_without_the_symbols_is_refused(void **state) {
    gj_context *ctx = *state;
    char path[4096];
    path_of((const void *)&printf, path, sizeof path); /* the C library */
    setenv("GRIDJIT_NVRTC", path, 1);
    gj__nvrtc *n = NULL;
    assert_int_equal(gj__nvrtc_get(&ctx->nvrtc, &ctx->diag, &n), GJ_ERROR_NO_NVRTC);
    assert_null(n);
    assert_null(ctx->nvrtc.lib);
    const char *message = gj_context_errmsg(ctx);
    assert_non_null(strstr(message, path));
    assert_non_null(strstr(message, "nvrtcGetErrorString"));
}

/* ------------------------------------------------------------ arguments */

static void null_arguments_are_refused(void **state) {
    gj_context *ctx = *state;
    int major = 0, minor = 0;
    char *archs = NULL;
    assert_int_equal(gj_nvrtc_version(NULL, &major, &minor), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_nvrtc_version(ctx, NULL, &minor), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_nvrtc_version(ctx, &major, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_nvrtc_supported_archs(NULL, &archs), GJ_ERROR_INVALID_ARGUMENT);
    assert_null(archs);
    assert_int_equal(gj_nvrtc_supported_archs(ctx, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_null(ctx->nvrtc.lib); /* refusing arguments loads nothing */
}

int main(void) {
    const char *env = getenv("GRIDJIT_NVRTC");
    original_nvrtc_env = env ? strdup(env) : NULL;
#define T(name) cmocka_unit_test_setup_teardown(name, context_setup, context_teardown)
    const struct CMUnitTest tests[] = {
        T(loads_once_per_context),
        T(version_matches_the_soname),
        T(supported_archs_are_listed_in_order),
        T(off_behaves_as_absent),
        T(missing_path_is_named),
        T(a_failed_load_is_retried),
        T(absolute_path_is_used),
        T(a_library_without_the_symbols_is_refused),
        T(null_arguments_are_refused),
    };
#undef T
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    free(original_nvrtc_env);
    return failed;
}
