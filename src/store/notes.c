/* Small named notes in the writable directory: facts one process leaves for later ones
 * (gridjit notes which NVRTC last filled the directory). Advisory: a note that cannot be
 * written or read is simply absent. */
#include "store/store_impl.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int note_path(const struct gj__store_state *st, const char *name, char *path, size_t size) {
    return st->enabled && st->root && (size_t)snprintf(path, size, "%s/%s", st->root, name) < size;
}

int gj__store_note_get(gj__store *s, const gj__diag *d, const char *name, char *out, size_t size) {
    char path[4200];
    pthread_mutex_lock(&s->lock);
    const int have = note_path(gj__store_ready(s, d), name, path, sizeof path);
    pthread_mutex_unlock(&s->lock);
    int fd = have && size > 0 ? open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (fd < 0) {
        return -1;
    }
    ssize_t n = read(fd, out, size - 1);
    close(fd);
    out[n > 0 ? n : 0] = '\0';
    return n > 0 ? 0 : -1;
}

void gj__store_note_put(gj__store *s, const gj__diag *d, const char *name, const char *text) {
    char have[512];
    if (gj__store_note_get(s, d, name, have, sizeof have) == 0 && strcmp(have, text) == 0) {
        return; /* already there: no write */
    }
    pthread_mutex_lock(&s->lock);
    const struct gj__store_state *st = gj__store_ready(s, d);
    if (st->enabled && st->root && !st->write_failed) {
        struct iovec part = {.iov_base = (void *)text, .iov_len = strlen(text)};
        (void)gj__store_publish(st->root, name, &part, 1);
    }
    pthread_mutex_unlock(&s->lock);
}
