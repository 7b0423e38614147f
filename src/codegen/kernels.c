/* The table of the generated __global__ kernels (see kernels.h). */
#include "codegen/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gj__free_string_list(char **list, size_t count) {
    if (!list) {
        return;
    }
    for (size_t i = 0; i < count; ++i) {
        free(list[i]);
    }
    free(list);
}

#define GJ__KERNEL(id, suffix, pass, args, body, part, rows) \
    [id] = {suffix, pass, "gj_" args "_args", "gj_" body "_kernel", part != GJ__PART_HELPERS, part, rows}
static const gj__kernel_info kernel_table[GJ__KERNEL_COUNT] = {
    GJ__KERNEL(GJ__KERNEL_FORWARD, "forward", GJ_PASS_FORWARD, "forward", "forward", GJ__PART_FORWARD, 0),
    GJ__KERNEL(GJ__KERNEL_FORWARD_DYDX, "forward_dydx", GJ_PASS_FORWARD, "forward", "forward_dydx",
               GJ__PART_FORWARD_DYDX, 0),
    GJ__KERNEL(GJ__KERNEL_FORWARD_ROWS, "forward_rows", GJ_PASS_FORWARD, "forward", "forward_rows",
               GJ__PART_FORWARD_ROWS, 1),
    GJ__KERNEL(GJ__KERNEL_FORWARD_DYDX_ROWS, "forward_dydx_rows", GJ_PASS_FORWARD, "forward", "forward_dydx_rows",
               GJ__PART_FORWARD_DYDX_ROWS, 1),
    GJ__KERNEL(GJ__KERNEL_BACKWARD, "backward", GJ_PASS_BACKWARD, "backward", "backward", GJ__PART_BACKWARD, 0),
    GJ__KERNEL(GJ__KERNEL_BACKWARD_COARSE, "backward_coarse", GJ_PASS_BACKWARD, "backward", "backward_coarse",
               GJ__PART_BACKWARD, 0),
    GJ__KERNEL(GJ__KERNEL_BACKWARD_INPUT, "backward_input", GJ_PASS_BACKWARD, "backward", "backward_input",
               GJ__PART_BACKWARD_INPUT, 0),
    GJ__KERNEL(GJ__KERNEL_BACKWARD_INPUT_COARSE, "backward_input_coarse", GJ_PASS_BACKWARD, "backward",
               "backward_input_coarse", GJ__PART_BACKWARD_INPUT, 0),
    GJ__KERNEL(GJ__KERNEL_BACKWARD_DX, "backward_dx", GJ_PASS_BACKWARD, "backward", "backward_dx",
               GJ__PART_BACKWARD_DX, 0),
    GJ__KERNEL(GJ__KERNEL_BACKWARD_ROWS, "backward_rows", GJ_PASS_BACKWARD, "backward", "backward_rows",
               GJ__PART_BACKWARD_ROWS, 1),
    /* The same body as backward_coarse, in the rows program so that it stands alone. */
    GJ__KERNEL(GJ__KERNEL_BACKWARD_ROWS_COARSE, "backward_rows_coarse", GJ_PASS_BACKWARD, "backward",
               "backward_coarse", GJ__PART_BACKWARD_ROWS, 1),
    GJ__KERNEL(GJ__KERNEL_BACKWARD_INPUT_ROWS, "backward_input_rows", GJ_PASS_BACKWARD, "backward",
               "backward_input_rows", GJ__PART_BACKWARD_INPUT_ROWS, 1),
    GJ__KERNEL(GJ__KERNEL_BACKWARD_INPUT_ROWS_COARSE, "backward_input_rows_coarse", GJ_PASS_BACKWARD, "backward",
               "backward_input_coarse", GJ__PART_BACKWARD_INPUT_ROWS, 1),
    GJ__KERNEL(GJ__KERNEL_BACKWARD_DX_ROWS, "backward_dx_rows", GJ_PASS_BACKWARD, "backward", "backward_dx_rows",
               GJ__PART_BACKWARD_DX_ROWS, 1),
    GJ__KERNEL(GJ__KERNEL_BACKWARD_BACKWARD, "backward_backward", GJ_PASS_BACKWARD_BACKWARD, "backward_backward",
               "backward_backward", GJ__PART_BACKWARD_BACKWARD, 0),
    /* Initialisation, the fp32 -> fp16 gradient cast and dL/dx from dy/dx (a streaming
     * pass) come with every kernel set. */
    GJ__KERNEL(GJ__KERNEL_INIT_PARAMS, "init_params", GJ_PASS_ALL, "init", "init_params", GJ__PART_HELPERS, 0),
    GJ__KERNEL(GJ__KERNEL_CAST_GRADIENTS, "cast_gradients", GJ_PASS_ALL, "cast", "cast_gradients", GJ__PART_HELPERS,
               0),
    /* A helper that reads the level table (the scales of compact dy/dx). */
    [GJ__KERNEL_DX_FROM_DYDX] = {"dx_from_dydx", GJ_PASS_ALL, "gj_dx_from_dydx_args", "gj_dx_from_dydx_kernel", 1,
                                 GJ__PART_HELPERS, 0},
};
#undef GJ__KERNEL

