/* Publication and I/O failures (store level): concurrent writers and readers of one key,
 * a full disk, read errors, stale temporary files, removal only of the same file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_support.h"

#define N_PROCESSES 8

/* Checks the one entry in dir completely. */
static void assert_one_valid_entry(const char *dir) {
    assert_int_equal(gjt_count_prefix(dir, ".tmp-"), 0);
    char *path = gjt_only_file(dir, ".gjc");
    assert_non_null(path);
    gj__entry e;
    struct stat st;
    assert_int_equal(gj__entry_read_path(path, &e, 1, &st), GJ__ENTRY_OK);
    gj__entry_free(&e);
    free(path);
}

/* Every child stores the key over and over while looking it up: a reader must never meet
 * a partial file (no corrupt entry is ever counted), and no write may fail. */
static int hammer_child(int index, void *arg) {
    gj_context *ctx = gjt_context(arg, NULL);
    gjt_blob b;
    gjt_blob_init(&b, 1, 128 * 1024);
    int result = 0;
    for (int i = 0; i < 20 && !result; i++) {
        if ((i + index) % 2 == 0) {
            gjt_blob_put(ctx, &b);
            continue;
        }
        gj__blob got;
        gj_status s = gjt_blob_get(ctx, &b, &got);
        if (s == GJ_OK && !gjt_blob_same(&b, &got)) {
            result = 5;
        } else if (s != GJ_OK && s != GJ_ERROR_NOT_FOUND) {
            result = 6;
        }
        gj__blob_free(&got);
    }
    gj_cache_stats stats;
    gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &stats);
    if (!result && (stats.corrupt || ctx->store.state->write_failed)) {
        result = 7;
    }
    gjt_blob_free(&b);
    gj_context_destroy(ctx);
    return result;
}

