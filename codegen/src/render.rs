//! Rendering a [`Schedule`] through the minijinja templates. The templates are embedded in
//! the binary; [`Renderer::from_dir`] reads them from a directory first (a user's copy), falling
//! back to the embedded ones for any file the directory lacks.

use std::path::{Path, PathBuf};

use minijinja::{context, AutoEscape, Environment, UndefinedBehavior};
use serde::Serialize;

use crate::schedule::Schedule;
use crate::CodegenError;

/// The embedded templates, by name.
pub const TEMPLATES: &[(&str, &str)] = &[
    ("prelude.j2", include_str!("../templates/prelude.j2")),
    ("kernel.h.j2", include_str!("../templates/kernel.h.j2")),
    ("kernel.cpp.j2", include_str!("../templates/kernel.cpp.j2")),
    (
        "kernel_body.j2",
        include_str!("../templates/kernel_body.j2"),
    ),
    (
        "harness_includes.j2",
        include_str!("../templates/harness_includes.j2"),
    ),
    (
        "harness_body.j2",
        include_str!("../templates/harness_body.j2"),
    ),
    (
        "harness.cpp.j2",
        include_str!("../templates/harness.cpp.j2"),
    ),
    ("bundle.cpp.j2", include_str!("../templates/bundle.cpp.j2")),
    ("stream.cpp.j2", include_str!("../templates/stream.cpp.j2")),
    (
        "operations.cpp.j2",
        include_str!("../templates/operations.cpp.j2"),
    ),
    ("huge_pages.j2", include_str!("../templates/huge_pages.j2")),
    ("arena.j2", include_str!("../templates/arena.j2")),
    (
        "scalar_values.j2",
        include_str!("../templates/scalar_values.j2"),
    ),
    (
        "flush_arrays.j2",
        include_str!("../templates/flush_arrays.j2"),
    ),
    (
        "absinthe_cuda_emu.h",
        include_str!("../templates/absinthe_cuda_emu.h"),
    ),
    (
        "cuda_kernels.j2",
        include_str!("../templates/cuda_kernels.j2"),
    ),
    (
        "cuda_kernels.cuh.j2",
        include_str!("../templates/cuda_kernels.cuh.j2"),
    ),
    ("cuda_host.j2", include_str!("../templates/cuda_host.j2")),
    (
        "cuda_emu_host.j2",
        include_str!("../templates/cuda_emu_host.j2"),
    ),
    (
        "cuda_timing.j2",
        include_str!("../templates/cuda_timing.j2"),
    ),
    ("cuda.cu.j2", include_str!("../templates/cuda.cu.j2")),
    (
        "cuda_emu.cpp.j2",
        include_str!("../templates/cuda_emu.cpp.j2"),
    ),
    (
        "cuda_bundle.cpp.j2",
        include_str!("../templates/cuda_bundle.cpp.j2"),
    ),
    (
        "cuda_device_bundle.cu.j2",
        include_str!("../templates/cuda_device_bundle.cu.j2"),
    ),
    ("reference.j2", include_str!("../templates/reference.j2")),
    (
        "harness_memory.j2",
        include_str!("../templates/harness_memory.j2"),
    ),
    (
        "mpi_exchange.j2",
        include_str!("../templates/mpi_exchange.j2"),
    ),
    ("mpi.h.j2", include_str!("../templates/mpi.h.j2")),
    (
        "mpi_network.cpp.j2",
        include_str!("../templates/mpi_network.cpp.j2"),
    ),
    ("mpi.cpp.j2", include_str!("../templates/mpi.cpp.j2")),
    (
        "mpi_harness.cpp.j2",
        include_str!("../templates/mpi_harness.cpp.j2"),
    ),
];

