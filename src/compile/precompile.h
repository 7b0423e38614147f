/* Filling the disk cache ahead of time with every program a module of an encoding (or of a
 * network: gj_network_precompile) needs for one architecture (`gridjit precompile`). */
#ifndef GJ_COMPILE_PRECOMPILE_H
#define GJ_COMPILE_PRECOMPILE_H

#include "compile/compiler.h"

/* Compiles through the cache, on up to threads threads (0: one per CPU), the module
 * programs of resolved opts' passes (and the helpers) for arch. Counts what was compiled
 * and what was already there. The first failure's status and message win. */
gj_status gj__precompile(gj__compiler *c, const struct gj_encoding *enc, const gj_codegen_options *opts,
                         const gj__arch *arch, unsigned threads, gj_precompile_report *report);

/* Compiles the n requests through the cache, side by side on up to threads threads (0: one
 * per CPU; never more than n), and counts them into report (programs, compiled, cached; not
 * ms). names[i] names request i. A failure does not stop the others; the first failure's
 * status and message win, followed by the names of every program that failed. Compiled
 * programs that could not be stored fail the call: precompiling exists to fill the cache. */
gj_status gj__precompile_requests(gj__compiler *c, const gj__compile_request *const *requests,
                                  const char *const *names, size_t n, unsigned threads,
                                  gj_precompile_report *report);

#endif
