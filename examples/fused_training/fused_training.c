/* fused_training: fitting a picture with a hash grid (fp16 parameters) and a 64-neuron MLP,
 * in three pipelines:
 *
 *   module (--pipeline module, first): gridjit's network module of the model (the encoding
 *     and a FullyFusedMLP, kernels gridjit generates for the configuration):
 *     gj_network_train_step (forward, L2 loss, backward) and gj_network_adam_step.
 *   fused (--pipeline fused), this file's kernel (fused_training.cu) with the MLP written by
 *     hand (common/mlp.cuh): one kernel for the encoding's forward, the MLP's forward and
 *     backward and dL/dfeatures (feature-major); gridjit's level-major backward kernel
 *     (gj_backward) for the encoding's parameter gradients; Adam.
 *   fully fused (--pipeline fully-fused): one kernel of this file for everything, the
 *     encoding's backward through its device function grid_bwd; Adam.
 *
 * All three train the same parameter buffers (the module's weights are in tiny-cuda-nn's
 * layout, which is the hand-written MLP's too).
 *
 *   fused_training [--steps N] [--batch-log2 B] [--out-dir DIR] [--warps W]
 *                  [--pipeline module|fused|fully-fused|all]
 *   fused_training --bench [--points N] [--warps W] [--infer-warps W]
 *
 * Without a GPU it compiles the kernels for sm_90, and the module's programs, and says that
 * nothing ran (with --bench it also prints the cold compile time of each of this file's
 * programs).
 *
 * With one it first checks the kernels: the mma fragment layouts against the CPU, the
 * MLP's backward (weight gradients, dL/dfeatures) against a CPU reference, and one step of
 * each pipeline against the unfused pipeline (gridjit's forward -> MLP forward -> MLP
 * backward -> gridjit's backward). Then, for each pipeline asked for (all by default), it
 * trains a 2-D picture with sharp edges (2^18 random samples per step), prints the loss,
 * asserts that the picture's error fell below a threshold, and writes the target and the
 * learned picture side by side (module_training.ppm and .png; fused_training.*;
 * fully_fused_training.*).
 *
 * --bench prints one JSON line: inference (module, fused, unfused), a training step
 * (module, fused, fully fused, unfused; forward, backward and Adam) and the
 * forward+backward alone on 2^21 points of tiny-cuda-nn's default HashGrid (3-D), medians
 * of 25 runs after 5 warm-ups, and the cold compile times (gridjit's disk cache off,
 * CUDA_CACHE_DISABLE=1) of the fused programs and of the module's first inference and
 * first step. */
#define _POSIX_C_SOURCE 200809L
#include "example.h"
#include "inference.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char ex_fused_training_cu[];

/* The modes of train<MODE> (fused_training.cu). */
enum { FUSED = 0, MLP_BWD = 1, RENDER = 2, MLP_FWD = 3, FULLY_FUSED = 4, N_MODES = 5 };
/* The training pipelines: the two of this file's kernels (where the encoding's backward runs),
 * and gridjit's network module of the same model (kernels gridjit generates). The first
 * N_KERNEL_PIPES have programs of their own. */
typedef enum pipeline { PIPE_FUSED = 0, PIPE_FULLY_FUSED = 1, PIPE_MODULE = 2, N_PIPES = 3 } pipeline;
enum { N_KERNEL_PIPES = 2 };
static const char *const pipe_option[N_PIPES] = {"fused", "fully-fused", "module"}; /* --pipeline */
static const char *const pipe_name[N_PIPES] = {"fused", "fully_fused", "module"};
static const int pipe_mode[N_KERNEL_PIPES] = {FUSED, FULLY_FUSED};
#define LOSS_SCALE 4096.0f /* the gradients are computed for LOSS_SCALE x the mean loss (fp16 range) */
#define N_CHANNELS 3

/* Mirrors TrainArgs and AdamArgs of fused_training.cu (same order, same C layout). */
typedef struct train_args {
    const float *x;
    const void *params;
    void *grid_grad;
    const uint16_t *features;
    uint16_t *dL_dfeatures;
    const uint16_t *weights;
    float *weight_grad;
    const float *targets;
    uint16_t *y;
    float *loss_sum;
    float grad_scale;
    uint64_t n;
    int features_soa;
} train_args;

typedef struct adam_args {
    uint16_t *params;
    float *master, *m, *v;
    void *grad;
    int grad_is_half;
    int zero_grad;
    uint64_t n;
    float lr, beta1, beta2, epsilon;
    float inv_grad_scale;
    float bias1, bias2;
} adam_args;

/* Shared memory of train<MODE> (fused_training.cu: shared_bytes<MODE>()): the weights, and
 * per warp 32 rows of features (80 bytes), for the backward modes also of the hidden
 * activations and deltas (4 x 144 bytes) and the output deltas (48 bytes). */
static uint32_t train_shared(int mode, int warps) {
    const int backward = mode == FUSED || mode == FULLY_FUSED || mode == MLP_BWD;
    return EX_WEIGHTS_SHARED + (uint32_t)warps * 32u * (backward ? 80u + 4u * 144u + 48u : 80u);
}

/* The kernel programs, each compiled on its own (one NVRTC call, one cache entry): a
 * pipeline's program holds its training kernel and Adam, nothing else, so that the default
 * pipeline never compiles grid_bwd; the support program holds the unfused MLP kernels,
 * rendering, sampling and the fragment check. */
typedef struct trainer {
    int dims, warps;
    int use[N_PIPES]; /* the pipelines to compile and load */
    uint64_t n, n_params; /* batch size; the encoding's parameters */
    gj_encoding *enc;
    gj_module *module; /* gridjit's own kernels (the unfused pipeline, the fused pipeline's backward, init) */
    ex_program pipe_program[N_KERNEL_PIPES], support_program;
    gj_user_module *pipe_module[N_KERNEL_PIPES], *support_module;
    gj_kernel *train[N_MODES], *adam[N_KERNEL_PIPES], *sample, *selftest;
    /* The module pipeline: the model (this encoding, the MLP as a FullyFusedMLP with 3 outputs,
     * padded to 16: the same weights) and its module, training the same parameter buffers. */
    gj_network *model;
    gj_network_module *model_module;
    void *model_grid_grad;              /* its encoding gradients: grid_grad where they are fp16 */
    uint32_t *param_steps, *weight_steps; /* its Adam's per-parameter step counts */
    float *model_loss;                  /* the mean loss of its last step */
    void *model_y;                      /* rendered outputs (n x 3 fp16 values) */
    uint32_t grid[N_MODES];
    /* device memory */
    float *x, *targets, *loss;
    uint16_t *params, *grid_grad, *weights, *features, *dL_dfeatures, *y;
    float *params_master, *params_m, *params_v;
    float *weights_master, *weights_m, *weights_v, *weight_grad;
    int step;
    float lr, grad_scale;
    int soa; /* the unfused pipeline's feature layout: 0 point-major (AoS), 1 feature-major (SoA) */
} trainer;


