#!/usr/bin/env python3
"""absinthe's `opt` against its peers on a suite of programs (`make bench-peers`).

The suite is the shipped COSMO-like programs plus programs generated from seeded families of
the operators horizontal and vertical dynamical-core kernels are made of, so that results are
not only those of the programs the code was developed against:

  lapchain    u - c * lap^n(u), n = 2..4 (iterated five-point Laplacians)
  limited     flux-limited fourth-order diffusion of 1..4 fields (COSMO's hdiff shape)
  upwind3     third-order upwind advection of 1..2 tracers by (u, v)
  upwind5     fifth-order upwind advection of 1..2 tracers by (u, v)
  vertical    explicit vertical diffusion and upwind vertical advection along k

Each family's coefficients and shape are drawn from its seed; the same seed gives the same
program. Each program runs at every size asked for (`--sizes`, default 64 and 256: 64x64x60 and
256x256x60), through benches/halide_peer.py (Halide's autoschedulers) and benches/gt4py_peer.py
(GT4Py's CPU backends), each of which times absinthe's variants beside its own rows in one run
and verifies every peer row against absinthe's outputs. This script prints, per program and
size, the best verified peer, its time and `opt`'s in the same run and their ratio (> 1: opt is
faster; the median of --rounds rounds' ratios, each round timing opt and the peer's rows back
to back; with both peers, the smaller of the two runs' ratios), then the geometric
mean and the worst ratio over every program run, with the CPU it ran on (`cpu` in --format
json). A program a peer cannot express (Halide: sweeps, intervals and 2-D stencils) is compared
with the other peer only. The table (Markdown) also gives each peer's best row and ratio and
`unfused / opt`; `--from-reports` runs nothing and prints it again from the reports a run kept
in --out-dir, with the CPU and floating-point rules that run recorded (suite.json).
"""

import argparse
import json
import math
import os
import platform
import random
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIPPED = ["cosmo_hdiff4", "cosmo_adv5", "cosmo_pgrad", "cosmo_smag", "cosmo_divdamp", "cosmo_hvdiff"]
FAMILIES = ["lapchain", "limited", "upwind3", "upwind5", "vertical"]


def _coefficient(rng, lo, hi):
    return f"{rng.uniform(lo, hi):.4f}"


def lapchain(rng):
    n = rng.randint(2, 4)
    lines = []
    prev = "u"
    for s in range(n):
        name = f"lap{s}"
        lines.append(f"  - name: {name}\n    expr: \"{prev}(i+1,j,k) + {prev}(i-1,j,k) + {prev}(i,j+1,k) "
                     f"+ {prev}(i,j-1,k) - 4.0 * {prev}(i,j,k)\"")
        prev = name
    c = _coefficient(rng, 0.01, 0.1)
    lines.append(f"  - name: out\n    expr: \"u(i,j,k) - {c} * {prev}(i,j,k)\"")
    return n, ["out"], lines


def limited(rng):
    fields = rng.sample(["u", "v", "w", "t"], rng.randint(1, 4))
    lines, outs = [], []
    for f in fields:
        lines += [
            f"  - name: lap_{f}\n    expr: \"{f}(i+1,j,k) + {f}(i-1,j,k) + {f}(i,j+1,k) + {f}(i,j-1,k) - 4.0 * {f}(i,j,k)\"",
            f"  - name: flx_{f}\n    let:\n      d: \"lap_{f}(i+1,j,k) - lap_{f}(i,j,k)\"\n"
            f"    expr: \"d * ({f}(i+1,j,k) - {f}(i,j,k)) > 0.0 ? 0.0 : d\"",
            f"  - name: fly_{f}\n    let:\n      d: \"lap_{f}(i,j+1,k) - lap_{f}(i,j,k)\"\n"
            f"    expr: \"d * ({f}(i,j+1,k) - {f}(i,j,k)) > 0.0 ? 0.0 : d\"",
            f"  - name: out_{f}\n    expr: \"{f}(i,j,k) - {_coefficient(rng, 0.01, 0.1)} * "
            f"(flx_{f}(i,j,k) - flx_{f}(i-1,j,k) + fly_{f}(i,j,k) - fly_{f}(i,j-1,k))\"",
        ]
        outs.append(f"out_{f}")
    return 2, outs, lines


