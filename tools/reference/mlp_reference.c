/*
 * Independent CPU reference of tiny-cuda-nn's MLPs (see mlp_reference.h), written from
 * docs/networks.md. Everything is double except the initialisation, which follows
 * tiny-cuda-nn's float arithmetic step by step (plain ISO C: no contraction into fma).
 */
#include "mlp_reference.h"

#include <math.h>
#include <string.h>

/* tiny-cuda-nn's K_ACT (common_device.h): Squareplus and Softplus are sharpened by 10. */
#define K_ACT 10.0

/* ------------------------------------------------------------------ shape */

static uint32_t pad16(uint32_t v) {
    return (v + 15u) / 16u * 16u;
}

static void add_layer(gj_ref_mlp *ref, uint32_t fan_in, uint32_t fan_out, gj_activation activation) {
    gj_ref_mlp_layer *layer = &ref->layers[ref->n_layers++];
    layer->fan_in = fan_in;
    layer->fan_out = fan_out;
    layer->offset = ref->n_params;
    layer->activation = activation;
    ref->n_params += (uint64_t)fan_in * fan_out;
}

bool gj_ref_mlp_make(gj_ref_mlp *ref, uint32_t input_width, uint32_t n_neurons, uint32_t n_hidden_layers,
                     uint32_t output_width, gj_activation activation, gj_activation output_activation,
                     double input_padding) {
    memset(ref, 0, sizeof *ref);
    if (input_width == 0 || input_width > GJ_NETWORK_MAX_INPUT_DIMS || output_width == 0 ||
        output_width > GJ_NETWORK_MAX_OUTPUT_DIMS || n_neurons == 0 || n_neurons > GJ_REF_MLP_MAX_WIDTH ||
        n_hidden_layers > GJ_NETWORK_MAX_HIDDEN_LAYERS) {
        return false;
    }
    ref->input_width = input_width;
    ref->padded_input_width = pad16(input_width);
    ref->output_width = output_width;
    ref->padded_output_width = pad16(output_width);
    ref->input_padding = input_padding;
    ref->activation = activation;
    if (n_hidden_layers == 0) {
        add_layer(ref, ref->padded_input_width, ref->padded_output_width, output_activation);
        return true;
    }
    add_layer(ref, ref->padded_input_width, n_neurons, activation);
    for (uint32_t i = 1; i < n_hidden_layers; ++i) {
        add_layer(ref, n_neurons, n_neurons, activation);
    }
    add_layer(ref, n_neurons, ref->padded_output_width, output_activation);
    return true;
}

void gj_ref_mlp_from_network(gj_ref_mlp *ref, const gj_network *net) {
    memset(ref, 0, sizeof *ref);
    ref->input_width = gj_network_input_width(net);
    ref->padded_input_width = gj_network_padded_input_width(net);
    ref->output_width = gj_network_n_output_dims(net);
    ref->padded_output_width = gj_network_padded_output_width(net);
    ref->input_padding = gj_network_input_padding(net);
    ref->activation = gj_network_activation(net);
    ref->n_params = gj_network_n_mlp_params(net);
    for (uint32_t l = 0; l < gj_network_n_layers(net) && l < GJ_REF_MLP_MAX_LAYERS; ++l) {
        gj_network_layer_info info;
        gj_network_layer_info_init(&info);
        gj_network_layer(net, l, &info);
        ref->layers[l].fan_in = info.fan_in;
        ref->layers[l].fan_out = info.fan_out;
        ref->layers[l].offset = info.offset;
        ref->layers[l].activation = info.activation;
        ref->n_layers = l + 1;
    }
}

/* ------------------------------------------------------------- activations */

static double logistic(double x) {
    return 1.0 / (1.0 + exp(-x));
}

/* log(1 + e^u) without overflow for large u (tiny-cuda-nn's float logf(expf(u) + 1)
 * overflows to inf above u = 88, that is x > 8.8). */
static double log1p_exp(double u) {
    return u > 0.0 ? u + log1p(exp(-u)) : log1p(exp(u));
}

