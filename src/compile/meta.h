/* What a cache entry says about its compiled program (the store's opaque metadata):
 * binary kind, target, the gridjit and NVRTC that made it, each kernel's name
 * expression with its lowered name, and the compiler's log. */
#ifndef GJ_COMPILE_META_H
#define GJ_COMPILE_META_H

#include "compile/program.h"
#include "loader/nvrtc.h"

#include <stddef.h>
#include <stdint.h>

typedef struct gj__program_meta {
    gj_binary_kind kind;
    char *target;
    char *gridjit_version;
    gj__nvrtc_identity nvrtc;
    size_t n_kernels;
    char **names;   /* name expressions */
    char **lowered; /* lowered names */
    char *log;      /* the annotated compiler log (warnings survive a cache hit) */
} gj__program_meta;

/* Encodes prog's metadata (prog must hold a binary and every lowered name). malloc()ed;
 * NULL on OOM or when prog lacks names. */
uint8_t *gj__meta_encode(const struct gj_program *prog, const gj__nvrtc_identity *nvrtc, size_t *size);
/* Decodes and checks bytes from a cache entry: 0, or -1 when malformed (or out of
 * memory); *out is then zeroed. Never reads outside [bytes, bytes + size). */
int gj__meta_decode(const void *bytes, size_t size, gj__program_meta *out);
void gj__meta_free(gj__program_meta *meta);

/* "cubin", "ptx". */
const char *gj__binary_kind_name(gj_binary_kind kind);

#endif
