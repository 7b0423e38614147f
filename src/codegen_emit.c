/* Emitters for the generated translation unit (see codegen.c for the order). */
#include "codegen_emit.h"

#include "compile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const index_mode_macro[] = {"GJ_INDEX_DENSE", "GJ_INDEX_HASH", "GJ_INDEX_WRAP"};
static const char *const index_mode_words[] = {"dense", "hashed", "dense, wrapped modulo the table"};
static const char *const hash_macro[] = {"GJ_HASH_PRIME", "GJ_HASH_COHERENT_PRIME", "GJ_HASH_REVERSED_PRIME",
                                         "GJ_HASH_RNG", "GJ_HASH_BASE_CONVERT"};
static const char *const interp_macro[] = {"GJ_INTERP_NEAREST", "GJ_INTERP_LINEAR", "GJ_INTERP_SMOOTHSTEP"};

/* Level-major backward sums a level in shared memory when its gradients fit in the 48 KiB
 * that every launch may take without opting in. */
#define GJ__SMALL_LEVEL_MAX_FLOATS 12288u

int gj__level_is_small(const gj__config *config, const gj__level *level, const gj_codegen_options *opts) {
    return opts->order == GJ_ORDER_LEVEL_MAJOR &&
           (uint64_t)level->entries * config->n_features_per_level <= GJ__SMALL_LEVEL_MAX_FLOATS;
}

uint32_t gj__small_level_floats(const struct gj_encoding *enc, const gj_codegen_options *opts) {
    uint32_t most = 0;
    for (uint32_t l = 0; l < enc->layout.n_levels; ++l) {
        const gj__level *level = &enc->layout.levels[l];
        if (gj__level_is_small(&enc->config, level, opts) && level->entries * enc->config.n_features_per_level > most) {
            most = level->entries * enc->config.n_features_per_level;
        }
    }
    return most;
}

uint32_t gj__padded_width(const struct gj_encoding *enc, const gj_codegen_options *opts) {
    const uint32_t n = enc->layout.n_output_dims, m = opts->output_width_multiple ? opts->output_width_multiple : 1;
    return (n + m - 1) / m * m;
}

int gj__grad_is_fp32(const gj__config *config) {
    return config->precision == GJ_PRECISION_FP32 || config->n_features_per_level == 1;
}

uint32_t gj__fixed_point_cell(float scale) {
    const float q = 4294967296.0f / scale;
    uint32_t cell;
    if (!(q > 0.0f)) {
        cell = 0; /* negative or NaN: cvt.rzi.u32 gives 0 */
    } else if (q >= 4294967296.0f) {
        cell = UINT32_MAX; /* saturates */
    } else {
        cell = (uint32_t)q;
    }
    return cell ? cell : 1;
}

/* A float literal that round-trips: "%.9g", always with a '.' or exponent, then 'f'. */
static void float_literal(char *out, size_t size, float value) {
    char digits[40];
    snprintf(digits, sizeof digits, "%.9g", (double)value);
    const int plain = strpbrk(digits, ".e") == NULL;
    snprintf(out, size, "%s%sf", digits, plain ? ".0" : "");
}

static const char *param_type(const gj__config *config) {
    return config->precision == GJ_PRECISION_FP16 ? "gj_half" : "float";
}

static const char *grad_type(const gj__config *config) {
    return gj__grad_is_fp32(config) ? "float" : "gj_half";
}

/* Arguments common to every per-level call: "x, SCALE, RES, ENTRIES, CELL" */
static void level_constants(char *out, size_t size, const gj__config *config, const gj__level *level) {
    char scale[48];
    float_literal(scale, sizeof scale, level->scale);
    snprintf(out, size, "%s, %uu, %uu, %uu", scale, level->resolution, level->entries,
             config->fixed_point_pos ? gj__fixed_point_cell(level->scale) : 0u);
}

/* What every unrolled level needs: its literal constants, parameter offset and index mode. */
typedef struct level_text {
    char constants[160];
    unsigned long long offset; /* first parameter */
    const char *mode;          /* GJ_INDEX_* */
} level_text;

static void level_comment(gj__strbuf *sb, const char *indent, const gj__config *config, const gj__level *level,
                          uint32_t l);

