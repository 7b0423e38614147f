/* Cache keys of compiled programs (compile/key.h): the record is exactly the one
 * src/compile/key.c states (schema 2), every input changes the key, the NVRTC identity
 * changes only the full key and is a build id; the program metadata stored with an entry
 * (compile/meta.h) round-trips and refuses malformed bytes; the public API reports the
 * key the record gives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cache_support.h"
#include "compile/encoding_unit.h"
#include "compile/key.h"
#include "compile/meta.h"
#include "compile/options.h"
#include "loader/library_identity.h"
#include "run_cli.h" /* gj_test_scratch_dir */
#include "test_env.h"

/* ----------------------------------------------------------- a request */

/* A key request with its own storage; variant changes the source. */
typedef struct request {
    gj__key_request req;
    gj__unit unit;
    gj__arch arch;
    gj__nvrtc_identity nvrtc;
    gj__header headers[2];
    const char *names[3];
    const char *options[4];
    char source[256];
} request;

static void request_init(request *r, int variant, const char *target) {
    memset(r, 0, sizeof *r);
    snprintf(r->source, sizeof r->source,
             "// generated for a test, variant %d\n#include \"gj_common.h\"\n__global__ void k0() {}\n"
             "__global__ void k1() {}\n",
             variant);
    assert_int_equal(gj__arch_parse(NULL, target, &r->arch), GJ_OK);
    r->headers[0] = (gj__header){"gj_common.h", "#pragma once\n#define GJ_X 1\n"};
    r->headers[1] = (gj__header){"gj_hash.h", "#pragma once\n"};
    r->names[0] = "&k0";
    r->names[1] = "&k1";
    r->options[0] = "--std=c++17";
    r->options[1] = r->arch.kind == GJ_BINARY_PTX ? "--gpu-architecture=compute_80" : "--gpu-architecture=sm_80";
    r->nvrtc = (gj__nvrtc_identity){.major = 13, .minor = 0, .build = "gnu-build-id:0123456789abcdef"};
    r->unit = (gj__unit){.source = r->source, .file_name = "gridjit.cu", .headers = r->headers, .n_headers = 2,
                         .names = r->names, .n_names = 2};
    r->req = (gj__key_request){&r->unit, &r->arch, r->options, 2, &r->nvrtc};
}

static gj__compile_key key_of(const request *r) {
    gj__compile_key key;
    assert_int_equal(gj__compile_key_make(&r->req, &key), 0);
    assert_int_equal(strlen(key.hex), 32);
    assert_int_equal(strlen(key.config_hex), 32);
    return key;
}

/* ----------------------------------------- the record, built independently */

typedef struct bytes {
    uint8_t *data;
    size_t n;
} bytes;

static void put(bytes *b, const void *data, size_t n) {
    b->data = realloc(b->data, b->n + n + 1);
    memcpy(b->data + b->n, data, n);
    b->n += n;
}

static void field(bytes *b, const char *tag, const void *data, size_t n) {
    put(b, tag, 4);
    uint8_t len[8];
    for (int i = 0; i < 8; i++) {
        len[i] = (uint8_t)((uint64_t)n >> (8 * i));
    }
    put(b, len, 8);
    put(b, data, n);
}

static void text(bytes *b, const char *tag, const char *s) {
    field(b, tag, s, strlen(s));
}

