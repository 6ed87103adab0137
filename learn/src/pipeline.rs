//! `absinthe learn`'s whole run as one library call: the synthetic fit, the operation weights,
//! the refit to real kernels, the choice of `cache_fraction` and of `group_arrays`, and the
//! machine file rewritten with what was learned; what a request resolves to on a machine, and
//! where the results go. Nothing is printed here: steps and progress go to a hook, and files
//! are written only through the caller's atomic write.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use absinthe_codegen::compile::{operation_times, OperationTimes, Toolchain};
use absinthe_codegen::host::l2_cache_bytes;
use absinthe_codegen::render::{Flush, Renderer};
use absinthe_model::formats::learned::{FitQuality, Learned};
use absinthe_model::formats::machine::{Compiler, Machine, Params};
use absinthe_model::formats::model_kind::ModelKind;
use absinthe_solvers::method::Backend;

use crate::calibrate::{self, Calibration, LimitCalibration};
use crate::division::{self, DivisionChoice};
use crate::flags::{self, FlagChoice};
use crate::kernels::{self, KernelRow, Refit};
use crate::machine_file::{self, host_description, utc_timestamp};
use crate::training::{self, TrainingProgram};
use crate::training_runs::{to_csv, Measurement};
use crate::{learn, synthetic_r2, Kernels, LearnError, LearnOptions, LearnResult, Progress};

/// What `absinthe learn` is asked to measure and fit, before the machine is known.
#[derive(Clone, Debug)]
pub struct Request {
    /// The original work's grid ([`LearnOptions::budget`]).
    pub thorough: bool,
    /// Tile shapes per family (None: the budget's, or on a GPU [`crate::gpu::SHAPES`]).
    pub shapes: Option<usize>,
    /// Timed runs per shape (None: the budget's, or on a GPU [`crate::gpu::RUNS`]).
    pub repeats: Option<usize>,
    /// The LP backend of the fit.
    pub solver: Backend,
    /// Time the generated kernels ([`Kernels::Generated`]) instead of runtime-tiled ones.
    pub generated_kernels: bool,
    /// Also time the slow programs streamed.
    pub streamed_shapes: bool,
    /// The form of the model fitted.
    pub model: ModelKind,
    /// Refit to real kernels.
    pub kernel_refit: bool,
    /// Random configurations per kernel in the refit (None: [`kernels::KERNEL_VARIANTS`]).
    pub kernel_variants: Option<usize>,
    /// Choose `cache_fraction` by measurement.
    pub cache_fraction: bool,
    /// Choose `compiler.flags` among the file's candidates by measurement.
    pub compiler_flags: bool,
    /// Rounds of that choice (None: [`flags::FLAG_ROUNDS`]).
    pub flag_rounds: Option<usize>,
    /// Choose `compiler.division` by measurement.
    pub division: bool,
    /// Rounds of that choice (None: [`division::DIVISION_ROUNDS`]).
    pub division_rounds: Option<usize>,
    /// Choose `group_arrays` by measurement.
    pub group_arrays: bool,
    /// The calibration programs' extents, three per domain (empty: the defaults).
    pub calibration_domain: Vec<usize>,
}

impl Request {
    /// Random configurations per kernel in the refit, 0 when there is none.
    pub fn refit_variants(&self) -> usize {
        if self.kernel_refit {
            self.kernel_variants.unwrap_or(kernels::KERNEL_VARIANTS)
        } else {
            0
        }
    }

    /// What to measure on `host`, for `machine` (its compiler and `cache_fraction`), with the
    /// caches emptied by `flush`; and the steps after the synthetic fit (the calibration
    /// domains checked before the long part).
    pub fn plan(
        &self,
        machine: &Machine,
        host: Host,
        flush: Flush,
    ) -> Result<(LearnOptions, Steps), LearnError> {
        let (shapes, repeats) = LearnOptions::budget(self.thorough);
        let options = LearnOptions {
            shapes: self.shapes.unwrap_or(shapes),
            repeats: self.repeats.unwrap_or(repeats).max(1),
            domain: training::DOMAIN,
            threads: host.threads,
            tile_bytes: host.cache_bytes as f64 * machine.cache_fraction,
            flush,
            toolchain: Toolchain::of(&machine.compiler),
            solver: self.solver,
            jobs: host.cpus,
            kernels: if self.generated_kernels {
                Kernels::Generated
            } else {
                Kernels::RuntimeTiled
            },
            streamed_shapes: self.streamed_shapes,
            model: self.model,
        };
        let full = self.model.inlines();
        let steps = Steps {
            compiler_flags: self
                .compiler_flags
                .then(|| self.flag_rounds.unwrap_or(flags::FLAG_ROUNDS)),
            division: self
                .division
                .then(|| self.division_rounds.unwrap_or(division::DIVISION_ROUNDS)),
            kernel_refit: (full && self.kernel_refit).then(|| self.refit_variants()),
            cache_fraction: full && self.cache_fraction,
            group_arrays: full && self.group_arrays,
            domains: calibrate::domains(&self.calibration_domain)?,
        };
        Ok((options, steps))
    }
}

