/* A model configuration: {"encoding": {...}, "network": {...}} (tinycudann's
 * NetworkWithInputEncoding, instant-ngp's files), or a network object alone
 * (docs/networks.md §1). */
#ifndef GJ_MODEL_MODEL_CONFIG_H
#define GJ_MODEL_MODEL_CONFIG_H

#include "model/config.h"
#include "model/network_config.h"

#include <stdbool.h>

typedef struct gj__model_config {
    bool has_encoding;          /* false: a network alone */
    gj__config encoding;        /* when has_encoding */
    gj__network_config network; /* its n_input_dims is the encoding's n_output_dims in a model */
} gj__model_config;

/*
 * Parses json, a model or a network object. A model is an object with the key "encoding"
 * or "network" (or "otype": "NetworkWithInputEncoding"); anything else is a network alone.
 * n_input_dims: the encoding's n_dims for a model, the network's input width alone (0: from
 * the keys); n_output_dims: the network's (0: from its key). Messages about a part name it
 * first ("network: n_neurons: ..."), and so do its lines in ignored.
 */
gj_status gj__model_config_parse_ex(const char *json, uint32_t n_input_dims, uint32_t n_output_dims, uint32_t flags,
                                    gj__strbuf *ignored, gj__model_config *out, char *err, size_t err_size);

/* Canonical JSON that the parser reads back to an identical struct (both widths as keys):
 * the network object, or {"otype": "NetworkWithInputEncoding", "encoding": ..., "network": ...}.
 * malloc()ed; NULL on OOM. */
char *gj__model_config_to_json(const gj__model_config *config);

#endif
