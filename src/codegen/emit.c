/* Emitters for the generated translation unit (see codegen.c for the order). */
#include "codegen/emit.h"

#include "base/format.h"
#include "base/templates.h"
#include "codegen/facts.h"
#include "codegen/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gj__emit_template(gj__strbuf *sb, const char *name) {
    const gj__template *tpl = gj__template_find(name);
    gj__sb_printf(sb, "// ===== templates/%s =====\n", name);
    if (tpl) {
        gj__sb_append_n(sb, tpl->text, tpl->size);
    } else {
        sb->failed = 1; /* a build without the template is broken: fail loudly */
    }
    gj__sb_append(sb, "\n");
}

void gj__emit_options_comment(gj__strbuf *sb, const char *options_text) {
    gj__sb_append(sb, "// Compile options (NVRTC; <target> is the architecture asked for):\n");
    /* Stated by the compiler layer (the one place that knows them), with the architecture
     * left open: the same source serves every target. */
    for (const char *p = options_text; p && *p;) {
        const char *nl = strchr(p, '\n');
        const size_t n = nl ? (size_t)(nl - p) : strlen(p);
        gj__sb_append(sb, "//   ");
        gj__sb_append_n(sb, p, n);
        gj__sb_append(sb, "\n");
        p += n + (nl != NULL);
    }
}

/* A level's index mode as the generated code spells it (gj__kernel_index_mode). */
static void mode_macro(char *out, size_t size, const gj__level *level, int literal) {
    static const char *const kinds[] = {"GJ_INDEX_DENSE", "GJ_INDEX_HASH", "GJ_INDEX_WRAP"};
    const uint32_t mode = gj__kernel_index_mode(level);
    snprintf(out, size, "%s%s%s", kinds[mode & 3u], (mode & GJ__INDEX_POW2) ? " | GJ_INDEX_POW2" : "",
             literal ? " | GJ_INDEX_LITERAL" : "");
}

static const char *const index_mode_words[] = {"dense", "hashed", "dense, wrapped modulo the table"};
static const char *const hash_macro[] = {"GJ_HASH_PRIME", "GJ_HASH_COHERENT_PRIME", "GJ_HASH_REVERSED_PRIME",
                                         "GJ_HASH_RNG", "GJ_HASH_BASE_CONVERT"};
static const char *const interp_macro[] = {"GJ_INTERP_NEAREST", "GJ_INTERP_LINEAR", "GJ_INTERP_SMOOTHSTEP"};

/* A float literal that round-trips: "%.9g" with '.' in any locale, always with a '.' or
 * exponent, then 'f'. */
static void float_literal(char *out, size_t size, float value) {
    char digits[40];
    gj__format_float(digits, sizeof digits, value);
    const int plain = strpbrk(digits, ".e") == NULL;
    snprintf(out, size, "%s%sf", digits, plain ? ".0" : "");
}

static const char *param_type(const gj__config *config) {
    return config->precision == GJ_PRECISION_FP16 ? "gj_half" : "float";
}

static const char *grad_type(const gj__config *config, const gj_codegen_options *opts) {
    return gj__grad_is_fp32(config, opts) ? "float" : "gj_half";
}

/* A level's row of constants, as a gj_level initializer (templates/hash.cuh):
 * "{OFFSET, SCALE, RES, ENTRIES, MASK, CELL, MODE, SMALL, 0u, MAGIC}". */
static void level_row(char *out, size_t size, const struct gj_encoding *enc, uint32_t l, int small) {
    const gj__config *c = &enc->config;
    const gj__level *level = &enc->layout.levels[l];
    char scale[48];
    float_literal(scale, sizeof scale, level->scale);
    const uint32_t entries = level->entries;
    const uint32_t mask = (gj__kernel_index_mode(level) & GJ__INDEX_POW2) ? entries - 1u : 0u;
    /* gj_fastmod's multiplier: floor((2^64 - 1) / entries) + 1, wrapping to 0 for one entry. */
    const unsigned long long magic = UINT64_MAX / entries + 1u;
    char mode[64];
    mode_macro(mode, sizeof mode, level, 0);
    snprintf(out, size, "{%lluull, %s, %uu, %uu, %uu, %uu, %s, %uu, 0u, %lluull}",
             (unsigned long long)(level->offset * c->n_features_per_level), scale, level->resolution, entries, mask,
             c->fixed_point_pos ? gj__fixed_point_cell(level->scale) : 0u, mode, small ? 1u : 0u, magic);
}

/* Emits the comment that heads unrolled level l and its constants as lvL (device
 * functions); mode receives the level's index mode for them (MODE | GJ_INDEX_LITERAL). */
