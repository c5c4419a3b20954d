#!/usr/bin/env python3
"""End-to-end checks of the shim's statistics lines (PIPESPIN_STATS).

    stats_check.py CASE LIBPIPESPIN E2E_STATS

Every line is parsed with the json module. Cases:
  waits        counters against a helper that knows its waits (exact: the
               helper makes every wait a sleep after a missed spin), forked
               child (exit), exec
  waits_exit   the same with a child that ends with _exit(), and no exec
  concurrent   100 processes ending at once append 100 intact lines
  destinations stderr, %p, 0600, a symlink is not followed; only a regular
               file takes the lines: a FIFO (read or not), a directory, a
               socket, /dev/null are refused with a warning, never a hang
  lost_warning a destination that cannot be written is reported where the
               user sees it: before a program closes its stderr (seq does,
               at exit), once per program, in log_file when one is set
  interval     PIPESPIN_STATS_INTERVAL lines, in the treatment and the
               control arm, cumulative and in order
  arms         PIPESPIN_AB / PIPESPIN_AB_SEED draw the documented hash
  switchback   PIPESPIN_AB_PERIOD: one process alternates arms, a line at each
               switch marked with the arm it covered
  control_syscalls  the control arm with lines on makes no clock syscall, and
               reads getrusage once per line
Every line any case reads is validated against docs/stats.schema.json.
Exit 0: pass, 77: skipped (reason printed), 1: fail.
"""
import atexit
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import case_util  # noqa: E402
import validate_stats  # noqa: E402
from case_util import check, clean_env, fail  # noqa: E402

case, lib, helper = sys.argv[1], os.path.realpath(sys.argv[2]), sys.argv[3]
case_util.case = case
PIPE_BUF = 4096


def env(**kw):
    return clean_env(**{"LD_PRELOAD": lib, **kw})


def lines_of(path):
    with open(path, "rb") as f:
        data = f.read()
    check(data.endswith(b"\n") or not data, f"{path} does not end with a newline")
    out = []
    for raw in data.split(b"\n")[:-1]:
        check(len(raw) + 1 < PIPE_BUF, f"a line of {len(raw) + 1} bytes is not below PIPE_BUF")
        try:
            out.append(json.loads(raw))
        except json.JSONDecodeError as e:
            fail(f"not JSON ({e}): {raw[:200]!r}")
        try:
            validate_stats.validate(out[-1])
        except ValueError as e:
            fail(f"a line does not match docs/stats.schema.json: {e}: {raw[:300]!r}")
    return out


def run(args, **kw):
    p = subprocess.run(args, env=env(**kw), stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=120)
    sys.stderr.write(p.stderr)
    check(p.returncode == 0, f"{args} exited {p.returncode}")
    return p


def counters(line, kind="pipe", direction="read"):
    return line[kind][direction]


def waits_of(line, end, kind="pipe", direction="read"):
    """How many waits of that end the line's histogram holds."""
    return sum(line[kind][direction]["wait_log2"][end])


def numbers(d):
    return [v for v in d.values() if isinstance(v, int)]


def splitmix64(x):
    m = (1 << 64) - 1
    x = (x + 0x9E3779B97F4A7C15) & m
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & m
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & m
    return x ^ (x >> 31)


def arm_of(ab, seed, pid):
    return "treatment" if splitmix64((seed << 32) ^ pid) % 100 < ab else "control"


tmp = tempfile.mkdtemp(prefix="pipespin-stats.")
atexit.register(shutil.rmtree, tmp, True)
stats = os.path.join(tmp, "stats.jsonl")


