/* Lookup of embedded templates by name. */
#include "base/templates.h"

#include <string.h>

const gj__template *gj__template_find(const char *name) {
    for (unsigned i = 0; i < gj__n_templates; ++i) {
        if (strcmp(gj__templates[i].name, name) == 0) {
            return &gj__templates[i];
        }
    }
    return NULL;
}
