//! The ABSINTHE cost model (docs/MODEL.md): the one definition of what a configuration costs.
//!
//! A [`Configuration`] is a group index per stencil and tile counts per group. [`evaluate`]
//! derives everything else — evaluation widths, loads, stores, load boundaries — and returns
//! the exact integer access counts of every term (the same counts `learn` fits the parameters
//! to) together with their cost in seconds and the feasibility verdict.
//!
//! The cost of a group depends only on the group's own stencils, its tile counts and which of
//! its stencils are read after it: [`group_cost`] is that function and `evaluate` sums it.

use std::fmt;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::analysis::{Analysis, ArrayId, ArrayKind, Extent};
use crate::formula::{
    overhead, stencil_counts, stencil_terms, Numeric, StencilCounts, StencilTerms,
};
use crate::machine::{ModelMachine, Params};
use crate::program::DIMS;

/// A point in the search space: which stencils are fused and how each group is tiled.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Configuration {
    /// Group index per stencil: starts at 0 and grows by 0 or 1.
    pub groups: Vec<usize>,
    /// Tile counts (n^x, n^y, n^z) per group.
    pub tiles: Vec<[usize; 3]>,
    /// The groups that stream along the program's stream dimension ([`stream_shape`]), in
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
        crate::program::check_group_indices(&self.groups, stencils)?;
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

/// Where and how far groups stream: along `dim` (z when any access has a z offset, else y,
/// the outer horizontal dimension), keeping `window` lines of every array in cache instead of
/// the tile's whole extent along `dim`. Streaming along y, a tile's planes (independent: no
/// access has a z offset) are walked one after another, so one plane's window is live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamShape {
    pub dim: usize,
    /// `1 + max_i e_i^{dim+} + max r^{dim-}`: the planes a rolling buffer keeps, bounded for any
    /// grouping by the largest forward extent plus the largest backward reach of any access
    /// (the code generator's windows never exceed it).
    pub window: usize,
    /// On a GPU: every group streams (along z; [`stream_shape_on`]).
    pub always: bool,
}

/// The program's [`StreamShape`] on a CPU.
pub fn stream_shape(analysis: &Analysis) -> StreamShape {
    let dim = if analysis
        .stencils
        .iter()
        .any(|s| s.accesses.iter().any(|(_, o)| o[2] != 0))
    {
        2
    } else {
        1
    };
    stream_shape_along(analysis, dim, false)
}

/// The program's [`StreamShape`] on `machine`: on a CPU [`stream_shape`]; on a GPU along z
/// whatever the accesses (thread blocks own x-y tiles and walk z, the technique of StencilGen
/// and ARTEMIS; a horizontal kernel keeps one plane per buffer), and every group streams.
pub fn stream_shape_on(analysis: &Analysis, machine: &ModelMachine) -> StreamShape {
    if machine.gpu {
        stream_shape_along(analysis, 2, true)
    } else {
        stream_shape(analysis)
    }
}

fn stream_shape_along(analysis: &Analysis, dim: usize, always: bool) -> StreamShape {
    let forward = analysis
        .stencils
        .iter()
        .map(|s| s.extent[dim][1])
        .max()
        .unwrap_or(0);
    let backward = analysis
        .stencils
        .iter()
        .flat_map(|s| s.accesses.iter())
        .map(|(_, o)| (-o[dim]).max(0) as usize)
        .max()
        .unwrap_or(0);
    StreamShape {
        dim,
        window: 1 + forward + backward,
        always,
    }
}

/// On a CPU a group streams only with whole rows: one tile along x. A streamed step's face is
/// then one contiguous run of memory per array (whole rows of one plane along y, whole rows of
/// a tile's y extent along z); split along x, it is one short run per row, and each starts a
/// new stream for the prefetchers. The model has no count for that: cosmo_pgrad_256 streamed
/// along z in tiles 2-4 wide along x ran 39-44 ms against 26.8 ms in whole-row tiles, both
/// predicted at 10-14 ms (docs/decisions/0023-streaming-on-a-cpu.md), and the training programs'
/// streamed shapes have whole rows (`learn::training::streamed_sizes`). Not on a GPU, where
/// thread blocks own x-y tiles.
pub const STREAM_TILES_X: usize = 1;

