//! The HiGHS backend (cargo feature `highs`), through the `highs` crate, which builds HiGHS
//! from source.
//!
//! Status, bound and gap come straight from HiGHS: its model status says how the run ended,
//! its `primal_solution_status` info says whether a stopped run holds an incumbent, and its
//! `mip_dual_bound` info is the proven bound of a MIP (for a pure LP solved to optimality the
//! bound is the objective itself). The gap is recomputed from objective and bound with
//! [`relative_gap`] so that every backend reports the same quantity.
//!
//! The objective constant travels as an extra column fixed at 1 (the `highs` crate passes no
//! objective offset), so HiGHS's own objective, bound and relative gap include it; the column's
//! value is dropped from the reported values.
//!
//! HiGHS takes a warm start ([`WithInitialSolution`]): the point becomes its first incumbent.

use std::time::Instant;

use absinthe_model::encodings::lp::{Milp, Sense};
use absinthe_model::formats::limits::MAX_SOLVER_THREADS;
use highs::{ColProblem, HighsModelStatus, HighsSolutionStatus, Model, Row, SolvedModel};

use crate::backend::{unbounded_or_infeasible, without_incumbent};
use crate::{
    relative_gap, MilpSolution, SolveOptions, Solver, SolverError, Status, WithInitialSolution,
};

const NAME: &str = "highs";

/// The HiGHS MILP solver.
#[derive(Clone, Copy, Debug, Default)]
pub struct Highs;

impl Solver for Highs {
    fn name(&self) -> &'static str {
        NAME
    }

    fn solve_validated(
        &self,
        milp: &Milp,
        options: &SolveOptions,
        started: Instant,
    ) -> Result<MilpSolution, SolverError> {
        self.run(milp, options, None, started)
    }

    fn with_initial_solution(&self) -> Option<&dyn WithInitialSolution> {
        Some(self)
    }
}

impl WithInitialSolution for Highs {
    fn solve_validated_from(
        &self,
        milp: &Milp,
        options: &SolveOptions,
        initial: &[f64],
        started: Instant,
    ) -> Result<MilpSolution, SolverError> {
        self.run(milp, options, Some(initial), started)
    }
}

impl Highs {
    /// Builds, configures and solves one HiGHS model, from `initial` when given, and reads its
    /// answer.
    fn run(
        &self,
        milp: &Milp,
        options: &SolveOptions,
        initial: Option<&[f64]>,
        started: Instant,
    ) -> Result<MilpSolution, SolverError> {
        let mut model = column_problem(milp)
            .try_optimise(highs::Sense::Minimise)
            .map_err(|status| backend(format!("HiGHS rejected the model ({status:?})")))?;
        model.make_quiet();
        configure(&mut model, options)?;
        if let Some(initial) = initial {
            // The objective's constant is a column of its own, fixed at one (`column_problem`).
            let mut initial = initial.to_vec();
            if milp.objective.constant != 0.0 {
                initial.push(1.0);
            }
            model
                .try_set_solution(Some(&initial), None, None, None)
                .map_err(|status| {
                    backend(format!("HiGHS refused the initial point ({status:?})"))
                })?;
        }
        let solved = model
            .try_solve()
            .map_err(|status| backend(format!("the run failed ({status:?})")))?;
        self.report(solved, milp, options, started)
    }

    /// The solution a solved model reports, by HiGHS's model status.
    fn report(
        &self,
        solved: SolvedModel,
        milp: &Milp,
        options: &SolveOptions,
        started: Instant,
    ) -> Result<MilpSolution, SolverError> {
        let is_mip = milp.vars.iter().any(|v| v.integer);
        let seconds = || started.elapsed().as_secs_f64();
        match solved.status() {
            HighsModelStatus::Optimal => {
                let (values, objective) = incumbent(&solved, milp);
                let best_bound = if is_mip {
                    mip_dual_bound(&solved)
                } else {
                    objective
                };
                Ok(with_incumbent(
                    Status::Optimal,
                    values,
                    objective,
                    best_bound,
                    seconds(),
                ))
            }
            HighsModelStatus::Infeasible => Ok(without_incumbent(
                Status::Infeasible,
                f64::INFINITY,
                seconds(),
                NAME,
            )),
            HighsModelStatus::Unbounded => Ok(without_incumbent(
                Status::Unbounded,
                f64::NEG_INFINITY,
                seconds(),
                NAME,
            )),
            HighsModelStatus::UnboundedOrInfeasible => {
                drop(solved);
                unbounded_or_infeasible(self, milp, options, started)
            }
            // Every way of stopping early: report the incumbent if HiGHS holds one.
            HighsModelStatus::ReachedTimeLimit
            | HighsModelStatus::ReachedIterationLimit
            | HighsModelStatus::ReachedSolutionLimit
            | HighsModelStatus::ReachedInterrupt
            | HighsModelStatus::ReachedMemoryLimit
            | HighsModelStatus::ObjectiveBound
            | HighsModelStatus::ObjectiveTarget => Ok(stopped_early(&solved, milp, seconds())),
            // `Unknown` where the coefficients span many orders of magnitude (a machine file
            // of extreme costs on a huge domain): the other backends may still solve it.
            other => Err(backend(format!(
                "HiGHS ended with model status {other:?}, without an answer; another --solver may solve it (cbc, or for a search dp, which needs no MILP)"
            ))),
        }
    }
}

