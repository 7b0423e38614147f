/* Concurrency: the header promises that a gj_context may be used from several threads at
 * once (compiles, cache reads and writes), that error messages are per thread, and that
 * encodings and programs may be read from several threads. N_THREADS threads exercise
 * that on one shared context and on one context each (all on one cache directory):
 * creating encodings, generating source, compiling the same and different keys
 * (gj_compile_source of tiny sources, gj_compile of a tiny encoding, gj_precompile), and
 * reading and writing the cache (gj_context_cache_stats, gj_cache_list, gj_cache_verify).
 * Without NVRTC the compile parts are skipped, and say so.
 *
 * Its main use is the ThreadSanitizer lane (tools/quickstart.sh test; docs/reliability.md):
 *   cmake -S . -B build-tsan -DGRIDJIT_TSAN=ON && cmake --build build-tsan --target test_threads
 *   TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan -R '^test_threads$'
 * In the other builds it is an ordinary unit test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache_support.h"
#include "fake_driver.h"
#include "test_env.h"

#define N_THREADS 8
#define N_ROUNDS 3
#define ARCH "sm_80"

/* Configurations the threads share (some the same, some different). */
static const char *const CONFIGS[4] = {
    "{\"otype\": \"HashGrid\", \"n_levels\": 2, \"log2_hashmap_size\": 8}",
    "{\"otype\": \"DenseGrid\", \"n_levels\": 3, \"base_resolution\": 4}",
    "{\"otype\": \"TiledGrid\", \"n_levels\": 2, \"n_features_per_level\": 4}",
    "{\"otype\": \"HashGrid\", \"hash\": \"BaseConvert\", \"n_dims_to_encode\": 9, \"n_levels\": 1}",
};
/* What gj_compile and gj_precompile compile: one level, forward only, so that a compile is short. */
static const char *const TINY_ENCODING =
    "{\"otype\": \"HashGrid\", \"n_levels\": 1, \"n_features_per_level\": 1, \"log2_hashmap_size\": 4}";

/* Expected results, computed on the main thread before the threads start. */
static uint64_t expected_params[4];
static char *expected_source[4];
static int have_nvrtc;

static atomic_int log_messages; /* the log callback must be thread-safe: it only counts */
static void count_log(void *user, gj_log_level level, const char *message) {
    (void)user;
    (void)level;
    (void)message;
    atomic_fetch_add(&log_messages, 1);
}

static gj_context *make_context(const char *dir) {
    gj_context *ctx = NULL;
    if (gj_context_create(&ctx) != GJ_OK) {
        return NULL;
    }
    gj_context_set_log(ctx, count_log, NULL); /* before the context is shared */
    if (gj_context_set_cache_dir(ctx, dir) != GJ_OK || gj_context_set_cache_path(ctx, "") != GJ_OK) {
        gj_context_destroy(ctx);
        return NULL;
    }
    return ctx;
}

/* A tiny CUDA source (two kernels) that compiles in a fraction of a second; the variant
 * changes its text, hence its cache key. Written into the caller's buffer (the support
 * library's gjt_tiny_source shares static buffers between callers). */
static const char *const TINY_NAMES[2] = {"&k0", "&k1"};
static void tiny_source(int variant, char *out, size_t size) {
    snprintf(out, size,
             "// a tiny source for the thread test, variant %d\n"
             "__global__ void k0(float *x) { x[0] = %d.0f; }\n"
             "__global__ void k1(float *x) { x[1] = 1.0f; }\n",
             variant, variant);
}

static int list_entry(void *user, const gj_cache_entry_info *entry) {
    if (entry->key && entry->key[0] && entry->path && entry->path[0]) {
        ++*(uint64_t *)user;
    }
    return 0;
}

typedef struct worker {
    int index;
    gj_context *ctx; /* shared or own */
    const char *dir; /* its cache directory */
    int shared;
    char failure[512]; /* empty when every check passed */
} worker;

