/* The disk cache through the CLI contract: precompile, then load with NVRTC disabled;
 * compile --json "key"/"cache"; cache list|stats|verify|prune|clear (on entries made
 * through the store, so that maintenance is tested without NVRTC). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_support.h"
#include "run_cli.h"

/* Small configurations that compile in a fraction of a second (forward pass, D = 2). */
#define CONFIG_A "{\"n_levels\": 1, \"log2_hashmap_size\": 10}"
#define CONFIG_B "{\"n_levels\": 2, \"log2_hashmap_size\": 10}"
#define CONFIG_C "{\"n_levels\": 3, \"log2_hashmap_size\": 10}"

#define RUN(result, ...) gj_test_run_cli_checked(NULL, (const char *const[]){__VA_ARGS__, NULL}, (result))

static void expect_status(const gj_cli_result *r, int status) {
    if (r->status != status) {
        fail_msg("exit %d (expected %d)\nstdout: %s\nstderr: %s", r->status, status, r->out, r->err);
    }
}

static cJSON *parse_json(const gj_cli_result *r) {
    expect_status(r, 0);
    cJSON *root = cJSON_Parse(r->out);
    if (!root) {
        fail_msg("not JSON: %s", r->out);
    }
    return root;
}

static const char *string_member(const cJSON *obj, const char *name) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsString(item)) {
        fail_msg("member \"%s\" is not a string", name);
    }
    return item->valuestring;
}

static int is_key(const char *text) {
    if (strlen(text) != 32) {
        return 0;
    }
    for (const char *p = text; *p; p++) {
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) {
            return 0;
        }
    }
    return 1;
}

/* Whether compile_json's last run was retried (run_cli.h): its first attempt stored the
 * binary, so the run that reports found it ("hit" where the attempt missed). */
static int compile_retried;

/* gridjit compile CONFIG --json into dir; returns "cache" and copies "key". */
static const char *compile_json(const char *dir, const char *config, char key[33], const char *extra) {
    gj_cli_result r;
    char out[2100];
    snprintf(out, sizeof out, "%s/out.cubin", dir);
    if (extra) {
        RUN(&r, "compile", "--config", config, "--dims", "2", "--arch", "sm_80", "--pass", "forward", "--cache-dir",
            dir, "-o", out, "--json", extra);
    } else {
        RUN(&r, "compile", "--config", config, "--dims", "2", "--arch", "sm_80", "--pass", "forward", "--cache-dir",
            dir, "-o", out, "--json");
    }
    compile_retried = r.retried;
    cJSON *root = parse_json(&r);
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(root, "key");
    snprintf(key, 33, "%s", cJSON_IsString(k) ? k->valuestring : "");
    const char *cache = string_member(root, "cache");
    static char result[8];
    snprintf(result, sizeof result, "%s", cache);
    cJSON_Delete(root);
    gj_cli_result_free(&r);
    return result;
}

/* compile_json's "cache" is want; a retried run's "hit" stands for its first attempt's miss. */
static void expect_cache(const char *got, const char *want) {
    if (compile_retried && strcmp(want, "miss") == 0 && strcmp(got, "hit") == 0) {
        return;
    }
    assert_string_equal(got, want);
}

/* Keys of `gridjit cache list --json` whose kind is kind. */
static int listed(const char *dir, const char *kind, char keys[][33], int max) {
    gj_cli_result r;
    RUN(&r, "cache", "list", "--cache-dir", dir, "--json");
    cJSON *root = parse_json(&r);
    const cJSON *entries = cJSON_GetObjectItemCaseSensitive(root, "entries");
    assert_true(cJSON_IsArray(entries));
    int n = 0;
    for (const cJSON *e = entries->child; e; e = e->next) {
        const char *path = string_member(e, "path");
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "bytes")));
        assert_true(cJSON_GetObjectItemCaseSensitive(e, "bytes")->valuedouble == (double)st.st_size);
        assert_true(is_key(string_member(e, "key")));
        const char *k = string_member(e, "kind");
        assert_true(strcmp(k, "cubin") == 0 || strcmp(k, "ptx") == 0 || strcmp(k, "source") == 0);
        if (strcmp(k, "source") != 0) {
            assert_true(strncmp(string_member(e, "target"), "sm_", 3) == 0 ||
                        strncmp(string_member(e, "target"), "compute_", 8) == 0);
        }
        if (strcmp(k, kind) == 0 && n < max) {
            snprintf(keys[n++], 33, "%s", string_member(e, "key"));
        }
    }
    cJSON_Delete(root);
    gj_cli_result_free(&r);
    return n;
}

