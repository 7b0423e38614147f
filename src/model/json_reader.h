/* Reading one JSON configuration object key by key, shared by the parsers of the model
 * layer (encodings, networks, models): the JSON text to a cJSON object with positioned
 * syntax errors, the object's keys matched against a fixed list (unknown ones refused with
 * a "did you mean", or skipped and reported), typed getters whose messages name the key,
 * say what is allowed and quote what was given. */
#ifndef GJ_MODEL_JSON_READER_H
#define GJ_MODEL_JSON_READER_H

#include "base/strbuf.h"
#include "gridjit.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every GJ_CONFIG_* flag the parsers know (the public entry points refuse other bits). */
#define GJ__CONFIG_KNOWN_FLAGS GJ_CONFIG_IGNORE_UNKNOWN_KEYS

/* A canonical spelling and the enumerator it stands for. */
typedef struct gj__name_value {
    const char *name;
    int value;
} gj__name_value;

#define GJ__COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* The name of value in table, "(invalid)" when absent. */
const char *gj__name_of(const gj__name_value *table, size_t n, int value);
/* ASCII-only comparison ignoring letter case (the result does not depend on the locale). */
bool gj__equals_case_insensitive(const char *a, const char *b);

/* One object being read. items has n_keys slots, filled by gj__jr_collect_keys. */
typedef struct gj__json_reader {
    const char *const *key_names; /* the keys this object may have */
    size_t n_keys;
    const cJSON **items;          /* the value of key k, NULL while absent */
    char *err;                    /* the message of the first failure (may be NULL) */
    size_t err_size;
    uint32_t flags;               /* GJ_CONFIG_* */
    gj__strbuf *ignored;          /* the skipped keys' messages, or NULL */
} gj__json_reader;

/* Sets every field and empties items (n_keys slots) and err. */
void gj__jr_init(gj__json_reader *r, const char *const *key_names, size_t n_keys, const cJSON **items,
                 uint32_t flags, gj__strbuf *ignored, char *err, size_t err_size);

/* Writes the message to r->err and returns GJ_ERROR_INVALID_CONFIG. */
gj_status gj__jr_fail(gj__json_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* What the user wrote, for "(got ...)": a string in quotes (control characters as '?',
 * long ones cut with "..."), a number that reads back the same, true, null, "an array". */
void gj__jr_describe(const cJSON *item, char *out, size_t size);

/* Parses json into *root (free with cJSON_Delete), which must be an object. example is the
 * object the messages suggest (e.g. {"otype": "HashGrid"}). On failure *root is NULL and
 * the message gives the line and column of a syntax error. */
gj_status gj__jr_parse_text(gj__json_reader *r, const char *json, const char *example, cJSON **root);

/* Matches every key of object against r->key_names (case-sensitive): a known key fills its
 * slot (twice is an error); an unknown key is an error with a "did you mean" when a known key
 * is close, or, with GJ_CONFIG_IGNORE_UNKNOWN_KEYS, one more line of r->ignored. */
gj_status gj__jr_collect_keys(gj__json_reader *r, const cJSON *object);

/* Refuses anything but an object ("the WHAT must be a JSON object such as EXAMPLE (got ...)"),
 * then gj__jr_collect_keys: the first step of every parser of one object. */
gj_status gj__jr_read_object(gj__json_reader *r, const cJSON *object, const char *what, const char *example);

/* Typed getters of key k: the fallback when the key is absent.
 * enum: a string equal to one of table's names, letter case ignored;
 * uint: an integer in [lo, hi] (16.0 is an integer; 2.5, "16" and true are not);
 * bool: true or false. */
gj_status gj__jr_get_enum(gj__json_reader *r, size_t k, const gj__name_value *table, size_t n, int fallback,
                          int *out);
gj_status gj__jr_get_uint(gj__json_reader *r, size_t k, uint32_t lo, uint32_t hi, uint32_t fallback, uint32_t *out);
gj_status gj__jr_get_bool(gj__json_reader *r, size_t k, bool *out);

/* '"A", "B" or "C"': the names of table for a message. */
void gj__jr_list_names(const gj__name_value *table, size_t n, char *out, size_t size);

#endif
