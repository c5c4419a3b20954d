#!/usr/bin/env python3
"""`pipespin stats --compare` on the lines of real A/B tests.

    compare_check.py CASE LIBPIPESPIN E2E_ABLOAD PIPESPIN

Two workloads (e2e_abload): a ping-pong between two processes on two CPUs,
where a spin catches the reply that otherwise costs a sleep and a wake-up
from the other CPU (the treatment is several times faster per call), and a
sparse producer writing a byte every 1-3 ms, whose reader no spin can help.
The treatment is mode fixed (adaptive would rightly stop spinning when the
machine's other load leaves no CPU free, and the test would measure the
load); nothing here asserts a time: only the verdicts, which come from the
bootstrap intervals.

  processes   many short processes with PIPESPIN_AB=50: each process one sample
  switchback  one long-lived process of each with PIPESPIN_AB_PERIOD=1: each
              period one sample

Also: every line is valid against docs/stats.schema.json; the chart
(--plot FILE.gp, rendered as a table by gnuplot) shows the shares the
--json report gives; --plot FILE.png draws a PNG.
Exit 0: pass, 77: skipped (reason printed), 1: fail.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import case_util  # noqa: E402
import validate_stats  # noqa: E402
from case_util import check, clean_env, fail  # noqa: E402

case, lib, helper, pipespin = sys.argv[1], os.path.realpath(sys.argv[2]), sys.argv[3], sys.argv[4]
case_util.case = case
tmp = tempfile.mkdtemp(prefix="pipespin-compare.")
stats = os.path.join(tmp, "stats.jsonl")
FASTER, NONE = "faster", "no significant difference"


def env(**kw):
    return clean_env(**{"LD_PRELOAD": lib, "PIPESPIN_STATS": stats, "PIPESPIN_AB": 50,
                        "PIPESPIN_AB_SEED": 16, "PIPESPIN_MODE": "fixed", "PIPESPIN_SPIN_US": 50,
                        **kw})


def workload(name, arg, **kw):
    """Runs e2e_abload NAME ARG as the program NAME (its argv[0])."""
    p = subprocess.run([name, name, str(arg)], executable=helper, env=env(**kw),
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"{name} {arg} exited {p.returncode}: {p.stderr[-2000:]}")


def compare(*args):
    p = subprocess.run([pipespin, "stats", "--compare", *args, stats], capture_output=True,
                       text=True, timeout=120)
    check(p.returncode == 0, f"stats --compare {args}: {p.returncode}: {p.stderr}")
    return p


def verdicts(report, program):
    g = [x for x in report["groups"] if x["program"] == program]
    check(len(g) == 1, f"no group {program} in {[x['program'] for x in report['groups']]}")
    g = g[0]
    print(f"{program}: samples {g['samples']}, processes {g['processes']}, periods {g['periods']}")
    for key, m in g["measures"].items():
        print(f"  {key}: control {m['control']['median']} treatment {m['treatment']['median']} "
              f"ratio {m['ratio']} [{m['ci_low']}, {m['ci_high']}] {m['verdict']}")
    return g


def check_verdicts(samples_from):
    report = json.loads(compare("--json").stdout)
    ping, sparse = verdicts(report, "pingpong"), verdicts(report, "sparse")
    for g in (ping, sparse):
        check(not g["too_few"], f"{g['program']}: too few samples {g['samples']}")
        check(g[samples_from] > 0 and g["processes" if samples_from == "periods" else "periods"] == 0,
              f"{g['program']}: samples not from {samples_from}")
    # Spinning catches the ping-pong's replies: faster per call, and each
    # wait shorter. The sparse producer's reader waits for its timer.
    check(ping["measures"]["wall_per_call_us"]["verdict"] == FASTER, "ping-pong: wall per call not faster")
    check(ping["measures"]["blocked_per_wait_us"]["verdict"] == FASTER,
          "ping-pong: blocked time per wait not faster")
    check(sparse["measures"]["wall_per_call_us"]["verdict"] == NONE,
          "sparse producer: a difference in wall per call")
    # The text says the same.
    text = compare().stdout
    print(text)
    block = text[text.index("pingpong:"):]
    check(re.search(r"^  wall per call \(µs\) .* faster$", block[:block.index("\n\n")], re.M),
          "the text does not say faster for the ping-pong")
    block = text[text.index("sparse:"):]
    check(re.search(r"^  wall per call \(µs\) .* no significant difference$",
                    block[:block.index("\n\n")], re.M),
          "the text does not say no significant difference for the sparse producer")
    return report


def check_chart():
    """The chart of one program shows, per arm and bucket, the share of the
    arm's waits that --json reports."""
    report = json.loads(compare("--json", "--program", "pingpong").stdout)
    check(len(report["groups"]) == 1, "--program: not one group")
    waits = report["groups"][0]["waits"]
    script = os.path.join(tmp, "chart.gp")
    compare("--program", "pingpong", "--plot", script)
    if not shutil.which("gnuplot"):
        print("gnuplot is missing: the chart is not rendered (tools/deps.sh installs gnuplot-nox)")
        return
    kept = [l for l in open(script).read().splitlines()
            if not re.match(r"\s*set\s+(terminal|output)\b", l)]
    table = os.path.join(tmp, "table.txt")
    with open(os.path.join(tmp, "render.gp"), "w") as f:
        f.write(f"set table '{table}'\n" + "\n".join(kept) + "\nunset table\n")
    r = subprocess.run(["gnuplot", os.path.join(tmp, "render.gp")], capture_output=True, text=True)
    check(r.returncode == 0, f"gnuplot cannot render the script: {r.stderr}")
    curves, cur = {}, None
    for line in open(table):
        m = re.match(r'# Curve title: "(\w+) \((\d+) waits\)"', line)
        if m:
            cur = curves.setdefault(m.group(1), {"waits": int(m.group(2)), "points": []})
        elif cur is not None and line.strip() and not line.startswith("#"):
            x, y = (float(v) for v in line.split()[:2])
            cur["points"].append((x, y))
    check(set(curves) == {"control", "treatment"}, f"curves {list(curves)}")
    for arm, offset in (("control", -0.2), ("treatment", 0.2)):
        w = waits[arm]
        per_bucket = [sum(w[e]["log2"][b] for e in ("hit", "miss", "plain")) for b in range(20)]
        total = sum(per_bucket)
        check(total > 0 and curves[arm]["waits"] == total,
              f"{arm}: the legend says {curves[arm]['waits']} waits, the report {total}")
        drawn = {round(x - offset): y for x, y in curves[arm]["points"]}
        check(sorted(drawn) == list(range(20)), f"{arm}: buckets drawn {sorted(drawn)}")
        for b in range(20):
            want = 100.0 * per_bucket[b] / total
            check(abs(drawn[b] - want) < 1e-3, f"{arm}: bucket {b} drawn {drawn[b]}, report {want}")
    print(f"chart: {len(curves['control']['points'])} buckets per arm agree with --json")
    png = os.path.join(tmp, "chart.png")
    compare("--program", "pingpong", "--plot", png)
    with open(png, "rb") as f:
        check(f.read(8) == b"\x89PNG\r\n\x1a\n", "--plot FILE.png wrote no PNG")


