/*
 * Independent CPU reference of tiny-cuda-nn's MLPs (FullyFusedMLP, CutlassMLP), in double
 * precision, written from docs/networks.md (not from generated code), on tiny-cuda-nn's
 * parameter layout. The GPU tests of the network kernels will compare with it. It uses the
 * public API only.
 *
 * One point at a time:
 *  - the input: x holds the MLP's input_width values; the padding columns up to
 *    padded_input_width hold input_padding (1 for a network alone, as tinycudann's Network,
 *    whose identity encoding pads with ones; 0 behind a grid encoding);
 *  - layer l: z_l = W_l h_{l-1} (h_{-1} the padded input), h_l = act_l(z_l), W_l row-major
 *    (fan_out rows of fan_in) at params[offset_l]; no biases (tiny-cuda-nn's MLPs have none);
 *  - the output: all padded_output_width values of the last layer (its padding rows are
 *    real parameters, so those outputs are computed like the others); a caller ignores them,
 *    and the backward pass never reads their dL/dy.
 *
 * Activations are tiny-cuda-nn's (common_device.h), computed in double; their derivatives are
 * taken at the pre-activation z. Where tiny-cuda-nn's own backward is wrong (the output
 * activations Sine and SiLU, which it passes through unchanged) the reference gives the true
 * derivative (docs/networks.md §4).
 *
 * No global state: every function is reentrant.
 */
#ifndef GJ_MLP_REFERENCE_H
#define GJ_MLP_REFERENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu_reference.h"
#include "gridjit.h"

#define GJ_REF_MLP_MAX_LAYERS (GJ_NETWORK_MAX_HIDDEN_LAYERS + 1)
/* The widest hidden layer (n_neurons); the output layer is up to GJ_NETWORK_MAX_OUTPUT_DIMS
 * padded to 16. */
#define GJ_REF_MLP_MAX_WIDTH 128

typedef struct gj_ref_mlp_layer {
    uint32_t fan_in, fan_out;  /* columns, rows */
    uint64_t offset;           /* weight (o, i) is params[offset + o * fan_in + i] */
    gj_activation activation;
} gj_ref_mlp_layer;

typedef struct gj_ref_mlp {
    uint32_t input_width, padded_input_width;
    uint32_t output_width, padded_output_width;
    double input_padding;       /* the value of the padding input columns */
    gj_activation activation;   /* the hidden layers' (it chooses SIREN's init for Sine) */
    uint32_t n_layers;
    gj_ref_mlp_layer layers[GJ_REF_MLP_MAX_LAYERS];
    uint64_t n_params;
    /* false (what the constructors set): every value in double. true: each hidden layer's
     * output h is rounded to fp16, as the fused kernels (and tiny-cuda-nn) store it between
     * layers. A test of the kernels sets it: with exact h, a pre-activation within rounding
     * error of a kink (ReLU's 0) lands on the other side for some points, and those points'
     * gradients differ by a whole neuron's share. */
    bool fp16_hidden;
} gj_ref_mlp;

/* The shape from tiny-cuda-nn's rules, computed here (independently of the library): widths
 * padded to multiples of 16; n_hidden_layers 0 makes one matrix. false (and *ref zeroed) for
 * a shape outside gridjit's limits. */
bool gj_ref_mlp_make(gj_ref_mlp *ref, uint32_t input_width, uint32_t n_neurons, uint32_t n_hidden_layers,
                     uint32_t output_width, gj_activation activation, gj_activation output_activation,
                     double input_padding);
/* The shape of a network (through the public API): its layer table and widths. */
void gj_ref_mlp_from_network(gj_ref_mlp *ref, const gj_network *net);

/* tiny-cuda-nn's activation of x, and its derivative at x. */
double gj_ref_activation(gj_activation activation, double x);
double gj_ref_activation_derivative(gj_activation activation, double x);

/* y: padded_output_width values. */
void gj_ref_mlp_forward(const gj_ref_mlp *ref, const double *params, const double *x, double *y);

/* dL_dy: padded_output_width values, of which only the first output_width are read.
 * dL_dparams (n_params) is accumulated (+=); dL_dx (input_width values, the padding columns
 * have none) is written. Either may be NULL. */
void gj_ref_mlp_backward(const gj_ref_mlp *ref, const double *params, const double *x, const double *dL_dy,
                         double *dL_dparams, double *dL_dx);

/*
 * tiny-cuda-nn's initialisation (initialize_params of FullyFusedMLP and CutlassMLP): layer
 * by layer, element by element in memory order, w = r * 2 * b - b with r = rng's next float
 * in [0, 1) and, in float:
 *   b = scale * sqrt(6 / (fan_in + fan_out))   (Xavier uniform), or when the hidden
 *   activation is Sine (SIREN): b = scale * 30 / fan_in for layer 0, scale * sqrt(6 / fan_in)
 *   for the others.
 * tinycudann seeds rng with gj_ref_pcg32_seed(rng, seed, 1) and continues with the encoding's
 * parameters. params: n_params floats.
 */
void gj_ref_mlp_init_params(const gj_ref_mlp *ref, gj_ref_pcg32 *rng, float scale, float *params);
/* The bound b of layer l (above). */
float gj_ref_mlp_init_bound(const gj_ref_mlp *ref, uint32_t layer, float scale);

#endif
