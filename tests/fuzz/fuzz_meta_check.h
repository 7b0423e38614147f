/* The checks of the program metadata decoder (src/compile/meta.c, gj__meta_decode) shared
 * by the meta target and the entry target (on the metadata of every entry it accepts).
 * Header-only, like fuzz_common.h. */
#ifndef GJ_FUZZ_META_CHECK_H
#define GJ_FUZZ_META_CHECK_H

#include "fuzz_common.h"

#include "compile/meta.h"

/* gj__meta_decode on size bytes, and checks of what it gives: what it accepts is complete,
 * a refusal leaves the struct zeroed. Returns 1 when accepted (free *meta with
 * gj__meta_free), 0 when refused. */
static inline int gjf_decode_meta(const void *bytes, size_t size, gj__program_meta *meta) {
    memset(meta, 0xa5, sizeof *meta); /* the decoder must set every field */
    if (gj__meta_decode(bytes, size, meta) != 0) {
        GJF_CHECK(meta->target == NULL && meta->gridjit_version == NULL && meta->log == NULL && meta->names == NULL &&
                      meta->lowered == NULL && meta->n_kernels == 0,
                  "a refusal left fields set");
        return 0;
    }
    GJF_CHECK(meta->kind == GJ_BINARY_CUBIN || meta->kind == GJ_BINARY_PTX, "kind %d", (int)meta->kind);
    GJF_CHECK(meta->target && meta->gridjit_version && meta->log, "a string is missing");
    GJF_CHECK(meta->n_kernels == 0 || (meta->names && meta->lowered), "kernel arrays missing");
    for (size_t i = 0; i < meta->n_kernels; i++) {
        GJF_CHECK(meta->names[i] && meta->lowered[i], "kernel %zu", i);
    }
    GJF_CHECK(memchr(meta->nvrtc.build, '\0', sizeof meta->nvrtc.build) != NULL, "nvrtc build not terminated");
    return 1;
}

#endif
