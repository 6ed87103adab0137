//! The kernel refit (`absinthe learn`, after the synthetic fit): real stencil programs timed
//! and fitted together with the training programs.
//!
//! The synthetic fits see each family on its own side of the model's `max(fast, slow)`: the fast
//! programs barely touch slow memory and the slow ones barely compute. Real programs sit in
//! between, and refitted to their own times the same form predicted the six accuracy programs
//! within 20% for 72% of their variants (left one program out), against 46% for the learned
//! parameters. Where the training programs mislead most is the slow peel, the cost of a row
//! start in slow memory: the kernels move the stream peel from 5.3e-10 to 1.6e-10 s and the base
//! peel from 1.4e-9 to 1.1e-9 s (docs/decisions/0011-kernel-refit-four-kernels.md).
//!
//! So after the synthetic fit `learn` times [`KERNELS`], shipped example programs that are
//! none of the programs the model's accuracy is reported on: each one's optimum under the
//! parameters just fitted and [`KERNEL_VARIANTS`] random feasible configurations (`bench`'s
//! `random:N`), built as generated kernels and timed in interleaved rounds with the caches
//! flushed, every run verified. It then refits all nine parameters to both data sets at once
//! ([`refit`]): each synthetic sample on its family's side, as before, and each kernel variant
//! through the whole model, `max` included. A kernel variant's prediction is linear in the
//! parameters once each stencil's peel and body know which side of their `max` wins, so the
//! refit alternates: fix the sides under the current parameters, solve the least absolute
//! *relative* deviations as one LP, repeat until the sides stop changing
//! ([`REFIT_ROUNDS`] at most; the best round by the true objective is kept). The kernel rows
//! weigh [`KERNEL_WEIGHT`] times the synthetic ones in all. The crowding limit and the slow
//! base body held at zero are the synthetic fit's.

use absinthe_codegen::lower;
use absinthe_codegen::render::Renderer;
use absinthe_model::cost_model::evaluate::{
    evaluate, overhead_count, overhead_seconds, stencil_seconds, Cost, Counts,
};
use absinthe_model::cost_model::inline_search::apply as inline_apply;
use absinthe_model::formats::learned::{FitQuality, KernelRefit};
use absinthe_model::formats::machine::OperationWeights;
use absinthe_model::formats::machine::{Compute, Crowded, Machine, Params, PeelBody};
use absinthe_model::language::program::Program;
use absinthe_model::Analysis;

use crate::calibrate::time_cases;
use crate::fit::{self, Sample};
use crate::training::Family;
use crate::training_runs::{self, Measurement};
use crate::{samples, LearnError, LearnOptions, Progress};
use absinthe_measure::accuracy::{summarize, Point};
use absinthe_measure::variants::{plan, PlanSettings, Variant};

/// The kernels timed: shipped example programs (`configs/`), none of them one of the six the
/// model's accuracy is reported on (hdiff, heat4, chain8 and the three COSMO-like kernels).
/// A single large-domain Jacobi sweep, the dissertation's two-stencil example, eight
/// independent streams, and a sixteen-stencil dynamical-core-like chain.
pub const KERNELS: [(&str, &str); 4] = [
    ("j3d7pt", include_str!("../../configs/j3d7pt.yaml")),
    ("example2", include_str!("../../configs/example2.yaml")),
    ("streams8", include_str!("../../configs/streams8.yaml")),
    ("chain16", include_str!("../../configs/chain16.yaml")),
];

/// Random configurations timed per kernel, beside its optimum.
pub const KERNEL_VARIANTS: usize = 8;

/// The kernel variants' share of the refit's objective against the synthetic samples' (each
/// set's rows weigh equally within it). At 1, 2 and 4 the six accuracy programs are predicted
/// within 20% for 57%, 60% and 60% of their variants, offline on the same measurements
/// (docs/decisions/0011-kernel-refit-four-kernels.md).
pub const KERNEL_WEIGHT: f64 = 2.0;

/// The kernels' timed runs: [`KERNEL_ROUNDS`] interleaved rounds of four (the first of each
/// discarded). With `--flush read` the flushes before each run take most of the stage's time.
pub const KERNEL_ROUNDS: usize = 2;

