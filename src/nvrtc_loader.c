/*
 * libnvrtc loaded with dlopen(), once per context.
 *
 * gridjit never links against libnvrtc: a machine without the CUDA toolkit can still
 * load the library (to parse configurations and generate source), and the NVRTC that
 * is found at run time may be newer than the toolkit we were built with. nvrtc.h is
 * used for its types only.
 */
#include "nvrtc_loader.h"
#include "cache.h"
#include "strbuf.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The sonames we try, newest first. The CUDA 13 and 12 libraries keep the API we use. */
static const char *const default_names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};

/* Where ldconfig does not know the toolkit: the one we were built against, then the
 * usual install location. */
#ifdef GJ_CUDA_LIB_DIR
#define GJ__BUILD_TIME_NVRTC GJ_CUDA_LIB_DIR "/libnvrtc.so.13"
#endif
#define GJ__FALLBACK_NVRTC "/usr/local/cuda/lib64/libnvrtc.so.13"

/* Every entry point, with the member of gj__nvrtc that receives it. */
#define GJ__NVRTC_SYMBOLS(XX)                                                                   \
    XX(GetErrorString) XX(Version) XX(GetNumSupportedArchs) XX(GetSupportedArchs)                 \
    XX(CreateProgram) XX(DestroyProgram) XX(CompileProgram) XX(GetPTXSize) XX(GetPTX)             \
    XX(GetCUBINSize) XX(GetCUBIN) XX(GetProgramLogSize) XX(GetProgramLog) XX(AddNameExpression) \
    XX(GetLoweredName)

typedef struct symbol {
    const char *name;
    size_t offset; /* of the function pointer in gj__nvrtc */
} symbol;

static const symbol symbols[] = {
#define GJ__NVRTC_SYMBOL(field) {"nvrtc" #field, offsetof(gj__nvrtc, field)},
    GJ__NVRTC_SYMBOLS(GJ__NVRTC_SYMBOL)
#undef GJ__NVRTC_SYMBOL
};

/* POSIX guarantees that a function pointer survives the round trip through void *. */
_Static_assert(sizeof(void *) == sizeof(nvrtcResult (*)(int *)), "function pointers must fit in void *");

/* Fills every function pointer of n from its handle; the name of the first missing
 * one otherwise. */
static const char *resolve_symbols(gj__nvrtc *n) {
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
        void *address = dlsym(n->handle, symbols[i].name);
        if (!address) {
            return symbols[i].name;
        }
        memcpy((char *)n + symbols[i].offset, &address, sizeof address);
    }
    return NULL;
}

void gj__nvrtc_release(struct gj__nvrtc *nvrtc) {
    if (!nvrtc) {
        return;
    }
    if (nvrtc->handle) {
        dlclose(nvrtc->handle);
    }
    free(nvrtc->archs);
    free(nvrtc->path);
    free(nvrtc);
}

/* Appends "NAME (dlerror)" to the list of failed attempts. RTLD_NODELETE: libnvrtc
 * allocates memory in a static initializer that it never frees (72 KiB with NVRTC
 * 13), so unmapping it on dlclose() and mapping it again for the next context would
 * leak that block each time (and cost the initialisation again). */
static void *try_open(const char *name, gj__strbuf *tried) {
    void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!handle) {
        const char *why = dlerror();
        gj__sb_printf(tried, "%s%s (%s)", tried->len ? "; " : "", name, why ? why : "unknown dlopen error");
    }
    return handle;
}

/* dlopen()s the library that GRIDJIT_NVRTC or the default search names. *path
 * receives the name that worked (malloc()ed). */
static gj_status open_library(gj_context *ctx, void **handle, char **path) {
    const char *env = getenv("GRIDJIT_NVRTC");
    if (env && (!strcmp(env, "off") || !strcmp(env, "0"))) {
        return gj__fail(ctx, GJ_ERROR_NO_NVRTC, "NVRTC: disabled by GRIDJIT_NVRTC=%s", env);
    }
    const char *candidates[8];
    size_t n = 0;
    if (env && env[0]) {
        candidates[n++] = env; /* an absolute path, or a name for dlopen()'s own search */
    } else {
        for (size_t i = 0; i < sizeof default_names / sizeof default_names[0]; i++) {
            candidates[n++] = default_names[i];
        }
#ifdef GJ__BUILD_TIME_NVRTC
        candidates[n++] = GJ__BUILD_TIME_NVRTC;
#endif
        if (strcmp(candidates[n - 1], GJ__FALLBACK_NVRTC) != 0) {
            candidates[n++] = GJ__FALLBACK_NVRTC;
        }
    }
    gj__strbuf tried;
    gj__sb_init(&tried);
    for (size_t i = 0; i < n; i++) {
        *handle = try_open(candidates[i], &tried);
        if (*handle) {
            gj__sb_free(&tried);
            *path = strdup(candidates[i]);
            return *path ? GJ_OK : gj__fail(ctx, GJ_ERROR_OUT_OF_MEMORY, "NVRTC: out of memory");
        }
    }
    gj__fail(ctx, GJ_ERROR_NO_NVRTC, "NVRTC: could not load libnvrtc%s; tried %s", env && env[0] ? " from GRIDJIT_NVRTC" : "",
             tried.data ? tried.data : "(out of memory)");
    gj__sb_free(&tried);
    return GJ_ERROR_NO_NVRTC;
}