static void make_programs(trainer *t) {
    /* The fused pipeline: its header holds the encoding's forward device function only. */
    ex_program *p = &t->pipe_program[PIPE_FUSED];
    ex_program_init(p, "fused_training.cu", ex_fused_training_cu, t->enc);
    ex_program_passes(p, GJ_PASS_FORWARD);
    ex_program_kernel(p, "train<0>");
    ex_program_kernel(p, "adam<0>");
    ex_program_define(p, "EX_WARPS", t->warps);
    /* The fully fused pipeline: forward and backward device functions. */
    p = &t->pipe_program[PIPE_FULLY_FUSED];
    ex_program_init(p, "fused_training.cu", ex_fused_training_cu, t->enc);
    ex_program_passes(p, GJ_PASS_FORWARD | GJ_PASS_BACKWARD);
    ex_program_kernel(p, "train<4>");
    ex_program_kernel(p, "adam<0>");
    ex_program_define(p, "EX_WARPS", t->warps);
    ex_program_define(p, "EX_FULLY_FUSED", 1);
    p = &t->support_program;
    ex_program_init(p, "fused_training.cu", ex_fused_training_cu, t->enc);
    ex_program_passes(p, GJ_PASS_FORWARD);
    ex_program_kernel(p, "train<1>");
    ex_program_kernel(p, "train<3>");
    ex_program_kernel(p, "train<2>");
    ex_program_kernel(p, "sample<0>");
    ex_program_kernel(p, "selftest<0>");
    ex_program_define(p, "EX_WARPS", t->warps);
}

static void trainer_create(trainer *t, int dims, uint64_t n, int warps, const int use[N_PIPES]) {
    memset(t, 0, sizeof *t);
    t->dims = dims;
    t->n = n;
    t->warps = warps;
    for (int q = 0; q < N_PIPES; ++q) {
        t->use[q] = use[q];
    }
    t->lr = 1e-2f;
    t->grad_scale = LOSS_SCALE * 2.0f / (float)(N_CHANNELS * n);
    EX_CHECK(gj_encoding_create(ex_ctx, EX_HASHGRID, (uint32_t)dims, &t->enc));
    t->n_params = gj_encoding_n_params(t->enc);
    if (t->n_params % 4) {
        ex_fail("Adam takes the parameters four at a time: %llu is not a multiple of 4", (unsigned long long)t->n_params);
    }
    make_programs(t);
    t->model = ex_model_create(dims, N_CHANNELS);
}

static void trainer_load(trainer *t) {
    EX_CHECK(gj_module_create(ex_ctx, t->enc, NULL, &t->module));
    t->support_module = ex_module(&t->support_program);
    t->train[MLP_BWD] = ex_kernel(t->support_module, "train<1>");
    t->train[MLP_FWD] = ex_kernel(t->support_module, "train<3>");
    t->train[RENDER] = ex_kernel(t->support_module, "train<2>");
    t->sample = ex_kernel(t->support_module, "sample<0>");
    t->selftest = ex_kernel(t->support_module, "selftest<0>");
    for (int q = 0; q < N_KERNEL_PIPES; ++q) {
        if (t->use[q]) {
            t->pipe_module[q] = ex_module(&t->pipe_program[q]);
            t->train[pipe_mode[q]] = ex_kernel(t->pipe_module[q], t->pipe_program[q].kernels[0]);
            t->adam[q] = ex_kernel(t->pipe_module[q], "adam<0>");
        }
    }
    const uint64_t blocks = ((t->n + 31) / 32 + (uint64_t)t->warps - 1) / (uint64_t)t->warps;
    for (int mode = 0; mode < N_MODES; ++mode) {
        if (t->train[mode]) {
            t->grid[mode] = ex_persistent_grid(t->train[mode], 32u * (uint32_t)t->warps,
                                               train_shared(mode, t->warps), blocks);
        }
    }
    const uint64_t n = t->n, np = t->n_params;
    t->x = ex_alloc(n * (uint64_t)t->dims * sizeof(float));
    t->targets = ex_alloc(n * N_CHANNELS * sizeof(float));
    t->loss = ex_alloc_zero(sizeof(float));
    t->params = ex_alloc(np * 2);
    t->params_master = ex_alloc(np * 4);
    t->params_m = ex_alloc_zero(np * 4);
    t->params_v = ex_alloc_zero(np * 4);
    t->grid_grad = ex_alloc_zero(np * 2);
    t->weights = ex_alloc(EX_N_WEIGHTS * 2);
    t->weights_master = ex_alloc(EX_N_WEIGHTS * 4);
    t->weights_m = ex_alloc_zero(EX_N_WEIGHTS * 4);
    t->weights_v = ex_alloc_zero(EX_N_WEIGHTS * 4);
    t->weight_grad = ex_alloc_zero(EX_N_WEIGHTS * 4);
    t->features = ex_alloc(n * EX_IN * 2);
    t->dL_dfeatures = ex_alloc(n * EX_IN * 2);
    t->y = ex_alloc(n * EX_OUT * 2);
    if (t->use[PIPE_MODULE]) {
        EX_CHECK(gj_network_module_create(ex_ctx, t->model, &t->model_module));
        const size_t grad_size = gj_network_module_encoding_gradient_size(t->model_module);
        t->model_grid_grad = grad_size == 2 ? (void *)t->grid_grad : ex_alloc_zero(np * grad_size);
        t->param_steps = ex_alloc_zero(np * 4);
        t->weight_steps = ex_alloc_zero(EX_N_WEIGHTS * 4);
        t->model_loss = ex_alloc_zero(sizeof(float));
        t->model_y = ex_alloc(n * N_CHANNELS * sizeof(uint16_t));
    }
}

/* Parameters: gridjit's initialiser (uniform in +-1e-4 x scale), weights Xavier-uniform;
 * fresh Adam moments and zero gradients. */
static void trainer_init_params(trainer *t, float scale, uint64_t seed) {
    gj_init_desc init;
    gj_init_desc_init(&init);
    init.params = t->params;
    init.params_fp32 = t->params_master;
    init.seed = seed;
    init.scale = scale;
    EX_CHECK(gj_init_params(t->module, NULL, &init));
    float w[EX_N_WEIGHTS];
    uint16_t w_half[EX_N_WEIGHTS];
    ex_init_weights(w, w_half, seed + 1);
    ex_upload(t->weights, w_half, sizeof w_half);
    ex_upload(t->weights_master, w, sizeof w);
    ex_zero(t->params_m, t->n_params * 4);
    ex_zero(t->params_v, t->n_params * 4);
    ex_zero(t->grid_grad, t->n_params * 2);
    ex_zero(t->weights_m, EX_N_WEIGHTS * 4);
    ex_zero(t->weights_v, EX_N_WEIGHTS * 4);
    ex_zero(t->weight_grad, EX_N_WEIGHTS * 4);
    if (t->model_module) {
        ex_zero(t->param_steps, t->n_params * 4);
        ex_zero(t->weight_steps, EX_N_WEIGHTS * 4);
    }
    t->step = 0;
}

static void sample(trainer *t, uint64_t n, uint32_t seed, uint32_t width) {
    void *args[] = {&t->x, &t->targets, &n, &seed, &width};
    ex_launch(t->sample, (uint32_t)((n + 255) / 256), 256, 0, args);
}

static void launch_train(trainer *t, int mode, uint64_t n, float grad_scale) {
    train_args a = {t->x,           t->params,  t->grid_grad, t->features, t->dL_dfeatures, t->weights,
                    t->weight_grad, t->targets, t->y,         t->loss,     grad_scale,       n, t->soa};
    void *args[] = {&a};
    ex_launch(t->train[mode], t->grid[mode], 32u * (uint32_t)t->warps, train_shared(mode, t->warps), args);
}

static void gridjit_forward(trainer *t, uint64_t n) {
    ex_forward(t->module, n, t->x, t->params, t->features, t->soa);
}

/* The encoding's parameter gradients from dL/dfeatures by gridjit's backward kernel:
 * level-major (each block one level of a range of points, the small levels summed in
 * shared memory), so that one level's parameters and gradients are hot in L2 at a time. */
static void gridjit_backward(trainer *t, uint64_t n, gj_data_layout layout, gj_grad_mode mode) {
    gj_backward_desc desc;
    gj_backward_desc_init(&desc);
    desc.n = n;
    desc.x = t->x;
    desc.params = t->params;
    desc.dL_dy = t->dL_dfeatures;
    desc.dL_dy_layout = layout;
    desc.dL_dparams = t->grid_grad;
    desc.dL_dparams_mode = mode;
    EX_CHECK(gj_backward(t->module, NULL, &desc));
}

