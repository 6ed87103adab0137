#!/usr/bin/env python3
"""absinthe against GT4Py on one stencil program, side by side on this machine.

The program (absinthe's YAML) is written as a GT4Py gtscript stencil: each stencil one
`computation(PARALLEL | FORWARD | BACKWARD)` block with its `interval`s, its `let` locals and
intermediate stencils temporaries, the run-time scalars keyword arguments. It is compiled by each
GT4Py backend asked for (`gt:cpu_kfirst`, `gt:cpu_ifirst`, `dace:cpu`, `numpy`), run on the inputs
absinthe's harness uses (absinthe_value, shared with benches/halide_peer.py), its outputs checked
against the kernel absinthe verified, and timed the same way: the caches flushed by reading a
buffer before each run, the first quarter of the runs discarded, the median of the rest. A GT4Py
call is timed from Python, as a user calls it: its call overhead counts.

absinthe's rows come from `absinthe bench` (naive, unfused, noinline, opt) with the same flush
(`--flush read --flush-bytes`), in its default build (FMA contraction allowed), which is what the
gt backends compile too (no fast-math).

Every backend is compiled first. Then --rounds rounds (default 3) each time absinthe's `opt` (the
first round all four variants) and every backend back to back, as benches/halide_peer.py does:
a row's median is the median of its rounds' medians, and the ratio of the best backend's time to
opt's (`opt_over_best` in the JSON, a name kept from before the rounds, which holds best / opt;
each round's in `best_gt4py_over_opt_rounds`) the median of the ratios of the rounds that timed
both, so that a shift of the machine's memory bandwidth between the two sides' timings
(about 30% within minutes on a shared machine) does not decide it.
"""

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import halide_peer as hp  # noqa: E402  (the program parser, absinthe's inputs, the absinthe rows)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BACKENDS = ["gt:cpu_kfirst", "gt:cpu_ifirst", "dace:cpu", "numpy"]
COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")


def segments(program):
    """The program as consecutive GT4Py stencils (lists of stencil names). GT4Py may not read a
    field argument it writes at a horizontal offset in the same stencil, and a 2-D array is
    always an argument (its temporaries are 3-D), as is an output: a stencil that reads such an
    array of its own segment at an offset along i or j starts a new one, as a GT4Py user splits
    the computation into two calls."""
    out, written = [[]], set()
    for name, _, _ in program.stencils:
        cut = any(a in written and (a in program.planes or a in program.outputs) and (o[0] or o[1])
                  for a, o in program.reads[name])
        if cut and out[-1]:
            out.append([])
            written = set()
        out[-1].append(name)
        written.add(name)
    return out


def segment_fields(program, parts, n):
    """Segment `n`'s field arguments: the inputs and earlier segments' arrays it reads, and what
    it writes that is an output, 2-D, or read by a later segment."""
    mine = set(parts[n])
    read = [a for s in parts[n] for a, _ in program.reads[s] if a not in mine]
    later = {a for m in parts[n + 1:] for s in m for a, _ in program.reads[s]}
    written = [s for s in parts[n]
               if s in program.outputs or s in program.planes or s in later]
    return list(dict.fromkeys(read)) + written


def scratch_arrays(program):
    """The arrays the peer allocates besides the outputs: stencils passed between segments or
    2-D (an argument in every segment that uses them)."""
    parts = segments(program)
    args = {a for n in range(len(parts)) for a in segment_fields(program, parts, n)}
    return [s for s, _, _ in program.stencils
            if s in args and s not in program.outputs and s not in program.inputs]


def segment_box(program, part):
    """The origin and domain (i, j, k, in the allocated arrays) a segment's GT4Py call runs over:
    the program's domain grown by how far beyond it readers need what the segment writes
    (absinthe's extents), as absinthe computes those stencils. Along k as well: GT4Py computes a
    temporary only over the call's domain, and a reader at k + 1 on the top level needs it one
    level above."""
    H, D = program.halo, program.domain
    grow = [[max(program.need[s][d][side] for s in part) for side in (0, 1)] for d in range(3)]
    return (tuple(H[d] - grow[d][0] for d in range(3)),
            tuple(D[d] + grow[d][0] + grow[d][1] for d in range(3)))


