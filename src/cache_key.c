/* The cache key: XXH3-128 over a canonical record of everything that determines the
 * binary (docs/cache.md, "Key record"), and the identity of the NVRTC library. */
#include "cache_impl.h"
#include "nvrtc_loader.h"
#include "strbuf.h"
#include "templates.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

/* One field of the record: a 4-byte ASCII tag, the length as 8 bytes little-endian,
 * the bytes. Length prefixes make the concatenation unambiguous. */
static void put_field(gj__strbuf *sb, const char tag[4], const void *data, uint64_t size) {
    char head[12];
    memcpy(head, tag, 4);
    for (int i = 0; i < 8; i++) {
        head[4 + i] = (char)(uint8_t)(size >> (8 * i));
    }
    gj__sb_append_n(sb, head, sizeof head);
    gj__sb_append_n(sb, data, (size_t)size);
}

static void put_string(gj__strbuf *sb, const char tag[4], const char *text) {
    put_field(sb, tag, text, strlen(text));
}

static void put_u32(gj__strbuf *sb, const char tag[4], uint32_t value) {
    char bytes[4] = {(char)(uint8_t)value, (char)(uint8_t)(value >> 8), (char)(uint8_t)(value >> 16),
                     (char)(uint8_t)(value >> 24)};
    put_field(sb, tag, bytes, sizeof bytes);
}

static const char *kind_name(gj_binary_kind kind) {
    return kind == GJ_BINARY_CUBIN ? "cubin" : kind == GJ_BINARY_PTX ? "ptx" : "none";
}

/* Every embedded template, by name and bytes, in table order. */
static void put_templates(gj__strbuf *sb) {
    put_u32(sb, "NTPL", gj__n_templates);
    for (unsigned i = 0; gj__templates[i].name; i++) {
        put_string(sb, "TPLN", gj__templates[i].name);
        put_field(sb, "TPLB", gj__templates[i].text, gj__templates[i].size);
    }
}

/* The fields shared by both keys: everything but the compiler. */
static void put_configuration(gj__strbuf *sb, const gj__cache_request *req) {
    put_u32(sb, "GJKS", GJ__CACHE_KEY_SCHEMA);
    put_string(sb, "GJVR", GJ_VERSION_STRING);
    put_string(sb, "TRGT", req->target);
    put_string(sb, "KIND", kind_name(req->kind));
    put_u32(sb, "NOPT", (uint32_t)req->n_options);
    for (size_t i = 0; i < req->n_options; i++) {
        put_string(sb, "OPTN", req->options[i]);
    }
    put_templates(sb);
    put_u32(sb, "NNAM", (uint32_t)req->n_names);
    for (size_t i = 0; i < req->n_names; i++) {
        put_string(sb, "NAME", req->names[i]);
    }
    put_field(sb, "SRC ", req->source, req->source_size);
}

static void put_nvrtc(gj__strbuf *sb, const gj__nvrtc_identity *nvrtc) {
    char version[32];
    snprintf(version, sizeof version, "%d.%d", nvrtc->major, nvrtc->minor);
    put_string(sb, "NVRV", version);
    put_string(sb, "NVRB", nvrtc->build);
}

static void digest(const void *data, size_t size, uint8_t out[16]) {
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits(data, size));
    memcpy(out, canonical.digest, 16);
}

void gj__cache_hex(const uint8_t bytes[16], char hex[33]) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        hex[2 * i] = digits[bytes[i] >> 4];
        hex[2 * i + 1] = digits[bytes[i] & 15];
    }
    hex[32] = '\0';
}

char *gj__cache_key_record(const gj__cache_request *req, size_t *config_size, size_t *size) {
    gj__strbuf sb;
    gj__sb_init(&sb);
    put_configuration(&sb, req);
    *config_size = sb.len;
    if (req->nvrtc) {
        put_nvrtc(&sb, req->nvrtc);
    }
    *size = sb.len;
    return gj__sb_take(&sb);
}

/* The full key's record is the configuration record followed by the NVRTC fields:
 * one buffer gives both keys. */
