/*
 * gridjit eval and gridjit bench on a device, end to end through the CLI binary: eval's
 * output files against the CPU reference (tolerances: tests/support/gpu_bounds.h), a
 * model's and a network's against the references chained (the measure and tolerances of
 * tests/test_gpu_network.c), bench's JSON. Skipped without a device or without the CLI.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridjit.h"
#include "cpu_reference.h"
#include "gpu_bounds.h"
#include "gpu_harness.h"
#include "mlp_reference.h"
#include "run_cli.h"

static void need_gpu_and_cli(void) {
    if (!gj_gpu_available(NULL)) {
        skip();
    }
    if (!gj_test_cli_path()) {
        printf("SKIPPED: GRIDJIT_CLI is not set\n");
        skip();
    }
}

static char *join(const char *dir, const char *name) {
    const size_t size = strlen(dir) + strlen(name) + 2;
    char *path = malloc(size);
    assert_non_null(path);
    snprintf(path, size, "%s/%s", dir, name);
    return path;
}

static void write_floats(const char *dir, const char *name, const float *values, size_t count) {
    char *path = join(dir, name);
    assert_int_equal(gj_test_write_file(path, (const char *)values, count * sizeof(float)), 0);
    free(path);
}

/* Reads DIR/NAME, which must hold exactly count floats, as doubles. */
static double *read_floats(const char *dir, const char *name, size_t count) {
    char *path = join(dir, name);
    size_t size = 0;
    char *data = gj_test_read_file(path, &size);
    if (!data) {
        fail_msg("%s was not written", path);
    }
    assert_int_equal(size, count * sizeof(float));
    double *values = malloc(count * sizeof(double) + 1);
    assert_non_null(values);
    for (size_t i = 0; i < count; ++i) {
        float f;
        memcpy(&f, data + i * sizeof(float), sizeof f);
        values[i] = f;
    }
    free(data);
    free(path);
    return values;
}

static size_t failures;

static void expect_all(const char *what, const double *got, const double *ref, const double *tol, size_t count) {
    for (size_t i = 0; i < count; ++i) {
        if (!(fabs(got[i] - ref[i]) <= tol[i])) {
            if (failures < 10) {
                printf("  %s[%zu]: eval %.9g, reference %.9g (tolerance %.3g)\n", what, i, got[i], ref[i], tol[i]);
            }
            ++failures;
        }
    }
}

typedef struct eval_case {
    const char *name, *json;
    uint32_t D;
    int with_h;
    float max_level; /* < 0: a file of per-point values */
} eval_case;

