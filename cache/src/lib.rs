//! The cache model (docs/MODEL.md, "Cache model"): for the loop order a generated OpenMP kernel
//! executes, every access's compulsory and capacity misses at every cache level, as HAYSTACK
//! counts them for a fully associative LRU cache, and the same for the machine's
//! set-associative caches.
//!
//! The model walks the kernel's schedule ([`walk`]): each thread's tiles in their order, with
//! streaming, shared row loops and tile buffers as generated, at the addresses the trace build
//! places the arrays at ([`layout`]). Each level is an LRU cache that sees every access of its
//! thread, write-allocate, with no prefetching, independent of the other levels; a shared level
//! is each thread's equal share ([`levels`]). The counting ([`count`]) is exact for that model.
//! The test suite checks it against a trace of the compiled kernel replayed through a separate
//! simulator.

mod behind;
pub mod count;
mod fold;
pub mod layout;
pub mod levels;
mod lru;
pub mod sample;
pub mod text;
pub mod walk;

use absinthe_codegen::Schedule;
use absinthe_model::formats::limits::MAX_CACHE_LEVELS;
use absinthe_model::formats::machine::CacheLevel;
use absinthe_model::support::parallel::parallel_map;
use serde::Serialize;

pub use count::Counts;
pub use levels::ThreadLevel;
pub use walk::{Code, Site};

/// One level's totals over all threads.
#[derive(Clone, Debug, Serialize)]
pub struct LevelReport {
    #[serde(flatten)]
    pub level: ThreadLevel,
    #[serde(flatten)]
    pub counts: Counts,
}

/// A stencil's or a group's counts, per level.
#[derive(Clone, Debug, Serialize)]
pub struct PartReport {
    pub name: String,
    pub group: usize,
    pub levels: Vec<Counts>,
}

/// One access site's counts, per level.
#[derive(Clone, Debug, Serialize)]
pub struct AccessReport {
    #[serde(flatten)]
    pub site: Site,
    pub levels: Vec<Counts>,
}

/// What `absinthe cache` reports.
#[derive(Clone, Debug, Serialize)]
pub struct CacheReport {
    pub program: String,
    pub threads: usize,
    /// Totals per level, summed over threads.
    pub levels: Vec<LevelReport>,
    /// Per stencil (in program order of the kernel's steps), summed over its accesses.
    pub stencils: Vec<PartReport>,
    pub groups: Vec<PartReport>,
    pub accesses: Vec<AccessReport>,
    /// Estimated ([`estimate`]): the budget of accesses each group's sample had. Absent when
    /// the counts are [`model`]'s, exact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampled: Option<u64>,
}

/// The most (line, level) pairs the counting keeps state for at once: the lines the arrays
/// span times the levels, per thread counted, times the threads counted at a time (12 bytes
/// a line for each line size and at most 4 a line for each level: 4.3 GB at the limit with
/// one level, less with more). Fewer threads are counted at a time where more would pass it.
pub const MAX_LINE_STATES: u64 = 1 << 28;

/// The most (line, level) pairs filled over all threads: each thread's counting starts with
/// its own state for every line (up to about 2 ns a pair, page faults included).
pub const MAX_THREAD_LINE_STATES: u64 = 1 << 33;

/// The most accesses counted (over all threads): at the rate of cosmo_hdiff4 at 256x256x60
/// (0.4-0.6 G a second on two cores) about a minute, at the slowest schedules' about ten.
pub const MAX_ACCESSES: u64 = 1 << 35;

/// Why the model cannot run.
#[derive(Debug, PartialEq, Eq)]
pub enum CacheError {
    NoLevels,
    TooManyLevels(usize),
    /// The arrays span this many lines times levels, past [`MAX_LINE_STATES`].
    TooLarge(u64),
    /// The threads and the (line, level) pairs each keeps, past [`MAX_THREAD_LINE_STATES`].
    TooManyThreads(usize, u64),
    /// At most this many accesses, past [`MAX_ACCESSES`].
    TooManyAccesses(u128),
}

/// What to do about a count past a bound that scales with the domain.
const SMALLER: &str = "a smaller domain has the same per-cell behaviour away from the boundaries";

