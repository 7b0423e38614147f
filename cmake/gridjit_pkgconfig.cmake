# Install-time script (included by the install(CODE) in CMakeLists.txt): writes gridjit.pc
# for the prefix being installed to and installs it into LIBDIR/pkgconfig. file(INSTALL)
# honours DESTDIR and records the file in install_manifest.txt.
# In: GJ_PC_TEMPLATE, GJ_PC_OUTPUT, GJ_PC_LIBDIR, GJ_PC_INCLUDEDIR (GNUInstallDirs values,
# relative to the prefix or absolute), PROJECT_VERSION, CMAKE_INSTALL_PREFIX (the prefix
# of this installation).
set(GJ_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
foreach(kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${GJ_PC_${kind}}")
    set(GJ_PC_${kind}_VALUE "${GJ_PC_${kind}}")
    set(GJ_PC_${kind}_FULL "${GJ_PC_${kind}}")
  else()
    set(GJ_PC_${kind}_VALUE "\${prefix}/${GJ_PC_${kind}}")
    set(GJ_PC_${kind}_FULL "${CMAKE_INSTALL_PREFIX}/${GJ_PC_${kind}}")
  endif()
endforeach()
configure_file("${GJ_PC_TEMPLATE}" "${GJ_PC_OUTPUT}" @ONLY)
file(INSTALL DESTINATION "${GJ_PC_LIBDIR_FULL}/pkgconfig" TYPE FILE FILES "${GJ_PC_OUTPUT}")
