#!/usr/bin/env python3
"""Mode off makes exactly the system calls a program makes without the shim,
apart from the shim's own start-up: mode off, the A/B control arm, behaves
like no shim, syscall for syscall.

    syscalls_check.py CASE LIBPIPESPIN MARKER HELPER

Each case runs programs twice under `strace -ff` (every process traced, one
file each): without the shim, and with it in mode off (set by a config file
that also asks for a re-check every 1 ms, so that a process in off that
looked for a changed file would show it). Both runs preload MARKER, whose
constructor runs after the shim's and makes one failing faccessat: in each
program image the calls up to the marker are the start-up (the loader, the
libraries' constructors, the shim's), the calls after it the program's own.
Then, process by process and image by image:

  - after the marker the two traces must be equal, call by call (name and
    arguments; addresses, structure contents, pids and results are left
    out, as they differ from run to run anyway; so are brk calls, see
    HEAP_CALLS);
  - before it, the two may differ only in calls that loading libpipespin.so
    and running its constructor make (START_UP below): the shim's start-up,
    printed for each image.

Every program here makes the same calls on every run: a reader reads a
pipe that its writer filled and closed first (a reader racing its writer
makes as many reads as the schedule gives it, with or without the shim),
and no program takes a signal.

The fread cases also run in mode fixed and compare the read() calls alone
(there the shim may add its looks, but never a read): a 1 MiB fread of a
regular file or of a full pipe reads what glibc reads.

Cases:
  pipeline    seq 20000 | sort -n | uniq -c | wc -l, stage by stage
  fread_file  HELPER fread FILE: fread(1 MiB) of an 8 MiB file
  fread_pipe  HELPER fread-pipe: fread(1 MiB) of a full pipe
  python      python3 counting the lines of its stdin, a full pipe
  waits       HELPER waits: poll, ppoll, select, pselect, epoll_wait,
              epoll_pwait, epoll_pwait2 on a pipe (ready, and timing out),
              then fgets and getc
Exit 0: pass, 77: skipped (reason printed), 1: fail.
"""
import collections
import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import case_util  # noqa: E402
from case_util import fail, skip  # noqa: E402

case, lib, marker, helper = sys.argv[1], os.path.realpath(sys.argv[2]), \
    os.path.realpath(sys.argv[3]), os.path.realpath(sys.argv[4])
case_util.case = case

MARKER_PATH = "/nonexistent/pipespin-startup-done"
IO_CALLS = {"read", "write", "readv", "writev"}
# Where glibc malloc grows its heap depends on where the heap starts (ASLR)
# and on what the loader allocated before main (one more library with the
# shim): not compared.
HEAP_CALLS = {"brk"}
# Calls whose first argument is a pid (which differs from run to run).
PID_CALLS = {"wait4", "waitid", "kill", "tgkill", "tkill", "pidfd_open"}
# What loading libpipespin.so and its constructor may add to a start-up:
# the loader opens, examines and maps the library; the constructor reads
# its settings (the config file: stat, open, read; /proc/self/exe for
# [program] sections) and its pid. Not the CPUs it may use
# (sched_getaffinity): only a process that may spin needs them.
# The loader also sizes the static TLS block with the shim's in it, so one
# of its anonymous mmaps changes size: a start-up may differ in these calls
# both ways.
START_UP = {"openat", "read", "pread64", "fstat", "newfstatat", "statx", "mmap", "mprotect",
            "munmap", "close", "readlinkat", "getpid", "geteuid"}


tmp = tempfile.mkdtemp(prefix="pipespin-syscalls.")
conf = os.path.join(tmp, "off.conf")
with open(conf, "w") as f:
    f.write("mode = off\nreload_ms = 1\n")
os.chmod(conf, 0o644)

if shutil.which("strace") is None:
    skip("strace is not installed (tools/deps.sh installs it)")
probe = subprocess.run(["strace", "-f", "-qq", "-o", os.devnull, "true"], capture_output=True,
                       text=True)
if probe.returncode != 0:
    skip(f"strace cannot trace here (ptrace forbidden?): {probe.stderr.strip()}")

LINE = re.compile(r"^([a-z_0-9]+)\((.*)\)\s+= (.*)$")


