// ---------------------------------------------------------------------------
// gridjit: kernel bodies for the generated __global__ wrappers.
//
// Specialised by the encoding's configuration struct C (see grid_level.cuh; also
// C::L, C::N_OUT, C::N_OUT_PADDED, C::BLOCK, C::PPT, C::LEVEL_MAJOR, and C::MODES /
// C::SMALL_MODES: bit m set when some level / some small level has index mode m) and
// by its level table LV, whose LV::at(level) is the level's gj_level row (constant
// memory). The per-level code is instantiated once per index mode present, not once
// per level: gj_with_mode picks the instance for a level at run time (a uniform branch).
//
// Thread t of block b handles points b * BLOCK * PPT + t + p * BLOCK, p < PPT
// (consecutive threads, consecutive points: coalesced inputs and outputs).
// Level-major kernels take one level per block (blockIdx.y), so few levels' tables are hot
// in the caches at a time; their _rows forms take a group of args.levels_per_thread
// consecutive levels from blockIdx.y: the backward's threads walk the group's levels for
// their points, the forward's may split them across the block's threads
// (gj_forward_groups).
// Point-major kernels walk all levels per point.
// ---------------------------------------------------------------------------
#ifndef GJ_KERNELS_CUH
#define GJ_KERNELS_CUH

template <class C>
GJ_INLINE void gj_load_point(const float* x, gj_u64 i, gj_u64 stride_point, gj_u64 stride_dim, float (&out)[C::D]) {
#pragma unroll
    for (int d = 0; d < C::D; ++d) out[d] = x[i * stride_point + (gj_u64)d * stride_dim];
}

GJ_INLINE float gj_point_max_level(const float* per_point, float scalar, gj_u64 i) {
    return per_point ? per_point[i] : scalar;
}

template <class C>
GJ_INLINE gj_u64 gj_block_first_point() {
    return (gj_u64)blockIdx.x * (gj_u64)(C::BLOCK * C::PPT);
}

template <class C>
GJ_INLINE gj_u64 gj_first_point() {
    return gj_block_first_point<C>() + threadIdx.x;
}

// body(i) for each of this thread's PPT points below n.
template <class C, class Body>
GJ_INLINE void gj_for_each_point(gj_u64 n, Body&& body) {
    const gj_u64 first = gj_first_point<C>();
#pragma unroll
    for (int p = 0; p < C::PPT; ++p) {
        const gj_u64 i = first + (gj_u64)p * C::BLOCK;
        if (i >= n) return;
#ifdef GJ_EMULATED
        gj_emu_next_point(); // the CPU emulation's warp collectives meet per point (tests/emulated/)
#endif
        body(i);
    }
}

// Element (point i, component k) of a strided param_t array, rounded once.
template <class C>
GJ_INLINE void gj_store_element(void* base, gj_u64 stride_point, gj_u64 stride_k, gj_u64 i, gj_u32 k, float value) {
    ((typename C::param_t*)base)[i * stride_point + (gj_u64)k * stride_k] = gj_from_float<typename C::param_t>(value);
}

// The padding columns N_OUT .. N_OUT_PADDED - 1 of point i are 0.
template <class C>
GJ_INLINE void gj_store_padding(void* base, gj_u64 stride_point, gj_u64 stride_k, gj_u64 i) {
#pragma unroll
    for (int k = C::N_OUT; k < C::N_OUT_PADDED; ++k) gj_store_element<C>(base, stride_point, stride_k, i, k, 0.0f);
}

// The D floats of point i of a strided fp32 array (dL/dx).
template <class C>
GJ_INLINE void gj_store_point(float* base, gj_u64 stride_point, gj_u64 stride_dim, gj_u64 i, const float (&v)[C::D]) {
#pragma unroll
    for (int d = 0; d < C::D; ++d) base[i * stride_point + (gj_u64)d * stride_dim] = v[d];
}

// ---- point-major rows staged in shared memory ----------------------------------------
// Level-major kernels whose level group is whole 32-bit words of a row (args.stage): a
// block's points keep the group's outputs (or dL/dy values) in shared memory, rows
// `stride` words apart (odd, so that threads storing the same word of their rows hit
// different banks), and the block moves them between shared memory and the
// point-major rows with coalesced word copies: a warp writes whole sectors where each
// thread alone would write a few bytes of 32 different rows.
GJ_INLINE gj_u32* gj_stage_memory() {
    extern __shared__ gj_u32 gj_stage_words[];
    return gj_stage_words;
}

