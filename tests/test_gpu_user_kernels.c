/* User kernels and several contexts on the GPU (docs/fusion.md, docs/runtime.md):
 *  - a user kernel calling an encoding's forward device function computes what the
 *    module's own forward kernel computes; launch configurations are checked and errors
 *    name the kernel and the configuration; occupancy and attributes are answered;
 *  - one module and one user module serve two CUDA contexts on one device (and two
 *    devices where the host has them): a batch split between them gives the one-context
 *    outputs exactly, and the dL/dparams of the halves, summed by a peer copy and a
 *    reduction kernel, give the one-context gradient to rounding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/context.h" /* the driver table, for contexts made by hand */
#include "gpu_harness.h"
#include "test_env.h"

#define N_POINTS 4099
static const char grid_config[] = "{\"otype\": \"HashGrid\", \"n_levels\": 8, \"log2_hashmap_size\": 12, "
                             "\"base_resolution\": 4, \"precision\": \"fp32\"}";

static const char user_source[] =
    "#include \"grid.cuh\"\n"
    "extern \"C\" __global__ void encode(const float* xs, const float* params, float* out, unsigned n) {\n"
    "    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;\n"
    "    grid_in_t x;\n"
    "    for (int d = 0; d < grid_config::D; ++d) x.v[d] = xs[i * grid_config::D + d];\n"
    "    const grid_out_t y = grid(x, params, nullptr);\n"
    "    for (int k = 0; k < grid_config::N_OUT_PADDED; ++k) out[(size_t)i * grid_config::N_OUT_PADDED + k] = y.v[k];\n"
    "}\n"
    "extern \"C\" __global__ void train_ml(const float* xs, const float* params, const float* dl_dy, float* y_out,\n"
    "                                       float* dl_dparams, float* dl_dx, float max_level, unsigned n) {\n"
    "    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;\n"
    "    const int W = grid_config::N_OUT_PADDED;\n"
    "    grid_in_t x;\n"
    "    for (int d = 0; d < grid_config::D; ++d) x.v[d] = xs[i * grid_config::D + d];\n"
    "    float saved[grid_config::D];\n"
    "    const grid_out_t y = grid(x, params, (gj_u8*)saved, max_level);\n"
    "    for (int k = 0; k < W; ++k) y_out[(size_t)i * W + k] = y.v[k];\n"
    "    grid_out_t g;\n"
    "    for (int k = 0; k < W; ++k) g.v[k] = dl_dy[(size_t)i * W + k];\n"
    "    grid_in_t dx;\n"
    "    grid_bwd(g, params, (const gj_u8*)saved, dl_dparams, &dx, max_level);\n"
    "    for (int d = 0; d < grid_config::D; ++d) dl_dx[i * grid_config::D + d] = dx.v[d];\n"
    "}\n"
    "extern \"C\" __global__ void add_into(float* a, const float* b, unsigned long long n) {\n"
    "    const unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) a[i] += b[i];\n"
    "}\n";

typedef struct world {
    gj_context *ctx;
    gj_encoding *enc;
    gj_module *module;
    gj_user_module *user;
    float x[N_POINTS * 3];
} world;

static int setup(void **state) {
    static world w;
    if (!gj_gpu_available(NULL) || !gj_test_have_nvrtc()) {
        *state = NULL;
        return 0;
    }
    gj_context_create(&w.ctx);
    gj_context_set_cache_enabled(w.ctx, 0);
    if (gj_encoding_create(w.ctx, grid_config, 3, &w.enc) != GJ_OK || gj_module_create(w.ctx, w.enc, NULL, &w.module) != GJ_OK) {
        printf("setup: %s\n", gj_context_errmsg(w.ctx));
        return -1;
    }
    gj_source_encoding grid = {"grid", w.enc, NULL};
    const char *kernels[] = {"encode", "add_into", "train_ml"};
    gj_source_desc desc;
    gj_source_desc_init(&desc);
    desc.source = user_source;
    desc.encodings = &grid;
    desc.n_encodings = 1;
    desc.kernels = kernels;
    desc.n_kernels = 3;
    if (gj_user_module_create(w.ctx, &desc, &w.user) != GJ_OK) {
        printf("setup: %s\n", gj_context_errmsg(w.ctx));
        return -1;
    }
    gj_gpu_rng rng = {11};
    for (size_t k = 0; k < N_POINTS * 3; ++k) {
        w.x[k] = gj_gpu_rng_float(&rng, 0.0f, 1.0f);
    }
    *state = &w;
    return 0;
}

