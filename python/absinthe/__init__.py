"""absinthe from Python: programs, solving, and generated kernels run on NumPy arrays.

A thin layer over the ``absinthe`` command line, which stays the one source of truth: every
check, solve and code generation is the CLI's, with its JSON output read back and its error
messages (file, key, column) raised as :class:`AbsintheError`. A compiled kernel is the same
generated OpenMP C++ as ``absinthe codegen``, built into a shared library (cached by a hash of
its source and flags) and called through ctypes on the arrays' own memory, with the GIL
released.

The executable is ``$ABSINTHE_BIN``, else ``absinthe`` on ``PATH``, else a build
(``target/release``, then ``target/debug``) of the repository this package sits in or of the
current directory or one above it.

    import absinthe, numpy as np
    p = absinthe.Program.load("configs/hdiff.yaml")
    s = p.solve(machine="machines/default.yaml")
    k = p.compile(s)
    inputs = {name: np.random.rand(*k.shapes[name]) for name in k.inputs}
    out = k(**inputs)["out"]          # or k(**inputs, out=array) to write into your own
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["AbsintheError", "Program", "Solution", "Group", "Kernel", "executable"]


class AbsintheError(Exception):
    """A refusal of the absinthe command line; the message is the CLI's (file, key, column)."""


def executable() -> str:
    """The absinthe executable this package drives."""
    env = os.environ.get("ABSINTHE_BIN")
    if env:
        return env
    found = shutil.which("absinthe")
    if found:
        return found
    here = Path(__file__).resolve().parents[2]
    cwd = Path.cwd().resolve()
    for root in [here, cwd, *cwd.parents]:
        for build in ("release", "debug"):
            candidate = root / "target" / build / "absinthe"
            if candidate.is_file():
                return str(candidate)
    raise AbsintheError(
        "no absinthe executable: set ABSINTHE_BIN, put absinthe on PATH, or run cargo build --release"
    )


