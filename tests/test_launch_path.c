/*
 * The launch path without a GPU, on the fake libcuda of tests/fake_cuda (which counts every
 * driver call and refuses a function handle outside the context lifetime it was made in):
 *   - after the first launch in a context, gj_forward / gj_backward / gj_kernel_launch ask
 *     the driver for the current context (and the stream's) and its id, and launch:
 *     no device or attribute query, no cuKernelGetFunction, nothing else;
 *   - the first launch in another context asks about its device once and instantiates
 *     the kernel there, without compiling or loading the program again;
 *   - a context renewed at the same address (destroyed and made again) is not taken for
 *     the old one;
 *   - a failed launch still names the call and its configuration;
 *   - a launch of a loaded pass does not wait for another pass's programs being compiled
 *     (gj_module_prepare on another thread);
 *   - a program compiled apart and loaded (gj_module_load) serves every pass from its one
 *     library;
 *   - a launch that stages point-major rows sets its kernel's L1 carveout once per context;
 *   - a backward of many points runs its coarse kernel on a side stream of the context,
 *     forked after the zeroing and joined before the call returns, except on a stream being
 *     captured or below the threshold; the side streams go with the module; the coarse
 *     kernel takes two blocks a level and multiprocessor there, four in the caller's stream;
 *   - gridjit bench --calls reports the time per call.
 * It also prints the host time per call on the fake driver (nothing runs), for profiling
 * the path: `valgrind --tool=callgrind build/tests/test_launch_path` with
 * GRIDJIT_LAUNCH_PATH_CALLS=1000 and the environment ctest sets (ctest -V shows it).
 *
 * The module's programs are compiled with NVRTC (the fake reports sm_90): without NVRTC
 * the tests are skipped.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "gridjit.h"
#include "fake_driver.h"
#include "run_cli.h"

static gj_fake_driver fake;

typedef struct fixture {
    gj_context *ctx;
    gj_encoding *enc;
    gj_module *module;
    void *x, *params, *y, *dl_dy, *dparams, *dx;
} fixture;

#define N 1000 /* points per launch (nothing runs) */
#define K 200  /* launches counted */

static int setup(void **state) {
    static fixture f;
    memset(&f, 0, sizeof f);
    if (gj_context_create(&f.ctx) != GJ_OK) {
        return -1;
    }
    gj_context_set_log(f.ctx, NULL, NULL);
    if (gj_encoding_create(f.ctx,
                           "{\"otype\": \"HashGrid\", \"n_levels\": 2, \"n_features_per_level\": 2, "
                           "\"log2_hashmap_size\": 10, \"base_resolution\": 16, \"precision\": \"fp32\"}",
                           2, &f.enc) != GJ_OK) {
        return -1;
    }
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = GJ_PASS_FORWARD | GJ_PASS_BACKWARD;
    if (gj_module_create(f.ctx, f.enc, &opts, &f.module) != GJ_OK) {
        printf("gj_module_create: %s\n", gj_context_errmsg(f.ctx));
        return -1;
    }
    const size_t n_params = gj_module_n_params(f.module), width = gj_module_output_width(f.module);
    void **buffers[] = {&f.x, &f.params, &f.y, &f.dl_dy, &f.dparams, &f.dx};
    const size_t sizes[] = {N * 2 * 4, n_params * 4, N * width * 4, N * width * 4, n_params * 4, N * 2 * 4};
    for (size_t i = 0; i < 6; ++i) {
        if (gj_device_alloc(f.ctx, sizes[i], buffers[i]) != GJ_OK) {
            return -1;
        }
    }
    *state = &f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    if (f) {
        void *buffers[] = {f->x, f->params, f->y, f->dl_dy, f->dparams, f->dx};
        for (size_t i = 0; i < 6; ++i) {
            gj_device_free(f->ctx, buffers[i]);
        }
        gj_module_destroy(f->module);
        gj_encoding_destroy(f->enc);
        gj_context_destroy(f->ctx);
    }
    return 0;
}

static gj_status forward(fixture *f, gj_stream stream) {
    gj_forward_desc d;
    gj_forward_desc_init(&d);
    d.n = N;
    d.x = f->x;
    d.params = f->params;
    d.y = f->y;
    return gj_forward(f->module, stream, &d);
}

/* dL/dparams of the fixture's points. */
static gj_backward_desc backward_desc(fixture *f) {
    gj_backward_desc d;
    gj_backward_desc_init(&d);
    d.n = N;
    d.x = f->x;
    d.params = f->params;
    d.dL_dy = f->dl_dy;
    d.dL_dparams = f->dparams;
    return d;
}

static gj_status backward(fixture *f, gj_stream stream) {
    gj_backward_desc d = backward_desc(f);
    return gj_backward(f->module, stream, &d);
}

/* dL/dx (with dL/dparams when with_params) from dy/dx: the point-array buffers stand in
 * for dy/dx (nothing runs). */
static gj_status backward_from_dydx(fixture *f, int with_params) {
    gj_backward_desc d = backward_desc(f);
    d.dL_dparams = with_params ? f->dparams : NULL;
    d.dL_dx = f->dx;
    d.dy_dx = f->y;
    return gj_backward(f->module, NULL, &d);
}

static void ok(fixture *f, gj_status status) {
    if (status != GJ_OK) {
        fail_msg("%s: %s", gj_status_name(status), gj_context_errmsg(f->ctx));
    }
}

/* Every driver call counted since the reset is one of names, each called want[i] times. */
static void expect_calls(const char *what, const char *const *names, const long *want, size_t n) {
    long listed = 0;
    for (size_t i = 0; i < n; ++i) {
        const long got = fake.count(names[i]);
        if (got != want[i]) {
            fail_msg("%s: %s called %ld times, expected %ld", what, names[i], got, want[i]);
        }
        listed += got;
    }
    if (fake.count_all() != listed) {
        static const char *const queries[] = {"cuCtxGetDevice", "cuDeviceGetAttribute", "cuKernelGetFunction",
                                              "cuLibraryLoadData", "cuLibraryGetKernel", "cuStreamGetCtx",
                                              "cuCtxPushCurrent", "cuMemAlloc"};
        for (size_t i = 0; i < sizeof queries / sizeof queries[0]; ++i) {
            printf("  %s: %ld\n", queries[i], fake.count(queries[i]));
        }
        fail_msg("%s: %ld driver calls, of which %ld expected ones", what, fake.count_all(), listed);
    }
}

/* ---------------------------------------------------------------- tests */

