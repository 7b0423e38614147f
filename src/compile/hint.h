/* What to tell a user whose program is in no cache layer while NVRTC is missing: the
 * command that makes the entry where NVRTC exists. */
#ifndef GJ_COMPILE_HINT_H
#define GJ_COMPILE_HINT_H

#include "compile/arch.h"
#include "model/encoding.h"

#include <stddef.h>

/* `gridjit precompile --config '...' --dims D --arch A [--ptx] [--pass ...] [--cache-dir DIR]`
 * (a module's programs) or the same with `gridjit compile` (the whole unit of gj_compile),
 * for enc and resolved opts (NULL enc: generic advice). dir: the writable cache directory
 * ("" when none). Always NUL-terminated, truncated to size. */
void gj__precompile_hint(const struct gj_encoding *enc, const gj_codegen_options *opts, int module_program,
                         const gj__arch *arch, const char *dir, char *out, size_t size);

#endif
