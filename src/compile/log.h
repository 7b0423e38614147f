/* NVRTC logs made readable: after each diagnostic of the compiled file, the numbered
 * source lines around the line it names. */
#ifndef GJ_COMPILE_LOG_H
#define GJ_COMPILE_LOG_H

#include <stddef.h>

/* Source lines shown before and after the line a diagnostic names. */
#define GJ__LOG_CONTEXT_LINES 3

/* The log with, after each "FILE(LINE): error" (or warning) diagnostic whose FILE is
 * file_name, the numbered source lines around LINE, the line itself marked with '>'.
 * malloc()ed; NULL on OOM. log and source may be NULL (taken as ""). */
char *gj__annotate_log(const char *log, const char *source, const char *file_name);

/* The number of error lines in log; *first / *first_len: the first of them (the log's
 * first line when none is recognised). */
size_t gj__log_errors(const char *log, const char **first, size_t *first_len);
/* Whether the log's first line is an error about the options (no source position). */
int gj__log_rejects_options(const char *log);

#endif
