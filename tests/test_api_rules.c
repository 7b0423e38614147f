/* Rules every public call follows (include/gridjit.h, docs/ABI.md): the error message is
 * emptied on entry and is per thread; messages below the log level are never delivered;
 * caller-allocated structs must come from their _init (struct_size). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "gridjit.h"
#include "test_env.h"

static const char bad_config[] = "{\"n_levels\": 0}";
static const char good_config[] = "{\"otype\": \"HashGrid\", \"n_levels\": 2}";

static void a_successful_call_empties_the_message(void **state) {
    (void)state;
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    assert_string_equal(gj_context_errmsg(ctx), "");
    gj_encoding *enc = NULL;
    assert_int_equal(gj_encoding_create(ctx, bad_config, 3, &enc), GJ_ERROR_INVALID_CONFIG);
    assert_non_null(strstr(gj_context_errmsg(ctx), "n_levels"));
    /* Getters that cannot fail leave it alone. */
    assert_int_equal(gj_encoding_n_levels(NULL), 0);
    assert_non_null(strstr(gj_context_errmsg(ctx), "n_levels"));
    assert_int_equal(gj_encoding_create(ctx, good_config, 3, &enc), GJ_OK);
    assert_string_equal(gj_context_errmsg(ctx), "");
    gj_encoding_destroy(enc);
    gj_context_destroy(ctx);
}

typedef struct shared {
    gj_context *ctx;
    char seen_before[256], seen_after[256];
    gj_status status;
} shared;

static void *other_thread(void *arg) {
    shared *s = arg;
    snprintf(s->seen_before, sizeof s->seen_before, "%s", gj_context_errmsg(s->ctx));
    gj_encoding *enc = NULL;
    s->status = gj_encoding_create(s->ctx, "{\"n_features_per_level\": 3}", 3, &enc);
    snprintf(s->seen_after, sizeof s->seen_after, "%s", gj_context_errmsg(s->ctx));
    return NULL;
}

static void messages_are_per_thread(void **state) {
    (void)state;
    shared s = {0};
    assert_int_equal(gj_context_create(&s.ctx), GJ_OK);
    gj_encoding *enc = NULL;
    assert_int_equal(gj_encoding_create(s.ctx, bad_config, 3, &enc), GJ_ERROR_INVALID_CONFIG);
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, other_thread, &s), 0);
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_string_equal(s.seen_before, "");                      /* not this thread's message */
    assert_int_equal(s.status, GJ_ERROR_INVALID_CONFIG);
    assert_non_null(strstr(s.seen_after, "n_features_per_level")); /* its own */
    assert_non_null(strstr(gj_context_errmsg(s.ctx), "n_levels")); /* ours is untouched */
    gj_context_destroy(s.ctx);
}

typedef struct captured {
    int count[4];
} captured;

static void capture(void *user, gj_log_level level, const char *message) {
    (void)message;
    ((captured *)user)->count[level]++;
}

static void the_log_level_filters(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip(); /* loading NVRTC is the debug message this test watches */
    }
    for (int round = 0; round < 2; round++) {
        gj_context *ctx = NULL;
        assert_int_equal(gj_context_create(&ctx), GJ_OK);
        captured c = {{0}};
        gj_context_set_log(ctx, capture, &c);
        if (round == 1) {
            gj_context_set_log_level(ctx, GJ_LOG_DEBUG);
        }
        int major = 0, minor = 0;
        assert_int_equal(gj_nvrtc_version(ctx, &major, &minor), GJ_OK); /* logs "loaded NVRTC" at DEBUG */
        assert_int_equal(c.count[GJ_LOG_DEBUG] > 0, round == 1);
        gj_context_destroy(ctx);
    }
}

static void structs_must_come_from_their_init(void **state) {
    (void)state;
    gj_context *ctx = NULL;
    gj_encoding *enc = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    assert_int_equal(gj_encoding_create(ctx, good_config, 3, &enc), GJ_OK);
    gj_codegen_options opts;
    memset(&opts, 0, sizeof opts); /* not prepared by gj_codegen_options_init */
    char *source = NULL;
    assert_int_equal(gj_encoding_generate(ctx, enc, &opts, &source, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_null(source);
    assert_non_null(strstr(gj_context_errmsg(ctx), "gj_codegen_options_init"));
    /* A caller built against the first published header passes its (smaller) size. */
    gj_codegen_options_init(&opts);
    assert_int_equal(opts.struct_size, sizeof opts);
    opts.passes = GJ_PASS_FORWARD;
    assert_int_equal(gj_encoding_generate(ctx, enc, &opts, &source, NULL), GJ_OK);
    gj_free(source);
    opts.struct_size = (uint32_t)sizeof opts + 8; /* a newer header than this library */
    assert_int_equal(gj_encoding_generate(ctx, enc, &opts, &source, NULL), GJ_ERROR_INVALID_ARGUMENT);
    gj_forward_desc f;
    gj_forward_desc_init(&f);
    assert_int_equal(f.struct_size, sizeof f);
    gj_encoding_destroy(enc);
    gj_context_destroy(ctx);
}

/* gj_network keeps the same rules: destroy(NULL) is a no-op, a failed create leaves a
 * message naming the key and a NULL handle, the next success empties it, and its
 * caller-allocated layer info must come from its _init. */
static void the_network_handle_follows_the_rules(void **state) {
    (void)state;
    gj_network_destroy(NULL);
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    gj_network *net = NULL;
    assert_int_equal(gj_network_create(ctx, "{\"n_hidden_layers\": -1}", 3, 1, &net), GJ_ERROR_INVALID_CONFIG);
    assert_null(net);
    assert_non_null(strstr(gj_context_errmsg(ctx), "n_hidden_layers"));
    assert_int_equal(gj_network_n_params(net), 0); /* getters leave the message alone */
    assert_non_null(strstr(gj_context_errmsg(ctx), "n_hidden_layers"));
    assert_int_equal(gj_network_create(ctx, "{\"otype\": \"FullyFusedMLP\"}", 3, 1, &net), GJ_OK);
    assert_string_equal(gj_context_errmsg(ctx), "");
    gj_network_layer_info info;
    memset(&info, 0, sizeof info);
    assert_int_equal(gj_network_layer(net, 0, &info), GJ_ERROR_INVALID_ARGUMENT);
    gj_network_layer_info_init(&info);
    assert_int_equal(info.struct_size, sizeof info);
    assert_int_equal(gj_network_layer(net, 0, &info), GJ_OK);
    gj_network_destroy(net);
    gj_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_successful_call_empties_the_message),
        cmocka_unit_test(messages_are_per_thread),
        cmocka_unit_test(the_log_level_filters),
        cmocka_unit_test(structs_must_come_from_their_init),
        cmocka_unit_test(the_network_handle_follows_the_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
