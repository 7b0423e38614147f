/* Facts about the generated kernels that follow from the layout and the codegen
 * options: shared by the emitters and by the runtime's launch geometry. */
#include "codegen/facts.h"

/* Level-major backward sums a level in shared memory when its gradients fit in the 48 KiB
 * that every launch may take without opting in. */
#define GJ__SMALL_LEVEL_MAX_FLOATS 12288u

int gj__level_is_small(const gj__config *config, const gj__level *level, const gj_codegen_options *opts) {
    return opts->order == GJ_ORDER_LEVEL_MAJOR &&
           (uint64_t)level->entries * config->n_features_per_level <= GJ__SMALL_LEVEL_MAX_FLOATS;
}

uint32_t gj__small_level_floats(const struct gj_encoding *enc, const gj_codegen_options *opts) {
    uint32_t most = 0;
    for (uint32_t l = 0; l < enc->layout.n_levels; ++l) {
        const gj__level *level = &enc->layout.levels[l];
        if (gj__level_is_small(&enc->config, level, opts) && level->entries * enc->config.n_features_per_level > most) {
            most = level->entries * enc->config.n_features_per_level;
        }
    }
    return most;
}

uint32_t gj__leading_small_floats(const struct gj_encoding *enc, const gj_codegen_options *opts) {
    uint32_t floats = 0;
    for (uint32_t l = 0; l < enc->layout.n_levels; ++l) {
        const gj__level *level = &enc->layout.levels[l];
        if (!gj__level_is_small(&enc->config, level, opts)) {
            break;
        }
        floats += level->entries * enc->config.n_features_per_level;
    }
    return floats;
}

uint32_t gj__padded_width(const struct gj_encoding *enc, const gj_codegen_options *opts) {
    const uint32_t n = enc->layout.n_output_dims, m = opts->output_width_multiple ? opts->output_width_multiple : 1;
    return (n + m - 1) / m * m;
}

int gj__grad_is_fp32(const gj__config *config, const gj_codegen_options *opts) {
    return opts->gradients_fp32 || config->precision == GJ_PRECISION_FP32 || config->n_features_per_level == 1;
}

int gj__forward_split(const gj__config *config, const gj_codegen_options *opts) {
    const uint32_t entry = config->n_features_per_level * (config->precision == GJ_PRECISION_FP16 ? 2u : 4u);
    return opts->order == GJ_ORDER_LEVEL_MAJOR && entry >= GJ__FORWARD_SPLIT_MIN_ENTRY_BYTES;
}

uint32_t gj__fixed_point_cell(float scale) {
    const float q = 4294967296.0f / scale;
    uint32_t cell;
    if (!(q > 0.0f)) {
        cell = 0; /* negative or NaN: cvt.rzi.u32 gives 0 */
    } else if (q >= 4294967296.0f) {
        cell = UINT32_MAX; /* saturates */
    } else {
        cell = (uint32_t)q;
    }
    return cell ? cell : 1;
}


uint32_t gj__kernel_index_mode(const gj__level *level) {
    const uint32_t entries = level->entries;
    return (uint32_t)level->index_mode | ((entries & (entries - 1u)) == 0 ? GJ__INDEX_POW2 : 0u);
}

uint32_t gj__index_modes(const struct gj_encoding *enc, const gj_codegen_options *opts, int small_only) {
    uint32_t modes = 0;
    for (uint32_t l = 0; l < enc->layout.n_levels; ++l) {
        const gj__level *level = &enc->layout.levels[l];
        if (!small_only || gj__level_is_small(&enc->config, level, opts)) {
            modes |= 1u << gj__kernel_index_mode(level);
        }
    }
    return modes;
}