static void u32(bytes *b, const char *tag, uint32_t v) {
    uint8_t le[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    field(b, tag, le, 4);
}

/* 32 hex digits, high64 then low64: the canonical big-endian digest. */
static void hex128(const void *data, size_t n, char out[33]) {
    XXH128_hash_t h = XXH3_128bits(data, n);
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
}

static void record_is_the_stated_one(void **state) {
    (void)state;
    request r;
    request_init(&r, 0, "sm_90a");
    bytes want = {0};
    u32(&want, "GJKS", GJ__KEY_SCHEMA);
    assert_int_equal(GJ__KEY_SCHEMA, 2);
    text(&want, "GJVR", GJ_VERSION_STRING);
    text(&want, "TRGT", "sm_90a");
    text(&want, "KIND", "cubin");
    u32(&want, "NOPT", 2);
    text(&want, "OPTN", r.options[0]);
    text(&want, "OPTN", r.options[1]);
    u32(&want, "NHDR", 2);
    for (int i = 0; i < 2; i++) {
        text(&want, "HDRN", r.headers[i].name);
        text(&want, "HDRB", r.headers[i].text);
    }
    u32(&want, "NNAM", 2);
    text(&want, "NAME", "&k0");
    text(&want, "NAME", "&k1");
    text(&want, "FILE", "gridjit.cu");
    field(&want, "SRC ", r.source, strlen(r.source));
    size_t config_size = want.n;
    text(&want, "NVRV", "13.0");
    text(&want, "NVRB", r.nvrtc.build);

    size_t got_config = 0, got_size = 0;
    char *record = gj__compile_key_record(&r.req, &got_config, &got_size);
    assert_non_null(record);
    assert_int_equal(got_config, config_size);
    assert_int_equal(got_size, want.n);
    assert_memory_equal(record, want.data, want.n);

    gj__compile_key key = key_of(&r);
    char hex[33];
    hex128(want.data, want.n, hex);
    assert_string_equal(key.hex, hex);
    hex128(want.data, config_size, hex);
    assert_string_equal(key.config_hex, hex);
    /* the store keys are the same digests as bytes */
    gj__store_key_hex(&key.key, hex);
    assert_string_equal(key.hex, hex);
    gj__store_key_hex(&key.config, hex);
    assert_string_equal(key.config_hex, hex);
    free(record);
    free(want.data);
}

/* --------------------------------------------------------- sensitivity */

static void assert_both_differ(const gj__compile_key *a, const gj__compile_key *b) {
    assert_string_not_equal(a->hex, b->hex);
    assert_string_not_equal(a->config_hex, b->config_hex);
}

/* Changes one input of a fresh request and checks that both keys move. */
typedef void (*change_fn)(request *r);

static void change_source(request *r) {
    request_init(r, 1, "sm_90");
}
static void change_target(request *r) { /* sm_90 != sm_90a */
    request_init(r, 0, "sm_90a");
}
static void change_kind(request *r) { /* cubin != ptx, even with equal options */
    request_init(r, 0, "compute_90");
    r->options[1] = "--gpu-architecture=sm_80";
}
static void change_option(request *r) {
    r->options[0] = "--std=c++20";
}
static void one_option_more(request *r) {
    r->options[2] = "-lineinfo";
    r->req.n_options = 3;
}
static void change_name(request *r) {
    r->names[1] = "&k2";
}
static void one_name_fewer(request *r) {
    r->unit.n_names = 1;
}
static void change_header_text(request *r) {
    r->headers[1].text = "#pragma once\n#define GJ_Y 2\n";
}
static void change_header_name(request *r) {
    r->headers[1].name = "gj_other.h";
}
static void one_header_fewer(request *r) {
    r->unit.n_headers = 1;
}
static void change_file_name(request *r) {
    r->unit.file_name = "other.cu";
}
/* Moving bytes between adjacent fields must not collide (length prefixes). */
static void move_bytes_between_options(request *r) {
    r->options[0] = "--std=c++17--gpu-architecture=sm_80";
    r->req.n_options = 1;
}

static void every_input_changes_the_key(void **state) {
    (void)state;
    static const change_fn changes[] = {change_source,      change_target,      change_kind,
                                        change_option,      one_option_more,    change_name,
                                        one_name_fewer,     change_header_text, change_header_name,
                                        one_header_fewer,   change_file_name,   move_bytes_between_options};
    request base;
    request_init(&base, 0, "sm_90");
    gj__compile_key k0 = key_of(&base);
    for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
        request r;
        request_init(&r, 0, "sm_90");
        changes[i](&r);
        gj__compile_key k = key_of(&r);
        if (strcmp(k.hex, k0.hex) == 0 || strcmp(k.config_hex, k0.config_hex) == 0) {
            fail_msg("change %zu left a key unchanged", i);
        }
        assert_both_differ(&k0, &k);
    }
}

static void nvrtc_changes_only_the_full_key(void **state) {
    (void)state;
    request base, r;
    request_init(&base, 0, "sm_90");
    gj__compile_key k0 = key_of(&base);

    request_init(&r, 0, "sm_90");
    r.nvrtc.minor = 1;
    gj__compile_key k = key_of(&r);
    assert_string_not_equal(k.hex, k0.hex);
    assert_string_equal(k.config_hex, k0.config_hex);

    request_init(&r, 0, "sm_90");
    r.nvrtc.build[strlen(r.nvrtc.build) - 1] ^= 1; /* same version, another build */
    k = key_of(&r);
    assert_string_not_equal(k.hex, k0.hex);
    assert_string_equal(k.config_hex, k0.config_hex);

    request_init(&r, 0, "sm_90"); /* without NVRTC: only the configuration key */
    r.req.nvrtc = NULL;
    gj__compile_key none;
    assert_int_equal(gj__compile_key_make(&r.req, &none), 0);
    assert_string_equal(none.hex, "");
    assert_string_equal(none.config_hex, k0.config_hex);
}

