/* libnvrtc loaded with dlopen(): the entry points gridjit uses, resolved once per context,
 * and the identity of the library file (for cache keys). */
#ifndef GJ_LOADER_NVRTC_H
#define GJ_LOADER_NVRTC_H

#include "base/diag.h"

#include <nvrtc.h>
#include <pthread.h>

/* Which NVRTC produced (or would produce) a binary. build identifies the exact library
 * file without naming it: "gnu-build-id:HEX" from its ELF note, else "xxh3:HEX-SIZE" over
 * its first MiB and size (gj__library_identity). */
typedef struct gj__nvrtc_identity {
    int major, minor;
    char build[96];
} gj__nvrtc_identity;

typedef struct gj__nvrtc {
    void *handle;
    gj__nvrtc_identity identity;
    char *path;  /* what dlopen() was given, for messages */
    int major, minor;
    int n_archs; /* nvrtcGetSupportedArchs: e.g. 75 80 ... 121, ascending */
    int *archs;
    const char *(*GetErrorString)(nvrtcResult);
    nvrtcResult (*Version)(int *, int *);
    nvrtcResult (*GetNumSupportedArchs)(int *);
    nvrtcResult (*GetSupportedArchs)(int *);
    nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                                 const char *const *);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *);
    nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetPTX)(nvrtcProgram, char *);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
    nvrtcResult (*AddNameExpression)(nvrtcProgram, const char *const);
    nvrtcResult (*GetLoweredName)(nvrtcProgram, const char *const, const char **);
} gj__nvrtc;

/* One context's NVRTC: the on/off setting and the library once loaded. Safe to use from
 * several threads. */
typedef struct gj__nvrtc_loader {
    pthread_mutex_t lock;
    int enabled; /* 0 after gj_context_set_nvrtc_enabled(ctx, 0) */
    gj__nvrtc *lib;
} gj__nvrtc_loader;

void gj__nvrtc_loader_init(gj__nvrtc_loader *l);
void gj__nvrtc_loader_release(gj__nvrtc_loader *l);
/* 0: behave as if libnvrtc were absent (the API twin of GRIDJIT_NVRTC=off). */
void gj__nvrtc_set_enabled(gj__nvrtc_loader *l, int enabled);

/*
 * Loads NVRTC on first use ("libnvrtc.so.13", then other sonames; GRIDJIT_NVRTC=off, or a
 * path in GRIDJIT_NVRTC, overrides). GJ_ERROR_NO_NVRTC with a message naming what was
 * tried (or that it is disabled) when none loads. The library stays loaded, and *out
 * valid, until the loader is released. A failed load is retried by the next call.
 */
gj_status gj__nvrtc_get(gj__nvrtc_loader *l, const gj__diag *d, gj__nvrtc **out);

/* 1 when the loaded NVRTC lists sm (e.g. 90) among its supported architectures. */
int gj__nvrtc_supports(const gj__nvrtc *nvrtc, int sm);
/* "sm_75 sm_80 ...": the supported architectures (malloc()ed; NULL on OOM). */
char *gj__nvrtc_archs_text(const gj__nvrtc *nvrtc);

#endif
