# Install-time script (included by the install(CODE) in CMakeLists.txt): writes gridjit.pc
# (the shared library) and gridjit-static.pc (the archive and its dependencies) for the
# prefix being installed to and installs them into LIBDIR/pkgconfig. file(INSTALL) honours
# DESTDIR and records the files in install_manifest.txt.
# In: GJ_PC_SOURCE_DIR (where the .pc.in templates are), GJ_PC_OUTPUT_DIR (where the
# configured files are written), GJ_PC_LIBDIR, GJ_PC_INCLUDEDIR (GNUInstallDirs values,
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
foreach(module gridjit gridjit-static)
  configure_file("${GJ_PC_SOURCE_DIR}/${module}.pc.in" "${GJ_PC_OUTPUT_DIR}/${module}.pc" @ONLY)
  file(INSTALL DESTINATION "${GJ_PC_LIBDIR_FULL}/pkgconfig" TYPE FILE FILES "${GJ_PC_OUTPUT_DIR}/${module}.pc")
endforeach()