static void key_is_deterministic(void **state) {
    (void)state;
    request a, b;
    request_init(&a, 5, "compute_80");
    request_init(&b, 5, "compute_80");
    gj__compile_key ka = key_of(&a), kb = key_of(&b);
    assert_memory_equal(&ka, &kb, sizeof ka);
}

/* ------------------------------------------------------ library identity */

static void library_identity_is_the_build_id(void **state) {
    (void)state;
    char id[128];
    void *(*fn)(size_t) = malloc; /* an address inside libc */
    assert_int_equal(gj__library_identity((const void *)(uintptr_t)fn, id, sizeof id), 0);
    /* Derived independently: readelf on the file the dynamic linker says holds it (libc,
     * or a sanitizer runtime that intercepts malloc). */
    Dl_info where;
    assert_true(dladdr((const void *)(uintptr_t)fn, &where) != 0);
    char command[1200];
    snprintf(command, sizeof command, "readelf -n '%s' 2>/dev/null | awk '/Build ID/{print $3}'", where.dli_fname);
    FILE *notes = popen(command, "r");
    char want[128] = "";
    if (notes && fgets(want, sizeof want, notes)) {
        want[strcspn(want, "\n")] = '\0';
    }
    if (notes) {
        pclose(notes);
    }
    if (want[0]) {
        char expect[160];
        snprintf(expect, sizeof expect, "gnu-build-id:%s", want);
        assert_string_equal(id, expect);
    } else {
        assert_true(strncmp(id, "gnu-build-id:", 13) == 0 || strncmp(id, "xxh3:", 5) == 0);
    }
    char heap_id[128];
    void *heap = malloc(16);
    assert_int_equal(gj__library_identity(heap, heap_id, sizeof heap_id), -1);
    free(heap);
}

/* The identity of the library at path (dlopen'ed, kept open: *handle), through one of its
 * functions' addresses. */
static void identity_of_file(const char *path, void **handle, char *id, size_t size) {
    *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!*handle) {
        fail_msg("dlopen %s: %s", path, dlerror());
    }
    void *fn = dlsym(*handle, "gj_test_no_build_id_value");
    assert_non_null(fn);
    assert_int_equal(gj__library_identity(fn, id, size), 0);
}

/* A library without a GNU build id: its file's size and an XXH3 of its first MiB seeded with
 * the size, the same for a copy at another path, another for another file. */
static void library_identity_without_a_build_id(void **state) {
    (void)state;
    const char *one = getenv("GRIDJIT_NO_BUILD_ID_1"), *two = getenv("GRIDJIT_NO_BUILD_ID_2");
    if (!one || !two) {
        printf("SKIPPED: GRIDJIT_NO_BUILD_ID_1/2 are not set (tests/CMakeLists.txt sets them)\n");
        skip();
    }
    char id1[128], id2[128], id_copy[128];
    void *h1 = NULL, *h2 = NULL, *h_copy = NULL;
    identity_of_file(one, &h1, id1, sizeof id1);
    identity_of_file(two, &h2, id2, sizeof id2);
    /* Derived here from the file: its image and size. */
    size_t size = 0;
    char *image = gj_test_read_file(one, &size);
    assert_non_null(image);
    char want[128];
    snprintf(want, sizeof want, "xxh3:%016llx-%llu",
             (unsigned long long)XXH3_64bits_withSeed(image, size < ((size_t)1 << 20) ? size : ((size_t)1 << 20),
                                                      (uint64_t)size),
             (unsigned long long)size);
    assert_string_equal(id1, want);
    assert_true(strncmp(id2, "xxh3:", 5) == 0);
    assert_string_not_equal(id1, id2);
    /* The same image under another name: the same identity (no path in it). */
    char *dir = gj_test_scratch_dir("library_identity");
    assert_non_null(dir);
    char copy[4200];
    snprintf(copy, sizeof copy, "%s/libcopy_of_one.so", dir);
    assert_int_equal(gj_test_write_file(copy, image, size), 0);
    identity_of_file(copy, &h_copy, id_copy, sizeof id_copy);
    assert_string_equal(id_copy, id1);
    dlclose(h_copy);
    dlclose(h2);
    dlclose(h1);
    free(image);
    free(dir);
}

