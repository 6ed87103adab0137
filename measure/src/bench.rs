//! Timing variants: generate each one's kernel and harness, build them all, run them
//! round-robin with the caches flushed ([`crate::runner`]), verify every run against the
//! reference, and report one [`Row`] per variant with the model's counts. `bench` times one
//! batch of variants, the tuner several (the model's best, then its measured sweeps) through
//! one [`Bench`].

use std::path::{Path, PathBuf};

use absinthe_codegen::compile::{operation_times, stream_bandwidth, HarnessResult, Toolchain};
use absinthe_codegen::cuda::{plan as cuda_plan, GpuLimits};
use absinthe_codegen::render::{default_flush_bytes, Flush, HarnessOptions, Renderer};
use absinthe_codegen::{lower, lower_cuda, Schedule};
use absinthe_model::cost_model::boxes::BlockLimits;
use absinthe_model::cost_model::evaluate::{evaluate, overhead_count, stream_shape, Cost, Counts};
use absinthe_model::cost_model::inline_search::apply as inline_apply;
use absinthe_model::formats::learned::FlushKind;
use absinthe_model::formats::machine::{Machine, ModelMachine};
use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::program::Program;
use absinthe_model::language::program::DIMS;
use serde::{Serialize, Serializer};

use crate::runner::{pooled_stats, Rounds, RunEvent, Runner, Sources};
use crate::variants::{plan, Plan, PlanError, PlanSettings, Planned, Variant};
use crate::MeasureError;

/// How variants are built and timed (`bench`'s and `tune`'s flags, resolved).
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Timed runs per variant; the first quarter of each round is discarded.
    pub runs: usize,
    /// How the caches are emptied before each run.
    pub flush: Flush,
    /// Also time every variant with warm caches.
    pub warm: bool,
    pub build: Build,
    pub target: BenchTarget,
    /// Measure the streaming bandwidth (the roofline columns).
    pub roofline: bool,
    /// Count each variant's cache misses per level with the cache model (`Row::cache`).
    pub cache_model: bool,
    /// The program's run-time scalars' values, in order (`Program::scalar_values`); empty:
    /// their defaults.
    pub scalars: Vec<f64>,
}

impl BenchOptions {
    /// `runs` flushed runs a variant of the kernels built `build` for `target`: no warm runs,
    /// no roofline, no cache model, the scalars' default values.
    pub fn new(runs: usize, flush: Flush, build: Build, target: BenchTarget) -> BenchOptions {
        BenchOptions {
            runs,
            flush,
            warm: false,
            build,
            target,
            scalars: Vec::new(),
            roofline: false,
            cache_model: false,
        }
    }

    /// For counting, not timing (`absinthe cache`): one unflushed run of the default build of
    /// the OpenMP kernels.
    pub fn untimed() -> BenchOptions {
        let build = Build::of_flags(false, false);
        BenchOptions::new(1, Flush::NONE, build, BenchTarget::Openmp)
    }
}

/// Targets `bench` can build and run on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchTarget {
    Openmp,
    CudaEmulated,
}

impl BenchTarget {
    /// The names `--target` takes.
    pub const NAMES: [&'static str; 2] = ["openmp", "cuda-emulated"];
}

impl std::str::FromStr for BenchTarget {
    type Err = String;
    fn from_str(s: &str) -> Result<BenchTarget, String> {
        match s {
            "openmp" => Ok(BenchTarget::Openmp),
            "cuda-emulated" => Ok(BenchTarget::CudaEmulated),
            _ => Err(format!("unknown target `{s}`; use openmp or cuda-emulated")),
        }
    }
}

/// How the kernels are built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Build {
    /// `-ffp-contract=off`: verified bit for bit (`--exact`).
    Exact,
    /// The default timed build: FMA contraction allowed, verified within a tolerance.
    Fma,
    /// The timed build with relaxed floating-point math (`--relaxed-math`).
    RelaxedMath,
}

impl Build {
    /// The build `--exact` and `--relaxed-math` ask for.
    pub fn of_flags(exact: bool, relaxed_math: bool) -> Build {
        if relaxed_math {
            Build::RelaxedMath
        } else if exact {
            Build::Exact
        } else {
            Build::Fma
        }
    }

