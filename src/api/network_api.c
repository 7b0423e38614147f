/* The public entry points that make networks (the getters live with the object, in
 * src/model/network.c). */
#include "api/context.h"
#include "api/lenient.h"

#include "model/json_reader.h"
#include "model/network.h"

gj_status gj_network_create(gj_context *ctx, const char *json, uint32_t n_input_dims, uint32_t n_output_dims,
                            gj_network **out) {
    return gj_network_create_ex(ctx, json, n_input_dims, n_output_dims, 0, NULL, out);
}

gj_status gj_network_create_ex(gj_context *ctx, const char *json, uint32_t n_input_dims, uint32_t n_output_dims,
                               uint32_t flags, char **ignored, gj_network **out) {
    if (out) {
        *out = NULL;
    }
    if (ignored) {
        *ignored = NULL;
    }
    GJ__ENTER(ctx);
    if (!out) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_network_create: out must not be NULL");
    }
    gj_status status = gj__check_config_flags(&ctx->diag, "gj_network_create_ex", flags);
    if (status != GJ_OK) {
        return status;
    }
    char err[1024] = "";
    gj__strbuf skipped;
    gj__sb_init(&skipped);
    status = gj__network_make_ex(json, n_input_dims, n_output_dims, flags, ignored ? &skipped : NULL, out,
                                           err, sizeof err);
    if (status != GJ_OK) {
        gj__sb_free(&skipped);
        return gj__fail(&ctx->diag, status, "%s", err);
    }
    status = gj__hand_over_ignored(&ctx->diag, "gj_network_create_ex", &skipped, ignored);
    if (status != GJ_OK) {
        gj_network_destroy(*out);
        *out = NULL;
    }
    return status;
}