#define WCHECK(w, cond, ...)                                                                           \
    do {                                                                                               \
        if (!(cond) && !(w)->failure[0]) {                                                             \
            int n_ = snprintf((w)->failure, sizeof (w)->failure, "thread %d, line %d: ", (w)->index, __LINE__); \
            snprintf((w)->failure + n_, sizeof (w)->failure - (size_t)n_, __VA_ARGS__);                \
        }                                                                                              \
    } while (0)

/* Encodings and sources: each thread's results equal the main thread's. */
static void encodings(worker *w, int round) {
    for (int k = 0; k < 4; k++) {
        const int c = (w->index + k + round) % 4;
        gj_encoding *enc = NULL;
        gj_status s = gj_encoding_create(w->ctx, CONFIGS[c], 0, &enc);
        WCHECK(w, s == GJ_OK, "config %d: %s", c, gj_context_errmsg(w->ctx));
        if (s != GJ_OK) {
            continue;
        }
        WCHECK(w, gj_encoding_n_params(enc) == expected_params[c], "config %d: n_params", c);
        WCHECK(w, gj_context_errmsg(w->ctx)[0] == '\0', "a message after a success: %s", gj_context_errmsg(w->ctx));
        char *source = NULL;
        size_t length = 0;
        s = gj_encoding_generate(w->ctx, enc, NULL, &source, &length);
        WCHECK(w, s == GJ_OK && source && strcmp(source, expected_source[c]) == 0, "config %d: generated source differs",
               c);
        gj_free(source);
        gj_encoding_destroy(enc);
    }
}

/* Per-thread messages: this thread's failure stays its own while the others succeed and
 * fail with their own values; a success then empties it. */
static void messages(worker *w) {
    char json[96], mine[32];
    snprintf(json, sizeof json, "{\"n_levels\": %d}", 1000 + w->index);
    snprintf(mine, sizeof mine, "%d", 1000 + w->index);
    gj_encoding *enc = NULL;
    WCHECK(w, gj_encoding_create(w->ctx, json, 0, &enc) == GJ_ERROR_INVALID_CONFIG && enc == NULL, "refusal");
    for (int i = 0; i < 50; i++) {
        const char *msg = gj_context_errmsg(w->ctx);
        WCHECK(w, strstr(msg, mine) != NULL, "own message lost: '%s' (expected it to name %s)", msg, mine);
        sched_yield();
    }
    /* Getters that cannot fail leave it alone; a success empties it. */
    gj_cache_stats stats;
    WCHECK(w, gj_context_cache_stats(w->ctx, GJ_CACHE_STATS_CONTEXT, &stats) == GJ_OK, "stats");
    WCHECK(w, gj_context_errmsg(w->ctx)[0] == '\0', "success left '%s'", gj_context_errmsg(w->ctx));
}

/* Compiles: tiny sources (keys shared by pairs of threads, plus one every thread
 * compiles), the tiny encoding (one key for all), and gj_precompile on two threads. */
static void compiles(worker *w, int round) {
    char source[256];
    const int variants[2] = {100 + w->index / 2 + 10 * round, 99};
    for (int v = 0; v < 2; v++) {
        tiny_source(variants[v], source, sizeof source);
        gj_program *prog = NULL;
        gj_status s = gj_compile_source(w->ctx, source, TINY_NAMES, 2, ARCH, &prog);
        WCHECK(w, s == GJ_OK, "gj_compile_source variant %d: %s: %s", variants[v], gj_status_name(s),
               gj_context_errmsg(w->ctx));
        if (s == GJ_OK) {
            size_t size = 0;
            WCHECK(w, gj_program_binary(prog, &size) != NULL && size > 0, "no binary");
            WCHECK(w, gj_program_n_kernels(prog) == 2 && strcmp(gj_program_kernel_name(prog, 1), "&k1") == 0,
                   "kernels");
        }
        gj_program_destroy(prog);
    }

    gj_encoding *enc = NULL;
    WCHECK(w, gj_encoding_create(w->ctx, TINY_ENCODING, 0, &enc) == GJ_OK, "tiny encoding");
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = GJ_PASS_FORWARD;
    gj_program *prog = NULL;
    gj_status s = gj_compile(w->ctx, enc, &opts, ARCH, &prog);
    WCHECK(w, s == GJ_OK && gj_program_cache_key(prog)[0], "gj_compile: %s: %s", gj_status_name(s),
           gj_context_errmsg(w->ctx));
    gj_program_destroy(prog);
    if (w->index < 2) {
        gj_precompile_report report;
        s = gj_precompile(w->ctx, enc, &opts, ARCH, 2, &report);
        WCHECK(w, s == GJ_OK && report.programs > 0 && report.compiled + report.cached == report.programs,
               "gj_precompile: %s: %s", gj_status_name(s), gj_context_errmsg(w->ctx));
    }
    gj_encoding_destroy(enc);
}

