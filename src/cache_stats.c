/* Statistics (docs/cache.md, "Statistics"): counters per context, accumulated across
 * processes in the writable directory's "stats" file (text, one "name value" a line,
 * updated under flock). The file is advisory: a damaged one reads as zeros. */
#include "cache_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static void add(struct gj__cache_counters *to, const struct gj__cache_counters *d) {
    to->hits += d->hits;
    to->misses += d->misses;
    to->compiles += d->compiles;
    to->bytes_read += d->bytes_read;
    to->bytes_written += d->bytes_written;
    to->evictions += d->evictions;
    to->corrupt += d->corrupt;
    to->compile_ms += d->compile_ms;
}

void gj__cache_count(struct gj__cache *c, const struct gj__cache_counters *delta) {
    add(&c->total, delta);
    add(&c->unflushed, delta);
}

static void parse(const char *text, struct gj__cache_counters *out) {
    memset(out, 0, sizeof *out);
    struct {
        const char *name;
        uint64_t *value;
    } fields[] = {{"hits", &out->hits},           {"misses", &out->misses},
                  {"compiles", &out->compiles},   {"bytes_read", &out->bytes_read},
                  {"bytes_written", &out->bytes_written}, {"evictions", &out->evictions},
                  {"corrupt", &out->corrupt}};
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        char name[32];
        double value = 0;
        if (sscanf(line, "%31s %lf", name, &value) != 2 || !(value >= 0)) {
            continue;
        }
        if (strcmp(name, "compile_ms") == 0) {
            out->compile_ms = value;
        }
        for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
            if (strcmp(name, fields[i].name) == 0) {
                *fields[i].value = (uint64_t)value;
            }
        }
    }
}

static int format(char *buf, size_t size, const struct gj__cache_counters *c) {
    return snprintf(buf, size,
                    "hits %llu\nmisses %llu\ncompiles %llu\ncompile_ms %.3f\nbytes_read %llu\n"
                    "bytes_written %llu\nevictions %llu\ncorrupt %llu\n",
                    (unsigned long long)c->hits, (unsigned long long)c->misses, (unsigned long long)c->compiles,
                    c->compile_ms, (unsigned long long)c->bytes_read, (unsigned long long)c->bytes_written,
                    (unsigned long long)c->evictions, (unsigned long long)c->corrupt);
}

static void read_locked(int fd, struct gj__cache_counters *out) {
    char text[2048];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    parse(text, out);
}

static int open_stats(const char *root, int flags) {
    char path[4200];
    snprintf(path, sizeof path, "%s/stats", root);
    return open(path, flags | O_NOFOLLOW | O_CLOEXEC, 0600);
}

static int is_zero(const struct gj__cache_counters *c) {
    static const struct gj__cache_counters zero;
    return memcmp(c, &zero, sizeof zero) == 0;
}

void gj__cache_stats_flush(struct gj__cache *c) {
    if (!c->root || is_zero(&c->unflushed)) {
        return;
    }
    int fd = open_stats(c->root, O_RDWR | O_CREAT);
    if (fd < 0) {
        return; /* statistics are advisory: an unwritable file loses them */
    }
    if (flock(fd, LOCK_EX) == 0) {
        struct gj__cache_counters sum;
        read_locked(fd, &sum);
        add(&sum, &c->unflushed);
        char text[2048];
        int n = format(text, sizeof text, &sum);
        if (ftruncate(fd, 0) == 0 && pwrite(fd, text, (size_t)n, 0) == n) {
            memset(&c->unflushed, 0, sizeof c->unflushed);
        }
    }
    close(fd); /* releases the lock */
}

int gj__cache_stats_read(const char *root, struct gj__cache_counters *out) {
    memset(out, 0, sizeof *out);
    int fd = open_stats(root, O_RDONLY);
    if (fd < 0) {
        return errno == ENOENT ? 0 : errno;
    }
    if (flock(fd, LOCK_SH) == 0) {
        read_locked(fd, out);
    }
    close(fd);
    return 0;
}

static void export(const struct gj__cache_counters *c, gj_cache_stats *out) {
    out->hits = c->hits;
    out->misses = c->misses;
    out->compiles = c->compiles;
    out->compile_ms = c->compile_ms;
    out->bytes_read = c->bytes_read;
    out->bytes_written = c->bytes_written;
    out->evictions = c->evictions;
    out->corrupt = c->corrupt;
}

static int count_entry(void *user, const char *path, const char *name, const struct stat *st) {
    (void)path;
    gj_cache_stats *out = user;
    gj__cache_file_kind kind = gj__cache_classify(name, NULL, NULL);
    if (S_ISREG(st->st_mode) && (kind == GJ__FILE_ENTRY || kind == GJ__FILE_SOURCE)) {
        out->entries += kind == GJ__FILE_ENTRY;
        out->disk_bytes += (uint64_t)st->st_size;
    }
    return 0;
}

gj_status gj_context_cache_stats(gj_context *ctx, gj_cache_stats_scope scope, gj_cache_stats *out) {
    if (!ctx || !out || (scope != GJ_CACHE_STATS_CONTEXT && scope != GJ_CACHE_STATS_DIRECTORY)) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "gj_context_cache_stats: ctx and out must not be NULL");
    }
    memset(out, 0, sizeof *out);
    struct gj__cache *c = gj__cache_ready(ctx);
    if (!c) {
        return gj__fail(ctx, GJ_ERROR_OUT_OF_MEMORY, "gj_context_cache_stats: out of memory");
    }
    out->max_bytes = c->max_bytes;
    if (scope == GJ_CACHE_STATS_CONTEXT) {
        export(&c->total, out);
    } else if (c->root) {
        gj__cache_stats_flush(c);
        struct gj__cache_counters sum;
        gj__cache_stats_read(c->root, &sum);
        add(&sum, &c->unflushed); /* whatever could not be flushed still counts */
        export(&sum, out);
    }
    if (c->root) {
        gj__cache_walk(c->root, NULL, count_entry, out);
    }
    return GJ_OK;
}
