// fused_training.cu: training a hash-grid encoding and an MLP with fused kernels.
// Compiled at run time by NVRTC through gridjit, the encoding offered as "grid.cuh".
//
// Two fused training steps, each its own program (kernel list) so that neither pays for
// the other's compile:
//
// train<FUSED> (the default pipeline) does the encoding's forward (the device function
// grid), the MLP forward, the L2 loss and the MLP backward (deltas and weight gradients,
// mma) in one kernel, and writes dL/d(features) feature-major (SoA, [k * n + i], fp16).
// gridjit's own backward kernel (gj_backward, level-major) then turns those into the
// encoding's parameter gradients, and adam<0> updates both parameter sets. The features
// of the forward never leave the block; only their gradients go to global memory.
//
// train<FULLY_FUSED> does the same and then the encoding's backward too, through the
// device function grid_bwd, whose parameter gradients go to global memory by atomics
// (fp16 pairs: grid_config::grad_t). Only a program compiled with -DEX_FULLY_FUSED=1 (and
// a header with the backward pass) has it: the default program's header holds the
// forward device function alone, so grid_bwd costs it no compile time.
//
// In both, the block works in rounds of one 32-point tile per warp; the MLP's weight
// gradients of a round are mma products over all the block's points, accumulated in
// registers (each warp owns some tiles of them) and added to global memory once per block
// at the end.
//
// The other modes of the same kernel serve the unfused pipeline (gridjit's own forward
// and backward kernels around them) and rendering:
//   MLP_FWD: features (gj_forward's output) -> outputs
//   MLP_BWD: features, outputs, targets -> loss, weight gradients, dL/dfeatures (for gj_backward)
//   RENDER:  points -> outputs (the fused forward alone)
#include "grid.cuh"
#include "mlp.cuh"

#ifndef EX_WARPS
#define EX_WARPS 8 // warps per block: 4 or 8 (8 measured faster on an H200)
#endif
#ifndef EX_MIN_BLOCKS
#define EX_MIN_BLOCKS (8 / EX_WARPS) // the whole register file for 8 warps per multiprocessor
#endif
#ifndef EX_FULLY_FUSED
#define EX_FULLY_FUSED 0 // 1: train<FULLY_FUSED> calls grid_bwd (the header must have the backward pass)
#endif

static_assert(grid_config::N_OUT_PADDED == mlp::IN, "the MLP takes the 32 features of the encoding");
typedef grid_config::param_t param_t;
typedef grid_config::grad_t grad_t;
constexpr int D = grid_config::D;
constexpr int N_CHANNELS = 3; // the loss covers outputs 0..2 (RGB); the others get no gradient

enum { FUSED = 0, MLP_BWD = 1, RENDER = 2, MLP_FWD = 3, FULLY_FUSED = 4 };

struct TrainArgs {
    const float* x;           // n x D points (FUSED, FULLY_FUSED, RENDER)
    const param_t* params;    // the encoding's parameters (FUSED, FULLY_FUSED, RENDER)
    grad_t* grid_grad;        // FULLY_FUSED: dL/dparams, added to
    const gj_u16* features;   // MLP_*: n x 32 fp16
    gj_u16* dL_dfeatures;     // FUSED (always feature-major), MLP_BWD: n x 32 fp16, written
    const gj_u16* weights;    // the MLP's 7168 fp16 weights
    float* weight_grad;       // FUSED, FULLY_FUSED, MLP_BWD: 7168 fp32, added to
    const float* targets;     // FUSED, FULLY_FUSED, MLP_BWD: n x 3
    gj_u16* y;                // RENDER, MLP_FWD: n x 16 fp16 written; MLP_BWD: read
    float* loss_sum;          // FUSED, FULLY_FUSED, MLP_BWD: sum of squared errors, added to
    float grad_scale;         // dL/d(output) = grad_scale * (output - target)
    gj_u64 n;
    int features_soa;         // MLP_*: features and dL/dfeatures feature-major ([k * n + i]), else point-major
};

// The modes that encode their points themselves (the device function grid), and those
// that run the backward pass.
template <int MODE> constexpr bool encodes() { return MODE == FUSED || MODE == FULLY_FUSED || MODE == RENDER; }
template <int MODE> constexpr bool backward_mode() { return MODE == FUSED || MODE == FULLY_FUSED || MODE == MLP_BWD; }

