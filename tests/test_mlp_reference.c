/* The CPU reference MLP (tools/reference/mlp_reference.c, docs/networks.md §3-§5):
 * tiny-cuda-nn's activations and their derivatives, gradients against finite differences for
 * every activation and every width, padding as tiny-cuda-nn's, its shape against the
 * library's layout, and tiny-cuda-nn's initialisation rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridjit.h"
#include "mlp_reference.h"

static const gj_activation all_activations[] = {
    GJ_ACTIVATION_NONE,    GJ_ACTIVATION_RELU,       GJ_ACTIVATION_LEAKY_RELU, GJ_ACTIVATION_EXPONENTIAL,
    GJ_ACTIVATION_SINE,    GJ_ACTIVATION_SIGMOID,    GJ_ACTIVATION_SQUAREPLUS, GJ_ACTIVATION_SOFTPLUS,
    GJ_ACTIVATION_TANH,    GJ_ACTIVATION_SILU,
};
#define N_ACTIVATIONS (sizeof all_activations / sizeof all_activations[0])
static const uint32_t all_widths[] = {16, 32, 64, 128};

/* xorshift64*: test data that is the same on every run. */
static double uniform(uint64_t *s, double lo, double hi) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    const uint64_t r = *s * 2685821657736338717ull;
    return lo + (hi - lo) * (double)(r >> 11) / 9007199254740992.0;
}

static void close_enough(double analytic, double numeric, double tol, const char *what) {
    if (!(fabs(analytic - numeric) <= tol * (1.0 + fabs(numeric)))) {
        fail_msg("%s: analytic %.12g, finite difference %.12g", what, analytic, numeric);
    }
}

/* ------------------------------------------------------------- activations */

/* Values worked out by hand from tiny-cuda-nn's formulas (common_device.h, K_ACT = 10). */
static void activations_are_tcnn_s(void **state) {
    (void)state;
    assert_true(gj_ref_activation(GJ_ACTIVATION_NONE, -1.5) == -1.5);
    assert_true(gj_ref_activation(GJ_ACTIVATION_RELU, -1.0) == 0.0);
    assert_true(gj_ref_activation(GJ_ACTIVATION_RELU, 2.0) == 2.0);
    assert_true(gj_ref_activation(GJ_ACTIVATION_LEAKY_RELU, -1.0) == -0.01); /* x * 0.01 below 0 */
    assert_true(gj_ref_activation(GJ_ACTIVATION_LEAKY_RELU, 3.0) == 3.0);
    assert_true(gj_ref_activation(GJ_ACTIVATION_EXPONENTIAL, 0.0) == 1.0);
    assert_true(fabs(gj_ref_activation(GJ_ACTIVATION_SINE, M_PI / 2) - 1.0) < 1e-15); /* no frequency factor */
    assert_true(gj_ref_activation(GJ_ACTIVATION_SIGMOID, 0.0) == 0.5);
    /* Squareplus(0) = 0.5 * (0 + sqrt(0 + 4)) / 10 = 0.1; Softplus(0) = log(e^0 + 1) / 10. */
    assert_true(fabs(gj_ref_activation(GJ_ACTIVATION_SQUAREPLUS, 0.0) - 0.1) < 1e-15);
    assert_true(fabs(gj_ref_activation(GJ_ACTIVATION_SOFTPLUS, 0.0) - log(2.0) / 10.0) < 1e-15);
    /* Both approach ReLU away from the knee: Squareplus(1) = (10 + sqrt(104)) / 20. */
    assert_true(fabs(gj_ref_activation(GJ_ACTIVATION_SQUAREPLUS, 1.0) - 1.00990195135927845) < 1e-15);
    assert_true(fabs(gj_ref_activation(GJ_ACTIVATION_SOFTPLUS, 1.0) - 1.0) < 1e-5);
    assert_true(gj_ref_activation(GJ_ACTIVATION_SOFTPLUS, -3.0) > 0.0);
    /* Where tiny-cuda-nn's float log(exp(10x) + 1) overflows, the reference stays finite. */
    assert_true(fabs(gj_ref_activation(GJ_ACTIVATION_SOFTPLUS, 100.0) - 100.0) < 1e-12);
    assert_true(gj_ref_activation(GJ_ACTIVATION_TANH, 0.0) == 0.0);
    assert_true(gj_ref_activation(GJ_ACTIVATION_SILU, 0.0) == 0.0);
    assert_true(fabs(gj_ref_activation(GJ_ACTIVATION_SILU, 2.0) - 2.0 / (1.0 + exp(-2.0))) < 1e-15);
}

