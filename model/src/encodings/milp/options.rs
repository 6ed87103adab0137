//! Restrictions of the search: fixed groups, tile-count bounds, no streaming, and the encoding.

use crate::analysis::Analysis;
use crate::cost::{stream_shape_on, Configuration, StreamShape};
use crate::machine::ModelMachine;

use super::Encoding;

/// Restrictions of the search, and the encoding of the MILP.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MilpOptions {
    /// The MILP encoding (the search space is the same for both).
    pub encoding: Encoding,
    /// Start the digits MILP from the exact DP's configuration (`solvers::optimize`).
    pub warm_start: bool,
    /// Fixed group index per stencil.
    pub fixed_groups: Option<Vec<usize>>,
    /// Lower bounds on tile counts per dimension.
    pub tiles_min: Option<[usize; 3]>,
    /// Upper bounds on tile counts per dimension.
    pub tiles_max: Option<[usize; 3]>,
    /// Keep to the original schedule space: no group streams.
    pub no_stream: bool,
}

impl MilpOptions {
    /// Tile-count range per dimension after clipping to 1..=D.
    pub fn tile_range(&self, domain: [usize; 3]) -> [(usize, usize); 3] {
        [0, 1, 2].map(|d| {
            let lo = self.tiles_min.map_or(1, |t| t[d]).clamp(1, domain[d]);
            let hi = self
                .tiles_max
                .map_or(domain[d], |t| t[d])
                .clamp(1, domain[d]);
            (lo, hi)
        })
    }

    /// The program's stream shape, or None when streaming is off.
    pub fn stream_shape(&self, analysis: &Analysis, machine: &ModelMachine) -> Option<StreamShape> {
        (!self.no_stream && machine.streams).then(|| stream_shape_on(analysis, machine))
    }

    /// Whether a configuration respects these restrictions.
    pub fn admits(&self, config: &Configuration, domain: [usize; 3]) -> bool {
        if self.no_stream && !config.stream.is_empty() {
            return false;
        }
        if let Some(g) = &self.fixed_groups {
            if *g != config.groups {
                return false;
            }
        }
        let range = self.tile_range(domain);
        config
            .tiles
            .iter()
            .all(|t| (0..3).all(|d| t[d] >= range[d].0 && t[d] <= range[d].1))
    }
}
