/*
 * Independent CPU reference of the grid encoding (see cpu_reference.h), written from
 * docs/design.md §3-§6. Float steps mirror the GPU; everything after the cell fraction t is
 * double. Plain ISO C: GCC does not contract a*b+c into fma in -std=c11 mode, so the
 * float expressions below round exactly as written.
 */
#include "cpu_reference.h"

#include <assert.h>
#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- config */

void gj_ref_from_encoding(gj_ref_encoding *ref, const gj_encoding *enc) {
    memset(ref, 0, sizeof(*ref));
    ref->n_dims = gj_encoding_n_dims(enc);
    ref->n_levels = gj_encoding_n_levels(enc);
    ref->n_features_per_level = gj_encoding_n_features_per_level(enc);
    ref->type = gj_encoding_grid_type(enc);
    ref->hash = gj_encoding_hash(enc);
    ref->interpolation = gj_encoding_interpolation(enc);
    ref->fixed_point_pos = gj_encoding_fixed_point_pos(enc) != 0;
    ref->stochastic_interpolation = gj_encoding_stochastic_interpolation(enc) != 0;
    for (uint32_t l = 0; l < ref->n_levels && l < GJ_REF_MAX_LEVELS; ++l) {
        gj_level_info info;
        gj_encoding_level(enc, l, &info);
        ref->levels[l].scale = info.scale;
        ref->levels[l].resolution = info.resolution;
        ref->levels[l].entries = info.entries;
        ref->levels[l].offset = info.offset;
    }
    ref->n_params = gj_encoding_n_params(enc);
}

uint32_t gj_ref_max_base(uint32_t n_dims) {
    static const uint32_t max_bases[11] = {0, 0xFFFFFFFFu, 0xFFFFu, 0x659u, 0xFFu, 0x54u,
                                           0x28u, 0x17u, 0xFu, 0xBu, 0x9u};
    return n_dims <= 10 ? max_bases[n_dims] : 0u;
}

bool gj_ref_level_active(const gj_ref_encoding *ref, uint32_t level, double max_level) {
    /* Two separately rounded float operations, as the GPU must do them. */
    float m_times_l = (float)max_level * (float)ref->n_levels;
    float limit = m_times_l + 1e-3f;
    return (float)level < limit;
}

/* ---------------------------------------------------------------- cells */

/* CUDA cvt.rzi.s32.f32: truncation with saturation, NaN -> 0. */
static int32_t float_to_int_sat(float f) {
    if (isnan(f)) {
        return 0;
    }
    if (f >= 2147483648.0f) {
        return INT32_MAX;
    }
    if (f < -2147483648.0f) {
        return INT32_MIN;
    }
    return (int32_t)f;
}

/* CUDA cvt.rzi.u32.f32: truncation with saturation, NaN and negatives -> 0. */
static uint32_t float_to_uint_sat(float f) {
    if (isnan(f) || f <= 0.0f) {
        return 0;
    }
    if (f >= 4294967296.0f) {
        return UINT32_MAX;
    }
    return (uint32_t)f;
}

static int32_t double_to_int_sat(double f) {
    if (isnan(f)) {
        return 0;
    }
    if (f >= 2147483648.0) {
        return INT32_MAX;
    }
    if (f < -2147483648.0) {
        return INT32_MIN;
    }
    return (int32_t)f;
}

void gj_ref_float_to_cell(float p, uint32_t *c, float *t) {
    float floor_p = floorf(p);
    *c = (uint32_t)float_to_int_sat(floor_p);
    *t = p - floor_p;
}

/* fixed_point_pos (tcnn generate_lookup_device_function): the float's bits are a position
 * in [0, 2^32) units; cells are 2^32/scale units wide, shifted by half a cell. */
static void locate_fixed_point(float scale, uint32_t n_dims, const float *x, uint32_t *c, double *t) {
    uint32_t cell_size = float_to_uint_sat((float)0xFFFFFFFFu / scale);
    if (cell_size < 1) {
        cell_size = 1;
    }
    for (uint32_t d = 0; d < n_dims; ++d) {
        uint32_t bits;
        memcpy(&bits, &x[d], sizeof(bits));
        uint32_t pos_fixed = bits + cell_size / 2;
        uint32_t cell = pos_fixed / cell_size + ((pos_fixed < cell_size / 2) ? float_to_uint_sat(scale) : 0u);
        float frac = scale / (float)0xFFFFFFFFu * (float)(uint32_t)(pos_fixed - cell * cell_size);
        c[d] = cell;
        t[d] = (double)frac;
    }
}

