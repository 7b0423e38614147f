/* A pairwise (all-pairs) covering set of configurations, for compile coverage. */
#ifndef GJ_TEST_PAIRWISE_H
#define GJ_TEST_PAIRWISE_H

#include <stddef.h>

#define GJ_PW_MAX_PARAMS 12
#define GJ_PW_MAX_VALUES 8

typedef struct gj_pw_param {
    const char *name;
    int n_values;
} gj_pw_param;

/* Returns 1 when the row (one value index per parameter) is an allowed combination. */
typedef int (*gj_pw_allowed_fn)(const int *row);

/*
 * Greedy all-pairs: from the allowed rows of the full product, repeatedly takes the
 * one covering the most still-uncovered (parameter, value) pairs, until every pair
 * that occurs in some allowed row is covered. Deterministic. Returns the number of
 * rows written to rows (each n_params ints), at most max_rows.
 */
size_t gj_pw_generate(const gj_pw_param *params, int n_params, gj_pw_allowed_fn allowed, int *rows, size_t max_rows);

/* 1 if every pair of values that some allowed row contains is contained in rows. */
int gj_pw_check(const gj_pw_param *params, int n_params, gj_pw_allowed_fn allowed, const int *rows, size_t n_rows);

#endif
