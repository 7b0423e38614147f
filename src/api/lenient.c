/* The shared part of the lenient constructors (see lenient.h). */
#include "api/lenient.h"

#include "model/json_reader.h"

gj_status gj__check_config_flags(const gj__diag *diag, const char *call, uint32_t flags) {
    if (flags & ~GJ__CONFIG_KNOWN_FLAGS) {
        return gj__fail(diag, GJ_ERROR_INVALID_ARGUMENT, "%s: unknown flag bits 0x%x (known: GJ_CONFIG_IGNORE_UNKNOWN_KEYS 0x%x)",
                        call, flags & ~GJ__CONFIG_KNOWN_FLAGS, GJ_CONFIG_IGNORE_UNKNOWN_KEYS);
    }
    return GJ_OK;
}

gj_status gj__hand_over_ignored(const gj__diag *diag, const char *call, gj__strbuf *skipped, char **ignored) {
    gj_status status = GJ_OK;
    if (ignored && (skipped->len || skipped->failed)) {
        *ignored = gj__sb_take(skipped);
        if (!*ignored) {
            status = gj__fail(diag, GJ_ERROR_OUT_OF_MEMORY, "%s: out of memory", call);
        }
    }
    gj__sb_free(skipped);
    return status;
}
