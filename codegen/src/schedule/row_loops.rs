//! Which consecutive steps of a group share one row loop of the OpenMP kernel.

use absinthe_model::cost_model::boxes::Interval;
use absinthe_model::language::analysis::Analysis;

use super::access::shifted;
use super::types::{Prefetch, StencilStep};

/// The most arithmetic (`Expr::operations`, lets included) that stencils sharing one row loop
/// may do per element. Sharing saves a row loop's overhead and lets a reader take its
/// producer's value from a register, but one body with several large stencils runs out of
/// vector registers and spills, and walks every stream at once: cosmo_hdiff4_256 with its four
/// fully inlined outputs (about 50 operations each) in one loop took 22.8 ms, in two loops of
/// two 18.5 ms, in four loops 17.2 ms (same kernel otherwise, `g++ -O3 -march=native`, the FMA
/// build, medians of five interleaved runs of 16).
pub const ROW_LOOP_OPERATIONS: u64 = 64;

/// Whether stencil `s`, with loop boxes `loop_box` and lag `lag`, may join the row loop
/// `row_loop` (indices into `steps`, the group's steps so far). Not when a step of the loop
/// writes a buffer and its global array (three loops per row), when their loop boxes or lags
/// differ, or when `s` reads a producer of that loop where the shared loop has not computed it
/// yet: only an earlier plane, an earlier row of this plane, or this very element are there
/// (`#pragma omp simd` rules out the element before). Nor when the loop's arithmetic would pass
/// [`ROW_LOOP_OPERATIONS`].
pub(super) fn joins_row_loop(
    analysis: &Analysis,
    steps: &[StencilStep],
    row_loop: &[usize],
    s: usize,
    loop_box: &[Vec<Interval>; 3],
    lag: i64,
) -> bool {
    let operations = |s: usize| analysis.stencils[s].operations;
    let split_store = |st: &StencilStep| st.buffer.is_some() && st.global.is_some();
    let first = &steps[row_loop[0]];
    // A sweep's row loop walks its levels in its own order: it shares it with no other step.
    let sweep = |s: usize| analysis.stencils[s].computation.is_sweep();
    if sweep(s) || row_loop.iter().any(|&n| sweep(steps[n].stencil)) {
        return false;
    }
    row_loop
        .iter()
        .map(|&n| operations(steps[n].stencil))
        .sum::<u64>()
        + operations(s)
        <= ROW_LOOP_OPERATIONS
        && first.loop_box == *loop_box
        && first.lag == lag
        && row_loop.iter().all(|&n| !split_store(&steps[n]))
        && analysis.stencils[s].accesses.iter().all(|(a, off)| {
            let in_loop = row_loop
                .iter()
                .any(|&n| analysis.stencils[steps[n].stencil].array == *a);
            !in_loop || off[2] < 0 || (off[2] == 0 && (off[1] < 0 || (off[1] == 0 && off[0] == 0)))
        })
}

/// The cells of one chunk of a row step in a group streamed along y on a CPU. Each stream step
/// runs its row loops chunk by chunk across the row instead of each loop over the whole row:
/// with whole 256-cell rows, cosmo_adv5's optimum (three row loops per step) ran 1.5x slower per
/// cell than with 64-cell rows of the same volume, its inlined form as fast on either, and
/// chunks of 64 took 12% off it at 256x256x60 (decision 0033).
pub const ROW_CHUNK: i64 = 64;

/// How many chunks a stream step's rows take: the widest row loop's cells over `chunk`, at
/// least one (the first chunk takes the remainder, so no chunk is shorter than `chunk`).
pub fn row_chunks(spans: impl IntoIterator<Item = i64>, chunk: i64) -> i64 {
    (spans.into_iter().max().unwrap_or(0) / chunk).max(1)
}

