// The network templates (templates/network.cuh, network_kernels.cuh) run on the CPU, one
// thread per GPU thread, with ldmatrix and mma.sync emulated from the PTX ISA's fragment
// tables (cuda_host.cpp): inference, forward for training and backward (dL/dparams, dL/dx)
// against the double-precision reference (tools/reference/mlp_reference.c) for shapes that
// cover every code path: 1 to 4 hidden layers and none, every width, outputs wider than one
// chunk of columns, activations that keep
// their output and ones that keep z, padding with ones and with zeros, batches that are not
// a multiple of 32, several tiles per warp, weights staged or not, gradients summed per block
// or not. No GPU needed: this checks the fragment and index arithmetic the GPU tests check
// again on hardware. A model's backward kernel with dL/dinput (templates/model_kernels.cuh:
// the network's backward writing dL/d(features) feature-major, in fp16 or fp32) runs on the
// same shapes, its dL/d(features) against the reference's dL/dx. The fused training step
// kernels (a network's, a model's network kernel over its features) against the passes
// apart; a model's inference over its features against the forward; the loss kernel, the finishing pass and Adam (every path of its quads) against host
// rules.
//
// Run as: test_network_emulated SHARD N_SHARDS (ctest registers 4 shards): the cases are dealt
// round-robin, so that ctest -j spreads them over the cores (all of them one after the other
// take some nine minutes under AddressSanitizer on CI's 2 cores). No arguments: every case
// (gj_test_shard_args: shard 0 of 1).
#include "cuda_host.h"

#include "../../templates/network.cuh"
#include "../../templates/network_kernels.cuh"
#include "../../templates/model_kernels.cuh"

extern "C" {
#include "test_env.h"
#include "codegen/network_plan.h"
#include "mlp_reference.h"
#include "model/network.h"
}

#include <cstdio>
#include <cstdlib>
#include <vector>

// A configuration as the generated NAME_config states it; the plan's derived numbers are
// computed here and compared with src/codegen/network_plan.c's below.
// SUMS_: SUM_REGISTERS, the weight-gradient sums kept in registers across a block's rounds
// (the generated rule's 24 by default: with WARPS at most 4, the last and first layers kept).
template <int IN_, int W_, int H_, int OUT_, int ACT_, int OUT_ACT_, bool ONES, int WARPS_, bool STAGE_, bool GRADS_,
          bool STAGE_BWD_ = STAGE_, int FORWARD_WARPS_ = WARPS_, int SUMS_ = 24>
struct Cfg {
    static constexpr int IN = IN_, IN_P = (IN_ + 15) / 16 * 16, W = W_, OUT = OUT_, OUT_P = (OUT_ + 15) / 16 * 16;
    static constexpr int NL = H_ + 1, ACT = ACT_, OUT_ACT = OUT_ACT_;
    static constexpr float INPUT_PADDING = ONES ? 1.0f : 0.0f;
    static constexpr int WIDEST = (IN_P > OUT_P ? IN_P : OUT_P) > (H_ ? W_ : 0) ? (IN_P > OUT_P ? IN_P : OUT_P) : W_;
    static constexpr int S = WIDEST + 8;
    static constexpr gj_u64 SCRATCH_HALVES = 64ull * S;
    static constexpr gj_u64 FORWARD_SCRATCH_HALVES = (H_ == 0 && OUT_P > 128) ? SCRATCH_HALVES : SCRATCH_HALVES / 2;
    static constexpr gj_u64 CTX_HALVES = 32ull * (IN_P + (gj_u64)H_ * W_ + OUT_P);
    static constexpr gj_u64 N_PARAMS =
        H_ == 0 ? (gj_u64)IN_P * OUT_P : (gj_u64)IN_P * W_ + (gj_u64)(H_ - 1) * W_ * W_ + (gj_u64)W_ * OUT_P;
    static constexpr int WARPS = WARPS_, FORWARD_WARPS = FORWARD_WARPS_;
    static constexpr bool STAGE = STAGE_, STAGE_BWD = STAGE_BWD_, SMEM_GRADS = GRADS_;
    static constexpr int SUM_REGISTERS = SUMS_;
};

// The inference kernel's shape in a model's wide block (src/codegen/network_plan.c): 16 warps
// a block, rows as wide as the padded input or output (not the hidden layers'), one m-tile at a
// time; for outputs of at most one chunk of columns.
template <class C> struct WideInference : C {
    static constexpr int FORWARD_WARPS = 16;
    static constexpr int S = (C::IN_P > C::OUT_P ? C::IN_P : C::OUT_P) + 8;
    static constexpr gj_u64 FORWARD_SCRATCH_HALVES = 32ull * S;
    static constexpr int FORWARD_M_TILES = 1;
};

// The same configuration with the pass kernels recomputing the hidden layers' outputs in the
// backward from the input rows the forward keeps (network.cuh, gj_nn_recomputes).
template <class C> struct Recomputing : C {
    static constexpr bool RECOMPUTE = true;
};
template <class C> constexpr bool can_recompute() {
    return !gj_nn_keeps_z<C::ACT>() && !gj_nn_derivative_reads_kept<C::OUT_ACT>();
}

static const char* const names[] = {"None", "ReLU", "LeakyReLU", "Exponential", "Sine", "Sigmoid", "Squareplus",
                                    "Softplus", "Tanh", "SiLU"};

static double uniform(unsigned& state) {
    state = state * 1664525u + 1013904223u;
    return (state >> 8) * (1.0 / 16777216.0) * 2.0 - 1.0;
}

static double round_half(double v) { return gj_half_to_float(gj_float_to_half_bits((float)v)); }

// max |a - b| over max(|b|, floor): the error relative to the array's scale.
static double rel_error(const std::vector<double>& a, const std::vector<double>& b, double floor) {
    double err = 0.0, scale = floor;
    for (size_t i = 0; i < a.size(); ++i) {
        if (!std::isfinite(a[i])) return INFINITY;
        err = std::fmax(err, std::fabs(a[i] - b[i]));
        scale = std::fmax(scale, std::fabs(b[i]));
    }
    return err / scale;
}

static int failures = 0;
static int shard = 0, n_shards = 1, next_case = 0;

// Whether the next case in main's order is this shard's.
static bool mine() {
    return next_case++ % n_shards == shard;
}

// How many of launch(y, 1)'s fp16 outputs (y_half: n_values of them) differ from want's floats as
// fp16 bits, in buffers that start 0, 1 and 2 halves past a 16-byte boundary, plus any write past
// the end. The kernels round every output to fp16 before either store, so the two must agree bit
// for bit.
template <class Launch> static int fp16_outputs_differ(const std::vector<float>& want, Launch launch) {
    const size_t n_values = want.size();
    int differ = 0;
    for (int off = 0; off < 3; ++off) {
        std::vector<gj_u32x4> storage(n_values / 8 + 2);
        gj_u16* y = (gj_u16*)storage.data() + off;
        for (size_t e = 0; e < n_values + 1; ++e) y[e] = 0xFFFFu;
        launch((void*)y, 1u);
        for (size_t e = 0; e < n_values; ++e) differ += y[e] != gj_float_to_half_bits(want[e]);
        differ += y[n_values] != 0xFFFFu;
    }
    return differ;
}

// The same for float outputs (launch(y, 0)) from 16-byte aligned and one float past it: want's
// bits exactly.
template <class Launch> static int float_outputs_differ(const std::vector<float>& want, Launch launch) {
    const size_t n_values = want.size();
    int differ = 0;
    for (int off = 0; off < 2; ++off) {
        std::vector<gj_u32x4> storage(n_values / 4 + 2);
        float* y = (float*)storage.data() + off;
        for (size_t e = 0; e < n_values + 1; ++e) y[e] = -7.0f;
        launch((void*)y, 0u);
        differ += std::memcmp(y, want.data(), n_values * sizeof(float)) != 0;
        differ += y[n_values] != -7.0f;
    }
    return differ;
}

