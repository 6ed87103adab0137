//! `absinthe learn`'s whole run as one library call: the synthetic fit, the operation weights,
//! the refit to real kernels, the choice of `cache_fraction` and of `group_arrays`, and the
//! machine file rewritten with what was learned. Nothing is written or printed here: steps and
//! progress go to a hook, and the caller writes the returned text.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use absinthe_codegen::compile::{operation_times, OperationTimes};
use absinthe_codegen::render::Renderer;
use absinthe_model::formats::learned::{FitQuality, Learned};
use absinthe_model::formats::machine::{Machine, Params};

use crate::calibrate::{self, Calibration, LimitCalibration};
use crate::kernels::{self, KernelRow, Refit};
use crate::machine_file::{self, host_description, utc_timestamp};
use crate::{learn, synthetic_r2, LearnError, LearnOptions, LearnResult, Progress};

/// Which steps after the synthetic fit run.
#[derive(Clone, Debug)]
pub struct Steps {
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
}

/// The steps, with what each will try.
#[derive(Clone, Debug)]
pub enum Step {
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
}

/// What a run learned, and the machine file rewritten with it.
pub struct Learning {
    pub result: LearnResult,
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

/// Learns `machine` (whose file reads `text`) with `threads` threads and `cache_bytes` of cache.
pub fn run(
    machine: &Machine,
    text: &str,
    (threads, cache_bytes): (usize, u64),
    options: &LearnOptions,
    steps: &Steps,
    events: &(dyn Fn(Event) + Sync),
) -> Result<Learning, LearnError> {
    let started = Instant::now();
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
            refit(&mut result, &solved, variants, options, events)?
        }
    };
    // A GPU machine's capacity is shared memory per block, which the CPU kernels timed here
    // do not use.
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
    let mut learning = Learning {
        result,
        operations,
        refit,
        synthetic_r2,
        calibration,
        limit_calibration,
        text: String::new(),
        wall_seconds: started.elapsed().as_secs_f64(),
    };
    learning.text = rewritten(machine, text, (threads, cache_bytes), options, &learning)?;
    Ok(learning)
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
    let refit = kernels::refit(&result.measurements, &rows, &result.params, options.solver)?;
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