template <class C>
struct gj_stage {
    typedef typename C::param_t T;
    gj_u32* words_base; // the block's dynamic shared memory
    gj_u32 stride;      // words from one staged row to the next: a full group's words, made odd
    gj_u64 first;       // the block's first point
    gj_u32 points;      // the block's points
    // The block's points as gj_for_each_point maps them (BLOCK x PPT from gj_block_first_point).
    GJ_INLINE explicit gj_stage(gj_u32 levels_per_thread)
        : gj_stage(levels_per_thread, gj_block_first_point<C>(), C::BLOCK * C::PPT) {}
    GJ_INLINE gj_stage(gj_u32 levels_per_thread, gj_u64 first_point, gj_u32 block_points)
        : words_base(gj_stage_memory()), stride((levels_per_thread * C::F * (gj_u32)sizeof(T) / 4u) | 1u),
          first(first_point), points(block_points) {}
    // The staged row of point i (of this block).
    GJ_INLINE T* row(gj_u64 i) const { return (T*)(words_base + (i - first) * stride); }
    // STORE: the first group_words words of the staged rows to words word_offset.. of the
    // point-major rows of `rows` (row_words words apart); else the other way. A short last
    // group of levels has fewer words than the stride provides for.
    template <bool STORE>
    GJ_INLINE void copy(const void* rows, gj_u64 n, gj_u64 row_words, gj_u32 word_offset, gj_u32 group_words) const {
        if (first >= n) return;
        const gj_u32 count = (gj_u32)min((gj_u64)points, n - first) * group_words;
        gj_u32* base = (gj_u32*)rows + first * row_words + word_offset;
        for (gj_u32 w = threadIdx.x; w < count; w += C::BLOCK) {
            const gj_u32 r = w / group_words, k = w - r * group_words;
            if constexpr (STORE) base[r * row_words + k] = words_base[r * stride + k];
            else words_base[r * stride + k] = base[r * row_words + k];
        }
    }
};

// The levels of level-major group blockIdx.y: [first, last).
template <class C>
struct gj_level_group {
    gj_u32 first, last;
    GJ_INLINE explicit gj_level_group(gj_u32 levels_per_thread)
        : first(blockIdx.y * levels_per_thread), last(min(first + levels_per_thread, (gj_u32)C::L)) {}
    // Where the group's values start in a point-major row, and how many words they fill
    // (whole words: the runtime stages only then).
    GJ_INLINE gj_u32 word_offset() const { return first * C::F * (gj_u32)sizeof(typename C::param_t) / 4u; }
    GJ_INLINE gj_u32 words() const { return (last - first) * C::F * (gj_u32)sizeof(typename C::param_t) / 4u; }
};

// ---- forward -----------------------------------------------------------------
template <class C, bool DYDX>
struct gj_forward_op {
    const gj_forward_args& a;
    gj_u64 i;
    float x[C::D];
    float limit;
    typename C::param_t* staged; // this point's staged row (level group starting at `first`), or null
    gj_u32 first;

    // Reads point i's input and level limit: before visiting its levels.
    GJ_INLINE void load_point() {
        gj_load_point<C>(a.x, i, a.x_stride_point, a.x_stride_dim, x);
        limit = gj_level_limit<C>(gj_point_max_level(a.max_level_per_point, a.max_level, i));
    }

