"""The Python package against NumPy evaluations of the same programs, written here
independently of absinthe's code generator and interpreter, and its refusals."""

import os
import re
from pathlib import Path

import numpy as np
import json
import pytest

import absinthe

ROOT = Path(__file__).resolve().parents[2]
MACHINE = ROOT / "machines" / "default.yaml"


def program(name, domain):
    """A shipped program at a smaller domain (the domain line rewritten)."""
    text = (ROOT / "configs" / f"{name}.yaml").read_text()
    lines = [f"domain: [{domain[0]}, {domain[1]}, {domain[2]}]" if l.startswith("domain:") else l
             for l in text.splitlines()]
    return absinthe.Program.from_string("\n".join(lines) + "\n")


def inputs_for(kernel, seed):
    rng = np.random.default_rng(seed)
    return {n: rng.uniform(-1.0, 1.0, kernel.shapes[n]).astype(kernel.dtype) for n in kernel.inputs}


def window(a, h, lo, hi):
    """Cells [lo, hi) per dimension (x, y, z; domain coordinates) of an array of shape (z, y, x)
    with halo h."""
    return a[h[2] + lo[2]:h[2] + hi[2], h[1] + lo[1]:h[1] + hi[1], h[0] + lo[0]:h[0] + hi[0]]


@pytest.fixture(scope="module")
def j3d7pt():
    p = program("j3d7pt", (40, 24, 12))
    return p, p.compile(p.solve(machine=MACHINE), threads=2)


def test_j3d7pt_equals_numpy_bit_for_bit(j3d7pt):
    _, k = j3d7pt
    x = inputs_for(k, 1)
    out = k(**x)["out"]
    h, n = (1, 1, 1), (40, 24, 12)
    s = lambda di, dj, dk: window(x["in"], h, (di, dj, dk), (n[0] + di, n[1] + dj, n[2] + dk))
    want = 0.125 * (s(-1, 0, 0) + s(1, 0, 0) + s(0, -1, 0) + s(0, 1, 0) + s(0, 0, -1) + s(0, 0, 1)) \
        + 0.25 * s(0, 0, 0)
    assert np.array_equal(window(out, h, (0, 0, 0), n), want)


def test_hdiff_equals_numpy_bit_for_bit_into_the_callers_array():
    n, h = (36, 20, 6), (2, 2, 0)
    p = program("hdiff", n)
    k = p.compile(machine=MACHINE)
    x = inputs_for(k, 2)
    out = np.full(k.shape, 7.0, k.dtype)
    assert k(**x, out=out)["out"] is out
    # configs/hdiff.yaml, each stencil on the box its readers need.
    inp, wgt = x["in"], x["wgt"]
    def at(a, lo, hi, di=0, dj=0):
        return window(a, h, (lo[0] + di, lo[1] + dj, 0), (hi[0] + di, hi[1] + dj, n[2]))
    def lap(lo, hi):
        return -4.0 * at(inp, lo, hi) + at(inp, lo, hi, -1, 0) + at(inp, lo, hi, 1, 0) \
            + at(inp, lo, hi, 0, -1) + at(inp, lo, hi, 0, 1)
    lap_box = lap((-1, -1), (n[0] + 1, n[1] + 1))      # lap on [-1, n+1) in x and y
    def lp(di, dj, lo, hi):
        return lap_box[:, 1 + lo[1] + dj:1 + hi[1] + dj, 1 + lo[0] + di:1 + hi[0] + di]
    fli = lambda lo, hi: lp(1, 0, lo, hi) - lp(0, 0, lo, hi)
    flj = lambda lo, hi: lp(0, 1, lo, hi) - lp(0, 0, lo, hi)
    d = ((0, 0), (n[0], n[1]))
    fli_m = fli((-1, 0), (n[0] - 1, n[1]))
    flj_m = flj((0, -1), (n[0], n[1] - 1))
    want = at(wgt, *d) * (fli_m - fli(*d) + flj_m - flj(*d))
    assert np.array_equal(window(out, h, (0, 0, 0), n), want)


def test_solution_reads_back_as_python_objects():
    p = program("hdiff", (36, 20, 6))
    s = p.solve(machine=MACHINE, solver="dp")
    assert s.program == "hdiff" and s.estimate_seconds > 0
    assert sum(len(g.stencils) for g in s.groups) + len(s.inline) == 4
    assert all(len(g.tiles) == 3 for g in s.groups)
    assert s.model == "linear"
    published = p.solve(machine=MACHINE, solver="dp", model="absinthe")
    assert published.model == "absinthe" and published.inline == []
    assert json.loads(published.yaml)["model"] == "absinthe"


def test_bad_arrays_are_refused_and_nothing_is_written(j3d7pt):
    _, k = j3d7pt
    x = inputs_for(k, 3)
    out = np.full(k.shape, 5.0, k.dtype)
    cases = [
        (dict(x, **{"in": x["in"].astype(np.float32)}), "expected dtype float64"),
        (dict(x, **{"in": x["in"][:-1]}), "expected shape"),
        (dict(x, **{"in": np.asfortranarray(x["in"])}), "C-contiguous"),
        ({}, "missing input array(s) in"),
        (dict(x, nope=x["in"]), "unknown argument(s) nope"),
        (dict(x, out=x["in"]), "shares memory with `in`"),
        (dict(x, **{"in": x["in"].astype(">f8")}), "found float64 in big-endian byte order"),
        (dict(x, **{"in": np.ma.masked_array(x["in"], mask=x["in"] > 0)}), "a masked array"),
    ]
    for arrays, message in cases:
        call = dict(arrays)
        if "out" not in call:
            call["out"] = out
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            k(**call)
        assert (out == 5.0).all()


