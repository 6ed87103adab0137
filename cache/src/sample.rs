//! Estimated counts of one group from a sample of its walk: what a search that prices every
//! (group range, tiling) by its misses could afford (docs/MODEL.md, "Sampled counts").
//!
//! A group's tiles are translates of one another and its streamed steps repeat, so past the
//! first tiles of a thread (cold caches, the domain's edge) every access site misses at a
//! steady rate. The estimate walks thread 0's share of the group through the exact counter
//! until `budget` accesses, stopping after a tile or a step along the stream, and reads each
//! site's misses per access off a window at the sample's end ([`Window`]): every thread is
//! charged once what the sample's start cost beyond that rate, and the rate over each site's
//! accesses, which are known without walking ([`Walk::group_accesses`]). A group whose
//! thread 0 finishes within the budget is counted whole, every thread.
//!
//! The sample touches a few pieces of each array, so it is counted in a compact span
//! ([`Compact`]) whose state is filled for those alone.
//!
//! Each group starts from empty caches, as a per-group table must: the exact count of a
//! whole configuration also carries lines from one group to the next.

use crate::count::{Counter, Counts};
use crate::layout::ALIGN;
use crate::levels::ThreadLevel;
use crate::walk::{RowAccess, Sink, Walk};

/// The counter behind a tally of the accesses it has heard, with the addresses moved into a
/// compact span: each `chunk`-byte piece of the layout a row reaches takes the next free piece
/// of the span, in the order the rows reach them. Lines stay lines and distinct lines stay
/// distinct, so the fully associative counts are those of the layout; so are the
/// set-associative counts of every level whose sets times its line divide `chunk`. A sample
/// reaches a few pieces of each array, so its counter keeps state for those alone.
struct Compact {
    counter: Counter,
    accesses: u64,
    chunk: u64,
    /// Layout piece -> span piece.
    pieces: std::collections::HashMap<u64, u64>,
    /// Pieces the span holds, and how many are taken.
    room: u64,
    taken: u64,
    /// A row reached more pieces than the span holds: the counts are not the layout's.
    full: bool,
    scratch: Vec<RowAccess>,
}

impl Compact {
    fn new(levels: &[ThreadLevel], sites: usize, chunk: u64, room: u64) -> Compact {
        Compact {
            counter: Counter::new(levels, ALIGN, ALIGN + room * chunk, sites),
            accesses: 0,
            chunk,
            pieces: std::collections::HashMap::new(),
            room,
            taken: 0,
            full: false,
            scratch: Vec::new(),
        }
    }

    /// The span's address of layout address `a`.
    fn moved(&mut self, a: u64) -> Option<u64> {
        let piece = a / self.chunk;
        let at = match self.pieces.get(&piece) {
            Some(&at) => at,
            None if self.taken < self.room => {
                self.taken += 1;
                self.pieces.insert(piece, self.taken - 1);
                self.taken - 1
            }
            None => return None,
        };
        Some(ALIGN + at * self.chunk + a % self.chunk)
    }
}

impl Sink for Compact {
    fn row(&mut self, rows: &[RowAccess], lo: i64, hi: i64) {
        if hi <= lo || self.full {
            return;
        }
        self.accesses += rows.len() as u64 * (hi - lo) as u64;
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut from = lo;
        while from < hi {
            // The cells from `from` on in which no access leaves its piece.
            let mut to = hi;
            for r in rows {
                let at = r.base.wrapping_add(r.step.wrapping_mul(from as u64));
                if r.step > 0 {
                    let left = self.chunk - at % self.chunk;
                    to = to.min(from + left.div_ceil(r.step) as i64);
                }
            }
            scratch.clear();
            for r in rows {
                let at = r.base.wrapping_add(r.step.wrapping_mul(from as u64));
                let Some(moved) = self.moved(at) else {
                    self.full = true;
                    self.scratch = scratch;
                    return;
                };
                scratch.push(RowAccess {
                    base: moved.wrapping_sub(r.step.wrapping_mul(from as u64)),
                    ..*r
                });
            }
            self.counter.row(&scratch, from, to);
            from = to;
        }
        self.scratch = scratch;
    }
}

