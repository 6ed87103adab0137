//! What the model charges: the access counts of a stencil, their seconds, and the cost of a
//! stencil, a group and a configuration.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::{group_infeasibility, group_shape, GroupShape, Infeasibility, Weights};
use crate::cost_model::formula::{overhead, stencil_terms, Numeric, StencilCounts, StencilTerms};
use crate::formats::machine::{ModelMachine, Params};
use crate::language::analysis::{Analysis, ArrayId, Extent};

/// Peel and body access counts of one part of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PeelBodyCount {
    pub peel: u128,
    pub body: u128,
}

/// Access counts of one stencil: what the parameters multiply (the compute part counts
/// operations).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counts {
    pub fast: PeelBodyCount,
    pub slow_base: PeelBodyCount,
    pub slow_stream: PeelBodyCount,
    #[serde(default)]
    pub compute: PeelBodyCount,
}

impl Counts {
    /// Componentwise sum.
    pub fn add(&mut self, o: &Counts) {
        self.fast.peel += o.fast.peel;
        self.fast.body += o.fast.body;
        self.slow_base.peel += o.slow_base.peel;
        self.slow_base.body += o.slow_base.body;
        self.slow_stream.peel += o.slow_stream.peel;
        self.slow_stream.body += o.slow_stream.body;
        self.compute.peel += o.compute.peel;
        self.compute.body += o.compute.body;
    }
}

/// Everything the model derives for one stencil of a configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct StencilCost {
    /// `[[e^{d-}, e^{d+}]; 3]`: evaluation widths beyond the tile core.
    pub widths: Extent,
    /// `L_i`: arrays loaded from slow memory.
    pub loads: Vec<ArrayId>,
    /// `w_i`: whether the result is stored to slow memory.
    pub store: bool,
    /// (c, c^x, c^y, c^z), (m, m^x, m^y, m^z), (s, s^x, s^y, s^z), (f, f^x, f^y, f^z).
    pub fast_weights: Weights,
    pub base_weights: Weights,
    pub stream_weights: Weights,
    pub compute_weights: Weights,
    pub counts: Counts,
    /// Seconds of each term (the fast body includes compute).
    pub fast_peel: f64,
    pub fast_body: f64,
    /// Base plus stream.
    pub slow_peel: f64,
    pub slow_body: f64,
    /// `max(fast_peel, slow_peel)`, plus the exposed share of the smaller (`Params::exposed`).
    pub peel: f64,
    /// `max(fast_body, slow_body)`, plus the exposed share of the smaller.
    pub body: f64,
    /// `peel + body`.
    pub time: f64,
    /// Tile count product `n^x n^y n^z` of its group.
    pub tiles_total: u64,
}

impl StencilCost {
    /// Which term dominates: `fast`/`slow` memory for peel and body.
    pub fn dominant(&self) -> (&'static str, &'static str) {
        let peel = if self.fast_peel >= self.slow_peel {
            "fast"
        } else {
            "slow"
        };
        let body = if self.fast_body >= self.slow_body {
            "fast"
        } else {
            "slow"
        };
        (peel, body)
    }
}

/// The cost of one group.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupCost {
    pub range: Range<usize>,
    pub tiles: [usize; 3],
    /// Whether the group streams (see [`StreamShape`](super::StreamShape)).
    pub stream: bool,
    /// Whether the group is [`crowded`](super::crowded) under the machine's `params.crowded.row_streams`: its
    /// stencils' slow bodies then pay `params.crowded.stream_body` per stream-body access.
    pub crowded: bool,
    pub stencils: Vec<StencilCost>,
    /// Loop-bound overhead: `6 (B^b + B^v) n^x n^y n^z` per stencil.
    pub overhead: f64,
    /// Sum of stencil times plus overhead.
    pub time: f64,
    pub infeasible: Option<Infeasibility>,
}

/// The cost of a configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Cost {
    pub groups: Vec<GroupCost>,
    /// The objective: sum of all stencil times and overheads, in seconds.
    pub total: f64,
    /// The first violated constraint, if any.
    pub infeasible: Option<Infeasibility>,
}

impl Cost {
    /// Per-stencil costs in program order.
    pub fn stencils(&self) -> impl Iterator<Item = &StencilCost> {
        self.groups.iter().flat_map(|g| g.stencils.iter())
    }
    pub fn is_feasible(&self) -> bool {
        self.infeasible.is_none()
    }
}

impl Counts {
    /// `[part][term]`, as `formula::stencil_terms` takes them.
    pub fn table(&self) -> StencilCounts<u128> {
        let pair = |c: &PeelBodyCount| [Some(c.peel), Some(c.body)];
        [
            pair(&self.fast),
            pair(&self.slow_base),
            pair(&self.slow_stream),
            pair(&self.compute),
        ]
    }
}

