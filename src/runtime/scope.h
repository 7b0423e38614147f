/* Where a launch runs (docs/runtime.md, "Contexts and devices"): in the context of the
 * stream it is given (made current for the call when another one is), else the current
 * context, else device 0's primary context (loader/driver.h). */
#ifndef GJ_RUNTIME_SCOPE_H
#define GJ_RUNTIME_SCOPE_H

#include "gridjit.h"
#include "loader/driver.h"

typedef struct gj__scope {
    CUcontext context;
    int pushed;     /* the stream's context was pushed: pop it on leave */
    CUdevice device;
    int sm;         /* compute capability, 90 for 9.0 */
} gj__scope;

gj_status gj__scope_enter(const gj__diag *d, gj__driver *drv, gj_stream stream, const char *call, gj__scope *scope);
void gj__scope_leave(gj__driver *drv, gj__scope *scope);

/* The device's compute capability as 10 * major + minor. */
gj_status gj__device_sm(const gj__diag *d, gj__driver *drv, CUdevice device, const char *call, int *sm);

#endif
