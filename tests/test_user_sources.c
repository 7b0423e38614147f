/* User sources through the library (docs/fusion.md): encodings offered as in-memory
 * headers NAME.cuh, several in one source; the compile is cached (a miss, then a hit in a
 * second context); errors name what is wrong (an unknown header, an unknown kernel, a
 * compile error with the numbered lines of the user's file, a bad launch configuration);
 * a user module's kernels launched through the fake libcuda (made and loaded). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_driver.h"
#include "gridjit.h"
#include "test_env.h"

static const char hash_config[] = "{\"otype\": \"HashGrid\", \"n_levels\": 8, \"log2_hashmap_size\": 14}";
static const char dense_config[] = "{\"otype\": \"DenseGrid\", \"n_levels\": 2, \"base_resolution\": 4, "
                                   "\"precision\": \"fp32\"}";

/* A kernel using two encodings, and a template kernel named by an expression. */
static const char two_encodings[] =
    "#include \"geo.cuh\"\n"
    "#include \"tex.cuh\"\n"
    "__global__ void shade(const float* xs, const gj_half* pg, const float* pt, float* out, int n) {\n"
    "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;\n"
    "    geo_in_t x; tex_in_t uv;\n"
    "    for (int d = 0; d < geo_config::D; ++d) x.v[d] = xs[3 * i + d];\n"
    "    for (int d = 0; d < tex_config::D; ++d) uv.v[d] = xs[3 * i + d];\n"
    "    const geo_out_t g = geo(x, pg, nullptr);\n"
    "    const tex_out_t t = tex(uv, pt, nullptr);\n"
    "    float s = 0.0f;\n"
    "    for (int k = 0; k < geo_config::N_OUT; ++k) s += gj_to_float(g.v[k]);\n"
    "    for (int k = 0; k < tex_config::N_OUT; ++k) s += t.v[k];\n"
    "    out[i] = s;\n"
    "}\n"
    "template <int SCALE> __global__ void scaled(float* out) { out[threadIdx.x] *= SCALE; }\n";

typedef struct fixture {
    gj_context *ctx;
    gj_encoding *geo, *tex;
    gj_source_encoding encodings[2];
    gj_source_desc desc;
    const char *kernels[2];
} fixture;

static int setup(void **state) {
    static fixture f;
    memset(&f, 0, sizeof f);
    if (gj_context_create(&f.ctx) != GJ_OK || gj_encoding_create(f.ctx, hash_config, 3, &f.geo) != GJ_OK ||
        gj_encoding_create(f.ctx, dense_config, 2, &f.tex) != GJ_OK) {
        return -1;
    }
    gj_context_set_log(f.ctx, NULL, NULL);
    f.encodings[0] = (gj_source_encoding){"geo", f.geo, NULL};
    f.encodings[1] = (gj_source_encoding){"tex", f.tex, NULL};
    f.kernels[0] = "shade";
    f.kernels[1] = "scaled<3>";
    gj_source_desc_init(&f.desc);
    f.desc.source = two_encodings;
    f.desc.file_name = "shade.cu";
    f.desc.encodings = f.encodings;
    f.desc.n_encodings = 2;
    f.desc.kernels = f.kernels;
    f.desc.n_kernels = 2;
    *state = &f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    gj_encoding_destroy(f->geo);
    gj_encoding_destroy(f->tex);
    gj_context_destroy(f->ctx);
    return 0;
}

static void the_unit_holds_each_header_then_the_source(void **state) {
    fixture *f = *state;
    char *unit = NULL;
    assert_int_equal(gj_user_source_generate(f->ctx, &f->desc, &unit), GJ_OK);
    const char *geo = strstr(unit, "// ===== geo.cuh =====");
    const char *tex = strstr(unit, "// ===== tex.cuh =====");
    const char *source = strstr(unit, "// ===== shade.cu =====");
    assert_true(geo && tex && source && geo < tex && tex < source);
    assert_non_null(strstr(geo, "struct geo_config {"));
    assert_non_null(strstr(tex, "__device__ tex_out_t tex(const tex_in_t& x"));
    assert_non_null(strstr(source, two_encodings));
    assert_null(strstr(unit, "__global__ void __launch_bounds__")); /* device functions only */
    gj_free(unit);
}

