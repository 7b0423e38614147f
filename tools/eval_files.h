/* What `gridjit eval` of an encoding (tools/cmd_eval.c) and of a network or model
 * (tools/eval_network.c) share: its parsed options and its float32 files, read whole and
 * checked against the sizes they must have, written atomically (docs/runtime.md). */
#ifndef GJ_EVAL_FILES_H
#define GJ_EVAL_FILES_H

#include "cli_gpu.h"

#include <stddef.h>

typedef struct gj_cli_eval_args {
    const char *config, *dims, *output_dims, *points, *params, *dl_dy, *dl_ddldx, *max_level, *out_dir, *arch;
} gj_cli_eval_args;

/* Reads a whole float32 file (little-endian); *count receives the number of floats. A size
 * that is not a multiple of 4, a file that is not a regular one or a short read is refused
 * with a message naming what (the option) and path. */
int gj_cli_eval_read_floats(const char *what, const char *path, float **values, size_t *count);
/* The same for a file that must hold exactly expected floats (shape names them: "N * D"). */
int gj_cli_eval_read_exact(const char *what, const char *path, size_t expected, const char *shape, float **values);
/* The points file: N * dims floats, point-major (dims_name says what dims is: "D", or
 * "n_input_dims"), N at most GJ_MAX_POINTS; *n receives N. */
int gj_cli_eval_read_points(const char *path, uint32_t dims, const char *dims_name, float **x, size_t *n);
/* N * n_output_dims, refused (a message naming --points) where it does not fit in a size_t. */
int gj_cli_eval_output_count(size_t n, uint32_t n_out, size_t *count);
/* Writes count floats to DIR/NAME atomically, little-endian (values may be byte-swapped). */
int gj_cli_eval_write_floats(const char *dir, const char *name, float *values, size_t count);
/* Downloads count elements of precision from device and writes them as float32 to DIR/NAME. */
int gj_cli_eval_save(gj_cli_gpu *gpu, const char *dir, const char *name, const void *device, size_t count,
                     gj_precision precision);

#endif
