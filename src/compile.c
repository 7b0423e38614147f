/* NVRTC compilation of generated (or arbitrary) CUDA source into a gj_program. */
#include "compile.h"
#include "cache.h"
#include "codegen.h"
#include "encoding.h"
#include "nvrtc_loader.h"
#include "strbuf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ARCH_FORMS                                                                                              \
    "sm_XX, sm_XXa or sm_XXf (cubin) or compute_XX, compute_XXa or compute_XXf (PTX), XX being two or three " \
    "digits, e.g. sm_90a"

/* ------------------------------------------------------------ architecture */

static gj_status malformed_arch(gj_context *ctx, const char *text) {
    return gj__fail(ctx, GJ_ERROR_UNSUPPORTED_ARCH, "arch: expected " ARCH_FORMS " (got \"%.64s\")", text);
}

/* The rest of text after prefix, or NULL when text does not start with it. */
static const char *after_prefix(const char *text, const char *prefix) {
    size_t n = strlen(prefix);
    return strncmp(text, prefix, n) == 0 ? text + n : NULL;
}

gj_status gj__arch_parse(gj_context *ctx, const char *text, gj__arch *out) {
    if (!text || !out) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "arch: must not be NULL (expected " ARCH_FORMS ")");
    }
    gj__arch arch = {0};
    const char *p = after_prefix(text, "sm_");
    arch.kind = GJ_BINARY_CUBIN;
    if (!p) {
        p = after_prefix(text, "compute_");
        arch.kind = GJ_BINARY_PTX;
    }
    if (!p || p[0] == '0') {
        return malformed_arch(ctx, text);
    }
    size_t digits = 0;
    while (digits < 4 && isdigit((unsigned char)p[digits])) {
        arch.sm = arch.sm * 10 + (p[digits] - '0');
        digits++;
    }
    p += digits;
    if (*p == 'a' || *p == 'f') {
        arch.suffix = *p++;
    }
    if (digits < 2 || digits > 3 || *p != '\0') {
        return malformed_arch(ctx, text);
    }
    snprintf(arch.name, sizeof arch.name, "%s", text); /* at most "compute_999a" */
    *out = arch;
    return GJ_OK;
}

/* ----------------------------------------------------------------- options */

/*
 * Every NVRTC option gridjit passes, after --gpu-architecture. Deliberately absent:
 * --use_fast_math (approximate division, sqrt and flushed denormals would move the
 * results away from the double-precision reference the tests compare against).
 */
static const char *const fixed_options[] = {
    /* The templates use C++17; stated so that another NVRTC's default dialect cannot
     * change what the source means. */
    "-std=c++17",
    /* Contract a*b+c into FMA: NVRTC's default, pinned because it changes results in
     * the last bits (and tiny-cuda-nn compiles with it too). */
    "--fmad=true",
    /* Lets NVVM merge neighbouring feature loads and stores into vector accesses;
     * affects speed only. */
    "--extra-device-vectorization",
    /* Source line tables for Nsight Compute and cuda-gdb; the code is unchanged. */
    "-lineinfo",
    /* Unannotated helper functions in the templates are device functions. */
    "--device-as-default-execution-space",
};

size_t gj__compile_options(const gj__arch *arch, const char **options, size_t max, char *buffer, size_t buffer_size) {
    size_t n_fixed = sizeof fixed_options / sizeof fixed_options[0];
    if (max < n_fixed + 2) { /* the architecture, the fixed ones, the NULL */
        return 0;
    }
    int length = snprintf(buffer, buffer_size, "--gpu-architecture=%s", arch->name);
    if (length < 0 || (size_t)length >= buffer_size) {
        return 0;
    }
    options[0] = buffer;
    for (size_t i = 0; i < n_fixed; i++) {
        options[i + 1] = fixed_options[i];
    }
    options[n_fixed + 1] = NULL;
    return n_fixed + 1;
}

void gj__append_compile_options(gj__strbuf *sb, const char *arch_name, const char *prefix) {
    gj__arch arch = {.kind = GJ_BINARY_CUBIN};
    snprintf(arch.name, sizeof arch.name, "%s", arch_name);
    const char *options[GJ__MAX_COMPILE_OPTIONS];
    char buffer[GJ__COMPILE_OPTIONS_BUFFER];
    const size_t n = gj__compile_options(&arch, options, GJ__MAX_COMPILE_OPTIONS, buffer, sizeof buffer);
    if (n == 0) {
        sb->failed = 1;
    }
    for (size_t i = 0; i < n; i++) {
        gj__sb_printf(sb, "%s%s\n", prefix, options[i]);
    }
}

