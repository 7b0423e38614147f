/* Per-level scale, resolution, table size and parameter offset (docs/design.md §2). */
#ifndef GJ_MODEL_LAYOUT_H
#define GJ_MODEL_LAYOUT_H

#include "model/config.h"

/* How the corners of one level find their table entry (docs/design.md §4). */
typedef enum gj__index_mode {
    GJ__INDEX_DENSE = 0, /* sum_d v_d * resolution^d in uint32 (cannot overflow), then mod entries */
    GJ__INDEX_HASH = 1,  /* hash(v) mod entries */
    GJ__INDEX_WRAP = 2   /* resolution > gj__max_base(D): sum_d v_d * resolution^d evaluated
                            exactly modulo entries (Horner). Tiled grids, and Dense grids of
                            D > 10 (max_base 0; there resolution^D <= 2^31 - 1, so this is the
                            plain dense index). Never Hash. The reference degenerates to
                            index 0 here. */
} gj__index_mode;

typedef struct gj__level {
    float scale;         /* exp2f(l * log2f(per_level_scale)) * base_resolution - 1 */
    uint32_t resolution; /* ceil(scale) + 1 (scale below 0 counts as 0) */
    uint32_t entries;    /* table entries (each F values) */
    uint64_t offset;     /* first entry; the first parameter is offset * F */
    gj__index_mode index_mode;
} gj__level;

typedef struct gj__layout {
    uint32_t n_levels;
    gj__level levels[GJ_MAX_LEVELS];
    uint64_t n_entries;     /* sum of entries */
    uint64_t n_params;      /* n_entries * F */
    uint32_t n_output_dims; /* n_levels * F */
} gj__layout;

/* MAX_BASES of docs/design.md §4: the largest resolution whose D-th power fits in uint32. */
uint32_t gj__max_base(uint32_t n_dims);

/*
 * Computes the layout. Fails with GJ_ERROR_LAYOUT_TOO_LARGE and a message naming
 * the level and the key to change when a level cannot be represented (a resolution
 * that does not fit in 32 bits, a Dense level of more than 2^31 - 1 entries).
 */
gj_status gj__layout_compute(const gj__config *config, gj__layout *out, char *err, size_t err_size);

#endif