/// Whether streaming shrinks the working set of a tiling ([`tile_cells`]): `W Π_{d≥s} n^d <
/// Π_{d≥s} D^d` (along z: the window is shorter than the tile; along y: shorter than the tile's
/// rows times its planes), and on a CPU the tiles span whole rows ([`STREAM_TILES_X`]). On a
/// GPU (`shape.always`) always: streaming never grows a block's shared memory (a buffer's
/// window is at most `1 + e- + e+` planes, its z loop box at least that, see
/// `boxes::stream_window`).
pub fn prefers_stream(domain: [usize; 3], shape: StreamShape, tiles: [usize; 3]) -> bool {
    if shape.always {
        return true;
    }
    if tiles[0] > STREAM_TILES_X {
        return false;
    }
    let (plain, plain_tiles) = tile_cells(domain, shape, tiles, false);
    let (streamed, streamed_tiles) = tile_cells(domain, shape, tiles, true);
    streamed * plain_tiles < plain * streamed_tiles
}

/// The cells of one tile's working set per array, as a fraction `(cells, tiles)` of integers:
/// `D^x D^y D^z / N` without streaming, `W Π_{d<s} D^d / Π_{d<s} n^d` with it (along z the
/// window of `W` planes of the tile's cross-section, along y `W` rows of one plane).
pub fn tile_cells(
    domain: [usize; 3],
    shape: StreamShape,
    tiles: [usize; 3],
    stream: bool,
) -> (u128, u128) {
    let mut cells = 1u128;
    let mut total = 1u128;
    for d in 0..3 {
        if !stream || d < shape.dim {
            cells *= domain[d] as u128;
            total *= tiles[d] as u128;
        } else if d == shape.dim {
            cells *= shape.window as u128;
        }
    }
    (cells, total)
}

/// Whether the machine's `group_arrays` limit applies to the groups of a program on a CPU:
/// when its groups stream along y (no access has a z offset), streamed or not. Each step of a
/// group streamed along y is one row of every array it touches, all of them short streams in
/// flight at once: four independent chains in one such group (13 arrays) ran 1.25x slower
/// than the same stencils in two groups, predicted 0.5% faster. Along z a step is a tile's
/// whole cross-section, one long run per array: cosmo_pgrad ran 1.15x slower when a limit of
/// 10 split its one group. Unstreamed groups of such programs are limited too, or the optimum
/// escapes the limit by not streaming: the four-field calibration program at 256x128x60 did
/// so and ran 1.34x slower (docs/decisions/0013-group-arrays-limit.md).
pub fn limits_arrays(shape: StreamShape) -> bool {
    shape.dim == 1
}

