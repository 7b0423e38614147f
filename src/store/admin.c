/* Maintenance of the cache directories (`gridjit cache list|verify|prune|clear`): walking
 * every entry, reading each completely, applying the cap, removing everything. */
#include "store/store_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ walk */

typedef struct walker {
    const gj__diag *d;
    gj__store_visit_fn fn;
    void *user;
    int writable;
    int stopped;
} walker;

static int visit_entry(walker *w, const char *path, const char *group_hex, const char *key_hex) {
    gj__entry e;
    struct stat st;
    gj__entry_check check = gj__entry_read_path(path, &e, 0, &st);
    if (check != GJ__ENTRY_OK || !gj__entry_matches_name(&e, group_hex, key_hex)) {
        gj__log(w->d, GJ_LOG_WARNING, "cache entry %s is unreadable (%s); `gridjit cache verify` removes it", path,
                check != GJ__ENTRY_OK ? gj__entry_check_message(check) : "its key does not match its name");
        gj__entry_free(&e);
        return 0;
    }
    gj__store_item item = {.key_hex = key_hex, .group_hex = group_hex, .path = path, .bytes = (uint64_t)st.st_size,
                           .writable = w->writable, .meta = e.meta, .meta_size = e.meta_size};
    int stop = w->fn(w->user, &item);
    gj__entry_free(&e);
    return stop;
}

/* A sidecar: its metadata is its entry's, when the entry is still there. */
static int visit_sidecar(walker *w, const char *path, const struct stat *st, const char *group_hex,
                         const char *key_hex) {
    char name[GJ__STORE_NAME_MAX], entry_path[4400];
    gj__store_entry_name(group_hex, key_hex, GJ__ENTRY_EXT, name, sizeof name);
    const char *slash = strrchr(path, '/');
    const int dir_len = slash ? (int)(slash - path + 1) : 0; /* the sidecar's shard, wherever that is */
    snprintf(entry_path, sizeof entry_path, "%.*s%s", dir_len, path, name);
    gj__entry e;
    struct stat est;
    int have = gj__entry_read_path(entry_path, &e, 0, &est) == GJ__ENTRY_OK;
    gj__store_item item = {.key_hex = key_hex, .group_hex = group_hex, .path = path, .bytes = (uint64_t)st->st_size,
                           .writable = w->writable, .is_sidecar = 1, .meta = have ? e.meta : NULL,
                           .meta_size = have ? e.meta_size : 0};
    int stop = w->fn(w->user, &item);
    gj__entry_free(&e);
    return stop;
}

static int walk_visit(void *user, const char *path, const char *name, const struct stat *st) {
    walker *w = user;
    char group_hex[33], key_hex[33];
    gj__store_file_kind kind = gj__store_classify(name, group_hex, key_hex);
    int stop = 0;
    if (kind == GJ__FILE_ENTRY) {
        stop = visit_entry(w, path, group_hex, key_hex);
    } else if (kind == GJ__FILE_SIDECAR && S_ISREG(st->st_mode)) {
        stop = visit_sidecar(w, path, st, group_hex, key_hex);
    }
    w->stopped |= stop != 0;
    return stop;
}

static int walk_layer(void *user, const char *dir, int layer) {
    walker *w = user;
    w->writable = layer == 0;
    gj__store_walk_dir(dir, NULL, walk_visit, w);
    return w->stopped;
}

void gj__store_walk(gj__store *s, const gj__diag *d, gj__store_visit_fn fn, void *user) {
    pthread_mutex_lock(&s->lock);
    walker w = {.d = d, .fn = fn, .user = user};
    gj__store_each_layer(gj__store_ready(s, d), walk_layer, &w);
    pthread_mutex_unlock(&s->lock);
}

/* ---------------------------------------------------------------- verify */

typedef struct verifier {
    const gj__diag *d;
    struct gj__store_state *st;
    int layer;
    uint64_t checked, bad;
} verifier;

