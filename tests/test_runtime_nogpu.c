/* The runtime without a GPU: a missing driver is reported, arguments are checked before
 * any driver call, launch geometry follows the kernel contract, the kernel argument
 * structs have the same layout on both sides, and the host fp16 conversions are exact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gridjit.h"
#include "base/templates.h"
#include "codegen/facts.h"
#include "codegen/kernels.h"
#include "codegen/options.h"
#include "runtime/l1_carveout.h"
#include "runtime/module.h"
#include "api/context.h"
#include "run_cli.h"
#include "test_env.h"

/* D = 3, 4 levels of 2 features (8 outputs): small enough to reason about by hand. */
static const char SMALL_CONFIG[] = "{\"otype\": \"HashGrid\", \"n_levels\": 4, \"n_features_per_level\": 2, "
                                   "\"log2_hashmap_size\": 12, \"base_resolution\": 4, \"per_level_scale\": 2.0, "
                                   "\"precision\": \"fp32\"}";

typedef struct fixture {
    gj_context *ctx;
    gj_encoding *enc;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(gj_context_create(&f->ctx), GJ_OK);
    gj_context_set_log(f->ctx, NULL, NULL);
    assert_int_equal(gj_encoding_create(f->ctx, SMALL_CONFIG, 3, &f->enc), GJ_OK);
    setenv("GRIDJIT_DRIVER", "off", 1);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    gj_encoding_destroy(f->enc);
    gj_context_destroy(f->ctx);
    free(f);
    setenv("GRIDJIT_DRIVER", "off", 1);
    return 0;
}

static void assert_contains(const char *text, const char *needle) {
    if (!strstr(text, needle)) {
        fail_msg("\"%s\" does not contain \"%s\"", text, needle);
    }
}

/* A shape for the checks, from the small encoding and the given options. */
static gj__module_shape shape_of(const fixture *f, const gj_codegen_options *in) {
    gj_codegen_options resolved;
    assert_int_equal(gj__codegen_options_resolve(&f->ctx->diag, in, &resolved), GJ_OK);
    gj__module_shape shape;
    gj__module_shape_make(&shape, f->enc, &resolved);
    return shape;
}

/* Fake device addresses: never dereferenced, only checked for NULL and alignment. */
#define ADDR(value) ((void *)(uintptr_t)(value))

/* ------------------------------------------------------------ no driver */

static void driver_off_is_no_driver(void **state) {
    fixture *f = *state;
    gj_runtime_info info;
    memset(&info, 0x55, sizeof info);
    assert_int_equal(gj_runtime_probe(f->ctx, &info), GJ_ERROR_NO_DRIVER);
    assert_contains(gj_context_errmsg(f->ctx), "GRIDJIT_DRIVER=off");
    assert_int_equal(info.driver_found, 0);
    assert_int_equal(info.device_count, 0);
    assert_string_equal(info.device_name, "");

    gj_module *m = (gj_module *)ADDR(1);
    assert_int_equal(gj_module_create(f->ctx, f->enc, NULL, &m), GJ_ERROR_NO_DRIVER);
    assert_null(m);
    assert_contains(gj_context_errmsg(f->ctx), "GRIDJIT_DRIVER");

    void *ptr = ADDR(1);
    assert_int_equal(gj_device_alloc(f->ctx, 1024, &ptr), GJ_ERROR_NO_DRIVER);
    assert_null(ptr);
    float host[4] = {0};
    assert_int_equal(gj_memcpy_to_device(f->ctx, ADDR(256), host, sizeof host), GJ_ERROR_NO_DRIVER);
    assert_int_equal(gj_memcpy_to_host(f->ctx, host, ADDR(256), sizeof host), GJ_ERROR_NO_DRIVER);
    assert_int_equal(gj_stream_synchronize(f->ctx, NULL), GJ_ERROR_NO_DRIVER);
    assert_int_equal(gj_runtime_set_device(f->ctx, 0), GJ_ERROR_NO_DRIVER);
    assert_int_equal(gj_memcpy_async(f->ctx, ADDR(256), ADDR(512), 16, NULL), GJ_ERROR_NO_DRIVER);
    assert_int_equal(gj_memcpy_async(f->ctx, NULL, ADDR(512), 16, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "gj_memcpy_async");
    gj_device_free(f->ctx, ADDR(256)); /* nothing loaded: nothing to free, no crash */
    /* Zero-byte requests need no driver. */
    assert_int_equal(gj_device_alloc(f->ctx, 0, &ptr), GJ_OK);
    assert_null(ptr);
    assert_int_equal(gj_memcpy_to_device(f->ctx, NULL, NULL, 0), GJ_OK);
    assert_int_equal(gj_memcpy_async(f->ctx, NULL, NULL, 0, NULL), GJ_OK);
}

static void missing_library_names_the_path(void **state) {
    fixture *f = *state;
    setenv("GRIDJIT_DRIVER", "/nonexistent/gridjit-test/libcuda.so.1", 1);
    gj_runtime_info info;
    assert_int_equal(gj_runtime_probe(f->ctx, &info), GJ_ERROR_NO_DRIVER);
    assert_contains(gj_context_errmsg(f->ctx), "/nonexistent/gridjit-test/libcuda.so.1");
    assert_contains(gj_context_errmsg(f->ctx), "tried");
    assert_int_equal(info.driver_found, 0);
}

/* The toolkit's stub libcuda loads but answers CUDA_ERROR_STUB_LIBRARY: that is "no driver". */
static void stub_library_is_no_driver(void **state) {
    fixture *f = *state;
    static const char *const candidates[] = {
        "/usr/local/cuda/lib64/stubs/libcuda.so",
        "/usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so",
        "/usr/local/cuda/lib/stubs/libcuda.so",
        "/usr/local/cuda-13.0/lib/stubs/libcuda.so",
        "/usr/local/cuda-13.0/targets/x86_64-linux/lib/stubs/libcuda.so",
    };
    const char *stub = NULL;
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0] && !stub; ++i) {
        if (access(candidates[i], R_OK) == 0) {
            stub = candidates[i];
        }
    }
    if (!stub) {
        printf("SKIPPED: no stub libcuda.so in the usual toolkit places\n");
        skip();
    }
    setenv("GRIDJIT_DRIVER", stub, 1);
    gj_runtime_info info;
    assert_int_equal(gj_runtime_probe(f->ctx, &info), GJ_ERROR_NO_DRIVER);
    assert_contains(gj_context_errmsg(f->ctx), "CUDA_ERROR_STUB_LIBRARY");
}

/* ----------------------------------------------------- checks before the driver */

static void public_calls_refuse_null_arguments(void **state) {
    fixture *f = *state;
    gj_forward_desc fd;
    gj_forward_desc_init(&fd);
    assert_int_equal(gj_forward(NULL, NULL, &fd), GJ_ERROR_INVALID_ARGUMENT);
    gj_backward_desc bd;
    gj_backward_desc_init(&bd);
    assert_int_equal(gj_backward(NULL, NULL, &bd), GJ_ERROR_INVALID_ARGUMENT);
    gj_backward_backward_desc bbd;
    gj_backward_backward_desc_init(&bbd);
    assert_int_equal(gj_backward_backward(NULL, NULL, &bbd), GJ_ERROR_INVALID_ARGUMENT);
    gj_init_desc id;
    gj_init_desc_init(&id);
    assert_int_equal(gj_init_params(NULL, NULL, &id), GJ_ERROR_INVALID_ARGUMENT);
    gj_module_destroy(NULL);
    assert_int_equal(gj_module_passes(NULL), 0);
    assert_int_equal(gj_module_n_params(NULL), 0);

    gj_module *m = (gj_module *)ADDR(1);
    assert_int_equal(gj_module_create(f->ctx, NULL, NULL, &m), GJ_ERROR_INVALID_ARGUMENT);
    assert_null(m);
    assert_int_equal(gj_module_create(NULL, f->enc, NULL, &m), GJ_ERROR_INVALID_ARGUMENT);
    /* INVALID_ARGUMENT rather than NO_DRIVER: the check comes before the driver. */
    assert_int_equal(gj_module_load(f->ctx, f->enc, NULL, NULL, &m), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "prog");
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.device_functions_only = 1;
    assert_int_equal(gj_module_create(f->ctx, f->enc, &opts, &m), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "device_functions_only");
    gj_runtime_info info;
    assert_int_equal(gj_runtime_probe(f->ctx, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_runtime_probe(NULL, &info), GJ_ERROR_INVALID_ARGUMENT);
}

static void descriptor_defaults(void **state) {
    (void)state;
    gj_forward_desc fd;
    memset(&fd, 0x7f, sizeof fd);
    gj_forward_desc_init(&fd);
    assert_true(fd.max_level == 1.0f);
    assert_int_equal(fd.n, 0);
    assert_null(fd.x);
    assert_null(fd.y);
    assert_null(fd.dy_dx);
    assert_int_equal(fd.y_layout, GJ_LAYOUT_AOS);
    gj_backward_desc bd;
    memset(&bd, 0x7f, sizeof bd);
    gj_backward_desc_init(&bd);
    assert_true(bd.max_level == 1.0f);
    assert_int_equal(bd.dL_dparams_mode, GJ_GRAD_OVERWRITE);
    assert_null(bd.dL_dx);
    gj_backward_backward_desc bbd;
    memset(&bbd, 0x7f, sizeof bbd);
    gj_backward_backward_desc_init(&bbd);
    assert_true(bbd.max_level == 1.0f);
    assert_null(bbd.dL_ddLdy);
    gj_init_desc id;
    memset(&id, 0x7f, sizeof id);
    gj_init_desc_init(&id);
    assert_true(id.scale == 1.0f);
    assert_int_equal(id.seed, 0);
}

static gj_forward_desc valid_forward(uint64_t n) {
    gj_forward_desc d;
    gj_forward_desc_init(&d);
    d.n = n;
    d.x = ADDR(0x10000);
    d.params = ADDR(0x20000);
    d.y = ADDR(0x30000);
    return d;
}

static void forward_checks(void **state) {
    fixture *f = *state;
    gj__module_shape s = shape_of(f, NULL);
    gj_forward_desc d = valid_forward(1000);
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_OK);
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, NULL), GJ_ERROR_INVALID_ARGUMENT);
    d.struct_size = 0; /* filled in by hand, not by gj_forward_desc_init */
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "gj_forward_desc_init");
    d = valid_forward(1000);

    d.x = NULL;
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "x must not be NULL");
    d.x = ADDR(0x10002); /* floats need 4-byte alignment */
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "x must be aligned to 4 bytes");

    d = valid_forward(1000);
    d.params = ADDR(0x20008); /* 8 but not 16 */
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "params must be aligned to 16 bytes");

    d = valid_forward(1000);
    d.y = ADDR(0x30002); /* fp32 outputs: 4-byte alignment */
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "y must be aligned to 4 bytes");

    d = valid_forward(1000);
    d.y = NULL;
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "nothing to compute");
    d.dy_dx = ADDR(0x40000); /* dy/dx alone is a valid request */
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_OK);
    d.dy_dx = NULL; /* so is compact dy/dx alone, 2-byte aligned, with the dy/dx kernel */
    d.dy_dx_compact = ADDR(0x50002);
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_OK);
    gj_forward_args fa;
    gj__launch_dims fdims;
    gj__forward_args(&s, &d, &fa, &fdims);
    assert_ptr_equal(fa.dy_dx_compact, d.dy_dx_compact);
    assert_int_equal(gj__forward_kernel(&d, &fa), GJ__KERNEL_FORWARD_DYDX);
    d.dy_dx_compact = ADDR(0x50001);
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "dy_dx_compact must be aligned to 2 bytes");

    d = valid_forward(1000);
    d.y_layout = (gj_data_layout)7;
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "y_layout");
}

