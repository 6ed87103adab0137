//! `absinthe learn --machine FILE`: measure this machine and write the model parameters (and
//! their provenance) into the machine file. Nothing is written before the end, and then
//! atomically, so an interrupted run (Ctrl-C) leaves the file untouched.

mod gpu;
mod network;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;
use std::time::Instant;

use absinthe_codegen::compile::{OperationTimes, Toolchain};
use absinthe_codegen::host::l2_cache_bytes;
use absinthe_learn::pipeline::{self, Event, Step, Steps};
use absinthe_learn::{
    calibrate, kernels, training, training_runs, Kernels, LearnOptions, Progress,
};
use absinthe_model::formats::learned::{CrowdingCalibration, FitQuality};
use absinthe_model::formats::machine::OperationWeights;
use absinthe_model::formats::machine::{Machine, Params};
use absinthe_model::formats::model_kind::ModelKind;
use anyhow::Context;
use clap::Args;

use crate::args::FlushArgs;
use crate::args::Target;
use crate::output::write_atomic;
use absinthe_model::output::text::{human_seconds, table};

/// Measure this machine and write the model's parameters into its machine file.
///
/// Builds fifteen synthetic training programs (fast memory: chains of nine stencils reading one
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
/// `exp` cost against an add in a vectorised row loop over cache-resident planes and writes them as
/// `params.operations` (in adds: the mean of a first and a second one per cell). Then it times real
/// kernels, four shipped example programs (j3d7pt, example2, streams8, chain16: the model's optimum
/// and 8 random configurations of each), and refits the parameters to them and the training
/// programs together, each kernel stencil through the model's max of its fast and slow sides: the
/// training programs alone predict real programs within 20% for 25-40% of their variants, the refit
/// for 62-70% (--no-kernel-refit skips it). Then it chooses `cache_fraction`, the share of
/// `cache_bytes` a tile may fill: it solves two calibration programs (chains of six gradients
/// touching 19 arrays, on 256x128x60 and 64x64x60) with the new parameters at fractions 0.25, 1/3,
/// 0.5, 0.75, 1 and the file's own, times every distinct optimum, and keeps the fraction whose
/// optima ran fastest (the file's own when within 2%; --keep-cache-fraction skips this). The file
/// may lack `params`, `cores` (default: this machine's CPUs) and `cache_bytes` (default: the L2
/// size sysfs reports). Only `params`, `learned` and `cache_fraction` are rewritten (and missing
/// `cores`/`cache_bytes` added); comments and every other key stay as written.
///
/// Examples:
///   absinthe learn --machine machines/mybox.yaml
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
    /// Tile shapes per family, beside one full-row shape per five (at most four) [default: 20, or 103 with --thorough].
    #[arg(long, hide = true)]
    pub shapes: Option<usize>,
    /// Timed runs per shape [default: 16, or 64 with --thorough].
    #[arg(long, hide = true)]
    pub repeats: Option<usize>,
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
    /// and the file's own, times each distinct optimum, and writes the fraction whose optima
    /// ran fastest (the file's own when within 2% of it) into `cache_fraction`.
    #[arg(long)]
    pub keep_cache_fraction: bool,
    /// Keep the machine file's `group_arrays` (the most arrays one group may touch in a
    /// program streamed along y) instead of choosing it by measurement. By default, after the
    /// cache fraction, `learn` solves the calibration programs and four fields sharing one
    /// coefficient (a group of all four walks 13 arrays) with no limit and
    /// limits of 16, 12, 10, 8 and 6 arrays per group, times each distinct optimum, and writes
    /// the limit whose optima ran fastest (the file's own when within 2%) into `group_arrays`.
    #[arg(long)]
    pub keep_group_arrays: bool,
    /// Skip the kernel refit. By default, after the synthetic fit, `learn` times four shipped
    /// example programs (j3d7pt, example2, streams8, chain16: each one's optimum and 8 random
    /// configurations, 8 runs each, caches flushed, every run verified) and refits the parameters to the
    /// training programs and these kernels together, each kernel stencil through the model's
    /// max of its fast and slow sides (docs/decisions/0011-kernel-refit-four-kernels.md). About 40
    /// seconds. With --target cuda the kernels run in the bundles on the GPU; this flag leaves
    /// them out of --emit's bundles, or out of --timings' fit.
    #[arg(long)]
    pub no_kernel_refit: bool,
    /// Random configurations per kernel in the refit [default: 8].
    #[arg(long, hide = true)]
    pub kernel_variants: Option<usize>,
    /// Domains of the calibration programs, e.g. 64,64,60 (repeat for several)
    /// [default: 256,128,60 and 64,64,60].
    #[arg(long, value_delimiter = ',', value_name = "X,Y,Z", hide = true)]
    pub calibration_domain: Vec<usize>,
    /// Write the training and calibration programs (YAML, one file each) into this directory
    /// and stop: to see what `learn` measures, or to run them through `bench`.
    #[arg(long, value_name = "DIR")]
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
    /// with; the rest of the file stays as it is. About 10 seconds.
    #[arg(long, value_name = "N")]
    pub ranks: Option<usize>,
    /// The form of the model to fit: `linear` (the default, every step above) or `absinthe`,
    /// the original model as published: its six parameters fitted to the training programs
    /// alone, a store weighted like a load, no compute part and no crowding charge; the kernel
    /// refit and both calibrations are skipped. The file records the form (`learned.model`),
    /// and commands price with it unless `--model` says otherwise.
    #[arg(long, value_name = "linear|absinthe", value_parser = ModelKind::parse, default_value = "linear")]
    pub model: ModelKind,
}

