/* fused_inference: tiny-cuda-nn's default HashGrid and a 64-neuron MLP in one kernel
 * (fused_inference.cu), compared with gridjit's own forward kernel followed by an MLP
 * kernel on the same weights, and with gridjit's network module of the same model
 * (gj_network_inference: a kernel gridjit generates for the configuration).
 *
 *   fused_inference [--bench] [--points N] [--warps W]
 *
 * Without a GPU it compiles the kernels for sm_90 and says that nothing ran. With one, it
 * checks the MLP kernel against the CPU and the fused outputs against the unfused ones and
 * the module's;
 * --bench adds the times (median of 25 launches after 5 warm-ups) and the cold compile
 * time of the fused kernel, as one JSON line. */
#define _POSIX_C_SOURCE 200809L
#include "inference.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
    fputs("usage: fused_inference [--bench] [--points N] [--warps W]\n", stderr);
    exit(2);
}

int main(int argc, char **argv) {
    ex_inference_options options = {.points = 1ull << 21, .warps = 16, .bench = 0, .verbose = 1};
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--bench") == 0) {
            options.bench = 1;
        } else if (strcmp(argv[i], "--points") == 0 && i + 1 < argc) {
            options.points = strtoull(argv[++i], NULL, 0);
        } else if (strcmp(argv[i], "--warps") == 0 && i + 1 < argc) {
            options.warps = atoi(argv[++i]);
        } else {
            usage();
        }
    }
    if (options.bench) {
        setenv("CUDA_CACHE_DISABLE", "1", 0); /* cold compiles: no driver-side cache either */
    }
    if (options.warps < 1 || options.warps > 32 || options.points < 1) {
        usage();
    }
    ex_init();
    gj_runtime_info info;
    if (!ex_gpu_present(&info)) {
        ex_inference_run(NULL, &options, &(ex_inference_result){0});
        printf("no GPU: nothing ran\n");
        gj_context_destroy(ex_ctx);
        return 0;
    }
    printf("device: %s (%s)\n", info.device_name, info.arch);
    ex_inference_result r;
    ex_inference_run(&info, &options, &r);
    printf("fused kernel: %d registers, %u blocks of %u threads, %u bytes of shared memory\n", r.registers, r.grid,
           r.block, r.shared_bytes);
    if (options.bench) {
        printf("{\"example\": \"fused_inference\", \"device\": \"%s\", \"points\": %llu, \"warps\": %d, "
               "\"inference_ms\": {\"fused\": %.4f, \"unfused\": %.4f, \"unfused_soa\": %.4f, \"encoding_only\": %.4f, "
               "\"encoding_only_soa\": %.4f, \"module\": %.4f}, "
               "\"cold_compile_ms\": {\"fused_inference\": %.1f, \"module_first_inference\": %.1f}, "
               "\"max_abs_diff\": %.3g, \"max_rel_diff\": %.3g, \"module_max_rel_diff\": %.3g, "
               "\"registers\": %d, \"cuda_cache_disable\": \"%s\"}\n",
               info.device_name, (unsigned long long)options.points, options.warps, r.fused_ms, r.unfused_ms,
               r.unfused_soa_ms, r.encoding_ms, r.encoding_soa_ms, r.model_ms, r.cold_compile_ms, r.model_cold_ms,
               r.max_abs_diff, r.max_rel_diff, r.model_max_rel_diff, r.registers,
               getenv("CUDA_CACHE_DISABLE") ? getenv("CUDA_CACHE_DISABLE") : "");
    }
    gj_context_destroy(ex_ctx);
    return 0;
}
