/* The NVRTC options gridjit passes: stated in one place, written into every generated
 * source's header comment, and covered by the cache key. */
#ifndef GJ_COMPILE_OPTIONS_H
#define GJ_COMPILE_OPTIONS_H

#include "compile/arch.h"

#include <stddef.h>

/* Room that gj__compile_options needs: entries (with the NULL) and buffer bytes. */
#define GJ__MAX_COMPILE_OPTIONS 12
#define GJ__COMPILE_OPTIONS_BUFFER 64

/* What varies in the options (flags of gj__compile_options). */
#define GJ__OPTIONS_LINEINFO 1u /* -lineinfo: source line tables for profilers and debuggers */
#define GJ__OPTIONS_SPLIT 2u    /* split compilation: a whole unit's kernels optimised on threads */
/* --Ofast-compile=min, mid or max (1, 2, 3 in these two bits): faster compiles of other code,
 * a measuring knob (GRIDJIT_FAST_COMPILE; docs/benchmarks.md §11) */
#define GJ__OPTIONS_FAST_SHIFT 2u
#define GJ__OPTIONS_FAST_MASK (3u << GJ__OPTIONS_FAST_SHIFT)

/* The flags for a unit: -lineinfo when lineinfo, split compilation when split, and the fast
 * compile level GRIDJIT_FAST_COMPILE names (min, mid or max; unset or anything else: none). */
unsigned gj__compile_option_flags(int lineinfo, int split);

/* The options for arch, NULL-terminated, with what flags asks for. Writes at most max
 * entries into options (pointers to static storage or into buffer). Returns the count,
 * or 0 when max or buffer_size is too small. */
size_t gj__compile_options(const char *arch_name, unsigned flags, const char **options, size_t max, char *buffer,
                           size_t buffer_size);

/* The same, one per line (each ending in a newline), for arch_name (not parsed: "<target>"
 * works). malloc()ed; NULL on OOM. */
char *gj__compile_options_text(const char *arch_name, unsigned flags);

#endif
