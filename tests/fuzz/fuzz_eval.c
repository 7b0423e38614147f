/* Fuzz target: the checks `gridjit eval` makes on its input files (tools/cmd_eval.c),
 * driven in-process through gj_cli_eval() with files written to a scratch directory.
 * GRIDJIT_DRIVER=off: the command can never reach a GPU, so an input that passes every
 * check ends in "no GPU".
 *
 * Input: a flags byte, a dims byte, then sections (16-bit length, bytes) in this order:
 *   [config, when flags bits 5-7 are 7] points, params, [dl_dy: bit 0], [dl_ddldx: bit 1],
 *   [max-level file: bit 2, else max-level text: bit 3]
 *   bit 4: pass --dims with the dims byte; bits 5-7: one of CONFIGS (inline), or 7: the
 *   config section, written to a file and passed by name.
 *
 * Oracle: the harness predicts from the documented contract (`gridjit eval --help`:
 * P holds N * D floats, W n_params, G N * n_output_dims, H N * D, M a number in [0, 1] or
 * N floats; --dl-ddldx needs --dl-dy; a network's or model's configuration takes neither H
 * nor M) whether the inputs are acceptable, and checks that
 * the command ends in "no GPU" exactly when they are; that it exits 1 or 2 (2 for the
 * usage errors the contract names) with a
 * "gridjit eval: " message on stderr and nothing on stdout; and that nothing leaks. */
#include "fuzz_common.h"

#include "cli.h"
#include "cli_common.h"
#include "cli_network.h"
#include "gridjit.h"

#include <errno.h>

static const char *const CONFIGS[7] = {
    "{\"otype\": \"HashGrid\", \"n_levels\": 2, \"log2_hashmap_size\": 4, \"base_resolution\": 2}",
    "{\"otype\": \"DenseGrid\", \"n_levels\": 1, \"n_features_per_level\": 1, \"base_resolution\": 2, "
    "\"n_dims_to_encode\": 2}",
    "{\"otype\": \"TiledGrid\", \"n_levels\": 2, \"n_features_per_level\": 4, \"base_resolution\": 2, "
    "\"n_dims_to_encode\": 1}",
    "{\"otype\": \"HashGrid\", \"n_levels\": 1, \"n_features_per_level\": 8, \"log2_hashmap_size\": 2, "
    "\"base_resolution\": 1, \"precision\": \"fp32\", \"n_dims_to_encode\": 4}",
    "{\"otype\": \"HashGrid\", \"hash\": \"BaseConvert\", \"n_levels\": 1, \"n_features_per_level\": 1, "
    "\"log2_hashmap_size\": 3, \"base_resolution\": 1, \"n_dims_to_encode\": 9}",
    "{\"otype\": \"HashGrid\", \"n_levels\": 3, \"log2_hashmap_size\": 1, \"base_resolution\": 1, "
    "\"n_dims_to_encode\": 1}",
    "{\"otype\": \"Grid\", \"n_levels\": 1, \"log2_hashmap_size\": 40}",
};

static gj_context *ctx; /* for the prediction */
static char path_config[300], path_points[300], path_params[300], path_dl_dy[300], path_dl_ddldx[300],
    path_max_level[300], path_out[300];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    gjf_offline();
    const char *dir = gjf_scratch_dir();
    snprintf(path_config, sizeof path_config, "%s/config.json", dir);
    snprintf(path_points, sizeof path_points, "%s/points.f32", dir);
    snprintf(path_params, sizeof path_params, "%s/params.f32", dir);
    snprintf(path_dl_dy, sizeof path_dl_dy, "%s/dl_dy.f32", dir);
    snprintf(path_dl_ddldx, sizeof path_dl_ddldx, "%s/dl_ddldx.f32", dir);
    snprintf(path_max_level, sizeof path_max_level, "%s/max_level.f32", dir);
    snprintf(path_out, sizeof path_out, "%s/out", dir);
    ctx = gjf_quiet_context();
    return 0;
}