/// The seconds of a stencil's counts, its group `crowded` or not ([`crowded`](super::crowded)):
/// `formula::stencil_terms` in f64.
pub fn stencil_seconds(params: &Params, counts: &Counts, crowded: bool) -> StencilTerms<f64> {
    let table = params.table();
    let mut numeric = Numeric {
        n: [0; 3],
        params: &table,
        crowded: crowding_charge(params, crowded),
        exposed: exposed_share(params),
    };
    stencil_terms(&mut numeric, &counts.table(), "")
}

/// The loop-bound overhead's access count of a group of `len` stencils with `tiles_total`
/// tiles: what `(B^b + B^v)` multiplies (`formula::LOOP_BOUND_ACCESSES` per stencil and tile).
pub fn overhead_count(tiles_total: u64, len: usize) -> u128 {
    crate::cost_model::formula::LOOP_BOUND_ACCESSES * tiles_total as u128 * len as u128
}

/// The loop-bound overhead in seconds (`formula::overhead` in f64).
pub fn overhead_seconds(params: &Params, tiles_total: u64, len: usize) -> f64 {
    let table = params.table();
    let mut numeric = Numeric {
        n: [0; 3],
        params: &table,
        crowded: None,
        exposed: None,
    };
    overhead(&mut numeric, &(tiles_total as u128), len as u128)
}

/// `(θ, 1 - θ)` for the machine's exposed share θ ([`formula::Numeric`]'s `exposed`), None when
/// it is zero.
pub(super) fn exposed_share(params: &Params) -> Option<(f64, f64)> {
    (params.exposed > 0.0).then_some((params.exposed, 1.0 - params.exposed))
}

/// The crowding charge of a group ([`formula::Numeric`]'s `crowded`): `Q^b` when it is crowded
/// and the machine charges it.
pub(super) fn crowding_charge(params: &Params, crowded: bool) -> Option<f64> {
    (crowded && params.crowded.stream_body > 0.0).then_some(params.crowded.stream_body)
}

/// The cost of the stencils `range` fused into one group tiled by `tiles`.
pub fn group_cost(
    analysis: &Analysis,
    machine: &ModelMachine,
    group: usize,
    range: Range<usize>,
    tiles: [usize; 3],
    stream: bool,
) -> GroupCost {
    group_cost_of(
        analysis,
        machine,
        group,
        &group_shape(analysis, range, machine.model.store_weight()),
        tiles,
        stream,
    )
}

/// [`group_cost`] from a group's [`GroupShape`].
pub fn group_cost_of(
    analysis: &Analysis,
    machine: &ModelMachine,
    group: usize,
    shape: &GroupShape,
    tiles: [usize; 3],
    stream: bool,
) -> GroupCost {
    let n = tiles.map(|t| t as u128);
    let params = &machine.params;
    let tiles_total = tiles.iter().map(|&t| t as u64).product::<u64>();
    let crowded = shape.crowded(analysis.domain, params, tiles);
    let lanes = shape.gpu_lanes(analysis, machine, tiles);
    let stencils: Vec<StencilCost> = shape
        .range
        .clone()
        .zip(&shape.stencils)
        .enumerate()
        .map(|(i, (stencil, s))| {
            let dom = analysis.counted_domain(stencil).map(|d| d as u128);
            let counts = match &lanes {
                Some(l) => s.counts_on_lanes(dom, n, l[i]),
                None => s.counts(dom, n),
            };
            let t = stencil_seconds(params, &counts, crowded);
            StencilCost {
                widths: s.widths,
                loads: s.loads.clone(),
                store: s.store,
                fast_weights: s.fast_weights,
                base_weights: s.base_weights,
                stream_weights: s.stream_weights,
                compute_weights: s.compute_weights,
                counts,
                fast_peel: t.fast_peel,
                fast_body: t.fast_body,
                slow_peel: t.slow_peel,
                slow_body: t.slow_body,
                peel: t.peel,
                body: t.body,
                time: t.peel + t.body,
                tiles_total,
            }
        })
        .collect();
    let overhead = overhead_seconds(params, tiles_total, stencils.len());
    let mut time = 0.0;
    for s in &stencils {
        time += s.time;
    }
    time += overhead;

    let infeasible =
        group_infeasibility(analysis, machine, group, shape.range.clone(), tiles, stream);
    GroupCost {
        range: shape.range.clone(),
        tiles,
        stream,
        crowded,
        stencils,
        overhead,
        time,
        infeasible,
    }
}

/// Seconds of (fast peel, fast body, slow peel, slow body) for some counts of an uncrowded
/// group.
pub fn term_seconds(params: &Params, c: &Counts) -> [f64; 4] {
    let t = stencil_seconds(params, c, false);
    [t.fast_peel, t.fast_body, t.slow_peel, t.slow_body]
}
