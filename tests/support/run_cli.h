/* Runs the gridjit CLI ($GRIDJIT_CLI) as a child process and captures its stdout,
 * stderr and exit status separately. */
#ifndef GJ_TEST_RUN_CLI_H
#define GJ_TEST_RUN_CLI_H

#include <stddef.h>

#include "test_env.h" /* gj_test_read_file */

typedef struct gj_cli_result {
    int status;      /* exit code; 128 + N when killed by signal N; -1 if it could not run */
    char *out;       /* stdout, NUL-terminated (may contain other NULs: see out_len) */
    size_t out_len;
    char *err;       /* stderr, NUL-terminated */
    size_t err_len;
    /* 1: run a second time because LeakSanitizer's tracer died in the first run (run_cli.c).
     * What the first run did stays done: a test of a command with side effects (a cache
     * filled, a file written) expects what a second run of it prints. */
    int retried;
} gj_cli_result;

/* The CLI binary from $GRIDJIT_CLI, or NULL when it is not set. */
const char *gj_test_cli_path(void);

/*
 * Runs the CLI with args (NULL-terminated, not including the program name) in
 * directory cwd (NULL: the current one), stdin from /dev/null. Returns 0 when the
 * child ran (whatever its exit status), -1 on a fork/pipe failure. Free with
 * gj_cli_result_free().
 */
int gj_test_run_cli(const char *cwd, const char *const *args, gj_cli_result *result);
/* The same inside a CMocka test, which fails when the child could not run. */
void gj_test_run_cli_checked(const char *cwd, const char *const *args, gj_cli_result *result);
void gj_cli_result_free(gj_cli_result *result);

/* A fresh directory for a test: $GRIDJIT_TEST_TMP/name (else /tmp/gridjit-test-PID/name),
 * created (with parents) and emptied of plain files. malloc()ed path; NULL on failure. */
char *gj_test_scratch_dir(const char *name);


#endif
