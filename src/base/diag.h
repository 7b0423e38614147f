/* Diagnostics shared by every layer: the one-line error message of the last failed call
 * and the log sink. A gj__diag lives in its gj_context; the layers below the public API
 * receive a pointer to it, never the context itself.
 *
 * Error messages are per thread: several threads may use one context at once, and each
 * reads the message of its own last call (gj_context_errmsg). */
#ifndef GJ_BASE_DIAG_H
#define GJ_BASE_DIAG_H

#include "gridjit.h"

#include <stdatomic.h>

typedef struct gj__diag {
    /* The sink and its threshold. Set before the context is shared between threads;
     * read by any thread that logs. */
    gj_log_fn log_fn;
    void *log_user;
    atomic_int log_level; /* messages below it are neither formatted nor delivered */
} gj__diag;

/* Length of a message, with its NUL. */
#define GJ__MESSAGE_MAX 2048

/* Default sink (to stderr, "gridjit: " prefix) at level WARNING, or at the level
 * GRIDJIT_LOG_LEVEL names (debug, info, warning, error). */
void gj__diag_init(gj__diag *d);

/* Empties the calling thread's message for d: every public call does this on entry. */
void gj__diag_clear(const gj__diag *d);
/* Records a one-line message for d on the calling thread and returns status, so that
 * failure paths read `return gj__fail(d, GJ_ERROR_X, "...", ...);`. d may be NULL. */
gj_status gj__fail(const gj__diag *d, gj_status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The calling thread's last message for d ("" when none). Valid until the thread's next
 * call on the same context. */
const char *gj__diag_message(const gj__diag *d);
/* Forgets whatever the calling thread recorded for d (a context made at the address of
 * a destroyed one must not show that one's message). */
void gj__diag_forget(const gj__diag *d);

/* Whether a message of level would be delivered (check before costly formatting). */
int gj__log_enabled(const gj__diag *d, gj_log_level level);
/* Formats and delivers a message when its level is enabled. d may be NULL. */
void gj__log(const gj__diag *d, gj_log_level level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
