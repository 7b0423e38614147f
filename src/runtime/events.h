/* Streams and events of the current context (public gj_stream_* and gj_event_*). */
#ifndef GJ_RUNTIME_EVENTS_H
#define GJ_RUNTIME_EVENTS_H

#include "runtime/module.h"

gj_status gj__stream_create(gj__runtime *rt, int non_blocking, gj_stream *out);
void gj__stream_destroy(gj__runtime *rt, gj_stream stream);
gj_status gj__event_create(gj__runtime *rt, gj_event **out);

#endif
