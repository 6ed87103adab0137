//! The ABSINTHE optimisation problem for an SMT solver, in exact arithmetic (docs/MODEL.md,
//! "Exact arithmetic and verification"), written as SMT-LIB 2 text so that any SMT solver can
//! read it (`solve --emit smt2`) and the `solvers` crate's Z3 backend can parse it.
//!
//! Two encodings of the same problem:
//! - [`Encoding::Linear`]: the linearized MILP of [`crate::milp::milp`] row for row (integer and
//!   real variables, linear rows: QF_LIRA). Its coefficients are f64 in the [`Milp`]; each is
//!   taken as the exact rational of its shortest round-trip decimal ([`crate::exact::decimal`]),
//!   i.e. the number the LP/MPS writers print. The MILP objective is in microseconds.
//! - [`Encoding::Nonlinear`]: the model itself, without linearization: tile counts are integer
//!   variables, the peel and body counts are their products with the (grouping-dependent,
//!   constant) weights, maxima are `ite`, and the even-tiles and parallel constraints multiply
//!   integer variables (QF_NIRA). The objective is a sum over every contiguous range of stencils
//!   of "this range is a group" times its cost, so the encoding grows as N³: for small programs.
//!   The parameters are the exact decimals of the machine file, so this encoding is exact.
//!
//! Both name the group cuts `cut_S` (0/1 integers, `cut_S = g_{S+1} - g_S`) and the tile counts
//! `n_DS` (D in i, j, k) the same way, so [`Smt::decode`] reads a configuration out of either,
//! and both declare a real `objective` equal to the objective in microseconds.
//!
//! [`soundness_queries`] states, for every binary-digit product and exact maximum of the MILP,
//! "the rows hold and the output differs from the product (maximum)": each must be UNSAT.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use num_traits::{One, Signed, Zero};

use crate::analysis::Analysis;
use crate::cost::{
    cache_capacity, group_cost, limits_arrays, stream_shape, Configuration, STREAM_TILES_X,
};
use crate::exact::{decimal, ExactParams, Rational};
use crate::formula;
use crate::linearize::Linearization;
use crate::lp::{LinExpr, Milp, Sense, VarId};
use crate::machine::ModelMachine;
use crate::milp::{milp, AbsintheMilp, MilpOptions, OBJECTIVE_SCALE};
use crate::program::DIMS;

/// Which of the two encodings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// The linearized MILP in exact rationals (QF_LIRA).
    Linear,
    /// The model with genuine products (QF_NIRA), for small programs.
    Nonlinear,
}

/// The sort of a declared constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sort {
    Int,
    Real,
}

/// The name of the real constant that equals the objective (microseconds).
pub const OBJECTIVE: &str = "objective";

/// An SMT problem: declarations, assertions, and optionally an objective to minimise.
#[derive(Clone, Debug, PartialEq)]
pub struct Smt {
    pub logic: &'static str,
    pub declarations: Vec<(String, Sort)>,
    /// SMT-LIB terms of sort Bool.
    pub assertions: Vec<String>,
    /// Whether [`OBJECTIVE`] is declared and should be minimised.
    pub minimise: bool,
    /// Cut constant per stencil but the last (empty when not an ABSINTHE problem).
    pub cuts: Vec<String>,
    /// Tile-count constants per stencil.
    pub tile_counts: Vec<[String; 3]>,
    /// Stream flag constants per stencil (0 or 1, equal within a group).
    pub streams: Vec<String>,
}

impl Smt {
    fn new(logic: &'static str) -> Self {
        Smt {
            logic,
            declarations: Vec::new(),
            assertions: Vec::new(),
            minimise: false,
            cuts: Vec::new(),
            tile_counts: Vec::new(),
            streams: Vec::new(),
        }
    }

    fn declare(&mut self, name: impl Into<String>, sort: Sort) -> String {
        let name = name.into();
        self.declarations.push((name.clone(), sort));
        name
    }

    /// Declarations and assertions, without commands (what a solver's `from_string` reads).
    pub fn script(&self) -> String {
        let mut out = String::new();
        for (name, sort) in &self.declarations {
            let sort = match sort {
                Sort::Int => "Int",
                Sort::Real => "Real",
            };
            let _ = writeln!(out, "(declare-fun {name} () {sort})");
        }
        for a in &self.assertions {
            let _ = writeln!(out, "(assert {a})");
        }
        out
    }

