/* The NVRTC options, in the one place they are stated. */
#include "compile/options.h"

#include "base/cubin_macro.h"
#include "base/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Every option after --gpu-architecture. Deliberately absent: --use_fast_math
 * (approximate division, sqrt and flushed denormals would move the results away from
 * the double-precision reference the tests compare against).
 */
static const char *const fixed_options[] = {
    /* The templates use C++17; stated so that another NVRTC's default dialect cannot
     * change what the source means. */
    "-std=c++17",
    /* Contract a*b+c into FMA: NVRTC's default, pinned because it changes results in
     * the last bits (and tiny-cuda-nn compiles with it too). */
    "--fmad=true",
    /* Lets NVVM merge neighbouring feature loads and stores into vector accesses;
     * affects speed only. */
    "--extra-device-vectorization",
    /* Unannotated helper functions in the templates are device functions. */
    "--device-as-default-execution-space",
};

/* Source line tables for Nsight Compute and cuda-gdb: the code is unchanged, but they
 * are three quarters of a cubin's bytes and cost compile time, so only when asked. */
static const char lineinfo_option[] = "-lineinfo";

/* A whole unit holds every kernel group; NVVM optimises them in two partitions on two
 * threads, which takes a quarter off the wall time of `gridjit compile` on two cores. The
 * count is fixed, not the machine's: the output depends on it, and the same key must
 * mean the same binary everywhere (for a fixed count it is deterministic). Module
 * programs hold one kernel group each and compile on threads of their own instead. */
static const char split_option[] = "-split-compile=2";

/* NVRTC's --Ofast-compile levels (CUDA 12.8 and later): less optimisation for a faster
 * compile. Only on request (GRIDJIT_FAST_COMPILE), to measure what the compile time buys: the
 * code differs (fewer loops unrolled at mid, generic loads at min; on an H200 the kernels ran
 * 2.6-6.6 times slower at mid, 1.4-2.4 times at min), and being an option it is part of the
 * cache key, so such binaries never stand in for the default ones. */
static const char *const fast_options[] = {"--Ofast-compile=min", "--Ofast-compile=mid", "--Ofast-compile=max"};

/* The level GRIDJIT_FAST_COMPILE names: 1 min, 2 mid, 3 max; 0 none. */
static unsigned fast_level_from_env(void) {
    const char *env = getenv("GRIDJIT_FAST_COMPILE");
    for (unsigned i = 0; env && i < sizeof fast_options / sizeof fast_options[0]; i++) {
        if (strcmp(env, fast_options[i] + strlen("--Ofast-compile=")) == 0) {
            return i + 1;
        }
    }
    return 0;
}

/* Defined for cubin targets alone (base/cubin_macro.h): generated code may rely on running
 * on the architecture it was compiled for, which PTX may not. */
static const char cubin_option[] = "-D" GJ__CUBIN_MACRO;

/* Whether arch_name ("sm_90a", "compute_80") asks for a cubin (0 for "<target>", open). */
static int is_cubin(const char *arch_name) {
    gj__arch arch;
    return gj__arch_parse(NULL, arch_name, &arch) == GJ_OK && arch.kind == GJ_BINARY_CUBIN;
}

unsigned gj__compile_option_flags(int lineinfo, int split) {
    return (lineinfo ? GJ__OPTIONS_LINEINFO : 0u) | (split ? GJ__OPTIONS_SPLIT : 0u) |
           fast_level_from_env() << GJ__OPTIONS_FAST_SHIFT;
}

size_t gj__compile_options(const char *arch_name, unsigned flags, const char **options, size_t max, char *buffer,
                           size_t buffer_size) {
    const size_t n_fixed = sizeof fixed_options / sizeof fixed_options[0];
    const int lineinfo = (flags & GJ__OPTIONS_LINEINFO) != 0, split = (flags & GJ__OPTIONS_SPLIT) != 0;
    const int cubin = is_cubin(arch_name);
    const unsigned fast = (flags & GJ__OPTIONS_FAST_MASK) >> GJ__OPTIONS_FAST_SHIFT;
    const size_t n = 1 + n_fixed + (size_t)cubin + (size_t)lineinfo + (size_t)split + (fast != 0);
    if (max < n + 1) { /* and the NULL */
        return 0;
    }
    int length = snprintf(buffer, buffer_size, "--gpu-architecture=%s", arch_name);
    if (length < 0 || (size_t)length >= buffer_size) {
        return 0;
    }
    options[0] = buffer;
    for (size_t i = 0; i < n_fixed; i++) {
        options[i + 1] = fixed_options[i];
    }
    size_t next = 1 + n_fixed;
    if (cubin) {
        options[next++] = cubin_option;
    }
    if (lineinfo) {
        options[next++] = lineinfo_option;
    }
    if (split) {
        options[next++] = split_option;
    }
    if (fast) {
        options[next++] = fast_options[fast - 1];
    }
    options[n] = NULL;
    return n;
}

char *gj__compile_options_text(const char *arch_name, unsigned flags) {
    const char *options[GJ__MAX_COMPILE_OPTIONS];
    char buffer[GJ__COMPILE_OPTIONS_BUFFER];
    const size_t n = gj__compile_options(arch_name, flags, options, GJ__MAX_COMPILE_OPTIONS, buffer, sizeof buffer);
    gj__strbuf sb;
    gj__sb_init(&sb);
    sb.failed = n == 0;
    for (size_t i = 0; i < n; i++) {
        gj__sb_printf(&sb, "%s\n", options[i]);
    }
    gj__arch parsed;
    if (gj__arch_parse(NULL, arch_name, &parsed) != GJ_OK) {
        /* A source's header, its architecture open ("<target>"): what a cubin target adds. */
        gj__sb_printf(&sb, "%s (sm_XX targets alone)\n", cubin_option);
    }
    return gj__sb_take(&sb);
}
