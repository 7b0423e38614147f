/* gj_encoding: a parsed configuration and its layout, immutable once made. */
#ifndef GJ_ENCODING_H
#define GJ_ENCODING_H

#include "config.h"
#include "layout.h"

struct gj_encoding {
    gj__config config;
    gj__layout layout;
};

#endif
