/* The pieces of the generated translation unit, one emitter each (codegen.c orders them). */
#ifndef GJ_CODEGEN_EMIT_H
#define GJ_CODEGEN_EMIT_H

#include "encoding.h"
#include "strbuf.h"

/* Comment block: version, configuration, layout summary, compile options. */
void gj__emit_header(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts);
/* NAME_config, NAME_in_t, NAME_out_t. */
void gj__emit_types(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts);
/* NAME, NAME_bwd, NAME_bwdbwd: one device function per pass, levels unrolled. */
void gj__emit_forward_function(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts);
void gj__emit_backward_function(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts);
void gj__emit_backward_backward_function(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts);
/* NAME_levels: the per-level constants as a switch, for the kernels. */
void gj__emit_level_table(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts);
/* The __global__ kernels. */
void gj__emit_kernels(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts);

/* Whether level-major backward sums this level's gradients in shared memory. */
int gj__level_is_small(const gj__config *config, const gj__level *level, const gj_codegen_options *opts);
/* The most gradient floats of a small level (0 if none): NAME_backward_coarse's shared memory. */
uint32_t gj__small_level_floats(const struct gj_encoding *enc, const gj_codegen_options *opts);
/* Padded output width: n_output_dims rounded up to opts->output_width_multiple. */
uint32_t gj__padded_width(const struct gj_encoding *enc, const gj_codegen_options *opts);
/* Whether gradients are accumulated in fp32 (fp32 params, or F = 1: SPEC §8.3). */
int gj__grad_is_fp32(const gj__config *config);
/* The fixed-point cell size of a level: max((uint32)(2^32 / scale), 1), saturating like the GPU. */
uint32_t gj__fixed_point_cell(float scale);

#endif
