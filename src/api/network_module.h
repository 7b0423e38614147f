/*
 * gj_network_module's insides, shared by the files that implement it (docs/networks.md §8-§10):
 *   network_module_api.c   making and destroying a module, its sizes
 *   network_options.c      what its programs are generated with, the measuring knobs it reads
 *   network_programs.c     its programs, made on first use (side by side on threads), and
 *                          gj_network_precompile
 *   network_launch.c       the geometry of its kernels' launches; a model's backward through
 *                          dL/d(features) (the network's kernel, then the encoding module's)
 *   network_passes_api.c   inference, the forward for training, the backward
 *   network_step_api.c     the training step (its own program, or a model's as its passes) and
 *                          Adam
 *   network_step_choice.c  which of the two a model's step runs as
 *   network_backward_choice.c  whether a model's backward runs fused or apart
 *   network_init_api.c     the parameters' initialisation
 *   network_tiers.c        a model's fused backward compiled on a thread behind its first
 *                          steps, which its unfused backward serves meanwhile
 *   network_background.c   that thread, and the waits for it
 * Each program (inference; the forward for training; the backward to the parameters with the
 * zeroing and finishing kernels; the backward with dL/dinput; the training step with its zeroing
 * and Adam) is a user module of the generated unit, made on first use: compiled through the disk
 * cache per architecture by the user-module machinery, which also picks the stream's context and
 * opts into large shared memory. The launch geometry is the block plan the unit states
 * (codegen/network_plan.c). A model's backward with dL/dinput is the network's kernel, which
 * writes dL/d(features) into the module's workspace for the stream's context, then the
 * encoding's own backward with dL/dx through a gj_module of the encoding (made on first use):
 * its level-major kernels took 0.67-0.80 of the time of the fused kernel with the encoding's
 * per-point backward with dL/dx (docs/networks.md §9).
 */
#ifndef GJ_API_NETWORK_MODULE_H
#define GJ_API_NETWORK_MODULE_H

