/* gridjit info: the layout of a configuration, as a table or as one JSON object. */
#include "cli_common.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

static const char *const CMD = "info";

static void usage(void) {
    printf("Usage: gridjit info --config C [--dims D] [--json]\n"
           "\n"
           "Prints the hyperparameters, n_params, n_output_dims and the level table of\n"
           "an encoding.\n"
           "\n"
           "Options:\n"
           "  -c, --config C   configuration: a JSON file, or inline JSON starting with '{'\n"
           "  -d, --dims D     number of input dimensions (default: the configuration's\n"
           "                   \"n_dims_to_encode\", else 3)\n"
           "  -j, --json       print exactly one JSON object:\n"
           "                   {\"n_dims\", \"n_levels\", \"n_features_per_level\", \"n_params\",\n"
           "                    \"n_output_dims\", \"levels\": [{\"level\", \"scale\", \"resolution\",\n"
           "                    \"entries\", \"offset\", \"hashed\"}], \"hyperparams\": {...}}\n"
           "  -h, --help       show this help\n"
           "\n"
           "Columns: scale = exp2(level * log2(per_level_scale)) * base_resolution - 1 (float,\n"
           "printed to round-trip); resolution = ceil(scale) + 1; entries = table entries of\n"
           "the level, each n_features_per_level values; offset = index of the level's first\n"
           "entry (its first parameter is offset * n_features_per_level); index = 'hash' when\n"
           "corners are hashed, 'dense' when indexed directly (modulo the entries).\n"
           "\"hyperparams\" is the canonical configuration; it parses back to the same encoding.\n");
}

/* Integers as raw text so that no value is ever printed in exponent form. */
static int add_u64(cJSON *object, const char *key, uint64_t value) {
    char text[32];
    snprintf(text, sizeof text, "%" PRIu64, value);
    return cJSON_AddRawToObject(object, key, text) != NULL;
}

/* A float with enough digits to round-trip (9 significant); null if not finite. */
static int add_float(cJSON *object, const char *key, float value) {
    char text[32];
    if (!isfinite(value)) {
        return cJSON_AddNullToObject(object, key) != NULL;
    }
    snprintf(text, sizeof text, "%.9g", (double)value);
    return cJSON_AddRawToObject(object, key, text) != NULL;
}

static int add_level(cJSON *levels, const gj_encoding *enc, uint32_t l) {
    gj_level_info info;
    cJSON *level = cJSON_CreateObject();
    if (!level || !cJSON_AddItemToArray(levels, level) || gj_encoding_level(enc, l, &info) != GJ_OK) {
        return 0;
    }
    return add_u64(level, "level", info.level) && add_float(level, "scale", info.scale) &&
           add_u64(level, "resolution", info.resolution) && add_u64(level, "entries", info.entries) &&
           add_u64(level, "offset", info.offset) && cJSON_AddBoolToObject(level, "hashed", info.hashed) != NULL;
}

static int add_hyperparams(cJSON *root, const gj_encoding *enc) {
    char *text = gj_encoding_hyperparams(enc);
    cJSON *hyperparams = text ? cJSON_Parse(text) : NULL;
    gj_free(text);
    if (!cJSON_IsObject(hyperparams) || !cJSON_AddItemToObject(root, "hyperparams", hyperparams)) {
        cJSON_Delete(hyperparams);
        return 0;
    }
    return 1;
}

static cJSON *build_json(const gj_encoding *enc) {
    cJSON *root = cJSON_CreateObject();
    cJSON *levels = NULL;
    int ok = root && add_u64(root, "n_dims", gj_encoding_n_dims(enc)) &&
             add_u64(root, "n_levels", gj_encoding_n_levels(enc)) &&
             add_u64(root, "n_features_per_level", gj_encoding_n_features_per_level(enc)) &&
             add_u64(root, "n_params", gj_encoding_n_params(enc)) &&
             add_u64(root, "n_output_dims", gj_encoding_n_output_dims(enc)) &&
             (levels = cJSON_AddArrayToObject(root, "levels")) != NULL;
    for (uint32_t l = 0; ok && l < gj_encoding_n_levels(enc); ++l) {
        ok = add_level(levels, enc, l);
    }
    ok = ok && add_hyperparams(root, enc);
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

static int print_json(const gj_encoding *enc) {
    cJSON *root = build_json(enc);
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) {
        gj_cli_error(CMD, "cannot build the JSON output (out of memory, or bad hyperparameters from the library)");
        return GJ_CLI_FAILURE;
    }
    printf("%s\n", text);
    free(text);
    return gj_cli_flush_stdout(CMD);
}

/* Built in memory first so that a failure half-way prints nothing on stdout. */
static int print_table(const gj_encoding *enc) {
    char *text = NULL;
    size_t size = 0;
    FILE *memory = open_memstream(&text, &size);
    int ok = memory && gj_cli_print_encoding(memory, enc) == GJ_CLI_OK;
    if (memory) {
        ok = (fclose(memory) == 0) && ok;
    }
    int rc = GJ_CLI_FAILURE;
    if (ok) {
        rc = gj_cli_write_stdout(CMD, text, size);
    } else {
        gj_cli_error(CMD, "cannot print the summary (out of memory, or bad hyperparameters from the library)");
    }
    free(text);
    return rc;
}

int gj_cli_info(int argc, char **argv) {
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'},
        {"dims", required_argument, NULL, 'd'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config = NULL, *dims_text = NULL;
    int json = 0, opt;
    while ((opt = getopt_long(argc, argv, ":c:d:jh", options, NULL)) != -1) {
        switch (opt) {
        case 'c': config = optarg; break;
        case 'd': dims_text = optarg; break;
        case 'j': json = 1; break;
        case 'h': usage(); return gj_cli_flush_stdout(CMD);
        default: return gj_cli_bad_option(CMD, opt, argv, options);
        }
    }
    uint32_t n_dims = 0;
    int rc = gj_cli_no_operands(CMD, argc, argv, options);
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_parse_dims(CMD, dims_text, &n_dims);
    }
    if (rc == GJ_CLI_OK && !config) {
        rc = gj_cli_usage_error(CMD, "--config is required (a file or inline JSON)");
    }
    if (rc != GJ_CLI_OK) {
        return rc;
    }
    gj_context *ctx = NULL;
    gj_encoding *enc = NULL;
    rc = gj_cli_open(CMD, config, n_dims, &ctx, &enc);
    if (rc == GJ_CLI_OK) {
        rc = json ? print_json(enc) : print_table(enc);
    }
    gj_cli_close(ctx, enc);
    return rc;
}
