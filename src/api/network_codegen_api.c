/* gj_network_generate: a network's (or a model's) CUDA source (docs/networks.md §7). */
#include "api/context.h"

#include "codegen/options.h"
#include "compile/network_unit.h"

#include <string.h>

gj_status gj_network_generate(gj_context *ctx, const gj_network *net, const gj_codegen_options *opts, char **source,
                              size_t *length) {
    if (source) {
        *source = NULL;
    }
    GJ__ENTER(ctx);
    if (!net || !source) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_network_generate: net and source must not be NULL");
    }
    gj_codegen_options resolved;
    gj_status status = gj__codegen_options_resolve(&ctx->diag, opts, &resolved);
    if (status != GJ_OK) {
        return status;
    }
    *source = gj__network_source(&ctx->compiler, net, &resolved, GJ__NETWORK_PART_ALL);
    if (!*source) {
        return gj__fail(&ctx->diag, GJ_ERROR_OUT_OF_MEMORY, "out of memory while generating source");
    }
    if (length) {
        *length = strlen(*source);
    }
    return GJ_OK;
}
