//! Building and running generated code: the machine's compiler and flags plus
//! `-ffp-contract=off` (and `-fno-fast-math`, `-fno-trapping-math`, `-fno-math-errno`,
//! `-fopenmp`), in a cache
//! directory keyed by a hash of the sources, compiler and flags, so an unchanged variant is not
//! rebuilt.
//!
//! [`Toolchain::fused_multiply_add`] gives the timed build instead: `-ffp-contract=fast` (the
//! compiler may contract `a * b + c` into one FMA, skipping the rounding of the product) and
//! `-DABSINTHE_FMA_BUILD`, which makes the harness verify within a tolerance rather than bit for
//! bit (`harness_body.j2`: 1024 ulps of the largest magnitude of the array).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use absinthe_model::formats::machine::{Compiler, Division};
use serde::Deserialize;

use crate::CodegenError;

/// A compiler command line.
#[derive(Clone, Debug)]
pub struct Toolchain {
    pub cxx: String,
    /// The machine's flags; the exactness flags are appended by [`Toolchain::all_flags`].
    pub flags: Vec<String>,
    /// Where builds are cached.
    pub cache_dir: PathBuf,
    /// `-ffp-contract=off` and bit-exact verification (the default), or the FMA build.
    pub exact: bool,
    /// The relaxed-math build (only with `exact` false): the kernel files, not the harness with
    /// its reference, are also compiled with [`RELAXED_MATH_FLAGS`].
    pub relaxed: bool,
    /// The FMA build divides by literals with a division instruction, not through their
    /// reciprocal (`-DABSINTHE_TRUE_DIVISION`; the machine file's `compiler.division`).
    pub divide: bool,
}

/// What the relaxed-math build adds for the kernels: the compiler may reassociate and
/// distribute floating-point arithmetic (`(a/60) * u - (b/60) * w` becomes one product by the
/// reciprocal of 60), as Halide's simplifier does unless a pipeline asks for `strict_float`.
/// Unlike `-ffast-math` it keeps NaN and infinity semantics (`-ffinite-math-only` is not
/// among them) and `errno`-free library calls are not assumed. The reference is always
/// compiled without them, so the kernels are verified against IEEE evaluation, within the
/// FMA build's tolerance.
pub const RELAXED_MATH_FLAGS: [&str; 3] = [
    "-fassociative-math",
    "-freciprocal-math",
    "-fno-signed-zeros",
];

/// A source file of the harness (main and the reference), compiled without the relaxed-math
/// flags: `<stem>_harness.cpp` from `codegen --harness` and `bench`.
fn is_harness(name: &str) -> bool {
    name.ends_with("_harness.cpp")
}

/// `$ABSINTHE_CACHE_DIR`, else `$XDG_CACHE_HOME/absinthe/build`, else
/// `$HOME/.cache/absinthe/build`, else a directory under the system temporary directory.
/// A relative `ABSINTHE_CACHE_DIR` is taken from the current directory; a variable set to the
/// empty string counts as unset.
pub fn default_cache_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(d) = var("ABSINTHE_CACHE_DIR") {
        return absolute(PathBuf::from(d));
    }
    if let Some(d) = var("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("absinthe").join("build");
    }
    if let Some(d) = var("HOME") {
        return PathBuf::from(d)
            .join(".cache")
            .join("absinthe")
            .join("build");
    }
    std::env::temp_dir().join("absinthe-build")
}

/// Builds started by this process: each one's temporaries are named by its number.
static BUILDS: AtomicU64 = AtomicU64::new(0);

/// The suffix of a new build's temporaries in `dir` (`PID.N`), once those interrupted builds
/// left there are removed.
fn unique_suffix(dir: &Path) -> String {
    sweep_stale_temporaries(dir);
    let n = BUILDS.fetch_add(1, Ordering::Relaxed);
    format!("{}.{n}", std::process::id())
}

