/* GPU helpers of the eval, bench and demo subcommands (see cli_gpu.h). */
#include "cli_gpu.h"

#include "cli_program.h"

#include <stdlib.h>
#include <string.h>

int gj_cli_gpu_open(const char *cmd, gj_context *ctx, gj_cli_gpu *gpu, gj_status *probe) {
    memset(gpu, 0, sizeof *gpu);
    gpu->cmd = cmd;
    gpu->ctx = ctx;
    const gj_status status = gj_runtime_probe(ctx, &gpu->info);
    if (probe) {
        *probe = status;
    } else if (status != GJ_OK) {
        return gj_cli_status_error(cmd, ctx, status, "no GPU");
    }
    return status == GJ_OK ? GJ_CLI_OK : GJ_CLI_FAILURE;
}

void gj_cli_gpu_close(gj_cli_gpu *gpu) {
    if (!gpu->ctx) {
        return;
    }
    if (gpu->n_buffers) {
        gj_stream_synchronize(gpu->ctx, NULL); /* nothing may still use them */
    }
    for (size_t i = 0; i < gpu->n_buffers; ++i) {
        gj_device_free(gpu->ctx, gpu->buffers[i]);
    }
    gpu->n_buffers = 0;
}

gj_status gj_cli_gpu_prepared_module(gj_context *ctx, const gj_encoding *enc, const gj_codegen_options *opts,
                                     gj_module **module) {
    /* Every program now, in parallel: the compile is timed by the caller and fails here,
     * not in the middle of a measurement. */
    gj_status status = gj_module_create(ctx, enc, opts, module);
    if (status == GJ_OK) {
        status = gj_module_prepare(*module, opts ? opts->passes : GJ_PASS_ALL);
    }
    if (status != GJ_OK) {
        gj_module_destroy(*module);
        *module = NULL;
    }
    return status;
}

int gj_cli_gpu_module(gj_cli_gpu *gpu, const gj_encoding *enc, const gj_codegen_options *opts, const char *arch,
                      gj_module **module) {
    *module = NULL;
    gj_status status = GJ_OK;
    if (!arch) {
        status = gj_cli_gpu_prepared_module(gpu->ctx, enc, opts, module);
    } else {
        gj_program *prog = NULL;
        status = gj_cli_compile_program(gpu->ctx, enc, opts, NULL, arch, &prog);
        if (status == GJ_OK) {
            status = gj_module_load(gpu->ctx, enc, opts, prog, module);
        }
        gj_program_destroy(prog);
    }
    return status == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(gpu->cmd, gpu->ctx, status, "cannot make the module");
}

int gj_cli_gpu_alloc(gj_cli_gpu *gpu, size_t bytes, void **ptr) {
    *ptr = NULL;
    if (bytes == 0) {
        return GJ_CLI_OK;
    }
    if (gpu->n_buffers == GJ_CLI_GPU_MAX_BUFFERS) {
        gj_cli_error(gpu->cmd, "internal error: too many device buffers");
        return GJ_CLI_FAILURE;
    }
    gj_status status = gj_device_alloc(gpu->ctx, bytes, ptr);
    if (status != GJ_OK) {
        return gj_cli_status_error(gpu->cmd, gpu->ctx, status, "cannot allocate device memory");
    }
    gpu->buffers[gpu->n_buffers++] = *ptr;
    return GJ_CLI_OK;
}

static size_t element_size(gj_precision precision) {
    return precision == GJ_PRECISION_FP16 ? 2 : 4;
}

int gj_cli_gpu_upload(gj_cli_gpu *gpu, const float *host, size_t count, gj_precision precision, void **ptr) {
    const size_t bytes = count * element_size(precision);
    int rc = gj_cli_gpu_alloc(gpu, bytes, ptr);
    if (rc != GJ_CLI_OK || bytes == 0) {
        return rc;
    }
    const void *source = host;
    uint16_t *halves = NULL;
    if (precision == GJ_PRECISION_FP16) {
        halves = malloc(bytes);
        if (!halves) {
            gj_cli_error(gpu->cmd, "out of memory");
            return GJ_CLI_FAILURE;
        }
        gj_floats_to_halves(host, halves, count);
        source = halves;
    }
    gj_status status = gj_memcpy_to_device(gpu->ctx, *ptr, source, bytes);
    free(halves);
    return status == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(gpu->cmd, gpu->ctx, status, "cannot copy to the device");
}

int gj_cli_gpu_download(gj_cli_gpu *gpu, const void *device, size_t count, gj_precision precision, float *host) {
    const size_t bytes = count * element_size(precision);
    if (bytes == 0) {
        return GJ_CLI_OK;
    }
    void *target = host;
    uint16_t *halves = NULL;
    if (precision == GJ_PRECISION_FP16) {
        halves = malloc(bytes);
        if (!halves) {
            gj_cli_error(gpu->cmd, "out of memory");
            return GJ_CLI_FAILURE;
        }
        target = halves;
    }
    gj_status status = gj_memcpy_to_host(gpu->ctx, target, device, bytes);
    if (status == GJ_OK && halves) {
        gj_halves_to_floats(halves, host, count);
    }
    free(halves);
    return status == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(gpu->cmd, gpu->ctx, status, "cannot copy from the device");
}

int gj_cli_gpu_zeros(gj_cli_gpu *gpu, size_t count, gj_precision precision, void **ptr) {
    const size_t bytes = count * element_size(precision);
    int rc = gj_cli_gpu_alloc(gpu, bytes, ptr);
    if (rc != GJ_CLI_OK || bytes == 0) {
        return rc;
    }
    void *zeros = calloc(1, bytes); /* all-zero bits: +0 in fp16 and fp32 */
    if (!zeros) {
        gj_cli_error(gpu->cmd, "out of memory");
        return GJ_CLI_FAILURE;
    }
    gj_status status = gj_memcpy_to_device(gpu->ctx, *ptr, zeros, bytes);
    free(zeros);
    return status == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(gpu->cmd, gpu->ctx, status, "cannot copy to the device");
}

int gj_cli_mul_size(size_t a, size_t b, size_t c, size_t *out) {
    size_t ab;
    if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, out)) {
        return 0;
    }
    return 1;
}
