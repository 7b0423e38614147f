/* The shared-memory carveout that leaves L1 to a kernel's loads (l1_carveout.h). */
#include "runtime/l1_carveout.h"

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
