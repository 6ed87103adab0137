#!/usr/bin/env python3
"""The forms of the model side by side on the same timed runs (`make bench-model-forms`).

For each program: `absinthe solve --model absinthe` with the published form's machine file
(`learn --model absinthe`) gives that form's optimum; one `absinthe bench` run with the default
form's file times the default optimum (`opt`), `random:N` configurations drawn from the default
form's space and the published form's optimum (`solution:FILE`), every row verified. Each
row's JSON carries the model's counts per stencil, from which this script prices the row in the
published form exactly (its stream counts are the default's less each store's second count,
which equals the stencil's base count; no compute part, no crowding charge). It prints per
program and form: the share of rows predicted within 20% of measured time, the Spearman rank
correlation, and the measured time of the form's optimum against the fastest row. With
`--grid` the same run also times the original work's exhaustive auto-tuning grid (`autotune`:
every tiling of a ladder, for the default optimum's groups), and each form's optimum is held
against the grid's fastest row; the accuracy figures stay over the other rows.

    python3 benches/model_forms.py --linear build/demo/machine.yaml \\
        --absinthe build/demo/absinthe.yaml configs/hdiff.yaml configs/cosmo_adv5.yaml
"""

import argparse
import json
import math
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TERMS = ("peel", "body")


def machine_params(path):
    """The published form's six parameters of a machine file: fast, slow_base, slow_stream."""
    try:
        import yaml
    except ImportError:
        sys.exit("error: PyYAML is needed (python3 -m pip install pyyaml)")
    try:
        with open(path) as f:
            p = yaml.safe_load(f)["params"]
    except (OSError, KeyError, TypeError, yaml.YAMLError) as e:
        sys.exit(f"error: {path}: no `params` ({e})")
    return {part: [float(p[part][t]) for t in TERMS] for part in ("fast", "slow_base", "slow_stream")}


def published_seconds(row, p):
    """The published form's seconds of a bench row, from its counts."""
    total = 0.0
    for s in row["model"]["stencils"]:
        c = s["counts"]
        for k, t in enumerate(TERMS):
            base = c["slow_base"][t]
            stream = c["slow_stream"][t] - (base if s["store"] else 0)
            fast = p["fast"][k] * c["fast"][t]
            slow = p["slow_base"][k] * base + p["slow_stream"][k] * stream
            total += max(fast, slow)
    overhead = sum(row["model"]["overhead"])
    return total + overhead * (p["slow_base"][1] + p["slow_stream"][1])


def bench_rows(path):
    """The rows of an `absinthe bench --format json` file; exits with the file named on error."""
    try:
        with open(path) as f:
            rows = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"error: {path}: {e}")
    if not isinstance(rows, list):
        sys.exit(f"error: {path}: not the output of `absinthe bench --format json`")
    return rows


def spearman(xs, ys):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r

    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    var = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return cov / var if var > 0 else float("nan")


def run(cmd):
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)}\n{p.stderr}")
    return p.stdout


def measure(exe, program, args, work):
    name = os.path.basename(program).removesuffix(".yaml")
    sol = os.path.join(work, f"{name}.absinthe.solution.yaml")
    run([exe, "solve", program, "--machine", args.absinthe, "--model", "absinthe", "-o", sol])
    out = run([exe, "bench", program, "--machine", args.linear, "--model", "linear",
               "--variants", f"opt,random:{args.random},solution:{sol}" + (",autotune" if args.grid else ""),
               "--runs", str(args.runs), "--no-roofline", "--format", "json"])
    with open(os.path.join(work, f"{name}.bench.json"), "w") as f:
        f.write(out)
    rows = [r for r in json.loads(out) if r.get("measured_seconds") and r.get("verified")]
    if not rows:
        sys.exit(f"error: {program}: no verified row")
    return name, rows


def score(name, rows, p):
    grid = [r["measured_seconds"] for r in rows if r["variant"].startswith("tune")]
    rows = [r for r in rows if not r["variant"].startswith("tune")]
    measured = [r["measured_seconds"] for r in rows]
    fastest = min(measured)
    forms = {
        "linear": ([r["predicted_seconds"] for r in rows], "opt"),
        "absinthe": ([published_seconds(r, p) for r in rows], "solution:"),
    }
    out = {"program": name, "rows": len(rows), "fastest_seconds": fastest}
    for form, (pred, optimum) in forms.items():
        within = sum(abs(a / m - 1) < 0.2 for a, m in zip(pred, measured)) / len(rows)
        opt = next(r["measured_seconds"] for r in rows if r["variant"].startswith(optimum))
        out[form] = {"within_20": within, "spearman": spearman(pred, measured),
                     "optimum_seconds": opt, "optimum_over_fastest": opt / fastest}
        if grid:
            out[form]["optimum_over_grid"] = opt / min(grid)
    if grid:
        out["grid_rows"], out["grid_fastest_seconds"] = len(grid), min(grid)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("programs", nargs="+", help="program files")
    ap.add_argument("--linear", required=True, help="machine file learned in the default form")
    ap.add_argument("--absinthe", required=True, help="machine file from `learn --model absinthe`")
    ap.add_argument("--random", type=int, default=16, help="random configurations (default 16)")
    ap.add_argument("--runs", type=int, default=16, help="timed runs per row (default 16)")
    ap.add_argument("--work", default=os.path.join(REPO, "build", "model-forms"),
                    help="where the solution files and each program's bench JSON go")
    ap.add_argument("--grid", action="store_true",
                    help="also time the auto-tuning grid and hold each optimum against its fastest")
    ap.add_argument("--format", choices=["table", "json"], default="table")
    args = ap.parse_args(argv)
    if args.random < 1 or args.runs < 1:
        sys.exit("error: --random and --runs must be at least 1")
    exe = os.path.join(REPO, "target", "release", "absinthe")
    if not os.access(exe, os.X_OK):
        sys.exit(f"error: {exe} is missing: run `cargo build --release` first")
    os.makedirs(args.work, exist_ok=True)
    p = machine_params(args.absinthe)
    results = []
    for program in args.programs:
        print(f"timing {program} ...", file=sys.stderr)
        results.append(score(*measure(exe, program, args, args.work), p))
    if args.format == "json":
        print(json.dumps(results, indent=2))
        return
    grid = " / grid's fastest |" if args.grid else ""
    print("| program | rows | form | within 20% | Spearman | its optimum | / fastest |" + grid)
    print("|---|---|---|---|---|---|---|" + ("---|" if args.grid else ""))
    for r in results:
        for form in ("linear", "absinthe"):
            f = r[form]
            g = f" {f['optimum_over_grid']:.3f} ({r['grid_rows']} rows) |" if args.grid else ""
            print(f"| {r['program']} | {r['rows']} | {form} | {f['within_20']:.0%} | "
                  f"{f['spearman']:.3f} | {f['optimum_seconds'] * 1e3:.3f} ms | "
                  f"{f['optimum_over_fastest']:.2f} |" + g)


if __name__ == "__main__":
    main()
