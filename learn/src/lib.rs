//! `absinthe learn` (docs/ARCHITECTURE.md, "learn/"): measures the machine it runs on and fits
//! the parameters of the cost model (docs/MODEL.md, "Parameters"), and the tools that check the
//! model against measurements afterwards.
//!
//! - [`training`]: the fast- and slow-memory training programs, their tile shapes, and the
//!   model's counts for one run (from `absinthe_model::cost_model::evaluate`, never a second copy).
//! - [`training_runs`]: one runtime-tiled build per program (`absinthe_codegen::runtime_tiles`),
//!   verified and timed over every shape.
//! - [`fit`]: least absolute deviations with non-negative parameters as an LP through
//!   `absinthe_solvers`, and R² on per-configuration medians.
//! - [`calibrate`]: chooses `cache_fraction` by timing the model's optima of many-array
//!   programs at several fractions.
//! - [`machine_file`]: writes `params` and `learned` into a machine file, keeping the rest of
//!   its text (comments included) as it was.
//! - [`text`]: the reports of a run as text for people, and the progress bar on standard error.

pub mod calibrate;
pub mod division;
pub mod fit;
pub mod flags;
pub mod gpu;
pub mod gpu_fit;
pub mod kernels;
pub mod machine_file;
pub mod network;
pub mod pipeline;
pub mod stats;
pub mod text;
pub mod training;
pub mod training_runs;

use std::path::PathBuf;

use absinthe_codegen::compile::Toolchain;
use absinthe_codegen::render::Flush;
use absinthe_measure::accuracy::r_squared;
use absinthe_measure::runner::ROUNDS;
use absinthe_model::formats::learned::CrowdingCalibration;
use absinthe_model::formats::machine::OperationWeights;
use absinthe_model::formats::machine::{Compute, Crowded, Params, PeelBody};
use absinthe_model::formats::model_kind::ModelKind;

use crate::fit::Sample;
use crate::training::{Family, TrainingProgram};
use crate::training_runs::Measurement;

