/* Cache faults the store-level tests (test_cache_store.c, test_cache_dir.c, ...) do not
 * make: a read-only file system (EROFS, in a private mount namespace), permission denied
 * (EACCES, as an unprivileged user), a writer killed in the middle of an entry, and a
 * full disk during precompile (the API through the write hook, the CLI through
 * RLIMIT_FSIZE). docs/reliability.md lists which test covers which fault. Each fault is
 * made in a child process, so that mounts, identities and limits end with it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache_support.h"
#include "run_cli.h"
#include "test_env.h"

#define SKIP_CODE 77
#define NOBODY 65534
#define TINY_ENCODING "{\"otype\": \"HashGrid\", \"n_levels\": 1, \"n_features_per_level\": 1, \"log2_hashmap_size\": 4}"

/* Keeps the child's argument reachable from a global, so that valgrind, which follows the
 * fork, does not report the caller's allocation lost when the child exits. */
static void *volatile child_arg;

/* Runs fn(arg) in a child; returns its exit code, 128 + N when killed by signal N. */
static int in_child(int (*fn)(void *), void *arg) {
    child_arg = arg;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        _exit(fn(arg));
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A child's verdict: 0, SKIP_CODE, or the line of the first failed check. */
#define CHILD_CHECK(cond)                                                                 \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "child check failed at line %d: %s\n", __LINE__, #cond);      \
            return __LINE__ % 200 + 1;                                                    \
        }                                                                                 \
    } while (0)

static void expect_child(int code, const char *what) {
    if (code == SKIP_CODE) {
        printf("SKIPPED: %s\n", what);
        skip();
    }
    if (code != 0) {
        fail_msg("%s: the child failed (exit %d; see its message above)", what, code);
    }
}

/* ------------------------------------------------------ read-only file system */

/* In a private mount namespace, dir becomes a tmpfs: the writable directory is resolved
 * on it, an entry stored, then the file system is remounted read-only. */
static int read_only_child(void *arg) {
    const char *dir = arg;
    /* The kernel ignores the source and type of a propagation change and of a remount; they
     * are named anyway, as valgrind checks that they point somewhere. */
    if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("gridjit-test", dir, "tmpfs", 0, "mode=0700") != 0) {
        fprintf(stderr, "no private tmpfs mount (%s)\n", strerror(errno));
        return SKIP_CODE;
    }
    char cache[2200], other[2200], outside[2200];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(other, sizeof other, "%s/never-created", dir);
    snprintf(outside, sizeof outside, "%s-outside", dir);
    gjt_log_capture log;
    gj_context *ctx = gjt_context(cache, &log);
    CHILD_CHECK(gj_context_cache_dir(ctx) != NULL); /* resolved while writable */
    gjt_blob stored;
    gjt_blob_init(&stored, 1, 4000);
    CHILD_CHECK(gjt_fetch(ctx, &stored) == GJ_CACHE_MISS);
    CHILD_CHECK(gjt_count_suffix(cache, ".gjc") == 1);
    CHILD_CHECK(log.warnings == 0);

    CHILD_CHECK(mount("gridjit-test", dir, "tmpfs", MS_REMOUNT | MS_RDONLY, NULL) == 0);

    /* A put fails with EROFS: one warning naming it, the value still served, nothing left. */
    gjt_blob b;
    gjt_blob_init(&b, 2, 4000);
    CHILD_CHECK(gjt_fetch(ctx, &b) == GJ_CACHE_MISS);
    CHILD_CHECK(log.warnings == 1 && strstr(log.last, strerror(EROFS)) != NULL);
    CHILD_CHECK(gjt_fetch(ctx, &b) == GJ_CACHE_MISS && log.warnings == 1);
    CHILD_CHECK(gjt_count_suffix(cache, ".gjc") == 1 && gjt_count_prefix(cache, ".tmp-") == 0);
    CHILD_CHECK(gjt_fetch(ctx, &stored) == GJ_CACHE_HIT); /* lookups go on */
    gj_context_destroy(ctx);

    /* A writable directory that would have to be made on it: refused, uncached. */
    gj_context *refused = gjt_context(other, &log);
    CHILD_CHECK(gj_context_cache_dir(refused) == NULL);
    CHILD_CHECK(log.warnings == 1 && strstr(log.last, strerror(EROFS)) != NULL);
    CHILD_CHECK(gjt_fetch(refused, &b) == GJ_CACHE_OFF);
    gj_context_destroy(refused);

    /* The read-only directory as a layer: hits, never written to. */
    CHILD_CHECK(mkdir(outside, 0700) == 0 || errno == EEXIST);
    gj_context *layered = gjt_context(outside, &log);
    CHILD_CHECK(gj_context_set_cache_path(layered, cache) == GJ_OK);
    CHILD_CHECK(gjt_fetch(layered, &stored) == GJ_CACHE_HIT);
    CHILD_CHECK(log.warnings == 0);
    gj_context_destroy(layered);
    gjt_remove_tree(outside);

    gjt_blob_free(&b);
    gjt_blob_free(&stored);
    return 0;
}

