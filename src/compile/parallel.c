/* Compiling several programs at once (see parallel.h). Threads are made per call: a
 * handful of threads cost microseconds beside compiles of tens of milliseconds, and
 * nothing is left running between calls. */
#include "compile/parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct crew {
    gj__compiler *compiler;
    gj__compile_job *jobs;
    size_t n_jobs;
    atomic_size_t next;
} crew;

static void run_job(gj__compiler *c, gj__compile_job *job) {
    job->program = NULL;
    job->message[0] = '\0';
    job->status = gj__compile(c, job->request, &job->program);
    if (job->status != GJ_OK) {
        snprintf(job->message, sizeof job->message, "%s", gj__diag_message(c->diag));
    }
}

static void *work(void *arg) {
    crew *w = arg;
    for (size_t i; (i = atomic_fetch_add(&w->next, 1)) < w->n_jobs;) {
        run_job(w->compiler, &w->jobs[i]);
    }
    return NULL;
}

/* Online CPUs (at least 1). */
static unsigned cpu_count(void) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1u;
}

void gj__compile_all(gj__compiler *c, gj__compile_job *jobs, size_t n_jobs, unsigned threads) {
    crew w = {.compiler = c, .jobs = jobs, .n_jobs = n_jobs};
    atomic_init(&w.next, 0);
    size_t helpers = threads ? threads : cpu_count();
    helpers = helpers < n_jobs ? helpers : n_jobs;
    helpers = helpers ? helpers - 1 : 0; /* the caller is one of the workers */
    pthread_t ids[64];
    size_t started = 0;
    while (started < helpers && started < sizeof ids / sizeof ids[0] &&
           pthread_create(&ids[started], NULL, work, &w) == 0) {
        started++; /* a thread that cannot be made leaves its jobs to the others */
    }
    work(&w);
    for (size_t i = 0; i < started; i++) {
        pthread_join(ids[i], NULL);
    }
}
