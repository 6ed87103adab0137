//! Stencil programs as read from YAML (docs/MODEL.md, "Program file"): the file shape, its validation,
//! and the parsed [`Program`] every later stage uses.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::formats::diagnostic::{Diagnostic, FileError};
use crate::formats::limits;
use crate::formats::yaml;
use crate::language::checks;
use crate::language::constraints::check_constraints;
use crate::language::expr::{parse_expr_spanned, AccessSpan, Dims, Expr, Func};
use crate::language::fields::{check_field_accesses, check_planes, read_fields};
use crate::language::levels::{check_intervals, Computation, Levels};
use crate::language::scalars::check_scalars;

/// The three dimensions, in memory order: x (contiguous, index `i`), y (`j`), z (`k`).
pub const DIMS: [&str; 3] = ["i", "j", "k"];

/// The floating-point type of every array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ValueType {
    #[default]
    Double,
    Float,
}

impl ValueType {
    pub fn bytes(self) -> usize {
        match self {
            ValueType::Double => 8,
            ValueType::Float => 4,
        }
    }
    pub fn c_name(self) -> &'static str {
        match self {
            ValueType::Double => "double",
            ValueType::Float => "float",
        }
    }
}

/// A `let` local: evaluated in order before the stencil's expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Let {
    pub name: String,
    pub expr: Expr,
}

/// One stencil: writes the array named after it.
#[derive(Clone, Debug, PartialEq)]
pub struct Stencil {
    pub name: String,
    /// How its levels are computed: all at once, or in order along k.
    pub computation: Computation,
    /// What it computes: one body on every level (a stencil with `expr:`), or one body per
    /// interval of levels (`intervals:`), which together cover the domain's levels.
    pub bodies: Vec<Body>,
}

/// One body of a stencil: its `let` locals and expression, on every level or on one interval.
#[derive(Clone, Debug, PartialEq)]
pub struct Body {
    /// The interval it computes; None: every level.
    pub levels: Option<Levels>,
    pub lets: Vec<Let>,
    pub expr: Expr,
    /// Source text and access spans of `expr` and of each let (same order as `lets`), kept so
    /// later checks can point a caret at an access.
    pub sources: StencilSources,
    /// The key path of the body in the program file, for messages: `stencils[3]` or
    /// `stencils[3].intervals[1]`.
    pub path: String,
}

impl Stencil {
    /// Every expression of every body, lets first, in source order.
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        self.bodies
            .iter()
            .flat_map(|b| b.lets.iter().map(|l| &l.expr).chain([&b.expr]))
    }

    /// Whether the stencil has intervals (more than one body, or one on part of the levels).
    pub fn has_intervals(&self) -> bool {
        self.bodies.iter().any(|b| b.levels.is_some())
    }

    /// The resolved levels `[lo, hi)` of body `b` in a domain of `nz` levels.
    pub fn body_levels(&self, b: usize, nz: usize) -> (i64, i64) {
        self.bodies[b]
            .levels
            .map_or((0, nz as i64), |l| l.resolve(nz))
    }
}

/// Where a stencil's expressions came from, for error messages.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct StencilSources {
    pub expr: String,
    pub expr_accesses: Vec<AccessSpan>,
    pub lets: Vec<(String, Vec<AccessSpan>)>,
}

/// Optional restrictions of the search, from the program's `constraints:` block or the CLI.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Constraints {
    /// Fixed group index per stencil (`0,0,1,1`): first 0, steps of 0 or 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<usize>>,
    /// Lower bounds on tile counts (n^x, n^y, n^z).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiles_min: Option<[usize; 3]>,
    /// Upper bounds on tile counts (n^x, n^y, n^z).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiles_max: Option<[usize; 3]>,
}

