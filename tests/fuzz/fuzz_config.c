/* Fuzz target: a JSON configuration through gj_encoding_create and gj_encoding_generate,
 * with code-generation options taken from the input.
 *
 * Input: 8 option bytes, then the JSON text (up to the end or a NUL).
 *   [0] passes (low 4 bits; 0 is the default, bit 3 is not a pass)
 *   [1] output_width_multiple (255: 2000, beyond the limit)
 *   [2] name (one of NAMES below) and, in bits 4-5, struct_size (0: as initialised,
 *       1: 0, 2: one more than the struct, 3: 4 less)
 *   [3] device_functions_only (bit 0), GJ_CONFIG_IGNORE_UNKNOWN_KEYS (bit 1),
 *       gradients_fp32 (bits 2-3: 0, 1, 1, 2 (refused))
 *   [4] block_size (one of BLOCK_SIZES)
 *   [5] points_per_thread (0..19)
 *   [6] order (0..2)
 *   [7] n_dims (0..39; 0: from the configuration)
 *
 * Checks: a refusal leaves no encoding and says why; skipped unknown keys are reported,
 * one line each, and the strict parser refuses that text; an accepted configuration has
 * consistent accessors, its gj_encoding_hyperparams() parses back to the same encoding
 * (and prints the same text again), and generating twice gives the same bytes, whose
 * length is reported right. */
#include "fuzz_common.h"

#include "gridjit.h"

static gj_context *ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    gjf_offline();
    ctx = gjf_quiet_context();
    return 0;
}

static const char *const NAMES[8] = {
    NULL, "gj_encode", "my_grid", "_x9", "", "1abc", "bad-name",
    "a_name_that_is_longer_than_sixty_four_characters_which_the_library_refuses",
};
static const uint32_t BLOCK_SIZES[8] = {0, 32, 64, 128, 256, 1024, 48, 2048};

static void check_same_encoding(const gj_encoding *a, const gj_encoding *b) {
    GJF_CHECK(gj_encoding_n_dims(a) == gj_encoding_n_dims(b), "%u vs %u", gj_encoding_n_dims(a), gj_encoding_n_dims(b));
    GJF_CHECK(gj_encoding_n_levels(a) == gj_encoding_n_levels(b), "mismatch");
    GJF_CHECK(gj_encoding_n_features_per_level(a) == gj_encoding_n_features_per_level(b), "mismatch");
    GJF_CHECK(gj_encoding_n_params(a) == gj_encoding_n_params(b), "%llu vs %llu",
              (unsigned long long)gj_encoding_n_params(a), (unsigned long long)gj_encoding_n_params(b));
    GJF_CHECK(gj_encoding_precision(a) == gj_encoding_precision(b), "mismatch");
    GJF_CHECK(gj_encoding_grid_type(a) == gj_encoding_grid_type(b), "mismatch");
    GJF_CHECK(gj_encoding_interpolation(a) == gj_encoding_interpolation(b), "mismatch");
    GJF_CHECK(gj_encoding_hash(a) == gj_encoding_hash(b), "mismatch");
    GJF_CHECK(gj_encoding_base_resolution(a) == gj_encoding_base_resolution(b), "mismatch");
    GJF_CHECK(gj_encoding_log2_hashmap_size(a) == gj_encoding_log2_hashmap_size(b), "mismatch");
    GJF_CHECK(memcmp(&(float){gj_encoding_per_level_scale(a)}, &(float){gj_encoding_per_level_scale(b)}, sizeof(float)) == 0,
              "%.9g vs %.9g", (double)gj_encoding_per_level_scale(a), (double)gj_encoding_per_level_scale(b));
    GJF_CHECK(gj_encoding_stochastic_interpolation(a) == gj_encoding_stochastic_interpolation(b), "mismatch");
    GJF_CHECK(gj_encoding_fixed_point_pos(a) == gj_encoding_fixed_point_pos(b), "mismatch");
}

static void check_layout(const gj_encoding *enc) {
    const uint32_t levels = gj_encoding_n_levels(enc), features = gj_encoding_n_features_per_level(enc);
    GJF_CHECK(levels >= 1 && levels <= GJ_MAX_LEVELS, "n_levels %u", levels);
    GJF_CHECK(gj_encoding_n_output_dims(enc) == levels * features, "mismatch");
    uint64_t next = 0;
    for (uint32_t l = 0; l < levels; ++l) {
        gj_level_info info;
        GJF_CHECK(gj_encoding_level(enc, l, &info) == GJ_OK, "level %u", l);
        GJF_CHECK(info.level == l && info.offset == next && info.entries > 0, "level %u", l);
        next = info.offset + info.entries;
    }
    GJF_CHECK(next * features == gj_encoding_n_params(enc), "levels sum to %llu entries, n_params %llu",
              (unsigned long long)next, (unsigned long long)gj_encoding_n_params(enc));
    gj_level_info info;
    GJF_CHECK(gj_encoding_level(enc, levels, &info) != GJ_OK, "level n_levels accepted");
}

