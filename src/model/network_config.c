/* The network configuration: tiny-cuda-nn's MLP keys, checked one by one (docs/networks.md §1). */
#include "model/network_config.h"
#include "model/json_reader.h"

#include <string.h>

/* ------------------------------------------------------------ names */

/* tiny-cuda-nn's select_network: FullyFusedMLP and MegakernelMLP are fully fused, MLP and
 * CutlassMLP are CUTLASS; the first spelling of each is the canonical one. */
static const gj__name_value otype_names[] = {
    {"FullyFusedMLP", GJ_NETWORK_FULLY_FUSED_MLP},
    {"CutlassMLP", GJ_NETWORK_CUTLASS_MLP},
    {"MLP", GJ_NETWORK_CUTLASS_MLP},
    {"MegakernelMLP", GJ_NETWORK_FULLY_FUSED_MLP},
};
static const gj__name_value activation_names[] = {
    {"None", GJ_ACTIVATION_NONE},
    {"ReLU", GJ_ACTIVATION_RELU},
    {"LeakyReLU", GJ_ACTIVATION_LEAKY_RELU},
    {"Exponential", GJ_ACTIVATION_EXPONENTIAL},
    {"Sine", GJ_ACTIVATION_SINE},
    {"Sigmoid", GJ_ACTIVATION_SIGMOID},
    {"Squareplus", GJ_ACTIVATION_SQUAREPLUS},
    {"Softplus", GJ_ACTIVATION_SOFTPLUS},
    {"Tanh", GJ_ACTIVATION_TANH},
    {"SiLU", GJ_ACTIVATION_SILU},
};

const char *gj__network_type_name(gj_network_type otype) {
    return gj__name_of(otype_names, GJ__COUNT_OF(otype_names), (int)otype);
}

const char *gj__activation_name(gj_activation activation) {
    return gj__name_of(activation_names, GJ__COUNT_OF(activation_names), (int)activation);
}

/* ------------------------------------------------------------ keys */

typedef enum key_id {
    KEY_OTYPE,
    KEY_N_NEURONS,
    KEY_N_HIDDEN_LAYERS,
    KEY_ACTIVATION,
    KEY_OUTPUT_ACTIVATION,
    KEY_N_INPUT_DIMS,
    KEY_N_OUTPUT_DIMS,
    KEY_COUNT
} key_id;

static const char *const key_names[KEY_COUNT] = {
    "otype", "n_neurons", "n_hidden_layers", "activation", "output_activation", "n_input_dims", "n_output_dims",
};

#define EXAMPLE "{\"otype\": \"FullyFusedMLP\", \"n_neurons\": 64, \"n_hidden_layers\": 2}"

/* tiny-cuda-nn's defaults (network.cu, create_network). */
#define DEFAULT_N_NEURONS 128u
#define DEFAULT_N_HIDDEN_LAYERS 5u

typedef struct parser {
    gj__json_reader r;
    const cJSON *items[KEY_COUNT];
} parser;

#define fail(p, ...) gj__jr_fail(&(p)->r, __VA_ARGS__)

/* ------------------------------------------------------------ the keys */

static gj_status parse_otype(parser *p, gj__network_config *c) {
    int v;
    /* tiny-cuda-nn's default otype is "MLP", a CutlassMLP. */
    gj_status s = gj__jr_get_enum(&p->r, KEY_OTYPE, otype_names, GJ__COUNT_OF(otype_names), GJ_NETWORK_CUTLASS_MLP, &v);
    c->otype = (gj_network_type)v;
    return s;
}

/* 16, 32, 64 or 128 for every otype: the widths gridjit generates (tiny-cuda-nn's
 * FullyFusedMLP has the same four; its CutlassMLP takes any). */
static gj_status parse_neurons(parser *p, gj__network_config *c) {
    uint32_t n = 0;
    gj_status s = gj__jr_get_uint(&p->r, KEY_N_NEURONS, 0, UINT32_MAX, DEFAULT_N_NEURONS, &n);
    if (s == GJ_OK && (n == 16 || n == 32 || n == 64 || n == 128)) {
        c->n_neurons = n;
        return GJ_OK;
    }
    char got[64];
    gj__jr_describe(p->items[KEY_N_NEURONS], got, sizeof got);
    return fail(p, "n_neurons: must be 16, 32, 64 or 128 (got %s)%s", got,
                c->otype == GJ_NETWORK_CUTLASS_MLP ? "; tiny-cuda-nn's CutlassMLP takes other widths, gridjit's "
                                                     "generated MLPs do not"
                                                   : "");
}

