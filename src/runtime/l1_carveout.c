/* The shared-memory carveout that leaves L1 to a kernel's loads (l1_carveout.h). */
#include "runtime/l1_carveout.h"

#include <stddef.h>

int gj__l1_carveout(uint32_t smem_per_sm, uint32_t reserved_per_block, uint32_t block_bytes, int max_blocks,
                    int *blocks) {
    *blocks = max_blocks;
    if (!smem_per_sm || max_blocks < 1) {
        return -1;
    }
    const uint64_t per_block = (uint64_t)block_bytes + reserved_per_block;
    uint64_t fit = per_block ? (smem_per_sm / 2) / per_block : (uint64_t)max_blocks;
    const uint64_t floor = max_blocks < 2 ? (uint64_t)max_blocks : 2u;
    fit = fit < floor ? floor : fit > (uint64_t)max_blocks ? (uint64_t)max_blocks : fit;
    *blocks = (int)fit;
    /* The driver rounds a carveout up to the next configuration the device has. */
    const uint64_t percent = (100 * fit * per_block + smem_per_sm - 1) / smem_per_sm;
    return percent > 100 ? 100 : (int)percent;
}

#define GJ__CAP_CARVEOUT_BYTES 32768u
#define GJ__CAP_LARGER_CARVEOUT_BYTES 65536u
#define GJ__CAP_MARGIN_BYTES 192u
#define GJ__CAP_MAX_DYNAMIC_BYTES 49152u /* what a launch may ask for without opting in to more */

int gj__residency_cap(uint32_t smem_per_sm, uint32_t reserved_per_block, int blocks, uint32_t min_bytes,
                      uint32_t *shared_bytes) {
    *shared_bytes = 0;
    if (blocks < 1 || blocks > GJ__CAP_MAX_BLOCKS) {
        return -1;
    }
    static const uint32_t carveouts[] = {GJ__CAP_CARVEOUT_BYTES, GJ__CAP_LARGER_CARVEOUT_BYTES};
    for (size_t i = 0; i < sizeof carveouts / sizeof carveouts[0] && carveouts[i] <= smem_per_sm; ++i) {
        /* A share just under blocks' part of the carveout: on an H200 7000 + 1024 bytes a block
         * held C1's forward to 4 blocks in 32 KiB (8024 would also fit four, not five). */
        const uint32_t share = carveouts[i] / (uint32_t)blocks - GJ__CAP_MARGIN_BYTES;
        if (share <= reserved_per_block) {
            continue;
        }
        /* One block of a 64 KiB carveout: 48 KiB still leaves no room for a second. */
        const uint32_t bytes =
            share - reserved_per_block > GJ__CAP_MAX_DYNAMIC_BYTES ? GJ__CAP_MAX_DYNAMIC_BYTES : share - reserved_per_block;
        if (bytes >= min_bytes && (uint64_t)(blocks + 1) * (bytes + reserved_per_block) > carveouts[i]) {
            *shared_bytes = bytes;
            /* Rounded down: the driver takes the next configuration up, which is the carveout
             * itself (a percent rounded up could land past it, on the next one). */
            return (int)(100u * carveouts[i] / smem_per_sm);
        }
    }
    return -1;
}
