// fused_inference.cu: a hash-grid encoding and an MLP in one kernel (fused_infer), and
// the MLP alone (mlp_infer), which reads the features gridjit's own forward kernel wrote.
// Compiled at run time by NVRTC through gridjit (gj_user_module_create), with the
// encoding offered as the header "grid.cuh".
//
// Work split: persistent blocks of EX_WARPS warps stage the MLP's weights in shared
// memory once, then each warp loops over tiles of 32 points: every lane encodes its
// point with the encoding's device function (one lane, one point, all levels), writes
// the 32 fp16 features into the warp's row buffer, and the warp runs the three layers
// on tensor cores (mlp.cuh). The grid lookups dominate (L2 requests); the MLP adds
// shared-memory and tensor work that overlaps with other warps' lookups.
#include "grid.cuh"
#include "mlp.cuh"

#ifndef EX_WARPS
#define EX_WARPS 16 // warps per block
#endif
#ifndef EX_MIN_BLOCKS
// 512 threads per multiprocessor: 128 registers each, which lets the compiler issue the
// corner loads of many levels before waiting (fewer registers measured slower on an H200).
#define EX_MIN_BLOCKS (EX_WARPS >= 16 ? 1 : 16 / EX_WARPS)
#endif

static_assert(grid_config::N_OUT_PADDED == mlp::IN, "the MLP takes the 32 features of the encoding");

// Dynamic shared memory: the weights, then one 32-row feature buffer per warp.
constexpr int EX_SHARED_BYTES = sizeof(mlp::Weights) + EX_WARPS * mlp::TILE * mlp::S_IN * 2;

GJ_INLINE void check_shared() {
    gj_u32 bytes;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
    if (bytes < EX_SHARED_BYTES) __trap(); // the host computed the size with other constants
}

// y (n x 16, fp16) = MLP(encoding(x)), x: n x D floats in [0, 1).
template <int V>
__global__ void __launch_bounds__(EX_WARPS * 32, EX_MIN_BLOCKS)
fused_infer(const float* __restrict__ x, const grid_config::param_t* __restrict__ params,
            const gj_u16* __restrict__ weights, gj_u16* __restrict__ y, gj_u64 n) {
    extern __shared__ __align__(16) unsigned char smem[];
    check_shared();
    mlp::Weights* W = (mlp::Weights*)smem;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    gj_u16* X = (gj_u16*)(smem + sizeof(mlp::Weights)) + warp * mlp::TILE * mlp::S_IN;
    mlp::stage_weights(W, weights);
    __syncthreads();

    const gj_u64 tiles = (n + mlp::TILE - 1) / mlp::TILE;
    for (gj_u64 tile = (gj_u64)blockIdx.x * EX_WARPS + warp; tile < tiles; tile += (gj_u64)gridDim.x * EX_WARPS) {
        const gj_u64 first = tile * mlp::TILE, i = first + lane;
        grid_out_t f;
        if (i < n) {
            grid_in_t p;
#pragma unroll
            for (int d = 0; d < grid_config::D; ++d) p.v[d] = x[i * grid_config::D + d];
            f = grid(p, params, nullptr);
        } else {
#pragma unroll
            for (int k = 0; k < grid_config::N_OUT_PADDED; ++k) f.v[k].bits = 0;
        }
        mlp::store_row(X, lane, f);
        __syncwarp();
        const int valid = (int)(n - first < (gj_u64)mlp::TILE ? n - first : (gj_u64)mlp::TILE);
#pragma unroll 1
        for (int m = 0; m < 2; ++m) {
            float out[2][4];
            mlp::forward16(W, X, 16 * m, nullptr, nullptr, out);
            mlp::store_outputs(y, first, 16 * m, valid, out);
        }
        __syncwarp(); // the next tile rewrites X
    }
}

// The same MLP on features from global memory (n x 32 fp16, as gj_forward writes them:
// point-major (AoS) for SOA = 0, feature-major for SOA = 1): the unfused pipeline's second kernel.
template <int SOA>
__global__ void __launch_bounds__(EX_WARPS * 32, EX_MIN_BLOCKS)
mlp_infer(const gj_u16* __restrict__ features, const gj_u16* __restrict__ weights, gj_u16* __restrict__ y, gj_u64 n) {
    extern __shared__ __align__(16) unsigned char smem[];
    check_shared();
    mlp::Weights* W = (mlp::Weights*)smem;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    gj_u16* X = (gj_u16*)(smem + sizeof(mlp::Weights)) + warp * mlp::TILE * mlp::S_IN;
    mlp::stage_weights(W, weights);
    __syncthreads();

    const gj_u64 tiles = (n + mlp::TILE - 1) / mlp::TILE;
    for (gj_u64 tile = (gj_u64)blockIdx.x * EX_WARPS + warp; tile < tiles; tile += (gj_u64)gridDim.x * EX_WARPS) {
        const gj_u64 first = tile * mlp::TILE, i = first + lane;
        if (SOA) mlp::copy_row_soa(X, lane, features, n, i, i < n);
        else mlp::copy_row(X, lane, features + i * mlp::IN, i < n);
        __syncwarp();
        const int valid = (int)(n - first < (gj_u64)mlp::TILE ? n - first : (gj_u64)mlp::TILE);
#pragma unroll 1
        for (int m = 0; m < 2; ++m) {
            float out[2][4];
            mlp::forward16(W, X, 16 * m, nullptr, nullptr, out);
            mlp::store_outputs(y, first, 16 * m, valid, out);
        }
        __syncwarp();
    }
}