/// Removes from a build directory the temporaries (`a.out.tmpPID.N`, `a.out.stamp.tmpPID.N`,
/// `SOURCE.PID.N.o`) an interrupted build left: those of a process not running here, last
/// written over an hour ago. The age keeps those of a build on another host sharing the
/// directory (a home directory on NFS), whose PID means nothing here.
fn sweep_stale_temporaries(dir: &Path) {
    const STALE: std::time::Duration = std::time::Duration::from_secs(3600);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let pid = if let Some(rest) = name.strip_prefix("a.out.tmp") {
            rest.split('.').next()
        } else if let Some(rest) = name.strip_prefix("a.out.stamp.tmp") {
            rest.split('.').next()
        } else if let Some(stem) = name.strip_suffix(".o") {
            stem.rsplit('.').nth(1)
        } else {
            None
        };
        let Some(pid) = pid.and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let alive = Path::new("/proc").join(pid.to_string()).exists();
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > STALE));
        if !alive && old && Path::new("/proc/self").exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// `dir` from the current directory when relative: the compiler runs inside the cache
/// directory, so every path handed to it must not depend on the caller's directory.
fn absolute(dir: PathBuf) -> PathBuf {
    std::path::absolute(&dir).unwrap_or(dir)
}

/// The stamp beside a cached executable: its length and FNV-1a hash, written after a build, so
/// that an executable truncated or changed since is rebuilt instead of run.
fn stamp_of(exe: &Path) -> Option<String> {
    let bytes = std::fs::read(exe).ok()?;
    Some(format!("{} {:016x}\n", bytes.len(), fnv1a(&[&bytes])))
}

/// Whether the cached executable `exe` is whole: present, and matching the stamp its build
/// wrote.
fn cached_build_is_whole(exe: &Path, stamp: &Path) -> bool {
    match (std::fs::read_to_string(stamp), stamp_of(exe)) {
        (Ok(written), Some(now)) => written == now,
        _ => false,
    }
}

/// FNV-1a, 64 bit: stable across Rust versions, good enough for a cache key.
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in p.iter().chain(&[0xffu8]) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

impl Toolchain {
    pub fn new(cxx: &str, flags: &[String]) -> Toolchain {
        Toolchain {
            cxx: cxx.to_string(),
            flags: flags.to_vec(),
            cache_dir: default_cache_dir(),
            exact: true,
            relaxed: false,
            divide: false,
        }
    }

    /// A machine file's compiler: its command, its flags and how its timed build divides by
    /// literals.
    pub fn of(compiler: &Compiler) -> Toolchain {
        Toolchain::new(&compiler.cxx, &compiler.flags).dividing(compiler.division)
    }

    /// The timed build divides by literals as `division` says (exact builds always divide).
    pub fn dividing(mut self, division: Division) -> Toolchain {
        self.divide = division == Division::Divide;
        self
    }

    /// The timed build: contraction into FMA allowed, verification within a tolerance.
    pub fn fused_multiply_add(mut self) -> Toolchain {
        self.exact = false;
        self
    }

    /// The relaxed-math timed build: the FMA build, and the kernel files also get
    /// [`RELAXED_MATH_FLAGS`] (the harness and its reference do not).
    pub fn relaxed_math(mut self) -> Toolchain {
        self.exact = false;
        self.relaxed = true;
        self
    }

    /// The flags of a kernel file: [`Toolchain::all_flags`], plus [`RELAXED_MATH_FLAGS`] in the
    /// relaxed-math build.
    pub fn kernel_flags(&self) -> Vec<String> {
        let mut f = self.all_flags();
        if self.relaxed && !self.exact {
            f.extend(RELAXED_MATH_FLAGS.iter().map(|s| s.to_string()));
        }
        f
    }

    pub fn with_cache_dir(mut self, dir: PathBuf) -> Toolchain {
        self.cache_dir = absolute(dir);
        self
    }

