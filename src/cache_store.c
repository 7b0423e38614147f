/* Publication of entries (docs/cache.md, "Publication"): a reader sees either no file
 * or a complete one, never a partial write, whatever other processes do at the time. */
#include "cache_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static ssize_t default_write(int fd, const void *buf, size_t n) {
    return write(fd, buf, n);
}

ssize_t (*gj__cache_test_write)(int fd, const void *buf, size_t n) = default_write;

static int write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t done = gj__cache_test_write(fd, p, n);
        if (done < 0 && errno == EINTR) {
            continue;
        }
        if (done < 0) {
            return errno ? errno : EIO;
        }
        if (done == 0) {
            return ENOSPC; /* a regular file that accepts nothing is full */
        }
        p += done;
        n -= (size_t)done;
    }
    return 0;
}

/* Creates a temporary file in dir that no one else can have opened: O_EXCL makes the
 * name ours, O_NOFOLLOW refuses a planted symlink. Names start with GJ__TEMP_PREFIX so
 * that stale ones (a process killed mid-write) are recognised and swept. */
static int create_temp(const char *dir, const char *name, char *path, size_t path_size, int *fd_out) {
    static atomic_uint counter;
    for (int attempt = 0; attempt < 16; attempt++) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        unsigned n = atomic_fetch_add(&counter, 1);
        int len = snprintf(path, path_size, "%s/" GJ__TEMP_PREFIX "%s.%ld.%u.%ld", dir, name, (long)getpid(), n,
                           (long)now.tv_nsec);
        if (len < 0 || (size_t)len >= path_size) {
            return ENAMETOOLONG;
        }
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            *fd_out = fd;
            return 0;
        }
        if (errno != EEXIST) {
            return errno;
        }
    }
    return EEXIST;
}

static int write_parts(int fd, const struct iovec *parts, int n_parts) {
    for (int i = 0; i < n_parts; i++) {
        int err = write_all(fd, parts[i].iov_base, parts[i].iov_len);
        if (err) {
            return err;
        }
    }
    /* The data must be on disk before the name points at it, or a crash could leave a
     * complete-looking name over an incomplete file. */
    return fsync(fd) == 0 ? 0 : errno;
}

int gj__cache_publish(const char *dir, const char *name, const struct iovec *parts, int n_parts) {
    char temp[4096];
    int fd = -1;
    int err = create_temp(dir, name, temp, sizeof temp, &fd);
    if (err) {
        return err;
    }
    err = write_parts(fd, parts, n_parts);
    if (close(fd) != 0 && !err) {
        err = errno; /* NFS reports write errors at close */
    }
    char final[4096];
    if (!err && snprintf(final, sizeof final, "%s/%s", dir, name) >= (int)sizeof final) {
        err = ENAMETOOLONG;
    }
    /* rename() replaces atomically: of racing writers of one key the last one wins,
     * and every one of them wrote the same complete bytes. */
    if (!err && rename(temp, final) != 0) {
        err = errno;
    }
    if (err) {
        unlink(temp);
    }
    return err;
}

int gj__cache_remove_if_same(const char *path, uint64_t dev, uint64_t ino) {
    struct stat st;
    if (lstat(path, &st) != 0) {
        return errno;
    }
    /* Another process may have replaced the bad file with a good one since we read it;
     * that one must stay. (The window between lstat and unlink remains: at worst a good
     * entry is removed, which costs a recompile, never a wrong binary.) */
    if ((uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino) {
        return ESTALE;
    }
    return unlink(path) == 0 ? 0 : errno;
}

void gj__cache_touch(const char *path) {
    /* mtime, set explicitly, is the recency stamp: atime is unreliable (noatime,
     * relatime, and any reader such as a backup updates it). UTIME_OMIT leaves atime. */
    struct timespec times[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_NOW}};
    (void)utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW);
}

/* ------------------------------------------------------- the last NVRTC seen */

#define GJ__NVRTC_MEMO "nvrtc-identity"

static void format_identity(const gj__nvrtc_identity *id, char *out, size_t size) {
    snprintf(out, size, "%d.%d %s\n", id->major, id->minor, id->build);
}

int gj__cache_recall_nvrtc(const char *root, gj__nvrtc_identity *out) {
    char path[4200], text[256];
    snprintf(path, sizeof path, "%s/" GJ__NVRTC_MEMO, root);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    text[n > 0 ? n : 0] = '\0';
    memset(out, 0, sizeof *out);
    char build[sizeof out->build];
    if (sscanf(text, "%d.%d %95s", &out->major, &out->minor, build) != 3) {
        return -1;
    }
    snprintf(out->build, sizeof out->build, "%s", build);
    return 0;
}

void gj__cache_remember_nvrtc(const char *root, const gj__nvrtc_identity *id) {
    gj__nvrtc_identity known;
    char want[256], have[256];
    format_identity(id, want, sizeof want);
    if (gj__cache_recall_nvrtc(root, &known) == 0) {
        format_identity(&known, have, sizeof have);
        if (strcmp(have, want) == 0) {
            return;
        }
    }
    struct iovec part = {.iov_base = want, .iov_len = strlen(want)};
    (void)gj__cache_publish(root, GJ__NVRTC_MEMO, &part, 1); /* advisory: a failure loses nothing */
}
