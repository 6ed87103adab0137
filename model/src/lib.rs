//! absinthe's model: the program and machine files, the stencil expression language, the access
//! analysis, the cost model (`evaluate`) and its MILP encoding.
//!
//! Everything here is pure: no solver, no process, no I/O beyond parsing text the caller read.
//! The data flow is `Program` → `Analysis` → (`evaluate` | `milp`), with `Machine` beside it.
//!
//! The groups below are layers: `support`, `formats`, `language`, `cost_model`, `encodings`,
//! `output`, each importing only those before it (`support` none); tests/architecture.rs fails
//! on an import cycle between them.

// Loops over dimensions `d` and stencils `i` index several parallel arrays at once, as the
// formulas of docs/MODEL.md do; iterator chains would hide that correspondence.
#![allow(clippy::needless_range_loop)]

/// Input formats: the machine file (with the model's view of it), the YAML reader, file-located
/// errors, and the bounds on every number a user supplies.
pub mod formats {
    pub mod compiler;
    pub mod diagnostic;
    pub mod gpu;
    pub mod learned;
    pub mod limits;
    pub mod locate;
    pub mod machine;
    pub mod model_kind;
    pub mod network;
    pub mod yaml;
}

/// The stencil language: programs (the file and its validation, the levels of sweeps and
/// intervals, run-time scalars), expressions, the access
/// analysis, the reference semantics evaluated in Rust, inlining (a program rewrite), and (with
/// the `generate` feature, which the tests and examples turn on) generated programs for tests
/// and benchmarks.
pub mod language {
    pub mod analysis;
    mod checks;
    pub mod constraints;
    pub mod expr;
    pub mod fields;
    #[cfg(any(test, feature = "generate"))]
    pub mod generate;
    pub mod inline;
    pub mod interp;
    pub mod levels;
    pub mod program;
    pub mod scalars;
}

/// The cost model: its formulas written once (`formula`), `evaluate` in f64 and integers,
/// `exact` in rationals, the options that restrict every search (`options`), the seam the
/// searches are written against (`model::CostModel`), the exact search over groupings
/// (`search`) and inline sets (`inline_search`), and the tile geometry the code generator and the
/// GPU shared-memory test share (`boxes`).
pub mod cost_model {
    pub mod boxes;
    pub mod evaluate;
    pub mod exact;
    pub mod forms;
    pub mod formula;
    pub mod inline_search;
    pub mod model;
    pub mod options;
    pub mod ranks;
    pub mod search;
    pub mod traffic;
}

/// The optimisation problem written for solvers: the solver-neutral MILP (`lp`), the exact
/// linearization primitives, the ABSINTHE (digits) and range MILPs, and the SMT encodings.
pub mod encodings {
    pub mod linearize;
    pub mod lp;
    pub mod milp;
    pub mod ranges;
    pub mod smt;
}

/// What a search answers, as a file (the solution `solve` writes and `codegen`/`verify` read),
/// and text for people (`text`: aligned tables, readable times).
pub mod output {
    pub mod check;
    pub mod solution;
    pub mod text;
}

/// Support: the one work queue and a small random-number generator.
pub mod support {
    pub mod files;
    pub mod parallel;
    pub mod rng;
}

// The types every caller names, at the crate root.
pub use formats::diagnostic::{Diagnostic, FileError, Snippet};
pub use formats::machine::Machine;
pub use language::analysis::{Analysis, ArrayId, ArrayKind};
pub use language::expr::Expr;
pub use language::program::Program;

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
