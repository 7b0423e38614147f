/* NVRTC logs: finding the errors, and annotating each diagnostic with the numbered
 * source lines it names. */
#include "compile/log.h"

#include "base/strbuf.h"

#include <ctype.h>
#include <string.h>

/* One diagnostic header, "FILE(LINE): KIND: text", e.g.
 * gridjit.cu(12): error: identifier "x" is undefined
 * gridjit.cu(3): warning #177-D: variable "q" was declared but never referenced */
typedef struct diagnostic {
    int ours;           /* FILE is the compiled file */
    unsigned long line; /* LINE */
    int is_error;       /* KIND mentions "error" ("error", "catastrophic error", ...) */
} diagnostic;

static int parse_diagnostic(const char *text, size_t len, const char *file_name, diagnostic *out) {
    const char *open = memchr(text, '(', len);
    if (!open || open == text || isspace((unsigned char)text[0])) { /* indented: NVRTC's echo of the source */
        return 0;
    }
    const char *p = open + 1;
    const char *end = text + len;
    unsigned long line = 0;
    while (p < end && isdigit((unsigned char)*p)) {
        line = line * 10 + (unsigned long)(*p++ - '0');
    }
    if (p == open + 1 || end - p < 3 || memcmp(p, "): ", 3) != 0) {
        return 0;
    }
    const char *kind = p + 3;
    const char *colon = memchr(kind, ':', (size_t)(end - kind));
    if (!colon) {
        return 0;
    }
    size_t name_len = (size_t)(open - text);
    out->ours = file_name && name_len == strlen(file_name) && memcmp(text, file_name, name_len) == 0;
    out->line = line;
    out->is_error = 0;
    for (const char *k = kind; k + 5 <= colon; k++) {
        out->is_error |= memcmp(k, "error", 5) == 0;
    }
    return 1;
}

/* Errors that NVRTC reports without a file position (bad options). */
static int is_global_error(const char *text, size_t len) {
    static const char *const prefixes[] = {"Command-line error", "nvrtc: error"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t n = strlen(prefixes[i]);
        if (len >= n && memcmp(text, prefixes[i], n) == 0) {
            return 1;
        }
    }
    return 0;
}

static int is_error_line(const char *text, size_t len) {
    diagnostic d;
    return is_global_error(text, len) || (parse_diagnostic(text, len, NULL, &d) && d.is_error);
}

/* Length of the line at text, without its '\n'. */
static size_t line_length(const char *text) {
    const char *nl = strchr(text, '\n');
    return nl ? (size_t)(nl - text) : strlen(text);
}

size_t gj__log_errors(const char *log, const char **first, size_t *first_len) {
    size_t count = 0;
    *first = NULL;
    *first_len = 0;
    for (const char *p = log; *p;) {
        size_t len = line_length(p);
        if (is_error_line(p, len) && count++ == 0) {
            *first = p;
            *first_len = len;
        }
        p += len + (p[len] == '\n');
    }
    if (!*first) { /* no line we recognise as an error: the first line of the log */
        *first = log;
        *first_len = line_length(log);
    }
    return count;
}

int gj__log_rejects_options(const char *log) {
    return is_global_error(log, line_length(log));
}

/* ------------------------------------------------------------ annotation */

/* Appends source lines first..last (1-based, clipped to the source), marking mark. */
static void append_source_lines(gj__strbuf *sb, const char *source, unsigned long mark) {
    unsigned long first = mark > GJ__LOG_CONTEXT_LINES ? mark - GJ__LOG_CONTEXT_LINES : 1;
    unsigned long last = mark + GJ__LOG_CONTEXT_LINES;
    unsigned long number = 1;
    for (const char *p = source; *p && number <= last; number++) {
        size_t len = line_length(p);
        if (number >= first) {
            size_t shown = len > 0 && p[len - 1] == '\r' ? len - 1 : len;
            gj__sb_printf(sb, "%s%6lu | %.*s\n", number == mark ? "  >" : "   ", number, (int)shown, p);
        }
        p += len + (p[len] == '\n');
    }
}

/* Lines in text; a last line without '\n' counts, the empty rest after one does not. */
static unsigned long count_lines(const char *text) {
    unsigned long n = 0;
    for (const char *p = text; *p; n++) {
        size_t len = line_length(p);
        p += len + (p[len] == '\n');
    }
    return n;
}

/* Context for a diagnostic, closing its block (NVRTC's own echo of the line and the
 * caret). Only for lines that exist in our translation unit. */
static void append_context(gj__strbuf *sb, const char *source, unsigned long line) {
    if (line == 0 || line > count_lines(source)) {
        return;
    }
    if (sb->len && sb->data[sb->len - 1] != '\n') {
        gj__sb_append(sb, "\n");
    }
    gj__sb_append(sb, "  source:\n");
    append_source_lines(sb, source, line);
}

char *gj__annotate_log(const char *log, const char *source, const char *file_name) {
    log = log ? log : "";
    source = source ? source : "";
    gj__strbuf sb;
    gj__sb_init(&sb);
    unsigned long pending = 0; /* line of the diagnostic whose block is open, 0: none */
    for (const char *p = log; *p;) {
        size_t len = line_length(p);
        diagnostic d;
        int header = parse_diagnostic(p, len, file_name, &d);
        if (pending && (header || len == 0)) { /* the previous block ends here */
            append_context(&sb, source, pending);
            pending = 0;
        }
        if (header && d.ours) {
            pending = d.line;
        }
        gj__sb_append_n(&sb, p, len + (p[len] == '\n'));
        p += len + (p[len] == '\n');
    }
    if (pending) {
        append_context(&sb, source, pending);
    }
    return gj__sb_take(&sb);
}