    /// The machine's flags plus what exact verification and the harness need.
    pub fn all_flags(&self) -> Vec<String> {
        let mut f = self.flags.clone();
        if !f.iter().any(|x| x == "-fopenmp") {
            f.push("-fopenmp".into());
        }
        f.push("-fno-fast-math".into());
        // Lets GCC turn a conditional whose arms cannot trap into a select, so row loops with
        // many `?:` vectorise (with trapping math it keeps branches: the inlined cosmo_hdiff4
        // row loop did not vectorise). IEEE results do not change; only floating-point
        // exception flags, which nothing reads, may.
        f.push("-fno-trapping-math".into());
        // Lets GCC vectorise `sqrt` (without it, a scalar call keeps `errno` for negative
        // arguments, which nothing reads): 36 adds' time per cell against 100, measured (the
        // model's `expr::SQRT_OPERATION`). Results do not change.
        f.push("-fno-math-errno".into());
        if self.exact {
            f.push("-ffp-contract=off".into());
        } else {
            f.push("-ffp-contract=fast".into());
            f.push("-DABSINTHE_FMA_BUILD".into());
            if self.divide {
                f.push("-DABSINTHE_TRUE_DIVISION".into());
            }
        }
        f
    }

    /// Writes `files` into a cache directory and compiles every `.cpp` among them into one
    /// executable; returns its path. Reuses an earlier build of the same inputs.
    pub fn build(
        &self,
        files: &[(String, String)],
        extra_flags: &[&str],
    ) -> Result<PathBuf, CodegenError> {
        let flags: Vec<String> = self
            .all_flags()
            .into_iter()
            .chain(extra_flags.iter().map(|s| s.to_string()))
            .collect();
        let kernel_flags: Vec<String> = self
            .kernel_flags()
            .into_iter()
            .chain(extra_flags.iter().map(|s| s.to_string()))
            .collect();
        // Per-file flags only when they differ: the harness keeps IEEE evaluation.
        let split = kernel_flags != flags;
        let mut parts: Vec<&[u8]> = vec![self.cxx.as_bytes()];
        parts.extend(flags.iter().map(|f| f.as_bytes()));
        if split {
            parts.push(b"relaxed kernels");
            parts.extend(kernel_flags.iter().map(|f| f.as_bytes()));
        }
        for (n, t) in files {
            parts.push(n.as_bytes());
            parts.push(t.as_bytes());
        }
        let key = format!("{:016x}", fnv1a(&parts));
        let dir = self.cache_dir.join(&key);
        let exe = dir.join("a.out");
        let stamp = dir.join("a.out.stamp");
        if cached_build_is_whole(&exe, &stamp) {
            return Ok(exe);
        }
        let io = |e: std::io::Error, p: &Path| CodegenError::Io(format!("{}: {e}", p.display()));
        std::fs::create_dir_all(&dir).map_err(|e| {
            CodegenError::Io(format!(
                "cannot use the build cache {} (from ABSINTHE_CACHE_DIR, else XDG_CACHE_HOME or ~/.cache): {e}",
                self.cache_dir.display()
            ))
        })?;
        for (n, t) in files {
            let p = dir.join(n);
            std::fs::write(&p, t).map_err(|e| io(e, &p))?;
        }
        // Two builds of the same sources may run at once (identical variants of one bench):
        // each writes its own temporaries and the last rename wins.
        let unique = unique_suffix(&dir);
        let tmp = dir.join(format!("a.out.tmp{unique}"));
        let sources = files.iter().filter(|(n, _)| n.ends_with(".cpp"));
        if split {
            // Each file to an object with its own flags, then one link.
            let mut objects = Vec::new();
            for (n, _) in sources {
                let object = format!("{n}.{unique}.o");
                let f = if is_harness(n) { &flags } else { &kernel_flags };
                let mut cmd = Command::new(&self.cxx);
                cmd.current_dir(&dir)
                    .args(f)
                    .arg("-c")
                    .arg(n)
                    .arg("-o")
                    .arg(&object);
                self.run_compiler(cmd, &dir)?;
                objects.push(object);
            }
            let mut cmd = Command::new(&self.cxx);
            cmd.current_dir(&dir)
                .args(&flags)
                .args(&objects)
                .arg("-o")
                .arg(&tmp);
            let linked = self.run_compiler(cmd, &dir);
            for o in &objects {
                let _ = std::fs::remove_file(dir.join(o));
            }
            linked?;
        } else {
            let mut cmd = Command::new(&self.cxx);
            cmd.current_dir(&dir).args(&flags);
            for (n, _) in sources {
                cmd.arg(n);
            }
            cmd.arg("-o").arg(&tmp);
            self.run_compiler(cmd, &dir)?;
        }
        // The stamp is written before the rename: a reader that finds the new executable also
        // finds its stamp (a concurrent identical build writes the same text).
        let written = stamp_of(&tmp).ok_or_else(|| {
            CodegenError::Io(format!(
                "{}: cannot read the built executable",
                tmp.display()
            ))
        })?;
        let stamp_tmp = dir.join(format!("a.out.stamp.tmp{unique}"));
        std::fs::write(&stamp_tmp, &written).map_err(|e| io(e, &stamp_tmp))?;
        std::fs::rename(&stamp_tmp, &stamp).map_err(|e| io(e, &stamp))?;
        std::fs::rename(&tmp, &exe).map_err(|e| io(e, &exe))?;
        Ok(exe)
    }

