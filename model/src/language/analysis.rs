//! Access analysis (docs/MODEL.md, "Per-stencil quantities" and "Program file"): per stencil
//! the distinct (array, offset) reads `A_i`, the per-array bounding boxes `B_i^d(a)`, the fetch
//! weight `c_i = 1 + |A_i|`, the dependency graph, and the extents the reference semantics
//! evaluates each stencil on. Construction validates the data flow: forward reads and cycles, dead
//! stencils, outputs that are not stencils, reads beyond the halo.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use petgraph::graph::{DiGraph, NodeIndex};

use crate::formats::diagnostic::{closest, one_edit_away, Diagnostic, NEAR_MISS_CHARS};
use crate::formats::machine::OperationWeights;
use crate::language::expr::{AccessSpan, Dims, Expr, OperationCounts};
use crate::language::levels::Computation;
use crate::language::program::{access_snippet, access_snippet_by, Body, Program, ValueType, DIMS};

/// Index into [`Analysis::arrays`].
pub type ArrayId = usize;

/// Min and max offset per dimension: `[(lo, hi); 3]` for (x, y, z).
pub type Bounds = [(i32, i32); 3];

/// Cells beyond the domain on each side per dimension: `[[minus, plus]; 3]`.
pub type Extent = [[usize; 2]; 3];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrayKind {
    /// Read by the program, defined by no stencil.
    Input,
    /// Written by the stencil with this index.
    Stencil(usize),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Array {
    pub name: String,
    pub kind: ArrayKind,
    /// Its dimensions: all three, or an input field's own (`fields:`).
    pub dims: Dims,
}

/// What the analysis knows of one stencil.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StencilInfo {
    pub name: String,
    /// The array this stencil writes.
    pub array: ArrayId,
    /// `A_i`: the distinct (array, offset) pairs read, sorted.
    pub accesses: Vec<(ArrayId, [i32; 3])>,
    /// `B_i^d(a)` for every array read.
    pub bounds: BTreeMap<ArrayId, Bounds>,
    /// `c_i = 1 + |A_i|`: one store and the distinct loads.
    pub fetch_weight: u64,
    /// `f_i`: the arithmetic of one evaluation, its `let`s included, in adds: `operation_counts`
    /// weighed with [`Analysis::operation_weights`] (see [`crate::Expr::operations`]).
    pub operations: u64,
    /// The operations of one evaluation by kind, its `let`s included.
    pub operation_counts: OperationCounts,
    /// The operations of one column of the domain's levels, by kind: each body's (its `let`s
    /// included) times the levels it covers (an interval stencil's bodies differ; a 2-D
    /// stencil's one level).
    pub column_operations: OperationCounts,
    /// Stencils that read this one, in program order.
    pub readers: Vec<usize>,
    pub is_output: bool,
    /// The box the reference semantics evaluates this stencil on, beyond the domain.
    pub extent: Extent,
    /// How its levels are ordered; a sweep (forward or backward) reads its own earlier levels
    /// (`self_reads`), so its levels are computed in order.
    pub computation: Computation,
    /// A sweep's reads of its own array (offsets along k only, toward the levels computed
    /// before), sorted; not in `accesses` (the model counts no load for them: the level was
    /// just written).
    pub self_reads: Vec<[i32; 3]>,
    /// Whether it has `intervals:` (then, like a sweep, it is computed on the domain's levels
    /// only: its extent along k is 0).
    pub intervals: bool,
    /// For a 2-D stencil (`[i, j]` under `fields:`): the level it is computed at, once per
    /// column (its interval's, or 0 for one without intervals, which reads no level).
    pub plane: Option<i64>,
}

impl StencilInfo {
    /// Arrays read, in id order.
    pub fn reads(&self) -> impl Iterator<Item = ArrayId> + '_ {
        self.bounds.keys().copied()
    }
}

/// The analysed program.
#[derive(Clone, Debug)]
pub struct Analysis {
    pub arrays: Vec<Array>,
    pub stencils: Vec<StencilInfo>,
    /// Input arrays in order of first appearance.
    pub inputs: Vec<ArrayId>,
    /// Output stencils in program order.
    pub outputs: Vec<usize>,
    /// Data-flow graph: one node per array, an edge from each array to each stencil array
    /// that reads it (node index == ArrayId).
    pub graph: DiGraph<ArrayId, ()>,
    pub domain: [usize; 3],
    pub halo: [usize; 3],
    /// The weights `StencilInfo::operations` are counted with: the defaults, or the machine's
    /// once [`Analysis::weigh_operations`] has been called.
    pub operation_weights: OperationWeights,
}