def _run(*args: str) -> str:
    # Not `subprocess.run`: on an exception (Ctrl-C) it kills absinthe outright, whose own
    # handler would otherwise end its compilers and remove its temporaries. Here absinthe gets
    # the interrupt as SIGINT and is waited for.
    exe = executable()
    if any("\0" in a for a in args):
        raise AbsintheError("an argument holds a NUL character, which no command line can carry")
    try:
        proc = subprocess.Popen(
            [exe, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    except OSError as e:
        raise AbsintheError(f"cannot run absinthe at {exe} (ABSINTHE_BIN, else PATH): {e.strerror or e}") from None
    try:
        stdout, stderr = proc.communicate()
    except BaseException:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        raise
    if proc.returncode < 0:
        # Killed: what it printed before (a note) is not why it ended.
        said = f"\n{stderr.strip()}" if stderr.strip() else ""
        raise AbsintheError(f"absinthe {args[0]} was ended by signal {-proc.returncode}{said}")
    if proc.returncode != 0:
        raise AbsintheError(stderr.strip() or f"absinthe {args[0]} failed ({proc.returncode})")
    return stdout


def _beside(target: Path) -> Path:
    """A new empty file of a name no other thread or process has, in `target`'s directory: a
    temporary to write and rename over `target`."""
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    return Path(name)


def _report(text: str, command: str):
    """A command's JSON report, else `AbsintheError` (an executable that is not absinthe)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise AbsintheError(f"absinthe {command} printed no JSON report; is ABSINTHE_BIN absinthe? "
                            f"It printed: {text[:200]!r}") from None


def _cache_dir() -> Path:
    base = os.environ.get("ABSINTHE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "absinthe"
    )
    # Absolute: a relative directory would move with the working directory, and one that
    # begins with `-` would be read as a flag.
    path = Path(base).absolute() / "python"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise AbsintheError(
            f"cannot create the cache directory {path} (ABSINTHE_CACHE_DIR, else XDG_CACHE_HOME or "
            f"~/.cache): {e.strerror}") from None
    return path


@dataclass(frozen=True)
class Group:
    """One fused group of the solution: its stencils, tile counts, tile size, streaming."""

    stencils: list
    tiles: tuple
    tile_size: tuple
    stream: bool


@dataclass(frozen=True)
class Solution:
    """What `absinthe solve` chose: groups, tiles, inline set and the estimated seconds."""

    program: str
    machine: str
    model: str
    estimate_seconds: float
    inline: list
    groups: list
    solver: dict
    # The solution file's text, as `solve --format json` printed it (JSON is YAML: every reader
    # of solution files takes it).
    yaml: str = field(repr=False)
    # The grid of MPI ranks it was priced over (`solve --ranks`), else None.
    ranks: tuple | None = None
    # The program file it was solved for: `save` refuses to replace it.
    program_path: Path | None = field(default=None, repr=False, compare=False)
    # The machine file it was solved with, where one was given: `save` refuses it too.
    machine_path: Path | None = field(default=None, repr=False, compare=False)

    def save(self, path) -> None:
        """Writes the solution file (`absinthe codegen --solution` reads it): whole or not at
        all, through a temporary beside it; never over the program it solves."""
        path = Path(_path("path", path))
        try:
            if self.program_path is not None and path.resolve() == Path(self.program_path).resolve():
                raise AbsintheError(f"{path} is the program this solution solves; save it to another file")
            if self.machine_path is not None and path.resolve() == Path(self.machine_path).resolve():
                raise AbsintheError(f"{path} is the machine file this solution was solved with; save it to another file")
            if path.is_dir():
                raise AbsintheError(f"{path} is a directory, not a file")
            # A link is written through, as the command line writes through it; a FIFO or a
            # device (`/dev/stdout`) is written to, not replaced; a file keeps its mode.
            target = path.resolve() if path.is_symlink() else path
            if target.exists() and not target.is_file():
                with open(target, "w") as f:
                    f.write(self.yaml)
                return
            tmp = _beside(target)
            try:
                tmp.write_text(self.yaml)
                if target.exists():
                    shutil.copymode(target, tmp)
                os.replace(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)
        except OSError as e:
            raise AbsintheError(f"cannot write {path}: {e.strerror or e}") from None


class Program:
    """A stencil program, from a YAML file or string (kept as written)."""

    def __init__(self, text: str, path: Path):
        self.text = text
        self.path = path

    @classmethod
    def load(cls, path) -> "Program":
        path = Path(_path("path", path))
        try:
            if path.exists() and not path.is_file():
                raise AbsintheError(f"{path}: not a regular file")
            with open(path, "rb") as f:
                data = f.read(_MAX_FILE_BYTES + 1)
            if len(data) > _MAX_FILE_BYTES:
                raise AbsintheError(f"{path}: the file is larger than {_MAX_FILE_BYTES >> 20} MiB, the most absinthe reads")
            text = data.decode()
        except OSError as e:
            raise AbsintheError(f"{path}: {e.strerror}") from None
        except UnicodeDecodeError as e:
            raise AbsintheError(f"{path}: not UTF-8 text (byte {e.start})") from None
        program = cls(text, path.resolve())
        program.check()
        return program

    @classmethod
    def from_string(cls, text: str) -> "Program":
        """A program given as its YAML text, kept in the cache directory by its digest; a text
        the CLI refuses is not kept, and its errors name `<string>`."""
        if not isinstance(text, str):
            raise TypeError(f"Program.from_string takes the program's text, found {type(text).__name__}")
        try:
            data = text.encode()
        except UnicodeEncodeError as e:
            raise AbsintheError(f"<string>: not valid Unicode (character {e.start} is a lone surrogate)") from None
        digest = hashlib.sha256(data).hexdigest()[:16]
        path = _cache_dir() / f"program-{digest}.yaml"
        if path.exists():
            program = cls(text, path)
            program.check()
            return program
        # Checked under a name of its own, kept under the digest's only when valid: threads
        # and processes given the same text never read a file another is writing.
        tmp = _beside(path)
        try:
            tmp.write_text(text)
            try:
                cls(text, tmp).check()
            except AbsintheError as e:
                raise AbsintheError(str(e).replace(str(tmp), "<string>")) from None
            os.replace(tmp, path)
        except OSError as e:
            raise AbsintheError(f"cannot keep the program in {path.parent}: {e.strerror or e}") from None
        finally:
            tmp.unlink(missing_ok=True)
        return cls(text, path)

    def check(self) -> dict:
        """`absinthe check`: the program's arrays, reads and extents (raises on a bad program)."""
        return _report(_run("check", str(self.path), "--format", "json"), "check")

    @property
    def name(self) -> str:
        return self.check()["program"]

    @property
    def scalars(self) -> list:
        """The program's run-time scalars (`scalars:`), in the order the kernel takes them."""
        return self.check().get("scalars", [])

    def solve(self, machine=None, solver: str = "highs", extra=(), model=None) -> Solution:
        """`absinthe solve` against a machine file (default: the shipped default); `model`
        names the form of the model (`linear` or `absinthe`; default: the file's)."""
        # `--flag=value`, so that a value that begins with `-` is not read as a flag.
        args = ["solve", str(self.path), f"--solver={_text('solver', solver)}", *_words(extra)]
        if machine is not None:
            args.append(f"--machine={_path('machine', machine)}")
        if model is not None:
            args.append(f"--model={_text('model', model)}")
        # One run: the report and the file it writes are the same solve.
        text = _run(*args, "--format", "json")
        report = _report(text, "solve")
        return Solution(
            program=report["program"],
            machine=report["machine"],
            model=report.get("model", "linear"),
            estimate_seconds=report["estimate_seconds"],
            inline=list(report.get("inline", [])),
            groups=[
                Group(g["stencils"], tuple(g["tiles"]), tuple(g["tile_size"]), bool(g.get("stream", False)))
                for g in report["groups"]
            ],
            solver=report["solver"],
            yaml=text,
            ranks=tuple(report["ranks"]) if "ranks" in report else None,
            program_path=self.path,
            machine_path=Path(_path("machine", machine)) if machine is not None else None,
        )

    def bench(self, machine=None, variants: str = "naive,unfused,opt", runs: int = 16,
              scalars: dict | None = None) -> list:
        """`absinthe bench --format json`: one row per variant (verified, timed); `scalars` maps
        scalar names to the values the harness passes (`--scalar NAME=VALUE`)."""
        if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)):
            raise TypeError(f"runs: expected a whole number, found {type(runs).__name__}")
        if scalars is not None and not isinstance(scalars, dict):
            raise TypeError(f"scalars: expected a dict of names to numbers, found {type(scalars).__name__}")
        args = ["bench", str(self.path), f"--variants={_text('variants', variants)}", f"--runs={runs}"]
        for name, value in (scalars or {}).items():
            if not _text("scalar name", name).isidentifier():
                raise ValueError(f"scalar name {name!r}: expected the name of one of the program's scalars")
            args.append(f"--scalar={name}={_scalar(name, value)!r}")
        if machine is not None:
            args.append(f"--machine={_path('machine', machine)}")
        return _report(_run(*args, "--format", "json"), "bench")

    def cache(self, machine=None, variant: str = "opt", solution=None, sample: int | None = None) -> dict:
        """`absinthe cache --format json`: each cache level's misses of `variant`'s kernel, or of
        `solution` (a Solution, or a solution file), counted without running it (docs/MODEL.md,
        "Cache model"). `sample`: estimate each group from a sample of about that many accesses
        instead (at least 65536; docs/MODEL.md, "Sampled counts"); the report then carries
        `"sampled"`."""
        args = ["cache", str(self.path)]
        if sample is not None:
            if isinstance(sample, bool) or not isinstance(sample, (int, np.integer)):
                raise TypeError(f"sample: expected a whole number of accesses, found {type(sample).__name__}")
            args.append(f"--sample={int(sample)}")
        if machine is not None:
            args.append(f"--machine={_path('machine', machine)}")
        if solution is None:
            return _report(_run(*args, f"--variant={_text('variant', variant)}", "--format", "json"), "cache")
        if not isinstance(solution, Solution):
            return _report(_run(*args, f"--solution={_path('solution', solution)}", "--format", "json"), "cache")
        # A Solution is passed as its file, written under a name of its own and removed after.
        tmp = _beside(_cache_dir() / "solution.yaml")
        try:
            tmp.write_text(solution.yaml)
            return _report(_run(*args, f"--solution={tmp}", "--format", "json"), "cache")
        finally:
            tmp.unlink(missing_ok=True)

    def tune(self, machine=None, extra=()) -> str:
        """`absinthe tune`: its report, as the CLI prints it."""
        args = ["tune", str(self.path), *_words(extra)]
        if machine is not None:
            args.append(f"--machine={_path('machine', machine)}")
        return _run(*args)

    def compile(self, solution: Solution | None = None, machine=None, threads: int | None = None) -> "Kernel":
        """The OpenMP kernel of `solution` (default: solve on `machine` first) as a shared library.
        `threads`: the OpenMP threads each call runs with, a whole number from 0 (OpenMP's own
        default) to 4096, else `ValueError`; by default the machine file's `cores` when `machine`
        is given and has them, else 0."""
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, (int, np.integer))
                                    or not 0 <= threads <= _MAX_THREADS):
            raise ValueError(f"threads: expected a whole number from 0 (OpenMP's default) to "
                             f"{_MAX_THREADS}, found {threads!r}")
        if solution is not None and not isinstance(solution, Solution):
            raise TypeError(f"solution: expected a Solution (from Program.solve), found {type(solution).__name__}")
        if machine is not None:
            machine = _path("machine", machine)
        with tempfile.TemporaryDirectory() as tmp:
            args = ["codegen", str(self.path), "-o", tmp]
            if machine is not None:
                args.append(f"--machine={machine}")
            if solution is not None:
                sol = Path(tmp) / "solution.yaml"
                solution.save(sol)
                args.append(f"--solution={sol}")
            _run(*args)
            headers = list(Path(tmp).glob("*.h"))
            if len(headers) != 1:
                raise AbsintheError(f"codegen wrote {len(headers)} headers, expected one")
            header = headers[0]
            source = header.with_suffix(".cpp")
            if threads is None:
                threads = _machine_cores(machine) if machine is not None else 0
            return Kernel._build(header.read_text(), source.read_text(), header.name, int(threads))