def normalize_args(name, args):
    pid_first = name in PID_CALLS
    args = re.sub(r"/\* \d+ vars? \*/", "", args)  # execve: the environments differ
    args = re.sub(r"0x[0-9a-f]+", "X", args)
    args = re.sub(r"^(P_PID, )?\d+", r"\1PID", args) if pid_first else args
    # Structure and array contents: output values (stat, sysinfo) change
    # from run to run.
    prev = None
    while prev != args:
        prev = args
        args = re.sub(r"\{[^{}]*\}", "\x01", args)
        args = re.sub(r"\[[^\[\]]*\]", "\x02", args)
    return args.replace("\x01", "{}").replace("\x02", "[]")


def parse(path):
    """[(name, normalized args, successful exec)] of one trace file."""
    calls = []
    with open(path, errors="replace") as f:
        for raw in f:
            raw = raw.rstrip("\n")
            if raw.startswith(("---", "+++")):
                continue
            m = LINE.match(raw)
            if m is None:
                if raw.startswith("exit_group(") or raw.startswith("exit("):
                    calls.append((raw.split("(")[0], "", False))
                    continue
                fail(f"cannot parse the strace line {raw!r} in {path}")
            name, args, result = m.groups()
            calls.append((name, normalize_args(name, args), name == "execve" and result == "0"))
    return calls


def images(calls, where):
    """The process's program images: [(start-up calls, the program's calls)].
    A forked child's first image has no start-up of its own."""
    out = []
    cur = None
    for name, args, exec_ok in calls:
        if exec_ok:
            cur = {"startup": [], "main": [], "marked": False}
            out.append(cur)
            continue
        if cur is None:
            cur = {"startup": None, "main": [], "marked": True}
            out.append(cur)
        line = f"{name}({args})"
        if not cur["marked"]:
            if name == "faccessat" and MARKER_PATH in args:
                cur["marked"] = True
            else:
                cur["startup"].append(line)
            continue
        if name not in HEAP_CALLS:
            cur["main"].append((name, line))
    for i, img in enumerate(out):
        if not img["marked"]:
            fail(f"{where}: image {i} has no start-up marker (is the program static?)")
    return out


def trace(label, argv, preload, extra_env, stdin=None):
    d = os.path.join(tmp, label)
    os.mkdir(d)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIPESPIN_") and k != "LD_PRELOAD"}
    # python: no .pyc written by the first run, the same hash seed in both.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONHASHSEED"] = "0"
    # pymalloc lays out its arenas by the addresses mmap returns, which ASLR
    # changes from run to run: glibc malloc asks the kernel the same way.
    env["PYTHONMALLOC"] = "malloc"
    cmd = ["strace", "-ff", "-qq", "-s", "0", "-e", "signal=none", "-o", os.path.join(d, "t"),
           "-E", "LD_PRELOAD=" + preload]
    for k, v in extra_env.items():
        cmd += ["-E", f"{k}={v}"]
    p = subprocess.run(cmd + ["--"] + argv, env=env, stdin=stdin, capture_output=True,
                       timeout=300)
    if p.returncode != 0:
        fail(f"{label}: {argv} exited {p.returncode}: {p.stderr.decode(errors='replace')}")
    # One file per process (t.PID), in the order they were made; matched
    # between runs by the programs each ran (its execve calls) and, among
    # processes that ran the same ones, by that order.
    procs = collections.OrderedDict()
    seen = collections.Counter()
    files = sorted(os.listdir(d), key=lambda n: int(n.split(".")[1]))
    for name in files:
        calls = parse(os.path.join(d, name))
        execs = tuple(a for n, a, ok in calls if ok)
        key = (execs, seen[execs])
        seen[execs] += 1
        procs[key] = images(calls, f"{label} {name}")
    return p.stdout, procs


