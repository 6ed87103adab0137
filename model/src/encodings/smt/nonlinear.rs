//! Encoding (2), [`Encoding::Nonlinear`](super::Encoding::Nonlinear): the model itself, without
//! linearization (QF_NIRA). Tile counts are integer constants, each contiguous range of
//! stencils gets its feasibility rows and its cost under the condition "this range is a group",
//! and the objective sums those costs, so the encoding grows as N³.

use std::collections::BTreeSet;
use std::ops::Range;

use num_traits::One;

use crate::cost_model::evaluate::{
    cache_capacity, group_cost, limits_arrays, stream_shape, StreamShape, STREAM_TILES_X,
};
use crate::cost_model::exact::{decimal, ExactParams, Rational};
use crate::cost_model::formula;
use crate::cost_model::options::MilpOptions;
use crate::encodings::milp::OBJECTIVE_SCALE;
use crate::formats::machine::ModelMachine;
use crate::language::analysis::Analysis;
use crate::language::program::DIMS;

use super::terms::{real, sum};
use super::{Smt, Sort, OBJECTIVE};

/// Encoding (2): the model with genuine products of integer tile counts.
pub fn nonlinear(analysis: &Analysis, machine: &ModelMachine, options: &MilpOptions) -> Smt {
    crate::cost_model::evaluate::debug_check_weights(analysis, &machine.params);
    let n_st = analysis.stencils.len();
    let mut smt = Smt::new("QF_NIRA");
    declare_variables(&mut smt, analysis, machine, options);
    let groups = Groups::new(analysis, machine);
    let mut objective = Vec::new();
    for start in 0..n_st {
        for end in (start + 1)..=n_st {
            objective.push(groups.range(&mut smt, start..end));
        }
    }
    smt.declare(OBJECTIVE, Sort::Real);
    smt.assertions
        .push(format!("(= {OBJECTIVE} {})", sum(objective)));
    smt.minimise = true;
    smt
}