    /// `toolchain` set up for this build.
    pub fn toolchain(self, toolchain: Toolchain) -> Toolchain {
        match self {
            Build::RelaxedMath => toolchain.relaxed_math(),
            Build::Fma => toolchain.fused_multiply_add(),
            Build::Exact => toolchain,
        }
    }
}

/// How a variant's output was compared with the reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verification {
    /// Every value equal bit for bit.
    BitExact,
    /// Within 1024 ulps of each array's largest magnitude (the FMA and relaxed builds).
    Tolerance,
}

impl Verification {
    /// As the harness names it.
    fn of_harness(name: &str) -> Verification {
        if name == "tolerance" {
            Verification::Tolerance
        } else {
            Verification::BitExact
        }
    }
}

/// What became of a variant.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    Ok,
    /// Not run, and why (e.g. `infeasible`).
    Skipped(String),
    /// Its output differs from the reference: in the flushed runs, or (`warm`) in the runs
    /// with warm caches; `detail` is the first mismatching element.
    Mismatch {
        warm: bool,
        detail: String,
    },
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Status::Ok => f.write_str("ok"),
            Status::Skipped(why) => f.write_str(why),
            Status::Mismatch {
                warm: false,
                detail,
            } => write!(f, "MISMATCH {detail}"),
            Status::Mismatch { warm: true, detail } => write!(f, "MISMATCH (warm) {detail}"),
        }
    }
}

