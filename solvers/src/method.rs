//! How an optimum is found: the exact dynamic program, or a MILP backend. Parsed once from the
//! command line (`--solver`), passed as a value everywhere after.

use std::fmt;
use std::str::FromStr;

use crate::{available, by_name, Solver, SolverError};

/// A MILP backend this crate knows (compiled in or not; see [`crate::available`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    Cbc,
    Highs,
    Z3,
}

impl Backend {
    pub const ALL: [Backend; 3] = [Backend::Cbc, Backend::Highs, Backend::Z3];

    /// The name `--solver` takes and reports print.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cbc => "cbc",
            Backend::Highs => "highs",
            Backend::Z3 => "z3",
        }
    }

    /// The backend's solver; an error when it was compiled out of this build.
    pub fn solver(self) -> Result<Box<dyn Solver>, SolverError> {
        by_name(self.name())
    }
}

/// Case-insensitive; a backend compiled out of this build is an error that says which feature
/// brings it back.
impl FromStr for Backend {
    type Err = SolverError;

    fn from_str(text: &str) -> Result<Backend, SolverError> {
        let wanted = text.trim().to_ascii_lowercase();
        match Backend::ALL.into_iter().find(|b| b.name() == wanted) {
            Some(b) => b.solver().map(|_| b),
            None => Err(SolverError::Unknown {
                name: text.to_string(),
                available: available().join(", "),
            }),
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How to find the optimum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// The exact dynamic program over group boundaries (`optimize::optimize_dp`).
    Dp,
    /// A MILP, solved by a backend (`optimize::optimize`).
    Milp(Backend),
}

impl Method {
    /// The name `--solver` takes and reports print.
    pub fn name(self) -> &'static str {
        match self {
            Method::Dp => "dp",
            Method::Milp(b) => b.name(),
        }
    }

    /// The methods this build has: the DP, then the backends compiled in.
    pub fn available() -> Vec<Method> {
        let mut methods = vec![Method::Dp];
        methods.extend(
            Backend::ALL
                .into_iter()
                .filter(|b| available().contains(&b.name()))
                .map(Method::Milp),
        );
        methods
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Case-insensitive; a backend compiled out of this build is an error that says which feature
/// brings it back.
impl FromStr for Method {
    type Err = SolverError;

    fn from_str(text: &str) -> Result<Method, SolverError> {
        let wanted = text.trim().to_ascii_lowercase();
        if wanted == Method::Dp.name() {
            return Ok(Method::Dp);
        }
        match Backend::ALL.into_iter().find(|b| b.name() == wanted) {
            Some(b) => b.solver().map(|_| Method::Milp(b)),
            None => Err(SolverError::Unknown {
                name: text.to_string(),
                available: Method::available()
                    .iter()
                    .map(|m| m.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }
}
