/* gridjit precompile: fills a cache directory with every configuration x architecture
 * (every program a module needs: gj_precompile), or a source of your own for every
 * architecture. Threads, not processes: NVRTC 13 compiles concurrently in one process
 * (two units took 4.1 s one after the other and 2.6 s on two threads). A crash inside
 * NVRTC would end the run, but every finished entry is already published, so running the
 * command again resumes where it stopped. */
#include "cli_common.h"
#include "cli_network.h"
#include "cli_program.h"
#include "cli_source.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const CMD = "precompile";

static void usage(void) {
    printf("Usage: gridjit precompile --config C [--config C ...] [--dims D] [--output-dims N] --arch A[,A...]\n"
           "                          [--ptx] [--pass P] [--gradients fp32|auto] [--cache-dir DIR] [--jobs N]\n"
           "                          [--keep-source]\n"
           "       gridjit precompile --source FILE --encoding NAME=CONFIG[:DIMS]... --kernel K...\n"
           "                          [--network NAME=CONFIG[:IN:OUT]]...\n"
           "                          --arch A[,A...] [--ptx] [--option OPT]... [--cache-dir DIR] [--jobs N]\n"
           "\n"
           "Compiles, for every architecture, every program a module of each encoding\n"
           "configuration needs (one per part: forward, forward with dy/dx, backward,\n"
           "backward with dL/dx, dL/dx alone, the level-group _rows forms of those five,\n"
           "backward-of-backward, the helpers; docs/cli.md), the programs (inference, the\n"
           "forward and the backwards for training, the training step, Adam; a model's\n"
           "encoding module's too) a network's or model's module needs, or a source of\n"
           "your own, into the cache directory, so that gridjit (or an\n"
           "application using the library) later loads the binaries without compiling, even\n"
           "where NVRTC is absent: ship DIR and list it in GRIDJIT_CACHE_PATH, or use it as\n"
           "GRIDJIT_CACHE_DIR. Entries already\n"
           "there are verified and kept. Prints its progress on a terminal and a summary\n"
           "line; the exit status is 1 when any compilation failed. --network offers networks\n"
           "to a --source as headers.\n"
           "\n"
           "Options:\n"
           "  -c, --config C   a JSON file, inline JSON starting with '{' (or '[' for a list of\n"
           "                   configurations), or a directory whose *.json files are each one;\n"
           "                   may be repeated\n"
           "  -d, --dims D     number of input dimensions (default: each configuration's\n"
           "                   \"n_dims_to_encode\", else 3; a network alone's \"n_input_dims\")\n"
           "      --output-dims N  a network's or model's output width (default: the network\n"
           "                   object's \"n_output_dims\")\n"
           "  -a, --arch LIST  comma-separated targets (sm_80,sm_90,sm_90a,...); may be repeated\n"
           "      --ptx        PTX instead of cubins (sm_90 becomes compute_90)\n"
           "  -p, --pass P     an encoding's passes, as for gridjit compile (default all)\n"
           GJ_CLI_GRADIENTS_HELP
           "      --cache-dir DIR  the directory to fill (default: GRIDJIT_CACHE_DIR, else\n"
           "                   $XDG_CACHE_HOME/gridjit, else ~/.cache/gridjit)\n"
           "      --jobs N     compiles at once, on threads (default: the number of CPUs)\n"
           "      --keep-source  keep each generated source beside its entry\n"
           "%s"
           "  -h, --help       show this help\n",
           gj_cli_source_help);
}

/* --jobs has no -j: -j is --json in every command (docs/cli.md). */
enum { OPT_PTX = 256, OPT_CACHE_DIR, OPT_KEEP_SOURCE, OPT_JOBS, OPT_GRADIENTS, OPT_OUTPUT_DIMS };

#define MAX_ITEMS 4096

typedef struct precompile_args {
    gj_cli_source source;
    const char *configs[MAX_ITEMS];
    size_t n_configs;
    const char *archs[MAX_ITEMS];
    size_t n_archs;
    const char *dims;
    const char *outputs; /* --output-dims */
    const char *passes;
    const char *gradients;
    const char *cache_dir;
    const char *jobs;
    int ptx;
    int keep_source;
} precompile_args;

