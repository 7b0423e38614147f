/* When a model's fused backward is compiled behind its first steps (network_module.h;
 * docs/networks.md §10, "Tiers"; the thread: network_background.c).
 *
 * The fused backward's program is the slowest of a model's training programs to compile (the
 * 64 x 2 model's: 0.95 s of NVRTC on the development machine, against 0.42 s for the forward's,
 * 0.58 s for the network's backward with dL/dinput and 0.33 s and 0.37 s for the encoding
 * module's backward programs), and the first forward for training waits for it. Where the host
 * has a core for each (GRIDJIT_NETWORK_TIERS), that first forward compiles instead the programs
 * of the unfused backward (the network's kernel writing dL/d(features), the encoding module's
 * backward: the path of the backward with dL/dinput) beside its own, and a thread compiles the
 * fused one: until it is loaded gj_network_backward runs unfused (the same gradients, summed in
 * another order), then fused. The thread's program is taken from the disk cache at once where
 * it is there (no thread, no unfused pass). */
#include "api/network_module.h"

#include "runtime/module.h"

#include <stdio.h>

/* The thread's work: part's program made (network_programs.c). */
static gj_status make_behind(gj_network_module *m, gj__network_part part, char *message, size_t size) {
    return gj__network_make_part(m, part, 0, "gj_network_forward", message, size);
}

/* The forward for training with the fused backward, and a network alone's backward with
 * dL/dinput (a model's is made on first use). */
static const gj__network_part fused_parts[] = {GJ__NETWORK_PART_TRAINING, GJ__NETWORK_PART_BACKWARD,
                                               GJ__NETWORK_PART_TRAINING_INPUT};
enum { N_FUSED_MODEL = 2, N_FUSED_NETWORK = 3 };
/* The forward for training with the unfused backward's network kernel; the encoding module's
 * backward to the parameters alone from feature-major dL/dy, one level a thread or level groups
 * (what gj_backward launches; module_args.c). */
static const gj__network_part unfused_parts[] = {GJ__NETWORK_PART_TRAINING, GJ__NETWORK_PART_TRAINING_INPUT};
#define UNFUSED_ENCODING_PARTS (1u << GJ__PART_BACKWARD | 1u << GJ__PART_BACKWARD_ROWS)

/* The unfused backward's programs (those the fused one's thread does not compile). */
static gj_status need_unfused(gj_network_module *m, const char *call) {
    pthread_mutex_lock(&m->lock);
    const int made = m->programs[GJ__NETWORK_PART_TRAINING] && m->programs[GJ__NETWORK_PART_TRAINING_INPUT] &&
                     m->encoding_module;
    pthread_mutex_unlock(&m->lock);
    gj_module *encoding_module = NULL;
    return made ? GJ_OK
                : gj__network_need_parts_beside_encoding(m, unfused_parts, 2, UNFUSED_ENCODING_PARTS, call,
                                                         &encoding_module);
}

gj_status gj__network_need_training(gj_network_module *m, const char *call) {
    if (!m->net->encoding) {
        return gj__network_need_parts(m, fused_parts, N_FUSED_NETWORK, call);
    }
    pthread_mutex_lock(&m->lock);
    const int fused = m->programs[GJ__NETWORK_PART_BACKWARD] != NULL;
    pthread_mutex_unlock(&m->lock);
    if (fused || !m->tiers) {
        return gj__network_need_parts(m, fused_parts, N_FUSED_MODEL, call);
    }
    if (gj__network_background_compiling(m, GJ__NETWORK_PART_BACKWARD)) {
        return need_unfused(m, call);
    }
    /* Once a thread has had it (loaded, or failed: then compiled here, reporting why), or where
     * the disk cache holds it, or where no thread starts: the fused backward now. */
    if (gj__network_background_tried(m, GJ__NETWORK_PART_BACKWARD) ||
        gj__network_make_part(m, GJ__NETWORK_PART_BACKWARD, 1, call, NULL, 0) == GJ_OK ||
        !gj__network_background_start(m, GJ__NETWORK_PART_BACKWARD, make_behind)) {
        gj__diag_clear(&m->ctx->diag);
        return gj__network_need_parts(m, fused_parts, N_FUSED_MODEL, call);
    }
    return need_unfused(m, call);
}

