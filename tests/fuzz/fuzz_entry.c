/* Fuzz target: the disk cache's entry decoder (src/store/entry.c) on the bytes of an
 * entry file, then the program metadata decoder (src/compile/meta.c) on the metadata of
 * every entry it accepts.
 *
 * Input: one mode byte, then the file.
 *   bit 0  seal: write the magic, the format version, the metadata size (header length
 *          - 80) and the header checksum before decoding, so that mutated headers get past
 *          the checksum and the fields behind it are explored
 *   bit 1  with bit 0: also set payload_size to what follows the header and its checksum
 *   bit 2  read the header only (with_payload = 0)
 *   bits 4-7 claim the file to be this many bytes longer than it is (a file that shrank
 *          between fstat and read)
 *
 * Checks: gj__entry_decode_header never reads outside the buffer (ASan), and what it
 * accepts encodes back to the same header bytes; gj__entry_read (through a memfd) accepts
 * exactly header + payload with both checksums right; nothing leaks. */
#include "fuzz_common.h"
#include "fuzz_meta_check.h"

#include "store/store_impl.h"

#include <sys/mman.h>
#include <xxhash.h>

static int fd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fd = memfd_create("gridjit-fuzz-entry", MFD_CLOEXEC);
    if (fd < 0) {
        perror("memfd_create");
        abort();
    }
    return 0;
}

static void put_le(uint8_t *p, uint64_t value, int n) {
    for (int i = 0; i < n; i++) {
        p[i] = (uint8_t)(value >> (8 * i));
    }
}

static uint64_t get_le(const uint8_t *p, int n) {
    uint64_t value = 0;
    for (int i = n - 1; i >= 0; i--) {
        value = value << 8 | p[i];
    }
    return value;
}

static void seal(uint8_t *buf, size_t n, int payload) {
    if (n < GJ__ENTRY_MIN_HEADER) {
        return;
    }
    memcpy(buf, GJ__ENTRY_MAGIC, 8);
    put_le(buf + 8, GJ__ENTRY_FORMAT_VERSION, 4);
    uint64_t h = get_le(buf + 12, 4);
    if (h < GJ__ENTRY_MIN_HEADER || h > n) {
        return;
    }
    put_le(buf + 64, h - GJ__ENTRY_FIXED_SIZE - 8, 4);
    if (payload) {
        put_le(buf + 48, n - h, 8);
        put_le(buf + 56, XXH3_64bits(buf + h, n - h), 8);
    }
    put_le(buf + h - 8, XXH3_64bits(buf, h - 8), 8);
}

static void check_meta(const gj__entry *e) {
    gj__program_meta meta;
    if (gjf_decode_meta(e->meta, e->meta_size, &meta)) {
        gj__meta_free(&meta);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > (1u << 20)) {
        return 0;
    }
    const uint8_t mode = data[0];
    const size_t n = size - 1;
    uint8_t *buf = malloc(n ? n : 1); /* exactly n bytes: ASan sees any overread */
    if (!buf) {
        abort();
    }
    memcpy(buf, data + 1, n);
    if (mode & 1) {
        seal(buf, n, mode & 2);
    }

    /* The header decoder, on the bytes in memory. */
    gj__entry e;
    size_t header_size = 0;
    gj__entry_check check = gj__entry_decode_header(buf, n, &e, &header_size);
    if (check == GJ__ENTRY_OK) {
        GJF_CHECK(header_size >= GJ__ENTRY_MIN_HEADER && header_size <= n && header_size <= GJ__ENTRY_MAX_HEADER,
                  "header_size %zu of %zu", header_size, n);
        GJF_CHECK(e.meta_size == header_size - GJ__ENTRY_MIN_HEADER, "meta_size %zu", e.meta_size);
        size_t encoded_size = 0;
        uint8_t *encoded = gj__entry_encode_header(&e, &encoded_size);
        GJF_CHECK(encoded && encoded_size == header_size && memcmp(encoded, buf, header_size) == 0,
                  "an accepted header does not encode back to its bytes");
        free(encoded);
        check_meta(&e);
        gj__entry_free(&e);
    } else {
        GJF_CHECK(e.meta == NULL && e.payload == NULL, "refused header left memory (%s)", gj__entry_check_message(check));
    }

    /* The file reader, on the same bytes as a file (possibly claimed longer than it is). */
    if (ftruncate(fd, 0) != 0 || (n && pwrite(fd, buf, n, 0) != (ssize_t)n)) {
        perror("memfd");
        abort();
    }
    const uint64_t claimed = (uint64_t)n + (mode >> 4);
    const int with_payload = !(mode & 4);
    check = gj__entry_read(fd, claimed, &e, with_payload);
    if (check == GJ__ENTRY_OK) {
        /* A header-only read trusts the size it is given (fstat's); a full read must notice
         * that the file is shorter than claimed. */
        GJF_CHECK(!with_payload || claimed == n, "accepted a file claimed %llu bytes long that has %zu",
                  (unsigned long long)claimed, n);
        GJF_CHECK(e.meta_size + GJ__ENTRY_MIN_HEADER + e.payload_size == claimed, "sizes do not add up");
        if (with_payload) {
            GJF_CHECK(e.payload != NULL, "no payload");
            GJF_CHECK(XXH3_64bits(e.payload, (size_t)e.payload_size) == e.payload_checksum, "payload checksum");
            GJF_CHECK(memcmp(e.payload, buf + n - e.payload_size, (size_t)e.payload_size) == 0, "payload bytes");
        } else {
            GJF_CHECK(e.payload == NULL, "payload read without being asked");
        }
        check_meta(&e);
        gj__entry_free(&e);
    } else {
        GJF_CHECK(e.meta == NULL && e.payload == NULL, "refused entry left memory (%s)", gj__entry_check_message(check));
        GJF_CHECK(check != GJ__ENTRY_OOM, "out of memory on a %zu-byte file", n);
    }
    free(buf);
    return 0;
}
