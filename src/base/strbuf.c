/* Growable string buffer. */
#include "base/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gj__sb_init(gj__strbuf *sb) {
    memset(sb, 0, sizeof *sb);
}

void gj__sb_free(gj__strbuf *sb) {
    free(sb->data);
    gj__sb_init(sb);
}

static int reserve(gj__strbuf *sb, size_t extra) {
    if (sb->failed) {
        return 0;
    }
    if (sb->len + extra + 1 <= sb->cap) {
        return 1;
    }
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1) {
        cap *= 2;
    }
    char *data = realloc(sb->data, cap);
    if (!data) {
        sb->failed = 1;
        return 0;
    }
    sb->data = data;
    sb->cap = cap;
    return 1;
}

void gj__sb_append_n(gj__strbuf *sb, const char *text, size_t n) {
    if (!reserve(sb, n)) {
        return;
    }
    memcpy(sb->data + sb->len, text, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
}

void gj__sb_append_le(gj__strbuf *sb, uint64_t value, size_t n_bytes) {
    char bytes[8];
    n_bytes = n_bytes < sizeof bytes ? n_bytes : sizeof bytes;
    for (size_t i = 0; i < n_bytes; i++) {
        bytes[i] = (char)(uint8_t)(value >> (8 * i));
    }
    gj__sb_append_n(sb, bytes, n_bytes);
}

void gj__sb_append(gj__strbuf *sb, const char *text) {
    gj__sb_append_n(sb, text, strlen(text));
}

void gj__sb_printf(gj__strbuf *sb, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    char small[512];
    int n = vsnprintf(small, sizeof small, fmt, args);
    va_end(args);
    if (n < 0) {
        sb->failed = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        gj__sb_append_n(sb, small, (size_t)n);
        return;
    }
    if (!reserve(sb, (size_t)n)) {
        return;
    }
    va_start(args, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, args);
    va_end(args);
    sb->len += (size_t)n;
}

char *gj__sb_take(gj__strbuf *sb) {
    if (sb->failed) {
        gj__sb_free(sb);
        return NULL;
    }
    if (!sb->data && !reserve(sb, 0)) {
        return NULL;
    }
    if (sb->len == 0) {
        sb->data[0] = '\0';
    }
    char *data = sb->data;
    gj__sb_init(sb);
    return data;
}
