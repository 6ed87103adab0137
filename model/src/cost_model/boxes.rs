//! Tile geometry, defined once for the code generator and the model: the loop and store box of
//! a stencil in one tile, the largest loop box over a tile grid, the rolling window of a streamed
//! buffer, and what a group's CUDA kernel keeps per thread block: its block shape and its tile
//! buffers, in shared memory or in per-thread register windows ([`block_plan`]; the shared ones
//! are what the GPU model's shared-memory test counts,
//! [`crate::cost_model::evaluate::GroupShape::shared_values`]).
//!
//! Boxes are half-open intervals `[lo, hi)` in domain coordinates: index 0 is the first domain
//! cell, negative indices and indices `>= D` are halo cells.

use std::ops::Range;

use crate::formats::machine::{ModelMachine, MAX_BLOCK_THREADS};
use crate::language::analysis::{Analysis, ArrayId, ArrayKind, Extent};

/// A half-open interval `[lo, hi)` along one dimension.
pub type Interval = [i64; 2];

/// Tile `t` of tiles of size `tile` along a dimension of extent `domain`, for a stencil with
/// evaluation widths `widths` (`[e-, e+]`) and reference extent `extent`: its core, its loop box
/// (the core grown by the widths, clipped to the box the reference evaluates; a tile at the
/// domain boundary runs the reference's whole extent beyond it) and its store box (the core,
/// plus the reference extent at the domain boundary).
pub fn tile_intervals(
    domain: usize,
    tile: usize,
    t: usize,
    widths: [usize; 2],
    extent: [usize; 2],
) -> (Interval, Interval, Interval) {
    let d = domain as i64;
    let (lo_ref, hi_ref) = (-(extent[0] as i64), d + extent[1] as i64);
    let c0 = (t * tile) as i64;
    let c1 = (((t + 1) * tile).min(domain)) as i64;
    let lo = if c0 == 0 {
        lo_ref
    } else {
        (c0 - widths[0] as i64).max(lo_ref)
    };
    let hi = if c1 == d {
        hi_ref
    } else {
        (c1 + widths[1] as i64).min(hi_ref)
    };
    let slo = if c0 == 0 { lo_ref } else { c0 };
    let shi = if c1 == d { hi_ref } else { c1 };
    ([c0, c1], [lo, hi], [slo, shi])
}

/// The non-empty tiles along a dimension: `ceil(D / tile)`.
pub fn grid(domain: usize, tile: usize) -> usize {
    domain.div_ceil(tile)
}

/// The longest loop box over the `grid(domain, tile)` tiles along one dimension (what a tile
/// buffer must hold), in O(1): the interior length `min(c1 + e+, R) - max(c0 - e-, L)` is
/// concave in the tile index (slope +T while clipped below, 0, then -T while clipped above), so
/// its maximum is at a clipping breakpoint or an end; those and the two boundary tiles are
/// evaluated with [`tile_intervals`].
pub fn longest_loop(domain: usize, tile: usize, widths: [usize; 2], extent: [usize; 2]) -> usize {
    let n = grid(domain, tile);
    let len = |t: usize| {
        let l = tile_intervals(domain, tile, t, widths, extent).1;
        (l[1] - l[0]).max(0) as usize
    };
    let (lo_ref, hi_ref) = (-(extent[0] as i64), (domain + extent[1]) as i64);
    let tl = tile as i64;
    // First tile whose lower end is not clipped: t T - e- >= L.
    let t_a = (lo_ref + widths[0] as i64).max(0).div_euclid(tl)
        + ((lo_ref + widths[0] as i64).max(0).rem_euclid(tl) != 0) as i64;
    // Last tile whose upper end is not clipped: (t + 1) T + e+ <= R.
    let t_b = (hi_ref - tl - widths[1] as i64).div_euclid(tl);
    let last = n as i64 - 1;
    [0, 1, t_a - 1, t_a, t_b, t_b + 1, last - 1, last]
        .into_iter()
        .filter(|&t| (0..=last).contains(&t))
        .map(|t| len(t as usize))
        .max()
        .unwrap_or(0)
}

