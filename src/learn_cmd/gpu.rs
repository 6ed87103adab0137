//! `absinthe learn --target cuda`: the training programs timed on a GPU (`absinthe_learn::gpu`)
//! and fitted as on a CPU. Three ways to run it: all here (nvcc and a GPU on this machine),
//! `--emit DIR` (write the bundles for a GPU machine and stop), `--timings DIR` (fit to what
//! the GPU machine wrote into DIR). The machine file is written once, at the end, atomically.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use absinthe_learn::gpu::{self, Manifest};
use absinthe_learn::machine_file::{self, utc_timestamp};
use absinthe_learn::{fit_measurements, kernels, synthetic_r2};
use absinthe_model::machine::{FitQuality, Learned, Machine};
use anyhow::{bail, Context};

use super::LearnArgs;
use crate::output::write_atomic;

/// The manifest and output file names inside the bundle directory.
pub const MANIFEST: &str = "manifest.json";
pub const OUTPUT: &str = "output.txt";
pub const RUN_SCRIPT: &str = "run.sh";

/// The script that builds and runs the bundles on a GPU machine (nvcc and a GPU; no absinthe).
fn run_script(runs: usize) -> String {
    format!(
        r#"#!/bin/sh
# Builds and runs the CUDA training bundles written by `absinthe learn --target cuda --emit`:
# each .cu is built with nvcc ($NVCC, else nvcc on PATH; -arch=$ARCH, default native) unless
# its executable is already newer, then each runs {runs} timed launches per case, verifying
# every case against the CPU reference first. The output goes to output.txt, which
# `absinthe learn --target cuda --timings DIR` fits.
set -u
cd "$(dirname "$0")"
NVCC="${{NVCC:-nvcc}}"
ARCH="${{ARCH:-native}}"
export NVCC ARCH
ls *.cu | xargs -P "${{JOBS:-$(nproc)}}" -I{{}} sh -c '
  cu="{{}}"; exe="${{cu%.cu}}"
  [ -x "$exe" ] && [ "$exe" -nt "$cu" ] && exit 0
  "$NVCC" -O3 -arch="$ARCH" -DABSINTHE_FMA_BUILD -Xcompiler -fopenmp "$cu" -lgomp -o "$exe" > "$exe.nvcc.log" 2>&1 \
    || {{ echo "run.sh: nvcc failed on $cu (see $exe.nvcc.log)" >&2; exit 1; }}'
status=$?
: > output.txt.part
for cu in *.cu; do
  exe="${{cu%.cu}}"
  [ -x "$exe" ] || continue
  "./$exe" {runs} >> output.txt.part 2>&1 || status=1
done
mv output.txt.part output.txt
exit $status
"#
    )
}

fn write_bundles(
    dir: &Path,
    manifest: &Manifest,
    files: &[(String, String)],
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (name, text) in files {
        write_atomic(&dir.join(name), text.as_bytes())?;
    }
    write_atomic(
        &dir.join(MANIFEST),
        serde_json::to_string_pretty(manifest)?.as_bytes(),
    )?;
    let script = dir.join(RUN_SCRIPT);
    write_atomic(&script, run_script(manifest.runs).as_bytes())?;
    Ok(())
}

fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

pub fn run(args: &LearnArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let machine = Machine::load(&args.machine)?;
    let text = read(&args.machine)?;
    let Some(g) = &machine.gpu else {
        bail!(
            "{}: no `gpu:` section; --target cuda learns a GPU machine file (machines/h100.yaml is one)",
            args.machine.display()
        );
    };
    let shapes = args.shapes.unwrap_or(gpu::SHAPES);
    let runs = args.repeats.unwrap_or(gpu::RUNS).max(1);
    // Measured here (all in one), or read back from a directory a GPU machine filled.
    let mut scratch: Option<PathBuf> = None;
    let dir = match (&args.timings, &args.emit) {
        (Some(dir), _) => dir.clone(),
        (None, emit) => {
            if emit.is_none() {
                // Measured here: nvcc must be here (a missing GPU shows as every case failing).
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
            }
            let kernel_variants = if args.no_kernel_refit {
                0
            } else {
                args.kernel_variants.unwrap_or(kernels::KERNEL_VARIANTS)
            };
            let (manifest, files) = gpu::emit(
                &machine,
                gpu::DOMAIN,
                shapes,
                runs,
                kernel_variants,
                args.solver,
            )?;
            let cases: usize = manifest.bundles.iter().map(|b| b.cases.len()).sum();
            let kernel_cases: usize = manifest.kernels.iter().map(|b| b.cases.len()).sum();
            let dir = match emit {
                Some(dir) => dir.clone(),
                None => {
                    let d = std::env::temp_dir()
                        .join(format!("absinthe-learn-cuda-{}", std::process::id()));
                    scratch = Some(d.clone());
                    d
                }
            };
            write_bundles(&dir, &manifest, &files)?;
            if emit.is_some() {
                println!(
                    "wrote {} bundles to {}: {cases} training cases (the training programs on {}x{}x{} at the tile shapes the model admits with {} bytes of shared memory per block and cache_fraction {}) and {kernel_cases} kernel variants for the refit",
                    files.len(),
                    dir.display(),
                    gpu::DOMAIN[0],
                    gpu::DOMAIN[1],
                    gpu::DOMAIN[2],
                    g.shared_bytes_per_block,
                    machine.cache_fraction,
                );
                println!("on a machine with the GPU and nvcc: sh {0}/{RUN_SCRIPT}   (writes {0}/{OUTPUT})", dir.display());
                println!(
                    "then here: absinthe learn --machine {} --target cuda --timings {}",
                    args.machine.display(),
                    dir.display()
                );
                return Ok(ExitCode::SUCCESS);
            }
            if !args.quiet {
                eprintln!(
                    "building and running {} CUDA bundles ({cases} training cases, {kernel_cases} kernel variants) in {} ...",
                    files.len(),
                    dir.display()
                );
            }
            let status = Command::new("sh")
                .arg(dir.join(RUN_SCRIPT))
                .status()
                .context("cannot run sh")?;
            if !status.success() {
                eprintln!(
                    "warning: {} exited with {status}; fitting what it measured",
                    RUN_SCRIPT
                );
            }
            dir
        }
    };
    // The wall time is learn's own only when it measured here.
    let started = args.timings.is_none().then_some(started);
    let result = fit_dir(args, &machine, &text, &dir, started);
    if let Some(d) = scratch {
        if result.is_ok() {
            let _ = std::fs::remove_dir_all(d);
        } else {
            eprintln!("the bundles and their output stay in {}", d.display());
        }
    }
    result
}

