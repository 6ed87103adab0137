//! `absinthe learn --target cuda`: the training programs timed on a GPU (`absinthe_learn::gpu`)
//! and fitted as on a CPU (`absinthe_learn::gpu_fit`). Three ways to run it: all here (nvcc and
//! a GPU on this machine), `--emit DIR` (write the bundles for a GPU machine and stop),
//! `--timings DIR` (fit to what the GPU machine wrote into DIR). The machine file is written
//! once, at the end, atomically.

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Instant;

use absinthe_learn::gpu::{self, Manifest};
use absinthe_learn::gpu_fit::{self, bundle_files, OUTPUT, RUN_SCRIPT};
use absinthe_learn::kernels;
use absinthe_model::formats::learned::FitQuality;
use absinthe_model::formats::machine::Machine;
use anyhow::{bail, Context};

use super::LearnArgs;
use crate::output::write_atomic;

pub fn run(args: &LearnArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let machine = Machine::load(&args.machine)?;
    let text = std::fs::read_to_string(&args.machine)
        .with_context(|| format!("cannot read {}", args.machine.display()))?;
    if machine.gpu.is_none() {
        bail!(
            "{}: no `gpu:` section; --target cuda learns a GPU machine file (machines/h100.yaml is one)",
            args.machine.display()
        );
    }
    // Measured here (all in one), or read back from a directory a GPU machine filled.
    let (dir, scratch) = match (&args.timings, &args.emit) {
        (Some(dir), _) => (dir.clone(), false),
        (None, Some(dir)) => {
            let (manifest, count) = write_bundles(args, &machine, dir)?;
            print_emitted(args, &machine, dir, &manifest, count);
            return Ok(ExitCode::SUCCESS);
        }
        (None, None) => {
            check_nvcc()?;
            let dir =
                std::env::temp_dir().join(format!("absinthe-learn-cuda-{}", std::process::id()));
            let (manifest, count) = write_bundles(args, &machine, &dir)?;
            if !args.quiet {
                let (cases, kernel_cases) = case_counts(&manifest);
                eprintln!(
                    "building and running {count} CUDA bundles ({cases} training cases, {kernel_cases} kernel variants) in {} ...",
                    dir.display()
                );
            }
            let status = Command::new("sh")
                .arg(dir.join(RUN_SCRIPT))
                .status()
                .context("cannot run sh")?;
            if !status.success() {
                eprintln!("warning: {RUN_SCRIPT} exited with {status}; fitting what it measured");
            }
            (dir, true)
        }
    };
    // The wall time is learn's own only when it measured here.
    let wall = args
        .timings
        .is_none()
        .then(|| started.elapsed().as_secs_f64());
    let result = fit_dir(args, &machine, &text, &dir, wall);
    if scratch {
        if result.is_ok() {
            let _ = std::fs::remove_dir_all(&dir);
        } else {
            eprintln!("the bundles and their output stay in {}", dir.display());
        }
    }
    result
}

/// Measuring here needs nvcc here (a missing GPU shows as every case failing).
fn check_nvcc() -> anyhow::Result<()> {
    let nvcc = std::env::var("NVCC").unwrap_or_else(|_| "nvcc".into());
    let found = Command::new(&nvcc)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        bail!(
            "--target cuda measures here only with nvcc and a GPU, and `{nvcc}` does not run (set NVCC); on a machine without them, write the bundles with --emit DIR, run `sh DIR/{RUN_SCRIPT}` where the GPU is, and fit here with --timings DIR"
        );
    }
    Ok(())
}

/// Emits the bundles for `machine` into `dir`; returns the manifest and how many bundles.
fn write_bundles(
    args: &LearnArgs,
    machine: &Machine,
    dir: &Path,
) -> anyhow::Result<(Manifest, usize)> {
    let kernel_variants = if args.no_kernel_refit {
        0
    } else {
        args.kernel_variants.unwrap_or(kernels::KERNEL_VARIANTS)
    };
    let shapes = args.shapes.unwrap_or(gpu::SHAPES);
    let runs = args.repeats.unwrap_or(gpu::RUNS).max(1);
    let (manifest, sources) = gpu::emit(
        machine,
        gpu::DOMAIN,
        shapes,
        runs,
        kernel_variants,
        args.solver,
    )?;
    let count = sources.len();
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (name, text) in bundle_files(&manifest, sources)? {
        write_atomic(&dir.join(name), text.as_bytes())?;
    }
    Ok((manifest, count))
}

/// The training cases and kernel variants of a manifest.
fn case_counts(manifest: &Manifest) -> (usize, usize) {
    let cases = manifest.bundles.iter().map(|b| b.cases.len()).sum();
    let kernel_cases = manifest.kernels.iter().map(|b| b.cases.len()).sum();
    (cases, kernel_cases)
}

/// What `--emit` wrote, and what to run next.
fn print_emitted(
    args: &LearnArgs,
    machine: &Machine,
    dir: &Path,
    manifest: &Manifest,
    count: usize,
) {
    let (cases, kernel_cases) = case_counts(manifest);
    let shared = machine.gpu.as_ref().map_or(0, |g| g.shared_bytes_per_block);
    let d = gpu::DOMAIN;
    println!(
        "wrote {count} bundles to {}: {cases} training cases (the training programs on {}x{}x{} at the tile shapes the model admits with {shared} bytes of shared memory per block and cache_fraction {}) and {kernel_cases} kernel variants for the refit",
        dir.display(),
        d[0],
        d[1],
        d[2],
        machine.cache_fraction,
    );
    println!(
        "on a machine with the GPU and nvcc: sh {0}/{RUN_SCRIPT}   (writes {0}/{OUTPUT})",
        dir.display()
    );
    println!(
        "then here: absinthe learn --machine {} --target cuda --timings {}",
        args.machine.display(),
        dir.display()
    );
}

/// Fits to DIR's manifest and output and writes the machine file.
fn fit_dir(
    args: &LearnArgs,
    machine: &Machine,
    text: &str,
    dir: &Path,
    wall: Option<f64>,
) -> anyhow::Result<ExitCode> {
    let fitted = gpu_fit::fit_dir(
        machine,
        text,
        dir,
        (args.solver, !args.no_kernel_refit),
        wall,
    )
    .with_context(|| args.machine.display().to_string())?;
    let result = &fitted.result;
    let out = super::write_learned(args, &fitted.text, result)?;
    println!(
        "{}: R² (one median per configuration): fast {:.3}, slow {:.3}; {} configurations",
        fitted.device,
        result.r2_fast,
        result.r2_slow,
        result.measurements.len(),
    );
    if let Some(r) = &fitted.refit {
        let refitted = FitQuality {
            fast: result.r2_fast,
            slow: result.r2_slow,
        };
        super::print_refit(r, &fitted.kernel_rows, fitted.synthetic_r2, refitted);
    }
    println!("wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
}
