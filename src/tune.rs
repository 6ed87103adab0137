//! `absinthe tune PROGRAM`: model-guided auto-tuning; the winner is written as a solution file.

use std::path::PathBuf;

use absinthe_measure::bench::{BenchOptions, BenchTarget, Build};
use absinthe_measure::tune::{default_solution_path, parse_refine, tune, Refine, TuneOptions};
use absinthe_measure::MeasureError;
use absinthe_solvers::method::Method;
use clap::Args;

use crate::args::{bench_of, FlushArgs, MachineArg, SearchArgs};
use crate::output::{solution_text, Format};
use absinthe_codegen::files::{outputs_apart, write_atomic};
use absinthe_measure::accuracy::check_plot_path;

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
// `--ranks` comes with the search flags; this command refuses it, so its help leaves it out.
#[command(verbatim_doc_comment, mut_arg("ranks", |a| a.hide(true)))]
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
    /// four times the runs, and write the fastest of that run (0-16; 0 or 1:
    /// write the fastest of the earlier timings). The fastest of many single timings is the
    /// one noise favoured most; the confirmation compares the finalists in one run.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(0..=16))]
    pub confirm: u64,
    #[command(flatten)]
    pub flush: FlushArgs,
    #[command(flatten)]
    pub scalars: crate::args::ScalarArgs,
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

pub fn run(args: TuneArgs) -> anyhow::Result<std::process::ExitCode> {
    args.search.refuse_ranks("tune")?;
    let build = Build::of_flags(args.exact, args.relaxed_math);
    let options = BenchOptions::new(args.runs, args.flush.flush()?, build, BenchTarget::Openmp);
    let (program, templates) = (&args.program, args.templates.as_deref());
    let output = args
        .output
        .clone()
        .unwrap_or(default_solution_path(program));
    let machine = args.machine.path()?;
    outputs_apart(&[Some(&output), args.plot.as_deref()], &[program, &machine])?;
    args.plot.as_deref().map(check_plot_path).transpose()?;
    let bench = bench_of(program, &args.machine, templates, &args.scalars, options)?;
    crate::output::step(&format!("planning variants of {} ...", bench.program.name));
    let options = TuneOptions {
        top: args.top as usize,
        inline_sets: args.inline_sets as usize,
        refine: args.refine,
        confirm: args.confirm as usize,
        plan: args.search.plan_settings(&bench.program, Method::Dp, 1)?,
    };
    let mut tuning = tune(&bench, &options).map_err(|e| match e {
        MeasureError::NothingFeasible => anyhow::anyhow!("{}: {e}", program.display()),
        e => e.into(),
    })?;
    let json = absinthe_model::output::solution::Solution::json_named(&output);
    let text = solution_text(&tuning.solution, json)?;
    tuning.report.solution_file = output.clone();
    let report = &tuning.report;
    // The report first: a solution file that cannot be written then loses no measurement.
    crate::output::print(args.format, report, report.text(&bench.flush_phrase()))?;
    write_atomic(&output, text.as_bytes())?;
    eprintln!("wrote the solution to {}", output.display());
    // Last, so that a plot that cannot be drawn loses neither the solution nor the report.
    if let Some(path) = &args.plot {
        tuning.plot(path)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(std::process::ExitCode::from(u8::from(tuning.failed)))
}
