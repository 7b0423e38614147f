/* Per-context launch facts (see context_cache.h). */
#include "runtime/context_cache.h"

#include <stdlib.h>
#include <string.h>

int gj__context_cache_init(gj__context_cache *c, size_t n_functions) {
    memset(c, 0, sizeof *c);
    c->n_functions = n_functions;
    c->storage = calloc(GJ__CONTEXT_SLOTS * (n_functions ? n_functions : 1), sizeof *c->storage);
    c->carveout_storage =
        calloc(GJ__CONTEXT_SLOTS * (n_functions ? n_functions : 1), sizeof *c->carveout_storage);
    if (!c->storage || !c->carveout_storage) {
        free(c->storage);
        free(c->carveout_storage);
        memset(c, 0, sizeof *c);
        return -1;
    }
    for (size_t i = 0; i < GJ__CONTEXT_SLOTS; ++i) {
        c->slots[i].functions = c->storage + i * n_functions;
        c->slots[i].carveout_for = c->carveout_storage + i * n_functions;
    }
    return 0;
}

void gj__context_cache_free(gj__context_cache *c) {
    free(c->storage);
    free(c->carveout_storage);
    memset(c, 0, sizeof *c);
}

gj__context_slot *gj__context_cache_find(gj__context_cache *c, const gj__scope *where) {
    for (size_t i = 0; i < GJ__CONTEXT_SLOTS; ++i) {
        gj__context_slot *s = &c->slots[i];
        if (s->context == where->context && s->id == where->context_id && s->context) {
            return s;
        }
    }
    return NULL;
}

gj_status gj__context_cache_enter(gj__context_cache *c, const gj__diag *d, gj__driver *drv, const gj__scope *where,
                                  const char *call, gj__context_slot **out) {
    *out = gj__context_cache_find(c, where);
    if (*out) {
        return GJ_OK;
    }
    CUdevice device = 0;
    int sm = 0;
    gj_status status = gj__scope_device(d, drv, call, &device, &sm);
    if (status == GJ_OK) {
        *out = gj__context_cache_add(c, where, device, sm, NULL);
    }
    return status;
}

gj__context_slot *gj__context_cache_add(gj__context_cache *c, const gj__scope *where, CUdevice device, int sm,
                                        void *record) {
    gj__context_slot *slot = NULL;
    for (size_t i = 0; i < GJ__CONTEXT_SLOTS && !slot; ++i) {
        if (!c->slots[i].context) {
            slot = &c->slots[i];
        }
    }
    if (!slot) {
        slot = &c->slots[c->next];
        c->next = (c->next + 1) % GJ__CONTEXT_SLOTS;
    }
    slot->context = where->context;
    slot->id = where->context_id;
    slot->device = device;
    slot->sm = sm;
    slot->record = record;
    memset(slot->functions, 0, c->n_functions * sizeof *slot->functions);
    memset(slot->carveout_for, 0, c->n_functions * sizeof *slot->carveout_for);
    return slot;
}
