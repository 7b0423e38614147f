// ---------------------------------------------------------------------------
// gridjit: the work of one level for one point, for every pass (docs/design.md §3, §6).
//
// Each function is specialised by an encoding's configuration struct C:
//   C::param_t, C::grad_t           parameter and gradient-accumulation types
//   C::D, C::F                      input dimensions, features per level
//   C::HASH, C::INTERP              GJ_HASH_*, GJ_INTERP_*
//   C::FIXED_POINT, C::STOCHASTIC   fixed_point_pos, stochastic_interpolation
// and by the level's index mode (GJ_INDEX_*). The level's constants (gj_level: scale,
// resolution, table size, fixed-point cell size) come from the generated level table
// (the kernels: one copy of this code per index mode present) or as literals (the
// device functions, where the compiler folds them).
//
// Arithmetic is fp32 throughout; fp16 parameters are widened on load and results
// rounded once on store (the reference interpolates in fp16, docs/design.md §8.6).
// ---------------------------------------------------------------------------
#ifndef GJ_GRID_LEVEL_CUH
#define GJ_GRID_LEVEL_CUH

// Corners are visited with a 64-bit counter so that D = 32 (BaseConvert) is well defined.
// Small D is unrolled completely; large D stays a loop (2^D corners would not fit).
// (#pragma unroll does not expand macros, hence a constant.)
template <int D> struct gj_corner_unroll {
    static constexpr int value = D <= 4 ? (1 << D) : 1;
};

// ---- interpolation weights w(t), w'(t), w''(t) -----------------------------
template <int INTERP> GJ_INLINE float gj_weight(float t) {
    if constexpr (INTERP == GJ_INTERP_SMOOTHSTEP) return t * t * (3.0f - 2.0f * t);
    else return t;
}
template <int INTERP> GJ_INLINE float gj_weight_d1(float t) {
    if constexpr (INTERP == GJ_INTERP_SMOOTHSTEP) return 6.0f * t * (1.0f - t);
    else return 1.0f;
}
template <int INTERP> GJ_INLINE float gj_weight_d2(float t) {
    if constexpr (INTERP == GJ_INTERP_SMOOTHSTEP) return 6.0f - 12.0f * t;
    else return 0.0f;
}

// w(t_d) and scale * w'(t_d) for every dimension.
template <class C>
GJ_INLINE void gj_weights(const float (&t)[C::D], float scale, float (&w)[C::D], float (&dw)[C::D]) {
#pragma unroll
    for (int d = 0; d < C::D; ++d) {
        w[d] = gj_weight<C::INTERP>(t[d]);
        dw[d] = scale * gj_weight_d1<C::INTERP>(t[d]);
    }
}

// ---- locating the cell --------------------------------------------------------
// c: the lower corner; t: the position inside the cell in [0, 1).
template <class C>
GJ_INLINE void gj_locate(const float* x, const gj_level& lv, gj_u32 (&c)[C::D], float (&t)[C::D]) {
    const float scale = lv.scale;
    const gj_u32 cell_fixed = lv.cell_fixed;
#pragma unroll
    for (int d = 0; d < C::D; ++d) {
        if constexpr (C::FIXED_POINT) {
            // x's bits are a uint32 fixed-point position in [0, 2^32) (docs/design.md §6, reference lookup).
            const gj_u32 pos = __float_as_uint(x[d]) + cell_fixed / 2;
            c[d] = pos / cell_fixed + ((pos < cell_fixed / 2) ? (gj_u32)scale : 0u);
            t[d] = scale / 4294967296.0f * (float)(pos - c[d] * cell_fixed);
        } else {
            const float p = fmaf(scale, x[d], 0.5f);
            const float lower = floorf(p);
            t[d] = p - lower;
            // float -> int saturates (NaN -> 0) on the GPU; the index is reduced modulo the
            // table size afterwards, so no input reaches outside the level.
            c[d] = (gj_u32)(gj_i32)lower;
        }
    }
}

