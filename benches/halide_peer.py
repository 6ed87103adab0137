#!/usr/bin/env python3
"""Compare absinthe's generated code with Halide's autoschedulers on one stencil program.

The same YAML program (configs/*.yaml) is run, on this machine and in one invocation, as

  * absinthe's variants naive, unfused, noinline and opt (`absinthe bench ... --format json`), and
  * a Halide pipeline built from the program, scheduled by each of Halide's CPU
    autoschedulers (Mullapudi2016, Adams2019, Li2018) and by Halide's default schedule
    ("none": every stage inlined into serial, unvectorised outputs),

one after the other (never concurrently), and prints one table: median, min and max time per
run, and the speed-up of each row over absinthe `opt` and over `unfused`.

Every pipeline is scheduled and compiled first; then --rounds rounds (default 3) each time
absinthe's opt (the first round all four variants) and every pipeline back to back. A row's
median is the median of its rounds' medians, and the ratio of the best autoscheduler to opt
(`best_halide_over_opt` in the JSON, with each round's in `best_halide_over_opt_rounds`) the
median of the rounds' ratios: this machine's memory bandwidth shifts by about 30% within
minutes, and a ratio of two rows timed minutes apart moved with it.

Timing follows absinthe's harness: one untimed warm-up, then --runs runs, each preceded by a
cache flush that reads (in parallel, one load per cache line) a buffer of 1.25 x the
last-level cache (absinthe's side with `bench --flush read`: its default, evicting its own
arrays and tile buffers, has no counterpart for the buffers Halide allocates inside a
pipeline); the first quarter of the runs is discarded. Halide runs on --threads
threads (HL_NUM_THREADS); absinthe's kernels use the cores of the --machine file.

Memory is laid out the same on both sides: arrays staggered modulo 4 KiB as absinthe's
harness staggers them, and arrays of 2 MiB and more on transparent huge pages (--huge-pages,
default on: absinthe's harness madvises its arrays, this script its NumPy buffers, and it
runs itself with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 so that Halide's allocations get them
too).

Floating point is the same on both sides (--float), without reassociation on either by
default: --float strict (the default) runs Halide with the StrictFloat target feature against
absinthe's FMA build, the build its machine files are learned in. Without StrictFloat,
Halide's simplifier treats float arithmetic as real arithmetic (it turns (a/60)*u - (b/60)*w
into one product by 1/60); --float relaxed compares that with absinthe's `bench
--relaxed-math` (the kernels compiled with -fassociative-math -freciprocal-math
-fno-signed-zeros).

Correctness: the Halide inputs are filled exactly as absinthe's harness fills them (the hash
absinthe_value of codegen/templates/harness_body.j2), and every Halide output is compared
with the outputs absinthe's `opt` kernel dumps (ABSINTHE_DUMP_OUTPUTS), within a tolerance
relative to each array's largest magnitude (1e-10 for double, 1e-4 for float: FMA
contraction may differ between g++ and Halide). Without absinthe (--no-absinthe), the
Halide rows are compared with each other instead, and the output says so.
"""

import argparse
import gc
import json
import math
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from fractions import Fraction

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCHEDULERS = {
    # command-line name: (Halide's registered name, plugin file stem); None = default schedule
    "mullapudi2016": ("Mullapudi2016", "mullapudi2016"),
    "adams2019": ("Adams2019", "adams2019"),
    "li2018": ("Li2018", "li2018"),
    "none": None,
}

FUNCTIONS = {"sqrt": 1, "fabs": 1, "abs": 1, "exp": 1, "log": 1, "pow": 2, "min": 2, "max": 2,
             "floor": 1, "ceil": 1}
# Functions C programmers reach for that the language lacks (reported as unknown functions,
# as absinthe does, instead of as malformed array accesses).
FOREIGN_FUNCTIONS = set(
    "sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh exp2 expm1 log2 log10 "
    "log1p cbrt hypot fmin fmax fmod round trunc rint lround fma erf erfc tgamma lgamma "
    "copysign sqrtf fabsf powf expf logf floorf ceilf fminf fmaxf sign sgn square sq ln".split())
INDEX_NAMES = ("i", "j", "k")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class UserError(Exception):
    """A one-line error for the user (no traceback)."""


# ---------------------------------------------------------------------------------------------
# The expression language (model/src/language/expr.rs): lexer and precedence-climbing parser.
# The tree: ("num", text, value) | ("local", name) | ("access", array, (a, b, c))
#         | ("neg"|"not", e) | ("bin", op, lhs, rhs) | ("cond", c, then, otherwise)
#         | ("call", name, [args])
# ---------------------------------------------------------------------------------------------

class ParseError(Exception):
    def __init__(self, message, column):
        super().__init__(message)
        self.column = column


BINARY_PRECEDENCE = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, "<=": 4, ">": 4, ">=": 4,
                     "+": 5, "-": 5, "*": 6, "/": 6}