static void activation_derivatives_by_finite_differences(void **state) {
    (void)state;
    const double xs[] = {-2.3, -0.7, -0.05, 0.03, 0.4, 1.9};
    for (size_t a = 0; a < N_ACTIVATIONS; a++) {
        for (size_t k = 0; k < sizeof xs / sizeof xs[0]; k++) {
            const gj_activation act = all_activations[a];
            const double h = 1e-6;
            const double numeric =
                (gj_ref_activation(act, xs[k] + h) - gj_ref_activation(act, xs[k] - h)) / (2 * h);
            char what[64];
            snprintf(what, sizeof what, "activation %d at %g", (int)act, xs[k]);
            close_enough(gj_ref_activation_derivative(act, xs[k]), numeric, 1e-8, what);
        }
    }
}

/* tiny-cuda-nn's fused kernels take the derivative from the activation's output y
 * (warp_activation_backward, common_device.h): for every invertible activation that form
 * must equal the derivative at the pre-activation, which is what the reference uses. */
static double tcnn_derivative_from_output(gj_activation act, double y) {
    switch (act) {
    case GJ_ACTIVATION_RELU: return y > 0.0 ? 1.0 : 0.0;
    case GJ_ACTIVATION_LEAKY_RELU: return y > 0.0 ? 1.0 : 0.01;
    case GJ_ACTIVATION_EXPONENTIAL: return y;
    case GJ_ACTIVATION_SIGMOID: return y * (1.0 - y);
    case GJ_ACTIVATION_SQUAREPLUS: {
        const double yk = y * 10.0;
        return yk * yk / (yk * yk + 1.0);
    }
    case GJ_ACTIVATION_SOFTPLUS: return 1.0 - exp(-y * 10.0);
    case GJ_ACTIVATION_TANH: return 1.0 - y * y;
    default: return 1.0;
    }
}

static void derivatives_agree_with_tcnn_s_output_form(void **state) {
    (void)state;
    const gj_activation invertible[] = {GJ_ACTIVATION_NONE,    GJ_ACTIVATION_RELU,       GJ_ACTIVATION_LEAKY_RELU,
                                        GJ_ACTIVATION_EXPONENTIAL, GJ_ACTIVATION_SIGMOID, GJ_ACTIVATION_SQUAREPLUS,
                                        GJ_ACTIVATION_SOFTPLUS, GJ_ACTIVATION_TANH};
    for (size_t a = 0; a < sizeof invertible / sizeof invertible[0]; a++) {
        for (double x = -2.95; x < 3.0; x += 0.1) {
            const gj_activation act = invertible[a];
            const double from_output = tcnn_derivative_from_output(act, gj_ref_activation(act, x));
            char what[64];
            snprintf(what, sizeof what, "activation %d at %g", (int)act, x);
            close_enough(gj_ref_activation_derivative(act, x), from_output, 1e-12, what);
        }
    }
}

/* ------------------------------------------------------------------ shapes */

