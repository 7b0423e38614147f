/* The launches of a network module's kernels: the geometry of its block plan, the carveout of a
 * model's inference kernel, the elementwise kernels, a model's backward through dL/d(features)
 * (network_module.h). */
#include "api/network_module.h"

#include "runtime/l1_carveout.h"
#include "runtime/module.h"
#include "runtime/stream_device.h"

gj_status gj__network_launch_elementwise(gj_network_module *m, gj__network_kernel k, gj_stream stream, uint64_t items,
                                         uint32_t max_blocks, void **args) {
    const uint64_t blocks = (items + 255) / 256;
    gj_launch_config cfg;
    gj_launch_config_init(&cfg);
    cfg.block[0] = 256;
    cfg.grid[0] = (uint32_t)(blocks < 1 ? 1 : blocks < max_blocks ? blocks : max_blocks);
    cfg.stream = stream;
    return gj_kernel_launch(m->kernels[k], &cfg, args);
}

/* Zeroes bytes (a multiple of 4) at p on stream with the backward program's kernel (or the
 * training step program's, k). */
gj_status gj__network_zero_with(gj_network_module *m, gj__network_kernel k, gj_stream stream, void *p, uint64_t bytes) {
    uint64_t words = bytes / 4;
    void *args[] = {&words, &p};
    return gj__network_launch_elementwise(m, k, stream, words, GJ__NETWORK_ELEMENTWISE_BLOCKS, args);
}

/* A model's inference kernel gathers its encoding's table entries through L1: with the shared
 * memory that the most resident blocks would take, a 64 x 4 model's kernel kept 23 KiB of L1 on
 * the H200 and ran at half speed (docs/networks.md, "Shared memory against L1"). So it prefers
 * fewer blocks (l1_carveout.h: within half the capacity, at least two) and the rest as L1, and
 * one where its plan's block is the wide one of 16 warps (one_block: the block that asks for one
 * and is made to be alone); *per_sm becomes the blocks that then fit. k: the inference kernel, or
 * the forward of a model that recomputes (which runs in the inference kernel's block). */
static gj_status prefer_l1(gj_network_module *m, gj__network_kernel k, gj_stream stream, uint32_t shared_bytes,
                           int one_block, int *per_sm, const char *call) {
    int percent = m->carveout, blocks = one_block && *per_sm > 1 ? 1 : *per_sm;
    if (percent == GJ__NETWORK_CARVEOUT_RULE) {
        int smem = 0, reserved = 0;
        gj_status status = gj__stream_device_attribute(
            &m->ctx->runtime, stream, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, call, &smem);
        if (status == GJ_OK) {
            status = gj__stream_device_attribute(&m->ctx->runtime, stream,
                                                 CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, call, &reserved);
        }
        if (status != GJ_OK) {
            return status;
        }
        percent = gj__l1_carveout(smem > 0 ? (uint32_t)smem : 0u, reserved > 0 ? (uint32_t)reserved : 0u,
                                  shared_bytes, blocks, &blocks);
    }
    if (percent == -1 && m->carveout == GJ__NETWORK_CARVEOUT_RULE) {
        return GJ_OK; /* nothing known: the driver's choice stands */
    }
    gj_status status = gj_kernel_set_shared_carveout(m->kernels[k], percent);
    if (status != GJ_OK) {
        return status;
    }
    *per_sm = blocks;
    return GJ_OK;
}

/* A launch of kernel k over n points (launch_shape). */
typedef struct launch_job {
    gj_network_module *m;
    gj__network_kernel k;
    uint64_t n;
    gj_stream stream;
    const char *call;
    void **ring; /* GJ__NK_STEP: set to the module's ring for the grid chosen (an argument of the launch) */
} launch_job;

/* The geometry of a launch of code compiled as a cubin for cubin_sm (0: PTX): the plan of its
 * class (the one its NAME_config stated there), a block of the plan's warps (the forward
 * passes' or the backward's) and shared memory, as many blocks as the tiles need, at most
 * forward_waves waves (the kernels walk the tiles), the backward one wave. */
