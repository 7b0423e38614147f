/* The cache key (issue 4 §1): the record is exactly the documented one, every input
 * changes the key, nothing else does, and the NVRTC identity is a build id. */
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
#include "templates.h"

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

static void hex128(const void *data, size_t n, char out[33]) {
    XXH128_hash_t h = XXH3_128bits(data, n);
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
}

static void record_is_the_documented_one(void **state) {
    (void)state;
    gjt_request r;
    gjt_request_init(&r, 0, "sm_90a", GJ_BINARY_CUBIN);
    bytes want = {0};
    u32(&want, "GJKS", 1);
    text(&want, "GJVR", GJ_VERSION_STRING);
    text(&want, "TRGT", "sm_90a");
    text(&want, "KIND", "cubin");
    u32(&want, "NOPT", 2);
    text(&want, "OPTN", r.options[0]);
    text(&want, "OPTN", r.options[1]);
    unsigned n_templates = 0;
    for (const gj__template *t = gj__templates; t->name; t++) {
        n_templates++;
    }
    assert_true(n_templates >= 1);
    u32(&want, "NTPL", n_templates);
    for (const gj__template *t = gj__templates; t->name; t++) {
        text(&want, "TPLN", t->name);
        field(&want, "TPLB", t->text, strlen(t->text));
    }
    u32(&want, "NNAM", 2);
    text(&want, "NAME", "&k0");
    text(&want, "NAME", "&k1");
    field(&want, "SRC ", r.source, strlen(r.source));
    size_t config_size = want.n;
    text(&want, "NVRV", "13.0");
    text(&want, "NVRB", r.nvrtc.build);

    size_t got_config = 0, got_size = 0;
    char *record = gj__cache_key_record(&r.req, &got_config, &got_size);
    assert_non_null(record);
    assert_int_equal(got_config, config_size);
    assert_int_equal(got_size, want.n);
    assert_memory_equal(record, want.data, want.n);

    gj__cache_key key;
    assert_int_equal(gj__cache_key_compute(&r.req, &key), 0);
    char hex[33];
    hex128(want.data, want.n, hex);
    assert_string_equal(key.hex, hex);
    hex128(want.data, config_size, hex);
    assert_string_equal(key.config_hex, hex);
    free(record);
    free(want.data);
}

/* --------------------------------------------------------- sensitivity */

static gj__cache_key key_of(const gjt_request *r) {
    gj__cache_key key;
    assert_int_equal(gj__cache_key_compute(&r->req, &key), 0);
    assert_int_equal(strlen(key.hex), 32);
    return key;
}

static void assert_both_differ(const gj__cache_key *a, const gj__cache_key *b) {
    assert_string_not_equal(a->hex, b->hex);
    assert_string_not_equal(a->config_hex, b->config_hex);
}

static void every_input_changes_the_key(void **state) {
    (void)state;
    gjt_request base, r;
    gjt_request_init(&base, 0, "sm_90", GJ_BINARY_CUBIN);
    gj__cache_key k0 = key_of(&base);

    gjt_request_init(&r, 1, "sm_90", GJ_BINARY_CUBIN); /* source */
    gj__cache_key k = key_of(&r);
    assert_both_differ(&k0, &k);

    gjt_request_init(&r, 0, "sm_90a", GJ_BINARY_CUBIN); /* sm_90 != sm_90a */
    k = key_of(&r);
    assert_both_differ(&k0, &k);

    gjt_request_init(&r, 0, "sm_90", GJ_BINARY_PTX); /* cubin != ptx, even with equal options */
    r.options[1] = base.options[1];
    k = key_of(&r);
    assert_both_differ(&k0, &k);

    gjt_request_init(&r, 0, "sm_90", GJ_BINARY_CUBIN); /* an option */
    r.options[0] = "--std=c++20";
    k = key_of(&r);
    assert_both_differ(&k0, &k);

    gjt_request_init(&r, 0, "sm_90", GJ_BINARY_CUBIN); /* one option more */
    r.options[2] = "-lineinfo";
    r.req.n_options = 3;
    k = key_of(&r);
    assert_both_differ(&k0, &k);

    gjt_request_init(&r, 0, "sm_90", GJ_BINARY_CUBIN); /* a name expression */
    r.names[1] = "&k2";
    k = key_of(&r);
    assert_both_differ(&k0, &k);

    /* Moving bytes between adjacent fields must not collide (length prefixes). */
    gjt_request_init(&r, 0, "sm_90", GJ_BINARY_CUBIN);
    r.options[0] = "--std=c++17--gpu-architecture=sm_80";
    r.req.n_options = 1;
    k = key_of(&r);
    assert_both_differ(&k0, &k);
}

