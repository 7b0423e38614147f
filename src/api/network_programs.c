/* A network module's programs: their generated sources, made on first use side by side on
 * threads (with their kernels looked up), and gj_network_precompile (network_module.h). */
#include "api/network_module.h"

#include "base/clock.h"
#include "codegen/facts.h"
#include "compile/arch.h"
#include "compile/encoding_unit.h"
#include "compile/precompile.h"
#include "compile/user_unit.h"
#include "runtime/module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A program of a module of net: its generated unit as a user source (what the user-module
 * machinery compiles and caches). Free with free_part_source. */
typedef struct part_source {
    char *source;
    char **names;
    size_t n_names;
    gj_source_desc desc;
} part_source;

static void free_part_source(part_source *p) {
    free(p->source);
    gj__free_string_list(p->names, p->n_names);
}

static gj_status make_part_source(gj_context *ctx, const struct gj_network *net, const gj_codegen_options *opts,
                                  gj__network_part part, const char *call, part_source *out) {
    memset(out, 0, sizeof *out);
    out->source = gj__network_source(&ctx->compiler, net, opts, part);
    out->names = gj__network_kernel_names(net, opts, part, &out->n_names);
    if (!out->source || !out->names) {
        free_part_source(out);
        return gj__fail(&ctx->diag, GJ_ERROR_OUT_OF_MEMORY, "%s: out of memory generating source", call);
    }
    gj_source_desc_init(&out->desc);
    out->desc.source = out->source;
    static const char *const file_names[GJ__NETWORK_PART_COUNT] = {
        "gj_network.cu", "gj_network_inference.cu", "gj_network_training.cu", "gj_network_backward.cu",
        "gj_network_training_input.cu", "gj_network_train_step.cu", "gj_network_adam.cu"};
    out->desc.file_name = file_names[part];
    out->desc.kernels = (const char *const *)out->names;
    out->desc.n_kernels = out->n_names;
    return GJ_OK;
}

/* The encoding module's programs that a model's passes can launch: gj_backward with dL/dx (and
 * dL/dparams or not) for the backward with dL/dinput, gj_forward and gj_backward (dL/dparams
 * alone) for the training step; one level a thread or level groups (module_args.c,
 * gj__backward_kernels; the coarse levels' kernel is in the first). */
static const gj__part encoding_parts[] = {GJ__PART_BACKWARD_INPUT, GJ__PART_BACKWARD_INPUT_ROWS, GJ__PART_BACKWARD_DX,
                                          GJ__PART_BACKWARD_DX_ROWS, GJ__PART_FORWARD, GJ__PART_FORWARD_ROWS,
                                          GJ__PART_BACKWARD, GJ__PART_BACKWARD_ROWS};
enum { N_ENCODING_PARTS = sizeof encoding_parts / sizeof *encoding_parts };

