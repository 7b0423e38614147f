/* A module's devices and contexts (docs/runtime.md, "Contexts and devices"): a launch runs
 * in its stream's context (runtime/scope.h); the module keeps per device what depends on
 * it, the multiprocessor count and the fp32 gradient buffer, and per context the kernels'
 * functions (runtime/context_cache.h), while the compiled programs are shared by every
 * device of one architecture. */
#include "runtime/module.h"

#include "runtime/l1_carveout.h"

#include <string.h>

/* The module's record of a device, made on first use. Call with m->lock held. */
static gj_status device_of(gj_module *m, CUdevice device, int sm, const char *call, gj__module_device **out) {
    for (size_t i = 0; i < m->n_devices; ++i) {
        if (m->devices[i].device == device) {
            *out = &m->devices[i];
            return GJ_OK;
        }
    }
    if (m->n_devices == GJ__MODULE_MAX_DEVICES) {
        return gj__fail(m->diag, GJ_ERROR_INTERNAL, "%s: more than %d devices", call, GJ__MODULE_MAX_DEVICES);
    }
    int sms = 0;
    gj_status status = gj__cuda_checkf(
        m->diag, m->drv, m->drv->DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
        "%s: cuDeviceGetAttribute", call);
    if (status != GJ_OK) {
        return status;
    }
    gj__module_device *d = &m->devices[m->n_devices++];
    memset(d, 0, sizeof *d);
    d->device = device;
    d->sm = sm;
    d->multiprocessors = sms > 0 ? (uint32_t)sms : 1u;
    *out = d;
    return GJ_OK;
}

/* What the module keeps for the scope's context, made on the first launch there (the only
 * launch that asks the driver about the device), with the module's record of the device.
 * Call with m->lock held. */
static gj_status context_slot(gj_module *m, const gj__scope *where, const char *call, gj__context_slot **out) {
    gj_status status = gj__context_cache_enter(&m->contexts, m->diag, m->drv, where, call, out);
    if (status == GJ_OK && !(*out)->record) {
        gj__module_device *record = NULL;
        status = device_of(m, (*out)->device, (*out)->sm, call, &record);
        (*out)->record = record;
    }
    return status;
}

gj_status gj__module_enter(gj_module *m, gj_stream stream, const char *call, gj__launch_scope *scope) {
    scope->device = NULL;
    gj_status status = gj__scope_enter(m->diag, m->drv, stream, call, &scope->where);
    if (status != GJ_OK) {
        return status;
    }
    pthread_mutex_lock(&m->lock);
    gj__context_slot *slot = NULL;
    status = context_slot(m, &scope->where, call, &slot);
    if (status == GJ_OK) {
        scope->device = slot->record;
        memcpy(scope->functions, slot->functions, sizeof scope->functions);
        memcpy(scope->carveout_for, slot->carveout_for, sizeof scope->carveout_for);
    }
    pthread_mutex_unlock(&m->lock);
    if (status != GJ_OK) {
        gj__scope_leave(m->drv, &scope->where);
    }
    return status;
}

void gj__module_leave(gj_module *m, gj__launch_scope *scope) {
    gj__scope_leave(m->drv, &scope->where);
}

/* Resolves kernel id in the scope's context (its program compiled and loaded for the
 * device on first use) and keeps it for the context. Call with m->lock held. */
static gj_status resolve(gj_module *m, gj__launch_scope *scope, gj__kernel_id id, const char *call, CUfunction *out) {
    gj__context_slot *known = gj__context_cache_find(&m->contexts, &scope->where);
    if (known && known->functions[id]) { /* another thread resolved it since this one entered */
        *out = known->functions[id];
        return GJ_OK;
    }
    const gj__module_program *program = NULL;
    gj_status status = gj__module_program_for(m, scope->device->sm, id, &program);
    CUkernel kernel = status == GJ_OK ? program->kernels[id] : NULL;
    if (status == GJ_OK && !kernel) {
        return gj__fail(m->diag, GJ_ERROR_PASS_NOT_COMPILED, "%s: the module's program has no %s_%s kernel", call,
                        m->opts.name, gj__kernel_suffix(id));
    }
    if (status == GJ_OK) {
        /* The kernel's instance in the current context (the library serves every context). */
        status = gj__cuda_checkf(m->diag, m->drv, m->drv->KernelGetFunction(out, kernel), "%s: cuKernelGetFunction(%s_%s)",
                                 call, m->opts.name, gj__kernel_suffix(id));
    }
    if (status == GJ_OK) {
        /* The slot may have been taken over for another context meanwhile: then the
         * function is only used for this launch. */
        gj__context_slot *slot = gj__context_cache_find(&m->contexts, &scope->where);
        if (slot) {
            slot->functions[id] = *out;
        }
    }
    return status;
}

