//! `absinthe learn --target cuda`: the training programs timed on a GPU, so that a GPU machine
//! file gets learned parameters instead of scaled CPU ones.
//!
//! The same fifteen programs as on a CPU ([`training::programs`]), on [`DOMAIN`], each one fused
//! group streamed along z as the CUDA kernels run them (one thread block per x-y tile, walking
//! its z range through rolling shared-memory or register windows). The tile shapes are those
//! the GPU view of the model admits ([`shapes`]: every buffer a block keeps in shared memory,
//! halos included, within the machine's capacity, and enough blocks for the device). Beside
//! them, the CPU refit's real kernels ([`kernel_programs`]): each one's optimum, the model's
//! next best configurations and random ones. [`emit`] renders the cases into CUDA bundles (as
//! many per program as the device's constant memory requires); every case verifies against the
//! CPU reference, then times its launches with CUDA events. The timings are read back
//! ([`parse_output`]) into [`Measurement`]s and [`KernelRow`]s with the model's counts
//! ([`measurements`], [`kernel_rows`]) and fitted by [`crate::fit_measurements`] and
//! [`kernels::refit`], exactly as the CPU ones.
//!
//! Two steps, so that the machine with the GPU needs only nvcc: `emit` writes the sources, a
//! manifest and `run.sh`, the GPU machine runs `run.sh` (or `absinthe learn --target cuda`
//! does all of it where nvcc and a GPU are), and the fit reads the manifest and the output.

use std::collections::HashMap;

use absinthe_codegen::cuda::{plan, CudaBundleCase, GpuLimits};
use absinthe_codegen::lower_cuda;
use absinthe_codegen::render::{Flush, HarnessOptions, Renderer};
use absinthe_model::cost_model::boxes::BlockLimits;
use absinthe_model::cost_model::evaluate::{evaluate, Configuration};
use absinthe_model::cost_model::inline_search::apply as inline_apply;
use absinthe_model::formats::machine::{Machine, ModelMachine, Params};
use absinthe_model::language::constraints::check_group_indices;
use absinthe_model::language::program::Program;
use absinthe_model::Analysis;
use serde::{Deserialize, Serialize};

use crate::kernels::{self, KernelRow};
use crate::training::{self, TrainingProgram};
use crate::training_runs::Measurement;
use crate::LearnError;
use absinthe_measure::variants::{self, PlanSettings, Planned, Variant};

/// The domain the GPU training programs run on: 4 Mi cells, so that a run fills an H100 (one
/// array is 32 MiB) and takes tens of microseconds.
pub const DOMAIN: [usize; 3] = [256, 256, 64];

/// Tile shapes per program (an even spread of the admissible ones).
pub const SHAPES: usize = 16;

/// Timed launches per shape (the first quarter discarded; the median is the sample).
pub const RUNS: usize = 32;

/// Tile sizes tried along x (a multiple of the warp width, so that warps stay aligned), y and z.
const XS: [usize; 4] = [32, 64, 128, 256];
const YS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];
const ZS: [usize; 4] = [1, 4, 16, 64];

/// The most `__constant__` bytes of loop-bound tables one bundle may hold (the device allows
/// 64 KiB per translation unit): a program's cases are split over as many bundles as needed.
pub const CONSTANT_BYTES: usize = 56 << 10;

/// The `__constant__` bytes of a configuration's loop-bound tables: per stencil and dimension,
/// an `int` [lo, hi) pair per tile index of its group (an upper bound: stencils may share
/// tables).
fn constant_bytes(config: &Configuration) -> usize {
    config
        .groups
        .iter()
        .map(|&g| 2 * config.tiles[g].iter().sum::<usize>() * std::mem::size_of::<i32>())
        .sum()
}
/// The shortest and longest median a case may report: a nanosecond (a launch takes
/// microseconds) and 1000 s. Outside them a time is a corrupt file, and reaches the fit's LP as
/// a coefficient it cannot take.
pub const MIN_SECONDS: f64 = 1e-9;
pub const MAX_SECONDS: f64 = 1e3;