/// The machine `learn` runs on: OpenMP threads, the bytes of cache a tile's share is taken
/// of, and the CPUs (compilers run at a time).
#[derive(Clone, Copy, Debug)]
pub struct Host {
    pub threads: usize,
    pub cache_bytes: u64,
    pub cpus: usize,
}

impl Host {
    /// `machine` with this host's threads and cache: what the compiler choices solve their
    /// kernels with.
    fn solving(&self, machine: &Machine) -> Machine {
        Machine {
            cores: Some(self.threads),
            cache_bytes: Some(self.cache_bytes),
            ..machine.clone()
        }
    }

    /// This machine as `machine` describes it: its `cores` (default: this machine's CPUs) and
    /// `cache_bytes` (default: the L2 size sysfs reports).
    pub fn of(machine: &Machine) -> Result<Host, LearnError> {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let cache_bytes = match machine.cache_bytes {
            Some(c) => c,
            None => l2_cache_bytes().ok_or_else(|| {
                LearnError::Invalid(
                    "the machine file has no cache_bytes and sysfs reports no cache size; add cache_bytes"
                        .into(),
                )
            })?,
        };
        Ok(Host {
            threads: machine.cores.unwrap_or(cpus),
            cache_bytes,
            cpus,
        })
    }
}

/// Where `learn` writes: the machine file's new text to `out`, and with `keep_data` the raw
/// measurements (`measurements.csv`) into that directory.
#[derive(Clone, Copy, Debug)]
pub struct Outputs<'a> {
    pub out: &'a Path,
    pub keep_data: Option<&'a Path>,
}

impl<'a> Outputs<'a> {
    /// The machine file to `out`, and with `keep_data` the raw measurements into it.
    pub fn new(out: &'a Path, keep_data: Option<&'a Path>) -> Outputs<'a> {
        Outputs { out, keep_data }
    }

    /// Refuses, before anything is measured, outputs that could not be written at the end: the
    /// machine file under a file or at a directory, `keep_data` at a file.
    pub fn check(&self) -> Result<(), absinthe_codegen::files::WriteError> {
        absinthe_codegen::files::check_output(self.out, false)?;
        self.keep_data.map_or(Ok(()), |dir| {
            absinthe_codegen::files::check_output(dir, true)
        })
    }

    /// Refuses outputs that would replace one of `inputs` (the timings `learn --target cuda
    /// --timings DIR` reads: measurements made on another machine), or each other.
    pub fn apart_from(&self, inputs: &[&Path]) -> Result<(), absinthe_codegen::files::WriteError> {
        let csv = self.keep_data.map(|d| d.join("measurements.csv"));
        absinthe_codegen::files::outputs_apart(&[Some(self.out), csv.as_deref()], inputs)
    }

    /// Writes the raw `measurements` (with `keep_data`), then the machine file's new `text`,
    /// each with `write` (the caller's atomic write); returns the file written.
    pub fn write<E: From<LearnError>>(
        &self,
        text: &str,
        measurements: &[Measurement],
        write: &dyn Fn(&Path, &str) -> Result<(), E>,
    ) -> Result<&'a Path, E> {
        if let Some(dir) = self.keep_data {
            let csv = ("measurements.csv".to_string(), to_csv(measurements));
            write_files(dir, &[csv], write)?;
        }
        write(self.out, text)?;
        Ok(self.out)
    }
}

/// Writes `files` (name, text) into `dir`, created if missing, each with `write` (the
/// caller's atomic write).
pub fn write_files<E: From<LearnError>>(
    dir: &Path,
    files: &[(String, String)],
    write: &dyn Fn(&Path, &str) -> Result<(), E>,
) -> Result<(), E> {
    std::fs::create_dir_all(dir).map_err(|e| LearnError::Create(dir.display().to_string(), e))?;
    for (name, text) in files {
        write(&dir.join(name), text)?;
    }
    Ok(())
}

