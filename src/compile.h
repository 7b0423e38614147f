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

/* GJ_ERROR_UNSUPPORTED_ARCH with a message listing the accepted forms when malformed;
 * GJ_ERROR_INVALID_ARGUMENT when text is NULL. Whether NVRTC supports it is checked
 * at compile time. ctx may be NULL. */
gj_status gj__arch_parse(gj_context *ctx, const char *text, gj__arch *out);

/* The name NVRTC gives the translation unit; its diagnostics read "gridjit.cu(LINE): ...". */
#define GJ__PROGRAM_NAME "gridjit.cu"

/* Room that gj__compile_options needs: entries (with the NULL) and buffer bytes. */
#define GJ__MAX_COMPILE_OPTIONS 8
#define GJ__COMPILE_OPTIONS_BUFFER 64

/* The NVRTC options for arch, NULL-terminated, in the one place they are stated.
 * Writes at most max entries into options (pointers to static or arch->name-derived
 * storage in buffer). Returns the count, or 0 when max or buffer_size is too small. */
size_t gj__compile_options(const gj__arch *arch, const char **options, size_t max, char *buffer, size_t buffer_size);

/* Appends the options for an architecture named arch_name (not parsed: "<target>" works),
 * one per line, each after prefix. */
struct gj__strbuf;
void gj__append_compile_options(struct gj__strbuf *sb, const char *arch_name, const char *prefix);

struct gj_program {
    gj_binary_kind kind;
    char arch[24];
    void *binary;       /* NULL when compilation failed */
    size_t binary_size; /* for PTX this counts the terminating NUL (cuModuleLoadData reads a C string) */
    size_t n_kernels;
    char **kernel_names;  /* name expressions */
    char **lowered_names;
    char *log;    /* annotated (gj__annotate_log); never NULL */
    char *source; /* never NULL */
    double compile_ms;
    gj__cache_tag cache; /* filled by the disk cache (src/cache.c) */
};

/* Allocates an empty program (all fields zero, log ""). NULL on OOM. */
struct gj_program *gj__program_new(void);

/* The log with, after each "gridjit.cu(LINE): error" (or warning) diagnostic, the
 * numbered source lines around LINE, the line itself marked with '>'. malloc()ed;
 * NULL on OOM. log and source may be NULL (taken as ""). */
char *gj__annotate_log(const char *log, const char *source);

/* Source lines shown before and after the line a diagnostic names. */
#define GJ__LOG_CONTEXT_LINES 3

#endif
