/* Helpers shared by the fused examples and data_parallel (not by examples/minimal, which
 * stands alone): error checks, the kernel sources, timing, the MLP's weights and a CPU
 * reference of it. */
#ifndef EX_EXAMPLE_H
#define EX_EXAMPLE_H

#include <gridjit.h>

#include <stddef.h>
#include <stdint.h>

/* The texts embedded at build time (examples/CMakeLists.txt). */
extern const char ex_mlp_cuh[];
extern const char ex_fused_inference_cu[];

/* tiny-cuda-nn's default HashGrid: 16 levels x 2 features, 2^19 entries, base 16, scale 2,
 * fp16 parameters. */
#define EX_HASHGRID                                                                                                 \
    "{\"otype\": \"HashGrid\", \"n_levels\": 16, \"n_features_per_level\": 2, \"log2_hashmap_size\": 19, "      \
    "\"base_resolution\": 16, \"per_level_scale\": 2.0, \"precision\": \"fp16\"}"

/* The MLP (common/mlp.cuh): 32 -> 64 -> 64 -> 16, weights W0 (64 x 32), W1 (64 x 64),
 * W2 (16 x 64), row-major (output x input), one after the other. */
enum { EX_IN = 32, EX_HID = 64, EX_OUT = 16, EX_W0 = 0, EX_W1 = 2048, EX_W2 = 6144, EX_N_WEIGHTS = 7168 };
/* The same MLP as tiny-cuda-nn's network configuration, and the model of both (encoding + network)
 * that gridjit's network module runs: its weights are in the MLP's layout above (tiny-cuda-nn's),
 * so the same weights and encoding parameters serve the hand-written kernels and the module. */
#define EX_NETWORK                                                                                                  \
    "{\"otype\": \"FullyFusedMLP\", \"activation\": \"ReLU\", \"output_activation\": \"None\", "         \
    "\"n_neurons\": 64, \"n_hidden_layers\": 2}"
#define EX_MODEL "{\"encoding\": " EX_HASHGRID ", \"network\": " EX_NETWORK "}"
/* The model for dims input dimensions and n_out outputs (padded to 16 as tiny-cuda-nn pads them,
 * so at most 16 computes the MLP above); exits unless its parameters match the MLP's and the
 * encoding's. */
gj_network *ex_model_create(int dims, uint32_t n_out);
/* gj_network_inference of a model's module on the default stream: y_fp16 (n x outputs fp16
 * values, as the hand-written kernels write them: gj_network_pass_desc.output_fp16) from x (n x
 * dims floats), the network's weights (fp16) and the encoding's parameters. */
gj_status ex_model_inference(gj_network_module *module, uint64_t n, const float *x, const void *weights,
                             const void *params, void *y_fp16);

/* Shared memory of the inference kernels per block: the padded weights, 80 bytes per point. */
#define EX_WEIGHTS_SHARED 16640u
#define EX_INFER_SHARED(warps) (EX_WEIGHTS_SHARED + (uint32_t)(warps) * 32u * 80u)

extern gj_context *ex_ctx;

/* Creates ex_ctx. */
void ex_init(void);
/* Exits with the status's name and the context's message when status is not GJ_OK. */
void ex_check(gj_status status, const char *what, const char *file, int line);
#define EX_CHECK(call) ex_check((call), #call, __FILE__, __LINE__)
void ex_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* 1 when a GPU is usable (info filled); otherwise prints why not and returns 0. */
int ex_gpu_present(gj_runtime_info *info);

/* source with its line `#include "mlp.cuh"` replaced by common/mlp.cuh (and #line
 * directives, so that diagnostics name the right file and line). Free with free(). */
char *ex_splice_mlp(const char *source, const char *file_name);

/* A user program: one source, the encoding "grid", kernels and -D options. encoding.opts
 * may point at codegen (ex_program_passes): do not copy an ex_program. */
typedef struct ex_program {
    const char *file_name;
    char *source; /* spliced */
    gj_source_encoding encoding;
    gj_codegen_options codegen;
    const char *kernels[8];
    size_t n_kernels;
    char option_text[4][64];
    const char *options[4];
    size_t n_options;
} ex_program;

void ex_program_init(ex_program *p, const char *file_name, const char *raw_source, const gj_encoding *enc);
void ex_program_kernel(ex_program *p, const char *name);
void ex_program_define(ex_program *p, const char *name, int value);
/* The device functions that the header grid.cuh holds (gj_pass bits; default all): a
 * program that never calls grid_bwd need not have NVRTC parse and compile it. */
void ex_program_passes(ex_program *p, uint32_t passes);
void ex_program_desc(const ex_program *p, gj_source_desc *desc);
void ex_program_free(ex_program *p);

/* Compiles for arch through the cache and reports (the path without a GPU). */
void ex_compile_report(const ex_program *p, const char *arch);
/* A fresh context with gridjit's disk cache off (cold compiles); destroy it with gj_context_destroy. */
gj_context *ex_cold_context(void);
/* Milliseconds of a compile of p for arch with gridjit's disk cache off (a fresh context). */
double ex_cold_compile_ms(const ex_program *p, const char *arch);
/* Loads p for the current device. */
gj_user_module *ex_module(const ex_program *p);
gj_kernel *ex_kernel(gj_user_module *module, const char *name);

/* Blocks of `block` threads that keep every multiprocessor busy (persistent kernels):
 * the occupancy times the multiprocessors (never more than `needed`). */
uint32_t ex_persistent_grid(gj_kernel *kernel, uint32_t block, uint32_t shared_bytes, uint64_t needed);

/* Launch helpers. */
void ex_launch(gj_kernel *kernel, uint32_t grid, uint32_t block, uint32_t shared_bytes, void **args);
/* gridjit's forward kernel on the default stream: the features of n points x (n x D
 * floats) into y, point-major (soa 0) or feature-major (soa 1). */
void ex_forward(gj_module *module, uint64_t n, const float *x, const void *params, void *y, int soa);

/* Median milliseconds of fn (which launches work on the default stream), measured with
 * events around each of `reps` calls after `warmup` calls. */
typedef void (*ex_work_fn)(void *user);
double ex_time_ms(ex_work_fn fn, void *user, int warmup, int reps);
/* The median of n values (n >= 1), which it sorts. */
double ex_median(double *values, int n);

/* Device memory. */
void *ex_alloc(size_t bytes);
void *ex_alloc_zero(size_t bytes);
void ex_upload(void *dst, const void *src, size_t bytes);
void ex_download(void *dst, const void *src, size_t bytes);
void ex_zero(void *dst, size_t bytes);

/* Xavier-uniform weights (fp32 values already rounded to fp16, and their fp16 bits). */
void ex_init_weights(float *w, uint16_t *w_half, uint64_t seed);
/* Uniform floats in [0, 1). */
void ex_random_uniform(float *out, size_t n, uint64_t seed);
float ex_half_to_float(uint16_t h);
float ex_round_half(float f);

/* The MLP on the CPU for one point, mirroring the kernels: features x (32, already fp16
 * values), hidden activations rounded to fp16, products in double, outputs as float. */
void ex_mlp_forward_cpu(const float *w, const float *x, float h1[EX_HID], float h2[EX_HID], float out[EX_OUT]);

/* The current time in milliseconds (monotonic). */
double ex_now_ms(void);

#endif