/// `B_i^d(a)`: per array read, the least and greatest offset along each dimension.
fn bounds_of(reads: &BTreeSet<(ArrayId, [i32; 3])>) -> BTreeMap<ArrayId, Bounds> {
    let mut bounds: BTreeMap<ArrayId, Bounds> = BTreeMap::new();
    for &(a, off) in reads {
        let b = bounds
            .entry(a)
            .or_insert([(off[0], off[0]), (off[1], off[1]), (off[2], off[2])]);
        for d in 0..3 {
            b[d].0 = b[d].0.min(off[d]);
            b[d].1 = b[d].1.max(off[d]);
        }
    }
    bounds
}

/// The declared `inputs:`, when there are: a name no stencil writes must be one of them.
fn declared_inputs(program: &Program) -> Option<HashSet<&str>> {
    let inputs = program.inputs.as_ref()?;
    Some(inputs.iter().map(String::as_str).collect())
}

/// What the analysis knows of each stencil before linking: its reads (arrays not written by a
/// stencil become inputs, in order of first read), bounds, fetch weight and operations. Reads of
/// later stencils, of itself, and of undeclared names are errors.
fn stencil_infos(
    program: &Program,
    arrays: &mut Vec<Array>,
    ids: &mut HashMap<String, ArrayId>,
    inputs: &mut Vec<ArrayId>,
    errors: &mut Vec<Diagnostic>,
) -> Vec<StencilInfo> {
    let mut stencils = Vec::new();
    let declared = declared_inputs(program);
    for (n, s) in program.stencils.iter().enumerate() {
        let mut reads: BTreeSet<(ArrayId, [i32; 3])> = BTreeSet::new();
        let mut self_reads: BTreeSet<[i32; 3]> = BTreeSet::new();
        let mut reported: BTreeSet<String> = BTreeSet::new();
        let mut visit = |expr: &crate::language::expr::Expr, src: &str, spans, path: String| {
            expr.visit_accesses(&mut |name, offset| {
                let id = match ids.get(name) {
                    Some(&id) => id,
                    None if declared.as_ref().is_some_and(|d| !d.contains(name)) => {
                        if reported.insert(name.to_string()) {
                            errors.push(undeclared_error(
                                program,
                                name,
                                path.clone(),
                                src,
                                spans,
                            ));
                        }
                        return;
                    }
                    None => {
                        let id = arrays.len();
                        arrays.push(Array {
                            name: name.to_string(),
                            kind: ArrayKind::Input,
                            dims: program.dims(name),
                        });
                        ids.insert(name.to_string(), id);
                        inputs.push(id);
                        id
                    }
                };
                if id == n && s.computation.is_sweep() {
                    self_reads.insert(offset);
                    return;
                }
                if let ArrayKind::Stencil(m) = arrays[id].kind {
                    if m >= n && reported.insert(name.to_string()) {
                        let message = if m == n {
                            format!(
                                "stencil `{}` reads its own array `{name}`: a stencil may not read what it writes (a cycle), unless it is a sweep (`computation: forward` reads k-1, k-2, ...; `backward` k+1, k+2, ...)",
                                s.name
                            )
                        } else {
                            format!(
                                "stencil `{}` reads `{name}`, which is defined later (stencils[{m}]); a stencil may read only inputs and earlier stencils",
                                s.name
                            )
                        };
                        let mut d = Diagnostic::new(path.clone(), message);
                        if let Some((col, len)) = access_snippet(src, spans, name) {
                            d = d.with_snippet(src, col, len);
                        }
                        errors.push(d);
                    }
                }
                reads.insert((id, offset));
            });
        };
        for b in &s.bodies {
            for (l, (src, spans)) in b.lets.iter().zip(&b.sources.lets) {
                visit(&l.expr, src, spans, format!("{}.let.{}", b.path, l.name));
            }
            visit(
                &b.expr,
                &b.sources.expr,
                &b.sources.expr_accesses,
                format!("{}.expr", b.path),
            );
        }
        let bounds = bounds_of(&reads);
        stencils.push(StencilInfo {
            name: s.name.clone(),
            array: n,
            fetch_weight: 1 + reads.len() as u64,
            operations: 0,
            operation_counts: operation_counts(s, program.domain[2], program.value_type),
            column_operations: column_operations(s, program),
            accesses: reads.into_iter().collect(),
            bounds,
            readers: Vec::new(),
            is_output: program.outputs.contains(&s.name),
            extent: [[0; 2]; 3],
            computation: s.computation,
            self_reads: self_reads.into_iter().collect(),
            intervals: s.has_intervals(),
            plane: (!program.dims(&s.name).has(2)).then(|| s.body_levels(0, program.domain[2]).0),
        });
    }
    stencils
}

