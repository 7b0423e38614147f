/* Placeholder until the NVRTC loader lands. */
#include "nvrtc_loader.h"

void gj__nvrtc_release(struct gj__nvrtc *nvrtc) {
    (void)nvrtc;
}