def show(key):
    _, execs, n = key
    what = " then ".join(e.split(",")[0] for e in execs) if execs else "a forked child"
    return f"{what} (#{n})"


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def compare_off(stages):
    """stages: the argv of each program; each reads the previous one's
    output from a full pipe (the first reads `stdin_data`, or nothing)."""
    plain, off = collections.OrderedDict(), collections.OrderedDict()
    outs = {}
    for label, preload, env, procs in (("noshim", marker, {}, plain),
                                       ("off", f"{marker}:{lib}", {"PIPESPIN_CONFIG": conf}, off)):
        data = None
        for i, (argv, first_input) in enumerate(stages):
            if i == 0:
                data = first_input
            stdin = feed(data)
            data, stage = trace(f"{label}.{i}", argv, preload, env, stdin=stdin)
            if stdin != subprocess.DEVNULL:
                os.close(stdin)
            for key, imgs in stage.items():
                procs[(i,) + key] = imgs
        outs[label] = data
    if outs["noshim"] != outs["off"]:
        fail(f"the output differs:\n  no shim: {outs['noshim']!r}\n  off:     {outs['off']!r}")
    if list(plain) != list(off):
        fail(f"different processes:\n  no shim: {[show(k) for k in plain]}\n"
             f"  off:     {[show(k) for k in off]}")
    problems = 0
    for key in plain:
        if len(plain[key]) != len(off[key]):
            fail(f"{show(key)}: {len(plain[key])} images without the shim, {len(off[key])} in off")
        for i, (a, b) in enumerate(zip(plain[key], off[key])):
            where = f"{show(key)}, image {i}"
            if a["startup"] is not None:
                extra = collections.Counter(b["startup"]) - collections.Counter(a["startup"])
                missing = collections.Counter(a["startup"]) - collections.Counter(b["startup"])
                names = sorted(set(l.split("(")[0] for l in extra))
                print(f"{where}: the shim's start-up: {sum(extra.values())} calls "
                      f"({', '.join(names)})")
                for line, n in sorted(extra.items()):
                    print(f"    {n} x {line}")
                for line, n in sorted(missing.items()):
                    print(f"    {n} x {line} (without the shim only)")
                bad = [l for l in list(extra) + list(missing) if l.split("(")[0] not in START_UP]
                if bad:
                    problems += 1
                    print(f"FAIL: {where}: calls no start-up of the shim makes: {bad}",
                          file=sys.stderr)
            ma = [l for _, l in a["main"]]
            mb = [l for _, l in b["main"]]
            print(f"{where}: {len(a['main'])} calls without the shim, {len(b['main'])} in off")
            if ma != mb:
                problems += 1
                j = first_difference(ma, mb)
                extra = collections.Counter(mb) - collections.Counter(ma)
                missing = collections.Counter(ma) - collections.Counter(mb)
                print(f"FAIL: {where}: the program's calls differ from call {j} on:\n"
                      f"  no shim: {ma[j:j + 6]}\n  off:     {mb[j:j + 6]}\n"
                      f"  only in off: {dict(extra)}\n  only without the shim: {dict(missing)}",
                      file=sys.stderr)
    if problems:
        fail(f"{problems} image(s) differ between mode off and no shim")


def reads_of(procs):
    return [l for imgs in procs.values() for img in imgs for n, l in img["main"] if n == "read"]


def compare_fixed_reads(argv):
    _, plain = trace("noshim-reads", argv, marker, {})
    _, fixed = trace("fixed-reads", argv, f"{marker}:{lib}",
                     {"PIPESPIN_CONFIG": "", "PIPESPIN_MODE": "fixed"})
    a, b = reads_of(plain), reads_of(fixed)
    print(f"read() calls: {len(a)} without the shim, {len(b)} in mode fixed")
    if len(a) != len(b):
        fail(f"mode fixed makes {len(b)} read() calls where glibc makes {len(a)}:\n"
             f"  no shim: {collections.Counter(a)}\n  fixed:   {collections.Counter(b)}")


def feed(data):
    """A pipe holding all of data, its writer closed: the reader's calls do
    not depend on the schedule."""
    if data is None:
        return subprocess.DEVNULL
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, max(len(data), 4096))
    except OSError as e:
        skip(f"a pipe cannot hold {len(data)} bytes here (F_SETPIPE_SZ: {e})")
    os.write(w, data)
    os.close(w)
    return r


if case == "pipeline":
    # Stage by stage, each reading the previous one's output from a full
    # pipe: the same programs and pipes as `seq 20000 | sort -n | uniq -c |
    # wc -l`, without a shell that takes SIGCHLD at times that change from
    # run to run.
    compare_off([(["seq", "20000"], None), (["sort", "-n"], None), (["uniq", "-c"], None),
                 (["wc", "-l"], None)])
elif case == "fread_file":
    big = os.path.join(tmp, "big")
    with open(big, "wb") as f:
        f.write(bytes(range(256)) * (8 << 12) + b"tail")
    compare_off([([helper, "fread", big], None)])
    compare_fixed_reads([helper, "fread", big])
elif case == "fread_pipe":
    compare_off([([helper, "fread-pipe"], None)])
    compare_fixed_reads([helper, "fread-pipe"])
elif case == "python":
    data = "".join(f"{i}\n" for i in range(20000)).encode()
    compare_off([(["python3", "-c", "import sys; print(sum(1 for _ in sys.stdin))"], data)])
elif case == "waits":
    compare_off([([helper, "waits"], None)])
else:
    fail(f"unknown case {case}")
shutil.rmtree(tmp, ignore_errors=True)
print(f"{case}: ok")
