/* A user's source as an NVRTC unit (docs/fusion.md): its text, one in-memory header
 * "NAME.cuh" per encoding it uses, its kernels' name expressions and extra options, all
 * copied, so that the unit can be compiled again later for another architecture. */
#ifndef GJ_COMPILE_USER_UNIT_H
#define GJ_COMPILE_USER_UNIT_H

#include "compile/compiler.h"

/* The name diagnostics give a user source that names none. */
#define GJ__USER_FILE_NAME "kernels.cu"

typedef struct gj__user_unit {
    char *source;
    char *file_name;
    gj__header *headers; /* names and texts owned */
    size_t n_headers;
    char **names;        /* name expressions */
    size_t n_names;
    char **options;
    size_t n_options;
    gj__compile_request request; /* points into the above; arch and use_cache set per compile */
} gj__user_unit;

/* Checks desc (GJ_ERROR_INVALID_ARGUMENT naming the field) and builds the unit. */
gj_status gj__user_unit_make(gj__compiler *c, const gj_source_desc *desc, gj__user_unit *out);
void gj__user_unit_free(gj__user_unit *u);
/* What NVRTC sees: each header under a "// ===== NAME =====" line, then the source.
 * malloc()ed; NULL on OOM. */
char *gj__user_unit_text(const gj__user_unit *u);

#endif
