//! Exact optimisation by enumeration, independent of any MILP solver: the reference the MILP
//! is tested against, the `dp` solver (`solvers::optimize::optimize_dp`), and the columns of the
//! range MILP (`crate::encodings::ranges`).
//!
//! The cost of a group depends only on its own stencils and tiles (see `evaluate::group_cost`), so
//! the optimum is a shortest path over group boundaries: for every contiguous range of stencils,
//! the cheapest feasible tiling found by enumerating every admissible, parallel-efficient tile
//! triple ([`range_table`], on all CPUs, the range's tile-independent [`CostModel::Group`]
//! derived once); then a dynamic program over where groups end ([`shortest_grouping`]). Ranges
//! are skipped only when provably useless: their working set fits no tiling (and then no longer
//! range from the same start fits), or their fast-memory time alone exceeds a known
//! configuration's cost.
//!
//! The searches are written against [`CostModel`]: the functions named `..._with` take any
//! model, the others the ABSINTHE model ([`Absinthe`]) of the machine they are given.

use std::time::Instant;

use crate::cost_model::evaluate::{even_tiles, parallel_ok, Configuration, StreamShape};
use crate::cost_model::model::{Absinthe, CostModel};
use crate::cost_model::options::SearchSpace;
use crate::formats::limits::MAX_TILINGS;
use crate::formats::machine::ModelMachine;
use crate::language::analysis::Analysis;
use crate::support::parallel::parallel_map;

/// Tile counts per dimension that satisfy the user's bounds and the even-tiles constraint.
///
/// Every such count, unless their triples would exceed [`MAX_TILINGS`] or a dimension spans more
/// than [`EXACT_SCAN`] counts: then the longest dimensions keep a ladder of counts instead (see
/// [`thinned_counts`]), so that the search's memory and time stay bounded on any domain `check`
/// accepts. [`tile_count_note`] says when that happens.
pub fn admissible_tile_counts(
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &SearchSpace,
) -> [Vec<usize>; 3] {
    tile_counts_and_ratios(analysis, machine, options).0
}

/// Counts along one dimension spanning at most this many are listed exactly (before the
/// [`MAX_TILINGS`] bound on their triples).
pub const EXACT_SCAN: usize = 1 << 16;

/// The counts per dimension and, for each thinned dimension, the ladder ratio it was thinned
/// with.
fn tile_counts_and_ratios(
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &SearchSpace,
) -> ([Vec<usize>; 3], [Option<f64>; 3]) {
    let domain = analysis.domain;
    let range = options.tile_range_of(analysis);
    let slack = machine.slack.size;
    let mut ratio: [Option<f64>; 3] =
        [0, 1, 2].map(|d| (range[d].1 - range[d].0 >= EXACT_SCAN).then_some(1.01));
    loop {
        let counts = [0, 1, 2].map(|d| match ratio[d] {
            None => (range[d].0..=range[d].1)
                .filter(|&n| even_tiles(domain[d], n, slack))
                .collect(),
            Some(r) => thinned_counts(domain[d], range[d], slack, r),
        });
        let triples: u128 = counts.iter().map(|c| c.len() as u128).product();
        let longest = (0..3).max_by_key(|&d| counts[d].len()).unwrap_or(0);
        let coarsest = ratio[longest].is_some_and(|r| r >= 16.0);
        if triples <= MAX_TILINGS as u128 || coarsest {
            return (counts, ratio);
        }
        ratio[longest] = Some(ratio[longest].map_or(1.01, |r| 1.0 + (r - 1.0) * 2.0));
    }
}