    template <int MODE>
    GJ_INLINE void run(gj_u32 level, const gj_level& lv) {
        typedef typename C::param_t T;
        const T* grid = (const T*)a.params + lv.offset;
        float y[C::F];
        float dydx[C::F][C::D];
        if ((float)level < limit) {
            gj_level_forward<C, MODE, DYDX>(x, lv, grid, y, dydx);
        } else {
            gj_zero(y);
            gj_zero(dydx);
        }
        if (C::LEVEL_MAJOR && staged) {
#pragma unroll
            for (int f = 0; f < C::F; ++f) staged[(level - first) * C::F + f] = gj_from_float<T>(y[f]);
        } else if (a.y) {
#pragma unroll
            for (int f = 0; f < C::F; ++f) gj_store_element<C>(a.y, a.y_stride_point, a.y_stride_feature, i, level * C::F + f, y[f]);
        }
        if (DYDX && a.dy_dx) {
#pragma unroll
            for (int f = 0; f < C::F; ++f) {
                float* row = a.dy_dx + ((gj_u64)(level * C::F + f) * a.n + i) * C::D;
#pragma unroll
                for (int d = 0; d < C::D; ++d) row[d] = dydx[f][d];
            }
        }
        if (DYDX && a.dy_dx_compact) { // in units of the level's scale: fp16 cannot overflow
            const float unit = 1.0f / lv.scale;
#pragma unroll
            for (int f = 0; f < C::F; ++f) {
                gj_half* row = (gj_half*)a.dy_dx_compact + ((gj_u64)(level * C::F + f) * a.n + i) * C::D;
#pragma unroll
                for (int d = 0; d < C::D; ++d) row[d] = gj_from_float<gj_half>(dydx[f][d] * unit);
            }
        }
    }
};

// Visits level `level` of point op with the level's row of LV.
template <class C, class LV, class Op>
GJ_INLINE void gj_visit_level(gj_u32 level, Op& op) {
    const gj_level lv = LV::at(level);
    gj_with_mode<C::MODES>(lv.mode, [&](auto mode) { op.template run<decltype(mode)::value>(level, lv); });
}

// Every level of point op in turn (point-major order): a loop, not unrolled.
template <class C, class LV, class Op>
GJ_INLINE void gj_visit_levels(Op& op) {
#pragma unroll 1
    for (gj_u32 level = 0; level < C::L; ++level) gj_visit_level<C, LV>(level, op);
}

// The levels of a level group of point op, in turn.
template <class C, class LV, class Op>
GJ_INLINE void gj_visit_group(const gj_level_group<C>& group, Op& op) {
#pragma unroll 1
    for (gj_u32 level = group.first; level < group.last; ++level) gj_visit_level<C, LV>(level, op);
}

// Level-major, one level per block (blockIdx.y; L is the slice that writes the padding).
// Its own body, not a group of one: the group body measured up to 9 % slower with one
// level (C3).
template <class C, class LV, bool DYDX>
GJ_INLINE void gj_forward_level(const gj_forward_args& a) {
    gj_for_each_point<C>(a.n, [&](gj_u64 i) {
        if (blockIdx.y < C::L) {
            gj_forward_op<C, DYDX> op{a, i};
            op.load_point();
            gj_visit_level<C, LV>(blockIdx.y, op);
        } else if (a.y) {
            gj_store_padding<C>(a.y, a.y_stride_point, a.y_stride_feature, i);
        }
    });
}

// Point-major order, or level-major with one level per block (gj_forward_level).
template <class C, class LV, bool DYDX>
GJ_INLINE void gj_forward_points(const gj_forward_args& a) {
    if constexpr (C::LEVEL_MAJOR) {
        gj_forward_level<C, LV, DYDX>(a);
    } else {
        gj_for_each_point<C>(a.n, [&](gj_u64 i) {
            gj_forward_op<C, DYDX> op{a, i};
            op.load_point();
            gj_visit_levels<C, LV>(op);
            if (a.y) gj_store_padding<C>(a.y, a.y_stride_point, a.y_stride_feature, i);
        });
    }
}

// The block's staged values of level group `group` to the point-major rows of y, once
// every thread has staged its own.
template <class C>
GJ_INLINE void gj_write_staged_group(const gj_forward_args& a, const gj_stage<C>& stage, const gj_level_group<C>& group) {
    __syncthreads();
    stage.template copy<true>(a.y, a.n, a.y_stride_point * sizeof(typename C::param_t) / 4, group.word_offset(),
                              group.words());
}

