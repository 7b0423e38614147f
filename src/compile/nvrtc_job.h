/* One NVRTC compilation: a unit (source, in-memory headers, name expressions) for one
 * architecture, with the NVRTC of the caller's loader. Thread-safe: NVRTC 13 compiles
 * programs concurrently in one process. */
#ifndef GJ_COMPILE_NVRTC_JOB_H
#define GJ_COMPILE_NVRTC_JOB_H

#include "compile/arch.h"
#include "loader/nvrtc.h"

#include <stddef.h>

/* An in-memory header the source may #include "name". */
typedef struct gj__header {
    const char *name;
    const char *text;
} gj__header;

/* What NVRTC compiles. */
typedef struct gj__unit {
    const char *source;
    const char *file_name; /* the name diagnostics give it, e.g. "gridjit.cu" */
    const gj__header *headers;
    size_t n_headers;
    const char *const *names; /* name expressions (kernels to look up) */
    size_t n_names;
} gj__unit;

/* Compiles u for arch with the given options (gj__compile_options). On success *out holds
 * the binary and the lowered names; on GJ_ERROR_COMPILE it holds only the annotated log
 * (and the message on d names the first error); on other errors *out is NULL. */
gj_status gj__nvrtc_compile(const gj__diag *d, const gj__nvrtc *nv, const gj__unit *u, const gj__arch *arch,
                            const char *const *options, size_t n_options, struct gj_program **out);

/* GJ_ERROR_UNSUPPORTED_ARCH naming the supported ones unless nv knows arch. */
gj_status gj__nvrtc_check_arch(const gj__diag *d, const gj__nvrtc *nv, const gj__arch *arch);

#endif
