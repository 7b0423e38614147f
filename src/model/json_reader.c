/* Reading one JSON configuration object key by key (json_reader.h): the machinery every
 * parser of the model layer shares, so that encodings, networks and models word their
 * errors the same way. */
#include "model/json_reader.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ names */

const char *gj__name_of(const gj__name_value *table, size_t n, int value) {
    for (size_t i = 0; i < n; ++i) {
        if (table[i].value == value) {
            return table[i].name;
        }
    }
    return "(invalid)";
}

static int lower_ascii(int c) {
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

bool gj__equals_case_insensitive(const char *a, const char *b) {
    for (; *a && *b; ++a, ++b) {
        if (lower_ascii((unsigned char)*a) != lower_ascii((unsigned char)*b)) {
            return false;
        }
    }
    return *a == *b;
}

/* ------------------------------------------------------------ reader */

void gj__jr_init(gj__json_reader *r, const char *const *key_names, size_t n_keys, const cJSON **items,
                 uint32_t flags, gj__strbuf *ignored, char *err, size_t err_size) {
    r->key_names = key_names;
    r->n_keys = n_keys;
    r->items = items;
    r->err = err;
    r->err_size = err_size;
    r->flags = flags;
    r->ignored = ignored;
    for (size_t k = 0; k < n_keys; ++k) {
        items[k] = NULL;
    }
    if (err && err_size > 0) {
        err[0] = '\0';
    }
}

gj_status gj__jr_fail(gj__json_reader *r, const char *fmt, ...) {
    if (r->err && r->err_size > 0) {
        va_list args;
        va_start(args, fmt);
        vsnprintf(r->err, r->err_size, fmt, args);
        va_end(args);
    }
    return GJ_ERROR_INVALID_CONFIG;
}

/* ------------------------------------------------- describing values */

/* Copies text into out (size >= 8) for a one-line message: control characters
 * become '?', and long text is cut with "...". */
static void sanitize(const char *text, char *out, size_t size) {
    size_t n = 0;
    size_t limit = size - 1;
    size_t len = strlen(text);
    int cut = len > limit;
    if (cut) {
        limit -= 3;
    }
    for (; n < limit && text[n]; ++n) {
        unsigned char c = (unsigned char)text[n];
        out[n] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (cut) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
}

/* The shortest %g form that reads back as the same double. */
static void format_number(double v, char *out, size_t size) {
    for (int digits = 15; digits <= 17; ++digits) {
        snprintf(out, size, "%.*g", digits, v);
        if (strtod(out, NULL) == v) {
            return;
        }
    }
}

void gj__jr_describe(const cJSON *item, char *out, size_t size) {
    if (cJSON_IsString(item)) {
        char text[48];
        sanitize(item->valuestring, text, sizeof text);
        snprintf(out, size, "\"%s\"", text);
    } else if (cJSON_IsNumber(item)) {
        format_number(item->valuedouble, out, size);
    } else if (cJSON_IsTrue(item)) {
        snprintf(out, size, "true");
    } else if (cJSON_IsFalse(item)) {
        snprintf(out, size, "false");
    } else if (cJSON_IsNull(item)) {
        snprintf(out, size, "null");
    } else if (cJSON_IsArray(item)) {
        snprintf(out, size, "an array");
    } else if (cJSON_IsObject(item)) {
        snprintf(out, size, "an object");
    } else {
        snprintf(out, size, "an invalid value");
    }
}

void gj__jr_list_names(const gj__name_value *table, size_t n, char *out, size_t size) {
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && used < size; ++i) {
        const char *sep = i == 0 ? "" : (i + 1 == n ? " or " : ", ");
        int w = snprintf(out + used, size - used, "%s\"%s\"", sep, table[i].name);
        used += w > 0 ? (size_t)w : 0;
    }
}

/* ------------------------------------------------------- typed getters */

gj_status gj__jr_get_enum(gj__json_reader *r, size_t k, const gj__name_value *table, size_t n, int fallback,
                          int *out) {
    const cJSON *item = r->items[k];
    *out = fallback;
    if (!item) {
        return GJ_OK;
    }
    if (cJSON_IsString(item)) {
        for (size_t i = 0; i < n; ++i) {
            if (gj__equals_case_insensitive(item->valuestring, table[i].name)) {
                *out = table[i].value;
                return GJ_OK;
            }
        }
    }
    char allowed[256];
    char got[64];
    gj__jr_list_names(table, n, allowed, sizeof allowed);
    gj__jr_describe(item, got, sizeof got);
    return gj__jr_fail(r, "%s: must be %s (got %s); letter case does not matter", r->key_names[k], allowed, got);
}

/* JSON has only doubles, so 2.5, 1e300, true and "16" are refused. */
gj_status gj__jr_get_uint(gj__json_reader *r, size_t k, uint32_t lo, uint32_t hi, uint32_t fallback, uint32_t *out) {
    const cJSON *item = r->items[k];
    *out = fallback;
    if (!item) {
        return GJ_OK;
    }
    if (cJSON_IsNumber(item)) {
        double v = item->valuedouble;
        if (v == floor(v) && v >= (double)lo && v <= (double)hi) {
            *out = (uint32_t)v;
            return GJ_OK;
        }
    }
    char got[64];
    gj__jr_describe(item, got, sizeof got);
    return gj__jr_fail(r, "%s: must be an integer from %u to %u (got %s)", r->key_names[k], lo, hi, got);
}

gj_status gj__jr_get_bool(gj__json_reader *r, size_t k, bool *out) {
    const cJSON *item = r->items[k];
    *out = false;
    if (!item) {
        return GJ_OK;
    }
    if (cJSON_IsBool(item)) {
        *out = cJSON_IsTrue(item);
        return GJ_OK;
    }
    char got[64];
    gj__jr_describe(item, got, sizeof got);
    return gj__jr_fail(r, "%s: must be true or false (got %s)", r->key_names[k], got);
}

/* ------------------------------------------------------ collecting keys */

static size_t min3(size_t a, size_t b, size_t c) {
    size_t m = a < b ? a : b;
    return m < c ? m : c;
}

/* Case-insensitive edit distance, for "did you mean"; long strings count as far. */
static size_t edit_distance(const char *a, const char *b) {
    enum { MAX = 40 };
    size_t la = strlen(a);
    size_t lb = strlen(b);
    if (la >= MAX || lb >= MAX) {
        return MAX;
    }
    size_t row[MAX + 1];
    for (size_t j = 0; j <= lb; ++j) {
        row[j] = j;
    }
    for (size_t i = 1; i <= la; ++i) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; ++j) {
            size_t up = row[j];
            size_t same = lower_ascii((unsigned char)a[i - 1]) == lower_ascii((unsigned char)b[j - 1]);
            row[j] = min3(row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1));
            diag = up;
        }
    }
    return row[lb];
}