// ---- table entries --------------------------------------------------------------
// One vector request per entry of F values.
template <class C>
GJ_INLINE void gj_load_entry(const typename C::param_t* __restrict__ grid, gj_u32 index, float (&val)[C::F]) {
    typedef typename C::param_t T;
    constexpr int F = C::F;
    const T* p = grid + (gj_u64)index * F;
    if constexpr (sizeof(T) == 2) {
        if constexpr (F == 1) {
            val[0] = gj_to_float(*p);
        } else if constexpr (F == 2) {
            const gj_u32 a = *(const gj_u32*)p;
            val[0] = gj_half_to_float((gj_u16)a);
            val[1] = gj_half_to_float((gj_u16)(a >> 16));
        } else if constexpr (F == 4) {
            const gj_u32x2 a = *(const gj_u32x2*)p;
            val[0] = gj_half_to_float((gj_u16)a.x); val[1] = gj_half_to_float((gj_u16)(a.x >> 16));
            val[2] = gj_half_to_float((gj_u16)a.y); val[3] = gj_half_to_float((gj_u16)(a.y >> 16));
        } else {
            const gj_u32x4 a = *(const gj_u32x4*)p;
            const gj_u32 w[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                val[2 * i] = gj_half_to_float((gj_u16)w[i]);
                val[2 * i + 1] = gj_half_to_float((gj_u16)(w[i] >> 16));
            }
        }
    } else {
        if constexpr (F == 1) {
            val[0] = *p;
        } else if constexpr (F == 2) {
            const gj_u32x2 a = *(const gj_u32x2*)p;
            val[0] = __uint_as_float(a.x); val[1] = __uint_as_float(a.y);
        } else {
#pragma unroll
            for (int q = 0; q < F / 4; ++q) {
                const gj_u32x4 a = *(const gj_u32x4*)(p + 4 * q);
                val[4 * q + 0] = __uint_as_float(a.x); val[4 * q + 1] = __uint_as_float(a.y);
                val[4 * q + 2] = __uint_as_float(a.z); val[4 * q + 3] = __uint_as_float(a.w);
            }
        }
    }
}

// The F gradient values of one entry as 32-bit words: fp16 pairs packed, or fp32 bits.
template <class C>
struct gj_grad_words {
    static constexpr bool HALF = sizeof(typename C::grad_t) == 2;
    static constexpr int N = HALF ? C::F / 2 : C::F; // words per entry
    gj_u32 w[N > 0 ? N : 1];
    // The values v (already weighted).
    GJ_INLINE explicit gj_grad_words(const float (&v)[C::F]) {
#pragma unroll
        for (int k = 0; k < N; ++k) {
            w[k] = HALF ? gj_pack_half2(v[2 * k], v[2 * k + 1]) : __float_as_uint(v[k]);
        }
    }
};

// weight * g, the contribution of one corner to its entry's gradient.
template <int F>
GJ_INLINE void gj_weighted(float weight, const float (&g)[F], float (&v)[F]) {
#pragma unroll
    for (int f = 0; f < F; ++f) v[f] = weight * g[f];
}

// Adds v to the gradient of one entry (atomically: other points share it), with vector
// reductions of up to 16 bytes. SHARED: grad is a block's fp32 shared-memory copy of a
// level (plain shared atomics).
template <class C, bool SHARED = false, class G>
GJ_INLINE void gj_add_entry_values(G* __restrict__ grad, gj_u32 index, const float (&values)[C::F]) {
    constexpr int F = C::F;
    if constexpr (SHARED) {
        float* p = (float*)grad + (gj_u64)index * F;
#pragma unroll
        for (int f = 0; f < F; ++f) atomicAdd(p + f, values[f]);
    } else {
        static_assert(sizeof(G) == 4 || F % 2 == 0, "fp16 gradients are accumulated in pairs; F = 1 accumulates in fp32");
        const gj_grad_words<C> v(values);
        constexpr int N = gj_grad_words<C>::N;
        constexpr bool HALF = gj_grad_words<C>::HALF;
        gj_u32* p = (gj_u32*)(grad + (gj_u64)index * F);
        if constexpr (N == 1) {
            gj_red_u32(p, v.w[0], HALF);
        } else if constexpr (N == 2) {
            gj_red_v2_u32(p, v.w[0], v.w[1], HALF);
        } else {
#pragma unroll
            for (int k = 0; k < N; k += 4) gj_red_v4_u32(p + k, v.w[k], v.w[k + 1], v.w[k + 2], v.w[k + 3], HALF);
        }
    }
}

// Adds a block's fp32 shared-memory sums of n gradient values (sums[k] for grad[k]) to grad,
// the non-zero ones, each of the block's `threads` threads every threads-th (fp16 gradients in
// pairs: n even): how the sums of small levels leave a block (NAME_backward_coarse, a model's
// fused backward).
template <class G>
GJ_INLINE void gj_add_block_sums(const float* sums, G* grad, gj_u32 n, gj_u32 threads) {
    if constexpr (sizeof(G) == 2) {
        for (gj_u32 k = 2 * threadIdx.x; k < n; k += 2 * threads) {
            if (sums[k] != 0.0f || sums[k + 1] != 0.0f) gj_atomic_add_half2(grad + k, sums[k], sums[k + 1]);
        }
    } else {
        for (gj_u32 k = threadIdx.x; k < n; k += threads) {
            if (sums[k] != 0.0f) gj_atomic_add((float*)grad + k, sums[k]);
        }
    }
}

// Adds weight * g to the gradient of one entry.
template <class C, bool SHARED = false, class G>
GJ_INLINE void gj_add_entry(G* __restrict__ grad, gj_u32 index, float weight, const float (&g)[C::F]) {
    float v[C::F];
    gj_weighted<C::F>(weight, g, v);
    gj_add_entry_values<C, SHARED>(grad, index, v);
}