// report() for a count of differences from the float outputs (values, arrays or ends past them).
static void report_outputs(const char* what, const char* shape, int differ) {
    if (differ) {
        std::printf("FAIL %s %s: %d differences from the float outputs\n", what, shape, differ);
        ++failures;
    } else {
        std::printf("ok   %s %s\n", what, shape);
    }
}

static void report(const char* what, const char* shape, double err, double tol) {
    const bool ok = err <= tol;
    std::printf("%s %-14s %s: relative error %.3g (tolerance %.3g)\n", ok ? "PASS" : "FAIL", what, shape, err, tol);
    failures += !ok;
}

// The pass kernels recomputing (Recomputing<C>) against the same kernels keeping the whole
// context, whose results run() has checked against the reference: the forward's outputs and
// kept input rows, dL/dx and a model's dL/d(features) equal bit for bit (the backward works with
// the very values the forward kept), dL/dparams equal up to the order of the atomic additions
// (and bit for bit with one warp, whose additions come in one order), and the plan's context a
// tile the templates'.
template <class C>
static void recompute_case(const char* shape, unsigned n, unsigned grid, const std::vector<float>& x,
                           const std::vector<float>& dy, const gj_half* params, const std::vector<gj_u16>& ctx,
                           const std::vector<float>& y_fwd, const std::vector<float>& dx,
                           const std::vector<double>& dw_ref, const std::vector<gj_half>& df_half, double tol) {
    typedef Recomputing<C> R;
    constexpr gj_u64 HALVES = gj_nn_pass_ctx_halves<R>();
    static_assert(HALVES == 32ull * C::IN_P && gj_nn_pass_ctx_halves<C>() == C::CTX_HALVES, "the tile's context");
    const gj_u64 tiles = (n + 31) / 32;
    std::vector<gj_u16> kept(tiles * HALVES, 0xFFFFu);
    std::vector<float> y((size_t)n * C::OUT, NAN), dx_r((size_t)n * C::IN, NAN), dw(C::N_PARAMS, 0.0f);
    gj_emulate_launch(grid, 32 * R::FORWARD_WARPS,
                      [&] { gj_nn_forward_kernel<R>(n, x.data(), y.data(), params, kept.data()); });
    gj_emulate_launch(grid, 32 * R::WARPS, [&] {
        gj_nn_backward_kernel<R, true>(n, dy.data(), 1.0f, params, kept.data(), dw.data(), dx_r.data());
    });
    std::vector<gj_half> df((size_t)n * C::IN, gj_half{0x7E00u});
    std::vector<float> dw_model(C::N_PARAMS, 0.0f);
    gj_emulate_launch(grid, 32 * R::WARPS, [&] {
        gj_model_backward_features_kernel<R>(n, dy.data(), 1.0f, params, kept.data(), dw_model.data(), df.data());
    });
    int differ = 0;
    for (size_t i = 0; i < y.size(); ++i) differ += std::memcmp(&y[i], &y_fwd[i], sizeof(float)) != 0;
    for (gj_u64 t = 0; t < tiles; ++t)
        differ += std::memcmp(&kept[t * HALVES], &ctx[t * C::CTX_HALVES], HALVES * sizeof(gj_u16)) != 0;
    if constexpr (!gj_nn_out_chunked<C>()) {
        // A model's forward recomputing runs in the inference kernel's wide block (rows as wide
        // as the input or output, one m-tile at a time): the same outputs and kept rows.
        typedef Recomputing<WideInference<C>> RW;
        static_assert(gj_nn_pass_ctx_halves<RW>() == HALVES, "the wide block keeps the same rows");
        std::vector<gj_u16> kept_wide(tiles * HALVES, 0xFFFFu);
        std::vector<float> y_wide((size_t)n * C::OUT, NAN);
        gj_emulate_launch(grid, 32 * RW::FORWARD_WARPS,
                          [&] { gj_nn_forward_kernel<RW>(n, x.data(), y_wide.data(), params, kept_wide.data()); });
        differ += std::memcmp(y_wide.data(), y.data(), y.size() * sizeof(float)) != 0;
        differ += kept_wide != kept;
    }
    for (size_t i = 0; i < dx.size(); ++i) differ += std::memcmp(&dx_r[i], &dx[i], sizeof(float)) != 0;
    for (size_t i = 0; i < df.size(); ++i) differ += df[i].bits != df_half[i].bits;
    char what[320];
    std::snprintf(what, sizeof what, "%s, recomputing", shape);
    if (differ) {
        std::printf("FAIL %s: %d outputs, kept rows, dL/dx or dL/df differ from the kept context's\n", what, differ);
        ++failures;
    } else {
        std::printf("PASS %s: outputs, kept rows, dL/dx and dL/df equal the kept context's\n", what);
    }
    std::vector<double> g(dw.begin(), dw.end()), gm(dw_model.begin(), dw_model.end());
    report("dL/dparams", what, rel_error(g, dw_ref, 1e-3), 2 * tol);
    report("model dL/dparams", what, rel_error(gm, dw_ref, 1e-3), 2 * tol);
}