void gj_ref_locate(const gj_ref_encoding *ref, uint32_t level, const float *x, uint32_t *c, double *t) {
    float scale = ref->levels[level].scale;
    if (ref->fixed_point_pos) {
        locate_fixed_point(scale, ref->n_dims, x, c, t);
        return;
    }
    for (uint32_t d = 0; d < ref->n_dims; ++d) {
        float frac;
        gj_ref_float_to_cell(fmaf(scale, x[d], 0.5f), &c[d], &frac);
        t[d] = (double)frac;
    }
}

void gj_ref_locate_double(const gj_ref_encoding *ref, uint32_t level, const double *x, uint32_t *c, double *t) {
    double scale = (double)ref->levels[level].scale;
    for (uint32_t d = 0; d < ref->n_dims; ++d) {
        double p = scale * x[d] + 0.5;
        double floor_p = floor(p);
        c[d] = (uint32_t)double_to_int_sat(floor_p);
        t[d] = p - floor_p;
    }
}

/* ---------------------------------------------------------------- PCG32 */

#define GJ_REF_PCG32_MULT 0x5851f42d4c957f2dULL

void gj_ref_pcg32_seed(gj_ref_pcg32 *rng, uint64_t initstate, uint64_t initseq) {
    rng->state = 0;
    rng->inc = (initseq << 1u) | 1u;
    (void)gj_ref_pcg32_next(rng);
    rng->state += initstate;
    (void)gj_ref_pcg32_next(rng);
}

uint32_t gj_ref_pcg32_next(gj_ref_pcg32 *rng) {
    uint64_t old = rng->state;
    rng->state = old * GJ_REF_PCG32_MULT + rng->inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

float gj_ref_pcg32_next_float(gj_ref_pcg32 *rng) {
    uint32_t bits = (gj_ref_pcg32_next(rng) >> 9) | 0x3f800000u;
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f - 1.0f;
}

/* Brown, "Random number generation with arbitrary strides": the LCG step s -> a*s + c
 * composed with itself delta times is s -> A*s + C, built by repeated squaring. */
void gj_ref_pcg32_advance(gj_ref_pcg32 *rng, uint64_t delta) {
    uint64_t cur_mult = GJ_REF_PCG32_MULT, cur_plus = rng->inc;
    uint64_t acc_mult = 1u, acc_plus = 0u;
    while (delta > 0) {
        if (delta & 1u) {
            acc_mult *= cur_mult;
            acc_plus = acc_plus * cur_mult + cur_plus;
        }
        cur_plus = (cur_mult + 1u) * cur_plus;
        cur_mult *= cur_mult;
        delta >>= 1u;
    }
    rng->state = acc_mult * rng->state + acc_plus;
}

float gj_ref_stochastic_sample(uint64_t point_index, uint64_t n_points, uint32_t level) {
    gj_ref_pcg32 rng;
    gj_ref_pcg32_seed(&rng, 1337u, 1u);
    gj_ref_pcg32_advance(&rng, point_index + (uint64_t)level * n_points);
    return gj_ref_pcg32_next_float(&rng);
}

/* ---------------------------------------------------------------- hashes and indices */

static const uint32_t primes[7] = {1958374283u, 2654435761u, 805459861u, 3674653429u,
                                   2097192037u, 1434869437u, 2165219737u};

static uint32_t prime_factor(gj_hash hash, uint32_t d) {
    assert(d < 7 && "prime hashes have 7 constants");
    if (hash == GJ_HASH_REVERSED_PRIME) {
        return primes[6 - d];
    }
    if (hash == GJ_HASH_COHERENT_PRIME && d == 0) {
        return 1u;
    }
    return primes[d];
}

static uint32_t rng_hash(uint32_t n_dims, const uint32_t *v) {
    uint32_t bits_per_dim = 64u / n_dims;
    uint64_t step = 0;
    for (uint32_t d = 0; d < n_dims; ++d) {
        step ^= (uint64_t)v[d] << (d * bits_per_dim);
    }
    gj_ref_pcg32 rng;
    gj_ref_pcg32_seed(&rng, 1337u, 1u);
    gj_ref_pcg32_advance(&rng, step);
    return gj_ref_pcg32_next(&rng);
}

uint32_t gj_ref_hash(gj_hash hash, uint32_t n_dims, const uint32_t *v) {
    uint32_t k = 0;
    switch (hash) {
    case GJ_HASH_RNG:
        return rng_hash(n_dims, v);
    case GJ_HASH_BASE_CONVERT:
        for (uint32_t d = 0; d < n_dims; ++d) {
            k = (k + v[d]) * 2531011u;
        }
        return k;
    case GJ_HASH_PRIME:
    case GJ_HASH_COHERENT_PRIME:
    case GJ_HASH_REVERSED_PRIME:
        for (uint32_t d = 0; d < n_dims; ++d) {
            k ^= v[d] * prime_factor(hash, d);
        }
        return k;
    }
    assert(!"unknown hash");
    return 0;
}

/* sum_d v_d * res^d modulo entries, exactly (Horner from the slowest dimension). */
static uint32_t exact_dense_mod(uint32_t n_dims, uint32_t res, uint32_t entries, const uint32_t *v) {
    uint64_t res_mod = res % entries, acc = 0;
    for (uint32_t d = n_dims; d-- > 0;) {
        acc = (acc * res_mod + v[d] % entries) % entries;
    }
    return (uint32_t)acc;
}

uint32_t gj_ref_corner_index(const gj_ref_encoding *ref, uint32_t level, const uint32_t *corner) {
    const gj_ref_level *lv = &ref->levels[level];
    uint32_t n_dims = ref->n_dims;
    bool fits = lv->resolution <= gj_ref_max_base(n_dims);
    uint64_t stride = 0xFFFFFFFFu;
    uint32_t index = 0;
    if (fits) {
        uint32_t dim_stride = 1; /* res^d, cannot overflow below res^D <= 2^32 - 1 */
        stride = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            index += corner[d] * dim_stride; /* wraps like the GPU's uint32 */
            dim_stride *= lv->resolution;
            stride *= lv->resolution;
        }
    }
    if (ref->type == GJ_GRID_HASH && (uint64_t)lv->entries < stride) {
        return gj_ref_hash(ref->hash, n_dims, corner) % lv->entries;
    }
    if (!fits) {
        return exact_dense_mod(n_dims, lv->resolution, lv->entries, corner);
    }
    return index % lv->entries;
}