/* The message for an unknown key: a close known key as "did you mean", else the list. */
static void describe_unknown_key(const gj__json_reader *r, const char *name, char *out, size_t size) {
    char shown[48];
    sanitize(name, shown, sizeof shown);
    size_t best = 3; /* suggest only close names */
    const char *suggestion = NULL;
    for (size_t k = 0; k < r->n_keys; ++k) {
        size_t d = edit_distance(name, r->key_names[k]);
        if (d < best) {
            best = d;
            suggestion = r->key_names[k];
        }
    }
    if (suggestion) {
        snprintf(out, size, "unknown key '%s'; did you mean '%s'? (keys are case-sensitive)", shown, suggestion);
        return;
    }
    char known[400];
    size_t used = 0;
    known[0] = '\0';
    for (size_t k = 0; k < r->n_keys && used < sizeof known; ++k) {
        int w = snprintf(known + used, sizeof known - used, "%s%s", k ? ", " : "", r->key_names[k]);
        used += w > 0 ? (size_t)w : 0;
    }
    snprintf(out, size, "unknown key '%s' (known keys: %s)", shown, known);
}

/* An unknown key: refused, or with GJ_CONFIG_IGNORE_UNKNOWN_KEYS one more line of r->ignored. */
static gj_status unknown_key(gj__json_reader *r, const char *name) {
    char message[512];
    describe_unknown_key(r, name, message, sizeof message);
    if (!(r->flags & GJ_CONFIG_IGNORE_UNKNOWN_KEYS)) {
        return gj__jr_fail(r, "%s", message);
    }
    if (r->ignored) {
        if (r->ignored->len) {
            gj__sb_append(r->ignored, "\n");
        }
        gj__sb_append(r->ignored, message);
    }
    return GJ_OK;
}