def upwind(rng, order):
    tracers = ["q", "r"][:rng.randint(1, 2)]
    if order == 3:
        centre, diff, reach = "(7.0 * ({a1} + {a0}) - ({a2} + {am})) / 12.0", "(3.0 * ({a1} - {a0}) - ({a2} - {am})) / 12.0", 2
    else:
        centre = "(37.0 * ({a1} + {a0}) - 8.0 * ({a2} + {am}) + ({a3} + {am2})) / 60.0"
        diff = "(10.0 * ({a1} - {a0}) - 5.0 * ({a2} - {am}) + ({a3} - {am2})) / 60.0"
        reach = 3
    dt = _coefficient(rng, 1.0, 20.0)
    lines, outs = [], []
    for q in tracers:
        for axis, (vel, off) in {"x": ("u", lambda d: f"{q}(i{d:+d},j,k)" if d else f"{q}(i,j,k)"),
                                 "y": ("v", lambda d: f"{q}(i,j{d:+d},k)" if d else f"{q}(i,j,k)")}.items():
            at = dict(a0=off(0), a1=off(1), a2=off(2), am=off(-1), a3=off(3), am2=off(-2))
            lines.append(f"  - name: f{axis}_{q}\n    expr: \"{vel}(i,j,k) * {centre.format(**at)} - "
                         f"fabs({vel}(i,j,k)) * {diff.format(**at)}\"")
        scale = _coefficient(rng, 1e-4, 1e-3)
        lines.append(f"  - name: new_{q}\n    expr: \"{q}(i,j,k) - {dt} * {scale} * (fx_{q}(i,j,k) - fx_{q}(i-1,j,k) "
                     f"+ fy_{q}(i,j,k) - fy_{q}(i,j-1,k))\"")
        outs.append(f"new_{q}")
    return reach, outs, lines


def vertical(rng):
    kd = _coefficient(rng, 0.05, 0.3)
    lines = [
        f"  - name: dif\n    expr: \"{kd} * (t(i,j,k+1) - 2.0 * t(i,j,k) + t(i,j,k-1))\"",
        "  - name: adv\n    expr: \"w(i,j,k) > 0.0 ? w(i,j,k) * (t(i,j,k) - t(i,j,k-1)) : w(i,j,k) * (t(i,j,k+1) - t(i,j,k))\"",
        f"  - name: tnew\n    expr: \"t(i,j,k) + {_coefficient(rng, 0.1, 1.0)} * (dif(i,j,k) - adv(i,j,k))\"",
    ]
    if rng.random() < 0.5:
        lines.append("  - name: smooth\n    expr: \"0.25 * (tnew(i+1,j,k) + tnew(i-1,j,k) + tnew(i,j+1,k) + tnew(i,j-1,k))\"")
        return 1, ["smooth"], lines
    return 0, ["tnew"], lines


def generated(family, seed, size):
    """The YAML text of `family`'s program for `seed` at `size` x `size` x 60."""
    rng = random.Random(f"{family}:{seed}")
    if family == "lapchain":
        reach, outs, lines = lapchain(rng)
    elif family == "limited":
        reach, outs, lines = limited(rng)
    elif family in ("upwind3", "upwind5"):
        reach, outs, lines = upwind(rng, int(family[-1]))
    elif family == "vertical":
        reach, outs, lines = vertical(rng)
    else:
        raise ValueError(f"unknown family {family}")
    halo = [reach, reach, 1 if family == "vertical" else 0]
    return (f"# Generated by benches/bench_peers.py: family {family}, seed {seed}.\n"
            f"name: {family}{seed}_{size}\ndomain: [{size}, {size}, 60]\nhalo: {halo}\n"
            f"outputs: [{', '.join(outs)}]\nstencils:\n" + "\n".join(lines) + "\n")


def with_domain(text, name, domain):
    """The program text with its `name:` and `domain:` lines replaced."""
    out = []
    for line in text.splitlines():
        if line.startswith("domain:"):
            line = f"domain: [{domain[0]}, {domain[1]}, {domain[2]}]"
        elif line.startswith("name:"):
            line = f"name: {name}"
        out.append(line)
    return "\n".join(out) + "\n"


def shipped(name, size):
    """A shipped program's text at `size` x `size` x 60."""
    with open(os.path.join(REPO, "configs", f"{name}.yaml"), encoding="utf-8") as f:
        return with_domain(f.read(), f"{name}_{size}", [size, size, 60])


def cpu_description():
    """The CPU this runs on, from /proc/cpuinfo: its model name and family/model numbers (the
    name alone does not tell Xeon generations apart on some virtual machines), or what
    `platform` knows elsewhere."""
    fields = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "cpu family", "model") and key not in fields:
                    fields[key] = value.strip()
                if not line.strip() and fields:
                    break
    except OSError:
        pass
    if "model name" not in fields:
        return platform.processor() or platform.machine() or "unknown"
    return (f"{fields['model name']} (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')}), "
            f"{os.cpu_count()} logical CPUs")


def run_peer(python, script, path, machine, runs, extra, log):
    """One peer's JSON report on `path`, or None (its error logged)."""
    cmd = [python, os.path.join(REPO, "benches", script), path, "--machine", machine,
           "--runs", str(runs), "--format", "json"] + extra
    log(f"  {script} {os.path.basename(path)} ...")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        tail = " ".join(proc.stderr.strip().splitlines()[-2:])
        log(f"  {script}: no report (exit {proc.returncode}): {tail}")
        return None


