/* Publication (issue 4 §3, §5): concurrent writers of one key, readers during writes,
 * a full disk, stale temporary files, removal only of the same file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache_support.h"

#define N_PROCESSES 8

/* Forks n children that block until release_children(); each runs child(i) and exits
 * with its return value. */
typedef int (*child_fn)(int index, const char *dir);

static void run_children(int n, child_fn child, const char *dir) {
    int gate[2];
    assert_int_equal(pipe(gate), 0);
    pid_t pids[N_PROCESSES];
    for (int i = 0; i < n; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            close(gate[1]);
            char c;
            while (read(gate[0], &c, 1) > 0) {
            }
            _exit(child(i, dir));
        }
    }
    close(gate[0]);
    close(gate[1]); /* all children start now */
    for (int i = 0; i < n; i++) {
        int status = 0;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) != 0) {
            fail_msg("child %d failed with %d", i, WEXITSTATUS(status));
        }
    }
}

/* Checks the one entry in dir completely. */
static void assert_one_valid_entry(const char *dir) {
    assert_int_equal(gjt_count_prefix(dir, ".tmp-"), 0);
    char *path = gjt_only_file(dir, ".gjc");
    assert_non_null(path);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    int fd = open(path, O_RDONLY);
    gj__entry e;
    assert_int_equal(gj__entry_read(fd, (uint64_t)st.st_size, &e, 1), GJ__ENTRY_OK);
    gj__entry_free(&e);
    close(fd);
    free(path);
}

static int compile_child(int index, const char *dir) {
    (void)index;
    gj_context *ctx = gjt_context(dir, NULL);
    gjt_request r;
    gjt_request_init(&r, 0, "sm_80", GJ_BINARY_CUBIN);
    gjt_compiler compiler = {.request = &r, .payload_size = 256 * 1024};
    gj_program *prog = NULL;
    if (gj__cache_compile(ctx, &r.req, gjt_compile, &compiler, &prog) != GJ_OK) {
        return 2;
    }
    uint8_t *expected = gjt_expected_binary(&r, compiler.payload_size);
    int ok = prog->binary_size == compiler.payload_size && memcmp(prog->binary, expected, prog->binary_size) == 0;
    gj_cache_stats stats;
    gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &stats);
    free(expected);
    gj_program_destroy(prog);
    gj_context_destroy(ctx);
    return !ok ? 3 : stats.corrupt ? 4 : 0;
}

static void eight_processes_compile_one_key(void **state) {
    (void)state;
    char *dir = gjt_scratch("eight");
    run_children(N_PROCESSES, compile_child, dir);
    assert_one_valid_entry(dir);
    free(dir);
}

/* Every child stores the key over and over while looking it up: a reader must never
 * meet a partial file (no corrupt entry is ever counted). */
static int hammer_child(int index, const char *dir) {
    gj_context *ctx = gjt_context(dir, NULL);
    gjt_request r;
    gjt_request_init(&r, 1, "sm_80", GJ_BINARY_CUBIN);
    gjt_compiler compiler = {.request = &r, .payload_size = 128 * 1024};
    gj_program *made = NULL;
    gjt_compile(ctx, &compiler, &made);
    gj__cache_key key;
    gj__cache_key_compute(&r.req, &key);
    gj__cache_ready(ctx);
    int result = 0;
    for (int i = 0; i < 20 && !result; i++) {
        if ((i + index) % 2 == 0) {
            gj__cache_store(ctx, &r.req, &key, made);
        } else {
            gj_program *found = NULL;
            gj_status s = gj__cache_lookup(ctx, &r.req, &key, &found);
            if (s == GJ_OK && memcmp(found->binary, made->binary, made->binary_size) != 0) {
                result = 5;
            } else if (s != GJ_OK && s != GJ_ERROR_NOT_FOUND) {
                result = 6;
            }
            gj_program_destroy(found);
        }
    }
    gj_cache_stats stats;
    gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &stats);
    if (!result && (stats.corrupt || ctx->cache->write_failed)) {
        result = 7;
    }
    gj_program_destroy(made);
    gj_context_destroy(ctx);
    return result;
}

static void readers_never_see_a_partial_entry(void **state) {
    (void)state;
    char *dir = gjt_scratch("hammer");
    run_children(N_PROCESSES, hammer_child, dir);
    assert_one_valid_entry(dir);
    free(dir);
}

/* ------------------------------------------------------------ full disk */

static int fail_errno;
static size_t accept_bytes; /* bytes the fake disk takes before it is full */

static ssize_t failing_write(int fd, const void *buf, size_t n) {
    if (accept_bytes == 0) {
        errno = fail_errno;
        return -1;
    }
    size_t take = n < accept_bytes ? n : accept_bytes;
    accept_bytes -= take;
    return write(fd, buf, take);
}

