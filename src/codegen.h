/* CUDA source generation for an encoding (SPEC §7). */
#ifndef GJ_CODEGEN_H
#define GJ_CODEGEN_H

#include "encoding.h"

/* The __global__ kernels of a generated unit, in their fixed order. The one list: the
 * emitter, the name expressions given to NVRTC and the runtime's lookups all use it. */
typedef enum gj__kernel_id {
    GJ__KERNEL_FORWARD = 0,
    GJ__KERNEL_BACKWARD = 1,
    GJ__KERNEL_BACKWARD_COARSE = 2,
    GJ__KERNEL_BACKWARD_BACKWARD = 3,
    GJ__KERNEL_INIT_PARAMS = 4,
    GJ__KERNEL_CAST_GRADIENTS = 5,
    GJ__KERNEL_COUNT = 6
} gj__kernel_id;

typedef struct gj__kernel_info {
    const char *suffix;    /* the kernel is NAME_<suffix> */
    uint32_t passes;       /* present when the options ask for any of these passes */
    const char *args_type; /* its argument struct (templates/kernel_args.cuh) */
    const char *body;      /* its body template (templates/kernels.cuh) */
    int uses_levels;       /* the body also takes the NAME_levels table */
} gj__kernel_info;

const gj__kernel_info *gj__kernel(gj__kernel_id id);
/* "forward", "backward", ...: the kernel is NAME_<suffix>. */
const char *gj__kernel_suffix(gj__kernel_id id);
/* Whether a unit generated with these passes (and not device-functions-only) has it. */
int gj__kernel_present(gj__kernel_id id, uint32_t passes);
/* Its name expression, "&NAME_<suffix>", into buffer (truncated to size). */
void gj__kernel_expression(char *buffer, size_t size, const char *name, gj__kernel_id id);

/* Name expressions of the __global__ kernels that gj__codegen emits for opts, in the
 * order above; *count receives how many. Returns a malloc()ed array of malloc()ed
 * strings (free with gj__free_string_list). */
char **gj__codegen_kernel_names(const gj__config *config, const gj_codegen_options *opts, size_t *count);
void gj__free_string_list(char **list, size_t count);

/* The complete translation unit (see gj_encoding_generate). NULL on OOM. */
char *gj__codegen(const struct gj_encoding *enc, const gj_codegen_options *opts);

/* Fills unset (zero) fields of opts with defaults and checks them; GJ_ERROR_INVALID_ARGUMENT
 * with a message otherwise. */
gj_status gj__codegen_options_resolve(gj_context *ctx, const gj_codegen_options *in, gj_codegen_options *out);

#endif
