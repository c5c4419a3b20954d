#!/usr/bin/env bash
# Install tests: `cmake --install` of this build into a scratch prefix, then
# the installed CLI and library used from there, never from the build tree.
#   install_test.sh CASE BUILD_DIR SOURCE_DIR MULTIARCH
# Exit 0: pass, 77: skipped (reason on stdout), anything else: fail.
set -uo pipefail

case_name=$1
build=$(realpath "$2")
src=$(realpath "$3")
multiarch=$4
# The README's quick start, and the deployment snippets of docs/deploy.md.
readme=$src/README.md
deploy=$src/docs/deploy.md
snippet() {  # snippet NAME [FILE]: FILE defaults to the README
  local file=${2:-$readme}
  bash "$src/tests/install/snippet.sh" "$file" "$1" || fail "${file#"$src/"} has no snippet '$1'"
}

. "$src/tests/case_lib.sh"
case_setup "${TMPDIR:-/tmp}/pipespin-install"

# Installs into $work/<name> (or as DESTDIR with a given prefix); prints the prefix.
install_to() {
  local prefix=$1
  cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log" >&2; fail "cmake --install failed"; }
}

# The library directory of an installed prefix: lib, or lib/<multiarch>.
libdir_of() {
  local d
  for d in "$1/lib" "$1/lib/$multiarch"; do
    [ -f "$d/libpipespin.so" ] && { echo "$d"; return; }
  done
  fail "no libpipespin.so under $1/lib"
}

# Runs an installed pipespin with the shim's sink loaded at start-up
# (PIPESPIN_LOG=debug), and checks from the child's own /proc/self/maps that
# both libraries came from $2 and nothing from the build tree.
check_maps_from() {  # check_maps_from PIPESPIN LIBDIR
  PIPESPIN_LOG=debug "$1" run -- cat /proc/self/maps >"$work/maps" 2>"$work/maps.err" ||
    { cat "$work/maps.err" >&2; fail "$1 run -- cat failed"; }
  expect_in "$work/maps" "$2/libpipespin.so"
  expect_in "$work/maps" "$2/libpipespin-log.so"
  expect_not_in "$work/maps" "$build/"
  expect_in "$work/maps.err" "]: debug: pid"
}

