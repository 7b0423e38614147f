/* gridjit cache: inspect and maintain the disk cache (docs/cache.md). */
#include "cli_common.h"
#include "cli_suggest.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *const CMD = "cache";

static void usage(void) {
    printf("Usage: gridjit cache list|stats|verify|prune|clear [--cache-dir DIR] [--json]\n"
           "\n"
           "  list     every entry of every layer (read-only layers of GRIDJIT_CACHE_PATH first):\n"
           "           key, kind (cubin, ptx, or source for a kept generated source), target,\n"
           "           bytes and path\n"
           "  stats    hits, misses, compiles, compile time, bytes, evictions and corrupt entries\n"
           "           counted in the directory by every process that used it, and its size\n"
           "  verify   reads and checks every entry completely, removes the broken ones from the\n"
           "           writable directory; exit status 1 when it found any\n"
           "  prune    applies the byte cap now (least recently used first) and sweeps stale\n"
           "           temporary files\n"
           "  clear    removes every entry of the writable directory\n"
           "\n"
           "Options:\n"
           "      --cache-dir DIR  the writable directory (default: GRIDJIT_CACHE_DIR, else\n"
           "                       $XDG_CACHE_HOME/gridjit, else ~/.cache/gridjit)\n"
           "      --max-bytes N    the cap for prune (default: GRIDJIT_CACHE_MAX_BYTES, else 1G;\n"
           "                       suffixes K, M, G, T)\n"
           "  -j, --json           print one JSON object; list: {\"entries\": [{\"key\", \"path\",\n"
           "                       \"bytes\", \"target\", \"kind\", \"writable\"}]}\n"
           "  -h, --help           show this help\n");
}

enum { OPT_CACHE_DIR = 256, OPT_MAX_BYTES };

typedef struct cache_args {
    const char *action;
    const char *dir;
    const char *max_bytes;
    int json;
} cache_args;

static int parse_args(int argc, char **argv, cache_args *args) {
    static const struct option options[] = {
        {"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
        {"max-bytes", required_argument, NULL, OPT_MAX_BYTES},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, ":jh", options, NULL)) != -1) {
        switch (opt) {
        case OPT_CACHE_DIR: args->dir = optarg; break;
        case OPT_MAX_BYTES: args->max_bytes = optarg; break;
        case 'j': args->json = 1; break;
        case 'h': usage(); return -1;
        default: return gj_cli_bad_option(CMD, opt, argv, options);
        }
    }
    if (optind >= argc) {
        return gj_cli_usage_error(CMD, "an action is required: list, stats, verify, prune or clear");
    }
    args->action = argv[optind++];
    if (args->dir && !args->dir[0]) {
        return gj_cli_usage_error(CMD, "--cache-dir: empty directory name");
    }
    return gj_cli_no_operands(CMD, argc, argv, options);
}

/* ---------------------------------------------------------------- output */

static int add_u64(cJSON *obj, const char *name, uint64_t value) {
    char number[32];
    snprintf(number, sizeof number, "%" PRIu64, value);
    return cJSON_AddRawToObject(obj, name, number) != NULL;
}

/* Prints obj and frees it; a NULL obj means an allocation failed on the way. */
static int print_json(cJSON *obj) {
    char *text = obj ? cJSON_Print(obj) : NULL;
    cJSON_Delete(obj);
    if (!text) {
        gj_cli_error(CMD, "out of memory");
        return GJ_CLI_FAILURE;
    }
    int rc = gj_cli_write_stdout(CMD, text, strlen(text));
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_write_stdout(CMD, "\n", 1);
    }
    free(text);
    return rc;
}

/* ------------------------------------------------------------------ list */

typedef struct list_state {
    cJSON *entries; /* --json */
    int failed;
} list_state;

static int list_one(void *user, const gj_cache_entry_info *e) {
    list_state *s = user;
    if (!s->entries) {
        printf("%s  %-6s %-12s %10" PRIu64 "  %s%s\n", e->key, e->kind, e->target[0] ? e->target : "-", e->bytes,
               e->path, e->writable ? "" : "  (read-only)");
        return 0;
    }
    cJSON *item = cJSON_CreateObject();
    int ok = item && cJSON_AddStringToObject(item, "key", e->key) && cJSON_AddStringToObject(item, "path", e->path) &&
             add_u64(item, "bytes", e->bytes) && cJSON_AddStringToObject(item, "target", e->target) &&
             cJSON_AddStringToObject(item, "kind", e->kind) && cJSON_AddBoolToObject(item, "writable", e->writable);
    if (!ok || !cJSON_AddItemToArray(s->entries, item)) {
        cJSON_Delete(item);
        s->failed = 1;
        return 1;
    }
    return 0;
}