// Level-major, a group of args.levels_per_thread (>= 2) levels per block (blockIdx.y),
// their values staged in shared memory when args.stage (point-major rows) and written as
// whole words. C::FORWARD_SPLIT (groups of up to four levels: an entry of at least 8
// bytes): the group's levels are split across the block's threads, BLOCK / group threads a
// level, each thread one level of its PPT points (the one-level kernel's work), a block
// lanes x PPT points; a thread walking four levels made C3's point-major forward 15 %
// slower than its feature-major one. Otherwise each thread walks the group's levels for
// its points: split eight ways, C1's blocks of 32 points were 4-9 % slower
// (docs/benchmarks.md §2). A kernel of its own (NAME_forward_rows): only callers with
// point-major rows longer than a sector need it, and beside the one-level body it cost
// that body registers and the program compile time (docs/runtime.md, "Programs").
template <class C, class LV, bool DYDX>
GJ_INLINE void gj_forward_groups(const gj_forward_args& a) {
    if constexpr (C::LEVEL_MAJOR && C::FORWARD_SPLIT) {
        const gj_level_group<C> group(a.levels_per_thread);
        const gj_u32 lanes = C::BLOCK / a.levels_per_thread; // the runtime keeps the group <= BLOCK
        const gj_u32 slot = threadIdx.x / lanes, lane = threadIdx.x - slot * lanes;
        const gj_u64 first = (gj_u64)blockIdx.x * lanes * C::PPT;
        if (group.first >= C::L) { // the slice that writes the padding columns
            if (a.y && slot == 0) {
#pragma unroll
                for (int p = 0; p < C::PPT; ++p) {
                    const gj_u64 i = first + lane + (gj_u64)p * lanes;
                    if (i < a.n) gj_store_padding<C>(a.y, a.y_stride_point, a.y_stride_feature, i);
                }
            }
            return;
        }
        const gj_stage<C> stage(a.levels_per_thread, first, lanes * C::PPT);
        const gj_u32 level = group.first + slot; // threads past the group (a short last group) only copy
        if (level < group.last) {
#pragma unroll
            for (int p = 0; p < C::PPT; ++p) {
                const gj_u64 i = first + lane + (gj_u64)p * lanes;
                if (i >= a.n) break;
#ifdef GJ_EMULATED
                gj_emu_next_point();
#endif
                gj_forward_op<C, DYDX> op{a, i};
                op.load_point();
                if (a.stage) op.staged = stage.row(i), op.first = group.first;
                gj_visit_level<C, LV>(level, op);
            }
        }
        if (a.stage) gj_write_staged_group<C>(a, stage, group);
    } else if constexpr (C::LEVEL_MAJOR) {
        const gj_level_group<C> group(a.levels_per_thread);
        if (group.first >= C::L) { // the slice that writes the padding columns
            if (a.y) gj_for_each_point<C>(a.n, [&](gj_u64 i) { gj_store_padding<C>(a.y, a.y_stride_point, a.y_stride_feature, i); });
            return;
        }
        const gj_stage<C> stage(a.levels_per_thread);
        gj_for_each_point<C>(a.n, [&](gj_u64 i) {
            gj_forward_op<C, DYDX> op{a, i};
            op.load_point();
            if (a.stage) op.staged = stage.row(i), op.first = group.first;
            gj_visit_group<C, LV>(group, op);
        });
        if (a.stage) gj_write_staged_group<C>(a, stage, group);
    }
}

// y alone, and y (if asked) with dy/dx: separate kernels, because the one with dy/dx
// holds F x D more registers and would cost the plain forward its occupancy.
template <class C, class LV>
GJ_INLINE void gj_forward_kernel(const gj_forward_args& a) {
    gj_forward_points<C, LV, false>(a);
}

template <class C, class LV>
GJ_INLINE void gj_forward_dydx_kernel(const gj_forward_args& a) {
    gj_forward_points<C, LV, true>(a);
}

template <class C, class LV>
GJ_INLINE void gj_forward_rows_kernel(const gj_forward_args& a) {
    gj_forward_groups<C, LV, false>(a);
}

template <class C, class LV>
GJ_INLINE void gj_forward_dydx_rows_kernel(const gj_forward_args& a) {
    gj_forward_groups<C, LV, true>(a);
}

// ---- backward ------------------------------------------------------------------
// dL/dy of point i at level `level`, widened to fp32.
template <class C>
GJ_INLINE void gj_load_dl_dy(const void* dl_dy, gj_u64 stride_point, gj_u64 stride_feature, gj_u64 i, gj_u32 level,
                             float (&g)[C::F]) {
    typedef typename C::param_t T;
#pragma unroll
    for (int f = 0; f < C::F; ++f) {
        g[f] = gj_to_float(((const T*)dl_dy)[i * stride_point + (gj_u64)(level * C::F + f) * stride_feature]);
    }
}

