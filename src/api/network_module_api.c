/*
 * gj_network_module: a network alone, or a model fused with its encoding, run through its
 * generated kernels (docs/networks.md §8, §9). Each program (inference; the forward for
 * training; the backward to the parameters and zero; the backward with dL/dinput) is a user
 * module of the generated unit, made on first use (the training programs together, each on a
 * thread: a network's three, a model's first two): compiled through the disk cache per architecture by the
 * user-module machinery, which also picks the stream's context and opts into large shared
 * memory. The launch geometry is the block plan the unit states (network_plan.c). A model's
 * backward with dL/dinput is the network's kernel, which writes dL/d(features) into the
 * module's workspace for the stream's context, then the encoding's own backward with dL/dx
 * through a gj_module of the encoding (made on first use): its level-major kernels took
 * 0.67-0.80 of the time of the fused kernel with the encoding's per-point backward with dL/dx
 * (docs/networks.md §9).
 */
#include "api/context.h"
#include "base/clock.h"
#include "base/widen.h"

#include "codegen/facts.h"
#include "codegen/network_codegen.h"
#include "codegen/options.h"
#include "compile/arch.h"
#include "compile/encoding_unit.h"
#include "compile/network_unit.h"
#include "compile/precompile.h"
#include "compile/user_unit.h"
#include "model/network.h"
#include "model/network_init.h"
#include "runtime/l1_carveout.h"
#include "runtime/module.h"
#include "runtime/stream_device.h"
#include "runtime/user_module.h"
#include "runtime/workspace.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    K_INFERENCE, K_FORWARD, K_BACKWARD, K_ZERO, K_BACKWARD_INPUT, K_FINISH, K_STEP, K_STEP_ZERO, K_ADAM, K_STEP_FEATURES,
    K_COUNT
};

struct gj_network_module {
    gj_context *ctx;
    gj_network *net; /* the module's own copy */
    gj_codegen_options opts;
    gj_codegen_options encoding_opts; /* a model's: what its encoding module is made with */
    gj__network_plan plans[GJ__NETWORK_PLAN_CLASSES]; /* the kernels of each architecture class state theirs */
    pthread_mutex_t lock; /* guards the lazily made programs */
    gj_user_module *programs[GJ__NETWORK_PART_COUNT];
    gj_kernel *kernels[K_COUNT];
    gj_module *encoding_module; /* a model's encoding backward with dL/dx (made on first use, under lock) */
    gj__workspace features;     /* a model's dL/d(features) for it, per context */
    gj__workspace ring;         /* the fused training step's context slots, per context */
    /* blocks of a full wave per class, on the first device of that class launched on (0: not known yet) */
    uint64_t wave[GJ__NETWORK_PLAN_CLASSES][K_COUNT];
    uint32_t forward_waves; /* the inference and forward kernels' grid: at most this many waves */
    int carveout;           /* a model's inference kernel: CARVEOUT_RULE, or a percent (-1: the driver's) */
    int carveout_chosen;    /* prefer_l1 has run (for the first class launched), under lock */
};

/* The forward passes' grid, in waves, unless GRIDJIT_NETWORK_WAVES (1 ... 64) says otherwise:
 * a measuring knob (docs/networks.md §8), read when a module is made; it changes no code. */
#define FORWARD_WAVES 8

/* A model's inference kernel prefers shared memory for at most half of a multiprocessor's
 * capacity (l1_carveout.h), unless GRIDJIT_NETWORK_CARVEOUT gives a percent (0 ... 100) or -1
 * (the driver's choice): a measuring knob (docs/networks.md §8), read when a module is made. */
#define CARVEOUT_RULE (-2)

/* An environment variable as a whole number from lo to hi; fallback when unset or anything else. */
static long env_in_range(const char *name, long lo, long hi, long fallback) {
    const char *v = getenv(name);
    char *end = NULL;
    const long x = v ? strtol(v, &end, 10) : 0;
    return v && *v && end && !*end && x >= lo && x <= hi ? x : fallback;
}

static const char *const kernel_suffix[K_COUNT] = {"inference", "forward",    "backward",   "zero", "backward_input",
                                                   "finish",    "train_step", "train_zero", "adam", "train_features"};
/* The program each kernel is in. */
static const gj__network_part kernel_part[K_COUNT] = {
    GJ__NETWORK_PART_INFERENCE,      GJ__NETWORK_PART_TRAINING, GJ__NETWORK_PART_BACKWARD,
    GJ__NETWORK_PART_BACKWARD,       GJ__NETWORK_PART_TRAINING_INPUT, GJ__NETWORK_PART_BACKWARD,
    GJ__NETWORK_PART_STEP,           GJ__NETWORK_PART_STEP,     GJ__NETWORK_PART_STEP,
    GJ__NETWORK_PART_STEP};
/* 1: a kernel only a model's programs have; -1: only a network alone's (a model's training
 * step is its encoding module's kernels around NAME_train_features). */
static int kernel_owner(int k) {
    return k == K_STEP_FEATURES ? 1 : k == K_STEP ? -1 : 0;
}

/* GRIDJIT_NETWORK_GRADIENTS_FP32=1: a model sums its encoding's gradients in fp32 whatever
 * the encoding's precision (the code-generation option gradients_fp32), a measuring knob. */
static int env_gradients_fp32(void) {
    const char *v = getenv("GRIDJIT_NETWORK_GRADIENTS_FP32");
    return v && !strcmp(v, "1");
}

/* What a module generates with (and gj_network_precompile, so that their keys agree). */
static void module_options(gj_codegen_options *opts) {
    gj_codegen_options_init(opts);
    opts->name = GJ__NETWORK_DEFAULT_NAME;
    opts->gradients_fp32 = env_gradients_fp32();
}

/* What a model's encoding module is made with (and gj_network_precompile compiles): the
 * backward passes, and fp32 gradients wherever the encoding accumulates in fp32 anyway
 * (fp32 parameters, or one feature per level), so that the caller's dL/dencoding_params is
 * fp32 exactly where the fused kernel takes it so (docs/design.md §8.3). */
static gj_status encoding_module_options(const gj__diag *diag, const struct gj_network *net, gj_codegen_options *out) {
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = GJ_PASS_FORWARD | GJ_PASS_BACKWARD;
    opts.gradients_fp32 = env_gradients_fp32();
    opts.gradients_fp32 = gj__grad_is_fp32(&net->encoding->config, &opts);
    return gj__codegen_options_resolve(diag, &opts, out);
}

/* An environment variable as 1, 2, 4 or 8 (warps), or as 0 / 1 (-1 / 1); 0 when unset or
 * anything else. */