def gtscript_source(program, nz, n=0):
    """Segment `n`'s gtscript definition (`segments`) as Python source (arrays become
    `f_<name>`, locals `l_<stencil>_<name>`, scalars `s_<name>`: names such as `in` are Python
    keywords); its stencils' other arrays are temporaries."""
    parts = segments(program)
    fields = segment_fields(program, parts, n)
    # A field over [i, j] is a `Field[IJ, T]` (`F_ij`), over [k] a `Field[K, T]` (`F_k`).
    params = ", ".join(f"f_{a}: F" + ("" if program.dims(a) == "ijk" else f"_{program.dims(a)}")
                       for a in fields)
    if program.scalars:
        params += ", *, " + ", ".join(f"s_{s}: float" for s in program.scalars)
    lines = [f"def definition({params}):"]
    for name, _, _ in program.stencils:
        if name not in parts[n]:
            continue
        comp = program.computation[name].upper()
        bodies = program.bodies[name]
        if name in program.planes:
            # GT4Py writes a field over [i, j] in FORWARD or BACKWARD computations only; a 2-D
            # stencil by `expr` (reading arrays without k) at the bottom level.
            comp = "FORWARD"
            if bodies[0][0] is None:
                bodies = [([0, 1],) + tuple(bodies[0][1:])]
        if bodies[0][0] is None:
            lines.append(f"    with computation({comp}), interval(...):")
            lines += body_lines(program, name, bodies[0][1], bodies[0][2], " " * 8)
            continue
        lines.append(f"    with computation({comp}):")

        def start(b):
            s = b[0][0]
            return s if s >= 0 else nz + s
        for k, lets, tree in sorted(bodies, key=start, reverse=comp == "BACKWARD"):
            end = "None" if k[1] is None else str(k[1])
            lines.append(f"        with interval({k[0]}, {end}):")
            lines += body_lines(program, name, lets, tree, " " * 12)
    return "\n".join(lines) + "\n"


def body_lines(program, name, lets, tree, indent):
    env = {s: f"s_{s}" for s in program.scalars}
    out = []
    for lname, ltree in lets:
        code = value(ltree, env)
        env[lname] = f"l_{name}_{lname}"
        out.append(f"{indent}{env[lname]} = {code}")
    out.append(f"{indent}f_{name} = {value(tree, env)}")
    return out


def value(e, env):
    """An expression as a gtscript value (comparisons and logic as 1.0 or 0.0, as in absinthe)."""
    tag = e[0]
    if tag == "num":
        return repr(float(e[2]))
    if tag == "local":
        return env[e[1]]
    if tag == "access":
        # A field is indexed along its own dimensions only.
        own = [str(o) for o, n in zip(e[2], "ijk") if n in e[3]]
        return f"f_{e[1]}[{', '.join(own)}]"
    if tag == "neg":
        return f"(-{value(e[1], env)})"
    if tag == "not" or (tag == "bin" and e[1] in COMPARISONS + ("&&", "||")):
        return f"(1.0 if {truth(e, env)} else 0.0)"
    if tag == "bin":
        return f"({value(e[2], env)} {e[1]} {value(e[3], env)})"
    if tag == "cond":
        return f"({value(e[2], env)} if {truth(e[1], env)} else {value(e[3], env)})"
    if tag == "call":
        name, args = e[1], [value(a, env) for a in e[2]]
        if name in ("min", "max"):
            # absinthe's min(a, b) is a < b ? a : b (max: a > b ? a : b), NaN cases included.
            cmp = "<" if name == "min" else ">"
            return f"({args[0]} if {args[0]} {cmp} {args[1]} else {args[1]})"
        if name in ("abs", "fabs"):
            return f"abs({args[0]})"
        if name == "pow":
            return f"({args[0]} ** {args[1]})"
        return f"{name}({args[0]})"  # sqrt exp log floor ceil
    raise AssertionError(f"unknown node {tag}")


def truth(e, env):
    """An expression as a gtscript condition: a value is true when it is not 0."""
    tag = e[0]
    if tag == "bin" and e[1] in COMPARISONS:
        return f"({value(e[2], env)} {e[1]} {value(e[3], env)})"
    if tag == "bin" and e[1] in ("&&", "||"):
        op = "and" if e[1] == "&&" else "or"
        return f"({truth(e[2], env)} {op} {truth(e[3], env)})"
    if tag == "not":
        return f"(not {truth(e[1], env)})"
    return f"({value(e, env)} != 0.0)"