/// The most alternations of the refit (it settled in two to seven offline).
pub const REFIT_ROUNDS: usize = 8;

/// The refit's columns, in the order of [`Params::named`]: fast peel and body, slow base
/// peel and body, slow stream peel and body, compute peel and body, crowded stream body.
const COLUMNS: usize = 9;

/// One timed kernel variant and what the model counts for it.
#[derive(Clone, Debug)]
pub struct KernelRow {
    pub program: String,
    pub variant: String,
    /// Per stencil (inlined ones removed): its counts and whether its group is crowded.
    pub stencils: Vec<(Counts, bool)>,
    /// Per group: its tiles in all and its stencils (the loop-bound overhead's factors).
    pub groups: Vec<(u64, usize)>,
    /// The median measured seconds.
    pub seconds: f64,
}

impl KernelRow {
    /// The counts of a variant whose model cost is `cost` (`evaluate::evaluate` on the program as
    /// run, inlined stencils removed), its time not yet measured (NaN).
    pub fn of(program: &str, variant: &str, cost: &Cost) -> KernelRow {
        KernelRow {
            program: program.to_string(),
            variant: variant.to_string(),
            stencils: cost
                .groups
                .iter()
                .flat_map(|g| g.stencils.iter().map(move |s| (s.counts, g.crowded)))
                .collect(),
            groups: cost
                .groups
                .iter()
                .map(|g| {
                    (
                        g.stencils.first().map_or(0, |s| s.tiles_total),
                        g.stencils.len(),
                    )
                })
                .collect(),
            seconds: f64::NAN,
        }
    }
}

/// The kernels, parsed and analysed.
pub fn kernel_programs() -> Result<Vec<(Program, Analysis)>, LearnError> {
    programs_of(&KERNELS)
}

/// The programs of `list` (name, YAML text), parsed and analysed.
pub fn programs_of(list: &[(&str, &str)]) -> Result<Vec<(Program, Analysis)>, LearnError> {
    list.iter()
        .map(|(name, text)| {
            let program = Program::from_yaml(text)
                .map_err(|d| LearnError::Kernels(format!("{name}: {d:?}")))?;
            let analysis = Analysis::new(&program)
                .map_err(|d| LearnError::Kernels(format!("{name}: {d:?}")))?;
            Ok((program, analysis))
        })
        .collect()
}

/// The kernels' bundles for the variants `wanted`, planned under `machine`: per kernel its name,
/// its bundle's source (None when no variant is feasible), its variants' labels and their rows
/// (the model's counts, not yet timed).
pub struct KernelBundles {
    pub names: Vec<String>,
    pub sources: Vec<Option<String>>,
    pub cases: Vec<Vec<String>>,
    pub rows: Vec<Vec<KernelRow>>,
}

/// Plans and renders the variants `wanted` of `programs` (parsed and analysed) under `machine`,
/// one bundle per program.
pub fn kernel_bundles(
    programs: Vec<(Program, Analysis)>,
    machine: &Machine,
    wanted: &[Variant],
    options: &LearnOptions,
) -> Result<KernelBundles, LearnError> {
    let settings = PlanSettings::learn(options.solver);
    let renderer = Renderer::embedded();
    let mut out = KernelBundles {
        names: Vec::new(),
        sources: Vec::new(),
        cases: Vec::new(),
        rows: Vec::new(),
    };
    for (program, mut analysis) in programs {
        let name = program.name.clone();
        let view = machine
            .model_view(program.value_type.bytes())
            .map_err(|d| LearnError::MachineFile(format!("{d:?}")))?;
        analysis.weigh_operations(view.params.operations);
        let planned = plan(wanted, &program, &analysis, &view, &settings)
            .map_err(|e| LearnError::Kernels(format!("{name}: {e}")))?;
        let mut schedules = Vec::new();
        let mut labels = Vec::new();
        let mut own = Vec::new();
        for p in planned.planned.into_iter().filter(|p| p.skipped.is_none()) {
            let (prog, an, _) = inline_apply(&program, view.params.operations, &p.inline)
                .map_err(|e| LearnError::Kernels(format!("{name}: {e}")))?;
            let cost = evaluate(&an, &view, &p.config);
            schedules
                .push(lower(&prog, &an, &p.config, &cost)?.with_reference(&program, &analysis));
            labels.push(p.name.clone());
            own.push(KernelRow::of(&name, &p.name, &cost));
        }
        out.sources.push(if schedules.is_empty() {
            None
        } else {
            Some(training_runs::bundle_source(
                &renderer,
                &schedules,
                labels.clone(),
            )?)
        });
        out.names.push(name);
        out.cases.push(labels);
        out.rows.push(own);
    }
    Ok(out)
}

