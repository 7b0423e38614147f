/* The network kernels' block plan (network_plan.h). */
#include "codegen/network_plan.h"

/* A portable plan's backward block stays within this, and so does a forward block given more
 * warps than the backward's (forward_warps): two fit a multiprocessor of 228 KiB (sm_90), and
 * one fits the 99 KiB that a block may take on sm_86, sm_89 and sm_120. */
#define BLOCK_BUDGET (96u * 1024u)
/* A large plan's backward block (sm_90 to sm_110) stays within this: two still fit a
 * multiprocessor of 228 KiB (1 KiB reserved a block). With 96 KiB the 64 x 3 and 128 x 1
 * models had two warps a block (four: 64 x 3's backward 4.04 -> 3.00 ms on the H200) and 64 x
 * 4 had four (eight: its backward 3.45 -> 3.18 ms). Its forward passes keep the warps
 * BLOCK_BUDGET gives (large_forward_warps). */
#define LARGE_BLOCK_BUDGET (112u * 1024u)
/* The inference and forward kernels' warps a block where they read the weights from global
 * memory (too many to stage): two. On the H200 (2^21 points, C1 models) the forward took
 * 3.45 ms with two against 4.34 with four (128 x 3), 4.64 / 5.72 (128 x 4), 9.48 / 11.15
 * (128 x 8), 2.37 / 2.39 (64 x 8; eight: 2.87), the inference 4 to 7 % less for the 128-wide. */
#define FORWARD_WARPS_UNSTAGED 2u
/* Staged weights and block gradient sums are each worth it up to this much in the backward
 * block, which holds both and two scratch buffers a warp. */
#define PART_LIMIT (48u * 1024u)
/* The forward passes' blocks hold only the weights and one buffer a warp: they stage up to
 * this much (128 x 2's 49 KiB halved its inference time on the H200, docs/networks.md §8). */
#define FORWARD_STAGE_LIMIT (64u * 1024u)

static uint64_t round_up(uint64_t v, uint64_t m) {
    return (v + m - 1) / m * m;
}

static uint64_t forward_bytes(const gj__network_plan *p) {
    return 2 * (p->staged_halves + p->forward_scratch_halves * p->forward_warps);
}

static uint64_t backward_bytes_with(const gj__network_plan *p, uint64_t n_params, int smem_grads) {
    const uint64_t staged = p->stage_backward ? p->staged_halves : 0;
    return 2 * staged + (smem_grads ? 4 * round_up(n_params, 4) : 0) + 2 * p->scratch_halves * p->warps;
}

static uint64_t backward_bytes(const gj__network_plan *p, uint64_t n_params) {
    return backward_bytes_with(p, n_params, p->smem_grads);
}

/* The most warps (8, 4, 2, 1) whose backward block stays within budget; 0 if none. */
static uint32_t fit_warps(gj__network_plan *p, uint64_t n_params, uint64_t budget) {
    for (p->warps = 8; p->warps >= 1; p->warps /= 2) {
        if (backward_bytes(p, n_params) <= budget) {
            return p->warps;
        }
    }
    return 0;
}

/* The inference and forward kernels' warps, as measured on the H200 (docs/networks.md §7):
 * the backward's, but at least four where that block fits the budget (64 x 3 and 128 x 1 have
 * two: forward 2.89 ms and inference 1.33 with two, 1.46 and 1.15 with four) and two where the
 * forward passes read their weights from global memory (FORWARD_WARPS_UNSTAGED). Four for
 * every network 64 wide, tried first, made the forward of 64 x 1 8 % and of 64 x 6 82 % slower
 * than their eight. */
static int forward_stages(const gj__network_plan *p, uint64_t staged, uint32_t warps) {
    return p->stage_backward || (2 * staged <= FORWARD_STAGE_LIMIT &&
                                 2 * (staged + p->forward_scratch_halves * warps) <= GJ__NETWORK_MAX_SMEM);
}

static uint32_t forward_warps(const gj__network_plan *p, uint64_t staged) {
    uint32_t warps = p->warps;
    if (warps < 4) {
        const uint64_t bytes = 2 * ((forward_stages(p, staged, 4) ? staged : 0) + p->forward_scratch_halves * 4);
        warps = bytes <= BLOCK_BUDGET ? 4 : warps;
    }
    return forward_stages(p, staged, warps) ? warps : FORWARD_WARPS_UNSTAGED;
}

