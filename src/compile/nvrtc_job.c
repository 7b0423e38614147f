/* One NVRTC compilation (see nvrtc_job.h). */
#include "compile/nvrtc_job.h"

#include "base/clock.h"
#include "compile/log.h"
#include "compile/program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One compilation in flight: what it needs, and what it has made so far. */
typedef struct job {
    const gj__diag *ctx;
    const gj__nvrtc *nv;
    const gj__arch *arch;
    const gj__unit *unit;
    const char *const *options;
    size_t n_options;
    nvrtcProgram handle;
    char *log; /* NVRTC's log, as it gave it */
} job;

/* A failed NVRTC call other than the compilation itself. */
static gj_status nvrtc_fail(const job *j, nvrtcResult r, const char *call) {
    gj_status status = GJ_ERROR_INTERNAL;
    if (r == NVRTC_ERROR_OUT_OF_MEMORY) {
        status = GJ_ERROR_OUT_OF_MEMORY;
    } else if (r == NVRTC_ERROR_BUILTIN_OPERATION_FAILURE || r == NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID) {
        status = GJ_ERROR_COMPILE;
    }
    return gj__fail(j->ctx, status, "NVRTC %d.%d: %s failed for %s: %s", j->nv->major, j->nv->minor, call,
                    j->arch->name, j->nv->GetErrorString(r));
}

static gj_status fetch_log(job *j) {
    size_t size = 0;
    nvrtcResult r = j->nv->GetProgramLogSize(j->handle, &size);
    if (r != NVRTC_SUCCESS) {
        return nvrtc_fail(j, r, "nvrtcGetProgramLogSize");
    }
    j->log = calloc(size + 1, 1); /* +1: a NUL even if NVRTC's size left it out */
    if (!j->log) {
        return gj__fail(j->ctx, GJ_ERROR_OUT_OF_MEMORY, "compile: out of memory for a %zu-byte log", size);
    }
    r = j->nv->GetProgramLog(j->handle, j->log);
    return r == NVRTC_SUCCESS ? GJ_OK : nvrtc_fail(j, r, "nvrtcGetProgramLog");
}

