#include "inference.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pipeline {
    uint64_t n;
    gj_module *module;    /* gridjit's own kernels (the unfused forward) */
    gj_network_module *model; /* gridjit's network module of the same model (encoding + MLP) */
    gj_kernel *fused, *mlp[2]; /* mlp[soa] */
    int soa;              /* the unfused pipeline's feature layout: 0 point-major (AoS), 1 feature-major */
    uint32_t fused_grid, mlp_grid, block, shared;
    float *x;
    void *params;
    uint16_t *weights, *features, *y;
    void *y_model;        /* the module's outputs (fp16 values, as the hand-written kernels') */
} pipeline;

static void run_fused(void *user) {
    pipeline *p = user;
    void *args[] = {&p->x, &p->params, &p->weights, &p->y, &p->n};
    ex_launch(p->fused, p->fused_grid, p->block, p->shared, args);
}

/* The same model through gridjit's network module: its inference kernel, generated for this
 * configuration, fuses the encoding and the network as fused_infer does by hand. */
static void run_model(void *user) {
    pipeline *p = user;
    EX_CHECK(ex_model_inference(p->model, p->n, p->x, p->weights, p->params, p->y_model));
}

/* The module's first inference in a context of its own with gridjit's disk cache off: the
 * compile of its inference program, the load and one small launch. */
static double model_cold_ms(const gj_network *model, const pipeline *p) {
    gj_context *cold = ex_cold_context();
    gj_network_module *m = NULL;
    const double start = ex_now_ms();
    gj_status status = gj_network_module_create(cold, model, &m);
    if (status == GJ_OK) status = ex_model_inference(m, 32, p->x, p->weights, p->params, p->y_model);
    if (status == GJ_OK) status = gj_stream_synchronize(cold, NULL);
    const double ms = ex_now_ms() - start;
    if (status != GJ_OK) {
        ex_fail("the module's cold inference: %s: %s", gj_status_name(status), gj_context_errmsg(cold));
    }
    gj_network_module_destroy(m);
    gj_context_destroy(cold);
    return ms;
}

static void run_encoding(void *user) {
    pipeline *p = user;
    ex_forward(p->module, p->n, p->x, p->params, p->features, p->soa);
}

static void run_unfused(void *user) {
    pipeline *p = user;
    run_encoding(p);
    void *args[] = {&p->features, &p->weights, &p->y, &p->n};
    ex_launch(p->mlp[p->soa], p->mlp_grid, p->block, p->shared, args);
}

/* Both programs call the encoding's forward device function at most: their headers leave
 * out the backward ones, which NVRTC would otherwise parse and compile for nothing. */
static void make_programs(ex_program *fused, ex_program *mlp, const gj_encoding *enc, int warps) {
    ex_program_init(fused, "fused_inference.cu", ex_fused_inference_cu, enc);
    ex_program_passes(fused, GJ_PASS_FORWARD);
    ex_program_kernel(fused, "fused_infer<0>");
    ex_program_define(fused, "EX_WARPS", warps);
    ex_program_init(mlp, "fused_inference.cu", ex_fused_inference_cu, enc);
    ex_program_passes(mlp, GJ_PASS_FORWARD);
    ex_program_kernel(mlp, "mlp_infer<0>");
    ex_program_kernel(mlp, "mlp_infer<1>");
    ex_program_define(mlp, "EX_WARPS", warps);
}