gj_status gj_network_precompile(gj_context *ctx, const gj_network *net, const char *arch,
                                 gj_precompile_report *report) {
    static const char call[] = "gj_network_precompile";
    gj_precompile_report ignored;
    report = report ? report : &ignored;
    memset(report, 0, sizeof *report);
    GJ__ENTER(ctx);
    if (!net || !arch) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "%s: net and arch must not be NULL", call);
    }
    const double start = gj__now_ms();
    gj_codegen_options opts;
    gj__network_module_options(&opts);
    /* What a module made now would compile: the same plan hints (a shallow copy that only
     * generates source; the caller's network is not changed). */
    struct gj_network hinted = *net;
    gj__network_plan_hints_from_env(&hinted.hints);
    /* The programs compile side by side (NVRTC compiles concurrently in one process): a
     * model's three took 3.5 s one after the other on the H200 host, 1.8 s side by side. A
     * model's encoding module's programs (its backward passes, for dL/dinput) join them. */
    enum { MAX_PARTS = GJ__NETWORK_PART_COUNT - GJ__NETWORK_PART_INFERENCE, MAX_UNITS = MAX_PARTS + N_ENCODING_PARTS };
    part_source sources[MAX_PARTS];
    gj__user_unit units[MAX_PARTS];
    gj__encoding_unit encoding_units[N_ENCODING_PARTS];
    char encoding_names[N_ENCODING_PARTS][48];
    const gj__compile_request *requests[MAX_UNITS];
    const char *names[MAX_UNITS];
    gj__arch target;
    size_t n = 0, n_sources = 0, n_units = 0, n_encoding = 0;
    gj_status status = gj__arch_parse(&ctx->diag, arch, &target);
    for (int part = GJ__NETWORK_PART_INFERENCE; status == GJ_OK && part < GJ__NETWORK_PART_COUNT; ++part) {
        status = make_part_source(ctx, &hinted, &opts, (gj__network_part)part, call, &sources[n_sources]);
        n_sources += status == GJ_OK;
        if (status == GJ_OK) {
            status = gj__user_unit_make(&ctx->compiler, &sources[n_units].desc, &units[n_units]);
        }
        if (status == GJ_OK) {
            units[n_units].request.arch = target;
            requests[n] = &units[n_units].request;
            names[n++] = sources[n_units++].desc.file_name;
        }
    }
    gj_codegen_options encoding_opts;
    if (status == GJ_OK && net->encoding) {
        status = gj__network_encoding_module_options(&ctx->diag, net, &encoding_opts);
    }
    for (size_t i = 0; status == GJ_OK && net->encoding && i < N_ENCODING_PARTS; ++i) {
        const gj__part part = encoding_parts[i];
        if (!gj__part_present(part, &encoding_opts)) {
            continue;
        }
        status = gj__encoding_unit_make(&ctx->compiler, net->encoding, &encoding_opts, part, &target, 1,
                                        &encoding_units[n_encoding]);
        if (status == GJ_OK) {
            snprintf(encoding_names[n_encoding], sizeof encoding_names[n_encoding], "encoding %s",
                     gj__part_name(part));
            requests[n] = &encoding_units[n_encoding].request;
            names[n++] = encoding_names[n_encoding++];
        }
    }
    if (status == GJ_OK) {
        status = gj__precompile_requests(&ctx->compiler, requests, names, n, 0, report);
    }
    for (size_t i = 0; i < n_units; ++i) {
        gj__user_unit_free(&units[i]);
    }
    for (size_t i = 0; i < n_sources; ++i) {
        free_part_source(&sources[i]);
    }
    for (size_t i = 0; i < n_encoding; ++i) {
        gj__encoding_unit_free(&encoding_units[i]);
    }
    report->ms = gj__now_ms() - start;
    return status;
}

/* A program of the module being made: its part, and what the thread that made it found. */
typedef struct part_job {
    gj_network_module *m;
    gj__network_part part;
    const char *call;
    int cached_only;   /* from the disk cache only: a miss is GJ_ERROR_NOT_FOUND, nothing compiled */
    gj__driver *drv;
    CUcontext context; /* the calling thread's current context, made current on a worker */
    gj_user_module *made;
    gj_kernel *kernels[GJ__NK_COUNT]; /* the part's, looked up in made */
    gj_status status;
    char message[GJ__MESSAGE_MAX]; /* a worker's error message (messages are per thread) */
} part_job;

/* Compiles and loads the program of job's part (a user module: for the current context's
 * device), and looks up its kernels. */
static void make_part(part_job *job) {
    gj_network_module *m = job->m;
    part_source p;
    job->made = NULL;
    job->status = make_part_source(m->ctx, m->net, &m->opts, job->part, job->call, &p);
    if (job->status == GJ_OK) {
        job->status = gj__user_module_create(&m->ctx->runtime, &p.desc, job->cached_only, &job->made);
        free_part_source(&p);
    }
    for (int k = 0; job->status == GJ_OK && k < GJ__NK_COUNT; ++k) {
        if (gj__network_kernels[k].part == job->part && gj__network_has_kernel(m->net, (gj__network_kernel)k)) {
            char name[128];
            snprintf(name, sizeof name, "%s_%s", GJ__NETWORK_DEFAULT_NAME, gj__network_kernels[k].suffix);
            job->status = gj_user_module_kernel(job->made, name, &job->kernels[k]);
        }
    }
    if (job->status != GJ_OK) {
        snprintf(job->message, sizeof job->message, "%s", gj_context_errmsg(m->ctx));
        gj_user_module_destroy(job->made);
        job->made = NULL;
    }
}

/* Under the module's lock: job's program and kernels become the module's, unless the module has
 * that part already (made meanwhile by another thread: job's is dropped, as launches may be
 * reading the module's kernels). */
static void publish(gj_network_module *m, part_job *job) {
    if (m->programs[job->part]) {
        gj_user_module_destroy(job->made);
        return;
    }
    m->programs[job->part] = job->made;
    for (int k = 0; k < GJ__NK_COUNT; ++k) {
        if (gj__network_kernels[k].part == job->part) {
            m->kernels[k] = job->kernels[k];
        }
    }
}

static void *make_part_on_worker(void *arg) {
    part_job *job = arg;
    if (job->context) {
        job->drv->CtxSetCurrent(job->context); /* the device the caller's thread compiles for */
    }
    make_part(job);
    return NULL;
}

