// ---------------------------------------------------------------------------
// model_kernels.cuh: the __global__ kernels of a model, an encoding and its network
// (docs/networks.md §9). Forward, fused: each point is encoded in registers by the encoding's
// device functions, its features go into the warp's tile and through the network
// (network.cuh). Backward to the parameters, fused: the network's dL/d(features) goes straight
// into the encoding's backward device function. Backward with dL/dinput, in two kernels: the
// network's backward writes dL/d(features), and the encoding's own level-major backward (a
// module of the encoding, kernels.cuh) reads it. Generic over the network's configuration C
// (with the block plan of network_kernels.cuh, whose helpers these use) and E, the generated
// wrapper of the encoding: E::config, E::in_t, E::out_t, E::fwd(x, params, ctx) (the encoding's
// NAME_encoding) and E::bwd_params(dL_dy, params, ctx, dL_dparams, i, n) (dL/dparams alone, one
// instance of the per-level code; point i of n chooses stochastic interpolation's sample as
// gridjit's own kernels do) and E::READS_ROW; where it is true, E::bwd_params_row, the same from
// dL/dy in place and x (gj_model_encoding_backward).
// Arrays are point-major: x[i * D + d], y[i * OUT + c] (floats, or fp16 values where y_half),
// dL_dy[i * OUT + c]; dL/d(features) feature-major. The network's forward context of tile t is at ctx + t *
// gj_nn_pass_ctx_halves<C>() (network.cuh); the encoding keeps none (its backward takes x again).
// ---------------------------------------------------------------------------
#ifndef GJ_MODEL_KERNELS_CUH
#define GJ_MODEL_KERNELS_CUH

// The network's forward over the warp's tiles of 32 points; features(i, active, scratch) puts
// point i's features into the warp's input rows (the encoding's forward in registers, or the
// features read from memory); y floats, or fp16 values where y_half (gj_nn_store_rows).
template <class C, int PAD, class Features>
GJ_INLINE void gj_model_forward_tiles(gj_u64 n, void* __restrict__ y, bool y_half, const gj_u16* w, gj_u16* scratch,
                                      gj_u16* ctx, Features features) {
    const int lane = gj_nn_lane();
    const gj_u64 n_tiles = (n + 31) / 32;
#pragma unroll 1
    for (gj_u64 tile = (gj_u64)blockIdx.x * C::FORWARD_WARPS + threadIdx.x / 32; tile < n_tiles;
         tile += (gj_u64)gridDim.x * C::FORWARD_WARPS) {
        const gj_u64 i = tile * 32 + lane;
        features(i, i < n, scratch);
        gj_nn_forward_warp<C, PAD, !gj_nn_recomputes<C>::value>(w, scratch,
                                                                 ctx ? ctx + tile * gj_nn_pass_ctx_halves<C>() : nullptr);
        const gj_u64 first = tile * 32;
        gj_nn_store_rows<C::OUT, C::S>(y, first, y_half, scratch, n - first < 32 ? (int)(n - first) : 32);
        __syncwarp();
    }
}

// C::TABLE_VALUES where a kernel's config states it (a model's inference config), else 0.
template <class C, class = void> struct gj_model_table {
    static constexpr gj_u32 values = 0;
};
template <class C> struct gj_model_table<C, decltype(void(C::TABLE_VALUES))> {
    static constexpr gj_u32 values = C::TABLE_VALUES;
};

// The block's copy of the first TABLE values of the encoding's parameters (its small levels) in
// shared memory after the warps' buffers, 16 bytes at a time where eparams is aligned so; the
// caller's barrier (the weights') orders it before the gathers.
template <class C, gj_u32 TABLE, class ET> GJ_INLINE ET* gj_model_stage_table(const ET* __restrict__ eparams) {
    static_assert(C::STAGE, "the weights' barrier orders the table's copy");
    static_assert(TABLE * sizeof(ET) % 16 == 0, "the small levels' values copied 16 bytes at a time");
    ET* table = (ET*)(gj_nn_smem + gj_nn_staged_halves<C, C::STAGE>() + (gj_u64)C::FORWARD_WARPS * C::FORWARD_SCRATCH_HALVES);
    if (((gj_u64)eparams & 15) == 0) {
        for (gj_u32 q = threadIdx.x; q < TABLE * sizeof(ET) / 16; q += blockDim.x)
            ((gj_u32x4*)table)[q] = ((const gj_u32x4*)eparams)[q];
    } else {
        for (gj_u32 v = threadIdx.x; v < TABLE; v += blockDim.x) table[v] = eparams[v];
    }
    return table;
}