/* A FullyFusedMLP needs a hidden layer (tiny-cuda-nn refuses 0 too); a CutlassMLP may
 * have none (one matrix from the input to the output). */
static gj_status parse_hidden_layers(parser *p, gj__network_config *c) {
    const uint32_t lo = c->otype == GJ_NETWORK_FULLY_FUSED_MLP ? 1 : 0;
    uint32_t n = 0;
    gj_status s = gj__jr_get_uint(&p->r, KEY_N_HIDDEN_LAYERS, 0, UINT32_MAX, DEFAULT_N_HIDDEN_LAYERS, &n);
    if (s == GJ_OK && n >= lo && n <= GJ_NETWORK_MAX_HIDDEN_LAYERS) {
        c->n_hidden_layers = n;
        return GJ_OK;
    }
    char got[64];
    gj__jr_describe(p->items[KEY_N_HIDDEN_LAYERS], got, sizeof got);
    if (lo == 1) {
        return fail(p, "n_hidden_layers: must be an integer from 1 to %u for a FullyFusedMLP (0 to %u for a "
                       "CutlassMLP) (got %s)",
                    GJ_NETWORK_MAX_HIDDEN_LAYERS, GJ_NETWORK_MAX_HIDDEN_LAYERS, got);
    }
    return fail(p, "n_hidden_layers: must be an integer from 0 to %u (got %s)", GJ_NETWORK_MAX_HIDDEN_LAYERS, got);
}

static gj_status parse_activations(parser *p, gj__network_config *c) {
    int v;
    gj_status s = gj__jr_get_enum(&p->r, KEY_ACTIVATION, activation_names, GJ__COUNT_OF(activation_names),
                                  GJ_ACTIVATION_RELU, &v);
    c->activation = (gj_activation)v;
    if (s == GJ_OK) {
        s = gj__jr_get_enum(&p->r, KEY_OUTPUT_ACTIVATION, activation_names, GJ__COUNT_OF(activation_names),
                            GJ_ACTIVATION_NONE, &v);
        c->output_activation = (gj_activation)v;
    }
    return s;
}

/* A width from the key or the caller (as n_dims_to_encode for encodings): the caller's
 * when the key is absent, and they must agree when both are given. */
static gj_status parse_width(parser *p, key_id key, uint32_t arg, uint32_t max, uint32_t *out) {
    const char *name = key_names[key];
    uint32_t from_key = 0;
    gj_status s = gj__jr_get_uint(&p->r, key, 1, max, 0, &from_key);
    if (s != GJ_OK) {
        return s;
    }
    if (from_key && arg && from_key != arg) {
        return fail(p, "%s: the configuration says %u but the caller passed %s = %u; remove the key or make them "
                       "agree", name, from_key, name, arg);
    }
    *out = from_key ? from_key : arg;
    if (*out == 0) {
        return fail(p, "%s: required: give the key \"%s\" in the network object or pass the width (the %s "
                       "argument; %s of the gridjit tool)",
                    name, name, name, key == KEY_N_INPUT_DIMS ? "--dims" : "--output-dims");
    }
    if (*out > max) {
        return fail(p, "%s: must be from 1 to %u (got %s = %u)", name, max, name, *out);
    }
    return GJ_OK;
}

static gj_status parse_input(parser *p, uint32_t arg, bool input_from_encoding, gj__network_config *c) {
    if (!input_from_encoding) {
        return parse_width(p, KEY_N_INPUT_DIMS, arg, GJ_NETWORK_MAX_INPUT_DIMS, &c->n_input_dims);
    }
    if (p->items[KEY_N_INPUT_DIMS]) {
        return fail(p, "n_input_dims: not used in a model configuration: the network's input is the encoding's "
                       "output (%u features); remove the key", arg);
    }
    if (arg == 0 || arg > GJ_NETWORK_MAX_INPUT_DIMS) {
        return fail(p, "n_input_dims: the encoding's output (%u features) must be from 1 to %u wide", arg,
                    GJ_NETWORK_MAX_INPUT_DIMS);
    }
    c->n_input_dims = arg;
    return GJ_OK;
}