// The two corners of an x-edge. When their entries are the two halves of one aligned
// 8- or 16-byte pair (i0 ^ i1 == 1: dense levels with an even lower index, CoherentPrime
// with an even x, and the level starting at an even entry: a Tiled level of odd size
// leaves the next one at an odd offset), one vector reduction adds both. Entries of one
// word (F = 2 in fp16, F = 1 in fp32) that are two of an aligned group of four instead
// (i0 ^ i1 of 2 or 3: a dense level's x-edge from an index of 4k + 1, CoherentPrime's from
// an x of 4k + 1) are added by one 16-byte reduction too, zeros in the group's two other
// words (sm_90, whose vector reductions these are): one request for three quarters of the
// x-edges instead of half.
template <class C, bool SHARED = false, class G>
GJ_INLINE void gj_add_edge_values(G* __restrict__ grad, gj_u32 i0, gj_u32 i1, const float (&v0)[C::F],
                                  const float (&v1)[C::F]) {
    constexpr int N = gj_grad_words<C>::N;
    if constexpr (!SHARED && (N == 1 || N == 2)) {
        gj_u32* p = (gj_u32*)(grad + (gj_u64)(i0 & ~1u) * C::F);
        if ((i0 ^ i1) == 1u && ((gj_u64)p & (2u * N * sizeof(gj_u32) - 1u)) == 0u) {
            const bool swap = i0 & 1u;
            const gj_grad_words<C> lo(swap ? v1 : v0), hi(swap ? v0 : v1);
            if constexpr (N == 1) gj_red_v2_u32(p, lo.w[0], hi.w[0], gj_grad_words<C>::HALF);
            else gj_red_v4_u32(p, lo.w[0], lo.w[1], hi.w[0], hi.w[1], gj_grad_words<C>::HALF);
            return;
        }
#if defined(GJ_EMULATED) || __CUDA_ARCH__ >= 900 // below, the reduction is four scalar ones
        if constexpr (N == 1) {
            gj_u32* group = (gj_u32*)(grad + (gj_u64)(i0 & ~3u) * C::F);
            const gj_u32 apart = i0 ^ i1;
            if ((apart == 2u || apart == 3u) && ((gj_u64)group & 15u) == 0u) {
                const gj_grad_words<C> a(v0), b(v1);
                const gj_u32 s0 = i0 & 3u, s1 = i1 & 3u; // different slots: apart != 0
                gj_u32 w[4];
#pragma unroll
                for (gj_u32 k = 0; k < 4; ++k) w[k] = (s0 == k ? a.w[0] : 0u) | (s1 == k ? b.w[0] : 0u);
                gj_red_v4_u32(group, w[0], w[1], w[2], w[3], gj_grad_words<C>::HALF);
                return;
            }
        }
#endif
    }
    gj_add_entry_values<C, SHARED>(grad, i0, v0);
    gj_add_entry_values<C, SHARED>(grad, i1, v1);
}

// Corner `corner` (bit d set: upper neighbour along d) of the cell at c.
template <int D>
GJ_INLINE void gj_corner(const gj_u32 (&c)[D], gj_u64 corner, gj_u32 (&v)[D]) {
#pragma unroll
    for (int d = 0; d < D; ++d) {
        v[d] = c[d] + (gj_u32)((corner >> d) & 1u);
    }
}

// Product over dimensions e not in {skip_a, skip_b} of the corner's 1-D weights.
template <int D>
GJ_INLINE float gj_weight_product(const float (&w)[D], gj_u64 corner, int skip_a, int skip_b) {
    float product = 1.0f;
#pragma unroll
    for (int e = 0; e < D; ++e) {
        if (e != skip_a && e != skip_b) {
            product *= ((corner >> e) & 1u) ? w[e] : 1.0f - w[e];
        }
    }
    return product;
}

GJ_INLINE float gj_corner_sign(gj_u64 corner, int d) {
    return ((corner >> d) & 1u) ? 1.0f : -1.0f;
}

// d(weight of the corner)/dx_d: its sign along d, times scale * w'(t_d), times the other
// dimensions' weights.
template <int D>
GJ_INLINE float gj_corner_slope(const float (&w)[D], const float (&dw)[D], gj_u64 corner, int d) {
    return gj_corner_sign(corner, d) * dw[d] * gj_weight_product<D>(w, corner, d, -1);
}

