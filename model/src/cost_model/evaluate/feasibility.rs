//! The model's constraints: the cache (or on a GPU the shared memory) test, the `group_arrays`
//! limit, parallel efficiency, even tiles, whole rows for a streamed group; and why a group
//! violates them.

use std::fmt;
use std::ops::Range;

use super::{group_shape, limits_arrays, stream_shape, tile_cells, STREAM_TILES_X};
use crate::formats::machine::ModelMachine;
use crate::language::analysis::Analysis;
use crate::language::program::DIMS;

/// Why a configuration violates the model's constraints.
#[derive(Clone, Debug, PartialEq)]
pub enum Infeasibility {
    /// The working set of a tile exceeds the cache.
    Cache {
        group: usize,
        stencil: usize,
        arrays: usize,
        tile_values: f64,
        capacity: u64,
    },
    /// On a CPU, in a program whose groups stream along y: the group touches more arrays than
    /// the machine's `group_arrays` limit ([`limits_arrays`]).
    Arrays {
        group: usize,
        stencil: usize,
        arrays: usize,
        limit: usize,
    },
    /// On a GPU: the tile buffers of one thread block exceed the shared memory the model may
    /// fill ([`GroupShape::shared_values`](super::GroupShape::shared_values)).
    SharedMemory {
        group: usize,
        buffers: usize,
        values: u64,
        capacity: u64,
    },
    /// Fewer tiles than threads.
    TooFewTiles {
        group: usize,
        tiles: u64,
        threads: usize,
    },
    /// The tile count does not keep the threads busy to within the slack.
    ParallelEfficiency {
        group: usize,
        tiles: u64,
        threads: usize,
        slack: f64,
    },
    /// On a CPU: a streamed group split along x. Each step's face would be rows of part of the
    /// domain's width, a new short stream per row ([`STREAM_TILES_X`]).
    StreamSplitRows { group: usize, tiles_x: usize },
    /// A streamed group on a machine whose model form does not stream (`--model absinthe`).
    NoStreaming { group: usize },
    /// In a program with a sweep (`computation: forward` or `backward`): a group split along z,
    /// or streamed. Its levels are computed in order, each tile walking its whole column.
    Sweep {
        group: usize,
        tiles_z: usize,
        stream: bool,
    },
    /// A 2-D stencil grouped with another: it is stored once per column and read from memory.
    Plane { group: usize, stencil: usize },
    /// Tiles of one dimension are too uneven.
    UnevenTiles {
        group: usize,
        dim: usize,
        count: usize,
        size: usize,
        domain: usize,
        slack: f64,
    },
}

impl fmt::Display for Infeasibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Infeasibility::Cache {
                group,
                arrays,
                tile_values,
                capacity,
                ..
            } => write!(
                f,
                "group {group}: cache: {arrays} arrays x {tile_values} cells per tile = {} values exceed the capacity of {capacity} values",
                arrays as f64 * tile_values
            ),
            Infeasibility::Arrays {
                group,
                arrays,
                limit,
                ..
            } => write!(
                f,
                "group {group}: touches {arrays} arrays, more than the machine's group_arrays limit of {limit} (programs streamed along y)"
            ),
            Infeasibility::SharedMemory {
                group,
                buffers,
                values,
                capacity,
            } => write!(
                f,
                "group {group}: shared memory: {buffers} tile buffers of {values} values in all exceed the capacity of {capacity} values per block"
            ),
            Infeasibility::TooFewTiles {
                group,
                tiles,
                threads,
            } => write!(f, "group {group}: {tiles} tiles for {threads} threads"),
            Infeasibility::ParallelEfficiency {
                group,
                tiles,
                threads,
                slack,
            } => write!(
                f,
                "group {group}: {tiles} tiles do not keep {threads} threads busy within the slack {slack} (the last round of tiles is too short)"
            ),
            Infeasibility::StreamSplitRows { group, tiles_x } => write!(
                f,
                "group {group}: streams with {tiles_x} tiles along x; a streamed tile spans whole rows (1 tile along x)"
            ),
            Infeasibility::NoStreaming { group } => write!(
                f,
                "group {group}: streams, but the model form in use never streams (`--model absinthe`)"
            ),
            Infeasibility::Sweep {
                group,
                tiles_z,
                stream,
            } => write!(
                f,
                "group {group}: {}; in a program with a sweep every group computes whole columns (1 tile along z) and none streams",
                if stream { "streams".to_string() } else { format!("{tiles_z} tiles along z") }
            ),
            Infeasibility::Plane { group, stencil } => write!(
                f,
                "group {group}: stencil {stencil} is 2-D ([i, j]) and grouped with others; a 2-D stencil is a group of its own"
            ),
            Infeasibility::UnevenTiles {
                group,
                dim,
                count,
                size,
                domain,
                slack,
            } => write!(
                f,
                "group {group}: {count} tiles of {size} along {} cover {} cells for a domain of {domain}: more than the slack {slack} allows",
                DIMS[dim],
                count * size
            ),
        }
    }
}

/// Cache capacity in values: `floor(cache_bytes * cache_fraction / value_bytes)`.
pub fn cache_capacity(machine: &ModelMachine) -> u64 {
    machine.cache_values.floor().max(0.0) as u64
}

/// Relative tolerance of the slack comparisons, so that decimal slacks such as 0.05 behave as
/// the exact decimals they are written as.
const SLACK_TOLERANCE: f64 = 1e-9;

