# Included by the root CMakeLists.txt's project() call when the Python package is built
# (python/pyproject.toml sets CMAKE_PROJECT_gridjit_INCLUDE to this file); a plain CMake
# build of the repository never reads it.
#
# It makes the installed tree self-contained, so that the package works on a machine
# that has neither libcjson nor libxxhash installed (a GPU machine with only a driver):
#
# 1. RPATH: what is installed finds its libraries next to it. The package installs
#    lib/libgridjit.so.N and bin/gridjit (the CLI), hence $ORIGIN and $ORIGIN/../lib.
# 2. Runtime dependencies: at install time, the shared libraries libgridjit links
#    (found with file(GET_RUNTIME_DEPENDENCIES) on the built library) are copied into
#    lib/ under their SONAMEs, except the C library's own (glibc is the platform's).
#    Today those are libcjson.so.1 (MIT licence) and libxxhash.so.0 (BSD-2-Clause).
#    libnvrtc and libcuda are dlopen()ed by libgridjit at run time and are not
#    dependencies of the file, so they are never bundled.

set(CMAKE_INSTALL_RPATH "$ORIGIN;$ORIGIN/../lib")

install(CODE [[
  file(GET_RUNTIME_DEPENDENCIES
    LIBRARIES "$<TARGET_FILE:gridjit>"
    RESOLVED_DEPENDENCIES_VAR gj_deps
    UNRESOLVED_DEPENDENCIES_VAR gj_missing
    PRE_EXCLUDE_REGEXES
      "^ld-linux" "^linux-vdso" "^libc\\.so" "^libm\\.so" "^libdl\\.so" "^libpthread\\.so"
      "^librt\\.so" "^libresolv\\.so" "^libutil\\.so"
    POST_EXCLUDE_REGEXES
      "/ld-linux[^/]*$" "/libc\\.so[^/]*$" "/libm\\.so[^/]*$" "/libdl\\.so[^/]*$"
      "/libpthread\\.so[^/]*$" "/librt\\.so[^/]*$")
  if(gj_missing)
    message(FATAL_ERROR "gridjit: unresolved runtime dependencies of libgridjit: ${gj_missing}")
  endif()
  foreach(gj_dep IN LISTS gj_deps)
    # gj_dep is the path the loader would open, named by the SONAME (e.g. .../libcjson.so.1,
    # usually a symlink): install the file it points to under that name.
    get_filename_component(gj_soname "${gj_dep}" NAME)
    get_filename_component(gj_real "${gj_dep}" REALPATH)
    file(INSTALL "${gj_real}" DESTINATION "${CMAKE_INSTALL_PREFIX}/lib" RENAME "${gj_soname}")
  endforeach()
]])