/// The operations of one evaluation of body `b` of `s`, its `let`s included.
fn body_operations(
    s: &crate::language::program::Stencil,
    b: usize,
    vt: ValueType,
) -> OperationCounts {
    let body = &s.bodies[b];
    body.lets
        .iter()
        .map(|l| l.expr.operation_counts_in(vt))
        .sum::<OperationCounts>()
        + body.expr.operation_counts_in(vt)
}

/// The operations of one evaluation of `s`: those of its body on the most levels (an interval
/// stencil's interior), its `let`s included.
fn operation_counts(
    s: &crate::language::program::Stencil,
    nz: usize,
    vt: ValueType,
) -> OperationCounts {
    let widest = (0..s.bodies.len())
        .max_by_key(|&b| {
            let (lo, hi) = s.body_levels(b, nz);
            (hi - lo, std::cmp::Reverse(b))
        })
        .unwrap_or(0);
    body_operations(s, widest, vt)
}

/// The operations of `s` over one column of the domain's levels (one level when it is 2-D):
/// each body's times the levels it covers.
fn column_operations(s: &crate::language::program::Stencil, program: &Program) -> OperationCounts {
    let nz = program.domain[2];
    let three_d = program.dims(&s.name).has(2);
    (0..s.bodies.len())
        .map(|b| {
            let (lo, hi) = s.body_levels(b, nz);
            let levels = if three_d { (hi - lo).max(0) as u64 } else { 1 };
            body_operations(s, b, program.value_type).times(levels)
        })
        .sum()
}

/// The data-flow graph (one node per array, an edge from each array to each stencil reading
/// it) and every stencil's readers; a stencil neither output nor read is an error (dead code).
fn link_readers(
    stencils: &mut [StencilInfo],
    arrays: &[Array],
    errors: &mut Vec<Diagnostic>,
) -> DiGraph<ArrayId, ()> {
    let mut graph = DiGraph::new();
    for id in 0..arrays.len() {
        graph.add_node(id);
    }
    for n in 0..stencils.len() {
        let reads: Vec<ArrayId> = stencils[n].reads().collect();
        for a in reads {
            graph.add_edge(NodeIndex::new(a), NodeIndex::new(n), ());
            if let ArrayKind::Stencil(m) = arrays[a].kind {
                stencils[m].readers.push(n);
            }
        }
    }
    debug_assert!(!petgraph::algo::is_cyclic_directed(&graph));

    for (n, s) in stencils.iter().enumerate() {
        if !s.is_output && s.readers.is_empty() {
            errors.push(Diagnostic::new(
                format!("stencils[{n}].name"),
                format!(
                    "stencil `{}` is neither an output nor read by another stencil (dead code): list it in `outputs` or remove it",
                    s.name
                ),
            ));
        }
    }
    graph
}

