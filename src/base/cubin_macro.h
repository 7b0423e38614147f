/* The macro NVRTC defines for gridjit when it compiles a cubin for a real architecture
 * (sm_XX), and leaves undefined for PTX (compute_XX, which the driver may finish for a newer
 * GPU) and in any other compiler: stated once for the compile layer, which passes it
 * (compile/options.c), and the generated code, which tests it (codegen/network_codegen.c:
 * a network's plan for large shared memory holds only in code built for such a GPU alone). */
#ifndef GJ_BASE_CUBIN_MACRO_H
#define GJ_BASE_CUBIN_MACRO_H

#define GJ__CUBIN_MACRO "GJ_CUBIN_TARGET"

#endif