def test_threads_come_from_the_machine_file_unless_given(tmp_path):
    p = absinthe.Program.from_string((ROOT / "configs" / "j3d7pt.yaml").read_text().replace(
        "domain: [256, 256, 256]", "domain: [12, 10, 6]"))
    text = Path(MACHINE).read_text()
    assert re.search(r"^cores: \d+", text, re.M), "the test machine file names its cores"
    one = tmp_path / "one-core.yaml"
    one.write_text(re.sub(r"^cores: \d+", "cores: 1", text, flags=re.M))
    assert p.compile(machine=one).threads == 1
    assert p.compile(machine=one, threads=2).threads == 2
    x = inputs_for(p.compile(machine=one), 7)
    assert np.array_equal(p.compile(machine=one)(**x)["out"], p.compile(machine=one, threads=2)(**x)["out"])
    # Threads the OpenMP runtime would misread (wrapped to a C int, a float, negative, huge).
    for bad in (-5, 4.5, 2**32 + 1, 10**30, True, "2"):
        with pytest.raises(ValueError, match="threads: expected a whole number"):
            p.compile(machine=one, threads=bad)
    # The integer forms the CLI reads (YAML 1.2) give the same count.
    for written in ("0x3", "0o3", "+3"):
        one.write_text(re.sub(r"^cores: \d+", f"cores: {written}  # three", text, flags=re.M))
        assert p.compile(machine=one).threads == 3, written


def test_arguments_that_look_like_flags_and_odd_types(tmp_path, monkeypatch):
    p = program("example2", (8, 8, 4))
    # A machine file whose name begins with `-` is a file, not a flag.
    (tmp_path / "-m.yaml").write_text(Path(MACHINE).read_text())
    monkeypatch.chdir(tmp_path)
    assert p.solve(machine="-m.yaml").estimate_seconds > 0
    # A negative count reaches the CLI as a value, which refuses it.
    with pytest.raises(absinthe.AbsintheError, match="runs"):
        p.bench(machine=MACHINE, runs=-1)
    # One extra word is one word.
    assert p.solve(machine=MACHINE, extra="--no-inline").inline == []
    # Scalars are real numbers, as a kernel call takes them.
    for bad in (True, "1", None, 10**400):
        with pytest.raises(ValueError, match="scalar dt"):
            p.bench(machine=MACHINE, scalars={"dt": bad})
    with pytest.raises(ValueError, match="scalar name 'a=b'"):
        p.bench(machine=MACHINE, scalars={"a=b": 1.0})
    # A refused program text is named `<string>` and not kept.
    before = set(absinthe._cache_dir().glob("program-*.yaml"))
    with pytest.raises(absinthe.AbsintheError, match="<string>:"):
        absinthe.Program.from_string("name: x\n")
    assert set(absinthe._cache_dir().glob("program-*.yaml")) == before
    # A machine file written as JSON (which is YAML too) gives its cores.
    as_json = tmp_path / "m.yaml"
    as_json.write_text('{"name": "json", "cores": 3, "cache_bytes": 2097152}\n')
    assert absinthe._machine_cores(as_json) == 3
    # Arguments of the wrong type are refused by name, before the CLI runs.
    wrong = [
        (lambda: absinthe.Program.load(123), "path: expected a path"),
        (lambda: p.solve(machine=5), "machine: expected a path"),
        (lambda: p.solve(solver=None), "solver: expected a string"),
        (lambda: p.solve(extra=5), "extra: expected a string or a sequence"),
        (lambda: p.solve(extra=[None]), "extra: expected strings, paths or numbers"),
        (lambda: p.bench(runs="8"), "runs: expected a whole number"),
        (lambda: p.bench(runs=True), "runs: expected a whole number"),
        (lambda: p.bench(variants=None), "variants: expected a string"),
        (lambda: p.bench(scalars=[1]), "scalars: expected a dict"),
        (lambda: p.tune(machine=[MACHINE]), "machine: expected a path"),
        (lambda: p.compile(solution="s.yaml"), "solution: expected a Solution"),
    ]
    for call, message in wrong:
        with pytest.raises(TypeError, match=message):
            call()
    assert p.solve(machine=Path(MACHINE)).estimate_seconds > 0
    # Paths and NumPy numbers are words of the command line.
    lp = tmp_path / "p.lp"
    assert p.solve(machine=MACHINE, extra=["--emit", "lp", lp, "--threads", np.int64(1)]).estimate_seconds > 0
    assert lp.read_text().strip()


def test_a_call_leaves_the_processs_thread_count_as_it_was():
    import ctypes
    gomp = ctypes.CDLL("libgomp.so.1")
    before = gomp.omp_get_max_threads()
    p = program("j3d7pt", (12, 10, 6))
    k = p.compile(p.solve(machine=MACHINE), threads=before + 1)
    k(**inputs_for(k, 3))
    assert gomp.omp_get_max_threads() == before


def test_an_array_may_be_named_self():
    p = absinthe.Program.from_string(
        "name: selfish\ndomain: [8, 6, 4]\nhalo: [1, 0, 0]\noutputs: [arguments]\n"
        "stencils:\n  - name: arguments\n    expr: self(i-1,j,k) + self(i+1,j,k)\n")
    k = p.compile(p.solve(machine=MACHINE))
    x = inputs_for(k, 5)
    out = k(**x)["arguments"]
    s = x["self"]
    assert np.array_equal(out[:, :, 1:-1], s[:, :, :-2] + s[:, :, 2:])