/* precompile fills a directory with every program a module needs (3 for the forward pass:
 * forward, forward with dy/dx, the helpers), verified and kept on a second run. */
static void precompile_fills_the_module_programs(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    char *dir = gjt_scratch("cli_precompile");
    char *configs = gjt_scratch("cli_precompile_configs");
    char path[2200];
    snprintf(path, sizeof path, "%s/b.json", configs);
    gjt_write_file(path, CONFIG_B, strlen(CONFIG_B));
    snprintf(path, sizeof path, "%s/notes.txt", configs); /* not a .json: ignored */
    gjt_write_file(path, "x", 1);

    gj_cli_result r;
    RUN(&r, "precompile", "--config", CONFIG_A, "--config", configs, "--dims", "2", "--arch", "sm_80", "--pass",
        "forward", "--cache-dir", dir, "--jobs", "2");
    expect_status(&r, 0);
    assert_non_null(strstr(r.out, "2 configurations x 1 architecture"));
    /* A retried run finds what the first attempt compiled (run_cli.h). */
    assert_non_null(strstr(r.out, r.retried ? "0 programs compiled, 10 already cached, 0 failed"
                                            : "10 programs compiled, 0 already cached, 0 failed"));
    gj_cli_result_free(&r);
    RUN(&r, "precompile", "--config", CONFIG_A, "--config", configs, "--dims", "2", "--arch", "sm_80", "--pass",
        "forward", "--cache-dir", dir);
    expect_status(&r, 0);
    assert_non_null(strstr(r.out, "0 programs compiled, 10 already cached, 0 failed"));
    gj_cli_result_free(&r);
    char keys[16][33];
    assert_int_equal(listed(dir, "cubin", keys, 16), 10);
    free(configs);
    free(dir);
}

/* Without NVRTC, `gridjit compile` loads what it stored before, and for anything else names
 * the configuration key and the command that makes the entry; that command works. */
static void compile_without_nvrtc_names_the_command(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    char *dir = gjt_scratch("cli_offline");
    char key_a[33], again[33];
    expect_cache(compile_json(dir, CONFIG_A, key_a, NULL), "miss");
    setenv("GRIDJIT_NVRTC", "off", 1);
    expect_cache(compile_json(dir, CONFIG_A, again, NULL), "hit");
    assert_string_equal(key_a, again);

    /* another configuration: exit 1 naming its key and the command that would make it */
    gj_cli_result r;
    RUN(&r, "compile", "--config", CONFIG_C, "--dims", "2", "--arch", "sm_80", "--pass", "forward", "--cache-dir", dir,
        "--json");
    expect_status(&r, 1);
    assert_int_equal(r.out_len, 0);
    const char *command = strstr(r.err, "gridjit compile --config '");
    assert_non_null(command);
    assert_non_null(strstr(command, "--arch sm_80"));
    assert_non_null(strstr(command, "--pass forward"));
    assert_non_null(strstr(command, dir));
    const char *key_at = strstr(r.err, "configuration key ");
    assert_non_null(key_at);
    char config_key[33];
    snprintf(config_key, sizeof config_key, "%s", key_at + strlen("configuration key "));
    assert_true(is_key(config_key));
    /* ...and that command, run with NVRTC, does make it */
    unsetenv("GRIDJIT_NVRTC");
    char line[4096];
    snprintf(line, sizeof line, "cd '%s' && \"$GRIDJIT_CLI\" %s", dir, command + strlen("gridjit "));
    line[strcspn(line, "\n")] = '\0';
    gj_cli_result_free(&r);
    assert_int_equal(system(line) == 0 ? 0 : 1, 0);
    setenv("GRIDJIT_NVRTC", "off", 1);
    char key_c[33];
    expect_cache(compile_json(dir, CONFIG_C, key_c, NULL), "hit");
    char entry_name[80], path[2200];
    snprintf(entry_name, sizeof entry_name, "%s-%s.gjc", config_key, key_c);
    snprintf(path, sizeof path, "%s/%.2s/%s", dir, config_key, entry_name);
    assert_int_equal(access(path, F_OK), 0); /* the named configuration key is the entry's */
    unsetenv("GRIDJIT_NVRTC");
    free(dir);
}