// Whether level-major backward leaves this level to NAME_backward_coarse.
template <class C>
GJ_INLINE bool gj_coarse_level(const gj_backward_args& a, const gj_level& lv) {
    return lv.small && a.coarse_blocks != 0 && a.dL_dparams != nullptr;
}

// Active level `level` of point i (at x): its dL/dx added to dldx (INPUT), its parameter
// gradients (PARAMS) into grad(), a G*: the level's part of dL_dparams, or (SHARED) a
// block's fp32 sums of the level in shared memory. The shape is deliberate: i by reference
// and the target asked for last keep the kernels' PTX as it was when each caller spelled
// this out (by value, or with the pointer computed first, the compiler orders some
// instructions differently).
// staged: the level's F values of dL/dy in the block's stage (level-group kernels reading
// point-major rows), else null (read from a.dL_dy).
template <class C, int MODE, bool PARAMS, bool INPUT, class G, bool SHARED = false, class Grad>
GJ_INLINE void gj_backward_at(const gj_backward_args& a, const gj_u64& i, gj_u32 level, const gj_level& lv,
                              const float (&x)[C::D], float (&dldx)[C::D], Grad&& grad,
                              const typename C::param_t* staged = nullptr) {
    typedef typename C::param_t T;
    float g[C::F];
    if (C::LEVEL_MAJOR && staged) {
#pragma unroll
        for (int f = 0; f < C::F; ++f) g[f] = gj_to_float(staged[f]);
    } else {
        gj_load_dl_dy<C>(a.dL_dy, a.dy_stride_point, a.dy_stride_feature, i, level, g);
    }
    const float u = C::STOCHASTIC && PARAMS ? gj_stochastic_sample(i, level, a.n) : 0.0f;
    gj_level_backward<C, MODE, PARAMS, INPUT, G, SHARED>(x, lv, (const T*)a.params + lv.offset, g, grad(), dldx, u,
                                                         a.aggregate_min);
}

template <class C, bool PARAMS, bool INPUT>
struct gj_backward_op {
    const gj_backward_args& a;
    gj_u64 i;
    float x[C::D];
    float limit;
    float dldx[C::D];
    const typename C::param_t* staged; // this point's staged dL/dy row (level group `first`), or null
    gj_u32 first;

    template <int MODE>
    GJ_INLINE void run(gj_u32 level, const gj_level& lv) {
        typedef typename C::grad_t G;
        if (!((float)level < limit)) return; // inactive levels get no gradient
        gj_backward_at<C, MODE, PARAMS, INPUT, G>(
            a, i, level, lv, x, dldx, [&] { return PARAMS ? (G*)a.dL_dparams + lv.offset : nullptr; },
            staged ? staged + (level - first) * C::F : nullptr);
    }
};

// The per-point state of the backward pass for point i: x, the level limit, dL/dx = 0.
template <class C, bool PARAMS, bool INPUT>
GJ_INLINE gj_backward_op<C, PARAMS, INPUT> gj_backward_point(const gj_backward_args& a, gj_u64 i) {
    gj_backward_op<C, PARAMS, INPUT> op{a, i};
    gj_load_point<C>(a.x, i, a.x_stride_point, a.x_stride_dim, op.x);
    op.limit = gj_level_limit<C>(gj_point_max_level(a.max_level_per_point, a.max_level, i));
    gj_zero(op.dldx);
    return op;
}

// Levels run in different blocks: their dL/dx contributions are summed atomically.
template <class C>
GJ_INLINE void gj_add_point_dldx(const gj_backward_args& a, gj_u64 i, const float (&dldx)[C::D]) {
#pragma unroll
    for (int d = 0; d < C::D; ++d) {
        if (dldx[d] != 0.0f) gj_atomic_add(a.dL_dx + i * a.dx_stride_point + (gj_u64)d * a.dx_stride_dim, dldx[d]);
    }
}

