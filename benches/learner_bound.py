#!/usr/bin/env python3
"""How much any form of the model could gain from the counts and the misses: a flexible learner
(gradient-boosted trees) trained on bench rows, scored with one program left out.

Each row of `absinthe bench --format json` carries the model's counts per stencil (`model`), the
cache model's misses per level (`cache`) and the measured time. Per row the features are, per
cell of the domain: the counts of each part (fast, slow base, slow stream, compute; peel and
body) summed over the stencils, the loop overheads, the accesses and the set-associative misses
at each level; and the groups, the streamed groups, the tiles, the cells and the model's own
prediction. The target is log(measured seconds per cell).

For each program in turn the learner is fitted on the other programs' rows and predicts the
left-out program's; the script prints the share of all rows predicted within 20% and, per
program, Spearman's rank correlation, for the learned model itself and for each learner setting
(with and without the misses among the features). The learner's settings are chosen after seeing
the scores, so the best of them is an optimistic bound on what these features transfer to a
program not trained on.

Needs numpy, scipy and scikit-learn, e.g. `python3 -m venv V && V/bin/pip install numpy scipy
scikit-learn`:

    V/bin/python benches/learner_bound.py build/acc/*.json
"""

import argparse
import json
import math
import sys

import numpy as np
from scipy.stats import spearmanr
from sklearn.ensemble import GradientBoostingRegressor

PARTS = ("fast", "slow_base", "slow_stream", "compute")
TERMS = ("peel", "body")


def features(r, misses):
    """The row's features (see the module docstring); `misses`: include the cache model's."""
    model = r["model"]
    dom = model["domain"]
    cells = float(dom[0] * dom[1] * dom[2])
    counts = np.array([[s["counts"][p][t] for p in PARTS for t in TERMS]
                       for s in model["stencils"]], float).sum(axis=0) / cells
    out = list(np.log1p(counts))
    out.append(math.log1p(sum(model["overhead"]) / cells))
    if misses:
        out += [math.log1p((lv["compulsory_sa"] + lv["capacity_sa"]) / cells) for lv in r["cache"]]
        out.append(math.log1p(r["cache"][0]["accesses"] / cells))
    streamed = len([g for g in (r.get("stream") or []) if g is not None])
    tiles = sum(float(np.prod(t)) for t in r["tiles"])
    out += [len(r["tiles"]), streamed, math.log(tiles), math.log(cells),
            math.log(r["predicted_seconds"] / cells)]
    return out, cells


def load(paths):
    rows = []
    for path in paths:
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            sys.exit(f"error: {path}: {e}")
        name = path.rsplit("/", 1)[-1].removesuffix(".json")
        for k, r in enumerate(data):
            if not (r.get("verified") and r.get("measured_seconds") and r.get("predicted_seconds")):
                continue
            if "model" not in r or "domain" not in r["model"] or not r.get("cache"):
                sys.exit(f"error: {path}: row {k} ({r.get('variant')}) lacks `model.domain` or "
                         "`cache` (a bench with cache levels, by an absinthe that has both)")
            rows.append((name, r))
    if not rows:
        sys.exit("error: no verified, measured rows")
    return rows


def scores(prog, y, yp):
    within = float(np.mean(np.abs(np.exp(yp - y) - 1) <= 0.2))
    rho = {p: spearmanr(yp[prog == p], y[prog == p]).correlation for p in sorted(set(prog))}
    return within, rho


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="See the module docstring for the features and an example.")
    ap.add_argument("json", nargs="+", help="outputs of `absinthe bench --format json`")
    ap.add_argument("--format", choices=("table", "json"), default="table")
    a = ap.parse_args()
    rows = load(a.json)
    prog = np.array([n for n, _ in rows])
    if len(set(prog)) < 2:
        sys.exit("error: need rows of at least two programs to leave one out")
    results = []
    y = np.array([math.log(r["measured_seconds"] / features(r, False)[1]) for _, r in rows])
    model = np.array([math.log(r["predicted_seconds"] / features(r, False)[1]) for _, r in rows])
    results.append(("learned model", *scores(prog, y, model)))
    for misses in (False, True):
        x = np.array([features(r, misses)[0] for _, r in rows])
        for depth, trees in ((2, 200), (3, 300), (4, 300)):
            yp = np.zeros_like(y)
            for p in sorted(set(prog)):
                out = prog == p
                g = GradientBoostingRegressor(n_estimators=trees, max_depth=depth,
                                              learning_rate=0.05, subsample=0.8, random_state=0)
                g.fit(x[~out], y[~out])
                yp[out] = g.predict(x[out])
            name = f"trees depth {depth} x{trees}, {'with' if misses else 'without'} misses"
            results.append((name, *scores(prog, y, yp)))
    if a.format == "json":
        print(json.dumps([{"fit": n, "within_20": w, "spearman": rho} for n, w, rho in results],
                         indent=1))
        return
    print(f"{len(rows)} rows of {len(set(prog))} programs, each program left out in turn")
    print("| fit | within 20% | Spearman >= 0.9 | mean Spearman |")
    print("|---|---|---|---|")
    for n, w, rho in results:
        good = sum(v >= 0.9 for v in rho.values())
        print(f"| {n} | {w:.0%} | {good} of {len(rho)} | {np.mean(list(rho.values())):.3f} |")


if __name__ == "__main__":
    main()