def test_files_and_commands_that_fail_are_absinthe_errors(tmp_path, monkeypatch):
    victim = tmp_path / "victim.yaml"
    victim.write_text((ROOT / "configs" / "example2.yaml").read_text())
    p = absinthe.Program.load(victim)
    s = p.solve(machine=MACHINE)
    before = victim.read_text()
    with pytest.raises(absinthe.AbsintheError, match="is the program this solution solves"):
        s.save(victim)
    assert victim.read_text() == before
    with pytest.raises(absinthe.AbsintheError, match="is a directory"):
        s.save(tmp_path)
    with pytest.raises(absinthe.AbsintheError, match="cannot write"):
        s.save(tmp_path / "missing" / "s.yaml")
    kept = tmp_path / "s.yaml"
    kept.write_text("old\n")
    kept.chmod(0o600)
    s.save(kept)
    assert kept.read_text() == s.yaml and (kept.stat().st_mode & 0o777) == 0o600
    assert sorted(f.name for f in tmp_path.iterdir()) == ["s.yaml", "victim.yaml"]
    # A FIFO is written to, not replaced by a file.
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    import threading
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    s.save(fifo)
    reader.join(timeout=30)
    assert got == [s.yaml] and fifo.is_fifo()
    fifo.unlink()
    with pytest.raises(absinthe.AbsintheError, match="not a regular file"):
        absinthe.Program.load("/dev/zero")
    with pytest.raises(absinthe.AbsintheError, match="lone surrogate"):
        absinthe.Program.from_string("name: \udc80\n")
    with pytest.raises(absinthe.AbsintheError, match="NUL"):
        p.solve(solver="hi\0ghs")
    monkeypatch.setenv("ABSINTHE_BIN", str(tmp_path / "no-absinthe"))
    with pytest.raises(absinthe.AbsintheError, match="cannot run absinthe"):
        p.check()
    monkeypatch.setenv("ABSINTHE_BIN", "/bin/true")
    with pytest.raises(absinthe.AbsintheError, match="printed no JSON report"):
        p.check()
    monkeypatch.delenv("ABSINTHE_BIN")
    monkeypatch.setenv("ABSINTHE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CXX", str(tmp_path / "no-compiler"))
    with pytest.raises(absinthe.AbsintheError, match="cannot run the compiler"):
        p.compile(s)
    monkeypatch.setenv("CXX", "/bin/true")
    with pytest.raises(absinthe.AbsintheError, match="wrote no shared library"):
        p.compile(s)
    # A compiler command with arguments is split as a shell would.
    monkeypatch.setenv("CXX", "env g++")
    assert p.compile(s).kernel


def test_cli_errors_are_exceptions_with_the_file_key_and_column(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ndomain: [8, 8, 8]\nhalo: [1, 1, 1]\noutputs: [out]\n"
                   "stencils:\n  - name: out\n    expr: in(i,j,k) +* 2\n")
    with pytest.raises(absinthe.AbsintheError) as e:
        absinthe.Program.load(bad)
    assert "bad.yaml" in str(e.value) and "expr" in str(e.value)
    with pytest.raises(absinthe.AbsintheError, match="missing.yaml"):
        absinthe.Program.load(tmp_path / "missing.yaml")


def test_float_programs_run_on_float32_arrays_bit_for_bit():
    text = (ROOT / "configs" / "j3d7pt.yaml").read_text().replace(
        "domain: [256, 256, 256]", "domain: [24, 16, 8]\ntype: float")
    p = absinthe.Program.from_string(text)
    k = p.compile(machine=MACHINE)
    assert k.dtype == np.float32
    x = inputs_for(k, 4)
    out = k(**x)["out"]
    h, n = (1, 1, 1), (24, 16, 8)
    s = lambda di, dj, dk: window(x["in"], h, (di, dj, dk), (n[0] + di, n[1] + dj, n[2] + dk))
    f = np.float32
    want = f(0.125) * (s(-1, 0, 0) + s(1, 0, 0) + s(0, -1, 0) + s(0, 1, 0) + s(0, 0, -1) + s(0, 0, 1)) \
        + f(0.25) * s(0, 0, 0)
    assert want.dtype == np.float32
    assert np.array_equal(window(out, h, (0, 0, 0), n), want)
    with pytest.raises(ValueError, match="expected dtype float32"):
        k(**{"in": x["in"].astype(np.float64)})


SCALED = """
name: scaled
domain: [20, 12, 5]
halo: [1, 1, 0]
type: TYPE
outputs: [out]
scalars: [dt, kdiff]
stencils:
  - name: flux
    expr: in(i+1,j,k) - in(i,j,k)
  - name: out
    let:
      d: kdiff * (flux(i,j,k) - flux(i-1,j,k))
    expr: in(i,j,k) + dt * d
"""


@pytest.mark.parametrize("vtype", ["double", "float"])
def test_scalars_are_arguments_of_the_kernel(vtype):
    p = absinthe.Program.from_string(SCALED.replace("TYPE", vtype))
    assert p.scalars == ["dt", "kdiff"]
    k = p.compile(machine=MACHINE)
    assert k.scalars == ["dt", "kdiff"]
    x = inputs_for(k, 6)
    f = k.dtype
    n, h = (20, 12, 5), (1, 1, 0)
    s = lambda di: window(x["in"], h, (di, 0, 0), (n[0] + di, n[1], n[2]))
    for dt, kdiff in [(0.1, 3.0), (-2.5, 1e-3)]:
        out = k(**x, dt=dt, kdiff=kdiff)["out"]
        flux0, flux1 = s(1) - s(0), s(0) - s(-1)
        want = s(0) + f(dt) * (f(kdiff) * (flux0 - flux1))
        assert np.array_equal(window(out, h, (0, 0, 0), n), want)
    out = np.full(k.shape, 7.0, k.dtype)
    for bad, message in [({}, "missing scalar"), ({"dt": float("nan"), "kdiff": 1.0}, "finite"),
                         ({"dt": True, "kdiff": 1.0}, "expected a number"),
                         ({"dt": "1", "kdiff": 1.0}, "expected a number"),
                         ({"dt": 10**400, "kdiff": 1.0}, "too large for a double")] + (
            [({"dt": 1e39, "kdiff": 1.0}, "too large for a float"),
             ({"dt": 1e-50, "kdiff": 1.0}, "rounds to zero")] if vtype == "float" else []):
        with pytest.raises(ValueError, match=message):
            k(**x, out=out, **bad)
        assert (out == 7.0).all()


def _bench_module(name):
    """benches/<name>.py, loaded as a module."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, ROOT / "benches" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _peer():
    """benches/halide_peer.py's parser of the program language (a Python port that shares no
    code with absinthe's Rust parser, interpreter or code generator)."""
    return _bench_module("halide_peer")


