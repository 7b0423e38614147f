// ---------------------------------------------------------------------------
// network_kernels.cuh: the __global__ kernels of a network alone (docs/networks.md), around
// the warp functions of network.cuh. Generic over the configuration C, which adds the launch
// plan the host computed (src/codegen/network_plan.c) and repeats here:
//   C::WARPS          warps per block of the backward kernels (the block is 32 * WARPS threads)
//   C::FORWARD_WARPS  the same for the inference and forward kernels
//   C::STAGE          1: the inference and forward kernels' blocks copy the weights into shared
//                     memory first, rows padded by 8 halves (bank-conflict free fragments);
//                     0: read from global memory
//   C::STAGE_BWD      the same for the backward kernel (only where C::STAGE is 1)
//   C::SMEM_GRADS     1: the backward kernel sums dL/dparams per block in shared memory and
//                     adds the block's sums to the caller's array once at the end
// Dynamic shared memory, in this order: [staged weights] [fp32 gradients] [per-warp scratch]
// (the forward kernels: no gradients, and FORWARD_SCRATCH_HALVES a warp: one buffer, or both).
// Points are rows of 32-point tiles; a forward kernel's warp takes tiles
// blockIdx.x * FORWARD_WARPS + warp, then every gridDim.x * FORWARD_WARPS-th (any grid size is
// correct); the backward kernels go in rounds (gj_nn_rounds).
// Arrays are point-major: x[i * IN + c], y[i * OUT + c] (floats, or fp16 values where y_half),
// dL_dy[i * OUT + c], dL_dx[i * IN + c]; the forward context of tile t at ctx + t *
// gj_nn_pass_ctx_halves<C>() (all of it, or the input rows alone where C::RECOMPUTE: network.cuh,
// gj_nn_recomputes).
// ---------------------------------------------------------------------------
#ifndef GJ_NETWORK_KERNELS_CUH
#define GJ_NETWORK_KERNELS_CUH

extern __shared__ __align__(16) gj_u16 gj_nn_smem[];

// Copies one layer's weights (FAN_OUT rows of K halves, tiny-cuda-nn's layout) into rows
// padded by 8 halves, 16 bytes a thread at a time (rows are multiples of 16 halves: a chunk
// never straddles two); the widths are constants, so the row of a chunk costs no division.
template <int K, int FAN_OUT> GJ_INLINE void gj_nn_stage_layer(gj_u16* to, const gj_u16* from) {
    constexpr int PER_ROW = K / 8, CHUNKS = PER_ROW * FAN_OUT;
    for (int q = threadIdx.x; q < CHUNKS; q += blockDim.x)
        *(gj_u32x4*)(to + (q / PER_ROW) * (K + 8) + 8 * (q % PER_ROW)) = ((const gj_u32x4*)from)[q];
}

// Copies the weights (tiny-cuda-nn's layout, 16-byte aligned) into s with rows padded by 8
// halves.
template <class C> GJ_INLINE void gj_nn_stage_weights(gj_u16* s, const gj_half* params) {
    typedef gj_nn<C> L;
    const gj_u16* p = (const gj_u16*)params;
    if constexpr (C::NL == 1) {
        gj_nn_stage_layer<C::IN_P, C::OUT_P>(s, p);
    } else {
        gj_nn_stage_layer<C::IN_P, C::W>(s, p);
#pragma unroll 1
        for (int l = 1; l < C::NL - 1; ++l)
            gj_nn_stage_layer<C::W, C::W>(s + L::template offset<8>(l), p + L::template offset<0>(l));
        gj_nn_stage_layer<C::W, C::OUT_P>(s + L::template offset<8>(C::NL - 1), p + L::template offset<0>(C::NL - 1));
    }
}

template <class C, bool STAGE> GJ_INLINE gj_u64 gj_nn_staged_halves() {
    return STAGE ? (gj_nn<C>::template total<8>() + 7) / 8 * 8 : 0;
}

// The halves added to each row of the weights a kernel reads (8 staged, 0 in place).
template <int P> struct gj_nn_pad {
    static constexpr int value = P;
};

// Runs body(w, pad) with the weights as a kernel reads them: staged into shared memory
// (STAGE: C::STAGE or C::STAGE_BWD; pad a gj_nn_pad<8>) or the caller's array (pad a
// gj_nn_pad<0>). The block meets at a barrier before body where it staged, and where SYNC
// asks (the backward kernels' block sums, zeroed before).
template <class C, bool STAGE, bool SYNC, class F> GJ_INLINE void gj_nn_with_weights(const gj_half* params, F body) {
    if constexpr (STAGE) {
        gj_nn_stage_weights<C>(gj_nn_smem, params);
        __syncthreads();
        body((const gj_u16*)gj_nn_smem, gj_nn_pad<8>{});
    } else {
        if constexpr (SYNC) __syncthreads();
        body((const gj_u16*)params, gj_nn_pad<0>{});
    }
}

