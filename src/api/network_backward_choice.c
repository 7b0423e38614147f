/* Whether a model's backward to the parameters runs as its fused kernel or apart
 * (network_module.h; docs/networks.md §9, "The backward apart where the gradients outgrow L2").
 *
 * The fused backward adds each point's encoding gradients for all its levels at once: its atomics
 * land all over every level's gradient table. Where those tables stay in L2 the fused kernel wins
 * (the features never go to memory); where they do not, its atomics evict each other's lines, and
 * the network's kernel writing dL/d(features) followed by the encoding's own level-major backward,
 * whose blocks work through one level's table at a time, is faster. Measured on an H100 (50 MiB of
 * L2; forty-fifth session, C1 + 64 x 2 -> 16, 2^21 points, the backward to the parameters, ms):
 *
 *   gradient sums  tables            share of L2  fused        apart
 *   fp16           2^19 (28.5 MB)    0.54         2.29, 2.28   2.46, 2.47
 *   fp16           2^20 (55.7 MB)    1.06         4.95, 4.95   2.49, 2.49
 *   fp16           2^22 (211 MB)     4.0          8.15         2.69
 *   fp32           2^18 (29.6 MB)    0.56         3.13, 3.12   2.84, 2.84
 *   fp32           2^19 (56.9 MB)    1.09         6.23         2.87
 *
 * So fp16 sums stay fused up to three quarters of the L2 (a bound between the two measured
 * shares), and fp32 sums, whose atomics move twice the bytes, run apart (smaller fp32 tables are
 * unmeasured). */
#include "api/network_module.h"

#include "runtime/stream_device.h"

/* The fused backward where the encoding's fp16 gradient tables take at most this share of the
 * device's L2 (numerator / denominator). */
#define FUSED_L2_NUMERATOR 3u
#define FUSED_L2_DENOMINATOR 4u

int gj__network_fused_backward_fits(unsigned gradient_size, uint64_t gradient_table_bytes, uint64_t l2_bytes) {
    return gradient_size == 2 && gradient_table_bytes * FUSED_L2_DENOMINATOR <= l2_bytes * FUSED_L2_NUMERATOR;
}

int gj__network_backward_fused(gj_network_module *m, gj_stream stream, const char *call) {
    if (!m->net->encoding) {
        return 0;
    }
    if (m->fused_backward_knob != 0) {
        return m->fused_backward_knob > 0;
    }
    /* Asked of the driver once a module, off the passes' path after that: a module whose passes
     * run on GPUs of different L2 sizes keeps the first one's choice (speed alone differs). */
    pthread_mutex_lock(&m->lock);
    int64_t l2 = m->l2_bytes;
    pthread_mutex_unlock(&m->lock);
    if (l2 == 0) {
        int said = 0;
        const gj_status status =
            gj__stream_device_attribute(&m->ctx->runtime, stream, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, call, &said);
        if (status != GJ_OK) {
            gj__diag_clear(&m->ctx->diag); /* the launch that follows reports a driver that does not answer */
        }
        l2 = status == GJ_OK && said > 0 ? said : -1;
        pthread_mutex_lock(&m->lock);
        m->l2_bytes = l2;
        pthread_mutex_unlock(&m->lock);
    }
    const unsigned size = (unsigned)gj_network_module_encoding_gradient_size(m);
    if (l2 < 0) { /* a device that does not say: fp16 sums fused, as before the rule; fp32 apart */
        return size == 2;
    }
    return gj__network_fused_backward_fits(size, (uint64_t)size * m->net->encoding->layout.n_params, (uint64_t)l2);
}
