/* A network module's passes: inference, the forward for training, the backward to the
 * parameters and to the input, with a model's finishing pass (network_module.h). */
#include "api/network_module.h"

#include "base/widen.h"
#include "runtime/module.h"

#include <math.h>
#include <string.h>

/* desc, or where a caller compiled against an older header made it, *full: the same with the
 * fields that layout lacks at their defaults. */
static const gj_network_pass_desc *widened_desc(const gj_network_pass_desc *desc, gj_network_pass_desc *full) {
    return gj__widened(desc, offsetof(gj_network_pass_desc, dL_doutput_scale), sizeof *full, full);
}

static gj_status check_desc(gj_network_module *m, const gj_network_pass_desc *d, const char *call) {
    if (!d || d->struct_size != sizeof *d) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "%s: desc is %s", call,
                        d ? "not prepared by gj_network_pass_desc_init (struct_size)" : "NULL");
    }
    const float scale = d->dL_doutput_scale;
    if (!(scale == 0.0f || (scale > 0.0f && isfinite(scale)))) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: dL_doutput_scale = %g: a loss scale must be finite and greater than 0 (or 0: none)", call,
                        (double)scale);
    }
    if (d->n > GJ_MAX_POINTS) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "%s: n = %llu exceeds GJ_MAX_POINTS", call,
                        (unsigned long long)d->n);
    }
    if (d->n && !d->params) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "%s: params must not be NULL", call);
    }
    if (d->n && m->net->encoding && !d->encoding_params) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "%s: encoding_params must not be NULL (a model)", call);
    }
    if (!m->net->encoding && (d->encoding_params || d->dL_dencoding_params || d->dL_dencoding_params_fp32)) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: encoding_params, dL_dencoding_params and dL_dencoding_params_fp32 are for a model; this "
                        "network has no encoding",
                        call);
    }
    if (d->unscale_gradients > 1) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "%s: unscale_gradients = %u: must be 0 or 1", call,
                        d->unscale_gradients);
    }
    return GJ_OK;
}

/* The start of a pass: the message emptied, *desc widened (into *full where an older header
 * made it) and checked. */
static gj_status enter_pass(gj_network_module *m, const gj_network_pass_desc **desc, gj_network_pass_desc *full,
                            const char *call) {
    gj__diag_clear(&m->ctx->diag);
    *desc = widened_desc(*desc, full);
    return check_desc(m, *desc, call);
}

static const gj__network_part inference_parts[] = {GJ__NETWORK_PART_INFERENCE};

/* Where a forward pass writes: output, or output_fp16 (run_forward checked that one is given). */
static gj__network_out output_of(const gj_network_pass_desc *d) {
    const gj__network_out out = {d->output ? (void *)d->output : d->output_fp16, d->output ? 0u : 1u};
    return out;
}

/* A model's inference in two passes (gj__network_inference_features; network_two_passes.c). */
static gj_status inference_through_features(gj_network_module *m, gj_stream stream, const gj_network_pass_desc *desc,
                                            const char *call) {
    gj_module *encoding_module = NULL;
    gj_status status = gj__network_made(m, inference_parts, 1)
                           ? gj__network_need_encoding_module(m, &encoding_module)
                           : gj__network_need_parts_beside_encoding(m, inference_parts, 1, GJ__NETWORK_ENCODING_FORWARD,
                                                                    call, &encoding_module);
    if (status != GJ_OK) {
        return status;
    }
    const gj__network_two_passes t = {GJ__NK_INFERENCE_FEATURES, desc->n, desc->input, output_of(desc),
                                      desc->params, desc->encoding_params, NULL};
    return gj__network_two_passes_run(m, encoding_module, stream, &t, call);
}