/// How far beyond the domain stencil `n`'s bodies read each array, `[[below, above]; 3]`: its
/// extent widened by the access offsets (an offset toward the domain does not narrow it), and
/// along k for a body on an interval `[lo, hi)`, the levels `[lo + c, hi + c)` it reads beyond
/// `0..nz`. The stencil's own array (a sweep's self-reads) is left out.
fn read_regions(
    program: &Program,
    stencils: &[StencilInfo],
    ids: &HashMap<String, ArrayId>,
    n: usize,
) -> BTreeMap<ArrayId, Extent> {
    let nz = program.domain[2] as i64;
    let ext = stencils[n].extent;
    let st = &program.stencils[n];
    let mut needs: BTreeMap<ArrayId, Extent> = BTreeMap::new();
    for (b, body) in st.bodies.iter().enumerate() {
        let levels = body.levels.map(|_| st.body_levels(b, program.domain[2]));
        let mut note = |name: &str, off: [i32; 3]| {
            let Some(&a) = ids.get(name) else { return };
            if a == n {
                return;
            }
            let need = needs.entry(a).or_insert([[0; 2]; 3]);
            for d in 0..3 {
                let o = off[d] as i64;
                let (below, above) = match (d, levels) {
                    (2, Some((lo, hi))) => ((-(lo + o)).max(0), (hi + o - nz).max(0)),
                    _ => (ext[d][0] as i64 + (-o).max(0), ext[d][1] as i64 + o.max(0)),
                };
                need[d][0] = need[d][0].max(below as usize);
                need[d][1] = need[d][1].max(above as usize);
            }
        };
        for e in body.lets.iter().map(|l| &l.expr).chain([&body.expr]) {
            e.visit_accesses(&mut |name, off| note(name, off));
        }
    }
    needs
}

/// The extents the reference evaluates each stencil on, from the last stencil backwards: each
/// reader widens what it reads by its access offsets (an interval body by its levels).
fn widen_extents(
    program: &Program,
    stencils: &mut [StencilInfo],
    arrays: &[Array],
    ids: &HashMap<String, ArrayId>,
) {
    for n in (0..stencils.len()).rev() {
        for (a, need) in read_regions(program, stencils, ids, n) {
            if let ArrayKind::Stencil(m) = arrays[a].kind {
                // A 2-D stencil is computed at its own coordinates only.
                for d in (0..3).filter(|&d| arrays[a].dims.has(d)) {
                    let e = &mut stencils[m].extent[d];
                    e[0] = e[0].max(need[d][0]);
                    e[1] = e[1].max(need[d][1]);
                }
            }
        }
    }
}

/// Everything read must lie in domain + halo: an error per read that leaves it, at the access.
/// A sweep or an interval stencil is computed on the domain's levels only: a read of it beyond
/// them is an error, and so is a sweep's read of its own array that is not along k toward the
/// levels computed before, or that reaches beyond the domain's levels.
fn check_halo(
    program: &Program,
    stencils: &[StencilInfo],
    arrays: &[Array],
    ids: &HashMap<String, ArrayId>,
    errors: &mut Vec<Diagnostic>,
) {
    let domain = program.domain;
    for (n, s) in stencils.iter().enumerate() {
        for (a, r) in read_regions(program, stencils, ids, n) {
            let name = &arrays[a].name;
            let producer = match arrays[a].kind {
                ArrayKind::Stencil(m) => Some(m),
                ArrayKind::Input => None,
            };
            // A field is read at its own coordinates only.
            for d in (0..3).filter(|&d| arrays[a].dims.has(d)) {
                for side in 0..2 {
                    let need = r[d][side];
                    let sign = if side == 0 { "-" } else { "+" };
                    let message = match producer {
                        None if need > program.halo[d] => format!(
                            "stencil `{}` reads `{name}` {need} cell(s) beyond the domain on the {}{sign} side (it is evaluated {} cell(s) beyond the domain there, and reads beyond it); the halo along {} is {}, it must be at least {need}",
                            s.name, DIMS[d], s.extent[d][side], DIMS[d], program.halo[d]
                        ),
                        Some(m) if d == 2
                            && need > 0
                            && (stencils[m].computation.is_sweep() || stencils[m].intervals) =>
                        {
                            format!(
                                "stencil `{}` reads `{name}` {need} level(s) beyond the domain's {} on the k{sign} side, but `{name}` is {} and so is computed on the domain's levels only; give `{}` intervals whose reads stay inside",
                                s.name,
                                if side == 0 { "bottom".to_string() } else { format!("top ({} levels)", domain[2]) },
                                if stencils[m].computation.is_sweep() { "a sweep" } else { "computed by intervals" },
                                s.name
                            )
                        }
                        _ => continue,
                    };
                    // The read that reaches furthest on this side.
                    let rank = |a: &AccessSpan| if side == 0 { -a.offset[d] } else { a.offset[d] };
                    errors.push(access_error(program, n, name, message, &|a| rank(a) as i64));
                }
            }
        }
        if s.computation.is_sweep() {
            check_self_reads(program, s, n, errors);
        }
        // Its array spans the domain plus the halo along its dimensions: a stencil read only
        // through fields (or reading nothing) is bounded here, not by an input's halo.
        for d in (0..3).filter(|&d| arrays[s.array].dims.has(d)) {
            for side in 0..2 {
                let e = s.extent[d][side];
                if e > program.halo[d] {
                    errors.push(Diagnostic::new(
                        format!("stencils[{n}]"),
                        format!(
                            "stencil `{}` is evaluated {e} cell(s) beyond the domain on the {}{} side (its readers read it there), but its array spans the halo, {} along {}: the halo must be at least {e}",
                            s.name, DIMS[d], if side == 0 { "-" } else { "+" }, program.halo[d], DIMS[d]
                        ),
                    ));
                }
            }
        }
    }
}

