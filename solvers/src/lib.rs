//! MILP solvers behind one small trait.
//!
//! A [`Milp`] from `absinthe-model` is solver-neutral; this crate hands it to a backend and
//! reports a [`MilpSolution`] in the model's own terms: one value per variable, the objective
//! *including* its constant, the best bound the backend proved, the relative gap between them,
//! the wall time, and a [`Status`] that says how the search ended.
//!
//! Every backend is one module behind one cargo feature (`cbc`, `highs`, `z3`), and each is a unit
//! struct implementing [`Solver`]; [`by_name`] picks one at run time and [`available`] lists
//! the ones compiled in. Adding a backend never touches the model. The [`write`] module writes
//! the same [`Milp`] as CPLEX LP or MPS text for external solvers.
//!
//! All backends get the same settings ([`SolveOptions`]): a relative gap (default `1e-4`, see
//! docs/MODEL.md, "Encodings", on scaling), an absolute gap small enough that the relative one
//! governs, an optional time limit and thread count, and silence unless `verbose`. What only
//! some backends can use is a trait of its own: a backend that takes a warm start implements
//! [`WithInitialSolution`] (HiGHS does; CBC and Z3 do not).
//!
//! Built on them, the commands' work, each returning a report:
//! - [`solve`]: a program solved on a machine (inline set, search, solution), and the problem
//!   as a file for another solver.
//! - [`compare`]: one problem on several solvers, and whether their optima agree.
//! - `verify` (with `z3`): a solution file's certificates, step by step, and their verdict.
//! - [`text`]: those reports as text for people.
//!
//! ```
//! use absinthe_model::encodings::lp::{LinExpr, Milp, Sense};
//! use absinthe_solvers::{by_name, available, SolveOptions, Status};
//!
//! // Maximise 5x + 4y (minimise the negation) with 6x + 4y <= 24, x + 2y <= 6, x, y integer.
//! let mut milp = Milp::new("example");
//! let x = milp.add_var("x", 0.0, f64::INFINITY, true);
//! let y = milp.add_var("y", 0.0, f64::INFINITY, true);
//! milp.add_constraint("c1", LinExpr::term(x, 6.0).add(y, 4.0), Sense::Le, 24.0);
//! milp.add_constraint("c2", LinExpr::term(x, 1.0).add(y, 2.0), Sense::Le, 6.0);
//! milp.set_objective(LinExpr::term(x, -5.0).add(y, -4.0));
//! for name in available() {
//!     let solution = by_name(name)?.solve(&milp, &SolveOptions::default())?;
//!     assert_eq!(solution.status, Status::Optimal);
//!     assert!((solution.objective - -20.0).abs() < 1e-6); // x = 4, y = 0
//! }
//! # Ok::<(), absinthe_solvers::SolverError>(())
//! ```

use std::fmt;

use absinthe_model::encodings::lp::Milp;

mod backend;
#[cfg(feature = "cbc")]
mod cbc;
#[cfg(feature = "z3")]
pub mod certify;
pub mod compare;
#[cfg(feature = "highs")]
mod highs;
pub mod method;
pub mod optimize;
pub mod solve;
pub mod text;
#[cfg(feature = "z3")]
pub mod verify;
pub mod write;
#[cfg(feature = "z3")]
pub mod z3;

#[cfg(feature = "z3")]
pub use self::z3::Z3;
#[cfg(feature = "cbc")]
pub use cbc::Cbc;
#[cfg(feature = "highs")]
pub use highs::Highs;
pub use write::{write_lp, write_mps};

/// Settings every backend receives.
#[derive(Clone, Debug, PartialEq)]
pub struct SolveOptions {
    /// Stop when `|objective - bound| / |objective|` is at most this. Default `1e-4`.
    pub relative_gap: f64,
    /// Wall-clock limit in seconds; `None` for no limit.
    pub time_limit: Option<f64>,
    /// Worker threads; `None` leaves the backend's default.
    pub threads: Option<usize>,
    /// Let the backend print its log (to standard output); otherwise it is fully silent.
    pub verbose: bool,
}

impl SolveOptions {
    /// A `--gap` value, checked as [`SolveOptions::check`] checks it.
    pub fn parse_gap(text: &str) -> Result<f64, String> {
        checked(text, |o, gap| o.relative_gap = gap)
    }

