// ---------------------------------------------------------------------------
// network.cuh: tiny-cuda-nn's fully fused MLP on tensor cores (docs/networks.md §3).
//
// Generic over a configuration struct C that the generated code defines per network
// (NAME_config): widths C::IN (unpadded input), C::IN_P, C::W, C::OUT, C::OUT_P, the
// layer count C::NL (n_hidden_layers + 1), activations C::ACT and C::OUT_ACT (gj_activation
// numbers), C::INPUT_PADDING. No biases. Weights fp16, products accumulated in fp32 by
// mma.sync.m16n8k16, activations and gradients rounded to fp16 between layers, as
// tiny-cuda-nn's FullyFusedMLP does.
//
// The unit of work is a warp and its tile of 32 points, row p of the tile being lane p's
// point. Every lane of the warp must take part (converged); a lane without a point passes
// active = false. A warp needs C::SCRATCH_HALVES halves of shared memory (16-byte aligned)
// of its own: two buffers X and D of 32 rows of C::S halves (S = the widest layer + 8, so
// that the eight rows an ldmatrix phase reads fall into distinct banks).
//
// Weights: tiny-cuda-nn's layout (layer l row-major, fan_out rows of fan_in, back to back),
// in global or shared memory (generic loads). The template parameter PAD is the number of
// halves added to every row where the caller staged them with padded rows (0: the plain
// layout; the kernels stage with 8, which spreads the rows over the banks).
//
// The forward context (what backward needs) of a warp tile: C::CTX_HALVES halves, regions
// r = 0 .. NL, region r holding 32 rows (one per point) of width C::ctx_width(r):
//   r = 0: the padded input (fp16), row-major; r = 1 .. NL: the kept value of layer r - 1,
//   which is its output h (fp16), or for Sine and SiLU (not invertible) its pre-activation z,
//   in fragment order (gj_nn_ctx_frag: the order the mma accumulators hold it, so that every
//   store and load of a region is a whole 128-byte line per warp instruction). The output
//   region is written and read only where the output activation's derivative needs it.
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"), g = lane / 4, t = lane % 4:
//   A (16 x 16, row-major), 4 registers of 2 halves: (row g, cols 2t, 2t+1), (row g+8, same),
//     (row g, cols 2t+8, 2t+9), (row g+8, same).
//   B (16 x 8, "col"), 2 registers: (rows 2t, 2t+1, col g), (rows 2t+8, 2t+9, col g).
//   C (16 x 8, fp32), 4 registers: (row g, cols 2t, 2t+1), (row g+8, cols 2t, 2t+1).
// ldmatrix.x4: lane l gives the address of row l % 8 of 8x8 matrix l / 8; register q then
// holds, of matrix q, (row g, cols 2t, 2t+1), or with .trans (rows 2t, 2t+1, col g).
// ---------------------------------------------------------------------------
#ifndef GJ_NETWORK_CUH
#define GJ_NETWORK_CUH

// ---- activations (tiny-cuda-nn's, common_device.h; K = 10) -------------------------
// The numbers are gj_activation's.
enum { GJ_NN_NONE = 0, GJ_NN_RELU = 1, GJ_NN_LEAKY_RELU = 2, GJ_NN_EXPONENTIAL = 3, GJ_NN_SINE = 4,
       GJ_NN_SIGMOID = 5, GJ_NN_SQUAREPLUS = 6, GJ_NN_SOFTPLUS = 7, GJ_NN_TANH = 8, GJ_NN_SILU = 9 };

// Sine and SiLU cannot recover their derivative from their output: their layers keep z.
template <int A> __host__ __device__ constexpr bool gj_nn_keeps_z() { return A == GJ_NN_SINE || A == GJ_NN_SILU; }

GJ_INLINE float gj_nn_sigmoid(float z) { return 1.0f / (1.0f + __expf(-z)); }

template <int A> GJ_INLINE float gj_nn_act(float z) {
    if constexpr (A == GJ_NN_RELU) return fmaxf(z, 0.0f);
    else if constexpr (A == GJ_NN_LEAKY_RELU) return z > 0.0f ? z : 0.01f * z;
    else if constexpr (A == GJ_NN_EXPONENTIAL) return __expf(z);
    else if constexpr (A == GJ_NN_SINE) return __sinf(z);
    else if constexpr (A == GJ_NN_SIGMOID) return gj_nn_sigmoid(z);
    else if constexpr (A == GJ_NN_SQUAREPLUS) {
        const float u = 10.0f * z;
        return 0.05f * (u + sqrtf(u * u + 4.0f));
    } else if constexpr (A == GJ_NN_SOFTPLUS) {
        // (u + ln(1 + e^-u)) / 10 for u > 0: finite where tiny-cuda-nn's overflows (§4).
        const float u = 10.0f * z;
        return u > 0.0f ? 0.1f * (u + log1pf(__expf(-u))) : 0.1f * log1pf(__expf(u));
    } else if constexpr (A == GJ_NN_TANH) return tanhf(z);
    else if constexpr (A == GJ_NN_SILU) return z * gj_nn_sigmoid(z);
    else return z;
}

// h from the kept value k (h itself, or z for Sine and SiLU).
template <int A> GJ_INLINE float gj_nn_h_from_kept(float k) {
    if constexpr (gj_nn_keeps_z<A>()) return gj_nn_act<A>(k);
    else return k;
}

// act'(z) from the kept value k: from the output y as tiny-cuda-nn does, or from z.
template <int A> GJ_INLINE float gj_nn_grad_from_kept(float k) {
    if constexpr (A == GJ_NN_RELU) return k > 0.0f ? 1.0f : 0.0f;
    else if constexpr (A == GJ_NN_LEAKY_RELU) return k > 0.0f ? 1.0f : 0.01f;
    else if constexpr (A == GJ_NN_EXPONENTIAL) return k;
    else if constexpr (A == GJ_NN_SINE) return __cosf(k);
    else if constexpr (A == GJ_NN_SIGMOID) return k * (1.0f - k);
    else if constexpr (A == GJ_NN_SQUAREPLUS) {
        const float s = 10.0f * k;
        return s * s / (s * s + 1.0f);
    } else if constexpr (A == GJ_NN_SOFTPLUS) return 1.0f - __expf(-10.0f * k);
    else if constexpr (A == GJ_NN_TANH) return 1.0f - k * k;
    else if constexpr (A == GJ_NN_SILU) {
        const float s = gj_nn_sigmoid(k);
        return s + k * s * (1.0f - s);
    } else return 1.0f;
}

// The kept value of a layer from its pre-activation z.
template <int A> GJ_INLINE float gj_nn_kept(float z) {
    if constexpr (gj_nn_keeps_z<A>()) return z;
    else return gj_nn_act<A>(z);
}

// The two as function objects (what gj_nn_store_c applies).
template <int A> struct gj_nn_act_f {
    GJ_INLINE float operator()(float z) const { return gj_nn_act<A>(z); }
};
template <int A> struct gj_nn_kept_f {
    GJ_INLINE float operator()(float z) const { return gj_nn_kept<A>(z); }
};

// ---- PTX wrappers ---------------------------------------------------------------
// (tests/emulated/ supplies host versions of these, defining GJ_NN_EMULATED, to run this file
// on the CPU one thread per lane.)
#ifndef GJ_NN_EMULATED
GJ_INLINE gj_u32 gj_nn_smem_addr(const void* p) {
    gj_u32 a;
    asm("{ .reg .u64 g; cvta.to.shared.u64 g, %1; cvt.u32.u64 %0, g; }" : "=r"(a) : "l"(p));
    return a;
}

GJ_INLINE void gj_nn_ldsm_x4(gj_u32 (&r)[4], gj_u32 addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

GJ_INLINE void gj_nn_ldsm_x4_t(gj_u32 (&r)[4], gj_u32 addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

// c += A . B for one 16 x 8 tile (K = 16).
GJ_INLINE void gj_nn_mma(float (&c)[4], const gj_u32 (&a)[4], gj_u32 b0, gj_u32 b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Lane l's v from lane l ^ m.
GJ_INLINE float gj_nn_shfl_xor(float v, int m) { return __shfl_xor_sync(0xFFFFFFFFu, v, m); }

// p[0..3] += (a, b, c, d) in global memory (p 16-byte aligned): one 16-byte reduction on Hopper
// (sm_90) and later, a quarter of the instructions and L2 requests of four float atomics. (The
// prelude's gj_red_v4_u32 does the same through bit casts; called here, it changed the backward
// kernels' sm_90 code from what was measured on the H200.)
GJ_INLINE void gj_nn_red_v4(float* p, float a, float b, float c, float d) {
#if __CUDA_ARCH__ >= 900
    asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
#else
    atomicAdd(p, a);
    atomicAdd(p + 1, b);
    atomicAdd(p + 2, c);
    atomicAdd(p + 3, d);
#endif
}

// A 4-byte copy from global to shared memory that the lane does not wait for (cp.async, sm_80
// and later; before, a plain copy), both addresses 4-byte aligned: the training step fetches a
// tile's targets this way while its forward runs. A commit closes the group of copies issued
// since the last one; gj_nn_copies_wait waits for all of the lane's groups (a __syncwarp after
// it shows every lane's copies to the warp).
GJ_INLINE void gj_nn_copy4_async(void* s, const void* g) {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(gj_nn_smem_addr(s)), "l"(g) : "memory");
#else
    *(gj_u32*)s = *(const gj_u32*)g;
#endif
}

// The same, 16 bytes, both addresses 16-byte aligned (a model's inference over features fetches
// a tile's features so).
GJ_INLINE void gj_nn_copy16_async(void* s, const void* g) {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(gj_nn_smem_addr(s)), "l"(g) : "memory");
#else
    *(gj_u32x4*)s = *(const gj_u32x4*)g;
#endif
}

GJ_INLINE void gj_nn_copies_commit() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

GJ_INLINE void gj_nn_copies_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group 0;" ::: "memory");
#endif
}

