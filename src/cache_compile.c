/* gj_compile's way through the disk cache: everything the key needs (options, NVRTC
 * identity) and the "without NVRTC" message needs (canonical configuration, flags) is
 * gathered here, so that compile.c only hands over its generated source. */
#include "cache_impl.h"
#include "codegen.h"
#include "compile.h"
#include "config.h"
#include "encoding.h"
#include "nvrtc_loader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The NVRTC identity, or NULL with the reason in why. */
static const gj__nvrtc_identity *find_nvrtc(gj_context *ctx, gj__nvrtc_identity *id, char *why, size_t why_size) {
    gj__nvrtc *nv = NULL;
    if (gj__nvrtc_get(ctx, &nv) != GJ_OK || gj__cache_nvrtc_identity(nv, id) != GJ_OK) {
        snprintf(why, why_size, "%.*s", (int)why_size - 1, ctx->errmsg[0] ? ctx->errmsg : "NVRTC: not found");
        gj__clear_error(ctx);
        return NULL;
    }
    return id;
}

/* `gridjit precompile` flags for codegen options that differ from the defaults; 1 when
 * some differ that the CLI has no flag for. */
static int hint_flags(const gj_codegen_options *opts, char *out, size_t size) {
    out[0] = '\0';
    if (opts->passes != GJ_PASS_ALL) {
        snprintf(out, size, " --pass %s%s%s", (opts->passes & GJ_PASS_FORWARD) ? "forward" : "",
                 (opts->passes & GJ_PASS_BACKWARD) ? ",backward" : "",
                 (opts->passes & GJ_PASS_BACKWARD_BACKWARD) ? ",backward_backward" : "");
    }
    gj_codegen_options defaults;
    gj_codegen_options_init(&defaults);
    return opts->output_width_multiple > 1 || strcmp(opts->name, defaults.name) != 0 ||
           opts->device_functions_only || opts->block_size != defaults.block_size ||
           opts->points_per_thread != defaults.points_per_thread || opts->order != defaults.order;
}

gj_status gj__cache_compile_generated(gj_context *ctx, const struct gj_encoding *enc, const gj_codegen_options *opts,
                                      const struct gj__arch *arch, const char *source, const char *const *names,
                                      size_t n_names, gj__compile_fn compile, void *arg, struct gj_program **out) {
    const char *options[GJ__MAX_COMPILE_OPTIONS];
    char buffer[GJ__COMPILE_OPTIONS_BUFFER];
    size_t n_options = gj__compile_options(arch, options, GJ__MAX_COMPILE_OPTIONS, buffer, sizeof buffer);
    char *config_json = gj__config_to_json(&enc->config);
    if (!n_options || !config_json) {
        free(config_json);
        return gj__fail(ctx, n_options ? GJ_ERROR_OUT_OF_MEMORY : GJ_ERROR_INTERNAL,
                        "gj_compile: cannot state the compile options of %s", arch->name);
    }
    gj__nvrtc_identity id;
    char why[600], flags[200];
    int incomplete = hint_flags(opts, flags, sizeof flags);
    gj__cache_request req = {.source = source,
                             .source_size = strlen(source),
                             .names = names,
                             .n_names = n_names,
                             .target = arch->name,
                             .kind = arch->kind,
                             .options = options,
                             .n_options = n_options,
                             .nvrtc = find_nvrtc(ctx, &id, why, sizeof why),
                             .nvrtc_error = why,
                             .config_json = config_json,
                             .n_dims = enc->config.n_dims,
                             .hint_flags = flags,
                             .hint_incomplete = incomplete};
    gj_status status = gj__cache_compile(ctx, &req, compile, arg, out);
    free(config_json);
    return status;
}