// The fused forward: each point encoded in registers by the encoding's device function. Where
// C::TABLE_VALUES (the wide inference block: network_plan.c), the block first copies that many
// leading values of the encoding's parameters (its small levels) into its shared memory
// (gj_model_stage_table), and the encoding gathers those levels there (E::fwd_staged).
template <class C, class E>
GJ_INLINE void gj_model_forward_kernel(gj_u64 n, const float* __restrict__ x, void* __restrict__ y,
                                       const gj_half* __restrict__ params,
                                       const typename E::config::param_t* __restrict__ eparams, gj_u16* __restrict__ ctx,
                                       gj_u32 y_half = 0) {
    constexpr int D = E::config::D;
    typedef typename E::config::param_t ET;
    constexpr gj_u32 TABLE = gj_model_table<C>::values;
    gj_u16* scratch = gj_nn_forward_scratch<C>();
    ET* table = nullptr;
    if constexpr (TABLE > 0) table = gj_model_stage_table<C, TABLE>(eparams);
    gj_nn_with_weights<C, C::STAGE, false>(params, [&](const gj_u16* w, auto pad) {
        gj_model_forward_tiles<C, decltype(pad)::value>(n, y, y_half != 0, w, scratch, ctx, [&](gj_u64 i, bool active, gj_u16* rows) {
            typename E::in_t in;
#pragma unroll
            for (int d = 0; d < D; ++d) in.v[d] = active ? x[i * D + d] : 0.0f;
            typename E::out_t f;
            if constexpr (TABLE > 0) f = E::template fwd_staged<TABLE>(in, eparams, table);
            else f = E::fwd(in, eparams, nullptr);
            gj_nn_put_input<C>(rows, f.v, active);
        });
    });
}

// Lane point i's features (n x C::IN of T, feature-major: f[k * n + i]) into its input row of the
// warp's rows (zeros where inactive).
template <class C, class T>
GJ_INLINE void gj_model_put_features(gj_u16* rows, const T* __restrict__ f, gj_u64 n, gj_u64 i, bool active) {
    T v[C::IN];
#pragma unroll
    for (int k = 0; k < C::IN; ++k) v[k] = active ? f[(gj_u64)k * n + i] : gj_from_float<T>(0.0f);
    gj_nn_put_input<C>(rows, v, active);
}

// The forward of a model's inference in two passes (docs/networks.md §9): the encoding's own
// level-major forward kernel has written the features feature-major (f[k * n + i], the
// encoding's precision T), and this kernel runs the network over them. The same outputs as
// gj_model_forward_kernel, bit for bit: the same features, the same network.
// C::FEATURES_FETCH: each warp copies its next tile's features into a staging of its own in
// shared memory (32 x C::IN values, feature-major, after the warps' scratch) while the tile runs,
// 16 bytes a copy where n is a multiple of 8 and the tile whole (16-byte aligned rows of 32
// values), else value by value; without it the lanes read their features as the tile starts.
template <class C, class T>
GJ_INLINE void gj_model_forward_features_kernel(gj_u64 n, const T* __restrict__ f, void* __restrict__ y,
                                                const gj_half* __restrict__ params, gj_u16* __restrict__ ctx,
                                                gj_u32 y_half = 0) {
    gj_u16* scratch = gj_nn_forward_scratch<C>();
    gj_nn_with_weights<C, C::STAGE, false>(params, [&](const gj_u16* w, auto pad) {
        constexpr int PAD = decltype(pad)::value;
        if constexpr (C::FEATURES_FETCH) {
            T* stage = (T*)(gj_nn_smem + gj_nn_staged_halves<C, C::STAGE>() + C::FORWARD_WARPS * C::FORWARD_SCRATCH_HALVES) +
                       (threadIdx.x / 32) * 32 * C::IN;
            const int lane = gj_nn_lane();
            const gj_u64 n_tiles = (n + 31) / 32, step = (gj_u64)gridDim.x * C::FORWARD_WARPS;
            const bool aligned = sizeof(T) == 2 && n % 8 == 0 && ((gj_u64)f & 15) == 0;
            const auto fetch = [&](gj_u64 tile) {
                if (tile >= n_tiles) return;
                const gj_u64 first = tile * 32;
                if (aligned && first + 32 <= n) {
                    for (int c = lane; c < 4 * C::IN; c += 32) {
                        const int k = c / 4, q = c % 4;
                        gj_nn_copy16_async(stage + k * 32 + 8 * q, f + (gj_u64)k * n + first + 8 * q);
                    }
                    gj_nn_copies_commit();
                } else {
#pragma unroll
                    for (int k = 0; k < C::IN; ++k)
                        stage[k * 32 + lane] = first + lane < n ? f[(gj_u64)k * n + first + lane] : gj_from_float<T>(0.0f);
                }
            };
            fetch((gj_u64)blockIdx.x * C::FORWARD_WARPS + threadIdx.x / 32); // the warp's first tile
            gj_model_forward_tiles<C, PAD>(n, y, y_half != 0, w, scratch, ctx, [&](gj_u64 i, bool active, gj_u16* rows) {
                gj_nn_copies_wait();
                __syncwarp();
                T v[C::IN];
#pragma unroll
                for (int k = 0; k < C::IN; ++k) v[k] = stage[k * 32 + lane];
                __syncwarp(); // every lane has its features: the staging takes the next tile's
                fetch(i / 32 + step);
                gj_nn_put_input<C>(rows, v, active);
            });
        } else {
            gj_model_forward_tiles<C, PAD>(n, y, y_half != 0, w, scratch, ctx, [&](gj_u64 i, bool active, gj_u16* rows) {
                gj_model_put_features<C>(rows, f, n, i, active);
            });
        }
    });
}

