/* The gridjit command-line tool, run as a child process: help, refusals, info's
 * numbers against an independent computation of docs/design.md §2, dump, compile and demo. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gridjit.h"
#include "run_cli.h"

/* Runs the CLI with the listed arguments in cwd (NULL: current directory). */
#define RUN(result, cwd, ...) gj_test_run_cli_checked((cwd), (const char *const[]){__VA_ARGS__, NULL}, (result))

/* Exit 0 with something on stdout and nothing on stderr. */
static void assert_success(const gj_cli_result *r) {
    if (r->status != 0) {
        print_message("stderr: %s\n", r->err);
    }
    assert_int_equal(r->status, 0);
    assert_true(r->out_len > 0);
}

/* A refusal: the given status, nothing on stdout, a "gridjit ..." message on stderr. */
static void assert_refused(const gj_cli_result *r, int status) {
    assert_int_equal(r->status, status);
    assert_int_equal(r->out_len, 0);
    assert_true(r->err_len > 0);
    assert_true(strncmp(r->err, "gridjit", 7) == 0);
}

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static char *path_join(const char *dir, const char *name) {
    size_t size = strlen(dir) + strlen(name) + 2;
    char *path = malloc(size);
    assert_non_null(path);
    snprintf(path, size, "%s/%s", dir, name);
    return path;
}

static size_t count_dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    }
    closedir(d);
    return n;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* ------------------------------------------------------------------- help */

static void tool_help_lists_the_commands(void **state) {
    (void)state;
    gj_cli_result r;
    RUN(&r, NULL, "--help");
    assert_success(&r);
    assert_int_equal(r.err_len, 0);
    const char *commands[] = {"info", "dump", "compile", "demo", "--version"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; ++i) {
        assert_non_null(strstr(r.out, commands[i]));
    }
    gj_cli_result_free(&r);
}