/* ------------------------------------------------------ program metadata */

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static gj_program *made_up_program(void) {
    gj_program *prog = gj__program_new();
    prog->kind = GJ_BINARY_PTX;
    snprintf(prog->arch, sizeof prog->arch, "compute_90");
    prog->n_kernels = 2;
    prog->kernel_names = calloc(2, sizeof(char *));
    prog->lowered_names = calloc(2, sizeof(char *));
    prog->kernel_names[0] = strdup("&k0");
    prog->kernel_names[1] = strdup("&k1");
    prog->lowered_names[0] = strdup("_Z2k0v");
    prog->lowered_names[1] = strdup("_Z2k1v");
    free(prog->log);
    prog->log = strdup("gridjit.cu(2): warning: a warning that must survive a hit");
    return prog;
}

/* The layout meta.c states: "GJPM", version 1, kind, NVRTC major and minor, kernel
 * count, then length-prefixed target, gridjit version, NVRTC build, per kernel the name
 * expression and the lowered name, then the compiler log; nothing after. */
static void metadata_layout_and_round_trip(void **state) {
    (void)state;
    gj_program *prog = made_up_program();
    const gj__nvrtc_identity nvrtc = {.major = 13, .minor = 2, .build = "gnu-build-id:abc"};
    size_t size = 0;
    uint8_t *meta = gj__meta_encode(prog, &nvrtc, &size);
    assert_non_null(meta);
    assert_memory_equal(meta, "GJPM", 4);
    assert_int_equal(le32(meta + 4), 1);
    assert_int_equal(le32(meta + 8), GJ_BINARY_PTX);
    assert_int_equal(le32(meta + 12), 13);
    assert_int_equal(le32(meta + 16), 2);
    assert_int_equal(le32(meta + 20), 2);
    const char *want[] = {"compute_90", GJ_VERSION_STRING, "gnu-build-id:abc", "&k0", "_Z2k0v", "&k1", "_Z2k1v",
                          prog->log};
    size_t pos = 24;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        uint32_t n = le32(meta + pos);
        assert_int_equal(n, strlen(want[i]));
        assert_memory_equal(meta + pos + 4, want[i], n);
        pos += 4 + n;
    }
    assert_int_equal(pos, size);

    gj__program_meta back;
    assert_int_equal(gj__meta_decode(meta, size, &back), 0);
    assert_int_equal(back.kind, GJ_BINARY_PTX);
    assert_string_equal(back.target, "compute_90");
    assert_string_equal(back.gridjit_version, GJ_VERSION_STRING);
    assert_int_equal(back.nvrtc.major, 13);
    assert_int_equal(back.nvrtc.minor, 2);
    assert_string_equal(back.nvrtc.build, "gnu-build-id:abc");
    assert_int_equal(back.n_kernels, 2);
    assert_string_equal(back.names[1], "&k1");
    assert_string_equal(back.lowered[1], "_Z2k1v");
    assert_string_equal(back.log, prog->log);
    gj__meta_free(&back);
    assert_string_equal(gj__binary_kind_name(GJ_BINARY_PTX), "ptx");
    assert_string_equal(gj__binary_kind_name(GJ_BINARY_CUBIN), "cubin");

    /* a program without its lowered names is not stored */
    free(prog->lowered_names[1]);
    prog->lowered_names[1] = NULL;
    size_t ignored = 0;
    assert_null(gj__meta_encode(prog, &nvrtc, &ignored));
    free(meta);
    gj_program_destroy(prog);
}

/* Every truncation, trailing bytes, a wrong magic or kind, and absurd counts are refused,
 * never read past the end. */
static void malformed_metadata_is_refused(void **state) {
    (void)state;
    gj_program *prog = made_up_program();
    const gj__nvrtc_identity nvrtc = {.major = 13, .minor = 0, .build = "x"};
    size_t size = 0;
    uint8_t *meta = gj__meta_encode(prog, &nvrtc, &size);
    gj__program_meta out;
    for (size_t n = 0; n < size; n++) {
        uint8_t *copy = malloc(n ? n : 1); /* exactly n bytes: a sanitizer sees any overrun */
        memcpy(copy, meta, n);
        if (gj__meta_decode(copy, n, &out) == 0) {
            fail_msg("metadata cut to %zu of %zu bytes was accepted", n, size);
        }
        free(copy);
    }
    uint8_t *longer = malloc(size + 1);
    memcpy(longer, meta, size);
    longer[size] = 0;
    assert_int_equal(gj__meta_decode(longer, size + 1, &out), -1);
    free(longer);
    static const size_t spots[] = {0, 8, 20};          /* magic, kind, kernel count */
    static const uint8_t values[] = {'X', 7, 0xff};
    for (size_t i = 0; i < 3; i++) {
        uint8_t saved = meta[spots[i]];
        meta[spots[i]] = values[i];
        assert_int_equal(gj__meta_decode(meta, size, &out), -1);
        meta[spots[i]] = saved;
    }
    assert_int_equal(gj__meta_decode(meta, size, &out), 0);
    gj__meta_free(&out);
    free(meta);
    gj_program_destroy(prog);
}

