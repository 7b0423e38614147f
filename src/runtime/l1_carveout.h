/* How much of a multiprocessor's unified L1 / shared memory a kernel should prefer as shared
 * memory when its scattered global loads need L1 more than it needs more resident blocks
 * (a model's inference kernel: docs/networks.md, "Shared memory against L1"). */
#ifndef GJ_RUNTIME_L1_CARVEOUT_H
#define GJ_RUNTIME_L1_CARVEOUT_H

#include <stdint.h>

/* The carveout (percent of smem_per_sm, for gj_kernel_set_shared_carveout) that holds the most
 * blocks, at most max_blocks, whose shared memory (block_bytes each plus the driver's
 * reserved_per_block) fits in half of smem_per_sm, so that at least about as much again stays
 * L1; but never fewer than two blocks where max_blocks allows two (one block of a few warps
 * cannot hide the loads' latency, whatever L1 keeps). *blocks is that count. -1 (and *blocks =
 * max_blocks) where smem_per_sm or max_blocks is not known (0). */
int gj__l1_carveout(uint32_t smem_per_sm, uint32_t reserved_per_block, uint32_t block_bytes, int max_blocks,
                    int *blocks);

#endif
