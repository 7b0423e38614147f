/* `gridjit eval`'s files (eval_files.h). */
#include "eval_files.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const CMD = "eval";

/* Files are little-endian; on a big-endian host the bytes of each float are swapped. */
static void from_little_endian(float *values, size_t count) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    for (size_t i = 0; i < count; ++i) {
        uint32_t bits;
        memcpy(&bits, &values[i], 4);
        bits = __builtin_bswap32(bits);
        memcpy(&values[i], &bits, 4);
    }
#else
    (void)values;
    (void)count;
#endif
}

int gj_cli_eval_read_floats(const char *what, const char *path, float **values, size_t *count) {
    *values = NULL;
    *count = 0;
    FILE *file = fopen(path, "rb");
    struct stat st;
    if (!file || fstat(fileno(file), &st) != 0 || !S_ISREG(st.st_mode)) {
        gj_cli_error(CMD, "%s: cannot read %s: %s", what, path, file ? "not a regular file" : strerror(errno));
        if (file) {
            fclose(file);
        }
        return GJ_CLI_FAILURE;
    }
    const size_t size = (size_t)st.st_size;
    if (size % 4 != 0) {
        fclose(file);
        gj_cli_error(CMD, "%s: %s has %zu bytes, not a whole number of float32 values", what, path, size);
        return GJ_CLI_FAILURE;
    }
    *values = malloc(size ? size : 1);
    const size_t got = *values ? fread(*values, 1, size, file) : 0;
    const int failed = ferror(file);
    fclose(file);
    if (!*values || got != size || failed) {
        gj_cli_error(CMD, "%s: cannot read %s%s", what, path, *values ? " (short read)" : " (out of memory)");
        free(*values);
        *values = NULL;
        return GJ_CLI_FAILURE;
    }
    from_little_endian(*values, size / 4);
    *count = size / 4;
    return GJ_CLI_OK;
}

int gj_cli_eval_read_exact(const char *what, const char *path, size_t expected, const char *shape, float **values) {
    size_t count = 0;
    int rc = gj_cli_eval_read_floats(what, path, values, &count);
    if (rc == GJ_CLI_OK && count != expected) {
        gj_cli_error(CMD, "%s: %s holds %zu floats; expected %s = %zu", what, path, count, shape, expected);
        free(*values);
        *values = NULL;
        rc = GJ_CLI_FAILURE;
    }
    return rc;
}

int gj_cli_eval_read_points(const char *path, uint32_t dims, const char *dims_name, float **x, size_t *n) {
    size_t count = 0;
    *n = 0;
    int rc = gj_cli_eval_read_floats("--points", path, x, &count);
    if (rc == GJ_CLI_OK && count % dims != 0) {
        gj_cli_error(CMD, "--points: %s holds %zu floats, not a multiple of %s = %u (N * %s floats, point-major)", path,
                     count, dims_name, dims, dims_name);
        rc = GJ_CLI_FAILURE;
    }
    if (rc == GJ_CLI_OK && (uint64_t)(count / dims) > GJ_MAX_POINTS) {
        gj_cli_error(CMD, "--points: %zu points are more than gridjit takes (2^40)", count / dims);
        rc = GJ_CLI_FAILURE;
    }
    if (rc == GJ_CLI_OK) {
        *n = count / dims;
    }
    return rc;
}

int gj_cli_eval_output_count(size_t n, uint32_t n_out, size_t *count) {
    if (!gj_cli_mul_size(n, n_out, 1, count)) {
        gj_cli_error(CMD, "--points: N * n_output_dims does not fit in memory sizes");
        return GJ_CLI_FAILURE;
    }
    return GJ_CLI_OK;
}

int gj_cli_eval_write_floats(const char *dir, const char *name, float *values, size_t count) {
    const size_t size = strlen(dir) + strlen(name) + 2;
    char *path = malloc(size);
    if (!path) {
        gj_cli_error(CMD, "out of memory");
        return GJ_CLI_FAILURE;
    }
    snprintf(path, size, "%s/%s", dir, name);
    from_little_endian(values, count); /* the same swap, to little-endian */
    int rc = gj_cli_write_file_atomic(CMD, path, values, count * sizeof(float));
    free(path);
    return rc;
}

int gj_cli_eval_save(gj_cli_gpu *gpu, const char *dir, const char *name, const void *device, size_t count,
                     gj_precision precision) {
    /* Zeroed: what a download did not write (none on a device) is not left undefined. */
    float *host = calloc(count ? count : 1, sizeof(float));
    if (!host) {
        gj_cli_error(CMD, "out of memory");
        return GJ_CLI_FAILURE;
    }
    int rc = gj_cli_gpu_download(gpu, device, count, precision, host);
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_eval_write_floats(dir, name, host, count);
    }
    free(host);
    return rc;
}
