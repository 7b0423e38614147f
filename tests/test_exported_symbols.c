/* Every symbol the library exports carries the gj_ prefix (curl's test1167 habit). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs nm on path and checks every defined global symbol of the listed kinds. Returns the count. */
static int check_symbols(const char *nm_args, const char *path, const char *prefix) {
    char command[4096];
    snprintf(command, sizeof command, "nm %s '%s' 2>&1", nm_args, path);
    FILE *pipe = popen(command, "r");
    assert_non_null(pipe);
    char line[1024];
    int n = 0, bad = 0;
    while (fgets(line, sizeof line, pipe)) {
        char address[64], type[8], name[900];
        if (sscanf(line, "%63s %7s %899s", address, type, name) != 3) {
            continue;
        }
        /* Upper-case types are global definitions (T text, D data, B bss, R read-only). */
        if (!strchr("TDBRVW", type[0])) {
            continue;
        }
        if (strncmp(name, "__odr_asan", 10) == 0 || strncmp(name, "__asan", 6) == 0) {
            continue; /* AddressSanitizer's own markers (GRIDJIT_SANITIZE builds) */
        }
        ++n;
        if (strncmp(name, prefix, strlen(prefix)) != 0) {
            printf("symbol without the %s prefix: %s (%s)\n", prefix, name, type);
            ++bad;
        }
    }
    assert_int_equal(pclose(pipe), 0);
    assert_int_equal(bad, 0);
    return n;
}

static void shared_library_exports_only_gj_names(void **state) {
    (void)state;
    const char *lib = getenv("GRIDJIT_LIB");
    assert_non_null(lib);
    const int n = check_symbols("-D --defined-only", lib, "gj_");
    /* The public API is there (and visibility did not hide it all). */
    assert_true(n > 20);
}

static void static_library_globals_are_prefixed(void **state) {
    (void)state;
    const char *lib = getenv("GRIDJIT_STATIC_LIB");
    assert_non_null(lib);
    /* Internal cross-file names use gj__, public ones gj_: both start with "gj_". */
    assert_true(check_symbols("--defined-only -g", lib, "gj_") > 20);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shared_library_exports_only_gj_names),
        cmocka_unit_test(static_library_globals_are_prefixed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
