/* The disk cache's front (docs/cache.md): settings, lookup of an entry in the layers,
 * storing a fresh binary, the compile wrapper gj_compile goes through, and the hook by
 * which the runtime reports a binary the driver refused. */
#include "cache_impl.h"
#include "compile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

/* ------------------------------------------------------------- settings */

static gj_status setting_changed(gj_context *ctx, struct gj__cache *c) {
    gj__cache_unresolve(c);
    gj__clear_error(ctx);
    return GJ_OK;
}

/* Replaces one of the string settings (dir or path) of ctx's cache. */
static gj_status set_string(gj_context *ctx, int path_field, const char *value, const char *fn) {
    if (!ctx) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    struct gj__cache *c = gj__cache_get(ctx);
    char *copy = value ? strdup(value) : NULL;
    if (!c || (value && !copy)) {
        free(copy);
        return gj__fail(ctx, GJ_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    char **slot = path_field ? &c->set_path : &c->set_dir;
    free(*slot);
    *slot = copy;
    return setting_changed(ctx, c);
}

gj_status gj_context_set_cache_dir(gj_context *ctx, const char *dir) {
    return set_string(ctx, 0, dir, "gj_context_set_cache_dir");
}

gj_status gj_context_set_cache_path(gj_context *ctx, const char *path) {
    return set_string(ctx, 1, path, "gj_context_set_cache_path");
}

/* Setters of one integer field: allocate the handle, set, re-resolve. */
#define GJ__CACHE_SETTER(fn, type, field, expr)                                    \
    gj_status fn(gj_context *ctx, type value) {                                    \
        if (!ctx) {                                                                \
            return GJ_ERROR_INVALID_ARGUMENT;                                      \
        }                                                                          \
        struct gj__cache *c = gj__cache_get(ctx);                                  \
        if (!c) {                                                                  \
            return gj__fail(ctx, GJ_ERROR_OUT_OF_MEMORY, #fn ": out of memory");   \
        }                                                                          \
        c->field = (expr);                                                         \
        return setting_changed(ctx, c);                                            \
    }

GJ__CACHE_SETTER(gj_context_set_cache_enabled, int, set_enabled, value != 0)
GJ__CACHE_SETTER(gj_context_set_cache_max_bytes, uint64_t, set_max_bytes, value)
GJ__CACHE_SETTER(gj_context_set_cache_keep_source, int, set_keep_source, value != 0)
GJ__CACHE_SETTER(gj_context_set_nvrtc_enabled, int, set_nvrtc, value ? -1 : 0)

const char *gj_context_cache_dir(gj_context *ctx) {
    struct gj__cache *c = ctx ? gj__cache_ready(ctx) : NULL;
    return c && c->enabled ? c->root : NULL;
}

int gj__cache_nvrtc_allowed(gj_context *ctx) {
    const struct gj__cache *c = ctx ? ctx->cache : NULL;
    return !(c && c->set_nvrtc == 0);
}

/* ------------------------------------------------------------- programs */

gj_cache_status gj_program_cache_status(const gj_program *prog) {
    return prog ? prog->cache.status : GJ_CACHE_OFF;
}

const char *gj_program_cache_key(const gj_program *prog) {
    return prog ? prog->cache.key : "";
}

static void tag_program(gj_program *prog, gj_cache_status status, const char *hex, const char *config_hex) {
    prog->cache.status = status;
    snprintf(prog->cache.key, sizeof prog->cache.key, "%s", hex);
    snprintf(prog->cache.config_key, sizeof prog->cache.config_key, "%s", config_hex);
}

/* Moves the entry's payload and names into a new program. */
static gj_status entry_to_program(gj__entry *e, const gj__cache_request *req, gj_program **out) {
    gj_program *prog = gj__program_new();
    char *source = malloc(req->source_size + 1);
    if (!prog || !source) {
        free(source);
        gj_program_destroy(prog);
        return GJ_ERROR_OUT_OF_MEMORY;
    }
    memcpy(source, req->source, req->source_size);
    source[req->source_size] = '\0';
    prog->source = source;
    prog->kind = e->kind;
    snprintf(prog->arch, sizeof prog->arch, "%s", e->target);
    prog->binary = e->payload;
    prog->binary_size = (size_t)e->payload_size;
    prog->n_kernels = e->n_kernels;
    prog->kernel_names = e->names;
    prog->lowered_names = e->lowered;
    e->payload = NULL;
    e->names = e->lowered = NULL;
    e->n_kernels = 0;
    *out = prog;
    return GJ_OK;
}

/* ---------------------------------------------------------------- lookup */

static int is_skipped(const struct gj__cache *c, uint64_t dev, uint64_t ino) {
    for (size_t i = 0; i < c->n_skipped; i++) {
        if (c->skipped[i].dev == dev && c->skipped[i].ino == ino) {
            return 1;
        }
    }
    return 0;
}

static void skip(struct gj__cache *c, uint64_t dev, uint64_t ino) {
    if (is_skipped(c, dev, ino)) {
        return;
    }
    if (c->n_skipped == c->cap_skipped) {
        size_t cap = c->cap_skipped ? 2 * c->cap_skipped : 8;
        void *grown = realloc(c->skipped, cap * sizeof *c->skipped);
        if (!grown) {
            return;
        }
        c->skipped = grown;
        c->cap_skipped = cap;
    }
    c->skipped[c->n_skipped].dev = dev;
    c->skipped[c->n_skipped].ino = ino;
    c->n_skipped++;
}

/* A broken entry: counted, warned about, removed when it is ours to remove and still
 * the same file, otherwise never looked at again by this context. */
static void reject(gj_context *ctx, struct gj__cache *c, const char *path, int layer, const struct stat *st,
                   const char *reason) {
    struct gj__cache_counters delta = {.corrupt = 1};
    gj__cache_count(c, &delta);
    int removed = layer == 0 && gj__cache_remove_if_same(path, (uint64_t)st->st_dev, (uint64_t)st->st_ino) == 0;
    if (!removed) {
        skip(c, (uint64_t)st->st_dev, (uint64_t)st->st_ino);
    }
    gj__log(ctx, GJ_LOG_WARNING, "cache entry %s is broken (%s); %s", path, reason,
            removed ? "removed it, recompiling" : "ignoring it");
}

/* Checks that a structurally valid entry is the one asked for. NULL when it is. */
static const char *mismatch(const gj__entry *e, const gj__cache_request *req, const gj__cache_key *key) {
    if (memcmp(e->config_key, key->config_key, 16) != 0 || (key->hex[0] && memcmp(e->key, key->key, 16) != 0)) {
        return "its key does not match its name";
    }
    if (strcmp(e->target, req->target) != 0 || e->kind != req->kind) {
        return "target mismatch";
    }
    if (e->n_kernels != req->n_names) {
        return "kernel list mismatch";
    }
    for (size_t i = 0; i < e->n_kernels; i++) {
        if (strcmp(e->names[i], req->names[i]) != 0) {
            return "kernel list mismatch";
        }
    }
    return NULL;
}

typedef struct load {
    gj_context *ctx;
    struct gj__cache *c;
    const gj__cache_request *req;
    const gj__cache_key *key;
    int layer;
    gj_program **out;
} load;

static gj_status hit(const load *l, gj__entry *e, const char *path, const struct stat *st) {
    gj_status status = entry_to_program(e, l->req, l->out);
    if (status != GJ_OK) {
        return status;
    }
    char hex[33];
    gj__cache_hex(e->key, hex);
    tag_program(*l->out, GJ_CACHE_HIT, hex, l->key->config_hex);
    (*l->out)->cache.layer = l->layer;
    (*l->out)->cache.dev = (uint64_t)st->st_dev;
    (*l->out)->cache.ino = (uint64_t)st->st_ino;
    if (l->layer == 0) {
        gj__cache_touch(path); /* the LRU stamp; read-only layers are never evicted */
    }
    struct gj__cache_counters delta = {.hits = 1, .bytes_read = (uint64_t)st->st_size};
    gj__cache_count(l->c, &delta);
    gj__log(l->ctx, GJ_LOG_DEBUG, "cache hit: %s", path);
    return GJ_OK;
}

/* GJ_OK on a hit, GJ_ERROR_NOT_FOUND when the file is absent or bad. */
static gj_status load_entry(const load *l, const char *path) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) {
            gj__log(l->ctx, GJ_LOG_DEBUG, "cache entry %s unreadable: %s", path, strerror(errno));
        }
        return GJ_ERROR_NOT_FOUND;
    }
    struct stat st;
    gj__entry e;
    memset(&e, 0, sizeof e);
    gj__entry_check check = fstat(fd, &st) != 0 ? GJ__ENTRY_IO : !S_ISREG(st.st_mode) ? GJ__ENTRY_NOT_REGULAR : GJ__ENTRY_OK;
    if (check == GJ__ENTRY_OK && is_skipped(l->c, (uint64_t)st.st_dev, (uint64_t)st.st_ino)) {
        close(fd);
        return GJ_ERROR_NOT_FOUND;
    }
    if (check == GJ__ENTRY_OK) {
        check = gj__entry_read(fd, (uint64_t)st.st_size, &e, 1);
    }
    close(fd);
    if (check == GJ__ENTRY_OOM) {
        return GJ_ERROR_OUT_OF_MEMORY;
    }
    const char *reason = check != GJ__ENTRY_OK ? gj__entry_check_message(check) : mismatch(&e, l->req, l->key);
    gj_status status = GJ_ERROR_NOT_FOUND;
    if (reason) {
        reject(l->ctx, l->c, path, l->layer, &st, reason);
    } else {
        status = hit(l, &e, path, &st);
    }
    gj__entry_free(&e);
    return status;
}