/// Fits to DIR's manifest and output and writes the machine file.
fn fit_dir(
    args: &LearnArgs,
    machine: &Machine,
    text: &str,
    dir: &Path,
    started: Option<Instant>,
) -> anyhow::Result<ExitCode> {
    let manifest_path = dir.join(MANIFEST);
    let manifest = gpu::parse_manifest(&read(&manifest_path)?)
        .with_context(|| manifest_path.display().to_string())?;
    if manifest.machine != machine.name {
        bail!(
            "{} was emitted for machine `{}`, not `{}` ({}): the tile shapes depend on the machine",
            dir.display(),
            manifest.machine,
            machine.name,
            args.machine.display()
        );
    }
    let output_path = dir.join(OUTPUT);
    let output = read(&output_path)?;
    let timings = gpu::parse_output(&output).with_context(|| output_path.display().to_string())?;
    let measurements = gpu::measurements(&manifest, &timings)
        .with_context(|| format!("{}", output_path.display()))?;
    let device = gpu::device_name(&timings)
        .unwrap_or("unknown GPU")
        .to_string();
    let mut result = fit_measurements(measurements, args.solver)?;
    let synthetic = FitQuality {
        fast: result.r2_fast,
        slow: result.r2_slow,
    };
    // The refit to the real kernels' variants, when the bundles timed them and it is wanted.
    let kernel_rows = if args.no_kernel_refit {
        Vec::new()
    } else {
        gpu::kernel_rows(&manifest, &timings, machine, &result.params)
            .with_context(|| output_path.display().to_string())?
    };
    let refit = if kernel_rows.is_empty() {
        None
    } else {
        let refit = kernels::refit(
            &result.measurements,
            &kernel_rows,
            &result.params,
            args.solver,
        )?;
        result.params = refit.params;
        (result.r2_fast, result.r2_slow) = synthetic_r2(&result.measurements, &refit.params);
        Some(refit)
    };
    // The operation weights are measured on a CPU; a GPU file keeps its own.
    result.params.operations = machine.params.map(|p| p.operations).unwrap_or_default();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let learned = Learned {
        at: utc_timestamp(now),
        host: format!("{device} (learn --target cuda)"),
        samples: result.measurements.len() as u64,
        r2: FitQuality {
            fast: result.r2_fast,
            slow: result.r2_slow,
        },
        wall_seconds: started.map(|s| s.elapsed().as_secs_f64()),
        flush: None,
        cache_calibration: None,
        group_arrays_calibration: None,
        crowding_calibration: Some(result.crowding.clone()),
        kernel_refit: refit.as_ref().map(|r| r.record(&kernel_rows, synthetic)),
    };
    let new_text = machine_file::rewrite(text, &result.params, &learned, &[])?;
    let out = super::write_learned(args, &new_text, &result)?;
    println!(
        "{device}: R² (one median per configuration): fast {:.3}, slow {:.3}; {} configurations",
        result.r2_fast,
        result.r2_slow,
        result.measurements.len(),
    );
    if let Some(r) = &refit {
        let refitted = FitQuality {
            fast: result.r2_fast,
            slow: result.r2_slow,
        };
        super::print_refit(r, &kernel_rows, synthetic, refitted);
    }
    println!("wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
}
