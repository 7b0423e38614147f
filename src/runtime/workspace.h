/* Device buffers that grow: per CUDA context, for what a pass keeps between two of its launches
 * on one stream (a model's dL/d(features) between its network's backward kernel and its
 * encoding's, docs/networks.md §9). A buffer serves one stream at a time: the passes that use
 * one must be ordered on one stream per device. A buffer outgrown is kept, not freed, until
 * the workspace is destroyed: launches queued before, or a CUDA graph that captured them, may
 * still use it. */
#ifndef GJ_RUNTIME_WORKSPACE_H
#define GJ_RUNTIME_WORKSPACE_H

#include "runtime/module.h"

#include <pthread.h>

typedef struct gj__workspace_buffer {
    CUcontext context;
    unsigned long long context_id; /* cuCtxGetId: a destroyed context's reused handle is not it */
    unsigned long long stream_id;  /* cuStreamGetId + 1 for a stream's own buffer; 0: the context's */
    CUdeviceptr ptr;
    size_t bytes;
} gj__workspace_buffer;

typedef struct gj__workspace {
    pthread_mutex_t lock;
    gj__workspace_buffer *buffers; /* every allocation, in the order made */
    size_t n_buffers;
} gj__workspace;

void gj__workspace_init(gj__workspace *w);
/* At least bytes of device memory in the context of stream (scope.h's rule): the context's
 * largest buffer when it is large enough, else a new one, allocated now. */
gj_status gj__workspace_get(gj__workspace *w, gj__runtime *rt, gj_stream stream, size_t bytes, const char *call,
                            void **out);
/* The same, of the stream's own buffers (keyed by cuStreamGetId, which a destroyed stream's
 * reused handle does not share): for passes that streams may run at once. */
gj_status gj__workspace_get_for_stream(gj__workspace *w, gj__runtime *rt, gj_stream stream, size_t bytes,
                                       const char *call, void **out);
/* Frees every buffer (each in its own context). */
void gj__workspace_destroy(gj__workspace *w, gj__runtime *rt);

#endif
