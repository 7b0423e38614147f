// The CUDA vocabulary of the encoding templates (templates/prelude.cuh, hash.cuh,
// grid_level.cuh, kernels.cuh) on the host, for the generated kernels compiled by g++
// (test_grid_emulated.cpp): one std::thread per GPU thread of a block (the same threads
// serve block after block), the threads of a block concurrently, blocks one after another.
//
// - Warp collectives (__activemask, __shfl_up_sync, __shfl_down_sync, __ballot_sync) are
//   rendezvous of the warp's lanes under one lock per block; a waiting lane sleeps on a
//   futex of its own until the collective completes (yielding first measured faster on
//   an idle machine and four times slower beside one busy process). A lane counts its
//   collectives; lanes meet when they are at the same count. A full-mask shuffle or ballot
//   waits for all 32 lanes; when one of them has exited, waits at __syncthreads or stands
//   at another collective while every other lane waits, the collective is divergent
//   (undefined on the GPU) and the launch fails with a message.
// - __activemask() reports the lanes that reached their collective of the same count once
//   the whole warp has settled (every lane waiting somewhere or exited): lanes that left
//   the kernel, wait at a barrier or stand elsewhere are not in the mask, as on the GPU.
//   Counts restart at each of a thread's points (gj_for_each_point calls
//   gj_emu_next_point under GJ_EMULATED): a lane that skipped a level's collectives (an
//   inactive level of a per-point max_level) and went on to its next point is not taken
//   for converged with lanes still at the earlier point, which the GPU would not report
//   either. Within a point a lane's inactive levels are the last ones, so no lane makes a
//   collective after skipping one.
// - Atomics are real atomics (compare-and-swap loops on the host's words), global and
//   shared alike; the packed fp16 reduction rounds each half once, as red.f16x2 does, and
//   vector reductions check the 8/16-byte alignment Hopper's instructions require.
// - Dynamic shared memory: one block's, filled with NaN patterns before each block, and
//   checked after it for writes past the launch's shared_bytes.
#ifndef GJ_EMULATED_GRID_HOST_H
#define GJ_EMULATED_GRID_HOST_H

#include <cmath>
#include <math.h>
#include <cstdint>
#include <cstring>

#include "emu_common.h"

#define GJ_EMULATED 1

// The reductions prelude.cuh needs (fp16 conversions: emu_common.h).
void gj_emu_red_f16x2(unsigned* address, unsigned value);
void gj_emu_check_vector_address(const void* address, unsigned bytes);
float atomicAdd(float* address, float value);

inline float __uint_as_float(unsigned v) {
    float f;
    std::memcpy(&f, &v, 4);
    return f;
}
inline unsigned __float_as_uint(float f) {
    unsigned v;
    std::memcpy(&v, &f, 4);
    return v;
}
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __ffs(int v) { return __builtin_ffs(v); }
// Separately rounded operations; the test is compiled with -ffp-contract=off as well.
inline float __fadd_rn(float a, float b) {
    volatile float r = a + b;
    return r;
}
inline float __fmul_rn(float a, float b) {
    volatile float r = a * b;
    return r;
}
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }

void __syncthreads();
// The calling thread starts its next point (kernels.cuh's gj_for_each_point).
void gj_emu_next_point();
unsigned __activemask();
unsigned __ballot_sync(unsigned mask, bool pred);
unsigned __shfl_up_sync(unsigned mask, unsigned value, unsigned delta);
float __shfl_up_sync(unsigned mask, float value, unsigned delta);
unsigned __shfl_down_sync(unsigned mask, unsigned value, unsigned delta);
float __shfl_down_sync(unsigned mask, float value, unsigned delta);

// The dynamic shared memory the kernels declare (extern __shared__), one block's.
#define GJ_EMU_SHARED_BYTES (48 * 1024)
extern unsigned gj_stage_words[];
extern float gj_coarse_sums[];

// A launch: body() for every thread of a grid_x x grid_y grid of `block` threads, blocks
// one after another, the threads of a block concurrently. shared_bytes: the launch's
// dynamic shared memory (writes beyond it fail the run). Returns 0, or -1 with a message
// (printed) when the emulation found an error (divergent collective, shared memory
// overrun, misaligned vector reduction).
int gj_emu_launch(unsigned grid_x, unsigned grid_y, unsigned block, unsigned shared_bytes, void (*body)(void*),
                  void* arg);

// What the launches since the last call did: warp collectives by kind, __activemask calls
// that reported a full warp, and the reductions (global and shared atomics).
struct gj_emu_stats {
    unsigned long long activemask, activemask_full, ballots, shuffles_up, shuffles_down, barriers, atomics,
        half2_reductions, vector_reductions;
};
gj_emu_stats gj_emu_take_stats();

// A generated unit as the build generated it (gen_grid_unit.c): its configuration, codegen
// options and kernels, indexed by gj__kernel_id (null where the unit has none).
#define GJ_EMU_MAX_KERNELS 32
struct gj_emu_unit {
    const char* name;
    const char* json;
    unsigned n_dims;
    int level_major;
    unsigned block_size, points_per_thread, output_width_multiple;
    void* kernels[GJ_EMU_MAX_KERNELS];
};
// Called by the generated units' static initialisers.
int gj_emu_register(const gj_emu_unit* unit);
// The registered units, sorted by name.
int gj_emu_n_units();
const gj_emu_unit* gj_emu_unit_at(int i);

#endif
