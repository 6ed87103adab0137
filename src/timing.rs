//! Timing variants: generate each one's kernel and harness, build them all, run them
//! round-robin with the caches flushed, verify every run against the reference, and report
//! one [`Row`] per variant with the model's counts. `bench` times one batch of variants, `tune`
//! several (the model's best, then its measured sweeps) through one [`Bench`].

use std::path::{Path, PathBuf};

use absinthe_codegen::compile::{run_harness, stream_bandwidth, HarnessResult, Toolchain};
use absinthe_codegen::cuda::{plan as cuda_plan, GpuLimits};
use absinthe_codegen::render::{default_flush_bytes, Flush, HarnessOptions};
use absinthe_codegen::{lower, lower_cuda, Schedule};
use absinthe_learn::variants::{parse_variants, plan, PlanError, PlanSettings, Planned};
use absinthe_model::analysis::Analysis;
use absinthe_model::cost::{evaluate, overhead_count, stream_shape, Cost, Counts};
use absinthe_model::inline_search::apply as inline_apply;
use absinthe_model::machine::{Machine, ModelMachine};
use absinthe_model::parallel::parallel_map;
use absinthe_model::program::Program;
use absinthe_model::program::DIMS;
use anyhow::Context;
use clap::ValueEnum;
use serde::Serialize;

use crate::args::{load_on, renderer, MachineArg, SearchArgs};

/// How variants are built and timed (`bench`'s and `tune`'s flags).
pub struct TimingOptions<'a> {
    pub program: &'a Path,
    pub machine: &'a MachineArg,
    /// Templates read from this directory first.
    pub templates: Option<&'a Path>,
    /// Timed runs per variant; the first quarter of each round is discarded.
    pub runs: usize,
    /// How the caches are emptied before each run.
    pub flush: Flush,
    /// Also time every variant with warm caches.
    pub warm: bool,
    /// Bit-exact build (`-ffp-contract=off`) instead of the timed FMA build.
    pub exact: bool,
    /// The timed build with relaxed floating-point math.
    pub relaxed_math: bool,
    pub target: BenchTarget,
    /// Measure the streaming bandwidth (the roofline columns).
    pub roofline: bool,
}

/// Which variants, and how they are solved (`bench --variants`, the search flags).
pub struct PlanRequest<'a> {
    pub variants: &'a str,
    pub search: &'a SearchArgs,
    /// `dp` or a MILP backend.
    pub solver: absinthe_solvers::method::Method,
    /// The seed of `random:N`.
    pub seed: u64,
}

/// Targets `bench` can build and run on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BenchTarget {
    Openmp,
    CudaEmulated,
}

/// One row of the result.
#[derive(Serialize)]
pub struct Row {
    pub variant: String,
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
    pub verification: Option<String>,
    /// How the kernels were built: `exact` (`--exact`), `fma` (the default timed build) or
    /// `relaxed-math` (`--relaxed-math`).
    pub build: &'static str,
    /// The largest difference from the reference relative to the array's largest magnitude.
    pub max_error: Option<f64>,
    pub predicted_seconds: f64,
    pub measured_seconds: Option<f64>,
    /// With `--warm`: the median of the runs with warm caches (none flushed), same rounds.
    pub measured_warm_seconds: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub verified: Option<bool>,
    pub status: String,
    /// Compulsory traffic (inputs read and outputs written once over the domain) in bytes.
    pub compulsory_bytes: u64,
    /// `compulsory_bytes / bandwidth`: the fastest this could run.
    pub roofline_seconds: Option<f64>,
    /// `roofline_seconds / measured_seconds`.
    pub roofline_fraction: Option<f64>,
    /// What `predicted_seconds` is made of: the model's access counts of every stencil the
    /// variant computes and the loop-bound overhead of every group, so that a script can
    /// refit the model's form to measured times (absent for skipped variants).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelCounts>,
}