#endif // GJ_NN_EMULATED

GJ_INLINE int gj_nn_lane() { return threadIdx.x & 31; }

// Four floats for 16-byte loads and stores of the block's gradient sums.
struct __align__(16) gj_f32x4 {
    float x, y, z, w;
};

GJ_INLINE float gj_nn_lo(gj_u32 pair) { return gj_half_to_float((gj_u16)(pair & 0xFFFFu)); }
GJ_INLINE float gj_nn_hi(gj_u32 pair) { return gj_half_to_float((gj_u16)(pair >> 16)); }

// ---- fragments from shared memory (row-major arrays of halves, row stride S) ----------
// A = rows r0..r0+15, columns c0..c0+15 of M.
template <int S> GJ_INLINE void gj_nn_frag_a(gj_u32 (&a)[4], const gj_u16* m, int r0, int c0) {
    const int l = gj_nn_lane(), q = l >> 3;
    gj_nn_ldsm_x4(a, gj_nn_smem_addr(m + (r0 + 8 * (q & 1) + (l & 7)) * S + c0 + 8 * (q >> 1)));
}

// A = the transpose of a block of M: A[i][k] = M[k0 + k][i0 + i].
template <int S> GJ_INLINE void gj_nn_frag_a_t(gj_u32 (&a)[4], const gj_u16* m, int i0, int k0) {
    const int l = gj_nn_lane(), q = l >> 3;
    gj_nn_ldsm_x4_t(a, gj_nn_smem_addr(m + (k0 + 8 * (q >> 1) + (l & 7)) * S + i0 + 8 * (q & 1)));
}

// B for two 8-column tiles (n0, n0 + 8) where B[k][n] = M[k0 + k][n0 + n], M row-major:
// b[0], b[1] tile n0; b[2], b[3] tile n0 + 8.
template <int S> GJ_INLINE void gj_nn_frag_b_t(gj_u32 (&b)[4], const gj_u16* m, int k0, int n0) {
    const int l = gj_nn_lane(), q = l >> 3;
    gj_nn_ldsm_x4_t(b, gj_nn_smem_addr(m + (k0 + 8 * (q & 1) + (l & 7)) * S + n0 + 8 * (q >> 1)));
}

// ---- weight fragments (generic loads; rows of FAN_IN + PAD halves) ---------------------
// Forward product x . W^T: B[k][n] = W[n0 + n][k0 + k]; the pair (k = 2t, 2t + 1) of column
// n = g is two adjacent halves of row n0 + g.
template <int FAN_IN, int PAD>
GJ_INLINE void gj_nn_wfrag(gj_u32 (&b)[2], const gj_u16* w, int n0, int k0) {
    const int l = gj_nn_lane();
    const gj_u16* p = w + (n0 + (l >> 2)) * (FAN_IN + PAD) + k0 + 2 * (l & 3);
    b[0] = *(const gj_u32*)p;
    b[1] = *(const gj_u32*)(p + 8);
}

// Backward product d . W: B[k][n] = W[k0 + k][n0 + n]; the pair (k = 2t, 2t + 1) of column
// n = g is one half of each of rows k0 + 2t and k0 + 2t + 1.
template <int FAN_IN, int PAD>
GJ_INLINE void gj_nn_wfrag_t(gj_u32 (&b)[2], const gj_u16* w, int k0, int n0) {
    const int l = gj_nn_lane();
    const gj_u16* p = w + (k0 + 2 * (l & 3)) * (FAN_IN + PAD) + n0 + (l >> 2);
    b[0] = (gj_u32)p[0] | ((gj_u32)p[FAN_IN + PAD] << 16);
    b[1] = (gj_u32)p[8 * (FAN_IN + PAD)] | ((gj_u32)p[9 * (FAN_IN + PAD)] << 16);
}

// ---- the configuration's derived facts ---------------------------------------------------
template <class C> struct gj_nn {
    // Layer l's widths.
    __host__ __device__ static constexpr int fan_in(int l) { return l == 0 ? C::IN_P : C::W; }
    __host__ __device__ static constexpr int fan_out(int l) { return l == C::NL - 1 ? C::OUT_P : C::W; }
    // Where layer l starts in weights staged with PAD halves added to every row.
    template <int PAD> __host__ __device__ static constexpr gj_u64 offset(int l) {
        return l == 0 ? 0ull
                      : (gj_u64)(C::IN_P + PAD) * fan_out(0) + (gj_u64)(l - 1) * (C::W + PAD) * C::W;
    }
    // The forward context: region r (0: input, r >= 1: layer r - 1's kept value).
    __host__ __device__ static constexpr int ctx_width(int r) { return r == 0 ? C::IN_P : fan_out(r - 1); }
    __host__ __device__ static constexpr gj_u64 ctx_offset(int r) { return r == 0 ? 0ull : 32ull * (C::IN_P + (gj_u64)(r - 1) * C::W); }
    // Halves of all the weights staged with PAD halves added to every row.
    template <int PAD> __host__ __device__ static constexpr gj_u64 total() {
        return offset<PAD>(C::NL - 1) + (gj_u64)(fan_in(C::NL - 1) + PAD) * C::OUT_P;
    }
};

// ---- outputs wider than a product's accumulators -----------------------------------------
// A layer's product keeps its 16 x N accumulators in registers. The output layer of a network
// with more than GJ_NN_OUT_CHUNK padded outputs (tiny-cuda-nn takes any width) is computed
// GJ_NN_OUT_CHUNK columns at a time (the last chunk the rest), and its backward product reads
// dL/dy's fragments from shared memory per column block instead of holding them all.
#define GJ_NN_OUT_CHUNK 128
template <class C> __host__ __device__ constexpr bool gj_nn_out_chunked() { return C::OUT_P > GJ_NN_OUT_CHUNK; }

template <int N> struct gj_nn_cols {
    static constexpr int value = N;
};

// f(gj_nn_cols<N>, c0) for each chunk of the output layer's columns: c0 .. c0 + N - 1.
template <class C, class F> GJ_INLINE void gj_nn_each_out_chunk(F f) {
    constexpr int FULL = C::OUT_P / GJ_NN_OUT_CHUNK * GJ_NN_OUT_CHUNK, REST = C::OUT_P - FULL;
#pragma unroll 1
    for (int c0 = 0; c0 < FULL; c0 += GJ_NN_OUT_CHUNK) f(gj_nn_cols<GJ_NN_OUT_CHUNK>{}, c0);
    if constexpr (REST > 0) f(gj_nn_cols<REST>{}, FULL);
}

// A network without hidden layers reads its input rows (X) for every chunk, so its chunked
// outputs go to the warp's second buffer first: its forward passes take both buffers
// (C::FORWARD_SCRATCH_HALVES, which the plan computes by the same rule), the others one.
template <class C> __host__ __device__ constexpr bool gj_nn_forward_uses_d() {
    return C::NL == 1 && gj_nn_out_chunked<C>();
}

// ---- one layer's product, A from registers or from shared memory -----------------------------
template <int N> GJ_INLINE void gj_nn_zero(float (&c)[N][4]) {
#pragma unroll
    for (int j = 0; j < N; ++j) c[j][0] = c[j][1] = c[j][2] = c[j][3] = 0.0f;
}

// MT m-tiles (rows r0 + 16 m) at once: each weight fragment, loaded once, serves all of
// them (the loads, not the mma, are what limits a layer: one tile needs two 32-bit loads a
// mma).

// acc[m] (16 x N) = A[m] (16 x K, registers) . W^T, W N x K.
template <int MT, int K, int N, int PAD>
GJ_INLINE void gj_nn_layer(float (&acc)[MT][N / 8][4], const gj_u32 (&a)[MT][K / 16][4], const gj_u16* w) {
#pragma unroll
    for (int m = 0; m < MT; ++m) gj_nn_zero(acc[m]);
#pragma unroll
    for (int j = 0; j < N / 8; ++j) {
#pragma unroll
        for (int kk = 0; kk < K / 16; ++kk) {
            gj_u32 b[2];
            gj_nn_wfrag<K, PAD>(b, w, 8 * j, 16 * kk);
#pragma unroll
            for (int m = 0; m < MT; ++m) gj_nn_mma(acc[m][j], a[m][kk], b[0], b[1]);
        }
    }
}

