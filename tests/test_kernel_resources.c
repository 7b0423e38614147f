/* What ptxas gives the encoding kernels that have no room to spare: the one-level forward
 * and the point-major (staging) forwards and backward keep every value in registers, with
 * no stack frame and no spills. A change to the staging code once put C3's stage on the
 * stack (an 8-byte frame a thread) and made its point-major forward 11 % slower on an H100
 * while every CPU test passed (docs/benchmarks.md, "Staging in 8-byte pairs measured and
 * dropped"); this test compiles those module programs as the runtime does, with ptxas's
 * report (-v) added, and reads it. Needs NVRTC only (skipped without it). */
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
#include "codegen/options.h"
#include "compile/arch.h"
#include "compile/encoding_unit.h"
#include "test_env.h"

/* C1 (2 fp16 features a level: the point-major forward walks its group's levels), C3 (4: the
 * group split one level a thread), S2 (8 fp16 features, four levels) and S3 (fp32), as
 * docs/benchmarks.md names them. */
static const struct {
    const char *name;
    const char *json;
} configs[] = {
    {"C1", "{\"otype\":\"HashGrid\",\"n_levels\":16,\"n_features_per_level\":2,\"log2_hashmap_size\":19,"
           "\"base_resolution\":16,\"per_level_scale\":2.0}"},
    {"C3", "{\"otype\":\"HashGrid\",\"n_levels\":8,\"n_features_per_level\":4,\"log2_hashmap_size\":19,"
           "\"base_resolution\":16,\"per_level_scale\":2.0}"},
    {"S2", "{\"otype\":\"HashGrid\",\"n_levels\":4,\"n_features_per_level\":8}"},
    {"S3", "{\"otype\":\"HashGrid\",\"n_features_per_level\":4,\"log2_hashmap_size\":18,\"precision\":\"fp32\"}"},
};

/* The programs checked. The backward with dL/dx is not among them: under its register
 * bound ptxas spills a few bytes in some configurations (C1's coarse kernels, S3's rows). */
static const gj__part parts[] = {GJ__PART_FORWARD, GJ__PART_FORWARD_ROWS, GJ__PART_FORWARD_DYDX_ROWS,
                                 GJ__PART_BACKWARD_ROWS};

/* ptxas's report, function by function: "Function properties for NAME", then a line "N bytes
 * stack frame, S bytes spill stores, L bytes spill loads". */
typedef struct report {
    int functions;   /* functions in the report */
    int offending;   /* of which with a stack frame or spills, or whose line did not read */
    char first[200]; /* the first of those, and what it has */
} report;

static report read_report(const char *log) {
    report r = {0, 0, ""};
    const char *p = log;
    while ((p = strstr(p, "Function properties for ")) != NULL) {
        p += strlen("Function properties for ");
        const int name_len = (int)strcspn(p, "\r\n");
        r.functions++;
        unsigned stack = 0, stores = 0, loads = 0;
        const char *line = strstr(p, "bytes stack frame");
        const char *next = strstr(p, "Function properties for ");
        int read = 0;
        if (line && (!next || line < next)) { /* this function's own line */
            while (line > p && line[-1] != '\n') {
                line--;
            }
            read = sscanf(line + strcspn(line, "0123456789"),
                          "%u bytes stack frame, %u bytes spill stores, %u bytes spill loads", &stack, &stores,
                          &loads) == 3;
        }
        if ((!read || stack || stores || loads) && r.offending++ == 0) { /* the first offender is named */
            if (!read) {
                snprintf(r.first, sizeof r.first, "%.*s: ptxas's line for it did not read", name_len, p);
            } else {
                snprintf(r.first, sizeof r.first,
                         "%.*s: a %u-byte stack frame, %u bytes of spill stores, %u of spill loads", name_len, p,
                         stack, stores, loads);
            }
        }
    }
    return r;
}

static void staging_kernels_keep_everything_in_registers(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) { /* it has printed why */
        skip();
    }
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    gj_context_set_log(ctx, NULL, NULL);
    gj__nvrtc *nvrtc = NULL;
    assert_int_equal(gj__nvrtc_get(&ctx->nvrtc, &ctx->diag, &nvrtc), GJ_OK);
    if (!gj__nvrtc_supports(nvrtc, 90)) {
        gj_context_destroy(ctx);
        print_message("SKIPPED: this NVRTC does not compile for sm_90\n");
        skip();
    }
    gj__arch arch;
    assert_int_equal(gj__arch_parse(&ctx->diag, "sm_90", &arch), GJ_OK);
    gj_codegen_options opts;
    assert_int_equal(gj__codegen_options_resolve(&ctx->diag, NULL, &opts), GJ_OK);
    static const char *const verbose[] = {"--ptxas-options=-v"};

    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; ++c) {
        gj_encoding *enc = NULL;
        assert_int_equal(gj_encoding_create(ctx, configs[c].json, 3, &enc), GJ_OK);
        for (size_t k = 0; k < sizeof parts / sizeof parts[0]; ++k) {
            char what[64];
            snprintf(what, sizeof what, "%s %s", configs[c].name, gj__part_name(parts[k]));
            assert_true(gj__part_present(parts[k], &opts));
            gj__encoding_unit unit;
            assert_int_equal(gj__encoding_unit_make(&ctx->compiler, enc, &opts, parts[k], &arch, 0, &unit), GJ_OK);
            unit.request.extra_options = verbose;
            unit.request.n_extra_options = 1;
            gj_program *prog = NULL;
            const gj_status status = gj__compile(&ctx->compiler, &unit.request, &prog);
            if (status != GJ_OK) {
                fail_msg("%s: %s: %s", what, gj_status_name(status), gj_context_errmsg(ctx));
            }
            const report r = read_report(gj_program_log(prog));
            if (r.offending) {
                fail_msg("%s: %s", what, r.first);
            }
            /* Every kernel of the program is in the report (a report not read is no check). */
            if (r.functions == 0 || r.functions < (int)gj_program_n_kernels(prog)) {
                fail_msg("%s: ptxas reported %d functions for %zu kernels:\n%s", what, r.functions,
                         gj_program_n_kernels(prog), gj_program_log(prog));
            }
            print_message("%s: %d functions, no stack frame, no spills\n", what, r.functions);
            gj_program_destroy(prog);
            gj__encoding_unit_free(&unit);
        }
        gj_encoding_destroy(enc);
    }
    gj_context_destroy(ctx);
}

/* The reader itself: a clean report passes, a frame, a spill or an unreadable line is named. */
static void report_reader_names_stack_and_spills(void **state) {
    (void)state;
    static const char clean[] = "ptxas info    : Function properties for k\n"
                                "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                                "ptxas info    : Used 46 registers, used 1 barriers\n";
    report r = read_report(clean);
    assert_int_equal(r.functions, 1);
    assert_int_equal(r.offending, 0);

    r = read_report("no report");
    assert_int_equal(r.functions, 0);

    static const char framed[] = "ptxas info    : Function properties for ok\n"
                                 "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                                 "ptxas info    : Function properties for framed\n"
                                 "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 0 bytes spill loads\n"
                                 "ptxas info    : Function properties for garbled\n"
                                 "ptxas         .     something else\n";
    r = read_report(framed);
    assert_int_equal(r.functions, 3);
    assert_int_equal(r.offending, 2);
    assert_string_equal(r.first, "framed: a 8-byte stack frame, 4 bytes of spill stores, 0 of spill loads");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(report_reader_names_stack_and_spills),
        cmocka_unit_test(staging_kernels_keep_everything_in_registers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