/// A validated stencil program (the syntax is checked here; data-flow checks are in `analysis`).
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub name: String,
    pub domain: [usize; 3],
    pub halo: [usize; 3],
    pub outputs: Vec<String>,
    pub value_type: ValueType,
    /// The input arrays, when the file declares them (`inputs:`): then reading any other array
    /// that no stencil writes is an error (`Analysis::new`).
    pub inputs: Option<Vec<String>>,
    /// Run-time scalars (`scalars:`): names read bare in expressions ([`Expr::Scalar`]),
    /// arguments of the generated function after its arrays, in this order.
    pub scalars: Vec<String>,
    /// The input arrays with fewer dimensions than (i, j, k) (`fields:`); see [`Program::dims`].
    pub fields: BTreeMap<String, Dims>,
    pub stencils: Vec<Stencil>,
    pub constraints: Constraints,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProgramFile {
    name: String,
    domain: [i64; 3],
    halo: [i64; 3],
    outputs: Vec<String>,
    #[serde(default, rename = "type")]
    value_type: ValueType,
    #[serde(default)]
    inputs: Option<Vec<String>>,
    #[serde(default)]
    scalars: Vec<String>,
    #[serde(default, deserialize_with = "yaml::unique_keys")]
    fields: IndexMap<String, Vec<String>>,
    stencils: Vec<StencilFile>,
    #[serde(default)]
    constraints: Option<Constraints>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StencilFile {
    name: String,
    #[serde(default)]
    computation: Computation,
    #[serde(default, rename = "let", deserialize_with = "yaml::unique_keys")]
    lets: IndexMap<String, String>,
    #[serde(default)]
    expr: Option<String>,
    #[serde(default)]
    intervals: Option<Vec<IntervalFile>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IntervalFile {
    k: (i64, Option<i64>),
    #[serde(default, rename = "let", deserialize_with = "yaml::unique_keys")]
    lets: IndexMap<String, String>,
    expr: String,
}

/// `[A-Za-z_][A-Za-z0-9_]*`
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Names a user may not give an array or a local: the index variables and the functions.
pub fn reserved_reason(name: &str) -> Option<&'static str> {
    if DIMS.contains(&name) {
        Some("is an index variable")
    } else if Func::from_name(name).is_some() {
        Some("is a function name")
    } else {
        None
    }
}

fn expr_diagnostic(path: String, src: &str, err: &crate::language::expr::ParseError) -> Diagnostic {
    let len = src
        .get(err.span.start..err.span.end.max(err.span.start))
        .map(|s| s.chars().count())
        .unwrap_or(1);
    Diagnostic::new(path, err.message.clone()).with_snippet(src, err.column(), len)
}

/// Finds the column and length of the first access of `array` in a source string, for carets.
pub fn access_snippet(src: &str, spans: &[AccessSpan], array: &str) -> Option<(usize, usize)> {
    access_snippet_by(src, spans, array, &|_| 0)
}

/// [`access_snippet`] of the access of `array` that `rank` ranks highest (the first on ties):
/// the read that breaks a rule, where several read the array.
pub fn access_snippet_by(
    src: &str,
    spans: &[AccessSpan],
    array: &str,
    rank: &dyn Fn(&AccessSpan) -> i64,
) -> Option<(usize, usize)> {
    let mut best: Option<&AccessSpan> = None;
    for a in spans.iter().filter(|a| a.array == array) {
        if best.is_none_or(|b| rank(a) > rank(b)) {
            best = Some(a);
        }
    }
    best.map(|a| {
        let column = src
            .get(..a.span.start)
            .map(|p| p.chars().count() + 1)
            .unwrap_or(1);
        let len = src
            .get(a.span.start..a.span.end)
            .map(|s| s.chars().count())
            .unwrap_or(1);
        (column, len)
    })
}

impl Program {
    /// Reads and validates a program file.
    pub fn load(path: &Path) -> Result<Program, FileError> {
        crate::formats::diagnostic::load_file(path, Program::from_yaml)
    }

    /// Parses and validates program text; every problem found is returned.
    pub fn from_yaml(text: &str) -> Result<Program, Vec<Diagnostic>> {
        let file: ProgramFile = yaml::from_str(text).map_err(|d| vec![d])?;
        let mut errors = Vec::new();
        if !is_identifier(&file.name) {
            errors.push(Diagnostic::new(
                "name",
                format!(
                    "`{}` is not an identifier ([A-Za-z_][A-Za-z0-9_]*)",
                    file.name
                ),
            ));
        }
        if file.name.len() > limits::MAX_PROGRAM_NAME {
            errors.push(Diagnostic::new(
                "name",
                format!(
                    "the name has {} bytes; at most {} (the generated files are named after it)",
                    file.name.len(),
                    limits::MAX_PROGRAM_NAME
                ),
            ));
        }
        let (domain, halo) = domain_and_halo(&file, &mut errors);
        // 2-D stencils (`[i, j]` under `fields:`) have one interval of one level.
        let planes: Vec<&str> = file
            .fields
            .iter()
            .filter(|(_, d)| d.as_slice() == ["i", "j"])
            .map(|(n, _)| n.as_str())
            .collect();
        let (mut stencils, seen) = read_stencils(&file.stencils, domain[2], &planes, &mut errors);
        if !errors.is_empty() {
            return Err(errors);
        }
        check_scalars(&file.scalars, &stencils, &file.inputs, &mut errors);
        for b in stencils.iter_mut().flat_map(|s| s.bodies.iter_mut()) {
            b.expr = b.expr.with_scalars(&file.scalars);
            for l in &mut b.lets {
                l.expr = l.expr.with_scalars(&file.scalars);
            }
        }
        check_stencil_locals(&stencils, &mut errors);
        checks::check_literals(&stencils, file.value_type, &mut errors);
        let fields = read_fields(&file.fields, &stencils, file.inputs.as_deref(), &mut errors);
        check_field_accesses(&fields, &stencils, &mut errors);
        check_planes(&fields, &stencils, domain[2], &mut errors);
        if let Some(inputs) = &file.inputs {
            checks::check_inputs(inputs, &seen, &stencils, &mut errors);
        }
        checks::check_outputs(&file.outputs, &mut errors);
        let constraints = file.constraints.unwrap_or_default();
        check_constraints(&constraints, domain, stencils.len(), &mut errors);
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Program {
            name: file.name,
            domain,
            halo,
            outputs: file.outputs,
            value_type: file.value_type,
            inputs: file.inputs,
            scalars: file.scalars,
            fields,
            stencils,
            constraints,
        })
    }

    /// The program as a program file: parsing the text gives back the same program (the
    /// expressions as the printer writes them).
    pub fn to_yaml(&self) -> String {
        use crate::formats::yaml::{Mapping, Value};
        let text = |s: &str| Value::String(s.to_string());
        let numbers = |v: &[usize]| Value::Sequence(v.iter().map(|&n| Value::from(n)).collect());
        let names = |v: &[String]| Value::Sequence(v.iter().map(|n| text(n)).collect());
        let mut m = Mapping::new();
        m.insert(text("name"), text(&self.name));
        m.insert(text("domain"), numbers(&self.domain));
        m.insert(text("halo"), numbers(&self.halo));
        m.insert(text("type"), text(self.value_type.c_name()));
        m.insert(text("outputs"), names(&self.outputs));
        if let Some(inputs) = &self.inputs {
            m.insert(text("inputs"), names(inputs));
        }
        if !self.scalars.is_empty() {
            m.insert(text("scalars"), names(&self.scalars));
        }
        if !self.fields.is_empty() {
            let dims = |d: &Dims| Value::Sequence(d.names().into_iter().map(text).collect());
            let f = self.fields.iter().map(|(n, d)| (text(n), dims(d)));
            m.insert(text("fields"), Value::Mapping(f.collect()));
        }
        let stencils = self
            .stencils
            .iter()
            .map(|st| {
                let mut s = Mapping::new();
                s.insert(text("name"), text(&st.name));
                if st.computation.is_sweep() {
                    s.insert(text("computation"), text(st.computation.name()));
                }
                let body = |b: &Body, m: &mut Mapping| {
                    if !b.lets.is_empty() {
                        let mut lets = Mapping::new();
                        for l in &b.lets {
                            lets.insert(text(&l.name), text(&l.expr.to_string()));
                        }
                        m.insert(text("let"), Value::Mapping(lets));
                    }
                    m.insert(text("expr"), text(&b.expr.to_string()));
                };
                if st.has_intervals() {
                    let intervals = st
                        .bodies
                        .iter()
                        .map(|b| {
                            let levels = b.levels.expect("an interval's body has levels");
                            let mut m = Mapping::new();
                            m.insert(
                                text("k"),
                                Value::Sequence(vec![
                                    Value::from(levels.start),
                                    levels.end.map_or(Value::Null, Value::from),
                                ]),
                            );
                            body(b, &mut m);
                            Value::Mapping(m)
                        })
                        .collect();
                    s.insert(text("intervals"), Value::Sequence(intervals));
                } else {
                    body(&st.bodies[0], &mut s);
                }
                Value::Mapping(s)
            })
            .collect();
        m.insert(text("stencils"), Value::Sequence(stencils));
        let c = &self.constraints;
        if c.groups.is_some() || c.tiles_min.is_some() || c.tiles_max.is_some() {
            let mut cm = Mapping::new();
            if let Some(g) = &c.groups {
                cm.insert(text("groups"), numbers(g));
            }
            if let Some(t) = &c.tiles_min {
                cm.insert(text("tiles_min"), numbers(t));
            }
            if let Some(t) = &c.tiles_max {
                cm.insert(text("tiles_max"), numbers(t));
            }
            m.insert(text("constraints"), Value::Mapping(cm));
        }
        crate::formats::yaml::to_string(&Value::Mapping(m)).unwrap_or_default()
    }

    /// Index of the stencil named `name`.
    pub fn stencil_index(&self, name: &str) -> Option<usize> {
        self.stencils.iter().position(|s| s.name == name)
    }

    /// The dimensions of array `name`: its `fields:` entry, else all three.
    pub fn dims(&self, name: &str) -> Dims {
        self.fields.get(name).copied().unwrap_or(Dims::ALL)
    }

    /// Whether every group computes whole columns, one tile along k: a stencil is a sweep or
    /// 2-D (`Analysis::has_sweeps`).
    pub fn whole_columns(&self) -> bool {
        let column = |s: &Stencil| s.computation.is_sweep() || !self.dims(&s.name).has(2);
        self.stencils.iter().any(column)
    }
}

