/* The public compile entry points: encodings and arbitrary sources, NVRTC queries. */
#include "api/context.h"

#include "codegen/options.h"
#include "compile/encoding_unit.h"
#include "compile/options.h"
#include "compile/precompile.h"
#include "compile/user_unit.h"

#include <stdlib.h>
#include <string.h>

gj_status gj_compile(gj_context *ctx, const gj_encoding *enc, const gj_codegen_options *opts, const char *arch,
                     gj_program **out) {
    if (out) {
        *out = NULL;
    }
    GJ__ENTER(ctx);
    if (!enc || !out) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_compile: enc and out must not be NULL");
    }
    gj__arch parsed; /* fail on a malformed arch before generating anything */
    gj_status status = gj__arch_parse(&ctx->diag, arch, &parsed);
    gj_codegen_options resolved;
    if (status == GJ_OK) {
        status = gj__codegen_options_resolve(&ctx->diag, opts, &resolved);
    }
    gj__encoding_unit unit;
    if (status == GJ_OK) {
        status = gj__encoding_unit_make(&ctx->compiler, enc, &resolved, GJ__PART_ALL, &parsed, 1, &unit);
    }
    if (status == GJ_OK) {
        status = gj__compile(&ctx->compiler, &unit.request, out);
        gj__encoding_unit_free(&unit);
    }
    return status;
}

static gj_status check_names(gj_context *ctx, const char *const *names, size_t n_names) {
    if (n_names && !names) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_compile_source: name_expressions is NULL (count %zu)",
                        n_names);
    }
    for (size_t i = 0; i < n_names; i++) {
        if (!names[i] || !names[i][0]) {
            return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_compile_source: name_expressions[%zu] is %s", i,
                            names[i] ? "empty" : "NULL");
        }
    }
    return GJ_OK;
}

gj_status gj_compile_source(gj_context *ctx, const char *source, const char *const *name_expressions,
                            size_t n_name_expressions, const char *arch, gj_program **out) {
    if (out) {
        *out = NULL;
    }
    GJ__ENTER(ctx);
    if (!source || !out) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_compile_source: source and out must not be NULL");
    }
    gj_status status = check_names(ctx, name_expressions, n_name_expressions);
    gj__compile_request req;
    memset(&req, 0, sizeof req);
    if (status == GJ_OK) {
        status = gj__arch_parse(&ctx->diag, arch, &req.arch);
    }
    if (status != GJ_OK) {
        return status;
    }
    req.unit.source = source;
    req.unit.file_name = GJ__PROGRAM_NAME;
    req.unit.names = name_expressions;
    req.unit.n_names = n_name_expressions;
    req.use_cache = 1;
    return gj__compile(&ctx->compiler, &req, out);
}

char *gj_compile_options_string(const char *arch) {
    gj__arch parsed;
    if (gj__arch_parse(NULL, arch, &parsed) != GJ_OK) {
        return NULL;
    }
    /* Without a context the environment decides -lineinfo; split: what gj_compile passes
     * for a whole unit of kernels (the default options). */
    return gj__compile_options_text(parsed.name, gj__compile_option_flags(gj__lineinfo_from_env(), 1));
}

gj_status gj_nvrtc_version(gj_context *ctx, int *major, int *minor) {
    GJ__ENTER(ctx);
    if (!major || !minor) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_nvrtc_version: major and minor must not be NULL");
    }
    gj__nvrtc *n;
    gj_status status = gj__nvrtc_get(&ctx->nvrtc, &ctx->diag, &n);
    if (status == GJ_OK) {
        *major = n->major;
        *minor = n->minor;
    }
    return status;
}

gj_status gj_nvrtc_supported_archs(gj_context *ctx, char **archs) {
    if (archs) {
        *archs = NULL;
    }
    GJ__ENTER(ctx);
    if (!archs) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_nvrtc_supported_archs: archs must not be NULL");
    }
    gj__nvrtc *n;
    gj_status status = gj__nvrtc_get(&ctx->nvrtc, &ctx->diag, &n);
    if (status == GJ_OK && !(*archs = gj__nvrtc_archs_text(n))) {
        status = gj__fail(&ctx->diag, GJ_ERROR_OUT_OF_MEMORY, "gj_nvrtc_supported_archs: out of memory");
    }
    return status;
}

gj_status gj_precompile(gj_context *ctx, const gj_encoding *enc, const gj_codegen_options *opts, const char *arch,
                        unsigned threads, gj_precompile_report *report) {
    gj_precompile_report ignored;
    report = report ? report : &ignored;
    memset(report, 0, sizeof *report);
    GJ__ENTER(ctx);
    if (!enc) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_precompile: enc must not be NULL");
    }
    gj__arch parsed;
    gj_status status = gj__arch_parse(&ctx->diag, arch, &parsed);
    gj_codegen_options resolved;
    if (status == GJ_OK) {
        status = gj__codegen_options_resolve(&ctx->diag, opts, &resolved);
    }
    if (status == GJ_OK && resolved.device_functions_only) {
        status = gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                          "gj_precompile: device_functions_only must be 0: modules need the kernels");
    }
    return status == GJ_OK ? gj__precompile(&ctx->compiler, enc, &resolved, &parsed, threads, report) : status;
}

gj_status gj_compile_user(gj_context *ctx, const gj_source_desc *desc, const char *arch, gj_program **out) {
    if (out) {
        *out = NULL;
    }
    GJ__ENTER(ctx);
    if (!out) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_compile_user: out must not be NULL");
    }
    gj__user_unit unit;
    gj_status status = gj__user_unit_make(&ctx->compiler, desc, &unit);
    if (status != GJ_OK) {
        return status;
    }
    status = gj__arch_parse(&ctx->diag, arch, &unit.request.arch);
    if (status == GJ_OK) {
        status = gj__compile(&ctx->compiler, &unit.request, out);
    }
    gj__user_unit_free(&unit);
    return status;
}

gj_status gj_user_source_generate(gj_context *ctx, const gj_source_desc *desc, char **text) {
    if (text) {
        *text = NULL;
    }
    GJ__ENTER(ctx);
    if (!text) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_user_source_generate: text must not be NULL");
    }
    gj__user_unit unit;
    gj_status status = gj__user_unit_make(&ctx->compiler, desc, &unit);
    if (status != GJ_OK) {
        return status;
    }
    *text = gj__user_unit_text(&unit);
    gj__user_unit_free(&unit);
    return *text ? GJ_OK : gj__fail(&ctx->diag, GJ_ERROR_OUT_OF_MEMORY, "gj_user_source_generate: out of memory");
}