static int teardown(void **state) {
    world *w = *state;
    if (w) {
        gj_user_module_destroy(w->user);
        gj_module_destroy(w->module);
        gj_encoding_destroy(w->enc);
        gj_context_destroy(w->ctx);
    }
    return 0;
}

#define NEED_WORLD(w)         \
    if (!(w)) {               \
        skip();               \
    }

/* Parameters for the module's encoding: initialised on the device, downloaded. */
static void *device_params(world *w, uint64_t seed) {
    void *params = gj_gpu_alloc(w->ctx, gj_module_n_params(w->module) * sizeof(float));
    gj_init_desc init;
    gj_init_desc_init(&init);
    init.params = params;
    init.seed = seed;
    init.scale = 1e3f; /* values of order 0.1: differences show */
    gj_gpu_ok(w->ctx, gj_init_params(w->module, NULL, &init), "gj_init_params");
    return params;
}

static void module_forward(world *w, const void *x, const void *params, void *y, uint64_t n, gj_stream stream) {
    gj_forward_desc f;
    gj_forward_desc_init(&f);
    f.n = n;
    f.x = x;
    f.params = params;
    f.y = y;
    gj_gpu_ok(w->ctx, gj_forward(w->module, stream, &f), "gj_forward");
}

static void a_user_kernel_computes_what_the_module_computes(void **state) {
    world *w = *state;
    NEED_WORLD(w);
    const uint32_t width = gj_module_output_width(w->module);
    void *x = gj_gpu_upload_floats(w->ctx, w->x, N_POINTS * 3);
    void *params = device_params(w, 5);
    void *y_module = gj_gpu_alloc(w->ctx, (size_t)N_POINTS * width * sizeof(float));
    void *y_user = gj_gpu_alloc(w->ctx, (size_t)N_POINTS * width * sizeof(float));
    module_forward(w, x, params, y_module, N_POINTS, NULL);
    gj_kernel *encode = NULL;
    gj_gpu_ok(w->ctx, gj_user_module_kernel(w->user, "encode", &encode), "gj_user_module_kernel");
    gj_stream stream = NULL;
    gj_gpu_ok(w->ctx, gj_stream_create(w->ctx, 1, &stream), "gj_stream_create");
    gj_launch_config config;
    gj_launch_config_init(&config);
    config.block[0] = 128;
    config.grid[0] = (N_POINTS + 127) / 128;
    config.stream = stream;
    unsigned n = N_POINTS;
    void *args[] = {&x, &params, &y_user, &n};
    gj_gpu_ok(w->ctx, gj_kernel_launch(encode, &config, args), "gj_kernel_launch");
    gj_gpu_ok(w->ctx, gj_stream_synchronize(w->ctx, stream), "sync");
    float *a = malloc((size_t)N_POINTS * width * sizeof(float)), *b = malloc((size_t)N_POINTS * width * sizeof(float));
    gj_gpu_get(w->ctx, a, y_module, (size_t)N_POINTS * width * sizeof(float));
    gj_gpu_get(w->ctx, b, y_user, (size_t)N_POINTS * width * sizeof(float));
    for (size_t k = 0; k < (size_t)N_POINTS * width; ++k) {
        if (fabsf(a[k] - b[k]) > 1e-6f * fabsf(a[k]) + 1e-9f) {
            fail_msg("output %zu: module %.9g, user kernel %.9g", k, (double)a[k], (double)b[k]);
        }
    }
    /* The same through a packed parameter buffer. */
    struct {
        const void *x, *params;
        void *y;
        unsigned n;
    } packed = {x, params, y_user, n};
    memset(b, 0, (size_t)N_POINTS * width * sizeof(float));
    gj_gpu_put(w->ctx, y_user, b, (size_t)N_POINTS * width * sizeof(float));
    /* sizeof packed includes the struct's trailing padding: trimmed to the parameters. */
    gj_gpu_ok(w->ctx, gj_kernel_launch_packed(encode, &config, &packed, sizeof packed), "gj_kernel_launch_packed");
    /* A buffer short of the parameters is refused, naming both sizes. */
    assert_int_equal(gj_kernel_launch_packed(encode, &config, &packed, 8), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(w->ctx), "take 28 bytes"));
    gj_gpu_ok(w->ctx, gj_stream_synchronize(w->ctx, stream), "sync");
    gj_gpu_get(w->ctx, b, y_user, (size_t)N_POINTS * width * sizeof(float));
    assert_memory_equal(a, b, (size_t)N_POINTS * width * sizeof(float));
    gj_stream_destroy(w->ctx, stream);
    free(a);
    free(b);
    gj_gpu_free(w->ctx, x);
    gj_gpu_free(w->ctx, params);
    gj_gpu_free(w->ctx, y_module);
    gj_gpu_free(w->ctx, y_user);
}

