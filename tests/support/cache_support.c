/* Helpers for the disk-cache tests; see cache_support.h. */
#include "cache_support.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    chmod(path, 0700); /* a test may have left it unreadable */
    remove(path);
    return 0;
}

void gjt_remove_tree(const char *path) {
    nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static char *base_dir(void) {
    static char base[1024];
    if (!base[0]) {
        const char *env = getenv("GRIDJIT_TEST_TMP");
        if (env && *env) {
            snprintf(base, sizeof base, "%s", env);
        } else {
            snprintf(base, sizeof base, "/tmp/gridjit-test-%ld", (long)getpid());
        }
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "mkdir -p '%s'", base);
        if (system(cmd) != 0) {
            fprintf(stderr, "cannot create %s\n", base);
        }
        chmod(base, 0700);
    }
    return base;
}

char *gjt_scratch(const char *name) {
    char *path = malloc(2048);
    snprintf(path, 2048, "%s/%s", base_dir(), name);
    gjt_remove_tree(path);
    if (mkdir(path, 0700) != 0) {
        fprintf(stderr, "mkdir %s: %s\n", path, strerror(errno));
    }
    chmod(path, 0700);
    return path;
}

void gjt_request_init(gjt_request *r, int variant, const char *target, gj_binary_kind kind) {
    memset(r, 0, sizeof *r);
    snprintf(r->source, sizeof r->source,
             "// generated for a test, variant %d\nextern \"C\" __global__ void k0() {}\n"
             "extern \"C\" __global__ void k1() {}\n",
             variant);
    r->names[0] = "&k0";
    r->names[1] = "&k1";
    r->options[0] = "--std=c++17";
    r->options[1] = kind == GJ_BINARY_PTX ? "--gpu-architecture=compute_80" : "--gpu-architecture=sm_80";
    r->nvrtc.major = 13;
    r->nvrtc.minor = 0;
    snprintf(r->nvrtc.build, sizeof r->nvrtc.build, "gnu-build-id:0123456789abcdef");
    r->req.source = r->source;
    r->req.source_size = strlen(r->source);
    r->req.names = r->names;
    r->req.n_names = 2;
    r->req.target = target;
    r->req.kind = kind;
    r->req.options = r->options;
    r->req.n_options = 2;
    r->req.nvrtc = &r->nvrtc;
    r->req.config_json = "{\"otype\":\"HashGrid\",\"n_levels\":16}";
    r->req.n_dims = 3;
}

uint8_t *gjt_expected_binary(const gjt_request *r, size_t size) {
    uint8_t *bytes = malloc(size ? size : 1);
    uint32_t x = 2166136261u;
    for (const char *p = r->source; *p; p++) {
        x = (x ^ (uint8_t)*p) * 16777619u;
    }
    for (size_t i = 0; i < size; i++) {
        x = x * 1664525u + 1013904223u;
        bytes[i] = (uint8_t)(x >> 24);
    }
    return bytes;
}

gj_status gjt_compile(gj_context *ctx, void *arg, gj_program **out) {
    (void)ctx;
    gjt_compiler *c = arg;
    c->calls++;
    if (c->fail_with != GJ_OK) {
        return c->fail_with;
    }
    gj_program *prog = gj__program_new();
    prog->kind = c->request->req.kind;
    snprintf(prog->arch, sizeof prog->arch, "%s", c->request->req.target);
    prog->binary = gjt_expected_binary(c->request, c->payload_size);
    prog->binary_size = c->payload_size;
    prog->n_kernels = 2;
    prog->kernel_names = calloc(2, sizeof(char *));
    prog->lowered_names = calloc(2, sizeof(char *));
    for (int i = 0; i < 2; i++) {
        prog->kernel_names[i] = strdup(c->request->names[i]);
        prog->lowered_names[i] = strdup(i ? "k1" : "k0");
    }
    prog->source = strdup(c->request->source);
    prog->compile_ms = 1.0;
    *out = prog;
    return GJ_OK;
}

void gjt_log(void *user, gj_log_level level, const char *message) {
    gjt_log_capture *capture = user;
    if (level >= GJ_LOG_WARNING) {
        capture->warnings++;
        snprintf(capture->last, sizeof capture->last, "%s", message);
    } else if (level == GJ_LOG_INFO) {
        capture->infos++;
    }
}

gj_context *gjt_context(const char *dir, gjt_log_capture *capture) {
    gj_context *ctx = NULL;
    gj_context_create(&ctx);
    gj_context_set_cache_dir(ctx, dir);
    gj_context_set_cache_path(ctx, "");
    gj_context_set_cache_enabled(ctx, 1);
    if (capture) {
        memset(capture, 0, sizeof *capture);
        gj_context_set_log(ctx, gjt_log, capture);
    }
    return ctx;
}

static const char *match_suffix, *match_prefix;
static size_t match_count;
static char *match_path;

static int count_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    if (flag != FTW_F) {
        return 0;
    }
    const char *name = path + ftw->base;
    size_t n = strlen(name);
    int ok = match_suffix ? (n >= strlen(match_suffix) && strcmp(name + n - strlen(match_suffix), match_suffix) == 0)
                          : strncmp(name, match_prefix, strlen(match_prefix)) == 0;
    if (ok) {
        match_count++;
        free(match_path);
        match_path = strdup(path);
    }
    return 0;
}

static size_t count(const char *dir, const char *suffix, const char *prefix) {
    match_suffix = suffix;
    match_prefix = prefix;
    match_count = 0;
    free(match_path);
    match_path = NULL;
    nftw(dir, count_one, 16, FTW_PHYS);
    return match_count;
}

size_t gjt_count_suffix(const char *dir, const char *suffix) {
    return count(dir, suffix, NULL);
}

size_t gjt_count_prefix(const char *dir, const char *prefix) {
    return count(dir, NULL, prefix);
}

char *gjt_only_file(const char *dir, const char *suffix) {
    if (count(dir, suffix, NULL) != 1) {
        return NULL;
    }
    char *path = match_path;
    match_path = NULL;
    return path;
}

uint8_t *gjt_read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        *size = 0;
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc(n > 0 ? (size_t)n : 1);
    *size = fread(data, 1, (size_t)n, f);
    fclose(f);
    return data;
}

void gjt_write_file(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, size, f);
        fclose(f);
    }
}
