/*
 * Independent CPU reference of the grid encoding, in double precision, written from
 * docs/design.md §3-§6 (not from generated code). The GPU tests and `gridjit demo`
 * compare the generated kernels with it. It uses the public API only.
 *
 * Precision model: cell coordinates are found in float exactly as the GPU does
 * (p = fmaf(scale, x, 0.5f), t = p - floorf(p)); from there on everything (weights,
 * their derivatives, sums over corners and features) is double. Parameters come in
 * as doubles: a caller testing fp16 parameters rounds them to half first.
 *
 * Conventions the GPU code must follow too:
 * - Cell of a coordinate (gj_ref_float_to_cell): c = (uint32_t)(int32_t)floorf(p) with
 *   the saturation of CUDA's cvt.rzi.s32.f32: NaN -> 0, >= 2^31 -> INT32_MAX,
 *   < -2^31 -> INT32_MIN. t = p - floorf(p) stays NaN for NaN/Inf inputs, so such a
 *   point yields NaN outputs, but every table index stays in bounds.
 * - A level l is active iff (float)l < (float)max_level * (float)L + 1e-3f (float math);
 *   inactive levels output 0 and receive/produce no gradient.
 * - Index of a corner: docs/design.md §4; where resolution^D does not fit (resolution > MAX_BASES)
 *   and the grid is Dense or Tiled, sum_d v_d * resolution^d is taken exactly modulo the
 *   table size (the reference returns 0 there; gridjit deliberately differs).
 * - fixed_point_pos: the cell comes from the float's bits as in tcnn's
 *   generate_lookup_device_function; dL/dx uses the same formula as the float path,
 *   scale * w'(t) (the fixed-point position has no useful derivative w.r.t. the bits).
 * - Stochastic interpolation (backward w.r.t. params only): the sample is
 *   next_float(PCG32(1337, 1) advanced by point_index + level * n_points), computed in
 *   64-bit; per dimension u >= w(t_d) picks the lower corner, and the one corner gets
 *   weight 1. For Smoothstep w is compared in double (the GPU compares in float; they can
 *   differ only when u is within float rounding of w).
 *
 * No global state: every function is reentrant.
 */
#ifndef GJ_CPU_REFERENCE_H
#define GJ_CPU_REFERENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "gridjit.h"

#define GJ_REF_MAX_DIMS 32
#define GJ_REF_MAX_LEVELS 128

typedef struct gj_ref_level {
    float scale;         /* as in docs/design.md §2, computed in float */
    uint32_t resolution; /* ceil(scale) + 1 */
    uint32_t entries;    /* table entries of this level */
    uint64_t offset;     /* first entry of this level; first parameter is offset * F */
} gj_ref_level;

typedef struct gj_ref_encoding {
    uint32_t n_dims, n_levels, n_features_per_level;
    gj_grid_type type;
    gj_hash hash;
    gj_interpolation interpolation;
    bool fixed_point_pos, stochastic_interpolation;
    gj_ref_level levels[GJ_REF_MAX_LEVELS];
    uint64_t n_params;
} gj_ref_encoding;

/* Copies what the reference needs from an encoding (through the public API). */
void gj_ref_from_encoding(gj_ref_encoding *ref, const gj_encoding *enc);

/* ---- building blocks, exposed so tests can check them one by one ---- */

/* MAX_BASES[D] of docs/design.md §4; 0 for D > 10 (never dense). */
uint32_t gj_ref_max_base(uint32_t n_dims);

/* (float)level < (float)max_level * L + 1e-3f, in float as the GPU computes it. */
bool gj_ref_level_active(const gj_ref_encoding *ref, uint32_t level, double max_level);

/* c = saturating (uint32_t)(int32_t)floorf(p) (see above), t = p - floorf(p). */
void gj_ref_float_to_cell(float p, uint32_t *c, float *t);

