/* Side streams per CUDA context (side_stream.h). */
#include "runtime/side_stream.h"

#include <stdlib.h>

void gj__side_streams_init(gj__side_streams *s) {
    pthread_mutex_init(&s->lock, NULL);
    s->streams = NULL;
    s->n_streams = 0;
}

/* The side stream of the scope's context, made on first use. Under the lock. */
static gj_status side_of(gj__side_streams *s, const gj__diag *d, gj__driver *drv, const gj__scope *where,
                         const char *call, gj__side_stream **out) {
    for (size_t i = 0; i < s->n_streams; ++i) {
        if (s->streams[i].context_id == where->context_id) {
            *out = &s->streams[i];
            return GJ_OK;
        }
    }
    gj__side_stream *grown = realloc(s->streams, (s->n_streams + 1) * sizeof *grown);
    if (!grown) {
        return gj__fail(d, GJ_ERROR_OUT_OF_MEMORY, "%s: out of memory", call);
    }
    s->streams = grown;
    gj__side_stream made = {where->context, where->context_id, NULL, NULL, NULL};
    /* Non-blocking: no implicit wait on the legacy default stream, whose work it would
     * otherwise follow (and hold up) whatever the caller's stream is. The greatest priority:
     * the block scheduler gives its kernel's blocks the places that free up before the
     * caller's kernel's waiting ones, so it runs beside that kernel instead of after its
     * last wave (and before other streams' waiting blocks: the kernel is short). Timing off:
     * the events only order. */
    int least = 0, greatest = 0;
    gj_status status = gj__cuda_checkf(d, drv, drv->CtxGetStreamPriorityRange(&least, &greatest),
                                       "%s: cuCtxGetStreamPriorityRange", call);
    if (status == GJ_OK) {
        status = gj__cuda_checkf(d, drv, drv->StreamCreateWithPriority(&made.stream, CU_STREAM_NON_BLOCKING, greatest),
                                 "%s: cuStreamCreateWithPriority (side stream)", call);
    }
    if (status == GJ_OK) {
        status = gj__cuda_checkf(d, drv, drv->EventCreate(&made.fork, CU_EVENT_DISABLE_TIMING),
                                 "%s: cuEventCreate (side stream)", call);
    }
    if (status == GJ_OK) {
        status = gj__cuda_checkf(d, drv, drv->EventCreate(&made.join, CU_EVENT_DISABLE_TIMING),
                                 "%s: cuEventCreate (side stream)", call);
    }
    if (status != GJ_OK) {
        if (made.fork) {
            drv->EventDestroy(made.fork);
        }
        if (made.stream) {
            drv->StreamDestroy(made.stream);
        }
        return status;
    }
    s->streams[s->n_streams] = made;
    *out = &s->streams[s->n_streams++];
    return GJ_OK;
}

gj_status gj__side_fork(gj__side_streams *s, const gj__diag *d, gj__driver *drv, const gj__scope *where,
                        gj_stream stream, const char *call, const gj__side_stream **side) {
    *side = NULL;
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    if (drv->StreamIsCapturing((CUstream)stream, &capture) != CUDA_SUCCESS ||
        capture != CU_STREAM_CAPTURE_STATUS_NONE) {
        return GJ_OK;
    }
    pthread_mutex_lock(&s->lock);
    gj__side_stream *found = NULL;
    gj_status status = side_of(s, d, drv, where, call, &found);
    if (status == GJ_OK) {
        status = gj__cuda_checkf(d, drv, drv->EventRecord(found->fork, (CUstream)stream),
                                 "%s: cuEventRecord (fork to the side stream)", call);
    }
    if (status == GJ_OK) {
        status = gj__cuda_checkf(d, drv, drv->StreamWaitEvent(found->stream, found->fork, 0),
                                 "%s: cuStreamWaitEvent (fork to the side stream)", call);
    }
    if (status != GJ_OK) {
        pthread_mutex_unlock(&s->lock);
        return status;
    }
    *side = found; /* stays where it is: the lock keeps other forks from growing the array */
    return GJ_OK;
}

gj_status gj__side_join(gj__side_streams *s, const gj__diag *d, gj__driver *drv, const gj__side_stream *side,
                        gj_stream stream, const char *call) {
    gj_status status = gj__cuda_checkf(d, drv, drv->EventRecord(side->join, side->stream),
                                       "%s: cuEventRecord (join from the side stream)", call);
    if (status == GJ_OK) {
        status = gj__cuda_checkf(d, drv, drv->StreamWaitEvent((CUstream)stream, side->join, 0),
                                 "%s: cuStreamWaitEvent (join from the side stream)", call);
    }
    pthread_mutex_unlock(&s->lock);
    return status;
}

void gj__side_streams_destroy(gj__side_streams *s, gj__driver *drv) {
    for (size_t i = 0; drv && i < s->n_streams; ++i) {
        /* In the stream's own context; a destroyed context took its streams and events with it
         * (pushing it fails). */
        const gj__side_stream *side = &s->streams[i];
        CUcontext popped;
        if (drv->CtxPushCurrent(side->context) == CUDA_SUCCESS) {
            /* A context made since at the destroyed one's address is not it: its id differs,
             * and the handles might be its own. */
            unsigned long long id = 0;
            if (drv->CtxGetId(side->context, &id) == CUDA_SUCCESS && id == side->context_id) {
                drv->EventDestroy(side->join);
                drv->EventDestroy(side->fork);
                drv->StreamDestroy(side->stream);
            }
            drv->CtxPopCurrent(&popped);
        }
    }
    free(s->streams);
    s->streams = NULL;
    s->n_streams = 0;
    pthread_mutex_destroy(&s->lock);
}