/// The model's counts of one variant (`cost::evaluate` on the program it runs, inlined
/// stencils removed). With the machine's parameters `p`, `predicted_seconds` is the sum over
/// stencils of `max(F^p fast.peel + K^p compute.peel, B^p slow_base.peel + V^p
/// slow_stream.peel)` and the same for the body (whose slow side adds `Q^b slow_stream.body`
/// in a `crowded` group), plus `(B^b + B^v) overhead` over groups (`cost::stencil_seconds`,
/// `cost::overhead_seconds`).
#[derive(Serialize, Clone, Debug)]
pub struct ModelCounts {
    /// The program's domain (with the row's `tiles`, the tile sizes).
    pub domain: [usize; 3],
    pub stencils: Vec<StencilModelCounts>,
    /// Per group: the accesses `(B^b + B^v)` multiplies.
    pub overhead: Vec<u128>,
    /// Per group: whether it keeps more row streams in flight than the machine's
    /// `params.crowded.row_streams` (`cost::crowded`).
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
/// harness settings. `tune` times several batches through one of these.
pub struct Bench {
    pub program: Program,
    pub analysis: Analysis,
    pub machine: Machine,
    pub view: ModelMachine,
    renderer: absinthe_codegen::render::Renderer,
    tc: Toolchain,
    stream_dim: usize,
    flush: Flush,
    env: Vec<(String, String)>,
    runs: usize,
    warm: bool,
    target: BenchTarget,
    /// The build, as [`Row::build`] names it.
    pub build: &'static str,
    /// The streaming bandwidth in bytes per second, unless `--no-roofline`.
    pub bandwidth: Option<f64>,
}

impl Bench {
    /// How the runs treat the caches, for a table's header.
    pub fn flush_phrase(&self) -> String {
        if self.flush == Flush::NONE {
            "caches not flushed between runs (--flush-bytes 0)".to_string()
        } else {
            format!("caches flushed before each run ({})", self.flush)
        }
    }

    /// Loads the program and machine of `args` and sets up the toolchain (and measures the
    /// streaming bandwidth when asked).
    pub fn new(args: &TimingOptions) -> anyhow::Result<Bench> {
        let (program, analysis, machine, view) = load_on(args.program, args.machine)?;
        let renderer = renderer(args.templates)?;
        let mut tc = Toolchain::new(&machine.compiler.cxx, &machine.compiler.flags);
        if args.relaxed_math {
            tc = tc.relaxed_math();
        } else if !args.exact {
            tc = tc.fused_multiply_add();
        }
        // The CUDA kernels stream along z (thread blocks own x-y tiles).
        let stream_dim = match args.target {
            BenchTarget::Openmp => stream_shape(&analysis).dim,
            BenchTarget::CudaEmulated => 2,
        };
        if let Some(warning) = flush_mismatch(&machine, args.flush) {
            eprintln!("warning: {}: {warning}", args.machine.path()?.display());
        }
        let env: Vec<(String, String)> = machine
            .cores
            .map(|c| ("OMP_NUM_THREADS".to_string(), c.to_string()))
            .into_iter()
            .collect();
        let mut bench = Bench {
            program,
            analysis,
            machine,
            view,
            renderer,
            tc,
            stream_dim,
            flush: args.flush,
            env,
            runs: args.runs,
            warm: args.warm,
            target: args.target,
            build: build_name(args.exact, args.relaxed_math),
            bandwidth: None,
        };
        if args.roofline {
            eprintln!("measuring streaming bandwidth ...");
            bench.bandwidth = Some(stream_bandwidth(
                &bench.tc,
                &bench.renderer,
                default_flush_bytes(),
                &bench.env_refs(),
            )?);
        }
        Ok(bench)
    }

