//! The one measuring loop: build harness executables in parallel, run them round-robin in
//! rounds with the caches flushed, verify each executable in the first round, and pool each
//! case's runs over the rounds. `bench`, `tune`, `learn`'s calibrations and its kernel refit
//! all time through it.

use std::path::PathBuf;

use absinthe_codegen::compile::{run_harness, HarnessResult, Toolchain};
use absinthe_codegen::render::Flush;
use absinthe_codegen::CodegenError;
use absinthe_model::support::parallel::parallel_map;

/// Rounds a timing is split into when it has enough runs (see [`rounds_for`]).
pub const ROUNDS: usize = 4;

/// The rounds for `runs` timed runs per executable: [`ROUNDS`], or one below 16 runs.
pub fn rounds_for(runs: usize) -> usize {
    if runs >= 16 {
        ROUNDS
    } else {
        1
    }
}

/// A harness's source files (name, text); None where nothing is to be built.
pub type Sources = Option<Vec<(String, String)>>;

/// What the runner reports as it goes: executable `index` has been built, or is about to run
/// (or has run) in `round`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEvent {
    Built { index: usize },
    Running { round: usize, index: usize },
    Ran { round: usize, index: usize },
}

/// How many rounds, and timed runs in each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rounds {
    pub rounds: usize,
    pub per_round: usize,
}

impl Rounds {
    /// `runs` timed runs split as [`rounds_for`] says.
    pub fn of(runs: usize) -> Rounds {
        let rounds = rounds_for(runs);
        Rounds {
            rounds,
            per_round: runs.div_ceil(rounds),
        }
    }
}

/// Builds and times harness executables with one toolchain and environment.
pub struct Runner<'a> {
    pub toolchain: &'a Toolchain,
    /// The environment of every run (`OMP_NUM_THREADS`).
    pub env: Vec<(String, String)>,
    /// Compilers run at a time.
    pub jobs: usize,
}

/// One executable's pooled results: per flush asked for, per harness result line (case).
pub type Pooled = Vec<Vec<HarnessResult>>;

impl Runner<'_> {
    /// Builds every source in parallel; `events` hears of each build as it ends.
    pub fn build(
        &self,
        sources: &[Sources],
        events: &(dyn Fn(RunEvent) + Sync),
    ) -> Vec<Option<Result<PathBuf, CodegenError>>> {
        parallel_map(sources.len(), self.jobs.max(1), |index| {
            let exe = sources[index]
                .as_ref()
                .map(|files| self.toolchain.build(files, &[]));
            events(RunEvent::Built { index });
            exe
        })
    }

    /// Runs the executables round-robin in this runner's environment ([`run_rounds`]).
    pub fn run_rounds(
        &self,
        exes: &[Option<PathBuf>],
        rounds: Rounds,
        flushes: &[Flush],
        timed: &dyn Fn(usize) -> &'static str,
        events: &mut dyn FnMut(RunEvent),
    ) -> Result<Vec<Option<Pooled>>, CodegenError> {
        run_rounds(exes, &self.env, rounds, flushes, timed, events)
    }
}

/// Runs the executables round-robin with the environment `env`, `rounds.rounds` rounds of
/// `rounds.per_round` runs each, so that a burst of load on a shared machine spreads over all
/// of them instead of spoiling one. In every round each executable runs once per flush of
/// `flushes`, timing `timed(index)` (`kernel` or `reference`). The first round's runs verify;
/// the later ones skip the comparison and the untimed reference (the harness's `verified`
/// argument: the same executable on the same inputs computes the same outputs). The runs of
/// all rounds are pooled per flush and case ([`pool`]), which keeps the first round's
/// verification. None where nothing was built.
pub fn run_rounds(
    exes: &[Option<PathBuf>],
    env: &[(String, String)],
    rounds: Rounds,
    flushes: &[Flush],
    timed: &dyn Fn(usize) -> &'static str,
    events: &mut dyn FnMut(RunEvent),
) -> Result<Vec<Option<Pooled>>, CodegenError> {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut pooled: Vec<Option<Pooled>> = vec![None; exes.len()];
    for round in 0..rounds.rounds {
        for (index, exe) in exes.iter().enumerate() {
            let Some(exe) = exe else { continue };
            events(RunEvent::Running { round, index });
            let mut per_flush = Vec::with_capacity(flushes.len());
            let check = if round == 0 { "verify" } else { "verified" };
            for flush in flushes {
                let args = [
                    rounds.per_round.to_string(),
                    flush.arg(),
                    timed(index).to_string(),
                    check.to_string(),
                ];
                per_flush.push(run_harness(exe, &args, &env)?);
            }
            match &mut pooled[index] {
                slot @ None => *slot = Some(per_flush),
                Some(before) => {
                    for (cases, new) in before.iter_mut().zip(per_flush) {
                        for (case, r) in cases.iter_mut().zip(new) {
                            pool(case, r);
                        }
                    }
                }
            }
            events(RunEvent::Ran { round, index });
        }
    }
    Ok(pooled)
}

/// Adds the runs of `r` to `pooled`: verified only if both are, the first mismatch, the
/// largest error, every time; `pooled`'s way of verifying (`r`'s may be `earlier run`).
pub fn pool(pooled: &mut HarnessResult, r: HarnessResult) {
    pooled.verified &= r.verified;
    if pooled.mismatch.is_none() {
        pooled.mismatch = r.mismatch;
    }
    pooled.max_error = pooled.max_error.max(r.max_error);
    pooled.times.extend(r.times);
}

/// (min, median, max) of sorted times, None when there are none.
pub fn pooled_stats(sorted: &[f64]) -> Option<(f64, f64, f64)> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    Some((sorted[0], median_of_sorted(sorted), sorted[n - 1]))
}

/// The median of sorted values (the mean of the middle two for an even count); NaN when empty.
pub fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    match n {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]),
    }
}

/// The median of `values`, NaN ones left out; NaN when none is left.
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(f64::total_cmp);
    median_of_sorted(&v)
}