static uint32_t env_warps(const char *name) {
    const char *v = getenv(name);
    return v && (!strcmp(v, "1") || !strcmp(v, "2") || !strcmp(v, "4") || !strcmp(v, "8")) ? (uint32_t)atoi(v) : 0u;
}

static int env_switch(const char *name) {
    const char *v = getenv(name);
    return !v ? 0 : !strcmp(v, "1") ? 1 : !strcmp(v, "0") ? -1 : 0;
}

/* Overrides of the kernels' block plan for measuring launch shapes (docs/networks.md,
 * "Launch shapes"), read once per module. They change the generated code, hence the
 * programs' cache keys. */
static void plan_hints_from_env(gj__network_plan_hints *hints) {
    hints->warps = env_warps("GRIDJIT_NETWORK_WARPS");
    hints->stage = env_switch("GRIDJIT_NETWORK_STAGE");
    hints->smem_grads = env_switch("GRIDJIT_NETWORK_BLOCK_SUMS");
    hints->min_blocks = (uint32_t)env_in_range("GRIDJIT_NETWORK_MIN_BLOCKS", 1, 8, 0);
    hints->forward_warps = env_warps("GRIDJIT_NETWORK_FORWARD_WARPS");
    hints->forward_registers = (uint32_t)env_in_range("GRIDJIT_NETWORK_FORWARD_REGISTERS", 64, 255, 0);
    hints->step_min_blocks = (uint32_t)env_in_range("GRIDJIT_NETWORK_STEP_MIN_BLOCKS", 1, 8, 0);
    hints->step_m_tiles = (uint32_t)env_in_range("GRIDJIT_NETWORK_STEP_M_TILES", 1, 1, 0);
    /* 0 asks for none: -1 in the hint, whose 0 leaves the rule. */
    const int sums = (int)env_in_range("GRIDJIT_NETWORK_SUM_REGISTERS", 0, 255, -1);
    hints->sum_registers = sums == 0 ? -1 : sums > 0 ? sums : 0;
    hints->step_fetch_targets = env_switch("GRIDJIT_NETWORK_STEP_FETCH_TARGETS");
}

gj_status gj_network_module_create(gj_context *ctx, const gj_network *net, gj_network_module **out) {
    if (out) {
        *out = NULL;
    }
    GJ__ENTER(ctx);
    if (!net || !out) {
        return gj__fail(&ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "gj_network_module_create: net and out must not be NULL");
    }
    gj_network_module *m = calloc(1, sizeof *m);
    char *json = gj_network_hyperparams(net);
    char err[512] = "";
    gj_status status = m && json ? gj__network_make_ex(json, 0, 0, 0, NULL, &m->net, err, sizeof err)
                                 : GJ_ERROR_OUT_OF_MEMORY;
    gj_free(json);
    if (status != GJ_OK) {
        free(m);
        return gj__fail(&ctx->diag, status, "gj_network_module_create: %s", err[0] ? err : "out of memory");
    }
    m->ctx = ctx;
    module_options(&m->opts);
    if (m->net->encoding) {
        status = encoding_module_options(&ctx->diag, m->net, &m->encoding_opts);
        if (status != GJ_OK) {
            gj_network_destroy(m->net);
            free(m);
            return status;
        }
    }
    plan_hints_from_env(&m->net->hints); /* the module's own copy of the network */
    gj__network_plans_make(&m->net->layout, &m->net->hints, m->net->encoding != NULL, m->plans);
    m->forward_waves = (uint32_t)env_in_range("GRIDJIT_NETWORK_WAVES", 1, 64, FORWARD_WAVES);
    m->carveout = (int)env_in_range("GRIDJIT_NETWORK_CARVEOUT", -1, 100, CARVEOUT_RULE);
    pthread_mutex_init(&m->lock, NULL);
    gj__workspace_init(&m->features);
    gj__workspace_init(&m->ring);
    *out = m;
    return GJ_OK;
}

void gj_network_module_destroy(gj_network_module *module) {
    if (!module) {
        return;
    }
    for (int p = 0; p < GJ__NETWORK_PART_COUNT; ++p) {
        gj_user_module_destroy(module->programs[p]);
    }
    gj_module_destroy(module->encoding_module);
    gj__workspace_destroy(&module->features, &module->ctx->runtime);
    gj__workspace_destroy(&module->ring, &module->ctx->runtime);
    gj_network_destroy(module->net);
    pthread_mutex_destroy(&module->lock);
    free(module);
}

static size_t encoding_param_size(const gj_network_module *m) {
    return m->net->encoding->config.precision == GJ_PRECISION_FP16 ? 2 : 4;
}

uint64_t gj_network_module_context_bytes(const gj_network_module *module, uint64_t n) {
    return module ? (n + 31) / 32 * module->plans[GJ__NETWORK_PLAN_PORTABLE].ctx_halves * 2 : 0; /* any class's */
}

size_t gj_network_module_encoding_gradient_size(const gj_network_module *module) {
    if (!module || !module->net->encoding) {
        return 0;
    }
    return gj__grad_is_fp32(&module->net->encoding->config, &module->encoding_opts) ? 4 : 2;
}

/* Launches kernel k of the backward program, a grid-stride loop over items (blocks of 256
 * threads, at most 1024 blocks): the zeroing and the finishing kernels. */
static gj_status launch_elementwise(gj_network_module *m, int k, gj_stream stream, uint64_t items, void **args) {
    const uint64_t blocks = (items + 255) / 256;
    gj_launch_config cfg;
    gj_launch_config_init(&cfg);
    cfg.block[0] = 256;
    cfg.grid[0] = (uint32_t)(blocks < 1 ? 1 : blocks < 1024 ? blocks : 1024);
    cfg.stream = stream;
    return gj_kernel_launch(m->kernels[k], &cfg, args);
}

/* Zeroes bytes (a multiple of 4) at p on stream with the backward program's kernel (or the
 * training step program's, k). */
static gj_status zero_with(gj_network_module *m, int k, gj_stream stream, void *p, uint64_t bytes) {
    uint64_t words = bytes / 4;
    void *args[] = {&words, &p};
    return launch_elementwise(m, k, stream, words, args);
}

static gj_status zero(gj_network_module *m, gj_stream stream, void *p, uint64_t bytes) {
    return zero_with(m, K_ZERO, stream, p, bytes);
}

void gj_network_pass_desc_init(gj_network_pass_desc *desc) {
    if (desc) {
        memset(desc, 0, sizeof *desc);
        desc->struct_size = sizeof *desc;
        desc->dL_dparams_mode = GJ_GRAD_OVERWRITE;
    }
}

