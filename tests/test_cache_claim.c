/* One compile per key across processes: a process that misses claims the key (flock on a
 * lock file in the store); others wait, then find the entry. A holder that dies releases
 * the claim with its last descriptor, so it blocks no one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache_support.h"
#include "test_env.h"

#define N_PROCESSES 8

static void pause_ms(long ms) {
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static void directory_stats(const char *dir, gj_cache_stats *out) {
    gj_context *ctx = gjt_context(dir, NULL);
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_DIRECTORY, out), GJ_OK);
    gj_context_destroy(ctx);
}

/* ------------------------------------------------------------ store level */

/* The compile path's protocol with a slow made-up fill: look up; on a miss claim, look
 * again, fill only if still missing. */
static int claim_and_fill_child(int index, void *arg) {
    (void)index;
    gj_context *ctx = gjt_context(arg, NULL);
    gjt_blob b;
    gjt_blob_init(&b, 0, 64 * 1024);
    gj__blob got;
    int result = 0;
    if (gjt_blob_get(ctx, &b, &got) == GJ_OK) {
        result = gjt_blob_same(&b, &got) ? 0 : 3;
        gj__blob_free(&got);
    } else {
        gj__store_count_miss(&ctx->store);
        gj__store_claim claim;
        if (!gj__store_claim_key(&ctx->store, &ctx->diag, &b.key, &b.group, 10000, &claim)) {
            result = 4;
        } else if (gjt_blob_get(ctx, &b, &got) == GJ_OK) {
            result = gjt_blob_same(&b, &got) ? 0 : 5;
            gj__blob_free(&got);
        } else {
            pause_ms(100); /* a compile takes a while: the others must wait, not fill too */
            gj__store_count_fill(&ctx->store, 100.0);
            gjt_blob_put(ctx, &b);
        }
        gj__store_unclaim(&claim);
    }
    gjt_blob_free(&b);
    gj_context_destroy(ctx);
    return result;
}

static void eight_processes_fill_one_key_once(void **state) {
    (void)state;
    char *dir = gjt_scratch("claim_fill");
    char why[200];
    if (gjt_run_children(N_PROCESSES, claim_and_fill_child, dir, why, sizeof why) != 0) {
        fail_msg("%s", why);
    }
    assert_int_equal(gjt_count_suffix(dir, ".gjc"), 1);
    gj_cache_stats s;
    directory_stats(dir, &s);
    assert_int_equal(s.compiles, 1);
    assert_int_equal(s.hits, N_PROCESSES - 1); /* every other process found the entry */
    assert_int_equal(s.corrupt, 0);
    free(dir);
}

/* Takes the claim on blob 1's key, says so on fd, then waits to be killed. */
static void hold_claim_until_killed(const char *dir, int fd) {
    gj_context *ctx = gjt_context(dir, NULL);
    gjt_blob b;
    gjt_blob_init(&b, 1, 16);
    gj__store_claim claim;
    const char held = gj__store_claim_key(&ctx->store, &ctx->diag, &b.key, &b.group, 0, &claim) ? 'y' : 'n';
    if (write(fd, &held, 1) != 1) {
        _exit(2);
    }
    for (;;) {
        pause();
    }
}

static void killed_holder_blocks_no_one(void **state) {
    (void)state;
    char *dir = gjt_scratch("claim_killed");
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(ready[0]);
        hold_claim_until_killed(dir, ready[1]);
    }
    close(ready[1]);
    char held = 0;
    assert_int_equal(read(ready[0], &held, 1), 1);
    close(ready[0]);
    assert_int_equal(held, 'y');

    gj_context *ctx = gjt_context(dir, NULL);
    gjt_blob b;
    gjt_blob_init(&b, 1, 16);
    gj__store_claim claim;
    double start = gjt_now_ms();
    assert_int_equal(gj__store_claim_key(&ctx->store, &ctx->diag, &b.key, &b.group, 100, &claim), 0); /* held */
    assert_true(gjt_now_ms() - start >= 90.0);
    assert_int_equal(claim.fd, -1);

    assert_int_equal(kill(pid, SIGKILL), 0);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    start = gjt_now_ms();
    assert_int_equal(gj__store_claim_key(&ctx->store, &ctx->diag, &b.key, &b.group, 30000, &claim), 1);
    const double waited = gjt_now_ms() - start;
    if (waited >= 1000.0) {
        fail_msg("the claim of a killed process held up the next one for %.0f ms", waited);
    }
    gj__store_unclaim(&claim);
    assert_int_equal(claim.fd, -1);
    gjt_blob_free(&b);
    gj_context_destroy(ctx);
    free(dir);
}

/* Without a writable directory there is nothing to lock: claims fail at once and the
 * caller works unclaimed. */
static void no_directory_no_claim(void **state) {
    (void)state;
    char *dir = gjt_scratch("claim_off");
    gj_context *ctx = gjt_context(dir, NULL);
    gj_context_set_cache_enabled(ctx, 0);
    gjt_blob b;
    gjt_blob_init(&b, 2, 16);
    gj__store_claim claim;
    const double start = gjt_now_ms();
    assert_int_equal(gj__store_claim_key(&ctx->store, &ctx->diag, &b.key, &b.group, 5000, &claim), 0);
    assert_true(gjt_now_ms() - start < 1000.0);
    assert_int_equal(gjt_count_suffix(dir, GJ__LOCK_EXT), 0);
    gjt_blob_free(&b);
    gj_context_destroy(ctx);
    free(dir);
}

/* ------------------------------------------------------ through NVRTC */

static int compile_child(int index, void *arg) {
    (void)index;
    gj_context *ctx = gjt_context(arg, NULL);
    gj_program *prog = NULL;
    const gj_status status = gjt_compile_tiny(ctx, 0, "sm_80", &prog);
    size_t size = 0;
    const int ok = status == GJ_OK && gj_program_binary(prog, &size) && size > 0 &&
                   gj_program_n_kernels(prog) == 2 && gj_program_cache_status(prog) != GJ_CACHE_OFF;
    gj_program_destroy(prog);
    gj_context_destroy(ctx);
    return status != GJ_OK ? 10 + (int)-status : ok ? 0 : 3;
}

/* Eight processes compile one source into one fresh directory at once: one compiles, the
 * others wait on its claim and load its entry. */
static void eight_processes_compile_once(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    char *dir = gjt_scratch("claim_compile");
    char why[200];
    if (gjt_run_children(N_PROCESSES, compile_child, dir, why, sizeof why) != 0) {
        fail_msg("%s", why);
    }
    assert_int_equal(gjt_count_suffix(dir, ".gjc"), 1);
    assert_int_equal(gjt_count_prefix(dir, ".tmp-"), 0);
    gj_cache_stats s;
    directory_stats(dir, &s);
    assert_int_equal(s.compiles, 1);
    assert_int_equal(s.hits, N_PROCESSES - 1);
    assert_int_equal(s.corrupt, 0);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(eight_processes_fill_one_key_once),
        cmocka_unit_test(killed_holder_blocks_no_one),
        cmocka_unit_test(no_directory_no_claim),
        cmocka_unit_test(eight_processes_compile_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