/// A one-line progress bar on standard error.
struct Bar {
    total: AtomicUsize,
    done: AtomicUsize,
    started: Mutex<Instant>,
    quiet: bool,
}

impl Bar {
    /// A bar started at `started`.
    fn new(started: Instant, quiet: bool) -> Bar {
        Bar {
            total: 0.into(),
            done: 0.into(),
            started: Mutex::new(started),
            quiet,
        }
    }

    /// Empties the bar for the next step, its clock started now.
    fn restart(&self) {
        self.total.store(0, SeqCst);
        self.done.store(0, SeqCst);
        if let Ok(mut started) = self.started.lock() {
            *started = Instant::now();
        }
    }

    fn update(&self, event: Progress) {
        let what = match event {
            Progress::Start { total } => {
                self.total.store(total, SeqCst);
                "building".to_string()
            }
            Progress::Step { what } => {
                self.done.fetch_add(1, SeqCst);
                what
            }
        };
        if self.quiet {
            return;
        }
        let (done, total) = (self.done.load(SeqCst), self.total.load(SeqCst).max(1));
        let width = 30;
        let filled = width * done.min(total) / total;
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r[{}{}] {done}/{total} {:>5.0}s  {what:<24}",
            "#".repeat(filled),
            " ".repeat(width - filled),
            self.started
                .lock()
                .map_or(0.0, |s| s.elapsed().as_secs_f64())
        );
        if done >= total {
            let _ = writeln!(err);
        }
        let _ = err.flush();
    }
}