// Inference (ctx null) or forward for training (ctx: the forward context of every tile); y
// floats, or fp16 values where y_half (gj_nn_store_rows).
template <class C, int PAD>
GJ_INLINE void gj_nn_forward_tiles(gj_u64 n, const float* __restrict__ x, void* __restrict__ y, bool y_half,
                                   const gj_u16* w, gj_u16* scratch, gj_u16* ctx) {
    const int lane = gj_nn_lane();
    const gj_u64 n_tiles = (n + 31) / 32;
#pragma unroll 1
    for (gj_u64 tile = (gj_u64)blockIdx.x * C::FORWARD_WARPS + threadIdx.x / 32; tile < n_tiles;
         tile += (gj_u64)gridDim.x * C::FORWARD_WARPS) {
        const gj_u64 i = tile * 32 + lane;
        const bool active = i < n;
        gj_nn_put_input<C>(scratch, active ? x + i * C::IN : x, active);
        gj_nn_forward_warp<C, PAD, !gj_nn_recomputes<C>::value>(w, scratch,
                                                                 ctx ? ctx + tile * gj_nn_pass_ctx_halves<C>() : nullptr);
        const gj_u64 first = tile * 32;
        gj_nn_store_rows<C::OUT, C::S>(y, first, y_half, scratch, n - first < 32 ? (int)(n - first) : 32);
        __syncwarp();
    }
}

// The forward passes use one of a warp's two scratch buffers (both where a network without
// hidden layers computes its outputs in chunks, gj_nn_forward_uses_d): C::FORWARD_SCRATCH_HALVES.
template <class C> GJ_INLINE gj_u16* gj_nn_forward_scratch() {
    return gj_nn_smem + gj_nn_staged_halves<C, C::STAGE>() + (threadIdx.x / 32) * C::FORWARD_SCRATCH_HALVES;
}

template <class C>
GJ_INLINE void gj_nn_forward_kernel(gj_u64 n, const float* __restrict__ x, void* __restrict__ y,
                                    const gj_half* __restrict__ params, gj_u16* __restrict__ ctx, gj_u32 y_half = 0) {
    gj_u16* scratch = gj_nn_forward_scratch<C>();
    gj_nn_with_weights<C, C::STAGE, false>(params, [&](const gj_u16* w, auto pad) {
        gj_nn_forward_tiles<C, decltype(pad)::value>(n, x, y, y_half != 0, w, scratch, ctx);
    });
}

// The backward kernels go through the points in rounds: round r gives warp k of the block tile
// r * WARPS + k, and the block's warps meet at the weight-gradient barriers (gj_nn_wgrad_block,
// gj_nn_wgrad_regs), so every warp of a block runs every round of it, a warp past the last tile
// with no point.
template <class C> GJ_INLINE gj_u64 gj_nn_rounds(gj_u64 n) { return ((n + 31) / 32 + C::WARPS - 1) / C::WARPS; }

// The warps of round `round` that hold points (all but in the last round).
template <class C> GJ_INLINE int gj_nn_round_warps(gj_u64 round, gj_u64 n) {
    const gj_u64 n_tiles = (n + 31) / 32, first = round * C::WARPS;
    return (int)(n_tiles - first < (gj_u64)C::WARPS ? n_tiles - first : (gj_u64)C::WARPS);
}

// The round's tile of this warp, its context (a warp past the last tile gets the last tile's:
// gj_nn_backward_warp reads it and masks what it read) and the warps of the round that hold points.
template <class C> struct gj_nn_round {
    gj_u64 tile;
    const gj_u16* ctx;
    int warps;
    GJ_INLINE gj_nn_round(gj_u64 round, gj_u64 n, const gj_u16* contexts) {
        const gj_u64 n_tiles = (n + 31) / 32, first = round * C::WARPS;
        tile = first + threadIdx.x / 32;
        ctx = contexts + (tile < n_tiles ? tile : n_tiles - 1) * gj_nn_pass_ctx_halves<C>();
        warps = gj_nn_round_warps<C>(round, n);
    }
};

// Every round of the block's backward: each warp's tile through gj_nn_backward_warp (dL/dy
// times dy_scale), then per_point(i, active, row) for the lane's point i, the three backward
// kernels' own part (row: WITH_DX, the lane's dL/d(input) as fp16; else null). The parameter
// gradients: the layers that fit C::SUM_REGISTERS floats a lane in registers across the block's
// rounds (gj_nn_wgrad_regs), added to dL_dparams after the last; the others to grads every
// round (the block sums, or dL_dparams itself).
template <class C, int PAD, bool WITH_DX, class F>
GJ_INLINE void gj_nn_backward_rounds(gj_u64 n, gj_nn_dy dL_dy, float dy_scale, const gj_u16* w,
                                     gj_u16* scratch, const gj_u16* ctx, float* grads, float* __restrict__ dL_dparams,
                                     F per_point) {
    const int lane = gj_nn_lane();
    gj_nn_wgrad_regs<C, C::SUM_REGISTERS> sums(dL_dparams, grads);
#pragma unroll 1
    for (gj_u64 round = blockIdx.x; round < gj_nn_rounds<C>(n); round += gridDim.x) {
        const gj_nn_round<C> r(round, n, ctx);
        sums.rest.warps = r.warps;
        const gj_u64 i = r.tile * 32 + lane;
        const bool active = i < n;
        const gj_u16* g = gj_nn_backward_warp<C, PAD, WITH_DX, gj_nn_recomputes<C>::value>(
            active ? dL_dy.row(i * C::OUT) : gj_nn_dy(nullptr, false), dy_scale, w, scratch, r.ctx, sums);
        per_point(i, active, WITH_DX ? g + lane * C::S : nullptr);
        __syncwarp();
    }
    sums.flush();
}

