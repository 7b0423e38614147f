/* Helpers for the disk-cache tests; see cache_support.h. */
#include "cache_support.h"

#include "compile/meta.h"
#include "compile/program.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

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

void gjt_log(void *user, gj_log_level level, const char *message) {
    gjt_log_capture *capture = user;
    if (level >= GJ_LOG_WARNING) {
        capture->warnings++;
        snprintf(capture->last, sizeof capture->last, "%s", message);
    } else if (level == GJ_LOG_INFO) {
        capture->infos++;
        snprintf(capture->last_info, sizeof capture->last_info, "%s", message);
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

int gjt_age(const char *path, int seconds_ago) {
    const time_t when = time(NULL) - seconds_ago;
    struct timespec t[2] = {{.tv_sec = when}, {.tv_sec = when}};
    return utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW);
}

uint64_t gjt_file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : UINT64_MAX;
}

/* ------------------------------------------------------------------ blobs */

/* A 128-bit key from a text: the same digest the library uses for its keys. */
static void key_of_text(const char *text, gj__store_key *key, char hex[33]) {
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits(text, strlen(text)));
    memcpy(key->bytes, canonical.digest, 16);
    gj__store_key_hex(key, hex);
}

/* Program metadata of a made-up cubin whose lowered names carry the variant. */
static uint8_t *made_up_meta(int variant, size_t *size) {
    gj_program *prog = gj__program_new();
    if (!prog) {
        return NULL;
    }
    prog->kind = GJ_BINARY_CUBIN;
    snprintf(prog->arch, sizeof prog->arch, "%s", GJT_BLOB_TARGET);
    prog->n_kernels = 2;
    prog->kernel_names = calloc(2, sizeof(char *));
    prog->lowered_names = calloc(2, sizeof(char *));
    for (int i = 0; prog->kernel_names && prog->lowered_names && i < 2; i++) {
        char lowered[32];
        snprintf(lowered, sizeof lowered, "_Z2k%dv_%d", i, variant);
        prog->kernel_names[i] = strdup(i ? "&k1" : "&k0");
        prog->lowered_names[i] = strdup(lowered);
    }
    const gj__nvrtc_identity nvrtc = {.major = 13, .minor = 0, .build = "gnu-build-id:0123456789abcdef"};
    uint8_t *meta = prog->kernel_names && prog->lowered_names ? gj__meta_encode(prog, &nvrtc, size) : NULL;
    gj_program_destroy(prog);
    return meta;
}

void gjt_blob_init(gjt_blob *b, int variant, size_t payload_size) {
    memset(b, 0, sizeof *b);
    b->variant = variant;
    char text[64];
    snprintf(text, sizeof text, "gjt key %d", variant);
    key_of_text(text, &b->key, b->key_hex);
    gjt_blob_set_group(b, variant);
    b->meta = made_up_meta(variant, &b->meta_size);
    b->payload = malloc(payload_size ? payload_size : 1);
    b->payload_size = payload_size;
    uint32_t x = 2166136261u ^ (uint32_t)variant;
    for (size_t i = 0; b->payload && i < payload_size; i++) {
        x = x * 1664525u + 1013904223u;
        b->payload[i] = (uint8_t)(x >> 24);
    }
    snprintf(b->sidecar, sizeof b->sidecar, "// made-up source of variant %d\n__global__ void k0() {}\n", variant);
}

void gjt_blob_set_group(gjt_blob *b, int group_variant) {
    char text[64];
    snprintf(text, sizeof text, "gjt group %d", group_variant);
    key_of_text(text, &b->group, b->group_hex);
}

void gjt_blob_free(gjt_blob *b) {
    free(b->meta);
    free(b->payload);
    memset(b, 0, sizeof *b);
}

char *gjt_blob_path(const char *dir, const gjt_blob *b, const char *ext) {
    return gj__store_entry_path(dir, b->group_hex, b->key_hex, ext);
}

void gjt_blob_put(gj_context *ctx, const gjt_blob *b) {
    gj__store_put(&ctx->store, &ctx->diag, &b->key, &b->group, b->meta, b->meta_size, b->payload, b->payload_size,
                  b->sidecar);
}

gj_status gjt_blob_get(gj_context *ctx, const gjt_blob *b, gj__blob *out) {
    return gj__store_get(&ctx->store, &ctx->diag, &b->key, &b->group, NULL, NULL, out);
}

int gjt_blob_same(const gjt_blob *b, const gj__blob *got) {
    return got->meta_size == b->meta_size && memcmp(got->meta, b->meta, b->meta_size) == 0 &&
           got->payload_size == b->payload_size && memcmp(got->payload, b->payload, b->payload_size) == 0 &&
           memcmp(&got->ref.key, &b->key, sizeof b->key) == 0 &&
           memcmp(&got->ref.group, &b->group, sizeof b->group) == 0;
}

int gjt_fetch(gj_context *ctx, const gjt_blob *b) {
    if (!gj__store_searchable(&ctx->store, &ctx->diag)) {
        gj__store_count_fill(&ctx->store, 1.0);
        return GJ_CACHE_OFF;
    }
    gj__blob got;
    if (gjt_blob_get(ctx, b, &got) == GJ_OK) {
        const int same = gjt_blob_same(b, &got);
        gj__blob_free(&got);
        return same ? GJ_CACHE_HIT : -1;
    }
    gj__store_count_miss(&ctx->store);
    gj__store_count_fill(&ctx->store, 1.0);
    gjt_blob_put(ctx, b);
    return GJ_CACHE_MISS;
}

/* ------------------------------------------------------------- NVRTC units */

const char *const GJT_TINY_NAMES[2] = {"&k0", "&k1"};

const char *gjt_tiny_source(int variant) {
    static char source[64][256];
    char *text = source[(unsigned)variant % 64];
    snprintf(text, sizeof source[0],
             "// a tiny source for the cache tests, variant %d\n"
             "__global__ void k0(float *x) { x[0] = %d.0f; }\n"
             "__global__ void k1(float *x) { x[1] = 1.0f; }\n",
             variant, variant);
    return text;
}

gj_status gjt_compile_tiny(gj_context *ctx, int variant, const char *arch, gj_program **out) {
    return gj_compile_source(ctx, gjt_tiny_source(variant), GJT_TINY_NAMES, 2, arch, out);
}

/* -------------------------------------------------------- child processes */

int gjt_run_children(int n, gjt_child_fn fn, void *arg, char *why, size_t why_size) {
    pid_t pids[64];
    int gate[2];
    why[0] = '\0';
    if (n > 64 || pipe(gate) != 0) {
        snprintf(why, why_size, "cannot start %d children", n);
        return -1;
    }
    fflush(NULL); /* or the children would print the parent's buffered output again */
    int started = 0;
    for (; started < n; started++) {
        pids[started] = fork();
        if (pids[started] < 0) {
            break;
        }
        if (pids[started] == 0) {
            close(gate[1]);
            char c;
            while (read(gate[0], &c, 1) > 0) { /* EOF: every child exists, go */
            }
            close(gate[0]);
            _exit(fn(started, arg));
        }
    }
    close(gate[0]);
    close(gate[1]);
    int failed = started == n ? 0 : -1;
    if (failed) {
        snprintf(why, why_size, "fork failed after %d children", started);
    }
    for (int i = 0; i < started; i++) {
        int status = 0;
        const int ok = waitpid(pids[i], &status, 0) == pids[i] && WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!ok && !failed) {
            failed = -1;
            snprintf(why, why_size, "child %d %s %d", i, WIFSIGNALED(status) ? "was killed by signal" : "exited with",
                     WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        }
    }
    return failed;
}

double gjt_now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}