/// A ladder of tile counts along a dimension of `extent` cells, within `range`, that tile
/// evenly: the 16 smallest counts, the counts whose tiles are 1 to 16 cells, and the counts whose
/// tiles grow from there by the factor `ratio`.
pub fn thinned_counts(extent: usize, range: (usize, usize), slack: f64, ratio: f64) -> Vec<usize> {
    let (lo, hi) = range;
    let mut counts: Vec<usize> = (lo..=hi.min(lo.saturating_add(15))).collect();
    let mut size = 1usize;
    while size <= extent {
        counts.push(extent.div_ceil(size).clamp(lo, hi));
        let next = if size < 16 {
            size + 1
        } else {
            (size as f64 * ratio).ceil() as usize
        };
        size = next.max(size + 1);
    }
    counts.retain(|&n| even_tiles(extent, n, slack));
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// A note for the user when [`admissible_tile_counts`] thins a dimension: which, how many counts
/// it keeps, and by what ladder. None when every admissible count is searched.
pub fn tile_count_note(
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &SearchSpace,
) -> Option<String> {
    let domain = analysis.domain;
    let (counts, ratio) = tile_counts_and_ratios(analysis, machine, options);
    let parts: Vec<String> = (0..3)
        .filter_map(|d| {
            ratio[d].map(|r| {
                format!(
                    "{} tile counts along {} (extent {}; tile sizes 1 to 16, then growing by {:.0}%)",
                    counts[d].len(),
                    crate::language::program::DIMS[d],
                    domain[d],
                    (r - 1.0) * 100.0
                )
            })
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "the domain admits too many tilings to list them all (the bound is {MAX_TILINGS} triples); the search keeps {}",
            parts.join(", ")
        )
    })
}

/// The tile-count triples a group may take: admissible per dimension and parallel-efficient,
/// in lexicographic order (x, then y, then z), each with its product.
pub fn admissible_tilings(
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &SearchSpace,
) -> Vec<([usize; 3], u64)> {
    let counts = admissible_tile_counts(analysis, machine, options);
    let mut out = Vec::new();
    for &nx in &counts[0] {
        for &ny in &counts[1] {
            for &nz in &counts[2] {
                let total = (nx * ny * nz) as u64;
                if parallel_ok(total, machine.threads, machine.slack.cores) {
                    out.push(([nx, ny, nz], total));
                }
            }
        }
    }
    out
}

/// The `k` best tilings of a group whose shape is known: (tiles, seconds) of the cheapest
/// feasible triples of `tilings` (see [`admissible_tilings`]), cheapest first, ties in the order
/// of `tilings`; empty when none fits the cache. And the least fast-memory time over the feasible
/// tilings (`+inf` when none): a lower bound of the time of this range and of every longer range
/// from the same start (see [`CostModel::group_seconds`]; longer ranges also admit fewer
/// tilings).
fn best_tilings_and_bound<M: CostModel>(
    analysis: &Analysis,
    model: &M,
    group: &M::Group,
    tilings: &[([usize; 3], u64)],
    stream: Option<StreamShape>,
    k: usize,
) -> (Vec<Tiling>, f64) {
    let mut best: Vec<Tiling> = Vec::with_capacity(k + 1);
    let mut fast_min = f64::INFINITY;
    for &(tiles, _) in tilings {
        if !model.fits(analysis, group, stream, tiles) {
            continue;
        }
        let (t, fast) = model.group_seconds(analysis, group, tiles);
        if t.is_nan() {
            continue;
        }
        fast_min = fast_min.min(fast);
        // After the last entry not cheaper than `t`: earlier triples win ties.
        let at = best.partition_point(|b| b.1 <= t);
        if at < k {
            best.insert(at, (tiles, t));
            best.truncate(k);
        }
    }
    (best, fast_min)
}

/// The best tiling of the stencils `range` fused into one group: (tiles, seconds), or None when
/// no admissible tiling is feasible.
pub fn best_group_tiling(
    analysis: &Analysis,
    machine: &ModelMachine,
    range: std::ops::Range<usize>,
    options: &SearchSpace,
) -> Option<([usize; 3], f64)> {
    let tilings = admissible_tilings(analysis, machine, options);
    let model = Absinthe::new(machine);
    let shape = model.group(analysis, range);
    best_tilings_and_bound(
        analysis,
        &model,
        &shape,
        &tilings,
        options.stream_shape(analysis, machine),
        1,
    )
    .0
    .first()
    .copied()
}