void gj_network_init_desc_init(gj_network_init_desc *desc) {
    if (desc) {
        memset(desc, 0, sizeof *desc);
        desc->struct_size = sizeof *desc;
        desc->seed = 1337;
        desc->scale = 1.0f;
    }
}

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
        "gj_network_training_input.cu", "gj_network_train_step.cu"};
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
    module_options(&opts);
    /* What a module made now would compile: the same plan hints (a shallow copy that only
     * generates source; the caller's network is not changed). */
    struct gj_network hinted = *net;
    plan_hints_from_env(&hinted.hints);
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
        status = encoding_module_options(&ctx->diag, net, &encoding_opts);
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
    gj__driver *drv;
    CUcontext context; /* the calling thread's current context, made current on a worker */
    gj_user_module *made;
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
        job->status = gj_user_module_create(m->ctx, &p.desc, &job->made);
        free_part_source(&p);
    }
    for (int k = 0; job->status == GJ_OK && k < K_COUNT; ++k) {
        const int owner = kernel_owner(k);
        if (kernel_part[k] == job->part && (owner == 0 || (owner == 1) == (m->net->encoding != NULL))) {
            char name[128];
            snprintf(name, sizeof name, "%s_%s", GJ__NETWORK_DEFAULT_NAME, kernel_suffix[k]);
            job->status = gj_user_module_kernel(job->made, name, &m->kernels[k]);
        }
    }
    if (job->status != GJ_OK) {
        snprintf(job->message, sizeof job->message, "%s", gj_context_errmsg(m->ctx));
        gj_user_module_destroy(job->made);
        job->made = NULL;
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
 * cores, the 64 x 2 model). A worker's failure is reported here with its message. */
static gj_status need_parts(gj_network_module *m, const gj__network_part *parts, size_t n, const char *call) {
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
            m->programs[jobs[j].part] = jobs[j].made;
        } else if (status == GJ_OK) {
            status = jobs[j].status;
            gj__fail(&m->ctx->diag, status, "%s", jobs[j].message);
        }
    }
    pthread_mutex_unlock(&m->lock);
    return status;
}

/* A model's encoding module (made on first use); under the module's lock. */
static gj_status need_encoding_module(gj_network_module *m, gj_module **out) {
    pthread_mutex_lock(&m->lock);
    gj_status status = GJ_OK;
    if (!m->encoding_module) {
        status = gj_module_create(m->ctx, m->net->encoding, &m->encoding_opts, &m->encoding_module);
    }
    *out = m->encoding_module;
    pthread_mutex_unlock(&m->lock);
    return status;
}

/* A model's inference kernel gathers its encoding's table entries through L1: with the shared
 * memory that the most resident blocks would take, a 64 x 4 model's kernel kept 23 KiB of L1 on
 * the H200 and ran at half speed (docs/networks.md, "Shared memory against L1"). So it prefers
 * fewer blocks (l1_carveout.h: within half the capacity, at least two) and the rest as L1, and
 * one where its plan's block is the wide one of 16 warps (one_block: the block that asks for one
 * and is made to be alone); *per_sm becomes the blocks that then fit. */
static gj_status prefer_l1(gj_network_module *m, gj_stream stream, uint32_t shared_bytes, int one_block, int *per_sm,
                           const char *call) {
    int percent = m->carveout, blocks = one_block && *per_sm > 1 ? 1 : *per_sm;
    if (percent == CARVEOUT_RULE) {
        int smem = 0, reserved = 0;
        gj_status status = gj__stream_device_attribute(
            &m->ctx->runtime, stream, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, call, &smem);
        if (status == GJ_OK) {
            status = gj__stream_device_attribute(&m->ctx->runtime, stream,
                                                 CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, call, &reserved);
        }
        if (status != GJ_OK) {
            return status;
        }
        percent = gj__l1_carveout(smem > 0 ? (uint32_t)smem : 0u, reserved > 0 ? (uint32_t)reserved : 0u,
                                  shared_bytes, blocks, &blocks);
    }
    if (percent == -1 && m->carveout == CARVEOUT_RULE) {
        return GJ_OK; /* nothing known: the driver's choice stands */
    }
    gj_status status = gj_kernel_set_shared_carveout(m->kernels[K_INFERENCE], percent);
    if (status != GJ_OK) {
        return status;
    }
    *per_sm = blocks;
    return GJ_OK;
}

/* A launch of kernel k over n points (launch_shape). */
typedef struct launch_job {
    gj_network_module *m;
    int k;
    uint64_t n;
    gj_stream stream;
    const char *call;
    void **ring; /* K_STEP: set to the module's ring for the grid chosen (an argument of the launch) */
} launch_job;

/* The geometry of a launch of code compiled as a cubin for cubin_sm (0: PTX): the plan of its
 * class (the one its NAME_config stated there), a block of the plan's warps (the forward
 * passes' or the backward's) and shared memory, as many blocks as the tiles need, at most
 * forward_waves waves (the kernels walk the tiles), the backward one wave. */
static gj_status launch_shape(void *arg, int cubin_sm, gj_launch_config *cfg) {
    const launch_job *job = arg;
    gj_network_module *m = job->m;
    const int k = job->k;
    const gj__network_plan_class cls = gj__network_plan_class_of(cubin_sm);
    const gj__network_plan *plan = &m->plans[cls];
    const int backward = k == K_BACKWARD || k == K_BACKWARD_INPUT || k == K_STEP || k == K_STEP_FEATURES;
    const int inference = k == K_INFERENCE;
    const uint32_t warps = backward ? plan->warps : inference ? plan->inference_warps : plan->forward_warps;
    const uint32_t threads = 32 * warps;
    const int features = k == K_BACKWARD_INPUT && m->net->encoding;
    const uint32_t shared_bytes = k == K_STEP_FEATURES                       ? plan->step_input_bytes
                                  : k == K_STEP                              ? plan->step_bytes
                                  : features                                 ? plan->backward_input_bytes
                                  : backward                                 ? plan->backward_bytes
                                  : inference                                ? plan->inference_bytes
                                                                             : plan->forward_bytes;
    const uint64_t needed = ((job->n + 31) / 32 + warps - 1) / warps;
    /* Asked of the driver once a class: a wave only bounds the grid, which any size computes right. */
    pthread_mutex_lock(&m->lock);
    uint64_t wave = m->wave[cls][k];
    pthread_mutex_unlock(&m->lock);
    if (!wave) {
        int sms = 0, per_sm = 0;
        gj_status status = gj__stream_multiprocessors(&m->ctx->runtime, job->stream, job->call, &sms);
        if (status == GJ_OK) {
            status = gj_kernel_occupancy(m->kernels[k], threads, shared_bytes, &per_sm);
        }
        /* The carveout is the kernel's in every context: the first class launched chooses it
         * (a module on GPUs of both classes keeps that class's choice; speed alone differs). */
        pthread_mutex_lock(&m->lock);
        const int choose_carveout = k == K_INFERENCE && m->net->encoding && !m->carveout_chosen;
        pthread_mutex_unlock(&m->lock);
        if (status == GJ_OK && choose_carveout) {
            status = prefer_l1(m, job->stream, shared_bytes, plan->inference_min_blocks == 1, &per_sm, job->call);
            pthread_mutex_lock(&m->lock);
            m->carveout_chosen = status == GJ_OK;
            pthread_mutex_unlock(&m->lock);
        }
        if (status != GJ_OK) {
            return status;
        }
        wave = (uint64_t)(sms > 0 ? sms : 1) * (uint64_t)(per_sm > 0 ? per_sm : 1);
        pthread_mutex_lock(&m->lock);
        m->wave[cls][k] = wave;
        pthread_mutex_unlock(&m->lock);
    }
    const uint64_t cap = backward ? wave : (uint64_t)m->forward_waves * wave;
    cfg->grid[0] = (uint32_t)(needed < cap ? needed : cap);
    cfg->block[0] = threads;
    cfg->shared_bytes = shared_bytes;
    if (job->ring) {
        /* The training step's warps each keep their tile's context in a slot of their own. */
        const size_t bytes = (size_t)cfg->grid[0] * warps * plan->ctx_halves * 2;
        return gj__workspace_get(&m->ring, &m->ctx->runtime, job->stream, bytes, job->call, job->ring);
    }
    return GJ_OK;
}