/* The cache's bookkeeping while others write to it. */
static void cache_reads(worker *w) {
    gj_cache_stats stats;
    WCHECK(w, gj_context_cache_stats(w->ctx, GJ_CACHE_STATS_CONTEXT, &stats) == GJ_OK, "context stats");
    WCHECK(w, stats.corrupt == 0, "corrupt entries counted: %llu", (unsigned long long)stats.corrupt);
    WCHECK(w, gj_context_cache_stats(w->ctx, GJ_CACHE_STATS_DIRECTORY, &stats) == GJ_OK, "directory stats: %s",
           gj_context_errmsg(w->ctx));
    uint64_t listed = 0;
    WCHECK(w, gj_cache_list(w->ctx, list_entry, &listed) == GJ_OK, "gj_cache_list: %s", gj_context_errmsg(w->ctx));
    uint64_t checked = 0, bad = 0;
    WCHECK(w, gj_cache_verify(w->ctx, &checked, &bad) == GJ_OK, "gj_cache_verify: %s", gj_context_errmsg(w->ctx));
    WCHECK(w, bad == 0, "gj_cache_verify found %llu bad entries of %llu", (unsigned long long)bad,
           (unsigned long long)checked);
    /* The string is the context's: other threads asking at the same time must not rewrite
     * it under this one (ThreadSanitizer sees a rewrite of the same bytes too). */
    const char *dir = gj_context_cache_dir(w->ctx);
    WCHECK(w, dir != NULL && strcmp(dir, w->dir) == 0, "gj_context_cache_dir: %s, expected %s", dir ? dir : "NULL",
           w->dir);
}

static void *run_worker(void *arg) {
    worker *w = arg;
    for (int round = 0; round < N_ROUNDS && !w->failure[0]; round++) {
        encodings(w, round);
        messages(w);
        if (have_nvrtc) {
            compiles(w, round);
        }
        cache_reads(w);
    }
    return NULL;
}

static void prepare_expectations(void) {
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    for (int c = 0; c < 4; c++) {
        gj_encoding *enc = NULL;
        assert_int_equal(gj_encoding_create(ctx, CONFIGS[c], 0, &enc), GJ_OK);
        expected_params[c] = gj_encoding_n_params(enc);
        free(expected_source[c]);
        expected_source[c] = NULL;
        char *source = NULL;
        assert_int_equal(gj_encoding_generate(ctx, enc, NULL, &source, NULL), GJ_OK);
        expected_source[c] = strdup(source);
        gj_free(source);
        gj_encoding_destroy(enc);
    }
    gj_context_destroy(ctx);
    have_nvrtc = gj_test_have_nvrtc(); /* prints "SKIPPED: ..." once when absent */
    if (!have_nvrtc) {
        printf("SKIPPED (part): no NVRTC, so no compiles and no cache entries: only encodings, sources, "
               "messages and cache bookkeeping run on the threads\n");
    }
}