/// A range's tiling and its seconds.
pub type Tiling = ([usize; 3], f64);

/// The best tilings of every contiguous range of stencils that may form a group: the input of
/// the DP ([`exhaustive`], [`k_shortest_groupings`]) and the columns of the range MILP
/// (`model::ranges`).
#[derive(Clone, Debug)]
pub struct RangeTable {
    /// `best[start][len - 1]`: the `k` cheapest (tiles, seconds) of the range
    /// `start..start + len`, cheapest first; empty when it cannot be one group (no feasible
    /// tiling, or the fixed groups forbid it). A list stops at the first length whose working set
    /// fits no tiling (longer ranges touch more arrays), or whose fast-memory time alone, with a
    /// lower bound of covering the stencils before it, exceeds the cost of the `k`-th best known
    /// configuration: such ranges, and all longer ones from the same start, are in none of the
    /// `k` best configurations.
    pub best: Vec<Vec<Vec<Tiling>>>,
    /// How many tilings per range, and configurations, the table keeps.
    pub k: usize,
    /// Ranges whose shape and tilings were evaluated.
    pub ranges_evaluated: usize,
    /// Group-time evaluations (range x tiling).
    pub evaluations: usize,
    /// Starts whose list was cut by the bound.
    pub pruned_starts: usize,
    /// Whether the search space's deadline stopped the table before it was complete: its
    /// optimum is then not the model's. [`k_shortest_groupings`] finds no cover in it, and the
    /// DP, the range MILP and the inline search refuse it with an error.
    pub timed_out: bool,
    /// The program's domain and stream shape (a configuration read from the table streams
    /// where that shrinks its working set: `Configuration::smallest_working_set`).
    pub domain: [usize; 3],
    pub stream: Option<StreamShape>,
}

impl RangeTable {
    /// The best tiling of `start..end`, if that range may be a group.
    pub fn get(&self, start: usize, end: usize) -> Option<([usize; 3], f64)> {
        self.tilings(start, end).first().copied()
    }

    /// The best tilings of `start..end`, cheapest first (empty when it may not be a group).
    pub fn tilings(&self, start: usize, end: usize) -> &[Tiling] {
        self.best[start]
            .get(end - start - 1)
            .map_or(&[], |v| v.as_slice())
    }

    /// Every range that may be a group: (start, end, tiles, seconds).
    pub fn ranges(&self) -> impl Iterator<Item = (usize, usize, [usize; 3], f64)> + '_ {
        self.best.iter().enumerate().flat_map(|(s, row)| {
            row.iter()
                .enumerate()
                .filter_map(move |(l, b)| b.first().map(|&(t, sec)| (s, s + l + 1, t, sec)))
        })
    }
}

/// Whether the fixed groups (if any) and the 2-D stencils allow `start..end` as one group.
fn range_allowed(
    analysis: &Analysis,
    options: &SearchSpace,
    start: usize,
    end: usize,
    n: usize,
) -> bool {
    if !analysis.may_group(start..end) {
        return false;
    }
    let Some(fixed) = &options.fixed_groups else {
        return true;
    };
    fixed[start..end].iter().all(|&g| g == fixed[start])
        && (start == 0 || fixed[start] != fixed[start - 1])
        && (end == n || fixed[end] != fixed[end - 1])
}

/// One start's list of a [`RangeTable`], extended by [`extend_row`].
#[derive(Clone, Debug, Default)]
struct Row {
    best: Vec<Vec<Tiling>>,
    /// No longer range from this start can be a group (cache, end of program, or the bound).
    closed: bool,
    pruned: bool,
    /// Closed by the search space's deadline.
    timed_out: bool,
    ranges: usize,
    evaluations: usize,
}