// ---- shared memory ------------------------------------------------------------------
// The weights, then per warp the rows of its 32 points: the features X (32 x 40), and for
// the backward modes the hidden activations H1, H2 (32 x 72), the output deltas DO
// (32 x 24) and the hidden deltas D2, D1 (32 x 72).
constexpr int X_BYTES = mlp::TILE * mlp::S_IN * 2, H_BYTES = mlp::TILE * mlp::S_HID * 2,
              DO_BYTES = mlp::TILE * mlp::S_OUT * 2;
template <int MODE> constexpr int warp_bytes() { return backward_mode<MODE>() ? X_BYTES + 4 * H_BYTES + DO_BYTES : X_BYTES; }
template <int MODE> constexpr int shared_bytes() { return (int)sizeof(mlp::Weights) + EX_WARPS * warp_bytes<MODE>(); }

struct WarpRows {
    gj_u16 *X, *H1, *H2, *DO, *D2, *D1;
    GJ_INLINE WarpRows(unsigned char* smem, int warp, int bytes) {
        unsigned char* p = smem + sizeof(mlp::Weights) + warp * bytes;
        X = (gj_u16*)p;
        H1 = (gj_u16*)(p + X_BYTES);
        H2 = (gj_u16*)(p + X_BYTES + H_BYTES);
        D2 = (gj_u16*)(p + X_BYTES + 2 * H_BYTES);
        D1 = (gj_u16*)(p + X_BYTES + 3 * H_BYTES);
        DO = (gj_u16*)(p + X_BYTES + 4 * H_BYTES);
    }
};

// ---- weight gradients -----------------------------------------------------------------
// dW = sum over points of delta^T . activation, with the points along K of the mma. Each
// block-round (EX_WARPS x 32 points) every warp adds the block's points into the tiles it
// owns, in registers: warp w takes row block rb = w % 4 of dW1 (64 x 64) and dW0 (64 x 32)
// and columns 16 rb.. of dW2 (16 x 64); with 8 warps, two warps split each of those by
// columns. At the end of the kernel each weight gets one atomic per block.
constexpr int SPLIT = EX_WARPS / 4;
static_assert(EX_WARPS == 4 || EX_WARPS == 8, "the training kernels take 4 or 8 warps per block");
constexpr int NT1 = 8 / SPLIT, NT0 = 4 / SPLIT, NT2 = 2 / SPLIT; // 8-column tiles per warp

struct WeightGrad {
    float g1[NT1][4], g0[NT0][4], g2[NT2][4];

    GJ_INLINE WeightGrad() {
        mlp::zero(g1);
        mlp::zero(g0);
        mlp::zero(g2);
    }

    // Adds 16 points: rows k0..k0+15 of one warp's buffers.
    GJ_INLINE void add(const WarpRows& r, int k0, int rb, int cp) {
        gj_u32 a[4], b[4];
        mlp::frag_a_t<mlp::S_HID>(a, r.D2, 16 * rb, k0); // dW1 rows 16 rb.. = delta2 columns
#pragma unroll
        for (int jj = 0; jj < NT1 / 2; ++jj) {
            mlp::frag_b_t<mlp::S_HID>(b, r.H1, k0, 8 * NT1 * cp + 16 * jj);
            mlp::mma(g1[2 * jj], a, b[0], b[1]);
            mlp::mma(g1[2 * jj + 1], a, b[2], b[3]);
        }
        mlp::frag_a_t<mlp::S_HID>(a, r.D1, 16 * rb, k0); // dW0 rows 16 rb.. = delta1 columns
#pragma unroll
        for (int jj = 0; jj < NT0 / 2; ++jj) {
            mlp::frag_b_t<mlp::S_IN>(b, r.X, k0, 8 * NT0 * cp + 16 * jj);
            mlp::mma(g0[2 * jj], a, b[0], b[1]);
            mlp::mma(g0[2 * jj + 1], a, b[2], b[3]);
        }
        mlp::frag_a_t<mlp::S_OUT>(a, r.DO, 0, k0); // dW2: all 16 rows, columns 16 rb..
        mlp::frag_b_t<mlp::S_HID>(b, r.H2, k0, 16 * rb);
        if constexpr (NT2 == 2) {
            mlp::mma(g2[0], a, b[0], b[1]);
            mlp::mma(g2[1], a, b[2], b[3]);
        } else {
            mlp::mma(g2[0], a, cp ? b[2] : b[0], cp ? b[3] : b[1]);
        }
    }