/* Without NVRTC, precompile verifies what is already cached and succeeds when nothing is
 * missing; otherwise it fails for the missing programs only, naming each of them. */
static void precompile_without_nvrtc_verifies_the_cache(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    char *dir = gjt_scratch("cli_precompile_offline");
    gj_cli_result r;
    RUN(&r, "precompile", "--config", CONFIG_A, "--dims", "2", "--arch", "sm_80", "--pass", "forward", "--cache-dir",
        dir);
    expect_status(&r, 0);
    assert_non_null(strstr(r.out, r.retried ? "0 programs compiled, 5 already cached, 0 failed"
                                            : "5 programs compiled, 0 already cached, 0 failed"));
    gj_cli_result_free(&r);

    setenv("GRIDJIT_NVRTC", "off", 1);
    RUN(&r, "precompile", "--config", CONFIG_A, "--dims", "2", "--arch", "sm_80", "--pass", "forward", "--cache-dir",
        dir);
    expect_status(&r, 0);
    assert_non_null(strstr(r.out, "0 programs compiled, 5 already cached, 0 failed"));
    gj_cli_result_free(&r);
    /* All passes: the 5 forward programs are there, the 7 others are not. */
    RUN(&r, "precompile", "--config", CONFIG_A, "--dims", "2", "--arch", "sm_80", "--cache-dir", dir);
    unsetenv("GRIDJIT_NVRTC");
    expect_status(&r, 1);
    assert_non_null(strstr(r.out, "0 programs compiled, 5 already cached, 7 failed"));
    if (!strstr(r.err, "7 of 12 programs failed (backward, backward_input, backward_dx, backward_rows, backward_input_rows, backward_dx_rows, backward_backward)") ||
        !strstr(r.err, "NVRTC") || !strstr(r.err, "gridjit precompile --config")) {
        fail_msg("the missing programs are not named, or not the command that makes them: %s", r.err);
    }
    gj_cli_result_free(&r);
    free(dir);
}

static void compile_reports_the_cache(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    char *dir = gjt_scratch("cli_compile");
    char key1[33], key2[33], key3[33];
    expect_cache(compile_json(dir, CONFIG_A, key1, NULL), "miss");
    expect_cache(compile_json(dir, CONFIG_A, key2, NULL), "hit");
    assert_string_equal(key1, key2);
    expect_cache(compile_json(dir, CONFIG_A, key3, "--no-cache"), "off");
    assert_string_equal(key1, key3); /* the key is known even uncached */
    assert_int_equal(gjt_count_suffix(dir, ".cu"), 0);
    expect_cache(compile_json(dir, CONFIG_B, key2, "--keep-source"), "miss");
    char keys[4][33];
    assert_int_equal(listed(dir, "source", keys, 4), 1);
    assert_string_equal(keys[0], key2);

    /* cleared, then without NVRTC: the message names the key compile --json showed */
    gj_cli_result r;
    RUN(&r, "cache", "clear", "--cache-dir", dir);
    expect_status(&r, 0);
    gj_cli_result_free(&r);
    setenv("GRIDJIT_NVRTC", "off", 1);
    RUN(&r, "compile", "--config", CONFIG_A, "--dims", "2", "--arch", "sm_80", "--pass", "forward", "--cache-dir", dir);
    unsetenv("GRIDJIT_NVRTC");
    expect_status(&r, 1);
    if (!strstr(r.err, key1)) {
        fail_msg("\"%s\" does not name key %s", r.err, key1);
    }
    gj_cli_result_free(&r);

    /* a world-writable directory: uncached success, one warning */
    char *unsafe = gjt_scratch("cli_compile_unsafe");
    assert_int_equal(chmod(unsafe, 0777), 0);
    char out[2200];
    snprintf(out, sizeof out, "%s/out.cubin", unsafe);
    RUN(&r, "compile", "--config", CONFIG_A, "--dims", "2", "--arch", "sm_80", "--pass", "forward", "--cache-dir",
        unsafe, "-o", out, "--json");
    cJSON *root = parse_json(&r);
    assert_string_equal(string_member(root, "cache"), "off");
    assert_non_null(strstr(r.err, "world-writable"));
    assert_non_null(strstr(r.err, "warning"));
    cJSON_Delete(root);
    gj_cli_result_free(&r);
    assert_int_equal(gjt_count_suffix(unsafe, ".gjc"), 0);
    free(unsafe);
    free(dir);
}

