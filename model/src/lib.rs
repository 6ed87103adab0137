//! absinthe's model: the program and machine files, the stencil expression language, the access
//! analysis, the cost model (`evaluate`) and its MILP encoding.
//!
//! Everything here is pure: no solver, no process, no I/O beyond parsing text the caller read.
//! The data flow is `Program` → `Analysis` → (`evaluate` | `milp`), with `Machine` beside it.

// Loops over dimensions `d` and stencils `i` index several parallel arrays at once, as the
// formulas of milp.md do; iterator chains would hide that correspondence.
#![allow(clippy::needless_range_loop)]

pub mod analysis;
pub mod cost;
pub mod diagnostic;
pub mod exact;
pub mod expr;
pub mod formula;
pub mod generate;
pub mod interp;
pub mod linearize;
pub mod lp;
pub mod machine;
pub mod milp;
pub mod program;
pub mod ranges;
pub mod search;
pub mod smt;
pub mod solution;
pub mod yaml;

pub use analysis::{Analysis, ArrayId, ArrayKind};
pub use diagnostic::{Diagnostic, FileError, Snippet};
pub use expr::Expr;
pub use machine::Machine;
pub use program::Program;

#[cfg(test)]
mod tests;