def best_peer(reports):
    """(opt's seconds, the best verified peer row, peer / opt) over the peers' reports: each
    report's ratio is taken within its own run (its opt and its peers side by side), and the
    smallest ratio of the reports is the program's."""
    out = (None, None, None)
    for rep in (r for r in reports if r):
        rows = rep["rows"]
        opt = next((r["median"] for r in rows
                    if r.get("implementation") == "absinthe" and r.get("variant") == "opt" and r.get("median")), None)
        peers = [r for r in rows if r.get("implementation") != "absinthe" and r.get("median")
                 and not r.get("error") and str(r.get("check", "")).startswith("verified")]
        if opt is None or not peers:
            continue
        best = min(peers, key=lambda r: r["median"])
        # Both peers time opt and their rows in rounds and report the median of the rounds'
        # ratios for their best row; a report without it gives the ratio of the medians.
        if best.get("implementation") == "halide":
            paired = rep.get("best_halide_over_opt") if rep.get("best_halide") == best.get("variant") else None
        else:
            paired = rep.get("opt_over_best") if rep.get("best_gt4py") == best.get("variant") else None
        ratio = paired or best["median"] / opt
        if out[2] is None or ratio < out[2]:
            out = (opt, best, ratio)
    return out


def per_peer(reports):
    """Per peer (halide, gt4py): its best verified row's name, seconds and peer / opt in its own
    run; and `unfused / opt` from the first report that timed both."""
    peers, unfused_over_opt = {}, None
    for rep in (r for r in reports if r):
        opt, best, ratio = best_peer([rep])
        if best:
            peers[best["implementation"]] = {"best": best["variant"], "seconds": best["median"],
                                             "ratio": ratio}
        times = {r.get("variant"): r.get("median") for r in rep["rows"]
                 if r.get("implementation") == "absinthe"}
        if unfused_over_opt is None and times.get("unfused") and times.get("opt"):
            unfused_over_opt = times["unfused"] / times["opt"]
    return peers, unfused_over_opt