static int add_item(const char **list, size_t *n, const char *value, const char *what) {
    if (*n == MAX_ITEMS) {
        return gj_cli_usage_error(CMD, "too many %s (at most %d)", what, MAX_ITEMS);
    }
    list[(*n)++] = value;
    return GJ_CLI_OK;
}

static int parse_args(int argc, char **argv, precompile_args *args) {
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'},
        {"dims", required_argument, NULL, 'd'},
        {"output-dims", required_argument, NULL, OPT_OUTPUT_DIMS},
        {"arch", required_argument, NULL, 'a'},
        {"ptx", no_argument, NULL, OPT_PTX},
        {"pass", required_argument, NULL, 'p'},
        {"gradients", required_argument, NULL, OPT_GRADIENTS},
        {"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
        {"jobs", required_argument, NULL, OPT_JOBS},
        {"keep-source", no_argument, NULL, OPT_KEEP_SOURCE},
        GJ_CLI_SOURCE_LONG_OPTIONS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char letters[] = ":c:d:a:p:" GJ_CLI_SOURCE_SHORT_OPTIONS "h";
    int opt, rc = GJ_CLI_OK;
    while (rc == GJ_CLI_OK && (opt = getopt_long(argc, argv, letters, options, NULL)) != -1) {
        switch (opt) {
        case 's':
        case 'e':
        case GJ_CLI_SOURCE_NETWORK:
        case 'k':
        case 'O': rc = gj_cli_source_add(CMD, &args->source, opt, optarg); break;
        case 'c': rc = add_item(args->configs, &args->n_configs, optarg, "--config"); break;
        case 'd': args->dims = optarg; break;
        case OPT_OUTPUT_DIMS: args->outputs = optarg; break;
        case 'a': rc = add_item(args->archs, &args->n_archs, optarg, "--arch"); break;
        case OPT_PTX: args->ptx = 1; break;
        case 'p': args->passes = optarg; break;
        case OPT_GRADIENTS: args->gradients = optarg; break;
        case OPT_CACHE_DIR: args->cache_dir = optarg; break;
        case OPT_JOBS: args->jobs = optarg; break;
        case OPT_KEEP_SOURCE: args->keep_source = 1; break;
        case 'h': usage(); return -1;
        default: return gj_cli_bad_option(CMD, opt, argv, options);
        }
    }
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_no_operands(CMD, argc, argv, options);
    }
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_source_check(CMD, &args->source, args->n_configs != 0,
                                 "give --config (a file, inline JSON or a directory of .json files) or --source, "
                                 "one of them",
                                 "", args->gradients);
    }
    if (rc == GJ_CLI_OK && !args->n_archs) {
        rc = gj_cli_usage_error(CMD, "--arch is required (e.g. --arch sm_80,sm_90)");
    }
    if (rc == GJ_CLI_OK && args->cache_dir && !args->cache_dir[0]) {
        rc = gj_cli_usage_error(CMD, "--cache-dir: empty directory name");
    }
    return rc;
}

/* ------------------------------------------------------------- the work */

typedef struct work {
    char **configs; /* JSON texts */
    char **origins; /* where each came from, for messages */
    size_t n_configs;
    /* The encoding, or the network (a network or model configuration), of each
     * configuration, made once before the threads start and read by every job of it (both
     * are immutable, so the threads share them). */
    gj_encoding **encodings;
    gj_network **networks;
    char **archs; /* canonical target spellings */
    size_t n_archs;
    uint32_t n_dims;
    uint32_t n_outputs; /* --output-dims; 0: the configuration's */
    uint32_t n_workers; /* -j; 0: the number of CPUs */
    gj_codegen_options opts;
} work;

