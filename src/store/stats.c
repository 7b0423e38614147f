/* Statistics (docs/cache.md, "Statistics"): counters per store (one per context),
 * accumulated across processes in the writable directory's "stats" file (text, one "name value" a line,
 * updated under flock). The file is advisory: a damaged one reads as zeros. */
#include "store/store_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static void add(gj__store_counters *to, const gj__store_counters *d) {
    to->hits += d->hits;
    to->misses += d->misses;
    to->fills += d->fills;
    to->bytes_read += d->bytes_read;
    to->bytes_written += d->bytes_written;
    to->evictions += d->evictions;
    to->corrupt += d->corrupt;
    to->fill_ms += d->fill_ms;
}

void gj__store_count(struct gj__store_state *c, const gj__store_counters *delta) {
    add(&c->total, delta);
    add(&c->unflushed, delta);
}

static void parse(const char *text, gj__store_counters *out) {
    memset(out, 0, sizeof *out);
    struct {
        const char *name;
        uint64_t *value;
    } fields[] = {{"hits", &out->hits},           {"misses", &out->misses},
                  {"fills", &out->fills},   {"bytes_read", &out->bytes_read},
                  {"bytes_written", &out->bytes_written}, {"evictions", &out->evictions},
                  {"corrupt", &out->corrupt}};
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        char name[32];
        double value = 0;
        if (sscanf(line, "%31s %lf", name, &value) != 2 || !(value >= 0)) {
            continue;
        }
        if (strcmp(name, "fill_ms") == 0) {
            out->fill_ms = value;
        }
        for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
            if (strcmp(name, fields[i].name) == 0) {
                *fields[i].value = (uint64_t)value;
            }
        }
    }
}

static int format(char *buf, size_t size, const gj__store_counters *c) {
    return snprintf(buf, size,
                    "hits %llu\nmisses %llu\nfills %llu\nfill_ms %.3f\nbytes_read %llu\n"
                    "bytes_written %llu\nevictions %llu\ncorrupt %llu\n",
                    (unsigned long long)c->hits, (unsigned long long)c->misses, (unsigned long long)c->fills,
                    c->fill_ms, (unsigned long long)c->bytes_read, (unsigned long long)c->bytes_written,
                    (unsigned long long)c->evictions, (unsigned long long)c->corrupt);
}

static void read_locked(int fd, gj__store_counters *out) {
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

static int is_zero(const gj__store_counters *c) {
    static const gj__store_counters zero;
    return memcmp(c, &zero, sizeof zero) == 0;
}

void gj__store_stats_flush(struct gj__store_state *c) {
    if (!c->root || is_zero(&c->unflushed)) {
        return;
    }
    int fd = open_stats(c->root, O_RDWR | O_CREAT);
    if (fd < 0) {
        return; /* statistics are advisory: an unwritable file loses them */
    }
    if (flock(fd, LOCK_EX) == 0) {
        gj__store_counters sum;
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

/* Reads root/stats (shared lock) into *out; zeros when absent. */
static int stats_read(const char *root, gj__store_counters *out) {
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

static int count_entry(void *user, const char *path, const char *name, const struct stat *st) {
    (void)path;
    gj__store_stats *out = user;
    gj__store_file_kind kind = gj__store_classify(name, NULL, NULL);
    if (S_ISREG(st->st_mode) && (kind == GJ__FILE_ENTRY || kind == GJ__FILE_SIDECAR)) {
        out->entries += kind == GJ__FILE_ENTRY;
        out->disk_bytes += (uint64_t)st->st_size;
    }
    return 0;
}

void gj__store_read_stats(gj__store *s, const gj__diag *d, int directory_scope, gj__store_stats *out) {
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&s->lock);
    struct gj__store_state *c = gj__store_ready(s, d);
    out->max_bytes = c->max_bytes;
    if (!directory_scope) {
        out->counters = c->total;
    } else if (c->root) {
        gj__store_stats_flush(c);
        stats_read(c->root, &out->counters);
        add(&out->counters, &c->unflushed); /* whatever could not be flushed still counts */
    }
    if (c->root) {
        gj__store_walk_dir(c->root, NULL, count_entry, out);
    }
    pthread_mutex_unlock(&s->lock);
}

void gj__store_count_miss(gj__store *s) {
    gj__store_counters delta = {.misses = 1};
    pthread_mutex_lock(&s->lock);
    gj__store_count(s->state, &delta);
    pthread_mutex_unlock(&s->lock);
}

void gj__store_count_fill(gj__store *s, double ms) {
    gj__store_counters delta = {.fills = 1, .fill_ms = ms};
    pthread_mutex_lock(&s->lock);
    gj__store_count(s->state, &delta);
    pthread_mutex_unlock(&s->lock);
}
