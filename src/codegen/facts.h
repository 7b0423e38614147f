/* Facts about the generated kernels that follow from the layout and the codegen options
 * (shared by the emitters and the runtime's launch geometry). */
#ifndef GJ_CODEGEN_FACTS_H
#define GJ_CODEGEN_FACTS_H

#include "model/encoding.h"

/* Whether level-major backward sums this level's gradients in shared memory. */
int gj__level_is_small(const gj__config *config, const gj__level *level, const gj_codegen_options *opts);
/* The most gradient floats of a small level (0 if none): NAME_backward_coarse's shared memory. */
uint32_t gj__small_level_floats(const struct gj_encoding *enc, const gj_codegen_options *opts);
/* The floats of the small levels that lead the table (their gradients, in the level's order:
 * a leading small level's at its parameter offset), up to the first level that is not small. */
uint32_t gj__leading_small_floats(const struct gj_encoding *enc, const gj_codegen_options *opts);
/* The index mode the generated code uses for a level (templates/hash.cuh): the layout's
 * (dense, hashed, wrapping), with GJ__INDEX_POW2 where the table size is a power of two. */
#define GJ__INDEX_POW2 4u
uint32_t gj__kernel_index_mode(const gj__level *level);
/* Bit m set when some level (only the small ones: small_only) has kernel index mode m. */
uint32_t gj__index_modes(const struct gj_encoding *enc, const gj_codegen_options *opts, int small_only);
/* Padded output width: n_output_dims rounded up to opts->output_width_multiple. */
uint32_t gj__padded_width(const struct gj_encoding *enc, const gj_codegen_options *opts);
/* Whether gradients are accumulated in fp32: asked for (gradients_fp32), fp32 params, or
 * F = 1 (docs/design.md §8.3). */
int gj__grad_is_fp32(const gj__config *config, const gj_codegen_options *opts);
/* Whether a level-major forward's level groups (NAME_forward_rows) are split across the
 * block's threads, one level a thread, rather than walked by each thread: where a level's
 * entry (F values) takes at least 8 bytes, so that a sector's worth of levels is at most
 * four (C3 and F = 8: faster split; C1's groups of eight: faster walked; docs/runtime.md,
 * "Launch shapes"). Emitted as NAME_config::FORWARD_SPLIT; the runtime shapes the grid. */
#define GJ__FORWARD_SPLIT_MIN_ENTRY_BYTES 8u
int gj__forward_split(const gj__config *config, const gj_codegen_options *opts);
/* The fixed-point cell size of a level: max((uint32)(2^32 / scale), 1), saturating like the GPU. */
uint32_t gj__fixed_point_cell(float scale);

#endif
