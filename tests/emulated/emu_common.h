// What the two CUDA emulations (cuda_host.h: the network templates; grid_host.h: the
// encoding kernels) do alike: the CUDA qualifiers, the thread and block indices, the fp16
// conversions and the float atomic add. The rest stays apart on purpose: the network
// emulation needs warp exchange slots for ldmatrix and mma.sync and plain barriers, the
// encoding kernels' emulation tracks each lane to report divergent collectives and checks
// shared memory and reduction alignment.
#ifndef GJ_EMULATED_EMU_COMMON_H
#define GJ_EMULATED_EMU_COMMON_H

// The CUDA qualifiers, as nothing (or inline) on the host.
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __shared__
#define __constant__
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(n)

// GNU __thread, not thread_local: an extern thread_local is reached through a wrapper
// function whose weak initialiser UBSan's null check misreads as a null object.
struct gj_emu_dim3 {
    unsigned x, y, z;
};
extern __thread gj_emu_dim3 threadIdx;
extern __thread gj_emu_dim3 blockIdx;
extern gj_emu_dim3 blockDim, gridDim;

// cvt.f32.f16 and cvt.rn.f16.f32: the library's host conversions (round to nearest even).
float gj_emu_half_to_float(unsigned short bits);
unsigned short gj_emu_float_to_half_bits(float f);

// atomicAdd on a float: a compare-and-swap loop on the word, safe beside other threads.
inline float gj_emu_atomic_add(float* address, float value) {
    unsigned* word = (unsigned*)address;
    unsigned old = __atomic_load_n(word, __ATOMIC_RELAXED), desired;
    float before;
    do {
        __builtin_memcpy(&before, &old, 4);
        const float sum = before + value;
        __builtin_memcpy(&desired, &sum, 4);
    } while (!__atomic_compare_exchange_n(word, &old, desired, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return before;
}

#endif