/// A sweep's reads of its own array: along k only, toward the levels computed before (k-1,
/// k-2, ... forward; k+1, ... backward), and at every level of each body, within the domain's
/// levels.
fn check_self_reads(program: &Program, s: &StencilInfo, n: usize, errors: &mut Vec<Diagnostic>) {
    let nz = program.domain[2] as i64;
    let st = &program.stencils[n];
    let forward = s.computation == Computation::Forward;
    for (b, body) in st.bodies.iter().enumerate() {
        let (lo, hi) = st.body_levels(b, program.domain[2]);
        for (path, expr, src, spans) in body_exprs(body) {
            let mut problems = Vec::new();
            expr.visit_accesses(&mut |name, off| {
                if name != s.name {
                    return;
                }
                let written = format!(
                    "{name}(i{}, j{}, k{})",
                    signed(off[0]),
                    signed(off[1]),
                    signed(off[2])
                );
                let toward = if forward { off[2] < 0 } else { off[2] > 0 };
                if off[0] != 0 || off[1] != 0 || !toward {
                    problems.push((off, format!(
                        "`{written}`: a {} sweep reads its own array only at k{} (levels computed before)",
                        s.computation.name(),
                        if forward { "-1, k-2, ..." } else { "+1, k+2, ..." }
                    )));
                } else {
                    let level = if forward { lo + off[2] as i64 } else { hi - 1 + off[2] as i64 };
                    if level < 0 || level >= nz {
                        problems.push((off, format!(
                            "`{written}` at level {} reads level {level}, outside the domain's levels 0..{nz}: the {} interval needs a body that does not read it",
                            if forward { lo } else { hi - 1 },
                            if forward { "bottom" } else { "top" }
                        )));
                    }
                }
            });
            problems.dedup();
            for (off, p) in problems {
                let message = format!("stencil `{}`: {p}", s.name);
                let at = |a: &AccessSpan| i64::from(a.offset == off);
                errors.push(located(path.clone(), message, src, spans, (&s.name, &at)));
            }
        }
    }
}

/// Each expression of `body` with its key path, source text and access spans: the
/// expression, then the lets in order (where an error about a read points first).
fn body_exprs(body: &Body) -> impl Iterator<Item = (String, &Expr, &str, &[AccessSpan])> {
    let expr = (
        format!("{}.expr", body.path),
        &body.expr,
        body.sources.expr.as_str(),
        body.sources.expr_accesses.as_slice(),
    );
    let lets = body
        .lets
        .iter()
        .zip(&body.sources.lets)
        .map(|(l, (text, spans))| {
            (
                format!("{}.let.{}", body.path, l.name),
                &l.expr,
                text.as_str(),
                spans.as_slice(),
            )
        });
    std::iter::once(expr).chain(lets)
}

/// An offset as written after an index variable: `+1`, `-2`, or nothing for 0.
fn signed(v: i32) -> String {
    match v {
        0 => String::new(),
        v if v > 0 => format!("+{v}"),
        v => v.to_string(),
    }
}

/// How to pick the read of an array an error is about, where several read it.
type Rank<'a> = &'a dyn Fn(&AccessSpan) -> i64;