static void full_disk_case(int err, size_t accepted, const char *name) {
    char *dir = gjt_scratch(name);
    gjt_log_capture log;
    gj_context *ctx = gjt_context(dir, &log);
    gjt_request r;
    gjt_request_init(&r, 2, "sm_80", GJ_BINARY_CUBIN);
    gjt_compiler compiler = {.request = &r, .payload_size = 10000};
    fail_errno = err;
    accept_bytes = accepted;
    ssize_t (*saved)(int, const void *, size_t) = gj__cache_test_write;
    gj__cache_test_write = failing_write;

    gj_program *prog = NULL;
    assert_int_equal(gj__cache_compile(ctx, &r.req, gjt_compile, &compiler, &prog), GJ_OK);
    assert_non_null(prog);
    assert_int_equal(prog->binary_size, 10000);
    gj_program_destroy(prog);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, strerror(err)));
    assert_int_equal(gjt_count_suffix(dir, ".gjc"), 0); /* no partial file */
    assert_int_equal(gjt_count_prefix(dir, ".tmp-"), 0);

    /* Later compiles still succeed, without another warning. */
    gjt_request_init(&r, 3, "sm_80", GJ_BINARY_CUBIN);
    assert_int_equal(gj__cache_compile(ctx, &r.req, gjt_compile, &compiler, &prog), GJ_OK);
    gj_program_destroy(prog);
    assert_int_equal(log.warnings, 1);
    assert_int_equal(gjt_count_prefix(dir, ".tmp-"), 0);

    gj__cache_test_write = saved;
    gj_context_destroy(ctx);
    free(dir);
}

static void enospc_at_first_byte(void **state) {
    (void)state;
    full_disk_case(ENOSPC, 0, "enospc0");
}

static void enospc_mid_payload(void **state) {
    (void)state;
    full_disk_case(ENOSPC, 5000, "enospc5000");
}

static void edquot(void **state) {
    (void)state;
    full_disk_case(EDQUOT, 100, "edquot");
}

static void eio(void **state) {
    (void)state;
    full_disk_case(EIO, 0, "eio");
}

/* ------------------------------------------------------- stale temporaries */

static void stale_temporaries_are_swept(void **state) {
    (void)state;
    char *dir = gjt_scratch("sweep");
    char shard[2100], old_temp[2200], young_temp[2200], stranger[2200];
    snprintf(shard, sizeof shard, "%s/ab", dir);
    assert_int_equal(mkdir(shard, 0700), 0);
    snprintf(old_temp, sizeof old_temp, "%s/.tmp-dead.1.2.3", shard);
    snprintf(young_temp, sizeof young_temp, "%s/.tmp-busy.4.5.6", shard);
    snprintf(stranger, sizeof stranger, "%s/notes.txt", shard);
    gjt_write_file(old_temp, "x", 1);
    gjt_write_file(young_temp, "y", 1);
    gjt_write_file(stranger, "z", 1);
    struct timespec two_hours_ago[2] = {{.tv_sec = time(NULL) - 7200}, {.tv_sec = time(NULL) - 7200}};
    assert_int_equal(utimensat(AT_FDCWD, old_temp, two_hours_ago, 0), 0);

    gj_context *ctx = gjt_context(dir, NULL);
    gjt_request r;
    gjt_request_init(&r, 4, "sm_80", GJ_BINARY_CUBIN);
    gjt_compiler compiler = {.request = &r, .payload_size = 100};
    gj_program *prog = NULL;
    assert_int_equal(gj__cache_compile(ctx, &r.req, gjt_compile, &compiler, &prog), GJ_OK);
    gj_program_destroy(prog);

    assert_int_equal(access(old_temp, F_OK), -1);  /* swept after the insertion */
    assert_int_equal(access(young_temp, F_OK), 0); /* maybe another process's write */
    assert_int_equal(access(stranger, F_OK), 0);   /* not ours */
    gj_context_destroy(ctx);
    free(dir);
}

/* ------------------------------------------------------ removal of a bad file */

static void only_the_same_file_is_removed(void **state) {
    (void)state;
    char *dir = gjt_scratch("same_file");
    char path[2100], other[2100];
    snprintf(path, sizeof path, "%s/entry", dir);
    snprintf(other, sizeof other, "%s/other", dir);
    gjt_write_file(path, "bad", 3);
    struct stat bad;
    assert_int_equal(stat(path, &bad), 0);
    /* another process publishes a good one over it */
    gjt_write_file(other, "good", 4);
    assert_int_equal(rename(other, path), 0);
    assert_int_equal(gj__cache_remove_if_same(path, (uint64_t)bad.st_dev, (uint64_t)bad.st_ino), ESTALE);
    assert_int_equal(access(path, F_OK), 0);
    struct stat good;
    assert_int_equal(stat(path, &good), 0);
    assert_int_equal(gj__cache_remove_if_same(path, (uint64_t)good.st_dev, (uint64_t)good.st_ino), 0);
    assert_int_equal(access(path, F_OK), -1);
    free(dir);
}

/* The published file is private to the user and complete. */
static void published_file_is_private(void **state) {
    (void)state;
    char *dir = gjt_scratch("private");
    struct iovec parts[2] = {{"hello ", 6}, {"world", 5}};
    assert_int_equal(gj__cache_publish(dir, "x", parts, 2), 0);
    char path[2100];
    snprintf(path, sizeof path, "%s/x", dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    size_t n = 0;
    uint8_t *data = gjt_read_file(path, &n);
    assert_int_equal(n, 11);
    assert_memory_equal(data, "hello world", 11);
    free(data);
    /* a missing directory fails cleanly */
    char missing[2100];
    snprintf(missing, sizeof missing, "%s/nope", dir);
    assert_int_equal(gj__cache_publish(missing, "x", parts, 2), ENOENT);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(eight_processes_compile_one_key),
        cmocka_unit_test(readers_never_see_a_partial_entry),
        cmocka_unit_test(enospc_at_first_byte),
        cmocka_unit_test(enospc_mid_payload),
        cmocka_unit_test(edquot),
        cmocka_unit_test(eio),
        cmocka_unit_test(stale_temporaries_are_swept),
        cmocka_unit_test(only_the_same_file_is_removed),
        cmocka_unit_test(published_file_is_private),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