static void shape_matches_the_library_layout(void **state) {
    (void)state;
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    const char *configs[] = {
        "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64, \"n_hidden_layers\": 2, \"activation\": \"Sine\"}",
        "{\"otype\": \"CutlassMLP\", \"n_neurons\": 16, \"n_hidden_layers\": 0}",
        "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 128, \"n_hidden_layers\": 7, \"output_activation\": \"Tanh\"}",
        "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 32, \"n_hidden_layers\": 1}",
    };
    const uint32_t ins[] = {3, 16, 33, 200}, outs[] = {1, 16, 17, 1000};
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        gj_network *net = NULL;
        assert_int_equal(gj_network_create(ctx, configs[c], ins[c], outs[c], &net), GJ_OK);
        gj_ref_mlp from_library, from_rules;
        gj_ref_mlp_from_network(&from_library, net);
        assert_true(gj_ref_mlp_make(&from_rules, ins[c], gj_network_n_neurons(net), gj_network_n_hidden_layers(net),
                                    outs[c], gj_network_activation(net), gj_network_output_activation(net), 1.0));
        assert_memory_equal(&from_library, &from_rules, sizeof from_rules);
        gj_network_destroy(net);
    }
    /* Behind an encoding the padding is 0 and the input the encoding's output. */
    gj_network *net = NULL;
    assert_int_equal(gj_network_create(ctx, "{\"encoding\": {\"n_levels\": 5}, \"network\": {\"n_neurons\": 16}}", 3, 2,
                                       &net),
                     GJ_OK);
    gj_ref_mlp ref;
    gj_ref_mlp_from_network(&ref, net);
    assert_int_equal(ref.input_width, 10);
    assert_int_equal(ref.padded_input_width, 16);
    assert_true(ref.input_padding == 0.0);
    gj_network_destroy(net);
    gj_context_destroy(ctx);
    /* Out of range. */
    assert_false(gj_ref_mlp_make(&ref, 0, 16, 1, 1, GJ_ACTIVATION_RELU, GJ_ACTIVATION_NONE, 0.0));
    assert_false(gj_ref_mlp_make(&ref, 3, 16, 1, GJ_NETWORK_MAX_OUTPUT_DIMS + 1, GJ_ACTIVATION_RELU, GJ_ACTIVATION_NONE, 0.0));
}

/* ---------------------------------------------------------------- gradients */

typedef struct net_case {
    gj_ref_mlp ref;
    double *params;
    double x[3][40];
    double dL_dy[GJ_NETWORK_MAX_OUTPUT_DIMS + 15];
} net_case;

/* A network with tiny-cuda-nn's initial parameters (in double), 3 points in [-1, 1]^in, and a
 * loss L = sum_k c_k y_k over the real outputs (the padding entries of dL/dy are NaN: the
 * reference must not read them). Exponential hidden layers get a quarter of the usual scale:
 * with the full Xavier bound, exp of exp reaches 1e35 at 32 neurons, where finite differences
 * mean nothing. */
static void make_case(net_case *nc, uint32_t in, uint32_t width, uint32_t hidden, uint32_t out, gj_activation act,
                      gj_activation out_act, double padding, uint64_t seed) {
    assert_true(in <= 40);
    assert_true(gj_ref_mlp_make(&nc->ref, in, width, hidden, out, act, out_act, padding));
    float *pf = malloc(nc->ref.n_params * sizeof *pf);
    nc->params = malloc(nc->ref.n_params * sizeof *nc->params);
    assert_non_null(pf);
    assert_non_null(nc->params);
    gj_ref_pcg32 rng;
    gj_ref_pcg32_seed(&rng, seed, 1u);
    gj_ref_mlp_init_params(&nc->ref, &rng, act == GJ_ACTIVATION_EXPONENTIAL ? 0.25f : 1.0f, pf);
    for (uint64_t i = 0; i < nc->ref.n_params; i++) {
        nc->params[i] = pf[i];
    }
    free(pf);
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int p = 0; p < 3; p++) {
        for (uint32_t i = 0; i < in; i++) {
            nc->x[p][i] = uniform(&s, -1.0, 1.0);
        }
    }
    for (uint32_t k = 0; k < sizeof nc->dL_dy / sizeof nc->dL_dy[0]; k++) {
        nc->dL_dy[k] = k < out ? uniform(&s, -1.0, 1.0) : NAN;
    }
}