static void max_level_checks(void **state) {
    fixture *f = *state;
    gj__module_shape s = shape_of(f, NULL);
    gj_forward_desc d = valid_forward(10);
    const float bad[] = {1.5f, -0.25f, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        d.max_level = bad[i];
        assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
        assert_contains(gj_context_errmsg(f->ctx), "max_level must be in [0, 1]");
    }
    d.max_level = 0.0f;
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_OK);
    /* With a per-point array the scalar is not used, hence not checked. */
    d.max_level = NAN;
    d.max_level_per_point = ADDR(0x50000);
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_OK);
    d.max_level_per_point = ADDR(0x50001);
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "max_level_per_point");
}

static void point_count_limits(void **state) {
    fixture *f = *state;
    gj__module_shape s = shape_of(f, NULL); /* 256 threads, 1 point each */
    /* A split forward may give all 4 levels one a thread: 64 points a block. */
    assert_int_equal(gj__shape_max_points(&s), 2147483647ull * 64ull);
    gj_forward_desc d = valid_forward(2147483647ull * 64ull);
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_OK);
    d.n += 1;
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "n must be at most 137438953408 points");

    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.block_size = 1024;
    opts.points_per_thread = 16; /* the grid would allow more than 2^40: the cap holds */
    s = shape_of(f, &opts);
    assert_int_equal(gj__shape_max_points(&s), GJ_MAX_POINTS);
    d.n = GJ_MAX_POINTS + 1;
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    d.n = GJ_MAX_POINTS;
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_OK);

    /* n = 0: nothing is launched, so nothing else is looked at. */
    s = shape_of(f, NULL);
    gj_forward_desc empty;
    gj_forward_desc_init(&empty);
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &empty), GJ_OK);
    gj_backward_desc bempty;
    gj_backward_desc_init(&bempty);
    assert_int_equal(gj__check_backward(&f->ctx->diag, &s, &bempty), GJ_OK);
}

static void pass_not_compiled(void **state) {
    fixture *f = *state;
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = GJ_PASS_FORWARD;
    gj__module_shape s = shape_of(f, &opts);
    gj_backward_desc bd;
    gj_backward_desc_init(&bd);
    bd.n = 5;
    assert_int_equal(gj__check_backward(&f->ctx->diag, &s, &bd), GJ_ERROR_PASS_NOT_COMPILED);
    assert_contains(gj_context_errmsg(f->ctx), "without the backward pass (passes: forward)");
    gj_backward_backward_desc bbd;
    gj_backward_backward_desc_init(&bbd);
    assert_int_equal(gj__check_backward_backward(&f->ctx->diag, &s, &bbd), GJ_ERROR_PASS_NOT_COMPILED);
    opts.passes = GJ_PASS_BACKWARD | GJ_PASS_BACKWARD_BACKWARD;
    s = shape_of(f, &opts);
    gj_forward_desc fd = valid_forward(5);
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &fd), GJ_ERROR_PASS_NOT_COMPILED);
    assert_contains(gj_context_errmsg(f->ctx), "passes: backward, backward_backward");
}

static gj_backward_desc valid_backward(void) {
    gj_backward_desc d;
    gj_backward_desc_init(&d);
    d.n = 100;
    d.x = ADDR(0x10000);
    d.params = ADDR(0x20000);
    d.dL_dy = ADDR(0x30000);
    d.dL_dparams = ADDR(0x60000);
    return d;
}

static void backward_checks(void **state) {
    fixture *f = *state;
    gj__module_shape s = shape_of(f, NULL);
    gj_backward_desc d = valid_backward();
    assert_int_equal(gj__check_backward(&f->ctx->diag, &s, &d), GJ_OK);
    d.dL_dparams = NULL;
    assert_int_equal(gj__check_backward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "nothing to compute");
    d.dL_dx = ADDR(0x70000);
    assert_int_equal(gj__check_backward(&f->ctx->diag, &s, &d), GJ_OK);
    d.dL_dx = ADDR(0x70001);
    assert_int_equal(gj__check_backward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "dL_dx must be aligned");

    d = valid_backward();
    d.dL_dparams = ADDR(0x60004);
    assert_int_equal(gj__check_backward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "dL_dparams must be aligned to 16 bytes");
    d = valid_backward();
    d.dL_dy = NULL;
    assert_int_equal(gj__check_backward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "dL_dy must not be NULL");
    d = valid_backward();
    d.dL_dparams_mode = (gj_grad_mode)3;
    assert_int_equal(gj__check_backward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "dL_dparams_mode");
    d = valid_backward();
    d.dL_dy_layout = (gj_data_layout)-1;
    assert_int_equal(gj__check_backward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    d = valid_backward();
    d.dL_dx = ADDR(0x70000);
    d.dy_dx = ADDR(0x80000);
    assert_int_equal(gj__check_backward(&f->ctx->diag, &s, &d), GJ_OK);
    d.dy_dx = ADDR(0x80002);
    assert_int_equal(gj__check_backward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "dy_dx must be aligned");
    d.dy_dx = NULL;
    d.dy_dx_compact = ADDR(0x90002);
    assert_int_equal(gj__check_backward(&f->ctx->diag, &s, &d), GJ_OK);
    gj_backward_desc grads;
    assert_true(gj__backward_split(&d, &grads));
    assert_null(grads.dL_dx);
    d.dy_dx = ADDR(0x80000); /* one of the two forms */
    assert_int_equal(gj__check_backward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "dy_dx and dy_dx_compact are both set");
}

/* A gj_backward_desc of 0.1.0's layout (no dy_dx) keeps its meaning: read up to its
 * struct_size, the rest at defaults; sizes outside the known layouts stay refused. */
static void backward_desc_of_the_older_layout(void **state) {
    fixture *f = *state;
    gj__module_shape s = shape_of(f, NULL);
    gj_backward_desc d = valid_backward();
    d.dL_dx = ADDR(0x70000);
    d.dy_dx = ADDR(0x80000); /* beyond the older struct_size: must not be read */
    d.struct_size = (uint32_t)offsetof(gj_backward_desc, dy_dx);
    gj_backward_desc full;
    const gj_backward_desc *w = gj__backward_desc_widened(&d, &full);
    assert_ptr_equal(w, &full);
    assert_int_equal(w->struct_size, sizeof(gj_backward_desc));
    assert_null(w->dy_dx);
    assert_ptr_equal(w->dL_dx, d.dL_dx);
    assert_ptr_equal(w->dL_dparams, d.dL_dparams);
    assert_true(w->max_level == d.max_level);
    assert_int_equal(gj__check_backward(&f->ctx->diag, &s, w), GJ_OK);
    /* The current size is used as it is; a size below the first layout is refused. */
    d.struct_size = sizeof d;
    assert_ptr_equal(gj__backward_desc_widened(&d, &full), &d);
    d.struct_size = 8;
    assert_ptr_equal(gj__backward_desc_widened(&d, &full), &d);
    assert_int_equal(gj__check_backward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "struct_size");
    assert_null(gj__backward_desc_widened(NULL, &full));

    /* gj_forward_desc without dy_dx_compact (0.1.0): read as before, the new field NULL. */
    gj_forward_desc fd = valid_forward(1000);
    fd.dy_dx_compact = ADDR(0x50000); /* beyond the older struct_size: must not be read */
    fd.struct_size = (uint32_t)offsetof(gj_forward_desc, dy_dx_compact);
    gj_forward_desc ffull;
    const gj_forward_desc *fw = gj__forward_desc_widened(&fd, &ffull);
    assert_ptr_equal(fw, &ffull);
    assert_int_equal(fw->struct_size, sizeof(gj_forward_desc));
    assert_null(fw->dy_dx_compact);
    assert_ptr_equal(fw->y, fd.y);
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, fw), GJ_OK);
    fd.struct_size = sizeof fd;
    assert_ptr_equal(gj__forward_desc_widened(&fd, &ffull), &fd);
}

static void backward_backward_checks(void **state) {
    fixture *f = *state;
    gj__module_shape s = shape_of(f, NULL);
    gj_backward_backward_desc d;
    gj_backward_backward_desc_init(&d);
    d.n = 3;
    d.x = ADDR(0x10000);
    d.params = ADDR(0x20000);
    d.dL_dy = ADDR(0x30000);
    assert_int_equal(gj__check_backward_backward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "all NULL");
    d.dL_dx = ADDR(0x40000);
    assert_int_equal(gj__check_backward_backward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "dL_ddLdx must not be NULL");
    d.dL_ddLdx = ADDR(0x50000);
    assert_int_equal(gj__check_backward_backward(&f->ctx->diag, &s, &d), GJ_OK);
    d.dL_ddLdy = ADDR(0x60002);
    assert_int_equal(gj__check_backward_backward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "dL_ddLdy must be aligned to 4 bytes");
}

