/* Helpers shared by the gridjit subcommands: reporting errors, reading --config and
 * other files, making the encoding, parsing common option values, writing files
 * atomically, the clock and the random test data of the GPU subcommands. */
#ifndef GJ_CLI_COMMON_H
#define GJ_CLI_COMMON_H

#include "cli.h"
#include "gridjit.h"

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* "gridjit CMD: message" on stderr. */
void gj_cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reports a bad command line ("gridjit CMD: message" plus a pointer to --help) and
 * returns GJ_CLI_USAGE, so that callers write `return gj_cli_usage_error(...)`. */
int gj_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reports a library failure as "gridjit CMD: WHAT: DETAIL", DETAIL being the context's
 * message (or the status' fixed message when the context has none). Returns GJ_CLI_FAILURE. */
int gj_cli_status_error(const char *cmd, gj_context *ctx, gj_status status, const char *what);

/* Resets getopt for a subcommand's argv. */
void gj_cli_getopt_reset(void);
/* Reports what getopt_long() returned when it is not an option of the subcommand ('?' or
 * ':'; optstring must start with ':'), with a "did you mean" from options (the command's
 * table): the closest long option to a misspelled one, the options an ambiguous
 * abbreviation could be, the long option starting with an unknown short letter. Returns
 * GJ_CLI_USAGE. */
int gj_cli_bad_option(const char *cmd, int opt, char **argv, const struct option *options);
/* GJ_CLI_USAGE with a message when positional arguments are left after the options; one
 * that looks like a configuration (JSON, *.json, an existing file) gets the command line
 * with --config when the command has it, a number the options that take no value. */
int gj_cli_no_operands(const char *cmd, int argc, char **argv, const struct option *options);

/*
 * --config: inline JSON when the first non-blank character is '{' (or '['), otherwise
 * the path of a file holding it. *json is malloc()ed. A file that cannot be read is
 * an error naming it. Returns GJ_CLI_OK or GJ_CLI_FAILURE (message printed).
 */
int gj_cli_read_config(const char *cmd, const char *arg, char **json);

/* How gj_cli_read_text ended. */
typedef enum gj_cli_read_status {
    GJ_CLI_READ_OK = 0,
    GJ_CLI_READ_OPEN,      /* fopen() failed (the errno in *err) */
    GJ_CLI_READ_IO,        /* a read failed (the errno in *err) */
    GJ_CLI_READ_NO_MEMORY, /* out of memory */
    GJ_CLI_READ_TOO_LARGE  /* more than max_bytes */
} gj_cli_read_status;
/* The whole of a file, at most max_bytes (SIZE_MAX: any size), as a NUL-terminated text
 * (*text, malloc()ed; NULL on failure). Prints nothing: each caller words its message
 * (a configuration file and a source file say different things). */
gj_cli_read_status gj_cli_read_text(const char *path, size_t max_bytes, char **text, int *err);

/* --dims: an integer 1..1024 (the library checks the real limit). 0 when text is NULL. */
int gj_cli_parse_dims(const char *cmd, const char *text, uint32_t *n_dims);
/* An unsigned integer option value in [min, max]; usage error naming the option otherwise. */
int gj_cli_parse_u32(const char *cmd, const char *option, const char *text, uint32_t min, uint32_t max,
                     uint32_t *out);
/* --pass: forward|backward|backward_backward|all, or a comma-separated list of them,
 * taken as they are (a backward-only program is what `--pass backward` gives, so that
 * the command the library prints for a missing cache entry makes exactly that entry). */
int gj_cli_parse_passes(const char *cmd, const char *text, uint32_t *passes);
/* --gradients: fp32 (gj_codegen_options.gradients_fp32 = 1) or auto (0: as the precision says). */
int gj_cli_parse_gradients(const char *cmd, const char *text, int *gradients_fp32);
/* The --gradients line of the subcommands' --help. */
#define GJ_CLI_GRADIENTS_HELP                                                             \
    "      --gradients G\n"                                                                \
    "                   fp32: the backward passes accumulate dL/dparams in fp32 and take\n" \
    "                   a float array, whatever the precision; auto (default): fp16\n"      \
    "                   encodings with F >= 2 accumulate in fp16 (docs/codegen.md)\n"

/*
 * Creates a context and an encoding from --config and --dims. On failure prints
 * "gridjit CMD: ..." (naming the key at fault) and returns GJ_CLI_FAILURE with both
 * outputs NULL. Release with gj_cli_close().
 */
int gj_cli_open(const char *cmd, const char *config_arg, uint32_t n_dims, gj_context **ctx, gj_encoding **enc);
/* Same from a JSON text instead of a --config argument. */
int gj_cli_open_json(const char *cmd, const char *json, uint32_t n_dims, gj_context **ctx, gj_encoding **enc);
/* Same, where naming the JSON's source in messages ("" inline, " in 'FILE'"). A network or
 * model configuration is refused with a message saying so. */
int gj_cli_open_json_where(const char *cmd, const char *json, const char *where, uint32_t n_dims, gj_context **ctx,
                           gj_encoding **enc);
/* where for a --config argument: "" for inline JSON, " in 'ARG'" for a file. */
void gj_cli_config_where(const char *config_arg, char *where, size_t size);
/* After a gj_*_create from a configuration failed in *ctx with status: prints
 * "gridjit CMD: MESSAGE WHERE: detail", destroys *ctx and sets it to NULL. Returns
 * GJ_CLI_FAILURE. */
int gj_cli_config_refused(const char *cmd, gj_context **ctx, gj_status status, const char *where);
void gj_cli_close(gj_context *ctx, gj_encoding *enc);

/* The human-readable summary of an encoding: hyperparameters, sizes and the level table. */
int gj_cli_print_encoding(FILE *out, const gj_encoding *enc);
/* "hyperparameters", then each member of the library's hyperparameters text (of its
 * object member when member is not NULL) as "  key   value", the value in JSON spelling.
 * Frees text (gj_free). GJ_CLI_FAILURE, printing nothing, when text is NULL or holds no
 * such object. */
int gj_cli_print_hyperparams(FILE *out, char *text, const char *member);

/*
 * Writes data to path atomically: a temporary file in the same directory, written,
 * fsync()ed and renamed over path, so that path is either the old file or the whole
 * new one, never a partial file. On failure the temporary file is removed and an
 * error naming path is printed. Returns GJ_CLI_OK or GJ_CLI_FAILURE.
 */
int gj_cli_write_file_atomic(const char *cmd, const char *path, const void *data, size_t size);

/* mkdir -p with mode 0777 & ~umask. Returns GJ_CLI_OK or GJ_CLI_FAILURE (message printed). */
int gj_cli_make_dirs(const char *cmd, const char *path);

/* Writes all of text to out and flushes; GJ_CLI_FAILURE with a message on a write error
 * (e.g. a closed pipe or a full disk), so that a truncated output never exits 0. */
int gj_cli_write_stdout(const char *cmd, const char *text, size_t size);
int gj_cli_flush_stdout(const char *cmd);

/* CLOCK_MONOTONIC in milliseconds, for the timings the subcommands print. */
double gj_cli_now_ms(void);
/* count floats uniform in [lo, hi) from a xorshift64* generator whose state advances: a
 * fixed seed gives the same data on every run and machine. */
void gj_cli_random_floats(uint64_t *state, float *out, size_t count, float lo, float hi);

#endif