/* A large plan's forward passes: the most warps whose backward block, with the plan's staging
 * and sums, stays within BLOCK_BUDGET (the portable plan's budget),
 * at least four, two where they read their weights from global memory, and eight where
 * they stage weights that the backward reads from global memory (128 x 2's forward
 * 2.14 -> 1.80 ms and inference 1.43 -> 1.35 on the H200 with eight; its block takes 116 KiB). */
static uint32_t large_forward_warps(const gj__network_plan *p, uint64_t n_params, uint64_t staged) {
    gj__network_plan q = *p;
    uint32_t warps = fit_warps(&q, n_params, BLOCK_BUDGET);
    warps = warps < 4 ? 4 : warps;
    if (!forward_stages(p, staged, warps)) {
        return FORWARD_WARPS_UNSTAGED;
    }
    return !p->stage_backward && forward_stages(p, staged, 8) ? 8 : warps;
}

/* The hints that fit: the minimum of blocks always (it takes no shared memory, and so stays
 * the same in every class's plan, as the kernels' one __launch_bounds__ needs), the others
 * unless the blocks they make exceed what a plan may ask for (then they are dropped). */
static void apply_hints(const gj__network_plan_hints *hints, uint64_t staged, uint64_t n_params, gj__network_plan *p) {
    if (!hints) {
        return;
    }
    if (hints->min_blocks >= 1 && hints->min_blocks <= 8) {
        p->min_blocks = hints->min_blocks;
    }
    if (!(hints->warps || hints->stage || hints->smem_grads || hints->forward_warps)) {
        return;
    }
    gj__network_plan h = *p;
    if (hints->stage) {
        h.stage = h.stage_backward = hints->stage > 0;
        h.staged_halves = h.stage ? staged : 0;
    }
    if (hints->smem_grads) {
        h.smem_grads = h.input_smem_grads = hints->smem_grads > 0;
    }
    if (hints->warps == 1 || hints->warps == 2 || hints->warps == 4 || hints->warps == 8) {
        h.warps = h.forward_warps = hints->warps;
    }
    const uint32_t fw = hints->forward_warps;
    if (fw == 1 || fw == 2 || fw == 4 || fw == 8) {
        h.forward_warps = fw;
    }
    if (backward_bytes(&h, n_params) <= GJ__NETWORK_MAX_SMEM && forward_bytes(&h) <= GJ__NETWORK_MAX_SMEM) {
        *p = h;
    }
}

/* Whether the backward may recompute the hidden layers' outputs instead of reading them from
 * the context (templates/network.cuh, gj_nn_recomputes): hidden activations whose kept value is
 * their output (not Sine or SiLU, which keep z) and no output activation (whose derivative would
 * read the output's kept value). */
static int can_recompute(const gj__network_layout *layout) {
    for (uint32_t l = 0; l + 1 < layout->n_layers; ++l) {
        const gj_activation a = layout->layers[l].activation;
        if (a == GJ_ACTIVATION_SINE || a == GJ_ACTIVATION_SILU) {
            return 0;
        }
    }
    return layout->layers[layout->n_layers - 1].activation == GJ_ACTIVATION_NONE;
}

/* Hidden layers at most this wide recompute by default, where the backward stages its weights
 * in shared memory (else the recomputing products would read them from global memory).
 * Measured on an H200 (2^21 points, C1 models): 32 and 64 neurons, two and four hidden
 * layers, gain 0.3-0.5 ms a forward + backward (the forward writes a fifth of the context,
 * the backward reads a fifth); 128 x 2, whose backward reads its weights from global memory,
 * loses 1.2 ms in the backward: the recomputing products no longer hide behind the encoding's
 * atomics (docs/networks.md §8). Deeper 64-wide networks (from six hidden layers their weights
 * are not staged) and their (L - 1) L / 2 products are unmeasured: they keep their context. */
#define RECOMPUTE_MAX_NEURONS 64u

static int recompute_pays(const gj__network_layout *layout) {
    for (uint32_t l = 0; l + 1 < layout->n_layers; ++l) {
        if (layout->layers[l].fan_out > RECOMPUTE_MAX_NEURONS) {
            return 0;
        }
    }
    return 1;
}

/* Whether plan p (of layout, its staging fitted) recomputes. The hint (GRIDJIT_NETWORK_RECOMPUTE):
 * 1 where the activations allow it, -1 never, 0 the rule above. */