/// Over the `grid(domain, tile)` tiles along one dimension, `(Σ ⌈len/lanes⌉ lanes, Σ len)` of
/// the loop boxes' lengths `len` ([`tile_intervals`]): the slots a block of `lanes` threads
/// along the dimension walks in rounds, and the cells in them. The tiles whose loop box is not
/// clipped by the reference's extent and not the last one all have length `tile + e- + e+`
/// and are counted together; the others one by one.
pub fn lane_slots(
    domain: usize,
    tile: usize,
    widths: [usize; 2],
    extent: [usize; 2],
    lanes: usize,
) -> (u128, u128) {
    let n = grid(domain, tile);
    let lanes = lanes.max(1) as u128;
    let len = |t: usize| {
        let l = tile_intervals(domain, tile, t, widths, extent).1;
        (l[1] - l[0]).max(0) as u128
    };
    let lo_ref = -(extent[0] as i64);
    let hi_ref = (domain + extent[1]) as i64;
    let tl = tile as i64;
    // The interior: tiles t in [a, b) with t T - e- >= L, (t + 1) T + e+ <= R, t < n - 1.
    let a = ((lo_ref + widths[0] as i64).max(0) + tl - 1)
        .div_euclid(tl)
        .max(1) as usize;
    let b = ((hi_ref - widths[1] as i64).max(0).div_euclid(tl) as usize).min(n.saturating_sub(1));
    let (mut slots, mut cells) = (0u128, 0u128);
    let mut add = |l: u128, times: u128| {
        slots += l.div_ceil(lanes) * lanes * times;
        cells += l * times;
    };
    if a < b {
        add((tile + widths[0] + widths[1]) as u128, (b - a) as u128);
        (0..a).chain(b..n).for_each(|t| add(len(t), 1));
    } else {
        (0..n).for_each(|t| add(len(t), 1));
    }
    (slots, cells)
}

/// The rolling window of stencil `p`'s buffer when its group `range` streams along `dim`: the
/// lines from the oldest one an in-group reader still reads to the newest, where stencil `s`
/// runs `lag_s = e_s^{dim+}` lines ahead of the stream step (`widths[s - range.start]`). None
/// when no stencil of the group reads `p`.
pub fn stream_window(
    analysis: &Analysis,
    range: &Range<usize>,
    widths: &[Extent],
    p: usize,
    dim: usize,
) -> Option<usize> {
    let lag = |s: usize| widths[s - range.start][dim][1] as i64;
    let array = analysis.stencils[p].array;
    let oldest = analysis.stencils[p]
        .readers
        .iter()
        .filter(|c| range.contains(c))
        .map(|&c| lag(c) + analysis.stencils[c].bounds[&array][dim].0 as i64)
        .min()?;
    Some((lag(p) - oldest + 1) as usize)
}

/// The warp width: a CUDA block's x extent is a multiple of it.
pub const WARP: usize = crate::formats::limits::MIN_GPU_THREADS_PER_BLOCK;

/// Values per thread that one group's register windows may hold in all (16 doubles are 32
/// of the 128 registers per thread the kernels budget for; `cuda::REGISTER_BUDGET`).
pub const REGISTER_WINDOW_VALUES: usize = 16;

/// The block shape for loop boxes of `extents` (`[x, y]` per stencil, the longest over the
/// tiles): `bx` a multiple of the warp, `bx * by <= min(MAX_BLOCK_THREADS, max_threads)`, the
/// fewest rounds `Σ ceil(X / bx) ceil(Y / by)` a plane takes (the block's critical path), ties
/// to the fewest threads (fewer idle lanes), then to the wider block (coalescing).
pub fn block_shape(extents: &[[usize; 2]], max_threads: usize) -> [usize; 2] {
    let cap = MAX_BLOCK_THREADS.min(max_threads).max(WARP);
    let mut best = ([WARP, 1], u64::MAX, usize::MAX);
    for bx in [WARP, 2 * WARP, 4 * WARP, 8 * WARP] {
        for by in [1, 2, 4, 8, 16, 32] {
            if bx * by > cap {
                continue;
            }
            let rounds: u64 = extents
                .iter()
                .map(|e| (e[0].div_ceil(bx) * e[1].div_ceil(by)) as u64)
                .sum();
            let threads = bx * by;
            let better = rounds < best.1
                || (rounds == best.1 && threads < best.2)
                || (rounds == best.1 && threads == best.2 && bx > best.0[0]);
            if better {
                best = ([bx, by], rounds, threads);
            }
        }
    }
    best.0
}