/* Called before the context the encodings were made in is destroyed. */
static void free_work(work *w) {
    for (size_t i = 0; i < w->n_configs; i++) {
        free(w->configs[i]);
        free(w->origins[i]);
        gj_encoding_destroy(w->encodings ? w->encodings[i] : NULL);
        gj_network_destroy(w->networks ? w->networks[i] : NULL);
    }
    for (size_t i = 0; i < w->n_archs; i++) {
        free(w->archs[i]);
    }
    free(w->configs);
    free(w->origins);
    free(w->encodings);
    free(w->networks);
    free(w->archs);
}

static int push_config(work *w, char *json, const char *origin) {
    char **configs = realloc(w->configs, (w->n_configs + 1) * sizeof *configs);
    char **origins = configs ? realloc(w->origins, (w->n_configs + 1) * sizeof *origins) : NULL;
    if (configs) {
        w->configs = configs;
    }
    if (origins) {
        w->origins = origins;
    }
    char *where = strdup(origin);
    if (!configs || !origins || !where) {
        free(json);
        free(where);
        gj_cli_error(CMD, "out of memory");
        return GJ_CLI_FAILURE;
    }
    w->configs[w->n_configs] = json;
    w->origins[w->n_configs] = where;
    w->n_configs++;
    return GJ_CLI_OK;
}

/* A text holding one configuration, or a JSON array of them ('[' after ' ', '\t', '\n' and
 * '\r' only; any other text goes to the library as one configuration). */
