/* Launch descriptors: defaults, argument checks, kernel argument structs and grids.
 * Nothing here calls the driver, so all of it is tested without a GPU. */
#include "runtime/module.h"

#include "base/widen.h"
#include "codegen/facts.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#define GJ__MAX_GRID_X 2147483647ull /* CUDA's limit on gridDim.x */
#define GJ__CAPPED_FORWARD_WARPS 32u        /* four blocks of 256 threads */
#define GJ__CAPPED_STAGED_FORWARD_WARPS 16u /* two blocks of 256 threads */
#define GJ__CAPPED_STAGED_3D_FORWARD_WARPS 24u /* without dy/dx, in 3-D: three blocks */
#define GJ__CAPPED_GROUPED_FORWARD_WARPS 24u /* three blocks of 256 threads */
#define GJ__CAPPED_STAGED_2D_FORWARD_WARPS 24u      /* 2-D, without dy/dx: three blocks */
#define GJ__CAPPED_STAGED_2D_DYDX_FORWARD_WARPS 32u /* 2-D, with dy/dx: four blocks */
/* Levels per thread of a forward into feature-major outputs that pairs its levels
 * (pairs_forward_levels), and the bounds on its largest table. */
#define GJ__GROUPED_FORWARD_LEVELS 2u
#define GJ__PAIRED_LEVEL_MIN_BYTES (512ull << 10)
#define GJ__PAIRED_LEVEL_MAX_BYTES (8ull << 20)

/* Whether a level-major module has a hashed level: the forwards' resident warps are capped
 * by default only then (docs/runtime.md, "Launch shapes"; the environment may say otherwise).
 * A hashed level scatters each point's corners over the table, and with every block the
 * registers allow resident the warps' L1 lines evict one another before the neighbouring
 * corners are read. In three or more dimensions (eight or more corners), held to 32 warps
 * C1's, C4's, S3's and S5's one-level forwards took 1.3-2.5 % less time on an H200, and held
 * to 16 warps C1's point-major forward 1.7 % and with dy/dx 7.5 % less. Two dimensions (four
 * corners) cap only the staging forwards (C2's one-level forward was 2.3 % slower capped);
 * dense levels (neighbouring corners share lines: S4 1.3 % slower) keep every block. */
static int caps_forward_warps(const struct gj_encoding *enc, const gj__module_shape *shape) {
    if (!shape->level_major || shape->n_dims < 2) {
        return 0;
    }
    for (uint32_t l = 0; l < enc->layout.n_levels; ++l) {
        if (enc->layout.levels[l].index_mode == GJ__INDEX_HASH) {
            return 1;
        }
    }
    return 0;
}

/* The 2-D staging forwards' caps (point-major rows longer than a sector: C2's 64-byte rows).
 * Measured on an H200 against every block resident, two rounds (docs/benchmarks.md §1, the
 * twenty-fourth session): at 24 warps without dy/dx C2's forward took 0.9 % less time (0.440
 * -> 0.436 ms), along rays 0.5 %, with 16 MiB and 128 KiB largest tables 1.5 and 3.5 % less,
 * with 12 levels the same, with Smoothstep 0.4 % more; with dy/dx 24 warps lost 2 % along
 * rays, 32 gained 0.2-1.1 % on all six grids. */
static void cap_2d_staging_forwards(gj__module_shape *shape) {
    if (!shape->forward_split) {
        shape->staged_forward_warps_per_sm = GJ__CAPPED_STAGED_2D_FORWARD_WARPS;
        shape->staged_dydx_forward_warps_per_sm = GJ__CAPPED_STAGED_2D_DYDX_FORWARD_WARPS;
    }
}

/* Whether a capped forward into feature-major outputs takes two levels a thread by default,
 * held to 24 warps: each thread reads its point once for two levels. Measured on an H200
 * (docs/benchmarks.md §1): 3-D fp16 grids whose largest table takes 512 KiB to 8 MiB gained
 * 0.8-3.4 % (C1's forward 2 %, with dy/dx 2.7 %; F = 1, five levels, Smoothstep, rays), and
 * lost where two tables at a time no longer fit the caches (128 KiB tables that one level
 * alone keeps in L1: 24 % slower; 16 MiB ones in L2: 6-10 %), in 4-D (S5: 2.5-7 %) and in
 * fp32 with F = 1 (8 %, the same table bytes as C1's: not understood). A forward that splits
 * its groups one level a thread (C3) was only slower in groups. */
