/* ---------------------------------------------------------------------------
 * gridjit: arguments of the generated kernels, one struct per kernel, passed by
 * value. Plain C on purpose: the host runtime (src/, C11) includes this file too,
 * so both sides agree on the layout (only 64-bit pointers, u64 and 32-bit fields).
 *
 * Strided arrays: element (point i, component j) lives at base[i * stride_point +
 * j * stride_component]. Point-major (AoS) data has stride_point = width,
 * stride_component = 1; feature-major (SoA) data has stride_point = 1,
 * stride_component = n.
 * ------------------------------------------------------------------------- */
#ifndef GJ_KERNEL_ARGS_CUH
#define GJ_KERNEL_ARGS_CUH

typedef struct gj_forward_args {
    unsigned long long n;                 /* points */
    const float *x;                       /* inputs, D per point */
    unsigned long long x_stride_point, x_stride_dim;
    const void *params;                   /* param_t[n_params] */
    void *y;                              /* param_t outputs (padded width), or NULL */
    unsigned long long y_stride_point, y_stride_feature;
    float *dy_dx;                         /* or NULL: dy_k/dx_d at [(k * n + i) * D + d], k < n_output_dims */
    const float *max_level_per_point;     /* or NULL */
    float max_level;                      /* in [0, 1]; used when max_level_per_point is NULL */
    /* Level-major kernels: each thread handles levels_per_thread (>= 1) consecutive levels
     * of its points; grid y = ceil(levels / levels_per_thread) level groups. stage = 1 (with
     * point-major y rows, when a group's F * levels_per_thread outputs are whole 32-bit
     * words): each block keeps its rows' group in dynamic shared memory, block * points per
     * thread * ((group bytes / 4) | 1) words, and writes them with coalesced stores. */
    unsigned int levels_per_thread;
    unsigned int stage;
    /* Or NULL: dy/dx compact, as dy_dx but 16-bit, each level's values divided by its scale
     * and rounded to fp16 (gj_dx_from_dydx_args reads it). */
    void *dy_dx_compact;
} gj_forward_args;

typedef struct gj_backward_args {
    unsigned long long n;
    const float *x;
    unsigned long long x_stride_point, x_stride_dim;
    const void *params;
    const void *dL_dy;                    /* param_t, padded width (padding ignored) */
    unsigned long long dy_stride_point, dy_stride_feature;
    void *dL_dparams;                     /* grad_t[n_params], accumulated into; or NULL */
    float *dL_dx;                         /* or NULL; level-major kernels accumulate (zero it first) */
    unsigned long long dx_stride_point, dx_stride_dim;
    const float *max_level_per_point;
    float max_level;
    /* Level-major only. 0: every level is done by NAME_backward with global atomics.
     * B > 0: the levels small enough for shared memory (NAME_config::SMALL_LEVEL_FLOATS)
     * are skipped by NAME_backward and done by NAME_backward_coarse, launched with grid
     * (B, L) and NAME_config::SMALL_LEVEL_FLOATS * 4 bytes of dynamic shared memory:
     * each of its B blocks sums a grid-stride share of the points in shared memory and
     * adds the sums to dL_dparams once. Use a few blocks per multiprocessor. */
    unsigned int coarse_blocks;
    /* As in gj_forward_args; stage reads point-major dL/dy rows (NAME_backward*). */
    unsigned int levels_per_thread;
    unsigned int stage;
    /* Global-atomic backward: when at least this many lanes of a full warp share their
     * cell with the lane before them (inputs ordered along rays), the lanes of each run
     * sum their contributions with shuffles and one lane adds the sums. 0: never. */
    unsigned int aggregate_min;
} gj_backward_args;

typedef struct gj_backward_backward_args {
    unsigned long long n;
    const float *x;
    unsigned long long x_stride_point, x_stride_dim;
    const void *params;
    const float *dL_ddLdx;                /* D per point */
    unsigned long long ddx_stride_point, ddx_stride_dim;
    const void *dL_dy;                    /* param_t, padded width */
    unsigned long long dy_stride_point, dy_stride_feature;
    void *dL_dparams;                     /* grad_t, accumulated into; or NULL */
    void *dL_ddLdy;                       /* param_t, padded width (padding written as 0); or NULL */
    unsigned long long ddy_stride_point, ddy_stride_feature;
    float *dL_dx;                         /* written; or NULL */
    unsigned long long dx_stride_point, dx_stride_dim;
    const float *max_level_per_point;
    float max_level;
    unsigned int pad0;
} gj_backward_backward_args;

/* Uniform initialisation in [-1e-4 * scale, 1e-4 * scale]: element i draws from
 * PCG32(seed, 1) advanced by i, so the result does not depend on the launch. */
typedef struct gj_init_args {
    unsigned long long n;
    void *params;                         /* param_t[n] */
    float *params_fp32;                   /* or NULL: full-precision copy */
    unsigned long long seed;
    float scale;
    unsigned int pad0;
} gj_init_args;

/* dL/dx_d of point i = sum over outputs k < N_OUT of dL/dy_k * dy_k/dx_d, from the dy/dx
 * the forward pass wrote ([(k * n + i) * D + d]). */
typedef struct gj_dx_from_dydx_args {
    unsigned long long n;
    const float *dy_dx;                   /* or NULL, then: */
    const void *dy_dx_compact;            /* gj_forward_args.dy_dx_compact's form */
    const void *dL_dy;                    /* param_t, padded width (padding ignored) */
    unsigned long long dy_stride_point, dy_stride_feature;
    float *dL_dx;                         /* written */
    unsigned long long dx_stride_point, dx_stride_dim;
} gj_dx_from_dydx_args;

/* dst[i] = (accumulate ? dst[i] : 0) + src[i], fp32 -> param_t: for gradients that
 * are accumulated in fp32 (F = 1 with fp16 parameters). */
typedef struct gj_cast_args {
    unsigned long long n;
    const float *src;
    void *dst;
    unsigned int accumulate;
    unsigned int pad0;
} gj_cast_args;

#endif /* GJ_KERNEL_ARGS_CUH */
