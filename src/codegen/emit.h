/* The pieces of the generated translation unit, one emitter each (codegen.c orders them). */
#ifndef GJ_CODEGEN_EMIT_H
#define GJ_CODEGEN_EMIT_H

#include "base/strbuf.h"
#include "codegen/kernels.h"
#include "model/encoding.h"

/* Comment block: version, configuration, layout summary, and options_text (the compile
 * options, one per line, from the compiler layer; may be NULL). */
void gj__emit_header(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts, gj__part part,
                     const char *options_text);
/* NAME_config, NAME_in_t, NAME_out_t. */
void gj__emit_types(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts);
/* NAME, NAME_bwd, NAME_bwdbwd: one device function per pass, looping over the level table
 * (templates/grid_level.cuh, gj_levels_*) or, with unroll_levels, its levels unrolled. */
void gj__emit_forward_function(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts);
void gj__emit_backward_function(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts);
void gj__emit_backward_backward_function(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts);
/* NAME_level_table (constant memory) and NAME_levels, its accessor: the kernels' per-level
 * constants. */
void gj__emit_level_table(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts);
/* The __global__ kernels of the unit (part). */
void gj__emit_kernels(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts, gj__part part);

#endif
