#!/usr/bin/env bash
# Case layout: what every forked child of a wrapped program runs is cheap to
# reach. A child does not inherit its parent's page-table entries for the
# library's code, so its first call into each 64 KiB window of it is a page
# fault; and every page of the library's data it writes is a copy-on-write
# fault. So (src/interpose/layout.ld, CMakeLists.txt):
#  - the library has no DT_INIT/DT_FINI and imports neither __cxa_atexit nor
#    __cxa_finalize: nothing of the compiler's start files runs at exit
#    (their destructor walk writes a flag in the library's data), and no
#    static object registers a destructor;
#  - .bss is not aligned to a page: it then starts in the page the loader
#    already writes (the end of .data), and a process's first writes to the
#    library's variables cost no page fault of their own;
#  - the functions a subshell or a child between fork and exec calls (the
#    signal-action wrapper, dup2, close, read, write, execve, _exit and the
#    library's exit-time destructor), and those a process that starts and
#    exits at once calls (the constructor, the look-up of the real
#    functions at its first hook, fclose of its stdout), lie within one span
#    of at most 16 KiB;
#  - the functions every such process calls in libc are bound when the
#    library is loaded, not through the PLT (whose page is a window of its
#    own, far from that span): secure_getenv, _dl_find_object.
#
#   check_layout.sh NM READELF LIB
set -u
nm=$1 readelf=$2 lib=$3
status=0
if "$readelf" -d "$lib" | grep -E '\((INIT|FINI)\)'; then
  echo "FAIL: $lib has DT_INIT/DT_FINI (above): linked with the start files" >&2
  status=1
fi
if "$nm" -D --undefined-only "$lib" | grep -E '__cxa_(atexit|finalize)'; then
  echo "FAIL: $lib registers destructors to run at exit (above)" >&2
  status=1
fi
bss_align=$("$readelf" -SW "$lib" | sed -nE 's/.* \.bss +NOBITS +[0-9a-f]+ [0-9a-f]+ [0-9a-f]+ [0-9a-f]+ +WA +[0-9]+ +[0-9]+ +([0-9]+)$/\1/p')
if [[ -z $bss_align ]]; then
  echo "FAIL: no .bss alignment found in $lib" >&2
  status=1
elif [[ $bss_align -ge 4096 ]]; then
  echo "FAIL: .bss is aligned to $bss_align bytes: it starts on a page of its own" >&2
  status=1
else
  echo ".bss is aligned to $bss_align bytes"
fi
if "$readelf" -rW "$lib" | grep -E 'JUMP_SLOT.* (secure_getenv|_dl_find_object)@'; then
  echo "FAIL: $lib calls the above through the PLT: declare them noplt" >&2
  status=1
fi
max_span=$((16 * 1024))
min=-1 max=0 found=0
while read -r addr size name; do
  lo=$((16#$addr)) hi=$((16#$addr + 16#$size))
  echo "  $name at 0x$addr"
  if [[ $min -lt 0 || $lo -lt $min ]]; then min=$lo; fi
  if [[ $hi -gt $max ]]; then max=$hi; fi
  found=$((found + 1))
done < <("$nm" -C -S "$lib" | sed -nE \
           -e 's/^([0-9a-f]+) ([0-9a-f]+) [tT] (sigaction|dup2|close|read|write|execve|_exit|fclose)$/\1 \2 \3/p' \
           -e 's/^([0-9a-f]+) ([0-9a-f]+) [tT] (.*pipespin_(init|fini)\(\))$/\1 \2 \3/p' \
           -e 's/^([0-9a-f]+) ([0-9a-f]+) [tT] (.*NextSymbols::(NextSymbols|find)\(.*)$/\1 \2 \3/p' | sort -u)
if [[ $found -ne 12 ]]; then
  echo "FAIL: found $found of the 12 functions a child or a short process runs in $lib" >&2
  status=1
elif [[ $((max - min)) -gt $max_span ]]; then
  echo "FAIL: the functions of a child and a short process span $((max - min)) bytes (at most $max_span)" >&2
  status=1
else
  echo "the functions of a child and a short process span $((max - min)) bytes (at most $max_span)"
fi
[[ $status -eq 0 ]] && echo "ok: $lib is laid out for forked children"
exit $status
