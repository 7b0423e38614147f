/* Helpers shared by the gridjit subcommands. */
#include "cli_common.h"
#include "cli_network.h"
#include "cli_suggest.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A configuration file larger than this is certainly not one (they are a few hundred bytes). */
#define GJ_CLI_MAX_CONFIG_BYTES (16u << 20)

/* ------------------------------------------------------------------ errors */

static void verror(const char *cmd, const char *fmt, va_list args) {
    fprintf(stderr, "gridjit %s: ", cmd);
    vfprintf(stderr, fmt, args);
    fputc('\n', stderr);
}

void gj_cli_error(const char *cmd, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    verror(cmd, fmt, args);
    va_end(args);
}

int gj_cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    verror(cmd, fmt, args);
    va_end(args);
    fprintf(stderr, "Try 'gridjit %s --help' for more information.\n", cmd);
    return GJ_CLI_USAGE;
}

int gj_cli_status_error(const char *cmd, gj_context *ctx, gj_status status, const char *what) {
    const char *detail = ctx ? gj_context_errmsg(ctx) : "";
    if (!detail || !detail[0]) {
        detail = gj_status_message(status);
    }
    gj_cli_error(cmd, "%s: %s", what ? what : gj_status_message(status), detail);
    return GJ_CLI_FAILURE;
}

/* ------------------------------------------------------------------ getopt */

void gj_cli_getopt_reset(void) {
    /* Each subcommand parses its own argv (argv[0] = subcommand name); glibc restarts
     * its scan when optind is 0. We print our own messages, prefixed "gridjit CMD:". */
    optind = 0;
    opterr = 0;
}

/* The long names of options (at most max of them); the count. */
static size_t option_names(const struct option *options, const char **names, size_t max) {
    size_t n = 0;
    for (; options && options[n].name && n < max; ++n) {
        names[n] = options[n].name;
    }
    return n;
}

/* An unknown or ambiguous "--name[=value]": the options it abbreviates when there are
 * several (getopt_long refuses an ambiguous abbreviation), else the closest one. */
static int bad_long_option(const char *cmd, const char *arg, const struct option *options) {
    const char *name = arg + 2;
    const size_t len = strcspn(name, "=");
    const char *names[64];
    const size_t n = option_names(options, names, 64);
    char matches[512] = "";
    size_t n_matches = 0, used = 0;
    for (size_t i = 0; i < n; ++i) {
        if (len > 0 && strncmp(names[i], name, len) == 0) {
            int w = snprintf(matches + used, sizeof matches - used, "%s--%s", n_matches ? ", " : "", names[i]);
            used += w > 0 && (size_t)w < sizeof matches - used ? (size_t)w : 0;
            n_matches++;
        }
    }
    if (n_matches > 1) {
        return gj_cli_usage_error(cmd, "option '--%.*s' is ambiguous: %s", (int)len, name, matches);
    }
    const char *closest = gj_cli_closest(name, len, names, n);
    if (closest) {
        return gj_cli_usage_error(cmd, "unknown option '--%.*s'; did you mean '--%s'?", (int)len, name, closest);
    }
    return gj_cli_usage_error(cmd, "unknown option '--%.*s'", (int)len, name);
}

/* An unknown "-x": the one long option that starts with x, if there is one (precompile's
 * --jobs has no -j, which means --json everywhere: docs/cli.md). */
static int bad_short_option(const char *cmd, int letter, const struct option *options) {
    const char *only = NULL;
    size_t count = 0;
    for (size_t i = 0; options && options[i].name; ++i) {
        if (options[i].name[0] == letter) {
            only = options[i].name;
            count++;
        }
    }
    if (count == 1) {
        return gj_cli_usage_error(cmd, "unknown option '-%c'; did you mean '--%s'?", letter, only);
    }
    return gj_cli_usage_error(cmd, "unknown option '-%c'", letter);
}

