/* "Did you mean": the closest of a list of names to what was typed (commands, options,
 * actions). The same measure as the library's for configuration keys (src/model/config.c,
 * which the CLI cannot call: it uses only the public header): a case-insensitive edit
 * distance, close meaning fewer than 3 edits and fewer than the name's own length. */
#ifndef GJ_CLI_SUGGEST_H
#define GJ_CLI_SUGGEST_H

#include <stddef.h>

/* Levenshtein distance between the first len characters of word and name, ASCII letters
 * compared without case; strings of 40 characters or more count as 40 apart. */
size_t gj_cli_edit_distance(const char *word, size_t len, const char *name);

/* The name of names[0..n) closest to word[0..len), when it is close; NULL otherwise. */
const char *gj_cli_closest(const char *word, size_t len, const char *const *names, size_t n);

#endif
