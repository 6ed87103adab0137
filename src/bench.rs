//! `absinthe bench PROGRAM`: build, run and verify variants of a program and compare them.

use std::path::PathBuf;

use absinthe_measure::accuracy::check_plot_path;
use absinthe_measure::bench::{BenchOptions, BenchTarget, Build};
use absinthe_measure::variants::{input_files, parse_variants, Variant, BENCH_DEFAULT};
use anyhow::Context;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;

use crate::args::{bench_of, plan_on, FlushArgs, MachineArg, SearchArgs};
use crate::output::Format;
use absinthe_codegen::files::outputs_apart;

/// Generate, compile, run and verify variants of a program; compare predicted and measured.
///
/// Variants (comma-separated): `opt` (the MILP optimum), `naive` (the reference itself:
/// unfused, untiled, parallel over k), `unfused` (every stencil its own group, MILP-chosen
/// tiles), `fused` (one group, if the model finds it feasible), `unstreamed` (the optimum in
/// the original schedule space: no group streams; on CUDA the whole-tile kernels, to compare
/// with `opt`'s z-streaming ones), `groups:0,0,1,...` (fixed
/// groups, MILP-chosen tiles), `random:N` (N random feasible configurations, seeded),
/// `noinline` (the optimum with nothing inlined; `opt` inlines what the search chose),
/// `top:K` (the K best configurations by the model, from the exact search, named top1..topK,
/// with `opt`'s inline set), `sets:M` (the optima of M other inline sets than `opt`'s: every
/// stencil inlined, then the cheapest the search found, named set2..),
/// `solution:FILE` (the configuration and inline set of a solution file, e.g. one `tune`
/// wrote), `autotune` (the original work's exhaustive tile auto-tuning for the optimum's
/// groups: tile sizes 1, 2, 4, ... along x and y and 1, 2, 4, 12, 30, 60 along z, the same for
/// every group; 294 variants at 64x64x60).
/// A variant that fails verification makes the command exit with status 1.
///
/// Examples:
///   absinthe bench configs/hdiff.yaml --variants naive,unfused,opt
///   absinthe bench configs/heat4.yaml --variants opt,groups:0,0,1,1,random:4 --format json
///   absinthe bench configs/heat4.yaml --variants solution:heat4.tuned.yaml,opt,autotune
///   absinthe bench configs/hdiff.yaml --target cuda-emulated --machine machines/h100.yaml \
///       --variants naive,unstreamed,opt
#[derive(Args, Clone)]
#[command(verbatim_doc_comment)]
pub struct BenchArgs {
    /// The program file.
    pub program: PathBuf,
    #[command(flatten)]
    pub machine: MachineArg,
    #[command(flatten)]
    pub search: SearchArgs,
    /// How to solve: highs, cbc or z3 (MILP backends), or dp (exact dynamic program).
    #[arg(long, default_value = "highs", value_parser = crate::args::parse_method)]
    pub solver: absinthe_solvers::method::Method,
    /// Variants to run, e.g. naive,unfused,opt,groups:0,0,1,random:3 [default: naive,unfused,opt;
    /// with --ranks: opt, opt+overlap and the single-process optimum decomposed].
    #[arg(long, value_parser = |s: &str| parse_variants(s).map(Variants))]
    pub variants: Option<Variants>,
    /// Timed runs per variant; the first quarter is discarded.
    #[arg(long, default_value_t = 64, value_parser = crate::args::parse_runs)]
    pub runs: usize,
    #[command(flatten)]
    pub flush: FlushArgs,
    #[command(flatten)]
    pub scalars: crate::args::ScalarArgs,
    /// Also time every variant with warm caches (no flush before a run, so the arrays stay in
    /// the caches the previous run left them in), interleaved with the flushed runs, into
    /// `measured_warm_seconds`. Flushed minus warm is what fetching the arrays from memory
    /// adds; the model's fast and compute parts should account for the warm time alone.
    #[arg(long)]
    pub warm: bool,
    /// Seed of `random:N`.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Skip the bandwidth and divider measurements and the roofline columns.
    #[arg(long)]
    pub no_roofline: bool,
    /// Read templates from this directory first.
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// Draw predicted against measured time into FILE.png or FILE.svg (log axes, the
    /// diagonal and the ±20% lines, the optimum marked).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Build for bit-exact verification (`-ffp-contract=off`, every value compared bit for bit)
    /// instead of the timed build (FMA contraction allowed, most divisions by a literal made
    /// through its reciprocal with a correction, correctly rounded; values compared within 1024
    /// ulps of each array's largest magnitude).
    #[arg(long)]
    pub exact: bool,
    /// Build the kernels with relaxed floating-point math: the timed build plus
    /// `-fassociative-math -freciprocal-math -fno-signed-zeros`, so the compiler may
    /// reassociate and distribute arithmetic (`(a/60) u - (b/60) w` becomes one product by
    /// 1/60), as Halide does by default. NaN and infinity semantics are kept. The reference
    /// is built without them and the kernels are verified against it within the same 1024 ulps
    /// of each array's largest magnitude; a program whose values cancel badly fails that check
    /// and the command says so.
    #[arg(long, conflicts_with = "exact")]
    pub relaxed_math: bool,
    /// What to build: the OpenMP kernels, or the host emulation of the CUDA kernels (one
    /// block at a time on the CPU; it verifies the GPU index arithmetic, its times are not GPU
    /// times). `cuda-emulated` without `--machine` uses machines/h100.yaml. Not with --ranks,
    /// which times OpenMP code on MPI ranks.
    #[arg(long, default_value = "openmp", conflicts_with = "ranks", value_parser = PossibleValuesParser::new(BenchTarget::NAMES).try_map(|s| s.parse::<BenchTarget>()))]
    pub target: BenchTarget,
}