/// The manifest's format version.
pub const FORMAT: u32 = 1;

/// One timed case: a training program at one tile size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Case {
    /// Names the harness's result lines: `program@XxYxZ`.
    pub label: String,
    pub size: [usize; 3],
    pub tiles: [usize; 3],
}

/// One bundle: a program's cases in one `.cu` file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bundle {
    pub file: String,
    pub program: String,
    pub family: String,
    pub cases: Vec<Case>,
}

/// One timed variant of a real kernel (the refit's): the stencils it inlines and its
/// configuration of the program with them inlined.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelCase {
    /// Names the harness's result lines: `kernel/program/variant`.
    pub label: String,
    pub variant: String,
    pub inline: Vec<usize>,
    pub config: Configuration,
}

/// One bundle of a real kernel's variants.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelBundle {
    pub file: String,
    pub program: String,
    pub cases: Vec<KernelCase>,
}

/// What `emit` wrote: enough to rebuild every case's counts when the timings come back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub format: u32,
    /// The machine file's `name`.
    pub machine: String,
    pub domain: [usize; 3],
    /// Timed launches per case (the bundles' default argument).
    pub runs: usize,
    pub bundles: Vec<Bundle>,
    /// The real kernels' variants for the refit (none: no refit).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernels: Vec<KernelBundle>,
}

/// A manifest from its JSON text, of this format.
pub fn parse_manifest(text: &str) -> Result<Manifest, LearnError> {
    let manifest: Manifest = serde_json::from_str(text).map_err(|e| {
        LearnError::Run(format!(
            "not a manifest of `learn --target cuda --emit`: {e}"
        ))
    })?;
    if manifest.format != FORMAT {
        return Err(LearnError::Run(format!(
            "manifest format {} (this absinthe reads {FORMAT})",
            manifest.format
        )));
    }
    check_manifest(&manifest)?;
    Ok(manifest)
}

/// What a manifest `emit` wrote satisfies: the domain it writes, runs in range, each bundle of
/// a known family and every case label once (a timing is matched to its case by label).
fn check_manifest(manifest: &Manifest) -> Result<(), LearnError> {
    let fail = |what: String| Err(LearnError::Run(format!("manifest: {what}")));
    if manifest.domain != DOMAIN {
        return fail(format!(
            "domain {:?}: `emit` writes {DOMAIN:?}, the domain the training programs run on",
            manifest.domain
        ));
    }
    let max = absinthe_model::formats::limits::MAX_RUNS;
    if !(1..=max).contains(&manifest.runs) {
        return fail(format!(
            "runs: expected 1 to {max}, found {}",
            manifest.runs
        ));
    }
    if let Some(b) = manifest
        .bundles
        .iter()
        .find(|b| !["fast", "slow"].contains(&b.family.as_str()))
    {
        return fail(format!(
            "bundle {}: family `{}`: expected fast or slow",
            b.file, b.family
        ));
    }
    let training = manifest
        .bundles
        .iter()
        .flat_map(|b| b.cases.iter().map(|c| &c.label));
    let kernels = manifest
        .kernels
        .iter()
        .flat_map(|k| k.cases.iter().map(|c| &c.label));
    let mut labels = std::collections::HashSet::new();
    for label in training.chain(kernels) {
        if !labels.insert(label.as_str()) {
            return fail(format!("the case {label} is listed twice"));
        }
    }
    Ok(())
}

/// The GPU view of `machine` for the training programs (doubles). A file without `params` is
/// viewed with zero parameters: the tile shapes depend on the capacity, not on them.
pub fn view(machine: &Machine) -> Result<ModelMachine, LearnError> {
    if machine.gpu.is_none() {
        return Err(LearnError::Program(format!(
            "machine `{}` has no `gpu:` section; --target cuda learns a GPU machine file (see machines/h100.yaml)",
            machine.name
        )));
    }
    let mut m = machine.clone();
    if m.params.is_none() {
        m.params = Some(zero_params());
    }
    m.model_view(8).map_err(|d| {
        LearnError::MachineFile(
            d.iter()
                .map(|x| format!("{x:?}"))
                .collect::<Vec<_>>()
                .join("; "),
        )
    })
}

