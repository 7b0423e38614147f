/*
 * data_parallel: one batch split over every GPU of the host.
 *
 * One gj_context and one module serve every device: each program is compiled once per
 * architecture and loaded once. Each device keeps its own copy of the parameters and its
 * own gradients, runs the forward and backward passes on its slice of the batch, and the
 * gradients are summed across devices: with NCCL's all-reduce where libnccl.so.2 is
 * present and every shard has a device of its own, otherwise by peer copies into the
 * first device, a sum kernel (data_parallel.cu) and copies back. The outputs and the
 * summed gradients are checked against one device doing the whole batch.
 *
 *   data_parallel [--shards K] [--points N] [--fp32] [--bench]
 *
 * --shards K splits the batch K ways (default: one shard per device); shards beyond the
 * device count share devices in turn, so on one GPU `--shards 2` runs the same code.
 * --bench times the forward pass and the training step (forward, backward, gradient
 * sum) on one device and on the shards.
 */
#define _POSIX_C_SOURCE 200809L
#include "example.h"

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char data_parallel_cu[]; /* data_parallel.cu, embedded at build time */

#define MAX_SHARDS 16

/* tiny-cuda-nn's default HashGrid (D = 3): 16 levels x 2 features, 2^19 entries. */
static const char fp16_config[] = "{\"otype\": \"HashGrid\"}";
static const char fp32_config[] = "{\"otype\": \"HashGrid\", \"precision\": \"fp32\"}";

/* ------------------------------------------------------------------ NCCL, if present */
/* The few entry points used, declared by hand: NCCL is optional and loaded with dlopen. */
enum { NCCL_SUCCESS = 0, NCCL_SUM = 0, NCCL_FLOAT16 = 6, NCCL_FLOAT32 = 7 };
typedef struct nccl {
    int (*comm_init_all)(void **comms, int ndev, const int *devices);
    int (*comm_destroy)(void *comm);
    int (*all_reduce)(const void *send, void *recv, size_t count, int type, int op, void *comm, void *stream);
    int (*group_start)(void);
    int (*group_end)(void);
    void *comms[MAX_SHARDS]; /* one per shard where the job uses NCCL */
} nccl;

static int nccl_load(nccl *n) {
    memset(n, 0, sizeof *n);
    void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        return 0;
    }
    *(void **)&n->comm_init_all = dlsym(lib, "ncclCommInitAll");
    *(void **)&n->comm_destroy = dlsym(lib, "ncclCommDestroy");
    *(void **)&n->all_reduce = dlsym(lib, "ncclAllReduce");
    *(void **)&n->group_start = dlsym(lib, "ncclGroupStart");
    *(void **)&n->group_end = dlsym(lib, "ncclGroupEnd");
    return n->comm_init_all && n->comm_destroy && n->all_reduce && n->group_start && n->group_end;
}

/* ------------------------------------------------------------------ shards */
typedef struct shard {
    int device;
    gj_stream stream;
    uint64_t first, count;
    void *x, *y, *dl_dy, *params, *grads, *incoming;
} shard;

typedef struct job {
    gj_module *module;
    gj_kernel *add; /* add_into<T> */
    uint64_t n, n_params;
    uint32_t width;
    size_t element;
    const float *x;
    const void *dl_dy; /* n x width elements of the module's precision */
    int n_shards, n_devices;
    shard shards[MAX_SHARDS];
    shard whole; /* one device, the whole batch: the reference */
    nccl nccl;
    int use_nccl;
} job;

/* Device memory on the current device. */
static void *device_alloc(size_t bytes) {
    void *p = NULL;
    EX_CHECK(gj_device_alloc(ex_ctx, bytes, &p));
    return p;
}