_PARAM = re.compile(r"^(const )?(double|float)\* __restrict a_(\w+),? // (input|output|temporary)"
                    r"(?: \(field over ([ijk]+)\))?$")
_LAYOUT = re.compile(r"Memory layout of every array argument: (double|float)\[(\d+)\]\[(\d+)\]\[(\d+)\]")
_KERNEL = re.compile(r"^void (\w+)\($", re.M)
_SCALAR = re.compile(r"^    , const (double|float) sc_(\w+) // scalar `(\w+)`$")

_CXX_FLAGS = ["-O3", "-march=native", "-fopenmp", "-ffp-contract=off", "-fno-trapping-math",
              "-fno-math-errno", "-fPIC", "-shared"]


# The most bytes a program file may have, as the CLI reads them.
_MAX_FILE_BYTES = 16 << 20

# The most threads a kernel runs with: the CLI's bound on a machine file's `cores`.
_MAX_THREADS = 4096

_CORES = re.compile(r"^cores:[ \t]*\+?(0x[0-9a-fA-F]+|0o[0-7]+|\d+)[ \t]*(?:#.*)?$", re.M)
# The same key in a machine file written as JSON (which is YAML too).
_CORES_JSON = re.compile(r'"cores"[ \t\r\n]*:[ \t\r\n]*(\d+)')