/* Without NVRTC the full key is unknown: every entry named after the configuration key
 * qualifies (any NVRTC made it), the most recently written first. */
typedef struct candidates {
    const char *config_hex;
    struct candidate {
        char *path;
        struct timespec mtime;
    } *list;
    size_t n, cap;
} candidates;

static int collect(void *user, const char *path, const char *name, const struct stat *st) {
    candidates *cs = user;
    char config_hex[33], hex[33];
    if (gj__cache_classify(name, config_hex, hex) != GJ__FILE_ENTRY || strcmp(config_hex, cs->config_hex) != 0) {
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
    candidates cs = {.config_hex = l->key->config_hex};
    gj__cache_walk(dir, l->key->config_hex, collect, &cs);
    if (cs.n > 1) {
        qsort(cs.list, cs.n, sizeof *cs.list, newest_first);
    }
    gj_status status = GJ_ERROR_NOT_FOUND;
    for (size_t i = 0; i < cs.n; i++) {
        if (status == GJ_ERROR_NOT_FOUND) {
            status = load_entry(l, cs.list[i].path);
        }
        free(cs.list[i].path);
    }
    free(cs.list);
    return status;
}

static gj_status load_from(const load *l, const char *dir) {
    if (!l->key->hex[0]) {
        return load_any(l, dir);
    }
    char *path = gj__cache_entry_path(dir, l->key->config_hex, l->key->hex, GJ__ENTRY_EXT);
    if (!path) {
        return GJ_ERROR_OUT_OF_MEMORY;
    }
    gj_status status = load_entry(l, path);
    free(path);
    return status;
}

gj_status gj__cache_lookup(gj_context *ctx, const gj__cache_request *req, const gj__cache_key *key,
                           gj_program **out) {
    *out = NULL;
    struct gj__cache *c = gj__cache_ready(ctx);
    if (!c) {
        return GJ_ERROR_OUT_OF_MEMORY;
    }
    if (!c->enabled) {
        return GJ_ERROR_NOT_FOUND;
    }
    load l = {.ctx = ctx, .c = c, .req = req, .key = key, .out = out};
    /* Read-only layers first: a shipped bundle wins over what this user compiled. */
    gj_status status = GJ_ERROR_NOT_FOUND;
    for (size_t i = 0; i < c->n_layers && status == GJ_ERROR_NOT_FOUND; i++) {
        l.layer = (int)i + 1;
        status = load_from(&l, c->layers[i]);
    }
    if (status == GJ_ERROR_NOT_FOUND && c->root) {
        l.layer = 0;
        status = load_from(&l, c->root);
    }
    return status;
}

/* ----------------------------------------------------------------- store */

static void store_failed(gj_context *ctx, struct gj__cache *c, const char *dir, int err) {
    if (!c->write_failed) {
        gj__log(ctx, GJ_LOG_WARNING, "cannot write to cache directory %s (%s); working uncached", dir,
                strerror(err));
    }
    c->write_failed = 1; /* one warning; later stores would fail the same way */
}

static int publish_source(const char *shard, const gj__cache_key *key, const gj__cache_request *req) {
    char name[80];
    snprintf(name, sizeof name, "%s-%s%s", key->config_hex, key->hex, GJ__SOURCE_EXT);
    struct iovec part = {.iov_base = (void *)req->source, .iov_len = req->source_size};
    return gj__cache_publish(shard, name, &part, 1);
}

static int publish_entry(const char *shard, const gj__cache_key *key, const gj__cache_request *req,
                         const gj_program *prog, uint64_t *bytes) {
    gj__entry e = {.kind = prog->kind,
                   .nvrtc_major = (uint32_t)req->nvrtc->major,
                   .nvrtc_minor = (uint32_t)req->nvrtc->minor,
                   .target = (char *)req->target,
                   .gridjit_version = (char *)GJ_VERSION_STRING,
                   .nvrtc_build = (char *)req->nvrtc->build,
                   .n_kernels = prog->n_kernels,
                   .names = prog->kernel_names,
                   .lowered = prog->lowered_names,
                   .payload_size = prog->binary_size,
                   .payload_checksum = XXH3_64bits(prog->binary, prog->binary_size)};
    memcpy(e.key, key->key, 16);
    memcpy(e.config_key, key->config_key, 16);
    for (size_t i = 0; i < e.n_kernels; i++) {
        if (!e.names[i] || !e.lowered[i]) {
            return EINVAL; /* not a program gj_compile made; nothing sensible to store */
        }
    }
    size_t header_size = 0;
    uint8_t *header = gj__entry_encode_header(&e, &header_size);
    if (!header) {
        return ENOMEM;
    }
    struct iovec parts[2] = {{header, header_size}, {prog->binary, prog->binary_size}};
    char name[80];
    snprintf(name, sizeof name, "%s-%s%s", key->config_hex, key->hex, GJ__ENTRY_EXT);
    int err = gj__cache_publish(shard, name, parts, 2);
    free(header);
    *bytes = header_size + prog->binary_size;
    return err;
}

static void evict(gj_context *ctx, struct gj__cache *c) {
    gj__cache_evict_result r;
    if (gj__cache_evict(c->root, c->max_bytes, &r) == 0 && (r.evicted || r.swept)) {
        gj__log(ctx, GJ_LOG_DEBUG, "cache: evicted %llu entries (%llu bytes), swept %llu temporary files",
                (unsigned long long)r.evicted, (unsigned long long)r.freed, (unsigned long long)r.swept);
    }
    struct gj__cache_counters delta = {.evictions = r.evicted};
    gj__cache_count(c, &delta);
}

void gj__cache_store(gj_context *ctx, const gj__cache_request *req, const gj__cache_key *key,
                     const gj_program *prog) {
    struct gj__cache *c = ctx->cache;
    if (!c || !c->enabled || !c->root || c->write_failed || !key->hex[0] || !req->nvrtc || !prog ||
        !prog->binary || prog->kind != req->kind) {
        return;
    }
    char *shard = gj__cache_shard_path(c->root, key->config_hex);
    if (!shard) {
        return;
    }
    int err = mkdir(shard, 0700) != 0 && errno != EEXIST ? errno : 0;
    uint64_t bytes = 0;
    if (!err) {
        err = publish_entry(shard, key, req, prog, &bytes);
    }
    if (!err && c->keep_source) {
        err = publish_source(shard, key, req);
    }
    if (err == EINVAL) {
        gj__log(ctx, GJ_LOG_DEBUG, "cache: program without lowered names not stored");
    } else if (err) {
        store_failed(ctx, c, c->root, err);
    } else {
        struct gj__cache_counters delta = {.bytes_written = bytes};
        gj__cache_count(c, &delta);
        if (!c->remembered) {
            gj__cache_remember_nvrtc(c->root, req->nvrtc);
            c->remembered = 1;
        }
        evict(ctx, c);
    }
    free(shard);
}

/* -------------------------------------------------------------- compile */

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Single-quotes text for a POSIX shell. */
static void shell_quote(char *out, size_t size, const char *text) {
    size_t n = 0;
    if (n + 1 < size) {
        out[n++] = '\'';
    }
    for (const char *p = text; *p && n + 5 < size; p++) {
        if (*p == '\'') {
            memcpy(out + n, "'\\''", 4);
            n += 4;
        } else if (*p != '\n') {
            out[n++] = *p;
        }
    }
    if (n + 1 < size) {
        out[n++] = '\'';
    }
    out[n < size ? n : size - 1] = '\0';
}

/* The `gridjit precompile` command that would make the missing entry. */
static void precompile_command(const struct gj__cache *c, const gj__cache_request *req, char *out, size_t size) {
    char config[1400], dir[600] = "";
    shell_quote(config, sizeof config, req->config_json);
    if (c->root) {
        char quoted[560];
        shell_quote(quoted, sizeof quoted, c->root);
        snprintf(dir, sizeof dir, " --cache-dir %s", quoted);
    }
    const char *arch = req->target;
    const char *ptx = "";
    char sm[32];
    if (req->kind == GJ_BINARY_PTX && strncmp(arch, "compute_", 8) == 0) {
        snprintf(sm, sizeof sm, "sm_%s", arch + 8);
        arch = sm;
        ptx = " --ptx";
    }
    snprintf(out, size, "gridjit precompile --config %s --dims %u --arch %s%s%s%s%s", config, (unsigned)req->n_dims,
             arch, ptx, req->hint_flags ? req->hint_flags : "", dir,
             req->hint_incomplete ? " (or the library with this program's code generation options)" : "");
}

static gj_status no_nvrtc(gj_context *ctx, const struct gj__cache *c, const gj__cache_request *req,
                          const gj__cache_key *key, const char *nvrtc_error) {
    const char *where = !c->enabled                    ? " (the disk cache is off)"
                        : !c->root && !c->n_layers     ? " (no usable cache directory)"
                                                       : "";
    /* The full key cannot be computed without NVRTC; with the NVRTC last used in this
     * directory it can, and that is the key `gridjit compile --json` showed there. */
    char full[120] = "";
    gj__nvrtc_identity last;
    if (c->root && gj__cache_recall_nvrtc(c->root, &last) == 0) {
        gj__cache_request with = *req;
        with.nvrtc = &last;
        gj__cache_key k;
        if (gj__cache_key_compute(&with, &k) == 0) {
            snprintf(full, sizeof full, " (key %s with NVRTC %d.%d, last used here)", k.hex, last.major, last.minor);
        }
    }
    char command[2200];
    if (req->config_json) {
        precompile_command(c, req, command, sizeof command);
    } else {
        snprintf(command, sizeof command, "compiling it once with NVRTC available into the same cache directory");
    }
    return gj__fail(ctx, GJ_ERROR_NO_NVRTC,
                    "no cache layer holds configuration key %s%s for %s%s, and NVRTC cannot compile it (%s); "
                    "make the entry where NVRTC is available with: %s",
                    key->config_hex, full, req->target, where, nvrtc_error && *nvrtc_error ? nvrtc_error : "disabled",
                    command);
}

gj_status gj__cache_compile(gj_context *ctx, const gj__cache_request *req, gj__compile_fn compile, void *arg,
                            gj_program **out) {
    *out = NULL;
    struct gj__cache *c = gj__cache_ready(ctx);
    if (!c) {
        return gj__fail(ctx, GJ_ERROR_OUT_OF_MEMORY, "gj_compile: out of memory");
    }
    gj__cache_key key;
    if (gj__cache_key_compute(req, &key) != 0) {
        return gj__fail(ctx, GJ_ERROR_OUT_OF_MEMORY, "gj_compile: out of memory computing the cache key");
    }
    int searchable = c->enabled && (c->root || c->n_layers);
    if (searchable) {
        gj_status status = gj__cache_lookup(ctx, req, &key, out);
        if (status != GJ_ERROR_NOT_FOUND) {
            return status == GJ_OK ? GJ_OK : gj__fail(ctx, status, "gj_compile: out of memory reading the cache");
        }
        struct gj__cache_counters delta = {.misses = 1};
        gj__cache_count(c, &delta);
    }
    if (!req->nvrtc) {
        return no_nvrtc(ctx, c, req, &key, req->nvrtc_error);
    }
    double start = now_ms();
    gj_status status = compile(ctx, arg, out);
    struct gj__cache_counters delta = {.compiles = 1, .compile_ms = now_ms() - start};
    gj__cache_count(c, &delta);
    if (*out) {
        tag_program(*out, searchable ? GJ_CACHE_MISS : GJ_CACHE_OFF, key.hex, key.config_hex);
    }
    if (status == GJ_OK && searchable) {
        gj__cache_store(ctx, req, &key, *out);
    }
    return status;
}

/* ------------------------------------------------------------ invalidate */

void gj__cache_invalidate(gj_context *ctx, const gj_program *prog, const char *reason) {
    struct gj__cache *c = ctx ? ctx->cache : NULL;
    if (!c || !prog || prog->cache.status != GJ_CACHE_HIT) {
        return;
    }
    int layer = prog->cache.layer;
    const char *dir = layer == 0 ? c->root : (size_t)layer <= c->n_layers ? c->layers[layer - 1] : NULL;
    char *path = dir ? gj__cache_entry_path(dir, prog->cache.config_key, prog->cache.key, GJ__ENTRY_EXT) : NULL;
    struct stat st = {.st_dev = (dev_t)prog->cache.dev, .st_ino = (ino_t)prog->cache.ino};
    reject(ctx, c, path ? path : "(unknown)", path ? layer : -1, &st, reason ? reason : "refused by the driver");
    skip(c, prog->cache.dev, prog->cache.ino); /* even if removal failed */
    free(path);
}