#include "api/context.h"
#include "codegen/network_codegen.h"
#include "compile/network_unit.h"
#include "model/network.h"
#include "runtime/user_module.h"
#include "runtime/workspace.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* A model's inference kernel prefers shared memory for at most half of a multiprocessor's
 * capacity (l1_carveout.h), unless GRIDJIT_NETWORK_CARVEOUT gives a percent (0 ... 100) or -1
 * (the driver's choice): a measuring knob (docs/networks.md §8), read when a module is made. */
#define GJ__NETWORK_CARVEOUT_RULE (-2)

struct gj_network_module;
/* What the thread runs: part's program made, *message a failure's. */
typedef gj_status (*gj__network_make_fn)(struct gj_network_module *m, gj__network_part part, char *message,
                                         size_t message_size);

/* A thread that compiles a program behind the passes (network_background.c): at most one at a time. */
typedef struct gj__network_background {
    pthread_mutex_t lock;
    pthread_cond_t finished;
    int running;            /* the thread compiles part now */
    int joinable;           /* a thread was started and not joined yet */
    uint32_t tried;         /* the parts ever given to a thread (1u << part) */
    gj__network_part part;
    gj__network_make_fn make;
    pthread_t thread;
    CUcontext context;      /* the starting thread's current context, made current on the thread */
    gj_status status;       /* what the last one found (GJ_OK: its program is the module's) */
    char message[GJ__MESSAGE_MAX];
} gj__network_background;

struct gj_network_module {
    gj_context *ctx;
    gj_network *net; /* the module's own copy */
    gj_codegen_options opts;
    gj_codegen_options encoding_opts; /* a model's: what its encoding module is made with */
    gj__network_plan plans[GJ__NETWORK_PLAN_CLASSES]; /* the kernels of each architecture class state theirs */
    pthread_mutex_t lock; /* guards the lazily made programs */
    gj_user_module *programs[GJ__NETWORK_PART_COUNT];
    gj_kernel *kernels[GJ__NK_COUNT];
    /* A model's encoding module (its passes in a model's; made on first use, under encoding_lock:
     * not the programs' lock, which a compile of the network's programs holds throughout). */
    pthread_mutex_t encoding_lock;
    gj_module *encoding_module;
    gj__workspace features;     /* a model's dL/d(features) for it, per context */
    gj__workspace ring;         /* the fused training step's context slots, per context */
    /* blocks of a full wave per class, on the first device of that class launched on (0: not known yet) */
    uint64_t wave[GJ__NETWORK_PLAN_CLASSES][GJ__NK_COUNT];
    uint32_t forward_waves; /* the inference and forward kernels' grid: at most this many waves */
    int carveout;           /* a model's inference kernel (and its forward where it recomputes):
                               GJ__NETWORK_CARVEOUT_RULE, or a percent (-1: the driver's) */
    int carveout_chosen[2]; /* prefer_l1 has run for the inference kernel [0], the forward [1] (for
                               the first class launched), under lock */
    int inference_features; /* a model's inference in two passes (gj__network_inference_features; from
                               gj__network_plans_of when the module is made, not at every inference) */
    int forward_features;   /* its forward for training so (gj__network_forward_features) */
    int fused_backward_knob; /* GRIDJIT_NETWORK_FUSED_BACKWARD: 1 fused, -1 apart, 0 the rule
                                (gj__network_backward_fused) */
    int step_passes_knob;    /* GRIDJIT_NETWORK_STEP_PASSES: 1 a model's step as its passes, -1 its own
                                program, 0 the rule (gj__network_step_as_passes) */
    int64_t l2_bytes;        /* the rule's L2 size: the first device asked's (0: not asked yet; -1:
                                it did not say), under lock */
    int tiers;              /* a model's fused backward compiled behind its first steps (GRIDJIT_NETWORK_TIERS) */
    int tiers_overlap;      /* that thread started before the first call's programs, not after
                               (GRIDJIT_NETWORK_TIERS_OVERLAP) */
    gj__network_background background;
    gj__workspace stream_scratch; /* what the unfused backward and the step as passes keep between
                                     their launches (dL/d(features); the step's outputs, context and
                                     dL/dy too), per stream */
    gj__workspace two_pass_features; /* a forward in two passes: the features between its two kernels,
                                        per stream (not stream_scratch: a step's forward writes its
                                        context there meanwhile) */
};

/* The size of a model's encoding parameter: 2 bytes (fp16) or 4 (fp32). */
static inline size_t gj__network_encoding_param_size(const gj_network_module *m) {
    return gj__network_feature_bytes(m->net);
}

/* Bytes of a model's dL/d(features) (or features) for n points: n x the encoding's outputs, in
 * its precision, feature-major. */
static inline uint64_t gj__network_features_bytes(const gj_network_module *m, uint64_t n) {
    return n * m->net->encoding->layout.n_output_dims * gj__network_encoding_param_size(m);
}

/* Whether the programs of parts are all made (under the module's lock: they are published by
 * other threads). */
static inline int gj__network_made(gj_network_module *m, const gj__network_part *parts, size_t n) {
    pthread_mutex_lock(&m->lock);
    int made = 1;
    for (size_t i = 0; i < n; ++i) {
        made = made && m->programs[parts[i]] != NULL;
    }
    pthread_mutex_unlock(&m->lock);
    return made;
}

/* ---- network_options.c ---- */
/* What a module generates with (and gj_network_precompile, so that their keys agree). */
void gj__network_module_options(gj_codegen_options *opts);
/* What a model's encoding module is made with (and gj_network_precompile compiles). */
gj_status gj__network_encoding_module_options(const gj__diag *diag, const struct gj_network *net,
                                              gj_codegen_options *out);
/* The measuring knobs' overrides of the kernels' block plan (they change the generated code). */
void gj__network_plan_hints_from_env(gj__network_plan_hints *hints);
/* The launch knobs read when a module is made: the forward passes' waves, the carveout rule. */
void gj__network_launch_knobs(uint32_t *forward_waves, int *carveout);
/* Whether a model's module compiles its fused backward behind its first steps: GRIDJIT_NETWORK_TIERS
 * 0 or 1, else where this process may run on at least GJ__NETWORK_TIER_CPUS CPUs. */
#define GJ__NETWORK_TIER_CPUS 6
int gj__network_tiers_from_env(void);
/* GRIDJIT_NETWORK_FUSED_BACKWARD, read when a module is made: 1 a model's backward without
 * dL/dinput always fused, 0 always apart (-1), anything else the rule (0). */
int gj__network_fused_backward_knob_from_env(void);
/* GRIDJIT_NETWORK_STEP_PASSES, read when a module is made: 1 a model's training step always as
 * its passes, 0 always its own program (-1), anything else the rule (0). */
int gj__network_step_passes_knob_from_env(void);
/* GRIDJIT_NETWORK_TIERS_OVERLAP=1: the tiers' thread starts before the passes apart's programs
 * compile (beside them), not after them; anything else, after. */
int gj__network_tiers_overlap_from_env(void);

/* ---- network_programs.c ---- */
/* The programs of parts (n at most GJ__NETWORK_PART_COUNT) and their kernels, each made on
 * first use, side by side on threads; under the module's lock. */
gj_status gj__network_need_parts(gj_network_module *m, const gj__network_part *parts, size_t n, const char *call);
/* A model's encoding module (made on first use); under the module's encoding_lock. */
gj_status gj__network_need_encoding_module(gj_network_module *m, gj_module **out);
/* part's program compiled and loaded on this thread without the module's lock, then the
 * module's (unless one was made meanwhile); cached_only: only from the disk cache, a miss being
 * GJ_ERROR_NOT_FOUND. message (may be NULL): a failure's message (empty for such a miss). */
gj_status gj__network_make_part(gj_network_module *m, gj__network_part part, int cached_only, const char *call,
                                char *message, size_t message_size);
/* gj__network_make_part (not cached_only) with the encoding module's programs for
 * encoding_uses (GJ__NETWORK_ENCODING_*) prepared on a thread beside it; part becomes the
 * module's once both are made. */
gj_status gj__network_make_part_beside_encoding(gj_network_module *m, gj__network_part part, unsigned encoding_uses,
                                                const char *call, char *message, size_t message_size);
/* What a model's passes launch of its encoding module, over feature-major features (or
 * dL/d(features)), in a mask: gj_forward into them (the training step's), gj_backward to the
 * encoding's parameters from them (the unfused backward's and step's, the fused step's). */
#define GJ__NETWORK_ENCODING_FORWARD 1u
#define GJ__NETWORK_ENCODING_BACKWARD 2u
/* The encoding module's programs those launches take (a mask of 1u << gj__part): of each pass,
 * the one form (one level a block, or level groups) that its shape launches, not both. */
uint32_t gj__network_encoding_parts(const gj_module *encoding_module, unsigned uses);
/* The encoding module made, and the programs of parts (on a thread) and the encoding module's
 * programs for encoding_uses (GJ__NETWORK_ENCODING_*) made side by side. */
gj_status gj__network_need_parts_beside_encoding(gj_network_module *m, const gj__network_part *parts, size_t n,
                                                 unsigned encoding_uses, const char *call,
                                                 gj_module **encoding_module);

/* ---- network_background.c ---- */
void gj__network_background_init(gj__network_background *b);
/* Starts a thread running make for part, in the calling thread's current context, unless one
 * runs or part was given to one before. 1: started. */
int gj__network_background_start(gj_network_module *m, gj__network_part part, gj__network_make_fn make);
/* Waits (without the module's lock) for a thread compiling one of parts, if one is. */
void gj__network_background_wait_parts(gj_network_module *m, const gj__network_part *parts, size_t n);
/* Whether a thread compiles part now; whether one compiles any part now; whether one has been
 * given part (now or before). */
int gj__network_background_compiling(gj_network_module *m, gj__network_part part);
int gj__network_background_busy(gj_network_module *m);
int gj__network_background_tried(gj_network_module *m, gj__network_part part);
/* Waits for the thread and joins it (a module being destroyed). */
void gj__network_background_join(gj_network_module *m);

/* ---- network_backward_choice.c ---- */
/* Whether a model's backward without dL/dinput runs as its fused kernel (the backward program):
 * the knob, else where the encoding's gradients are fp16 sums whose tables fit in the L2 of the
 * first device asked (stream's, the first time; gj__network_fused_backward_fits); apart, the
 * network's kernel writing dL/d(features), then the encoding module's level-major backward. 0 for
 * a network alone. */
int gj__network_backward_fused(gj_network_module *m, gj_stream stream, const char *call);
/* The rule: gradient tables of gradient_table_bytes, sums of gradient_size bytes (2 or 4), against
 * an L2 of l2_bytes. */
int gj__network_fused_backward_fits(unsigned gradient_size, uint64_t gradient_table_bytes, uint64_t l2_bytes);

/* ---- network_step_choice.c ---- */
/* Whether a model's training step runs as its passes (the forward for training, the loss as a
 * pass, the backward to the parameters): the knob, else the rule (gj__network_step_passes_fit);
 * else as the step's own program. 0 for a network alone. */
int gj__network_step_as_passes(const gj_network_module *m);
/* The rule: a model (net) that recomputes, whose hidden layers are 64 wide and at least two. */
int gj__network_step_passes_fit(const struct gj_network *net, int recompute);

/* ---- network_tiers.c ---- */
/* The programs of the forward for training, a model's first made as the tiers say: with the
 * fused backward's, or (tiers on, that one not cached) with those of the unfused backward while
 * a thread compiles the fused one. */
gj_status gj__network_need_training(gj_network_module *m, gj_stream stream, const char *call);
/* A model's training step's programs, made as the tiers say: *unfused 0, the fused step's (and
 * Adam's, and the encoding module's forward and backward); 1 (tiers on, the step's program not
 * cached), those of the step served by the passes apart while a thread compiles it. */
gj_status gj__network_need_step(gj_network_module *m, const char *call, gj_module **encoding_module, int *unfused);
/* A model's step as its passes: the forward's program (with the loss kernel) and Adam's, and the
 * backward's as gj__network_need_training makes them: *apart 0, the fused backward's; 1 (the
 * backward runs apart on this device, or its fused program compiles on a thread), those of the
 * network's kernel writing dL/d(features) and the encoding module's backward (*encoding_module). */
gj_status gj__network_need_step_passes(gj_network_module *m, gj_stream stream, const char *call,
                                       gj_module **encoding_module, int *apart);

/* ---- network_launch.c ---- */
/* Launches kernel k over n points with the plan of the code that serves the stream's context;
 * ring (the training step's kernels, else NULL): the argument set to the warps' slots. */
gj_status gj__network_launch_step(gj_network_module *m, gj__network_kernel k, gj_stream stream, uint64_t n,
                                  void **args, void **ring, const char *call);
gj_status gj__network_launch(gj_network_module *m, gj__network_kernel k, gj_stream stream, uint64_t n, void **args,
                             const char *call);
/* The zeroing and finishing kernels' grid-stride loops: at most this many blocks. */
#define GJ__NETWORK_ELEMENTWISE_BLOCKS 1024u
/* Launches elementwise kernel k, a grid-stride loop over items in blocks of 256 threads, at
 * most max_blocks of them (the zeroing and finishing kernels, GJ__NETWORK_ELEMENTWISE_BLOCKS;
 * Adam's). */
gj_status gj__network_launch_elementwise(gj_network_module *m, gj__network_kernel k, gj_stream stream,
                                         uint64_t items, uint32_t max_blocks, void **args);
/* A model's backward through dL/d(features) (docs/networks.md §9): the network's kernel
 * (NAME_backward_input) writes them and adds its gradients, then the encoding module's backward
 * turns them into what is asked of it (its gradients, dL/dx; neither: nothing). */
typedef struct gj__network_features_backward {
    uint64_t n;
    const float *x;
    const void *dL_dy;           /* floats, or fp16 values where dy_half */
    uint32_t dy_half;
    float dy_scale;
    const void *params, *encoding_params, *context;
    float *dL_dparams;           /* added to (zeroed first where overwritten), or NULL */
    void *features;              /* n x the encoding's outputs, its precision: a workspace */
    gj_module *encoding_module;
    void *dL_dencoding_params;   /* or NULL */
    gj_grad_mode encoding_mode;
    float *dL_dx;                /* or NULL */
} gj__network_features_backward;
gj_status gj__network_backward_through_features(gj_network_module *m, gj_stream stream,
                                                const gj__network_features_backward *b, const char *call);
/* The same backward to the parameters in the fused kernel (NAME_backward, its program made):
 * b's features, encoding_module, encoding_mode and dL_dx unused; its gradients added to (the
 * caller zeroes what is overwritten). */
gj_status gj__network_backward_fused_launch(gj_network_module *m, gj_stream stream,
                                            const gj__network_features_backward *b, const char *call);
/* The encoding module's backward from dL/d(features) (feature-major, n points): its gradients
 * (or NULL) as mode says, dL/dx (or NULL). */
gj_status gj__network_encoding_backward(gj_module *encoding_module, gj_stream stream, uint64_t n, const float *x,
                                        const void *encoding_params, const void *features, void *dL_dparams,
                                        gj_grad_mode mode, float *dL_dx);
/* Zeroes bytes (a multiple of 4) at p on stream with zeroing kernel k (the backward program's
 * or the training step program's). */
gj_status gj__network_zero_with(gj_network_module *m, gj__network_kernel k, gj_stream stream, void *p,
                                uint64_t bytes);

/* ---- network_two_passes.c ---- */
/* Where a forward pass writes its outputs (gj_network_pass_desc's output or output_fp16): n x the
 * output width of floats, or of fp16 values where half (the kernels' y_half argument). */
typedef struct gj__network_out {
    void *p;
    uint32_t half;
} gj__network_out;

/* A model's forward pass in two: the encoding module's forward into features (feature-major, a
 * buffer of the stream's), then kernel (GJ__NK_INFERENCE_FEATURES, or GJ__NK_FORWARD_FEATURES
 * writing the context) over them, chunk by chunk on the caller's stream. */
typedef struct gj__network_two_passes {
    gj__network_kernel kernel;
    uint64_t n;
    const float *x;
    gj__network_out y;
    const void *params, *encoding_params;
    void *context; /* the forward for training's, else NULL */
} gj__network_two_passes;
gj_status gj__network_two_passes_run(gj_network_module *m, gj_module *encoding_module, gj_stream stream,
                                     const gj__network_two_passes *t, const char *call);
/* A model's forward for training (its programs made): NAME_forward, or in two passes where
 * m->forward_features. */
gj_status gj__network_model_forward(gj_network_module *m, gj_stream stream, uint64_t n, const float *x, gj__network_out y,
                                    const void *params, const void *encoding_params, void *context,
                                    const char *call);

#endif