/* Entries made through the store with made-up blobs (variants 0..n-1): no NVRTC needed.
 * Each counts as a miss and a compile in the directory's statistics. */
static void populate(const char *dir, int n) {
    gj_context *ctx = gjt_context(dir, NULL);
    for (int i = 0; i < n; i++) {
        gjt_blob b;
        gjt_blob_init(&b, i, 1000);
        assert_int_equal(gjt_fetch(ctx, &b), GJ_CACHE_MISS);
        gjt_blob_free(&b);
    }
    gj_context_destroy(ctx);
}

/* Where blob variant v lives in dir (malloc()ed). */
static char *blob_entry(const char *dir, int v) {
    gjt_blob b;
    gjt_blob_init(&b, v, 1000);
    char *path = gjt_blob_path(dir, &b, GJ__ENTRY_EXT);
    gjt_blob_free(&b);
    return path;
}

static void cache_maintenance(void **state) {
    (void)state;
    char *dir = gjt_scratch("cli_maintenance");
    populate(dir, 4);
    char keys[8][33];
    assert_int_equal(listed(dir, "cubin", keys, 8), 4);

    gj_cli_result r;
    RUN(&r, "cache", "verify", "--cache-dir", dir, "--json");
    cJSON *root = parse_json(&r);
    assert_true(cJSON_GetObjectItemCaseSensitive(root, "checked")->valuedouble == 4);
    assert_true(cJSON_GetObjectItemCaseSensitive(root, "bad")->valuedouble == 0);
    cJSON_Delete(root);
    gj_cli_result_free(&r);

    /* one damaged: verify exits 1 and removes it, then 0 */
    char *victim = blob_entry(dir, 2);
    assert_int_equal(truncate(victim, 300), 0);
    RUN(&r, "cache", "verify", "--cache-dir", dir);
    expect_status(&r, 1);
    assert_non_null(strstr(r.err, "truncated"));
    gj_cli_result_free(&r);
    assert_int_equal(access(victim, F_OK), -1);
    RUN(&r, "cache", "verify", "--cache-dir", dir);
    expect_status(&r, 0);
    gj_cli_result_free(&r);

    /* prune under a cap of about one entry */
    struct stat st;
    assert_int_equal(listed(dir, "cubin", keys, 8), 3);
    char *one = blob_entry(dir, 0); /* every entry has this size */
    assert_int_equal(stat(one, &st), 0);
    char cap[32];
    snprintf(cap, sizeof cap, "%lld", (long long)st.st_size + 10);
    RUN(&r, "cache", "prune", "--cache-dir", dir, "--max-bytes", cap, "--json");
    root = parse_json(&r);
    assert_true(cJSON_GetObjectItemCaseSensitive(root, "evicted")->valuedouble == 2);
    cJSON_Delete(root);
    gj_cli_result_free(&r);
    assert_int_equal(listed(dir, "cubin", keys, 8), 1);

    /* stats: counted by every process, including the pruning one */
    RUN(&r, "cache", "stats", "--cache-dir", dir, "--json");
    root = parse_json(&r);
    assert_true(cJSON_GetObjectItemCaseSensitive(root, "compiles")->valuedouble == 4);
    assert_true(cJSON_GetObjectItemCaseSensitive(root, "misses")->valuedouble == 4);
    assert_true(cJSON_GetObjectItemCaseSensitive(root, "corrupt")->valuedouble == 1);
    assert_true(cJSON_GetObjectItemCaseSensitive(root, "evictions")->valuedouble == 2);
    assert_true(cJSON_GetObjectItemCaseSensitive(root, "entries")->valuedouble == 1);
    assert_true(cJSON_GetObjectItemCaseSensitive(root, "bytes")->valuedouble == (double)st.st_size);
    cJSON_Delete(root);
    gj_cli_result_free(&r);

    RUN(&r, "cache", "clear", "--cache-dir", dir);
    expect_status(&r, 0);
    gj_cli_result_free(&r);
    assert_int_equal(listed(dir, "cubin", keys, 8), 0);
    free(one);
    free(victim);
    free(dir);
}

