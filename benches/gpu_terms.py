#!/usr/bin/env python3
"""GPU model terms tried on the stored H100 and H200 timings (tests/data/*-learn).

Reads the CSV files `cargo run -p absinthe-learn --example gpu_terms -- DIR` writes and fits, by
least squares of the relative error with coefficients held non-negative (as learn's fit), the
slow family's training cases under three forms of the slow side:

- model:     V s + B p (the model's slow stream body s and slow base peel p);
- occupancy: V s max(1, W0 / w) + B p, w the warps resident per SM (blocks per SM from the
             threads and the shared memory of one block, at most the blocks the grid has per
             SM), for several W0;
- halo:      Vc c + Vx hx + Vyz (hy + hz) + B p, with s split into the compulsory accesses c (every
             tile count 1) and the halo re-reads hx, hy, hz each dimension's tiling adds.

Each form's fit (with the fast family's F and K) then predicts the kernel variants the refit
timed on the same device, each stencil at max(fast, slow): the check that a term transfers
from the training chains to real kernels. Needs numpy (build/halide-venv has it).

    build/halide-venv/bin/python benches/gpu_terms.py DIR
"""

import argparse
import csv
import itertools
import math
import os
import sys
from collections import defaultdict

import numpy as np

# sm_90 (H100, H200): the shipped files' `gpu.sm_count`, and the per-SM limits of the device.
SMS = 132
SHARED_PER_SM = 228 * 1024
THREADS_PER_SM = 2048
BLOCKS_PER_SM = 32
VALUE_BYTES = 8


def nnls(a, y):
    """Least squares of a @ c / y against 1 with c >= 0, by trying every subset of columns."""
    w = a / y[:, None]
    best, best_err = np.zeros(a.shape[1]), math.inf
    for k in range(1, a.shape[1] + 1):
        for cols in itertools.combinations(range(a.shape[1]), k):
            c, *_ = np.linalg.lstsq(w[:, cols], np.ones_like(y), rcond=None)
            if (c < 0).any():
                continue
            err = ((w[:, cols] @ c - 1) ** 2).sum()
            if err < best_err:
                best_err, best = err, np.zeros(a.shape[1])
                best[list(cols)] = c
    return best


def scores(pred, y):
    r2 = 1 - ((y - pred) ** 2).sum() / ((y - y.mean()) ** 2).sum()
    return r2, np.mean(np.abs(pred / y - 1) < 0.2)


def ranks(v):
    order = np.argsort(v, kind="stable")
    r = np.empty(len(v))
    r[order] = np.arange(len(v))
    return r


def spearman(a, b):
    return np.corrcoef(ranks(np.array(a)), ranks(np.array(b)))[0, 1]


def warps_resident(r):
    threads = int(r["bx"]) * int(r["by"])
    shared = int(r["shared_values"]) * VALUE_BYTES
    limit = min(BLOCKS_PER_SM, THREADS_PER_SM // threads)
    if shared:
        limit = min(limit, SHARED_PER_SM // (shared + 1024))
    blocks = int(r["tx"]) * int(r["ty"]) * int(r["tz"])
    return min(limit, math.ceil(blocks / SMS)) * threads / 32


def slow_columns(form, rows, w0=0):
    col = lambda k: np.array([float(r[k]) for r in rows])
    s, p, c = col("stream_body"), col("base_peel"), col("compulsory")
    if form == "model":
        return np.array([s, p]).T
    if form == "occupancy":
        f = np.array([max(1.0, w0 / warps_resident(r)) for r in rows])
        return np.array([s * f, p]).T
    hx, hy, hz = col("stream_x") - c, col("stream_y") - c, col("stream_z") - c
    return np.array([c, hx, hy + hz, p]).T


def kernel_slow(form, coef, r):
    """A kernel stencil's slow seconds under a fitted form, from its stream weights."""
    w = [float(r[k]) for k in ("w0", "wx", "wy", "wz")]
    d = [float(r[k]) for k in ("dx", "dy", "dz")]
    n = [float(r[k]) for k in ("nx", "ny", "nz")]
    faces = [d[1] * d[2], d[0] * d[2], d[0] * d[1]]
    s, p = float(r["stream_body"]), float(r["base_peel"])
    compulsory = w[0] * d[0] * d[1] * d[2] + sum(w[1 + k] * faces[k] for k in range(3))
    halo = [w[1 + k] * (n[k] - 1) * faces[k] for k in range(3)]
    assert abs(compulsory + sum(halo) - s) <= 1e-9 * s + 1, (compulsory, halo, s)
    if form == "model":
        return coef[0] * s + coef[1] * p
    return coef[0] * compulsory + coef[1] * halo[0] + coef[2] * (halo[1] + halo[2]) + coef[3] * p


def device(d, data):
    rows = list(csv.DictReader(open(os.path.join(d, f"{data}.csv"))))
    slow = [r for r in rows if r["family"] == "slow"]
    fast = [r for r in rows if r["family"] == "fast"]
    ys = np.array([float(r["seconds"]) for r in slow])
    yf = np.array([float(r["seconds"]) for r in fast])
    fa = np.array([[float(r["fast_body"]), float(r["compute_body"])] for r in fast])
    fc = nnls(fa, yf)
    r2, w = scores(fa @ fc, yf)
    print(f"{data}: fast family ({len(fast)} cases) F, K = {fc[0]:.3e}, {fc[1]:.3e}: R² {r2:.3f}, {w:.0%} within 20%")
    fits = {}
    print(f"{data}: slow family ({len(slow)} cases)")
    for form, w0 in [("model", 0)] + [("occupancy", w) for w in (8, 16, 24, 32, 48)] + [("halo", 0)]:
        a = slow_columns(form, slow, w0)
        c = nnls(a, ys)
        r2, w = scores(a @ c, ys)
        name = form + (f" W0={w0}" if form == "occupancy" else "")
        print(f"  {name:<16} R² {r2:6.3f}  within 20% {w:4.0%}  coefficients {' '.join(f'{x:.3e}' for x in c)}")
        if form != "occupancy":
            fits[form] = c
    kernels = list(csv.DictReader(open(os.path.join(d, f"{data}-kernels.csv"))))
    measured = {}
    for r in kernels:
        measured[(r["program"], r["variant"])] = float(r["seconds"])
    for form, c in fits.items():
        pred = defaultdict(float)
        for r in kernels:
            fast_s = fc[0] * float(r["fast_body"]) + fc[1] * float(r["compute_body"])
            pred[(r["program"], r["variant"])] += max(fast_s, kernel_slow(form, c, r))
        keys = sorted(measured)
        ratio = np.array([measured[k] / pred[k] for k in keys])
        per = []
        for prog in sorted({k[0] for k in keys}):
            ks = [k for k in keys if k[0] == prog]
            per.append(f"{prog} {spearman([measured[k] for k in ks], [pred[k] for k in ks]):.2f}")
        print(
            f"  kernels, {form:<6} {np.mean(np.abs(1 / ratio - 1) < 0.2):4.0%} of {len(keys)} within 20%, "
            f"measured/predicted median {np.median(ratio):.2f}; Spearman {', '.join(per)}"
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", help="the directory the gpu_terms example wrote")
    args = ap.parse_args()
    for data in ("h100-learn", "h200-learn"):
        if not os.path.exists(os.path.join(args.dir, f"{data}.csv")):
            sys.exit(f"{args.dir}: no {data}.csv (run: cargo run -p absinthe-learn --example gpu_terms -- {args.dir})")
        device(args.dir, data)


if __name__ == "__main__":
    main()
