/* A model configuration (an encoding and a network) or a network alone (docs/networks.md §1):
 * the outer object is read here, each part by its own parser, whose messages get the
 * part's name in front. */
#include "model/model_config.h"
#include "model/json_reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum key_id { KEY_OTYPE, KEY_ENCODING, KEY_NETWORK, KEY_COUNT } key_id;

static const char *const key_names[KEY_COUNT] = {"otype", "encoding", "network"};

/* The only otype of a model: tinycudann's hyperparams() of one say so. */
static const gj__name_value model_otype_names[] = {
    {"NetworkWithInputEncoding", 0},
};

#define EXAMPLE "{\"encoding\": {\"otype\": \"HashGrid\"}, \"network\": {\"otype\": \"FullyFusedMLP\"}}"

/* A model has an "encoding" or a "network" part, or says it is one. */
static bool is_model(const cJSON *root) {
    const cJSON *otype = cJSON_GetObjectItemCaseSensitive(root, "otype");
    return cJSON_GetObjectItemCaseSensitive(root, "encoding") || cJSON_GetObjectItemCaseSensitive(root, "network") ||
           (cJSON_IsString(otype) && gj__equals_case_insensitive(otype->valuestring, model_otype_names[0].name));
}

/* Appends the part's skipped-key lines to ignored, each as "PART: line". */
static void append_part_lines(gj__strbuf *ignored, const char *part, const gj__strbuf *lines) {
    if (!ignored || !lines->data) {
        return;
    }
    for (const char *line = lines->data; *line;) {
        const size_t n = strcspn(line, "\n");
        if (ignored->len) {
            gj__sb_append(ignored, "\n");
        }
        gj__sb_printf(ignored, "%s: %.*s", part, (int)n, line);
        line += n + (line[n] == '\n');
    }
    ignored->failed |= lines->failed;
}

/* A part's parse result, its message and skipped keys named after it. */
static gj_status part_done(gj_status s, const char *part, const char *part_err, gj__strbuf *part_ignored,
                           gj__strbuf *ignored, char *err, size_t err_size) {
    if (s != GJ_OK && err && err_size > 0) {
        snprintf(err, err_size, "%s: %s", part, part_err);
    }
    append_part_lines(ignored, part, part_ignored);
    gj__sb_free(part_ignored);
    return s;
}

static gj_status parse_encoding(gj__json_reader *r, uint32_t n_input_dims, gj__model_config *out) {
    char part_err[1024] = "";
    gj__strbuf lines;
    gj__sb_init(&lines);
    gj_status s = gj__config_parse_object(r->items[KEY_ENCODING], n_input_dims, r->flags, r->ignored ? &lines : NULL,
                                          &out->encoding, part_err, sizeof part_err);
    return part_done(s, "encoding", part_err, &lines, r->ignored, r->err, r->err_size);
}

static gj_status parse_network(gj__json_reader *r, uint32_t n_output_dims, gj__model_config *out) {
    char part_err[1024] = "";
    gj__strbuf lines;
    gj__sb_init(&lines);
    /* The network's input is the encoding's output: L * F features (docs/design.md §2.6). */
    const uint32_t encoded = out->encoding.n_levels * out->encoding.n_features_per_level;
    gj_status s = gj__network_config_parse_object(r->items[KEY_NETWORK], encoded, n_output_dims, true, r->flags,
                                                  r->ignored ? &lines : NULL, &out->network, part_err,
                                                  sizeof part_err);
    return part_done(s, "network", part_err, &lines, r->ignored, r->err, r->err_size);
}

static gj_status parse_model(gj__json_reader *r, const cJSON *root, uint32_t n_input_dims, uint32_t n_output_dims,
                             gj__model_config *out) {
    int otype = 0;
    gj_status s = gj__jr_collect_keys(r, root);
    if (s == GJ_OK) {
        s = gj__jr_get_enum(r, KEY_OTYPE, model_otype_names, GJ__COUNT_OF(model_otype_names), 0, &otype);
    }
    for (size_t k = KEY_ENCODING; s == GJ_OK && k <= KEY_NETWORK; ++k) {
        if (!r->items[k]) {
            s = gj__jr_fail(r, "%s: missing: a model configuration has an \"encoding\" and a \"network\" object, "
                               "such as %s (a network alone is its network object, without this wrapper)",
                            key_names[k], EXAMPLE);
        }
    }
    out->has_encoding = true;
    if (s == GJ_OK) {
        s = parse_encoding(r, n_input_dims, out);
    }
    if (s == GJ_OK) {
        s = parse_network(r, n_output_dims, out);
    }
    return s;
}

gj_status gj__model_config_parse_ex(const char *json, uint32_t n_input_dims, uint32_t n_output_dims, uint32_t flags,
                                    gj__strbuf *ignored, gj__model_config *out, char *err, size_t err_size) {
    const cJSON *items[KEY_COUNT];
    gj__json_reader r;
    gj__jr_init(&r, key_names, KEY_COUNT, items, flags, ignored, err, err_size);
    if (!out) {
        return gj__jr_fail(&r, "no place to store the result (out is NULL)");
    }
    /* Zeroed, padding included, so that equal configurations compare equal with memcmp. */
    memset(out, 0, sizeof *out);
    if (!json) {
        return gj__jr_fail(&r, "no JSON text (NULL)");
    }
    cJSON *root = NULL;
    gj_status s = gj__jr_parse_text(&r, json, EXAMPLE, &root);
    if (s == GJ_OK) {
        s = is_model(root) ? parse_model(&r, root, n_input_dims, n_output_dims, out)
                           : gj__network_config_parse_object(root, n_input_dims, n_output_dims, false, flags, ignored,
                                                             &out->network, err, err_size);
    }
    cJSON_Delete(root);
    if (s != GJ_OK) {
        memset(out, 0, sizeof *out);
    }
    return s;
}

char *gj__model_config_to_json(const gj__model_config *c) {
    if (!c) {
        return NULL;
    }
    if (!c->has_encoding) {
        return gj__network_config_to_json(&c->network, true);
    }
    char *encoding = gj__config_to_json(&c->encoding);
    char *network = gj__network_config_to_json(&c->network, false);
    char *json = NULL;
    if (encoding && network) {
        gj__strbuf sb;
        gj__sb_init(&sb);
        gj__sb_printf(&sb, "{\"otype\": \"%s\", \"encoding\": %s, \"network\": %s}", model_otype_names[0].name,
                      encoding, network);
        json = gj__sb_take(&sb);
    }
    free(encoding);
    free(network);
    return json;
}
