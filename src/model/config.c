/* The encoding configuration: tcnn-compatible JSON keys, checked one by one (docs/design.md §1). */
#include "model/config.h"
#include "base/format.h"
#include "base/strbuf.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ names */

typedef struct name_value {
    const char *name;
    int value;
} name_value;

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

static const name_value otype_names[] = {
    {"Grid", GJ__OTYPE_GRID},
    {"HashGrid", GJ__OTYPE_HASH_GRID},
    {"DenseGrid", GJ__OTYPE_DENSE_GRID},
    {"TiledGrid", GJ__OTYPE_TILED_GRID},
};
static const name_value grid_type_names[] = {
    {"Hash", GJ_GRID_HASH},
    {"Dense", GJ_GRID_DENSE},
    {"Tiled", GJ_GRID_TILED},
};
static const name_value interpolation_names[] = {
    {"Nearest", GJ_INTERP_NEAREST},
    {"Linear", GJ_INTERP_LINEAR},
    {"Smoothstep", GJ_INTERP_SMOOTHSTEP},
};
static const name_value hash_names[] = {
    {"Prime", GJ_HASH_PRIME},
    {"CoherentPrime", GJ_HASH_COHERENT_PRIME},
    {"ReversedPrime", GJ_HASH_REVERSED_PRIME},
    {"Rng", GJ_HASH_RNG},
    {"BaseConvert", GJ_HASH_BASE_CONVERT},
};
static const name_value precision_names[] = {
    {"fp16", GJ_PRECISION_FP16},
    {"fp32", GJ_PRECISION_FP32},
};

static const char *name_of(const name_value *table, size_t n, int value) {
    for (size_t i = 0; i < n; ++i) {
        if (table[i].value == value) {
            return table[i].name;
        }
    }
    return "(invalid)";
}

const char *gj__grid_type_name(gj_grid_type type) {
    return name_of(grid_type_names, COUNT_OF(grid_type_names), (int)type);
}
const char *gj__interpolation_name(gj_interpolation interp) {
    return name_of(interpolation_names, COUNT_OF(interpolation_names), (int)interp);
}
const char *gj__hash_name(gj_hash hash) {
    return name_of(hash_names, COUNT_OF(hash_names), (int)hash);
}
const char *gj__precision_name(gj_precision precision) {
    return name_of(precision_names, COUNT_OF(precision_names), (int)precision);
}
const char *gj__otype_name(gj__otype otype) {
    return name_of(otype_names, COUNT_OF(otype_names), (int)otype);
}