// acc[m] (16 x N) = rows r0 + 16 m .. + 15 of X (16 x K, shared memory, stride S) . W^T:
// the first layer, whose input may be too wide for registers.
template <int MT, int K, int N, int S, int PAD>
GJ_INLINE void gj_nn_layer_smem(float (&acc)[MT][N / 8][4], const gj_u16* x, int r0, const gj_u16* w) {
#pragma unroll
    for (int m = 0; m < MT; ++m) gj_nn_zero(acc[m]);
#pragma unroll 4
    for (int kk = 0; kk < K / 16; ++kk) {
        gj_u32 a[MT][4];
#pragma unroll
        for (int m = 0; m < MT; ++m) gj_nn_frag_a<S>(a[m], x, r0 + 16 * m, 16 * kk);
#pragma unroll
        for (int j = 0; j < N / 8; ++j) {
            gj_u32 b[2];
            gj_nn_wfrag<K, PAD>(b, w, 8 * j, 16 * kk);
#pragma unroll
            for (int m = 0; m < MT; ++m) gj_nn_mma(acc[m][j], a[m], b[0], b[1]);
        }
    }
}

// The accumulators of a 16 x N product, activated, as the A fragments of the next product:
// C tile 2kk gives the left 8 columns of A block kk, tile 2kk + 1 the right 8.
template <int N, int A>
GJ_INLINE void gj_nn_to_a(gj_u32 (&a)[N / 16][4], const float (&c)[N / 8][4]) {
#pragma unroll
    for (int kk = 0; kk < N / 16; ++kk) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float* v = c[2 * kk + (i >> 1)] + 2 * (i & 1); // (g, left), (g+8, left), (g, right), (g+8, right)
            a[kk][i] = gj_pack_half2(gj_nn_act<A>(v[0]), gj_nn_act<A>(v[1]));
        }
    }
}

// Stores f(accumulators) of a 16 x N product as fp16 into rows r0..r0+15 of M (row stride
// S, generic memory: shared scratch or a context region).
template <int N, int S, class F>
GJ_INLINE void gj_nn_store_c(gj_u16* m, int r0, const float (&c)[N / 8][4], F f) {
    const int l = gj_nn_lane();
    gj_u16* p = m + (r0 + (l >> 2)) * S + 2 * (l & 3);
#pragma unroll
    for (int j = 0; j < N / 8; ++j) {
        *(gj_u32*)(p + 8 * j) = gj_pack_half2(f(c[j][0]), f(c[j][1]));
        *(gj_u32*)(p + 8 * S + 8 * j) = gj_pack_half2(f(c[j][2]), f(c[j][3]));
    }
}

// ---- rows of the tile ------------------------------------------------------------------
// Lane p writes its point's padded input into row p of X: columns < C::IN from x (floats or
// halves), the padding columns C::INPUT_PADDING (1 for a network alone, 0 behind an
// encoding); an inactive lane writes zeros.
template <class C, class T>
GJ_INLINE void gj_nn_put_input(gj_u16* x, const T* in, bool active) {
    gj_u16* row = x + gj_nn_lane() * C::S;
    const float pad = active ? C::INPUT_PADDING : 0.0f;
    const auto pair = [&](int c) {
        const float a = c < C::IN ? (active ? gj_to_float(in[c]) : 0.0f) : pad;
        const float b = c + 1 < C::IN ? (active ? gj_to_float(in[c + 1]) : 0.0f) : pad;
        *(gj_u32*)(row + c) = gj_pack_half2(a, b);
    };
    if constexpr (C::IN_P <= 64) {
        // Every index constant: an input in registers (a model's features) stays there.
#pragma unroll
        for (int c = 0; c < C::IN_P; c += 2) pair(c);
    } else {
#pragma unroll 4
        for (int c = 0; c < C::IN_P; c += 2) pair(c);
    }
}

// ---- the forward context ------------------------------------------------------------------
// Region 0 (the padded input, 32 rows of WIDTH halves, row-major) and shared rows (stride S),
// copied 16 bytes a lane over the region as one flat array: each warp instruction moves 512
// consecutive bytes of the context. To shared memory, rows whose bit of mask is clear become
// zeros.
template <int WIDTH, int S>
GJ_INLINE void gj_nn_rows_to_ctx(gj_u16* ctx, const gj_u16* x) {
    constexpr int PER_ROW = WIDTH / 8;
#pragma unroll 4
    for (int q = gj_nn_lane(); q < 32 * PER_ROW; q += 32)
        ((gj_u32x4*)ctx)[q] = *(const gj_u32x4*)(x + (q / PER_ROW) * S + 8 * (q % PER_ROW));
}

template <int WIDTH, int S>
GJ_INLINE void gj_nn_rows_from_ctx(gj_u16* x, const gj_u16* ctx, gj_u32 mask) {
    constexpr int PER_ROW = WIDTH / 8;
#pragma unroll 4
    for (int q = gj_nn_lane(); q < 32 * PER_ROW; q += 32) {
        const int row = q / PER_ROW;
        gj_u32x4 v = {0u, 0u, 0u, 0u};
        if ((mask >> row) & 1u) v = ((const gj_u32x4*)ctx)[q];
        *(gj_u32x4*)(x + row * S + 8 * (q % PER_ROW)) = v;
    }
}

// Regions r >= 1 (WR wide) in fragment order: the two halves (columns 8 j + 2t, + 1) of row
// 16 mb + g + 8 h are 32-bit word ((mb * WR / 8 + j) * 2 + h) * 32 + lane, the lane (g, t)
// whose mma accumulator holds them.
template <int WR> GJ_INLINE gj_u32* gj_nn_ctx_frag(gj_u16* region, int mb, int j, int h) {
    return (gj_u32*)region + ((mb * (WR / 8) + j) * 2 + h) * 32 + gj_nn_lane();
}
template <int WR> GJ_INLINE gj_u32 gj_nn_ctx_load(const gj_u16* region, int mb, int j, int h) {
    return *gj_nn_ctx_frag<WR>((gj_u16*)region, mb, j, h);
}

// Stores f(accumulators) of a 16 x N product (rows r0 .. r0 + 15) into columns c0 .. c0 + N - 1
// of a fragment-order region WR wide.
template <int WR, int N, class F>
GJ_INLINE void gj_nn_store_ctx_cols(gj_u16* region, int r0, int c0, const float (&c)[N / 8][4], F f) {
#pragma unroll
    for (int j = 0; j < N / 8; ++j) {
        *gj_nn_ctx_frag<WR>(region, r0 / 16, c0 / 8 + j, 0) = gj_pack_half2(f(c[j][0]), f(c[j][1]));
        *gj_nn_ctx_frag<WR>(region, r0 / 16, c0 / 8 + j, 1) = gj_pack_half2(f(c[j][2]), f(c[j][3]));
    }
}

// The same for a product as wide as its region.
template <int N, class F>
GJ_INLINE void gj_nn_store_ctx(gj_u16* region, int r0, const float (&c)[N / 8][4], F f) {
    gj_nn_store_ctx_cols<N, N>(region, r0, 0, c, f);
}

// Calls f(mb, j, h, on, row, col) for each 32-bit word the lane holds of a fragment-order
// region WR wide: rows g, g + 8, 16 + g, 24 + g of the tile (row = 16 mb + g + 8 h), columns
// col = 8 j + 2t; on: the row's bit of mask.
template <int WR, class F> GJ_INLINE void gj_nn_each_ctx_word(gj_u32 mask, F f) {
    const int l = gj_nn_lane(), g = l >> 2, t = l & 3;
#pragma unroll
    for (int mb = 0; mb < 2; ++mb) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = 16 * mb + g + 8 * h;
            const bool on = (mask >> row) & 1u;
#pragma unroll 4
            for (int j = 0; j < WR / 8; ++j) f(mb, j, h, on, row, 8 * j + 2 * t);
        }
    }
}

// A fragment-order region (WR wide) into shared rows (stride S) as h (KEPT_ACT converts a kept
// z, Sine and SiLU); rows whose bit of mask is clear become zeros. The stores of a warp
// instruction fall into 32 distinct banks (8 rows of an odd number of 16-byte words apart, 4
// words each).
template <int WR, int S, int KEPT_ACT>
GJ_INLINE void gj_nn_kept_to_rows(gj_u16* x, const gj_u16* region, gj_u32 mask) {
    gj_nn_each_ctx_word<WR>(mask, [&](int mb, int j, int h, bool on, int row, int col) {
        gj_u32 v = on ? gj_nn_ctx_load<WR>(region, mb, j, h) : 0u;
        if constexpr (gj_nn_keeps_z<KEPT_ACT>()) {
            if (on) v = gj_pack_half2(gj_nn_h_from_kept<KEPT_ACT>(gj_nn_lo(v)), gj_nn_h_from_kept<KEPT_ACT>(gj_nn_hi(v)));
        }
        *(gj_u32*)(x + row * S + col) = v;
    });
}