/* Adam on both parameter sets with the kernel of pipeline q (the unfused pipeline takes the
 * default one's). zero_grid_grad: 0 where the next step overwrites the encoding's
 * gradients (the fused pipeline's gj_backward), so that nothing zeroes them twice. The
 * MLP's weight gradients always come by atomics and are always zeroed. */
static void adam(trainer *t, pipeline q, int zero_grid_grad) {
    t->step++;
    adam_args a = {t->params, t->params_master, t->params_m, t->params_v, t->grid_grad, 1, zero_grid_grad,
                   t->n_params, t->lr, 0.9f, 0.99f, 1e-15f, 1.0f / LOSS_SCALE,
                   (float)(1.0 / (1.0 - pow(0.9, t->step))), (float)(1.0 / (1.0 - pow(0.99, t->step)))};
    void *args[] = {&a};
    ex_launch(t->adam[q], (uint32_t)((t->n_params / 4 + 255) / 256), 256, 0, args); /* 4 parameters per thread */
    adam_args b = a;
    b.params = t->weights;
    b.master = t->weights_master;
    b.m = t->weights_m;
    b.v = t->weights_v;
    b.grad = t->weight_grad;
    b.grad_is_half = 0;
    b.zero_grad = 1;
    b.n = EX_N_WEIGHTS;
    args[0] = &b;
    ex_launch(t->adam[q], (EX_N_WEIGHTS / 4 + 255) / 256, 256, 0, args);
}

/* The default pipeline's forward and backward: the fused kernel (encoding forward, MLP,
 * loss, MLP backward, dL/dfeatures feature-major), then gridjit's backward kernel for the
 * encoding's parameter gradients (overwritten: no zeroing needed before the step). */
static void fused_forward_backward_n(trainer *t, uint64_t n, float grad_scale) {
    launch_train(t, FUSED, n, grad_scale);
    gridjit_backward(t, n, GJ_LAYOUT_SOA, GJ_GRAD_OVERWRITE);
}

static void fused_forward_backward(void *user) {
    trainer *t = user;
    fused_forward_backward_n(t, t->n, t->grad_scale);
}

/* Its two parts, timed apart by --bench. */
static void fused_kernel_only(void *user) {
    trainer *t = user;
    launch_train(t, FUSED, t->n, t->grad_scale);
}

static void fused_encoding_backward_only(void *user) {
    trainer *t = user;
    gridjit_backward(t, t->n, GJ_LAYOUT_SOA, GJ_GRAD_OVERWRITE);
}

static void fused_step(void *user) {
    fused_forward_backward(user);
    adam(user, PIPE_FUSED, 0);
}

/* Forward and backward of everything in one kernel (grid_bwd adds to the gradients, which
 * Adam zeroes). */
static void fully_fused_forward_backward(void *user) {
    trainer *t = user;
    launch_train(t, FULLY_FUSED, t->n, t->grad_scale);
}

static void fully_fused_step(void *user) {
    fully_fused_forward_backward(user);
    adam(user, PIPE_FULLY_FUSED, 1);
}

/* The module pipeline's forward, loss and backward: gj_network_train_step (the model's kernels:
 * the encoding's forward and the network in one kernel, the loss, the backward to both parts'
 * parameters; the gradients overwritten, of the loss times loss_scale). grad_scale as the
 * kernels above take it: dL/dout = grad_scale (out - target), i.e. a loss scale of
 * grad_scale * N_CHANNELS * n / 2 on tiny-cuda-nn's L2 loss (mean over the n x 3 values). */
static void model_forward_backward_n(trainer *t, uint64_t n, float grad_scale) {
    gj_network_train_desc d;
    gj_network_train_desc_init(&d);
    d.n = n;
    d.input = t->x;
    d.target = t->targets;
    d.params = t->weights;
    d.encoding_params = t->params;
    d.loss_scale = grad_scale * (float)(N_CHANNELS * n) / 2.0f;
    d.dL_dparams = t->weight_grad;
    d.dL_dencoding_params = t->model_grid_grad;
    d.loss = t->model_loss;
    EX_CHECK(gj_network_train_step(t->model_module, NULL, &d));
}

static void model_forward_backward(void *user) {
    trainer *t = user;
    model_forward_backward_n(t, t->n, t->grad_scale);
}

/* The module's Adam: tiny-cuda-nn's (a step count per parameter; an encoding parameter without
 * gradient left as it is), with this file's hyperparameters and no L2 regularisation. */
static void model_adam(trainer *t) {
    gj_network_adam_desc a;
    gj_network_adam_desc_init(&a);
    a.learning_rate = t->lr;
    a.beta1 = 0.9f;
    a.beta2 = 0.99f;
    a.epsilon = 1e-15f;
    a.l2_reg = 0.0f;
    a.loss_scale = LOSS_SCALE;
    a.params = t->weights;
    a.params_fp32 = t->weights_master;
    a.first_moments = t->weights_m;
    a.second_moments = t->weights_v;
    a.steps = t->weight_steps;
    a.dL_dparams = t->weight_grad;
    a.encoding_params = t->params;
    a.encoding_params_fp32 = t->params_master;
    a.encoding_first_moments = t->params_m;
    a.encoding_second_moments = t->params_v;
    a.encoding_steps = t->param_steps;
    a.dL_dencoding_params = t->model_grid_grad;
    EX_CHECK(gj_network_adam_step(t->model_module, NULL, &a));
}

static void model_step(void *user) {
    model_forward_backward(user);
    model_adam(user);
}

/* The step of each pipeline (for the demo) and what it runs. */
static const ex_work_fn pipe_step[N_PIPES] = {fused_step, fully_fused_step, model_step};
static const char *const pipe_step_name[N_PIPES] = {"fused kernel + gj_backward", "fully fused kernel",
                                                    "gj_network_train_step + gj_network_adam_step"};

/* The same with gridjit's kernels around the MLP's (features in global memory). */
static void unfused_forward_backward_n(trainer *t, uint64_t n, float grad_scale) {
    gridjit_forward(t, n);
    launch_train(t, MLP_FWD, n, grad_scale);
    launch_train(t, MLP_BWD, n, grad_scale);
    /* Accumulating: Adam zeroes the gradients it reads. */
    gridjit_backward(t, n, t->soa ? GJ_LAYOUT_SOA : GJ_LAYOUT_AOS, GJ_GRAD_ACCUMULATE);
}

static void unfused_forward_backward(void *user) {
    trainer *t = user;
    unfused_forward_backward_n(t, t->n, t->grad_scale);
}

static void unfused_step(void *user) {
    trainer *t = user;
    unfused_forward_backward(t);
    adam(t, t->use[PIPE_FUSED] ? PIPE_FUSED : PIPE_FULLY_FUSED, 1); /* whichever Adam is loaded */
}

static float read_loss(trainer *t, uint64_t n) { /* the mean squared error accumulated since zeroed */
    float sum = 0.0f;
    ex_download(&sum, t->loss, sizeof sum);
    return sum / (float)(N_CHANNELS * n);
}

/* The mean squared error of pipeline q's last step (the module writes it; the kernels add to t->loss). */
static float read_pipe_loss(trainer *t, pipeline q, uint64_t n) {
    float mean = 0.0f;
    if (q == PIPE_MODULE) {
        ex_download(&mean, t->model_loss, sizeof mean);
        return mean;
    }
    return read_loss(t, n);
}