    // grad (out x in, row-major, the layout of the weights) += the tiles, one atomic each.
    GJ_INLINE void flush(float* __restrict__ grad, int rb, int cp) const {
        const int l = mlp::lane_id(), g = l >> 2, t = l & 3;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int row = g + 8 * (e >> 1), col = 2 * t + (e & 1);
#pragma unroll
            for (int j = 0; j < NT1; ++j)
                atomicAdd(grad + mlp::W1_OFF + (16 * rb + row) * mlp::HID + 8 * (NT1 * cp + j) + col, g1[j][e]);
#pragma unroll
            for (int j = 0; j < NT0; ++j)
                atomicAdd(grad + mlp::W0_OFF + (16 * rb + row) * mlp::IN + 8 * (NT0 * cp + j) + col, g0[j][e]);
#pragma unroll
            for (int j = 0; j < NT2; ++j)
                atomicAdd(grad + mlp::W2_OFF + row * mlp::HID + 8 * (2 * rb + NT2 * cp + j) + col, g2[j][e]);
        }
    }
};

// Delta of a ReLU layer: acc (16 x 64, C tiles) where the activation A (rows r0.., stride
// S_HID) is positive, else 0; written as fp16 to the same place of D.
GJ_INLINE void relu_backward(const gj_u16* A, gj_u16* D, int r0, const float (&acc)[8][4]) {
    const int l = mlp::lane_id(), offset = (r0 + (l >> 2)) * mlp::S_HID + 2 * (l & 3);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int o = offset + 8 * h * mlp::S_HID + 8 * j;
            const gj_u32 act = *(const gj_u32*)(A + o);
            const float d0 = (short)(act & 0xffffu) > 0 ? acc[j][2 * h] : 0.0f;
            const float d1 = (short)(act >> 16) > 0 ? acc[j][2 * h + 1] : 0.0f;
            *(gj_u32*)(D + o) = mlp::pack(d0, d1);
        }
    }
}

GJ_INLINE void load_features(const TrainArgs& A, gj_u16* X, int lane, gj_u64 i) {
    if (A.features_soa) mlp::copy_row_soa(X, lane, A.features, A.n, i, i < A.n);
    else mlp::copy_row(X, lane, A.features + i * mlp::IN, i < A.n);
}

// Row `lane` of X: the features of point i through the encoding's device function, or
// zeros when !valid. ctx (or null) receives the forward context that grid_bwd reads.
GJ_INLINE void encode_row(const TrainArgs& A, gj_u16* X, int lane, gj_u64 i, bool valid, gj_u8* ctx) {
    grid_out_t f;
    if (valid) {
        grid_in_t p;
#pragma unroll
        for (int d = 0; d < D; ++d) p.v[d] = A.x[i * D + d];
        f = grid(p, A.params, ctx);
    } else {
#pragma unroll
        for (int k = 0; k < mlp::IN; ++k) f.v[k].bits = 0;
    }
    mlp::store_row(X, lane, f);
}

// Row `lane` of X (32 fp16 gradients of point i) to dst, feature-major ([k * n + i], what
// gj_backward reads as GJ_LAYOUT_SOA) or point-major. The row is read as four 16-byte
// words: with its 80-byte stride, the eight lanes of each phase hit distinct banks (one
// half at a time would be a 4-way conflict). Feature-major, the warp's stores of feature
// k cover 64 contiguous bytes.
GJ_INLINE void store_gradient_row(gj_u16* __restrict__ dst, const gj_u16* X, int lane, gj_u64 n, gj_u64 i, bool soa) {
    const gj_u32x4* src = (const gj_u32x4*)(X + lane * mlp::S_IN);
    if (!soa) {
        gj_u32x4* out = (gj_u32x4*)(dst + i * mlp::IN);
#pragma unroll
        for (int k = 0; k < mlp::IN / 8; ++k) out[k] = src[k];
        return;
    }
#pragma unroll
    for (int k = 0; k < mlp::IN / 8; ++k) {
        const gj_u32x4 q = src[k];
        const gj_u32 w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const gj_u64 c = 8 * k + 2 * j;
            dst[c * n + i] = (gj_u16)(w[j] & 0xffffu);
            dst[(c + 1) * n + i] = (gj_u16)(w[j] >> 16);
        }
    }
}

