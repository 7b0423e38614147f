// The CUDA vocabulary templates/network.cuh and network_kernels.cuh use, on the host: one
// std::thread per GPU thread, warp collectives (ldmatrix, mma.sync, ballots, shuffles) and block
// barriers done through shared exchange slots and barriers, written from the PTX ISA's
// fragment tables (independently of the templates' own index arithmetic).
#ifndef GJ_EMULATED_CUDA_HOST_H
#define GJ_EMULATED_CUDA_HOST_H

#include <cmath>
#include <math.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "emu_common.h"

#define GJ_NN_EMULATED 1
#define GJ_INLINE inline

typedef unsigned char gj_u8;
typedef unsigned short gj_u16;
typedef unsigned int gj_u32;
typedef int gj_i32;
typedef unsigned long long gj_u64;
struct alignas(8) gj_u32x2 { gj_u32 x, y; };
struct alignas(16) gj_u32x4 { gj_u32 x, y, z, w; };
struct alignas(2) gj_half { gj_u16 bits; };

inline float gj_half_to_float(gj_u16 bits) { return gj_emu_half_to_float(bits); }
inline gj_u16 gj_float_to_half_bits(float f) { return gj_emu_float_to_half_bits(f); }
inline float gj_to_float(float v) { return v; }
inline float gj_to_float(gj_half v) { return gj_half_to_float(v.bits); }
template <typename T> T gj_from_float(float v);
template <> inline float gj_from_float<float>(float v) { return v; }
template <> inline gj_half gj_from_float<gj_half>(float v) { return gj_half{gj_float_to_half_bits(v)}; }
template <typename T, int N> struct gj_vec {
    T v[N];
    T& operator[](int i) { return v[i]; }
    const T& operator[](int i) const { return v[i]; }
};
inline gj_u32 gj_pack_half2(float a, float b) {
    return (gj_u32)gj_float_to_half_bits(a) | ((gj_u32)gj_float_to_half_bits(b) << 16);
}

inline float __uint_as_float(gj_u32 v) {
    float f;
    std::memcpy(&f, &v, sizeof f);
    return f;
}
inline gj_u32 __float_as_uint(float f) {
    gj_u32 v;
    std::memcpy(&v, &f, sizeof v);
    return v;
}
inline float __expf(float x) { return std::exp(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }

void __syncwarp();
void __syncthreads();
gj_u32 __ballot_sync(gj_u32 mask, bool pred);
bool __any_sync(gj_u32 mask, bool pred);
inline float atomicAdd(float* address, float value) { return gj_emu_atomic_add(address, value); }

// Shared memory: one block's, reused block after block.
#define GJ_EMULATED_SMEM_HALVES (96 * 1024)
extern gj_u16 gj_nn_smem[];

gj_u32 gj_nn_smem_addr(const void* p);
void gj_nn_ldsm_x4(gj_u32 (&r)[4], gj_u32 addr);
void gj_nn_ldsm_x4_t(gj_u32 (&r)[4], gj_u32 addr);
void gj_nn_mma(float (&c)[4], const gj_u32 (&a)[4], gj_u32 b0, gj_u32 b1);
float gj_nn_shfl_xor(float v, int m);
// Fails unless p is 16-byte aligned (as the GPU's 16-byte reduction requires), then four atomics.
void gj_nn_red_v4(float* p, float a, float b, float c, float d);
// cp.async: the copy done at once (nothing is left in flight to wait for).
inline void gj_nn_copy4_async(void* s, const void* g) { std::memcpy(s, g, 4); }
// 16-byte aligned on both sides, as cp.async's 16-byte copies must be (a fault on the GPU).
inline void gj_nn_copy16_async(void* s, const void* g) {
    if ((uintptr_t)s % 16u || (uintptr_t)g % 16u) {
        std::fprintf(stderr, "cp.async 16: %p <- %p is not 16-byte aligned\n", s, g);
        std::abort();
    }
    std::memcpy(s, g, 16);
}
inline void gj_nn_copies_commit() {}
inline void gj_nn_copies_wait() {}

// Runs body(thread) for every thread of grid x block, one block at a time, the threads of
// a block concurrently.
void gj_emulate_launch_fn(unsigned grid, unsigned block, void (*fn)(void*), void* arg);
template <class F> void gj_emulate_launch(unsigned grid, unsigned block, F body) {
    gj_emulate_launch_fn(grid, block, [](void* a) { (*(F*)a)(); }, &body);
}

#endif