/* The _ROWS form of each level-major kernel that has one. */
static const struct {
    gj__kernel_id plain, rows;
} rows_forms[] = {
    {GJ__KERNEL_FORWARD, GJ__KERNEL_FORWARD_ROWS},
    {GJ__KERNEL_FORWARD_DYDX, GJ__KERNEL_FORWARD_DYDX_ROWS},
    {GJ__KERNEL_BACKWARD, GJ__KERNEL_BACKWARD_ROWS},
    {GJ__KERNEL_BACKWARD_COARSE, GJ__KERNEL_BACKWARD_ROWS_COARSE},
    {GJ__KERNEL_BACKWARD_INPUT, GJ__KERNEL_BACKWARD_INPUT_ROWS},
    {GJ__KERNEL_BACKWARD_INPUT_COARSE, GJ__KERNEL_BACKWARD_INPUT_ROWS_COARSE},
    {GJ__KERNEL_BACKWARD_DX, GJ__KERNEL_BACKWARD_DX_ROWS},
};

const gj__kernel_info *gj__kernel(gj__kernel_id id) {
    return &kernel_table[id];
}

const char *gj__kernel_suffix(gj__kernel_id id) {
    return kernel_table[id].suffix;
}

gj__kernel_id gj__kernel_rows_form(gj__kernel_id id) {
    for (size_t i = 0; i < sizeof rows_forms / sizeof rows_forms[0]; ++i) {
        if (rows_forms[i].plain == id) {
            return rows_forms[i].rows;
        }
    }
    return id;
}

int gj__kernel_present(gj__kernel_id id, const gj_codegen_options *opts) {
    return (kernel_table[id].passes & opts->passes) != 0 && !kernel_table[id].rows;
}

int gj__kernel_in_unit(gj__kernel_id id, const gj_codegen_options *opts, gj__part part) {
    return part == GJ__PART_ALL ? gj__kernel_present(id, opts)
                                : kernel_table[id].part == part && gj__part_present(part, opts);
}

const char *gj__part_name(gj__part part) {
    static const char *const names[GJ__PART_COUNT] = {
        "whole",        "forward",          "forward_dydx",        "forward_rows",      "forward_dydx_rows",
        "backward",     "backward_input",   "backward_dx",         "backward_rows",     "backward_input_rows",
        "backward_dx_rows", "backward_backward", "helpers"};
    return part < GJ__PART_COUNT ? names[part] : "?";
}

uint32_t gj__part_pass(gj__part part) {
    for (int k = 0; k < GJ__KERNEL_COUNT; ++k) {
        if (kernel_table[k].part == part) {
            return kernel_table[k].passes;
        }
    }
    return GJ_PASS_ALL;
}

int gj__part_present(gj__part part, const gj_codegen_options *opts) {
    for (int k = 0; k < GJ__KERNEL_COUNT; ++k) {
        if (kernel_table[k].part == part) {
            return (kernel_table[k].passes & opts->passes) != 0 &&
                   (!kernel_table[k].rows || opts->order == GJ_ORDER_LEVEL_MAJOR);
        }
    }
    return 0;
}

void gj__kernel_expression(char *buffer, size_t size, const char *name, gj__kernel_id id) {
    snprintf(buffer, size, "&%s_%s", name, kernel_table[id].suffix);
}

char **gj__codegen_kernel_names(const gj_codegen_options *opts, gj__part part, size_t *count) {
    *count = 0;
    char **names = calloc(GJ__KERNEL_COUNT + 1, sizeof *names);
    if (!names || opts->device_functions_only) {
        return names;
    }
    for (int k = 0; k < GJ__KERNEL_COUNT; ++k) {
        if (!gj__kernel_in_unit((gj__kernel_id)k, opts, part)) {
            continue;
        }
        const size_t size = strlen(opts->name) + strlen(kernel_table[k].suffix) + 3;
        names[*count] = malloc(size);
        if (!names[*count]) {
            gj__free_string_list(names, *count);
            *count = 0;
            return NULL;
        }
        gj__kernel_expression(names[*count], size, opts->name, (gj__kernel_id)k);
        ++*count;
    }
    return names;
}

