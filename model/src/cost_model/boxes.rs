//! Tile geometry, defined once for the code generator and the model: the loop and store box of
//! a stencil in one tile, the largest loop box over a tile grid, the rolling window of a streamed
//! buffer, and the tile buffers a group's CUDA kernel keeps per thread block (what the GPU
//! model's shared-memory test counts, [`crate::cost::GroupShape::shared_values`]).
//!
//! Boxes are half-open intervals `[lo, hi)` in domain coordinates: index 0 is the first domain
//! cell, negative indices and indices `>= D` are halo cells.

use std::ops::Range;

use crate::analysis::{Analysis, Extent};

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

/// The tile buffers of the group `range` tiled by `tiles` as the CUDA kernels lay them out, one
/// per stencil that an in-group stencil reads: `(stencil, [x, y, z] extents)`, the longest loop
/// box per dimension, and along z the rolling window when the group streams (along z: a GPU
/// group streams along z, [`crate::cost::stream_shape_on`]).
pub fn block_buffers(
    analysis: &Analysis,
    range: &Range<usize>,
    widths: &[Extent],
    tiles: [usize; 3],
    stream: bool,
) -> Vec<(usize, [usize; 3])> {
    let domain = analysis.domain;
    let tile = [0, 1, 2].map(|d| domain[d].div_ceil(tiles[d].max(1)));
    range
        .clone()
        .filter(|&p| {
            analysis.stencils[p]
                .readers
                .iter()
                .any(|c| range.contains(c))
        })
        .map(|p| {
            let w = widths[p - range.start];
            let e = analysis.stencils[p].extent;
            let mut ext = [0, 1, 2].map(|d| longest_loop(domain[d], tile[d], w[d], e[d]));
            if stream {
                ext[2] = stream_window(analysis, range, widths, p, 2).unwrap_or(1);
            }
            (p, ext)
        })
        .collect()
}