/* The sizes both kinds of configuration check (d floats a point, n_out outputs, n_params
 * parameters): 1 refused, else 0 with *n the points. */
static int predict_sizes(size_t points, size_t params, int have_g, size_t g, uint64_t d, uint64_t n_out,
                         uint64_t n_params, uint64_t *n) {
    if (points % 4 != 0 || (points / 4) % d != 0) {
        return 1;
    }
    *n = points / 4 / d;
    if (params % 4 != 0 || params / 4 != n_params) {
        return 1;
    }
    if (have_g && (g % 4 != 0 || g / 4 != *n * n_out)) {
        return 1;
    }
    return 0;
}

/* The same for a network's or model's configuration (`gridjit eval --help`: P holds N * D
 * floats, D a model's encoding dimensions or a network's inputs, W n_params, G N *
 * n_output_dims; the encodings' --dl-ddldx and --max-level are usage errors). */
static int predict_network(const char *json, int have_dims, unsigned dims, size_t points, size_t params,
                           int have_g, size_t g, int have_h, int m_mode) {
    if (have_h || m_mode || (have_dims && dims == 0)) {
        return 2;
    }
    gj_network *net = NULL;
    if (gj_network_create(ctx, json, have_dims ? dims : 0, 0, &net) != GJ_OK) {
        return 1;
    }
    const uint64_t d = gj_network_n_input_dims(net), n_out = gj_network_n_output_dims(net);
    const uint64_t n_params = gj_network_n_params(net);
    gj_network_destroy(net);
    uint64_t n = 0;
    return predict_sizes(points, params, have_g, g, d, n_out, n_params, &n);
}

