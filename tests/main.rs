//! End-to-end and cross-crate tests, in one test binary: the CLI on real files, the MILP against
//! brute force, the linearization primitives against brute force.

mod architecture;
mod bounds;
mod cache;
mod cli;
mod codegen;
mod common;
mod cuda;
mod hostile;
mod learn;
mod linearize;
mod milp_exact;
mod model_forms;
mod mpi;
mod names;
mod outputs;
mod reference;
mod robustness;
mod setup;
#[cfg(feature = "z3")]
mod verify;