/// Settings baked into a harness (each can be overridden on its command line).
#[derive(Clone, Debug, Serialize)]
pub struct HarnessOptions {
    /// Timed runs, the first quarter discarded.
    pub runs: usize,
    /// How the caches are emptied before each run.
    pub flush: Flush,
    /// Names the result line (`"label"`).
    pub label: String,
    /// A compile command shown in the harness's header comment.
    pub build_hint: String,
    /// The trace build (`absinthe cache --trace`): the kernel records every array and
    /// tile-buffer access, and the harness runs it once, writes the trace to its fourth
    /// argument, verifies the run and prints an `ABSINTHE_TRACE` line instead of timing.
    pub trace: bool,
    /// The values of the program's run-time scalars, in the order of `scalars:`; empty: each
    /// scalar's default (`absinthe_model::language::interp::scalar_default`). Written into the
    /// harness as exact hexadecimal literals, converted to the program's type as inputs are.
    #[serde(serialize_with = "hex_doubles")]
    pub scalars: Vec<f64>,
}

fn hex_doubles<S: serde::Serializer>(values: &[f64], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(values.iter().map(|&v| crate::cexpr::hex_double(v)))
}

impl Default for HarnessOptions {
    fn default() -> Self {
        HarnessOptions {
            runs: 64,
            flush: Flush::default(),
            label: String::new(),
            build_hint: "g++ -O3 -march=native -fopenmp -ffp-contract=off *.cpp".into(),
            trace: false,
            scalars: Vec::new(),
        }
    }
}

/// How a timing harness empties the caches before each timed run (its second argument):
/// docs/USAGE.md, "Flushing the caches before a timed run", and
/// docs/decisions/0015-flush-by-eviction-to-dram.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flush {
    /// Evict every cache line of the arrays and tile buffers a run touches (`clflushopt`):
    /// they all come from memory, at the cost of the arrays' size, not the cache's.
    Evict,
    /// Read a buffer of this many bytes (0: no flush).
    Read(u64),
}

impl Flush {
    /// No flush: the caches keep what the previous run left.
    pub const NONE: Flush = Flush::Read(0);

    /// The flush the command-line flags ask for: `--flush evict` (`Some(true)`) or `--flush
    /// read` (`Some(false)`), and `--flush-bytes`, which sizes the buffer `read` reads.
    pub fn of_flags(evict: Option<bool>, bytes: Option<u64>) -> Result<Flush, String> {
        match (evict, bytes) {
            (Some(true), Some(_)) => Err(
                "--flush-bytes sizes the buffer of `--flush read`; `--flush evict` reads none"
                    .into(),
            ),
            (Some(true), None) if !Flush::CAN_EVICT => Err(
                "--flush evict: no cache-line eviction on this architecture; use --flush read"
                    .into(),
            ),
            (Some(true), None) => Ok(Flush::Evict),
            (Some(false), bytes) | (None, bytes @ Some(_)) => {
                Ok(Flush::Read(bytes.unwrap_or_else(default_flush_bytes)))
            }
            (None, None) => Ok(Flush::default()),
        }
    }

    /// As a machine file records it (`learned.flush`).
    pub fn record(self) -> absinthe_model::formats::learned::FlushKind {
        match self {
            Flush::Evict => absinthe_model::formats::learned::FlushKind::Evict,
            Flush::Read(bytes) => absinthe_model::formats::learned::FlushKind::Read(bytes),
        }
    }

    /// The harness argument: `evict` or the byte count.
    pub fn arg(self) -> String {
        match self {
            Flush::Evict => "evict".into(),
            Flush::Read(bytes) => bytes.to_string(),
        }
    }

    /// Whether the harness's eviction compiles here (x86 `clflush`, AArch64 `dc civac`).
    pub const CAN_EVICT: bool = cfg!(any(
        target_arch = "x86_64",
        target_arch = "x86",
        target_arch = "aarch64"
    ));
}

/// Eviction where this build has the instruction, else a read of [`default_flush_bytes`].
impl Default for Flush {
    fn default() -> Self {
        if Flush::CAN_EVICT {
            Flush::Evict
        } else {
            Flush::Read(default_flush_bytes())
        }
    }
}