double gj_ref_activation(gj_activation activation, double x) {
    switch (activation) {
    case GJ_ACTIVATION_NONE: return x;
    case GJ_ACTIVATION_RELU: return x > 0.0 ? x : 0.0;
    case GJ_ACTIVATION_LEAKY_RELU: return x > 0.0 ? x : 0.01 * x;
    case GJ_ACTIVATION_EXPONENTIAL: return exp(x);
    case GJ_ACTIVATION_SINE: return sin(x);
    case GJ_ACTIVATION_SIGMOID: return logistic(x);
    case GJ_ACTIVATION_SQUAREPLUS: {
        const double u = K_ACT * x;
        return 0.5 * (u + sqrt(u * u + 4.0)) / K_ACT;
    }
    case GJ_ACTIVATION_SOFTPLUS: return log1p_exp(K_ACT * x) / K_ACT;
    case GJ_ACTIVATION_TANH: return tanh(x);
    case GJ_ACTIVATION_SILU: return x * logistic(x);
    }
    return NAN;
}

double gj_ref_activation_derivative(gj_activation activation, double x) {
    switch (activation) {
    case GJ_ACTIVATION_NONE: return 1.0;
    case GJ_ACTIVATION_RELU: return x > 0.0 ? 1.0 : 0.0;
    case GJ_ACTIVATION_LEAKY_RELU: return x > 0.0 ? 1.0 : 0.01;
    case GJ_ACTIVATION_EXPONENTIAL: return exp(x);
    case GJ_ACTIVATION_SINE: return cos(x);
    case GJ_ACTIVATION_SIGMOID: {
        const double s = logistic(x);
        return s * (1.0 - s);
    }
    case GJ_ACTIVATION_SQUAREPLUS: {
        const double u = K_ACT * x;
        return 0.5 * (1.0 + u / sqrt(u * u + 4.0));
    }
    case GJ_ACTIVATION_SOFTPLUS: return logistic(K_ACT * x);
    case GJ_ACTIVATION_TANH: {
        const double t = tanh(x);
        return 1.0 - t * t;
    }
    case GJ_ACTIVATION_SILU: {
        const double s = logistic(x);
        return s + x * s * (1.0 - s);
    }
    }
    return NAN;
}

/* ------------------------------------------------------------------ passes */

/* What the backward pass needs of a forward pass: the padded input and every layer's
 * pre-activations z, the hidden layers' (at most n_neurons wide) and the output layer's
 * (50 KB: on the stack). */
typedef struct trace {
    double in[GJ_NETWORK_MAX_INPUT_DIMS];
    double z[GJ_REF_MLP_MAX_LAYERS][GJ_REF_MLP_MAX_WIDTH];
    double z_out[GJ_NETWORK_MAX_OUTPUT_DIMS + 15];
} trace;

/* Layer l's pre-activations in t. */
static double *layer_z(const gj_ref_mlp *ref, trace *t, uint32_t l) {
    return l + 1 == ref->n_layers ? t->z_out : t->z[l];
}

/* v as the kernels store it: rounded to float, then to the nearest fp16 value (ties to
 * even; subnormals below 2^-14; infinity from 65520 on). */
static double round_to_half(double v) {
    const float f = (float)v;
    const float a = fabsf(f);
    if (!isfinite(f) || a == 0.0f) {
        return f;
    }
    if (a >= 65520.0f) {
        return copysign(INFINITY, f);
    }
    int e;
    frexpf(a, &e);                 /* a = m 2^e, m in [0.5, 1): 11 significant bits ... */
    const int q = e - 11 < -24 ? -24 : e - 11; /* ... or the subnormals' fixed step 2^-24 */
    const float step = ldexpf(1.0f, q);
    return copysignf(nearbyintf(a / step) * step, f);
}

/* The input of layer l (fan_in values): the padded input, or the previous layer's h. */
static void layer_input(const gj_ref_mlp *ref, const trace *t, uint32_t l, double *h) {
    for (uint32_t i = 0; i < ref->layers[l].fan_in; ++i) {
        h[i] = l == 0 ? t->in[i] : gj_ref_activation(ref->layers[l - 1].activation, t->z[l - 1][i]);
        if (l > 0 && ref->fp16_hidden) {
            h[i] = round_to_half(h[i]);
        }
    }
}

static void run_forward(const gj_ref_mlp *ref, const double *params, const double *x, trace *t) {
    for (uint32_t i = 0; i < ref->padded_input_width; ++i) {
        t->in[i] = i < ref->input_width ? x[i] : ref->input_padding;
    }
    for (uint32_t l = 0; l < ref->n_layers; ++l) {
        const gj_ref_mlp_layer *layer = &ref->layers[l];
        double h[GJ_NETWORK_MAX_INPUT_DIMS];
        layer_input(ref, t, l, h);
        for (uint32_t o = 0; o < layer->fan_out; ++o) {
            const double *row = params + layer->offset + (uint64_t)o * layer->fan_in;
            double sum = 0.0;
            for (uint32_t i = 0; i < layer->fan_in; ++i) {
                sum += row[i] * h[i];
            }
            layer_z(ref, t, l)[o] = sum;
        }
    }
}