// Whether act'(z) depends on the kept value (every activation but None).
template <int A> __host__ __device__ constexpr bool gj_nn_derivative_reads_kept() { return A != GJ_NN_NONE; }

// ---- the pass kernels' context: kept, or recomputed --------------------------------------------
// Where the configuration states C::RECOMPUTE true, the pass kernels (a network's and a model's
// forward for training and backward kernels) keep only region 0 of each tile's context, the padded
// input rows: gj_nn_pass_ctx_halves<C>() = 32 * C::IN_P halves a tile instead of C::CTX_HALVES, a
// fifth of it for a 64 x 2 network behind 32 features (the forward writes a fifth of the bytes, the
// backward reads a fifth). The backward then recomputes the output of the hidden layer below each
// layer from those rows with the forward's own products, in the same order, so the values it works
// with are the forward's bit for bit (gj_nn_recompute_rows). It needs hidden activations that keep
// h (not Sine or SiLU, which keep z) and an output activation whose derivative reads nothing kept
// (None). The per-point entry points and the training step's kernel (whose context stays in L2)
// keep everything.
template <class C, class = void> struct gj_nn_recomputes {
    static constexpr bool value = false;
};
template <class C> struct gj_nn_recomputes<C, decltype(void(C::RECOMPUTE))> {
    static constexpr bool value = C::RECOMPUTE;
    static_assert(!C::RECOMPUTE || (!gj_nn_keeps_z<C::ACT>() && !gj_nn_derivative_reads_kept<C::OUT_ACT>()),
                  "recomputing needs activations that keep h and an output activation that reads nothing kept");
};
template <class C> __host__ __device__ constexpr gj_u64 gj_nn_pass_ctx_halves() {
    return gj_nn_recomputes<C>::value ? 32ull * C::IN_P : C::CTX_HALVES;
}

// ---- forward ---------------------------------------------------------------------------------
// The forward's m-tiles at once: both where their accumulators fit in registers, else one at a
// time, or what the configuration asks for (C::FORWARD_M_TILES, 0 for this rule: a model's
// inference kernel in blocks of 16 warps, whose threads have at most 128 registers, takes one).
template <class C> __host__ __device__ constexpr int gj_nn_m_tiles_fitting() {
    return C::W <= 64 && C::OUT_P <= 64 ? 2 : 1;
}
template <class C, class = void> struct gj_nn_forward_m_tiles {
    static constexpr int value = gj_nn_m_tiles_fitting<C>();
};
template <class C> struct gj_nn_forward_m_tiles<C, decltype(void(C::FORWARD_M_TILES))> {
    static constexpr int value = C::FORWARD_M_TILES ? C::FORWARD_M_TILES : gj_nn_m_tiles_fitting<C>();
};

// The warp's tile through the network. In: the padded input rows in X (gj_nn_put_input).
// Out: row p of X holds point p's C::OUT_P outputs (fp16, after the output activation).
// ctx (null: inference) receives the forward context: all of it, or without KEEP region 0
// alone (the input rows a recomputing backward starts from). w: the weights (rows padded by PAD).
template <class C, int PAD, bool KEEP = true>
GJ_INLINE void gj_nn_forward_warp(const gj_u16* w, gj_u16* x, gj_u16* ctx) {
    typedef gj_nn<C> L;
    constexpr int S = C::S;
    constexpr int MT = gj_nn_forward_m_tiles<C>::value;
    static_assert(MT >= 1 && MT <= gj_nn_m_tiles_fitting<C>(), "two m-tiles need their accumulators in registers");
    __syncwarp();
    if (ctx) gj_nn_rows_to_ctx<C::IN_P, S>(ctx, x);
    // The output layer in chunks, into rows of `rows` (X, or D where the chunks read X).
    const auto output_chunks = [&](gj_u16* rows, int r0, auto product) {
        gj_nn_each_out_chunk<C>([&](auto cols, int c0) {
            constexpr int N = decltype(cols)::value;
            float out[1][N / 8][4];
            product(cols, out, c0);
            __syncwarp();
            if (KEEP && ctx && gj_nn_derivative_reads_kept<C::OUT_ACT>())
                gj_nn_store_ctx_cols<C::OUT_P, N>(ctx + L::ctx_offset(C::NL), r0, c0, out[0], gj_nn_kept_f<C::OUT_ACT>());
            gj_nn_store_c<N, S>(rows + c0, r0, out[0], gj_nn_act_f<C::OUT_ACT>());
        });
    };
#pragma unroll 1
    for (int r0 = 0; r0 < 32; r0 += 16 * MT) {
        if constexpr (gj_nn_forward_uses_d<C>()) {
            static_assert(MT == 1 && C::FORWARD_SCRATCH_HALVES == C::SCRATCH_HALVES, "the plan gives D to the forward");
            output_chunks(x + 32 * S, r0, [&](auto cols, auto& out, int c0) {
                gj_nn_layer_smem<1, C::IN_P, decltype(cols)::value, S, PAD>(out, x, r0, w + (gj_u64)c0 * (C::IN_P + PAD));
            });
        } else if constexpr (C::NL == 1) {
            float out[MT][C::OUT_P / 8][4];
            gj_nn_layer_smem<MT, C::IN_P, C::OUT_P, S, PAD>(out, x, r0, w);
            __syncwarp();
#pragma unroll
            for (int m = 0; m < MT; ++m) {
                if (KEEP && ctx && gj_nn_derivative_reads_kept<C::OUT_ACT>())
                    gj_nn_store_ctx<C::OUT_P>(ctx + L::ctx_offset(1), r0 + 16 * m, out[m], gj_nn_kept_f<C::OUT_ACT>());
                gj_nn_store_c<C::OUT_P, S>(x, r0 + 16 * m, out[m], gj_nn_act_f<C::OUT_ACT>());
            }
        } else {
            float acc[MT][C::W / 8][4];
            gj_u32 a[MT][C::W / 16][4];
            gj_nn_layer_smem<MT, C::IN_P, C::W, S, PAD>(acc, x, r0, w);
            if (KEEP && ctx) {
#pragma unroll
                for (int m = 0; m < MT; ++m)
                    gj_nn_store_ctx<C::W>(ctx + L::ctx_offset(1), r0 + 16 * m, acc[m], gj_nn_kept_f<C::ACT>());
            }
#pragma unroll 1
            for (int l = 1; l < C::NL - 1; ++l) {
#pragma unroll
                for (int m = 0; m < MT; ++m) gj_nn_to_a<C::W, C::ACT>(a[m], acc[m]);
                gj_nn_layer<MT, C::W, C::W, PAD>(acc, a, w + L::template offset<PAD>(l));
                if (KEEP && ctx) {
#pragma unroll
                    for (int m = 0; m < MT; ++m)
                        gj_nn_store_ctx<C::W>(ctx + L::ctx_offset(l + 1), r0 + 16 * m, acc[m], gj_nn_kept_f<C::ACT>());
                }
            }
#pragma unroll
            for (int m = 0; m < MT; ++m) gj_nn_to_a<C::W, C::ACT>(a[m], acc[m]);
            if constexpr (gj_nn_out_chunked<C>()) {
                static_assert(MT == 1, "a chunked output layer takes one m-tile at a time");
                output_chunks(x, r0, [&](auto cols, auto& out, int c0) {
                    gj_nn_layer<1, C::W, decltype(cols)::value, PAD>(
                        out, a, w + L::template offset<PAD>(C::NL - 1) + (gj_u64)c0 * (C::W + PAD));
                });
            } else {
                float out[MT][C::OUT_P / 8][4];
                gj_nn_layer<MT, C::W, C::OUT_P, PAD>(out, a, w + L::template offset<PAD>(C::NL - 1));
                __syncwarp();
#pragma unroll
                for (int m = 0; m < MT; ++m) {
                    if (KEEP && ctx && gj_nn_derivative_reads_kept<C::OUT_ACT>())
                        gj_nn_store_ctx<C::OUT_P>(ctx + L::ctx_offset(C::NL), r0 + 16 * m, out[m],
                                                  gj_nn_kept_f<C::OUT_ACT>());
                    gj_nn_store_c<C::OUT_P, S>(x, r0 + 16 * m, out[m], gj_nn_act_f<C::OUT_ACT>());
                }
            }
        }
    }
    if constexpr (gj_nn_forward_uses_d<C>()) {
        // The outputs from D to X, where the callers read them.
        constexpr int PER_ROW = C::OUT_P / 8;
        __syncwarp();
#pragma unroll 4
        for (int q = gj_nn_lane(); q < 32 * PER_ROW; q += 32) {
            const int off = (q / PER_ROW) * S + 8 * (q % PER_ROW);
            *(gj_u32x4*)(x + off) = *(const gj_u32x4*)(x + 32 * S + off);
        }
    }
    __syncwarp();
}

