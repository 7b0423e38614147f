/* Generated sources as NVRTC units (see encoding_unit.h). */
#include "compile/encoding_unit.h"

#include "codegen/codegen.h"
#include "codegen/kernels.h"
#include "compile/options.h"

#include <stdlib.h>
#include <string.h>

/* A whole unit with kernels holds several kernel groups: split compilation pays there. */
static int whole_unit_of_kernels(const gj_codegen_options *opts, gj__part part) {
    return part == GJ__PART_ALL && !opts->device_functions_only;
}

char *gj__encoding_source(gj__compiler *c, const struct gj_encoding *enc, const gj_codegen_options *opts,
                          gj__part part) {
    /* The architecture is left open: one source serves every target. */
    const unsigned flags = gj__compile_option_flags(gj__compiler_lineinfo(c), whole_unit_of_kernels(opts, part));
    char *options = gj__compile_options_text("<target>", flags);
    char *source = options ? gj__codegen(enc, opts, part, options) : NULL;
    free(options);
    return source;
}

gj_status gj__encoding_unit_make(gj__compiler *c, const struct gj_encoding *enc, const gj_codegen_options *opts,
                                 gj__part part, const gj__arch *arch, int use_cache, gj__encoding_unit *out) {
    memset(out, 0, sizeof *out);
    out->part = part;
    out->source = gj__encoding_source(c, enc, opts, part);
    out->names = gj__codegen_kernel_names(opts, part, &out->n_names);
    if (!out->source || !out->names) {
        gj__encoding_unit_free(out);
        return gj__fail(c->diag, GJ_ERROR_OUT_OF_MEMORY, "out of memory generating source");
    }
    gj__compile_request *r = &out->request;
    r->unit.source = out->source;
    r->unit.file_name = GJ__PROGRAM_NAME;
    r->unit.names = (const char *const *)out->names;
    r->unit.n_names = out->n_names;
    r->arch = *arch;
    r->use_cache = use_cache;
    r->enc = enc;
    r->opts = opts;
    r->module_program = part != GJ__PART_ALL;
    r->split = whole_unit_of_kernels(opts, part);
    return GJ_OK;
}

void gj__encoding_unit_free(gj__encoding_unit *u) {
    free(u->source);
    gj__free_string_list(u->names, u->n_names);
    memset(u, 0, sizeof *u);
}