static void readers_never_see_a_partial_entry(void **state) {
    (void)state;
    char *dir = gjt_scratch("hammer");
    char why[200];
    if (gjt_run_children(N_PROCESSES, hammer_child, dir, why, sizeof why) != 0) {
        fail_msg("%s", why);
    }
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

/* The put fails with err after `accepted` bytes: one warning naming the error, nothing
 * left behind, later puts skipped quietly, and lookups still answer (a miss). */
static void full_disk_case(int err, size_t accepted, const char *name) {
    char *dir = gjt_scratch(name);
    gjt_log_capture log;
    gj_context *ctx = gjt_context(dir, &log);
    gjt_blob b;
    gjt_blob_init(&b, 2, 10000);
    fail_errno = err;
    accept_bytes = accepted;
    gj__store_write_fn saved = atomic_exchange(&gj__store_test_write, failing_write);

    assert_int_equal(gjt_fetch(ctx, &b), GJ_CACHE_MISS);
    assert_int_equal(log.warnings, 1);
    if (!strstr(log.last, strerror(err))) {
        fail_msg("warning \"%s\" does not say \"%s\"", log.last, strerror(err));
    }
    assert_int_equal(gjt_count_suffix(dir, ".gjc"), 0); /* no partial file */
    assert_int_equal(gjt_count_prefix(dir, ".tmp-"), 0);

    /* Later puts are skipped without another warning; nothing is left behind. */
    gjt_blob other;
    gjt_blob_init(&other, 3, 100);
    assert_int_equal(gjt_fetch(ctx, &other), GJ_CACHE_MISS);
    assert_int_equal(gjt_fetch(ctx, &b), GJ_CACHE_MISS);
    assert_int_equal(log.warnings, 1);
    assert_int_equal(gjt_count_suffix(dir, ".gjc"), 0);
    assert_int_equal(gjt_count_prefix(dir, ".tmp-"), 0);
    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.bytes_written, 0);

    atomic_store(&gj__store_test_write, saved);
    gjt_blob_free(&other);
    gjt_blob_free(&b);
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

static void eio_on_write(void **state) {
    (void)state;
    full_disk_case(EIO, 0, "eio_write");
}

/* ------------------------------------------------------------ read errors */

/* The read that fails: 0 the next one, 1 the one after, ...; -1 none; -2 every one. */
static _Atomic int pread_fault_at = -1;

static ssize_t failing_pread(int fd, void *buf, size_t n, off_t offset) {
    int at = atomic_load(&pread_fault_at);
    if (at == -2 || at == 0) {
        atomic_store(&pread_fault_at, at == 0 ? -1 : -2);
        errno = EIO;
        return -1;
    }
    if (at > 0) {
        atomic_store(&pread_fault_at, at - 1);
    }
    return pread(fd, buf, n, offset);
}

/* An I/O error while reading an entry is a miss, not proof of damage: the entry is
 * neither removed nor counted corrupt, and a later read without the fault hits. Whether
 * the error strikes the header's start, the whole header or the payload; and verify
 * leaves such an entry in place too. */
static void read_error_is_a_miss(void **state) {
    (void)state;
    char *dir = gjt_scratch("eio_read");
    gjt_log_capture log;
    gj_context *ctx = gjt_context(dir, &log);
    gjt_blob b;
    gjt_blob_init(&b, 4, 5000);
    gjt_blob_put(ctx, &b);
    char *path = gjt_blob_path(dir, &b, GJ__ENTRY_EXT);
    gj__store_pread_fn saved = atomic_exchange(&gj__store_test_pread, failing_pread);

    for (int at = 0; at < 3; at++) {
        atomic_store(&pread_fault_at, at);
        gj__blob got;
        assert_int_equal(gjt_blob_get(ctx, &b, &got), GJ_ERROR_NOT_FOUND);
        assert_int_equal(atomic_load(&pread_fault_at), -1); /* the fault did strike */
        assert_int_equal(access(path, F_OK), 0);
        assert_int_equal(gjt_blob_get(ctx, &b, &got), GJ_OK);
        assert_true(gjt_blob_same(&b, &got));
        gj__blob_free(&got);
    }
    assert_int_equal(log.warnings, 0); /* a read error is not news for the user */

    atomic_store(&pread_fault_at, -2);
    uint64_t checked = 0, bad = 0;
    gj__store_verify(&ctx->store, &ctx->diag, &checked, &bad);
    atomic_store(&pread_fault_at, -1);
    assert_int_equal(checked, 1);
    assert_int_equal(bad, 0);
    assert_int_equal(access(path, F_OK), 0);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "left in place"));

    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.corrupt, 0);
    assert_int_equal(stats.hits, 3);
    atomic_store(&gj__store_test_pread, saved);
    free(path);
    gjt_blob_free(&b);
    gj_context_destroy(ctx);
    free(dir);
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
    assert_int_equal(gjt_age(old_temp, 7200), 0);

    gj_context *ctx = gjt_context(dir, NULL);
    gjt_blob b;
    gjt_blob_init(&b, 5, 100);
    assert_int_equal(gjt_fetch(ctx, &b), GJ_CACHE_MISS);

    assert_int_equal(access(old_temp, F_OK), -1);  /* swept after the insertion */
    assert_int_equal(access(young_temp, F_OK), 0); /* maybe another process's write */
    assert_int_equal(access(stranger, F_OK), 0);   /* not ours */
    gjt_blob_free(&b);
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
    assert_int_equal(gj__store_remove_if_same(path, (uint64_t)bad.st_dev, (uint64_t)bad.st_ino), ESTALE);
    assert_int_equal(access(path, F_OK), 0);
    struct stat good;
    assert_int_equal(stat(path, &good), 0);
    assert_int_equal(gj__store_remove_if_same(path, (uint64_t)good.st_dev, (uint64_t)good.st_ino), 0);
    assert_int_equal(access(path, F_OK), -1);
    free(dir);
}

/* The published file is private to the user and complete. */
static void published_file_is_private(void **state) {
    (void)state;
    char *dir = gjt_scratch("private");
    struct iovec parts[2] = {{"hello ", 6}, {"world", 5}};
    assert_int_equal(gj__store_publish(dir, "x", parts, 2), 0);
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
    assert_int_equal(gj__store_publish(missing, "x", parts, 2), ENOENT);
    assert_int_equal(gjt_count_prefix(dir, ".tmp-"), 0);
    /* so does a write error, leaving nothing */
    fail_errno = EIO;
    accept_bytes = 3;
    gj__store_write_fn saved = atomic_exchange(&gj__store_test_write, failing_write);
    assert_int_equal(gj__store_publish(dir, "y", parts, 2), EIO);
    atomic_store(&gj__store_test_write, saved);
    assert_int_equal(gjt_count_prefix(dir, ".tmp-"), 0);
    snprintf(path, sizeof path, "%s/y", dir);
    assert_int_equal(access(path, F_OK), -1);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(readers_never_see_a_partial_entry),
        cmocka_unit_test(enospc_at_first_byte),
        cmocka_unit_test(enospc_mid_payload),
        cmocka_unit_test(edquot),
        cmocka_unit_test(eio_on_write),
        cmocka_unit_test(read_error_is_a_miss),
        cmocka_unit_test(stale_temporaries_are_swept),
        cmocka_unit_test(only_the_same_file_is_removed),
        cmocka_unit_test(published_file_is_private),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