/* Launches kernel k over n points with the plan of the code that serves the stream's context;
 * ring (the training step's kernels): the argument launch_shape sets to the warps' slots. */
static gj_status launch_step(gj_network_module *m, int k, gj_stream stream, uint64_t n, void **args, void **ring,
                             const char *call) {
    launch_job job = {m, k, n, stream, call, ring};
    return gj__kernel_launch_shaped(m->kernels[k], stream, launch_shape, &job, args, call);
}

static gj_status launch(gj_network_module *m, int k, gj_stream stream, uint64_t n, void **args, const char *call) {
    return launch_step(m, k, stream, n, args, NULL, call);
}

/* desc, or where a caller compiled against an older header made it, *full: the same with the
 * fields that layout lacks at their defaults. */
static const gj_network_pass_desc *widened_desc(const gj_network_pass_desc *desc, gj_network_pass_desc *full) {
    return gj__widened(desc, offsetof(gj_network_pass_desc, dL_doutput_scale), sizeof *full, full);
}

static gj_status check_desc(gj_network_module *m, const gj_network_pass_desc *d, const char *call) {
    if (!d || d->struct_size != sizeof *d) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "%s: desc is %s", call,
                        d ? "not prepared by gj_network_pass_desc_init (struct_size)" : "NULL");
    }
    const float scale = d->dL_doutput_scale;
    if (!(scale == 0.0f || (scale > 0.0f && isfinite(scale)))) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: dL_doutput_scale = %g: a loss scale must be finite and greater than 0 (or 0: none)", call,
                        (double)scale);
    }
    if (d->n > GJ_MAX_POINTS) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "%s: n = %llu exceeds GJ_MAX_POINTS", call,
                        (unsigned long long)d->n);
    }
    if (d->n && !d->params) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "%s: params must not be NULL", call);
    }
    if (d->n && m->net->encoding && !d->encoding_params) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "%s: encoding_params must not be NULL (a model)", call);
    }
    if (!m->net->encoding && (d->encoding_params || d->dL_dencoding_params || d->dL_dencoding_params_fp32)) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: encoding_params, dL_dencoding_params and dL_dencoding_params_fp32 are for a model; this "
                        "network has no encoding",
                        call);
    }
    if (d->unscale_gradients > 1) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "%s: unscale_gradients = %u: must be 0 or 1", call,
                        d->unscale_gradients);
    }
    return GJ_OK;
}

static gj_status run_forward(gj_network_module *module, gj_stream stream, const gj_network_pass_desc *desc,
                             int training, const char *call) {
    if (!module) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj__diag_clear(&module->ctx->diag);
    gj_network_pass_desc full;
    desc = widened_desc(desc, &full);
    gj_status status = check_desc(module, desc, call);
    if (status != GJ_OK || desc->n == 0) {
        return status;
    }
    if (!desc->input || !desc->output || (training && !desc->context)) {
        return gj__fail(&module->ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "%s: input, output%s must not be NULL", call,
                        training ? " and context" : "");
    }
    /* The forward for training comes with its backward: their programs compile together. A
     * network alone's backward with dL/dinput (what a network behind a torch Encoding needs)
     * joins them; a model's (two more programs, and the encoding's) is made on first use. */
    static const gj__network_part inference_parts[] = {GJ__NETWORK_PART_INFERENCE};
    static const gj__network_part training_parts[] = {GJ__NETWORK_PART_TRAINING, GJ__NETWORK_PART_BACKWARD,
                                                      GJ__NETWORK_PART_TRAINING_INPUT};
    status = training ? need_parts(module, training_parts, module->net->encoding ? 2 : 3, call)
                      : need_parts(module, inference_parts, 1, call);
    if (status != GJ_OK) {
        return status;
    }
    uint64_t n = desc->n;
    const float *x = desc->input;
    float *y = desc->output;
    const void *params = desc->params;
    const void *eparams = desc->encoding_params;
    void *context = desc->context;
    void *args_network[] = {&n, &x, &y, &params, &context};
    void *args_model[] = {&n, &x, &y, &params, &eparams, &context};
    return launch(module, training ? K_FORWARD : K_INFERENCE, stream, n,
                  module->net->encoding ? args_model : args_network, call);
}

gj_status gj_network_inference(gj_network_module *module, gj_stream stream, const gj_network_pass_desc *desc) {
    return run_forward(module, stream, desc, 0, "gj_network_inference");
}

gj_status gj_network_forward(gj_network_module *module, gj_stream stream, const gj_network_pass_desc *desc) {
    return run_forward(module, stream, desc, 1, "gj_network_forward");
}

/* Where a backward pass puts a model's encoding gradients, and what its finishing pass does
 * (the descriptor checked against the module). */
typedef struct gradient_plan {
    void *sums;      /* where the kernels add them up: NULL (not asked for), the caller's fp16 buffer
                        (converted), or the caller's gradient array itself */
    int convert;     /* fp16 sums converted into dL_dencoding_params_fp32 */
    int sums_zeroed; /* the sums start from zero (overwrite, or a conversion's own sums) */
    float factor;    /* what the finishing pass multiplies by: 1 / the loss scale, or 1 */
} gradient_plan;