/* Cell c[D] and fraction t[D] of point x at a level, as the GPU computes them
 * (float fma, or the fixed-point path when ref->fixed_point_pos). */
void gj_ref_locate(const gj_ref_encoding *ref, uint32_t level, const float *x, uint32_t *c, double *t);

/* Same in double (p = scale * x + 0.5 in double), ignoring fixed_point_pos: only for
 * finite-difference checks, where float rounding of t would swamp the differences. */
void gj_ref_locate_double(const gj_ref_encoding *ref, uint32_t level, const double *x, uint32_t *c, double *t);

/* Hash of docs/design.md §5 of a corner v[n_dims], before the modulo. Prime hashes need D <= 7. */
uint32_t gj_ref_hash(gj_hash hash, uint32_t n_dims, const uint32_t *v);

/* Table entry of corner v[D] at a level (docs/design.md §4, with the exact wrap described above),
 * in [0, entries). */
uint32_t gj_ref_corner_index(const gj_ref_encoding *ref, uint32_t level, const uint32_t *corner);

/* ---- PCG32 (O'Neill's PCG-XSH-RR 64/32, as tcnn's pcg32) ---- */
typedef struct gj_ref_pcg32 {
    uint64_t state, inc;
} gj_ref_pcg32;

void gj_ref_pcg32_seed(gj_ref_pcg32 *rng, uint64_t initstate, uint64_t initseq);
uint32_t gj_ref_pcg32_next(gj_ref_pcg32 *rng);
/* Float in [0,1): bits (next >> 9) | 0x3f800000 read as float, minus 1.0f. */
float gj_ref_pcg32_next_float(gj_ref_pcg32 *rng);
/* Jumps delta steps ahead (mod 2^64: delta = 2^64 - 1 steps back one) in O(log delta). */
void gj_ref_pcg32_advance(gj_ref_pcg32 *rng, uint64_t delta);

/* The stochastic-interpolation sample of a point at a level (see above). */
float gj_ref_stochastic_sample(uint64_t point_index, uint64_t n_points, uint32_t level);

/* ---- passes (one point; max_level: the point's m in [0,1], 1.0 for all levels) ---- */

/* y[L*F]: output feature l*F + f of level l (padding is the caller's). */
void gj_ref_forward(const gj_ref_encoding *ref, const double *params, const float *x, double max_level, double *y);

/* dL_dparams (n_params) is accumulated (+=); dL_dx (D) is written. Either may be NULL.
 * point_index and n_points matter only for stochastic interpolation. */
void gj_ref_backward(const gj_ref_encoding *ref, const double *params, const float *x, double max_level,
                     uint64_t point_index, uint64_t n_points, const double *dL_dy, double *dL_dparams, double *dL_dx);

/* Gradient of a loss on dL/dx: given dL_ddLdx (D) and the dL_dy (L*F) of the backward
 * pass, accumulates dL_dparams (+=) and writes dL_ddLdy (L*F) and dL_dx (D). Any output
 * may be NULL. Not stochastic. Nearest: all zero. */
void gj_ref_backward_backward(const gj_ref_encoding *ref, const double *params, const float *x, double max_level,
                              const double *dL_ddLdx, const double *dL_dy, double *dL_dparams, double *dL_ddLdy,
                              double *dL_dx);

/* The same three passes with x in double (gj_ref_locate_double), for finite differences. */
void gj_ref_forward_xd(const gj_ref_encoding *ref, const double *params, const double *x, double max_level,
                       double *y);
void gj_ref_backward_xd(const gj_ref_encoding *ref, const double *params, const double *x, double max_level,
                        uint64_t point_index, uint64_t n_points, const double *dL_dy, double *dL_dparams,
                        double *dL_dx);
void gj_ref_backward_backward_xd(const gj_ref_encoding *ref, const double *params, const double *x,
                                 double max_level, const double *dL_ddLdx, const double *dL_dy, double *dL_dparams,
                                 double *dL_ddLdy, double *dL_dx);

#endif