template <class C, int PAD, bool WITH_DX>
GJ_INLINE void gj_nn_backward_tiles(gj_u64 n, gj_nn_dy dL_dy, float dy_scale, const gj_u16* w,
                                    gj_u16* scratch, const gj_u16* ctx, float* grads, float* __restrict__ dL_dparams,
                                    float* __restrict__ dL_dx) {
    gj_nn_backward_rounds<C, PAD, WITH_DX>(n, dL_dy, dy_scale, w, scratch, ctx, grads, dL_dparams,
                                           [&](gj_u64 i, bool active, const gj_u16* row) {
        if constexpr (WITH_DX) {
            if (active) {
#pragma unroll 4
                for (int c = 0; c < C::IN; ++c) dL_dx[i * C::IN + c] = gj_half_to_float(row[c]);
            }
        }
    });
}

// Where the warps' scratch starts in a backward block's shared memory, in halves: after the
// staged weights and (SMEM_GRADS) the block's parameter-gradient sums.
template <class C> GJ_INLINE gj_u64 gj_nn_scratch_offset() {
    return gj_nn_staged_halves<C, C::STAGE_BWD>() + (C::SMEM_GRADS ? 2 * ((C::N_PARAMS + 3) / 4 * 4) : 0);
}

// A backward kernel's shared memory: the staged weights, then (SMEM_GRADS) the block's
// parameter-gradient sums, then each warp's scratch. *grads is where the block adds its
// parameter gradients: the shared sums, zeroed here (the caller syncs before use), or
// dL_dparams itself. Returns the warp's scratch.
template <class C> GJ_INLINE gj_u16* gj_nn_backward_smem(float* dL_dparams, float** grads) {
    const gj_u64 staged = gj_nn_staged_halves<C, C::STAGE_BWD>();
    *grads = dL_dparams;
    if constexpr (C::SMEM_GRADS) {
        if (dL_dparams) {
            *grads = (float*)(gj_nn_smem + staged);
            for (gj_u64 e = threadIdx.x; e < C::N_PARAMS; e += blockDim.x) (*grads)[e] = 0.0f;
        }
    }
    return gj_nn_smem + gj_nn_scratch_offset<C>() + (threadIdx.x / 32) * (gj_u64)C::SCRATCH_HALVES;
}

// With SMEM_GRADS, adds the block's parameter-gradient sums (fragment order, gj_nn_wgrad_block)
// to dL_dparams in tiny-cuda-nn's layout (the nonzero ones).
template <class C> GJ_INLINE void gj_nn_backward_flush(const float* grads, float* __restrict__ dL_dparams) {
    typedef gj_nn<C> L;
    if constexpr (C::SMEM_GRADS) {
        if (dL_dparams) {
            __syncthreads();
            for (gj_u64 e = threadIdx.x; e < C::N_PARAMS; e += blockDim.x) {
                const float v = grads[e];
                if (v == 0.0f) continue;
                int l = 0;
                while (l + 1 < C::NL && L::template offset<0>(l + 1) <= e) ++l;
                atomicAdd(dL_dparams + gj_nn_sums_to_layout(L::template offset<0>(l), L::fan_in(l), e), v);
            }
        }
    }
}

// dL_dparams: fp32, n_params, added to (the caller zeroes it); null: no parameter gradients.
// dy_scale multiplies dL/dy as it is read (a loss scale; the gradients are then those of the
// scaled loss). WITH_DX: dL_dx (n x C::IN, written) is computed too; without, dL_dx is not read. The two
// forms are kernels of different programs (NAME_backward, NAME_backward_input): each compiles
// in about half the time of one kernel holding both, and a module makes them side by side.
template <class C, bool WITH_DX>
GJ_INLINE void gj_nn_backward_kernel(gj_u64 n, gj_nn_dy dL_dy, float dy_scale,
                                     const gj_half* __restrict__ params, const gj_u16* __restrict__ ctx,
                                     float* __restrict__ dL_dparams, float* __restrict__ dL_dx) {
    float* grads;
    gj_u16* scratch = gj_nn_backward_smem<C>(dL_dparams, &grads);
    gj_nn_with_weights<C, C::STAGE_BWD, C::SMEM_GRADS>(params, [&](const gj_u16* w, auto pad) {
        gj_nn_backward_tiles<C, decltype(pad)::value, WITH_DX>(n, dL_dy, dy_scale, w, scratch, ctx, grads, dL_dparams,
                                                               dL_dx);
    });
    gj_nn_backward_flush<C>(grads, dL_dparams);
}

