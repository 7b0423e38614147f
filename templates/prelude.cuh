// ---------------------------------------------------------------------------
// gridjit prelude: integer types, a minimal fp16, small vectors, atomics.
// Self-contained on purpose: NVRTC 13 bundles no cuda_fp16.h, and the generated
// source must compile with NVRTC alone and with nvcc alone.
// Guarded so that several generated encodings can share one translation unit.
// GJ_EMULATED (never defined by NVRTC or nvcc): the CPU emulation of the kernels
// (tests/emulated/grid_host.h) supplies the few PTX instructions below as functions.
// ---------------------------------------------------------------------------
#ifndef GJ_PRELUDE_CUH
#define GJ_PRELUDE_CUH

typedef unsigned char gj_u8;
typedef unsigned short gj_u16;
typedef unsigned int gj_u32;
typedef int gj_i32;
typedef unsigned long long gj_u64;

#define GJ_INLINE __device__ __forceinline__

// Aligned carriers for vector loads of table entries (one request per entry).
struct __align__(8) gj_u32x2 { gj_u32 x, y; };
struct __align__(16) gj_u32x4 { gj_u32 x, y, z, w; };

// ---- fp16 -----------------------------------------------------------------
// Storage only: arithmetic is done in fp32 and rounded once (round to nearest even).
struct __align__(2) gj_half {
    gj_u16 bits;
};

GJ_INLINE float gj_half_to_float(gj_u16 bits) {
#ifdef GJ_EMULATED
    return gj_emu_half_to_float(bits);
#else
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
    return f;
#endif
}

GJ_INLINE gj_u16 gj_float_to_half_bits(float f) {
#ifdef GJ_EMULATED
    return gj_emu_float_to_half_bits(f);
#else
    gj_u16 bits;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(f));
    return bits;
#endif
}

GJ_INLINE float gj_to_float(float v) { return v; }
GJ_INLINE float gj_to_float(gj_half v) { return gj_half_to_float(v.bits); }

template <typename T> GJ_INLINE T gj_from_float(float v);
template <> GJ_INLINE float gj_from_float<float>(float v) { return v; }
template <> GJ_INLINE gj_half gj_from_float<gj_half>(float v) {
    gj_half h;
    h.bits = gj_float_to_half_bits(v);
    return h;
}

// ---- small fixed-size vectors (the device functions' in/out types) --------
template <typename T, int N>
struct gj_vec {
    T v[N];
    GJ_INLINE T& operator[](int i) { return v[i]; }
    GJ_INLINE const T& operator[](int i) const { return v[i]; }
};

// ---- atomics ----------------------------------------------------------------
GJ_INLINE void gj_atomic_add(float* address, float value) {
    atomicAdd(address, value);
}

GJ_INLINE gj_u32 gj_pack_half2(float a, float b) {
    return (gj_u32)gj_float_to_half_bits(a) | ((gj_u32)gj_float_to_half_bits(b) << 16);
}

// One 4-byte reduction: a packed fp16 pair (half2) or the bits of one fp32.
GJ_INLINE void gj_red_u32(gj_u32* address, gj_u32 value, bool half2) {
#ifdef GJ_EMULATED
    if (half2) gj_emu_red_f16x2(address, value);
#else
    if (half2) asm volatile("red.global.add.noftz.f16x2 [%0], %1;" ::"l"(address), "r"(value) : "memory");
#endif
    else atomicAdd((float*)address, __uint_as_float(value));
}

// Two fp16 gradients in one reduction; the address must be 4-byte aligned.
GJ_INLINE void gj_atomic_add_half2(gj_half* address, float a, float b) {
    gj_red_u32((gj_u32*)address, gj_pack_half2(a, b), true);
}

// Vector reductions: one L2 request for 8 or 16 bytes. Hopper (sm_90) and later have
// them; elsewhere they fall back to 4-byte reductions. Addresses aligned to the size.
GJ_INLINE void gj_red_v2_u32(gj_u32* address, gj_u32 a, gj_u32 b, bool half2) {
#if defined(GJ_EMULATED)
    gj_emu_check_vector_address(address, 8); // as Hopper's vector reduction requires
    gj_red_u32(address, a, half2);
    gj_red_u32(address + 1, b, half2);
#elif __CUDA_ARCH__ >= 900
    if (half2) asm volatile("red.global.add.noftz.v2.f16x2 [%0], {%1, %2};" ::"l"(address), "r"(a), "r"(b) : "memory");
    else asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(address), "f"(__uint_as_float(a)), "f"(__uint_as_float(b)) : "memory");
#else
    gj_red_u32(address, a, half2);
    gj_red_u32(address + 1, b, half2);
#endif
}

GJ_INLINE void gj_red_v4_u32(gj_u32* address, gj_u32 a, gj_u32 b, gj_u32 c, gj_u32 d, bool half2) {
#if defined(GJ_EMULATED)
    gj_emu_check_vector_address(address, 16);
    gj_red_u32(address, a, half2);
    gj_red_u32(address + 1, b, half2);
    gj_red_u32(address + 2, c, half2);
    gj_red_u32(address + 3, d, half2);
#elif __CUDA_ARCH__ >= 900
    if (half2) {
        asm volatile("red.global.add.noftz.v4.f16x2 [%0], {%1, %2, %3, %4};" ::"l"(address), "r"(a), "r"(b), "r"(c), "r"(d)
                     : "memory");
    } else {
        asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(address), "f"(__uint_as_float(a)),
                     "f"(__uint_as_float(b)), "f"(__uint_as_float(c)), "f"(__uint_as_float(d))
                     : "memory");
    }
#else
    gj_red_v2_u32(address, a, b, half2);
    gj_red_v2_u32(address + 2, c, d, half2);
#endif
}

#endif // GJ_PRELUDE_CUH
