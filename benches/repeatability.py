#!/usr/bin/env python3
"""How well one timed run predicts another: the ceiling of the model-accuracy goals on a machine.

Reads two sets of `absinthe bench --format json` outputs of the same programs and the same
configurations (`random:N` is seeded, so the same command draws the same ones), one file per
program with the same name in each directory, and prints per program:

- how many rows the second run measured within 20% of the first run's time, and the Spearman
  rank correlation between the two runs' times: what a model that knew the first run's times
  exactly would score against the second;
- the median of the rows' ratios (second over first: how much the whole machine moved between
  the runs), and how many rows are within 20% once each is divided by it;
- the same two figures for the model's predictions against the first run (what `bench`
  reports).

Rows are matched by variant name and must have the same groups, tiles, streaming and inline set
in both.

With `--learn`, the two arguments are instead the `measurements.csv` of two `absinthe learn
--keep-data DIR` runs, and it prints per family (fast, slow) the R² that the second run's
per-configuration medians reach as a prediction of the first run's, computed as `learn` computes
the fit's R²: the ceiling of that goal on the machine.

    for P in hdiff heat4 cosmo_adv5 cosmo_hdiff4; do
      for R in a b; do
        mkdir -p build/repeat/$R
        absinthe bench configs/$P.yaml --machine M --variants opt,random:16 --runs 16 \\
            --no-roofline --format json > build/repeat/$R/$P.json
      done
    done
    python3 benches/repeatability.py build/repeat/a build/repeat/b

    absinthe learn --machine machines/template.yaml --out /tmp/a.yaml --keep-data build/learn-a
    absinthe learn --machine machines/template.yaml --out /tmp/b.yaml --keep-data build/learn-b
    python3 benches/repeatability.py --learn build/learn-a/measurements.csv \\
        build/learn-b/measurements.csv
"""

import argparse
import csv
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_forms import bench_rows, spearman  # noqa: E402  (ties share their mean rank)


def load(path):
    return {r["variant"]: r for r in bench_rows(path)
            if r.get("measured_seconds") and r.get("predicted_seconds") is not None}


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def within(a, b):
    """Whether `a` is within 20% of `b`, as `bench` counts it."""
    return abs(a / b - 1) <= 0.2


def compare(first, second):
    """Per program (rows, between runs: within 20%, Spearman; model: within 20%, Spearman)."""
    out = {}
    for path in sorted(glob.glob(os.path.join(first, "*.json"))):
        name = os.path.basename(path)
        other = os.path.join(second, name)
        if not os.path.exists(other):
            continue
        a, b = load(path), load(other)
        shared = [v for v in a if v in b]
        for v in shared:
            if any(a[v].get(k) != b[v].get(k) for k in ("groups", "tiles", "stream", "inline")):
                sys.exit(f"error: {name}: variant {v} differs between the runs "
                         "(not the same command?)")
        if len(shared) < 3:
            print(f"note: {name}: {len(shared)} rows measured in both runs; skipped",
                  file=sys.stderr)
            continue
        t1 = [a[v]["measured_seconds"] for v in shared]
        t2 = [b[v]["measured_seconds"] for v in shared]
        pred = [a[v]["predicted_seconds"] for v in shared]
        shift = median([y / x for x, y in zip(t1, t2)])
        out[name.removesuffix(".json")] = {
            "rows": len(shared),
            "runs_within_20": sum(within(y, x) for x, y in zip(t1, t2)) / len(shared),
            "shift": shift,
            "shifted_within_20": sum(within(y / shift, x) for x, y in zip(t1, t2)) / len(shared),
            "runs_spearman": spearman(t1, t2),
            "model_within_20": sum(within(p, x) for x, p in zip(t1, pred)) / len(shared),
            "model_spearman": spearman(pred, t1),
        }
    return out


