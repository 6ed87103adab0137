//! `absinthe tune PROGRAM --top K`: model-guided auto-tuning. The K best configurations by the
//! model that are not ties of each other (the exact search, `search::k_best`, then
//! `variants::distinct_best`), and the optima of the next-best inline sets
//! (`--inline-sets`), are built, verified and timed like `bench` variants; then the fastest is
//! refined by measured sweeps of tile counts (`--refine`, `variants::measured_sweeps`);
//! the fastest verified configuration is written as a solution file.

use std::path::PathBuf;
use std::process::ExitCode;

use absinthe_learn::variants::{autotune_tilings, measured_sweeps, Planned, Probe, StepTimes};
use absinthe_model::cost::evaluate;
use absinthe_model::inline_search::apply as inline_apply;
use absinthe_model::milp::MilpOptions;
use absinthe_model::program::DIMS;
use absinthe_model::solution::{Solution, TuneReport};
use anyhow::bail;
use clap::Args;
use serde::Serialize;

use crate::args::{FlushArgs, MachineArg, SearchArgs};
use crate::output::{
    groups_cell, human_seconds, solution_text, table, tiles_cell, write_atomic, Format,
};
use crate::timing::{accuracy_points, Bench, BenchTarget, PlanRequest, Row, TimingOptions};

/// Model-guided auto-tuning: build, verify and time the model's K best configurations, refine
/// the fastest by measurement, and keep the fastest of all.
///
/// The K best configurations (groupings and tilings) by the model come from the exact search
/// (the DP over group boundaries, keeping the K best tilings of every range and the K best
/// covers of every prefix), so they are exactly the model's best. Of those, a configuration
/// with the same groups and streamed groups as a better one and a prediction within 0.1% of
/// it is a tie and is skipped (the 8K best are scanned for K that are not ties): the model
/// cannot tell ties apart, so timing one of them teaches as much as timing all. The K best
/// share the optimum's inline set; `--inline-sets M` adds the optima of M other inline sets
/// the inline search solved (every stencil inlined first, then the cheapest), because whether
/// recomputing a producer beats storing it is where the model errs most (cosmo_hdiff4 at
/// 256x256x60: the model has storing two or three laplacians within 3% of inlining them all;
/// measured, storing three ran 10% slower). Each is generated, built and verified like a
/// `bench` variant and timed with the caches flushed (the variants run round-robin, so load on
/// the machine spreads over all of them).
///
/// Then more configurations are timed in measured sweeps (`--refine`, by default a tenth of the
/// original work's auto-tuning grid on this domain less the candidates already timed, so that
/// the whole run times at most a tenth of what `bench --variants autotune` does): a sweep sets
/// one group's tile count along one dimension to each count the original work's auto-tuning
/// tries there (tile sizes 1, 2, 4, ... along x and y; 1, 2, 4, 12, 30, 60 along z), the others
/// kept, and is timed together with the fastest so far (timed again, so the two are compared
/// in one run); a swept configuration that ran faster becomes the fastest so far. The sweeps
/// go along z and y from the fastest so far, then from the candidates measured within 10% of
/// it or predicted within 0.1% of it (the model cannot rank those), then along x from the
/// fastest, then along z and y from the others, fastest first, until the budget is spent.
/// Last, the four fastest (`--confirm`) are timed again together with four times the runs, and
/// the fastest of that run is written: the fastest of many single timings is the one noise
/// favoured most, and the confirmation adds no configuration to the count timed.
/// The model ranks the space well but not exactly: on cosmo_pgrad its best tiling is the
/// 73rd of the 294 the original auto-tuning times, and the sweeps reach it in 11 timings; on
/// hdiff the sweeps of the model's best (whole planes 32 deep, streamed) find nothing faster,
/// and the grid's best is reached from a near tie
/// (docs/decisions/0022-tune-sweeps-and-confirmation.md). `--refine 0` times the model's best
/// only.
///
/// Where the sweeps end (the fastest so far, each step decided within one run; without sweeps
/// the fastest of the model's best) is written as a solution file for `codegen` and `verify`,
/// with a `tuned` section that records its measured time, its rank by the model among the
/// candidates and how many the sweeps added. The table shows each candidate's prediction error; a winner far down
/// the model's ranking says the machine file predicts this program poorly (re-run `absinthe
/// learn`).
///
/// Examples:
///   absinthe tune configs/cosmo_hdiff4.yaml --machine build/demo/machine.yaml
///   absinthe tune configs/hdiff.yaml --top 16 --runs 64 -o hdiff.tuned.yaml
///   absinthe tune configs/heat4.yaml --format json
///   absinthe tune configs/cosmo_pgrad.yaml --refine 0     # the model's best only
#[derive(Args, Clone)]
#[command(verbatim_doc_comment)]
pub struct TuneArgs {
    /// The program file.
    pub program: PathBuf,
    #[command(flatten)]
    pub machine: MachineArg,
    #[command(flatten)]
    pub search: SearchArgs,
    /// How many of the model's best configurations to build and time (1-64).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub top: u64,
    /// Also time the optima of this many other inline sets than the optimum's: every stencil
    /// inlined, then the cheapest the inline search found (0-16; 0: only the optimum's set).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(0..=16))]
    pub inline_sets: u64,
    /// After the model's best, time at most this many more configurations in measured sweeps
    /// of their tile counts: `auto` (a tenth of the original auto-tuning grid on this domain,
    /// less the model's candidates timed), or a count (0-1024; 0: the model's best only).
    #[arg(long, default_value = "auto", value_parser = parse_refine)]
    pub refine: Refine,
    /// Timed runs per candidate; the first quarter of each round is discarded.
    #[arg(long, default_value_t = 32, value_parser = crate::args::parse_runs)]
    pub runs: usize,
    /// At the end, time this many of the fastest candidates again, together, with
    /// `CONFIRM_RUNS_FACTOR` times the runs, and write the fastest of that run (0-16; 0 or 1:
    /// write the fastest of the earlier timings). The fastest of many single timings is the
    /// one noise favoured most; the confirmation compares the finalists in one run.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(0..=16))]
    pub confirm: u64,
    #[command(flatten)]
    pub flush: FlushArgs,
    /// Build and verify bit for bit (`-ffp-contract=off`) instead of the timed FMA build.
    #[arg(long)]
    pub exact: bool,
    /// Build the candidates with relaxed floating-point math (`bench --relaxed-math`).
    #[arg(long, conflicts_with = "exact")]
    pub relaxed_math: bool,
    /// Read templates from this directory first.
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// Draw predicted against measured time of the candidates into FILE.png or FILE.svg.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Where to write the winner's solution (YAML, or JSON if the name ends in .json)
    /// [default: PROGRAM's file stem + .tuned.yaml, in the current directory].
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Output format on standard output (the candidates and the winner).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// How many configurations `tune` times in measured sweeps.
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

fn parse_refine(s: &str) -> Result<Refine, String> {
    if s == "auto" {
        return Ok(Refine::Auto);
    }
    match s.parse::<usize>() {
        Ok(n) if n <= 1024 => Ok(Refine::Count(n)),
        _ => Err(format!("`{s}` is not `auto` or a count from 0 to 1024")),
    }
}

/// How a candidate was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Stage {
    /// The model's best, or another inline set's optimum.
    Model,
    /// A measured sweep of a candidate's tile counts.
    Refine,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::Model => "model",
            Stage::Refine => "refine",
        }
    }
}