    /// A `--time-limit` value, checked as [`SolveOptions::check`] checks it.
    pub fn parse_time_limit(text: &str) -> Result<f64, String> {
        checked(text, |o, limit| o.time_limit = Some(limit))
    }

    /// Why these options (from `--gap`, `--time-limit`, `--threads`) cannot be used: a gap
    /// outside [0, 1), a time limit that is not positive or exceeds
    /// `limits::MAX_TIME_LIMIT`, zero threads.
    pub fn check(&self) -> Result<(), String> {
        use absinthe_model::formats::limits::{shown, MAX_TIME_LIMIT};
        if !(self.relative_gap >= 0.0 && self.relative_gap < 1.0) {
            return Err(format!(
                "--gap must be in [0, 1), found {}",
                shown(self.relative_gap)
            ));
        }
        if let Some(t) = self
            .time_limit
            .filter(|t| !(*t > 0.0 && *t <= MAX_TIME_LIMIT))
        {
            return Err(format!(
                "--time-limit must be a positive number of seconds, at most {MAX_TIME_LIMIT}, found {}",
                shown(t)
            ));
        }
        if self.threads == Some(0) {
            return Err("--threads must be at least 1".into());
        }
        Ok(())
    }
}

/// The number `text`, checked by [`SolveOptions::check`] once `set` puts it into the default
/// options.
fn checked(text: &str, set: impl FnOnce(&mut SolveOptions, f64)) -> Result<f64, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("not a number: `{text}`"))?;
    let mut options = SolveOptions::default();
    set(&mut options, value);
    options.check().map(|()| value)
}

impl Default for SolveOptions {
    fn default() -> Self {
        SolveOptions {
            relative_gap: 1e-4,
            time_limit: None,
            threads: None,
            verbose: false,
        }
    }
}

/// How a solve ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Solved to within the requested relative gap.
    Optimal,
    /// Stopped at the time limit (or another limit) holding a feasible incumbent.
    TimeLimit,
    /// Stopped at the time limit (or another limit) without any feasible point.
    NoSolution,
    /// Proven to have no feasible point.
    Infeasible,
    /// Feasible, with an objective that decreases without bound.
    Unbounded,
}

impl Status {
    /// Whether the solution carries values for the variables.
    pub fn has_values(self) -> bool {
        matches!(self, Status::Optimal | Status::TimeLimit)
    }