// ---- the training step, fused (docs/networks.md §10) ----------------------------------------
// The warp's staging of its tile's targets in a training step's block (C::FETCH_TARGETS): its
// C::TARGET_HALVES after the block's scratch.
template <class C> GJ_INLINE float* gj_nn_target_staging() {
    return (float*)(gj_nn_smem + gj_nn_scratch_offset<C>() + C::WARPS * C::SCRATCH_HALVES +
                    (threadIdx.x / 32) * (gj_u64)C::TARGET_HALVES);
}

// Forward, the loss's gradient and backward of each tile in one kernel, so that neither the
// forward context nor the outputs and their gradients go through memory between passes. Per
// round each warp runs its tile forwards with the context in the warp's own slot of `ring`
// (C::CTX_HALVES a warp, gridDim.x * C::WARPS slots: written and read back by the same warp
// within the round, they stay in L2), puts the loss's gradient over its output rows, then goes
// backwards as gj_nn_backward_rounds does, its weight gradients through gj_nn_wgrad_regs.
// The loss is tiny-cuda-nn's L2: per output value (y - target)^2 / (n * OUT), its gradient
// 2 (y - target) / (n * OUT) times the loss scale, computed in fp32 from the fp16 output and
// rounded to fp16 once, as tiny-cuda-nn's L2 loss writes it: grad_factor = 2 * scale / (n * OUT).
// y (or null) receives the outputs. put_input(i, active, x) writes the lane's input row;
// per_point(i, active, row) follows each tile's backward (row: WITH_DX, the lane's dL/d(input) as
// fp16). Returns the lane's share of the sum of squared errors.
// The parameter gradients: the layers that fit C::SUM_REGISTERS accumulators a lane in
// registers over all of the block's rounds (gj_nn_wgrad_regs, added to dL_dparams at the end),
// the others to grads every round (the block sums, or dL_dparams itself).
// C::FETCH_TARGETS: each tile's targets are copied into the warp's staging (cp.async) when its
// round starts and have arrived by the time its forward is done; read after the forward
// instead, the warp would wait on them with nothing else to do (docs/networks.md §10).
template <class C, int PAD, bool WITH_DX, class In, class F>
GJ_INLINE float gj_nn_train_rounds(gj_u64 n, const float* __restrict__ target, float grad_factor, float* __restrict__ y,
                                   const gj_u16* w, gj_u16* scratch, gj_u16* ring, float* grads,
                                   float* __restrict__ dL_dparams, In put_input, F per_point) {
    static_assert(!C::FETCH_TARGETS || (C::TARGET_HALVES >= 64 * C::OUT && C::TARGET_HALVES % 8 == 0),
                  "a warp's staging holds 32 rows of targets and keeps the next 16-byte aligned");
    const int lane = gj_nn_lane();
    gj_u16* ctx = ring + ((gj_u64)blockIdx.x * C::WARPS + threadIdx.x / 32) * C::CTX_HALVES;
    float* staged = C::FETCH_TARGETS ? gj_nn_target_staging<C>() : nullptr;
    const gj_u64 n_tiles = (n + 31) / 32;
    float squares = 0.0f;
    gj_nn_wgrad_regs<C, C::SUM_REGISTERS> sums(dL_dparams, grads);
#pragma unroll 1
    for (gj_u64 round = blockIdx.x; round < gj_nn_rounds<C>(n); round += gridDim.x) {
        const gj_u64 first_tile = round * C::WARPS, tile = first_tile + threadIdx.x / 32;
        sums.rest.warps = gj_nn_round_warps<C>(round, n);
        const gj_u64 first = tile * 32, i = first + lane;
        const bool active = i < n;
        const int valid = tile < n_tiles ? (n - first < 32 ? (int)(n - first) : 32) : 0;
        // The tile's outputs and targets are one contiguous run each: consecutive lanes take
        // consecutive values (whole sectors a load), as gj_nn_store_rows does.
        if constexpr (C::FETCH_TARGETS) {
            for (int e = lane; e < valid * C::OUT; e += 32) gj_nn_copy4_async(staged + e, target + first * C::OUT + e);
            gj_nn_copies_commit();
        }
        put_input(i, active, scratch);
        gj_nn_forward_warp<C, PAD>(w, scratch, ctx);
        if constexpr (C::FETCH_TARGETS) {
            gj_nn_copies_wait();
            __syncwarp();
        }
#pragma unroll 4
        for (int e = lane; e < valid * C::OUT; e += 32) {
            const int r = e / C::OUT;
            gj_u16* v = scratch + r * C::S + (e - r * C::OUT);
            const float out = gj_half_to_float(*v);
            if (y) y[first * C::OUT + e] = out;
            const float diff = out - (C::FETCH_TARGETS ? staged[e] : target[first * C::OUT + e]);
            squares = fmaf(diff, diff, squares);
            *v = gj_float_to_half_bits(grad_factor * diff);
        }
        __syncwarp();
        const gj_u16* g = gj_nn_backward_warp<C, PAD, WITH_DX>(active ? (const gj_half*)(scratch + lane * C::S) : nullptr,
                                                               1.0f, w, scratch, ctx, sums);
        per_point(i, active, WITH_DX ? g + lane * C::S : nullptr);
        __syncwarp();
    }
    sums.flush();
    return squares;
}

