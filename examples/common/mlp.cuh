// ---------------------------------------------------------------------------
// mlp.cuh: the multilayer perceptron of the fused examples, on tensor cores.
//
//   32 inputs (the encoding's features) -> 64 -> ReLU -> 64 -> ReLU -> 16 outputs
//
// No biases, no output activation (tiny-cuda-nn's FullyFusedMLP with 64 neurons and
// two hidden layers). Weights and activations are fp16, products accumulate in fp32.
// Weights live in global memory as one array of 7168 halves: W0 (64 x 32), W1 (64 x 64),
// W2 (16 x 64), each row-major (output x input).
//
// A warp works on a tile of 32 points (one per lane), as two 16-row m-tiles, with
// mma.sync.m16n8k16 (fp16 x fp16 -> fp32) and ldmatrix, through inline PTX: no toolkit
// header exists at run time. Activations are staged in shared memory, one row per point,
// with 16 bytes of padding per row so that the eight rows an ldmatrix phase reads fall
// into distinct banks.
//
// This file is not a header NVRTC can find: the example programs splice it into their
// kernel files where they say #include "mlp.cuh". It needs the device types of an encoding
// header (gj_u32, gj_half, ...) first. gridjit generates this network too (examples/README.md
// says why the examples keep this one).
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"), g = lane / 4, t = lane % 4:
//   A (16 x 16, row-major), 4 registers of 2 halves: (row g, cols 2t, 2t+1), (row g+8, same),
//     (row g, cols 2t+8, 2t+9), (row g+8, same).
//   B (16 x 8, "col"), 2 registers: (rows 2t, 2t+1, col g), (rows 2t+8, 2t+9, col g).
//   C (16 x 8, fp32), 4 registers: (row g, cols 2t, 2t+1), (row g+8, cols 2t, 2t+1).
// ldmatrix.x4: lane l gives the address of row l % 8 of 8x8 matrix l / 8; register q then
// holds, of matrix q, (row g, cols 2t, 2t+1), or with .trans (rows 2t, 2t+1, col g).
// ---------------------------------------------------------------------------
#ifndef EX_MLP_CUH
#define EX_MLP_CUH