def build(program, backend, source, log, name):
    """The compiled GT4Py stencil `name` for `backend` (the definition exec'd from `source`)."""
    import numpy as np
    from gt4py.cartesian import gtscript
    namespace = {"np": np}
    exec("from gt4py.cartesian.gtscript import PARALLEL, FORWARD, BACKWARD, computation, interval, "
         "Field, sqrt, exp, log, floor, ceil, I, J, K, IJ, IK, JK\n", namespace)
    T = np.float32 if program.type == "float" else np.float64
    namespace["F"] = namespace["Field"][T]
    for dims in set(program.fields.values()):
        namespace[f"F_{dims}"] = namespace["Field"][namespace[dims.upper()], T]
    with tempfile.NamedTemporaryFile("w", suffix=".py", prefix=f"{program.name}_gt_", delete=False) as f:
        f.write(source)  # gtscript reads the definition's source back from its file
        path = f.name
    code = compile(source, path, "exec")
    exec(code, namespace)
    log(f"gt4py {backend}: compiling ...")
    # dace:cpu's runtime headers use C++20 (std::bit_cast); GT4Py compiles them as C++17. The
    # flag goes after GT4Py's own, for that backend only.
    from gt4py.cartesian import config
    cxx = config.build_settings["extra_compile_args"]["cxx"]
    extra = ["-std=c++20"] if backend.startswith("dace") else []
    cxx.extend(extra)
    try:
        return gtscript.stencil(backend=backend, definition=namespace["definition"], name=name)
    finally:
        del cxx[len(cxx) - len(extra):]
        os.remove(path)


def prepare_gt4py(args, program, backend, inputs, log):
    """Compiles `program` for `backend` and calls it once on `inputs`: (its row, the call to
    time or None, its outputs or None). A backend that fails is a row with its error."""
    import numpy as np
    import gt4py.storage as storage
    row = {"implementation": "gt4py", "variant": backend, "median": None, "min": None, "max": None,
           "error": None}
    try:
        t0 = time.perf_counter()
        parts = segments(program)
        stencils = [build(program, backend, gtscript_source(program, program.domain[2], n), log,
                          program.name if len(parts) == 1 else f"{program.name}_{n}")
                    for n in range(len(parts))]
        row["compile_seconds"] = time.perf_counter() - t0
        dtype = np.float32 if program.type == "float" else np.float64
        H, D = program.halo, program.domain
        shape = tuple(D[d] + 2 * H[d] for d in range(3))
        fields = {}
        for a in program.inputs:
            # absinthe's inputs are (z, y, x) arrays (a field's own axes only); GT4Py's fields
            # are indexed (i, j, k).
            dims = program.dims(a)
            fields[f"f_{a}"] = storage.from_array(
                np.ascontiguousarray(inputs[a].T), dtype=dtype, backend=backend,
                aligned_index=tuple(h for h, n in zip(H, "ijk") if n in dims),
                dimensions=tuple(n.upper() for n in dims))
        for o in program.outputs + scratch_arrays(program):
            if o in program.planes:
                fields[f"f_{o}"] = storage.full(shape[:2], np.nan, dtype=dtype, backend=backend,
                                                aligned_index=tuple(H[:2]), dimensions=("I", "J"))
            else:
                fields[f"f_{o}"] = storage.full(shape, np.nan, dtype=dtype, backend=backend,
                                                aligned_index=tuple(H))
        scalars = {f"s_{s}": float(dtype(v)) for s, v in zip(program.scalars, program.scalar_values)}
        calls = []
        for n in range(len(parts)):
            origin, domain = segment_box(program, parts[n])
            calls.append(dict({f"f_{a}": fields[f"f_{a}"] for a in segment_fields(program, parts, n)},
                              **scalars, origin=origin, domain=domain, validate_args=False))

        def stencil():
            for s, call in zip(stencils, calls):
                s(**call)
        stencil()  # untimed warm-up; its outputs are checked
        outs = [np.asarray(fields[f"f_{o}"])[H[0]:H[0] + D[0], H[1]:H[1] + D[1]].T.copy()
                if o in program.planes else
                np.asarray(fields[f"f_{o}"])[H[0]:H[0] + D[0], H[1]:H[1] + D[1], H[2]:H[2] + D[2]]
                .transpose(2, 1, 0).copy() for o in program.outputs]
        return row, stencil, outs
    except (Exception, SystemExit) as e:  # a backend failing is a result (setuptools exits)
        fail(row, e, log)
        return row, None, None