def numpy_outputs(peer, path, inputs, scalars=None):
    """The program's stencils evaluated with NumPy over the whole allocated box (reads beyond it
    are NaN, which reaches no domain cell), in program order, expressions left to right; the
    run-time scalars from `scalars` (name to value)."""
    prog = peer.load_program(str(path))
    dt = np.float32 if prog.type == "float" else np.float64
    scalar_values = {s: dt((scalars or {})[s]) for s in prog.scalars}
    lit = (lambda t: peer.float32_literal(np, t)) if prog.type == "float" else (lambda t: dt(float(t)))
    one, zero = dt(1), dt(0)
    # A field (`fields:`) broadcast along the dimensions it lacks.
    full = tuple(prog.alloc[d] for d in (2, 1, 0))
    values = {n: np.broadcast_to(inputs[n].reshape([full[2 - d] if "ijk"[d] in prog.dims(n) else 1
                                                    for d in (2, 1, 0)]), full)
              for n in prog.inputs}

    def shifted(a, off):
        out = np.full(a.shape, np.nan, dt)
        src = [slice(None)] * 3
        dst = [slice(None)] * 3
        for axis, o in zip((2, 1, 0), off):
            n = a.shape[axis]
            if o >= 0:
                src[axis], dst[axis] = slice(o, n), slice(0, n - o)
            else:
                src[axis], dst[axis] = slice(0, n + o), slice(-o, n)
        out[tuple(dst)] = a[tuple(src)]
        return out

    def ev(e, local):
        tag = e[0]
        if tag == "num":
            return lit(e[1])
        if tag == "local":
            return local[e[1]]
        if tag == "access":
            return shifted(values[e[1]], e[2])
        if tag == "neg":
            return -ev(e[1], local)
        if tag == "not":
            return np.where(ev(e[1], local) != zero, zero, one)
        if tag == "bin":
            op, l, r = e[1], ev(e[2], local), ev(e[3], local)
            if op in ("&&", "||"):
                l, r = l != zero, r != zero
                return np.where((l & r) if op == "&&" else (l | r), one, zero)
            table = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}
            if op in table:
                return table[op](l, r)
            cmp = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
                   "==": np.equal, "!=": np.not_equal}[op]
            return np.where(cmp(l, r), one, zero)
        if tag == "cond":
            return np.where(ev(e[1], local) != zero, ev(e[2], local), ev(e[3], local))
        if tag == "call":
            name, args = e[1], [ev(a, local) for a in e[2]]
            if name == "min":
                return np.where(args[0] < args[1], args[0], args[1])
            if name == "max":
                return np.where(args[0] > args[1], args[0], args[1])
            f = {"abs": np.abs, "fabs": np.abs, "sqrt": np.sqrt, "exp": np.exp, "log": np.log,
                 "floor": np.floor, "ceil": np.ceil, "pow": np.power}[name]
            return f(*args)
        raise AssertionError(f"unknown node {tag}")

    uses_libm = False
    with np.errstate(all="ignore"):
        for name, lets, tree in prog.stencils:
            local = dict(scalar_values)
            for lname, ltree in lets:
                local[lname] = ev(ltree, local)
            values[name] = np.asarray(ev(tree, local), dt)
            uses_libm |= any(n[0] == "call" and n[1] in ("exp", "log", "pow")
                             for n in peer.walk(tree))
            uses_libm |= any(n[0] == "call" and n[1] in ("exp", "log", "pow")
                             for _, lt in lets for n in peer.walk(lt))
    return prog, values, uses_libm


def _by_levels(path):
    """Whether a program has sweeps or intervals (the NumPy evaluator here computes every level
    at once; test_thomas_solve_matches_numpy covers those)."""
    text = path.read_text()
    return "computation:" in text or "intervals:" in text


SHIPPED = sorted(p.stem for p in (ROOT / "configs").glob("*.yaml") if not _by_levels(p))


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_program_equals_numpy(name):
    peer = _peer()
    domain = (12, 10, 6) if name != "dycore150" else (8, 8, 4)
    p = program(name, domain)
    k = p.compile(p.solve(machine=MACHINE, solver="dp"), threads=2)
    x = inputs_for(k, 5)
    scalars = {s: 0.5 + 0.375 * n for n, s in enumerate(p.scalars)}
    got = k(**x, **scalars)
    prog, want, uses_libm = numpy_outputs(peer, p.path, x, scalars)
    h = prog.halo
    for out in k.outputs:
        g = window(got[out], h, (0, 0, 0), domain)
        w = window(want[out], h, (0, 0, 0), domain)
        assert not np.isnan(w).any()
        if uses_libm:
            # exp, log and pow: libm and NumPy may differ in the last place.
            tol = 1e-4 if prog.type == "float" else 1e-10
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"{name}: {out}")
        else:
            assert np.array_equal(g, w), f"{name}: {out} differs by {np.nanmax(np.abs(g - w))}"


def coefficients(dt, kv, dz, hz, nz):
    """The couplings of cosmo_vdiff_implicit's levels 0..nz-1 to the level below (a) and above
    (c), from the interface coefficients kv[0..nz] and the thicknesses dz (with its halo hz):
    a_k = 2 dt kv_k / (dz_k (dz_{k-1} + dz_k)), none through the bottom and the top."""
    d = dz[hz:hz + nz]
    below = np.concatenate([[np.nan], dz[hz:hz + nz - 1]])
    above = np.concatenate([dz[hz + 1:hz + nz], [np.nan]])
    a = 2.0 * dt * kv[:nz] / (d * (below + d))
    c = 2.0 * dt * kv[1:nz + 1] / (d * (d + above))
    a[0], c[nz - 1] = 0.0, 0.0
    return a, c


def test_thomas_solve_matches_numpy():
    """The implicit vertical diffusion (a forward and a backward sweep) against a textbook
    solve of each column's tridiagonal system with NumPy, to 1e-12 relative."""
    p = program("cosmo_vdiff_implicit", (6, 5, 9))
    k = p.compile(machine=MACHINE, threads=2)
    assert k.shapes["dz"] == (11,)
    rng = np.random.default_rng(11)
    x = {"t": rng.uniform(-1.0, 1.0, k.shape), "kv": rng.uniform(0.5, 1.5, k.shape),
         "dz": rng.uniform(20.0, 80.0, k.shapes["dz"])}
    dt = 30.0
    got = k(**x, dt=dt)["tnew"]
    nx, ny, nz = 6, 5, 9
    hz = 1
    for j in range(ny):
        for i in range(nx):
            kv = x["kv"][hz:hz + nz + 1, j, i]  # interfaces 0..nz (the top one unused)
            a, c = coefficients(dt, kv, x["dz"], hz, nz)
            m = np.diag(1.0 + a + c) - np.diag(a[1:], -1) - np.diag(c[:-1], 1)
            want = np.linalg.solve(m, x["t"][hz:hz + nz, j, i])
            np.testing.assert_allclose(got[hz:hz + nz, j, i], want, rtol=1e-12, atol=1e-14)