/* NVRTC's headers argument: two parallel arrays. */
static gj_status header_arrays(const job *j, const char ***texts, const char ***names) {
    *texts = *names = NULL;
    const size_t n = j->unit->n_headers;
    if (n == 0) {
        return GJ_OK;
    }
    *texts = calloc(n, sizeof **texts);
    *names = calloc(n, sizeof **names);
    if (!*texts || !*names) {
        return gj__fail(j->ctx, GJ_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        (*texts)[i] = j->unit->headers[i].text;
        (*names)[i] = j->unit->headers[i].name;
    }
    return GJ_OK;
}

static gj_status create_and_compile(job *j, nvrtcResult *compiled) {
    const char **texts = NULL, **names = NULL;
    gj_status status = header_arrays(j, &texts, &names);
    nvrtcResult r = NVRTC_SUCCESS;
    if (status == GJ_OK) {
        r = j->nv->CreateProgram(&j->handle, j->unit->source, j->unit->file_name, (int)j->unit->n_headers, texts,
                                 names);
    }
    free(texts);
    free(names);
    if (status != GJ_OK) {
        return status;
    }
    if (r != NVRTC_SUCCESS) {
        j->handle = NULL;
        return nvrtc_fail(j, r, "nvrtcCreateProgram");
    }
    for (size_t i = 0; i < j->unit->n_names; i++) {
        r = j->nv->AddNameExpression(j->handle, j->unit->names[i]);
        if (r != NVRTC_SUCCESS) {
            return nvrtc_fail(j, r, "nvrtcAddNameExpression");
        }
    }
    *compiled = j->nv->CompileProgram(j->handle, (int)j->n_options, j->options);
    return fetch_log(j);
}

/* A program holding the annotated log, the source and the arch; no binary yet. */
static gj_status new_program(const job *j, gj_program **out) {
    gj_program *prog = gj__program_new();
    *out = prog;
    if (!prog) {
        return gj__fail(j->ctx, GJ_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    }
    snprintf(prog->arch, sizeof prog->arch, "%s", j->arch->name);
    free(prog->log);
    free(prog->source);
    prog->log = gj__annotate_log(j->log, j->unit->source, j->unit->file_name);
    prog->source = strdup(j->unit->source);
    if (!prog->log || !prog->source) {
        return gj__fail(j->ctx, GJ_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    }
    return GJ_OK;
}

/* The cubin, or the PTX with its terminating NUL. */
static gj_status fetch_binary(const job *j, gj_program *prog) {
    int ptx = j->arch->kind == GJ_BINARY_PTX;
    size_t size = 0;
    nvrtcResult r = ptx ? j->nv->GetPTXSize(j->handle, &size) : j->nv->GetCUBINSize(j->handle, &size);
    if (r != NVRTC_SUCCESS) {
        return nvrtc_fail(j, r, ptx ? "nvrtcGetPTXSize" : "nvrtcGetCUBINSize");
    }
    char *binary = calloc(size + 1, 1);
    if (!binary) {
        return gj__fail(j->ctx, GJ_ERROR_OUT_OF_MEMORY, "compile: out of memory for a %zu-byte binary", size);
    }
    prog->binary = binary;
    r = ptx ? j->nv->GetPTX(j->handle, binary) : j->nv->GetCUBIN(j->handle, binary);
    if (r != NVRTC_SUCCESS) {
        return nvrtc_fail(j, r, ptx ? "nvrtcGetPTX" : "nvrtcGetCUBIN");
    }
    if (size == 0) {
        return gj__fail(j->ctx, GJ_ERROR_INTERNAL, "NVRTC returned an empty binary for %s", j->arch->name);
    }
    /* NVRTC's PTX size already counts the NUL; strlen + 1 holds either way. */
    prog->binary_size = ptx ? strlen(binary) + 1 : size;
    prog->kind = j->arch->kind;
    return GJ_OK;
}

/* Copies the name expressions and their lowered names: NVRTC's strings die with
 * its program. */
static gj_status fetch_names(const job *j, gj_program *prog) {
    if (j->unit->n_names == 0) {
        return GJ_OK;
    }
    prog->kernel_names = calloc(j->unit->n_names, sizeof *prog->kernel_names);
    prog->lowered_names = calloc(j->unit->n_names, sizeof *prog->lowered_names);
    if (!prog->kernel_names || !prog->lowered_names) {
        return gj__fail(j->ctx, GJ_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    }
    prog->n_kernels = j->unit->n_names;
    for (size_t i = 0; i < j->unit->n_names; i++) {
        const char *lowered = NULL;
        nvrtcResult r = j->nv->GetLoweredName(j->handle, j->unit->names[i], &lowered);
        if (r != NVRTC_SUCCESS) {
            return nvrtc_fail(j, r, "nvrtcGetLoweredName");
        }
        prog->kernel_names[i] = strdup(j->unit->names[i]);
        prog->lowered_names[i] = strdup(lowered);
        if (!prog->kernel_names[i] || !prog->lowered_names[i]) {
            return gj__fail(j->ctx, GJ_ERROR_OUT_OF_MEMORY, "compile: out of memory");
        }
    }
    return GJ_OK;
}

/* NVRTC refused the options: with ours fixed, that means the architecture (e.g. an
 * "a" variant that this NVRTC does not have). */
static int rejected_options(nvrtcResult compiled, const char *log) {
    return compiled == NVRTC_ERROR_INVALID_OPTION || (compiled == NVRTC_ERROR_COMPILATION && gj__log_rejects_options(log));
}

static gj_status compilation_failed(const job *j, gj_program **out) {
    gj_status status = new_program(j, out);
    if (status != GJ_OK) {
        return status;
    }
    const char *first;
    size_t first_len;
    size_t errors = gj__log_errors(j->log, &first, &first_len);
    return gj__fail(j->ctx, GJ_ERROR_COMPILE, "compilation for %s failed: %zu error%s; first: %.*s", j->arch->name,
                    errors, errors == 1 ? "" : "s", (int)(first_len > 1024 ? 1024 : first_len), first);
}

static gj_status compilation_succeeded(const job *j, gj_program **out) {
    gj_status status = new_program(j, out);
    if (status == GJ_OK) {
        status = fetch_binary(j, *out);
    }
    if (status == GJ_OK) {
        status = fetch_names(j, *out);
    }
    if (status == GJ_OK && j->log[0]) {
        gj__log(j->ctx, GJ_LOG_DEBUG, "NVRTC log for %s:\n%s", j->arch->name, j->log);
    }
    return status;
}

/* Runs the NVRTC program through to a gj_program. */
static gj_status run(job *j, gj_program **out) {
    nvrtcResult compiled = NVRTC_SUCCESS;
    gj_status status = create_and_compile(j, &compiled);
    if (status != GJ_OK) {
        return status;
    }
    if (rejected_options(compiled, j->log)) {
        const char *first;
        size_t first_len;
        gj__log_errors(j->log, &first, &first_len);
        return gj__fail(j->ctx, GJ_ERROR_UNSUPPORTED_ARCH, "arch: NVRTC %d.%d does not accept %s (%.*s)", j->nv->major,
                        j->nv->minor, j->arch->name, (int)first_len, first);
    }
    if (compiled == NVRTC_ERROR_COMPILATION) {
        return compilation_failed(j, out);
    }
    if (compiled != NVRTC_SUCCESS) {
        return nvrtc_fail(j, compiled, "nvrtcCompileProgram");
    }
    return compilation_succeeded(j, out);
}

gj_status gj__nvrtc_check_arch(const gj__diag *d, const gj__nvrtc *nv, const gj__arch *arch) {
    if (gj__nvrtc_supports(nv, arch->sm)) {
        return GJ_OK;
    }
    char *supported = gj__nvrtc_archs_text(nv);
    gj__fail(d, GJ_ERROR_UNSUPPORTED_ARCH, "arch: NVRTC %d.%d does not support %s (supported: %s)", nv->major,
             nv->minor, arch->name, supported ? supported : "?");
    free(supported);
    return GJ_ERROR_UNSUPPORTED_ARCH;
}

gj_status gj__nvrtc_compile(const gj__diag *d, const gj__nvrtc *nv, const gj__unit *u, const gj__arch *arch,
                            const char *const *options, size_t n_options, gj_program **out) {
    *out = NULL;
    job j = {d, nv, arch, u, options, n_options, NULL, NULL};
    const double start = gj__now_ms();
    gj_status status = run(&j, out);
    if (j.handle) {
        nv->DestroyProgram(&j.handle);
    }
    free(j.log);
    if (*out) {
        (*out)->compile_ms = gj__now_ms() - start;
    }
    if (status != GJ_OK && status != GJ_ERROR_COMPILE) { /* only a compile error hands back a program */
        gj_program_destroy(*out);
        *out = NULL;
    }
    return status;
}