static void init_checks(void **state) {
    fixture *f = *state;
    gj__module_shape s = shape_of(f, NULL);
    gj_init_desc d;
    gj_init_desc_init(&d);
    assert_int_equal(gj__check_init(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "params must not be NULL");
    d.params = ADDR(0x1000);
    assert_int_equal(gj__check_init(&f->ctx->diag, &s, &d), GJ_OK);
    d.scale = INFINITY;
    assert_int_equal(gj__check_init(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "scale must be finite");
}

/* shape_of for an encoding of json in dims dimensions, made here with opts (NULL: the
 * defaults); returns the encoding, which the caller destroys. */
static gj_encoding *encoding_shape(fixture *f, const char *json, unsigned dims, const gj_codegen_options *opts,
                             gj__module_shape *s) {
    gj_encoding *enc = NULL;
    assert_int_equal(gj_encoding_create(f->ctx, json, dims, &enc), GJ_OK);
    gj_codegen_options defaults, resolved;
    gj_codegen_options_init(&defaults);
    assert_int_equal(gj__codegen_options_resolve(&f->ctx->diag, opts ? opts : &defaults, &resolved), GJ_OK);
    gj__module_shape_make(s, enc, &resolved);
    return enc;
}

/* fp16 modules: outputs and dL/dy are 2-byte elements. */
static void fp16_alignment(void **state) {
    fixture *f = *state;
    gj__module_shape s;
    gj_encoding *enc = encoding_shape(
        f, "{\"otype\": \"HashGrid\", \"n_levels\": 4, \"n_features_per_level\": 1, \"precision\": \"fp16\"}", 2, NULL,
        &s);
    assert_int_equal(gj__shape_element_size(&s), 2);
    assert_int_equal(s.precision, GJ_PRECISION_FP16);
    assert_true(s.grad_fp32); /* F = 1: fp32 accumulation (docs/design.md §8.3) */
    gj_forward_desc d = valid_forward(10);
    d.y = ADDR(0x30002);
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_OK);
    d.y = ADDR(0x30001);
    assert_int_equal(gj__check_forward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "y must be aligned to 2 bytes");
    gj_encoding_destroy(enc);
}

/* What a backward pass does with dL/dparams: the caller's element size, the fp32 buffer of
 * fp16 F = 1 modules, and what is zeroed, for each precision, F and gradients_fp32. */
static void gradient_plans(void **state) {
    fixture *f = *state;
    static const struct {
        const char *json;
        int gradients_fp32;
        size_t element;    /* gj_module_gradient_element_size */
        int grad_fp32;     /* the kernels' accumulation type */
        int scratch;       /* fp32 buffer and cast */
    } cases[] = {
        {"{\"n_levels\": 3, \"precision\": \"fp32\"}", 0, 4, 1, 0},
        {"{\"n_levels\": 3, \"precision\": \"fp32\"}", 1, 4, 1, 0},
        {"{\"n_levels\": 3, \"n_features_per_level\": 2}", 0, 2, 0, 0},
        {"{\"n_levels\": 3, \"n_features_per_level\": 2}", 1, 4, 1, 0},
        {"{\"n_levels\": 3, \"n_features_per_level\": 8}", 1, 4, 1, 0},
        {"{\"n_levels\": 3, \"n_features_per_level\": 1}", 0, 2, 1, 1},
        {"{\"n_levels\": 3, \"n_features_per_level\": 1}", 1, 4, 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        gj_codegen_options opts;
        gj_codegen_options_init(&opts);
        opts.gradients_fp32 = cases[i].gradients_fp32;
        gj__module_shape s;
        gj_encoding *enc = encoding_shape(f, cases[i].json, 3, &opts, &s);
        const uint64_t n_params = gj_encoding_n_params(enc);
        assert_int_equal(s.grad_element_size, cases[i].element);
        assert_int_equal(s.grad_fp32, cases[i].grad_fp32);
        gj__grad_plan plan;
        gj__gradient_plan(&s, 1, GJ_GRAD_OVERWRITE, &plan);
        assert_int_equal(plan.scratch, cases[i].scratch);
        /* Overwrite zeroes the caller's array (4 bytes a parameter with fp32 gradients), or the buffer. */
        assert_int_equal(plan.zero_bytes, n_params * (cases[i].scratch ? sizeof(float) : cases[i].element));
        gj__gradient_plan(&s, 1, GJ_GRAD_ACCUMULATE, &plan);
        assert_int_equal(plan.scratch, cases[i].scratch);
        /* Accumulate adds to the caller's array as it is; the buffer starts from zero. */
        assert_int_equal(plan.zero_bytes, cases[i].scratch ? n_params * sizeof(float) : 0);
        gj__gradient_plan(&s, 0, GJ_GRAD_OVERWRITE, &plan);
        assert_int_equal(plan.scratch, 0);
        assert_int_equal(plan.zero_bytes, 0);
        /* dL/dparams keeps its 16-byte alignment rule with fp32 gradients. */
        gj_backward_desc d = valid_backward();
        d.dL_dparams = ADDR(0x60008);
        assert_int_equal(gj__check_backward(&f->ctx->diag, &s, &d), GJ_ERROR_INVALID_ARGUMENT);
        assert_contains(gj_context_errmsg(f->ctx), "dL_dparams must be aligned to 16 bytes");
        gj_encoding_destroy(enc);
    }
    assert_int_equal(gj_module_gradient_element_size(NULL), 0);
    /* A module refuses an option value the code generator refuses. */
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.gradients_fp32 = -1;
    gj_module *m = (gj_module *)&opts;
    assert_int_equal(gj_module_create(f->ctx, f->enc, &opts, &m), GJ_ERROR_INVALID_ARGUMENT);
    assert_null(m);
    assert_contains(gj_context_errmsg(f->ctx), "gradients_fp32");
}

/* ------------------------------------------------------------ geometry */

static void forward_geometry(void **state) {
    fixture *f = *state;
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.block_size = 128;
    opts.points_per_thread = 2;
    opts.output_width_multiple = 16; /* 8 outputs padded to 16 */
    opts.levels_per_thread = 1;      /* one level group per level */
    gj__module_shape s = shape_of(f, &opts);
    assert_int_equal(s.padded_width, 16);
    gj_forward_desc d = valid_forward(1001);
    gj_forward_args a;
    gj__launch_dims dims;
    gj__forward_args(&s, &d, &a, &dims);
    assert_int_equal(dims.block, 128);
    assert_int_equal(dims.grid_x, 4);  /* ceil(1001 / 256) */
    assert_int_equal(dims.grid_y, 5);  /* 4 levels + the padding slice */
    assert_int_equal(a.n, 1001);
    assert_int_equal(a.x_stride_point, 3);
    assert_int_equal(a.x_stride_dim, 1);
    assert_int_equal(a.y_stride_point, 16); /* AoS: the padded width */
    assert_int_equal(a.y_stride_feature, 1);
    assert_true(a.max_level == 1.0f);
    assert_ptr_equal(a.y, d.y);
    assert_int_equal(a.levels_per_thread, 1);
    assert_int_equal(a.stage, 0); /* one level: nothing to gather */
    assert_int_equal(dims.shared_bytes, 0);

    d.y_layout = GJ_LAYOUT_SOA;
    gj__forward_args(&s, &d, &a, &dims);
    assert_int_equal(a.y_stride_point, 1);
    assert_int_equal(a.y_stride_feature, 1001);

    opts.output_width_multiple = 1;
    s = shape_of(f, &opts);
    gj__forward_args(&s, &d, &a, &dims);
    assert_int_equal(dims.grid_y, 4); /* no padding slice */
    d.n = 256;
    gj__forward_args(&s, &d, &a, &dims);
    assert_int_equal(dims.grid_x, 1);
    d.n = 257;
    gj__forward_args(&s, &d, &a, &dims);
    assert_int_equal(dims.grid_x, 2);

    opts.order = GJ_ORDER_POINT_MAJOR;
    opts.output_width_multiple = 16;
    s = shape_of(f, &opts);
    gj__forward_args(&s, &d, &a, &dims);
    assert_int_equal(dims.grid_y, 1);
}

static void backward_geometry(void **state) {
    fixture *f = *state;
    gj_codegen_options one_level;
    gj_codegen_options_init(&one_level);
    one_level.levels_per_thread = 1;
    gj__module_shape s = shape_of(f, &one_level);
    gj_backward_desc d = valid_backward();
    d.n = 70000;
    d.dL_dy_layout = GJ_LAYOUT_SOA;
    d.dL_dx = ADDR(0x70000);
    gj_backward_args a;
    gj__launch_dims dims;
    gj__backward_args(&s, &d, &a, &dims);
    assert_int_equal(dims.grid_x, 274); /* ceil(70000 / 256) */
    assert_int_equal(dims.grid_y, 4);   /* one per level */
    assert_int_equal(a.dy_stride_point, 1);
    assert_int_equal(a.dy_stride_feature, 70000);
    assert_int_equal(a.dx_stride_point, 3);
    assert_int_equal(a.dx_stride_dim, 1);
    assert_ptr_equal(a.dL_dparams, d.dL_dparams);

    gj_backward_backward_desc bb;
    gj_backward_backward_desc_init(&bb);
    bb.n = 70000;
    bb.dL_ddLdy_layout = GJ_LAYOUT_SOA;
    gj_backward_backward_args ba;
    gj__backward_backward_args(&s, &bb, &ba, &dims);
    assert_int_equal(dims.grid_y, 1); /* always point-major */
    assert_int_equal(ba.dy_stride_point, 8);
    assert_int_equal(ba.dy_stride_feature, 1);
    assert_int_equal(ba.ddy_stride_point, 1);
    assert_int_equal(ba.ddy_stride_feature, 70000);
    assert_int_equal(ba.ddx_stride_point, 3);

    /* dL/dx from dy/dx: one thread per point over the same dL/dy strides, grid-stride
     * beyond 2^20 blocks. */
    d.dy_dx = ADDR(0x80000);
    gj_dx_from_dydx_args xa;
    gj__dx_from_dydx_args(&s, &d, &xa, &dims);
    assert_int_equal(dims.grid_x, 274);
    assert_int_equal(dims.grid_y, 1);
    assert_int_equal(dims.block, 256);
    assert_int_equal(dims.shared_bytes, 0);
    assert_ptr_equal(xa.dy_dx, d.dy_dx);
    assert_ptr_equal(xa.dL_dx, d.dL_dx);
    assert_int_equal(xa.dy_stride_point, 1);
    assert_int_equal(xa.dy_stride_feature, 70000);
    assert_int_equal(xa.dx_stride_point, 3);
    assert_int_equal(xa.dx_stride_dim, 1);
    gj_backward_desc big = d;
    big.n = 1ull << 32;
    big.dL_dy_layout = GJ_LAYOUT_AOS;
    gj__dx_from_dydx_args(&s, &big, &xa, &dims);
    assert_int_equal(dims.grid_x, 1u << 20);
    assert_int_equal(xa.dy_stride_point, 8);
    assert_int_equal(xa.dy_stride_feature, 1);
    d.dy_dx = NULL;

    gj__elementwise_dims(&s, &dims);
    assert_int_equal(dims.grid_x, (s.n_params + 255) / 256);
    assert_int_equal(dims.grid_y, 1);

    /* Small levels go to NAME_backward_coarse in level-major order when dL/dparams is
     * wanted. Levels 2 and 3 (resolutions 16 and 32) hold 2^12 entries of 2 floats: the largest. */
    assert_int_equal(s.small_level_floats, 4096 * 2);
    assert_true(gj__backward_uses_coarse(&s, &d));
    gj__coarse_dims(&s, 264, &dims);
    assert_int_equal(dims.grid_x, 264);
    assert_int_equal(dims.grid_y, 4);
    assert_int_equal(dims.block, 256);
    d.dL_dparams = NULL;
    assert_false(gj__backward_uses_coarse(&s, &d));
    d.dL_dparams = ADDR(0x60000);
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.order = GJ_ORDER_POINT_MAJOR;
    s = shape_of(f, &opts);
    assert_false(gj__backward_uses_coarse(&s, &d));
}

static void kernel_names_follow_the_contract(void **state) {
    (void)state;
    assert_string_equal(gj__kernel_suffix(GJ__KERNEL_FORWARD), "forward");
    assert_string_equal(gj__kernel_suffix(GJ__KERNEL_BACKWARD_COARSE), "backward_coarse");
    gj_codegen_options backward, forward, opts;
    gj_codegen_options_init(&backward);
    backward.passes = GJ_PASS_BACKWARD;
    gj_codegen_options_init(&forward);
    forward.passes = GJ_PASS_FORWARD;
    assert_true(gj__kernel_present(GJ__KERNEL_BACKWARD_COARSE, &backward));
    assert_string_equal(gj__kernel_suffix(GJ__KERNEL_BACKWARD_BACKWARD), "backward_backward");
    assert_string_equal(gj__kernel_suffix(GJ__KERNEL_CAST_GRADIENTS), "cast_gradients");
    assert_true(gj__kernel_present(GJ__KERNEL_INIT_PARAMS, &forward));
    /* dL/dx from dy/dx is a helper: present whatever the passes, in the helpers program. */
    assert_string_equal(gj__kernel_suffix(GJ__KERNEL_DX_FROM_DYDX), "dx_from_dydx");
    assert_true(gj__kernel_present(GJ__KERNEL_DX_FROM_DYDX, &forward));
    assert_int_equal(gj__kernel(GJ__KERNEL_DX_FROM_DYDX)->part, GJ__PART_HELPERS);
    assert_false(gj__kernel_present(GJ__KERNEL_BACKWARD, &forward));
    /* Each level-major kernel has a level-group (_rows) form, in a program of its own; a
     * point-major unit has none. */
    assert_string_equal(gj__kernel_suffix(gj__kernel_rows_form(GJ__KERNEL_FORWARD)), "forward_rows");
    assert_string_equal(gj__kernel_suffix(gj__kernel_rows_form(GJ__KERNEL_BACKWARD_INPUT_COARSE)),
                        "backward_input_rows_coarse");
    assert_int_equal(gj__kernel_rows_form(GJ__KERNEL_BACKWARD_BACKWARD), GJ__KERNEL_BACKWARD_BACKWARD);
    assert_int_equal(gj__kernel(GJ__KERNEL_BACKWARD_ROWS_COARSE)->part, GJ__PART_BACKWARD_ROWS);
    assert_true(gj__part_present(GJ__PART_FORWARD_ROWS, &forward));
    assert_false(gj__part_present(GJ__PART_BACKWARD_ROWS, &forward));
    assert_false(gj__kernel_present(GJ__KERNEL_FORWARD_ROWS, &forward)); /* not in the whole unit */
    assert_true(gj__kernel_in_unit(GJ__KERNEL_FORWARD_ROWS, &forward, GJ__PART_FORWARD_ROWS));
    forward.order = GJ_ORDER_POINT_MAJOR;
    assert_false(gj__kernel_present(GJ__KERNEL_FORWARD_ROWS, &forward));
    assert_false(gj__part_present(GJ__PART_FORWARD_ROWS, &forward));
    assert_true(gj__part_present(GJ__PART_FORWARD, &forward));
    /* Every kernel the code generator lists for the whole unit is one the runtime knows,
     * and it lists each kernel but the _rows forms. */
    gj_codegen_options_init(&opts);
    size_t count = 0;
    char **names = gj__codegen_kernel_names(&opts, GJ__PART_ALL, &count);
    assert_non_null(names);
    assert_int_equal(count, 11);
    for (int k = 0; k < GJ__KERNEL_COUNT; ++k) {
        if (gj__kernel(k)->rows) {
            continue;
        }
        char expected[64];
        snprintf(expected, sizeof expected, "&gj_encode_%s", gj__kernel_suffix((gj__kernel_id)k));
        int found = 0;
        for (size_t i = 0; i < count; ++i) {
            found |= strcmp(names[i], expected) == 0;
        }
        assert_true(found);
    }
    gj__free_string_list(names, count);
}

/* ------------------------------------------------ programs that do not match */

static void load_refuses_a_program_of_other_options(void **state) {
    fixture *f = *state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = GJ_PASS_FORWARD;
    gj_program *prog = NULL;
    gj_status status = gj_compile(f->ctx, f->enc, &opts, "compute_90", &prog);
    if (status != GJ_OK) {
        fail_msg("compile: %s", gj_context_errmsg(f->ctx));
    }
    gj_module *m = (gj_module *)ADDR(1);
    /* Default options have all passes: the program lacks the backward kernels. */
    assert_int_equal(gj_module_load(f->ctx, f->enc, NULL, prog, &m), GJ_ERROR_INVALID_ARGUMENT);
    assert_null(m);
    assert_contains(gj_context_errmsg(f->ctx), "no kernel &gj_encode_backward");
    /* Same kernels, other block size: the source differs. */
    gj_codegen_options other = opts;
    other.block_size = 128;
    assert_int_equal(gj_module_load(f->ctx, f->enc, &other, prog, &m), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "other source");
    /* Same options, another configuration. */
    gj_encoding *enc2 = NULL;
    assert_int_equal(gj_encoding_create(f->ctx, "{\"otype\": \"HashGrid\", \"n_levels\": 5}", 3, &enc2), GJ_OK);
    assert_int_equal(gj_module_load(f->ctx, enc2, &opts, prog, &m), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "other source");
    /* gj_compile's unit has the one-level kernels only: more levels per thread are refused. */
    for (size_t k = 0; k < gj_program_n_kernels(prog); ++k) {
        assert_null(strstr(gj_program_kernel_name(prog, k), "_rows"));
    }
    gj_codegen_options groups = opts;
    groups.levels_per_thread = 2;
    assert_int_equal(gj_module_load(f->ctx, f->enc, &groups, prog, &m), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "level-group kernels");
    /* The matching program passes the checks and reaches the (disabled) driver. */
    assert_int_equal(gj_module_load(f->ctx, f->enc, &opts, prog, &m), GJ_ERROR_NO_DRIVER);
    gj_encoding_destroy(enc2);
    gj_program_destroy(prog);
}

/* ------------------------------------------- kernel_args.cuh on both sides */

typedef struct field_layout {
    const char *type, *field;
    size_t offset, size;
} field_layout;

#define FIELD(T, f) {#T, #f, offsetof(T, f), sizeof(((T *)0)->f)}
static const field_layout fields[] = {
    FIELD(gj_forward_args, n), FIELD(gj_forward_args, x), FIELD(gj_forward_args, x_stride_point),
    FIELD(gj_forward_args, x_stride_dim), FIELD(gj_forward_args, params), FIELD(gj_forward_args, y),
    FIELD(gj_forward_args, y_stride_point), FIELD(gj_forward_args, y_stride_feature), FIELD(gj_forward_args, dy_dx),
    FIELD(gj_forward_args, max_level_per_point), FIELD(gj_forward_args, max_level),

    FIELD(gj_backward_args, n), FIELD(gj_backward_args, x), FIELD(gj_backward_args, x_stride_point),
    FIELD(gj_backward_args, x_stride_dim), FIELD(gj_backward_args, params), FIELD(gj_backward_args, dL_dy),
    FIELD(gj_backward_args, dy_stride_point), FIELD(gj_backward_args, dy_stride_feature),
    FIELD(gj_backward_args, dL_dparams), FIELD(gj_backward_args, dL_dx), FIELD(gj_backward_args, dx_stride_point),
    FIELD(gj_backward_args, dx_stride_dim), FIELD(gj_backward_args, max_level_per_point),
    FIELD(gj_backward_args, max_level), FIELD(gj_backward_args, coarse_blocks),

    FIELD(gj_backward_backward_args, n), FIELD(gj_backward_backward_args, x),
    FIELD(gj_backward_backward_args, x_stride_point), FIELD(gj_backward_backward_args, x_stride_dim),
    FIELD(gj_backward_backward_args, params), FIELD(gj_backward_backward_args, dL_ddLdx),
    FIELD(gj_backward_backward_args, ddx_stride_point), FIELD(gj_backward_backward_args, ddx_stride_dim),
    FIELD(gj_backward_backward_args, dL_dy), FIELD(gj_backward_backward_args, dy_stride_point),
    FIELD(gj_backward_backward_args, dy_stride_feature), FIELD(gj_backward_backward_args, dL_dparams),
    FIELD(gj_backward_backward_args, dL_ddLdy), FIELD(gj_backward_backward_args, ddy_stride_point),
    FIELD(gj_backward_backward_args, ddy_stride_feature), FIELD(gj_backward_backward_args, dL_dx),
    FIELD(gj_backward_backward_args, dx_stride_point), FIELD(gj_backward_backward_args, dx_stride_dim),
    FIELD(gj_backward_backward_args, max_level_per_point), FIELD(gj_backward_backward_args, max_level),

    FIELD(gj_init_args, n), FIELD(gj_init_args, params), FIELD(gj_init_args, params_fp32), FIELD(gj_init_args, seed),
    FIELD(gj_init_args, scale),

    FIELD(gj_cast_args, n), FIELD(gj_cast_args, src), FIELD(gj_cast_args, dst), FIELD(gj_cast_args, accumulate),
};
#undef FIELD

static const struct {
    const char *type;
    size_t size, align;
} structs[] = {
    {"gj_forward_args", sizeof(gj_forward_args), _Alignof(gj_forward_args)},
    {"gj_backward_args", sizeof(gj_backward_args), _Alignof(gj_backward_args)},
    {"gj_backward_backward_args", sizeof(gj_backward_backward_args), _Alignof(gj_backward_backward_args)},
    {"gj_init_args", sizeof(gj_init_args), _Alignof(gj_init_args)},
    {"gj_cast_args", sizeof(gj_cast_args), _Alignof(gj_cast_args)},
};

/* The layout the C compiler gives each struct, as static_asserts for the device compiler. */
static char *layout_asserts(void) {
    size_t cap = 65536, used = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    const gj__template *args = gj__template_find("kernel_args.cuh");
    assert_non_null(args);
    /* NVRTC has no __builtin_offsetof; its front end folds __INTADDR__ of a member's address. */
    used += (size_t)snprintf(text + used, cap - used,
                             "%s\n#if defined(__CUDACC_RTC__)\n#define GJ_OFFSETOF(T, f) __INTADDR__(&((T *)0)->f)\n"
                             "#else\n#define GJ_OFFSETOF(T, f) __builtin_offsetof(T, f)\n#endif\n",
                             args->text);
    for (size_t i = 0; i < sizeof structs / sizeof structs[0]; ++i) {
        used += (size_t)snprintf(text + used, cap - used,
                                 "static_assert(sizeof(%s) == %zu, \"sizeof(%s) differs from the host\");\n"
                                 "static_assert(alignof(%s) == %zu, \"alignof(%s) differs from the host\");\n",
                                 structs[i].type, structs[i].size, structs[i].type, structs[i].type, structs[i].align,
                                 structs[i].type);
        assert_true(used < cap);
    }
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; ++i) {
        const field_layout *fl = &fields[i];
        used += (size_t)snprintf(text + used, cap - used,
                                 "static_assert(GJ_OFFSETOF(%s, %s) == %zu && sizeof(((%s*)0)->%s) == %zu, "
                                 "\"%s.%s differs from the host\");\n",
                                 fl->type, fl->field, fl->offset, fl->type, fl->field, fl->size, fl->type, fl->field);
        assert_true(used < cap);
    }
    snprintf(text + used, cap - used, "__global__ void gj_layout_probe(const gj_backward_backward_args a) { }\n");
    return text;
}

/* Levels per thread chosen by layout, the level groups, and staging of point-major rows
 * (SMALL_CONFIG: 4 levels, F = 2, fp32: rows of 32 bytes, one sector). */
static void level_groups_and_staging(void **state) {
    fixture *f = *state;
    gj__module_shape s = shape_of(f, NULL); /* levels_per_thread 0: automatic */
    assert_int_equal(s.levels_per_thread, 0);
    assert_int_equal(gj__levels_per_thread(&s, GJ__GROUP_FORWARD, 0), 1); /* feature-major: one level per block */
    assert_int_equal(gj__levels_per_thread(&s, GJ__GROUP_FORWARD, 1), 1); /* rows of one sector: nothing to gain */
    /* The backward to the parameters takes four levels per thread whatever the layout,
     * where every level's table is at most 8 MiB (here 4096 entries of 8 bytes). */
    assert_int_equal(s.largest_level_entries, 4096);
    assert_int_equal(gj__levels_per_thread(&s, GJ__GROUP_BACKWARD_PARAMS, 0), 4);
    assert_int_equal(gj__levels_per_thread(&s, GJ__GROUP_BACKWARD_PARAMS, 1), 4);
    s.largest_level_entries = (8u << 20) / 8u; /* 8 MiB: still grouped */
    assert_int_equal(gj__levels_per_thread(&s, GJ__GROUP_BACKWARD_PARAMS, 0), 4);
    s.largest_level_entries += 1; /* a level beyond 8 MiB: one level per block, as the forward */
    assert_int_equal(gj__levels_per_thread(&s, GJ__GROUP_BACKWARD_PARAMS, 0), 1);
    assert_int_equal(gj__levels_per_thread(&s, GJ__GROUP_BACKWARD_PARAMS, 1), 1);
    gj_codegen_options padded;
    gj_codegen_options_init(&padded);
    padded.output_width_multiple = 16; /* rows of 64 bytes: a sector (4 levels of 8 bytes) each */
    s = shape_of(f, &padded);
    assert_int_equal(gj__levels_per_thread(&s, GJ__GROUP_FORWARD, 1), 4);

    gj_forward_desc d = valid_forward(1000);
    d.y_layout = GJ_LAYOUT_SOA;
    gj_forward_args a;
    gj__launch_dims dims;
    gj__forward_args(&s, &d, &a, &dims);
    assert_int_equal(a.levels_per_thread, 1);
    assert_int_equal(dims.grid_y, 5); /* one per level, plus the padding slice */
    assert_int_equal(a.stage, 0);
    assert_int_equal(dims.shared_bytes, 0);

    d.y_layout = GJ_LAYOUT_AOS;
    gj__forward_args(&s, &d, &a, &dims);
    assert_int_equal(a.levels_per_thread, 4);
    assert_int_equal(dims.grid_y, 2); /* one group, plus the padding slice */
    assert_int_equal(a.stage, 1);
    /* An entry of 8 bytes: the group of four levels is split one level a thread, 64
     * threads a level, 64 points a block. */
    assert_true(s.forward_split);
    gj__config entry = f->enc->config; /* fp32, F = 2: 8 bytes */
    gj_codegen_options order;
    gj_codegen_options_init(&order);
    assert_true(gj__forward_split(&entry, &order));
    entry.precision = GJ_PRECISION_FP16; /* C1: 4 bytes, groups of eight: walked */
    assert_false(gj__forward_split(&entry, &order));
    entry.n_features_per_level = 4; /* C3: 8 bytes, groups of four */
    assert_true(gj__forward_split(&entry, &order));
    order.order = GJ_ORDER_POINT_MAJOR; /* no level groups */
    assert_false(gj__forward_split(&entry, &order));
    assert_int_equal(gj__group_block_points(&s, 4, 1), 64);
    assert_int_equal(gj__group_block_points(&s, 4, 0), 256);
    assert_int_equal(dims.grid_x, (1000 + 63) / 64);
    /* 4 levels x 2 fp32 = 8 words a row, rows 9 words apart, 64 rows. */
    assert_int_equal(dims.shared_bytes, 9 * 4 * 64);
    /* Walked (an entry under 8 bytes, e.g. C1's): 256 points a block, 256 rows. */
    gj__module_shape walked = s;
    walked.forward_split = 0;
    gj__forward_args(&walked, &d, &a, &dims);
    assert_int_equal(a.levels_per_thread, 4);
    assert_int_equal(dims.grid_x, (1000 + 255) / 256);
    assert_int_equal(dims.shared_bytes, 9 * 4 * 256);
    gj__forward_args(&s, &d, &a, &dims);
    void *aligned = d.y;
    d.y = ADDR(0x30002); /* not 4-byte aligned: stored without staging */
    gj__forward_args(&s, &d, &a, &dims);
    assert_int_equal(a.stage, 0);
    assert_int_equal(dims.shared_bytes, 0);
    d.y = aligned;

    gj_backward_desc b = valid_backward();
    gj_backward_args ba;
    gj__backward_args(&s, &b, &ba, &dims);
    assert_int_equal(ba.levels_per_thread, 4);
    assert_int_equal(dims.grid_y, 1);
    assert_int_equal(ba.stage, 1);
    /* The backward's threads walk the group: 256 points a block, 256 rows staged. */
    assert_int_equal(dims.grid_x, 1);
    assert_int_equal(dims.shared_bytes, 9 * 4 * 256);
    assert_int_equal(ba.aggregate_min, s.aggregate_min);
    b.dL_dy_layout = GJ_LAYOUT_SOA; /* feature-major dL/dy: four levels too, nothing staged */
    gj__backward_args(&s, &b, &ba, &dims);
    assert_int_equal(ba.levels_per_thread, 4);
    assert_int_equal(dims.grid_y, 1);
    assert_int_equal(ba.stage, 0);
    assert_int_equal(dims.shared_bytes, 0);
    b.dL_dparams = NULL; /* dL/dx alone: one level per block, as the forward */
    b.dL_dx = ADDR(0x70000);
    gj__backward_args(&s, &b, &ba, &dims);
    assert_int_equal(ba.levels_per_thread, 1);
    assert_int_equal(dims.grid_y, 4);

    /* A fixed count, capped at the levels; groups of 3 leave a short last group (grid y 2),
     * staged too (its 8 bytes a row are whole words). */
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.levels_per_thread = 3;
    s = shape_of(f, &opts);
    gj__forward_args(&s, &d, &a, &dims);
    assert_int_equal(a.levels_per_thread, 3);
    assert_int_equal(dims.grid_y, 2);
    assert_int_equal(a.stage, 1);
    assert_int_equal(dims.grid_x, (1000 + 84) / 85); /* 256 / 3 = 85 threads a level */
    opts.levels_per_thread = 100;
    s = shape_of(f, &opts);
    assert_int_equal(gj__levels_per_thread(&s, GJ__GROUP_FORWARD, 1), 4);
    opts.levels_per_thread = 1; /* a fixed count holds for the backward too */
    s = shape_of(f, &opts);
    assert_int_equal(gj__levels_per_thread(&s, GJ__GROUP_BACKWARD_PARAMS, 0), 1);
    opts.levels_per_thread = 129;
    gj_codegen_options resolved;
    assert_int_equal(gj__codegen_options_resolve(&f->ctx->diag, &opts, &resolved), GJ_ERROR_INVALID_ARGUMENT);
    assert_contains(gj_context_errmsg(f->ctx), "levels_per_thread");

    /* Staging needs whole words and fits in 48 KiB of shared memory. */
    assert_int_equal(gj__stage_bytes(&s, 1, 256, ADDR(0x30000), GJ_LAYOUT_AOS), 0);
    assert_int_equal(gj__stage_bytes(&s, 2, 256, ADDR(0x30000), GJ_LAYOUT_SOA), 0);
    assert_int_equal(gj__stage_bytes(&s, 2, 256, NULL, GJ_LAYOUT_AOS), 0);
    assert_int_equal(gj__stage_bytes(&s, 2, 256, ADDR(0x30000), GJ_LAYOUT_AOS), 5 * 4 * 256);
    /* fp16 with F = 1 in 3 levels, 2 per thread: the last group is half a word: not staged. */
    gj__module_shape odd = s;
    odd.precision = GJ_PRECISION_FP16;
    odd.n_features_per_level = 1;
    odd.n_levels = 3;
    odd.padded_width = 4;
    assert_int_equal(gj__stage_bytes(&odd, 2, 256, ADDR(0x30000), GJ_LAYOUT_AOS), 0);
    odd.n_levels = 4;
    assert_int_equal(gj__stage_bytes(&odd, 2, 256, ADDR(0x30000), GJ_LAYOUT_AOS), 1 * 4 * 256);
    opts.levels_per_thread = 2;
    opts.block_size = 1024;
    opts.points_per_thread = 16;
    s = shape_of(f, &opts);
    assert_int_equal(gj__stage_bytes(&s, 2, 1024 * 16, ADDR(0x30000), GJ_LAYOUT_AOS), 0);
    /* The forward splits its two levels: 512 x 16 points a block, 5 words each: 160 KiB,
     * too much; with one point a thread, 10 KiB. */
    gj__forward_args(&s, &d, &a, &dims);
    assert_int_equal(a.stage, 0);
    assert_int_equal(dims.grid_x, (1000 + 8191) / 8192);
    opts.points_per_thread = 1;
    s = shape_of(f, &opts);
    gj__forward_args(&s, &d, &a, &dims);
    assert_int_equal(a.stage, 1);
    assert_int_equal(dims.shared_bytes, 5 * 4 * 512);
    /* A split group wider than the block is cut to the block's threads (one point a block). */
    opts.block_size = 32;
    s = shape_of(f, &opts);
    s.n_levels = 64;
    s.levels_per_thread = 64;
    gj__forward_args(&s, &d, &a, &dims);
    assert_int_equal(a.levels_per_thread, 32);
    assert_int_equal(dims.grid_x, 1000);
    assert_int_equal(dims.grid_y, 2);

    /* Point-major kernels have no level groups. */
    opts.order = GJ_ORDER_POINT_MAJOR;
    opts.block_size = 256;
    opts.points_per_thread = 1;
    s = shape_of(f, &opts);
    gj__forward_args(&s, &d, &a, &dims);
    assert_int_equal(dims.grid_y, 1);
    assert_int_equal(a.stage, 0);
}

/* The programs a launch takes, as a caller that knows its launches asks for them before
 * (a model's passes, api/network_programs.c): of each pass the one form the launch runs, for
 * any point count, with the coarse levels' kernel of the same program. */
static int part_of(gj__kernel_id id) {
    return (int)gj__kernel(id)->part;
}

static void parts_a_launch_takes(void **state) {
    fixture *f = *state;
    gj__module_shape s = shape_of(f, NULL);
    /* The backward to the parameters from feature-major dL/dy: level groups (levels of at most
     * 8 MiB), one level a block beyond; dL/dx alone one level a block. */
    assert_int_equal(gj__backward_parts(&s, GJ_LAYOUT_SOA, 1, 0), 1u << GJ__PART_BACKWARD_ROWS);
    assert_int_equal(gj__backward_parts(&s, GJ_LAYOUT_SOA, 1, 1), 1u << GJ__PART_BACKWARD_INPUT_ROWS);
    assert_int_equal(gj__backward_parts(&s, GJ_LAYOUT_SOA, 0, 1), 1u << GJ__PART_BACKWARD_DX);
    gj__module_shape large = s;
    large.largest_level_entries = (8u << 20) / 8u + 1;
    assert_int_equal(gj__backward_parts(&large, GJ_LAYOUT_SOA, 1, 0), 1u << GJ__PART_BACKWARD);
    assert_int_equal(gj__forward_parts(&s, GJ_LAYOUT_SOA, 0), 1u << GJ__PART_FORWARD);
    assert_int_equal(gj__forward_parts(&s, GJ_LAYOUT_SOA, 1), 1u << GJ__PART_FORWARD_DYDX);
    gj_codegen_options padded;
    gj_codegen_options_init(&padded);
    padded.output_width_multiple = 16; /* rows of 64 bytes: point-major launches stage them */
    gj__module_shape rows = shape_of(f, &padded);
    assert_int_equal(gj__forward_parts(&rows, GJ_LAYOUT_AOS, 0), 1u << GJ__PART_FORWARD_ROWS);
    /* What gj__forward_args and gj__backward_kernels choose for real descriptors of any size. */
    const gj__module_shape *shapes[3] = {&s, &large, &rows};
    const uint64_t counts[3] = {1, 1000, 1u << 21};
    for (int i = 0; i < 3; ++i) {
        for (int c = 0; c < 3; ++c) {
            for (int layout = 0; layout < 2; ++layout) {
                const gj_data_layout l = layout ? GJ_LAYOUT_AOS : GJ_LAYOUT_SOA;
                gj_forward_desc fd = valid_forward(counts[c]);
                fd.y_layout = l;
                gj_forward_args fa;
                gj__launch_dims dims;
                gj__forward_args(shapes[i], &fd, &fa, &dims);
                assert_int_equal(gj__forward_parts(shapes[i], l, 0), 1u << part_of(gj__forward_kernel(&fd, &fa)));
                gj_backward_desc bd = valid_backward();
                bd.n = counts[c];
                bd.dL_dy_layout = l;
                gj_backward_args ba;
                gj__backward_args(shapes[i], &bd, &ba, &dims);
                gj__kernel_id main, coarse;
                gj__backward_kernels(&bd, &ba, &main, &coarse);
                assert_true(gj__backward_uses_coarse(shapes[i], &bd));
                assert_int_equal(part_of(main), part_of(coarse));
                assert_int_equal(gj__backward_parts(shapes[i], l, 1, 0), 1u << part_of(main));
                bd.dL_dparams = NULL; /* dL/dx alone: no coarse kernel */
                bd.dL_dx = ADDR(0x70000);
                gj__backward_args(shapes[i], &bd, &ba, &dims);
                gj__backward_kernels(&bd, &ba, &main, &coarse);
                assert_false(gj__backward_uses_coarse(shapes[i], &bd));
                assert_int_equal(gj__backward_parts(shapes[i], l, 0, 1), 1u << part_of(main));
            }
        }
    }
}

static void kernel_args_have_one_layout(void **state) {
    fixture *f = *state;
    /* Independent of the device compiler: 64-bit pointers and u64 first, no holes. */
    assert_int_equal(sizeof(gj_forward_args) % 8, 0);
    assert_int_equal(offsetof(gj_forward_args, x), 8);
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    char *source = layout_asserts();
    const char *names[] = {"&gj_layout_probe"};
    gj_program *prog = NULL;
    gj_status status = gj_compile_source(f->ctx, source, names, 1, "compute_90", &prog);
    if (status != GJ_OK) {
        fail_msg("the device compiler sees another layout: %s\n%s", gj_context_errmsg(f->ctx),
                 prog ? gj_program_log(prog) : "");
    }
    gj_program_destroy(prog);
    free(source);
}

/* ------------------------------------------------------------------ fp16 */

static void fp16_conversion_round_trips(void **state) {
    (void)state;
    /* Every half converts to a float and back to itself (NaNs stay NaNs). */
    for (uint32_t h = 0; h < 65536; ++h) {
        uint16_t in = (uint16_t)h, out;
        float value;
        gj_halves_to_floats(&in, &value, 1);
        gj_floats_to_halves(&value, &out, 1);
        if ((in & 0x7c00u) == 0x7c00u && (in & 0x3ffu)) {
            assert_true(isnan(value));
            assert_int_equal(out & 0x7c00u, 0x7c00u);
            assert_true(out & 0x3ffu);
        } else {
            assert_int_equal(out, in);
        }
    }
    /* Values derived by hand. */
    const float values[] = {1.0f, -2.0f, 65504.0f, 65520.0f, 65519.99f, 5.9604645e-08f, 2.9802322e-08f,
                            2.9802326e-08f, 1.0009765625f, 1.00048828125f, 1.00146484375f, 6.1035156e-05f};
    const uint16_t expected[] = {0x3c00, 0xc000, 0x7bff, 0x7c00, 0x7bff, 0x0001, 0x0000,
                                 0x0001, 0x3c01, 0x3c00, 0x3c02, 0x0400};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; ++i) {
        uint16_t out;
        gj_floats_to_halves(&values[i], &out, 1);
        if (out != expected[i]) {
            fail_msg("%.9g -> 0x%04x, expected 0x%04x", (double)values[i], out, expected[i]);
        }
    }
}