def test_the_harness_runs_on_inputs_from_outside(tmp_path):
    """ABSINTHE_LOAD_INPUTS: the generated harness reads the inputs and scalars written here,
    verifies the kernel against its reference on them, and its dumped output equals a NumPy
    solve of the same columns; a short file and a missing scalar are refused by name."""
    import json
    import subprocess
    p = program("cosmo_vdiff_implicit", (7, 3, 6))
    out = tmp_path / "gen"
    absinthe._run("codegen", str(p.path), "--harness", "-o", str(out), "--machine", str(MACHINE))
    exe = tmp_path / "harness"
    subprocess.run(["g++", "-O1", "-fopenmp", "-ffp-contract=off", "-o", str(exe),
                    *map(str, sorted(out.glob("*.cpp")))], check=True)
    nx, ny, nz, hz = 7, 3, 6, 1
    rng = np.random.default_rng(5)
    t = rng.uniform(-1.0, 1.0, (nz + 2 * hz, ny, nx))
    kv = rng.uniform(0.5, 1.5, (nz + 2 * hz, ny, nx))
    dz = rng.uniform(1.0, 3.0, nz + 2 * hz)
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    t.tofile(inputs / "t.bin")
    kv.tofile(inputs / "kv.bin")
    dz.tofile(inputs / "dz.bin")
    dt = 20.0
    (inputs / "scalars.json").write_text(json.dumps({"dt": dt}))
    dump = tmp_path / "dump"
    dump.mkdir()
    env = dict(os.environ, ABSINTHE_LOAD_INPUTS=str(inputs), ABSINTHE_DUMP_OUTPUTS=str(dump))
    run = subprocess.run([str(exe), "2"], env=env, capture_output=True, text=True)
    assert run.returncode == 0 and '"verified":true' in run.stdout, run.stdout + run.stderr
    got = np.fromfile(dump / "cosmo_vdiff_implicit.outputs").reshape(nz, ny, nx)
    for j in range(ny):
        for i in range(nx):
            a, c = coefficients(dt, kv[hz:hz + nz + 1, j, i], dz, hz, nz)
            m = np.diag(1.0 + a + c) - np.diag(a[1:], -1) - np.diag(c[:-1], 1)
            np.testing.assert_allclose(got[:, j, i], np.linalg.solve(m, t[hz:hz + nz, j, i]),
                                       rtol=1e-12, atol=1e-14)
    (inputs / "scalars.json").write_text(json.dumps({"dz": 1.0}))
    run = subprocess.run([str(exe), "2"], env=env, capture_output=True, text=True)
    assert run.returncode == 2 and "`dz` is not a scalar of the program (its scalars: dt)" in run.stderr
    (inputs / "scalars.json").write_text(json.dumps({}))
    run = subprocess.run([str(exe), "2"], env=env, capture_output=True, text=True)
    assert run.returncode == 2 and "has no number for the scalar `dt`" in run.stderr
    (inputs / "scalars.json").write_text(json.dumps({"dt": dt}))
    (inputs / "dz.bin").write_bytes(dz.tobytes()[:-8])
    run = subprocess.run([str(exe), "2"], env=env, capture_output=True, text=True)
    assert run.returncode == 2 and "input `dz` (k) takes 1 x 1 x 8" in run.stderr, run.stderr
    dz.tofile(inputs / "dz.bin")
    (inputs / "t.bin").write_bytes(t.tobytes()[:-8])
    run = subprocess.run([str(exe), "2"], env=env, capture_output=True, text=True)
    assert run.returncode == 2 and "t.bin holds" in run.stderr and "input `t` takes 7 x 3 x 8" in run.stderr


def test_implicit_vertical_advection_matches_numpy():
    """The upwind implicit vertical advection (cosmo_vadv_implicit) against a NumPy solve of
    each column's system, with upward and downward winds, to 1e-12 relative."""
    p = program("cosmo_vadv_implicit", (5, 4, 7))
    k = p.compile(machine=MACHINE, threads=2)
    rng = np.random.default_rng(12)
    x = {"q": rng.uniform(0.0, 1.0, k.shape), "w": rng.uniform(-2.0, 2.0, k.shape)}
    dtdz = 0.7
    got = k(**x, dtdz=dtdz)["qnew"]
    nx, ny, nz, hz = 5, 4, 7, 1
    for j in range(ny):
        for i in range(nx):
            w = x["w"][hz:hz + nz + 1, j, i]
            a = dtdz * np.maximum(w[:nz], 0.0)
            c = dtdz * np.maximum(-w[1:nz + 1], 0.0)
            a[0], c[nz - 1] = 0.0, 0.0
            m = np.diag(1.0 + a + c) - np.diag(a[1:], -1) - np.diag(c[:-1], 1)
            want = np.linalg.solve(m, x["q"][hz:hz + nz, j, i])
            np.testing.assert_allclose(got[hz:hz + nz, j, i], want, rtol=1e-12, atol=1e-14)


def test_a_field_takes_its_own_shape():
    """A 1-D field is an array over its own dimension; a 3-D array in its place is refused by
    name before the kernel runs."""
    p = program("cosmo_vdiff_implicit", (4, 3, 5))
    k = p.compile(machine=MACHINE)
    assert k.shapes["dz"] == (7,) and k.shapes["t"] == k.shape
    x = inputs_for(k, 3)
    x["dz"] = np.ones(k.shape)
    out = np.full(k.shape, 3.0)
    with pytest.raises(ValueError, match=r"array `dz`: expected shape \(7,\) \(z with the halo\)"):
        k(**x, dt=1.0, tnew=out)
    assert (out == 3.0).all()