    /// Runs one compiler command in `dir`; its stderr (the first 8000 characters) on failure.
    fn run_compiler(&self, mut cmd: Command, dir: &Path) -> Result<(), CodegenError> {
        let shown = format!("{cmd:?}");
        let out = crate::children::output(&mut cmd).map_err(|e| CodegenError::Compile {
            command: shown.clone(),
            stderr: format!("cannot start {}: {e}", self.cxx),
        })?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let short: String = stderr.chars().take(8000).collect();
            return Err(CodegenError::Compile {
                command: format!("{shown} in {}", dir.display()),
                stderr: short,
            });
        }
        Ok(())
    }
}

/// The `ABSINTHE_RESULT` line of a harness run.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct HarnessResult {
    pub label: String,
    pub verified: bool,
    /// `kernel` or `reference`.
    pub timed: String,
    pub runs: usize,
    pub min: f64,
    pub median: f64,
    pub max: f64,
    pub threads: usize,
    /// The first mismatching element, when not verified.
    pub mismatch: Option<serde_json::Value>,
    /// `bit-exact`, or `tolerance` in the FMA build; `earlier run` when this run skipped the
    /// comparison for one an earlier run of the executable made (`measure::runner`).
    #[serde(default = "bit_exact")]
    pub verification: String,
    /// The largest difference from the reference relative to the array's largest magnitude
    /// (0 when bit-exact).
    #[serde(default)]
    pub max_error: f64,
    /// Every timed run kept (sorted).
    #[serde(default)]
    pub times: Vec<f64>,
    /// How the caches were emptied before each run: `evict` or `read`.
    #[serde(default)]
    pub flush: String,
    /// Bytes the last flush evicted (the arrays and tile buffers) or read.
    #[serde(default)]
    pub flushed_bytes: u64,
}

fn bit_exact() -> String {
    "bit-exact".into()
}

/// Runs an executable and parses every `ABSINTHE_RESULT` line it prints (one per harness).
/// A non-zero exit is not an error by itself (a failed verification exits 1); a crash or a
/// missing result line is.
pub fn run_harness(
    exe: &Path,
    args: &[String],
    env: &[(&str, &str)],
) -> Result<Vec<HarnessResult>, CodegenError> {
    let mut cmd = Command::new(exe);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = crate::children::output(&mut cmd).map_err(|e| CodegenError::Run {
        program: exe.display().to_string(),
        message: e.to_string(),
    })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let results: Vec<HarnessResult> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("ABSINTHE_RESULT "))
        .map(|j| {
            serde_json::from_str(j).map_err(|e| CodegenError::Run {
                program: exe.display().to_string(),
                message: format!("bad result line `{j}`: {e}"),
            })
        })
        .collect::<Result<_, _>>()?;
    let failed_verification = results.iter().any(|r| !r.verified);
    if !out.status.success() && !failed_verification {
        return Err(CodegenError::Run {
            program: exe.display().to_string(),
            message: format!(
                "{}\n{}{}",
                out.status,
                stdout.chars().take(2000).collect::<String>(),
                String::from_utf8_lossy(&out.stderr)
                    .chars()
                    .take(6000)
                    .collect::<String>()
            ),
        });
    }
    if results.is_empty() {
        return Err(CodegenError::Run {
            program: exe.display().to_string(),
            message: "no ABSINTHE_RESULT line".into(),
        });
    }
    Ok(results)
}

