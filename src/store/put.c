/* Storing an entry (docs/cache.md, "Publication"), then keeping the directory under its
 * byte cap. A store that cannot write warns once and stops trying. */
#include "store/store_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static void put_failed(const gj__diag *d, struct gj__store_state *st, int err) {
    if (!st->write_failed) {
        gj__log(d, GJ_LOG_WARNING, "cannot write to cache directory %s (%s); working uncached", st->root,
                strerror(err));
    }
    st->write_failed = 1; /* one warning; later puts would fail the same way */
}

/* The name in its shard of the entry (or its sidecar, by ext). */
static void file_name(char *out, size_t size, const gj__store_key *key, const gj__store_key *group, const char *ext) {
    char group_hex[33], key_hex[33];
    gj__store_key_hex(group, group_hex);
    gj__store_key_hex(key, key_hex);
    gj__store_entry_name(group_hex, key_hex, ext, out, size);
}

static int publish_entry(const char *shard, const gj__store_key *key, const gj__store_key *group, const void *meta,
                         size_t meta_size, const void *payload, size_t payload_size, uint64_t *bytes) {
    gj__entry e = {.key = *key,
                   .group = *group,
                   .meta = (void *)meta,
                   .meta_size = meta_size,
                   .payload_size = payload_size,
                   .payload_checksum = XXH3_64bits(payload, payload_size)};
    size_t header_size = 0;
    uint8_t *header = gj__entry_encode_header(&e, &header_size);
    if (!header) {
        return ENOMEM;
    }
    struct iovec parts[2] = {{header, header_size}, {(void *)payload, payload_size}};
    char name[GJ__STORE_NAME_MAX];
    file_name(name, sizeof name, key, group, GJ__ENTRY_EXT);
    int err = gj__store_publish(shard, name, parts, 2);
    free(header);
    *bytes = header_size + payload_size;
    return err;
}

static int publish_sidecar(const char *shard, const gj__store_key *key, const gj__store_key *group,
                           const char *text) {
    char name[GJ__STORE_NAME_MAX];
    file_name(name, sizeof name, key, group, GJ__SIDECAR_EXT);
    struct iovec part = {.iov_base = (void *)text, .iov_len = strlen(text)};
    return gj__store_publish(shard, name, &part, 1);
}

static void evict(const gj__diag *d, struct gj__store_state *st) {
    gj__store_evict_result r;
    if (gj__store_apply_cap(st, &r) == 0 && (r.evicted || r.swept)) {
        gj__log(d, GJ_LOG_DEBUG, "cache: evicted %llu entries (%llu bytes), swept %llu temporary files",
                (unsigned long long)r.evicted, (unsigned long long)r.freed, (unsigned long long)r.swept);
    }
}

void gj__store_put(gj__store *s, const gj__diag *d, const gj__store_key *key, const gj__store_key *group,
                   const void *meta, size_t meta_size, const void *payload, size_t payload_size,
                   const char *sidecar) {
    pthread_mutex_lock(&s->lock);
    struct gj__store_state *st = gj__store_ready(s, d);
    char group_hex[33];
    gj__store_key_hex(group, group_hex);
    int err = 0;
    char *shard = st->enabled && st->root && !st->write_failed ? gj__store_make_shard(st->root, group_hex, &err)
                                                               : NULL;
    if (shard) {
        uint64_t bytes = 0;
        if (!err) {
            err = publish_entry(shard, key, group, meta, meta_size, payload, payload_size, &bytes);
        }
        if (!err && st->keep_sidecar && sidecar) {
            err = publish_sidecar(shard, key, group, sidecar);
        }
        if (err) {
            put_failed(d, st, err);
        } else {
            gj__store_counters delta = {.bytes_written = bytes};
            gj__store_count(st, &delta);
            evict(d, st);
        }
        free(shard);
    }
    pthread_mutex_unlock(&s->lock);
}
