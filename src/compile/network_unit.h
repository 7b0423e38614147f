/* A network's generated source with the compile options stated in its header (as
 * encoding_unit.h does for encodings). */
#ifndef GJ_COMPILE_NETWORK_UNIT_H
#define GJ_COMPILE_NETWORK_UNIT_H

#include "codegen/network_codegen.h"
#include "compile/compiler.h"

/* The unit of part for net and resolved opts. malloc()ed; NULL on OOM. */
char *gj__network_source(gj__compiler *c, const struct gj_network *net, const gj_codegen_options *opts,
                         gj__network_part part);

#endif
