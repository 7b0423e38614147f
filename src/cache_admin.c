/* Maintenance of the cache directories (`gridjit cache list|verify|prune|clear`). */
#include "cache_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *kind_name(gj_binary_kind kind) {
    return kind == GJ_BINARY_CUBIN ? "cubin" : "ptx";
}

/* Reads an entry file: header only (with_payload 0) or completely. */
static gj__entry_check read_file(const char *path, gj__entry *e, int with_payload, struct stat *st) {
    memset(e, 0, sizeof *e);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        return errno == ELOOP ? GJ__ENTRY_NOT_REGULAR : GJ__ENTRY_IO;
    }
    gj__entry_check check = fstat(fd, st) != 0      ? GJ__ENTRY_IO
                            : !S_ISREG(st->st_mode) ? GJ__ENTRY_NOT_REGULAR
                                                    : gj__entry_read(fd, (uint64_t)st->st_size, e, with_payload);
    close(fd);
    return check;
}

/* The entry's keys must be the ones its name promises. */
static int name_matches(const gj__entry *e, const char *config_hex, const char *hex) {
    char a[33], b[33];
    gj__cache_hex(e->config_key, a);
    gj__cache_hex(e->key, b);
    return strcmp(a, config_hex) == 0 && strcmp(b, hex) == 0;
}

/* ------------------------------------------------------------------ list */

typedef struct lister {
    gj_context *ctx;
    gj_cache_visit_fn fn;
    void *user;
    int writable;
    int stopped;
} lister;

static int list_entry(lister *ls, const char *path, const char *config_hex, const char *hex) {
    gj__entry e;
    struct stat st;
    gj__entry_check check = read_file(path, &e, 0, &st);
    if (check != GJ__ENTRY_OK || !name_matches(&e, config_hex, hex)) {
        gj__log(ls->ctx, GJ_LOG_WARNING, "cache entry %s is unreadable (%s); `gridjit cache verify` removes it", path,
                check != GJ__ENTRY_OK ? gj__entry_check_message(check) : "its key does not match its name");
        gj__entry_free(&e);
        return 0;
    }
    gj_cache_entry_info info = {.key = hex, .config_key = config_hex, .path = path, .bytes = (uint64_t)st.st_size,
                                .target = e.target, .kind = kind_name(e.kind), .writable = ls->writable};
    int stop = ls->fn(ls->user, &info);
    gj__entry_free(&e);
    return stop;
}

/* A kept source: its target is its entry's, when the entry is still there. */
static int list_source(lister *ls, const char *path, const struct stat *st, const char *config_hex, const char *hex) {
    char entry_path[4400];
    size_t n = strlen(path) - strlen(GJ__SOURCE_EXT);
    snprintf(entry_path, sizeof entry_path, "%.*s%s", (int)n, path, GJ__ENTRY_EXT);
    gj__entry e;
    struct stat est;
    int have = read_file(entry_path, &e, 0, &est) == GJ__ENTRY_OK;
    gj_cache_entry_info info = {.key = hex, .config_key = config_hex, .path = path, .bytes = (uint64_t)st->st_size,
                                .target = have ? e.target : "", .kind = "source", .writable = ls->writable};
    int stop = ls->fn(ls->user, &info);
    if (have) {
        gj__entry_free(&e);
    }
    return stop;
}

static int list_visit(void *user, const char *path, const char *name, const struct stat *st) {
    lister *ls = user;
    char config_hex[33], hex[33];
    gj__cache_file_kind kind = gj__cache_classify(name, config_hex, hex);
    int stop = 0;
    if (kind == GJ__FILE_ENTRY) {
        stop = list_entry(ls, path, config_hex, hex);
    } else if (kind == GJ__FILE_SOURCE && S_ISREG(st->st_mode)) {
        stop = list_source(ls, path, st, config_hex, hex);
    }
    ls->stopped |= stop != 0;
    return stop;
}

static gj_status ready(gj_context *ctx, struct gj__cache **out, const char *fn) {
    if (!ctx) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj__clear_error(ctx);
    *out = gj__cache_ready(ctx);
    return *out ? GJ_OK : gj__fail(ctx, GJ_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
}

gj_status gj_cache_list(gj_context *ctx, gj_cache_visit_fn fn, void *user) {
    struct gj__cache *c = NULL;
    gj_status status = ready(ctx, &c, "gj_cache_list");
    if (status != GJ_OK || !fn) {
        return status != GJ_OK ? status
                               : gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "gj_cache_list: fn must not be NULL");
    }
    lister ls = {.ctx = ctx, .fn = fn, .user = user};
    for (size_t i = 0; i < c->n_layers && !ls.stopped; i++) {
        gj__cache_walk(c->layers[i], NULL, list_visit, &ls);
    }
    if (c->root && !ls.stopped) {
        ls.writable = 1;
        gj__cache_walk(c->root, NULL, list_visit, &ls);
    }
    return GJ_OK;
}