static gj_status plan_gradients(gj_network_module *m, const gj_network_pass_desc *d, float dy_scale,
                                const char *call, gradient_plan *g) {
    memset(g, 0, sizeof *g);
    const int overwrite = d->dL_dparams_mode == GJ_GRAD_OVERWRITE;
    const int fp16_sums = m->net->encoding && gj_network_module_encoding_gradient_size(m) == 2;
    if (d->dL_dencoding_params_fp32 && fp16_sums && !d->dL_dencoding_params) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: dL_dencoding_params_fp32 of an encoding whose gradients the kernels sum in fp16 needs "
                        "dL_dencoding_params too, the fp16 buffer they sum into (gj_network_module_encoding_gradient_"
                        "size() bytes a parameter)", call);
    }
    if (d->dL_dencoding_params_fp32 && !fp16_sums && d->dL_dencoding_params) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: give dL_dencoding_params or dL_dencoding_params_fp32, not both: this encoding's "
                        "gradients are summed in fp32", call);
    }
    if (d->unscale_gradients && !overwrite) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: unscale_gradients needs dL_dparams_mode GJ_GRAD_OVERWRITE (gradients divided in place)",
                        call);
    }
    if (d->unscale_gradients && fp16_sums && d->dL_dencoding_params && !d->dL_dencoding_params_fp32) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: unscale_gradients: fp16 dL_dencoding_params cannot be unscaled (small gradients would "
                        "underflow); ask for dL_dencoding_params_fp32", call);
    }
    g->convert = d->dL_dencoding_params_fp32 && fp16_sums;
    g->sums = d->dL_dencoding_params_fp32 && !fp16_sums ? (void *)d->dL_dencoding_params_fp32 : d->dL_dencoding_params;
    g->sums_zeroed = overwrite || g->convert;
    g->factor = d->unscale_gradients ? 1.0f / dy_scale : 1.0f;
    return GJ_OK;
}

/* The finishing pass where one is needed (templates/network_kernels.cuh, gj_nn_finish_kernel):
 * the conversion of fp16 sums into dL_dencoding_params_fp32, and the division by the loss
 * scale of the fp32 gradients written (dL_dparams, dL_dinput, an encoding's fp32 sums). */
static gj_status finish_gradients(gj_network_module *m, gj_stream stream, const gj_network_pass_desc *d,
                                  const gradient_plan *g) {
    const int scale = g->factor != 1.0f;
    if (!g->convert && !scale) {
        return GJ_OK;
    }
    const uint64_t n_encoding = m->net->encoding ? m->net->encoding->layout.n_params : 0;
    uint64_t n16 = g->convert ? n_encoding : 0;
    const void *sums = g->convert ? g->sums : NULL;
    float *out = g->convert ? d->dL_dencoding_params_fp32 : NULL;
    uint32_t accumulate = g->convert && d->dL_dparams_mode == GJ_GRAD_ACCUMULATE;
    /* What is scaled in place: nothing (n 0) without a scale. */
    float *p[3] = {d->dL_dparams, d->dL_dinput, g->convert ? NULL : (float *)g->sums};
    uint64_t n[3] = {m->net->layout.n_params, d->n * m->net->n_input_dims, n_encoding};
    uint64_t items = (n16 + 3) / 4; /* the conversion goes four sums a thread */
    for (int i = 0; i < 3; ++i) {
        n[i] = scale && p[i] ? n[i] : 0;
        items = n[i] > items ? n[i] : items;
    }
    float factor = g->factor;
    void *args[] = {&n16, &sums, &out, &accumulate, &n[0], &p[0], &n[1], &p[1], &n[2], &p[2], &factor};
    return launch_elementwise(m, K_FINISH, stream, items, args);
}

gj_status gj_network_backward(gj_network_module *module, gj_stream stream, const gj_network_pass_desc *desc) {
    static const char call[] = "gj_network_backward";
    if (!module) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj__diag_clear(&module->ctx->diag);
    gj_network_pass_desc full;
    desc = widened_desc(desc, &full);
    gj_status status = check_desc(module, desc, call);
    if (status != GJ_OK || desc->n == 0) {
        return status;
    }
    const int model = module->net->encoding != NULL;
    if (!desc->dL_doutput || !desc->context ||
        (!desc->dL_dparams && !desc->dL_dinput && !desc->dL_dencoding_params && !desc->dL_dencoding_params_fp32)) {
        return gj__fail(&module->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: dL_doutput and context must not be NULL, and dL_dparams, dL_dinput, "
                        "dL_dencoding_params or dL_dencoding_params_fp32 must be given", call);
    }
    if (model && !desc->input) {
        return gj__fail(&module->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: input must not be NULL (a model's backward pass reads it again)", call);
    }
    if (desc->dL_dparams_mode != GJ_GRAD_OVERWRITE && desc->dL_dparams_mode != GJ_GRAD_ACCUMULATE) {
        return gj__fail(&module->ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "%s: dL_dparams_mode %d is neither overwrite "
                        "nor accumulate", call, (int)desc->dL_dparams_mode);
    }
    float dy_scale = desc->dL_doutput_scale == 0.0f ? 1.0f : desc->dL_doutput_scale;
    gradient_plan grads;
    status = plan_gradients(module, desc, dy_scale, call, &grads);
    if (status != GJ_OK) {
        return status;
    }
    /* The backward with dL/dinput is a kernel of a program of its own. A model's writes
     * dL/d(features) (n x the encoding's outputs in its precision, feature-major: the encoding's
     * backward's dL/dy) into the module's workspace, then the encoding module's backward runs. */
    const int with_input = desc->dL_dinput != NULL;
    gj_module *encoding_module = NULL;
    static const gj__network_part parts[] = {GJ__NETWORK_PART_BACKWARD, GJ__NETWORK_PART_TRAINING_INPUT};
    status = need_parts(module, parts, with_input ? 2 : 1, call);
    if (status == GJ_OK && model && with_input) {
        status = need_encoding_module(module, &encoding_module);
    }
    void *features = NULL;
    if (status == GJ_OK && model && with_input) {
        status = gj__workspace_get(&module->features, &module->ctx->runtime, stream,
                                   desc->n * module->net->encoding->layout.n_output_dims * encoding_param_size(module),
                                   call, &features);
    }
    const int overwrite = desc->dL_dparams_mode == GJ_GRAD_OVERWRITE;
    if (status == GJ_OK && desc->dL_dparams && overwrite) {
        status = zero(module, stream, desc->dL_dparams, 4 * module->net->layout.n_params);
    }
    if (status == GJ_OK && grads.sums && grads.sums_zeroed && !(model && with_input)) {
        status = zero(module, stream, grads.sums,
                      gj_network_module_encoding_gradient_size(module) * module->net->encoding->layout.n_params);
    }
    if (status != GJ_OK) {
        return status;
    }
    uint64_t n = desc->n;
    const float *x = desc->input;
    const float *dy = desc->dL_doutput;
    const void *params = desc->params;
    const void *eparams = desc->encoding_params;
    const void *context = desc->context;
    float *dparams = desc->dL_dparams;
    void *deparams = grads.sums;
    float *dx = desc->dL_dinput;
    if (!model && with_input) {
        void *args[] = {&n, &dy, &params, &context, &dparams, &dx, &dy_scale};
        status = launch(module, K_BACKWARD_INPUT, stream, n, args, call);
    } else if (!model) {
        void *args[] = {&n, &dy, &params, &context, &dparams, &dy_scale};
        status = launch(module, K_BACKWARD, stream, n, args, call);
    } else if (!with_input) {
        void *args[] = {&n, &x, &dy, &params, &eparams, &context, &dparams, &deparams, &dy_scale};
        status = launch(module, K_BACKWARD, stream, n, args, call);
    } else {
        void *args[] = {&n, &dy, &params, &context, &dparams, &features, &dy_scale};
        status = launch(module, K_BACKWARD_INPUT, stream, n, args, call);
        gj_backward_desc b;
        gj_backward_desc_init(&b);
        b.n = n;
        b.x = x;
        b.params = eparams;
        b.dL_dy = features;
        b.dL_dy_layout = GJ_LAYOUT_SOA;
        b.dL_dparams = deparams;
        b.dL_dparams_mode = grads.sums_zeroed ? GJ_GRAD_OVERWRITE : GJ_GRAD_ACCUMULATE;
        b.dL_dx = dx;
        status = status == GJ_OK ? gj_backward(encoding_module, stream, &b) : status;
    }
    return status == GJ_OK ? finish_gradients(module, stream, desc, &grads) : status;
}

/* ---- the fused training step and Adam (docs/networks.md §10) ---------------------------- */

/* tinycudann's loss scale for fp16 training, where a descriptor leaves it 0. */
#define DEFAULT_LOSS_SCALE 128.0f

/* The start of gj_network_train_step and gj_network_adam_step: the message emptied, the
 * descriptor (missing: NULL; its struct_size against the header's, unprepared: what a wrong one
 * says) and its loss scale checked; *scale the scale in effect. */
static gj_status enter_step_call(gj_network_module *m, uint32_t struct_size, size_t expected, float loss_scale,
                                 int missing, const char *unprepared, const char *call, float *scale) {
    gj__diag_clear(&m->ctx->diag);
    if (missing || struct_size != expected) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT, "%s: desc is %s", call,
                        missing ? "NULL" : unprepared);
    }
    if (!(loss_scale == 0.0f || (loss_scale > 0.0f && isfinite(loss_scale)))) {
        return gj__fail(&m->ctx->diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: loss_scale = %g: must be finite and greater than 0 (or 0: %g)", call, (double)loss_scale,
                        (double)DEFAULT_LOSS_SCALE);
    }
    *scale = loss_scale == 0.0f ? DEFAULT_LOSS_SCALE : loss_scale;
    return GJ_OK;
}