static void compare_floats(const char *what, const float *want, const float *got, size_t n, float rel, float abs) {
    for (size_t k = 0; k < n; ++k) {
        if (!(fabsf(want[k] - got[k]) <= rel * fabsf(want[k]) + abs)) {
            fail_msg("%s[%zu]: module %.9g, user kernel %.9g", what, k, (double)want[k], (double)got[k]);
        }
    }
}

/* max_level through the device functions (forward, then backward from the saved context)
 * gives what the module's kernels give with the same max_level: the upper levels output 0
 * and get no gradient. */
static void device_functions_honour_max_level(void **state) {
    world *w = *state;
    NEED_WORLD(w);
    const uint32_t width = gj_module_output_width(w->module);
    const uint64_t n = N_POINTS, n_params = gj_module_n_params(w->module);
    const float max_level = 0.6f; /* 8 levels: levels 5, 6 and 7 are off */
    float *dl_dy = malloc(n * width * sizeof(float));
    gj_gpu_rng rng = {21};
    for (uint64_t k = 0; k < n * width; ++k) {
        dl_dy[k] = gj_gpu_rng_float(&rng, -1.0f, 1.0f);
    }
    void *x = gj_gpu_upload_floats(w->ctx, w->x, n * 3), *dy = gj_gpu_upload_floats(w->ctx, dl_dy, n * width);
    void *params = device_params(w, 8);
    void *y[2], *gp[2], *gx[2];
    for (int i = 0; i < 2; ++i) {
        y[i] = gj_gpu_alloc(w->ctx, n * width * sizeof(float));
        gp[i] = gj_gpu_alloc(w->ctx, n_params * sizeof(float));
        gx[i] = gj_gpu_alloc(w->ctx, n * 3 * sizeof(float));
    }
    gj_forward_desc f;
    gj_forward_desc_init(&f);
    f.n = n, f.x = x, f.params = params, f.y = y[0], f.max_level = max_level;
    gj_gpu_ok(w->ctx, gj_forward(w->module, NULL, &f), "gj_forward");
    gj_backward_desc b;
    gj_backward_desc_init(&b);
    b.n = n, b.x = x, b.params = params, b.dL_dy = dy, b.dL_dparams = gp[0], b.dL_dx = gx[0], b.max_level = max_level;
    gj_gpu_ok(w->ctx, gj_backward(w->module, NULL, &b), "gj_backward");

    float *zeros = calloc(n_params, sizeof(float));
    gj_gpu_put(w->ctx, gp[1], zeros, n_params * sizeof(float));
    gj_kernel *train = NULL;
    gj_gpu_ok(w->ctx, gj_user_module_kernel(w->user, "train_ml", &train), "kernel");
    gj_launch_config config;
    gj_launch_config_init(&config);
    config.block[0] = 128;
    config.grid[0] = (uint32_t)((n + 127) / 128);
    float ml = max_level;
    unsigned count = (unsigned)n;
    void *args[] = {&x, &params, &dy, &y[1], &gp[1], &gx[1], &ml, &count};
    gj_gpu_ok(w->ctx, gj_kernel_launch(train, &config, args), "train_ml");

    float *a = malloc(n_params * sizeof(float)), *c = malloc(n_params * sizeof(float));
    float *ya = malloc(n * width * sizeof(float)), *yb = malloc(n * width * sizeof(float));
    gj_gpu_get(w->ctx, ya, y[0], n * width * sizeof(float));
    gj_gpu_get(w->ctx, yb, y[1], n * width * sizeof(float));
    compare_floats("y", ya, yb, n * width, 1e-6f, 1e-9f);
    int live = 0;
    for (uint64_t i = 0; i < n; ++i) {
        for (uint32_t k = 0; k < width; ++k) {
            if (k >= 5 * 2) {
                assert_true(yb[i * width + k] == 0.0f); /* levels 5..7 of 2 features each */
            } else {
                live += yb[i * width + k] != 0.0f;
            }
        }
    }
    assert_true(live > 0);
    gj_gpu_get(w->ctx, a, gp[0], n_params * sizeof(float));
    gj_gpu_get(w->ctx, c, gp[1], n_params * sizeof(float));
    compare_floats("dL/dparams", a, c, n_params, 1e-4f, 1e-4f);
    gj_gpu_get(w->ctx, ya, gx[0], n * 3 * sizeof(float));
    gj_gpu_get(w->ctx, yb, gx[1], n * 3 * sizeof(float));
    compare_floats("dL/dx", ya, yb, n * 3, 1e-4f, 1e-3f);
    for (int i = 0; i < 2; ++i) {
        gj_gpu_free(w->ctx, y[i]);
        gj_gpu_free(w->ctx, gp[i]);
        gj_gpu_free(w->ctx, gx[i]);
    }
    gj_gpu_free(w->ctx, x);
    gj_gpu_free(w->ctx, dy);
    gj_gpu_free(w->ctx, params);
    free(a);
    free(c);
    free(ya);
    free(yb);
    free(zeros);
    free(dl_dy);
}

