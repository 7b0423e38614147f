/* The public entry points of the model and code generation that take a context. */
#include "api/context.h"
#include "api/lenient.h"

#include "codegen/options.h"
#include "compile/encoding_unit.h"
#include "model/json_reader.h"

#include <string.h>

gj_status gj_encoding_create(gj_context *ctx, const char *json, uint32_t n_dims, gj_encoding **out) {
    return gj_encoding_create_ex(ctx, json, n_dims, 0, NULL, out);
}

gj_status gj_encoding_create_ex(gj_context *ctx, const char *json, uint32_t n_dims, uint32_t flags, char **ignored,
                                gj_encoding **out) {
    if (out) {
        *out = NULL;
    }
    if (ignored) {
        *ignored = NULL;
    }
    GJ__ENTER(ctx);
    if (!out) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_encoding_create: out must not be NULL");
    }
    gj_status status = gj__check_config_flags(&ctx->diag, "gj_encoding_create_ex", flags);
    if (status != GJ_OK) {
        return status;
    }
    char err[1024] = "";
    gj__strbuf skipped;
    gj__sb_init(&skipped);
    status = gj__encoding_make_ex(json, n_dims, flags, ignored ? &skipped : NULL, out, err, sizeof err);
    if (status != GJ_OK) {
        gj__sb_free(&skipped);
        return gj__fail(&ctx->diag, status, "%s", err);
    }
    status = gj__hand_over_ignored(&ctx->diag, "gj_encoding_create_ex", &skipped, ignored);
    if (status != GJ_OK) {
        gj_encoding_destroy(*out);
        *out = NULL;
    }
    return status;
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