template <class C> static void run(unsigned n, unsigned grid, double tol) {
    char shape[256], json[512];
    std::snprintf(shape, sizeof shape, "%d-%dx%d-%d %s/%s pad %g, %u points, %d/%d warps%s%s", C::IN, C::W, C::NL - 1, C::OUT,
                  names[C::ACT], names[C::OUT_ACT], C::INPUT_PADDING, n, C::FORWARD_WARPS, C::WARPS,
                  C::STAGE ? (C::STAGE_BWD ? ", staged" : ", staged forward only") : "",
                  C::SMEM_GRADS ? ", block sums" : "");
    std::snprintf(json, sizeof json,
                  "{\"otype\": \"%s\", \"n_neurons\": %d, \"n_hidden_layers\": %d, \"activation\": \"%s\", "
                  "\"output_activation\": \"%s\"}",
                  C::NL == 1 ? "CutlassMLP" : "FullyFusedMLP", C::W, C::NL - 1, names[C::ACT], names[C::OUT_ACT]);
    // The library's layout and plan agree with the numbers the templates were given.
    gj_network* net = nullptr;
    char err[512];
    if (gj__network_make_ex(json, C::IN, C::OUT, 0, nullptr, &net, err, sizeof err) != GJ_OK) {
        std::printf("FAIL %s: %s\n", shape, err);
        ++failures;
        return;
    }
    gj__network_plan plan;
    gj__network_plan_make(&net->layout, nullptr, GJ__NETWORK_PLAN_PORTABLE, &plan);
    if (plan.stride != (unsigned)C::S || plan.scratch_halves != C::SCRATCH_HALVES ||
        plan.forward_scratch_halves != C::FORWARD_SCRATCH_HALVES || plan.ctx_halves != C::CTX_HALVES ||
        net->layout.n_params != C::N_PARAMS) {
        std::printf("FAIL plan %s: stride %u, scratch %llu, forward scratch %llu, ctx %llu, params %llu\n", shape,
                    plan.stride, (unsigned long long)plan.scratch_halves,
                    (unsigned long long)plan.forward_scratch_halves, (unsigned long long)plan.ctx_halves,
                    (unsigned long long)net->layout.n_params);
        ++failures;
    }
    // The plan of a recomputing module (the hint 1) states the context the templates index; the
    // hint -1 keeps it all; by default the plan recomputes where allowed, at most 64 wide and
    // with the backward's weights staged in shared memory.
    gj__network_plan_hints hints = {};
    hints.recompute = 1;
    gj__network_plan rplan, kplan;
    gj__network_plan_make(&net->layout, &hints, GJ__NETWORK_PLAN_PORTABLE, &rplan);
    hints.recompute = -1;
    gj__network_plan_make(&net->layout, &hints, GJ__NETWORK_PLAN_PORTABLE, &kplan);
    const gj_u64 recomputing_ctx = can_recompute<C>() ? 32ull * C::IN_P : C::CTX_HALVES; // recompute_case checks the templates'
    const int by_default = can_recompute<C>() && (C::NL == 1 || C::W <= 64) && // no hidden layer: nothing wide
                           plan.stage_backward;
    if (rplan.recompute != (int)can_recompute<C>() || rplan.pass_ctx_halves != recomputing_ctx || kplan.recompute ||
        kplan.pass_ctx_halves != C::CTX_HALVES || plan.recompute != by_default ||
        plan.pass_ctx_halves != (by_default ? recomputing_ctx : C::CTX_HALVES)) {
        std::printf("FAIL plan %s: recompute %d, its context %llu; keeping %d, %llu; by default %d, %llu\n", shape,
                    rplan.recompute, (unsigned long long)rplan.pass_ctx_halves, kplan.recompute,
                    (unsigned long long)kplan.pass_ctx_halves, plan.recompute, (unsigned long long)plan.pass_ctx_halves);
        ++failures;
    }
    gj_ref_mlp ref;
    gj_ref_mlp_make(&ref, C::IN, C::W, C::NL - 1, C::OUT, (gj_activation)C::ACT, (gj_activation)C::OUT_ACT,
                    C::INPUT_PADDING);
    ref.fp16_hidden = true; // the kernels store h as fp16 between layers
    gj_network_destroy(net);

    // Weights: tiny-cuda-nn's initialisation, rounded to fp16 (the reference takes the rounded values).
    std::vector<float> wf(C::N_PARAMS);
    gj_ref_pcg32 rng;
    gj_ref_pcg32_seed(&rng, 1337, 1);
    gj_ref_mlp_init_params(&ref, &rng, 1.0f, wf.data());
    std::vector<gj_half> w(C::N_PARAMS);
    std::vector<double> wd(C::N_PARAMS);
    for (size_t i = 0; i < wf.size(); ++i) {
        w[i].bits = gj_float_to_half_bits(wf[i]);
        wd[i] = gj_half_to_float(w[i].bits);
    }
    unsigned state = 12345u + C::IN * 7u + C::W;
    std::vector<float> x((size_t)n * C::IN), dy((size_t)n * C::OUT);
    for (float& v : x) v = (float)round_half(uniform(state));
    for (float& v : dy) v = (float)uniform(state);

    // The reference.
    std::vector<double> y_ref((size_t)n * C::OUT), dx_ref((size_t)n * C::IN), dw_ref(C::N_PARAMS, 0.0);
    std::vector<double> xi(C::IN), yi(C::OUT_P), dyi(C::OUT_P, 0.0), dxi(C::IN);
    for (unsigned i = 0; i < n; ++i) {
        for (int c = 0; c < C::IN; ++c) xi[c] = x[(size_t)i * C::IN + c];
        gj_ref_mlp_forward(&ref, wd.data(), xi.data(), yi.data());
        for (int c = 0; c < C::OUT; ++c) {
            y_ref[(size_t)i * C::OUT + c] = yi[c];
            dyi[c] = dy[(size_t)i * C::OUT + c];
        }
        gj_ref_mlp_backward(&ref, wd.data(), xi.data(), dyi.data(), dw_ref.data(), dxi.data());
        for (int c = 0; c < C::IN; ++c) dx_ref[(size_t)i * C::IN + c] = dxi[c];
    }

    // The kernels.
    const unsigned block = 32 * C::WARPS, forward_block = 32 * C::FORWARD_WARPS;
    const gj_u64 tiles = (n + 31) / 32;
    std::vector<float> y_inf((size_t)n * C::OUT, NAN), y_fwd((size_t)n * C::OUT, NAN), dx((size_t)n * C::IN, NAN);
    std::vector<float> dw(C::N_PARAMS, 0.0f);
    std::vector<gj_u16> ctx(tiles * C::CTX_HALVES, 0xFFFFu);
    const gj_half* params = w.data();
    gj_emulate_launch(grid, forward_block, [&] { gj_nn_forward_kernel<C>(n, x.data(), y_inf.data(), params, nullptr); });
    gj_emulate_launch(grid, forward_block,
                      [&] { gj_nn_forward_kernel<C>(n, x.data(), y_fwd.data(), params, ctx.data()); });
    gj_emulate_launch(grid, block,
                      [&] { gj_nn_backward_kernel<C, true>(n, dy.data(), 1.0f, params, ctx.data(), dw.data(), dx.data()); });

    std::vector<double> a(y_inf.begin(), y_inf.end()), b(y_fwd.begin(), y_fwd.end());
    report("inference", shape, rel_error(a, y_ref, 1e-3), tol);
    const auto inference_into = [&](void* y, gj_u32 half) {
        gj_emulate_launch(grid, forward_block, [&] { gj_nn_forward_kernel<C>(n, x.data(), y, params, nullptr, half); });
    };
    report_outputs("inference into fp16 outputs", shape, fp16_outputs_differ(y_inf, inference_into));
    report_outputs("inference into floats, aligned and not", shape, float_outputs_differ(y_inf, inference_into));
    if constexpr (!gj_nn_out_chunked<C>()) {
        typedef WideInference<C> WC;
        static_assert(gj_nn_forward_m_tiles<WC>::value == 1, "the wide block's one m-tile");
        std::vector<float> y_wide((size_t)n * C::OUT, NAN);
        gj_emulate_launch(grid, 32 * WC::FORWARD_WARPS,
                          [&] { gj_nn_forward_kernel<WC>(n, x.data(), y_wide.data(), params, nullptr); });
        std::vector<double> yw(y_wide.begin(), y_wide.end());
        report("inference, wide block", shape, rel_error(yw, y_ref, 1e-3), tol);
    }
    report("forward", shape, rel_error(b, y_ref, 1e-3), tol);
    std::vector<double> g(dw.begin(), dw.end()), d(dx.begin(), dx.end());
    report("dL/dparams", shape, rel_error(g, dw_ref, 1e-3), 2 * tol);
    report("dL/dx", shape, rel_error(d, dx_ref, 1e-3), 2 * tol);
    // dL/dparams alone (no dL/dx): the other instantiation, into gradients 4 bytes past a 16-byte
    // boundary (as a network's part of a larger buffer may be), where a block that adds to global
    // memory takes its float atomics instead of the 16-byte reductions.
    std::vector<float> dw_odd(C::N_PARAMS + 4, 0.0f);
    float* dw_at = dw_odd.data() + ((uintptr_t)dw_odd.data() % 16u == 0u ? 1 : 0);
    gj_emulate_launch(grid, block,
                      [&] { gj_nn_backward_kernel<C, false>(n, dy.data(), 1.0f, params, ctx.data(), dw_at, nullptr); });
    std::vector<double> g2(dw_at, dw_at + C::N_PARAMS);
    report("dL/dparams only", shape, rel_error(g2, dw_ref, 1e-3), 2 * tol);
    // With a loss scale (dy_scale 128, read in fp32 before the fp16 rounding): the gradients of
    // 128 L, where nothing underflows 128 times the gradients above.
    std::vector<float> dw_scaled(C::N_PARAMS, 0.0f);
    gj_emulate_launch(grid, block, [&] {
        gj_nn_backward_kernel<C, false>(n, dy.data(), 128.0f, params, ctx.data(), dw_scaled.data(), nullptr);
    });
    std::vector<double> g_scaled(dw_scaled.begin(), dw_scaled.end()), dw_ref_scaled(dw_ref);
    for (double& v : dw_ref_scaled) v *= 128.0;
    report("dL/dparams, loss scale 128", shape, rel_error(g_scaled, dw_ref_scaled, 1e-3 * 128.0), 2 * tol);
    // dL/dy as fp16 values (gj_nn_dy(p, true): what PyTorch hands back for fp16 outputs, read in
    // place) against the same values as floats: dL/dparams and dL/dx bit for bit, and a model's
    // dL/d(features) too.
    {
        std::vector<gj_u16> dy16(dy.size());
        std::vector<float> dy_rounded(dy.size());
        for (size_t i = 0; i < dy.size(); ++i) {
            dy16[i] = gj_float_to_half_bits(dy[i]);
            dy_rounded[i] = gj_half_to_float(dy16[i]);
        }
        std::vector<float> dw_f(C::N_PARAMS, 0.0f), dw_h(C::N_PARAMS, 0.0f), dx_f(dx.size(), NAN), dx_h(dx.size(), NAN);
        std::vector<gj_half> df_f((size_t)n * C::IN), df_h((size_t)n * C::IN);
        gj_emulate_launch(grid, block, [&] {
            gj_nn_backward_kernel<C, true>(n, dy_rounded.data(), 128.0f, params, ctx.data(), dw_f.data(), dx_f.data());
        });
        gj_emulate_launch(grid, block, [&] {
            gj_nn_backward_kernel<C, true>(n, gj_nn_dy(dy16.data(), true), 128.0f, params, ctx.data(), dw_h.data(),
                                           dx_h.data());
        });
        gj_emulate_launch(grid, block, [&] {
            gj_model_backward_features_kernel<C>(n, dy_rounded.data(), 1.0f, params, ctx.data(), (float*)nullptr,
                                                 df_f.data());
        });
        gj_emulate_launch(grid, block, [&] {
            gj_model_backward_features_kernel<C>(n, gj_nn_dy(dy16.data(), true), 1.0f, params, ctx.data(), (float*)nullptr,
                                                 df_h.data());
        });
        int differ = std::memcmp(dw_f.data(), dw_h.data(), dw_f.size() * sizeof(float)) != 0;
        differ += std::memcmp(dx_f.data(), dx_h.data(), dx_f.size() * sizeof(float)) != 0;
        for (size_t i = 0; i < df_f.size(); ++i) differ += df_f[i].bits != df_h[i].bits;
        if (differ) {
            std::printf("FAIL fp16 dL/dy %s: %d differences from the same values as floats\n", shape, differ);
            ++failures;
        } else {
            std::printf("ok   fp16 dL/dy %s: dL/dparams, dL/dx, dL/d(features) as from floats\n", shape);
        }
    }
    // A model's backward with dL/dinput: dL/d(features) feature-major ([k * n + i]), rounded
    // to the encoding's precision, and the network's dL/dparams.
    std::vector<gj_half> df_half((size_t)n * C::IN, gj_half{0x7E00u});
    std::fill(dw.begin(), dw.end(), 0.0f);
    gj_emulate_launch(grid, block, [&] {
        gj_model_backward_features_kernel<C>(n, dy.data(), 1.0f, params, ctx.data(), dw.data(), df_half.data());
    });
    std::vector<float> df_float((size_t)n * C::IN, NAN);
    gj_emulate_launch(grid, block, [&] {
        gj_model_backward_features_kernel<C>(n, dy.data(), 1.0f, params, ctx.data(), (float*)nullptr, df_float.data());
    });
    std::vector<double> g3(dw.begin(), dw.end()), fh((size_t)n * C::IN), ff((size_t)n * C::IN);
    for (unsigned i = 0; i < n; ++i) {
        for (int k = 0; k < C::IN; ++k) {
            fh[(size_t)i * C::IN + k] = gj_half_to_float(df_half[(size_t)k * n + i].bits);
            ff[(size_t)i * C::IN + k] = df_float[(size_t)k * n + i];
        }
    }
    report("model dL/dparams", shape, rel_error(g3, dw_ref, 1e-3), 2 * tol);
    report("model dL/df fp16", shape, rel_error(fh, dx_ref, 1e-3), 2 * tol);
    report("model dL/df fp32", shape, rel_error(ff, dx_ref, 1e-3), 2 * tol);
    if constexpr (can_recompute<C>()) {
        recompute_case<C>(shape, n, grid, x, dy, params, ctx, y_fwd, dx, dw_ref, df_half, tol);
    }
}

