/* A growable NUL-terminated string. An allocation failure is sticky: later appends
 * are ignored and gj__sb_take() returns NULL, so callers check once at the end. */
#ifndef GJ_BASE_STRBUF_H
#define GJ_BASE_STRBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct gj__strbuf {
    char *data;
    size_t len;
    size_t cap;
    int failed;
} gj__strbuf;

void gj__sb_init(gj__strbuf *sb);
void gj__sb_free(gj__strbuf *sb);
void gj__sb_append(gj__strbuf *sb, const char *text);
void gj__sb_append_n(gj__strbuf *sb, const char *text, size_t n);
/* The low n_bytes (at most 8) of value, least significant first: the byte order of every
 * integer in gridjit's binary formats (cache key records, entries, program metadata). */
void gj__sb_append_le(gj__strbuf *sb, uint64_t value, size_t n_bytes);
void gj__sb_printf(gj__strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands the buffer to the caller (free with free()); NULL if any append failed. */
char *gj__sb_take(gj__strbuf *sb);

#endif