static int add_json(work *w, char *json, const char *origin) {
    if (json[strspn(json, " \t\n\r")] != '[') {
        return push_config(w, json, origin);
    }
    cJSON *list = cJSON_Parse(json);
    free(json);
    if (!cJSON_IsArray(list)) {
        cJSON_Delete(list);
        gj_cli_error(CMD, "%s: not a JSON array of configurations", origin);
        return GJ_CLI_FAILURE;
    }
    if (!list->child) { /* nothing to precompile is a mistake, not a success */
        cJSON_Delete(list);
        gj_cli_error(CMD, "%s: the list holds no configuration", origin);
        return GJ_CLI_FAILURE;
    }
    int rc = GJ_CLI_OK, i = 0;
    for (cJSON *item = list->child; item && rc == GJ_CLI_OK; item = item->next, i++) {
        char where[1200];
        snprintf(where, sizeof where, "%s[%d]", origin, i);
        char *one = cJSON_PrintUnformatted(item);
        rc = one ? push_config(w, one, where) : GJ_CLI_FAILURE;
    }
    cJSON_Delete(list);
    return rc;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.json file of dir, in name order. */
static int add_directory(work *w, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        gj_cli_error(CMD, "cannot read directory %s: %s", dir, strerror(errno));
        return GJ_CLI_FAILURE;
    }
    char **names = NULL;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        char **grown = len > 5 && strcmp(e->d_name + len - 5, ".json") == 0 ? realloc(names, (n + 1) * sizeof *names)
                                                                            : NULL;
        if (grown) {
            names = grown;
            names[n++] = strdup(e->d_name);
        }
    }
    closedir(d);
    if (n > 1) {
        qsort(names, n, sizeof *names, by_name);
    }
    int rc = n ? GJ_CLI_OK : GJ_CLI_FAILURE;
    if (!n) {
        gj_cli_error(CMD, "directory %s holds no .json file", dir);
    }
    for (size_t i = 0; i < n; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, names[i] ? names[i] : "");
        char *json = NULL;
        if (rc == GJ_CLI_OK) {
            rc = gj_cli_read_config(CMD, path, &json);
        }
        if (rc == GJ_CLI_OK) {
            rc = add_json(w, json, path);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

static int add_config_arg(work *w, const char *arg) {
    /* Inline JSON when '{' or '[' follows ' ', '\t' and '\n' only: narrower than --config's
     * isspace() test, so an argument that starts with '\r', '\v' or '\f' may still name a
     * directory, and is named by its own text in messages even where --config reads it as
     * inline JSON. */
    const char first = arg[strspn(arg, " \t\n")];
    const int inline_json = first == '{' || first == '[';
    struct stat st;
    if (!inline_json && stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
        return add_directory(w, arg);
    }
    char *json = NULL;
    int rc = gj_cli_read_config(CMD, arg, &json);
    return rc == GJ_CLI_OK ? add_json(w, json, inline_json ? "--config" : arg) : rc;
}

/* "sm_80,sm_90" (and --ptx) into canonical target names. */
static int add_archs(work *w, const char *list, int ptx) {
    const char *p = list;
    while (*p) {
        size_t len = strcspn(p, ",");
        char one[64];
        if (len == 0 || len >= 40) {
            return gj_cli_usage_error(CMD, "--arch: bad list '%s'", list);
        }
        if (!gj_cli_target_arch(p, len, ptx, one, sizeof one)) {
            return gj_cli_usage_error(CMD, "--arch: '%s' is not sm_XX[a|f] or compute_XX[a|f]", one);
        }
        char **grown = realloc(w->archs, (w->n_archs + 1) * sizeof *grown);
        if (!grown || !(grown[w->n_archs] = strdup(one))) {
            if (grown) {
                w->archs = grown;
            }
            gj_cli_error(CMD, "out of memory");
            return GJ_CLI_FAILURE;
        }
        w->archs = grown;
        w->n_archs++;
        p += len + (p[len] == ',');
    }
    return GJ_CLI_OK;
}

/* Every configuration must make its encoding or network before any thread starts. */
static int make_configs(gj_context *ctx, work *w) {
    w->encodings = calloc(w->n_configs, sizeof *w->encodings);
    w->networks = calloc(w->n_configs, sizeof *w->networks);
    if ((!w->encodings || !w->networks) && w->n_configs) {
        gj_cli_error(CMD, "out of memory");
        return GJ_CLI_FAILURE;
    }
    size_t n_networks = 0;
    for (size_t i = 0; i < w->n_configs; i++) {
        const int network = gj_cli_classify_config(w->configs[i]) != GJ_CLI_CONFIG_ENCODING;
        const gj_status status = network
                                     ? gj_network_create(ctx, w->configs[i], w->n_dims, w->n_outputs, &w->networks[i])
                                     : gj_encoding_create(ctx, w->configs[i], w->n_dims, &w->encodings[i]);
        if (status != GJ_OK) {
            gj_cli_error(CMD, "%s: %s", w->origins[i], gj_context_errmsg(ctx));
            return GJ_CLI_FAILURE;
        }
        n_networks += network;
    }
    if (w->n_outputs && n_networks == 0) {
        return gj_cli_usage_error(CMD, "--output-dims: only for a network or model configuration");
    }
    return GJ_CLI_OK;
}

/* -------------------------------------------------------------- workers */

typedef struct job_result {
    gj_status status;
    gj_precompile_report report;
    char message[1024];
} job_result;

/* What the threads share: the work, the next job, the results, the progress line. */
typedef struct crew {
    gj_context *ctx;
    const work *w;
    const gj_source_desc *desc; /* --source, else NULL */
    size_t n_jobs;
    unsigned inner_threads; /* compiles each job runs at once (the programs of one module) */
    atomic_size_t next, done;
    job_result *results;
    int tty;
    pthread_mutex_t lock; /* the progress line */
} crew;

static int setup_context(gj_context *ctx, const precompile_args *args) {
    gj_status status = args->cache_dir ? gj_context_set_cache_dir(ctx, args->cache_dir) : GJ_OK;
    if (status == GJ_OK) {
        status = gj_context_set_cache_enabled(ctx, 1); /* precompiling is the point */
    }
    if (status == GJ_OK && args->keep_source) {
        status = gj_context_set_cache_keep_source(ctx, 1);
    }
    return status == GJ_OK ? GJ_CLI_OK : gj_cli_status_error(CMD, ctx, status, "cache settings");
}

/* One configuration for one architecture: every program of its module. */
static void run_job(crew *c, size_t j, job_result *r) {
    const work *w = c->w;
    const char *arch = w->archs[j % w->n_archs];
    const size_t config = j / w->n_archs;
    if (c->desc) {
        gj_program *prog = NULL;
        r->status = gj_compile_user(c->ctx, c->desc, arch, &prog);
        r->report.programs = 1;
        r->report.cached = r->status == GJ_OK && gj_program_cache_status(prog) == GJ_CACHE_HIT;
        r->report.compiled = (r->status == GJ_OK) - r->report.cached;
        if (r->status == GJ_ERROR_COMPILE && prog) {
            snprintf(r->message, sizeof r->message, "%s\n%s", gj_context_errmsg(c->ctx), gj_program_log(prog));
        }
        gj_program_destroy(prog);
    } else if (w->networks[config]) {
        r->status = gj_network_precompile(c->ctx, w->networks[config], arch, &r->report);
    } else {
        r->status = gj_precompile(c->ctx, w->encodings[config], &w->opts, arch, c->inner_threads, &r->report);
    }
    if (r->status != GJ_OK && !r->message[0]) {
        snprintf(r->message, sizeof r->message, "%s", gj_context_errmsg(c->ctx));
    }
}

static void progress(crew *c) {
    const size_t done = atomic_fetch_add(&c->done, 1) + 1;
    if (!c->tty) {
        return;
    }
    const int width = 40;
    const int filled = (int)(done * (size_t)width / c->n_jobs);
    pthread_mutex_lock(&c->lock);
    fprintf(stderr, "\r[%.*s%*s] %zu/%zu", filled, "========================================", width - filled, "", done,
            c->n_jobs);
    fflush(stderr);
    pthread_mutex_unlock(&c->lock);
}

static void *worker(void *arg) {
    crew *c = arg;
    for (size_t j; (j = atomic_fetch_add(&c->next, 1)) < c->n_jobs;) {
        run_job(c, j, &c->results[j]);
        progress(c);
    }
    return NULL;
}

/* Failures on stderr, then the summary line on stdout. */
static int report(const crew *c, const char *dir, double seconds) {
    const work *w = c->w;
    size_t compiled = 0, cached = 0, failed = 0;
    for (size_t j = 0; j < c->n_jobs; j++) {
        const job_result *r = &c->results[j];
        if (r->status != GJ_OK) {
            /* The programs neither compiled nor found; at least one when the job failed. */
            const size_t lost = r->report.programs - r->report.compiled - r->report.cached;
            failed += lost ? lost : 1;
            gj_cli_error(CMD, "%s for %s: %s", c->desc ? c->desc->file_name : w->origins[j / w->n_archs],
                         w->archs[j % w->n_archs], r->message);
        }
        compiled += r->report.compiled;
        cached += r->report.cached;
    }
    if (c->desc) {
        printf("precompiled %s x %zu architecture%s into %s: %zu compiled, %zu already cached, %zu failed (%.1f s)\n",
               c->desc->file_name, w->n_archs, w->n_archs == 1 ? "" : "s", dir, compiled, cached, failed, seconds);
    } else {
        printf("precompiled %zu configuration%s x %zu architecture%s into %s: %zu program%s compiled, %zu already "
               "cached, %zu failed (%.1f s)\n",
               w->n_configs, w->n_configs == 1 ? "" : "s", w->n_archs, w->n_archs == 1 ? "" : "s", dir, compiled,
               compiled == 1 ? "" : "s", cached, failed, seconds);
    }
    int rc = gj_cli_flush_stdout(CMD);
    return rc != GJ_CLI_OK ? rc : failed ? GJ_CLI_FAILURE : GJ_CLI_OK;
}

static unsigned cpu_count(void) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 0 ? (unsigned)cpus : 1u;
}

