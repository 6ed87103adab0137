"""The cost of calling a compiled kernel from Python (`make python-overhead`).

Times, in one process: the hdiff kernel at 64x64x60 called from Python on NumPy arrays (the
median of --runs calls, after a warm-up), and the same kernel at a 4x4x2 domain, whose call
is almost all overhead: argument checks, the ctypes call with the GIL released, OpenMP's
fork and join; and that tiny kernel through its C entry point alone (what a C caller pays).
The tiny calls are timed in batches of 20 x --runs calls, the fastest of five batches.
Prints the overheads in microseconds and as shares of the 64x64x60 call, and
the same kernel timed by absinthe's C++ harness (`absinthe bench --variants opt --format json`,
whose runs flush the caches first) for reference.
"""

import argparse
import json
import statistics
import subprocess
import time
import timeit
from pathlib import Path

import numpy as np

import absinthe

ROOT = Path(__file__).resolve().parents[1]


def program_at(domain):
    text = (ROOT / "configs" / "hdiff.yaml").read_text()
    lines = [f"domain: [{domain[0]}, {domain[1]}, {domain[2]}]" if l.startswith("domain:") else l
             for l in text.splitlines()]
    return absinthe.Program.from_string("\n".join(lines) + "\n")


def median_call(kernel, runs):
    rng = np.random.default_rng(0)
    arrays = {n: rng.uniform(-1, 1, kernel.shape) for n in kernel.inputs}
    out = np.zeros(kernel.shape)
    for _ in range(3):
        kernel(**arrays, out=out)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        kernel(**arrays, out=out)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def fastest_batch(call, runs):
    """The per-call time of the fastest of five batches of `runs` calls: for a call of a few
    microseconds, single calls timed one by one are mostly the timer and the machine's noise."""
    call()
    return min(timeit.repeat(call, number=runs, repeat=5)) / runs


def empty_calls(kernel, runs):
    """The tiny kernel called from Python, and through its C entry point alone (no argument
    checks: what the same call costs from C, OpenMP's fork and join included)."""
    import ctypes
    arrays = {n: np.zeros(kernel.shapes[n]) for n in kernel.inputs}
    out = np.zeros(kernel.shape)
    everything = [np.zeros(kernel.shapes[n]) for n, _ in kernel.params]
    argv = (ctypes.c_void_p * len(everything))(*[a.ctypes.data for a in everything])
    scalars = (ctypes.c_double * max(1, len(kernel.scalars)))()
    python = fastest_batch(lambda: kernel(**arrays, out=out), runs)
    raw = fastest_batch(lambda: kernel._fn(argv, scalars, kernel.threads), runs)
    return python, raw


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--machine", default=str(ROOT / "machines" / "default.yaml"))
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--threads", type=int, default=0, help="OpenMP threads (0: OpenMP's default)")
    args = ap.parse_args()
    big = program_at((64, 64, 60))
    kernel = big.compile(big.solve(machine=args.machine), threads=args.threads)
    tiny = program_at((4, 4, 2))
    tiny_kernel = tiny.compile(tiny.solve(machine=args.machine), threads=args.threads)
    call = median_call(kernel, args.runs)
    empty, raw = empty_calls(tiny_kernel, 20 * args.runs)
    bench = json.loads(subprocess.run(
        [absinthe.executable(), "bench", str(big.path), "--machine", args.machine, "--variants", "opt",
         "--runs", str(min(args.runs, 64)), "--format", "json"],
        check=True, capture_output=True, text=True).stdout)
    harness = [r for r in bench if r["variant"] == "opt"][0]["measured_seconds"]
    print(json.dumps({
        "python_call_us": round(call * 1e6, 2),
        "python_empty_call_us": round(empty * 1e6, 2),
        "overhead_share": round(empty / call, 4),
        "c_entry_empty_call_us": round(raw * 1e6, 2),
        "python_share": round((empty - raw) / call, 4),
        "harness_median_us": round(harness * 1e6, 2),
    }))


if __name__ == "__main__":
    main()
