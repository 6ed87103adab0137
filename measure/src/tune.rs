//! Model-guided auto-tuning as a library: the model's best configurations that are not ties
//! (`variants::distinct_best`) and the optima of other inline sets are built, verified and
//! timed like `bench` variants; the fastest is refined by measured sweeps of tile counts
//! (`variants::measured_sweeps`); the finalists are timed again together, and the fastest
//! verified configuration is returned as a solution with a [`TuneReport`]. Nothing is printed:
//! progress goes to the [`Bench`]'s hook.

use std::path::{Path, PathBuf};

use absinthe_model::cost_model::evaluate::evaluate;
use absinthe_model::cost_model::inline_search::apply as inline_apply;
use absinthe_model::language::program::DIMS;
use absinthe_model::output::solution::{Solution, TuneReport as Tuned};
use serde::Serialize;

use crate::bench::{accuracy_points, Bench, Row};
use crate::variants::{
    autotune_tilings, measured_sweeps, PlanSettings, Planned, Probe, StepTimes, SweepStep, Variant,
};
use crate::MeasureError;

/// How many times the candidates' runs the confirmation round times each finalist.
pub const CONFIRM_RUNS_FACTOR: usize = 4;

/// How many configurations the tuner times in measured sweeps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Refine {
    /// A tenth of the auto-tuning grid, less the model's candidates timed.
    Auto,
    Count(usize),
}

impl Refine {
    /// The budget when `model` candidates were timed on `domain`: `auto` keeps the whole run
    /// within a tenth of what `bench --variants autotune` times.
    pub fn budget(self, domain: [usize; 3], model: usize) -> usize {
        match self {
            Refine::Count(n) => n,
            Refine::Auto => (autotune_tilings(domain).len() / 10).saturating_sub(model),
        }
    }
}

/// A `--refine` value: `auto`, or a count from 0 to 1024.
pub fn parse_refine(s: &str) -> Result<Refine, String> {
    if s == "auto" {
        return Ok(Refine::Auto);
    }
    match s.parse::<usize>() {
        Ok(n) if n <= 1024 => Ok(Refine::Count(n)),
        _ => Err(format!("`{s}` is not `auto` or a count from 0 to 1024")),
    }
}

/// Where the winner's solution goes when no file is named: `program`'s file stem +
/// `.tuned.yaml`, in the current directory.
pub fn default_solution_path(program: &Path) -> PathBuf {
    let stem = program
        .file_stem()
        .map_or("program".into(), |s| s.to_string_lossy().into_owned());
    PathBuf::from(format!("{stem}.tuned.yaml"))
}

/// What the tuner times.
pub struct TuneOptions {
    /// How many of the model's best configurations (`top:K`).
    pub top: usize,
    /// The optima of how many other inline sets (`sets:M`; 0: none).
    pub inline_sets: usize,
    pub refine: Refine,
    /// How many finalists the confirmation round times again (0 or 1: none).
    pub confirm: usize,
    /// How the model's best are planned (the search restrictions and inline policy).
    pub plan: PlanSettings,
}

/// How a candidate was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// The model's best, or another inline set's optimum.
    Model,
    /// A measured sweep of a candidate's tile counts.
    Refine,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::Model => "model",
            Stage::Refine => "refine",
        }
    }
}

/// One timed candidate.
#[derive(Serialize)]
pub struct Candidate {
    /// The model's rank among the candidates: the feasible ones by predicted time (1 = its
    /// optimum), then those the model rules out (cache, parallel efficiency) by predicted time.
    pub rank: usize,
    /// How it was chosen: `model` or `refine`.
    pub stage: Stage,
    /// For `refine`: the rank of the candidate whose sweep tried it (and was timed with it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swept_from: Option<usize>,
    /// The stencils computed where they are read (names; the groups and tiles are of the
    /// program with them inlined).
    pub inline: Vec<String>,
    pub groups: Vec<usize>,
    pub tiles: Vec<[usize; 3]>,
    pub stream: Vec<usize>,
    pub predicted_seconds: f64,
    /// Whether the model finds it feasible; a sweep also times configurations it rules out,
    /// whose prediction ignores what rules them out.
    pub feasible: bool,
    /// The median of its last timing (the fastest so far is timed again with each sweep; the
    /// finalists once more in the confirmation round).
    pub measured_seconds: Option<f64>,
    /// Whether it was one of the finalists timed again together at the end (`--confirm`).
    pub confirmed: bool,
    /// `predicted / measured - 1`.
    pub prediction_error: Option<f64>,
    pub verified: Option<bool>,
}

