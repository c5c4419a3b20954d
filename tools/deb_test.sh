#!/usr/bin/env bash
# Builds the Debian package, installs it on THIS machine with apt-get, checks
# it, then removes and purges it and checks that nothing is left behind.
# For a scratch machine (CI, a container, a VM): it needs root (or sudo), it
# installs dpkg-dev and man-db if they are missing, and it refuses to run when
# a package named pipespin is already installed. It never writes
# /etc/ld.so.preload. CI runs it (.ci/run); about 2 minutes on 2 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
. tools/deps.sh
pipespin_install_deps

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
apt_get() { $sudo env DEBIAN_FRONTEND=noninteractive apt-get -y -qq "$@"; }
say() { echo "deb_test: $*"; }
fail() {
  echo "deb_test: FAIL: $*" >&2
  exit 1
}
expect_in() {  # expect_in FILE TEXT
  grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "'$2' not found in $1"; }
}

# dpkg-shlibdeps computes Depends:, man-db provides `man`.
for p in dpkg-dev man-db; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || apt_get install --no-install-recommends "$p" >/dev/null
done
if dpkg-query -W -f='${Status}' pipespin 2>/dev/null | grep -q "ok installed\|config-files"; then
  fail "a pipespin package is already installed here; purge it first (apt-get purge pipespin)"
fi

build=${PIPESPIN_DEB_BUILD_DIR:-build-deb}
work=$(mktemp -d /tmp/pipespin-deb-test.XXXXXX)
include_file=/etc/dpkg/dpkg.cfg.d/zz-pipespin-deb-test
cleanup() {
  if dpkg-query -W -f='${Status}' pipespin 2>/dev/null | grep -q "ok installed\|config-files"; then
    say "cleaning up: purging the package"
    apt_get purge pipespin >/dev/null 2>&1 || true
  fi
  $sudo rm -f "$include_file"
  rm -rf "$work"
}
trap cleanup EXIT