/* ---- the training step ------------------------------------------------------------------ */

/* The step's program and Adam's, and the encoding module's forward and backward to the
 * parameters alone, one level a thread or level groups: what the fused step launches. */
static const gj__network_part step_parts[] = {GJ__NETWORK_PART_STEP, GJ__NETWORK_PART_ADAM};
#define STEP_ENCODING_PARTS                                                                                        \
    (1u << GJ__PART_FORWARD | 1u << GJ__PART_FORWARD_ROWS | 1u << GJ__PART_BACKWARD | 1u << GJ__PART_BACKWARD_ROWS)
/* The step served by the passes apart: the forward for training, the network's backward with
 * dL/dinput (with the loss kernel), Adam's; the encoding module's backward. */
static const gj__network_part unfused_step_parts[] = {GJ__NETWORK_PART_TRAINING, GJ__NETWORK_PART_TRAINING_INPUT,
                                                      GJ__NETWORK_PART_ADAM};

/* The fused step's programs, made side by side where nothing is yet. */
static gj_status need_fused_step(gj_network_module *m, const char *call, gj_module **encoding_module) {
    pthread_mutex_lock(&m->lock);
    const int made = m->programs[GJ__NETWORK_PART_STEP] != NULL;
    pthread_mutex_unlock(&m->lock);
    if (made) {
        gj_status status = gj__network_need_encoding_module(m, encoding_module);
        return status == GJ_OK ? gj__network_need_parts(m, step_parts, 2, call) : status;
    }
    return gj__network_need_parts_beside_encoding(m, step_parts, 2, STEP_ENCODING_PARTS, call, encoding_module);
}

/* The thread's work for the step: the encoding module's forward programs first (the fused step
 * launches them; its backward's are the unfused step's already), then the step's program. */
static gj_status make_step_behind(gj_network_module *m, gj__network_part part, char *message, size_t size) {
    gj_module *encoding_module = NULL;
    gj_status status = gj__network_need_encoding_module(m, &encoding_module);
    if (status == GJ_OK) {
        status = gj__module_prepare_parts(encoding_module, 1u << GJ__PART_FORWARD | 1u << GJ__PART_FORWARD_ROWS,
                                          "gj_network_train_step");
    }
    if (status != GJ_OK) {
        snprintf(message, size, "%s", gj_context_errmsg(m->ctx));
        return status;
    }
    return gj__network_make_part(m, part, 0, "gj_network_train_step", message, size);
}

gj_status gj__network_need_step(gj_network_module *m, const char *call, gj_module **encoding_module, int *unfused) {
    *unfused = 0;
    pthread_mutex_lock(&m->lock);
    const int fused = m->programs[GJ__NETWORK_PART_STEP] != NULL;
    const int unfused_made = m->programs[GJ__NETWORK_PART_TRAINING] && m->programs[GJ__NETWORK_PART_TRAINING_INPUT] &&
                             m->programs[GJ__NETWORK_PART_ADAM] && m->encoding_module;
    pthread_mutex_unlock(&m->lock);
    if (fused || !m->tiers) {
        return need_fused_step(m, call, encoding_module);
    }
    if (!gj__network_background_compiling(m, GJ__NETWORK_PART_STEP)) {
        /* As for the backward: a thread's at most once, not where the cache holds it, and none
         * while another compiles (then the fused step now). */
        if (gj__network_background_tried(m, GJ__NETWORK_PART_STEP) ||
            gj__network_make_part(m, GJ__NETWORK_PART_STEP, 1, call, NULL, 0) == GJ_OK ||
            !gj__network_background_start(m, GJ__NETWORK_PART_STEP, make_step_behind)) {
            gj__diag_clear(&m->ctx->diag);
            return need_fused_step(m, call, encoding_module);
        }
    }
    *unfused = 1;
    if (unfused_made) {
        return gj__network_need_encoding_module(m, encoding_module);
    }
    return gj__network_need_parts_beside_encoding(m, unfused_step_parts, 3, UNFUSED_ENCODING_PARTS, call,
                                                  encoding_module);
}