static void two_encodings_compile_and_the_cache_serves_the_second_context(void **state) {
    fixture *f = *state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/user-cache", getenv("GRIDJIT_TEST_TMP") ? getenv("GRIDJIT_TEST_TMP") : "/tmp");
    char command[4200];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    assert_int_equal(system(command), 0);
    gj_program *first = NULL, *second = NULL;
    assert_int_equal(gj_context_set_cache_dir(f->ctx, dir), GJ_OK);
    gj_status status = gj_compile_user(f->ctx, &f->desc, "sm_90", &first);
    if (status != GJ_OK) {
        fail_msg("%s\n%s", gj_context_errmsg(f->ctx), first ? gj_program_log(first) : "");
    }
    assert_int_equal(gj_program_cache_status(first), GJ_CACHE_MISS);
    assert_int_equal(gj_program_n_kernels(first), 2);
    assert_string_equal(gj_program_kernel_name(first, 0), "&shade");
    assert_string_equal(gj_program_kernel_name(first, 1), "&scaled<3>");
    assert_non_null(strstr(gj_program_lowered_name(first, 1), "scaled"));

    gj_context *other = NULL;
    assert_int_equal(gj_context_create(&other), GJ_OK);
    assert_int_equal(gj_context_set_cache_dir(other, dir), GJ_OK);
    assert_int_equal(gj_compile_user(other, &f->desc, "sm_90", &second), GJ_OK);
    assert_int_equal(gj_program_cache_status(second), GJ_CACHE_HIT);
    assert_string_equal(gj_program_cache_key(first), gj_program_cache_key(second));
    size_t a = 0, b = 0;
    const void *bytes_a = gj_program_binary(first, &a), *bytes_b = gj_program_binary(second, &b);
    assert_true(a == b && memcmp(bytes_a, bytes_b, a) == 0);
    assert_string_equal(gj_program_lowered_name(first, 0), gj_program_lowered_name(second, 0));

    /* Another option, another key. */
    const char *define[] = {"-DUNUSED_FLAG=1"};
    f->desc.options = define;
    f->desc.n_options = 1;
    gj_program *third = NULL;
    assert_int_equal(gj_compile_user(other, &f->desc, "sm_90", &third), GJ_OK);
    assert_int_equal(gj_program_cache_status(third), GJ_CACHE_MISS);
    assert_string_not_equal(gj_program_cache_key(first), gj_program_cache_key(third));
    f->desc.options = NULL;
    f->desc.n_options = 0;
    gj_program_destroy(first);
    gj_program_destroy(second);
    gj_program_destroy(third);
    gj_context_destroy(other);
}

static void an_unknown_header_is_named(void **state) {
    fixture *f = *state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    f->desc.source = "#include \"missing.cuh\"\n__global__ void shade() {}\n";
    f->desc.n_kernels = 1;
    gj_program *prog = NULL;
    assert_int_equal(gj_context_set_cache_enabled(f->ctx, 0), GJ_OK);
    assert_int_equal(gj_compile_user(f->ctx, &f->desc, "sm_90", &prog), GJ_ERROR_COMPILE);
    assert_non_null(strstr(gj_program_log(prog), "missing.cuh"));
    assert_non_null(strstr(gj_context_errmsg(f->ctx), "missing.cuh"));
    gj_program_destroy(prog);
}

static void an_unknown_kernel_is_named(void **state) {
    fixture *f = *state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    const char *kernels[] = {"no_such_kernel"};
    f->desc.kernels = kernels;
    f->desc.n_kernels = 1;
    gj_program *prog = NULL;
    assert_int_equal(gj_context_set_cache_enabled(f->ctx, 0), GJ_OK);
    gj_status status = gj_compile_user(f->ctx, &f->desc, "sm_90", &prog);
    assert_true(status == GJ_ERROR_COMPILE);
    assert_non_null(strstr(gj_context_errmsg(f->ctx), "no_such_kernel"));
    gj_program_destroy(prog);
}

