/* Loading the fake libcuda (see fake_driver.h). */
#include "fake_driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gj_fake_driver_open(gj_fake_driver *fake) {
    memset(fake, 0, sizeof *fake);
    const char *path = getenv("GRIDJIT_FAKE_DRIVER");
    if (!path || !path[0]) {
        printf("GRIDJIT_FAKE_DRIVER is not set (run the test through ctest)\n");
        return -1;
    }
    fake->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!fake->handle) {
        printf("cannot load the fake driver %s: %s\n", path, dlerror());
        return -1;
    }
    struct {
        const char *name;
        void **slot;
    } symbols[] = {
        {"gjfake_count", (void **)&fake->count},
        {"gjfake_count_all", (void **)&fake->count_all},
        {"gjfake_reset_counts", (void **)&fake->reset_counts},
        {"gjfake_context_create", (void **)&fake->context_create},
        {"gjfake_context_renew", (void **)&fake->context_renew},
        {"gjfake_stream_create", (void **)&fake->stream_create},
        {"gjfake_primary", (void **)&fake->primary},
        {"gjfake_set_current", (void **)&fake->set_current},
        {"gjfake_current", (void **)&fake->current},
        {"gjfake_fail_next_launch", (void **)&fake->fail_next_launch},
        {"gjfake_last_grid_x", (void **)&fake->last_grid_x},
        {"gjfake_last_grid_y", (void **)&fake->last_grid_y},
        {"gjfake_last_block_x", (void **)&fake->last_block_x},
        {"gjfake_last_shared", (void **)&fake->last_shared},
        {"gjfake_set_capability", (void **)&fake->set_capability},
        {"gjfake_set_l2_bytes", (void **)&fake->set_l2_bytes},
        {"gjfake_last_carveout", (void **)&fake->last_carveout},
        {"gjfake_reset_carveout", (void **)&fake->reset_carveout},
        {"gjfake_capture_argument", (void **)&fake->capture_argument},
        {"gjfake_captured_float", (void **)&fake->captured_float},
        {"gjfake_capture_pointer", (void **)&fake->capture_pointer},
        {"gjfake_captured_pointer", (void **)&fake->captured_pointer},
        {"gjfake_captured_grid_x", (void **)&fake->captured_grid_x},
        {"gjfake_set_capturing", (void **)&fake->set_capturing},
        {"gjfake_trace_start", (void **)&fake->trace_start},
        {"gjfake_trace", (void **)&fake->trace},
        {"gjfake_last_priority", (void **)&fake->last_priority},
    };
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; ++i) {
        *symbols[i].slot = dlsym(fake->handle, symbols[i].name);
        if (!*symbols[i].slot) {
            printf("the fake driver %s has no %s\n", path, symbols[i].name);
            return -1;
        }
    }
    setenv("GRIDJIT_DRIVER", path, 1);
    return 0;
}

void gj_fake_driver_close(gj_fake_driver *fake) {
    unsetenv("GRIDJIT_DRIVER");
    /* The library stays loaded: gridjit never dlclose()s a driver either. */
    fake->handle = NULL;
}