/// The cells `[lo, hi)` that chunk `c` of `chunks` covers of a row loop over `[x0, x1)`: the
/// chunks end `chunk` cells apart, counted back from `x1`, so a loop whose box reaches `r`
/// cells further than its reader's is always `r` cells ahead of it (what the reader reads of
/// it is there). An empty chunk has `hi <= lo`.
pub fn chunk_cells(x0: i64, x1: i64, c: i64, chunks: i64, chunk: i64) -> (i64, i64) {
    let lo = if c == 0 {
        x0
    } else {
        x0.max(x1 - (chunks - c) * chunk)
    };
    (lo, x1 - (chunks - 1 - c) * chunk)
}

/// Bytes one prefetch brings: a cache line of the CPUs the kernels are built for.
pub const PREFETCH_BYTES: usize = 64;

/// What the row loops of a streamed group on a CPU prefetch. Each 3-D global array the group
/// reads or stores is prefetched by the first row loop that touches it, one line per block of
/// cells, from the next line along the stream (`stream_dim`: the next row along y, the next
/// plane along z): at the row and plane of its furthest read, moved one line along the stream
/// (a read of `(i, j - 1, k + 1)` and `(i, j, k)` streamed along z fetches `(ib, j, k + 2)`), to
/// write when the group only stores it. A group of one row loop prefetches nothing, nor do row
/// loops of sweeps (levels in their own order).
///
/// Why: a group of several row loops walks each array's rows in bursts, loop after loop, and
/// there the hardware prefetchers seem to fall behind (the cause was not measured).
/// cosmo_divdamp_256's group streamed along z (two row loops) ran 16.3-18.6 ms at 32-row tiles
/// and 8.9-10.9 ms with these prefetches; lapchain1_256's group streamed along y (four row
/// loops) 4.9-6.0 ms and 3.2-4.8 ms (Xeon 207, two threads). A group of one row loop streams
/// each array without a break, and the blocks only cost: the generated vertical programs ran
/// slower with them (docs/decisions/0041-stream-prefetch.md).
pub(super) fn stream_prefetches<'a>(
    analysis: &Analysis,
    steps: &'a [StencilStep],
    loops: &[Vec<usize>],
    stream_dim: usize,
) -> Vec<Vec<Prefetch>> {
    if loops.len() < 2 {
        return vec![Vec::new(); loops.len()];
    }
    // The arrays an earlier row loop prefetches.
    let mut taken: Vec<&'a str> = Vec::new();
    loops
        .iter()
        .map(|lp| {
            if lp
                .iter()
                .any(|&n| analysis.stencils[steps[n].stencil].computation.is_sweep())
            {
                return Vec::new();
            }
            // Per array, in order of first touch: its furthest row and plane, and whether it is
            // only stored.
            let mut wanted: Vec<(&'a str, i32, i32, bool)> = Vec::new();
            let mut want = |array: &'a str, oy: i32, oz: i32, write: bool| match wanted
                .iter_mut()
                .find(|w| w.0 == array)
            {
                Some(w) => *w = (array, w.1.max(oy), w.2.max(oz), w.3 && write),
                None => wanted.push((array, oy, oz, write)),
            };
            for &n in lp {
                let st = &steps[n];
                for r in st.reads.iter().filter(|r| !r.buffer) {
                    if analysis.dims_of(&r.array).is_full() {
                        want(&r.array, r.offset[1], r.offset[2], false);
                    }
                }
                if st.global.is_some() && analysis.dims_of(&st.name).is_full() {
                    want(&st.name, 0, 0, true);
                }
            }
            wanted
                .into_iter()
                .filter(|w| {
                    let new = !taken.contains(&w.0);
                    if new {
                        taken.push(w.0);
                    }
                    new
                })
                .map(|(array, oy, oz, write)| {
                    let (oy, oz) = if stream_dim == 2 {
                        (oy, oz + 1)
                    } else {
                        (oy + 1, oz)
                    };
                    Prefetch {
                        address: format!(
                            "&g_{array}[ib + {} * SY + {} * SZ]",
                            shifted("j", oy),
                            shifted("k", oz)
                        ),
                        write,
                    }
                })
                .collect()
        })
        .collect()
}

/// Marks the steps of a group whose values the OpenMP kernel stores with non-temporal stores,
/// and returns per row loop the store of its first such step (whose lines the loop's blocks
/// follow), if any. A step qualifies when the group is one row loop (which prefetches nothing,
/// so no write prefetch brings the line in), the model calls the group memory-bound
/// (`memory_bound`, per stencil, the same for every stencil of a group), and it stores a 3-D
/// array that no stencil reads (a final output), not as a sweep.
///
/// Why: an ordinary store first reads the line it writes (write-allocate), so a loop bound by
/// memory that writes one array for every few it reads moves a quarter or more of its bytes
/// only to overwrite them; a non-temporal store writes the line without reading it. A group
/// of one row loop streams its arrays without a break, as the hardware prefetchers like. In
/// groups of several row loops (tile buffers, rows in chunks) the stores gained nothing and
/// the loop shape they need cost up to 1.5x (docs/decisions/0050-nontemporal-stores.md).
pub(super) fn nontemporal_steps(
    analysis: &Analysis,
    steps: &mut [StencilStep],
    loops: &[Vec<usize>],
    memory_bound: &[bool],
) -> Vec<Option<String>> {
    let one_loop = loops.len() == 1;
    for st in steps.iter_mut() {
        let info = &analysis.stencils[st.stencil];
        let unread = analysis
            .stencils
            .iter()
            .all(|t| t.accesses.iter().all(|(a, _)| *a != info.array));
        st.nontemporal = one_loop
            && memory_bound[st.stencil]
            && st.global.is_some()
            && st.buffer.is_none()
            && !info.computation.is_sweep()
            && analysis.dims_of(&st.name).is_full()
            && unread;
    }
    loops
        .iter()
        .map(|lp| {
            lp.iter()
                .find(|&&n| steps[n].nontemporal)
                .and_then(|&n| steps[n].store.clone())
        })
        .collect()
}

/// Each row loop's cells per tile along x (one interval per tile index along x): those of the
/// loop's first step, which every step sharing the loop has too.
pub fn loop_x_boxes<'a>(steps: &'a [StencilStep], loops: &[Vec<usize>]) -> Vec<&'a [Interval]> {
    loops
        .iter()
        .map(|lp| &steps[lp[0]].loop_box[0][..])
        .collect()
}