/// Times each kernel's optimum under `machine` (which holds the synthetic fit's parameters)
/// and `variants` random configurations: one bundle per kernel, [`KERNEL_ROUNDS`] interleaved
/// rounds, caches flushed, every run verified.
pub fn measure_kernels(
    machine: &Machine,
    variants: usize,
    options: &LearnOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<KernelRow>, LearnError> {
    let KernelBundles {
        names,
        sources,
        cases,
        rows,
    } = kernel_bundles(
        kernel_programs()?,
        machine,
        &[Variant::Opt, Variant::Random(variants)],
        options,
    )?;
    let medians = time_cases(
        &names,
        &sources,
        &cases,
        (KERNEL_ROUNDS, 4),
        options,
        progress,
    )?;
    Ok(rows
        .into_iter()
        .zip(medians)
        .flat_map(|(own, m)| {
            own.into_iter().zip(m).map(|(mut r, s)| {
                r.seconds = s;
                r
            })
        })
        .filter(|r| r.seconds.is_finite() && r.seconds > 0.0)
        .collect())
}

/// The parameters as the refit's columns ([`COLUMNS`], the order of [`Params::named`]).
pub fn columns(p: &Params) -> [f64; COLUMNS] {
    p.named().map(|(_, v)| v)
}

/// Parameters from the refit's columns, with the crowding limit `limit` (0: no charge), the
/// operation weights `operations` (measured, not refitted) and the exposed share `exposed`.
fn params_of(c: &[f64], limit: u64, operations: OperationWeights, exposed: f64) -> Params {
    Params {
        fast: PeelBody {
            peel: c[0],
            body: c[1],
        },
        slow_base: PeelBody {
            peel: c[2],
            body: c[3],
        },
        slow_stream: PeelBody {
            peel: c[4],
            body: c[5],
        },
        compute: Compute {
            peel: c[6],
            body: c[7],
        },
        crowded: Crowded {
            row_streams: if c[8] > 0.0 { limit } else { 0 },
            stream_body: c[8],
        },
        operations,
        exposed,
    }
}

/// A kernel variant's counts as the refit's columns, each stencil's peel and body on the side
/// of its `max` that wins under `p`, and `exposed` times those of the side that loses
/// (`max + θ min`): with the base body at zero, as the fit holds it, the model's prediction
/// ([`kernel_prediction`]) is then `row · columns(p)`. The loop-bound overhead goes to the
/// stream body's column.
pub fn kernel_columns(row: &KernelRow, p: &[f64; COLUMNS], exposed: f64) -> [f64; COLUMNS] {
    let mut out = [0.0; COLUMNS];
    for (c, crowded) in &row.stencils {
        let terms = [
            (
                c.fast.peel,
                c.compute.peel,
                c.slow_base.peel,
                c.slow_stream.peel,
            ),
            (
                c.fast.body,
                c.compute.body,
                c.slow_base.body,
                c.slow_stream.body,
            ),
        ];
        for (t, &(fast, compute, base, stream)) in terms.iter().enumerate() {
            let (fast, compute, base, stream) =
                (fast as f64, compute as f64, base as f64, stream as f64);
            let crowding = if t == 1 && *crowded { stream } else { 0.0 };
            let fast_side = fast * p[t] + compute * p[6 + t];
            let slow_side = base * p[2 + t] + stream * p[4 + t] + crowding * p[8];
            let (wf, ws) = if fast_side >= slow_side {
                (1.0, exposed)
            } else {
                (exposed, 1.0)
            };
            out[t] += wf * fast;
            out[6 + t] += wf * compute;
            // The base body is held at zero: its column stays empty.
            if t == 0 {
                out[2] += ws * base;
            }
            out[4 + t] += ws * stream;
            out[8] += ws * crowding;
        }
    }
    out[5] += row
        .groups
        .iter()
        .map(|&(tiles, len)| overhead_count(tiles, len) as f64)
        .sum::<f64>();
    out
}

/// The model's seconds for a kernel variant under `p`: `evaluate::evaluate`'s total for its
/// configuration, from the counts (`evaluate::stencil_seconds`, `evaluate::overhead_seconds`).
pub fn kernel_prediction(row: &KernelRow, p: &Params) -> f64 {
    let stencils: f64 = row
        .stencils
        .iter()
        .map(|(c, crowded)| {
            let t = stencil_seconds(p, c, *crowded);
            t.peel + t.body
        })
        .sum();
    let overhead: f64 = row
        .groups
        .iter()
        .map(|&(tiles, len)| overhead_seconds(p, tiles, len))
        .sum();
    stencils + overhead
}

/// The refit's column of the compute part's body cost (see [`synthetic_columns`]).
const COMPUTE_BODY_COLUMN: usize = 7;

/// A synthetic sample's counts as the refit's columns (its family's side only).
fn synthetic_columns(family: Family, counts: &[f64]) -> [f64; COLUMNS] {
    let mut out = [0.0; COLUMNS];
    match family {
        Family::Fast => {
            out[0] = counts[0];
            out[1] = counts[1];
            out[6] = counts[2];
            out[COMPUTE_BODY_COLUMN] = counts[crate::FAST_COMPUTE_BODY];
        }
        Family::Slow => {
            out[2] = counts[0];
            out[4] = counts[2];
            out[5] = counts[3];
            out[8] = counts[4];
        }
    }
    out
}

/// What the refit did.
#[derive(Clone, Debug)]
pub struct Refit {
    pub params: Params,
    /// The alternations run.
    pub rounds: usize,
    /// Share of kernel variants predicted within 20% of their time, with the synthetic fit's
    /// parameters and with the refit's.
    pub within_20_before: f64,
    pub within_20_after: f64,
    /// Spearman rank correlation of predicted and measured over the kernel variants, before
    /// and after.
    pub spearman_before: f64,
    pub spearman_after: f64,
}

impl Refit {
    /// What the machine file records of it; `synthetic` is the synthetic fit's R².
    pub fn record(&self, rows: &[KernelRow], synthetic: FitQuality) -> KernelRefit {
        KernelRefit {
            programs: programs(rows),
            variants: rows.len() as u64,
            weight: KERNEL_WEIGHT,
            rounds: self.rounds as u64,
            within_20_before: self.within_20_before,
            within_20_after: self.within_20_after,
            spearman_before: self.spearman_before,
            spearman_after: self.spearman_after,
            r2_synthetic_fit: synthetic,
        }
    }
}

/// Share of `rows` predicted within 20% under `p`, and the Spearman correlation
/// (`accuracy::summarize`, as `bench` reports them).
pub fn kernel_accuracy(rows: &[KernelRow], p: &Params) -> (f64, f64) {
    let points: Vec<Point> = rows
        .iter()
        .map(|r| Point {
            label: format!("{} {}", r.program, r.variant),
            predicted: kernel_prediction(r, p),
            measured: r.seconds,
            optimum: false,
        })
        .collect();
    let summary = summarize(&points);
    (summary.within_20_percent, summary.spearman)
}

/// The kernels `rows` time, in order, once each.
pub fn programs(rows: &[KernelRow]) -> Vec<String> {
    let mut names: Vec<String> = rows.iter().map(|r| r.program.clone()).collect();
    names.dedup();
    names
}

/// The refit's LAD rows: relative and weighted, `w |a·p / t - 1|` is the LAD of row `w a / t`
/// against `w`, for the synthetic samples (weight `w_syn`) and the kernel rows with their sides
/// fixed (`w_kernel`). With `held`, the compute body's column is held at it: its share leaves
/// the target and its column is zeroed.
fn lad_rows(
    synthetic: &[([f64; COLUMNS], f64)],
    w_syn: f64,
    fixed: &[[f64; COLUMNS]],
    rows: &[KernelRow],
    w_kernel: f64,
    held: Option<f64>,
) -> Vec<Sample> {
    synthetic
        .iter()
        .map(|(a, t)| (a, *t, w_syn))
        .chain(
            fixed
                .iter()
                .zip(rows)
                .map(|(a, r)| (a, r.seconds, w_kernel)),
        )
        .enumerate()
        .map(|(k, (a, t, w))| {
            let sample = Sample {
                configuration: k,
                counts: a.iter().map(|x| x * w / t).collect(),
                seconds: w,
            };
            match held {
                Some(held) => sample.holding(COMPUTE_BODY_COLUMN, held),
                None => sample,
            }
        })
        .collect()
}

/// Refits the parameters to the synthetic `measurements` and the kernel `rows` together (see
/// the module's documentation), starting from the synthetic fit's `start`. With
/// `held_compute_body`, the compute part's body cost stays at it (`crate::hold_compute_body`).
pub fn refit(
    measurements: &[Measurement],
    rows: &[KernelRow],
    start: &Params,
    solver: absinthe_solvers::method::Backend,
    held_compute_body: Option<f64>,
) -> Result<Refit, LearnError> {
    let solver = solver
        .solver()
        .map_err(|e| LearnError::Fit(e.to_string()))?;
    // A held value holds from the start: the starting point is also a candidate.
    let mut start = *start;
    if let Some(held) = held_compute_body {
        start.compute.body = held;
    }
    let start = &start;
    let limit = start.crowded.row_streams;
    let mut synthetic: Vec<([f64; COLUMNS], f64)> = Vec::new();
    for family in [Family::Fast, Family::Slow] {
        for s in samples(measurements, family, limit) {
            synthetic.push((synthetic_columns(family, &s.counts), s.seconds));
        }
    }
    if synthetic.is_empty() || rows.is_empty() {
        return Err(LearnError::Kernels(format!(
            "nothing to refit to: {} synthetic samples, {} kernel variants",
            synthetic.len(),
            rows.len()
        )));
    }
    let (w_syn, w_kernel) = (
        1.0 / synthetic.len() as f64,
        KERNEL_WEIGHT / rows.len().max(1) as f64,
    );
    // The true objective: weighted relative deviations with each stencil's `max`.
    let objective = |p: &Params| -> f64 {
        let c = columns(p);
        let syn: f64 = synthetic
            .iter()
            .map(|(a, t)| (a.iter().zip(&c).map(|(x, y)| x * y).sum::<f64>() / t - 1.0).abs())
            .sum();
        let ker: f64 = rows
            .iter()
            .map(|r| (kernel_prediction(r, p) / r.seconds - 1.0).abs())
            .sum();
        w_syn * syn + w_kernel * ker
    };
    let (within_20_before, spearman_before) = kernel_accuracy(rows, start);
    let mut current = *start;
    let mut best = (objective(start), *start);
    let mut sides: Option<Vec<[f64; COLUMNS]>> = None;
    let mut rounds = 0;
    while rounds < REFIT_ROUNDS {
        let c = columns(&current);
        let fixed: Vec<[f64; COLUMNS]> = rows
            .iter()
            .map(|r| kernel_columns(r, &c, start.exposed))
            .collect();
        if sides.as_ref() == Some(&fixed) {
            break;
        }
        rounds += 1;
        let lad = lad_rows(&synthetic, w_syn, &fixed, rows, w_kernel, held_compute_body);
        // The base body's column is zero in every row (held at zero), so the LP keeps it 0.
        let solved = fit::lad_fit(&lad, solver.as_ref())?;
        current = params_of(&solved, limit, start.operations, start.exposed);
        if let Some(held) = held_compute_body {
            current.compute.body = held;
        }
        let value = objective(&current);
        if value < best.0 {
            best = (value, current);
        }
        sides = Some(fixed);
    }
    let params = best.1;
    let (within_20_after, spearman_after) = kernel_accuracy(rows, &params);
    Ok(Refit {
        params,
        rounds,
        within_20_before,
        within_20_after,
        spearman_before,
        spearman_after,
    })
}