// *loss += factor * the warp's sum of v (loss null: nothing); every lane of the warp calls it.
GJ_INLINE void gj_nn_add_loss(float* loss, float v, float factor) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += gj_nn_shfl_xor(v, o);
    if (loss && gj_nn_lane() == 0 && v != 0.0f) atomicAdd(loss, factor * v);
}

// The same loss as a pass of its own, for a model's training step run as its passes (the forward
// for training, this, the backward: docs/networks.md §10): over the n values (points x outputs)
// of y (the forward's fp16-rounded outputs, as floats, or as fp16 values where y_half) and
// target, dL_dy = grad_factor * (y - target) as fp16 values (as gj_nn_train_rounds rounds it),
// and *loss (or null, zeroed by the caller) += loss_factor * the sum of (y - target)^2. A
// grid-stride loop over groups of 8 values, each read and written 16 bytes at a time where the
// three arrays are 16-byte aligned (a streaming pass: one value a thread at a time left it at a
// fraction of the bandwidth), the rest value by value; blocks of whole warps (gj_nn_add_loss
// sums over the warp).
// One value's loss term added to squares; returns grad_factor * (y - target), the gradient.
GJ_INLINE float gj_nn_l2_loss_grad(float yi, float ti, float grad_factor, float& squares) {
    const float diff = yi - ti;
    squares = fmaf(diff, diff, squares);
    return grad_factor * diff;
}