/// The cuts `cut_S` (0 or 1, or fixed by the options), the tile counts `n_DS` within the
/// options' range and the stream flags `stream_S` (0 when streaming is off), tile counts and
/// stream flags equal within a group.
fn declare_variables(
    smt: &mut Smt,
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &MilpOptions,
) {
    let n_st = analysis.stencils.len();
    let range = options.space.tile_range_of(analysis);
    for i in 0..n_st.saturating_sub(1) {
        let c = smt.declare(format!("cut_{i}"), Sort::Int);
        let fixed = options
            .space
            .fixed_groups
            .as_ref()
            .map(|g| (g[i + 1] != g[i]) as u8);
        match fixed.or(analysis.forced_cut(i).then_some(1)) {
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
        let hi = options
            .space
            .stream_shape(analysis, machine)
            .map_or(0, |_| 1);
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
}

/// The program on the machine, with the exact constants every range's rows use.
struct Groups<'a> {
    analysis: &'a Analysis,
    machine: &'a ModelMachine,
    params: ExactParams,
    /// Objective units per second, exactly.
    scale: Rational,
    stream: StreamShape,
    /// The cells of the whole domain, and of `window` planes (rows) of it along the stream
    /// dimension.
    cells: u128,
    stream_cells: u128,
    /// `1 - σ_D` and `1 - σ_T`.
    slack_size: Rational,
    slack_cores: Rational,
    capacity: u128,
}

impl<'a> Groups<'a> {
    fn new(analysis: &'a Analysis, machine: &'a ModelMachine) -> Self {
        let dom = analysis.domain;
        let stream = stream_shape(analysis);
        let stream_cells: u128 = stream.window as u128
            * dom[..stream.dim]
                .iter()
                .map(|&d| d as u128)
                .product::<u128>();
        Groups {
            analysis,
            machine,
            params: ExactParams::new(&machine.params),
            scale: decimal(OBJECTIVE_SCALE),
            stream,
            cells: dom.iter().map(|&d| d as u128).product(),
            stream_cells,
            slack_size: Rational::one() - decimal(machine.slack.size),
            slack_cores: Rational::one() - decimal(machine.slack.cores),
            capacity: cache_capacity(machine) as u128,
        }
    }

    /// The range `stencils` as a group: asserts its feasibility under the condition that it is
    /// one, and returns its cost under that condition (0 otherwise), in microseconds.
    fn range(&self, smt: &mut Smt, stencils: Range<usize>) -> String {
        let tag = format!("{}_{}", stencils.start, stencils.end);
        let is_group = self.is_group(stencils.clone());
        let n = smt.tile_counts[stencils.start].clone();
        let mut feasible = self.tiling_rows(smt, &n, &tag);
        feasible.extend(self.cache_rows(smt, &n, stencils.clone()));
        smt.assertions
            .push(format!("(=> {is_group} (and {}))", feasible.join(" ")));
        let cost = self.cost(smt, &n, stencils, &tag);
        format!("(ite {is_group} {cost} 0.0)")
    }

    /// "stencils `start..end` form a group": cuts before and after it, none inside.
    fn is_group(&self, Range { start, end }: Range<usize>) -> String {
        let n_st = self.analysis.stencils.len();
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
        match cond.len() {
            0 => "true".to_string(),
            1 => cond.remove(0),
            _ => format!("(and {})", cond.join(" ")),
        }
    }

    /// Even tiles, `D <= n t` and `(1 - σ_D) n t <= D` for an integer tile size `t`, and
    /// parallel efficiency, `N >= T` and `(1 - σ_T) T k <= N <= T k` for an integer `k`.
    fn tiling_rows(&self, smt: &mut Smt, n: &[String; 3], tag: &str) -> Vec<String> {
        let dom = self.analysis.domain;
        let mut feasible = Vec::new();
        for d in 0..3 {
            let t = smt.declare(format!("size_{}{tag}", DIMS[d]), Sort::Int);
            feasible.push(format!("(and (<= 1 {t}) (<= {t} {}))", dom[d]));
            feasible.push(format!("(<= {} (* {} {t}))", dom[d], n[d]));
            feasible.push(format!(
                "(<= (* {} (to_real (* {} {t}))) {}.0)",
                real(&self.slack_size),
                n[d],
                dom[d]
            ));
        }
        let threads = self.machine.threads;
        let total = format!("(* {} {} {})", n[0], n[1], n[2]);
        let k = smt.declare(format!("rounds_{tag}"), Sort::Int);
        feasible.push(format!("(<= {threads} {total})"));
        feasible.push(format!("(<= 1 {k})"));
        feasible.push(format!("(<= {total} (* {threads} {k}))"));
        feasible.push(format!(
            "(<= (* {} (to_real (* {threads} {k}))) (to_real {total}))",
            real(&self.slack_cores)
        ));
        feasible
    }

    /// The cache: the whole tile, or with streaming `window` planes of the tile's
    /// cross-section along z, `window` rows of one plane along y (`evaluate::tile_cells`); a
    /// streamed group spans whole rows (`evaluate::STREAM_TILES_X`).
    fn cache_rows(&self, smt: &Smt, n: &[String; 3], stencils: Range<usize>) -> Vec<String> {
        let (machine, capacity) = (self.machine, self.capacity);
        let total = format!("(* {} {} {})", n[0], n[1], n[2]);
        let st = &smt.streams[stencils.start];
        let mut feasible = vec![format!("(or (= {st} 0) (<= {} {STREAM_TILES_X}))", n[0])];
        let total_cross = if self.stream.dim == 2 {
            format!("(* {} {})", n[0], n[1])
        } else {
            n[0].clone()
        };
        let mut touched = BTreeSet::new();
        for i in stencils {
            touched.extend(self.analysis.touched(i));
            let count = touched.len() as u128;
            if limits_arrays(self.stream) && touched.len() > machine.group_arrays {
                // More arrays than the machine's `group_arrays` limit, which applies in
                // programs streamed along y (`evaluate::limits_arrays`).
                feasible.push("false".to_string());
            }
            feasible.push(format!(
                "(or (and (= {st} 0) (<= {} (* {capacity} {total}))) (and (= {st} 1) (<= {} (* {capacity} {total_cross}))))",
                count * self.cells,
                count * self.stream_cells
            ));
        }
        feasible
    }

    /// The cost of the range as a group, in microseconds: weights depend only on the grouping;
    /// the formulas are `formula`'s, with genuine products of the tile counts.
    fn cost(&self, smt: &mut Smt, n: &[String; 3], stencils: Range<usize>, tag: &str) -> String {
        let (analysis, machine) = (self.analysis, self.machine);
        let nr = n.clone().map(|x| format!("(to_real {x})"));
        let start = stencils.start;
        let size = stencils.len() as u128;
        let group = group_cost(analysis, machine, 0, stencils, [1, 1, 1], false);
        let crowded = self.crowded(n, group.stencils.iter().map(|c| c.stream_weights[0]));
        let mut cost = Vec::new();
        for (s, st) in group.stencils.iter().enumerate() {
            let mut terms = self.terms(smt, &nr, crowded.as_deref());
            let weights = [
                st.fast_weights,
                st.base_weights,
                st.stream_weights,
                st.compute_weights,
            ]
            .map(|w| w.map(|x| format!("{x}.0")));
            let dom = analysis.counted_domain(start + s);
            let counts = formula::stencil_counts(&mut terms, dom.map(|d| d as u128), &weights);
            let t = formula::stencil_terms(&mut terms, &counts, &format!("{}_{tag}", start + s));
            cost.push(t.peel);
            cost.push(t.body);
        }
        let mut terms = self.terms(smt, &nr, None);
        let total = format!("(to_real (* {} {} {}))", n[0], n[1], n[2]);
        cost.push(formula::overhead(&mut terms, &total, size));
        sum(cost)
    }

    /// Whether the group is crowded (`evaluate::crowded`), when the machine charges crowding: `s D^z
    /// > L n^z` with whole rows, else `s D^y D^z > L n^y n^z`, in integers, with `s` the sum of
    /// its stencils' `stream_weights`.
    fn crowded(
        &self,
        n: &[String; 3],
        stream_weights: impl Iterator<Item = u64>,
    ) -> Option<String> {
        let limit = self.machine.params.crowded.row_streams;
        (self.params.crowded.is_some() && limit > 0).then(|| {
            let s: u128 = stream_weights.map(|w| w as u128).sum();
            let dom = self.analysis.domain;
            let (dy, dz) = (dom[1] as u128, dom[2] as u128);
            format!(
                "(or (and (<= {nx} 1) (> {} (* {limit} {nz}))) (and (> {nx} 1) (> {} (* {limit} {ny} {nz}))))",
                s * dz,
                s * dy * dz,
                nx = n[0],
                ny = n[1],
                nz = n[2]
            )
        })
    }

    /// `formula`'s algebra over this group's tile counts `tiles` (real-cast), with its crowded
    /// condition where the stream body pays for crowding.
    fn terms<'s>(
        &'s self,
        smt: &'s mut Smt,
        tiles: &'s [String; 3],
        crowded: Option<&'s str>,
    ) -> SmtTerms<'s> {
        SmtTerms {
            smt,
            tiles,
            params: &self.params,
            scale: &self.scale,
            crowded,
        }
    }
}

/// `formula`'s algebra over SMT-LIB real terms: tile counts are the (real-cast) integer
/// constants `tiles`, seconds are in objective units (parameters times `scale`), and each max
/// names its two sides with declared constants.
struct SmtTerms<'a> {
    smt: &'a mut Smt,
    tiles: &'a [String; 3],
    params: &'a ExactParams,
    scale: &'a Rational,
    /// The group's crowded condition (`evaluate::crowded`) when the machine charges crowding.
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
    fn exposed(&mut self, max: &String, fast: &String, slow: &String) -> Option<String> {
        let (theta, rest) = self.params.exposed.as_ref()?;
        Some(format!(
            "(+ (* {} {max}) (* {} (+ {fast} {slow})))",
            real(rest),
            real(theta)
        ))
    }
}
