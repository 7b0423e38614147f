/* The inputs `gridjit bench` times the kernels on: uniform random points, samples along
 * rays (the order NeRF-style training and rendering evaluate them in), or a file. */
#ifndef GJ_BENCH_INPUTS_H
#define GJ_BENCH_INPUTS_H

#include <stddef.h>
#include <stdint.h>

typedef enum gj_bench_input_kind {
    GJ_BENCH_INPUT_UNIFORM = 0, /* uniform in [0, 1)^D */
    GJ_BENCH_INPUT_RAYS = 1,    /* rays x samples, each ray's samples consecutive and sorted */
    GJ_BENCH_INPUT_FILE = 2     /* float32 points read from a file */
} gj_bench_input_kind;

typedef struct gj_bench_input {
    gj_bench_input_kind kind;
    uint32_t rays, samples; /* GJ_BENCH_INPUT_RAYS */
    uint64_t seed;
    const char *path;       /* GJ_BENCH_INPUT_FILE */
} gj_bench_input;

/* Parses the --input value: "uniform", "rays" or "file:PATH". */
int gj_bench_parse_input(const char *cmd, const char *text, gj_bench_input *input);

/* The number of points the input gives: n_points for uniform points, rays * samples for
 * rays, the file's size / (4 * n_dims) for a file (which must hold whole points). */
int gj_bench_input_points(const char *cmd, const gj_bench_input *input, uint32_t n_dims, uint32_t n_points,
                          uint32_t *out);

/* Fills x (n points, point-major, D floats each) from the input. Rays start outside the
 * unit cube, point at a random target within a quarter of the cube's centre, and carry
 * `samples` stratified samples between where they enter and leave the cube, in order. */
int gj_bench_make_points(const char *cmd, const gj_bench_input *input, uint32_t n_dims, size_t n, float *x);

/* "uniform", "rays" or "file". */
const char *gj_bench_input_name(gj_bench_input_kind kind);

#endif
