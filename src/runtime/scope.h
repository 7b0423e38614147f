/* Where a launch runs (docs/runtime.md, "Contexts and devices"): in the context of the
 * stream it is given (made current for the call when another one is; left current on a
 * thread that had none), else the current context, else device 0's primary context
 * (loader/driver.h). Entering asks the driver
 * for the context and its identity only; what depends on the context's device is
 * looked up once per context (runtime/context_cache.h), not per launch. */
#ifndef GJ_RUNTIME_SCOPE_H
#define GJ_RUNTIME_SCOPE_H

#include "gridjit.h"
#include "loader/driver.h"

typedef struct gj__scope {
    CUcontext context;
    unsigned long long context_id; /* cuCtxGetId: unique for the context's lifetime, so a
                                      destroyed context whose handle value comes back is
                                      not taken for the old one */
    int pushed;                    /* the stream's context was pushed: pop it on leave */
} gj__scope;

gj_status gj__scope_enter(const gj__diag *d, gj__driver *drv, gj_stream stream, const char *call, gj__scope *scope);
void gj__scope_leave(gj__driver *drv, gj__scope *scope);

/* The scope's device and its compute capability (10 * major + minor): driver queries, for
 * the first launch in a context. */
gj_status gj__scope_device(const gj__diag *d, gj__driver *drv, const char *call, CUdevice *device, int *sm);

#endif
