# Writes the package's changelog, /usr/share/doc/pipespin/changelog (then
# gzipped by packaging/deb.cmake), in the format Debian wants of a native
# package's: one entry for this version whose text is CHANGELOG.md, each
# line indented by two spaces. The entry's date is SOURCE_DATE_EPOCH when
# set, else the source tree's last commit, else now: the same tree makes
# the same file.
#   cmake -DIN=CHANGELOG.md -DOUT=changelog -DVERSION=0.1.0 -DMAINTAINER="..."
#         -DSOURCE_DIR=... -P deb_changelog.cmake
if(NOT DEFINED ENV{SOURCE_DATE_EPOCH})
  find_program(GIT git)
  if(GIT)
    execute_process(COMMAND ${GIT} -C ${SOURCE_DIR} log -1 --format=%ct
                    OUTPUT_VARIABLE commit_time OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE git_failed ERROR_QUIET)
    if(NOT git_failed AND commit_time MATCHES "^[0-9]+$")
      set(ENV{SOURCE_DATE_EPOCH} ${commit_time})
    endif()
  endif()
endif()
string(TIMESTAMP date "%a, %d %b %Y %H:%M:%S +0000" UTC)
file(STRINGS ${IN} lines)
set(text "pipespin (${VERSION}) unstable; urgency=medium\n\n")
string(APPEND text "  * What changed, from the project's CHANGELOG.md:\n\n")
foreach(line IN LISTS lines)
  if(line STREQUAL "")
    string(APPEND text "\n")
  else()
    string(APPEND text "  ${line}\n")
  endif()
endforeach()
string(APPEND text "\n -- ${MAINTAINER}  ${date}\n")
file(WRITE ${OUT} "${text}")
