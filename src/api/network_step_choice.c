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
 * given dL/dy (`step`) against the step's own program (`fused_step`):
 *
 *   network   step    fused_step        network   step    fused_step
 *   64 x 1    3.303   3.387             32 x 2    3.249   3.313
 *   64 x 2    3.529   3.669             16 x 2    3.344   3.343
 *   64 x 3    3.706   3.973             128 x 2   6.363   5.685 (keeps its context)
 *   64 x 4    3.982   4.454
 *
 * The loss pass then took 0.29 ms on top of `step` (float dL/dy, one value a thread over 256
 * blocks). Written 16 bytes a thread at a time and handing the backward fp16 dL/dy (256 MB at 2^21
 * points and 16 outputs), it takes about 0.09 (forty-seventh session, H100, `train_step` with Adam,
 * two rounds, the passes against the step's program): 64 x 2 3.758, 3.764 against 3.858, 3.856;
 * 64 x 3 3.963, 3.966 against 4.169, 4.161; 64 x 4 4.197, 4.201 against 4.626, 4.626. So the rule
 * takes the passes where `fused_step` leads `step` by well over that: 64-wide models that
 * recompute with at least two hidden layers. 64 x 1 (0.08), 32 x 2 (0.06) and 16 x 2 (0) keep
 * the step's program, as does 128 x 2, which keeps its context. */
#include "api/network_module.h"

/* The rule's shape: hidden layers this wide, at least this many of them. */
#define PASSES_WIDTH 64u
#define PASSES_MIN_HIDDEN_LAYERS 2u

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