#if defined(__FLT16_MAX__)
/* Against the compiler's _Float16 conversion over a sweep of float bit patterns. */
static void fp16_conversion_matches_the_compiler(void **state) {
    (void)state;
    for (uint64_t bits = 0; bits < 0x100000000ull; bits += 0x1357) {
        uint32_t b = (uint32_t)bits;
        float value;
        memcpy(&value, &b, sizeof value);
        if (isnan(value)) {
            continue;
        }
        _Float16 reference = (_Float16)value;
        uint16_t expected, out;
        memcpy(&expected, &reference, sizeof expected);
        gj_floats_to_halves(&value, &out, 1);
        if (out != expected) {
            fail_msg("0x%08x (%.9g) -> 0x%04x, the compiler says 0x%04x", b, (double)value, out, expected);
        }
    }
}
#endif


/* ------------------------------------------------------------- the CLI */

static int have_cli(void) {
    if (!gj_test_cli_path()) {
        printf("SKIPPED: GRIDJIT_CLI is not set\n");
        return 0;
    }
    return 1;
}

static void write_n_floats(const char *dir, const char *name, size_t count) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    float *values = calloc(count + 1, sizeof(float));
    assert_non_null(values);
    for (size_t i = 0; i < count; ++i) {
        values[i] = 0.25f;
    }
    assert_int_equal(gj_test_write_file(path, (const char *)values, count * sizeof(float)), 0);
    free(values);
}

