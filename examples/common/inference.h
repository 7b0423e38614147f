/* The inference comparison of examples/fused_inference (also run by fused_training --bench):
 * the fused kernel against gridjit's forward kernel followed by the MLP kernel. */
#ifndef EX_INFERENCE_H
#define EX_INFERENCE_H

#include "example.h"

typedef struct ex_inference_options {
    uint64_t points;  /* default 2^21 */
    int warps;        /* warps per block of the fused kernel; default 16 */
    int bench;        /* 1: time the kernels (and a cold compile) */
    int verbose;      /* 1: print what is checked */
} ex_inference_options;

typedef struct ex_inference_result {
    double fused_ms, unfused_ms, encoding_ms; /* medians; 0 without --bench (unfused: point-major features) */
    double unfused_soa_ms, encoding_soa_ms;   /* the same with feature-major (SoA) features */
    double cold_compile_ms;                   /* the fused kernel, disk cache off; 0 without --bench */
    double model_ms;                          /* gridjit's network module of the same model (gj_network_inference) */
    double model_cold_ms;                     /* its first inference, disk cache off: compile, load, launch */
    double model_max_rel_diff;                /* module vs fused outputs */
    double max_abs_diff, max_rel_diff;        /* fused vs unfused outputs */
    double cpu_max_abs_diff;                  /* MLP kernel vs the CPU, on a sample */
    double max_abs_output;
    int registers;                            /* of the fused kernel */
    uint32_t grid, block, shared_bytes;
} ex_inference_result;

/* Without a GPU: compiles the kernels for sm_90 (and with bench measures the fused
 * kernel's cold compile, result->cold_compile_ms) and returns. With one: runs both
 * pipelines on the same points and weights, checks that they agree (exits when not), and
 * times them with bench. */
void ex_inference_run(const gj_runtime_info *info, const ex_inference_options *options, ex_inference_result *result);

#endif
