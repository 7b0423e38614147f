/* gj_encoding: a parsed configuration and its layout, immutable once made. */
#ifndef GJ_MODEL_ENCODING_H
#define GJ_MODEL_ENCODING_H

#include "model/config.h"
#include "model/layout.h"

struct gj_encoding {
    gj__config config;
    gj__layout layout;
};

/* Parses json (see gj__config_parse) and computes the layout. On failure *out is NULL
 * and err holds a one-line message naming the key at fault. */
gj_status gj__encoding_make(const char *json, uint32_t n_dims, struct gj_encoding **out, char *err, size_t err_size);
/* The same with GJ_CONFIG_* flags and the skipped keys' messages (gj__config_parse_ex). */
gj_status gj__encoding_make_ex(const char *json, uint32_t n_dims, uint32_t flags, gj__strbuf *ignored,
                               struct gj_encoding **out, char *err, size_t err_size);
/* An encoding from a checked configuration (the layout may still refuse it). */
gj_status gj__encoding_from_config(const gj__config *config, struct gj_encoding **out, char *err, size_t err_size);

#endif