/* otype before the keys whose limits depend on it. */
static gj_status parse_object(parser *p, uint32_t n_input_dims_arg, uint32_t n_output_dims_arg,
                              bool input_from_encoding, gj__network_config *c) {
    gj_status s = parse_otype(p, c);
    if (s == GJ_OK) {
        s = parse_neurons(p, c);
    }
    if (s == GJ_OK) {
        s = parse_hidden_layers(p, c);
    }
    if (s == GJ_OK) {
        s = parse_activations(p, c);
    }
    if (s == GJ_OK) {
        s = parse_input(p, n_input_dims_arg, input_from_encoding, c);
    }
    if (s == GJ_OK) {
        s = parse_width(p, KEY_N_OUTPUT_DIMS, n_output_dims_arg, GJ_NETWORK_MAX_OUTPUT_DIMS, &c->n_output_dims);
    }
    return s;
}

gj_status gj__network_config_parse_object(const cJSON *object, uint32_t n_input_dims_arg, uint32_t n_output_dims_arg,
                                          bool input_from_encoding, uint32_t flags, gj__strbuf *ignored,
                                          gj__network_config *out, char *err, size_t err_size) {
    parser p;
    gj__jr_init(&p.r, key_names, KEY_COUNT, p.items, flags, ignored, err, err_size);
    if (!out) {
        return fail(&p, "no place to store the result (out is NULL)");
    }
    /* Zeroed, padding included, so that equal configurations compare equal with memcmp. */
    memset(out, 0, sizeof *out);
    gj_status s = gj__jr_read_object(&p.r, object, "network configuration", EXAMPLE);
    if (s == GJ_OK) {
        s = parse_object(&p, n_input_dims_arg, n_output_dims_arg, input_from_encoding, out);
    }
    if (s != GJ_OK) {
        memset(out, 0, sizeof *out);
    }
    return s;
}

gj_status gj__network_config_parse_ex(const char *json, uint32_t n_input_dims_arg, uint32_t n_output_dims_arg,
                                      uint32_t flags, gj__strbuf *ignored, gj__network_config *out, char *err,
                                      size_t err_size) {
    parser p;
    gj__jr_init(&p.r, key_names, KEY_COUNT, p.items, flags, ignored, err, err_size);
    if (!out) {
        return fail(&p, "no place to store the result (out is NULL)");
    }
    memset(out, 0, sizeof *out);
    if (!json) {
        return fail(&p, "no JSON text (NULL)");
    }
    cJSON *root = NULL;
    gj_status s = gj__jr_parse_text(&p.r, json, EXAMPLE, &root);
    if (s == GJ_OK) {
        s = gj__network_config_parse_object(root, n_input_dims_arg, n_output_dims_arg, false, flags, ignored, out, err,
                                            err_size);
    }
    cJSON_Delete(root);
    return s;
}

/* ------------------------------------------------------------- writing */

char *gj__network_config_to_json(const gj__network_config *c, bool with_input_dims) {
    if (!c) {
        return NULL;
    }
    gj__strbuf sb;
    gj__sb_init(&sb);
    gj__sb_printf(&sb, "{\"otype\": \"%s\", \"n_neurons\": %u, \"n_hidden_layers\": %u, ",
                  gj__network_type_name(c->otype), c->n_neurons, c->n_hidden_layers);
    gj__sb_printf(&sb, "\"activation\": \"%s\", \"output_activation\": \"%s\", ", gj__activation_name(c->activation),
                  gj__activation_name(c->output_activation));
    if (with_input_dims) {
        gj__sb_printf(&sb, "\"n_input_dims\": %u, ", c->n_input_dims);
    }
    gj__sb_printf(&sb, "\"n_output_dims\": %u}", c->n_output_dims);
    return gj__sb_take(&sb);
}