// The forward modes: each warp on its own, tile after tile.
template <int MODE>
GJ_INLINE void forward_body(const TrainArgs& A, mlp::Weights* W, gj_u16* X) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const gj_u64 n = A.n, tiles = (n + mlp::TILE - 1) / mlp::TILE;
    for (gj_u64 tile = (gj_u64)blockIdx.x * EX_WARPS + warp; tile < tiles; tile += (gj_u64)gridDim.x * EX_WARPS) {
        const gj_u64 first = tile * mlp::TILE, i = first + lane;
        if constexpr (encodes<MODE>()) encode_row(A, X, lane, i, i < n, nullptr);
        else load_features(A, X, lane, i);
        __syncwarp();
        const int valid = (int)(n - first < (gj_u64)mlp::TILE ? n - first : (gj_u64)mlp::TILE);
#pragma unroll 1
        for (int m = 0; m < 2; ++m) {
            float out[2][4];
            mlp::forward16(W, X, 16 * m, nullptr, nullptr, out);
            mlp::store_outputs(A.y, first, 16 * m, valid, out);
        }
        __syncwarp();
    }
}

// FULLY_FUSED: the encoding's backward for the point of this lane (row `lane` of X holds
// its dL/dfeatures), parameter gradients added by atomics. Only a program compiled with
// -DEX_FULLY_FUSED=1 refers to grid_bwd: the default program's header has no backward.
template <int MODE>
GJ_INLINE void encoding_backward(const TrainArgs& A, const gj_u16* X, int lane, const float (&ctx)[D]) {
    static_assert(MODE != FULLY_FUSED || EX_FULLY_FUSED, "train<FULLY_FUSED> needs -DEX_FULLY_FUSED=1");
#if EX_FULLY_FUSED
    const gj_u16* row = X + lane * mlp::S_IN;
    grid_out_t dy;
#pragma unroll
    for (int k = 0; k < mlp::IN; ++k) dy.v[k].bits = row[k];
    grid_bwd(dy, A.params, (const gj_u8*)ctx, A.grid_grad, nullptr);
#else
    (void)A, (void)X, (void)lane, (void)ctx;
#endif
}

// The backward modes: the block works in rounds of EX_WARPS tiles (one per warp), with
// two barriers per round around the weight-gradient products, which read every warp's rows.
template <int MODE>
GJ_INLINE void backward_body(const TrainArgs& A, unsigned char* smem, mlp::Weights* W) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int rb = warp & 3, cp = warp >> 2; // the weight-gradient tiles this warp owns
    const WarpRows r(smem, warp, warp_bytes<MODE>());
    WeightGrad dW;
    float loss = 0.0f;
    const gj_u64 n = A.n, tiles = (n + mlp::TILE - 1) / mlp::TILE;
    for (gj_u64 round = blockIdx.x; round * EX_WARPS < tiles; round += gridDim.x) {
        const gj_u64 tile = round * EX_WARPS + warp, first = tile * mlp::TILE, i = first + lane;
        const int valid = tile >= tiles ? 0 : (int)(n - first < (gj_u64)mlp::TILE ? n - first : (gj_u64)mlp::TILE);
        const bool mine = lane < valid;
        float ctx[D]; // FULLY_FUSED: the encoding's forward context, the point itself (D floats)

        // ---- features of the warp's 32 points -> X
        if constexpr (encodes<MODE>()) encode_row(A, r.X, lane, i, mine, MODE == FULLY_FUSED ? (gj_u8*)ctx : nullptr);
        else load_features(A, r.X, lane, mine ? i : n);
        __syncwarp();

        // ---- forward (keeping h1, h2), loss, output deltas -> DO
#pragma unroll 1
        for (int m = 0; m < 2; ++m) {
            float out[2][4];
            mlp::forward16(W, r.X, 16 * m, r.H1, r.H2, out);
            if constexpr (MODE == MLP_BWD) {
                // The unfused backward takes the outputs its forward kernel wrote (it
                // recomputes the hidden layers: cheaper than storing them).
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int row = 16 * m + g + 8 * h;
                    gj_u32 v = 0;
                    if (row < valid && t < 2) v = *(const gj_u32*)(A.y + (first + row) * mlp::OUT + 2 * t);
                    out[0][2 * h] = gj_half_to_float((gj_u16)v);
                    out[0][2 * h + 1] = gj_half_to_float((gj_u16)(v >> 16));
                }
            }
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = 16 * m + g + 8 * h;
                float delta[2] = {0.0f, 0.0f};
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int c = 2 * t + e;
                    if (c < N_CHANNELS && row < valid) {
                        const float diff = out[0][2 * h + e] - A.targets[(first + row) * N_CHANNELS + c];
                        loss = fmaf(diff, diff, loss);
                        delta[e] = A.grad_scale * diff;
                    }
                }
                gj_u16* p = r.DO + row * mlp::S_OUT;
                *(gj_u32*)(p + 2 * t) = mlp::pack(delta[0], delta[1]);
                *(gj_u32*)(p + 8 + 2 * t) = 0u;
            }
        }
        __syncwarp();

        // ---- delta2 = (DO . W2) * relu'(h2) -> D2