// The warp's output rows (fp16, row r at rows + r * S; the first `valid` of 32) into y from
// point first on, point-major: as floats, or where half as the fp16 values they are (what
// tiny-cuda-nn's networks write: half the bytes). Consecutive points' rows are one contiguous
// run of y, so consecutive lanes take consecutive values of it: each store instruction writes
// whole 32-byte sectors (one lane per row wrote 32 partial sectors per instruction, each sent to
// L2 on its own: stores are not merged in L1, and L2 requests are what an encoding's gathers
// queue on). One loop for both types, the type a uniform branch per value: the bytes written
// are what costs, not the store instructions (fp16 values stored 8 to a 16-byte piece, with
// words and single values where the width or alignment did not allow, ran no faster on an H100
// and cost the inference program's cold compile 60 ms on two cores; docs/benchmarks.md §11).
template <int OUT, int S>
GJ_INLINE void gj_nn_store_rows(void* __restrict__ y, gj_u64 first, bool half, const gj_u16* rows, int valid) {
    const gj_u64 base = first * OUT;
    const int count = valid * OUT;
#pragma unroll 4
    for (int e = gj_nn_lane(); e < count; e += 32) {
        const int r = e / OUT;
        const gj_u16 v = rows[r * S + (e - r * OUT)];
        if (half) ((gj_u16*)y)[base + e] = v;
        else ((float*)y)[base + e] = gj_half_to_float(v);
    }
}

// ---- backward --------------------------------------------------------------------------------
// Columns nb .. nb + 15 of rows rm .. rm + 15 of a backward product (c: its two 16 x 8
// accumulator tiles) times act'(kept), into OUT as fp16 (stride S); inactive rows zeros.
// kept: a context region in fragment order, or (KEPT_ROWS) rows of stride S, which may be OUT
// itself: each lane reads the two words it then overwrites, and no other lane's.
template <int K, int S, int ACT, bool KEPT_ROWS = false>
GJ_INLINE void gj_nn_backprop_store(gj_u16* out, const float (&c)[2][4], const gj_u16* kept, int rm, int nb, gj_u32 mask) {
    const int l = gj_nn_lane(), g = l >> 2, t = l & 3;
    const bool lo_on = (mask >> (rm + g)) & 1u, hi_on = (mask >> (rm + g + 8)) & 1u;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
        const int col = nb + 8 * j + 2 * t;
        float v[4] = {c[j][0], c[j][1], c[j][2], c[j][3]};
        if (kept) {
            const gj_u32 k0 = KEPT_ROWS ? *(const gj_u32*)(kept + (rm + g) * S + col)
                                        : gj_nn_ctx_load<K>(kept, rm / 16, (nb + 8 * j) / 8, 0);
            const gj_u32 k1 = KEPT_ROWS ? *(const gj_u32*)(kept + (rm + g + 8) * S + col)
                                        : gj_nn_ctx_load<K>(kept, rm / 16, (nb + 8 * j) / 8, 1);
            v[0] *= gj_nn_grad_from_kept<ACT>(gj_nn_lo(k0));
            v[1] *= gj_nn_grad_from_kept<ACT>(gj_nn_hi(k0));
            v[2] *= gj_nn_grad_from_kept<ACT>(gj_nn_lo(k1));
            v[3] *= gj_nn_grad_from_kept<ACT>(gj_nn_hi(k1));
        }
        *(gj_u32*)(out + (rm + g) * S + col) = lo_on ? gj_pack_half2(v[0], v[1]) : 0u;
        *(gj_u32*)(out + (rm + g + 8) * S + col) = hi_on ? gj_pack_half2(v[2], v[3]) : 0u;
    }
}

// gj_nn_backprop for D wider than GJ_NN_OUT_CHUNK (a chunked output layer's delta): D's
// fragments are loaded per column block from shared memory, not held in registers.
template <int K, int N, int NCOLS, int S, int PAD, int ACT, bool KEPT_ROWS>
GJ_INLINE void gj_nn_backprop_wide(gj_u16* out, const gj_u16* d, const gj_u16* w, const gj_u16* kept, gj_u32 mask) {
#pragma unroll 1
    for (int r0 = 0; r0 < 32; r0 += 16) {
#pragma unroll 1
        for (int nb = 0; nb < NCOLS; nb += 16) {
            float c[2][4];
            gj_nn_zero(c);
#pragma unroll 4
            for (int kk = 0; kk < N / 16; ++kk) {
                gj_u32 a[4];
                gj_nn_frag_a<S>(a, d, r0, 16 * kk);
#pragma unroll
                for (int j = 0; j < 2; ++j) {
                    gj_u32 b[2];
                    gj_nn_wfrag_t<K, PAD>(b, w, 16 * kk, nb + 8 * j);
                    gj_nn_mma(c[j], a, b[0], b[1]);
                }
            }
            gj_nn_backprop_store<K, S, ACT, KEPT_ROWS>(out, c, kept, r0, nb, mask);
        }
    }
}

// Out (32 x NCOLS of K) = D (32 x N) . W (N x K, rows of K + PAD), times act'(kept) of the
// layer below (KEPT: its context region, 32 x K in fragment order, or with KEPT_ROWS its rows,
// which may be OUT's; null for the input, which has none), as fp16 into OUT (stride S); rows
// whose point is inactive (bit clear in mask) are zeros (gj_nn_backprop below: this form for N
// up to GJ_NN_OUT_CHUNK, the wide one above).
// Both m-tiles share each weight fragment where their A fragments fit in registers (N <= 64).
template <int K, int N, int NCOLS, int S, int PAD, int ACT, bool KEPT_ROWS>
GJ_INLINE void gj_nn_backprop_narrow(gj_u16* out, const gj_u16* d, const gj_u16* w, const gj_u16* kept,
                                     gj_u32 mask) {
    constexpr int MT = N <= 64 ? 2 : 1;
#pragma unroll 1
    for (int r0 = 0; r0 < 32; r0 += 16 * MT) {
        gj_u32 a[MT][N / 16][4];
#pragma unroll
        for (int m = 0; m < MT; ++m) {
#pragma unroll
            for (int kk = 0; kk < N / 16; ++kk) gj_nn_frag_a<S>(a[m][kk], d, r0 + 16 * m, 16 * kk);
        }
#pragma unroll 2
        for (int nb = 0; nb < NCOLS; nb += 16) {
            float c[MT][2][4];
#pragma unroll
            for (int m = 0; m < MT; ++m) {
#pragma unroll
                for (int j = 0; j < 2; ++j) c[m][j][0] = c[m][j][1] = c[m][j][2] = c[m][j][3] = 0.0f;
            }
#pragma unroll
            for (int kk = 0; kk < N / 16; ++kk) {
#pragma unroll
                for (int j = 0; j < 2; ++j) {
                    gj_u32 b[2];
                    gj_nn_wfrag_t<K, PAD>(b, w, 16 * kk, nb + 8 * j);
#pragma unroll
                    for (int m = 0; m < MT; ++m) gj_nn_mma(c[m][j], a[m][kk], b[0], b[1]);
                }
            }
#pragma unroll
            for (int m = 0; m < MT; ++m)
                gj_nn_backprop_store<K, S, ACT, KEPT_ROWS>(out, c[m], kept, r0 + 16 * m, nb, mask);
        }
    }
}

template <int K, int N, int NCOLS, int S, int PAD, int ACT, bool KEPT_ROWS = false>
GJ_INLINE void gj_nn_backprop(gj_u16* out, const gj_u16* d, const gj_u16* w, const gj_u16* kept, gj_u32 mask) {
    if constexpr (N > GJ_NN_OUT_CHUNK) gj_nn_backprop_wide<K, N, NCOLS, S, PAD, ACT, KEPT_ROWS>(out, d, w, kept, mask);
    else gj_nn_backprop_narrow<K, N, NCOLS, S, PAD, ACT, KEPT_ROWS>(out, d, w, kept, mask);
}