/* Device memory and a stream for points [first, first + count) on device. */
static void shard_make(job *j, shard *s, int device, uint64_t first, uint64_t count, const void *params) {
    memset(s, 0, sizeof *s);
    s->device = device;
    s->first = first;
    s->count = count;
    EX_CHECK(gj_runtime_set_device(ex_ctx, device));
    EX_CHECK(gj_stream_create(ex_ctx, 1, &s->stream));
    const size_t param_bytes = j->n_params * j->element;
    s->x = device_alloc(count * 3 * sizeof(float));
    s->y = device_alloc(count * j->width * j->element);
    s->dl_dy = device_alloc(count * j->width * j->element);
    s->params = device_alloc(param_bytes);
    s->grads = device_alloc(param_bytes);
    s->incoming = device_alloc(param_bytes);
    EX_CHECK(gj_memcpy_async(ex_ctx, s->x, j->x + first * 3, count * 3 * sizeof(float), s->stream));
    EX_CHECK(gj_memcpy_async(ex_ctx, s->dl_dy, (const char *)j->dl_dy + first * j->width * j->element,
                             count * j->width * j->element, s->stream));
    /* Every device starts from the same parameters (a copy between devices). */
    EX_CHECK(gj_memcpy_async(ex_ctx, s->params, params, param_bytes, s->stream));
    EX_CHECK(gj_stream_synchronize(ex_ctx, s->stream));
}

static void shard_free(shard *s) {
    EX_CHECK(gj_runtime_set_device(ex_ctx, s->device));
    void *arrays[] = {s->x, s->y, s->dl_dy, s->params, s->grads, s->incoming};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; ++i) {
        gj_device_free(ex_ctx, arrays[i]);
    }
    gj_stream_destroy(ex_ctx, s->stream);
}

static void forward(job *j, shard *s) {
    gj_forward_desc f;
    gj_forward_desc_init(&f);
    f.n = s->count;
    f.x = s->x;
    f.params = s->params;
    f.y = s->y;
    EX_CHECK(gj_forward(j->module, s->stream, &f)); /* runs on the stream's device */
}

static void backward(job *j, shard *s) {
    gj_backward_desc b;
    gj_backward_desc_init(&b);
    b.n = s->count;
    b.x = s->x;
    b.params = s->params;
    b.dL_dy = s->dl_dy;
    b.dL_dparams = s->grads; /* overwritten */
    EX_CHECK(gj_backward(j->module, s->stream, &b));
}

static void synchronize_all(job *j) {
    for (int k = 0; k < j->n_shards; ++k) {
        EX_CHECK(gj_stream_synchronize(ex_ctx, j->shards[k].stream));
    }
}

/* dL/dparams summed over the shards, the sum left in every shard's grads. */
static void all_reduce(job *j) {
    if (j->n_shards == 1) {
        return;
    }
    if (j->use_nccl) {
        const int type = j->element == 2 ? NCCL_FLOAT16 : NCCL_FLOAT32;
        j->nccl.group_start();
        for (int k = 0; k < j->n_shards; ++k) {
            shard *s = &j->shards[k];
            if (j->nccl.all_reduce(s->grads, s->grads, j->n_params, type, NCCL_SUM, j->nccl.comms[k], s->stream) !=
                NCCL_SUCCESS) {
                ex_fail("ncclAllReduce failed");
            }
        }
        j->nccl.group_end();
        return;
    }
    /* Peer copies into shard 0, a sum kernel there, copies back. */
    synchronize_all(j);
    shard *root = &j->shards[0];
    const size_t bytes = j->n_params * j->element;
    gj_launch_config config;
    gj_launch_config_init(&config);
    config.block[0] = 256;
    const uint64_t blocks = (j->n_params + 255) / 256;
    config.grid[0] = (uint32_t)(blocks < 4096 ? blocks : 4096);
    config.stream = root->stream;
    for (int k = 1; k < j->n_shards; ++k) {
        EX_CHECK(gj_memcpy_async(ex_ctx, root->incoming, j->shards[k].grads, bytes, root->stream));
        unsigned long long n = j->n_params;
        void *args[] = {&root->grads, &root->incoming, &n};
        EX_CHECK(gj_kernel_launch(j->add, &config, args));
    }
    EX_CHECK(gj_stream_synchronize(ex_ctx, root->stream));
    for (int k = 1; k < j->n_shards; ++k) {
        EX_CHECK(gj_memcpy_async(ex_ctx, j->shards[k].grads, root->grads, bytes, j->shards[k].stream));
    }
}

