/* Fuzz target: the command-line parsing of `gridjit info`, `gridjit dump` and
 * `gridjit eval`, driven in-process through their entry points (tools/cli.h) with an argv
 * built from the input; getopt is reset before each call as tools/gridjit.c does.
 *
 * Input: a byte choosing the command (info, dump, eval), then the arguments, separated
 * by NUL bytes (at most 24, each under 1 KiB). Arguments with a '/' are refused unless
 * they are inline JSON, so that every file name is relative to the working directory
 * (the harness never reads or writes outside it; GRIDJIT_DRIVER=off keeps eval off the
 * GPU, so it never writes).
 *
 * Oracle (docs/cli.md): the exit code is 0, 1 or 2; a refusal (1, 2) prints nothing on
 * stdout and "gridjit CMD: ..." on stderr, a usage error (2) also the pointer to --help;
 * a success prints something on stdout. */
#include "fuzz_common.h"

#include "cli.h"
#include "cli_common.h"
#include "gridjit.h"

#include <ctype.h>

#define MAX_ARGS 24

static const char *const COMMANDS[3] = {"info", "dump", "eval"};
static int (*const ENTRY[3])(int, char **) = {gj_cli_info, gj_cli_dump, gj_cli_eval};

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    gjf_offline();
    return 0;
}

static int looks_like_json(const char *arg) {
    while (isspace((unsigned char)*arg)) {
        ++arg;
    }
    return *arg == '{' || *arg == '[';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 8192) {
        return 0;
    }
    const unsigned command = data[0] % 3;
    char *copy = malloc(size); /* the arguments, split on their NULs, plus a final NUL */
    if (!copy) {
        abort();
    }
    memcpy(copy, data + 1, size - 1);
    copy[size - 1] = '\0';

    char *argv[MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = (char *)COMMANDS[command];
    size_t pos = 0;
    while (pos < size - 1) {
        char *arg = copy + pos;
        const size_t len = strlen(arg);
        if (argc > MAX_ARGS || len >= 1024 || (strchr(arg, '/') && !looks_like_json(arg))) {
            free(copy);
            return 0;
        }
        argv[argc++] = arg;
        pos += len + 1;
    }
    argv[argc] = NULL;

    gjf_capture cap;
    gjf_capture_begin(&cap);
    gj_cli_getopt_reset();
    const int rc = ENTRY[command](argc, argv);
    gjf_capture_end(&cap);

    char prefix[32];
    snprintf(prefix, sizeof prefix, "gridjit %s: ", COMMANDS[command]);
    GJF_CHECK(rc == 0 || rc == 1 || rc == 2, "%s: exit code %d", COMMANDS[command], rc);
    if (rc == 0) {
        GJF_CHECK(cap.out_size > 0, "%s: success without output", COMMANDS[command]);
    } else {
        GJF_CHECK(cap.out_size == 0, "%s: %zu bytes on stdout after a refusal (exit %d)", COMMANDS[command],
                  cap.out_size, rc);
        GJF_CHECK(strstr(cap.err, prefix) != NULL, "%s: exit %d without a message; stderr: %s", COMMANDS[command], rc,
                  cap.err);
    }
    if (rc == 2) {
        char help[64];
        snprintf(help, sizeof help, "Try 'gridjit %s --help'", COMMANDS[command]);
        GJF_CHECK(strstr(cap.err, help) != NULL, "%s: usage error without the pointer to --help: %s",
                  COMMANDS[command], cap.err);
    }
    gjf_capture_free(&cap);
    free(copy);
    return 0;
}
