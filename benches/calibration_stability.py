#!/usr/bin/env python3
"""How often `learn`'s choice of `cache_fraction` would change with its measurements.

Each machine file written by `absinthe learn` records, per fraction tried, the calibration
optima's time in every round (`learned.cache_calibration.rounds`). This script draws rounds with
replacement from one file's record and applies two rules to each draw:

- `fastest`: the fraction with the least geometric mean over the rounds drawn, unless the file's
  own is within 2% of it (learn's rule before the rounds were recorded, which took the geometric
  mean of medians pooled over its rounds);
- `paired`: learn's rule (learn/src/calibrate.rs, `choose`): the file's own unless the fastest ran
  faster round by round with 95% confidence (Student's t on the logarithms of the ratios) and by
  over 2%; else, of the fractions not slower than the fastest in that sense, the one nearest the
  file's own.

It prints, per file, rule and number of rounds drawn, the share of draws that chose each
fraction. A rule whose choice is one fraction in nearly every draw writes the same file each time
`learn` runs on a machine like this one.

    python3 benches/calibration_stability.py build/learn-c.yaml build/learn-d.yaml --own 0.3333

Standard library only; the machine files are read with a small parser for the one record.
"""

import argparse
import math
import random
import itertools
import re
import sys
from collections import Counter

# Student's t at 95%, one-sided, 1 to 10 degrees of freedom (learn/src/stats.rs).
T_95 = [6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812]
TOLERANCE = 0.02


def record(path):
    """The fractions and per-round times of a machine file's cache calibration."""
    try:
        text = open(path).read()
    except OSError as e:
        sys.exit(f"{path}: {e.strerror}")
    at = text.find("cache_calibration:")
    if at < 0:
        sys.exit(f"{path}: no learned.cache_calibration (learn with calibration writes one)")
    # The record's own lines: those indented under it.
    lines = text[at:].split("\n")[1:]
    block = "\n".join(l for l in itertools.takewhile(
        lambda l: l.startswith("    "), lines)) + "\n"
    fractions = re.search(r"fractions: \[(.*?)\]", block)
    rounds = re.search(r"rounds: \[(.*)\]\n", block)
    if not fractions or not rounds:
        sys.exit(f"{path}: cache_calibration has no per-round times (rounds:); learn again")
    fractions = [float(f) for f in fractions.group(1).split(",")]
    rows = []
    for item in re.findall(r"\[([^\[\]]*)\]|null", rounds.group(1)):
        rows.append([float(x) for x in item.split(",")] if item else None)
    if len(rows) != len(fractions):
        sys.exit(f"{path}: {len(rows)} round lists for {len(fractions)} fractions")
    return fractions, rows


def geometric_mean(times):
    return math.exp(sum(math.log(t) for t in times) / len(times))


def slower(a, b):
    """Whether times `a` ran slower than `b`, round by round (learn's `calibrate::slower`)."""
    if len(a) < 2 or any(not (x > 0 and y > 0) for x, y in zip(a, b)):
        return False  # as learn's `stats::paired`: no bound, so not slower
    logs = [math.log(y / x) for x, y in zip(a, b)]
    n = len(logs)
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    upper = mean + T_95[min(n - 2, len(T_95) - 1)] * sd / math.sqrt(n)
    return upper < 0 and math.exp(mean) * (1 + TOLERANCE) < 1


def rule_fastest(fractions, rows, own):
    means = {f: geometric_mean(r) for f, r in zip(fractions, rows) if r}
    best = min(means.values())
    mine = [m for f, m in means.items() if abs(f - own) < 1e-3]
    if mine and mine[0] <= best * (1 + TOLERANCE):
        return own
    return min(f for f, m in means.items() if m == best)


def rule_paired(fractions, rows, own):
    measured = [(f, r) for f, r in zip(fractions, rows) if r]
    best = min(measured, key=lambda m: geometric_mean(m[1]))[1]
    mine = [r for f, r in measured if abs(f - own) < 1e-3]
    if mine and not slower(mine[0], best):
        return own
    ties = [f for f, r in measured if not slower(r, best)]
    return min(ties, key=lambda f: abs(math.log(f / own)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("machines", nargs="+", help="machine files written by absinthe learn")
    ap.add_argument("--own", type=float, default=1 / 3,
                    help="the cache_fraction of the file learn started from (default 1/3)")
    ap.add_argument("--draws", type=int, default=2000, help="draws per rule (default 2000)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if not 0 < args.own <= 1:
        sys.exit(f"--own must be in (0, 1], found {args.own}")
    if args.draws < 1:
        sys.exit(f"--draws must be at least 1, found {args.draws}")
    records = [(path, *record(path)) for path in args.machines]
    print("file | rule | rounds drawn | choice on the record | share of draws per fraction")
    for path, fractions, rows in records:
        recorded = len(next(r for r in rows if r))
        for name, rule, k in [("fastest", rule_fastest, recorded // 2),
                              ("paired", rule_paired, recorded // 2),
                              ("paired", rule_paired, recorded)]:
            rng = random.Random(args.seed)
            counts = Counter()
            for _ in range(args.draws):
                pick = [rng.randrange(recorded) for _ in range(k)]
                drawn = [[r[i] for i in pick] if r else None for r in rows]
                counts[rule(fractions, drawn, args.own)] += 1
            shares = ", ".join(f"{f:.4g}: {c / args.draws:.0%}" for f, c in sorted(counts.items()))
            print(f"{path} | {name} | {k} | {rule(fractions, rows, args.own):.4g} | {shares}")


if __name__ == "__main__":
    main()