/// Ranges tried before the bound is known; the best cover by ranges this short is the bound.
const FIRST_PASS_LENGTH: usize = 8;

/// Builds the [`RangeTable`] on `threads` threads (0: one per available CPU).
///
/// First every range of up to [`FIRST_PASS_LENGTH`] stencils; the cheapest cover by those is a
/// known configuration's cost `U`. Then longer ranges, start by start, until the bound
/// `lb(0..start) + fast(start..end) > U` closes the start, where `lb` sums each stencil's least
/// possible fast-memory time and `fast` is the range's least fast-memory time over its feasible
/// tilings (it only grows with the range). No range of an optimal configuration is dropped.
pub fn range_table(
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &SearchSpace,
    threads: usize,
) -> RangeTable {
    range_table_k(analysis, machine, options, threads, 1)
}

/// [`range_table`] keeping the `k` best tilings of every range, and pruning with the `k`-th
/// best known configuration instead of the best: no range of the `k` best configurations is
/// dropped (the input of [`k_shortest_groupings`]).
pub fn range_table_k(
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &SearchSpace,
    threads: usize,
    k: usize,
) -> RangeTable {
    crate::cost_model::evaluate::debug_check_weights(analysis, &machine.params);
    range_table_with(analysis, &Absinthe::new(machine), options, threads, k)
}

/// [`range_table_k`] for any cost model: the table of `model`'s `k` best tilings of every
/// range, on `model.machine()`'s search space.
pub fn range_table_with<M: CostModel>(
    analysis: &Analysis,
    model: &M,
    options: &SearchSpace,
    threads: usize,
    k: usize,
) -> RangeTable {
    let machine = model.machine();
    let k = k.max(1);
    let n = analysis.stencils.len();
    let tilings = admissible_tilings(analysis, machine, options);
    let first = parallel_map(n, threads, |start| {
        let mut row = Row::default();
        extend_row(
            analysis,
            model,
            options,
            &tilings,
            start,
            &mut row,
            FIRST_PASS_LENGTH,
            f64::INFINITY,
            k,
        );
        row
    });
    let table_of = |rows: Vec<Row>| table_of(rows, analysis, machine, options, k);
    let mut table = table_of(first.clone());
    // The k-th best cover by short ranges costs at least the k-th best configuration.
    let covers = k_shortest_groupings(&table, n, k);
    let bound = if covers.len() == k {
        covers[k - 1].1
    } else {
        f64::INFINITY
    };
    if first.iter().all(|r| r.closed) || table.timed_out {
        return table;
    }
    // lb(0..s): the sum of the stencils' bounds.
    let mut prefix = vec![0.0; n + 1];
    for i in 0..n {
        prefix[i + 1] = prefix[i] + model.stencil_bound(analysis, i);
    }
    let rows = parallel_map(n, threads, |start| {
        let mut row = first[start].clone();
        if !row.closed {
            let slack = bound * (1.0 + 1e-9) - prefix[start];
            extend_row(
                analysis, model, options, &tilings, start, &mut row, n, slack, k,
            );
        }
        row
    });
    table = table_of(rows);
    table
}

fn table_of(
    rows: Vec<Row>,
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &SearchSpace,
    k: usize,
) -> RangeTable {
    RangeTable {
        k,
        domain: analysis.domain,
        stream: options.stream_shape(analysis, machine),
        ranges_evaluated: rows.iter().map(|r| r.ranges).sum(),
        evaluations: rows.iter().map(|r| r.evaluations).sum(),
        pruned_starts: rows.iter().filter(|r| r.pruned).count(),
        timed_out: rows.iter().any(|r| r.timed_out),
        best: rows.into_iter().map(|r| r.best).collect(),
    }
}