/// The environment variable that makes a harness write its kernel's outputs: set to a
/// directory, each harness writes `DIR/<label>.outputs` (see [`dump_path`]) after verifying,
/// before timing. The file holds the program's output arrays one after another in program
/// order (the order of [`crate::Schedule::arrays`] with role output), each over the domain
/// with `i` fastest, then `j`, then `k`, as raw values of the program's type in the machine's
/// byte order (little-endian on x86-64 and AArch64). It is written to a `.tmp` file and
/// renamed; a harness that cannot write it exits with status 2. Unset or empty: nothing is
/// written and the harness behaves as without it.
pub const DUMP_OUTPUTS_ENV: &str = "ABSINTHE_DUMP_OUTPUTS";

/// Where a harness labelled `label` writes its outputs under `dir`: `<label>.outputs`, with
/// characters other than `[A-Za-z0-9_.-]` replaced by `_` and the label cut at 255 bytes (as
/// the harness does; labels in one directory should stay distinct after that).
pub fn dump_path(dir: &Path, label: &str) -> PathBuf {
    let name: String = label
        .bytes()
        .take(255)
        .map(|b| {
            if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.' {
                b as char
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!("{name}.outputs"))
}

/// Reads the outputs a harness for `schedule` dumped to `path` (see [`DUMP_OUTPUTS_ENV`]):
/// per output array, its name and its values over the domain (`i` fastest), float values
/// widened to `f64` exactly.
pub fn read_output_dump(
    path: &Path,
    schedule: &crate::Schedule,
) -> Result<Vec<(String, Vec<f64>)>, CodegenError> {
    let bytes =
        std::fs::read(path).map_err(|e| CodegenError::Io(format!("{}: {e}", path.display())))?;
    // Each output over the domain, a 2-D one over its (i, j) only.
    let outputs: Vec<(&str, usize)> = schedule
        .arrays
        .iter()
        .filter(|a| a.role == crate::schedule::Role::Output)
        .map(|a| {
            let levels = if a.dims.contains('k') {
                schedule.domain[2]
            } else {
                1
            };
            (
                a.name.as_str(),
                schedule.domain[0] * schedule.domain[1] * levels,
            )
        })
        .collect();
    let width = schedule.value_bytes;
    let expected: usize = outputs.iter().map(|(_, cells)| cells * width).sum();
    if bytes.len() != expected {
        return Err(CodegenError::Io(format!(
            "{}: {} bytes, expected {expected} ({} outputs over the domain, {width} bytes a value)",
            path.display(),
            bytes.len(),
            outputs.len()
        )));
    }
    let value = |chunk: &[u8]| -> f64 {
        match width {
            4 => f32::from_ne_bytes(chunk.try_into().expect("4 bytes")) as f64,
            _ => f64::from_ne_bytes(chunk.try_into().expect("8 bytes")),
        }
    };
    let mut rest = bytes.as_slice();
    Ok(outputs
        .iter()
        .map(|&(name, cells)| {
            let (array, tail) = rest.split_at(cells * width);
            rest = tail;
            (name.to_string(), array.chunks(width).map(value).collect())
        })
        .collect())
}

/// Measures streaming bandwidth (bytes per second) with a triad compiled like the kernels: the
/// roofline `bench` holds measured times against.
pub fn stream_bandwidth(
    tc: &Toolchain,
    renderer: &crate::render::Renderer,
    flush_bytes: u64,
    env: &[(&str, &str)],
) -> Result<f64, CodegenError> {
    let elements = (flush_bytes / 8).max(1 << 20);
    let source = renderer.stream(elements, 5)?;
    let exe = tc.build(&[("stream.cpp".into(), source)], &[])?;
    /// The triad program's result line (its other fields are for people reading it).
    #[derive(serde::Deserialize)]
    struct Triad {
        bytes_per_second: f64,
    }
    let triad: Triad = measurement_result(&exe, env, "ABSINTHE_STREAM ")?;
    Ok(triad.bytes_per_second)
}

/// Runs the measurement program `exe` with `env` and reads the JSON after `prefix` on the line
/// of its output that starts with it.
fn measurement_result<T: serde::de::DeserializeOwned>(
    exe: &Path,
    env: &[(&str, &str)],
    prefix: &str,
) -> Result<T, CodegenError> {
    let failed = |message: String| CodegenError::Run {
        program: exe.display().to_string(),
        message,
    };
    let mut cmd = std::process::Command::new(exe);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = crate::children::output(&mut cmd).map_err(|e| failed(e.to_string()))?;
    if !out.status.success() {
        return Err(failed(format!(
            "exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .ok_or_else(|| failed(format!("printed no `{}` line", prefix.trim())))?;
    serde_json::from_str(line).map_err(|e| failed(format!("bad result line: {e}")))
}

/// Seconds per cell of the variants of the operation-cost measurement
/// (`templates/operations.cpp.j2`): `p*q + r*s` (`base`), with 36 and 72 more adds and
/// multiplies (`ops36`, `ops72`), four and eight independent divisions a cell (`divide4`,
/// `divide8`), and one and two square roots (`sqrt1`, `sqrt2`) and `exp`s (`call1`, `call2`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize)]
pub struct OperationTimes {
    /// The plain loop: no weight reads it; against it `ops36` shows how much a first batch of
    /// work hides in the loads' and stores' slack.
    pub base: f64,
    pub ops36: f64,
    pub ops72: f64,
    pub divide4: f64,
    pub divide8: f64,
    pub sqrt1: f64,
    pub sqrt2: f64,
    pub call1: f64,
    pub call2: f64,
}

impl OperationTimes {
    /// Seconds per cell of one add or multiply: the 36 that `ops72` adds to `ops36`, both of
    /// which the adds' units bound (the loads and stores hide under them).
    pub fn add_seconds(&self) -> f64 {
        (self.ops72 - self.ops36) / 36.0
    }

    /// Each variant's median over several measurements (a burst of load on a shared machine
    /// can slow one whole run); None for none.
    pub fn median(runs: &[OperationTimes]) -> Option<OperationTimes> {
        let med = |f: fn(&OperationTimes) -> f64| {
            let mut v: Vec<f64> = runs.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        (!runs.is_empty()).then(|| OperationTimes {
            base: med(|t| t.base),
            ops36: med(|t| t.ops36),
            ops72: med(|t| t.ops72),
            divide4: med(|t| t.divide4),
            divide8: med(|t| t.divide8),
            sqrt1: med(|t| t.sqrt1),
            sqrt2: med(|t| t.sqrt2),
            call1: med(|t| t.call1),
            call2: med(|t| t.call2),
        })
    }

    /// Seconds per cell of one division, one `sqrt` and one call (in that order) once its unit
    /// is the bottleneck: the four divisions (and four adds) `divide8` adds to `divide4`, over
    /// four, less an add; the square root `sqrt2` adds to `sqrt1`; the `exp` `call2` adds to
    /// `call1`. Not a first operation's extra time over `base`: that one hides in the slack of
    /// the loads and stores, which the cost model's `max` of compute and memory accounts for.
    pub fn seconds(&self) -> [f64; 3] {
        [
            (self.divide8 - self.divide4) / 4.0 - self.add_seconds(),
            self.sqrt2 - self.sqrt1,
            self.call2 - self.call1,
        ]
    }

    /// [`OperationTimes::seconds`] in adds.
    pub fn in_adds(&self) -> [f64; 3] {
        let add = self.add_seconds();
        self.seconds().map(|s| s / add)
    }

    /// The weights in adds ([`OperationTimes::in_adds`] rounded, at least one and at most
    /// `MAX_OPERATION_WEIGHT`). None when the adds' time is not positive (noise swamped it),
    /// or a weight is not finite.
    pub fn weights(&self) -> Option<absinthe_model::formats::machine::OperationWeights> {
        let add = self.add_seconds();
        if !(add > 0.0 && add.is_finite()) {
            return None;
        }
        let [divide, sqrt, call] = self.in_adds().map(|w| {
            w.is_finite().then(|| {
                (w.round().max(1.0) as u64)
                    .min(absinthe_model::formats::machine::MAX_OPERATION_WEIGHT)
            })
        });
        Some(absinthe_model::formats::machine::OperationWeights {
            divide: divide?,
            sqrt: sqrt?,
            call: call?,
            divide_literals: false,
        })
    }
}

/// Runs of the operation-cost program [`operation_times`] takes the median of: a run takes
/// about 0.4 s on two cores.
pub const OPERATION_RUNS: usize = 5;

/// Times what a division, a `sqrt` and `exp` cost against an add in a vectorised row loop over
/// cache-resident planes, one per thread (`threads`, set in `env` too), built with `tc`'s flags
/// (`absinthe learn` turns it into `params.operations`): each variant's median over
/// [`OPERATION_RUNS`] runs of the program, each of which alternates the variants over sixteen
/// rounds of eight runs, each run 32 sweeps of the planes.
pub fn operation_times(
    tc: &Toolchain,
    renderer: &crate::render::Renderer,
    threads: usize,
    env: &[(&str, &str)],
) -> Result<OperationTimes, CodegenError> {
    let source = renderer.operations(threads.max(1), 32, 16, 8)?;
    let exe = tc.build(&[("operations.cpp".into(), source)], &[])?;
    let runs = (0..OPERATION_RUNS)
        .map(|_| measurement_result(&exe, env, "ABSINTHE_OPERATIONS "))
        .collect::<Result<Vec<OperationTimes>, _>>()?;
    OperationTimes::median(&runs).ok_or_else(|| CodegenError::Run {
        program: exe.display().to_string(),
        message: "no runs".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dump_paths_are_file_names_made_from_labels() {
        let dir = Path::new("/tmp/d");
        assert_eq!(
            dump_path(dir, "seed3.0 [0, 1] x/y"),
            dir.join("seed3.0__0__1__x_y.outputs")
        );
        assert_eq!(
            dump_path(dir, &"a".repeat(300)),
            dir.join("a".repeat(255) + ".outputs")
        );
    }

    /// The relaxed-math build gives the kernel file, and only it, the relaxed flags (GCC
    /// defines `__ASSOCIATIVE_MATH__` and `__RECIPROCAL_MATH__` under them); the FMA build
    /// gives them to neither. Different flags are different cache entries.
    #[test]
    fn relaxed_math_reaches_the_kernel_file_not_the_harness() {
        let probe = |name: &str| {
            format!(
                "int {name}() {{\n#if defined(__ASSOCIATIVE_MATH__) && defined(__RECIPROCAL_MATH__)\n  return 1;\n#else\n  return 0;\n#endif\n}}\n"
            )
        };
        let files = vec![
            ("k.cpp".to_string(), probe("kernel_relaxed")),
            (
                "k_harness.cpp".to_string(),
                probe("harness_relaxed")
                    + "#include <cstdio>\nint kernel_relaxed();\nint main() { std::printf(\"%d %d\\n\", kernel_relaxed(), harness_relaxed()); }\n",
            ),
        ];
        let cache = std::env::temp_dir().join(format!("absinthe-relaxed-{}", std::process::id()));
        let run = |tc: Toolchain| {
            let exe = tc.with_cache_dir(cache.clone()).build(&files, &[]).unwrap();
            let out = Command::new(&exe).output().unwrap();
            String::from_utf8(out.stdout).unwrap()
        };
        let base = Toolchain::new("g++", &["-O1".to_string()]);
        assert_eq!(run(base.clone().relaxed_math()), "1 0\n");
        assert_eq!(run(base.clone().fused_multiply_add()), "0 0\n");
        assert_eq!(run(base), "0 0\n");
        let _ = std::fs::remove_dir_all(&cache);
    }
}