// gj_nn_finish_kernel: fp16 sums converted (set, or added to) with the factor, and three fp32
// arrays scaled in place, over grids smaller and larger than the work, with out aligned (the
// four-at-a-time path) and not (every element alone), n16 not a multiple of four.
static void finish_case(unsigned grid, unsigned n16, bool aligned, bool accumulate, float factor) {
    std::vector<gj_u16> sums(n16 + 8);
    std::vector<float> out_store(n16 + 8), a(37), b(130), c(5);
    gj_u16* s = sums.data(); // the vector's storage is 16-byte aligned
    float* out = out_store.data() + (aligned ? 0 : 1);
    std::vector<double> want_out(n16), want_a(a.size()), want_b(b.size()), want_c(c.size());
    for (unsigned i = 0; i < n16; ++i) {
        const float v = (float)((int)(i * 37 % 101) - 50) / 64.0f; // exact in fp16
        s[i] = gj_float_to_half_bits(v);
        out[i] = 0.25f * (float)(i % 7);
        want_out[i] = (accumulate ? out[i] : 0.0) + (double)factor * v;
    }
    auto fill = [&](std::vector<float>& v, std::vector<double>& want, float base) {
        for (size_t i = 0; i < v.size(); ++i) {
            v[i] = base + (float)i;
            want[i] = (double)factor * v[i];
        }
    };
    fill(a, want_a, 1.0f), fill(b, want_b, -3.0f), fill(c, want_c, 0.5f);
    gj_emulate_launch(grid, 32, [&] {
        gj_nn_finish_kernel(n16, s, out, accumulate ? 1u : 0u, a.size(), a.data(), b.size(), b.data(), c.size(),
                            c.data(), factor);
    });
    double worst = 0.0;
    auto check = [&](const float* got, const std::vector<double>& want) {
        for (size_t i = 0; i < want.size(); ++i) {
            const double e = std::fabs(got[i] - want[i]);
            worst = e > worst ? e : worst;
        }
    };
    check(out, want_out), check(a.data(), want_a), check(b.data(), want_b), check(c.data(), want_c);
    char shape[96];
    std::snprintf(shape, sizeof shape, "finish grid %u n16 %u %s %s factor %g", grid, n16, aligned ? "aligned" : "unaligned",
                  accumulate ? "accumulate" : "overwrite", (double)factor);
    if (worst > 1e-6 || out_store[n16 + (aligned ? 0 : 1)] != 0.0f) { // the element after out untouched
        std::printf("FAIL %s: worst error %g\n", shape, worst);
        ++failures;
    } else {
        std::printf("ok   %s\n", shape);
    }
}