// Rows of X (stride S) := the kept value (h) of hidden layer `top` for the warp's tile, its
// rows whose bit of mask is clear zeros, recomputed from the input rows of ctx (region 0) with
// the forward's products in the forward's order (gj_nn_forward_warp), one m-tile at a time:
// the values the forward kept, bit for bit (gj_nn_recomputes).
template <class C, int PAD>
GJ_INLINE void gj_nn_recompute_rows(gj_u16* x, const gj_u16* ctx, const gj_u16* w, int top, gj_u32 mask) {
    typedef gj_nn<C> L;
    constexpr int S = C::S;
    const int g = gj_nn_lane() >> 2;
    gj_nn_rows_from_ctx<C::IN_P, S>(x, ctx, mask);
    __syncwarp();
#pragma unroll 1
    for (int r0 = 0; r0 < 32; r0 += 16) {
        float acc[1][C::W / 8][4];
        gj_u32 a[1][C::W / 16][4];
        gj_nn_layer_smem<1, C::IN_P, C::W, S, PAD>(acc, x, r0, w);
#pragma unroll 1
        for (int l = 1; l <= top; ++l) {
            gj_nn_to_a<C::W, C::ACT>(a[0], acc[0]);
            gj_nn_layer<1, C::W, C::W, PAD>(acc, a, w + L::template offset<PAD>(l));
        }
        __syncwarp(); // every lane has read rows r0 .. r0 + 15 before they are overwritten
        const bool lo_on = (mask >> (r0 + g)) & 1u, hi_on = (mask >> (r0 + g + 8)) & 1u;
#pragma unroll
        for (int j = 0; j < C::W / 8; ++j) {
            const float* v = acc[0][j];
            gj_u16* p = x + (r0 + g) * S + 8 * j + 2 * (gj_nn_lane() & 3);
            *(gj_u32*)p = lo_on ? gj_pack_half2(gj_nn_kept<C::ACT>(v[0]), gj_nn_kept<C::ACT>(v[1])) : 0u;
            *(gj_u32*)(p + 8 * S) = hi_on ? gj_pack_half2(gj_nn_kept<C::ACT>(v[2]), gj_nn_kept<C::ACT>(v[3])) : 0u;
        }
    }
    __syncwarp();
}

// ---- where a backward pass adds dL/dW -------------------------------------------------------
// dL/dW of a layer is D^T X summed over points: D (32 x N per tile, the layer's delta) and X
// (32 x K, its input), both in shared memory (stride S). gj_nn_wgrad_layer sums over `tiles`
// tiles, the calling warp's and those of the warps after it in the block (their scratch
// SCRATCH halves apart), with the points along the mma's K. The 16 x 16 blocks of dW are split
// into tasks (a row block and NB column blocks: a row fragment of D^T, loaded once per task and
// K step, serves all NB) dealt to warps me, me + WARPS, ...; each task's sums go, once:
//   SUMS: to a block's sums in shared memory in fragment order (the 16 x 16 block b of a layer
//     at offset + 256 b, lane l's eight values at 8 l: plain conflict-free loads and stores, a
//     task owned by one warp; gj_nn_sums_to_layout gives tiny-cuda-nn's layout);
//   else: to dparams in tiny-cuda-nn's layout with atomics; GLOBAL (dparams in global memory)
//     with 16-byte reductions where dparams + offset is 16-byte aligned: lanes t and t ^ 1 trade
//     a pair of sums so that each holds four consecutive columns of one row (even t row g,
//     odd t row g + 8), a quarter of the atomic instructions (the backward kernels of networks
//     whose sums do not fit their block's shared memory add every round's this way).
// gj_nn_wgrad_regs (below) keeps a task's sums in the warp's registers across rounds instead.

// How a layer's dL/dW (N x K) is split into tasks for WARPS warps (above): NB column blocks a
// task, TASKS tasks, PER_WARP of them at most a warp, FLOATS accumulators a lane for them.
template <int WARPS, int MAX_NB, int K, int N> struct gj_nn_wgrad_tasks {
    static constexpr int KB = K / 16, MB = N / 16;
    // Column blocks per task: as many as leave every warp a task, at most MAX_NB.
    static constexpr int NB = (MAX_NB >= 4 && KB % 4 == 0 && MB * KB >= 4 * WARPS)   ? 4
                              : (MAX_NB >= 2 && KB % 2 == 0 && MB * KB >= 2 * WARPS) ? 2
                                                                                     : 1;
    static constexpr int GROUPS = KB / NB, TASKS = MB * GROUPS;
    static constexpr int PER_WARP = (TASKS + WARPS - 1) / WARPS, FLOATS = PER_WARP * NB * 8;
};

// Adds to c the sums of task (mb, nb0) over `tiles` tiles: the calling warp's (me) and those
// of the warps after it (their scratch SCRATCH halves apart).
template <gj_u64 SCRATCH, int NB, int S>
GJ_INLINE void gj_nn_wgrad_task(float (&c)[NB][2][4], int mb, int nb0, const gj_u16* d, const gj_u16* x, int me,
                                int tiles) {
#pragma unroll 1
    for (int w = 0; w < tiles; ++w) {
        const long long to_w = (long long)(w - me) * (long long)SCRATCH;
        const gj_u16 *dw = d + to_w, *xw = x + to_w;
#pragma unroll
        for (int kp = 0; kp < 2; ++kp) {
            gj_u32 a[4];
            gj_nn_frag_a_t<S>(a, dw, 16 * mb, 16 * kp);
#pragma unroll
            for (int j = 0; j < NB; ++j) {
                gj_u32 b[4];
                gj_nn_frag_b_t<S>(b, xw, 16 * kp, 16 * (nb0 + j));
                gj_nn_mma(c[j][0], a, b[0], b[1]);
                gj_nn_mma(c[j][1], a, b[2], b[3]);
            }
        }
    }
}

// Adds a task's sums c to dparams in tiny-cuda-nn's layout with atomics (the layer's K columns
// at `offset`); vec: with the 16-byte reductions of the overview above (dparams + offset
// 16-byte aligned, in global memory).
template <int NB, int K>
GJ_INLINE void gj_nn_wgrad_add(float* dparams, gj_u64 offset, int mb, int nb0, const float (&c)[NB][2][4], bool vec) {
    const int l = gj_nn_lane(), g = l >> 2, t = l & 3;
#pragma unroll
    for (int j = 0; j < NB; ++j) {
        if (vec) {
            const bool even = (t & 1) == 0;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float* v = c[j][h];
                // even t gives its row g + 8 pair and takes its neighbour's row g pair; odd t the reverse
                const float r0 = gj_nn_shfl_xor(even ? v[2] : v[0], 1), r1 = gj_nn_shfl_xor(even ? v[3] : v[1], 1);
                float* p = dparams + offset + (gj_u64)(16 * mb + g + (even ? 0 : 8)) * K + 16 * (nb0 + j) + 8 * h +
                           4 * (t >> 1);
                if (even) gj_nn_red_v4(p, v[0], v[1], r0, r1);
                else gj_nn_red_v4(p, r0, r1, v[2], v[3]);
            }
        } else {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float* p = dparams + offset + (gj_u64)(16 * mb + g) * K + 16 * (nb0 + j) + 8 * h + 2 * t;
                atomicAdd(p, c[j][h][0]);
                atomicAdd(p + 1, c[j][h][1]);
                atomicAdd(p + 8 * K, c[j][h][2]);
                atomicAdd(p + 8 * K + 1, c[j][h][3]);
            }
        }
    }
}

// One layer's sums over the round's tiles, each task's added once where its kind says (above).
template <int WARPS, gj_u64 SCRATCH, bool SUMS, bool GLOBAL, int MAX_NB, int K, int N, int S>
GJ_INLINE void gj_nn_wgrad_layer(float* dparams, gj_u64 offset, const gj_u16* d, const gj_u16* x, int me, int tiles) {
    typedef gj_nn_wgrad_tasks<WARPS, MAX_NB, K, N> T;
    constexpr int NB = T::NB, KB = T::KB;
    const int l = gj_nn_lane();
    const bool vec = GLOBAL && ((unsigned long long)(dparams + offset) & 15u) == 0;
#pragma unroll 1
    for (int task = me; task < T::TASKS; task += WARPS) {
        const int mb = task / T::GROUPS, nb0 = (task % T::GROUPS) * NB;
        float c[NB][2][4];
#pragma unroll
        for (int j = 0; j < NB; ++j) gj_nn_zero(c[j]);
        gj_nn_wgrad_task<SCRATCH, NB, S>(c, mb, nb0, d, x, me, tiles);
        if constexpr (SUMS) {
#pragma unroll
            for (int j = 0; j < NB; ++j) {
                gj_f32x4* p = (gj_f32x4*)(dparams + offset + 256ull * (mb * KB + nb0 + j) + 8 * l);
                gj_f32x4 lo = p[0], hi = p[1];
                lo.x += c[j][0][0], lo.y += c[j][0][1], lo.z += c[j][0][2], lo.w += c[j][0][3];
                hi.x += c[j][1][0], hi.y += c[j][1][1], hi.z += c[j][1][2], hi.w += c[j][1][3];
                p[0] = lo;
                p[1] = hi;
            }
        } else {
            gj_nn_wgrad_add<NB, K>(dparams, offset, mb, nb0, c, vec);
        }
    }
}

// gj_nn_backward_warp hands each layer's D and X to a weight-gradient sink WG: WG::on()
// (uniform over the warp, and over the block for the block sink) says whether parameter
// gradients are wanted, WG::layer<K, N, S>(l, offset, d, x) adds dL/dW of layer l, whose weights
// start at `offset` in tiny-cuda-nn's layout.

// The warp's own 32 points, added with atomics: the per-point entry points, which know nothing
// of the block around them (at most two column blocks a task: they run inside callers' kernels).
struct gj_nn_wgrad_warp {
    float* dparams; // fp32, tiny-cuda-nn's layout (global or shared); null: none
    GJ_INLINE bool on() const { return dparams != nullptr; }
    template <int K, int N, int S> GJ_INLINE void layer(int, gj_u64 offset, const gj_u16* d, const gj_u16* x) const {
        gj_nn_wgrad_layer<1, 0, false, false, 2, K, N, S>(dparams, offset, d, x, 0, 1);
    }
};

