/* The public disk-cache entry points: settings, statistics and maintenance. */
#include "api/context.h"

#include "compile/meta.h"

#include <stdio.h>
#include <string.h>

gj_status gj_context_set_cache_dir(gj_context *ctx, const char *dir) {
    GJ__ENTER(ctx);
    return gj__store_set_dir(&ctx->store, &ctx->diag, dir);
}

gj_status gj_context_set_cache_path(gj_context *ctx, const char *path) {
    GJ__ENTER(ctx);
    return gj__store_set_path(&ctx->store, &ctx->diag, path);
}

gj_status gj_context_set_cache_enabled(gj_context *ctx, int enabled) {
    GJ__ENTER(ctx);
    gj__store_set_enabled(&ctx->store, enabled);
    return GJ_OK;
}

gj_status gj_context_set_cache_max_bytes(gj_context *ctx, uint64_t max_bytes) {
    GJ__ENTER(ctx);
    gj__store_set_max_bytes(&ctx->store, max_bytes);
    return GJ_OK;
}

gj_status gj_context_set_cache_keep_source(gj_context *ctx, int keep) {
    GJ__ENTER(ctx);
    gj__store_set_keep_sidecar(&ctx->store, keep);
    return GJ_OK;
}

const char *gj_context_cache_dir(gj_context *ctx) {
    if (!ctx) {
        return NULL;
    }
    gj__diag_clear(&ctx->diag);
    char dir[sizeof ctx->cache_dir];
    gj__store_dir(&ctx->store, &ctx->diag, dir, sizeof dir);
    pthread_mutex_lock(&ctx->lock);
    /* Other threads may be reading the string returned to them: rewrite it only when the
     * directory changed (which the header says invalidates it). */
    if (strcmp(ctx->cache_dir, dir) != 0) {
        memcpy(ctx->cache_dir, dir, sizeof dir);
    }
    pthread_mutex_unlock(&ctx->lock);
    return dir[0] ? ctx->cache_dir : NULL;
}

gj_status gj_context_cache_stats(gj_context *ctx, gj_cache_stats_scope scope, gj_cache_stats *out) {
    GJ__ENTER(ctx);
    if (!out || (scope != GJ_CACHE_STATS_CONTEXT && scope != GJ_CACHE_STATS_DIRECTORY)) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "gj_context_cache_stats: out must not be NULL and scope must be CONTEXT or DIRECTORY");
    }
    gj__store_stats st;
    gj__store_read_stats(&ctx->store, &ctx->diag, scope == GJ_CACHE_STATS_DIRECTORY, &st);
    memset(out, 0, sizeof *out);
    out->hits = st.counters.hits;
    out->misses = st.counters.misses;
    out->compiles = st.counters.fills;
    out->compile_ms = st.counters.fill_ms;
    out->bytes_read = st.counters.bytes_read;
    out->bytes_written = st.counters.bytes_written;
    out->evictions = st.counters.evictions;
    out->corrupt = st.counters.corrupt;
    out->entries = st.entries;
    out->disk_bytes = st.disk_bytes;
    out->max_bytes = st.max_bytes;
    return GJ_OK;
}

typedef struct lister {
    gj_cache_visit_fn fn;
    void *user;
} lister;

/* A store item as the public entry: target and kind come from the program metadata. */
static int list_visit(void *user, const gj__store_item *item) {
    const lister *l = user;
    gj__program_meta meta;
    const int have = item->meta && gj__meta_decode(item->meta, item->meta_size, &meta) == 0;
    gj_cache_entry_info info = {.key = item->key_hex,
                                .config_key = item->group_hex,
                                .path = item->path,
                                .bytes = item->bytes,
                                .target = have ? meta.target : "",
                                .kind = item->is_sidecar ? "source" : have ? gj__binary_kind_name(meta.kind) : "?",
                                .writable = item->writable};
    const int stop = l->fn(l->user, &info);
    if (have) {
        gj__meta_free(&meta);
    }
    return stop;
}

gj_status gj_cache_list(gj_context *ctx, gj_cache_visit_fn fn, void *user) {
    GJ__ENTER(ctx);
    if (!fn) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_cache_list: fn must not be NULL");
    }
    lister l = {fn, user};
    gj__store_walk(&ctx->store, &ctx->diag, list_visit, &l);
    return GJ_OK;
}

gj_status gj_cache_verify(gj_context *ctx, uint64_t *n_checked, uint64_t *n_bad) {
    GJ__ENTER(ctx);
    uint64_t checked = 0, bad = 0;
    gj__store_verify(&ctx->store, &ctx->diag, &checked, &bad);
    if (n_checked) {
        *n_checked = checked;
    }
    if (n_bad) {
        *n_bad = bad;
    }
    return GJ_OK;
}

gj_status gj_cache_prune(gj_context *ctx, uint64_t *n_evicted, uint64_t *bytes_freed) {
    GJ__ENTER(ctx);
    uint64_t evicted = 0, freed = 0;
    gj_status status = gj__store_prune(&ctx->store, &ctx->diag, "gj_cache_prune", &evicted, &freed);
    if (n_evicted) {
        *n_evicted = evicted;
    }
    if (bytes_freed) {
        *bytes_freed = freed;
    }
    return status;
}

gj_status gj_cache_clear(gj_context *ctx, uint64_t *n_removed) {
    GJ__ENTER(ctx);
    uint64_t removed = 0;
    gj_status status = gj__store_clear(&ctx->store, &ctx->diag, "gj_cache_clear", &removed);
    if (n_removed) {
        *n_removed = removed;
    }
    return status;
}