static void begin_level(gj__strbuf *sb, const struct gj_encoding *enc, uint32_t l, char *mode, size_t mode_size) {
    const gj__config *c = &enc->config;
    const gj__level *level = &enc->layout.levels[l];
    char row[256], scale[48];
    level_row(row, sizeof row, enc, l, 0);
    mode_macro(mode, mode_size, level, 1);
    float_literal(scale, sizeof scale, level->scale);
    const unsigned long long first = (unsigned long long)(level->offset * c->n_features_per_level);
    gj__sb_printf(sb, "\n    // Level %u: scale %.*s, resolution %u, %u entries (%s), parameters [%llu, %llu)\n", l,
                  (int)strlen(scale) - 1, scale, level->resolution, level->entries, index_mode_words[level->index_mode],
                  first, first + (unsigned long long)level->entries * c->n_features_per_level);
    gj__sb_printf(sb, "    const gj_level lv%u = %s;\n", l, row);
}

/* dL/dx of the backward device functions: summed over the levels in dldx, then written. */
static void emit_dldx_begin(gj__strbuf *sb) {
    gj__sb_append(sb, "    float dldx[C::D];\n    gj_zero(dldx);\n");
}

static void emit_dldx_end(gj__strbuf *sb) {
    gj__sb_append(sb, "\n    if (dL_dx) {\n");
    gj__sb_append(sb, "        for (int d = 0; d < C::D; ++d) dL_dx->v[d] = dldx[d];\n    }\n");
}

/* "// Passes: forward backward. Device functions: NAME, NAME_bwd." */
static void emit_passes_line(gj__strbuf *sb, const gj_codegen_options *opts) {
    static const struct {
        uint32_t bit;
        const char *pass, *suffix;
    } passes[] = {{GJ_PASS_FORWARD, "forward", ""},
                  {GJ_PASS_BACKWARD, "backward", "_bwd"},
                  {GJ_PASS_BACKWARD_BACKWARD, "backward_backward", "_bwdbwd"}};
    gj__sb_append(sb, "// Passes:");
    for (size_t i = 0; i < 3; ++i) {
        if (opts->passes & passes[i].bit) {
            gj__sb_printf(sb, " %s", passes[i].pass);
        }
    }
    gj__sb_append(sb, ". Device functions:");
    const char *separator = " ";
    for (size_t i = 0; i < 3; ++i) {
        if (opts->passes & passes[i].bit) {
            gj__sb_printf(sb, "%s%s%s", separator, opts->name, passes[i].suffix);
            separator = ", ";
        }
    }
    gj__sb_append(sb, ".\n");
}