case_layout() {
  local p=$work/prefix
  install_to "$p"
  local lib
  lib=$(libdir_of "$p")
  for f in "$p/bin/pipespin" "$lib/libpipespin.so" "$lib/libpipespin-log.so" \
    "$p/share/man/man1/pipespin.1.gz" "$p/share/man/man5/pipespin.conf.5.gz" \
    "$p/share/doc/pipespin/preload.conf.example" "$p/share/doc/pipespin/copyright" \
    "$p/share/doc/pipespin/changelog.gz" \
    "$p/share/bash-completion/completions/pipespin" \
    "$p/include/pipespin/pipespin.h" "$p/share/pkgconfig/pipespin.pc" \
    "$p/share/cmake/pipespin/pipespin-config.cmake" \
    "$p/share/cmake/pipespin/pipespin-config-version.cmake" \
    "$p/share/cmake/pipespin/pipespin-targets.cmake"; do
    [ -f "$f" ] || fail "not installed: $f"
  done
  # The .pc names the prefix installed to (tests/api builds against it).
  expect_in "$p/share/pkgconfig/pipespin.pc" "prefix=$p"
  [ -x "$p/bin/pipespin" ] || fail "bin/pipespin is not executable"
  [ "$(stat -c %a "$lib/libpipespin.so")" = 644 ] || fail "libpipespin.so is not mode 644"
  # Not a system prefix: the admin's /etc is not touched, nor P/etc created.
  [ ! -e "$p/etc" ] || fail "installed $p/etc for a non-system prefix"
  expect_in "$work/install.log" "Not installing /etc/pipespin.conf"
  check_no_lab "$p"

  # The manual pages render without a warning and say what --help says:
  # every command synopsis and every variable, in the same words.
  command -v man >/dev/null || skip "man (man-db) is not installed; tools/deps.sh installs it"
  for page in man1/pipespin.1.gz man5/pipespin.conf.5.gz; do
    LC_ALL=C.UTF-8 MANWIDTH=200 man --warnings -E UTF-8 -l "$p/share/man/$page" \
      >"$work/page" 2>"$work/page.err" || fail "man -l $page failed"
    [ ! -s "$work/page.err" ] || { cat "$work/page.err" >&2; fail "man --warnings on $page"; }
      [ "$page" = man1/pipespin.1.gz ] && cp "$work/page" "$work/man1"
  done
  # Every command of --help is in pipespin(1), with its usage as its
  # --help has it (one line here, wrapped there) and each of its options.
  "$p/bin/pipespin" --help >"$work/help" || fail "--help failed"
  local n=0 c
  for c in $(sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p' "$work/help"); do
    "$p/bin/pipespin" "$c" --help >"$work/chelp" || fail "$c --help failed"
    # Usage forms: a line that starts (after "Usage:") with "pipespin", and
    # its continuation lines, joined.
    awk '/^$/ { exit }
         { sub(/^Usage:/, ""); if ($1 == "pipespin") { if (f != "") print f; f = "" }
           for (i = 1; i <= NF; i++) f = f (f == "" ? "" : " ") $i }
         END { if (f != "") print f }' "$work/chelp" >"$work/forms"
    [ -s "$work/forms" ] || fail "$c --help has no usage"
    while IFS= read -r form; do expect_in "$work/man1" "$form"; done <"$work/forms"
    for flag in $(grep -oE '^  (-[a-z], )?--[a-z-]+' "$work/chelp" | grep -oE -- '--[a-z-]+'); do
      expect_in "$work/man1" "$flag"
    done
    n=$((n + 1))
  done
  [ "$n" -ge 5 ] || fail "found only $n commands in --help"
  # Each of the shim's options, as `run --help` gives it, is a variable in
  # pipespin(1) and a key in pipespin.conf(5), in the same words.
  "$p/bin/pipespin" run --help >"$work/run"
  n=0
  while IFS= read -r line; do
    local flag=${line%% *} rest=${line#* }
    local key=${flag#--}
    key=${key//-/_}
    expect_in "$work/man1" "PIPESPIN_$(echo "$key" | tr a-z A-Z)=$rest"
    expect_in "$work/page" "$key = $rest"
    n=$((n + 1))
  done < <(grep -E '^  --[a-z-]+ .* \(default: .*\)$' "$work/run" | sed 's/^  //')
  [ "$n" -ge 10 ] || fail "found only $n options in run --help"
  expect_in "$work/man1" "PIPESPIN_LIBRARY="
  expect_in "$work/man1" "PIPESPIN_CONFIG=PATH (default: /etc/pipespin.conf)"
  expect_in "$work/man1" "EXAMPLES"
  expect_in "$work/man1" "pipespin run --mode fixed --spin-us 100 -- make -j8"
  # The hidden helper stays hidden, and the lab is not installed.
  for w in pingpong-worker bench-worker gen-docs pipespin-bench pipespin-gendoc; do
    expect_not_in "$work/man1" "$w"
  done
}

# An installed prefix holds the user's command only: no lab binary, no
# lab library, and `pipespin` knows no lab command.
check_no_lab() {
  local f c
  for f in bin/pipespin-bench bin/pipespin-gendoc bin/pipespin-overhead; do
    [ ! -e "$1/$f" ] || fail "the lab is installed: $f"
  done
  [ -z "$(find "$1" -name 'libpipespin-empty.so*')" ] || fail "the empty preload is installed"
  "$1/bin/pipespin" --help >"$work/help"
  for c in bench matrix coverage worker bench-worker gen-docs; do
    expect_not_in "$work/help" "$c"
    "$1/bin/pipespin" "$c" --help >/dev/null 2>"$work/err" && fail "pipespin $c exists"
    expect_in "$work/err" "unknown command '$c'"
  done
}

case_installed_run() {
  local p=$work/prefix
  install_to "$p"
  local lib
  lib=$(libdir_of "$p")
  # Not from the build tree: elsewhere, with a PATH that has only the prefix.
  cd "$work"
  PATH="$p/bin:/usr/bin:/bin" pipespin --version >"$work/version" || fail "pipespin --version"
  expect_in "$work/version" "pipespin "
  PATH="$p/bin:/usr/bin:/bin" pipespin --help >"$work/help"
  expect_in "$work/help" "$lib/libpipespin.so"
  check_maps_from "$p/bin/pipespin" "$lib"

  # The acceptance run: perf bench under the installed CLI. The shell that
  # starts perf shows where its libraries came from; perf inherits the same
  # LD_PRELOAD; every shimmed process reports at exit (PIPESPIN_LOG=info).
  local bench=(perf bench sched pipe -l 2000)
  if ! perf bench sched pipe -l 10 >/dev/null 2>&1; then
    echo "note: perf bench is not usable here; using the equivalent pingpong-worker ping-pong"
    bench=("$p/bin/pipespin" pingpong-worker pingpong --expect-shim 2000)
  fi
  PATH="$p/bin:/usr/bin:/bin" PIPESPIN_LOG=info pipespin run -- \
    sh -c 'grep libpipespin /proc/$$/maps; echo "LD_PRELOAD=$LD_PRELOAD"; exec "$@"' sh "${bench[@]}" \
    >"$work/bench" 2>"$work/bench.err" || { cat "$work/bench.err" >&2; fail "${bench[*]} failed"; }
  cat "$work/bench" "$work/bench.err"
  expect_in "$work/bench" "$lib/libpipespin.so"
  expect_in "$work/bench" "LD_PRELOAD=$lib/libpipespin.so"
  expect_not_in "$work/bench" "$build/"
  expect_in "$work/bench.err" "]: info: exit pid="
  expect_not_in "$work/bench.err" "cannot be preloaded"
}

case_relocated() {
  # Found beside the executable, not at a path compiled in: move the tree,
  # and call it through a symlink on PATH.
  install_to "$work/first"
  mv "$work/first" "$work/moved"
  local lib
  lib=$(libdir_of "$work/moved")
  check_maps_from "$work/moved/bin/pipespin" "$lib"
  mkdir "$work/path"
  ln -s "$work/moved/bin/pipespin" "$work/path/pipespin"
  PATH="$work/path:/usr/bin:/bin" PIPESPIN_LOG=debug pipespin run -- cat /proc/self/maps >"$work/maps2" 2>/dev/null
  expect_in "$work/maps2" "$lib/libpipespin.so"
  # A tree without its library says where it looked, and exits 125.
  rm "$lib/libpipespin.so"
  "$work/moved/bin/pipespin" run -- true >/dev/null 2>"$work/err"
  local rc=$?
  [ "$rc" -eq 125 ] || fail "run without the library exited $rc, expected 125"
  expect_in "$work/err" "$lib/libpipespin.so"
}

case_system_prefix() {
  # The /usr install goes into DESTDIR, never into this machine's /etc.
  DESTDIR="$work/root" cmake --install "$build" --prefix /usr >"$work/install.log" 2>&1 ||
    { cat "$work/install.log" >&2; fail "DESTDIR install failed"; }
  local conf=$work/root/etc/pipespin.conf
  [ -f "$conf" ] || fail "no /etc/pipespin.conf in a /usr install"
  [ "$(stat -c %a "$conf")" = 644 ] || fail "/etc/pipespin.conf is not mode 644"
  # It changes nothing: no line that is not blank or a comment...
  if grep -nvE '^[[:space:]]*(#|$)' "$conf"; then fail "active lines in pipespin.conf"; fi
  # ...yet it is the whole example: each setting there is here, commented.
  local n=0
  while IFS= read -r line; do
    expect_in "$conf" "#$line"
    n=$((n + 1))
  done < <(grep -vE '^[[:space:]]*(#|$)' "$src/preload.conf.example")
  [ "$n" -ge 4 ] || fail "only $n settings in preload.conf.example?"
  [ -f "$work/root/usr/share/doc/pipespin/preload.conf.example" ] || fail "no docdir example"
}

case_completion() {
  local p=$work/prefix
  install_to "$p"
  local comp=$p/share/bash-completion/completions/pipespin
  # complete WORDS...: the completions bash offers for the last word.
  cat >"$work/complete.sh" <<'EOF'
source "$1"
shift
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMPREPLY=()
_pipespin
printf '%s\n' "${COMPREPLY[@]}"
EOF
  complete_words() { PATH="$p/bin:/usr/bin:/bin" bash --norc --noprofile "$work/complete.sh" "$comp" "$@"; }
  check() {  # check "WORDS" EXPECTED...: each EXPECTED is offered
    local words=$1
    shift
    # shellcheck disable=SC2086
    complete_words $words "" >"$work/c" 2>"$work/c.err" || { cat "$work/c.err" >&2; fail "completion failed for '$words'"; }
    [ ! -s "$work/c.err" ] || { cat "$work/c.err" >&2; fail "completion wrote to stderr for '$words'"; }
    for e in "$@"; do grep -qx -- "$e" "$work/c" || { cat "$work/c" >&2; fail "'$words <TAB>' does not offer $e"; }; done
  }
  # Every visible command of --help is offered at the top, and no hidden one.
  check "pipespin" run pingpong help
  while IFS= read -r cmd; do check "pipespin" "$cmd"; done < <(
    "$p/bin/pipespin" --help | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p')
  complete_words pipespin "" >"$work/c"
  for w in pingpong-worker bench-worker gen-docs bench matrix coverage; do
    expect_not_in "$work/c" "$w"
  done
  check "pipespin run --mode" off fixed adaptive
  check "pipespin run --log" info debug
  complete_words pipespin run --sp >"$work/c"
  grep -qx -- "--spin-us" "$work/c" || fail "'run --sp' does not offer --spin-us"
  complete_words pipespin pingpong --it >"$work/c"
  grep -qx -- "--iterations" "$work/c" || fail "'pingpong --it' does not offer --iterations"
  # After the flags, the command to run is completed from PATH.
  complete_words pipespin run --mode fixed -- pipesp >"$work/c"
  grep -qx pipespin "$work/c" || { cat "$work/c" >&2; fail "'run -- pipesp' does not offer pipespin"; }
  complete_words pipespin run --mode fixed pipesp >"$work/c"
  grep -qx pipespin "$work/c" || fail "'run --mode fixed pipesp' does not offer pipespin"
}

case_readme_one_program() {
  local p=$work/prefix
  install_to "$p"
  snippet one-program >"$work/snippet.sh"
  grep -q 'pipespin run -- perf bench sched pipe' "$work/snippet.sh" || fail "snippet lost its perf run"
  perf bench sched pipe -l 10 >/dev/null 2>&1 || skip "perf bench is not usable here (linux-perf)"
  cd "$work"
  PATH="$p/bin:/usr/bin:/bin" bash -euo pipefail "$work/snippet.sh" >"$work/out" 2>"$work/err" ||
    { cat "$work/err" >&2; fail "the one-program snippet failed"; }
  expect_in "$work/out" "Total time"
  # The second run's summary: one table, perf's row in it.
  expect_in "$work/err" " pipespin summary for perf bench sched pipe -l 2000 (exited with status 0, "
  grep -qE '^  perf +2 +[0-9]+ ' "$work/err" || { cat "$work/err" >&2; fail "no row for perf"; }
}

# The Environment= assignments of a systemd drop-in, one NAME=VALUE a line
# (systemd's quoting, as far as shlex follows it: the snippet is plain).
environment_of() {
  python3 - "$1" <<'EOF'
import shlex, sys
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("Environment="):
        for word in shlex.split(line[len("Environment="):]):
            print(word)
EOF
}

case_deploy_systemd() {
  local p=$work/prefix
  install_to "$p"
  snippet systemd-dropin "$deploy" >"$work/dropin.conf"
  # The path in the snippet is where the .deb puts the library.
  environment_of "$work/dropin.conf" >"$work/env"
  expect_in "$work/env" "LD_PRELOAD=/usr/lib/$multiarch/libpipespin.so"
  # Running with that environment (the library path pointed at this
  # prefix's) loads the shim and sets its options.
  local lib
  lib=$(libdir_of "$p")
  sed -i "s|^LD_PRELOAD=.*|LD_PRELOAD=$lib/libpipespin.so|" "$work/env"
  mapfile -t assignments <"$work/env"
  env -i PATH=/usr/bin:/bin "${assignments[@]}" sh -c 'grep libpipespin /proc/$$/maps; env' \
    >"$work/out" 2>"$work/err" || fail "running with the drop-in's environment failed"
  expect_in "$work/out" "$lib/libpipespin.so"
  expect_in "$work/out" "PIPESPIN_MODE=adaptive"
  # A program that ends through exit() (dash ends with _exit) reports.
  env -i PATH=/usr/bin:/bin "${assignments[@]}" "$p/bin/pipespin" pingpong-worker pingpong \
    --expect-shim 200 >"$work/out" 2>"$work/err" || { cat "$work/err" >&2; fail "pingpong-worker under the drop-in's environment"; }
  expect_in "$work/err" "]: info: exit pid="
  # systemd itself accepts the drop-in (a unit of our own; nothing is started).
  command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed: the drop-in was parsed and run, not verified by systemd"
  mkdir -p "$work/units/pipespin-deploy.service.d"
  printf '[Unit]\nDescription=pipespin docs/deploy.md test\n[Service]\nExecStart=/bin/true\n' \
    >"$work/units/pipespin-deploy.service"
  cp "$work/dropin.conf" "$work/units/pipespin-deploy.service.d/pipespin.conf"
  SYSTEMD_UNIT_PATH="$work/units:" systemd-analyze verify "$work/units/pipespin-deploy.service" \
    >"$work/verify" 2>&1 || { cat "$work/verify" >&2; fail "systemd-analyze verify failed"; }
  [ ! -s "$work/verify" ] || { cat "$work/verify" >&2; fail "systemd-analyze verify complained"; }
}

# A minimal root for chroot: a shell, the tools the snippets use, their
# libraries, and this build's installed libraries at the package's path.
make_chroot() {
  local root=$1
  [ "$(id -u)" -eq 0 ] || skip "needs root for chroot (the host's /etc/ld.so.preload is never touched)"
  command -v chroot >/dev/null || skip "no chroot"
  mkdir -p "$root/etc" "$root/tmp" "$root/usr/lib/$multiarch"
  local tool dep
  local p=$work/prefix
  install_to "$p"
  for tool in sh cat sed grep "$p/bin/pipespin"; do
    tool=$(command -v "$tool" | head -1)
    mkdir -p "$root$(dirname "$tool")"
    cp -L "$tool" "$root$tool"
    for dep in $(ldd "$tool" | grep -oE '/[^ ]+'); do
      mkdir -p "$root$(dirname "$dep")"
      cp -Ln "$dep" "$root$dep"
    done
  done
  # /bin may be a symlink to usr/bin on the host (merged /usr): mirror it.
  for d in bin lib lib64; do
    if [ -L "/$d" ] && [ ! -e "$root/$d" ]; then ln -s "$(readlink "/$d")" "$root/$d"; fi
  done
  local lib
  lib=$(libdir_of "$p")
  cp "$lib/libpipespin.so" "$lib/libpipespin-log.so" "$root/usr/lib/$multiarch/"
  for f in "$lib/libpipespin.so" "$lib/libpipespin-log.so"; do
    for dep in $(ldd "$f" | grep -oE '/[^ ]+'); do
      mkdir -p "$root$(dirname "$dep")"
      cp -Ln "$dep" "$root$dep"
    done
  done
  chroot "$root" /bin/sh -c 'true' >/dev/null 2>&1 || skip "chroot does not work here"
}

# Whether a program in the chroot, with no LD_PRELOAD in its environment,
# loads the shim: pipespin's worker fails unless the shim is (or is not) there,
# and a shimmed one also reports at exit.
shimmed_in_chroot() {
  local expect=--expect-no-shim
  [ "$2" = yes ] && expect=--expect-shim
  env -i PATH=/usr/bin:/bin PIPESPIN_LOG=info "$(command -v chroot)" "$1" \
    "$work/prefix/bin/pipespin" pingpong-worker pingpong "$expect" 100 >/dev/null 2>"$work/chroot.err" ||
    { cat "$work/chroot.err" >&2; return 1; }
  if [ "$2" = yes ]; then grep -q "]: info: exit pid=" "$work/chroot.err"; fi
}

case_deploy_host() {
  local root=$work/root
  make_chroot "$root"
  snippet host-enable "$deploy" >"$work/enable.sh"
  snippet host-disable "$deploy" >"$work/disable.sh"
  grep -q "/usr/lib/$multiarch/libpipespin.so" "$work/enable.sh" || fail "host-enable names another path"
  shimmed_in_chroot "$root" no || fail "shimmed before the snippet ran"
  chroot "$root" /bin/sh -e <"$work/enable.sh" || fail "host-enable snippet failed in the chroot"
  shimmed_in_chroot "$root" yes || fail "not shimmed after host-enable"
  chroot "$root" /bin/sh -e <"$work/disable.sh" || fail "host-disable snippet failed in the chroot"
  shimmed_in_chroot "$root" no || fail "still shimmed after host-disable"
  [ -f "$root/etc/ld.so.preload" ] || fail "host-disable removed the whole file"
}

case_deb_prerm() {
  # The package's prerm takes its own line out of /etc/ld.so.preload and
  # leaves the rest; run in the chroot, at the path this build's prerm names.
  local root=$work/root
  make_chroot "$root"
  local prerm=$build/deb/prerm
  [ -f "$prerm" ] || fail "no $prerm"
  local libpath
  libpath=$(sed -n 's/^lib=//p' "$prerm")
  mkdir -p "$root$(dirname "$libpath")"
  cp "$root/usr/lib/$multiarch/libpipespin.so" "$root$libpath" 2>/dev/null || true
  printf '/usr/lib/other.so\n%s\n' "$libpath" >"$root/etc/ld.so.preload"
  cp "$prerm" "$root/prerm"
  chroot "$root" /bin/sh /prerm upgrade 2>/dev/null || fail "prerm upgrade failed"
  grep -qx "$libpath" "$root/etc/ld.so.preload" || fail "prerm upgrade removed the line"
  chroot "$root" /bin/sh /prerm remove 2>"$work/err" || fail "prerm remove failed"
  expect_in "$work/err" "removed $libpath"
  [ "$(cat "$root/etc/ld.so.preload")" = /usr/lib/other.so ] ||
    { cat "$root/etc/ld.so.preload" >&2; fail "prerm remove did not leave exactly the other line"; }
}

"case_$case_name"
