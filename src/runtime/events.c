/* Streams and events of the current context, for callers without the CUDA runtime
 * (timing in `gridjit bench`, side streams in tests and examples). */
#include "runtime/events.h"

#include <stdlib.h>

struct gj_event {
    gj__runtime *rt;
    gj__driver *drv;
    CUevent event;
};

gj_status gj__stream_create(gj__runtime *rt, int non_blocking, gj_stream *out) {
    *out = NULL;
    gj__driver *drv = NULL;
    CUcontext current;
    gj_status status = gj__driver_get(rt->driver, rt->diag, &drv);
    if (status == GJ_OK) {
        status = gj__driver_current_context(rt->diag, drv, &current);
    }
    CUstream stream = NULL;
    if (status == GJ_OK) {
        status = gj__cuda_check(rt->diag, drv,
                                drv->StreamCreate(&stream, non_blocking ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT),
                                "gj_stream_create: cuStreamCreate");
    }
    *out = (gj_stream)stream;
    return status;
}

void gj__stream_destroy(gj__runtime *rt, gj_stream stream) {
    gj__driver *drv = gj__driver_loaded(rt->driver);
    if (stream && drv) {
        drv->StreamDestroy((CUstream)stream);
    }
}

gj_status gj__event_create(gj__runtime *rt, gj_event **out) {
    *out = NULL;
    gj__driver *drv = NULL;
    CUcontext current;
    gj_status status = gj__driver_get(rt->driver, rt->diag, &drv);
    if (status == GJ_OK) {
        status = gj__driver_current_context(rt->diag, drv, &current);
    }
    gj_event *e = status == GJ_OK ? calloc(1, sizeof *e) : NULL;
    if (status == GJ_OK && !e) {
        status = gj__fail(rt->diag, GJ_ERROR_OUT_OF_MEMORY, "gj_event_create: out of memory");
    }
    if (status == GJ_OK) {
        e->rt = rt;
        e->drv = drv;
        status = gj__cuda_check(rt->diag, drv, drv->EventCreate(&e->event, CU_EVENT_DEFAULT),
                                "gj_event_create: cuEventCreate");
    }
    if (status != GJ_OK) {
        free(e);
        return status;
    }
    *out = e;
    return GJ_OK;
}

void gj_event_destroy(gj_event *event) {
    if (event) {
        event->drv->EventDestroy(event->event);
        free(event);
    }
}

gj_status gj_event_record(gj_event *event, gj_stream stream) {
    if (!event) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj__diag_clear(event->rt->diag);
    return gj__cuda_check(event->rt->diag, event->drv, event->drv->EventRecord(event->event, (CUstream)stream),
                          "gj_event_record: cuEventRecord");
}

gj_status gj_event_elapsed_ms(gj_event *start, gj_event *end, float *ms) {
    if (!start || !end || !ms) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    const gj__diag *d = end->rt->diag;
    gj__diag_clear(d);
    gj_status status = gj__cuda_check(d, end->drv, end->drv->EventSynchronize(end->event),
                                      "gj_event_elapsed_ms: cuEventSynchronize");
    if (status == GJ_OK) {
        status = gj__cuda_check(d, end->drv, end->drv->EventElapsedTime(ms, start->event, end->event),
                                "gj_event_elapsed_ms: cuEventElapsedTime");
    }
    return status;
}