void gj_network_train_desc_init(gj_network_train_desc *desc) {
    if (desc) {
        memset(desc, 0, sizeof *desc);
        desc->struct_size = sizeof *desc;
    }
}

void gj_network_adam_desc_init(gj_network_adam_desc *desc) {
    if (desc) {
        memset(desc, 0, sizeof *desc);
        desc->struct_size = sizeof *desc;
        desc->learning_rate = 1e-3f;
        desc->beta1 = 0.9f;
        desc->beta2 = 0.999f;
        desc->epsilon = 1e-8f;
        desc->l2_reg = 1e-8f;
    }
}

/* The L2 loss's factors over n points: its gradient 2 (y - target) * scale / values and its
 * value (y - target)^2 / values, values = n * the outputs (tiny-cuda-nn's n_total). */
static void loss_factors(const gj_network_module *m, uint64_t n, float scale, float *grad_factor, float *loss_factor) {
    const double values = (double)n * m->net->layout.output_width;
    *grad_factor = (float)(2.0 * scale / values);
    *loss_factor = (float)(1.0 / values);
}

static const gj__network_part step_parts[] = {GJ__NETWORK_PART_STEP};

/* What the step's kernel adds to: the network's gradients and the loss, zeroed on the stream. */
static gj_status zero_step_outputs(gj_network_module *m, gj_stream stream, const gj_network_train_desc *desc) {
    gj_status status = zero_with(m, K_STEP_ZERO, stream, desc->dL_dparams, 4 * m->net->layout.n_params);
    if (status == GJ_OK && desc->loss) {
        status = zero_with(m, K_STEP_ZERO, stream, desc->loss, 4);
    }
    return status;
}

/* The step program, made on a thread of its own beside the encoding module's programs. */
typedef struct step_job {
    gj_network_module *m;
    const char *call;
    gj__driver *drv;
    CUcontext context;
    gj_status status;
    char message[GJ__MESSAGE_MAX]; /* messages are per thread */
} step_job;

static void *step_program_on_worker(void *arg) {
    step_job *job = arg;
    job->drv->CtxSetCurrent(job->context);
    job->status = need_parts(job->m, step_parts, 1, job->call);
    if (job->status != GJ_OK) {
        snprintf(job->message, sizeof job->message, "%s", gj_context_errmsg(job->m->ctx));
    }
    return NULL;
}

/* What a model's training step runs, made side by side where nothing is yet: the step program
 * (on a thread) and the encoding module's forward and backward programs (which its prepare
 * compiles side by side in turn). */
static gj_status need_model_step(gj_network_module *m, const char *call, gj_module **encoding_module) {
    gj_status status = need_encoding_module(m, encoding_module);
    pthread_mutex_lock(&m->lock);
    const int made = m->programs[GJ__NETWORK_PART_STEP] != NULL;
    pthread_mutex_unlock(&m->lock);
    if (status != GJ_OK || made) {
        return status == GJ_OK ? need_parts(m, step_parts, 1, call) : status;
    }
    step_job job = {m, call, NULL, NULL, GJ_OK, {0}};
    pthread_t thread;
    int started = 0;
    if (gj__driver_get(m->ctx->runtime.driver, &m->ctx->diag, &job.drv) == GJ_OK) {
        job.drv->CtxGetCurrent(&job.context);
        started = job.context && pthread_create(&thread, NULL, step_program_on_worker, &job) == 0;
    }
    /* The encoding's forward and its backward to the parameters alone, one level a thread or
     * level groups: what gj_forward and gj_backward launch below. */
    const uint32_t parts = 1u << GJ__PART_FORWARD | 1u << GJ__PART_FORWARD_ROWS | 1u << GJ__PART_BACKWARD |
                           1u << GJ__PART_BACKWARD_ROWS;
    status = gj__module_prepare_parts(*encoding_module, parts, call);
    if (started) {
        pthread_join(thread, NULL);
        if (job.status != GJ_OK && status == GJ_OK) {
            status = gj__fail(&m->ctx->diag, job.status, "%s", job.message);
        }
    } else if (status == GJ_OK) {
        status = need_parts(m, step_parts, 1, call);
    }
    return status;
}

