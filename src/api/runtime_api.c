/* The public runtime entry points that take a context. */
#include "api/context.h"

#include "runtime/events.h"
#include "runtime/user_module.h"

gj_status gj_runtime_probe(gj_context *ctx, gj_runtime_info *info) {
    GJ__ENTER(ctx);
    if (!info) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_runtime_probe: info must not be NULL");
    }
    return gj__runtime_probe(&ctx->runtime, info);
}

gj_status gj_module_create(gj_context *ctx, const gj_encoding *enc, const gj_codegen_options *opts, gj_module **out) {
    if (out) {
        *out = NULL;
    }
    GJ__ENTER(ctx);
    return gj__module_create(&ctx->runtime, enc, opts, out);
}

gj_status gj_module_load(gj_context *ctx, const gj_encoding *enc, const gj_codegen_options *opts,
                         const gj_program *prog, gj_module **out) {
    if (out) {
        *out = NULL;
    }
    GJ__ENTER(ctx);
    return gj__module_load(&ctx->runtime, enc, opts, prog, out);
}

gj_status gj_device_alloc(gj_context *ctx, size_t bytes, void **ptr) {
    if (ptr) {
        *ptr = NULL;
    }
    GJ__ENTER(ctx);
    if (!ptr) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_device_alloc: ptr must not be NULL");
    }
    return gj__device_alloc(&ctx->runtime, bytes, ptr);
}

void gj_device_free(gj_context *ctx, void *ptr) {
    if (ctx) {
        gj__diag_clear(&ctx->diag);
        gj__device_free(&ctx->runtime, ptr);
    }
}

gj_status gj_memcpy_to_device(gj_context *ctx, void *dst, const void *src, size_t bytes) {
    GJ__ENTER(ctx);
    return gj__memcpy(&ctx->runtime, dst, src, bytes, 1);
}

gj_status gj_memcpy_to_host(gj_context *ctx, void *dst, const void *src, size_t bytes) {
    GJ__ENTER(ctx);
    return gj__memcpy(&ctx->runtime, dst, src, bytes, 0);
}

gj_status gj_runtime_set_device(gj_context *ctx, int device) {
    GJ__ENTER(ctx);
    return gj__use_device(&ctx->runtime, device);
}

gj_status gj_memcpy_async(gj_context *ctx, void *dst, const void *src, size_t bytes, gj_stream stream) {
    GJ__ENTER(ctx);
    return gj__memcpy_async(&ctx->runtime, dst, src, bytes, stream);
}

gj_status gj_stream_synchronize(gj_context *ctx, gj_stream stream) {
    GJ__ENTER(ctx);
    return gj__stream_synchronize(&ctx->runtime, stream);
}

gj_status gj_stream_create(gj_context *ctx, int non_blocking, gj_stream *out) {
    if (out) {
        *out = NULL;
    }
    GJ__ENTER(ctx);
    if (!out) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_stream_create: out must not be NULL");
    }
    return gj__stream_create(&ctx->runtime, non_blocking, out);
}

void gj_stream_destroy(gj_context *ctx, gj_stream stream) {
    if (ctx) {
        gj__stream_destroy(&ctx->runtime, stream);
    }
}

gj_status gj_event_create(gj_context *ctx, gj_event **out) {
    if (out) {
        *out = NULL;
    }
    GJ__ENTER(ctx);
    if (!out) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_event_create: out must not be NULL");
    }
    return gj__event_create(&ctx->runtime, out);
}

gj_status gj_user_module_create(gj_context *ctx, const gj_source_desc *desc, gj_user_module **out) {
    if (out) {
        *out = NULL;
    }
    GJ__ENTER(ctx);
    if (!out) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_user_module_create: out must not be NULL");
    }
    return gj__user_module_create(&ctx->runtime, desc, 0, out);
}

gj_status gj_user_module_load(gj_context *ctx, const gj_program *prog, gj_user_module **out) {
    if (out) {
        *out = NULL;
    }
    GJ__ENTER(ctx);
    if (!out) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_user_module_load: out must not be NULL");
    }
    return gj__user_module_load(&ctx->runtime, prog, out);
}
