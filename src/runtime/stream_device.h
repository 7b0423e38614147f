/* Facts about the device a stream's launches run on (the scope rule of scope.h). */
#ifndef GJ_RUNTIME_STREAM_DEVICE_H
#define GJ_RUNTIME_STREAM_DEVICE_H

#include "runtime/module.h"

/* One attribute of that device (cuDeviceGetAttribute). */
gj_status gj__stream_device_attribute(gj__runtime *rt, gj_stream stream, CUdevice_attribute attribute,
                                      const char *call, int *value);

/* The number of multiprocessors of that device. */
gj_status gj__stream_multiprocessors(gj__runtime *rt, gj_stream stream, const char *call, int *count);

#endif
