/*
 * CUDA source generation (SPEC §7).
 *
 * The output is one self-contained translation unit:
 *   1. a comment block: gridjit version, canonical configuration, layout summary,
 *      the compile options;
 *   2. the templates (prelude, hashes, per-level work, and for kernels their bodies);
 *   3. for the encoding NAME: a configuration struct, NAME_in_t / NAME_out_t, one
 *      device function per pass with the levels unrolled and every per-level
 *      constant written as a literal, and (unless device-functions-only) the level
 *      table used by the kernels and the __global__ kernels.
 * Everything is printed with fixed formats, so equal inputs give equal bytes.
 */
#include "codegen.h"

#include "codegen_emit.h"
#include "context.h"
#include "strbuf.h"
#include "templates.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GJ__DEFAULT_NAME "gj_encode"
#define GJ__MAX_NAME 64

void gj_codegen_options_init(gj_codegen_options *opts) {
    if (!opts) {
        return;
    }
    memset(opts, 0, sizeof *opts);
    opts->passes = GJ_PASS_ALL;
    opts->output_width_multiple = 1;
    opts->name = GJ__DEFAULT_NAME;
    opts->block_size = 256;
    opts->points_per_thread = 1;
    opts->order = GJ_ORDER_LEVEL_MAJOR;
}

static int is_identifier(const char *name) {
    if (!name[0] || !(isalpha((unsigned char)name[0]) || name[0] == '_')) {
        return 0;
    }
    for (const char *p = name; *p; ++p) {
        if (!(isalnum((unsigned char)*p) || *p == '_')) {
            return 0;
        }
    }
    return 1;
}

gj_status gj__codegen_options_resolve(gj_context *ctx, const gj_codegen_options *in, gj_codegen_options *out) {
    gj_codegen_options_init(out);
    if (!in) {
        return GJ_OK;
    }
    *out = *in;
    if (out->passes == 0) {
        out->passes = GJ_PASS_ALL;
    }
    if (out->passes & ~(uint32_t)GJ_PASS_ALL) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "passes: unknown pass bits 0x%x (allowed: forward 1, backward 2, backward_backward 4)",
                        out->passes & ~(uint32_t)GJ_PASS_ALL);
    }
    if (out->output_width_multiple == 0) {
        out->output_width_multiple = 1;
    }
    if (out->output_width_multiple > 1024) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "output_width_multiple: must be at most 1024 (got %u)",
                        out->output_width_multiple);
    }
    if (!out->name) {
        out->name = GJ__DEFAULT_NAME;
    }
    if (!is_identifier(out->name) || strlen(out->name) > GJ__MAX_NAME) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT,
                        "name: must be a C identifier of at most %d characters (got \"%.80s\")", GJ__MAX_NAME, out->name);
    }
    if (out->block_size == 0) {
        out->block_size = 256;
    }
    if (out->block_size % 32 != 0 || out->block_size > 1024) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "block_size: must be a multiple of 32 from 32 to 1024 (got %u)",
                        out->block_size);
    }
    if (out->points_per_thread == 0) {
        out->points_per_thread = 1;
    }
    if (out->points_per_thread > 16) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "points_per_thread: must be 1 to 16 (got %u)", out->points_per_thread);
    }
    if (out->order != GJ_ORDER_LEVEL_MAJOR && out->order != GJ_ORDER_POINT_MAJOR) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "order: must be level-major (0) or point-major (1) (got %d)",
                        (int)out->order);
    }
    return GJ_OK;
}

void gj__free_string_list(char **list, size_t count) {
    if (!list) {
        return;
    }
    for (size_t i = 0; i < count; ++i) {
        free(list[i]);
    }
    free(list);
}

