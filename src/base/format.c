/* Locale-independent number formatting (see format.h). */
#include "base/format.h"

#include <locale.h>
#include <stdio.h>
#include <string.h>

void gj__format_float(char *out, size_t size, float value) {
    if (!out || size == 0) {
        return;
    }
    snprintf(out, size, "%.9g", (double)value);
    const char *point = localeconv()->decimal_point;
    const size_t n = point ? strlen(point) : 0;
    char *at = n > 0 && strcmp(point, ".") != 0 ? strstr(out, point) : NULL;
    if (at) {
        *at = '.';
        memmove(at + 1, at + n, strlen(at + n) + 1);
    }
}