    /// A complete SMT-LIB 2 file: the script, `minimize` when there is an objective (a Z3 /
    /// OptiMathSAT extension), `check-sat` and `get-model`.
    pub fn to_smt2(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "; absinthe: {} constants, {} assertions",
            self.declarations.len(),
            self.assertions.len()
        );
        if self.minimise {
            let _ = writeln!(
                out,
                "; `{OBJECTIVE}` is the model's objective in microseconds"
            );
        }
        let _ = writeln!(out, "(set-logic {})", self.logic);
        out.push_str(&self.script());
        if self.minimise {
            let _ = writeln!(out, "(minimize {OBJECTIVE})");
        }
        out.push_str("(check-sat)\n(get-model)\n");
        out
    }

    /// Adds `objective < bound` (microseconds).
    pub fn objective_below(&mut self, bound: &Rational) {
        self.assertions
            .push(format!("(< {OBJECTIVE} {})", real(bound)));
        self.minimise = false;
    }

    /// The configuration of a model, given the values of its constants by name.
    pub fn decode(&self, value: impl Fn(&str) -> Option<Rational>) -> Option<Configuration> {
        let int = |name: &str| -> Option<usize> {
            let v = value(name)?;
            if !v.is_integer() || v.is_negative() {
                return None;
            }
            v.to_integer().to_string().parse().ok()
        };
        let mut groups = vec![0usize; self.tile_counts.len()];
        for i in 1..groups.len() {
            groups[i] = groups[i - 1] + int(&self.cuts[i - 1])?.min(1);
        }
        let mut tiles = Vec::new();
        let mut stream = Vec::new();
        for (i, &g) in groups.iter().enumerate() {
            if i == 0 || g != groups[i - 1] {
                let mut t = [0; 3];
                for (slot, name) in t.iter_mut().zip(&self.tile_counts[i]) {
                    *slot = int(name)?;
                }
                tiles.push(t);
                if self.streams.get(i).is_some_and(|s| int(s) == Some(1)) {
                    stream.push(g);
                }
            }
        }
        Some(Configuration {
            groups,
            tiles,
            stream,
        })
    }
}

/// An exact rational as an SMT-LIB real term.
pub fn real(r: &Rational) -> String {
    let (n, d) = (r.numer().abs(), r.denom().clone());
    let body = if d.is_one() {
        format!("{n}.0")
    } else {
        format!("(/ {n}.0 {d}.0)")
    };
    if r.is_negative() {
        format!("(- {body})")
    } else {
        body
    }
}

/// A rational from an SMT-LIB numeral term as Z3 prints it: `3`, `3.5`, `(/ 3.0 4.0)`,
/// `(- 2)`, `(- (/ 1.0 3.0))`.
pub fn parse_value(text: &str) -> Option<Rational> {
    let t = text.trim();
    if let Some(inner) = t.strip_prefix("(-").and_then(|s| s.strip_suffix(')')) {
        return parse_value(inner).map(|v| -v);
    }
    if let Some(inner) = t.strip_prefix("(/").and_then(|s| s.strip_suffix(')')) {
        let mut parts = inner.split_whitespace();
        let n = parse_value(parts.next()?)?;
        let d = parse_value(parts.next()?)?;
        if d.is_zero() {
            return None;
        }
        return Some(n / d);
    }
    crate::exact::parse_decimal(t)
}

fn var_term(milp: &Milp, v: VarId) -> String {
    let var = &milp.vars[v.0];
    if var.integer {
        format!("(to_real {})", var.name)
    } else {
        var.name.clone()
    }
}

/// `Σ c x + constant` as a real term.
fn linear_term(milp: &Milp, terms: &[(VarId, f64)], constant: &Rational) -> String {
    let mut parts: Vec<String> = terms
        .iter()
        .filter(|t| t.1 != 0.0)
        .map(|&(v, c)| {
            let c = decimal(c);
            if c.is_one() {
                var_term(milp, v)
            } else {
                format!("(* {} {})", real(&c), var_term(milp, v))
            }
        })
        .collect();
    if !constant.is_zero() || parts.is_empty() {
        parts.push(real(constant));
    }
    sum(parts)
}

