#!/usr/bin/env python3
"""Checks a chart against the report it illustrates.

    check_chart.py ab|matrix SCRIPT.gp REPORT.json

SCRIPT.gp is what `--plot FILE.gp` writes: the gnuplot script that draws the
PNG, data included. It is rendered through gnuplot's `set table` instead of
a terminal, which lists, curve by curve, the values gnuplot plots; each box,
bar, label and point is then compared with the figures REPORT.json (the
command's --json) prints. What gnuplot draws from those values is modelled
for the two styles the charts have used: candlesticks (a box from the
columns given) and boxplot (gnuplot's own statistics: one box per value of
the factor column, or a single box over all points of a curve without one).

Exit 0 when the chart says what the report says; else 1 with the first
difference.
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile


def fail(msg):
    print(f"chart check: {msg}", file=sys.stderr)
    sys.exit(1)


def close(a, b, rel=1e-3, absolute=1e-3):
    return abs(a - b) <= max(absolute, rel * max(abs(a), abs(b)))


def quantile(values, p):
    """Linear interpolation between order statistics (type 7)."""
    v = sorted(values)
    h = (len(v) - 1) * p
    lo = int(h)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (h - lo) * (v[hi] - v[lo])


def render(script):
    """The script's curves as gnuplot tabulates them: [{title, rows}]."""
    kept = [l for l in script.splitlines() if not re.match(r"\s*set\s+(terminal|output)\b", l)]
    with tempfile.TemporaryDirectory() as d:
        table = os.path.join(d, "table.txt")
        gp = os.path.join(d, "chart.gp")
        with open(gp, "w") as f:
            f.write(f"set table '{table}'\n" + "\n".join(kept) + "\nunset table\n")
        run = subprocess.run(["gnuplot", gp], capture_output=True, text=True)
        if run.returncode != 0:
            fail(f"gnuplot failed on the script: {run.stderr.strip()}")
        curves, cur = [], None
        for line in open(table):
            line = line.strip()
            if re.match(r"# Curve \d+ of \d+", line):
                cur = {"title": None, "rows": []}
                curves.append(cur)
            elif line.startswith("# Curve title:"):
                cur["title"] = line.split(":", 1)[1].strip().strip('"')
            elif line and not line.startswith("#"):
                cur["rows"].append(shlex.split(line))
    return curves


def numbers(row):
    out = []
    for field in row:
        try:
            out.append(float(field))
        except ValueError:
            pass
    return out


def datablocks(script):
    blocks = {}
    for name, body in re.findall(r"^\$(\w+) << EOD\n(.*?)^EOD$", script, re.M | re.S):
        blocks[name] = [shlex.split(l) for l in body.splitlines() if l and not l.startswith("#")]
    return blocks


def plot_clauses(script):
    """The comma-separated clauses of the plot command, continuation lines joined."""
    text = script.replace("\\\n", " ")
    m = re.search(r"^plot (.*)$", text, re.M)
    if not m:
        fail("no plot command")
    clauses, depth, quote, start, s = [], 0, None, 0, m.group(1)
    for i, c in enumerate(s):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            clauses.append(s[start:i].strip())
            start = i + 1
    clauses.append(s[start:].strip())
    return clauses


def title_of(script):
    m = re.search(r"^set title '((?:[^']|'')*)'", script, re.M)
    return m.group(1).replace("''", "'") if m else ""


def box_stats(points):
    ys = [y for _, y in points]
    return {"x": points[0][0], "min": min(ys), "q1": quantile(ys, 0.25),
            "median": quantile(ys, 0.5), "q3": quantile(ys, 0.75), "max": max(ys)}


def drawn_boxes(script, curves):
    """The boxes gnuplot draws: [{x, min, q1, median, q3, max}]."""
    clauses = plot_clauses(script)
    if len(clauses) != len(curves):
        fail(f"{len(clauses)} plot clauses but {len(curves)} curves")
    boxes = []
    for clause, curve in zip(clauses, curves):
        if "with boxplot" in clause:
            using = re.search(r"using\s+(\S+)", clause).group(1).split(":")
            rows = [numbers(r) for r in curve["rows"]]
            if len(using) >= 4:  # a factor column: a box per factor value
                groups = {}
                for r in rows:
                    groups.setdefault(r[0], []).append((r[0], r[1]))
                boxes += [box_stats(g) for g in groups.values()]
            elif rows:  # one box over every point of the curve, at the first x
                boxes.append(box_stats([(r[0], r[1]) for r in rows]))
    quartiles = [c for c in curves if c["title"] and "quartiles" in c["title"]]
    medians = [c for c in curves if c["title"] == "median"]
    if quartiles and medians:
        med = {numbers(r)[0]: numbers(r)[1] for r in medians[0]["rows"]}
        for r in quartiles[0]["rows"]:
            x, q1, lo, hi, q3 = numbers(r)[:5]
            if x not in med:
                fail(f"no median line for the box at x={x}")
            boxes.append({"x": x, "min": lo, "q1": q1, "median": med[x], "q3": q3, "max": hi})
    return boxes


def xtic_labels(script, blocks):
    """x position -> tic label, from `set xtics (...)` or the boxes block's last column."""
    labels = {}
    m = re.search(r"^set xtics \((.*)\)", script, re.M)
    if m:
        for label, x in re.findall(r"'((?:[^']|'')*)'\s+([0-9.]+)", m.group(1)):
            labels[float(x)] = label
    for row in blocks.get("boxes", []):
        labels[float(row[0])] = row[-1]
    return labels