/* Runs the CLI in dir; returns its exit status, stderr in *err (malloc()ed). */
static int cli(const char *dir, const char *const *args, char **err, int *printed) {
    gj_cli_result r;
    assert_int_equal(gj_test_run_cli(dir, args, &r), 0);
    *err = strdup(r.err);
    *printed = r.out_len > 0;
    const int status = r.status;
    gj_cli_result_free(&r);
    return status;
}

#define EVAL_CONFIG "{\"otype\": \"HashGrid\", \"n_levels\": 2, \"log2_hashmap_size\": 4, \"precision\": \"fp32\"}"

static void eval_refuses_files_that_do_not_fit(void **state) {
    (void)state;
    if (!have_cli()) {
        skip();
    }
    char *dir = gj_test_scratch_dir("eval_sizes");
    assert_non_null(dir);
    /* D = 3, 2 levels x 2 features: n_params = 2 * 16 entries * 2 = 64, 4 outputs. */
    write_n_floats(dir, "p7.f32", 7);   /* not a multiple of D = 3 */
    write_n_floats(dir, "p6.f32", 6);   /* N = 2 */
    write_n_floats(dir, "w63.f32", 63); /* one short */
    write_n_floats(dir, "w64.f32", 64);
    write_n_floats(dir, "g7.f32", 7);   /* N * n_output_dims = 8 */
    write_n_floats(dir, "m3.f32", 3);   /* N = 2 */
    char path[4096];
    snprintf(path, sizeof path, "%s/odd.f32", dir);
    assert_int_equal(gj_test_write_file(path, "abcde", 5), 0); /* not whole floats */
    char *err = NULL;
    int printed = 0;

    const char *points_odd[] = {"eval", "--config", EVAL_CONFIG, "--points", "p7.f32", "--params", "w64.f32",
                                "--out-dir", "out", NULL};
    assert_int_equal(cli(dir, points_odd, &err, &printed), 1);
    assert_contains(err, "not a multiple of D = 3");
    assert_false(printed);
    free(err);
    const char *params_short[] = {"eval", "--config", EVAL_CONFIG, "--points", "p6.f32", "--params", "w63.f32",
                                  "--out-dir", "out", NULL};
    assert_int_equal(cli(dir, params_short, &err, &printed), 1);
    assert_contains(err, "expected n_params = 64");
    free(err);
    const char *dldy_short[] = {"eval", "--config", EVAL_CONFIG, "--points", "p6.f32", "--params", "w64.f32",
                                "--dl-dy", "g7.f32", "--out-dir", "out", NULL};
    assert_int_equal(cli(dir, dldy_short, &err, &printed), 1);
    assert_contains(err, "N * n_output_dims = 8");
    free(err);
    const char *bytes_odd[] = {"eval", "--config", EVAL_CONFIG, "--points", "odd.f32", "--params", "w64.f32",
                               "--out-dir", "out", NULL};
    assert_int_equal(cli(dir, bytes_odd, &err, &printed), 1);
    assert_contains(err, "not a whole number of float32 values");
    free(err);
    const char *levels_short[] = {"eval", "--config", EVAL_CONFIG, "--points", "p6.f32", "--params", "w64.f32",
                                  "--max-level", "m3.f32", "--out-dir", "out", NULL};
    assert_int_equal(cli(dir, levels_short, &err, &printed), 1);
    assert_contains(err, "expected N = 2");
    free(err);
    const char *level_range[] = {"eval", "--config", EVAL_CONFIG, "--points", "p6.f32", "--params", "w64.f32",
                                 "--max-level", "1.5", "--out-dir", "out", NULL};
    assert_int_equal(cli(dir, level_range, &err, &printed), 1);
    assert_contains(err, "--max-level: must be in [0, 1]");
    free(err);
    const char *h_without_g[] = {"eval", "--config", EVAL_CONFIG, "--points", "p6.f32", "--params", "w64.f32",
                                 "--dl-ddldx", "p6.f32", "--out-dir", "out", NULL};
    assert_int_equal(cli(dir, h_without_g, &err, &printed), 2);
    assert_contains(err, "--dl-ddldx needs --dl-dy");
    free(err);
    const char *missing[] = {"eval", "--config", EVAL_CONFIG, "--points", "p6.f32", NULL};
    assert_int_equal(cli(dir, missing, &err, &printed), 2);
    assert_contains(err, "--params is required");
    free(err);
    /* Everything fits, but there is no driver (GRIDJIT_DRIVER=off is inherited). */
    const char *fits[] = {"eval", "--config", EVAL_CONFIG, "--points", "p6.f32", "--params", "w64.f32",
                          "--out-dir", "out", NULL};
    assert_int_equal(cli(dir, fits, &err, &printed), 1);
    assert_contains(err, "gridjit eval: no GPU");
    assert_contains(err, "GRIDJIT_DRIVER=off");
    assert_false(printed);
    free(err);
    snprintf(path, sizeof path, "%s/out/y.f32", dir);
    assert_int_not_equal(access(path, F_OK), 0); /* nothing written */
    free(dir);
}