static void command_line_errors(void **state) {
    (void)state;
    static const char *const usage_cases[][9] = {
        {"cache", NULL},
        {"cache", "frobnicate", NULL},
        {"cache", "list", "extra", NULL},
        {"cache", "prune", "--max-bytes", "lots", NULL},
        {"precompile", "--arch", "sm_80", NULL},
        {"precompile", "--config", CONFIG_A, NULL},
        {"precompile", "--config", CONFIG_A, "--arch", "sm_80,,sm_90", NULL},
        {"precompile", "--config", CONFIG_A, "--arch", "gfx90a", NULL},
        {"precompile", "--config", CONFIG_A, "--arch", "sm_80", "--jobs", "0", NULL},
    };
    for (size_t i = 0; i < sizeof usage_cases / sizeof usage_cases[0]; i++) {
        gj_cli_result r;
        assert_int_equal(gj_test_run_cli(NULL, usage_cases[i], &r), 0);
        expect_status(&r, 2);
        assert_int_equal(r.out_len, 0);
        gj_cli_result_free(&r);
    }
    char *dir = gjt_scratch("cli_errors");
    gj_cli_result r;
    RUN(&r, "precompile", "--config", "{\"n_levels\": 0}", "--arch", "sm_80", "--cache-dir", dir);
    expect_status(&r, 1);
    assert_non_null(strstr(r.err, "n_levels"));
    gj_cli_result_free(&r);
    /* Regression: an empty list left no job and divided by zero (SIGFPE). */
    RUN(&r, "precompile", "--config", "[]", "--arch", "sm_80", "--cache-dir", dir);
    expect_status(&r, 1);
    assert_non_null(strstr(r.err, "the list holds no configuration"));
    assert_int_equal(r.out_len, 0);
    gj_cli_result_free(&r);
    RUN(&r, "cache", "--help");
    expect_status(&r, 0);
    assert_non_null(strstr(r.out, "Usage: gridjit cache"));
    gj_cli_result_free(&r);
    RUN(&r, "precompile", "--help");
    expect_status(&r, 0);
    assert_non_null(strstr(r.out, "Usage: gridjit precompile"));
    gj_cli_result_free(&r);
    free(dir);
}

int main(void) {
    if (!gj_test_cli_path()) {
        printf("SKIPPED: GRIDJIT_CLI is not set\n");
        return 77;
    }
    unsetenv("GRIDJIT_CACHE_PATH");
    unsetenv("GRIDJIT_CACHE_DISABLE");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(precompile_fills_the_module_programs),
        cmocka_unit_test(precompile_without_nvrtc_verifies_the_cache),
        cmocka_unit_test(compile_without_nvrtc_names_the_command),
        cmocka_unit_test(compile_reports_the_cache),
        cmocka_unit_test(cache_maintenance),
        cmocka_unit_test(command_line_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