// ---- forward ---------------------------------------------------------------------
// Adds corner `corner` (values val) to y with its weight, and (DYDX) to dydx with its slopes.
template <class C, bool DYDX>
GJ_INLINE void gj_accumulate_corner(const float (&w)[C::D], const float (&dw)[C::D], gj_u64 corner,
                                    const float (&val)[C::F], float (&y)[C::F], float (&dydx)[C::F][C::D]) {
    constexpr int D = C::D, F = C::F;
    const float weight = gj_weight_product<D>(w, corner, -1, -1);
#pragma unroll
    for (int f = 0; f < F; ++f) y[f] = fmaf(weight, val[f], y[f]);
    if constexpr (DYDX) {
#pragma unroll
        for (int d = 0; d < D; ++d) {
            const float g = gj_corner_slope<D>(w, dw, corner, d);
#pragma unroll
            for (int f = 0; f < F; ++f) dydx[f][d] = fmaf(g, val[f], dydx[f][d]);
        }
    }
}

// y: this level's F features. dydx (DYDX): F x D derivatives dy_f/dx_d, from the same
// corner values (no second round of loads).
template <class C, int MODE, bool DYDX>
GJ_INLINE void gj_level_forward(const float* x, const gj_level& lv, const typename C::param_t* __restrict__ grid,
                                float (&y)[C::F], float (&dydx)[C::F][C::D]) {
    constexpr int D = C::D, F = C::F;
    gj_u32 c[D];
    float t[D];
    gj_locate<C>(x, lv, c, t);

#pragma unroll
    for (int f = 0; f < F; ++f) {
        y[f] = 0.0f;
        if constexpr (DYDX) {
#pragma unroll
            for (int d = 0; d < D; ++d) dydx[f][d] = 0.0f;
        }
    }

    if constexpr (C::INTERP == GJ_INTERP_NEAREST) {
        // The value of the cell's lower corner; piecewise constant, so dy/dx = 0.
        gj_load_entry<C>(grid, gj_corner_index<D, C::HASH, MODE>(c, lv), y);
        return;
    }

    float w[D], dw[D];
    gj_weights<C>(t, lv.scale, w, dw);

    // Up to D = 4 (16 corners); at most 64 values held for D <= 3 and 32 for D = 4, the
    // shapes measured (docs/benchmarks.md §4: D = 4, F = 2 and D = 3, F = 8 took 0.90-0.96
    // of the x-edge pairs' time, which the compiler interleaved with the sums).
    constexpr int CORNERS = D <= 4 ? 1 << D : 0;
    if constexpr (D <= 4 && CORNERS * F <= (D == 4 ? 32 : 64)) {
        // Every corner's index first, then every load, then the sums: the loads are
        // issued back to back and wait together (a gather is latency-bound), at the cost
        // of holding the level's values in registers.
        gj_u32 index[CORNERS];
#pragma unroll
        for (int k = 0; k < CORNERS; ++k) {
            gj_u32 v[D];
            gj_corner<D>(c, (gj_u64)k, v);
            index[k] = gj_corner_index<D, C::HASH, MODE>(v, lv);
        }
        float val[CORNERS][F];
#pragma unroll
        for (int k = 0; k < CORNERS; ++k) gj_load_entry<C>(grid, index[k], val[k]);
#pragma unroll
        for (int k = 0; k < CORNERS; ++k) gj_accumulate_corner<C, DYDX>(w, dw, (gj_u64)k, val[k], y, dydx);
    } else {
        // Corners come in x-edges: corner 2e (lower x) and 2e + 1 (upper x).
#pragma unroll (gj_corner_unroll<D - 1>::value)
        for (gj_u64 edge = 0; edge < (1ull << (D - 1)); ++edge) {
            gj_u32 v0[D], v1[D];
            gj_corner<D>(c, edge << 1, v0);
            gj_corner<D>(c, (edge << 1) | 1u, v1);
            // Two plain loads: when both corners share a sector the second hits L1 (16-byte
            // "pair" loads were measured: fewer L1 requests, no fewer L2 ones, more instructions).
            float val[2][F];
            gj_load_entry<C>(grid, gj_corner_index<D, C::HASH, MODE>(v0, lv), val[0]);
            gj_load_entry<C>(grid, gj_corner_index<D, C::HASH, MODE>(v1, lv), val[1]);
#pragma unroll
            for (int side = 0; side < 2; ++side) {
                gj_accumulate_corner<C, DYDX>(w, dw, (edge << 1) | (gj_u64)side, val[side], y, dydx);
            }
        }
    }
}

// ---- warp aggregation of gradients (inputs ordered along rays) -------------------------
// Neighbouring samples of a ray fall into the same cell of the coarser levels: their lanes
// would add to the same entries one after the other. Lanes whose cell equals the previous
// lane's extend that lane's run; the runs sum their contributions with shuffles and the
// first lane of each run adds the sums.
template <class C>
struct gj_warp_runs {
    // Only where the sums are few (2^D corners x F values, shuffled 5 times each).
    static constexpr bool ENABLED = C::D <= 3 && C::F <= 4 && C::INTERP != GJ_INTERP_NEAREST && !C::STOCHASTIC;
    gj_u32 lane, end; // this lane, and the last lane of its run
    bool head;        // first lane of its run: adds the run's sums
};