    fn as_str(self) -> &'static str {
        match self {
            Status::Optimal => "optimal",
            Status::TimeLimit => "time_limit",
            Status::NoSolution => "no_solution",
            Status::Infeasible => "infeasible",
            Status::Unbounded => "unbounded",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a backend reports. The objective is minimised.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MilpSolution {
    pub status: Status,
    /// One value per variable of the [`Milp`], in order; empty when there is no incumbent.
    pub values: Vec<f64>,
    /// Objective value of `values`, including the objective's constant. `+inf` when there is
    /// no incumbent (infeasible, no solution), `-inf` when unbounded.
    pub objective: f64,
    /// Best proven lower bound on the objective, including the constant; `-inf` when the
    /// backend proved none, `+inf` when infeasible.
    pub best_bound: f64,
    /// Relative gap `|objective - best_bound| / max(|objective|, 1e-9)`; 0 when optimal with
    /// an equal bound, `+inf` without an incumbent.
    pub gap: f64,
    /// Wall time of the solve, model transfer included.
    pub seconds: f64,
    /// The backend's name.
    pub solver: &'static str,
}

/// The relative gap between an objective and a bound, as [`MilpSolution::gap`] defines it.
pub fn relative_gap(objective: f64, best_bound: f64) -> f64 {
    if objective == best_bound {
        return 0.0;
    }
    let difference = (objective - best_bound).abs();
    if difference.is_nan() {
        return f64::INFINITY;
    }
    difference / objective.abs().max(1e-9)
}

/// A MILP backend. A backend implements [`Solver::solve_validated`]; every backend shares the
/// prologue of [`Solver::solve`].
pub trait Solver: Send + Sync {
    /// The name [`by_name`] knows it by.
    fn name(&self) -> &'static str;

    /// Minimises the objective of a MILP that [`Solver::solve`] has checked (finite
    /// coefficients, consistent bounds, valid options) and that has at least one variable.
    /// `started` is when the solve began: the reported seconds count from it.
    fn solve_validated(
        &self,
        milp: &Milp,
        options: &SolveOptions,
        started: std::time::Instant,
    ) -> Result<MilpSolution, SolverError>;

    /// Minimises `milp`'s objective: checks the model and the options, answers a model without
    /// variables directly (backends treat it inconsistently), then runs the backend.
    fn solve(&self, milp: &Milp, options: &SolveOptions) -> Result<MilpSolution, SolverError> {
        backend::solve_checked(milp, options, self.name(), |started| {
            self.solve_validated(milp, options, started)
        })
    }

    /// This backend as one that starts from a given point ([`WithInitialSolution`]); `None`
    /// for a backend that would ignore one.
    fn with_initial_solution(&self) -> Option<&dyn WithInitialSolution> {
        None
    }
}

/// A backend that takes a feasible point as its first incumbent (a warm start), as good
/// MIP solvers do. A backend that would ignore the point does not implement this trait, so a
/// warm start is offered only where it is used: [`optimize`](crate::optimize) asks
/// [`Solver::with_initial_solution`].
pub trait WithInitialSolution: Solver {
    /// [`Solver::solve_validated`] from `initial`, one value per variable.
    fn solve_validated_from(
        &self,
        milp: &Milp,
        options: &SolveOptions,
        initial: &[f64],
        started: std::time::Instant,
    ) -> Result<MilpSolution, SolverError>;

    /// [`Solver::solve`] from `initial`, one value per variable: the same prologue, then the
    /// backend with its first incumbent set.
    fn solve_from(
        &self,
        milp: &Milp,
        options: &SolveOptions,
        initial: &[f64],
    ) -> Result<MilpSolution, SolverError> {
        backend::solve_checked(milp, options, self.name(), |started| {
            self.solve_validated_from(milp, options, initial, started)
        })
    }
}

/// Why a backend could not produce a [`MilpSolution`].
#[derive(Debug, thiserror::Error)]
pub enum SolverError {
    #[error("unknown solver `{name}`; available: {available}")]
    Unknown { name: String, available: String },
    #[error(
        "solver `{name}` was compiled out of this build (enable the cargo feature `{feature}`); \
         available: {available}"
    )]
    CompiledOut {
        name: String,
        feature: &'static str,
        available: String,
    },
    #[error("the MILP `{milp}` is malformed: {reason}")]
    InvalidModel { milp: String, reason: String },
    #[error("{solver} failed: {reason}")]
    Backend {
        solver: &'static str,
        reason: String,
    },
    #[error("invalid solve options: {0}")]
    InvalidOptions(String),
}

/// Every backend this crate knows: name, the cargo feature that compiles it in, and whether
/// this build has it.
const BACKENDS: &[(&str, &str, bool)] = &[
    ("cbc", "cbc", cfg!(feature = "cbc")),
    ("highs", "highs", cfg!(feature = "highs")),
    ("z3", "z3", cfg!(feature = "z3")),
];

/// The names of the backends compiled into this build.
pub fn available() -> Vec<&'static str> {
    BACKENDS
        .iter()
        .filter(|backend| backend.2)
        .map(|backend| backend.0)
        .collect()
}

/// The backend called `name` (case-insensitive).
pub fn by_name(name: &str) -> Result<Box<dyn Solver>, SolverError> {
    let wanted = name.trim().to_ascii_lowercase();
    match wanted.as_str() {
        #[cfg(feature = "cbc")]
        "cbc" => return Ok(Box::new(Cbc)),
        #[cfg(feature = "highs")]
        "highs" => return Ok(Box::new(Highs)),
        #[cfg(feature = "z3")]
        "z3" => return Ok(Box::new(Z3)),
        _ => {}
    }
    let available = match available().join(", ") {
        list if list.is_empty() => "none (every backend was compiled out)".to_string(),
        list => list,
    };
    match BACKENDS.iter().find(|backend| backend.0 == wanted) {
        Some(&(_, feature, _)) => Err(SolverError::CompiledOut {
            name: name.to_string(),
            feature,
            available,
        }),
        None => Err(SolverError::Unknown {
            name: name.to_string(),
            available,
        }),
    }
}

#[cfg(test)]
mod testing;
#[cfg(all(test, any(feature = "cbc", feature = "highs")))]
mod tests;
