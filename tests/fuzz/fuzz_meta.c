/* Fuzz target: the program metadata decoder of cache entries (src/compile/meta.c,
 * gj__meta_decode) on arbitrary bytes.
 *
 * Checks: it never reads outside [bytes, bytes + size) (the input is copied into an
 * allocation of exactly that size, so ASan sees an overread); a refusal leaves the struct
 * zeroed; what it accepts is complete and, when it was written by this gridjit with a
 * target that fits a program's arch field, gj__meta_encode gives the same bytes back. */
#include "fuzz_common.h"

#include "compile/meta.h"
#include "compile/program.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    return 0;
}

static void check_round_trip(const gj__program_meta *meta, const uint8_t *bytes, size_t size) {
    if (strcmp(meta->gridjit_version, GJ_VERSION_STRING) != 0 || strlen(meta->target) >= sizeof(((gj_program *)0)->arch)) {
        return;
    }
    gj_program prog;
    memset(&prog, 0, sizeof prog);
    prog.kind = meta->kind;
    memcpy(prog.arch, meta->target, strlen(meta->target) + 1);
    prog.n_kernels = meta->n_kernels;
    prog.kernel_names = meta->names;
    prog.lowered_names = meta->lowered;
    prog.log = meta->log;
    size_t encoded_size = 0;
    uint8_t *encoded = gj__meta_encode(&prog, &meta->nvrtc, &encoded_size);
    GJF_CHECK(encoded != NULL, "gj__meta_encode failed");
    GJF_CHECK(encoded_size == size && memcmp(encoded, bytes, size) == 0,
              "accepted metadata does not encode back to its bytes (%zu vs %zu)", encoded_size, size);
    free(encoded);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *bytes = malloc(size ? size : 1);
    if (!bytes) {
        abort();
    }
    memcpy(bytes, data, size);
    gj__program_meta meta;
    memset(&meta, 0xa5, sizeof meta); /* the decoder must set every field */
    if (gj__meta_decode(bytes, size, &meta) == 0) {
        GJF_CHECK(meta.kind == GJ_BINARY_CUBIN || meta.kind == GJ_BINARY_PTX, "kind %d", (int)meta.kind);
        GJF_CHECK(meta.target && meta.gridjit_version && meta.log, "a string is missing");
        GJF_CHECK(meta.n_kernels == 0 || (meta.names && meta.lowered), "kernel arrays missing");
        for (size_t i = 0; i < meta.n_kernels; i++) {
            GJF_CHECK(meta.names[i] && meta.lowered[i], "kernel %zu", i);
        }
        GJF_CHECK(memchr(meta.nvrtc.build, '\0', sizeof meta.nvrtc.build) != NULL, "nvrtc build not terminated");
        check_round_trip(&meta, bytes, size);
        gj__meta_free(&meta);
    } else {
        GJF_CHECK(meta.target == NULL && meta.gridjit_version == NULL && meta.log == NULL && meta.names == NULL &&
                      meta.lowered == NULL && meta.n_kernels == 0,
                  "a refusal left fields set");
    }
    free(bytes);
    return 0;
}
