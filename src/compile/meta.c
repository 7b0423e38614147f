/* The metadata of a cached program (see meta.h). Little-endian integers; strings are a
 * 4-byte length and the bytes. Layout: magic "GJPM", version, kind, NVRTC major and
 * minor, kernel count, then target, gridjit version, NVRTC build, and per kernel the
 * name expression and the lowered name, then the log; nothing after. */
#include "compile/meta.h"

#include "base/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GJ__META_MAGIC "GJPM"
#define GJ__META_VERSION 1u
#define GJ__META_MAX_KERNELS 4096u

const char *gj__binary_kind_name(gj_binary_kind kind) {
    return kind == GJ_BINARY_CUBIN ? "cubin" : kind == GJ_BINARY_PTX ? "ptx" : "none";
}

static void put_u32(gj__strbuf *sb, uint32_t value) {
    gj__sb_append_le(sb, value, 4);
}

static void put_string(gj__strbuf *sb, const char *text) {
    const size_t n = strlen(text);
    put_u32(sb, (uint32_t)n);
    gj__sb_append_n(sb, text, n);
}

uint8_t *gj__meta_encode(const gj_program *prog, const gj__nvrtc_identity *nvrtc, size_t *size) {
    for (size_t i = 0; i < prog->n_kernels; i++) {
        if (!prog->kernel_names[i] || !prog->lowered_names[i]) {
            return NULL;
        }
    }
    gj__strbuf sb;
    gj__sb_init(&sb);
    gj__sb_append_n(&sb, GJ__META_MAGIC, 4);
    put_u32(&sb, GJ__META_VERSION);
    put_u32(&sb, (uint32_t)prog->kind);
    put_u32(&sb, (uint32_t)nvrtc->major);
    put_u32(&sb, (uint32_t)nvrtc->minor);
    put_u32(&sb, (uint32_t)prog->n_kernels);
    put_string(&sb, prog->arch);
    put_string(&sb, GJ_VERSION_STRING);
    put_string(&sb, nvrtc->build);
    for (size_t i = 0; i < prog->n_kernels; i++) {
        put_string(&sb, prog->kernel_names[i]);
        put_string(&sb, prog->lowered_names[i]);
    }
    put_string(&sb, prog->log ? prog->log : "");
    *size = sb.len;
    return (uint8_t *)gj__sb_take(&sb);
}

/* A bounded reader: every read checks what is left. */
typedef struct reader {
    const uint8_t *p;
    size_t pos, end;
    int failed;
} reader;

static uint32_t get_u32(reader *r) {
    if (r->failed || r->end - r->pos < 4) {
        r->failed = 1;
        return 0;
    }
    const uint8_t *b = r->p + r->pos;
    r->pos += 4;
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static char *get_string(reader *r) {
    const uint32_t n = get_u32(r);
    if (r->failed || n > r->end - r->pos || memchr(r->p + r->pos, '\0', n)) { /* NUL: not a string we wrote */
        r->failed = 1;
        return NULL;
    }
    char *text = malloc((size_t)n + 1);
    if (!text) {
        r->failed = 1;
        return NULL;
    }
    memcpy(text, r->p + r->pos, n);
    text[n] = '\0';
    r->pos += n;
    return text;
}

void gj__meta_free(gj__program_meta *meta) {
    for (size_t i = 0; i < meta->n_kernels; i++) {
        free(meta->names ? meta->names[i] : NULL);
        free(meta->lowered ? meta->lowered[i] : NULL);
    }
    free(meta->names);
    free(meta->lowered);
    free(meta->target);
    free(meta->gridjit_version);
    free(meta->log);
    memset(meta, 0, sizeof *meta);
}

static void read_kernels(reader *r, gj__program_meta *out, uint32_t n) {
    /* Each kernel takes at least 8 bytes: a count that cannot fit is malformed, which also
     * bounds the allocation by the metadata's size. */
    if (r->failed || n > GJ__META_MAX_KERNELS || n > (r->end - r->pos) / 8) {
        r->failed = 1;
        return;
    }
    out->names = calloc(n ? n : 1, sizeof *out->names);
    out->lowered = calloc(n ? n : 1, sizeof *out->lowered);
    if (!out->names || !out->lowered) {
        r->failed = 1;
        return;
    }
    out->n_kernels = n;
    for (uint32_t i = 0; i < n && !r->failed; i++) {
        out->names[i] = get_string(r);
        out->lowered[i] = get_string(r);
    }
}

int gj__meta_decode(const void *bytes, size_t size, gj__program_meta *out) {
    memset(out, 0, sizeof *out);
    reader r = {.p = bytes, .pos = 4, .end = size};
    if (size < 4 || memcmp(bytes, GJ__META_MAGIC, 4) != 0 || get_u32(&r) != GJ__META_VERSION) {
        return -1;
    }
    const uint32_t kind = get_u32(&r);
    out->nvrtc.major = (int)get_u32(&r);
    out->nvrtc.minor = (int)get_u32(&r);
    const uint32_t n_kernels = get_u32(&r);
    out->target = get_string(&r);
    out->gridjit_version = get_string(&r);
    char *build = get_string(&r);
    if (build && strlen(build) < sizeof out->nvrtc.build) {
        memcpy(out->nvrtc.build, build, strlen(build) + 1);
    } else {
        r.failed = 1;
    }
    free(build);
    read_kernels(&r, out, n_kernels);
    out->log = get_string(&r);
    if (kind != GJ_BINARY_CUBIN && kind != GJ_BINARY_PTX) {
        r.failed = 1;
    }
    out->kind = (gj_binary_kind)kind;
    if (r.failed || r.pos != r.end) {
        gj__meta_free(out);
        return -1;
    }
    return 0;
}