// gj_nn_l2_loss_kernel: dL/dy the fp16 values of grad_factor (y - target), as the fused step
// puts it, and the loss added to what is there, over grids smaller and larger than the work
// (warps summing partial loops), with no loss asked for, with n not a multiple of 8 (the values
// after the last group of 8) and with the arrays one value off 16-byte alignment (shift 1: value
// by value throughout).
static void loss_case(unsigned grid, unsigned n, bool with_loss, bool y_half = false, unsigned shift = 0) {
    // 16-byte aligned storage, the arrays starting shift values in
    std::vector<gj_u32x4> y_store(n / 4 + 2), target_store(n / 4 + 2), y16_store(n / 8 + 2), dy_store(n / 8 + 2);
    float* y = (float*)y_store.data() + shift;
    float* target = (float*)target_store.data() + shift;
    gj_u16* y16 = (gj_u16*)y16_store.data() + shift;
    gj_u16* dy = (gj_u16*)dy_store.data() + shift;
    for (unsigned i = 0; i <= n; ++i) dy[i] = 0x7E00; // dy[n]: a NaN's bits, to stay untouched
    double want_loss = 0.5; // added to
    const float grad_factor = 2.0f * 128.0f / (float)n, loss_factor = 1.0f / (float)n;
    unsigned state = 11 + n;
    for (unsigned i = 0; i < n; ++i) {
        y[i] = (float)round_half(uniform(state) * 4.0 - 2.0); // the forward's outputs are fp16
        y16[i] = gj_float_to_half_bits(y[i]);
        target[i] = (float)uniform(state);
        const double diff = (double)y[i] - target[i];
        want_loss += loss_factor * diff * diff;
    }
    float loss = 0.5f;
    gj_emulate_launch(grid, 64, [&] {
        const void* y_in = y_half ? (const void*)y16 : (const void*)y;
        gj_nn_l2_loss_kernel(n, y_in, y_half, target, grad_factor, loss_factor, dy, with_loss ? &loss : nullptr);
    });
    int wrong = 0;
    for (unsigned i = 0; i < n; ++i) {
        const float diff = y[i] - target[i]; // in fp32, as the kernels compute it
        wrong += dy[i] != gj_float_to_half_bits(grad_factor * diff);
    }
    char shape[80];
    std::snprintf(shape, sizeof shape, "l2 loss grid %u n %u%s%s%s", grid, n, with_loss ? "" : " (no loss)",
                  y_half ? ", fp16 outputs" : "", shift ? ", unaligned" : "");
    const double loss_error = with_loss ? std::fabs(loss - want_loss) / want_loss : (loss == 0.5f ? 0.0 : 1.0);
    if (wrong || dy[n] != 0x7E00 || loss_error > 1e-5) {
        std::printf("FAIL %s: %d gradients wrong, loss error %g\n", shape, wrong, loss_error);
        ++failures;
    } else {
        std::printf("ok   %s\n", shape);
    }
}

// gj_nn_train_kernel (a network alone's fused step: forward, L2 loss, backward in one kernel,
// the context in a ring of per-warp slots, the targets fetched ahead or read in place) against
// the same step in passes apart on the same emulation: the forward kernel keeping the context,
// the loss's gradient as the step rounds it (fp16 of grad_factor (y - target)), the backward
// kernel. Outputs bit for bit, the loss to 1e-5, dL/dparams to 1e-5 (relative L2: the same
// products summed in the same rounds, the loss's gradients the same bits).
template <class C, bool FETCH> struct StepCfg : C {
    static constexpr bool FETCH_TARGETS = FETCH;
    static constexpr gj_u64 TARGET_HALVES = (64ull * C::OUT + 7) / 8 * 8;
};

template <class C, bool FETCH> static void step_case(unsigned n, unsigned grid) {
    typedef StepCfg<C, FETCH> S;
    unsigned state = 77u + C::IN * 3u + C::W + n;
    std::vector<gj_half> w(C::N_PARAMS);
    for (auto& v : w) v.bits = gj_float_to_half_bits((float)((uniform(state) - 0.5) * 0.5));
    std::vector<float> x((size_t)n * C::IN), target((size_t)n * C::OUT);
    for (float& v : x) v = (float)round_half(uniform(state));
    for (float& v : target) v = (float)uniform(state);
    const float scale = 128.0f, grad_factor = 2.0f * scale / (float)((size_t)n * C::OUT);
    const float loss_factor = 1.0f / (float)((size_t)n * C::OUT);
    const unsigned block = 32 * C::WARPS;

    // The step, fused.
    std::vector<gj_u16> ring((size_t)grid * C::WARPS * C::CTX_HALVES, 0xFFFFu);
    std::vector<float> y_step((size_t)n * C::OUT, NAN), dw_step(C::N_PARAMS, 0.0f);
    float loss = 0.0f;
    gj_emulate_launch(grid, block, [&] {
        gj_nn_train_kernel<S>(n, x.data(), target.data(), grad_factor, loss_factor, w.data(), ring.data(),
                              y_step.data(), dw_step.data(), &loss);
    });
    // The same in passes apart.
    const gj_u64 tiles = (n + 31) / 32;
    std::vector<gj_u16> ctx(tiles * C::CTX_HALVES, 0xFFFFu);
    std::vector<float> y((size_t)n * C::OUT, NAN), dy((size_t)n * C::OUT), dw(C::N_PARAMS, 0.0f);
    gj_emulate_launch(grid, 32 * C::FORWARD_WARPS,
                      [&] { gj_nn_forward_kernel<C>(n, x.data(), y.data(), w.data(), ctx.data()); });
    double want_loss = 0.0;
    for (size_t e = 0; e < y.size(); ++e) {
        const float diff = y[e] - target[e];
        dy[e] = gj_half_to_float(gj_float_to_half_bits(grad_factor * diff));
        want_loss += (double)loss_factor * diff * diff;
    }
    gj_emulate_launch(grid, block,
                      [&] { gj_nn_backward_kernel<C, false>(n, dy.data(), 1.0f, w.data(), ctx.data(), dw.data(), nullptr); });
    int outputs_differ = 0;
    for (size_t e = 0; e < y.size(); ++e) outputs_differ += std::memcmp(&y[e], &y_step[e], sizeof(float)) != 0;
    const std::vector<double> a(dw_step.begin(), dw_step.end()), b(dw.begin(), dw.end());
    const double e_w = rel_error(a, b, 1e-6), e_loss = std::fabs(loss - want_loss) / want_loss;
    char shape[160];
    std::snprintf(shape, sizeof shape, "fused step %d-%dx%d-%d %s, %u points, grid %u, %d warps%s%s", C::IN, C::W,
                  C::NL - 1, C::OUT, names[C::ACT], n, grid, C::WARPS, C::SMEM_GRADS ? ", block sums" : "",
                  FETCH ? ", targets fetched ahead" : "");
    if (outputs_differ || e_loss > 1e-5 || e_w > 1e-5) {
        std::printf("FAIL %s: %d outputs differ, loss %.2g, dL/dparams %.2g\n", shape, outputs_differ, e_loss, e_w);
        ++failures;
    } else {
        std::printf("ok   %s (loss %.2g, dL/dparams %.2g)\n", shape, e_loss, e_w);
    }
    // A model's step kernel (gj_model_train_features_kernel): the features feature-major in f, in
    // the encoding's precision (fp16 here; x is fp16-exact), replaced by dL/d(features); against
    // the passes apart's backward with dL/d(features) (gj_model_backward_features_kernel).
    std::vector<gj_half> f((size_t)n * C::IN), df_apart((size_t)n * C::IN, gj_half{0x7E00u});
    for (unsigned i = 0; i < n; ++i)
        for (int k = 0; k < C::IN; ++k) f[(size_t)k * n + i].bits = gj_float_to_half_bits(x[(size_t)i * C::IN + k]);
    std::vector<float> y_model((size_t)n * C::OUT, NAN), dw_model(C::N_PARAMS, 0.0f), dw_apart(C::N_PARAMS, 0.0f);
    float model_loss = 0.0f;
    gj_emulate_launch(grid, block, [&] {
        gj_model_train_features_kernel<S>(n, f.data(), target.data(), grad_factor, loss_factor, w.data(), ring.data(),
                                          y_model.data(), dw_model.data(), &model_loss);
    });
    gj_emulate_launch(grid, block, [&] {
        gj_model_backward_features_kernel<C>(n, dy.data(), 1.0f, w.data(), ctx.data(), dw_apart.data(), df_apart.data());
    });
    int model_differ = 0, nonzero = 0;
    for (const gj_half& v : df_apart) nonzero += (v.bits & 0x7FFFu) != 0;
    if (nonzero == 0) { // a case whose dL/d(features) are all zero would check nothing
        std::printf("FAIL model %s: every dL/d(features) of the passes apart is zero\n", shape);
        ++failures;
    }
    for (size_t e = 0; e < y.size(); ++e) model_differ += std::memcmp(&y[e], &y_model[e], sizeof(float)) != 0;
    for (size_t e = 0; e < f.size(); ++e) model_differ += f[e].bits != df_apart[e].bits;
    const std::vector<double> am(dw_model.begin(), dw_model.end()), bm(dw_apart.begin(), dw_apart.end());
    const double e_wm = rel_error(am, bm, 1e-6), e_lm = std::fabs(model_loss - want_loss) / want_loss;
    if (model_differ || e_lm > 1e-5 || e_wm > 1e-5) {
        std::printf("FAIL model %s: %d outputs or dL/d(features) differ, loss %.2g, dL/dparams %.2g\n", shape,
                    model_differ, e_lm, e_wm);
        ++failures;
    } else {
        std::printf("ok   model %s (dL/d(features) bit for bit, loss %.2g, dL/dparams %.2g)\n", shape, e_lm, e_wm);
    }
}