fn sum(parts: Vec<String>) -> String {
    match parts.len() {
        0 => "0.0".to_string(),
        1 => parts.into_iter().next().unwrap_or_default(),
        _ => format!("(+ {})", parts.join(" ")),
    }
}

fn expr_term(milp: &Milp, e: &LinExpr) -> String {
    let e = e.normalized();
    linear_term(milp, &e.terms, &decimal(e.constant))
}

fn declare_var(smt: &mut Smt, milp: &Milp, v: VarId) {
    let var = &milp.vars[v.0];
    let sort = if var.integer { Sort::Int } else { Sort::Real };
    smt.declare(var.name.clone(), sort);
    let x = var_term(milp, v);
    if var.lower.is_finite() {
        smt.assertions
            .push(format!("(<= {} {x})", real(&decimal(var.lower))));
    }
    if var.upper.is_finite() {
        smt.assertions
            .push(format!("(<= {x} {})", real(&decimal(var.upper))));
    }
}

fn row(milp: &Milp, r: usize) -> String {
    row_with(milp, r, &HashMap::new())
}

/// A row with some variables replaced by terms.
fn row_with(milp: &Milp, r: usize, subst: &HashMap<usize, String>) -> String {
    let c = &milp.constraints[r];
    let parts: Vec<String> = c
        .terms
        .iter()
        .filter(|t| t.1 != 0.0)
        .map(|&(v, coef)| {
            let x = subst
                .get(&v.0)
                .cloned()
                .unwrap_or_else(|| var_term(milp, v));
            format!("(* {} {x})", real(&decimal(coef)))
        })
        .collect();
    let lhs = sum(parts);
    let op = match c.sense {
        Sense::Le => "<=",
        Sense::Ge => ">=",
        Sense::Eq => "=",
    };
    format!("({op} {lhs} {})", real(&decimal(c.rhs)))
}

/// Encoding (1): a MILP row for row, with its objective as [`OBJECTIVE`].
pub fn linear(milp: &Milp) -> Smt {
    let mut smt = Smt::new(if milp.vars.iter().any(|v| v.integer) {
        "QF_LIRA"
    } else {
        "QF_LRA"
    });
    for v in 0..milp.vars.len() {
        declare_var(&mut smt, milp, VarId(v));
    }
    for r in 0..milp.constraints.len() {
        smt.assertions.push(row(milp, r));
    }
    smt.declare(OBJECTIVE, Sort::Real);
    smt.assertions.push(format!(
        "(= {OBJECTIVE} {})",
        expr_term(milp, &milp.objective)
    ));
    smt.minimise = true;
    smt
}

/// The linear encoding of an ABSINTHE MILP, with its cut and tile-count names.
pub fn linear_absinthe(encoded: &AbsintheMilp) -> Smt {
    let m = &encoded.milp;
    let mut smt = linear(m);
    smt.cuts = encoded
        .cuts
        .iter()
        .map(|v| m.vars[v.0].name.clone())
        .collect();
    smt.tile_counts = encoded
        .tile_counts
        .iter()
        .map(|t| t.map(|v| m.vars[v.0].name.clone()))
        .collect();
    smt.streams = encoded
        .streams
        .iter()
        .map(|v| m.vars[v.0].name.clone())
        .collect();
    smt
}

/// The problem of `analysis` on `machine` in the chosen encoding.
pub fn smt(
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &MilpOptions,
    encoding: Encoding,
) -> Smt {
    match encoding {
        Encoding::Linear => linear_absinthe(&milp(analysis, machine, options)),
        Encoding::Nonlinear => nonlinear(analysis, machine, options),
    }
}

