/*
 * bench_device_function_levels: should the device functions for fusion unroll their
 * levels with literal constants, or loop over the level table? One user kernel encodes each
 * point with tiny-cuda-nn's default HashGrid (y = grid(x, params, nullptr)) and reduces its
 * features with a weight per feature, compiled twice:
 *
 *   literal: gj_codegen_options.unroll_levels = 1: 16 unrolled levels, each a block of
 *            literal constants;
 *   table:   the default: a loop that is not unrolled over the __constant__ level table,
 *            one copy of the level code per index mode.
 *
 * Prints, for each, the cold NVRTC compile time (disk cache off), the registers per thread
 * and the median kernel time over 2^21 points (30 launches after 5), as one JSON object,
 * and whether the two gave the same bits.
 */
#define _POSIX_C_SOURCE 200809L
#include <gridjit.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gj_context *ctx;

static void check(gj_status status, const char *what) {
    if (status != GJ_OK) {
        fprintf(stderr, "bench_device_function_levels: %s: %s: %s\n", what, gj_status_name(status),
                gj_context_errmsg(ctx));
        exit(1);
    }
}
#define CHECK(call) check((call), #call)

static const char kernel_source[] =
    "#include \"grid.cuh\"\n"
    "extern \"C\" __global__ void encode_sum(const float* __restrict__ xs, const grid_config::param_t* __restrict__ params,\n"
    "                                       const float* __restrict__ w, float* __restrict__ out, unsigned n) {\n"
    "    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;\n"
    "    grid_in_t x;\n"
    "    for (int d = 0; d < grid_config::D; ++d) x.v[d] = xs[i * grid_config::D + d];\n"
    "    const grid_out_t y = grid(x, params, nullptr);\n"
    "    float s = 0.0f;\n"
    "    for (int k = 0; k < grid_config::N_OUT; ++k) s += gj_to_float(y.v[k]) * w[k];\n"
    "    out[i] = s;\n"
    "}\n";

typedef struct variant {
    const char *name;
    double compile_ms, median_ms;
    int registers;
} variant;

static int by_value(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Compiles kernel_source for arch (cold: main turns the disk cache off) with the levels
 * unrolled or not, and times the kernel. */
static void measure(variant *v, const char *arch, const gj_encoding *enc, int unroll_levels, void **args, unsigned n) {
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.unroll_levels = unroll_levels;
    gj_source_encoding grid = {"grid", enc, &opts};
    const char *kernels[] = {"encode_sum"};
    gj_source_desc desc;
    gj_source_desc_init(&desc);
    desc.source = kernel_source;
    desc.file_name = v->name;
    desc.encodings = &grid;
    desc.n_encodings = 1;
    desc.kernels = kernels;
    desc.n_kernels = 1;
    gj_program *prog = NULL;
    CHECK(gj_compile_user(ctx, &desc, arch, &prog));
    v->compile_ms = gj_program_compile_ms(prog);
    gj_user_module *module = NULL;
    gj_kernel *kernel = NULL;
    CHECK(gj_user_module_load(ctx, prog, &module));
    gj_program_destroy(prog);
    CHECK(gj_user_module_kernel(module, "encode_sum", &kernel));
    int shared = 0;
    CHECK(gj_kernel_attributes(kernel, &v->registers, &shared));
    gj_launch_config config;
    gj_launch_config_init(&config);
    config.block[0] = 128;
    config.grid[0] = (n + 127) / 128;
    gj_event *start = NULL, *end = NULL;
    CHECK(gj_event_create(ctx, &start));
    CHECK(gj_event_create(ctx, &end));
    float times[30];
    for (int r = 0; r < 35; ++r) {
        CHECK(gj_event_record(start, NULL));
        CHECK(gj_kernel_launch(kernel, &config, args));
        CHECK(gj_event_record(end, NULL));
        float ms = 0.0f;
        CHECK(gj_event_elapsed_ms(start, end, &ms));
        if (r >= 5) {
            times[r - 5] = ms;
        }
    }
    qsort(times, 30, sizeof times[0], by_value);
    v->median_ms = 0.5 * (times[14] + times[15]);
    gj_event_destroy(start);
    gj_event_destroy(end);
    gj_user_module_destroy(module);
}

int main(void) {
    CHECK(gj_context_create(&ctx));
    gj_runtime_info info;
    if (gj_runtime_probe(ctx, &info) != GJ_OK) {
        printf("{\"skipped\": \"no GPU\"}\n");
        return 0;
    }
    gj_encoding *enc = NULL;
    CHECK(gj_encoding_create(ctx, "{\"otype\": \"HashGrid\"}", 3, &enc));
    gj_module *module = NULL;
    CHECK(gj_module_create(ctx, enc, NULL, &module));
    const unsigned n = 1u << 21;
    const uint64_t n_params = gj_module_n_params(module);
    void *params = NULL, *x = NULL, *w = NULL, *out = NULL;
    CHECK(gj_device_alloc(ctx, n_params * gj_module_element_size(module), &params));
    CHECK(gj_device_alloc(ctx, (size_t)n * 3 * sizeof(float), &x));
    CHECK(gj_device_alloc(ctx, 64 * sizeof(float), &w));
    CHECK(gj_device_alloc(ctx, (size_t)n * sizeof(float), &out));
    gj_init_desc init;
    gj_init_desc_init(&init);
    init.params = params;
    init.scale = 1e3f;
    CHECK(gj_init_params(module, NULL, &init));
    float *host = malloc((size_t)n * 3 * sizeof(float));
    uint64_t state = 7;
    for (size_t k = 0; k < (size_t)n * 3; ++k) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        host[k] = (float)(state >> 40) / (float)(1u << 24);
    }
    CHECK(gj_memcpy_to_device(ctx, x, host, (size_t)n * 3 * sizeof(float)));
    float weights[64];
    for (int k = 0; k < 64; ++k) {
        weights[k] = (float)(k % 7) - 3.0f;
    }
    CHECK(gj_memcpy_to_device(ctx, w, weights, sizeof weights));
    void *args[] = {&x, &params, &w, &out, (void *)&n};
    variant v[2] = {{.name = "literal.cu"}, {.name = "table.cu"}};
    CHECK(gj_context_set_cache_enabled(ctx, 0)); /* cold compiles */
    measure(&v[0], info.arch, enc, 1, args, n);
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
    CHECK(gj_memcpy_to_host(ctx, a, out, n * sizeof(float)));
    measure(&v[1], info.arch, enc, 0, args, n);
    CHECK(gj_memcpy_to_host(ctx, b, out, n * sizeof(float)));
    const int same = memcmp(a, b, n * sizeof(float)) == 0;
    printf("{\"device\": \"%s\", \"n_points\": %u, \"same_results\": %s", info.device_name, n, same ? "true" : "false");
    for (int i = 0; i < 2; ++i) {
        printf(", \"%s\": {\"compile_ms\": %.1f, \"registers\": %d, \"median_ms\": %.4f}", i ? "table" : "literal",
               v[i].compile_ms, v[i].registers, v[i].median_ms);
    }
    printf("}\n");
    free(a);
    free(b);
    free(host);
    gj_device_free(ctx, params);
    gj_device_free(ctx, x);
    gj_device_free(ctx, w);
    gj_device_free(ctx, out);
    gj_module_destroy(module);
    gj_encoding_destroy(enc);
    gj_context_destroy(ctx);
    return same ? 0 : 1;
}
