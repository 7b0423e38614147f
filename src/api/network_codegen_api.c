/* gj_network_generate, gj_network_compile: a network's (or a model's) CUDA source and its
 * whole unit compiled (docs/networks.md §7). */
#include "api/context.h"

#include "codegen/options.h"
#include "compile/network_unit.h"

#include <stdlib.h>
#include <string.h>

gj_status gj_network_generate(gj_context *ctx, const gj_network *net, const gj_codegen_options *opts, char **source,
                              size_t *length) {
    if (source) {
        *source = NULL;
    }
    GJ__ENTER(ctx);
    if (!net || !source) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_network_generate: net and source must not be NULL");
    }
    gj_codegen_options resolved;
    gj_status status = gj__codegen_options_resolve(&ctx->diag, opts, &resolved);
    if (status != GJ_OK) {
        return status;
    }
    *source = gj__network_source(&ctx->compiler, net, &resolved, GJ__NETWORK_PART_ALL);
    if (!*source) {
        return gj__fail(&ctx->diag, GJ_ERROR_OUT_OF_MEMORY, "out of memory while generating source");
    }
    if (length) {
        *length = strlen(*source);
    }
    return GJ_OK;
}

gj_status gj_network_compile(gj_context *ctx, const gj_network *net, const gj_codegen_options *opts,
                             const char *arch, gj_program **out) {
    static const char call[] = "gj_network_compile";
    if (out) {
        *out = NULL;
    }
    GJ__ENTER(ctx);
    if (!net || !arch || !out) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "%s: net, arch and out must not be NULL", call);
    }
    gj_codegen_options resolved;
    gj_status status = gj__codegen_options_resolve(&ctx->diag, opts, &resolved);
    if (status != GJ_OK) {
        return status;
    }
    if (resolved.device_functions_only) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: device_functions_only leaves no kernels to compile (compile a source of your own that "
                        "includes the network's header instead)", call);
    }
    char *source = gj__network_source(&ctx->compiler, net, &resolved, GJ__NETWORK_PART_ALL);
    size_t n_names = 0;
    char **names = gj__network_kernel_names(net, &resolved, GJ__NETWORK_PART_ALL, &n_names);
    if (!source || !names) {
        status = gj__fail(&ctx->diag, GJ_ERROR_OUT_OF_MEMORY, "%s: out of memory generating source", call);
    } else {
        status = gj_compile_source(ctx, source, (const char *const *)names, n_names, arch, out);
    }
    free(source);
    gj__free_string_list(names, n_names);
    return status;
}
