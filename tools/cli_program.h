/* Programs on the command line (compile, precompile, demo, and the GPU subcommands'
 * modules): the target an --arch names, compiling with the compiler log shown, and the
 * words for where a binary came from. */
#ifndef GJ_CLI_PROGRAM_H
#define GJ_CLI_PROGRAM_H

#include "cli_common.h"

/* The target the first len characters of arch name, into out (truncated to size):
 * under --ptx (ptx) "sm_XX..." becomes "compute_XX...", PTX of that architecture.
 * 1 when the library takes the result as a target, 0 otherwise; prints nothing (each
 * command words its own message). */
int gj_cli_target_arch(const char *arch, size_t len, int ptx, char *out, size_t size);

/* gj_compile_user(desc) when desc is not NULL, else gj_compile(enc, opts), for arch. On
 * GJ_ERROR_COMPILE the compiler log goes to stderr. Returns the status; *prog is set on
 * success only (a failed program is destroyed here). The caller reports the failure. */
gj_status gj_cli_compile_program(gj_context *ctx, const gj_encoding *enc, const gj_codegen_options *opts,
                                 const gj_source_desc *desc, const char *arch, gj_program **prog);

/* How a cache status is worded where the subcommands print it. */
typedef enum gj_cli_cache_wording {
    GJ_CLI_CACHE_WORD,  /* "hit", "miss", "off": compile's JSON and cache line */
    GJ_CLI_CACHE_HOW,   /* how the binary was made: compile's and demo's compile line */
    GJ_CLI_CACHE_WHERE  /* where a module's program came from: demo's program list */
} gj_cli_cache_wording;
/* The phrase for status (anything but a hit or a miss reads as "off"). */
const char *gj_cli_cache_phrase(gj_cache_status status, gj_cli_cache_wording wording);

#endif