gj_status gj__module_function(gj_module *m, gj__launch_scope *scope, gj__kernel_id id, const char *call,
                              CUfunction *out) {
    *out = scope->functions[id];
    if (*out) {
        return GJ_OK;
    }
    pthread_mutex_lock(&m->lock);
    gj_status status = resolve(m, scope, id, call, out);
    pthread_mutex_unlock(&m->lock);
    if (status == GJ_OK) {
        scope->functions[id] = *out;
    }
    return status;
}

/* The device's shared memory per multiprocessor and reserved per block, asked on the first
 * launch that needs them; call with m->lock held. */
static void query_shared_memory(gj_module *m, gj__module_device *device) {
    if (!device->smem_queried) {
        int smem = 0, reserved = 0;
        if (m->drv->DeviceGetAttribute(&smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
                                       device->device) != CUDA_SUCCESS ||
            m->drv->DeviceGetAttribute(&reserved, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
                                       device->device) != CUDA_SUCCESS) {
            smem = 0; /* unknown: the carveout stays the driver's choice */
        }
        device->smem_per_sm = smem > 0 ? (uint32_t)smem : 0u;
        device->smem_reserved = reserved > 0 ? (uint32_t)reserved : 0u;
        device->smem_queried = 1;
    }
}

/* Staging takes shared memory, and by default the driver gives a kernel the carveout of the
 * most blocks that its shared memory allows. The level-group forward gathers its table
 * entries through L1, and its registers already hold it to fewer blocks (C1-C3 on an H200:
 * 5 or 6): the carveout of those blocks leaves it more L1 (C3 point-major 0.596 -> 0.579 ms,
 * C1 0.957 -> 0.943; docs/runtime.md, "Launch shapes"). Call with m->lock not held; a launch
 * whose bytes the scope already saw chosen takes no lock. */
gj_status gj__module_fit_carveout(gj_module *m, gj__launch_scope *scope, gj__kernel_id id, CUfunction f,
                                  uint32_t block, uint32_t shared_bytes, const char *call) {
    if (!m->shape.stage_carveout || !scope->device || scope->carveout_for[id] == shared_bytes) {
        return GJ_OK;
    }
    gj_status status = GJ_OK;
    pthread_mutex_lock(&m->lock);
    gj__module_device *device = scope->device;
    query_shared_memory(m, device);
    gj__context_slot *slot = gj__context_cache_find(&m->contexts, &scope->where);
    if (slot && device->smem_per_sm && slot->carveout_for[id] != shared_bytes) {
        /* Back to the driver's default first: the occupancy below is then the kernel's own. */
        status = gj__cuda_checkf(m->diag, m->drv,
                                 m->drv->FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, -1),
                                 "%s: cuFuncSetAttribute(%s, PREFERRED_SHARED_MEMORY_CARVEOUT, -1)", call,
                                 gj__kernel_suffix(id));
        int blocks = 0;
        if (status == GJ_OK && shared_bytes) {
            status = gj__cuda_checkf(
                m->diag, m->drv, m->drv->OccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, (int)block, shared_bytes),
                "%s: cuOccupancyMaxActiveBlocksPerMultiprocessor(%s)", call, gj__kernel_suffix(id));
        }
        if (status == GJ_OK && blocks > 0) {
            int fit = 0;
            const int percent = gj__l1_carveout(device->smem_per_sm, device->smem_reserved, shared_bytes, blocks, &fit);
            if (percent >= 0) {
                status = gj__cuda_checkf(
                    m->diag, m->drv,
                    m->drv->FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, percent),
                    "%s: cuFuncSetAttribute(%s, PREFERRED_SHARED_MEMORY_CARVEOUT, %d)", call, gj__kernel_suffix(id),
                    percent);
            }
        }
        if (status == GJ_OK) {
            slot->carveout_for[id] = shared_bytes;
        }
    }
    if (slot) {
        scope->carveout_for[id] = slot->carveout_for[id];
    }
    pthread_mutex_unlock(&m->lock);
    return status;
}

