// See grid_host.h.
#include "grid_host.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

// Each kernel declares its own name for the one dynamic shared memory of a block; a
// kernel uses one of them, so two arrays serve (each checked past the launch's size).
alignas(16) unsigned gj_stage_words[GJ_EMU_SHARED_BYTES / 4];
alignas(16) float gj_coarse_sums[GJ_EMU_SHARED_BYTES / 4];

namespace {
// An error found by the emulation: the kernel threads unwind with it.
struct emu_error {};

enum lane_state { RUNNING, COLLECTIVE, BARRIER, EXITED };
enum collective_kind { ACTIVEMASK, SHFL_UP, SHFL_DOWN, BALLOT };

struct lane {
    lane_state state = RUNNING;
    collective_kind kind = ACTIVEMASK;
    unsigned long long point = 0; // the thread's point (gj_emu_next_point), counted
    unsigned long long count = 0; // collectives made for that point
    unsigned mask = 0, value = 0, delta = 0, result = 0;
    bool done = false;
    // Bumped (under the block's lock) when the lane may go on: its collective completed,
    // its barrier released, or the run failed. The lane sleeps on it alone (a futex), so
    // that waking one warp costs 32 wake-ups and no convoy on the lock.
    std::atomic<unsigned> wake{0};
    void reset() {
        state = RUNNING;
        kind = ACTIVEMASK;
        point = count = 0;
        mask = value = delta = result = 0;
        done = false;
    }
};

struct block_state {
    std::mutex lock;
    std::vector<lane> lanes;
    unsigned threads = 0, alive = 0, at_barrier = 0;
    unsigned long long barrier_generation = 0;
    // Futex words: a block starts (its number; stop ends the workers), a block's last
    // thread has exited.
    std::atomic<unsigned> started{0}, ended{0};
    std::atomic<bool> stop{false};
    bool failed = false;
    std::string message;
};

block_state* the_block;
thread_local unsigned my_thread;

// Counted under the block's lock (collectives, barriers) or atomically (reductions).
gj_emu_stats stats;
void count(unsigned long long& counter) { __atomic_fetch_add(&counter, 1ull, __ATOMIC_RELAXED); }

void wake(lane& l) {
    l.wake.fetch_add(1u, std::memory_order_release);
    syscall(SYS_futex, (unsigned*)&l.wake, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

void wake_all(block_state& b) {
    for (lane& l : b.lanes) wake(l);
}

// Sleeps while *word == seen (another thread changes it and calls bump).
void futex_wait(std::atomic<unsigned>& word, unsigned seen) {
    while (word.load(std::memory_order_acquire) == seen) {
        syscall(SYS_futex, (unsigned*)&word, FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
    }
}

void bump(std::atomic<unsigned>& word) {
    word.fetch_add(1u, std::memory_order_release);
    syscall(SYS_futex, (unsigned*)&word, FUTEX_WAKE_PRIVATE, 1 << 30, nullptr, nullptr, 0);
}

void fail_locked(block_state& b, const char* format, ...) {
    if (!b.failed) {
        char text[512];
        va_list ap;
        va_start(ap, format);
        std::vsnprintf(text, sizeof text, format, ap);
        va_end(ap);
        b.failed = true;
        b.message = text;
    }
    wake_all(b);
}

// An error outside the lock (misaligned reduction): recorded, then the thread unwinds.
[[noreturn]] void fail(const char* what, const void* address, unsigned bytes) {
    block_state& b = *the_block;
    std::unique_lock<std::mutex> g(b.lock);
    fail_locked(b, "%s: thread %u of block (%u, %u): address %p is not %u-byte aligned", what, my_thread,
                blockIdx.x, blockIdx.y, address, bytes);
    throw emu_error();
}

unsigned warp_of(unsigned t) { return t / 32; }

bool settled(const block_state& b, unsigned w) {
    for (unsigned t = 32 * w; t < std::min(b.threads, 32 * w + 32); ++t) {
        if (b.lanes[t].state == RUNNING) return false;
    }
    return true;
}

// Completes what the warp's waiting collectives allow; reports a divergent collective.
void resolve_warp(block_state& b, unsigned w) {
    const unsigned base = 32 * w;
    bool progress = false;
    // Shuffles and ballots: every lane of the mask at the same collective.
    for (unsigned l = 0; l < 32 && base + l < b.threads; ++l) {
        lane& me = b.lanes[base + l];
        if (me.state != COLLECTIVE || me.done || me.kind == ACTIVEMASK) continue;
        bool complete = true;
        for (unsigned k = 0; k < 32; ++k) {
            if (!((me.mask >> k) & 1u)) continue;
            if (base + k >= b.threads) {
                fail_locked(b, "warp collective with mask %08x names lane %u, which the block does not have", me.mask, k);
                return;
            }
            const lane& other = b.lanes[base + k];
            if (other.state != COLLECTIVE || other.done || other.point != me.point || other.count != me.count ||
                other.kind != me.kind || other.mask != me.mask) {
                complete = false;
            }
        }
        if (!complete) continue;
        unsigned ballot = 0;
        for (unsigned k = 0; k < 32; ++k) {
            if ((me.mask >> k) & 1u) ballot |= (b.lanes[base + k].value != 0u ? 1u : 0u) << k;
        }
        for (unsigned k = 0; k < 32; ++k) {
            if (!((me.mask >> k) & 1u)) continue;
            lane& x = b.lanes[base + k];
            if (x.kind == BALLOT) {
                x.result = ballot;
            } else {
                // Width 32: a source lane outside the warp leaves the lane's own value.
                const int src = x.kind == SHFL_UP ? (int)k - (int)x.delta : (int)k + (int)x.delta;
                x.result = src >= 0 && src < 32 ? b.lanes[base + (unsigned)src].value : x.value;
            }
        }
        for (unsigned k = 0; k < 32; ++k) {
            if ((me.mask >> k) & 1u) {
                b.lanes[base + k].done = true;
                b.lanes[base + k].state = RUNNING;
                wake(b.lanes[base + k]);
            }
        }
        progress = true;
    }
    if (progress || !settled(b, w)) return;
    // The warp has settled: __activemask reports the lanes at the same collective.
    for (unsigned l = 0; l < 32 && base + l < b.threads; ++l) {
        lane& me = b.lanes[base + l];
        if (me.state != COLLECTIVE || me.done || me.kind != ACTIVEMASK) continue;
        unsigned mask = 0;
        for (unsigned k = 0; k < 32 && base + k < b.threads; ++k) {
            const lane& other = b.lanes[base + k];
            if (other.state == COLLECTIVE && !other.done && other.kind == ACTIVEMASK && other.point == me.point &&
                other.count == me.count) {
                mask |= 1u << k;
            }
        }
        for (unsigned k = 0; k < 32; ++k) {
            if ((mask >> k) & 1u) {
                b.lanes[base + k].result = mask;
                b.lanes[base + k].done = true;
                b.lanes[base + k].state = RUNNING;
                wake(b.lanes[base + k]);
            }
        }
        progress = true;
    }
    if (progress) return;
    // Settled with a shuffle or ballot that cannot complete: its lanes diverged.
    for (unsigned l = 0; l < 32 && base + l < b.threads; ++l) {
        const lane& me = b.lanes[base + l];
        if (me.state == COLLECTIVE && !me.done) {
            std::string states;
            for (unsigned k = 0; k < 32 && base + k < b.threads; ++k) {
                const lane& o = b.lanes[base + k];
                char s[48];
                std::snprintf(s, sizeof s, " %u:%s", k,
                              o.state == EXITED    ? "exited"
                              : o.state == BARRIER ? "barrier"
                              : o.state == RUNNING ? "running"
                                                   : "");
                states += s;
                if (o.state == COLLECTIVE) states += std::to_string(o.point) + "." + std::to_string(o.count);
            }
            fail_locked(b, "divergent warp collective in block (%u, %u), warp %u (lane: state or collective count):%s",
                        blockIdx.x, blockIdx.y, w, states.c_str());
            return;
        }
    }
}

void release_barrier_if_complete(block_state& b) {
    if (b.at_barrier == 0 || b.at_barrier < b.alive) return;
    b.at_barrier = 0;
    ++b.barrier_generation;
    for (lane& l : b.lanes) {
        if (l.state == BARRIER) {
            l.state = RUNNING;
            wake(l);
        }
    }
}

// Waits, with the lock released, until the lane is woken (ticket: its wake count before it
// unlocked); an error unwinds the kernel thread.
void sleep_until_woken(block_state& b, lane& me, std::unique_lock<std::mutex>& g, unsigned ticket) {
    g.unlock();
    const auto start = std::chrono::steady_clock::now();
    while (me.wake.load(std::memory_order_acquire) == ticket) {
        timespec timeout = {10, 0};
        syscall(SYS_futex, (unsigned*)&me.wake, FUTEX_WAIT_PRIVATE, ticket, &timeout, nullptr, 0);
        if (me.wake.load(std::memory_order_acquire) == ticket &&
            std::chrono::steady_clock::now() - start > std::chrono::seconds(120)) {
            g.lock();
            fail_locked(b, "thread %u of block (%u, %u) waited 120 s at a collective or barrier", my_thread,
                        blockIdx.x, blockIdx.y);
            g.unlock();
        }
    }
    g.lock();
    if (b.failed) throw emu_error();
}

unsigned collective(collective_kind kind, unsigned mask, unsigned value, unsigned delta) {
    block_state& b = *the_block;
    std::unique_lock<std::mutex> g(b.lock);
    if (b.failed) throw emu_error();
    lane& me = b.lanes[my_thread];
    me.state = COLLECTIVE;
    me.kind = kind;
    me.mask = mask;
    me.value = value;
    me.delta = delta;
    me.done = false;
    ++me.count;
    count(kind == ACTIVEMASK ? stats.activemask
          : kind == BALLOT   ? stats.ballots
          : kind == SHFL_UP  ? stats.shuffles_up
                             : stats.shuffles_down);
    const unsigned ticket = me.wake.load(std::memory_order_relaxed);
    resolve_warp(b, warp_of(my_thread));
    if (b.failed) throw emu_error();
    if (!me.done) sleep_until_woken(b, me, g, ticket);
    if (kind == ACTIVEMASK && me.result == 0xffffffffu) count(stats.activemask_full);
    return me.result;
}
} // namespace

// ---- the CUDA built-ins ---------------------------------------------------------------------
void __syncthreads() {
    block_state& b = *the_block;
    std::unique_lock<std::mutex> g(b.lock);
    if (b.failed) throw emu_error();
    lane& me = b.lanes[my_thread];
    me.state = BARRIER;
    ++b.at_barrier;
    count(stats.barriers);
    const unsigned ticket = me.wake.load(std::memory_order_relaxed);
    const unsigned long long generation = b.barrier_generation;
    release_barrier_if_complete(b);
    if (b.barrier_generation != generation) return;
    resolve_warp(b, warp_of(my_thread)); // the warp may have settled
    if (b.failed) throw emu_error();
    sleep_until_woken(b, me, g, ticket);
}

void gj_emu_next_point() {
    block_state& b = *the_block;
    std::unique_lock<std::mutex> g(b.lock);
    lane& me = b.lanes[my_thread];
    ++me.point;
    me.count = 0;
}

unsigned __activemask() { return collective(ACTIVEMASK, 0u, 0u, 0u); }
unsigned __ballot_sync(unsigned mask, bool pred) { return collective(BALLOT, mask, pred ? 1u : 0u, 0u); }
unsigned __shfl_up_sync(unsigned mask, unsigned value, unsigned delta) { return collective(SHFL_UP, mask, value, delta); }
unsigned __shfl_down_sync(unsigned mask, unsigned value, unsigned delta) {
    return collective(SHFL_DOWN, mask, value, delta);
}
float __shfl_up_sync(unsigned mask, float value, unsigned delta) {
    return __uint_as_float(collective(SHFL_UP, mask, __float_as_uint(value), delta));
}
float __shfl_down_sync(unsigned mask, float value, unsigned delta) {
    return __uint_as_float(collective(SHFL_DOWN, mask, __float_as_uint(value), delta));
}

// ---- atomics: compare-and-swap loops on the words, several threads at once -------------------
float atomicAdd(float* address, float value) {
    count(stats.atomics);
    return gj_emu_atomic_add(address, value);
}

// red.add.noftz.f16x2: each half added in fp16 arithmetic (the float sum of two halves,
// rounded once to fp16, is the correctly rounded fp16 sum: 24 >= 2 * 11 + 2 bits).
void gj_emu_red_f16x2(unsigned* address, unsigned value) {
    if ((uintptr_t)address % 4u != 0u) fail("red.f16x2", address, 4);
    count(stats.half2_reductions);
    unsigned old = __atomic_load_n(address, __ATOMIC_RELAXED), desired;
    do {
        const unsigned short lo = gj_emu_float_to_half_bits(gj_emu_half_to_float((unsigned short)old) +
                                                            gj_emu_half_to_float((unsigned short)value));
        const unsigned short hi = gj_emu_float_to_half_bits(gj_emu_half_to_float((unsigned short)(old >> 16)) +
                                                            gj_emu_half_to_float((unsigned short)(value >> 16)));
        desired = (unsigned)lo | ((unsigned)hi << 16);
    } while (!__atomic_compare_exchange_n(address, &old, desired, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

void gj_emu_check_vector_address(const void* address, unsigned bytes) {
    if ((uintptr_t)address % bytes != 0u) fail("vector reduction", address, bytes);
    count(stats.vector_reductions);
}

gj_emu_stats gj_emu_take_stats() {
    const gj_emu_stats s = stats;
    stats = gj_emu_stats{};
    return s;
}

// ---- launches -------------------------------------------------------------------------------
static bool shared_intact(const void* base, unsigned from) {
    const unsigned char* p = (const unsigned char*)base;
    for (unsigned k = from; k < GJ_EMU_SHARED_BYTES; ++k) {
        if (p[k] != 0xFFu) return false;
    }
    return true;
}

int gj_emu_launch(unsigned grid_x, unsigned grid_y, unsigned block, unsigned shared_bytes, void (*body)(void*),
                  void* arg) {
    if (shared_bytes > GJ_EMU_SHARED_BYTES || block == 0 || block > 1024) {
        std::printf("emulated launch: block %u, %u bytes of shared memory: not supported\n", block,
                     shared_bytes);
        return -1;
    }
    gridDim.x = grid_x;
    gridDim.y = grid_y;
    gridDim.z = 1;
    blockDim.x = block;
    blockDim.y = blockDim.z = 1;
    block_state b;
    b.lanes = std::vector<lane>(block);
    b.threads = block;
    the_block = &b;
    const unsigned long long n_blocks = (unsigned long long)grid_x * grid_y;
    // One host thread per GPU thread of a block, reused block after block.
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < block; ++t) {
        workers.emplace_back([&b, t, body, arg, grid_x] {
            my_thread = t;
            threadIdx.x = t;
            unsigned seen = 0;
            for (;;) {
                futex_wait(b.started, seen);
                seen = b.started.load(std::memory_order_acquire);
                if (b.stop.load()) return;
                blockIdx.x = (seen - 1) % grid_x;
                blockIdx.y = (seen - 1) / grid_x;
                try {
                    body(arg);
                } catch (const emu_error&) {
                }
                std::unique_lock<std::mutex> g(b.lock);
                b.lanes[t].state = EXITED;
                --b.alive;
                release_barrier_if_complete(b);
                if (!b.failed) resolve_warp(b, warp_of(t));
                if (b.alive == 0) bump(b.ended);
            }
        });
    }
    int status = 0;
    for (unsigned long long k = 0; k < n_blocks && status == 0; ++k) {
        std::memset(gj_stage_words, 0xFF, sizeof gj_stage_words); // garbage (NaN), as on a GPU
        std::memset(gj_coarse_sums, 0xFF, sizeof gj_coarse_sums);
        for (lane& l : b.lanes) l.reset();
        b.alive = block;
        b.at_barrier = 0;
        const unsigned ended = b.ended.load();
        bump(b.started); // the workers read the state above after this
        futex_wait(b.ended, ended);
        std::unique_lock<std::mutex> g(b.lock);
        if (b.failed) {
            std::printf("emulated launch (grid %ux%u, block %u): %s\n", grid_x, grid_y, block,
                         b.message.c_str());
            status = -1;
        } else if (!shared_intact(gj_stage_words, shared_bytes) || !shared_intact(gj_coarse_sums, shared_bytes)) {
            std::printf("emulated launch (grid %ux%u, block %u): block (%u, %u) wrote shared memory past "
                                 "the launch's %u bytes\n",
                         grid_x, grid_y, block, (unsigned)(k % grid_x), (unsigned)(k / grid_x), shared_bytes);
            status = -1;
        }
    }
    b.stop = true;
    bump(b.started);
    for (std::thread& w : workers) w.join();
    the_block = nullptr;
    return status;
}

// ---- the registry of generated units -----------------------------------------------------------
static std::vector<const gj_emu_unit*>& units() {
    static std::vector<const gj_emu_unit*> list;
    return list;
}

int gj_emu_register(const gj_emu_unit* unit) {
    units().push_back(unit);
    std::sort(units().begin(), units().end(),
              [](const gj_emu_unit* a, const gj_emu_unit* b) { return std::strcmp(a->name, b->name) < 0; });
    return 0;
}

int gj_emu_n_units() { return (int)units().size(); }
const gj_emu_unit* gj_emu_unit_at(int i) { return units()[(size_t)i]; }