/* ---------------------------------------------------------------- passes */

/* Where the point comes from: GPU-style float (xf) or double (xd, for finite differences). */
typedef struct ref_input {
    const float *xf;
    const double *xd;
} ref_input;

/* One level of one point: cell, weights w(t) and their x-derivatives. */
typedef struct level_point {
    uint32_t cell[GJ_REF_MAX_DIMS];
    double t[GJ_REF_MAX_DIMS];
    double w[GJ_REF_MAX_DIMS];   /* w(t) */
    double dw[GJ_REF_MAX_DIMS];  /* dw/dx = scale * w'(t) */
    double ddw[GJ_REF_MAX_DIMS]; /* d2w/dx2 = scale^2 * w''(t) */
} level_point;

/* Per corner, per dimension: weight factor and its first and second x-derivatives. */
typedef struct corner_weights {
    double wt[GJ_REF_MAX_DIMS], dwt[GJ_REF_MAX_DIMS], ddwt[GJ_REF_MAX_DIMS];
} corner_weights;

static void interpolation_weights(gj_interpolation interp, double t, double *w, double *w1, double *w2) {
    if (interp == GJ_INTERP_SMOOTHSTEP) {
        *w = t * t * (3.0 - 2.0 * t);
        *w1 = 6.0 * t * (1.0 - t);
        *w2 = 6.0 - 12.0 * t;
    } else { /* Linear; Nearest never uses them */
        *w = t;
        *w1 = 1.0;
        *w2 = 0.0;
    }
}

static void level_point_init(const gj_ref_encoding *ref, uint32_t level, ref_input in, level_point *lp) {
    if (in.xf) {
        gj_ref_locate(ref, level, in.xf, lp->cell, lp->t);
    } else {
        gj_ref_locate_double(ref, level, in.xd, lp->cell, lp->t);
    }
    double s = (double)ref->levels[level].scale;
    for (uint32_t d = 0; d < ref->n_dims; ++d) {
        double w1, w2;
        interpolation_weights(ref->interpolation, lp->t[d], &lp->w[d], &w1, &w2);
        lp->dw[d] = s * w1;
        lp->ddw[d] = s * s * w2;
    }
}