/// Writes the training and calibration programs into `dir` (`learn --write-programs`), all of
/// them or none: each is staged, then renamed into place. Returns the paths written, a line
/// each.
pub fn write_programs(
    dir: &Path,
    inputs: &[&Path],
) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    let files = program_files()?;
    absinthe_codegen::files::write_files(dir, &files, inputs)?;
    Ok(files
        .iter()
        .map(|(name, _)| format!("{}\n", dir.join(name).display()))
        .collect())
}

/// The training and calibration programs as files, (name, YAML text): what `learn` measures.
pub fn program_files() -> Result<Vec<(String, String)>, LearnError> {
    let domains = &calibrate::CALIBRATION_DOMAINS;
    let mut programs = training::programs(training::DOMAIN)?;
    programs.extend(training::wide_programs(domains)?);
    programs.extend(training::fields_programs(domains)?);
    Ok(programs
        .into_iter()
        .map(|p: TrainingProgram| (format!("{}.yaml", p.program.name), p.text))
        .collect())
}

/// Which steps beside the synthetic fit run: the choice of flags before it, the rest after.
#[derive(Clone, Debug)]
pub struct Steps {
    /// Choose `compiler.flags` among the file's candidates first, in this many rounds (None:
    /// keep the file's).
    pub compiler_flags: Option<usize>,
    /// Then choose `compiler.division`, in this many rounds (None: keep the file's).
    pub division: Option<usize>,
    /// Refit to real kernels with this many random configurations each (None: no refit).
    pub kernel_refit: Option<usize>,
    /// Choose `cache_fraction`.
    pub cache_fraction: bool,
    /// Choose `group_arrays`.
    pub group_arrays: bool,
    /// The calibration programs' domains.
    pub domains: Vec<[usize; 3]>,
}

/// What the run reports as it goes.
#[derive(Clone, Debug)]
pub enum Event {
    /// A step begins; the caller may describe it.
    Step(Step),
    /// Progress within the step.
    Progress(Progress),
    /// Something a person should know; the run goes on.
    Warning(String),
    /// After a failure, the bundles built and run here and their output stay in this
    /// directory.
    Kept(PathBuf),
}

/// The steps, with what each will try.
#[derive(Clone, Debug)]
pub enum Step {
    /// Choosing `compiler.flags` among `sets` flag sets (`flags::choose_flags`).
    CompilerFlags {
        sets: usize,
    },
    /// Choosing `compiler.division` (`division::choose_division`).
    Division,
    /// The training programs are timed, built with `flags` (after the flags were chosen).
    Training {
        flags: Vec<String>,
    },
    KernelRefit {
        variants: usize,
    },
    CacheFraction {
        programs: usize,
        fractions: Vec<f64>,
    },
    GroupArrays {
        programs: usize,
        limits: Vec<Option<usize>>,
    },
    /// `learn --target cuda` builds and runs `bundles` CUDA bundles in `dir` here: `cases`
    /// training cases and `kernel_cases` kernel variants.
    CudaBundles {
        bundles: usize,
        cases: usize,
        kernel_cases: usize,
        dir: PathBuf,
    },
}

/// What a run learned, and the machine file rewritten with it.
pub struct Learning {
    pub result: LearnResult,
    /// How `compiler.flags` were chosen, when the file lists candidates.
    pub flag_choice: Option<FlagChoice>,
    /// How `compiler.division` was chosen, when it was.
    pub division_choice: Option<DivisionChoice>,
    /// The operation-weight timings (None on a GPU machine, whose weights stay).
    pub operations: Option<OperationTimes>,
    /// The refit and the kernel rows it fitted.
    pub refit: Option<(Refit, Vec<KernelRow>)>,
    /// R² of the synthetic fit, before the refit.
    pub synthetic_r2: FitQuality,
    pub calibration: Option<Calibration>,
    pub limit_calibration: Option<LimitCalibration>,
    /// The machine file's new text (read back and checked).
    pub text: String,
    pub wall_seconds: f64,
}