/// Encoding (2): the model with genuine products of integer tile counts.
pub fn nonlinear(analysis: &Analysis, machine: &ModelMachine, options: &MilpOptions) -> Smt {
    crate::cost::debug_check_weights(analysis, &machine.params);
    let n_st = analysis.stencils.len();
    let dom = analysis.domain;
    let range = options.tile_range(dom);
    let params = ExactParams::new(&machine.params);
    let scale = decimal(OBJECTIVE_SCALE);
    let mut smt = Smt::new("QF_NIRA");

    for i in 0..n_st.saturating_sub(1) {
        let c = smt.declare(format!("cut_{i}"), Sort::Int);
        let fixed = options
            .fixed_groups
            .as_ref()
            .map(|g| (g[i + 1] != g[i]) as u8);
        match fixed {
            Some(v) => smt.assertions.push(format!("(= {c} {v})")),
            None => smt.assertions.push(format!("(and (<= 0 {c}) (<= {c} 1))")),
        }
        smt.cuts.push(c);
    }
    for i in 0..n_st {
        let names = [0, 1, 2].map(|d| {
            let n = smt.declare(format!("n_{}{i}", DIMS[d]), Sort::Int);
            smt.assertions.push(format!(
                "(and (<= {} {n}) (<= {n} {}))",
                range[d].0, range[d].1
            ));
            n
        });
        smt.tile_counts.push(names);
        let st = smt.declare(format!("stream_{i}"), Sort::Int);
        let hi = options.stream_shape(analysis, machine).map_or(0, |_| 1);
        smt.assertions
            .push(format!("(and (<= 0 {st}) (<= {st} {hi}))"));
        smt.streams.push(st);
    }
    for i in 0..n_st.saturating_sub(1) {
        for d in 0..3 {
            smt.assertions.push(format!(
                "(=> (= cut_{i} 0) (= {} {}))",
                smt.tile_counts[i + 1][d],
                smt.tile_counts[i][d]
            ));
        }
        smt.assertions.push(format!(
            "(=> (= cut_{i} 0) (= {} {}))",
            smt.streams[i + 1],
            smt.streams[i]
        ));
    }
    let stream = stream_shape(analysis);
    let stream_cells: u128 = stream.window as u128
        * dom[..stream.dim]
            .iter()
            .map(|&d| d as u128)
            .product::<u128>();

    let cells: u128 = dom.iter().map(|&d| d as u128).product();
    let slack_size = Rational::one() - decimal(machine.slack.size);
    let slack_cores = Rational::one() - decimal(machine.slack.cores);
    let threads = machine.threads;
    let capacity = cache_capacity(machine) as u128;
    let mut objective = Vec::new();
    for start in 0..n_st {
        for end in (start + 1)..=n_st {
            let tag = format!("{start}_{end}");
            // "stencils start..end form a group"
            let mut cond = Vec::new();
            if start > 0 {
                cond.push(format!("(= cut_{} 1)", start - 1));
            }
            for i in start..end - 1 {
                cond.push(format!("(= cut_{i} 0)"));
            }
            if end < n_st {
                cond.push(format!("(= cut_{} 1)", end - 1));
            }
            let is_group = match cond.len() {
                0 => "true".to_string(),
                1 => cond.remove(0),
                _ => format!("(and {})", cond.join(" ")),
            };
            let n = smt.tile_counts[start].clone();
            let nr = n.clone().map(|x| format!("(to_real {x})"));
            // Feasibility of this group.
            let mut feasible = Vec::new();
            for d in 0..3 {
                let t = smt.declare(format!("size_{}{tag}", DIMS[d]), Sort::Int);
                feasible.push(format!("(and (<= 1 {t}) (<= {t} {}))", dom[d]));
                feasible.push(format!("(<= {} (* {} {t}))", dom[d], n[d]));
                feasible.push(format!(
                    "(<= (* {} (to_real (* {} {t}))) {}.0)",
                    real(&slack_size),
                    n[d],
                    dom[d]
                ));
            }
            let total = format!("(* {} {} {})", n[0], n[1], n[2]);
            let k = smt.declare(format!("rounds_{tag}"), Sort::Int);
            feasible.push(format!("(<= {threads} {total})"));
            feasible.push(format!("(<= 1 {k})"));
            feasible.push(format!("(<= {total} (* {threads} {k}))"));
            feasible.push(format!(
                "(<= (* {} (to_real (* {threads} {k}))) (to_real {total}))",
                real(&slack_cores)
            ));
            // The cache: the whole tile, or with streaming `window` planes of the tile's
            // cross-section along z, `window` rows of one plane along y (`cost::tile_cells`).
            let st = &smt.streams[start];
            // A streamed group spans whole rows (`cost::STREAM_TILES_X`).
            feasible.push(format!("(or (= {st} 0) (<= {} {STREAM_TILES_X}))", n[0]));
            let total_cross = if stream.dim == 2 {
                format!("(* {} {})", n[0], n[1])
            } else {
                n[0].clone()
            };
            let mut touched = BTreeSet::new();
            for i in start..end {
                touched.extend(analysis.touched(i));
                let count = touched.len() as u128;
                if limits_arrays(stream) && touched.len() > machine.group_arrays {
                    // More arrays than the machine's `group_arrays` limit, which applies in
                    // programs streamed along y (`cost::limits_arrays`).
                    feasible.push("false".to_string());
                }
                feasible.push(format!(
                    "(or (and (= {st} 0) (<= {} (* {capacity} {total}))) (and (= {st} 1) (<= {} (* {capacity} {total_cross}))))",
                    count * cells,
                    count * stream_cells
                ));
            }
            smt.assertions
                .push(format!("(=> {is_group} (and {}))", feasible.join(" ")));

            // Cost of this group, in microseconds: weights depend only on the grouping; the
            // formulas are `formula`'s, with genuine products of the tile counts.
            let group = group_cost(analysis, machine, 0, start..end, [1, 1, 1], false);
            // Crowded (`cost::crowded`): `s D^z > L n^z` with whole rows, else `s D^y D^z > L
            // n^y n^z`, in integers.
            let limit = machine.params.crowded.row_streams;
            let crowded = (params.crowded.is_some() && limit > 0).then(|| {
                let s: u128 = group.stencils.iter().map(|c| c.stream_weights[0] as u128).sum();
                let (dy, dz) = (dom[1] as u128, dom[2] as u128);
                format!(
                    "(or (and (<= {nx} 1) (> {} (* {limit} {nz}))) (and (> {nx} 1) (> {} (* {limit} {ny} {nz}))))",
                    s * dz,
                    s * dy * dz,
                    nx = n[0],
                    ny = n[1],
                    nz = n[2]
                )
            });
            let mut cost = Vec::new();
            for (s, st) in group.stencils.iter().enumerate() {
                let mut terms = SmtTerms {
                    smt: &mut smt,
                    tiles: &nr,
                    params: &params,
                    scale: &scale,
                    crowded: crowded.as_deref(),
                };
                let weights = [
                    st.fast_weights,
                    st.base_weights,
                    st.stream_weights,
                    st.compute_weights,
                ]
                .map(|w| w.map(|x| format!("{x}.0")));
                let counts = formula::stencil_counts(&mut terms, dom.map(|d| d as u128), &weights);
                let t =
                    formula::stencil_terms(&mut terms, &counts, &format!("{}_{tag}", start + s));
                cost.push(t.peel);
                cost.push(t.body);
            }
            let mut terms = SmtTerms {
                smt: &mut smt,
                tiles: &nr,
                params: &params,
                scale: &scale,
                crowded: None,
            };
            cost.push(formula::overhead(
                &mut terms,
                &format!("(to_real {total})"),
                (end - start) as u128,
            ));
            objective.push(format!("(ite {is_group} {} 0.0)", sum(cost)));
        }
    }
    smt.declare(OBJECTIVE, Sort::Real);
    smt.assertions
        .push(format!("(= {OBJECTIVE} {})", sum(objective)));
    smt.minimise = true;
    smt
}