/* The programs of parts (n at most GJ__NETWORK_PART_COUNT) and their kernels, each made on
 * first use; under the module's lock. Those not made yet compile side by side, one on this
 * thread and the others on threads of their own (NVRTC compiles concurrently in one process):
 * a training step needs its forward and backward programs together, and the two compiled
 * apart on two threads in 0.58 s where one program with both kernels took 0.69-0.76 s (two
 * cores, the 64 x 2 model). A worker's failure is reported here with its message. A part
 * that a background thread compiles (network_tiers.c) is waited for first, without the lock. */
gj_status gj__network_need_parts(gj_network_module *m, const gj__network_part *parts, size_t n, const char *call) {
    gj__network_background_wait_parts(m, parts, n);
    part_job jobs[GJ__NETWORK_PART_COUNT];
    pthread_t threads[GJ__NETWORK_PART_COUNT];
    int started[GJ__NETWORK_PART_COUNT] = {0};
    size_t n_jobs = 0;
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < n && n_jobs < GJ__NETWORK_PART_COUNT; ++i) {
        if (!m->programs[parts[i]]) {
            memset(&jobs[n_jobs], 0, sizeof jobs[n_jobs]);
            jobs[n_jobs].m = m;
            jobs[n_jobs].part = parts[i];
            jobs[n_jobs].call = call;
            n_jobs++;
        }
    }
    gj__driver *drv = NULL;
    CUcontext context = NULL;
    if (n_jobs > 1 && gj__driver_get(m->ctx->runtime.driver, &m->ctx->diag, &drv) == GJ_OK) {
        drv->CtxGetCurrent(&context);
    }
    for (size_t j = 1; drv && j < n_jobs; ++j) {
        jobs[j].drv = drv;
        jobs[j].context = context;
        started[j] = pthread_create(&threads[j], NULL, make_part_on_worker, &jobs[j]) == 0;
    }
    for (size_t j = 0; j < n_jobs; ++j) {
        if (j == 0 || !started[j]) {
            make_part(&jobs[j]); /* here: the first, and any whose thread did not start */
        }
    }
    gj_status status = GJ_OK;
    for (size_t j = 0; j < n_jobs; ++j) {
        if (started[j]) {
            pthread_join(threads[j], NULL);
        }
        if (jobs[j].status == GJ_OK) {
            publish(m, &jobs[j]);
        } else if (status == GJ_OK) {
            status = jobs[j].status;
            gj__fail(&m->ctx->diag, status, "%s", jobs[j].message);
        }
    }
    pthread_mutex_unlock(&m->lock);
    return status;
}

/* part's program made on this thread without the module's lock (into *job), not yet published. */
static void make_part_here(gj_network_module *m, gj__network_part part, int cached_only, const char *call,
                           part_job *job) {
    memset(job, 0, sizeof *job);
    job->m = m;
    job->part = part;
    job->call = call;
    job->cached_only = cached_only;
    make_part(job);
}

static void publish_locked(gj_network_module *m, part_job *job) {
    pthread_mutex_lock(&m->lock);
    publish(m, job);
    pthread_mutex_unlock(&m->lock);
}

gj_status gj__network_make_part(gj_network_module *m, gj__network_part part, int cached_only, const char *call,
                                char *message, size_t message_size) {
    part_job job;
    make_part_here(m, part, cached_only, call, &job);
    if (job.status == GJ_OK) {
        publish_locked(m, &job);
    } else if (message) {
        snprintf(message, message_size, "%s", job.status == GJ_ERROR_NOT_FOUND && cached_only ? "" : job.message);
    }
    return job.status;
}

/* Work for a thread of its own, in the starting thread's current context (runtime/scope.h's rule
 * where it has none), with its failure's message (messages are per thread). */
typedef struct worker {
    gj_network_module *m;
    const char *call;
    gj_status (*work)(struct worker *w);
    gj__driver *drv;
    CUcontext context;
    pthread_t thread;
    int started;
    gj_status status;
    char message[GJ__MESSAGE_MAX];
} worker;

static void *run_worker(void *arg) {
    worker *w = arg;
    if (w->context) {
        w->drv->CtxSetCurrent(w->context); /* the device the starting thread compiles for */
    }
    w->status = w->work(w);
    if (w->status != GJ_OK) {
        snprintf(w->message, sizeof w->message, "%s", gj_context_errmsg(w->m->ctx));
    }
    return NULL;
}

