/* The entry file format (docs/cache.md, "Entry files"): encoding, decoding, and the
 * checks that make any damaged file a miss rather than a wrong binary. All integers
 * are little-endian. */
#include "store/store_impl.h"

#include "base/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

static uint64_t get_le(const uint8_t *p, int n_bytes) {
    uint64_t value = 0;
    for (int i = n_bytes - 1; i >= 0; i--) {
        value = value << 8 | p[i];
    }
    return value;
}

/* Writes the header length at offset 12 and the checksum at the end. */
static void seal_header(uint8_t *bytes, size_t size) {
    for (int i = 0; i < 4; i++) {
        bytes[12 + i] = (uint8_t)(size >> (8 * i));
    }
    uint64_t sum = XXH3_64bits(bytes, size - 8);
    for (int i = 0; i < 8; i++) {
        bytes[size - 8 + i] = (uint8_t)(sum >> (8 * i));
    }
}

uint8_t *gj__entry_encode_header(const gj__entry *e, size_t *size) {
    gj__strbuf sb;
    gj__sb_init(&sb);
    gj__sb_append_n(&sb, GJ__ENTRY_MAGIC, 8);
    gj__sb_append_le(&sb, GJ__ENTRY_FORMAT_VERSION, 4);
    gj__sb_append_le(&sb, 0, 4); /* header length, sealed below */
    gj__sb_append_n(&sb, (const char *)e->key.bytes, 16);
    gj__sb_append_n(&sb, (const char *)e->group.bytes, 16);
    gj__sb_append_le(&sb, e->payload_size, 8);
    gj__sb_append_le(&sb, e->payload_checksum, 8);
    gj__sb_append_le(&sb, e->meta_size, 4);
    gj__sb_append_le(&sb, 0, 4); /* reserved */
    gj__sb_append_n(&sb, e->meta, e->meta_size);
    gj__sb_append_le(&sb, 0, 8); /* header checksum, sealed below */
    size_t n = sb.len;
    uint8_t *bytes = (uint8_t *)gj__sb_take(&sb);
    if (bytes) {
        seal_header(bytes, n);
        *size = n;
    }
    return bytes;
}

static gj__entry_check decode_fields(const uint8_t *buf, size_t header_size, gj__entry *out) {
    memcpy(out->key.bytes, buf + 16, 16);
    memcpy(out->group.bytes, buf + 32, 16);
    out->payload_size = get_le(buf + 48, 8);
    out->payload_checksum = get_le(buf + 56, 8);
    const uint64_t meta_size = get_le(buf + 64, 4);
    if (out->payload_size > GJ__ENTRY_MAX_PAYLOAD || get_le(buf + 68, 4) != 0) {
        return GJ__ENTRY_MALFORMED;
    }
    /* The metadata fills the header exactly: no slack, no overrun. */
    if (meta_size != header_size - GJ__ENTRY_FIXED_SIZE - 8) {
        return GJ__ENTRY_MALFORMED;
    }
    out->meta = malloc(meta_size ? (size_t)meta_size : 1);
    if (!out->meta) {
        return GJ__ENTRY_OOM;
    }
    memcpy(out->meta, buf + GJ__ENTRY_FIXED_SIZE, (size_t)meta_size);
    out->meta_size = (size_t)meta_size;
    return GJ__ENTRY_OK;
}

gj__entry_check gj__entry_decode_header(const uint8_t *buf, size_t size, gj__entry *out, size_t *header_size) {
    memset(out, 0, sizeof *out);
    if (size < 16) {
        return GJ__ENTRY_TRUNCATED;
    }
    if (memcmp(buf, GJ__ENTRY_MAGIC, 8) != 0) {
        return GJ__ENTRY_BAD_MAGIC;
    }
    if (get_le(buf + 8, 4) != GJ__ENTRY_FORMAT_VERSION) {
        return GJ__ENTRY_BAD_VERSION;
    }
    uint64_t h = get_le(buf + 12, 4);
    if (h < GJ__ENTRY_MIN_HEADER || h > GJ__ENTRY_MAX_HEADER) {
        return GJ__ENTRY_BAD_HEADER_LENGTH;
    }
    if (h > size) {
        return GJ__ENTRY_TRUNCATED;
    }
    if (XXH3_64bits(buf, (size_t)h - 8) != get_le(buf + h - 8, 8)) {
        return GJ__ENTRY_BAD_HEADER_CHECKSUM;
    }
    gj__entry_check check = decode_fields(buf, (size_t)h, out);
    if (check != GJ__ENTRY_OK) {
        gj__entry_free(out);
        return check;
    }
    *header_size = (size_t)h;
    return GJ__ENTRY_OK;
}

#ifdef GJ_TEST_HOOKS
_Atomic(gj__store_pread_fn) gj__store_test_pread = pread;
#define GJ__PREAD(fd, buf, n, offset) atomic_load(&gj__store_test_pread)(fd, buf, n, offset)
#else
#define GJ__PREAD pread
#endif

/* Reads exactly n bytes at offset; short reads of a regular file mean it shrank. */
static gj__entry_check read_at(int fd, void *buf, size_t n, uint64_t offset) {
    size_t done = 0;
    while (done < n) {
        ssize_t got = GJ__PREAD(fd, (char *)buf + done, n - done, (off_t)(offset + done));
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            return GJ__ENTRY_IO;
        }
        if (got == 0) {
            return GJ__ENTRY_TRUNCATED;
        }
        done += (size_t)got;
    }
    return GJ__ENTRY_OK;
}