// The kernels' sink: the block's WARPS warps hand in their tiles together (a round) and the
// layer is summed over all the round's points before anything is added: per round each weight
// gets one addition, not one per warp. SUMS: dparams is the block's shared fragment-order
// sums (gj_nn_backward_flush puts them in tiny-cuda-nn's layout); else the caller's
// dL/dparams. Two barriers per layer: every warp's D and X written before the sums, read before
// they are overwritten. `warps`: the warps of the round that hold points (their scratch is
// read; the others' is not).
template <int WARPS, gj_u64 SCRATCH, bool SUMS> struct gj_nn_wgrad_block {
    float* dparams; // SUMS: the shared fragment-order sums; else dL/dparams; null: none
    int warps;
    GJ_INLINE bool on() const { return dparams != nullptr; }
    template <int K, int N, int S> GJ_INLINE void layer(int, gj_u64 offset, const gj_u16* d, const gj_u16* x) const {
        __syncthreads();
        gj_nn_wgrad_layer<WARPS, SCRATCH, SUMS, !SUMS, 4, K, N, S>(dparams, offset, d, x, threadIdx.x / 32, warps);
        __syncthreads();
    }
};

// The training step's sink (gj_nn_train_rounds): the block sink's rounds, but the tasks of the
// layers that fit BUDGET accumulators a lane keep their sums in the warp's registers across
// all of the block's rounds and reach dL/dparams once, at the end (flush), where the block sink
// adds every round's with atomics that all blocks aim at the same few kilobytes. The layers
// kept: the last, then the first, then the hidden ones from layer 1 up while the total stays
// within the budget (the accumulators are live through the whole step: the budget trades them
// against the registers of the forward and backward); the others go to `rest` each round.
template <class C, int BUDGET> struct gj_nn_wgrad_regs {
    typedef gj_nn<C> L;
    typedef gj_nn_wgrad_block<C::WARPS, C::SCRATCH_HALVES, C::SMEM_GRADS> Rest;
    static constexpr int FIRST_N = C::NL == 1 ? C::OUT_P : C::W;
    typedef gj_nn_wgrad_tasks<C::WARPS, 4, C::IN_P, FIRST_N> First;
    typedef gj_nn_wgrad_tasks<C::WARPS, 4, C::W, C::OUT_P> Last;
    typedef gj_nn_wgrad_tasks<C::WARPS, 4, C::W, C::W> Hidden;
    static constexpr int N_HIDDEN = C::NL > 2 ? C::NL - 2 : 0;
    static constexpr bool KEEP_LAST = C::NL > 1 && Last::FLOATS <= BUDGET;
    static constexpr int AFTER_LAST = BUDGET - (KEEP_LAST ? Last::FLOATS : 0);
    static constexpr bool KEEP_FIRST = First::FLOATS <= AFTER_LAST;
    static constexpr int AFTER_FIRST = AFTER_LAST - (KEEP_FIRST ? First::FLOATS : 0);
    static constexpr int FIT_HIDDEN = AFTER_FIRST > 0 ? AFTER_FIRST / Hidden::FLOATS : 0;
    static constexpr int KEPT_HIDDEN = N_HIDDEN < FIT_HIDDEN ? N_HIDDEN : FIT_HIDDEN;

    Rest rest;      // the other layers' sink; rest.warps: the round's warps that hold points
    float* dparams; // dL/dparams (fp32, global memory); null: none
    mutable float first[KEEP_FIRST ? First::PER_WARP : 1][First::NB][2][4];
    mutable float last[KEEP_LAST ? Last::PER_WARP : 1][Last::NB][2][4];
    mutable float hidden[KEPT_HIDDEN > 0 ? KEPT_HIDDEN : 1][Hidden::PER_WARP][Hidden::NB][2][4];

    // global: dL/dparams; grads: what the block sink adds the other layers to (block sums or global).
    GJ_INLINE gj_nn_wgrad_regs(float* global, float* grads) : dparams(global) {
        rest.dparams = grads;
        rest.warps = 0;
        if constexpr (KEEP_FIRST) zero<First>(first);
        if constexpr (KEEP_LAST) zero<Last>(last);
#pragma unroll
        for (int h = 0; h < KEPT_HIDDEN; ++h) zero<Hidden>(hidden[h]);
    }
    GJ_INLINE bool on() const { return dparams != nullptr; }

    template <int K, int N, int S> GJ_INLINE void layer(int l, gj_u64 offset, const gj_u16* d, const gj_u16* x) const {
        // The layers whose shape this is; where all are kept, `rest` is not compiled in.
        constexpr bool IS_FIRST = K == C::IN_P && N == FIRST_N;
        constexpr bool IS_LAST = C::NL > 1 && K == C::W && N == C::OUT_P;
        constexpr bool IS_HIDDEN = N_HIDDEN > 0 && K == C::W && N == C::W;
        constexpr bool ALL_KEPT =
            (!IS_FIRST || KEEP_FIRST) && (!IS_LAST || KEEP_LAST) && (!IS_HIDDEN || KEPT_HIDDEN == N_HIDDEN);
        if constexpr (IS_FIRST && KEEP_FIRST) {
            if (l == 0) return kept<First, S>(first, d, x);
        }
        if constexpr (IS_LAST && KEEP_LAST) {
            if (l == C::NL - 1) return kept<Last, S>(last, d, x);
        }
        if constexpr (IS_HIDDEN && KEPT_HIDDEN > 0) {
            if (l >= 1 && l <= KEPT_HIDDEN) return kept_hidden<S, 0>(l, d, x);
        }
        if constexpr (!ALL_KEPT) rest.template layer<K, N, S>(l, offset, d, x);
    }

    // The kept layers' sums added to dL/dparams, each task's once (every warp of the block
    // calls it after its last round).
    GJ_INLINE void flush() const {
        if (!dparams) return;
        if constexpr (KEEP_FIRST) add<First, C::IN_P>(first, 0);
        if constexpr (KEEP_LAST) add<Last, C::W>(last, L::template offset<0>(C::NL - 1));
#pragma unroll
        for (int h = 0; h < KEPT_HIDDEN; ++h) add<Hidden, C::W>(hidden[h], L::template offset<0>(h + 1));
    }

  private:
    template <class T> static GJ_INLINE void zero(float (&c)[T::PER_WARP][T::NB][2][4]) {
#pragma unroll
        for (int k = 0; k < T::PER_WARP; ++k)
#pragma unroll
            for (int j = 0; j < T::NB; ++j) gj_nn_zero(c[k][j]);
    }
    // The round's tiles of the warp's tasks me, me + WARPS, ... into their accumulators (between
    // the barriers of the block sink's).
    template <class T, int S>
    GJ_INLINE void kept(float (&c)[T::PER_WARP][T::NB][2][4], const gj_u16* d, const gj_u16* x) const {
        const int me = threadIdx.x / 32;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < T::PER_WARP; ++k) {
            const int task = me + k * C::WARPS;
            if (task < T::TASKS)
                gj_nn_wgrad_task<C::SCRATCH_HALVES, T::NB, S>(c[k], task / T::GROUPS, (task % T::GROUPS) * T::NB, d,
                                                              x, me, rest.warps);
        }
        __syncthreads();
    }
    // Hidden layer l's accumulators chosen by a chain of comparisons (registers take no
    // run-time index).
    template <int S, int H> GJ_INLINE void kept_hidden(int l, const gj_u16* d, const gj_u16* x) const {
        if constexpr (H < KEPT_HIDDEN) {
            if (l == H + 1) kept<Hidden, S>(hidden[H], d, x);
            else kept_hidden<S, H + 1>(l, d, x);
        }
    }
    template <class T, int K> GJ_INLINE void add(const float (&c)[T::PER_WARP][T::NB][2][4], gj_u64 offset) const {
        const int me = threadIdx.x / 32;
        const bool vec = ((unsigned long long)(dparams + offset) & 15u) == 0;
#pragma unroll
        for (int k = 0; k < T::PER_WARP; ++k) {
            const int task = me + k * C::WARPS;
            if (task < T::TASKS) gj_nn_wgrad_add<T::NB, K>(dparams, offset, task / T::GROUPS, (task % T::GROUPS) * T::NB, c[k], vec);
        }
    }
};

// Where value e of the fragment-order sums of a layer (K columns, weights at `offset`) goes
// in tiny-cuda-nn's row-major layout: block b = e / 256, lane l, fragment h (left or right 8
// columns), register r (the accumulator order of gj_nn_mma: (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1)).
GJ_INLINE gj_u64 gj_nn_sums_to_layout(gj_u64 offset, int K, gj_u64 e) {
    const gj_u64 local = e - offset, b = local / 256;
    const int within = (int)(local % 256), l = within / 8, h = (within / 4) & 1, r = within & 3;
    const gj_u64 row = 16 * (b / (gj_u64)(K / 16)) + (l >> 2) + 8 * (r >> 1);
    const gj_u64 col = 16 * (b % (gj_u64)(K / 16)) + 8 * h + 2 * (l & 3) + (r & 1);
    return offset + row * (gj_u64)K + col;
}

