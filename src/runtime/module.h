/*
 * gj_module: an encoding's kernels, compiled and loaded on first use, and their launches.
 *
 *   module_create.c   create (for the devices it will meet) / load (a given program) /
 *                     prepare / destroy / getters
 *   module_programs.c the programs (parts) of a module: compiled through the cache for an
 *                     architecture on first use, in parallel when prepared, loaded once
 *   module_device.c   where a launch runs (the stream's context), per-device state
 *   module_args.c     descriptor defaults, argument checks, kernel argument structs,
 *                     launch geometry and the kernel each launch takes: pure functions
 *                     of a gj__module_shape and the descriptor, no driver (the CPU test
 *                     of the kernels, tests/emulated/, launches with them too)
 *   module_launch.c   one function per pass: zeroing, scratch buffers, launches
 *   module_host.c     device-memory conveniences
 *
 * The kernel contract (codegen/kernels.c lists the kernels, templates/kernels.cuh has
 * their bodies): each takes its struct of templates/kernel_args.cuh by value; block =
 * block_size; grid.x = ceil(n / (block_size * points_per_thread)); grid.y = levels (+1
 * for the padding columns when the output is padded) for level-major forward, levels for
 * level-major backward (dL/dx summed atomically: zeroed first), 1 otherwise; init and
 * cast run one thread per element. Level-major backward with dL/dparams and levels small
 * enough for shared memory (small_level_floats > 0): args.coarse_blocks = B > 0 makes
 * NAME_backward(_input) skip those levels and NAME_backward(_input)_coarse, grid (B,
 * levels) with small_level_floats * 4 bytes of dynamic shared memory, sum them per block
 * before adding to dL/dparams.
 */
#ifndef GJ_RUNTIME_MODULE_H
#define GJ_RUNTIME_MODULE_H

#include "codegen/kernels.h" /* gj__kernel_id: the kernel list */
#include "compile/compiler.h"
#include "loader/driver.h"
#include "model/encoding.h"
#include "runtime/context_cache.h"
#include "runtime/scope.h"
#include "runtime/side_stream.h"

#include "templates/kernel_args.cuh"

#include <pthread.h>
/* What the runtime works with: its context's diagnostics, driver and compiler. */
typedef struct gj__runtime {
    const gj__diag *diag;
    gj__driver_loader *driver;
    gj__compiler *compiler;
} gj__runtime;


/* Everything argument checks and launch geometry need: no driver state, so it can be
 * tested without a GPU. */
typedef struct gj__module_shape {
    uint32_t n_dims, n_levels, n_features_per_level;
    uint32_t n_output_dims, padded_width;
    uint64_t n_params;
    gj_precision precision;
    int grad_fp32; /* the kernels accumulate dL/dparams in fp32 (gradients_fp32, fp32 params, or F = 1) */
    size_t grad_element_size; /* bytes of one element of the caller's dL/dparams: 4 (fp32
                                 params or gradients_fp32) or 2 */
    uint32_t passes, block_size, points_per_thread;
    int level_major;
    int forward_split; /* the forward's level groups split one level a thread (gj__forward_split) */
    uint32_t small_level_floats; /* shared floats of NAME_backward_coarse; 0: no small level */
    uint32_t largest_level_entries; /* the largest level's table entries (each F values) */
    /* Launch shapes (docs/runtime.md): levels per thread of level-major launches (0: by
     * pass and layout), and the lanes from which the backward's warp aggregation starts
     * (0: never); module_create.c reads overrides from the environment once. */
    uint32_t levels_per_thread;
    uint32_t aggregate_min;
    /* Staging launches prefer the L1 carveout of gj__module_fit_carveout (1), or leave it to
     * the driver (0: GRIDJIT_STAGE_CARVEOUT=0). */
    int stage_carveout;
    /* The one-level forward kernels' resident warps a multiprocessor (gj__module_cap_residency;
     * docs/runtime.md, "Launch shapes"): 32 for hashed levels of 3 or more dimensions, else
     * 0 (as many as fit). */
    uint32_t forward_warps_per_sm;
    /* The same for the level-group forwards where they stage point-major rows (a forward that
     * does not split its groups), without dy/dx and with it: 24 and 16 for hashed 3-D levels,
     * 16 and 16 for 4 or more dimensions, 24 and 32 for hashed 2-D levels, else 0. */
    uint32_t staged_forward_warps_per_sm, staged_dydx_forward_warps_per_sm;
    /* Levels per thread of an automatic forward into feature-major outputs, and that
     * level-group forward's resident warps: 2 and 24 for capped 3-D fp16 grids whose largest
     * table takes 512 KiB to 8 MiB and whose groups are not split, else 1 and 0. */
    uint32_t feature_major_forward_levels;
    uint32_t grouped_forward_warps_per_sm;
    /* The coarse backward kernels' blocks per level and multiprocessor after the main backward
     * kernel (GJ__COARSE_BLOCKS_PER_SM) and beside it (GJ__COARSE_BESIDE_BLOCKS_PER_SM), and the
     * fewest points from which they run on a side stream beside it (runtime/side_stream.h; 0:
     * never). */
    uint32_t coarse_blocks_per_sm;
    uint32_t coarse_beside_blocks_per_sm;
    uint64_t coarse_beside_min_points;
} gj__module_shape;

