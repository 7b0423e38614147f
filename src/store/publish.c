/* Publication of entries (docs/cache.md, "Publication"): a reader sees either no file
 * or a complete one, never a partial write, whatever other processes do at the time. */
#include "store/store_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef GJ_TEST_HOOKS
_Atomic(gj__store_write_fn) gj__store_test_write = write;
#define GJ__WRITE(fd, buf, n) atomic_load(&gj__store_test_write)(fd, buf, n)
#else
#define GJ__WRITE write
#endif

static int write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t done = GJ__WRITE(fd, p, n);
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

int gj__store_publish(const char *dir, const char *name, const struct iovec *parts, int n_parts) {
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

int gj__store_remove_if_same(const char *path, uint64_t dev, uint64_t ino) {
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

void gj__store_touch(const char *path) {
    /* mtime, set explicitly, is the recency stamp: atime is unreliable (noatime,
     * relatime, and any reader such as a backup updates it). UTIME_OMIT leaves atime. */
    struct timespec times[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_NOW}};
    (void)utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW);
}