static int do_list(gj_context *ctx, const cache_args *args) {
    cJSON *root = args->json ? cJSON_CreateObject() : NULL;
    list_state s = {.entries = root ? cJSON_AddArrayToObject(root, "entries") : NULL};
    if (args->json && !s.entries) {
        cJSON_Delete(root);
        return print_json(NULL);
    }
    gj_status status = gj_cache_list(ctx, list_one, &s);
    if (status != GJ_OK) {
        cJSON_Delete(root);
        return gj_cli_status_error(CMD, ctx, status, "list");
    }
    if (s.failed) {
        cJSON_Delete(root);
        root = NULL;
    }
    return args->json ? print_json(root) : gj_cli_flush_stdout(CMD);
}

/* ----------------------------------------------------------------- stats */

static int do_stats(gj_context *ctx, const cache_args *args) {
    gj_cache_stats st;
    gj_status status = gj_context_cache_stats(ctx, GJ_CACHE_STATS_DIRECTORY, &st);
    if (status != GJ_OK) {
        return gj_cli_status_error(CMD, ctx, status, "stats");
    }
    const char *dir = gj_context_cache_dir(ctx);
    if (!args->json) {
        printf("directory      %s\n", dir ? dir : "(none usable)");
        printf("entries        %" PRIu64 "\n", st.entries);
        printf("bytes          %" PRIu64 " of %" PRIu64 "\n", st.disk_bytes, st.max_bytes);
        printf("hits           %" PRIu64 "\n", st.hits);
        printf("misses         %" PRIu64 "\n", st.misses);
        printf("compiles       %" PRIu64 " (%.1f ms)\n", st.compiles, st.compile_ms);
        printf("bytes read     %" PRIu64 "\n", st.bytes_read);
        printf("bytes written  %" PRIu64 "\n", st.bytes_written);
        printf("evictions      %" PRIu64 "\n", st.evictions);
        printf("corrupt        %" PRIu64 "\n", st.corrupt);
        return gj_cli_flush_stdout(CMD);
    }
    cJSON *root = cJSON_CreateObject();
    char ms[64];
    snprintf(ms, sizeof ms, "%.3f", st.compile_ms);
    int ok = root && (dir ? cJSON_AddStringToObject(root, "directory", dir) != NULL
                          : cJSON_AddNullToObject(root, "directory") != NULL) &&
             add_u64(root, "hits", st.hits) && add_u64(root, "misses", st.misses) &&
             add_u64(root, "compiles", st.compiles) && cJSON_AddRawToObject(root, "compile_ms", ms) &&
             add_u64(root, "bytes_read", st.bytes_read) && add_u64(root, "bytes_written", st.bytes_written) &&
             add_u64(root, "evictions", st.evictions) && add_u64(root, "corrupt", st.corrupt) &&
             add_u64(root, "entries", st.entries) && add_u64(root, "bytes", st.disk_bytes) &&
             add_u64(root, "max_bytes", st.max_bytes);
    if (!ok) {
        cJSON_Delete(root);
        root = NULL;
    }
    return print_json(root);
}

/* ----------------------------------------------------- verify, prune, clear */

static int do_verify(gj_context *ctx, const cache_args *args) {
    uint64_t checked = 0, bad = 0;
    gj_status status = gj_cache_verify(ctx, &checked, &bad);
    if (status != GJ_OK) {
        return gj_cli_status_error(CMD, ctx, status, "verify");
    }
    int rc;
    if (args->json) {
        cJSON *root = cJSON_CreateObject();
        if (!root || !add_u64(root, "checked", checked) || !add_u64(root, "bad", bad)) {
            cJSON_Delete(root);
            root = NULL;
        }
        rc = print_json(root);
    } else {
        printf("checked %" PRIu64 " %s: %" PRIu64 " broken%s\n", checked, checked == 1 ? "entry" : "entries", bad,
               bad ? " (removed where writable)" : "");
        rc = gj_cli_flush_stdout(CMD);
    }
    return rc != GJ_CLI_OK ? rc : bad ? GJ_CLI_FAILURE : GJ_CLI_OK;
}

static int do_prune(gj_context *ctx, const cache_args *args) {
    uint64_t evicted = 0, freed = 0;
    gj_status status = gj_cache_prune(ctx, &evicted, &freed);
    if (status != GJ_OK) {
        return gj_cli_status_error(CMD, ctx, status, "prune");
    }
    gj_cache_stats st;
    gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &st);
    if (!args->json) {
        printf("evicted %" PRIu64 " %s (%" PRIu64 " bytes); %" PRIu64 " %s, %" PRIu64 " of %" PRIu64
               " bytes remain\n",
               evicted, evicted == 1 ? "entry" : "entries", freed, st.entries, st.entries == 1 ? "entry" : "entries",
               st.disk_bytes, st.max_bytes);
        return gj_cli_flush_stdout(CMD);
    }
    cJSON *root = cJSON_CreateObject();
    if (!root || !add_u64(root, "evicted", evicted) || !add_u64(root, "bytes_freed", freed) ||
        !add_u64(root, "entries", st.entries) || !add_u64(root, "bytes", st.disk_bytes) ||
        !add_u64(root, "max_bytes", st.max_bytes)) {
        cJSON_Delete(root);
        root = NULL;
    }
    return print_json(root);
}