void gj__emit_header(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts, gj__part part,
                     const char *options_text) {
    const gj__config *config = &enc->config;
    gj__sb_append(sb, "// ===========================================================================\n");
    gj__sb_printf(sb, "// Generated by gridjit %s. Do not edit: regenerate with `gridjit dump`.\n", GJ_VERSION_STRING);
    gj__sb_append(sb, "// Configuration:\n//   ");
    char *json = gj__config_to_json(config);
    if (!json) {
        sb->failed = 1;
        return;
    }
    gj__sb_append(sb, json); /* one line */
    free(json);
    gj__sb_printf(sb,
                  "\n// Layout: %u input dimensions, %u levels x %u features = %u outputs (padded to %u), "
                  "%llu parameters (%s), gradients accumulated in %s%s.\n",
                  config->n_dims, config->n_levels, config->n_features_per_level, enc->layout.n_output_dims,
                  gj__padded_width(enc, opts), (unsigned long long)enc->layout.n_params, gj__precision_name(config->precision),
                  gj__grad_is_fp32(config, opts) ? "fp32" : "fp16",
                  /* Stated whenever asked for, so that the source (and the cache key) tell it
                   * even where the type is fp32 anyway. */
                  opts->gradients_fp32 ? " (codegen option gradients_fp32)" : "");
    if (part == GJ__PART_ALL) {
        emit_passes_line(sb, opts);
    } else {
        gj__sb_printf(sb, "// One program of a module: the %s kernels.\n", gj__part_name(part));
    }
    if (!opts->device_functions_only) {
        gj__sb_printf(sb, "// Kernels: %s, %u threads per block, %u point%s per thread.\n",
                      opts->order == GJ_ORDER_LEVEL_MAJOR ? "level-major" : "point-major", opts->block_size,
                      opts->points_per_thread, opts->points_per_thread == 1 ? "" : "s");
    }
    gj__emit_options_comment(sb, options_text);
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
    gj__sb_printf(sb, "    typedef %s grad_t;  // parameter-gradient accumulation\n", grad_type(c, opts));
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
    gj__sb_printf(sb, "    static constexpr bool FORWARD_SPLIT = %s; // level groups of NAME_forward_rows: one level a thread\n",
                  gj__forward_split(c, opts) ? "true" : "false");
    gj__sb_printf(sb, "    static constexpr gj_u32 SMALL_LEVEL_FLOATS = %u; // shared floats of NAME_backward_coarse\n",
                  gj__small_level_floats(enc, opts));
    gj__sb_printf(sb, "    static constexpr gj_u32 MODES = %uu;       // bit m: some level has index mode m\n",
                  gj__index_modes(enc, opts, 0));
    gj__sb_printf(sb, "    static constexpr gj_u32 SMALL_MODES = %uu; // the same for the small levels\n",
                  gj__index_modes(enc, opts, 1));
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
    if (!opts->unroll_levels) {
        gj__sb_printf(sb, "    gj_levels_forward<C, %s_levels>(x.v, params, limit, y.v);\n", name);
    } else {
        gj__sb_append(sb, "    float f[C::F];\n    float unused_dydx[C::F][C::D];\n");
        for (uint32_t l = 0; l < enc->layout.n_levels; ++l) {
            char mode[64];
            begin_level(sb, enc, l, mode, sizeof mode);
            gj__sb_printf(sb, "    if (%u.0f < limit) gj_level_forward<C, %s, false>(x.v, lv%u, params + lv%u.offset, f, unused_dydx);\n",
                          l, mode, l, l);
            gj__sb_append(sb, "    else gj_zero(f);\n");
            gj__sb_printf(sb, "    gj_store_level<C>(y.v + %u, f);\n", l * c->n_features_per_level);
        }
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
    gj__sb_printf(sb, "                       %s* __restrict__ dL_dparams, %s_in_t* __restrict__ dL_dx,\n", grad_type(c, opts), name);
    gj__sb_append(sb, "                       float max_level = 1.0f, gj_u64 rng_index = 0, gj_u64 rng_stride = 0) {\n");
    gj__sb_printf(sb, "    typedef %s_config C;\n", name);
    gj__sb_append(sb, "    if (!dL_dparams && !dL_dx) return;\n");
    gj__sb_append(sb, "    float x[C::D];\n    gj_restore_context<C>(fwd_ctx, x);\n");
    gj__sb_append(sb, "    const float limit = gj_level_limit<C>(max_level);\n");
    gj__sb_append(sb, "    const bool want_dx = dL_dx != nullptr;\n");
    emit_dldx_begin(sb);
    if (!opts->unroll_levels) {
        gj__sb_printf(sb, "    gj_levels_backward<C, %s_levels>(x, dL_dy.v, params, dL_dparams, dldx, want_dx, limit,\n", name);
        gj__sb_append(sb, "                                     rng_index, rng_stride);\n");
    } else {
        gj__sb_append(sb, "    float g[C::F];\n");
        gj__sb_append(sb, "    (void)rng_index; (void)rng_stride;\n");
        for (uint32_t l = 0; l < enc->layout.n_levels; ++l) {
            char mode[64];
            begin_level(sb, enc, l, mode, sizeof mode);
            gj__sb_printf(sb, "    if (%u.0f < limit) {\n", l);
            gj__sb_printf(sb, "        gj_load_level<C>(dL_dy.v + %u, g);\n", l * c->n_features_per_level);
            gj__sb_printf(sb, "        gj_level_backward_any<C, %s>(x, lv%u, params + lv%u.offset, g,\n", mode, l, l);
            char sample[96] = "0.0f";
            if (c->stochastic_interpolation) {
                snprintf(sample, sizeof sample, "dL_dparams ? gj_stochastic_sample(rng_index, %uu, rng_stride) : 0.0f", l);
            }
            gj__sb_printf(sb, "            dL_dparams ? dL_dparams + lv%u.offset : nullptr, dldx, want_dx, %s);\n", l, sample);
            gj__sb_append(sb, "    }\n");
        }
    }
    emit_dldx_end(sb);
    gj__sb_append(sb, "}\n\n");
}

void gj__emit_backward_backward_function(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts) {
    const gj__config *c = &enc->config;
    const char *name = opts->name;
    gj__sb_append(sb, "// Backward of the backward pass (input gradient of a loss on dL/dx), given dL_ddLdx = dL/d(dL/dx).\n");
    gj__sb_append(sb, "// dL_dparams (or null): accumulated atomically (+=). dL_dx, dL_ddLdy (or null): written (=).\n");
    gj__sb_printf(sb, "__device__ void %s_bwdbwd(const %s_in_t& dL_ddLdx, const %s_out_t& dL_dy, const %s* __restrict__ params,\n",
                  name, name, name, param_type(c));
    gj__sb_printf(sb, "                          const gj_u8* __restrict__ fwd_ctx, %s* __restrict__ dL_dparams,\n", grad_type(c, opts));
    gj__sb_printf(sb, "                          %s_in_t* __restrict__ dL_dx, %s_out_t* __restrict__ dL_ddLdy,\n", name, name);
    gj__sb_append(sb, "                          float max_level = 1.0f) {\n");
    gj__sb_printf(sb, "    typedef %s_config C;\n", name);
    gj__sb_append(sb, "    if (!dL_dparams && !dL_dx && !dL_ddLdy) return;\n");
    gj__sb_append(sb, "    float x[C::D];\n    gj_restore_context<C>(fwd_ctx, x);\n");
    gj__sb_append(sb, "    const float limit = gj_level_limit<C>(max_level);\n");
    gj__sb_append(sb, opts->unroll_levels ? "    const bool want_dx = dL_dx != nullptr, want_ddldy = dL_ddLdy != nullptr;\n"
                                          : "    const bool want_dx = dL_dx != nullptr;\n");
    emit_dldx_begin(sb);
    if (!opts->unroll_levels) {
        gj__sb_printf(sb, "    gj_levels_backward_backward<C, %s_levels>(x, dL_ddLdx.v, dL_dy.v, params, dL_dparams,\n", name);
        gj__sb_append(sb, "        dL_ddLdy ? dL_ddLdy->v : nullptr, dldx, want_dx, limit);\n");
    } else {
        gj__sb_append(sb, "    float g[C::F], ddldy[C::F];\n");
        for (uint32_t l = 0; l < enc->layout.n_levels; ++l) {
            char mode[64];
            begin_level(sb, enc, l, mode, sizeof mode);
            gj__sb_printf(sb, "    if (%u.0f < limit) {\n", l);
            gj__sb_printf(sb, "        gj_load_level<C>(dL_dy.v + %u, g);\n", l * c->n_features_per_level);
            gj__sb_printf(sb, "        gj_level_backward_backward<C, %s>(x, lv%u, params + lv%u.offset, dL_ddLdx.v, g,\n", mode,
                          l, l);
            gj__sb_printf(sb, "            dL_dparams ? dL_dparams + lv%u.offset : nullptr, ddldy, dldx, want_ddldy, want_dx);\n", l);
            gj__sb_append(sb, "    } else {\n        gj_zero(ddldy);\n    }\n");
            gj__sb_printf(sb, "    if (dL_ddLdy) gj_store_level<C>(dL_ddLdy->v + %u, ddldy);\n", l * c->n_features_per_level);
        }
    }
    if (gj__padded_width(enc, opts) != enc->layout.n_output_dims) {
        gj__sb_append(sb, "\n    if (dL_ddLdy) {");
        emit_padding(sb, enc, opts, "        ", "dL_ddLdy->v");
        gj__sb_append(sb, "    }\n");
    }
    emit_dldx_end(sb);
    gj__sb_append(sb, "}\n\n");
}

void gj__emit_level_table(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts) {
    const gj__config *c = &enc->config;
    const char *name = opts->name;
    gj__sb_append(sb, "// The level table of the kernels, in constant memory: one gj_level row per level (offset,\n");
    gj__sb_append(sb, "// scale, resolution, entries, mask, fixed-point cell, index mode, small, pad, modulo\n");
    gj__sb_append(sb, "// multiplier). Small: the level's gradients fit in shared memory, so level-major\n");
    gj__sb_append(sb, "// backward sums them per block (NAME_backward_coarse).\n");
    gj__sb_printf(sb, "__constant__ gj_level %s_level_table[%u] = {\n", name, c->n_levels);
    for (uint32_t l = 0; l < enc->layout.n_levels; ++l) {
        char row[256];
        level_row(row, sizeof row, enc, l, gj__level_is_small(c, &enc->layout.levels[l], opts));
        gj__sb_printf(sb, "    %s, // level %u\n", row, l);
    }
    gj__sb_append(sb, "};\n");
    gj__sb_printf(sb, "struct %s_levels {\n", name);
    gj__sb_printf(sb, "    GJ_INLINE static const gj_level& at(gj_u32 level) { return %s_level_table[level]; }\n", name);
    gj__sb_append(sb, "};\n\n");
}

/* The launch shape of kernel id, as a comment above it. */
static void grid_comment(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts, gj__kernel_id id) {
    const int level_major = opts->order == GJ_ORDER_LEVEL_MAJOR;
    const int padded = gj__padded_width(enc, opts) != enc->layout.n_output_dims;
    const uint32_t L = enc->layout.n_levels, small = gj__small_level_floats(enc, opts);
    const char *groups = "ceil(levels / args.levels_per_thread), one per group of args.levels_per_thread (at least 2)\n"
                         "// levels";
    const char *stage = "// args.stage = 1 (point-major rows): block * points per thread * ((args.levels_per_thread * F *\n"
                        "// element bytes / 4) | 1) words of dynamic shared memory.\n";
    switch (id) {
    case GJ__KERNEL_FORWARD:
    case GJ__KERNEL_FORWARD_DYDX:
        if (level_major) {
            gj__sb_printf(sb, "// Grid y: %u, one per level%s.\n", L + (padded ? 1u : 0u),
                          padded ? ", plus one for the padding columns" : "");
        } else {
            gj__sb_append(sb, "// Grid y: 1.\n");
        }
        break;
    case GJ__KERNEL_FORWARD_ROWS:
    case GJ__KERNEL_FORWARD_DYDX_ROWS:
        gj__sb_printf(sb, "// Grid y: %s%s.\n%s", groups, padded ? ", plus one for the padding columns" : "", stage);
        break;
    case GJ__KERNEL_BACKWARD:
    case GJ__KERNEL_BACKWARD_INPUT:
    case GJ__KERNEL_BACKWARD_DX:
        if (level_major) {
            gj__sb_printf(sb, "// Grid y: %u, one per level (dL_dx is summed atomically: zero it first).\n", L);
        } else {
            gj__sb_append(sb, "// Grid y: 1.\n");
        }
        break;
    case GJ__KERNEL_BACKWARD_ROWS:
    case GJ__KERNEL_BACKWARD_INPUT_ROWS:
    case GJ__KERNEL_BACKWARD_DX_ROWS:
        gj__sb_printf(sb, "// Grid y: %s (dL_dx is summed atomically: zero it first).\n%s", groups, stage);
        break;
    case GJ__KERNEL_BACKWARD_COARSE:
    case GJ__KERNEL_BACKWARD_INPUT_COARSE:
    case GJ__KERNEL_BACKWARD_ROWS_COARSE:
    case GJ__KERNEL_BACKWARD_INPUT_ROWS_COARSE:
        gj__sb_printf(sb, "// Grid (args.coarse_blocks, %u), %u bytes of dynamic shared memory: the small levels%s.\n",
                      L, 4 * small, small ? "" : " (none here: a no-op)");
        break;
    case GJ__KERNEL_BACKWARD_BACKWARD:
        gj__sb_append(sb, "// Grid y: 1 (point-major: dL_dx sums over levels in registers).\n");
        break;
    case GJ__KERNEL_DX_FROM_DYDX:
        gj__sb_append(sb, "// One thread per point, grid-stride (any grid x); grid y: 1.\n");
        break;
    default:
        gj__sb_append(sb, "// One thread per parameter; grid y: 1.\n");
        break;
    }
}

void gj__emit_kernels(gj__strbuf *sb, const struct gj_encoding *enc, const gj_codegen_options *opts, gj__part part) {
    const char *name = opts->name;
    gj__sb_append(sb, "// ---------------------------------------------------------------------------\n");
    gj__sb_append(sb, "// Kernels. Each takes its argument struct (templates/kernel_args.cuh) by value.\n");
    gj__sb_printf(sb, "// Block: %u threads. Grid x: ceil(n / %u) blocks.\n", opts->block_size,
                  opts->block_size * opts->points_per_thread);
    gj__sb_append(sb, "// ---------------------------------------------------------------------------\n");
    for (int k = 0; k < GJ__KERNEL_COUNT; ++k) {
        if (!gj__kernel_in_unit((gj__kernel_id)k, opts, part)) {
            continue;
        }
        const gj__kernel_info *kernel = gj__kernel((gj__kernel_id)k);
        gj__sb_append(sb, "\n");
        grid_comment(sb, enc, opts, (gj__kernel_id)k);
        gj__sb_printf(sb, "__global__ void __launch_bounds__(%u) %s_%s(const %s args) {\n", opts->block_size, name,
                      kernel->suffix, kernel->args_type);
        gj__sb_printf(sb, "    %s<%s_config%s%s%s>(args);\n}\n", kernel->body, name, kernel->uses_levels ? ", " : "",
                      kernel->uses_levels ? name : "", kernel->uses_levels ? "_levels" : "");
    }
}
