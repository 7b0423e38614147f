/* Monotonic wall time, for compile and load timings. */
#ifndef GJ_BASE_CLOCK_H
#define GJ_BASE_CLOCK_H

#include <time.h>

static inline double gj__now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

#endif