static int pairs_forward_levels(const gj__module_shape *shape) {
    const uint64_t largest =
        (uint64_t)shape->largest_level_entries * shape->n_features_per_level * gj__shape_element_size(shape);
    return shape->n_dims == 3 && shape->precision == GJ_PRECISION_FP16 && !shape->forward_split &&
           largest >= GJ__PAIRED_LEVEL_MIN_BYTES && largest <= GJ__PAIRED_LEVEL_MAX_BYTES;
}

void gj__module_shape_make(gj__module_shape *shape, const struct gj_encoding *enc, const gj_codegen_options *opts) {
    memset(shape, 0, sizeof *shape);
    shape->n_dims = enc->config.n_dims;
    shape->n_levels = enc->layout.n_levels;
    shape->n_features_per_level = enc->config.n_features_per_level;
    shape->n_output_dims = enc->layout.n_output_dims;
    shape->padded_width = gj__padded_width(enc, opts);
    shape->n_params = enc->layout.n_params;
    shape->precision = enc->config.precision;
    shape->grad_fp32 = gj__grad_is_fp32(&enc->config, opts);
    shape->grad_element_size = opts->gradients_fp32 || enc->config.precision == GJ_PRECISION_FP32 ? 4 : 2;
    shape->passes = opts->passes;
    shape->block_size = opts->block_size;
    shape->points_per_thread = opts->points_per_thread;
    shape->level_major = opts->order == GJ_ORDER_LEVEL_MAJOR;
    shape->forward_split = gj__forward_split(&enc->config, opts);
    shape->small_level_floats = gj__small_level_floats(enc, opts);
    for (uint32_t l = 0; l < enc->layout.n_levels; ++l) {
        if (enc->layout.levels[l].entries > shape->largest_level_entries) {
            shape->largest_level_entries = enc->layout.levels[l].entries;
        }
    }
    shape->levels_per_thread = opts->levels_per_thread;
    shape->feature_major_forward_levels = 1;
    shape->coarse_blocks_per_sm = GJ__COARSE_BLOCKS_PER_SM;
    shape->coarse_beside_blocks_per_sm = GJ__COARSE_BESIDE_BLOCKS_PER_SM;
    shape->coarse_beside_min_points = GJ__COARSE_BESIDE_MIN_POINTS;
    if (!caps_forward_warps(enc, shape)) {
        return;
    }
    if (shape->n_dims == 2) {
        cap_2d_staging_forwards(shape);
    } else {
        shape->forward_warps_per_sm = GJ__CAPPED_FORWARD_WARPS;
        /* A forward that splits its groups one level a thread (C3) was only slower capped. The
         * staging forward without dy/dx took 1 % less time at 24 warps than at 16 in 3-D (C1,
         * C4), 2.6 % more in 4-D (S5); with dy/dx 4.5 % more (C1). */
        if (!shape->forward_split) {
            shape->staged_forward_warps_per_sm =
                shape->n_dims == 3 ? GJ__CAPPED_STAGED_3D_FORWARD_WARPS : GJ__CAPPED_STAGED_FORWARD_WARPS;
            shape->staged_dydx_forward_warps_per_sm = GJ__CAPPED_STAGED_FORWARD_WARPS;
        }
        if (pairs_forward_levels(shape)) {
            shape->feature_major_forward_levels = GJ__GROUPED_FORWARD_LEVELS;
            shape->grouped_forward_warps_per_sm = GJ__CAPPED_GROUPED_FORWARD_WARPS;
        }
    }
}

size_t gj__shape_element_size(const gj__module_shape *shape) {
    return shape->precision == GJ_PRECISION_FP16 ? 2 : 4;
}

void gj__gradient_plan(const gj__module_shape *shape, int have_dparams, gj_grad_mode mode, gj__grad_plan *plan) {
    memset(plan, 0, sizeof *plan);
    if (!have_dparams) {
        return;
    }
    /* The kernels add fp32 values where the caller holds fp16 ones: a buffer in between. */
    plan->scratch = shape->grad_fp32 && shape->grad_element_size == 2;
    if (plan->scratch) {
        plan->zero_bytes = (size_t)shape->n_params * sizeof(float);
    } else if (mode == GJ_GRAD_OVERWRITE) {
        plan->zero_bytes = (size_t)shape->n_params * shape->grad_element_size;
    }
}

uint64_t gj__shape_max_points(const gj__module_shape *shape) {
    /* The fewest points a block: block x points per thread, or fewer where the forward
     * splits its groups, the widest possible (every level, at most a block's threads) one
     * level a thread. */
    const uint32_t widest = shape->n_levels < shape->block_size ? shape->n_levels : shape->block_size;
    const uint64_t by_grid = GJ__MAX_GRID_X * gj__group_block_points(shape, widest, shape->forward_split);
    return by_grid < GJ_MAX_POINTS ? by_grid : GJ_MAX_POINTS;
}