/// What a tuning run found (`tune --format json|yaml` prints it).
#[derive(Serialize)]
pub struct TuneReport {
    pub program: String,
    pub machine: String,
    pub candidates: Vec<Candidate>,
    /// How many candidates the measured sweeps added.
    pub refined: usize,
    /// How many finalists the confirmation round timed again (0: none).
    pub confirmed: usize,
    /// The runs of each candidate's timing, and of the confirmation round's.
    pub runs: usize,
    pub confirm_runs: usize,
    /// The model's rank of the fastest verified candidate.
    pub winner_rank: usize,
    pub winner_seconds: f64,
    /// The rank of the model's optimum (the first configuration timed) among the candidates.
    pub model_optimum_rank: usize,
    /// `measured(the model's optimum) / measured(winner)`.
    pub speedup_over_model_optimum: Option<f64>,
    /// Where the caller wrote the solution.
    pub solution_file: PathBuf,
}

/// The outcome of [`tune`]: the report, the winner as a solution, the model-accuracy points of
/// the candidates, and whether some candidate failed verification.
pub struct Tuning {
    pub report: TuneReport,
    pub solution: Solution,
    pub points: Vec<crate::accuracy::Point>,
    pub failed: bool,
}

impl Tuning {
    /// Draws predicted against measured time of the candidates into `path` (PNG or SVG,
    /// [`crate::accuracy::plot`]).
    pub fn plot(&self, path: &Path) -> Result<(), MeasureError> {
        let title = format!(
            "{}: {} candidates, predicted vs measured",
            self.report.program,
            self.points.len()
        );
        crate::accuracy::plot(path, &title, &self.points)
    }
}

/// A timed configuration: what was planned and its latest row.
struct Timed {
    planned: Planned,
    row: Row,
    stage: Stage,
    /// Whether the model finds it feasible (the model's best are; a sweep may time others).
    feasible: bool,
    /// The configuration written: the fastest of the model's best, or where the sweeps ended.
    winner: bool,
    /// Its place in the order timed, and that of the candidate whose sweep tried it.
    order: usize,
    swept_from: Option<usize>,
    /// Timed again in the confirmation round (its row is that round's).
    confirmed: bool,
}

impl Timed {
    fn seconds(&self) -> Option<f64> {
        self.row
            .measured_seconds
            .filter(|_| self.row.verified == Some(true))
    }
}

/// Tunes the bench's program: times the model's best, refines the fastest by measured sweeps,
/// confirms the finalists, and returns the fastest verified configuration.
pub fn tune(bench: &Bench, options: &TuneOptions) -> Result<Tuning, MeasureError> {
    let mut variants = vec![Variant::Top(options.top)];
    if options.inline_sets > 0 {
        variants.push(Variant::InlineSets(options.inline_sets));
    }
    let plan = bench.plan(&variants, &options.plan)?;
    plan.notes.iter().for_each(|n| bench.note(n));
    let (rows, mut failed) = bench.time(&plan.planned)?;
    let mut timed: Vec<Timed> = plan
        .planned
        .into_iter()
        .zip(rows)
        .filter(|(p, _)| p.skipped.is_none())
        .enumerate()
        .map(|(order, (planned, row))| Timed {
            planned,
            row,
            stage: Stage::Model,
            feasible: true,
            winner: false,
            order,
            swept_from: None,
            confirmed: false,
        })
        .collect();
    if timed.is_empty() {
        return Err(MeasureError::NothingFeasible);
    }
    let Some(first) = fastest(&timed, 0) else {
        return Err(MeasureError::NothingVerified);
    };
    let domain = bench.analysis.domain;
    let budget = options.refine.budget(domain, timed.len());
    if options.refine == Refine::Auto {
        bench.note(&format!(
            "refine: up to {budget} configuration(s): a tenth of the {} tilings the original auto-tuning times, less the {} timed",
            autotune_tilings(domain).len(),
            timed.len()
        ));
    }
    let (best, f) = refine(bench, &options.plan, &mut timed, first, budget)?;
    failed |= f;
    let (best, f) = confirm(bench, &mut timed, best, options.confirm)?;
    failed |= f;
    timed[best].winner = true;
    let points = accuracy_points(timed.iter().map(|t| (&t.planned, &t.row)));
    let (report, solution) = report(bench, timed)?;
    Ok(Tuning {
        report,
        solution,
        points,
        failed,
    })
}