static int precompile(gj_context *ctx, work *w, const gj_source_desc *desc) {
    const char *dir = gj_context_cache_dir(ctx);
    if (!dir) {
        gj_cli_error(CMD, "no usable cache directory (see the warning above)");
        return GJ_CLI_FAILURE;
    }
    /* Without NVRTC the entries already in a cache layer are still verified (a hit reads and
     * checks each one); only the missing ones fail, each named in the report. */
    int major = 0, minor = 0;
    if (gj_nvrtc_version(ctx, &major, &minor) != GJ_OK && isatty(STDERR_FILENO)) {
        fprintf(stderr, "gridjit %s: NVRTC is not available (%s): verifying what is cached, compiling nothing\n", CMD,
                gj_context_errmsg(ctx));
    }
    crew c = {.ctx = ctx, .w = w, .desc = desc, .n_jobs = (desc ? 1 : w->n_configs) * w->n_archs,
              .tty = isatty(STDERR_FILENO)};
    atomic_init(&c.next, 0);
    atomic_init(&c.done, 0);
    pthread_mutex_init(&c.lock, NULL);
    c.results = calloc(c.n_jobs, sizeof *c.results);
    if (!c.results) {
        gj_cli_error(CMD, "out of memory");
        return GJ_CLI_FAILURE;
    }
    /* The threads share the jobs; with fewer jobs than threads, each job compiles its
     * module's programs side by side on the rest. */
    const unsigned threads = w->n_workers ? w->n_workers : cpu_count();
    const size_t outer = c.n_jobs < threads ? c.n_jobs : threads;
    c.inner_threads = (unsigned)(threads / outer);
    const double start_ms = gj_cli_now_ms();
    pthread_t ids[1024];
    size_t started = 0;
    while (started + 1 < outer && started < sizeof ids / sizeof ids[0] &&
           pthread_create(&ids[started], NULL, worker, &c) == 0) {
        started++;
    }
    worker(&c);
    for (size_t i = 0; i < started; i++) {
        pthread_join(ids[i], NULL);
    }
    const double seconds = (gj_cli_now_ms() - start_ms) / 1e3;
    if (c.tty) {
        fputc('\n', stderr);
    }
    int rc = report(&c, dir, seconds);
    pthread_mutex_destroy(&c.lock);
    free(c.results);
    return rc;
}

