/* "Did you mean": the closest of a list of names to what was typed (commands, options,
 * actions). The measure is the library's for configuration keys (src/model/json_reader.c),
 * a case-insensitive edit distance, close meaning fewer than 3 edits; here also fewer
 * than the name's own length, so that a very short name is not offered for an unrelated
 * word. A copy, not a call: the CLI uses only the public header, and a "did you mean" of
 * names the library never sees (commands, options) is no part of its API. */
#ifndef GJ_CLI_SUGGEST_H
#define GJ_CLI_SUGGEST_H

#include <stddef.h>

/* Levenshtein distance between the first len characters of word and name, ASCII letters
 * compared without case; strings of 40 characters or more count as 40 apart. */
size_t gj_cli_edit_distance(const char *word, size_t len, const char *name);

/* The name of names[0..n) closest to word[0..len), when it is close; NULL otherwise. */
const char *gj_cli_closest(const char *word, size_t len, const char *const *names, size_t n);

#endif
