/* What a module (or user module) keeps per CUDA context it has launched in: the context's
 * device, its compute capability, the owner's record of that device and the kernels'
 * functions resolved in that context, so that a launch after the first asks the driver
 * for nothing but the context and its id. A context is known by its handle and its id
 * (cuCtxGetId): a context destroyed and another made at the same address get different
 * ids, so a stale slot never matches; when every slot is taken the oldest is reused.
 * Not thread-safe: the owner holds its lock around every call. */
#ifndef GJ_RUNTIME_CONTEXT_CACHE_H
#define GJ_RUNTIME_CONTEXT_CACHE_H

#include "runtime/scope.h"

#include <stddef.h>
#include <stdint.h>

#define GJ__CONTEXT_SLOTS 32

typedef struct gj__context_slot {
    CUcontext context; /* NULL: free */
    unsigned long long id;
    CUdevice device;
    int sm;                /* compute capability, 90 for 9.0 */
    void *record;          /* the owner's per-device record */
    CUfunction *functions; /* n_functions; NULL until resolved in this context */
    /* n_functions: the dynamic shared memory each function's L1 carveout was last chosen
     * for (0: never chosen, the driver's default) */
    uint32_t *carveout_for;
} gj__context_slot;

typedef struct gj__context_cache {
    size_t n_functions;
    CUfunction *storage; /* GJ__CONTEXT_SLOTS * n_functions */
    uint32_t *carveout_storage; /* the same */
    gj__context_slot slots[GJ__CONTEXT_SLOTS];
    size_t next; /* the slot taken over when none is free */
} gj__context_cache;

/* 0, or -1 when out of memory. */
int gj__context_cache_init(gj__context_cache *c, size_t n_functions);
void gj__context_cache_free(gj__context_cache *c);
/* The slot of the scope's context, or NULL. */
gj__context_slot *gj__context_cache_find(gj__context_cache *c, const gj__scope *where);
/* A slot for the scope's context with no function resolved yet: a free one, else the one
 * taken longest ago. */
gj__context_slot *gj__context_cache_add(gj__context_cache *c, const gj__scope *where, CUdevice device, int sm,
                                        void *record);
/* The slot of the scope's context; on the first launch there a new one, after asking the
 * driver for the context's device and compute capability (the only such queries; the
 * slot's record is NULL then, for the owner to fill). */
gj_status gj__context_cache_enter(gj__context_cache *c, const gj__diag *d, gj__driver *drv, const gj__scope *where,
                                  const char *call, gj__context_slot **out);

#endif