static void run_threads(gj_context *shared, const char *dir) {
    pthread_t threads[N_THREADS];
    worker workers[N_THREADS];
    memset(workers, 0, sizeof workers);
    for (int i = 0; i < N_THREADS; i++) {
        workers[i].index = i;
        workers[i].shared = shared != NULL;
        workers[i].dir = dir;
        workers[i].ctx = shared ? shared : make_context(dir);
        assert_non_null(workers[i].ctx);
    }
    for (int i = 0; i < N_THREADS; i++) {
        assert_int_equal(pthread_create(&threads[i], NULL, run_worker, &workers[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
    }
    int failed = 0;
    for (int i = 0; i < N_THREADS; i++) {
        if (workers[i].failure[0]) {
            print_error("%s\n", workers[i].failure);
            failed = 1;
        }
        if (!shared) {
            gj_context_destroy(workers[i].ctx);
        }
    }
    assert_false(failed);
}

/* After the threads: every entry verifies, none was counted corrupt, each distinct key
 * is there once. */
static void check_directory(const char *dir) {
    gj_context *ctx = make_context(dir);
    assert_non_null(ctx);
    uint64_t checked = 0, bad = 0, listed = 0;
    assert_int_equal(gj_cache_verify(ctx, &checked, &bad), GJ_OK);
    assert_int_equal(bad, 0);
    assert_int_equal(gj_cache_list(ctx, list_entry, &listed), GJ_OK);
    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_DIRECTORY, &stats), GJ_OK);
    assert_int_equal(stats.corrupt, 0);
    if (have_nvrtc) {
        /* Tiny sources: N_THREADS / 2 per round plus the shared one; the encoding's forward
         * program(s): at least one. */
        assert_true(listed >= (uint64_t)(N_ROUNDS * N_THREADS / 2 + 1 + 1));
        assert_int_equal(stats.entries, listed);
        assert_true(stats.hits > 0);
    }
    printf("%s: %llu entries verified, %llu hits, %llu misses, %llu compiles, %d log messages\n", dir,
           (unsigned long long)checked, (unsigned long long)stats.hits, (unsigned long long)stats.misses,
           (unsigned long long)stats.compiles, atomic_load(&log_messages));
    gj_context_destroy(ctx);
}

static void one_context_many_threads(void **state) {
    (void)state;
    prepare_expectations();
    char *dir = gjt_scratch("shared_context");
    gj_context *ctx = make_context(dir);
    assert_non_null(ctx);
    run_threads(ctx, dir);
    gj_context_destroy(ctx);
    check_directory(dir);
    free(dir);
}

static void a_context_per_thread(void **state) {
    (void)state;
    prepare_expectations();
    char *dir = gjt_scratch("context_per_thread");
    run_threads(NULL, dir);
    check_directory(dir);
    free(dir);
}

/* ------------------------------------------------------------- launches */

/* Launches of one module from N_THREADS threads on the fake driver (tests/fake_cuda): each
 * thread on its own context's stream (two devices), two of them on the NULL stream (device
 * 0's primary context), all at once from the first launch on, so that the per-context
 * caches, the programs compiled on first use, the fp32 gradient buffer (fp16, F = 1) and
 * the side streams of every other round's large backward (its coarse kernel beside the main
 * one, runtime/side_stream.h) are built and used concurrently. */
#define LAUNCH_ROUNDS 200

typedef struct launcher {
    gj_module *module;
    gj_stream stream;
    void *x, *params, *y, *dl_dy, *dparams;
    int failures;
    char message[512];
    gj_context *ctx;
} launcher;

static void *run_launcher(void *arg) {
    launcher *l = arg;
    for (int i = 0; i < LAUNCH_ROUNDS && !l->failures; ++i) {
        gj_forward_desc f;
        gj_forward_desc_init(&f);
        f.n = 777;
        f.x = l->x;
        f.params = l->params;
        f.y = l->y;
        gj_backward_desc b;
        gj_backward_desc_init(&b);
        b.n = i % 2 ? 777u : 1u << 17; /* nothing runs: the buffer's size does not matter */
        b.x = l->x;
        b.params = l->params;
        b.dL_dy = l->dl_dy;
        b.dL_dparams = l->dparams;
        gj_status status = gj_forward(l->module, l->stream, &f);
        if (status == GJ_OK) {
            status = gj_backward(l->module, l->stream, &b);
        }
        if (status != GJ_OK) {
            l->failures++;
            snprintf(l->message, sizeof l->message, "%s: %s", gj_status_name(status), gj_context_errmsg(l->ctx));
        }
    }
    return NULL;
}

static void launches_from_many_threads(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip(); /* the reason is printed */
    }
    gj_fake_driver fake;
    assert_int_equal(gj_fake_driver_open(&fake), 0);
    char *dir = gjt_scratch("launches");
    gj_context *ctx = make_context(dir);
    assert_non_null(ctx);
    gj_encoding *enc = NULL;
    assert_int_equal(gj_encoding_create(ctx, "{\"otype\": \"HashGrid\", \"n_levels\": 3, \"n_features_per_level\": 1, "
                                             "\"log2_hashmap_size\": 10}", 2, &enc),
                     GJ_OK);
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = GJ_PASS_FORWARD | GJ_PASS_BACKWARD;
    gj_module *module = NULL;
    assert_int_equal(gj_module_create(ctx, enc, &opts, &module), GJ_OK);
    void *buffer = NULL; /* host memory from the fake: never touched */
    assert_int_equal(gj_device_alloc(ctx, 1 << 20, &buffer), GJ_OK);
    fake.reset_counts();
    launcher launchers[N_THREADS];
    pthread_t threads[N_THREADS];
    for (int i = 0; i < N_THREADS; ++i) {
        launcher *l = &launchers[i];
        memset(l, 0, sizeof *l);
        l->module = module;
        l->ctx = ctx;
        l->stream = i < 2 ? NULL : (gj_stream)fake.stream_create(fake.context_create(i % 2));
        l->x = l->params = l->y = l->dl_dy = l->dparams = buffer;
        assert_int_equal(pthread_create(&threads[i], NULL, run_launcher, l), 0);
    }
    for (int i = 0; i < N_THREADS; ++i) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        if (launchers[i].failures) {
            fail_msg("thread %d: %s", i, launchers[i].message);
        }
    }
    /* Per round: forward; backward's main kernel, its small-level kernel and the cast. */
    assert_int_equal(fake.count("cuLaunchKernel"), (long)N_THREADS * LAUNCH_ROUNDS * 4);
    /* Each context saw its device once (6 contexts of their own, device 0's primary). */
    assert_int_equal(fake.count("cuCtxGetDevice"), N_THREADS - 2 + 1);
    /* One side stream per context, forked to and joined from by every large backward. */
    assert_int_equal(fake.count("cuStreamCreateWithPriority"), N_THREADS - 2 + 1);
    assert_int_equal(fake.count("cuStreamWaitEvent"), (long)N_THREADS * LAUNCH_ROUNDS);
    printf("%d threads x %d rounds of forward + backward: %ld driver calls, %zu programs\n", N_THREADS, LAUNCH_ROUNDS,
           fake.count_all(), gj_module_n_programs(module));
    gj_device_free(ctx, buffer);
    gj_module_destroy(module);
    gj_encoding_destroy(enc);
    gj_context_destroy(ctx);
    gj_fake_driver_close(&fake);
    free(dir);
}