def case_waits(how, exec_path):
    if len(os.sched_getaffinity(0)) < 2:
        print("SKIP: one usable CPU: the shim never spins, so no waits are counted")
        sys.exit(77)
    n, p, k = 25, 10, 7
    out = run([helper, "waits", str(n), str(p), str(k), how, exec_path], PIPESPIN_MODE="fixed",
              PIPESPIN_SPIN_US=20, PIPESPIN_STATS=stats, PIPESPIN_AB=100).stdout
    pid, child = (int(w) for w in out.split()[1::2])
    lines = lines_of(stats)
    for l in lines:
        print(json.dumps({k: l[k] for k in ("pid", "ppid", "program", "event", "arm", "seq")}))
    mine = [l for l in lines if l["pid"] == pid and l["program"] == "e2e_stats"]
    event = "exit" if exec_path == "-" else "exec"
    check(len(mine) == 1 and mine[0]["event"] == event, f"want one {event} line of pid {pid}")
    me = mine[0]
    check(me["arm"] == "treatment" and me["config"]["ab"] == 100, "arm or config.ab wrong")
    check(me["config"]["mode"] == "fixed" and me["config"]["spin_us"] == 20, "config wrong")
    r, w, pl = counters(me), counters(me, direction="write"), counters(me, direction="poll")
    # Exact: every handshake is one wait, one spin, one miss (the writer
    # waits until the reader sleeps, so no spin can hit).
    want = {"waits": n, "spins": n, "spin_hits": 0, "spin_misses": n}
    check({x: r[x] for x in want} == want, f"read counters {r}, want {want}")
    check(r["sleep_ns"] > 0 and r["spin_ns"] > 0, f"no time asleep or spinning: {r}")
    # The poll handshakes' reads find their byte at once: calls, no waits.
    check(r["calls"] == n + p and r["bytes"] == n + p, f"read calls/bytes {r}, want {n + p}")
    wantp = {"waits": p, "spins": p, "spin_hits": 0, "spin_misses": p}
    check({x: pl[x] for x in wantp} == wantp, f"poll counters {pl}, want {wantp}")
    check(w["waits"] == 0 and w["calls"] == n + p and w["bytes"] == n + p, f"write counters {w}")
    check(me["sleeps_avoided"] == 0, "no spin hit, so no sleep avoided")
    check(all(v == 0 for d in me["fifo"].values() for v in numbers(d)), "anonymous pipes are not FIFOs")
    # v2: each of those waits is a miss in the histogram, lasting its spin and
    # its sleep; the poll waits likewise; the process's usage is there.
    check(me["v"] == 2, "not a version 2 line")
    check(waits_of(me, "miss") == n and waits_of(me, "hit") == 0, f"read histogram {r}")
    check(r["wait_ns"]["miss"] >= r["spin_ns"] + r["sleep_ns"] - n * 1000,
          f"the misses last less than their spins and sleeps: {r}")
    check(waits_of(me, "miss", direction="poll") == p, f"poll histogram {pl}")
    check(all(sum(me["fifo"][d]["wait_log2"][e]) == 0 for d in me["fifo"] for e in ("hit", "miss", "plain")),
          "FIFO waits in a process without FIFOs")
    check(me["rusage"]["nvcsw"] >= n, f"{n} sleeps but {me['rusage']['nvcsw']} voluntary switches")
    check(me["rusage"]["maxrss_kb"] > 0, "no max RSS")

    kids = [l for l in lines if l["pid"] == child]
    check(len(kids) == 1, f"want one line of the child {child} ({how}), got {len(kids)}")
    kid = kids[0]
    check(kid["ppid"] == pid and kid["event"] == "exit" and kid["arm"] == "treatment", f"child {kid}")
    kr = counters(kid)
    check(kr["waits"] == k and kr["calls"] == k and kr["spin_misses"] == k,
          f"the child's own {k} waits, not its parent's: {kr}")
    check(waits_of(kid, "miss") == k, f"the child's histogram holds its parent's waits: {kr}")
    check(counters(kid, direction="poll")["waits"] == 0, "the child inherited poll counters")

    if exec_path == "-":
        check(len(lines) == 2, f"want 2 lines (a vfork child writes none), got {len(lines)}")
        return
    after = [l for l in lines if l["pid"] == pid and l is not me]
    check(len(after) == 1 and after[0]["program"] == "true" and after[0]["event"] == "exit",
          f"want the exec'd program's own exit line under pid {pid}: {after}")
    check(after[0]["start_us"] > me["start_us"], "the exec'd image has its own start")
    check(len(lines) == 3, f"want 3 lines (a vfork child writes none), got {len(lines)}")