/// The piece [`Compact`] moves: the largest power of two among the levels' sets times line
/// that divides the layout's alignment, at least a page.
fn piece_bytes(levels: &[ThreadLevel]) -> u64 {
    levels
        .iter()
        .map(|l| l.sets * l.line)
        .filter(|b| b.is_power_of_two() && ALIGN.is_multiple_of(*b))
        .max()
        .unwrap_or(4096)
        .max(4096)
}

/// Thread `t`'s counts of group `gi`, until `budget` accesses at a stop of the walk, and at
/// the first stop of the sample's window (see [`Window`]); whether the budget ended the walk.
/// In a compact span of 16 bytes per access of the budget first, four times larger whenever
/// the walk reaches more pieces than it holds, at most the pieces of the allocations the group
/// reaches (which then holds every piece it can reach; `whole`: the layout's span).
fn thread_counts(
    walk: &Walk,
    (gi, t): (usize, usize),
    levels: &[ThreadLevel],
    whole: (u64, u64),
    budget: u64,
) -> (Vec<Counts>, Option<Vec<Counts>>, bool) {
    let chunk = piece_bytes(levels);
    let warm = warm_tiles(walk, gi, budget);
    // The pieces the group can reach at most: its own arrays' and buffers'.
    let whole_pieces = walk
        .group_pieces(gi, chunk)
        .min((whole.1 - whole.0).div_ceil(chunk));
    let mut room = (budget.saturating_mul(16) / chunk).clamp(64, whole_pieces.max(64));
    loop {
        let mut sink = Compact::new(levels, walk.sites.len(), chunk, room);
        let mut window = Window::new(budget, warm);
        let stopped = walk.run_group(t, gi, &mut sink, &mut |s: &mut Compact, done| {
            s.full || window.stop(s.accesses, done, &s.counter.counts)
        });
        if !sink.full {
            return (sink.counter.counts, window.half, stopped);
        }
        // The allocations' pieces all fit the layout's span.
        let layout = (whole.1 - whole.0).div_ceil(chunk);
        assert!(room < layout, "the layout's pieces fit its span");
        room = if room < whole_pieces {
            room.saturating_mul(4).min(whole_pieces)
        } else {
            layout
        };
    }
}

/// Whether group `gi` is counted whole: a sample that would walk half of its thread's share or
/// more counts every thread whole, since the share's rest (the last rows of tiles, at the
/// domain's edge) need not be like the window, and the whole costs at most twice as much.
fn counts_whole(walk: &Walk, gi: usize, budget: u64) -> bool {
    let share = walk.group_accesses(gi).iter().sum::<u64>() / walk.threads().max(1) as u64;
    let sampled = match warm_tiles(walk, gi, budget) {
        0 => budget,
        _ => budget.max(2 * row_accesses(walk, gi)),
    };
    sampled.saturating_mul(2) >= share
}

/// At least as many accesses as [`group_counts`] walks for group `gi`: every thread's where it
/// counts the group whole, else twice an average share of thread 0's tiles.
pub fn walked_at_most(walk: &Walk, gi: usize, budget: u64) -> u64 {
    let total = walk.group_accesses(gi).iter().sum::<u64>();
    if counts_whole(walk, gi, budget) {
        return total;
    }
    let tiles = walk.group_tiles(gi).max(1) as u64;
    let mine = tiles.div_ceil(walk.threads().max(1) as u64);
    total.min((total / tiles + 1).saturating_mul(2 * mine))
}

/// The accesses of one row of group `gi`'s tiles (along x), all threads' tiles alike.
fn row_accesses(walk: &Walk, gi: usize) -> u64 {
    let tiles = walk.group_tiles(gi).max(1) as u64;
    let row = walk.group_grid(gi)[0].max(1) as u64;
    walk.group_accesses(gi).iter().sum::<u64>() / tiles * row
}

