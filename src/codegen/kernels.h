/* The __global__ kernels of a generated unit, in their fixed order. The one list: the
 * emitter, the name expressions given to NVRTC and the runtime's lookups all use it. */
#ifndef GJ_CODEGEN_KERNELS_H
#define GJ_CODEGEN_KERNELS_H

#include "gridjit.h"

#include <stddef.h>

typedef enum gj__kernel_id {
    GJ__KERNEL_FORWARD = 0,                    /* y */
    GJ__KERNEL_FORWARD_DYDX = 1,               /* y (if asked) and dy/dx */
    GJ__KERNEL_FORWARD_ROWS = 2,               /* y, level groups (point-major rows staged) */
    GJ__KERNEL_FORWARD_DYDX_ROWS = 3,          /* y and dy/dx, level groups */
    GJ__KERNEL_BACKWARD = 4,                   /* dL/dparams */
    GJ__KERNEL_BACKWARD_COARSE = 5,            /* its small levels, summed in shared memory */
    GJ__KERNEL_BACKWARD_INPUT = 6,             /* dL/dparams and dL/dx */
    GJ__KERNEL_BACKWARD_INPUT_COARSE = 7,      /* its small levels */
    GJ__KERNEL_BACKWARD_DX = 8,                /* dL/dx alone */
    GJ__KERNEL_BACKWARD_ROWS = 9,              /* dL/dparams, level groups */
    GJ__KERNEL_BACKWARD_ROWS_COARSE = 10,      /* its small levels */
    GJ__KERNEL_BACKWARD_INPUT_ROWS = 11,       /* dL/dparams and dL/dx, level groups */
    GJ__KERNEL_BACKWARD_INPUT_ROWS_COARSE = 12, /* its small levels */
    GJ__KERNEL_BACKWARD_DX_ROWS = 13,          /* dL/dx alone, level groups */
    GJ__KERNEL_BACKWARD_BACKWARD = 14,
    GJ__KERNEL_INIT_PARAMS = 15,
    GJ__KERNEL_CAST_GRADIENTS = 16,
    GJ__KERNEL_DX_FROM_DYDX = 17,              /* dL/dx from the forward's dy/dx (a helper) */
    GJ__KERNEL_COUNT = 18
} gj__kernel_id;

/* The NVRTC units of a module, one program each, compiled on first use: a kernel and the
 * kernel that does its small levels. ALL is the one unit with the kernels of the chosen
 * passes (not the _ROWS forms, below) and their device functions (gj_compile).
 *
 * A level-major pass has two forms, each its own program: one level per block (the
 * kernels above without _ROWS) and level groups (_ROWS: several levels per thread, with
 * point-major rows staged in shared memory). Most callers need one form only (feature-
 * major outputs the first, point-major rows longer than a sector the second), so each
 * compiles and holds the registers of its own code alone (docs/runtime.md, "Programs").
 * Point-major units have no _ROWS kernels, nor has the whole unit: it would compile both
 * forms for every caller of gj_compile. */
typedef enum gj__part {
    GJ__PART_ALL = 0,
    GJ__PART_FORWARD = 1,
    GJ__PART_FORWARD_DYDX = 2,
    GJ__PART_FORWARD_ROWS = 3,
    GJ__PART_FORWARD_DYDX_ROWS = 4,
    GJ__PART_BACKWARD = 5,
    GJ__PART_BACKWARD_INPUT = 6,
    GJ__PART_BACKWARD_DX = 7,
    GJ__PART_BACKWARD_ROWS = 8,
    GJ__PART_BACKWARD_INPUT_ROWS = 9,
    GJ__PART_BACKWARD_DX_ROWS = 10,
    GJ__PART_BACKWARD_BACKWARD = 11,
    GJ__PART_HELPERS = 12,
    GJ__PART_COUNT = 13
} gj__part;

/* "forward", "forward_dydx", "forward_rows", ..., "helpers"; "whole" for ALL. */
const char *gj__part_name(gj__part part);
/* The pass (GJ_PASS_* bit) a part belongs to; GJ_PASS_ALL for the helpers (every module). */
uint32_t gj__part_pass(gj__part part);
/* Whether a module generated with opts has the part: one of its passes, and for a level-
 * group (_ROWS) part, a level-major order. */
int gj__part_present(gj__part part, const gj_codegen_options *opts);

typedef struct gj__kernel_info {
    const char *suffix;    /* the kernel is NAME_<suffix> */
    uint32_t passes;       /* present when the options ask for any of these passes */
    const char *args_type; /* its argument struct (templates/kernel_args.cuh) */
    const char *body;      /* its body template (templates/kernels.cuh) */
    int uses_levels;       /* the body also takes the NAME_levels table */
    gj__part part;         /* the module program it belongs to */
    int rows;              /* a level-group (_ROWS) kernel: level-major units only */
} gj__kernel_info;

const gj__kernel_info *gj__kernel(gj__kernel_id id);
/* "forward", "backward", ...: the kernel is NAME_<suffix>. */
const char *gj__kernel_suffix(gj__kernel_id id);
/* Whether the whole unit generated with opts (and not device-functions-only) has it: the
 * kernels of its passes, without the _ROWS forms (a module compiles those in programs of
 * their own; one made from a whole program runs one level per block). */
int gj__kernel_present(gj__kernel_id id, const gj_codegen_options *opts);
/* Whether the unit `part` has it: ALL as gj__kernel_present; a module part its own kernels. */
int gj__kernel_in_unit(gj__kernel_id id, const gj_codegen_options *opts, gj__part part);
/* The level-group (_ROWS) form of a level-major kernel (itself for the others). */
gj__kernel_id gj__kernel_rows_form(gj__kernel_id id);
/* Its name expression, "&NAME_<suffix>", into buffer (truncated to size). */
void gj__kernel_expression(char *buffer, size_t size, const char *name, gj__kernel_id id);

/* Name expressions of the __global__ kernels that gj__codegen emits for opts, in the
 * order above; *count receives how many. Returns a malloc()ed array of malloc()ed
 * strings (free with gj__free_string_list); NULL on OOM. */
char **gj__codegen_kernel_names(const gj_codegen_options *opts, gj__part part, size_t *count);
void gj__free_string_list(char **list, size_t count);

#endif
