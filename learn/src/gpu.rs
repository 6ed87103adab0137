//! `absinthe learn --target cuda`: the training programs timed on a GPU, so that a GPU machine
//! file gets learned parameters instead of scaled CPU ones.
//!
//! The same fifteen programs as on a CPU ([`training::programs`]), on [`DOMAIN`], each one fused
//! group streamed along z as the CUDA kernels run them (one thread block per x-y tile, walking
//! its z range through rolling shared-memory or register windows). The tile shapes are those
//! the GPU view of the model admits ([`shapes`]: every buffer a block keeps in shared memory,
//! halos included, within the machine's capacity, and enough blocks for the device). Each
//! program's shapes become one CUDA bundle ([`emit`]); every case verifies against the CPU
//! reference, then times its launches with CUDA events. The timings are read back
//! ([`parse_output`]) into [`Measurement`]s with the model's counts ([`measurements`]) and fitted
//! by [`crate::fit_measurements`], exactly as the CPU ones.
//!
//! Two steps, so that the machine with the GPU needs only nvcc: `emit` writes the sources and a
//! manifest, a GPU builds and runs them (`scripts/gpu_learn.sh`, or `absinthe learn --target
//! cuda` itself when nvcc and a GPU are here), and the fit reads the manifest and the output.

use std::collections::HashMap;

use absinthe_codegen::cuda::{plan, CudaBundleCase, GpuLimits};
use absinthe_codegen::lower_cuda;
use absinthe_codegen::render::{Flush, HarnessOptions, Renderer};
use absinthe_model::cost::evaluate;
use absinthe_model::machine::{Machine, ModelMachine, Params};
use serde::{Deserialize, Serialize};

use crate::measure::Measurement;
use crate::training::{self, Family, TrainingProgram};
use crate::LearnError;

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

/// The `__constant__` bytes of a case's loop-bound tables: per stencil and dimension, an `int`
/// [lo, hi) pair per tile index (an upper bound: stencils may share tables).
fn constant_bytes(stencils: usize, tiles: [usize; 3]) -> usize {
    stencils * 2 * tiles.iter().sum::<usize>() * std::mem::size_of::<i32>()
}

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
    use absinthe_model::machine::PeelBody;
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

/// The training bundles for `machine` on `domain`: the manifest and the files to write
/// (`name`, text), one `.cu` per program with at least one admissible shape.
pub fn emit(
    machine: &Machine,
    domain: [usize; 3],
    count: usize,
    runs: usize,
) -> Result<(Manifest, Vec<(String, String)>), LearnError> {
    let view = view(machine)?;
    let gpu = machine.gpu.as_ref().expect("view checked the gpu section");
    let limits = GpuLimits::from_gpu(gpu);
    let renderer = Renderer::embedded();
    let mut bundles = Vec::new();
    let mut files = Vec::new();
    for p in training::programs(domain)? {
        let sizes = shapes(&p, &view, count);
        if sizes.is_empty() {
            continue;
        }
        // Consecutive cases, as many per bundle as its constant memory holds.
        let mut chunks: Vec<Vec<[usize; 3]>> = vec![Vec::new()];
        let mut bytes = 0;
        for &size in &sizes {
            let b = constant_bytes(
                p.analysis.stencils.len(),
                training::tile_counts(size, domain),
            );
            let last = chunks.last_mut().expect("one chunk at least");
            if !last.is_empty() && bytes + b > CONSTANT_BYTES {
                chunks.push(vec![size]);
                bytes = b;
            } else {
                last.push(size);
                bytes += b;
            }
        }
        for (k, chunk) in chunks.iter().enumerate() {
            let mut schedules = Vec::new();
            let mut cases = Vec::new();
            for &size in chunk {
                let tiles = training::tile_counts(size, domain);
                let config = training::configuration(&p.analysis, tiles, true);
                let cost = evaluate(&p.analysis, &view, &config);
                let schedule = lower_cuda(
                    &p.program,
                    &p.analysis,
                    &config,
                    &cost,
                    limits.block_threads(),
                )?;
                let cuda = plan(&schedule, &limits)?;
                schedules.push((schedule, cuda));
                cases.push(Case {
                    label: label(&p.program.name, size),
                    size,
                    tiles,
                });
            }
            let harnesses: Vec<HarnessOptions> = cases
                .iter()
                .map(|c| HarnessOptions {
                    runs,
                    flush: Flush::NONE,
                    label: c.label.clone(),
                    ..HarnessOptions::default()
                })
                .collect();
            let bundle: Vec<CudaBundleCase> = schedules
                .iter()
                .zip(&harnesses)
                .map(|((s, c), h)| CudaBundleCase { s, c, h })
                .collect();
            let file = format!("{}_{k}.cu", p.program.name);
            files.push((file.clone(), renderer.cuda_device_bundle(&bundle)?));
            bundles.push(Bundle {
                file,
                program: p.program.name.clone(),
                family: p.family.name().to_string(),
                cases,
            });
        }
    }
    if bundles.is_empty() {
        return Err(LearnError::Program(format!(
            "no tile shape of any training program fits machine `{}` (shared memory {} bytes per block, cache_fraction {})",
            machine.name, gpu.shared_bytes_per_block, machine.cache_fraction
        )));
    }
    let manifest = Manifest {
        format: FORMAT,
        machine: machine.name.clone(),
        domain,
        runs,
        bundles,
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
) -> Result<Vec<Measurement>, LearnError> {
    if manifest.format != FORMAT {
        return Err(LearnError::Run(format!(
            "manifest format {} (this absinthe reads {FORMAT})",
            manifest.format
        )));
    }
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
            let t = by_label.get(c.label.as_str()).ok_or_else(|| {
                LearnError::Run(format!("no timing for {} in the output", c.label))
            })?;
            if !t.verified {
                return Err(LearnError::Run(format!(
                    "{}: the kernel's output differs from the CPU reference",
                    c.label
                )));
            }
            if !(t.seconds > 0.0 && t.seconds.is_finite()) {
                return Err(LearnError::Run(format!(
                    "{}: median {} s is not a time",
                    c.label, t.seconds
                )));
            }
            out.push(Measurement {
                program: b.program.clone(),
                family: p.family,
                tile_size: c.size,
                tiles,
                streamed: true,
                repeat: 0,
                seconds: t.seconds,
                counts: training::run_counts(&p.analysis, tiles),
            });
        }
    }
    Ok(out)
}

/// The device the timings ran on (the first one named), for the machine file's `learned.host`.
pub fn device_name(timings: &[Timing]) -> Option<&str> {
    timings
        .iter()
        .map(|t| t.device.as_str())
        .find(|d| !d.is_empty())
}

/// Families present in the measurements, in order (the fit needs both).
pub fn families(measurements: &[Measurement]) -> Vec<Family> {
    [Family::Fast, Family::Slow]
        .into_iter()
        .filter(|f| measurements.iter().any(|m| m.family == *f))
        .collect()
}
