/* Finding an entry (docs/cache.md, "Failure policy"): the exact key in each layer, or the
 * newest entry of a group; every byte checked; a broken entry is removed (where ours to
 * remove and still the same file) or skipped, and never handed out. */
#include "store/store_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void gj__blob_free(gj__blob *blob) {
    if (blob) {
        free(blob->meta);
        free(blob->payload);
        memset(blob, 0, sizeof *blob);
    }
}

/* ------------------------------------------------------------- rejection */

int gj__store_is_skipped(const struct gj__store_state *st, uint64_t dev, uint64_t ino) {
    for (size_t i = 0; i < st->n_skipped; i++) {
        if (st->skipped[i].dev == dev && st->skipped[i].ino == ino) {
            return 1;
        }
    }
    return 0;
}

static void skip(struct gj__store_state *st, uint64_t dev, uint64_t ino) {
    if (gj__store_is_skipped(st, dev, ino)) {
        return;
    }
    if (st->n_skipped == st->cap_skipped) {
        size_t cap = st->cap_skipped ? 2 * st->cap_skipped : 8;
        void *grown = realloc(st->skipped, cap * sizeof *st->skipped);
        if (!grown) {
            return;
        }
        st->skipped = grown;
        st->cap_skipped = cap;
    }
    st->skipped[st->n_skipped].dev = dev;
    st->skipped[st->n_skipped].ino = ino;
    st->n_skipped++;
}

void gj__store_reject(const gj__diag *d, struct gj__store_state *st, const char *path, int layer, uint64_t dev,
                      uint64_t ino, const char *reason) {
    gj__store_counters delta = {.corrupt = 1};
    gj__store_count(st, &delta);
    int removed = layer == 0 && gj__store_remove_if_same(path, dev, ino) == 0;
    if (!removed) {
        skip(st, dev, ino);
    }
    gj__log(d, GJ_LOG_WARNING, "cache entry %s is broken (%s); %s", path, reason,
            removed ? "removed it, recompiling" : "ignoring it");
}

/* ---------------------------------------------------------------- lookup */

typedef struct load {
    const gj__diag *d;
    struct gj__store_state *st;
    const gj__store_key *key;   /* NULL: any key of the group */
    const gj__store_key *group;
    char key_hex[33], group_hex[33]; /* key_hex "" without a key */
    gj__store_accept_fn accept;
    void *user;
    int layer;
    gj_status status; /* of the layers searched so far */
    gj__blob *out;
} load;

static void hit(const load *l, gj__entry *e, const char *path, const struct stat *st) {
    gj__blob *b = l->out;
    b->ref.layer = l->layer;
    b->ref.dev = (uint64_t)st->st_dev;
    b->ref.ino = (uint64_t)st->st_ino;
    b->ref.key = e->key;
    b->ref.group = e->group;
    b->meta = e->meta;
    b->meta_size = e->meta_size;
    b->payload = e->payload;
    b->payload_size = (size_t)e->payload_size;
    e->meta = e->payload = NULL;
    if (l->layer == 0) {
        gj__store_touch(path); /* the LRU stamp; read-only layers are never evicted */
    }
    gj__store_counters delta = {.hits = 1, .bytes_read = (uint64_t)st->st_size};
    gj__store_count(l->st, &delta);
    gj__log(l->d, GJ_LOG_DEBUG, "cache hit: %s", path);
}

/* Checks that a structurally valid entry is the one asked for: its keys are the ones its
 * name promises (the name was made from the keys asked for, or, for any key of a group,
 * found under the group), and the caller accepts it. NULL when it is. */
static const char *mismatch(const load *l, const gj__entry *e, const char *group_hex, const char *key_hex) {
    if (!gj__entry_matches_name(e, group_hex, key_hex)) {
        return "its key does not match its name";
    }
    return l->accept ? l->accept(l->user, e->meta, e->meta_size) : NULL;
}

/* The entry file at path, named for group_hex and key_hex: GJ_OK on a hit,
 * GJ_ERROR_NOT_FOUND when it is absent, unreadable, skipped or bad. */
