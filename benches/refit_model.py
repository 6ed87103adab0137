#!/usr/bin/env python3
"""How far the model's form can go on real programs: refit its parameters to measured times.

Reads `absinthe bench --format json` outputs (each row carries the model's counts per stencil,
`model`) and the machine file whose `params` predicted them, and prints per program the Spearman
rank correlation and the share of variants predicted within 20% of measured:

- `learned`: the machine file's parameters (what `bench` reports);
- `in-sample`: the eight parameters refitted to these measurements themselves (least squares
  of log(predicted / measured), non-negative), with per stencil `max(fast, slow)`, or
  `max + THETA min` (partial overlap) for each `--theta`, and `sum` (no overlap). This is the
  best any training design could give this form on these programs;
- `leave one out`: fitted on the other programs, scored on the one left out;
- `fit on --fit-on`: fitted to other programs' measurements (`--fit-on JSON`), scored on
  these.

Example (needs numpy, scipy and pyyaml: `python3 -m venv V && V/bin/pip install numpy scipy pyyaml`):

    for P in hdiff heat4 chain8 cosmo_hdiff4 cosmo_adv5 cosmo_pgrad; do
      absinthe bench configs/$P.yaml --machine m.yaml --variants opt,random:32 \
          --runs 32 --no-roofline --format json > $P.json
    done
    V/bin/python benches/refit_model.py --machine m.yaml *.json
"""

import argparse
import json
import os
import sys

import numpy as np
import yaml
from scipy.optimize import least_squares
from scipy.stats import spearmanr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_forms import bench_rows  # noqa: E402

PARTS = ("fast", "slow_base", "slow_stream", "compute")
TERMS = ("peel", "body")


def load_rows(path, vector=4):
    """(program, variant, counts [stencils x 8], overhead count, measured, row streams, misses
    per cache level or None, row terms for `vector`-wide SIMD or None) of a bench JSON."""
    rows = bench_rows(path)
    out = []
    for k, r in enumerate(rows):
        if not r.get("measured_seconds"):
            continue
        if "model" not in r:
            sys.exit(f"error: {path}: row {k} ({r.get('variant')}) has no `model` counts "
                     "(an absinthe older than the field?)")
        model = r["model"]
        counts = np.array([[s["counts"][p][t] for p in PARTS for t in TERMS]
                           for s in model["stencils"]], float)
        name = os.path.basename(path).removesuffix(".json")
        misses = (np.array([lv["compulsory_sa"] + lv["capacity_sa"] for lv in r["cache"]], float)
                  if r.get("cache") else None)
        out.append((name, r["variant"], counts, float(sum(model["overhead"])),
                    r["measured_seconds"], row_streams(r), misses, row_terms(r, vector)))
    return out


def row_terms(r, vector):
    """Per stencil, three counts of the work a row costs whatever its cells: its rows (the
    group's x tiles times the domain's rows: `n^x D^y D^z`), those rows times the cells left
    over by `vector`-wide SIMD iterations (its mean row length, widths included, is its fast
    body count over its fast peel count), and the rows shorter than one vector. None where the
    JSON lacks `model.domain`."""
    model = r["model"]
    if "domain" not in model:
        return None
    dom = model["domain"]
    out = []
    for s in model["stencils"]:
        fast = s["counts"]["fast"]
        if not fast["peel"]:
            out.append([0.0, 0.0, 0.0])
            continue
        length = fast["body"] / fast["peel"]
        rows = r["tiles"][s["group"]][0] * dom[1] * dom[2]
        out.append([rows, rows * (round(length) % vector), rows * (length < vector)])
    return np.array(out, float)


def row_streams(r):
    """Per stencil, the row streams its group's sweep keeps in flight, as `cost::crowded`
    counts them: the group's stream weight `s` (arrays streamed, a store twice) times the rows
    of one tile step that do not continue each other in memory: the tile's planes when its rows
    span the domain's x (a plane's rows are then contiguous), else its rows times its planes,
    streamed or not. None where the JSON lacks the fields (an older absinthe)."""
    model = r["model"]
    if "domain" not in model:
        return None
    dom = model["domain"]
    stencils = model["stencils"]
    weight = {}
    for s in stencils:
        weight[s["group"]] = weight.get(s["group"], 0) + s["stream_weights"][0]
    per_group = {}
    for g, tiles in enumerate(r["tiles"]):
        size = [dom[d] / tiles[d] for d in range(3)]
        if tiles[0] == 1:
            rows = size[2]
        else:
            rows = size[1] * size[2]
        per_group[g] = weight.get(g, 0) * rows
    return np.array([per_group[s["group"]] for s in stencils], float)


