/* Per-thread error messages and the log sink (see diag.h). */
#include "base/diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A thread keeps the messages of the few contexts it used last. Four is plenty: a slot
 * is only lost when a thread fails on a fifth context before reading the first one's. */
#define GJ__SLOTS 4

typedef struct slot {
    const gj__diag *owner;
    unsigned long stamp; /* last use, for replacing the oldest */
    char text[GJ__MESSAGE_MAX];
} slot;

static _Thread_local slot slots[GJ__SLOTS];
static _Thread_local unsigned long clock_ticks;

static slot *find(const gj__diag *d) {
    for (int i = 0; i < GJ__SLOTS; ++i) {
        if (slots[i].owner == d) {
            slots[i].stamp = ++clock_ticks;
            return &slots[i];
        }
    }
    return NULL;
}

static slot *claim(const gj__diag *d) {
    slot *s = find(d);
    if (s) {
        return s;
    }
    s = &slots[0];
    for (int i = 1; i < GJ__SLOTS; ++i) {
        if (slots[i].stamp < s->stamp) {
            s = &slots[i];
        }
    }
    s->owner = d;
    s->stamp = ++clock_ticks;
    s->text[0] = '\0';
    return s;
}

static void default_sink(void *user, gj_log_level level, const char *message) {
    (void)user;
    fprintf(stderr, "gridjit: %s%s\n", level == GJ_LOG_ERROR ? "error: " : level == GJ_LOG_WARNING ? "warning: " : "",
            message);
}

/* The level GRIDJIT_LOG_LEVEL names (debug, info, warning, error), else WARNING. */
static gj_log_level level_from_env(void) {
    static const char *const names[] = {"debug", "info", "warning", "error"};
    const char *env = getenv("GRIDJIT_LOG_LEVEL");
    for (size_t i = 0; env && i < sizeof names / sizeof names[0]; ++i) {
        if (strcmp(env, names[i]) == 0) {
            return (gj_log_level)i;
        }
    }
    return GJ_LOG_WARNING;
}

void gj__diag_init(gj__diag *d) {
    d->log_fn = default_sink;
    d->log_user = NULL;
    atomic_init(&d->log_level, level_from_env());
}

void gj__diag_clear(const gj__diag *d) {
    slot *s = d ? find(d) : NULL;
    if (s) {
        s->text[0] = '\0';
    }
}

void gj__diag_forget(const gj__diag *d) {
    slot *s = d ? find(d) : NULL;
    if (s) {
        s->owner = NULL;
        s->text[0] = '\0';
    }
}

gj_status gj__fail(const gj__diag *d, gj_status status, const char *fmt, ...) {
    if (!d) {
        return status;
    }
    /* Formatted aside first: an argument may be this very slot's text. */
    char text[GJ__MESSAGE_MAX];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    memcpy(claim(d)->text, text, sizeof text);
    return status;
}

const char *gj__diag_message(const gj__diag *d) {
    const slot *s = d ? find(d) : NULL;
    return s ? s->text : "";
}

int gj__log_enabled(const gj__diag *d, gj_log_level level) {
    return d && d->log_fn && (int)level >= atomic_load_explicit(&d->log_level, memory_order_relaxed);
}

void gj__log(const gj__diag *d, gj_log_level level, const char *fmt, ...) {
    if (!gj__log_enabled(d, level)) {
        return;
    }
    char message[GJ__MESSAGE_MAX];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    d->log_fn(d->log_user, level, message);
}
