/* Runs the gridjit CLI as a child process, capturing stdout and stderr separately. */
#include "run_cli.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct capture {
    char *data;
    size_t len, cap;
} capture;

const char *gj_test_cli_path(void) {
    const char *path = getenv("GRIDJIT_CLI");
    return path && path[0] ? path : NULL;
}

/* Reads what is available on fd into c; returns 0 at end of file, 1 for more, -1 on error. */
static int drain(int fd, capture *c) {
    if (c->cap - c->len < 4097) {
        size_t cap = c->cap ? c->cap * 2 : 65536;
        char *data = realloc(c->data, cap);
        if (!data) {
            return -1;
        }
        c->data = data;
        c->cap = cap;
    }
    ssize_t n = read(fd, c->data + c->len, c->cap - c->len - 1);
    if (n < 0) {
        return errno == EINTR || errno == EAGAIN ? 1 : -1;
    }
    c->len += (size_t)n;
    return n > 0;
}

static void finish(capture *c) {
    if (!c->data) {
        c->data = calloc(1, 1);
    }
    if (c->data) {
        c->data[c->len] = '\0';
    }
}

static void exec_child(const char *cwd, const char *const *args, int out_fd, int err_fd) {
    const char *cli = gj_test_cli_path();
    size_t n = 0;
    while (args[n]) {
        ++n;
    }
    char **argv = calloc(n + 2, sizeof *argv);
    int null_fd = open("/dev/null", O_RDONLY);
    if (!argv || !cli || (cwd && chdir(cwd) != 0) || null_fd < 0 || dup2(null_fd, 0) < 0 ||
        dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) {
        _exit(126);
    }
    argv[0] = (char *)cli;
    for (size_t i = 0; i < n; ++i) {
        argv[i + 1] = (char *)args[i];
    }
    execv(cli, argv);
    _exit(127);
}

/* Reads both pipes until both are closed (polling, so a full pipe never blocks the child). */
static int collect(int out_fd, int err_fd, capture *out, capture *err) {
    struct pollfd fds[2] = {{.fd = out_fd, .events = POLLIN}, {.fd = err_fd, .events = POLLIN}};
    capture *captures[2] = {out, err};
    int open_count = 2, rc = 0;
    while (open_count > 0) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                int more = drain(fds[i].fd, captures[i]);
                if (more <= 0) {
                    rc = more < 0 ? -1 : rc;
                    fds[i].fd = -1;
                    --open_count;
                }
            }
        }
    }
    return rc;
}

static int run_once(const char *cwd, const char *const *args, gj_cli_result *result) {
    memset(result, 0, sizeof *result);
    result->status = -1;
    int out_pipe[2], err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0) {
        return -1;
    }
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
        close(out_pipe[0]);
        close(out_pipe[1]);
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        exec_child(cwd, args, out_pipe[1], err_pipe[1]);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    capture out = {0}, err = {0};
    int rc = pid < 0 ? -1 : collect(out_pipe[0], err_pipe[0], &out, &err);
    close(out_pipe[0]);
    close(err_pipe[0]);
    int wstatus = 0;
    if (pid > 0 && waitpid(pid, &wstatus, 0) == pid) {
        result->status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    } else {
        rc = -1;
    }
    finish(&out);
    finish(&err);
    result->out = out.data;
    result->out_len = out.len;
    result->err = err.data;
    result->err_len = err.len;
    return rc;
}

/* LeakSanitizer checks a sanitized CLI at exit by stopping its threads from a tracer
 * thread; under load that tracer itself sometimes dies (LSan prints "Tracer caught signal"
 * and "LeakSanitizer has encountered a fatal error", and the exit status is 1) although the
 * program did nothing wrong: a failure of the sanitizer's runtime, not a finding. Such a
 * run is made once more (result->retried); a leak report ("detected memory leaks") is never
 * retried. */
static int sanitizer_runtime_failed(const gj_cli_result *result) {
    return result->status != 0 && result->err && strstr(result->err, "LeakSanitizer has encountered a fatal error") &&
           !strstr(result->err, "detected memory leaks");
}

int gj_test_run_cli(const char *cwd, const char *const *args, gj_cli_result *result) {
    int rc = run_once(cwd, args, result);
    if (rc == 0 && sanitizer_runtime_failed(result)) {
        fprintf(stderr, "run_cli: LeakSanitizer's tracer failed in the child; running it again:\n%s", result->err);
        gj_cli_result_free(result);
        rc = run_once(cwd, args, result);
        result->retried = 1;
    }
    return rc;
}

void gj_test_run_cli_checked(const char *cwd, const char *const *args, gj_cli_result *result) {
    assert_int_equal(gj_test_run_cli(cwd, args, result), 0);
    assert_int_not_equal(result->status, -1);
}

void gj_cli_result_free(gj_cli_result *result) {
    free(result->out);
    free(result->err);
    memset(result, 0, sizeof *result);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    if (ftw->level > 0) {
        remove(path);
    }
    return 0;
}

static int make_dirs(char *path) {
    for (char *p = path + 1; *p; ++p) {
        if (*p == '/') {
            *p = '\0';
            int failed = mkdir(path, 0777) != 0 && errno != EEXIST;
            *p = '/';
            if (failed) {
                return -1;
            }
        }
    }
    return mkdir(path, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

char *gj_test_scratch_dir(const char *name) {
    const char *root = getenv("GRIDJIT_TEST_TMP");
    char fallback[64];
    if (!root || !root[0]) {
        snprintf(fallback, sizeof fallback, "/tmp/gridjit-test-%ld", (long)getpid());
        root = fallback;
    }
    size_t size = strlen(root) + strlen(name) + 2;
    char *path = malloc(size);
    if (!path) {
        return NULL;
    }
    snprintf(path, size, "%s/%s", root, name);
    if (make_dirs(path) != 0) {
        free(path);
        return NULL;
    }
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return path;
}

