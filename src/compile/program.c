/* gj_program: creation, destruction and the public getters. */
#include "compile/program.h"

#include <stdlib.h>
#include <string.h>

struct gj_program *gj__program_new(void) {
    struct gj_program *prog = calloc(1, sizeof *prog);
    if (prog && (!(prog->log = strdup("")) || !(prog->source = strdup("")))) {
        gj_program_destroy(prog);
        return NULL;
    }
    return prog;
}

static void free_names(char **names, size_t n) {
    for (size_t i = 0; names && i < n; i++) {
        free(names[i]);
    }
    free(names);
}

void gj_program_destroy(gj_program *prog) {
    if (!prog) {
        return;
    }
    free(prog->binary);
    free_names(prog->kernel_names, prog->n_kernels);
    free_names(prog->lowered_names, prog->n_kernels);
    free(prog->log);
    free(prog->source);
    free(prog);
}

gj_binary_kind gj_program_kind(const gj_program *prog) {
    return prog ? prog->kind : GJ_BINARY_NONE;
}

const void *gj_program_binary(const gj_program *prog, size_t *size) {
    if (size) {
        *size = prog ? prog->binary_size : 0;
    }
    return prog ? prog->binary : NULL;
}

const char *gj_program_arch(const gj_program *prog) {
    return prog ? prog->arch : NULL;
}

size_t gj_program_n_kernels(const gj_program *prog) {
    return prog ? prog->n_kernels : 0;
}

const char *gj_program_kernel_name(const gj_program *prog, size_t i) {
    return prog && i < prog->n_kernels ? prog->kernel_names[i] : NULL;
}

const char *gj_program_lowered_name(const gj_program *prog, size_t i) {
    return prog && i < prog->n_kernels ? prog->lowered_names[i] : NULL;
}

const char *gj_program_log(const gj_program *prog) {
    return prog ? prog->log : NULL;
}

const char *gj_program_source(const gj_program *prog) {
    return prog ? prog->source : NULL;
}

double gj_program_compile_ms(const gj_program *prog) {
    return prog ? prog->compile_ms : 0.0;
}

gj_cache_status gj_program_cache_status(const gj_program *prog) {
    return prog ? prog->cache_status : GJ_CACHE_OFF;
}

const char *gj_program_cache_key(const gj_program *prog) {
    return prog ? prog->key : "";
}

const char *gj__program_lowered(const gj_program *prog, const char *expression) {
    for (size_t i = 0; prog && i < prog->n_kernels; ++i) {
        if (prog->kernel_names[i] && strcmp(prog->kernel_names[i], expression) == 0) {
            return prog->lowered_names[i];
        }
    }
    return NULL;
}
