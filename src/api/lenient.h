/* What gj_encoding_create_ex and gj_network_create_ex share: the check of their flags and
 * the hand-over of the skipped keys' report (GJ_CONFIG_IGNORE_UNKNOWN_KEYS). */
#ifndef GJ_API_LENIENT_H
#define GJ_API_LENIENT_H

#include "base/diag.h"
#include "base/strbuf.h"

/* GJ_OK, or GJ_ERROR_INVALID_ARGUMENT naming the unknown bits of flags (call: the caller). */
gj_status gj__check_config_flags(const gj__diag *diag, const char *call, uint32_t flags);

/* After a successful make: *ignored (when the caller asked) gets the report in skipped,
 * or stays NULL when nothing was skipped; skipped is freed either way. Out of memory:
 * GJ_ERROR_OUT_OF_MEMORY, and the caller destroys what it made. */
gj_status gj__hand_over_ignored(const gj__diag *diag, const char *call, gj__strbuf *skipped, char **ignored);

#endif
