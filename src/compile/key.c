/* The cache key: XXH3-128 over a canonical record of everything that determines the
 * binary (docs/cache.md, "Key record"). */
#include "compile/key.h"

#include "base/strbuf.h"
#include "compile/meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* One field of the record: a 4-byte ASCII tag, the length as 8 bytes little-endian,
 * the bytes. Length prefixes make the concatenation unambiguous. */
static void put_head(gj__strbuf *sb, const char tag[4], uint64_t size) {
    gj__sb_append_n(sb, tag, 4);
    gj__sb_append_le(sb, size, 8);
}

static void put_string(gj__strbuf *sb, const char tag[4], const char *text) {
    const size_t n = strlen(text);
    put_head(sb, tag, n);
    gj__sb_append_n(sb, text, n);
}

static void put_u32(gj__strbuf *sb, const char tag[4], uint32_t value) {
    put_head(sb, tag, 4);
    gj__sb_append_le(sb, value, 4);
}

/* The fields shared by both keys: everything but the compiler. */
static void put_configuration(gj__strbuf *sb, const gj__key_request *req) {
    const gj__unit *u = req->unit;
    put_u32(sb, "GJKS", GJ__KEY_SCHEMA);
    put_string(sb, "GJVR", GJ_VERSION_STRING);
    put_string(sb, "TRGT", req->arch->name);
    put_string(sb, "KIND", gj__binary_kind_name(req->arch->kind));
    put_u32(sb, "NOPT", (uint32_t)req->n_options);
    for (size_t i = 0; i < req->n_options; i++) {
        put_string(sb, "OPTN", req->options[i]);
    }
    put_u32(sb, "NHDR", (uint32_t)u->n_headers);
    for (size_t i = 0; i < u->n_headers; i++) {
        put_string(sb, "HDRN", u->headers[i].name);
        put_string(sb, "HDRB", u->headers[i].text);
    }
    put_u32(sb, "NNAM", (uint32_t)u->n_names);
    for (size_t i = 0; i < u->n_names; i++) {
        put_string(sb, "NAME", u->names[i]);
    }
    put_string(sb, "FILE", u->file_name);
    put_string(sb, "SRC ", u->source);
}

static void put_nvrtc(gj__strbuf *sb, const gj__nvrtc_identity *nvrtc) {
    char version[32];
    snprintf(version, sizeof version, "%d.%d", nvrtc->major, nvrtc->minor);
    put_string(sb, "NVRV", version);
    put_string(sb, "NVRB", nvrtc->build);
}

static void digest(const void *data, size_t size, gj__store_key *out) {
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits(data, size));
    memcpy(out->bytes, canonical.digest, 16);
}

char *gj__compile_key_record(const gj__key_request *req, size_t *config_size, size_t *size) {
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
int gj__compile_key_make(const gj__key_request *req, gj__compile_key *out) {
    memset(out, 0, sizeof *out);
    size_t config_size = 0, size = 0;
    char *record = gj__compile_key_record(req, &config_size, &size);
    if (!record) {
        return -1;
    }
    digest(record, config_size, &out->config);
    gj__store_key_hex(&out->config, out->config_hex);
    if (req->nvrtc) {
        digest(record, size, &out->key);
        gj__store_key_hex(&out->key, out->hex);
    }
    free(record);
    return 0;
}