/* carveout_for's record of a capped kernel: the blocks it was held to (top byte) and the bytes
 * each block asks for, or NO_SHARE where no share can hold it to them on its device. Keyed by
 * the blocks, because one kernel may be held to different counts (a level-group forward
 * staging point-major rows, and the same kernel into feature-major outputs): each launch then
 * gets its own share, the carveout set again when the count changes, not the share another
 * launch chose. Shares are at most 48 KiB; the staging carveout's records are plain bytes
 * (no blocks), so the two never match. */
#define NO_SHARE 0xFFFFFFu
#define CAP_RECORD(blocks, bytes) (((uint32_t)(blocks) << 24) | (bytes))

/* The forward gathers 8 corners a level (3-D) through L1; with every block its registers
 * allow resident (eight of 256 threads on an H200 for the one-level kernel), the warps' lines
 * evict each other before the neighbouring corners are read: held to 32 warps, C1's L2 read
 * sectors fell 5 % and its forward 2.4 % (docs/benchmarks.md). A kernel is held to `blocks`
 * by asking each block for a share of a small carveout, at least what it stages. Call with
 * m->lock not held; a launch whose cap the scope already saw chosen takes no lock. */
gj_status gj__module_cap_residency(gj_module *m, gj__launch_scope *scope, gj__kernel_id id, CUfunction f, int blocks,
                                   uint32_t min_bytes, uint32_t *shared_bytes, const char *call) {
    /* Chosen in this context before for these blocks, with a share at least this launch's
     * staged bytes (a smaller one is chosen again), or found impossible. */
    const uint32_t seen = scope->carveout_for[id], seen_bytes = seen & NO_SHARE;
    *shared_bytes = 0;
    if (seen >> 24 == (uint32_t)blocks && (seen_bytes == NO_SHARE || seen_bytes >= min_bytes)) {
        *shared_bytes = seen_bytes == NO_SHARE ? 0u : seen_bytes;
        return GJ_OK;
    }
    if (!scope->device) {
        return GJ_OK;
    }
    gj_status status = GJ_OK;
    pthread_mutex_lock(&m->lock);
    gj__module_device *device = scope->device;
    query_shared_memory(m, device);
    uint32_t bytes = 0;
    const int percent = gj__residency_cap(device->smem_per_sm, device->smem_reserved, blocks, min_bytes, &bytes);
    gj__context_slot *slot = gj__context_cache_find(&m->contexts, &scope->where);
    if (slot) {
        /* Not known, or no share can tell the blocks apart: no cap. */
        const uint32_t record = CAP_RECORD(blocks, percent < 0 ? NO_SHARE : bytes);
        if (percent >= 0 && slot->carveout_for[id] != record) {
            status = gj__cuda_checkf(m->diag, m->drv,
                                     m->drv->FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, percent),
                                     "%s: cuFuncSetAttribute(%s, PREFERRED_SHARED_MEMORY_CARVEOUT, %d)", call,
                                     gj__kernel_suffix(id), percent);
        }
        if (status == GJ_OK) {
            slot->carveout_for[id] = record;
            scope->carveout_for[id] = record;
            *shared_bytes = percent < 0 ? 0u : bytes;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return status;
}

void gj__module_free_scratch(gj_module *m) {
    for (size_t i = 0; i < m->n_devices; ++i) {
        gj__module_device *d = &m->devices[i];
        if (!d->scratch) {
            continue;
        }
        /* cuMemFree needs a context; the buffer's own is the safe one. */
        CUcontext popped;
        if (m->drv->CtxPushCurrent(d->scratch_context) == CUDA_SUCCESS) {
            m->drv->MemFree(d->scratch);
            m->drv->CtxPopCurrent(&popped);
        }
        d->scratch = 0;
        d->scratch_bytes = 0;
        d->scratch_context = NULL;
    }
}