/* Corner number b (bit d set: upper neighbour in dimension d): its first parameter. */
static uint64_t corner_param_base(const gj_ref_encoding *ref, uint32_t level, const level_point *lp, uint64_t b,
                                  corner_weights *cw) {
    uint32_t v[GJ_REF_MAX_DIMS];
    for (uint32_t d = 0; d < ref->n_dims; ++d) {
        bool upper = (b >> d) & 1u;
        v[d] = lp->cell[d] + (upper ? 1u : 0u);
        if (cw) {
            double sign = upper ? 1.0 : -1.0;
            cw->wt[d] = upper ? lp->w[d] : 1.0 - lp->w[d];
            cw->dwt[d] = sign * lp->dw[d];
            cw->ddwt[d] = sign * lp->ddw[d];
        }
    }
    uint32_t index = gj_ref_corner_index(ref, level, v);
    return (ref->levels[level].offset + index) * ref->n_features_per_level;
}

/* Product of wt over all dimensions except skip_a and skip_b (pass n_dims for none). */
static double weight_product(const corner_weights *cw, uint32_t n_dims, uint32_t skip_a, uint32_t skip_b) {
    double product = 1.0;
    for (uint32_t e = 0; e < n_dims; ++e) {
        if (e != skip_a && e != skip_b) {
            product *= cw->wt[e];
        }
    }
    return product;
}

static uint64_t n_corners(const gj_ref_encoding *ref) {
    return (uint64_t)1 << ref->n_dims;
}

static void forward_level(const gj_ref_encoding *ref, uint32_t level, const level_point *lp, const double *params,
                          double *y) {
    uint32_t n_feat = ref->n_features_per_level;
    for (uint32_t f = 0; f < n_feat; ++f) {
        y[f] = 0.0;
    }
    if (ref->interpolation == GJ_INTERP_NEAREST) {
        uint64_t base = corner_param_base(ref, level, lp, 0, NULL);
        for (uint32_t f = 0; f < n_feat; ++f) {
            y[f] = params[base + f];
        }
        return;
    }
    for (uint64_t b = 0; b < n_corners(ref); ++b) {
        corner_weights cw;
        uint64_t base = corner_param_base(ref, level, lp, b, &cw);
        double weight = weight_product(&cw, ref->n_dims, ref->n_dims, ref->n_dims);
        for (uint32_t f = 0; f < n_feat; ++f) {
            y[f] += weight * params[base + f];
        }
    }
}

static void add_param_gradient(const gj_ref_encoding *ref, uint64_t base, double weight, const double *dL_dy,
                               double *dL_dparams) {
    for (uint32_t f = 0; f < ref->n_features_per_level; ++f) {
        dL_dparams[base + f] += weight * dL_dy[f];
    }
}

/* The one corner stochastic interpolation picks: lower in d iff u >= w(t_d). */
static uint64_t stochastic_corner(const gj_ref_encoding *ref, const level_point *lp, float sample) {
    uint64_t b = 0;
    for (uint32_t d = 0; d < ref->n_dims; ++d) {
        if (!((double)sample >= lp->w[d])) {
            b |= (uint64_t)1 << d;
        }
    }
    return b;
}

static void backward_params_level(const gj_ref_encoding *ref, uint32_t level, const level_point *lp,
                                  uint64_t point_index, uint64_t n_points, const double *dL_dy, double *dL_dparams) {
    if (ref->interpolation == GJ_INTERP_NEAREST) {
        add_param_gradient(ref, corner_param_base(ref, level, lp, 0, NULL), 1.0, dL_dy, dL_dparams);
        return;
    }
    if (ref->stochastic_interpolation) {
        float u = gj_ref_stochastic_sample(point_index, n_points, level);
        uint64_t b = stochastic_corner(ref, lp, u);
        add_param_gradient(ref, corner_param_base(ref, level, lp, b, NULL), 1.0, dL_dy, dL_dparams);
        return;
    }
    for (uint64_t b = 0; b < n_corners(ref); ++b) {
        corner_weights cw;
        uint64_t base = corner_param_base(ref, level, lp, b, &cw);
        add_param_gradient(ref, base, weight_product(&cw, ref->n_dims, ref->n_dims, ref->n_dims), dL_dy, dL_dparams);
    }
}

