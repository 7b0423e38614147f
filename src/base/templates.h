/* CUDA templates from templates/, embedded at build time (cmake/embed_templates.cmake). */
#ifndef GJ_BASE_TEMPLATES_H
#define GJ_BASE_TEMPLATES_H

#include <stddef.h>

typedef struct gj__template {
    const char *name; /* file name under templates/, e.g. "prelude.cuh" */
    const char *text; /* NUL-terminated contents */
    size_t size;      /* strlen(text) */
} gj__template;

/* Terminated by an entry whose name is NULL. */
extern const gj__template gj__templates[];
extern const unsigned gj__n_templates;

/* The template of that name, or NULL. */
const gj__template *gj__template_find(const char *name);

#endif
