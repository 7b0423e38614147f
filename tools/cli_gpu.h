/* What the GPU subcommands (eval, bench, demo) share: probing the device, making a
 * module, device buffers freed together, uploads and downloads in the module's
 * precision (fp16 arrays are converted from and to float32 on the host). */
#ifndef GJ_CLI_GPU_H
#define GJ_CLI_GPU_H

#include "cli_common.h"

#define GJ_CLI_GPU_MAX_BUFFERS 32

typedef struct gj_cli_gpu {
    const char *cmd;
    gj_context *ctx;
    gj_runtime_info info;
    void *buffers[GJ_CLI_GPU_MAX_BUFFERS];
    size_t n_buffers;
} gj_cli_gpu;

/* Probes the runtime. Without a driver or device returns GJ_CLI_FAILURE, having printed
 * "gridjit CMD: no GPU: ..." when probe is NULL; a caller that words it itself (demo, which
 * then compiles without a GPU) passes probe to get the status and nothing printed. */
int gj_cli_gpu_open(const char *cmd, gj_context *ctx, gj_cli_gpu *gpu, gj_status *probe);
/* Frees every buffer (after synchronising the default stream). */
void gj_cli_gpu_close(gj_cli_gpu *gpu);

/* A module for enc/opts: its programs compiled for the device now (arch NULL), or one
 * program compiled for arch, then loaded. "gridjit CMD: cannot make the module: ..." on
 * failure. */
int gj_cli_gpu_module(gj_cli_gpu *gpu, const gj_encoding *enc, const gj_codegen_options *opts, const char *arch,
                      gj_module **module);
/* The arch NULL case: gj_module_create, then gj_module_prepare of opts' passes (every pass
 * when opts is NULL). The status, with *module NULL on failure; prints nothing. */
gj_status gj_cli_gpu_prepared_module(gj_context *ctx, const gj_encoding *enc, const gj_codegen_options *opts,
                                     gj_module **module);

/* Device memory, freed by gj_cli_gpu_close. bytes == 0 gives NULL and succeeds. */
int gj_cli_gpu_alloc(gj_cli_gpu *gpu, size_t bytes, void **ptr);
/* Allocates and uploads count floats as float32 (precision FP32) or fp16. */
int gj_cli_gpu_upload(gj_cli_gpu *gpu, const float *host, size_t count, gj_precision precision, void **ptr);
/* Downloads count elements of that precision into host floats. */
int gj_cli_gpu_download(gj_cli_gpu *gpu, const void *device, size_t count, gj_precision precision, float *host);
/* Allocates count elements of that precision, zeroed. */
int gj_cli_gpu_zeros(gj_cli_gpu *gpu, size_t count, gj_precision precision, void **ptr);

/* The GPU section of `gridjit demo` (tools/demo_gpu.c), on the GPU the caller opened; it
 * frees the buffers it made in gpu (gj_cli_gpu_close) before its module goes. */
int gj_cli_demo_gpu(gj_cli_gpu *gpu, const gj_encoding *enc);

/* a * b * c without overflow of size_t; 0 on overflow (then *out is unset). */
int gj_cli_mul_size(size_t a, size_t b, size_t c, size_t *out);

#endif