// Level-major: one level per block (ROWS false: blockIdx.y), or (ROWS) the group of
// args.levels_per_thread levels from blockIdx.y, in turn for each point, with dL/dy read
// from the block's stage when args.stage; the small levels are left to
// NAME_backward_coarse. dL/dx is summed over the levels before the atomics (levels in
// other blocks add theirs). The ROWS form is a kernel of its own (NAME_backward_rows), for
// the reasons of gj_forward_groups.
template <class C, class LV, bool PARAMS, bool INPUT, bool ROWS>
GJ_INLINE void gj_backward_levels(const gj_backward_args& a) {
    typedef typename C::param_t T;
    [[maybe_unused]] const gj_level_group<C> group(ROWS ? a.levels_per_thread : 1u);
    [[maybe_unused]] const gj_stage<C> stage(a.levels_per_thread);
    if constexpr (ROWS) {
        if (a.stage) {
            stage.template copy<false>(a.dL_dy, a.n, a.dy_stride_point * sizeof(T) / 4, group.word_offset(),
                                       group.words());
            __syncthreads();
        }
    }
    gj_for_each_point<C>(a.n, [&](gj_u64 i) {
        gj_backward_op<C, PARAMS, INPUT> op = gj_backward_point<C, PARAMS, INPUT>(a, i);
        if constexpr (ROWS) {
            if (a.stage) op.staged = stage.row(i), op.first = group.first;
#pragma unroll 1
            for (gj_u32 level = group.first; level < group.last; ++level) {
                if (!gj_coarse_level<C>(a, LV::at(level))) gj_visit_level<C, LV>(level, op);
            }
        } else {
            if (!gj_coarse_level<C>(a, LV::at(blockIdx.y))) gj_visit_level<C, LV>(blockIdx.y, op);
        }
        if constexpr (INPUT) gj_add_point_dldx<C>(a, i, op.dldx);
    });
}

template <class C, class LV, bool PARAMS, bool INPUT>
GJ_INLINE void gj_backward_points(const gj_backward_args& a) {
    if constexpr (C::LEVEL_MAJOR) {
        gj_backward_levels<C, LV, PARAMS, INPUT, false>(a);
    } else {
        gj_for_each_point<C>(a.n, [&](gj_u64 i) {
            gj_backward_op<C, PARAMS, INPUT> op = gj_backward_point<C, PARAMS, INPUT>(a, i);
            gj_visit_levels<C, LV>(op);
            if constexpr (INPUT) gj_store_point<C>(a.dL_dx, a.dx_stride_point, a.dx_stride_dim, i, op.dldx);
        });
    }
}

template <class C, class LV, bool PARAMS, bool INPUT>
GJ_INLINE void gj_backward_groups(const gj_backward_args& a) {
    if constexpr (C::LEVEL_MAJOR) gj_backward_levels<C, LV, PARAMS, INPUT, true>(a);
}

// dL/dparams, dL/dparams with dL/dx, dL/dx alone: one kernel each (each as lean in
// registers as its work allows; the runtime picks by the outputs asked for), and each in
// the two level-major forms.
template <class C, class LV>
GJ_INLINE void gj_backward_kernel(const gj_backward_args& a) {
    gj_backward_points<C, LV, true, false>(a);
}

template <class C, class LV>
GJ_INLINE void gj_backward_input_kernel(const gj_backward_args& a) {
    gj_backward_points<C, LV, true, true>(a);
}

template <class C, class LV>
GJ_INLINE void gj_backward_dx_kernel(const gj_backward_args& a) {
    gj_backward_points<C, LV, false, true>(a);
}

template <class C, class LV>
GJ_INLINE void gj_backward_rows_kernel(const gj_backward_args& a) {
    gj_backward_groups<C, LV, true, false>(a);
}

template <class C, class LV>
GJ_INLINE void gj_backward_input_rows_kernel(const gj_backward_args& a) {
    gj_backward_groups<C, LV, true, true>(a);
}

template <class C, class LV>
GJ_INLINE void gj_backward_dx_rows_kernel(const gj_backward_args& a) {
    gj_backward_groups<C, LV, false, true>(a);
}

// ---- backward, small levels: sums in shared memory ---------------------------------
// The small dense levels are where the global atomics contend (every point hits the
// same few thousand entries). Each of the coarse_blocks blocks sums its grid-stride share
// of the points in fp32 shared memory, then adds each non-zero sum to dL_dparams once.
// Instantiated for level-major units only: elsewhere no level is small (C::SMALL_MODES = 0).
template <class C, bool INPUT>
struct gj_backward_coarse_op {
    const gj_backward_args& a;
    float* sums;