// Whether the (full, converged) warp has at least min_same lanes in the cell of the lane
// before them; if so, runs describes this lane's run.
template <int D>
GJ_INLINE bool gj_find_runs(const gj_u32 (&c)[D], gj_u32 min_same, gj_u32& lane, gj_u32& end, bool& head) {
    if (min_same == 0u || __activemask() != 0xffffffffu) return false;
    lane = threadIdx.x & 31u;
    bool same = lane != 0u;
#pragma unroll
    for (int d = 0; d < D; ++d) same = (__shfl_up_sync(0xffffffffu, c[d], 1) == c[d]) && same;
    const gj_u32 joined = __ballot_sync(0xffffffffu, same);
    if ((gj_u32)__popc(joined) < min_same) return false;
    const gj_u32 later_heads = ~joined & ~((2u << lane) - 1u); // lane 31: 2u << 31 == 0, no later lane
    end = later_heads ? (gj_u32)(__ffs((int)later_heads) - 2) : 31u;
    head = !same;
    return true;
}

// Each v[k] summed over lanes lane..end (a run), valid in the run's first lane. The steps
// stay a loop: unrolled, they would multiply the kernels' code (and compile time) for a
// path that uniform inputs never take.
template <int N>
GJ_INLINE void gj_run_sums(float (&v)[N], gj_u32 lane, gj_u32 end) {
#pragma unroll 1
    for (gj_u32 offset = 1; offset < 32; offset <<= 1) {
        const bool inside = lane + offset <= end;
#pragma unroll
        for (int k = 0; k < N; ++k) {
            const float other = __shfl_down_sync(0xffffffffu, v[k], offset);
            if (inside) v[k] += other;
        }
    }
}

// ---- backward ----------------------------------------------------------------------
// g: dL/dy of this level. PARAMS: dL/dparams += (atomically, into grad = the level's
// gradient base). INPUT: dldx += dL/dx contribution of this level. u: the stochastic
// interpolation sample of this (point, level), used when C::STOCHASTIC. aggregate_min:
// see gj_find_runs (0: every lane adds its own contributions).
template <class C, int MODE, bool PARAMS, bool INPUT, class G = typename C::grad_t, bool SHARED = false>
GJ_INLINE void gj_level_backward(const float* x, const gj_level& lv, const typename C::param_t* __restrict__ grid,
                                 const float (&g)[C::F],
                                 G* __restrict__ grad, float (&dldx)[C::D], float u, gj_u32 aggregate_min = 0u) {
    constexpr int D = C::D, F = C::F;
    gj_u32 c[D];
    float t[D];
    gj_locate<C>(x, lv, c, t);

    if constexpr (C::INTERP == GJ_INTERP_NEAREST) {
        if constexpr (PARAMS) gj_add_entry<C, SHARED>(grad, gj_corner_index<D, C::HASH, MODE>(c, lv), 1.0f, g);
        return; // dL/dx = 0 for a piecewise-constant encoding.
    }

    float w[D], dw[D];
    gj_weights<C>(t, lv.scale, w, dw);

    if constexpr (PARAMS && C::STOCHASTIC) {
        // One corner, chosen per dimension with probability equal to its weight.
        gj_u32 v[D];
#pragma unroll
        for (int d = 0; d < D; ++d) v[d] = c[d] + (u >= w[d] ? 0u : 1u);
        gj_add_entry<C, SHARED>(grad, gj_corner_index<D, C::HASH, MODE>(v, lv), 1.0f, g);
    }

    // Runs of lanes in one cell: their sums, added by each run's head (to global memory, or
    // to the coarse kernel's shared sums, where a ray's lanes in one cell of a coarse level
    // would otherwise queue on the same shared-memory words).
    [[maybe_unused]] bool runs = false;
    [[maybe_unused]] gj_warp_runs<C> run{};
    if constexpr (PARAMS && gj_warp_runs<C>::ENABLED) {
        runs = gj_find_runs<D>(c, aggregate_min, run.lane, run.end, run.head);
    }

    if constexpr ((PARAMS && !C::STOCHASTIC) || INPUT) {
        // Corners in x-edges (2e, 2e + 1), as in the forward pass.
#pragma unroll (gj_corner_unroll<D - 1>::value)
        for (gj_u64 edge = 0; edge < (1ull << (D - 1)); ++edge) {
            gj_u32 v0[D], v1[D];
            gj_corner<D>(c, edge << 1, v0);
            gj_corner<D>(c, (edge << 1) | 1u, v1);
            const gj_u32 index[2] = {gj_corner_index<D, C::HASH, MODE>(v0, lv),
                                     gj_corner_index<D, C::HASH, MODE>(v1, lv)};
            float val[2][F];
            if constexpr (INPUT) {
                gj_load_entry<C>(grid, index[0], val[0]);
                gj_load_entry<C>(grid, index[1], val[1]);
            }
            if constexpr (PARAMS && !C::STOCHASTIC) {
                float v[2][F]; // the two corners' weighted dL/dy
                gj_weighted<F>(gj_weight_product<D>(w, edge << 1, -1, -1), g, v[0]);
                gj_weighted<F>(gj_weight_product<D>(w, (edge << 1) | 1u, -1, -1), g, v[1]);
                bool adds = true;
                if constexpr (gj_warp_runs<C>::ENABLED) {
                    if (runs) { // the run's sums, added by its first lane only
                        gj_run_sums<2 * F>(*(float(*)[2 * F])&v[0][0], run.lane, run.end);
                        adds = run.head;
                    }
                }
                if (adds) gj_add_edge_values<C, SHARED>(grad, index[0], index[1], v[0], v[1]);
            }
#pragma unroll
            for (int side = 0; side < 2; ++side) {
                const gj_u64 corner = (edge << 1) | (gj_u64)side;
                if constexpr (INPUT) {
                    float gv = 0.0f; // dL/dy . theta_corner
#pragma unroll
                    for (int f = 0; f < F; ++f) gv = fmaf(g[f], val[side][f], gv);
#pragma unroll
                    for (int d = 0; d < D; ++d) {
                        dldx[d] = fmaf(gj_corner_slope<D>(w, dw, corner, d), gv, dldx[d]);
                    }
                }
            }
        }
    }
}

