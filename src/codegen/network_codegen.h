/* CUDA source generation for a network, alone or behind its encoding (docs/networks.md §7). */
#ifndef GJ_CODEGEN_NETWORK_CODEGEN_H
#define GJ_CODEGEN_NETWORK_CODEGEN_H

#include "codegen/network_plan.h"
#include "model/network.h"

/* What a unit holds: the whole (device functions and, without device_functions_only, every
 * kernel), or one lazily compiled program of a network module. */
typedef enum gj__network_part {
    GJ__NETWORK_PART_ALL = 0,
    GJ__NETWORK_PART_INFERENCE = 1, /* NAME_inference */
    GJ__NETWORK_PART_TRAINING = 2,  /* NAME_forward (keeping the context for the backward) */
    GJ__NETWORK_PART_BACKWARD = 3,  /* NAME_backward (dL/dparams alone), NAME_zero: a program of
                                       their own, so that a module compiles it beside the
                                       forward's (and a network's backward_input) on threads */
    /* NAME_backward_input, the backward with dL/dinput. A network alone: dL/dx and dL/dparams
     * (NAME_backward has dL/dparams alone). A model: the network's backward writing
     * dL/d(features), which the encoding's own backward (a module of the encoding) turns into
     * dL/dinput and its dL/dparams. With NAME_input_zero and NAME_input_finish, copies of the
     * backward program's, so that the passes it serves need no other program (a model's
     * backward with dL/dinput; its backward to the parameters while the fused one compiles). */
    GJ__NETWORK_PART_TRAINING_INPUT = 4,
    /* NAME_train_step (forward, L2 loss and backward to the parameters in one kernel; a
     * model's NAME_train_features, between its encoding's own kernels) and NAME_train_zero: the
     * fused training step (docs/networks.md §10), a program of its own. */
    GJ__NETWORK_PART_STEP = 5,
    /* NAME_adam, tiny-cuda-nn's Adam over both parts' parameters: a program of its own, which
     * the module compiles beside the step's on a thread (in the step's program it took a tenth
     * of that program's compile, on the critical path of a training step's first call). */
    GJ__NETWORK_PART_ADAM = 6,
    GJ__NETWORK_PART_COUNT = 7
} gj__network_part;

/* The kernels of a network's unit, in the order of gj__network_kernels. */
typedef enum gj__network_kernel {
    GJ__NK_INFERENCE,
    GJ__NK_FORWARD,
    GJ__NK_BACKWARD,
    GJ__NK_ZERO,
    GJ__NK_BACKWARD_INPUT,
    GJ__NK_FINISH,
    GJ__NK_STEP,
    GJ__NK_STEP_ZERO,
    GJ__NK_ADAM,
    GJ__NK_STEP_FEATURES,
    GJ__NK_INPUT_ZERO,   /* NAME_input_zero, NAME_input_finish: the zeroing and finishing kernels */
    GJ__NK_INPUT_FINISH, /* again, in the program with dL/dinput (which then serves a pass alone) */
    GJ__NK_LOSS,         /* a model's: the training step's L2 loss as a pass, in the forward's program
                            (docs/networks.md §10) */
    GJ__NK_INFERENCE_FEATURES, /* a model's inference in two passes: the network over the features that
                                  its encoding module's forward wrote (gj__network_inference_features) */
    GJ__NK_FORWARD_FEATURES,   /* a model's forward for training so (gj__network_forward_features) */
    GJ__NK_COUNT
} gj__network_kernel;

/* Each kernel's name (NAME_suffix), the program it is in, and whose unit has it: 0 every
 * one's, 1 a model's only, -1 a network alone's only (a model's training step is its encoding
 * module's kernels around NAME_train_features). */
typedef struct gj__network_kernel_info {
    const char *suffix;
    gj__network_part part;
    int owner;
} gj__network_kernel_info;
extern const gj__network_kernel_info gj__network_kernels[GJ__NK_COUNT];
/* Whether net's unit has kernel k (its owner; a model's inference kernel, the fused one or the
 * one over features, as gj__network_inference_features says). */