static void a_compile_error_shows_the_numbered_lines_of_the_users_file(void **state) {
    fixture *f = *state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    f->desc.source = "#include \"geo.cuh\"\n"
                     "__global__ void shade(float* out) {\n"
                     "    gj_half h = gj_from_float<gj_half>(1.0f);\n"
                     "    out[0] = h * 2.0f;\n" /* gj_half is storage only: no arithmetic */
                     "}\n";
    f->desc.n_kernels = 1;
    gj_program *prog = NULL;
    assert_int_equal(gj_context_set_cache_enabled(f->ctx, 0), GJ_OK);
    assert_int_equal(gj_compile_user(f->ctx, &f->desc, "sm_90", &prog), GJ_ERROR_COMPILE);
    const char *log = gj_program_log(prog);
    assert_non_null(strstr(log, "shade.cu(4): error"));
    assert_non_null(strstr(log, ">     4 |     out[0] = h * 2.0f;"));
    assert_non_null(strstr(gj_context_errmsg(f->ctx), "shade.cu(4)"));
    gj_program_destroy(prog);
}

static void bad_descriptions_are_refused_before_compiling(void **state) {
    fixture *f = *state;
    gj_program *prog = NULL;
    gj_source_desc raw;
    memset(&raw, 0, sizeof raw);
    raw.source = "";
    assert_int_equal(gj_compile_user(f->ctx, &raw, "sm_90", &prog), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(f->ctx), "gj_source_desc_init"));
    gj_source_encoding bad = {"not an identifier", f->geo, NULL};
    f->desc.encodings = &bad;
    f->desc.n_encodings = 1;
    assert_int_equal(gj_compile_user(f->ctx, &f->desc, "sm_90", &prog), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(f->ctx), "C identifier"));
    gj_source_encoding twice[2] = {{"geo", f->geo, NULL}, {"geo", f->tex, NULL}};
    f->desc.encodings = twice;
    f->desc.n_encodings = 2;
    assert_int_equal(gj_compile_user(f->ctx, &f->desc, "sm_90", &prog), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(f->ctx), "two encodings are named \"geo\""));
    f->desc.encodings = f->encodings;
    assert_int_equal(gj_compile_user(f->ctx, &f->desc, "sm90", &prog), GJ_ERROR_INVALID_ARGUMENT);
    assert_null(prog);
}

static void launch_configurations_are_checked(void **state) {
    (void)state;
    gj_launch_config config;
    gj_launch_config_init(&config);
    assert_int_equal(config.struct_size, sizeof config);
    assert_true(config.grid[0] == 1 && config.block[2] == 1 && config.shared_bytes == 0 && !config.stream);
    /* Without a kernel nothing launches; the checks of a real kernel run on the GPU
     * (tests/test_gpu_user_kernels.c). */
    assert_int_equal(gj_kernel_launch(NULL, &config, NULL), GJ_ERROR_INVALID_ARGUMENT);
    int blocks = 7;
    assert_int_equal(gj_kernel_occupancy(NULL, 128, 0, &blocks), GJ_ERROR_INVALID_ARGUMENT);
}

/* A real kernel of a user module, through the fake libcuda of tests/fake_cuda (NVRTC compiles
 * for real, nothing runs): its launch configurations checked and named, a good one launched
 * with its grid and block, the block suggestion and attributes read, a stream of the
 * context's made and given back; the runtime's own argument checks. */