static int verify_visit(void *user, const char *path, const char *name, const struct stat *lst) {
    verifier *v = user;
    char group_hex[33], key_hex[33];
    if (gj__store_classify(name, group_hex, key_hex) != GJ__FILE_ENTRY) {
        return 0;
    }
    v->checked++;
    if (S_ISLNK(lst->st_mode)) {
        /* Never followed: remove the link itself (its own dev/ino), never its target. */
        v->bad++;
        gj__store_reject(v->d, v->st, path, v->layer, (uint64_t)lst->st_dev, (uint64_t)lst->st_ino,
                         "a symbolic link where an entry file belongs");
        return 0;
    }
    gj__entry e;
    struct stat st;
    gj__entry_check check = gj__entry_read_path(path, &e, 1, &st);
    const char *reason = gj__entry_check_is_damage(check)              ? gj__entry_check_message(check)
                         : check != GJ__ENTRY_OK                        ? NULL
                         : !gj__entry_matches_name(&e, group_hex, key_hex) ? "its key does not match its name"
                                                                          : NULL;
    gj__entry_free(&e);
    if (check == GJ__ENTRY_IO) {
        gj__log(v->d, GJ_LOG_WARNING, "cache entry %s could not be read (%s); left in place", path, strerror(errno));
    }
    if (reason) {
        v->bad++;
        gj__store_reject(v->d, v->st, path, v->layer, (uint64_t)st.st_dev, (uint64_t)st.st_ino, reason);
    }
    return 0;
}

static int verify_layer(void *user, const char *dir, int layer) {
    verifier *v = user;
    v->layer = layer;
    gj__store_walk_dir(dir, NULL, verify_visit, v);
    return 0;
}

void gj__store_verify(gj__store *s, const gj__diag *d, uint64_t *checked, uint64_t *bad) {
    pthread_mutex_lock(&s->lock);
    verifier v = {.d = d, .st = gj__store_ready(s, d)};
    gj__store_each_layer(v.st, verify_layer, &v);
    pthread_mutex_unlock(&s->lock);
    *checked = v.checked;
    *bad = v.bad;
}

/* ---------------------------------------------------------- prune, clear */

static gj_status need_root(const gj__diag *d, const struct gj__store_state *st, const char *call) {
    if (!st->enabled) {
        return gj__fail(d, GJ_ERROR_NOT_FOUND, "%s: the disk cache is off", call);
    }
    if (!st->root) {
        return gj__fail(d, GJ_ERROR_NOT_FOUND, "%s: no usable cache directory", call);
    }
    return GJ_OK;
}

gj_status gj__store_prune(gj__store *s, const gj__diag *d, const char *call, uint64_t *evicted, uint64_t *freed) {
    pthread_mutex_lock(&s->lock);
    struct gj__store_state *st = gj__store_ready(s, d);
    gj_status status = need_root(d, st, call);
    gj__store_evict_result r = {0};
    if (status == GJ_OK) {
        int err = gj__store_apply_cap(st, &r);
        if (err) {
            status = gj__fail(d, GJ_ERROR_IO, "%s: cannot read %s: %s", call, st->root, strerror(err));
        }
    }
    pthread_mutex_unlock(&s->lock);
    *evicted = r.evicted;
    *freed = r.freed;
    return status;
}

static int clear_visit(void *user, const char *path, const char *name, const struct stat *st) {
    uint64_t *removed = user;
    gj__store_file_kind kind = gj__store_classify(name, NULL, NULL);
    /* A young temporary file is another process's write in progress: leave it. Lock
     * files stay too (one may be held right now); they are empty. */
    int stale_temp = kind == GJ__FILE_TEMP && time(NULL) - st->st_mtim.tv_sec > GJ__TEMP_MAX_AGE_S;
    if ((kind == GJ__FILE_ENTRY || kind == GJ__FILE_SIDECAR || stale_temp) && unlink(path) == 0) {
        *removed += kind == GJ__FILE_ENTRY;
    }
    return 0;
}

gj_status gj__store_clear(gj__store *s, const gj__diag *d, const char *call, uint64_t *removed) {
    pthread_mutex_lock(&s->lock);
    struct gj__store_state *st = gj__store_ready(s, d);
    gj_status status = need_root(d, st, call);
    *removed = 0;
    if (status == GJ_OK) {
        int err = gj__store_walk_dir(st->root, NULL, clear_visit, removed);
        if (err) {
            status = gj__fail(d, GJ_ERROR_IO, "%s: cannot read %s: %s", call, st->root, strerror(err));
        }
    }
    pthread_mutex_unlock(&s->lock);
    return status;
}
