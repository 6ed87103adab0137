//! Machine files (docs/MODEL.md, "Machine file"): the target's threads, cache, compiler and the
//! learned parameters of the cost model. A GPU machine adds a `gpu:` section; the model then
//! sees one thread block as a "thread" and shared memory per block as the "cache" (see
//! [`Machine::model_view`]), so the MILP and `evaluate` stay one model.

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use crate::formats::compiler::{Compiler, Division};
use crate::formats::diagnostic::{control_character_in, Diagnostic, FileError};
pub use crate::formats::gpu::Gpu;
use crate::formats::learned::Learned;
use crate::formats::limits;
use crate::formats::model_kind::ModelKind;
use crate::formats::yaml;

/// What a division counts in `Expr::operations`, against 1 for an add or a multiply, where
/// the machine file has no measured weight ([`OperationWeights`]). Measured in a vectorised
/// row loop over cache-resident planes (`codegen/templates/operations.cpp.j2`, built as the generated
/// kernels are): one division per cell adds 18 adds' time, a second one 41 (the divider's
/// throughput, 16 cycles per 8 lanes with AVX-512, is the limit;
/// docs/decisions/0016-operation-weights-measured.md). At 4, the optima of division-heavy
/// programs, whose inlining copies the divisions, are predicted 1.5-2.2x too fast.
pub const DIVIDE_OPERATION: u64 = 30;
/// What `sqrt` counts in `Expr::operations` by default: 36 and 63 adds for a first and a
/// second per cell, measured as [`DIVIDE_OPERATION`] (with `-fno-math-errno`, which every build
/// has, or GCC keeps a scalar call for `errno` and it costs 100-130).
pub const SQRT_OPERATION: u64 = 50;
/// What `exp`, `log` or `pow` counts in `Expr::operations` by default: a scalar library call
/// per lane (GCC vectorises them only under `-ffast-math`), 220-400 adds measured as
/// [`DIVIDE_OPERATION`].
pub const CALL_OPERATION: u64 = 300;

/// What a division, a `sqrt` and a library call (`exp`, `log`, `pow`) count in the compute part
/// of the model, in adds. `absinthe learn` measures them on the machine it learns
/// (`params.operations` in the machine file); files without them, and programs analysed
/// without a machine, get the defaults ([`DIVIDE_OPERATION`], [`SQRT_OPERATION`],
/// [`CALL_OPERATION`]), measured on an AVX-512 Xeon.
///
/// `divide_literals` is not a weight and is not written: [`Machine::model_view`] sets it from
/// the build, true where a division by a literal is a division ([`Division::Divide`], and CUDA
/// code), false where it goes through its reciprocal (`expr::divisor_reciprocal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperationWeights {
    pub divide: u64,
    pub sqrt: u64,
    pub call: u64,
    #[serde(skip)]
    pub divide_literals: bool,
}

impl Default for OperationWeights {
    fn default() -> Self {
        OperationWeights::DEFAULT
    }
}

impl OperationWeights {
    /// The defaults, usable in constants (`Params::ZERO`).
    pub const DEFAULT: OperationWeights = OperationWeights {
        divide: DIVIDE_OPERATION,
        sqrt: SQRT_OPERATION,
        call: CALL_OPERATION,
        divide_literals: false,
    };

    /// Whether the weights are the defaults (a machine file then need not write them).
    pub fn is_default(&self) -> bool {
        OperationWeights {
            divide_literals: false,
            ..*self
        } == OperationWeights::default()
    }
}

/// Threads per block the CUDA kernels use at most: 8 blocks of 256 fill an SM's 2048 threads,
/// and `__launch_bounds__(256)` leaves ptxas 255 registers per thread.
pub const MAX_BLOCK_THREADS: usize = 256;

/// Seconds per counted access for the peel (per row start) and body (per cell) terms.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeelBody {
    pub peel: f64,
    pub body: f64,
}

