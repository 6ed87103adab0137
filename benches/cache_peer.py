#!/usr/bin/env python3
"""The cache model against Kerncraft's cache simulator (pycachesim), side by side.

For each program and variant: `absinthe cache --trace` counts the misses of every level and
writes the compiled kernel's access stream; the stream is replayed through pycachesim, one
single-level LRU, write-allocate simulator per thread and level (absinthe models the levels
independently, each seeing every access of its thread), set-associative as the level is and
fully associative (one set). Writes are replayed as loads: in a write-allocate LRU cache a
written line is placed and aged as a read one is, which is absinthe's model; pycachesim's own
store path ages lines differently (on random streams with 30% stores its miss counts differ
from a plain LRU's by 0.1-0.3%, on loads alone they are equal). Prints per level absinthe's
misses and pycachesim's, and exits 1 on any difference.

    python benches/cache_peer.py PROGRAM.yaml [--machine M] [--variants opt,unfused] [--domain X,Y,Z]

Needs `pip install pycachesim` (make cache-peer creates build/cache-venv with it).
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

import cachesim


def replay(trace_path, level, fully):
    """Misses of `level` (absinthe's JSON level) per pycachesim over every thread's accesses."""
    per_thread = collections.defaultdict(list)
    with open(trace_path) as f:
        for line in f:
            t, rw, a = line.split()
            per_thread[int(t)].append(int(a))
    misses = 0
    lines = level["bytes"] // level["line"]
    for accesses in per_thread.values():
        sets, ways = (1, lines) if fully else (level["sets"], level["ways"])
        memory = cachesim.MainMemory()
        cache = cachesim.Cache("L", sets, ways, level["line"], "LRU", write_allocate=True)
        memory.load_to(cache)
        memory.store_from(cache)
        sim = cachesim.CacheSimulator(cache, memory)
        for address in accesses:
            sim.load(address, length=1)
        stats = cache.stats()
        misses += stats["MISS_count"]
    return misses


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("program")
    ap.add_argument("--machine", default=None)
    ap.add_argument("--variants", default="opt,unfused")
    ap.add_argument("--absinthe", default="target/release/absinthe")
    ap.add_argument("--domain", help="X,Y,Z: run the program on this domain instead (traces grow with it)")
    ap.add_argument("--small-levels", action="store_true",
                    help="model small levels (1 KiB 2-way; 8 KiB 4-way with 128-byte lines; 32 KiB 8-way "
                         "shared) on machines/default.yaml, so that small domains have capacity misses")
    args = ap.parse_args()
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        if args.domain:
            with open(args.program) as f:
                text = f.read()
            text, n = re.subn(r"(?m)^domain:.*$", f"domain: [{args.domain}]", text, count=1)
            if n != 1:
                sys.exit(f"{args.program}: no top-level `domain:` line to replace")
            args.program = os.path.join(tmp, os.path.basename(args.program))
            with open(args.program, "w") as f:
                f.write(text)
        if args.small_levels:
            with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "machines", "default.yaml")) as f:
                text = f.read()
            args.machine = os.path.join(tmp, "small_levels.yaml")
            with open(args.machine, "w") as f:
                f.write(text + "caches: [{name: L1, bytes: 1024, line: 64, ways: 2}, "
                        "{name: L2, bytes: 8192, line: 128, ways: 4}, "
                        "{name: L3, bytes: 65536, line: 64, ways: 8, shared: true}]\n")
        for variant in args.variants.split(","):
            trace = os.path.join(tmp, "trace.txt")
            cmd = [args.absinthe, "cache", args.program, "--variant", variant,
                   "--format", "json", "--trace", trace]
            if args.machine:
                cmd += ["--machine", args.machine]
            report = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            for level in report["levels"]:
                for fully in (True, False):
                    ours = level["compulsory"] + (level["capacity"] if fully else level["capacity_sa"])
                    theirs = replay(trace, level, fully)
                    same = ours == theirs
                    failed |= not same
                    kind = "fully associative" if fully else f"{level['ways']}-way"
                    print(f"{report['program']} {variant} {level['name']} ({level['bytes']} B per thread, "
                          f"{kind}): absinthe {ours} misses, pycachesim {theirs}{'' if same else '  DIFFERENT'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
