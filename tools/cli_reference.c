/* The test suite's CPU reference (tests/support/cpu_reference.c: double precision,
 * written from SPEC, not from the generated code), compiled into the CLI so that
 * `gridjit demo` can compare the GPU with it. Included rather than listed in the build
 * so that the build files need no change. */
#include "../tests/support/cpu_reference.c"