/* ---------------------------------------------------------------- verify */

typedef struct verifier {
    gj_context *ctx;
    struct gj__cache *c;
    int writable;
    uint64_t checked, bad;
} verifier;

static int verify_visit(void *user, const char *path, const char *name, const struct stat *lst) {
    verifier *v = user;
    char config_hex[33], hex[33];
    if (gj__cache_classify(name, config_hex, hex) != GJ__FILE_ENTRY) {
        return 0;
    }
    v->checked++;
    gj__entry e;
    struct stat st = *lst;
    gj__entry_check check = read_file(path, &e, 1, &st);
    const char *reason = check != GJ__ENTRY_OK              ? gj__entry_check_message(check)
                         : !name_matches(&e, config_hex, hex) ? "its key does not match its name"
                                                              : NULL;
    gj__entry_free(&e);
    if (check == GJ__ENTRY_OOM || !reason) {
        return 0;
    }
    v->bad++;
    struct gj__cache_counters delta = {.corrupt = 1};
    gj__cache_count(v->c, &delta);
    int removed = v->writable && gj__cache_remove_if_same(path, (uint64_t)st.st_dev, (uint64_t)st.st_ino) == 0;
    gj__log(v->ctx, GJ_LOG_WARNING, "cache entry %s is broken (%s)%s", path, reason,
            removed ? "; removed it" : v->writable ? "" : " in a read-only layer");
    return 0;
}

gj_status gj_cache_verify(gj_context *ctx, uint64_t *n_checked, uint64_t *n_bad) {
    struct gj__cache *c = NULL;
    gj_status status = ready(ctx, &c, "gj_cache_verify");
    if (status != GJ_OK) {
        return status;
    }
    verifier v = {.ctx = ctx, .c = c};
    for (size_t i = 0; i < c->n_layers; i++) {
        gj__cache_walk(c->layers[i], NULL, verify_visit, &v);
    }
    if (c->root) {
        v.writable = 1;
        gj__cache_walk(c->root, NULL, verify_visit, &v);
    }
    if (n_checked) {
        *n_checked = v.checked;
    }
    if (n_bad) {
        *n_bad = v.bad;
    }
    return GJ_OK;
}

/* ---------------------------------------------------------- prune, clear */

static gj_status need_root(gj_context *ctx, const struct gj__cache *c, const char *fn) {
    if (!c->enabled) {
        return gj__fail(ctx, GJ_ERROR_NOT_FOUND, "%s: the disk cache is off", fn);
    }
    if (!c->root) {
        return gj__fail(ctx, GJ_ERROR_NOT_FOUND, "%s: no usable cache directory", fn);
    }
    return GJ_OK;
}

gj_status gj_cache_prune(gj_context *ctx, uint64_t *n_evicted, uint64_t *bytes_freed) {
    struct gj__cache *c = NULL;
    gj_status status = ready(ctx, &c, "gj_cache_prune");
    if (status == GJ_OK) {
        status = need_root(ctx, c, "gj_cache_prune");
    }
    gj__cache_evict_result r = {0};
    if (status == GJ_OK) {
        int err = gj__cache_evict(c->root, c->max_bytes, &r);
        if (err) {
            status = gj__fail(ctx, GJ_ERROR_IO, "gj_cache_prune: cannot read %s: %s", c->root, strerror(err));
        }
        struct gj__cache_counters delta = {.evictions = r.evicted};
        gj__cache_count(c, &delta);
    }
    if (n_evicted) {
        *n_evicted = r.evicted;
    }
    if (bytes_freed) {
        *bytes_freed = r.freed;
    }
    return status;
}

static int clear_visit(void *user, const char *path, const char *name, const struct stat *st) {
    uint64_t *removed = user;
    gj__cache_file_kind kind = gj__cache_classify(name, NULL, NULL);
    /* A young temporary file is another process's write in progress: leave it. */
    int stale_temp = kind == GJ__FILE_TEMP && time(NULL) - st->st_mtim.tv_sec > GJ__TEMP_MAX_AGE_S;
    if ((kind == GJ__FILE_ENTRY || kind == GJ__FILE_SOURCE || stale_temp) && unlink(path) == 0) {
        *removed += kind == GJ__FILE_ENTRY;
    }
    return 0;
}

gj_status gj_cache_clear(gj_context *ctx, uint64_t *n_removed) {
    struct gj__cache *c = NULL;
    gj_status status = ready(ctx, &c, "gj_cache_clear");
    if (status == GJ_OK) {
        status = need_root(ctx, c, "gj_cache_clear");
    }
    uint64_t removed = 0;
    if (status == GJ_OK) {
        int err = gj__cache_walk(c->root, NULL, clear_visit, &removed);
        if (err) {
            status = gj__fail(ctx, GJ_ERROR_IO, "gj_cache_clear: cannot read %s: %s", c->root, strerror(err));
        }
    }
    if (n_removed) {
        *n_removed = removed;
    }
    return status;
}
