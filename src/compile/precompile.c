/* Precompiling a module's programs (see precompile.h). */
#include "compile/precompile.h"

#include "base/clock.h"
#include "compile/encoding_unit.h"
#include "compile/parallel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gj_status gj__precompile_requests(gj__compiler *c, const gj__compile_request *const *requests,
                                  const char *const *names, size_t n, unsigned threads,
                                  gj_precompile_report *report) {
    memset(report, 0, sizeof *report);
    gj__compile_job *jobs = calloc(n ? n : 1, sizeof *jobs);
    if (!jobs) {
        return gj__fail(c->diag, GJ_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < n; ++i) {
        jobs[i].request = requests[i];
    }
    gj__compile_all(c, jobs, n, threads);
    /* The first failure's message, followed by the names of every program that failed (a
     * run without NVRTC fails for each one missing from the cache, and says which). */
    size_t first_failed = n, n_failed = 0;
    char failed[512] = "";
    report->programs = (uint32_t)n;
    for (size_t i = 0; i < n; ++i) {
        if (jobs[i].status != GJ_OK) {
            first_failed = n_failed++ == 0 ? i : first_failed;
            const size_t used = strlen(failed);
            snprintf(failed + used, sizeof failed - used, "%s%s", used ? ", " : "", names[i]);
        } else {
            report->cached += gj_program_cache_status(jobs[i].program) == GJ_CACHE_HIT;
            report->compiled += gj_program_cache_status(jobs[i].program) != GJ_CACHE_HIT;
        }
    }
    gj_status status = GJ_OK;
    if (n_failed == 1) {
        status = gj__fail(c->diag, jobs[first_failed].status, "%s program: %s", names[first_failed],
                          jobs[first_failed].message);
    } else if (n_failed > 1) {
        status = gj__fail(c->diag, jobs[first_failed].status, "%zu of %zu programs failed (%s); the first, %s: %s",
                          n_failed, n, failed, names[first_failed], jobs[first_failed].message);
    }
    for (size_t i = 0; i < n; ++i) {
        gj_program_destroy(jobs[i].program);
    }
    free(jobs);
    if (status == GJ_OK && report->compiled > 0 && gj__store_write_failed(c->store)) {
        char dir[4096];
        gj__store_dir(c->store, c->diag, dir, sizeof dir);
        status = gj__fail(c->diag, GJ_ERROR_IO,
                          "%u compiled program%s could not be stored in the cache directory %s (see the warning)",
                          report->compiled, report->compiled == 1 ? "" : "s", dir[0] ? dir : "(none)");
    }
    return status;
}

gj_status gj__precompile(gj__compiler *c, const struct gj_encoding *enc, const gj_codegen_options *opts,
                         const gj__arch *arch, unsigned threads, gj_precompile_report *report) {
    const double start = gj__now_ms();
    memset(report, 0, sizeof *report);
    gj__encoding_unit units[GJ__PART_COUNT];
    const gj__compile_request *requests[GJ__PART_COUNT];
    const char *names[GJ__PART_COUNT];
    size_t n = 0;
    gj_status status = GJ_OK;
    for (int p = GJ__PART_ALL + 1; status == GJ_OK && p < GJ__PART_COUNT; ++p) {
        if (!gj__part_present((gj__part)p, opts)) {
            continue;
        }
        status = gj__encoding_unit_make(c, enc, opts, (gj__part)p, arch, 1, &units[n]);
        if (status == GJ_OK) {
            requests[n] = &units[n].request;
            names[n] = gj__part_name(units[n].part);
            n++;
        }
    }
    if (status == GJ_OK) {
        status = gj__precompile_requests(c, requests, names, n, threads, report);
    }
    for (size_t i = 0; i < n; ++i) {
        gj__encoding_unit_free(&units[i]);
    }
    report->ms = gj__now_ms() - start;
    return status;
}
