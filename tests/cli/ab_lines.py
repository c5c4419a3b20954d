#!/usr/bin/env python3
"""Statistics lines (version 2) of an A/B experiment whose answer is known.

  ab_lines.py SCENARIO SEED > FILE

aa: four programs whose control and treatment samples come from one
    distribution (a treatment that never spins): every verdict must be
    "no significant difference".
advise: slow (the treatment's wall per call is twice the control's),
    same (no difference, no spins), late (spins that miss spin_us=50 and
    whose waits end at 70-250 µs), early (spins that all hit within 4 µs).
"""
import json
import random
import sys

FAMILIES = ("io", "poll", "stdio", "vector", "select", "epoll", "splice")


def counters(calls=0, nbytes=0, spins=0, hits=0, ends=None):
    c = {"calls": calls, "waits": spins, "spins": spins, "spin_hits": hits,
         "spin_misses": spins - hits, "spin_ns": 0, "sleep_ns": 0, "bytes": nbytes}
    ends = ends or {}
    c["wait_ns"] = {e: sum(n * (1 << (b + 9)) for b, n in enumerate(ends.get(e, [])))
                    for e in ("hit", "miss", "plain")}
    c["wait_log2"] = {e: ends.get(e, []) for e in ("hit", "miss", "plain")}
    return c


def line(pid, program, arm, wall_us, calls, spin_us=50, spins=0, hits=0, ends=None, rng=None):
    cpu = int(wall_us * 0.3)
    nv = int(calls * rng.lognormvariate(0, 0.6))
    d = {"v": 2, "pid": pid, "ppid": 1, "program": program, "event": "exit", "arm": arm,
         "seq": 0, "start_us": 1000 + pid, "wall_us": int(wall_us),
         "rusage": {"utime_us": cpu // 2, "stime_us": cpu // 2, "nvcsw": nv, "nivcsw": 1,
                    "maxrss_kb": 1000},
         "sleeps_avoided": hits,
         "config": {"mode": "off" if arm == "control" else "adaptive", "spin_us": spin_us,
                    "ab": 50, "ab_period": 0}}
    empty = counters()
    d["pipe"] = {"read": counters(calls, calls * 512, spins, hits, ends), "write": empty,
                 "poll": empty}
    d["fifo"] = {k: empty for k in ("read", "write", "poll")}
    d["via"] = {f: {"spins": spins if f == "io" else 0, "spin_hits": hits if f == "io" else 0}
                for f in FAMILIES}
    return json.dumps(d)


def main():
    scenario, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    pid = 100
    out = []

    def sample(program, arm, wall_per_call, calls=2000, sigma=0.15, **kw):
        nonlocal pid
        pid += 1
        wall = calls * wall_per_call * rng.lognormvariate(0, sigma)
        out.append(line(pid, program, arm, wall, calls, rng=rng, **kw))

    if scenario == "aa":
        for program, per_call in (("cat", 20), ("sort", 35), ("uniq", 12), ("wc", 8)):
            for _ in range(12):
                for arm in ("control", "treatment"):
                    sample(program, arm, per_call, sigma=0.6)
    elif scenario == "advise":
        for _ in range(10):
            sample("slow", "control", 20)
            sample("slow", "treatment", 40, spins=500, hits=100,
                   ends={"hit": [0, 0, 100], "miss": [0] * 9 + [400]})
            sample("same", "control", 20)
            sample("same", "treatment", 20)
            sample("late", "control", 20)
            sample("late", "treatment", 20, spins=500, hits=100,
                   ends={"hit": [0, 0, 0, 0, 0, 100], "miss": [0] * 7 + [250, 150]})
            sample("early", "control", 20)
            sample("early", "treatment", 20, spins=500, hits=500, ends={"hit": [0, 100, 400]})
    else:
        sys.exit(f"unknown scenario {scenario}")
    print("\n".join(out))


main()