/// The stencils of a program file, their names checked and their expressions parsed (errors
/// pushed, and the stencil dropped, for those that do not parse), and the index of each name's
/// first definition.
fn read_stencils<'a>(
    files: &'a [StencilFile],
    nz: usize,
    planes: &[&str],
    errors: &mut Vec<Diagnostic>,
) -> (Vec<Stencil>, BTreeMap<&'a str, usize>) {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut stencils = Vec::new();
    for (n, s) in files.iter().enumerate() {
        let base = format!("stencils[{n}]");
        check_stencil_name(&base, &s.name, errors);
        if let Some(first) = seen.insert(&s.name, n) {
            errors.push(Diagnostic::new(
                format!("{base}.name"),
                format!(
                    "duplicate stencil name `{}` (first defined at stencils[{first}])",
                    s.name
                ),
            ));
        }
        let bodies = match (&s.expr, &s.intervals) {
            (Some(expr), None) => read_body(&base, None, &s.lets, expr, errors)
                .into_iter()
                .collect(),
            (None, Some(intervals)) => {
                if !s.lets.is_empty() {
                    errors.push(Diagnostic::new(
                        format!("{base}.let"),
                        "a stencil with `intervals:` has its `let` locals in each interval",
                    ));
                }
                let bodies: Vec<Body> = intervals
                    .iter()
                    .enumerate()
                    .filter_map(|(m, i)| {
                        let levels = Levels {
                            start: i.k.0,
                            end: i.k.1,
                        };
                        let path = format!("{base}.intervals[{m}]");
                        read_body(&path, Some(levels), &i.lets, &i.expr, errors)
                    })
                    .collect();
                if bodies.len() == intervals.len() && !planes.contains(&s.name.as_str()) {
                    check_intervals(&base, &bodies, nz, errors);
                }
                bodies
            }
            (Some(_), Some(_)) => {
                errors.push(Diagnostic::new(
                    format!("{base}.intervals"),
                    "a stencil has either `expr:` (every level) or `intervals:`, not both",
                ));
                Vec::new()
            }
            (None, None) => {
                errors.push(Diagnostic::new(
                    format!("{base}.expr"),
                    "missing: a stencil needs `expr:` (every level) or `intervals:`",
                ));
                Vec::new()
            }
        };
        if !bodies.is_empty() {
            stencils.push(Stencil {
                name: s.name.clone(),
                computation: s.computation,
                bodies,
            });
        }
    }
    (stencils, seen)
}