static void trainer_destroy(trainer *t) {
    if (t->model_grid_grad != t->grid_grad) {
        gj_device_free(ex_ctx, t->model_grid_grad);
    }
    void *model_buffers[] = {t->param_steps, t->weight_steps, t->model_loss, t->model_y};
    for (size_t i = 0; i < sizeof model_buffers / sizeof model_buffers[0]; ++i) {
        gj_device_free(ex_ctx, model_buffers[i]);
    }
    gj_network_module_destroy(t->model_module);
    gj_network_destroy(t->model);
    void *buffers[] = {t->x,        t->targets,        t->loss,           t->params,      t->grid_grad,
                       t->weights,  t->features,       t->dL_dfeatures,   t->y,           t->params_master,
                       t->params_m, t->params_v,       t->weights_master, t->weights_m,   t->weights_v,
                       t->weight_grad};
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; ++i) {
        gj_device_free(ex_ctx, buffers[i]);
    }
    for (int q = 0; q < N_KERNEL_PIPES; ++q) {
        gj_user_module_destroy(t->pipe_module[q]);
        ex_program_free(&t->pipe_program[q]);
    }
    gj_user_module_destroy(t->support_module);
    ex_program_free(&t->support_program);
    gj_module_destroy(t->module);
    gj_encoding_destroy(t->enc);
}

/* ------------------------------------------------------------------ checks */
/* 1. The fragment layouts: A . B through each way mlp.cuh loads operands, and C repacked. */
static void check_fragments(trainer *t) {
    uint16_t in[1024];
    float values[1024], expect[256], out[5 * 256];
    for (int i = 0; i < 1024; ++i) {
        values[i] = (float)((int)((i * 37u + 11u) % 17u) - 8) / 8.0f; /* exact products and sums */
    }
    gj_floats_to_halves(values, in, 1024);
    for (int r = 0; r < 16; ++r) {
        for (int c = 0; c < 16; ++c) {
            double s = 0.0;
            for (int k = 0; k < 32; ++k) {
                s += (double)values[r * 32 + k] * values[512 + k * 16 + c];
            }
            expect[r * 16 + c] = (float)s;
        }
    }
    uint16_t *d_in = ex_alloc(sizeof in);
    float *d_out = ex_alloc(sizeof out);
    ex_upload(d_in, in, sizeof in);
    void *args[] = {&d_in, &d_out};
    ex_launch(t->selftest, 1, 32, 0, args);
    ex_download(out, d_out, sizeof out);
    static const char *const ways[5] = {"ldmatrix A, ldmatrix B (weights)", "ldmatrix.trans A, ldmatrix B",
                                        "ldmatrix A, ldmatrix.trans B", "ldmatrix.trans A and B",
                                        "accumulators repacked as fp16 A fragments"};
    for (int way = 0; way < 5; ++way) {
        for (int e = 0; e < 256; ++e) {
            const float want = way < 4 ? expect[e] : ex_round_half(expect[e]);
            if (out[way * 256 + e] != want) {
                ex_fail("fragment check (%s): element (%d, %d) is %g, expected %g", ways[way], e / 16, e % 16,
                        out[way * 256 + e], want);
            }
        }
    }
    printf("check 1: mma fragment layouts (5 ways of loading and storing tiles) agree with the CPU exactly\n");
    gj_device_free(ex_ctx, d_in);
    gj_device_free(ex_ctx, d_out);
}

/* 2. The MLP's backward (unfused kernel) against the CPU on n points, gradient scale 1. */
static void check_mlp_backward(trainer *t, uint64_t n) {
    sample(t, n, 99, 0);
    gridjit_forward(t, n);
    launch_train(t, MLP_FWD, n, 1.0f);
    ex_zero(t->weight_grad, EX_N_WEIGHTS * 4);
    ex_zero(t->loss, 4);
    launch_train(t, MLP_BWD, n, 1.0f);
    EX_CHECK(gj_stream_synchronize(ex_ctx, NULL));

    uint16_t *features = malloc(n * EX_IN * 2), *dfeat = malloc(n * EX_IN * 2), *y = malloc(n * EX_OUT * 2);
    float *targets = malloc(n * N_CHANNELS * 4), *grad = malloc(EX_N_WEIGHTS * 4), w[EX_N_WEIGHTS];
    double *cpu_grad = calloc(EX_N_WEIGHTS, sizeof *cpu_grad);
    uint16_t w_half[EX_N_WEIGHTS];
    if (!features || !dfeat || !y || !targets || !grad || !cpu_grad) {
        ex_fail("out of host memory");
    }
    ex_download(features, t->features, n * EX_IN * 2);
    ex_download(dfeat, t->dL_dfeatures, n * EX_IN * 2);
    ex_download(y, t->y, n * EX_OUT * 2);
    ex_download(targets, t->targets, n * N_CHANNELS * 4);
    ex_download(grad, t->weight_grad, EX_N_WEIGHTS * 4);
    ex_download(w_half, t->weights, sizeof w_half);
    gj_halves_to_floats(w_half, w, EX_N_WEIGHTS);
    float gpu_loss = 0.0f;
    ex_download(&gpu_loss, t->loss, 4);

    double loss = 0.0, max_dx = 0.0, max_dx_diff = 0.0, max_out_diff = 0.0, max_out = 0.0;
    for (uint64_t i = 0; i < n; ++i) {
        float x[EX_IN], h1[EX_HID], h2[EX_HID], out[EX_OUT], d_out[EX_OUT] = {0}, d2[EX_HID], d1[EX_HID];
        gj_halves_to_floats(features + i * EX_IN, x, EX_IN);
        ex_mlp_forward_cpu(w, x, h1, h2, out);
        for (int o = 0; o < EX_OUT; ++o) {
            const float got = ex_half_to_float(y[i * EX_OUT + o]);
            max_out_diff = fmax(max_out_diff, fabs(got - out[o]));
            max_out = fmax(max_out, fabs(out[o]));
        }
        for (int c = 0; c < N_CHANNELS; ++c) { /* the backward kernel takes the stored fp16 outputs */
            const float diff = ex_half_to_float(y[i * EX_OUT + c]) - targets[i * N_CHANNELS + c];
            loss += (double)diff * diff;
            d_out[c] = ex_round_half(diff);
        }
        for (int k = 0; k < EX_HID; ++k) {
            double s = 0.0;
            for (int o = 0; o < EX_OUT; ++o) s += (double)d_out[o] * w[EX_W2 + o * EX_HID + k];
            d2[k] = h2[k] > 0.0f ? ex_round_half((float)s) : 0.0f;
        }
        for (int k = 0; k < EX_HID; ++k) {
            double s = 0.0;
            for (int m = 0; m < EX_HID; ++m) s += (double)d2[m] * w[EX_W1 + m * EX_HID + k];
            d1[k] = h1[k] > 0.0f ? ex_round_half((float)s) : 0.0f;
        }
        for (int k = 0; k < EX_IN; ++k) {
            double s = 0.0;
            for (int m = 0; m < EX_HID; ++m) s += (double)d1[m] * w[EX_W0 + m * EX_IN + k];
            max_dx = fmax(max_dx, fabs(s));
            max_dx_diff = fmax(max_dx_diff, fabs(ex_half_to_float(dfeat[i * EX_IN + k]) - s));
        }
        for (int o = 0; o < EX_OUT; ++o)
            for (int k = 0; k < EX_HID; ++k) cpu_grad[EX_W2 + o * EX_HID + k] += (double)d_out[o] * h2[k];
        for (int m = 0; m < EX_HID; ++m)
            for (int k = 0; k < EX_HID; ++k) cpu_grad[EX_W1 + m * EX_HID + k] += (double)d2[m] * h1[k];
        for (int m = 0; m < EX_HID; ++m)
            for (int k = 0; k < EX_IN; ++k) cpu_grad[EX_W0 + m * EX_IN + k] += (double)d1[m] * x[k];
    }
    static const char *const names[3] = {"dW0", "dW1", "dW2"};
    static const int range[4] = {EX_W0, EX_W1, EX_W2, EX_N_WEIGHTS};
    char report[256] = "";
    for (int l = 0; l < 3; ++l) {
        double max_g = 0.0, max_diff = 0.0;
        for (int i = range[l]; i < range[l + 1]; ++i) {
            max_g = fmax(max_g, fabs(cpu_grad[i]));
            max_diff = fmax(max_diff, fabs(grad[i] - cpu_grad[i]));
        }
        snprintf(report + strlen(report), sizeof report - strlen(report), "%s %.2g/%.2g, ", names[l], max_diff, max_g);
        if (!(max_diff <= 1e-2 * max_g)) {
            ex_fail("weight gradient %s: GPU and CPU differ by up to %g (largest %g)", names[l], max_diff, max_g);
        }
    }
    printf("check 2: MLP kernels vs CPU on %llu points: outputs %.2g/%.2g, dL/dfeatures %.2g/%.2g, %sloss %.6g/%.6g "
           "(max |diff| / max |value|)\n",
           (unsigned long long)n, max_out_diff, max_out, max_dx_diff, max_dx, report, (double)gpu_loss, loss);
    if (!(max_out_diff <= 1e-2 * max_out) || !(max_dx_diff <= 1e-2 * max_dx) ||
        !(fabs(gpu_loss - loss) <= 1e-3 * loss)) {
        ex_fail("the MLP kernels disagree with the CPU");
    }
    free(features);
    free(dfeat);
    free(y);
    free(targets);
    free(grad);
    free(cpu_grad);
}

