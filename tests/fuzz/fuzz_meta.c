/* Fuzz target: the program metadata decoder of cache entries (src/compile/meta.c,
 * gj__meta_decode) on arbitrary bytes.
 *
 * Checks: it never reads outside [bytes, bytes + size) (the input is copied into an
 * allocation of exactly that size, so ASan sees an overread); a refusal leaves the struct
 * zeroed; what it accepts is complete and, when it was written by this gridjit with a
 * target that fits a program's arch field, gj__meta_encode gives the same bytes back. */
#include "fuzz_meta_check.h"

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
    if (gjf_decode_meta(bytes, size, &meta)) {
        check_round_trip(&meta, bytes, size);
        gj__meta_free(&meta);
    }
    free(bytes);
    return 0;
}
