/* The compiler as the layers above see it: NVRTC units through the disk cache. A
 * gj__compiler is a set of pointers to its context's services plus the compile settings;
 * it is safe to use from several threads. */
#ifndef GJ_COMPILE_COMPILER_H
#define GJ_COMPILE_COMPILER_H

#include "compile/arch.h"
#include "compile/nvrtc_job.h"
#include "compile/program.h"
#include "loader/nvrtc.h"
#include "model/encoding.h"
#include "store/store.h"

#include <stdatomic.h>

typedef struct gj__compiler {
    const gj__diag *diag;
    gj__nvrtc_loader *nvrtc;
    gj__store *store;
    atomic_int lineinfo; /* -1: from GRIDJIT_LINEINFO (default off) */
} gj__compiler;

void gj__compiler_init(gj__compiler *c, const gj__diag *diag, gj__nvrtc_loader *nvrtc, gj__store *store);
/* Whether -lineinfo is in force (the setting, else GRIDJIT_LINEINFO). */
int gj__compiler_lineinfo(gj__compiler *c);
/* Whether GRIDJIT_LINEINFO asks for -lineinfo (set, and neither "0" nor "off"). */
int gj__lineinfo_from_env(void);

/* What to compile, and how to say what would make it where NVRTC is missing. */
typedef struct gj__compile_request {
    gj__unit unit;
    gj__arch arch;
    const char *const *extra_options; /* the caller's NVRTC options, after gridjit's own */
    size_t n_extra_options;
    int use_cache; /* 0: neither look up nor store (gridjit compile --no-cache) */
    /* For the "without NVRTC" message: the encoding and resolved options the source was
     * generated from (NULL for user sources), and whether it is one of a module's programs
     * (made by `gridjit precompile`) or the whole unit (made by `gridjit compile`). */
    const struct gj_encoding *enc;
    const gj_codegen_options *opts;
    int module_program;
    int split; /* a whole unit of kernels: split compilation (compile/options.h) */
    int cached_only; /* a miss is GJ_ERROR_NOT_FOUND (no message), nothing compiled: is it there? */
} gj__compile_request;

/*
 * Compiles req through the disk cache: a verified entry of the full key (or, without
 * NVRTC, any entry of the configuration key) is a hit; on a miss the key is claimed so
 * that one process compiles while others wait and then hit; a fresh binary is stored.
 * The program's cache fields say what happened. Without NVRTC and without an entry:
 * GJ_ERROR_NO_NVRTC, the message naming the configuration key and the command that
 * would make the entry. Cache failures never fail the call. On GJ_ERROR_COMPILE *out
 * holds the log.
 */
gj_status gj__compile(gj__compiler *c, const gj__compile_request *req, gj_program **out);

/* The runtime found a program from the cache unusable (the driver refused it): its
 * entry is forgotten, so that the next gj__compile compiles again. */
void gj__compile_invalidate(gj__compiler *c, const gj_program *prog, const char *reason);

#endif