/// Learns `machine` (whose file reads `text`) on `host`, whose threads and cache the later steps
/// solve with.
pub fn run(
    machine: &Machine,
    text: &str,
    host: Host,
    options: &LearnOptions,
    steps: &Steps,
    events: &(dyn Fn(Event) + Sync),
) -> Result<Learning, LearnError> {
    let (threads, cache_bytes) = (host.threads, host.cache_bytes);
    let started = Instant::now();
    let (flag_choice, division_choice, chosen_options) =
        compiler_choices(machine, host, options, steps, events)?;
    let options = &chosen_options;
    // The later steps solve with the division chosen, as they build with it.
    let (original, learned_machine) = (machine, dividing_as(machine, division_choice.as_ref()));
    let machine = &learned_machine;
    if let Some(choice) = &flag_choice {
        events(Event::Step(Step::Training {
            flags: choice.flags().to_vec(),
        }));
    }
    let mut result = learn(options, &|p| events(Event::Progress(p)))?;
    let file_weights = machine.params.map(|p| p.operations).unwrap_or_default();
    let operations = operation_weights(machine, options, threads)?;
    result.params.operations = match operations.as_ref().map(|t| (t, t.weights())) {
        Some((_, Some(w))) => w,
        Some((t, None)) => {
            events(Event::Warning(format!(
                "the operation-weight measurement was swamped by noise (one add {:.3e} s per cell); keeping {file_weights:?}",
                t.add_seconds(),
            )));
            file_weights
        }
        None => file_weights,
    };
    // The adds' cost as measured, not as the fit shares it out (`crate::hold_compute_body`).
    let held_compute_body = operations
        .as_ref()
        .filter(|t| t.weights().is_some() && options.model == ModelKind::Linear)
        .map(|t| t.add_seconds());
    if let Some(seconds) = held_compute_body {
        crate::hold_compute_body(&mut result, seconds, options.solver)?;
    }
    // The default form's exposed share: the kernel refit fits the rest with it, and the
    // calibrations below solve with it.
    if options.model == ModelKind::Linear {
        result.params.exposed = crate::EXPOSED;
    }
    let synthetic_r2 = FitQuality {
        fast: result.r2_fast,
        slow: result.r2_slow,
    };
    // The machine the later steps solve with: this one's cores and cache, `params`, `fraction`.
    let solved_with = |params: &Params, fraction: f64| Machine {
        cores: Some(threads),
        cache_bytes: Some(cache_bytes),
        cache_fraction: fraction,
        params: Some(*params),
        ..machine.clone()
    };
    let gpu = machine.gpu.is_some();
    // A GPU machine's file is not refitted: the kernels would be drawn for its GPU capacity
    // and timed on this CPU.
    let refit = match steps.kernel_refit.filter(|_| !gpu) {
        None => None,
        Some(variants) => {
            events(Event::Step(Step::KernelRefit { variants }));
            let solved = solved_with(&result.params, machine.cache_fraction);
            refit(
                &mut result,
                &solved,
                variants,
                held_compute_body,
                options,
                events,
            )?
        }
    };
    let (calibration, limit_calibration) =
        calibrations(machine, &solved_with, &result, options, steps, events)?;
    let mut learning = Learning {
        result,
        flag_choice,
        division_choice,
        operations,
        refit,
        synthetic_r2,
        calibration,
        limit_calibration,
        text: String::new(),
        wall_seconds: started.elapsed().as_secs_f64(),
    };
    learning.text = rewritten(original, text, (threads, cache_bytes), options, &learning)?;
    Ok(learning)
}

/// The choices of `cache_fraction` and `group_arrays`, as `steps` ask, each solving with the
/// machine `solved_with` makes of the parameters and a fraction (not on a GPU machine, whose
/// capacity is shared memory per block, which the CPU kernels timed here do not use).
fn calibrations(
    machine: &Machine,
    solved_with: &dyn Fn(&Params, f64) -> Machine,
    result: &LearnResult,
    options: &LearnOptions,
    steps: &Steps,
    events: &(dyn Fn(Event) + Sync),
) -> Result<(Option<Calibration>, Option<LimitCalibration>), LearnError> {
    let gpu = machine.gpu.is_some();
    let calibration = if steps.cache_fraction && !gpu {
        let fractions = calibrate::fractions_to_try(machine.cache_fraction);
        let programs = steps.domains.len();
        events(Event::Step(Step::CacheFraction {
            programs,
            fractions,
        }));
        let solved = solved_with(&result.params, machine.cache_fraction);
        let progress = |p| events(Event::Progress(p));
        Some(calibrate::calibrate(
            &solved,
            options,
            &steps.domains,
            &progress,
        )?)
    } else {
        None
    };
    let limit_calibration = if steps.group_arrays && !gpu {
        let limits = calibrate::limits_to_try(machine.group_arrays);
        let programs = 2 * steps.domains.len();
        events(Event::Step(Step::GroupArrays { programs, limits }));
        let fraction = calibration
            .as_ref()
            .map_or(machine.cache_fraction, |c| c.chosen);
        let solved = solved_with(&result.params, fraction);
        let progress = |p| events(Event::Progress(p));
        Some(calibrate::calibrate_group_arrays(
            &solved,
            options,
            &steps.domains,
            &progress,
        )?)
    } else {
        None
    };
    Ok((calibration, limit_calibration))
}