def fail(row, error, log, where=""):
    """Records `error` (an exception) as `row`'s error and logs it."""
    message = " ".join(str(error).split())[:400] or type(error).__name__
    row["error"] = f"{where}{type(error).__name__}: {message}"
    log(f"gt4py {row['variant']}: FAILED: {row['error']}")


def time_round(row, call, args, flush, log, index):
    """Round `index` of `row`'s timed runs of `call`, added to its rounds (`hp.add_round`); a
    failure during the runs becomes the row's error."""
    try:
        one = hp.summarize(hp.timed_runs(call, args.runs, flush))
        hp.add_round(row, one["median"], one["min"], one["max"], index)
    except (Exception, SystemExit) as e:  # a backend failing is a result
        fail(row, e, log, f"round {index + 1}: ")


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="gt4py_peer.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""examples:
  build/gt4py-venv/bin/python benches/gt4py_peer.py configs/cosmo_hvdiff.yaml --machine M
  build/gt4py-venv/bin/python benches/gt4py_peer.py configs/hdiff.yaml --backends gt:cpu_kfirst --runs 16
  build/gt4py-venv/bin/python benches/gt4py_peer.py configs/cosmo_vdiff_implicit.yaml --print-source
  make bench-gt4py GT4PY_PROGRAM=configs/cosmo_hvdiff_256.yaml GT4PY_ARGS="--runs 32"

