//! The range encoding of the optimisation problem: a tight MILP (its LP relaxation is integral).
//!
//! The cost of a group depends only on its own stencils and tile counts (`evaluate::group_cost`), so
//! a configuration is a partition of the stencil sequence into contiguous ranges, each with its
//! own tiling. This encoding has one binary `x_{s,e}` per range `s..e` that may form a group,
//! carrying that range's cheapest feasible tiling (found by `search::range_table`: every
//! admissible, parallel-efficient tile triple whose working set fits the cache, evaluated by the
//! model). A configuration is a path from boundary 0 to boundary N through the group boundaries:
//! one flow row per boundary `k` (`Σ_e x_{k,e} − Σ_s x_{s,k}` is 1 at 0, −1 at N, 0 between).
//! The objective is `Σ cost_{s,e} x_{s,e}`.
//!
//! Why it is exact: every configuration's cost is the sum of its groups' costs, and a range's
//! other tilings are never cheaper than its best one (dominated options are dropped, so ties
//! aside only one per range remains). Why it is tight: the constraint matrix is the incidence
//! matrix of a directed graph, totally unimodular, so every vertex of the LP relaxation is
//! integral and solvers prove optimality at the root. Each column has two nonzeros; the
//! equivalent set-partitioning rows ("the ranges covering stencil i sum to 1") have as many as the
//! range is long, which made HiGHS 50x slower on a 150-stencil program.
//!
//! The ABSINTHE encoding (`milp::milp`, "digits") keeps the model's structure inside the MILP
//! (binary-digit products, group-index constraints); this one moves the per-range tiling search
//! out of it. Both give the same optimum; tests hold them to full enumeration.

use crate::cost_model::evaluate::{Configuration, StreamShape};
use crate::cost_model::options::MilpOptions;
use crate::cost_model::search::{range_table, RangeTable};
use crate::encodings::lp::{LinExpr, Milp, Sense, VarId};
use crate::encodings::milp::OBJECTIVE_SCALE;
use crate::formats::machine::ModelMachine;
use crate::language::analysis::Analysis;

/// One range that may form a group, with its best tiling.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub start: usize,
    pub end: usize,
    pub tiles: [usize; 3],
    pub seconds: f64,
    pub var: VarId,
}

/// The range MILP with what is needed to read a configuration back.
#[derive(Clone, Debug)]
pub struct RangeMilp {
    pub milp: Milp,
    pub columns: Vec<Column>,
    pub stencils: usize,
    /// The group ranges evaluated when the search space's deadline stopped the table: the MILP
    /// then covers part of the space only, and must not be solved as the model's optimum.
    pub timed_out: Option<usize>,
    domain: [usize; 3],
    stream: Option<StreamShape>,
}

/// Builds the range MILP (range costs computed on all CPUs).
pub fn range_milp(analysis: &Analysis, machine: &ModelMachine, options: &MilpOptions) -> RangeMilp {
    crate::cost_model::evaluate::debug_check_weights(analysis, &machine.params);
    let table = range_table(analysis, machine, &options.space, 0);
    range_milp_of(&table, analysis.stencils.len())
}

/// Builds the range MILP from a range table.
pub fn range_milp_of(table: &RangeTable, stencils: usize) -> RangeMilp {
    let mut milp = Milp::new("absinthe_ranges");
    let mut columns = Vec::new();
    let mut objective = LinExpr::new();
    // flow[k] = (arcs out of boundary k) - (arcs into boundary k).
    let mut flow: Vec<LinExpr> = vec![LinExpr::new(); stencils + 1];
    for (start, end, tiles, seconds) in table.ranges() {
        let var = milp.add_binary(format!("x_{start}_{end}"));
        objective.add(var, seconds * OBJECTIVE_SCALE);
        flow[start].add(var, 1.0);
        flow[end].add(var, -1.0);
        columns.push(Column {
            start,
            end,
            tiles,
            seconds,
            var,
        });
    }
    for (k, row) in flow.iter().enumerate() {
        let rhs = if k == 0 {
            1.0
        } else if k == stencils {
            -1.0
        } else {
            0.0
        };
        milp.add_constraint(format!("flow_{k}"), row, Sense::Eq, rhs);
    }
    milp.set_objective(&objective);
    RangeMilp {
        milp,
        columns,
        stencils,
        timed_out: table.timed_out.then_some(table.ranges_evaluated),
        domain: table.domain,
        stream: table.stream,
    }
}

impl RangeMilp {
    /// Reads the configuration from a solver's values: the chosen ranges in order.
    pub fn decode(&self, values: &[f64]) -> Configuration {
        let mut chosen: Vec<&Column> = self
            .columns
            .iter()
            .filter(|c| values[c.var.0] > 0.5)
            .collect();
        chosen.sort_by_key(|c| c.start);
        let mut groups = vec![0usize; self.stencils];
        let mut tiles = Vec::new();
        for (g, c) in chosen.iter().enumerate() {
            for slot in groups
                .iter_mut()
                .take(c.end.min(self.stencils))
                .skip(c.start)
            {
                *slot = g;
            }
            tiles.push(c.tiles);
        }
        Configuration::new(groups, tiles).smallest_working_set(self.domain, self.stream)
    }

    /// A copy with every column fixed: 1 for the ranges (and tilings) of `config`, 0 for the rest.
    /// Infeasible when `config` uses a range or tiling that is not a column.
    pub fn fixed_to(&self, config: &Configuration) -> Milp {
        let mut m = self.milp.clone();
        let ranges = config.group_ranges();
        for c in &self.columns {
            let on = ranges
                .iter()
                .zip(&config.tiles)
                .any(|(r, t)| r.start == c.start && r.end == c.end && *t == c.tiles);
            let x = on as u8 as f64;
            m.vars[c.var.0].lower = x;
            m.vars[c.var.0].upper = x;
        }
        m
    }
}