char *gj_compile_options_string(const char *arch) {
    gj__arch parsed;
    if (gj__arch_parse(NULL, arch, &parsed) != GJ_OK) {
        return NULL;
    }
    gj__strbuf sb;
    gj__sb_init(&sb);
    gj__append_compile_options(&sb, parsed.name, "");
    return gj__sb_take(&sb);
}

/* ------------------------------------------------------------ log parsing */

/* One diagnostic header, "FILE(LINE): KIND: text", e.g.
 * gridjit.cu(12): error: identifier "x" is undefined
 * gridjit.cu(3): warning #177-D: variable "q" was declared but never referenced */
typedef struct diagnostic {
    int ours;           /* FILE is GJ__PROGRAM_NAME */
    unsigned long line; /* LINE */
    int is_error;       /* KIND mentions "error" ("error", "catastrophic error", ...) */
} diagnostic;

static int parse_diagnostic(const char *text, size_t len, diagnostic *out) {
    const char *open = memchr(text, '(', len);
    if (!open || open == text || isspace((unsigned char)text[0])) { /* indented: NVRTC's echo of the source */
        return 0;
    }
    const char *p = open + 1;
    const char *end = text + len;
    unsigned long line = 0;
    while (p < end && isdigit((unsigned char)*p)) {
        line = line * 10 + (unsigned long)(*p++ - '0');
    }
    if (p == open + 1 || end - p < 3 || memcmp(p, "): ", 3) != 0) {
        return 0;
    }
    const char *kind = p + 3;
    const char *colon = memchr(kind, ':', (size_t)(end - kind));
    if (!colon) {
        return 0;
    }
    size_t name_len = (size_t)(open - text);
    out->ours = name_len == strlen(GJ__PROGRAM_NAME) && memcmp(text, GJ__PROGRAM_NAME, name_len) == 0;
    out->line = line;
    out->is_error = 0;
    for (const char *k = kind; k + 5 <= colon; k++) {
        out->is_error |= memcmp(k, "error", 5) == 0;
    }
    return 1;
}

/* Errors that NVRTC reports without a file position (bad options). */
static int is_global_error(const char *text, size_t len) {
    static const char *const prefixes[] = {"Command-line error", "nvrtc: error"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t n = strlen(prefixes[i]);
        if (len >= n && memcmp(text, prefixes[i], n) == 0) {
            return 1;
        }
    }
    return 0;
}

static int is_error_line(const char *text, size_t len) {
    diagnostic d;
    return is_global_error(text, len) || (parse_diagnostic(text, len, &d) && d.is_error);
}

/* Length of the line at text, without its '\n'. */
static size_t line_length(const char *text) {
    const char *nl = strchr(text, '\n');
    return nl ? (size_t)(nl - text) : strlen(text);
}

/* The number of error lines in log; first and first_len: the first of them. */
static size_t count_errors(const char *log, const char **first, size_t *first_len) {
    size_t count = 0;
    *first = NULL;
    *first_len = 0;
    for (const char *p = log; *p;) {
        size_t len = line_length(p);
        if (is_error_line(p, len) && count++ == 0) {
            *first = p;
            *first_len = len;
        }
        p += len + (p[len] == '\n');
    }
    return count;
}

/* ------------------------------------------------------------ annotation */

/* Appends source lines first..last (1-based, clipped to the source), marking mark. */
static void append_source_lines(gj__strbuf *sb, const char *source, unsigned long mark) {
    unsigned long first = mark > GJ__LOG_CONTEXT_LINES ? mark - GJ__LOG_CONTEXT_LINES : 1;
    unsigned long last = mark + GJ__LOG_CONTEXT_LINES;
    unsigned long number = 1;
    for (const char *p = source; *p && number <= last; number++) {
        size_t len = line_length(p);
        if (number >= first) {
            size_t shown = len > 0 && p[len - 1] == '\r' ? len - 1 : len;
            gj__sb_printf(sb, "%s%6lu | %.*s\n", number == mark ? "  >" : "   ", number, (int)shown, p);
        }
        p += len + (p[len] == '\n');
    }
}