Set up: python3 -m venv build/gt4py-venv && build/gt4py-venv/bin/pip install gt4py numpy pyyaml,
and boost's headers (Debian: libboost-dev) for the gt: backends (or `make bench-gt4py`).""")
    parser.add_argument("program", help="the stencil program (YAML)")
    parser.add_argument("--runs", type=int, default=32, help="timed runs per row; the first quarter is discarded (default 32)")
    parser.add_argument("--backends", default="gt:cpu_kfirst,gt:cpu_ifirst,dace:cpu",
                        help=f"GT4Py backends, comma-separated, from {', '.join(BACKENDS)} (default: the three CPU ones)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds, each timing absinthe's opt and every backend back to back; a row's time is "
                             "the median of its rounds' medians, the ratio to opt the median of the rounds' "
                             "ratios (default 3)")
    parser.add_argument("--threads", type=int, default=2, help="OpenMP threads of both sides (default 2)")
    parser.add_argument("--machine", default=os.path.join(REPO, "build", "demo", "machine.yaml"),
                        help="absinthe's machine file (default build/demo/machine.yaml)")
    parser.add_argument("--absinthe", default=os.path.join(REPO, "target", "release", "absinthe"),
                        help="the absinthe executable (default target/release/absinthe)")
    parser.add_argument("--absinthe-args", default="", metavar="ARGS", help="extra arguments for `absinthe bench`")
    parser.add_argument("--flush-bytes", type=int, default=None,
                        help="bytes read before each run, on both sides (default 1.25 x the largest cache in sysfs)")
    parser.add_argument("--print-source", action="store_true", help="print the gtscript definition and stop")
    parser.add_argument("--format", choices=["table", "json"], default="table")
    args = parser.parse_args(argv)
    args.float = "strict"  # absinthe's default build, as run_absinthe reads it

    def log(message):
        print(message, file=sys.stderr, flush=True)

    try:
        program = hp.load_program(args.program)
        if args.print_source:
            print("\n".join(gtscript_source(program, program.domain[2], n)
                            for n in range(len(segments(program)))), end="")
            return 0
        if args.rounds < 1:
            raise hp.UserError(f"--rounds: {args.rounds}: need at least 1")
        if args.runs < 1:
            raise hp.UserError(f"--runs: {args.runs}: need at least 1")
        unknown = [b for b in args.backends.split(",") if b not in BACKENDS]
        if unknown:
            raise hp.UserError(f"--backends: unknown backend {unknown[0]}; the backends are {', '.join(BACKENDS)}")
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
        # GT4Py's build cache and DaCe's configuration under build/, not the current directory.
        os.environ.setdefault("GT_CACHE_ROOT", os.path.join(REPO, "build", "gt4py-cache"))
        os.environ.setdefault("DACE_CONFIG", os.path.join(REPO, "build", "gt4py-cache", ".dace.conf"))
        os.makedirs(os.environ["GT_CACHE_ROOT"], exist_ok=True)
        import numpy as np
        flush_bytes = args.flush_bytes if args.flush_bytes is not None else int(1.25 * hp.llc_bytes())
        flush = hp.NumpyFlusher(np, flush_bytes)
        inputs = {a: hp.absinthe_inputs(np, program, a) for a in program.inputs}
        # hp.absinthe_inputs reads program.alloc: the domain plus halo.
        # Every backend is compiled first; then each round times absinthe (the first round all
        # four variants, dumping opt's outputs; later rounds opt alone) and every backend back
        # to back.
        peers, timed = [], []
        for backend in args.backends.split(","):
            row, call, outs = prepare_gt4py(args, program, backend, inputs, log)
            peers.append((row, outs))
            if call is not None:
                timed.append((row, call))
        absinthe_rows, opt_row, want = [], None, None
        for r in range(args.rounds):
            log(f"round {r + 1} of {args.rounds}")
            if r == 0:
                with tempfile.TemporaryDirectory() as dump_dir:
                    absinthe_rows, opt_row = hp.absinthe_round(args, program, r, None, dump_dir,
                                                               flush_bytes, log)
                    dump = os.path.join(dump_dir, "opt.outputs")
                    want = hp.read_dump(np, program, dump) if os.path.exists(dump) else None
            elif opt_row is not None:
                hp.absinthe_round(args, program, r, opt_row, None, flush_bytes, log)
            for row, call in timed:
                if not row["error"]:
                    log(f"gt4py {row['variant']}: {args.runs} runs ...")
                    time_round(row, call, args, flush, log, r)
        for row, outs in peers:
            if outs is not None and want is not None:
                ok, worst = hp.compare(np, program, outs, want)
                row["check"] = f"{'verified' if ok else 'MISMATCH'} (rel {worst:.1e})"
                if not ok and not row["error"]:
                    row["error"] = row["check"]
        rows = absinthe_rows + [row for row, _ in peers]
    except hp.UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    opt = opt_row and opt_row["median"]
    candidates = [r for r in rows if r["implementation"] == "gt4py" and r["median"] and not r["error"]]
    best = min(candidates, key=lambda r: r["median"]) if candidates else None
    paired = hp.paired_ratio(best, opt_row) if best and opt_row else None
    if args.format == "json":
        print(json.dumps({"program": program.name, "rounds": args.rounds, "rows": rows,
                          "best_gt4py": best and best["variant"], "opt_over_best": paired,
                          "best_gt4py_over_opt_rounds": hp.paired_ratios(best, opt_row)}, indent=1))
        return 0
    print(f"{program.name} ({'x'.join(map(str, program.domain))}, {program.type}): {args.runs} runs per row "
          f"in each of {args.rounds} round(s) (a row's median: the median of its rounds'), "
          f"the first quarter discarded, {flush_bytes} bytes read before each; {args.threads} threads")
    print(f"{'implementation':<24}{'median':>11}{'min':>11}{'max':>11}{'vs opt':>9}  check")
    for r in rows:
        label = f"{r['implementation']} {r['variant']}"
        if r["error"] and r["median"] is None:
            print(f"{label:<24}FAILED: {r['error']}")
            continue
        vs = hp.ratio(opt, r["median"])
        note = f"FAILED: {r['error']}" if r["error"] else r.get("check", "")
        print(f"{label:<24}{hp.human(r['median']):>11}{hp.human(r['min']):>11}{hp.human(r['max']):>11}"
              f"{'-' if vs is None else f'{vs:.2f}x':>9}  {note}")
    if best and paired:
        verdict = "beats it" if paired > 1 else "loses to it"
        rounds = "" if args.rounds == 1 else f" (the median of {args.rounds} rounds' ratios)"
        print(f"best GT4Py backend: {best['variant']} ({hp.human(best['median'])}); absinthe opt "
              f"({hp.human(opt)}) {verdict}: {paired:.2f}x{rounds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
