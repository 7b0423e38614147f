/* Programs on the command line (see cli_program.h). */
#include "cli_program.h"

#include <string.h>

int gj_cli_target_arch(const char *arch, size_t len, int ptx, char *out, size_t size) {
    if (ptx && len >= 3 && strncmp(arch, "sm_", 3) == 0) {
        snprintf(out, size, "compute_%.*s", (int)(len - 3), arch + 3);
    } else {
        snprintf(out, size, "%.*s", (int)len, arch);
    }
    /* The library's own check: the options string exists for a well-formed target only. */
    char *options = gj_compile_options_string(out);
    const int known = options != NULL;
    gj_free(options);
    return known;
}

gj_status gj_cli_compile_program(gj_context *ctx, const gj_encoding *enc, const gj_codegen_options *opts,
                                 const gj_source_desc *desc, const char *arch, gj_program **prog) {
    gj_program *result = NULL;
    const gj_status status =
        desc ? gj_compile_user(ctx, desc, arch, &result) : gj_compile(ctx, enc, opts, arch, &result);
    if (status == GJ_ERROR_COMPILE && result) {
        fprintf(stderr, "%s\n", gj_program_log(result)); /* the whole log, with the source lines at fault */
    }
    if (status != GJ_OK) {
        gj_program_destroy(result);
        result = NULL;
    }
    *prog = result;
    return status;
}

const char *gj_cli_cache_phrase(gj_cache_status status, gj_cli_cache_wording wording) {
    static const char *const phrases[3][3] = {
        /* off, miss, hit */
        [GJ_CLI_CACHE_WORD] = {"off", "miss", "hit"},
        [GJ_CLI_CACHE_HOW] = {"compiled; the disk cache is off", "compiled, and stored in the disk cache",
                              "loaded from the disk cache"},
        [GJ_CLI_CACHE_WHERE] = {"compiled (disk cache off)", "compiled, now in the disk cache", "from the disk cache"},
    };
    const int column = status == GJ_CACHE_HIT ? 2 : status == GJ_CACHE_MISS ? 1 : 0;
    return phrases[wording][column];
}
