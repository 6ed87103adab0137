//! Access analysis (docs/MODEL.md, "Per-stencil quantities" and "Program file"): per stencil
//! the distinct (array, offset) reads `A_i`, the per-array bounding boxes `B_i^d(a)`, the fetch
//! weight `c_i = 1 + |A_i|`, the dependency graph, and the extents the reference semantics
//! evaluates each stencil on. Construction validates the data flow: forward reads and cycles, dead
//! stencils, outputs that are not stencils, reads beyond the halo.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use petgraph::graph::{DiGraph, NodeIndex};

use crate::formats::diagnostic::{closest, edit_distance, Diagnostic};
use crate::formats::machine::OperationWeights;
use crate::language::expr::OperationCounts;
use crate::language::program::{access_snippet, Program, DIMS};

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
    /// Stencils that read this one, in program order.
    pub readers: Vec<usize>,
    pub is_output: bool,
    /// The box the reference semantics evaluates this stencil on, beyond the domain.
    pub extent: Extent,
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
    for (n, s) in program.stencils.iter().enumerate() {
        let mut reads: BTreeSet<(ArrayId, [i32; 3])> = BTreeSet::new();
        let mut reported: BTreeSet<String> = BTreeSet::new();
        let mut visit = |expr: &crate::language::expr::Expr, src: &str, spans, path: String| {
            expr.visit_accesses(&mut |name, offset| {
                let id = match ids.get(name) {
                    Some(&id) => id,
                    None if undeclared(program, name) => {
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
                        });
                        ids.insert(name.to_string(), id);
                        inputs.push(id);
                        id
                    }
                };
                if let ArrayKind::Stencil(m) = arrays[id].kind {
                    if m >= n && reported.insert(name.to_string()) {
                        let message = if m == n {
                            format!(
                                "stencil `{}` reads its own array `{name}`: a stencil may not read what it writes (a cycle)",
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
        for (l, (src, spans)) in s.lets.iter().zip(&s.sources.lets) {
            visit(&l.expr, src, spans, format!("stencils[{n}].let.{}", l.name));
        }
        visit(
            &s.expr,
            &s.sources.expr,
            &s.sources.expr_accesses,
            format!("stencils[{n}].expr"),
        );
        let bounds = bounds_of(&reads);
        stencils.push(StencilInfo {
            name: s.name.clone(),
            array: n,
            fetch_weight: 1 + reads.len() as u64,
            operations: 0,
            operation_counts: s
                .lets
                .iter()
                .map(|l| l.expr.operation_counts())
                .sum::<OperationCounts>()
                + s.expr.operation_counts(),
            accesses: reads.into_iter().collect(),
            bounds,
            readers: Vec::new(),
            is_output: program.outputs.contains(&s.name),
            extent: [[0; 2]; 3],
        });
    }
    stencils
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

/// The extents the reference evaluates each stencil on, from the last stencil backwards: each
/// reader widens what it reads by its access offsets.
fn widen_extents(stencils: &mut [StencilInfo], arrays: &[Array]) {
    for n in (0..stencils.len()).rev() {
        let ext = stencils[n].extent;
        let reads: Vec<(ArrayId, Bounds)> =
            stencils[n].bounds.iter().map(|(&a, &b)| (a, b)).collect();
        for (a, b) in reads {
            if let ArrayKind::Stencil(m) = arrays[a].kind {
                for d in 0..3 {
                    let e = &mut stencils[m].extent[d];
                    e[0] = e[0].max(ext[d][0] + (-b[d].0).max(0) as usize);
                    e[1] = e[1].max(ext[d][1] + b[d].1.max(0) as usize);
                }
            }
        }
    }
}

/// Everything read must lie in domain + halo: an error per read that leaves it, at the access.
fn check_halo(
    program: &Program,
    stencils: &[StencilInfo],
    arrays: &[Array],
    errors: &mut Vec<Diagnostic>,
) {
    for (n, s) in stencils.iter().enumerate() {
        for (&a, b) in &s.bounds {
            for d in 0..3 {
                for side in 0..2 {
                    let reach = if side == 0 { -b[d].0 } else { b[d].1 }.max(0) as usize;
                    let need = s.extent[d][side] + reach;
                    if need > program.halo[d] {
                        let sign = if side == 0 { "-" } else { "+" };
                        let name = &arrays[a].name;
                        let message = format!(
                            "stencil `{}` reads `{name}` {need} cell(s) beyond the domain on the {}{sign} side (it is evaluated {} cell(s) beyond the domain there and reads up to offset {sign}{reach}); the halo along {} is {}, it must be at least {need}",
                            s.name, DIMS[d], s.extent[d][side], DIMS[d], program.halo[d]
                        );
                        let src = &program.stencils[n].sources;
                        let mut d = Diagnostic::new(format!("stencils[{n}].expr"), message);
                        if let Some((col, len)) =
                            access_snippet(&src.expr, &src.expr_accesses, name)
                        {
                            d = d.with_snippet(&src.expr, col, len);
                        } else if let Some((k, (text, spans))) = src
                            .lets
                            .iter()
                            .enumerate()
                            .find(|(_, (t, sp))| access_snippet(t, sp, name).is_some())
                        {
                            let (col, len) = access_snippet(text, spans, name).unwrap_or((1, 1));
                            d = Diagnostic::new(
                                format!("stencils[{n}].let.{}", program.stencils[n].lets[k].name),
                                d.message,
                            )
                            .with_snippet(text, col, len);
                        }
                        errors.push(d);
                    }
                }
            }
        }
    }
}

/// Whether `name`, which no stencil writes, is missing from the program's declared `inputs:`.
fn undeclared(program: &Program, name: &str) -> bool {
    program
        .inputs
        .as_ref()
        .is_some_and(|inputs| !inputs.iter().any(|i| i == name))
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
    /// Inputs of three or more characters whose names are one edit away from a stencil's:
    /// likely misspellings when the program declares no `inputs:` (`check` warns about them).
    /// Pairs (input, stencil).
    pub fn near_miss_inputs(&self) -> Vec<(String, String)> {
        self.inputs
            .iter()
            .filter_map(|&a| {
                let name = &self.arrays[a].name;
                if name.chars().count() < 3 {
                    return None;
                }
                let close = self
                    .stencils
                    .iter()
                    .map(|s| s.name.as_str())
                    .find(|s| edit_distance(name, s) == 1)?;
                Some((name.clone(), close.to_string()))
            })
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
            });
        }
        let mut inputs = Vec::new();
        let mut stencils = stencil_infos(program, &mut arrays, &mut ids, &mut inputs, &mut errors);
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

        widen_extents(&mut stencils, &arrays);
        check_halo(program, &stencils, &arrays, &mut errors);
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

    pub fn num_stencils(&self) -> usize {
        self.stencils.len()
    }
}
