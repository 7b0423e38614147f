/* gj_network_module: a network alone, or a model fused with its encoding, run through its
 * generated kernels (docs/networks.md §8, §9): making and destroying one, its sizes. How the
 * rest of it is laid out across files: network_module.h. */
#include "api/network_module.h"

#include "codegen/facts.h"
#include "runtime/module.h"

#include <stdlib.h>
#include <string.h>

gj_status gj_network_module_create(gj_context *ctx, const gj_network *net, gj_network_module **out) {
    if (out) {
        *out = NULL;
    }
    GJ__ENTER(ctx);
    if (!net || !out) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_network_module_create: net and out must not be NULL");
    }
    gj_network_module *m = calloc(1, sizeof *m);
    char *json = gj_network_hyperparams(net);
    char err[512] = "";
    gj_status status = m && json ? gj__network_make_ex(json, 0, 0, 0, NULL, &m->net, err, sizeof err)
                                 : GJ_ERROR_OUT_OF_MEMORY;
    gj_free(json);
    if (status != GJ_OK) {
        free(m);
        return gj__fail(&ctx->diag, status, "gj_network_module_create: %s", err[0] ? err : "out of memory");
    }
    m->ctx = ctx;
    gj__network_module_options(&m->opts);
    if (m->net->encoding) {
        status = gj__network_encoding_module_options(&ctx->diag, m->net, &m->encoding_opts);
        if (status != GJ_OK) {
            gj_network_destroy(m->net);
            free(m);
            return status;
        }
    }
    gj__network_plan_hints_from_env(&m->net->hints); /* the module's own copy of the network */
    gj__network_two_pass_choice two;
    gj__network_plans_of(m->net, m->plans, &two);
    m->inference_features = two.inference;
    m->forward_features = two.forward;
    gj__network_launch_knobs(&m->forward_waves, &m->carveout);
    m->fused_backward_knob = gj__network_fused_backward_knob_from_env();
    m->step_passes_knob = gj__network_step_passes_knob_from_env();
    m->tiers = m->net->encoding && gj__network_tiers_from_env();
    m->tiers_overlap = gj__network_tiers_overlap_from_env();
    pthread_mutex_init(&m->lock, NULL);
    pthread_mutex_init(&m->encoding_lock, NULL);
    gj__network_background_init(&m->background);
    gj__workspace_init(&m->features);
    gj__workspace_init(&m->stream_scratch);
    gj__workspace_init(&m->two_pass_features);
    gj__workspace_init(&m->ring);
    *out = m;
    return GJ_OK;
}

void gj_network_module_destroy(gj_network_module *module) {
    if (!module) {
        return;
    }
    gj__network_background_join(module); /* a program compiling behind the passes */
    for (int p = 0; p < GJ__NETWORK_PART_COUNT; ++p) {
        gj_user_module_destroy(module->programs[p]);
    }
    gj_module_destroy(module->encoding_module);
    gj__workspace_destroy(&module->features, &module->ctx->runtime);
    gj__workspace_destroy(&module->stream_scratch, &module->ctx->runtime);
    gj__workspace_destroy(&module->two_pass_features, &module->ctx->runtime);
    gj__workspace_destroy(&module->ring, &module->ctx->runtime);
    gj_network_destroy(module->net);
    pthread_mutex_destroy(&module->lock);
    pthread_mutex_destroy(&module->encoding_lock);
    free(module);
}

uint64_t gj_network_module_context_bytes(const gj_network_module *module, uint64_t n) {
    return module ? (n + 31) / 32 * module->plans[GJ__NETWORK_PLAN_PORTABLE].pass_ctx_halves * 2 : 0; /* any class's */
}

size_t gj_network_module_encoding_gradient_size(const gj_network_module *module) {
    if (!module || !module->net->encoding) {
        return 0;
    }
    return gj__grad_is_fp32(&module->net->encoding->config, &module->encoding_opts) ? 4 : 2;
}

void gj_network_pass_desc_init(gj_network_pass_desc *desc) {
    if (desc) {
        memset(desc, 0, sizeof *desc);
        desc->struct_size = sizeof *desc;
        desc->dL_dparams_mode = GJ_GRAD_OVERWRITE;
    }
}

void gj_network_init_desc_init(gj_network_init_desc *desc) {
    if (desc) {
        memset(desc, 0, sizeof *desc);
        desc->struct_size = sizeof *desc;
        desc->seed = 1337;
        desc->scale = 1.0f;
    }
}