static void launches_ask_only_for_the_context(void **state) {
    fixture *f = *state;
    ok(f, forward(f, NULL)); /* compiles and loads the forward program, instantiates the kernel */
    fake.reset_counts();
    for (int i = 0; i < K; ++i) {
        ok(f, forward(f, NULL));
    }
    static const char *const plain[] = {"cuCtxGetCurrent", "cuCtxGetId", "cuLaunchKernel"};
    expect_calls("gj_forward, NULL stream", plain, (const long[]){K, K, K}, 3);

    /* A stream of the current context: its context is asked for too. */
    CUstream stream = fake.stream_create(fake.primary(0));
    assert_non_null(stream);
    fake.reset_counts();
    for (int i = 0; i < K; ++i) {
        ok(f, forward(f, (gj_stream)stream));
    }
    static const char *const streamed[] = {"cuCtxGetCurrent", "cuStreamGetCtx", "cuCtxGetId", "cuLaunchKernel"};
    expect_calls("gj_forward, a stream", streamed, (const long[]){K, K, K, K}, 4);

    /* Backward, overwrite: zero the gradient, the main kernel and the small-level one. */
    ok(f, backward(f, NULL));
    fake.reset_counts();
    for (int i = 0; i < K; ++i) {
        ok(f, backward(f, NULL));
    }
    static const char *const bwd[] = {"cuCtxGetCurrent", "cuCtxGetId", "cuMemsetD32Async", "cuLaunchKernel"};
    expect_calls("gj_backward", bwd, (const long[]){K, K, K, 2 * K}, 4);
}

/* A program compiled apart (gj_compile, what a deployment precompiles offline) and loaded
 * (gj_module_load): its one library loaded once, its passes launched with no other program
 * made, every level-major launch one level a block (a whole unit has no level-group kernels). */
/* The last info message (a loaded program's, below). */
static void keep_info(void *user, gj_log_level level, const char *message) {
    if (level == GJ_LOG_INFO) {
        snprintf(user, 512, "%s", message);
    }
}

static void a_loaded_program_serves_its_passes(void **state) {
    fixture *f = *state;
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = GJ_PASS_FORWARD | GJ_PASS_BACKWARD;
    gj_program *prog = NULL;
    ok(f, gj_compile(f->ctx, f->enc, &opts, "sm_90", &prog));
    gj_module *loaded = NULL;
    fake.reset_counts();
    char info[512] = "";
    gj_context_set_log(f->ctx, keep_info, info);
    gj_context_set_log_level(f->ctx, GJ_LOG_INFO);
    ok(f, gj_module_load(f->ctx, f->enc, &opts, prog, &loaded));
    gj_context_set_log_level(f->ctx, GJ_LOG_WARNING);
    gj_context_set_log(f->ctx, NULL, NULL);
    /* At info the load says what it loaded and what the driver took (docs/cache.md). */
    char key[9];
    snprintf(key, sizeof key, "%s", gj_program_cache_key(prog));
    if (!strstr(info, "loaded ") || !strstr(info, "for the device: ") || (key[0] && !strstr(info, key))) {
        fail_msg("the load's info: \"%s\" (key %s)", info, key);
    }
    gj_program_destroy(prog); /* the module keeps what it needs */
    gj_module *kept = f->module;
    f->module = loaded;
    ok(f, forward(f, NULL));
    ok(f, backward(f, NULL));
    ok(f, backward_from_dydx(f, 1));
    f->module = kept;
    assert_int_equal(fake.count("cuLibraryLoadData"), 1);
    assert_true(fake.count("cuLaunchKernel") >= 4); /* the forward, the backward's two, dL/dx */
    size_t n_programs = gj_module_n_programs(loaded);
    assert_int_equal(n_programs, 1);
    gj_module_destroy(loaded);
    assert_int_equal(fake.count("cuLibraryUnload"), 1);
}

/* With the forward's dy/dx, dL/dx is one streaming launch after the dL/dparams kernels
 * (the level-major kernels then neither take dL/dx nor need it zeroed); alone, it is the
 * only launch. */
static void backward_with_dydx_adds_one_launch(void **state) {
    fixture *f = *state;
    ok(f, backward_from_dydx(f, 1)); /* compiles and loads the backward and helpers programs */
    fake.reset_counts();
    for (int i = 0; i < K; ++i) {
        ok(f, backward_from_dydx(f, 1));
    }
    static const char *const both[] = {"cuCtxGetCurrent", "cuCtxGetId", "cuMemsetD32Async", "cuLaunchKernel"};
    expect_calls("gj_backward, dL/dx from dy/dx", both, (const long[]){K, K, K, 3 * K}, 4);
    assert_int_equal(fake.last_grid_x(), (N + 255) / 256); /* one thread per point */
    fake.reset_counts();
    for (int i = 0; i < K; ++i) {
        ok(f, backward_from_dydx(f, 0));
    }
    static const char *const alone[] = {"cuCtxGetCurrent", "cuCtxGetId", "cuLaunchKernel"};
    expect_calls("gj_backward, dL/dx alone from dy/dx", alone, (const long[]){K, K, K}, 3);
}

static void a_new_context_is_asked_once(void **state) {
    fixture *f = *state;
    ok(f, forward(f, NULL));
    const size_t programs = gj_module_n_programs(f->module);
    CUcontext other = fake.context_create(1);
    CUstream stream = fake.stream_create(other);
    assert_non_null(stream);
    fake.reset_counts();
    ok(f, forward(f, (gj_stream)stream));
    /* Device 1 is new to the module: its compute capability and multiprocessor count. */
    static const char *const first[] = {"cuCtxGetCurrent", "cuStreamGetCtx", "cuCtxPushCurrent", "cuCtxGetId",
                                        "cuCtxGetDevice", "cuDeviceGetAttribute", "cuKernelGetFunction",
                                        "cuLaunchKernel", "cuCtxPopCurrent"};
    expect_calls("first launch in another context", first, (const long[]){1, 1, 1, 1, 1, 3, 1, 1, 1}, 9);
    assert_int_equal(gj_module_n_programs(f->module), programs); /* same architecture: same program */
    fake.reset_counts();
    for (int i = 0; i < K; ++i) {
        ok(f, forward(f, (gj_stream)stream));
    }
    static const char *const next[] = {"cuCtxGetCurrent", "cuStreamGetCtx", "cuCtxPushCurrent", "cuCtxGetId",
                                       "cuLaunchKernel", "cuCtxPopCurrent"};
    expect_calls("later launches in that context", next, (const long[]){K, K, K, K, K, K}, 6);
}

/* A thread with no current context (a PyTorch autograd worker) launching on a stream: the
 * stream's context is made current and left so, not pushed and popped (which would leave
 * the thread without one, and the CUDA runtime's next call there to warn). */
typedef struct thread_launch {
    fixture *f;
    CUstream stream;
    gj_status status;
    CUcontext before, after;
} thread_launch;

static void *launch_from_a_bare_thread(void *arg) {
    thread_launch *t = arg;
    t->before = fake.current();
    t->status = forward(t->f, (gj_stream)t->stream);
    t->after = fake.current();
    return NULL;
}

static void a_thread_without_a_context_keeps_the_stream_s(void **state) {
    fixture *f = *state;
    ok(f, forward(f, NULL)); /* compiled and known in device 0's primary context */
    CUcontext other = fake.context_create(0);
    thread_launch t = {f, fake.stream_create(other), GJ_OK, NULL, NULL};
    ok(f, forward(f, (gj_stream)t.stream)); /* known in that context too */
    fake.reset_counts();
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, launch_from_a_bare_thread, &t), 0);
    assert_int_equal(pthread_join(thread, NULL), 0);
    ok(f, t.status);
    assert_null(t.before);
    assert_ptr_equal(t.after, other);
    static const char *const calls[] = {"cuCtxGetCurrent", "cuStreamGetCtx", "cuCtxSetCurrent", "cuCtxGetId",
                                        "cuLaunchKernel"};
    expect_calls("a launch from a thread without a context", calls, (const long[]){1, 1, 1, 1, 1}, 5);
}