GJ_INLINE void gj_nn_l2_loss_kernel(gj_u64 n, const void* __restrict__ y, bool y_half, const float* __restrict__ target,
                                    float grad_factor, float loss_factor, gj_u16* __restrict__ dL_dy,
                                    float* __restrict__ loss) {
    float squares = 0.0f;
    const gj_u64 first = (gj_u64)blockIdx.x * blockDim.x + threadIdx.x, stride = (gj_u64)gridDim.x * blockDim.x;
    gj_u64 done = 0;
    if ((((gj_u64)y | (gj_u64)target | (gj_u64)dL_dy) & 15) == 0) {
        const gj_u64 groups = n / 8;
        for (gj_u64 g = first; g < groups; g += stride) {
            const gj_u32x4 t0 = ((const gj_u32x4*)target)[2 * g], t1 = ((const gj_u32x4*)target)[2 * g + 1];
            const gj_u32 tw[8] = {t0.x, t0.y, t0.z, t0.w, t1.x, t1.y, t1.z, t1.w};
            float yv[8];
            if (y_half) {
                const gj_u32x4 q = ((const gj_u32x4*)y)[g];
                const gj_u32 yw[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
                for (int k = 0; k < 4; ++k) yv[2 * k] = gj_nn_lo(yw[k]), yv[2 * k + 1] = gj_nn_hi(yw[k]);
            } else {
                const gj_u32x4 q0 = ((const gj_u32x4*)y)[2 * g], q1 = ((const gj_u32x4*)y)[2 * g + 1];
                const gj_u32 yw[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
#pragma unroll
                for (int k = 0; k < 8; ++k) yv[k] = __uint_as_float(yw[k]);
            }
            gj_u32 out[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const float lo = gj_nn_l2_loss_grad(yv[2 * k], __uint_as_float(tw[2 * k]), grad_factor, squares);
                const float hi = gj_nn_l2_loss_grad(yv[2 * k + 1], __uint_as_float(tw[2 * k + 1]), grad_factor, squares);
                out[k] = gj_pack_half2(lo, hi);
            }
            ((gj_u32x4*)dL_dy)[g] = gj_u32x4{out[0], out[1], out[2], out[3]};
        }
        done = groups * 8;
    }
    for (gj_u64 i = done + first; i < n; i += stride) {
        const float yi = y_half ? gj_half_to_float(((const gj_u16*)y)[i]) : ((const float*)y)[i];
        dL_dy[i] = gj_float_to_half_bits(gj_nn_l2_loss_grad(yi, target[i], grad_factor, squares));
    }
    gj_nn_add_loss(loss, squares, loss_factor);
}

// A network alone: dL_dparams (fp32, zeroed by the caller) receives the gradients of the scaled
// loss; loss (or null, zeroed by the caller) the mean loss, loss_factor = 1 / (n * OUT).
template <class C>
GJ_INLINE void gj_nn_train_kernel(gj_u64 n, const float* __restrict__ x, const float* __restrict__ target,
                                  float grad_factor, float loss_factor, const gj_half* __restrict__ params,
                                  gj_u16* __restrict__ ring, float* __restrict__ y, float* __restrict__ dL_dparams,
                                  float* __restrict__ loss) {
    float* grads;
    gj_u16* scratch = gj_nn_backward_smem<C>(dL_dparams, &grads);
    float squares = 0.0f;
    gj_nn_with_weights<C, C::STAGE_BWD, C::SMEM_GRADS>(params, [&](const gj_u16* w, auto pad) {
        squares = gj_nn_train_rounds<C, decltype(pad)::value, false>(
            n, target, grad_factor, y, w, scratch, ring, grads, dL_dparams,
            [&](gj_u64 i, bool active, gj_u16* rows) { gj_nn_put_input<C>(rows, active ? x + i * C::IN : x, active); },
            [](gj_u64, bool, const gj_u16*) {});
    });
    gj_nn_backward_flush<C>(grads, dL_dparams);
    gj_nn_add_loss(loss, squares, loss_factor);
}

// ---- Adam, tiny-cuda-nn's (optimizers/adam.h; docs/networks.md §10) --------------------------
// One parameter: its gradient g (of the scaled loss) divided by the loss scale, plus l2_reg
// times the fp32 master weight; the moments; the parameter's own step count (its bias
// correction); the update lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + epsilon); the
// master weight and its rounding written. skip_zero: a zero gradient leaves the parameter, its
// moments and its step as they are (tiny-cuda-nn's rule for the parameters outside the
// network's matrices: an encoding's, most of whose entries a batch does not touch).
struct gj_nn_adam_hyper {
    float lr, beta1, beta2, epsilon, l2_reg, inv_scale;
};

struct gj_nn_adam_lr {
    gj_u32 t; // 0: none yet
    float lr;
};

// The learning rate with the bias correction of step t. Not inlined: the kernel's ten inlined
// updates would each carry two powf, which took NVRTC longer than the rest of the kernel, and a
// thread calls it only when the step count changes.
static __device__ __attribute__((noinline)) float gj_nn_adam_step_lr(const gj_nn_adam_hyper& h, gj_u32 t) {
    return h.lr * sqrtf(1.0f - powf(h.beta2, (float)t)) / (1.0f - powf(h.beta1, (float)t));
}

// One parameter's update in registers: g its gradient (divided by the loss scale), w its master
// weight, a and b its moments, t its step count, each updated.
GJ_INLINE void gj_nn_adam_update(float g, float l2_reg, const gj_nn_adam_hyper& h, gj_nn_adam_lr& cache, float& w,
                                 float& a, float& b, gj_u32& t) {
    g = fmaf(l2_reg, w, g);
    a = fmaf(h.beta1, a, (1.0f - h.beta1) * g);
    b = fmaf(h.beta2, b, (1.0f - h.beta2) * g * g);
    t += 1;
    // The bias correction of step t: most parameters share their step count, so a thread
    // keeps the last one it computed (two powf a parameter cost more than the memory traffic).
    if (t != cache.t) {
        cache.t = t;
        cache.lr = gj_nn_adam_step_lr(h, t);
    }
    w -= cache.lr / (sqrtf(b) + h.epsilon) * a;
}

// Parameter i: skip_zero leaves it (and its state) as it is where its gradient is zero.
template <class P>
GJ_INLINE void gj_nn_adam_one(gj_u64 i, float g, bool skip_zero, float l2_reg, const gj_nn_adam_hyper& h,
                              gj_nn_adam_lr& cache, P* __restrict__ params, float* __restrict__ master,
                              float* __restrict__ m1, float* __restrict__ m2, gj_u32* __restrict__ steps) {
    g *= h.inv_scale;
    if (skip_zero && g == 0.0f) return;
    float w = master[i], a = m1[i], b = m2[i];
    gj_u32 t = steps[i];
    gj_nn_adam_update(g, l2_reg, h, cache, w, a, b, t);
    master[i] = w;
    m1[i] = a;
    m2[i] = b;
    steps[i] = t;
    params[i] = gj_from_float<P>(w);
}

// Four parameters of one set from element 4q: 16-byte loads and stores where the four are inside
// the set and the arrays aligned (vec), else one at a time. A parameter that skip_zero skips keeps
// its values: with 16-byte accesses they are written back as they were read (its fp16 copy too),
// since a quad with some zero gradients is common (a 2-D grid trained on 2^18 points has them in
// most quads of its fine levels) and one parameter at a time took twice as long there; a quad
// whose four are all skipped is not touched.
template <class P, class G>
GJ_INLINE void gj_nn_adam_quad(gj_u64 q, gj_u64 n, bool vec, P* __restrict__ params, float* __restrict__ master,
                               float* __restrict__ m1, float* __restrict__ m2, gj_u32* __restrict__ steps,
                               const G* __restrict__ grads, bool skip_zero, float l2_reg, const gj_nn_adam_hyper& h,
                               gj_nn_adam_lr& cache) {
    const gj_u64 i0 = 4 * q;
    if (!vec || i0 + 4 > n) {
#pragma unroll 1
        for (gj_u64 i = i0; i < i0 + 4 && i < n; ++i)
            gj_nn_adam_one(i, gj_to_float(grads[i]), skip_zero, l2_reg, h, cache, params, master, m1, m2, steps);
        return;
    }
    float g[4];
    if constexpr (sizeof(G) == 4) {
        const gj_f32x4 v = *(const gj_f32x4*)(grads + i0);
        g[0] = v.x, g[1] = v.y, g[2] = v.z, g[3] = v.w;
    } else {
        const gj_u32x2 v = *(const gj_u32x2*)(grads + i0);
        g[0] = gj_nn_lo(v.x), g[1] = gj_nn_hi(v.x), g[2] = gj_nn_lo(v.y), g[3] = gj_nn_hi(v.y);
    }
    bool live[4], any = false, all = true;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        live[k] = !(skip_zero && g[k] == 0.0f);
        any = any || live[k];
        all = all && live[k];
    }
    if (!any) return;
    gj_f32x4 w = *(const gj_f32x4*)(master + i0), a = *(const gj_f32x4*)(m1 + i0), b = *(const gj_f32x4*)(m2 + i0);
    gj_u32x4 t = *(const gj_u32x4*)(steps + i0);
    float* wv[4] = {&w.x, &w.y, &w.z, &w.w};
    float* av[4] = {&a.x, &a.y, &a.z, &a.w};
    float* bv[4] = {&b.x, &b.y, &b.z, &b.w};
    gj_u32* tv[4] = {&t.x, &t.y, &t.z, &t.w};
#pragma unroll
    for (int k = 0; k < 4; ++k)
        if (live[k]) gj_nn_adam_update(g[k] * h.inv_scale, l2_reg, h, cache, *wv[k], *av[k], *bv[k], *tv[k]);
    *(gj_f32x4*)(master + i0) = w;
    *(gj_f32x4*)(m1 + i0) = a;
    *(gj_f32x4*)(m2 + i0) = b;
    *(gj_u32x4*)(steps + i0) = t;
    if constexpr (sizeof(P) == 4) {
        if (!all) { // a skipped parameter keeps its own value (not necessarily its master weight's)
            const gj_f32x4 old = *(const gj_f32x4*)(params + i0);
            const float ov[4] = {old.x, old.y, old.z, old.w};
#pragma unroll
            for (int k = 0; k < 4; ++k)
                if (!live[k]) *wv[k] = ov[k];
        }
        *(gj_f32x4*)(params + i0) = w;
    } else {
        gj_u32x2 r;
        r.x = gj_pack_half2(w.x, w.y);
        r.y = gj_pack_half2(w.z, w.w);
        if (!all) { // a skipped parameter keeps its own fp16 bits (not necessarily its master weight's rounding)
            const gj_u32x2 old = *(const gj_u32x2*)(params + i0);
            const gj_u32 keep_x = (live[0] ? 0u : 0xffffu) | (live[1] ? 0u : 0xffff0000u);
            const gj_u32 keep_y = (live[2] ? 0u : 0xffffu) | (live[3] ? 0u : 0xffff0000u);
            r.x = (r.x & ~keep_x) | (old.x & keep_x);
            r.y = (r.y & ~keep_y) | (old.y & keep_y);
        }
        *(gj_u32x2*)(params + i0) = r;
    }
}

// Whether a set's arrays take 16-byte accesses (its parameters and gradients, of 2-byte types, 8).
GJ_INLINE bool gj_nn_aligned(const void* p, int bytes) { return ((gj_u64)p & (gj_u64)(bytes - 1)) == 0; }

// The network's n_net parameters (fp16, fp32 gradients, l2_reg as given) then, of a model, the
// encoding's n_enc (its precision P, its gradient sums G; no l2_reg, zero gradients skipped):
// four parameters a thread at a time (a grid-stride loop over the quads of both sets).
template <class P, class G>
GJ_INLINE void gj_nn_adam_kernel(gj_u64 n_net, gj_half* __restrict__ params, float* __restrict__ master,
                                 float* __restrict__ m1, float* __restrict__ m2, gj_u32* __restrict__ steps,
                                 const float* __restrict__ grads, gj_u64 n_enc, P* __restrict__ eparams,
                                 float* __restrict__ emaster, float* __restrict__ em1, float* __restrict__ em2,
                                 gj_u32* __restrict__ esteps, const G* __restrict__ egrads, gj_nn_adam_hyper h) {
    const gj_u64 stride = (gj_u64)gridDim.x * blockDim.x, q_net = (n_net + 3) / 4, q_enc = (n_enc + 3) / 4;
    const bool vec_net = gj_nn_aligned(params, 8) && gj_nn_aligned(master, 16) && gj_nn_aligned(m1, 16) &&
                         gj_nn_aligned(m2, 16) && gj_nn_aligned(steps, 16) && gj_nn_aligned(grads, 16);
    const bool vec_enc = gj_nn_aligned(eparams, 4 * sizeof(P)) && gj_nn_aligned(emaster, 16) &&
                         gj_nn_aligned(em1, 16) && gj_nn_aligned(em2, 16) && gj_nn_aligned(esteps, 16) &&
                         gj_nn_aligned(egrads, 4 * sizeof(G));
    gj_nn_adam_lr cache = {0u, 0.0f};
    for (gj_u64 q = (gj_u64)blockIdx.x * blockDim.x + threadIdx.x; q < q_net + q_enc; q += stride) {
        if (q < q_net)
            gj_nn_adam_quad(q, n_net, vec_net, params, master, m1, m2, steps, grads, false, h.l2_reg, h, cache);
        else
            gj_nn_adam_quad(q - q_net, n_enc, vec_enc, eparams, emaster, em1, em2, esteps, egrads, true, 0.0f, h,
                            cache);
    }
}

// p[0 .. n) = 0 (32-bit words): gradients before a backward pass that overwrites them.
GJ_INLINE void gj_nn_zero_kernel(gj_u64 n, gj_u32* __restrict__ p) {
    for (gj_u64 i = (gj_u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (gj_u64)gridDim.x * blockDim.x) p[i] = 0u;
}

// The end of a backward pass that delivers fp32 gradients (gj_network_pass_desc's
// dL_dencoding_params_fp32 and unscale_gradients, docs/networks.md §8): out[0 .. n16) set
// to (or, accumulate, increased by) factor times the fp16 sums in sums, then a, b and c
// (n_a, n_b, n_c floats, fp32 gradients written by the kernels before) multiplied by factor
// in place. One pass over each array; four fp16 sums a thread at a time (8-byte loads,
// 16-byte stores) where out is 16-byte aligned and sums 8-byte aligned.
GJ_INLINE void gj_nn_finish_scale(gj_u64 n, float* __restrict__ p, float factor, gj_u64 first, gj_u64 stride) {
    for (gj_u64 i = first; i < n; i += stride) p[i] *= factor;
}

GJ_INLINE float gj_nn_finish_value(float old, gj_u16 sum, float factor, bool accumulate) {
    const float v = factor * gj_half_to_float(sum);
    return accumulate ? old + v : v;
}

GJ_INLINE void gj_nn_finish_kernel(gj_u64 n16, const gj_u16* __restrict__ sums, float* __restrict__ out,
                                   gj_u32 accumulate, gj_u64 n_a, float* __restrict__ a, gj_u64 n_b,
                                   float* __restrict__ b, gj_u64 n_c, float* __restrict__ c, float factor) {
    const gj_u64 first = (gj_u64)blockIdx.x * blockDim.x + threadIdx.x, stride = (gj_u64)gridDim.x * blockDim.x;
    const bool acc = accumulate != 0;
    gj_u64 done = 0;
    if (((gj_u64)out & 15) == 0 && ((gj_u64)sums & 7) == 0) { // aligned: whole groups of four
        const gj_u64 quads = n16 / 4;
        for (gj_u64 q = first; q < quads; q += stride) {
            const gj_u32x2 h = ((const gj_u32x2*)sums)[q];
            gj_u32x4* o = (gj_u32x4*)out + q;
            float old[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            if (acc) {
                const gj_u32x4 w = *o;
                old[0] = __uint_as_float(w.x), old[1] = __uint_as_float(w.y);
                old[2] = __uint_as_float(w.z), old[3] = __uint_as_float(w.w);
            }
            gj_u32x4 r;
            r.x = __float_as_uint(gj_nn_finish_value(old[0], (gj_u16)(h.x & 0xffffu), factor, acc));
            r.y = __float_as_uint(gj_nn_finish_value(old[1], (gj_u16)(h.x >> 16), factor, acc));
            r.z = __float_as_uint(gj_nn_finish_value(old[2], (gj_u16)(h.y & 0xffffu), factor, acc));
            r.w = __float_as_uint(gj_nn_finish_value(old[3], (gj_u16)(h.y >> 16), factor, acc));
            *o = r;
        }
        done = quads * 4;
    }
    for (gj_u64 i = done + first; i < n16; i += stride) out[i] = gj_nn_finish_value(acc ? out[i] : 0.0f, sums[i], factor, acc);
    gj_nn_finish_scale(n_a, a, factor, first, stride);
    gj_nn_finish_scale(n_b, b, factor, first, stride);
    gj_nn_finish_scale(n_c, c, factor, first, stride);
}

#endif // GJ_NETWORK_KERNELS_CUH