static gj_status run_forward(gj_network_module *module, gj_stream stream, const gj_network_pass_desc *desc,
                             int training, const char *call) {
    if (!module) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj_network_pass_desc full;
    gj_status status = enter_pass(module, &desc, &full, call);
    if (status != GJ_OK || desc->n == 0) {
        return status;
    }
    if (!desc->input || !(desc->output || desc->output_fp16) || (training && !desc->context)) {
        return gj__fail(&module->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: input, output (or output_fp16)%s must not be NULL", call, training ? " and context" : "");
    }
    if (desc->output && desc->output_fp16) {
        return gj__fail(&module->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: give output (floats) or output_fp16 (fp16 values), not both", call);
    }
    if (!training && module->inference_features) {
        return inference_through_features(module, stream, desc, call);
    }
    /* The forward for training comes with its backward: their programs compile together
     * (network_tiers.c: which backward's, for a model). */
    status = training ? gj__network_need_training(module, stream, call)
                      : gj__network_need_parts(module, inference_parts, 1, call);
    if (status != GJ_OK) {
        return status;
    }
    if (training && module->net->encoding) {
        return gj__network_model_forward(module, stream, desc->n, desc->input, output_of(desc), desc->params,
                                         desc->encoding_params, desc->context, call);
    }
    uint64_t n = desc->n;
    const float *x = desc->input;
    const gj__network_out out = output_of(desc);
    void *y = out.p;
    uint32_t y_half = out.half;
    const void *params = desc->params;
    const void *eparams = desc->encoding_params;
    void *context = desc->context;
    /* The kernels' arguments (network_codegen.c): inference without the context. */
    void *network_inference[] = {&n, &x, &y, &params, &y_half};
    void *network_forward[] = {&n, &x, &y, &params, &context, &y_half};
    void *model_inference[] = {&n, &x, &y, &params, &eparams, &y_half};
    void *model_forward[] = {&n, &x, &y, &params, &eparams, &context, &y_half};
    void **args = module->net->encoding ? (training ? model_forward : model_inference)
                                        : (training ? network_forward : network_inference);
    return gj__network_launch(module, training ? GJ__NK_FORWARD : GJ__NK_INFERENCE, stream, n, args, call);
}

gj_status gj_network_inference(gj_network_module *module, gj_stream stream, const gj_network_pass_desc *desc) {
    return run_forward(module, stream, desc, 0, "gj_network_inference");
}

gj_status gj_network_forward(gj_network_module *module, gj_stream stream, const gj_network_pass_desc *desc) {
    return run_forward(module, stream, desc, 1, "gj_network_forward");
}

/* Where a backward pass puts a model's encoding gradients, and what its finishing pass does
 * (the descriptor checked against the module). */
typedef struct gradient_plan {
    void *sums;      /* where the kernels add them up: NULL (not asked for), the caller's fp16 buffer
                        (converted), or the caller's gradient array itself */
    int convert;     /* fp16 sums converted into dL_dencoding_params_fp32 */
    int sums_zeroed; /* the sums start from zero (overwrite, or a conversion's own sums) */
    float factor;    /* what the finishing pass multiplies by: 1 / the loss scale, or 1 */
} gradient_plan;

static gj_status plan_gradients(gj_network_module *m, const gj_network_pass_desc *d, float dy_scale,
                                const char *call, gradient_plan *g) {
    memset(g, 0, sizeof *g);
    const int overwrite = d->dL_dparams_mode == GJ_GRAD_OVERWRITE;
    const int fp16_sums = m->net->encoding && gj_network_module_encoding_gradient_size(m) == 2;
    if (d->dL_dencoding_params_fp32 && fp16_sums && !d->dL_dencoding_params) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: dL_dencoding_params_fp32 of an encoding whose gradients the kernels sum in fp16 needs "
                        "dL_dencoding_params too, the fp16 buffer they sum into (gj_network_module_encoding_gradient_"
                        "size() bytes a parameter)", call);
    }
    if (d->dL_dencoding_params_fp32 && !fp16_sums && d->dL_dencoding_params) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: give dL_dencoding_params or dL_dencoding_params_fp32, not both: this encoding's "
                        "gradients are summed in fp32", call);
    }
    if (d->unscale_gradients && !overwrite) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: unscale_gradients needs dL_dparams_mode GJ_GRAD_OVERWRITE (gradients divided in place)",
                        call);
    }
    if (d->unscale_gradients && fp16_sums && d->dL_dencoding_params && !d->dL_dencoding_params_fp32) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: unscale_gradients: fp16 dL_dencoding_params cannot be unscaled (small gradients would "
                        "underflow); ask for dL_dencoding_params_fp32", call);
    }
    g->convert = d->dL_dencoding_params_fp32 && fp16_sums;
    g->sums = d->dL_dencoding_params_fp32 && !fp16_sums ? (void *)d->dL_dencoding_params_fp32 : d->dL_dencoding_params;
    g->sums_zeroed = overwrite || g->convert;
    g->factor = d->unscale_gradients ? 1.0f / dy_scale : 1.0f;
    return GJ_OK;
}

