/* `gridjit eval` of a network or model configuration (tools/eval_network.c). */
#ifndef GJ_EVAL_NETWORK_H
#define GJ_EVAL_NETWORK_H

#include "eval_files.h"

/* The whole eval of a network or model whose configuration json was read (where names its
 * source in messages: "" inline, " in 'FILE'"), with the options args parsed. */
int gj_cli_eval_network(const gj_cli_eval_args *args, const char *json, const char *where);

#endif
