/* Error bounds of the GPU tests (see gpu_bounds.h for the reasoning). */
#include "gpu_bounds.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double weight_of(gj_interpolation interp, double t) {
    return interp == GJ_INTERP_SMOOTHSTEP ? t * t * (3.0 - 2.0 * t) : interp == GJ_INTERP_LINEAR ? t : 0.0;
}

static void *zeros(uint64_t count) {
    void *p = calloc(count ? count : 1, sizeof(double));
    if (!p) {
        abort(); /* a test helper: nothing sensible to do without memory */
    }
    return p;
}

/*
 * Absolute error, in units of u32, of the kernel's float 1-D weight factor (upper: w,
 * lower: 1 - w) against the exact one, t being exact in both. Smoothstep's w = t t (3 - 2t)
 * takes 3 roundings: w (1 + 3u); 1 - w then rounds once more, but inherits w's error
 * absolutely: near w = 1 the factor 1 - w is tiny and its relative error large, so a term's
 * error is not a multiple of its size. Linear's w = t is exact; only 1 - t rounds.
 * Nearest and stochastic interpolation add g itself (weight 1.0f): no factor error.
 */
static double factor_error(const gj_ref_encoding *ref, double w, int up) {
    if (ref->stochastic_interpolation || ref->interpolation == GJ_INTERP_NEAREST) {
        return 0.0;
    }
    const double w_err = ref->interpolation == GJ_INTERP_SMOOTHSTEP ? 3.0 * w : 0.0;
    return up ? w_err : w_err + (1.0 - w);
}

/* One corner: its weight (the product of its 1-D factors) and a bound, in units of u32,
 * on the error of the float term weight * g relative to |g|: each factor's error times the
 * other factors, plus D - 1 roundings of the product and one of the multiplication by g. */
static double corner_weight(const gj_bounds *b, const double *t, uint64_t c, uint32_t *corner, const uint32_t *cell,
                            double *error) {
    const gj_ref_encoding *ref = b->ref;
    double factor[GJ_REF_MAX_DIMS], factor_err[GJ_REF_MAX_DIMS], weight = 1.0;
    for (uint32_t d = 0; d < b->D; ++d) {
        const int up = (int)((c >> d) & 1u);
        corner[d] = cell[d] + (uint32_t)up;
        const double w = weight_of(ref->interpolation, t[d]);
        factor[d] = up ? w : 1.0 - w;
        factor_err[d] = factor_error(ref, w, up);
        weight *= factor[d];
    }
    double err = b->D * weight;
    for (uint32_t d = 0; d < b->D; ++d) {
        double others = factor_err[d];
        for (uint32_t e = 0; e < b->D; ++e) {
            others *= e == d ? 1.0 : factor[e];
        }
        err += others;
    }
    if (ref->stochastic_interpolation || !(weight == weight)) {
        /* one corner gets weight 1 (or t is NaN): bound by 1 everywhere */
        weight = 1.0;
        err = b->D;
    }
    *error = err;
    return weight;
}

/* One point at one level: theta_max and the per-parameter sums of its corners. */
static void measure_level(gj_bounds *b, uint64_t i, uint32_t l, const float *x, const double *params,
                          const double *g, int active) {
    const gj_ref_encoding *ref = b->ref;
    uint32_t cell[GJ_REF_MAX_DIMS], corner[GJ_REF_MAX_DIMS];
    double t[GJ_REF_MAX_DIMS];
    gj_ref_locate(ref, l, x, cell, t);
    double theta = 0.0;
    for (uint64_t c = 0; c < (1ull << b->D); ++c) {
        double err;
        const double weight = corner_weight(b, t, c, corner, cell, &err);
        const uint64_t base = (ref->levels[l].offset + gj_ref_corner_index(ref, l, corner)) * b->F;
        for (uint32_t f = 0; f < b->F; ++f) {
            theta = fmax(theta, fabs(params[base + f]));
            if (active) {
                const double gf = fabs(g[l * b->F + f]);
                b->count[base + f] += 1.0;
                b->bwd[base + f] += weight * gf;
                b->bwd_err[base + f] += err * gf;
                b->bb[base + f] += gf * b->h_abs[i] * ref->levels[l].scale * b->w1;
            }
        }
    }
    b->theta_max[i * b->L + l] = theta;
}