/* A pass's programs compiled on one thread (gj_module_prepare) while another launches a pass
 * already loaded: the launch does not wait for the compile (the module compiles without its
 * lock and loads under it). The compile takes NVRTC hundreds of milliseconds (the cache is
 * off); the launch, on the fake driver, well under a millisecond. */
typedef struct preparing {
    gj_module *module;
    gj_status status;
    double ms;
} preparing;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void *prepare_the_forward(void *arg) {
    preparing *p = arg;
    const double start = now_ms();
    p->status = gj_module_prepare(p->module, GJ_PASS_FORWARD);
    p->ms = now_ms() - start;
    return NULL;
}

static void a_launch_does_not_wait_for_another_pass_s_compile(void **state) {
    fixture *f = *state;
    ok(f, gj_context_set_cache_enabled(f->ctx, 0));
    ok(f, backward(f, NULL)); /* the backward's programs compiled and loaded */
    preparing p = {f->module, GJ_OK, 0};
    pthread_t thread;
    const double start = now_ms();
    assert_int_equal(pthread_create(&thread, NULL, prepare_the_forward, &p), 0);
    const struct timespec a_while = {0, 20 * 1000 * 1000}; /* the compile under way */
    nanosleep(&a_while, NULL);
    const double launch_start = now_ms();
    ok(f, backward(f, NULL));
    const double launch_ms = now_ms() - launch_start;
    assert_int_equal(pthread_join(thread, NULL), 0);
    ok(f, p.status);
    const double prepare_ms = now_ms() - start;
    printf("prepare of the forward %.1f ms; a backward launched meanwhile %.2f ms\n", p.ms, launch_ms);
    /* Waiting for the compile would take the launch nearly to the prepare's end. */
    if (launch_ms > 0.5 * (prepare_ms - 20.0)) {
        fail_msg("the backward took %.1f ms while the forward's %.1f ms prepare ran", launch_ms, prepare_ms);
    }
    fake.reset_counts();
    ok(f, forward(f, NULL)); /* prepared: launched with nothing compiled or loaded */
    assert_int_equal(fake.count("cuLibraryLoadData"), 0);
}

static void a_renewed_context_is_not_taken_for_the_old_one(void **state) {
    fixture *f = *state;
    ok(f, forward(f, NULL));
    /* The same handle, another lifetime: the old function would be refused (INVALID_HANDLE). */
    fake.context_renew(fake.primary(0));
    fake.reset_counts();
    ok(f, forward(f, NULL));
    static const char *const again[] = {"cuCtxGetCurrent", "cuCtxGetId", "cuCtxGetDevice", "cuDeviceGetAttribute",
                                        "cuKernelGetFunction", "cuLaunchKernel"};
    expect_calls("first launch in the renewed context", again, (const long[]){1, 1, 1, 2, 1, 1}, 6);
    fake.reset_counts();
    ok(f, forward(f, NULL));
    static const char *const plain[] = {"cuCtxGetCurrent", "cuCtxGetId", "cuLaunchKernel"};
    expect_calls("the launch after", plain, (const long[]){1, 1, 1}, 3);
}

static void a_failed_launch_names_the_call(void **state) {
    fixture *f = *state;
    ok(f, forward(f, NULL));
    fake.fail_next_launch(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    assert_int_equal(forward(f, NULL), GJ_ERROR_CUDA);
    const char *message = gj_context_errmsg(f->ctx);
    if (!strstr(message, "gj_forward: cuLaunchKernel(forward, grid 4x2, block 256, 0 bytes shared) failed: ")) {
        fail_msg("message: %s", message);
    }
    ok(f, forward(f, NULL)); /* the next one is fine */
    assert_string_equal(gj_context_errmsg(f->ctx), "");
}

/* A user module of source with its n kernels names. */
static gj_user_module *user_module_of(fixture *f, const char *source, const char *const *names, size_t n) {
    gj_source_desc desc;
    gj_source_desc_init(&desc);
    desc.source = source;
    desc.kernels = names;
    desc.n_kernels = n;
    gj_user_module *um = NULL;
    ok(f, gj_user_module_create(f->ctx, &desc, &um));
    return um;
}

static void user_kernel_launches_ask_only_for_the_context(void **state) {
    fixture *f = *state;
    static const char source[] = "struct args { float *p; int n; };\n"
                                 "__global__ void scale(float *p, int n) { if (threadIdx.x < n) p[threadIdx.x] *= 2; }\n"
                                 "__global__ void packed(args a) { if (threadIdx.x < a.n) a.p[threadIdx.x] = 0; }\n";
    static const char *const names[] = {"scale", "packed"};
    gj_user_module *um = user_module_of(f, source, names, 2);
    gj_kernel *scale = NULL, *packed = NULL;
    ok(f, gj_user_module_kernel(um, "scale", &scale));
    ok(f, gj_user_module_kernel(um, "packed", &packed));
    gj_launch_config config;
    gj_launch_config_init(&config);
    config.block[0] = 128;
    int n = 100;
    void *p = f->y;
    void *args[] = {&p, &n};
    struct {
        void *p;
        int n;
    } buffer = {p, n};
    /* A launch with argument pointers never asks for the parameters' layout (the driver's
     * only way to count them is a failing call, an API error under compute-sanitizer); the
     * first packed launch does, once: parameters 0 and 1, then the index that fails. */
    fake.reset_counts();
    ok(f, gj_kernel_launch(scale, &config, args));
    assert_int_equal(fake.count("cuFuncGetParamInfo"), 0);
    ok(f, gj_kernel_launch_packed(packed, &config, &buffer, sizeof buffer));
    assert_int_equal(fake.count("cuFuncGetParamInfo"), 3);
    /* A buffer shorter than the parameters (12 bytes, the fake says) is refused by name. */
    assert_int_equal(gj_kernel_launch_packed(packed, &config, &buffer, 8), GJ_ERROR_INVALID_ARGUMENT);
    if (!strstr(gj_context_errmsg(f->ctx), "the kernel's parameters take 12 bytes, the buffer holds 8")) {
        fail_msg("message: %s", gj_context_errmsg(f->ctx));
    }
    fake.reset_counts();
    for (int i = 0; i < K; ++i) {
        ok(f, gj_kernel_launch(scale, &config, args));
        ok(f, gj_kernel_launch_packed(packed, &config, &buffer, sizeof buffer));
    }
    static const char *const plain[] = {"cuCtxGetCurrent", "cuCtxGetId", "cuLaunchKernel"};
    expect_calls("gj_kernel_launch", plain, (const long[]){2 * K, 2 * K, 2 * K}, 3);
    /* Another context: asked once there. */
    CUstream stream = fake.stream_create(fake.context_create(0));
    config.stream = (gj_stream)stream;
    ok(f, gj_kernel_launch(scale, &config, args));
    fake.reset_counts();
    ok(f, gj_kernel_launch(scale, &config, args));
    static const char *const streamed[] = {"cuCtxGetCurrent", "cuStreamGetCtx", "cuCtxPushCurrent", "cuCtxGetId",
                                           "cuLaunchKernel", "cuCtxPopCurrent"};
    expect_calls("gj_kernel_launch on another context's stream", streamed, (const long[]){1, 1, 1, 1, 1, 1}, 6);
    gj_user_module_destroy(um);
}

/* gj_kernel_set_shared_carveout: the preference reaches the driver on the kernel's next
 * launch in each context (set once there, not per launch); -1 hands the choice back to the
 * driver; a percent outside -1 ... 100 is refused by name. */
static void a_kernel_carveout_is_set_once_per_context(void **state) {
    fixture *f = *state;
    static const char source[] = "__global__ void scale(float *p, int n) { if (threadIdx.x < n) p[threadIdx.x] *= 2; }\n";
    static const char *const names[] = {"scale"};
    gj_user_module *um = user_module_of(f, source, names, 1);
    gj_kernel *scale = NULL;
    ok(f, gj_user_module_kernel(um, "scale", &scale));
    gj_launch_config config;
    gj_launch_config_init(&config);
    config.block[0] = 128;
    int n = 100;
    void *p = f->y;
    void *args[] = {&p, &n};
    fake.reset_carveout();
    ok(f, gj_kernel_launch(scale, &config, args));
    assert_int_equal(fake.last_carveout(), GJ_FAKE_NO_CARVEOUT); /* never asked: the driver's choice */

    ok(f, gj_kernel_set_shared_carveout(scale, 48));
    assert_int_equal(fake.last_carveout(), GJ_FAKE_NO_CARVEOUT); /* not before a launch */
    fake.reset_counts();
    ok(f, gj_kernel_launch(scale, &config, args));
    assert_int_equal(fake.last_carveout(), 48);
    assert_int_equal(fake.count("cuFuncSetAttribute"), 1);
    ok(f, gj_kernel_launch(scale, &config, args));
    assert_int_equal(fake.count("cuFuncSetAttribute"), 1); /* once per context */

    /* Another context gets it on its first launch. */
    fake.reset_carveout();
    config.stream = (gj_stream)fake.stream_create(fake.context_create(0));
    ok(f, gj_kernel_launch(scale, &config, args));
    assert_int_equal(fake.last_carveout(), 48);
    config.stream = NULL;

    ok(f, gj_kernel_set_shared_carveout(scale, -1));
    ok(f, gj_kernel_launch(scale, &config, args));
    assert_int_equal(fake.last_carveout(), -1);

    assert_int_equal(gj_kernel_set_shared_carveout(scale, 101), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(f->ctx), "gj_kernel_set_shared_carveout(scale): percent is 101"));
    assert_int_equal(gj_kernel_set_shared_carveout(scale, -2), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_kernel_set_shared_carveout(NULL, 50), GJ_ERROR_INVALID_ARGUMENT);
    fake.reset_carveout();
    ok(f, gj_kernel_launch(scale, &config, args));
    assert_int_equal(fake.last_carveout(), GJ_FAKE_NO_CARVEOUT); /* the refused calls changed nothing */
    gj_user_module_destroy(um);
}