/// One timed candidate.
#[derive(Serialize)]
struct Candidate {
    /// The model's rank among the candidates: the feasible ones by predicted time (1 = its
    /// optimum), then those the model rules out (cache, parallel efficiency) by predicted time.
    rank: usize,
    /// How it was chosen: `model` or `refine`.
    stage: Stage,
    /// For `refine`: the rank of the candidate whose sweep tried it (and was timed with it).
    #[serde(skip_serializing_if = "Option::is_none")]
    swept_from: Option<usize>,
    /// The stencils computed where they are read (names; the groups and tiles are of the
    /// program with them inlined).
    inline: Vec<String>,
    groups: Vec<usize>,
    tiles: Vec<[usize; 3]>,
    stream: Vec<usize>,
    predicted_seconds: f64,
    /// Whether the model finds it feasible; a sweep also times configurations it rules out,
    /// whose prediction ignores what rules them out.
    feasible: bool,
    /// The median of its last timing (the fastest so far is timed again with each sweep; the
    /// finalists once more in the confirmation round).
    measured_seconds: Option<f64>,
    /// Whether it was one of the finalists timed again together at the end (`--confirm`).
    confirmed: bool,
    /// `predicted / measured - 1`.
    prediction_error: Option<f64>,
    verified: Option<bool>,
}

