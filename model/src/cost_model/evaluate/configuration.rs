//! The point of the search space: which stencils are fused, how each group is tiled and which
//! groups stream, with the checks of its shape.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::{group_infeasibility, prefers_stream, Infeasibility, StreamShape};
use crate::formats::machine::ModelMachine;
use crate::language::analysis::Analysis;
use crate::language::program::DIMS;

/// A point in the search space: which stencils are fused and how each group is tiled.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Configuration {
    /// Group index per stencil: starts at 0 and grows by 0 or 1.
    pub groups: Vec<usize>,
    /// Tile counts (n^x, n^y, n^z) per group.
    pub tiles: Vec<[usize; 3]>,
    /// The groups that stream along the program's stream dimension ([`stream_shape`](super::stream_shape)), in
    /// increasing order: all their stencils advance one line or plane at a time through
    /// rolling buffers of [`StreamShape::window`] lines. Absent in a file: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stream: Vec<usize>,
}

impl Configuration {
    /// A configuration in the original schedule space: no group streams.
    pub fn new(groups: Vec<usize>, tiles: Vec<[usize; 3]>) -> Configuration {
        Configuration {
            groups,
            tiles,
            stream: Vec::new(),
        }
    }

    /// Whether group `g` streams.
    pub fn streams(&self, g: usize) -> bool {
        self.stream.binary_search(&g).is_ok()
    }

    /// The same groups and tiles, each group streaming exactly when its whole tiles fail the
    /// cache test (streaming is then what makes it fit). The model's time does not depend on
    /// streaming, so this is the choice `solve` reports: measured, streaming a group whose
    /// tiles already fit is slower (cosmo_hdiff4, docs/decisions/0023-streaming-on-a-cpu.md).
    /// On a GPU (`shape.always`) every group streams: a smaller shared-memory footprint is more
    /// resident blocks, and streaming never grows it. With `shape` None (streaming off) no
    /// group streams.
    pub fn canonical_stream(
        mut self,
        analysis: &Analysis,
        machine: &ModelMachine,
        shape: Option<StreamShape>,
    ) -> Configuration {
        if shape.is_some_and(|s| s.always) {
            self.stream = (0..self.tiles.len()).collect();
            return self;
        }
        let ranges = self.group_ranges();
        self.stream = (0..self.tiles.len())
            .filter(|&g| {
                shape.is_some()
                    && matches!(
                        group_infeasibility(
                            analysis,
                            machine,
                            g,
                            ranges[g].clone(),
                            self.tiles[g],
                            false
                        ),
                        Some(Infeasibility::Cache { .. })
                    )
            })
            .collect();
        self
    }

    /// The same groups and tiles, each group streaming exactly when that shrinks its working
    /// set ([`prefers_stream`]): a feasible choice whenever one exists (the smaller working set
    /// keeps every cache test that held). With `shape` None (streaming off) no group streams.
    pub fn smallest_working_set(
        mut self,
        domain: [usize; 3],
        shape: Option<StreamShape>,
    ) -> Configuration {
        self.stream = (0..self.tiles.len())
            .filter(|&g| shape.is_some_and(|s| prefers_stream(domain, s, self.tiles[g])))
            .collect();
        self
    }

    /// One group per maximal run of equal indices, as stencil index ranges.
    pub fn group_ranges(&self) -> Vec<Range<usize>> {
        ranges_of(&self.groups)
    }

    /// Checks the shape: indices start at 0 and grow by 0 or 1, one tile triple per group,
    /// tile counts within 1..=D.
    pub fn check_shape(&self, stencils: usize, domain: [usize; 3]) -> Result<(), String> {
        crate::language::constraints::check_group_indices(&self.groups, stencils)?;
        let ngroups = self.groups.last().map_or(0, |g| g + 1);
        if self.tiles.len() != ngroups {
            return Err(format!(
                "{} tile triples given for {} groups",
                self.tiles.len(),
                ngroups
            ));
        }
        if self.stream.windows(2).any(|w| w[0] >= w[1])
            || self.stream.last().is_some_and(|&g| g >= ngroups)
        {
            return Err(format!(
                "stream: {:?} must list group indices below {ngroups} in increasing order",
                self.stream
            ));
        }
        for (g, t) in self.tiles.iter().enumerate() {
            for d in 0..3 {
                if t[d] < 1 || t[d] > domain[d] {
                    return Err(format!(
                        "group {g}: tile count along {} is {}, it must be between 1 and {}",
                        DIMS[d], t[d], domain[d]
                    ));
                }
            }
        }
        Ok(())
    }

    /// Tile sizes `ceil(D / n)` of group `g`.
    pub fn tile_size(&self, g: usize, domain: [usize; 3]) -> [usize; 3] {
        let t = self.tiles[g];
        [0, 1, 2].map(|d| domain[d].div_ceil(t[d]))
    }
}

/// Splits a group-index vector into ranges of equal indices.
pub fn ranges_of(groups: &[usize]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=groups.len() {
        if i == groups.len() || groups[i] != groups[start] {
            out.push(start..i);
            start = i;
        }
    }
    out
}