/// Whether `n` tiles along a dimension of extent `domain` are even enough:
/// there is an integer t with `D <= n t <= D / (1 - σ_D)`.
pub fn even_tiles(domain: usize, n: usize, slack: f64) -> bool {
    let t = domain.div_ceil(n);
    ((n * t) as f64) * (1.0 - slack) <= domain as f64 * (1.0 + SLACK_TOLERANCE)
}

/// Whether `tiles` tiles keep `threads` threads busy: `tiles >= T` and an integer k with
/// `(1 - σ_T) T k <= tiles <= T k`.
pub fn parallel_ok(tiles: u64, threads: usize, slack: f64) -> bool {
    if tiles < threads as u64 {
        return false;
    }
    let k = tiles.div_ceil(threads as u64);
    (1.0 - slack) * threads as f64 * k as f64 <= tiles as f64 * (1.0 + SLACK_TOLERANCE)
}

/// The first constraint (cache, parallel efficiency, even tiles) the group violates.
pub fn group_infeasibility(
    analysis: &Analysis,
    machine: &ModelMachine,
    group: usize,
    range: Range<usize>,
    tiles: [usize; 3],
    stream: bool,
) -> Option<Infeasibility> {
    let slack_tests = SlackTests {
        even_tiles,
        parallel_ok,
    };
    group_infeasibility_with(analysis, machine, group, range, tiles, stream, slack_tests)
}

/// A 2-D stencil grouped with others, or, in a program that computes whole columns (a sweep
/// or a 2-D stencil), a group split along z or streamed.
fn column_infeasibility(
    analysis: &Analysis,
    group: usize,
    range: &Range<usize>,
    tiles: [usize; 3],
    stream: bool,
) -> Option<Infeasibility> {
    if !analysis.may_group(range.clone()) {
        let stencil = range
            .clone()
            .find(|&s| analysis.is_plane(s))
            .unwrap_or(range.start);
        return Some(Infeasibility::Plane { group, stencil });
    }
    (analysis.has_sweeps() && (tiles[2] > 1 || stream)).then_some(Infeasibility::Sweep {
        group,
        tiles_z: tiles[2],
        stream,
    })
}

/// The two slack comparisons, in f64 here and in exact rationals in `exact`.
#[derive(Clone, Copy)]
pub struct SlackTests {
    pub even_tiles: fn(usize, usize, f64) -> bool,
    pub parallel_ok: fn(u64, usize, f64) -> bool,
}

/// [`group_infeasibility`] with the slack comparisons given (the cache test is in integers and
/// exact either way).
pub fn group_infeasibility_with(
    analysis: &Analysis,
    machine: &ModelMachine,
    group: usize,
    range: Range<usize>,
    tiles: [usize; 3],
    stream: bool,
    tests: SlackTests,
) -> Option<Infeasibility> {
    let (even_tiles, parallel_ok) = (tests.even_tiles, tests.parallel_ok);
    let dom = analysis.domain;
    if let Some(why) = column_infeasibility(analysis, group, &range, tiles, stream) {
        return Some(why);
    }
    if stream && !machine.streams {
        return Some(Infeasibility::NoStreaming { group });
    }
    for d in 0..3 {
        if !even_tiles(dom[d], tiles[d], machine.slack.size) {
            return Some(Infeasibility::UnevenTiles {
                group,
                dim: d,
                count: tiles[d],
                size: dom[d].div_ceil(tiles[d]),
                domain: dom[d],
                slack: machine.slack.size,
            });
        }
    }
    let total = tiles.iter().map(|&t| t as u64).product::<u64>();
    if total < machine.threads as u64 {
        return Some(Infeasibility::TooFewTiles {
            group,
            tiles: total,
            threads: machine.threads,
        });
    }
    if !parallel_ok(total, machine.threads, machine.slack.cores) {
        return Some(Infeasibility::ParallelEfficiency {
            group,
            tiles: total,
            threads: machine.threads,
            slack: machine.slack.cores,
        });
    }
    let capacity = cache_capacity(machine);
    if machine.gpu {
        let plan = group_shape(analysis, range.clone(), machine.model.store_weight()).block_plan(
            analysis,
            tiles,
            stream,
            machine.block_threads,
        );
        let values = plan.shared_values();
        if values > capacity {
            return Some(Infeasibility::SharedMemory {
                group,
                buffers: plan
                    .buffers
                    .iter()
                    .filter(|b| b.registers.is_none())
                    .count(),
                values,
                capacity,
            });
        }
        return None;
    }
    if stream && tiles[0] > STREAM_TILES_X {
        return Some(Infeasibility::StreamSplitRows {
            group,
            tiles_x: tiles[0],
        });
    }
    let (cells, per) = tile_cells(dom, stream_shape(analysis), tiles, stream);
    let mut touched = std::collections::BTreeSet::new();
    for i in range {
        touched.extend(analysis.touched(i));
        if limits_arrays(stream_shape(analysis)) && touched.len() > machine.group_arrays {
            return Some(Infeasibility::Arrays {
                group,
                stencil: i,
                arrays: touched.len(),
                limit: machine.group_arrays,
            });
        }
        // count * cells <= C * N, in integers (`tile_cells`).
        if touched.len() as u128 * cells > capacity as u128 * per {
            return Some(Infeasibility::Cache {
                group,
                stencil: i,
                arrays: touched.len(),
                tile_values: cells as f64 / per as f64,
                capacity,
            });
        }
    }
    None
}