/// Extends `row` (the ranges from `start`) up to length `max_len`, closing it at the cache
/// limit, at the end of the program, when a range's least fast-memory time exceeds `slack`, or
/// at the search space's deadline.
#[allow(clippy::too_many_arguments)]
fn extend_row<M: CostModel>(
    analysis: &Analysis,
    model: &M,
    options: &SearchSpace,
    tilings: &[([usize; 3], u64)],
    start: usize,
    row: &mut Row,
    max_len: usize,
    slack: f64,
    k: usize,
) {
    let n = analysis.stencils.len();
    let stream = options.stream_shape(analysis, model.machine());
    while !row.closed && row.best.len() < max_len {
        let end = start + row.best.len() + 1;
        if end > n {
            row.closed = true;
            break;
        }
        if options.deadline.is_some_and(|d| Instant::now() >= d) {
            row.closed = true;
            row.timed_out = true;
            break;
        }
        let group = model.group(analysis, start..end);
        // Longer ranges touch at least as many arrays: none of them fits either.
        if !tilings
            .iter()
            .any(|&(t, _)| model.fits(analysis, &group, stream, t))
        {
            row.closed = true;
            break;
        }
        row.ranges += 1;
        row.evaluations += tilings.len();
        let (best, fast) = best_tilings_and_bound(analysis, model, &group, tilings, stream, k);
        if fast > slack {
            // This range and every longer one from `start` cost more than a known
            // configuration, whatever covers the stencils before them.
            row.closed = true;
            row.pruned = true;
            break;
        }
        let allowed = range_allowed(analysis, options, start, end, n);
        row.best.push(if allowed { best } else { Vec::new() });
        if end == n {
            row.closed = true;
        }
    }
}

/// The optimum over all groupings and tilings allowed by `options`: (configuration, seconds).
pub fn exhaustive(
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &SearchSpace,
) -> Option<(Configuration, f64)> {
    let table = range_table(analysis, machine, options, 0);
    shortest_grouping(&table, analysis.stencils.len())
}

/// [`exhaustive`] for any cost model: `model`'s optimum over all groupings and tilings allowed
/// by `options` on `model.machine()`.
pub fn exhaustive_with<M: CostModel>(
    analysis: &Analysis,
    model: &M,
    options: &SearchSpace,
) -> Option<(Configuration, f64)> {
    let table = range_table_with(analysis, model, options, 0, 1);
    shortest_grouping(&table, analysis.stencils.len())
}

/// The cheapest cover of stencils `0..n` by ranges of `table`: a shortest path over group
/// boundaries. (configuration, seconds), or None when no cover exists.
pub fn shortest_grouping(table: &RangeTable, n: usize) -> Option<(Configuration, f64)> {
    k_shortest_groupings(table, n, 1).into_iter().next()
}

