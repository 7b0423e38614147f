/* A network module's fused training step and Adam (docs/networks.md §10; network_module.h). */
#include "api/network_module.h"

#include "runtime/module.h"

#include <math.h>
#include <string.h>

/* ---- the fused training step and Adam (docs/networks.md §10) ---------------------------- */

/* tinycudann's loss scale for fp16 training, where a descriptor leaves it 0. */
#define DEFAULT_LOSS_SCALE 128.0f

/* The start of gj_network_train_step and gj_network_adam_step: the message emptied, the
 * descriptor (missing: NULL; its struct_size against the header's, unprepared: what a wrong one
 * says) and its loss scale checked; *scale the scale in effect. */
static gj_status enter_step_call(gj_network_module *m, uint32_t struct_size, size_t expected, float loss_scale,
                                 int missing, const char *unprepared, const char *call, float *scale) {
    gj__diag_clear(&m->ctx->diag);
    if (missing || struct_size != expected) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "%s: desc is %s", call,
                        missing ? "NULL" : unprepared);
    }
    if (!(loss_scale == 0.0f || (loss_scale > 0.0f && isfinite(loss_scale)))) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: loss_scale = %g: must be finite and greater than 0 (or 0: %g)", call, (double)loss_scale,
                        (double)DEFAULT_LOSS_SCALE);
    }
    *scale = loss_scale == 0.0f ? DEFAULT_LOSS_SCALE : loss_scale;
    return GJ_OK;
}

void gj_network_train_desc_init(gj_network_train_desc *desc) {
    if (desc) {
        memset(desc, 0, sizeof *desc);
        desc->struct_size = sizeof *desc;
    }
}

void gj_network_adam_desc_init(gj_network_adam_desc *desc) {
    if (desc) {
        memset(desc, 0, sizeof *desc);
        desc->struct_size = sizeof *desc;
        desc->learning_rate = 1e-3f;
        desc->beta1 = 0.9f;
        desc->beta2 = 0.999f;
        desc->epsilon = 1e-8f;
        desc->l2_reg = 1e-8f;
    }
}

/* The L2 loss's factors over n points: its gradient 2 (y - target) * scale / values and its
 * value (y - target)^2 / values, values = n * the outputs (tiny-cuda-nn's n_total). */
static void loss_factors(const gj_network_module *m, uint64_t n, float scale, float *grad_factor, float *loss_factor) {
    const double values = (double)n * m->net->layout.output_width;
    *grad_factor = (float)(2.0 * scale / values);
    *loss_factor = (float)(1.0 / values);
}

/* The training step's programs: its own and Adam's, made side by side at its first call (a
 * training step is followed by Adam's; it compiles in a fifth of the step's time). */
static const gj__network_part step_parts[] = {GJ__NETWORK_PART_STEP, GJ__NETWORK_PART_ADAM};
enum { N_STEP_PARTS = sizeof step_parts / sizeof *step_parts };
static const gj__network_part adam_parts[] = {GJ__NETWORK_PART_ADAM};

/* What the step's kernel adds to: the network's gradients and the loss, zeroed on the stream. */
static gj_status zero_step_outputs(gj_network_module *m, gj_stream stream, const gj_network_train_desc *desc) {
    gj_status status = gj__network_zero_with(m, GJ__NK_STEP_ZERO, stream, desc->dL_dparams, 4 * m->net->layout.n_params);
    if (status == GJ_OK && desc->loss) {
        status = gj__network_zero_with(m, GJ__NK_STEP_ZERO, stream, desc->loss, 4);
    }
    return status;
}

/* The unfused step's loss kernel: at most this many blocks of 256 threads (a wave of an H100 or
 * H200), each thread 8 values at a time. */
#define LOSS_BLOCKS 1024u

/* 256-byte steps of the stream's scratch buffer. */
static uint64_t aligned_bytes(uint64_t bytes) {
    return (bytes + 255) / 256 * 256;
}

/* A model's training step as its passes (docs/networks.md §10, "A model's step as its passes"): the forward
 * for training (its outputs into desc->output, else as fp16 values into a buffer of the
 * stream's, and its context there), the L2 loss's gradient and the loss (NAME_loss, as the
 * step's own kernel computes them), then the backward to the parameters: the fused kernel (apart
 * 0), or (apart 1: where the backward runs apart on this device, and while a thread compiles the
 * step's or the backward's program, network_tiers.c) the network's backward writing
 * dL/d(features) and its gradients, then the encoding module's backward. The same gradients and
 * loss as the step's own program, summed in another order. */
