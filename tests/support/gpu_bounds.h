/*
 * Error bounds for comparing GPU results with the double-precision CPU reference.
 *
 * The GPU computes in fp32 (fp16 parameters are widened; fp16 outputs rounded once at
 * the end; fp16 gradients with F >= 2 are summed with fp16 atomics). A sum of k terms,
 * each the product of a few factors, in float, is off by at most
 * (k + roundings per term) * u32 * (sum of the terms' absolute values), u32 = 2^-24
 * (recursive summation bound, Higham, Accuracy and Stability of Numerical Algorithms,
 * §4.2, to first order). The sums of absolute values are bounded here from the inputs,
 * per point and level (the largest |parameter| of the corners visited) and per parameter
 * (how many contributions it gets and their absolute sum), using that for t in [0, 1]
 * the weights w(t) lie in [0, 1] and sum to 1 over the corners, |w'| <= W1 (Linear 1,
 * Smoothstep 1.5, Nearest 0) and |w''|, w'^2 <= W2 (1, 6, 0).
 *
 * One exception to "roundings per term": the float 1-D factor 1 - w(t) inherits the
 * rounding error of w(t) absolutely (Smoothstep: w takes 3 roundings), so near w = 1 it is
 * tiny with a large relative error, and so is the corner weight. Bounds built on the
 * magnitudes above (theta_max, W1, products <= 1) cover that with their constants; the
 * per-parameter dL/dparams bound, built on the actual |weight * dL/dy|, measures each
 * term's own error separately (bwd_err).
 *
 * A bug (a wrong corner, feature, level, sign or term) moves a result by the size of a
 * term, i.e. by about the magnitude itself, far outside these bounds.
 */
#ifndef GJ_TEST_GPU_BOUNDS_H
#define GJ_TEST_GPU_BOUNDS_H

#include <stdint.h>

#include "cpu_reference.h"

#define GJ_U32 5.9604644775390625e-08    /* 2^-24: unit roundoff of float */
#define GJ_U16 4.8828125e-04             /* 2^-11: unit roundoff of fp16 */
#define GJ_SUB16 2.98023223876953125e-08 /* 2^-25: half the spacing of fp16 subnormals */

typedef struct gj_bounds {
    const gj_ref_encoding *ref;
    uint32_t D, L, F, n_out;
    uint64_t n, n_params;
    double w1, w2;
    double *theta_max; /* n * L: largest |parameter| over the corners of point i at level l */
    double *g_abs;     /* n * L: sum_f |dL/dy| of point i at level l (active levels; else 0) */
    double *h_abs;     /* n: sum_d |dL/d(dL/dx)| of point i */
    double *count;     /* n_params: contributions each parameter receives (upper bound) */
    double *bwd;       /* n_params: sum of |weight * dL/dy| over them */
    double *bwd_err;   /* n_params: sum of bounds, in units of u32, on those terms' own errors */
    double *bb;        /* n_params: sum of |dL/dy| * sum_d |H_d| * scale * W1 over them */
} gj_bounds;

/*
 * Measures everything above. x: n * D; params: n_params; dl_dy: n * n_out (unpadded,
 * point-major); h: n * D or NULL; max_level: n per-point values or NULL (then scalar).
 * Skips nothing: points with non-finite inputs get their (useless) bounds too.
 */
void gj_bounds_measure(gj_bounds *b, const gj_ref_encoding *ref, uint64_t n, const float *x, const double *params,
                       const double *dl_dy, const double *h, const float *max_level, double max_level_scalar);
void gj_bounds_free(gj_bounds *b);

/* One fp16 rounding of a value computed in fp32 (0 for fp32 outputs). */
double gj_bound_half(int fp16, double value);

/* y_lf of point i (output k = l * F + f): 2^D corner terms of D + 3 roundings,
 * |terms| summing to <= theta_max. Add gj_bound_half for fp16 outputs. */
double gj_bound_y(const gj_bounds *b, uint64_t i, uint32_t k);
/* dy_k/dx_d of point i: the same terms times scale * w' and differences: x scale * W1 * 2. */
double gj_bound_dydx(const gj_bounds *b, uint64_t i, uint32_t k);
/* dL/dx_d of point i: L * F * 2^D terms of D + 4 roundings, sizes summing to
 * <= sum_l scale_l * W1 * 2 theta_max * g_abs. */
double gj_bound_dx(const gj_bounds *b, uint64_t i);
/* Backward of backward: dL/d(dL/dy)_k (x D components of H) and dL/dx (second
 * derivatives: scale^2 * W2 * 4 theta_max, and the sum over H). */
double gj_bound_bb_ddldy(const gj_bounds *b, uint64_t i, uint32_t k);
double gj_bound_bb_dx(const gj_bounds *b, uint64_t i);
/*
 * dL/dparams p: count additions (atomics or per-block partial sums, any order; D times as
 * many for the backward of backward, which may add each dimension's term on its own),
 * summing with the prefill of accumulate mode, plus each term's own error (bwd_err, or
 * 5D + 2 roundings of the bb magnitude). fp16 gradients with
 * F >= 2 are summed with fp16 atomics, where each addend and each partial sum is rounded
 * to fp16 as well: + (adds + 1) * u16 * sum |terms| + (2 adds + 1) * SUB16. Otherwise
 * fp16 parameters (F = 1) round the fp32 sum once: + gj_bound_half(expected).
 */
double gj_bound_dparams(const gj_bounds *b, uint64_t p, int second_order, double prefill, int fp16, double expected);

#endif
