/* Host conversions between float and IEEE fp16 bit patterns (public: the arrays of
 * fp16 modules). */
#include "gridjit.h"

#include <string.h>

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