def case_concurrent():
    # 100 processes released at once (their common stdin closes), then the
    # same with 10 forked children each ending with _exit: 100 and 1100
    # lines, every one intact. A line written in two parts would tear here.
    for forks in (0, 10):
        n = 100
        r, w = os.pipe()
        # A long destination makes long lines: interleaving would show.
        long_dir = os.path.join(tmp, f"{forks}" + "d" * 150)
        os.mkdir(long_dir)
        dest = os.path.join(long_dir, "all.jsonl")
        procs = [subprocess.Popen([helper, "gate", str(forks)], stdin=r,
                                  env=env(PIPESPIN_STATS=dest, PIPESPIN_LOG_FILE=dest + ".log",
                                          PIPESPIN_AB=50))
                 for _ in range(n)]
        os.close(r)
        os.close(w)  # EOF for all of them at once
        for p in procs:
            check(p.wait(timeout=60) == 0, "a gate process failed")
        lines = lines_of(dest)
        check(len(lines) == n * (1 + forks), f"want {n * (1 + forks)} lines, got {len(lines)}")
        pids = {l["pid"] for l in lines}
        check(len(pids) == len(lines), "not one line per process")
        check({p.pid for p in procs} <= pids, "a process wrote no line")
        check(all(l["event"] == "exit" and l["program"] == "e2e_stats" for l in lines),
              "wrong events")
        print(f"{len(lines)} intact lines from {n} processes with {forks} children each")
    mode = os.stat(dest).st_mode & 0o777
    check(mode == 0o600, f"stats file mode {oct(mode)}, want 0600")


def case_destinations():
    p = run([helper, "gate"], PIPESPIN_STATS="stderr")
    js = [l for l in p.stderr.splitlines() if l.startswith("{")]
    check(len(js) == 1 and json.loads(js[0])["event"] == "exit", "no JSON line on stderr")

    per_pid = os.path.join(tmp, "s-%p.jsonl")
    proc = subprocess.Popen([helper, "gate"], stdin=subprocess.DEVNULL, env=env(PIPESPIN_STATS=per_pid))
    check(proc.wait() == 0, "gate failed")
    mine = per_pid.replace("%p", str(proc.pid))
    check(os.path.exists(mine) and lines_of(mine)[0]["pid"] == proc.pid, f"no {mine}")

    target = os.path.join(tmp, "target")
    open(target, "w").close()
    link = os.path.join(tmp, "link.jsonl")
    os.symlink(target, link)
    p = run([helper, "gate"], PIPESPIN_STATS=link)
    check(os.path.getsize(target) == 0, "the stats line followed a symlink")
    check("cannot write statistics to" in p.stderr and "ELOOP" in p.stderr,
          "no warning about the unusable destination")

    # Only a regular file (or a terminal): a FIFO is refused before it is
    # opened, with or without a reader (whose open sees no writer come).
    not_regular = "not a regular file or a terminal"
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    refused(fifo, not_regular)
    got = os.path.join(tmp, "fifo.got")
    reader = subprocess.Popen(["sh", "-c", f"cat '{fifo}' > '{got}'"])
    refused(fifo, not_regular)
    os.close(os.open(fifo, os.O_WRONLY))  # lets the reader end
    check(reader.wait() == 0 and os.path.getsize(got) == 0, "a line went into a FIFO")
    refused(tmp, not_regular)
    sock = os.path.join(tmp, "sock")
    socket.socket(socket.AF_UNIX).bind(sock)
    refused(sock, not_regular)
    refused("/dev/null", not_regular)


