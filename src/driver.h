/* CUDA driver loaded with dlopen() (runtime issue). Until it lands, nothing is loaded. */
#ifndef GJ_DRIVER_H
#define GJ_DRIVER_H

#include "context.h"

void gj__driver_release(struct gj__driver *driver);

#endif