/// The report and the winner's solution, the candidates in the model's order.
fn report(bench: &Bench, mut timed: Vec<Timed>) -> Result<(TuneReport, Solution), MeasureError> {
    // The model's order over every candidate: the feasible ones by predicted time, then those it
    // rules out (stable: the order timed breaks ties).
    timed.sort_by(|a, b| {
        (!a.feasible)
            .cmp(&!b.feasible)
            .then(a.planned.predicted.total_cmp(&b.planned.predicted))
    });
    let k = timed.iter().position(|t| t.winner).unwrap_or(0);
    let winner_seconds = timed[k].seconds().unwrap_or(f64::NAN);
    // The model's optimum (the first planned: `top1`) as a reference, if it verified; a swept
    // configuration the model ties with it may rank before it.
    let optimum = timed.iter().position(|t| t.order == 0).unwrap_or(0);
    let optimum_seconds = timed[optimum].seconds();
    let refined = timed.iter().filter(|t| t.stage == Stage::Refine).count();
    let candidates = candidates(&timed);
    let winner = &timed[k].planned;
    // The winner's configuration is of the program with its inline set inlined.
    let (_, analysis, _) =
        inline_apply(&bench.program, bench.view.params.operations, &winner.inline)?;
    let cost = evaluate(&analysis, &bench.view, &winner.config);
    let mut solution = Solution::describe(
        &bench.program.name,
        (&analysis, bench.view.model),
        &winner.config,
        &cost,
    );
    solution.inline = timed[k].row.inline.clone();
    solution.machine = Some(bench.machine.name.clone());
    solution.tuned = Some(Tuned {
        candidates: candidates.len(),
        refined,
        model_rank: k + 1,
        measured_seconds: winner_seconds,
        model_optimum_measured_seconds: optimum_seconds,
    });
    let runs = bench.options.runs;
    let report = TuneReport {
        program: bench.program.name.clone(),
        machine: bench.machine.name.clone(),
        refined,
        confirmed: timed.iter().filter(|t| t.confirmed).count(),
        runs,
        confirm_runs: runs * CONFIRM_RUNS_FACTOR,
        winner_rank: k + 1,
        winner_seconds,
        model_optimum_rank: optimum + 1,
        speedup_over_model_optimum: optimum_seconds.map(|t| t / winner_seconds),
        solution_file: PathBuf::new(),
        candidates,
    };
    Ok((report, solution))
}

/// The candidates of `timed` (in the model's order) as the report lists them.
fn candidates(timed: &[Timed]) -> Vec<Candidate> {
    let mut rank_of = vec![0; timed.len()];
    for (k, t) in timed.iter().enumerate() {
        rank_of[t.order] = k + 1;
    }
    timed
        .iter()
        .enumerate()
        .map(|(rank, t)| Candidate {
            rank: rank + 1,
            stage: t.stage,
            swept_from: t.swept_from.map(|o| rank_of[o]),
            inline: t.row.inline.clone(),
            groups: t.planned.config.groups.clone(),
            tiles: t.planned.config.tiles.clone(),
            stream: t.planned.config.stream.clone(),
            predicted_seconds: t.planned.predicted,
            feasible: t.feasible,
            measured_seconds: t.row.measured_seconds,
            prediction_error: t
                .row
                .measured_seconds
                .filter(|&m| m > 0.0)
                .map(|m| t.planned.predicted / m - 1.0),
            verified: t.row.verified,
            confirmed: t.confirmed,
        })
        .collect()
}