#pragma unroll 1
        for (int m = 0; m < 2; ++m) {
            gj_u32 a[1][4];
            mlp::frag_a<mlp::S_OUT>(a[0], r.DO, 16 * m, 0);
            float d[8][4];
            mlp::layer_t<mlp::OUT, mlp::HID, mlp::S_HID>(d, a, W->w2);
            relu_backward(r.H2, r.D2, 16 * m, d);
        }
        __syncwarp();

        // ---- delta1 = (delta2 . W1) * relu'(h1) -> D1
#pragma unroll 1
        for (int m = 0; m < 2; ++m) {
            gj_u32 a[4][4];
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) mlp::frag_a<mlp::S_HID>(a[kk], r.D2, 16 * m, 16 * kk);
            float d[8][4];
            mlp::layer_t<mlp::HID, mlp::HID, mlp::S_HID>(d, a, W->w1);
            relu_backward(r.H1, r.D1, 16 * m, d);
        }

        // ---- weight gradients over the block's points
        __syncthreads();
#pragma unroll 1
        for (int w = 0; w < EX_WARPS; ++w) {
            const WarpRows other(smem, w, warp_bytes<MODE>());
            dW.add(other, 0, rb, cp);
            dW.add(other, 16, rb, cp);
        }
        __syncthreads(); // X is overwritten next

        // ---- dL/dfeatures = delta1 . W0 -> X
#pragma unroll 1
        for (int m = 0; m < 2; ++m) {
            gj_u32 a[4][4];
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) mlp::frag_a<mlp::S_HID>(a[kk], r.D1, 16 * m, 16 * kk);
            float d[4][4];
            mlp::layer_t<mlp::HID, mlp::IN, mlp::S_IN>(d, a, W->w0);
            gj_u32 packed[2][4];
            mlp::to_a<mlp::IN, false>(packed, d);
            mlp::store_a<mlp::IN, mlp::S_IN>(r.X, 16 * m, packed);
        }
        __syncwarp();

        // ---- the encoding's backward, one point per lane (FULLY_FUSED), or dL/dfeatures
        //      to memory for gridjit's backward kernel (FUSED: always feature-major)
        if (mine) {
            if constexpr (MODE == FULLY_FUSED) encoding_backward<MODE>(A, r.X, lane, ctx);
            else store_gradient_row(A.dL_dfeatures, r.X, lane, n, i, MODE == FUSED || A.features_soa);
        }
        __syncwarp();
    }

    if ((gj_u64)blockIdx.x * EX_WARPS >= tiles) return; // no round: nothing to add
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) loss += __shfl_xor_sync(0xffffffffu, loss, o);
    if (lane == 0 && loss != 0.0f) atomicAdd(A.loss_sum, loss);
    dW.flush(A.weight_grad, rb, cp);
}

template <int MODE>
GJ_INLINE void train_body(const TrainArgs& A) {
    extern __shared__ __align__(16) unsigned char smem[];
    {
        gj_u32 bytes;
        asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
        if (bytes < (gj_u32)shared_bytes<MODE>()) __trap();
    }
    mlp::Weights* W = (mlp::Weights*)smem;
    mlp::stage_weights(W, A.weights);
    __syncthreads();
    if constexpr (backward_mode<MODE>()) {
        backward_body<MODE>(A, smem, W);
    } else {
        forward_body<MODE>(A, W, (gj_u16*)(smem + sizeof(mlp::Weights) + (threadIdx.x >> 5) * warp_bytes<MODE>()));
    }
}

template <int MODE>
__global__ void __launch_bounds__(EX_WARPS * 32, EX_MIN_BLOCKS) train(TrainArgs args) {
    train_body<MODE>(args);
}