// ---- backward of backward ------------------------------------------------------------
// The backward pass computes dL/dx_d = sum_f g_f dy_f/dx_d. Given H = dL/d(dL/dx):
//   dL/dtheta_cf   += g_f * A_c,                 A_c = sum_d H_d s w'_d sgn_d(c) P_d(c)
//   dL/dg_f         = sum_c A_c theta_cf
//   dL/dx_k        += sum_c (g . theta_c) * [ H_k s^2 w''_k sgn_k P_k(c)
//                     + sum_{d != k} H_d s^2 w'_d w'_k sgn_d sgn_k P_dk(c) ]
// with P_d the product of the other dimensions' weights, P_dk that without d and k.
// (The reference adds the diagonal term inside the wrong loop, docs/design.md §8.1.)
// The outputs are chosen at run time (grad null: no dL/dparams): this pass is rarely hot,
// and one body per level keeps the code small.
template <class C, int MODE>
GJ_INLINE void gj_level_backward_backward(const float* x, const gj_level& lv,
                                          const typename C::param_t* __restrict__ grid,
                                          const float (&H)[C::D], const float (&g)[C::F],
                                          typename C::grad_t* __restrict__ grad, float (&ddldy)[C::F],
                                          float (&dldx)[C::D], bool want_ddldy, bool want_dx) {
    constexpr int D = C::D, F = C::F;
#pragma unroll
    for (int f = 0; f < F; ++f) ddldy[f] = 0.0f;
    if constexpr (C::INTERP == GJ_INTERP_NEAREST) {
        return; // dL/dx of a piecewise-constant encoding is 0, and so is everything downstream.
    }

    gj_u32 c[D];
    float t[D];
    gj_locate<C>(x, lv, c, t);
    float w[D], dw[D], ddw[D];
    gj_weights<C>(t, lv.scale, w, dw);
#pragma unroll
    for (int d = 0; d < D; ++d) ddw[d] = lv.scale * lv.scale * gj_weight_d2<C::INTERP>(t[d]);

#pragma unroll (gj_corner_unroll<D>::value)
    for (gj_u64 corner = 0; corner < (1ull << D); ++corner) {
        gj_u32 v[D];
        gj_corner<D>(c, corner, v);
        const gj_u32 index = gj_corner_index<D, C::HASH, MODE>(v, lv);

        float A = 0.0f;
#pragma unroll
        for (int d = 0; d < D; ++d) A = fmaf(H[d] * gj_corner_sign(corner, d) * dw[d], gj_weight_product<D>(w, corner, d, -1), A);

        if (grad) gj_add_entry<C>(grad, index, A, g);

        if (want_ddldy || want_dx) {
            float val[F];
            gj_load_entry<C>(grid, index, val);
            if (want_ddldy) {
#pragma unroll
                for (int f = 0; f < F; ++f) ddldy[f] = fmaf(A, val[f], ddldy[f]);
            }
            if (want_dx) {
                float gv = 0.0f;
#pragma unroll
                for (int f = 0; f < F; ++f) gv = fmaf(g[f], val[f], gv);
#pragma unroll
                for (int k = 0; k < D; ++k) {
                    float term = 0.0f;
                    if constexpr (C::INTERP == GJ_INTERP_SMOOTHSTEP) {
                        term = H[k] * ddw[k] * gj_corner_sign(corner, k) * gj_weight_product<D>(w, corner, k, -1);
                    }
#pragma unroll
                    for (int d = 0; d < D; ++d) {
                        if (d != k) {
                            term = fmaf(H[d] * dw[d] * dw[k] * gj_corner_sign(corner, d) * gj_corner_sign(corner, k),
                                        gj_weight_product<D>(w, corner, d, k), term);
                        }
                    }
                    dldx[k] = fmaf(term, gv, dldx[k]);
                }
            }
        }
    }
}

