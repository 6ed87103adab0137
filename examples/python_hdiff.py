"""Solve hdiff for this machine, compile it, and run it on NumPy arrays.

    pip install ./python          # once, into your venv
    python examples/python_hdiff.py [machine.yaml]
"""

import sys
import time
from pathlib import Path

import numpy as np

import absinthe

root = Path(__file__).resolve().parents[1]
machine = sys.argv[1] if len(sys.argv) > 1 else root / "machines" / "default.yaml"
program = absinthe.Program.load(root / "configs" / "hdiff.yaml")
solution = program.solve(machine=machine)
print(f"{solution.program}: estimate {solution.estimate_seconds * 1e6:.1f} us, inlined {solution.inline}")
for g in solution.groups:
    print(f"  group {g.stencils}: tiles {g.tiles}, tile size {g.tile_size}, streamed {g.stream}")

kernel = program.compile(solution)
rng = np.random.default_rng(0)
arrays = {name: rng.uniform(-1, 1, kernel.shape) for name in kernel.inputs}
out = np.zeros(kernel.shape)
kernel(**arrays, out=out)                      # zero copy: the kernel writes into `out`
start = time.perf_counter()
for _ in range(20):
    kernel(**arrays, out=out)
print(f"{kernel.kernel}: {(time.perf_counter() - start) / 20 * 1e6:.1f} us a call, "
      f"arrays of shape {kernel.shape} (z, y, x with the halo)")
