/* The library links and reports its version. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "gridjit.h"

static void version_matches_header(void **state) {
    (void)state;
    assert_int_equal(gj_version_number(), GJ_VERSION_NUMBER);
    assert_string_equal(gj_version_string(), GJ_VERSION_STRING);
}

static void status_names_come_from_the_map(void **state) {
    (void)state;
    assert_string_equal(gj_status_name(GJ_ERROR_INVALID_CONFIG), "GJ_ERROR_INVALID_CONFIG");
    assert_string_equal(gj_status_name((gj_status)999), "GJ_UNKNOWN_STATUS");
    assert_string_equal(gj_status_message(GJ_OK), "success");
}

static void destroy_null_is_a_no_op(void **state) {
    (void)state;
    gj_context_destroy(NULL);
    gj_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(version_matches_header),
        cmocka_unit_test(status_names_come_from_the_map),
        cmocka_unit_test(destroy_null_is_a_no_op),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