/* Starts w's work on a thread; where none starts (or the driver is missing), w->started is 0 and
 * the caller does it on its own. */
static void worker_start(worker *w) {
    w->started = 0;
    w->status = GJ_OK;
    w->message[0] = '\0';
    if (gj__driver_get(w->m->ctx->runtime.driver, &w->m->ctx->diag, &w->drv) == GJ_OK) {
        w->drv->CtxGetCurrent(&w->context);
        w->started = pthread_create(&w->thread, NULL, run_worker, w) == 0;
    }
    gj__diag_clear(&w->m->ctx->diag);
}

/* The encoding module's programs for uses (beside a network program compiled on the caller's). */
typedef struct encoding_work {
    worker w; /* first: the worker is the work */
    unsigned uses;
} encoding_work;

static gj_status prepare_encoding(worker *w) {
    encoding_work *e = (encoding_work *)w;
    gj_module *encoding_module = NULL;
    gj_status status = gj__network_need_encoding_module(w->m, &encoding_module);
    return status == GJ_OK ? gj__module_prepare_parts(encoding_module,
                                                      gj__network_encoding_parts(encoding_module, e->uses), w->call)
                           : status;
}

gj_status gj__network_make_part_beside_encoding(gj_network_module *m, gj__network_part part, unsigned encoding_uses,
                                                const char *call, char *message, size_t message_size) {
    encoding_work beside = {{.m = m, .call = call, .work = prepare_encoding}, encoding_uses};
    worker_start(&beside.w);
    if (!beside.w.started) {
        run_worker(&beside.w);
    }
    part_job job;
    make_part_here(m, part, 0, call, &job);
    if (beside.w.started) {
        pthread_join(beside.w.thread, NULL);
    }
    /* Published once the encoding's programs are loaded too: a launch that finds part made finds
     * what it launches of the encoding made as well. */
    const gj_status status = job.status != GJ_OK ? job.status : beside.w.status;
    if (status == GJ_OK) {
        publish_locked(m, &job);
        return GJ_OK;
    }
    gj_user_module_destroy(job.made);
    snprintf(message, message_size, "%s", job.status != GJ_OK ? job.message : beside.w.message);
    return status;
}

/* The programs of parts (need_parts), beside the encoding module's. */
typedef struct parts_work {
    worker w; /* first: the worker is the work */
    const gj__network_part *parts;
    size_t n;
} parts_work;

static gj_status need_parts_work(worker *w) {
    parts_work *p = (parts_work *)w;
    return gj__network_need_parts(w->m, p->parts, p->n, w->call);
}

uint32_t gj__network_encoding_parts(const gj_module *encoding_module, unsigned uses) {
    uint32_t parts = 0;
    if (uses & GJ__NETWORK_ENCODING_FORWARD) {
        parts |= gj__forward_parts(&encoding_module->shape, GJ_LAYOUT_SOA, 0);
    }
    if (uses & GJ__NETWORK_ENCODING_BACKWARD) {
        parts |= gj__backward_parts(&encoding_module->shape, GJ_LAYOUT_SOA, 1, 0);
    }
    return parts;
}

gj_status gj__network_need_parts_beside_encoding(gj_network_module *m, const gj__network_part *parts, size_t n,
                                                 unsigned encoding_uses, const char *call,
                                                 gj_module **encoding_module) {
    gj_status status = gj__network_need_encoding_module(m, encoding_module);
    if (status != GJ_OK) {
        return status;
    }
    parts_work beside = {{.m = m, .call = call, .work = need_parts_work}, parts, n};
    worker_start(&beside.w);
    status = gj__module_prepare_parts(*encoding_module, gj__network_encoding_parts(*encoding_module, encoding_uses),
                                      call);
    if (beside.w.started) {
        pthread_join(beside.w.thread, NULL);
        if (beside.w.status != GJ_OK && status == GJ_OK) {
            status = gj__fail(&m->ctx->diag, beside.w.status, "%s", beside.w.message);
        }
    } else if (status == GJ_OK) {
        status = gj__network_need_parts(m, parts, n, call);
    }
    return status;
}

/* A model's encoding module (made on first use); under the module's encoding_lock. */
gj_status gj__network_need_encoding_module(gj_network_module *m, gj_module **out) {
    pthread_mutex_lock(&m->encoding_lock);
    gj_status status = GJ_OK;
    if (!m->encoding_module) {
        status = gj_module_create(m->ctx, m->net->encoding, &m->encoding_opts, &m->encoding_module);
    }
    *out = m->encoding_module;
    pthread_mutex_unlock(&m->encoding_lock);
    return status;
}

