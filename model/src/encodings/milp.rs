//! The linearized MILP of the ABSINTHE model, the digits encoding (docs/MODEL.md, "Encodings").
//!
//! Variables, per stencil i: group-cut binaries `cut_i = g_{i+1} - g_i` and integer group
//! indices `g_i`; tile counts `n_i^d` as sums of binary digits; evaluation widths `e_i^{d±}`;
//! load lines, running maxima and their selectors; the products of tile counts with weights as
//! binary-digit products; peel and body times as `≥` both branches of their max.
//!
//! Exactness: "same group" tests are exact (for contiguous groups, `same(j, i)` is the
//! conjunction of "no cut between j and i", linearized by its convex hull); loads `ℓ_{i,a}` and
//! stores `w_i` are exact linear functions of them; evaluation widths are exact (a selector per
//! reader) wherever they feed a running maximum; the running maxima of the load growth are
//! exact. Everything else uses `≥`, exact at the optimum because all costs are non-negative and
//! grow with it. The objective is in microseconds (see [`OBJECTIVE_SCALE`]).
//!
//! The parts, one file each: the choice of encoding ([`Encoding`], [`Encoded`]) and the
//! restrictions of the search ([`MilpOptions`]); the MILP under construction and its exact
//! "same group" tests and digit products (`builder`); the decision variables (`variables`);
//! evaluation widths (`widths`); stores, loads and load lines (`loads`); one stencil's weights
//! and cost (`stencil`, over `formula`'s algebra in `terms`); crowding (`crowding`); and the
//! feasibility rows (`feasibility`).

use std::collections::HashMap;

use crate::cost_model::evaluate::{Configuration, StreamShape};
use crate::encodings::linearize::Linearization;
use crate::encodings::lp::{LinExpr, Milp, VarId};
use crate::formats::machine::ModelMachine;
use crate::language::analysis::Analysis;

mod builder;
mod crowding;
mod encoding;
mod feasibility;
mod loads;
mod stencil;
mod terms;
mod variables;
mod widths;

use crate::cost_model::options::{Encoding, MilpOptions};
pub use encoding::{
    digits_admits, digits_encodes, digits_supported, Encoded, GPU_DIGITS_UNSUPPORTED,
    SWEEP_DIGITS_UNSUPPORTED,
};

use builder::Builder;
use stencil::Carried;
use widths::exact_widths;

/// Objective units per second: the MILP objective is in microseconds.
pub const OBJECTIVE_SCALE: f64 = 1e6;

/// The MILP with the handles needed to read a configuration back.
#[derive(Clone, Debug)]
pub struct AbsintheMilp {
    pub milp: Milp,
    /// `cut_i = g_{i+1} - g_i`, binary, one per stencil but the last.
    pub cuts: Vec<VarId>,
    /// Group index per stencil (integer; `g_0` fixed to 0).
    pub group_index: Vec<VarId>,
    /// Tile counts per stencil and dimension (integer).
    pub tile_counts: Vec<[VarId; 3]>,
    /// Binary digits of each tile count, least significant first.
    pub tile_bits: Vec<[Vec<VarId>; 3]>,
    /// Stream flag per stencil (binary, equal within a group).
    pub streams: Vec<VarId>,
    /// The program's domain and stream shape (decoding makes the stream flags canonical).
    pub domain: [usize; 3],
    pub stream_shape: Option<StreamShape>,
    /// Every binary-digit product and exact maximum, with the rows that encode it (for the
    /// soundness proofs of `smt::soundness_queries`).
    pub linearizations: Vec<Linearization>,
}

impl AbsintheMilp {
    /// Reads the configuration from a solver's values (rounding integers).
    pub fn decode(&self, values: &[f64]) -> Configuration {
        let mut groups = vec![0usize; self.tile_counts.len()];
        for i in 1..groups.len() {
            groups[i] = groups[i - 1] + (values[self.cuts[i - 1].0] > 0.5) as usize;
        }
        let mut tiles = Vec::new();
        for (i, &g) in groups.iter().enumerate() {
            if i == 0 || g != groups[i - 1] {
                tiles.push(self.tile_counts[i].map(|v| values[v.0].round().max(1.0) as usize));
            }
        }
        // The stream flags the solver chose are feasible, and so are the canonical ones (the
        // time does not depend on them; the canonical choice never grows the working set).
        Configuration::new(groups, tiles).smallest_working_set(self.domain, self.stream_shape)
    }

    /// A copy of the MILP with the grouping and tile counts fixed to `config` (an LP in effect):
    /// solving it gives the model's objective of exactly that configuration.
    pub fn fixed_to(&self, config: &Configuration) -> Milp {
        let mut m = self.milp.clone();
        let fix = |m: &mut Milp, v: VarId, x: f64| {
            m.vars[v.0].lower = x;
            m.vars[v.0].upper = x;
        };
        for (i, &c) in self.cuts.iter().enumerate() {
            fix(
                &mut m,
                c,
                (config.groups[i + 1] != config.groups[i]) as u8 as f64,
            );
        }
        for (i, &g) in config.groups.iter().enumerate() {
            fix(&mut m, self.streams[i], config.streams(g) as u8 as f64);
            let t = config.tiles[g];
            for d in 0..3 {
                fix(&mut m, self.tile_counts[i][d], t[d] as f64);
                for (k, &b) in self.tile_bits[i][d].iter().enumerate() {
                    fix(&mut m, b, ((t[d] >> k) & 1) as f64);
                }
            }
        }
        m
    }
}

/// Builds the MILP of `analysis` on `machine`: group and tile variables, evaluation widths, then
/// per stencil its store and loads, weights, cost terms (`formula`) and the feasibility rows.
pub fn milp(analysis: &Analysis, machine: &ModelMachine, options: &MilpOptions) -> AbsintheMilp {
    crate::cost_model::evaluate::debug_check_weights(analysis, &machine.params);
    let n_st = analysis.stencils.len();
    let mut b = Builder {
        milp: Milp::new("absinthe"),
        cuts: Vec::new(),
        same_memo: HashMap::new(),
        bits: Vec::new(),
        linearizations: Vec::new(),
        tile_range: options.space.tile_range_of(analysis),
        store_weight: machine.model.store_weight() as f64,
    };
    let group_index = b.group_variables(analysis, options);
    let tile_counts = b.tile_variables(n_st);
    let streams = b.stream_variables(n_st);
    let stream_shape = options.space.stream_shape(analysis, machine);
    if stream_shape.is_none() {
        b.forbid_streaming(&streams);
    }
    b.stream_rows(&streams);
    let widths = b.width_expressions(analysis, &exact_widths(analysis));

    let mut objective = LinExpr::new();
    let mut carried = Carried::default();
    for i in 0..n_st {
        let on = (analysis, machine);
        b.stencil(on, i, &widths, streams[i], &mut carried, &mut objective);
    }

    b.milp.set_objective(&objective);
    AbsintheMilp {
        milp: b.milp,
        cuts: b.cuts,
        group_index,
        tile_counts,
        tile_bits: b.bits,
        streams,
        domain: analysis.domain,
        stream_shape,
        linearizations: b.linearizations,
    }
}
