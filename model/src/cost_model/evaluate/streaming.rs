//! Streaming and the row streams in flight: where and how far a group streams, the cells of a
//! tile's working set streamed or not, and the two charges that count streams (the
//! `group_arrays` limit and crowding).

use crate::formats::machine::ModelMachine;
use crate::language::analysis::Analysis;

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