void gj_ref_mlp_forward(const gj_ref_mlp *ref, const double *params, const double *x, double *y) {
    trace t;
    run_forward(ref, params, x, &t);
    const gj_ref_mlp_layer *last = &ref->layers[ref->n_layers - 1];
    for (uint32_t o = 0; o < last->fan_out; ++o) {
        y[o] = gj_ref_activation(last->activation, t.z_out[o]);
    }
}

void gj_ref_mlp_backward(const gj_ref_mlp *ref, const double *params, const double *x, const double *dL_dy,
                         double *dL_dparams, double *dL_dx) {
    trace t;
    run_forward(ref, params, x, &t);
    const uint32_t last = ref->n_layers - 1;
    /* delta_l = dL/dz_l; the padding outputs' dL/dy is not read: it counts as 0. */
    double delta[GJ_NETWORK_MAX_INPUT_DIMS];
    for (uint32_t o = 0; o < ref->layers[last].fan_out; ++o) {
        const double g = o < ref->output_width ? dL_dy[o] : 0.0;
        delta[o] = g * gj_ref_activation_derivative(ref->layers[last].activation, t.z_out[o]);
    }
    for (uint32_t l = last + 1; l-- > 0;) {
        const gj_ref_mlp_layer *layer = &ref->layers[l];
        if (dL_dparams) {
            double h[GJ_NETWORK_MAX_INPUT_DIMS];
            layer_input(ref, &t, l, h);
            for (uint32_t o = 0; o < layer->fan_out; ++o) {
                double *row = dL_dparams + layer->offset + (uint64_t)o * layer->fan_in;
                for (uint32_t i = 0; i < layer->fan_in; ++i) {
                    row[i] += delta[o] * h[i];
                }
            }
        }
        /* dL/d(input of layer l) = W_l^T delta_l, then through the previous activation. */
        double g[GJ_NETWORK_MAX_INPUT_DIMS];
        for (uint32_t i = 0; i < layer->fan_in; ++i) {
            g[i] = 0.0;
        }
        for (uint32_t o = 0; o < layer->fan_out; ++o) {
            const double *row = params + layer->offset + (uint64_t)o * layer->fan_in;
            for (uint32_t i = 0; i < layer->fan_in; ++i) {
                g[i] += row[i] * delta[o];
            }
        }
        if (l == 0) {
            for (uint32_t i = 0; dL_dx && i < ref->input_width; ++i) {
                dL_dx[i] = g[i];
            }
            break;
        }
        for (uint32_t i = 0; i < layer->fan_in; ++i) {
            delta[i] = g[i] * gj_ref_activation_derivative(ref->layers[l - 1].activation, t.z[l - 1][i]);
        }
    }
}

/* ---------------------------------------------------------- initialisation */

float gj_ref_mlp_init_bound(const gj_ref_mlp *ref, uint32_t layer, float scale) {
    const gj_ref_mlp_layer *l = &ref->layers[layer];
    if (ref->activation == GJ_ACTIVATION_SINE) {
        /* initialize_siren_uniform_first / initialize_siren_uniform (gpu_matrix.h) */
        return layer == 0 ? scale * (30.0f / (float)l->fan_in) : scale * sqrtf(6.0f / (float)l->fan_in);
    }
    /* initialize_xavier_uniform: fan_in = columns, fan_out = rows (padding included) */
    return scale * sqrtf(6.0f / (float)(l->fan_in + l->fan_out));
}

void gj_ref_mlp_init_params(const gj_ref_mlp *ref, gj_ref_pcg32 *rng, float scale, float *params) {
    for (uint32_t l = 0; l < ref->n_layers; ++l) {
        const gj_ref_mlp_layer *layer = &ref->layers[l];
        const float b = gj_ref_mlp_init_bound(ref, l, scale);
        const uint64_t n = (uint64_t)layer->fan_in * layer->fan_out;
        for (uint64_t i = 0; i < n; ++i) {
            const float r = gj_ref_pcg32_next_float(rng);
            const float twice = r * 2.0f;
            params[layer->offset + i] = twice * b - b; /* rnd.next_float() * 2.0f * scale - scale */
        }
    }
}
