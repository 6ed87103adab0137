//! Building the training programs once each (runtime tile counts) and timing them over the
//! tile shapes; every shape is verified bit for bit against the naive reference by the first
//! run of its executable.

use std::path::PathBuf;
use std::process::Command;

use absinthe_codegen::compile::Toolchain;
use absinthe_codegen::render::{BundleCase, Flush, HarnessOptions, Renderer};
use absinthe_codegen::{lower, lower_plain, runtime_tiles, Schedule};
use absinthe_measure::runner::{run_rounds, Rounds, Runner, Sources};
use absinthe_model::cost_model::evaluate::evaluate;

use crate::training::{self, Family, RunCounts, TrainingProgram};
use crate::LearnError;

/// One timed run.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    pub program: String,
    pub family: Family,
    /// The tile size asked for and the tile counts it became.
    pub tile_size: [usize; 3],
    pub tiles: [usize; 3],
    /// Timed as the generated kernel streaming along the program's stream dimension.
    pub streamed: bool,
    pub repeat: usize,
    pub seconds: f64,
    pub counts: RunCounts,
}

/// The header of [`to_csv`].
pub const CSV_HEADER: &str = "program,family,size_x,size_y,size_z,tiles_x,tiles_y,tiles_z,streamed,repeat,seconds,fast_peel,fast_body,slow_base_peel,slow_base_body,slow_stream_peel,slow_stream_body,compute_peel,compute_body,overhead";

/// The raw measurements as CSV (`--keep-data`).
pub fn to_csv(measurements: &[Measurement]) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for m in measurements {
        let c = &m.counts.counts;
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{:.9e},{},{},{},{},{},{},{},{},{}\n",
            m.program,
            m.family.name(),
            m.tile_size[0],
            m.tile_size[1],
            m.tile_size[2],
            m.tiles[0],
            m.tiles[1],
            m.tiles[2],
            u8::from(m.streamed),
            m.repeat,
            m.seconds,
            c.fast.peel,
            c.fast.body,
            c.slow_base.peel,
            c.slow_base.body,
            c.slow_stream.peel,
            c.slow_stream.body,
            c.compute.peel,
            c.compute.body,
            m.counts.overhead
        ));
    }
    out
}

/// Compiles the runtime-tiled kernel of every program, `jobs` compilers at a time; calls
/// `built` after each.
pub fn build_all(
    programs: &[TrainingProgram],
    toolchain: &Toolchain,
    threads: usize,
    jobs: usize,
    built: &(dyn Fn() + Sync),
) -> Result<Vec<PathBuf>, LearnError> {
    let machine = training::lowering_machine(threads);
    let sources: Vec<Vec<(String, String)>> = programs
        .iter()
        .map(|p| {
            let config = training::configuration(&p.analysis, [1, 1, 1], false);
            let cost = evaluate(&p.analysis, &machine, &config);
            let schedule = lower_plain(&p.program, &p.analysis, &config, &cost)?;
            Ok(runtime_tiles::render(&schedule)?)
        })
        .collect::<Result<_, LearnError>>()?;
    build(
        toolchain,
        jobs,
        sources.into_iter().map(Some).collect(),
        built,
    )
}

/// Builds every source in parallel, `jobs` at a time, through the runner; `built` hears of
/// each.
fn build(
    toolchain: &Toolchain,
    jobs: usize,
    sources: Vec<Sources>,
    built: &(dyn Fn() + Sync),
) -> Result<Vec<PathBuf>, LearnError> {
    let runner = Runner {
        toolchain,
        env: Vec::new(),
        jobs,
    };
    runner
        .build(&sources, &|_| built())
        .into_iter()
        .flatten()
        .map(|exe| exe.map_err(LearnError::from))
        .collect()
}