def check_ab(script, report):
    curves = render(script)
    blocks = datablocks(script)
    boxes = drawn_boxes(script, curves)
    labels = xtic_labels(script, blocks)
    arms = report["arms"]
    if len(boxes) != len(arms):
        fail(f"{len(boxes)} box(es) drawn for {len(arms)} arms: "
             + "; ".join(f"at x={b['x']:g} median {b['median']:.2f}" for b in boxes))
    points = [numbers(r)[:2] for c in curves if c["title"] == "runs" for r in c["rows"]]
    at = {}
    for name, arm in arms.items():
        xs = [x for x, label in labels.items() if label.split()[0] == name]
        if len(xs) != 1:
            fail(f"{len(xs)} tic labels for the {name} arm: {labels}")
        x = xs[0]
        mine = [b for b in boxes if close(b["x"], x)]
        if len(mine) != 1:
            fail(f"{len(mine)} boxes at the {name} arm's label (x={x:g})")
        b, runs = mine[0], arm["wall_ms"]
        want = {"median": arm["median_wall_ms"], "min": arm["min_wall_ms"],
                "max": arm["max_wall_ms"], "q1": quantile(runs, 0.25), "q3": quantile(runs, 0.75)}
        if "q1_wall_ms" in arm:
            want["q1"], want["q3"] = arm["q1_wall_ms"], arm["q3_wall_ms"]
            if not (close(want["q1"], quantile(runs, 0.25)) and close(want["q3"], quantile(runs, 0.75))):
                fail(f"{name}: the report's quartiles are not those of its runs")
        for key, value in want.items():
            if not close(b[key], value):
                fail(f"{name}: the box's {key} is {b[key]:.4f} ms, the report's {value:.4f} ms")
        near = sorted(y for px, y in points if abs(px - x) < 0.5)
        if len(near) != len(runs) or not all(close(a, c) for a, c in zip(near, sorted(runs))):
            fail(f"{name}: the points beside its box are {near}, its runs {sorted(runs)}")
        at[name] = b
    c, t = at["control"], at["treatment"]
    if (report["arms"]["control"]["min_wall_ms"] > report["arms"]["treatment"]["max_wall_ms"]
            or report["arms"]["treatment"]["min_wall_ms"] > report["arms"]["control"]["max_wall_ms"]):
        if not (c["min"] > t["max"] or t["min"] > c["max"]):
            fail("the arms' runs do not overlap but their boxes do")
    want = (f"ratio {report['ratio']:.3f}, 95% CI [{report['ci_low']:.3f}, "
            f"{report['ci_high']:.3f}]: {report['verdict']}")
    if want not in title_of(script):
        fail(f"the title '{title_of(script)}' does not say '{want}'")
    print(f"ab chart: {len(boxes)} boxes and {len(points)} points agree with the report")


def check_matrix(script, report):
    curves = render(script)
    rows = datablocks(script)["ratios"]
    arms, cases = report["arms"], [c for c in report["cases"] if c["id"] != "footprint"]
    if rows[0][1:] != arms:
        fail(f"the data's arms {rows[0][1:]} are not the report's {arms}")
    if [r[0] for r in rows[1:]] != [c["id"] for c in cases]:
        fail(f"the data's cases {[r[0] for r in rows[1:]]} are not the report's")
    n = len(arms)
    bars, labels = curves[:n], curves[n:]
    if len(labels) != n:
        fail(f"{len(curves)} curves, expected {n} of bars and {n} of labels")
    lo, hi = map(float, re.search(r"^set yrange \[([^:]+):([^\]]+)\]", script, re.M).groups())
    for j, arm in enumerate(arms):
        if bars[j]["title"] != arm:
            fail(f"bar series {j} is titled {bars[j]['title']!r}, not {arm!r}")
        if len(bars[j]["rows"]) != len(cases) or len(labels[j]["rows"]) != len(cases):
            fail(f"{arm}: {len(bars[j]['rows'])} bars and {len(labels[j]['rows'])} labels "
                 f"for {len(cases)} cases")
        for k, case in enumerate(cases):
            want = case["arms"][j]["wall_ratio"]
            x, y = numbers(bars[j]["rows"][k])[:2]
            if x != k or not close(y, want):
                fail(f"{case['id']}/{arm}: bar at x={x:g} of height {y}, the report's ratio {want}")
            if not lo <= y <= hi:
                fail(f"{case['id']}/{arm}: {y} is outside the y range [{lo}, {hi}]")
            # Clustered histogram, gap 1: bar j of n sits at k + (j - (n - 1) / 2) / (n + 1).
            lx, ly = numbers(labels[j]["rows"][k])[:2]
            text = labels[j]["rows"][k][2]
            if not close(lx, k + (j - (n - 1) / 2) / (n + 1), absolute=1e-6) or not close(ly, y):
                fail(f"{case['id']}/{arm}: its label is at ({lx}, {ly}), its bar at "
                     f"{k + (j - (n - 1) / 2) / (n + 1):.4f} (height {y})")
            if text != f"{y:.2f}":
                fail(f"{case['id']}/{arm}: labelled {text!r} on a bar of {y}")
    print(f"matrix chart: {n} x {len(cases)} bars and labels agree with the report")


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("ab", "matrix"):
        fail(__doc__.strip().splitlines()[2])
    script = open(sys.argv[2]).read()
    report = json.load(open(sys.argv[3]))
    (check_ab if sys.argv[1] == "ab" else check_matrix)(script, report)


if __name__ == "__main__":
    main()