/* A launch that stages point-major rows in shared memory prefers the carveout of the blocks
 * that its occupancy allows (the rest stays L1), chosen on its first launch in a context and
 * not asked again while the staged bytes stay the same; launches without staging leave the
 * driver's choice; GRIDJIT_STAGE_CARVEOUT=0 (read when a module is made) turns it off. */
static void staged_launches_prefer_l1(void **state) {
    fixture *f = *state;
    /* 8 levels of F = 2 fp32: 64-byte rows, so the point-major forward takes 4 levels per
     * thread and stages them (256 rows of 9 words, 9216 bytes a block). */
    gj_encoding *enc = NULL;
    ok(f, gj_encoding_create(f->ctx,
                             "{\"otype\": \"HashGrid\", \"n_levels\": 8, \"n_features_per_level\": 2, "
                             "\"log2_hashmap_size\": 10, \"precision\": \"fp32\"}",
                             2, &enc));
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = GJ_PASS_FORWARD;
    for (int off = 0; off < 2; ++off) {
        if (off) {
            setenv("GRIDJIT_STAGE_CARVEOUT", "0", 1);
        }
        gj_module *m = NULL;
        ok(f, gj_module_create(f->ctx, enc, &opts, &m));
        unsetenv("GRIDJIT_STAGE_CARVEOUT");
        void *y = NULL;
        ok(f, gj_device_alloc(f->ctx, (size_t)N * gj_module_output_width(m) * 4, &y));
        gj_forward_desc d;
        gj_forward_desc_init(&d);
        d.n = N;
        d.x = f->x;
        d.params = f->params;
        d.y = y;
        d.y_layout = GJ_LAYOUT_SOA; /* one level per block, nothing staged */
        fake.reset_carveout();
        fake.reset_counts();
        ok(f, gj_forward(m, NULL, &d));
        assert_int_equal(fake.count("cuFuncSetAttribute"), 0);
        d.y_layout = GJ_LAYOUT_AOS;
        fake.reset_counts();
        ok(f, gj_forward(m, NULL, &d));
        if (off) {
            assert_int_equal(fake.count("cuFuncSetAttribute"), 0);
            assert_int_equal(fake.last_carveout(), GJ_FAKE_NO_CARVEOUT);
        } else {
            /* Back to the default, then the percent: the fake's occupancy is 2048 / 256 = 8
             * blocks, each 2304 (64 points: the group of four levels is split one level a
             * thread) + 1024 (reserved) bytes, of 228 KiB: 12 % (rounded up). */
            assert_int_equal(fake.count("cuFuncSetAttribute"), 2);
            assert_int_equal(fake.last_carveout(), 12);
            assert_int_equal(fake.count("cuOccupancyMaxActiveBlocksPerMultiprocessor"), 1);
            assert_int_equal(fake.count("cuDeviceGetAttribute"), 2); /* shared memory per SM and reserved */
        }
        fake.reset_counts();
        for (int i = 0; i < 3; ++i) {
            ok(f, gj_forward(m, NULL, &d));
        }
        assert_int_equal(fake.count("cuFuncSetAttribute"), 0); /* chosen once */
        gj_device_free(f->ctx, y);
        gj_module_destroy(m);
    }

    /* One kernel, staged and not: the backward to the parameters takes four levels per
     * thread either way (backward_rows), staging point-major dL/dy rows only. Its carveout
     * follows: chosen for the staged launch, handed back to the driver for the other. */
    opts.passes = GJ_PASS_BACKWARD;
    gj_module *m = NULL;
    ok(f, gj_module_create(f->ctx, enc, &opts, &m));
    void *dl_dy = NULL, *dparams = NULL;
    ok(f, gj_device_alloc(f->ctx, (size_t)N * gj_module_output_width(m) * 4, &dl_dy));
    ok(f, gj_device_alloc(f->ctx, gj_module_n_params(m) * 4, &dparams));
    gj_backward_desc d;
    gj_backward_desc_init(&d);
    d.n = N;
    d.x = f->x;
    d.params = f->params;
    d.dL_dy = dl_dy;
    d.dL_dparams = dparams;
    ok(f, gj_backward(m, NULL, &d)); /* point-major dL/dy: staged */
    fake.reset_carveout();
    fake.reset_counts();
    d.dL_dy_layout = GJ_LAYOUT_SOA;
    ok(f, gj_backward(m, NULL, &d));
    assert_int_equal(fake.count("cuFuncSetAttribute"), 1);
    assert_int_equal(fake.last_carveout(), -1);
    ok(f, gj_backward(m, NULL, &d));
    assert_int_equal(fake.count("cuFuncSetAttribute"), 1);
    d.dL_dy_layout = GJ_LAYOUT_AOS;
    ok(f, gj_backward(m, NULL, &d));
    assert_int_equal(fake.count("cuFuncSetAttribute"), 3); /* -1, then the staged bytes' percent */
    assert_true(fake.last_carveout() > 0 && fake.last_carveout() < 100);
    gj_device_free(f->ctx, dparams);
    gj_device_free(f->ctx, dl_dy);
    gj_module_destroy(m);
    gj_encoding_destroy(enc);
}