/* Lines in text; a last line without '\n' counts, the empty rest after one does not. */
static unsigned long count_lines(const char *text) {
    unsigned long n = 0;
    for (const char *p = text; *p; n++) {
        size_t len = line_length(p);
        p += len + (p[len] == '\n');
    }
    return n;
}

/* Context for a diagnostic, closing its block (NVRTC's own echo of the line and the
 * caret). Only for lines that exist in our translation unit. */
static void append_context(gj__strbuf *sb, const char *source, unsigned long line) {
    if (line == 0 || line > count_lines(source)) {
        return;
    }
    if (sb->len && sb->data[sb->len - 1] != '\n') {
        gj__sb_append(sb, "\n");
    }
    gj__sb_append(sb, "  source:\n");
    append_source_lines(sb, source, line);
}

char *gj__annotate_log(const char *log, const char *source) {
    log = log ? log : "";
    source = source ? source : "";
    gj__strbuf sb;
    gj__sb_init(&sb);
    unsigned long pending = 0; /* line of the diagnostic whose block is open, 0: none */
    for (const char *p = log; *p;) {
        size_t len = line_length(p);
        diagnostic d;
        int header = parse_diagnostic(p, len, &d);
        if (pending && (header || len == 0)) { /* the previous block ends here */
            append_context(&sb, source, pending);
            pending = 0;
        }
        if (header && d.ours) {
            pending = d.line;
        }
        gj__sb_append_n(&sb, p, len + (p[len] == '\n'));
        p += len + (p[len] == '\n');
    }
    if (pending) {
        append_context(&sb, source, pending);
    }
    return gj__sb_take(&sb);
}

/* ------------------------------------------------------------ programs */

static char *copy_string(const char *text) {
    size_t n = strlen(text) + 1;
    char *copy = malloc(n);
    if (copy) {
        memcpy(copy, text, n);
    }
    return copy;
}

struct gj_program *gj__program_new(void) {
    struct gj_program *prog = calloc(1, sizeof *prog);
    if (prog && !(prog->log = copy_string(""))) {
        free(prog);
        return NULL;
    }
    return prog;
}

static void free_names(char **names, size_t n) {
    for (size_t i = 0; names && i < n; i++) {
        free(names[i]);
    }
    free(names);
}

void gj_program_destroy(gj_program *prog) {
    if (!prog) {
        return;
    }
    free(prog->binary);
    free_names(prog->kernel_names, prog->n_kernels);
    free_names(prog->lowered_names, prog->n_kernels);
    free(prog->log);
    free(prog->source);
    free(prog);
}

gj_binary_kind gj_program_kind(const gj_program *prog) {
    return prog ? prog->kind : GJ_BINARY_NONE;
}

const void *gj_program_binary(const gj_program *prog, size_t *size) {
    if (size) {
        *size = prog ? prog->binary_size : 0;
    }
    return prog ? prog->binary : NULL;
}

const char *gj_program_arch(const gj_program *prog) {
    return prog ? prog->arch : NULL;
}

size_t gj_program_n_kernels(const gj_program *prog) {
    return prog ? prog->n_kernels : 0;
}

const char *gj_program_kernel_name(const gj_program *prog, size_t i) {
    return prog && i < prog->n_kernels ? prog->kernel_names[i] : NULL;
}

const char *gj_program_lowered_name(const gj_program *prog, size_t i) {
    return prog && i < prog->n_kernels ? prog->lowered_names[i] : NULL;
}

const char *gj_program_log(const gj_program *prog) {
    return prog ? prog->log : NULL;
}

const char *gj_program_source(const gj_program *prog) {
    return prog ? prog->source : NULL;
}

double gj_program_compile_ms(const gj_program *prog) {
    return prog ? prog->compile_ms : 0.0;
}

/* ------------------------------------------------------------ NVRTC calls */

/* One compilation in flight: what it needs, and what it has made so far. */
typedef struct job {
    gj_context *ctx;
    gj__nvrtc *nv;
    const gj__arch *arch;
    const char *source;
    const char *const *names;
    size_t n_names;
    nvrtcProgram handle;
    char *log; /* NVRTC's log, as it gave it */
} job;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

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

