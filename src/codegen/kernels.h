/* The __global__ kernels of a generated unit, in their fixed order. The one list: the
 * emitter, the name expressions given to NVRTC and the runtime's lookups all use it. */
#ifndef GJ_CODEGEN_KERNELS_H
#define GJ_CODEGEN_KERNELS_H

#include "gridjit.h"

#include <stddef.h>

typedef enum gj__kernel_id {
    GJ__KERNEL_FORWARD = 0,               /* y */
    GJ__KERNEL_FORWARD_DYDX = 1,          /* y (if asked) and dy/dx */
    GJ__KERNEL_BACKWARD = 2,              /* dL/dparams */
    GJ__KERNEL_BACKWARD_COARSE = 3,       /* its small levels, summed in shared memory */
    GJ__KERNEL_BACKWARD_INPUT = 4,        /* dL/dparams and dL/dx */
    GJ__KERNEL_BACKWARD_INPUT_COARSE = 5, /* its small levels */
    GJ__KERNEL_BACKWARD_DX = 6,           /* dL/dx alone */
    GJ__KERNEL_BACKWARD_BACKWARD = 7,
    GJ__KERNEL_INIT_PARAMS = 8,
    GJ__KERNEL_CAST_GRADIENTS = 9,
    GJ__KERNEL_COUNT = 10
} gj__kernel_id;

/* The NVRTC units of a module, one program each, compiled on first use: a kernel and the
 * kernel that does its small levels. ALL is the one unit with every kernel of the chosen
 * passes and their device functions (gj_compile). */
typedef enum gj__part {
    GJ__PART_ALL = 0,
    GJ__PART_FORWARD = 1,
    GJ__PART_FORWARD_DYDX = 2,
    GJ__PART_BACKWARD = 3,
    GJ__PART_BACKWARD_INPUT = 4,
    GJ__PART_BACKWARD_DX = 5,
    GJ__PART_BACKWARD_BACKWARD = 6,
    GJ__PART_HELPERS = 7,
    GJ__PART_COUNT = 8
} gj__part;

/* "forward", "forward_dydx", ..., "helpers"; "whole" for ALL. */
const char *gj__part_name(gj__part part);
/* The pass (GJ_PASS_* bit) a part belongs to; GJ_PASS_ALL for the helpers (every module). */
uint32_t gj__part_pass(gj__part part);

typedef struct gj__kernel_info {
    const char *suffix;    /* the kernel is NAME_<suffix> */
    uint32_t passes;       /* present when the options ask for any of these passes */
    const char *args_type; /* its argument struct (templates/kernel_args.cuh) */
    const char *body;      /* its body template (templates/kernels.cuh) */
    int uses_levels;       /* the body also takes the NAME_levels table */
    gj__part part;         /* the module program it belongs to */
} gj__kernel_info;

const gj__kernel_info *gj__kernel(gj__kernel_id id);
/* "forward", "backward", ...: the kernel is NAME_<suffix>. */
const char *gj__kernel_suffix(gj__kernel_id id);
/* Whether a unit generated with these passes (and not device-functions-only) has it. */
int gj__kernel_present(gj__kernel_id id, uint32_t passes);
/* Whether the unit `part` has it: ALL as gj__kernel_present; a module part its own kernels. */
int gj__kernel_in_unit(gj__kernel_id id, uint32_t passes, gj__part part);
/* Its name expression, "&NAME_<suffix>", into buffer (truncated to size). */
void gj__kernel_expression(char *buffer, size_t size, const char *name, gj__kernel_id id);

/* Name expressions of the __global__ kernels that gj__codegen emits for opts, in the
 * order above; *count receives how many. Returns a malloc()ed array of malloc()ed
 * strings (free with gj__free_string_list); NULL on OOM. */
char **gj__codegen_kernel_names(const gj_codegen_options *opts, gj__part part, size_t *count);
void gj__free_string_list(char **list, size_t count);

#endif
