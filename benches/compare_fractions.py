#!/usr/bin/env python3
"""Two cache fractions side by side: the model's optimum under each, timed in one run.

For each program, `absinthe solve --cache-fraction F` writes the optimum under each of the two
fractions (`--fractions A,B`). Where the two optima differ, one `absinthe bench` run times them
alternately, `--rounds` times each (`solution:A,solution:B,solution:A,...`, every row
verified), and the script prints per program both optima, the geometric mean of each one's
medians, and their ratio (A over B: above 1, B's optimum ran faster). Programs whose optima
are the same under both fractions are listed and not timed. At the end: the geometric mean and
the range of the ratios, and how many programs each fraction's optimum won by more than 2%.

    python3 benches/compare_fractions.py --machine M --fractions 0.5,1 configs/heat4.yaml ...

Standard library only.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOLERANCE = 0.02


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed:\n{p.stderr.strip()}")
    return p.stdout


def optimum(absinthe, program, machine, fraction, out):
    """Writes the optimum under `fraction` to `out`; returns its groups, tiles (`s`: streamed)
    and inline set."""
    text = run([absinthe, "solve", program, "--machine", machine, "--cache-fraction",
                str(fraction), "--format", "json", "-o", out])
    d = json.loads(text)
    tiles = " ".join("x".join(map(str, g["tiles"])) + ("s" if g.get("stream") else "")
                     for g in d["groups"])
    groups = "|".join(",".join(g["stencils"]) for g in d["groups"])
    return f"{tiles} [{groups}] inline {','.join(d.get('inline') or []) or '-'}"


def geometric_mean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("programs", nargs="+")
    ap.add_argument("--machine", required=True)
    ap.add_argument("--fractions", default="0.5,1", help="two fractions, A,B (default 0.5,1)")
    ap.add_argument("--rounds", type=int, default=3, help="times each optimum is timed")
    ap.add_argument("--runs", type=int, default=16, help="timed runs per row")
    ap.add_argument("--absinthe", default=os.path.join(REPO, "target", "release", "absinthe"))
    args = ap.parse_args()
    try:
        a, b = (float(f) for f in args.fractions.split(","))
    except ValueError:
        sys.exit(f"error: --fractions takes two numbers A,B, found {args.fractions!r}")
    if args.rounds < 1 or args.runs < 1:
        sys.exit("error: --rounds and --runs must be at least 1")
    ratios, wins = [], {a: 0, b: 0}
    with tempfile.TemporaryDirectory() as tmp:
        print(f"program | optimum at {a:g} | optimum at {b:g} | {a:g} (ms) | {b:g} (ms) | ratio")
        for program in args.programs:
            name = os.path.splitext(os.path.basename(program))[0]
            sols = [os.path.join(tmp, f"{name}.{i}.yaml") for i in range(2)]
            desc = [optimum(args.absinthe, program, args.machine, f, s)
                    for f, s in zip((a, b), sols)]
            if desc[0] == desc[1]:
                print(f"{name} | {desc[0]} | same | - | - | -")
                continue
            variants = ",".join(f"solution:{sols[i % 2]}" for i in range(2 * args.rounds))
            rows = json.loads(run([args.absinthe, "bench", program, "--machine", args.machine,
                                   "--variants", variants, "--runs", str(args.runs),
                                   "--no-roofline", "--format", "json"]))
            times = [[], []]
            for i, row in enumerate(rows):
                if row.get("status") != "ok" or not row.get("measured_seconds"):
                    sys.exit(f"error: {name}: row {i} did not run: {row.get('status')}")
                times[i % 2].append(row["measured_seconds"])
            ga, gb = geometric_mean(times[0]), geometric_mean(times[1])
            ratio = ga / gb
            ratios.append(ratio)
            if ratio > 1 + TOLERANCE:
                wins[b] += 1
            elif ratio < 1 / (1 + TOLERANCE):
                wins[a] += 1
            print(f"{name} | {desc[0]} | {desc[1]} | {ga * 1e3:.3f} | {gb * 1e3:.3f} | {ratio:.3f}",
                  flush=True)
    if ratios:
        print(f"timed {len(ratios)} program(s): ratio {a:g}/{b:g} geometric mean "
              f"{geometric_mean(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}; "
              f"faster by over 2%: {a:g} on {wins[a]}, {b:g} on {wins[b]}")


if __name__ == "__main__":
    main()