gj_status gj__jr_collect_keys(gj__json_reader *r, const cJSON *object) {
    for (const cJSON *item = object->child; item; item = item->next) {
        const char *name = item->string ? item->string : "";
        size_t found = r->n_keys;
        for (size_t k = 0; k < r->n_keys; ++k) {
            if (strcmp(name, r->key_names[k]) == 0) {
                found = k;
                break;
            }
        }
        if (found == r->n_keys) {
            gj_status s = unknown_key(r, name);
            if (s != GJ_OK) {
                return s;
            }
            continue;
        }
        if (r->items[found]) {
            return gj__jr_fail(r, "%s: given twice; give each key once", r->key_names[found]);
        }
        r->items[found] = item;
    }
    return GJ_OK;
}

static gj_status not_an_object(gj__json_reader *r, const cJSON *item, const char *what, const char *example) {
    char got[64];
    gj__jr_describe(item, got, sizeof got);
    return gj__jr_fail(r, "the %s must be a JSON object such as %s (got %s)", what, example, got);
}

gj_status gj__jr_read_object(gj__json_reader *r, const cJSON *object, const char *what, const char *example) {
    return cJSON_IsObject(object) ? gj__jr_collect_keys(r, object) : not_an_object(r, object, what, example);
}

/* -------------------------------------------------------- reading JSON */

static gj_status syntax_error(gj__json_reader *r, const char *json, const char *where, const char *example) {
    size_t len = strlen(json);
    size_t offset = where && where >= json && where <= json + len ? (size_t)(where - json) : len;
    unsigned line = 1;
    unsigned column = 1;
    for (size_t i = 0; i < offset; ++i) {
        column = json[i] == '\n' ? 1 : column + 1;
        line += json[i] == '\n';
    }
    if (len == 0) {
        return gj__jr_fail(r, "empty text; expected a JSON object such as %s", example);
    }
    /* cJSON stops at or just after the offending character, hence "near". */
    if (offset >= len) {
        return gj__jr_fail(r, "invalid JSON near line %u, column %u (the end of the text): look for a "
                              "missing '}', a trailing comma or an unclosed string", line, column);
    }
    size_t n = strcspn(json + offset, "\r\n"); /* the rest of that line only */
    if (n == 0) {
        return gj__jr_fail(r, "invalid JSON near line %u, column %u (the end of that line)", line, column);
    }
    char rest[64];
    char near[32];
    snprintf(rest, sizeof rest, "%.*s", (int)(n < sizeof rest - 1 ? n : sizeof rest - 1), json + offset);
    sanitize(rest, near, sizeof near);
    /* JSON strings take double quotes; Python-style 'single' ones are the usual slip. */
    const int single = strchr(rest, '\'') != NULL;
    return gj__jr_fail(r, "invalid JSON near line %u, column %u (at '%s')%s", line, column, near,
                       single ? ": JSON strings take double quotes (\"otype\", not 'otype')" : "");
}

gj_status gj__jr_parse_text(gj__json_reader *r, const char *json, const char *example, cJSON **root) {
    *root = NULL;
    const char *end = NULL;
    cJSON *parsed = cJSON_ParseWithOpts(json, &end, 1);
    if (!parsed) {
        /* cJSON reports where it stopped through end (thread-safe, unlike cJSON_GetErrorPtr). */
        return syntax_error(r, json, end, example);
    }
    if (!cJSON_IsObject(parsed)) {
        gj_status s = not_an_object(r, parsed, "configuration", example);
        cJSON_Delete(parsed);
        return s;
    }
    *root = parsed;
    return GJ_OK;
}
