# Installing pipespin like a system package: `cmake --install`, and a Debian
# package with `cpack -G DEB` (tools/deb_test.sh builds, installs and removes
# it). Included from the top-level CMakeLists.txt once the targets exist.
#
# Layout under the prefix (GNUInstallDirs; the libdir is lib/<multiarch> when
# the build is configured with CMAKE_INSTALL_PREFIX=/usr on Debian):
#   bin/pipespin
#   <libdir>/libpipespin.so and libpipespin-log.so, side by side: the shim
#       dlopens its sink from its own directory (src/interpose/report.cpp)
#   share/man/man1/pipespin.1.gz, share/man/man5/pipespin.conf.5.gz
#   share/doc/pipespin/preload.conf.example, and copyright and changelog.gz
#       (packaging/deb.cmake)
#   share/bash-completion/completions/pipespin
#   include/pipespin/pipespin.h, share/pkgconfig/pipespin.pc and
#       share/cmake/pipespin/: the control API for programs (docs/api.md),
#       header-only, so architecture-independent (share, not the libdir)
#   /etc/pipespin.conf, only when installing to the system prefix /usr:
#       preload.conf.example with every line commented out, so that it
#       changes nothing until the admin uncomments a line
#
# The manual pages and the completion are written by pipespin-gendoc
# (tools/gendoc) from the command and option tables, never by hand. The lab
# (pipespin-bench) and the generator are not installed.
include(GNUInstallDirs)

# Libraries are mapped, never executed: 0644, as Debian wants them.
install(TARGETS pipespin pipespin_log
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)

set(PIPESPIN_GEN_DIR ${CMAKE_BINARY_DIR}/share)
set(PIPESPIN_EXAMPLE ${CMAKE_SOURCE_DIR}/preload.conf.example)
# What the manual pages say about files; the config is described when the
# configured prefix is the one that installs it.
set(PIPESPIN_DOC_PATHS --libdir ${CMAKE_INSTALL_FULL_LIBDIR} --docdir ${CMAKE_INSTALL_FULL_DOCDIR})
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  list(APPEND PIPESPIN_DOC_PATHS --config /etc/pipespin.conf)
endif()

function(pipespin_gen_doc output)
  add_custom_command(OUTPUT ${PIPESPIN_GEN_DIR}/${output}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PIPESPIN_GEN_DIR}
    COMMAND $<TARGET_FILE:pipespin_gendoc> ${ARGN} --output ${PIPESPIN_GEN_DIR}/${output}
    DEPENDS pipespin_gendoc ${PIPESPIN_EXAMPLE}
    COMMENT "Writing ${output} from the command and option tables"
    VERBATIM)
endfunction()
function(pipespin_gzip name)
  add_custom_command(OUTPUT ${PIPESPIN_GEN_DIR}/${name}.gz
    COMMAND gzip -9nfk ${PIPESPIN_GEN_DIR}/${name}
    DEPENDS ${PIPESPIN_GEN_DIR}/${name}
    VERBATIM)
endfunction()

pipespin_gen_doc(pipespin.1 man1 ${PIPESPIN_DOC_PATHS})
pipespin_gen_doc(pipespin.conf.5 man5 --example ${PIPESPIN_EXAMPLE} ${PIPESPIN_DOC_PATHS})
pipespin_gen_doc(pipespin.bash-completion bash-completion)
pipespin_gzip(pipespin.1)
pipespin_gzip(pipespin.conf.5)

# The system config: the example with every setting commented out.
pipespin_gen_doc(pipespin.conf system-config --example ${PIPESPIN_EXAMPLE})

add_custom_target(pipespin_docs ALL DEPENDS
  ${PIPESPIN_GEN_DIR}/pipespin.1.gz
  ${PIPESPIN_GEN_DIR}/pipespin.conf.5.gz
  ${PIPESPIN_GEN_DIR}/pipespin.bash-completion
  ${PIPESPIN_GEN_DIR}/pipespin.conf)

install(FILES ${PIPESPIN_GEN_DIR}/pipespin.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${PIPESPIN_GEN_DIR}/pipespin.conf.5.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man5)
install(FILES ${PIPESPIN_EXAMPLE} DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PIPESPIN_GEN_DIR}/pipespin.bash-completion
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME pipespin)

# The control API: the header, a pkg-config file and a CMake package
# (find_package(pipespin) -> pipespin::api). The .pc names the prefix
# actually installed to (`cmake --install --prefix P` of a build configured
# for another), so it is written at install time; the CMake package finds
# its prefix from its own location.
install(FILES ${CMAKE_SOURCE_DIR}/include/pipespin/pipespin.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/pipespin)
install(TARGETS pipespin_api EXPORT pipespin-targets)
set(PIPESPIN_CMAKE_DIR ${CMAKE_INSTALL_DATADIR}/cmake/pipespin)
install(EXPORT pipespin-targets NAMESPACE pipespin:: DESTINATION ${PIPESPIN_CMAKE_DIR})
include(CMakePackageConfigHelpers)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/pipespin-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion ARCH_INDEPENDENT)
install(FILES ${CMAKE_SOURCE_DIR}/cmake/pipespin-config.cmake.in
  DESTINATION ${PIPESPIN_CMAKE_DIR} RENAME pipespin-config.cmake)
install(FILES ${CMAKE_BINARY_DIR}/pipespin-config-version.cmake DESTINATION ${PIPESPIN_CMAKE_DIR})
set(PIPESPIN_PC_PREFIX "@PIPESPIN_PC_PREFIX@")  # filled in at install time
configure_file(${CMAKE_SOURCE_DIR}/cmake/pipespin.pc.in ${CMAKE_BINARY_DIR}/pipespin.pc.in @ONLY)
# Written to a directory of its own per prefix: installs to several
# prefixes may run at once (the tests do).
install(CODE "
  set(PIPESPIN_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  string(MD5 pipespin_pc_dir \"\${CMAKE_INSTALL_PREFIX}\")
  set(pipespin_pc \"${CMAKE_BINARY_DIR}/pc/\${pipespin_pc_dir}/pipespin.pc\")
  configure_file(\"${CMAKE_BINARY_DIR}/pipespin.pc.in\" \"\${pipespin_pc}\" @ONLY)
  file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/pkgconfig\" TYPE FILE
       PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ FILES \"\${pipespin_pc}\")")

# /etc/pipespin.conf is decided at install time, from the prefix actually
# used: `cmake --install build --prefix /tmp/x` of a /usr build must not
# write the host's /etc. file(INSTALL) adds $DESTDIR (CPack's staging tree).
install(CODE "
  if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
    file(INSTALL DESTINATION \"/etc\" TYPE FILE
         PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
         FILES \"${PIPESPIN_GEN_DIR}/pipespin.conf\")
  else()
    message(STATUS \"Not installing /etc/pipespin.conf: prefix \${CMAKE_INSTALL_PREFIX} is not /usr\")
  endif()")

include(${CMAKE_SOURCE_DIR}/packaging/deb.cmake)
