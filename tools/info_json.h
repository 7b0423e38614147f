/* What `gridjit info --json` prints: one object for an encoding, a network or a model
 * (docs/cli.md). */
#ifndef GJ_INFO_JSON_H
#define GJ_INFO_JSON_H

#include "gridjit.h"

#include <cjson/cJSON.h>

/* NULL on OOM (or hyperparameters the library could not give). */
cJSON *gj_cli_encoding_json(const gj_encoding *enc);
cJSON *gj_cli_network_json(const gj_network *net);

#endif