static double loss(const net_case *nc, const double *params, int point, const double *x) {
    double y[GJ_NETWORK_MAX_OUTPUT_DIMS + 15];
    gj_ref_mlp_forward(&nc->ref, params, x, y);
    double sum = 0.0;
    for (uint32_t k = 0; k < nc->ref.output_width; k++) {
        sum += nc->dL_dy[k] * y[k];
    }
    (void)point;
    return sum;
}

static double batch_loss(const net_case *nc, const double *params) {
    double sum = 0.0;
    for (int p = 0; p < 3; p++) {
        sum += loss(nc, params, p, nc->x[p]);
    }
    return sum;
}

/* The parameters a check perturbs: per layer the first, middle and last rows and columns (the
 * last column of layer 0 is a padding column where the input is padded, the last row of the
 * output layer a padding output), plus random ones. */
static size_t sample_params(const gj_ref_mlp *ref, uint64_t *s, uint64_t *out, size_t max) {
    size_t n = 0;
    for (uint32_t l = 0; l < ref->n_layers; l++) {
        const gj_ref_mlp_layer *layer = &ref->layers[l];
        const uint32_t rows[] = {0, layer->fan_out / 2, layer->fan_out - 1};
        const uint32_t cols[] = {0, 1, layer->fan_in / 2, layer->fan_in - 1};
        for (int r = 0; r < 3; r++) {
            for (int c = 0; c < 4 && n < max; c++) {
                out[n++] = layer->offset + (uint64_t)rows[r] * layer->fan_in + cols[c];
            }
        }
    }
    while (n < max) {
        out[n++] = (uint64_t)uniform(s, 0.0, (double)ref->n_params) % ref->n_params;
    }
    return n;
}

static void check_gradients(uint32_t in, uint32_t width, uint32_t hidden, uint32_t out, gj_activation act,
                            gj_activation out_act, double padding) {
    static net_case nc;
    const uint64_t seed = 1337u + 31u * (uint64_t)act + width + 1000u * hidden;
    make_case(&nc, in, width, hidden, out, act, out_act, padding, seed);
    const gj_ref_mlp *ref = &nc.ref;
    char what[160];
    double *grad = calloc(ref->n_params, sizeof *grad);
    assert_non_null(grad);
    const double h = 1e-6;
    for (int p = 0; p < 3; p++) {
        double dL_dx[40];
        gj_ref_mlp_backward(ref, nc.params, nc.x[p], nc.dL_dy, grad, dL_dx);
        for (uint32_t i = 0; i < in; i++) {
            double x[40];
            memcpy(x, nc.x[p], sizeof x);
            x[i] = nc.x[p][i] + h;
            const double up = loss(&nc, nc.params, p, x);
            x[i] = nc.x[p][i] - h;
            const double down = loss(&nc, nc.params, p, x);
            snprintf(what, sizeof what, "act %d/%d, %u x %u, point %d: dL/dx[%u]", (int)act, (int)out_act, width,
                     hidden, p, i);
            close_enough(dL_dx[i], (up - down) / (2 * h), 1e-6, what);
        }
    }
    uint64_t s = seed, idx[80];
    const size_t n = sample_params(ref, &s, idx, 80);
    for (size_t k = 0; k < n; k++) {
        const uint64_t j = idx[k];
        const double saved = nc.params[j];
        nc.params[j] = saved + h;
        const double up = batch_loss(&nc, nc.params);
        nc.params[j] = saved - h;
        const double down = batch_loss(&nc, nc.params);
        nc.params[j] = saved;
        snprintf(what, sizeof what, "act %d/%d, %u x %u: dL/dparams[%llu]", (int)act, (int)out_act, width, hidden,
                 (unsigned long long)j);
        close_enough(grad[j], (up - down) / (2 * h), 1e-6, what);
    }
    free(grad);
    free(nc.params);
}