int gj_cli_bad_option(const char *cmd, int opt, char **argv, const struct option *options) {
    const char *arg = (optind > 0) ? argv[optind - 1] : "?";
    if (opt == ':') {
        return gj_cli_usage_error(cmd, "option '%s' needs a value", arg);
    }
    if (optopt != 0 && optopt != '?') {
        return bad_short_option(cmd, optopt, options);
    }
    if (strncmp(arg, "--", 2) == 0) {
        return bad_long_option(cmd, arg, options);
    }
    return gj_cli_usage_error(cmd, "unknown option '%s'", arg);
}

static int has_option(const struct option *options, const char *name) {
    for (size_t i = 0; options && options[i].name; ++i) {
        if (strcmp(options[i].name, name) == 0) {
            return 1;
        }
    }
    return 0;
}

/* --config's rule: inline JSON when the first non-blank character is '{' or '['. */
static int looks_like_json(const char *arg) {
    while (isspace((unsigned char)*arg)) {
        ++arg;
    }
    return *arg == '{' || *arg == '[';
}

/* A stray argument that a user probably meant as the configuration: JSON, a .json name, or
 * an existing file. */
static int looks_like_config(const char *arg) {
    const size_t len = strlen(arg);
    struct stat st;
    return looks_like_json(arg) || (len > 5 && strcmp(arg + len - 5, ".json") == 0) ||
           (stat(arg, &st) == 0 && S_ISREG(st.st_mode));
}

/* "-j/--json, --ptx": the options that take no value, for a stray number (`-j 4` where -j
 * is --json). */
static void flags_without_value(const struct option *options, char *out, size_t size) {
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; options && options[i].name && used < size; ++i) {
        if (options[i].has_arg != no_argument || strcmp(options[i].name, "help") == 0) {
            continue;
        }
        const int letter = options[i].val < 128 ? options[i].val : 0;
        int w = letter ? snprintf(out + used, size - used, "%s-%c/--%s", used ? ", " : "", letter, options[i].name)
                       : snprintf(out + used, size - used, "%s--%s", used ? ", " : "", options[i].name);
        used += w > 0 ? (size_t)w : 0;
    }
}

int gj_cli_no_operands(const char *cmd, int argc, char **argv, const struct option *options) {
    if (optind >= argc) {
        return GJ_CLI_OK;
    }
    const char *arg = argv[optind];
    if (has_option(options, "config") && looks_like_config(arg)) {
        return gj_cli_usage_error(cmd, "unexpected argument '%s'; a configuration goes after --config: "
                                       "gridjit %s --config %s%s%s",
                                  arg, cmd, strchr(arg, '\'') ? "" : "'", arg, strchr(arg, '\'') ? "" : "'");
    }
    char flags[512];
    flags_without_value(options, flags, sizeof flags);
    if (isdigit((unsigned char)arg[0]) && flags[0]) {
        return gj_cli_usage_error(cmd, "unexpected argument '%s' (these options take no value: %s)", arg, flags);
    }
    return gj_cli_usage_error(cmd, "unexpected argument '%s'", arg);
}

/* ----------------------------------------------------------- option values */

/* A decimal integer in [min, max] and nothing else (no sign, no blanks). 1 when it is one. */
static int parse_range(const char *text, uint32_t min, uint32_t max, uint32_t *out) {
    char *end = NULL;
    errno = 0;
    const unsigned long long value = strtoull(text, &end, 10);
    if (!isdigit((unsigned char)text[0]) || *end != '\0' || errno == ERANGE || value < min || value > max) {
        return 0;
    }
    *out = (uint32_t)value;
    return 1;
}

int gj_cli_parse_u32(const char *cmd, const char *option, const char *text, uint32_t min, uint32_t max,
                     uint32_t *out) {
    if (!parse_range(text, min, max, out)) {
        return gj_cli_usage_error(cmd, "%s: must be an integer in %" PRIu32 "..%" PRIu32 " (got '%s')", option, min,
                                  max, text);
    }
    return GJ_CLI_OK;
}

