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

/* The most blocks a residency cap holds a kernel to: 32 KiB / 8 leaves a block 3904 bytes,
 * the 1 KiB reserved on sm_80 and sm_90 included; finer shares are not tried. */
#define GJ__CAP_MAX_BLOCKS 8

/* The carveout (percent of smem_per_sm) and dynamic shared bytes a block asks for (*shared_bytes,
 * at least min_bytes: what the kernel stages) so that at most `blocks` blocks of a kernel are
 * resident on a multiprocessor: blocks of them fill a 32 KiB carveout, or a 64 KiB one where
 * min_bytes does not fit in 32 (the driver rounds the percent up to a configuration it has;
 * 32 and 64 KiB are ones from sm_70 to sm_90), so the rest of the unified memory stays L1.
 * Each block's share (reserved bytes included) is 192 bytes under 1 / blocks of the carveout,
 * so blocks fit and one more does not; at most 48 KiB (more needs the kernel's opt-in). -1
 * (and 0 bytes) where smem_per_sm is unknown (0) or smaller than the carveout, blocks is not 1
 * to GJ__CAP_MAX_BLOCKS, or min_bytes fits in neither carveout. */
int gj__residency_cap(uint32_t smem_per_sm, uint32_t reserved_per_block, int blocks, uint32_t min_bytes,
                      uint32_t *shared_bytes);

#endif
