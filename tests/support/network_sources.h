/* Generated network sources with a caller's kernel that instantiates every device
 * function, for the compile tests (test_network_codegen_sharded.c and its exhaustive sibling). */
#ifndef GJ_TEST_NETWORK_SOURCES_H
#define GJ_TEST_NETWORK_SOURCES_H

#include "gridjit.h"

/* The network of (n_neurons, hidden layers, activations, widths) as JSON into buffer. */
void gj_test_network_json(char *buffer, size_t size, const char *otype, unsigned n_neurons, unsigned hidden,
                          gj_activation activation, gj_activation output_activation);

/* gj_network_generate's unit for net (name "mlp", kernels unless device_functions_only) and,
 * appended, a kernel "mlp_user" calling mlp, mlp_fwd and mlp_bwd (a network alone), or, for a
 * model, "model_user" running the encoding then the network forward and backward.
 * malloc()ed; fails the test on error. */
char *gj_test_network_unit(gj_context *ctx, const gj_network *net, int device_functions_only);

/* Compiles the unit for arch with NVRTC and checks its kernels are there: with kernels
 * mlp_inference, mlp_forward, mlp_backward, mlp_zero and the user kernel; else the user
 * kernel. Fails the test with NVRTC's log on error. Returns the compile milliseconds. */
double gj_test_network_compile(gj_context *ctx, const gj_network *net, const char *unit, int device_functions_only,
                               const char *arch);

#endif