    template <int MODE>
    GJ_INLINE void run(gj_u32 level, const gj_level& lv) {
        static_assert(C::LEVEL_MAJOR, "only level-major backward has small levels");
        const gj_u32 n_sums = lv.entries * C::F;
        for (gj_u32 k = threadIdx.x; k < n_sums; k += C::BLOCK) sums[k] = 0.0f;
        __syncthreads();
        const gj_u64 stride = (gj_u64)min(a.coarse_blocks, gridDim.x) * C::BLOCK;
        for (gj_u64 i = (gj_u64)blockIdx.x * C::BLOCK + threadIdx.x; i < a.n; i += stride) {
            gj_backward_op<C, true, INPUT> p = gj_backward_point<C, true, INPUT>(a, i);
            if (!((float)level < p.limit)) continue;
            gj_backward_at<C, MODE, true, INPUT, float, true>(a, i, level, lv, p.x, p.dldx, [&] { return sums; });
            if constexpr (INPUT) gj_add_point_dldx<C>(a, i, p.dldx);
        }
        __syncthreads();
        gj_add_block_sums(sums, (typename C::grad_t*)a.dL_dparams + lv.offset, n_sums, C::BLOCK);
    }
};

// Only the index modes of small levels are instantiated (C::SMALL_MODES).
template <class C, class LV, bool INPUT>
GJ_INLINE void gj_backward_coarse_level(const gj_backward_args& a, float* sums) {
    const gj_u32 level = blockIdx.y;
    const gj_level lv = LV::at(level);
    if (!lv.small) return;
    gj_backward_coarse_op<C, INPUT> op{a, sums};
    gj_with_mode<C::SMALL_MODES>(lv.mode, [&](auto mode) { op.template run<decltype(mode)::value>(level, lv); });
}

// The small levels of NAME_backward (dL/dparams) and of NAME_backward_input (with dL/dx).
template <class C, class LV, bool INPUT>
GJ_INLINE void gj_backward_coarse_body(const gj_backward_args& a) {
    extern __shared__ float gj_coarse_sums[];
    if (!a.dL_dparams || a.coarse_blocks == 0 || blockIdx.x >= a.coarse_blocks) return;
    gj_backward_coarse_level<C, LV, INPUT>(a, gj_coarse_sums);
}

template <class C, class LV>
GJ_INLINE void gj_backward_coarse_kernel(const gj_backward_args& a) {
    gj_backward_coarse_body<C, LV, false>(a);
}

template <class C, class LV>
GJ_INLINE void gj_backward_input_coarse_kernel(const gj_backward_args& a) {
    gj_backward_coarse_body<C, LV, true>(a);
}

// ---- backward of backward ----------------------------------------------------------
// Point-major: dL/dx sums over levels in registers. Which outputs are written is decided
// at run time (null pointers are skipped).
template <class C>
struct gj_backward_backward_op {
    const gj_backward_backward_args& a;
    gj_u64 i;
    float x[C::D];
    float H[C::D];
    float limit;
    float dldx[C::D];

    template <int MODE>
    GJ_INLINE void run(gj_u32 level, const gj_level& lv) {
        typedef typename C::param_t T;
        float ddldy[C::F];
        if ((float)level < limit) {
            float g[C::F];
            gj_load_dl_dy<C>(a.dL_dy, a.dy_stride_point, a.dy_stride_feature, i, level, g);
            typename C::grad_t* grad = a.dL_dparams ? (typename C::grad_t*)a.dL_dparams + lv.offset : nullptr;
            gj_level_backward_backward<C, MODE>(x, lv, (const T*)a.params + lv.offset, H, g, grad, ddldy, dldx,
                                                a.dL_ddLdy != nullptr, a.dL_dx != nullptr);
        } else {
            gj_zero(ddldy);
        }
        if (a.dL_ddLdy) {
#pragma unroll
            for (int f = 0; f < C::F; ++f) {
                gj_store_element<C>(a.dL_ddLdy, a.ddy_stride_point, a.ddy_stride_feature, i, level * C::F + f, ddldy[f]);
            }
        }
    }
};

