/* Writes the seed corpora of the entry and meta targets (binary files with checksums,
 * which are easier made by the library's own encoders than by hand):
 *   cmake --build BUILD --target fuzz_make_seeds && BUILD/tests/fuzz/fuzz_make_seeds tests/fuzz/corpus
 * The other targets' seeds are text and were written by hand. */
#include "compile/meta.h"
#include "compile/program.h"
#include "store/store_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

static const char *root;

static void write_seed(const char *target, const char *name, const void *a, size_t na, const void *b, size_t nb,
                       const void *c, size_t nc) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, target);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/%s/%s", root, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(a, 1, na, f) != na || (nb && fwrite(b, 1, nb, f) != nb) || (nc && fwrite(c, 1, nc, f) != nc) ||
        fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

static uint8_t *meta_of(gj_binary_kind kind, const char *arch, size_t n_kernels, const char *log, size_t *size) {
    static char *names[] = {"&gj_encode_forward", "&gj_encode_backward", "&k<float, 4>"};
    static char *lowered[] = {"_Z17gj_encode_forwardv", "_Z18gj_encode_backwardv", "_Z1kIfLi4EEvv"};
    gj_program prog;
    memset(&prog, 0, sizeof prog);
    prog.kind = kind;
    snprintf(prog.arch, sizeof prog.arch, "%s", arch);
    prog.n_kernels = n_kernels;
    prog.kernel_names = names;
    prog.lowered_names = lowered;
    prog.log = (char *)log;
    gj__nvrtc_identity nvrtc = {13, 0, "cuda_13.0.r13.0/compiler.36424714_0"};
    return gj__meta_encode(&prog, &nvrtc, size);
}

/* mode byte, header, payload: one seed of the entry target. */
static void entry_seed(const char *name, uint8_t mode, const uint8_t *meta, size_t meta_size, const uint8_t *payload,
                       size_t payload_size, int damage) {
    gj__entry e;
    memset(&e, 0, sizeof e);
    for (int i = 0; i < 16; i++) {
        e.key.bytes[i] = (uint8_t)(0x11 * i);
        e.group.bytes[i] = (uint8_t)(0xf0 - i);
    }
    e.payload_size = payload_size;
    e.payload_checksum = XXH3_64bits(payload, payload_size);
    e.meta = (void *)meta;
    e.meta_size = meta_size;
    size_t header_size = 0;
    uint8_t *header = gj__entry_encode_header(&e, &header_size);
    uint8_t *copy = malloc(payload_size + 1);
    memcpy(copy, payload, payload_size);
    size_t n_payload = payload_size;
    switch (damage) {
    case 1: header[0] ^= 1; break;                        /* bad magic */
    case 2: header[8] = 3; break;                         /* bad version */
    case 3: header[20] ^= 0x80; break;                    /* header checksum */
    case 4: copy[0] ^= 1; break;                          /* payload checksum */
    case 5: n_payload--; break;                           /* truncated */
    case 6: copy[n_payload++] = 0; break;                 /* one byte too many */
    case 7: header[12] = 0xff; header[13] = 0xff; break;  /* header length beyond the file */
    default: break;
    }
    write_seed("entry", name, &mode, 1, header, header_size, copy, n_payload);
    free(copy);
    free(header);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    root = argv[1];
    uint8_t payload[96];
    for (size_t i = 0; i < sizeof payload; i++) {
        payload[i] = (uint8_t)(i * 37 + 5);
    }
    size_t cubin_size = 0, ptx_size = 0, log_size = 0;
    uint8_t *cubin = meta_of(GJ_BINARY_CUBIN, "sm_90a", 2, "", &cubin_size);
    uint8_t *ptx = meta_of(GJ_BINARY_PTX, "compute_80", 0, "", &ptx_size);
    uint8_t *logged = meta_of(GJ_BINARY_CUBIN, "sm_80", 3, "kernels.cu(12): warning #177-D: variable \"x\" was declared but never referenced\n", &log_size);

    /* metadata */
    write_seed("meta", "cubin_2_kernels", cubin, cubin_size, NULL, 0, NULL, 0);
    write_seed("meta", "ptx_no_kernels", ptx, ptx_size, NULL, 0, NULL, 0);
    write_seed("meta", "cubin_3_kernels_log", logged, log_size, NULL, 0, NULL, 0);
    write_seed("meta", "truncated", cubin, cubin_size - 1, NULL, 0, NULL, 0);
    write_seed("meta", "trailing_byte", cubin, cubin_size, "x", 1, NULL, 0);
    write_seed("meta", "magic_only", "GJPM", 4, NULL, 0, NULL, 0);
    uint8_t bad[512];
    memcpy(bad, cubin, cubin_size);
    bad[8] = 0xff; bad[9] = 0xff; bad[10] = 0xff; bad[11] = 0xff; /* kind */
    write_seed("meta", "bad_kind", bad, cubin_size, NULL, 0, NULL, 0);
    memcpy(bad, cubin, cubin_size);
    bad[20] = 0xff; bad[21] = 0xff; /* kernel count 65535 */
    write_seed("meta", "huge_kernel_count", bad, cubin_size, NULL, 0, NULL, 0);
    memcpy(bad, cubin, cubin_size);
    bad[24] = 0xff; bad[25] = 0xff; bad[26] = 0xff; bad[27] = 0xff; /* target length 2^32 - 1 */
    write_seed("meta", "huge_string", bad, cubin_size, NULL, 0, NULL, 0);
    memcpy(bad, cubin, cubin_size);
    bad[30] = 0; /* a NUL inside the target */
    write_seed("meta", "nul_in_string", bad, cubin_size, NULL, 0, NULL, 0);
    memcpy(bad, cubin, cubin_size);
    bad[4] = 2; /* version */
    write_seed("meta", "bad_version", bad, cubin_size, NULL, 0, NULL, 0);

    /* entries */
    entry_seed("valid_cubin", 0, cubin, cubin_size, payload, sizeof payload, 0);
    entry_seed("valid_cubin_header_only", 4, cubin, cubin_size, payload, sizeof payload, 0);
    entry_seed("valid_ptx", 0, ptx, ptx_size, payload, 40, 0);
    entry_seed("valid_logged", 0, logged, log_size, payload, 1, 0);
    entry_seed("empty_meta_empty_payload", 0, (const uint8_t *)"", 0, payload, 0, 0);
    entry_seed("claimed_longer", 0x30, cubin, cubin_size, payload, sizeof payload, 0);
    entry_seed("bad_magic", 0, cubin, cubin_size, payload, sizeof payload, 1);
    entry_seed("bad_version", 0, cubin, cubin_size, payload, sizeof payload, 2);
    entry_seed("bad_header_checksum", 0, cubin, cubin_size, payload, sizeof payload, 3);
    entry_seed("bad_payload_checksum", 0, cubin, cubin_size, payload, sizeof payload, 4);
    entry_seed("truncated_payload", 0, cubin, cubin_size, payload, sizeof payload, 5);
    entry_seed("one_byte_too_many", 0, cubin, cubin_size, payload, sizeof payload, 6);
    entry_seed("header_beyond_file", 0, cubin, cubin_size, payload, sizeof payload, 7);
    entry_seed("sealed_damaged_meta", 3, cubin, cubin_size, payload, sizeof payload, 3);
    entry_seed("sealed_payload", 3, ptx, ptx_size, payload, sizeof payload, 4);
    write_seed("entry", "short", "\0\x89GJC", 5, NULL, 0, NULL, 0);
    free(cubin);
    free(ptx);
    free(logged);
    return 0;
}