int gj_cli_parse_dims(const char *cmd, const char *text, uint32_t *n_dims) {
    *n_dims = 0;
    /* The limit depends on the hash, which the configuration names: the library checks it
     * with that; here the widest range, stated as it is. */
    if (text && !parse_range(text, 1, 32, n_dims)) {
        return gj_cli_usage_error(cmd,
                                  "--dims: must be an integer from 1 to 32, or to 7 for a Hash grid with a prime or "
                                  "the Rng hash (got '%s')",
                                  text);
    }
    return GJ_CLI_OK;
}

static uint32_t pass_bits(const char *name, size_t len) {
    static const struct {
        const char *name;
        uint32_t bits;
    } passes[] = {
        {"forward", GJ_PASS_FORWARD},
        {"backward", GJ_PASS_BACKWARD},
        {"backward_backward", GJ_PASS_BACKWARD_BACKWARD},
        {"all", GJ_PASS_ALL},
    };
    for (size_t i = 0; i < sizeof passes / sizeof passes[0]; ++i) {
        if (strlen(passes[i].name) == len && strncmp(passes[i].name, name, len) == 0) {
            return passes[i].bits;
        }
    }
    return 0;
}

int gj_cli_parse_passes(const char *cmd, const char *text, uint32_t *passes) {
    uint32_t bits = 0;
    const char *p = text;
    for (;;) {
        size_t len = strcspn(p, ",");
        uint32_t one = pass_bits(p, len);
        if (one == 0) {
            return gj_cli_usage_error(cmd, "--pass: must be forward, backward, backward_backward or all, "
                                           "or a comma-separated list of them (got '%s')", text);
        }
        bits |= one;
        if (p[len] == '\0') {
            break;
        }
        p += len + 1;
    }
    *passes = bits;
    return GJ_CLI_OK;
}

int gj_cli_parse_gradients(const char *cmd, const char *text, int *gradients_fp32) {
    if (strcmp(text, "fp32") == 0) {
        *gradients_fp32 = 1;
    } else if (strcmp(text, "auto") == 0) {
        *gradients_fp32 = 0;
    } else {
        return gj_cli_usage_error(cmd, "--gradients: must be fp32 or auto (got '%s')", text);
    }
    return GJ_CLI_OK;
}

/* ------------------------------------------------------------ configuration */

gj_cli_read_status gj_cli_read_text(const char *path, size_t max_bytes, char **text, int *err) {
    *text = NULL;
    *err = 0;
    FILE *file = fopen(path, "rb");
    if (!file) {
        *err = errno;
        return GJ_CLI_READ_OPEN;
    }
    /* Reads up to one byte past max_bytes, which tells a file of max_bytes from a larger one. */
    const size_t limit = max_bytes < SIZE_MAX ? max_bytes + 1 : SIZE_MAX;
    size_t size = 0, cap = (size_t)1 << 16; /* cap - 1 bytes of text, then the NUL */
    char *buffer = malloc(cap);
    gj_cli_read_status result = buffer ? GJ_CLI_READ_OK : GJ_CLI_READ_NO_MEMORY;
    while (result == GJ_CLI_READ_OK) {
        const size_t want = cap - 1 - size < limit - size ? cap - 1 - size : limit - size;
        const size_t got = fread(buffer + size, 1, want, file);
        size += got;
        if (got < want) { /* the end of the file, or an error */
            if (ferror(file)) {
                *err = errno;
                result = GJ_CLI_READ_IO;
            }
            break;
        }
        if (size > max_bytes) {
            result = GJ_CLI_READ_TOO_LARGE;
        } else if (size == cap - 1) {
            char *bigger = cap <= SIZE_MAX / 2 ? realloc(buffer, cap * 2) : NULL;
            if (bigger) {
                buffer = bigger;
                cap *= 2;
            } else {
                result = GJ_CLI_READ_NO_MEMORY;
            }
        }
    }
    fclose(file);
    if (result != GJ_CLI_READ_OK) {
        free(buffer);
        return result;
    }
    buffer[size] = '\0';
    *text = buffer;
    return GJ_CLI_READ_OK;
}