static void run_eval_case(const eval_case *ec) {
    gj_context *ctx = NULL;
    gj_encoding *enc = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    assert_int_equal(gj_encoding_create(ctx, ec->json, ec->D, &enc), GJ_OK);
    gj_ref_encoding ref;
    gj_ref_from_encoding(&ref, enc);
    const gj_precision pr = gj_encoding_precision(enc);
    const int fp16 = pr == GJ_PRECISION_FP16;
    const uint32_t D = ec->D, n_out = gj_encoding_n_output_dims(enc);
    const uint64_t n = 777, n_params = gj_encoding_n_params(enc);

    /* Inputs as written to the files (float32), and as eval uses them (rounded to the precision). */
    float *x = malloc(n * D * sizeof(float)), *w = malloc(n_params * sizeof(float));
    float *g = malloc(n * n_out * sizeof(float)), *h = malloc(n * D * sizeof(float)), *m = malloc(n * sizeof(float));
    double *wd = malloc(n_params * sizeof(double)), *gd = malloc(n * n_out * sizeof(double));
    double *hd = malloc(n * D * sizeof(double));
    assert_true(x && w && g && h && m && wd && gd && hd);
    gj_gpu_rng rng = {0xE7A1ull + D};
    for (uint64_t k = 0; k < n * D; ++k) {
        x[k] = gj_gpu_rng_float(&rng, 0.0f, 1.0f);
        h[k] = gj_gpu_rng_float(&rng, -1.0f, 1.0f);
        hd[k] = h[k];
    }
    for (uint64_t p = 0; p < n_params; ++p) {
        w[p] = gj_gpu_rng_float(&rng, -1.0f, 1.0f);
        wd[p] = gj_gpu_round(w[p], pr);
    }
    for (uint64_t k = 0; k < n * n_out; ++k) {
        g[k] = gj_gpu_rng_float(&rng, -1.0f, 1.0f);
        gd[k] = gj_gpu_round(g[k], pr);
    }
    for (uint64_t i = 0; i < n; ++i) {
        m[i] = gj_gpu_rng_float(&rng, 0.0f, 1.0f);
    }
    char *dir = gj_test_scratch_dir(ec->name);
    assert_non_null(dir);
    write_floats(dir, "p.f32", x, n * D);
    write_floats(dir, "w.f32", w, n_params);
    write_floats(dir, "g.f32", g, n * n_out);
    write_floats(dir, "h.f32", h, n * D);
    write_floats(dir, "m.f32", m, n);
    char *out = join(dir, "out");
    char dims[16], level[32];
    snprintf(dims, sizeof dims, "%u", D);
    snprintf(level, sizeof level, "%.9g", (double)ec->max_level);
    const char *args[24] = {"eval", "--config", ec->json, "--dims", dims, "--points", "p.f32", "--params", "w.f32",
                            "--dl-dy", "g.f32", "--out-dir", out, "--max-level", ec->max_level < 0 ? "m.f32" : level};
    size_t n_args = 15;
    if (ec->with_h) {
        args[n_args++] = "--dl-ddldx";
        args[n_args++] = "h.f32";
    }
    args[n_args] = NULL;
    gj_cli_result result;
    assert_int_equal(gj_test_run_cli(dir, args, &result), 0);
    if (result.status != 0) {
        fail_msg("gridjit eval exited %d: %s", result.status, result.err);
    }
    gj_cli_result_free(&result);

    /* The reference. */
    const float *ml = ec->max_level < 0 ? m : NULL;
    double *y_ref = calloc(n * n_out, sizeof(double)), *dx_ref = calloc(n * D, sizeof(double));
    double *dp_ref = calloc(n_params, sizeof(double)), *bbp_ref = calloc(n_params, sizeof(double));
    double *bby_ref = calloc(n * n_out, sizeof(double)), *bbx_ref = calloc(n * D, sizeof(double));
    assert_true(y_ref && dx_ref && dp_ref && bbp_ref && bby_ref && bbx_ref);
    for (uint64_t i = 0; i < n; ++i) {
        const double mi = ml ? (double)ml[i] : (double)ec->max_level;
        gj_ref_forward(&ref, wd, x + i * D, mi, y_ref + i * n_out);
        gj_ref_backward(&ref, wd, x + i * D, mi, i, n, gd + i * n_out, dp_ref, dx_ref + i * D);
        gj_ref_backward_backward(&ref, wd, x + i * D, mi, hd + i * D, gd + i * n_out, bbp_ref, bby_ref + i * n_out,
                                 bbx_ref + i * D);
    }
    gj_bounds b;
    gj_bounds_measure(&b, &ref, n, x, wd, gd, hd, ml, ec->max_level);
    double *tol = malloc((n * (n_out + D) + n_params) * sizeof(double));
    assert_non_null(tol);
    failures = 0;

    double *y = read_floats(out, "y.f32", n * n_out);
    for (uint64_t i = 0; i < n; ++i) {
        for (uint32_t k = 0; k < n_out; ++k) {
            tol[i * n_out + k] = gj_bound_y(&b, i, k) + gj_bound_half(fp16, y_ref[i * n_out + k]);
        }
    }
    expect_all("y", y, y_ref, tol, n * n_out);
    double *dx = read_floats(out, "dx.f32", n * D);
    for (uint64_t i = 0; i < n * D; ++i) {
        tol[i] = gj_bound_dx(&b, i / D);
    }
    expect_all("dx", dx, dx_ref, tol, n * D);
    double *dp = read_floats(out, "dparams.f32", n_params);
    for (uint64_t p = 0; p < n_params; ++p) {
        tol[p] = gj_bound_dparams(&b, p, 0, 0.0, fp16, dp_ref[p]);
    }
    expect_all("dparams", dp, dp_ref, tol, n_params);
    free(y);
    free(dx);
    free(dp);
    if (ec->with_h) {
        double *bbp = read_floats(out, "bb_dparams.f32", n_params);
        for (uint64_t p = 0; p < n_params; ++p) {
            tol[p] = gj_bound_dparams(&b, p, 1, 0.0, fp16, bbp_ref[p]);
        }
        expect_all("bb_dparams", bbp, bbp_ref, tol, n_params);
        double *bby = read_floats(out, "bb_ddldy.f32", n * n_out);
        for (uint64_t i = 0; i < n; ++i) {
            for (uint32_t k = 0; k < n_out; ++k) {
                tol[i * n_out + k] = gj_bound_bb_ddldy(&b, i, k) + gj_bound_half(fp16, bby_ref[i * n_out + k]);
            }
        }
        expect_all("bb_ddldy", bby, bby_ref, tol, n * n_out);
        double *bbx = read_floats(out, "bb_dx.f32", n * D);
        for (uint64_t i = 0; i < n * D; ++i) {
            tol[i] = gj_bound_bb_dx(&b, i / D);
        }
        expect_all("bb_dx", bbx, bbx_ref, tol, n * D);
        free(bbp);
        free(bby);
        free(bbx);
    } else {
        char *bb = join(out, "bb_dx.f32");
        size_t size;
        char *data = gj_test_read_file(bb, &size);
        assert_null(data); /* without --dl-ddldx there is no backward-of-backward output */
        free(bb);
    }
    gj_bounds_free(&b);
    free(tol);
    free(y_ref);
    free(dx_ref);
    free(dp_ref);
    free(bbp_ref);
    free(bby_ref);
    free(bbx_ref);
    free(x);
    free(w);
    free(g);
    free(h);
    free(m);
    free(wd);
    free(gd);
    free(hd);
    free(out);
    free(dir);
    gj_encoding_destroy(enc);
    gj_context_destroy(ctx);
    if (failures) {
        fail_msg("%s: %zu values outside the tolerance", ec->name, failures);
    }
}

