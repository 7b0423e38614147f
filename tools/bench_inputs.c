/* The inputs of `gridjit bench` (bench_inputs.h). */
#include "bench_inputs.h"

#include "cli_common.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

const char *gj_bench_input_name(gj_bench_input_kind kind) {
    switch (kind) {
    case GJ_BENCH_INPUT_RAYS: return "rays";
    case GJ_BENCH_INPUT_FILE: return "file";
    default: return "uniform";
    }
}

int gj_bench_parse_input(const char *cmd, const char *text, gj_bench_input *input) {
    if (strcmp(text, "uniform") == 0) {
        input->kind = GJ_BENCH_INPUT_UNIFORM;
    } else if (strcmp(text, "rays") == 0) {
        input->kind = GJ_BENCH_INPUT_RAYS;
    } else if (strncmp(text, "file:", 5) == 0 && text[5]) {
        input->kind = GJ_BENCH_INPUT_FILE;
        input->path = text + 5;
    } else {
        return gj_cli_usage_error(cmd, "--input: must be uniform, rays or file:PATH (got '%s')", text);
    }
    return GJ_CLI_OK;
}

int gj_bench_input_points(const char *cmd, const gj_bench_input *input, uint32_t n_dims, uint32_t n_points,
                          uint32_t *out) {
    if (input->kind == GJ_BENCH_INPUT_RAYS) {
        const uint64_t n = (uint64_t)input->rays * input->samples;
        if (n == 0 || n > UINT32_MAX) {
            return gj_cli_usage_error(cmd, "--rays x --samples must be 1 to %u points (got %u x %u)", UINT32_MAX,
                                      input->rays, input->samples);
        }
        *out = (uint32_t)n;
        return GJ_CLI_OK;
    }
    if (input->kind == GJ_BENCH_INPUT_FILE) {
        struct stat st;
        if (stat(input->path, &st) != 0) {
            gj_cli_error(cmd, "--input file:%s: %s", input->path, strerror(errno));
            return GJ_CLI_FAILURE;
        }
        const uint64_t point_bytes = 4ull * n_dims;
        if (st.st_size <= 0 || (uint64_t)st.st_size % point_bytes != 0 || (uint64_t)st.st_size / point_bytes > UINT32_MAX) {
            gj_cli_error(cmd, "--input file:%s: %lld bytes is not a whole number of points (%u float32 each, at most %u points)",
                         input->path, (long long)st.st_size, n_dims, UINT32_MAX);
            return GJ_CLI_FAILURE;
        }
        *out = (uint32_t)((uint64_t)st.st_size / point_bytes);
        return GJ_CLI_OK;
    }
    *out = n_points;
    return GJ_CLI_OK;
}

static float uniform01(uint64_t *state) {
    float value;
    gj_cli_random_floats(state, &value, 1, 0.0f, 1.0f);
    return value;
}

/* A unit vector of n_dims components: uniform over directions for D <= 3 (rejection from
 * the ball), the normalised cube's directions above. */
static void random_direction(uint64_t *state, uint32_t n_dims, float *dir) {
    for (;;) {
        double norm2 = 0.0;
        for (uint32_t d = 0; d < n_dims; ++d) {
            dir[d] = 2.0f * uniform01(state) - 1.0f;
            norm2 += (double)dir[d] * dir[d];
        }
        if (norm2 > 1e-4 && (n_dims > 3 || norm2 <= 1.0)) {
            const float inv = (float)(1.0 / sqrt(norm2));
            for (uint32_t d = 0; d < n_dims; ++d) dir[d] *= inv;
            return;
        }
    }
}

/* Where the ray origin + t * dir is inside [0, 1]^D: [*t0, *t1] (slab method). */
static void clip_to_cube(const float *origin, const float *dir, uint32_t n_dims, float *t0, float *t1) {
    float lo = -INFINITY, hi = INFINITY;
    for (uint32_t d = 0; d < n_dims; ++d) {
        if (fabsf(dir[d]) < 1e-12f) {
            continue; /* parallel to this slab: inside it, since the target is */
        }
        float a = (0.0f - origin[d]) / dir[d], b = (1.0f - origin[d]) / dir[d];
        if (a > b) {
            const float swap = a;
            a = b, b = swap;
        }
        lo = a > lo ? a : lo;
        hi = b < hi ? b : hi;
    }
    *t0 = lo;
    *t1 = hi;
}

static void make_rays(const gj_bench_input *input, uint32_t n_dims, float *x) {
    uint64_t state = input->seed ? input->seed : 1;
    float target[32], dir[32], origin[32];
    for (uint32_t r = 0; r < input->rays; ++r) {
        for (uint32_t d = 0; d < n_dims; ++d) target[d] = 0.25f + 0.5f * uniform01(&state);
        random_direction(&state, n_dims, dir);
        for (uint32_t d = 0; d < n_dims; ++d) origin[d] = target[d] - 2.0f * dir[d];
        float t0, t1;
        clip_to_cube(origin, dir, n_dims, &t0, &t1);
        const float step = (t1 - t0) / (float)input->samples;
        for (uint32_t s = 0; s < input->samples; ++s) {
            const float t = t0 + step * ((float)s + uniform01(&state)); /* stratified: sorted along the ray */
            float *p = x + ((size_t)r * input->samples + s) * n_dims;
            for (uint32_t d = 0; d < n_dims; ++d) {
                const float v = origin[d] + t * dir[d];
                p[d] = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
            }
        }
    }
}

static int read_points(const char *cmd, const char *path, size_t count, float *x) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        gj_cli_error(cmd, "--input file:%s: %s", path, strerror(errno));
        return GJ_CLI_FAILURE;
    }
    const size_t got = fread(x, sizeof(float), count, f);
    const int failed = ferror(f);
    fclose(f);
    if (got != count || failed) {
        gj_cli_error(cmd, "--input file:%s: read %zu of %zu floats", path, got, count);
        return GJ_CLI_FAILURE;
    }
    return GJ_CLI_OK;
}

int gj_bench_make_points(const char *cmd, const gj_bench_input *input, uint32_t n_dims, size_t n, float *x) {
    switch (input->kind) {
    case GJ_BENCH_INPUT_RAYS:
        if (n_dims > 32) {
            gj_cli_error(cmd, "--input rays: at most 32 dimensions (got %u)", n_dims);
            return GJ_CLI_FAILURE;
        }
        make_rays(input, n_dims, x);
        return GJ_CLI_OK;
    case GJ_BENCH_INPUT_FILE:
        return read_points(cmd, input->path, n * n_dims, x);
    default: {
        uint64_t state = input->seed;
        gj_cli_random_floats(&state, x, n * n_dims, 0.0f, 1.0f);
        return GJ_CLI_OK;
    }
    }
}