impl Serialize for Status {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One row of the result.
#[derive(Serialize)]
pub struct Row {
    pub variant: String,
    /// The requested variant this row realises (None for the tuner's sweeps).
    #[serde(skip)]
    pub of: Option<Variant>,
    /// Stencils computed where they are read; `groups` index the other stencils.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inline: Vec<String>,
    pub groups: Vec<usize>,
    pub tiles: Vec<[usize; 3]>,
    /// Groups that stream.
    pub stream: Vec<usize>,
    /// The schedule in words: `reference`, `tiles`, or `stream <dim>` with how many groups.
    pub schedule: String,
    /// `bit-exact` or `tolerance` (the FMA build).
    pub verification: Option<Verification>,
    /// How the kernels were built: `exact` (`--exact`), `fma` (the default timed build) or
    /// `relaxed-math` (`--relaxed-math`).
    pub build: Build,
    /// The largest difference from the reference relative to the array's largest magnitude.
    pub max_error: Option<f64>,
    pub predicted_seconds: f64,
    pub measured_seconds: Option<f64>,
    /// With `--warm`: the median of the runs with warm caches (none flushed), same rounds.
    pub measured_warm_seconds: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub verified: Option<bool>,
    pub status: Status,
    /// Compulsory traffic (inputs read and outputs written once over the domain) in bytes.
    pub compulsory_bytes: u64,
    /// `compulsory_bytes / bandwidth`: the fastest this could run.
    pub roofline_seconds: Option<f64>,
    /// `roofline_seconds / measured_seconds`.
    pub roofline_fraction: Option<f64>,
    /// The divider's roof: the program's compulsory divisions, square roots and calls
    /// ([`absinthe_model::cost_model::traffic::compulsory_operations`]) at the throughput
    /// lower bounds measured in the same run ([`Bench::divider`]): it cannot run faster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub divider_seconds: Option<f64>,
    /// What `predicted_seconds` is made of: the model's access counts of every stencil the
    /// variant computes and the loop-bound overhead of every group, so that a script can
    /// refit the model's form to measured times (absent for skipped variants).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelCounts>,
    /// The cache model's misses per level (`absinthe cache`), with `BenchOptions::cache_model`;
    /// absent for skipped variants.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<Vec<absinthe_cache::LevelReport>>,
    /// Why the cache model gave no `cache` for a variant it was asked to count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_error: Option<String>,
}

/// The model's counts of one variant (`evaluate::evaluate` on the program it runs, inlined
/// stencils removed). With the machine's parameters `p`, `predicted_seconds` is the sum over
/// stencils of `max(F^p fast.peel + K^p compute.peel, B^p slow_base.peel + V^p
/// slow_stream.peel)` and the same for the body (whose slow side adds `Q^b slow_stream.body`
/// in a `crowded` group), plus `(B^b + B^v) overhead` over groups (`evaluate::stencil_seconds`,
/// `evaluate::overhead_seconds`).
#[derive(Serialize, Clone, Debug)]
pub struct ModelCounts {
    /// The program's domain (with the row's `tiles`, the tile sizes).
    pub domain: [usize; 3],
    pub stencils: Vec<StencilModelCounts>,
    /// Per group: the accesses `(B^b + B^v)` multiplies.
    pub overhead: Vec<u128>,
    /// Per group: whether it keeps more row streams in flight than the machine's
    /// `params.crowded.row_streams` (`evaluate::crowded`).
    pub crowded: Vec<bool>,
}

/// One stencil's counts in [`ModelCounts`].
#[derive(Serialize, Clone, Debug)]
pub struct StencilModelCounts {
    pub stencil: String,
    pub group: usize,
    pub counts: Counts,
    /// `(s, s^x, s^y, s^z)`: the arrays it streams from slow memory (a store twice) and
    /// their lines along each dimension, as the counts take them.
    pub stream_weights: [u64; 4],
    /// The arrays it loads from slow memory (`L_i`): program inputs, and arrays other groups
    /// stored. With `store`, what `stream_weights[0]` counts (a store twice).
    pub loads: Vec<String>,
    /// Whether it stores its result to slow memory (`w_i`: an output, or read by a later group).
    pub store: bool,
}

impl ModelCounts {
    fn of(program: &Program, analysis: &Analysis, cost: &Cost) -> ModelCounts {
        let mut stencils = Vec::new();
        for (g, group) in cost.groups.iter().enumerate() {
            for (i, s) in group.range.clone().zip(&group.stencils) {
                stencils.push(StencilModelCounts {
                    stencil: program.stencils[i].name.clone(),
                    group: g,
                    counts: s.counts,
                    stream_weights: s.stream_weights,
                    loads: s
                        .loads
                        .iter()
                        .map(|&a| analysis.arrays[a].name.clone())
                        .collect(),
                    store: s.store,
                });
            }
        }
        let overhead = cost
            .groups
            .iter()
            .map(|g| {
                let tiles = g.stencils.first().map_or(0, |s| s.tiles_total);
                overhead_count(tiles, g.stencils.len())
            })
            .collect();
        ModelCounts {
            domain: analysis.domain,
            stencils,
            overhead,
            crowded: cost.groups.iter().map(|g| g.crowded).collect(),
        }
    }
}

/// What timing variants needs, set up once: the program, the machine, the toolchain and the
/// harness settings. The tuner times several batches through one of these.
pub struct Bench {
    pub program: Program,
    pub analysis: Analysis,
    pub machine: Machine,
    pub view: ModelMachine,
    pub(crate) renderer: Renderer,
    pub(crate) toolchain: Toolchain,
    stream_dim: usize,
    pub(crate) env: Vec<(String, String)>,
    pub options: BenchOptions,
    /// The streaming bandwidth in bytes per second, when `options.roofline`.
    pub bandwidth: Option<f64>,
    /// Seconds per cell of a division, a square root and a call, lower bounds
    /// ([`Bench::measure_divider`]), when `options.roofline` and the roof applies.
    pub divider: Option<[f64; 3]>,
    /// The program's compulsory operations, by kind (the divider roof's counts).
    pub operations: absinthe_model::language::expr::OperationCounts,
    progress: Box<dyn Fn(&str) + Sync + Send>,
}

impl Bench {
    /// Sets up the toolchain for `program` on `machine` (and measures the streaming bandwidth
    /// when `options.roofline` asks).
    pub fn new(
        (program, analysis): (Program, Analysis),
        (machine, view): (Machine, ModelMachine),
        renderer: Renderer,
        options: BenchOptions,
    ) -> Result<Bench, MeasureError> {
        let gpu = options.target == BenchTarget::CudaEmulated;
        if let Some(why) = machine.target_mismatch(gpu) {
            return Err(MeasureError::Target(why));
        }
        let toolchain = options.build.toolchain(Toolchain::of(&machine.compiler));
        // The CUDA kernels stream along z (thread blocks own x-y tiles).
        let stream_dim = match options.target {
            BenchTarget::Openmp => stream_shape(&analysis).dim,
            BenchTarget::CudaEmulated => 2,
        };
        let env: Vec<(String, String)> = machine
            .cores
            .map(|c| ("OMP_NUM_THREADS".to_string(), c.to_string()))
            .into_iter()
            .collect();
        let operations = absinthe_model::cost_model::traffic::compulsory_operations(&analysis);
        let mut bench = Bench {
            program,
            analysis,
            machine,
            view,
            renderer,
            toolchain,
            stream_dim,
            env,
            options,
            bandwidth: None,
            divider: None,
            operations,
            progress: Box::new(|_| {}),
        };
        if bench.options.roofline {
            bench.measure_roofline()?;
        }
        Ok(bench)
    }