/* The finishing pass where one is needed (templates/network_kernels.cuh, gj_nn_finish_kernel):
 * the conversion of fp16 sums into dL_dencoding_params_fp32, and the division by the loss
 * scale of the fp32 gradients written (dL_dparams, dL_dinput, an encoding's fp32 sums). */
static gj_status finish_gradients(gj_network_module *m, gj_stream stream, const gj_network_pass_desc *d,
                                  const gradient_plan *g, gj__network_kernel finish) {
    const int scale = g->factor != 1.0f;
    if (!g->convert && !scale) {
        return GJ_OK;
    }
    const uint64_t n_encoding = m->net->encoding ? m->net->encoding->layout.n_params : 0;
    uint64_t n16 = g->convert ? n_encoding : 0;
    const void *sums = g->convert ? g->sums : NULL;
    float *out = g->convert ? d->dL_dencoding_params_fp32 : NULL;
    uint32_t accumulate = g->convert && d->dL_dparams_mode == GJ_GRAD_ACCUMULATE;
    /* What is scaled in place: nothing (n 0) without a scale. */
    float *p[3] = {d->dL_dparams, d->dL_dinput, g->convert ? NULL : (float *)g->sums};
    uint64_t n[3] = {m->net->layout.n_params, d->n * m->net->n_input_dims, n_encoding};
    uint64_t items = (n16 + 3) / 4; /* the conversion goes four sums a thread */
    for (int i = 0; i < 3; ++i) {
        n[i] = scale && p[i] ? n[i] : 0;
        items = n[i] > items ? n[i] : items;
    }
    float factor = g->factor;
    void *args[] = {&n16, &sums, &out, &accumulate, &n[0], &p[0], &n[1], &p[1], &n[2], &p[2], &factor};
    return gj__network_launch_elementwise(m, finish, stream, items, GJ__NETWORK_ELEMENTWISE_BLOCKS, args);
}