/// The tiles a sample of group `gi` walks before its window: where a row of tiles takes at
/// most eight budgets, the window starts after the first row (whose tiles find no row before
/// them in the caches) and spans a whole row (its first and last tiles, at the domain's
/// edges, in their share); else none, and it starts at half the budget.
fn warm_tiles(walk: &Walk, gi: usize, budget: u64) -> usize {
    if row_accesses(walk, gi) <= budget.saturating_mul(8) {
        walk.group_grid(gi)[0].max(1)
    } else {
        0
    }
}

/// Where a sample's window starts and ends: it starts at the first stop past half the budget
/// with `warm` tiles finished, and holds at least half the budget's accesses and `warm` more
/// tiles.
struct Window {
    budget: u64,
    warm: usize,
    /// The counts, the accesses and the tiles finished where the window started.
    half: Option<Vec<Counts>>,
    from: (u64, usize),
}

impl Window {
    fn new(budget: u64, warm: usize) -> Window {
        Window {
            budget,
            warm,
            half: None,
            from: (0, 0),
        }
    }

    /// Whether the walk stops after `accesses` with `done` tiles finished and `counts`.
    fn stop(&mut self, accesses: u64, done: usize, counts: &[Counts]) -> bool {
        if self.half.is_none() {
            if accesses.saturating_mul(2) >= self.budget && done >= self.warm {
                self.half = Some(counts.to_vec());
                self.from = (accesses, done);
            }
            return false;
        }
        (accesses - self.from.0).saturating_mul(2) >= self.budget && done - self.from.1 >= self.warm
    }
}

/// The counts of group `gi` of `walk` (a kernel's) on `levels` per thread, per site and level
/// (`[site * levels + level]`, the other groups' sites zero), from at most about `budget`
/// accesses of thread 0 (see the module's documentation), and whether they are exact. `whole`:
/// the span of the layout's addresses.
pub fn group_counts(
    walk: &Walk,
    gi: usize,
    levels: &[ThreadLevel],
    whole: (u64, u64),
    budget: u64,
) -> (Vec<Counts>, bool) {
    let (n, sites) = (levels.len(), walk.sites.len());
    let budget = if counts_whole(walk, gi, budget) {
        u64::MAX
    } else {
        budget
    };
    let (last, half, stopped) = thread_counts(walk, (gi, 0), levels, whole, budget);
    if !stopped {
        let mut total = last;
        for t in 1..walk.threads() {
            let (other, _, _) = thread_counts(walk, (gi, t), levels, whole, u64::MAX);
            for (sum, c) in total.iter_mut().zip(&other) {
                sum.add(c);
            }
        }
        return (total, true);
    }
    let half = half.unwrap_or_else(|| vec![Counts::default(); last.len()]);
    let all = walk.group_accesses(gi);
    let threads = walk.threads().min(walk.group_tiles(gi)).max(1) as f64;
    let kinds: [fn(&mut Counts) -> &mut u64; 4] = [
        |c| &mut c.compulsory,
        |c| &mut c.capacity,
        |c| &mut c.compulsory_sa,
        |c| &mut c.capacity_sa,
    ];
    let mut out = vec![Counts::default(); last.len()];
    for level in 0..n {
        let at = |s: usize| s * n + level;
        // The level's window over all sites, for a site the window did not reach.
        let mut window = (Counts::default(), Counts::default());
        for s in 0..sites {
            window.0.add(&last[at(s)]);
            window.1.add(&half[at(s)]);
        }
        for (s, &total) in all.iter().enumerate() {
            out[at(s)].accesses = total;
            if total == 0 {
                continue;
            }
            let (mut e, h) = (last[at(s)], half[at(s)]);
            let (mut we, mut wh) = if e.accesses > h.accesses {
                (e, h)
            } else {
                window
            };
            for kind in kinds {
                let rate = (*kind(&mut we) - *kind(&mut wh)) as f64
                    / (we.accesses - wh.accesses).max(1) as f64;
                let start = (*kind(&mut e) as f64 - rate * e.accesses as f64).max(0.0);
                let estimate = threads * start + rate * total as f64;
                *kind(&mut out[at(s)]) = estimate.round().clamp(0.0, total as f64) as u64;
            }
            // No more misses than accesses.
            let o = &mut out[at(s)];
            o.capacity = o.capacity.min(total - o.compulsory);
            o.capacity_sa = o.capacity_sa.min(total - o.compulsory_sa);
        }
    }
    (out, false)
}