pub fn run(args: LearnArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    if args.target == Target::Cuda {
        if !args.model.is_default() {
            anyhow::bail!(
                "--model {} fits a CPU; --target cuda fits the linear form",
                args.model
            );
        }
        return gpu::run(&args);
    }
    if args.emit.is_some() || args.timings.is_some() {
        anyhow::bail!("--emit and --timings go with --target cuda");
    }
    if let Some(ranks) = args.ranks {
        return network::run(&args, ranks);
    }
    if let Some(dir) = &args.write_programs {
        return write_programs(dir);
    }
    let machine = Machine::load(&args.machine)?;
    let text = std::fs::read_to_string(&args.machine)
        .with_context(|| format!("cannot read {}", args.machine.display()))?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = machine.cores.unwrap_or(cpus);
    let cache_bytes = match machine.cache_bytes {
        Some(c) => c,
        None => l2_cache_bytes().context(
            "the machine file has no cache_bytes and sysfs reports no cache size; add cache_bytes",
        )?,
    };
    let options = learn_options(&args, &machine, (threads, cache_bytes), cpus)?;
    let full = args.model.inlines();
    let steps = Steps {
        kernel_refit: (full && !args.no_kernel_refit)
            .then(|| args.kernel_variants.unwrap_or(kernels::KERNEL_VARIANTS)),
        cache_fraction: full && !args.keep_cache_fraction,
        group_arrays: full && !args.keep_group_arrays,
        // Checked before the long part.
        domains: calibration_domains(&args.calibration_domain)?,
    };
    if !args.quiet {
        eprintln!(
            "learning {} with {threads} threads, tiles for {} KiB of cache: {} shapes (and up to {} full-row ones) x {} runs per program ...",
            machine.name,
            (options.tile_bytes / 1024.0).round(),
            options.shapes,
            training::most_full_row_shapes(options.shapes),
            options.repeats
        );
    }
    let bar = Bar::new(started, args.quiet);
    let events = |e: Event| match e {
        Event::Progress(p) => bar.update(p),
        Event::Warning(w) => eprintln!("warning: {w}"),
        Event::Step(step) => {
            bar.restart();
            if !args.quiet {
                eprintln!("{}", step_phrase(&step));
            }
        }
    };
    let learning = pipeline::run(
        &machine,
        &text,
        (threads, cache_bytes),
        &options,
        &steps,
        &events,
    )?;
    let result = &learning.result;
    let out = write_learned(&args, &learning.text, result)?;
    println!(
        "R² (per-configuration medians): fast {:.3}, slow {:.3}; {} samples; {:.0} s",
        result.r2_fast,
        result.r2_slow,
        result.measurements.len(),
        started.elapsed().as_secs_f64()
    );
    print_crowding(&result.crowding, &result.params);
    if let Some(t) = &learning.operations {
        print_operations(t, &result.params.operations);
    }
    if let Some((r, rows)) = &learning.refit {
        let refitted = FitQuality {
            fast: result.r2_fast,
            slow: result.r2_slow,
        };
        print_refit(r, rows, learning.synthetic_r2, refitted);
    }
    if let Some(c) = &learning.calibration {
        print_calibration(c, machine.cache_fraction);
    }
    if let Some(c) = &learning.limit_calibration {
        print_limit_calibration(c, machine.group_arrays);
    }
    println!("wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
}

/// What to measure, from the flags: `threads` threads, tiles for `cache_bytes` of cache,
/// `cpus` compilers at a time.
fn learn_options(
    args: &LearnArgs,
    machine: &Machine,
    (threads, cache_bytes): (usize, u64),
    cpus: usize,
) -> anyhow::Result<LearnOptions> {
    let (shapes, repeats) = LearnOptions::budget(args.thorough);
    Ok(LearnOptions {
        shapes: args.shapes.unwrap_or(shapes),
        repeats: args.repeats.unwrap_or(repeats).max(1),
        domain: training::DOMAIN,
        threads,
        tile_bytes: cache_bytes as f64 * machine.cache_fraction,
        flush: args.flush.flush()?,
        toolchain: Toolchain::new(&machine.compiler.cxx, &machine.compiler.flags),
        solver: args.solver,
        jobs: cpus,
        kernels: if args.generated_kernels {
            Kernels::Generated
        } else {
            Kernels::RuntimeTiled
        },
        streamed_shapes: args.streamed_shapes,
        model: args.model,
    })
}

/// `--write-programs DIR`: the training and calibration programs as YAML files.
fn write_programs(dir: &std::path::Path) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut calibration = training::wide_programs(&calibrate::CALIBRATION_DOMAINS)?;
    calibration.extend(training::fields_programs(&calibrate::CALIBRATION_DOMAINS)?);
    for p in training::programs(training::DOMAIN)?
        .into_iter()
        .chain(calibration)
    {
        let path = dir.join(format!("{}.yaml", p.program.name));
        write_atomic(&path, p.text.as_bytes())?;
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// What a step of the run is about to do, for people.
fn step_phrase(step: &Step) -> String {
    match step {
        Step::KernelRefit { variants } => format!(
            "refitting to real kernels: the optimum and {variants} random configurations of {} ...",
            kernels::KERNELS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Step::CacheFraction { programs, fractions } => format!(
            "choosing cache_fraction: the model's optima of {programs} calibration program(s) at fractions {} ...",
            fractions
                .iter()
                .map(|f| format!("{f:.3}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Step::GroupArrays { programs, limits } => format!(
            "choosing group_arrays: the model's optima of {programs} calibration program(s) under limits {} ...",
            limits
                .iter()
                .map(|l| limit_label(*l))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Writes what `learn` found: the raw measurements (with --keep-data), the machine file
/// (atomically, to --out or over --machine), and prints the parameters. Returns the file written.
pub(crate) fn write_learned<'a>(
    args: &'a LearnArgs,
    new_text: &str,
    result: &absinthe_learn::LearnResult,
) -> anyhow::Result<&'a std::path::Path> {
    if let Some(dir) = &args.keep_data {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        write_atomic(
            &dir.join("measurements.csv"),
            training_runs::to_csv(&result.measurements).as_bytes(),
        )?;
    }
    let out = args.out.as_ref().unwrap_or(&args.machine);
    write_atomic(out, new_text.as_bytes())?;
    let rows: Vec<Vec<String>> = result
        .params
        .named()
        .iter()
        .map(|(k, v)| vec![k.to_string(), format!("{v:.4e}")])
        .collect();
    print!("{}", table(&["parameter", "seconds per access"], &rows));
    Ok(out)
}

/// The operation-weight measurement: per kind the first and second operation per cell in adds,
/// and the weight written.
fn print_operations(t: &OperationTimes, w: &OperationWeights) {
    let rows: Vec<Vec<String>> = ["division", "sqrt", "exp, log, pow"]
        .into_iter()
        .zip(t.in_adds())
        .zip([w.divide, w.sqrt, w.call])
        .map(|((name, (first, second)), weight)| {
            vec![
                name.to_string(),
                format!("{first:.1}"),
                format!("{second:.1}"),
                weight.to_string(),
            ]
        })
        .collect();
    println!(
        "operation weights, in adds (one add: {:.3e} s per cell):",
        t.add_seconds()
    );
    print!(
        "{}",
        table(
            &[
                "operation",
                "first per cell",
                "second per cell",
                "params.operations"
            ],
            &rows
        )
    );
}

/// What the kernel refit changed: the kernel variants' accuracy and the synthetic R², with the
/// synthetic fit's parameters and with the refit's.
pub(crate) fn print_refit(
    r: &kernels::Refit,
    rows: &[kernels::KernelRow],
    synthetic: FitQuality,
    refitted: FitQuality,
) {
    let programs = kernels::programs(rows);
    println!(
        "kernel refit: {} variants of {}, {} round(s)",
        rows.len(),
        programs.join(", "),
        r.rounds
    );
    let line = |name: &str, within: f64, rho: f64, q: FitQuality| {
        vec![
            name.to_string(),
            format!("{:.0}%", 100.0 * within),
            format!("{rho:.3}"),
            format!("{:.3}", q.fast),
            format!("{:.3}", q.slow),
        ]
    };
    print!(
        "{}",
        table(
            &[
                "parameters",
                "kernels within 20%",
                "Spearman",
                "R² fast",
                "R² slow"
            ],
            &[
                line(
                    "synthetic fit",
                    r.within_20_before,
                    r.spearman_before,
                    synthetic
                ),
                line("refit", r.within_20_after, r.spearman_after, refitted),
            ]
        )
    );
}

/// The calibration's table: per fraction, each program's optimum and median, and the mean.
fn print_calibration(c: &calibrate::Calibration, current: f64) {
    let rows: Vec<SettingRow<'_>> = c
        .results
        .iter()
        .map(|r| (format!("{:.4}", r.fraction), &r.per_program[..], r.seconds))
        .collect();
    print_settings("cache fraction", &c.programs, &rows, &c.cases);
    if c.chosen == current {
        println!("cache_fraction: kept {current:.4}");
    } else {
        println!("cache_fraction: {:.4} (was {current:.4})", c.chosen);
    }
}

/// The crowding fits: per row-stream limit, the slow family's deviation and R², and the one
/// kept.
fn print_crowding(c: &CrowdingCalibration, params: &Params) {
    let rows: Vec<Vec<String>> = c
        .limits
        .iter()
        .zip(&c.deviations)
        .zip(&c.r2_slow)
        .map(|((l, d), r)| {
            let label = if *l == 0 {
                "none".into()
            } else {
                l.to_string()
            };
            vec![label, format!("{d:.4e}"), format!("{r:.3}")]
        })
        .collect();
    print!(
        "{}",
        table(
            &["row-stream limit", "slow |deviation| (s)", "slow R²"],
            &rows
        )
    );
    if params.crowded.is_zero() {
        println!("crowding: no charge (no limit fits the slow family better)");
    } else {
        println!(
            "crowding: groups above {} row streams pay {:.4e} s per stream-body access more",
            params.crowded.row_streams, params.crowded.stream_body
        );
    }
}

/// A `group_arrays` limit as printed: the number, or `none`.
fn limit_label(limit: Option<usize>) -> String {
    limit.map_or("none".into(), |n| n.to_string())
}

/// The group-arrays calibration's table: per limit, each program's optimum and median.
fn print_limit_calibration(c: &calibrate::LimitCalibration, current: Option<usize>) {
    let rows: Vec<SettingRow<'_>> = c
        .results
        .iter()
        .map(|r| (limit_label(r.limit), &r.per_program[..], r.seconds))
        .collect();
    print_settings("group arrays", &c.programs, &rows, &c.cases);
    if c.chosen == current {
        println!("group_arrays: kept {}", limit_label(current));
    } else {
        println!(
            "group_arrays: {} (was {})",
            limit_label(c.chosen),
            limit_label(current)
        );
    }
}

/// One setting's row of a calibration table: its label, each program's optimum case and
/// median (None: infeasible), and their geometric mean.
type SettingRow<'a> = (String, &'a [Option<(usize, f64)>], Option<f64>);

/// A calibration's table (one row per setting: each program's optimum and median, and their
/// geometric mean), then each program's distinct optima.
fn print_settings(
    setting: &str,
    programs: &[String],
    rows: &[SettingRow<'_>],
    cases: &[Vec<String>],
) {
    let mut header = vec![setting.to_string()];
    header.extend(programs.iter().cloned());
    header.push("geometric mean".into());
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|(label, per_program, seconds)| {
            let mut row = vec![label.clone()];
            row.extend(per_program.iter().map(|p| match p {
                Some((case, s)) => format!("{} (optimum {case})", human_seconds(*s)),
                None => "infeasible".into(),
            }));
            row.push(seconds.map_or("-".into(), human_seconds));
            row
        })
        .collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    print!("{}", table(&header, &rows));
    for (program, cases) in programs.iter().zip(cases) {
        for (k, d) in cases.iter().enumerate() {
            println!("  {program} optimum {k}: {d}");
        }
    }
}

/// The calibration programs' domains: `--calibration-domain` (three extents per domain), or
/// the defaults.
fn calibration_domains(flag: &[usize]) -> anyhow::Result<Vec<[usize; 3]>> {
    if flag.is_empty() {
        return Ok(calibrate::CALIBRATION_DOMAINS.to_vec());
    }
    if !flag.len().is_multiple_of(3) || flag.iter().any(|&n| n < 4) {
        anyhow::bail!(
            "--calibration-domain takes three extents of at least 4 (x,y,z), found {flag:?}"
        );
    }
    Ok(flag.chunks(3).map(|d| [d[0], d[1], d[2]]).collect())
}