/// `formula`'s algebra over SMT-LIB real terms: tile counts are the (real-cast) integer
/// constants `tiles`, seconds are in objective units (parameters times `scale`), and each max
/// names its two sides with declared constants.
struct SmtTerms<'a> {
    smt: &'a mut Smt,
    tiles: &'a [String; 3],
    params: &'a ExactParams,
    scale: &'a Rational,
    /// The group's crowded condition (`cost::crowded`) when the machine charges crowding.
    crowded: Option<&'a str>,
}

impl formula::Algebra for SmtTerms<'_> {
    type Count = String;
    type Time = String;
    fn count_sum(&mut self, terms: &[(u128, &String)]) -> String {
        sum(terms
            .iter()
            .filter(|(k, _)| *k != 0)
            .map(|(k, v)| {
                if *k == 1 {
                    (*v).clone()
                } else {
                    format!("(* {k}.0 {v})")
                }
            })
            .collect())
    }
    fn times_tiles(&mut self, d: usize, v: &String) -> String {
        format!("(* {} {v})", self.tiles[d])
    }
    fn param_is_zero(&self, _: formula::Part, _: formula::Term) -> bool {
        false
    }
    fn seconds(&mut self, part: formula::Part, term: formula::Term, v: &String) -> String {
        format!(
            "(* {} {v})",
            real(&(self.params.get(part, term) * self.scale))
        )
    }
    fn crowding(&mut self, v: &String) -> Option<String> {
        let (cond, q) = (self.crowded?, self.params.crowded.as_ref()?);
        Some(format!(
            "(ite {cond} (* {} {v}) 0.0)",
            real(&(q * self.scale))
        ))
    }
    fn time_zero(&mut self) -> String {
        "0.0".to_string()
    }
    fn time_add(&mut self, a: &String, b: &String) -> String {
        format!("(+ {a} {b})")
    }
    fn time_max(&mut self, a: &String, b: &String, term: formula::Term, name: &str) -> String {
        let name = format!("{}_{name}", term.name());
        let f = self.smt.declare(format!("{name}_fast"), Sort::Real);
        let s = self.smt.declare(format!("{name}_slow"), Sort::Real);
        self.smt.assertions.push(format!("(= {f} {a})"));
        self.smt.assertions.push(format!("(= {s} {b})"));
        format!("(ite (>= {f} {s}) {f} {s})")
    }
}