NUMBER = re.compile(r"(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
TWO_CHAR = ("<=", ">=", "==", "!=", "&&", "||")
ONE_CHAR = set("+-*/<>!?:(),")
HINTS = {"=": "; equality is written `==` (there is no assignment)",
         "&": "; logical and is written `&&`", "|": "; logical or is written `||`",
         "[": "; arrays are accessed as `name(i, j, k)`", "]": "; arrays are accessed as `name(i, j, k)`"}


def lex(src):
    """Tokens (kind, text, column): kind is 'num', 'ident' or the operator itself."""
    tokens, pos = [], 0
    while pos < len(src):
        c = src[pos]
        if c.isspace():
            pos += 1
            continue
        col = pos + 1
        if c.isdigit() or (c == "." and src[pos + 1:pos + 2].isdigit()):
            m = NUMBER.match(src, pos)
            end = m.end()
            while end < len(src) and (src[end].isalnum() or src[end] in "_."):
                end += 1
            text = src[pos:end]
            if end != m.end():
                raise ParseError(f"invalid number literal `{text}`", col)
            if not math.isfinite(float(text)):
                raise ParseError(f"number literal `{text}` is too large for a double", col)
            tokens.append(("num", text, col))
            pos = end
        elif c.isalpha() or c == "_":
            end = pos + 1
            while end < len(src) and (src[end].isalnum() or src[end] == "_"):
                end += 1
            tokens.append(("ident", src[pos:end], col))
            pos = end
        elif src[pos:pos + 2] in TWO_CHAR:
            tokens.append((src[pos:pos + 2], src[pos:pos + 2], col))
            pos += 2
        elif c in ONE_CHAR:
            tokens.append((c, c, col))
            pos += 1
        else:
            raise ParseError(f"unexpected character `{c}`{HINTS.get(c, '')}", col)
    return tokens


class Parser:
    def __init__(self, src):
        self.src = src
        self.tokens = lex(src)
        self.pos = 0

    def peek(self, ahead=0):
        p = self.pos + ahead
        return self.tokens[p] if p < len(self.tokens) else None

    def kind(self, ahead=0):
        t = self.peek(ahead)
        return t[0] if t else None

    def column(self):
        t = self.peek()
        return t[2] if t else len(self.src) + 1

    def found(self):
        t = self.peek()
        return f"`{t[1]}`" if t else "end of expression"

    def fail(self, message, column=None):
        raise ParseError(message, self.column() if column is None else column)

    def expect(self, kind, what):
        if self.kind() != kind:
            self.fail(f"expected {what}, found {self.found()}")
        self.pos += 1

    def parse(self):
        if not self.tokens:
            raise ParseError("empty expression", 1)
        e = self.ternary()
        if self.peek() is not None:
            self.fail(f"trailing input after the expression: {self.found()}")
        return e

    def ternary(self):
        cond = self.binary(1)
        if self.kind() != "?":
            return cond
        q = self.column()
        self.pos += 1
        then = self.ternary()
        if self.kind() != ":":
            self.fail(f"expected `:` of the conditional whose `?` is at column {q}, found {self.found()}")
        self.pos += 1
        return ("cond", cond, then, self.ternary())

    def binary(self, min_prec):
        lhs = self.unary()
        while True:
            op = self.kind()
            prec = BINARY_PRECEDENCE.get(op)
            if prec is None or prec < min_prec:
                return lhs
            self.pos += 1
            rhs = self.binary(prec + 1)  # left-associative
            lhs = ("bin", op, lhs, rhs)

    def unary(self):
        k = self.kind()
        if k in ("-", "!", "+"):
            self.pos += 1
            operand = self.unary()
            return operand if k == "+" else ("neg" if k == "-" else "not", operand)
        return self.primary()

    def primary(self):
        t = self.peek()
        if t is None:
            self.fail("unexpected end of expression, expected an operand")
        if t[0] == "(":
            open_col = t[2]
            self.pos += 1
            e = self.ternary()
            if self.kind() != ")":
                self.fail(f"expected `)` to close the `(` opened at column {open_col}, found {self.found()}")
            self.pos += 1
            return e
        if t[0] == "num":
            self.pos += 1
            return ("num", t[1], float(t[1]))
        if t[0] == "ident":
            return self.name()
        self.fail(f"expected an operand, found {self.found()}")

    def looks_like_access(self):
        nxt = self.peek(1)
        return (nxt is not None and nxt[0] == "ident" and nxt[1] == "i"
                and self.kind(2) in ("+", "-", ","))

    def name(self):
        _, name, col = self.peek()
        self.pos += 1
        called = self.kind() == "("
        if name in FUNCTIONS:
            if called and not self.looks_like_access():
                return self.call(name, col)
        elif not called and name not in INDEX_NAMES:
            return ("local", name)
        elif called and name not in INDEX_NAMES and (
                self.looks_like_access() or name not in FOREIGN_FUNCTIONS):
            return self.access(name)
        if name in INDEX_NAMES:
            role = "an array name" if called else "a value"
            self.fail(f"`{name}` is an index variable and cannot be used as {role}", col)
        if name in FUNCTIONS:
            self.fail(f"`{name}` is a function name and cannot be used as "
                      + ("an array name" if called else f"a value; call it as `{name}(...)`"), col)
        self.fail(f"unknown function `{name}`; the functions are {', '.join(FUNCTIONS)}", col)

    def call(self, name, col):
        self.pos += 1  # (
        args = []
        if self.kind() == ")":
            self.pos += 1
        else:
            while True:
                args.append(self.ternary())
                if self.kind() == ",":
                    self.pos += 1
                elif self.kind() == ")":
                    self.pos += 1
                    break
                else:
                    self.fail(f"expected `)` to close the call of `{name}`, found {self.found()}")
        if len(args) != FUNCTIONS[name]:
            n = FUNCTIONS[name]
            self.fail(f"`{name}` takes {n} argument{'s' if n > 1 else ''}, got {len(args)}", col)
        return ("call", name, args)

    def access(self, array):
        """`array(i+a, j+b, k+c)`, or a field's own indices only (`dz(k+1)`): the node
        ("access", array, offset along (i, j, k), the indices written, e.g. "ijk" or "k")."""
        self.pos += 1  # (
        offset = [0, 0, 0]
        dims = ""
        while True:
            t = self.peek()
            if t is None or t[0] != "ident" or t[1] not in INDEX_NAMES:
                self.fail(f"an index of the access to `{array}` must be `i`, `j` or `k` with an "
                          f"optional constant offset, found {self.found()}")
            d = INDEX_NAMES.index(t[1])
            if dims and INDEX_NAMES.index(dims[-1]) >= d:
                self.fail(f"the indices of the access to `{array}` are i, j, k in this order, each at most once")
            dims += t[1]
            self.pos += 1
            if self.kind() in ("+", "-"):
                sign = -1 if self.kind() == "-" else 1
                self.pos += 1
                t = self.peek()
                if t is None or t[0] != "num" or not t[1].isdigit():
                    self.fail(f"expected an integer offset in the access to `{array}`, found {self.found()}")
                offset[d] = sign * int(t[1])
                self.pos += 1
            if self.kind() == ")":
                self.pos += 1
                return ("access", array, tuple(offset), dims)
            self.expect(",", f"`,` or `)` in the access to `{array}`")


def walk(e):
    """Every node of `e`, in source order (pre-order)."""
    yield e
    tag = e[0]
    if tag in ("neg", "not"):
        children = [e[1]]
    elif tag == "bin":
        children = [e[2], e[3]]
    elif tag == "cond":
        children = e[1:]
    elif tag == "call":
        children = e[2]
    else:
        children = []
    for sub in children:
        yield from walk(sub)


def visit_accesses(e, out):
    """Appends (array, offset) for every access of `e`, in source order (each access lists its
    array's indices: `check_access_dims`)."""
    out.extend((n[1], n[2]) for n in walk(e) if n[0] == "access")
    return out


def check_access_dims(program, e, where, err):
    """Every access of `e` lists exactly its array's indices (a field's own, else i, j, k)."""
    for n in walk(e):
        if n[0] == "access" and n[3] != program.dims(n[1]):
            err(where, f"`{n[1]}` has the dimensions [{', '.join(program.dims(n[1]))}]; an access "
                f"to it lists [{', '.join(n[3])}]")


def visit_locals(e, out):
    """Appends the name of every `let` local `e` uses, in source order."""
    out.extend(n[1] for n in walk(e) if n[0] == "local")
    return out


# ---------------------------------------------------------------------------------------------
# The program file (docs/MODEL.md, "Files") and its analysis (model/src/language/analysis.rs)
# ---------------------------------------------------------------------------------------------

class Program:
    def dims(self, array):
        """The index names of `array`: "ijk", or a field's own ("k", "ij")."""
        return self.fields.get(array, "ijk")


def load_program(path):
    try:
        import yaml
    except ImportError:
        raise UserError("cannot import yaml: run this script with build/halide-venv/bin/python "
                        "(python3 -m venv build/halide-venv && build/halide-venv/bin/pip install halide numpy pyyaml)")

    def err(key, message):
        raise UserError(f"{path}: {key + ': ' if key else ''}{message}")

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise UserError(f"{path}: no such program file")
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror or e}")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise UserError(f"{path}: invalid YAML: {where}{problem}")
    if not isinstance(doc, dict):
        err("", "expected a mapping with keys name, domain, halo, outputs, stencils")
    known = {"name", "domain", "halo", "outputs", "type", "scalars", "fields", "stencils",
             "constraints"}
    for key in doc:
        if key not in known:
            err(str(key), f"unknown key; the keys are {', '.join(sorted(known))}")
    for key in ("name", "domain", "halo", "outputs", "stencils"):
        if key not in doc:
            err(key, "missing")

    p = Program()
    p.path = path
    p.name = str(doc["name"])

    def triple(key, minimum):
        v = doc[key]
        if (not isinstance(v, list) or len(v) != 3
                or not all(isinstance(n, int) and not isinstance(n, bool) and n >= minimum for n in v)):
            err(key, f"expected three integers >= {minimum}, e.g. [64, 64, 60]")
        return list(v)

    p.domain = triple("domain", 1)
    p.halo = triple("halo", 0)
    p.alloc = [p.domain[d] + 2 * p.halo[d] for d in range(3)]
    p.type = doc.get("type", "double")
    if p.type not in ("double", "float"):
        err("type", f"`{p.type}` is not a type; the types are double and float")
    if not isinstance(doc["outputs"], list) or not doc["outputs"]:
        err("outputs", "expected a non-empty list of stencil names")
    if not isinstance(doc["stencils"], list) or not doc["stencils"]:
        err("stencils", "expected a non-empty list of stencils")

    # Run-time scalars: bare names in expressions; absinthe's harness gives scalar n the value
    # absinthe_value(2^32 + n, 0, 0, 0) unless told otherwise (--scalar).
    p.scalars = doc.get("scalars") or []
    if not isinstance(p.scalars, list):
        err("scalars", "expected a list of names")
    for n, s in enumerate(p.scalars):
        if not isinstance(s, str) or not IDENT.match(s) or s in INDEX_NAMES or s in FUNCTIONS:
            err(f"scalars[{n}]", f"`{s}` is not a valid scalar name")
    p.scalar_values = [absinthe_value((1 << 32) + n, 0, 0, 0) for n in range(len(p.scalars))]

    # Fields: inputs with fewer dimensions, name -> their index names in order ("k", "ij").
    fields = doc.get("fields") or {}
    if not isinstance(fields, dict):
        err("fields", "expected a mapping of array names to dimension lists, e.g. dz: [k]")
    p.fields = {}
    for fname, dims in fields.items():
        if (not isinstance(dims, list) or not dims or any(d not in INDEX_NAMES for d in dims)
                or sorted(dims, key=INDEX_NAMES.index) != dims or len(set(dims)) != len(dims)):
            err(f"fields.{fname}", "expected dimensions among i, j, k, in that order, e.g. [i, j]")
        if len(dims) < 3:
            p.fields[str(fname)] = "".join(dims)

    p.stencils = []  # (name, [(local, tree)], tree); tree None for a stencil by levels
    # Per stencil: its computation and bodies [(k, [(local, tree)], tree)], k None (every
    # level) or the interval [start, end] as written (end None: the top).
    p.computation, p.bodies = {}, {}
    names = []
    for n, s in enumerate(doc["stencils"]):
        key = f"stencils[{n}]"
        if not isinstance(s, dict):
            err(key, "expected a mapping with name, optional let, and expr")
        for k in s:
            if k not in ("name", "let", "expr", "computation", "intervals"):
                err(f"{key}.{k}", "unknown key; the keys are name, computation, let, expr, intervals")
        name = s.get("name")
        if not isinstance(name, str) or not IDENT.match(name) or name in INDEX_NAMES or name in FUNCTIONS:
            err(f"{key}.name", f"`{name}` is not a valid array name")
        if name in names:
            err(f"{key}.name", f"`{name}` is defined twice")
        names.append(name)

        def parse(src, where):
            if isinstance(src, bool) or not isinstance(src, (str, int, float)):
                err(where, "expected an expression")
            src = str(src)
            try:
                return Parser(src).parse()
            except ParseError as e:
                err(where, f"column {e.column}: {e}  [in: {src.strip()}]")

        def body(src, where):
            lets = []
            raw_lets = src.get("let") or {}
            if not isinstance(raw_lets, dict):
                err(f"{where}.let", "expected a mapping of local names to expressions")
            for lname, lsrc in raw_lets.items():
                if not isinstance(lname, str) or not IDENT.match(lname) or lname in INDEX_NAMES:
                    err(f"{where}.let", f"`{lname}` is not a valid local name")
                lets.append((lname, parse(lsrc, f"{where}.let.{lname}")))
            if "expr" not in src:
                err(f"{where}.expr", "missing")
            return lets, parse(src["expr"], f"{where}.expr")

        p.computation[name] = s.get("computation", "parallel")
        if p.computation[name] not in ("parallel", "forward", "backward"):
            err(f"{key}.computation", "expected parallel, forward or backward")
        if "intervals" in s:
            if not isinstance(s["intervals"], list) or not s["intervals"]:
                err(f"{key}.intervals", "expected a non-empty list of intervals")
            bodies = []
            for m, iv in enumerate(s["intervals"]):
                where = f"{key}.intervals[{m}]"
                k = iv.get("k") if isinstance(iv, dict) else None
                if not isinstance(k, list) or len(k) != 2:
                    err(f"{where}.k", "expected [start, end]")
                bodies.append((k,) + body(iv, where))
            p.bodies[name] = bodies
            p.stencils.append((name, [], None))
        else:
            lets, tree = body(s, key)
            p.bodies[name] = [(None, lets, tree)]
            p.stencils.append((name, lets, tree))

    # Array numbering exactly as Analysis::new: stencils in order, then inputs in the order of
    # their first access (per stencil: lets in order, then expr; accesses in source order).
    # The harness fills input `a` with absinthe_value(array_id(a), i, j, k).
    p.array_id = {name: n for n, name in enumerate(names)}
    p.inputs = []
    reads = {}  # stencil -> [(array, offset)]
    for n, (name, _, _) in enumerate(p.stencils):
        key = f"stencils[{n}]"
        acc = []
        for _, lets, expr in p.bodies[name]:
            defined = []
            for lname, tree in lets:
                for used in visit_locals(tree, []):
                    if used not in defined and used not in p.scalars:
                        err(f"{key}.let.{lname}", f"undefined local `{used}` (a let may use only earlier lets)")
                visit_accesses(tree, acc)
                check_access_dims(p, tree, f"{key}.let.{lname}", err)
                defined.append(lname)
            for used in visit_locals(expr, []):
                if used not in defined and used not in p.scalars:
                    err(f"{key}.expr", f"undefined local `{used}`")
            visit_accesses(expr, acc)
            check_access_dims(p, expr, f"{key}.expr", err)
        if p.computation[name] != "parallel":
            acc = [(a, o) for a, o in acc if a != name]  # a sweep reads its own earlier levels
        for array, _ in acc:
            if array not in p.array_id:
                p.array_id[array] = len(p.array_id)
                p.inputs.append(array)
            if array in names and p.dims(array) not in ("ijk", "ij"):
                err(f"{key}.expr", f"`{array}` is a stencil over [{', '.join(p.dims(array))}]; a "
                    "stencil is 3-D or 2-D ([i, j])")
            if array in names and names.index(array) >= n:
                what = "its own array" if array == name else "an array defined later"
                err(f"{key}.expr", f"stencil `{name}` reads `{array}`, {what}; a stencil may read "
                    "only inputs and earlier stencils")
        reads[name] = acc
    p.reads = reads  # stencil -> [(array, offset)], its own reads of a sweep left out
    for n, (name, _, _) in enumerate(p.stencils):
        for lname, _ in (l for _, lets, _ in p.bodies[name] for l in lets):
            if lname in p.array_id:
                err(f"stencils[{n}].let.{lname}", f"a let name may not equal an array's name (`{lname}`)")
    for o in doc["outputs"]:
        if o not in names:
            err("outputs", f"`{o}` is not a stencil")
    # Outputs in program (stencil) order: the order of absinthe's output dump.
    p.outputs = [name for name in names if name in doc["outputs"]]
    # 2-D stencils (`ps: [i, j]` under fields:), computed once per column.
    p.planes = [name for name in names if p.dims(name) == "ij"]

    # Extents: how far beyond the domain each array is needed (per dimension, low and high side).
    need = {name: None for name in p.array_id}
    for o in p.outputs:
        need[o] = [[0, 0], [0, 0], [0, 0]]
    for n in reversed(range(len(p.stencils))):
        name = p.stencils[n][0]
        if need[name] is None:
            err(f"stencils[{n}]", f"stencil `{name}` is neither an output nor read by another stencil (dead code)")
        # A stencil by levels (a sweep, or intervals) reads along k only inside the domain's
        # levels (absinthe checks it per interval).
        by_levels = p.computation[name] != "parallel" or p.bodies[name][0][0] is not None
        for array, off in reads[name]:
            cur = need[array] or [[0, 0], [0, 0], [0, 0]]
            for d in range(3):
                if d == 2 and by_levels:
                    continue
                cur[d][0] = max(cur[d][0], need[name][d][0] - off[d])
                cur[d][1] = max(cur[d][1], need[name][d][1] + off[d])
            need[array] = cur
    p.need = need  # array -> [[below, above]] per dimension beyond the domain
    for array in p.inputs:
        for d in (d for d in range(3) if INDEX_NAMES[d] in p.dims(array)):
            for side in (0, 1):
                if need[array][d][side] > p.halo[d]:
                    err("halo", f"input `{array}` is read {need[array][d][side]} cell(s) "
                        f"{'below' if side == 0 else 'above'} the domain along {INDEX_NAMES[d]}, "
                        f"but the halo is {p.halo[d]}")
    return p


