/* The identity of a loaded shared library's file (see library_identity.h). */
#include "loader/library_identity.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>


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

int gj__library_identity(const void *addr, char *out, size_t out_size) {
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