/// The error `message` at stencil `n`'s read of `name` that `rank` ranks highest over all its
/// expressions (the first on ties), with a caret under it.
fn access_error(
    program: &Program,
    n: usize,
    name: &str,
    message: String,
    rank: Rank,
) -> Diagnostic {
    let st = &program.stencils[n];
    let mut best: Option<(i64, String, &str, &[AccessSpan])> = None;
    for (path, _, src, spans) in st.bodies.iter().flat_map(body_exprs) {
        let top = spans.iter().filter(|a| a.array == name).map(rank).max();
        if let Some(r) = top.filter(|r| best.as_ref().is_none_or(|b| *r > b.0)) {
            best = Some((r, path, src, spans));
        }
    }
    match best {
        Some((_, path, src, spans)) => located(path, message, src, spans, (name, rank)),
        None => Diagnostic::new(format!("{}.expr", st.bodies[0].path), message),
    }
}

/// A diagnostic at `path` with a caret under the access of `name` in `src` that `rank` ranks
/// highest.
fn located(
    path: String,
    message: String,
    src: &str,
    spans: &[AccessSpan],
    (name, rank): (&str, Rank),
) -> Diagnostic {
    let d = Diagnostic::new(path, message);
    match access_snippet_by(src, spans, name, rank) {
        Some((col, len)) => d.with_snippet(src, col, len),
        None => d,
    }
}

/// The error for a read of `name`, neither a stencil nor a declared input, with the closest
/// declared name as a hint.
fn undeclared_error(
    program: &Program,
    name: &str,
    path: String,
    src: &str,
    spans: &[crate::language::expr::AccessSpan],
) -> Diagnostic {
    let known = program
        .stencils
        .iter()
        .map(|s| s.name.as_str())
        .chain(program.inputs.iter().flatten().map(String::as_str));
    let hint = match closest(name, known) {
        Some(c) => format!("; did you mean `{c}`?"),
        None => "; add it to `inputs:` if it is one".to_string(),
    };
    let mut d = Diagnostic::new(
        path,
        format!("`{name}` is neither a stencil nor a declared input{hint}"),
    );
    if let Some((col, len)) = access_snippet(src, spans, name) {
        d = d.with_snippet(src, col, len);
    }
    d
}

impl Analysis {
    /// Inputs of 3 to [`NEAR_MISS_CHARS`] characters whose names are one edit away from a stencil's:
    /// likely misspellings when the program declares no `inputs:` (`check` warns about them).
    /// Pairs (input, stencil).
    pub fn near_miss_inputs(&self) -> Vec<(String, String)> {
        let stencils: Vec<&str> = self.stencils.iter().map(|s| s.name.as_str()).collect();
        let inputs: Vec<&str> = self
            .inputs
            .iter()
            .map(|&a| self.arrays[a].name.as_str())
            .filter(|name| (3..=NEAR_MISS_CHARS).contains(&name.chars().count()))
            .collect();
        inputs
            .iter()
            .zip(one_edit_away(&inputs, &stencils))
            .filter_map(|(name, close)| Some((name.to_string(), stencils[close?].to_string())))
            .collect()
    }

    /// Analyses a parsed program; every data-flow problem found is returned.
    pub fn new(program: &Program) -> Result<Analysis, Vec<Diagnostic>> {
        let mut errors = Vec::new();
        let mut arrays: Vec<Array> = Vec::new();
        let mut ids: HashMap<String, ArrayId> = HashMap::new();
        for (n, s) in program.stencils.iter().enumerate() {
            ids.insert(s.name.clone(), arrays.len());
            arrays.push(Array {
                name: s.name.clone(),
                kind: ArrayKind::Stencil(n),
                dims: program.dims(&s.name),
            });
        }
        let mut inputs = Vec::new();
        let mut stencils = stencil_infos(program, &mut arrays, &mut ids, &mut inputs, &mut errors);
        for name in program.fields.keys().filter(|f| !ids.contains_key(*f)) {
            errors.push(Diagnostic::new(
                format!("fields.{name}"),
                format!("no stencil reads `{name}`: a field is an input the program reads"),
            ));
        }
        let mut outputs = Vec::new();
        for (n, o) in program.outputs.iter().enumerate() {
            match ids.get(o).map(|&id| arrays[id].kind) {
                Some(ArrayKind::Stencil(m)) => outputs.push(m),
                Some(ArrayKind::Input) => errors.push(Diagnostic::new(
                    format!("outputs[{n}]"),
                    format!("`{o}` is an input array, not a stencil; outputs must name stencils"),
                )),
                None => errors.push(Diagnostic::new(
                    format!("outputs[{n}]"),
                    format!("`{o}` is not a stencil of this program"),
                )),
            }
        }
        outputs.sort_unstable();
        if !errors.is_empty() {
            return Err(errors);
        }

        let graph = link_readers(&mut stencils, &arrays, &mut errors);

        widen_extents(program, &mut stencils, &arrays, &ids);
        check_halo(program, &stencils, &arrays, &ids, &mut errors);
        if !errors.is_empty() {
            return Err(errors);
        }
        let mut analysis = Analysis {
            arrays,
            stencils,
            inputs,
            outputs,
            graph,
            domain: program.domain,
            halo: program.halo,
            operation_weights: OperationWeights::default(),
        };
        analysis.weigh_operations(OperationWeights::default());
        Ok(analysis)
    }

