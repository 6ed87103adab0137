//! `learn --target cuda` around the bundles of [`crate::gpu`]: the files a bundle directory
//! holds (the CUDA sources, the manifest and the script that builds and runs them on a GPU
//! machine), running them here, and the fit of what that script wrote, with the machine file
//! rewritten. Nothing is printed here: steps and warnings go to a hook, and files are written
//! only through the caller's atomic write.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use absinthe_model::formats::learned::{FitQuality, Learned};
use absinthe_model::formats::machine::Machine;

use crate::gpu::{self, Manifest};
use crate::kernels::{self, KernelRow, Refit};
use crate::machine_file::{self, utc_timestamp};
use crate::pipeline::{write_files, Event, Outputs, Request, Step};
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

/// What `learn --target cuda` did.
pub enum GpuOutcome {
    /// The bundles, written into `dir` for the machine file at `machine` (with
    /// `shared_bytes` of shared memory per block and `cache_fraction`), for a GPU machine.
    Emitted {
        bundles: Bundles,
        dir: PathBuf,
        machine: PathBuf,
        shared_bytes: u64,
        cache_fraction: f64,
    },
    /// The fit, with the machine file written to `out`.
    Fitted {
        learning: Box<GpuLearning>,
        out: PathBuf,
    },
}

/// `learn --target cuda` for `machine`, the file at `path` whose text is `text`: with `emit`
/// (and no `timings`), writes the bundles there and stops; else fits the timings in
/// `timings`, or in a scratch directory where the bundles are built and run here, and writes
/// what it learned to `outputs`. Every file goes through `write` (the caller's atomic write);
/// the scratch directory is removed after a fit written, and kept (an event) after a failure.
pub fn learn<E: From<LearnError>>(
    (path, machine, text): (&Path, &Machine, &str),
    request: &Request,
    (timings, emit): (Option<&Path>, Option<&Path>),
    outputs: &Outputs,
    events: &dyn Fn(Event),
    write: &dyn Fn(&Path, &str) -> Result<(), E>,
) -> Result<GpuOutcome, E> {
    let started = Instant::now();
    check_machine(machine, path)?;
    if let Some(dir) = timings {
        let inputs = [dir.join(MANIFEST), dir.join(OUTPUT)];
        let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
        outputs
            .apart_from(&inputs)
            .map_err(|e| LearnError::Invalid(e.to_string()))?;
    }
    // Measured here (all in one), or read back from a directory a GPU machine filled.
    let dir = match timings {
        Some(dir) => dir.to_path_buf(),
        None => {
            let dir = emit.map_or_else(scratch_dir, |d| Ok(d.to_path_buf()))?;
            let bundles = bundles(machine, request)?;
            write_files(&dir, &bundles.files, write)?;
            if emit.is_some() {
                return Ok(GpuOutcome::Emitted {
                    bundles,
                    dir,
                    machine: path.to_path_buf(),
                    shared_bytes: machine.gpu.as_ref().map_or(0, |g| g.shared_bytes_per_block),
                    cache_fraction: machine.cache_fraction,
                });
            }
            run_bundles(&dir, &bundles, events)?;
            dir
        }
    };
    // The wall time is learn's own only when it measured here.
    let here = timings.is_none();
    let wall = here.then(|| started.elapsed().as_secs_f64());
    let fitted = fit_dir(machine, text, &dir, request, wall)
        .map_err(|e| E::from(LearnError::In(path.display().to_string(), Box::new(e))))
        .and_then(|learning| {
            let out = outputs.write(&learning.text, &learning.result.measurements, write)?;
            let out = out.to_path_buf();
            let learning = Box::new(learning);
            Ok(GpuOutcome::Fitted { learning, out })
        });
    if here && fitted.is_ok() {
        let _ = std::fs::remove_dir_all(&dir);
    } else if here {
        events(Event::Kept(dir));
    }
    fitted
}

/// Checks that `machine` (the file at `path`) is a GPU machine file.
fn check_machine(machine: &Machine, path: &Path) -> Result<(), LearnError> {
    if machine.gpu.is_none() {
        return Err(LearnError::Invalid(format!(
            "{}: no `gpu:` section; --target cuda learns a GPU machine file (machines/h100.yaml is one)",
            path.display()
        )));
    }
    Ok(())
}