static int recomputes(const gj__network_layout *layout, const gj__network_plan_hints *hints,
                      const gj__network_plan *p) {
    const int hint = hints ? hints->recompute : 0;
    return hint >= 0 && can_recompute(layout) && (hint > 0 || (recompute_pays(layout) && p->stage_backward));
}

static void keep_context(gj__network_plan *p) {
    p->recompute = 0;
    p->pass_ctx_halves = p->ctx_halves;
}

gj__network_plan_class gj__network_plan_class_of(int cubin_sm) {
    const int arch = 10 * cubin_sm; /* as __CUDA_ARCH__ spells it */
    return arch >= GJ__NETWORK_PLAN_LARGE_FROM && arch < GJ__NETWORK_PLAN_LARGE_UNTIL ? GJ__NETWORK_PLAN_LARGE
                                                                                      : GJ__NETWORK_PLAN_PORTABLE;
}

int gj__network_plan_equal(const gj__network_plan *a, const gj__network_plan *b) {
    return a->stride == b->stride && a->scratch_halves == b->scratch_halves &&
           a->forward_scratch_halves == b->forward_scratch_halves && a->ctx_halves == b->ctx_halves &&
           a->recompute == b->recompute && a->pass_ctx_halves == b->pass_ctx_halves &&
           a->small_sums_floats == b->small_sums_floats &&
           a->staged_halves == b->staged_halves && a->warps == b->warps && a->forward_warps == b->forward_warps &&
           a->stage == b->stage && a->stage_backward == b->stage_backward && a->smem_grads == b->smem_grads &&
           a->input_smem_grads == b->input_smem_grads && a->min_blocks == b->min_blocks &&
           a->forward_bytes == b->forward_bytes && a->backward_bytes == b->backward_bytes &&
           a->backward_input_bytes == b->backward_input_bytes && a->step_stage == b->step_stage &&
           a->step_bytes == b->step_bytes && a->step_input_bytes == b->step_input_bytes &&
           a->step_fetch_targets == b->step_fetch_targets && a->step_target_halves == b->step_target_halves &&
           a->inference_warps == b->inference_warps &&
           a->inference_stride == b->inference_stride && a->inference_scratch_halves == b->inference_scratch_halves &&
           a->inference_min_blocks == b->inference_min_blocks && a->inference_m_tiles == b->inference_m_tiles &&
           a->inference_bytes == b->inference_bytes && a->features_fetch == b->features_fetch &&
           a->features_bytes == b->features_bytes && a->inference_table_values == b->inference_table_values;
}

/* A model's inference kernel on the large class (sm_90 to sm_110): one block of
 * WIDE_INFERENCE_WARPS warps a multiprocessor, its rows as wide as the network's input or
 * output (the forward kernel's are as wide as its widest layer, for nothing: the hidden layers
 * stay in registers), where the block then takes at most WIDE_INFERENCE_LIMIT bytes. The
 * encoding's gathers are what the kernel waits on; a multiprocessor's shared memory and L1 are
 * one store, and a block this small leaves L1 192 KiB under the 64 KiB carveout, where three
 * blocks of four warps (rows of 72 halves, three copies of the weights: 100 KiB) leave it 156
 * or less. On the H200 (2^21 points, C1) the 64 x 2 model's inference took 1.056 -> 1.027 ms,
 * 32 x 2's 1.029 -> 1.019, 16 x 2's 1.016 -> 1.003, 64 x 1's 1.035 -> 1.016, as the examples'
 * hand-fused kernel in this shape (docs/benchmarks.md §11, the nineteenth session). Every
 * thread then has at most 128 registers (__launch_bounds__(512, 1)). Measured on the H200
 * alone: the portable class keeps the forward kernel's shape. */
#define WIDE_INFERENCE_WARPS GJ__NETWORK_WIDE_INFERENCE_WARPS
#define WIDE_INFERENCE_LIMIT (63u * 1024u) /* the 64 KiB carveout less the 1 KiB a block reserves */

