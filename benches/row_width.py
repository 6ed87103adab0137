#!/usr/bin/env python3
"""A program's buffered producers against the same producers inlined, at several row widths of
equal volume and at several cache residencies (docs/RESULTS.md, "The suite": the model prices
the two independently of the row width, and the measured ratio is not).

For each number of planes and each row width W, the program runs on a domain of W x (cells/W)
x planes, in two configurations that differ only in inlining:
  buffered  nothing inlined (`solve --no-inline`),
  inlined   every stencil that is not an output inlined (`solve --inline ...`),
in the same tiles (`--tiles`, default 1,1,2), the buffered one in one group, the inlined one
grouped by the solver (one group where the program has one output). Each group streams where its whole
tiles fail the cache test, as `bench` decides; `--cache-fraction` lowers the share of the cache a
tile may fill, so that small domains stream too. `bench` times the two side by side, in
`--rounds` rounds that alternate their order, with the arrays flushed as `--flush` and
`--flush-bytes` say (`--flush read --flush-bytes 0`: kept in cache between runs). Printed per
row: each round's buffered and inlined medians and their ratio, and per number of planes the
ratio at the widest row over the ratio at the narrowest.

  python3 benches/row_width.py --machine M --family upwind3 --seed 1 --planes 4,8,60
  python3 benches/row_width.py --machine M --program configs/cosmo_adv5.yaml --widths 64,128,256
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_peers import FAMILIES, generated, with_domain  # noqa: E402  (beside this file)


def domains(widths, cells, planes):
    """[W, cells / W, planes] for each width W; every width must divide `cells`."""
    bad = [w for w in widths if w <= 0 or cells % w]
    if bad:
        raise ValueError(f"a row width of {bad[0]} does not divide {cells} cells per plane")
    return [[w, cells // w, planes] for w in widths]


def geometric_mean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


def width_factors(rows):
    """Per number of planes, the mean ratio at the widest row over that at the narrowest."""
    factors = {}
    for planes in sorted({r["planes"] for r in rows}):
        mine = sorted((r for r in rows if r["planes"] == planes), key=lambda r: r["width"])
        if len(mine) > 1:
            factors[planes] = geometric_mean(mine[-1]["ratios"]) / geometric_mean(mine[0]["ratios"])
    return factors


def run(cmd):
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)}\n{p.stderr.strip()}")
    return p.stdout


def measure(args, exe, text, domain, work):
    """One row: the two configurations of `text` on `domain`, timed in `args.rounds` rounds."""
    name = f"{args.name}_{domain[0]}x{domain[1]}x{domain[2]}"
    path = os.path.join(work, f"{name}.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(with_domain(text, name, domain))
    machine = ["--machine", args.machine]
    if args.cache_fraction:
        machine += ["--cache-fraction", args.cache_fraction]
    common = machine + ["--tiles-min", args.tiles, "--tiles-max", args.tiles]
    plain = json.loads(run([exe, "solve", path, "--no-inline", "--format", "json"] + common))
    outputs = {s for s, v in plain["stencils"].items() if v["store"]}
    producers = [s for s in plain["stencils"] if s not in outputs]
    if not producers:
        sys.exit(f"error: {args.name}: every stencil is an output; nothing to inline")
    one_group = ["--fix-groups", ",".join(["0"] * len(plain["stencils"]))]
    solutions = {}
    # Inlined, the groups are the solver's (`--inline` takes no fixed groups): one group where
    # the program has one output.
    for kind, flags in (("buffered", ["--no-inline"] + one_group),
                        ("inlined", ["--inline", ",".join(producers)])):
        solutions[kind] = os.path.join(work, f"{name}.{kind}.yaml")
        run([exe, "solve", path, "-o", solutions[kind]] + flags + common)
    times = {"buffered": [], "inlined": []}
    schedules = {}
    for r in range(args.rounds):
        order = ["buffered", "inlined"] if r % 2 == 0 else ["inlined", "buffered"]
        cmd = [exe, "bench", path, "--variants", ",".join(f"solution:{solutions[k]}" for k in order),
               "--runs", str(args.runs), "--flush", args.flush, "--no-roofline", "--format", "json"]
        cmd += (["--flush-bytes", args.flush_bytes] if args.flush_bytes is not None else [])
        cmd += (["--relaxed-math"] if args.relaxed_math else [])
        for row, kind in zip(json.loads(run(cmd + machine)), order):
            if not row.get("verified"):
                sys.exit(f"error: {name} {kind}: not verified")
            times[kind].append(row["measured_seconds"])
            schedules[kind] = row["schedule"]
    ratios = [b / i for b, i in zip(times["buffered"], times["inlined"])]
    return {"planes": domain[2], "width": domain[0], "domain": domain, "inlined": producers,
            "buffered_seconds": times["buffered"], "inlined_seconds": times["inlined"],
            "ratios": ratios, "schedules": schedules}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--machine", required=True, help="machine file")
    ap.add_argument("--program", help="a program file (its stencils; its domain is replaced)")
    ap.add_argument("--family", default="upwind3", help="a generated family of benches/bench_peers.py (default upwind3)")
    ap.add_argument("--seed", type=int, default=1, help="the family's seed (default 1)")
    ap.add_argument("--widths", default="64,256", help="row widths, comma-separated (default 64,256)")
    ap.add_argument("--cells", type=int, default=16384, help="cells per plane (default 16384: 64x256 and 256x64)")
    ap.add_argument("--planes", default="4,8,60", help="planes, comma-separated (default 4,8,60)")
    ap.add_argument("--tiles", default="1,1,2", help="tile counts of the one group (default 1,1,2)")
    ap.add_argument("--cache-fraction", help="passed to solve and bench (default: the machine file's)")
    ap.add_argument("--runs", type=int, default=64, help="timed runs per configuration and round (default 64)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds, alternating the order (default 2)")
    ap.add_argument("--flush", default="read", help="bench --flush (default read)")
    ap.add_argument("--flush-bytes", help="bench --flush-bytes (0: the arrays stay in cache between runs)")
    ap.add_argument("--relaxed-math", action="store_true", help="time the relaxed-math build (as the Halide peer does)")
    ap.add_argument("--format", choices=["table", "json"], default="table")
    args = ap.parse_args(argv)
    exe = os.environ.get("ABSINTHE_BIN", os.path.join(REPO, "target", "release", "absinthe"))
    if args.program:
        with open(args.program, encoding="utf-8") as f:
            text = f.read()
        args.name = os.path.basename(args.program).removesuffix(".yaml")
    else:
        if args.family not in FAMILIES:
            sys.exit(f"error: --family: one of {', '.join(FAMILIES)}")
        text, args.name = generated(args.family, args.seed, 64), f"{args.family}{args.seed}"
    try:
        widths = [int(w) for w in args.widths.split(",")]
        planes = [int(p) for p in args.planes.split(",")]
        shapes = [d for p in planes for d in domains(widths, args.cells, p)]
    except ValueError as e:
        sys.exit(f"error: {e}")
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for domain in shapes:
            print(f"timing {args.name} at {domain[0]}x{domain[1]}x{domain[2]} ...", file=sys.stderr, flush=True)
            rows.append(measure(args, exe, text, domain, work))
    factors = width_factors(rows)
    if args.format == "json":
        print(json.dumps({"program": args.name, "rows": rows,
                          "width_factors": {str(k): v for k, v in factors.items()}}, indent=1))
        return 0
    ms = lambda xs: ", ".join(f"{x * 1e3:.4g}" for x in xs)
    print(f"{args.name}: nothing inlined (buffered) against {', '.join(rows[0]['inlined'])} inlined (inlined)")
    print(f"{'domain':<14} {'buffered ms':<22} {'inlined ms':<22} {'buffered / inlined':<20} schedules")
    for r in rows:
        d = "x".join(map(str, r["domain"]))
        ratios = ", ".join(f"{x:.2f}" for x in r["ratios"])
        print(f"{d:<14} {ms(r['buffered_seconds']):<22} {ms(r['inlined_seconds']):<22} {ratios:<20} "
              + " / ".join(r["schedules"][k] for k in ("buffered", "inlined")))
    for p, f in factors.items():
        print(f"{p} planes: the ratio at {max(widths)}-wide rows over {min(widths)}-wide: {f:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