/* opts: resolved (gj__codegen_options_resolve). */
void gj__module_shape_make(gj__module_shape *shape, const struct gj_encoding *enc, const gj_codegen_options *opts);
size_t gj__shape_element_size(const gj__module_shape *shape);

/* What a backward pass does with dL/dparams before and after its kernels. */
typedef struct gj__grad_plan {
    int scratch;       /* accumulate into the device's fp32 buffer, then cast it into the caller's
                          fp16 array (fp16 params with F = 1 without gradients_fp32) */
    size_t zero_bytes; /* bytes zeroed first: the buffer, or the caller's array in overwrite mode */
} gj__grad_plan;
/* have_dparams: the descriptor's dL_dparams is not NULL (else nothing to do). */
void gj__gradient_plan(const gj__module_shape *shape, int have_dparams, gj_grad_mode mode, gj__grad_plan *plan);
/* Largest n one launch of this shape takes (GJ_MAX_POINTS or the grid limit). */
uint64_t gj__shape_max_points(const gj__module_shape *shape);

typedef struct gj__launch_dims {
    uint32_t grid_x, grid_y, block;
    uint32_t shared_bytes; /* dynamic shared memory */
} gj__launch_dims;

/* Argument checks, in the order the public calls make them. GJ_ERROR_INVALID_ARGUMENT or
 * GJ_ERROR_PASS_NOT_COMPILED with a message "gj_forward: ..." on d. */
gj_status gj__check_forward(const gj__diag *d, const gj__module_shape *shape, const gj_forward_desc *desc);
gj_status gj__check_backward(const gj__diag *d, const gj__module_shape *shape, const gj_backward_desc *desc);
gj_status gj__check_backward_backward(const gj__diag *d, const gj__module_shape *shape,
                                      const gj_backward_backward_desc *desc);
gj_status gj__check_init(const gj__diag *d, const gj__module_shape *shape, const gj_init_desc *desc);

/* desc, or where it is an older (shorter) layout of its descriptor, *full: a copy with
 * the fields it lacks at their defaults (docs/ABI.md: the library reads struct_size bytes). */
const gj_backward_desc *gj__backward_desc_widened(const gj_backward_desc *desc, gj_backward_desc *full);
const gj_forward_desc *gj__forward_desc_widened(const gj_forward_desc *desc, gj_forward_desc *full);

/* Kernel arguments and grid of a checked descriptor (n > 0). dL_dparams in the backward
 * structs is the descriptor's; the launcher swaps in the fp32 scratch where needed. */
void gj__forward_args(const gj__module_shape *shape, const gj_forward_desc *desc, gj_forward_args *args,
                      gj__launch_dims *dims);
void gj__backward_args(const gj__module_shape *shape, const gj_backward_desc *desc, gj_backward_args *args,
                       gj__launch_dims *dims);