static int gather(const precompile_args *args, work *w) {
    int rc = gj_cli_parse_dims(CMD, args->dims, &w->n_dims);
    uint32_t unused = 0; /* --dims is the encodings' range here (gj_cli_parse_dims) */
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_parse_network_widths(CMD, NULL, args->outputs, &unused, &w->n_outputs);
    }
    gj_codegen_options_init(&w->opts);
    if (rc == GJ_CLI_OK && args->passes) {
        rc = gj_cli_parse_passes(CMD, args->passes, &w->opts.passes);
    }
    if (rc == GJ_CLI_OK && args->gradients) {
        rc = gj_cli_parse_gradients(CMD, args->gradients, &w->opts.gradients_fp32);
    }
    if (rc == GJ_CLI_OK && args->jobs) {
        rc = gj_cli_parse_u32(CMD, "--jobs", args->jobs, 1, 1024, &w->n_workers);
    }
    for (size_t i = 0; rc == GJ_CLI_OK && i < args->n_archs; i++) {
        rc = add_archs(w, args->archs[i], args->ptx);
    }
    for (size_t i = 0; rc == GJ_CLI_OK && i < args->n_configs; i++) {
        rc = add_config_arg(w, args->configs[i]);
    }
    return rc;
}

int gj_cli_precompile(int argc, char **argv) {
    static precompile_args args;
    memset(&args, 0, sizeof args);
    int rc = parse_args(argc, argv, &args);
    if (rc == -1) {
        return gj_cli_flush_stdout(CMD);
    }
    if (rc != GJ_CLI_OK) {
        return rc;
    }
    work w;
    memset(&w, 0, sizeof w);
    rc = gather(&args, &w);
    gj_context *ctx = NULL;
    if (rc == GJ_CLI_OK && gj_context_create(&ctx) != GJ_OK) {
        gj_cli_error(CMD, "out of memory");
        rc = GJ_CLI_FAILURE;
    }
    if (rc == GJ_CLI_OK) {
        rc = setup_context(ctx, &args);
    }
    if (rc == GJ_CLI_OK) {
        rc = args.source.file ? gj_cli_source_open(CMD, ctx, &args.source) : make_configs(ctx, &w);
    }
    if (rc == GJ_CLI_OK) {
        rc = precompile(ctx, &w, args.source.file ? &args.source.desc : NULL);
    }
    gj_cli_source_close(&args.source);
    free_work(&w);
    gj_context_destroy(ctx);
    return rc;
}