// The backward pass without dL/dinput, fused: the network's backward per tile, its
// dL/d(features) (rounded to fp16, as tiny-cuda-nn passes it) straight into the encoding's
// dL/dparams device function (E::bwd_params) of each point. Faster here than the two kernels
// below (64 x 2 on the H200: 2.78 ms against 3.20): the per-point part adds 1.75 ms to the
// network's 0.96, where the level-major kernels take 2.13 on their own.
// The encoding's dL/dparams of the lane's point i from its dL/d(features) row (fp16, as the
// network's backward leaves it): E::bwd_params, which takes x again as its forward context.
// small: the block's sums of the encoding's small levels (below), or null.
// E::READS_ROW: E::bwd_params_row takes dL/d(features) in place (an fp16 encoding's): the
// level loop reads each level's values from the row in shared memory.

template <class C, class E>
GJ_INLINE void gj_model_encoding_backward(gj_u64 i, gj_u64 n, bool active, const gj_u16* row,
                                          const float* __restrict__ x,
                                          const typename E::config::param_t* __restrict__ eparams,
                                          typename E::config::grad_t* __restrict__ dL_deparams, float* small) {
    typedef typename E::config EC;
    constexpr int D = EC::D;
    if (!active || !dL_deparams) return;
    float ex[D]; // the encoding's forward context: the D input floats (docs/fusion.md)
#pragma unroll
    for (int d = 0; d < D; ++d) ex[d] = x[i * D + d];
    if constexpr (E::READS_ROW && sizeof(typename EC::param_t) == 2) {
        static_assert(EC::L * EC::F <= C::IN, "the row holds every level's dL/dy");
        E::bwd_params_row((const typename EC::param_t*)row, ex, eparams, dL_deparams, i, n, small);
    } else {
        typename E::out_t dy;
#pragma unroll
        for (int k = 0; k < EC::N_OUT_PADDED; ++k)
            dy.v[k] = gj_from_float<typename EC::param_t>(k < C::IN ? gj_half_to_float(row[k]) : 0.0f);
        E::bwd_params(dy, eparams, (const gj_u8*)ex, dL_deparams, i, n, small);
    }
}

// The encoding's small levels (those whose gradients fit a block's shared memory, which lead
// its level table: E::SMALL_FLOATS floats) summed per block in fp32 shared memory after the
// warps' scratch (C::SMALL_SUMS_FLOATS, the plan's room for them; 0: none), then added to
// dL/dparams once a block: every point hits the same few thousand entries of these levels,
// where global atomics queue on the same addresses (the encoding's own backward sums them so
// in NAME_backward_coarse).
template <class C, class = void> struct gj_model_small_room {
    static constexpr gj_u32 value = 0;
};
template <class C> struct gj_model_small_room<C, decltype(void(C::SMALL_SUMS_FLOATS))> {
    static constexpr gj_u32 value = C::SMALL_SUMS_FLOATS;
};
template <class C, class E> __host__ __device__ constexpr bool gj_model_sums_small() {
    return gj_model_small_room<C>::value > 0 && E::SMALL_FLOATS > 0;
}