static void read_only_file_system(void **state) {
    (void)state;
    char *dir = gjt_scratch("erofs");
    expect_child(in_child(read_only_child, dir), "EROFS needs a private mount namespace (CAP_SYS_ADMIN)");
    free(dir);
}

/* ------------------------------------------------------------ permission denied */

/* As an unprivileged user (root ignores permission bits): an entry that cannot be read
 * is a miss, neither counted nor removed; a writable directory that became read-only
 * makes puts fail with EACCES; one that is read-only from the start is refused. */
static int permission_child(void *arg) {
    const char *base = arg;
    if (geteuid() == 0 && (setgid(NOBODY) != 0 || setuid(NOBODY) != 0)) {
        fprintf(stderr, "cannot become uid %d (%s)\n", NOBODY, strerror(errno));
        return SKIP_CODE;
    }
    char dir[2200];
    snprintf(dir, sizeof dir, "%s/cache", base);
    CHILD_CHECK(mkdir(dir, 0700) == 0);
    gjt_log_capture log;
    gj_context *ctx = gjt_context(dir, &log);
    gjt_blob stored, b;
    gjt_blob_init(&stored, 3, 4000);
    gjt_blob_init(&b, 4, 4000);
    CHILD_CHECK(gjt_fetch(ctx, &stored) == GJ_CACHE_MISS && log.warnings == 0);

    /* An entry that cannot be read: a miss, not damage. */
    char *entry = gjt_blob_path(dir, &stored, GJ__ENTRY_EXT);
    CHILD_CHECK(chmod(entry, 0) == 0);
    gj__blob got;
    CHILD_CHECK(gjt_blob_get(ctx, &stored, &got) == GJ_ERROR_NOT_FOUND);
    gj_cache_stats stats;
    CHILD_CHECK(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &stats) == GJ_OK && stats.corrupt == 0);
    CHILD_CHECK(access(entry, F_OK) == 0);
    CHILD_CHECK(chmod(entry, 0600) == 0);
    CHILD_CHECK(gjt_blob_get(ctx, &stored, &got) == GJ_OK);
    gj__blob_free(&got);

    /* The directory (and its shards) made read-only after resolution: the put fails. */
    char shard[2300];
    snprintf(shard, sizeof shard, "%s/%.2s", dir, b.group_hex);
    CHILD_CHECK(mkdir(shard, 0500) == 0 || (errno == EEXIST && chmod(shard, 0500) == 0));
    CHILD_CHECK(chmod(dir, 0500) == 0);
    CHILD_CHECK(gjt_fetch(ctx, &b) == GJ_CACHE_MISS);
    CHILD_CHECK(log.warnings == 1 && strstr(log.last, strerror(EACCES)) != NULL);
    CHILD_CHECK(gjt_count_prefix(dir, ".tmp-") == 0);
    CHILD_CHECK(gjt_fetch(ctx, &stored) == GJ_CACHE_HIT);
    gj_context_destroy(ctx);

    /* Read-only from the start: refused, uncached (read-only layers would still be searched). */
    gj_context *refused = gjt_context(dir, &log);
    CHILD_CHECK(gj_context_cache_dir(refused) == NULL);
    CHILD_CHECK(log.warnings == 1 && strstr(log.last, strerror(EACCES)) != NULL);
    gj_context_destroy(refused);
    chmod(shard, 0700);
    chmod(dir, 0700);
    free(entry);
    gjt_blob_free(&b);
    gjt_blob_free(&stored);
    return 0;
}