    /// Analyses a program and weighs its operations with a machine's weights.
    pub fn weighed(
        program: &Program,
        weights: OperationWeights,
    ) -> Result<Analysis, Vec<Diagnostic>> {
        let mut analysis = Analysis::new(program)?;
        analysis.weigh_operations(weights);
        Ok(analysis)
    }

    /// Counts every stencil's `operations` with `weights` (a machine's `params.operations`):
    /// the cost model and its encodings read `operations`, so an analysis is weighed with the
    /// machine it is costed on (debug builds check: `evaluate::debug_check_weights`).
    pub fn weigh_operations(&mut self, weights: OperationWeights) {
        self.operation_weights = weights;
        for s in &mut self.stencils {
            s.operations = s.operation_counts.weighed(&weights);
        }
    }

    /// The dimensions of array `name` (all three for a name it does not know).
    pub fn dims_of(&self, name: &str) -> Dims {
        self.array_id(name)
            .map_or(Dims::ALL, |a| self.arrays[a].dims)
    }

    pub fn array_id(&self, name: &str) -> Option<ArrayId> {
        self.arrays.iter().position(|a| a.name == name)
    }

    /// The stencil that writes `array`, if any.
    pub fn producer(&self, array: ArrayId) -> Option<usize> {
        match self.arrays[array].kind {
            ArrayKind::Stencil(n) => Some(n),
            ArrayKind::Input => None,
        }
    }

    /// Arrays stencil `n` touches: what it reads and what it writes, in id order.
    pub fn touched(&self, n: usize) -> BTreeSet<ArrayId> {
        let s = &self.stencils[n];
        let mut t: BTreeSet<ArrayId> = s.reads().collect();
        t.insert(s.array);
        t
    }

    /// Whether the program computes whole columns: a stencil is a sweep (`computation: forward`
    /// or `backward`) or 2-D. Then every group computes whole columns, one tile along z, and
    /// none streams (`SearchSpace::tile_range`, `SearchSpace::stream_shape`,
    /// `Infeasibility::Sweep`).
    pub fn has_sweeps(&self) -> bool {
        self.stencils
            .iter()
            .any(|s| s.computation.is_sweep() || s.plane.is_some())
    }

    /// Whether stencil `s` is 2-D (`[i, j]`, computed once per column; a group of its own).
    pub fn is_plane(&self, s: usize) -> bool {
        self.stencils[s].plane.is_some()
    }

    /// The domain the cost model counts stencil `s`'s elements over: the domain, with one level
    /// for a 2-D stencil (computed at its level only).
    pub fn counted_domain(&self, s: usize) -> [usize; 3] {
        let [nx, ny, nz] = self.domain;
        [nx, ny, if self.is_plane(s) { 1 } else { nz }]
    }

    /// Whether stencils `s` and `s + 1` are in different groups in every configuration: one of
    /// them is 2-D (stored once per column, read from memory by the others).
    pub fn forced_cut(&self, s: usize) -> bool {
        self.is_plane(s) || self.is_plane(s + 1)
    }

    /// Whether the stencils `range` may form one group: one stencil, or none 2-D.
    pub fn may_group(&self, range: std::ops::Range<usize>) -> bool {
        range.len() <= 1 || !range.clone().any(|s| self.is_plane(s))
    }

    pub fn num_stencils(&self) -> usize {
        self.stencils.len()
    }
}