/* Every activation (hidden and output) at every width, on a network alone: 5 inputs padded
 * with ones to 16, 3 outputs padded to 16. */
static void gradients_every_activation_every_width(void **state) {
    (void)state;
    for (size_t a = 0; a < N_ACTIVATIONS; a++) {
        for (size_t w = 0; w < 4; w++) {
            check_gradients(5, all_widths[w], 2, 3, all_activations[a], all_activations[a], 1.0);
            check_gradients(5, all_widths[w], 2, 3, all_activations[a], GJ_ACTIVATION_NONE, 1.0);
        }
    }
}

/* Other depths and widths, padding with zeros as behind a grid. */
static void gradients_other_shapes(void **state) {
    (void)state;
    check_gradients(16, 64, 1, 16, GJ_ACTIVATION_RELU, GJ_ACTIVATION_SIGMOID, 0.0);    /* nothing padded */
    check_gradients(20, 32, 4, 17, GJ_ACTIVATION_TANH, GJ_ACTIVATION_EXPONENTIAL, 0.0);
    check_gradients(7, 16, 0, 2, GJ_ACTIVATION_RELU, GJ_ACTIVATION_SOFTPLUS, 1.0);     /* CutlassMLP, no hidden */
    check_gradients(33, 128, 3, 1, GJ_ACTIVATION_SILU, GJ_ACTIVATION_SQUAREPLUS, 0.0);
    check_gradients(3, 32, 2, 300, GJ_ACTIVATION_RELU, GJ_ACTIVATION_SIGMOID, 1.0);   /* outputs above 128 */
    check_gradients(4, 16, 0, 1024, GJ_ACTIVATION_RELU, GJ_ACTIVATION_TANH, 1.0);    /* the widest, no hidden */
}

/* ------------------------------------------------------------------ padding */

/* The padding outputs are computed like the real ones (their rows are real parameters) but
 * ignored: their dL/dy is never read, their rows get no gradient, and they change no real
 * output. */
static void padding_outputs_are_computed_but_ignored(void **state) {
    (void)state;
    static net_case nc;
    make_case(&nc, 5, 32, 2, 3, GJ_ACTIVATION_RELU, GJ_ACTIVATION_TANH, 1.0, 7);
    /* The same parameters seen as a network with 16 real outputs: the same 16 values. */
    gj_ref_mlp wide;
    assert_true(gj_ref_mlp_make(&wide, 5, 32, 2, 16, GJ_ACTIVATION_RELU, GJ_ACTIVATION_TANH, 1.0));
    assert_int_equal(wide.n_params, nc.ref.n_params);
    double y[16], y_wide[16];
    gj_ref_mlp_forward(&nc.ref, nc.params, nc.x[0], y);
    gj_ref_mlp_forward(&wide, nc.params, nc.x[0], y_wide);
    assert_memory_equal(y, y_wide, sizeof y);
    assert_true(fabs(y[10]) > 0.0); /* a padding output, not zero */
    /* No gradient for the padding rows, NaN padding dL/dy not read. */
    double *grad = calloc(nc.ref.n_params, sizeof *grad);
    gj_ref_mlp_backward(&nc.ref, nc.params, nc.x[0], nc.dL_dy, grad, NULL);
    const gj_ref_mlp_layer *last = &nc.ref.layers[nc.ref.n_layers - 1];
    double total = 0.0;
    for (uint64_t j = 0; j < nc.ref.n_params; j++) {
        assert_false(isnan(grad[j]));
        const uint64_t row = j >= last->offset ? (j - last->offset) / last->fan_in : 0;
        if (j >= last->offset && row >= 3) {
            assert_true(grad[j] == 0.0);
        }
        total += fabs(grad[j]);
    }
    assert_true(total > 0.0);
    /* Changing the padding rows changes no real output. */
    for (uint64_t j = last->offset + 3ull * last->fan_in; j < nc.ref.n_params; j++) {
        nc.params[j] += 0.5;
    }
    double y2[16];
    gj_ref_mlp_forward(&nc.ref, nc.params, nc.x[0], y2);
    assert_memory_equal(y, y2, 3 * sizeof y[0]);
    assert_true(y2[10] != y[10]);
    free(grad);
    free(nc.params);
}

