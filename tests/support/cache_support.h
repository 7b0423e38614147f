/* Helpers for the disk-cache tests (tests/test_cache_*.c): scratch directories, a fake
 * compiler, captured log messages, file inspection. */
#ifndef GJ_TEST_CACHE_SUPPORT_H
#define GJ_TEST_CACHE_SUPPORT_H

#include "cache_impl.h"
#include "compile.h"

#include <stddef.h>
#include <stdint.h>

/* A fresh, empty directory $GRIDJIT_TEST_TMP/name (else /tmp/gridjit-test-PID/name),
 * mode 0700. Returns a static-lifetime string (malloc()ed, freed at exit). */
char *gjt_scratch(const char *name);
/* rm -rf path. */
void gjt_remove_tree(const char *path);

/* A compile request for a made-up source, with a made-up NVRTC. */
typedef struct gjt_request {
    gj__cache_request req;
    gj__nvrtc_identity nvrtc;
    const char *names[2];
    const char *options[3];
    char source[256];
} gjt_request;

/* variant selects a different source (and so a different key). */
void gjt_request_init(gjt_request *r, int variant, const char *target, gj_binary_kind kind);

/* The fake compiler: a program whose binary is payload_size bytes derived from the
 * source, with two kernels. Counts its calls. */
typedef struct gjt_compiler {
    const gjt_request *request;
    size_t payload_size;
    int calls;
    gj_status fail_with; /* GJ_OK: succeed */
} gjt_compiler;

gj_status gjt_compile(gj_context *ctx, void *arg, gj_program **out);
/* The bytes gjt_compile produces for r (malloc()ed, size bytes). */
uint8_t *gjt_expected_binary(const gjt_request *r, size_t size);

/* Log capture: install with gj_context_set_log(ctx, gjt_log, &capture). */
typedef struct gjt_log_capture {
    int warnings;
    int infos;
    char last[2048];
} gjt_log_capture;
void gjt_log(void *user, gj_log_level level, const char *message);

/* A context using dir as its writable directory, no read-only layers, log captured. */
gj_context *gjt_context(const char *dir, gjt_log_capture *capture);

/* Counts regular files under dir (recursively) whose names end with suffix / start with prefix. */
size_t gjt_count_suffix(const char *dir, const char *suffix);
size_t gjt_count_prefix(const char *dir, const char *prefix);
/* The path of the only file under dir ending with suffix (malloc()ed), NULL if not exactly one. */
char *gjt_only_file(const char *dir, const char *suffix);

uint8_t *gjt_read_file(const char *path, size_t *size);
void gjt_write_file(const char *path, const void *data, size_t size);

#endif
