/* Numbers printed the same whatever locale the application has set. */
#ifndef GJ_BASE_FORMAT_H
#define GJ_BASE_FORMAT_H

#include <stddef.h>

/* value as "%.9g" (nine significant digits: reads back as the same float), with '.' as
 * the decimal point even where LC_NUMERIC says ',' (printf follows it; JSON and CUDA
 * source do not). */
void gj__format_float(char *out, size_t size, float value);

#endif
