/* gj_context: creation, destruction, errors, logging, compile settings. */
#include "api/context.h"

#include <stdlib.h>
#include <string.h>

gj_status gj_context_create(gj_context **out) {
    if (!out) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj_context *ctx = calloc(1, sizeof *ctx);
    *out = ctx;
    if (!ctx) {
        return GJ_ERROR_OUT_OF_MEMORY;
    }
    if (gj__store_init(&ctx->store) != 0) {
        free(ctx);
        *out = NULL;
        return GJ_ERROR_OUT_OF_MEMORY;
    }
    gj__diag_init(&ctx->diag);
    gj__diag_forget(&ctx->diag); /* a context made where a destroyed one was has no message */
    gj__nvrtc_loader_init(&ctx->nvrtc);
    gj__driver_loader_init(&ctx->driver);
    gj__compiler_init(&ctx->compiler, &ctx->diag, &ctx->nvrtc, &ctx->store);
    ctx->runtime.diag = &ctx->diag;
    ctx->runtime.driver = &ctx->driver;
    ctx->runtime.compiler = &ctx->compiler;
    pthread_mutex_init(&ctx->lock, NULL);
    return GJ_OK;
}

void gj_context_destroy(gj_context *ctx) {
    if (!ctx) {
        return;
    }
    gj__store_release(&ctx->store);
    gj__driver_loader_release(&ctx->driver);
    gj__nvrtc_loader_release(&ctx->nvrtc);
    gj__diag_forget(&ctx->diag);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

const char *gj_context_errmsg(const gj_context *ctx) {
    return ctx ? gj__diag_message(&ctx->diag) : "no context";
}

void gj_context_set_log(gj_context *ctx, gj_log_fn fn, void *user) {
    if (ctx) {
        ctx->diag.log_fn = fn;
        ctx->diag.log_user = user;
    }
}

void gj_context_set_log_level(gj_context *ctx, gj_log_level level) {
    if (ctx) {
        atomic_store(&ctx->diag.log_level, (int)level);
    }
}

gj_status gj_context_set_nvrtc_enabled(gj_context *ctx, int enabled) {
    GJ__ENTER(ctx);
    gj__nvrtc_set_enabled(&ctx->nvrtc, enabled);
    return GJ_OK;
}

gj_status gj_context_set_lineinfo(gj_context *ctx, int lineinfo) {
    GJ__ENTER(ctx);
    atomic_store(&ctx->compiler.lineinfo, lineinfo < 0 ? -1 : lineinfo != 0);
    return GJ_OK;
}