int gj__cache_key_compute(const gj__cache_request *req, gj__cache_key *out) {
    memset(out, 0, sizeof *out);
    size_t config_size = 0, size = 0;
    char *record = gj__cache_key_record(req, &config_size, &size);
    if (!record) {
        return -1;
    }
    digest(record, config_size, out->config_key);
    gj__cache_hex(out->config_key, out->config_hex);
    if (req->nvrtc) {
        digest(record, size, out->key);
        gj__cache_hex(out->key, out->hex);
    }
    free(record);
    return 0;
}

/* ------------------------------------------------------ library identity */

struct find_object {
    uintptr_t addr;
    char build_id[80]; /* hex; "" when the object has no build-id note */
    int found;
};

static int in_object(const struct dl_phdr_info *info, uintptr_t addr) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && addr >= start && addr < start + ph->p_memsz) {
            return 1;
        }
    }
    return 0;
}

static size_t align_up(size_t n, size_t a) {
    return (n + a - 1) / a * a;
}

/* Walks one PT_NOTE segment for NT_GNU_BUILD_ID; writes its hex into out. */
static void find_build_id(const uint8_t *notes, size_t size, size_t align, char *out, size_t out_size) {
    size_t pos = 0;
    while (pos + sizeof(ElfW(Nhdr)) <= size) {
        const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)(notes + pos);
        size_t name_at = pos + sizeof *nh;
        size_t desc_at = name_at + align_up(nh->n_namesz, align);
        size_t next = desc_at + align_up(nh->n_descsz, align);
        if (next > size || next <= pos) {
            return;
        }
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(notes + name_at, "GNU", 4) == 0 &&
            nh->n_descsz > 0 && 2 * (size_t)nh->n_descsz < out_size) {
            for (size_t i = 0; i < nh->n_descsz; i++) {
                snprintf(out + 2 * i, 3, "%02x", notes[desc_at + i]);
            }
            return;
        }
        pos = next;
    }
}

static int find_object_cb(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct find_object *find = data;
    if (!in_object(info, find->addr)) {
        return 0;
    }
    find->found = 1;
    for (int i = 0; i < info->dlpi_phnum && !find->build_id[0]; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE) {
            size_t align = ph->p_align == 8 ? 8 : 4;
            find_build_id((const uint8_t *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz, align, find->build_id,
                          sizeof find->build_id);
        }
    }
    return 1;
}

/* Fallback for a library built without a build id: its size and first MiB. Not a path
 * or a timestamp, so a copy of the same file at another place has the same identity. */
static int file_identity(const void *addr, char *out, size_t out_size) {
    Dl_info info;
    if (!dladdr(addr, &info) || !info.dli_fname) {
        return -1;
    }
    int fd = open(info.dli_fname, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    size_t want = (size_t)1 << 20;
    uint8_t *buffer = malloc(want);
    ssize_t n = buffer ? pread(fd, buffer, want, 0) : -1;
    close(fd);
    if (n < 0) {
        free(buffer);
        return -1;
    }
    /* Seeding with the size keeps two files with the same first MiB apart. */
    uint64_t sum = XXH3_64bits_withSeed(buffer, (size_t)n, (uint64_t)st.st_size);
    free(buffer);
    snprintf(out, out_size, "xxh3:%016llx-%llu", (unsigned long long)sum, (unsigned long long)st.st_size);
    return 0;
}

int gj__cache_library_identity(const void *addr, char *out, size_t out_size) {
    struct find_object find = {.addr = (uintptr_t)addr};
    dl_iterate_phdr(find_object_cb, &find);
    if (!find.found) {
        return -1;
    }
    if (find.build_id[0]) {
        snprintf(out, out_size, "gnu-build-id:%s", find.build_id);
        return 0;
    }
    return file_identity(addr, out, out_size);
}

gj_status gj__cache_nvrtc_identity(const struct gj__nvrtc *nvrtc, gj__nvrtc_identity *out) {
    memset(out, 0, sizeof *out);
    if (!nvrtc || !nvrtc->Version) {
        return GJ_ERROR_NO_NVRTC;
    }
    out->major = nvrtc->major;
    out->minor = nvrtc->minor;
    const void *addr = (const void *)(uintptr_t)nvrtc->Version;
    if (gj__cache_library_identity(addr, out->build, sizeof out->build) != 0) {
        /* Cannot happen for a dlopen()ed library; keep the key well defined anyway. */
        snprintf(out->build, sizeof out->build, "unknown");
    }
    return GJ_OK;
}