static void eval_fp32_all_outputs(void **state) {
    (void)state;
    need_gpu_and_cli();
    const eval_case ec = {"eval_fp32",
                          "{\"otype\": \"HashGrid\", \"n_levels\": 5, \"n_features_per_level\": 2, "
                          "\"log2_hashmap_size\": 10, \"base_resolution\": 4, \"interpolation\": \"Smoothstep\", "
                          "\"precision\": \"fp32\"}",
                          2, 1, -1.0f};
    run_eval_case(&ec);
}

static void eval_fp16_f1(void **state) {
    (void)state;
    need_gpu_and_cli();
    const eval_case ec = {"eval_fp16",
                          "{\"otype\": \"HashGrid\", \"n_levels\": 6, \"n_features_per_level\": 1, "
                          "\"log2_hashmap_size\": 12, \"base_resolution\": 8, \"precision\": \"fp16\"}",
                          3, 0, 0.7f};
    run_eval_case(&ec);
}

/* A network's or model's eval: the files written as eval's help says, their values against the
 * reference encoding (a model's features rounded to fp16, as the kernels take them) and MLP (h
 * in fp16 between layers, on the fp16 weights), with and without --dl-dy. */
typedef struct eval_net_case {
    const char *name, *json;
    uint32_t dims; /* a model's encoding dimensions, a network's inputs */
    uint32_t outputs;
} eval_net_case;

static double *net_file(const char *dir, const char *name, size_t count) {
    char *out = join(dir, "out");
    double *v = read_floats(out, name, count);
    free(out);
    return v;
}

