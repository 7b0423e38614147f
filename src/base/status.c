/* Status names and messages, generated from the one list in gridjit.h. */
#include "gridjit.h"

#include <stdlib.h>

const char *gj_status_name(gj_status status) {
    switch (status) {
#define GJ__STATUS_NAME(name, number, message) \
    case GJ_##name:                            \
        return "GJ_" #name;
        GJ_STATUS_MAP(GJ__STATUS_NAME)
#undef GJ__STATUS_NAME
    }
    return "GJ_UNKNOWN_STATUS";
}

const char *gj_status_message(gj_status status) {
    switch (status) {
#define GJ__STATUS_MESSAGE(name, number, message) \
    case GJ_##name:                               \
        return message;
        GJ_STATUS_MAP(GJ__STATUS_MESSAGE)
#undef GJ__STATUS_MESSAGE
    }
    return "unknown status";
}

unsigned gj_version_number(void) {
    return GJ_VERSION_NUMBER;
}

const char *gj_version_string(void) {
    return GJ_VERSION_STRING;
}

void gj_free(void *ptr) {
    free(ptr);
}