// ---- small helpers for the generated device functions ------------------------------
template <int N> GJ_INLINE void gj_zero(float (&v)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = 0.0f;
}

template <int M, int N> GJ_INLINE void gj_zero(float (&v)[M][N]) {
#pragma unroll
    for (int i = 0; i < M; ++i) gj_zero<N>(v[i]);
}

// A level l is active for max_level m when l < m * L + 1e-3 (docs/design.md §6). Two separately
// rounded operations (never contracted into an FMA), so level boundaries fall exactly
// where the reference puts them.
template <class C> GJ_INLINE float gj_level_limit(float max_level) {
    return __fadd_rn(__fmul_rn(max_level, (float)C::L), 1e-3f);
}

// The stochastic-interpolation sample of (point index, level): PCG32(1337, 1) advanced by
// index + level * stride.
GJ_INLINE float gj_stochastic_sample(gj_u64 index, gj_u32 level, gj_u64 stride) {
    gj_pcg32 rng(1337u, 1u);
    rng.advance(index + (gj_u64)level * stride);
    return rng.next_float();
}

// ---- the passes with run-time choices (null outputs are skipped) -------------------
template <class C, int MODE>
GJ_INLINE void gj_level_backward_any(const float* x, const gj_level& lv, const typename C::param_t* __restrict__ grid,
                                     const float (&g)[C::F], typename C::grad_t* __restrict__ grad, float (&dldx)[C::D],
                                     bool want_dx, float u) {
    if (grad && want_dx) gj_level_backward<C, MODE, true, true>(x, lv, grid, g, grad, dldx, u);
    else if (grad) gj_level_backward<C, MODE, true, false>(x, lv, grid, g, grad, dldx, u);
    else if (want_dx) gj_level_backward<C, MODE, false, true>(x, lv, grid, g, grad, dldx, u);
}

// ---- moving one level's features between fp32 registers and param_t vectors -----------
template <class C> GJ_INLINE void gj_store_level(typename C::param_t* out, const float (&v)[C::F]) {
#pragma unroll
    for (int f = 0; f < C::F; ++f) out[f] = gj_from_float<typename C::param_t>(v[f]);
}

template <class C> GJ_INLINE void gj_load_level(const typename C::param_t* in, float (&v)[C::F]) {
#pragma unroll
    for (int f = 0; f < C::F; ++f) v[f] = gj_to_float(in[f]);
}

// The forward context: the D input floats (fwd_ctx must be 4-byte aligned).
template <class C> GJ_INLINE void gj_save_context(const float (&x)[C::D], gj_u8* ctx) {
#pragma unroll
    for (int d = 0; d < C::D; ++d) ((float*)ctx)[d] = x[d];
}

template <class C> GJ_INLINE void gj_restore_context(const gj_u8* ctx, float (&x)[C::D]) {
#pragma unroll
    for (int d = 0; d < C::D; ++d) x[d] = ((const float*)ctx)[d];
}

// ---- one instance of the level code per index mode present --------------------------
template <int M> struct gj_mode_tag {
    static constexpr int value = M;
};

// Calls f(gj_mode_tag<mode>{}) for the index modes in MODES only (bit m: mode m).
template <gj_u32 MODES, int M = 0, class F>
GJ_INLINE void gj_with_mode(gj_u32 mode, F&& f) {
    if constexpr (M <= GJ_INDEX_MODE_MAX) {
        if constexpr (((MODES >> M) & 1u) != 0) {
            if (mode == (gj_u32)M) {
                f(gj_mode_tag<M>{});
                return;
            }
        }
        gj_with_mode<MODES, M + 1>(mode, static_cast<F&&>(f));
    }
}