static void wide_inference(const gj__network_layout *layout, const gj__network_plan_hints *hints,
                           gj__network_plan *p) {
    /* Any hint measures the other shapes (and a register budget would not fit 16 warps). */
    const int hinted = hints && (hints->warps || hints->forward_warps || hints->stage || hints->smem_grads ||
                                 hints->min_blocks || hints->forward_registers);
    const int chunked = layout->n_layers == 1 && layout->padded_output_width > GJ__NETWORK_OUT_CHUNK;
    if (hinted || chunked || !p->stage) {
        return;
    }
    const uint32_t widest = layout->padded_input_width > layout->padded_output_width ? layout->padded_input_width
                                                                                      : layout->padded_output_width;
    const uint32_t stride = widest + 8;
    const uint64_t scratch = 32ull * stride;
    const uint64_t bytes = 2 * (p->staged_halves + scratch * WIDE_INFERENCE_WARPS);
    if (bytes > WIDE_INFERENCE_LIMIT) {
        return;
    }
    p->inference_warps = WIDE_INFERENCE_WARPS;
    p->inference_stride = stride;
    p->inference_scratch_halves = scratch;
    p->inference_min_blocks = 1;
    p->inference_m_tiles = 1; /* both m-tiles' accumulators spilled at 128 registers (64 x 2) */
    p->inference_bytes = (uint32_t)bytes;
}

/* The training step's kernel fetches each tile's targets while the tile's forward runs (the
 * plan's step_fetch_targets), unless the staging (32 rows of targets a warp) would leave its
 * block alone on a multiprocessor of 228 KiB (the large class's; one decision for every class)
 * where two fitted before. On the H200 (2^21 points, C1 models with 16 outputs, steps with Adam)
 * 128 x 2 took 5.96 -> 5.70 ms, 16 x 2 3.43 -> 3.34, 64 x 3 3.98 -> 3.94, 32 x 2 3.32 -> 3.29, 64
 * x 2 3.69 -> 3.70; networks alone (32 -> W x L -> 16) 128 x 2 3.08 -> 2.85, 64 x 2 1.12 -> 1.08.
 * With the staging of every warp of a block too, 64 x 4 went from two blocks of eight warps a
 * multiprocessor to one: 4.30 -> 4.59. A hint sets it either way (where the block fits). */
#define STAGING_SM_BYTES (228u * 1024u)
#define STAGING_BLOCK_RESERVE 1024u

static uint32_t blocks_fitting(uint64_t bytes) {
    return (uint32_t)(STAGING_SM_BYTES / (bytes + STAGING_BLOCK_RESERVE));
}

static void step_fetch_targets(const gj__network_layout *layout, const gj__network_plan_hints *hints, int model,
                               gj__network_plan *plans) {
    const int hint = hints ? hints->step_fetch_targets : 0;
    const uint64_t halves = round_up(64ull * layout->output_width, 8);
    int fetch = hint >= 0;
    for (int c = 0; c < GJ__NETWORK_PLAN_CLASSES; ++c) {
        const uint64_t bytes = model ? plans[c].step_input_bytes : plans[c].step_bytes;
        const uint64_t with = bytes + 2 * halves * plans[c].warps;
        const int alone = blocks_fitting(with) < 2 && blocks_fitting(bytes) >= 2;
        if (with > GJ__NETWORK_MAX_SMEM || (hint == 0 && c == GJ__NETWORK_PLAN_LARGE && alone)) {
            fetch = 0;
        }
    }
    for (int c = 0; c < GJ__NETWORK_PLAN_CLASSES; ++c) {
        gj__network_plan *p = &plans[c];
        p->step_fetch_targets = fetch;
        p->step_target_halves = fetch ? halves : 0;
        uint32_t *bytes = model ? &p->step_input_bytes : &p->step_bytes;
        *bytes += (uint32_t)(2 * p->step_target_halves * p->warps);
    }
}

/* A model's fused backward on the large class adds the network's weight gradients that its
 * lanes' registers do not keep (gj_nn_wgrad_regs) to dL/dparams each round with 16-byte
 * reductions, instead of summing them in the block's shared memory and adding the sums once:
 * ncu on an H100 showed the 64 x 2 model's kernel waiting on its instructions' latencies at 8
 * warps a multiprocessor (6.2 cycles between a warp's instructions, 31 % of the SM's issue, L2
 * 73 %), and the block sums cost each round two passes over shared memory and the barriers of
 * the warps' tasks, where the reductions join the encoding's atomics in L2 without waiting.
 * Measured there (C1 models -> 16, 2^21 points, two rounds; docs/benchmarks.md §11, the
 * thirty-seventh session), the backward took 64 x 1 2.61 -> 2.09 ms, 64 x 2 2.40 -> 2.26-2.29,
 * 64 x 3 2.78 -> 2.44, 16 x 2 2.31 -> 2.11, and 32 x 2 2.04 -> 2.08 (so 32-wide networks keep
 * their block sums); 64 x 4 and 128 wide sum in global memory already. The rule: where the plan
 * recomputes and the hidden layers are not 32 wide. The portable class (unmeasured) keeps its
 * plan. GRIDJIT_NETWORK_BLOCK_SUMS decides for every backward kernel where it is set;
 * GRIDJIT_NETWORK_FUSED_BLOCK_SUMS for this one in both classes: 1 the network's plan, 0 global. */