static void launch_errors_name_the_kernel_and_the_configuration(void **state) {
    world *w = *state;
    NEED_WORLD(w);
    gj_kernel *encode = NULL;
    assert_int_equal(gj_user_module_kernel(w->user, "nonexistent", &encode), GJ_ERROR_NOT_FOUND);
    assert_non_null(strstr(gj_context_errmsg(w->ctx), "nonexistent"));
    gj_gpu_ok(w->ctx, gj_user_module_kernel(w->user, "&encode", &encode), "kernel by expression");
    gj_launch_config config;
    gj_launch_config_init(&config);
    config.block[0] = 2048;
    void *args[4] = {0};
    assert_int_equal(gj_kernel_launch(encode, &config, args), GJ_ERROR_INVALID_ARGUMENT);
    /* named as the source names it, not by the name expression NVRTC was given */
    assert_non_null(strstr(gj_context_errmsg(w->ctx), "gj_kernel_launch(encode"));
    assert_null(strstr(gj_context_errmsg(w->ctx), "&encode"));
    assert_non_null(strstr(gj_context_errmsg(w->ctx), "block 2048x1x1"));
    config.block[0] = 128;
    config.shared_bytes = 1u << 30; /* more shared memory than any device has */
    assert_int_equal(gj_kernel_launch(encode, &config, args), GJ_ERROR_CUDA);
    assert_non_null(strstr(gj_context_errmsg(w->ctx), "gj_kernel_launch(encode"));
    int blocks = 0, block = 0, grid = 0, registers = 0, shared = -1;
    gj_gpu_ok(w->ctx, gj_kernel_occupancy(encode, 128, 0, &blocks), "gj_kernel_occupancy");
    assert_true(blocks >= 1 && blocks <= 16);
    gj_gpu_ok(w->ctx, gj_kernel_suggest_block(encode, 0, &block, &grid), "gj_kernel_suggest_block");
    assert_true(block >= 32 && block <= 1024 && block % 32 == 0 && grid >= 1);
    gj_gpu_ok(w->ctx, gj_kernel_attributes(encode, &registers, &shared), "gj_kernel_attributes");
    assert_true(registers > 0 && registers <= 255 && shared >= 0);
}