/* ---------------------------------------------------------------- defaults */

void gj_forward_desc_init(gj_forward_desc *desc) {
    if (desc) {
        memset(desc, 0, sizeof *desc);
        desc->struct_size = (uint32_t)sizeof *desc;
        desc->y_layout = GJ_LAYOUT_AOS;
        desc->max_level = 1.0f;
    }
}

void gj_backward_desc_init(gj_backward_desc *desc) {
    if (desc) {
        memset(desc, 0, sizeof *desc);
        desc->struct_size = (uint32_t)sizeof *desc;
        desc->dL_dy_layout = GJ_LAYOUT_AOS;
        desc->dL_dparams_mode = GJ_GRAD_OVERWRITE;
        desc->max_level = 1.0f;
    }
}

void gj_backward_backward_desc_init(gj_backward_backward_desc *desc) {
    if (desc) {
        memset(desc, 0, sizeof *desc);
        desc->struct_size = (uint32_t)sizeof *desc;
        desc->dL_dy_layout = GJ_LAYOUT_AOS;
        desc->dL_ddLdy_layout = GJ_LAYOUT_AOS;
        desc->dL_dparams_mode = GJ_GRAD_OVERWRITE;
        desc->max_level = 1.0f;
    }
}

void gj_init_desc_init(gj_init_desc *desc) {
    if (desc) {
        memset(desc, 0, sizeof *desc);
        desc->struct_size = (uint32_t)sizeof *desc;
        desc->scale = 1.0f;
    }
}

/* ------------------------------------------------------- older descriptors */

/* 0.1.0 published the descriptors without their trailing fields since (docs/ABI.md). */
const gj_forward_desc *gj__forward_desc_widened(const gj_forward_desc *desc, gj_forward_desc *full) {
    return gj__widened(desc, offsetof(gj_forward_desc, dy_dx_compact), sizeof *full, full);
}

const gj_backward_desc *gj__backward_desc_widened(const gj_backward_desc *desc, gj_backward_desc *full) {
    return gj__widened(desc, offsetof(gj_backward_desc, dy_dx), sizeof *full, full);
}

/* ------------------------------------------------------------------ checks */

/* A required (or, with optional set, possibly NULL) device pointer with its alignment. */
static gj_status check_pointer(const gj__diag *ctx, const char *call, const char *name, const void *ptr, size_t align,
                               int optional) {
    if (!ptr) {
        return optional ? GJ_OK : gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "%s: %s must not be NULL", call, name);
    }
    if ((uintptr_t)ptr % align != 0) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "%s: %s must be aligned to %zu bytes (got %p)", call, name,
                        align, ptr);
    }
    return GJ_OK;
}

static gj_status check_layout(const gj__diag *ctx, const char *call, const char *name, gj_data_layout layout) {
    if (layout != GJ_LAYOUT_AOS && layout != GJ_LAYOUT_SOA) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "%s: %s must be GJ_LAYOUT_AOS or GJ_LAYOUT_SOA (got %d)", call,
                        name, (int)layout);
    }
    return GJ_OK;
}

static gj_status check_mode(const gj__diag *ctx, const char *call, gj_grad_mode mode) {
    if (mode != GJ_GRAD_OVERWRITE && mode != GJ_GRAD_ACCUMULATE) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: dL_dparams_mode must be GJ_GRAD_OVERWRITE or GJ_GRAD_ACCUMULATE (got %d)", call, (int)mode);
    }
    return GJ_OK;
}

static const char *pass_list(uint32_t passes) {
    static const char *const names[8] = {"none",
                                         "forward",
                                         "backward",
                                         "forward, backward",
                                         "backward_backward",
                                         "forward, backward_backward",
                                         "backward, backward_backward",
                                         "forward, backward, backward_backward"};
    return names[passes & 7u];
}

static gj_status check_pass(const gj__diag *ctx, const char *call, const gj__module_shape *shape, gj_pass pass,
                            const char *pass_name) {
    if (!(shape->passes & (uint32_t)pass)) {
        return gj__fail(ctx, GJ_ERROR_PASS_NOT_COMPILED,
                        "%s: the module was compiled without the %s pass (passes: %s); make a module with it", call,
                        pass_name, pass_list(shape->passes));
    }
    return GJ_OK;
}

