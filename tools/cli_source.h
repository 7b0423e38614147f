/* User sources on the command line (`compile`, `dump`, `precompile` with --source):
 * --source FILE, --encoding NAME=CONFIG[:DIMS] (repeatable), --network
 * NAME=CONFIG[:IN:OUT] (repeatable), --kernel NAME (repeatable), --option OPT (repeatable)
 * gathered into a gj_source_desc. */
#ifndef GJ_CLI_SOURCE_H
#define GJ_CLI_SOURCE_H

#include "cli_common.h"

#define GJ_CLI_MAX_ENCODINGS 16
#define GJ_CLI_MAX_NETWORKS 16
#define GJ_CLI_MAX_KERNELS 64
#define GJ_CLI_MAX_OPTIONS 64

typedef struct gj_cli_source {
    const char *file; /* --source */
    const char *encoding_specs[GJ_CLI_MAX_ENCODINGS];
    size_t n_encoding_specs;
    const char *network_specs[GJ_CLI_MAX_NETWORKS];
    size_t n_network_specs;
    const char *kernels[GJ_CLI_MAX_KERNELS];
    size_t n_kernels;
    const char *options[GJ_CLI_MAX_OPTIONS];
    size_t n_options;
    /* Made by gj_cli_source_open. */
    char *text;
    char names[GJ_CLI_MAX_ENCODINGS][72];
    gj_encoding *encodings[GJ_CLI_MAX_ENCODINGS];
    gj_source_encoding offered[GJ_CLI_MAX_ENCODINGS];
    char network_names[GJ_CLI_MAX_NETWORKS][72];
    gj_network *networks[GJ_CLI_MAX_NETWORKS];
    gj_source_network offered_networks[GJ_CLI_MAX_NETWORKS];
    gj_source_desc desc;
} gj_cli_source;

/* The rows of the options above in a command's struct option table, and their letters in
 * its getopt_long() optstring; getopt_long() returns the letter, for gj_cli_source_add. */
#define GJ_CLI_SOURCE_NETWORK 0x4e57 /* --network: no short form (dump's -n is --name) */
#define GJ_CLI_SOURCE_LONG_OPTIONS \
    {"source", required_argument, NULL, 's'}, {"encoding", required_argument, NULL, 'e'}, \
    {"network", required_argument, NULL, GJ_CLI_SOURCE_NETWORK}, {"kernel", required_argument, NULL, 'k'}, \
    {"option", required_argument, NULL, 'O'}
#define GJ_CLI_SOURCE_SHORT_OPTIONS "s:e:k:O:"

/* Takes one option value (which: 's' --source, the last one counting; 'e' --encoding,
 * GJ_CLI_SOURCE_NETWORK --network, 'k' --kernel, 'O' --option, collected). GJ_CLI_USAGE when there are too many. */
int gj_cli_source_add(const char *cmd, gj_cli_source *src, int which, const char *value);
/* After the options: exactly one of --config (has_config) and --source, else one_of is
 * the usage error; and when need_kernel is not NULL, --source with at least one --kernel,
 * else the usage error "--source needs at least one --kernel" followed by need_kernel;
 * and --gradients (gradients: its value, or NULL) only with --config. Each command keeps
 * its own wording. GJ_CLI_OK or GJ_CLI_USAGE. */
int gj_cli_source_check(const char *cmd, const gj_cli_source *src, int has_config, const char *one_of,
                        const char *need_kernel, const char *gradients);
/* Reads the file, makes the encodings and networks in ctx and fills src->desc. GJ_CLI_FAILURE (message
 * printed: the spec and the key at fault) or GJ_CLI_USAGE for a malformed spec. */
int gj_cli_source_open(const char *cmd, gj_context *ctx, gj_cli_source *src);
/* The same in a new context (*ctx, NULL when it cannot be made; the caller destroys it,
 * after gj_cli_source_close, whatever the result). */
int gj_cli_source_open_context(const char *cmd, gj_context **ctx, gj_cli_source *src);
void gj_cli_source_close(gj_cli_source *src);

/* The help text of the options above, for the usage of each subcommand that takes them. */
extern const char gj_cli_source_help[];

#endif
