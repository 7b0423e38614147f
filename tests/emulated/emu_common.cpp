// See emu_common.h.
#include "emu_common.h"

#include "gridjit.h"

__thread gj_emu_dim3 threadIdx;
__thread gj_emu_dim3 blockIdx;
gj_emu_dim3 blockDim, gridDim;

float gj_emu_half_to_float(unsigned short bits) {
    float f;
    gj_halves_to_floats(&bits, &f, 1);
    return f;
}

unsigned short gj_emu_float_to_half_bits(float f) {
    unsigned short h;
    gj_floats_to_halves(&f, &h, 1);
    return h;
}