/* n, x, params and max_level: what every pass takes. */
static gj_status check_common(const gj__diag *ctx, const char *call, const gj__module_shape *shape, uint64_t n,
                              const float *x, const void *params, const float *max_level_per_point, float max_level) {
    const uint64_t limit = gj__shape_max_points(shape);
    if (n > limit) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: n must be at most %llu points per launch (got %llu); split the batch", call,
                        (unsigned long long)limit, (unsigned long long)n);
    }
    gj_status status = check_pointer(ctx, call, "x", x, 4, 0);
    if (status == GJ_OK) {
        status = check_pointer(ctx, call, "params", params, 16, 0);
    }
    if (status == GJ_OK) {
        status = check_pointer(ctx, call, "max_level_per_point", max_level_per_point, 4, 1);
    }
    if (status == GJ_OK && !max_level_per_point && !(max_level >= 0.0f && max_level <= 1.0f)) {
        status = gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT,
                          "%s: max_level must be in [0, 1] (got %g); the *_desc_init functions set 1 (all levels)", call,
                          (double)max_level);
    }
    return status;
}

/* A descriptor its _init prepared (each was first published at its present size, but for
 * gj_forward_desc and gj_backward_desc, whose older layouts the *_desc_widened functions
 * have widened before). */
static gj_status check_struct_size(const gj__diag *ctx, const char *call, const char *type, uint32_t size,
                                   size_t expected) {
    if (size != expected) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: desc->struct_size is %u (expected %zu): prepare the descriptor with %s_init() first", call,
                        size, expected, type);
    }
    return GJ_OK;
}

/* The parts shared by the checks: NULL desc, its size, the pass, then (n > 0) the common
 * fields. */
#define GJ__CHECK_HEAD(call, type, pass, pass_name)                                             \
    do {                                                                                        \
        if (!desc) {                                                                            \
            return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "%s: desc must not be NULL", call); \
        }                                                                                       \
        if (check_struct_size(ctx, call, type, desc->struct_size, sizeof *desc) != GJ_OK) {     \
            return GJ_ERROR_INVALID_ARGUMENT;                                                   \
        }                                                                                       \
        gj_status head = check_pass(ctx, call, shape, pass, pass_name);                         \
        if (head != GJ_OK || desc->n == 0) {                                                    \
            return head;                                                                        \
        }                                                                                       \
        head = check_common(ctx, call, shape, desc->n, desc->x, desc->params,                   \
                            desc->max_level_per_point, desc->max_level);                        \
        if (head != GJ_OK) {                                                                    \
            return head;                                                                        \
        }                                                                                       \
    } while (0)

gj_status gj__check_forward(const gj__diag *ctx, const gj__module_shape *shape, const gj_forward_desc *desc) {
    static const char call[] = "gj_forward";
    GJ__CHECK_HEAD(call, "gj_forward_desc", GJ_PASS_FORWARD, "forward");
    if (!desc->y && !desc->dy_dx && !desc->dy_dx_compact) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "%s: y, dy_dx and dy_dx_compact are all NULL: nothing to compute",
                        call);
    }
    gj_status status = check_pointer(ctx, call, "y", desc->y, gj__shape_element_size(shape), 1);
    if (status == GJ_OK) {
        status = check_layout(ctx, call, "y_layout", desc->y_layout);
    }
    if (status == GJ_OK) {
        status = check_pointer(ctx, call, "dy_dx", desc->dy_dx, 4, 1);
    }
    if (status == GJ_OK) {
        status = check_pointer(ctx, call, "dy_dx_compact", desc->dy_dx_compact, 2, 1);
    }
    return status;
}

gj_status gj__check_backward(const gj__diag *ctx, const gj__module_shape *shape, const gj_backward_desc *desc) {
    static const char call[] = "gj_backward";
    GJ__CHECK_HEAD(call, "gj_backward_desc", GJ_PASS_BACKWARD, "backward");
    if (!desc->dL_dparams && !desc->dL_dx) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "%s: dL_dparams and dL_dx are both NULL: nothing to compute",
                        call);
    }
    gj_status status = check_pointer(ctx, call, "dL_dy", desc->dL_dy, gj__shape_element_size(shape), 0);
    if (status == GJ_OK) {
        status = check_layout(ctx, call, "dL_dy_layout", desc->dL_dy_layout);
    }
    if (status == GJ_OK) {
        status = check_pointer(ctx, call, "dL_dparams", desc->dL_dparams, 16, 1);
    }
    if (status == GJ_OK && desc->dL_dparams) {
        status = check_mode(ctx, call, desc->dL_dparams_mode);
    }
    if (status == GJ_OK) {
        status = check_pointer(ctx, call, "dL_dx", desc->dL_dx, 4, 1);
    }
    if (status == GJ_OK) {
        status = check_pointer(ctx, call, "dy_dx", desc->dy_dx, 4, 1);
    }
    if (status == GJ_OK) {
        status = check_pointer(ctx, call, "dy_dx_compact", desc->dy_dx_compact, 2, 1);
    }
    if (status == GJ_OK && desc->dy_dx && desc->dy_dx_compact) {
        status = gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "%s: dy_dx and dy_dx_compact are both set: give one", call);
    }
    return status;
}