/* Sum over features of dL_dy_f * theta[corner, f]. */
static double feature_dot(const gj_ref_encoding *ref, const double *params, uint64_t base, const double *dL_dy) {
    double sum = 0.0;
    for (uint32_t f = 0; f < ref->n_features_per_level; ++f) {
        sum += dL_dy[f] * params[base + f];
    }
    return sum;
}

/* dL/dx_d += sum_corners (dL_dy . theta) * dwt_d * prod_{e != d} wt_e. */
static void backward_input_level(const gj_ref_encoding *ref, uint32_t level, const level_point *lp,
                                 const double *params, const double *dL_dy, double *dL_dx) {
    if (ref->interpolation == GJ_INTERP_NEAREST) {
        return;
    }
    for (uint64_t b = 0; b < n_corners(ref); ++b) {
        corner_weights cw;
        uint64_t base = corner_param_base(ref, level, lp, b, &cw);
        double value = feature_dot(ref, params, base, dL_dy);
        for (uint32_t d = 0; d < ref->n_dims; ++d) {
            dL_dx[d] += value * cw.dwt[d] * weight_product(&cw, ref->n_dims, d, ref->n_dims);
        }
    }
}

/* d2(weight)/dx_d dx_k of one corner. */
static double weight_hessian(const corner_weights *cw, uint32_t n_dims, uint32_t d, uint32_t k) {
    if (d == k) {
        return cw->ddwt[d] * weight_product(cw, n_dims, d, n_dims);
    }
    return cw->dwt[d] * cw->dwt[k] * weight_product(cw, n_dims, d, k);
}

/*
 * L2 = sum_d H_d g_d with g_d = sum_f dL_dy_f dy_f/dx_d = sum_corners (dL_dy . theta) dweight/dx_d.
 * Per corner, G = sum_d H_d dweight/dx_d: dL2/dtheta_f = dL_dy_f G, dL2/d(dL_dy_f) = theta_f G,
 * dL2/dx_k = (dL_dy . theta) sum_d H_d d2weight/dx_d dx_k.
 */
static void backward_backward_level(const gj_ref_encoding *ref, uint32_t level, const level_point *lp,
                                    const double *params, const double *dL_ddLdx, const double *dL_dy,
                                    double *dL_dparams, double *dL_ddLdy, double *dL_dx) {
    uint32_t n_dims = ref->n_dims, n_feat = ref->n_features_per_level;
    for (uint64_t b = 0; b < n_corners(ref); ++b) {
        corner_weights cw;
        uint64_t base = corner_param_base(ref, level, lp, b, &cw);
        double g = 0.0;
        for (uint32_t d = 0; d < n_dims; ++d) {
            g += dL_ddLdx[d] * cw.dwt[d] * weight_product(&cw, n_dims, d, n_dims);
        }
        if (dL_dparams) {
            add_param_gradient(ref, base, g, dL_dy, dL_dparams);
        }
        if (dL_ddLdy) {
            for (uint32_t f = 0; f < n_feat; ++f) {
                dL_ddLdy[f] += params[base + f] * g;
            }
        }
        if (dL_dx) {
            double value = feature_dot(ref, params, base, dL_dy);
            for (uint32_t k = 0; k < n_dims; ++k) {
                double h = 0.0;
                for (uint32_t d = 0; d < n_dims; ++d) {
                    h += dL_ddLdx[d] * weight_hessian(&cw, n_dims, d, k);
                }
                dL_dx[k] += value * h;
            }
        }
    }
}

static void zero(double *v, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
        v[i] = 0.0;
    }
}

static void forward_any(const gj_ref_encoding *ref, const double *params, ref_input in, double max_level, double *y) {
    uint32_t n_feat = ref->n_features_per_level;
    for (uint32_t l = 0; l < ref->n_levels; ++l) {
        double *y_level = y + (uint64_t)l * n_feat;
        if (!gj_ref_level_active(ref, l, max_level)) {
            zero(y_level, n_feat);
            continue;
        }
        level_point lp;
        level_point_init(ref, l, in, &lp);
        forward_level(ref, l, &lp, params, y_level);
    }
}

