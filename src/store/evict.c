/* Bounded size (docs/cache.md, "Size cap"): after every insertion (and on `gridjit cache
 * prune`) the writable directory is brought under its byte cap, least recently used
 * entries first. Recency is the entry's mtime, which every hit sets explicitly. */
#include "store/store_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An entry with its kept source: they live and die together. */
typedef struct item {
    char *stem; /* path without extension */
    uint64_t bytes;
    struct timespec used; /* the entry's mtime (the source's when the entry is gone) */
    int has_entry, has_sidecar;
} item;

typedef struct scan {
    item *items;
    size_t n, cap;
    uint64_t total, swept;
    time_t now;
    int oom;
} scan;

static item *add_item(scan *s, const char *path, size_t stem_len) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        item *items = realloc(s->items, cap * sizeof *items);
        if (!items) {
            s->oom = 1;
            return NULL;
        }
        s->items = items;
        s->cap = cap;
    }
    char *stem = strndup(path, stem_len);
    if (!stem) {
        s->oom = 1;
        return NULL;
    }
    item *it = &s->items[s->n++];
    memset(it, 0, sizeof *it);
    it->stem = stem;
    return it;
}

static int by_stem(const void *a, const void *b) {
    return strcmp(((const item *)a)->stem, ((const item *)b)->stem);
}

/* One item per file was collected; an entry and its source (same stem) become one. */
static void merge_pairs(scan *s) {
    if (s->n > 1) {
        qsort(s->items, s->n, sizeof *s->items, by_stem);
    }
    size_t out = 0;
    for (size_t i = 0; i < s->n; i++) {
        item *prev = out ? &s->items[out - 1] : NULL;
        item *it = &s->items[i];
        if (prev && strcmp(prev->stem, it->stem) == 0) {
            prev->bytes += it->bytes;
            if (it->has_entry) {
                prev->used = it->used; /* the entry's stamp counts */
            }
            prev->has_entry |= it->has_entry;
            prev->has_sidecar |= it->has_sidecar;
            free(it->stem);
        } else {
            s->items[out++] = *it;
        }
    }
    s->n = out;
}

static int later(struct timespec a, struct timespec b) {
    return a.tv_sec != b.tv_sec ? a.tv_sec > b.tv_sec : a.tv_nsec > b.tv_nsec;
}

static int visit(void *user, const char *path, const char *name, const struct stat *st) {
    scan *s = user;
    gj__store_file_kind kind = gj__store_classify(name, NULL, NULL);
    if (kind == GJ__FILE_TEMP) {
        /* A temporary file older than an hour belongs to a process that died mid-write. */
        if (S_ISREG(st->st_mode) && s->now - st->st_mtim.tv_sec > GJ__TEMP_MAX_AGE_S && unlink(path) == 0) {
            s->swept++;
        }
        return 0;
    }
    if ((kind != GJ__FILE_ENTRY && kind != GJ__FILE_SIDECAR) || !S_ISREG(st->st_mode)) {
        return 0;
    }
    size_t ext = strlen(kind == GJ__FILE_ENTRY ? GJ__ENTRY_EXT : GJ__SIDECAR_EXT);
    item *it = add_item(s, path, strlen(path) - ext);
    if (!it) {
        return 1;
    }
    it->bytes = (uint64_t)st->st_size;
    s->total += (uint64_t)st->st_size;
    it->used = st->st_mtim;
    it->has_entry = kind == GJ__FILE_ENTRY;
    it->has_sidecar = kind == GJ__FILE_SIDECAR;
    return 0;
}

static int by_recency(const void *a, const void *b) {
    const item *x = a, *y = b;
    if (later(y->used, x->used)) {
        return -1;
    }
    if (later(x->used, y->used)) {
        return 1;
    }
    return strcmp(x->stem, y->stem); /* a fixed order for equal stamps */
}

static uint64_t remove_item(const item *it) {
    char path[4500];
    uint64_t removed = 0;
    if (it->has_entry) {
        snprintf(path, sizeof path, "%s%s", it->stem, GJ__ENTRY_EXT);
        removed += unlink(path) == 0 || errno == ENOENT;
    }
    if (it->has_sidecar) {
        snprintf(path, sizeof path, "%s%s", it->stem, GJ__SIDECAR_EXT);
        removed += unlink(path) == 0 || errno == ENOENT;
    }
    return removed;
}

int gj__store_evict(const char *root, uint64_t cap, gj__store_evict_result *result) {
    memset(result, 0, sizeof *result);
    scan s = {.now = time(NULL)};
    int err = gj__store_walk_dir(root, NULL, visit, &s);
    if (s.oom) {
        err = ENOMEM;
    }
    result->swept = s.swept;
    merge_pairs(&s);
    if (!err && s.total > cap) {
        qsort(s.items, s.n, sizeof *s.items, by_recency); /* s.n > 0: total > cap */
        for (size_t i = 0; i < s.n && s.total > cap; i++) {
            /* Another process evicting at the same time may have removed it already:
             * that still frees the space. */
            remove_item(&s.items[i]);
            s.total -= s.items[i].bytes;
            result->freed += s.items[i].bytes;
            result->evicted += s.items[i].has_entry;
            s.items[i].has_entry = s.items[i].has_sidecar = 0;
        }
    }
    result->bytes = s.total;
    for (size_t i = 0; i < s.n; i++) {
        result->entries += s.items[i].has_entry;
        free(s.items[i].stem);
    }
    free(s.items);
    return err;
}

int gj__store_apply_cap(struct gj__store_state *st, gj__store_evict_result *result) {
    const int err = gj__store_evict(st->root, st->max_bytes, result);
    gj__store_counters delta = {.evictions = result->evicted}; /* what went before a failure went */
    gj__store_count(st, &delta);
    return err;
}
