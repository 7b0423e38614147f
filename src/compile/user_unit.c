/* User sources as NVRTC units (see user_unit.h). */
#include "compile/user_unit.h"

#include "base/strbuf.h"
#include "codegen/kernels.h"
#include "codegen/options.h"
#include "compile/encoding_unit.h"
#include "compile/network_unit.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The size of gj_source_desc as first published (every field up to n_options). */
#define GJ__SOURCE_DESC_V1_SIZE (offsetof(gj_source_desc, n_options) + sizeof(size_t))

void gj_source_desc_init(gj_source_desc *desc) {
    if (desc) {
        memset(desc, 0, sizeof *desc);
        desc->struct_size = (uint32_t)sizeof *desc;
    }
}

/* The names a source may give its encodings (and plain kernel names): identifiers of at
 * most 64 characters. */
static int is_identifier(const char *name) {
    return gj__is_identifier(name) && strlen(name) <= 64;
}

/* Whether desc is recent enough to have the networks fields. */
static int has_networks(const gj_source_desc *desc) {
    return desc->struct_size >= offsetof(gj_source_desc, n_networks) + sizeof(size_t);
}

static gj_status check_desc(const gj__diag *d, const gj_source_desc *desc) {
    static const char call[] = "gj_source_desc";
    if (!desc) {
        return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT, "%s: must not be NULL", call);
    }
    if (desc->struct_size < GJ__SOURCE_DESC_V1_SIZE || desc->struct_size > sizeof *desc) {
        return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: struct_size is %u (expected %zu): prepare it with gj_source_desc_init() first", call,
                        desc->struct_size, sizeof *desc);
    }
    if (!desc->source) {
        return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT, "%s: source must not be NULL", call);
    }
    if ((desc->n_encodings && !desc->encodings) || (desc->n_kernels && !desc->kernels) ||
        (desc->n_options && !desc->options)) {
        return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT, "%s: an array is NULL while its count is not 0", call);
    }
    for (size_t i = 0; i < desc->n_encodings; ++i) {
        const gj_source_encoding *e = &desc->encodings[i];
        if (!is_identifier(e->name) || !e->encoding) {
            return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT,
                            "%s: encodings[%zu] needs a name that is a C identifier of at most 64 characters "
                            "(got \"%.80s\") and an encoding",
                            call, i, e->name ? e->name : "(null)");
        }
        for (size_t j = 0; j < i; ++j) {
            if (strcmp(desc->encodings[j].name, e->name) == 0) {
                return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT, "%s: two encodings are named \"%s\"", call, e->name);
            }
        }
    }
    const size_t n_networks = has_networks(desc) ? desc->n_networks : 0;
    if (n_networks && !desc->networks) {
        return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT, "%s: an array is NULL while its count is not 0", call);
    }
    for (size_t i = 0; i < n_networks; ++i) {
        const gj_source_network *e = &desc->networks[i];
        if (!is_identifier(e->name) || !e->network) {
            return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT,
                            "%s: networks[%zu] needs a name that is a C identifier of at most 64 characters "
                            "(got \"%.80s\") and a network",
                            call, i, e->name ? e->name : "(null)");
        }
        for (size_t j = 0; j < desc->n_encodings + i; ++j) {
            const char *other = j < desc->n_encodings ? desc->encodings[j].name : desc->networks[j - desc->n_encodings].name;
            if (strcmp(other, e->name) == 0) {
                return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT, "%s: two headers are named \"%s\"", call, e->name);
            }
        }
    }
    for (size_t i = 0; i < desc->n_kernels; ++i) {
        if (!desc->kernels[i] || !desc->kernels[i][0]) {
            return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT, "%s: kernels[%zu] is %s", call, i,
                            desc->kernels[i] ? "empty" : "NULL");
        }
    }
    for (size_t i = 0; i < desc->n_options; ++i) {
        if (!desc->options[i] || !desc->options[i][0]) {
            return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT, "%s: options[%zu] is %s", call, i,
                            desc->options[i] ? "empty" : "NULL");
        }
    }
    return GJ_OK;
}

/* What a header is made of: an encoding's device functions, configuration struct and
 * device types, or a network's (and a model's encoding's), never kernels. */
typedef struct header_of {
    const char *kind; /* "encoding" or "network", for messages */
    const char *name;
    const gj_codegen_options *opts;
    const struct gj_encoding *encoding; /* one of the two */
    const gj_network *network;
} header_of;

