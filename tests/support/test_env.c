/* Shared test helpers: NVRTC presence, file I/O, source paths. */
#include "test_env.h"

#include <stdio.h>
#include <stdlib.h>

int gj_test_have_nvrtc(void) {
    static int known = -1;
    if (known >= 0) {
        return known;
    }
    gj_context *ctx = NULL;
    int major = 0, minor = 0;
    known = gj_context_create(&ctx) == GJ_OK && gj_nvrtc_version(ctx, &major, &minor) == GJ_OK;
    if (!known) {
        printf("SKIPPED: NVRTC is not available: %s\n", ctx ? gj_context_errmsg(ctx) : "no context");
    }
    gj_context_destroy(ctx);
    return known;
}

char *gj_test_read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    char *data = NULL;
    size_t used = 0, cap = 0;
    for (;;) {
        if (used + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 65536;
            char *grown = realloc(data, cap);
            if (!grown) {
                free(data);
                fclose(f);
                return NULL;
            }
            data = grown;
        }
        const size_t n = fread(data + used, 1, cap - used - 1, f);
        used += n;
        if (n == 0) {
            break;
        }
    }
    fclose(f);
    data[used] = '\0';
    if (size) {
        *size = used;
    }
    return data;
}

int gj_test_write_file(const char *path, const char *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        return -1;
    }
    const int ok = fwrite(data, 1, size, f) == size;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

const char *gj_test_source_path(const char *relative) {
    static char path[4096];
    const char *root = getenv("GRIDJIT_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/%s", root ? root : ".", relative);
    return path;
}

int gj_test_shard_args(int argc, char **argv, int *shard, int *n_shards) {
    *shard = 0;
    *n_shards = argc == 1 ? 1 : 0;
    if (argc == 3) {
        *shard = atoi(argv[1]);
        *n_shards = atoi(argv[2]);
    }
    if (*n_shards < 1 || *shard < 0 || *shard >= *n_shards) {
        fprintf(stderr, "usage: %s SHARD N_SHARDS\n", argv[0]);
        return -1;
    }
    return 0;
}