/* ---------------------------------------------------------- several contexts */

typedef CUresult (*ctx_create_v4_fn)(CUcontext *, void *, unsigned, CUdevice);
typedef CUresult (*ctx_create_v2_fn)(CUcontext *, unsigned, CUdevice);
typedef CUresult (*ctx_destroy_fn)(CUcontext);

/* A second, non-primary context on device: the driver exports these though gridjit has no
 * use for them. NULL (with a printed reason) when this driver has neither. */
static CUcontext make_context(CUdevice device, ctx_destroy_fn *destroy) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ctx_create_v4_fn v4 = cuda ? (ctx_create_v4_fn)dlsym(cuda, "cuCtxCreate_v4") : NULL;
    ctx_create_v2_fn v2 = cuda ? (ctx_create_v2_fn)dlsym(cuda, "cuCtxCreate_v2") : NULL;
    *destroy = cuda ? (ctx_destroy_fn)dlsym(cuda, "cuCtxDestroy_v2") : NULL;
    CUcontext made = NULL;
    CUresult r = CUDA_ERROR_NOT_SUPPORTED;
    if (v4) {
        r = v4(&made, NULL, 0, device);
    }
    if (r != CUDA_SUCCESS && v2) {
        r = v2(&made, 0, device);
    }
    if (r != CUDA_SUCCESS || !*destroy) {
        printf("no second context: cuCtxCreate gave %d\n", (int)r);
        return NULL;
    }
    return made;
}

