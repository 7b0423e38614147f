/* Code-generation options (gj_codegen_options): defaults and checks. */
#ifndef GJ_CODEGEN_OPTIONS_H
#define GJ_CODEGEN_OPTIONS_H

#include "base/diag.h"

/* Fills unset (zero) fields of in with defaults and checks them into *out; in NULL: the
 * defaults. GJ_ERROR_INVALID_ARGUMENT with a message on d otherwise (including a struct
 * that gj_codegen_options_init did not prepare: see struct_size). */
gj_status gj__codegen_options_resolve(const gj__diag *d, const gj_codegen_options *in, gj_codegen_options *out);
/* Whether name is a C identifier (letters, digits, '_'; not starting with a digit). Any
 * length; NULL is not. */
int gj__is_identifier(const char *name);

#endif