static gj_status load_entry(const load *l, const char *path, const char *group_hex, const char *key_hex) {
    gj__entry e;
    memset(&e, 0, sizeof e);
    struct stat st;
    int fd = -1;
    gj__entry_check check = gj__entry_open(path, &fd, &st);
    /* A file this store was told is bad is not read again. (A zeroed st says nothing about
     * which file it is.) */
    const int skipped =
        st.st_ino != 0 && gj__store_is_skipped(l->st, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
    if (check == GJ__ENTRY_OK && !skipped) {
        check = gj__entry_read(fd, (uint64_t)st.st_size, &e, 1);
    }
    if (fd >= 0) {
        close(fd);
    }
    if (check == GJ__ENTRY_OOM) {
        return GJ_ERROR_OUT_OF_MEMORY;
    }
    if (check == GJ__ENTRY_IO || (check == GJ__ENTRY_NOT_REGULAR && st.st_ino == 0)) {
        /* Absent, a symlink (not followed; the next put replaces it), or an I/O error
         * (EIO, EACCES, a failed fstat): a miss, not proof that the file is bad, so
         * nothing is removed or counted. */
        if (errno != ENOENT) {
            gj__log(l->d, GJ_LOG_DEBUG, "cache entry %s unreadable: %s", path, strerror(errno));
        }
        return GJ_ERROR_NOT_FOUND;
    }
    if (skipped) {
        return GJ_ERROR_NOT_FOUND; /* e was never read */
    }
    const char *reason = check != GJ__ENTRY_OK ? gj__entry_check_message(check) : mismatch(l, &e, group_hex, key_hex);
    if (reason) {
        gj__store_reject(l->d, l->st, path, l->layer, (uint64_t)st.st_dev, (uint64_t)st.st_ino, reason);
        gj__entry_free(&e);
        return GJ_ERROR_NOT_FOUND;
    }
    hit(l, &e, path, &st);
    gj__entry_free(&e);
    return GJ_OK;
}

/* Every entry of the group in one directory, the most recently written first. */
typedef struct candidates {
    const char *group_hex;
    struct candidate {
        char *path;
        char key_hex[33]; /* from its name */
        struct timespec mtime;
    } *list;
    size_t n, cap;
} candidates;

static int collect(void *user, const char *path, const char *name, const struct stat *st) {
    candidates *cs = user;
    char group_hex[33], key_hex[33];
    if (gj__store_classify(name, group_hex, key_hex) != GJ__FILE_ENTRY || strcmp(group_hex, cs->group_hex) != 0) {
        return 0;
    }
    if (cs->n == cs->cap) {
        size_t cap = cs->cap ? 2 * cs->cap : 4;
        void *grown = realloc(cs->list, cap * sizeof *cs->list);
        if (!grown) {
            return 1;
        }
        cs->list = grown;
        cs->cap = cap;
    }
    char *copy = strdup(path);
    if (!copy) {
        return 1;
    }
    cs->list[cs->n].path = copy;
    memcpy(cs->list[cs->n].key_hex, key_hex, sizeof key_hex);
    cs->list[cs->n].mtime = st->st_mtim;
    cs->n++;
    return 0;
}

static int newest_first(const void *a, const void *b) {
    const struct candidate *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec) {
        return x->mtime.tv_sec > y->mtime.tv_sec ? -1 : 1;
    }
    return x->mtime.tv_nsec > y->mtime.tv_nsec ? -1 : x->mtime.tv_nsec < y->mtime.tv_nsec;
}

static gj_status load_any(const load *l, const char *dir) {
    candidates cs = {.group_hex = l->group_hex};
    gj__store_walk_dir(dir, l->group_hex, collect, &cs);
    if (cs.n > 1) {
        qsort(cs.list, cs.n, sizeof *cs.list, newest_first);
    }
    gj_status status = GJ_ERROR_NOT_FOUND;
    for (size_t i = 0; i < cs.n; i++) {
        if (status == GJ_ERROR_NOT_FOUND) {
            status = load_entry(l, cs.list[i].path, l->group_hex, cs.list[i].key_hex);
        }
        free(cs.list[i].path);
    }
    free(cs.list);
    return status;
}

static gj_status load_from(const load *l, const char *dir) {
    if (!l->key) {
        return load_any(l, dir);
    }
    char *path = gj__store_entry_path(dir, l->group_hex, l->key_hex, GJ__ENTRY_EXT);
    if (!path) {
        return GJ_ERROR_OUT_OF_MEMORY;
    }
    gj_status status = load_entry(l, path, l->group_hex, l->key_hex);
    free(path);
    return status;
}

static int load_layer(void *user, const char *dir, int layer) {
    load *l = user;
    l->layer = layer;
    l->status = load_from(l, dir);
    return l->status != GJ_ERROR_NOT_FOUND;
}

static gj_status lookup(gj__store *s, load *l) {
    memset(l->out, 0, sizeof *l->out);
    gj__store_key_hex(l->group, l->group_hex);
    if (l->key) {
        gj__store_key_hex(l->key, l->key_hex);
    }
    l->status = GJ_ERROR_NOT_FOUND;
    pthread_mutex_lock(&s->lock);
    l->st = gj__store_ready(s, l->d);
    gj__store_each_layer(l->st, load_layer, l);
    pthread_mutex_unlock(&s->lock);
    return l->status;
}

gj_status gj__store_get(gj__store *s, const gj__diag *d, const gj__store_key *key, const gj__store_key *group,
                        gj__store_accept_fn accept, void *user, gj__blob *out) {
    load l = {.d = d, .key = key, .group = group, .accept = accept, .user = user, .out = out};
    return lookup(s, &l);
}

gj_status gj__store_get_group(gj__store *s, const gj__diag *d, const gj__store_key *group,
                              gj__store_accept_fn accept, void *user, gj__blob *out) {
    load l = {.d = d, .group = group, .accept = accept, .user = user, .out = out};
    return lookup(s, &l);
}

/* ---------------------------------------------------------------- forget */

void gj__store_forget(gj__store *s, const gj__diag *d, const gj__store_ref *ref, const char *reason) {
    pthread_mutex_lock(&s->lock);
    struct gj__store_state *st = gj__store_ready(s, d);
    const char *dir = ref->layer == 0 ? st->root : (size_t)ref->layer <= st->n_layers ? st->layers[ref->layer - 1] : NULL;
    char group_hex[33], key_hex[33];
    gj__store_key_hex(&ref->group, group_hex);
    gj__store_key_hex(&ref->key, key_hex);
    char *path = dir ? gj__store_entry_path(dir, group_hex, key_hex, GJ__ENTRY_EXT) : NULL;
    /* Skipped from now on when it could not be removed (a removed file's dev/ino may
     * come back with a fresh entry, which must not be skipped). */
    gj__store_reject(d, st, path ? path : "(unknown)", path ? ref->layer : -1, ref->dev, ref->ino,
                     reason ? reason : "refused by its user");
    free(path);
    pthread_mutex_unlock(&s->lock);
}
