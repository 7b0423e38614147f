/* Filling the disk cache ahead of time with every program a module of an encoding needs
 * for one architecture (gj_precompile, `gridjit precompile`). */
#ifndef GJ_COMPILE_PRECOMPILE_H
#define GJ_COMPILE_PRECOMPILE_H

#include "compile/compiler.h"

/* Compiles through the cache, on up to threads threads (0: one per CPU), the module
 * programs of resolved opts' passes (and the helpers) for arch. Counts what was compiled
 * and what was already there. The first failure's status and message win. */
gj_status gj__precompile(gj__compiler *c, const struct gj_encoding *enc, const gj_codegen_options *opts,
                         const gj__arch *arch, unsigned threads, gj_precompile_report *report);

#endif
