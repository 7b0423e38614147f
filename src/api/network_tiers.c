/* When a model's slowest programs are compiled behind its first steps (network_module.h;
 * docs/networks.md §10, "Tiers"; the thread: network_background.c).
 *
 * A model's fused backward and its training step's program are the slowest of its programs to
 * compile (the 64 x 2 model's, NVRTC on the 2-core development machine: 0.83-0.92 s and
 * 1.11-1.17 s, where the forward's takes 0.39-0.44 s, the network's backward with dL/dinput
 * 0.60-0.70 s and the encoding module's backward programs 0.30-0.43 s), and the first forward
 * for training, or the first step, waits for them. Where the host has a core for each
 * (GRIDJIT_NETWORK_TIERS), the first call compiles instead the programs of the passes apart
 * (the forward's; the network's kernel writing dL/d(features), with the loss kernel; Adam's for
 * the step; the encoding module's backward) side by side, and a thread compiles the slow one:
 * until it is loaded the backward, or the step, runs as those passes (the same results, summed
 * in another order), then fused. A program the disk cache holds is taken at once (no thread). */
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
 * backward to the parameters alone from feature-major dL/dy (the one form gj_backward launches). */
static const gj__network_part unfused_parts[] = {GJ__NETWORK_PART_TRAINING, GJ__NETWORK_PART_TRAINING_INPUT};

/* Whether the module's encoding module is made (the unfused passes' made with their programs). */
static int encoding_module_made(gj_network_module *m) {
    pthread_mutex_lock(&m->encoding_lock);
    const int made = m->encoding_module != NULL;
    pthread_mutex_unlock(&m->encoding_lock);
    return made;
}

/* The unfused backward's programs (those the fused one's thread does not compile); user unused. */
static gj_status need_unfused(gj_network_module *m, const char *call, void *user) {
    (void)user;
    gj_module *encoding_module = NULL;
    return gj__network_made(m, unfused_parts, 2) && encoding_module_made(m)
               ? GJ_OK
               : gj__network_need_parts_beside_encoding(m, unfused_parts, 2, GJ__NETWORK_ENCODING_BACKWARD, call,
                                                        &encoding_module);
}

/* What the passes apart do about part (BEHIND_*): a thread compiles it (serve apart), or none has
 * had it and the disk cache does not hold it (serve apart and start one), or the fused program is
 * made now (loaded from the cache) or is to be (a thread had it before: loaded, or failed, and
 * the passes compile it, reporting why; or the module's one thread compiles another part). */
enum { BEHIND_NONE, BEHIND_RUNS, BEHIND_START };
static int behind_plan(gj_network_module *m, gj__network_part part, const char *call) {
    if (gj__network_background_compiling(m, part)) {
        return BEHIND_RUNS;
    }
    const int start = !gj__network_background_busy(m) && !gj__network_background_tried(m, part) &&
                      gj__network_make_part(m, part, 1, call, NULL, 0) != GJ_OK;
    gj__diag_clear(&m->ctx->diag); /* a probe's miss says nothing */
    return start ? BEHIND_START : BEHIND_NONE;
}

/* The passes apart's programs made (need), with part's thread started as plan says: after them,
 * so that the first call's programs do not share the host with the slowest program while they
 * compile (GRIDJIT_NETWORK_TIERS_OVERLAP=1: before, beside them). A thread that cannot start
 * leaves part to the passes' next call, which compiles it (it has been given to a thread). */
static gj_status serve_apart(gj_network_module *m, int plan, gj__network_part part, gj__network_make_fn make,
                             gj_status (*need)(gj_network_module *, const char *, void *), const char *call,
                             void *user) {
    const int start = plan == BEHIND_START;
    if (start && m->tiers_overlap) {
        gj__network_background_start(m, part, make);
    }
    gj_status status = need(m, call, user);
    if (start && !m->tiers_overlap && status == GJ_OK) {
        gj__network_background_start(m, part, make);
    }
    return status;
}

/* The programs of passes that end in a model's backward to the parameters: those of fused (with
 * the fused backward's) and *apart 0, or need_apart's (user its argument) and *apart 1 where the
 * backward runs apart on this device or (tiers) while a thread compiles the fused one. */