def machine_params(path):
    """The eight parameters, and the crowding limit and charge (`params.crowded`; 0, 0.0 when
    absent)."""
    try:
        with open(path) as f:
            p = yaml.safe_load(f)["params"]
    except (OSError, KeyError, TypeError, yaml.YAMLError) as e:
        sys.exit(f"error: {path}: no `params` ({e})")
    crowded = p.get("crowded") or {}
    return (np.array([float(p.get(part, {}).get(t, 0.0)) for part in PARTS for t in TERMS]),
            int(crowded.get("row_streams", 0)), float(crowded.get("stream_body", 0.0)))


def predict(p, row, form):
    """The model's seconds: `form` is ('max', theta), ('sum',), ('streams', S): `max` with a
    ninth parameter `p[8]` per stream-body access of every stencil whose group keeps more than
    `S` row streams in flight ([`row_streams`]), or ('misses', 0): `max` plus a cost per
    set-associative miss at each cache level (`absinthe cache`'s counts, the row's `cache`),
    `p[8:]`, or ('rows', 0): `max` plus a cost per row, per cell left over by the SIMD
    iterations and per row shorter than a vector ([`row_terms`]), `p[8:11]`."""
    _, _, c, overhead, _, streams, misses, rows = row
    total = 0.0
    for t in (0, 1):
        fast = c[:, 0 + t] * p[0 + t] + c[:, 6 + t] * p[6 + t]
        slow = c[:, 2 + t] * p[2 + t] + c[:, 4 + t] * p[4 + t]
        if form[0] == "streams" and t == 1:
            slow = slow + (streams > form[1]) * c[:, 5] * p[8]
        if form[0] == "sum":
            total += (fast + slow).sum()
        elif form[0] == "streams":
            total += np.maximum(fast, slow).sum()
        else:
            total += np.maximum(fast, slow).sum() + form[1] * np.minimum(fast, slow).sum()
    if form[0] == "misses":
        total += float(np.dot(p[8:8 + len(misses)], misses))
    if form[0] == "rows":
        total += float(np.dot(p[8:11], rows.sum(axis=0)))
    return total + overhead * (p[3] + p[5])


def param_names(fit_name, n):
    """The names of a fit's `n` parameters: the eight parts, then the crowded stream body, one
    cost per cache level's misses, or the three row terms."""
    base = [f"{x}.{t}" for x in PARTS for t in TERMS]
    if "misses" in fit_name:
        extra = [f"misses.level{k + 1}" for k in range(n - 8)]
    elif "rows" in fit_name:
        extra = ["rows", "rows.leftover_cells", "rows.short"]
    else:
        extra = ["streams.body"]
    return (base + extra)[:n]


def fit(rows, form, start):
    scale = np.maximum(start, 1e-13)

    def residuals(q):
        return np.array([np.log(max(predict(q * scale, r, form), 1e-300) / r[4]) for r in rows])

    q = least_squares(residuals, np.ones(len(start)), bounds=(0, np.inf)).x
    return q * scale


