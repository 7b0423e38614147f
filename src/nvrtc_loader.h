/* libnvrtc loaded with dlopen(): the entry points gridjit uses, resolved once per context. */
#ifndef GJ_NVRTC_LOADER_H
#define GJ_NVRTC_LOADER_H

#include "context.h"

#include <nvrtc.h>

typedef struct gj__nvrtc {
    void *handle;
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

/*
 * Loads NVRTC into ctx->nvrtc on first use ("libnvrtc.so.13", then other sonames;
 * GRIDJIT_NVRTC=off, or a path in GRIDJIT_NVRTC, overrides). GJ_ERROR_NO_NVRTC with
 * a message naming what was tried when none loads.
 */
gj_status gj__nvrtc_get(gj_context *ctx, gj__nvrtc **out);
void gj__nvrtc_release(struct gj__nvrtc *nvrtc);

/* 1 when the loaded NVRTC lists sm (e.g. 90) among its supported architectures. */
int gj__nvrtc_supports(const gj__nvrtc *nvrtc, int sm);

#endif
