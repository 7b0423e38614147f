/* The public entry points of the model and code generation that take a context. */
#include "api/context.h"

#include "codegen/options.h"
#include "compile/encoding_unit.h"

#include <string.h>

gj_status gj_encoding_create(gj_context *ctx, const char *json, uint32_t n_dims, gj_encoding **out) {
    if (out) {
        *out = NULL;
    }
    GJ__ENTER(ctx);
    if (!out) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_encoding_create: out must not be NULL");
    }
    char err[1024] = "";
    gj_status status = gj__encoding_make(json, n_dims, out, err, sizeof err);
    return status == GJ_OK ? GJ_OK : gj__fail(&ctx->diag, status, "%s", err);
}

gj_status gj_encoding_generate(gj_context *ctx, const gj_encoding *enc, const gj_codegen_options *opts, char **source,
                               size_t *length) {
    if (source) {
        *source = NULL;
    }
    GJ__ENTER(ctx);
    if (!enc || !source) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_encoding_generate: enc and source must not be NULL");
    }
    gj_codegen_options resolved;
    gj_status status = gj__codegen_options_resolve(&ctx->diag, opts, &resolved);
    if (status != GJ_OK) {
        return status;
    }
    *source = gj__encoding_source(&ctx->compiler, enc, &resolved, GJ__PART_ALL);
    if (!*source) {
        return gj__fail(&ctx->diag, GJ_ERROR_OUT_OF_MEMORY, "out of memory while generating source");
    }
    if (length) {
        *length = strlen(*source);
    }
    return GJ_OK;
}
