/* gj_context: creation, error messages and logging. */
#include "context.h"
#include "cache.h"
#include "driver.h"
#include "nvrtc_loader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void default_log(void *user, gj_log_level level, const char *message) {
    (void)user;
    if (level >= GJ_LOG_WARNING) {
        fprintf(stderr, "gridjit: %s%s\n", level == GJ_LOG_ERROR ? "error: " : "warning: ", message);
    }
}

gj_status gj_context_create(gj_context **out) {
    if (!out) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj_context *ctx = calloc(1, sizeof *ctx);
    *out = ctx;
    if (!ctx) {
        return GJ_ERROR_OUT_OF_MEMORY;
    }
    ctx->log_fn = default_log;
    return GJ_OK;
}

void gj_context_destroy(gj_context *ctx) {
    if (!ctx) {
        return;
    }
    gj__cache_release(ctx->cache);
    gj__driver_release(ctx->driver);
    gj__nvrtc_release(ctx->nvrtc);
    free(ctx);
}

const char *gj_context_errmsg(const gj_context *ctx) {
    return ctx ? ctx->errmsg : "no context";
}

void gj_context_set_log(gj_context *ctx, gj_log_fn fn, void *user) {
    if (ctx) {
        ctx->log_fn = fn;
        ctx->log_user = user;
    }
}

gj_status gj__fail(gj_context *ctx, gj_status status, const char *fmt, ...) {
    if (ctx) {
        va_list args;
        va_start(args, fmt);
        vsnprintf(ctx->errmsg, sizeof ctx->errmsg, fmt, args);
        va_end(args);
    }
    return status;
}

void gj__clear_error(gj_context *ctx) {
    if (ctx) {
        ctx->errmsg[0] = '\0';
    }
}

void gj__log(gj_context *ctx, gj_log_level level, const char *fmt, ...) {
    if (!ctx || !ctx->log_fn) {
        return;
    }
    char message[2048];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    ctx->log_fn(ctx->log_user, level, message);
}