/// One body: its lets and expression parsed (errors pushed, and None, when one does not parse).
fn read_body(
    path: &str,
    levels: Option<Levels>,
    lets: &IndexMap<String, String>,
    expr: &str,
    errors: &mut Vec<Diagnostic>,
) -> Option<Body> {
    let before = errors.len();
    let (lets, let_sources) = read_lets(path, lets, errors);
    match parse_expr_spanned(expr) {
        Ok((parsed, spans)) if errors.len() == before => Some(Body {
            levels,
            lets,
            expr: parsed,
            sources: StencilSources {
                expr: expr.to_string(),
                expr_accesses: spans,
                lets: let_sources,
            },
            path: path.to_string(),
        }),
        Ok(_) => None,
        Err(e) => {
            errors.push(expr_diagnostic(format!("{path}.expr"), expr, &e));
            None
        }
    }
}

/// Why `name` cannot name a `what` (a stencil, an input, a scalar): not an identifier, or a
/// reserved word; None when it can.
pub(crate) fn name_problem(name: &str, what: &str) -> Option<String> {
    if !is_identifier(name) {
        Some(format!(
            "`{name}` is not an identifier ([A-Za-z_][A-Za-z0-9_]*)"
        ))
    } else {
        reserved_reason(name).map(|why| format!("`{name}` {why} and cannot name {what}"))
    }
}