    /// Measures the streaming bandwidth and the divider's roof (the roofline columns); `new`
    /// does when `options.roofline` asks, a caller that plans its variants first does after.
    pub fn measure_roofline(&mut self) -> Result<(), MeasureError> {
        let env: Vec<(&str, &str)> = self.env.iter().map(|(k, v)| (&**k, &**v)).collect();
        let flush = default_flush_bytes();
        self.bandwidth = Some(stream_bandwidth(
            &self.toolchain,
            &self.renderer,
            flush,
            &env,
        )?);
        self.divider = self.measure_divider(&env)?;
        Ok(())
    }

    /// Hears a line for people at every step (compiling, each run).
    pub fn on_progress(mut self, progress: impl Fn(&str) + Sync + Send + 'static) -> Bench {
        self.progress = Box::new(progress);
        self
    }

    /// Passes a line for people to the progress hook.
    pub fn note(&self, line: &str) {
        (self.progress)(line)
    }

    /// How the runs treat the caches, for a table's header.
    pub fn flush_phrase(&self) -> String {
        if self.options.flush == Flush::NONE {
            "caches not flushed between runs (--flush-bytes 0)".to_string()
        } else {
            format!("caches flushed before each run ({})", self.options.flush)
        }
    }

    /// Why this bench's timings may not match the machine file's predictions: its parameters
    /// were learned with the caches emptied the other way (`learned.flush`; files without it
    /// were learned with a read).
    pub fn flush_mismatch(&self) -> Option<String> {
        let learned = self.machine.learned.as_ref()?.flush?;
        let flush = self.options.flush;
        let learned_evict = learned == FlushKind::Evict;
        (learned_evict != (flush == Flush::Evict)).then(|| {
            format!(
                "learned with `flush: {learned}`, timed now with {flush}: measured and predicted \
                 times differ by the flush as well (pass `--flush {}` to time as it was learned)",
                if learned_evict { "evict" } else { "read" }
            )
        })
    }

    /// Plans `variants` (`variants::plan`).
    pub fn plan(&self, variants: &[Variant], settings: &PlanSettings) -> Result<Plan, PlanError> {
        plan(
            variants,
            &self.program,
            &self.analysis,
            &self.view,
            settings,
        )
    }

    /// Builds, runs and verifies `planned` (skipped ones are reported, not run): one row per
    /// planned variant, in order, and whether some variant failed verification.
    pub fn time(&self, planned: &[Planned]) -> Result<(Vec<Row>, bool), MeasureError> {
        self.time_runs(planned, self.options.runs)
    }