static void a_user_kernels_launch_through_the_fake_driver(void **state) {
    fixture *f = *state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    gj_fake_driver fake;
    if (gj_fake_driver_open(&fake) != 0) {
        skip();
    }
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    gj_user_module *um = NULL;
    const gj_status made = gj_user_module_create(ctx, &f->desc, &um);
    if (made != GJ_OK) {
        fail_msg("gj_user_module_create: %s", gj_context_errmsg(ctx));
    }
    gj_kernel *k = NULL;
    assert_int_equal(gj_user_module_kernel(um, "scaled<3>", &k), GJ_OK);
    void *out = NULL;
    assert_int_equal(gj_device_alloc(ctx, 4096, &out), GJ_OK);
    void *args[] = {&out};
    assert_int_equal(gj_kernel_launch(k, NULL, args), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "gj_kernel_launch(scaled<3>): config must not be NULL"));
    gj_launch_config config;
    gj_launch_config_init(&config);
    config.struct_size = 8;
    assert_int_equal(gj_kernel_launch(k, &config, args), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "prepare it with gj_launch_config_init()"));
    gj_launch_config_init(&config);
    config.grid[1] = 0;
    assert_int_equal(gj_kernel_launch(k, &config, args), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "grid 1x0x1, block 1x1x1: every extent must be at least 1"));
    gj_launch_config_init(&config);
    config.block[0] = 33;
    config.block[1] = 32; /* 1056 threads */
    assert_int_equal(gj_kernel_launch(k, &config, args), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "a block at most 1024 threads"));
    fake.reset_counts();
    gj_launch_config_init(&config);
    config.grid[0] = 5;
    config.block[0] = 64;
    assert_int_equal(gj_kernel_launch(k, &config, args), GJ_OK);
    assert_int_equal(fake.count("cuLaunchKernel"), 1);
    assert_int_equal(fake.last_grid_x(), 5);
    assert_int_equal(fake.last_block_x(), 64);
    int block = 0, grid = 0, registers = -1, static_shared = -1;
    assert_int_equal(gj_kernel_suggest_block(k, 0, &block, &grid), GJ_OK);
    assert_true(block == 256 && grid == 264); /* what the fake answers */
    assert_int_equal(gj_kernel_suggest_block(k, 0, NULL, &grid), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_kernel_attributes(k, &registers, &static_shared), GJ_OK);
    assert_true(registers >= 0 && static_shared >= 0);
    /* A stream of the context's: made, launched on, given back. */
    gj_stream stream = NULL;
    assert_int_equal(gj_stream_create(ctx, 1, &stream), GJ_OK);
    assert_non_null(stream);
    config.stream = stream;
    assert_int_equal(gj_kernel_launch(k, &config, args), GJ_OK);
    gj_stream_destroy(ctx, stream);
    assert_int_equal(fake.count("cuStreamDestroy"), 1);
    gj_stream_destroy(NULL, stream); /* no context: nothing */
    assert_int_equal(gj_stream_create(ctx, 0, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "gj_stream_create: out must not be NULL"));
    assert_int_equal(gj_device_alloc(ctx, 16, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "gj_device_alloc: ptr must not be NULL"));
    assert_int_equal(gj_event_create(ctx, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "gj_event_create: out must not be NULL"));
    /* The same source compiled apart (gj_compile_user) and loaded as a user module. */
    gj_program *prog = NULL;
    assert_int_equal(gj_compile_user(ctx, &f->desc, "sm_90", &prog), GJ_OK);
    gj_user_module *loaded = NULL;
    fake.reset_counts();
    assert_int_equal(gj_user_module_load(ctx, prog, &loaded), GJ_OK);
    assert_int_equal(fake.count("cuLibraryLoadData"), 1);
    gj_kernel *k2 = NULL;
    assert_int_equal(gj_user_module_kernel(loaded, "shade", &k2), GJ_OK);
    assert_int_equal(gj_user_module_kernel(loaded, "nope", &k2), GJ_ERROR_NOT_FOUND);
    assert_non_null(strstr(gj_context_errmsg(ctx), "no kernel \"nope\" (the source was compiled with 2 kernel names, "
                                                   "the first shade)"));
    assert_int_equal(gj_user_module_load(ctx, prog, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "gj_user_module_load: out must not be NULL"));
    gj_user_module *none = NULL;
    assert_int_equal(gj_user_module_load(ctx, NULL, &none), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "holds no cubin or PTX"));
    assert_null(none);
    gj_user_module_destroy(loaded);
    gj_program_destroy(prog);
    gj_device_free(ctx, out);
    gj_user_module_destroy(um);
    gj_context_destroy(ctx);
    gj_fake_driver_close(&fake);
}

/* Networks are offered as encodings are: an encoding's features straight into a network's
 * warp-wide device functions, and a model's header (its encoding as sdf_encoding) beside
 * them in the same unit. */