template <class C, class LV>
GJ_INLINE void gj_backward_backward_kernel(const gj_backward_backward_args& a) {
    if (!a.dL_dparams && !a.dL_ddLdy && !a.dL_dx) return;
    gj_for_each_point<C>(a.n, [&](gj_u64 i) {
        gj_backward_backward_op<C> op{a, i};
        gj_load_point<C>(a.x, i, a.x_stride_point, a.x_stride_dim, op.x);
        gj_load_point<C>(a.dL_ddLdx, i, a.ddx_stride_point, a.ddx_stride_dim, op.H);
        op.limit = gj_level_limit<C>(gj_point_max_level(a.max_level_per_point, a.max_level, i));
        gj_zero(op.dldx);
        gj_visit_levels<C, LV>(op);
        // Padding columns are written as 0 (the reference writes a whole vector there, docs/design.md §8.2).
        if (a.dL_ddLdy) gj_store_padding<C>(a.dL_ddLdy, a.ddy_stride_point, a.ddy_stride_feature, i);
        if (a.dL_dx) gj_store_point<C>(a.dL_dx, a.dx_stride_point, a.dx_stride_dim, i, op.dldx);
    });
}

// ---- parameters -----------------------------------------------------------------------
template <class C>
GJ_INLINE void gj_init_params_kernel(const gj_init_args& a) {
    typedef typename C::param_t T;
    const gj_u64 i = (gj_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n) return;
    gj_pcg32 rng(a.seed, 1u);
    rng.advance(i);
    const float value = (rng.next_float() * 2.0f - 1.0f) * 1e-4f * a.scale;
    ((T*)a.params)[i] = gj_from_float<T>(value);
    if (a.params_fp32) a.params_fp32[i] = value;
}

template <class C>
GJ_INLINE void gj_cast_gradients_kernel(const gj_cast_args& a) {
    typedef typename C::param_t T;
    const gj_u64 i = (gj_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n) return;
    T* dst = (T*)a.dst;
    const float previous = a.accumulate ? gj_to_float(dst[i]) : 0.0f;
    dst[i] = gj_from_float<T>(previous + a.src[i]);
}

// ---- dL/dx from the forward's dy/dx -------------------------------------------------
// A streaming pass for callers whose forward pass wrote dy/dx anyway (training with dL/dx,
// as tiny-cuda-nn's): D * N_OUT floats and N_OUT dL/dy values read once per point, instead
// of the backward pass gathering every level's corners again. Grid-stride, so that any n
// fits the grid the runtime picks.
// COMPACT: dy/dx in gj_forward_args.dy_dx_compact's form (fp16 in units of the level's scale:
// output k's values times LV::at(k / F).scale), else plain fp32.
template <class C, class LV, bool COMPACT>
GJ_INLINE void gj_dx_from_dydx_points(const gj_dx_from_dydx_args& a) {
    typedef typename C::param_t T;
    const T* dl_dy = (const T*)a.dL_dy;
    const gj_u64 per_output = a.n * C::D; // values from output k's dy/dx to output k + 1's
    for (gj_u64 i = (gj_u64)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += (gj_u64)gridDim.x * blockDim.x) {
        float sum[C::D];
        gj_zero(sum);
#pragma unroll 8
        for (int k = 0; k < C::N_OUT; ++k) {
            float g = gj_to_float(dl_dy[i * a.dy_stride_point + (gj_u64)k * a.dy_stride_feature]);
            const gj_u64 e = (gj_u64)k * per_output + i * C::D;
            if constexpr (COMPACT) g *= LV::at((gj_u32)k / C::F).scale;
#pragma unroll
            for (int d = 0; d < C::D; ++d) {
                sum[d] += g * (COMPACT ? gj_to_float(((const gj_half*)a.dy_dx_compact)[e + d]) : a.dy_dx[e + d]);
            }
        }
        gj_store_point<C>(a.dL_dx, a.dx_stride_point, a.dx_stride_dim, i, sum);
    }
}

template <class C, class LV>
GJ_INLINE void gj_dx_from_dydx_kernel(const gj_dx_from_dydx_args& a) {
    if (a.dy_dx) gj_dx_from_dydx_points<C, LV, false>(a);
    else gj_dx_from_dydx_points<C, LV, true>(a);
}

#endif // GJ_KERNELS_CUH