static gj_status create_and_compile(job *j, nvrtcResult *compiled) {
    nvrtcResult r = j->nv->CreateProgram(&j->handle, j->source, GJ__PROGRAM_NAME, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        j->handle = NULL;
        return nvrtc_fail(j, r, "nvrtcCreateProgram");
    }
    for (size_t i = 0; i < j->n_names; i++) {
        r = j->nv->AddNameExpression(j->handle, j->names[i]);
        if (r != NVRTC_SUCCESS) {
            return nvrtc_fail(j, r, "nvrtcAddNameExpression");
        }
    }
    const char *options[GJ__MAX_COMPILE_OPTIONS];
    char buffer[GJ__COMPILE_OPTIONS_BUFFER];
    size_t n = gj__compile_options(j->arch, options, GJ__MAX_COMPILE_OPTIONS, buffer, sizeof buffer);
    if (n == 0) {
        return gj__fail(j->ctx, GJ_ERROR_INTERNAL, "compile: no room for the options of %s", j->arch->name);
    }
    *compiled = j->nv->CompileProgram(j->handle, (int)n, options);
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
    prog->log = gj__annotate_log(j->log, j->source);
    prog->source = copy_string(j->source);
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
    if (j->n_names == 0) {
        return GJ_OK;
    }
    prog->kernel_names = calloc(j->n_names, sizeof *prog->kernel_names);
    prog->lowered_names = calloc(j->n_names, sizeof *prog->lowered_names);
    if (!prog->kernel_names || !prog->lowered_names) {
        return gj__fail(j->ctx, GJ_ERROR_OUT_OF_MEMORY, "compile: out of memory");
    }
    prog->n_kernels = j->n_names;
    for (size_t i = 0; i < j->n_names; i++) {
        const char *lowered = NULL;
        nvrtcResult r = j->nv->GetLoweredName(j->handle, j->names[i], &lowered);
        if (r != NVRTC_SUCCESS) {
            return nvrtc_fail(j, r, "nvrtcGetLoweredName");
        }
        prog->kernel_names[i] = copy_string(j->names[i]);
        prog->lowered_names[i] = copy_string(lowered);
        if (!prog->kernel_names[i] || !prog->lowered_names[i]) {
            return gj__fail(j->ctx, GJ_ERROR_OUT_OF_MEMORY, "compile: out of memory");
        }
    }
    return GJ_OK;
}

/* NVRTC refused the options: with ours fixed, that means the architecture (e.g. an
 * "a" variant that this NVRTC does not have). */
static int rejected_options(nvrtcResult compiled, const char *log) {
    return compiled == NVRTC_ERROR_INVALID_OPTION ||
           (compiled == NVRTC_ERROR_COMPILATION && is_global_error(log, line_length(log)));
}

static gj_status compilation_failed(const job *j, gj_program **out) {
    gj_status status = new_program(j, out);
    if (status != GJ_OK) {
        return status;
    }
    const char *first;
    size_t first_len;
    size_t errors = count_errors(j->log, &first, &first_len);
    if (!first) { /* no line we recognise as an error: show the first line of the log */
        first = j->log;
        first_len = line_length(j->log);
    }
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
        return gj__fail(j->ctx, GJ_ERROR_UNSUPPORTED_ARCH, "arch: NVRTC %d.%d does not accept %s (%.*s)", j->nv->major,
                        j->nv->minor, j->arch->name, (int)line_length(j->log), j->log);
    }
    if (compiled == NVRTC_ERROR_COMPILATION) {
        return compilation_failed(j, out);
    }
    if (compiled != NVRTC_SUCCESS) {
        return nvrtc_fail(j, compiled, "nvrtcCompileProgram");
    }
    return compilation_succeeded(j, out);
}

static gj_status check_supported(gj_context *ctx, const gj__nvrtc *nv, const gj__arch *arch) {
    if (gj__nvrtc_supports(nv, arch->sm)) {
        return GJ_OK;
    }
    gj__strbuf sb;
    gj__sb_init(&sb);
    for (int i = 0; i < nv->n_archs; i++) {
        gj__sb_printf(&sb, "%ssm_%d", i ? " " : "", nv->archs[i]);
    }
    gj__fail(ctx, GJ_ERROR_UNSUPPORTED_ARCH, "arch: NVRTC %d.%d does not support %s (supported: %s)", nv->major,
             nv->minor, arch->name, sb.data && !sb.failed ? sb.data : "?");
    gj__sb_free(&sb);
    return GJ_ERROR_UNSUPPORTED_ARCH;
}

