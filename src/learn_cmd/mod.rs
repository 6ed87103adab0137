//! `absinthe learn --machine FILE`: measure this machine and write the model parameters (and
//! their provenance) into the machine file. Nothing is written before the end, and then
//! atomically, so an interrupted run (Ctrl-C) leaves the file untouched.

mod gpu;
mod network;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use absinthe_learn::machine_file::read;
use absinthe_learn::pipeline::{self, Host, Outputs, Request};
use absinthe_learn::text::{start_line, Bar};
use absinthe_model::formats::model_kind::ModelKind;
use clap::Args;

use crate::args::{FlushArgs, Target};
use absinthe_codegen::files::write_atomic;

/// Measure this machine and write the model's parameters into its machine file.
///
/// When the file lists `compiler.candidates`, it first times six kernels (j3d7pt, example2,
/// streams8, chain16 and two of its own) built with the file's flags and with each candidate
/// added, in rounds that alternate their order, and writes into `compiler.flags` the fastest
/// candidate that is faster than the file's flags with 95% confidence over the rounds (else the
/// file's own; --keep-flags skips this); everything after is built with them. Builds fifteen synthetic training programs (fast memory: chains of nine stencils reading one
/// input at 12 or 20 positions, or at 12 with twelve products of differences on top so that
/// arithmetic varies apart from accesses, only the last stored, at evaluation width 0 or 1; slow
/// memory: nine stencils reading 1-3 fresh inputs at boundary width 0-2, every other one stored),
/// each once with tile counts taken at run time (--generated-kernels: the generated kernel of every
/// tile shape, bundled per program), times them over tile shapes of 64 cells and up that fit the
/// cache (an even spread of a grid, plus one full-row shape, one tile along x as the solver's
/// optima take, per five of them, at most four), in 4 rounds that interleave the programs, and fits
/// the parameters by least absolute deviations (the slow base body held at zero: every slow
/// training stencil touches slow memory, so it cannot be told from the stream body; see
/// docs/decisions/0008-slow-base-body-held-at-zero.md). It times what a division, a `sqrt` and
/// `exp` cost at their units' throughput, in adds, as `params.operations`, and holds `compute.body`
/// at the add's time (docs/decisions/0045-compute-body-measured.md). Then it times real kernels,
/// four shipped example programs (j3d7pt, example2, streams8, chain16: the model's optimum and 8
/// random configurations of each), and refits the parameters to them and the training programs
/// together, each kernel stencil through the model's `max + 0.25 min` of its two sides (`exposed`,
/// docs/decisions/0047-exposed-share.md): the training programs alone predict real programs within
/// 20% for 25-40% of their variants, the refit for 62-70% (--no-kernel-refit skips it). Then it chooses `cache_fraction`, the share of
/// `cache_bytes` a tile may fill: it solves two calibration programs (chains of six gradients
/// touching 19 arrays, on 256x128x60 and 64x64x60) with the new parameters at fractions 0.25, 1/3,
/// 0.5, 0.75, 1 and the file's own, times every distinct optimum in 8 rounds, and keeps the
/// file's own unless the fastest ran faster round by round with 95% confidence (and by over 2%);
/// then, of the fractions as fast as the fastest, the nearest (--keep-cache-fraction skips this).
/// The file may lack `params`, `cores` (default: this machine's CPUs) and `cache_bytes` (default:
/// the L2 size sysfs reports). Only `params`, `learned`, `compiler`, `cache_fraction` and
/// `group_arrays` are rewritten (and missing `cores`/`cache_bytes` added); comments and every
/// other key stay as written.
///
/// Examples:
///   absinthe learn --machine machines/template.yaml --out mybox.yaml
///   absinthe learn --machine machines/default.yaml --out machines/learned.yaml --keep-data data/
///   absinthe learn --machine machines/h100.yaml --target cuda --out gpu.yaml   (nvcc and a GPU here)
///   absinthe learn --machine machines/h100.yaml --target cuda --emit bundles/  (then sh bundles/run.sh
///       on the GPU machine, and: absinthe learn --machine machines/h100.yaml --target cuda
///       --timings bundles/ --out gpu.yaml)
#[derive(Args, Clone)]
#[command(verbatim_doc_comment)]
pub struct LearnArgs {
    /// The machine file to read (and to write, without --out).
    #[arg(long, value_name = "FILE")]
    pub machine: PathBuf,
    /// Write the result here instead of over --machine.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The original work's full grid: 103 tile shapes per family, 64 repeats (about an hour).
    #[arg(long)]
    pub thorough: bool,
    /// Write the raw measurements as CSV (measurements.csv) into this directory.
    #[arg(long, value_name = "DIR")]
    pub keep_data: Option<PathBuf>,
    /// Tile shapes per family (1-103), beside one full-row shape per five (at most four) [default: 20, or 103 with --thorough].
    #[arg(long, hide = true, value_parser = clap::value_parser!(u64).range(1..=103))]
    pub shapes: Option<u64>,
    /// Timed runs per shape (1-1024) [default: 16, or 64 with --thorough].
    #[arg(long, hide = true, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub repeats: Option<u64>,
    #[command(flatten)]
    pub flush: FlushArgs,
    /// The LP backend of the fit.
    #[arg(long, default_value = "highs", value_parser = crate::args::parse_backend)]
    pub solver: absinthe_solvers::method::Backend,
    /// Time the generated kernels, one per tile shape bundled per program (the code `bench`
    /// times and `codegen` ships), instead of one runtime-tiled kernel per program. About two
    /// minutes longer from a cold build cache; neither predicts the real programs clearly
    /// better (docs/decisions/0009-training-design.md).
    #[arg(long)]
    pub generated_kernels: bool,
    /// Also time the slow programs streamed, as generated kernels, at up to four whole-row
    /// tilings with contiguous faces whose streamed window fits the cache (an experiment: the
    /// predictions of real programs are not clearly better;
    /// docs/decisions/0010-streamed-training-shapes-off.md).
    #[arg(long, hide = true)]
    pub streamed_shapes: bool,
    /// Keep the machine file's `cache_fraction` instead of choosing it by measurement. By
    /// default, after the fit, `learn` solves two calibration programs (chains of gradients
    /// touching 19 arrays) with the new parameters at cache fractions 0.25, 1/3, 0.5, 0.75, 1
    /// and the file's own, times each distinct optimum in 8 rounds, and writes into
    /// `cache_fraction` the file's own unless the fastest ran faster round by round with 95%
    /// confidence (and by over 2%); then, of the fractions as fast as the fastest, the one
    /// nearest the file's own.
    #[arg(long)]
    pub keep_cache_fraction: bool,
    /// Keep `compiler.flags` instead of choosing among `compiler.candidates` by measurement.
    #[arg(long)]
    pub keep_flags: bool,
    /// Rounds of the flag choice (2-64) [default: 12].
    #[arg(long, hide = true, value_parser = clap::value_parser!(u64).range(2..=64))]
    pub flag_rounds: Option<u64>,
    /// Keep `compiler.division` instead of choosing it by measurement. By default, after the
    /// flags, `learn` builds a kernel of its own that divides by literals (learn_divide) to
    /// divide through the reciprocal and with a division instruction, times both in 12 rounds,
    /// every run verified, and writes `division: divide` when the division ran faster round by
    /// round with 95% confidence; else the reciprocal (the default) stays. Both forms give the
    /// correctly rounded quotient. A few seconds (4 s on a 2-core Xeon).
    #[arg(long)]
    pub keep_division: bool,
    /// Rounds of the division choice (2-64) [default: 12].
    #[arg(long, hide = true, value_parser = clap::value_parser!(u64).range(2..=64))]
    pub division_rounds: Option<u64>,
    /// Keep the machine file's `group_arrays` (the most arrays one group may touch in a
    /// program streamed along y) instead of choosing it by measurement. By default, after the
    /// cache fraction, `learn` solves the calibration programs and four fields sharing one
    /// coefficient (a group of all four walks 13 arrays) with no limit and
    /// limits of 16, 12, 10, 8 and 6 arrays per group, times each distinct optimum, and writes
    /// into `group_arrays` the limit chosen by the rule of the cache fraction's.
    #[arg(long)]
    pub keep_group_arrays: bool,
    /// Skip the kernel refit. By default, after the synthetic fit, `learn` times four shipped
    /// example programs (j3d7pt, example2, streams8, chain16: each one's optimum and 8 random
    /// configurations, 8 runs each, caches flushed, every run verified) and refits the parameters to the
    /// training programs and these kernels together, each kernel stencil through the model's
    /// `max + 0.25 min` of its fast and slow sides (docs/decisions/0011-kernel-refit-four-kernels.md,
    /// 0047-exposed-share.md). About 40
    /// seconds. With --target cuda the kernels run in the bundles on the GPU; this flag leaves
    /// them out of --emit's bundles, or out of --timings' fit.
    #[arg(long)]
    pub no_kernel_refit: bool,
    /// Configurations per kernel in the refit beside its optimum (0-64) [default: 8]: random
    /// ones; with --target cuda, half of them the model's next best.
    #[arg(long, hide = true, value_parser = clap::value_parser!(u64).range(0..=64))]
    pub kernel_variants: Option<u64>,
    /// Domains of the calibration programs, e.g. 64,64,60 (repeat for several)
    /// [default: 256,128,60 and 64,64,60].
    #[arg(long, value_delimiter = ',', value_name = "X,Y,Z", hide = true)]
    pub calibration_domain: Vec<usize>,
    /// Write the training and calibration programs (YAML, one file each) into this directory
    /// and stop: to see what `learn` measures, or to run them through `bench`.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["out", "keep_data", "ranks", "emit", "timings", "calibration_domain"])]
    pub write_programs: Option<PathBuf>,
    /// What to learn: this CPU (`openmp`), or a GPU (`cuda`): the training programs as CUDA
    /// kernels, one thread block per x-y tile streaming along z, at the tile shapes the GPU
    /// view of the model admits, each verified against the CPU reference and timed with CUDA
    /// events; only `params` and `learned` are rewritten (the `gpu:` section, `cache_fraction`
    /// and the operation weights stay as written). Without --emit or --timings this needs nvcc
    /// ($NVCC, else on PATH) and a GPU here.
    #[arg(long, value_enum, default_value_t = Target::Openmp)]
    pub target: Target,
    /// With --target cuda: write the CUDA training bundles (`.cu` files, each several tile
    /// shapes of one program),
    /// `manifest.json` and `run.sh` into DIR and stop, for a machine that has a GPU and nvcc
    /// but not absinthe: there `sh DIR/run.sh` builds and runs them into DIR/output.txt; then
    /// `absinthe learn --target cuda --timings DIR` fits here.
    #[arg(long, value_name = "DIR", conflicts_with = "timings")]
    pub emit: Option<PathBuf>,
    /// With --target cuda: fit to the timings in DIR (DIR/manifest.json and DIR/output.txt,
    /// from --emit and run.sh) instead of measuring.
    #[arg(long, value_name = "DIR")]
    pub timings: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Measure only the MPI transport between N ranks (`mpirun -np N`: a ping-pong, then the
    /// generated code's halo exchange on a Cartesian grid of the N ranks) and write the machine
    /// file's `network:` section (latency, bandwidth), which `solve --ranks` prices exchanges
    /// with; the rest of the file stays as it is. A few seconds.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(2..=1024))]
    pub ranks: Option<u64>,
    /// The form of the model to fit: `linear` (the default, every step above) or `absinthe`,
    /// the original model as published: its six parameters fitted to the training programs
    /// alone, a store weighted like a load, no compute part and no crowding charge; the kernel
    /// refit and both calibrations are skipped. The file records the form (`learned.model`),
    /// and commands price with it unless `--model` says otherwise.
    #[arg(long, value_name = "linear|absinthe", value_parser = ModelKind::parse, default_value = "linear")]
    pub model: ModelKind,
}

pub fn run(args: LearnArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    if let Some(dir) = &args.write_programs {
        read(&args.machine)?;
        let written = pipeline::write_programs(dir, &[&args.machine]).map_err(anyhow::Error::msg);
        crate::output::emit(format_args!("{}", written?))?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.target == Target::Cuda && !args.model.is_default() {
        anyhow::bail!(
            "--model {} fits a CPU; --target cuda fits the linear form",
            args.model
        );
    }
    if args.target == Target::Cuda {
        return gpu::run(&args);
    }
    if args.emit.is_some() || args.timings.is_some() {
        anyhow::bail!("--emit and --timings go with --target cuda");
    }
    if let Some(ranks) = args.ranks {
        return network::run(&args, ranks as usize);
    }
    let outputs = outputs(&args);
    outputs.check()?;
    let (machine, text) = read(&args.machine)?;
    if let Some(why) = machine.target_mismatch(false) {
        anyhow::bail!("{}: {why}", args.machine.display());
    }
    let host = Host::of(&machine)?;
    let (options, steps) = request(&args).plan(&machine, host, args.flush.flush()?)?;
    if !args.quiet {
        eprintln!("{}", start_line(&machine, &options));
    }
    let bar = Bar::new(started, args.quiet);
    let learning = pipeline::run(&machine, &text, host, &options, &steps, &|e| bar.event(e))?;
    let out = outputs.write(&learning.text, &learning.result.measurements, &write)?;
    let seconds = started.elapsed().as_secs_f64();
    crate::output::emit(format_args!("{}", learning.report(&machine, seconds, out)))?;
    Ok(ExitCode::SUCCESS)
}

/// What the flags ask to measure and fit.
fn request(args: &LearnArgs) -> Request {
    Request {
        thorough: args.thorough,
        shapes: args.shapes.map(|n| n as usize),
        repeats: args.repeats.map(|n| n as usize),
        solver: args.solver,
        generated_kernels: args.generated_kernels,
        streamed_shapes: args.streamed_shapes,
        model: args.model,
        kernel_refit: !args.no_kernel_refit,
        kernel_variants: args.kernel_variants.map(|n| n as usize),
        cache_fraction: !args.keep_cache_fraction,
        compiler_flags: !args.keep_flags,
        flag_rounds: args.flag_rounds.map(|r| r as usize),
        division: !args.keep_division,
        division_rounds: args.division_rounds.map(|r| r as usize),
        group_arrays: !args.keep_group_arrays,
        calibration_domain: args.calibration_domain.clone(),
    }
}

/// Where the flags send what `learn` writes: --out (or over --machine), and --keep-data.
fn outputs(args: &LearnArgs) -> Outputs<'_> {
    let out = args.out.as_deref().unwrap_or(&args.machine);
    Outputs::new(out, args.keep_data.as_deref())
}

/// Writes `text` to `path` atomically: the libraries' file writer.
fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    Ok(write_atomic(path, text.as_bytes())?)
}
