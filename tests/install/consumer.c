/* The consumer of an installed gridjit (tests/install/run.sh builds it with find_package
 * and with each compile line of README's "Install" section: pkg-config and plain cc, shared
 * and static). Public header and libc only (no -lm: the README's lines link it as they
 * are). Exit 0 when everything checks out. */
#include <gridjit.h>

#include <stdio.h>
#include <string.h>

/* n_params of tiny-cuda-nn's default HashGrid in D dimensions, from the layout rules
 * (docs/design.md): level l has scale = base * 2^l - 1 (an integer for per_level_scale 2),
 * resolution = scale + 1 and min(next_multiple(resolution^D, 8), 2^log2_hashmap_size)
 * entries of F parameters. */
static unsigned long long default_hashgrid_params(unsigned n_dims) {
    const unsigned n_levels = 16, features = 2, log2_hashmap_size = 19, base = 16;
    unsigned long long total = 0;
    for (unsigned l = 0; l < n_levels; ++l) {
        const unsigned long long resolution = (unsigned long long)base << l;
        unsigned long long dense = 1;
        for (unsigned d = 0; d < n_dims && dense <= (1ull << 40); ++d) {
            dense *= resolution;
        }
        dense = (dense + 7) / 8 * 8;
        const unsigned long long hashed = 1ull << log2_hashmap_size;
        total += (dense < hashed ? dense : hashed) * features;
    }
    return total;
}

int main(void) {
    int failures = 0;
    if (strcmp(gj_version_string(), GJ_VERSION_STRING) != 0 || gj_version_number() != GJ_VERSION_NUMBER) {
        fprintf(stderr, "consumer: header %s but library %s\n", GJ_VERSION_STRING, gj_version_string());
        failures++;
    }
    gj_context *ctx = NULL;
    if (gj_context_create(&ctx) != GJ_OK) {
        fprintf(stderr, "consumer: gj_context_create failed\n");
        return 1;
    }
    gj_encoding *enc = NULL;
    gj_status status = gj_encoding_create(ctx, "{\"otype\": \"HashGrid\"}", 3, &enc);
    if (status != GJ_OK) {
        fprintf(stderr, "consumer: gj_encoding_create: %s: %s\n", gj_status_name(status), gj_context_errmsg(ctx));
        gj_context_destroy(ctx);
        return 1;
    }
    const unsigned long long n_params = (unsigned long long)gj_encoding_n_params(enc);
    const unsigned long long expected = default_hashgrid_params(3);
    printf("gridjit %s: default HashGrid, D = 3: n_params = %llu (expected %llu)\n", gj_version_string(), n_params,
           expected);
    if (n_params != expected || n_params != 14229504ull) {
        fprintf(stderr, "consumer: n_params %llu, expected %llu (14229504)\n", n_params, expected);
        failures++;
    }
    char *source = NULL;
    size_t length = 0;
    status = gj_encoding_generate(ctx, enc, NULL, &source, &length);
    if (status != GJ_OK || !source || length != strlen(source) || !strstr(source, "gj_encode")) {
        fprintf(stderr, "consumer: gj_encoding_generate: %s: %s\n", gj_status_name(status), gj_context_errmsg(ctx));
        failures++;
    } else {
        printf("generated %zu bytes of CUDA source\n", length);
    }
    gj_free(source);
    gj_encoding_destroy(enc);
    gj_context_destroy(ctx);
    return failures ? 1 : 0;
}