/* The halves of a batch in two contexts (ctx[0] computes [0, h), ctx[1] [h, n)). */
static void split_batch(world *w, CUcontext ctx[2]) {
    gj__driver *drv = gj__driver_loaded(&w->ctx->driver);
    const uint64_t n = N_POINTS, h = n / 2, n_params = gj_module_n_params(w->module);
    const uint32_t width = gj_module_output_width(w->module);
    float *y_one = malloc(n * width * sizeof(float)), *y_two = malloc(n * width * sizeof(float));
    float *g_one = malloc(n_params * sizeof(float)), *g_two = malloc(n_params * sizeof(float));
    float *dl_dy = malloc(n * width * sizeof(float));
    gj_gpu_rng rng = {3};
    for (uint64_t k = 0; k < n * width; ++k) {
        dl_dy[k] = gj_gpu_rng_float(&rng, -1.0f, 1.0f);
    }
    void *params[2], *grads[2];
    /* One context, the whole batch: the reference. */
    for (int part = 0; part <= 2; ++part) {
        const int c = part == 2 ? 0 : part;
        assert_int_equal(drv->CtxSetCurrent(ctx[c]), CUDA_SUCCESS);
        const uint64_t first = part == 1 ? h : 0, count = part == 2 ? n : part == 0 ? h : n - h;
        void *x = gj_gpu_upload_floats(w->ctx, w->x + first * 3, count * 3);
        void *y = gj_gpu_alloc(w->ctx, count * width * sizeof(float));
        void *dy = gj_gpu_upload_floats(w->ctx, dl_dy + first * width, count * width);
        void *p = device_params(w, 9);
        void *g = gj_gpu_alloc(w->ctx, n_params * sizeof(float));
        module_forward(w, x, p, y, count, NULL);
        gj_backward_desc b;
        gj_backward_desc_init(&b);
        b.n = count;
        b.x = x;
        b.params = p;
        b.dL_dy = dy;
        b.dL_dparams = g;
        gj_gpu_ok(w->ctx, gj_backward(w->module, NULL, &b), "gj_backward");
        gj_gpu_get(w->ctx, (part == 2 ? y_one : y_two + first * width), y, count * width * sizeof(float));
        if (part == 2) {
            gj_gpu_get(w->ctx, g_one, g, n_params * sizeof(float));
            gj_gpu_free(w->ctx, p);
            gj_gpu_free(w->ctx, g);
        } else {
            params[c] = p;
            grads[c] = g;
        }
        gj_gpu_free(w->ctx, x);
        gj_gpu_free(w->ctx, y);
        gj_gpu_free(w->ctx, dy);
    }
    assert_memory_equal(y_one, y_two, n * width * sizeof(float)); /* forward: bit for bit */
    /* dL/dparams of context 1 into context 0 (a peer copy), then summed by a user kernel. */
    assert_int_equal(drv->CtxSetCurrent(ctx[0]), CUDA_SUCCESS);
    void *theirs = gj_gpu_alloc(w->ctx, n_params * sizeof(float));
    gj_gpu_ok(w->ctx, gj_memcpy_async(w->ctx, theirs, grads[1], n_params * sizeof(float), NULL), "gj_memcpy_async");
    gj_kernel *add = NULL;
    gj_gpu_ok(w->ctx, gj_user_module_kernel(w->user, "add_into", &add), "kernel");
    gj_launch_config config;
    gj_launch_config_init(&config);
    config.block[0] = 256;
    config.grid[0] = (uint32_t)((n_params + 255) / 256);
    unsigned long long count = n_params;
    void *args[] = {&grads[0], &theirs, &count};
    gj_gpu_ok(w->ctx, gj_kernel_launch(add, &config, args), "add_into");
    gj_gpu_get(w->ctx, g_two, grads[0], n_params * sizeof(float));
    for (uint64_t k = 0; k < n_params; ++k) {
        /* atomics add in another order: fp32 rounding of sums of a few terms */
        if (fabsf(g_one[k] - g_two[k]) > 1e-4f * fabsf(g_one[k]) + 1e-4f) {
            fail_msg("dL/dparams[%llu]: one context %.9g, two %.9g", (unsigned long long)k, (double)g_one[k],
                     (double)g_two[k]);
        }
    }
    gj_gpu_free(w->ctx, theirs);
    gj_gpu_free(w->ctx, params[0]);
    gj_gpu_free(w->ctx, grads[0]);
    assert_int_equal(drv->CtxSetCurrent(ctx[1]), CUDA_SUCCESS);
    gj_gpu_free(w->ctx, params[1]);
    gj_gpu_free(w->ctx, grads[1]);
    assert_int_equal(drv->CtxSetCurrent(ctx[0]), CUDA_SUCCESS);
    free(y_one);
    free(y_two);
    free(g_one);
    free(g_two);
    free(dl_dy);
}

static void two_contexts_on_one_device(void **state) {
    world *w = *state;
    NEED_WORLD(w);
    gj__driver *drv = gj__driver_loaded(&w->ctx->driver);
    CUcontext ctx[2] = {NULL, NULL};
    assert_int_equal(drv->CtxGetCurrent(&ctx[0]), CUDA_SUCCESS);
    CUdevice device;
    assert_int_equal(drv->CtxGetDevice(&device), CUDA_SUCCESS);
    ctx_destroy_fn destroy = NULL;
    ctx[1] = make_context(device, &destroy);
    if (!ctx[1]) {
        skip();
    }
    split_batch(w, ctx);
    assert_int_equal(drv->CtxSetCurrent(ctx[0]), CUDA_SUCCESS);
    destroy(ctx[1]);
    assert_int_equal(drv->CtxSetCurrent(ctx[0]), CUDA_SUCCESS);
}