void gj__backward_backward_args(const gj__module_shape *shape, const gj_backward_backward_desc *desc,
                                gj_backward_backward_args *args, gj__launch_dims *dims);
/* Whether a backward launch of desc takes dL/dx from desc->dy_dx or dy_dx_compact (NAME_dx_from_dydx, after
 * the gradient kernels); *grads: the descriptor the gradient kernels run, without dL_dx
 * then (nothing to run when it has neither output). */
int gj__backward_split(const gj_backward_desc *desc, gj_backward_desc *grads);
/* dL/dx from desc->dy_dx or dy_dx_compact (a grid-stride launch: grid x at most 2^20 blocks). */
void gj__dx_from_dydx_args(const gj__module_shape *shape, const gj_backward_desc *desc, gj_dx_from_dydx_args *args,
                           gj__launch_dims *dims);
/* The fewest levels per thread of an automatic backward launch to the parameters, where
 * no level's table takes more than GJ__BACKWARD_GROUP_MAX_LEVEL_BYTES (four such tables
 * fit in half of an H200's 60 MiB L2; a group of larger levels evicts the others). */
#define GJ__BACKWARD_MIN_LEVELS_PER_THREAD 4u
#define GJ__BACKWARD_GROUP_MAX_LEVEL_BYTES (8ull << 20)
/* The passes whose level-major launches choose their levels per thread differently. */
typedef enum gj__group_pass {
    GJ__GROUP_FORWARD = 0,         /* y, dy/dx */
    GJ__GROUP_BACKWARD_INPUT = 1,  /* dL/dx alone */
    GJ__GROUP_BACKWARD_PARAMS = 2, /* dL/dparams (and dL/dx) */
} gj__group_pass;
/* Levels per thread of a level-major launch of `pass`, with or without point-major rows (y or
 * dL/dy) (docs/runtime.md, "Launch shapes"), and the dynamic shared memory of staging rows
 * with that many levels per thread (0: not staged). */
uint32_t gj__levels_per_thread(const gj__module_shape *shape, gj__group_pass pass, int point_major_rows);
uint32_t gj__stage_bytes(const gj__module_shape *shape, uint32_t levels, uint32_t points, const void *rows,
                         gj_data_layout layout);
/* A block's points in level groups of `levels` (split: the forward's groups split one
 * level a thread, NAME_config::FORWARD_SPLIT). */
uint32_t gj__group_block_points(const gj__module_shape *shape, uint32_t levels, int split);
/* One thread per element: init_params and cast_gradients over n_params. */
void gj__elementwise_dims(const gj__module_shape *shape, gj__launch_dims *dims);
/* The coarse kernels' blocks per level per multiprocessor, after the main backward kernel and
 * beside it, and the fewest points from which they run beside it (gj__module_shape). After it,
 * with the device to themselves, four; beside it two, which on an H200 was as fast as four or
 * faster on every grid and model measured (S1 9 %, C1 with point-major dL/dy 2 %), where one
 * made C2's backward 16 % faster but the models' training steps 3 % slower (docs/runtime.md,
 * "The coarse levels beside the others"). */
#define GJ__COARSE_BLOCKS_PER_SM 4u
#define GJ__COARSE_BESIDE_BLOCKS_PER_SM 2u
#define GJ__COARSE_BESIDE_MIN_POINTS 65536ull
/* Whether a backward launch of desc uses NAME_backward_coarse, and its grid with
 * blocks_per_level blocks (> 0) per level. */
int gj__backward_uses_coarse(const gj__module_shape *shape, const gj_backward_desc *desc);
void gj__coarse_dims(const gj__module_shape *shape, uint32_t blocks_per_level, gj__launch_dims *dims);
/* args.coarse_blocks of a backward launch over n points: most (the blocks per multiprocessor
 * after or beside the main kernel, times the device's), fewer when the batch has fewer
 * blocks' worth of points. */