/// The `k` cheapest covers of stencils `0..n` by ranges of `table` and their tilings (at most
/// `table.k` per range), cheapest first: the `k` shortest paths over group boundaries, by a DP
/// that keeps the `k` best partial covers of every prefix. Every configuration appears once
/// (its last group, that group's tiling and the cover before it tell it apart). Ties go to the
/// earlier start, cover and tiling, so `k = 1` is [`shortest_grouping`]. None from a table its
/// deadline cut short ([`RangeTable::timed_out`]).
pub fn k_shortest_groupings(table: &RangeTable, n: usize, k: usize) -> Vec<(Configuration, f64)> {
    if table.timed_out {
        return Vec::new();
    }
    /// A partial cover of `0..end`: its seconds, the start of its last group, that group's
    /// tiling (index into `table.tilings`) and the cover of `0..start` (index into `best[start]`).
    #[derive(Clone, Copy)]
    struct Path {
        total: f64,
        start: usize,
        tiling: usize,
        before: usize,
    }
    let mut best: Vec<Vec<Path>> = vec![Vec::new(); n + 1];
    best[0].push(Path {
        total: 0.0,
        start: 0,
        tiling: 0,
        before: 0,
    });
    for end in 1..=n {
        let mut candidates = Vec::new();
        for start in 0..end {
            for (before, p) in best[start].iter().enumerate() {
                for (tiling, &(_, t)) in table.tilings(start, end).iter().enumerate() {
                    candidates.push(Path {
                        total: p.total + t,
                        start,
                        tiling,
                        before,
                    });
                }
            }
        }
        // Stable: equal totals keep the order start, cover, tiling.
        candidates.sort_by(|a, b| a.total.total_cmp(&b.total));
        candidates.truncate(k);
        best[end] = candidates;
    }
    (0..best[n].len())
        .map(|index| {
            let total = best[n][index].total;
            let mut ranges = Vec::new();
            let (mut end, mut index) = (n, index);
            while end > 0 {
                let p = best[end][index];
                ranges.push((p.start..end, table.tilings(p.start, end)[p.tiling].0));
                (end, index) = (p.start, p.before);
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
            let config =
                Configuration::new(groups, tiles).smallest_working_set(table.domain, table.stream);
            (config, total)
        })
        .collect()
}

/// The `k` best configurations over all groupings and tilings allowed by `options`, by the
/// model: (configuration, seconds), cheapest first; fewer when fewer exist.
pub fn k_best(
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &SearchSpace,
    k: usize,
    threads: usize,
) -> Vec<(Configuration, f64)> {
    let table = range_table_k(analysis, machine, options, threads, k);
    k_shortest_groupings(&table, analysis.stencils.len(), k)
}

/// [`k_best`] for any cost model: `model`'s `k` best configurations on `model.machine()`.
pub fn k_best_with<M: CostModel>(
    analysis: &Analysis,
    model: &M,
    options: &SearchSpace,
    k: usize,
    threads: usize,
) -> Vec<(Configuration, f64)> {
    let table = range_table_with(analysis, model, options, threads, k);
    k_shortest_groupings(&table, analysis.stencils.len(), k)
}

/// Why no configuration satisfies the constraints, naming the binding one; `None` when a
/// feasible configuration exists. Groups are checked as fixed by `options`, else one stencil per
/// group (the most permissive grouping: fusing only adds arrays to a tile's working set).
pub fn explain_infeasible(
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &SearchSpace,
) -> Option<String> {
    use crate::language::program::DIMS;
    let n = analysis.stencils.len();
    let counts = admissible_tile_counts(analysis, machine, options);
    let range = options.tile_range_of(analysis);
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
        Some(g) => crate::cost_model::evaluate::ranges_of(g),
        None => (0..n).map(|i| i..i + 1).collect(),
    };
    let capacity = crate::cost_model::evaluate::cache_capacity(machine);
    let cells: u128 = analysis.domain.iter().map(|&d| d as u128).product();
    for r in groups {
        let names: Vec<&str> = r
            .clone()
            .map(|s| analysis.stencils[s].name.as_str())
            .collect();
        let fused = !analysis.may_group(r.clone());
        if let Some(plane) = r.clone().find(|&s| fused && analysis.is_plane(s)) {
            return Some(format!(
                "fixed groups (constraints.groups or --fix-groups): the group [{}] holds `{}`, a 2-D stencil, which is a group of its own",
                names.join(", "),
                analysis.stencils[plane].name
            ));
        }
        if best_group_tiling(analysis, machine, r.clone(), options).is_some() {
            continue;
        }
        let mut touched = std::collections::BTreeSet::new();
        for s in r.clone() {
            touched.extend(analysis.touched(s));
        }
        let shape = crate::cost_model::evaluate::stream_shape(analysis);
        if crate::cost_model::evaluate::limits_arrays(shape) && touched.len() > machine.group_arrays
        {
            return Some(format!(
                "group_arrays: the group [{}] touches {} arrays, more than the machine's limit of {} arrays a group in a program streamed along y (`group_arrays` in the machine file, or --group-arrays)",
                names.join(", "),
                touched.len(),
                machine.group_arrays
            ));
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