int gj_cli_read_config(const char *cmd, const char *arg, char **json) {
    *json = NULL;
    if (!arg) {
        return gj_cli_usage_error(cmd, "--config is required (a file or inline JSON)");
    }
    if (looks_like_json(arg)) {
        *json = strdup(arg);
        if (!*json) {
            gj_cli_error(cmd, "out of memory");
            return GJ_CLI_FAILURE;
        }
        return GJ_CLI_OK;
    }
    if (arg[0] == '\0') {
        return gj_cli_usage_error(cmd, "--config: empty (give a file or inline JSON)");
    }
    int err = 0;
    const gj_cli_read_status read = gj_cli_read_text(arg, GJ_CLI_MAX_CONFIG_BYTES, json, &err);
    if (read != GJ_CLI_READ_OK) {
        gj_cli_error(cmd, "cannot read configuration file '%s': %s", arg,
                     read == GJ_CLI_READ_NO_MEMORY  ? "out of memory"
                     : read == GJ_CLI_READ_TOO_LARGE ? "larger than 16 MiB"
                                                     : strerror(err));
        return GJ_CLI_FAILURE;
    }
    return GJ_CLI_OK;
}

void gj_cli_config_where(const char *config_arg, char *where, size_t size) {
    where[0] = '\0';
    if (!looks_like_json(config_arg)) {
        snprintf(where, size, " in '%s'", config_arg);
    }
}

int gj_cli_open_json_where(const char *cmd, const char *json, const char *where, uint32_t n_dims, gj_context **ctx,
                           gj_encoding **enc) {
    *ctx = NULL;
    *enc = NULL;
    const gj_cli_config_kind kind = gj_cli_classify_config(json);
    if (kind != GJ_CLI_CONFIG_ENCODING) {
        /* Said plainly, rather than the encoding parser's complaint about "network" or "n_neurons"
         * (the commands send networks and models their own way before they get here). */
        gj_cli_error(cmd, "the configuration%s is a %s configuration where `gridjit %s` expected an encoding",
                     where, kind == GJ_CLI_CONFIG_MODEL ? "model" : "network", cmd);
        return GJ_CLI_FAILURE;
    }
    gj_status status = gj_context_create(ctx);
    if (status != GJ_OK) {
        return gj_cli_status_error(cmd, NULL, status, "cannot create a context");
    }
    status = gj_encoding_create(*ctx, json, n_dims, enc); /* *enc stays NULL on failure */
    return status == GJ_OK ? GJ_CLI_OK : gj_cli_config_refused(cmd, ctx, status, where);
}

int gj_cli_config_refused(const char *cmd, gj_context **ctx, gj_status status, const char *where) {
    char what[512];
    snprintf(what, sizeof what, "%s%s", gj_status_message(status), where);
    gj_cli_status_error(cmd, *ctx, status, what);
    gj_context_destroy(*ctx);
    *ctx = NULL;
    return GJ_CLI_FAILURE;
}

int gj_cli_open_json(const char *cmd, const char *json, uint32_t n_dims, gj_context **ctx, gj_encoding **enc) {
    return gj_cli_open_json_where(cmd, json, "", n_dims, ctx, enc);
}

int gj_cli_open(const char *cmd, const char *config_arg, uint32_t n_dims, gj_context **ctx, gj_encoding **enc) {
    *ctx = NULL;
    *enc = NULL;
    char *json = NULL;
    int rc = gj_cli_read_config(cmd, config_arg, &json);
    if (rc != GJ_CLI_OK) {
        return rc;
    }
    char where[512];
    gj_cli_config_where(config_arg, where, sizeof where);
    rc = gj_cli_open_json_where(cmd, json, where, n_dims, ctx, enc);
    free(json);
    return rc;
}