static void bench_without_a_gpu_says_so(void **state) {
    (void)state;
    if (!have_cli()) {
        skip();
    }
    char *err = NULL;
    int printed = 0;
    const char *args[] = {"bench", "--config", EVAL_CONFIG, "--points", "1000", NULL};
    assert_int_equal(cli(NULL, args, &err, &printed), 1);
    assert_contains(err, "gridjit bench: no GPU");
    assert_false(printed);
    free(err);
    const char *bad_pass[] = {"bench", "--config", EVAL_CONFIG, "--pass", "forward,sideways", NULL};
    assert_int_equal(cli(NULL, bad_pass, &err, &printed), 2);
    assert_contains(err, "unknown pass 'sideways'");
    free(err);
    const char *few[] = {"bench", "--config", EVAL_CONFIG, "--iterations", "5", NULL};
    assert_int_equal(cli(NULL, few, &err, &printed), 2);
    assert_contains(err, "--iterations");
    free(err);
    const char *order[] = {"bench", "--config", EVAL_CONFIG, "--order", "diagonal", NULL};
    assert_int_equal(cli(NULL, order, &err, &printed), 2);
    assert_contains(err, "--order: must be level or point");
    free(err);
}

/* The carveout rule on the H200's figures (228 KiB of shared memory a multiprocessor, 1 KiB
 * reserved a block) and the model blocks measured there: 64 x 4 (53.5 KiB: 2 blocks of the 4
 * the registers allow), 64 x 2 (35.1 KiB: all 3), 128 x 2 with its forward passes staged
 * (82.3 KiB: two blocks, past the half, as one block ran 1.4x slower); a block that fits only
 * once; unknown figures leave it to the driver. */