def score(p, rows, form):
    """Per program (Spearman, share within 20%), and the share within 20% over all rows."""
    per, within = {}, []
    for prog in dict.fromkeys(r[0] for r in rows):
        rr = [r for r in rows if r[0] == prog]
        pred = np.array([predict(p, r, form) for r in rr])
        meas = np.array([r[4] for r in rr])
        w = np.abs(pred / meas - 1) < 0.2
        within += list(w)
        rho = spearmanr(pred, meas).correlation if len(rr) > 2 else float("nan")
        per[prog] = (rho, float(w.mean()))
    return per, float(np.mean(within))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="See the module docstring for an example.")
    ap.add_argument("json", nargs="+", help="outputs of `absinthe bench --format json`")
    ap.add_argument("--machine", required=True, help="the machine file the bench runs used")
    ap.add_argument("--theta", type=float, action="append", default=None,
                    help="partial-overlap weights to try (default: 0, 0.3, 0.6)")
    ap.add_argument("--streams-above", type=int, action="append", default=[], metavar="S",
                    help="also fit a ninth parameter: the stream body of groups whose sweep keeps "
                         "more than S row streams in flight costs it on top (repeatable)")
    ap.add_argument("--misses", action="store_true",
                    help="also fit a cost per set-associative miss at each cache level on top of "
                         "the max form (the rows' `cache` counts)")
    ap.add_argument("--row-terms", action="store_true",
                    help="also fit a cost per row, per cell SIMD iterations leave over and per row "
                         "shorter than a vector on top of the max form")
    ap.add_argument("--vector", type=int, default=4,
                    help="values per SIMD iteration for --row-terms (default 4: GCC's preferred "
                         "256-bit vectors of doubles)")
    ap.add_argument("--fit-on", action="append", default=[], metavar="JSON",
                    help="also fit each form to these programs' measurements (bench JSON, "
                         "repeatable) and score it on the positional ones: would these kernels "
                         "train the model for those?")
    ap.add_argument("--format", choices=("table", "json"), default="table")
    a = ap.parse_args()
    if a.vector < 1:
        sys.exit(f"error: --vector: {a.vector}: need at least 1")
    rows = [r for path in a.json for r in load_rows(path, a.vector)]
    if not rows:
        sys.exit("error: no measured rows")
    others = [r for path in a.fit_on for r in load_rows(path, a.vector)]
    learned, limit, charge = machine_params(a.machine)
    with open(a.machine) as f:
        exposed = float((yaml.safe_load(f).get("params") or {}).get("exposed", 0.0))
    if exposed > 0:
        print(f"note: {a.machine} has params.exposed {exposed:g}; the `learned` row prices "
              "with the plain max (the in-sample max+THETA rows fit the share)", file=sys.stderr)
    if charge > 0 and any(r[5] is None for r in rows):
        sys.exit("error: the machine charges crowding; its prediction needs `model.domain` and "
                 "`stream_weights` in the JSON (re-run the bench with this absinthe)")
    if charge > 0:
        p = np.append(learned, charge)
        results = [("learned", score(p, rows, ("streams", limit)), p)]
    else:
        results = [("learned", score(learned, rows, ("max", 0.0)), learned)]
    for theta in a.theta or [0.0, 0.3, 0.6]:
        p = fit(rows, ("max", theta), learned)
        results.append((f"in-sample max+{theta:g}min", score(p, rows, ("max", theta)), p))
    p = fit(rows, ("sum",), learned)
    results.append(("in-sample sum", score(p, rows, ("sum",)), p))
    if a.streams_above and any(r[5] is None for r in rows + others):
        sys.exit("error: --streams-above needs `model.domain` and `stream_weights` in the JSON "
                 "(re-run the bench with this absinthe)")
    forms = [("max", ("max", 0.0), learned)]
    if a.misses:
        if any(r[6] is None for r in rows + others):
            sys.exit("error: --misses needs every row's `cache` counts (a bench with cache levels)")
        form, start = ("misses", 0.0), np.append(learned, np.full(len(rows[0][6]), 1e-10))
        p = fit(rows, form, start)
        results.append(("in-sample max+misses", score(p, rows, form), p))
        forms.append(("max+misses", form, start))
    if a.row_terms:
        if any(r[7] is None for r in rows + others):
            sys.exit("error: --row-terms needs `model.domain` in the JSON (re-run the bench with "
                     "this absinthe)")
        form, start = ("rows", 0.0), np.append(learned, np.full(3, 1e-10))
        p = fit(rows, form, start)
        results.append(("in-sample max+rows", score(p, rows, form), p))
        forms.append(("max+rows", form, start))
    for limit in a.streams_above:
        form = ("streams", limit)
        start = np.append(learned, max(learned[5], 1e-13))
        p = fit(rows, form, start)
        results.append((f"in-sample streams>{limit}", score(p, rows, form), p))
        forms.append((f"streams>{limit}", form, start))
    if others:
        for label, form, start in forms:
            p = fit(others, form, start)
            results.append((f"fit on --fit-on, {label}", score(p, rows, form), p))
    programs = list(dict.fromkeys(r[0] for r in rows))
    if len(programs) > 1:
        for label, form, start in forms:
            per, within = {}, []
            for prog in programs:
                train = [r for r in rows if r[0] != prog]
                test = [r for r in rows if r[0] == prog]
                p = fit(train, form, start)
                s, _ = score(p, test, form)
                per[prog] = s[prog]
                within += [abs(predict(p, r, form) / r[4] - 1) < 0.2 for r in test]
            results.append((f"leave one out, {label}", (per, float(np.mean(within))), None))
    if a.format == "json":
        print(json.dumps([{"fit": name, "within_20": w,
                           "programs": {k: {"spearman": v[0], "within_20": v[1]}
                                        for k, v in per.items()},
                           "params": None if p is None else dict(
                               zip(param_names(name, len(p)), p.tolist()))}
                          for name, (per, w), p in results], indent=1))
        return
    print(f"{len(rows)} variants; per program: Spearman / share within 20%")
    for name, (per, w), _ in results:
        cells = "  ".join(f"{k}: {v[0]:.2f} / {100 * v[1]:.0f}%" for k, v in per.items())
        print(f"{name:27} all: {100 * w:.0f}% within 20%   {cells}")


if __name__ == "__main__":
    main()
