/* The library context: error message, log callback, lazily loaded libraries. */
#ifndef GJ_CONTEXT_H
#define GJ_CONTEXT_H

#include "gridjit.h"

#include <stdarg.h>

struct gj__nvrtc;   /* nvrtc_loader.h */
struct gj__driver;  /* driver.h (runtime) */
struct gj__cache;   /* cache.h */

struct gj_context {
    char errmsg[2048];
    gj_log_fn log_fn;
    void *log_user;
    struct gj__nvrtc *nvrtc;   /* NULL until first needed */
    struct gj__driver *driver; /* NULL until first needed */
    struct gj__cache *cache;   /* NULL until first needed */
};

/* Records a one-line message on ctx (printf-style) and returns status, so that
 * failure paths read `return gj__fail(ctx, GJ_ERROR_X, "...", ...);`. ctx may be NULL. */
gj_status gj__fail(gj_context *ctx, gj_status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void gj__clear_error(gj_context *ctx);
void gj__log(gj_context *ctx, gj_log_level level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
