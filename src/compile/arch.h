/* Target architectures: "sm_90a" -> cubin for 90 with the "a" features, "compute_80" -> PTX. */
#ifndef GJ_COMPILE_ARCH_H
#define GJ_COMPILE_ARCH_H

#include "base/diag.h"

typedef struct gj__arch {
    int sm;      /* e.g. 90 */
    char suffix; /* 0, 'a' or 'f' */
    gj_binary_kind kind;
    char name[24]; /* canonical spelling, e.g. "sm_90a" */
} gj__arch;

/* The accepted forms, for messages. */
#define GJ__ARCH_FORMS                                                                                           \
    "sm_XX, sm_XXa or sm_XXf (cubin) or compute_XX, compute_XXa or compute_XXf (PTX), XX being two or three " \
    "digits, e.g. sm_90a"

/* GJ_ERROR_INVALID_ARGUMENT with a message listing the accepted forms when text is NULL
 * or malformed. Whether NVRTC supports it is checked at compile time. d may be NULL. */
gj_status gj__arch_parse(const gj__diag *d, const char *text, gj__arch *out);

#endif