static void fused_sums(const gj__network_layout *layout, const gj__network_plan_hints *hints,
                       gj__network_plan *plans) {
    const int hint = hints ? hints->fused_smem_grads : 0;
    if ((hints && hints->smem_grads) || hint > 0) {
        return;
    }
    for (int c = 0; c < GJ__NETWORK_PLAN_CLASSES; ++c) {
        gj__network_plan *p = &plans[c];
        const int rule = c == GJ__NETWORK_PLAN_LARGE && p->recompute && layout->layers[0].fan_out != 32;
        if (p->smem_grads && (hint < 0 || rule)) {
            p->smem_grads = 0;
            p->backward_bytes = (uint32_t)backward_bytes(p, layout->n_params);
        }
    }
}

/* A model's fused backward sums its encoding's leading small levels in its block's shared memory
 * where the block then still fits: two a multiprocessor of 228 KiB on the large class,
 * BLOCK_BUDGET on the portable one. By default where the plan recomputes: measured on an H200,
 * with the recompute the sums took C1 + 32 x 2's backward from 2.24 to 1.98 ms and 64 x 2's from
 * 2.30 to 2.25 (64 x 4 the same); keeping the context, 64 x 2's grew from 2.44 to 2.66 and
 * 128 x 2's from 3.94 to 5.12 (docs/networks.md §9). The hint (GRIDJIT_NETWORK_SMALL_SUMS): 1
 * wherever the block fits, -1 never. */
static void small_sums(const gj__network_plan_hints *hints, uint32_t small_floats, gj__network_plan *plans) {
    const int hint = hints ? hints->small_sums : 0;
    if (hint < 0 || small_floats == 0) {
        return;
    }
    for (int c = 0; c < GJ__NETWORK_PLAN_CLASSES; ++c) {
        gj__network_plan *p = &plans[c];
        if (hint == 0 && !p->recompute) {
            continue;
        }
        const uint64_t bytes = p->backward_bytes + 4ull * small_floats;
        const int fits = c == GJ__NETWORK_PLAN_LARGE ? bytes <= GJ__NETWORK_MAX_SMEM && blocks_fitting(bytes) >= 2
                                                     : bytes <= BLOCK_BUDGET;
        if (fits) {
            p->small_sums_floats = small_floats;
            p->backward_bytes = (uint32_t)bytes;
        }
    }
}

/* A model's network over its features (the inference's second pass) waits on each tile's
 * features if its lanes read them one value at a time as the tile starts: on the H200 that kernel
 * took 0.18 ms of the 64 x 2 model's 1.08 at 2^21 points (ncu: 226 us at 16 warps a
 * multiprocessor, against 0.12 for the examples' MLP kernel over the same features). So each
 * warp copies its next tile's features into a staging of its own (cp.async, 16 bytes a copy)
 * while the tile runs, where the block then still fits: as many blocks a multiprocessor on the
 * large class (the wide block is alone anyway), BLOCK_BUDGET on the portable one. On the H100
 * the two passes took 1-2.5 % less with it (64 x 2 1.226 -> 1.199 ms, 128 x 2 1.441 -> 1.405,
 * 64 x 4 the same; docs/benchmarks.md §11, the forty-first session): by default where the
 * features are fp16; fp32 features (staged at 4 bytes a value, value by value) only with the
 * hint 1: there it measured no faster (an fp32 encoding's 64 x 4 model 1.463 against 1.464 ms,
 * its 64 x 2 model in two passes 1.441 against 1.419; the forty-second session); the hint -1
 * (GRIDJIT_NETWORK_FEATURES_FETCH=0) reads as before. */