/* The padding input columns hold the network's padding value: with zeros (behind a grid)
 * their weights do nothing and get no gradient; with ones (tinycudann's Network) they act as
 * a bias: the network equals one whose input is 16 wide with ones in those columns. */
static void padding_input_columns(void **state) {
    (void)state;
    static net_case zeros, ones;
    make_case(&zeros, 5, 16, 1, 2, GJ_ACTIVATION_TANH, GJ_ACTIVATION_NONE, 0.0, 11);
    make_case(&ones, 5, 16, 1, 2, GJ_ACTIVATION_TANH, GJ_ACTIVATION_NONE, 1.0, 11);
    assert_memory_equal(zeros.params, ones.params, zeros.ref.n_params * sizeof(double));
    const gj_ref_mlp_layer *first = &zeros.ref.layers[0];
    double *grad0 = calloc(zeros.ref.n_params, sizeof(double));
    double *grad1 = calloc(zeros.ref.n_params, sizeof(double));
    gj_ref_mlp_backward(&zeros.ref, zeros.params, zeros.x[0], zeros.dL_dy, grad0, NULL);
    gj_ref_mlp_backward(&ones.ref, ones.params, ones.x[0], ones.dL_dy, grad1, NULL);
    double with_ones = 0.0;
    for (uint32_t o = 0; o < first->fan_out; o++) {
        for (uint32_t i = 5; i < first->fan_in; i++) {
            assert_true(grad0[o * first->fan_in + i] == 0.0);
            with_ones += fabs(grad1[o * first->fan_in + i]);
        }
    }
    assert_true(with_ones > 0.0);
    double y0[16], y1[16], y0b[16], y_explicit[16];
    gj_ref_mlp_forward(&zeros.ref, zeros.params, zeros.x[0], y0);
    gj_ref_mlp_forward(&ones.ref, ones.params, ones.x[0], y1);
    assert_true(y0[0] != y1[0]);
    /* Weights of the padding columns do nothing when they hold zeros. */
    for (uint32_t o = 0; o < first->fan_out; o++) {
        zeros.params[o * first->fan_in + 9] += 1.0;
    }
    gj_ref_mlp_forward(&zeros.ref, zeros.params, zeros.x[0], y0b);
    assert_memory_equal(y0, y0b, 2 * sizeof y0[0]);
    /* Ones: the same as 16 real inputs with x[5..15] = 1. */
    gj_ref_mlp explicit_input;
    assert_true(gj_ref_mlp_make(&explicit_input, 16, 16, 1, 2, GJ_ACTIVATION_TANH, GJ_ACTIVATION_NONE, 0.0));
    double x16[16];
    for (int i = 0; i < 16; i++) {
        x16[i] = i < 5 ? ones.x[0][i] : 1.0;
    }
    gj_ref_mlp_forward(&explicit_input, ones.params, x16, y_explicit);
    assert_memory_equal(y1, y_explicit, 2 * sizeof y1[0]);
    free(grad0);
    free(grad1);
    free(zeros.params);
    free(ones.params);
}

/* fp16_hidden rounds each hidden layer's output to fp16 (as the library converts floats to
 * halves) and nothing else: a one-hidden-layer network of weights 1 / 3 gives y = 16 h, h the
 * hidden output; checked from fp16's subnormals to its overflow, both signs. */