# ---------------------------------------------------------------------------------------------
# The inputs absinthe's harness uses (absinthe_value in codegen/templates/harness_body.j2)
# ---------------------------------------------------------------------------------------------

def absinthe_value(array, i, j, k):
    """One value of absinthe_value (Python integers, wrapped to 64 bits)."""
    m = (1 << 64) - 1
    z = (array * 0x9E3779B97F4A7C15) & m
    z ^= ((i + 4096) * 0xBF58476D1CE4E5B9) & m
    z ^= ((j + 4096) * 0x94D049BB133111EB) & m
    z ^= ((k + 4096) * 0xD6E8FEB86659FD93) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    z ^= z >> 31
    return 0.5 + (z >> 11) * 2.0 ** -53


def absinthe_inputs(np, program, array):
    """The input array as the harness fills it: shape (AZ, AY, AX), x fastest; a field over its
    own dimensions only (`dz: [k]`: (AZ,); `hsurf: [i, j]`: (AY, AX)), the harness's index 0
    along the others."""
    u = np.uint64
    dims = program.dims(array)
    hx, hy, hz = (h if n in dims else 0 for h, n in zip(program.halo, INDEX_NAMES))
    ax, ay, az = (a if n in dims else 1 for a, n in zip(program.alloc, INDEX_NAMES))

    def coord(n, h, mult):
        return (np.arange(n, dtype=np.int64) - h + 4096).astype(u) * u(mult)

    with np.errstate(over="ignore"):
        z = u(program.array_id[array]) * u(0x9E3779B97F4A7C15)
        z = (z ^ coord(ax, hx, 0xBF58476D1CE4E5B9)[None, None, :]
             ^ coord(ay, hy, 0x94D049BB133111EB)[None, :, None]
             ^ coord(az, hz, 0xD6E8FEB86659FD93)[:, None, None])
        z = (z ^ (z >> u(30))) * u(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> u(27))) * u(0x94D049BB133111EB)
        z ^= z >> u(31)
    values = 0.5 + (z >> u(11)).astype(np.float64) * 2.0 ** -53
    own = tuple(n for n, d in zip((az, ay, ax), "kji") if d in dims)
    return np.ascontiguousarray(values.reshape(own).astype(np.float32 if program.type == "float" else np.float64))