// ---- Adam ---------------------------------------------------------------------------
// One parameter set: fp16 parameters with an fp32 master copy; gradients in fp16 (the
// encoding's) or fp32 (the MLP's), read, unscaled and, where the next step adds to them
// (atomics, gj_backward accumulating), zeroed. Four consecutive parameters per thread,
// every load issued before any store (the kernel is bound by memory bandwidth: about 30
// bytes per parameter).
struct AdamArgs {
    gj_u16* params;
    float* master;
    float* m;
    float* v;
    void* grad;
    int grad_is_half;
    int zero_grad;                     // 0 where the next step overwrites the gradients (gj_backward)
    gj_u64 n;                          // a multiple of 4
    float lr, beta1, beta2, epsilon;
    float inv_grad_scale;              // gradients arrive multiplied by the loss scale
    float bias1, bias2;                // 1 / (1 - beta^step)
};

struct __align__(16) f4 { float v[4]; };
struct __align__(8) h4 { gj_u16 v[4]; };

template <int V>
__global__ void __launch_bounds__(256) adam(AdamArgs A) {
    const gj_u64 i = ((gj_u64)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i >= A.n) return;
    f4 g, m = *(const f4*)(A.m + i), v = *(const f4*)(A.v + i), w = *(const f4*)(A.master + i);
    if (A.grad_is_half) {
        h4* p = (h4*)((gj_u16*)A.grad + i);
        const h4 gh = *p;
        if (A.zero_grad) *p = h4{{0, 0, 0, 0}};
#pragma unroll
        for (int k = 0; k < 4; ++k) g.v[k] = gj_half_to_float(gh.v[k]);
    } else {
        f4* p = (f4*)((float*)A.grad + i);
        g = *p;
        if (A.zero_grad) *p = f4{{0.0f, 0.0f, 0.0f, 0.0f}};
    }
    h4 out;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const float gk = g.v[k] * A.inv_grad_scale;
        m.v[k] = fmaf(A.beta1, m.v[k] - gk, gk); // beta1 m + (1 - beta1) g
        v.v[k] = fmaf(A.beta2, v.v[k] - gk * gk, gk * gk);
        w.v[k] -= A.lr * (m.v[k] * A.bias1) / (sqrtf(v.v[k] * A.bias2) + A.epsilon);
        out.v[k] = gj_float_to_half_bits(w.v[k]);
    }
    *(f4*)(A.m + i) = m;
    *(f4*)(A.v + i) = v;
    *(f4*)(A.master + i) = w;
    *(h4*)(A.params + i) = out;
}