static void features_fetch(const gj__network_layout *layout, const gj__network_plan_hints *hints,
                           unsigned feature_bytes, gj__network_plan *plans) {
    const int hint = hints ? hints->features_fetch : 0;
    for (int c = 0; c < GJ__NETWORK_PLAN_CLASSES; ++c) {
        gj__network_plan *p = &plans[c];
        /* the staging holds the encoding's values as they are (fp32 ones take twice fp16's room) */
        const uint64_t bytes = p->inference_bytes + (uint64_t)feature_bytes * 32 * layout->input_width * p->inference_warps;
        /* The wide block is alone on its multiprocessor (its registers) whatever its shared memory. */
        const int alone = p->inference_warps == WIDE_INFERENCE_WARPS;
        const int fits = c == GJ__NETWORK_PLAN_LARGE
                             ? bytes <= GJ__NETWORK_MAX_SMEM &&
                                   (alone || blocks_fitting(bytes) >= blocks_fitting(p->inference_bytes))
                             : bytes <= BLOCK_BUDGET;
        p->features_fetch = fits && (hint > 0 || (hint == 0 && feature_bytes == 2));
        p->features_bytes = p->features_fetch ? (uint32_t)bytes : p->inference_bytes;
    }
}

/* A model's fused inference kernel in the wide block gathers its encoding's coarsest levels for
 * every point; their tables are small (C1's first level: 4096 entries, 16 KiB in fp16) and hit L1,
 * but each hit is an L1 request where the kernel is bound by them (docs/networks.md §9). So each
 * block copies the leading small levels' values (small_values of the encoding's parameters,
 * value_bytes each) into its shared memory once and gathers them there, where the block still
 * fits; the shared memory it adds leaves L1 less room (the 64 KiB carveout becomes 100). The
 * forward for training that runs in this block (recomputing) does the same. The rule stages fp16
 * values, the form measured: on an H200 (forty-fourth session, beside tiny-cuda-nn's JIT) the
 * 64 x 2 model's inference into fp16 outputs went from 0.994 to 0.976 ms, 32 x 2's from 0.986 to
 * 0.956, their forwards 1 to 2 % faster. fp32 values are not staged: their copy made the 64 x 2
 * model over an fp32 encoding slower on an H100 (forty-fifth session: inference 1.707, 1.718 ms
 * against 1.662, 1.664 without it). GRIDJIT_NETWORK_STAGE_SMALL_LEVELS=1 (the hint 1) stages fp32
 * values too, =0 (the hint -1) none. */
static void small_levels_staged(const gj__network_plan_hints *hints, uint32_t small_values, unsigned value_bytes,
                                gj__network_plan *plans) {
    gj__network_plan *p = &plans[GJ__NETWORK_PLAN_LARGE];
    const int hint = hints ? hints->small_levels_staged : 0;
    /* Copied 16 bytes at a time: a level past the last whole piece stays in global memory (a
     * model's values take 2 or 4 bytes). */
    const uint32_t per_piece = 16u / value_bytes;
    const uint32_t values = small_values / per_piece * per_piece;
    const int staged = hint > 0 || (hint == 0 && value_bytes == 2);
    if (!staged || values == 0 || p->inference_warps != WIDE_INFERENCE_WARPS) {
        return;
    }
    const uint64_t bytes = p->inference_bytes + (uint64_t)value_bytes * values;
    if (bytes <= GJ__NETWORK_MAX_SMEM) {
        p->inference_table_values = values;
        p->inference_bytes = (uint32_t)bytes;
    }
}

void gj__network_plans_make(const gj__network_layout *layout, const gj__network_plan_hints *hints,
                            unsigned feature_bytes, uint32_t small_floats, gj__network_plan *plans) {
    const int model = feature_bytes > 0;
    int recomputing = 1;
    for (int c = 0; c < GJ__NETWORK_PLAN_CLASSES; ++c) {
        gj__network_plan_make(layout, hints, (gj__network_plan_class)c, &plans[c]);
        if (model && c == GJ__NETWORK_PLAN_LARGE) {
            wide_inference(layout, hints, &plans[c]);
        }
        recomputing &= plans[c].recompute;
    }
    /* The context is the same in every class: by the rule, recomputing where every class's
     * backward stages its weights. */
    for (int c = 0; c < GJ__NETWORK_PLAN_CLASSES && !recomputing; ++c) {
        keep_context(&plans[c]);
    }
    step_fetch_targets(layout, hints, model, plans);
    if (model) {
        fused_sums(layout, hints, plans);
        small_sums(hints, small_floats, plans);
        features_fetch(layout, hints, feature_bytes, plans);
        small_levels_staged(hints, small_floats, feature_bytes, plans); /* after the fetch: not its kernel's */
    }
}