/// The parsed `--variants` list.
#[derive(Clone, Debug)]
pub struct Variants(pub Vec<Variant>);

pub fn run(mut args: BenchArgs) -> anyhow::Result<std::process::ExitCode> {
    if args.target == BenchTarget::CudaEmulated && args.machine.machine.is_none() {
        let gpu = crate::output::shipped_file(crate::args::DEFAULT_GPU_MACHINE)
            .context("--target cuda-emulated without --machine uses the shipped H100 file")?;
        args.machine.machine = Some(gpu);
    }
    let build = Build::of_flags(args.exact, args.relaxed_math);
    let options = BenchOptions {
        warm: args.warm,
        cache_model: args.format == Format::Json,
        ..BenchOptions::new(args.runs, args.flush.flush()?, build, args.target)
    };
    let variants = args.variants.map_or(BENCH_DEFAULT.to_vec(), |v| v.0);
    let machine = args.machine.path()?;
    let inputs = input_files(&args.program, &machine, &variants);
    outputs_apart(&[args.plot.as_deref()], &inputs)?;
    args.plot.as_deref().map(check_plot_path).transpose()?;
    let (path, search, templates) = (&args.program, &args.search, args.templates.as_deref());
    let mut bench = bench_of(path, &args.machine, templates, &args.scalars, options)?;
    let settings = search.plan_settings(&bench.program, args.solver, args.seed)?;
    // Planned first, so that a variant that cannot be planned is refused before the bandwidth
    // is measured.
    let planned = plan_on(&bench, &variants, &settings)?;
    if !args.no_roofline {
        crate::output::step("measuring streaming bandwidth ...");
        bench.measure_roofline()?;
    }
    let report = bench.report(&planned)?;
    if args.format != Format::Table {
        eprint!("{}", report.warnings());
    }
    crate::output::print(args.format, &report, report.text())?;
    if let (false, Some(summary)) = (args.format == Format::Table, report.accuracy_summary()) {
        eprintln!("{summary}");
    }
    // After the results, so that a plot that cannot be drawn loses none of them.
    if let Some(path) = &args.plot {
        report.plot(path)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(std::process::ExitCode::from(u8::from(report.failed)))
}
