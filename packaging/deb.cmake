# The Debian package, built by `cpack -G DEB` in a build configured with
# -DCMAKE_INSTALL_PREFIX=/usr (tools/deb_test.sh configures, builds, packs,
# installs, checks and removes it). Depends: comes from dpkg-shlibdeps.
set(PIPESPIN_DEB_MAINTAINER "pipespin developers <pipespin@example.invalid>"
    CACHE STRING "Maintainer field of the Debian package")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME pipespin)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_DESCRIPTION
    "libpipespin.so is an LD_PRELOAD library that makes unmodified programs
wait less on pipes: before a read, write or poll would block on a pipe, it
spin-polls the pipe for a short, adaptive budget. The pipespin command runs
a program with it preloaded and measures what it buys. pipespin.h (with
pkg-config and CMake files) lets a program steer it: per-fd spin hints, a
per-thread switch, its counters.")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # pipespin_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${PIPESPIN_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "bash-completion")
# conffiles: /etc/pipespin.conf (kept, changed or not, on remove; deleted on
# purge). prerm: takes the library out of /etc/ld.so.preload before it goes.
set(PIPESPIN_PRELOAD_PATH ${CMAKE_INSTALL_FULL_LIBDIR}/libpipespin.so)
configure_file(${CMAKE_SOURCE_DIR}/packaging/deb/prerm.in ${CMAKE_BINARY_DIR}/deb/prerm @ONLY)
configure_file(${CMAKE_SOURCE_DIR}/packaging/deb/conffiles ${CMAKE_BINARY_DIR}/deb/conffiles COPYONLY)
# triggers: ldconfig runs once after the libraries are unpacked, as Debian
# wants for any package with libraries in the linker's directories (CPack's
# postinst and postrm also call it).
configure_file(${CMAKE_SOURCE_DIR}/packaging/deb/triggers ${CMAKE_BINARY_DIR}/deb/triggers COPYONLY)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/deb/conffiles ${CMAKE_BINARY_DIR}/deb/prerm
    ${CMAKE_BINARY_DIR}/deb/triggers)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

# The package's copyright file (machine-readable, DEP-5): pipespin's own
# licence and those of the header-only libraries compiled into it. Debian
# wants it at /usr/share/doc/<package>/copyright, mode 0644.
install(FILES ${CMAKE_SOURCE_DIR}/packaging/deb/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR}
  PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
# A native package's changelog is /usr/share/doc/<package>/changelog.gz, in
# Debian's changelog format: one entry holding CHANGELOG.md
# (deb_changelog.cmake), compressed reproducibly (no name, no time stamp).
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/deb/changelog.gz
  COMMAND ${CMAKE_COMMAND} -DIN=${CMAKE_SOURCE_DIR}/CHANGELOG.md -DOUT=${CMAKE_BINARY_DIR}/deb/changelog
          -DVERSION=${PROJECT_VERSION} -DMAINTAINER=${PIPESPIN_DEB_MAINTAINER}
          -DSOURCE_DIR=${CMAKE_SOURCE_DIR} -P ${CMAKE_SOURCE_DIR}/packaging/deb_changelog.cmake
  COMMAND gzip -9nf ${CMAKE_BINARY_DIR}/deb/changelog
  DEPENDS ${CMAKE_SOURCE_DIR}/CHANGELOG.md ${CMAKE_SOURCE_DIR}/packaging/deb_changelog.cmake
  VERBATIM)
add_custom_target(pipespin_changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/deb/changelog.gz)
install(FILES ${CMAKE_BINARY_DIR}/deb/changelog.gz DESTINATION ${CMAKE_INSTALL_DOCDIR}
  PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)

# A package of a /usr/local build would name the wrong paths everywhere.
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_BINARY_DIR}/deb/project_config.cmake)
file(WRITE ${CPACK_PROJECT_CONFIG_FILE}
  "if(CPACK_GENERATOR STREQUAL \"DEB\" AND NOT \"${CMAKE_INSTALL_PREFIX}\" STREQUAL \"/usr\")\n"
  "  message(FATAL_ERROR \"pipespin: configure with -DCMAKE_INSTALL_PREFIX=/usr to build the .deb \"\n"
  "          \"(this build installs to ${CMAKE_INSTALL_PREFIX})\")\n"
  "endif()\n")

include(CPack)