    /// [`Bench::time`] with `runs` timed runs per variant instead of the bench's own (the
    /// builds are the same, so a variant timed before is not built again).
    pub fn time_runs(
        &self,
        planned: &[Planned],
        runs: usize,
    ) -> Result<(Vec<Row>, bool), MeasureError> {
        let mut models: Vec<Option<ModelCounts>> = vec![None; planned.len()];
        let sources = planned
            .iter()
            .zip(&mut models)
            .map(|(p, model)| self.sources(p, model))
            .collect::<Result<Vec<Sources>, MeasureError>>()?;
        let runner = Runner {
            toolchain: &self.toolchain,
            env: self.env.clone(),
            // As many compilers as cores.
            jobs: std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(planned.len().max(1)),
        };
        (self.progress)(&format!(
            "compiling {} variant(s) with {} ({} at a time) ...",
            planned.len(),
            self.toolchain.cxx,
            runner.jobs
        ));
        let exes = runner
            .build(&sources, &|_| {})
            .into_iter()
            .zip(planned)
            .map(|(e, p)| {
                e.transpose().map_err(|source| MeasureError::Variant {
                    variant: p.name.clone(),
                    doing: "building",
                    source,
                })
            })
            .collect::<Result<Vec<Option<PathBuf>>, _>>()?;
        // With `warm`, each variant's flushed runs are followed by as many with no flush; the
        // first quarter of those, which find the caches as the flushed run left them, is
        // discarded like every first quarter.
        let flushes: &[Flush] = if self.options.warm {
            &[self.options.flush, Flush::NONE]
        } else {
            &[self.options.flush]
        };
        let rounds = Rounds::of(runs);
        let timed = |k: usize| {
            if planned[k].reference {
                "reference"
            } else {
                "kernel"
            }
        };
        let mut events = |e: RunEvent| {
            if let RunEvent::Running { round, index } = e {
                (self.progress)(&format!(
                    "[round {}/{}, {}/{}] running {} ...",
                    round + 1,
                    rounds.rounds,
                    index + 1,
                    planned.len(),
                    planned[index].name
                ));
            }
        };
        let pooled = runner
            .run_rounds(&exes, rounds, flushes, &timed, &mut events)
            .map_err(|source| MeasureError::Run { source })?;
        let mut failed = false;
        let rows = planned
            .iter()
            .zip(pooled)
            .zip(models)
            .map(|((p, pooled), model)| {
                let row = self.row(p, pooled, model);
                failed |= matches!(row.status, Status::Mismatch { .. });
                row
            })
            .collect();
        Ok((rows, failed))
    }

    /// The harness sources of `p` (None when it is skipped), and its model counts into
    /// `model`. An inlined variant's configuration is of the rewritten program; its harness
    /// verifies against the original program's reference.
    fn sources(
        &self,
        p: &Planned,
        model: &mut Option<ModelCounts>,
    ) -> Result<Sources, MeasureError> {
        if p.skipped.is_some() {
            return Ok(None);
        }
        let (schedule, counts) = self.schedule_of(p)?;
        *model = Some(counts);
        let h = HarnessOptions {
            runs: self.options.runs,
            flush: self.options.flush,
            label: p.name.clone(),
            scalars: self.options.scalars.clone(),
            ..HarnessOptions::default()
        };
        let files = match self.options.target {
            BenchTarget::Openmp => self.renderer.openmp(&schedule, Some(&h)),
            BenchTarget::CudaEmulated => {
                cuda_plan(&schedule, &GpuLimits::of_machine(&self.machine))
                    .and_then(|plan| self.renderer.cuda_emulated(&schedule, &plan, &h))
            }
        }?;
        Ok(Some(files.files))
    }

    /// The schedule of `p` on this bench's target, verified against the original program's
    /// reference, and the model's counts of it.
    pub(crate) fn schedule_of(&self, p: &Planned) -> Result<(Schedule, ModelCounts), MeasureError> {
        let (program, analysis, view) = (&self.program, &self.analysis, &self.view);
        let (prog, an, _) = inline_apply(program, view.params.operations, &p.inline)?;
        let cost = evaluate(&an, view, &p.config);
        let counts = ModelCounts::of(&prog, &an, &cost);
        let schedule: Schedule = match self.options.target {
            BenchTarget::Openmp => lower(&prog, &an, &p.config, &cost)?,
            BenchTarget::CudaEmulated => {
                lower_cuda(&prog, &an, &p.config, &cost, BlockLimits::of(view))?
            }
        }
        .with_reference(program, analysis);
        Ok((schedule, counts))
    }