/// The parameters of the model (docs/MODEL.md, "Parameters"): fast memory, slow-memory base,
/// slow-memory stream, the compute part's per-operation cost and the crowding charge (the last
/// two zero when absent).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub fast: PeelBody,
    pub slow_base: PeelBody,
    pub slow_stream: PeelBody,
    #[serde(default, skip_serializing_if = "Compute::is_zero")]
    pub compute: Compute,
    #[serde(default, skip_serializing_if = "Crowded::is_zero")]
    pub crowded: Crowded,
    /// What a division, a `sqrt` and a library call weigh in the compute part, in adds
    /// (`Analysis::weigh_operations`); absent: the defaults, measured on an AVX-512 Xeon.
    /// `absinthe learn` measures them (`learn::operations`).
    #[serde(default, skip_serializing_if = "OperationWeights::is_default")]
    pub operations: OperationWeights,
    /// The share of the smaller of a stencil's fast and slow sides that the larger does not
    /// hide, in `[0, 1]`: each of its peel and body costs `max(fast, slow) + exposed min(fast,
    /// slow)` (docs/MODEL.md, "The time of a configuration"). Absent: 0, the published
    /// `max`, under which a recomputation that a slower memory side covers costs nothing.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub exposed: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// The charge of a crowded group (absent: none). A group's sweep keeps `s`
/// row streams in flight per row of a tile step that does not continue the previous one in
/// memory, where `s` is the group's stream weight (arrays loaded, a store twice): the tile's
/// planes when its rows span the domain along x (a plane's rows then follow each other), else
/// its rows times its planes. Above `row_streams` the prefetchers lose track, and every
/// stream-body access of the group's stencils costs `stream_body` seconds more
/// (`evaluate::crowded`). Measured on cosmo_pgrad: tiles of whole rows one row tall ran 0.92-1.0 ms
/// one or two planes deep and 2.2-2.6 ms twelve to sixty planes deep, which the eight other
/// parameters predict flat (docs/decisions/0014-crowding-charge.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Crowded {
    /// The most row streams in flight at which a group is not crowded.
    #[serde(default)]
    pub row_streams: u64,
    /// Seconds per stream-body access of a crowded group's stencils, on top of `slow_stream`.
    #[serde(default)]
    pub stream_body: f64,
}

impl Crowded {
    /// No charge: `stream_body` is zero.
    pub fn is_zero(&self) -> bool {
        self.stream_body == 0.0
    }
}

/// Seconds per counted arithmetic operation (`Expr::operations`): `body` per cell, `peel`
/// per row start (a row's scalar remainder and its pipeline start, which cost per operation
/// too: a row one cell long is not vectorised at all). Both add to the fast part
/// (`formula::Part::Compute`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compute {
    #[serde(default)]
    pub peel: f64,
    #[serde(default)]
    pub body: f64,
}

impl Compute {
    pub fn is_zero(&self) -> bool {
        self.peel == 0.0 && self.body == 0.0
    }
}

impl Params {
    /// All parameters zero.
    pub const ZERO: Params = Params {
        fast: PeelBody {
            peel: 0.0,
            body: 0.0,
        },
        slow_base: PeelBody {
            peel: 0.0,
            body: 0.0,
        },
        slow_stream: PeelBody {
            peel: 0.0,
            body: 0.0,
        },
        compute: Compute {
            peel: 0.0,
            body: 0.0,
        },
        crowded: Crowded {
            row_streams: 0,
            stream_body: 0.0,
        },
        operations: OperationWeights::DEFAULT,
        exposed: 0.0,
    };

    /// `[part][term]`: fast, base, stream, compute × peel, body (see `formula::Part`,
    /// `formula::Term`).
    pub fn table(&self) -> [[f64; 2]; 4] {
        [
            [self.fast.peel, self.fast.body],
            [self.slow_base.peel, self.slow_base.body],
            [self.slow_stream.peel, self.slow_stream.body],
            [self.compute.peel, self.compute.body],
        ]
    }