static void backward_any(const gj_ref_encoding *ref, const double *params, ref_input in, double max_level,
                         uint64_t point_index, uint64_t n_points, const double *dL_dy, double *dL_dparams,
                         double *dL_dx) {
    uint32_t n_feat = ref->n_features_per_level;
    if (dL_dx) {
        zero(dL_dx, ref->n_dims);
    }
    for (uint32_t l = 0; l < ref->n_levels; ++l) {
        if (!gj_ref_level_active(ref, l, max_level)) {
            continue;
        }
        level_point lp;
        level_point_init(ref, l, in, &lp);
        const double *dL_dy_level = dL_dy + (uint64_t)l * n_feat;
        if (dL_dparams) {
            backward_params_level(ref, l, &lp, point_index, n_points, dL_dy_level, dL_dparams);
        }
        if (dL_dx) {
            backward_input_level(ref, l, &lp, params, dL_dy_level, dL_dx);
        }
    }
}

static void backward_backward_any(const gj_ref_encoding *ref, const double *params, ref_input in, double max_level,
                                  const double *dL_ddLdx, const double *dL_dy, double *dL_dparams, double *dL_ddLdy,
                                  double *dL_dx) {
    uint32_t n_feat = ref->n_features_per_level;
    if (dL_dx) {
        zero(dL_dx, ref->n_dims);
    }
    if (dL_ddLdy) {
        zero(dL_ddLdy, (uint64_t)ref->n_levels * n_feat);
    }
    if (ref->interpolation == GJ_INTERP_NEAREST) {
        return; /* piecewise constant: dL/dx is 0 everywhere, so is everything derived from it */
    }
    for (uint32_t l = 0; l < ref->n_levels; ++l) {
        if (!gj_ref_level_active(ref, l, max_level)) {
            continue;
        }
        level_point lp;
        level_point_init(ref, l, in, &lp);
        backward_backward_level(ref, l, &lp, params, dL_ddLdx, dL_dy + (uint64_t)l * n_feat, dL_dparams,
                                dL_ddLdy ? dL_ddLdy + (uint64_t)l * n_feat : NULL, dL_dx);
    }
}

void gj_ref_forward(const gj_ref_encoding *ref, const double *params, const float *x, double max_level, double *y) {
    forward_any(ref, params, (ref_input){.xf = x}, max_level, y);
}

void gj_ref_forward_xd(const gj_ref_encoding *ref, const double *params, const double *x, double max_level,
                       double *y) {
    forward_any(ref, params, (ref_input){.xd = x}, max_level, y);
}

void gj_ref_backward(const gj_ref_encoding *ref, const double *params, const float *x, double max_level,
                     uint64_t point_index, uint64_t n_points, const double *dL_dy, double *dL_dparams, double *dL_dx) {
    backward_any(ref, params, (ref_input){.xf = x}, max_level, point_index, n_points, dL_dy, dL_dparams, dL_dx);
}

void gj_ref_backward_xd(const gj_ref_encoding *ref, const double *params, const double *x, double max_level,
                        uint64_t point_index, uint64_t n_points, const double *dL_dy, double *dL_dparams,
                        double *dL_dx) {
    backward_any(ref, params, (ref_input){.xd = x}, max_level, point_index, n_points, dL_dy, dL_dparams, dL_dx);
}

void gj_ref_backward_backward(const gj_ref_encoding *ref, const double *params, const float *x, double max_level,
                              const double *dL_ddLdx, const double *dL_dy, double *dL_dparams, double *dL_ddLdy,
                              double *dL_dx) {
    backward_backward_any(ref, params, (ref_input){.xf = x}, max_level, dL_ddLdx, dL_dy, dL_dparams, dL_ddLdy,
                          dL_dx);
}

void gj_ref_backward_backward_xd(const gj_ref_encoding *ref, const double *params, const double *x,
                                 double max_level, const double *dL_ddLdx, const double *dL_dy, double *dL_dparams,
                                 double *dL_ddLdy, double *dL_dx) {
    backward_backward_any(ref, params, (ref_input){.xd = x}, max_level, dL_ddLdx, dL_dy, dL_dparams, dL_ddLdy,
                          dL_dx);
}