/// A tile buffer kept in registers: each thread holds the values of the cells it computes
/// (`rounds[0] x rounds[1]` of them: the block walks the loop box in rounds of `bx x by`
/// cells) for the `window` z planes its readers still read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RegisterWindow {
    pub rounds: [usize; 2],
    pub window: usize,
}

impl RegisterWindow {
    /// Values one thread holds.
    pub fn values(&self) -> usize {
        self.rounds[0] * self.rounds[1] * self.window
    }
}

/// One tile buffer of a thread block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockBuffer {
    pub stencil: usize,
    /// `[x, y, z]`: the longest loop box per dimension and, along z when the group streams,
    /// the rolling window.
    pub extents: [usize; 3],
    /// Set when the buffer lives in registers instead of shared memory.
    pub registers: Option<RegisterWindow>,
}

/// The fewest planes per tile a block must walk for its group to stage: the copy of the next
/// plane overlaps only the computation of the current one, so a block of one plane waits for
/// its whole copy (on an H100, staged without overlap at one plane a block, hdiff, cosmo_hdiff4
/// and cosmo_adv5 ran 1.4-2.4x slower than reading global memory; decision 0028).
pub const STAGE_MIN_PLANES: usize = 2;

/// An array a streamed group reads from global memory (an input, or a stencil of an earlier
/// group), staged in shared memory: each block copies the planes its stencils read, over the
/// hull of their read boxes, into a rolling window of planes, and the stencils read the copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StagedInput {
    pub array: ArrayId,
    /// `[x, y, z]`: the longest hull of the readers' x-y read boxes over the tiles
    /// ([`read_hull`]), and along z the slots of the rolling window: the planes one step reads
    /// and one more, which the block fills with the next step's plane while this step computes.
    pub extents: [usize; 3],
    /// At stream step `t` the group's stencils read planes `t + reach[0] ..= t + reach[1]` of
    /// the array (stencil `c` computes plane `t + lag_c` and reads it at its z bounds).
    pub reach: [i64; 2],
}

impl StagedInput {
    /// Values of shared memory the copy takes.
    pub fn values(&self) -> u64 {
        self.extents.iter().map(|&v| v as u64).product()
    }
}

/// What a group's CUDA kernel keeps per thread block: its block shape, its tile buffers and
/// its staged inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockPlan {
    /// Threads along x (a multiple of [`WARP`]) and y.
    pub block: [usize; 2],
    pub buffers: Vec<BlockBuffer>,
    /// The arrays read from global memory that are staged in shared memory, in array order.
    pub inputs: Vec<StagedInput>,
}

impl BlockPlan {
    /// Values of shared memory the block needs: its buffers that are not in registers and its
    /// staged inputs.
    pub fn shared_values(&self) -> u64 {
        let buffers: u64 = self
            .buffers
            .iter()
            .filter(|b| b.registers.is_none())
            .map(|b| b.extents.iter().map(|&v| v as u64).product::<u64>())
            .sum();
        buffers + self.inputs.iter().map(StagedInput::values).sum::<u64>()
    }
}

/// What a group's thread block may hold: at most `threads` threads, and staged inputs only
/// while all of its shared memory stays within `stage_values` values (0: stage nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockLimits {
    pub threads: usize,
    pub stage_values: u64,
}

impl BlockLimits {
    /// A GPU machine's: its block threads, staging nothing (the default: see [`block_plan`]).
    pub fn of(machine: &ModelMachine) -> BlockLimits {
        BlockLimits {
            threads: machine.block_threads,
            stage_values: 0,
        }
    }

    /// A GPU machine's, staging within the model's shared-memory capacity (`cache_capacity`).
    pub fn staged(machine: &ModelMachine) -> BlockLimits {
        BlockLimits {
            threads: machine.block_threads,
            stage_values: crate::cost_model::evaluate::cache_capacity(machine),
        }
    }
}