gj_status gj__check_backward_backward(const gj__diag *ctx, const gj__module_shape *shape,
                                      const gj_backward_backward_desc *desc) {
    static const char call[] = "gj_backward_backward";
    GJ__CHECK_HEAD(call, "gj_backward_backward_desc", GJ_PASS_BACKWARD_BACKWARD, "backward_backward");
    if (!desc->dL_dparams && !desc->dL_ddLdy && !desc->dL_dx) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: dL_dparams, dL_ddLdy and dL_dx are all NULL: nothing to compute", call);
    }
    const size_t element = gj__shape_element_size(shape);
    gj_status status = check_pointer(ctx, call, "dL_ddLdx", desc->dL_ddLdx, 4, 0);
    if (status == GJ_OK) {
        status = check_pointer(ctx, call, "dL_dy", desc->dL_dy, element, 0);
    }
    if (status == GJ_OK) {
        status = check_layout(ctx, call, "dL_dy_layout", desc->dL_dy_layout);
    }
    if (status == GJ_OK) {
        status = check_pointer(ctx, call, "dL_dparams", desc->dL_dparams, 16, 1);
    }
    if (status == GJ_OK && desc->dL_dparams) {
        status = check_mode(ctx, call, desc->dL_dparams_mode);
    }
    if (status == GJ_OK) {
        status = check_pointer(ctx, call, "dL_ddLdy", desc->dL_ddLdy, element, 1);
    }
    if (status == GJ_OK && desc->dL_ddLdy) {
        status = check_layout(ctx, call, "dL_ddLdy_layout", desc->dL_ddLdy_layout);
    }
    if (status == GJ_OK) {
        status = check_pointer(ctx, call, "dL_dx", desc->dL_dx, 4, 1);
    }
    return status;
}

gj_status gj__check_init(const gj__diag *ctx, const gj__module_shape *shape, const gj_init_desc *desc) {
    static const char call[] = "gj_init_params";
    if (!desc) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "%s: desc must not be NULL", call);
    }
    if (check_struct_size(ctx, call, "gj_init_desc", desc->struct_size, sizeof *desc) != GJ_OK) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    if (shape->n_params > GJ__MAX_GRID_X * shape->block_size) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "%s: %llu parameters are more than one launch covers", call,
                        (unsigned long long)shape->n_params);
    }
    gj_status status = check_pointer(ctx, call, "params", desc->params, 16, 0);
    if (status == GJ_OK) {
        status = check_pointer(ctx, call, "params_fp32", desc->params_fp32, 4, 1);
    }
    if (status == GJ_OK && !isfinite(desc->scale)) {
        status = gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "%s: scale must be finite (got %g)", call, (double)desc->scale);
    }
    return status;
}

/* ------------------------------------------------------- arguments and grids */

/* Element (i, k) of an n x width array at base[i * stride_point + k * stride_feature]. */
static void strides(gj_data_layout layout, uint64_t n, uint32_t width, unsigned long long *stride_point,
                    unsigned long long *stride_feature) {
    if (layout == GJ_LAYOUT_SOA) {
        *stride_point = 1;
        *stride_feature = n;
    } else {
        *stride_point = width;
        *stride_feature = 1;
    }
}

static void point_dims(const gj__module_shape *shape, uint64_t n, uint32_t grid_y, gj__launch_dims *dims) {
    const uint64_t per_block = (uint64_t)shape->block_size * shape->points_per_thread;
    dims->grid_x = (uint32_t)((n + per_block - 1) / per_block);
    dims->grid_y = grid_y;
    dims->block = shape->block_size;
    dims->shared_bytes = 0;
}

/* Levels per thread of a level-major launch (docs/runtime.md, "Launch shapes"), as measured
 * on an H200. The forward: one (each block one level, one table hot at a time), or two where
 * the shape says so (feature_major_forward_levels, pairs_forward_levels), unless it writes
 * point-major rows longer than one 32-byte sector. There each level would write a
 * few bytes of every row at another time, and the partly written sectors cost L2 and DRAM
 * traffic; with a sector's worth of levels per thread, staged in shared memory, a block
 * fills whole sectors (C1: 1.63 -> 0.98 ms forward). The backward to the parameters: the
 * same for rows, and at least four levels otherwise where every level's table is small
 * enough for four to share the L2 (each thread reads its point once for four levels and
 * keeps more independent atomics in flight: 1-9 % faster on C1-C4, S1-S3, S5 and S6, on
 * uniform points and rays, but for C3 along rays, 1-2 % slower; a dense grid whose finest
 * tables take 20 and 64 MiB: its backward 11-17 % slower; benchmarks.md §2). */
