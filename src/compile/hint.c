/* The `gridjit precompile` command for a missing entry (see hint.h). */
#include "compile/hint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Single-quotes text for a POSIX shell (newlines dropped: the JSON is one line anyway). */
static void shell_quote(char *out, size_t size, const char *text) {
    size_t n = 0;
    if (n + 1 < size) {
        out[n++] = '\'';
    }
    for (const char *p = text; *p && n + 5 < size; p++) {
        if (*p == '\'') {
            memcpy(out + n, "'\\''", 4);
            n += 4;
        } else if (*p != '\n') {
            out[n++] = *p;
        }
    }
    if (n + 1 < size) {
        out[n++] = '\'';
    }
    out[n < size ? n : size - 1] = '\0';
}

/* " --pass forward,backward" for anything but every pass: the names joined by commas. */
static void pass_flags(uint32_t passes, char *out, size_t size) {
    static const struct {
        uint32_t bit;
        const char *name;
    } names[] = {{GJ_PASS_FORWARD, "forward"}, {GJ_PASS_BACKWARD, "backward"},
                 {GJ_PASS_BACKWARD_BACKWARD, "backward_backward"}};
    out[0] = '\0';
    if (passes == GJ_PASS_ALL) {
        return;
    }
    size_t used = (size_t)snprintf(out, size, " --pass ");
    const char *separator = "";
    for (size_t i = 0; i < sizeof names / sizeof names[0] && used < size; i++) {
        if (passes & names[i].bit) {
            used += (size_t)snprintf(out + used, size - used, "%s%s", separator, names[i].name);
            separator = ",";
        }
    }
}

/* Whether opts differ from the defaults in something the command line cannot say. */
static int beyond_cli(const gj_codegen_options *opts) {
    gj_codegen_options defaults;
    gj_codegen_options_init(&defaults);
    return opts->output_width_multiple > 1 || strcmp(opts->name, defaults.name) != 0 || opts->device_functions_only ||
           opts->block_size != defaults.block_size || opts->points_per_thread != defaults.points_per_thread ||
           opts->order != defaults.order;
}

void gj__precompile_hint(const struct gj_encoding *enc, const gj_codegen_options *opts, int module_program,
                         const gj__arch *arch, const char *dir, char *out, size_t size) {
    if (!enc || !opts) {
        snprintf(out, size, "compiling it once with NVRTC available into the same cache directory");
        return;
    }
    char *json = gj__config_to_json(&enc->config);
    char config[1400], where[600] = "", passes[80];
    shell_quote(config, sizeof config, json ? json : "{}");
    free(json);
    if (dir && dir[0]) {
        char quoted[560];
        shell_quote(quoted, sizeof quoted, dir);
        snprintf(where, sizeof where, " --cache-dir %s", quoted);
    }
    pass_flags(opts->passes, passes, sizeof passes);
    /* precompile takes sm_XX and --ptx for compute_XX. */
    char sm[32];
    const int ptx = arch->kind == GJ_BINARY_PTX;
    snprintf(sm, sizeof sm, ptx ? "sm_%s" : "%s", ptx ? arch->name + strlen("compute_") : arch->name);
    snprintf(out, size, "gridjit %s --config %s --dims %u --arch %s%s%s%s%s", module_program ? "precompile" : "compile",
             config,
             (unsigned)enc->config.n_dims, sm, ptx ? " --ptx" : "", passes, where,
             beyond_cli(opts) ? " (or the library with this program's code generation options)" : "");
}
