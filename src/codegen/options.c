/* Code-generation options: defaults and checks. */
#include "codegen/options.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>

#define GJ__DEFAULT_NAME "gj_encode"
#define GJ__MAX_NAME 64
/* The size of the struct as first published (every field up to order). */
#define GJ__CODEGEN_OPTIONS_V1_SIZE (offsetof(gj_codegen_options, order) + sizeof(gj_order))

void gj_codegen_options_init(gj_codegen_options *opts) {
    if (!opts) {
        return;
    }
    memset(opts, 0, sizeof *opts);
    opts->struct_size = (uint32_t)sizeof *opts;
    opts->passes = GJ_PASS_ALL;
    opts->output_width_multiple = 1;
    opts->name = GJ__DEFAULT_NAME;
    opts->block_size = 256;
    opts->points_per_thread = 1;
    opts->order = GJ_ORDER_LEVEL_MAJOR;
}

int gj__is_identifier(const char *name) {
    if (!name || !name[0] || !(isalpha((unsigned char)name[0]) || name[0] == '_')) {
        return 0;
    }
    for (const char *p = name; *p; ++p) {
        if (!(isalnum((unsigned char)*p) || *p == '_')) {
            return 0;
        }
    }
    return 1;
}

gj_status gj__codegen_options_resolve(const gj__diag *d, const gj_codegen_options *in, gj_codegen_options *out) {
    gj_codegen_options_init(out);
    if (!in) {
        return GJ_OK;
    }
    /* A caller built against an older header passes a smaller struct: its fields are
     * taken, the newer ones keep their defaults. One that was never initialised (or
     * comes from a newer header) cannot be read safely. */
    if (in->struct_size < GJ__CODEGEN_OPTIONS_V1_SIZE || in->struct_size > sizeof *out) {
        return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT,
                        "gj_codegen_options: struct_size is %u (expected %zu): prepare the struct with "
                        "gj_codegen_options_init() before setting fields",
                        in->struct_size, sizeof *out);
    }
    memcpy(out, in, in->struct_size);
    out->struct_size = (uint32_t)sizeof *out;
    if (out->passes == 0) {
        out->passes = GJ_PASS_ALL;
    }
    if (out->passes & ~(uint32_t)GJ_PASS_ALL) {
        return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT, "passes: unknown pass bits 0x%x (allowed: forward 1, backward 2, backward_backward 4)",
                        out->passes & ~(uint32_t)GJ_PASS_ALL);
    }
    if (out->output_width_multiple == 0) {
        out->output_width_multiple = 1;
    }
    if (out->output_width_multiple > 1024) {
        return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT, "output_width_multiple: must be at most 1024 (got %u)",
                        out->output_width_multiple);
    }
    if (!out->name) {
        out->name = GJ__DEFAULT_NAME;
    }
    if (!gj__is_identifier(out->name) || strlen(out->name) > GJ__MAX_NAME) {
        return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT,
                        "name: must be a C identifier of at most %d characters (got \"%.80s\")", GJ__MAX_NAME, out->name);
    }
    if (out->block_size == 0) {
        out->block_size = 256;
    }
    if (out->block_size % 32 != 0 || out->block_size > 1024) {
        return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT, "block_size: must be a multiple of 32 from 32 to 1024 (got %u)",
                        out->block_size);
    }
    if (out->points_per_thread == 0) {
        out->points_per_thread = 1;
    }
    if (out->points_per_thread > 16) {
        return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT, "points_per_thread: must be 1 to 16 (got %u)", out->points_per_thread);
    }
    if (out->order != GJ_ORDER_LEVEL_MAJOR && out->order != GJ_ORDER_POINT_MAJOR) {
        return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT, "order: must be level-major (0) or point-major (1) (got %d)",
                        (int)out->order);
    }
    if (out->gradients_fp32 != 0 && out->gradients_fp32 != 1) {
        return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT,
                        "gradients_fp32: must be 0 (the precision's default) or 1 (fp32 gradients) (got %d)",
                        out->gradients_fp32);
    }
    if (out->levels_per_thread > 128) {
        return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT, "levels_per_thread: must be 0 (chosen per launch) to 128 (got %u)",
                        out->levels_per_thread);
    }
    return GJ_OK;
}