/* A model's training step in three launches: the encoding module's forward writes the features
 * (feature-major, into the module's workspace), the network's kernel turns them into
 * dL/d(features) in place, the encoding module's backward adds its parameter gradients. */
static gj_status train_step_model(gj_network_module *module, gj_stream stream, const gj_network_train_desc *desc,
                                  float scale, const char *call) {
    gj_module *encoding_module = NULL;
    void *features = NULL;
    gj_status status = need_model_step(module, call, &encoding_module);
    if (status == GJ_OK) {
        status = gj__workspace_get(&module->features, &module->ctx->runtime, stream,
                                   desc->n * module->net->encoding->layout.n_output_dims * encoding_param_size(module),
                                   call, &features);
    }
    if (status == GJ_OK) {
        gj_forward_desc f;
        gj_forward_desc_init(&f);
        f.n = desc->n;
        f.x = desc->input;
        f.params = desc->encoding_params;
        f.y = features;
        f.y_layout = GJ_LAYOUT_SOA;
        status = gj_forward(encoding_module, stream, &f);
    }
    status = status == GJ_OK ? zero_step_outputs(module, stream, desc) : status;
    if (status != GJ_OK) {
        return status;
    }
    uint64_t n = desc->n;
    float grad_factor, loss_factor;
    loss_factors(module, desc->n, scale, &grad_factor, &loss_factor);
    const float *target = desc->target;
    const void *params = desc->params;
    void *ring = NULL;
    float *y = desc->output, *dparams = desc->dL_dparams, *loss = desc->loss;
    void *args[] = {&n, &features, &target, &grad_factor, &loss_factor, &params, &ring, &y, &dparams, &loss};
    status = launch_step(module, K_STEP_FEATURES, stream, n, args, &ring, call);
    if (status == GJ_OK) {
        gj_backward_desc b;
        gj_backward_desc_init(&b);
        b.n = n;
        b.x = desc->input;
        b.params = desc->encoding_params;
        b.dL_dy = features;
        b.dL_dy_layout = GJ_LAYOUT_SOA;
        b.dL_dparams = desc->dL_dencoding_params;
        b.dL_dparams_mode = GJ_GRAD_OVERWRITE;
        status = gj_backward(encoding_module, stream, &b);
    }
    return status;
}

gj_status gj_network_train_step(gj_network_module *module, gj_stream stream, const gj_network_train_desc *desc) {
    static const char call[] = "gj_network_train_step";
    if (!module) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj__diag *diag = &module->ctx->diag;
    float scale = 0.0f;
    gj_status status =
        enter_step_call(module, desc ? desc->struct_size : 0, sizeof *desc, desc ? desc->loss_scale : 0.0f, !desc,
                        "not prepared by gj_network_train_desc_init (struct_size)", call, &scale);
    if (status != GJ_OK) {
        return status;
    }
    if (desc->n > GJ_MAX_POINTS) {
        return gj__fail(diag, GJ_ERROR_INVALID_ARGUMENT, "%s: n = %llu exceeds GJ_MAX_POINTS", call,
                        (unsigned long long)desc->n);
    }
    const int model = module->net->encoding != NULL;
    if (!model && (desc->encoding_params || desc->dL_dencoding_params)) {
        return gj__fail(diag, GJ_ERROR_INVALID_ARGUMENT,
                        "%s: encoding_params and dL_dencoding_params are for a model; this network has no encoding", call);
    }
    if (desc->n == 0) {
        return GJ_OK;
    }
    if (!desc->input || !desc->target || !desc->params || !desc->dL_dparams ||
        (model && (!desc->encoding_params || !desc->dL_dencoding_params))) {
        return gj__fail(diag, GJ_ERROR_INVALID_ARGUMENT, "%s: input, target, params%s and dL_dparams%s must not be NULL",
                        call, model ? ", encoding_params" : "", model ? " and dL_dencoding_params (a model)" : "");
    }
    if (model) {
        return train_step_model(module, stream, desc, scale, call);
    }
    status = need_parts(module, step_parts, 1, call);
    status = status == GJ_OK ? zero_step_outputs(module, stream, desc) : status;
    if (status != GJ_OK) {
        return status;
    }
    uint64_t n = desc->n;
    float grad_factor, loss_factor;
    loss_factors(module, desc->n, scale, &grad_factor, &loss_factor);
    const float *x = desc->input, *target = desc->target;
    const void *params = desc->params;
    void *ring = NULL;
    float *y = desc->output, *dparams = desc->dL_dparams, *loss = desc->loss;
    void *args[] = {&n, &x, &target, &grad_factor, &loss_factor, &params, &ring, &y, &dparams, &loss};
    return launch_step(module, K_STEP, stream, n, args, &ring, call);
}

/* The Adam kernel's hyperparameters (templates/network_kernels.cuh, gj_nn_adam_hyper). */
typedef struct adam_hyper {
    float lr, beta1, beta2, epsilon, l2_reg, inv_scale;
} adam_hyper;