/* Nanoseconds per call of pass, over calls calls on the NULL stream. */
static double ns_per_call(fixture *f, gj_status (*pass)(fixture *, gj_stream), long calls) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < calls; ++i) {
        ok(f, pass(f, NULL));
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)calls;
}

/* A forward-only module of config in dims dimensions made with the environment variable
 * `variable` set to warps (NULL: unset), blocks of block_size threads and levels_per_thread
 * (0: the defaults), its buffers and a feature-major forward descriptor over them. */
typedef struct capped_forward {
    gj_encoding *enc;
    gj_module *m;
    void *x, *y, *params;
    gj_forward_desc d;
} capped_forward;

static void capped_forward_make(fixture *f, const char *config, unsigned dims, const char *variable, const char *warps,
                                uint32_t block_size, uint32_t levels_per_thread, capped_forward *c) {
    if (warps) {
        setenv(variable, warps, 1);
    }
    ok(f, gj_encoding_create(f->ctx, config, dims, &c->enc));
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = GJ_PASS_FORWARD;
    opts.block_size = block_size;
    opts.levels_per_thread = levels_per_thread;
    ok(f, gj_module_create(f->ctx, c->enc, &opts, &c->m));
    unsetenv(variable);
    ok(f, gj_device_alloc(f->ctx, (size_t)N * dims * 4, &c->x));
    ok(f, gj_device_alloc(f->ctx, (size_t)N * gj_module_output_width(c->m) * 2, &c->y));
    ok(f, gj_device_alloc(f->ctx, gj_module_n_params(c->m) * 2, &c->params));
    gj_forward_desc_init(&c->d);
    c->d.n = N;
    c->d.x = c->x;
    c->d.params = c->params;
    c->d.y = c->y;
    c->d.y_layout = GJ_LAYOUT_SOA;
}

static void capped_forward_free(fixture *f, capped_forward *c) {
    gj_device_free(f->ctx, c->x);
    gj_device_free(f->ctx, c->y);
    gj_device_free(f->ctx, c->params);
    gj_module_destroy(c->m);
    gj_encoding_destroy(c->enc);
}

/* The last launch (blocks of 8 warps) held to `warps` (0: not held): its carveout set once to
 * 14 % (32 KiB) with a share per block that fits warps / 8 blocks and not one more, 192 bytes
 * under its part and the reserved KiB counted; or no carveout and no shared memory. */
static void expect_cap(unsigned warps) {
    if (warps) {
        const unsigned blocks = warps / 8, share = 32768 / blocks - 192;
        assert_int_equal(fake.count("cuFuncSetAttribute"), 1);
        assert_int_equal(fake.last_carveout(), 14);
        assert_int_equal(fake.last_shared(), share - 1024);
        assert_true(blocks * share <= 32768 && (blocks + 1) * share > 32768);
    } else {
        assert_int_equal(fake.count("cuFuncSetAttribute"), 0);
        assert_int_equal(fake.last_carveout(), GJ_FAKE_NO_CARVEOUT);
        assert_int_equal(fake.last_shared(), 0);
    }
}

/* A level-major forward (one level a block, as asked) held to W resident warps a multiprocessor asks for a
 * share of a 32 KiB carveout per block, so that no more blocks fit: 14 % of 228 KiB (the driver
 * rounds it up to 32 KiB), for 32 warps 6976 bytes a block of 8 warps (8000 with the reserved
 * KiB: four fit, five do not); the carveout set once per context. W is 32 by default for hashed
 * levels of 3 or more dimensions and 0 (launches as before) for 2-D or dense ones;
 * GRIDJIT_FORWARD_WARPS_PER_SM (read when a module is made) overrides it, 0 turning it off. */
static void forwards_cap_their_resident_warps(void **state) {
    fixture *f = *state;
    static const char hash[] = "{\"otype\": \"HashGrid\", \"n_levels\": 4, \"log2_hashmap_size\": 10}";
    static const char dense[] = "{\"otype\": \"DenseGrid\", \"n_levels\": 2}";
    static const struct {
        const char *config;
        unsigned dims;
        const char *env;
        unsigned warps; /* expected cap, 0: none */
    } cases[] = {
        {hash, 3, NULL, 32}, {hash, 3, "32", 32}, {hash, 2, "64", 64}, /* 64: a block of 8 warps fits 8 times */
        {hash, 3, "0", 0},   {hash, 2, NULL, 0},  {dense, 3, NULL, 0},  {dense, 3, "24", 24},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        print_message("%u-D %s, GRIDJIT_FORWARD_WARPS_PER_SM=%s\n", cases[i].dims, cases[i].config,
                      cases[i].env ? cases[i].env : "(unset)");
        capped_forward c;
        capped_forward_make(f, cases[i].config, cases[i].dims, "GRIDJIT_FORWARD_WARPS_PER_SM", cases[i].env, 0, 1, &c);
        fake.reset_carveout();
        fake.reset_counts();
        ok(f, gj_forward(c.m, NULL, &c.d));
        expect_cap(cases[i].warps);
        /* Later launches in the context: the same bytes, no attribute set again. */
        const unsigned first = fake.last_shared();
        fake.reset_counts();
        ok(f, gj_forward(c.m, NULL, &c.d));
        ok(f, gj_forward(c.m, NULL, &c.d));
        assert_int_equal(fake.count("cuFuncSetAttribute"), 0);
        assert_int_equal(fake.last_shared(), first);
        capped_forward_free(f, &c);
    }
    /* Blocks of 2 warps would need 16 a multiprocessor, more than the carveout's shares can tell
     * apart: no cap, and none asked for again. */
    capped_forward c;
    capped_forward_make(f, hash, 3, "GRIDJIT_FORWARD_WARPS_PER_SM", NULL, 64, 1, &c);
    ok(f, gj_forward(c.m, NULL, &c.d));
    fake.reset_counts();
    ok(f, gj_forward(c.m, NULL, &c.d));
    static const char *const plain[] = {"cuCtxGetCurrent", "cuCtxGetId", "cuLaunchKernel"};
    expect_calls("gj_forward, 64-thread blocks", plain, (const long[]){1, 1, 1}, 3);
    assert_int_equal(fake.last_shared(), 0);
    capped_forward_free(f, &c);
}

