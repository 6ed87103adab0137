//! The cache model of a bench's variants (`absinthe cache`, docs/MODEL.md, "Cache model"):
//! the modelled misses of a planned variant's kernel, and the trace of the compiled kernel that
//! checks them.

use std::path::Path;
use std::process::Command;

use absinthe_cache::{CacheReport, Code};
use absinthe_codegen::host::sysfs_caches;
use absinthe_codegen::render::{Flush, HarnessOptions};
use absinthe_codegen::CodegenError;
use absinthe_model::formats::machine::CacheLevel;
use serde::Deserialize;

use crate::bench::{Bench, BenchTarget};
use crate::variants::Planned;
use crate::MeasureError;

/// The most accesses a trace is built for: the trace build keeps every access in memory (8
/// bytes each, in vectors that may double) until the run ends, then writes a line of about 20
/// bytes for each: at the limit about 2 GiB of memory and 3 GB of text.
pub const MAX_TRACE_ACCESSES: u64 = 1 << 27;

/// What a trace build's run printed (its `ABSINTHE_TRACE` line).
#[derive(Clone, Debug, Deserialize)]
pub struct TraceRun {
    pub verified: bool,
    pub threads: usize,
    /// Lines written: accesses of all threads.
    pub accesses: u64,
}

impl Bench {
    /// The threads a kernel runs with: the machine file's `cores`, else this host's CPUs.
    pub fn threads(&self) -> usize {
        self.machine
            .cores
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// The cache levels the model counts: the machine file's `caches:`, else what sysfs
    /// reports here.
    pub fn cache_levels(&self) -> Result<Vec<CacheLevel>, MeasureError> {
        match &self.machine.caches {
            Some(levels) => Ok(levels.clone()),
            None => sysfs_caches().ok_or_else(|| {
                MeasureError::Cache(
                    "the machine file has no `caches:` and sysfs reports no cache; add a `caches:` list (docs/MODEL.md, \"Machine file\")".into(),
                )
            }),
        }
    }

    /// The modelled misses of `p`'s OpenMP kernel (the naive reference for `naive`) on
    /// `levels` with this bench's threads.
    pub fn cache_model(
        &self,
        p: &Planned,
        levels: &[CacheLevel],
    ) -> Result<CacheReport, MeasureError> {
        self.openmp_only()?;
        let (schedule, _) = self.schedule_of(p)?;
        let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
        absinthe_cache::model(&schedule, code_of(p), levels, self.threads(), jobs)
            .map_err(|e| MeasureError::Cache(e.to_string()))
    }

    /// [`Bench::cache_model`], or with `sample` its estimate from a sample of about that many
    /// accesses per group ([`absinthe_cache::estimate`]; kernels only).
    pub fn cache_counts(
        &self,
        p: &Planned,
        levels: &[CacheLevel],
        sample: Option<u64>,
    ) -> Result<CacheReport, MeasureError> {
        let Some(budget) = sample else {
            return self.cache_model(p, levels);
        };
        self.openmp_only()?;
        if code_of(p) == Code::Reference {
            return Err(MeasureError::Cache(format!(
                "--sample estimates a kernel's groups; variant {} is the naive reference, which only the exact count takes (leave out --sample)",
                p.name
            )));
        }
        let (schedule, _) = self.schedule_of(p)?;
        let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
        absinthe_cache::estimate(&schedule, levels, self.threads(), budget, jobs)
            .map_err(|e| MeasureError::Cache(e.to_string()))
    }

    /// Builds `p`'s kernel with its trace harness, runs it once with this bench's threads and
    /// the harness's deterministic inputs, and writes the trace of the kernel (of the reference
    /// for `naive`) to `path`: one line per access, `THREAD R|W ADDRESS`, thread by thread,
    /// each in execution order. `accesses`: how many the cache model counted, at most
    /// [`MAX_TRACE_ACCESSES`]. The file is replaced only once the run has verified, ended well
    /// and written every access it reports ([`absinthe_codegen::files::handoff`]).
    pub fn trace(&self, p: &Planned, path: &Path, accesses: u64) -> Result<TraceRun, MeasureError> {
        self.openmp_only()?;
        if accesses > MAX_TRACE_ACCESSES {
            return Err(MeasureError::Cache(format!(
                "--trace {}: variant {} makes {accesses} accesses; a variant of more than {MAX_TRACE_ACCESSES} is not traced (the trace build keeps each access in memory, and the file takes about 20 bytes a line): trace a smaller domain, whose cells away from the boundaries behave the same",
                path.display(),
                p.name
            )));
        }
        let handoff = absinthe_codegen::files::handoff(path)?;
        let (schedule, _) = self.schedule_of(p)?;
        let h = HarnessOptions {
            runs: 1,
            flush: Flush::NONE,
            label: p.name.clone(),
            trace: true,
            ..HarnessOptions::default()
        };
        let files = self.renderer.openmp(&schedule, Some(&h))?;
        let exe =
            self.toolchain
                .build(&files.files, &[])
                .map_err(|source| MeasureError::Variant {
                    variant: p.name.clone(),
                    doing: "building the trace of",
                    source,
                })?;
        // The harness names the file it was given; a FIFO or a device is named as the user did.
        let given = handoff.path().display().to_string();
        let run_error = |message: String| MeasureError::Run {
            source: CodegenError::Run {
                program: exe.display().to_string(),
                message: if handoff.replaces() {
                    message
                } else {
                    message.replace(&given, &path.display().to_string())
                },
            },
        };
        let mut cmd = Command::new(&exe);
        cmd.args(["1", "0"])
            .arg(match code_of(p) {
                Code::Kernel => "kernel",
                Code::Reference => "reference",
            })
            .arg(handoff.path())
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env_remove("ABSINTHE_ARRAY_STAGGER");
        let out =
            absinthe_codegen::children::output(&mut cmd).map_err(|e| run_error(e.to_string()))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout
            .lines()
            .find_map(|l| l.strip_prefix("ABSINTHE_TRACE "))
            .ok_or_else(|| {
                run_error(format!(
                    "{}: no ABSINTHE_TRACE line\n{}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                        .chars()
                        .take(4000)
                        .collect::<String>()
                ))
            })?;
        let run: TraceRun = serde_json::from_str(line)
            .map_err(|e| run_error(format!("bad trace line `{line}`: {e}")))?;
        // The harness ends with status 1 when the run did not verify.
        if !run.verified {
            let kept = if handoff.replaces() {
                format!("; {} was left as it was", path.display())
            } else {
                String::new()
            };
            return Err(MeasureError::Cache(format!(
                "variant {}: the traced run did not verify against the reference{kept}",
                p.name
            )));
        }
        if !out.status.success() {
            return Err(run_error(format!(
                "{} after its result line: the trace may be cut short",
                out.status
            )));
        }
        let written = count_lines(handoff.path()).map_err(|e| {
            run_error(format!(
                "cannot read the trace back from {}: {e}",
                handoff.path().display()
            ))
        })?;
        if let Some(w) = written.filter(|&w| w != run.accesses) {
            return Err(run_error(format!(
                "the run reported {} accesses, but the trace has {w} line{}",
                run.accesses,
                if w == 1 { "" } else { "s" }
            )));
        }
        handoff.commit()?;
        Ok(run)
    }

    fn openmp_only(&self) -> Result<(), MeasureError> {
        match self.options.target {
            BenchTarget::Openmp => Ok(()),
            BenchTarget::CudaEmulated => Err(MeasureError::Cache(
                "the cache model follows the OpenMP kernels only".into(),
            )),
        }
    }
}

/// The lines of the regular file at `path`; `None` for a FIFO or a device, which the run wrote
/// to directly and which cannot be read back.
fn count_lines(path: &Path) -> std::io::Result<Option<u64>> {
    use std::io::Read;
    if !std::fs::metadata(path)?.is_file() {
        return Ok(None);
    }
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut lines = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(Some(lines));
        }
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
    }
}

/// The code `p` times: the reference for `naive`, else the kernel.
fn code_of(p: &Planned) -> Code {
    if p.reference {
        Code::Reference
    } else {
        Code::Kernel
    }
}