def test_column_integral_with_2d_stencils_matches_numpy():
    """cosmo_colpres: a forward sweep of the column mass, the surface pressure as a 2-D stencil
    at the top level, its x difference (2-D) and the pressure at every level (3-D, reading the
    2-D one), against NumPy's cumulative sum, to 1e-12 relative."""
    nx, ny, nz = 7, 5, 6
    p = program("cosmo_colpres", (nx, ny, nz))
    k = p.compile(machine=MACHINE, threads=2)
    assert k.shapes["psx"] == (ny + 2, nx + 2) and k.shapes["dz"] == (nz,)
    rng = np.random.default_rng(21)
    rho = rng.uniform(0.5, 1.5, k.shape)
    dz = rng.uniform(10.0, 200.0, nz)
    g, ptop = 9.81, 100.0
    got = k(rho=rho, dz=dz, g=g, ptop=ptop)
    mass = np.cumsum(g * rho * dz[:, None, None], axis=0)  # (z, y, x) with the x-y halo
    ps = ptop + mass[-1]
    want_psx = 0.5 * (ps[1:-1, 2:] - ps[1:-1, :-2])
    np.testing.assert_allclose(got["psx"][1:-1, 1:-1], want_psx, rtol=1e-12, atol=1e-9)
    want_p = ps[None, 1:-1, 1:-1] - mass[:, 1:-1, 1:-1]
    np.testing.assert_allclose(got["p"][:, 1:-1, 1:-1], want_p, rtol=1e-12, atol=1e-9)


def random_program_text(seed):
    """A random program written here, independently of absinthe's generator: 2 to 5 stencils,
    each a sum of scaled reads of the inputs `in0`, `in1`, a 2-D field `fij` and a 1-D field
    `fk`, and of earlier stencils, at offsets of -1..1, sometimes under min, max or `?:`;
    every stencil no later one reads is an output."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    domain = [int(rng.integers(3, 8)), int(rng.integers(3, 7)), int(rng.integers(2, 5))]
    literals = ["0.5", "0.25", "1.5", "-0.75", "2.0", "0.125"]
    read = [False] * n
    lines = []

    def index(v, o):
        return v if o == 0 else f"{v}{o:+d}"

    for s in range(n):
        terms = []
        for _ in range(int(rng.integers(2, 4))):
            pick = int(rng.integers(0, 4 + s))
            o = [int(x) for x in rng.integers(-1, 2, 3)]
            if pick == 2:
                access = f"fij({index('i', o[0])}, {index('j', o[1])})"
            elif pick == 3:
                access = f"fk({index('k', o[2])})"
            else:
                name = f"in{pick}" if pick < 2 else f"s{pick - 4}"
                if pick >= 4:
                    read[pick - 4] = True
                access = f"{name}({index('i', o[0])}, {index('j', o[1])}, {index('k', o[2])})"
            terms.append(f"{literals[int(rng.integers(0, len(literals)))]} * {access}")
        expr = " + ".join(terms)
        shape = int(rng.integers(0, 4))
        if shape == 1 and len(terms) > 1:
            expr = f"min({terms[0]}, {' + '.join(terms[1:])})"
        elif shape == 2 and len(terms) > 1:
            expr = f"{terms[0]} > 0.9 ? {' + '.join(terms[1:])} : {terms[0]}"
        lines.append(f"  - name: s{s}\n    expr: \"{expr}\"")
    outputs = [f"s{s}" for s in range(n) if not read[s] or s == n - 1]
    halo = n + 1  # each stencil widens what it reads by at most one cell per side
    used = "\n".join(lines)
    fields = "".join(f"  {f}: {d}\n" for f, d in (("fij", "[i, j]"), ("fk", "[k]")) if f + "(" in used)
    return (f"name: random{seed}\ndomain: {domain}\nhalo: [{halo}, {halo}, {halo}]\n"
            f"outputs: [{', '.join(outputs)}]\n" + (f"fields:\n{fields}" if fields else "")
            + f"stencils:\n{used}\n")


@pytest.mark.parametrize("seed", range(12))
def test_random_programs_equal_numpy_bit_for_bit(seed):
    """Random programs (reads of 3-D inputs, 1-D and 2-D fields and earlier stencils; min, ?:),
    solved and compiled as a user would, against the NumPy evaluation, bit for bit."""
    peer = _peer()
    p = absinthe.Program.from_string(random_program_text(seed))
    k = p.compile(p.solve(machine=MACHINE, solver="dp"), threads=2)
    x = inputs_for(k, 100 + seed)
    got = k(**x)
    prog, want, _ = numpy_outputs(peer, p.path, x)
    for out in k.outputs:
        g = window(got[out], prog.halo, (0, 0, 0), prog.domain)
        w = window(want[out], prog.halo, (0, 0, 0), prog.domain)
        assert not np.isnan(w).any(), out
        assert np.array_equal(g, w), f"{out} differs by {np.nanmax(np.abs(g - w))}"


def test_bench_and_tune_are_reachable(tmp_path):
    """`Program.bench` and `Program.tune` run the CLI's commands: every benched variant is
    verified, and tune names a winner among the candidates it timed and writes its solution
    where it is told."""
    import json
    p = program("hdiff", (16, 12, 4))
    rows = p.bench(machine=MACHINE, variants="naive,opt", runs=2)
    assert [r["variant"] for r in rows] == ["naive", "opt"]
    assert all(r["verified"] for r in rows), rows
    out = tmp_path / "hdiff.tuned.yaml"
    report = json.loads(p.tune(machine=MACHINE, extra=["--top", "2", "--refine", "0", "--runs", "2",
                                                       "--confirm", "1", "--format", "json",
                                                       "-o", str(out)]))
    assert report["program"] == "hdiff" and report["winner_seconds"] > 0
    assert report["winner_rank"] in [c["rank"] for c in report["candidates"]]
    assert out.exists()


def test_cache_counts_and_estimates_misses():
    """`Program.cache` runs `absinthe cache`: a variant's counts, a solution's (a Solution or
    its file) the same as its variant's, and with `sample` an estimate that says so; a sample
    that is not a whole number is refused before the CLI runs."""
    p = program("hdiff", (16, 12, 4))
    counted = p.cache(machine=MACHINE)
    assert counted["levels"] and "sampled" not in counted
    assert counted["levels"][0]["accesses"] > 0
    solution = p.solve(machine=MACHINE)
    assert p.cache(machine=MACHINE, solution=solution)["levels"] == counted["levels"]
    estimated = p.cache(machine=MACHINE, sample=65536)
    assert estimated["sampled"] == 65536
    assert estimated["levels"][0]["accesses"] == counted["levels"][0]["accesses"]
    with pytest.raises(TypeError):
        p.cache(machine=MACHINE, sample=65536.0)
    with pytest.raises(absinthe.AbsintheError):
        p.cache(machine=MACHINE, sample=10)


def test_gt4py_calls_cover_every_level_absinthe_computes():
    """benches/gt4py_peer.py runs each GT4Py call over the cells absinthe computes for its
    stencils, beyond the domain along k as well (cosmo_pgrad reads ppk and wnew at k + 1, so both
    are computed one level above the top: GT4Py would leave that level of a temporary unset),
    and never beyond the allocated arrays."""
    gp = _bench_module("gt4py_peer")
    for name in ("cosmo_pgrad", "cosmo_divdamp", "cosmo_hdiff4", "cosmo_hvdiff"):
        prog = gp.hp.load_program(str(ROOT / "configs" / f"{name}.yaml"))
        H, D = prog.halo, prog.domain
        for part in gp.segments(prog):
            origin, domain = gp.segment_box(prog, part)
            for d in range(3):
                assert 0 <= origin[d] and origin[d] + domain[d] <= prog.alloc[d], (name, d)
                for s in part:
                    assert origin[d] <= H[d] - prog.need[s][d][0], (name, s, d)
                    assert origin[d] + domain[d] >= H[d] + D[d] + prog.need[s][d][1], (name, s, d)
        if name == "cosmo_pgrad":
            assert [gp.segment_box(prog, part)[1][2] for part in gp.segments(prog)] == [D[2] + 1]


def _bench_peers():
    """benches/bench_peers.py, the peers suite's program generator."""
    return _bench_module("bench_peers")