static double relative_l2(const float *a, const float *b, size_t n) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; ++i) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* 3. One forward+backward of each fused pipeline against the unfused pipeline (point-major
 *    features, the reference), on the same points; and the unfused pipeline with
 *    feature-major features, which must agree with it almost exactly. */
enum { RUN_UNFUSED, RUN_UNFUSED_SOA, RUN_FUSED, RUN_FULLY_FUSED, RUN_MODULE, N_RUNS };

static void check_fused_vs_unfused(trainer *t, uint64_t n, float grad_scale) {
    static const char *const run_name[N_RUNS] = {"unfused", "unfused with feature-major features", "fused",
                                                 "fully fused", "network module"};
    const size_t np = t->n_params;
    uint16_t *gh = malloc(np * 2);
    float *grid[N_RUNS], w[N_RUNS][EX_N_WEIGHTS], loss[N_RUNS];
    const int ran[N_RUNS] = {1, 1, t->use[PIPE_FUSED], t->use[PIPE_FULLY_FUSED], t->use[PIPE_MODULE]};
    /* The module's encoding gradients: fp16 in grid_grad, or fp32 in a buffer of their own. */
    const int model_fp32 = t->use[PIPE_MODULE] && t->model_grid_grad != (void *)t->grid_grad;
    for (int r = 0; r < N_RUNS; ++r) {
        grid[r] = malloc(np * 4);
        if (!grid[r]) {
            ex_fail("out of host memory");
        }
    }
    if (!gh) {
        ex_fail("out of host memory");
    }
    sample(t, n, 1234, 0);
    for (int r = 0; r < N_RUNS; ++r) {
        if (!ran[r]) {
            continue;
        }
        /* The fused pipeline and the module overwrite the encoding's gradients: they get ones
         * there (which would show), the others, which add to them, zeros. */
        if (r == RUN_MODULE && model_fp32) {
            for (size_t i = 0; i < np; ++i) {
                grid[r][i] = 1.0f; /* the run's buffer, read back into after the run */
            }
            ex_upload(t->model_grid_grad, grid[r], np * 4);
        } else if (r == RUN_FUSED || r == RUN_MODULE) {
            for (size_t i = 0; i < np; ++i) {
                gh[i] = 0x3c00u; /* 1.0 in fp16 */
            }
            ex_upload(t->grid_grad, gh, np * 2);
        } else {
            ex_zero(t->grid_grad, np * 2);
        }
        ex_zero(t->weight_grad, EX_N_WEIGHTS * 4);
        ex_zero(t->loss, 4);
        if (r == RUN_FUSED) {
            fused_forward_backward_n(t, n, grad_scale);
        } else if (r == RUN_MODULE) {
            for (size_t i = 0; i < EX_N_WEIGHTS; ++i) {
                w[r][i] = 1.0f; /* overwritten too */
            }
            ex_upload(t->weight_grad, w[r], sizeof w[r]);
            model_forward_backward_n(t, n, grad_scale);
        } else if (r == RUN_FULLY_FUSED) {
            launch_train(t, FULLY_FUSED, n, grad_scale);
        } else {
            t->soa = r == RUN_UNFUSED_SOA;
            unfused_forward_backward_n(t, n, grad_scale);
            t->soa = 0;
        }
        EX_CHECK(gj_stream_synchronize(ex_ctx, NULL));
        if (r == RUN_MODULE && model_fp32) {
            ex_download(grid[r], t->model_grid_grad, np * 4);
        } else {
            ex_download(gh, t->grid_grad, np * 2);
            gj_halves_to_floats(gh, grid[r], np);
        }
        ex_download(w[r], t->weight_grad, sizeof w[r]);
        if (r == RUN_MODULE) { /* its mean loss, as the sum the kernels add */
            loss[r] = read_pipe_loss(t, PIPE_MODULE, n) * (float)(N_CHANNELS * n);
        } else {
            ex_download(&loss[r], t->loss, 4);
        }
    }
    size_t touched = 0;
    for (size_t i = 0; i < np; ++i) {
        touched += grid[RUN_UNFUSED][i] != 0.0f;
    }
    printf("check 3: one step on %llu points against the unfused pipeline (loss %.6g; %zu encoding gradients "
           "nonzero):\n",
           (unsigned long long)n, loss[RUN_UNFUSED] / (N_CHANNELS * (double)n), touched);
    int ok = touched > 0;
    for (int r = RUN_UNFUSED_SOA; r < N_RUNS; ++r) {
        if (!ran[r]) {
            continue;
        }
        const double e_loss = fabs(loss[r] - loss[RUN_UNFUSED]) / loss[RUN_UNFUSED];
        const double e_grid = relative_l2(grid[r], grid[RUN_UNFUSED], np);
        const double e_w = relative_l2(w[r], w[RUN_UNFUSED], EX_N_WEIGHTS);
        /* The unfused pipeline in either layout computes the same numbers; the fused ones
         * differ by the rounding of the outputs (the unfused MLP backward reads them as
         * fp16) and, fully fused, by the fp16 atomics of grid_bwd, one per point and level;
         * the module by the order of its sums. */
        const int soa = r == RUN_UNFUSED_SOA;
        const double max_loss = soa ? 1e-5 : 1e-2, max_grid = soa ? 1e-2 : 5e-2, max_w = soa ? 1e-4 : 2e-2;
        const int good = e_loss <= max_loss && e_grid <= max_grid && e_w <= max_w;
        printf("  %-36s loss %.2g, encoding gradients %.2g, MLP weight gradients %.2g (relative; limits %g, %g, "
               "%g)%s\n",
               run_name[r], e_loss, e_grid, e_w, max_loss, max_grid, max_w, good ? "" : "  FAILED");
        ok &= good;
    }
    if (ran[RUN_FUSED] && ran[RUN_FULLY_FUSED]) {
        /* The same kernel up to the encoding's backward: the same loss and MLP gradients
         * (up to the order of float atomics). */
        const double e_loss = fabs(loss[RUN_FUSED] - loss[RUN_FULLY_FUSED]) / loss[RUN_FULLY_FUSED];
        const double e_w = relative_l2(w[RUN_FUSED], w[RUN_FULLY_FUSED], EX_N_WEIGHTS);
        const double e_grid = relative_l2(grid[RUN_FUSED], grid[RUN_FULLY_FUSED], np);
        const int good = e_loss <= 1e-5 && e_w <= 1e-4;
        printf("  fused vs fully fused: loss %.2g, MLP weight gradients %.2g (limits 1e-05, 0.0001), encoding "
               "gradients %.2g%s\n",
               e_loss, e_w, e_grid, good ? "" : "  FAILED");
        ok &= good;
    }
    if (!ok) {
        ex_fail("a fused step disagrees with the unfused pipeline");
    }
    ex_zero(t->grid_grad, np * 2);
    ex_zero(t->weight_grad, EX_N_WEIGHTS * 4);
    ex_zero(t->loss, 4);
    free(gh);
    for (int r = 0; r < N_RUNS; ++r) {
        free(grid[r]);
    }
}