static void subcommand_help_names_its_options(void **state) {
    (void)state;
    static const struct {
        const char *command;
        const char *options[7];
    } cases[] = {
        {"info", {"--config", "--dims", "--json", "--help", "offset"}},
        {"dump", {"--config", "--dims", "--pass", "--device-functions-only", "--name", "--pad-to", "--help"}},
        {"compile", {"--config", "--dims", "--arch", "--ptx", "--output", "--json", "--no-cache"}},
        {"demo", {"--arch", "--out-dir", "--help"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        gj_cli_result r;
        RUN(&r, NULL, cases[i].command, "--help");
        assert_success(&r);
        assert_int_equal(r.err_len, 0);
        char usage[64];
        snprintf(usage, sizeof usage, "Usage: gridjit %s", cases[i].command);
        assert_non_null(strstr(r.out, usage));
        for (size_t j = 0; j < 7 && cases[i].options[j]; ++j) {
            if (!strstr(r.out, cases[i].options[j])) {
                fail_msg("gridjit %s --help does not mention %s", cases[i].command, cases[i].options[j]);
            }
        }
        gj_cli_result_free(&r);
        /* "gridjit help CMD" says the same. */
        RUN(&r, NULL, "help", cases[i].command);
        assert_success(&r);
        assert_non_null(strstr(r.out, usage));
        gj_cli_result_free(&r);
    }
}

static void version_prints_the_version(void **state) {
    (void)state;
    gj_cli_result r;
    RUN(&r, NULL, "--version");
    assert_success(&r);
    assert_true(strncmp(r.out, "gridjit ", 8) == 0);
    assert_true(r.out[8] >= '0' && r.out[8] <= '9');
    gj_cli_result_free(&r);
}

/* ---------------------------------------------------------- bad command lines */

static void bad_command_lines_are_usage_errors(void **state) {
    (void)state;
    const char *const cases[][6] = {
        {"frobnicate", NULL},
        {"--frobnicate", NULL},
        {"info", "--bogus", "--config", "{}", NULL},
        {"info", "-Z", NULL},
        {"info", NULL},                               /* --config missing */
        {"info", "--config", NULL},                   /* value missing */
        {"info", "--config", "{}", "stray", NULL},    /* unexpected operand */
        {"info", "--config", "{}", "--dims", "x3"},   /* not a number */
        {"info", "--config", "{}", "--dims", "0"},
        {"dump", "--config", "{}", "--pass", "sideways"},
        {"dump", "--config", "{}", "--pad-to", "-4"},
        {"dump", "--bogus", NULL},
        {"compile", "--config", "{}", NULL},          /* --arch missing */
        {"compile", "--arch", "sm_90", NULL},         /* --config missing */
        {"compile", "--config", "{}", "--arch", NULL},
        {"demo", "--bogus", NULL},
        {"demo", "stray", NULL},
        {"precompile", "-j", "4", NULL}, /* -j is --json everywhere; precompile has --jobs */
        {"bench", "-n", "4", NULL},      /* --points is -P, as in eval */
        {"bench", "--config", "{}", "--dx-from", "corners"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        gj_cli_result r;
        gj_test_run_cli_checked(NULL, cases[i], &r);
        if (r.status != 2 || r.out_len != 0) {
            fail_msg("case %zu (%s %s): status %d, stdout '%s'", i, cases[i][0], cases[i][1] ? cases[i][1] : "",
                     r.status, r.out);
        }
        assert_refused(&r, 2);
        gj_cli_result_free(&r);
    }
    gj_cli_result r;
    RUN(&r, NULL, "info", "--bogus-option", "--config", "{}");
    assert_non_null(strstr(r.err, "--bogus-option"));
    gj_cli_result_free(&r);
    RUN(&r, NULL, "frobnicate");
    assert_non_null(strstr(r.err, "frobnicate"));
    gj_cli_result_free(&r);
    RUN(&r, NULL, "bench", "--config", "{}", "--dx-from", "corners");
    assert_non_null(strstr(r.err, "--dx-from: must be dydx, compact or params (got 'corners')"));
    gj_cli_result_free(&r);
}

static void no_arguments_is_a_usage_error(void **state) {
    (void)state;
    gj_cli_result r;
    assert_int_equal(gj_test_run_cli(NULL, (const char *const[]){NULL}, &r), 0);
    assert_int_equal(r.status, 2);
    assert_int_equal(r.out_len, 0);
    assert_non_null(strstr(r.err, "Usage"));
    gj_cli_result_free(&r);
}

/* Every short option means one thing in every command: the same long option wherever the
 * letter appears (-o: where the output goes, --output FILE or --out-dir DIR), and each long
 * option has at most one letter. Read from each command's --help ("  -x, --long"). */
static void short_options_mean_one_thing_everywhere(void **state) {
    (void)state;
    static const char *const commands[] = {"info", "dump", "compile", "precompile", "cache", "demo", "eval", "bench"};
    char longs[128][32];
    memset(longs, 0, sizeof longs);
    char seen_in[128][16];
    int n_letters = 0;
    for (size_t c = 0; c < sizeof commands / sizeof commands[0]; ++c) {
        gj_cli_result r;
        RUN(&r, NULL, commands[c], "--help");
        assert_success(&r);
        for (const char *line = r.out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
            char letter = 0, name[32] = "";
            if (sscanf(line, " -%c, --%31[a-z0-9-]", &letter, name) != 2 || strncmp(line, "  -", 3) != 0) {
                continue;
            }
            unsigned char k = (unsigned char)letter;
            const char *known = longs[k];
            const int same_meaning = strcmp(known, name) == 0 ||
                                     (k == 'o' && (strcmp(name, "output") == 0 || strcmp(name, "out-dir") == 0) &&
                                      (strcmp(known, "output") == 0 || strcmp(known, "out-dir") == 0));
            if (known[0] && !same_meaning) {
                fail_msg("-%c is --%s in gridjit %s but --%s in gridjit %s", letter, name, commands[c], known,
                         seen_in[k]);
            }
            snprintf(longs[k], sizeof longs[k], "%s", name);
            snprintf(seen_in[k], sizeof seen_in[k], "%s", commands[c]);
            n_letters++;
            for (int other = 0; other < 128; ++other) {
                if (other != k && strcmp(longs[other], name) == 0) {
                    fail_msg("--%s is -%c and -%c", name, other, letter);
                }
            }
        }
        gj_cli_result_free(&r);
    }
    assert_true(n_letters > 30);
    assert_string_equal(longs['j'], "json");
    assert_string_equal(longs['P'], "points");
}

/* A misspelled command, option or action gets the closest name; an argument that looks
 * like a configuration gets the command line with --config. */
static void misspellings_get_a_suggestion(void **state) {
    (void)state;
    static const struct {
        const char *args[8];
        const char *said;
    } cases[] = {
        {{"compile", "--arhc", "sm_90", NULL}, "unknown option '--arhc'; did you mean '--arch'?"},
        {{"compile", "--config", "{}", "--arch=sm_90", "--jsno", NULL}, "did you mean '--json'?"},
        {{"compile", "--c", "{}", NULL}, "option '--c' is ambiguous: --config, --cache-dir"},
        {{"compiel", "--config", "{}", NULL}, "unknown command 'compiel'; did you mean 'compile'?"},
        {{"help", "dmup", NULL}, "did you mean 'dump'?"},
        {{"--verison", NULL}, "did you mean '--version'?"},
        {{"cache", "stast", NULL}, "unknown action 'stast'; did you mean 'stats'?"},
        {{"info", "{}", NULL}, "unexpected argument '{}'; a configuration goes after --config: gridjit info --config '{}'"},
        {{"dump", "grid.json", NULL}, "gridjit dump --config 'grid.json'"},
        {{"precompile", "-j", "4", NULL}, "unknown option '-j'; did you mean '--jobs'?"},
        {{"compile", "--config", "{}", "--arch", "sm_90", "-j", "4", NULL},
         "unexpected argument '4' (these options take no value: --ptx, -j/--json"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        gj_cli_result r;
        gj_test_run_cli_checked(NULL, cases[i].args, &r);
        assert_refused(&r, 2);
        if (!strstr(r.err, cases[i].said)) {
            fail_msg("gridjit %s %s: expected \"%s\" in:\n%s", cases[i].args[0], cases[i].args[1] ? cases[i].args[1] : "",
                     cases[i].said, r.err);
        }
        gj_cli_result_free(&r);
    }
    /* Nothing close: no suggestion. */
    gj_cli_result r;
    RUN(&r, NULL, "info", "--frobnicate-everything");
    assert_refused(&r, 2);
    assert_null(strstr(r.err, "did you mean"));
    gj_cli_result_free(&r);
}

/* ------------------------------------------------------------------- info */

/* docs/design.md §2, written independently of the library. scale is taken as reported (it is a
 * float computation whose last bit we do not try to reproduce) after checking it
 * against the exact value; everything else is derived from it here. */
typedef struct expected_level {
    uint32_t resolution;
    uint64_t entries, offset;
} expected_level;

enum { HASH, DENSE, TILED };

static uint64_t expected_entries(int type, uint32_t n_dims, uint32_t resolution, uint32_t base, uint32_t log2) {
    double dense = pow((double)resolution, (double)n_dims);
    uint64_t entries = dense > 2147483647.0 ? 2147483647u : (uint64_t)dense;
    entries = (entries + 7) / 8 * 8;
    if (type == TILED) {
        double tile = pow((double)base, (double)n_dims);
        entries = tile < (double)entries ? (uint64_t)tile : entries;
    }
    if (type == HASH && entries > (1ull << log2)) {
        entries = 1ull << log2;
    }
    return entries;
}

static const cJSON *member(const cJSON *object, const char *key) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
    if (!item) {
        fail_msg("JSON output lacks \"%s\"", key);
    }
    return item;
}

/* object has exactly these keys (in any order). */
static void assert_keys(const cJSON *object, const char *const *keys, size_t n) {
    assert_true(cJSON_IsObject(object));
    assert_int_equal(cJSON_GetArraySize(object), n);
    for (size_t i = 0; i < n; ++i) {
        (void)member(object, keys[i]);
    }
}

/* A non-negative integer, printed as one (no fraction, no exponent). */
static uint64_t integer(const cJSON *object, const char *key) {
    const cJSON *item = member(object, key);
    assert_true(cJSON_IsNumber(item));
    double value = cJSON_GetNumberValue(item);
    assert_true(value >= 0 && value == floor(value) && value < 9007199254740992.0);
    return (uint64_t)value;
}

/* Runs info --json and parses it; the caller deletes. */
static cJSON *info_json(const char *config, const char *dims) {
    gj_cli_result r;
    if (dims) {
        RUN(&r, NULL, "info", "--json", "--config", config, "--dims", dims);
    } else {
        RUN(&r, NULL, "info", "--json", "--config", config);
    }
    assert_success(&r);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(r.out, &end, 0);
    assert_non_null(root);
    while (*end == '\n' || *end == ' ') {
        ++end;
    }
    assert_int_equal(*end, '\0'); /* exactly one object, nothing after it */
    gj_cli_result_free(&r);
    return root;
}

typedef struct layout_case {
    const char *config;
    const char *dims; /* NULL: not given */
    int type;
    uint32_t n_dims, n_levels, features, base, log2;
    double per_level_scale;
} layout_case;

static void check_layout(const layout_case *c) {
    cJSON *root = info_json(c->config, c->dims);
    static const char *const keys[] = {"n_dims", "n_levels", "n_features_per_level", "n_params",
                                       "n_output_dims", "levels", "hyperparams"};
    assert_keys(root, keys, 7);
    assert_int_equal(integer(root, "n_dims"), c->n_dims);
    assert_int_equal(integer(root, "n_levels"), c->n_levels);
    assert_int_equal(integer(root, "n_features_per_level"), c->features);
    assert_int_equal(integer(root, "n_output_dims"), c->n_levels * c->features);
    assert_true(cJSON_IsObject(member(root, "hyperparams")));
    const cJSON *levels = member(root, "levels");
    assert_true(cJSON_IsArray(levels));
    assert_int_equal(cJSON_GetArraySize(levels), c->n_levels);
    uint64_t offset = 0;
    for (uint32_t l = 0; l < c->n_levels; ++l) {
        const cJSON *level = cJSON_GetArrayItem(levels, (int)l);
        static const char *const level_keys[] = {"level", "scale", "resolution", "entries", "offset", "hashed"};
        assert_keys(level, level_keys, 6);
        assert_int_equal(integer(level, "level"), l);
        double scale = cJSON_GetNumberValue(member(level, "scale"));
        double exact = c->base * pow(c->per_level_scale, l) - 1.0;
        assert_true(fabs(scale - exact) <= 1e-5 * (exact + 1.0));
        uint32_t resolution = (uint32_t)ceil(scale) + 1;
        assert_int_equal(integer(level, "resolution"), resolution);
        uint64_t entries = expected_entries(c->type, c->n_dims, resolution, c->base, c->log2);
        assert_int_equal(integer(level, "entries"), entries);
        assert_int_equal(integer(level, "offset"), offset);
        offset += entries;
    }
    assert_int_equal(integer(root, "n_params"), offset * c->features);
    cJSON_Delete(root);
}

static void info_json_matches_an_independent_layout(void **state) {
    (void)state;
    const layout_case cases[] = {
        {"{\"otype\": \"DenseGrid\", \"n_levels\": 3, \"base_resolution\": 4, \"per_level_scale\": 2.0}", "2", DENSE,
         2, 3, 2, 4, 19, 2.0},
        {" {\"otype\": \"TiledGrid\", \"n_levels\": 4, \"n_features_per_level\": 4, \"base_resolution\": 8, "
         "\"per_level_scale\": 2}",
         "3", TILED, 3, 4, 4, 8, 19, 2.0},
        {"{\"otype\": \"HashGrid\", \"n_levels\": 4, \"n_features_per_level\": 1, \"base_resolution\": 16, "
         "\"log2_hashmap_size\": 5, \"per_level_scale\": 2}",
         "1", HASH, 1, 4, 1, 16, 5, 2.0},
        {"{\"otype\": \"HashGrid\", \"n_levels\": 20, \"n_features_per_level\": 2, \"base_resolution\": 32, "
         "\"log2_hashmap_size\": 16, \"per_level_scale\": 1.5}",
         "3", HASH, 3, 20, 2, 32, 16, 1.5},
        {"{\"otype\": \"Grid\", \"type\": \"Hash\", \"n_levels\": 8, \"n_features_per_level\": 8, "
         "\"base_resolution\": 3, \"log2_hashmap_size\": 10, \"per_level_scale\": 1.26, \"n_dims_to_encode\": 4}",
         NULL, HASH, 4, 8, 8, 3, 10, 1.26},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        check_layout(&cases[i]);
    }
}

/* Numbers worked out by hand, so that a shared mistake in check_layout cannot hide. */
static void info_json_hand_computed_numbers(void **state) {
    (void)state;
    /* D = 2, Dense, base 4, 3 levels, per_level_scale 2: scales 3, 7, 15; resolutions
     * 4, 8, 16; entries 16, 64, 256 (multiples of 8); offsets 0, 16, 80; 336 entries. */
    cJSON *root = info_json("{\"otype\": \"DenseGrid\", \"n_levels\": 3, \"n_features_per_level\": 2, "
                            "\"base_resolution\": 4, \"per_level_scale\": 2.0}",
                            "2");
    const uint64_t scale[] = {3, 7, 15}, res[] = {4, 8, 16}, entries[] = {16, 64, 256}, offset[] = {0, 16, 80};
    const cJSON *levels = member(root, "levels");
    for (int l = 0; l < 3; ++l) {
        const cJSON *level = cJSON_GetArrayItem(levels, l);
        assert_true(cJSON_GetNumberValue(member(level, "scale")) == (double)scale[l]);
        assert_int_equal(integer(level, "resolution"), res[l]);
        assert_int_equal(integer(level, "entries"), entries[l]);
        assert_int_equal(integer(level, "offset"), offset[l]);
    }
    assert_int_equal(integer(root, "n_params"), 336 * 2);
    assert_int_equal(integer(root, "n_output_dims"), 6);
    cJSON_Delete(root);
    /* docs/design.md §2's check: level 0 = 32^3 entries, levels 1 and 2 = 2^16, n_params 2555904. */
    root = info_json("{\"otype\": \"HashGrid\", \"n_levels\": 20, \"n_features_per_level\": 2, "
                     "\"base_resolution\": 32, \"log2_hashmap_size\": 16, \"per_level_scale\": 1.5}",
                     "3");
    levels = member(root, "levels");
    assert_int_equal(integer(cJSON_GetArrayItem(levels, 0), "entries"), 32768);
    assert_int_equal(integer(cJSON_GetArrayItem(levels, 1), "entries"), 65536);
    assert_int_equal(integer(cJSON_GetArrayItem(levels, 2), "entries"), 65536);
    assert_int_equal(integer(root, "n_params"), 2555904);
    cJSON_Delete(root);
}

/* n_params above 2^32 is printed as a plain integer, never in exponent form; a
 * layout the library refuses is refused cleanly. */
static void info_json_large_n_params_is_an_integer(void **state) {
    (void)state;
    const char *config = "{\"otype\": \"HashGrid\", \"n_levels\": 16, \"n_features_per_level\": 8, "
                         "\"log2_hashmap_size\": 27, \"base_resolution\": 16, \"per_level_scale\": 2}";
    gj_cli_result r;
    RUN(&r, NULL, "info", "--json", "--config", config, "--dims", "3");
    if (r.status != 0) {
        assert_refused(&r, 1);
        print_message("(the library refuses this layout: %s)", r.err);
        gj_cli_result_free(&r);
        return;
    }
    uint64_t entries = 0;
    for (uint32_t l = 0; l < 16; ++l) {
        entries += expected_entries(HASH, 3, (16u << l), 16, 27);
    }
    assert_true(entries * 8 > (1ull << 32));
    /* The token after "n_params": must be the digits of the number, nothing else. */
    const char *value = strstr(r.out, "\"n_params\":");
    assert_non_null(value);
    value += strlen("\"n_params\":");
    value += strspn(value, " \t\n");
    char expected[32];
    snprintf(expected, sizeof expected, "%llu", (unsigned long long)(entries * 8));
    size_t digits = strspn(value, "0123456789");
    if (digits != strlen(expected) || strncmp(value, expected, digits) != 0) {
        fail_msg("n_params: expected %s, got '%.30s'", expected, value);
    }
    gj_cli_result_free(&r);
}

/* The "hyperparams" object, given back as the configuration, gives the same output. */
static void info_hyperparams_round_trip(void **state) {
    (void)state;
    const char *config = "{\"otype\": \"hashgrid\", \"n_levels\": 5, \"n_features_per_level\": 4, "
                         "\"base_resolution\": 7, \"per_level_scale\": 1.7, \"interpolation\": \"Smoothstep\", "
                         "\"hash\": \"Prime\", \"precision\": \"fp32\"}";
    gj_cli_result first, second;
    RUN(&first, NULL, "info", "--json", "--config", config, "--dims", "2");
    assert_success(&first);
    cJSON *root = cJSON_Parse(first.out);
    assert_non_null(root);
    char *hyperparams = cJSON_PrintUnformatted(member(root, "hyperparams"));
    assert_non_null(hyperparams);
    assert_non_null(strstr(hyperparams, "fp32"));
    RUN(&second, NULL, "info", "--json", "--config", hyperparams);
    assert_success(&second);
    assert_string_equal(first.out, second.out);
    free(hyperparams);
    cJSON_Delete(root);
    gj_cli_result_free(&first);
    gj_cli_result_free(&second);
}

static void info_reads_a_config_file(void **state) {
    (void)state;
    char *dir = gj_test_scratch_dir("info_file");
    assert_non_null(dir);
    char *path = path_join(dir, "config.json");
    const char *config = "{\"otype\": \"DenseGrid\", \"n_levels\": 3, \"base_resolution\": 4, \"per_level_scale\": 2}";
    write_text(path, config);
    gj_cli_result from_file, inline_json;
    RUN(&from_file, NULL, "info", "--json", "--config", path, "--dims", "2");
    RUN(&inline_json, NULL, "info", "--json", "--config", config, "--dims", "2");
    assert_success(&from_file);
    assert_string_equal(from_file.out, inline_json.out);
    gj_cli_result_free(&from_file);
    gj_cli_result_free(&inline_json);
    free(path);
    free(dir);
}

static void info_table_shows_the_levels(void **state) {
    (void)state;
    gj_cli_result r;
    RUN(&r, NULL, "info", "--config",
        "{\"otype\": \"DenseGrid\", \"n_levels\": 3, \"base_resolution\": 4, \"per_level_scale\": 2}", "--dims", "2");
    assert_success(&r);
    assert_int_equal(r.err_len, 0);
    const char *words[] = {"n_params", "672", "n_output_dims", "resolution", "entries", "offset", "per_level_scale"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; ++i) {
        if (!strstr(r.out, words[i])) {
            fail_msg("info table lacks '%s':\n%s", words[i], r.out);
        }
    }
    /* Level rows: "    2            15          16         256            80  dense" */
    unsigned level, resolution, entries, offset;
    double scale;
    const char *row = strstr(r.out, "\n    2 ");
    assert_non_null(row);
    assert_int_equal(sscanf(row, "%u %lf %u %u %u", &level, &scale, &resolution, &entries, &offset), 5);
    assert_int_equal(level, 2);
    assert_true(scale == 15.0);
    assert_int_equal(resolution, 16);
    assert_int_equal(entries, 256);
    assert_int_equal(offset, 80);
    gj_cli_result_free(&r);
}

static void info_refuses_bad_configs(void **state) {
    (void)state;
    static const struct {
        const char *config;
        const char *dims;
        const char *named; /* must appear in the message; NULL: any message */
    } cases[] = {
        {"{\"n_levels\": 4, \"bogus_key\": 1}", NULL, "bogus_key"},
        {"{\"n_features_per_level\": 3}", NULL, "n_features_per_level"},
        {"{\"log2_hashmap_size\": 40}", NULL, "log2_hashmap_size"},
        {"{\"n_levels\": \"16\"}", NULL, "n_levels"},
        {"{\"n_levels\": 0}", NULL, "n_levels"},
        {"{\"interpolation\": \"Cubic\"}", NULL, "interpolation"},
        {"{\"hash\": \"Md5\"}", NULL, "hash"},
        {"{\"per_level_scale\": -2}", NULL, "per_level_scale"},
        {"{\"n_dims_to_encode\": 2}", "3", "n_dims_to_encode"},
        {"{\"n_levels\": 4, \"n_features\": 8}", NULL, "n_features"},
        {"{\"n_levels\": 16,", NULL, NULL},
        {"[1, 2]", NULL, NULL},
        {"{\"hash\": \"CoherentPrime\"}", "9", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        gj_cli_result r;
        if (cases[i].dims) {
            RUN(&r, NULL, "info", "--config", cases[i].config, "--dims", cases[i].dims);
        } else {
            RUN(&r, NULL, "info", "--config", cases[i].config);
        }
        if (r.status != 1 || (cases[i].named && !strstr(r.err, cases[i].named))) {
            fail_msg("config %s: status %d, stderr '%s'", cases[i].config, r.status, r.err);
        }
        assert_refused(&r, 1);
        gj_cli_result_free(&r);
    }
}

static void info_refuses_missing_and_unreadable_files(void **state) {
    (void)state;
    char *dir = gj_test_scratch_dir("info_missing");
    assert_non_null(dir);
    char *missing = path_join(dir, "no-such-config.json");
    gj_cli_result r;
    RUN(&r, NULL, "info", "--config", missing);
    assert_refused(&r, 1);
    assert_non_null(strstr(r.err, "no-such-config.json"));
    gj_cli_result_free(&r);
    RUN(&r, NULL, "info", "--config", dir); /* a directory */
    assert_refused(&r, 1);
    gj_cli_result_free(&r);
    char *empty = path_join(dir, "empty.json");
    write_text(empty, "");
    RUN(&r, NULL, "info", "--config", empty);
    assert_refused(&r, 1);
    gj_cli_result_free(&r);
    free(empty);
    free(missing);
    free(dir);
}

/* ------------------------------------------------------------------- dump */

static const char SMALL_CONFIG[] = "{\"otype\": \"HashGrid\", \"n_levels\": 2, \"n_features_per_level\": 2, "
                                   "\"log2_hashmap_size\": 12, \"base_resolution\": 4}";

static void dump_is_deterministic_and_complete(void **state) {
    (void)state;
    gj_cli_result a, b;
    RUN(&a, NULL, "dump", "--config", SMALL_CONFIG, "--dims", "2");
    RUN(&b, NULL, "dump", "--config", SMALL_CONFIG, "--dims", "2");
    assert_success(&a);
    assert_success(&b);
    assert_int_equal(a.out_len, b.out_len);
    assert_memory_equal(a.out, b.out, a.out_len);
    assert_int_equal(strlen(a.out), a.out_len); /* text, no NUL inside */
    assert_non_null(strstr(a.out, "__global__"));
    assert_non_null(strstr(a.out, "__device__"));
    gj_cli_result_free(&a);
    gj_cli_result_free(&b);
}

static void dump_options_change_the_source(void **state) {
    (void)state;
    gj_cli_result all, functions, forward, named, padded;
    RUN(&all, NULL, "dump", "--config", SMALL_CONFIG, "--dims", "2", "--pass", "all");
    RUN(&functions, NULL, "dump", "--config", SMALL_CONFIG, "--dims", "2", "--device-functions-only");
    RUN(&forward, NULL, "dump", "--config", SMALL_CONFIG, "--dims", "2", "--pass", "forward");
    RUN(&named, NULL, "dump", "--config", SMALL_CONFIG, "--dims", "2", "--name", "my_grid");
    RUN(&padded, NULL, "dump", "--config", SMALL_CONFIG, "--dims", "2", "--pad-to", "16");
    assert_success(&all);
    assert_success(&functions);
    assert_success(&forward);
    assert_success(&named);
    assert_success(&padded);
    assert_null(strstr(functions.out, "__global__"));
    assert_non_null(strstr(functions.out, "__device__"));
    assert_string_not_equal(all.out, forward.out);
    assert_non_null(strstr(named.out, "my_grid"));
    assert_string_not_equal(all.out, padded.out);
    gj_cli_result_free(&all);
    gj_cli_result_free(&functions);
    gj_cli_result_free(&forward);
    gj_cli_result_free(&named);
    gj_cli_result_free(&padded);
}

/* --gradients fp32 makes grad_t float (SMALL_CONFIG is fp16 with F = 2); auto is the
 * default; other values and --source are usage errors. */
static void gradients_option_sets_the_gradient_type(void **state) {
    (void)state;
    gj_cli_result plain, fp32, automatic;
    RUN(&plain, NULL, "dump", "--config", SMALL_CONFIG, "--dims", "2");
    RUN(&fp32, NULL, "dump", "--config", SMALL_CONFIG, "--dims", "2", "--gradients", "fp32");
    RUN(&automatic, NULL, "dump", "--config", SMALL_CONFIG, "--dims", "2", "--gradients", "auto");
    assert_success(&plain);
    assert_success(&fp32);
    assert_success(&automatic);
    assert_non_null(strstr(plain.out, "typedef gj_half grad_t;"));
    assert_non_null(strstr(fp32.out, "typedef float grad_t;"));
    assert_non_null(strstr(fp32.out, "(codegen option gradients_fp32)"));
    assert_string_equal(plain.out, automatic.out);
    gj_cli_result_free(&plain);
    gj_cli_result_free(&fp32);
    gj_cli_result_free(&automatic);
    static const char *const commands[] = {"dump", "compile", "precompile", "bench"};
    for (size_t i = 0; i < 4; ++i) {
        gj_cli_result r;
        const int takes_arch = i == 1 || i == 2;
        RUN(&r, NULL, commands[i], "--config", SMALL_CONFIG, "--gradients", "fp16", takes_arch ? "--arch" : NULL,
            "sm_90");
        assert_refused(&r, 2);
        assert_non_null(strstr(r.err, "--gradients: must be fp32 or auto (got 'fp16')"));
        gj_cli_result_free(&r);
        RUN(&r, NULL, commands[i], "--help");
        assert_success(&r);
        if (!strstr(r.out, "--gradients")) {
            fail_msg("gridjit %s --help does not name --gradients", commands[i]);
        }
        gj_cli_result_free(&r);
    }
    gj_cli_result r;
    RUN(&r, NULL, "compile", "--source", "k.cu", "--encoding", "grid={}", "--kernel", "k", "--arch", "sm_90",
        "--gradients", "fp32");
    assert_refused(&r, 2);
    assert_non_null(strstr(r.err, "--gradients goes with --config"));
    gj_cli_result_free(&r);
    /* The same rule in every command that takes --source (one check, gj_cli_source_check). */
    RUN(&r, NULL, "dump", "--source", "k.cu", "--gradients", "fp32");
    assert_refused(&r, 2);
    assert_non_null(strstr(r.err, "--gradients goes with --config"));
    gj_cli_result_free(&r);
    RUN(&r, NULL, "precompile", "--source", "k.cu", "--encoding", "grid={}", "--kernel", "k", "--arch", "sm_90",
        "--gradients", "fp32");
    assert_refused(&r, 2);
    assert_non_null(strstr(r.err, "--gradients goes with --config"));
    gj_cli_result_free(&r);
}

static void dump_refuses_bad_input(void **state) {
    (void)state;
    gj_cli_result r;
    RUN(&r, NULL, "dump", "--config", "{\"n_features_per_level\": 5}");
    assert_refused(&r, 1);
    assert_non_null(strstr(r.err, "n_features_per_level"));
    gj_cli_result_free(&r);
    RUN(&r, NULL, "dump", "--config", SMALL_CONFIG, "--name", "not an identifier");
    assert_true(r.status > 0 && r.status < 128);
    assert_int_equal(r.out_len, 0);
    gj_cli_result_free(&r);
}

/* ---------------------------------------------------------------- compile */

/* 1 when `gridjit compile` can reach NVRTC, 0 when it reports NVRTC unavailable. */
static int nvrtc_available(void) {
    static int known = -1;
    if (known >= 0) {
        return known;
    }
    char *dir = gj_test_scratch_dir("compile_probe");
    assert_non_null(dir);
    gj_cli_result r;
    RUN(&r, dir, "compile", "--config", "{\"n_levels\": 1}", "--dims", "1", "--arch", "sm_90", "--pass", "forward");
    known = r.status == 0;
    if (!known && !strstr(r.err, "NVRTC is not available")) {
        fail_msg("gridjit compile failed for another reason than a missing NVRTC: %s", r.err);
    }
    if (!known) {
        print_message("[  SKIPPED ] NVRTC is not available here: %s", r.err);
    }
    gj_cli_result_free(&r);
    free(dir);
    return known;
}

static void compile_writes_an_elf_cubin(void **state) {
    (void)state;
    if (!nvrtc_available()) {
        skip();
    }
    char *dir = gj_test_scratch_dir("compile_cubin");
    assert_non_null(dir);
    char *path = path_join(dir, "grid.cubin");
    gj_cli_result r;
    RUN(&r, NULL, "compile", "--config", SMALL_CONFIG, "--dims", "2", "--arch", "sm_90", "-o", path);
    assert_success(&r);
    size_t size = 0;
    char *binary = gj_test_read_file(path, &size);
    assert_non_null(binary);
    assert_true(size > 64);
    assert_memory_equal(binary, "\x7f" "ELF", 4);
    assert_non_null(strstr(r.out, path));
    assert_non_null(strstr(r.out, "ms"));
    assert_int_equal(count_dir_entries(dir), 1); /* no temporary file left */
    free(binary);
    gj_cli_result_free(&r);
    /* Without -o: encoding.cubin in the current directory. */
    RUN(&r, dir, "compile", "--config", SMALL_CONFIG, "--dims", "2", "--arch", "sm_90", "--pass", "forward");
    assert_success(&r);
    char *default_path = path_join(dir, "encoding.cubin");
    assert_true(file_exists(default_path));
    free(default_path);
    gj_cli_result_free(&r);
    free(path);
    free(dir);
}

static void compile_writes_ptx(void **state) {
    (void)state;
    if (!nvrtc_available()) {
        skip();
    }
    char *dir = gj_test_scratch_dir("compile_ptx");
    assert_non_null(dir);
    const char *const archs[][2] = {{"sm_90", "--ptx"}, {"compute_80", NULL}};
    for (size_t i = 0; i < 2; ++i) {
        char *path = path_join(dir, i ? "b.ptx" : "a.ptx");
        gj_cli_result r;
        if (archs[i][1]) {
            RUN(&r, NULL, "compile", "--config", SMALL_CONFIG, "--dims", "2", "--pass", "forward", "--no-cache",
                "--arch", archs[i][0], archs[i][1], "-o", path);
        } else {
            RUN(&r, NULL, "compile", "--config", SMALL_CONFIG, "--dims", "2", "--pass", "forward", "--arch",
                archs[i][0], "-o", path);
        }
        assert_success(&r);
        char *ptx = gj_test_read_file(path, NULL);
        assert_non_null(ptx);
        assert_non_null(strstr(ptx, ".version"));
        assert_non_null(strstr(ptx, ".entry"));
        free(ptx);
        free(path);
        gj_cli_result_free(&r);
    }
    free(dir);
}

static void compile_json_describes_the_output(void **state) {
    (void)state;
    if (!nvrtc_available()) {
        skip();
    }
    char *dir = gj_test_scratch_dir("compile_json");
    assert_non_null(dir);
    char *path = path_join(dir, "out.cubin");
    gj_cli_result r;
    RUN(&r, NULL, "compile", "--json", "--config", SMALL_CONFIG, "--dims", "2", "--arch", "sm_90", "--pass",
        "forward", "--output", path);
    assert_success(&r);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(r.out, &end, 0);
    assert_non_null(root);
    /* These six, plus only "key" and "cache", which the disk cache adds. */
    static const char *const keys[] = {"arch", "kind", "bytes", "compile_ms", "kernels", "output"};
    const cJSON *item = NULL;
    for (size_t i = 0; i < 6; ++i) {
        (void)member(root, keys[i]);
    }
    cJSON_ArrayForEach(item, root) {
        int known = strcmp(item->string, "key") == 0 || strcmp(item->string, "cache") == 0;
        for (size_t i = 0; i < 6; ++i) {
            known |= strcmp(item->string, keys[i]) == 0;
        }
        if (!known) {
            fail_msg("compile --json: unexpected key \"%s\"", item->string);
        }
    }
    assert_string_equal(cJSON_GetStringValue(member(root, "arch")), "sm_90");
    assert_string_equal(cJSON_GetStringValue(member(root, "kind")), "cubin");
    assert_string_equal(cJSON_GetStringValue(member(root, "output")), path);
    assert_true(cJSON_IsNumber(member(root, "compile_ms")));
    assert_true(cJSON_GetNumberValue(member(root, "compile_ms")) >= 0); /* 0 is possible for a cache hit */
    size_t size = 0;
    char *binary = gj_test_read_file(path, &size);
    assert_non_null(binary);
    assert_int_equal(integer(root, "bytes"), size);
    const cJSON *kernels = member(root, "kernels");
    assert_true(cJSON_IsArray(kernels));
    assert_true(cJSON_GetArraySize(kernels) >= 1);
    const cJSON *kernel = NULL;
    cJSON_ArrayForEach(kernel, kernels) {
        assert_true(cJSON_IsString(kernel));
        /* A lowered name is a symbol of the cubin: it appears in its string table. */
        assert_non_null(memmem(binary, size, kernel->valuestring, strlen(kernel->valuestring)));
    }
    free(binary);
    cJSON_Delete(root);
    gj_cli_result_free(&r);
    free(path);
    free(dir);
}

static void compile_refuses_an_unknown_arch(void **state) {
    (void)state;
    char *dir = gj_test_scratch_dir("compile_bad_arch");
    assert_non_null(dir);
    const char *const archs[] = {"sm_9000", "sm_1", "gfx90a", "sm_", "compute_xy"};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; ++i) {
        gj_cli_result r;
        RUN(&r, dir, "compile", "--config", SMALL_CONFIG, "--dims", "2", "--arch", archs[i], "-o", "out.cubin");
        if (r.status == 0) {
            fail_msg("--arch %s was accepted", archs[i]);
        }
        assert_refused(&r, r.status);
        assert_true(r.status < 128);
        assert_int_equal(count_dir_entries(dir), 0); /* neither the output nor a temporary */
        gj_cli_result_free(&r);
    }
    free(dir);
}

static void compile_refuses_an_unwritable_output(void **state) {
    (void)state;
    if (!nvrtc_available()) {
        skip();
    }
    char *dir = gj_test_scratch_dir("compile_unwritable");
    assert_non_null(dir);
    char *path = path_join(dir, "no-such-dir/out.cubin");
    gj_cli_result r;
    RUN(&r, NULL, "compile", "--config", SMALL_CONFIG, "--dims", "2", "--pass", "forward", "--arch", "sm_90", "-o",
        path);
    assert_refused(&r, 1);
    assert_non_null(strstr(r.err, "no-such-dir"));
    assert_int_equal(count_dir_entries(dir), 0);
    gj_cli_result_free(&r);
    free(path);
    free(dir);
}

/* ------------------------------------------------------------------- demo */

/* The default output names that compile --help states are the files it writes, with
 * --config and with --source. */
static void compile_default_outputs_are_what_help_says(void **state) {
    (void)state;
    gj_cli_result r;
    RUN(&r, NULL, "compile", "--help");
    assert_success(&r);
    const char *output = strstr(r.out, "--output FILE");
    assert_non_null(output);
    const char *next_option = strstr(output, "\n  -j,");
    assert_non_null(next_option);
    const char *names[] = {"encoding.cubin", "encoding.ptx", "kernels.cubin", "kernels.ptx"};
    for (size_t i = 0; i < 4; ++i) {
        const char *at = strstr(output, names[i]);
        if (!at || at > next_option) {
            fail_msg("compile --help does not give %s as a default output", names[i]);
        }
    }
    assert_non_null(strstr(output, "--source"));
    gj_cli_result_free(&r);
    if (!nvrtc_available()) {
        skip();
    }
    char *dir = gj_test_scratch_dir("compile_defaults");
    assert_non_null(dir);
    char *source = path_join(dir, "touch.cu");
    write_text(source, "#include \"grid.cuh\"\n"
                       "extern \"C\" __global__ void touch(float* y) { y[0] = grid_config::D; }\n");
    RUN(&r, dir, "compile", "--source", source, "--encoding", "grid={\"n_levels\": 1}:2", "--kernel", "touch", "--arch",
        "sm_90");
    assert_success(&r);
    gj_cli_result_free(&r);
    RUN(&r, dir, "compile", "--source", source, "--encoding", "grid={\"n_levels\": 1}:2", "--kernel", "touch", "--arch",
        "sm_90", "--ptx");
    assert_success(&r);
    gj_cli_result_free(&r);
    RUN(&r, dir, "compile", "--config", "{\"n_levels\": 1}", "--dims", "1", "--arch", "compute_90", "--pass", "forward");
    assert_success(&r);
    gj_cli_result_free(&r);
    const char *written[] = {"kernels.cubin", "kernels.ptx", "encoding.ptx"};
    for (size_t i = 0; i < 3; ++i) {
        char *path = path_join(dir, written[i]);
        if (!file_exists(path)) {
            fail_msg("compile without -o did not write %s", path);
        }
        free(path);
    }
    free(source);
    free(dir);
}

/* 1 when the library finds a usable GPU here (then the demo runs its kernels). Asked of the
 * library itself, not of the demo's output, so that a demo that wrongly says "no GPU" fails. */
static int gpu_here(void) {
    gj_context *ctx = NULL;
    gj_runtime_info info;
    int found = gj_context_create(&ctx) == GJ_OK && (gj_context_set_log(ctx, NULL, NULL), 1) &&
                gj_runtime_probe(ctx, &info) == GJ_OK;
    gj_context_destroy(ctx);
    return found;
}

/* The value of the demo's "files      DIR (...)" line, copied into dir. */
static void demo_files_line(const char *out, char *dir, size_t size) {
    const char *files = strstr(out, "\nfiles      ");
    assert_non_null(files);
    files += strlen("\nfiles      ");
    const size_t len = strcspn(files, " \n");
    assert_true(len > 0 && len < size);
    memcpy(dir, files, len);
    dir[len] = '\0';
}

/* The demo writes the source (and, without a GPU, the cubin) where it says; with a GPU it
 * runs the kernels and checks them against the CPU reference, without one its last line
 * says that this was skipped and why. */
static void demo_writes_the_source(void **state) {
    (void)state;
    char *dir = gj_test_scratch_dir("demo");
    assert_non_null(dir);
    gj_cli_result r;
    RUN(&r, NULL, "demo", "--out-dir", dir);
    assert_success(&r);
    assert_non_null(strstr(r.out, "resolution")); /* the level table */
    const char *written = strstr(r.out, "written");
    assert_non_null(written);
    char source_path[4096];
    assert_int_equal(sscanf(written, "written %4095s", source_path), 1);
    size_t size = 0;
    char *source = gj_test_read_file(source_path, &size);
    assert_non_null(source);
    assert_non_null(strstr(source, "__global__"));
    char *expected = path_join(dir, "encoding.cu");
    char *real_expected = realpath(expected, NULL), *real_reported = realpath(source_path, NULL);
    assert_non_null(real_expected);
    assert_string_equal(real_expected, real_reported);
    char files_dir[4096];
    demo_files_line(r.out, files_dir, sizeof files_dir);
    char *real_dir = realpath(dir, NULL);
    assert_string_equal(files_dir, real_dir);
    free(real_dir);

    char *cubin_path = path_join(dir, "encoding.cubin");
    /* The last line of the output. */
    const char *last = r.out + r.out_len - 1;
    while (last > r.out && last[-1] != '\n') {
        --last;
    }
    if (gpu_here()) {
        /* The module, the timed passes, the check: "agrees within fp16 rounding". */
        const char *words[] = {"== GPU", "module     ready", "forward ", "backward ", "check      1000 points",
                               "agrees within"};
        for (size_t i = 0; i < sizeof words / sizeof words[0]; ++i) {
            if (!strstr(r.out, words[i])) {
                fail_msg("demo with a GPU: no '%s' in:\n%s", words[i], r.out);
            }
        }
        assert_null(strstr(r.out, "skipped"));
        assert_false(file_exists(cubin_path)); /* the GPU path compiles into the cache, not a file */
    } else {
        assert_non_null(strstr(r.out, "no GPU here"));
        if (!strstr(last, "skipped    running the kernels and checking them against the CPU reference: no GPU here (")) {
            fail_msg("demo without a GPU: the last line does not say what was skipped and why: '%s'", last);
        }
        if (strstr(r.out, "skipped    compiling")) {
            print_message("(demo: compilation skipped, NVRTC not available)\n");
            assert_false(nvrtc_available());
        } else {
            char *cubin = gj_test_read_file(cubin_path, NULL);
            assert_non_null(cubin);
            assert_memory_equal(cubin, "\x7f" "ELF", 4);
            free(cubin);
            assert_non_null(strstr(r.out, "encoding.cu, encoding.cubin)"));
        }
    }
    free(cubin_path);
    free(real_expected);
    free(real_reported);
    free(expected);
    free(source);
    gj_cli_result_free(&r);
    free(dir);
}

/* Without --out-dir the demo makes a new directory of its own under $TMPDIR (never a fixed
 * /tmp/gridjit-demo that another user or run may hold) and says which. */
static void demo_default_directory_is_new(void **state) {
    (void)state;
    char *tmp = gj_test_scratch_dir("demo_tmpdir");
    assert_non_null(tmp);
    const char *saved = getenv("TMPDIR");
    char *saved_copy = saved ? strdup(saved) : NULL;
    setenv("TMPDIR", tmp, 1);
    gj_cli_result r;
    RUN(&r, tmp, "demo");
    if (saved_copy) {
        setenv("TMPDIR", saved_copy, 1);
    } else {
        unsetenv("TMPDIR");
    }
    free(saved_copy);
    assert_success(&r);
    char files_dir[4096];
    demo_files_line(r.out, files_dir, sizeof files_dir);
    char *real_tmp = realpath(tmp, NULL);
    assert_non_null(real_tmp);
    char prefix[4200];
    snprintf(prefix, sizeof prefix, "%s/gridjit-demo-", real_tmp);
    if (strncmp(files_dir, prefix, strlen(prefix)) != 0 || strlen(files_dir) != strlen(prefix) + 6) {
        fail_msg("demo wrote to %s, not to a new %sXXXXXX", files_dir, prefix);
    }
    char *source = path_join(files_dir, "encoding.cu");
    assert_true(file_exists(source));
    char *cubin = path_join(files_dir, "encoding.cubin");
    unlink(source);
    unlink(cubin);
    assert_int_equal(rmdir(files_dir), 0); /* it held nothing else */
    free(cubin);
    free(source);
    free(real_tmp);
    gj_cli_result_free(&r);
    free(tmp);
}

int main(void) {
    if (!gj_test_cli_path()) {
        fprintf(stderr, "test_cli: GRIDJIT_CLI is not set (run through ctest); skipping\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tool_help_lists_the_commands),
        cmocka_unit_test(subcommand_help_names_its_options),
        cmocka_unit_test(version_prints_the_version),
        cmocka_unit_test(bad_command_lines_are_usage_errors),
        cmocka_unit_test(no_arguments_is_a_usage_error),
        cmocka_unit_test(short_options_mean_one_thing_everywhere),
        cmocka_unit_test(misspellings_get_a_suggestion),
        cmocka_unit_test(info_json_matches_an_independent_layout),
        cmocka_unit_test(info_json_hand_computed_numbers),
        cmocka_unit_test(info_json_large_n_params_is_an_integer),
        cmocka_unit_test(info_hyperparams_round_trip),
        cmocka_unit_test(info_reads_a_config_file),
        cmocka_unit_test(info_table_shows_the_levels),
        cmocka_unit_test(info_refuses_bad_configs),
        cmocka_unit_test(info_refuses_missing_and_unreadable_files),
        cmocka_unit_test(dump_is_deterministic_and_complete),
        cmocka_unit_test(dump_options_change_the_source),
        cmocka_unit_test(gradients_option_sets_the_gradient_type),
        cmocka_unit_test(dump_refuses_bad_input),
        cmocka_unit_test(compile_writes_an_elf_cubin),
        cmocka_unit_test(compile_writes_ptx),
        cmocka_unit_test(compile_json_describes_the_output),
        cmocka_unit_test(compile_refuses_an_unknown_arch),
        cmocka_unit_test(compile_refuses_an_unwritable_output),
        cmocka_unit_test(compile_default_outputs_are_what_help_says),
        cmocka_unit_test(demo_writes_the_source),
        cmocka_unit_test(demo_default_directory_is_new),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