void gj_cli_close(gj_context *ctx, gj_encoding *enc) {
    gj_encoding_destroy(enc);
    gj_context_destroy(ctx);
}

/* ----------------------------------------------------------------- summary */

static const char *grid_type_name(gj_grid_type type) {
    switch (type) {
    case GJ_GRID_HASH:
        return "Hash";
    case GJ_GRID_DENSE:
        return "Dense";
    case GJ_GRID_TILED:
        return "Tiled";
    }
    return "?";
}

int gj_cli_print_hyperparams(FILE *out, char *text, const char *member) {
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    gj_free(text);
    const cJSON *object = member ? cJSON_GetObjectItemCaseSensitive(root, member) : root;
    if (!cJSON_IsObject(object)) {
        cJSON_Delete(root);
        return GJ_CLI_FAILURE;
    }
    fprintf(out, "hyperparameters\n");
    const cJSON *item = NULL;
    cJSON_ArrayForEach(item, object) {
        char *value = cJSON_PrintUnformatted(item);
        fprintf(out, "  %-26s %s\n", item->string, value ? value : "?");
        free(value);
    }
    cJSON_Delete(root);
    return GJ_CLI_OK;
}

static void print_levels(FILE *out, const gj_encoding *enc) {
    fprintf(out, "%5s  %14s  %10s  %10s  %12s  %s\n", "level", "scale", "resolution", "entries", "offset", "index");
    for (uint32_t l = 0; l < gj_encoding_n_levels(enc); ++l) {
        gj_level_info info;
        if (gj_encoding_level(enc, l, &info) != GJ_OK) {
            continue;
        }
        fprintf(out, "%5" PRIu32 "  %14.9g  %10" PRIu32 "  %10" PRIu32 "  %12" PRIu64 "  %s\n", info.level,
                (double)info.scale, info.resolution, info.entries, info.offset, info.hashed ? "hash" : "dense");
    }
}

int gj_cli_print_encoding(FILE *out, const gj_encoding *enc) {
    uint64_t n_params = gj_encoding_n_params(enc);
    unsigned bytes = gj_encoding_precision(enc) == GJ_PRECISION_FP32 ? 4 : 2;
    fprintf(out, "encoding      %s grid, %" PRIu32 " dimensions, %" PRIu32 " levels x %" PRIu32 " features\n",
            grid_type_name(gj_encoding_grid_type(enc)), gj_encoding_n_dims(enc), gj_encoding_n_levels(enc),
            gj_encoding_n_features_per_level(enc));
    if (gj_cli_print_hyperparams(out, gj_encoding_hyperparams(enc), NULL) != GJ_CLI_OK) {
        return GJ_CLI_FAILURE;
    }
    fprintf(out, "n_params      %" PRIu64 " (%.2f MiB as %s)\n", n_params, (double)n_params * bytes / 1048576.0,
            bytes == 4 ? "fp32" : "fp16");
    fprintf(out, "n_output_dims %" PRIu32 "\n\n", gj_encoding_n_output_dims(enc));
    print_levels(out, enc);
    return GJ_CLI_OK;
}

/* ------------------------------------------------------------------- files */

static int write_all(int fd, const void *data, size_t size) {
    const char *p = data;
    while (size > 0) {
        ssize_t n = write(fd, p, size);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        p += n;
        size -= (size_t)n;
    }
    return 0;
}

/* The directory part of path ("." when there is none), malloc()ed. */
static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) {
        return strdup(".");
    }
    if (slash == path) {
        return strdup("/");
    }
    return strndup(path, (size_t)(slash - path));
}

