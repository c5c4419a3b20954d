#!/usr/bin/env bash
# Case no_cxx_runtime: libpipespin.so needs no C++ runtime. The build links
# it with the C driver and --no-undefined, but CMake still appends -lstdc++
# (its core is a C++ static library), so a stray libstdc++ symbol (say, the
# std::out_of_range a string_view::substr may throw) would link quietly and
# load libstdc++ into every wrapped process. This catches it.
#
#   check_no_cxx.sh NM READELF LIB
set -u
nm=$1 readelf=$2 lib=$3
status=0
if "$readelf" -d "$lib" | grep -E 'NEEDED.*(libstdc\+\+|libgcc_s)'; then
  echo "FAIL: $lib needs the C++ runtime (above)" >&2
  status=1
fi
# Undefined C++ names, but for the weak TLS wrappers the compiler emits for
# our own thread_locals (resolved inside the library, never from libstdc++).
if "$nm" -D --undefined-only "$lib" | awk '{print $NF}' | grep -E '^_Z' | grep -vE '^_ZTH'; then
  echo "FAIL: $lib imports the C++ names above" >&2
  status=1
fi
[[ $status -eq 0 ]] && echo "ok: $lib has no C++ runtime dependency"
exit $status