/* The header: its first 16 bytes say how long it is. */
static gj__entry_check read_header(int fd, uint64_t file_size, gj__entry *out, size_t *header_size) {
    uint8_t start[16];
    if (file_size < sizeof start) {
        return GJ__ENTRY_TRUNCATED;
    }
    gj__entry_check check = read_at(fd, start, sizeof start, 0);
    if (check != GJ__ENTRY_OK) {
        return check;
    }
    check = gj__entry_decode_header(start, sizeof start, out, header_size);
    if (check != GJ__ENTRY_TRUNCATED) {
        return check == GJ__ENTRY_OK ? GJ__ENTRY_MALFORMED : check; /* 16 bytes are never a whole header */
    }
    uint64_t h = get_le(start + 12, 4);
    if (h > file_size) {
        return GJ__ENTRY_TRUNCATED;
    }
    uint8_t *buf = malloc((size_t)h);
    if (!buf) {
        return GJ__ENTRY_OOM;
    }
    check = read_at(fd, buf, (size_t)h, 0);
    if (check == GJ__ENTRY_OK) {
        check = gj__entry_decode_header(buf, (size_t)h, out, header_size);
    }
    free(buf);
    return check;
}

static gj__entry_check read_payload(int fd, size_t header_size, gj__entry *out) {
    out->payload = malloc(out->payload_size ? (size_t)out->payload_size : 1);
    if (!out->payload) {
        return GJ__ENTRY_OOM;
    }
    gj__entry_check check = read_at(fd, out->payload, (size_t)out->payload_size, header_size);
    if (check != GJ__ENTRY_OK) {
        return check;
    }
    if (XXH3_64bits(out->payload, (size_t)out->payload_size) != out->payload_checksum) {
        return GJ__ENTRY_BAD_PAYLOAD_CHECKSUM;
    }
    return GJ__ENTRY_OK;
}

gj__entry_check gj__entry_read(int fd, uint64_t file_size, gj__entry *out, int with_payload) {
    memset(out, 0, sizeof *out); /* gj__entry_free() below must see no stale pointers */
    size_t header_size = 0;
    gj__entry_check check = read_header(fd, file_size, out, &header_size);
    if (check == GJ__ENTRY_OK && file_size != header_size + out->payload_size) {
        check = file_size < header_size + out->payload_size ? GJ__ENTRY_TRUNCATED : GJ__ENTRY_BAD_SIZE;
    }
    if (check == GJ__ENTRY_OK && with_payload) {
        check = read_payload(fd, header_size, out);
    }
    if (check != GJ__ENTRY_OK) {
        gj__entry_free(out);
    }
    return check;
}

void gj__entry_free(gj__entry *e) {
    free(e->meta);
    free(e->payload);
    memset(e, 0, sizeof *e);
}

gj__entry_check gj__entry_open(const char *path, int *fd, struct stat *st) {
    memset(st, 0, sizeof *st);
    /* O_NONBLOCK: a FIFO planted where an entry should be must not hang the open (it is
     * refused below as not a regular file); it changes nothing for regular files. */
    *fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (*fd < 0) {
        return errno == ELOOP ? GJ__ENTRY_NOT_REGULAR : GJ__ENTRY_IO;
    }
    gj__entry_check check = GJ__ENTRY_OK;
    if (fstat(*fd, st) != 0) {
        memset(st, 0, sizeof *st); /* nothing is known about the file: never act on it */
        check = GJ__ENTRY_IO;
    } else if (!S_ISREG(st->st_mode)) {
        check = GJ__ENTRY_NOT_REGULAR;
    }
    if (check != GJ__ENTRY_OK) {
        const int err = errno; /* what the caller reports, not close()'s */
        close(*fd);
        *fd = -1;
        errno = err;
    }
    return check;
}

gj__entry_check gj__entry_read_path(const char *path, gj__entry *out, int with_payload, struct stat *st) {
    memset(out, 0, sizeof *out);
    int fd;
    gj__entry_check check = gj__entry_open(path, &fd, st);
    if (check == GJ__ENTRY_OK) {
        check = gj__entry_read(fd, (uint64_t)st->st_size, out, with_payload);
        close(fd);
    }
    return check;
}

int gj__entry_check_is_damage(gj__entry_check check) {
    return check != GJ__ENTRY_OK && check != GJ__ENTRY_IO && check != GJ__ENTRY_OOM;
}

const char *gj__entry_check_message(gj__entry_check check) {
    switch (check) {
    case GJ__ENTRY_OK:
        return "valid";
    case GJ__ENTRY_TRUNCATED:
        return "truncated";
    case GJ__ENTRY_BAD_MAGIC:
        return "not a gridjit cache entry (bad magic)";
    case GJ__ENTRY_BAD_VERSION:
        return "unsupported entry format version";
    case GJ__ENTRY_BAD_HEADER_LENGTH:
        return "impossible header length";
    case GJ__ENTRY_BAD_HEADER_CHECKSUM:
        return "header checksum mismatch";
    case GJ__ENTRY_MALFORMED:
        return "malformed header";
    case GJ__ENTRY_BAD_SIZE:
        return "file longer than header and payload";
    case GJ__ENTRY_BAD_PAYLOAD_CHECKSUM:
        return "payload checksum mismatch";
    case GJ__ENTRY_NOT_REGULAR:
        return "not a regular file";
    case GJ__ENTRY_IO:
        return "read error (an I/O failure, not proof of damage)";
    case GJ__ENTRY_OOM:
        return "out of memory";
    }
    return "unknown";
}
