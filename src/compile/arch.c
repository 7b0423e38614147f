/* Parsing target architecture names. */
#include "compile/arch.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static gj_status malformed_arch(const gj__diag *d, const char *text) {
    return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT, "arch: expected " GJ__ARCH_FORMS " (got \"%.64s\")", text);
}

/* The rest of text after prefix, or NULL when text does not start with it. */
static const char *after_prefix(const char *text, const char *prefix) {
    size_t n = strlen(prefix);
    return strncmp(text, prefix, n) == 0 ? text + n : NULL;
}

gj_status gj__arch_parse(const gj__diag *d, const char *text, gj__arch *out) {
    if (!text || !out) {
        return gj__fail(d, GJ_ERROR_INVALID_ARGUMENT, "arch: must not be NULL (expected " GJ__ARCH_FORMS ")");
    }
    gj__arch arch = {0};
    const char *p = after_prefix(text, "sm_");
    arch.kind = GJ_BINARY_CUBIN;
    if (!p) {
        p = after_prefix(text, "compute_");
        arch.kind = GJ_BINARY_PTX;
    }
    if (!p || p[0] == '0') {
        return malformed_arch(d, text);
    }
    size_t digits = 0;
    while (digits < 4 && isdigit((unsigned char)p[digits])) {
        arch.sm = arch.sm * 10 + (p[digits] - '0');
        digits++;
    }
    p += digits;
    if (*p == 'a' || *p == 'f') {
        arch.suffix = *p++;
    }
    if (digits < 2 || digits > 3 || *p != '\0') {
        return malformed_arch(d, text);
    }
    snprintf(arch.name, sizeof arch.name, "%s", text); /* at most "compute_999a" */
    *out = arch;
    return GJ_OK;
}

