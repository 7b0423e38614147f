/* The programs of a module (docs/runtime.md, "Programs"): each part is compiled through
 * the disk cache for a device architecture the first time a launch needs one of its
 * kernels (or all at once, in parallel, when the module is prepared), and loaded once
 * with cuLibraryLoadData, which serves every context and device of that architecture. */
#include "runtime/module.h"

#include "compile/encoding_unit.h"
#include "compile/parallel.h"
#include "runtime/device_program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What compiling and loading one part needs. */
typedef struct part_job {
    gj_module *m;
    gj__part part;
    int sm;
    const gj__module_program *loaded; /* out */
} part_job;

/* The part of the module's encoding for arch_name, through the cache. */
static gj_status compile_part(void *user, const char *arch_name, gj_program **prog) {
    part_job *job = user;
    gj_module *m = job->m;
    gj__arch arch;
    gj_status status = gj__arch_parse(m->diag, arch_name, &arch);
    gj__encoding_unit unit;
    if (status == GJ_OK) {
        status = gj__encoding_unit_make(m->rt->compiler, &m->enc, &m->opts, job->part, &arch, 1, &unit);
    }
    if (status == GJ_OK) {
        status = gj__compile(m->rt->compiler, &unit.request, prog);
        gj__encoding_unit_free(&unit);
    }
    return status;
}

gj_status gj__module_load_program(gj_module *m, gj__module_program *p, gj__part part, const gj_program *prog) {
    memset(p, 0, sizeof *p);
    p->part = part;
    snprintf(p->arch, sizeof p->arch, "%s", gj_program_arch(prog) ? gj_program_arch(prog) : "?");
    p->compile_ms = gj_program_compile_ms(prog);
    p->cache = gj_program_cache_status(prog);
    gj_program_binary(prog, &p->binary_bytes);
    const char *lowered[GJ__KERNEL_COUNT] = {NULL};
    for (int k = 0; k < GJ__KERNEL_COUNT; ++k) {
        if (!gj__kernel_in_unit((gj__kernel_id)k, &m->opts, part)) {
            continue;
        }
        char expression[128];
        gj__kernel_expression(expression, sizeof expression, m->opts.name, (gj__kernel_id)k);
        lowered[k] = gj__program_lowered(prog, expression);
        if (!lowered[k]) {
            return gj__fail(m->diag, GJ_ERROR_INVALID_ARGUMENT, "the program has no kernel %s", expression);
        }
    }
    return gj__program_load(m->diag, m->drv, prog, lowered, GJ__KERNEL_COUNT, &p->library, p->kernels);
}

/* Loads prog as a new program of the module (gj__module_load_program). */
static gj_status load_part(void *user, const gj_program *prog) {
    part_job *job = user;
    gj_module *m = job->m;
    if (m->n_programs == GJ__MODULE_MAX_PROGRAMS) {
        return gj__fail(m->diag, GJ_ERROR_INTERNAL, "a module holds at most %d programs", GJ__MODULE_MAX_PROGRAMS);
    }
    gj__module_program *p = &m->programs[m->n_programs];
    gj_status status = gj__module_load_program(m, p, job->part, prog);
    if (status != GJ_OK) {
        return status;
    }
    p->sm = job->sm;
    m->n_programs++;
    job->loaded = p;
    return GJ_OK;
}

static const gj__module_program *find(const gj_module *m, gj__part part, int sm) {
    for (size_t i = 0; i < m->n_programs; ++i) {
        if (m->programs[i].part == part && m->programs[i].sm == sm) {
            return &m->programs[i];
        }
    }
    return NULL;
}

static gj_status obtain(gj_module *m, gj__part part, int sm, gj_program *ready, const gj__module_program **out) {
    part_job job = {m, part, sm, NULL};
    gj_status status = gj__device_program(m->diag, m->rt->compiler, compile_part, load_part, &job, sm, ready);
    *out = job.loaded;
    return status;
}

