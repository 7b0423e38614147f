/* A stream beside the caller's, per CUDA context, for a launch that may run alongside the
 * caller's next one (the coarse levels' backward beside the hashed levels', docs/runtime.md,
 * "Launch shapes"). A fork records an event on the caller's stream and makes the side stream
 * wait for it; the join records an event on the side stream and makes the caller's stream wait
 * for it, so that everything queued on the caller's stream after the join follows both.
 *
 * One side stream serves every caller stream of its context: the lock is held from the fork to
 * the join, so two threads' forks never take each other's event (a fork's wait takes the
 * event's latest record). A caller's stream that is being captured into a CUDA graph gets no
 * fork (the side stream would join the capture and stay in it until it ends, taking other
 * threads' work into the graph): its launches stay on its own stream, in order. */
#ifndef GJ_RUNTIME_SIDE_STREAM_H
#define GJ_RUNTIME_SIDE_STREAM_H

#include "runtime/scope.h"

#include <pthread.h>

typedef struct gj__side_stream {
    CUcontext context;
    unsigned long long context_id; /* cuCtxGetId: a destroyed context's reused handle is not it */
    CUstream stream;
    CUevent fork, join;
} gj__side_stream;

typedef struct gj__side_streams {
    pthread_mutex_t lock;
    gj__side_stream *streams; /* one per context met, in the order met */
    size_t n_streams;
} gj__side_streams;

void gj__side_streams_init(gj__side_streams *s);
/* In the scope's context (current): *side is the context's side stream (made on first use),
 * its `stream` ordered after everything queued on stream so far; s->lock is then held until
 * gj__side_join. *side NULL (lock not held, GJ_OK): no fork, the stream is being captured or
 * its capture state cannot be told. A failure leaves the lock free and names call on d. */
gj_status gj__side_fork(gj__side_streams *s, const gj__diag *d, gj__driver *drv, const gj__scope *where,
                        gj_stream stream, const char *call, const gj__side_stream **side);
/* After a fork that gave side: stream waits for what was queued on it; the lock is released
 * whatever the outcome. */
gj_status gj__side_join(gj__side_streams *s, const gj__diag *d, gj__driver *drv, const gj__side_stream *side,
                        gj_stream stream, const char *call);
/* Destroys every side stream and its events (each in its own context). */
void gj__side_streams_destroy(gj__side_streams *s, gj__driver *drv);

#endif
