"""The Python package against NumPy evaluations of the same programs, written here
independently of absinthe's code generator and interpreter, and its refusals."""

from pathlib import Path

import numpy as np
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
    return {n: rng.uniform(-1.0, 1.0, kernel.shape).astype(kernel.dtype) for n in kernel.inputs}


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


def test_bad_arrays_are_refused_and_nothing_is_written(j3d7pt):
    _, k = j3d7pt
    x = inputs_for(k, 3)
    out = np.full(k.shape, 5.0, k.dtype)
    cases = [
        (dict(x, **{"in": x["in"].astype(np.float32)}), "expected dtype float64"),
        (dict(x, **{"in": x["in"][:-1]}), "expected shape"),
        (dict(x, **{"in": np.asfortranarray(x["in"])}), "C-contiguous"),
        ({}, "missing input array(s) in"),
        (dict(x, nope=x["in"]), "unknown array(s) nope"),
        (dict(x, out=x["in"]), "shares memory with `in`"),
    ]
    for arrays, message in cases:
        call = dict(arrays)
        if "out" not in call:
            call["out"] = out
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            k(**call)
        assert (out == 5.0).all()


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