def saved_reports(path, peers, log):
    """The reports an earlier run kept at `path`, those of `peers` only; none (noted) when the
    file is missing or unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            reports = json.load(f)
    except (OSError, ValueError) as e:
        log(f"warning: --from-reports: {path}: {e}")
        return []
    key = {"halide": "best_halide", "gt4py": "best_gt4py"}
    return [r for r in reports if r and any(key[p] in r for p in peers)]


def table(results, cpu, float_rules):
    """The results as a Markdown table: opt, each peer's best and ratio, unfused / opt."""
    def t(s):
        return "-" if s is None else f"{s * 1e3:.3f} ms" if s < 0.01 else f"{s * 1e3:.2f} ms"

    def r2(x):
        return "-" if x is None else f"{x:.2f}"
    lines = [f"CPU: {cpu}; Halide's floating point: {float_rules}", "",
             "| program | opt | best Halide | Halide / opt | best GT4Py | GT4Py / opt | best / opt | unfused / opt |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        cells = [r["program"], t(r["opt"])]
        for peer in ("halide", "gt4py"):
            p = r.get("peers", {}).get(peer)
            cells += [f"{p['best']} {t(p['seconds'])}", r2(p["ratio"])] if p else ["-", "-"]
        cells += [r2(r["ratio"]), r2(r.get("unfused_over_opt"))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench_peers.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="64,256", help="x-y sizes, comma-separated (default 64,256; 60 levels)")
    ap.add_argument("--programs", default=",".join(SHIPPED),
                    help="shipped programs (configs/NAME.yaml), comma-separated; '' for none")
    ap.add_argument("--families", default=",".join(FAMILIES), help=f"generated families, from {', '.join(FAMILIES)}")
    ap.add_argument("--seeds", default="1", help="seeds per family, comma-separated (default 1)")
    ap.add_argument("--peers", default="halide,gt4py", help="halide, gt4py or both (default both)")
    ap.add_argument("--schedulers", default="mullapudi2016,li2018,adams2019", help="Halide autoschedulers")
    ap.add_argument("--float", choices=["strict", "relaxed"], default="strict",
                    help="Halide's floating point, the same on both sides (halide_peer.py --float; default "
                         "strict: no reassociation on either side)")
    ap.add_argument("--runs", type=int, default=32, help="timed runs per row (default 32)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds, each timing opt and every peer row back to back (both peers); the ratio is "
                         "the median of the rounds' ratios (default 3)")
    ap.add_argument("--machine", default=os.path.join(REPO, "build", "demo", "machine.yaml"))
    ap.add_argument("--out-dir", default=os.path.join(REPO, "build", "suite"),
                    help="where the suite's programs and reports are written (default build/suite)")
    ap.add_argument("--list", action="store_true", help="write the suite's programs, list them and stop")
    ap.add_argument("--from-reports", action="store_true",
                    help="run nothing: read each program's reports from an earlier run in --out-dir "
                         "(NAME.reports.json) and print them as a run would")
    ap.add_argument("--format", choices=["table", "json"], default="table")
    args = ap.parse_args(argv)

    def log(message):
        print(message, file=sys.stderr, flush=True)

    try:
        sizes = [int(s) for s in args.sizes.split(",") if s]
        seeds = [int(s) for s in args.seeds.split(",") if s]
    except ValueError:
        log("error: --sizes and --seeds take comma-separated whole numbers")
        return 2
    if not sizes or any(s < 8 or s > 1024 for s in sizes):
        log("error: --sizes: each size must be 8 to 1024")
        return 2
    families = [f for f in args.families.split(",") if f]
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        log(f"error: --families: unknown family {unknown[0]}; the families are {', '.join(FAMILIES)}")
        return 2
    peers = [p for p in args.peers.split(",") if p]
    if any(p not in ("halide", "gt4py") for p in peers) or not peers:
        log("error: --peers: halide, gt4py or both")
        return 2
    os.makedirs(args.out_dir, exist_ok=True)
    suite = []
    for size in sizes:
        for name in (p for p in args.programs.split(",") if p):
            if not os.path.exists(os.path.join(REPO, "configs", f"{name}.yaml")):
                log(f"error: --programs: no configs/{name}.yaml")
                return 2
            suite.append((f"{name}_{size}", shipped(name, size)))
        for family in families:
            for seed in seeds:
                suite.append((f"{family}{seed}_{size}", generated(family, seed, size)))
    paths = []
    for name, text in suite:
        path = os.path.join(args.out_dir, f"{name}.yaml")
        if not args.from_reports:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        paths.append(path)
    if args.list:
        print("\n".join(paths))
        return 0
    venvs = {"halide": os.path.join(REPO, "build", "halide-venv", "bin", "python"),
             "gt4py": os.path.join(REPO, "build", "gt4py-venv", "bin", "python")}
    for p in [] if args.from_reports else peers:
        if not os.path.exists(venvs[p]):
            log(f"error: {venvs[p]} is missing: `make bench-{p}` creates it")
            return 2
    results = []
    for path in paths:
        reports = []
        saved = path[:-5] + ".reports.json"
        if args.from_reports:
            reports = saved_reports(saved, peers, log)
        else:
            log(f"{os.path.basename(path)}:")
        if "halide" in peers and not args.from_reports:
            reports.append(run_peer(venvs["halide"], "halide_peer.py", path, args.machine, args.runs,
                                    ["--schedulers", args.schedulers, "--rounds", str(args.rounds),
                                     "--float", args.float], log))
        if "gt4py" in peers and not args.from_reports:
            reports.append(run_peer(venvs["gt4py"], "gt4py_peer.py", path, args.machine, args.runs,
                                    ["--rounds", str(args.rounds)], log))
        if not args.from_reports:
            with open(saved, "w", encoding="utf-8") as f:
                json.dump(reports, f, indent=1)
        opt, best, ratio = best_peer(reports)
        each, unfused_over_opt = per_peer(reports)
        results.append({"program": os.path.basename(path)[:-5], "opt": opt,
                        "best_peer": best and f"{best['implementation']} {best['variant']}",
                        "best_peer_seconds": best and best["median"], "ratio": ratio,
                        "peers": each, "unfused_over_opt": unfused_over_opt})
    ratios = [r["ratio"] for r in results if r["ratio"]]
    summary = {"programs": len(results), "compared": len(ratios),
               "geomean": math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None,
               "worst": min(ratios) if ratios else None}
    run_file = os.path.join(args.out_dir, "suite.json")
    if args.from_reports:
        try:
            with open(run_file, encoding="utf-8") as f:
                run = json.load(f)
            cpu, args.float = run["cpu"] + " (the run that wrote the reports)", run["float"]
        except (OSError, ValueError, KeyError):
            cpu, args.float = "not recorded with the reports", "not recorded"
    else:
        cpu = cpu_description()
        with open(run_file, "w", encoding="utf-8") as f:
            json.dump({"cpu": cpu, "float": args.float}, f)
    if args.format == "json":
        print(json.dumps({"cpu": cpu, "float": args.float, "results": results, "summary": summary}, indent=1))
        return 0
    print(table(results, cpu, args.float))
    if ratios:
        print(f"\n{len(ratios)} of {len(results)} compared: geometric mean {summary['geomean']:.2f}, "
              f"worst {summary['worst']:.2f} (> 1: absinthe opt is faster than the best peer)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