// dL/dy as the backward kernels take it: floats, or fp16 values where half (the outputs' own
// precision, as tiny-cuda-nn's networks and PyTorch hand it back: no conversion pass, half the
// bytes read). A pointer of either kind converts to it; row(at) is the same array from value at.
struct gj_nn_dy {
    const void* p;
    bool half;
    GJ_INLINE gj_nn_dy(const void* values, bool fp16) : p(values), half(fp16) {}
    GJ_INLINE gj_nn_dy(const float* values) : p(values), half(false) {}
    GJ_INLINE gj_nn_dy row(gj_u64 at) const {
        return gj_nn_dy(half ? (const void*)((const gj_u16*)p + at) : (const void*)((const float*)p + at), half);
    }
};
template <class T> GJ_INLINE bool gj_nn_dy_given(const T* dy) { return dy != nullptr; }
GJ_INLINE bool gj_nn_dy_given(const gj_nn_dy& dy) { return dy.p != nullptr; }
template <class T> GJ_INLINE float gj_nn_dy_value(const T* dy, int c) { return gj_to_float(dy[c]); }
GJ_INLINE float gj_nn_dy_value(const gj_nn_dy& dy, int c) {
    return dy.half ? gj_half_to_float(((const gj_u16*)dy.p)[c]) : ((const float*)dy.p)[c];
}

// The warp's tile backwards. dL_dy: lane p's C::OUT values of dL/dy (a pointer to floats or
// halves, or a gj_nn_dy; the padding outputs get none), null when its point is inactive;
// dy_scale multiplies them as they are read (in fp32, before the fp16 rounding: a loss scale). x, d: the warp's two scratch
// buffers (C::SCRATCH_HALVES from x). ctx: the forward context (read only for active points,
// and for the activation derivatives of every row, which inactive rows then mask: it must
// point at some tile's context). wg: where dL/dW goes (above). WITH_DX: also dL/dx, left as
// fp16 in row p of the returned buffer (columns < C::IN). Returns the buffer holding dL/dx
// (or null).
template <class C, int PAD, bool WITH_DX, bool RECOMPUTE = false, class DY, class WG>
GJ_INLINE const gj_u16* gj_nn_backward_warp(DY dL_dy, float dy_scale, const gj_u16* w, gj_u16* x,
                                            const gj_u16* ctx, const WG& wg) {
    typedef gj_nn<C> L;
    constexpr int S = C::S;
    const int p = gj_nn_lane();
    const bool active = gj_nn_dy_given(dL_dy);
    const gj_u32 mask = __ballot_sync(0xFFFFFFFFu, active);
    gj_u16* d = x + 32 * S;
    __syncwarp();
    // delta of the output layer: dL/dy (lane p its point's row), times the output activation's
    // derivative at the context's fragment positions where it reads the kept value.
    {
        gj_u16* row = d + p * S;
#pragma unroll 4
        for (int c = 0; c < C::OUT_P; c += 2) {
            float v[2] = {0.0f, 0.0f};
            if (active) {
                if (c < C::OUT) v[0] = dy_scale * gj_nn_dy_value(dL_dy, c);
                if (c + 1 < C::OUT) v[1] = dy_scale * gj_nn_dy_value(dL_dy, c + 1);
            }
            *(gj_u32*)(row + c) = gj_pack_half2(v[0], v[1]);
        }
        if constexpr (gj_nn_derivative_reads_kept<C::OUT_ACT>()) {
            const gj_u16* kept = ctx + L::ctx_offset(C::NL);
            __syncwarp();
            gj_nn_each_ctx_word<C::OUT_P>(mask, [&](int mb, int j, int h, bool on, int row, int col) {
                if (!on) return;
                const gj_u32 k = gj_nn_ctx_load<C::OUT_P>(kept, mb, j, h);
                gj_u32* q = (gj_u32*)(d + row * S + col);
                *q = gj_pack_half2(gj_nn_lo(*q) * gj_nn_grad_from_kept<C::OUT_ACT>(gj_nn_lo(k)),
                                   gj_nn_hi(*q) * gj_nn_grad_from_kept<C::OUT_ACT>(gj_nn_hi(k)));
            });
        }
    }
    // Layers NL-1 .. 1 (all with a hidden layer below), then layer 0.
#pragma unroll 1
    for (int l = C::NL - 1; l >= 0; --l) {
        const gj_u16* wl = w + L::template offset<PAD>(l);
        __syncwarp();
        if (l == 0) {
            if (wg.on()) {
                gj_nn_rows_from_ctx<C::IN_P, S>(x, ctx, mask);
                __syncwarp();
                if constexpr (C::NL == 1) wg.template layer<C::IN_P, C::OUT_P, S>(0, 0, d, x);
                else wg.template layer<C::IN_P, C::W, S>(0, 0, d, x);
                __syncwarp();
            }
            if constexpr (WITH_DX) {
                constexpr int NCOLS = (C::IN + 15) / 16 * 16;
                if constexpr (C::NL == 1) gj_nn_backprop<C::IN_P, C::OUT_P, NCOLS, S, PAD, GJ_NN_NONE>(x, d, wl, nullptr, mask);
                else gj_nn_backprop<C::IN_P, C::W, NCOLS, S, PAD, GJ_NN_NONE>(x, d, wl, nullptr, mask);
                __syncwarp();
                return x;
            }
            return nullptr;
        }
        // The kept value of layer l - 1 (layer l's input): its context region, or recomputed
        // into the rows of X, where the backprop then reads it (and overwrites it).
        const gj_u16* kept = RECOMPUTE ? x : ctx + L::ctx_offset(l);
        if constexpr (RECOMPUTE) gj_nn_recompute_rows<C, PAD>(x, ctx, w, l - 1, mask);
        if (wg.on()) {
            if constexpr (!RECOMPUTE) gj_nn_kept_to_rows<C::W, S, C::ACT>(x, kept, mask);
            __syncwarp();
            if (l == C::NL - 1) wg.template layer<C::W, C::OUT_P, S>(l, L::template offset<0>(l), d, x);
            else wg.template layer<C::W, C::W, S>(l, L::template offset<0>(l), d, x);
            __syncwarp();
        }
        if (l == C::NL - 1) gj_nn_backprop<C::W, C::OUT_P, C::W, S, PAD, C::ACT, RECOMPUTE>(x, d, wl, kept, mask);
        else gj_nn_backprop<C::W, C::W, C::W, S, PAD, C::ACT, RECOMPUTE>(x, d, wl, kept, mask);
        gj_u16* tmp = x; // the new delta is in x: swap the buffers
        x = d;
        d = tmp;
    }
    return nullptr;
}

// ---- per-point entry points (what the generated NAME, NAME_fwd, NAME_bwd call) -----------------
// Every lane of the warp calls them together; x, dL_dy: the lane's point (null or
// active = false: no point); scratch: the warp's C::SCRATCH_HALVES halves of shared memory;
// ctx: the warp's C::CTX_HALVES halves of forward context (null: inference).
template <class C, class T>
GJ_INLINE gj_vec<float, C::OUT> gj_nn_eval(const T* x, bool active, const gj_half* params, gj_u16* scratch,
                                          gj_u16* ctx) {
    gj_nn_put_input<C>(scratch, x, active);
    gj_nn_forward_warp<C, 0>((const gj_u16*)params, scratch, ctx);
    gj_vec<float, C::OUT> y;
    const gj_u16* row = scratch + gj_nn_lane() * C::S;
#pragma unroll
    for (int c = 0; c < C::OUT; ++c) y.v[c] = gj_half_to_float(row[c]);
    __syncwarp(); // before the scratch is used again
    return y;
}

template <class C, class T>
GJ_INLINE void gj_nn_eval_bwd(const T* dL_dy, const gj_half* params, gj_u16* scratch, const gj_u16* ctx,
                              float* dL_dparams, float* dL_dx) {
    const gj_u16* w = (const gj_u16*)params;
    if (__any_sync(0xFFFFFFFFu, dL_dx != nullptr)) {
        const gj_u16* g = gj_nn_backward_warp<C, 0, true>(dL_dy, 1.0f, w, scratch, ctx, gj_nn_wgrad_warp{dL_dparams});
        if (dL_dx) {
            const gj_u16* row = g + gj_nn_lane() * C::S;
#pragma unroll 4
            for (int c = 0; c < C::IN; ++c) dL_dx[c] = gj_half_to_float(row[c]);
        }
    } else {
        gj_nn_backward_warp<C, 0, false>(dL_dy, 1.0f, w, scratch, ctx, gj_nn_wgrad_warp{dL_dparams});
    }
    __syncwarp();
}

#endif // GJ_NETWORK_CUH