impl std::fmt::Display for Flush {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Flush::Evict => f.write_str("evicting the arrays' cache lines"),
            Flush::Read(0) => f.write_str("no flush"),
            Flush::Read(bytes) => write!(f, "reading {} MiB", bytes >> 20),
        }
    }
}

impl Serialize for Flush {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.arg())
    }
}

/// Bytes to stream before each timed run: 1.25 times the last-level cache from sysfs (at least
/// 8 MiB, at most 1 GiB), or 64 MiB when sysfs says nothing.
pub fn default_flush_bytes() -> u64 {
    let llc = crate::host::last_level_cache_bytes().unwrap_or(48 << 20);
    (llc + llc / 4).clamp(8 << 20, 1 << 30)
}

/// Generated files: (file name, contents).
#[derive(Clone, Debug)]
pub struct Files {
    pub files: Vec<(String, String)>,
}

/// A harness case in a bundle.
#[derive(Serialize)]
pub struct BundleCase<'a> {
    pub s: &'a Schedule,
    pub h: &'a HarnessOptions,
}

/// The template environment.
pub struct Renderer {
    env: Environment<'static>,
    /// `--templates`, where a user's copies are read first.
    dir: Option<PathBuf>,
}

impl Renderer {
    /// The embedded templates.
    pub fn embedded() -> Renderer {
        Renderer::with_dir(None)
    }

    /// Templates from `dir`, each falling back to the embedded one when `dir` lacks it.
    pub fn from_dir(dir: &Path) -> Result<Renderer, CodegenError> {
        if !dir.is_dir() {
            return Err(CodegenError::Io(format!(
                "--templates {}: not a directory",
                dir.display()
            )));
        }
        Ok(Renderer::with_dir(Some(dir.to_path_buf())))
    }

