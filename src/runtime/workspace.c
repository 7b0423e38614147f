/* Growing per-context device buffers (workspace.h). */
#include "runtime/workspace.h"

#include "runtime/scope.h"

#include <stdlib.h>

void gj__workspace_init(gj__workspace *w) {
    pthread_mutex_init(&w->lock, NULL);
    w->buffers = NULL;
    w->n_buffers = 0;
}

/* The largest buffer of the context (and stream: stream_id, or 0), or NULL. Under the lock. */
static const gj__workspace_buffer *largest(const gj__workspace *w, unsigned long long context_id,
                                           unsigned long long stream_id) {
    const gj__workspace_buffer *best = NULL;
    for (size_t i = 0; i < w->n_buffers; ++i) {
        if (w->buffers[i].context_id == context_id && w->buffers[i].stream_id == stream_id &&
            (!best || w->buffers[i].bytes > best->bytes)) {
            best = &w->buffers[i];
        }
    }
    return best;
}

/* A new buffer of bytes in the scope's context, recorded. Under the lock. */
static gj_status allocate(gj__workspace *w, const gj__diag *d, gj__driver *drv, const gj__scope *where,
                          unsigned long long stream_id, size_t bytes, const char *call, CUdeviceptr *out) {
    gj__workspace_buffer *grown = realloc(w->buffers, (w->n_buffers + 1) * sizeof *grown);
    if (!grown) {
        return gj__fail(d, GJ_ERROR_OUT_OF_MEMORY, "%s: out of memory", call);
    }
    w->buffers = grown;
    gj_status status =
        gj__cuda_checkf(d, drv, drv->MemAlloc(out, bytes), "%s: cuMemAlloc (workspace, %zu bytes)", call, bytes);
    if (status == GJ_OK) {
        w->buffers[w->n_buffers++] = (gj__workspace_buffer){where->context, where->context_id, stream_id, *out, bytes};
    }
    return status;
}

/* At least bytes of device memory in the context of stream, its own buffer where per_stream. */
static gj_status get(gj__workspace *w, gj__runtime *rt, gj_stream stream, int per_stream, size_t bytes,
                     const char *call, void **out) {
    *out = NULL;
    gj__driver *drv = NULL;
    gj_status status = gj__driver_get(rt->driver, rt->diag, &drv);
    gj__scope where;
    if (status == GJ_OK) {
        status = gj__scope_enter(rt->diag, drv, stream, call, &where);
    }
    if (status != GJ_OK) {
        return status;
    }
    unsigned long long stream_id = 0;
    if (per_stream) {
        status = gj__cuda_checkf(rt->diag, drv, drv->StreamGetId((CUstream)stream, &stream_id), "%s: cuStreamGetId",
                                 call);
        stream_id++; /* 0 is the context's own buffers' */
    }
    if (status == GJ_OK) {
        pthread_mutex_lock(&w->lock);
        const gj__workspace_buffer *b = largest(w, where.context_id, stream_id);
        CUdeviceptr ptr = b && b->bytes >= bytes ? b->ptr : 0;
        if (!ptr) {
            status = allocate(w, rt->diag, drv, &where, stream_id, bytes ? bytes : 1, call, &ptr);
        }
        pthread_mutex_unlock(&w->lock);
        *out = status == GJ_OK ? (void *)(uintptr_t)ptr : NULL;
    }
    gj__scope_leave(drv, &where);
    return status;
}

gj_status gj__workspace_get(gj__workspace *w, gj__runtime *rt, gj_stream stream, size_t bytes, const char *call,
                            void **out) {
    return get(w, rt, stream, 0, bytes, call, out);
}

gj_status gj__workspace_get_for_stream(gj__workspace *w, gj__runtime *rt, gj_stream stream, size_t bytes,
                                       const char *call, void **out) {
    return get(w, rt, stream, 1, bytes, call, out);
}

void gj__workspace_destroy(gj__workspace *w, gj__runtime *rt) {
    gj__driver *drv = NULL;
    if (w->n_buffers && gj__driver_get(rt->driver, rt->diag, &drv) == GJ_OK) {
        for (size_t i = 0; i < w->n_buffers; ++i) {
            /* cuMemFree needs a context; the buffer's own is the safe one (a destroyed
             * context's memory went with it, and pushing it fails). */
            CUcontext popped;
            if (drv->CtxPushCurrent(w->buffers[i].context) == CUDA_SUCCESS) {
                drv->MemFree(w->buffers[i].ptr);
                drv->CtxPopCurrent(&popped);
            }
        }
    }
    free(w->buffers);
    w->buffers = NULL;
    w->n_buffers = 0;
    pthread_mutex_destroy(&w->lock);
}
