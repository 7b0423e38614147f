/* One process at a time per key (docs/cache.md, "One compile per key"): a process that
 * misses claims the key with flock() on a lock file beside where the entry will be
 * published; others wait for it (bounded) and then find the entry. The kernel drops the
 * lock when its holder dies, so a crashed compiler blocks no one. Where locks cannot be
 * taken (read-only or lock-less file systems) claims fail and callers work as before. */
#include "store/store_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

/* The lock file's path, its shard created; NULL when the store has no writable directory. */
static char *lock_path(gj__store *s, const gj__diag *d, const gj__store_key *key, const gj__store_key *group) {
    char group_hex[33], key_hex[33];
    gj__store_key_hex(group, group_hex);
    gj__store_key_hex(key, key_hex);
    pthread_mutex_lock(&s->lock);
    const struct gj__store_state *st = gj__store_ready(s, d);
    char *path = NULL;
    if (st->enabled && st->root && !st->write_failed) {
        int err = 0;
        char *shard = gj__store_make_shard(st->root, group_hex, &err);
        if (shard && !err) {
            path = gj__store_entry_path(st->root, group_hex, key_hex, GJ__LOCK_EXT);
        }
        free(shard);
    }
    pthread_mutex_unlock(&s->lock);
    return path;
}

static void pause_ms(unsigned ms) {
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

/* Polls a non-blocking flock: a blocking one could not be bounded without signals. */
static int lock_within(int fd, unsigned wait_ms) {
    unsigned waited = 0, step = 2;
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            return 1;
        }
        if (errno != EWOULDBLOCK && errno != EINTR) {
            return 0; /* ENOLCK, EOPNOTSUPP, ...: this file system does not lock */
        }
        if (waited >= wait_ms) {
            return 0;
        }
        pause_ms(step);
        waited += step;
        step = step < 50 ? step * 2 : 50;
    }
}

int gj__store_claim_key(gj__store *s, const gj__diag *d, const gj__store_key *key, const gj__store_key *group,
                        unsigned wait_ms, gj__store_claim *out) {
    out->fd = -1;
    char *path = lock_path(s, d, key, group);
    int fd = path ? open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600) : -1;
    free(path);
    if (fd < 0) {
        return 0;
    }
    if (!lock_within(fd, wait_ms)) {
        close(fd);
        return 0;
    }
    out->fd = fd;
    return 1;
}

void gj__store_unclaim(gj__store_claim *claim) {
    if (claim->fd >= 0) {
        flock(claim->fd, LOCK_UN);
        close(claim->fd); /* the file stays: unlinking it would let a newcomer lock a new
                             inode while the old one is still held */
        claim->fd = -1;
    }
}
