/*
 * libnvrtc loaded with dlopen(), once per context.
 *
 * gridjit never links against libnvrtc: a machine without the CUDA toolkit can still
 * load the library (to parse configurations and generate source), and the NVRTC that
 * is found at run time may be newer than the toolkit we were built with. nvrtc.h is
 * used for its types only.
 */
#include "loader/nvrtc.h"

#include "base/strbuf.h"
#include "loader/library_identity.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
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

static void release_library(gj__nvrtc *nvrtc) {
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
static gj_status open_library(const gj__diag *d, void **handle, char **path) {
    const char *env = getenv("GRIDJIT_NVRTC");
    if (env && (!strcmp(env, "off") || !strcmp(env, "0"))) {
        return gj__fail(d, GJ_ERROR_NO_NVRTC, "NVRTC: disabled by GRIDJIT_NVRTC=%s", env);
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
            return *path ? GJ_OK : gj__fail(d, GJ_ERROR_OUT_OF_MEMORY, "NVRTC: out of memory");
        }
    }
    gj__fail(d, GJ_ERROR_NO_NVRTC, "NVRTC: could not load libnvrtc%s; tried %s", env && env[0] ? " from GRIDJIT_NVRTC" : "",
             tried.data ? tried.data : "(out of memory)");
    gj__sb_free(&tried);
    return GJ_ERROR_NO_NVRTC;
}

/* Version and supported architectures, asked once. */
static gj_status query_library(const gj__diag *d, gj__nvrtc *n) {
    nvrtcResult r = n->Version(&n->major, &n->minor);
    if (r != NVRTC_SUCCESS) {
        return gj__fail(d, GJ_ERROR_NO_NVRTC, "NVRTC: nvrtcVersion failed in %s: %s", n->path, n->GetErrorString(r));
    }
    r = n->GetNumSupportedArchs(&n->n_archs);
    if (r != NVRTC_SUCCESS || n->n_archs <= 0) {
        return gj__fail(d, GJ_ERROR_NO_NVRTC, "NVRTC: %s lists no supported architectures (%s)", n->path,
                        n->GetErrorString(r));
    }
    n->archs = calloc((size_t)n->n_archs, sizeof *n->archs);
    if (!n->archs) {
        return gj__fail(d, GJ_ERROR_OUT_OF_MEMORY, "NVRTC: out of memory");
    }
    r = n->GetSupportedArchs(n->archs);
    if (r != NVRTC_SUCCESS) {
        return gj__fail(d, GJ_ERROR_NO_NVRTC, "NVRTC: nvrtcGetSupportedArchs failed in %s: %s", n->path,
                        n->GetErrorString(r));
    }
    return GJ_OK;
}

static gj_status load(const gj__diag *d, gj__nvrtc *n) {
    gj_status status = open_library(d, &n->handle, &n->path);
    if (status != GJ_OK) {
        return status;
    }
    dlerror(); /* clear, so that the message below is about dlsym */
    const char *missing = resolve_symbols(n);
    if (missing) {
        const char *why = dlerror();
        return gj__fail(d, GJ_ERROR_NO_NVRTC, "NVRTC: %s lacks %s (%s)", n->path, missing, why ? why : "no detail");
    }
    return query_library(d, n);
}

void gj__nvrtc_loader_init(gj__nvrtc_loader *l) {
    pthread_mutex_init(&l->lock, NULL);
    l->enabled = 1;
    l->lib = NULL;
}

void gj__nvrtc_loader_release(gj__nvrtc_loader *l) {
    release_library(l->lib);
    l->lib = NULL;
    pthread_mutex_destroy(&l->lock);
}

void gj__nvrtc_set_enabled(gj__nvrtc_loader *l, int enabled) {
    pthread_mutex_lock(&l->lock);
    l->enabled = enabled != 0;
    pthread_mutex_unlock(&l->lock);
}

/* The identity of the file the library was loaded from, taken once. */
static void identify(gj__nvrtc *n) {
    n->identity.major = n->major;
    n->identity.minor = n->minor;
    const void *addr = (const void *)(uintptr_t)n->Version;
    if (gj__library_identity(addr, n->identity.build, sizeof n->identity.build) != 0) {
        /* Cannot happen for a dlopen()ed library; keep the key well defined anyway. */
        snprintf(n->identity.build, sizeof n->identity.build, "unknown");
    }
}

static gj_status load_locked(gj__nvrtc_loader *l, const gj__diag *d) {
    if (!l->enabled) {
        return gj__fail(d, GJ_ERROR_NO_NVRTC, "NVRTC: disabled by gj_context_set_nvrtc_enabled(ctx, 0)");
    }
    if (l->lib) {
        return GJ_OK;
    }
    gj__nvrtc *n = calloc(1, sizeof *n);
    if (!n) {
        return gj__fail(d, GJ_ERROR_OUT_OF_MEMORY, "NVRTC: out of memory");
    }
    gj_status status = load(d, n);
    if (status != GJ_OK) {
        /* Not remembered: a later call (e.g. after the environment changed) tries again. */
        release_library(n);
        return status;
    }
    identify(n);
    gj__log(d, GJ_LOG_DEBUG, "loaded NVRTC %d.%d from %s", n->major, n->minor, n->path);
    l->lib = n;
    return GJ_OK;
}

gj_status gj__nvrtc_get(gj__nvrtc_loader *l, const gj__diag *d, gj__nvrtc **out) {
    pthread_mutex_lock(&l->lock);
    gj_status status = load_locked(l, d);
    *out = status == GJ_OK ? l->lib : NULL;
    pthread_mutex_unlock(&l->lock);
    return status;
}

int gj__nvrtc_supports(const gj__nvrtc *nvrtc, int sm) {
    for (int i = 0; i < nvrtc->n_archs; i++) {
        if (nvrtc->archs[i] == sm) {
            return 1;
        }
    }
    return 0;
}

char *gj__nvrtc_archs_text(const gj__nvrtc *nvrtc) {
    gj__strbuf sb;
    gj__sb_init(&sb);
    for (int i = 0; i < nvrtc->n_archs; i++) {
        gj__sb_printf(&sb, "%ssm_%d", i ? " " : "", nvrtc->archs[i]);
    }
    return gj__sb_take(&sb);
}
