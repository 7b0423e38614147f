#define _POSIX_C_SOURCE 200809L
#include "example.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

gj_context *ex_ctx = NULL;

void ex_init(void) {
    if (gj_context_create(&ex_ctx) != GJ_OK) {
        fprintf(stderr, "gj_context_create failed\n");
        exit(1);
    }
}

void ex_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

void ex_check(gj_status status, const char *what, const char *file, int line) {
    if (status != GJ_OK) {
        ex_fail("%s:%d: %s: %s: %s", file, line, what, gj_status_name(status), gj_context_errmsg(ex_ctx));
    }
}

int ex_gpu_present(gj_runtime_info *info) {
    gj_status status = gj_runtime_probe(ex_ctx, info);
    if (status == GJ_OK) {
        return 1;
    }
    printf("no GPU: %s (%s)\n", gj_status_message(status), gj_context_errmsg(ex_ctx));
    return 0;
}

double ex_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* ------------------------------------------------------------------ sources */
char *ex_splice_mlp(const char *source, const char *file_name) {
    static const char directive[] = "#include \"mlp.cuh\"";
    const char *at = strstr(source, directive);
    if (!at) {
        ex_fail("%s has no line %s", file_name, directive);
    }
    const char *rest = strchr(at, '\n');
    rest = rest ? rest + 1 : at + strlen(at);
    int line = 1; /* the line of the directive */
    for (const char *p = source; p < at; ++p) {
        line += *p == '\n';
    }
    const size_t size = strlen(source) + strlen(ex_mlp_cuh) + strlen(file_name) + 128;
    char *out = malloc(size);
    if (!out) {
        ex_fail("out of memory");
    }
    snprintf(out, size, "%.*s#line 1 \"mlp.cuh\"\n%s\n#line %d \"%s\"\n%s", (int)(at - source), source, ex_mlp_cuh,
             line + 1, file_name, rest);
    return out;
}

void ex_program_init(ex_program *p, const char *file_name, const char *raw_source, const gj_encoding *enc) {
    memset(p, 0, sizeof *p);
    p->file_name = file_name;
    p->source = ex_splice_mlp(raw_source, file_name);
    p->encoding.name = "grid";
    p->encoding.encoding = enc;
    p->encoding.opts = NULL;
}

void ex_program_kernel(ex_program *p, const char *name) {
    if (p->n_kernels == sizeof p->kernels / sizeof p->kernels[0]) {
        ex_fail("too many kernels");
    }
    p->kernels[p->n_kernels++] = name;
}

void ex_program_define(ex_program *p, const char *name, int value) {
    if (p->n_options == sizeof p->options / sizeof p->options[0]) {
        ex_fail("too many options");
    }
    snprintf(p->option_text[p->n_options], sizeof p->option_text[0], "-D%s=%d", name, value);
    p->options[p->n_options] = p->option_text[p->n_options];
    p->n_options++;
}

void ex_program_passes(ex_program *p, uint32_t passes) {
    gj_codegen_options_init(&p->codegen);
    p->codegen.passes = passes;
    p->encoding.opts = &p->codegen;
}

void ex_program_desc(const ex_program *p, gj_source_desc *desc) {
    gj_source_desc_init(desc);
    desc->source = p->source;
    desc->file_name = p->file_name;
    desc->encodings = &p->encoding;
    desc->n_encodings = 1;
    desc->kernels = p->kernels;
    desc->n_kernels = p->n_kernels;
    desc->options = p->n_options ? p->options : NULL;
    desc->n_options = p->n_options;
}

void ex_program_free(ex_program *p) {
    free(p->source);
    p->source = NULL;
}

static void print_compile_error(gj_status status, gj_program *prog) {
    if (status == GJ_ERROR_COMPILE && prog) {
        fputs(gj_program_log(prog), stderr);
    }
}