/* Version and supported architectures, asked once. */
static gj_status query_library(gj_context *ctx, gj__nvrtc *n) {
    nvrtcResult r = n->Version(&n->major, &n->minor);
    if (r != NVRTC_SUCCESS) {
        return gj__fail(ctx, GJ_ERROR_NO_NVRTC, "NVRTC: nvrtcVersion failed in %s: %s", n->path, n->GetErrorString(r));
    }
    r = n->GetNumSupportedArchs(&n->n_archs);
    if (r != NVRTC_SUCCESS || n->n_archs <= 0) {
        return gj__fail(ctx, GJ_ERROR_NO_NVRTC, "NVRTC: %s lists no supported architectures (%s)", n->path,
                        n->GetErrorString(r));
    }
    n->archs = calloc((size_t)n->n_archs, sizeof *n->archs);
    if (!n->archs) {
        return gj__fail(ctx, GJ_ERROR_OUT_OF_MEMORY, "NVRTC: out of memory");
    }
    r = n->GetSupportedArchs(n->archs);
    if (r != NVRTC_SUCCESS) {
        return gj__fail(ctx, GJ_ERROR_NO_NVRTC, "NVRTC: nvrtcGetSupportedArchs failed in %s: %s", n->path,
                        n->GetErrorString(r));
    }
    return GJ_OK;
}

static gj_status load(gj_context *ctx, gj__nvrtc *n) {
    gj_status status = open_library(ctx, &n->handle, &n->path);
    if (status != GJ_OK) {
        return status;
    }
    dlerror(); /* clear, so that the message below is about dlsym */
    const char *missing = resolve_symbols(n);
    if (missing) {
        const char *why = dlerror();
        return gj__fail(ctx, GJ_ERROR_NO_NVRTC, "NVRTC: %s lacks %s (%s)", n->path, missing, why ? why : "no detail");
    }
    return query_library(ctx, n);
}

gj_status gj__nvrtc_get(gj_context *ctx, gj__nvrtc **out) {
    *out = NULL;
    if (!gj__cache_nvrtc_allowed(ctx)) {
        return gj__fail(ctx, GJ_ERROR_NO_NVRTC, "NVRTC: disabled by gj_context_set_nvrtc_enabled(ctx, 0)");
    }
    if (ctx->nvrtc) {
        *out = ctx->nvrtc;
        return GJ_OK;
    }
    gj__nvrtc *n = calloc(1, sizeof *n);
    if (!n) {
        return gj__fail(ctx, GJ_ERROR_OUT_OF_MEMORY, "NVRTC: out of memory");
    }
    gj_status status = load(ctx, n);
    if (status != GJ_OK) {
        /* Not remembered: a later call (e.g. after the environment changed) tries again. */
        gj__nvrtc_release(n);
        return status;
    }
    gj__log(ctx, GJ_LOG_DEBUG, "loaded NVRTC %d.%d from %s", n->major, n->minor, n->path);
    ctx->nvrtc = n;
    *out = n;
    return GJ_OK;
}

int gj__nvrtc_supports(const gj__nvrtc *nvrtc, int sm) {
    for (int i = 0; i < nvrtc->n_archs; i++) {
        if (nvrtc->archs[i] == sm) {
            return 1;
        }
    }
    return 0;
}

gj_status gj_nvrtc_version(gj_context *ctx, int *major, int *minor) {
    if (!ctx || !major || !minor) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "gj_nvrtc_version: ctx, major and minor must not be NULL");
    }
    gj__nvrtc *n;
    gj_status status = gj__nvrtc_get(ctx, &n);
    if (status != GJ_OK) {
        return status;
    }
    *major = n->major;
    *minor = n->minor;
    return GJ_OK;
}

gj_status gj_nvrtc_supported_archs(gj_context *ctx, char **archs) {
    if (archs) {
        *archs = NULL;
    }
    if (!ctx || !archs) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "gj_nvrtc_supported_archs: ctx and archs must not be NULL");
    }
    gj__nvrtc *n;
    gj_status status = gj__nvrtc_get(ctx, &n);
    if (status != GJ_OK) {
        return status;
    }
    gj__strbuf sb;
    gj__sb_init(&sb);
    for (int i = 0; i < n->n_archs; i++) {
        gj__sb_printf(&sb, "%ssm_%d", i ? " " : "", n->archs[i]);
    }
    *archs = gj__sb_take(&sb);
    return *archs ? GJ_OK : gj__fail(ctx, GJ_ERROR_OUT_OF_MEMORY, "gj_nvrtc_supported_archs: out of memory");
}