/// The `count` fastest verified candidates (by their latest timing), fastest first.
fn finalists(timed: &[Timed], count: usize) -> Vec<usize> {
    let mut fastest: Vec<(usize, f64)> = timed
        .iter()
        .enumerate()
        .filter_map(|(k, t)| t.seconds().map(|s| (k, s)))
        .collect();
    fastest.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    fastest.into_iter().take(count).map(|(k, _)| k).collect()
}

/// The confirmation round: times the `count` fastest candidates again in one run with
/// [`CONFIRM_RUNS_FACTOR`] times the runs each, updates their rows and marks them confirmed,
/// and returns the fastest of them (`best` when there are fewer than two to compare) and
/// whether one failed verification. Replayed on the thirteen stored auto-tuning grids with 2%
/// (3%) noise per timing, 90% (87%) of searches end within 3% of the grid's best with four
/// confirmed, 86% (78%) without; on the machine, three repetitions of the six programs with and
/// without show no difference (docs/decisions/0022-tune-sweeps-and-confirmation.md).
fn confirm(
    bench: &Bench,
    timed: &mut [Timed],
    best: usize,
    count: usize,
) -> Result<(usize, bool), MeasureError> {
    let finals = finalists(timed, count);
    if finals.len() < 2 {
        return Ok((best, false));
    }
    let runs = bench.options.runs * CONFIRM_RUNS_FACTOR;
    bench.note(&format!(
        "confirm: the {} fastest again, together, {runs} runs each",
        finals.len()
    ));
    let batch: Vec<Planned> = finals.iter().map(|&k| timed[k].planned.clone()).collect();
    let (rows, failed) = bench.time_runs(&batch, runs)?;
    for (&k, row) in finals.iter().zip(rows) {
        timed[k].row = row;
        timed[k].confirmed = true;
    }
    // The fastest that verified in this run too; should none have, the earlier fastest.
    Ok((
        finals
            .iter()
            .copied()
            .filter_map(|k| timed[k].seconds().map(|s| (k, s)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map_or(best, |(k, _)| k),
        failed,
    ))
}

/// The fastest verified candidate of `timed[from..]`.
fn fastest(timed: &[Timed], from: usize) -> Option<usize> {
    (from..timed.len())
        .filter_map(|k| timed[k].seconds().map(|t| (k, t)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(k, _)| k)
}

/// Measured sweeps from the timed candidates (`variants::measured_sweeps`), each in its own
/// inline set's program: adds at most `budget` configurations to `timed`, each sweep timed in
/// one run with the fastest so far (whose row is updated). Returns the fastest at the end and
/// whether some candidate failed verification.
fn refine(
    bench: &Bench,
    settings: &PlanSettings,
    timed: &mut Vec<Timed>,
    first: usize,
    budget: usize,
) -> Result<(usize, bool), MeasureError> {
    // Sweeps change tile counts only: each keeps its start's inline set, and so its program.
    let mut inlines: Vec<Vec<usize>> = Vec::new();
    for t in timed.iter() {
        if !inlines.contains(&t.planned.inline) {
            inlines.push(t.planned.inline.clone());
        }
    }
    let spaces = inlines
        .iter()
        .map(|inline| {
            inline_apply(&bench.program, bench.view.params.operations, inline).map(|(_, a, _)| a)
        })
        .collect::<Result<Vec<_>, _>>()?;
    // The probes: the candidates timed so far, in `timed`'s order (the search appends to both
    // alike, so a probe's index is its place in `timed`).
    let mut probes: Vec<Probe> = timed
        .iter()
        .map(|t| Probe {
            space: inlines
                .iter()
                .position(|i| *i == t.planned.inline)
                .unwrap_or(0),
            config: t.planned.config.clone(),
            predicted: t.planned.predicted,
            feasible: t.feasible,
            seconds: t.seconds(),
            from: None,
        })
        .collect();
    let (mut failed, mut swept) = (false, 0usize);
    let best = measured_sweeps(
        &spaces,
        &bench.view,
        &settings.options.space,
        &mut probes,
        budget,
        |step| -> Result<StepTimes, MeasureError> {
            let (times, f) = time_step(bench, timed, step, &mut swept)?;
            failed |= f;
            Ok(times)
        },
    )?;
    debug_assert_eq!(probes.len(), timed.len());
    Ok((best.unwrap_or(first), failed))
}

/// Times one sweep with the fastest so far in the same run; appends the swept configurations
/// to `timed` (named `refine1`, `refine2`, ... by the count `swept`) and updates the fastest's
/// row. Returns their times and whether one failed verification.
fn time_step(
    bench: &Bench,
    timed: &mut Vec<Timed>,
    step: &SweepStep,
    swept: &mut usize,
) -> Result<(StepTimes, bool), MeasureError> {
    let from = if step.source == step.best {
        "the fastest so far".to_string()
    } else {
        format!("{} (not faster)", timed[step.source].planned.name)
    };
    bench.note(&format!(
        "refine: group {}'s tile count along {} from {from}: {} tiling(s) against the fastest so far ({} more allowed)",
        step.group,
        DIMS[step.dim],
        step.swept.len(),
        step.left,
    ));
    let inline = &timed[step.source].planned.inline;
    let mut batch: Vec<Planned> = step
        .swept
        .iter()
        .map(|s| {
            *swept += 1;
            Planned {
                name: format!("refine{swept}"),
                variant: None,
                inline: inline.clone(),
                config: s.config.clone(),
                predicted: s.predicted,
                reference: false,
                skipped: None,
            }
        })
        .collect();
    let best = step.best;
    batch.push(timed[best].planned.clone());
    let (mut rows, failed) = bench.time(&batch)?;
    batch.pop();
    if let Some(row) = rows.pop() {
        timed[best].row = row;
    }
    let start = timed.len();
    for (k, (planned, row)) in batch.into_iter().zip(rows).enumerate() {
        timed.push(Timed {
            planned,
            row,
            stage: Stage::Refine,
            feasible: step.swept[k].feasible,
            winner: false,
            order: start + k,
            swept_from: Some(step.source),
            confirmed: false,
        });
    }
    let times = StepTimes {
        swept: timed[start..].iter().map(Timed::seconds).collect(),
        best: timed[best].seconds(),
    };
    Ok((times, failed))
}

#[cfg(test)]
mod tests {
    use super::{parse_refine, Refine};

    /// `--refine auto` keeps tune within a tenth of the auto-tuning grid: hdiff's 448 tilings
    /// (128x128x64) leave 34 after the model's 10, the 294 of 64x64x60 leave 19; a count is
    /// taken as given, and anything else is refused naming what is accepted.
    #[test]
    fn refine_auto_is_a_tenth_of_the_grid_less_the_model_stage() {
        assert_eq!(parse_refine("auto"), Ok(Refine::Auto));
        assert_eq!(Refine::Auto.budget([128, 128, 64], 10), 34);
        assert_eq!(Refine::Auto.budget([64, 64, 60], 10), 19);
        assert_eq!(Refine::Auto.budget([64, 64, 60], 40), 0);
        assert_eq!(parse_refine("5"), Ok(Refine::Count(5)));
        assert_eq!(Refine::Count(5).budget([64, 64, 60], 40), 5);
        for bad in ["lots", "-1", "1025"] {
            let e = parse_refine(bad).unwrap_err();
            assert!(e.contains("`auto` or a count from 0 to 1024"), "{e}");
        }
    }
}