    /// The parameters in a fixed order with their file keys, for validation and reports.
    pub fn named(&self) -> [(&'static str, f64); 9] {
        [
            ("params.fast.peel", self.fast.peel),
            ("params.fast.body", self.fast.body),
            ("params.slow_base.peel", self.slow_base.peel),
            ("params.slow_base.body", self.slow_base.body),
            ("params.slow_stream.peel", self.slow_stream.peel),
            ("params.slow_stream.body", self.slow_stream.body),
            ("params.compute.peel", self.compute.peel),
            ("params.compute.body", self.compute.body),
            ("params.crowded.stream_body", self.crowded.stream_body),
        ]
    }

    /// Range checks of the cost parameters: finite, non-negative, operation weights bounded.
    fn validate(&self, errors: &mut Vec<Diagnostic>) {
        if self.crowded.stream_body > 0.0 && self.crowded.row_streams == 0 {
            errors.push(Diagnostic::new(
                "params.crowded.row_streams",
                "row_streams must be at least 1 when crowded.stream_body is charged",
            ));
        }
        for (key, v) in self.named() {
            if !(0.0..=limits::MAX_PARAM_SECONDS).contains(&v) {
                errors.push(Diagnostic::new(
                    key,
                    format!(
                        "parameters must be non-negative seconds, at most {} (the model's max and >= encodings are exact only for non-negative costs), found {v}", limits::MAX_PARAM_SECONDS
                    ),
                ));
            } else if v > 0.0 && v < limits::MIN_PARAM_SECONDS {
                errors.push(Diagnostic::new(
                    key,
                    format!(
                        "a positive parameter must be at least {:e} seconds (0 turns its term off), found {v:e}", limits::MIN_PARAM_SECONDS
                    ),
                ));
            }
        }
        if !(0.0..=1.0).contains(&self.exposed) {
            errors.push(Diagnostic::new(
                "params.exposed",
                format!(
                    "the share of the smaller side that the larger does not hide must be in [0, 1], found {}",
                    limits::shown(self.exposed)
                ),
            ));
        }
        let w = self.operations;
        for (key, v) in [
            ("params.operations.divide", w.divide),
            ("params.operations.sqrt", w.sqrt),
            ("params.operations.call", w.call),
        ] {
            if !(1..=MAX_OPERATION_WEIGHT).contains(&v) {
                errors.push(Diagnostic::new(
                    key,
                    format!(
                        "an operation weight counts adds and must be in 1..={MAX_OPERATION_WEIGHT}, found {v}"
                    ),
                ));
            }
        }
    }
}

/// The largest weight `params.operations` may give an operation, in adds: a library call
/// measures a few hundred; far beyond that is a mistake in the file.
pub const MAX_OPERATION_WEIGHT: u64 = 100_000;

/// The parallel-efficiency slacks σ_T (cores) and σ_D (tile size).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slack {
    #[serde(default = "default_slack_cores")]
    pub cores: f64,
    #[serde(default = "default_slack_size")]
    pub size: f64,
}

fn default_slack_cores() -> f64 {
    0.05
}
fn default_slack_size() -> f64 {
    0.02
}

impl Default for Slack {
    fn default() -> Self {
        Slack {
            cores: default_slack_cores(),
            size: default_slack_size(),
        }
    }
}

