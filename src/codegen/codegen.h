/* CUDA source generation for an encoding (docs/design.md §7, docs/codegen.md). */
#ifndef GJ_CODEGEN_CODEGEN_H
#define GJ_CODEGEN_CODEGEN_H

#include "codegen/kernels.h"
#include "model/encoding.h"

/* The translation unit for enc and resolved opts: part ALL is the whole unit (device
 * functions of opts->passes and every kernel), a module part that part's kernels alone
 * (independent of opts->passes, so that modules of other pass sets share it).
 * options_text: the compile options to state in the header comment (one per line; NULL:
 * none). NULL on OOM. */
char *gj__codegen(const struct gj_encoding *enc, const gj_codegen_options *opts, gj__part part,
                  const char *options_text);

#endif
