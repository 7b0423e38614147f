/* Helpers shared by the fuzz targets (tests/fuzz/README.md): an offline library and a quiet
 * context, a bounded reader over the input, a private scratch directory, capture of stdout
 * and stderr around a CLI entry point, and a check macro that reports and aborts
 * (libFuzzer then saves the input).
 * Header-only: each target is one translation unit plus this file. */
#ifndef GJ_FUZZ_COMMON_H
#define GJ_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gridjit.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant: say which, then abort (a crash for libFuzzer and for the replay
 * driver alike). Written with write(2) to fd 2, never to the captured stdio streams. */
#define GJF_CHECK(cond, ...)                                                                 \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            char gjf_msg_[1024];                                                             \
            int gjf_n_ = snprintf(gjf_msg_, sizeof gjf_msg_, "fuzz check failed at %s:%d: %s: ", \
                                  __FILE__, __LINE__, #cond);                                \
            if (gjf_n_ > 0 && (size_t)gjf_n_ < sizeof gjf_msg_) {                            \
                snprintf(gjf_msg_ + gjf_n_, sizeof gjf_msg_ - (size_t)gjf_n_, __VA_ARGS__);  \
            }                                                                                \
            gjf_msg_[sizeof gjf_msg_ - 2] = '\0';                                            \
            size_t gjf_len_ = strlen(gjf_msg_);                                              \
            gjf_msg_[gjf_len_] = '\n';                                                       \
            if (write(2, gjf_msg_, gjf_len_ + 1) < 0) {                                      \
            }                                                                                \
            abort();                                                                         \
        }                                                                                    \
    } while (0)

/* For the LLVMFuzzerInitialize of a target that parses and generates only: nothing it
 * runs may load NVRTC or the CUDA driver, or touch a disk cache. */
static inline void gjf_offline(void) {
    setenv("GRIDJIT_NVRTC", "off", 1);
    setenv("GRIDJIT_DRIVER", "off", 1);
    setenv("GRIDJIT_CACHE_DISABLE", "1", 1);
}

/* For the LLVMFuzzerInitialize of a target that calls the library: a context that logs
 * nothing (the targets provoke refusals by the thousand); aborts when none can be made. */
static inline gj_context *gjf_quiet_context(void) {
    gj_context *ctx = NULL;
    if (gj_context_create(&ctx) != GJ_OK) {
        abort();
    }
    gj_context_set_log(ctx, NULL, NULL);
    return ctx;
}

/* ------------------------------------------------------------------ reader */

typedef struct gjf_reader {
    const uint8_t *p;
    size_t left;
} gjf_reader;

static inline uint8_t gjf_u8(gjf_reader *r) {
    if (!r->left) {
        return 0;
    }
    r->left--;
    return *r->p++;
}

static inline uint16_t gjf_u16(gjf_reader *r) {
    uint16_t lo = gjf_u8(r);
    return (uint16_t)(lo | (uint16_t)gjf_u8(r) << 8);
}

/* A section: a 16-bit little-endian length, then that many bytes (fewer when the input
 * ends first). */
static inline const uint8_t *gjf_section(gjf_reader *r, size_t *n) {
    size_t want = gjf_u16(r);
    *n = want < r->left ? want : r->left;
    const uint8_t *at = r->p;
    r->p += *n;
    r->left -= *n;
    return at;
}

/* A malloc()ed NUL-terminated copy of n bytes (stops at an embedded NUL like C would). */
static inline char *gjf_strndup(const uint8_t *bytes, size_t n) {
    char *text = malloc(n + 1);
    if (!text) {
        abort();
    }
    memcpy(text, bytes, n);
    text[n] = '\0';
    return text;
}

/* --------------------------------------------------------------- scratch dir */

static char gjf_dir_path[256];

static inline void gjf_remove_dir(void) {
    if (gjf_dir_path[0]) {
        char command[300];
        snprintf(command, sizeof command, "rm -rf '%s'", gjf_dir_path);
        if (system(command) != 0) {
        }
    }
}

/* A private directory, made once per process and removed at exit. */
static inline const char *gjf_scratch_dir(void) {
    if (!gjf_dir_path[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(gjf_dir_path, sizeof gjf_dir_path, "%s/gridjit-fuzz-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
        if (!mkdtemp(gjf_dir_path)) {
            perror("mkdtemp");
            abort();
        }
        atexit(gjf_remove_dir);
    }
    return gjf_dir_path;
}

static inline void gjf_write_file(const char *path, const void *data, size_t size) {
    FILE *file = fopen(path, "wb");
    if (!file || fwrite(data, 1, size, file) != size || fclose(file) != 0) {
        perror(path);
        abort();
    }
}

/* ------------------------------------------------------------ capture */

/* What a CLI entry point printed. The stdio streams stdout and stderr are swapped for
 * memory streams during the call (glibc lets a program assign them); file descriptors 1
 * and 2 are untouched, so libFuzzer's and the sanitizers' reports still reach the terminal. */
typedef struct gjf_capture {
    char *out, *err;
    size_t out_size, err_size;
    FILE *saved_out, *saved_err;
} gjf_capture;

static inline void gjf_capture_begin(gjf_capture *c) {
    memset(c, 0, sizeof *c);
    fflush(stdout);
    fflush(stderr);
    c->saved_out = stdout;
    c->saved_err = stderr;
    FILE *out = open_memstream(&c->out, &c->out_size);
    FILE *err = open_memstream(&c->err, &c->err_size);
    if (!out || !err) {
        abort();
    }
    stdout = out;
    stderr = err;
}

static inline void gjf_capture_end(gjf_capture *c) {
    fclose(stdout);
    fclose(stderr);
    stdout = c->saved_out;
    stderr = c->saved_err;
}

static inline void gjf_capture_free(gjf_capture *c) {
    free(c->out);
    free(c->err);
}

#endif