fn zero_params() -> Params {
    use absinthe_model::formats::machine::PeelBody;
    let zero = PeelBody {
        peel: 0.0,
        body: 0.0,
    };
    Params {
        fast: zero,
        slow_base: zero,
        slow_stream: zero,
        compute: Default::default(),
        crowded: Default::default(),
        operations: Default::default(),
        exposed: 0.0,
    }
}

/// The case label of a program at a tile size.
pub fn label(program: &str, size: [usize; 3]) -> String {
    format!("{program}@{}x{}x{}", size[0], size[1], size[2])
}

/// The tile sizes of `program` that the GPU model admits (one streamed group: shared memory
/// within capacity, enough blocks, even tiles), at most `count`, evenly spread over the grid
/// `XS x YS x ZS` in that order (distinct tile counts only).
pub fn shapes(program: &TrainingProgram, view: &ModelMachine, count: usize) -> Vec<[usize; 3]> {
    let domain = program.analysis.domain;
    let mut all: Vec<[usize; 3]> = Vec::new();
    let mut seen: Vec<[usize; 3]> = Vec::new();
    for &x in &XS {
        for &y in &YS {
            for &z in &ZS {
                let size = [x.min(domain[0]), y.min(domain[1]), z.min(domain[2])];
                let tiles = training::tile_counts(size, domain);
                if seen.contains(&tiles) {
                    continue;
                }
                let config = training::configuration(&program.analysis, tiles, true);
                if evaluate(&program.analysis, view, &config)
                    .infeasible
                    .is_none()
                {
                    seen.push(tiles);
                    all.push(size);
                }
            }
        }
    }
    if count == 0 || all.len() <= count {
        all
    } else {
        (0..count)
            .map(|k| all[k * (all.len() - 1) / (count - 1).max(1)])
            .collect()
    }
}

/// One case to render: its label, schedule and plan, and its loop-bound tables' bytes.
type Rendered = (
    String,
    absinthe_codegen::Schedule,
    absinthe_codegen::cuda::CudaPlan,
    usize,
);

/// Renders `cases` (each with what the manifest records of it) into bundles `{stem}_{k}.cu`,
/// consecutive cases in each while their loop-bound tables fit [`CONSTANT_BYTES`] (one case at
/// least): per bundle its file name, its text and its cases' records.
fn render_bundles<C: Clone>(
    renderer: &Renderer,
    stem: &str,
    cases: &[(Rendered, C)],
    runs: usize,
) -> Result<Vec<(String, String, Vec<C>)>, LearnError> {
    let mut chunks: Vec<&[(Rendered, C)]> = Vec::new();
    let (mut first, mut bytes) = (0, 0);
    for (k, (case, _)) in cases.iter().enumerate() {
        if k > first && bytes + case.3 > CONSTANT_BYTES {
            chunks.push(&cases[first..k]);
            (first, bytes) = (k, 0);
        }
        bytes += case.3;
    }
    if first < cases.len() {
        chunks.push(&cases[first..]);
    }
    let mut out = Vec::new();
    for (k, chunk) in chunks.into_iter().enumerate() {
        let harnesses: Vec<HarnessOptions> = chunk
            .iter()
            .map(|(c, _)| HarnessOptions {
                runs,
                flush: Flush::NONE,
                label: c.0.clone(),
                ..HarnessOptions::default()
            })
            .collect();
        let bundle: Vec<CudaBundleCase> = chunk
            .iter()
            .zip(&harnesses)
            .map(|((c, _), h)| CudaBundleCase {
                s: &c.1,
                c: &c.2,
                h,
            })
            .collect();
        out.push((
            format!("{stem}_{k}.cu"),
            renderer.cuda_device_bundle(&bundle)?,
            chunk.iter().map(|(_, record)| record.clone()).collect(),
        ));
    }
    Ok(out)
}