// The block's small-level sums, zeroed (the caller meets at a barrier before they are added
// to), or null: none (dL_deparams null, or the plan has no room).
template <class C, class E> GJ_INLINE float* gj_model_small_sums(const void* dL_deparams) {
    if constexpr (gj_model_sums_small<C, E>()) {
        static_assert(E::SMALL_FLOATS <= gj_model_small_room<C>::value, "the plan's room holds the small levels");
        if (!dL_deparams) return nullptr;
        float* sums = (float*)(gj_nn_smem + gj_nn_scratch_offset<C>() + C::WARPS * C::SCRATCH_HALVES);
        for (gj_u32 k = threadIdx.x; k < E::SMALL_FLOATS; k += blockDim.x) sums[k] = 0.0f;
        return sums;
    } else {
        return nullptr;
    }
}

// Adds the block's non-zero small-level sums to dL_deparams (the small levels lead it).
template <class C, class E>
GJ_INLINE void gj_model_small_flush(const float* sums, typename E::config::grad_t* __restrict__ dL_deparams) {
    if constexpr (gj_model_sums_small<C, E>()) {
        if (!sums) return; // uniform: dL_deparams is the kernel's
        static_assert(sizeof(typename E::config::grad_t) == 4 || E::SMALL_FLOATS % 2 == 0,
                      "fp16 gradients are added in pairs");
        __syncthreads();
        gj_add_block_sums(sums, dL_deparams, E::SMALL_FLOATS, 32 * C::WARPS);
    }
}

template <class C, class E, int PAD>
GJ_INLINE void gj_model_backward_tiles(gj_u64 n, const float* __restrict__ x, gj_nn_dy dL_dy,
                                       float dy_scale, const gj_u16* w,
                                       const typename E::config::param_t* __restrict__ eparams, gj_u16* scratch,
                                       const gj_u16* ctx, float* grads, float* __restrict__ dL_dparams,
                                       typename E::config::grad_t* __restrict__ dL_deparams, float* small) {
    gj_nn_backward_rounds<C, PAD, true>(n, dL_dy, dy_scale, w, scratch, ctx, grads, dL_dparams,
                                        [=](gj_u64 i, bool active, const gj_u16* row) {
        gj_model_encoding_backward<C, E>(i, n, active, row, x, eparams, dL_deparams, small);
    });
}

// dL_dparams: the network's, fp32, added to; dL_deparams: the encoding's (grad_t), added to.
// Either may be null. dy_scale multiplies dL/dy as it is read (a loss scale).
template <class C, class E>
GJ_INLINE void gj_model_backward_kernel(gj_u64 n, const float* __restrict__ x, gj_nn_dy dL_dy,
                                        float dy_scale, const gj_half* __restrict__ params,
                                        const typename E::config::param_t* __restrict__ eparams,
                                        const gj_u16* __restrict__ ctx, float* __restrict__ dL_dparams,
                                        typename E::config::grad_t* __restrict__ dL_deparams) {
    float* grads;
    gj_u16* scratch = gj_nn_backward_smem<C>(dL_dparams, &grads);
    float* small = gj_model_small_sums<C, E>(dL_deparams);
    gj_nn_with_weights<C, C::STAGE_BWD, C::SMEM_GRADS || gj_model_sums_small<C, E>()>(
        params, [&](const gj_u16* w, auto pad) {
            gj_model_backward_tiles<C, E, decltype(pad)::value>(n, x, dL_dy, dy_scale, w, eparams, scratch, ctx, grads,
                                                                dL_dparams, dL_deparams, small);
        });
    gj_nn_backward_flush<C>(grads, dL_dparams);
    gj_model_small_flush<C, E>(small, dL_deparams);
}