def r_squared(pairs):
    """`1 - SS_res / SS_tot` of (predicted, measured) pairs, as `measure::accuracy::r_squared`."""
    mean = sum(m for _, m in pairs) / len(pairs)
    total = sum((m - mean) ** 2 for _, m in pairs)
    residual = sum((m - p) ** 2 for p, m in pairs)
    return 1 - residual / total if total > 0 else float("nan")


def learn_medians(path):
    """Per family, per configuration (program, tile size, tiles, streamed), the median seconds
    of a `learn --keep-data` measurements.csv."""
    times = {}
    try:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                key = (row["program"], row["size_x"], row["size_y"], row["size_z"], row["tiles_x"],
                       row["tiles_y"], row["tiles_z"], row["streamed"])
                times.setdefault(row["family"], {}).setdefault(key, []).append(
                    float(row["seconds"]))
    except (OSError, KeyError, ValueError, csv.Error) as e:
        sys.exit(f"error: {path}: not a `learn --keep-data` measurements.csv ({e!r})")

    return {fam: {k: median(v) for k, v in conf.items()} for fam, conf in times.items()}


def compare_learn(first, second):
    """Per family: configurations in both runs, and the R² of the second run's medians as a
    prediction of the first's."""
    a, b = learn_medians(first), learn_medians(second)
    out = {}
    for fam in a:
        shared = [k for k in a[fam] if k in b.get(fam, {})]
        if len(shared) >= 3:
            out[fam] = {"configurations": len(shared),
                        "r2": r_squared([(b[fam][k], a[fam][k]) for k in shared])}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="See the module docstring for an example.")
    ap.add_argument("first", help="directory of the first run's bench JSON files (with "
                                  "--learn: the first run's measurements.csv)")
    ap.add_argument("second", help="directory of the second run's, one per program, same names "
                                   "(with --learn: the second run's measurements.csv)")
    ap.add_argument("--learn", action="store_true",
                    help="compare two `learn --keep-data` runs' training measurements instead")
    ap.add_argument("--format", choices=("table", "json"), default="table")
    a = ap.parse_args()
    if a.learn:
        per = compare_learn(a.first, a.second)
        if not per:
            sys.exit("error: no family with at least 3 configurations in both runs")
        if a.format == "json":
            print(json.dumps(per, indent=1))
        else:
            for fam, p in per.items():
                print(f"{fam}: {p['configurations']} configurations in both runs, R² of run 2's "
                      f"medians against run 1's {p['r2']:.4f}")
        return
    per = compare(a.first, a.second)
    if not per:
        sys.exit("error: no program with at least 3 measured rows in both directories")
    rows = sum(p["rows"] for p in per.values())
    total = {k: sum(p[k] * p["rows"] for p in per.values()) / rows
             for k in ("runs_within_20", "shifted_within_20", "model_within_20")}
    if a.format == "json":
        print(json.dumps({"programs": per, "rows": rows, **total}, indent=1))
        return
    print(f"{'program':16} {'rows':>4}  {'run 2 vs run 1':>22}  {'shift':>6} {'after it':>9}"
          f"  {'model vs run 1':>22}")
    print(f"{'':16} {'':>4}  {'within 20%':>11}{'Spearman':>11}  {'':>6} {'':>9}"
          f"  {'within 20%':>11}{'Spearman':>11}")
    for name, p in per.items():
        print(f"{name:16} {p['rows']:4}  {100 * p['runs_within_20']:10.0f}%{p['runs_spearman']:11.3f}"
              f"  {p['shift']:6.2f} {100 * p['shifted_within_20']:8.0f}%"
              f"  {100 * p['model_within_20']:10.0f}%{p['model_spearman']:11.3f}")
    print(f"{'all':16} {rows:4}  {100 * total['runs_within_20']:10.0f}%{'':11}"
          f"  {'':6} {100 * total['shifted_within_20']:8.0f}%"
          f"  {100 * total['model_within_20']:10.0f}%")


if __name__ == "__main__":
    main()