uint32_t gj__levels_per_thread(const gj__module_shape *shape, gj__group_pass pass, int point_major_rows) {
    uint32_t levels = shape->levels_per_thread;
    if (levels == 0) {
        const uint32_t element = (uint32_t)gj__shape_element_size(shape);
        const uint32_t entry = shape->n_features_per_level * element;
        levels = 1;
        if (point_major_rows && shape->padded_width * element > 32) {
            levels = entry < 16 ? 32 / entry : 2;
        } else if (pass == GJ__GROUP_FORWARD && !point_major_rows) {
            levels = shape->feature_major_forward_levels;
        }
        const uint64_t largest_bytes = (uint64_t)shape->largest_level_entries * entry;
        if (pass == GJ__GROUP_BACKWARD_PARAMS && levels < GJ__BACKWARD_MIN_LEVELS_PER_THREAD &&
            largest_bytes <= GJ__BACKWARD_GROUP_MAX_LEVEL_BYTES) {
            levels = GJ__BACKWARD_MIN_LEVELS_PER_THREAD;
        }
    }
    return levels < shape->n_levels ? levels : shape->n_levels;
}

/* Dynamic shared memory of a launch staging point-major rows at rows in level groups of
 * `levels`, `points` points a block, or 0 where it cannot: one level per block, groups
 * (the last, shorter one too) or rows that are not whole 32-bit words, a misaligned array,
 * too much shared memory. */
uint32_t gj__stage_bytes(const gj__module_shape *shape, uint32_t levels, uint32_t points, const void *rows,
                         gj_data_layout layout) {
    const uint32_t element = (uint32_t)gj__shape_element_size(shape);
    const uint32_t entry = shape->n_features_per_level * element;
    if (!shape->level_major || levels < 2 || !rows || layout != GJ_LAYOUT_AOS) {
        return 0;
    }
    const uint32_t group_bytes = levels * entry, last_bytes = (shape->n_levels % levels) * entry;
    if (group_bytes % 4 != 0 || last_bytes % 4 != 0 || (shape->padded_width * element) % 4 != 0 ||
        (uintptr_t)rows % 4 != 0) {
        return 0;
    }
    const uint64_t bytes = (uint64_t)((group_bytes / 4) | 1u) * 4u * points;
    return bytes <= GJ__DEFAULT_SHARED_BYTES ? (uint32_t)bytes : 0;
}

/* The points of a block of a level-major launch in groups of `levels`: block x points per
 * thread, or, where the forward splits its groups one level a thread (split), block /
 * levels x points per thread. */
uint32_t gj__group_block_points(const gj__module_shape *shape, uint32_t levels, int split) {
    const uint32_t threads = split && levels > 1 ? shape->block_size / levels : shape->block_size;
    return threads * shape->points_per_thread;
}

/* Levels per thread (a split forward: per block, at most its threads), staging and grid
 * of a level-major launch over rows (y or dL/dy). */
static void level_groups(const gj__module_shape *shape, uint64_t n, const void *rows, gj_data_layout layout,
                         gj__group_pass pass, int split, unsigned *levels_per_thread, unsigned *stage,
                         gj__launch_dims *dims) {
    uint32_t levels = gj__levels_per_thread(shape, pass, rows != NULL && layout == GJ_LAYOUT_AOS);
    if (split && levels > shape->block_size) {
        levels = shape->block_size;
    }
    *levels_per_thread = levels;
    dims->grid_y = (shape->n_levels + levels - 1) / levels;
    const uint32_t points = gj__group_block_points(shape, levels, split);
    dims->grid_x = (uint32_t)((n + points - 1) / points);
    dims->shared_bytes = gj__stage_bytes(shape, levels, points, rows, layout);
    *stage = dims->shared_bytes != 0;
}