static void check_round_trip(const gj_encoding *enc) {
    char *text = gj_encoding_hyperparams(enc);
    GJF_CHECK(text != NULL, "gj_encoding_hyperparams");
    gj_encoding *again = NULL;
    gj_status status = gj_encoding_create(ctx, text, 0, &again);
    GJF_CHECK(status == GJ_OK, "%s does not parse back: %s", text, gj_context_errmsg(ctx));
    check_same_encoding(enc, again);
    char *text2 = gj_encoding_hyperparams(again);
    GJF_CHECK(text2 && strcmp(text, text2) == 0, "%s then %s", text, text2 ? text2 : "NULL");
    gj_free(text2);
    gj_free(text);
    gj_encoding_destroy(again);
}

static void check_generate(const gj_encoding *enc, const gj_codegen_options *opts) {
    char *source = NULL;
    size_t length = 12345;
    gj_status status = gj_encoding_generate(ctx, enc, opts, &source, &length);
    if (status != GJ_OK) {
        GJF_CHECK(source == NULL, "a failed generate returned a source");
        GJF_CHECK(gj_context_errmsg(ctx)[0] != '\0', "%s without a message", gj_status_name(status));
        return;
    }
    GJF_CHECK(source != NULL && length == strlen(source) && length > 0, "length %zu", length);
    GJF_CHECK(gj_context_errmsg(ctx)[0] == '\0', "message after success: %s", gj_context_errmsg(ctx));
    char *again = NULL;
    size_t length2 = 0;
    GJF_CHECK(gj_encoding_generate(ctx, enc, opts, &again, &length2) == GJ_OK, "second generate");
    GJF_CHECK(length2 == length && memcmp(source, again, length) == 0, "generation is not deterministic");
    gj_free(again);
    gj_free(source);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 8) {
        return 0;
    }
    gjf_reader r = {data, size};
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = gjf_u8(&r) & 0x0f;
    const uint8_t width = gjf_u8(&r);
    opts.output_width_multiple = width == 255 ? 2000 : width;
    const uint8_t name = gjf_u8(&r);
    opts.name = NAMES[name % 8];
    switch ((name >> 4) & 3) {
    case 1: opts.struct_size = 0; break;
    case 2: opts.struct_size = (uint32_t)sizeof opts + 1; break;
    case 3: opts.struct_size = (uint32_t)sizeof opts - 4; break;
    default: break;
    }
    const uint8_t flags = gjf_u8(&r);
    opts.device_functions_only = flags & 1;
    const uint32_t create_flags = (flags & 2) ? GJ_CONFIG_IGNORE_UNKNOWN_KEYS : 0;
    static const int GRADIENTS[4] = {0, 1, 1, 2};
    opts.gradients_fp32 = GRADIENTS[(flags >> 2) & 3];
    opts.block_size = BLOCK_SIZES[gjf_u8(&r) % 8];
    opts.points_per_thread = gjf_u8(&r) % 20;
    opts.order = (gj_order)(gjf_u8(&r) % 3);
    const uint32_t n_dims = gjf_u8(&r) % 40;
    char *json = gjf_strndup(r.p, r.left);

    gj_encoding *enc = (gj_encoding *)&opts; /* must be overwritten */
    char *ignored = (char *)&opts;
    gj_status status = gj_encoding_create_ex(ctx, json, n_dims, create_flags, &ignored, &enc);
    GJF_CHECK(ignored == NULL || (status == GJ_OK && create_flags && ignored[0] != '\0'),
              "skipped keys reported where none can be");
    if (status != GJ_OK) {
        GJF_CHECK(enc == NULL, "a refused configuration left an encoding");
        GJF_CHECK(gj_context_errmsg(ctx)[0] != '\0', "%s without a message", gj_status_name(status));
        free(json);
        return 0;
    }
    GJF_CHECK(enc != NULL && gj_context_errmsg(ctx)[0] == '\0', "mismatch");
    if (ignored) {
        /* The first line is the strict parser's refusal. */
        GJF_CHECK(strncmp(ignored, "unknown key '", 13) == 0, "ignored: %s", ignored);
        gj_encoding *strict = (gj_encoding *)&opts;
        GJF_CHECK(gj_encoding_create(ctx, json, n_dims, &strict) == GJ_ERROR_INVALID_CONFIG && strict == NULL,
                  "the strict parser accepts what was skipped");
        GJF_CHECK(strstr(ignored, gj_context_errmsg(ctx)) == ignored,
                  "the first skipped key's line is not the strict message: %s vs %s", ignored, gj_context_errmsg(ctx));
        gj_free(ignored);
    }
    GJF_CHECK(n_dims == 0 || gj_encoding_n_dims(enc) == n_dims, "n_dims %u, asked %u", gj_encoding_n_dims(enc), n_dims);
    check_layout(enc);
    check_round_trip(enc);
    check_generate(enc, &opts);
    gj_encoding_destroy(enc);
    free(json);
    return 0;
}
