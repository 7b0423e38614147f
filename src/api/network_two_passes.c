/* A model's forward passes in two (docs/networks.md §9, "Inference in two passes"): the encoding
 * module's level-major forward writes the features feature-major into a buffer of the stream's,
 * then the network's kernel over features (NAME_inference_features, NAME_forward_features) runs
 * over them, chunk by chunk, the chunks overlapped on two streams where the module asks
 * (network_module.h). */
#include "api/network_module.h"

#include "runtime/module.h"

/* The features go through the stream's buffer in chunks of at most this many bytes: 2^21 points
 * of 32 fp16 features in one. */
#define FEATURES_CHUNK_BYTES (128ull << 20)

/* The points of the chunk from start: chunk of them, fewer at the batch's end. */
static uint64_t chunk_points(const gj__network_two_passes *t, uint64_t start, uint64_t chunk) {
    return t->n - start < chunk ? t->n - start : chunk;
}

/* The encoding module's forward of points [start, start + n) into features (feature-major). */
static gj_status encode_chunk(gj_network_module *m, gj_module *encoding_module, gj_stream stream,
                              const gj__network_two_passes *t, uint64_t start, uint64_t n, void *features) {
    gj_forward_desc f;
    gj_forward_desc_init(&f);
    f.n = n;
    f.x = t->x + start * m->net->encoding->config.n_dims;
    f.params = t->encoding_params;
    f.y = features;
    f.y_layout = GJ_LAYOUT_SOA;
    return gj_forward(encoding_module, stream, &f);
}

/* The network's kernel over points [start, start + n) (start a multiple of 32: the context is
 * kept a tile of 32 points at a time), their features in features. */
static gj_status network_chunk(gj_network_module *m, gj_stream stream, const gj__network_two_passes *t,
                               uint64_t start, uint64_t n, const void *features, const char *call) {
    float *y = t->y + start * m->net->layout.output_width;
    const void *params = t->params;
    void *ctx = t->context ? (char *)t->context + start / 32 * m->plans[GJ__NETWORK_PLAN_PORTABLE].pass_ctx_halves * 2
                           : NULL;
    void *args[] = {&n, &features, &y, &params, &ctx};
    return gj__network_launch(m, t->kernel, stream, n, args, call);
}

/* The chunks overlapped (m->overlap_log2): the network over chunk k on the context's side
 * stream while the caller's stream encodes chunk k + 1, two buffers taking turns. Each turn
 * forks (the side stream waits for chunk k's encoding), launches the network over chunk k there,
 * encodes chunk k + 1 on the caller's stream and joins (the caller's stream waits for the
 * network over chunk k, whose buffer chunk k + 2's encoding overwrites). A stream being
 * captured gets no fork: then everything runs on it, in order. */
static gj_status overlapped_chunks(gj_network_module *m, gj_module *encoding_module, gj_stream stream,
                                   const gj__network_two_passes *t, uint64_t chunk, void *buffers[2],
                                   const char *call) {
    gj__driver *drv = NULL;
    gj__scope where;
    gj_status status = gj__driver_get(m->ctx->runtime.driver, &m->ctx->diag, &drv);
    if (status == GJ_OK) {
        status = gj__scope_enter(&m->ctx->diag, drv, stream, call, &where);
    }
    if (status != GJ_OK) {
        return status;
    }
    status = encode_chunk(m, encoding_module, stream, t, 0, chunk_points(t, 0, chunk), buffers[0]);
    for (uint64_t start = 0, k = 0; status == GJ_OK && start < t->n; start += chunk, ++k) {
        const uint64_t n = chunk_points(t, start, chunk);
        const gj__side_stream *side = NULL;
        status = gj__side_fork(&m->beside, &m->ctx->diag, drv, &where, stream, call, &side);
        if (status != GJ_OK) {
            break;
        }
        status = network_chunk(m, side ? (gj_stream)side->stream : stream, t, start, n, buffers[k % 2], call);
        const uint64_t next = start + n;
        if (status == GJ_OK && next < t->n) {
            status = encode_chunk(m, encoding_module, stream, t, next, chunk_points(t, next, chunk), buffers[(k + 1) % 2]);
        }
        if (side) {
            const gj_status joined = gj__side_join(&m->beside, &m->ctx->diag, drv, side, stream, call);
            status = status == GJ_OK ? joined : status;
        }
    }
    gj__scope_leave(drv, &where);
    return status;
}

gj_status gj__network_two_passes_run(gj_network_module *m, gj_module *encoding_module, gj_stream stream,
                                     const gj__network_two_passes *t, const char *call) {
    const uint64_t row_bytes = gj__network_features_bytes(m, 1);
    const int overlap = m->overlap_log2 && t->n > (1ull << m->overlap_log2);
    const uint64_t most = FEATURES_CHUNK_BYTES / row_bytes / 32 * 32;
    const uint64_t chunk = overlap ? 1ull << m->overlap_log2 : t->n < most ? t->n : most;
    void *features = NULL;
    gj_status status = gj__workspace_get_for_stream(&m->stream_scratch, &m->ctx->runtime, stream,
                                                    chunk * row_bytes * (overlap ? 2 : 1), call, &features);
    if (status == GJ_OK && overlap) {
        void *buffers[2] = {features, (char *)features + chunk * row_bytes};
        return overlapped_chunks(m, encoding_module, stream, t, chunk, buffers, call);
    }
    for (uint64_t start = 0; status == GJ_OK && start < t->n; start += chunk) {
        const uint64_t n = chunk_points(t, start, chunk);
        status = encode_chunk(m, encoding_module, stream, t, start, n, features);
        if (status == GJ_OK) {
            status = network_chunk(m, stream, t, start, n, features, call);
        }
    }
    return status;
}

gj_status gj__network_model_forward(gj_network_module *m, gj_stream stream, uint64_t n, const float *x, float *y,
                                    const void *params, const void *encoding_params, void *context,
                                    const char *call) {
    if (m->forward_features) {
        gj_module *encoding_module = NULL;
        gj_status status = gj__network_need_encoding_module(m, &encoding_module);
        if (status != GJ_OK) {
            return status;
        }
        const gj__network_two_passes t = {GJ__NK_FORWARD_FEATURES, n, x, y, params, encoding_params, context};
        return gj__network_two_passes_run(m, encoding_module, stream, &t, call);
    }
    void *args[] = {&n, &x, &y, &params, &encoding_params, &context};
    return gj__network_launch(m, GJ__NK_FORWARD, stream, n, args, call);
}