// A model's training step (docs/networks.md §10), the encoding's own kernels around the network's:
// the encoding's forward kernel writes the features feature-major (f[k * n + i], the encoding's
// precision T), this kernel runs each tile's network forward, loss and backward
// (gj_nn_train_rounds) and writes dL/d(features) over the features in place (each lane its own
// point's), and the encoding's level-major backward kernel takes them. (One kernel with the
// encoding's forward and per-point backward in it took 4.95 ms a step of the 64 x 2 model on the
// H200 against 3.74 for these three: at the backward's 8 warps a multiprocessor the encoding's
// gathers wait.) dL_dparams (fp32, zeroed by the caller) receives the network's gradients of the
// scaled loss; loss (or null, zeroed) the mean loss, loss_factor = 1 / (n * OUT); y (or null)
// the outputs.
template <class C, class T>
GJ_INLINE void gj_model_train_features_kernel(gj_u64 n, T* __restrict__ f, const float* __restrict__ target,
                                              float grad_factor, float loss_factor, const gj_half* __restrict__ params,
                                              gj_u16* __restrict__ ring, float* __restrict__ y,
                                              float* __restrict__ dL_dparams, float* __restrict__ loss) {
    float* grads;
    gj_u16* scratch = gj_nn_backward_smem<C>(dL_dparams, &grads);
    float squares = 0.0f;
    gj_nn_with_weights<C, C::STAGE_BWD, C::SMEM_GRADS>(params, [&](const gj_u16* w, auto pad) {
        squares = gj_nn_train_rounds<C, decltype(pad)::value, true>(
            n, target, grad_factor, y, w, scratch, ring, grads, dL_dparams,
            [&](gj_u64 i, bool active, gj_u16* rows) { gj_model_put_features<C>(rows, f, n, i, active); },
            [&](gj_u64 i, bool active, const gj_u16* row) {
                if (active) {
#pragma unroll
                    for (int k = 0; k < C::IN; ++k) f[(gj_u64)k * n + i] = gj_from_float<T>(gj_half_to_float(row[k]));
                }
            });
    });
    gj_nn_backward_flush<C>(grads, dL_dparams);
    gj_nn_add_loss(loss, squares, loss_factor);
}

// The backward pass with dL/dinput, in two kernels: this one, the network's backward, writes
// dL/dparams of the network (as gj_nn_backward_tiles) and dL/d(features) rounded to the
// encoding's precision T (fp16 as tiny-cuda-nn passes it), feature-major: dL_df[k * n + i] for
// the C::IN features k; the encoding's own level-major backward kernels then take it with
// dL/dx (docs/networks.md §9), 0.67-0.80 of the time the fused kernel took with the encoding's
// per-point backward with dL/dx.
template <class C, class T, int PAD>
GJ_INLINE void gj_model_backward_features_tiles(gj_u64 n, gj_nn_dy dL_dy, float dy_scale,
                                                const gj_u16* w, gj_u16* scratch, const gj_u16* ctx, float* grads,
                                                float* __restrict__ dL_dparams, T* __restrict__ dL_df) {
    gj_nn_backward_rounds<C, PAD, true>(n, dL_dy, dy_scale, w, scratch, ctx, grads, dL_dparams,
                                        [&](gj_u64 i, bool active, const gj_u16* row) {
        if (active) {
            // 16 bytes a lane at a time: rows C::S halves apart (a multiple of 8), so the eight
            // lanes of each quarter-warp phase read disjoint banks.
#pragma unroll
            for (int k0 = 0; k0 < C::IN; k0 += 8) {
                const gj_u32x4 q = *(const gj_u32x4*)(row + k0);
                const gj_u32 words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
                for (int k = 0; k < 8; ++k) {
                    if (k0 + k < C::IN) {
                        const gj_u16 h = (gj_u16)(words[k / 2] >> (16 * (k % 2)));
                        dL_df[(gj_u64)(k0 + k) * n + i] = gj_from_float<T>(gj_half_to_float(h));
                    }
                }
            }
        }
    });
}

// dL_dparams: the network's, fp32, added to (null: none); dL_df: n x C::IN of T, feature-major,
// written; dy_scale multiplies dL/dy as it is read.
template <class C, class T>
GJ_INLINE void gj_model_backward_features_kernel(gj_u64 n, gj_nn_dy dL_dy, float dy_scale,
                                                 const gj_half* __restrict__ params, const gj_u16* __restrict__ ctx,
                                                 float* __restrict__ dL_dparams, T* __restrict__ dL_df) {
    float* grads;
    gj_u16* scratch = gj_nn_backward_smem<C>(dL_dparams, &grads);
    gj_nn_with_weights<C, C::STAGE_BWD, C::SMEM_GRADS>(params, [&](const gj_u16* w, auto pad) {
        gj_model_backward_features_tiles<C, T, decltype(pad)::value>(n, dL_dy, dy_scale, w, scratch, ctx, grads,
                                                                     dL_dparams, dL_df);
    });
    gj_nn_backward_flush<C>(grads, dL_dparams);
}

#endif // GJ_MODEL_KERNELS_CUH