def lines_valid():
    n = validate_stats.validate_file(stats)
    print(f"{n} lines valid against the schema")
    lines = [json.loads(l) for l in open(stats)]
    check(all(l["v"] == 2 for l in lines), "not all lines are version 2")
    return lines


def case_processes():
    for _ in range(24):
        workload("pingpong", 1000)
    for _ in range(24):
        workload("sparse", 40)
    lines = lines_valid()
    arms = {l["arm"] for l in lines}
    check(arms == {"control", "treatment"}, f"arms {arms}")
    check_verdicts("processes")
    check_chart()


def case_switchback():
    workload("pingpong", -8000, PIPESPIN_AB_PERIOD=1)
    workload("sparse", -8000, PIPESPIN_AB_PERIOD=1)
    lines = lines_valid()
    for program in ("pingpong", "sparse"):
        mine = [l for l in lines if l["program"] == program]
        check(len({l["pid"] for l in mine}) == 2, f"{program}: not one pair of processes")
        check(sum(l["event"] == "interval" for l in mine) >= 8,
              f"{program}: not a line at each switch of both processes")
    check_verdicts("periods")


if len(os.sched_getaffinity(0)) < 2:
    print("SKIP: one usable CPU: nothing spins, there is no treatment to compare")
    sys.exit(77)
{"processes": case_processes, "switchback": case_switchback}[case]()
shutil.rmtree(tmp, ignore_errors=True)
print(f"PASS ({case})")