static gj_status train_step_passes(gj_network_module *m, gj_stream stream, const gj_network_train_desc *desc,
                                   float scale, gj_module *encoding_module, int apart, const char *call) {
    const uint64_t n = desc->n, values = n * m->net->layout.output_width;
    uint32_t y_half = desc->output == NULL; /* outputs nobody reads but the loss: fp16, half the bytes */
    const uint64_t context_bytes = aligned_bytes(gj_network_module_context_bytes(m, n));
    const uint64_t output_bytes = y_half ? aligned_bytes(2 * values) : 0;
    const uint64_t dy_bytes = aligned_bytes(2 * values); /* fp16 values, as the backward reads them */
    const uint64_t feature_bytes = apart ? gj__network_features_bytes(m, n) : 0;
    char *scratch = NULL;
    gj_status status = gj__workspace_get_for_stream(&m->stream_scratch, &m->ctx->runtime, stream,
                                                    context_bytes + output_bytes + dy_bytes + feature_bytes, call,
                                                    (void **)&scratch);
    if (status != GJ_OK) {
        return status;
    }
    void *context = scratch;
    void *y = desc->output ? (void *)desc->output : (void *)(scratch + context_bytes);
    void *dy = scratch + context_bytes + output_bytes;
    void *features = apart ? scratch + context_bytes + output_bytes + dy_bytes : NULL;
    const float *x = desc->input, *target = desc->target;
    const void *params = desc->params, *eparams = desc->encoding_params;
    const gj__network_out out = {y, y_half};
    status = gj__network_model_forward(m, stream, n, x, out, params, eparams, context, call);
    /* The zeroing kernel of a program the passes launch anyway. */
    const gj__network_kernel zero = apart ? GJ__NK_INPUT_ZERO : GJ__NK_ZERO;
    if (status == GJ_OK) {
        status = gj__network_zero_with(m, zero, stream, desc->dL_dparams, 4 * m->net->layout.n_params);
    }
    if (status == GJ_OK && desc->loss) {
        status = gj__network_zero_with(m, zero, stream, desc->loss, 4);
    }
    float grad_factor, loss_factor;
    loss_factors(m, n, scale, &grad_factor, &loss_factor);
    float *loss = desc->loss;
    uint64_t n_values = values;
    const void *y_read = y;
    void *loss_args[] = {&n_values, &y_read, &y_half, &target, &grad_factor, &loss_factor, &dy, &loss};
    /* At most LOSS_BLOCKS blocks: a warp adds its sum of squares to the loss with one atomic, and
     * fewer of them sum in fp32 with less rounding (the fused kernel's are a wave's warps). */
    if (status == GJ_OK) {
        status = gj__network_launch_elementwise(m, GJ__NK_LOSS, stream, (values + 7) / 8, LOSS_BLOCKS, loss_args);
    }
    if (status != GJ_OK) {
        return status;
    }
    /* dL/dy (fp16) carries the loss scale already, rounded as the step's own kernel rounds it */
    const gj__network_features_backward b = {n, x, dy, 1, 1.0f, params, eparams, context, desc->dL_dparams,
                                             features, encoding_module, desc->dL_dencoding_params,
                                             GJ_GRAD_OVERWRITE, NULL};
    if (apart) {
        return gj__network_backward_through_features(m, stream, &b, call);
    }
    status = gj__network_zero_with(m, zero, stream, desc->dL_dencoding_params,
                                   gj_network_module_encoding_gradient_size(m) * m->net->encoding->layout.n_params);
    return status == GJ_OK ? gj__network_backward_fused_launch(m, stream, &b, call) : status;
}

/* A model's training step: as its passes where network_step_choice.c says so, else as its own
 * program in three launches: the encoding module's forward writes the features (feature-major,
 * into the module's workspace), the network's kernel turns them into dL/d(features) in place,
 * the encoding module's backward adds its parameter gradients. */