// gj_nn_adam_kernel (tiny-cuda-nn's Adam) over three steps against the host rule: the network's
// parameters (fp16 copies, fp32 gradients, l2_reg, none skipped) and an encoding's (copies P and
// gradients G, fp16 or fp32; a zero gradient skips the parameter), in quads whose four are all
// updated, all skipped (not touched) or mixed (the 16-byte path writing the skipped ones back as
// read), a tail shorter than four, and with the arrays one element off 16-byte alignment (one
// parameter at a time). A skipped parameter's copy starts unlike its master's rounding and must
// keep its bits; the element after each array must stay as it was.
template <class T> static gj_u32 copy_bits(T v) {
    if constexpr (sizeof(T) == 2) {
        return v.bits;
    } else {
        return __float_as_uint(v);
    }
}

// A model's inference in two passes: the network over features that the encoding's forward
// wrote feature-major, T: fp16 or fp32 (an fp32 encoding's; staged at 4 bytes a value, value
// by value) (gj_model_forward_features_kernel, in the wide inference block,
// a model's: no input padding), each warp's next tile fetched into its staging while the tile
// runs (FETCH: 16-byte copies where n is a multiple of 8 and the tile whole, else value by
// value) or read as the tile starts; against the network's forward over the same values as
// point-major floats, bit for bit.
template <class C, bool FETCH> struct FeaturesCfg : WideInference<C> {
    static constexpr bool FEATURES_FETCH = FETCH;
};
template <class C, class T = gj_half> static void features_case(unsigned n, unsigned grid) {
    static_assert(C::INPUT_PADDING == 0.0f, "a model's network: no input padding");
    typedef WideInference<C> WC;
    unsigned state = 91u + C::IN * 5u + C::W + n;
    std::vector<gj_half> w(C::N_PARAMS);
    // Weights and features of order 1 / fan-in and 1: no unit saturates (tanh of sums of 32
    // products of 0.25 did, and every point gave the same output).
    for (auto& v : w) v.bits = gj_float_to_half_bits((float)(uniform(state) * 0.1));
    std::vector<float> x((size_t)n * C::IN);
    std::vector<T> f((size_t)n * C::IN);
    for (unsigned i = 0; i < n; ++i) {
        for (int k = 0; k < C::IN; ++k) {
            const float v = (float)round_half(uniform(state));
            x[(size_t)i * C::IN + k] = v;
            if constexpr (sizeof(T) == 2) f[(size_t)k * n + i].bits = gj_float_to_half_bits(v);
            else f[(size_t)k * n + i] = v; // a value fp16 holds exactly: the same network input
        }
    }
    std::vector<float> want((size_t)n * C::OUT, NAN);
    gj_emulate_launch(grid, 32 * WC::FORWARD_WARPS,
                      [&] { gj_nn_forward_kernel<WC>(n, x.data(), want.data(), w.data(), nullptr); });
    // Points whose outputs differ (a network whose units are all dead would hide a point's
    // features swapped for another's).
    if (n > 1 && std::memcmp(&want[0], &want[C::OUT], sizeof(float)) == 0) {
        std::printf("FAIL inference over features %d-%dx%d-%d: the first two points give the same output\n", C::IN,
                    C::W, C::NL - 1, C::OUT);
        ++failures;
    }
    for (int fetch = 0; fetch < 2; ++fetch) {
        std::vector<float> y((size_t)n * C::OUT, NAN);
        gj_emulate_launch(grid, 32 * WC::FORWARD_WARPS, [&] {
            if (fetch) gj_model_forward_features_kernel<FeaturesCfg<C, true>>(n, f.data(), y.data(), w.data(), nullptr);
            else gj_model_forward_features_kernel<FeaturesCfg<C, false>>(n, f.data(), y.data(), w.data(), nullptr);
        });
        int differ = 0;
        for (size_t e = 0; e < y.size(); ++e) differ += std::memcmp(&y[e], &want[e], sizeof(float)) != 0;
        char shape[160];
        std::snprintf(shape, sizeof shape, "inference over %s features %d-%dx%d-%d %s, %u points, grid %u%s",
                      sizeof(T) == 2 ? "fp16" : "fp32", C::IN, C::W, C::NL - 1, C::OUT, names[C::ACT], n, grid,
                      fetch ? ", fetched ahead" : "");
        if (differ) {
            std::printf("FAIL %s: %d outputs differ from the forward over the same values\n", shape, differ);
            ++failures;
        } else {
            std::printf("ok   %s\n", shape);
        }
        report_outputs("into fp16 outputs:", shape, fp16_outputs_differ(want, [&](void* yh, gj_u32 half) {
                        gj_emulate_launch(grid, 32 * WC::FORWARD_WARPS, [&] {
                            if (fetch)
                                gj_model_forward_features_kernel<FeaturesCfg<C, true>>(n, f.data(), yh, w.data(), nullptr,
                                                                                        half);
                            else
                                gj_model_forward_features_kernel<FeaturesCfg<C, false>>(n, f.data(), yh, w.data(),
                                                                                         nullptr, half);
                        });
                    }));
    }
}