/* Emits the blank line and comment that head level l, and fills *t. */
static void begin_level(gj__strbuf *sb, const char *indent, const struct gj_encoding *enc, uint32_t l, level_text *t) {
    const gj__config *c = &enc->config;
    const gj__level *level = &enc->layout.levels[l];
    level_constants(t->constants, sizeof t->constants, c, level);
    t->offset = (unsigned long long)(level->offset * c->n_features_per_level);
    t->mode = index_mode_macro[level->index_mode];
    gj__sb_append(sb, "\n");
    level_comment(sb, indent, c, level, l);
}

static void level_comment(gj__strbuf *sb, const char *indent, const gj__config *config, const gj__level *level,
                          uint32_t l) {
    char scale[48];
    float_literal(scale, sizeof scale, level->scale);
    const uint64_t first = level->offset * config->n_features_per_level;
    const uint64_t last = first + (uint64_t)level->entries * config->n_features_per_level;
    gj__sb_printf(sb, "%s// Level %u: scale %.*s, resolution %u, %u entries (%s), parameters [%llu, %llu)\n", indent, l,
                  (int)strlen(scale) - 1, scale, level->resolution, level->entries, index_mode_words[level->index_mode],
                  (unsigned long long)first, (unsigned long long)last);
}

void gj__emit_header(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts) {
    const gj__config *config = &enc->config;
    gj__sb_append(sb, "// ===========================================================================\n");
    gj__sb_printf(sb, "// Generated by gridjit %s. Do not edit: regenerate with `gridjit dump`.\n", GJ_VERSION_STRING);
    gj__sb_append(sb, "// Configuration:\n//   ");
    char *json = gj__config_to_json(config);
    if (!json) {
        sb->failed = 1;
        return;
    }
    for (const char *p = json; *p; ++p) {
        if (*p == '\n') {
            gj__sb_append(sb, "\n//   ");
        } else {
            gj__sb_append_n(sb, p, 1);
        }
    }
    free(json);
    gj__sb_printf(sb,
                  "\n// Layout: %u input dimensions, %u levels x %u features = %u outputs (padded to %u), "
                  "%llu parameters (%s), gradients accumulated in %s.\n",
                  config->n_dims, config->n_levels, config->n_features_per_level, enc->layout.n_output_dims,
                  gj__padded_width(enc, opts), (unsigned long long)enc->layout.n_params, gj__precision_name(config->precision),
                  gj__grad_is_fp32(config) ? "fp32" : "fp16");
    gj__sb_printf(sb, "// Passes:%s%s%s. Device functions: %s%s%s%s%s%s.\n", opts->passes & GJ_PASS_FORWARD ? " forward" : "",
                  opts->passes & GJ_PASS_BACKWARD ? " backward" : "",
                  opts->passes & GJ_PASS_BACKWARD_BACKWARD ? " backward_backward" : "",
                  opts->passes & GJ_PASS_FORWARD ? opts->name : "", opts->passes & GJ_PASS_FORWARD ? " " : "",
                  opts->passes & GJ_PASS_BACKWARD ? opts->name : "", opts->passes & GJ_PASS_BACKWARD ? "_bwd " : "",
                  opts->passes & GJ_PASS_BACKWARD_BACKWARD ? opts->name : "",
                  opts->passes & GJ_PASS_BACKWARD_BACKWARD ? "_bwdbwd" : "");
    if (!opts->device_functions_only) {
        gj__sb_printf(sb, "// Kernels: %s, %u threads per block, %u point%s per thread.\n",
                      opts->order == GJ_ORDER_LEVEL_MAJOR ? "level-major" : "point-major", opts->block_size,
                      opts->points_per_thread, opts->points_per_thread == 1 ? "" : "s");
    }
    gj__sb_append(sb, "// Compile options (NVRTC; <target> is the architecture asked for):\n");
    /* The options come from the one place that states them (compile.c), with the
     * architecture left open: the same source serves every target. */
    gj__arch target = {.kind = GJ_BINARY_CUBIN, .name = "<target>"};
    const char *options[GJ__MAX_COMPILE_OPTIONS];
    char buffer[GJ__COMPILE_OPTIONS_BUFFER];
    const size_t n = gj__compile_options(&target, options, GJ__MAX_COMPILE_OPTIONS, buffer, sizeof buffer);
    if (n == 0) {
        sb->failed = 1;
    }
    for (size_t i = 0; i < n; ++i) {
        gj__sb_printf(sb, "//   %s\n", options[i]);
    }
    gj__sb_append(sb, "// ===========================================================================\n\n");
}