/// What can go wrong while learning.
#[derive(Debug, thiserror::Error)]
pub enum LearnError {
    #[error("training program: {0}")]
    Program(String),
    #[error(transparent)]
    Codegen(#[from] absinthe_codegen::CodegenError),
    #[error("measuring: {0}")]
    Run(String),
    #[error("fit: {0}")]
    Fit(String),
    #[error("machine file: {0}")]
    MachineFile(String),
    #[error("plot: {0}")]
    Plot(String),
    #[error("cache calibration: {0}")]
    Calibrate(String),
    #[error("kernel refit: {0}")]
    Kernels(String),
    /// A request that cannot be met, or a result that does not hold, said in full.
    #[error("{0}")]
    Invalid(String),
    /// A program that does not start (`sh`).
    #[error("cannot run {0}")]
    Spawn(String, #[source] std::io::Error),
    /// A directory that cannot be created.
    #[error("cannot create {0}")]
    Create(String, #[source] std::io::Error),
    /// An error about the named file.
    #[error("{0}")]
    In(String, #[source] Box<LearnError>),
}

/// How much to measure and on what.
#[derive(Clone, Debug)]
pub struct LearnOptions {
    /// Tile shapes per family.
    pub shapes: usize,
    /// Timed runs per shape.
    pub repeats: usize,
    pub domain: [usize; 3],
    /// OpenMP threads (the machine's cores).
    pub threads: usize,
    /// Bytes one tile's working set may use: `cache_bytes * cache_fraction`.
    pub tile_bytes: f64,
    /// How the caches are emptied before every slow-family run.
    pub flush: Flush,
    pub toolchain: Toolchain,
    /// The LP backend of the fit.
    pub solver: absinthe_solvers::method::Backend,
    /// Compilers run at a time.
    pub jobs: usize,
    /// Which kernels are timed.
    pub kernels: Kernels,
    /// Also time the slow programs streamed ([`training::streamed_sizes`]), as generated
    /// kernels. Off by default: the predictions of real programs are not clearly better
    /// (docs/decisions/0010-streamed-training-shapes-off.md).
    pub streamed_shapes: bool,
    /// The form of the model fitted (`ModelKind::Absinthe`: the published six parameters, a
    /// store weighted like a load, no compute part and no crowding charge).
    pub model: ModelKind,
}

/// The kernels `learn` times (`RuntimeTiled` by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernels {
    /// The generated kernels (`codegen::lower`), one per tile shape, bundled per program: the
    /// code that `bench` times and `codegen` ships. The harness discards the first quarter of
    /// each round's runs.
    Generated,
    /// One runtime-tiled kernel per program (`codegen::runtime_tiles`): one build per program,
    /// but run-time loop bounds, per-tile box arithmetic and one loop nest per stencil.
    RuntimeTiled,
}

impl LearnOptions {
    /// The default budget (about five minutes on a 2-core machine) or, `thorough`, the
    /// original work's grid: 103 shapes per family, 64 repeats.
    pub fn budget(thorough: bool) -> (usize, usize) {
        if thorough {
            (103, 64)
        } else {
            (20, 16)
        }
    }
}

/// Progress events.
#[derive(Clone, Debug)]
pub enum Progress {
    /// `total` units of work: builds plus shape runs.
    Start { total: usize },
    /// One unit done.
    Step { what: String },
}

/// The result of a learn run.
#[derive(Clone, Debug)]
pub struct LearnResult {
    pub params: Params,
    pub r2_fast: f64,
    pub r2_slow: f64,
    pub measurements: Vec<Measurement>,
    /// Per configuration (predicted, median measured) seconds of each family.
    pub fast_medians: Vec<(f64, f64)>,
    pub slow_medians: Vec<(f64, f64)>,
    /// The slow fit at every row-stream limit tried ([`CROWDING_LIMITS`]).
    pub crowding: CrowdingCalibration,
}

/// The row-stream limits the slow fit tries for the crowding charge (`Params::crowded`; 0: no
/// charge): it keeps the one whose fit deviates least from the measurements. Refitted to the six
/// real programs' times, 128 predicted best of 64, 128 and 256
/// (docs/decisions/0014-crowding-charge.md); the training programs' groups keep 19-37 streams per
/// row, so their tiles fall on both sides of every limit here.
pub const CROWDING_LIMITS: [u64; 7] = [0, 32, 64, 128, 256, 512, 1024];

/// Builds, measures and fits.
pub fn learn(
    options: &LearnOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<LearnResult, LearnError> {
    let plan = TrainingPlan::new(options)?;
    // The runs are split into rounds, each running every program over all its shapes, so that
    // a burst of load on a shared machine spreads over all programs instead of shifting one
    // program's times (which the model would have to explain by its counts). Each program runs
    // as one process per round: its set-up (allocating and filling up to 45 arrays) took as
    // long as verifying six shapes. The first round verifies every shape against the
    // reference; later rounds run the same executables over the same shapes and skip it.
    let rounds = ROUNDS.min(options.repeats).max(1);
    // Round r runs `repeats / rounds` times, one more for the first `repeats % rounds` rounds.
    let runs_in =
        |round: usize| options.repeats / rounds + usize::from(round < options.repeats % rounds);
    progress(Progress::Start {
        total: plan.builds() + rounds * plan.steps_per_round(),
    });
    let (exes, streamed_exes) = plan.build(options, progress)?;
    let mut measurements = Vec::new();
    let mut done = 0;
    for round in 0..rounds {
        let per_round = runs_in(round);
        let exes = (&exes[..], &streamed_exes[..]);
        let mut runs = plan.run_round(options, exes, (per_round, round == 0), progress)?;
        for m in &mut runs {
            m.repeat += done;
        }
        measurements.extend(runs);
        done += per_round;
    }
    fit_measurements_in(measurements, options.solver, options.model)
}

/// The training programs and the tile shapes each is timed over; with `streamed_shapes`, the
/// slow programs again, streamed over large tiles.
struct TrainingPlan {
    programs: Vec<TrainingProgram>,
    sizes: Vec<Vec<[usize; 3]>>,
    streamed_programs: Vec<TrainingProgram>,
    streamed_sizes: Vec<Vec<[usize; 3]>>,
}

impl TrainingPlan {
    fn new(options: &LearnOptions) -> Result<TrainingPlan, LearnError> {
        let programs = training::programs(options.domain)?;
        let sizes: Vec<Vec<[usize; 3]>> = programs
            .iter()
            .map(|p| {
                // One shape list per family, sized for the family's largest working set.
                let arrays = programs
                    .iter()
                    .filter(|q| q.family == p.family)
                    .map(|q| training::arrays_touched(&q.analysis))
                    .max()
                    .unwrap_or(1);
                let bytes = p.program.value_type.bytes();
                let domain_x = options.domain[0];
                training::tile_sizes(arrays, bytes, options.tile_bytes, options.shapes, domain_x)
            })
            .collect();
        // The runtime-tiled kernels cannot stream: the streamed runs are generated kernels
        // (one bundle per program).
        let (streamed_programs, streamed_sizes) = programs
            .iter()
            .filter(|p| options.streamed_shapes && p.family == Family::Slow)
            .map(|p| {
                let sizes = training::streamed_sizes(
                    &p.analysis,
                    p.program.value_type.bytes(),
                    options.tile_bytes,
                    options.shapes,
                    options.threads,
                );
                (p.clone(), sizes)
            })
            .filter(|(_, s)| !s.is_empty())
            .unzip();
        Ok(TrainingPlan {
            programs,
            sizes,
            streamed_programs,
            streamed_sizes,
        })
    }

    fn builds(&self) -> usize {
        self.programs.len() + self.streamed_programs.len()
    }

    /// Progress steps of one round: one per program, then one per streamed program.
    fn steps_per_round(&self) -> usize {
        self.programs.len() + self.streamed_programs.len()
    }

    /// Builds every program, and the streamed ones.
    fn build(
        &self,
        options: &LearnOptions,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<(Vec<PathBuf>, Vec<PathBuf>), LearnError> {
        let built = || {
            progress(Progress::Step {
                what: "build".into(),
            })
        };
        let (tc, threads, jobs) = (&options.toolchain, options.threads, options.jobs);
        let exes = if options.kernels == Kernels::Generated {
            training_runs::build_generated(
                &self.programs,
                &self.sizes,
                false,
                tc,
                threads,
                jobs,
                &built,
            )?
        } else {
            training_runs::build_all(&self.programs, tc, threads, jobs, &built)?
        };
        let streamed = (&self.streamed_programs, &self.streamed_sizes);
        let streamed_exes = training_runs::build_generated(
            streamed.0, streamed.1, true, tc, threads, jobs, &built,
        )?;
        Ok((exes, streamed_exes))
    }

    /// One round: every program over all its shapes with `per_round` runs each (repeats
    /// numbered from 0), then the streamed ones. Runtime-tiled shapes are verified first when
    /// `verify` (the first round); generated bundles verify every time.
    fn run_round(
        &self,
        options: &LearnOptions,
        (exes, streamed_exes): (&[PathBuf], &[PathBuf]),
        (per_round, verify): (usize, bool),
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<Vec<Measurement>, LearnError> {
        let generated = options.kernels == Kernels::Generated;
        let threads = options.threads;
        let mut measurements = Vec::new();
        for ((program, exe), sizes) in self.programs.iter().zip(exes).zip(&self.sizes) {
            let flush = match program.family {
                Family::Fast => Flush::NONE,
                Family::Slow => options.flush,
            };
            measurements.extend(if generated {
                training_runs::run_generated(exe, program, sizes, false, per_round, flush, threads)?
            } else {
                let runs = (per_round, verify);
                training_runs::run_shapes(exe, program, sizes, runs, flush, threads)?
            });
            progress(Progress::Step {
                what: program.program.name.clone(),
            });
        }
        let streamed = self.streamed_programs.iter().zip(streamed_exes);
        for ((program, exe), sizes) in streamed.zip(&self.streamed_sizes) {
            let flush = options.flush;
            measurements.extend(training_runs::run_generated(
                exe, program, sizes, true, per_round, flush, threads,
            )?);
            progress(Progress::Step {
                what: format!("{} streamed", program.program.name),
            });
        }
        Ok(measurements)
    }
}

/// The slow fit's column that is held at zero: the base body, `B^b` (seconds per cell of a
/// stencil that touches slow memory). Every stencil of every slow training program loads or
/// stores, so that column is the same per-cell count in all of them and the fit cannot tell it
/// from the stream body's: without it the slow R² moved from 0.762 to 0.760 on the same
/// measurements, while with it the fit put 6.3e-10 s per cell on every such stencil, charged
/// cosmo_adv5 2.4 ms per extra stored intermediate at 256x256x60 (whose traffic is the same),
/// and the search inlined flux producers that ran faster stored. Held at zero, more
/// predictions fell within 20% of the measured time on five of nine real programs (fewer on
/// two), and the chosen configuration ran faster on six of nine
/// (docs/decisions/0008-slow-base-body-held-at-zero.md).
pub const SLOW_FIT_HELD_AT_ZERO: usize = 1;

/// The samples of one family: configurations numbered by (program, tile counts, streamed),
/// the crowding column for the row-stream limit `limit` (0: none). The slow family's column
/// [`SLOW_FIT_HELD_AT_ZERO`] is zeroed, which holds its coefficient at zero.
pub fn samples(measurements: &[Measurement], family: Family, limit: u64) -> Vec<Sample> {
    samples_in(measurements, family, limit, ModelKind::Linear)
}

/// [`samples`] with the counts of the form `model` ([`training::RunCounts::fit_counts_in`]).
pub fn samples_in(
    measurements: &[Measurement],
    family: Family,
    limit: u64,
    model: ModelKind,
) -> Vec<Sample> {
    let mut keys: Vec<(String, [usize; 3], bool)> = Vec::new();
    measurements
        .iter()
        .filter(|m| m.family == family)
        .map(|m| {
            let key = (m.program.clone(), m.tiles, m.streamed);
            let configuration = keys.iter().position(|k| *k == key).unwrap_or_else(|| {
                keys.push(key);
                keys.len() - 1
            });
            let mut counts = m.counts.fit_counts_in(family, limit, model);
            if family == Family::Slow {
                counts[SLOW_FIT_HELD_AT_ZERO] = 0.0;
            }
            Sample {
                configuration,
                counts,
                seconds: m.seconds,
            }
        })
        .collect()
}

/// The coefficients of `family`'s fit in `params`, in [`Family::coefficient_names`] order.
pub fn family_coefficients(params: &Params, family: Family) -> Vec<f64> {
    match family {
        Family::Fast => vec![
            params.fast.peel,
            params.fast.body,
            params.compute.peel,
            params.compute.body,
        ],
        Family::Slow => vec![
            params.slow_base.peel,
            params.slow_base.body,
            params.slow_stream.peel,
            params.slow_stream.body,
            params.crowded.stream_body,
        ],
    }
}

/// The R² (per-configuration medians) of `params` on each family's measurements: fast, slow.
pub fn synthetic_r2(measurements: &[Measurement], params: &Params) -> (f64, f64) {
    let r2 = |family| {
        let samples = samples(measurements, family, params.crowded.row_streams);
        r_squared(&fit::medians(
            &samples,
            &family_coefficients(params, family),
        ))
    };
    (r2(Family::Fast), r2(Family::Slow))
}

/// The fast fit's column of the compute part's body cost, `K^b` ([`Family::coefficient_names`]).
pub const FAST_COMPUTE_BODY: usize = 3;

/// The exposed share `learn` writes (`params.exposed`): a stencil's peel and body each cost
/// `max(fast, slow) + EXPOSED min(fast, slow)`. A constant of the default form, not fitted: the
/// training programs sit each on one side of the `max`, and fitted to kernels the share trades
/// against the memory costs. Under the `max` alone the search chose recomputation that the
/// slow side hides, which measured slower (docs/decisions/0047-exposed-share.md).
pub const EXPOSED: f64 = 0.25;

/// Refits the fast family of `result` with the compute part's body cost `K^b` held at
/// `seconds`, the time of one add per cell measured at the adds' throughput
/// (`compile::OperationTimes::add_seconds`): each sample's time less `seconds` per counted
/// operation is fitted by the fast-memory costs and the compute part's peel. Operations and
/// accesses grow together in the training programs: fitted with the rest, the adds got about 0.6
/// of their measured cost and the accesses the difference
/// (docs/decisions/0045-compute-body-measured.md).
pub fn hold_compute_body(
    result: &mut LearnResult,
    seconds: f64,
    solver: absinthe_solvers::method::Backend,
) -> Result<(), LearnError> {
    let solver = solver
        .solver()
        .map_err(|e| LearnError::Fit(e.to_string()))?;
    let fast = samples(&result.measurements, Family::Fast, 0);
    let held: Vec<Sample> = fast
        .iter()
        .map(|s| s.clone().holding(FAST_COMPUTE_BODY, seconds))
        .collect();
    let mut pf = fit::lad_fit(&held, solver.as_ref())?;
    pf[FAST_COMPUTE_BODY] = seconds;
    result.params.fast = PeelBody {
        peel: pf[0],
        body: pf[1],
    };
    result.params.compute = Compute {
        peel: pf[2],
        body: seconds,
    };
    result.fast_medians = fit::medians(&fast, &pf);
    result.r2_fast = r_squared(&result.fast_medians);
    Ok(())
}

/// Fits both families' parameters to measurements.
pub fn fit_measurements(
    measurements: Vec<Measurement>,
    solver: absinthe_solvers::method::Backend,
) -> Result<LearnResult, LearnError> {
    fit_measurements_in(measurements, solver, ModelKind::Linear)
}

/// [`fit_measurements`] for the form `model`: the published form fits its six parameters
/// (its compute and crowding columns are zero, and so are they) at no crowding limit.
pub fn fit_measurements_in(
    measurements: Vec<Measurement>,
    solver: absinthe_solvers::method::Backend,
    model: ModelKind,
) -> Result<LearnResult, LearnError> {
    let solver = solver
        .solver()
        .map_err(|e| LearnError::Fit(e.to_string()))?;
    let fast = samples_in(&measurements, Family::Fast, 0, model);
    let mut pf = fit::lad_fit(&fast, solver.as_ref())?;
    let fast_medians = fit::medians(&fast, &pf);
    // The slow fit at each crowding limit; the least deviation wins (the first of equals, so
    // no charge unless one fits better).
    let mut crowding = CrowdingCalibration {
        limits: Vec::new(),
        deviations: Vec::new(),
        r2_slow: Vec::new(),
    };
    // (deviation, limit, coefficients, medians) of the best fit so far.
    type Fit = (f64, u64, Vec<f64>, Vec<(f64, f64)>);
    let mut best: Option<Fit> = None;
    let limits: &[u64] = if model.inlines() {
        &CROWDING_LIMITS
    } else {
        &[0]
    };
    for &limit in limits {
        let slow = samples_in(&measurements, Family::Slow, limit, model);
        if slow.is_empty() {
            break;
        }
        let ps = fit::lad_fit(&slow, solver.as_ref())?;
        let deviation: f64 = slow
            .iter()
            .map(|s| (fit::predict(&ps, &s.counts) - s.seconds).abs())
            .sum();
        let medians = fit::medians(&slow, &ps);
        crowding.limits.push(limit);
        crowding.deviations.push(deviation);
        crowding.r2_slow.push(r_squared(&medians));
        if best.as_ref().is_none_or(|b| deviation < b.0 * (1.0 - 1e-9)) {
            best = Some((deviation, limit, ps, medians));
        }
    }
    let Some((_, limit, mut ps, slow_medians)) = best else {
        return Err(LearnError::Fit("no slow-family samples to fit".into()));
    };
    if model == ModelKind::Absinthe {
        // Zero columns leave their coefficients free: the form has none.
        pf[2] = 0.0;
        pf[3] = 0.0;
        ps[4] = 0.0;
    }
    Ok(LearnResult {
        params: Params {
            fast: PeelBody {
                peel: pf[0],
                body: pf[1],
            },
            slow_base: PeelBody {
                peel: ps[0],
                body: ps[1],
            },
            slow_stream: PeelBody {
                peel: ps[2],
                body: ps[3],
            },
            compute: Compute {
                peel: pf[2],
                body: pf[3],
            },
            crowded: Crowded {
                row_streams: if ps[4] > 0.0 { limit } else { 0 },
                stream_body: ps[4],
            },
            // Measured apart (`compile::operation_times`); the caller sets them.
            operations: OperationWeights::default(),
            // A constant of the form, not fitted here; the caller sets it (`EXPOSED`).
            exposed: 0.0,
        },
        r2_fast: r_squared(&fast_medians),
        r2_slow: r_squared(&slow_medians),
        measurements,
        fast_medians,
        slow_medians,
        crowding,
    })
}

#[cfg(test)]
mod tests;