/* ASCII-only, so that the result does not depend on the process locale. */
static int lower_ascii(int c) {
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static int equals_case_insensitive(const char *a, const char *b) {
    for (; *a && *b; ++a, ++b) {
        if (lower_ascii((unsigned char)*a) != lower_ascii((unsigned char)*b)) {
            return 0;
        }
    }
    return *a == *b;
}

/* ------------------------------------------------------------ keys */

typedef enum key_id {
    KEY_OTYPE,
    KEY_TYPE,
    KEY_N_LEVELS,
    KEY_N_FEATURES,
    KEY_N_GRID_FEATURES,
    KEY_N_FEATURES_PER_LEVEL,
    KEY_LOG2_HASHMAP_SIZE,
    KEY_BASE_RESOLUTION,
    KEY_PER_LEVEL_SCALE,
    KEY_INTERPOLATION,
    KEY_HASH,
    KEY_STOCHASTIC_INTERPOLATION,
    KEY_FIXED_POINT_POS,
    KEY_N_DIMS_TO_ENCODE,
    KEY_PRECISION,
    KEY_COUNT
} key_id;

static const char *const key_names[KEY_COUNT] = {
    "otype",
    "type",
    "n_levels",
    "n_features",
    "n_grid_features",
    "n_features_per_level",
    "log2_hashmap_size",
    "base_resolution",
    "per_level_scale",
    "interpolation",
    "hash",
    "stochastic_interpolation",
    "fixed_point_pos",
    "n_dims_to_encode",
    "precision",
};

typedef struct parser {
    const cJSON *items[KEY_COUNT]; /* NULL: key absent */
    char *err;
    size_t err_size;
    uint32_t flags;       /* GJ_CONFIG_* */
    gj__strbuf *ignored;  /* the skipped keys' messages, or NULL */
} parser;

__attribute__((format(printf, 2, 3))) static gj_status fail(parser *p, const char *fmt, ...) {
    if (p->err && p->err_size > 0) {
        va_list args;
        va_start(args, fmt);
        vsnprintf(p->err, p->err_size, fmt, args);
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

/* What the user wrote, for "(got ...)". */
static void describe(const cJSON *item, char *out, size_t size) {
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

/* '"A", "B" or "C"' */
static void list_names(const name_value *table, size_t n, char *out, size_t size) {
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && used < size; ++i) {
        const char *sep = i == 0 ? "" : (i + 1 == n ? " or " : ", ");
        int w = snprintf(out + used, size - used, "%s\"%s\"", sep, table[i].name);
        used += w > 0 ? (size_t)w : 0;
    }
}

/* ------------------------------------------------------- typed getters */

static gj_status get_enum(parser *p, key_id key, const name_value *table, size_t n, int fallback, int *out) {
    const cJSON *item = p->items[key];
    *out = fallback;
    if (!item) {
        return GJ_OK;
    }
    if (cJSON_IsString(item)) {
        for (size_t i = 0; i < n; ++i) {
            if (equals_case_insensitive(item->valuestring, table[i].name)) {
                *out = table[i].value;
                return GJ_OK;
            }
        }
    }
    char allowed[160];
    char got[64];
    list_names(table, n, allowed, sizeof allowed);
    describe(item, got, sizeof got);
    return fail(p, "%s: must be %s (got %s); letter case does not matter", key_names[key], allowed, got);
}

/* An integer in [lo, hi]; JSON has only doubles, so 2.5, 1e300, true and "16" are refused. */
static gj_status get_uint(parser *p, key_id key, uint32_t lo, uint32_t hi, uint32_t fallback, uint32_t *out) {
    const cJSON *item = p->items[key];
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
    describe(item, got, sizeof got);
    return fail(p, "%s: must be an integer from %u to %u (got %s)", key_names[key], lo, hi, got);
}

static gj_status get_bool(parser *p, key_id key, bool *out) {
    const cJSON *item = p->items[key];
    *out = false;
    if (!item) {
        return GJ_OK;
    }
    if (cJSON_IsBool(item)) {
        *out = cJSON_IsTrue(item);
        return GJ_OK;
    }
    char got[64];
    describe(item, got, sizeof got);
    return fail(p, "%s: must be true or false (got %s)", key_names[key], got);
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
static void describe_unknown_key(const char *name, char *out, size_t size) {
    char shown[48];
    sanitize(name, shown, sizeof shown);
    size_t best = 3; /* suggest only close names */
    const char *suggestion = NULL;
    for (int k = 0; k < KEY_COUNT; ++k) {
        size_t d = edit_distance(name, key_names[k]);
        if (d < best) {
            best = d;
            suggestion = key_names[k];
        }
    }
    if (suggestion) {
        snprintf(out, size, "unknown key '%s'; did you mean '%s'? (keys are case-sensitive)", shown, suggestion);
        return;
    }
    char known[400];
    size_t used = 0;
    known[0] = '\0';
    for (int k = 0; k < KEY_COUNT; ++k) {
        int w = snprintf(known + used, sizeof known - used, "%s%s", k ? ", " : "", key_names[k]);
        used += w > 0 ? (size_t)w : 0;
    }
    snprintf(out, size, "unknown key '%s' (known keys: %s)", shown, known);
}

/* An unknown key: refused, or with GJ_CONFIG_IGNORE_UNKNOWN_KEYS one more line of p->ignored. */
static gj_status unknown_key(parser *p, const char *name) {
    char message[512];
    describe_unknown_key(name, message, sizeof message);
    if (!(p->flags & GJ_CONFIG_IGNORE_UNKNOWN_KEYS)) {
        return fail(p, "%s", message);
    }
    if (p->ignored) {
        if (p->ignored->len) {
            gj__sb_append(p->ignored, "\n");
        }
        gj__sb_append(p->ignored, message);
    }
    return GJ_OK;
}

static gj_status collect_keys(parser *p, const cJSON *root) {
    for (const cJSON *item = root->child; item; item = item->next) {
        const char *name = item->string ? item->string : "";
        int found = -1;
        for (int k = 0; k < KEY_COUNT; ++k) {
            if (strcmp(name, key_names[k]) == 0) {
                found = k;
                break;
            }
        }
        if (found < 0) {
            gj_status s = unknown_key(p, name);
            if (s != GJ_OK) {
                return s;
            }
            continue;
        }
        if (p->items[found]) {
            return fail(p, "%s: given twice; give each key once", key_names[found]);
        }
        p->items[found] = item;
    }
    return GJ_OK;
}

/* -------------------------------------------------------- reading JSON */

static gj_status syntax_error(parser *p, const char *json, const char *where) {
    size_t len = strlen(json);
    size_t offset = where && where >= json && where <= json + len ? (size_t)(where - json) : len;
    unsigned line = 1;
    unsigned column = 1;
    for (size_t i = 0; i < offset; ++i) {
        column = json[i] == '\n' ? 1 : column + 1;
        line += json[i] == '\n';
    }
    if (len == 0) {
        return fail(p, "empty text; expected a JSON object such as {\"otype\": \"HashGrid\"}");
    }
    /* cJSON stops at or just after the offending character, hence "near". */
    if (offset >= len) {
        return fail(p, "invalid JSON near line %u, column %u (the end of the text): look for a "
                       "missing '}', a trailing comma or an unclosed string", line, column);
    }
    size_t n = strcspn(json + offset, "\r\n"); /* the rest of that line only */
    if (n == 0) {
        return fail(p, "invalid JSON near line %u, column %u (the end of that line)", line, column);
    }
    char rest[64];
    char near[32];
    snprintf(rest, sizeof rest, "%.*s", (int)(n < sizeof rest - 1 ? n : sizeof rest - 1), json + offset);
    sanitize(rest, near, sizeof near);
    /* JSON strings take double quotes; Python-style 'single' ones are the usual slip. */
    const int single = strchr(rest, '\'') != NULL;
    return fail(p, "invalid JSON near line %u, column %u (at '%s')%s", line, column, near,
                single ? ": JSON strings take double quotes (\"otype\", not 'otype')" : "");
}

/* ------------------------------------------------------------ the keys */

static gj_status parse_types(parser *p, gj__config *c) {
    int v;
    gj_status s = get_enum(p, KEY_OTYPE, otype_names, COUNT_OF(otype_names), GJ__OTYPE_GRID, &v);
    if (s) {
        return s;
    }
    c->otype = (gj__otype)v;
    /* The otype only sets the default type, as in the reference. */
    int default_type = c->otype == GJ__OTYPE_TILED_GRID   ? GJ_GRID_TILED
                       : c->otype == GJ__OTYPE_DENSE_GRID ? GJ_GRID_DENSE
                                                          : GJ_GRID_HASH;
    s = get_enum(p, KEY_TYPE, grid_type_names, COUNT_OF(grid_type_names), default_type, &v);
    c->type = (gj_grid_type)v;
    return s;
}

static gj_status parse_features_per_level(parser *p, gj__config *c) {
    uint32_t f;
    const cJSON *item = p->items[KEY_N_FEATURES_PER_LEVEL];
    gj_status s = get_uint(p, KEY_N_FEATURES_PER_LEVEL, 0, UINT32_MAX, 2, &f);
    if (s == GJ_OK && (f == 1 || f == 2 || f == 4 || f == 8)) {
        c->n_features_per_level = f;
        return GJ_OK;
    }
    char got[64];
    describe(item, got, sizeof got);
    return fail(p, "n_features_per_level: must be 1, 2, 4 or 8 (got %s)", got);
}

/* n_levels, or n_features / n_grid_features = n_levels * F (not both). */
static gj_status parse_levels(parser *p, gj__config *c) {
    const uint32_t f = c->n_features_per_level;
    key_id features = p->items[KEY_N_FEATURES] ? KEY_N_FEATURES : KEY_N_GRID_FEATURES;
    if (p->items[KEY_N_FEATURES] && p->items[KEY_N_GRID_FEATURES]) {
        return fail(p, "n_features: may not be given together with n_grid_features (they mean the same); give one");
    }
    if (!p->items[features]) {
        return get_uint(p, KEY_N_LEVELS, 1, GJ_MAX_LEVELS, 16, &c->n_levels);
    }
    if (p->items[KEY_N_LEVELS]) {
        return fail(p,
                    "n_levels: may not be given together with %s (%s = n_levels * n_features_per_level); "
                    "give one of them",
                    key_names[features], key_names[features]);
    }
    const cJSON *item = p->items[features];
    if (cJSON_IsNumber(item)) {
        double v = item->valuedouble;
        if (v == floor(v) && v >= f && v <= (double)f * GJ_MAX_LEVELS && fmod(v, f) == 0) {
            c->n_levels = (uint32_t)v / f;
            return GJ_OK;
        }
    }
    char got[64];
    describe(item, got, sizeof got);
    return fail(p, "%s: must be a multiple of n_features_per_level (%u) from %u to %u, i.e. 1 to %u levels (got %s)",
                key_names[features], f, f, f * GJ_MAX_LEVELS, GJ_MAX_LEVELS, got);
}

static gj_status parse_per_level_scale(parser *p, gj__config *c) {
    const cJSON *item = p->items[KEY_PER_LEVEL_SCALE];
    if (!item) {
        if (c->type != GJ_GRID_DENSE) {
            c->per_level_scale = 2.0f;
        } else if (c->n_levels == 1) {
            /* The reference divides by n_levels - 1 = 0 here (NaN); one level has no
             * second scale, so any value gives the same grid. */
            c->per_level_scale = 1.0f;
        } else {
            /* Reach resolution 256 at the last level, computed in float as the reference. */
            c->per_level_scale = expf(logf(256.0f / (float)c->base_resolution) / (float)(c->n_levels - 1));
        }
        return GJ_OK;
    }
    /* Range-checked in double first: converting a double beyond FLT_MAX to float is undefined. */
    if (cJSON_IsNumber(item) && item->valuedouble > 0.0 && item->valuedouble <= FLT_MAX) {
        float v = (float)item->valuedouble;
        if (v > 0.0f) { /* not rounded to 0 */
            c->per_level_scale = v;
            return GJ_OK;
        }
    }
    char got[64];
    describe(item, got, sizeof got);
    return fail(p, "per_level_scale: must be a number greater than 0 that fits a 32-bit float, usually 1.2 to 2 "
                   "(got %s)", got);
}

/* The largest D of this configuration: only a grid that hashes with a prime or the Rng hash
 * (7 constants, 64 bits of state) is limited; Dense and Tiled grids never hash. */
static uint32_t max_dims(const gj__config *c) {
    return c->type == GJ_GRID_HASH && c->hash != GJ_HASH_BASE_CONVERT ? GJ__MAX_DIMS_PRIME : GJ__MAX_DIMS_BASE_CONVERT;
}

/* "1 to 7 for a Hash grid with hash "X" (...)", or "1 to 32": the limit of this configuration. */
static void dims_limit(const gj__config *c, char *out, size_t size) {
    if (max_dims(c) == GJ__MAX_DIMS_PRIME) {
        snprintf(out, size, "1 to %u for a Hash grid with hash \"%s\" (up to %u with \"hash\": \"BaseConvert\", or "
                            "with \"type\": \"Dense\" or \"Tiled\")",
                 GJ__MAX_DIMS_PRIME, gj__hash_name(c->hash), GJ__MAX_DIMS_BASE_CONVERT);
    } else {
        snprintf(out, size, "1 to %u", GJ__MAX_DIMS_BASE_CONVERT);
    }
}

static gj_status parse_dims(parser *p, gj__config *c, uint32_t n_dims_arg) {
    const uint32_t max = max_dims(c);
    const cJSON *item = p->items[KEY_N_DIMS_TO_ENCODE];
    char limit[200];
    dims_limit(c, limit, sizeof limit);
    uint32_t from_key = 3;
    if (item) {
        const double v = cJSON_IsNumber(item) ? item->valuedouble : 0.0;
        if (!cJSON_IsNumber(item) || v != floor(v) || v < 1.0 || v > (double)max) {
            char got[64];
            describe(item, got, sizeof got);
            return fail(p, "n_dims_to_encode: must be an integer from %s (got %s)", limit, got);
        }
        from_key = (uint32_t)v;
    }
    if (item && n_dims_arg != 0 && from_key != n_dims_arg) {
        return fail(p, "n_dims_to_encode: the configuration says %u but the caller passed n_dims = %u; "
                       "remove the key or make them agree", from_key, n_dims_arg);
    }
    c->n_dims = n_dims_arg ? n_dims_arg : from_key;
    if (c->n_dims <= max) {
        return GJ_OK;
    }
    return fail(p, "dimensions: must be from %s (got n_dims = %u)", limit, c->n_dims);
}

static gj_status parse_options(parser *p, gj__config *c) {
    int v;
    gj_status s = get_enum(p, KEY_INTERPOLATION, interpolation_names, COUNT_OF(interpolation_names),
                           GJ_INTERP_LINEAR, &v);
    c->interpolation = (gj_interpolation)v;
    if (s == GJ_OK) {
        s = get_enum(p, KEY_HASH, hash_names, COUNT_OF(hash_names), GJ_HASH_COHERENT_PRIME, &v);
        c->hash = (gj_hash)v;
    }
    if (s == GJ_OK) {
        s = get_bool(p, KEY_STOCHASTIC_INTERPOLATION, &c->stochastic_interpolation);
    }
    if (s == GJ_OK) {
        s = get_bool(p, KEY_FIXED_POINT_POS, &c->fixed_point_pos);
    }
    if (s == GJ_OK) {
        s = get_enum(p, KEY_PRECISION, precision_names, COUNT_OF(precision_names), GJ_PRECISION_FP16, &v);
        c->precision = (gj_precision)v;
    }
    return s;
}

/* Keys are read in dependency order: type before per_level_scale, F before n_features,
 * hash before the dimension limit. */
static gj_status parse_object(parser *p, uint32_t n_dims_arg, gj__config *c) {
    gj_status s = parse_types(p, c);
    if (s == GJ_OK) {
        s = parse_features_per_level(p, c);
    }
    if (s == GJ_OK) {
        s = parse_levels(p, c);
    }
    if (s == GJ_OK) {
        s = get_uint(p, KEY_LOG2_HASHMAP_SIZE, 1, 31, 19, &c->log2_hashmap_size);
    }
    if (s == GJ_OK) {
        s = get_uint(p, KEY_BASE_RESOLUTION, 1, UINT32_MAX, 16, &c->base_resolution);
    }
    if (s == GJ_OK) {
        s = parse_per_level_scale(p, c);
    }
    if (s == GJ_OK) {
        s = parse_options(p, c);
    }
    if (s == GJ_OK) {
        s = parse_dims(p, c, n_dims_arg);
    }
    return s;
}

gj_status gj__config_parse(const char *json, uint32_t n_dims_arg, gj__config *out, char *err, size_t err_size) {
    return gj__config_parse_ex(json, n_dims_arg, 0, NULL, out, err, err_size);
}

gj_status gj__config_parse_ex(const char *json, uint32_t n_dims_arg, uint32_t flags, gj__strbuf *ignored,
                              gj__config *out, char *err, size_t err_size) {
    parser p;
    memset(&p, 0, sizeof p);
    p.err = err;
    p.err_size = err_size;
    p.flags = flags;
    p.ignored = ignored;
    if (err && err_size > 0) {
        err[0] = '\0';
    }
    if (!out) {
        return fail(&p, "no place to store the result (out is NULL)");
    }
    /* Zeroed, padding included, so that equal configurations compare equal with memcmp. */
    memset(out, 0, sizeof *out);
    if (!json) {
        return fail(&p, "no JSON text (NULL); pass \"{}\" for the defaults");
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &end, 1);
    if (!root) {
        /* cJSON reports where it stopped through end (thread-safe, unlike cJSON_GetErrorPtr). */
        return syntax_error(&p, json, end);
    }
    gj_status s;
    if (!cJSON_IsObject(root)) {
        char got[64];
        describe(root, got, sizeof got);
        s = fail(&p, "the configuration must be a JSON object such as {\"otype\": \"HashGrid\"} (got %s)", got);
    } else {
        s = collect_keys(&p, root);
        if (s == GJ_OK) {
            s = parse_object(&p, n_dims_arg, out);
        }
    }
    cJSON_Delete(root);
    if (s != GJ_OK) {
        memset(out, 0, sizeof *out);
    }
    return s;
}

/* ------------------------------------------------------------- writing */

char *gj__config_to_json(const gj__config *c) {
    if (!c) {
        return NULL;
    }
    gj__strbuf sb;
    gj__sb_init(&sb);
    gj__sb_printf(&sb, "{\"otype\": \"%s\", \"type\": \"%s\", ", gj__otype_name(c->otype),
                  gj__grid_type_name(c->type));
    gj__sb_printf(&sb, "\"n_levels\": %u, \"n_features_per_level\": %u, ", c->n_levels, c->n_features_per_level);
    gj__sb_printf(&sb, "\"log2_hashmap_size\": %u, \"base_resolution\": %u, ", c->log2_hashmap_size,
                  c->base_resolution);
    char scale[48];
    gj__format_float(scale, sizeof scale, c->per_level_scale); /* '.' in any locale */
    gj__sb_printf(&sb, "\"per_level_scale\": %s, ", scale);
    gj__sb_printf(&sb, "\"interpolation\": \"%s\", \"hash\": \"%s\", ", gj__interpolation_name(c->interpolation),
                  gj__hash_name(c->hash));
    gj__sb_printf(&sb, "\"stochastic_interpolation\": %s, \"fixed_point_pos\": %s, ",
                  c->stochastic_interpolation ? "true" : "false", c->fixed_point_pos ? "true" : "false");
    gj__sb_printf(&sb, "\"n_dims_to_encode\": %u, \"precision\": \"%s\"}", c->n_dims,
                  gj__precision_name(c->precision));
    return gj__sb_take(&sb);
}