/// `machine` with the division `choice` chose (its own without one).
fn dividing_as(machine: &Machine, choice: Option<&DivisionChoice>) -> Machine {
    Machine {
        compiler: Compiler {
            division: choice.map_or(machine.compiler.division, |c| c.chosen),
            ..machine.compiler.clone()
        },
        ..machine.clone()
    }
}

/// The compiler's flags and then its division, each chosen where `steps` ask; the options
/// everything after builds with.
fn compiler_choices(
    machine: &Machine,
    host: Host,
    options: &LearnOptions,
    steps: &Steps,
    events: &(dyn Fn(Event) + Sync),
) -> Result<(Option<FlagChoice>, Option<DivisionChoice>, LearnOptions), LearnError> {
    let (flag_choice, chosen) = match steps.compiler_flags {
        Some(rounds) => compiler_flags(machine, host, options, rounds, events)?,
        None => (None, options.clone()),
    };
    let (division_choice, chosen) = match steps.division {
        Some(rounds) => division(machine, host, &chosen, rounds, events)?,
        None => (None, chosen),
    };
    Ok((flag_choice, division_choice, chosen))
}

/// The compiler flags, chosen first when the machine file lists candidates (not on a GPU
/// machine, whose kernels are not this CPU's), and the options everything after builds with.
fn compiler_flags(
    machine: &Machine,
    host: Host,
    options: &LearnOptions,
    rounds: usize,
    events: &(dyn Fn(Event) + Sync),
) -> Result<(Option<FlagChoice>, LearnOptions), LearnError> {
    let compiler = &machine.compiler;
    if compiler.candidates.is_empty() || machine.gpu.is_some() {
        return Ok((None, options.clone()));
    }
    let sets = compiler.flag_sets().len();
    events(Event::Step(Step::CompilerFlags { sets }));
    let solved = host.solving(machine);
    let progress = |p| events(Event::Progress(p));
    let choice = flags::choose_flags(compiler, &solved, options, rounds, &progress)?;
    for (flags, error) in &choice.refused {
        events(Event::Warning(format!(
            "{} refused the candidate flags `{}` ({error}); learn goes on without them",
            compiler.cxx,
            flags.join(" ")
        )));
    }
    let chosen = LearnOptions {
        toolchain: Toolchain::new(&compiler.cxx, choice.flags()).dividing(compiler.division),
        ..options.clone()
    };
    Ok((Some(choice), chosen))
}

/// How the timed build divides by literals, chosen after the flags (`options` build with them;
/// not on a GPU machine, whose CUDA code divides), and the options everything after builds
/// with.
fn division(
    machine: &Machine,
    host: Host,
    options: &LearnOptions,
    rounds: usize,
    events: &(dyn Fn(Event) + Sync),
) -> Result<(Option<DivisionChoice>, LearnOptions), LearnError> {
    if machine.gpu.is_some() {
        return Ok((None, options.clone()));
    }
    events(Event::Step(Step::Division));
    let solved = host.solving(machine);
    let progress = |p| events(Event::Progress(p));
    let choice =
        division::choose_division(&options.toolchain, &solved, options, rounds, &progress)?;
    let Some(choice) = choice else {
        events(Event::Warning(
            "no division kernel was feasible on this machine; compiler.division stays".into(),
        ));
        return Ok((None, options.clone()));
    };
    let chosen = LearnOptions {
        toolchain: options.toolchain.clone().dividing(choice.chosen),
        ..options.clone()
    };
    Ok((Some(choice), chosen))
}

/// The operation weights, timed before the refit (its kernels are costed with them), in the
/// build `bench` times and `codegen` ships (contraction into FMA allowed: its add costs what
/// the learned `compute.body` charges per operation). A GPU machine's compute is not this
/// CPU's: None, and its file's weights stay.
fn operation_weights(
    machine: &Machine,
    options: &LearnOptions,
    threads: usize,
) -> Result<Option<OperationTimes>, LearnError> {
    if machine.gpu.is_some() {
        return Ok(None);
    }
    let threads_text = threads.to_string();
    let env = [("OMP_NUM_THREADS", threads_text.as_str())];
    let timed_build = options.toolchain.clone().fused_multiply_add();
    operation_times(&timed_build, &Renderer::embedded(), threads, &env)
        .map(Some)
        .map_err(|e| LearnError::Run(format!("measuring the operation weights: {e}")))
}