static gj_status need_with_backward(gj_network_module *m, gj_stream stream, const gj__network_part *fused,
                                    size_t n_fused, gj_status (*need_apart)(gj_network_module *, const char *, void *),
                                    void *user, const char *call, int *apart) {
    *apart = 1;
    if (!gj__network_backward_fused(m, stream, call)) { /* the backward runs apart on this device */
        return need_apart(m, call, user);
    }
    const gj__network_part backward = GJ__NETWORK_PART_BACKWARD;
    const int plan = gj__network_made(m, &backward, 1) || !m->tiers ? BEHIND_NONE : behind_plan(m, backward, call);
    if (plan == BEHIND_NONE) {
        *apart = 0;
        return gj__network_need_parts(m, fused, n_fused, call);
    }
    return serve_apart(m, plan, backward, make_behind, need_apart, call, user);
}

gj_status gj__network_need_training(gj_network_module *m, gj_stream stream, const char *call) {
    if (!m->net->encoding) {
        return gj__network_need_parts(m, fused_parts, N_FUSED_NETWORK, call);
    }
    int apart = 0;
    return need_with_backward(m, stream, fused_parts, N_FUSED_MODEL, need_unfused, NULL, call, &apart);
}

/* ---- the training step ------------------------------------------------------------------ */

/* The step's program and Adam's, and the encoding module's forward and backward to the
 * parameters alone: what the fused step launches. */
static const gj__network_part step_parts[] = {GJ__NETWORK_PART_STEP, GJ__NETWORK_PART_ADAM};
#define STEP_ENCODING_USES (GJ__NETWORK_ENCODING_FORWARD | GJ__NETWORK_ENCODING_BACKWARD)
/* The step served by the passes apart: the forward for training, the network's backward with
 * dL/dinput (with the loss kernel), Adam's; the encoding module's backward. */
static const gj__network_part unfused_step_parts[] = {GJ__NETWORK_PART_TRAINING, GJ__NETWORK_PART_TRAINING_INPUT,
                                                      GJ__NETWORK_PART_ADAM};

/* The fused step's programs, made side by side where nothing is yet. */
static gj_status need_fused_step(gj_network_module *m, const char *call, gj_module **encoding_module) {
    if (gj__network_made(m, step_parts, 1)) {
        gj_status status = gj__network_need_encoding_module(m, encoding_module);
        return status == GJ_OK ? gj__network_need_parts(m, step_parts, 2, call) : status;
    }
    return gj__network_need_parts_beside_encoding(m, step_parts, 2, STEP_ENCODING_USES, call, encoding_module);
}

/* The thread's work for the step: the step's program, and beside it the encoding module's forward
 * program (the fused step launches it; its backward's are the unfused step's already), compiled
 * side by side (one after the other, the forward's 150 ms on two cores came first). */
static gj_status make_step_behind(gj_network_module *m, gj__network_part part, char *message, size_t size) {
    return gj__network_make_part_beside_encoding(m, part, GJ__NETWORK_ENCODING_FORWARD, "gj_network_train_step",
                                                 message, size);
}

/* The unfused step's programs, and the encoding module (*(gj_module **)user). */
static gj_status need_unfused_step(gj_network_module *m, const char *call, void *user) {
    gj_module **encoding_module = user;
    return gj__network_made(m, unfused_step_parts, 3) && encoding_module_made(m)
               ? gj__network_need_encoding_module(m, encoding_module) /* made: only fetched */
               : gj__network_need_parts_beside_encoding(m, unfused_step_parts, 3, GJ__NETWORK_ENCODING_BACKWARD, call,
                                                        encoding_module);
}

gj_status gj__network_need_step(gj_network_module *m, const char *call, gj_module **encoding_module, int *unfused) {
    *unfused = 0;
    const int plan =
        gj__network_made(m, step_parts, 1) || !m->tiers ? BEHIND_NONE : behind_plan(m, GJ__NETWORK_PART_STEP, call);
    if (plan == BEHIND_NONE) {
        return need_fused_step(m, call, encoding_module);
    }
    *unfused = 1;
    return serve_apart(m, plan, GJ__NETWORK_PART_STEP, make_step_behind, need_unfused_step, call, encoding_module);
}

/* ---- the training step as its passes (network_step_choice.c) ------------------------------ */

/* The forward's program (with the loss kernel), the fused backward's and Adam's. */
static const gj__network_part passes_step_parts[] = {GJ__NETWORK_PART_TRAINING, GJ__NETWORK_PART_BACKWARD,
                                                     GJ__NETWORK_PART_ADAM};

gj_status gj__network_need_step_passes(gj_network_module *m, gj_stream stream, const char *call,
                                       gj_module **encoding_module, int *apart) {
    return need_with_backward(m, stream, passes_step_parts, 3, need_unfused_step, encoding_module, call, apart);
}