/// Per row loop of a streamed group, from each loop's cells per tile along x (`x_boxes`,
/// [`loop_x_boxes`]) and the group's chunk (`chunk` cells), whether its prefetched blocks can
/// all be whole blocks of `cells`: every non-empty chunk of the loop, in every tile along x, has
/// at least `cells` cells. Then the kernel runs each block over exactly `cells` cells, the last
/// block of a chunk moved back to end with the chunk (it computes again, to the same values,
/// cells the block before computed): a loop of a constant trip count, which the compiler
/// vectorises without run-time checks or a remainder loop. On an AMD EPYC (Zen 4) whole blocks took 0.66-0.85 of
/// the time of blocks with a run-time end on most horizontal programs, at both sizes
/// (docs/decisions/0042-whole-prefetch-blocks.md).
pub fn whole_blocks(x_boxes: &[&[Interval]], chunk: i64, cells: i64) -> Vec<bool> {
    let tiles = x_boxes.iter().map(|b| b.len()).min().unwrap_or(0);
    x_boxes
        .iter()
        .map(|own| {
            (0..tiles).all(|t| {
                let chunks = row_chunks(x_boxes.iter().map(|b| b[t][1] - b[t][0]), chunk);
                (0..chunks).all(|c| {
                    let (lo, hi) = chunk_cells(own[t][0], own[t][1], c, chunks, chunk);
                    hi <= lo || hi - lo >= cells
                })
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{chunk_cells, row_chunks, whole_blocks, ROW_CHUNK};

    #[test]
    fn chunks_cover_each_loop_in_order_and_keep_producers_ahead() {
        for chunk in 1..6 {
            for x0 in -3..3 {
                for x1 in x0..x0 + 20 {
                    let chunks = row_chunks([x1 - x0, 7], chunk);
                    assert!(chunks >= 1);
                    // The chunks of [x0, x1) are consecutive, in order, and cover it once.
                    let mut at = x0;
                    for c in 0..chunks {
                        let (lo, hi) = chunk_cells(x0, x1, c, chunks, chunk);
                        if hi > lo {
                            assert_eq!(lo, at, "chunk {c} of [{x0}, {x1}) by {chunk}");
                            at = hi;
                        }
                    }
                    assert_eq!(at, x1, "[{x0}, {x1}) by {chunk} in {chunks}");
                    // A producer whose loop ends r cells further than its reader's has, by the
                    // end of every chunk, computed what the reader's cells so far read r ahead.
                    for r in 0..3 {
                        let p1 = x1 + r;
                        for c in 0..chunks {
                            let (lo, hi) = chunk_cells(x0, x1, c, chunks, chunk);
                            let (_, p_hi) = chunk_cells(x0 - r, p1, c, chunks, chunk);
                            if hi > lo {
                                assert!(p_hi >= hi + r, "r {r} chunk {c}: {p_hi} < {hi} + {r}");
                            }
                        }
                    }
                }
            }
        }
        // No chunk is shorter than `chunk` on the widest loop: the first takes the remainder.
        assert_eq!(row_chunks([70], 64), 1);
        assert_eq!(row_chunks([262, 258], 64), 4);
        assert_eq!(chunk_cells(-3, 259, 0, 4, 64), (-3, 67));
        assert_eq!(chunk_cells(-3, 259, 3, 4, 64), (195, 259));
    }

    #[test]
    fn whole_blocks_only_where_every_chunk_holds_a_block() {
        // Rows of 66 and 64 cells: one chunk each, both at least a block of 8.
        assert_eq!(
            whole_blocks(&[&[[-1, 65]], &[[0, 64]]], ROW_CHUNK, 8),
            [true, true]
        );
        // A 262-cell loop takes four chunks; a 72-cell loop beside it has two empty chunks, then
        // 8 cells and 64; a 70-cell loop 6 cells and 64.
        assert_eq!(
            whole_blocks(&[&[[-3, 259]], &[[0, 72]]], ROW_CHUNK, 8),
            [true, true]
        );
        assert_eq!(
            whole_blocks(&[&[[-3, 259]], &[[0, 70]]], ROW_CHUNK, 8),
            [true, false]
        );
        // A 132-cell loop beside it takes two chunks; a 67-cell loop then has 3 cells in its first.
        assert_eq!(
            whole_blocks(&[&[[0, 132]], &[[0, 67]]], ROW_CHUNK, 8),
            [true, false]
        );
        // Rows shorter than a block, in any tile along x.
        assert_eq!(whole_blocks(&[&[[0, 64], [64, 70]]], ROW_CHUNK, 8), [false]);
        // Where whole blocks are allowed, every non-empty chunk holds one.
        for a in 1..200 {
            for b in [1, 7, 8, 9, 63, 64, 65, 130] {
                let boxes: [&[[i64; 2]]; 2] = [&[[0, a]], &[[-1, b]]];
                let whole = whole_blocks(&boxes, ROW_CHUNK, 8);
                let chunks = row_chunks([a, b + 1], ROW_CHUNK);
                for (l, own) in boxes.iter().enumerate() {
                    let short = (0..chunks).any(|c| {
                        let (lo, hi) = chunk_cells(own[0][0], own[0][1], c, chunks, ROW_CHUNK);
                        hi > lo && hi - lo < 8
                    });
                    assert_eq!(whole[l], !short, "loops of {a} and {b} cells, loop {l}");
                }
            }
        }
    }
}
