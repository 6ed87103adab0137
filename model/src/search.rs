//! Exact optimisation by enumeration, independent of any MILP solver: the reference the MILP
//! is tested against, and a solver in its own right for small domains.
//!
//! The cost of a group depends only on its own stencils and tiles (see `cost::group_cost`), so
//! the optimum is a shortest path over group boundaries: for every contiguous range of stencils,
//! the cheapest feasible tiling found by enumerating every admissible tile-count triple; then a
//! dynamic program over where groups end. Every grouping and every tiling is considered.

use crate::analysis::Analysis;
use crate::cost::{even_tiles, group_cost, parallel_ok, Configuration};
use crate::machine::ModelMachine;
use crate::milp::MilpOptions;

/// Tile counts per dimension that satisfy the user's bounds and the even-tiles constraint.
pub fn admissible_tile_counts(
    domain: [usize; 3],
    machine: &ModelMachine,
    options: &MilpOptions,
) -> [Vec<usize>; 3] {
    let range = options.tile_range(domain);
    [0, 1, 2].map(|d| {
        (range[d].0..=range[d].1)
            .filter(|&n| even_tiles(domain[d], n, machine.slack.size))
            .collect()
    })
}

/// The best tiling of the stencils `range` fused into one group: (tiles, seconds), or None when
/// no admissible tiling is feasible.
pub fn best_group_tiling(
    analysis: &Analysis,
    machine: &ModelMachine,
    range: std::ops::Range<usize>,
    counts: &[Vec<usize>; 3],
) -> Option<([usize; 3], f64)> {
    let mut best: Option<([usize; 3], f64)> = None;
    for &nx in &counts[0] {
        for &ny in &counts[1] {
            for &nz in &counts[2] {
                let total = (nx * ny * nz) as u64;
                if !parallel_ok(total, machine.threads, machine.slack.cores) {
                    continue;
                }
                let g = group_cost(analysis, machine, 0, range.clone(), [nx, ny, nz]);
                if g.infeasible.is_some() {
                    continue;
                }
                if best.is_none_or(|b| g.time < b.1) {
                    best = Some(([nx, ny, nz], g.time));
                }
            }
        }
    }
    best
}

/// The optimum over all groupings and tilings allowed by `options`: (configuration, seconds).
pub fn exhaustive(
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &MilpOptions,
) -> Option<(Configuration, f64)> {
    let n = analysis.stencils.len();
    let counts = admissible_tile_counts(analysis.domain, machine, options);
    // best[e] = cheapest way to cover stencils 0..e, with the start of its last group.
    let mut best: Vec<Option<(f64, usize, [usize; 3])>> = vec![None; n + 1];
    best[0] = Some((0.0, 0, [0; 3]));
    for end in 1..=n {
        for start in 0..end {
            let Some((before, _, _)) = best[start] else {
                continue;
            };
            if let Some(fixed) = &options.fixed_groups {
                let one_group = fixed[start..end].iter().all(|&g| g == fixed[start]);
                let boundary_ok = (start == 0 || fixed[start] != fixed[start - 1])
                    && (end == n || fixed[end] != fixed[end - 1]);
                if !one_group || !boundary_ok {
                    continue;
                }
            }
            if let Some((tiles, t)) = best_group_tiling(analysis, machine, start..end, &counts) {
                let total = before + t;
                if best[end].is_none_or(|b| total < b.0) {
                    best[end] = Some((total, start, tiles));
                }
            }
        }
    }
    let (total, _, _) = best[n]?;
    let mut ranges = Vec::new();
    let mut end = n;
    while end > 0 {
        let (_, start, tiles) = best[end]?;
        ranges.push((start..end, tiles));
        end = start;
    }
    ranges.reverse();
    let mut groups = vec![0; n];
    let mut tiles = Vec::new();
    for (g, (r, t)) in ranges.into_iter().enumerate() {
        for s in r {
            groups[s] = g;
        }
        tiles.push(t);
    }
    Some((Configuration { groups, tiles }, total))
}
