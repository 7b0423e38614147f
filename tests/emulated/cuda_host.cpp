// See cuda_host.h.
#include "cuda_host.h"

#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

alignas(16) gj_u16 gj_nn_smem[GJ_EMULATED_SMEM_HALVES];

// ---- barriers and exchange slots -----------------------------------------------------
namespace {
struct Warp {
    pthread_barrier_t barrier;
    const gj_u16* addr[32];
    gj_u32 a[32][4], b[32][2];
    bool pred[32];
    float value[32];
};
pthread_barrier_t block_barrier;
std::vector<Warp>* warps;

Warp& my_warp() { return (*warps)[threadIdx.x / 32]; }
int lane() { return threadIdx.x & 31; }
void warp_sync() { pthread_barrier_wait(&my_warp().barrier); }
float lo(gj_u32 v) { return gj_half_to_float((gj_u16)(v & 0xFFFFu)); }
float hi(gj_u32 v) { return gj_half_to_float((gj_u16)(v >> 16)); }
} // namespace

void __syncwarp() { warp_sync(); }
void __syncthreads() { pthread_barrier_wait(&block_barrier); }

gj_u32 __ballot_sync(gj_u32, bool pred) {
    Warp& w = my_warp();
    w.pred[lane()] = pred;
    warp_sync();
    gj_u32 m = 0;
    for (int i = 0; i < 32; ++i) m |= (gj_u32)w.pred[i] << i;
    warp_sync();
    return m;
}

bool __any_sync(gj_u32 mask, bool pred) { return __ballot_sync(mask, pred) != 0; }

float gj_nn_shfl_xor(float v, int m) {
    Warp& w = my_warp();
    w.value[lane()] = v;
    warp_sync();
    const float r = w.value[lane() ^ m];
    warp_sync();
    return r;
}

void gj_nn_red_v4(float* p, float a, float b, float c, float d) {
    if ((uintptr_t)p % 16u != 0u) {
        std::fprintf(stderr, "red.global.add.v4.f32: lane %d's address %p is not 16-byte aligned\n", lane(), (void*)p);
        std::abort();
    }
    atomicAdd(p, a);
    atomicAdd(p + 1, b);
    atomicAdd(p + 2, c);
    atomicAdd(p + 3, d);
}

// ---- ldmatrix: lane l gives the address of row l % 8 of matrix l / 8 -----------------------
gj_u32 gj_nn_smem_addr(const void* p) { return (gj_u32)((const char*)p - (const char*)gj_nn_smem); }

static void ldsm(gj_u32 (&r)[4], gj_u32 addr, bool trans) {
    // ldmatrix reads each row as one 16-byte access: a row address that is not 16-byte
    // aligned is undefined on the GPU (a misaligned-address fault), so it fails here.
    if (addr % 16u != 0u || addr + 16u > sizeof(gj_u16) * GJ_EMULATED_SMEM_HALVES) {
        std::fprintf(stderr, "ldmatrix: lane %d's row address %u is not a 16-byte aligned row of shared memory\n",
                     lane(), addr);
        std::abort();
    }
    Warp& w = my_warp();
    w.addr[lane()] = (const gj_u16*)((const char*)gj_nn_smem + addr);
    warp_sync();
    const int g = lane() / 4, t = lane() % 4;
    for (int q = 0; q < 4; ++q) {
        const gj_u16* const* rows = w.addr + 8 * q;
        if (!trans) r[q] = (gj_u32)rows[g][2 * t] | ((gj_u32)rows[g][2 * t + 1] << 16); // (row g, cols 2t, 2t+1)
        else r[q] = (gj_u32)rows[2 * t][g] | ((gj_u32)rows[2 * t + 1][g] << 16);        // (rows 2t, 2t+1, col g)
    }
    warp_sync();
}

void gj_nn_ldsm_x4(gj_u32 (&r)[4], gj_u32 addr) { ldsm(r, addr, false); }
void gj_nn_ldsm_x4_t(gj_u32 (&r)[4], gj_u32 addr) { ldsm(r, addr, true); }

// ---- mma.m16n8k16, the fragment tables of the PTX ISA ---------------------------------------
void gj_nn_mma(float (&c)[4], const gj_u32 (&a)[4], gj_u32 b0, gj_u32 b1) {
    Warp& w = my_warp();
    for (int i = 0; i < 4; ++i) w.a[lane()][i] = a[i];
    w.b[lane()][0] = b0;
    w.b[lane()][1] = b1;
    warp_sync();
    float A[16][16], B[16][8];
    for (int L = 0; L < 32; ++L) {
        const int g = L / 4, t = L % 4;
        const gj_u32* ra = w.a[L];
        A[g][2 * t] = lo(ra[0]), A[g][2 * t + 1] = hi(ra[0]);
        A[g + 8][2 * t] = lo(ra[1]), A[g + 8][2 * t + 1] = hi(ra[1]);
        A[g][2 * t + 8] = lo(ra[2]), A[g][2 * t + 9] = hi(ra[2]);
        A[g + 8][2 * t + 8] = lo(ra[3]), A[g + 8][2 * t + 9] = hi(ra[3]);
        B[2 * t][g] = lo(w.b[L][0]), B[2 * t + 1][g] = hi(w.b[L][0]);
        B[2 * t + 8][g] = lo(w.b[L][1]), B[2 * t + 9][g] = hi(w.b[L][1]);
    }
    warp_sync();
    const int g = lane() / 4, t = lane() % 4;
    const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
    for (int i = 0; i < 4; ++i) {
        double s = c[i];
        for (int k = 0; k < 16; ++k) s += (double)A[rows[i]][k] * B[k][cols[i]];
        c[i] = (float)s;
    }
}

// ---- launches -----------------------------------------------------------------------------
void gj_emulate_launch_fn(unsigned grid, unsigned block, void (*fn)(void*), void* arg) {
    gridDim.x = grid;
    blockDim.x = block;
    std::vector<Warp> ws((block + 31) / 32);
    for (Warp& w : ws) pthread_barrier_init(&w.barrier, nullptr, 32);
    warps = &ws;
    pthread_barrier_init(&block_barrier, nullptr, block);
    for (unsigned b = 0; b < grid; ++b) {
        std::memset(gj_nn_smem, 0xFF, sizeof(gj_u16) * GJ_EMULATED_SMEM_HALVES); // garbage, as on a GPU
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < block; ++t) {
            threads.emplace_back([=] {
                threadIdx.x = t;
                blockIdx.x = b;
                fn(arg);
            });
        }
        for (std::thread& th : threads) th.join();
    }
    pthread_barrier_destroy(&block_barrier);
    for (Warp& w : ws) pthread_barrier_destroy(&w.barrier);
}
