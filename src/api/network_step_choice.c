/* Whether a model's training step runs as its passes or as its own program (network_module.h;
 * docs/networks.md §10, "A model's step as its passes").
 *
 * The step's own program (NAME_train_features between the encoding's level-major forward and
 * backward kernels) runs the network's forward, loss and backward in one kernel over features in
 * memory. The passes are the model's fused forward for training, the loss as a pass, and its
 * backward to the parameters (fused where its gradients fit L2, network_backward_choice.c): for a
 * model that recomputes (docs/networks.md §8), the deeper 64-wide networks' products hide behind
 * the encoding's gathers and atomics there, not in the step's kernel. Measured on an H100 (C1 +
 * W x L -> 16, 2^21 points, fp16 outputs, forty-sixth session, ms): the forward then the backward
 * given dL/dy (`step`) against the step's own program (`fused_step`); the loss pass adds about 0.1:
 *
 *   network   step    fused_step        network   step    fused_step
 *   64 x 1    3.303   3.387             32 x 2    3.249   3.313
 *   64 x 2    3.529   3.669             16 x 2    3.344   3.343
 *   64 x 3    3.706   3.973             128 x 2   6.363   5.685 (keeps its context)
 *   64 x 4    3.982   4.454
 *
 * The loss pass (fp16 outputs and float targets read, float dL/dy written: 335 MB at 2^21 points
 * and 16 outputs, about 0.1 ms at the H100's bandwidth) was not timed beside them (no GPU could be
 * had after it was written), so the rule takes the passes only where their lead is well above
 * that: 64-wide models that recompute with at least three hidden layers (a lead of 0.27 ms and
 * more). 64 x 2's 0.14 ms is within its reach: its step keeps its own program until the whole
 * step as passes is timed against it. */
#include "api/network_module.h"

/* The rule's shape: hidden layers this wide, at least this many of them. */
#define PASSES_WIDTH 64u
#define PASSES_MIN_HIDDEN_LAYERS 3u

int gj__network_step_passes_fit(const struct gj_network *net, int recompute) {
    const gj__network_layout *l = &net->layout;
    return net->encoding != NULL && recompute && l->n_layers >= PASSES_MIN_HIDDEN_LAYERS + 1 &&
           l->layers[0].fan_out == PASSES_WIDTH;
}

int gj__network_step_as_passes(const gj_network_module *m) {
    if (!m->net->encoding) {
        return 0;
    }
    if (m->step_passes_knob != 0) {
        return m->step_passes_knob > 0;
    }
    return gj__network_step_passes_fit(m->net, m->plans[GJ__NETWORK_PLAN_PORTABLE].recompute);
}