/* ------------------------------------------------ codegen options in the key */

/* gradients_fp32 reaches the key of every program of a module through the generated source
 * (the record holds the source: every_input_changes_the_key), for an encoding whose grad_t
 * it changes (fp16, F = 2) and for one whose grad_t is float anyway (fp16, F = 1: its
 * kernels are the same, but the runtime treats dL/dparams differently). */
static void gradients_fp32_changes_every_source(void **state) {
    (void)state;
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    static const char *const configs[] = {"{\"n_levels\": 2}", "{\"n_levels\": 2, \"n_features_per_level\": 1}"};
    for (size_t c = 0; c < 2; ++c) {
        gj_encoding *enc = NULL;
        assert_int_equal(gj_encoding_create(ctx, configs[c], 0, &enc), GJ_OK);
        gj_codegen_options plain, fp32;
        gj_codegen_options_init(&plain);
        gj_codegen_options_init(&fp32);
        fp32.gradients_fp32 = 1;
        for (int part = GJ__PART_ALL; part < GJ__PART_COUNT; ++part) {
            char *a = gj__encoding_source(&ctx->compiler, enc, &plain, (gj__part)part);
            char *b = gj__encoding_source(&ctx->compiler, enc, &fp32, (gj__part)part);
            assert_true(a && b);
            if (strcmp(a, b) == 0) {
                fail_msg("%s, part %d: gradients_fp32 leaves the source (and so the key) unchanged", configs[c], part);
            }
            free(a);
            free(b);
        }
        gj_encoding_destroy(enc);
    }
    gj_context_destroy(ctx);
}

/* ------------------------------------------------------- the public key */

/* gj_compile_source reports the key its record gives with the loaded NVRTC; lineinfo
 * (an option) changes it. */
static void public_key_is_the_record_key(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    char *dir = gjt_scratch("public_key");
    gj_context *ctx = gjt_context(dir, NULL);
    gj_program *prog = NULL;
    assert_int_equal(gjt_compile_tiny(ctx, 0, "sm_80", &prog), GJ_OK);
    gj__nvrtc *nv = NULL;
    assert_int_equal(gj__nvrtc_get(&ctx->nvrtc, &ctx->diag, &nv), GJ_OK);
    gj__arch arch;
    assert_int_equal(gj__arch_parse(NULL, "sm_80", &arch), GJ_OK);
    const char *options[GJ__MAX_COMPILE_OPTIONS];
    char buffer[GJ__COMPILE_OPTIONS_BUFFER];
    size_t n = gj__compile_options(arch.name, 0, options, GJ__MAX_COMPILE_OPTIONS, buffer, sizeof buffer);
    gj__unit unit = {.source = gjt_tiny_source(0), .file_name = "gridjit.cu", .names = GJT_TINY_NAMES, .n_names = 2};
    gj__key_request req = {&unit, &arch, options, n, &nv->identity};
    gj__compile_key key;
    assert_int_equal(gj__compile_key_make(&req, &key), 0);
    assert_string_equal(gj_program_cache_key(prog), key.hex);
    char *entry = gj__store_entry_path(dir, key.config_hex, key.hex, GJ__ENTRY_EXT);
    assert_true(gjt_file_size(entry) != UINT64_MAX);
    free(entry);
    gj_program_destroy(prog);

    assert_int_equal(gj_context_set_lineinfo(ctx, 1), GJ_OK);
    assert_int_equal(gjt_compile_tiny(ctx, 0, "sm_80", &prog), GJ_OK);
    assert_int_equal(gj_program_cache_status(prog), GJ_CACHE_MISS);
    assert_string_not_equal(gj_program_cache_key(prog), key.hex);
    gj_program_destroy(prog);
    gj_context_destroy(ctx);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(record_is_the_stated_one),
        cmocka_unit_test(every_input_changes_the_key),
        cmocka_unit_test(nvrtc_changes_only_the_full_key),
        cmocka_unit_test(key_is_deterministic),
        cmocka_unit_test(library_identity_is_the_build_id),
        cmocka_unit_test(library_identity_without_a_build_id),
        cmocka_unit_test(metadata_layout_and_round_trip),
        cmocka_unit_test(malformed_metadata_is_refused),
        cmocka_unit_test(gradients_fp32_changes_every_source),
        cmocka_unit_test(public_key_is_the_record_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