    fn env_refs(&self) -> Vec<(&str, &str)> {
        self.env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    /// Plans the variants of `request` (`variants::plan`).
    pub fn plan(&self, request: &PlanRequest) -> anyhow::Result<Vec<Planned>> {
        eprintln!("planning variants of {} ...", self.program.name);
        let variants =
            parse_variants(request.variants).map_err(|e| anyhow::anyhow!("--variants: {e}"))?;
        let search = request.search;
        let settings = PlanSettings {
            options: search.milp_options(&self.program)?,
            inline: search.inline_policy(&self.program)?,
            solver: request.solver,
            solve_options: search.solve_options()?,
            seed: request.seed,
        };
        plan(
            &variants,
            &self.program,
            &self.analysis,
            &self.view,
            &settings,
        )
        .map_err(|e| match e {
            // Shown as the file's own diagnostics (`output::format_error`).
            PlanError::File(f) => anyhow::Error::new(f),
            e => e.into(),
        })
    }

    /// Builds, runs and verifies `planned` (skipped ones are reported, not run): one row per
    /// planned variant, in order, and whether some variant failed verification.
    pub fn time(&self, planned: &[Planned]) -> anyhow::Result<(Vec<Row>, bool)> {
        self.time_runs(planned, self.runs)
    }

    /// [`Bench::time`] with `runs` timed runs per variant instead of the bench's own (the
    /// builds are the same, so a variant timed before is not built again).
    pub fn time_runs(&self, planned: &[Planned], runs: usize) -> anyhow::Result<(Vec<Row>, bool)> {
        let (program, analysis, view) = (&self.program, &self.analysis, &self.view);
        let mut models: Vec<Option<ModelCounts>> = vec![None; planned.len()];
        let schedules: Vec<Option<Schedule>> = planned
            .iter()
            .zip(&mut models)
            .map(|(p, model)| {
                if p.skipped.is_some() {
                    return Ok(None);
                }
                // An inlined variant's configuration is of the rewritten program; its harness
                // verifies against the original program's reference.
                let (prog, an, _) = inline_apply(program, view.params.operations, &p.inline)?;
                let cost = evaluate(&an, view, &p.config);
                *model = Some(ModelCounts::of(&prog, &an, &cost));
                Ok(Some(
                    match self.target {
                        BenchTarget::Openmp => lower(&prog, &an, &p.config, &cost)?,
                        BenchTarget::CudaEmulated => {
                            lower_cuda(&prog, &an, &p.config, &cost, view.block_threads)?
                        }
                    }
                    .with_reference(program, analysis),
                ))
            })
            .collect::<anyhow::Result<_>>()?;

        // Build in parallel (as many compilers as cores), run one at a time.
        let jobs = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(planned.len().max(1));
        eprintln!(
            "compiling {} variant(s) with {} ({jobs} at a time) ...",
            planned.len(),
            self.tc.cxx
        );
        let sources: Vec<Option<Vec<(String, String)>>> = schedules
            .iter()
            .zip(planned)
            .map(|(s, p)| {
                s.as_ref()
                    .map(|s| {
                        let h = HarnessOptions {
                            runs: self.runs,
                            flush: self.flush,
                            label: p.name.clone(),
                            ..HarnessOptions::default()
                        };
                        match self.target {
                            BenchTarget::Openmp => self.renderer.openmp(s, Some(&h)),
                            BenchTarget::CudaEmulated => {
                                cuda_plan(s, &GpuLimits::of_machine(&self.machine))
                                    .and_then(|plan| self.renderer.cuda_emulated(s, &plan, &h))
                            }
                        }
                        .map(|f| f.files)
                    })
                    .transpose()
            })
            .collect::<Result<_, _>>()?;
        let mut exes: Vec<Option<anyhow::Result<PathBuf>>> =
            parallel_map(sources.len(), jobs, |k| {
                sources[k]
                    .as_ref()
                    .map(|files| self.tc.build(files, &[]).map_err(anyhow::Error::from))
            });
        let compulsory_bytes =
            absinthe_model::traffic::compulsory_bytes(analysis, program.value_type.bytes());

        // Run the variants round-robin, `ROUNDS` rounds of a quarter of the runs each, so that a
        // burst of load on a shared machine spreads over all variants instead of spoiling one;
        // every round verifies, and the times of all rounds are pooled.
        let exes: Vec<Option<PathBuf>> = exes
            .iter_mut()
            .zip(planned)
            .map(|(e, p)| {
                e.take()
                    .transpose()
                    .with_context(|| format!("building variant {}", p.name))
            })
            .collect::<anyhow::Result<_>>()?;
        let env = self.env_refs();
        let rounds = rounds_for(runs);
        let per_round = runs.div_ceil(rounds);
        let mut results: Vec<Option<HarnessResult>> = vec![None; planned.len()];
        let mut warm_results: Vec<Option<HarnessResult>> = vec![None; planned.len()];
        // With `--warm`, each variant's flushed runs are followed by as many with no flush (the
        // harness's 0 bytes); the first quarter of those, which find the caches as the flushed
        // run left them, is discarded like every first quarter.
        let flushes: &[Flush] = if self.warm {
            &[self.flush, Flush::NONE]
        } else {
            &[self.flush]
        };
        for round in 0..rounds {
            for (k, p) in planned.iter().enumerate() {
                let Some(exe) = &exes[k] else { continue };
                eprintln!(
                    "[round {}/{rounds}, {}/{}] running {} ...",
                    round + 1,
                    k + 1,
                    planned.len(),
                    p.name
                );
                let timed = if p.reference { "reference" } else { "kernel" };
                for (warm, &flush) in flushes.iter().enumerate() {
                    let r = run_harness(
                        exe,
                        &[per_round.to_string(), flush.arg(), timed.to_string()],
                        &env,
                    )
                    .with_context(|| format!("running variant {}", p.name))?
                    .swap_remove(0);
                    let slot = if warm == 0 {
                        &mut results[k]
                    } else {
                        &mut warm_results[k]
                    };
                    match slot {
                        None => *slot = Some(r),
                        Some(pooled) => {
                            pooled.verified &= r.verified;
                            if pooled.mismatch.is_none() {
                                pooled.mismatch = r.mismatch;
                            }
                            pooled.max_error = pooled.max_error.max(r.max_error);
                            pooled.times.extend(r.times);
                        }
                    }
                }
            }
        }
        let mut rows = Vec::new();
        let mut failed = false;
        for (k, p) in planned.iter().enumerate() {
            let inline: Vec<String> = p
                .inline
                .iter()
                .map(|&s| program.stencils[s].name.clone())
                .collect();
            let inlined = if inline.is_empty() {
                String::new()
            } else {
                format!(", {} inlined", inline.len())
            };
            let stream_dim = self.stream_dim;
            let mut row = Row {
                variant: p.name.clone(),
                inline,
                groups: p.config.groups.clone(),
                tiles: p.config.tiles.clone(),
                stream: p.config.stream.clone(),
                schedule: if p.reference {
                    "reference".into()
                } else if p.config.stream.is_empty() {
                    format!("tiles{inlined}")
                } else if p.config.stream.len() == p.config.tiles.len() {
                    format!("stream {}{inlined}", DIMS[stream_dim])
                } else {
                    format!(
                        "stream {} ({}/{} groups){inlined}",
                        DIMS[stream_dim],
                        p.config.stream.len(),
                        p.config.tiles.len()
                    )
                },
                verification: None,
                build: self.build,
                max_error: None,
                predicted_seconds: p.predicted,
                measured_seconds: None,
                measured_warm_seconds: None,
                min: None,
                max: None,
                verified: None,
                status: p.skipped.clone().unwrap_or_else(|| "ok".into()),
                compulsory_bytes,
                roofline_seconds: self.bandwidth.map(|b| compulsory_bytes as f64 / b),
                roofline_fraction: None,
                model: models[k].take(),
            };
            if let Some(w) = &mut warm_results[k] {
                w.times.sort_by(f64::total_cmp);
                row.measured_warm_seconds = pooled_stats(&w.times).map(|(_, median, _)| median);
                if !w.verified {
                    failed = true;
                    row.status =
                        format!("MISMATCH (warm) {}", w.mismatch.clone().unwrap_or_default());
                }
            }
            if let Some(r) = &mut results[k] {
                r.times.sort_by(f64::total_cmp);
                let (min, median, max) = pooled_stats(&r.times).unwrap_or((r.min, r.median, r.max));
                r.median = median;
                row.measured_seconds = Some(median);
                row.min = Some(min);
                row.max = Some(max);
                row.verified = Some(r.verified);
                row.verification = Some(r.verification.clone());
                row.max_error = Some(r.max_error);
                if !r.verified {
                    failed = true;
                    row.status = format!("MISMATCH {}", r.mismatch.clone().unwrap_or_default());
                }
                row.roofline_fraction = row
                    .roofline_seconds
                    .filter(|_| r.median > 0.0)
                    .map(|s| s / r.median);
            }
            rows.push(row);
        }
        Ok((rows, failed))
    }
}

/// Rounds `bench` runs the variants in (see `run`).
const ROUNDS: usize = 4;

/// The rounds for `runs` timed runs per variant: [`ROUNDS`], or one below 16 runs.
pub fn rounds_for(runs: usize) -> usize {
    if runs >= 16 {
        ROUNDS
    } else {
        1
    }
}

/// (min, median, max) of sorted times, None when there are none.
fn pooled_stats(sorted: &[f64]) -> Option<(f64, f64, f64)> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        0.5 * (sorted[n / 2 - 1] + sorted[n / 2])
    };
    Some((sorted[0], median, sorted[n - 1]))
}

