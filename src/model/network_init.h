/* tiny-cuda-nn's initialisation of an MLP's weights (docs/networks.md §5), on the host. */
#ifndef GJ_MODEL_NETWORK_INIT_H
#define GJ_MODEL_NETWORK_INIT_H

#include "model/network_layout.h"

/* The bound b of layer l: Xavier uniform on the stored shape, or SIREN's for a Sine hidden
 * activation (30 / fan_in for layer 0, sqrt(6 / fan_in) for the others), times scale. */
float gj__network_init_bound(const gj__network_layout *layout, gj_activation activation, uint32_t layer, float scale);

/* params[0 .. n_params): one pcg32 stream seeded (seed, 1), one float r in [0, 1) per weight,
 * layer after layer in memory order, w = r * 2 * b - b in float, as tiny-cuda-nn draws them. */
void gj__network_init_params(const gj__network_layout *layout, gj_activation activation, uint64_t seed, float scale,
                             float *params);

/* out[i] = (2 r_i - 1) * bound, r_i the i-th float in [0, 1) of one pcg32 stream seeded
 * (seed, 1): an encoding's uniform initialisation (docs/design.md §2.8) drawn in sequence. */
void gj__uniform_init_params(uint64_t seed, float bound, float *out, uint64_t n);

#endif