void gj__emit_types(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts) {
    const gj__config *c = &enc->config;
    const char *name = opts->name;
    gj__sb_append(sb, "// ===========================================================================\n");
    gj__sb_printf(sb, "// Encoding %s\n", name);
    gj__sb_append(sb, "// ===========================================================================\n\n");
    gj__sb_printf(sb, "struct %s_config {\n", name);
    gj__sb_printf(sb, "    typedef %s param_t; // parameters and outputs (%s)\n", param_type(c), gj__precision_name(c->precision));
    gj__sb_printf(sb, "    typedef %s grad_t;  // parameter-gradient accumulation\n", grad_type(c));
    gj__sb_printf(sb, "    static constexpr int D = %u;  // input dimensions\n", c->n_dims);
    gj__sb_printf(sb, "    static constexpr int F = %u;  // features per level\n", c->n_features_per_level);
    gj__sb_printf(sb, "    static constexpr int L = %u;  // levels\n", c->n_levels);
    gj__sb_printf(sb, "    static constexpr int N_OUT = %u;\n", enc->layout.n_output_dims);
    gj__sb_printf(sb, "    static constexpr int N_OUT_PADDED = %u;\n", gj__padded_width(enc, opts));
    gj__sb_printf(sb, "    static constexpr int HASH = %s;\n", hash_macro[c->hash]);
    gj__sb_printf(sb, "    static constexpr int INTERP = %s;\n", interp_macro[c->interpolation]);
    gj__sb_printf(sb, "    static constexpr bool FIXED_POINT = %s;\n", c->fixed_point_pos ? "true" : "false");
    gj__sb_printf(sb, "    static constexpr bool STOCHASTIC = %s;\n", c->stochastic_interpolation ? "true" : "false");
    gj__sb_printf(sb, "    static constexpr gj_u64 N_PARAMS = %lluull;\n", (unsigned long long)enc->layout.n_params);
    gj__sb_printf(sb, "    static constexpr int BLOCK = %u;  // kernel threads per block\n", opts->block_size);
    gj__sb_printf(sb, "    static constexpr int PPT = %u;    // kernel points per thread\n", opts->points_per_thread);
    gj__sb_printf(sb, "    static constexpr bool LEVEL_MAJOR = %s;\n", opts->order == GJ_ORDER_LEVEL_MAJOR ? "true" : "false");
    gj__sb_printf(sb, "    static constexpr gj_u32 SMALL_LEVEL_FLOATS = %u; // shared floats of NAME_backward_coarse\n",
                  gj__small_level_floats(enc, opts));
    gj__sb_append(sb, "};\n");
    gj__sb_printf(sb, "typedef gj_vec<float, %u> %s_in_t;\n", c->n_dims, name);
    gj__sb_printf(sb, "typedef gj_vec<%s, %u> %s_out_t;\n\n", param_type(c), gj__padded_width(enc, opts), name);
}

static void emit_padding(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts,
                         const char *indent, const char *target) {
    const uint32_t n = enc->layout.n_output_dims, padded = gj__padded_width(enc, opts);
    if (padded == n) {
        return;
    }
    gj__sb_printf(sb, "\n%s// Padding: outputs %u..%u are 0.\n", indent, n, padded - 1);
    gj__sb_printf(sb, "%sfor (int k = %u; k < %u; ++k) %s[k] = gj_from_float<C::param_t>(0.0f);\n", indent, n, padded, target);
}