static gj_status train_step_model(gj_network_module *module, gj_stream stream, const gj_network_train_desc *desc,
                                  float scale, const char *call) {
    gj_module *encoding_module = NULL;
    void *features = NULL;
    if (gj__network_step_as_passes(module)) {
        int apart = 1;
        gj_status status = gj__network_need_step_passes(module, stream, call, &encoding_module, &apart);
        return status == GJ_OK ? train_step_passes(module, stream, desc, scale, encoding_module, apart, call) : status;
    }
    int unfused = 0;
    gj_status status = gj__network_need_step(module, call, &encoding_module, &unfused);
    if (status == GJ_OK && unfused) { /* its own program compiles on a thread meanwhile */
        return train_step_passes(module, stream, desc, scale, encoding_module, 1, call);
    }
    if (status == GJ_OK) {
        status = gj__workspace_get(&module->features, &module->ctx->runtime, stream,
                                   gj__network_features_bytes(module, desc->n),
                                   call, &features);
    }
    if (status == GJ_OK) {
        gj_forward_desc f;
        gj_forward_desc_init(&f);
        f.n = desc->n;
        f.x = desc->input;
        f.params = desc->encoding_params;
        f.y = features;
        f.y_layout = GJ_LAYOUT_SOA;
        status = gj_forward(encoding_module, stream, &f);
    }
    status = status == GJ_OK ? zero_step_outputs(module, stream, desc) : status;
    if (status != GJ_OK) {
        return status;
    }
    uint64_t n = desc->n;
    float grad_factor, loss_factor;
    loss_factors(module, desc->n, scale, &grad_factor, &loss_factor);
    const float *target = desc->target;
    const void *params = desc->params;
    void *ring = NULL;
    float *y = desc->output, *dparams = desc->dL_dparams, *loss = desc->loss;
    void *args[] = {&n, &features, &target, &grad_factor, &loss_factor, &params, &ring, &y, &dparams, &loss};
    status = gj__network_launch_step(module, GJ__NK_STEP_FEATURES, stream, n, args, &ring, call);
    if (status == GJ_OK) {
        status = gj__network_encoding_backward(encoding_module, stream, n, desc->input, desc->encoding_params, features,
                                               desc->dL_dencoding_params, GJ_GRAD_OVERWRITE, NULL);
    }
    return status;
}