/// The real kernels of the refit ([`kernels::KERNELS`]) on `domain`, analysed.
pub fn kernel_programs(domain: [usize; 3]) -> Result<Vec<(Program, Analysis)>, LearnError> {
    kernels::kernel_programs()?
        .into_iter()
        .map(|(mut program, _)| {
            program.domain = domain;
            let analysis = Analysis::new(&program)
                .map_err(|d| LearnError::Kernels(format!("{}: {d:?}", program.name)))?;
            Ok((program, analysis))
        })
        .collect()
}

/// The training bundles for `machine` on `domain` (at most `count` shapes per program), and,
/// with `kernel_variants` above 0, the refit's real kernels: each one's optimum under the
/// machine file's parameters (solved with `solver`) and `kernel_variants` other feasible
/// configurations, the model's next best and random ones ([`kernel_variants_wanted`]). Returns
/// the manifest and the files to write (`name`, text).
pub fn emit(
    machine: &Machine,
    domain: [usize; 3],
    count: usize,
    runs: usize,
    kernel_variants: usize,
    solver: absinthe_solvers::method::Backend,
) -> Result<(Manifest, Vec<(String, String)>), LearnError> {
    let view = view(machine)?;
    let Some(gpu) = machine.gpu.as_ref() else {
        return Err(LearnError::MachineFile(format!(
            "machine `{}` has no `gpu:` section",
            machine.name
        )));
    };
    let limits = GpuLimits::from_gpu(gpu);
    let renderer = Renderer::embedded();
    let mut bundles = Vec::new();
    let mut files = Vec::new();
    for p in training::programs(domain)? {
        let cases = training_cases(&p, &view, &limits, count)?;
        for (file, text, cases) in render_bundles(&renderer, &p.program.name, &cases, runs)? {
            bundles.push(Bundle {
                file: file.clone(),
                program: p.program.name.clone(),
                family: p.family.name().to_string(),
                cases,
            });
            files.push((file, text));
        }
    }
    if bundles.is_empty() {
        return Err(LearnError::Program(format!(
            "no tile shape of any training program fits machine `{}` (shared memory {} bytes per block, cache_fraction {})",
            machine.name, gpu.shared_bytes_per_block, machine.cache_fraction
        )));
    }
    let kernel_bundles = if kernel_variants > 0 {
        let kernels = kernel_programs(domain)?;
        kernel_bundles(
            kernels,
            (&view, &limits),
            (kernel_variants, solver),
            runs,
            &mut files,
        )?
    } else {
        Vec::new()
    };
    let manifest = Manifest {
        format: FORMAT,
        machine: machine.name.clone(),
        domain,
        runs,
        bundles,
        kernels: kernel_bundles,
    };
    Ok((manifest, files))
}

/// One case's result read back from a bundle's output.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    pub label: String,
    /// The verification against the CPU reference passed.
    pub verified: bool,
    /// The median of the timed launches.
    pub seconds: f64,
    pub device: String,
}

/// The cases' results in `text` (bundle outputs, concatenated): each label's `ABSINTHE_RESULT`
/// line (its verification) and `ABSINTHE_CUDA_TIMING` line (its median). A label without a
/// timing line is left out; a malformed line is an error naming its line number.
pub fn parse_output(text: &str) -> Result<Vec<Timing>, LearnError> {
    let mut verified: HashMap<String, bool> = HashMap::new();
    // The line of each label's timing.
    let mut timed: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let json = |tag: &str| -> Result<Option<serde_json::Value>, LearnError> {
            match line.find(tag) {
                None => Ok(None),
                Some(at) => serde_json::from_str(line[at + tag.len()..].trim())
                    .map(Some)
                    .map_err(|e| LearnError::Run(format!("line {}: {tag}: {e}", n + 1))),
            }
        };
        let field = |v: &serde_json::Value, key: &str| -> Result<serde_json::Value, LearnError> {
            v.get(key)
                .cloned()
                .ok_or_else(|| LearnError::Run(format!("line {}: no `{key}`", n + 1)))
        };
        if let Some(v) = json("ABSINTHE_RESULT ")? {
            let label = field(&v, "label")?.as_str().unwrap_or_default().to_string();
            let ok = field(&v, "verified")?.as_bool().unwrap_or(false);
            verified.insert(label, ok);
        } else if let Some(v) = json("ABSINTHE_CUDA_TIMING ")? {
            let label = field(&v, "label")?.as_str().unwrap_or_default().to_string();
            if let Some(first) = timed.insert(label.clone(), n + 1) {
                return Err(LearnError::Run(format!(
                    "line {}: a second timing of {label} (the first is on line {first})",
                    n + 1
                )));
            }
            let seconds = field(&v, "median")?.as_f64().ok_or_else(|| {
                LearnError::Run(format!("line {}: `median` is not a number", n + 1))
            })?;
            out.push(Timing {
                verified: verified.get(&label).copied().unwrap_or(false),
                label,
                seconds,
                device: field(&v, "device")?
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            });
        }
    }
    Ok(out)
}