static void two_devices(void **state) {
    world *w = *state;
    NEED_WORLD(w);
    gj__driver *drv = gj__driver_loaded(&w->ctx->driver);
    int count = 0;
    assert_int_equal(drv->DeviceGetCount(&count), CUDA_SUCCESS);
    if (count < 2) {
        printf("SKIPPED two_devices: this host has %d CUDA device (the split over two contexts of one device ran)\n",
               count);
        skip();
    }
    CUcontext ctx[2];
    for (int i = 0; i < 2; ++i) {
        gj_gpu_ok(w->ctx, gj_runtime_set_device(w->ctx, i), "gj_runtime_set_device");
        assert_int_equal(drv->CtxGetCurrent(&ctx[i]), CUDA_SUCCESS);
        CUdevice device;
        assert_int_equal(drv->CtxGetDevice(&device), CUDA_SUCCESS);
        CUdevice expected;
        assert_int_equal(drv->DeviceGet(&expected, i), CUDA_SUCCESS);
        assert_int_equal(device, expected);
    }
    split_batch(w, ctx);
    gj_gpu_ok(w->ctx, gj_runtime_set_device(w->ctx, 0), "gj_runtime_set_device");
}

/* gj_runtime_set_device: the primary context of an ordinal that exists, and a message
 * naming the range for one that does not. */
static void set_device_takes_an_ordinal(void **state) {
    world *w = *state;
    NEED_WORLD(w);
    gj__driver *drv = gj__driver_loaded(&w->ctx->driver);
    CUcontext before = NULL;
    assert_int_equal(drv->CtxGetCurrent(&before), CUDA_SUCCESS);
    int count = 0;
    assert_int_equal(drv->DeviceGetCount(&count), CUDA_SUCCESS);
    assert_int_equal(gj_runtime_set_device(w->ctx, count), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(w->ctx), "does not exist"));
    assert_int_equal(gj_runtime_set_device(w->ctx, -1), GJ_ERROR_INVALID_ARGUMENT);
    gj_gpu_ok(w->ctx, gj_runtime_set_device(w->ctx, 0), "gj_runtime_set_device");
    CUcontext now = NULL, primary = NULL;
    assert_int_equal(drv->CtxGetCurrent(&now), CUDA_SUCCESS);
    CUdevice device0;
    assert_int_equal(drv->DeviceGet(&device0, 0), CUDA_SUCCESS);
    assert_int_equal(drv->DevicePrimaryCtxRetain(&primary, device0), CUDA_SUCCESS);
    assert_ptr_equal(now, primary);
    drv->DevicePrimaryCtxRelease(device0);
    /* A round trip through gj_memcpy_async: host -> device -> device -> host. */
    float in[64], out[64];
    for (int k = 0; k < 64; ++k) {
        in[k] = (float)k * 0.5f;
        out[k] = -1.0f;
    }
    void *a = gj_gpu_alloc(w->ctx, sizeof in), *b = gj_gpu_alloc(w->ctx, sizeof in);
    gj_gpu_ok(w->ctx, gj_memcpy_async(w->ctx, a, in, sizeof in, NULL), "host to device");
    gj_gpu_ok(w->ctx, gj_memcpy_async(w->ctx, b, a, sizeof in, NULL), "device to device");
    gj_gpu_ok(w->ctx, gj_memcpy_async(w->ctx, out, b, sizeof in, NULL), "device to host");
    gj_gpu_ok(w->ctx, gj_stream_synchronize(w->ctx, NULL), "synchronize");
    assert_memory_equal(in, out, sizeof in);
    gj_gpu_free(w->ctx, a);
    gj_gpu_free(w->ctx, b);
    assert_int_equal(drv->CtxSetCurrent(before), CUDA_SUCCESS);
}

int main(void) {
    if (!gj_gpu_available(NULL)) {
        return GJ_TEST_SKIP_ALL;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_user_kernel_computes_what_the_module_computes),
        cmocka_unit_test(device_functions_honour_max_level),
        cmocka_unit_test(launch_errors_name_the_kernel_and_the_configuration),
        cmocka_unit_test(two_contexts_on_one_device),
        cmocka_unit_test(two_devices),
        cmocka_unit_test(set_device_takes_an_ordinal),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