/// The tile buffers of the group `range` tiled by `tiles` as the CUDA kernels lay them out, one
/// per stencil that an in-group stencil reads, in stencil order, and the block shape
/// ([`block_shape`] over every stencil's longest x-y loop box, at most `max_threads` threads).
///
/// Extents: the longest loop box per dimension and, along z when the group streams (a GPU
/// group streams along z, [`crate::cost_model::evaluate::stream_shape_on`]), the rolling window.
///
/// A buffer lives in **registers** (a register sliding window, StencilGen's and ARTEMIS's
/// technique for z neighbours) when the group streams, every in-group reader reads it only at
/// x-y offset (0, 0) (any z offset) and has the same x-y widths and extents as the producer (so
/// their loop boxes coincide in every tile and each thread computes, and later reads, the same
/// cells), and the group's register windows stay within [`REGISTER_WINDOW_VALUES`] per thread
/// (taken in stencil order). Such a buffer takes no shared memory and needs no barrier: every
/// value a thread reads it computed itself.
///
/// With `limits.stage_values > 0` (`codegen --stage`), an array the streamed group reads from
/// global memory is **staged** in shared memory ([`StagedInput`], the first step of StencilGen
/// and ARTEMIS) when the block walks at least [`STAGE_MIN_PLANES`] planes and some in-group
/// stencil reads the array at an x or y offset other than 0 (threads share its cells), in array
/// order, while the block's shared memory stays within `limits.stage_values`. Staging uses
/// shared memory the tile buffers leave free within the model's capacity, so it never makes a
/// configuration infeasible and keeps the resident blocks the model assumes. It is off by
/// default: on an H100 it made 3 of 10 programs 1.09-1.23x faster and 7 1.05-1.74x slower, and
/// the planes read per step did not predict which (docs/decisions/0028-input-staging-opt-in.md).
pub fn block_plan(
    analysis: &Analysis,
    range: &Range<usize>,
    widths: &[Extent],
    tiles: [usize; 3],
    stream: bool,
    limits: BlockLimits,
) -> BlockPlan {
    let max_threads = limits.threads;
    let domain = analysis.domain;
    let tile = [0, 1, 2].map(|d| domain[d].div_ceil(tiles[d].max(1)));
    let longest = |s: usize, d: usize| {
        longest_loop(
            domain[d],
            tile[d],
            widths[s - range.start][d],
            analysis.stencils[s].extent[d],
        )
    };
    let extents: Vec<[usize; 2]> = range
        .clone()
        .map(|s| [longest(s, 0), longest(s, 1)])
        .collect();
    let block = block_shape(&extents, max_threads);
    let mut register_values = 0;
    let buffers = range
        .clone()
        .filter(|&p| {
            analysis.stencils[p]
                .readers
                .iter()
                .any(|c| range.contains(c))
        })
        .map(|p| {
            let mut ext = [0, 1, 2].map(|d| longest(p, d));
            let window = stream_window(analysis, range, widths, p, 2).unwrap_or(1);
            if stream {
                ext[2] = window;
            }
            let registers = (stream && pure_z_readers(analysis, range, widths, p))
                .then(|| RegisterWindow {
                    rounds: [ext[0].div_ceil(block[0]), ext[1].div_ceil(block[1])],
                    window,
                })
                .filter(|r| register_values + r.values() <= REGISTER_WINDOW_VALUES);
            register_values += registers.map_or(0, |r| r.values());
            BlockBuffer {
                stencil: p,
                extents: ext,
                registers,
            }
        })
        .collect();
    let mut plan = BlockPlan {
        block,
        buffers,
        inputs: Vec::new(),
    };
    if stream && tile[2] >= STAGE_MIN_PLANES && limits.stage_values > 0 {
        let mut values = plan.shared_values();
        for a in staging_candidates(analysis, range) {
            let input = staged_input(analysis, range, widths, tile, a);
            if values + input.values() <= limits.stage_values {
                values += input.values();
                plan.inputs.push(input);
            }
        }
    }
    plan
}

/// The arrays a group reads from global memory (inputs and stencils of other groups) that some
/// in-group stencil reads at an x or y offset other than 0, in array order.
fn staging_candidates(analysis: &Analysis, range: &Range<usize>) -> Vec<ArrayId> {
    let mut arrays: Vec<ArrayId> = range
        .clone()
        .flat_map(|c| {
            analysis.stencils[c]
                .bounds
                .iter()
                .filter(|(_, b)| b[0] != (0, 0) || b[1] != (0, 0))
                .map(|(&a, _)| a)
        })
        // A field (`fields:`) is read in place: it is small, and has no plane to stage.
        .filter(|&a| match analysis.arrays[a].kind {
            ArrayKind::Input => analysis.arrays[a].dims.is_full(),
            ArrayKind::Stencil(p) => !range.contains(&p),
        })
        .collect();
    arrays.sort_unstable();
    arrays.dedup();
    arrays
}