static void fsync_dir(const char *dir) {
    /* Makes the rename itself durable; best effort (some filesystems refuse). */
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

int gj_cli_write_file_atomic(const char *cmd, const char *path, const void *data, size_t size) {
    char *dir = dir_of(path);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t tmp_size = (dir ? strlen(dir) : 0) + strlen(base) + 16;
    char *tmp = dir ? malloc(tmp_size) : NULL;
    if (!tmp || base[0] == '\0') {
        gj_cli_error(cmd, base[0] == '\0' ? "cannot write '%s': not a file name" : "cannot write '%s': out of memory",
                     path);
        free(dir);
        free(tmp);
        return GJ_CLI_FAILURE;
    }
    snprintf(tmp, tmp_size, "%s/.%s.XXXXXX", dir, base);
    int fd = mkstemp(tmp); /* O_CREAT|O_EXCL: never follows or reuses an existing name */
    int saved_errno = errno;
    int ok = fd >= 0;
    if (ok) {
        mode_t mask = umask(0);
        umask(mask);
        ok = fchmod(fd, 0666 & ~mask) == 0 && write_all(fd, data, size) == 0 && fsync(fd) == 0;
        saved_errno = errno;
        ok = (close(fd) == 0) && ok;
        if (ok && rename(tmp, path) != 0) {
            saved_errno = errno;
            ok = 0;
        }
        if (!ok) {
            unlink(tmp);
        }
    }
    if (ok) {
        fsync_dir(dir);
    } else {
        gj_cli_error(cmd, "cannot write '%s': %s", path, strerror(saved_errno));
    }
    free(dir);
    free(tmp);
    return ok ? GJ_CLI_OK : GJ_CLI_FAILURE;
}

int gj_cli_make_dirs(const char *cmd, const char *path) {
    char *copy = strdup(path);
    if (!copy) {
        gj_cli_error(cmd, "out of memory");
        return GJ_CLI_FAILURE;
    }
    if (copy[0] == '\0') {
        free(copy);
        gj_cli_error(cmd, "cannot create a directory with an empty name");
        return GJ_CLI_FAILURE;
    }
    int rc = GJ_CLI_OK;
    /* Create each prefix ending before a '/', then the whole path. */
    for (char *p = copy + 1;; ++p) {
        if (*p != '/' && *p != '\0') {
            continue;
        }
        char saved = *p;
        *p = '\0';
        struct stat st;
        int failed = mkdir(copy, 0777) != 0;
        int mkdir_errno = errno;
        if (failed && !(mkdir_errno == EEXIST && stat(copy, &st) == 0 && S_ISDIR(st.st_mode))) {
            gj_cli_error(cmd, "cannot create directory '%s': %s", copy,
                         mkdir_errno == EEXIST ? "a file of that name exists" : strerror(mkdir_errno));
            rc = GJ_CLI_FAILURE;
            break;
        }
        *p = saved;
        if (saved == '\0') {
            break;
        }
    }
    free(copy);
    return rc;
}

int gj_cli_write_stdout(const char *cmd, const char *text, size_t size) {
    if (fwrite(text, 1, size, stdout) != size) {
        gj_cli_error(cmd, "cannot write to standard output: %s", strerror(errno));
        return GJ_CLI_FAILURE;
    }
    return gj_cli_flush_stdout(cmd);
}

int gj_cli_flush_stdout(const char *cmd) {
    if (fflush(stdout) != 0 || ferror(stdout)) {
        gj_cli_error(cmd, "cannot write to standard output: %s", strerror(errno));
        return GJ_CLI_FAILURE;
    }
    return GJ_CLI_OK;
}

/* ------------------------------------------------------- timing, test data */

double gj_cli_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

void gj_cli_random_floats(uint64_t *state, float *out, size_t count, float lo, float hi) {
    for (size_t i = 0; i < count; ++i) {
        *state ^= *state >> 12; /* xorshift64* */
        *state ^= *state << 25;
        *state ^= *state >> 27;
        const uint64_t r = *state * 0x2545F4914F6CDD1Dull;
        out[i] = lo + (hi - lo) * (float)(r >> 40) * (1.0f / 16777216.0f); /* the top 24 bits */
    }
}