static void nvrtc_changes_only_the_full_key(void **state) {
    (void)state;
    gjt_request base, r;
    gjt_request_init(&base, 0, "sm_90", GJ_BINARY_CUBIN);
    gj__cache_key k0 = key_of(&base);

    gjt_request_init(&r, 0, "sm_90", GJ_BINARY_CUBIN);
    r.nvrtc.minor = 1;
    gj__cache_key k = key_of(&r);
    assert_string_not_equal(k.hex, k0.hex);
    assert_string_equal(k.config_hex, k0.config_hex);

    gjt_request_init(&r, 0, "sm_90", GJ_BINARY_CUBIN);
    r.nvrtc.build[strlen(r.nvrtc.build) - 1] ^= 1; /* same version, another build */
    k = key_of(&r);
    assert_string_not_equal(k.hex, k0.hex);
    assert_string_equal(k.config_hex, k0.config_hex);

    gjt_request_init(&r, 0, "sm_90", GJ_BINARY_CUBIN); /* without NVRTC: only the config key */
    r.req.nvrtc = NULL;
    gj__cache_key none;
    assert_int_equal(gj__cache_key_compute(&r.req, &none), 0);
    assert_string_equal(none.hex, "");
    assert_string_equal(none.config_hex, k0.config_hex);
}

static void key_is_deterministic(void **state) {
    (void)state;
    gjt_request a, b;
    gjt_request_init(&a, 5, "compute_80", GJ_BINARY_PTX);
    gjt_request_init(&b, 5, "compute_80", GJ_BINARY_PTX);
    gj__cache_key ka = key_of(&a), kb = key_of(&b);
    assert_memory_equal(&ka, &kb, sizeof ka);
}

/* ------------------------------------------------------ library identity */

static void library_identity_is_the_build_id(void **state) {
    (void)state;
    char id[128];
    void *(*fn)(size_t) = malloc; /* an address inside libc */
    assert_int_equal(gj__cache_library_identity((const void *)(uintptr_t)fn, id, sizeof id), 0);
    /* Derived independently: readelf on the file the dynamic linker says holds it (libc,
     * or a sanitizer runtime that intercepts malloc). */
    Dl_info where;
    assert_true(dladdr((const void *)(uintptr_t)fn, &where) != 0);
    char command[1200];
    snprintf(command, sizeof command, "readelf -n '%s' 2>/dev/null | awk '/Build ID/{print $3}'", where.dli_fname);
    FILE *maps = popen(command, "r");
    char want[128] = "";
    if (maps && fgets(want, sizeof want, maps)) {
        want[strcspn(want, "\n")] = '\0';
    }
    if (maps) {
        pclose(maps);
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
    assert_int_equal(gj__cache_library_identity(heap, heap_id, sizeof heap_id), -1);
    free(heap);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(record_is_the_documented_one),
        cmocka_unit_test(every_input_changes_the_key),
        cmocka_unit_test(nvrtc_changes_only_the_full_key),
        cmocka_unit_test(key_is_deterministic),
        cmocka_unit_test(library_identity_is_the_build_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
