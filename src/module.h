/*
 * gj_module: an encoding's kernels loaded into the driver, and their launches.
 *
 *   module_load.c    create (compile for the device) / load (a given program) / destroy
 *   module_args.c    descriptor defaults, argument checks, kernel argument structs and
 *                    launch geometry: pure functions of a gj__module_shape, no driver
 *   module_launch.c  one function per pass: zeroing, scratch buffers, launches
 *   module_host.c    device-memory conveniences and fp16 conversions
 *
 * The kernel contract (src/codegen_emit.c, templates/kernels.cuh): kernels
 * NAME_forward, NAME_backward, NAME_backward_coarse, NAME_backward_backward,
 * NAME_init_params, NAME_cast_gradients, each taking its struct of
 * templates/kernel_args.cuh by value; block = block_size; grid.x = ceil(n / (block_size
 * * points_per_thread)); grid.y = levels (+1 for the padding columns when the output is
 * padded) for level-major forward, levels for level-major backward (dL/dx summed
 * atomically: zeroed first), 1 otherwise; init and cast run one thread per element.
 * Level-major backward with dL/dparams and levels small enough for shared memory
 * (small_level_floats > 0): args.coarse_blocks = B > 0 makes NAME_backward skip those
 * levels and NAME_backward_coarse, grid (B, levels) with small_level_floats * 4 bytes of
 * dynamic shared memory, sum them per block before adding to dL/dparams.
 */
#ifndef GJ_MODULE_H
#define GJ_MODULE_H

#include "codegen.h" /* gj__kernel_id: the kernel list */
#include "driver.h"
#include "encoding.h"

#include "../templates/kernel_args.cuh"


/* Everything argument checks and launch geometry need: no driver state, so it can be
 * tested without a GPU. */
typedef struct gj__module_shape {
    uint32_t n_dims, n_levels, n_features_per_level;
    uint32_t n_output_dims, padded_width;
    uint64_t n_params;
    gj_precision precision;
    int grad_fp32; /* gradients accumulate in fp32 (fp32 params, or F = 1) */
    uint32_t passes, block_size, points_per_thread;
    int level_major;
    uint32_t small_level_floats; /* shared floats of NAME_backward_coarse; 0: no small level */
} gj__module_shape;

/* opts: resolved (gj__codegen_options_resolve). */
void gj__module_shape_make(gj__module_shape *shape, const struct gj_encoding *enc, const gj_codegen_options *opts);
size_t gj__shape_element_size(const gj__module_shape *shape);
/* Largest n one launch of this shape takes (GJ_MAX_POINTS or the grid limit). */
uint64_t gj__shape_max_points(const gj__module_shape *shape);

typedef struct gj__launch_dims {
    uint32_t grid_x, grid_y, block;
} gj__launch_dims;

/* Argument checks, in the order the public calls make them. GJ_ERROR_INVALID_ARGUMENT or
 * GJ_ERROR_PASS_NOT_COMPILED with a message "gj_forward: ..." on ctx. */
gj_status gj__check_forward(gj_context *ctx, const gj__module_shape *shape, const gj_forward_desc *desc);
gj_status gj__check_backward(gj_context *ctx, const gj__module_shape *shape, const gj_backward_desc *desc);
gj_status gj__check_backward_backward(gj_context *ctx, const gj__module_shape *shape,
                                      const gj_backward_backward_desc *desc);
gj_status gj__check_init(gj_context *ctx, const gj__module_shape *shape, const gj_init_desc *desc);

/* Kernel arguments and grid of a checked descriptor (n > 0). dL_dparams in the backward
 * structs is the descriptor's; the launcher swaps in the fp32 scratch where needed. */
void gj__forward_args(const gj__module_shape *shape, const gj_forward_desc *desc, gj_forward_args *args,
                      gj__launch_dims *dims);
void gj__backward_args(const gj__module_shape *shape, const gj_backward_desc *desc, gj_backward_args *args,
                       gj__launch_dims *dims);
void gj__backward_backward_args(const gj__module_shape *shape, const gj_backward_backward_desc *desc,
                                gj_backward_backward_args *args, gj__launch_dims *dims);
/* One thread per element: init_params and cast_gradients over n_params. */
void gj__elementwise_dims(const gj__module_shape *shape, gj__launch_dims *dims);
/* Whether a backward launch of desc uses NAME_backward_coarse, and its grid with
 * blocks_per_level blocks (> 0) per level. */
int gj__backward_uses_coarse(const gj__module_shape *shape, const gj_backward_desc *desc);
void gj__coarse_dims(const gj__module_shape *shape, uint32_t blocks_per_level, gj__launch_dims *dims);

struct gj_module {
    gj_context *ctx;
    gj__driver *drv;
    gj__module_shape shape;
    char arch[24]; /* the program's target, for messages */
    uint32_t coarse_blocks; /* blocks per level of NAME_backward_coarse (a few per multiprocessor) */
    CUlibrary library;
    CUkernel kernels[GJ__KERNEL_COUNT]; /* NULL where not compiled */
    /* fp32 gradient accumulator for fp16 parameters with F = 1 (SPEC §8.3): allocated on
     * first use in the context current then, cast into the caller's fp16 array after. */
    CUdeviceptr scratch;
    size_t scratch_bytes;
    CUcontext scratch_context;
};

/* Frees the fp32 gradient buffer (in the context it was made in). */
void gj__module_free_scratch(struct gj_module *m);

#endif