void gj__forward_args(const gj__module_shape *shape, const gj_forward_desc *desc, gj_forward_args *args,
                      gj__launch_dims *dims) {
    memset(args, 0, sizeof *args);
    args->n = desc->n;
    args->x = desc->x;
    args->x_stride_point = shape->n_dims;
    args->x_stride_dim = 1;
    args->params = desc->params;
    args->y = desc->y;
    strides(desc->y_layout, desc->n, shape->padded_width, &args->y_stride_point, &args->y_stride_feature);
    args->dy_dx = desc->dy_dx;
    args->dy_dx_compact = desc->dy_dx_compact;
    args->max_level_per_point = desc->max_level_per_point;
    args->max_level = desc->max_level;
    point_dims(shape, desc->n, 1u, dims);
    args->levels_per_thread = 1;
    if (shape->level_major) {
        level_groups(shape, desc->n, desc->y, desc->y_layout, GJ__GROUP_FORWARD, shape->forward_split,
                     &args->levels_per_thread, &args->stage, dims);
        dims->grid_y += shape->padded_width != shape->n_output_dims; /* the padding columns' slice */
    }
}

void gj__backward_args(const gj__module_shape *shape, const gj_backward_desc *desc, gj_backward_args *args,
                       gj__launch_dims *dims) {
    memset(args, 0, sizeof *args);
    args->n = desc->n;
    args->x = desc->x;
    args->x_stride_point = shape->n_dims;
    args->x_stride_dim = 1;
    args->params = desc->params;
    args->dL_dy = desc->dL_dy;
    strides(desc->dL_dy_layout, desc->n, shape->padded_width, &args->dy_stride_point, &args->dy_stride_feature);
    args->dL_dparams = desc->dL_dparams;
    args->dL_dx = desc->dL_dx;
    args->dx_stride_point = shape->n_dims;
    args->dx_stride_dim = 1;
    args->max_level_per_point = desc->max_level_per_point;
    args->max_level = desc->max_level;
    args->aggregate_min = shape->aggregate_min;
    point_dims(shape, desc->n, 1u, dims);
    args->levels_per_thread = 1;
    if (shape->level_major) {
        const gj__group_pass pass = desc->dL_dparams != NULL ? GJ__GROUP_BACKWARD_PARAMS : GJ__GROUP_BACKWARD_INPUT;
        level_groups(shape, desc->n, desc->dL_dy, desc->dL_dy_layout, pass, 0, &args->levels_per_thread, &args->stage,
                     dims);
    }
}

int gj__backward_split(const gj_backward_desc *desc, gj_backward_desc *grads) {
    *grads = *desc;
    const int from_dydx = (desc->dy_dx != NULL || desc->dy_dx_compact != NULL) && desc->dL_dx != NULL;
    if (from_dydx) {
        grads->dL_dx = NULL;
    }
    return from_dydx;
}

/* Threads of a grid-stride launch: enough blocks to fill any GPU many times over; the
 * kernels loop over the points beyond them. */
#define GJ__STREAM_MAX_BLOCKS (1u << 20)

void gj__dx_from_dydx_args(const gj__module_shape *shape, const gj_backward_desc *desc, gj_dx_from_dydx_args *args,
                           gj__launch_dims *dims) {
    memset(args, 0, sizeof *args);
    args->n = desc->n;
    args->dy_dx = desc->dy_dx;
    args->dy_dx_compact = desc->dy_dx_compact;
    args->dL_dy = desc->dL_dy;
    strides(desc->dL_dy_layout, desc->n, shape->padded_width, &args->dy_stride_point, &args->dy_stride_feature);
    args->dL_dx = desc->dL_dx;
    args->dx_stride_point = shape->n_dims;
    args->dx_stride_dim = 1;
    const uint64_t blocks = (desc->n + shape->block_size - 1) / shape->block_size;
    dims->block = shape->block_size;
    dims->grid_x = blocks < GJ__STREAM_MAX_BLOCKS ? (uint32_t)blocks : GJ__STREAM_MAX_BLOCKS;
    dims->grid_y = 1;
    dims->shared_bytes = 0;
}

void gj__backward_backward_args(const gj__module_shape *shape, const gj_backward_backward_desc *desc,
                                gj_backward_backward_args *args, gj__launch_dims *dims) {
    memset(args, 0, sizeof *args);
    args->n = desc->n;
    args->x = desc->x;
    args->x_stride_point = shape->n_dims;
    args->x_stride_dim = 1;
    args->params = desc->params;
    args->dL_ddLdx = desc->dL_ddLdx;
    args->ddx_stride_point = shape->n_dims;
    args->ddx_stride_dim = 1;
    args->dL_dy = desc->dL_dy;
    strides(desc->dL_dy_layout, desc->n, shape->padded_width, &args->dy_stride_point, &args->dy_stride_feature);
    args->dL_dparams = desc->dL_dparams;
    args->dL_ddLdy = desc->dL_ddLdy;
    strides(desc->dL_ddLdy_layout, desc->n, shape->padded_width, &args->ddy_stride_point, &args->ddy_stride_feature);
    args->dL_dx = desc->dL_dx;
    args->dx_stride_point = shape->n_dims;
    args->dx_stride_dim = 1;
    args->max_level_per_point = desc->max_level_per_point;
    args->max_level = desc->max_level;
    point_dims(shape, desc->n, 1u, dims); /* point-major in every order */
}

