/* tiny-cuda-nn's MLP initialisation (network_init.h), step by step in float as it does it. */
#include "model/network_init.h"

#include <math.h>
#include <string.h>

/* pcg32 (O'Neill), as tiny-cuda-nn's random.h seeds and draws it. */
typedef struct pcg32 {
    uint64_t state, inc;
} pcg32;

static uint32_t pcg32_next(pcg32 *r) {
    const uint64_t old = r->state;
    r->state = old * 6364136223846793005ull + r->inc;
    const uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    const uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

static void pcg32_seed(pcg32 *r, uint64_t initstate, uint64_t initseq) {
    r->state = 0;
    r->inc = (initseq << 1u) | 1u;
    (void)pcg32_next(r);
    r->state += initstate;
    (void)pcg32_next(r);
}

/* A float in [0, 1): 23 random mantissa bits under the exponent of 1, minus 1. */
static float pcg32_next_float(pcg32 *r) {
    const uint32_t bits = (pcg32_next(r) >> 9) | 0x3f800000u;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f - 1.0f;
}

float gj__network_init_bound(const gj__network_layout *layout, gj_activation activation, uint32_t layer, float scale) {
    const gj__network_layer *l = &layout->layers[layer];
    if (activation == GJ_ACTIVATION_SINE) {
        return layer == 0 ? scale * (30.0f / (float)l->fan_in) : scale * sqrtf(6.0f / (float)l->fan_in);
    }
    return scale * sqrtf(6.0f / (float)(l->fan_in + l->fan_out));
}

void gj__network_init_params(const gj__network_layout *layout, gj_activation activation, uint64_t seed, float scale,
                             float *params) {
    pcg32 rng;
    pcg32_seed(&rng, seed, 1u);
    for (uint32_t l = 0; l < layout->n_layers; ++l) {
        const gj__network_layer *layer = &layout->layers[l];
        const float b = gj__network_init_bound(layout, activation, l, scale);
        const uint64_t n = (uint64_t)layer->fan_in * layer->fan_out;
        for (uint64_t i = 0; i < n; ++i) {
            const float twice = pcg32_next_float(&rng) * 2.0f; /* rounded on its own, as in tiny-cuda-nn */
            params[layer->offset + i] = twice * b - b;
        }
    }
}

void gj__uniform_init_params(uint64_t seed, float bound, float *out, uint64_t n) {
    pcg32 rng;
    pcg32_seed(&rng, seed, 1u);
    for (uint64_t i = 0; i < n; ++i) {
        const float r = pcg32_next_float(&rng);
        out[i] = (2.0f * r - 1.0f) * bound;
    }
}