    /// The cache model's levels of `p` when the options ask for them, or why it could not
    /// count them; neither for skipped variants and other targets than OpenMP.
    fn row_cache(&self, p: &Planned) -> (Option<Vec<absinthe_cache::LevelReport>>, Option<String>) {
        let openmp = self.options.target == BenchTarget::Openmp;
        if !self.options.cache_model || !openmp || p.skipped.is_some() {
            return (None, None);
        }
        match self
            .cache_levels()
            .and_then(|levels| self.cache_model(p, &levels))
        {
            Ok(r) => (Some(r.levels), None),
            Err(e) => (None, Some(e.to_string())),
        }
    }

    /// Seconds per cell of a division, a square root and a call (`exp`'s) with every core
    /// busy, each a lower bound: what one more of them a cell adds in `learn`'s operation-cost
    /// program once its unit is the bottleneck (`OperationTimes::seconds`). None where the roof
    /// does not apply (programs in floats, whose throughput differs; the relaxed-math build,
    /// which multiplies by a literal's reciprocal; no divisions, square roots or calls).
    fn measure_divider(&self, env: &[(&str, &str)]) -> Result<Option<[f64; 3]>, MeasureError> {
        let ops = &self.operations;
        if self.program.value_type.bytes() != 8
            || self.options.build == Build::RelaxedMath
            || ops.divide + ops.sqrt + ops.call == 0
        {
            return Ok(None);
        }
        let threads = self.machine.cores.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
        let t = operation_times(&self.toolchain, &self.renderer, threads, env)?;
        Ok(Some(t.seconds().map(|x| x.max(0.0))))
    }

    /// The divider's roof of the program ([`Row::divider_seconds`]): its divisions and square
    /// roots share the divider and add up; calls run beside it (the larger of the two).
    pub fn divider_seconds(&self) -> Option<f64> {
        let ops = &self.operations;
        let divisions = self.divisions() as f64;
        self.divider
            .map(|[d, s, c]| (divisions * d + ops.sqrt as f64 * s).max(ops.call as f64 * c))
    }

    /// The program's compulsory divisions as the timed build computes them: those by literals
    /// too where the machine file says it divides (`compiler.division`).
    pub fn divisions(&self) -> u64 {
        let ops = &self.operations;
        let literal = self.view.params.operations.divide_literals;
        ops.divide + if literal { ops.literal_divide } else { 0 }
    }

    /// The row of `p` from its pooled runs (per flush, one case each).
    fn row(
        &self,
        p: &Planned,
        pooled: Option<Vec<Vec<HarnessResult>>>,
        model: Option<ModelCounts>,
    ) -> Row {
        let compulsory_bytes = absinthe_model::cost_model::traffic::compulsory_bytes(
            &self.analysis,
            self.program.value_type.bytes(),
        );
        let inline: Vec<String> = p
            .inline
            .iter()
            .map(|&s| self.program.stencils[s].name.clone())
            .collect();
        let (cache, cache_error) = self.row_cache(p);
        let mut row = Row {
            variant: p.name.clone(),
            of: p.variant.clone(),
            schedule: self.schedule_phrase(p),
            inline,
            groups: p.config.groups.clone(),
            tiles: p.config.tiles.clone(),
            stream: p.config.stream.clone(),
            verification: None,
            build: self.options.build,
            max_error: None,
            predicted_seconds: p.predicted,
            measured_seconds: None,
            measured_warm_seconds: None,
            min: None,
            max: None,
            verified: None,
            status: p.skipped.clone().map_or(Status::Ok, Status::Skipped),
            compulsory_bytes,
            roofline_seconds: self.bandwidth.map(|b| compulsory_bytes as f64 / b),
            roofline_fraction: None,
            divider_seconds: self.divider_seconds(),
            model,
            cache,
            cache_error,
        };
        let mut flushes = pooled
            .into_iter()
            .flatten()
            .map(|mut cases| cases.swap_remove(0));
        if let Some(mut r) = flushes.next() {
            r.times.sort_by(f64::total_cmp);
            let (min, median, max) = pooled_stats(&r.times).unwrap_or((r.min, r.median, r.max));
            row.measured_seconds = Some(median);
            row.min = Some(min);
            row.max = Some(max);
            row.verified = Some(r.verified);
            row.verification = Some(Verification::of_harness(&r.verification));
            row.max_error = Some(r.max_error);
            if !r.verified {
                row.status = Status::Mismatch {
                    warm: false,
                    detail: mismatch_text(&r),
                };
            }
            row.roofline_fraction = row
                .roofline_seconds
                .filter(|_| median > 0.0)
                .map(|s| s / median);
        }
        if let Some(mut w) = flushes.next() {
            w.times.sort_by(f64::total_cmp);
            row.measured_warm_seconds = pooled_stats(&w.times).map(|(_, median, _)| median);
            if !w.verified && row.status == Status::Ok {
                row.status = Status::Mismatch {
                    warm: true,
                    detail: mismatch_text(&w),
                };
            }
        }
        row
    }

