/* The pieces of the generated translation unit, one emitter each (codegen.c orders them). */
#ifndef GJ_CODEGEN_EMIT_H
#define GJ_CODEGEN_EMIT_H

#include "base/strbuf.h"
#include "codegen/kernels.h"
#include "model/encoding.h"

/* templates/NAME, headed by a comment naming it; a template missing from the build fails
 * sb (such a build is broken). */
void gj__emit_template(gj__strbuf *sb, const char *name);
/* The header's "Compile options" lines: options_text (one option per line; may be NULL),
 * each as a comment. Shared by the encoding and network units. */
void gj__emit_options_comment(gj__strbuf *sb, const char *options_text);
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
