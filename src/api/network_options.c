/* What a network module's programs are generated with, and the measuring knobs it reads
 * (network_module.h). */
#include "api/network_module.h"

#include "codegen/facts.h"
#include "codegen/options.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The forward passes' grid, in waves, unless GRIDJIT_NETWORK_WAVES (1 ... 64) says otherwise:
 * a measuring knob (docs/networks.md §8), read when a module is made; it changes no code. */
#define FORWARD_WAVES 8

/* An environment variable as a whole number from lo to hi; fallback when unset or anything else. */
static long env_in_range(const char *name, long lo, long hi, long fallback) {
    const char *v = getenv(name);
    char *end = NULL;
    const long x = v ? strtol(v, &end, 10) : 0;
    return v && *v && end && !*end && x >= lo && x <= hi ? x : fallback;
}

/* GRIDJIT_NETWORK_GRADIENTS_FP32=1: a model sums its encoding's gradients in fp32 whatever
 * the encoding's precision (the code-generation option gradients_fp32), a measuring knob. */
static int env_gradients_fp32(void) {
    const char *v = getenv("GRIDJIT_NETWORK_GRADIENTS_FP32");
    return v && !strcmp(v, "1");
}

/* What a module generates with (and gj_network_precompile, so that their keys agree). */
void gj__network_module_options(gj_codegen_options *opts) {
    gj_codegen_options_init(opts);
    opts->name = GJ__NETWORK_DEFAULT_NAME;
    opts->gradients_fp32 = env_gradients_fp32();
}

/* What a model's encoding module is made with (and gj_network_precompile compiles): the
 * backward passes, and fp32 gradients wherever the encoding accumulates in fp32 anyway
 * (fp32 parameters, or one feature per level), so that the caller's dL/dencoding_params is
 * fp32 exactly where the fused kernel takes it so (docs/design.md §8.3). */
gj_status gj__network_encoding_module_options(const gj__diag *diag, const struct gj_network *net, gj_codegen_options *out) {
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = GJ_PASS_FORWARD | GJ_PASS_BACKWARD;
    opts.gradients_fp32 = env_gradients_fp32();
    opts.gradients_fp32 = gj__grad_is_fp32(&net->encoding->config, &opts);
    return gj__codegen_options_resolve(diag, &opts, out);
}

/* An environment variable as 1, 2, 4 or 8 (warps), or as 0 / 1 (-1 / 1); 0 when unset or
 * anything else. */
static uint32_t env_warps(const char *name) {
    const char *v = getenv(name);
    return v && (!strcmp(v, "1") || !strcmp(v, "2") || !strcmp(v, "4") || !strcmp(v, "8")) ? (uint32_t)atoi(v) : 0u;
}

static int env_switch(const char *name) {
    const char *v = getenv(name);
    return !v ? 0 : !strcmp(v, "1") ? 1 : !strcmp(v, "0") ? -1 : 0;
}

/* Overrides of the kernels' block plan for measuring launch shapes (docs/networks.md,
 * "Launch shapes"), read once per module. They change the generated code, hence the
 * programs' cache keys. */
void gj__network_plan_hints_from_env(gj__network_plan_hints *hints) {
    hints->warps = env_warps("GRIDJIT_NETWORK_WARPS");
    hints->stage = env_switch("GRIDJIT_NETWORK_STAGE");
    hints->smem_grads = env_switch("GRIDJIT_NETWORK_BLOCK_SUMS");
    hints->min_blocks = (uint32_t)env_in_range("GRIDJIT_NETWORK_MIN_BLOCKS", 1, 8, 0);
    hints->forward_warps = env_warps("GRIDJIT_NETWORK_FORWARD_WARPS");
    hints->forward_registers = (uint32_t)env_in_range("GRIDJIT_NETWORK_FORWARD_REGISTERS", 64, 255, 0);
    hints->step_min_blocks = (uint32_t)env_in_range("GRIDJIT_NETWORK_STEP_MIN_BLOCKS", 1, 8, 0);
    hints->step_m_tiles = (uint32_t)env_in_range("GRIDJIT_NETWORK_STEP_M_TILES", 1, 1, 0);
    /* 0 asks for none: -1 in the hint, whose 0 leaves the rule. */
    const int sums = (int)env_in_range("GRIDJIT_NETWORK_SUM_REGISTERS", 0, 255, -1);
    hints->sum_registers = sums == 0 ? -1 : sums > 0 ? sums : 0;
    hints->step_fetch_targets = env_switch("GRIDJIT_NETWORK_STEP_FETCH_TARGETS");
    hints->recompute = env_switch("GRIDJIT_NETWORK_RECOMPUTE");
    hints->small_sums = env_switch("GRIDJIT_NETWORK_SMALL_SUMS");
    hints->fused_smem_grads = env_switch("GRIDJIT_NETWORK_FUSED_BLOCK_SUMS");
    hints->inference_features = env_switch("GRIDJIT_NETWORK_INFERENCE_FEATURES");
    hints->features_fetch = env_switch("GRIDJIT_NETWORK_FEATURES_FETCH");
    hints->forward_features = env_switch("GRIDJIT_NETWORK_FORWARD_FEATURES");
    hints->small_levels_staged = env_switch("GRIDJIT_NETWORK_STAGE_SMALL_LEVELS");
}

void gj__network_launch_knobs(uint32_t *forward_waves, int *carveout) {
    *forward_waves = (uint32_t)env_in_range("GRIDJIT_NETWORK_WAVES", 1, 64, FORWARD_WAVES);
    *carveout = (int)env_in_range("GRIDJIT_NETWORK_CARVEOUT", -1, 100, GJ__NETWORK_CARVEOUT_RULE);
}

/* The CPUs this process may run on (its affinity mask; the online ones where that is unknown). */
static long usable_cpus(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        return CPU_COUNT(&set);
    }
    return sysconf(_SC_NPROCESSORS_ONLN);
}

/* Tiers pay where each program compiling at once has a core: the unfused backward's four (the
 * forward's, the network's backward with dL/dinput, the encoding's two) beside the fused one's
 * thread. With fewer, they share cores with it and the first step comes later, not sooner. */
int gj__network_tiers_from_env(void) {
    const int knob = env_switch("GRIDJIT_NETWORK_TIERS");
    return knob != 0 ? knob > 0 : usable_cpus() >= GJ__NETWORK_TIER_CPUS;
}

int gj__network_fused_backward_knob_from_env(void) {
    return env_switch("GRIDJIT_NETWORK_FUSED_BACKWARD");
}

int gj__network_step_passes_knob_from_env(void) {
    return env_switch("GRIDJIT_NETWORK_STEP_PASSES");
}

int gj__network_tiers_overlap_from_env(void) {
    return env_switch("GRIDJIT_NETWORK_TIERS_OVERLAP") > 0;
}
