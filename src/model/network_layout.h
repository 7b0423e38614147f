/* The MLP's widths and parameter layout, as tiny-cuda-nn's FullyFusedMLP and CutlassMLP
 * store them (docs/networks.md §2): fixed by the configuration alone. */
#ifndef GJ_MODEL_NETWORK_LAYOUT_H
#define GJ_MODEL_NETWORK_LAYOUT_H

#include "model/network_config.h"

#include <stdint.h>

/* One weight matrix, row-major: weight (row o, column i) is params[offset + o * fan_in + i];
 * row o is output neuron o, column i input i. */
typedef struct gj__network_layer {
    uint32_t fan_in;           /* columns: the padded input width for layer 0, else n_neurons */
    uint32_t fan_out;          /* rows: n_neurons, or the padded output width for the last layer */
    uint64_t offset;           /* the sum of the earlier layers' fan_in * fan_out */
    gj_activation activation;  /* applied to the products: activation, output_activation for the last */
} gj__network_layer;

#define GJ__NETWORK_MAX_LAYERS (GJ_NETWORK_MAX_HIDDEN_LAYERS + 1)

typedef struct gj__network_layout {
    uint32_t input_width, padded_input_width;   /* padded: up to a multiple of GJ_NETWORK_ALIGNMENT */
    uint32_t output_width, padded_output_width;
    uint32_t n_layers;                          /* n_hidden_layers + 1, and 1 for none */
    gj__network_layer layers[GJ__NETWORK_MAX_LAYERS];
    uint64_t n_params;                          /* the sum of every layer's fan_in * fan_out */
} gj__network_layout;

/* Overrides of the network kernels' block plan (codegen/network_plan.h), for measuring
 * launch shapes (docs/networks.md, "Launch shapes"): zero leaves each to the plan. */
typedef struct gj__network_plan_hints {
    uint32_t warps; /* warps per block: 1, 2, 4 or 8 */
    int stage;      /* 1: weights staged in shared memory, -1: read from global memory */
    int smem_grads; /* 1: the backward sums dL/dparams per block in shared memory, -1: not */
    uint32_t min_blocks; /* 1 ... 8: the kernels' __launch_bounds__ ask for that many blocks a
                            multiprocessor (registers capped to fit); 0: no such bound */
    uint32_t forward_warps; /* the inference and forward kernels' alone: 1, 2, 4 or 8 (warps sets
                               both) */
    uint32_t forward_registers; /* 64 ... 255: the inference and forward kernels are compiled with
                                   __maxnreg__(that) instead of their __launch_bounds__; 0: not */
    uint32_t step_min_blocks;   /* 1 ... 8: the training step's network kernel asks for that many
                                   blocks a multiprocessor; 0: as the backward kernels */
    uint32_t step_m_tiles;      /* 1: its forward computes one m-tile at a time; 0: the rule */
    int sum_registers;          /* the step's and the backward kernels' weight-gradient sums kept in
                                   registers, floats a lane: 1 ... 255 that budget, -1 none, 0 the
                                   rules */
    int step_fetch_targets;     /* the step's network kernel fetches a tile's targets while its
                                   forward runs: 1 yes, -1 no, 0 the rule */
    int recompute;              /* the pass kernels keep only the input rows of the forward's
                                   context and the backward recomputes the hidden layers' outputs,
                                   where the activations allow it: 1 yes, -1 no (they keep it
                                   all), 0 the rule (hidden layers up to 64 wide whose backward
                                   stages the weights) */
    int small_sums;             /* a model's fused backward sums its encoding's leading small
                                   levels per block in shared memory, where the block still fits:
                                   1 yes, -1 no (global atomics), 0 the rule (where it recomputes) */
    int fused_smem_grads;       /* a model's fused backward sums the network's dL/dparams per block
                                   in shared memory: 1 yes (where its plan does), -1 no (global
                                   reductions each round), 0 the rule (codegen/network_plan.c) */
    int inference_features;     /* a model's inference in two passes, the network over the features
                                   its encoding's forward wrote: 1 yes, -1 no (one fused kernel),
                                   0 the rule (codegen/network_codegen.c) */
    int features_fetch;         /* that network kernel's warps fetch their next tile's features into
                                   shared memory while a tile runs (where the block fits): 1 yes,
                                   -1 no, 0 the rule: fp16 features yes, fp32 no
                                   (codegen/network_plan.c) */
    int forward_features;       /* a model's forward for training in two passes, as its inference's
                                   (where the forward runs in the inference kernel's block): 1 yes,
                                   -1 no, 0 the rule: where its inference runs in two passes
                                   (codegen/network_codegen.c) */
    int small_levels_staged;    /* a model's fused inference (and the forward in its block) copies its
                                   encoding's leading small levels into the block's shared memory and
                                   gathers them there (where the wide block still fits): 1 yes, -1 no,
                                   0 the rule: fp16 values yes, fp32 no (codegen/network_plan.c) */
} gj__network_plan_hints;

/* value rounded up to a multiple of GJ_NETWORK_ALIGNMENT (tiny-cuda-nn's next_multiple). */
uint32_t gj__network_pad(uint32_t value);

/* Fills *out from a checked configuration (gj__network_config_parse_*). */
void gj__network_layout_compute(const gj__network_config *config, gj__network_layout *out);

#endif