HUGE_PAGE = 2 << 20


def huge_pages_wanted():
    """Whether arrays go on transparent huge pages: absinthe's harness's rule
    (ABSINTHE_HUGE_PAGES=0 turns them off), which `--huge-pages` sets for both sides."""
    return os.environ.get("ABSINTHE_HUGE_PAGES", "1") != "0"


def madvise_huge(address, length):
    """madvise(MADV_HUGEPAGE) on [address, address + length) (whole huge pages inside it)."""
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        first = (address + HUGE_PAGE - 1) // HUGE_PAGE * HUGE_PAGE
        last = (address + length) // HUGE_PAGE * HUGE_PAGE
        if last > first:
            libc.madvise(first, last - first, 14)  # MADV_HUGEPAGE
    except (OSError, AttributeError):
        pass


def staggered(np, values_or_shape, dtype, slot, slots):
    """An array placed as absinthe's harness places its arrays (`absinthe_array` in
    codegen/templates/harness_body.j2): 64-byte aligned, `slot * step` bytes past a 4 KiB
    boundary, step = 64 * max(1, 64 // slots) or ABSINTHE_ARRAY_STAGGER. Inputs take slots
    0.., outputs the slots after them; `slots` counts the inputs and the stencils, as there.
    Separately allocated arrays of one size alias modulo 4 KiB, and both sides are measured
    on the same layout. Arrays of 2 MiB and more start on a 2 MiB boundary (plus the stagger)
    on transparent huge pages, as there, unless huge pages are off."""
    step = 64 * max(1, 64 // max(1, slots))
    env = os.environ.get("ABSINTHE_ARRAY_STAGGER", "")
    if env:
        step = int(env) // 64 * 64
    shape = values_or_shape.shape if hasattr(values_or_shape, "shape") else tuple(values_or_shape)
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    huge = huge_pages_wanted() and nbytes + 8192 >= HUGE_PAGE
    align = HUGE_PAGE if huge else 4096
    raw = np.empty(nbytes + 8192 + align, dtype=np.uint8)
    base = raw.ctypes.data
    if huge:
        madvise_huge(base, raw.nbytes)
    want = (slot * step) % 4096
    start = (align - base % align) % align + want
    out = raw[start:start + nbytes].view(dtype).reshape(shape)
    if hasattr(values_or_shape, "shape"):
        out[...] = values_or_shape
    return out


def float32_literal(np, text):
    """The decimal `text` rounded once to float (via double it could round twice)."""
    exact = Fraction(text)
    with np.errstate(over="ignore"):
        f = np.float32(float(exact))
    if not np.isfinite(f):
        return float(f)
    down, up = np.nextafter(f, np.float32(-np.inf)), np.nextafter(f, np.float32(np.inf))
    best = min((down, f, up), key=lambda c: (abs(Fraction(float(c)) - exact),
                                              int(np.array(c).view(np.uint32)) & 1))
    return float(best)


# ---------------------------------------------------------------------------------------------
# Halide
# ---------------------------------------------------------------------------------------------

def build_pipeline(hl, np, program):
    """A fresh Pipeline of the program's outputs (in program order) and its input params.

    Each stencil is a Func over (x, y, z) on domain coordinates; input `u` is an ImageParam
    over the allocated box, read at (x+a+Hx, y+b+Hy, z+c+Hz). Sizes and strides of all
    buffers are constants (as in absinthe's kernels), and estimates are set for the
    autoschedulers: the domain for outputs, the allocated box for inputs.
    """
    if program.planes:
        raise UserError(f"{program.path}: `{program.planes[0]}` is a 2-D stencil ([i, j]): the "
                        "Halide peer builds 3-D stencils only (benches/gt4py_peer.py runs them)")
    by_levels = [name for name, _, tree in program.stencils if tree is None]
    if by_levels:
        raise UserError(f"{program.path}: `{by_levels[0]}` is a sweep or has intervals: vertical "
                        "solvers are not built in the Halide peer (benches/gt4py_peer.py runs them)")
    T = hl.Float(32) if program.type == "float" else hl.Float(64)
    x, y, z = hl.Var("x"), hl.Var("y"), hl.Var("z")
    if program.type == "float":
        def lit(text):
            return hl.f32(float32_literal(np, text))
    else:
        def lit(text):
            return hl.f64(float(text))
    one, zero = lit("1"), lit("0")
    H, A, D = program.halo, program.alloc, program.domain

    params = {}
    for name in program.inputs:
        # A field is an ImageParam over its own dimensions only.
        own = [d for d in range(3) if INDEX_NAMES[d] in program.dims(name)]
        ip = hl.ImageParam(T, len(own), f"{name}_input")
        stride = 1
        for n, d in enumerate(own):
            ip.dim(n).set_bounds(0, A[d]).set_stride(stride)
            stride *= A[d]
        ip.set_estimates([hl.Range(0, A[d]) for d in own])
        params[name] = ip
    funcs = {}

    def boolean(c):
        return hl.select(c, one, zero)

    def truth(v):
        return v != zero

    def build(e, local):
        tag = e[0]
        if tag == "num":
            return lit(e[1])
        if tag == "local":
            return local[e[1]]
        if tag == "access":
            a, b, c = e[2]
            if e[1] in params:
                at = (x + (a + H[0]), y + (b + H[1]), z + (c + H[2]))
                return params[e[1]][[at[d] for d in range(3) if INDEX_NAMES[d] in e[3]]]
            return funcs[e[1]][x + a, y + b, z + c]
        if tag == "neg":
            return -build(e[1], local)
        if tag == "not":
            return hl.select(truth(build(e[1], local)), zero, one)
        if tag == "bin":
            op, lhs, rhs = e[1], build(e[2], local), build(e[3], local)
            if op == "+":
                return lhs + rhs
            if op == "-":
                return lhs - rhs
            if op == "*":
                return lhs * rhs
            if op == "/":
                return lhs / rhs
            if op == "&&":
                return boolean(truth(lhs) & truth(rhs))
            if op == "||":
                return boolean(truth(lhs) | truth(rhs))
            return boolean({"<": lhs < rhs, "<=": lhs <= rhs, ">": lhs > rhs, ">=": lhs >= rhs,
                            "==": lhs == rhs, "!=": lhs != rhs}[op])
        if tag == "cond":
            return hl.select(truth(build(e[1], local)), build(e[2], local), build(e[3], local))
        if tag == "call":
            name, args = e[1], [build(a, local) for a in e[2]]
            if name == "min":
                return hl.select(args[0] < args[1], args[0], args[1])
            if name == "max":
                return hl.select(args[0] > args[1], args[0], args[1])
            if name in ("abs", "fabs"):
                return hl.abs(args[0])
            if name == "pow":
                return hl.pow(args[0], args[1])
            return getattr(hl, name)(args[0])  # sqrt exp log floor ceil
        raise AssertionError(tag)

    # The scalars as parameters of the pipeline (absinthe's kernel takes them as arguments too),
    # set to the values absinthe's harness uses, converted to the program's type.
    scalars = {}
    for s, value in zip(program.scalars, program.scalar_values):
        param = hl.Param(T, s)
        value = float(np.float32(value)) if program.type == "float" else value
        param.set(value)
        param.set_estimate(value)
        scalars[s] = param
    for name, lets, expr in program.stencils:
        local = dict(scalars)
        for lname, tree in lets:
            local[lname] = build(tree, local)
        f = hl.Func(name)
        f[x, y, z] = hl.cast(T, build(expr, local))
        funcs[name] = f
    # An output that other stencils read (at offsets) is needed beyond the domain, which its
    # output buffer does not cover: such an output is realized through a copy stage.
    read = {array for _, lets, expr in program.stencils
            for tree in [expr] + [t for _, t in lets] for array, _ in visit_accesses(tree, [])}
    outputs = []
    for o in program.outputs:
        if o in read:
            copy = hl.Func(f"{o}_output")
            copy[x, y, z] = funcs[o][x, y, z]
            outputs.append(copy)
        else:
            outputs.append(funcs[o])
    for f in outputs:
        f.set_estimates([hl.Range(0, D[d]) for d in range(3)])
        stride = 1
        for d in range(3):
            f.output_buffer().dim(d).set_bounds(0, D[d]).set_stride(stride)
            stride *= D[d]
    return hl.Pipeline(outputs), params


def llc_bytes():
    """The largest cache size in sysfs (cpu0), or 32 MiB when it cannot be read."""
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in os.listdir(base):
            if entry.startswith("index"):
                with open(os.path.join(base, entry, "size")) as f:
                    s = f.read().strip()
                mult = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(s[-1:].upper(), 1)
                best = max(best, int(s.rstrip("KMGkmg")) * mult)
    except (OSError, ValueError):
        pass
    return best or 32 * 1024 ** 2


class Flusher:
    """Reads a buffer of `nbytes` (written once) before each run, one load per 64-byte line,
    on all Halide threads (as the harness's OpenMP flush does), so no core's caches keep data."""

    def __init__(self, hl, np, nbytes, threads):
        lines = max(1, nbytes // 64)
        chunks = max(1, threads * 8)
        per_chunk = -(-lines // chunks)
        self.np = np
        self.data = np.ones((chunks * per_chunk, 16), dtype=np.uint32)  # x: 16 words per line
        self.buf = hl.Buffer(self.data)
        self.sums = np.zeros(chunks, dtype=np.uint32)
        self.sums_buf = hl.Buffer(self.sums)
        src = hl.ImageParam(hl.UInt(32), 2, "flush_input")
        c = hl.Var("c")
        r = hl.RDom([(0, per_chunk)])
        part = hl.Func("flush_sum")
        part[c] = hl.sum(src[0, c * per_chunk + r.x])
        part.parallel(c)
        self.callable = hl.Pipeline(part).compile_to_callable(
            [src], hl.get_jit_target_from_environment())
        self.sink = 0

    def __call__(self):
        self.callable(self.buf, self.sums_buf)
        self.sink ^= int(self.sums[0])


class NumpyFlusher:
    """Fallback flush: a strided read on the calling thread only."""

    def __init__(self, np, nbytes):
        self.data = np.ones(max(8, nbytes // 8), dtype=np.uint64)
        self.sink = 0

    def __call__(self):
        self.sink ^= int(self.data[::8].sum())


def keep_freed_memory(log):
    """Halide's JIT code allocates its intermediate buffers (halide_malloc: malloc) in every
    run and frees them at its end. With glibc's defaults, big buffers are mmap'd and unmapped,
    so each run faults in fresh pages (thousands of minor faults, often more time than the
    stencils themselves). Raising the trim and mmap thresholds keeps freed memory for reuse."""
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6")
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
        ok = libc.mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1
        ok = libc.mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 and ok
        if not ok:
            raise OSError("mallopt refused")
    except (OSError, AttributeError) as e:
        log(f"warning: --halide-malloc keep: cannot set glibc's malloc thresholds ({e}); "
            "Halide's runs may fault in fresh pages")


def machine_cores(path):
    """`cores` of an absinthe machine file (the OpenMP threads of its kernels), or None."""
    try:
        import yaml
        with open(path, encoding="utf-8") as f:
            cores = yaml.safe_load(f).get("cores")
        return cores if isinstance(cores, int) else None
    except Exception:
        return None


def halide_version():
    try:
        from importlib.metadata import version
        return version("halide")
    except Exception:
        return None


def timed_runs(run, runs, flush):
    """Seconds of `runs` calls of `run`, each after `flush()`, the garbage collector off."""
    times = []
    gc.disable()
    try:
        for _ in range(runs):
            flush()
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
    finally:
        gc.enable()
    return times


def summarize(times):
    kept = times[len(times) // 4:]
    return {"median": statistics.median(kept), "min": min(kept), "max": max(kept),
            "runs": len(times), "discarded": len(times) - len(kept)}


def halide_target(hl, target, float_mode):
    """`target`, with Halide's StrictFloat feature under --float strict (no reassociation)."""
    if float_mode == "strict":
        return target.with_feature(hl.TargetFeature.StrictFloat)
    return target


FLOAT_MODES = {
    "relaxed": "relaxed on both sides (Halide's default: its simplifier reassociates; absinthe --relaxed-math)",
    "strict": "strict on both sides (Halide's StrictFloat target feature; absinthe's FMA build)",
}


def prepare_halide(args, program, scheduler, hl, np, inputs, log):
    """One row's pipeline: schedule, JIT-compile, one untimed warm-up. Returns (row, the
    call to time or None, outputs or None); the rounds time the call."""
    row = {"implementation": "halide", "variant": scheduler, "median": None, "min": None,
           "max": None, "error": None}
    try:
        t0 = time.perf_counter()
        pipeline, params = build_pipeline(hl, np, program)
        target = halide_target(hl, hl.get_host_target(), args.float)
        if SCHEDULERS[scheduler] is not None:
            name = SCHEDULERS[scheduler][0]
            extra = {"parallelism": str(args.threads)}
            extra.update(args.as_params.get(scheduler, {}))
            log(f"halide {scheduler}: autoscheduling ({name}, {', '.join(f'{k}={v}' for k, v in extra.items())}) ...")
            result = pipeline.apply_autoscheduler(target, hl.AutoschedulerParams(name, extra))
            row["schedule_source"] = result.schedule_source
        t1 = time.perf_counter()
        log(f"halide {scheduler}: JIT-compiling ...")
        arguments = pipeline.infer_arguments()
        compiled = pipeline.compile_to_callable(
            arguments, halide_target(hl, hl.get_jit_target_from_environment(), args.float))
        t2 = time.perf_counter()
        row["schedule_seconds"], row["compile_seconds"] = t1 - t0, t2 - t1

        dtype = np.float32 if program.type == "float" else np.float64
        D = program.domain
        slots = len(program.inputs) + len(program.stencils)
        outs = [staggered(np, (D[2], D[1], D[0]), dtype, len(program.inputs) + o, slots)
                for o in range(len(program.outputs))]
        for o in outs:
            o.fill(np.nan)
        out_bufs = [hl.Buffer(o) for o in outs]
        in_bufs = {n: hl.Buffer(a) for n, a in inputs.items()}
        by_name = {f"{n}_input": in_bufs[n] for n in program.inputs}
        # The scalars' values, as absinthe's harness passes them (its defaults).
        by_name.update({s: float(dtype(v)) for s, v in zip(program.scalars, program.scalar_values)})
        call_args = [by_name[a.name] for a in arguments] + out_bufs

        compiled(*call_args)  # untimed warm-up; its outputs are checked
        result_arrays = [o.copy() for o in outs]
        return row, lambda: compiled(*call_args), result_arrays
    except Exception as e:  # an autoscheduler failing on a program is a result, not a crash
        message = " ".join(str(e).split()) or type(e).__name__
        row["error"] = f"{type(e).__name__}: {message}"
        log(f"halide {scheduler}: FAILED: {row['error']}")
        return row, None, None


def add_round(row, median, lo, hi, index=None):
    """Adds round `index`'s median, min and max to `row` (by default the round after its last):
    its medians per round (`round_medians`, with the rounds they come from in `rounds_timed`), and
    its median (of the rounds' medians), min and max over the rounds so far."""
    medians = row.setdefault("round_medians", [])
    timed = row.setdefault("rounds_timed", [])
    timed.append(len(medians) if index is None else index)
    medians.append(median)
    row["median"] = statistics.median(medians)
    row["min"] = lo if row.get("min") is None else min(row["min"], lo)
    row["max"] = hi if row.get("max") is None else max(row["max"], hi)


# ---------------------------------------------------------------------------------------------
# absinthe
# ---------------------------------------------------------------------------------------------

def run_absinthe(args, program, dump_dir, flush_bytes, log, variants="naive,unfused,noinline,opt"):
    cmd = [args.absinthe, "bench", args.program, "--machine", args.machine,
           "--variants", variants, "--runs", str(args.runs), "--format", "json"]
    extra = shlex.split(args.absinthe_args)
    # Both sides read the same flush buffer: absinthe's default eviction of its own arrays and
    # tile buffers has no counterpart for the buffers Halide allocates inside a pipeline.
    if not any(a == "--flush" or a.startswith("--flush=") or a.startswith("--flush-bytes") for a in extra):
        cmd += ["--flush", "read", "--flush-bytes", str(flush_bytes)]
    if args.float == "relaxed" and "--exact" not in extra and "--relaxed-math" not in extra:
        cmd.append("--relaxed-math")
    cmd += extra
    env = dict(os.environ)
    if dump_dir:
        env["ABSINTHE_DUMP_OUTPUTS"] = dump_dir
    log("absinthe: " + " ".join(shlex.quote(c) for c in cmd))
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    except OSError as e:
        raise UserError(f"{args.absinthe}: cannot run absinthe: {e.strerror or e} "
                        "(build it with `make build`, or pass --absinthe PATH, or --no-absinthe)")
    for line in proc.stderr.splitlines():
        log("  " + line)
    try:
        rows = json.loads(proc.stdout)
        if not isinstance(rows, list):
            raise ValueError("not a list")
    except ValueError:
        lines = [l.strip() for l in proc.stderr.splitlines() if l.strip()]
        errors = [l for l in lines if l.startswith("error")]
        tail = errors[0][len("error:"):].strip() if errors else " | ".join(lines[-2:])
        raise UserError(f"{args.program}: absinthe bench failed (exit {proc.returncode}): {tail or 'no output'}")
    if proc.returncode != 0:
        log(f"absinthe: exit status {proc.returncode} (a variant failed verification?)")
    out = []
    for r in rows:
        median = r.get("measured_seconds")
        row = {"implementation": "absinthe", "variant": r.get("variant"), "median": median,
               "min": r.get("min"), "max": r.get("max"), "schedule": r.get("schedule"),
               "check": ("verified" if r.get("verified") else "MISMATCH") + f" ({r.get('verification', '?')})",
               "error": None}
        if median is None:
            row["error"] = f"status {r.get('status', '?')}"
        out.append(row)
    return out


def absinthe_round(args, program, index, opt_row, dump_dir, flush_bytes, log):
    """Round `index` of absinthe's side of a peer comparison: without `opt_row` (the first
    round) `run_absinthe`'s four variants, opt's outputs dumped into `dump_dir` when given;
    else `opt` alone. Opt's time is added to its row's rounds. Returns (the rows run, opt's row
    or None)."""
    if opt_row is None:
        rows = run_absinthe(args, program, dump_dir, flush_bytes, log)
        opt_row = next((x for x in rows if x["variant"] == "opt" and x["median"] is not None), None)
        if opt_row is not None:
            add_round(opt_row, opt_row["median"], opt_row["min"], opt_row["max"], index)
        return rows, opt_row
    rows = [x for x in run_absinthe(args, program, None, flush_bytes, log, variants="opt")
            if x["median"] is not None]
    if rows:
        add_round(opt_row, rows[0]["median"], rows[0]["min"], rows[0]["max"], index)
    return rows, opt_row


def paired_ratios(peer, opt):
    """The peer row's time over opt's in each round that timed both, or None."""
    if not peer or not opt or not peer.get("round_medians") or not opt.get("round_medians"):
        return None

    def by_round(row):
        rounds = row.get("rounds_timed") or range(len(row["round_medians"]))
        return dict(zip(rounds, row["round_medians"]))

    p, o = by_round(peer), by_round(opt)
    return [p[r] / o[r] for r in sorted(p) if r in o] or None


def paired_ratio(peer, opt):
    """The median of the rounds' ratios (`paired_ratios`); without rounds, of the medians."""
    ratios = paired_ratios(peer, opt)
    if ratios:
        return statistics.median(ratios)
    if peer and opt and peer.get("median") and opt.get("median"):
        return peer["median"] / opt["median"]
    return None


def read_dump(np, program, path):
    """absinthe's output dump: each output (z, y, x) in program order, a 2-D output (y, x)."""
    dtype = np.dtype("<f4" if program.type == "float" else "<f8")
    D = program.domain
    shapes = [(D[1], D[0]) if o in program.planes else (D[2], D[1], D[0]) for o in program.outputs]
    sizes = [math.prod(s) for s in shapes]
    data = np.fromfile(path, dtype=dtype)
    if data.size != sum(sizes):
        raise UserError(f"{path}: {data.size} values, expected {sum(sizes)}")
    starts = [sum(sizes[:n]) for n in range(len(sizes))]
    return [data[a:a + n].reshape(s) for a, n, s in zip(starts, sizes, shapes)]


def compare(np, program, got, want):
    """(ok, worst error relative to each array's largest magnitude)."""
    rel_tol = 1e-4 if program.type == "float" else 1e-10
    worst = 0.0
    ok = True
    for g, w in zip(got, want):
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        nan_g, nan_w = np.isnan(g64), np.isnan(w64)
        if (nan_g != nan_w).any():
            return False, math.inf
        # Infinities must match exactly (sign included); the scale and the error are taken over
        # the elements finite in both.
        inf_g, inf_w = np.isinf(g64), np.isinf(w64)
        if (inf_g != inf_w).any() or (g64[inf_w] != w64[inf_w]).any():
            return False, math.inf
        finite = np.isfinite(w64) & np.isfinite(g64)
        scale = float(np.max(np.abs(w64[finite]))) if finite.any() else 0.0
        diff = np.abs(g64[finite] - w64[finite])
        err = float(diff.max()) if diff.size else 0.0
        rel = err / scale if scale > 0 else err
        worst = max(worst, rel)
        ok = ok and rel <= rel_tol
    return ok, worst


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------

def human(seconds):
    if seconds is None:
        return "-"
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} us"


def ratio(num, den):
    if num is None or den is None or den <= 0:
        return None
    return num / den


def print_table(report):
    rows = report["rows"]
    p = report["program"]
    print(f"{p['name']} ({'x'.join(map(str, p['domain']))}, {p['type']}): {report['runs']} runs per row "
          f"in each of {report['rounds']} round(s) (a row's median: the median of its rounds'), "
          f"first {report['runs'] // 4} discarded, caches flushed before each; Halide on "
          f"{report['threads']} thread(s)"
          + ("" if report["machine"] is None else
             f", absinthe on {report['absinthe_threads'] or '?'} (cores in {report['machine']})"))
    print(f"floating point: {FLOAT_MODES[report['float']]}")
    print("speed-up = (time of absinthe opt or unfused) / (time of the row); > 1 is faster")
    header = ["implementation", "median", "min", "max", "vs opt", "vs unfused", "sched+jit", "check"]
    table = [header]
    for r in rows:
        label = f"{r['implementation']} {r['variant']}"
        if r["error"]:
            table.append([label, "-", "-", "-", "-", "-", "-", "FAILED: " + r["error"]])
            continue
        sj = r.get("schedule_seconds")
        table.append([
            label, human(r["median"]), human(r["min"]), human(r["max"]),
            "-" if r.get("speedup_vs_opt") is None else f"{r['speedup_vs_opt']:.2f}x",
            "-" if r.get("speedup_vs_unfused") is None else f"{r['speedup_vs_unfused']:.2f}x",
            "-" if sj is None else f"{sj + r['compile_seconds']:.1f} s",
            r.get("check") or "-",
        ])
    widths = [max(len(t[c]) for t in table[:] if c < len(t)) for c in range(len(header) - 1)]
    for t in table:
        cells = [t[0].ljust(widths[0])] + [t[c].rjust(widths[c]) for c in range(1, len(header) - 1)]
        # a failure message is long: let it run on after the row label
        if t[1] == "-" and t[-1].startswith("FAILED"):
            print(t[0].ljust(widths[0]) + "  " + t[-1])
        else:
            print("  ".join(cells + [t[-1]]).rstrip())
    for note in report["notes"]:
        print(note)
    print(report["verdict"])


class redirect_stdout_to_stderr:
    """Points file descriptor 1 (and `sys.stdout`) at stderr, so that what native libraries
    print there cannot mix with the report; `with` the returned object restores the real stdout
    for the report itself."""

    def __init__(self):
        sys.stdout.flush()
        self.saved = os.dup(1)
        os.dup2(2, 1)

    def __enter__(self):
        sys.stdout.flush()
        os.dup2(self.saved, 1)
        return self

    def __exit__(self, *exc):
        sys.stdout.flush()
        os.dup2(2, 1)
        return False


def main(argv=None):
    own_command_line = argv is None
    parser = argparse.ArgumentParser(
        prog="halide_peer.py",
        description=__doc__.split("\n\n")[0] + "\n\n" + "\n\n".join(__doc__.split("\n\n")[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""examples:
  build/halide-venv/bin/python benches/halide_peer.py configs/cosmo_adv5.yaml
  build/halide-venv/bin/python benches/halide_peer.py configs/hdiff.yaml --runs 16 --format json
  build/halide-venv/bin/python benches/halide_peer.py configs/cosmo_pgrad.yaml \\
      --schedulers mullapudi2016,li2018 --absinthe-args "--exact"
  build/halide-venv/bin/python benches/halide_peer.py configs/hdiff.yaml --no-absinthe \\
      --autoscheduler-param adams2019:beam_size=1
  make bench-halide HALIDE_PROGRAM=configs/cosmo_hdiff4.yaml HALIDE_ARGS="--runs 32"

Adams2019 searches for a while (tens of seconds to minutes on two cores); its time is in the
sched+jit column. Set up: python3 -m venv build/halide-venv &&
build/halide-venv/bin/pip install halide numpy pyyaml (or `make bench-halide`).""")
    parser.add_argument("program", help="the stencil program (YAML), e.g. configs/cosmo_adv5.yaml")
    parser.add_argument("--runs", type=int, default=64, help="timed runs per row; the first quarter is discarded (default 64)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds, each timing absinthe's opt and every Halide row back to back; a row's time "
                             "is the median of its rounds' medians, the ratio to opt the median of the rounds' "
                             "ratios (default 3)")
    parser.add_argument("--threads", type=int, default=2,
                        help="Halide threads (HL_NUM_THREADS) and the autoschedulers' `parallelism` (default 2); "
                             "absinthe's kernels use the cores of the machine file")
    parser.add_argument("--schedulers", default="mullapudi2016,adams2019,li2018,none",
                        help="Halide schedules to run, comma-separated, from mullapudi2016, adams2019, li2018, none "
                             "(Halide's default schedule: all inlined, serial) (default: all four)")
    parser.add_argument("--autoscheduler-param", action="append", default=[], metavar="SCHED:KEY=VALUE",
                        help="an extra autoscheduler parameter, e.g. adams2019:beam_size=1 or "
                             "mullapudi2016:last_level_cache_size=1048576 (repeatable)")
    parser.add_argument("--machine", default=None,
                        help="absinthe's machine file (default build/demo/machine.yaml, learned by `make demo`)")
    parser.add_argument("--absinthe", default=os.path.join(REPO, "target", "release", "absinthe"),
                        help="the absinthe executable (default target/release/absinthe)")
    parser.add_argument("--absinthe-args", default="", metavar="ARGS",
                        help='extra arguments for `absinthe bench`, one string, e.g. "--exact --no-roofline"')
    parser.add_argument("--float", choices=["strict", "relaxed"], default="strict",
                        help="floating-point semantics, the same on both sides. strict (default): Halide with "
                             "the StrictFloat target feature against absinthe's FMA build (`--absinthe-args "
                             "--exact` for bit-exact kernels). relaxed: Halide without it, whose simplifier "
                             "reassociates and distributes float arithmetic, against absinthe's `bench "
                             "--relaxed-math` (the compiler may do the same in the kernels)")
    parser.add_argument("--no-absinthe", action="store_true", help="skip absinthe; time the Halide rows only")
    parser.add_argument("--no-verify", action="store_true", help="skip the comparison of the outputs")
    parser.add_argument("--halide-malloc", choices=["keep", "system"], default="keep",
                        help="keep (default): glibc keeps freed memory (mallopt M_TRIM_THRESHOLD 1 GiB, "
                             "M_MMAP_THRESHOLD 32 MiB), so the buffers Halide allocates in each run reuse "
                             "pages instead of faulting in fresh ones, as absinthe's kernels reuse their "
                             "preallocated temporaries and kept tile buffers; system: glibc's defaults")
    parser.add_argument("--huge-pages", choices=["on", "off"], default=None,
                        help="transparent huge pages for the arrays of both sides (default on, or off when "
                             "ABSINTHE_HUGE_PAGES=0): absinthe's harness madvises its arrays of 2 MiB and more, "
                             "this script its NumPy buffers and, through glibc.malloc.hugetlb=1, Halide's own "
                             "allocations; off keeps 4 KiB pages on both sides (NumPy's own hugepage advice "
                             "switched off)")
    parser.add_argument("--flush-bytes", type=int, default=None,
                        help="bytes read before each run, on both sides (default 1.25 x the largest cache in "
                             "sysfs; absinthe's side runs `bench --flush read --flush-bytes` with it)")
    parser.add_argument("--schedules-dir", default=None, metavar="DIR",
                        help="write each autoscheduler's schedule (C++ source) to DIR/<program>.<scheduler>.schedule.h")
    parser.add_argument("--format", choices=["table", "json"], default="table", help="table for people, json for scripts")
    # `--absinthe-args --exact`: the value starts with `-`, which argparse would take for an
    # option; join it to the flag (`--absinthe-args=--exact`).
    argv = list(sys.argv[1:] if argv is None else argv)
    for n in range(len(argv) - 1):
        if argv[n] == "--absinthe-args":
            argv[n:n + 2] = [f"--absinthe-args={argv[n + 1]}"]
            break
    args = parser.parse_args(argv)
    if args.huge_pages is not None:
        os.environ["ABSINTHE_HUGE_PAGES"] = "1" if args.huge_pages == "on" else "0"
    # glibc reads its tunables when the process starts: Halide's allocations (malloc) get huge
    # pages only if this process runs with glibc.malloc.hugetlb=1, so set it and start again.
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if huge_pages_wanted() and "glibc.malloc.hugetlb" not in tunables and own_command_line:
        os.environ["GLIBC_TUNABLES"] = ":".join(t for t in [tunables, "glibc.malloc.hugetlb=1"] if t)
        sys.stdout.flush()
        os.execv(sys.executable, [sys.executable, os.path.abspath(__file__)] + list(sys.argv[1:]))

    def log(message):
        print(message, file=sys.stderr, flush=True)

    # Halide's C++ library prints warnings (storage folding, for one) on file descriptor 1; in
    # the middle of the JSON they made `--format json` unparseable. Everything written to
    # descriptor 1 while the work runs goes to stderr; the report goes to the real stdout.
    report_out = redirect_stdout_to_stderr()
    try:
        if args.runs < 1:
            raise UserError(f"--runs: {args.runs}: need at least 1")
        if args.rounds < 1:
            raise UserError(f"--rounds: {args.rounds}: need at least 1")
        if args.threads < 1:
            raise UserError(f"--threads: {args.threads}: need at least 1")
        schedulers = [s.strip().lower() for s in args.schedulers.split(",") if s.strip()]
        for s in schedulers:
            if s not in SCHEDULERS:
                raise UserError(f"--schedulers: unknown `{s}`; the schedulers are {', '.join(SCHEDULERS)}")
        args.as_params = {}
        for item in args.autoscheduler_param:
            m = re.fullmatch(r"([A-Za-z0-9]+):([A-Za-z0-9_]+)=(.*)", item)
            if not m or m.group(1).lower() not in SCHEDULERS or SCHEDULERS[m.group(1).lower()] is None:
                raise UserError(f"--autoscheduler-param: `{item}`: expected SCHED:KEY=VALUE, SCHED one of "
                                "mullapudi2016, adams2019, li2018")
            args.as_params.setdefault(m.group(1).lower(), {})[m.group(2)] = m.group(3)

        program = load_program(args.program)

        if not args.no_absinthe:
            if args.machine is None:
                default = os.path.join(REPO, "build", "demo", "machine.yaml")
                args.machine = os.path.relpath(default) if os.path.exists(default) else default
                if not os.path.exists(default):
                    raise UserError(f"{default}: no machine file; learn this machine with `make demo` "
                                    "(or pass --machine machines/default.yaml, or --no-absinthe)")
            elif not os.path.exists(args.machine):
                raise UserError(f"{args.machine}: no such machine file")
            if not os.access(args.absinthe, os.X_OK):
                raise UserError(f"{args.absinthe}: no absinthe executable; build it with `make build` "
                                "(or pass --absinthe PATH, or --no-absinthe)")

        # Halide's thread pool reads HL_NUM_THREADS when it starts: set it before importing.
        os.environ["HL_NUM_THREADS"] = str(args.threads)
        try:
            import numpy as np
            import halide as hl
        except ImportError as e:
            raise UserError(f"cannot import {e.name}: run this script with build/halide-venv/bin/python "
                            "(python3 -m venv build/halide-venv && build/halide-venv/bin/pip install halide numpy pyyaml)")

        if args.halide_malloc == "keep":
            keep_freed_memory(log)
        if not huge_pages_wanted():
            # NumPy advises huge pages for its large arrays by itself; off means off.
            try:
                from numpy._core import multiarray as numpy_multiarray
            except ImportError:
                from numpy.core import multiarray as numpy_multiarray
            numpy_multiarray._set_madvise_hugepage(False)

        with tempfile.TemporaryDirectory(prefix="halide_peer.") as dump_dir:
            verify = not args.no_verify
            rows = []
            reference = None
            notes = []
            try:
                load, cpus = os.getloadavg()[0], os.cpu_count() or 1
                if load > 0.5 * cpus:
                    notes.append(f"note: the load average was {load:.2f} on {cpus} CPU(s) at the start: "
                                 "other work shares this machine, and its times (OpenMP's most) may be inflated")
            except OSError:
                pass
            flush_bytes = args.flush_bytes if args.flush_bytes is not None else min(llc_bytes() * 5 // 4, 1 << 30)
            plugin_dir = os.path.join(os.path.dirname(hl.__file__), "lib64")
            for s in schedulers:
                if SCHEDULERS[s] is not None:
                    lib = os.path.join(plugin_dir, f"libautoschedule_{SCHEDULERS[s][1]}.so")
                    try:
                        hl.load_plugin(lib)
                    except Exception as e:
                        raise UserError(f"{lib}: cannot load the autoscheduler plugin: {e}")

            slots = len(program.inputs) + len(program.stencils)
            inputs = {name: staggered(np, absinthe_inputs(np, program, name), np.float32 if program.type == "float" else np.float64, slot, slots)
                      for slot, name in enumerate(program.inputs)}
            try:
                flush = Flusher(hl, np, flush_bytes, args.threads)
            except Exception as e:
                log(f"warning: parallel cache flush unavailable ({e}); flushing on one thread")
                flush = NumpyFlusher(np, flush_bytes)

            # Every pipeline is compiled first. Then each round times absinthe's variants (the first
            # round all four, dumping opt's outputs; later rounds opt alone) and every pipeline,
            # back to back, so that each round's ratio is taken within minutes on this noisy
            # machine; a row's median is the median of its rounds' medians.
            results, timed = {}, []
            for s in schedulers:
                row, call, outs = prepare_halide(args, program, s, hl, np, inputs, log)
                rows.append(row)
                results[s] = outs
                if call is not None:
                    timed.append((row, call))
                if args.schedules_dir and row.get("schedule_source"):
                    os.makedirs(args.schedules_dir, exist_ok=True)
                    path = os.path.join(args.schedules_dir, f"{program.name}.{s}.schedule.h")
                    with open(path, "w") as f:
                        f.write(row["schedule_source"])
            absinthe_rows, opt_row = [], None
            for r in range(args.rounds):
                log(f"round {r + 1} of {args.rounds}")
                if not args.no_absinthe and r == 0:
                    absinthe_rows, opt_row = absinthe_round(args, program, r, None,
                                                            dump_dir if verify else None, flush_bytes, log)
                    dump = os.path.join(dump_dir, "opt.outputs")
                    if verify:
                        if os.path.exists(dump):
                            reference = read_dump(np, program, dump)
                        else:
                            notes.append("note: absinthe wrote no outputs of `opt` (ABSINTHE_DUMP_OUTPUTS); "
                                         "the Halide rows are compared with each other only")
                elif opt_row is not None:
                    absinthe_round(args, program, r, opt_row, None, flush_bytes, log)
                for row, call in timed:
                    log(f"halide {row['variant']}: {args.runs} runs ...")
                    one = summarize(timed_runs(call, args.runs, flush))
                    add_round(row, one["median"], one["min"], one["max"], r)
            rows = absinthe_rows + rows

            # Correctness of the Halide rows.
            if verify:
                if reference is not None:
                    for row in rows:
                        if row["implementation"] == "halide" and results.get(row["variant"]) is not None:
                            ok, err = compare(np, program, results[row["variant"]], reference)
                            row["check"] = f"{'verified' if ok else 'MISMATCH'} (rel {err:.1e})"
                            row["max_relative_error"] = err
                            row["verified"] = ok
                else:
                    base = next((s for s in schedulers if results.get(s) is not None), None)
                    if base is not None:
                        if args.no_absinthe:
                            notes.append(f"note: without absinthe the Halide rows are compared with "
                                         f"halide {base} only (agreement, not verification)")
                        for row in rows:
                            if row["implementation"] == "halide" and results.get(row["variant"]) is not None:
                                ok, err = compare(np, program, results[row["variant"]], results[base])
                                row["check"] = (f"{'agrees' if ok else 'DISAGREES'} (rel {err:.1e})"
                                                if row["variant"] != base else "(the comparison base)")
                                row["agrees_with"] = base
                                row["agrees"] = ok

        by = {(r["implementation"], r["variant"]): r for r in rows}
        opt = (by.get(("absinthe", "opt")) or {}).get("median")
        unfused = (by.get(("absinthe", "unfused")) or {}).get("median")
        cores = None if args.no_absinthe else machine_cores(args.machine)
        if cores is not None and cores != args.threads:
            notes.append(f"note: Halide ran on {args.threads} thread(s), absinthe's kernels on {cores} "
                         f"(cores in {args.machine}); pass --threads {cores} for a like-for-like comparison")
        for r in rows:
            r["speedup_vs_opt"] = ratio(opt, r["median"])
            r["speedup_vs_unfused"] = ratio(unfused, r["median"])

        autos = [r for r in rows if r["implementation"] == "halide" and r["variant"] != "none"
                 and r["median"] is not None and r.get("verified", r.get("agrees", True))]
        best = min(autos, key=lambda r: r["median"]) if autos else None
        beats = None
        paired = paired_ratio(best, by.get(("absinthe", "opt")))
        if best is None:
            ran = [s for s in schedulers if s != "none"]
            verdict = ("best Halide autoscheduler: none was run (--schedulers)" if not ran else
                       "best Halide autoscheduler: none succeeded" + (" and verified" if verify else ""))
        else:
            verdict = f"best Halide autoscheduler: {best['variant']} ({human(best['median'])})"
            if paired is not None:
                beats = paired > 1
                rounds = "" if args.rounds == 1 else f" (the median of {args.rounds} rounds' ratios)"
                if beats:
                    verdict += f"; absinthe opt ({human(opt)}) beats it: {paired:.2f}x faster{rounds}"
                else:
                    verdict += (f"; absinthe opt ({human(opt)}) does not beat it: "
                                f"{best['variant']} is {1 / paired:.2f}x faster{rounds}")
        report = {
            "program": {"file": args.program, "name": program.name, "domain": program.domain,
                        "halo": program.halo, "type": program.type},
            "runs": args.runs, "threads": args.threads, "float": args.float,
            "machine": None if args.no_absinthe else args.machine,
            "absinthe_threads": None if args.no_absinthe else machine_cores(args.machine),
            "flush_bytes": flush_bytes, "halide_version": halide_version(),
            "rows": rows, "notes": notes,
            "best_halide": None if best is None else best["variant"],
            "absinthe_opt_beats_best_halide": beats,
            "rounds": args.rounds,
            "best_halide_over_opt": paired,
            "best_halide_over_opt_rounds": paired_ratios(best, by.get(("absinthe", "opt"))),
            "verdict": verdict,
        }
        with report_out:
            if args.format == "json":
                json.dump(report, sys.stdout, indent=2)
                print()
            else:
                print_table(report)
        failed_check = any(r.get("verified") is False or str(r.get("check", "")).startswith("MISMATCH")
                           for r in rows)
        return 1 if failed_check else 0
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