static gj_status check_arguments(gj_context *ctx, const char *source, const char *const *names, size_t n_names,
                                 gj_program **out) {
    if (!ctx || !source || !out) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "gj_compile_source: ctx, source and out must not be NULL");
    }
    if (n_names && !names) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "gj_compile_source: name_expressions is NULL (count %zu)",
                        n_names);
    }
    for (size_t i = 0; i < n_names; i++) {
        if (!names[i] || !names[i][0]) {
            return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "gj_compile_source: name_expressions[%zu] is %s", i,
                            names[i] ? "empty" : "NULL");
        }
    }
    return GJ_OK;
}

gj_status gj_compile_source(gj_context *ctx, const char *source, const char *const *name_expressions,
                            size_t n_name_expressions, const char *arch, gj_program **out) {
    if (out) {
        *out = NULL;
    }
    gj_status status = check_arguments(ctx, source, name_expressions, n_name_expressions, out);
    gj__arch parsed;
    if (status == GJ_OK) {
        status = gj__arch_parse(ctx, arch, &parsed);
    }
    gj__nvrtc *nv = NULL;
    if (status == GJ_OK) {
        status = gj__nvrtc_get(ctx, &nv);
    }
    if (status == GJ_OK) {
        status = check_supported(ctx, nv, &parsed);
    }
    if (status != GJ_OK) {
        return status;
    }
    job j = {ctx, nv, &parsed, source, name_expressions, n_name_expressions, NULL, NULL};
    double start = now_ms();
    status = run(&j, out);
    if (j.handle) {
        nv->DestroyProgram(&j.handle);
    }
    free(j.log);
    if (*out) {
        (*out)->compile_ms = now_ms() - start;
    }
    if (status != GJ_OK && status != GJ_ERROR_COMPILE) { /* only a compile error hands back a program */
        gj_program_destroy(*out);
        *out = NULL;
    }
    return status;
}

/* ------------------------------------------------------------ encodings */

/* What the disk cache's compile callback needs to run NVRTC on the generated source. */
typedef struct generated {
    const char *source;
    const char *const *names;
    size_t n_names;
    const char *arch;
} generated;

/* Generated source to program, always through NVRTC (the cache calls it on a miss). */
static gj_status compile_uncached(gj_context *ctx, void *arg, gj_program **out) {
    const generated *g = arg;
    return gj_compile_source(ctx, g->source, g->names, g->n_names, g->arch, out);
}

/* Generates the source and kernel list, then goes through the disk cache (cache.h). */
static gj_status compile_cached(gj_context *ctx, const gj_encoding *enc, const gj_codegen_options *opts,
                                const gj__arch *arch, gj_program **out) {
    char *source = gj__codegen(enc, opts);
    if (!source) {
        return gj__fail(ctx, GJ_ERROR_OUT_OF_MEMORY, "gj_compile: out of memory generating source");
    }
    size_t n_names = 0;
    char **names = gj__codegen_kernel_names(&enc->config, opts, &n_names);
    if (!names && n_names) {
        free(source);
        return gj__fail(ctx, GJ_ERROR_OUT_OF_MEMORY, "gj_compile: out of memory listing kernels");
    }
    generated g = {source, (const char *const *)names, n_names, arch->name};
    gj_status status = gj__cache_compile_generated(ctx, enc, opts, arch, source, g.names, n_names, compile_uncached,
                                                   &g, out);
    gj__free_string_list(names, n_names);
    free(source);
    return status;
}

gj_status gj_compile(gj_context *ctx, const gj_encoding *enc, const gj_codegen_options *opts, const char *arch,
                     gj_program **out) {
    if (out) {
        *out = NULL;
    }
    if (!ctx || !enc || !out) {
        return gj__fail(ctx, GJ_ERROR_INVALID_ARGUMENT, "gj_compile: ctx, enc and out must not be NULL");
    }
    gj__arch parsed; /* fail on a malformed arch before generating anything */
    gj_status status = gj__arch_parse(ctx, arch, &parsed);
    if (status != GJ_OK) {
        return status;
    }
    gj_codegen_options resolved; /* NULL opts: the defaults */
    status = gj__codegen_options_resolve(ctx, opts, &resolved);
    if (status != GJ_OK) {
        return status;
    }
    return compile_cached(ctx, enc, &resolved, &parsed, out);
}
