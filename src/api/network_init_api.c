/* A network module's parameters initialised as tiny-cuda-nn initialises them (docs/networks.md
 * §5; network_module.h). */
#include "api/network_module.h"

#include "model/network_init.h"

#include <stdlib.h>

/* The encoding's parameters: uniform in [-1e-4, 1e-4] * scale, element i from the i-th draw
 * of pcg32(seed, 1) (what advancing the stream by i and drawing once gives). */
static gj_status init_encoding(gj_network_module *m, gj_stream stream, const gj_network_init_desc *desc) {
    const uint64_t n = m->net->encoding->layout.n_params;
    const size_t size = gj__network_encoding_param_size(m);
    float *values = malloc(n * sizeof *values);
    void *converted = size == 2 ? malloc(n * 2) : NULL;
    if (!values || (size == 2 && !converted)) {
        free(values);
        free(converted);
        return gj__fail(&m->ctx->diag, GJ_ERROR_OUT_OF_MEMORY, "gj_network_init_params: out of memory");
    }
    gj__uniform_init_params(desc->seed, 1e-4f * desc->scale, values, n);
    gj_status status = GJ_OK;
    if (desc->encoding_params) {
        if (size == 2) {
            gj_floats_to_halves(values, converted, n);
        }
        status = gj_memcpy_async(m->ctx, desc->encoding_params, size == 2 ? converted : (void *)values, n * size,
                                 stream);
    }
    if (status == GJ_OK && desc->encoding_params_fp32) {
        status = gj_memcpy_async(m->ctx, desc->encoding_params_fp32, values, n * sizeof *values, stream);
    }
    free(values);
    free(converted);
    return status;
}

gj_status gj_network_init_params(gj_network_module *module, gj_stream stream, const gj_network_init_desc *desc) {
    static const char call[] = "gj_network_init_params";
    if (!module) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj__diag *diag = &module->ctx->diag;
    gj__diag_clear(diag);
    if (!desc || desc->struct_size != sizeof *desc) {
        return gj__fail(diag, GJ_ERROR_INVALID_ARGUMENT, "%s: desc is %s", call,
                        desc ? "not prepared by gj_network_init_desc_init (struct_size)" : "NULL");
    }
    if (!desc->params && !desc->params_fp32 && !desc->encoding_params && !desc->encoding_params_fp32) {
        return gj__fail(diag, GJ_ERROR_INVALID_ARGUMENT, "%s: params or params_fp32 must be given", call);
    }
    if (!module->net->encoding && (desc->encoding_params || desc->encoding_params_fp32)) {
        return gj__fail(diag, GJ_ERROR_INVALID_ARGUMENT, "%s: encoding_params are for a model; this network has no "
                        "encoding", call);
    }
    if (!desc->params && !desc->params_fp32) {
        return init_encoding(module, stream, desc);
    }
    const uint64_t n = module->net->layout.n_params;
    float *values = malloc(n * sizeof *values);
    uint16_t *halves = desc->params ? malloc(n * sizeof *halves) : NULL;
    if (!values || (desc->params && !halves)) {
        free(values);
        free(halves);
        return gj__fail(diag, GJ_ERROR_OUT_OF_MEMORY, "%s: out of memory", call);
    }
    gj__network_init_params(&module->net->layout, module->net->config.network.activation, desc->seed, desc->scale,
                            values);
    /* Pageable host memory: each copy has completed when it returns, so the buffers may go. */
    gj_status status = GJ_OK;
    if (desc->params) {
        gj_floats_to_halves(values, halves, n);
        status = gj_memcpy_async(module->ctx, desc->params, halves, n * sizeof *halves, stream);
    }
    if (status == GJ_OK && desc->params_fp32) {
        status = gj_memcpy_async(module->ctx, desc->params_fp32, values, n * sizeof *values, stream);
    }
    free(values);
    free(halves);
    if (status == GJ_OK && (desc->encoding_params || desc->encoding_params_fp32)) {
        status = init_encoding(module, stream, desc);
    }
    return status;
}