static void fp16_hidden_rounds_hidden_outputs_only(void **state) {
    (void)state;
    gj_ref_mlp ref;
    assert_true(gj_ref_mlp_make(&ref, 1, 16, 1, 1, GJ_ACTIVATION_NONE, GJ_ACTIVATION_NONE, 0.0));
    assert_false(ref.fp16_hidden); /* exact unless asked */
    double *params = malloc(ref.n_params * sizeof *params), *grads = malloc(ref.n_params * sizeof *grads);
    for (uint64_t i = 0; i < ref.n_params; i++) {
        params[i] = 1.0 / 3.0;
    }
    int rounded_somewhere = 0;
    for (int k = -70; k <= 40; k++) {
        for (int sign = -1; sign <= 1; sign += 2) {
            const double x = sign * pow(1.37, k);
            const double exact_h = x * (1.0 / 3.0);
            double y[16], y16[16], dy[16] = {1.0}, dx;
            ref.fp16_hidden = false;
            gj_ref_mlp_forward(&ref, params, &x, y);
            ref.fp16_hidden = true;
            gj_ref_mlp_forward(&ref, params, &x, y16);
            const float h = (float)exact_h;
            uint16_t bits;
            float rounded;
            gj_floats_to_halves(&h, &bits, 1);
            gj_halves_to_floats(&bits, &rounded, 1);
            rounded_somewhere |= rounded != h;
            assert_true(fabs(y[0] - 16.0 * exact_h / 3.0) <= 1e-12 * fabs(y[0]));
            if (isinf(rounded)) {
                assert_true(isinf(y16[0]) && (y16[0] > 0) == (rounded > 0));
            } else {
                assert_true(fabs(y16[0] - 16.0 * (double)rounded / 3.0) <= 1e-12 * fabs(y16[0]));
            }
            /* The backward pass takes h from the same place: dL/dW of the output layer is h. */
            memset(grads, 0, ref.n_params * sizeof *grads);
            gj_ref_mlp_backward(&ref, params, &x, dy, grads, &dx);
            assert_true(grads[ref.layers[1].offset] == (double)rounded);
        }
    }
    assert_true(rounded_somewhere);
    free(grads);
    free(params);
}

/* ---------------------------------------------------------- initialisation */

static void init_follows_tcnn_s_rule(void **state) {
    (void)state;
    gj_ref_mlp ref;
    assert_true(gj_ref_mlp_make(&ref, 3, 64, 2, 1, GJ_ACTIVATION_RELU, GJ_ACTIVATION_NONE, 1.0));
    /* Xavier: fan_in + fan_out of the stored matrices, padding included: 16 + 64, 64 + 64, 64 + 16. */
    assert_true(gj_ref_mlp_init_bound(&ref, 0, 1.0f) == sqrtf(6.0f / 80.0f));
    assert_true(gj_ref_mlp_init_bound(&ref, 1, 1.0f) == sqrtf(6.0f / 128.0f));
    assert_true(gj_ref_mlp_init_bound(&ref, 2, 1.0f) == sqrtf(6.0f / 80.0f));
    assert_true(gj_ref_mlp_init_bound(&ref, 1, 0.5f) == 0.5f * sqrtf(6.0f / 128.0f));
    float *params = malloc(ref.n_params * sizeof *params);
    gj_ref_pcg32 rng, check;
    gj_ref_pcg32_seed(&rng, 1337u, 1u); /* what tinycudann's Module(seed=1337) starts from */
    gj_ref_mlp_init_params(&ref, &rng, 1.0f, params);
    /* Element by element in memory order, layer after layer, from one stream. */
    gj_ref_pcg32_seed(&check, 1337u, 1u);
    for (uint32_t l = 0; l < ref.n_layers; l++) {
        const float b = gj_ref_mlp_init_bound(&ref, l, 1.0f);
        float lo = b, hi = -b;
        for (uint64_t i = 0; i < (uint64_t)ref.layers[l].fan_in * ref.layers[l].fan_out; i++) {
            const float w = params[ref.layers[l].offset + i];
            const float r = gj_ref_pcg32_next_float(&check);
            assert_true(w == r * 2.0f * b - b);
            assert_true(w >= -b && w < b);
            lo = w < lo ? w : lo;
            hi = w > hi ? w : hi;
        }
        /* 1024 or more draws reach close to both ends. */
        assert_true(lo < -0.95f * b && hi > 0.95f * b);
    }
    /* The stream goes on where the MLP left it (to the encoding's parameters). */
    assert_int_equal(gj_ref_pcg32_next(&rng), gj_ref_pcg32_next(&check));
    /* Another seed, other values; the same seed, the same values. */
    float *again = malloc(ref.n_params * sizeof *again);
    gj_ref_pcg32_seed(&rng, 1338u, 1u);
    gj_ref_mlp_init_params(&ref, &rng, 1.0f, again);
    assert_true(memcmp(params, again, ref.n_params * sizeof *params) != 0);
    gj_ref_pcg32_seed(&rng, 1337u, 1u);
    gj_ref_mlp_init_params(&ref, &rng, 1.0f, again);
    assert_memory_equal(params, again, ref.n_params * sizeof *params);
    free(params);
    free(again);
}

