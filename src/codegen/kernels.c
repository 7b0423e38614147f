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

#define GJ__KERNEL(id, suffix, pass, args, part) \
    [id] = {suffix, pass, "gj_" args "_args", "gj_" suffix "_kernel", part != GJ__PART_HELPERS, part}
static const gj__kernel_info kernel_table[GJ__KERNEL_COUNT] = {
    GJ__KERNEL(GJ__KERNEL_FORWARD, "forward", GJ_PASS_FORWARD, "forward", GJ__PART_FORWARD),
    GJ__KERNEL(GJ__KERNEL_FORWARD_DYDX, "forward_dydx", GJ_PASS_FORWARD, "forward", GJ__PART_FORWARD_DYDX),
    GJ__KERNEL(GJ__KERNEL_BACKWARD, "backward", GJ_PASS_BACKWARD, "backward", GJ__PART_BACKWARD),
    GJ__KERNEL(GJ__KERNEL_BACKWARD_COARSE, "backward_coarse", GJ_PASS_BACKWARD, "backward", GJ__PART_BACKWARD),
    GJ__KERNEL(GJ__KERNEL_BACKWARD_INPUT, "backward_input", GJ_PASS_BACKWARD, "backward", GJ__PART_BACKWARD_INPUT),
    GJ__KERNEL(GJ__KERNEL_BACKWARD_INPUT_COARSE, "backward_input_coarse", GJ_PASS_BACKWARD, "backward",
               GJ__PART_BACKWARD_INPUT),
    GJ__KERNEL(GJ__KERNEL_BACKWARD_DX, "backward_dx", GJ_PASS_BACKWARD, "backward", GJ__PART_BACKWARD_DX),
    GJ__KERNEL(GJ__KERNEL_BACKWARD_BACKWARD, "backward_backward", GJ_PASS_BACKWARD_BACKWARD, "backward_backward",
               GJ__PART_BACKWARD_BACKWARD),
    /* Initialisation and the fp32 -> fp16 gradient cast come with every kernel set. */
    GJ__KERNEL(GJ__KERNEL_INIT_PARAMS, "init_params", GJ_PASS_ALL, "init", GJ__PART_HELPERS),
    GJ__KERNEL(GJ__KERNEL_CAST_GRADIENTS, "cast_gradients", GJ_PASS_ALL, "cast", GJ__PART_HELPERS),
};
#undef GJ__KERNEL

const gj__kernel_info *gj__kernel(gj__kernel_id id) {
    return &kernel_table[id];
}

const char *gj__kernel_suffix(gj__kernel_id id) {
    return kernel_table[id].suffix;
}

int gj__kernel_present(gj__kernel_id id, uint32_t passes) {
    return (kernel_table[id].passes & passes) != 0;
}

int gj__kernel_in_unit(gj__kernel_id id, uint32_t passes, gj__part part) {
    return part == GJ__PART_ALL ? gj__kernel_present(id, passes) : kernel_table[id].part == part;
}

const char *gj__part_name(gj__part part) {
    static const char *const names[GJ__PART_COUNT] = {"whole",       "forward",     "forward_dydx",
                                                      "backward",    "backward_input", "backward_dx",
                                                      "backward_backward", "helpers"};
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
        if (!gj__kernel_in_unit((gj__kernel_id)k, opts->passes, part)) {
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