/* A point-major forward that stages its rows (16 levels of F = 2 in fp16: 64-byte rows, eight
 * levels a thread, 9216 bytes a block of 256 points) is held by default for hashed 3-D levels
 * to 24 warps (three blocks: a share of a 32 KiB carveout of 9706 bytes, at least what it
 * stages), with dy/dx and in 4-D to 16 (two: 15168 bytes), instead of the staging carveout of
 * gj__module_fit_carveout; in 2-D to 24 and with dy/dx 32; 32 warps
 * (GRIDJIT_STAGED_FORWARD_WARPS_PER_SM, both forms) need the 64 KiB carveout, 0 falls back to
 * the staging carveout, and dense levels are not capped. */
static void staging_forwards_cap_their_resident_warps(void **state) {
    fixture *f = *state;
    static const char config[] = "{\"otype\": \"HashGrid\", \"n_levels\": 16, \"log2_hashmap_size\": 10}";
    /* 16 dense levels of 4^2 to 17^2 cells: the same rows, no hashed level. */
    static const char dense[] = "{\"otype\": \"DenseGrid\", \"n_levels\": 16, \"base_resolution\": 4, "
                                "\"per_level_scale\": 1.1}";
    static const struct {
        const char *config;
        unsigned dims;
        const char *env;
        int dydx;
        unsigned carveout, shared, attributes; /* expected percent, bytes, cuFuncSetAttribute calls */
    } cases[] = {
        {config, 3, NULL, 0, 14, 32768 / 3 - 192 - 1024, 1},
        {config, 3, NULL, 1, 14, 15168, 1},
        {config, 4, NULL, 0, 14, 15168, 1},
        {config, 3, "32", 0, 28, 15168, 1},
        {config, 3, "32", 1, 28, 15168, 1},
        /* The staging carveout: the fake's occupancy of 8 blocks of 9216 + 1024 bytes, 36 %. */
        {config, 3, "0", 0, 100 * 8 * (9216 + 1024) / (228 * 1024) + 1, 9216, 2},
        {config, 3, "0", 1, 100 * 8 * (9216 + 1024) / (228 * 1024) + 1, 9216, 2},
        {config, 2, NULL, 0, 14, 32768 / 3 - 192 - 1024, 1},
        {config, 2, NULL, 1, 28, 15168, 1},
        {dense, 2, NULL, 0, 100 * 8 * (9216 + 1024) / (228 * 1024) + 1, 9216, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        print_message("%u-D %s%s, GRIDJIT_STAGED_FORWARD_WARPS_PER_SM=%s\n", cases[i].dims, cases[i].config,
                      cases[i].dydx ? " with dy/dx" : "", cases[i].env ? cases[i].env : "(unset)");
        capped_forward c;
        capped_forward_make(f, cases[i].config, cases[i].dims, "GRIDJIT_STAGED_FORWARD_WARPS_PER_SM", cases[i].env, 0, 0,
                            &c);
        c.d.y_layout = GJ_LAYOUT_AOS;
        void *dy_dx = NULL;
        if (cases[i].dydx) {
            ok(f, gj_device_alloc(f->ctx, (size_t)N * cases[i].dims * gj_module_output_width(c.m) * 4, &dy_dx));
            c.d.dy_dx = dy_dx;
        }
        fake.reset_carveout();
        fake.reset_counts();
        ok(f, gj_forward(c.m, NULL, &c.d));
        assert_int_equal(fake.count("cuFuncSetAttribute"), cases[i].attributes);
        assert_int_equal(fake.last_carveout(), cases[i].carveout);
        assert_int_equal(fake.last_shared(), cases[i].shared);
        fake.reset_counts();
        ok(f, gj_forward(c.m, NULL, &c.d));
        assert_int_equal(fake.count("cuFuncSetAttribute"), 0); /* chosen once a context */
        assert_int_equal(fake.last_shared(), cases[i].shared);
        gj_device_free(f->ctx, dy_dx);
        capped_forward_free(f, &c);
    }
    /* Blocks of one warp would need 16 a multiprocessor, more than a cap holds: the staging
     * carveout instead (back to the default, then the percent), for 32 rows of 36 bytes. */
    capped_forward c;
    capped_forward_make(f, config, 3, "GRIDJIT_STAGED_FORWARD_WARPS_PER_SM", NULL, 32, 0, &c);
    c.d.y_layout = GJ_LAYOUT_AOS;
    fake.reset_carveout();
    fake.reset_counts();
    ok(f, gj_forward(c.m, NULL, &c.d));
    assert_int_equal(fake.count("cuFuncSetAttribute"), 2);
    assert_int_equal(fake.count("cuOccupancyMaxActiveBlocksPerMultiprocessor"), 1);
    assert_int_equal(fake.last_shared(), 32 * 36);
    capped_forward_free(f, &c);
}

/* A feature-major forward of 3-D fp16 levels whose largest table takes 2 MiB takes two levels
 * a thread by default (grid y 2 for 4 levels), held to 24 warps: three blocks of 8 warps, each
 * asking for a share of a 32 KiB carveout that fits three and not four.
 * GRIDJIT_GROUPED_FORWARD_WARPS_PER_SM overrides the warps, 0 turning the cap off (the pairs
 * stay); a 2-D module runs one level a block, uncapped. */
static void grouped_forwards_cap_their_resident_warps(void **state) {
    fixture *f = *state;
    static const char hash[] = "{\"otype\": \"HashGrid\", \"n_levels\": 4, \"log2_hashmap_size\": 19}";
    static const struct {
        unsigned dims;
        const char *env;
        unsigned warps, grid_y; /* expected cap (0: none), level groups */
    } cases[] = {{3, NULL, 24, 2}, {3, "16", 16, 2}, {3, "0", 0, 2}, {2, NULL, 0, 4}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        print_message("%u-D, GRIDJIT_GROUPED_FORWARD_WARPS_PER_SM=%s\n", cases[i].dims, cases[i].env ? cases[i].env : "(unset)");
        capped_forward c;
        capped_forward_make(f, hash, cases[i].dims, "GRIDJIT_GROUPED_FORWARD_WARPS_PER_SM", cases[i].env, 0, 0, &c);
        fake.reset_carveout();
        fake.reset_counts();
        ok(f, gj_forward(c.m, NULL, &c.d));
        assert_int_equal(fake.last_grid_y(), cases[i].grid_y);
        expect_cap(cases[i].warps);
        capped_forward_free(f, &c);
    }
}

/* One kernel held to two counts: C1's level-group forward with dy/dx takes 24 warps (three
 * blocks) into feature-major outputs and 16 (two) where it stages point-major rows. Each launch
 * gets its own share whatever ran before it in the context (a share chosen for three blocks
 * once made the staging launches after it hold three: gridjit bench's dy/dx forward before
 * the timed ones cost C1's point-major forward with dy/dx 4.4 %), the carveout set again only
 * when the count changes. */
static void one_kernel_keeps_each_cap(void **state) {
    fixture *f = *state;
    static const char c1[] = "{\"otype\": \"HashGrid\", \"log2_hashmap_size\": 19}";
    capped_forward c;
    capped_forward_make(f, c1, 3, "GRIDJIT_GROUPED_FORWARD_WARPS_PER_SM", NULL, 0, 0, &c);
    void *dy_dx = NULL;
    ok(f, gj_device_alloc(f->ctx, (size_t)N * 3 * gj_module_output_width(c.m) * 4, &dy_dx));
    c.d.dy_dx = dy_dx;
    static const struct {
        gj_data_layout layout;
        unsigned shared, attributes;
    } steps[] = {{GJ_LAYOUT_SOA, 32768 / 3 - 192 - 1024, 1}, {GJ_LAYOUT_AOS, 15168, 1}, {GJ_LAYOUT_AOS, 15168, 0},
                 {GJ_LAYOUT_SOA, 32768 / 3 - 192 - 1024, 1}, {GJ_LAYOUT_AOS, 15168, 1}};
    fake.reset_carveout();
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; ++i) {
        c.d.y_layout = steps[i].layout;
        fake.reset_counts();
        ok(f, gj_forward(c.m, NULL, &c.d));
        print_message("launch %zu (%s): %u bytes\n", i, steps[i].layout == GJ_LAYOUT_AOS ? "AoS" : "SoA",
                      fake.last_shared());
        assert_int_equal(fake.last_grid_y(), steps[i].layout == GJ_LAYOUT_AOS ? 2 : 8);
        assert_int_equal(fake.last_shared(), steps[i].shared);
        assert_int_equal(fake.count("cuFuncSetAttribute"), steps[i].attributes);
        assert_int_equal(fake.last_carveout(), 14);
    }
    gj_device_free(f->ctx, dy_dx);
    capped_forward_free(f, &c);
}