void ex_compile_report(const ex_program *p, const char *arch) {
    gj_source_desc desc;
    ex_program_desc(p, &desc);
    gj_program *prog = NULL;
    gj_status status = gj_compile_user(ex_ctx, &desc, arch, &prog);
    if (status == GJ_ERROR_NO_NVRTC) {
        printf("%s: not compiled (NVRTC is not available: %s)\n", p->file_name, gj_context_errmsg(ex_ctx));
        return;
    }
    print_compile_error(status, prog);
    EX_CHECK(status);
    const char *cache = gj_program_cache_status(prog) == GJ_CACHE_HIT ? "from the disk cache" : "compiled";
    size_t bytes = 0;
    gj_program_binary(prog, &bytes);
    printf("%s: %zu kernel%s for %s, %s in %.0f ms (%zu bytes):", p->file_name, gj_program_n_kernels(prog),
           gj_program_n_kernels(prog) == 1 ? "" : "s", arch, cache, gj_program_compile_ms(prog), bytes);
    for (size_t i = 0; i < gj_program_n_kernels(prog); ++i) {
        printf(" %s", gj_program_kernel_name(prog, i) + 1);
    }
    printf("\n");
    gj_program_destroy(prog);
}

gj_context *ex_cold_context(void) {
    gj_context *cold = NULL;
    if (gj_context_create(&cold) != GJ_OK) {
        ex_fail("gj_context_create failed");
    }
    gj_context_set_cache_enabled(cold, 0);
    return cold;
}

double ex_cold_compile_ms(const ex_program *p, const char *arch) {
    gj_context *cold = ex_cold_context();
    gj_source_desc desc;
    ex_program_desc(p, &desc);
    gj_program *prog = NULL;
    const double start = ex_now_ms();
    gj_status status = gj_compile_user(cold, &desc, arch, &prog);
    const double ms = ex_now_ms() - start;
    if (status != GJ_OK) {
        print_compile_error(status, prog);
        ex_fail("cold compile of %s: %s: %s", p->file_name, gj_status_name(status), gj_context_errmsg(cold));
    }
    gj_program_destroy(prog);
    gj_context_destroy(cold);
    return ms;
}

gj_user_module *ex_module(const ex_program *p) {
    gj_source_desc desc;
    ex_program_desc(p, &desc);
    gj_user_module *module = NULL;
    gj_status status = gj_user_module_create(ex_ctx, &desc, &module);
    if (status == GJ_ERROR_COMPILE) {
        gj_program *prog = NULL; /* the log, from a compile for sm_90 */
        gj_compile_user(ex_ctx, &desc, "sm_90", &prog);
        print_compile_error(GJ_ERROR_COMPILE, prog);
        gj_program_destroy(prog);
    }
    EX_CHECK(status);
    return module;
}

gj_kernel *ex_kernel(gj_user_module *module, const char *name) {
    gj_kernel *kernel = NULL;
    EX_CHECK(gj_user_module_kernel(module, name, &kernel));
    return kernel;
}

/* ------------------------------------------------------------------ launches */
static int multiprocessors = 0;

uint32_t ex_persistent_grid(gj_kernel *kernel, uint32_t block, uint32_t shared_bytes, uint64_t needed) {
    int per_sm = 0;
    EX_CHECK(gj_kernel_occupancy(kernel, block, shared_bytes, &per_sm));
    if (per_sm < 1) {
        ex_fail("a block of %u threads with %u bytes of shared memory does not fit on a multiprocessor", block,
                shared_bytes);
    }
    if (!multiprocessors) {
        /* cuOccupancyMaxPotentialBlockSize's minimum grid is (blocks per SM) x SMs. */
        int suggested = 0, min_grid = 0, suggested_per_sm = 0;
        EX_CHECK(gj_kernel_suggest_block(kernel, shared_bytes, &suggested, &min_grid));
        EX_CHECK(gj_kernel_occupancy(kernel, (uint32_t)suggested, shared_bytes, &suggested_per_sm));
        multiprocessors = suggested_per_sm > 0 ? min_grid / suggested_per_sm : 1;
        if (multiprocessors < 1) {
            multiprocessors = 1;
        }
    }
    uint64_t grid = (uint64_t)per_sm * (uint64_t)multiprocessors;
    if (grid > needed) {
        grid = needed;
    }
    return grid ? (uint32_t)grid : 1u;
}