int gj__network_has_kernel(const struct gj_network *net, gj__network_kernel k);
/* Whether a model's inference runs in two passes (docs/networks.md §9): its encoding module's
 * level-major forward writes the features feature-major, then NAME_inference_features runs the
 * network over them; else one fused kernel (NAME_inference) encodes each point in registers.
 * The rule, unless net's hints say (GRIDJIT_NETWORK_INFERENCE_FEATURES): where the large class's
 * fused kernel would not take the wide block of 16 warps. 0 for a network alone. */
int gj__network_inference_features(const struct gj_network *net);
/* Whether a model's forward for training runs in two passes as well (NAME_forward_features, the
 * network over the features, writing the context as NAME_forward does): only where its forward
 * runs in the inference kernel's block (it recomputes), and there where its hints ask
 * (GRIDJIT_NETWORK_FORWARD_FEATURES=1) or else by the rule: where its inference runs in two
 * passes too (GRIDJIT_NETWORK_FORWARD_FEATURES=0 asks never). 0 for a network alone. Measured:
 * docs/benchmarks.md §11 (forty-first and forty-second sessions). */
int gj__network_forward_features(const struct gj_network *net);
/* The network's default device-function name. */
#define GJ__NETWORK_DEFAULT_NAME "gj_network"

/*
 * The translation unit. opts (resolved): name names the network's functions (the default
 * "gj_encode" of the encodings is replaced by "gj_network"); device_functions_only leaves the
 * kernels out. A model's unit starts with its encoding's device functions, named NAME_encoding,
 * generated with opts (device functions only, output padded to 16 as tiny-cuda-nn pads it;
 * the passes its kernels call), then the network's, then the fused kernels. options_text: the
 * compile options for the header comment (may be NULL). NULL on OOM.
 */
char *gj__network_codegen(const struct gj_network *net, const gj_codegen_options *opts, gj__network_part part,
                          const char *options_text);

/* The floats of a model's encoding's leading small levels, whose gradients its fused backward
 * may sum in shared memory (0 for a network alone; the plan's room for them,
 * gj__network_plans_make; what a module generates: level-major). */
uint32_t gj__network_small_floats(const struct gj_network *net);

/* The two-pass choices of a model (gj__network_inference_features, gj__network_forward_features). */
typedef struct gj__network_two_pass_choice {
    int inference, forward;
} gj__network_two_pass_choice;

/* The plans of net's kernels (GJ__NETWORK_PLAN_CLASSES of them) as its programs are generated:
 * gj__network_plans_make's, without a staging of features where no kernel runs over them (a fused
 * model's programs are the same whatever the fetch's hint); and the two-pass choices read from
 * them into *two. */
void gj__network_plans_of(const struct gj_network *net, gj__network_plan *plans, gj__network_two_pass_choice *two);

/* The bytes of one of a model's features as its encoding writes them (2: fp16, 4: fp32; 0 for a
 * network alone): what gj__network_plans_make stages where the kernel over features fetches. */
unsigned gj__network_feature_bytes(const struct gj_network *net);

/* The name the network's functions get under opts. */
const char *gj__network_name(const gj_codegen_options *opts);

/* The part's kernels as name expressions ("&NAME_inference"; "&NAME_forward", "&NAME_backward",
 * "&NAME_zero", "&NAME_finish"; a model's "&NAME_loss" in the forward's;
 * "&NAME_backward_input", "&NAME_input_zero", "&NAME_input_finish";
 * "&NAME_train_step", "&NAME_train_zero", "&NAME_adam"), *count of them; malloc()ed
 * (gj__free_string_list); NULL on OOM. */
char **gj__network_kernel_names(const struct gj_network *net, const gj_codegen_options *opts, gj__network_part part,
                                size_t *count);

#endif