/// A machine file. `cores`, `cache_bytes` and `params` may be absent in a file given to
/// `learn`; everything that evaluates the model asks for them through [`Machine::model_view`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    #[serde(deserialize_with = "crate::formats::yaml::text")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_bytes: Option<u64>,
    #[serde(default = "default_cache_fraction")]
    pub cache_fraction: f64,
    /// The most arrays (inputs, outputs and tile buffers) one group may touch in a program
    /// whose groups stream along y (`evaluate::limits_arrays`); absent: no limit. `learn` measures
    /// it ([`GroupArraysCalibration`]): on the development machine a group walking 13 arrays
    /// ran 1.25x slower than the same stencils split into two groups of 7, which the cost
    /// parameters predict 0.5% cheaper (docs/decisions/0013-group-arrays-limit.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_arrays: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_bytes: Option<usize>,
    #[serde(default)]
    pub slack: Slack,
    #[serde(default)]
    pub compiler: Compiler,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Params>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learned: Option<Learned>,
    /// Present for a GPU: the model targets shared memory per block and the SM count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<Gpu>,
    /// The data caches from the nearest level out (`absinthe cache`'s levels, docs/MODEL.md,
    /// "Cache model"); `learn` fills them from sysfs when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caches: Option<Vec<CacheLevel>>,
    /// The MPI transport between ranks (`solve --ranks`); `learn --ranks` measures it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::formats::network::Network>,
}

/// One data cache level of a machine file's `caches:` list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheLevel {
    /// What the reports call it: `L1`, `L2`, ...
    pub name: String,
    /// Capacity in bytes (of the whole cache when `shared`).
    pub bytes: u64,
    /// Line size in bytes, a power of two.
    pub line: u64,
    /// Associativity: lines per set (`bytes / (line * ways)` sets).
    pub ways: u64,
    /// Whether the cores share the level; the cache model gives each thread an equal share.
    #[serde(default)]
    pub shared: bool,
}

impl CacheLevel {
    /// Sets of the whole level.
    pub fn sets(&self) -> u64 {
        self.bytes / (self.line * self.ways)
    }

    /// Range checks of one level, `key` its place in the file (`caches[1]`).
    fn validate(&self, key: &str, errors: &mut Vec<Diagnostic>) {
        let name_key = format!("{key}.name");
        if self.name.trim().is_empty() || self.name.chars().count() > 32 {
            errors.push(Diagnostic::new(
                &name_key,
                format!("{name_key} must be 1 to 32 characters"),
            ));
        }
        errors.extend(control_character_in(
            &self.name,
            &name_key,
            &name_key,
            "a level's name",
        ));
        let line_key = format!("{key}.line");
        if !(8..=4096).contains(&self.line) || !self.line.is_power_of_two() {
            errors.push(Diagnostic::new(
                &line_key,
                format!(
                    "{line_key} must be a power of two between 8 and 4096, found {}",
                    self.line
                ),
            ));
            return;
        }
        let ways_key = format!("{key}.ways");
        if !(1..=limits::MAX_CACHE_WAYS).contains(&self.ways) {
            errors.push(Diagnostic::new(
                &ways_key,
                format!(
                    "{ways_key} must be between 1 and {}, found {}",
                    limits::MAX_CACHE_WAYS,
                    self.ways
                ),
            ));
            return;
        }
        let bytes_key = format!("{key}.bytes");
        if !(1..=limits::MAX_CACHE_BYTES).contains(&self.bytes)
            || !self.bytes.is_multiple_of(self.line * self.ways)
        {
            errors.push(Diagnostic::new(
                &bytes_key,
                format!(
                    "{bytes_key} must be a multiple of line x ways ({}) between 1 and {} (1 TiB), found {}",
                    self.line * self.ways,
                    limits::MAX_CACHE_BYTES,
                    self.bytes
                ),
            ));
        }
    }
}

fn default_cache_fraction() -> f64 {
    1.0 / 3.0
}

/// The numbers the cost model needs, all present and validated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelMachine {
    /// T: threads, one per core.
    pub threads: usize,
    /// C: cache capacity in values for one tile's working set.
    pub cache_values: f64,
    pub slack: Slack,
    pub params: Params,
    /// Whether groups may stream on this machine.
    pub streams: bool,
    /// The most arrays one group may touch (`usize::MAX`: no limit; on a CPU only).
    pub group_arrays: usize,
    /// A GPU (a `gpu:` section): one tile is one thread block, C counts the values of shared
    /// memory per block, and the cache test counts exactly what the CUDA kernels place there
    /// (`evaluate::GroupShape::shared_values`); groups stream along z.
    pub gpu: bool,
    /// On a GPU, the most threads per block the CUDA kernels may use
    /// (`min(boxes::MAX_BLOCK_THREADS, gpu.max_threads_per_block)`): it sets the block shape,
    /// and so which tile buffers fit the registers (`boxes::block_plan`). Unused on a CPU.
    pub block_threads: usize,
    /// The form of the model that prices it (`cost_model::forms::with_model`).
    pub model: ModelKind,
}