static void l1_carveout_holds_blocks_within_half(void **state) {
    (void)state;
    const uint32_t smem = 228 * 1024, reserved = 1024;
    int blocks = 0;
    assert_int_equal(gj__l1_carveout(smem, reserved, 54784, 4, &blocks), 48); /* 2 * 55808 / 233472 = 47.8 % */
    assert_int_equal(blocks, 2);
    assert_int_equal(gj__l1_carveout(smem, reserved, 35912, 3, &blocks), 48);
    assert_int_equal(blocks, 3);
    assert_int_equal(gj__l1_carveout(smem, reserved, 35912, 2, &blocks), 32); /* the registers' limit stands */
    assert_int_equal(blocks, 2);
    assert_int_equal(gj__l1_carveout(smem, reserved, 84224, 2, &blocks), 74); /* 2 * 85248 / 233472 = 73.03 % */
    assert_int_equal(blocks, 2);
    assert_int_equal(gj__l1_carveout(smem, reserved, 84224, 3, &blocks), 74); /* not 3: past the half already */
    assert_int_equal(blocks, 2);
    assert_int_equal(gj__l1_carveout(smem, reserved, 121856, 1, &blocks), 53);
    assert_int_equal(blocks, 1);
    assert_int_equal(gj__l1_carveout(smem, reserved, 240000, 1, &blocks), 100); /* past the device: capped */
    assert_int_equal(gj__l1_carveout(smem, reserved, 0, 8, &blocks), 4); /* only the reserved bytes */
    assert_int_equal(blocks, 8);
    assert_int_equal(gj__l1_carveout(0, reserved, 54784, 4, &blocks), -1);
    assert_int_equal(blocks, 4);
    assert_int_equal(gj__l1_carveout(smem, reserved, 54784, 0, &blocks), -1);
}

/* The forwards' resident warps and the feature-major forward's levels per thread by default
 * (module_args.c): where a level-major module has a hashed level of 3 or more dimensions, 32
 * warps for the one-level kernels, and unless the forward splits its groups (C3) 24 for the
 * staging ones in 3-D (16 in 4-D, and 16 with dy/dx); two levels a thread into
 * feature-major outputs held to 24 for 3-D fp16 grids whose largest table takes 512 KiB to
 * 8 MiB; in 2-D only the staging ones, 24 (32 with dy/dx); none for dense, tiled or
 * point-major ones (measured on an H200:
 * docs/runtime.md, "Launch shapes"). */