/// The measurements of `manifest`'s cases from their timings: one per case (its median), with
/// the model's counts of the program at the case's tile counts. Every case must have a timing
/// that verified and ran; a case missing, unverified or not positive is an error naming it.
pub fn measurements(
    manifest: &Manifest,
    timings: &[Timing],
    machine: &Machine,
) -> Result<Vec<Measurement>, LearnError> {
    let block_threads = view(machine)?.block_threads;
    let programs = training::programs(manifest.domain)?;
    let by_label: HashMap<&str, &Timing> = timings.iter().map(|t| (t.label.as_str(), t)).collect();
    let mut out = Vec::new();
    for b in &manifest.bundles {
        let p = programs
            .iter()
            .find(|p| p.program.name == b.program)
            .ok_or_else(|| {
                LearnError::Run(format!(
                    "manifest: bundle {} names program `{}`, not a training program on {:?}",
                    b.file, b.program, manifest.domain
                ))
            })?;
        for c in &b.cases {
            let tiles = training::tile_counts(c.size, manifest.domain);
            if tiles != c.tiles || c.label != label(&b.program, c.size) {
                return Err(LearnError::Run(format!(
                    "manifest: case {} does not match its size {:?}",
                    c.label, c.size
                )));
            }
            let t = checked(&by_label, &c.label)?;
            out.push(Measurement {
                program: b.program.clone(),
                family: p.family,
                tile_size: c.size,
                tiles,
                streamed: true,
                repeat: 0,
                seconds: t.seconds,
                counts: training::run_counts_on(&p.analysis, tiles, Some(block_threads)),
            });
        }
    }
    Ok(out)
}

/// The timing of `label`: present, verified and a positive time, else an error naming it.
fn checked<'a>(
    by_label: &HashMap<&str, &'a Timing>,
    label: &str,
) -> Result<&'a Timing, LearnError> {
    let t = by_label
        .get(label)
        .ok_or_else(|| LearnError::Run(format!("no timing for {label} in the output")))?;
    if !t.verified {
        return Err(LearnError::Run(format!(
            "{label}: the kernel's output differs from the CPU reference"
        )));
    }
    if !(MIN_SECONDS..=MAX_SECONDS).contains(&t.seconds) {
        return Err(LearnError::Run(format!(
            "{label}: median {} s is outside [{MIN_SECONDS:e} s, {MAX_SECONDS} s], the times a launch on {DOMAIN:?} takes",
            t.seconds
        )));
    }
    Ok(t)
}