def refused(dest, why):
    """The helper finishes (a hang fails), with one warning naming why."""
    try:
        p = subprocess.run([helper, "gate"], env=env(PIPESPIN_STATS=dest),
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        fail(f"PIPESPIN_STATS={dest}: the program hung")
    sys.stderr.write(p.stderr)
    check(p.returncode == 0, f"PIPESPIN_STATS={dest}: exit status {p.returncode}")
    want = f"]: warning: cannot write statistics to '{dest}': {why}"
    check(p.stderr.count(want) == 1, f"PIPESPIN_STATS={dest}: expected one warning '{want}'")


def case_lost_warning():
    bad = os.path.join(tmp, "no-such-dir", "s.jsonl")
    want = f"]: warning: cannot write statistics to '{bad}': ENOENT"
    # seq closes its stderr at exit (coreutils' close_stdout), before the
    # shim's exit line fails: the warning comes while stderr is open.
    p = run(["seq", "3"], PIPESPIN_STATS=bad)
    check(p.stdout == "1\n2\n3\n", "seq's output")
    check(p.stderr.count(want) == 1, f"expected one warning '{want}' on seq's stderr")
    # A failed exec line leaves the warning to the program it starts (same
    # pid, same destination): one warning, not two.
    p = run(["sh", "-c", "exec true"], PIPESPIN_STATS=bad)
    check(p.stderr.count(want) == 1, f"expected one warning '{want}' (true's, not sh's too)")
    # With a log_file, the warning goes there, whatever the program did with
    # its stderr.
    log = os.path.join(tmp, "shim.log")
    p = run(["seq", "3"], PIPESPIN_STATS=bad, PIPESPIN_LOG_FILE=log)
    check("pipespin" not in p.stderr, "the shim wrote to stderr with a log_file")
    with open(log) as f:
        check(f.read().count(want) == 1, f"expected one warning '{want}' in the log file")


def case_interval():
    for ab in (0, 100):
        path = os.path.join(tmp, f"interval-{ab}.jsonl")
        run([helper, "pingpong", "2600"], PIPESPIN_MODE="fixed", PIPESPIN_STATS=path,
            PIPESPIN_STATS_INTERVAL=1, PIPESPIN_AB=ab)
        lines = lines_of(path)
        events = [l["event"] for l in lines]
        print(ab, events, [l["pipe"]["read"]["calls"] for l in lines])
        check(events[-1] == "exit" and events.count("exit") == 1, f"events {events}")
        # 2.6 s of pipe calls with a 1 s period: a line after 1 s and 2 s.
        check(events.count("interval") >= 1, f"no interval line in arm ab={ab}: {events}")
        check([l["seq"] for l in lines] == list(range(len(lines))), "seq not 0, 1, 2, ...")
        for a, b in zip(lines, lines[1:]):
            check(b["wall_us"] >= a["wall_us"], "wall time went backwards")
            check(b["pipe"]["read"]["calls"] >= a["pipe"]["read"]["calls"], "counters not cumulative")
        # The usage is since the previous line: the lines' CPU adds up to at
        # most the process's own (one thread spins on its CPU at most the
        # wall time, two threads at most twice).
        cpu = sum(l["rusage"]["utime_us"] + l["rusage"]["stime_us"] for l in lines)
        check(0 < cpu <= 2 * lines[-1]["wall_us"] + 100000,
              f"CPU {cpu} µs over the lines, wall {lines[-1]['wall_us']} µs: not per line")
        arm = "control" if ab == 0 else "treatment"
        check(all(l["arm"] == arm for l in lines), f"arm is not {arm}")
        if ab == 0:
            check(lines[-1]["pipe"]["read"]["spins"] == 0, "the control arm spun")


def case_arms():
    seed = 12345
    for ab, var in ((30, {"PIPESPIN_AB": 30, "PIPESPIN_AB_SEED": seed}), (None, {})):
        path = os.path.join(tmp, f"arms-{ab}.jsonl")
        for _ in range(20):
            run([helper, "gate"], PIPESPIN_STATS=path, **var)
        lines = lines_of(path)
        check(len(lines) == 20, "want 20 lines")
        for l in lines:
            want = "none" if ab is None else arm_of(ab, seed, l["pid"])
            check(l["arm"] == want, f"pid {l['pid']}: arm {l['arm']}, want {want}")
            check(l["config"]["ab_seed"] == (seed if ab else 0), "config.ab_seed")


def case_switchback():
    if len(os.sched_getaffinity(0)) < 2:
        print("SKIP: one usable CPU: the treatment arm never spins")
        sys.exit(77)
    path = os.path.join(tmp, "switchback.jsonl")
    run([helper, "pingpong", "3600"], PIPESPIN_MODE="fixed", PIPESPIN_STATS=path,
        PIPESPIN_AB=50, PIPESPIN_AB_SEED=5, PIPESPIN_AB_PERIOD=1)
    lines = lines_of(path)
    print([(l["event"], l["arm"], l["wall_us"]) for l in lines])
    check([l["seq"] for l in lines] == list(range(len(lines))), "seq not 0, 1, 2, ...")
    check(all(l["config"]["ab_period"] == 1 for l in lines), "config.ab_period")
    # 3.6 s of pipe calls and a 1 s period: a line at each of 3 switches (a
    # late tick may merge two periods into one line only if a whole second
    # passed without a call on the pipe), then the exit line.
    check(lines[-1]["event"] == "exit" and len(lines) >= 3, "want a line at each switch")
    check(all(l["event"] == "interval" for l in lines[:-1]), "a switch line is an interval line")
    for a, b in zip(lines, lines[1:]):
        check(a["arm"] != b["arm"], f"arms do not alternate: {a['arm']} then {b['arm']}")
    check({l["arm"] for l in lines} == {"control", "treatment"}, "not both arms")
    prev = None
    for l in lines:
        r = l["pipe"]["read"]
        spins = r["spins"] - (prev["pipe"]["read"]["spins"] if prev else 0)
        # What the line covers ran in its arm: the control arm never spins,
        # but a spin the other thread began before the switch ends (and is
        # counted) after it.
        if l["arm"] == "control":
            check(spins <= 1, f"a control period spun {spins} times")
        elif l is not lines[-1]:
            check(spins > 0, "a whole treatment period of ping-pong without a spin")
        prev = l


def case_control_syscalls():
    if not shutil.which("strace"):
        print("SKIP: strace is not installed (tools/deps.sh installs it)")
        sys.exit(77)
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
            source = f.read().strip()
    except OSError:
        source = "?"
    if source not in ("tsc", "kvm-clock", "hyperv_clocksource_tsc_page", "arch_sys_counter"):
        print(f"SKIP: clock source {source}: clock_gettime may be a system call here")
        sys.exit(77)
    path = os.path.join(tmp, "control.jsonl")
    trace = os.path.join(tmp, "trace")
    e = env(PIPESPIN_STATS=path, PIPESPIN_AB=0)
    del e["LD_PRELOAD"]
    probe = subprocess.run(["strace", "-f", "-qq", "-o", trace, "-e", "trace=getpid", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"SKIP: strace cannot trace here: {probe.stderr.strip()[:200]}")
        sys.exit(77)
    p = subprocess.run(["strace", "-f", "-qq", "-o", trace, "-E", f"LD_PRELOAD={lib}",
                        "-e", "trace=clock_gettime,clock_nanosleep,gettimeofday,getrusage",
                        helper, "pingpong", "300"], env=e, capture_output=True, text=True,
                       timeout=120)
    check(p.returncode == 0, f"pingpong under strace: {p.stderr[:500]}")
    calls = [l for l in open(trace) if re.search(r"\b(clock_gettime|gettimeofday|getrusage)\(", l)]
    lines = lines_of(path)
    print(f"{len(lines)} line(s); traced: {calls[:5]}")
    check(all(l["arm"] == "control" for l in lines), "not the control arm")
    rounds = int(p.stdout.split()[1])
    check(lines[0]["pipe"]["read"]["calls"] >= rounds, "the reads were not counted")
    check(sum(l.startswith(tuple("0123456789")) and "getrusage(" in l for l in calls) == len(lines),
          "not one getrusage per line")
    check(not [l for l in calls if "getrusage(" not in l],
          f"the control arm read the clock through a system call: {calls[:3]}")


cases = {
    "waits": lambda: case_waits("exit", "/bin/true"),
    "waits_exit": lambda: case_waits("_exit", "-"),
    "concurrent": case_concurrent,
    "destinations": case_destinations,
    "lost_warning": case_lost_warning,
    "interval": case_interval,
    "arms": case_arms,
    "switchback": case_switchback,
    "control_syscalls": case_control_syscalls,
}
cases[case]()
print(f"PASS ({case})")