void ex_launch(gj_kernel *kernel, uint32_t grid, uint32_t block, uint32_t shared_bytes, void **args) {
    gj_launch_config config;
    gj_launch_config_init(&config);
    config.grid[0] = grid;
    config.block[0] = block;
    config.shared_bytes = shared_bytes;
    EX_CHECK(gj_kernel_launch(kernel, &config, args));
}

void ex_forward(gj_module *module, uint64_t n, const float *x, const void *params, void *y, int soa) {
    gj_forward_desc desc;
    gj_forward_desc_init(&desc);
    desc.n = n;
    desc.x = x;
    desc.params = params;
    desc.y = y;
    desc.y_layout = soa ? GJ_LAYOUT_SOA : GJ_LAYOUT_AOS;
    EX_CHECK(gj_forward(module, NULL, &desc));
}

static int compare_doubles(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double ex_median(double *values, int n) {
    qsort(values, (size_t)n, sizeof *values, compare_doubles);
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double ex_time_ms(ex_work_fn fn, void *user, int warmup, int reps) {
    for (int i = 0; i < warmup; ++i) {
        fn(user);
    }
    EX_CHECK(gj_stream_synchronize(ex_ctx, NULL));
    gj_event **events = calloc(2 * (size_t)reps, sizeof *events);
    double *ms = calloc((size_t)reps, sizeof *ms);
    if (!events || !ms) {
        ex_fail("out of memory");
    }
    for (int i = 0; i < 2 * reps; ++i) {
        EX_CHECK(gj_event_create(ex_ctx, &events[i]));
    }
    for (int i = 0; i < reps; ++i) {
        EX_CHECK(gj_event_record(events[2 * i], NULL));
        fn(user);
        EX_CHECK(gj_event_record(events[2 * i + 1], NULL));
    }
    for (int i = 0; i < reps; ++i) {
        float elapsed = 0.0f;
        EX_CHECK(gj_event_elapsed_ms(events[2 * i], events[2 * i + 1], &elapsed));
        ms[i] = elapsed;
    }
    for (int i = 0; i < 2 * reps; ++i) {
        gj_event_destroy(events[i]);
    }
    const double median = ex_median(ms, reps);
    free(events);
    free(ms);
    return median;
}

/* ------------------------------------------------------------------ memory */
void *ex_alloc(size_t bytes) {
    void *p = NULL;
    EX_CHECK(gj_device_alloc(ex_ctx, bytes ? bytes : 16, &p));
    return p;
}

void ex_upload(void *dst, const void *src, size_t bytes) {
    EX_CHECK(gj_memcpy_to_device(ex_ctx, dst, src, bytes));
}

void ex_download(void *dst, const void *src, size_t bytes) {
    EX_CHECK(gj_memcpy_to_host(ex_ctx, dst, src, bytes));
}

void ex_zero(void *dst, size_t bytes) {
    void *zeros = calloc(1, bytes ? bytes : 1);
    if (!zeros) {
        ex_fail("out of memory");
    }
    ex_upload(dst, zeros, bytes);
    free(zeros);
}

void *ex_alloc_zero(size_t bytes) {
    void *p = ex_alloc(bytes);
    ex_zero(p, bytes);
    return p;
}

/* ------------------------------------------------------------------ numbers */
static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A uniform float in [0, 1): the top 24 bits of the next number. */
static float next_uniform(uint64_t *state) {
    return (float)(splitmix64(state) >> 40) * (1.0f / 16777216.0f);
}

void ex_random_uniform(float *out, size_t n, uint64_t seed) {
    uint64_t state = seed;
    for (size_t i = 0; i < n; ++i) {
        out[i] = next_uniform(&state);
    }
}

float ex_half_to_float(uint16_t h) {
    float f;
    gj_halves_to_floats(&h, &f, 1);
    return f;
}

float ex_round_half(float f) {
    uint16_t h;
    gj_floats_to_halves(&f, &h, 1);
    return ex_half_to_float(h);
}

void ex_init_weights(float *w, uint16_t *w_half, uint64_t seed) {
    static const int shape[3][3] = {{EX_W0, EX_HID, EX_IN}, {EX_W1, EX_HID, EX_HID}, {EX_W2, EX_OUT, EX_HID}};
    uint64_t state = seed;
    for (int layer = 0; layer < 3; ++layer) {
        const int offset = shape[layer][0], rows = shape[layer][1], cols = shape[layer][2];
        const float limit = sqrtf(6.0f / (float)(rows + cols));
        for (int i = 0; i < rows * cols; ++i) {
            w[offset + i] = ex_round_half((2.0f * next_uniform(&state) - 1.0f) * limit);
        }
    }
    gj_floats_to_halves(w, w_half, EX_N_WEIGHTS);
}

void ex_mlp_forward_cpu(const float *w, const float *x, float h1[EX_HID], float h2[EX_HID], float out[EX_OUT]) {
    for (int n = 0; n < EX_HID; ++n) {
        double s = 0.0;
        for (int k = 0; k < EX_IN; ++k) {
            s += (double)w[EX_W0 + n * EX_IN + k] * x[k];
        }
        h1[n] = ex_round_half(s > 0.0 ? (float)s : 0.0f);
    }
    for (int n = 0; n < EX_HID; ++n) {
        double s = 0.0;
        for (int k = 0; k < EX_HID; ++k) {
            s += (double)w[EX_W1 + n * EX_HID + k] * h1[k];
        }
        h2[n] = ex_round_half(s > 0.0 ? (float)s : 0.0f);
    }
    for (int n = 0; n < EX_OUT; ++n) {
        double s = 0.0;
        for (int k = 0; k < EX_HID; ++k) {
            s += (double)w[EX_W2 + n * EX_HID + k] * h2[k];
        }
        out[n] = (float)s;
    }
}

gj_network *ex_model_create(int dims, uint32_t n_out) {
    gj_network *model = NULL;
    EX_CHECK(gj_network_create(ex_ctx, EX_MODEL, (uint32_t)dims, n_out, &model));
    gj_encoding *enc = NULL;
    EX_CHECK(gj_encoding_create(ex_ctx, EX_HASHGRID, (uint32_t)dims, &enc));
    const uint64_t mlp = gj_network_n_mlp_params(model), grid = gj_encoding_n_params(enc);
    const uint64_t model_grid = gj_encoding_n_params(gj_network_encoding(model));
    gj_encoding_destroy(enc);
    if (mlp != EX_N_WEIGHTS || model_grid != grid || gj_network_padded_output_width(model) != EX_OUT) {
        ex_fail("the model's parameters (%llu network, %llu encoding, %u outputs padded) are not the MLP's and the "
                "encoding's (%d, %llu, %d)",
                (unsigned long long)mlp, (unsigned long long)model_grid, gj_network_padded_output_width(model),
                EX_N_WEIGHTS, (unsigned long long)grid, EX_OUT);
    }
    return model;
}

gj_status ex_model_inference(gj_network_module *module, uint64_t n, const float *x, const void *weights,
                             const void *params, void *y_fp16) {
    gj_network_pass_desc d;
    gj_network_pass_desc_init(&d);
    d.n = n;
    d.input = x;
    d.params = weights;
    d.encoding_params = params;
    d.output_fp16 = y_fp16;
    return gj_network_inference(module, NULL, &d);
}