static void run_eval_net_case(const eval_net_case *ec) {
    gj_context *ctx = NULL;
    gj_network *net = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    char outputs[16], dims[16];
    snprintf(outputs, sizeof outputs, "%u", ec->outputs);
    snprintf(dims, sizeof dims, "%u", ec->dims);
    assert_int_equal(gj_network_create(ctx, ec->json, ec->dims, ec->outputs, &net), GJ_OK);
    const gj_encoding *enc = gj_network_encoding(net);
    const gj_precision ep = enc ? gj_encoding_precision(enc) : GJ_PRECISION_FP32;
    const uint64_t n = 777, n_mlp = gj_network_n_mlp_params(net), n_params = gj_network_n_params(net);
    const uint32_t in = ec->dims, out = gj_network_n_output_dims(net), feats = gj_network_input_width(net);
    gj_ref_mlp mref;
    gj_ref_mlp_from_network(&mref, net);
    mref.fp16_hidden = true;
    gj_ref_encoding eref;
    if (enc) {
        gj_ref_from_encoding(&eref, enc);
    }

    /* The parameters: tiny-cuda-nn's initialisation for the weights, the encoding's of order 1. */
    float *w = malloc(n_params * sizeof *w), *x = malloc(n * in * sizeof *x), *g = malloc(n * out * sizeof *g);
    double *wd = malloc(n_params * sizeof *wd);
    assert_true(w && x && g && wd);
    gj_ref_pcg32 pcg;
    gj_ref_pcg32_seed(&pcg, 7, 1);
    gj_ref_mlp_init_params(&mref, &pcg, 1.0f, w);
    gj_gpu_rng rng = {0xE7A1ull + n_params};
    for (uint64_t p = 0; p < n_params; ++p) {
        if (p >= n_mlp) {
            w[p] = gj_gpu_rng_float(&rng, -1.0f, 1.0f);
        }
        wd[p] = gj_gpu_round(w[p], p < n_mlp ? GJ_PRECISION_FP16 : ep);
    }
    for (uint64_t k = 0; k < n * in; ++k) {
        x[k] = enc ? gj_gpu_rng_float(&rng, 0.0f, 1.0f) : (float)gj_gpu_round(gj_gpu_rng_float(&rng, -1.0f, 1.0f),
                                                                                 GJ_PRECISION_FP16);
    }
    for (uint64_t k = 0; k < n * out; ++k) {
        g[k] = gj_gpu_rng_float(&rng, -1.0f, 1.0f);
    }
    char *dir = gj_test_scratch_dir(ec->name);
    assert_non_null(dir);
    write_floats(dir, "p.f32", x, n * in);
    write_floats(dir, "w.f32", w, n_params);
    write_floats(dir, "g.f32", g, n * out);
    char *out_dir = join(dir, "out");
    const char *args[] = {"eval", "--config", ec->json, "--dims", dims, "--output-dims", outputs, "--points", "p.f32",
                          "--params", "w.f32", "--out-dir", out_dir, "--dl-dy", "g.f32", NULL};
    gj_cli_result result;
    assert_int_equal(gj_test_run_cli(dir, args, &result), 0);
    if (result.status != 0) {
        fail_msg("gridjit eval exited %d: %s", result.status, result.err);
    }
    gj_cli_result_free(&result);
    double *y = net_file(dir, "y.f32", n * out), *dp = net_file(dir, "dparams.f32", n_params);
    double *dx = net_file(dir, "dx.f32", n * in);
    /* Without dL/dy: the inference kernel, y alone. */
    char *inference_dir = join(dir, "inference"); /* eval makes it */
    args[12] = inference_dir;
    args[13] = NULL;
    assert_int_equal(gj_test_run_cli(dir, args, &result), 0);
    if (result.status != 0) {
        fail_msg("gridjit eval (inference) exited %d: %s", result.status, result.err);
    }
    gj_cli_result_free(&result);
    double *yi = read_floats(inference_dir, "y.f32", n * out);
    char *no_grad = join(inference_dir, "dparams.f32");
    size_t size = 0;
    char *data = gj_test_read_file(no_grad, &size);
    assert_null(data); /* without --dl-dy there are no gradients */

    /* The references chained. */
    double *y_ref = calloc(n * out, sizeof *y_ref), *dp_ref = calloc(n_params, sizeof *dp_ref);
    double *dx_ref = calloc(n * in, sizeof *dx_ref);
    assert_true(y_ref && dp_ref && dx_ref);
    double f[GJ_NETWORK_MAX_INPUT_DIMS], yo[GJ_NETWORK_MAX_OUTPUT_DIMS + 15], dyo[GJ_NETWORK_MAX_OUTPUT_DIMS + 15] = {0},
           df[GJ_NETWORK_MAX_INPUT_DIMS], dxi[GJ_REF_MAX_DIMS];
    for (uint64_t i = 0; i < n; ++i) {
        if (enc) {
            gj_ref_forward(&eref, wd + n_mlp, x + i * in, 1.0, f);
            for (uint32_t k = 0; k < feats; ++k) {
                f[k] = gj_gpu_round(f[k], GJ_PRECISION_FP16);
            }
        } else {
            for (uint32_t k = 0; k < in; ++k) {
                f[k] = x[i * in + k];
            }
        }
        gj_ref_mlp_forward(&mref, wd, f, yo);
        for (uint32_t c = 0; c < out; ++c) {
            y_ref[i * out + c] = yo[c];
            dyo[c] = g[i * out + c];
        }
        gj_ref_mlp_backward(&mref, wd, f, dyo, dp_ref, enc ? df : dx_ref + i * in);
        if (enc) {
            gj_ref_backward(&eref, wd + n_mlp, x + i * in, 1.0, i, n, df, dp_ref + n_mlp, dxi);
            for (uint32_t d = 0; d < in; ++d) {
                dx_ref[i * in + d] = dxi[d];
            }
        }
    }
    const double e_y = gj_gpu_rel_error(y, y_ref, n * out, 1e-3), e_yi = gj_gpu_rel_error(yi, y_ref, n * out, 1e-3);
    const double e_dw = gj_gpu_rel_error(dp, dp_ref, n_mlp, 1e-3);
    const double e_de = gj_gpu_rel_error(dp + n_mlp, dp_ref + n_mlp, n_params - n_mlp, 1e-3);
    const double e_dx = gj_gpu_rel_error(dx, dx_ref, n * in, 1e-3);
    const double tol_de = ep == GJ_PRECISION_FP16 ? 5e-2 : 3e-2, tol_dx = enc ? 3e-2 : 2e-2;
    const int ok = e_y <= 1e-2 && e_yi <= 1e-2 && e_dw <= 2e-2 && e_de <= tol_de && e_dx <= tol_dx;
    printf("%s eval %s: y %.2e (inference %.2e), network dL/dparams %.2e, encoding dL/dparams %.2e, dL/dx %.2e "
           "(tolerances 1e-2, 2e-2, %.0e, %.0e)\n",
           ok ? "PASS" : "FAIL", ec->name, e_y, e_yi, e_dw, e_de, e_dx, tol_de, tol_dx);
    free(no_grad), free(inference_dir), free(yi), free(y), free(dp), free(dx), free(y_ref), free(dp_ref);
    free(dx_ref), free(w), free(x), free(g), free(wd), free(out_dir), free(dir);
    gj_network_destroy(net);
    gj_context_destroy(ctx);
    if (!ok) {
        fail_msg("%s: outside the tolerances (the line above)", ec->name);
    }
}

