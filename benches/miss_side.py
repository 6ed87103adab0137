#!/usr/bin/env python3
"""The model's slow side from the cache model's misses, against its stream counts.

The linear model prices a stencil's slow-memory body by its stream counts (arrays streamed
times cells, plus the lines its halos add per tile). `absinthe cache` counts, for the same
configuration, the lines that miss each cache level. This script fits both forms to measured
times and scores them in sample and with one program left out:

- `--learn-data CSV`: the slow family of `learn --keep-data` (caches flushed before each run,
  nine programs of one group each). Columns: the slow base peel and stream peel, then either
  the stream body (`stream`) or the set-associative misses at each level (`misses`).
  Non-negative least squares of the relative error; R² of the per-configuration medians, the
  statistic `learn` reports.
- `--bench JSON...`: rows of `absinthe bench --format json` (real programs, `opt` and random
  configurations). Per stencil `max(fast + compute, slow) + THETA min(...)` for peel and body,
  the slow body either `B^b m + V^b s` (`stream`) or `B^b m + sum_l c_l misses_l` (`misses`),
  each stencil's misses from `absinthe cache --solution` on the row's configuration; fitted by
  least squares of log(predicted / measured), non-negative.

Example (V: a venv with numpy, scipy, pyyaml):

    absinthe learn --machine machines/template.yaml --out M --keep-data D
    for P in hdiff heat4 chain8 cosmo_hdiff4 cosmo_adv5 cosmo_pgrad; do
      absinthe bench configs/$P.yaml --machine M --variants opt,random:16 --runs 16 \\
          --no-roofline --format json > B/$P.json
    done
    V/bin/python benches/miss_side.py --machine M --learn-data D/measurements.csv \\
        --bench B/*.json --programs configs
"""

import argparse
import collections
import csv
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import yaml
from scipy.optimize import least_squares, nnls
from scipy.stats import spearmanr

PARTS = ("fast", "slow_base", "slow_stream", "compute")
TERMS = ("peel", "body")
THETA = 0.25


def cache_misses(absinthe, program, machine, solution_text, where):
    """Per stencil, the set-associative misses at each level of the configuration
    `solution_text` describes (`absinthe cache --solution`)."""
    sol = os.path.join(where, "solution.yaml")
    with open(sol, "w") as f:
        f.write(solution_text)
    p = subprocess.run([absinthe, "cache", program, "--machine", machine, "--solution", sol,
                        "--format", "json"], capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"error: absinthe cache {program}: {p.stderr.strip()[-600:]}")
    report = json.loads(p.stdout)
    return {s["name"]: [lv["compulsory_sa"] + lv["capacity_sa"] for lv in s["levels"]]
            for s in report["stencils"]}


def solution_text(program, groups, inline=()):
    """A solution file: `groups` as (stencils, tiles, streamed)."""
    lines = [f"program: {program}", "inline: [" + ", ".join(inline) + "]", "groups:"]
    for stencils, tiles, streamed in groups:
        lines += [f"- stencils: [{', '.join(stencils)}]", f"  tiles: {list(tiles)}",
                  f"  stream: {'true' if streamed else 'false'}"]
    return "\n".join(lines) + "\n"


def r_squared(pred, meas):
    return 1 - np.sum((meas - pred) ** 2) / np.sum((meas - meas.mean()) ** 2)


def learn_family(a, work):
    """The slow family: per configuration (program, tiles, streamed) the median time, the
    model's slow columns and the misses of its one group."""
    programs = os.path.join(work, "programs")
    subprocess.run([a.absinthe, "learn", "--machine", a.machine, "--write-programs", programs],
                   check=True, stdout=subprocess.DEVNULL)
    runs = collections.defaultdict(list)
    with open(a.learn_data) as f:
        for r in csv.DictReader(f):
            if r["family"] == "slow":
                key = (r["program"], int(r["tiles_x"]), int(r["tiles_y"]), int(r["tiles_z"]),
                       int(r["streamed"]))
                runs[key].append(r)
    rows = []
    for key in sorted(runs):
        name, tx, ty, tz, streamed = key
        path = os.path.join(programs, f"{name}.yaml")
        with open(path) as f:
            stencils = [s["name"] for s in yaml.safe_load(f)["stencils"]]
        per = cache_misses(a.absinthe, path, a.machine,
                           solution_text(name, [(stencils, (tx, ty, tz), streamed)]), work)
        misses = np.sum([per[s] for s in stencils], axis=0)
        first = runs[key][0]
        rows.append((name, float(np.median([float(r["seconds"]) for r in runs[key]])),
                     [float(first[c]) for c in ("slow_base_peel", "slow_stream_peel",
                                                "slow_stream_body")], misses))
    print(f"slow family: {len(rows)} configurations of {len(set(r[0] for r in rows))} programs")
    y = np.array([r[1] for r in rows])
    forms = {
        "stream": np.array([r[2] for r in rows]),
        "misses": np.array([r[2][:2] + list(r[3]) for r in rows]),
    }
    names = [r[0] for r in rows]
    for form, x in forms.items():
        b, _ = nnls(x / y[:, None], np.ones_like(y))
        pred = x @ b
        held = np.zeros_like(y)
        for prog in sorted(set(names)):
            test = np.array([n == prog for n in names])
            bt, _ = nnls(x[~test] / y[~test, None], np.ones((~test).sum()))
            held[test] = x[test] @ bt
        print(f"  {form:7s} in sample R² {r_squared(pred, y):.3f}, within 20% "
              f"{np.mean(np.abs(pred / y - 1) < 0.2):.0%}; one program left out R² "
              f"{r_squared(held, y):.3f}, within 20% {np.mean(np.abs(held / y - 1) < 0.2):.0%};"
              f" coefficients {' '.join(f'{v:.3g}' for v in b)}")