/// Commands print a machine's name: an escaped control character in it (`"\u001b[31m"`) would
/// reach the terminal.
fn name_problem(name: &str) -> Option<Diagnostic> {
    if name.trim().is_empty() {
        return Some(Diagnostic::new(
            "name",
            "the name is empty; reports name the machine by it",
        ));
    }
    control_character_in(name, "name", "the name", "a machine's name")
}

impl Machine {
    /// Reads and validates a machine file.
    pub fn load(path: &Path) -> Result<Machine, FileError> {
        crate::formats::diagnostic::load_file(path, Machine::from_yaml)
    }

    pub fn from_yaml(text: &str) -> Result<Machine, Vec<Diagnostic>> {
        let m: Machine = yaml::from_str(text).map_err(|d| vec![d])?;
        let errors = m.validate();
        if errors.is_empty() {
            Ok(m)
        } else {
            Err(errors)
        }
    }

    /// Range checks on every number present.
    pub fn validate(&self) -> Vec<Diagnostic> {
        let mut errors: Vec<Diagnostic> = name_problem(&self.name).into_iter().collect();
        if let Some(c) = self.cores {
            if !(1..=limits::MAX_THREADS).contains(&c) {
                errors.push(Diagnostic::new(
                    "cores",
                    format!(
                        "cores must be between 1 and {}, found {c}",
                        limits::MAX_THREADS
                    ),
                ));
            }
        }
        if self.group_arrays.is_some_and(|a| a < 2) {
            errors.push(Diagnostic::new(
                "group_arrays",
                "group_arrays must be at least 2 (one input and one output), or absent for no limit",
            ));
        }
        if let Some(b) = self.cache_bytes {
            if !(1..=limits::MAX_CACHE_BYTES).contains(&b) {
                errors.push(Diagnostic::new(
                    "cache_bytes",
                    format!(
                        "cache_bytes must be between 1 and {} (1 TiB), found {b}",
                        limits::MAX_CACHE_BYTES
                    ),
                ));
            }
        }
        if !(self.cache_fraction > 0.0 && self.cache_fraction <= 1.0) {
            errors.push(Diagnostic::new(
                "cache_fraction",
                format!(
                    "cache_fraction must be in (0, 1], found {}",
                    limits::shown(self.cache_fraction)
                ),
            ));
        }
        if let Some(v) = self.value_bytes {
            if v != 4 && v != 8 {
                errors.push(Diagnostic::new(
                    "value_bytes",
                    format!("value_bytes must be 4 or 8, found {v}"),
                ));
            }
        }
        for (key, v) in [
            ("slack.cores", self.slack.cores),
            ("slack.size", self.slack.size),
        ] {
            if !(0.0..1.0).contains(&v) {
                errors.push(Diagnostic::new(
                    key,
                    format!("a slack must be in [0, 1), found {}", limits::shown(v)),
                ));
            }
        }
        self.compiler.validate(&mut errors);
        if let Some(g) = &self.gpu {
            g.validate(&mut errors);
        }
        if let Some(levels) = &self.caches {
            if levels.is_empty() || levels.len() > limits::MAX_CACHE_LEVELS {
                errors.push(Diagnostic::new(
                    "caches",
                    format!(
                        "caches must list 1 to {} levels, found {}",
                        limits::MAX_CACHE_LEVELS,
                        levels.len()
                    ),
                ));
            }
            for (n, level) in levels.iter().enumerate() {
                level.validate(&format!("caches[{n}]"), &mut errors);
                if levels[..n].iter().any(|l| l.name == level.name) {
                    errors.push(Diagnostic::new(
                        format!("caches[{n}].name"),
                        format!("cache level `{}` is listed twice", level.name),
                    ));
                }
            }
        }
        if let Some(p) = &self.params {
            p.validate(&mut errors);
        }
        if let Some(n) = &self.network {
            n.validate(&mut errors);
        }
        errors
    }

