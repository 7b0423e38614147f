/* How the network kernels use a block (templates/network_kernels.cuh): warps (the forward
 * passes' and the backward's), whether the
 * weights are staged in shared memory, whether the backward kernel sums dL/dparams in shared
 * memory, and the bytes of dynamic shared memory each kernel takes. Fixed by the layout (and
 * a module's hints); the generated code states it as constants and the runtime launches
 * with the same numbers. */
#ifndef GJ_CODEGEN_NETWORK_PLAN_H
#define GJ_CODEGEN_NETWORK_PLAN_H

#include "base/cubin_macro.h"
#include "model/network_layout.h"

#include <stdint.h>

typedef struct gj__network_plan {
    uint32_t stride;         /* S: halves per scratch row, the widest layer + 8 */
    uint64_t scratch_halves; /* per warp: two buffers of 32 rows */
    uint64_t forward_scratch_halves; /* per warp in the forward kernels: one buffer, or both
                                        (no hidden layers and more than GJ__NETWORK_OUT_CHUNK
                                        padded outputs, computed in chunks into the second) */
    uint64_t ctx_halves;     /* forward context of one 32-point tile: all of it (the per-point
                                entry points' and the training step's) */
    int recompute;           /* the pass kernels keep only its input rows and the backward
                                recomputes the hidden layers' outputs (templates/network.cuh,
                                gj_nn_recomputes; the same in every class) */
    uint64_t pass_ctx_halves; /* what the pass kernels keep of a tile: ctx_halves, or recomputing
                                 32 rows of the padded input */
    uint32_t small_sums_floats; /* a model's fused backward: its block's room for the encoding's
                                   leading small levels' sums, fp32 after the warps' scratch
                                   (templates/model_kernels.cuh; backward_bytes includes it); 0: none */
    uint64_t staged_halves;  /* the weights with rows padded by 8, rounded to 8 (0: not staged) */
    uint32_t warps;          /* per block of the backward kernels */
    uint32_t forward_warps;  /* per block of the inference and forward kernels */
    int stage;               /* inference and forward kernels copy the weights to shared memory */
    int stage_backward;      /* the backward kernel does too (only where stage is set) */
    int smem_grads;          /* backward sums dL/dparams per block in shared memory */
    int input_smem_grads;    /* so does a model's backward with dL/dinput (the network's kernel,
                                writing dL/d(features)) */
    uint32_t min_blocks;     /* the kernels' __launch_bounds__ minimum of blocks a multiprocessor (0: none) */
    uint32_t forward_bytes;  /* dynamic shared memory of the inference and forward kernels */
    /* A model's inference kernel (the forward's unless gj__network_plans_make gives it the wide
     * block): warps a block, its rows' halves, one warp's buffer, the minimum of blocks its
     * __launch_bounds__ asks for (0: the forward kernel's), its dynamic shared memory. */
    uint32_t inference_warps;
    uint32_t inference_stride;
    uint64_t inference_scratch_halves;
    uint32_t inference_min_blocks;
    uint32_t inference_m_tiles; /* its 16-row tiles of the 32 points computed at once: 1, or 0
                                   for the templates' rule */
    uint32_t inference_bytes;
    /* A model's inference in two passes (NAME_inference_features, the inference kernel's block):
     * whether each warp fetches its next tile's features into a staging of 32 x the network's
     * inputs in shared memory while the tile runs (the hint features_fetch, where the block then
     * still fits), and the kernel's dynamic shared memory (inference_bytes and that staging). */
    int features_fetch;
    uint32_t features_bytes;
    /* A model's fused inference kernel (and the forward that runs in its block): the values of its
     * encoding's leading small levels (gj__network_small_floats) that each block copies into its
     * shared memory after the warps' buffers, whose gathers then read them there (0: none;
     * inference_bytes counts them, features_bytes not). */
    uint32_t inference_table_values;
    uint32_t backward_bytes; /* of the backward kernel */
    uint32_t backward_input_bytes; /* of a model's backward with dL/dinput */
    /* The training step's network kernel (docs/networks.md §10): the backward's plan (a model's:
     * the one with dL/dinput's block sums), but its weights in shared memory wherever the forward
     * stages them and the block still fits, where the backward reads them from global memory
     * (128 neurons: its forward then runs as fast as the forward kernel's). */
    int step_stage;
    uint32_t step_bytes;       /* a network alone's (NAME_train_step) */
    uint32_t step_input_bytes; /* a model's (NAME_train_features) */
    /* Whether that kernel fetches each tile's targets into a staging of target_halves a warp
     * while the tile's forward runs (cp.async; the two counts above include the staging). The
     * same in every class's plan (gj__network_plans_make). */
    int step_fetch_targets;
    uint64_t step_target_halves;
} gj__network_plan;

