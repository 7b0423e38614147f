/* Greedy all-pairs covering over the allowed part of a full product. */
#include "pairwise.h"

#include <stdlib.h>
#include <string.h>

typedef struct pair_table {
    int n_params;
    unsigned char covered[GJ_PW_MAX_PARAMS][GJ_PW_MAX_PARAMS][GJ_PW_MAX_VALUES][GJ_PW_MAX_VALUES];
    unsigned char needed[GJ_PW_MAX_PARAMS][GJ_PW_MAX_PARAMS][GJ_PW_MAX_VALUES][GJ_PW_MAX_VALUES];
} pair_table;

static size_t product_size(const gj_pw_param *params, int n_params) {
    size_t total = 1;
    for (int p = 0; p < n_params; ++p) {
        total *= (size_t)params[p].n_values;
    }
    return total;
}

static void decode_row(const gj_pw_param *params, int n_params, size_t index, int *row) {
    for (int p = n_params - 1; p >= 0; --p) {
        row[p] = (int)(index % (size_t)params[p].n_values);
        index /= (size_t)params[p].n_values;
    }
}

static int count_new(const pair_table *t, const int *row) {
    int count = 0;
    for (int a = 0; a < t->n_params; ++a) {
        for (int b = a + 1; b < t->n_params; ++b) {
            count += t->needed[a][b][row[a]][row[b]] && !t->covered[a][b][row[a]][row[b]];
        }
    }
    return count;
}

static void mark(pair_table *t, const int *row, int needed) {
    for (int a = 0; a < t->n_params; ++a) {
        for (int b = a + 1; b < t->n_params; ++b) {
            if (needed) {
                t->needed[a][b][row[a]][row[b]] = 1;
            } else {
                t->covered[a][b][row[a]][row[b]] = 1;
            }
        }
    }
}

static void fill_needed(pair_table *t, const gj_pw_param *params, int n_params, gj_pw_allowed_fn allowed) {
    int row[GJ_PW_MAX_PARAMS];
    const size_t total = product_size(params, n_params);
    for (size_t i = 0; i < total; ++i) {
        decode_row(params, n_params, i, row);
        if (allowed(row)) {
            mark(t, row, 1);
        }
    }
}

size_t gj_pw_generate(const gj_pw_param *params, int n_params, gj_pw_allowed_fn allowed, int *rows, size_t max_rows) {
    pair_table *t = calloc(1, sizeof *t);
    if (!t || n_params > GJ_PW_MAX_PARAMS) {
        free(t);
        return 0;
    }
    t->n_params = n_params;
    fill_needed(t, params, n_params, allowed);
    const size_t total = product_size(params, n_params);
    size_t n_rows = 0;
    int row[GJ_PW_MAX_PARAMS], best_row[GJ_PW_MAX_PARAMS];
    while (n_rows < max_rows) {
        int best = 0;
        for (size_t i = 0; i < total; ++i) {
            decode_row(params, n_params, i, row);
            if (!allowed(row)) {
                continue;
            }
            const int gain = count_new(t, row);
            if (gain > best) {
                best = gain;
                memcpy(best_row, row, sizeof row);
            }
        }
        if (best == 0) {
            break;
        }
        mark(t, best_row, 0);
        memcpy(rows + n_rows * (size_t)n_params, best_row, sizeof(int) * (size_t)n_params);
        ++n_rows;
    }
    free(t);
    return n_rows;
}

int gj_pw_check(const gj_pw_param *params, int n_params, gj_pw_allowed_fn allowed, const int *rows, size_t n_rows) {
    pair_table *t = calloc(1, sizeof *t);
    if (!t) {
        return 0;
    }
    t->n_params = n_params;
    fill_needed(t, params, n_params, allowed);
    for (size_t r = 0; r < n_rows; ++r) {
        mark(t, rows + r * (size_t)n_params, 0);
    }
    int ok = 1;
    for (int a = 0; a < n_params; ++a) {
        for (int b = a + 1; b < n_params; ++b) {
            for (int va = 0; va < params[a].n_values; ++va) {
                for (int vb = 0; vb < params[b].n_values; ++vb) {
                    ok &= !t->needed[a][b][va][vb] || t->covered[a][b][va][vb];
                }
            }
        }
    }
    free(t);
    return ok;
}
