//! `learn --target cuda` around the bundles of [`crate::gpu`]: the files a bundle directory
//! holds (the CUDA sources, the manifest and the script that builds and runs them on a GPU
//! machine), and the fit of what that script wrote, with the machine file rewritten. Nothing is
//! written or printed here.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use absinthe_model::formats::learned::{FitQuality, Learned};
use absinthe_model::formats::machine::Machine;

use crate::gpu::{self, Manifest};
use crate::kernels::{self, KernelRow, Refit};
use crate::machine_file::{self, utc_timestamp};
use crate::{fit_measurements, synthetic_r2, LearnError, LearnResult};

/// The manifest, script and output file names inside the bundle directory.
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

/// Every file of a bundle directory, (name, text): the bundles' sources, the manifest and the
/// script.
pub fn bundle_files(
    manifest: &Manifest,
    sources: Vec<(String, String)>,
) -> Result<Vec<(String, String)>, LearnError> {
    let json = serde_json::to_string_pretty(manifest)
        .map_err(|e| LearnError::Run(format!("the manifest: {e}")))?;
    let mut files = sources;
    files.push((MANIFEST.into(), json));
    files.push((RUN_SCRIPT.into(), run_script(manifest.runs)));
    Ok(files)
}

/// What fitting a timings directory gave.
pub struct GpuLearning {
    pub result: LearnResult,
    /// The GPU the timings name.
    pub device: String,
    /// The refit to the kernel variants the bundles timed, and their rows.
    pub refit: Option<Refit>,
    pub kernel_rows: Vec<KernelRow>,
    /// R² of the synthetic fit, before the refit.
    pub synthetic_r2: FitQuality,
    /// The machine file's new text.
    pub text: String,
}

/// Fits the manifest and output in `dir` for `machine` (whose file reads `text`), refitting to
/// the kernel variants unless `kernel_refit` is false; `wall_seconds` is recorded when the
/// timings were measured by this run.
pub fn fit_dir(
    machine: &Machine,
    text: &str,
    dir: &Path,
    (solver, kernel_refit): (absinthe_solvers::method::Backend, bool),
    wall_seconds: Option<f64>,
) -> Result<GpuLearning, LearnError> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path)
            .map_err(|e| LearnError::Run(format!("cannot read {}: {e}", path.display())))
    };
    let in_file = |name: &str| {
        let path = dir.join(name).display().to_string();
        move |e: LearnError| LearnError::Run(format!("{path}: {e}"))
    };
    let manifest = gpu::parse_manifest(&read(MANIFEST)?).map_err(in_file(MANIFEST))?;
    if manifest.machine != machine.name {
        return Err(LearnError::MachineFile(format!(
            "{} was emitted for machine `{}`, not `{}`: the tile shapes depend on the machine",
            dir.display(),
            manifest.machine,
            machine.name,
        )));
    }
    let timings = gpu::parse_output(&read(OUTPUT)?).map_err(in_file(OUTPUT))?;
    let measurements = gpu::measurements(&manifest, &timings).map_err(in_file(OUTPUT))?;
    let device = gpu::device_name(&timings)
        .unwrap_or("unknown GPU")
        .to_string();
    let mut result = fit_measurements(measurements, solver)?;
    let synthetic = FitQuality {
        fast: result.r2_fast,
        slow: result.r2_slow,
    };
    let kernel_rows = if kernel_refit {
        gpu::kernel_rows(&manifest, &timings, machine, &result.params).map_err(in_file(OUTPUT))?
    } else {
        Vec::new()
    };
    let refit = if kernel_rows.is_empty() {
        None
    } else {
        let refit = kernels::refit(&result.measurements, &kernel_rows, &result.params, solver)?;
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
        model: Default::default(),
        at: utc_timestamp(now),
        host: format!("{device} (learn --target cuda)"),
        samples: result.measurements.len() as u64,
        r2: FitQuality {
            fast: result.r2_fast,
            slow: result.r2_slow,
        },
        wall_seconds,
        flush: None,
        cache_calibration: None,
        group_arrays_calibration: None,
        crowding_calibration: Some(result.crowding.clone()),
        kernel_refit: refit.as_ref().map(|r| r.record(&kernel_rows, synthetic)),
    };
    let text = machine_file::rewrite(text, &result.params, &learned, &[])?;
    Ok(GpuLearning {
        result,
        device,
        refit,
        kernel_rows,
        synthetic_r2: synthetic,
        text,
    })
}