gj_status gj_network_adam_step(gj_network_module *module, gj_stream stream, const gj_network_adam_desc *desc) {
    static const char call[] = "gj_network_adam_step";
    if (!module) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj__diag *diag = &module->ctx->diag;
    float scale = 0.0f;
    gj_status status =
        enter_step_call(module, desc ? desc->struct_size : 0, sizeof *desc, desc ? desc->loss_scale : 0.0f, !desc,
                        "not prepared by gj_network_adam_desc_init (struct_size)", call, &scale);
    if (status != GJ_OK) {
        return status;
    }
    const struct {
        const char *name;
        float value, lo, hi; /* lo < value < hi, or value == lo where lo_ok */
        int lo_ok;
    } checks[] = {{"learning_rate", desc->learning_rate, 0.0f, INFINITY, 1}, {"beta1", desc->beta1, 0.0f, 1.0f, 1},
                  {"beta2", desc->beta2, 0.0f, 1.0f, 1}, {"epsilon", desc->epsilon, 0.0f, INFINITY, 1},
                  {"l2_reg", desc->l2_reg, 0.0f, INFINITY, 1}};
    for (size_t i = 0; i < sizeof checks / sizeof *checks; ++i) {
        const float v = checks[i].value;
        if (!((v > checks[i].lo || (checks[i].lo_ok && v == checks[i].lo)) && v < checks[i].hi)) {
            return gj__fail(diag, GJ_ERROR_INVALID_ARGUMENT, "%s: %s = %g: must be at least %g and below %g", call,
                            checks[i].name, (double)v, (double)checks[i].lo, (double)checks[i].hi);
        }
    }
    const int model = module->net->encoding != NULL;
    const void *network_arrays[] = {desc->params, desc->params_fp32, desc->first_moments, desc->second_moments,
                                    desc->steps, desc->dL_dparams};
    const void *encoding_arrays[] = {desc->encoding_params, desc->encoding_params_fp32, desc->encoding_first_moments,
                                     desc->encoding_second_moments, desc->encoding_steps, desc->dL_dencoding_params};
    static const char *const names[] = {"params", "params_fp32", "first_moments", "second_moments", "steps",
                                        "dL_dparams"};
    static const char *const encoding_names[] = {"encoding_params",         "encoding_params_fp32",
                                                 "encoding_first_moments",  "encoding_second_moments",
                                                 "encoding_steps",          "dL_dencoding_params"};
    for (size_t i = 0; i < 6; ++i) {
        if (!network_arrays[i]) {
            return gj__fail(diag, GJ_ERROR_INVALID_ARGUMENT, "%s: %s must not be NULL", call, names[i]);
        }
        if (model != (encoding_arrays[i] != NULL)) {
            return gj__fail(diag, GJ_ERROR_INVALID_ARGUMENT, "%s: %s must %s", call, encoding_names[i],
                            model ? "not be NULL (a model)" : "be NULL: this network has no encoding");
        }
    }
    status = need_parts(module, step_parts, 1, call);
    if (status != GJ_OK) {
        return status;
    }
    uint64_t n_net = module->net->layout.n_params, n_enc = model ? module->net->encoding->layout.n_params : 0;
    void *p[12];
    for (size_t i = 0; i < 6; ++i) {
        p[i] = (void *)network_arrays[i];
        p[6 + i] = (void *)encoding_arrays[i];
    }
    adam_hyper h = {desc->learning_rate, desc->beta1, desc->beta2, desc->epsilon, desc->l2_reg, 1.0f / scale};
    void *args[] = {&n_net, &p[0], &p[1], &p[2], &p[3], &p[4], &p[5], &n_enc, &p[6], &p[7], &p[8], &p[9], &p[10], &p[11], &h};
    /* Four parameters a thread; a grid of many waves (a thread's next quad waits for its last). */
    const uint64_t quads = (n_net + 3) / 4 + (n_enc + 3) / 4, blocks = (quads + 255) / 256;
    gj_launch_config cfg;
    gj_launch_config_init(&cfg);
    cfg.block[0] = 256;
    cfg.grid[0] = (uint32_t)(blocks < 1 ? 1 : blocks < 65535 ? blocks : 65535);
    cfg.stream = stream;
    return gj_kernel_launch(module->kernels[K_ADAM], &cfg, args);
}

/* The encoding's parameters: uniform in [-1e-4, 1e-4] * scale, element i from the i-th draw
 * of pcg32(seed, 1) (what advancing the stream by i and drawing once gives). */
static gj_status init_encoding(gj_network_module *m, gj_stream stream, const gj_network_init_desc *desc) {
    const uint64_t n = m->net->encoding->layout.n_params;
    const size_t size = encoding_param_size(m);
    float *values = malloc(n * sizeof *values);
    void *converted = size == 2 ? malloc(n * 2) : NULL;
    if (!values || (size == 2 && !converted)) {
        free(values);
        free(converted);
        return gj__fail(&m->ctx->diag, GJ_ERROR_OUT_OF_MEMORY, "gj_network_init_params: out of memory");
    }
    gj__uniform_init_params(desc->seed, 1e-4f * desc->scale, values, n);
    gj_status status = GJ_OK;
    if (desc->encoding_params) {
        if (size == 2) {
            gj_floats_to_halves(values, converted, n);
        }
        status = gj_memcpy_async(m->ctx, desc->encoding_params, size == 2 ? converted : (void *)values, n * size,
                                 stream);
    }
    if (status == GJ_OK && desc->encoding_params_fp32) {
        status = gj_memcpy_async(m->ctx, desc->encoding_params_fp32, values, n * sizeof *values, stream);
    }
    free(values);
    free(converted);
    return status;
}

gj_status gj_network_init_params(gj_network_module *module, gj_stream stream, const gj_network_init_desc *desc) {
    static const char call[] = "gj_network_init_params";
    if (!module) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj__diag *diag = &module->ctx->diag;
    gj__diag_clear(diag);
    if (!desc || desc->struct_size != sizeof *desc) {
        return gj__fail(diag, GJ_ERROR_INVALID_ARGUMENT, "%s: desc is %s", call,
                        desc ? "not prepared by gj_network_init_desc_init (struct_size)" : "NULL");
    }
    if (!desc->params && !desc->params_fp32 && !desc->encoding_params && !desc->encoding_params_fp32) {
        return gj__fail(diag, GJ_ERROR_INVALID_ARGUMENT, "%s: params or params_fp32 must be given", call);
    }
    if (!module->net->encoding && (desc->encoding_params || desc->encoding_params_fp32)) {
        return gj__fail(diag, GJ_ERROR_INVALID_ARGUMENT, "%s: encoding_params are for a model; this network has no "
                        "encoding", call);
    }
    if (!desc->params && !desc->params_fp32) {
        return init_encoding(module, stream, desc);
    }
    const uint64_t n = module->net->layout.n_params;
    float *values = malloc(n * sizeof *values);
    uint16_t *halves = desc->params ? malloc(n * sizeof *halves) : NULL;
    if (!values || (desc->params && !halves)) {
        free(values);
        free(halves);
        return gj__fail(diag, GJ_ERROR_OUT_OF_MEMORY, "%s: out of memory", call);
    }
    gj__network_init_params(&module->net->layout, module->net->config.network.activation, desc->seed, desc->scale,
                            values);
    /* Pageable host memory: each copy has completed when it returns, so the buffers may go. */
    gj_status status = GJ_OK;
    if (desc->params) {
        gj_floats_to_halves(values, halves, n);
        status = gj_memcpy_async(module->ctx, desc->params, halves, n * sizeof *halves, stream);
    }
    if (status == GJ_OK && desc->params_fp32) {
        status = gj_memcpy_async(module->ctx, desc->params_fp32, values, n * sizeof *values, stream);
    }
    free(values);
    free(halves);
    if (status == GJ_OK && (desc->encoding_params || desc->encoding_params_fp32)) {
        status = init_encoding(module, stream, desc);
    }
    return status;
}