/* The stream order of one gj_backward of n points on stream (trace entries, fake_driver.h). */
static const char *backward_trace(fixture *f, uint64_t n, gj_stream stream) {
    gj_backward_desc d = backward_desc(f);
    d.n = n;
    fake.trace_start();
    ok(f, gj_backward(f->module, stream, &d));
    return fake.trace();
}

static void expect_trace(const char *what, const char *got, const char *want) {
    if (strcmp(got, want) != 0) {
        fail_msg("%s:\n  got  %s\n  want %s", what, got, want);
    }
}

#define BESIDE_N (1u << 20) /* at least GJ__COARSE_BESIDE_MIN_POINTS (nothing runs) */
/* The coarse kernel's blocks a level and multiprocessor beside the main kernel and after it
 * (GJ__COARSE_BESIDE_BLOCKS_PER_SM and GJ__COARSE_BLOCKS_PER_SM of src/runtime/module.h). */
#define COARSE_BESIDE_BLOCKS 2u
#define COARSE_AFTER_BLOCKS 4u

/* A backward of many points forks to the context's side stream (B) after zeroing the
 * gradient on the caller's (A), queues the coarse kernel there before the main kernel on A,
 * and A waits for B before anything queued after the call. */
static void coarse_kernel_runs_beside(void **state) {
    fixture *f = *state;
    ok(f, backward(f, NULL)); /* compiled, known in the primary context; below the threshold */
    static const char beside[] = "memset(A) record(E1,A) wait(B,E1) launch(gj_encode_backward_rows_coarse,B) "
                                 "launch(gj_encode_backward_rows,A) record(E2,B) wait(A,E2)";
    static const char in_order[] = "memset(A) launch(gj_encode_backward_rows,A) launch(gj_encode_backward_rows_coarse,A)";
    fake.capture_argument("_coarse", -1); /* the coarse kernel's grid.x: its blocks a level */
    expect_trace("below the threshold", backward_trace(f, N, NULL), in_order);
    assert_int_equal(fake.captured_grid_x(), (N + 255) / 256); /* fewer points than blocks */
    fake.reset_counts();
    expect_trace("the first large backward", backward_trace(f, BESIDE_N, NULL), beside);
    /* Beside the main kernel two blocks a level and multiprocessor (the fake has 132). */
    assert_int_equal(fake.captured_grid_x(), COARSE_BESIDE_BLOCKS * 132);
    /* The side stream is made once, at the greatest priority, with its two events. */
    assert_int_equal(fake.count("cuStreamCreateWithPriority"), 1);
    assert_int_equal(fake.count("cuCtxGetStreamPriorityRange"), 1);
    assert_int_equal(fake.last_priority(), -5);
    assert_int_equal(fake.count("cuEventCreate"), 2);
    fake.reset_counts();
    expect_trace("the next one", backward_trace(f, BESIDE_N, NULL), beside);
    static const char *const next[] = {"cuCtxGetCurrent",  "cuCtxGetId",      "cuStreamIsCapturing",
                                       "cuMemsetD32Async", "cuEventRecord",   "cuStreamWaitEvent",
                                       "cuLaunchKernel"};
    expect_calls("a large backward", next, (const long[]){1, 1, 1, 1, 2, 2, 2}, 7);

    /* A stream of another context: that context's own side stream (the fake refuses a launch
     * on a stream of another context than the current one). */
    CUstream other = fake.stream_create(fake.context_create(0));
    assert_non_null(other);
    ok(f, backward(f, (gj_stream)other)); /* the kernels known in that context */
    fake.reset_counts();
    expect_trace("a stream of another context", backward_trace(f, BESIDE_N, (gj_stream)other), beside);
    assert_int_equal(fake.count("cuStreamCreateWithPriority"), 1);

    /* A stream being captured into a graph keeps both kernels, in order. */
    fake.set_capturing(CU_STREAM_CAPTURE_STATUS_ACTIVE);
    expect_trace("a stream being captured", backward_trace(f, BESIDE_N, NULL), in_order);
    assert_int_equal(fake.captured_grid_x(), COARSE_AFTER_BLOCKS * 132); /* after it: four */
    fake.capture_argument(NULL, -1);
    fake.set_capturing(CU_STREAM_CAPTURE_STATUS_NONE);

    /* dL/dx too: zeroed before the fork as well. */
    gj_backward_desc d = backward_desc(f);
    d.n = BESIDE_N;
    d.dL_dx = f->dx;
    fake.trace_start();
    ok(f, gj_backward(f->module, NULL, &d));
    expect_trace("with dL/dx", fake.trace(),
                 "memset(A) memset(A) record(E1,A) wait(B,E1) launch(gj_encode_backward_input_rows_coarse,B) "
                 "launch(gj_encode_backward_input_rows,A) record(E2,B) wait(A,E2)");

    /* The side streams and their events go with the module, each in its context. */
    fake.reset_counts();
    gj_module_destroy(f->module);
    f->module = NULL;
    assert_int_equal(fake.count("cuStreamDestroy"), 2);
    assert_int_equal(fake.count("cuEventDestroy"), 4);
}

/* GRIDJIT_COARSE_BESIDE_MIN_POINTS=0 (read when the module is made): never beside; and the
 * coarse kernel's blocks after and beside the main kernel set by the environment. */
