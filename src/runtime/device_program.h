/* A compiled program for one device architecture, and its library loaded: what gj_module
 * and gj_user_module share. */
#ifndef GJ_RUNTIME_DEVICE_PROGRAM_H
#define GJ_RUNTIME_DEVICE_PROGRAM_H

#include "compile/compiler.h"
#include "loader/driver.h"

/* Compiles (through the cache) the caller's program for arch ("sm_90", "compute_80"). */
typedef gj_status (*gj__compile_for_arch_fn)(void *user, const char *arch, gj_program **out);
/* Loads prog (a fresh library) and looks up what the caller needs in it; undoes its own
 * work on failure. */
typedef gj_status (*gj__load_fn)(void *user, const gj_program *prog);

/* The program for a device of architecture sm: its exact cubin; PTX for the newest NVRTC
 * architecture not newer than sm when NVRTC does not know the device; without NVRTC, a
 * cached PTX of sm or older. Then loaded with load; a cached binary the driver refuses is
 * forgotten and compiled again (a few rounds). ready: a program compiled already for sm
 * (taken over), or NULL. */
gj_status gj__device_program(const gj__diag *d, gj__compiler *compiler, gj__compile_for_arch_fn compile, gj__load_fn load,
                             void *user, int sm, gj_program *ready);

/* The one way a program is loaded (modules, given programs, user modules): prog's binary as
 * a new library, then its kernels looked up by lowered name (n of them; a NULL name is
 * skipped and its kernel left NULL), each also resolved in the current context, so that a
 * binary the device cannot run fails here rather than at a launch. On failure nothing
 * stays loaded, and a driver error says which target the program was compiled for. */
gj_status gj__program_load(const gj__diag *d, gj__driver *drv, const gj_program *prog, const char *const *lowered,
                           size_t n, CUlibrary *library, CUkernel *kernels);

/* cuLibraryLoadData of prog's binary. In test builds the next gj__test_refuse_loads loads
 * are refused as the driver refuses a binary it cannot use. */
CUresult gj__library_load(gj__driver *drv, const gj_program *prog, CUlibrary *out);

#ifdef GJ_TEST_HOOKS
#include <stdatomic.h>
extern atomic_int gj__module_test_refuse_loads;
#endif

#endif