/* A model's module from many threads while its fused backward compiles behind the passes
 * (docs/networks.md §10, "Tiers"): each thread's forward and backward on a stream of its own
 * (a few in other contexts), the first forwards deciding at once which programs to make, the
 * backward unfused until the thread's program is published, then fused. */
typedef struct model_launcher {
    gj_network_module *module;
    gj_stream stream;
    gj_network_pass_desc d;
    int failures;
    char message[512];
    gj_context *ctx;
} model_launcher;

#define MODEL_ROUNDS 40

/* network_background.c's hold (a GJ_TEST_HOOKS build): its thread waits while it is nonzero. */
extern atomic_int gj__network_test_hold_background;

static void *run_model_launcher(void *arg) {
    model_launcher *l = arg;
    for (int i = 0; i < MODEL_ROUNDS && !l->failures; ++i) {
        gj_status status = gj_network_forward(l->module, l->stream, &l->d);
        if (status == GJ_OK) {
            status = gj_network_backward(l->module, l->stream, &l->d);
        }
        if (status != GJ_OK) {
            l->failures++;
            snprintf(l->message, sizeof l->message, "%s: %s", gj_status_name(status), gj_context_errmsg(l->ctx));
        }
    }
    return NULL;
}

static void a_model_from_many_threads_while_its_backward_compiles(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip(); /* the reason is printed */
    }
    gj_fake_driver fake;
    assert_int_equal(gj_fake_driver_open(&fake), 0);
    setenv("GRIDJIT_NETWORK_TIERS", "1", 1);
    char *dir = gjt_scratch("model_launches");
    gj_context *ctx = make_context(dir);
    assert_non_null(ctx);
    gj_network *net = NULL;
    assert_int_equal(gj_network_create(ctx, "{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 2, "
                                            "\"log2_hashmap_size\": 10}, \"network\": {\"n_neurons\": 16, "
                                            "\"n_hidden_layers\": 1, \"n_output_dims\": 1}}",
                                       2, 0, &net),
                     GJ_OK);
    gj_network_module *module = NULL;
    assert_int_equal(gj_network_module_create(ctx, net, &module), GJ_OK);
    unsetenv("GRIDJIT_NETWORK_TIERS");
    atomic_store(&gj__network_test_hold_background, 1);
    fake.capture_argument("_backward_input", -1); /* the unfused backward's network kernel */
    char *b = NULL; /* host memory from the fake: never touched */
    assert_int_equal(gj_device_alloc(ctx, 1 << 22, (void **)&b), GJ_OK);
    model_launcher launchers[N_THREADS];
    pthread_t threads[N_THREADS];
    for (int i = 0; i < N_THREADS; ++i) {
        model_launcher *l = &launchers[i];
        memset(l, 0, sizeof *l);
        l->module = module;
        l->ctx = ctx;
        l->stream = (gj_stream)fake.stream_create(i < N_THREADS - 2 ? fake.primary(0) : fake.context_create(1));
        gj_network_pass_desc_init(&l->d);
        l->d.n = 100;
        l->d.input = (const float *)b;
        l->d.params = b;
        l->d.encoding_params = b;
        l->d.output = (float *)b;
        l->d.context = b;
        l->d.dL_doutput = (const float *)b;
        l->d.dL_dparams = (float *)b;
        l->d.dL_dencoding_params = b;
        assert_int_equal(pthread_create(&threads[i], NULL, run_model_launcher, l), 0);
    }
    /* The thread's program is let go once an unfused backward has been launched, so that both
     * kinds run, and its publication races the launches. */
    for (int waited_ms = 0; !fake.captured_grid_x() && waited_ms < 120000; ++waited_ms) {
        nanosleep(&(struct timespec){0, 1000000}, NULL); /* the first forward compiles meanwhile */
    }
    assert_true(fake.captured_grid_x() != 0);
    atomic_store(&gj__network_test_hold_background, 0);
    for (int i = 0; i < N_THREADS; ++i) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        if (launchers[i].failures) {
            fail_msg("thread %d: %s", i, launchers[i].message);
        }
    }
    assert_int_equal(gj_network_module_wait_compiles(module), GJ_OK);
    fake.capture_argument(NULL, -1);
    fake.trace_start();
    assert_int_equal(gj_network_backward(module, launchers[0].stream, &launchers[0].d), GJ_OK);
    if (!strstr(fake.trace(), "launch(gj_network_backward,")) {
        fail_msg("not the fused backward after the wait: %s", fake.trace());
    }
    gj_device_free(ctx, b);
    gj_network_module_destroy(module);
    gj_network_destroy(net);
    gj_context_destroy(ctx);
    gj_fake_driver_close(&fake);
    free(dir);
}

static int teardown(void **state) {
    (void)state;
    for (int c = 0; c < 4; c++) {
        free(expected_source[c]);
        expected_source[c] = NULL;
    }
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(one_context_many_threads, teardown),
        cmocka_unit_test_teardown(a_context_per_thread, teardown),
        cmocka_unit_test(launches_from_many_threads),
        cmocka_unit_test(a_model_from_many_threads_while_its_backward_compiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