static void coarse_kernel_beside_can_be_turned_off(void **state) {
    fixture *f = *state;
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = GJ_PASS_FORWARD | GJ_PASS_BACKWARD;
    setenv("GRIDJIT_COARSE_BESIDE_MIN_POINTS", "0", 1);
    gj_module *off = NULL;
    const gj_status made = gj_module_create(f->ctx, f->enc, &opts, &off);
    unsetenv("GRIDJIT_COARSE_BESIDE_MIN_POINTS");
    ok(f, made);
    gj_module_destroy(f->module);
    f->module = off;
    ok(f, backward(f, NULL));
    fake.reset_counts();
    fake.capture_argument("_coarse", -1);
    expect_trace("turned off", backward_trace(f, BESIDE_N, NULL),
                 "memset(A) launch(gj_encode_backward_rows,A) launch(gj_encode_backward_rows_coarse,A)");
    assert_int_equal(fake.count("cuStreamCreateWithPriority"), 0);
    assert_int_equal(fake.captured_grid_x(), COARSE_AFTER_BLOCKS * 132);

    /* The blocks a level and multiprocessor, after and beside the main kernel, from the
     * environment (read when a module is made). */
    setenv("GRIDJIT_COARSE_BLOCKS_PER_SM", "3", 1);
    setenv("GRIDJIT_COARSE_BESIDE_BLOCKS_PER_SM", "1", 1);
    gj_module *tuned = NULL;
    const gj_status made_tuned = gj_module_create(f->ctx, f->enc, &opts, &tuned);
    unsetenv("GRIDJIT_COARSE_BLOCKS_PER_SM");
    unsetenv("GRIDJIT_COARSE_BESIDE_BLOCKS_PER_SM");
    ok(f, made_tuned);
    gj_module_destroy(f->module);
    f->module = tuned;
    ok(f, backward(f, NULL));
    expect_trace("one block beside", backward_trace(f, BESIDE_N, NULL),
                 "memset(A) record(E1,A) wait(B,E1) launch(gj_encode_backward_rows_coarse,B) "
                 "launch(gj_encode_backward_rows,A) record(E2,B) wait(A,E2)");
    assert_int_equal(fake.captured_grid_x(), 1 * 132);
    fake.set_capturing(CU_STREAM_CAPTURE_STATUS_ACTIVE);
    expect_trace("three blocks after", backward_trace(f, BESIDE_N, NULL),
                 "memset(A) launch(gj_encode_backward_rows,A) launch(gj_encode_backward_rows_coarse,A)");
    fake.set_capturing(CU_STREAM_CAPTURE_STATUS_NONE);
    assert_int_equal(fake.captured_grid_x(), 3 * 132);
    fake.capture_argument(NULL, -1);
}

/* Host time per call on the fake driver: the cost of gridjit's own path (nothing runs). */
static void host_time_per_launch(void **state) {
    fixture *f = *state;
    const char *env = getenv("GRIDJIT_LAUNCH_PATH_CALLS");
    const long calls = env && atol(env) > 0 ? atol(env) : 100000;
    ok(f, forward(f, NULL));
    ok(f, backward(f, NULL));
    const double forward_ns = ns_per_call(f, forward, calls), backward_ns = ns_per_call(f, backward, calls);
    printf("launch path on the fake driver: %.0f ns per gj_forward, %.0f ns per gj_backward (%ld calls each)\n",
           forward_ns, backward_ns, calls);
}

/* gridjit bench --calls reports the host and wall time per call (here on the fake driver,
 * where nothing runs: only that the figures are there and plausible). */
static void bench_reports_the_time_per_call(void **state) {
    (void)state;
    gj_cli_result r;
    const char *const args[] = {"bench", "--config", "{\"otype\": \"HashGrid\", \"n_levels\": 2}", "--points", "256",
                                "--pass", "forward", "--calls", "300", "--json", NULL};
    assert_int_equal(gj_test_run_cli(NULL, args, &r), 0);
    if (r.status != 0) {
        fail_msg("gridjit bench exited %d: %s", r.status, r.err);
    }
    cJSON *root = cJSON_Parse(r.out);
    assert_non_null(root);
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(root, "calls");
    assert_non_null(calls);
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(calls, "count")) == 300.0);
    static const char *const passes[] = {"forward", "backward"};
    for (int p = 0; p < 2; ++p) {
        const cJSON *pass = cJSON_GetObjectItemCaseSensitive(calls, passes[p]);
        assert_non_null(pass);
        const double host = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(pass, "host_us"));
        const double wall = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(pass, "wall_us"));
        assert_true(host > 0.0 && host <= wall && wall < 1e6);
    }
    cJSON_Delete(root);
    gj_cli_result_free(&r);
    const char *const off[] = {"bench", "--config", "{\"n_levels\": 2}", "--points", "256", "--pass", "forward",
                               "--calls", "0", "--json", NULL};
    assert_int_equal(gj_test_run_cli(NULL, off, &r), 0);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.out, "\"calls\""));
    gj_cli_result_free(&r);
}

int main(void) {
    if (gj_fake_driver_open(&fake) != 0) {
        return 1;
    }
    if (!gj_test_have_nvrtc()) {
        return 77; /* the reason is printed: the module's programs cannot be compiled */
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(launches_ask_only_for_the_context, setup, teardown),
        cmocka_unit_test_setup_teardown(backward_with_dydx_adds_one_launch, setup, teardown),
        cmocka_unit_test_setup_teardown(a_loaded_program_serves_its_passes, setup, teardown),
        cmocka_unit_test_setup_teardown(a_new_context_is_asked_once, setup, teardown),
        cmocka_unit_test_setup_teardown(a_thread_without_a_context_keeps_the_stream_s, setup, teardown),
        cmocka_unit_test_setup_teardown(a_renewed_context_is_not_taken_for_the_old_one, setup, teardown),
        cmocka_unit_test_setup_teardown(a_launch_does_not_wait_for_another_pass_s_compile, setup, teardown),
        cmocka_unit_test_setup_teardown(a_failed_launch_names_the_call, setup, teardown),
        cmocka_unit_test_setup_teardown(user_kernel_launches_ask_only_for_the_context, setup, teardown),
        cmocka_unit_test_setup_teardown(a_kernel_carveout_is_set_once_per_context, setup, teardown),
        cmocka_unit_test_setup_teardown(staged_launches_prefer_l1, setup, teardown),
        cmocka_unit_test_setup_teardown(forwards_cap_their_resident_warps, setup, teardown),
        cmocka_unit_test_setup_teardown(staging_forwards_cap_their_resident_warps, setup, teardown),
        cmocka_unit_test_setup_teardown(grouped_forwards_cap_their_resident_warps, setup, teardown),
        cmocka_unit_test_setup_teardown(one_kernel_keeps_each_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(coarse_kernel_runs_beside, setup, teardown),
        cmocka_unit_test_setup_teardown(coarse_kernel_beside_can_be_turned_off, setup, teardown),
        cmocka_unit_test_setup_teardown(host_time_per_launch, setup, teardown),
        cmocka_unit_test(bench_reports_the_time_per_call),
    };
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    gj_fake_driver_close(&fake);
    return failed;
}