static void permission_denied(void **state) {
    (void)state;
    /* Under /tmp, so that the unprivileged user can reach it. */
    char base[] = "/tmp/gridjit-eacces-XXXXXX";
    assert_non_null(mkdtemp(base));
    if (geteuid() == 0) {
        assert_int_equal(chown(base, NOBODY, NOBODY), 0);
    }
    const int code = in_child(permission_child, base);
    gjt_remove_tree(base);
    expect_child(code, "EACCES needs an unprivileged user");
}

/* ------------------------------------------------------- writer killed mid-write */

static size_t write_budget;
static ssize_t write_then_die(int fd, const void *buf, size_t n) {
    if (n >= write_budget) {
        if (write(fd, buf, write_budget) < 0) {
        }
        fsync(fd);
        kill(getpid(), SIGKILL); /* in the middle of the entry */
    }
    write_budget -= n;
    return write(fd, buf, n);
}

static int killed_writer_child(void *arg) {
    gj_context *ctx = gjt_context(arg, NULL);
    gjt_blob b;
    gjt_blob_init(&b, 5, 64 * 1024);
    write_budget = 20000;
    atomic_store(&gj__store_test_write, write_then_die);
    gjt_fetch(ctx, &b);
    return 1; /* not reached */
}

static void writer_killed_mid_write(void **state) {
    (void)state;
    char *dir = gjt_scratch("killed_writer");
    assert_int_equal(in_child(killed_writer_child, dir), 128 + SIGKILL);
    /* Half an entry stays in a temporary file; no entry was published. */
    assert_int_equal(gjt_count_suffix(dir, GJ__ENTRY_EXT), 0);
    assert_int_equal(gjt_count_prefix(dir, GJ__TEMP_PREFIX), 1);

    gjt_log_capture log;
    gj_context *ctx = gjt_context(dir, &log);
    gjt_blob b;
    gjt_blob_init(&b, 5, 64 * 1024);
    gj__blob got;
    assert_int_equal(gjt_blob_get(ctx, &b, &got), GJ_ERROR_NOT_FOUND); /* a plain miss */
    uint64_t checked = 0, bad = 0, evicted = 0, freed = 0;
    assert_int_equal(gj_cache_verify(ctx, &checked, &bad), GJ_OK);
    assert_int_equal(bad, 0);
    /* A young temporary may be another process's write in progress: kept. */
    assert_int_equal(gj_cache_prune(ctx, &evicted, &freed), GJ_OK);
    assert_int_equal(gjt_count_prefix(dir, GJ__TEMP_PREFIX), 1);
    /* The next writer publishes the entry; readers get it whole. */
    assert_int_equal(gjt_fetch(ctx, &b), GJ_CACHE_MISS);
    assert_int_equal(gjt_fetch(ctx, &b), GJ_CACHE_HIT);
    /* Once older than an hour, the dead writer's temporary is swept. */
    char command[2400];
    snprintf(command, sizeof command, "find '%s' -name '%s*' -exec touch -d '-2 hours' {} +", dir, GJ__TEMP_PREFIX);
    assert_int_equal(system(command), 0);
    assert_int_equal(gj_cache_prune(ctx, &evicted, &freed), GJ_OK);
    assert_int_equal(gjt_count_prefix(dir, GJ__TEMP_PREFIX), 0);
    assert_int_equal(gjt_count_suffix(dir, GJ__ENTRY_EXT), 1);
    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.corrupt, 0);
    assert_int_equal(log.warnings, 0);
    gjt_blob_free(&b);
    gj_context_destroy(ctx);
    free(dir);
}