gj_status gj_network_backward(gj_network_module *module, gj_stream stream, const gj_network_pass_desc *desc) {
    static const char call[] = "gj_network_backward";
    if (!module) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj_network_pass_desc full;
    gj_status status = enter_pass(module, &desc, &full, call);
    if (status != GJ_OK || desc->n == 0) {
        return status;
    }
    const int model = module->net->encoding != NULL;
    if (!(desc->dL_doutput || desc->dL_doutput_fp16) || !desc->context ||
        (!desc->dL_dparams && !desc->dL_dinput && !desc->dL_dencoding_params && !desc->dL_dencoding_params_fp32)) {
        return gj__fail(&module->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: dL_doutput (or dL_doutput_fp16) and context must not be NULL, and dL_dparams, dL_dinput, "
                        "dL_dencoding_params or dL_dencoding_params_fp32 must be given", call);
    }
    if (desc->dL_doutput && desc->dL_doutput_fp16) {
        return gj__fail(&module->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: give dL_doutput (floats) or dL_doutput_fp16 (fp16 values), not both", call);
    }
    if (model && !desc->input) {
        return gj__fail(&module->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: input must not be NULL (a model's backward pass reads it again)", call);
    }
    if (desc->dL_dparams_mode != GJ_GRAD_OVERWRITE && desc->dL_dparams_mode != GJ_GRAD_ACCUMULATE) {
        return gj__fail(&module->ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "%s: dL_dparams_mode %d is neither overwrite "
                        "nor accumulate", call, (int)desc->dL_dparams_mode);
    }
    float dy_scale = desc->dL_doutput_scale == 0.0f ? 1.0f : desc->dL_doutput_scale;
    gradient_plan grads;
    status = plan_gradients(module, desc, dy_scale, call, &grads);
    if (status != GJ_OK) {
        return status;
    }
    /* The backward with dL/dinput is a kernel of a program of its own, with its zeroing and
     * finishing kernels. A model's writes dL/d(features) (n x the encoding's outputs in its
     * precision, feature-major: the encoding's backward's dL/dy) into the module's workspace, then
     * the encoding module's backward runs; without dL/dinput, the same (unfused) while a thread
     * compiles the fused backward (network_tiers.c), into a buffer of the stream's, as
     * backward passes without dL/dinput may run on several streams at once. */
    const int with_input = desc->dL_dinput != NULL;
    int unfused = model && with_input;
    const gj__network_part fused_part = GJ__NETWORK_PART_BACKWARD;
    if (model && !with_input) {
        unfused = !gj__network_backward_fused(module, stream, call) ||
                  (!gj__network_made(module, &fused_part, 1) &&
                   gj__network_background_compiling(module, GJ__NETWORK_PART_BACKWARD));
    }
    const int input_program = with_input || unfused;
    const gj__network_part part = input_program ? GJ__NETWORK_PART_TRAINING_INPUT : fused_part;
    const gj__network_kernel zero = input_program ? GJ__NK_INPUT_ZERO : GJ__NK_ZERO;
    gj_module *encoding_module = NULL;
    status = gj__network_need_parts(module, &part, 1, call);
    if (status == GJ_OK && unfused) {
        status = gj__network_need_encoding_module(module, &encoding_module);
    }
    void *features = NULL;
    if (status == GJ_OK && unfused) {
        const size_t bytes = gj__network_features_bytes(module, desc->n);
        status = with_input ? gj__workspace_get(&module->features, &module->ctx->runtime, stream, bytes, call, &features)
                            : gj__workspace_get_for_stream(&module->stream_scratch, &module->ctx->runtime, stream,
                                                           bytes, call, &features);
    }
    const int overwrite = desc->dL_dparams_mode == GJ_GRAD_OVERWRITE;
    if (status == GJ_OK && desc->dL_dparams && overwrite) {
        status = gj__network_zero_with(module, zero, stream, desc->dL_dparams, 4 * module->net->layout.n_params);
    }
    if (status == GJ_OK && grads.sums && grads.sums_zeroed && !unfused) {
        status = gj__network_zero_with(module, zero, stream, grads.sums,
                                       gj_network_module_encoding_gradient_size(module) *
                                           module->net->encoding->layout.n_params);
    }
    if (status != GJ_OK) {
        return status;
    }
    uint64_t n = desc->n;
    const float *x = desc->input;
    const void *dy = desc->dL_doutput ? (const void *)desc->dL_doutput : desc->dL_doutput_fp16;
    uint32_t dy_half = desc->dL_doutput == NULL;
    const void *params = desc->params;
    const void *eparams = desc->encoding_params;
    const void *context = desc->context;
    float *dparams = desc->dL_dparams;
    void *deparams = grads.sums;
    float *dx = desc->dL_dinput;
    if (!model && with_input) {
        void *args[] = {&n, &dy, &params, &context, &dparams, &dx, &dy_scale, &dy_half};
        status = gj__network_launch(module, GJ__NK_BACKWARD_INPUT, stream, n, args, call);
    } else if (!model) {
        void *args[] = {&n, &dy, &params, &context, &dparams, &dy_scale, &dy_half};
        status = gj__network_launch(module, GJ__NK_BACKWARD, stream, n, args, call);
    } else {
        const gj__network_features_backward b = {n, x, dy, dy_half, dy_scale, params, eparams, context, dparams, features,
                                                 encoding_module, deparams,
                                                 grads.sums_zeroed ? GJ_GRAD_OVERWRITE : GJ_GRAD_ACCUMULATE, dx};
        status = unfused ? gj__network_backward_through_features(module, stream, &b, call)
                         : gj__network_backward_fused_launch(module, stream, &b, call);
    }
    return status == GJ_OK
               ? finish_gradients(module, stream, desc, &grads, input_program ? GJ__NK_INPUT_FINISH : GJ__NK_FINISH)
               : status;
}