static const char field_source[] =
    "#include \"geo.cuh\"\n"
    "#include \"mlp.cuh\"\n"
    "#include \"sdf.cuh\"\n"
    "extern \"C\" __global__ void __launch_bounds__(128) field(const float* xs, const gj_half* pg,\n"
    "        const gj_half* pm, const gj_half* ps, float* out, int n) {\n"
    "    __shared__ __align__(16) gj_u16 scratch[4][mlp_config::SCRATCH_HALVES];\n"
    "    __shared__ __align__(16) gj_u16 sdf_scratch[4][sdf_config::SCRATCH_HALVES];\n"
    "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    const bool active = i < n;\n"
    "    geo_in_t x;\n"
    "    sdf_encoding_in_t p;\n"
    "    for (int d = 0; d < geo_config::D; ++d) x.v[d] = p.v[d] = active ? xs[3 * i + d] : 0.0f;\n"
    "    const geo_out_t f = geo(x, pg, nullptr);\n"
    "    const mlp_out_t y = mlp(&f.v[0], active, pm, scratch[threadIdx.x / 32]);\n"
    "    const sdf_encoding_out_t g = sdf_encoding(p, ps + sdf_config::N_PARAMS, nullptr);\n"
    "    const sdf_out_t s = sdf(&g.v[0], active, ps, sdf_scratch[threadIdx.x / 32]);\n"
    "    if (active) out[i] = y.v[0] + s.v[0];\n"
    "}\n";

static void networks_are_offered_as_headers_beside_encodings(void **state) {
    fixture *f = *state;
    gj_network *mlp = NULL, *sdf = NULL;
    assert_int_equal(gj_network_create(f->ctx, "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 32, \"n_hidden_layers\": 2}",
                                       gj_encoding_n_output_dims(f->geo), 4, &mlp),
                     GJ_OK);
    assert_int_equal(gj_network_create(f->ctx,
                                       "{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 4}, "
                                       "\"network\": {\"otype\": \"FullyFusedMLP\", \"n_neurons\": 16, \"n_hidden_layers\": 1}}",
                                       3, 1, &sdf),
                     GJ_OK);
    gj_source_network networks[2] = {{"mlp", mlp, NULL}, {"sdf", sdf, NULL}};
    const char *kernels[] = {"field"};
    gj_source_desc desc = f->desc;
    desc.source = field_source;
    desc.file_name = "field.cu";
    desc.n_encodings = 1; /* geo */
    desc.networks = networks;
    desc.n_networks = 2;
    desc.kernels = kernels;
    desc.n_kernels = 1;
    char *unit = NULL;
    assert_int_equal(gj_user_source_generate(f->ctx, &desc, &unit), GJ_OK);
    const char *geo = strstr(unit, "// ===== geo.cuh =====");
    const char *m = strstr(unit, "// ===== mlp.cuh =====");
    const char *s = strstr(unit, "// ===== sdf.cuh =====");
    assert_true(geo && m && s && geo < m && m < s);
    assert_non_null(strstr(m, "struct mlp_config {"));
    assert_non_null(strstr(s, "struct sdf_encoding_config {"));
    assert_null(strstr(unit, "__global__ void __launch_bounds__(256)")); /* device functions only */
    gj_free(unit);
    if (gj_test_have_nvrtc()) {
        gj_context_set_cache_enabled(f->ctx, 0);
        gj_program *prog = NULL;
        const gj_status status = gj_compile_user(f->ctx, &desc, "sm_90", &prog);
        if (status != GJ_OK || gj_program_log(prog)[0] != '\0') {
            fail_msg("%s\n%s", gj_context_errmsg(f->ctx), prog ? gj_program_log(prog) : "");
        }
        assert_string_equal(gj_program_lowered_name(prog, 0), "field");
        gj_program_destroy(prog);
    }
    /* Names are checked across encodings and networks, and a network must be given. */
    gj_program *prog = NULL;
    networks[1].name = "geo";
    assert_int_equal(gj_compile_user(f->ctx, &desc, "sm_90", &prog), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(f->ctx), "two headers are named \"geo\""));
    networks[1] = (gj_source_network){"mlp", sdf, NULL};
    assert_int_equal(gj_compile_user(f->ctx, &desc, "sm_90", &prog), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(f->ctx), "two headers are named \"mlp\""));
    networks[1] = (gj_source_network){"sdf", NULL, NULL};
    assert_int_equal(gj_compile_user(f->ctx, &desc, "sm_90", &prog), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(f->ctx), "networks[1] needs a name"));
    desc.networks = NULL;
    assert_int_equal(gj_compile_user(f->ctx, &desc, "sm_90", &prog), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(f->ctx), "an array is NULL"));
    /* A struct of the first version has no network fields: they are not read. */
    desc.source = two_encodings;
    desc.n_encodings = 2;
    desc.struct_size = (uint32_t)(offsetof(gj_source_desc, n_options) + sizeof(size_t));
    unit = NULL;
    assert_int_equal(gj_user_source_generate(f->ctx, &desc, &unit), GJ_OK);
    assert_null(strstr(unit, "mlp.cuh"));
    gj_free(unit);
    gj_network_destroy(mlp);
    gj_network_destroy(sdf);
}