/* ------------------------------------------------- full disk during precompile */

static ssize_t disk_full(int fd, const void *buf, size_t n) {
    (void)fd;
    (void)buf;
    (void)n;
    errno = ENOSPC;
    return -1;
}

/* gj_precompile's only purpose is to fill the cache: when nothing can be stored it must
 * say so (gj_compile, in contrast, succeeds uncached: docs/cache.md, "Failure policy"). */
static void full_disk_during_precompile(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    char *dir = gjt_scratch("precompile_full");
    gjt_log_capture log;
    gj_context *ctx = gjt_context(dir, &log);
    gj_encoding *enc = NULL;
    assert_int_equal(gj_encoding_create(ctx, TINY_ENCODING, 0, &enc), GJ_OK);
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = GJ_PASS_FORWARD;
    gj__store_write_fn saved = atomic_exchange(&gj__store_test_write, disk_full);

    gj_program *prog = NULL;
    assert_int_equal(gj_compile(ctx, enc, &opts, "sm_80", &prog), GJ_OK); /* uncached, fine */
    gj_program_destroy(prog);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, strerror(ENOSPC)));

    gj_precompile_report report;
    const gj_status status = gj_precompile(ctx, enc, &opts, "sm_80", 2, &report);
    atomic_store(&gj__store_test_write, saved);
    assert_int_equal(gjt_count_suffix(dir, GJ__ENTRY_EXT), 0);
    assert_int_equal(gjt_count_prefix(dir, GJ__TEMP_PREFIX), 0);
    if (status == GJ_OK) {
        fail_msg("gj_precompile returned GJ_OK (%u programs, %u compiled) but stored nothing: the disk was full",
                 report.programs, report.compiled);
    }
    assert_int_equal(status, GJ_ERROR_IO);
    assert_non_null(strstr(gj_context_errmsg(ctx), dir));
    gj_encoding_destroy(enc);
    gj_context_destroy(ctx);
    free(dir);
}

/* The same through `gridjit precompile`, with a real write error: a file size limit
 * (RLIMIT_FSIZE, SIGXFSZ ignored) makes every entry write fail with EFBIG. */
static int precompile_cli_child(void *arg) {
    const char *dir = arg;
    const char *cli = gj_test_cli_path();
    if (!cli) {
        return SKIP_CODE;
    }
    struct rlimit limit = {.rlim_cur = 4096, .rlim_max = 4096};
    signal(SIGXFSZ, SIG_IGN);
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) {
        return SKIP_CODE;
    }
    int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    execl(cli, "gridjit", "precompile", "--config", TINY_ENCODING, "--arch", "sm_80", "--pass", "forward",
          "--cache-dir", dir, "--jobs", "1", (char *)NULL);
    return 126;
}

static void full_disk_during_precompile_cli(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    char *dir = gjt_scratch("precompile_full_cli");
    const int code = in_child(precompile_cli_child, dir);
    const size_t entries = gjt_count_suffix(dir, GJ__ENTRY_EXT), temporaries = gjt_count_prefix(dir, GJ__TEMP_PREFIX);
    free(dir);
    if (code == SKIP_CODE) {
        printf("SKIPPED: no $GRIDJIT_CLI or no file size limit\n");
        skip();
    }
    assert_int_equal(entries, 0);
    assert_int_equal(temporaries, 0);
    if (code == 0) {
        fail_msg("`gridjit precompile` exited 0 with an empty cache directory: every write failed (EFBIG)");
    }
    assert_int_equal(code, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(read_only_file_system),
        cmocka_unit_test(permission_denied),
        cmocka_unit_test(writer_killed_mid_write),
        cmocka_unit_test(full_disk_during_precompile),
        cmocka_unit_test(full_disk_during_precompile_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