@pytest.mark.parametrize("family", ["lapchain", "limited", "upwind3", "upwind5", "vertical"])
def test_generated_suite_programs_equal_numpy_bit_for_bit(family):
    """Every family of `make bench-peers`'s generated programs (seeds 1 and 2, at 12x10x6) is a
    valid program that absinthe's kernel and the independent NumPy evaluation compute alike."""
    suite, peer = _bench_peers(), _peer()
    for seed in (1, 2):
        text = suite.generated(family, seed, 64)
        lines = ["domain: [12, 10, 6]" if l.startswith("domain:") else l for l in text.splitlines()]
        p = absinthe.Program.from_string("\n".join(lines) + "\n")
        k = p.compile(p.solve(machine=MACHINE, solver="dp"), threads=2)
        x = inputs_for(k, seed)
        got = k(**x)
        prog, want, _ = numpy_outputs(peer, p.path, x)
        for out in k.outputs:
            g = window(got[out], prog.halo, (0, 0, 0), prog.domain)
            w = window(want[out], prog.halo, (0, 0, 0), prog.domain)
            assert not np.isnan(w).any(), (family, seed, out)
            assert np.array_equal(g, w), f"{family}{seed} {out} differs by {np.nanmax(np.abs(g - w))}"


def test_peer_suite_table_takes_each_peers_best_verified_row_in_its_own_run():
    """benches/bench_peers.py: per peer, its fastest verified row over `opt` of the same report
    (the rounds' ratio when the report gives one for that row); an unverified faster row is
    passed over; `unfused / opt` from the first report that timed both; and the Markdown table."""
    suite = _bench_peers()
    absinthe_rows = [{"implementation": "absinthe", "variant": "opt", "median": 0.002},
                     {"implementation": "absinthe", "variant": "unfused", "median": 0.005}]
    halide = {"rows": absinthe_rows + [
        {"implementation": "halide", "variant": "adams2019", "median": 0.003, "check": "verified (rel 0)"},
        {"implementation": "halide", "variant": "li2018", "median": 0.001, "check": "MISMATCH"}],
        "best_halide": "adams2019", "best_halide_over_opt": 1.4}
    gt4py = {"rows": [{"implementation": "absinthe", "variant": "opt", "median": 0.004},
                      {"implementation": "gt4py", "variant": "dace:cpu", "median": 0.006,
                       "check": "verified (rel 0)"}]}
    peers, unfused_over_opt = suite.per_peer([halide, None, gt4py])
    assert peers["halide"] == {"best": "adams2019", "seconds": 0.003, "ratio": 1.4}
    assert peers["gt4py"]["best"] == "dace:cpu" and peers["gt4py"]["ratio"] == pytest.approx(1.5)
    assert unfused_over_opt == pytest.approx(2.5)
    row = {"program": "p_64", "opt": 0.002, "ratio": 1.4, "peers": peers, "unfused_over_opt": 2.5}
    lines = suite.table([row], "cpu", "strict").splitlines()
    assert lines[-1] == "| p_64 | 2.000 ms | adams2019 3.000 ms | 1.40 | dace:cpu 6.000 ms | 1.50 | 1.40 | 2.50 |"


def test_peer_suite_from_reports_reads_the_kept_reports_and_writes_nothing(tmp_path, capsys):
    """`bench_peers.py --from-reports` prints the table from NAME.reports.json and the run's
    suite.json, writes no program, and names a program without reports with dashes."""
    suite = _bench_peers()
    rows = [{"implementation": "absinthe", "variant": "opt", "median": 0.002},
            {"implementation": "halide", "variant": "adams2019", "median": 0.003, "check": "verified (rel 0)"}]
    (tmp_path / "lapchain1_8.reports.json").write_text(json.dumps([{"rows": rows, "best_halide": "adams2019"}]))
    (tmp_path / "suite.json").write_text(json.dumps({"cpu": "a CPU", "float": "strict"}))
    args = ["--from-reports", "--out-dir", str(tmp_path), "--programs", "", "--families", "lapchain",
            "--seeds", "1,2", "--sizes", "8"]
    assert suite.main(args) == 0
    out = capsys.readouterr().out
    assert "CPU: a CPU (the run that wrote the reports)" in out
    assert "| lapchain1_8 | 2.000 ms | adams2019 3.000 ms | 1.50 | - | - | 1.50 | - |" in out
    assert "| lapchain2_8 | - | - | - | - | - | - | - |" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lapchain1_8.reports.json", "suite.json"]


