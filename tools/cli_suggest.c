/* "Did you mean" for the command line (cli_suggest.h). */
#include "cli_suggest.h"

#include <string.h>

enum { MAX_LENGTH = 40 };

static int lower_ascii(int c) {
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

size_t gj_cli_edit_distance(const char *word, size_t len, const char *name) {
    const size_t name_len = strlen(name);
    if (len >= MAX_LENGTH || name_len >= MAX_LENGTH) {
        return MAX_LENGTH;
    }
    size_t row[MAX_LENGTH + 1]; /* one row of the table, distances to name's prefixes */
    for (size_t j = 0; j <= name_len; ++j) {
        row[j] = j;
    }
    for (size_t i = 1; i <= len; ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= name_len; ++j) {
            const size_t up = row[j];
            const int same = lower_ascii((unsigned char)word[i - 1]) == lower_ascii((unsigned char)name[j - 1]);
            size_t best = diagonal + !same;
            best = up + 1 < best ? up + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            row[j] = best;
            diagonal = up;
        }
    }
    return row[name_len];
}

const char *gj_cli_closest(const char *word, size_t len, const char *const *names, size_t n) {
    const char *closest = NULL;
    size_t best = 3; /* fewer edits than this */
    for (size_t i = 0; i < n; ++i) {
        const size_t d = gj_cli_edit_distance(word, len, names[i]);
        if (d < best && d < strlen(names[i])) {
            best = d;
            closest = names[i];
        }
    }
    return closest;
}