/// Whether a group of stream weight `stream_weight` (its stencils' `s` together: arrays loaded,
/// a store twice) tiled by `tiles` keeps more than `limit` row streams in flight: `s` times the
/// rows of one tile step that do not continue each other in memory, the tile's planes `D^z /
/// n^z` when its rows span the domain along x (one tile along x), else its rows times its
/// planes `D^y D^z / (n^y n^z)`. Compared in integers: `s D^z > limit n^z`, or `s D^y D^z >
/// limit n^y n^z`. Whether the group streams does not enter: refitted to the six programs'
/// measured times, exempting streamed groups (3 lines per array) predicted no better
/// (docs/decisions/0014-crowding-charge.md), and so the time stays independent of streaming.
/// `limit` 0: never crowded (the machine charges nothing).
pub fn crowded(domain: [usize; 3], tiles: [usize; 3], stream_weight: u64, limit: u64) -> bool {
    if limit == 0 {
        return false;
    }
    let (s, limit) = (stream_weight as u128, limit as u128);
    let [_, dy, dz] = domain.map(|d| d as u128);
    let [nx, ny, nz] = tiles.map(|t| t as u128);
    if nx <= 1 {
        s * dz > limit * nz
    } else {
        s * dy * dz > limit * ny * nz
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

/// What a store counts in the stream weights, against 1 for a load: a store to slow memory
/// first reads the line it writes (write-allocate) and later writes it back, so it moves
/// twice the bytes of a load. Counted once, `learn` fits the base parameter `B` to the stores
/// of its training stencils, and `B` charges every loading stencil of a real program for a
/// store it does not make (docs/decisions/0006-stores-count-twice.md).
pub const STORE_WEIGHT: u64 = 2;

/// Weights (w, w^x, w^y, w^z) of one part of the model for one stencil.
pub type Weights = [u64; 4];

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
    /// `max(fast_peel, slow_peel)`.
    pub peel: f64,
    /// `max(fast_body, slow_body)`.
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
    /// fill ([`GroupShape::shared_values`]).
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

/// The cost of one group.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupCost {
    pub range: Range<usize>,
    pub tiles: [usize; 3],
    /// Whether the group streams (see [`StreamShape`]).
    pub stream: bool,
    /// Whether the group is [`crowded`] under the machine's `params.crowded.row_streams`: its
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

/// What the model derives for one stencil of a group that does not depend on tile counts.
#[derive(Clone, Debug, PartialEq)]
pub struct StencilShape {
    pub widths: Extent,
    pub loads: Vec<ArrayId>,
    pub store: bool,
    pub fast_weights: Weights,
    pub base_weights: Weights,
    pub stream_weights: Weights,
    pub compute_weights: Weights,
    /// `[fast, base, stream, compute]` weights as the count formulas take them.
    pub weights_u128: [[u128; 4]; 4],
}

/// Everything about the stencils `range` fused into one group that does not depend on its tile
/// counts: widths, loads, stores, weights, and the arrays its tiles keep in cache. The cost for
/// any tiling follows from it ([`GroupShape::time`], [`group_cost_of`]), so a search over
/// tilings derives it once per range.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupShape {
    pub range: Range<usize>,
    pub stencils: Vec<StencilShape>,
    /// Distinct arrays touched by the group (the cache test counts them).
    pub arrays_touched: usize,
    /// `Σ s` over the group's stencils: what [`crowded`] multiplies the rows by.
    pub stream_weight: u64,
}

/// The tile-independent part of [`group_cost`].
pub fn group_shape(analysis: &Analysis, range: Range<usize>) -> GroupShape {
    let in_group = |s: usize| range.contains(&s);
    let start = range.start;
    let len = range.len();

    // Evaluation widths, last stencil first.
    let mut widths: Vec<Extent> = vec![[[0; 2]; 3]; len];
    for i in range.clone().rev() {
        let mut e = [[0usize; 2]; 3];
        for &r in &analysis.stencils[i].readers {
            if !in_group(r) {
                continue;
            }
            let b = analysis.stencils[r].bounds[&analysis.stencils[i].array];
            let er = widths[r - start];
            for d in 0..3 {
                e[d][0] = e[d][0].max(er[d][0] + (-b[d].0).max(0) as usize);
                e[d][1] = e[d][1].max(er[d][1] + b[d].1.max(0) as usize);
            }
        }
        widths[i - start] = e;
    }

    let mut stencils = Vec::with_capacity(len);
    let mut touched = std::collections::BTreeSet::new();
    for i in range.clone() {
        touched.extend(analysis.touched(i));
        let info = &analysis.stencils[i];
        let e = widths[i - start];
        let ext = |d: usize| (e[d][0] + e[d][1]) as u64;
        let produced_in_group =
            |a: ArrayId| matches!(analysis.arrays[a].kind, ArrayKind::Stencil(p) if in_group(p));
        let earlier_readers =
            |a: ArrayId| (start..i).filter(move |&j| analysis.stencils[j].bounds.contains_key(&a));
        let mut loads = Vec::new();
        // Lines loaded per dimension, both sides together.
        let mut lines = [0u64; 3];
        for &a in info.bounds.keys() {
            if produced_in_group(a) {
                continue;
            }
            let alpha = |s: usize, d: usize, side: usize| -> u64 {
                let bd = analysis.stencils[s].bounds[&a][d];
                let reach = if side == 0 { -bd.0 } else { bd.1 }.max(0) as usize;
                (widths[s - start][d][side] + reach) as u64
            };
            let earlier: Vec<usize> = earlier_readers(a).collect();
            if earlier.is_empty() {
                loads.push(a);
                for (d, l) in lines.iter_mut().enumerate() {
                    *l += alpha(i, d, 0) + alpha(i, d, 1);
                }
            } else {
                for (d, l) in lines.iter_mut().enumerate() {
                    for side in 0..2 {
                        let before = earlier
                            .iter()
                            .map(|&j| alpha(j, d, side))
                            .max()
                            .unwrap_or(0);
                        *l += alpha(i, d, side).saturating_sub(before);
                    }
                }
            }
        }
        let store = info.is_output || info.readers.iter().any(|&r| !in_group(r));
        let w = STORE_WEIGHT * store as u64;
        let s_weight = loads.len() as u64 + w;
        let m = (s_weight > 0) as u64;
        let c = info.fetch_weight;
        let fast_weights = [c, c * ext(0), c * ext(1), c * ext(2)];
        let f = info.operations;
        let compute_weights = [f, f * ext(0), f * ext(1), f * ext(2)];
        let base_weights = [m, m * ext(0), m * ext(1), m * ext(2)];
        let stream_weights = [
            s_weight,
            lines[0] + w * ext(0),
            lines[1] + w * ext(1),
            lines[2] + w * ext(2),
        ];
        stencils.push(StencilShape {
            widths: e,
            loads,
            store,
            fast_weights,
            base_weights,
            stream_weights,
            compute_weights,
            weights_u128: [fast_weights, base_weights, stream_weights, compute_weights]
                .map(|w| w.map(u128::from)),
        });
    }
    let stream_weight = stencils.iter().map(|s| s.stream_weights[0]).sum();
    GroupShape {
        range,
        stencils,
        arrays_touched: touched.len(),
        stream_weight,
    }
}

impl StencilShape {
    /// The access counts for tile counts `n` on a domain `dom` (`formula::stencil_counts`).
    pub fn counts(&self, dom: [u128; 3], n: [u128; 3]) -> Counts {
        let params = [[0.0f64; 2]; 4];
        let mut numeric = Numeric {
            n,
            params: &params,
            crowded: None,
        };
        let c = stencil_counts(&mut numeric, dom, &self.weights_u128);
        let part = |p: usize| PeelBodyCount {
            peel: c[p][0].unwrap_or(0),
            body: c[p][1].unwrap_or(0),
        };
        Counts {
            fast: part(0),
            slow_base: part(1),
            slow_stream: part(2),
            compute: part(3),
        }
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

/// The seconds of a stencil's counts, its group `crowded` or not ([`crowded`]):
/// `formula::stencil_terms` in f64.
pub fn stencil_seconds(params: &Params, counts: &Counts, crowded: bool) -> StencilTerms<f64> {
    let table = params.table();
    let mut numeric = Numeric {
        n: [0; 3],
        params: &table,
        crowded: crowding_charge(params, crowded),
    };
    stencil_terms(&mut numeric, &counts.table(), "")
}

/// The loop-bound overhead's access count of a group of `len` stencils with `tiles_total`
/// tiles: what `(B^b + B^v)` multiplies (`formula::LOOP_BOUND_ACCESSES` per stencil and tile).
pub fn overhead_count(tiles_total: u64, len: usize) -> u128 {
    crate::formula::LOOP_BOUND_ACCESSES * tiles_total as u128 * len as u128
}

/// The loop-bound overhead in seconds (`formula::overhead` in f64).
pub fn overhead_seconds(params: &Params, tiles_total: u64, len: usize) -> f64 {
    let table = params.table();
    let mut numeric = Numeric {
        n: [0; 3],
        params: &table,
        crowded: None,
    };
    overhead(&mut numeric, &(tiles_total as u128), len as u128)
}

/// The crowding charge of a group ([`formula::Numeric`]'s `crowded`): `Q^b` when it is crowded
/// and the machine charges it.
fn crowding_charge(params: &Params, crowded: bool) -> Option<f64> {
    (crowded && params.crowded.stream_body > 0.0).then_some(params.crowded.stream_body)
}

impl GroupShape {
    /// Whether the group is [`crowded`] with `tiles` under the machine's limit.
    pub fn crowded(&self, domain: [usize; 3], params: &Params, tiles: [usize; 3]) -> bool {
        crowded(
            domain,
            tiles,
            self.stream_weight,
            params.crowded.row_streams,
        )
    }

    /// The group's time for `tiles` (feasibility not checked): the same number as
    /// [`group_cost_of`]'s `time`, without building the report.
    pub fn time(&self, analysis: &Analysis, params: &Params, tiles: [usize; 3]) -> f64 {
        self.times(analysis, params, tiles).0
    }

    /// `(time, fast)` for `tiles`: the group's time as [`GroupShape::time`], and its fast-memory
    /// part alone (`Σ fast_peel + fast_body` plus the loop overhead), a lower bound of the time
    /// that only grows when the range grows (widths, and so fast weights, only grow).
    pub fn times(&self, analysis: &Analysis, params: &Params, tiles: [usize; 3]) -> (f64, f64) {
        let dom = analysis.domain.map(|d| d as u128);
        let table = params.table();
        let crowded = self.crowded(analysis.domain, params, tiles);
        let mut numeric = Numeric {
            n: tiles.map(|t| t as u128),
            params: &table,
            crowded: crowding_charge(params, crowded),
        };
        let (mut sum, mut fast) = (0.0, 0.0);
        for s in &self.stencils {
            let counts = stencil_counts(&mut numeric, dom, &s.weights_u128);
            let t = stencil_terms(&mut numeric, &counts, "");
            sum += t.peel + t.body;
            fast += t.fast_peel + t.fast_body;
        }
        let total = tiles.iter().map(|&t| t as u64).product::<u64>();
        let overhead = overhead_seconds(params, total, self.stencils.len());
        (sum + overhead, fast + overhead)
    }

    /// Whether the group's working set fits the cache with `tiles`, streaming where that
    /// shrinks it ([`prefers_stream`]; `stream` None: never): `arrays * cells <= C * N`
    /// ([`tile_cells`]), in integers, and `arrays <= group_arrays` where [`limits_arrays`].
    pub fn fits_cache(
        &self,
        analysis: &Analysis,
        machine: &ModelMachine,
        stream: Option<StreamShape>,
        tiles: [usize; 3],
    ) -> bool {
        let shape = stream.unwrap_or(StreamShape {
            dim: 2,
            window: 1,
            always: false,
        });
        let streams = stream.is_some_and(|s| prefers_stream(analysis.domain, s, tiles));
        if machine.gpu {
            return self.shared_values(analysis, tiles, streams, machine.block_threads)
                <= cache_capacity(machine);
        }
        let (cells, total) = tile_cells(analysis.domain, shape, tiles, streams);
        (!limits_arrays(stream_shape(analysis)) || self.arrays_touched <= machine.group_arrays)
            && self.arrays_touched as u128 * cells <= cache_capacity(machine) as u128 * total
    }
}

impl GroupShape {
    /// On a GPU: the values of shared memory one thread block of this group needs with
    /// `tiles`, streamed along z or not, in blocks of at most `max_threads` threads: the sum of
    /// its tile buffers' sizes as the CUDA kernels lay them out (`boxes::block_plan`, halos and
    /// rolling windows included), less the buffers kept in register windows. Inputs and stored
    /// arrays are read and written in global memory and not counted.
    pub fn shared_values(
        &self,
        analysis: &Analysis,
        tiles: [usize; 3],
        stream: bool,
        max_threads: usize,
    ) -> u64 {
        self.block_plan(analysis, tiles, stream, max_threads)
            .shared_values()
    }

    /// The block shape and tile buffers of this group's CUDA kernel (`boxes::block_plan`).
    pub fn block_plan(
        &self,
        analysis: &Analysis,
        tiles: [usize; 3],
        stream: bool,
        max_threads: usize,
    ) -> crate::boxes::BlockPlan {
        let widths: Vec<Extent> = self.stencils.iter().map(|s| s.widths).collect();
        crate::boxes::block_plan(analysis, &self.range, &widths, tiles, stream, max_threads)
    }
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
        &group_shape(analysis, range),
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
    let dom = analysis.domain.map(|d| d as u128);
    let n = tiles.map(|t| t as u128);
    let params = &machine.params;
    let tiles_total = tiles.iter().map(|&t| t as u64).product::<u64>();
    let crowded = shape.crowded(analysis.domain, params, tiles);
    let stencils: Vec<StencilCost> = shape
        .stencils
        .iter()
        .map(|s| {
            let counts = s.counts(dom, n);
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
        let plan = group_shape(analysis, range.clone()).block_plan(
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