    /// The schedule in words: `reference`, `tiles`, or `stream <dim>` with how many groups, and
    /// how many stencils are inlined.
    fn schedule_phrase(&self, p: &Planned) -> String {
        let inlined = if p.inline.is_empty() {
            String::new()
        } else {
            format!(", {} inlined", p.inline.len())
        };
        let dim = DIMS[self.stream_dim];
        if p.reference {
            "reference".into()
        } else if p.config.stream.is_empty() {
            format!("tiles{inlined}")
        } else if p.config.stream.len() == p.config.tiles.len() {
            format!("stream {dim}{inlined}")
        } else {
            format!(
                "stream {dim} ({}/{} groups){inlined}",
                p.config.stream.len(),
                p.config.tiles.len()
            )
        }
    }
}

/// The first mismatching element of a failed run, as the harness reported it (`null` when it
/// named none).
fn mismatch_text(r: &HarnessResult) -> String {
    r.mismatch.clone().unwrap_or_default().to_string()
}

/// The plotted points of variants timed: every one with a prediction and a time, the
/// reference excepted.
pub fn accuracy_points<'a>(
    variants: impl Iterator<Item = (&'a Planned, &'a Row)>,
) -> Vec<crate::accuracy::Point> {
    variants
        .filter(|(p, r)| {
            !p.reference && r.predicted_seconds.is_finite() && r.measured_seconds.is_some()
        })
        .map(|(p, r)| crate::accuracy::Point {
            label: p.name.clone(),
            predicted: r.predicted_seconds,
            measured: r.measured_seconds.unwrap_or(f64::NAN),
            optimum: p.variant == Some(Variant::Opt),
        })
        .collect()
}

/// A timed batch of variants (`bench`): one row per planned variant, whether some variant
/// failed verification, and the points the model's accuracy is scored on
/// ([`accuracy_points`]). `crate::text` renders it; it serializes as its rows.
pub struct BenchReport<'a> {
    /// The bench that timed it: the program, the machine's view and the options.
    pub bench: &'a Bench,
    pub rows: Vec<Row>,
    pub failed: bool,
    pub points: Vec<crate::accuracy::Point>,
}

impl Bench {
    /// Builds, runs and verifies `planned` ([`Bench::time`]) into a report.
    pub fn report(&self, planned: &[Planned]) -> Result<BenchReport<'_>, MeasureError> {
        let (rows, failed) = self.time(planned)?;
        let points = accuracy_points(planned.iter().zip(&rows));
        Ok(BenchReport {
            bench: self,
            rows,
            failed,
            points,
        })
    }
}

impl Serialize for BenchReport<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.rows.serialize(s)
    }
}

impl BenchReport<'_> {
    /// Draws predicted against measured time of the timed variants into `path` (PNG or SVG,
    /// [`crate::accuracy::plot`]).
    pub fn plot(&self, path: &Path) -> Result<(), MeasureError> {
        let title = format!(
            "{}: predicted vs measured ({} variants)",
            self.bench.program.name,
            self.points.len()
        );
        crate::accuracy::plot(path, &title, &self.points)
    }
}
