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

/// Why no configuration satisfies the constraints, naming the binding one; `None` when a
/// feasible configuration exists. Groups are checked as fixed by `options`, else one stencil per
/// group (the most permissive grouping: fusing only adds arrays to a tile's working set).
pub fn explain_infeasible(
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &MilpOptions,
) -> Option<String> {
    use crate::program::DIMS;
    let n = analysis.stencils.len();
    let counts = admissible_tile_counts(analysis.domain, machine, options);
    let range = options.tile_range(analysis.domain);
    for d in 0..3 {
        if counts[d].is_empty() {
            return Some(format!(
                "even tiles: no tile count along {} between {} and {} splits the domain extent {} into tiles within the size slack {}",
                DIMS[d], range[d].0, range[d].1, analysis.domain[d], machine.slack.size
            ));
        }
    }
    let max_tiles: u64 = counts
        .iter()
        .map(|c| *c.iter().max().unwrap_or(&1) as u64)
        .product();
    if max_tiles < machine.threads as u64 {
        return Some(format!(
            "parallelism: at most {max_tiles} tiles are possible (tile counts up to {}x{}x{}), fewer than the {} threads",
            counts[0].iter().max().unwrap_or(&1),
            counts[1].iter().max().unwrap_or(&1),
            counts[2].iter().max().unwrap_or(&1),
            machine.threads
        ));
    }
    let groups: Vec<std::ops::Range<usize>> = match &options.fixed_groups {
        Some(g) => crate::cost::ranges_of(g),
        None => (0..n).map(|i| i..i + 1).collect(),
    };
    let capacity = crate::cost::cache_capacity(machine);
    let cells: u128 = analysis.domain.iter().map(|&d| d as u128).product();
    for r in groups {
        if best_group_tiling(analysis, machine, r.clone(), &counts).is_some() {
            continue;
        }
        let names: Vec<&str> = r
            .clone()
            .map(|s| analysis.stencils[s].name.as_str())
            .collect();
        let mut touched = std::collections::BTreeSet::new();
        for s in r.clone() {
            touched.extend(analysis.touched(s));
        }
        // The largest tile count that is also parallel-efficient.
        let mut best_parallel = 0u64;
        for &x in &counts[0] {
            for &y in &counts[1] {
                for &z in &counts[2] {
                    let t = (x * y * z) as u64;
                    if parallel_ok(t, machine.threads, machine.slack.cores) {
                        best_parallel = best_parallel.max(t);
                    }
                }
            }
        }
        if best_parallel == 0 {
            return Some(format!(
                "parallel efficiency: no admissible tile counts give a multiple of the {} threads within the slack {}",
                machine.threads, machine.slack.cores
            ));
        }
        let per_tile = cells as f64 / best_parallel as f64;
        return Some(format!(
            "cache: the group [{}] touches {} arrays; even with {best_parallel} tiles a tile holds {per_tile:.0} cells, so its working set is {:.0} values, more than the cache capacity of {capacity} values (cache_bytes x cache_fraction / value_bytes)",
            names.join(", "),
            touched.len(),
            per_tile * touched.len() as f64
        ));
    }
    None
}