/* Output columns a product computes at once (templates/network.cuh: GJ_NN_OUT_CHUNK, which
 * the generated config's FORWARD_SCRATCH_HALVES lets the compiler check). */
#define GJ__NETWORK_OUT_CHUNK 128u

/* Warps a block of a model's wide inference kernel (gj__network_plans_make). */
#define GJ__NETWORK_WIDE_INFERENCE_WARPS 16u

/* The most dynamic shared memory a plan asks for (sm_80's 163 KiB opt-in limit, rounded down). */
#define GJ__NETWORK_MAX_SMEM (160u * 1024u)

/* The architectures a plan is made for. A block may take 99 KiB of shared memory on sm_86,
 * sm_89 and sm_120, 163 KiB on sm_80 and sm_87, 227 KiB of a multiprocessor's 228 on sm_90
 * to sm_110: the portable plan fits every one of them; the large plan uses what the last
 * have (two blocks of up to 112 KiB a multiprocessor), measured faster on the H200. Only a
 * cubin is known to run where it was compiled for: PTX, even for compute_90, may be finished
 * by the driver for an sm_120 GPU, so it states the portable plan. */
typedef enum gj__network_plan_class {
    GJ__NETWORK_PLAN_PORTABLE, /* every architecture: blocks of at most 96 KiB */
    GJ__NETWORK_PLAN_LARGE,    /* cubins for sm_90 up to (not including) sm_120 */
    GJ__NETWORK_PLAN_CLASSES
} gj__network_plan_class;

/* The class whose plan code compiled as a cubin for compute capability cubin_sm (90 for 9.0;
 * 0 for PTX, or not known) states. */
gj__network_plan_class gj__network_plan_class_of(int cubin_sm);

/* The generated code's test for the large class: a preprocessor condition, true exactly where
 * gj__network_plan_class_of gives GJ__NETWORK_PLAN_LARGE: a cubin (NVRTC defines the macro of
 * base/cubin_macro.h for gridjit's cubin targets alone) for __CUDA_ARCH__ from
 * GJ__NETWORK_PLAN_LARGE_FROM up to GJ__NETWORK_PLAN_LARGE_UNTIL, the bounds that
 * gj__network_plan_class_of compares with too. False in host code and in any other compiler,
 * so that host code built with nvcc sizes its launches by the plan its device code states
 * (the portable one). */
#define GJ__NETWORK_PLAN_LARGE_FROM 900   /* sm_90 */
#define GJ__NETWORK_PLAN_LARGE_UNTIL 1200 /* sm_120 */
#define GJ__NETWORK_PLAN_TEXT(x) #x
#define GJ__NETWORK_PLAN_NUMBER(x) GJ__NETWORK_PLAN_TEXT(x)
#define GJ__NETWORK_PLAN_LARGE_IF                                                                                      \
    "defined(" GJ__CUBIN_MACRO ") && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= "                                     \
    GJ__NETWORK_PLAN_NUMBER(GJ__NETWORK_PLAN_LARGE_FROM) " && __CUDA_ARCH__ < "                                    \
    GJ__NETWORK_PLAN_NUMBER(GJ__NETWORK_PLAN_LARGE_UNTIL)

/* The plan of layout for architectures of class cls; hints (may be NULL) override its choices
 * where the block they make still fits (GJ__NETWORK_MAX_SMEM). */
void gj__network_plan_make(const gj__network_layout *layout, const gj__network_plan_hints *hints,
                           gj__network_plan_class cls, gj__network_plan *out);

/* The plans of every class (plans: GJ__NETWORK_PLAN_CLASSES of them) of a network alone
 * (feature_bytes 0) or behind an encoding whose features are feature_bytes each (2: fp16, 4:
 * fp32; gj__network_feature_bytes), whose inference kernel may take a wide block and whose
 * kernel over features stages 32 rows of them a warp where it fetches;
 * small_floats: the model's encoding's leading small levels (gj__network_small_floats), which
 * its fused backward may sum in shared memory. */
void gj__network_plans_make(const gj__network_layout *layout, const gj__network_plan_hints *hints,
                            unsigned feature_bytes, uint32_t small_floats, gj__network_plan *plans);

/* Whether two plans make the same kernels and launches (the generated code states one plan
 * for both classes where they agree). */
int gj__network_plan_equal(const gj__network_plan *a, const gj__network_plan *b);

#endif