/* "NAME.cuh" for what. */
static gj_status make_header(gj__compiler *c, const header_of *what, gj__header *out) {
    gj_codegen_options resolved;
    gj_status status = gj__codegen_options_resolve(c->diag, what->opts, &resolved);
    if (status != GJ_OK) {
        return gj__fail(c->diag, status, "%s \"%s\": %s", what->kind, what->name, gj__diag_message(c->diag));
    }
    resolved.name = what->name;
    resolved.device_functions_only = 1;
    char *name = malloc(strlen(what->name) + 5);
    char *text = what->encoding ? gj__encoding_source(c, what->encoding, &resolved, GJ__PART_ALL)
                                : gj__network_source(c, what->network, &resolved, GJ__NETWORK_PART_ALL);
    if (!name || !text) {
        free(name);
        free(text);
        return gj__fail(c->diag, GJ_ERROR_OUT_OF_MEMORY, "out of memory generating %s.cuh", what->name);
    }
    sprintf(name, "%s.cuh", what->name);
    out->name = name;
    out->text = text;
    return GJ_OK;
}

/* A copy of text, or of "&" text for a plain identifier (a name expression must take the
 * kernel's address). */
static char *name_expression(const char *text) {
    const int plain = is_identifier(text) || (isalpha((unsigned char)text[0]) && !strchr(text, '&'));
    char *copy = malloc(strlen(text) + 2);
    if (copy) {
        sprintf(copy, "%s%s", plain ? "&" : "", text);
    }
    return copy;
}

static char **copy_list(const char *const *list, size_t n, int as_expressions) {
    char **copy = calloc(n ? n : 1, sizeof *copy);
    for (size_t i = 0; copy && i < n; ++i) {
        copy[i] = as_expressions ? name_expression(list[i]) : strdup(list[i]);
        if (!copy[i]) {
            gj__free_string_list(copy, i);
            return NULL;
        }
    }
    return copy;
}

gj_status gj__user_unit_make(gj__compiler *c, const gj_source_desc *desc, gj__user_unit *out) {
    memset(out, 0, sizeof *out);
    gj_status status = check_desc(c->diag, desc);
    if (status != GJ_OK) {
        return status;
    }
    out->source = strdup(desc->source);
    out->file_name = strdup(desc->file_name && desc->file_name[0] ? desc->file_name : GJ__USER_FILE_NAME);
    const size_t n_networks = has_networks(desc) ? desc->n_networks : 0;
    out->headers = calloc(desc->n_encodings + n_networks + 1, sizeof *out->headers);
    out->names = copy_list(desc->kernels, desc->n_kernels, 1);
    out->options = copy_list(desc->options, desc->n_options, 0);
    out->n_names = out->names ? desc->n_kernels : 0;
    out->n_options = out->options ? desc->n_options : 0;
    if (!out->source || !out->file_name || !out->headers || !out->names || !out->options) {
        gj__user_unit_free(out);
        return gj__fail(c->diag, GJ_ERROR_OUT_OF_MEMORY, "out of memory copying the source");
    }
    for (size_t i = 0; status == GJ_OK && i < desc->n_encodings; ++i) {
        const gj_source_encoding *e = &desc->encodings[i];
        const header_of what = {"encoding", e->name, e->opts, e->encoding, NULL};
        status = make_header(c, &what, &out->headers[i]);
        out->n_headers += status == GJ_OK;
    }
    for (size_t i = 0; status == GJ_OK && i < n_networks; ++i) {
        const gj_source_network *e = &desc->networks[i];
        const header_of what = {"network", e->name, e->opts, NULL, e->network};
        status = make_header(c, &what, &out->headers[out->n_headers]);
        out->n_headers += status == GJ_OK;
    }
    if (status != GJ_OK) {
        gj__user_unit_free(out);
        return status;
    }
    gj__compile_request *r = &out->request;
    r->unit.source = out->source;
    r->unit.file_name = out->file_name;
    r->unit.headers = out->headers;
    r->unit.n_headers = out->n_headers;
    r->unit.names = (const char *const *)out->names;
    r->unit.n_names = out->n_names;
    r->extra_options = (const char *const *)out->options;
    r->n_extra_options = out->n_options;
    r->use_cache = 1;
    return GJ_OK;
}

void gj__user_unit_free(gj__user_unit *u) {
    free(u->source);
    free(u->file_name);
    for (size_t i = 0; u->headers && i < u->n_headers; ++i) {
        free((char *)u->headers[i].name);
        free((char *)u->headers[i].text);
    }
    free(u->headers);
    gj__free_string_list(u->names, u->n_names);
    gj__free_string_list(u->options, u->n_options);
    memset(u, 0, sizeof *u);
}

char *gj__user_unit_text(const gj__user_unit *u) {
    gj__strbuf sb;
    gj__sb_init(&sb);
    for (size_t i = 0; i < u->n_headers; ++i) {
        gj__sb_printf(&sb, "// ===== %s =====\n", u->headers[i].name);
        gj__sb_append(&sb, u->headers[i].text);
    }
    gj__sb_printf(&sb, "// ===== %s =====\n", u->file_name);
    gj__sb_append(&sb, u->source);
    return gj__sb_take(&sb);
}
