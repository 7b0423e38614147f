/* Several NVRTC programs at once: NVRTC 13 compiles concurrently in one process, so the
 * programs of a module (or of a precompile run) compile on a few threads. */
#ifndef GJ_COMPILE_PARALLEL_H
#define GJ_COMPILE_PARALLEL_H

#include "compile/compiler.h"

typedef struct gj__compile_job {
    const gj__compile_request *request; /* in */
    gj_program *program;                /* out: as gj__compile gives it */
    gj_status status;
    char message[GJ__MESSAGE_MAX];      /* the failure's message (it is per thread) */
} gj__compile_job;

/* Runs gj__compile for every job on up to threads threads (0: one per online CPU), never
 * more than there are jobs; returns when all are done. One job runs on the caller. */
void gj__compile_all(gj__compiler *c, gj__compile_job *jobs, size_t n_jobs, unsigned threads);

#endif