void ex_inference_run(const gj_runtime_info *info, const ex_inference_options *o, ex_inference_result *r) {
    memset(r, 0, sizeof *r);
    gj_encoding *enc = NULL;
    EX_CHECK(gj_encoding_create(ex_ctx, EX_HASHGRID, 3, &enc));
    const int warps = o->warps > 0 ? o->warps : 16;
    ex_program fused_program, mlp_program;
    make_programs(&fused_program, &mlp_program, enc, warps);

    if (!info) { /* no GPU: show that the kernels compile (and, to bench, how long that takes cold) */
        ex_compile_report(&fused_program, "sm_90");
        ex_compile_report(&mlp_program, "sm_90");
        if (o->bench) {
            r->cold_compile_ms = ex_cold_compile_ms(&fused_program, "sm_90");
            printf("fused_infer<0>: %.0f ms to compile for sm_90 with gridjit's disk cache off\n", r->cold_compile_ms);
        }
        ex_program_free(&fused_program);
        ex_program_free(&mlp_program);
        gj_encoding_destroy(enc);
        return;
    }

    pipeline p;
    memset(&p, 0, sizeof p);
    p.n = o->points ? o->points : (1ull << 21);
    EX_CHECK(gj_module_create(ex_ctx, enc, NULL, &p.module));
    gj_network *model = ex_model_create(3, EX_OUT);
    EX_CHECK(gj_network_module_create(ex_ctx, model, &p.model));
    gj_user_module *fused_module = ex_module(&fused_program), *mlp_module = ex_module(&mlp_program);
    p.fused = ex_kernel(fused_module, "fused_infer<0>");
    p.mlp[0] = ex_kernel(mlp_module, "mlp_infer<0>");
    p.mlp[1] = ex_kernel(mlp_module, "mlp_infer<1>");
    p.block = 32u * (uint32_t)warps;
    p.shared = EX_INFER_SHARED(warps);
    const uint64_t tiles = (p.n + 31) / 32, blocks = (tiles + (uint64_t)warps - 1) / (uint64_t)warps;
    p.fused_grid = ex_persistent_grid(p.fused, p.block, p.shared, blocks);
    p.mlp_grid = ex_persistent_grid(p.mlp[0], p.block, p.shared, blocks);
    int static_shared = 0;
    EX_CHECK(gj_kernel_attributes(p.fused, &r->registers, &static_shared));
    r->grid = p.fused_grid;
    r->block = p.block;
    r->shared_bytes = p.shared;

    /* The same points, parameters and weights for both pipelines. Parameters uniform in
     * [-1, 1] (gridjit's initialiser scaled by 10^4), so that the features are far from
     * fp16's subnormal range and the comparison means something. */
    const uint64_t n = p.n, n_params = gj_encoding_n_params(enc);
    float *x_host = malloc(n * 3 * sizeof *x_host);
    float *w_host = malloc(EX_N_WEIGHTS * sizeof *w_host);
    uint16_t *w_half = malloc(EX_N_WEIGHTS * sizeof *w_half);
    uint16_t *y_fused = malloc(n * EX_OUT * 2), *y_unfused = malloc(n * EX_OUT * 2);
    uint16_t *features = malloc(n * EX_IN * 2);
    if (!x_host || !w_host || !w_half || !y_fused || !y_unfused || !features) {
        ex_fail("out of host memory");
    }
    ex_random_uniform(x_host, n * 3, 7);
    ex_init_weights(w_host, w_half, 11);
    p.x = ex_alloc(n * 3 * sizeof(float));
    p.params = ex_alloc(n_params * 2);
    p.weights = ex_alloc(EX_N_WEIGHTS * 2);
    p.features = ex_alloc(n * EX_IN * 2);
    p.y = ex_alloc(n * EX_OUT * 2);
    p.y_model = ex_alloc(n * EX_OUT * sizeof(uint16_t));
    ex_upload(p.x, x_host, n * 3 * sizeof(float));
    ex_upload(p.weights, w_half, EX_N_WEIGHTS * 2);
    gj_init_desc init;
    gj_init_desc_init(&init);
    init.params = p.params;
    init.seed = 1;
    init.scale = 1e4f;
    EX_CHECK(gj_init_params(p.module, NULL, &init));

    run_fused(&p);
    EX_CHECK(gj_stream_synchronize(ex_ctx, NULL));
    ex_download(y_fused, p.y, n * EX_OUT * 2);
    ex_zero(p.y, n * EX_OUT * 2);
    p.soa = 1; /* feature-major first: its outputs must equal the point-major ones */
    run_unfused(&p);
    EX_CHECK(gj_stream_synchronize(ex_ctx, NULL));
    ex_download(y_unfused, p.y, n * EX_OUT * 2);
    uint64_t soa_differ = 0;
    for (uint64_t i = 0; i < n * EX_OUT; ++i) {
        soa_differ += y_unfused[i] != y_fused[i];
    }
    ex_zero(p.y, n * EX_OUT * 2);
    p.soa = 0;
    run_unfused(&p);
    EX_CHECK(gj_stream_synchronize(ex_ctx, NULL));
    ex_download(y_unfused, p.y, n * EX_OUT * 2);
    ex_download(features, p.features, n * EX_IN * 2);

    /* 1. The MLP kernel against the CPU, on a sample of points (catches a wrong fragment
     *    layout at once: the error would be of the order of the outputs). */
    double cpu_diff = 0.0, cpu_scale = 0.0;
    const uint64_t step = n / 4096 ? n / 4096 : 1;
    for (uint64_t i = 0; i < n; i += step) {
        float xin[EX_IN], h1[EX_HID], h2[EX_HID], out[EX_OUT];
        gj_halves_to_floats(features + i * EX_IN, xin, EX_IN);
        ex_mlp_forward_cpu(w_host, xin, h1, h2, out);
        for (int k = 0; k < EX_OUT; ++k) {
            const double got = ex_half_to_float(y_unfused[i * EX_OUT + k]);
            cpu_diff = fmax(cpu_diff, fabs(got - out[k]));
            cpu_scale = fmax(cpu_scale, fabs(out[k]));
        }
    }
    r->cpu_max_abs_diff = cpu_diff;
    /* 2. Fused against unfused, every output. */
    double max_abs = 0.0, max_rel = 0.0, max_y = 0.0;
    uint64_t differing = 0;
    float *fa = malloc(n * EX_OUT * sizeof *fa), *fb = malloc(n * EX_OUT * sizeof *fb);
    if (!fa || !fb) {
        ex_fail("out of host memory");
    }
    gj_halves_to_floats(y_fused, fa, n * EX_OUT);
    gj_halves_to_floats(y_unfused, fb, n * EX_OUT);
    for (uint64_t i = 0; i < n * EX_OUT; ++i) {
        max_y = fmax(max_y, fabs(fb[i]));
    }
    for (uint64_t i = 0; i < n * EX_OUT; ++i) {
        const double d = fabs((double)fa[i] - fb[i]);
        differing += y_fused[i] != y_unfused[i];
        max_abs = fmax(max_abs, d);
        max_rel = fmax(max_rel, d / fmax(fabs(fb[i]), 1e-2 * max_y));
    }
    /* 3. The module against the fused kernel, every output: the same weights, parameters and
     *    points, so the same numbers up to the order of the fp32 sums inside the mma tiles. */
    run_model(&p);
    EX_CHECK(gj_stream_synchronize(ex_ctx, NULL));
    uint16_t *halves = malloc(n * EX_OUT * sizeof *halves);
    if (!halves) {
        ex_fail("out of host memory");
    }
    ex_download(halves, p.y_model, n * EX_OUT * sizeof *halves);
    gj_halves_to_floats(halves, fb, n * EX_OUT);
    free(halves);
    double model_rel = 0.0;
    for (uint64_t i = 0; i < n * EX_OUT; ++i) {
        model_rel = fmax(model_rel, fabs((double)fb[i] - fa[i]) / fmax(fabs(fa[i]), 1e-2 * max_y));
    }
    r->model_max_rel_diff = model_rel;
    free(fa);
    free(fb);
    r->max_abs_diff = max_abs;
    r->max_rel_diff = max_rel;
    r->max_abs_output = max_y;
    if (o->verbose) {
        printf("MLP kernel vs CPU (%llu points): max |diff| %.3g (outputs up to %.3g)\n",
               (unsigned long long)((n + step - 1) / step), cpu_diff, cpu_scale);
        printf("fused vs unfused (%llu points x 16 outputs): max |diff| %.3g, max relative %.3g, %llu outputs differ "
               "(%llu with feature-major features)\n",
               (unsigned long long)n, max_abs, max_rel, (unsigned long long)differing, (unsigned long long)soa_differ);
        printf("network module vs fused (%llu points x 16 outputs): max relative %.3g\n", (unsigned long long)n,
               model_rel);
    }
    /* fp16 outputs carry 11 significant bits; an error of the fragment layout shows up as
     * differences of the order of the outputs themselves. */
    if (!(cpu_diff <= 1e-2 * cpu_scale + 1e-4)) {
        ex_fail("the MLP kernel disagrees with the CPU: max |diff| %g for outputs up to %g", cpu_diff, cpu_scale);
    }
    if (!(max_rel <= 1e-2)) {
        ex_fail("fused and unfused outputs disagree: max |diff| %g, max relative %g", max_abs, max_rel);
    }
    if (!(model_rel <= 1e-2)) {
        ex_fail("the network module's outputs disagree with the fused kernel's: max relative %g", model_rel);
    }
    if (soa_differ != differing) { /* the same features in another layout: the same outputs */
        ex_fail("the MLP kernel gives other outputs for feature-major features (%llu vs %llu differ from the fused)",
                (unsigned long long)soa_differ, (unsigned long long)differing);
    }

    if (o->bench) {
        r->fused_ms = ex_time_ms(run_fused, &p, 5, 25);
        r->unfused_ms = ex_time_ms(run_unfused, &p, 5, 25);
        r->encoding_ms = ex_time_ms(run_encoding, &p, 5, 25);
        p.soa = 1;
        r->unfused_soa_ms = ex_time_ms(run_unfused, &p, 5, 25);
        r->encoding_soa_ms = ex_time_ms(run_encoding, &p, 5, 25);
        p.soa = 0;
        r->model_ms = ex_time_ms(run_model, &p, 5, 25);
        r->cold_compile_ms = ex_cold_compile_ms(&fused_program, info->arch);
        r->model_cold_ms = model_cold_ms(model, &p);
    }

    gj_device_free(ex_ctx, p.x);
    gj_device_free(ex_ctx, p.params);
    gj_device_free(ex_ctx, p.weights);
    gj_device_free(ex_ctx, p.features);
    gj_device_free(ex_ctx, p.y);
    gj_device_free(ex_ctx, p.y_model);
    gj_network_module_destroy(p.model);
    gj_network_destroy(model);
    free(x_host);
    free(w_host);
    free(w_half);
    free(y_fused);
    free(y_unfused);
    free(features);
    gj_user_module_destroy(fused_module);
    gj_user_module_destroy(mlp_module);
    gj_module_destroy(p.module);
    ex_program_free(&fused_program);
    ex_program_free(&mlp_program);
    gj_encoding_destroy(enc);
}