// ---- the device functions' level loop ------------------------------------------------
// The device functions (for fusion) read their levels from the level table NAME_levels (LV)
// and loop over them without unrolling: one copy of the level code per index mode keeps a
// user's fused kernel small and quick to compile, and it measured faster than sixteen
// unrolled copies (docs/benchmarks.md). gj_codegen_options.unroll_levels asks for the
// unrolled form instead.
// STAGED (a model's fused inference block): the small levels that lead the table and lie within
// its first staged_values values read them from staged, the block's copy in shared memory (one
// more instance of the level code, for the small levels' index modes alone).
template <class C, class LV, bool STAGED = false>
GJ_INLINE void gj_levels_forward(const float (&x)[C::D], const typename C::param_t* __restrict__ params, float limit,
                                 typename C::param_t* y, const typename C::param_t* staged = nullptr,
                                 gj_u32 staged_values = 0) {
#pragma unroll 1
    for (int l = 0; l < C::L; ++l) {
        float f[C::F];
        if ((float)l < limit) {
            const gj_level& lv = LV::at((gj_u32)l);
            float unused[C::F][C::D];
            if constexpr (STAGED && C::SMALL_MODES != 0) {
                if (lv.small && lv.offset + (gj_u64)lv.entries * C::F <= staged_values) {
                    gj_with_mode<C::SMALL_MODES>(lv.mode, [&](auto mode) {
                        gj_level_forward<C, decltype(mode)::value, false>(x, lv, staged + lv.offset, f, unused);
                    });
                    gj_store_level<C>(y + l * C::F, f);
                    continue;
                }
            }
            gj_with_mode<C::MODES>(lv.mode, [&](auto mode) {
                gj_level_forward<C, decltype(mode)::value, false>(x, lv, params + lv.offset, f, unused);
            });
        } else {
            gj_zero(f);
        }
        gj_store_level<C>(y + l * C::F, f);
    }
}

// PARAMS_ONLY: dL/dparams alone (grad not null, want_dx false), the one instance of the
// per-level code compiled: a model's training kernel without dL/dinput compiles in about
// 70 % of the time of the three instances the run-time choice needs (docs/benchmarks.md §7).
// small (PARAMS_ONLY; null: none): a block's fp32 sums in shared memory of the small levels
// that lead the table, small_floats of them (a level's sums at small + its offset): their
// gradients go there instead of to grad (a model's fused backward sums its small levels so).
template <class C, class LV, bool PARAMS_ONLY = false>
GJ_INLINE void gj_levels_backward(const float (&x)[C::D], const typename C::param_t* dL_dy,
                                  const typename C::param_t* __restrict__ params, typename C::grad_t* __restrict__ grad,
                                  float (&dldx)[C::D], bool want_dx, float limit, gj_u64 rng_index, gj_u64 rng_stride,
                                  float* small = nullptr, gj_u32 small_floats = 0) {
#pragma unroll 1
    for (int l = 0; l < C::L && (float)l < limit; ++l) {
        const gj_level& lv = LV::at((gj_u32)l);
        float g[C::F];
        gj_load_level<C>(dL_dy + l * C::F, g);
        float u = 0.0f;
        if constexpr (C::STOCHASTIC) u = grad ? gj_stochastic_sample(rng_index, (gj_u32)l, rng_stride) : 0.0f;
        if constexpr (PARAMS_ONLY && C::SMALL_MODES != 0) {
            if (small && lv.small && lv.offset + (gj_u64)lv.entries * C::F <= small_floats) {
                gj_with_mode<C::SMALL_MODES>(lv.mode, [&](auto mode) {
                    gj_level_backward<C, decltype(mode)::value, true, false, float, true>(
                        x, lv, params + lv.offset, g, small + lv.offset, dldx, u);
                });
                continue;
            }
        }
        gj_with_mode<C::MODES>(lv.mode, [&](auto mode) {
            if constexpr (PARAMS_ONLY) {
                gj_level_backward<C, decltype(mode)::value, true, false>(x, lv, params + lv.offset, g, grad + lv.offset,
                                                                         dldx, u);
            } else {
                gj_level_backward_any<C, decltype(mode)::value>(x, lv, params + lv.offset, g,
                                                                grad ? grad + lv.offset : nullptr, dldx, want_dx, u);
            }
        });
    }
}

template <class C, class LV>
GJ_INLINE void gj_levels_backward_backward(const float (&x)[C::D], const float (&dL_ddLdx)[C::D],
                                           const typename C::param_t* dL_dy, const typename C::param_t* __restrict__ params,
                                           typename C::grad_t* __restrict__ grad, typename C::param_t* dL_ddLdy,
                                           float (&dldx)[C::D], bool want_dx, float limit) {
#pragma unroll 1
    for (int l = 0; l < C::L; ++l) {
        float ddldy[C::F];
        if ((float)l < limit) {
            const gj_level& lv = LV::at((gj_u32)l);
            float g[C::F];
            gj_load_level<C>(dL_dy + l * C::F, g);
            gj_with_mode<C::MODES>(lv.mode, [&](auto mode) {
                gj_level_backward_backward<C, decltype(mode)::value>(x, lv, params + lv.offset, dL_ddLdx, g,
                                                                     grad ? grad + lv.offset : nullptr, ddldy, dldx,
                                                                     dL_ddLdy != nullptr, want_dx);
            });
        } else {
            gj_zero(ddldy);
        }
        if (dL_ddLdy) gj_store_level<C>(dL_ddLdy + l * C::F, ddldy);
    }
}

#endif // GJ_GRID_LEVEL_CUH
