/* Host-side conveniences: device memory and copies for programs without the CUDA
 * runtime, and fp16 <-> float conversions for the arrays of fp16 modules. */
#include "driver.h"

#include <stdio.h>
#include <string.h>

/* The driver and the current context (the context rule of driver.h). */
static gj_status ready(gj_context *ctx, gj__driver **drv) {
    gj_status status = gj__driver_get(ctx, drv);
    CUcontext current;
    if (status == GJ_OK) {
        status = gj__driver_current_context(ctx, *drv, &current);
    }
    return status;
}

gj_status gj_device_alloc(gj_context *ctx, size_t bytes, void **ptr) {
    if (ptr) {
        *ptr = NULL;
    }
    if (!ctx || !ptr) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "gj_device_alloc: ctx and ptr must not be NULL");
    }
    if (bytes == 0) {
        return GJ_OK;
    }
    gj__driver *drv = NULL;
    gj_status status = ready(ctx, &drv);
    CUdeviceptr address = 0;
    if (status == GJ_OK) {
        char what[80];
        snprintf(what, sizeof what, "gj_device_alloc: cuMemAlloc(%zu bytes)", bytes);
        status = gj__cuda_check(ctx, drv, drv->MemAlloc(&address, bytes), what);
    }
    if (status == GJ_OK) {
        *ptr = (void *)(uintptr_t)address;
    }
    return status;
}

void gj_device_free(gj_context *ctx, void *ptr) {
    gj__driver *drv = ctx ? ctx->driver : NULL;
    if (!ptr || !drv) {
        return; /* without a loaded driver nothing can have been allocated */
    }
    CUresult r = drv->MemFree((CUdeviceptr)(uintptr_t)ptr);
    if (r != CUDA_SUCCESS) {
        gj__cuda_check(ctx, drv, r, "gj_device_free: cuMemFree");
        gj__log(ctx, GJ_LOG_WARNING, "%s", gj_context_errmsg(ctx));
    }
}

static gj_status copy_arguments(gj_context *ctx, const char *call, const void *dst, const void *src, size_t bytes) {
    if (!ctx) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    if (bytes && (!dst || !src)) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "%s: dst and src must not be NULL", call);
    }
    return GJ_OK;
}

gj_status gj_memcpy_to_device(gj_context *ctx, void *dst, const void *src, size_t bytes) {
    gj_status status = copy_arguments(ctx, "gj_memcpy_to_device", dst, src, bytes);
    gj__driver *drv = NULL;
    if (status == GJ_OK && bytes) {
        status = ready(ctx, &drv);
        if (status == GJ_OK) {
            status = gj__cuda_check(ctx, drv, drv->MemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, bytes),
                                    "gj_memcpy_to_device: cuMemcpyHtoD");
        }
    }
    return status;
}

gj_status gj_memcpy_to_host(gj_context *ctx, void *dst, const void *src, size_t bytes) {
    gj_status status = copy_arguments(ctx, "gj_memcpy_to_host", dst, src, bytes);
    gj__driver *drv = NULL;
    if (status == GJ_OK && bytes) {
        status = ready(ctx, &drv);
        if (status == GJ_OK) {
            status = gj__cuda_check(ctx, drv, drv->MemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, bytes),
                                    "gj_memcpy_to_host: cuMemcpyDtoH");
        }
    }
    return status;
}

gj_status gj_stream_synchronize(gj_context *ctx, gj_stream stream) {
    if (!ctx) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj__driver *drv = NULL;
    gj_status status = ready(ctx, &drv);
    if (status == GJ_OK) {
        status = gj__cuda_check(ctx, drv, drv->StreamSynchronize((CUstream)stream), "cuStreamSynchronize");
    }
    return status;
}

/* ----------------------------------------------------------------- fp16 */

/* Rounds the float to the nearest fp16, ties to even; overflow to infinity, NaN stays
 * NaN (quiet, with the top payload bits kept). */
static uint16_t float_to_half(float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    const uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    const uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude >= 0x7f800000u) { /* Inf or NaN */
        const uint16_t payload = magnitude > 0x7f800000u ? (uint16_t)(0x200u | ((magnitude >> 13) & 0x3ffu)) : 0;
        return (uint16_t)(sign | 0x7c00u | payload);
    }
    if (magnitude >= 0x477ff000u) { /* >= 65520: rounds past the largest half, 65504 */
        return (uint16_t)(sign | 0x7c00u);
    }
    const int exponent = (int)(magnitude >> 23); /* biased by 127 */
    if (exponent < 102) {                        /* below 2^-25: rounds to zero */
        return sign;
    }
    uint32_t mantissa, shift;
    uint32_t result;
    if (exponent < 113) { /* below 2^-14: a subnormal half, in units of 2^-24 */
        mantissa = (magnitude & 0x7fffffu) | 0x800000u;
        shift = (uint32_t)(126 - exponent); /* 14..24 */
        result = mantissa >> shift;
    } else {
        mantissa = magnitude & 0x7fffffu;
        shift = 13;
        result = ((uint32_t)(exponent - 112) << 10) | (mantissa >> shift);
    }
    const uint32_t rest = mantissa & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (result & 1u))) {
        ++result; /* may carry into the exponent, which is the right answer */
    }
    return (uint16_t)(sign | result);
}

static float half_to_float(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    uint32_t bits;
    if (exponent == 0x1fu) {
        bits = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else { /* subnormal: normalise */
        uint32_t e = 113;
        while (!(mantissa & 0x400u)) {
            mantissa <<= 1;
            --e;
        }
        bits = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
    }
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

void gj_floats_to_halves(const float *src, uint16_t *dst, size_t n) {
    for (size_t i = 0; src && dst && i < n; ++i) {
        dst[i] = float_to_half(src[i]);
    }
}

void gj_halves_to_floats(const uint16_t *src, float *dst, size_t n) {
    for (size_t i = 0; src && dst && i < n; ++i) {
        dst[i] = half_to_float(src[i]);
    }
}