static const gj__kernel_info kernel_table[GJ__KERNEL_COUNT] = {
    [GJ__KERNEL_FORWARD] = {"forward", GJ_PASS_FORWARD, "gj_forward_args", "gj_forward_kernel", 1},
    [GJ__KERNEL_BACKWARD] = {"backward", GJ_PASS_BACKWARD, "gj_backward_args", "gj_backward_kernel", 1},
    [GJ__KERNEL_BACKWARD_COARSE] = {"backward_coarse", GJ_PASS_BACKWARD, "gj_backward_args", "gj_backward_coarse_kernel", 1},
    [GJ__KERNEL_BACKWARD_BACKWARD] = {"backward_backward", GJ_PASS_BACKWARD_BACKWARD, "gj_backward_backward_args",
                                      "gj_backward_backward_kernel", 1},
    /* Initialisation and the fp32 -> fp16 gradient cast come with every kernel set. */
    [GJ__KERNEL_INIT_PARAMS] = {"init_params", GJ_PASS_ALL, "gj_init_args", "gj_init_kernel", 0},
    [GJ__KERNEL_CAST_GRADIENTS] = {"cast_gradients", GJ_PASS_ALL, "gj_cast_args", "gj_cast_kernel", 0},
};

const gj__kernel_info *gj__kernel(gj__kernel_id id) {
    return &kernel_table[id];
}

const char *gj__kernel_suffix(gj__kernel_id id) {
    return kernel_table[id].suffix;
}

int gj__kernel_present(gj__kernel_id id, uint32_t passes) {
    return (kernel_table[id].passes & passes) != 0;
}

void gj__kernel_expression(char *buffer, size_t size, const char *name, gj__kernel_id id) {
    snprintf(buffer, size, "&%s_%s", name, kernel_table[id].suffix);
}

char **gj__codegen_kernel_names(const gj__config *config, const gj_codegen_options *opts, size_t *count) {
    (void)config;
    *count = 0;
    char **names = calloc(GJ__KERNEL_COUNT + 1, sizeof *names);
    if (!names || opts->device_functions_only) {
        return names;
    }
    for (int k = 0; k < GJ__KERNEL_COUNT; ++k) {
        if (!gj__kernel_present((gj__kernel_id)k, opts->passes)) {
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

static void append_template(gj__strbuf *sb, const char *name) {
    const gj__template *tpl = gj__template_find(name);
    gj__sb_printf(sb, "// ===== templates/%s =====\n", name);
    if (tpl) {
        gj__sb_append_n(sb, tpl->text, tpl->size);
    } else {
        sb->failed = 1; /* a build without the template is broken: fail loudly */
    }
    gj__sb_append(sb, "\n");
}

char *gj__codegen(const struct gj_encoding *enc, const gj_codegen_options *opts) {
    gj__strbuf sb;
    gj__sb_init(&sb);
    gj__emit_header(&sb, enc, opts);
    append_template(&sb, "prelude.cuh");
    append_template(&sb, "hash.cuh");
    append_template(&sb, "grid_level.cuh");
    if (!opts->device_functions_only) {
        append_template(&sb, "kernel_args.cuh");
        append_template(&sb, "kernels.cuh");
    }
    gj__emit_types(&sb, enc, opts);
    if (opts->passes & GJ_PASS_FORWARD) {
        gj__emit_forward_function(&sb, enc, opts);
    }
    if (opts->passes & GJ_PASS_BACKWARD) {
        gj__emit_backward_function(&sb, enc, opts);
    }
    if (opts->passes & GJ_PASS_BACKWARD_BACKWARD) {
        gj__emit_backward_backward_function(&sb, enc, opts);
    }
    if (!opts->device_functions_only) {
        gj__emit_level_table(&sb, enc, opts);
        gj__emit_kernels(&sb, enc, opts);
    }
    return gj__sb_take(&sb);
}

gj_status gj_encoding_generate(gj_context *ctx, const gj_encoding *enc, const gj_codegen_options *opts, char **source,
                               size_t *length) {
    if (source) {
        *source = NULL;
    }
    if (!ctx || !enc || !source) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "gj_encoding_generate: ctx, enc and source must not be NULL");
    }
    gj_codegen_options resolved;
    gj_status status = gj__codegen_options_resolve(ctx, opts, &resolved);
    if (status != GJ_OK) {
        return status;
    }
    *source = gj__codegen(enc, &resolved);
    if (!*source) {
        return gj__fail(ctx, GJ_ERROR_OUT_OF_MEMORY, "out of memory while generating source");
    }
    if (length) {
        *length = strlen(*source);
    }
    return GJ_OK;
}