void gj__emit_forward_function(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts) {
    const gj__config *c = &enc->config;
    const char *name = opts->name;
    gj__sb_append(sb, "// Forward pass: y = encoding(x).\n");
    gj__sb_printf(sb, "// fwd_ctx (or null) receives the %u input floats (4-byte aligned) that the backward passes read.\n", c->n_dims);
    gj__sb_printf(sb, "// max_level in [0, 1]: levels l >= max_level * %u + 1e-3 output 0.\n", c->n_levels);
    gj__sb_printf(sb, "__device__ %s_out_t %s(const %s_in_t& x, const %s* __restrict__ params, gj_u8* __restrict__ fwd_ctx,\n",
                  name, name, name, param_type(c));
    gj__sb_append(sb, "                              float max_level = 1.0f) {\n");
    gj__sb_printf(sb, "    typedef %s_config C;\n", name);
    gj__sb_append(sb, "    if (fwd_ctx) gj_save_context<C>(x.v, fwd_ctx);\n");
    gj__sb_append(sb, "    const float limit = gj_level_limit<C>(max_level);\n");
    gj__sb_printf(sb, "    %s_out_t y;\n", name);
    gj__sb_append(sb, "    float f[C::F];\n    float unused_dydx[C::F][C::D];\n");
    for (uint32_t l = 0; l < enc->layout.n_levels; ++l) {
        level_text t;
        begin_level(sb, "    ", enc, l, &t);
        gj__sb_printf(sb, "    if (%u.0f < limit) gj_level_forward<C, %s, false>(x.v, %s, params + %lluull, f, unused_dydx);\n", l,
                      t.mode, t.constants, t.offset);
        gj__sb_append(sb, "    else gj_zero(f);\n");
        gj__sb_printf(sb, "    gj_store_level<C>(y.v + %u, f);\n", l * c->n_features_per_level);
    }
    emit_padding(sb, enc, opts, "    ", "y.v");
    gj__sb_append(sb, "    return y;\n}\n\n");
}

void gj__emit_backward_function(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts) {
    const gj__config *c = &enc->config;
    const char *name = opts->name;
    gj__sb_append(sb, "// Backward pass. dL_dparams (or null): accumulated atomically (+=), laid out like params.\n");
    gj__sb_append(sb, "// dL_dx (or null): written (=), the sum over levels. Inactive levels (max_level) get no gradient.\n");
    if (c->stochastic_interpolation) {
        gj__sb_append(sb, "// Stochastic interpolation: the corner of level l is drawn with PCG32(1337, 1) advanced by\n"
                          "// rng_index + l * rng_stride (pass the point index and the number of points).\n");
    }
    gj__sb_printf(sb, "__device__ void %s_bwd(const %s_out_t& dL_dy, const %s* __restrict__ params, const gj_u8* __restrict__ fwd_ctx,\n",
                  name, name, param_type(c));
    gj__sb_printf(sb, "                       %s* __restrict__ dL_dparams, %s_in_t* __restrict__ dL_dx,\n", grad_type(c), name);
    gj__sb_append(sb, "                       float max_level = 1.0f, gj_u64 rng_index = 0, gj_u64 rng_stride = 0) {\n");
    gj__sb_printf(sb, "    typedef %s_config C;\n", name);
    gj__sb_append(sb, "    if (!dL_dparams && !dL_dx) return;\n");
    gj__sb_append(sb, "    float x[C::D];\n    gj_restore_context<C>(fwd_ctx, x);\n");
    gj__sb_append(sb, "    const float limit = gj_level_limit<C>(max_level);\n");
    gj__sb_append(sb, "    const bool want_dx = dL_dx != nullptr;\n");
    gj__sb_append(sb, "    float dldx[C::D];\n    gj_zero(dldx);\n    float g[C::F];\n");
    gj__sb_append(sb, "    (void)rng_index; (void)rng_stride;\n");
    for (uint32_t l = 0; l < enc->layout.n_levels; ++l) {
        level_text t;
        begin_level(sb, "    ", enc, l, &t);
        gj__sb_printf(sb, "    if (%u.0f < limit) {\n", l);
        gj__sb_printf(sb, "        gj_load_level<C>(dL_dy.v + %u, g);\n", l * c->n_features_per_level);
        gj__sb_printf(sb, "        gj_level_backward_any<C, %s>(x, %s, params + %lluull, g,\n", t.mode, t.constants, t.offset);
        char sample[96] = "0.0f";
        if (c->stochastic_interpolation) {
            snprintf(sample, sizeof sample, "dL_dparams ? gj_stochastic_sample(rng_index, %uu, rng_stride) : 0.0f", l);
        }
        gj__sb_printf(sb, "            dL_dparams ? dL_dparams + %lluull : nullptr, dldx, want_dx, %s);\n", t.offset, sample);
        gj__sb_append(sb, "    }\n");
    }
    gj__sb_append(sb, "\n    if (dL_dx) {\n");
    gj__sb_append(sb, "        for (int d = 0; d < C::D; ++d) dL_dx->v[d] = dldx[d];\n    }\n}\n\n");
}