gj_status gj_network_train_step(gj_network_module *module, gj_stream stream, const gj_network_train_desc *desc) {
    static const char call[] = "gj_network_train_step";
    if (!module) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj__diag *diag = &module->ctx->diag;
    float scale = 0.0f;
    gj_status status =
        enter_step_call(module, desc ? desc->struct_size : 0, sizeof *desc, desc ? desc->loss_scale : 0.0f, !desc,
                        "not prepared by gj_network_train_desc_init (struct_size)", call, &scale);
    if (status != GJ_OK) {
        return status;
    }
    if (desc->n > GJ_MAX_POINTS) {
        return gj__fail(diag, GJ_ERROR_INVALID_ARGUMENT, "%s: n = %llu exceeds GJ_MAX_POINTS", call,
                        (unsigned long long)desc->n);
    }
    const int model = module->net->encoding != NULL;
    if (!model && (desc->encoding_params || desc->dL_dencoding_params)) {
        return gj__fail(diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: encoding_params and dL_dencoding_params are for a model; this network has no encoding", call);
    }
    if (desc->n == 0) {
        return GJ_OK;
    }
    if (!desc->input || !desc->target || !desc->params || !desc->dL_dparams ||
        (model && (!desc->encoding_params || !desc->dL_dencoding_params))) {
        return gj__fail(diag, GJ_ERROR_INVALID_ARGUMENT, "%s: input, target, params%s and dL_dparams%s must not be NULL",
                        call, model ? ", encoding_params" : "", model ? " and dL_dencoding_params (a model)" : "");
    }
    if (model) {
        return train_step_model(module, stream, desc, scale, call);
    }
    status = gj__network_need_parts(module, step_parts, N_STEP_PARTS, call);
    status = status == GJ_OK ? zero_step_outputs(module, stream, desc) : status;
    if (status != GJ_OK) {
        return status;
    }
    uint64_t n = desc->n;
    float grad_factor, loss_factor;
    loss_factors(module, desc->n, scale, &grad_factor, &loss_factor);
    const float *x = desc->input, *target = desc->target;
    const void *params = desc->params;
    void *ring = NULL;
    float *y = desc->output, *dparams = desc->dL_dparams, *loss = desc->loss;
    void *args[] = {&n, &x, &target, &grad_factor, &loss_factor, &params, &ring, &y, &dparams, &loss};
    return gj__network_launch_step(module, GJ__NK_STEP, stream, n, args, &ring, call);
}

/* The Adam kernel's hyperparameters (templates/network_kernels.cuh, gj_nn_adam_hyper). */
typedef struct adam_hyper {
    float lr, beta1, beta2, epsilon, l2_reg, inv_scale;
} adam_hyper;

gj_status gj_network_adam_step(gj_network_module *module, gj_stream stream, const gj_network_adam_desc *desc) {
    static const char call[] = "gj_network_adam_step";
    if (!module) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj__diag *diag = &module->ctx->diag;
    float scale = 0.0f;
    gj_status status =
        enter_step_call(module, desc ? desc->struct_size : 0, sizeof *desc, desc ? desc->loss_scale : 0.0f, !desc,
                        "not prepared by gj_network_adam_desc_init (struct_size)", call, &scale);
    if (status != GJ_OK) {
        return status;
    }
    const struct {
        const char *name;
        float value, lo, hi; /* lo < value < hi, or value == lo where lo_ok */
        int lo_ok;
    } checks[] = {{"learning_rate", desc->learning_rate, 0.0f, INFINITY, 1}, {"beta1", desc->beta1, 0.0f, 1.0f, 1},
                  {"beta2", desc->beta2, 0.0f, 1.0f, 1}, {"epsilon", desc->epsilon, 0.0f, INFINITY, 1},
                  {"l2_reg", desc->l2_reg, 0.0f, INFINITY, 1}};
    for (size_t i = 0; i < sizeof checks / sizeof *checks; ++i) {
        const float v = checks[i].value;
        if (!((v > checks[i].lo || (checks[i].lo_ok && v == checks[i].lo)) && v < checks[i].hi)) {
            return gj__fail(diag, GJ_ERROR_INVALID_ARGUMENT, "%s: %s = %g: must be at least %g and below %g", call,
                            checks[i].name, (double)v, (double)checks[i].lo, (double)checks[i].hi);
        }
    }
    const int model = module->net->encoding != NULL;
    const void *network_arrays[] = {desc->params, desc->params_fp32, desc->first_moments, desc->second_moments,
                                    desc->steps, desc->dL_dparams};
    const void *encoding_arrays[] = {desc->encoding_params, desc->encoding_params_fp32, desc->encoding_first_moments,
                                     desc->encoding_second_moments, desc->encoding_steps, desc->dL_dencoding_params};
    static const char *const names[] = {"params", "params_fp32", "first_moments", "second_moments", "steps",
                                        "dL_dparams"};
    static const char *const encoding_names[] = {"encoding_params",         "encoding_params_fp32",
                                                 "encoding_first_moments",  "encoding_second_moments",
                                                 "encoding_steps",          "dL_dencoding_params"};
    for (size_t i = 0; i < 6; ++i) {
        if (!network_arrays[i]) {
            return gj__fail(diag, GJ_ERROR_INVALID_ARGUMENT, "%s: %s must not be NULL", call, names[i]);
        }
        if (model != (encoding_arrays[i] != NULL)) {
            return gj__fail(diag, GJ_ERROR_INVALID_ARGUMENT, "%s: %s must %s", call, encoding_names[i],
                            model ? "not be NULL (a model)" : "be NULL: this network has no encoding");
        }
    }
    status = gj__network_need_parts(module, adam_parts, 1, call);
    if (status != GJ_OK) {
        return status;
    }
    uint64_t n_net = module->net->layout.n_params, n_enc = model ? module->net->encoding->layout.n_params : 0;
    void *p[12];
    for (size_t i = 0; i < 6; ++i) {
        p[i] = (void *)network_arrays[i];
        p[6 + i] = (void *)encoding_arrays[i];
    }
    adam_hyper h = {desc->learning_rate, desc->beta1, desc->beta2, desc->epsilon, desc->l2_reg, 1.0f / scale};
    void *args[] = {&n_net, &p[0], &p[1], &p[2], &p[3], &p[4], &p[5], &n_enc, &p[6], &p[7], &p[8], &p[9], &p[10], &p[11], &h};
    /* Four parameters a thread; a grid of many waves (a thread's next quad waits for its last). */
    const uint64_t quads = (n_net + 3) / 4 + (n_enc + 3) / 4;
    return gj__network_launch_elementwise(module, GJ__NK_ADAM, stream, quads, 65535u, args);
}