template <class P, class G> static void adam_case(unsigned grid, unsigned n_net, unsigned n_enc, bool aligned) {
    const gj_nn_adam_hyper h = {1e-2f, 0.9f, 0.99f, 1e-8f, 1e-3f, 1.0f / 128.0f};
    const unsigned off = aligned ? 0u : 1u;
    struct Set {
        std::vector<float> master, m1, m2, grad;
        std::vector<gj_u32> steps;
        std::vector<gj_u32> copy_start; // the copies' bits as they started
    };
    unsigned state = 5 + n_enc;
    auto make = [&](unsigned n, bool encoding) {
        Set set;
        set.master.assign(n + off + 1, 0.0f), set.m1.assign(n + off + 1, 0.0f), set.m2.assign(n + off + 1, 0.0f);
        set.grad.assign(n, 0.0f), set.steps.assign(n + off + 1, 0u), set.copy_start.assign(n, 0u);
        for (unsigned i = 0; i < n; ++i) {
            set.master[off + i] = (float)(uniform(state) - 0.5);
            const unsigned quad = i / 4, k = i % 4;
            // The encoding's quads: all updated, all skipped, or mixed (the middle two skipped).
            const bool zero = encoding && (quad % 3 == 1 || (quad % 3 == 2 && (k == 1 || k == 2)));
            set.grad[i] = zero ? 0.0f : (float)round_half(uniform(state) * 128.0 - 64.0);
        }
        return set;
    };
    Set net = make(n_net, false), enc = make(n_enc, true);
    std::vector<gj_half> net_copy(n_net + off + 1);
    std::vector<P> enc_copy(n_enc + off + 1);
    std::vector<float> net_grad(n_net + off + 1, 0.0f);
    std::vector<G> enc_grad(n_enc + off + 1);
    for (unsigned i = 0; i < n_net; ++i) {
        net_copy[off + i] = gj_from_float<gj_half>(net.master[off + i]);
        net_grad[off + i] = net.grad[i];
    }
    for (unsigned i = 0; i < n_enc; ++i) {
        // A skipped parameter's copy starts elsewhere than its master's rounding.
        enc_copy[off + i] = gj_from_float<P>(enc.master[off + i] + (enc.grad[i] == 0.0f ? 0.25f : 0.0f));
        enc.copy_start[i] = copy_bits(enc_copy[off + i]);
        enc_grad[off + i] = gj_from_float<G>(enc.grad[i]);
    }
    net_copy[off + n_net] = gj_from_float<gj_half>(7.0f), enc_copy[off + n_enc] = gj_from_float<P>(7.0f);
    std::vector<Set> want = {net, enc};
    for (int step = 0; step < 3; ++step) {
        gj_emulate_launch(grid, 32, [&] {
            gj_nn_adam_kernel(n_net, net_copy.data() + off, net.master.data() + off, net.m1.data() + off,
                              net.m2.data() + off, net.steps.data() + off, net_grad.data() + off, n_enc,
                              enc_copy.data() + off, enc.master.data() + off, enc.m1.data() + off,
                              enc.m2.data() + off, enc.steps.data() + off, enc_grad.data() + off, h);
        });
        for (int s = 0; s < 2; ++s) { // the host rule (optimizers/adam.h), as templates/network_kernels.cuh states it
            Set& w = want[s];
            const unsigned n = s == 0 ? n_net : n_enc;
            for (unsigned i = 0; i < n; ++i) {
                float g = (s == 0 ? w.grad[i] : gj_to_float(gj_from_float<G>(w.grad[i]))) * h.inv_scale;
                if (s == 1 && g == 0.0f) continue;
                float& x = w.master[off + i];
                g = std::fma(s == 0 ? h.l2_reg : 0.0f, x, g);
                w.m1[off + i] = std::fma(h.beta1, w.m1[off + i], (1.0f - h.beta1) * g);
                w.m2[off + i] = std::fma(h.beta2, w.m2[off + i], (1.0f - h.beta2) * g * g);
                const gj_u32 t = ++w.steps[off + i];
                const float lr = h.lr * std::sqrt(1.0f - std::pow(h.beta2, (float)t)) / (1.0f - std::pow(h.beta1, (float)t));
                x -= lr / (std::sqrt(w.m2[off + i]) + h.epsilon) * w.m1[off + i];
            }
        }
    }
    double worst = 0.0;
    int wrong = 0;
    for (int s = 0; s < 2; ++s) {
        const Set& got = s == 0 ? net : enc;
        const Set& w = want[s];
        const unsigned n = s == 0 ? n_net : n_enc;
        for (unsigned i = 0; i < n; ++i) {
            const unsigned j = off + i;
            const float values[3][2] = {{got.master[j], w.master[j]}, {got.m1[j], w.m1[j]}, {got.m2[j], w.m2[j]}};
            for (const auto& v : values) {
                const double e = std::fabs((double)v[0] - v[1]) / std::fmax(std::fabs((double)v[1]), 1e-6);
                worst = e > worst ? e : worst;
            }
            wrong += got.steps[j] != w.steps[j];
            // The copy: the rounding of the master weight, or a skipped parameter's bits as they started.
            const gj_u32 copy = s == 0 ? copy_bits(net_copy[j]) : copy_bits(enc_copy[j]);
            const gj_u32 expect = s == 1 && w.steps[j] == 0
                                      ? enc.copy_start[i]
                                      : (s == 0 ? copy_bits(gj_from_float<gj_half>(got.master[j]))
                                                : copy_bits(gj_from_float<P>(got.master[j])));
            wrong += copy != expect;
        }
        wrong += got.steps[off + n] != 0u; // past the end: untouched
    }
    wrong += copy_bits(net_copy[off + n_net]) != copy_bits(gj_from_float<gj_half>(7.0f));
    wrong += copy_bits(enc_copy[off + n_enc]) != copy_bits(gj_from_float<P>(7.0f));
    char shape[96];
    std::snprintf(shape, sizeof shape, "adam grid %u net %u enc %u (%s, %s) %s", grid, n_net, n_enc,
                  sizeof(P) == 2 ? "fp16" : "fp32", sizeof(G) == 2 ? "fp16 gradients" : "fp32 gradients",
                  aligned ? "aligned" : "unaligned");
    if (wrong || worst > 1e-5) {
        std::printf("FAIL %s: %d wrong steps or copies, worst relative error %g\n", shape, wrong, worst);
        ++failures;
    } else {
        std::printf("ok   %s (worst relative error %.2g)\n", shape, worst);
    }
}

