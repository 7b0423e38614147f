/* The store's settings: each setter records the value and makes the store resolve its
 * directories again on next use (docs/cache.md, "Layers and environment"). */
#include "store/store_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Replaces one of the string settings (dir or path): field points into s->state. */
static gj_status set_string(gj__store *s, const gj__diag *d, char **field, const char *value, const char *what) {
    char *copy = value ? strdup(value) : NULL;
    if (value && !copy) {
        return gj__fail(d, GJ_ERROR_OUT_OF_MEMORY, "%s: out of memory", what);
    }
    pthread_mutex_lock(&s->lock);
    free(*field);
    *field = copy;
    gj__store_unresolve(s->state);
    pthread_mutex_unlock(&s->lock);
    return GJ_OK;
}

gj_status gj__store_set_dir(gj__store *s, const gj__diag *d, const char *dir) {
    return set_string(s, d, &s->state->set_dir, dir, "gj_context_set_cache_dir");
}

gj_status gj__store_set_path(gj__store *s, const gj__diag *d, const char *path) {
    return set_string(s, d, &s->state->set_path, path, "gj_context_set_cache_path");
}

/* Setters of one integer field: set, forget the resolution. */
#define GJ__STORE_SETTER(fn, type, field, expr) \
    void fn(gj__store *s, type value) {         \
        pthread_mutex_lock(&s->lock);           \
        s->state->field = (expr);               \
        gj__store_unresolve(s->state);          \
        pthread_mutex_unlock(&s->lock);         \
    }

GJ__STORE_SETTER(gj__store_set_enabled, int, set_enabled, value != 0)
GJ__STORE_SETTER(gj__store_set_max_bytes, uint64_t, set_max_bytes, value)
GJ__STORE_SETTER(gj__store_set_keep_sidecar, int, set_keep_sidecar, value != 0)

void gj__store_dir(gj__store *s, const gj__diag *d, char *out, size_t size) {
    pthread_mutex_lock(&s->lock);
    const struct gj__store_state *st = gj__store_ready(s, d);
    snprintf(out, size, "%s", st->enabled && st->root ? st->root : "");
    pthread_mutex_unlock(&s->lock);
}

int gj__store_write_failed(gj__store *s) {
    pthread_mutex_lock(&s->lock);
    const int failed = s->state && s->state->write_failed;
    pthread_mutex_unlock(&s->lock);
    return failed;
}

int gj__store_searchable(gj__store *s, const gj__diag *d) {
    pthread_mutex_lock(&s->lock);
    const struct gj__store_state *st = gj__store_ready(s, d);
    const int searchable = st->enabled && (st->root || st->n_layers);
    pthread_mutex_unlock(&s->lock);
    return searchable;
}

const char *gj__store_situation(gj__store *s, const gj__diag *d) {
    pthread_mutex_lock(&s->lock);
    const struct gj__store_state *st = gj__store_ready(s, d);
    const char *where = !st->enabled                  ? " (the disk cache is off)"
                        : !st->root && !st->n_layers ? " (no usable cache directory)"
                                                     : "";
    pthread_mutex_unlock(&s->lock);
    return where;
}