void gj__elementwise_dims(const gj__module_shape *shape, gj__launch_dims *dims) {
    dims->block = shape->block_size;
    dims->grid_x = (uint32_t)((shape->n_params + shape->block_size - 1) / shape->block_size);
    dims->grid_y = 1;
    dims->shared_bytes = 0;
}

int gj__backward_uses_coarse(const gj__module_shape *shape, const gj_backward_desc *desc) {
    return shape->level_major && shape->small_level_floats > 0 && desc->dL_dparams != NULL;
}

void gj__coarse_dims(const gj__module_shape *shape, uint32_t blocks_per_level, gj__launch_dims *dims) {
    dims->block = shape->block_size;
    dims->grid_x = blocks_per_level;
    dims->grid_y = shape->n_levels;
    dims->shared_bytes = shape->small_level_floats * (uint32_t)sizeof(float);
}

uint32_t gj__coarse_blocks(const gj__module_shape *shape, uint64_t n, uint32_t most) {
    const uint64_t point_blocks = (n + shape->block_size - 1) / shape->block_size;
    return (uint32_t)(point_blocks < most ? point_blocks : most);
}

/* Whether a level-major launch takes the _rows form of its kernel: several levels per
 * thread, or point-major rows staged (the one-level form does neither). */
static int level_groups_form(unsigned levels_per_thread, unsigned stage) {
    return levels_per_thread > 1 || stage;
}

gj__kernel_id gj__forward_kernel(const gj_forward_desc *desc, const gj_forward_args *args) {
    const gj__kernel_id kernel = desc->dy_dx || desc->dy_dx_compact ? GJ__KERNEL_FORWARD_DYDX : GJ__KERNEL_FORWARD;
    return level_groups_form(args->levels_per_thread, args->stage) ? gj__kernel_rows_form(kernel) : kernel;
}

void gj__backward_kernels(const gj_backward_desc *desc, const gj_backward_args *args, gj__kernel_id *main,
                          gj__kernel_id *coarse) {
    *main = !desc->dL_dparams ? GJ__KERNEL_BACKWARD_DX : desc->dL_dx ? GJ__KERNEL_BACKWARD_INPUT : GJ__KERNEL_BACKWARD;
    *coarse = desc->dL_dx ? GJ__KERNEL_BACKWARD_INPUT_COARSE : GJ__KERNEL_BACKWARD_COARSE;
    if (level_groups_form(args->levels_per_thread, args->stage)) {
        *main = gj__kernel_rows_form(*main);
        *coarse = gj__kernel_rows_form(*coarse);
    }
}

/* A stand-in array for the descriptors below: non-null and aligned, never read (the launch
 * arguments take its address only to choose a kernel). */
static const float any_array[4];

uint32_t gj__forward_parts(const gj__module_shape *shape, gj_data_layout layout, int dydx) {
    gj_forward_desc desc;
    gj_forward_desc_init(&desc);
    desc.n = 1;
    desc.x = any_array;
    desc.y = (void *)any_array;
    desc.y_layout = layout;
    desc.dy_dx = dydx ? (float *)any_array : NULL;
    gj_forward_args args;
    gj__launch_dims dims;
    gj__forward_args(shape, &desc, &args, &dims);
    return 1u << gj__kernel(gj__forward_kernel(&desc, &args))->part;
}

uint32_t gj__backward_parts(const gj__module_shape *shape, gj_data_layout layout, int params, int dx) {
    gj_backward_desc desc;
    gj_backward_desc_init(&desc);
    desc.n = 1;
    desc.x = any_array;
    desc.dL_dy = any_array;
    desc.dL_dy_layout = layout;
    desc.dL_dparams = params ? (void *)any_array : NULL;
    desc.dL_dx = dx ? (float *)any_array : NULL;
    gj_backward_args args;
    gj__launch_dims dims;
    gj__backward_args(shape, &desc, &args, &dims);
    gj__kernel_id main, coarse;
    gj__backward_kernels(&desc, &args, &main, &coarse);
    return 1u << gj__kernel(main)->part | (gj__backward_uses_coarse(shape, &desc) ? 1u << gj__kernel(coarse)->part : 0u);
}
