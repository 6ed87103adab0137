//! Which consecutive steps of a group share one row loop of the OpenMP kernel.

use absinthe_model::cost_model::boxes::Interval;
use absinthe_model::language::analysis::Analysis;

use super::types::StencilStep;

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