/// What `--format json|yaml` prints.
#[derive(Serialize)]
struct Report {
    program: String,
    machine: String,
    candidates: Vec<Candidate>,
    /// How many candidates the measured sweeps added.
    refined: usize,
    /// How many finalists the confirmation round timed again (0: none).
    confirmed: usize,
    /// The runs of each candidate's timing, and of the confirmation round's.
    runs: usize,
    confirm_runs: usize,
    /// The model's rank of the fastest verified candidate.
    winner_rank: usize,
    winner_seconds: f64,
    /// The rank of the model's optimum (the first configuration timed) among the candidates.
    model_optimum_rank: usize,
    /// `measured(the model's optimum) / measured(winner)`.
    speedup_over_model_optimum: Option<f64>,
    solution_file: PathBuf,
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

pub fn run(args: TuneArgs) -> anyhow::Result<ExitCode> {
    let bench = Bench::new(&TimingOptions {
        program: &args.program,
        machine: &args.machine,
        templates: args.templates.as_deref(),
        runs: args.runs,
        flush: args.flush.flush()?,
        warm: false,
        exact: args.exact,
        relaxed_math: args.relaxed_math,
        target: BenchTarget::Openmp,
        roofline: false,
    })?;
    let variants = if args.inline_sets > 0 {
        format!("top:{},sets:{}", args.top, args.inline_sets)
    } else {
        format!("top:{}", args.top)
    };
    let planned = bench.plan(&PlanRequest {
        variants: &variants,
        search: &args.search,
        solver: absinthe_solvers::method::Method::Dp,
        seed: 1,
    })?;
    let (rows, mut failed) = bench.time(&planned)?;
    let mut timed: Vec<Timed> = planned
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
        bail!(
            "{}: no configuration is feasible under the model (see `absinthe solve`)",
            args.program.display()
        );
    }
    let options = args.search.milp_options(&bench.program)?;
    let Some(first) = fastest(&timed, 0) else {
        bail!("no candidate passed verification; nothing to write");
    };
    let budget = args.refine.budget(bench.analysis.domain, timed.len());
    if args.refine == Refine::Auto {
        eprintln!(
            "refine: up to {budget} configuration(s): a tenth of the {} tilings the original auto-tuning times, less the {} timed",
            autotune_tilings(bench.analysis.domain).len(),
            timed.len()
        );
    }
    let (best, f) = refine(&bench, &options, &mut timed, first, budget)?;
    failed |= f;
    let (best, f) = confirm(&bench, &mut timed, best, args.confirm as usize, args.runs)?;
    failed |= f;
    timed[best].winner = true;

    if let Some(path) = &args.plot {
        let points = accuracy_points(timed.iter().map(|t| (&t.planned, &t.row)));
        let title = format!(
            "{}: {} candidates, predicted vs measured",
            bench.program.name,
            points.len()
        );
        absinthe_learn::accuracy::plot(path, &title, &points)?;
        eprintln!("wrote {}", path.display());
    }
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
    let mut rank_of = vec![0; timed.len()];
    for (k, t) in timed.iter().enumerate() {
        rank_of[t.order] = k + 1;
    }
    let candidates: Vec<Candidate> = timed
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
        .collect();
    let winner = &timed[k].planned;
    // The winner's configuration is of the program with its inline set inlined.
    let (_, analysis, _) =
        inline_apply(&bench.program, bench.view.params.operations, &winner.inline)?;
    let cost = evaluate(&analysis, &bench.view, &winner.config);
    let mut solution = Solution::describe(&bench.program.name, &analysis, &winner.config, &cost);
    solution.inline = timed[k].row.inline.clone();
    solution.machine = Some(bench.machine.name.clone());
    solution.tuned = Some(TuneReport {
        candidates: candidates.len(),
        refined,
        model_rank: k + 1,
        measured_seconds: winner_seconds,
        model_optimum_measured_seconds: optimum_seconds,
    });
    let output = args.output.clone().unwrap_or_else(|| {
        let stem = args
            .program
            .file_stem()
            .map_or("program".into(), |s| s.to_string_lossy().into_owned());
        PathBuf::from(format!("{stem}.tuned.yaml"))
    });
    let json = output.extension().is_some_and(|e| e == "json");
    write_atomic(&output, solution_text(&solution, json)?.as_bytes())?;

    let report = Report {
        program: bench.program.name.clone(),
        machine: bench.machine.name.clone(),
        refined,
        confirmed: timed.iter().filter(|t| t.confirmed).count(),
        runs: args.runs,
        confirm_runs: args.runs * CONFIRM_RUNS_FACTOR,
        winner_rank: k + 1,
        winner_seconds,
        model_optimum_rank: optimum + 1,
        speedup_over_model_optimum: optimum_seconds.map(|t| t / winner_seconds),
        solution_file: output.clone(),
        candidates,
    };
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        Format::Yaml => print!(
            "{}",
            absinthe_model::yaml::to_string(&report).map_err(anyhow::Error::msg)?
        ),
        Format::Table => print_table(&bench, &report),
    }
    eprintln!("wrote the solution to {}", output.display());
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// How many times `--runs` the confirmation round times each finalist.
pub const CONFIRM_RUNS_FACTOR: usize = 4;

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