void gj__network_plan_make(const gj__network_layout *layout, const gj__network_plan_hints *hints,
                           gj__network_plan_class cls, gj__network_plan *out) {
    const int large = cls == GJ__NETWORK_PLAN_LARGE;
    const uint64_t budget = large ? LARGE_BLOCK_BUDGET : BLOCK_BUDGET;
    gj__network_plan p = {0};
    uint32_t widest = layout->padded_input_width > layout->padded_output_width ? layout->padded_input_width
                                                                               : layout->padded_output_width;
    uint64_t staged = 0;
    for (uint32_t l = 0; l < layout->n_layers; ++l) {
        const gj__network_layer *layer = &layout->layers[l];
        widest = layer->fan_out > widest ? layer->fan_out : widest;
        staged += (uint64_t)(layer->fan_in + 8) * layer->fan_out;
        if (l > 0) {
            p.ctx_halves += 32ull * layer->fan_in; /* the kept value of the layer below */
        }
    }
    p.ctx_halves += 32ull * (layout->padded_input_width + layout->padded_output_width);
    p.stride = widest + 8;
    p.scratch_halves = 64ull * p.stride;
    p.forward_scratch_halves = layout->n_layers == 1 && layout->padded_output_width > GJ__NETWORK_OUT_CHUNK
                                   ? p.scratch_halves
                                   : p.scratch_halves / 2;
    staged = round_up(staged, 8);
    p.staged_halves = staged;
    p.stage_backward = 2 * staged <= PART_LIMIT;
    p.smem_grads = 4 * layout->n_params <= PART_LIMIT;
    /* Give up the block sums first, then the staging, before going below two blocks. */
    if (!fit_warps(&p, layout->n_params, budget)) {
        p.smem_grads = 0;
        if (!fit_warps(&p, layout->n_params, budget)) {
            p.stage_backward = 0;
            if (!fit_warps(&p, layout->n_params, budget)) {
                p.warps = 1; /* 1024 inputs: one warp, up to 132 KiB */
            }
        }
    }
    p.forward_warps = large ? large_forward_warps(&p, layout->n_params, staged) : forward_warps(&p, staged);
    p.stage = forward_stages(&p, staged, p.forward_warps);
    p.staged_halves = p.stage ? staged : 0;
    /* A model's backward with dL/dinput adds its weight gradients straight to global memory:
     * it writes dL/d(features) besides, and without the block's barriers and sums it took 3.51
     * ms against 3.78 (64 x 2 model, H200, with the encoding's backward after it), where the
     * fused backward to the parameters alone took 2.71 against 2.45 (it keeps the sums). */
    p.input_smem_grads = 0;
    apply_hints(hints, staged, layout->n_params, &p);
    p.recompute = recomputes(layout, hints, &p);
    p.pass_ctx_halves = p.recompute ? 32ull * layout->padded_input_width : p.ctx_halves;
    p.forward_bytes = (uint32_t)forward_bytes(&p);
    p.inference_warps = p.forward_warps;
    p.inference_stride = p.stride;
    p.inference_scratch_halves = p.forward_scratch_halves;
    p.inference_bytes = p.forward_bytes;
    p.inference_m_tiles = 0; /* templates/network.cuh's rule (gj_nn_forward_m_tiles) */
    p.backward_bytes = (uint32_t)backward_bytes(&p, layout->n_params);
    p.backward_input_bytes = (uint32_t)backward_bytes_with(&p, layout->n_params, p.input_smem_grads);
    /* The step's kernel stages where the backward does not but the forward does: the 128 x 2
     * model's step took 5.86 ms against 7.11 with its weights read from global memory (H200,
     * C1, 2^21 points), where its backward kernel is faster without (3.98 against 5.70). */
    gj__network_plan staged_step = p;
    staged_step.stage_backward = 1;
    p.step_stage = !p.stage_backward && p.staged_halves > 0 &&
                   backward_bytes(&staged_step, layout->n_params) <= GJ__NETWORK_MAX_SMEM;
    const gj__network_plan *step = p.step_stage ? &staged_step : &p;
    p.step_bytes = (uint32_t)backward_bytes(step, layout->n_params);
    p.step_input_bytes = (uint32_t)backward_bytes_with(step, layout->n_params, p.input_smem_grads);
    *out = p;
}
