#!/usr/bin/env python3
"""Which variant each form of the model would pick among measured ones, and how fast it ran.

Reads `absinthe bench --format json` outputs (rows carry the model's counts, `model`) and the
machine file whose parameters to price them with. Per program, each form picks the variant it
predicts cheapest among those timed; the output is that variant's measured time over `opt`'s,
per program and as a geometric mean (and the fastest timed variant's, the best any pick can do):

- `max`: the default form with the file's parameters as they are (its pick is `opt` when `opt`
  was solved with the same file);
- `theta T`: each term `max(fast, slow) + T min(fast, slow)` (`params.exposed` = T);
- `sum`: `fast + slow`;
- `cout T`: the compute part outside the `max`, `max(memory, slow) + T compute + (1 - T) x`
  where `x` is what of the compute the slow side does not cover.

Example (numpy and scipy: `build/halide-venv/bin/python` has them):

    for P in build/suite64/*.yaml; do
      absinthe bench $P --machine m.yaml --variants opt,noinline,sets:4 --runs 12 \\
          --no-roofline --format json > $(basename $P .yaml).json
    done
    build/halide-venv/bin/python benches/rerank_forms.py --machine m.yaml *.json
"""

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from refit_model import load_rows, machine_params  # noqa: E402


def predict(params, row, form, t):
    """The seconds `form` (with its share `t`) gives one bench row."""
    p, limit, q = params
    _, _, c, overhead, _, streams, _, _ = row
    total = overhead * (p[3] + p[5])
    for term in (0, 1):
        memory = c[:, 0 + term] * p[0 + term]
        compute = c[:, 6 + term] * p[6 + term]
        slow = c[:, 2 + term] * p[2 + term] + c[:, 4 + term] * p[4 + term]
        if term == 1 and streams is not None:
            slow = slow + (streams > limit) * c[:, 5] * q
        fast = memory + compute
        if form == "max":
            total += np.maximum(fast, slow).sum()
        elif form == "theta":
            total += (np.maximum(fast, slow) + t * np.minimum(fast, slow)).sum()
        elif form == "sum":
            total += (fast + slow).sum()
        elif form == "cout":
            covered = np.maximum(0, slow - memory)
            total += (np.maximum(memory, slow) + t * compute
                      + (1 - t) * np.maximum(0, compute - covered)).sum()
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--machine", required=True, help="the machine file whose params price the rows")
    ap.add_argument("--theta", default="0.0625,0.125,0.25,0.5", help="shares to try, comma-separated")
    ap.add_argument("json", nargs="+", help="bench --format json outputs, one program each")
    args = ap.parse_args()
    params = machine_params(args.machine)
    thetas = [float(x) for x in args.theta.split(",") if x]
    forms = [("max", 0.0)] + [("theta", t) for t in thetas] + [("sum", 0.0), ("cout", 1.0)]
    logs = {f: [] for f in forms}
    best_logs = []
    for path in args.json:
        rows = load_rows(path)
        opt = [r for r in rows if r[1] == "opt"]
        if not opt:
            print(f"{path}: no `opt` row, skipped", file=sys.stderr)
            continue
        t_opt = opt[0][4]
        line = f"{os.path.basename(path).removesuffix('.json'):<18}"
        for f in forms:
            pick = min(rows, key=lambda r: predict(params, r, *f))
            logs[f].append(math.log(pick[4] / t_opt))
            label = f[0] + (f" {f[1]:g}" if f[0] in ("theta", "cout") else "")
            line += f"  {label}: {pick[1]} {pick[4] / t_opt:.3f}"
        best = min(r[4] for r in rows)
        best_logs.append(math.log(best / t_opt))
        print(line + f"  fastest timed {best / t_opt:.3f}")
    if not best_logs:
        sys.exit("error: no program with an `opt` row")
    summary = ", ".join(
        (f[0] + (f" {f[1]:g}" if f[0] in ("theta", "cout") else "")) + f" {math.exp(np.mean(v)):.3f}"
        for f, v in logs.items())
    print(f"geometric mean of pick/opt over {len(best_logs)}: {summary}; "
          f"fastest timed {math.exp(np.mean(best_logs)):.3f}")


if __name__ == "__main__":
    main()