#[cfg(test)]
mod tests {
    use absinthe_codegen::{lower, Schedule};
    use absinthe_model::cost_model::evaluate::{evaluate, Configuration};
    use absinthe_model::formats::machine::{CacheLevel, Machine};
    use absinthe_model::language::analysis::Analysis;
    use absinthe_model::language::generate::{random_program, RandomShape};
    use absinthe_model::language::program::Program;
    use absinthe_model::support::rng::Rng;

    use crate::{estimate, model, Code};

    /// Small levels, so that programs of a few thousand cells miss in each: two line sizes, a
    /// level shared by three threads. Every level's sets times its line is a power of two
    /// (512 B, 2 KiB, and 1 KiB for a share of the L3), so the compact span keeps every count.
    fn levels() -> Vec<CacheLevel> {
        let level = |name: &str, bytes, line, ways, shared| CacheLevel {
            name: name.into(),
            bytes,
            line,
            ways,
            shared,
        };
        vec![
            level("L1", 2 << 10, 32, 4, false),
            level("L2", 8 << 10, 64, 4, false),
            level("L3", 48 << 10, 64, 16, true),
        ]
    }

    fn schedule_of(text: &str, rng: &mut Rng, one_group: bool) -> Schedule {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let machine = Machine::load(&root.join("machines/default.yaml")).unwrap();
        let program = Program::from_yaml(text).unwrap();
        let analysis = Analysis::new(&program).unwrap();
        let view = machine.model_view(program.value_type.bytes()).unwrap();
        let n = program.stencils.len();
        // A 2-D stencil is a group of its own (`Analysis::forced_cut`).
        let mut groups = vec![0];
        for s in 1..n {
            let cut = (!one_group && rng.chance(40)) || analysis.forced_cut(s - 1);
            groups.push(groups[s - 1] + usize::from(cut));
        }
        let count = groups[n - 1] + 1;
        let tiles = (0..count)
            .map(|_| [0, 1, 2].map(|d| 1 + rng.below(analysis.domain[d].min(5))))
            .collect();
        let mut config = Configuration::new(groups, tiles);
        config.stream = (0..count).filter(|_| rng.chance(50)).collect();
        let cost = evaluate(&analysis, &view, &config);
        lower(&program, &analysis, &config, &cost).unwrap()
    }

    fn random_text(seed: u64) -> String {
        random_text_within(seed, 14)
    }

    fn random_text_within(seed: u64, max_domain: usize) -> String {
        let shape = RandomShape {
            min_stencils: 1,
            max_stencils: 5,
            min_domain: 4,
            max_domain,
            max_offset: 2,
            rich_expressions: false,
        };
        random_program(seed, &shape)
    }

    /// A group whose first thread finishes within the budget is counted whole, in the compact
    /// span: for a lone group, every count of [`model`]'s, which counts the layout's whole
    /// span.
    #[test]
    fn a_lone_group_counted_whole_is_the_exact_count() {
        let mut rng = Rng::new(11);
        let mut lone = 0;
        for seed in 0..24 {
            let schedule = schedule_of(&random_text(seed), &mut rng, true);
            if schedule.groups.len() != 1 {
                continue;
            }
            lone += 1;
            let exact = model(&schedule, Code::Kernel, &levels(), 3, 1).unwrap();
            let whole = estimate(&schedule, &levels(), 3, u64::MAX, 1).unwrap();
            assert_eq!(whole.sampled, Some(u64::MAX));
            let counts = |r: &crate::CacheReport| {
                let mut v: Vec<_> = r.levels.iter().map(|l| l.counts).collect();
                v.extend(r.accesses.iter().flat_map(|a| a.levels.clone()));
                v
            };
            assert_eq!(counts(&whole), counts(&exact), "seed {seed}");
        }
        assert!(lone >= 12, "{lone} programs of one group");
    }