/* What the documented contract says about the inputs: 2 usage error, 1 refused, 0 fine. */
static int predict(const char *json, int have_dims, unsigned dims, size_t points, size_t params, int have_g,
                   size_t g, int have_h, size_t h, int m_mode, size_t m_bytes, float m_value) {
    if ((have_dims && dims == 0) || (have_h && !have_g)) {
        return 2;
    }
    if (gj_cli_classify_config(json) != GJ_CLI_CONFIG_ENCODING) {
        return predict_network(json, have_dims, dims, points, params, have_g, g, have_h, m_mode);
    }
    gj_encoding *enc = NULL;
    if (gj_encoding_create(ctx, json, have_dims ? dims : 0, &enc) != GJ_OK) {
        return 1;
    }
    const uint64_t d = gj_encoding_n_dims(enc), n_out = gj_encoding_n_output_dims(enc), n_params = gj_encoding_n_params(enc);
    gj_encoding_destroy(enc);
    uint64_t n = 0;
    if (predict_sizes(points, params, have_g, g, d, n_out, n_params, &n)) {
        return 1;
    }
    if (have_h && (h % 4 != 0 || h / 4 != n * d)) {
        return 1;
    }
    if (m_mode == 1 && (m_bytes % 4 != 0 || m_bytes / 4 != n)) {
        return 1;
    }
    if (m_mode == 2 && !(m_value >= 0.0f && m_value <= 1.0f)) {
        return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gjf_reader r = {data, size};
    const uint8_t flags = gjf_u8(&r);
    const unsigned dims = gjf_u8(&r);
    const int have_dims = (flags >> 4) & 1, have_g = flags & 1, have_h = (flags >> 1) & 1;
    const int m_mode = (flags & 4) ? 1 : (flags & 8) ? 2 : 0; /* file, text, none */
    const unsigned choice = flags >> 5;

    char *json = NULL;
    const char *config_arg = NULL;
    if (choice == 7) {
        size_t n = 0;
        const uint8_t *bytes = gjf_section(&r, &n);
        gjf_write_file(path_config, bytes, n);
        json = gjf_strndup(bytes, n);
        config_arg = path_config;
    } else {
        json = gjf_strndup((const uint8_t *)CONFIGS[choice], strlen(CONFIGS[choice]));
        config_arg = CONFIGS[choice];
    }
    size_t n_points = 0, n_params = 0, n_g = 0, n_h = 0, n_m = 0;
    const uint8_t *points = gjf_section(&r, &n_points);
    const uint8_t *params = gjf_section(&r, &n_params);
    const uint8_t *g = have_g ? gjf_section(&r, &n_g) : NULL;
    const uint8_t *h = have_h ? gjf_section(&r, &n_h) : NULL;
    const uint8_t *m = m_mode ? gjf_section(&r, &n_m) : NULL;

    char max_level_text[40] = "";
    float m_value = 0.0f;
    if (m_mode == 2) {
        /* Only texts that read wholly as a float: anything else would name a file. */
        if (n_m == 0 || n_m >= sizeof max_level_text || memchr(m, '\0', n_m)) {
            free(json);
            return 0;
        }
        memcpy(max_level_text, m, n_m);
        max_level_text[n_m] = '\0';
        char *end = NULL;
        errno = 0;
        m_value = strtof(max_level_text, &end);
        if (end == max_level_text || *end != '\0' || errno != 0) {
            free(json);
            return 0;
        }
    }
    gjf_write_file(path_points, points, n_points);
    gjf_write_file(path_params, params, n_params);
    if (have_g) {
        gjf_write_file(path_dl_dy, g, n_g);
    }
    if (have_h) {
        gjf_write_file(path_dl_ddldx, h, n_h);
    }
    if (m_mode == 1) {
        gjf_write_file(path_max_level, m, n_m);
    }

    char dims_text[16];
    snprintf(dims_text, sizeof dims_text, "%u", dims);
    char *argv[20];
    int argc = 0;
    argv[argc++] = "eval";
    argv[argc++] = "--config";
    argv[argc++] = (char *)config_arg;
    if (have_dims) {
        argv[argc++] = "--dims";
        argv[argc++] = dims_text;
    }
    argv[argc++] = "--points";
    argv[argc++] = path_points;
    argv[argc++] = "--params";
    argv[argc++] = path_params;
    if (have_g) {
        argv[argc++] = "--dl-dy";
        argv[argc++] = path_dl_dy;
    }
    if (have_h) {
        argv[argc++] = "--dl-ddldx";
        argv[argc++] = path_dl_ddldx;
    }
    if (m_mode) {
        argv[argc++] = "--max-level";
        argv[argc++] = m_mode == 1 ? path_max_level : max_level_text;
    }
    argv[argc++] = "--out-dir";
    argv[argc++] = path_out;
    argv[argc] = NULL;

    const int expected = predict(json, have_dims, dims, n_points, n_params, have_g, n_g, have_h, n_h, m_mode, n_m, m_value);

    gjf_capture cap;
    gjf_capture_begin(&cap);
    gj_cli_getopt_reset();
    const int rc = gj_cli_eval(argc, argv);
    gjf_capture_end(&cap);

    /* The first line (the input may echo "no GPU" inside another message). */
    const int no_gpu = strncmp(cap.err, "gridjit eval: no GPU: ", 22) == 0;
    GJF_CHECK(rc == 1 || rc == 2, "exit code %d; stderr: %s", rc, cap.err);
    GJF_CHECK(cap.out_size == 0, "%zu bytes on stdout after a refusal", cap.out_size);
    GJF_CHECK(strstr(cap.err, "gridjit eval: ") != NULL, "no message; stderr: %s", cap.err);
    GJF_CHECK((expected == 0) == no_gpu, "the contract says %s, the command said: %s",
              expected == 0 ? "acceptable" : "refuse", cap.err);
    /* A usage error the contract names (--dims 0, --dl-ddldx alone) must exit 2; a refused
     * value may be either (an out-of-range --dims is a usage error to the CLI). */
    GJF_CHECK(expected != 2 || rc == 2, "expected exit 2, got %d: %s", rc, cap.err);
    gjf_capture_free(&cap);
    free(json);
    return 0;
}