/// A stencil's name is an identifier and not a reserved word.
fn check_stencil_name(base: &str, name: &str, errors: &mut Vec<Diagnostic>) {
    if let Some(problem) = name_problem(name, "a stencil") {
        errors.push(Diagnostic::new(format!("{base}.name"), problem));
    }
}

/// The `let` locals of the stencil at `base`, parsed, with their source text and access spans;
/// their names checked (identifiers, not reserved, not repeated).
fn read_lets(
    base: &str,
    sources: &IndexMap<String, String>,
    errors: &mut Vec<Diagnostic>,
) -> (Vec<Let>, Vec<(String, Vec<AccessSpan>)>) {
    let mut lets = Vec::new();
    let mut let_sources = Vec::new();
    let mut let_names = HashSet::new();
    for (name, src) in sources {
        let path = format!("{base}.let.{name}");
        if !is_identifier(name) {
            errors.push(Diagnostic::new(
                path.clone(),
                format!("`{name}` is not an identifier"),
            ));
        } else if let Some(why) = reserved_reason(name) {
            errors.push(Diagnostic::new(
                path.clone(),
                format!("`{name}` {why} and cannot name a local"),
            ));
        }
        if !let_names.insert(name.clone()) {
            errors.push(Diagnostic::new(
                path.clone(),
                format!("duplicate local `{name}`"),
            ));
        }
        match parse_expr_spanned(src) {
            Ok((expr, spans)) => {
                lets.push(Let {
                    name: name.clone(),
                    expr,
                });
                let_sources.push((src.clone(), spans));
            }
            Err(e) => errors.push(expr_diagnostic(path, src, &e)),
        }
    }
    (lets, let_sources)
}

/// Locals are defined before use, and never take the name of an array.
fn check_stencil_locals(stencils: &[Stencil], errors: &mut Vec<Diagnostic>) {
    let mut arrays: HashSet<String> = HashSet::new();
    for s in stencils {
        arrays.insert(s.name.clone());
        for e in s.exprs() {
            e.visit_accesses(&mut |a, _| {
                arrays.insert(a.to_string());
            })
        }
    }
    for s in stencils.iter().flat_map(|s| &s.bodies) {
        let mut defined: Vec<&str> = Vec::new();
        for (l, (src, _)) in s.lets.iter().zip(&s.sources.lets) {
            let path = format!("{}.let.{}", s.path, l.name);
            if arrays.contains(&l.name) {
                errors.push(Diagnostic::new(
                    path.clone(),
                    format!(
                        "local `{}` has the name of an array of the program; a `let` name may not shadow an array",
                        l.name
                    ),
                ));
            }
            check_locals(&l.expr, &defined, &path, src, errors);
            defined.push(&l.name);
        }
        check_locals(
            &s.expr,
            &defined,
            &format!("{}.expr", s.path),
            &s.sources.expr,
            errors,
        );
    }
}