static int do_clear(gj_context *ctx, const cache_args *args) {
    uint64_t removed = 0;
    gj_status status = gj_cache_clear(ctx, &removed);
    if (status != GJ_OK) {
        return gj_cli_status_error(CMD, ctx, status, "clear");
    }
    if (!args->json) {
        printf("removed %" PRIu64 " %s from %s\n", removed, removed == 1 ? "entry" : "entries", gj_context_cache_dir(ctx));
        return gj_cli_flush_stdout(CMD);
    }
    cJSON *root = cJSON_CreateObject();
    if (!root || !add_u64(root, "removed", removed)) {
        cJSON_Delete(root);
        root = NULL;
    }
    return print_json(root);
}

/* ------------------------------------------------------------------ main */

/* A byte count with an optional binary suffix: 1048576, 512K, 64M, 1G, 1GiB. */
static int parse_bytes(const char *text, uint64_t *out) {
    char *end = NULL;
    if (!text || *text < '0' || *text > '9') {
        return -1;
    }
    unsigned long long n = strtoull(text, &end, 10);
    int shift = 0;
    const char *units = "KMGT";
    const char *unit = *end ? strchr(units, *end & ~0x20) : NULL;
    if (unit) {
        shift = 10 * (int)(unit - units + 1);
        end++;
        end += (*end == 'i' || *end == 'I');
        end += (*end == 'b' || *end == 'B');
    }
    if (*end || (shift && n > (UINT64_MAX >> shift))) {
        return -1;
    }
    *out = (uint64_t)n << shift;
    return 0;
}

static int configure(gj_context *ctx, const cache_args *args) {
    if (args->dir && gj_context_set_cache_dir(ctx, args->dir) != GJ_OK) {
        return gj_cli_status_error(CMD, ctx, GJ_ERROR_OUT_OF_MEMORY, "--cache-dir");
    }
    /* The subcommand is about the cache: it works on it even when GRIDJIT_CACHE_DISABLE
     * is set for the applications. */
    gj_context_set_cache_enabled(ctx, 1);
    if (args->max_bytes) {
        uint64_t cap = 0;
        if (parse_bytes(args->max_bytes, &cap) != 0 || cap == 0) {
            return gj_cli_usage_error(CMD, "--max-bytes: not a positive byte count (got '%s')", args->max_bytes);
        }
        gj_context_set_cache_max_bytes(ctx, cap);
    }
    return GJ_CLI_OK;
}

int gj_cli_cache(int argc, char **argv) {
    cache_args args = {0};
    int rc = parse_args(argc, argv, &args);
    if (rc == -1) {
        return gj_cli_flush_stdout(CMD);
    }
    if (rc != GJ_CLI_OK) {
        return rc;
    }
    static const struct {
        const char *name;
        int (*run)(gj_context *, const cache_args *);
    } actions[] = {{"list", do_list}, {"stats", do_stats}, {"verify", do_verify}, {"prune", do_prune},
                   {"clear", do_clear}};
    enum { N_ACTIONS = sizeof actions / sizeof actions[0] };
    int (*action)(gj_context *, const cache_args *) = NULL;
    const char *names[N_ACTIONS];
    for (size_t i = 0; i < N_ACTIONS; i++) {
        names[i] = actions[i].name;
        if (strcmp(actions[i].name, args.action) == 0) {
            action = actions[i].run;
        }
    }
    if (!action) {
        const char *closest = gj_cli_closest(args.action, strlen(args.action), names, N_ACTIONS);
        if (closest) {
            return gj_cli_usage_error(CMD, "unknown action '%s'; did you mean '%s'?", args.action, closest);
        }
        return gj_cli_usage_error(CMD, "unknown action '%s' (list, stats, verify, prune or clear)", args.action);
    }
    gj_context *ctx = NULL;
    if (gj_context_create(&ctx) != GJ_OK) {
        gj_cli_error(CMD, "out of memory");
        return GJ_CLI_FAILURE;
    }
    rc = configure(ctx, &args);
    if (rc == GJ_CLI_OK) {
        rc = action(ctx, &args);
    }
    gj_context_destroy(ctx);
    return rc;
}
