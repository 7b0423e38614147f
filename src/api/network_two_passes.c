/* A model's forward passes in two (docs/networks.md §9, "Inference in two passes"): the encoding
 * module's level-major forward writes the features feature-major into a buffer of the stream's,
 * then the network's kernel over features (NAME_inference_features, NAME_forward_features) runs
 * over them, chunk by chunk on the caller's stream (overlapping the chunks on two streams was
 * measured slower: docs/benchmarks.md §11, the forty-first session). */
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
    void *y = (char *)t->y.p + start * m->net->layout.output_width * (t->y.half ? 2 : 4);
    uint32_t y_half = t->y.half;
    const void *params = t->params;
    void *ctx = t->context ? (char *)t->context + start / 32 * m->plans[GJ__NETWORK_PLAN_PORTABLE].pass_ctx_halves * 2
                           : NULL;
    /* NAME_inference_features takes no context */
    void *args_inference[] = {&n, &features, &y, &params, &y_half};
    void *args_forward[] = {&n, &features, &y, &params, &ctx, &y_half};
    void **args = t->kernel == GJ__NK_FORWARD_FEATURES ? args_forward : args_inference;
    return gj__network_launch(m, t->kernel, stream, n, args, call);
}

gj_status gj__network_two_passes_run(gj_network_module *m, gj_module *encoding_module, gj_stream stream,
                                     const gj__network_two_passes *t, const char *call) {
    const uint64_t row_bytes = gj__network_features_bytes(m, 1);
    const uint64_t most = FEATURES_CHUNK_BYTES / row_bytes / 32 * 32;
    const uint64_t chunk = t->n < most ? t->n : most;
    void *features = NULL;
    gj_status status = gj__workspace_get_for_stream(&m->two_pass_features, &m->ctx->runtime, stream,
                                                    chunk * row_bytes, call, &features);
    for (uint64_t start = 0; status == GJ_OK && start < t->n; start += chunk) {
        const uint64_t n = chunk_points(t, start, chunk);
        status = encode_chunk(m, encoding_module, stream, t, start, n, features);
        if (status == GJ_OK) {
            status = network_chunk(m, stream, t, start, n, features, call);
        }
    }
    return status;
}

gj_status gj__network_model_forward(gj_network_module *m, gj_stream stream, uint64_t n, const float *x, gj__network_out y,
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
    void *args[] = {&n, &x, &y.p, &params, &encoding_params, &context, &y.half};
    return gj__network_launch(m, GJ__NK_FORWARD, stream, n, args, call);
}
