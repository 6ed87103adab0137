//! Code generation for absinthe (docs/ARCHITECTURE.md, "codegen/"): a configuration is
//! lowered once into a [`schedule::Schedule`] (tile grids, per-tile loop boxes, where every
//! array lives, the expressions as C) and the templates under `codegen/templates/` lay it out
//! as OpenMP C++: a kernel header and source, and optionally a verification and timing
//! harness; [`cuda`] lays the same schedule out as CUDA kernels plus a host emulation of them.
//! [`compile`] builds and runs generated code with the machine's compiler; [`files`] writes files
//! whole.
//!
//! ```no_run
//! use absinthe_codegen::{lower, render::{Renderer, HarnessOptions}};
//! # fn demo(program: &absinthe_model::Program, analysis: &absinthe_model::Analysis,
//! #         config: &absinthe_model::cost_model::evaluate::Configuration, cost: &absinthe_model::cost_model::evaluate::Cost)
//! #         -> Result<(), absinthe_codegen::CodegenError> {
//! let schedule = lower(program, analysis, config, cost)?;
//! let files = Renderer::embedded().openmp(&schedule, Some(&HarnessOptions::default()))?;
//! for (name, text) in &files.files {
//!     std::fs::write(name, text).unwrap();
//! }
//! # Ok(()) }
//! ```

pub mod cexpr;
pub mod children;
pub mod compile;
pub mod cuda;
pub mod files;
pub mod host;
pub mod ranks;
pub mod render;
pub mod runtime_tiles;
pub mod schedule;

pub use schedule::{lower, lower_cuda, lower_group, lower_plain, lower_within, Schedule};

/// What can go wrong while generating or building code.
#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    #[error("invalid configuration: {0}")]
    Configuration(String),
    #[error("template error: {0}")]
    Template(String),
    #[error("{0}")]
    Io(String),
    #[error("compiling generated code failed ({command}):\n{stderr}")]
    Compile { command: String, stderr: String },
    #[error("running {program} failed: {message}")]
    Run { program: String, message: String },
}