int main(int argc, char** argv) {
    if (gj_test_shard_args(argc, argv, &shard, &n_shards) != 0) return 2;
    if (mine()) adam_case<gj_half, gj_half>(2, 37, 203, true);
    if (mine()) adam_case<gj_half, gj_half>(1, 8, 66, false);
    if (mine()) adam_case<float, float>(3, 16, 130, true);
    if (mine()) adam_case<float, float>(1, 5, 97, false);
    if (mine()) loss_case(1, 1000, true);
    if (mine()) loss_case(7, 100, true);
    if (mine()) loss_case(3, 4099, false);
    if (mine()) loss_case(5, 777, true, true);
    if (mine()) loss_case(2, 4096, true, true);
    if (mine()) loss_case(3, 1003, true, false, 1);
    if (mine()) loss_case(4, 999, true, true, 1);
    if (mine()) finish_case(1, 103, true, false, 1.0f / 128.0f);
    if (mine()) finish_case(3, 1000, true, true, 0.5f);
    if (mine()) finish_case(2, 103, false, false, 1.0f / 128.0f);
    if (mine()) finish_case(64, 6, false, true, 1.0f);
    enum { NONE, RELU, LEAKY, EXP, SINE, SIGMOID, SQUAREPLUS, SOFTPLUS, TANH, SILU };
    // A model's inference over its features: 16-byte copies with a last tile of 8 points (value by
    // value), n not a multiple of 8 (every tile value by value), several tiles a warp (the fetch
    // of the next while one runs), inputs not a multiple of 8, fewer points than a tile.
    if (mine()) features_case<Cfg<32, 64, 2, 16, TANH, NONE, false, 4, true, true>>(1000, 1);
    if (mine()) features_case<Cfg<32, 64, 2, 16, TANH, NONE, false, 4, true, true>>(1003, 2);
    if (mine()) features_case<Cfg<16, 32, 1, 3, TANH, SIGMOID, false, 4, true, true>>(4096, 1);
    if (mine()) features_case<Cfg<24, 16, 3, 8, SINE, NONE, false, 4, true, true>>(520, 2);
    if (mine()) features_case<Cfg<32, 64, 2, 16, TANH, NONE, false, 4, true, true>>(17, 1);
    // an fp32 encoding's features (test_gpu_network's 4 levels x 4 features model)
    if (mine()) features_case<Cfg<16, 32, 1, 3, TANH, SIGMOID, false, 4, true, true>, float>(257, 2);
    if (mine()) features_case<Cfg<32, 64, 2, 16, TANH, NONE, false, 4, true, true>, float>(1003, 2);
    // The fused step: block sums or not, targets fetched ahead or read in place, several
    // rounds a block, a tail tile, no hidden layer.
    if (mine()) step_case<Cfg<3, 16, 1, 1, TANH, NONE, true, 2, true, true>, true>(77, 2);
    if (mine()) step_case<Cfg<37, 64, 2, 5, LEAKY, SIGMOID, true, 4, false, false>, false>(150, 1);
    if (mine()) step_case<Cfg<32, 32, 3, 16, SINE, NONE, false, 2, true, false>, true>(300, 3);
    if (mine()) step_case<Cfg<5, 64, 0, 2, NONE, EXP, true, 1, true, true>, false>(33, 1);
    if (mine()) run<Cfg<3, 16, 1, 1, RELU, NONE, true, 2, true, true>>(77, 2, 2e-2);
    if (mine()) run<Cfg<37, 64, 2, 5, TANH, SIGMOID, true, 4, false, false>>(150, 1, 2e-2);
    if (mine()) run<Cfg<32, 32, 3, 16, SINE, SILU, false, 1, true, false>>(64, 1, 2e-2);
    if (mine()) run<Cfg<16, 128, 1, 3, SOFTPLUS, SQUAREPLUS, true, 2, false, true>>(40, 1, 2e-2);
    if (mine()) run<Cfg<5, 64, 0, 2, NONE, EXP, true, 1, true, true>>(33, 1, 2e-2);
    if (mine()) run<Cfg<2, 16, 4, 18, LEAKY, TANH, true, 2, true, false>>(45, 2, 2e-2);
    if (mine()) run<Cfg<20, 32, 2, 1, SILU, SINE, false, 2, false, true>>(31, 1, 2e-2);
    if (mine()) run<Cfg<8, 64, 1, 4, SIGMOID, SOFTPLUS, true, 1, false, false>>(96, 2, 2e-2);
    if (mine()) run<Cfg<4, 16, 2, 3, EXP, RELU, true, 1, true, true>>(20, 1, 2e-2);
    if (mine()) run<Cfg<6, 32, 1, 2, SQUAREPLUS, LEAKY, true, 2, true, true>>(50, 1, 2e-2);
    // The GPU test's ReLU and LeakyReLU shapes, whose kinks need the reference's fp16 h.
    if (mine()) run<Cfg<3, 64, 2, 1, RELU, NONE, true, 4, true, true>>(1000, 4, 2e-2);
    if (mine()) run<Cfg<20, 128, 2, 4, LEAKY, TANH, true, 2, false, true>>(257, 2, 2e-2);
    // Staged weights whose first layer's rows (48 halves) are not a power of two wide, and
    // whose output layer is wider than one mma tile (OUT_P 32).
    if (mine()) run<Cfg<40, 32, 1, 20, RELU, NONE, true, 2, true, true>>(70, 1, 2e-2);
    // Weights staged by the forward passes and read from global memory by the backward
    // (the plan of 128 x 2: 49 KiB of weights).
    if (mine()) run<Cfg<20, 128, 2, 4, LEAKY, TANH, true, 2, true, true, false>>(257, 2, 2e-2);
    if (mine()) run<Cfg<3, 64, 2, 1, RELU, NONE, true, 4, true, false, false>>(300, 2, 2e-2);
    // Outputs wider than one chunk of GJ_NN_OUT_CHUNK (128) columns, as tiny-cuda-nn's
    // test_random_input.py asks (3 -> 8 x 128 -> 256): two full chunks; a full chunk and a
    // rest of 32 with an output activation that keeps z; no hidden layers (the forward's
    // chunks go through the second buffer), a rest of 80 and an output activation that keeps y.
    if (mine()) run<Cfg<3, 32, 2, 256, RELU, NONE, true, 2, true, true>>(70, 1, 2e-2);
    if (mine()) run<Cfg<20, 64, 1, 150, TANH, SINE, false, 1, false, false>>(45, 1, 2e-2);
    if (mine()) run<Cfg<16, 16, 0, 200, NONE, SIGMOID, true, 2, true, false>>(50, 1, 2e-2);
    // Forward passes with fewer warps a block than the backward's (the plan of 64 x 4: four and
    // eight; here one and four, two and four over a grid of two) and with more (four and two,
    // eight and four),
    // each with its own tiles and rounds: the contexts the forward leaves are the backward's.
    if (mine()) run<Cfg<3, 64, 2, 1, RELU, NONE, true, 4, true, false, true, 1>>(300, 2, 2e-2);
    if (mine()) run<Cfg<6, 32, 1, 2, SQUAREPLUS, LEAKY, true, 4, true, true, true, 2>>(333, 2, 2e-2);
    if (mine()) run<Cfg<3, 64, 3, 16, RELU, NONE, true, 2, true, true, true, 4>>(290, 2, 2e-2);
    // Eight forward warps staging the weights, four backward warps reading them (as the 128 x 2
    // plan measured fastest on the H200, docs/networks.md §7).
    if (mine()) run<Cfg<20, 128, 2, 4, LEAKY, TANH, true, 4, true, false, false, 8>>(600, 2, 2e-2);
    // Weight-gradient sums in registers: none; every layer (all three shapes alike: 64 -> 64 x 1
    // -> 64, one 64 x 64 block a warp's task); the last, the first and two of four hidden layers
    // kept, the others summed per block (48 floats a lane) or added per round (no block sums).
    if (mine()) run<Cfg<3, 64, 2, 1, RELU, NONE, true, 4, true, true, true, 4, 0>>(300, 2, 2e-2);
    if (mine()) run<Cfg<64, 64, 2, 64, TANH, NONE, true, 4, true, true, true, 4, 255>>(300, 2, 2e-2);
    if (mine()) run<Cfg<5, 32, 5, 3, SILU, SIGMOID, true, 2, true, true, true, 2, 48>>(200, 2, 2e-2);
    if (mine()) run<Cfg<5, 32, 5, 3, SILU, SIGMOID, true, 2, true, false, true, 2, 48>>(200, 2, 2e-2);
    // Recomputing (every shape above whose activations allow it runs it too): the activations
    // that keep h with no output activation, one warp (whose dL/dparams come in one order), no
    // hidden layer (nothing to recompute: the input rows alone), 128 wide read from global memory.
    if (mine()) run<Cfg<6, 32, 2, 3, SIGMOID, NONE, true, 1, true, true>>(100, 1, 2e-2);
    if (mine()) run<Cfg<4, 16, 2, 3, EXP, NONE, true, 2, true, false>>(70, 2, 2e-2);
    if (mine()) run<Cfg<8, 64, 1, 4, SOFTPLUS, NONE, true, 2, false, true>>(96, 2, 2e-2);
    if (mine()) run<Cfg<7, 32, 2, 5, SQUAREPLUS, NONE, false, 2, true, true, true, 4>>(150, 2, 2e-2);
    if (mine()) run<Cfg<5, 32, 1, 2, NONE, NONE, true, 1, true, false>>(40, 1, 2e-2);
    if (mine()) run<Cfg<16, 16, 0, 8, NONE, NONE, true, 2, true, true>>(60, 1, 2e-2);
    if (mine()) run<Cfg<20, 128, 2, 4, LEAKY, NONE, true, 2, true, true, false>>(130, 2, 2e-2);
    std::printf("%s: %d failure%s in %d of %d cases (shard %d of %d)\n", failures ? "FAIL" : "PASS", failures,
                failures == 1 ? "" : "s", (next_case + n_shards - 1 - shard) / n_shards, next_case, shard, n_shards);
    return failures ? 1 : 0;
}