void gj__emit_backward_backward_function(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts) {
    const gj__config *c = &enc->config;
    const char *name = opts->name;
    gj__sb_append(sb, "// Backward of the backward pass (input gradient of a loss on dL/dx), given dL_ddLdx = dL/d(dL/dx).\n");
    gj__sb_append(sb, "// dL_dparams (or null): accumulated atomically (+=). dL_dx, dL_ddLdy (or null): written (=).\n");
    gj__sb_printf(sb, "__device__ void %s_bwdbwd(const %s_in_t& dL_ddLdx, const %s_out_t& dL_dy, const %s* __restrict__ params,\n",
                  name, name, name, param_type(c));
    gj__sb_printf(sb, "                          const gj_u8* __restrict__ fwd_ctx, %s* __restrict__ dL_dparams,\n", grad_type(c));
    gj__sb_printf(sb, "                          %s_in_t* __restrict__ dL_dx, %s_out_t* __restrict__ dL_ddLdy,\n", name, name);
    gj__sb_append(sb, "                          float max_level = 1.0f) {\n");
    gj__sb_printf(sb, "    typedef %s_config C;\n", name);
    gj__sb_append(sb, "    if (!dL_dparams && !dL_dx && !dL_ddLdy) return;\n");
    gj__sb_append(sb, "    float x[C::D];\n    gj_restore_context<C>(fwd_ctx, x);\n");
    gj__sb_append(sb, "    const float limit = gj_level_limit<C>(max_level);\n");
    gj__sb_append(sb, "    const bool want_dx = dL_dx != nullptr, want_ddldy = dL_ddLdy != nullptr;\n");
    gj__sb_append(sb, "    float dldx[C::D];\n    gj_zero(dldx);\n    float g[C::F], ddldy[C::F];\n");
    for (uint32_t l = 0; l < enc->layout.n_levels; ++l) {
        level_text t;
        begin_level(sb, "    ", enc, l, &t);
        gj__sb_printf(sb, "    if (%u.0f < limit) {\n", l);
        gj__sb_printf(sb, "        gj_load_level<C>(dL_dy.v + %u, g);\n", l * c->n_features_per_level);
        gj__sb_printf(sb, "        gj_level_backward_backward<C, %s>(x, %s, params + %lluull, dL_ddLdx.v, g,\n", t.mode,
                      t.constants, t.offset);
        gj__sb_printf(sb, "            dL_dparams ? dL_dparams + %lluull : nullptr, ddldy, dldx, want_ddldy, want_dx);\n", t.offset);
        gj__sb_append(sb, "    } else {\n        gj_zero(ddldy);\n    }\n");
        gj__sb_printf(sb, "    if (dL_ddLdy) gj_store_level<C>(dL_ddLdy->v + %u, ddldy);\n", l * c->n_features_per_level);
    }
    if (gj__padded_width(enc, opts) != enc->layout.n_output_dims) {
        gj__sb_append(sb, "\n    if (dL_ddLdy) {");
        emit_padding(sb, enc, opts, "        ", "dL_ddLdy->v");
        gj__sb_append(sb, "    }\n");
    }
    gj__sb_append(sb, "\n    if (dL_dx) {\n");
    gj__sb_append(sb, "        for (int d = 0; d < C::D; ++d) dL_dx->v[d] = dldx[d];\n    }\n}\n\n");
}

void gj__emit_level_table(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts) {
    const gj__config *c = &enc->config;
    gj__sb_append(sb, "// The level table of the kernels: visit(level, op) calls op.run<INDEX_MODE, SMALL>(level, scale,\n");
    gj__sb_append(sb, "// resolution, entries, fixed-point cell, parameter offset). SMALL: the level's gradients fit in\n");
    gj__sb_append(sb, "// shared memory, so level-major backward sums them per block (NAME_backward_coarse).\n");
    gj__sb_printf(sb, "struct %s_levels {\n", opts->name);
    gj__sb_append(sb, "    template <class Op>\n    GJ_INLINE static void visit(gj_u32 level, Op& op) {\n");
    gj__sb_append(sb, "        switch (level) {\n");
    for (uint32_t l = 0; l < enc->layout.n_levels; ++l) {
        const gj__level *level = &enc->layout.levels[l];
        char constants[160];
        level_constants(constants, sizeof constants, c, level);
        level_comment(sb, "        ", c, level, l);
        gj__sb_printf(sb, "        case %u: op.template run<%s, %s>(%uu, %s, %lluull); break;\n", l,
                      index_mode_macro[level->index_mode], gj__level_is_small(c, level, opts) ? "true" : "false", l,
                      constants, (unsigned long long)(level->offset * c->n_features_per_level));
    }
    gj__sb_append(sb, "        default: break;\n        }\n    }\n};\n\n");
}

