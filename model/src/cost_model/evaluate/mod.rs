//! The ABSINTHE cost model (docs/MODEL.md): the one definition of what a configuration costs.
//!
//! A [`Configuration`] is a group index per stencil and tile counts per group. [`evaluate`]
//! derives everything else — evaluation widths, loads, stores, load boundaries — and returns
//! the exact integer access counts of every term (the same counts `learn` fits the parameters
//! to) together with their cost in seconds and the feasibility verdict.
//!
//! The cost of a group depends only on the group's own stencils, its tile counts and which of
//! its stencils are read after it: [`group_cost`] is that function and `evaluate` sums it.
//!
//! One concept per file: the [`Configuration`] (`configuration`), streaming and the streams in
//! flight (`streaming`), the tile-independent [`GroupShape`] of a range (`shape`), what a
//! configuration costs (`costs`), and the constraints it must satisfy (`feasibility`).

mod configuration;
mod costs;
mod feasibility;
mod shape;
mod streaming;

pub use configuration::{ranges_of, Configuration};
use costs::{crowding_charge, exposed_share};
pub use costs::{
    group_cost, group_cost_of, overhead_count, overhead_seconds, stencil_seconds, term_seconds,
    Cost, Counts, GroupCost, PeelBodyCount, StencilCost,
};
pub use feasibility::{
    cache_capacity, even_tiles, group_infeasibility, group_infeasibility_with, parallel_ok,
    Infeasibility, SlackTests,
};
pub use shape::{group_shape, GroupShape, StencilShape, Weights, STORE_WEIGHT};
pub use streaming::{
    crowded, limits_arrays, prefers_stream, stream_shape, stream_shape_on, tile_cells, StreamShape,
    STREAM_TILES_X,
};

use crate::formats::machine::{ModelMachine, Params};
use crate::language::analysis::Analysis;

/// Checks, in debug builds, that `analysis` counts operations as the machine weighs them
/// (`Analysis::weigh_operations` with `params.operations`): the compute part reads
/// `StencilInfo::operations`, so an analysis costed on a machine it was not weighed for would
/// price division, `sqrt` and calls with another machine's weights. (A program without them
/// counts the same under any weights and passes.) The entry points of the model that take
/// both call it.
#[inline]
pub fn debug_check_weights(analysis: &Analysis, params: &Params) {
    debug_assert!(
        analysis
            .stencils
            .iter()
            .all(|s| s.operations == s.operation_counts.weighed(&params.operations)),
        "the analysis is weighed with operation weights {:?}, the machine's are {:?} \
         (call Analysis::weigh_operations with params.operations)",
        analysis.operation_weights,
        params.operations
    );
}

/// The cost of a configuration (which must have a valid shape; see
/// [`Configuration::check_shape`]).
pub fn evaluate(analysis: &Analysis, machine: &ModelMachine, config: &Configuration) -> Cost {
    debug_check_weights(analysis, &machine.params);
    let groups: Vec<GroupCost> = config
        .group_ranges()
        .into_iter()
        .enumerate()
        .map(|(g, r)| group_cost(analysis, machine, g, r, config.tiles[g], config.streams(g)))
        .collect();
    let total = groups.iter().map(|g| g.time).sum();
    let infeasible = groups.iter().find_map(|g| g.infeasible.clone());
    Cost {
        groups,
        total,
        infeasible,
    }
}