/// The refit's rows: `manifest`'s real-kernel variants with their timings, costed by the GPU
/// view of `machine` with `params` (the synthetic fit's; they decide which groups are
/// crowded). Empty when the manifest has no kernels; a variant missing, unverified or not a
/// time is an error naming it.
pub fn kernel_rows(
    manifest: &Manifest,
    timings: &[Timing],
    machine: &Machine,
    params: &Params,
) -> Result<Vec<KernelRow>, LearnError> {
    if manifest.kernels.is_empty() {
        return Ok(Vec::new());
    }
    let mut m = machine.clone();
    m.params = Some(*params);
    let view = view(&m)?;
    let by_label: HashMap<&str, &Timing> = timings.iter().map(|t| (t.label.as_str(), t)).collect();
    let programs = kernel_programs(manifest.domain)?;
    let mut rows = Vec::new();
    for b in &manifest.kernels {
        let (program, _) = programs
            .iter()
            .find(|(p, _)| p.name == b.program)
            .ok_or_else(|| {
                LearnError::Run(format!(
                    "manifest: bundle {} names kernel `{}`, not one of the refit's",
                    b.file, b.program
                ))
            })?;
        for c in &b.cases {
            let t = checked(&by_label, &c.label)?;
            let (_, an, _) = inline_apply(program, view.params.operations, &c.inline)
                .map_err(|e| LearnError::Run(format!("manifest: {}: {e}", c.label)))?;
            let groups = c.config.groups.last().map_or(0, |g| g + 1);
            check_group_indices(&c.config.groups, an.stencils.len())
                .and_then(|()| match c.config.tiles.len() == groups {
                    true => Ok(()),
                    false => Err(format!(
                        "{} tile counts for {groups} groups",
                        c.config.tiles.len()
                    )),
                })
                .map_err(|e| LearnError::Run(format!("manifest: {}: {e}", c.label)))?;
            let cost = evaluate(&an, &view, &c.config);
            let mut row = KernelRow::of(&b.program, &c.variant, &cost);
            row.seconds = t.seconds;
            rows.push(row);
        }
    }
    Ok(rows)
}

/// Every case of `manifest` (training, then kernels) as verified and taking one second: what
/// [`measurements`] and [`kernel_rows`] need to give a manifest's counts without a GPU (to
/// make up an output from known parameters, as the tests do).
pub fn placeholder_timings(manifest: &Manifest) -> Vec<Timing> {
    let training = manifest
        .bundles
        .iter()
        .flat_map(|b| b.cases.iter().map(|c| &c.label));
    let kernels = manifest
        .kernels
        .iter()
        .flat_map(|b| b.cases.iter().map(|c| &c.label));
    training
        .chain(kernels)
        .map(|label| Timing {
            label: label.clone(),
            verified: true,
            seconds: 1.0,
            device: String::new(),
        })
        .collect()
}

/// The device the timings ran on (the first one named), for the machine file's `learned.host`.
pub fn device_name(timings: &[Timing]) -> Option<&str> {
    timings
        .iter()
        .map(|t| t.device.as_str())
        .find(|d| !d.is_empty())
}

/// The cases of one training program: a streamed configuration per tile shape the model
/// admits on this GPU, lowered and planned.
fn training_cases(
    p: &TrainingProgram,
    view: &ModelMachine,
    limits: &GpuLimits,
    count: usize,
) -> Result<Vec<(Rendered, Case)>, LearnError> {
    let domain = p.analysis.domain;
    let mut cases = Vec::new();
    for size in shapes(p, view, count) {
        let tiles = training::tile_counts(size, domain);
        let config = training::configuration(&p.analysis, tiles, true);
        let cost = evaluate(&p.analysis, view, &config);
        let schedule = lower_cuda(
            &p.program,
            &p.analysis,
            &config,
            &cost,
            BlockLimits::of(view),
        )?;
        let cuda = plan(&schedule, limits)?;
        let label = label(&p.program.name, size);
        let bytes = constant_bytes(&config);
        cases.push((
            (label.clone(), schedule, cuda, bytes),
            Case { label, size, tiles },
        ));
    }
    Ok(cases)
}

/// What the refit times of each kernel beside its optimum, `variants` configurations in all:
/// half of them the model's next best (`top:K`, the optimum and its ties left out by
/// [`refit_selection`]), so that the refit sees the configurations a user solves for, and the
/// rest drawn at random (`random:N`), so that it also sees the slow ones the model must rank
/// below them.
fn kernel_variants_wanted(variants: usize) -> Vec<Variant> {
    let top = variants / 2;
    let mut wanted = vec![Variant::Opt];
    if top > 0 {
        // Two spare: the first of the model's best is the optimum or a tie of it.
        wanted.push(Variant::Top(top + 2));
    }
    if variants > top {
        wanted.push(Variant::Random(variants - top));
    }
    wanted
}