/// Refits `result` to real kernels of `solved` (None, with a warning, when no kernel variant is
/// feasible on this machine).
fn refit(
    result: &mut LearnResult,
    solved: &Machine,
    variants: usize,
    held_compute_body: Option<f64>,
    options: &LearnOptions,
    events: &(dyn Fn(Event) + Sync),
) -> Result<Option<(Refit, Vec<KernelRow>)>, LearnError> {
    let progress = |p| events(Event::Progress(p));
    let rows = kernels::measure_kernels(solved, variants, options, &progress)?;
    if rows.is_empty() {
        events(Event::Warning(
            "no kernel variant was feasible on this machine; the synthetic fit stands".into(),
        ));
        return Ok(None);
    }
    let refit = kernels::refit(
        &result.measurements,
        &rows,
        &result.params,
        options.solver,
        held_compute_body,
    )?;
    result.params = refit.params;
    (result.r2_fast, result.r2_slow) = synthetic_r2(&result.measurements, &refit.params);
    Ok(Some((refit, rows)))
}

/// The machine file's text with `params`, `learned`, the chosen `cache_fraction` and
/// `group_arrays`, and the `cores` and `cache_bytes` used; checked to read back.
fn rewritten(
    machine: &Machine,
    text: &str,
    (threads, cache_bytes): (usize, u64),
    options: &LearnOptions,
    learning: &Learning,
) -> Result<String, LearnError> {
    let result = &learning.result;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let learned = Learned {
        at: utc_timestamp(now),
        host: host_description(),
        samples: result.measurements.len() as u64,
        r2: FitQuality {
            fast: result.r2_fast,
            slow: result.r2_slow,
        },
        wall_seconds: Some(learning.wall_seconds),
        flush: Some(options.flush.record()),
        cache_calibration: learning.calibration.as_ref().map(|c| c.record()),
        group_arrays_calibration: learning.limit_calibration.as_ref().map(|c| c.record()),
        crowding_calibration: Some(result.crowding.clone()),
        flag_calibration: learning.flag_choice.as_ref().map(FlagChoice::record),
        division_calibration: learning
            .division_choice
            .as_ref()
            .map(DivisionChoice::record),
        kernel_refit: learning
            .refit
            .as_ref()
            .map(|(r, rows)| r.record(rows, learning.synthetic_r2)),
        model: options.model,
    };
    let mut extra = vec![
        ("cores", threads.to_string()),
        ("cache_bytes", cache_bytes.to_string()),
    ];
    // The cache model's levels (`absinthe cache`), where the file lists none.
    if let Some(levels) = absinthe_codegen::host::sysfs_caches() {
        extra.push(("caches", machine_file::caches_yaml(&levels)));
    }
    let mut new_text = machine_file::rewrite(text, &result.params, &learned, &extra)?;
    let flags = learning
        .flag_choice
        .as_ref()
        .map_or(machine.compiler.flags.as_slice(), FlagChoice::flags);
    let division = learning
        .division_choice
        .as_ref()
        .map_or(machine.compiler.division, |c| c.chosen);
    if flags != machine.compiler.flags.as_slice() || division != machine.compiler.division {
        let compiler = Compiler {
            flags: flags.to_vec(),
            division,
            ..machine.compiler.clone()
        };
        new_text = machine_file::set_top_level(
            &new_text,
            "compiler",
            &machine_file::compiler_yaml(&compiler),
        );
    }
    if let Some(c) = &learning.calibration {
        if c.chosen != machine.cache_fraction {
            let fraction = format!("{:.4}", c.chosen);
            new_text = machine_file::set_top_level(&new_text, "cache_fraction", &fraction);
        }
    }
    if let Some(c) = &learning.limit_calibration {
        if c.chosen != machine.group_arrays {
            new_text = match c.chosen {
                Some(n) => machine_file::set_top_level(&new_text, "group_arrays", &n.to_string()),
                None => machine_file::remove_top_level(&new_text, "group_arrays"),
            };
        }
    }
    Machine::from_yaml(&new_text).map_err(|d| {
        LearnError::MachineFile(format!(
            "the rewritten machine file does not read back: {d:?}"
        ))
    })?;
    Ok(new_text)
}