    /// Each site's accesses, computed without walking, are the ones the walk makes.
    #[test]
    fn a_groups_accesses_are_the_walked_ones() {
        let mut rng = Rng::new(12);
        for seed in 0..24 {
            let schedule = schedule_of(&random_text(seed), &mut rng, false);
            let exact = model(&schedule, Code::Kernel, &levels(), 2, 1).unwrap();
            let walk = crate::walk::Walk::new(&schedule, 2, Code::Kernel);
            let mut sum = vec![0u64; walk.sites.len()];
            for gi in 0..walk.groups() {
                for (s, a) in walk.group_accesses(gi).into_iter().enumerate() {
                    sum[s] += a;
                }
            }
            let walked: Vec<u64> = exact
                .accesses
                .iter()
                .map(|a| a.levels[0].accesses)
                .collect();
            assert_eq!(sum, walked, "seed {seed}");
        }
    }

    /// However small the sample, no site misses more often than it is accessed, at any level,
    /// and the accesses are the walk's.
    #[test]
    fn an_estimate_misses_no_more_than_it_accesses() {
        let mut rng = Rng::new(13);
        for seed in 0..24 {
            let schedule = schedule_of(&random_text_within(seed, 40), &mut rng, false);
            // One line of a page: most accesses find the line of the access before.
            let page = vec![CacheLevel {
                name: "page".into(),
                bytes: 4096,
                line: 4096,
                ways: 1,
                shared: false,
            }];
            for levels in [levels(), page] {
                let exact = model(&schedule, Code::Kernel, &levels, 3, 1).unwrap();
                let sampled = estimate(&schedule, &levels, 3, 64, 1).unwrap();
                for (e, x) in sampled.accesses.iter().zip(&exact.accesses) {
                    for (c, w) in e.levels.iter().zip(&x.levels) {
                        assert_eq!(c.accesses, w.accesses, "seed {seed}");
                        assert!(c.misses() <= c.accesses, "seed {seed}: {c:?}");
                        assert!(c.misses_sa() <= c.accesses, "seed {seed}: {c:?}");
                    }
                }
            }
        }
    }

    /// hdiff over 96x96x16 in one streamed group of 4x4x2 tiles: a sample of 1/40 of its
    /// first thread's accesses estimates every level's misses within 3%.
    #[test]
    fn a_sample_estimates_a_long_group() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let text = std::fs::read_to_string(root.join("configs/hdiff.yaml"))
            .unwrap()
            .replace("domain: [128, 128, 64]", "domain: [96, 96, 16]");
        let program = Program::from_yaml(&text).unwrap();
        let analysis = Analysis::new(&program).unwrap();
        let machine = Machine::load(&root.join("machines/default.yaml")).unwrap();
        let view = machine.model_view(8).unwrap();
        let mut config = Configuration::new(vec![0; 4], vec![[4, 4, 2]]);
        config.stream = vec![0];
        let cost = evaluate(&analysis, &view, &config);
        let schedule = lower(&program, &analysis, &config, &cost).unwrap();
        let exact = model(&schedule, Code::Kernel, &levels(), 2, 2).unwrap();
        let total = exact.levels[0].counts.accesses;
        let sampled = estimate(&schedule, &levels(), 2, total / 80, 2).unwrap();
        let (_, whole) = crate::estimate_group(&schedule, 0, &levels(), 2, total / 80).unwrap();
        assert!(!whole, "the group was sampled");
        for (x, e) in exact.levels.iter().zip(&sampled.levels) {
            let (x, e) = (x.counts.misses_sa() as f64, e.counts.misses_sa() as f64);
            assert!(x > 0.0 && (e / x - 1.0).abs() < 0.03, "{e} against {x}");
        }
    }
}