static void step_shards(job *j, int with_backward) {
    for (int k = 0; k < j->n_shards; ++k) {
        forward(j, &j->shards[k]);
        if (with_backward) {
            backward(j, &j->shards[k]);
        }
    }
    if (with_backward) {
        all_reduce(j);
    }
    synchronize_all(j);
}

static void step_whole(job *j, int with_backward) {
    forward(j, &j->whole);
    if (with_backward) {
        backward(j, &j->whole);
    }
    EX_CHECK(gj_stream_synchronize(ex_ctx, j->whole.stream));
}

/* ------------------------------------------------------------------ checks, timing */
static void to_floats(const job *j, const void *src, float *dst, size_t count) {
    if (j->element == 2) {
        gj_halves_to_floats(src, dst, count);
    } else {
        memcpy(dst, src, count * sizeof(float));
    }
}

/* Outputs bit for bit; gradients within the rounding of sums taken in another order. */
static int compare(job *j, double tolerance) {
    const size_t y_bytes = j->n * j->width * j->element, g_bytes = j->n_params * j->element;
    char *y_whole = malloc(y_bytes), *y_split = malloc(y_bytes), *g_bits = malloc(g_bytes);
    float *g_whole = malloc(j->n_params * sizeof(float)), *g_split = malloc(j->n_params * sizeof(float));
    if (!y_whole || !y_split || !g_bits || !g_whole || !g_split) {
        ex_fail("out of memory");
    }
    EX_CHECK(gj_memcpy_to_host(ex_ctx, y_whole, j->whole.y, y_bytes));
    EX_CHECK(gj_memcpy_to_host(ex_ctx, g_bits, j->whole.grads, g_bytes));
    to_floats(j, g_bits, g_whole, j->n_params);
    for (int k = 0; k < j->n_shards; ++k) {
        const shard *s = &j->shards[k];
        EX_CHECK(gj_memcpy_to_host(ex_ctx, y_split + s->first * j->width * j->element, s->y,
                                   s->count * j->width * j->element));
    }
    const int same_y = memcmp(y_whole, y_split, y_bytes) == 0;
    printf("forward: %s\n", same_y ? "the shards' outputs equal one device's, bit for bit"
                                   : "the shards' outputs DIFFER from one device's");
    int ok = same_y;
    for (int k = 0; k < j->n_shards; ++k) {
        EX_CHECK(gj_memcpy_to_host(ex_ctx, g_bits, j->shards[k].grads, g_bytes));
        to_floats(j, g_bits, g_split, j->n_params);
        double diff = 0.0, norm = 0.0;
        for (uint64_t i = 0; i < j->n_params; ++i) {
            const double d = (double)g_split[i] - (double)g_whole[i];
            diff += d * d;
            norm += (double)g_whole[i] * g_whole[i];
        }
        const double relative = norm > 0.0 ? sqrt(diff / norm) : sqrt(diff);
        const int good = relative <= tolerance && norm > 0.0;
        printf("dL/dparams on shard %d (device %d): |summed - one device| / |one device| = %.2e (at most %.0e) %s\n",
               k, j->shards[k].device, relative, tolerance, good ? "ok" : "TOO FAR");
        ok = ok && good;
    }
    free(y_whole);
    free(y_split);
    free(g_bits);
    free(g_whole);
    free(g_split);
    return ok;
}