void gj__emit_kernels(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts) {
    const char *name = opts->name;
    const uint32_t block = opts->block_size;
    const int level_major = opts->order == GJ_ORDER_LEVEL_MAJOR;
    const int padded = gj__padded_width(enc, opts) != enc->layout.n_output_dims;
    gj__sb_append(sb, "// ---------------------------------------------------------------------------\n");
    gj__sb_append(sb, "// Kernels. Each takes its argument struct (templates/kernel_args.cuh) by value.\n");
    gj__sb_printf(sb, "// Block: %u threads. Grid x: ceil(n / %u) blocks.\n", block, block * opts->points_per_thread);
    gj__sb_append(sb, "// ---------------------------------------------------------------------------\n\n");
    if (opts->passes & GJ_PASS_FORWARD) {
        gj__sb_printf(sb, "// Grid y: %u%s.\n", level_major ? enc->layout.n_levels + (padded ? 1 : 0) : 1,
                      level_major ? (padded ? " (one per level, plus one for the padding columns)" : " (one per level)") : "");
        gj__sb_printf(sb, "__global__ void __launch_bounds__(%u) %s_forward(const gj_forward_args args) {\n", block, name);
        gj__sb_printf(sb, "    gj_forward_kernel<%s_config, %s_levels>(args);\n}\n\n", name, name);
    }
    if (opts->passes & GJ_PASS_BACKWARD) {
        gj__sb_printf(sb, "// Grid y: %u%s.\n", level_major ? enc->layout.n_levels : 1,
                      level_major ? " (one per level; dL_dx is summed atomically: zero it first)" : "");
        gj__sb_printf(sb, "__global__ void __launch_bounds__(%u) %s_backward(const gj_backward_args args) {\n", block, name);
        gj__sb_printf(sb, "    gj_backward_kernel<%s_config, %s_levels>(args);\n}\n\n", name, name);
        gj__sb_printf(sb, "// Grid (args.coarse_blocks, %u), %u bytes of dynamic shared memory: the levels marked SMALL%s.\n",
                      enc->layout.n_levels, 4 * gj__small_level_floats(enc, opts),
                      gj__small_level_floats(enc, opts) ? "" : " (none here: a no-op)");
        gj__sb_printf(sb, "__global__ void __launch_bounds__(%u) %s_backward_coarse(const gj_backward_args args) {\n", block, name);
        gj__sb_printf(sb, "    gj_backward_coarse_kernel<%s_config, %s_levels>(args);\n}\n\n", name, name);
    }
    if (opts->passes & GJ_PASS_BACKWARD_BACKWARD) {
        gj__sb_append(sb, "// Grid y: 1 (point-major: dL_dx sums over levels in registers).\n");
        gj__sb_printf(sb, "__global__ void __launch_bounds__(%u) %s_backward_backward(const gj_backward_backward_args args) {\n",
                      block, name);
        gj__sb_printf(sb, "    gj_backward_backward_kernel<%s_config, %s_levels>(args);\n}\n\n", name, name);
    }
    gj__sb_append(sb, "// One thread per parameter; grid y: 1.\n");
    gj__sb_printf(sb, "__global__ void __launch_bounds__(%u) %s_init_params(const gj_init_args args) {\n", block, name);
    gj__sb_printf(sb, "    gj_init_kernel<%s_config>(args);\n}\n\n", name);
    gj__sb_append(sb, "// One thread per parameter; grid y: 1.\n");
    gj__sb_printf(sb, "__global__ void __launch_bounds__(%u) %s_cast_gradients(const gj_cast_args args) {\n", block, name);
    gj__sb_printf(sb, "    gj_cast_kernel<%s_config>(args);\n}\n", name);
}