def test_row_width_study_keeps_the_volume_and_compares_the_widest_with_the_narrowest():
    """benches/row_width.py: domains of equal volume per plane (a width that does not divide the
    cells is refused), the program's domain and name replaced, and the width factor the ratio
    at the widest row over the ratio at the narrowest, per number of planes."""
    rw = _bench_module("row_width")
    assert rw.domains([64, 256], 16384, 8) == [[64, 256, 8], [256, 64, 8]]
    with pytest.raises(ValueError, match="100 does not divide"):
        rw.domains([64, 100], 16384, 8)
    text = "# c\nname: a\ndomain: [8, 8, 8]\nhalo: [1, 1, 0]\n"
    assert rw.with_domain(text, "b", [4, 16, 2]) == "# c\nname: b\ndomain: [4, 16, 2]\nhalo: [1, 1, 0]\n"
    rows = [{"planes": 4, "width": 256, "ratios": [0.9, 0.9]},
            {"planes": 4, "width": 64, "ratios": [0.6, 0.6]},
            {"planes": 8, "width": 64, "ratios": [0.5, 2.0]}]
    factors = rw.width_factors(rows)
    assert list(factors) == [4] and abs(factors[4] - 1.5) < 1e-12


def test_model_forms_prices_a_bench_row_as_the_published_form(tmp_path):
    """benches/model_forms.py prices a bench row in the published form from the default form's
    counts: on the published form's optimum it equals `solve --model absinthe`'s estimate."""
    import math
    forms = _bench_module("model_forms")
    p = program("hdiff", (36, 20, 6))
    published = p.solve(machine=MACHINE, solver="dp", model="absinthe")
    path = tmp_path / "published.solution.yaml"
    published.save(path)
    rows = p.bench(machine=MACHINE, variants=f"opt,solution:{path}", runs=1)
    row = next(r for r in rows if r["variant"].startswith("solution:"))
    assert row["verified"]
    seconds = forms.published_seconds(row, forms.machine_params(str(MACHINE)))
    assert math.isclose(seconds, published.estimate_seconds, rel_tol=1e-9), (seconds, published)
    # The default form's own estimate of the same configuration differs: stores count twice.
    assert not math.isclose(row["predicted_seconds"], published.estimate_seconds, rel_tol=1e-3)


def test_halide_peer_ratios_are_taken_round_by_round():
    """benches/halide_peer.py --rounds: a row's median is the median of its rounds' medians,
    its min and max over all rounds, and the ratio to opt the median of the rounds' ratios
    (not the ratio of the medians)."""
    peer = _peer()
    opt, halide = {"median": None, "min": None, "max": None}, {"median": None, "min": None, "max": None}
    # The machine slows down in the second round, for both sides alike.
    for o, h in [((1.0, 0.9, 1.2), (1.2, 1.1, 1.3)), ((2.0, 1.8, 2.5), (2.2, 2.0, 2.4)),
                 ((1.1, 1.0, 1.3), (1.0, 0.8, 1.1))]:
        peer.add_round(opt, *o)
        peer.add_round(halide, *h)
    assert opt["round_medians"] == [1.0, 2.0, 1.1] and opt["median"] == 1.1
    assert (opt["min"], opt["max"]) == (0.9, 2.5)
    assert halide["median"] == 1.2 and (halide["min"], halide["max"]) == (0.8, 2.4)
    ratios = peer.paired_ratios(halide, opt)
    assert ratios == pytest.approx([1.2, 1.1, 1.0 / 1.1])
    assert peer.paired_ratio(halide, opt) == pytest.approx(1.1)
    # Without rounds, the ratio of the medians; without a time, none.
    assert peer.paired_ratio({"median": 3.0}, {"median": 2.0}) == 1.5
    assert peer.paired_ratio({"median": None}, {"median": 2.0}) is None
    assert peer.paired_ratios(None, opt) is None


def test_threads_given_one_text_and_one_file_never_meet_half_written_files(tmp_path, monkeypatch):
    import threading
    monkeypatch.setenv("ABSINTHE_CACHE_DIR", str(tmp_path / "cache"))
    text = (ROOT / "configs" / "hdiff.yaml").read_text() + "# padding\n" * 20000
    solution = absinthe.Program.load(ROOT / "configs" / "hdiff.yaml").solve()
    target = tmp_path / "same.yaml"
    errors = []
    barrier = threading.Barrier(4)

    def work():
        try:
            barrier.wait()
            absinthe.Program.from_string(text)
            solution.save(target)
        except Exception as e:  # noqa: BLE001 - the test reports any
            errors.append(repr(e))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert target.read_text() == solution.yaml
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]
    assert not [p for p in (tmp_path / "cache" / "python").iterdir() if p.name.endswith(".tmp")]


def test_the_machine_file_a_nul_and_a_relative_cache_are_handled(tmp_path, monkeypatch):
    machine = tmp_path / "m.yaml"
    machine.write_text((ROOT / "machines" / "default.yaml").read_text())
    p = absinthe.Program.load(ROOT / "configs" / "hdiff.yaml")
    s = p.solve(machine=machine)
    with pytest.raises(absinthe.AbsintheError, match="machine file this solution was solved with"):
        s.save(machine)
    assert machine.read_text() == (ROOT / "machines" / "default.yaml").read_text()
    with pytest.raises(absinthe.AbsintheError, match="path: the path holds a NUL"):
        absinthe.Program.load("a\0b")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ABSINTHE_CACHE_DIR", "-cache")
    q = absinthe.Program.from_string((ROOT / "configs" / "hdiff.yaml").read_text())
    monkeypatch.chdir(ROOT)
    assert q.solve().estimate_seconds > 0