namespace mlp {

constexpr int IN = 32, HID = 64, OUT = 16;
constexpr int W0_OFF = 0, W1_OFF = HID * IN, W2_OFF = HID * IN + HID * HID;
constexpr int N_WEIGHTS = HID * IN + HID * HID + OUT * HID; // 7168
constexpr int TILE = 32;                                     // points per warp tile
// Row strides in shared memory, in halves.
constexpr int S_IN = IN + 8, S_HID = HID + 8, S_OUT = OUT + 8;

// The weights in shared memory, padded rows. 16,640 bytes.
struct Weights {
    gj_u16 w0[HID * S_IN];
    gj_u16 w1[HID * S_HID];
    gj_u16 w2[OUT * S_HID];
};

// ---- PTX wrappers -------------------------------------------------------------
GJ_INLINE gj_u32 smem_addr(const void* p) {
    gj_u32 a;
    asm("{ .reg .u64 g; cvta.to.shared.u64 g, %1; cvt.u32.u64 %0, g; }" : "=r"(a) : "l"(p));
    return a;
}

GJ_INLINE void ldsm_x4(gj_u32 (&r)[4], gj_u32 addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

GJ_INLINE void ldsm_x4_t(gj_u32 (&r)[4], gj_u32 addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

// c += A . B for one 16 x 8 tile (K = 16).
GJ_INLINE void mma(float (&c)[4], const gj_u32 (&a)[4], gj_u32 b0, gj_u32 b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

GJ_INLINE int lane_id() { return threadIdx.x & 31; }

// ---- fragments from shared memory (row-major arrays of halves, row stride S) ----
// A = rows r0..r0+15, columns c0..c0+15 of M.
template <int S> GJ_INLINE void frag_a(gj_u32 (&a)[4], const gj_u16* m, int r0, int c0) {
    const int l = lane_id(), q = l >> 3;
    ldsm_x4(a, smem_addr(m + (r0 + 8 * (q & 1) + (l & 7)) * S + c0 + 8 * (q >> 1)));
}

// A = the transpose of a block of M: A[i][k] = M[k0 + k][i0 + i].
template <int S> GJ_INLINE void frag_a_t(gj_u32 (&a)[4], const gj_u16* m, int i0, int k0) {
    const int l = lane_id(), q = l >> 3;
    ldsm_x4_t(a, smem_addr(m + (k0 + 8 * (q >> 1) + (l & 7)) * S + i0 + 8 * (q & 1)));
}

// B for two 8-column tiles (n0 and n0 + 8), rows k0..k0+15, where B[k][n] = W[n][k] (W
// row-major, e.g. a weight matrix output x input: the forward product x . W^T).
// b[0], b[1]: tile n0; b[2], b[3]: tile n0 + 8.
template <int S> GJ_INLINE void frag_b(gj_u32 (&b)[4], const gj_u16* w, int n0, int k0) {
    const int l = lane_id(), q = l >> 3;
    ldsm_x4(b, smem_addr(w + (n0 + 8 * (q >> 1) + (l & 7)) * S + k0 + 8 * (q & 1)));
}

// The same where B[k][n] = M[k][n] is stored row-major (the backward product d . W, and
// the weight gradients' activations).
template <int S> GJ_INLINE void frag_b_t(gj_u32 (&b)[4], const gj_u16* m, int k0, int n0) {
    const int l = lane_id(), q = l >> 3;
    ldsm_x4_t(b, smem_addr(m + (k0 + 8 * (q & 1) + (l & 7)) * S + n0 + 8 * (q >> 1)));
}

// ---- layers ---------------------------------------------------------------------
template <int N> GJ_INLINE void zero(float (&c)[N][4]) {
#pragma unroll
    for (int j = 0; j < N; ++j) c[j][0] = c[j][1] = c[j][2] = c[j][3] = 0.0f;
}

// acc (16 x N) = A (16 x K) . W^T, W row-major N x K (stride S) in shared memory.
template <int K, int N, int S>
GJ_INLINE void layer(float (&acc)[N / 8][4], const gj_u32 (&a)[K / 16][4], const gj_u16* w) {
    zero(acc);
#pragma unroll
    for (int jj = 0; jj < N / 16; ++jj) {
#pragma unroll
        for (int kk = 0; kk < K / 16; ++kk) {
            gj_u32 b[4];
            frag_b<S>(b, w, 16 * jj, 16 * kk);
            mma(acc[2 * jj], a[kk], b[0], b[1]);
            mma(acc[2 * jj + 1], a[kk], b[2], b[3]);
        }
    }
}

// acc (16 x N) = A (16 x K) . M, M row-major K x N (stride S): backpropagation through a
// weight matrix W (N_in = N columns, K = N_out rows): dL/din = dL/dout . W.
template <int K, int N, int S>
GJ_INLINE void layer_t(float (&acc)[N / 8][4], const gj_u32 (&a)[K / 16][4], const gj_u16* m) {
    zero(acc);
#pragma unroll
    for (int jj = 0; jj < N / 16; ++jj) {
#pragma unroll
        for (int kk = 0; kk < K / 16; ++kk) {
            gj_u32 b[4];
            frag_b_t<S>(b, m, 16 * kk, 16 * jj);
            mma(acc[2 * jj], a[kk], b[0], b[1]);
            mma(acc[2 * jj + 1], a[kk], b[2], b[3]);
        }
    }
}

// Two floats as one register of two halves (first in the low half).
GJ_INLINE gj_u32 pack(float lo, float hi) {
    return gj_pack_half2(lo, hi);
}

// The accumulators of a 16 x N product as the A fragments of the next product (K = N):
// C tile 2kk gives the left 8 columns of A block kk, tile 2kk + 1 the right 8.
template <int N, bool RELU> GJ_INLINE void to_a(gj_u32 (&a)[N / 16][4], const float (&c)[N / 8][4]) {
#pragma unroll
    for (int kk = 0; kk < N / 16; ++kk) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float* v = c[2 * kk + (i >> 1)] + 2 * (i & 1); // i: (g, left), (g+8, left), (g, right), (g+8, right)
            a[kk][i] = RELU ? pack(fmaxf(v[0], 0.0f), fmaxf(v[1], 0.0f)) : pack(v[0], v[1]);
        }
    }
}

// Stores A fragments (16 x 16 blocks, columns 16 kk) as rows r0..r0+15 of M.
template <int N, int S> GJ_INLINE void store_a(gj_u16* m, int r0, const gj_u32 (&a)[N / 16][4]) {
    const int l = lane_id();
    gj_u16* p = m + (r0 + (l >> 2)) * S + 2 * (l & 3);
#pragma unroll
    for (int kk = 0; kk < N / 16; ++kk) {
        *(gj_u32*)(p + 16 * kk) = a[kk][0];
        *(gj_u32*)(p + 8 * S + 16 * kk) = a[kk][1];
        *(gj_u32*)(p + 16 * kk + 8) = a[kk][2];
        *(gj_u32*)(p + 8 * S + 16 * kk + 8) = a[kk][3];
    }
}

// ---- staging ----------------------------------------------------------------------
// Copies the weights into shared memory (every thread of the block takes part; the
// caller synchronises the block afterwards).
GJ_INLINE void stage_weights(Weights* s, const gj_u16* __restrict__ w) {
    for (int i = threadIdx.x; i < N_WEIGHTS / 2; i += blockDim.x) {
        const int e = 2 * i; // rows have even length, so a pair never straddles two rows
        gj_u16* dst;
        if (e < W1_OFF) dst = s->w0 + (e / IN) * S_IN + e % IN;
        else if (e < W2_OFF) dst = s->w1 + ((e - W1_OFF) / HID) * S_HID + (e - W1_OFF) % HID;
        else dst = s->w2 + ((e - W2_OFF) / HID) * S_HID + (e - W2_OFF) % HID;
        *(gj_u32*)dst = ((const gj_u32*)w)[i];
    }
}

// Row `row` of a 32-wide activation buffer from 32 halves (an encoding's output).
template <class V> GJ_INLINE void store_row(gj_u16* x, int row, const V& f) {
    static_assert(sizeof(f.v) == 2 * IN, "the MLP takes 32 fp16 features");
    gj_u32x4* p = (gj_u32x4*)(x + row * S_IN);
#pragma unroll
    for (int k = 0; k < IN / 8; ++k) {
        gj_u32x4 q;
        q.x = (gj_u32)f.v[8 * k + 0].bits | ((gj_u32)f.v[8 * k + 1].bits << 16);
        q.y = (gj_u32)f.v[8 * k + 2].bits | ((gj_u32)f.v[8 * k + 3].bits << 16);
        q.z = (gj_u32)f.v[8 * k + 4].bits | ((gj_u32)f.v[8 * k + 5].bits << 16);
        q.w = (gj_u32)f.v[8 * k + 6].bits | ((gj_u32)f.v[8 * k + 7].bits << 16);
        p[k] = q;
    }
}

// Row `row` from 32 halves in global memory (gridjit's AoS fp16 output), or zeros.
GJ_INLINE void copy_row(gj_u16* x, int row, const gj_u16* __restrict__ src, bool valid) {
    gj_u32x4* p = (gj_u32x4*)(x + row * S_IN);
#pragma unroll
    for (int k = 0; k < IN / 8; ++k) {
        gj_u32x4 q = {0u, 0u, 0u, 0u};
        if (valid) q = ((const gj_u32x4*)src)[k];
        p[k] = q;
    }
}

// Row `row` from the features of point i stored feature-major (feature k at [k * n + i]:
// gridjit's SoA output), or zeros.
GJ_INLINE void copy_row_soa(gj_u16* x, int row, const gj_u16* __restrict__ f, gj_u64 n, gj_u64 i, bool valid) {
    gj_u32x4* p = (gj_u32x4*)(x + row * S_IN);
#pragma unroll
    for (int k = 0; k < IN / 8; ++k) {
        gj_u32 w[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const gj_u64 c = 8 * k + 2 * j;
            w[j] = valid ? (gj_u32)f[c * n + i] | ((gj_u32)f[(c + 1) * n + i] << 16) : 0u;
        }
        p[k] = gj_u32x4{w[0], w[1], w[2], w[3]};
    }
}

// ---- the forward pass of one m-tile -------------------------------------------------
// Rows r0..r0+15 of the features X (stride S_IN) through the network. H1, H2 (stride
// S_HID, or null): where to keep the hidden activations (after ReLU). out: the 16 x 16
// outputs as two C tiles (columns 0-7, 8-15).
GJ_INLINE void forward16(const Weights* W, const gj_u16* X, int r0, gj_u16* H1, gj_u16* H2, float (&out)[2][4]) {
    gj_u32 a0[2][4];
    frag_a<S_IN>(a0[0], X, r0, 0);
    frag_a<S_IN>(a0[1], X, r0, 16);
    float acc[8][4];
    layer<IN, HID, S_IN>(acc, a0, W->w0);
    gj_u32 h[4][4];
    to_a<HID, true>(h, acc);
    if (H1) store_a<HID, S_HID>(H1, r0, h);
    layer<HID, HID, S_HID>(acc, h, W->w1);
    to_a<HID, true>(h, acc);
    if (H2) store_a<HID, S_HID>(H2, r0, h);
    layer<HID, OUT, S_HID>(out, h, W->w2);
}

// Writes the outputs of one m-tile (fp16, 16 per point, point-major) for its rows < valid.
GJ_INLINE void store_outputs(gj_u16* __restrict__ y, gj_u64 first_point, int r0, int valid, const float (&out)[2][4]) {
    const int l = lane_id(), g = l >> 2, t = l & 3;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int r = r0 + g + 8 * h;
        if (r < valid) {
            gj_u32* dst = (gj_u32*)(y + (first_point + r) * OUT);
            dst[t] = pack(out[0][2 * h], out[0][2 * h + 1]);     // columns 2t, 2t+1
            dst[4 + t] = pack(out[1][2 * h], out[1][2 * h + 1]); // columns 8+2t, 9+2t
        }
    }
}

} // namespace mlp

#endif // EX_MLP_CUH
