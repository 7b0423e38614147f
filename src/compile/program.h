/* gj_program: one compiled (or failed) NVRTC unit, and what the cache says about it. */
#ifndef GJ_COMPILE_PROGRAM_H
#define GJ_COMPILE_PROGRAM_H

#include "gridjit.h"
#include "store/store.h"

#include <stddef.h>

struct gj_program {
    gj_binary_kind kind;
    char arch[24];
    void *binary;       /* NULL when compilation failed */
    size_t binary_size; /* for PTX this counts the terminating NUL (cuModuleLoadData reads a C string) */
    size_t n_kernels;
    char **kernel_names; /* name expressions */
    char **lowered_names;
    char *log;    /* annotated (gj__annotate_log); never NULL */
    char *source; /* never NULL */
    double compile_ms;
    /* What the disk cache did. */
    gj_cache_status cache_status;
    char key[33]; /* full key, 32 hex digits; "" when unknown */
    char config_key[33];
    gj__store_ref ref; /* hits: where the entry came from */
};

/* Allocates an empty program (all fields zero, log and source ""). NULL on OOM. */
struct gj_program *gj__program_new(void);
/* The lowered name of the name expression in prog, or NULL. */
const char *gj__program_lowered(const struct gj_program *prog, const char *expression);

#endif