say "building the package in $build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DPIPESPIN_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
rm -f "$build"/pipespin_*.deb
(cd "$build" && cpack -G DEB >/dev/null)
debs=("$build"/pipespin_*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || fail "expected one pipespin_*.deb in $build"
deb=$(realpath "${debs[0]}")
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=/usr/lib/$multiarch
version=$(sed -n 's/^project(pipespin VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
say "built $(basename "$deb")"

# ---- the package's fields and contents --------------------------------------
dpkg-deb -I "$deb" >"$work/info"
cat "$work/info"
expect_in "$work/info" "Package: pipespin"
expect_in "$work/info" "Version: $version"
# Depends comes from dpkg-shlibdeps: the C library for the shim, the C++
# runtime for the CLI (the libraries carry theirs inside, hidden).
grep -E '^ Depends: .*libc6 \(>= [0-9.]+\)' "$work/info" >/dev/null || fail "Depends lacks a versioned libc6"
expect_in "$work/info" "libstdc++6"
dpkg-deb -e "$deb" "$work/control"
[ "$(cat "$work/control/conffiles")" = /etc/pipespin.conf ] || fail "conffiles is not exactly /etc/pipespin.conf"
[ -x "$work/control/prerm" ] || fail "no executable prerm"
[ "$(cat "$work/control/triggers")" = "activate-noawait ldconfig" ] || fail "no ldconfig trigger"
# Debian's checker, when it is installed: no error, and nothing about the
# changelog (Debian's format, packaging/deb_changelog.cmake). Its warnings:
# the libraries have no SONAME version (a preload is never linked
# against), and CPack's postinst and postrm call ldconfig.
if command -v lintian >/dev/null; then
  lintian "$deb" >"$work/lintian" 2>&1 || true
  cat "$work/lintian"
  ! grep -q '^E: ' "$work/lintian" || fail "lintian reports errors"
  ! grep -q 'changelog' "$work/lintian" || fail "lintian finds fault with the changelog"
fi

dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\.||' | grep -v '/$' | sort >"$work/files"
sort >"$work/want" <<EOF
/etc/pipespin.conf
/usr/bin/pipespin
/usr/include/pipespin/pipespin.h
$libdir/libpipespin-log.so
$libdir/libpipespin.so
/usr/share/bash-completion/completions/pipespin
/usr/share/cmake/pipespin/pipespin-config-version.cmake
/usr/share/cmake/pipespin/pipespin-config.cmake
/usr/share/cmake/pipespin/pipespin-targets.cmake
/usr/share/pkgconfig/pipespin.pc
/usr/share/doc/pipespin/changelog.gz
/usr/share/doc/pipespin/copyright
/usr/share/doc/pipespin/preload.conf.example
/usr/share/man/man1/pipespin.1.gz
/usr/share/man/man5/pipespin.conf.5.gz
EOF
diff -u "$work/want" "$work/files" || fail "the package's files differ from the expected list"

# ---- install -------------------------------------------------------------------
# Debian container images exclude manual pages from dpkg (path-exclude in
# /etc/dpkg/dpkg.cfg.d); then the package's pages would silently not be
# installed. Say so, and let ours through for this test only.
if grep -rhs '^path-exclude.*/usr/share/man' /etc/dpkg/dpkg.cfg.d/ >"$work/excludes"; then
  say "this machine's dpkg excludes manual pages ($(tr '\n' ' ' <"$work/excludes")):"
  say "  including pipespin's for this test only, via $include_file"
  printf 'path-include=/usr/share/man/man1/pipespin.1.gz\npath-include=/usr/share/man/man5/pipespin.conf.5.gz\n' |
    $sudo tee "$include_file" >/dev/null
  # mandb's index needs the man directories themselves.
  [ -d /usr/share/man/man1 ] || $sudo mkdir -p /usr/share/man/man1 /usr/share/man/man5
fi

# What exists under /usr and /etc before: after remove, only the changed
# conffile may be new; after purge, nothing.
snapshot() { find /usr /etc -xdev 2>/dev/null | grep -v "^$include_file\$" | sort; }
snapshot >"$work/before"

say "apt-get install $deb"
apt_get install "$deb" >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; fail "apt-get install failed"; }
dpkg-query -W -f='${Status}\n' pipespin | grep -q "install ok installed" || fail "not installed"

cd /  # nowhere near the build tree
unset LD_PRELOAD PIPESPIN_LIBRARY
for v in $(compgen -e | grep '^PIPESPIN_' || true); do unset "$v"; done

[ "$(command -v pipespin)" = /usr/bin/pipespin ] || fail "pipespin on PATH is $(command -v pipespin)"
# The user's commands only: the lab (pipespin-bench) is not in the package
# (the file list above), and pipespin knows none of its commands.
pipespin --help >"$work/help"
for c in bench matrix coverage worker bench-worker gen-docs; do
  ! grep -qw -- "$c" "$work/help" || fail "pipespin --help offers the lab's $c"
  ! pipespin "$c" --help >/dev/null 2>&1 || fail "the installed pipespin has the lab's $c"
done
say "pipespin --help lists only the user's commands"
[ "$(pipespin --version)" = "pipespin $version" ] || fail "pipespin --version says '$(pipespin --version)'"
say "pipespin --version: $(pipespin --version)"

MANWIDTH=80 man -P cat pipespin >"$work/man1" 2>&1 || { cat "$work/man1" >&2; fail "man pipespin failed"; }
expect_in "$work/man1" "PIPESPIN(1)"
expect_in "$work/man1" "pipespin run"
expect_in "$work/man1" "$libdir/libpipespin.so"
expect_in "$work/man1" "/etc/pipespin.conf"
MANWIDTH=80 man -P cat 5 pipespin.conf >"$work/man5" 2>&1 || { cat "$work/man5" >&2; fail "man 5 pipespin.conf failed"; }
expect_in "$work/man5" "spin_us = "
say "man pipespin and man 5 pipespin.conf show the pages"

# The config changes nothing: no active line.
if grep -vE '^[[:space:]]*(#|$)' /etc/pipespin.conf; then fail "/etc/pipespin.conf has active lines"; fi

# The installed CLI finds the installed library, and its sink beside it.
PIPESPIN_LOG=debug pipespin run -- cat /proc/self/maps >"$work/maps" 2>/dev/null
expect_in "$work/maps" "$libdir/libpipespin.so"
expect_in "$work/maps" "$libdir/libpipespin-log.so"
! grep -F "$here/" "$work/maps" || fail "a library was loaded from the source tree"

# The acceptance run, through the README's one-program snippet.
bash "$here/tests/install/snippet.sh" "$here/README.md" one-program >"$work/one.sh"
bash -euo pipefail "$work/one.sh" >"$work/one.out" 2>"$work/one.err" ||
  { cat "$work/one.err" >&2; fail "README one-program snippet failed"; }
expect_in "$work/one.out" "Total time"
# The snippet's second command ends with run --summary's table: the shim
# was there, in perf's processes.
expect_in "$work/one.err" "pipespin summary for perf bench sched pipe"
grep -qE '^  perf +[0-9]+ +[1-9]' "$work/one.err" || { cat "$work/one.err" >&2; fail "no perf row with calls in the summary"; }
! grep -q "cannot be preloaded" "$work/one.err" || fail "the loader refused the library"
PIPESPIN_LOG=info pipespin run -- sh -c 'grep libpipespin /proc/$$/maps; exec perf bench sched pipe -l 2000' \
  >"$work/perf.out" 2>"$work/perf.err" || { cat "$work/perf.err" >&2; fail "perf bench under pipespin run failed"; }
expect_in "$work/perf.out" "$libdir/libpipespin.so"
expect_in "$work/perf.err" "]: info: exit pid="
say "pipespin run -- perf bench sched pipe -l 2000 ran with $libdir/libpipespin.so:"
grep -E "usecs/op|exit pid" "$work/perf.out" "$work/perf.err" | sed 's/^/    /'

# The systemd drop-in's and the Dockerfile's environments, with the real paths.
env_assignments() {  # FILE PREFIX: the NAME=VALUE words of lines starting with PREFIX
  python3 - "$1" "$2" <<'EOF'
import shlex, sys
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith(sys.argv[2]):
        for word in shlex.split(line[len(sys.argv[2]):]):
            print(word)
EOF
}
for name in systemd-dropin:Environment= dockerfile:ENV\ ; do
  bash "$here/tests/install/snippet.sh" "$here/docs/deploy.md" "${name%%:*}" >"$work/snippet"
  env_assignments "$work/snippet" "${name#*:}" >"$work/env"
  expect_in "$work/env" "LD_PRELOAD=$libdir/libpipespin.so"
  mapfile -t assignments <"$work/env"
  env -i PATH=/usr/bin:/bin "${assignments[@]}" PIPESPIN_LOG=info \
    pipespin pingpong-worker pingpong --expect-shim 500 >/dev/null 2>"$work/env.err" ||
    { cat "$work/env.err" >&2; fail "a program with the ${name%%:*} snippet's environment did not load the shim"; }
  expect_in "$work/env.err" "]: info: exit pid="
  say "the ${name%%:*} snippet's environment loads $libdir/libpipespin.so"
done
if command -v systemd-analyze >/dev/null; then
  mkdir -p "$work/units/pipespin-deploy.service.d"
  printf '[Unit]\nDescription=pipespin docs/deploy.md test\n[Service]\nExecStart=/bin/true\n' \
    >"$work/units/pipespin-deploy.service"
  bash "$here/tests/install/snippet.sh" "$here/docs/deploy.md" systemd-dropin \
    >"$work/units/pipespin-deploy.service.d/pipespin.conf"
  SYSTEMD_UNIT_PATH="$work/units:" systemd-analyze verify "$work/units/pipespin-deploy.service" \
    >"$work/verify" 2>&1 && [ ! -s "$work/verify" ] || { cat "$work/verify" >&2; fail "systemd-analyze verify"; }
  say "systemd-analyze verify accepts the drop-in"
else
  say "note: no systemd-analyze here; the drop-in's environment was run, not verified by systemd"
fi

# The control API from the system paths: pkg-config and find_package find
# the installed header without being told where (docs/api.md, tests/api).
[ "$(pkg-config --modversion pipespin)" = "$version" ] || fail "pkg-config --modversion pipespin"
bash "$here/tests/install/snippet.sh" "$here/docs/api.md" api-example >"$work/api.c"
# shellcheck disable=SC2046
cc -std=c99 -Wall -Wextra -Werror $(pkg-config --cflags pipespin) "$work/api.c" -o "$work/api" \
  $(pkg-config --libs pipespin) -pthread || fail "the docs/api.md example does not build with pkg-config"
"$work/api" >"$work/api.out" || fail "the docs/api.md example failed without the shim"
expect_in "$work/api.out" "pipespin is not loaded"
pipespin run -- "$work/api" >"$work/api.out" || fail "the docs/api.md example failed under pipespin run"
expect_in "$work/api.out" "pipespin $version"
cmake -S "$here/tests/api/consumer" -B "$work/consumer" -DEXAMPLE_SOURCE="$here/tests/api/example.c" \
  >"$work/consumer.log" 2>&1 && cmake --build "$work/consumer" >>"$work/consumer.log" 2>&1 ||
  { cat "$work/consumer.log" >&2; fail "find_package(pipespin) and pipespin::api from /usr"; }
"$work/consumer/api_example_cxx" absent >/dev/null || fail "the API example failed without the shim"
pipespin run --mode fixed -- "$work/consumer/api_example_cxx" fixed >"$work/api.out" ||
  fail "the API example failed under the installed shim"
say "the control API builds from /usr with pkg-config and find_package, and runs with and without the shim"

# Bash completion from the installed file.
comp=/usr/share/bash-completion/completions/pipespin
offered=$(bash --norc --noprofile -c 'source "$1"; COMP_WORDS=(pipespin run --mode ""); COMP_CWORD=3; _pipespin; echo "${COMPREPLY[*]}"' sh "$comp")
[ "$offered" = "off fixed adaptive" ] || fail "completion of 'run --mode' offered '$offered'"

# ---- remove, then purge ----------------------------------------------------------
echo "# changed by deb_test.sh" | $sudo tee -a /etc/pipespin.conf >/dev/null
say "apt-get remove pipespin"
apt_get remove pipespin >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; fail "apt-get remove failed"; }
snapshot >"$work/after-remove"
comm -13 "$work/before" "$work/after-remove" >"$work/left"
[ "$(cat "$work/left")" = /etc/pipespin.conf ] || { cat "$work/left" >&2; fail "remove left more (or less) than the changed /etc/pipespin.conf"; }
expect_in /etc/pipespin.conf "# changed by deb_test.sh"
say "after remove, only the changed /etc/pipespin.conf is left"
say "apt-get purge pipespin"
apt_get purge pipespin >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; fail "apt-get purge failed"; }
snapshot >"$work/after-purge"
comm -13 "$work/before" "$work/after-purge" >"$work/left"
[ ! -s "$work/left" ] || { cat "$work/left" >&2; fail "purge left files behind"; }
comm -23 "$work/before" "$work/after-purge" >"$work/gone"
[ ! -s "$work/gone" ] || { cat "$work/gone" >&2; fail "install and purge removed files that were there before"; }
say "after purge, nothing is left; PASS"