/// The directory `learn --target cuda` builds and runs its bundles in when it measures here,
/// which needs nvcc here (`$NVCC`, else `nvcc` on PATH; a missing GPU shows as every case
/// failing).
fn scratch_dir() -> Result<PathBuf, LearnError> {
    let nvcc = std::env::var("NVCC").unwrap_or_else(|_| "nvcc".into());
    let found = absinthe_codegen::children::output(Command::new(&nvcc).arg("--version"))
        .is_ok_and(|o| o.status.success());
    if !found {
        return Err(LearnError::Invalid(format!(
            "--target cuda measures here only with nvcc and a GPU, and `{nvcc}` does not run (set NVCC); on a machine without them, write the bundles with --emit DIR, run `sh DIR/{RUN_SCRIPT}` where the GPU is, and fit here with --timings DIR"
        )));
    }
    Ok(std::env::temp_dir().join(format!("absinthe-learn-cuda-{}", std::process::id())))
}

/// Builds and runs `bundles`, written into `dir`, with their script (nvcc and a GPU here); a
/// script that fails is a warning, and what it measured is fitted.
fn run_bundles(dir: &Path, bundles: &Bundles, events: &dyn Fn(Event)) -> Result<(), LearnError> {
    let (cases, kernel_cases) = bundles.cases();
    events(Event::Step(Step::CudaBundles {
        bundles: bundles.count,
        cases,
        kernel_cases,
        dir: dir.to_path_buf(),
    }));
    // In a process group of its own, ended with absinthe (its output goes to output.txt).
    let status = absinthe_codegen::children::output(Command::new("sh").arg(dir.join(RUN_SCRIPT)))
        .map_err(|e| LearnError::Spawn("sh".into(), e))?
        .status;
    if !status.success() {
        events(Event::Warning(format!(
            "{RUN_SCRIPT} exited with {status}; fitting what it measured"
        )));
    }
    Ok(())
}

/// A bundle directory's contents, before it is written.
pub struct Bundles {
    pub manifest: Manifest,
    /// How many CUDA bundles (`.cu` files).
    pub count: usize,
    /// Every file, (name, text): the bundles' sources, the manifest and the script.
    pub files: Vec<(String, String)>,
}

impl Bundles {
    /// The training cases and kernel variants of the bundles.
    pub fn cases(&self) -> (usize, usize) {
        let cases = self.manifest.bundles.iter().map(|b| b.cases.len()).sum();
        let kernel_cases = self.manifest.kernels.iter().map(|b| b.cases.len()).sum();
        (cases, kernel_cases)
    }
}

/// The bundles of `machine` for `request`: the training programs on [`gpu::DOMAIN`] at its
/// number of tile shapes per program (default [`gpu::SHAPES`]) and of timed runs (default
/// [`gpu::RUNS`]), and the kernel variants of its refit.
pub fn bundles(machine: &Machine, request: &Request) -> Result<Bundles, LearnError> {
    let shapes = request.shapes.unwrap_or(gpu::SHAPES);
    let runs = request.repeats.unwrap_or(gpu::RUNS).max(1);
    let variants = request.refit_variants();
    let (manifest, sources) =
        gpu::emit(machine, gpu::DOMAIN, shapes, runs, variants, request.solver)?;
    let count = sources.len();
    let files = bundle_files(&manifest, sources)?;
    Ok(Bundles {
        manifest,
        count,
        files,
    })
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

/// Fits the manifest and output in `dir` for `machine` (whose file reads `text`) with
/// `request`'s solver, refitting to the kernel variants unless it asks for no refit;
/// `wall_seconds` is recorded when the timings were measured by this run.
pub fn fit_dir(
    machine: &Machine,
    text: &str,
    dir: &Path,
    request: &Request,
    wall_seconds: Option<f64>,
) -> Result<GpuLearning, LearnError> {
    let (solver, kernel_refit) = (request.solver, request.kernel_refit);
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path)
            .map_err(|e| LearnError::Run(format!("cannot read {}: {e}", path.display())))
    };
    let in_file = |name: &str| {
        let path = dir.join(name).display().to_string();
        move |e: LearnError| match e {
            LearnError::Run(m) => LearnError::Run(format!("{path}: {m}")),
            e => LearnError::Run(format!("{path}: {e}")),
        }
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
    let measurements = gpu::measurements(&manifest, &timings, machine).map_err(in_file(OUTPUT))?;
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
        let refit = kernels::refit(
            &result.measurements,
            &kernel_rows,
            &result.params,
            solver,
            None,
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
        flag_calibration: None,
        division_calibration: None,
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
