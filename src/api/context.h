/* gj_context: the services of one context, owned here and handed down to the layers
 * as pointers (each layer sees only what it needs). */
#ifndef GJ_API_CONTEXT_H
#define GJ_API_CONTEXT_H

#include "base/diag.h"
#include "compile/compiler.h"
#include "loader/driver.h"
#include "loader/nvrtc.h"
#include "runtime/module.h"
#include "store/store.h"

#include <pthread.h>

struct gj_context {
    gj__diag diag;
    gj__nvrtc_loader nvrtc;
    gj__driver_loader driver;
    gj__store store;
    gj__compiler compiler;
    gj__runtime runtime;
    pthread_mutex_t lock;  /* guards cache_dir */
    char cache_dir[4096];  /* gj_context_cache_dir's answer */
};

/* Every public call that takes a context starts with this: argument check, then the
 * calling thread's message for the context is emptied. */
#define GJ__ENTER(ctx)                           \
    do {                                         \
        if (!(ctx)) {                            \
            return GJ_ERROR_INVALID_ARGUMENT;    \
        }                                        \
        gj__diag_clear(&(ctx)->diag);            \
    } while (0)

#endif
