//! Measuring generated code (docs/ARCHITECTURE.md, "measure/"): build variants of a program,
//! run them round-robin with the caches flushed, verify every run against the reference, and
//! hold the times against the model's predictions.
//!
//! - [`runner`]: the one measuring loop (build in parallel, run in rounds, verify, pool) that
//!   `bench`, `tune` and `learn` time through.
//! - [`variants`]: which configurations a request names (`opt`, `top:K`, `autotune`, ...),
//!   solved, enumerated or drawn; the auto-tuning grid and the measured sweeps.
//! - [`bench`]: [`Bench`] times planned variants into [`bench::Row`]s with the model's counts.
//! - [`tune`]: the tuner, [`tune::tune`], returning a report and the winning solution.
//! - [`accuracy`]: predicted against measured (R², share within 20%, Spearman) and the plot.
//! - [`text`]: the reports of `bench`, `tune` and `bench --ranks` as text for people.

pub mod accuracy;
pub mod bench;
pub mod cache;
pub mod progress;
pub mod ranks;
pub mod runner;
pub mod text;
pub mod tune;
pub mod variants;

pub use bench::Bench;

/// What can go wrong while measuring.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error(transparent)]
    Plan(#[from] variants::PlanError),
    #[error(transparent)]
    Codegen(#[from] absinthe_codegen::CodegenError),
    #[error(transparent)]
    Inline(#[from] absinthe_model::cost_model::inline_search::InlineSearchError),
    /// A variant's kernel did not build.
    #[error("{doing} variant {variant}: {source}")]
    Variant {
        variant: String,
        doing: &'static str,
        source: absinthe_codegen::CodegenError,
    },
    /// A harness did not run to its result lines.
    #[error("running a variant: {source}")]
    Run {
        source: absinthe_codegen::CodegenError,
    },
    /// The cache model cannot run (no cache levels, another target).
    #[error("cache model: {0}")]
    Cache(String),
    #[error("plot: {0}")]
    Plot(String),
    /// An output file (the trace) could not be put in place.
    #[error(transparent)]
    Write(#[from] absinthe_codegen::files::WriteError),
    /// The machine file describes another kind of device than the target's.
    #[error("{0}")]
    Target(String),
    #[error("no configuration is feasible under the model (see `absinthe solve`)")]
    NothingFeasible,
    #[error("no candidate passed verification; nothing to write")]
    NothingVerified,
}
