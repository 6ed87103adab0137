//! What every backend shares: checking the MILP and the options before a run, the answers
//! that need no backend, and telling "unbounded" from "infeasible" when a backend cannot.

use std::time::Instant;

use absinthe_model::encodings::lp::{Milp, Sense, VarId};

use crate::{MilpSolution, SolveOptions, Solver, SolverError, Status};

/// Checks what every backend relies on: finite coefficients and right-hand sides, bounds that
/// are not NaN and not inverted, variable indices in range.
fn validate(milp: &Milp) -> Result<(), SolverError> {
    let invalid = |reason: String| SolverError::InvalidModel {
        milp: milp.name.clone(),
        reason,
    };
    for var in &milp.vars {
        if var.lower.is_nan() || var.upper.is_nan() {
            return Err(invalid(format!("variable `{}` has a NaN bound", var.name)));
        }
        if var.lower == f64::INFINITY || var.upper == f64::NEG_INFINITY || var.lower > var.upper {
            return Err(invalid(format!(
                "variable `{}` has bounds [{}, {}]",
                var.name, var.lower, var.upper
            )));
        }
    }
    let check_terms = |terms: &[(VarId, f64)], place: &str| {
        for &(var, coef) in terms {
            if var.0 >= milp.vars.len() {
                return Err(invalid(format!(
                    "{place} refers to variable #{} of {}",
                    var.0,
                    milp.vars.len()
                )));
            }
            if !coef.is_finite() {
                return Err(invalid(format!(
                    "{place} has coefficient {coef} on `{}`",
                    milp.vars[var.0].name
                )));
            }
        }
        Ok(())
    };
    check_terms(&milp.objective.terms, "the objective")?;
    if !milp.objective.constant.is_finite() {
        return Err(invalid(format!(
            "the objective constant is {}",
            milp.objective.constant
        )));
    }
    for constraint in &milp.constraints {
        check_terms(
            &constraint.terms,
            &format!("constraint `{}`", constraint.name),
        )?;
        if !constraint.rhs.is_finite() {
            return Err(invalid(format!(
                "constraint `{}` has right-hand side {}",
                constraint.name, constraint.rhs
            )));
        }
    }
    Ok(())
}

fn validate_options(options: &SolveOptions) -> Result<(), SolverError> {
    let gap = options.relative_gap;
    if !(0.0..1.0).contains(&gap) {
        return Err(SolverError::InvalidOptions(format!(
            "the relative gap must be in [0, 1), found {}",
            absinthe_model::formats::limits::shown(options.relative_gap)
        )));
    }
    if let Some(limit) = options.time_limit {
        if limit.is_nan() || limit < 0.0 {
            return Err(SolverError::InvalidOptions(format!(
                "time limit {limit} is not a non-negative number of seconds"
            )));
        }
    }
    if options.threads == Some(0) {
        return Err(SolverError::InvalidOptions(
            "thread count 0 (leave it unset for the backend's default)".to_string(),
        ));
    }
    Ok(())
}

/// The prologue of every solve: checks the model and the options, answers a model without
/// variables directly (backends treat it inconsistently), then runs `run` with the time the
/// solve began.
pub(crate) fn solve_checked(
    milp: &Milp,
    options: &SolveOptions,
    solver: &'static str,
    run: impl FnOnce(Instant) -> Result<MilpSolution, SolverError>,
) -> Result<MilpSolution, SolverError> {
    validate(milp)?;
    validate_options(options)?;
    let started = Instant::now();
    if milp.vars.is_empty() {
        return Ok(MilpSolution {
            seconds: started.elapsed().as_secs_f64(),
            ..solve_without_variables(milp, solver)
        });
    }
    run(started)
}

/// Answers for a MILP without variables, which the backends treat inconsistently: every
/// constraint is `0 (sense) rhs`, so it is either trivially optimal or infeasible.
fn solve_without_variables(milp: &Milp, solver: &'static str) -> MilpSolution {
    let feasible = milp.constraints.iter().all(|c| match c.sense {
        Sense::Le => 0.0 <= c.rhs,
        Sense::Ge => 0.0 >= c.rhs,
        Sense::Eq => c.rhs == 0.0,
    });
    if feasible {
        let objective = milp.objective.constant;
        MilpSolution {
            status: Status::Optimal,
            values: Vec::new(),
            objective,
            best_bound: objective,
            gap: 0.0,
            seconds: 0.0,
            solver,
        }
    } else {
        without_incumbent(Status::Infeasible, f64::INFINITY, 0.0, solver)
    }
}

/// A solution with no values (infeasible, unbounded, no solution found).
pub(crate) fn without_incumbent(
    status: Status,
    best_bound: f64,
    seconds: f64,
    solver: &'static str,
) -> MilpSolution {
    let objective = if status == Status::Unbounded {
        f64::NEG_INFINITY
    } else {
        f64::INFINITY
    };
    MilpSolution {
        status,
        values: Vec::new(),
        objective,
        best_bound,
        gap: f64::INFINITY,
        seconds,
        solver,
    }
}

/// The same constraints with a zero objective: solving it tells "unbounded" from "infeasible"
/// when a backend only knows that one of them holds. (For rational data, a feasible MILP whose
/// relaxation is unbounded is itself unbounded.)
fn feasibility_version(milp: &Milp) -> Milp {
    let mut feasibility = milp.clone();
    feasibility.name = format!("{}_feasibility", milp.name);
    feasibility.objective = Default::default();
    feasibility
}

/// Resolves an "unbounded or infeasible" answer by solving [`feasibility_version`].
pub(crate) fn unbounded_or_infeasible(
    solver: &dyn Solver,
    milp: &Milp,
    options: &SolveOptions,
    started: Instant,
) -> Result<MilpSolution, SolverError> {
    let check = solver.solve(&feasibility_version(milp), options)?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(match check.status {
        Status::Optimal | Status::TimeLimit | Status::Unbounded => {
            without_incumbent(Status::Unbounded, f64::NEG_INFINITY, seconds, solver.name())
        }
        Status::Infeasible => {
            without_incumbent(Status::Infeasible, f64::INFINITY, seconds, solver.name())
        }
        Status::NoSolution => without_incumbent(
            Status::NoSolution,
            f64::NEG_INFINITY,
            seconds,
            solver.name(),
        ),
    })
}

/// Whether `values` satisfy the MILP to a tolerance scaled by the size of its numbers.
pub(crate) fn is_feasible(milp: &Milp, values: &[f64]) -> bool {
    let scale = milp
        .constraints
        .iter()
        .map(|c| c.rhs.abs())
        .chain(values.iter().map(|x| x.abs()))
        .fold(1.0_f64, f64::max);
    values.iter().all(|x| x.is_finite()) && milp.max_violation(values) <= 1e-6 * scale
}