/* Sine as the hidden activation switches every layer to SIREN's rule (gpu_matrix.h):
 * 30 / fan_in for the first, sqrt(6 / fan_in) for the others, the output layer included. */
static void init_of_sine_networks_is_siren_s(void **state) {
    (void)state;
    gj_ref_mlp ref;
    assert_true(gj_ref_mlp_make(&ref, 40, 32, 3, 4, GJ_ACTIVATION_SINE, GJ_ACTIVATION_NONE, 0.0));
    assert_true(gj_ref_mlp_init_bound(&ref, 0, 1.0f) == 30.0f / 48.0f); /* 40 inputs padded to 48 */
    assert_true(gj_ref_mlp_init_bound(&ref, 1, 1.0f) == sqrtf(6.0f / 32.0f));
    assert_true(gj_ref_mlp_init_bound(&ref, 3, 2.0f) == 2.0f * sqrtf(6.0f / 32.0f));
    /* A Sine output activation alone does not. */
    assert_true(gj_ref_mlp_make(&ref, 40, 32, 3, 4, GJ_ACTIVATION_RELU, GJ_ACTIVATION_SINE, 0.0));
    assert_true(gj_ref_mlp_init_bound(&ref, 0, 1.0f) == sqrtf(6.0f / 80.0f));
    float *params = malloc(ref.n_params * sizeof *params);
    gj_ref_pcg32 rng;
    gj_ref_pcg32_seed(&rng, 42u, 1u);
    gj_ref_mlp_init_params(&ref, &rng, 1.0f, params);
    for (uint64_t i = 0; i < ref.layers[0].fan_in * ref.layers[0].fan_out; i++) {
        assert_true(fabsf(params[i]) <= sqrtf(6.0f / 80.0f));
    }
    free(params);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(activations_are_tcnn_s),
        cmocka_unit_test(activation_derivatives_by_finite_differences),
        cmocka_unit_test(derivatives_agree_with_tcnn_s_output_form),
        cmocka_unit_test(shape_matches_the_library_layout),
        cmocka_unit_test(gradients_every_activation_every_width),
        cmocka_unit_test(gradients_other_shapes),
        cmocka_unit_test(padding_outputs_are_computed_but_ignored),
        cmocka_unit_test(fp16_hidden_rounds_hidden_outputs_only),
        cmocka_unit_test(padding_input_columns),
        cmocka_unit_test(init_follows_tcnn_s_rule),
        cmocka_unit_test(init_of_sine_networks_is_siren_s),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