// ---- training data --------------------------------------------------------------------
GJ_INLINE gj_u32 hash32(gj_u32 x) { // "lowbias32"
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

GJ_INLINE float uniform(gj_u32 seed, gj_u64 index) {
    const gj_u32 h = hash32(hash32((gj_u32)index ^ hash32(seed)) + (gj_u32)(index >> 32) * 0x9e3779b9u);
    return (float)(h >> 8) * (1.0f / 16777216.0f);
}

// The picture to learn, at (u, v) in [0, 1)^2 (v downwards): shapes with sharp edges on
// a smooth background, and a checkerboard of fine cells.
GJ_INLINE void picture(float u, float v, float (&rgb)[3]) {
    rgb[0] = 0.15f + 0.7f * u;
    rgb[1] = 0.2f + 0.6f * v;
    rgb[2] = 0.55f;
    const float du = u - 0.32f, dv = v - 0.38f;
    if (du * du + dv * dv < 0.2f * 0.2f) { rgb[0] = 0.95f; rgb[1] = 0.55f; rgb[2] = 0.1f; }
    const float eu = u - 0.7f, ev = v - 0.72f, r2 = eu * eu + ev * ev;
    if (r2 > 0.16f * 0.16f && r2 < 0.2f * 0.2f) { rgb[0] = 0.1f; rgb[1] = 0.1f; rgb[2] = 0.15f; }
    if (fabsf(u - 0.72f) < 0.14f && fabsf(v - 0.26f) < 0.14f) {
        const int cell = (int)(u * 48.0f) + (int)(v * 48.0f);
        if (cell & 1) { rgb[0] = 0.95f; rgb[1] = 0.95f; rgb[2] = 0.95f; }
        else { rgb[0] = 0.2f; rgb[1] = 0.35f; rgb[2] = 0.85f; }
    }
    if (fabsf(u - v + 0.45f) < 0.025f) { rgb[0] = 0.9f; rgb[1] = 0.15f; rgb[2] = 0.6f; }
}

// n points and their targets: uniformly random (width 0), or the centres of a width x
// width image in row-major order. Dimensions beyond 2 get 0.5 in the image and a random
// coordinate otherwise; the picture does not depend on them.
template <int V>
__global__ void __launch_bounds__(256) sample(float* __restrict__ x, float* __restrict__ targets, gj_u64 n,
                                              gj_u32 seed, gj_u32 width) {
    const gj_u64 i = (gj_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float p[D];
#pragma unroll
    for (int d = 0; d < D; ++d) {
        if (width) p[d] = d == 0 ? ((float)(i % width) + 0.5f) / width : d == 1 ? ((float)(i / width) + 0.5f) / width : 0.5f;
        else p[d] = uniform(seed, i * D + d);
        x[i * D + d] = p[d];
    }
    float rgb[3];
    picture(p[0], D > 1 ? p[1] : 0.5f, rgb);
#pragma unroll
    for (int c = 0; c < 3; ++c) targets[i * 3 + c] = rgb[c];
}

// ---- a check of the fragment layouts ----------------------------------------------------
// out (16 x 16 fp32): A . B through every helper of mlp.cuh, with A (16 x 32) and B (32 x 16)
// from `in` (fp16 bit patterns, A row-major then B row-major): four ways of loading the
// operands, each into one block of out32 (4 x 256 floats), and the repacking of C into A.
template <int V>
__global__ void selftest(const gj_u16* __restrict__ in, float* __restrict__ out) {
    __shared__ __align__(16) gj_u16 a[32 * mlp::S_HID];  // A: 16 x 32 row-major (stride S_HID)
    __shared__ __align__(16) gj_u16 at[32 * mlp::S_HID]; // A^T: 32 x 16
    __shared__ __align__(16) gj_u16 b[32 * mlp::S_HID];  // B: 32 x 16 row-major
    __shared__ __align__(16) gj_u16 bt[32 * mlp::S_HID]; // B^T: 16 x 32 (the weight layout: n x k)
    const int l = threadIdx.x;
    for (int e = l; e < 512; e += 32) {
        const int r = e / 32, c = e % 32; // A[r][c], r < 16, c < 32
        a[r * mlp::S_HID + c] = in[e];
        at[c * mlp::S_HID + r] = in[e];
        const int k = e / 16, n = e % 16; // B[k][n], k < 32, n < 16
        b[k * mlp::S_HID + n] = in[512 + e];
        bt[n * mlp::S_HID + k] = in[512 + e];
    }
    __syncwarp();
    const int g = l >> 2, t = l & 3;
    for (int way = 0; way < 4; ++way) {
        float c[2][4];
        mlp::zero(c);
        for (int kk = 0; kk < 2; ++kk) {
            gj_u32 fa[4], fb[4];
            if (way & 1) mlp::frag_a_t<mlp::S_HID>(fa, at, 0, 16 * kk);
            else mlp::frag_a<mlp::S_HID>(fa, a, 0, 16 * kk);
            if (way & 2) mlp::frag_b_t<mlp::S_HID>(fb, b, 16 * kk, 0);
            else mlp::frag_b<mlp::S_HID>(fb, bt, 0, 16 * kk);
            mlp::mma(c[0], fa, fb[0], fb[1]);
            mlp::mma(c[1], fa, fb[2], fb[3]);
        }
        for (int j = 0; j < 2; ++j) {
            for (int h = 0; h < 2; ++h) {
                out[way * 256 + (g + 8 * h) * 16 + 8 * j + 2 * t] = c[j][2 * h];
                out[way * 256 + (g + 8 * h) * 16 + 8 * j + 2 * t + 1] = c[j][2 * h + 1];
            }
        }
        if (way == 0) {
            // C (16 x 16) -> fp16 A fragments -> shared (store_a) -> out block 4 as floats
            gj_u32 p[1][4];
            mlp::to_a<16, false>(p, c);
            __syncwarp();
            mlp::store_a<16, mlp::S_HID>(a, 0, p);
            __syncwarp();
            for (int e = l; e < 256; e += 32) out[4 * 256 + e] = gj_half_to_float(a[(e / 16) * mlp::S_HID + e % 16]);
            __syncwarp();
            for (int e = l; e < 512; e += 32) a[(e / 32) * mlp::S_HID + e % 32] = in[e];
            __syncwarp();
        }
    }
}
