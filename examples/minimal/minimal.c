/* minimal: a kernel of your own (minimal.cu) around an encoding's forward device function.
 * Usage: minimal [KERNEL_FILE] (default: the minimal.cu this was built from). */
#include <gridjit.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call) do { if ((call) != GJ_OK) { fprintf(stderr, "%s\n", gj_context_errmsg(ctx)); return 1; } } while (0)

/* The kernel source, read at run time (NUL-terminated, malloc()ed; NULL if it cannot be read). */
static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    const long size = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    char *text = size >= 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)size + 1) : NULL;
    if (text) text[fread(text, 1, (size_t)size, f)] = '\0';
    if (f) fclose(f);
    return text;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : MINIMAL_CU; /* MINIMAL_CU: set by CMakeLists.txt */
    char *minimal_cu = read_text(path);
    if (!minimal_cu) { perror(path); return 1; }
    gj_context *ctx = NULL;
    gj_encoding *enc = NULL;
    gj_context_create(&ctx);
    CHECK(gj_encoding_create(ctx, "{\"otype\": \"HashGrid\", \"n_levels\": 4, \"log2_hashmap_size\": 12, \"precision\": \"fp32\"}", 3, &enc));
    gj_source_encoding header = {"grid", enc, NULL}; /* the source includes it as "grid.cuh" */
    const char *kernels[] = {"encode"};
    gj_source_desc desc;
    gj_source_desc_init(&desc);
    desc.source = minimal_cu, desc.file_name = "minimal.cu", desc.kernels = kernels, desc.n_kernels = 1;
    desc.encodings = &header, desc.n_encodings = 1;
    gj_runtime_info info;
    if (gj_runtime_probe(ctx, &info) != GJ_OK) { /* no GPU: compile anyway, to show the source is valid */
        printf("no GPU (%s)\n", gj_context_errmsg(ctx));
        gj_program *prog = NULL;
        const gj_status s = gj_compile_user(ctx, &desc, "sm_90", &prog);
        if (s == GJ_ERROR_COMPILE) fputs(gj_program_log(prog), stderr);
        if (s == GJ_OK) printf("minimal.cu for sm_90: %s in %.0f ms; nothing to run\n",
                               gj_program_cache_status(prog) == GJ_CACHE_HIT ? "from the disk cache" : "compiled",
                               gj_program_compile_ms(prog));
        else printf("minimal.cu not compiled: %s\n", gj_context_errmsg(ctx));
        gj_program_destroy(prog);
        gj_encoding_destroy(enc);
        gj_context_destroy(ctx);
        free(minimal_cu);
        return s == GJ_OK || s == GJ_ERROR_NO_NVRTC ? 0 : 1;
    }
    int n = 3;
    static float params[4 * 4096 * 2]; /* 4 levels of 2^12 entries x 2 features */
    float x[] = {0.1f, 0.2f, 0.3f, 0.5f, 0.5f, 0.5f, 0.9f, 0.1f, 0.4f}, y[3 * 8];
    for (size_t i = 0; i < sizeof params / sizeof params[0]; ++i) params[i] = (float)(i % 101) / 100.0f - 0.5f;
    void *dx, *dparams, *dy;
    CHECK(gj_device_alloc(ctx, sizeof x, &dx));
    CHECK(gj_device_alloc(ctx, sizeof y, &dy));
    CHECK(gj_device_alloc(ctx, sizeof params, &dparams));
    CHECK(gj_memcpy_to_device(ctx, dx, x, sizeof x));
    CHECK(gj_memcpy_to_device(ctx, dparams, params, sizeof params));
    gj_user_module *module = NULL;
    gj_kernel *kernel = NULL;
    CHECK(gj_user_module_create(ctx, &desc, &module)); /* compiles for this GPU (disk-cached), loads */
    CHECK(gj_user_module_kernel(module, "encode", &kernel));
    gj_launch_config config;
    gj_launch_config_init(&config);
    config.block[0] = 64;
    void *args[] = {&dx, &dparams, &dy, &n};
    CHECK(gj_kernel_launch(kernel, &config, args));
    CHECK(gj_memcpy_to_host(ctx, y, dy, sizeof y));
    for (int i = 0; i < n; ++i) {
        printf("x = (%.1f, %.1f, %.1f): y[0..3] = %+.4f %+.4f %+.4f %+.4f\n", x[3 * i], x[3 * i + 1], x[3 * i + 2],
               y[8 * i], y[8 * i + 1], y[8 * i + 2], y[8 * i + 3]);
    }
    gj_device_free(ctx, dx), gj_device_free(ctx, dy), gj_device_free(ctx, dparams);
    gj_user_module_destroy(module), gj_encoding_destroy(enc), gj_context_destroy(ctx);
    free(minimal_cu);
    return 0;
}