/* Median wall milliseconds of 30 steps (after 5), each ending with every stream idle. */
static double time_steps(job *j, void (*step)(job *, int), int with_backward) {
    double times[30];
    for (int r = 0; r < 5; ++r) {
        step(j, with_backward);
    }
    for (int r = 0; r < 30; ++r) {
        const double start = ex_now_ms();
        step(j, with_backward);
        times[r] = ex_now_ms() - start;
    }
    return ex_median(times, 30);
}

/* ------------------------------------------------------------------ main */
static void usage(void) {
    printf("Usage: data_parallel [--shards K] [--points N] [--fp32] [--bench]\n"
           "Splits a batch over every GPU (or K shards, sharing devices in turn), sums the\n"
           "gradients across them and checks the result against one device.\n");
}

static gj_source_desc sum_source(const gj_source_encoding *grid, const char **kernel) {
    gj_source_desc desc;
    gj_source_desc_init(&desc);
    desc.source = data_parallel_cu;
    desc.file_name = "data_parallel.cu";
    desc.encodings = grid;
    desc.n_encodings = 1;
    desc.kernels = kernel;
    desc.n_kernels = 1;
    return desc;
}

int main(int argc, char **argv) {
    int n_shards = 0, fp32 = 0, bench = 0;
    uint64_t n = 1u << 21;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--shards") == 0 && i + 1 < argc) {
            n_shards = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--points") == 0 && i + 1 < argc) {
            n = strtoull(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--fp32") == 0) {
            fp32 = 1;
        } else if (strcmp(argv[i], "--bench") == 0) {
            bench = 1;
        } else {
            usage();
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    if (n_shards < 0 || n_shards > MAX_SHARDS || n < 2) {
        fprintf(stderr, "data_parallel: --shards takes 1 to %d and --points at least 2\n", MAX_SHARDS);
        return 2;
    }
    ex_init();
    gj_encoding *enc = NULL;
    EX_CHECK(gj_encoding_create(ex_ctx, fp32 ? fp32_config : fp16_config, 3, &enc));
    gj_source_encoding grid = {"grid", enc, NULL};
    const char *kernel[] = {fp32 ? "add_into<float>" : "add_into<gj_half>"};
    gj_source_desc desc = sum_source(&grid, kernel);

    gj_runtime_info info;
    if (gj_runtime_probe(ex_ctx, &info) != GJ_OK) {
        printf("no GPU (%s)\n", gj_context_errmsg(ex_ctx));
        gj_program *prog = NULL;
        EX_CHECK(gj_compile_user(ex_ctx, &desc, "sm_90", &prog));
        printf("data_parallel.cu compiled for sm_90; nothing to run\n");
        gj_program_destroy(prog);
        gj_encoding_destroy(enc);
        gj_context_destroy(ex_ctx);
        return 0;
    }
    job j;
    memset(&j, 0, sizeof j);
    j.n = n;
    j.n_devices = info.device_count;
    j.n_shards = n_shards ? n_shards : j.n_devices;
    EX_CHECK(gj_runtime_set_device(ex_ctx, 0));
    EX_CHECK(gj_module_create(ex_ctx, enc, NULL, &j.module)); /* compiles nothing yet */
    gj_user_module *sum = NULL;
    EX_CHECK(gj_user_module_create(ex_ctx, &desc, &sum));
    EX_CHECK(gj_user_module_kernel(sum, kernel[0], &j.add));
    j.n_params = gj_module_n_params(j.module);
    j.width = gj_module_output_width(j.module);
    j.element = gj_module_element_size(j.module);

    /* The batch: uniform points, and a dL/dy standing in for a loss's gradient. */
    float *x = malloc(n * 3 * sizeof(float)), *dl_dy = malloc(n * j.width * sizeof(float));
    void *dl_dy_elements = malloc(n * j.width * j.element);
    uint64_t state = 0x9e3779b97f4a7c15ull;
    for (uint64_t i = 0; i < n * 3; ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)(state >> 40) / (float)(1u << 24);
    }
    for (uint64_t i = 0; i < n * j.width; ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        dl_dy[i] = (float)(state >> 40) / (float)(1u << 24) - 0.5f;
    }
    if (j.element == 2) {
        gj_floats_to_halves(dl_dy, dl_dy_elements, n * j.width);
    } else {
        memcpy(dl_dy_elements, dl_dy, n * j.width * sizeof(float));
    }
    j.x = x;
    j.dl_dy = dl_dy_elements;

    /* Parameters initialised once on device 0, copied to every shard. */
    EX_CHECK(gj_runtime_set_device(ex_ctx, 0));
    void *params = device_alloc(j.n_params * j.element);
    gj_init_desc init;
    gj_init_desc_init(&init);
    init.params = params;
    init.scale = 1e3f; /* larger than the default so that the outputs are not all tiny */
    EX_CHECK(gj_init_params(j.module, NULL, &init));
    EX_CHECK(gj_stream_synchronize(ex_ctx, NULL));

    shard_make(&j, &j.whole, 0, 0, n, params);
    const uint64_t per = (n + (uint64_t)j.n_shards - 1) / (uint64_t)j.n_shards;
    int distinct = j.n_shards <= j.n_devices;
    for (int k = 0; k < j.n_shards; ++k) {
        const uint64_t first = (uint64_t)k * per, count = first + per <= n ? per : n - first;
        shard_make(&j, &j.shards[k], k % j.n_devices, first, count, params);
    }
    if (j.n_shards >= 2 && distinct && nccl_load(&j.nccl)) {
        int devices[MAX_SHARDS];
        for (int k = 0; k < j.n_shards; ++k) {
            devices[k] = j.shards[k].device;
        }
        j.use_nccl = j.nccl.comm_init_all(j.nccl.comms, j.n_shards, devices) == NCCL_SUCCESS;
    }
    printf("%d device%s (%s), %d shard%s of %llu points, %s parameters; gradients summed by %s\n", j.n_devices,
           j.n_devices == 1 ? "" : "s", info.device_name, j.n_shards, j.n_shards == 1 ? "" : "s",
           (unsigned long long)per, fp32 ? "fp32" : "fp16",
           j.n_shards == 1 ? "nothing (one shard)" : j.use_nccl ? "NCCL all-reduce" : "peer copies and a sum kernel");

    step_whole(&j, 1);
    step_shards(&j, 1);
    const int ok = compare(&j, fp32 ? 1e-5 : 2e-2);

    if (bench && ok) {
        const double f1 = time_steps(&j, step_whole, 0), fk = time_steps(&j, step_shards, 0);
        const double t1 = time_steps(&j, step_whole, 1), tk = time_steps(&j, step_shards, 1);
        printf("bench (%llu points, median of 30 wall-clock steps):\n", (unsigned long long)n);
        printf("  forward         one device %8.3f ms   %d shards %8.3f ms   speed-up %.2fx\n", f1, j.n_shards, fk,
               f1 / fk);
        printf("  training step   one device %8.3f ms   %d shards %8.3f ms   speed-up %.2fx\n", t1, j.n_shards, tk,
               t1 / tk);
    }

    for (int k = 0; j.use_nccl && k < j.n_shards; ++k) {
        j.nccl.comm_destroy(j.nccl.comms[k]);
    }
    for (int k = 0; k < j.n_shards; ++k) {
        shard_free(&j.shards[k]);
    }
    shard_free(&j.whole);
    EX_CHECK(gj_runtime_set_device(ex_ctx, 0));
    gj_device_free(ex_ctx, params);
    gj_user_module_destroy(sum);
    gj_module_destroy(j.module);
    gj_encoding_destroy(enc);
    gj_context_destroy(ex_ctx);
    free(x);
    free(dl_dy);
    free(dl_dy_elements);
    printf("%s\n", ok ? "data_parallel: OK" : "data_parallel: FAILED");
    return ok ? 0 : 1;
}