/// The planned variants a kernel's refit times ([`kernel_variants_wanted`]): the feasible ones,
/// none twice, and of the model's next best at most `variants / 2` that are not ties of the
/// optimum (the same groups and streaming, an estimate within `variants::TIE`; the MILP's
/// optimum may be such a tie of the DP's best). A random draw that repeats another is not
/// replaced, so a kernel may time fewer than `variants`.
fn refit_selection(planned: Vec<Planned>, variants: usize) -> Vec<Planned> {
    let mut seen = std::collections::HashSet::new();
    let mut optimum: Option<(Vec<usize>, Configuration, f64)> = None;
    let mut next_best = 0;
    let mut out = Vec::new();
    for p in planned.into_iter().filter(|p| p.skipped.is_none()) {
        let top = matches!(p.variant, Some(Variant::Top(_)));
        let tie = top
            && optimum.as_ref().is_some_and(|(inline, c, t)| {
                *inline == p.inline
                    && c.groups == p.config.groups
                    && c.stream == p.config.stream
                    && (p.predicted - t).abs() <= variants::TIE * t.abs()
            });
        if tie
            || (top && next_best == variants / 2)
            || !seen.insert((p.inline.clone(), p.config.clone()))
        {
            continue;
        }
        if matches!(p.variant, Some(Variant::Opt)) {
            optimum = Some((p.inline.clone(), p.config.clone(), p.predicted));
        }
        next_best += top as usize;
        out.push(p);
    }
    out
}

/// The kernel bundles of the refit: each kernel program's optimum and `variants` other
/// configurations ([`kernel_variants_wanted`]), rendered into `files`.
fn kernel_bundles(
    kernels: Vec<(Program, Analysis)>,
    (view, limits): (&ModelMachine, &GpuLimits),
    (kernel_variants, solver): (usize, absinthe_solvers::method::Backend),
    runs: usize,
    files: &mut Vec<(String, String)>,
) -> Result<Vec<KernelBundle>, LearnError> {
    let renderer = Renderer::embedded();
    let mut kernel_bundles = Vec::new();
    let settings = PlanSettings::learn(solver);
    let wanted = kernel_variants_wanted(kernel_variants);
    for (program, mut analysis) in kernels {
        let name = program.name.clone();
        analysis.weigh_operations(view.params.operations);
        let planned = variants::plan(&wanted, &program, &analysis, view, &settings)
            .map_err(|e| LearnError::Kernels(format!("{name}: {e}")))?;
        let mut cases: Vec<(Rendered, KernelCase)> = Vec::new();
        for p in refit_selection(planned.planned, kernel_variants) {
            let (prog, an, _) = inline_apply(&program, view.params.operations, &p.inline)
                .map_err(|e| LearnError::Kernels(format!("{name}: {e}")))?;
            let cost = evaluate(&an, view, &p.config);
            let schedule = lower_cuda(&prog, &an, &p.config, &cost, BlockLimits::of(view))?
                .with_reference(&program, &analysis);
            let cuda = plan(&schedule, limits)?;
            let label = format!("kernel/{name}/{}", p.name);
            let bytes = constant_bytes(&p.config);
            cases.push((
                (label.clone(), schedule, cuda, bytes),
                KernelCase {
                    label,
                    variant: p.name,
                    inline: p.inline,
                    config: p.config,
                },
            ));
        }
        let stem = format!("kernel_{name}");
        for (file, text, cases) in render_bundles(&renderer, &stem, &cases, runs)? {
            kernel_bundles.push(KernelBundle {
                file: file.clone(),
                program: name.clone(),
                cases,
            });
            files.push((file, text));
        }
    }
    Ok(kernel_bundles)
}