/* ------------------------------------------------------------------ pictures */
static uint32_t crc_table[256];

static uint32_t crc32_of(uint32_t crc, const uint8_t *p, size_t n) {
    if (!crc_table[1]) {
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
            crc_table[i] = c;
        }
    }
    crc = ~crc;
    for (size_t i = 0; i < n; ++i) crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static void png_chunk(FILE *f, const char *type, const uint8_t *data, size_t n) {
    uint8_t head[8];
    put32(head, (uint32_t)n);
    memcpy(head + 4, type, 4);
    fwrite(head, 1, 8, f);
    if (n) { /* IEND has no data (NULL) */
        fwrite(data, 1, n, f);
    }
    uint8_t crc[4];
    put32(crc, crc32_of(crc32_of(0, (const uint8_t *)type, 4), data, n));
    fwrite(crc, 1, 4, f);
}

/* An 8-bit RGB PNG with stored (uncompressed) deflate blocks: no zlib needed. */
static int write_png(const char *path, int w, int h, const uint8_t *rgb) {
    const size_t row = 1 + 3 * (size_t)w, raw_n = row * (size_t)h;
    uint8_t *raw = malloc(raw_n);
    const size_t blocks = (raw_n + 65534) / 65535;
    uint8_t *z = malloc(2 + raw_n + 5 * blocks + 4);
    FILE *f = fopen(path, "wb");
    if (!raw || !z || !f) {
        free(raw);
        free(z);
        if (f) fclose(f);
        return 0;
    }
    for (int y = 0; y < h; ++y) {
        raw[y * row] = 0; /* filter: none */
        memcpy(raw + y * row + 1, rgb + (size_t)y * 3 * w, 3 * (size_t)w);
    }
    size_t zn = 0;
    z[zn++] = 0x78, z[zn++] = 0x01;
    uint32_t a = 1, b = 0;
    for (size_t off = 0; off < raw_n; off += 65535) {
        const size_t len = raw_n - off < 65535 ? raw_n - off : 65535;
        z[zn++] = off + len == raw_n; /* BFINAL, BTYPE 00 */
        z[zn++] = (uint8_t)len, z[zn++] = (uint8_t)(len >> 8);
        z[zn++] = (uint8_t)~len, z[zn++] = (uint8_t)(~len >> 8);
        memcpy(z + zn, raw + off, len);
        zn += len;
    }
    for (size_t i = 0; i < raw_n; ++i) a = (a + raw[i]) % 65521, b = (b + a) % 65521;
    put32(z + zn, (b << 16) | a);
    zn += 4;
    static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    uint8_t ihdr[13];
    put32(ihdr, (uint32_t)w);
    put32(ihdr + 4, (uint32_t)h);
    ihdr[8] = 8, ihdr[9] = 2, ihdr[10] = 0, ihdr[11] = 0, ihdr[12] = 0;
    fwrite(signature, 1, 8, f);
    png_chunk(f, "IHDR", ihdr, 13);
    png_chunk(f, "IDAT", z, zn);
    png_chunk(f, "IEND", NULL, 0);
    const int ok = fclose(f) == 0;
    free(raw);
    free(z);
    return ok;
}

static uint8_t to_byte(float v) {
    v = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    return (uint8_t)lrintf(v * 255.0f);
}

/* The first three outputs of the network at the n points of t->x, as floats: by the render
 * kernel (fp16 outputs), or for the module pipeline by gj_network_inference. */
static void outputs(trainer *t, pipeline q, uint64_t n, float *rgb_out) {
    if (q == PIPE_MODULE) {
        EX_CHECK(ex_model_inference(t->model_module, n, t->x, t->weights, t->params, t->model_y));
        uint16_t *halves = malloc(n * N_CHANNELS * sizeof *halves);
        if (!halves) {
            ex_fail("out of host memory");
        }
        ex_download(halves, t->model_y, n * N_CHANNELS * sizeof *halves);
        gj_halves_to_floats(halves, rgb_out, n * N_CHANNELS);
        free(halves);
        return;
    }
    launch_train(t, RENDER, n, 0.0f);
    uint16_t *y = malloc(n * EX_OUT * 2);
    if (!y) {
        ex_fail("out of host memory");
    }
    ex_download(y, t->y, n * EX_OUT * 2);
    for (uint64_t i = 0; i < n; ++i) {
        for (int k = 0; k < N_CHANNELS; ++k) {
            rgb_out[i * N_CHANNELS + k] = ex_half_to_float(y[i * EX_OUT + k]);
        }
    }
    free(y);
}

/* Renders the network of pipeline q on a width x width grid of pixel centres; returns the mean
 * squared error against the picture and writes target | learned side by side as
 * out_dir/NAME.ppm and .png. */
