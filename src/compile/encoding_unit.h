/* The NVRTC unit of an encoding: its generated source (stating the compile options in
 * force) and its kernels' name expressions. */
#ifndef GJ_COMPILE_ENCODING_UNIT_H
#define GJ_COMPILE_ENCODING_UNIT_H

#include "codegen/kernels.h"
#include "compile/compiler.h"

/* The name NVRTC gives a generated unit; its diagnostics read "gridjit.cu(LINE): ...". */
#define GJ__PROGRAM_NAME "gridjit.cu"

typedef struct gj__encoding_unit {
    gj__part part;
    char *source;
    char **names;
    size_t n_names;
    gj__compile_request request; /* points into the above */
} gj__encoding_unit;

/* The generated source of enc for resolved opts and part (gj__codegen), as it is
 * compiled (free()). NULL on OOM. */
char *gj__encoding_source(gj__compiler *c, const struct gj_encoding *enc, const gj_codegen_options *opts,
                          gj__part part);

/* A compile request for enc, resolved opts and part. GJ_ERROR_OUT_OF_MEMORY with a
 * message otherwise. Free with gj__encoding_unit_free. */
gj_status gj__encoding_unit_make(gj__compiler *c, const struct gj_encoding *enc, const gj_codegen_options *opts,
                                 gj__part part, const gj__arch *arch, int use_cache, gj__encoding_unit *out);
void gj__encoding_unit_free(gj__encoding_unit *u);

#endif
