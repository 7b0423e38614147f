/* NVRTC compilation of generated (or arbitrary) source into a gj_program. */
#ifndef GJ_COMPILE_H
#define GJ_COMPILE_H

#include "cache_tag.h"
#include "context.h"

#include <stddef.h>

/* A parsed target architecture: "sm_90a" -> {90, 'a', cubin}; "compute_80" -> {80, 0, ptx}. */
typedef struct gj__arch {
    int sm;           /* e.g. 90 */
    char suffix;      /* 0, 'a' or 'f' */
    gj_binary_kind kind;
    char name[24];    /* canonical spelling, e.g. "sm_90a" */
} gj__arch;

/* GJ_ERROR_UNSUPPORTED_ARCH with a message listing the accepted forms when malformed. */
gj_status gj__arch_parse(gj_context *ctx, const char *text, gj__arch *out);

/* The NVRTC options for arch, NULL-terminated, in the one place they are stated.
 * Writes at most max entries into options (pointers to static or arch->name-derived
 * storage in buffer). Returns the count. */
size_t gj__compile_options(const gj__arch *arch, const char **options, size_t max, char *buffer, size_t buffer_size);

struct gj_program {
    gj_binary_kind kind;
    char arch[24];
    void *binary;
    size_t binary_size;
    size_t n_kernels;
    char **kernel_names;  /* name expressions */
    char **lowered_names;
    char *log;
    char *source;
    double compile_ms;
    gj__cache_tag cache; /* filled by the disk cache (src/cache.c) */
};

/* Allocates an empty program (all fields zero, log ""). NULL on OOM. */
struct gj_program *gj__program_new(void);

/* The log with, after each "(LINE): error" line, the numbered source lines around it. */
char *gj__annotate_log(const char *log, const char *source);

#endif