static void eval_model(void **state) {
    (void)state;
    need_gpu_and_cli();
    const eval_net_case ec = {"eval_model",
                              "{\"encoding\": {\"otype\": \"HashGrid\", \"n_levels\": 4, \"log2_hashmap_size\": 10, "
                              "\"base_resolution\": 4}, \"network\": {\"otype\": \"FullyFusedMLP\", \"n_neurons\": 32, "
                              "\"n_hidden_layers\": 2, \"activation\": \"ReLU\", \"output_activation\": \"None\"}}",
                              3, 3};
    run_eval_net_case(&ec);
}

static void eval_network(void **state) {
    (void)state;
    need_gpu_and_cli();
    const eval_net_case ec = {"eval_network",
                              "{\"otype\": \"CutlassMLP\", \"n_neurons\": 16, \"n_hidden_layers\": 1, "
                              "\"activation\": \"Tanh\", \"output_activation\": \"Sigmoid\"}",
                              5, 2};
    run_eval_net_case(&ec);
}

static void bench_json(void **state) {
    (void)state;
    need_gpu_and_cli();
    const char *args[] = {"bench", "--config",
                          "{\"otype\": \"HashGrid\", \"n_levels\": 8, \"log2_hashmap_size\": 16}", "--points", "100000",
                          "--iterations", "20", "--json", NULL};
    gj_cli_result result;
    assert_int_equal(gj_test_run_cli(NULL, args, &result), 0);
    if (result.status != 0) {
        fail_msg("gridjit bench exited %d: %s", result.status, result.err);
    }
    cJSON *root = cJSON_Parse(result.out);
    if (!root) {
        fail_msg("not JSON: %s", result.out);
    }
    assert_true(cJSON_IsObject(cJSON_GetObjectItem(root, "config")));
    assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(root, "n_points")), 100000);
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(root, "compile_ms")) > 0.0);
    const cJSON *passes = cJSON_GetObjectItem(root, "passes");
    static const char *const names[] = {"forward", "forward_dydx", "backward", "backward_input", "step"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
        const cJSON *pass = cJSON_GetObjectItem(passes, names[i]);
        assert_non_null(pass);
        const double ms = cJSON_GetNumberValue(cJSON_GetObjectItem(pass, "median_ms"));
        const double rate = cJSON_GetNumberValue(cJSON_GetObjectItem(pass, "points_per_s"));
        assert_true(ms > 0.0 && ms < 1000.0);
        assert_true(fabs(rate * ms * 1e-3 / 100000.0 - 1.0) < 1e-2); /* both printed rounded */
    }
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(root, "dx_from")), "dydx");
    cJSON_Delete(root);
    gj_cli_result_free(&result);

    /* --dx-from params: the gradient kernels compute dL/dx themselves; compact: from the
     * forward's compact dy/dx. */
    const char *compact_args[] = {"bench", "--config",
                                  "{\"otype\": \"HashGrid\", \"n_levels\": 8, \"log2_hashmap_size\": 16}", "--points",
                                  "100000", "--iterations", "20", "--pass", "backward_input,step", "--dx-from",
                                  "compact", "--json", NULL};
    assert_int_equal(gj_test_run_cli(NULL, compact_args, &result), 0);
    if (result.status != 0) {
        fail_msg("gridjit bench --dx-from compact exited %d: %s", result.status, result.err);
    }
    root = cJSON_Parse(result.out);
    assert_non_null(root);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(root, "dx_from")), "compact");
    cJSON_Delete(root);
    gj_cli_result_free(&result);

    const char *params_args[] = {"bench", "--config",
                                 "{\"otype\": \"HashGrid\", \"n_levels\": 8, \"log2_hashmap_size\": 16}", "--points",
                                 "100000", "--iterations", "20", "--pass", "backward_input,step", "--dx-from", "params",
                                 "--json", NULL};
    assert_int_equal(gj_test_run_cli(NULL, params_args, &result), 0);
    if (result.status != 0) {
        fail_msg("gridjit bench --dx-from params exited %d: %s", result.status, result.err);
    }
    root = cJSON_Parse(result.out);
    assert_non_null(root);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(root, "dx_from")), "params");
    passes = cJSON_GetObjectItem(root, "passes");
    assert_non_null(cJSON_GetObjectItem(passes, "step"));
    assert_null(cJSON_GetObjectItem(passes, "forward"));
    cJSON_Delete(root);
    gj_cli_result_free(&result);
}

int main(void) {
    if (!gj_gpu_available(NULL)) {
        return GJ_TEST_SKIP_ALL; /* ctest reports the binary as skipped; the reason is printed above */
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(eval_fp32_all_outputs),
        cmocka_unit_test(eval_fp16_f1),
        cmocka_unit_test(eval_model),
        cmocka_unit_test(eval_network),
        cmocka_unit_test(bench_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