uint32_t gj__coarse_blocks(const gj__module_shape *shape, uint64_t n, uint32_t most);
/* The kernel a launch of filled args runs: the pass's kernel for the outputs asked for,
 * in its level-group (_rows) form where args has several levels per thread or staging.
 * Backward: the main kernel and the one for its small levels. */
gj__kernel_id gj__forward_kernel(const gj_forward_desc *desc, const gj_forward_args *args);
void gj__backward_kernels(const gj_backward_desc *desc, const gj_backward_args *args, gj__kernel_id *main,
                          gj__kernel_id *coarse);
/* The programs (a mask of 1u << gj__part) whose kernels a forward launch (dydx: with dy/dx), or
 * a backward launch to the parameters and/or dL/dx, of shape takes over y or dL/dy in layout
 * (point-major rows 4-byte aligned): the one-level form or the level-group (_rows) form (with
 * the coarse levels' kernel, where the launch takes it, of the same program). What a caller
 * that knows its launches prepares, instead of both forms. */
uint32_t gj__forward_parts(const gj__module_shape *shape, gj_data_layout layout, int dydx);
uint32_t gj__backward_parts(const gj__module_shape *shape, gj_data_layout layout, int params, int dx);

/* One module program (a part, docs/runtime.md) compiled for one architecture and loaded:
 * a CUlibrary serves every context and device of that architecture. */
typedef struct gj__module_program {
    gj__part part;           /* GJ__PART_ALL for the program gj_module_load was given */
    char arch[24];           /* what it was compiled for ("sm_90", "compute_90") */
    int sm;                  /* the device architecture it serves (90) */
    CUlibrary library;
    CUkernel kernels[GJ__KERNEL_COUNT]; /* the part's kernels; NULL elsewhere */
    double compile_ms;
    gj_cache_status cache;
    size_t binary_bytes;
} gj__module_program;

#define GJ__MODULE_MAX_PROGRAMS 64
#define GJ__MODULE_MAX_DEVICES 64

/* What a module keeps per device it has launched on. */
typedef struct gj__module_device {
    CUdevice device;
    int sm;                 /* compute capability, 90 for 9.0 */
    uint32_t multiprocessors; /* the coarse kernels' blocks per level are a count per multiprocessor */
    /* Asked on the first staging launch (gj__module_fit_carveout): shared memory per
     * multiprocessor (0: unknown) and of it, what the system reserves per block. */
    int smem_queried;
    uint32_t smem_per_sm, smem_reserved;
    /* fp32 gradient accumulator for fp16 parameters with F = 1 (docs/design.md §8.3):
     * allocated on first use, cast into the caller's fp16 array after each pass. */
    CUdeviceptr scratch;
    size_t scratch_bytes;
    CUcontext scratch_context;
} gj__module_device;

struct gj_module {
    gj__runtime *rt;
    const gj__diag *diag;
    gj__driver *drv;
    struct gj_encoding enc;   /* the module's own copy */
    gj_codegen_options opts;  /* resolved; name points into name */
    char name[72];
    gj__module_shape shape;
    pthread_mutex_t lock;     /* programs and devices */
    int given;                /* gj_module_load: every kernel comes from programs[0] */
    gj__module_program programs[GJ__MODULE_MAX_PROGRAMS];
    size_t n_programs;
    gj__module_device devices[GJ__MODULE_MAX_DEVICES];
    size_t n_devices;
    gj__context_cache contexts; /* per context: device record and kernel functions */
    gj__side_streams beside;    /* per context: where the coarse backward runs beside the main one */
};

/* ---- module_device.c: where a launch runs ---- */
/* A launch's context (runtime/scope.h), the module's record of its device and the
 * kernels resolved in that context so far (a copy taken on entry: read without the lock). */
typedef struct gj__launch_scope {
    gj__scope where;
    gj__module_device *device;
    CUfunction functions[GJ__KERNEL_COUNT];
    uint32_t carveout_for[GJ__KERNEL_COUNT]; /* the context slot's, as the scope found them */
} gj__launch_scope;
/* Enters the stream's context and finds what the module keeps for it: one lock, and driver
 * queries only on the first launch in a context. */