static gj_status launch_shape(void *arg, int cubin_sm, gj_launch_config *cfg) {
    const launch_job *job = arg;
    gj_network_module *m = job->m;
    const gj__network_kernel k = job->k;
    const gj__network_plan_class cls = gj__network_plan_class_of(cubin_sm);
    const gj__network_plan *plan = &m->plans[cls];
    const int backward = k == GJ__NK_BACKWARD || k == GJ__NK_BACKWARD_INPUT || k == GJ__NK_STEP || k == GJ__NK_STEP_FEATURES;
    /* A model's forward that keeps the input rows alone runs in the inference kernel's block
     * (network_codegen.c, emit_model_kernels). */
    const int wide_forward = k == GJ__NK_FORWARD && m->net->encoding && plan->recompute;
    /* A model's network over its features in two passes (NAME_inference_features, and
     * NAME_forward_features where the forward recomputes) runs in the
     * inference kernel's block; it gathers nothing, so the driver's carveout stands. */
    const int over_features = k == GJ__NK_INFERENCE_FEATURES || k == GJ__NK_FORWARD_FEATURES;
    const int inference = k == GJ__NK_INFERENCE || wide_forward || over_features;
    const uint32_t warps = backward ? plan->warps : inference ? plan->inference_warps : plan->forward_warps;
    const uint32_t threads = 32 * warps;
    const int features = k == GJ__NK_BACKWARD_INPUT && m->net->encoding;
    const uint32_t shared_bytes = k == GJ__NK_STEP_FEATURES                       ? plan->step_input_bytes
                                  : k == GJ__NK_STEP                              ? plan->step_bytes
                                  : features                                 ? plan->backward_input_bytes
                                  : backward                                 ? plan->backward_bytes
                                  : over_features                            ? plan->features_bytes
                                  : inference                                ? plan->inference_bytes
                                                                             : plan->forward_bytes;
    const uint64_t needed = ((job->n + 31) / 32 + warps - 1) / warps;
    /* Asked of the driver once a class: a wave only bounds the grid, which any size computes right. */
    pthread_mutex_lock(&m->lock);
    uint64_t wave = m->wave[cls][k];
    pthread_mutex_unlock(&m->lock);
    if (!wave) {
        int sms = 0, per_sm = 0;
        gj_status status = gj__stream_multiprocessors(&m->ctx->runtime, job->stream, job->call, &sms);
        if (status == GJ_OK) {
            status = gj_kernel_occupancy(m->kernels[k], threads, shared_bytes, &per_sm);
        }
        /* The carveout is the kernel's in every context: the first class launched chooses it
         * (a module on GPUs of both classes keeps that class's choice; speed alone differs). */
        pthread_mutex_lock(&m->lock);
        const int choose_carveout = inference && !over_features && m->net->encoding && !m->carveout_chosen[wide_forward];
        pthread_mutex_unlock(&m->lock);
        if (status == GJ_OK && choose_carveout) {
            status = prefer_l1(m, k, job->stream, shared_bytes, plan->inference_min_blocks == 1, &per_sm, job->call);
            pthread_mutex_lock(&m->lock);
            m->carveout_chosen[wide_forward] = status == GJ_OK;
            pthread_mutex_unlock(&m->lock);
        }
        if (status != GJ_OK) {
            return status;
        }
        wave = (uint64_t)(sms > 0 ? sms : 1) * (uint64_t)(per_sm > 0 ? per_sm : 1);
        pthread_mutex_lock(&m->lock);
        m->wave[cls][k] = wave;
        pthread_mutex_unlock(&m->lock);
    }
    const uint64_t cap = backward ? wave : (uint64_t)m->forward_waves * wave;
    cfg->grid[0] = (uint32_t)(needed < cap ? needed : cap);
    cfg->block[0] = threads;
    cfg->shared_bytes = shared_bytes;
    if (job->ring) {
        /* The training step's warps each keep their tile's context in a slot of their own. */
        const size_t bytes = (size_t)cfg->grid[0] * warps * plan->ctx_halves * 2;
        return gj__workspace_get(&m->ring, &m->ctx->runtime, job->stream, bytes, job->call, job->ring);
    }
    return GJ_OK;
}

/* Launches kernel k over n points with the plan of the code that serves the stream's context;
 * ring (the training step's kernels): the argument launch_shape sets to the warps' slots. */
gj_status gj__network_launch_step(gj_network_module *m, gj__network_kernel k, gj_stream stream, uint64_t n, void **args, void **ring,
                             const char *call) {
    launch_job job = {m, k, n, stream, call, ring};
    return gj__kernel_launch_shaped(m->kernels[k], stream, launch_shape, &job, args, call);
}

gj_status gj__network_launch(gj_network_module *m, gj__network_kernel k, gj_stream stream, uint64_t n, void **args, const char *call) {
    return gj__network_launch_step(m, k, stream, n, args, NULL, call);
}

gj_status gj__network_backward_through_features(gj_network_module *m, gj_stream stream,
                                                const gj__network_features_backward *b, const char *call) {
    uint64_t n = b->n;
    const void *dy = b->dL_dy;
    const void *params = b->params;
    const void *context = b->context;
    float *dparams = b->dL_dparams;
    void *features = b->features;
    float dy_scale = b->dy_scale;
    uint32_t dy_half = b->dy_half;
    void *args[] = {&n, &dy, &params, &context, &dparams, &features, &dy_scale, &dy_half};
    gj_status status = gj__network_launch(m, GJ__NK_BACKWARD_INPUT, stream, n, args, call);
    if (status != GJ_OK || (!b->dL_dencoding_params && !b->dL_dx)) {
        return status; /* the encoding's part: only what was asked for */
    }
    return gj__network_encoding_backward(b->encoding_module, stream, n, b->x, b->encoding_params, features,
                                         b->dL_dencoding_params, b->encoding_mode, b->dL_dx);
}

gj_status gj__network_backward_fused_launch(gj_network_module *m, gj_stream stream,
                                            const gj__network_features_backward *b, const char *call) {
    uint64_t n = b->n;
    const float *x = b->x;
    const void *dy = b->dL_dy;
    const void *params = b->params, *eparams = b->encoding_params, *context = b->context;
    float *dparams = b->dL_dparams;
    void *deparams = b->dL_dencoding_params;
    float dy_scale = b->dy_scale;
    uint32_t dy_half = b->dy_half;
    void *args[] = {&n, &x, &dy, &params, &eparams, &context, &dparams, &deparams, &dy_scale, &dy_half};
    return gj__network_launch(m, GJ__NK_BACKWARD, stream, n, args, call);
}

gj_status gj__network_encoding_backward(gj_module *encoding_module, gj_stream stream, uint64_t n, const float *x,
                                        const void *encoding_params, const void *features, void *dL_dparams,
                                        gj_grad_mode mode, float *dL_dx) {
    gj_backward_desc e;
    gj_backward_desc_init(&e);
    e.n = n;
    e.x = x;
    e.params = encoding_params;
    e.dL_dy = features;
    e.dL_dy_layout = GJ_LAYOUT_SOA;
    e.dL_dparams = dL_dparams;
    e.dL_dparams_mode = mode;
    e.dL_dx = dL_dx;
    return gj_backward(encoding_module, stream, &e);
}