impl std::fmt::Display for CacheError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CacheError::NoLevels => f.write_str("no cache levels to model"),
            CacheError::TooManyLevels(n) => write!(
                f,
                "{n} cache levels; the model takes at most {MAX_CACHE_LEVELS}"
            ),
            CacheError::TooLarge(n) => write!(
                f,
                "the arrays' lines times the levels are {n}; the model keeps state for at most {MAX_LINE_STATES} ({SMALLER})"
            ),
            CacheError::TooManyThreads(threads, n) => write!(
                f,
                "{threads} threads, each keeping state for {n} (line, level) pairs, {} in all; the model fills at most {MAX_THREAD_LINE_STATES} (fewer `cores` in the machine file, or a smaller domain: {SMALLER})",
                *threads as u128 * u128::from(*n)
            ),
            CacheError::TooManyAccesses(n) => write!(
                f,
                "the code counted makes up to {n} accesses; the model counts at most {MAX_ACCESSES} ({SMALLER})"
            ),

        }
    }
}

impl std::error::Error for CacheError {}

/// The counts of `schedule`'s `code` (an OpenMP lowering) run by `threads` threads on caches
/// `levels`, each thread's counts in parallel on up to `jobs` cores.
pub fn model(
    schedule: &Schedule,
    code: Code,
    levels: &[CacheLevel],
    threads: usize,
    jobs: usize,
) -> Result<CacheReport, CacheError> {
    let threads = threads.max(1);
    let (walk, per_thread, states) = checked_walk(schedule, code, levels, threads)?;
    let accesses = walk.accesses_at_most();
    if accesses > u128::from(MAX_ACCESSES) {
        return Err(CacheError::TooManyAccesses(accesses));
    }
    let (sites, n) = (walk.sites.len(), per_thread.len());
    let at_once = (MAX_LINE_STATES / states.max(1)).max(1) as usize;
    // Each thread's counts are added as it ends, so that only the threads being counted hold
    // theirs.
    let total = std::sync::Mutex::new(vec![Counts::default(); sites * n]);
    parallel_map(threads, jobs.clamp(1, threads).min(at_once), |t| {
        let mut counter = count::Counter::new(&per_thread, layout::ALIGN, walk.end(), sites);
        walk.run(t, &mut counter);
        let mut total = total.lock().unwrap_or_else(|e| e.into_inner());
        for (sum, c) in total.iter_mut().zip(&counter.counts) {
            sum.add(c);
        }
    });
    let per_site = total.into_inner().unwrap_or_else(|e| e.into_inner());
    debug_assert!(
        per_site
            .iter()
            .step_by(n)
            .map(|c| u128::from(c.accesses))
            .sum::<u128>()
            <= accesses,
        "more accesses counted than the bound"
    );
    Ok(report(
        &schedule.program,
        &walk,
        per_thread,
        &per_site,
        threads,
    ))
}

/// The walk of `schedule`'s `code`, each thread's levels and the (line, level) pairs a thread
/// keeps state for, where that state is within its bounds.
fn checked_walk<'a>(
    schedule: &'a Schedule,
    code: Code,
    levels: &[CacheLevel],
    threads: usize,
) -> Result<(walk::Walk<'a>, Vec<ThreadLevel>, u64), CacheError> {
    if levels.is_empty() {
        return Err(CacheError::NoLevels);
    }
    if levels.len() > MAX_CACHE_LEVELS {
        return Err(CacheError::TooManyLevels(levels.len()));
    }
    let per_thread = levels::thread_levels(levels, threads);
    let walk = walk::Walk::new(schedule, threads, code);
    let states: u64 = per_thread
        .iter()
        .map(|l| (walk.end() - layout::ALIGN) / l.line)
        .sum();
    if states > MAX_LINE_STATES {
        return Err(CacheError::TooLarge(states));
    }
    if u128::from(states) * threads as u128 > u128::from(MAX_THREAD_LINE_STATES) {
        return Err(CacheError::TooManyThreads(threads, states));
    }
    Ok((walk, per_thread, states))
}