/// The build asked for, as [`Row::build`] names it.
fn build_name(exact: bool, relaxed_math: bool) -> &'static str {
    if relaxed_math {
        "relaxed-math"
    } else if exact {
        "exact"
    } else {
        "fma"
    }
}

/// The model-accuracy points of the measured kernel variants (the reference is not a
/// generated schedule and is left out).
/// The plotted points of variants timed: every one with a prediction and a time, the reference
/// excepted.
pub fn accuracy_points<'a>(
    variants: impl Iterator<Item = (&'a Planned, &'a Row)>,
) -> Vec<absinthe_learn::accuracy::Point> {
    variants
        .filter(|(p, r)| {
            !p.reference && r.predicted_seconds.is_finite() && r.measured_seconds.is_some()
        })
        .map(|(p, r)| absinthe_learn::accuracy::Point {
            label: p.name.clone(),
            predicted: r.predicted_seconds,
            measured: r.measured_seconds.unwrap_or(f64::NAN),
            optimum: p.name == "opt",
        })
        .collect()
}

/// Why timing with `flush` may not match the machine file's predictions: its parameters were
/// learned with the caches emptied the other way (`learned.flush`; files without it were
/// learned with a read).
fn flush_mismatch(machine: &Machine, flush: Flush) -> Option<String> {
    let learned = machine.learned.as_ref()?.flush.as_deref()?;
    let learned_evict = learned == "evict";
    (learned_evict != (flush == Flush::Evict)).then(|| {
        format!(
            "learned with `flush: {learned}`, timed now with {flush}: measured and predicted times \
             differ by the flush as well (pass `--flush {}` to time as it was learned)",
            if learned_evict { "evict" } else { "read" }
        )
    })
}