/// The confirmation round (`--confirm`): times the `count` fastest candidates again in one run
/// with [`CONFIRM_RUNS_FACTOR`] times `runs` each, updates their rows and marks them confirmed,
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
    runs: usize,
) -> anyhow::Result<(usize, bool)> {
    let finals = finalists(timed, count);
    if finals.len() < 2 {
        return Ok((best, false));
    }
    let runs = runs * CONFIRM_RUNS_FACTOR;
    eprintln!(
        "confirm: the {} fastest again, together, {runs} runs each",
        finals.len()
    );
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

/// Measured sweeps from the timed candidates (`variants::measured_sweeps`, see
/// [`TuneArgs::refine`]), each in its own inline set's program: adds at most `budget`
/// configurations to `timed`, each sweep timed in one run with the fastest so far (whose row is
/// updated). Returns the fastest at the end and whether some candidate failed verification.
fn refine(
    bench: &Bench,
    options: &MilpOptions,
    timed: &mut Vec<Timed>,
    first: usize,
    budget: usize,
) -> anyhow::Result<(usize, bool)> {
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
        options,
        &mut probes,
        budget,
        |step| -> anyhow::Result<StepTimes> {
            let from = if step.source == step.best {
                "the fastest so far".to_string()
            } else {
                format!("{} (not faster)", timed[step.source].planned.name)
            };
            eprintln!(
                "refine: group {}'s tile count along {} from {from}: {} tiling(s) against the fastest so far ({} more allowed)",
                step.group,
                DIMS[step.dim],
                step.swept.len(),
                step.left,
            );
            let inline = &timed[step.source].planned.inline;
            let mut batch: Vec<Planned> = step
                .swept
                .iter()
                .map(|s| {
                    swept += 1;
                    Planned {
                        name: format!("refine{swept}"),
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
            let (mut rows, f) = bench.time(&batch)?;
            failed |= f;
            batch.pop();
            timed[best].row = rows.pop().expect("one row per planned variant");
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
            Ok(StepTimes {
                swept: timed[start..].iter().map(Timed::seconds).collect(),
                best: timed[best].seconds(),
            })
        },
    )?;
    debug_assert_eq!(probes.len(), timed.len());
    Ok((best.unwrap_or(first), failed))
}

fn print_table(bench: &Bench, report: &Report) {
    let opt = |x: Option<f64>| x.map_or("-".to_string(), human_seconds);
    let body: Vec<Vec<String>> = report
        .candidates
        .iter()
        .map(|c| {
            vec![
                c.rank.to_string(),
                groups_cell(&c.groups),
                tiles_cell(&c.tiles),
                if c.stream.is_empty() {
                    "-".into()
                } else {
                    groups_cell(&c.stream)
                },
                c.inline.len().to_string(),
                c.stage.name().into(),
                if c.feasible {
                    human_seconds(c.predicted_seconds)
                } else {
                    format!("({})", human_seconds(c.predicted_seconds))
                },
                match (c.measured_seconds, c.confirmed) {
                    (Some(m), true) => format!("{}*", human_seconds(m)),
                    (m, _) => opt(m),
                },
                c.prediction_error
                    .map_or("-".into(), |e| format!("{:+.1}%", e * 100.0)),
                match c.verified {
                    Some(true) => "yes",
                    Some(false) => "NO",
                    None => "-",
                }
                .into(),
                if c.rank == report.winner_rank {
                    "<- fastest"
                } else {
                    ""
                }
                .into(),
            ]
        })
        .collect();
    let sets = {
        let mut s: Vec<&Vec<String>> = report.candidates.iter().map(|c| &c.inline).collect();
        s.sort();
        s.dedup();
        s.len()
    };
    println!(
        "{} on {}: {} configurations over {sets} inline set(s), the model's best and {} from measured sweeps, built, verified and timed (median of {} runs, {})",
        bench.program.name,
        bench.machine.name,
        report.candidates.len(),
        report.refined,
        report.runs,
        bench.flush_phrase()
    );
    println!();
    print!(
        "{}",
        table(
            &[
                "rank",
                "groups",
                "tiles",
                "streams",
                "inlined",
                "from",
                "predicted",
                "measured",
                "error",
                "verified",
                ""
            ],
            &body
        )
    );
    if report.confirmed > 0 {
        println!(
            "*: one of the {} fastest, timed again together at the end ({} runs each); the fastest of that run is written",
            report.confirmed, report.confirm_runs
        );
    }
    if report.candidates.iter().any(|c| !c.feasible) {
        println!("(predicted): a configuration the model rules out (cache or parallel efficiency), timed by a sweep; its prediction ignores that");
    }
    println!();
    match report.speedup_over_model_optimum {
        Some(s) if report.winner_rank != report.model_optimum_rank => println!(
            "fastest: the model's rank {} ({}), {:.1}% faster than the model's optimum (rank {})",
            report.winner_rank,
            human_seconds(report.winner_seconds),
            (s - 1.0) * 100.0,
            report.model_optimum_rank
        ),
        _ => println!(
            "fastest: the model's optimum (rank {}, {})",
            report.model_optimum_rank,
            human_seconds(report.winner_seconds)
        ),
    }
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
