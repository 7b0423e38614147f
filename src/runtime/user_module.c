/* User modules: create (compile for the current device and load), load (a given
 * program), kernels by name (see user_module.h). */
#include "runtime/user_module.h"

#include "runtime/device_program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- the object */

static gj_status new_module(gj__runtime *rt, const char *call, struct gj_user_module **out) {
    gj__driver *drv = NULL;
    gj_status status = gj__driver_get(rt->driver, rt->diag, &drv);
    if (status != GJ_OK) {
        return status;
    }
    struct gj_user_module *m = calloc(1, sizeof *m);
    if (!m) {
        return gj__fail(rt->diag, GJ_ERROR_OUT_OF_MEMORY, "%s: out of memory", call);
    }
    m->rt = rt;
    m->diag = rt->diag;
    m->drv = drv;
    pthread_mutex_init(&m->lock, NULL);
    *out = m;
    return GJ_OK;
}

/* The kernels by name expression, from the program (which has their lowered names). */
static gj_status name_kernels(struct gj_user_module *m, const gj_program *prog) {
    m->n_kernels = gj_program_n_kernels(prog);
    m->kernels = calloc(m->n_kernels ? m->n_kernels : 1, sizeof *m->kernels);
    if (!m->kernels || gj__context_cache_init(&m->contexts, m->n_kernels) != 0) {
        return gj__fail(m->diag, GJ_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < m->n_kernels; ++i) {
        m->kernels[i].module = m;
        m->kernels[i].index = i;
        m->kernels[i].carveout = -1;
        m->kernels[i].expression = strdup(gj_program_kernel_name(prog, i));
        m->kernels[i].lowered = strdup(gj_program_lowered_name(prog, i));
        if (!m->kernels[i].expression || !m->kernels[i].lowered) {
            return gj__fail(m->diag, GJ_ERROR_OUT_OF_MEMORY, "out of memory");
        }
        m->kernels[i].name = m->kernels[i].expression + (m->kernels[i].expression[0] == '&');
    }
    return GJ_OK;
}

void gj_user_module_destroy(struct gj_user_module *m) {
    if (!m) {
        return;
    }
    for (size_t i = 0; i < m->n_programs; ++i) {
        m->drv->LibraryUnload(m->programs[i].library); /* context-independent */
        free(m->programs[i].kernels);
    }
    for (size_t i = 0; i < m->n_kernels; ++i) {
        free(m->kernels[i].expression);
        free(m->kernels[i].lowered);
    }
    free(m->kernels);
    gj__context_cache_free(&m->contexts);
    if (m->have_unit) {
        gj__user_unit_free(&m->unit);
    }
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* ------------------------------------------------------------- loading */

typedef struct load_job {
    struct gj_user_module *m;
    int sm;
    gj__user_program *loaded; /* out */
} load_job;

static gj_status compile_for(void *user, const char *arch_name, gj_program **prog) {
    load_job *job = user;
    struct gj_user_module *m = job->m;
    gj_status status = gj__arch_parse(m->diag, arch_name, &m->unit.request.arch);
    return status == GJ_OK ? gj__compile(m->rt->compiler, &m->unit.request, prog) : status;
}

/* prog as a new program of the module, every kernel looked up and resolved in the
 * current context (a binary the device cannot run fails here, not at a launch). */
static gj_status load_program(void *user, const gj_program *prog) {
    load_job *job = user;
    struct gj_user_module *m = job->m;
    if (m->n_programs == GJ__USER_MAX_PROGRAMS) {
        return gj__fail(m->diag, GJ_ERROR_INTERNAL, "a user module holds at most %d programs", GJ__USER_MAX_PROGRAMS);
    }
    if (!m->kernels) {
        gj_status status = name_kernels(m, prog);
        if (status != GJ_OK) {
            return status;
        }
    }
    gj__user_program *p = &m->programs[m->n_programs];
    memset(p, 0, sizeof *p);
    p->sm = job->sm;
    snprintf(p->arch, sizeof p->arch, "%s", gj_program_arch(prog) ? gj_program_arch(prog) : "?");
    gj__arch target;
    p->cubin_sm = gj__arch_parse(NULL, p->arch, &target) == GJ_OK && target.kind == GJ_BINARY_CUBIN ? target.sm : 0;
    p->kernels = calloc(m->n_kernels ? m->n_kernels : 1, sizeof *p->kernels);
    const char **lowered = calloc(m->n_kernels ? m->n_kernels : 1, sizeof *lowered);
    gj_status status = p->kernels && lowered ? GJ_OK : gj__fail(m->diag, GJ_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; status == GJ_OK && i < m->n_kernels; ++i) {
        lowered[i] = m->kernels[i].lowered;
    }
    if (status == GJ_OK) {
        status = gj__program_load(m->diag, m->drv, prog, lowered, m->n_kernels, &p->library, p->kernels);
    }
    free(lowered);
    if (status != GJ_OK) {
        free(p->kernels);
        return status;
    }
    m->n_programs++;
    job->loaded = p;
    return GJ_OK;
}

/* The program for a device of architecture sm, compiled and loaded on first use. Call with
 * m->lock held. */
static gj_status program_for(struct gj_user_module *m, int sm, const gj__user_program **out) {
    for (size_t i = 0; i < m->n_programs; ++i) {
        if (m->programs[i].sm == sm || m->programs[i].sm < 0) {
            *out = &m->programs[i];
            return GJ_OK;
        }
    }
    load_job job = {m, sm, NULL};
    gj_status status = gj__device_program(m->diag, m->rt->compiler, compile_for, load_program, &job, sm, NULL);
    *out = job.loaded;
    return status;
}

gj_status gj__user_module_create(gj__runtime *rt, const gj_source_desc *desc, int cached_only,
                                 struct gj_user_module **out) {
    static const char call[] = "gj_user_module_create";
    *out = NULL;
    struct gj_user_module *m = NULL;
    gj_status status = new_module(rt, call, &m);
    if (status == GJ_OK) {
        status = gj__user_unit_make(rt->compiler, desc, &m->unit);
        m->have_unit = status == GJ_OK;
    }
    gj__scope where;
    if (status == GJ_OK) {
        status = gj__scope_enter(m->diag, m->drv, NULL, call, &where);
        if (status == GJ_OK) {
            const gj__user_program *ignored;
            CUdevice device;
            int sm = 0;
            status = gj__scope_device(m->diag, m->drv, call, &device, &sm);
            if (status == GJ_OK) {
                m->unit.request.cached_only = cached_only;
                status = program_for(m, sm, &ignored); /* now, for the current device */
                m->unit.request.cached_only = 0;        /* other devices' programs compile */
            }
            gj__scope_leave(m->drv, &where);
        }
    }
    if (status != GJ_OK) {
        gj_user_module_destroy(m);
        return status;
    }
    *out = m;
    return GJ_OK;
}

gj_status gj__user_module_load(gj__runtime *rt, const gj_program *prog, struct gj_user_module **out) {
    static const char call[] = "gj_user_module_load";
    *out = NULL;
    size_t size = 0;
    if (!prog || !gj_program_binary(prog, &size) || size == 0) {
        return gj__fail(rt->diag, GJ_ERROR_INVALID_ARGUMENT, "%s: the program holds no cubin or PTX", call);
    }
    struct gj_user_module *m = NULL;
    gj_status status = new_module(rt, call, &m);
    gj__scope where;
    if (status == GJ_OK) {
        status = gj__scope_enter(m->diag, m->drv, NULL, call, &where);
    }
    if (status == GJ_OK) {
        load_job job = {m, -1, NULL}; /* a given program serves whatever device runs it */
        status = load_program(&job, prog);
        gj__scope_leave(m->drv, &where);
    }
    if (status != GJ_OK) {
        gj_user_module_destroy(m);
        return status;
    }
    *out = m;
    return GJ_OK;
}

gj_status gj_user_module_kernel(struct gj_user_module *m, const char *name, gj_kernel **out) {
    if (out) {
        *out = NULL;
    }
    if (!m) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj__diag_clear(m->diag);
    if (!name || !out) {
        return gj__fail(m->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_user_module_kernel: name and out must not be NULL");
    }
    for (size_t i = 0; i < m->n_kernels; ++i) {
        const char *e = m->kernels[i].expression;
        if (strcmp(e, name) == 0 || (e[0] == '&' && strcmp(e + 1, name) == 0)) {
            *out = &m->kernels[i];
            return GJ_OK;
        }
    }
    return gj__fail(m->diag, GJ_ERROR_NOT_FOUND,
                    "gj_user_module_kernel: no kernel \"%s\" (the source was compiled with %zu kernel name%s%s%s)", name,
                    m->n_kernels, m->n_kernels == 1 ? "" : "s", m->n_kernels ? ", the first " : "",
                    m->n_kernels ? m->kernels[0].name : "");
}

/* ------------------------------------------------------------- kernels */

/* The end of k's last parameter where the driver can say (cuFuncGetParamInfo, CUDA 12.4+).
 * The driver has no count of a kernel's parameters: the index past the last one is the call
 * that fails, which tools such as compute-sanitizer report as an API error. So it is asked
 * only for a packed launch, which needs it, never for the launches with an array of argument
 * pointers that gridjit's own modules make. Call with the module's lock held, once per kernel. */
static void learn_param_extent(gj_kernel *k, CUfunction f) {
    gj__driver *drv = k->module->drv;
    k->param_extent_known = 1;
    if (!drv->FuncGetParamInfo) {
        return;
    }
    size_t extent = 0, offset = 0, bytes = 0;
    for (size_t i = 0; drv->FuncGetParamInfo(f, i, &offset, &bytes) == CUDA_SUCCESS; ++i) {
        extent = offset + bytes > extent ? offset + bytes : extent;
    }
    k->param_extent = extent;
}

/* The kernel's function in the scope's context (see user_module.h). Call with m->lock held. */
static gj_status function_locked(gj_kernel *k, const gj__scope *where, const char *call, CUfunction *out) {
    struct gj_user_module *m = k->module;
    gj__context_slot *slot = NULL;
    gj_status status = gj__context_cache_enter(&m->contexts, m->diag, m->drv, where, call, &slot);
    if (status == GJ_OK && slot->functions[k->index]) {
        *out = slot->functions[k->index];
        return GJ_OK;
    }
    const gj__user_program *p = NULL;
    if (status == GJ_OK) {
        status = program_for(m, slot->sm, &p);
    }
    if (status == GJ_OK) {
        status = gj__cuda_checkf(m->diag, m->drv, m->drv->KernelGetFunction(out, p->kernels[k->index]),
                                 "%s(%s): cuKernelGetFunction", call, k->name);
    }
    if (status == GJ_OK && k->carveout_set) {
        status = gj__cuda_checkf(m->diag, m->drv,
                                 m->drv->FuncSetAttribute(*out, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                                                          k->carveout),
                                 "%s(%s): cuFuncSetAttribute(PREFERRED_SHARED_MEMORY_CARVEOUT, %d)", call,
                                 k->name, k->carveout);
    }
    if (status == GJ_OK) {
        slot->functions[k->index] = *out;
    }
    return status;
}

gj_status gj_kernel_set_shared_carveout(gj_kernel *kernel, int percent) {
    if (!kernel) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    struct gj_user_module *m = kernel->module;
    gj__diag_clear(m->diag);
    if (percent < -1 || percent > 100) {
        return gj__fail(m->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "gj_kernel_set_shared_carveout(%s): percent is %d (must be -1, the driver's choice, or 0 to 100)",
                        kernel->name, percent);
    }
    pthread_mutex_lock(&m->lock);
    kernel->carveout = percent;
    kernel->carveout_set = 1;
    /* Each context resolves the function again on its next launch and sets the preference
     * there (function_locked): no context need be current here. */
    for (size_t i = 0; i < GJ__CONTEXT_SLOTS; ++i) {
        if (m->contexts.slots[i].functions) {
            m->contexts.slots[i].functions[kernel->index] = NULL;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return GJ_OK;
}

gj_status gj__kernel_function(gj_kernel *k, const gj__scope *where, const char *call, CUfunction *out,
                              size_t *param_extent) {
    struct gj_user_module *m = k->module;
    pthread_mutex_lock(&m->lock);
    gj_status status = function_locked(k, where, call, out);
    if (param_extent) {
        if (status == GJ_OK && !k->param_extent_known) {
            learn_param_extent(k, *out);
        }
        *param_extent = k->param_extent;
    }
    pthread_mutex_unlock(&m->lock);
    return status;
}

gj_status gj__kernel_cubin_sm(gj_kernel *k, const gj__scope *where, const char *call, int *sm) {
    struct gj_user_module *m = k->module;
    pthread_mutex_lock(&m->lock);
    gj__context_slot *slot = NULL;
    const gj__user_program *p = NULL;
    gj_status status = gj__context_cache_enter(&m->contexts, m->diag, m->drv, where, call, &slot);
    if (status == GJ_OK) {
        status = program_for(m, slot->sm, &p);
    }
    *sm = status == GJ_OK ? p->cubin_sm : 0;
    pthread_mutex_unlock(&m->lock);
    return status;
}