/// The binary digits of one tile count and its range `lo <= Σ 2^k bits_k <= hi`.
#[derive(Clone, Debug, PartialEq)]
pub struct DigitRange {
    pub bits: Vec<VarId>,
    pub lo: f64,
    pub hi: f64,
}

/// One soundness claim: `smt` is satisfiable exactly when the linearization is wrong somewhere
/// within the bounds.
#[derive(Clone, Debug, PartialEq)]
pub struct SoundnessQuery {
    /// The linearization's name (its variables' prefix in the MILP).
    pub name: String,
    pub kind: QueryKind,
    pub smt: Smt,
}

/// What a soundness query is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryKind {
    /// A binary-digit product.
    Product,
    /// An exact maximum.
    Max,
}

impl std::fmt::Display for QueryKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            QueryKind::Product => "product",
            QueryKind::Max => "max",
        })
    }
}

/// Soundness claims for every recorded linearization of an ABSINTHE MILP.
pub fn soundness_queries(encoded: &AbsintheMilp) -> Vec<SoundnessQuery> {
    let digits: Vec<DigitRange> = encoded
        .tile_bits
        .iter()
        .zip(&encoded.tile_counts)
        .flat_map(|(bits, counts)| {
            (0..3).map(move |d| {
                let n = &encoded.milp.vars[counts[d].0];
                DigitRange {
                    bits: bits[d].clone(),
                    lo: n.lower,
                    hi: n.upper,
                }
            })
        })
        .collect();
    soundness_queries_of(&encoded.milp, &encoded.linearizations, &digits)
}