/// Runs `exe` over `sizes` (tile sizes of `program`), `repeats` timed runs each, flushing the
/// caches before each run as `flush` says; with `verify`, each shape is first verified against
/// the reference (without it, an earlier call must have verified the same shapes of `exe`).
pub fn run_shapes(
    exe: &std::path::Path,
    program: &TrainingProgram,
    sizes: &[[usize; 3]],
    (repeats, verify): (usize, bool),
    flush: Flush,
    threads: usize,
) -> Result<Vec<Measurement>, LearnError> {
    let domain = program.analysis.domain;
    let tiles: Vec<[usize; 3]> = sizes
        .iter()
        .map(|&s| training::tile_counts(s, domain))
        .collect();
    let out = absinthe_codegen::children::output(
        Command::new(exe)
            .args(runtime_tiles::arguments(repeats, flush, verify, &tiles))
            .env("OMP_NUM_THREADS", threads.to_string()),
    )
    .map_err(|e| LearnError::Run(format!("{}: {e}", exe.display())))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let results = runtime_tiles::parse_tile_results(&stdout)?;
    if results.len() != tiles.len() {
        return Err(LearnError::Run(format!(
            "{} ({}): {} result lines for {} shapes; {}\n{}",
            program.program.name,
            exe.display(),
            results.len(),
            tiles.len(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let mut measurements = Vec::new();
    for (result, &size) in results.iter().zip(sizes) {
        if result.verified.is_some() != verify {
            return Err(LearnError::Run(format!(
                "{} ({}): the result of tile counts {:?} is {}verified, not as asked",
                program.program.name,
                exe.display(),
                result.tiles,
                if verify { "not " } else { "" }
            )));
        }
        measurements.extend(shape_measurements(
            program,
            size,
            false,
            result.verified != Some(false),
            &result.times,
        )?);
    }
    Ok(measurements)
}

/// The measurements of one tile size's timed runs; an error when the kernel failed
/// verification.
fn shape_measurements(
    program: &TrainingProgram,
    size: [usize; 3],
    streamed: bool,
    verified: bool,
    times: &[f64],
) -> Result<Vec<Measurement>, LearnError> {
    let n = training::tile_counts(size, program.analysis.domain);
    if !verified {
        return Err(LearnError::Run(format!(
            "{} at tile counts {n:?}{}: the kernel's output differs from the reference",
            program.program.name,
            if streamed { ", streamed" } else { "" }
        )));
    }
    let counts = training::run_counts(&program.analysis, n);
    Ok(times
        .iter()
        .enumerate()
        .map(|(repeat, &seconds)| Measurement {
            program: program.program.name.clone(),
            family: program.family,
            tile_size: size,
            tiles: n,
            streamed,
            repeat,
            seconds,
            counts,
        })
        .collect())
}

/// Builds one bundle per program holding the *generated* kernel (`codegen::lower`, the code
/// `bench` and `codegen` ship: compile-time tiles, shared row loops, padded arenas) of every
/// tile size in `sizes[p]`, with its harness, `jobs` compilers at a time; calls `built` after
/// each. Each harness verifies its shape bit for bit before it times it. With `streamed`, every
/// kernel streams along the program's stream dimension.
pub fn build_generated(
    programs: &[TrainingProgram],
    sizes: &[Vec<[usize; 3]>],
    streamed: bool,
    toolchain: &Toolchain,
    threads: usize,
    jobs: usize,
    built: &(dyn Fn() + Sync),
) -> Result<Vec<PathBuf>, LearnError> {
    let machine = training::lowering_machine(threads);
    let renderer = Renderer::embedded();
    let sources: Vec<String> = programs
        .iter()
        .zip(sizes)
        .map(|(p, sizes)| {
            let schedules: Vec<_> = sizes
                .iter()
                .map(|&s| {
                    let tiles = training::tile_counts(s, p.analysis.domain);
                    let config = training::configuration(&p.analysis, tiles, streamed);
                    let cost = evaluate(&p.analysis, &machine, &config);
                    lower(&p.program, &p.analysis, &config, &cost)
                })
                .collect::<Result<_, _>>()?;
            let labels = sizes.iter().map(|s| shape_label(*s, streamed)).collect();
            bundle_source(&renderer, &schedules, labels)
        })
        .collect::<Result<_, LearnError>>()?;
    let sources = sources
        .into_iter()
        .map(|text| Some(vec![("bundle.cpp".to_string(), text)]))
        .collect();
    build(toolchain, jobs, sources, built)
}

/// One translation unit holding every schedule's kernel and harness, each harness's result
/// line named by its label (same order).
pub fn bundle_source(
    renderer: &Renderer,
    schedules: &[Schedule],
    labels: Vec<String>,
) -> Result<String, LearnError> {
    let harnesses: Vec<HarnessOptions> = labels
        .into_iter()
        .map(|label| HarnessOptions {
            label,
            ..HarnessOptions::default()
        })
        .collect();
    let cases: Vec<BundleCase> = schedules
        .iter()
        .zip(&harnesses)
        .map(|(s, h)| BundleCase { s, h })
        .collect();
    Ok(renderer.bundle(&cases)?)
}

/// The harness label of a tile size (`s` appended when streamed).
fn shape_label(size: [usize; 3], streamed: bool) -> String {
    let s = if streamed { "s" } else { "" };
    format!("{}x{}x{}{s}", size[0], size[1], size[2])
}

/// Runs the bundle `exe` of `program` (from [`build_generated`] over `sizes`, `streamed` as
/// built): every shape `runs` times (the harness discards the first quarter), flushing the
/// caches before each run as `flush` says.
pub fn run_generated(
    exe: &std::path::Path,
    program: &TrainingProgram,
    sizes: &[[usize; 3]],
    streamed: bool,
    runs: usize,
    flush: Flush,
    threads: usize,
) -> Result<Vec<Measurement>, LearnError> {
    let env = [("OMP_NUM_THREADS".to_string(), threads.to_string())];
    let once = Rounds {
        rounds: 1,
        per_round: runs,
    };
    let exes = [Some(exe.to_path_buf())];
    let pooled = run_rounds(&exes, &env, once, &[flush], &|_| "kernel", &mut |_| {})?;
    let results = pooled
        .into_iter()
        .flatten()
        .flatten()
        .next()
        .unwrap_or_default();
    if results.len() != sizes.len() {
        return Err(LearnError::Run(format!(
            "{} ({}): {} result lines for {} shapes",
            program.program.name,
            exe.display(),
            results.len(),
            sizes.len()
        )));
    }
    let mut measurements = Vec::new();
    for (result, &size) in results.iter().zip(sizes) {
        if result.label != shape_label(size, streamed) {
            return Err(LearnError::Run(format!(
                "{}: result `{}` where shape {} was expected",
                program.program.name,
                result.label,
                shape_label(size, streamed)
            )));
        }
        measurements.extend(shape_measurements(
            program,
            size,
            streamed,
            result.verified,
            &result.times,
        )?);
    }
    Ok(measurements)
}