def bench_rows(a, work):
    """(program, variant, counts [stencils x 8], overhead, measured, misses [stencils x
    levels]) of every measured row."""
    found = {}
    for d in a.programs:
        for p in glob.glob(os.path.join(d, "*.yaml")):
            found.setdefault(os.path.basename(p)[:-5], p)
    rows = []
    for path in a.bench:
        name = os.path.basename(path).removesuffix(".json")
        if name not in found:
            sys.exit(f"error: {path}: no {name}.yaml under --programs {' '.join(a.programs)}")
        with open(path) as f:
            data = json.load(f)
        for r in data:
            if not r.get("measured_seconds"):
                continue
            stencils = r["model"]["stencils"]
            groups = [([s["stencil"] for s in stencils if s["group"] == g], t, g in r["stream"])
                      for g, t in enumerate(r["tiles"])]
            per = cache_misses(a.absinthe, found[name], a.machine,
                               solution_text(name, groups, r.get("inline") or []), work)
            counts = np.array([[s["counts"][p][t] for p in PARTS for t in TERMS]
                               for s in stencils], float)
            misses = np.array([per[s["stencil"]] for s in stencils], float)
            rows.append((name, r["variant"], counts, float(sum(r["model"]["overhead"])),
                         r["measured_seconds"], misses))
    return rows


def predict(p, row, form):
    _, _, c, overhead, _, misses = row
    total = 0.0
    for t in (0, 1):
        fast = c[:, t] * p[t] + c[:, 6 + t] * p[6 + t]
        slow = c[:, 2 + t] * p[2 + t]
        slow = slow + (misses @ p[8:] if form == "misses" and t == 1 else c[:, 4 + t] * p[4 + t])
        total += np.maximum(fast, slow).sum() + THETA * np.minimum(fast, slow).sum()
    return total + overhead * (p[3] + p[5])


def fit(rows, form, start):
    scale = np.maximum(start, 1e-13)

    def residuals(q):
        return [np.log(max(predict(q * scale, r, form), 1e-300) / r[4]) for r in rows]

    return least_squares(residuals, np.ones(len(start)), bounds=(0, np.inf)).x * scale


def bench_forms(a, rows):
    with open(a.machine) as f:
        params = yaml.safe_load(f)["params"]
    learned = np.array([float(params.get(x, {}).get(t, 0.0)) for x in PARTS for t in TERMS])
    levels = rows[0][5].shape[1]
    start = np.append(learned, np.full(levels, 1e-10))
    progs = sorted(set(r[0] for r in rows))
    meas = np.array([r[4] for r in rows])
    print(f"bench rows: {len(rows)} of {len(progs)} programs")
    for form in ("stream", "misses"):
        for mode in ("in sample", "one program left out"):
            pred = np.zeros(len(rows))
            if mode == "in sample":
                p = fit(rows, form, start)
                pred = np.array([predict(p, r, form) for r in rows])
            else:
                for prog in progs:
                    p = fit([r for r in rows if r[0] != prog], form, start)
                    for i, r in enumerate(rows):
                        if r[0] == prog:
                            pred[i] = predict(p, r, form)
            rho = []
            for prog in progs:
                sel = np.array([r[0] == prog for r in rows])
                rho.append(spearmanr(pred[sel], meas[sel]).correlation)
            print(f"  {form:7s} {mode:21s} within 20% {np.mean(np.abs(pred / meas - 1) < 0.2):.0%}"
                  f", Spearman at least 0.9 on {sum(x >= 0.9 for x in rho)} of {len(progs)}"
                  f", mean {np.mean(rho):.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="See the module docstring for an example.")
    ap.add_argument("--machine", required=True, help="the machine file the runs used")
    ap.add_argument("--learn-data", help="measurements.csv of `learn --keep-data`")
    ap.add_argument("--bench", nargs="*", default=[], help="`absinthe bench --format json` outputs")
    ap.add_argument("--programs", nargs="*", default=["configs"],
                    help="directories holding the benched programs, NAME.yaml for NAME.json")
    ap.add_argument("--absinthe", default="target/release/absinthe")
    a = ap.parse_args()
    if not a.learn_data and not a.bench:
        sys.exit("error: give --learn-data, --bench or both")
    with tempfile.TemporaryDirectory() as work:
        if a.learn_data:
            learn_family(a, work)
        if a.bench:
            bench_forms(a, bench_rows(a, work))


if __name__ == "__main__":
    main()