/// Soundness claims for `records` of `milp`. Each asserts: the bounds of every variable
/// involved, the range of every tile count whose digits appear, the rows of the linearizations
/// that produce its inputs (transitively), and then either "its own rows hold and the output
/// differs from the nonlinear value" (unsound) or "the intended values of its variables
/// (`z_k = b_k y`; `u = max(a, b)` with its selector) violate one of its rows" (incomplete: a
/// too-small bound cuts inputs off). UNSAT proves it exact over the whole input range. For a product the value is `Σ_k 2^k (b_k ? y : 0)`, which
/// is `n * y` for binary digits (written so, the claim stays linear and decidable); for a
/// maximum it is `ite(a >= b, a, b)`.
pub fn soundness_queries_of(
    milp: &Milp,
    records: &[Linearization],
    digits: &[DigitRange],
) -> Vec<SoundnessQuery> {
    let mut producer: HashMap<usize, usize> = HashMap::new();
    for (k, r) in records.iter().enumerate() {
        for v in r.vars() {
            producer.insert(v, k);
        }
    }
    let mut digit_of: HashMap<usize, usize> = HashMap::new();
    for (k, dr) in digits.iter().enumerate() {
        for b in &dr.bits {
            digit_of.insert(b.0, k);
        }
    }
    records
        .iter()
        .enumerate()
        .map(|(k, record)| {
            // Rows of this record and of the records producing the variables they use.
            let mut included = BTreeSet::new();
            let mut stack = vec![k];
            let mut rows = BTreeSet::new();
            while let Some(r) = stack.pop() {
                if !included.insert(r) {
                    continue;
                }
                for row in records[r].rows() {
                    rows.insert(row);
                    for &(v, _) in &milp.constraints[row].terms {
                        if let Some(&p) = producer.get(&v.0) {
                            stack.push(p);
                        }
                    }
                }
            }
            let mut vars = BTreeSet::new();
            for &r in &rows {
                vars.extend(milp.constraints[r].terms.iter().map(|t| t.0 .0));
            }
            let claim = match record {
                Linearization::Product {
                    bits, y, output, ..
                } => {
                    vars.extend(bits.iter().map(|b| b.0));
                    vars.extend(y.terms.iter().map(|t| t.0 .0));
                    vars.extend(output.terms.iter().map(|t| t.0 .0));
                    let yt = expr_term(milp, y);
                    let value = sum(bits
                        .iter()
                        .enumerate()
                        .map(|(i, &b)| {
                            format!(
                                "(* {}.0 (ite (= {} 1) {yt} 0.0))",
                                1u64 << i,
                                milp.vars[b.0].name
                            )
                        })
                        .collect());
                    format!("(not (= {} {value}))", expr_term(milp, output))
                }
                Linearization::Max { a, b, output, .. } => {
                    for e in [a, b, output] {
                        vars.extend(e.terms.iter().map(|t| t.0 .0));
                    }
                    let (at, bt) = (expr_term(milp, a), expr_term(milp, b));
                    format!(
                        "(not (= {} (ite (>= {at} {bt}) {at} {bt})))",
                        expr_term(milp, output)
                    )
                }
            };
            let mut smt = Smt::new("QF_LIRA");
            let mut ranges = BTreeSet::new();
            for &v in &vars {
                declare_var(&mut smt, milp, VarId(v));
                if let Some(&d) = digit_of.get(&v) {
                    ranges.insert(d);
                }
            }
            for d in ranges {
                let dr = &digits[d];
                for &b in &dr.bits {
                    if !vars.contains(&b.0) {
                        declare_var(&mut smt, milp, b);
                    }
                }
                let n = sum(dr
                    .bits
                    .iter()
                    .enumerate()
                    .map(|(i, &b)| format!("(* {}.0 {})", 1u64 << i, var_term(milp, b)))
                    .collect());
                smt.assertions.push(format!(
                    "(and (<= {} {n}) (<= {n} {}))",
                    real(&decimal(dr.lo)),
                    real(&decimal(dr.hi))
                ));
            }
            let own_rows = record.rows();
            for &r in rows.iter().filter(|r| !own_rows.contains(r)) {
                smt.assertions.push(row(milp, r));
            }
            let own: Vec<String> = own_rows.clone().map(|r| row(milp, r)).collect();
            // Completeness: the intended values of the new variables satisfy the record's own
            // rows for every input within the bounds (a too-small bound cuts inputs off).
            let new_vars = record.vars();
            let mut subst = HashMap::new();
            match record {
                Linearization::Product { bits, y, .. } => {
                    let yt = expr_term(milp, y);
                    for (k, v) in new_vars.clone().enumerate() {
                        let b = &milp.vars[bits[k].0].name;
                        subst.insert(v, format!("(ite (= {b} 1) {yt} 0.0)"));
                    }
                }
                Linearization::Max { a, b, .. } => {
                    let (at, bt) = (expr_term(milp, a), expr_term(milp, b));
                    let mut it = new_vars.clone();
                    if let Some(u) = it.next() {
                        subst.insert(u, format!("(ite (>= {at} {bt}) {at} {bt})"));
                    }
                    if let Some(sel) = it.next() {
                        subst.insert(sel, format!("(ite (>= {at} {bt}) 0.0 1.0)"));
                    }
                }
            }
            let intended: Vec<String> = record.rows().map(|r| row_with(milp, r, &subst)).collect();
            // Unsound (rows hold, value differs) or incomplete (intended values violate a row).
            smt.assertions.push(format!(
                "(or (and {} {claim}) (not (and true {})))",
                own.join(" "),
                intended.join(" ")
            ));
            SoundnessQuery {
                name: record.name().to_string(),
                kind: match record {
                    Linearization::Product { .. } => QueryKind::Product,
                    Linearization::Max { .. } => QueryKind::Max,
                },
                smt,
            }
        })
        .collect()
}