/// What a run that stopped early reports: its incumbent if HiGHS holds one, and its bound.
fn stopped_early(solved: &SolvedModel, milp: &Milp, seconds: f64) -> MilpSolution {
    let is_mip = milp.vars.iter().any(|v| v.integer);
    let best_bound = if is_mip {
        mip_dual_bound(solved)
    } else {
        f64::NEG_INFINITY
    };
    if solved.primal_solution_status() == HighsSolutionStatus::Feasible {
        let (values, objective) = incumbent(solved, milp);
        with_incumbent(Status::TimeLimit, values, objective, best_bound, seconds)
    } else {
        without_incumbent(Status::NoSolution, best_bound, seconds, NAME)
    }
}

/// Sets the options every backend receives, then the expert knob `ABSINTHE_HIGHS_OPTIONS`
/// (extra HiGHS options as `name=value,name=value`), then the log when `verbose`.
fn configure(model: &mut Model, options: &SolveOptions) -> Result<(), SolverError> {
    set_option(
        model,
        "mip_rel_gap",
        OptionValue::Float(options.relative_gap),
    )?;
    // Small enough that the relative gap governs (objectives are in microseconds).
    set_option(model, "mip_abs_gap", OptionValue::Float(1e-9))?;
    if let Some(limit) = options.time_limit {
        set_option(model, "time_limit", OptionValue::Float(limit))?;
    }
    if let Some(threads) = options.threads {
        let threads = i32::try_from(threads).unwrap_or(i32::MAX);
        set_option(model, "threads", OptionValue::Int(threads))?;
    }
    if let Ok(extra) = std::env::var("ABSINTHE_HIGHS_OPTIONS") {
        for pair in extra.split(',').filter(|p| !p.trim().is_empty()) {
            let (name, value) = extra_option(pair)?;
            set_option(model, name, value)?;
        }
    }
    if options.verbose {
        set_option(model, "output_flag", OptionValue::Bool(true))?;
        set_option(model, "log_to_console", OptionValue::Bool(true))?;
    }
    Ok(())
}

/// Options absinthe sets from its own flags, and those that stop the search before it proves
/// the optimum (the answer would no longer be the exact optimum the tool reports).
const OWNED_OPTIONS: [(&str, &str); 12] = [
    ("mip_rel_gap", "it is set by --gap"),
    ("mip_abs_gap", "absinthe sets it so that --gap governs"),
    ("time_limit", "it is set by --time-limit"),
    ("output_flag", "it is set by --verbose"),
    ("log_to_console", "it is set by --verbose"),
    (
        "objective_bound",
        "it would stop the search before it proves the optimum",
    ),
    (
        "objective_target",
        "it would stop the search before it proves the optimum",
    ),
    (
        "mip_max_nodes",
        "it would stop the search before it proves the optimum",
    ),
    (
        "mip_max_leaves",
        "it would stop the search before it proves the optimum",
    ),
    (
        "mip_max_stall_nodes",
        "it would stop the search before it proves the optimum",
    ),
    (
        "mip_max_improving_sols",
        "it would stop the search before it proves the optimum",
    ),
    (
        "solution_limit",
        "it would stop the search before it proves the optimum",
    ),
];