def _words(extra) -> list:
    """Extra command-line words: a string is one word, not its characters; else a sequence of
    strings and numbers (`TypeError` otherwise)."""
    if isinstance(extra, str):
        return [extra]
    if isinstance(extra, (bytes, dict)) or not isinstance(extra, Iterable):
        raise TypeError(f"extra: expected a string or a sequence of strings, found {type(extra).__name__}")
    words = list(extra)
    kinds = (str, int, float, os.PathLike, np.integer, np.floating)
    for w in words:
        if isinstance(w, (bool, np.bool_)) or not isinstance(w, kinds):
            raise TypeError(f"extra: expected strings, paths or numbers, found {type(w).__name__} ({w!r})")
    return [os.fspath(w) if isinstance(w, os.PathLike) else str(w) for w in words]


def _path(name, value) -> str:
    """A file argument as the command line takes it: a string or `os.PathLike`, else
    `TypeError` naming the argument."""
    if isinstance(value, bool) or not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name}: expected a path (str or os.PathLike), found {type(value).__name__}")
    path = os.fspath(value)
    if "\0" in os.fsdecode(path):
        raise AbsintheError(f"{name}: the path holds a NUL character, which no file name can")
    return path


def _text(name, value) -> str:
    """A word-valued argument (a solver, a variant list, a model): a string, else `TypeError`."""
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected a string, found {type(value).__name__}")
    return value