static void forward_warps_default_follows_hashed_levels(void **state) {
    fixture *f = *state;
    static const struct {
        const char *json;
        unsigned dims;
        gj_order order;
        uint32_t warps, staged_warps, grouped_levels, grouped_warps, staged_dydx_warps;
    } cases[] = {
        {"{\"otype\": \"HashGrid\"}", 3, GJ_ORDER_LEVEL_MAJOR, 32, 24, 2, 24, 16},
        {"{\"otype\": \"HashGrid\"}", 4, GJ_ORDER_LEVEL_MAJOR, 32, 16, 1, 0, 16},
        /* Largest tables of 1 MiB (F = 1), 8 MiB: paired; 16 MiB, 128 KiB, fp32 (4-byte entries): not. */
        {"{\"otype\": \"HashGrid\", \"n_features_per_level\": 1}", 3, GJ_ORDER_LEVEL_MAJOR, 32, 24, 2, 24, 16},
        {"{\"otype\": \"HashGrid\", \"log2_hashmap_size\": 21}", 3, GJ_ORDER_LEVEL_MAJOR, 32, 24, 2, 24, 16},
        {"{\"otype\": \"HashGrid\", \"log2_hashmap_size\": 22}", 3, GJ_ORDER_LEVEL_MAJOR, 32, 24, 1, 0, 16},
        {"{\"otype\": \"HashGrid\", \"log2_hashmap_size\": 15}", 3, GJ_ORDER_LEVEL_MAJOR, 32, 24, 1, 0, 16},
        {"{\"otype\": \"HashGrid\", \"n_features_per_level\": 1, \"precision\": \"fp32\"}", 3, GJ_ORDER_LEVEL_MAJOR, 32, 24, 1, 0, 16},
        {"{\"otype\": \"HashGrid\", \"n_levels\": 8, \"n_features_per_level\": 4}", 3, GJ_ORDER_LEVEL_MAJOR, 32, 0, 1, 0, 0},
        {"{\"otype\": \"HashGrid\", \"precision\": \"fp32\"}", 3, GJ_ORDER_LEVEL_MAJOR, 32, 0, 1, 0, 0}, /* split */
        /* 2-D: the staging forwards alone, 24 warps (32 with dy/dx); not where it splits, nor dense. */
        {"{\"otype\": \"HashGrid\"}", 2, GJ_ORDER_LEVEL_MAJOR, 0, 24, 1, 0, 32},
        {"{\"otype\": \"HashGrid\", \"n_levels\": 8, \"n_features_per_level\": 4}", 2, GJ_ORDER_LEVEL_MAJOR, 0, 0, 1, 0, 0},
        {"{\"otype\": \"HashGrid\", \"n_levels\": 5}", 2, GJ_ORDER_LEVEL_MAJOR, 0, 0, 1, 0, 0}, /* up to 256^2: dense */
        {"{\"otype\": \"HashGrid\"}", 2, GJ_ORDER_POINT_MAJOR, 0, 0, 1, 0, 0},
        {"{\"otype\": \"HashGrid\"}", 3, GJ_ORDER_POINT_MAJOR, 0, 0, 1, 0, 0},
        {"{\"otype\": \"HashGrid\", \"n_levels\": 2}", 3, GJ_ORDER_LEVEL_MAJOR, 0, 0, 1, 0, 0}, /* 16^3, 32^3 fit: dense */
        {"{\"otype\": \"DenseGrid\", \"n_levels\": 4}", 3, GJ_ORDER_LEVEL_MAJOR, 0, 0, 1, 0, 0},
        {"{\"otype\": \"TiledGrid\", \"n_levels\": 4}", 3, GJ_ORDER_LEVEL_MAJOR, 0, 0, 1, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        gj_codegen_options opts;
        gj_codegen_options_init(&opts);
        opts.order = cases[i].order;
        gj__module_shape s;
        gj_encoding *enc = encoding_shape(f, cases[i].json, cases[i].dims, &opts, &s);
        print_message("%u-D %s, order %d: %u warps, %u staging, %u levels a thread into feature-major outputs held to %u\n",
                      cases[i].dims, cases[i].json, (int)cases[i].order, s.forward_warps_per_sm,
                      s.staged_forward_warps_per_sm, s.feature_major_forward_levels, s.grouped_forward_warps_per_sm);
        assert_int_equal(s.forward_warps_per_sm, cases[i].warps);
        assert_int_equal(s.staged_forward_warps_per_sm, cases[i].staged_warps);
        assert_int_equal(s.staged_dydx_forward_warps_per_sm, cases[i].staged_dydx_warps);
        assert_int_equal(s.feature_major_forward_levels, cases[i].grouped_levels);
        assert_int_equal(s.grouped_forward_warps_per_sm, cases[i].grouped_warps);
        gj_encoding_destroy(enc);
    }
}

/* C1's launches by pass and layout: the forward into feature-major outputs in groups of two
 * levels (grid y 8), into point-major rows of 64 bytes in staged groups of eight; the
 * backward to dL/dx alone one level a block, to the parameters four; a fixed count wins. */
static void feature_major_forward_takes_level_pairs(void **state) {
    fixture *f = *state;
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    gj__module_shape s;
    gj_encoding *enc = encoding_shape(f, "{\"otype\": \"HashGrid\"}", 3, &opts, &s);
    assert_int_equal(gj__levels_per_thread(&s, GJ__GROUP_FORWARD, 0), 2);
    assert_int_equal(gj__levels_per_thread(&s, GJ__GROUP_FORWARD, 1), 8);
    assert_int_equal(gj__levels_per_thread(&s, GJ__GROUP_BACKWARD_INPUT, 0), 1);
    assert_int_equal(gj__levels_per_thread(&s, GJ__GROUP_BACKWARD_PARAMS, 0), 4);

    gj_forward_desc d = valid_forward(100000);
    d.y_layout = GJ_LAYOUT_SOA;
    gj_forward_args a;
    gj__launch_dims dims;
    gj__forward_args(&s, &d, &a, &dims);
    assert_int_equal(a.levels_per_thread, 2);
    assert_int_equal(dims.grid_y, 8);
    assert_int_equal(dims.grid_x, (100000 + 255) / 256);
    assert_int_equal(a.stage, 0);
    assert_int_equal(dims.shared_bytes, 0);
    d.y = NULL; /* dy/dx alone: the same groups */
    gj__forward_args(&s, &d, &a, &dims);
    assert_int_equal(a.levels_per_thread, 2);
    gj_encoding_destroy(enc);

    opts.levels_per_thread = 1; /* asked for: one level a block */
    enc = encoding_shape(f, "{\"otype\": \"HashGrid\"}", 3, &opts, &s);
    assert_int_equal(gj__levels_per_thread(&s, GJ__GROUP_FORWARD, 0), 1);
    gj_encoding_destroy(enc);
}

/* The residency cap (l1_carveout.h): `blocks` shares of a 32 KiB carveout fit, one more does
 * not, with the reserved bytes counted; a share at least the bytes a kernel stages, from a
 * 64 KiB carveout where 32 cannot hold them; the percent rounded down (the driver rounds up). */
static void residency_cap_fits_the_blocks_and_no_more(void **state) {
    (void)state;
    const uint32_t smem = 228 * 1024, reserved = 1024;
    uint32_t bytes = 1;
    for (int blocks = 1; blocks <= 8; ++blocks) {
        assert_int_equal(gj__residency_cap(smem, reserved, blocks, 0, &bytes), 14); /* 32768 / 233472 = 14.03 % */
        const uint32_t share = bytes + reserved;
        assert_true((uint32_t)blocks * share <= 32768);
        assert_true((uint32_t)(blocks + 1) * share > 32768);
    }
    assert_int_equal(gj__residency_cap(smem, reserved, 4, 0, &bytes), 14);
    assert_int_equal(bytes, 6976); /* 8000 a block: 4 in 32 KiB, not 5 */
    /* C1's point-major forward stages 9216 bytes a block: two blocks' shares of 32 KiB hold
     * them, four need the 64 KiB carveout (28 % of 228 KiB), eight cannot be held. */
    assert_int_equal(gj__residency_cap(smem, reserved, 2, 9216, &bytes), 14);
    assert_int_equal(bytes, 15168);
    assert_int_equal(gj__residency_cap(smem, reserved, 3, 9216, &bytes), 14);
    assert_int_equal(bytes, 9706);
    assert_int_equal(gj__residency_cap(smem, reserved, 4, 9216, &bytes), 28);
    assert_int_equal(bytes, 15168);
    assert_true(4 * (bytes + reserved) <= 65536 && 5 * (bytes + reserved) > 65536);
    assert_int_equal(gj__residency_cap(smem, reserved, 8, 9216, &bytes), -1);
    assert_int_equal(bytes, 0);
    assert_int_equal(gj__residency_cap(smem, reserved, 1, 40000, &bytes), 28); /* one block of 64 KiB: */
    assert_int_equal(bytes, 49152);                                               /* 48 KiB, no opt-in */
    assert_int_equal(gj__residency_cap(smem, reserved, 1, 49153, &bytes), -1);
    assert_int_equal(gj__residency_cap(smem, reserved, 4, 6976, &bytes), 14); /* exactly a share */
    assert_int_equal(gj__residency_cap(smem, reserved, 4, 6977, &bytes), 28);
    assert_int_equal(gj__residency_cap(164 * 1024, reserved, 4, 0, &bytes), 19); /* sm_80: 19.5 % */
    assert_int_equal(gj__residency_cap(164 * 1024, reserved, 4, 9216, &bytes), 39);
    assert_int_equal(gj__residency_cap(64 * 1024, reserved, 4, 0, &bytes), 50);     /* sm_75 */
    assert_int_equal(gj__residency_cap(64 * 1024, reserved, 4, 9216, &bytes), 100); /* all of it */
    assert_int_equal(gj__residency_cap(48 * 1024, reserved, 4, 9216, &bytes), -1);  /* no 64 KiB */
    assert_int_equal(gj__residency_cap(0, reserved, 4, 0, &bytes), -1);             /* unknown */
    assert_int_equal(bytes, 0);
    assert_int_equal(gj__residency_cap(16 * 1024, reserved, 4, 0, &bytes), -1); /* smaller than the carveout */
    assert_int_equal(gj__residency_cap(smem, reserved, 0, 0, &bytes), -1);
    assert_int_equal(gj__residency_cap(smem, reserved, 9, 0, &bytes), -1);
    assert_int_equal(gj__residency_cap(smem, 4096, 8, 0, &bytes), 28); /* 4096 reserved: a share of 64 KiB */
    assert_int_equal(bytes, 3904);
    assert_int_equal(gj__residency_cap(smem, 9000, 8, 0, &bytes), -1); /* the reserved bytes alone exceed a share */
    assert_int_equal(bytes, 0);
}

int main(void) {
    setenv("GRIDJIT_DRIVER", "off", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(driver_off_is_no_driver, setup, teardown),
        cmocka_unit_test_setup_teardown(missing_library_names_the_path, setup, teardown),
        cmocka_unit_test_setup_teardown(stub_library_is_no_driver, setup, teardown),
        cmocka_unit_test_setup_teardown(public_calls_refuse_null_arguments, setup, teardown),
        cmocka_unit_test(descriptor_defaults),
        cmocka_unit_test_setup_teardown(forward_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(max_level_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(point_count_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(pass_not_compiled, setup, teardown),
        cmocka_unit_test_setup_teardown(backward_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(backward_backward_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(init_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(fp16_alignment, setup, teardown),
        cmocka_unit_test_setup_teardown(gradient_plans, setup, teardown),
        cmocka_unit_test_setup_teardown(forward_geometry, setup, teardown),
        cmocka_unit_test_setup_teardown(backward_geometry, setup, teardown),
        cmocka_unit_test_setup_teardown(backward_desc_of_the_older_layout, setup, teardown),
        cmocka_unit_test(kernel_names_follow_the_contract),
        cmocka_unit_test_setup_teardown(load_refuses_a_program_of_other_options, setup, teardown),
        cmocka_unit_test_setup_teardown(level_groups_and_staging, setup, teardown),
        cmocka_unit_test_setup_teardown(parts_a_launch_takes, setup, teardown),
        cmocka_unit_test_setup_teardown(kernel_args_have_one_layout, setup, teardown),
        cmocka_unit_test(eval_refuses_files_that_do_not_fit),
        cmocka_unit_test(bench_without_a_gpu_says_so),
        cmocka_unit_test(l1_carveout_holds_blocks_within_half),
        cmocka_unit_test_setup_teardown(feature_major_forward_takes_level_pairs, setup, teardown),
        cmocka_unit_test_setup_teardown(forward_warps_default_follows_hashed_levels, setup, teardown),
        cmocka_unit_test(residency_cap_fits_the_blocks_and_no_more),
        cmocka_unit_test(fp16_conversion_round_trips),
#if defined(__FLT16_MAX__)
        cmocka_unit_test(fp16_conversion_matches_the_compiler),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
