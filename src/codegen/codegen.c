/*
 * CUDA source generation (docs/design.md §7).
 *
 * The output is one self-contained translation unit:
 *   1. a comment block: gridjit version, canonical configuration, layout summary,
 *      the compile options;
 *   2. the templates (prelude, hashes, per-level work, and for kernels their bodies);
 *   3. for the encoding NAME: a configuration struct, NAME_in_t / NAME_out_t, the level
 *      table (constant memory) that the kernels and the looping device functions read,
 *      one device function per pass (looping over the levels, or with unroll_levels the
 *      levels unrolled and every per-level constant a literal), and (unless
 *      device-functions-only) the __global__ kernels.
 * A module's programs (parts) are the same unit with one part's kernels and no device
 * functions, so that each compiles on its own.
 * Everything is printed with fixed formats, so equal inputs give equal bytes.
 */
#include "codegen/codegen.h"

#include "codegen/emit.h"

#include <stdlib.h>

char *gj__codegen(const struct gj_encoding *enc, const gj_codegen_options *opts, gj__part part,
                  const char *options_text) {
    gj__strbuf sb;
    gj__sb_init(&sb);
    gj__emit_header(&sb, enc, opts, part, options_text);
    gj__emit_template(&sb, "prelude.cuh");
    gj__emit_template(&sb, "hash.cuh");
    gj__emit_template(&sb, "grid_level.cuh");
    if (!opts->device_functions_only) {
        gj__emit_template(&sb, "kernel_args.cuh");
        gj__emit_template(&sb, "kernels.cuh");
    }
    gj__emit_types(&sb, enc, opts);
    /* A module's program holds its kernels only: the device functions are for fusion. */
    const uint32_t functions = part == GJ__PART_ALL ? opts->passes : 0;
    /* The level table serves the kernels and the looping device functions. */
    if (!opts->device_functions_only || (functions && !opts->unroll_levels)) {
        gj__emit_level_table(&sb, enc, opts);
    }
    if (functions & GJ_PASS_FORWARD) {
        gj__emit_forward_function(&sb, enc, opts);
    }
    if (functions & GJ_PASS_BACKWARD) {
        gj__emit_backward_function(&sb, enc, opts);
    }
    if (functions & GJ_PASS_BACKWARD_BACKWARD) {
        gj__emit_backward_backward_function(&sb, enc, opts);
    }
    if (!opts->device_functions_only) {
        gj__emit_kernels(&sb, enc, opts, part);
    }
    return gj__sb_take(&sb);
}