    /// The model's view of this machine for a program whose values have `program_value_bytes`
    /// bytes; errors name the missing keys.
    ///
    /// With a `gpu:` section one tile is one thread block: the capacity C becomes
    /// `shared_bytes_per_block * cache_fraction / value_bytes` (the tile footprint must fit
    /// shared memory, not a CPU cache) and T becomes `blocks_per_sm * sm_count` (at least a
    /// few blocks per SM instead of one tile per core); `cores` and `cache_bytes` are then
    /// not needed.
    pub fn model_view(&self, program_value_bytes: usize) -> Result<ModelMachine, Vec<Diagnostic>> {
        let mut errors = Vec::new();
        if let Some(gpu) = &self.gpu {
            let Some(params) = self.params else {
                return Err(vec![Diagnostic::new(
                    "params",
                    "missing: the model needs the cost parameters (`params`)",
                )]);
            };
            let value_bytes = self.value_bytes.unwrap_or(program_value_bytes);
            let bytes = gpu.shared_bytes_per_block as f64 * self.cache_fraction;
            if bytes < value_bytes as f64 {
                return Err(vec![Diagnostic::new(
                    "gpu.shared_bytes_per_block",
                    format!(
                        "shared_bytes_per_block x cache_fraction is {} bytes, less than one {value_bytes}-byte value: no tile would fit",
                        limits::shown(bytes)
                    ),
                )]);
            }
            // CUDA code divides by literals.
            let mut params = params;
            params.operations.divide_literals = true;
            return Ok(ModelMachine {
                threads: gpu.model_threads(),
                cache_values: bytes / value_bytes as f64,
                slack: self.slack,
                params,
                streams: true,
                group_arrays: usize::MAX,
                gpu: true,
                block_threads: MAX_BLOCK_THREADS.min(gpu.max_threads_per_block),
                model: ModelKind::Linear,
            });
        }
        if self.cores.is_none() {
            errors.push(Diagnostic::new(
                "cores",
                "missing: the model needs the number of threads",
            ));
        }
        if self.cache_bytes.is_none() {
            errors.push(Diagnostic::new(
                "cache_bytes",
                "missing: the model needs the cache capacity",
            ));
        }
        if self.params.is_none() {
            errors.push(Diagnostic::new(
                "params",
                "missing: run `absinthe learn --machine FILE` to measure this machine first",
            ));
        }
        let value_bytes = self.value_bytes.unwrap_or(program_value_bytes);
        let bytes = self.cache_bytes.unwrap_or(1) as f64 * self.cache_fraction;
        if self.cache_bytes.is_some() && bytes < value_bytes as f64 {
            errors.push(Diagnostic::new(
                "cache_bytes",
                format!(
                    "cache_bytes x cache_fraction is {} bytes, less than one {value_bytes}-byte value: no tile would fit",
                    limits::shown(bytes)
                ),
            ));
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let mut params = self.params.unwrap_or(Params::ZERO);
        params.operations.divide_literals = self.compiler.division == Division::Divide;
        Ok(ModelMachine {
            threads: self.cores.unwrap_or(1),
            cache_values: bytes / value_bytes as f64,
            slack: self.slack,
            params,
            streams: true,
            group_arrays: self.group_arrays.unwrap_or(usize::MAX),
            gpu: false,
            block_threads: MAX_BLOCK_THREADS,
            model: ModelKind::Linear,
        })
    }
}