    fn with_dir(dir: Option<PathBuf>) -> Renderer {
        let mut env = template_environment();
        let own = dir.clone();
        env.set_loader(move |name| {
            if let Some(dir) = &own {
                let path = dir.join(name);
                if path.exists() && !path.is_file() {
                    // A FIFO would block, a directory cannot be read: neither falls back.
                    return Err(minijinja::Error::new(
                        minijinja::ErrorKind::InvalidOperation,
                        format!("{} is not a regular file", path.display()),
                    ));
                }
                if path.is_file() {
                    return std::fs::read_to_string(&path).map(Some).map_err(|e| {
                        minijinja::Error::new(
                            minijinja::ErrorKind::InvalidOperation,
                            format!("cannot read {}: {e}", path.display()),
                        )
                    });
                }
            }
            Ok(TEMPLATES
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, t)| t.to_string()))
        });
        Renderer { env, dir }
    }

    /// The template's name in errors: its path where `--templates` holds a copy of it.
    fn shown(&self, name: &str) -> String {
        match &self.dir {
            Some(dir) if dir.join(name).exists() => dir.join(name).display().to_string(),
            _ => name.to_string(),
        }
    }

    pub(crate) fn render(&self, name: &str, ctx: minijinja::Value) -> Result<String, CodegenError> {
        let template = self
            .env
            .get_template(name)
            .map_err(|e| CodegenError::Template(format!("{}: {e:#}", self.shown(name))))?;
        template
            .render(ctx)
            .map_err(|e| CodegenError::Template(format!("{}: {e:#}", self.shown(name))))
    }

    /// The OpenMP kernel (`<program>.h`, `<program>.cpp`) and, with harness options, the
    /// harness (`<program>_harness.cpp`).
    pub fn openmp(
        &self,
        schedule: &Schedule,
        harness: Option<&HarnessOptions>,
    ) -> Result<Files, CodegenError> {
        let stem = file_stem(&schedule.program);
        let header = format!("{stem}.h");
        let trace = harness.is_some_and(|h| h.trace);
        let mut files = vec![
            (
                header.clone(),
                self.render("kernel.h.j2", context! { s => schedule, trace => trace })?,
            ),
            (
                format!("{stem}.cpp"),
                self.render(
                    "kernel.cpp.j2",
                    context! { s => schedule, header => header, trace => trace },
                )?,
            ),
        ];
        if let Some(h) = harness {
            let mut h = h.clone();
            if h.label.is_empty() {
                h.label = schedule.program.clone();
            }
            files.push((
                format!("{stem}_harness.cpp"),
                self.render(
                    "harness.cpp.j2",
                    context! { s => schedule, h => h, header => header, trace => trace },
                )?,
            ));
        }
        Ok(Files { files })
    }

    /// The kernels of a decomposition over MPI ranks (`<program>.h`, `<program>.cpp`: one kernel
    /// per rank class and `<kernel>_mpi`, which runs the caller's class) and, with harness
    /// options, the MPI harness (`<program>_harness.cpp`), built with `mpicxx`.
    pub fn mpi(
        &self,
        decomposition: &crate::ranks::Decomposition,
        harness: Option<&HarnessOptions>,
    ) -> Result<Files, CodegenError> {
        let d = decomposition;
        let stem = file_stem(&d.global.program);
        let header = format!("{stem}.h");
        let mut files = vec![
            (
                header.clone(),
                self.render("mpi.h.j2", context! { d => d })?,
            ),
            (
                format!("{stem}.cpp"),
                self.render("mpi.cpp.j2", context! { d => d, header => header })?,
            ),
        ];
        if let Some(h) = harness {
            let mut h = h.clone();
            if h.label.is_empty() {
                h.label = d.global.program.clone();
            }
            files.push((
                format!("{stem}_harness.cpp"),
                self.render(
                    "mpi_harness.cpp.j2",
                    context! { d => d, h => h, header => header },
                )?,
            ));
        }
        Ok(Files { files })
    }

    /// The MPI transport measurement `learn --ranks` runs: ping-pong between two ranks, then
    /// the generated code's halo exchange of `width` cells on each side of sub-domains with
    /// `levels` levels.
    pub fn mpi_network(&self, width: usize, levels: usize) -> Result<String, CodegenError> {
        self.render(
            "mpi_network.cpp.j2",
            context! { width => width, levels => levels },
        )
    }

    /// Several kernels with their harnesses in one translation unit whose `main` runs every
    /// harness in turn (one result line each); used to batch many cases into one compile.
    pub fn bundle(&self, cases: &[BundleCase<'_>]) -> Result<String, CodegenError> {
        self.render("bundle.cpp.j2", context! { cases => cases })
    }

    /// The streaming-bandwidth program (`elements` doubles per array).
    pub fn stream(&self, elements: u64, reps: u32) -> Result<String, CodegenError> {
        self.render(
            "stream.cpp.j2",
            context! { elements => elements, reps => reps },
        )
    }

    /// The operation-cost measurement (`compile::operation_times`): one 64x64 plane per thread,
    /// swept `reps` times a run, `rounds` rounds of `runs` runs of each variant after a warm-up
    /// round.
    pub fn operations(
        &self,
        planes: usize,
        reps: u32,
        rounds: u32,
        runs: u32,
    ) -> Result<String, CodegenError> {
        self.render(
            "operations.cpp.j2",
            context! {
                cells_x => 64, cells_y => 64, planes => planes, reps => reps, rounds => rounds,
                runs => runs,
            },
        )
    }
}

/// A file-name-safe stem for a program name.
pub fn file_stem(program: &str) -> String {
    let s: String = program
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        "kernel".into()
    } else {
        s
    }
}

/// A minijinja environment with the settings every absinthe template expects: no escaping
/// (we print C++), strict undefined values, and block trimming; the caller adds a loader.
pub(crate) fn template_environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_keep_trailing_newline(true);
    env
}