/// How array `a` is staged for the streamed group `range` with tiles of size `tile`.
fn staged_input(
    analysis: &Analysis,
    range: &Range<usize>,
    widths: &[Extent],
    tile: [usize; 3],
    a: ArrayId,
) -> StagedInput {
    let longest = |d: usize| {
        (0..grid(analysis.domain[d], tile[d]))
            .filter_map(|t| read_hull(analysis, range, widths, tile, a, d, t))
            .map(|h| (h[1] - h[0]).max(0) as usize)
            .max()
            .unwrap_or(0)
    };
    let reach = stage_reach(analysis, range, widths, a);
    StagedInput {
        array: a,
        extents: [
            longest(0),
            longest(1),
            (reach[1] - reach[0] + 2).max(2) as usize,
        ],
        reach,
    }
}

/// The hull, along dimension `d` in tile `t`, of the cells of array `a` that the stencils of
/// the group `range` (tiles of size `tile`) read: each reader's loop box grown by its bounds on
/// `a`. None when no stencil of the group reads `a`.
pub fn read_hull(
    analysis: &Analysis,
    range: &Range<usize>,
    widths: &[Extent],
    tile: [usize; 3],
    a: ArrayId,
    d: usize,
    t: usize,
) -> Option<Interval> {
    range
        .clone()
        .filter_map(|c| {
            let info = &analysis.stencils[c];
            let b = info.bounds.get(&a)?[d];
            let l = tile_intervals(
                analysis.domain[d],
                tile[d],
                t,
                widths[c - range.start][d],
                info.extent[d],
            )
            .1;
            Some([l[0] + b.0 as i64, l[1] + b.1 as i64])
        })
        .reduce(|h, r| [h[0].min(r[0]), h[1].max(r[1])])
}

/// The planes of array `a` the stencils of the streamed group `range` read at stream step `t`,
/// relative to `t`: `[min, max]` over readers `c` of `lag_c + ` its z bounds on `a`, where
/// `lag_c` is `c`'s forward z width.
pub fn stage_reach(
    analysis: &Analysis,
    range: &Range<usize>,
    widths: &[Extent],
    a: ArrayId,
) -> [i64; 2] {
    range
        .clone()
        .filter_map(|c| {
            let b = analysis.stencils[c].bounds.get(&a)?[2];
            let lag = widths[c - range.start][2][1] as i64;
            Some([lag + b.0 as i64, lag + b.1 as i64])
        })
        .reduce(|h, r| [h[0].min(r[0]), h[1].max(r[1])])
        .unwrap_or([0, 0])
}

/// Whether every in-group reader of `p` reads it only at x-y offset (0, 0) and has `p`'s x-y
/// widths and extents (then its loop box is `p`'s in every tile).
fn pure_z_readers(analysis: &Analysis, range: &Range<usize>, widths: &[Extent], p: usize) -> bool {
    let info = &analysis.stencils[p];
    let w = |s: usize| widths[s - range.start];
    info.readers.iter().filter(|c| range.contains(c)).all(|&c| {
        let reader = &analysis.stencils[c];
        let bounds = reader.bounds[&info.array];
        (0..2).all(|d| {
            bounds[d] == (0, 0) && w(c)[d] == w(p)[d] && reader.extent[d] == info.extent[d]
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `lane_slots` counts the interior tiles together; it equals the sum over every tile.
    #[test]
    fn lane_slots_equal_the_sum_over_every_tile() {
        for domain in [1, 7, 32, 60, 100, 256] {
            for tile in [1, 3, 16, 32, 50, 256] {
                for widths in [[0, 0], [1, 2], [5, 0], [9, 9], [40, 3]] {
                    for extent in [[0, 0], [2, 1], [4, 4]] {
                        for lanes in [1, 32, 64] {
                            let (mut slots, mut cells) = (0u128, 0u128);
                            for t in 0..grid(domain, tile) {
                                let l = tile_intervals(domain, tile, t, widths, extent).1;
                                let len = (l[1] - l[0]).max(0) as u128;
                                slots += len.div_ceil(lanes as u128) * lanes as u128;
                                cells += len;
                            }
                            assert_eq!(
                                lane_slots(domain, tile, widths, extent, lanes),
                                (slots, cells),
                                "domain {domain} tile {tile} widths {widths:?} extent {extent:?} lanes {lanes}"
                            );
                        }
                    }
                }
            }
        }
    }
}
