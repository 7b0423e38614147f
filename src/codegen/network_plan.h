/* How the network kernels use a block (templates/network_kernels.cuh): warps (the forward
 * passes' and the backward's), whether the
 * weights are staged in shared memory, whether the backward kernel sums dL/dparams in shared
 * memory, and the bytes of dynamic shared memory each kernel takes. Fixed by the layout (and
 * a module's hints); the generated code states it as constants and the runtime launches
 * with the same numbers. */
#ifndef GJ_CODEGEN_NETWORK_PLAN_H
#define GJ_CODEGEN_NETWORK_PLAN_H

#include "model/network_layout.h"

#include <stdint.h>

typedef struct gj__network_plan {
    uint32_t stride;         /* S: halves per scratch row, the widest layer + 8 */
    uint64_t scratch_halves; /* per warp: two buffers of 32 rows */
    uint64_t forward_scratch_halves; /* per warp in the forward kernels: one buffer, or both
                                        (no hidden layers and more than GJ__NETWORK_OUT_CHUNK
                                        padded outputs, computed in chunks into the second) */
    uint64_t ctx_halves;     /* forward context of one 32-point tile */
    uint64_t staged_halves;  /* the weights with rows padded by 8, rounded to 8 (0: not staged) */
    uint32_t warps;          /* per block of the backward kernels */
    uint32_t forward_warps;  /* per block of the inference and forward kernels */
    int stage;               /* inference and forward kernels copy the weights to shared memory */
    int stage_backward;      /* the backward kernel does too (only where stage is set) */
    int smem_grads;          /* backward sums dL/dparams per block in shared memory */
    uint32_t min_blocks;     /* the kernels' __launch_bounds__ minimum of blocks a multiprocessor (0: none) */
    uint32_t forward_bytes;  /* dynamic shared memory of the inference and forward kernels */
    uint32_t backward_bytes; /* of the backward kernel */
} gj__network_plan;

/* Output columns a product computes at once (templates/network.cuh: GJ_NN_OUT_CHUNK, which
 * the generated config's FORWARD_SCRATCH_HALVES lets the compiler check). */
#define GJ__NETWORK_OUT_CHUNK 128u

/* The most dynamic shared memory a plan asks for (sm_80's 163 KiB opt-in limit, rounded down). */
#define GJ__NETWORK_MAX_SMEM (160u * 1024u)

/* The plan of layout; hints (may be NULL) override its choices where the block they make
 * still fits (GJ__NETWORK_MAX_SMEM). */
void gj__network_plan_make(const gj__network_layout *layout, const gj__network_plan_hints *hints,
                           gj__network_plan *out);

#endif