/* The worked example of docs/fusion.md, taken from the document itself, compiles as the
 * document says it does (with the default HashGrid offered as "grid"). */
static char *fusion_doc_example(void) {
    char path[2048];
    snprintf(path, sizeof path, "%s/docs/fusion.md", getenv("GRIDJIT_SOURCE_DIR") ? getenv("GRIDJIT_SOURCE_DIR") : ".");
    FILE *file = fopen(path, "rb");
    assert_non_null(file);
    static char text[1 << 16];
    const size_t got = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[got] = 0;
    const char *start = strstr(text, "```cuda\n#include \"grid.cuh\"");
    assert_non_null(start);
    start += strlen("```cuda\n");
    const char *end = strstr(start, "```");
    assert_non_null(end);
    char *example = calloc((size_t)(end - start) + 1, 1);
    memcpy(example, start, (size_t)(end - start));
    return example;
}

static void the_worked_example_of_the_fusion_guide_compiles(void **state) {
    fixture *f = *state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    char *example = fusion_doc_example();
    gj_encoding *grid = NULL;
    assert_int_equal(gj_encoding_create(f->ctx, "{\"otype\": \"HashGrid\"}", 3, &grid), GJ_OK);
    gj_source_encoding offered = {"grid", grid, NULL};
    const char *kernels[] = {"weighted_sum"};
    gj_source_desc desc;
    gj_source_desc_init(&desc);
    desc.source = example;
    desc.file_name = "weighted_sum.cu";
    desc.encodings = &offered;
    desc.n_encodings = 1;
    desc.kernels = kernels;
    desc.n_kernels = 1;
    gj_context_set_cache_enabled(f->ctx, 0);
    gj_program *prog = NULL;
    const gj_status status = gj_compile_user(f->ctx, &desc, "sm_90", &prog);
    if (status != GJ_OK) {
        fail_msg("%s\n%s", gj_context_errmsg(f->ctx), prog ? gj_program_log(prog) : "");
    }
    assert_string_equal(gj_program_lowered_name(prog, 0), "weighted_sum"); /* extern "C" */
    gj_program_destroy(prog);
    /* What the guide says does not compile: arithmetic on gj_half without gj_to_float. */
    static const char half_times_float[] =
        "#include \"grid.cuh\"\n"
        "extern \"C\" __global__ void k(const gj_half* h, float* out) { out[0] = h[0] * 2.0f; }\n";
    desc.source = half_times_float;
    kernels[0] = "k";
    assert_int_equal(gj_compile_user(f->ctx, &desc, "sm_90", &prog), GJ_ERROR_COMPILE);
    gj_program_destroy(prog);
    gj_encoding_destroy(grid);
    free(example);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(the_unit_holds_each_header_then_the_source),
        T(two_encodings_compile_and_the_cache_serves_the_second_context),
        T(an_unknown_header_is_named),
        T(an_unknown_kernel_is_named),
        T(a_compile_error_shows_the_numbered_lines_of_the_users_file),
        T(bad_descriptions_are_refused_before_compiling),
        T(launch_configurations_are_checked),
        T(a_user_kernels_launch_through_the_fake_driver),
        T(networks_are_offered_as_headers_beside_encodings),
        T(the_worked_example_of_the_fusion_guide_compiles),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