gj_status gj__module_enter(struct gj_module *m, gj_stream stream, const char *call, gj__launch_scope *scope);
void gj__module_leave(struct gj_module *m, gj__launch_scope *scope);
/* The kernel's function in the scope's context: from the scope when resolved before;
 * otherwise its program is compiled and loaded for the device's architecture (first use)
 * and the function kept for the context. */
gj_status gj__module_function(struct gj_module *m, gj__launch_scope *scope, gj__kernel_id id, const char *call,
                              CUfunction *out);
/* Before a launch of kernel id (function f, in the scope's context) with shared_bytes of
 * point-major rows staged in shared memory (0: none): the function's preferred L1 carveout,
 * chosen when the staged bytes differ from its last launch's in that context. */
gj_status gj__module_fit_carveout(struct gj_module *m, gj__launch_scope *scope, gj__kernel_id id, CUfunction f,
                                  uint32_t block, uint32_t shared_bytes, const char *call);
/* Before a launch of kernel id (function f): the dynamic shared bytes (*shared_bytes, at
 * least min_bytes, what the launch stages) and preferred carveout that keep at most `blocks`
 * blocks resident on a multiprocessor (l1_carveout.h), the carveout set once per context;
 * *shared_bytes 0 (no cap) where the device's shared memory is not known or no share fits
 * min_bytes. */
gj_status gj__module_cap_residency(struct gj_module *m, gj__launch_scope *scope, gj__kernel_id id, CUfunction f,
                                   int blocks, uint32_t min_bytes, uint32_t *shared_bytes, const char *call);
/* Frees every device's fp32 gradient buffer (each in its own context). */
void gj__module_free_scratch(struct gj_module *m);

/* ---- module_programs.c: compiling and loading the parts ---- */
/* The program holding kernel id for a device of architecture sm, compiled (through the
 * cache) and loaded on first use. Call with m->lock held. */
gj_status gj__module_program_for(struct gj_module *m, int sm, gj__kernel_id id, const gj__module_program **out);
/* Compiles the parts of passes for architecture sm in parallel and loads them: those of
 * part_mask (bit 1 << part) among them, or all (0). Call without m->lock: it compiles
 * without it (launches of the module's loaded programs go on meanwhile) and loads under it. */
gj_status gj__module_prepare_for(struct gj_module *m, int sm, uint32_t passes, uint32_t part_mask);
/* The same for the current context's device, entered as gj_module_prepare does
 * (call: the public function that asks, for messages). */
gj_status gj__module_prepare_parts(struct gj_module *m, uint32_t part_mask, const char *call);
/* Fills p from prog (a program of part; GJ__PART_ALL: every kernel of the passes) and
 * loads it with the part's kernels, each resolved in the current context
 * (gj__program_load). The caller counts it in (n_programs) and sets its sm. */
gj_status gj__module_load_program(struct gj_module *m, gj__module_program *p, gj__part part, const gj_program *prog);
/* Unloads every library. */
void gj__module_unload_all(struct gj_module *m);

/* The entry points behind the public calls that take a gj_context (src/api). */
gj_status gj__runtime_probe(gj__runtime *rt, gj_runtime_info *info);
gj_status gj__module_create(gj__runtime *rt, const struct gj_encoding *enc, const gj_codegen_options *opts,
                            struct gj_module **out);
gj_status gj__module_load(gj__runtime *rt, const struct gj_encoding *enc, const gj_codegen_options *opts,
                          const gj_program *prog, struct gj_module **out);
gj_status gj__device_alloc(gj__runtime *rt, size_t bytes, void **ptr);
void gj__device_free(gj__runtime *rt, void *ptr);
gj_status gj__memcpy(gj__runtime *rt, void *dst, const void *src, size_t bytes, int to_device);
gj_status gj__stream_synchronize(gj__runtime *rt, gj_stream stream);
gj_status gj__use_device(gj__runtime *rt, int device);
gj_status gj__memcpy_async(gj__runtime *rt, void *dst, const void *src, size_t bytes, gj_stream stream);

#endif