/// The domain and halo of a program file, each number within [`limits`] (errors pushed, and a
/// placeholder kept, for those that are not), and the stencil count's bounds.
fn domain_and_halo(file: &ProgramFile, errors: &mut Vec<Diagnostic>) -> ([usize; 3], [usize; 3]) {
    let mut domain = [1usize; 3];
    let mut halo = [0usize; 3];
    for d in 0..3 {
        match usize::try_from(file.domain[d]) {
            Ok(n) if (1..=limits::MAX_EXTENT).contains(&n) => domain[d] = n,
            _ => errors.push(Diagnostic::new(
                format!("domain[{d}]"),
                format!(
                    "the domain extent along {} must be between 1 and {}, found {}",
                    DIMS[d],
                    limits::MAX_EXTENT,
                    file.domain[d]
                ),
            )),
        }
        match usize::try_from(file.halo[d]) {
            Ok(n) if n <= limits::MAX_HALO => halo[d] = n,
            _ => errors.push(Diagnostic::new(
                format!("halo[{d}]"),
                format!(
                    "the halo along {} must be between 0 and {}, found {}",
                    DIMS[d],
                    limits::MAX_HALO,
                    file.halo[d]
                ),
            )),
        }
    }
    let padded: u128 = (0..3)
        .map(|d| domain[d] as u128 + 2 * halo[d] as u128)
        .product();
    if padded > limits::MAX_CELLS {
        errors.push(Diagnostic::new(
            "domain",
            format!(
                "the domain with its halos has {padded} cells, more than the 2^40 absinthe handles"
            ),
        ));
    }
    if file.stencils.is_empty() {
        errors.push(Diagnostic::new(
            "stencils",
            "a program needs at least one stencil",
        ));
    }
    if file.stencils.len() > limits::MAX_STENCILS {
        errors.push(Diagnostic::new(
            "stencils",
            format!(
                "the program has {} stencils; absinthe handles at most {}",
                file.stencils.len(),
                limits::MAX_STENCILS
            ),
        ));
    }
    (domain, halo)
}

fn check_locals(
    expr: &Expr,
    defined: &[&str],
    path: &str,
    src: &str,
    errors: &mut Vec<Diagnostic>,
) {
    let mut undefined = Vec::new();
    expr.visit_locals(&mut |name| {
        if !defined.contains(&name) && !undefined.iter().any(|u: &String| u == name) {
            undefined.push(name.to_string());
        }
    });
    for name in undefined {
        let mut d = Diagnostic::new(
            path,
            format!(
                "`{name}` is not defined: a bare name must be a `let` local defined before this expression or a scalar listed under `scalars:` (arrays are accessed as `{name}(i, j, k)`)"
            ),
        );
        if let Some(col) = find_word(src, &name) {
            d = d.with_snippet(src, col, name.chars().count());
        }
        errors.push(d);
    }
}

/// 1-based character column of the first occurrence of `word` in `src` as a bare name: a whole
/// word not called (`in` in `in(i,j,k) + in` is the second).
fn find_word(src: &str, word: &str) -> Option<usize> {
    let bytes = src.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut from = 0;
    while let Some(pos) = src.get(from..)?.find(word) {
        let start = from + pos;
        let end = start + word.len();
        let before_ok = start == 0 || !is_ident(bytes[start - 1]);
        let after_ok = end >= bytes.len() || !is_ident(bytes[end]);
        let called = src[end..].trim_start().starts_with('(');
        if before_ok && after_ok && !called {
            return Some(src[..start].chars().count() + 1);
        }
        from = end;
    }
    None
}

/// The head of a program file written by code (training programs, generated programs): `name`,
/// `domain`, `halo` (as written, e.g. `[1, 1, 1]` or a placeholder), `outputs`, and the
/// `stencils:` key, each on its own line.
pub fn program_header(name: &str, domain: &[usize], halo: &str, outputs: &[String]) -> String {
    format!(
        "name: {name}\ndomain: [{}, {}, {}]\nhalo: {halo}\noutputs: [{}]\nstencils:\n",
        domain[0],
        domain[1],
        domain[2],
        outputs.join(", ")
    )
}