/// One `name=value` pair of `ABSINTHE_HIGHS_OPTIONS`: the name, trimmed, and the value as an
/// integer, a float, a bool or else a string (`presolve=off`), whichever reads first.
fn extra_option(pair: &str) -> Result<(&str, OptionValue<'_>), SolverError> {
    let (name, value) = pair.split_once('=').ok_or_else(|| {
        backend(format!(
            "ABSINTHE_HIGHS_OPTIONS: `{pair}` is not name=value"
        ))
    })?;
    let name = name.trim();
    if let Some((_, why)) = OWNED_OPTIONS.iter().find(|(owned, _)| *owned == name) {
        return Err(backend(format!(
            "ABSINTHE_HIGHS_OPTIONS: `{name}` is not taken: {why}"
        )));
    }
    let value = if let Ok(i) = value.parse::<i32>() {
        OptionValue::Int(i)
    } else if let Ok(f) = value.parse::<f64>() {
        // HiGHS checks a float option's range with comparisons NaN passes.
        if !f.is_finite() {
            return Err(backend(format!(
                "ABSINTHE_HIGHS_OPTIONS: `{value}` is not a finite number"
            )));
        }
        OptionValue::Float(f)
    } else if let Ok(b) = value.parse::<bool>() {
        OptionValue::Bool(b)
    } else {
        OptionValue::Text(value.trim())
    };
    // HiGHS starts this many operating-system threads: the bound of `--threads`.
    if name == "threads"
        && !matches!(value, OptionValue::Int(t) if (1..=MAX_SOLVER_THREADS as i32).contains(&t))
    {
        return Err(backend(format!(
            "ABSINTHE_HIGHS_OPTIONS: threads must be from 1 to {MAX_SOLVER_THREADS}, found `{}`",
            pair.split_once('=').map_or("", |p| p.1)
        )));
    }
    Ok((name, value))
}

/// Sets one HiGHS option; HiGHS refuses an unknown name or a value of the wrong type.
fn set_option(model: &mut Model, option: &str, value: OptionValue) -> Result<(), SolverError> {
    let result = match value {
        OptionValue::Float(v) => model.try_set_option(option, v),
        OptionValue::Int(v) => model.try_set_option(option, v),
        OptionValue::Bool(v) => model.try_set_option(option, v),
        OptionValue::Text(v) => model.try_set_option(option, v),
    };
    result.map_err(|_| {
        backend(format!(
            "HiGHS refused option `{option}` = {value}: an unknown name, or a value of the wrong type or out of its range (HiGHS's documentation lists its options)"
        ))
    })
}

#[derive(Clone, Copy, Debug)]
enum OptionValue<'a> {
    Float(f64),
    Int(i32),
    Bool(bool),
    Text(&'a str),
}

impl std::fmt::Display for OptionValue<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OptionValue::Float(v) => write!(f, "{v}"),
            OptionValue::Int(v) => write!(f, "{v}"),
            OptionValue::Bool(v) => write!(f, "{v}"),
            OptionValue::Text(v) => write!(f, "`{v}`"),
        }
    }
}

fn backend(reason: String) -> SolverError {
    SolverError::Backend {
        solver: NAME,
        reason,
    }
}

/// The MILP column by column; a last column fixed at 1 carries a non-zero objective constant.
fn column_problem(milp: &Milp) -> ColProblem {
    let mut problem = ColProblem::new();
    let rows: Vec<Row> = milp
        .constraints
        .iter()
        .map(|c| match c.sense {
            Sense::Le => problem.add_row(f64::NEG_INFINITY..=c.rhs),
            Sense::Ge => problem.add_row(c.rhs..=f64::INFINITY),
            Sense::Eq => problem.add_row(c.rhs..=c.rhs),
        })
        .collect();
    let mut columns: Vec<Vec<(Row, f64)>> = vec![Vec::new(); milp.vars.len()];
    for (row, constraint) in rows.iter().zip(&milp.constraints) {
        for &(var, coef) in &constraint.terms {
            columns[var.0].push((*row, coef));
        }
    }
    let mut costs = vec![0.0; milp.vars.len()];
    for &(var, coef) in &milp.objective.terms {
        costs[var.0] += coef;
    }
    for ((var, column), cost) in milp.vars.iter().zip(columns).zip(costs) {
        problem.add_column_with_integrality(cost, var.lower..=var.upper, column, var.integer);
    }
    if milp.objective.constant != 0.0 {
        problem.add_column(milp.objective.constant, 1.0..=1.0, Vec::<(Row, f64)>::new());
    }
    problem
}

/// The incumbent's values (without the constant column) and HiGHS's objective value.
fn incumbent(solved: &SolvedModel, milp: &Milp) -> (Vec<f64>, f64) {
    let solution = solved.get_solution();
    let values = solution.columns()[..milp.vars.len()].to_vec();
    (values, solved.objective_value())
}

/// HiGHS's proven MIP bound; `-inf` when it has none to report.
fn mip_dual_bound(solved: &SolvedModel) -> f64 {
    match solved.double_info_value(c"mip_dual_bound") {
        Ok(bound) if !bound.is_nan() => bound,
        _ => f64::NEG_INFINITY,
    }
}

fn with_incumbent(
    status: Status,
    values: Vec<f64>,
    objective: f64,
    best_bound: f64,
    seconds: f64,
) -> MilpSolution {
    MilpSolution {
        status,
        values,
        objective,
        best_bound,
        gap: relative_gap(objective, best_bound),
        seconds,
        solver: NAME,
    }
}