def _scalar(name, value) -> float:
    """A scalar's value for `--scalar`: a real number, else `ValueError` (as a kernel call)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"scalar {name}: expected a real number, found {type(value).__name__}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"scalar {name}: the value is beyond a double's range") from None


def _machine_cores(machine) -> int:
    """A machine file's `cores` (the CLI has read and checked the file by then), else 0. The
    integer forms are YAML 1.2's, as the CLI reads them: decimal, `0x` hexadecimal, `0o` octal."""
    text = Path(machine).read_text()
    found = _CORES.search(text) or _CORES_JSON.search(text)
    if not found:
        return 0
    text = found.group(1)
    return int(text, 0) if text[:2] in ("0x", "0o") else int(text, 10)


def _address(array: np.ndarray) -> int:
    """The address of a C-contiguous array's first element: through the buffer protocol for a
    writeable one (a third of `ndarray.ctypes.data`'s cost, which builds a ctypes helper
    object), else through `ctypes.data`."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(array))
    except (TypeError, ValueError, BufferError):
        return array.ctypes.data


def _span(array: np.ndarray) -> tuple:
    """The byte range `[first, end)` a C-contiguous array occupies."""
    first = _address(array)
    return first, first + array.nbytes


class Kernel:
    """A compiled kernel: call it with the input arrays (and optionally the output arrays) by
    name; every array is C-contiguous, of the program's dtype and of shape :attr:`shape`
    (z, y, x with the halo: element (i, j, k) at ``[k + Hz, j + Hy, i + Hx]``), or for a field
    (``fields:``) of its own dimensions only, :attr:`shapes` (``dz: [k]`` is ``(Z,)``,
    ``hsurf: [i, j]`` is ``(Y, X)``)."""

    def __init__(self, lib, fn, kernel, params, scalars, dtype, shape, threads, dims=None):
        self._lib, self._fn, self.kernel = lib, fn, kernel
        self.params, self.dtype, self.shape, self.threads = params, dtype, shape, threads
        self.scalars = scalars
        self.dims = dims = dims or {}
        # (z, y, x) keeps the entries of the dimensions an array has.
        self.shapes = {n: tuple(shape[2 - d] for d in (2, 1, 0) if "ijk"[d] in dims.get(n, "ijk"))
                       for n, _ in params}
        self.inputs = [n for n, r in params if r == "input"]
        self.outputs = [n for n, r in params if r == "output"]
        # What every call consults, computed once.
        self._dtype = np.dtype(dtype)
        self._roles = {n: r for n, r in params if r != "temporary"}
        self._scalar_set = frozenset(scalars)
        self._accepted = frozenset(self._roles) | self._scalar_set
        self._required = frozenset(self.inputs) | self._scalar_set
        self._strides = {n: tuple(int(np.prod(s[k + 1:], dtype=np.int64)) * self._dtype.itemsize
                                  for k in range(len(s)))
                         for n, s in self.shapes.items()}
        self._argv_type = ctypes.c_void_p * len(params)
        self._scalars_type = ctypes.c_double * max(1, len(scalars))

    @classmethod
    def _build(cls, header: str, source: str, header_name: str, threads: int) -> "Kernel":
        layout = _LAYOUT.search(header)
        kernel = _KERNEL.search(header)
        matches = [m for m in map(_PARAM.match, header.splitlines()) if m]
        params = [(m.group(3), m.group(4)) for m in matches]
        dims = {m.group(3): m.group(5) for m in matches if m.group(5)}
        scalars = [m.group(3) for m in map(_SCALAR.match, header.splitlines()) if m]
        if not (layout and kernel and params):
            raise AbsintheError("the generated header is not in the form this package reads")
        dtype = np.float64 if layout.group(1) == "double" else np.float32
        shape = tuple(int(layout.group(g)) for g in (2, 3, 4))
        ctype = layout.group(1)
        casts = ", ".join(
            [f"({'const ' if r == 'input' else ''}{ctype}*)arrays[{n}]" for n, (_, r) in enumerate(params)]
            + [f"({ctype})scalars[{n}]" for n in range(len(scalars))]
        )
        shim = (
            f'#include <omp.h>\n#include "{header_name}"\n'
            f'extern "C" void absinthe_call(void* const* arrays, const double* scalars, int threads)\n'
            # The caller's thread count is restored: another kernel's default stays OpenMP's.
            f"{{\n    int before = omp_get_max_threads();\n    if (threads > 0) omp_set_num_threads(threads);\n"
            f"    {kernel.group(1)}({casts});\n    if (threads > 0) omp_set_num_threads(before);\n}}\n"
        )
        cxx = os.environ.get("CXX") or "g++"
        try:
            compiler = shlex.split(cxx)
        except ValueError as e:
            raise AbsintheError(f"CXX={cxx!r}: not a command ({e})") from None
        if not compiler:
            compiler = ["g++"]
        digest = hashlib.sha256("\0".join([header, source, shim, cxx, *_CXX_FLAGS]).encode()).hexdigest()[:24]
        lib_path = _cache_dir() / f"kernel-{digest}.so"
        if not lib_path.exists():
            with tempfile.TemporaryDirectory() as tmp:
                d = Path(tmp)
                (d / header_name).write_text(header)
                (d / "kernel.cpp").write_text(source)
                (d / "shim.cpp").write_text(shim)
                out = d / "kernel.so"
                try:
                    proc = subprocess.run([*compiler, *_CXX_FLAGS, "kernel.cpp", "shim.cpp", "-o", str(out)],
                                          cwd=d, capture_output=True, text=True)
                except (OSError, ValueError) as e:
                    raise AbsintheError(f"cannot run the compiler {cxx!r} (CXX): {e}") from None
                if proc.returncode != 0:
                    raise AbsintheError(f"{cxx} failed on the generated kernel:\n{proc.stderr}")
                if not out.is_file():
                    raise AbsintheError(f"{cxx} (CXX) exited 0 but wrote no shared library")
                tmp_lib = _beside(lib_path)
                try:
                    shutil.copyfile(out, tmp_lib)
                    os.replace(tmp_lib, lib_path)
                finally:
                    tmp_lib.unlink(missing_ok=True)
        try:
            lib = ctypes.CDLL(str(lib_path))
        except OSError as e:
            raise AbsintheError(f"cannot load the compiled kernel {lib_path}: {e}") from None
        fn = lib.absinthe_call
        fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_double), ctypes.c_int]
        fn.restype = None
        return cls(lib, fn, kernel.group(1), params, scalars, dtype, shape, threads, dims)

    def _scalar(self, name: str, value) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValueError(f"scalar `{name}`: expected a number, found {type(value).__name__}")
        try:
            v = float(value)
        except OverflowError:
            raise ValueError(f"scalar `{name}`: {value!r} is too large for a double") from None
        if not math.isfinite(v):
            raise ValueError(f"scalar `{name}`: expected a finite number, found {v}")
        if self._dtype == np.float32:
            # The kernel takes it as a float, as `codegen --scalar` refuses: no infinity, no
            # silent zero.
            with np.errstate(over="ignore", under="ignore"):
                f = np.float32(v)
            if not np.isfinite(f):
                raise ValueError(f"scalar `{name}`: {v!r} is too large for a float (the kernel's type)")
            if v != 0.0 and f == 0.0:
                raise ValueError(f"scalar `{name}`: {v!r} is too small for a float (the kernel's type): it rounds to zero")
        return v

    def _checked(self, name: str, array) -> np.ndarray:
        if not isinstance(array, np.ndarray):
            raise ValueError(f"array `{name}`: expected a numpy.ndarray, found {type(array).__name__}")
        if isinstance(array, np.ma.MaskedArray):
            raise ValueError(f"array `{name}`: a masked array, whose mask the kernel would ignore; "
                             f"pass its .filled(value) or .data")
        if array.dtype is not self._dtype and array.dtype != self._dtype:
            found = array.dtype.name
            if found == self._dtype.name:
                found = f"{found} in {'big' if array.dtype.byteorder == '>' else 'little'}-endian byte order"
            raise ValueError(f"array `{name}`: expected dtype {np.dtype(self.dtype).name} in this machine's "
                             f"byte order, found {found}")
        want = self.shapes[name]
        if array.shape != want:
            axes = ", ".join("zyx"[2 - d] for d in (2, 1, 0) if "ijk"[d] in self.dims.get(name, "ijk"))
            raise ValueError(f"array `{name}`: expected shape {want} ({axes} with the halo), found {array.shape}")
        if array.strides != self._strides[name] and not array.flags.c_contiguous:
            raise ValueError(f"array `{name}`: expected a C-contiguous array (x fastest), found strides {array.strides}")
        return array

    def __call__(self, /, **arguments) -> dict:
        """Runs the kernel: inputs by name (required), the program's run-time scalars by name
        (required, finite numbers, converted to the program's type), outputs by name (optional:
        allocated and returned when absent). Returns the outputs. Every argument is checked
        before the kernel runs; nothing is written when one is refused."""
        names = arguments.keys()
        if not names <= self._accepted:
            unknown = sorted(names - self._accepted)
            raise ValueError(f"unknown argument(s) {', '.join(unknown)}: the kernel takes "
                             f"inputs {self.inputs}, outputs {self.outputs} and scalars {self.scalars}")
        if not self._required <= names:
            missing = [n for n in self.inputs if n not in arguments]
            if missing:
                raise ValueError(f"missing input array(s) {', '.join(missing)}")
            missing = [n for n in self.scalars if n not in arguments]
            raise ValueError(f"missing scalar(s) {', '.join(missing)}")
        values = [self._scalar(n, arguments[n]) for n in self.scalars]
        # C-contiguous arrays share memory exactly when their byte ranges overlap.
        spans, dtype, shapes, strides = {}, self._dtype, self.shapes, self._strides
        for n, a in arguments.items():
            if n in self._scalar_set:
                continue
            if not (type(a) is np.ndarray and a.dtype is dtype and a.shape == shapes[n]
                    and a.strides == strides[n]):
                self._checked(n, a)
            spans[n] = _span(a)
        for n in self.outputs:
            if n not in spans:
                continue
            if not arguments[n].flags.writeable:
                raise ValueError(f"array `{n}`: the output must be writeable")
            lo, hi = spans[n]
            for other, (olo, ohi) in spans.items():
                if other != n and lo < ohi and olo < hi:
                    raise ValueError(f"array `{n}`: the output shares memory with `{other}`")
        results = {n: arguments[n] for n in self.outputs if n in spans}
        addresses = []
        # Temporaries are scratch between the kernel's groups; `keep` holds them for the call.
        keep = []
        for n, r in self.params:
            if n in spans:
                addresses.append(spans[n][0])
            elif r == "temporary":
                keep.append(np.empty(shapes[n], dtype))
                addresses.append(_address(keep[-1]))
            else:
                results[n] = np.zeros(shapes[n], dtype)
                addresses.append(_address(results[n]))
        self._fn(self._argv_type(*addresses), self._scalars_type(*values), self.threads)
        return {n: results[n] for n in self.outputs}
