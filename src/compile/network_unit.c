/* Network sources with their compile options (network_unit.h). */
#include "compile/network_unit.h"

#include "compile/options.h"

#include <stdlib.h>

char *gj__network_source(gj__compiler *c, const struct gj_network *net, const gj_codegen_options *opts,
                         gj__network_part part) {
    /* A network module's programs are compiled as user sources are (one unit, no split). */
    const unsigned flags = gj__compile_option_flags(gj__compiler_lineinfo(c), 0);
    char *options = gj__compile_options_text("<target>", flags);
    char *source = options ? gj__network_codegen(net, opts, part, options) : NULL;
    free(options);
    return source;
}