/// [`model`]'s report for the kernel, each group estimated apart from a sample of about
/// `budget` accesses of its first thread, from empty caches ([`sample`]; a group whose first
/// thread is done within the budget is counted whole), the groups in parallel on up to `jobs`
/// cores.
pub fn estimate(
    schedule: &Schedule,
    levels: &[CacheLevel],
    threads: usize,
    budget: u64,
    jobs: usize,
) -> Result<CacheReport, CacheError> {
    let threads = threads.max(1);
    let (walk, per_thread, states) = checked_walk(schedule, Code::Kernel, levels, threads)?;
    let walked: u128 = (0..walk.groups())
        .map(|gi| u128::from(sample::walked_at_most(&walk, gi, budget)))
        .sum();
    if walked > u128::from(MAX_ACCESSES) {
        return Err(CacheError::TooManyAccesses(walked));
    }
    // Each group in parallel keeps at most the layout's lines of state, as a thread does in
    // `model`.
    let at_once = (MAX_LINE_STATES / states.max(1)).max(1) as usize;
    let (sites, n) = (walk.sites.len(), per_thread.len());
    let groups = parallel_map(walk.groups(), jobs.clamp(1, at_once), |gi| {
        sample::group_counts(&walk, gi, &per_thread, (layout::ALIGN, walk.end()), budget)
    });
    let mut per_site = vec![Counts::default(); sites * n];
    for (counts, _) in &groups {
        for (sum, c) in per_site.iter_mut().zip(counts) {
            sum.add(c);
        }
    }
    let mut report = report(&schedule.program, &walk, per_thread, &per_site, threads);
    report.sampled = Some(budget);
    Ok(report)
}

/// Group `gi`'s counts per level (summed over its accesses and threads), estimated as
/// [`estimate`] does, and whether they are exact.
pub fn estimate_group(
    schedule: &Schedule,
    gi: usize,
    levels: &[CacheLevel],
    threads: usize,
    budget: u64,
) -> Result<(Vec<Counts>, bool), CacheError> {
    let threads = threads.max(1);
    let (walk, per_thread, _) = checked_walk(schedule, Code::Kernel, levels, threads)?;
    let n = per_thread.len();
    let (counts, exact) =
        sample::group_counts(&walk, gi, &per_thread, (layout::ALIGN, walk.end()), budget);
    let mut out = vec![Counts::default(); n];
    for (i, c) in counts.iter().enumerate() {
        out[i % n].add(c);
    }
    Ok((out, exact))
}

/// Group `gi`'s misses at each level, summed over its tiles and threads, by layer conditions
/// ([`walk::Walk::layer_misses`]): a closed form, not a count.
pub fn layer_group(
    schedule: &Schedule,
    gi: usize,
    levels: &[CacheLevel],
    threads: usize,
) -> Vec<f64> {
    let threads = threads.max(1);
    let walk = walk::Walk::new(schedule, threads, Code::Kernel);
    walk.layer_misses(gi, &levels::thread_levels(levels, threads))
}

fn report(
    program: &str,
    walk: &walk::Walk,
    per_thread: Vec<ThreadLevel>,
    per_site: &[Counts],
    threads: usize,
) -> CacheReport {
    let n = per_thread.len();
    let site_levels = |s: usize| per_site[s * n..(s + 1) * n].to_vec();
    let accesses: Vec<AccessReport> = walk
        .sites
        .iter()
        .enumerate()
        .map(|(s, site)| AccessReport {
            site: site.clone(),
            levels: site_levels(s),
        })
        .collect();
    let sum = |pick: &dyn Fn(&Site) -> bool| {
        let mut total = vec![Counts::default(); n];
        for a in accesses.iter().filter(|a| pick(&a.site)) {
            for (t, c) in total.iter_mut().zip(&a.levels) {
                t.add(c);
            }
        }
        total
    };
    let stencils = walk
        .parts
        .iter()
        .flat_map(|(g, names)| {
            names.iter().map(|name| PartReport {
                name: name.clone(),
                group: *g,
                levels: sum(&|s| s.group == *g && s.stencil == *name),
            })
        })
        .collect();
    let groups = walk
        .parts
        .iter()
        .map(|(g, names)| PartReport {
            name: names.join(", "),
            group: *g,
            levels: sum(&|s| s.group == *g),
        })
        .collect();
    let totals = sum(&|_| true);
    CacheReport {
        program: program.to_string(),
        threads,
        levels: per_thread
            .into_iter()
            .zip(totals)
            .map(|(level, counts)| LevelReport { level, counts })
            .collect(),
        stencils,
        groups,
        accesses,
        sampled: None,
    }
}
