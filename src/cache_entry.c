/* The entry file format (docs/cache.md, "Entry file"): encoding, decoding, and the
 * checks that make any damaged file a miss rather than a wrong binary. All integers
 * are little-endian. */
#include "cache_impl.h"
#include "strbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

static void put_le(gj__strbuf *sb, uint64_t value, int n_bytes) {
    char bytes[8];
    for (int i = 0; i < n_bytes; i++) {
        bytes[i] = (char)(uint8_t)(value >> (8 * i));
    }
    gj__sb_append_n(sb, bytes, (size_t)n_bytes);
}

static uint64_t get_le(const uint8_t *p, int n_bytes) {
    uint64_t value = 0;
    for (int i = n_bytes - 1; i >= 0; i--) {
        value = value << 8 | p[i];
    }
    return value;
}

static void put_string(gj__strbuf *sb, const char *text) {
    size_t n = strlen(text);
    put_le(sb, n, 4);
    gj__sb_append_n(sb, text, n);
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
    put_le(&sb, GJ__ENTRY_FORMAT_VERSION, 4);
    put_le(&sb, 0, 4); /* header length, sealed below */
    gj__sb_append_n(&sb, (const char *)e->key, 16);
    gj__sb_append_n(&sb, (const char *)e->config_key, 16);
    put_le(&sb, (uint64_t)e->kind, 4);
    put_le(&sb, e->nvrtc_major, 4);
    put_le(&sb, e->nvrtc_minor, 4);
    put_le(&sb, e->n_kernels, 4);
    put_le(&sb, e->payload_size, 8);
    put_le(&sb, e->payload_checksum, 8);
    put_string(&sb, e->target);
    put_string(&sb, e->gridjit_version);
    put_string(&sb, e->nvrtc_build);
    for (size_t i = 0; i < e->n_kernels; i++) {
        put_string(&sb, e->names[i]);
        put_string(&sb, e->lowered[i]);
    }
    put_le(&sb, 0, 8); /* header checksum, sealed below */
    size_t n = sb.len;
    uint8_t *bytes = (uint8_t *)gj__sb_take(&sb);
    if (bytes) {
        seal_header(bytes, n);
        *size = n;
    }
    return bytes;
}

/* A bounded reader over the variable part of a header. */
typedef struct reader {
    const uint8_t *p;
    size_t pos, end;
    int failed; /* 1: out of bounds; 2: out of memory */
} reader;

static char *read_string(reader *r) {
    if (r->failed || r->end - r->pos < 4) {
        r->failed = r->failed ? r->failed : 1;
        return NULL;
    }
    uint64_t n = get_le(r->p + r->pos, 4);
    r->pos += 4;
    if (n > r->end - r->pos) {
        r->failed = 1;
        return NULL;
    }
    char *text = malloc((size_t)n + 1);
    if (!text) {
        r->failed = 2;
        return NULL;
    }
    memcpy(text, r->p + r->pos, (size_t)n);
    text[n] = '\0';
    r->pos += (size_t)n;
    return text;
}

static gj__entry_check read_kernel_names(reader *r, gj__entry *out) {
    /* Each name takes at least 4 bytes: a count that cannot fit is malformed, which also
     * keeps the allocation bounded by the header size. */
    if (out->n_kernels > (r->end - r->pos) / 8) {
        return GJ__ENTRY_MALFORMED;
    }
    out->names = calloc(out->n_kernels ? out->n_kernels : 1, sizeof *out->names);
    out->lowered = calloc(out->n_kernels ? out->n_kernels : 1, sizeof *out->lowered);
    if (!out->names || !out->lowered) {
        return GJ__ENTRY_OOM;
    }
    for (size_t i = 0; i < out->n_kernels; i++) {
        out->names[i] = read_string(r);
        out->lowered[i] = read_string(r);
    }
    return GJ__ENTRY_OK;
}

static gj__entry_check decode_fields(const uint8_t *buf, size_t header_size, gj__entry *out) {
    memcpy(out->key, buf + 16, 16);
    memcpy(out->config_key, buf + 32, 16);
    uint64_t kind = get_le(buf + 48, 4);
    if (kind != GJ_BINARY_CUBIN && kind != GJ_BINARY_PTX) {
        return GJ__ENTRY_MALFORMED;
    }
    out->kind = (gj_binary_kind)kind;
    out->nvrtc_major = (uint32_t)get_le(buf + 52, 4);
    out->nvrtc_minor = (uint32_t)get_le(buf + 56, 4);
    out->n_kernels = (size_t)get_le(buf + 60, 4);
    out->payload_size = get_le(buf + 64, 8);
    out->payload_checksum = get_le(buf + 72, 8);
    if (out->payload_size > GJ__ENTRY_MAX_PAYLOAD) {
        return GJ__ENTRY_MALFORMED;
    }
    reader r = {.p = buf, .pos = GJ__ENTRY_FIXED_SIZE, .end = header_size - 8};
    out->target = read_string(&r);
    out->gridjit_version = read_string(&r);
    out->nvrtc_build = read_string(&r);
    gj__entry_check check = r.failed ? GJ__ENTRY_OK : read_kernel_names(&r, out);
    if (check != GJ__ENTRY_OK) {
        return check;
    }
    if (r.failed) {
        return r.failed == 2 ? GJ__ENTRY_OOM : GJ__ENTRY_MALFORMED;
    }
    return r.pos == r.end ? GJ__ENTRY_OK : GJ__ENTRY_MALFORMED; /* no slack inside the header */
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

/* Reads exactly n bytes at offset; short reads of a regular file mean it shrank. */
static gj__entry_check read_at(int fd, void *buf, size_t n, uint64_t offset) {
    size_t done = 0;
    while (done < n) {
        ssize_t got = pread(fd, (char *)buf + done, n - done, (off_t)(offset + done));
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

static void free_names(char **names, size_t n) {
    for (size_t i = 0; names && i < n; i++) {
        free(names[i]);
    }
    free(names);
}

void gj__entry_free(gj__entry *e) {
    free(e->target);
    free(e->gridjit_version);
    free(e->nvrtc_build);
    free_names(e->names, e->n_kernels);
    free_names(e->lowered, e->n_kernels);
    free(e->payload);
    memset(e, 0, sizeof *e);
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
        return "read error";
    case GJ__ENTRY_OOM:
        return "out of memory";
    }
    return "unknown";
}
