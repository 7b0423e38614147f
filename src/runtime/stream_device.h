/* Facts about the device a stream's launches run on (the scope rule of scope.h). */
#ifndef GJ_RUNTIME_STREAM_DEVICE_H
#define GJ_RUNTIME_STREAM_DEVICE_H

#include "runtime/module.h"

/* The number of multiprocessors of that device. */
gj_status gj__stream_multiprocessors(gj__runtime *rt, gj_stream stream, const char *call, int *count);

#endif
