/* CUDA source generation for an encoding (SPEC §7). */
#ifndef GJ_CODEGEN_H
#define GJ_CODEGEN_H

#include "encoding.h"

/* Name expressions of the __global__ kernels that gj__codegen emits for opts, in a
 * fixed order; *count receives how many. Each is "&NAME_kernel_suffix". Returns a
 * malloc()ed array of malloc()ed strings (free with gj__free_string_list). */
char **gj__codegen_kernel_names(const gj__config *config, const gj_codegen_options *opts, size_t *count);
void gj__free_string_list(char **list, size_t count);

/* The complete translation unit (see gj_encoding_generate). NULL on OOM. */
char *gj__codegen(const struct gj_encoding *enc, const gj_codegen_options *opts);

/* Fills unset (zero) fields of opts with defaults and checks them; GJ_ERROR_INVALID_ARGUMENT
 * with a message otherwise. */
gj_status gj__codegen_options_resolve(gj_context *ctx, const gj_codegen_options *in, gj_codegen_options *out);

#endif