static double render(trainer *t, pipeline q, int width, const char *out_dir, const char *name) {
    const uint64_t n = (uint64_t)width * width;
    if (n > t->n) {
        ex_fail("the picture is larger than a batch");
    }
    sample(t, n, 0, (uint32_t)width);
    float *y = malloc(n * N_CHANNELS * 4);
    float *targets = malloc(n * N_CHANNELS * 4);
    uint8_t *rgb = malloc(n * 2 * 3);
    if (!y || !targets || !rgb) {
        ex_fail("out of host memory");
    }
    outputs(t, q, n, y);
    ex_download(targets, t->targets, n * N_CHANNELS * 4);
    double se = 0.0;
    for (uint64_t i = 0; i < n; ++i) {
        const uint64_t r = i / (uint64_t)width, c = i % (uint64_t)width;
        for (int k = 0; k < 3; ++k) {
            const float v = y[i * N_CHANNELS + k], target = targets[i * 3 + k];
            se += ((double)v - target) * ((double)v - target);
            rgb[(r * 2 * width + c) * 3 + k] = to_byte(target);
            rgb[(r * 2 * width + width + c) * 3 + k] = to_byte(v);
        }
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.ppm", out_dir, name);
    FILE *f = fopen(path, "wb");
    if (f) {
        fprintf(f, "P6\n%d %d\n255\n", 2 * width, width);
        fwrite(rgb, 1, n * 2 * 3, f);
        fclose(f);
        printf("wrote %s", path);
        snprintf(path, sizeof path, "%s/%s.png", out_dir, name);
        if (write_png(path, 2 * width, width, rgb)) printf(" and %s", path);
        printf(" (left: the target, right: the network)\n");
    } else {
        printf("could not write %s\n", path);
    }
    free(y);
    free(targets);
    free(rgb);
    return se / (3.0 * (double)n);
}

/* ------------------------------------------------------------------ main */
typedef struct options {
    int bench, steps, batch_log2, warps, infer_warps;
    int use[N_PIPES]; /* --pipeline: the pipelines the demo checks and trains */
    uint64_t points;
    const char *out_dir;
} options;

static void usage(void) {
    fputs("usage: fused_training [--steps N] [--batch-log2 B] [--out-dir DIR] [--warps W]\n"
          "                      [--pipeline module|fused|fully-fused|all]\n"
          "       fused_training --bench [--points N] [--warps W] [--infer-warps W]\n"
          "(--pipeline: gridjit's network module of the model (module), this example's fused kernel\n"
          " with gridjit's backward kernel for the encoding (fused), or its kernel with the\n"
          " encoding's backward inside (fully-fused), or each in turn (all, the default of the\n"
          " demo); --encoding-backward kernel|device|both is the older name of fused, fully-fused\n"
          " and both of them; --warps: 4 or 8 warps per block of this example's training kernels;\n"
          " --bench always measures every pipeline)\n",
          stderr);
    exit(2);
}

/* The assertion of the demo: after STEPS steps of 2^18 samples, the picture's mean squared
 * error (per channel, on 512 x 512 pixel centres) is below this. */
#define DEMO_STEPS 1000
#define DEMO_MSE_LIMIT 5e-4

/* Trains pipeline q from fresh parameters, renders the picture and returns its mean
 * squared error. */
static double demo_train(trainer *t, pipeline q, const options *o) {
    static const char *const title[N_PIPES] = {
        "fused kernel + gridjit's backward kernel for the encoding (--pipeline fused)",
        "fully fused kernel, the encoding's backward by grid_bwd (--pipeline fully-fused)",
        "gridjit's network module of the model (--pipeline module)"};
    static const char *const picture_name[N_PIPES] = {"fused_training", "fully_fused_training",
                                                      "module_training"};
    trainer_init_params(t, 1.0f, 5);
    printf("training, %s: %llu samples per step, %d steps, loss scale %g, Adam (lr %g, beta 0.9/0.99)\n", title[q],
           (unsigned long long)t->n, o->steps, (double)LOSS_SCALE, (double)t->lr);
    const double start = ex_now_ms();
    float loss = 0.0f;
    for (int s = 1; s <= o->steps; ++s) {
        const int report = s % 100 == 0 || s == 1;
        sample(t, t->n, (uint32_t)s, 0);
        if (report) {
            ex_zero(t->loss, sizeof(float)); /* the loss of this step's batch, before its update */
        }
        pipe_step[q](t);
        if (report) {
            loss = read_pipe_loss(t, q, t->n);
            printf("step %5d  loss %.6f  (PSNR %.2f dB)\n", s, loss, -10.0 * log10(loss));
        }
    }
    EX_CHECK(gj_stream_synchronize(ex_ctx, NULL));
    const double elapsed = ex_now_ms() - start;
    if (q == PIPE_MODULE) { /* the step timed below is the fused one, not its first tier's */
        EX_CHECK(gj_network_module_wait_compiles(t->model_module));
    }
    const double step_ms = ex_time_ms(pipe_step[q], t, 2, 21);
    printf("%d steps in %.0f ms (with sampling and loss reads); a step (%s + Adam) takes %.3f ms\n", o->steps,
           elapsed, pipe_step_name[q], step_ms);
    const double mse = render(t, q, 512, o->out_dir, picture_name[q]);
    printf("picture: mean squared error %.6f (PSNR %.2f dB), limit %g after %d steps\n", mse, -10.0 * log10(mse),
           DEMO_MSE_LIMIT, DEMO_STEPS);
    return mse;
}

static int demo(const options *o) {
    trainer t;
    trainer_create(&t, 2, 1ull << o->batch_log2, o->warps, o->use);
    trainer_load(&t);
    trainer_init_params(&t, 1e4f, 5);
    check_fragments(&t);
    check_mlp_backward(&t, 1000);
    check_fused_vs_unfused(&t, 1ull << 14, 1.0f);

    int failed = 0;
    static const pipeline order[N_PIPES] = {PIPE_MODULE, PIPE_FUSED, PIPE_FULLY_FUSED};
    for (int i = 0; i < N_PIPES; ++i) {
        const pipeline q = order[i];
        if (o->use[q]) {
            const double mse = demo_train(&t, q, o);
            if (o->steps >= DEMO_STEPS && !(mse < DEMO_MSE_LIMIT)) {
                fprintf(stderr, "error: %s: the picture's error did not fall below %g\n", pipe_name[q],
                        DEMO_MSE_LIMIT);
                failed = 1;
            }
        }
    }
    trainer_destroy(&t);
    return failed;
}

/* The module's first training step in a context of its own with gridjit's disk cache off: its
 * programs' compile (those the first step waits for), their load and the step with Adam, on
 * t's buffers (the same device's primary context). */
static double model_cold_step_ms(trainer *t) {
    gj_context *cold = ex_cold_context();
    gj_network_module *warm = t->model_module;
    const double start = ex_now_ms();
    gj_status status = gj_network_module_create(cold, t->model, &t->model_module);
    if (status == GJ_OK) {
        model_step(t);
        status = gj_stream_synchronize(cold, NULL);
    }
    const double ms = ex_now_ms() - start;
    if (status != GJ_OK) {
        ex_fail("the module's cold first step: %s: %s", gj_status_name(status), gj_context_errmsg(cold));
    }
    EX_CHECK(gj_network_module_wait_compiles(t->model_module)); /* before destroying it */
    gj_network_module_destroy(t->model_module);
    t->model_module = warm;
    gj_context_destroy(cold);
    return ms;
}

static int bench(const gj_runtime_info *info, const options *o) {
    ex_inference_options io = {.points = o->points, .warps = o->infer_warps, .bench = 1, .verbose = 1};
    ex_inference_result ir;
    ex_inference_run(info, &io, &ir);

    static const int all[N_PIPES] = {1, 1, 1};
    trainer t;
    trainer_create(&t, 3, o->points, o->warps, all);
    trainer_load(&t);
    trainer_init_params(&t, 1.0f, 5);
    sample(&t, t.n, 17, 0);
    /* The module's first step compiles its programs (possibly some behind the first steps):
     * one step, then wait for every compile, before timing it. */
    model_step(&t);
    EX_CHECK(gj_network_module_wait_compiles(t.model_module));
    const double model_fb = ex_time_ms(model_forward_backward, &t, 5, 25);
    const double fused_fb = ex_time_ms(fused_forward_backward, &t, 5, 25);
    const double fused_kernel = ex_time_ms(fused_kernel_only, &t, 5, 25);
    const double fused_encoding_backward = ex_time_ms(fused_encoding_backward_only, &t, 5, 25);
    const double fully_fused_fb = ex_time_ms(fully_fused_forward_backward, &t, 5, 25);
    const double unfused_fb = ex_time_ms(unfused_forward_backward, &t, 5, 25);
    trainer_init_params(&t, 1.0f, 5);
    const double fused = ex_time_ms(fused_step, &t, 5, 25);
    trainer_init_params(&t, 1.0f, 5);
    const double fully_fused = ex_time_ms(fully_fused_step, &t, 5, 25);
    trainer_init_params(&t, 1.0f, 5);
    const double unfused = ex_time_ms(unfused_step, &t, 5, 25);
    trainer_init_params(&t, 1.0f, 5);
    const double model = ex_time_ms(model_step, &t, 5, 25);
    t.soa = 1;
    const double unfused_soa_fb = ex_time_ms(unfused_forward_backward, &t, 5, 25);
    trainer_init_params(&t, 1.0f, 5);
    const double unfused_soa = ex_time_ms(unfused_step, &t, 5, 25);
    t.soa = 0;
    double compile_ms[N_KERNEL_PIPES];
    int registers[N_KERNEL_PIPES];
    for (int q = 0; q < N_KERNEL_PIPES; ++q) {
        compile_ms[q] = ex_cold_compile_ms(&t.pipe_program[q], info->arch);
        int static_shared = 0;
        EX_CHECK(gj_kernel_attributes(t.train[pipe_mode[q]], &registers[q], &static_shared));
        printf("%s training kernel: %d registers, %u blocks of %d threads, %u bytes of shared memory\n",
               pipe_name[q], registers[q], t.grid[pipe_mode[q]], 32 * t.warps, train_shared(pipe_mode[q], t.warps));
    }
    const double model_cold = model_cold_step_ms(&t);
    printf("{\"example\": \"fused_training\", \"device\": \"%s\", \"points\": %llu, "
           "\"inference_ms\": {\"fused\": %.4f, \"unfused\": %.4f, \"unfused_soa\": %.4f, \"encoding_only\": %.4f, "
           "\"encoding_only_soa\": %.4f, \"module\": %.4f}, "
           "\"train_step_ms\": {\"fused\": %.4f, \"fully_fused\": %.4f, \"unfused\": %.4f, \"unfused_soa\": %.4f, "
           "\"module\": %.4f}, "
           "\"fwd_bwd_ms\": {\"fused\": %.4f, \"fully_fused\": %.4f, \"unfused\": %.4f, \"unfused_soa\": %.4f, "
           "\"module\": %.4f}, "
           "\"fused_parts_ms\": {\"kernel\": %.4f, \"encoding_backward\": %.4f}, "
           "\"cold_compile_ms\": {\"fused_inference\": %.1f, \"fused_training\": %.1f, "
           "\"fully_fused_training\": %.1f, \"module_first_inference\": %.1f, \"module_first_step\": %.1f}, "
           "\"inference_max_rel_diff\": %.3g, \"module_inference_max_rel_diff\": %.3g, "
           "\"registers\": {\"fused_inference\": %d, \"fused_training\": %d, \"fully_fused_training\": %d}, "
           "\"warps\": {\"inference\": %d, \"training\": %d}, \"cuda_cache_disable\": \"%s\"}\n",
           info->device_name, (unsigned long long)o->points, ir.fused_ms, ir.unfused_ms, ir.unfused_soa_ms,
           ir.encoding_ms, ir.encoding_soa_ms, ir.model_ms, fused, fully_fused, unfused, unfused_soa, model, fused_fb,
           fully_fused_fb, unfused_fb, unfused_soa_fb, model_fb, fused_kernel, fused_encoding_backward,
           ir.cold_compile_ms, compile_ms[PIPE_FUSED], compile_ms[PIPE_FULLY_FUSED], ir.model_cold_ms, model_cold,
           ir.max_rel_diff, ir.model_max_rel_diff, ir.registers,
           registers[PIPE_FUSED], registers[PIPE_FULLY_FUSED], o->infer_warps, o->warps,
           getenv("CUDA_CACHE_DISABLE") ? getenv("CUDA_CACHE_DISABLE") : "");
    trainer_destroy(&t);
    return 0;
}

/* Without a GPU: compiles the programs for sm_90 through the disk cache (showing that they
 * are valid); with --bench also each one cold (the disk cache off), as one JSON line. */
static int no_gpu(const options *o) {
    trainer t;
    trainer_create(&t, o->bench ? 3 : 2, 1ull << 18, o->warps, o->use);
    for (int q = 0; q < N_KERNEL_PIPES; ++q) {
        if (o->use[q]) {
            ex_compile_report(&t.pipe_program[q], "sm_90");
        }
    }
    ex_compile_report(&t.support_program, "sm_90");
    if (o->use[PIPE_MODULE]) { /* the module's programs, as a GPU's first passes would compile them */
        gj_precompile_report report;
        EX_CHECK(gj_network_precompile(ex_ctx, t.model, "sm_90", &report));
        printf("the network module's programs for sm_90: %u compiled, %u from the cache (%.0f ms)\n", report.compiled,
               report.cached, report.ms);
    }
    if (o->bench) {
        ex_inference_options io = {.points = o->points, .warps = o->infer_warps, .bench = 1};
        ex_inference_result ir;
        ex_inference_run(NULL, &io, &ir);
        const double fused = ex_cold_compile_ms(&t.pipe_program[PIPE_FUSED], "sm_90");
        const double fully_fused = ex_cold_compile_ms(&t.pipe_program[PIPE_FULLY_FUSED], "sm_90");
        printf("{\"example\": \"fused_training\", \"device\": null, \"arch\": \"sm_90\", "
               "\"cold_compile_ms\": {\"fused_inference\": %.1f, \"fused_training\": %.1f, "
               "\"fully_fused_training\": %.1f}}\n",
               ir.cold_compile_ms, fused, fully_fused);
    }
    trainer_destroy(&t); /* nothing was loaded or allocated: frees the programs and the encoding */
    printf("no GPU: nothing ran\n");
    return 0;
}

int main(int argc, char **argv) {
    options o = {.bench = 0, .steps = DEMO_STEPS, .batch_log2 = 18, .warps = 8, .infer_warps = 16,
                 .use = {1, 1, 1}, .points = 1ull << 21, .out_dir = "."};
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const int more = i + 1 < argc;
        if (strcmp(a, "--bench") == 0) o.bench = 1;
        else if (strcmp(a, "--steps") == 0 && more) o.steps = atoi(argv[++i]);
        else if (strcmp(a, "--batch-log2") == 0 && more) o.batch_log2 = atoi(argv[++i]);
        else if (strcmp(a, "--out-dir") == 0 && more) o.out_dir = argv[++i];
        else if (strcmp(a, "--warps") == 0 && more) o.warps = atoi(argv[++i]);
        else if (strcmp(a, "--infer-warps") == 0 && more) o.infer_warps = atoi(argv[++i]);
        else if (strcmp(a, "--points") == 0 && more) o.points = strtoull(argv[++i], NULL, 0);
        else if (strcmp(a, "--pipeline") == 0 && more) {
            const char *v = argv[++i];
            const int all = strcmp(v, "all") == 0;
            int any = 0;
            for (int q = 0; q < N_PIPES; ++q) {
                o.use[q] = all || strcmp(v, pipe_option[q]) == 0;
                any |= o.use[q];
            }
            if (!any) usage();
        } else if (strcmp(a, "--encoding-backward") == 0 && more) { /* the older option */
            const char *v = argv[++i];
            const int both = strcmp(v, "both") == 0;
            o.use[PIPE_FUSED] = both || strcmp(v, "kernel") == 0;
            o.use[PIPE_FULLY_FUSED] = both || strcmp(v, "device") == 0;
            o.use[PIPE_MODULE] = 0;
            if (!o.use[PIPE_FUSED] && !o.use[PIPE_FULLY_FUSED]) usage();
        } else usage();
    }
    if (o.steps < 1 || o.batch_log2 < 18 || o.batch_log2 > 26 || (o.warps != 4 && o.warps != 8) || o.infer_warps < 1 ||
        o.infer_warps > 32 || o.points < 1) {
        usage(); /* the batch holds at least the 512 x 512 picture */
    }
    if (o.bench) {
        o.use[PIPE_FUSED] = o.use[PIPE_FULLY_FUSED] = o.use[PIPE_MODULE] = 1; /* the benchmark measures all */
        setenv("CUDA_CACHE_DISABLE", "1", 0);            /* cold compiles: no driver-side cache either */
    }
    ex_init();
    gj_runtime_info info;
    int status;
    if (!ex_gpu_present(&info)) {
        status = no_gpu(&o);
    } else {
        printf("device: %s (%s)\n", info.device_name, info.arch);
        status = o.bench ? bench(&info, &o) : demo(&o);
    }
    gj_context_destroy(ex_ctx);
    return status;
}