gj_status gj__module_program_for(gj_module *m, int sm, gj__kernel_id id, const gj__module_program **out) {
    if (m->given) {
        *out = &m->programs[0]; /* one program with every kernel, for whatever device runs it */
        return GJ_OK;
    }
    const gj__part part = gj__kernel(id)->part;
    *out = find(m, part, sm);
    return *out ? GJ_OK : obtain(m, part, sm, NULL, out);
}

/* ------------------------------------------------------------ prepare */

/* Whether NVRTC compiles sm_XY cubins here: then every part has one target and the
 * compiles can run side by side (the fallbacks take the one-by-one path). */
static int compiles_cubins_for(gj_module *m, int sm) {
    gj__nvrtc *nv = NULL;
    const int yes = gj__nvrtc_get(m->rt->compiler->nvrtc, m->diag, &nv) == GJ_OK && gj__nvrtc_supports(nv, sm);
    gj__diag_clear(m->diag);
    return yes;
}

/* Whether part p of passes (and of part_mask, when not 0) is wanted and not yet loaded for sm.
 * Call with m->lock held. */
static int wanted(gj_module *m, gj__part p, int sm, uint32_t passes, uint32_t part_mask) {
    return (gj__part_pass(p) & passes) && (!part_mask || (part_mask & (1u << p))) && gj__part_present(p, &m->opts) &&
           !find(m, p, sm);
}

gj_status gj__module_prepare_for(gj_module *m, int sm, uint32_t passes, uint32_t part_mask) {
    if (m->given) {
        return GJ_OK;
    }
    gj__encoding_unit units[GJ__PART_COUNT];
    gj__compile_job jobs[GJ__PART_COUNT];
    size_t n = 0;
    gj_status status = GJ_OK;
    const int parallel = compiles_cubins_for(m, sm);
    char arch_name[24];
    snprintf(arch_name, sizeof arch_name, "sm_%d", sm);
    gj__arch arch;
    gj__arch_parse(NULL, arch_name, &arch);
    pthread_mutex_lock(&m->lock);
    for (int p = GJ__PART_ALL + 1; status == GJ_OK && p < GJ__PART_COUNT; ++p) {
        const gj__module_program *ignored;
        if (!wanted(m, (gj__part)p, sm, passes, part_mask)) {
            continue;
        }
        if (!parallel) { /* the fallbacks, one by one */
            status = obtain(m, (gj__part)p, sm, NULL, &ignored);
            continue;
        }
        status = gj__encoding_unit_make(m->rt->compiler, &m->enc, &m->opts, (gj__part)p, &arch, 1, &units[n]);
        if (status == GJ_OK) {
            memset(&jobs[n], 0, sizeof jobs[n]);
            jobs[n].request = &units[n].request;
            n++;
        }
    }
    pthread_mutex_unlock(&m->lock);
    /* Compiled without the lock: a launch of the module's other programs, which takes it on
     * entry, does not wait for these compiles (a model's training step prepares the encoding's
     * forward on a thread while its passes apart launch the encoding's backward). */
    gj__compile_all(m->rt->compiler, jobs, n, 0);
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < n; ++i) {
        if (status == GJ_OK && jobs[i].status != GJ_OK) {
            status = gj__fail(m->diag, jobs[i].status, "%s", jobs[i].message);
        }
        const gj__module_program *ignored;
        if (status == GJ_OK && !find(m, units[i].part, sm)) { /* not loaded by a launch meanwhile */
            status = obtain(m, units[i].part, sm, jobs[i].program, &ignored);
        } else {
            gj_program_destroy(jobs[i].program);
        }
        gj__encoding_unit_free(&units[i]);
    }
    pthread_mutex_unlock(&m->lock);
    return status;
}

void gj__module_unload_all(gj_module *m) {
    for (size_t i = 0; i < m->n_programs; ++i) {
        if (m->programs[i].library) {
            m->drv->LibraryUnload(m->programs[i].library); /* context-independent */
        }
    }
    m->n_programs = 0;
}