void gj_bounds_measure(gj_bounds *b, const gj_ref_encoding *ref, uint64_t n, const float *x, const double *params,
                       const double *dl_dy, const double *h, const float *max_level, double max_level_scalar) {
    memset(b, 0, sizeof *b);
    b->ref = ref;
    b->D = ref->n_dims;
    b->L = ref->n_levels;
    b->F = ref->n_features_per_level;
    b->n_out = b->L * b->F;
    b->n = n;
    b->n_params = ref->n_params;
    b->w1 = ref->interpolation == GJ_INTERP_SMOOTHSTEP ? 1.5 : ref->interpolation == GJ_INTERP_LINEAR ? 1.0 : 0.0;
    b->w2 = ref->interpolation == GJ_INTERP_SMOOTHSTEP ? 6.0 : ref->interpolation == GJ_INTERP_LINEAR ? 1.0 : 0.0;
    b->theta_max = zeros(n * b->L);
    b->g_abs = zeros(n * b->L);
    b->h_abs = zeros(n);
    b->count = zeros(b->n_params);
    b->bwd = zeros(b->n_params);
    b->bwd_err = zeros(b->n_params);
    b->bb = zeros(b->n_params);
    for (uint64_t i = 0; i < n; ++i) {
        for (uint32_t d = 0; h && d < b->D; ++d) {
            b->h_abs[i] += fabs(h[i * b->D + d]);
        }
        const double m = max_level ? (double)max_level[i] : max_level_scalar;
        const double *g = dl_dy + i * b->n_out;
        for (uint32_t l = 0; l < b->L; ++l) {
            const int active = gj_ref_level_active(ref, l, m);
            for (uint32_t f = 0; active && f < b->F; ++f) {
                b->g_abs[i * b->L + l] += fabs(g[l * b->F + f]);
            }
            measure_level(b, i, l, x + i * b->D, params, g, active);
        }
    }
}

void gj_bounds_free(gj_bounds *b) {
    free(b->theta_max);
    free(b->g_abs);
    free(b->h_abs);
    free(b->count);
    free(b->bwd);
    free(b->bwd_err);
    free(b->bb);
    memset(b, 0, sizeof *b);
}

double gj_bound_half(int fp16, double value) {
    return fp16 ? GJ_U16 * fabs(value) + GJ_SUB16 : 0.0;
}

static double corner_roundings(const gj_bounds *b) {
    return (double)(1ull << b->D) * (b->D + 3);
}

double gj_bound_y(const gj_bounds *b, uint64_t i, uint32_t k) {
    return corner_roundings(b) * GJ_U32 * b->theta_max[i * b->L + k / b->F];
}

double gj_bound_dydx(const gj_bounds *b, uint64_t i, uint32_t k) {
    const uint32_t l = k / b->F;
    return corner_roundings(b) * GJ_U32 * b->ref->levels[l].scale * b->w1 * 2.0 * b->theta_max[i * b->L + l];
}

double gj_bound_dx(const gj_bounds *b, uint64_t i) {
    double mag = 0.0;
    for (uint32_t l = 0; l < b->L; ++l) {
        mag += b->ref->levels[l].scale * b->w1 * 2.0 * b->theta_max[i * b->L + l] * b->g_abs[i * b->L + l];
    }
    const double k = (double)b->L * b->F * (1ull << b->D) * (b->D + 4);
    return k * GJ_U32 * mag;
}

double gj_bound_bb_ddldy(const gj_bounds *b, uint64_t i, uint32_t k) {
    const uint32_t l = k / b->F;
    const double mag = b->h_abs[i] * b->ref->levels[l].scale * b->w1 * 2.0 * b->theta_max[i * b->L + l];
    return (double)b->D * corner_roundings(b) * GJ_U32 * mag;
}

double gj_bound_bb_dx(const gj_bounds *b, uint64_t i) {
    double mag = 0.0;
    for (uint32_t l = 0; l < b->L; ++l) {
        const double s = b->ref->levels[l].scale;
        mag += s * s * b->w2 * 4.0 * b->theta_max[i * b->L + l] * b->g_abs[i * b->L + l] * b->h_abs[i];
    }
    const double k = (double)b->L * b->F * (1ull << b->D) * (b->D + 4) * b->D;
    return k * GJ_U32 * mag;
}

double gj_bound_dparams(const gj_bounds *b, uint64_t p, int second_order, double prefill, int fp16, double expected) {
    const double sum_abs = (second_order ? b->bb[p] : b->bwd[p]) + fabs(prefill);
    /* The backward of backward may add one term per dimension of each corner separately. */
    const double adds = second_order ? b->count[p] * b->D : b->count[p];
    /*
     * The terms' own errors. Backward: measured per term (bwd_err; the weight factors' errors
     * are absolute, see factor_error). Backward of backward: relative to the bb magnitude,
     * which bounds |w'| by W1 and every weight product by 1, so the products' absolute errors
     * count against 1. Per term: dw = scale * 6t(1 - t) (4 roundings), H_d * dw (1), the
     * product P_d of the other D - 1 factors (3 each, plus D - 2 multiplications), the D
     * fma of A (D) and A * g (1): 5D + 1 for D >= 2, 7 for D = 1; 5D + 2 covers both.
     */
    const double own = second_order ? (5.0 * b->D + 2.0) * sum_abs : b->bwd_err[p];
    double tol = (adds * sum_abs + own) * GJ_U32;
    if (fp16 && b->F > 1) {
        /* each addend and each partial sum rounded to fp16: relative u16, or absolute SUB16 */
        tol += (adds + 1.0) * GJ_U16 * sum_abs + (2.0 * adds + 1.0) * GJ_SUB16;
    } else {
        tol += gj_bound_half(fp16, expected);
    }
    return tol;
}
