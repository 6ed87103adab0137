//! From a program to its optimal configuration: build the MILP, solve it with a backend, read
//! the configuration back, and hold the solver's objective against `evaluate` (they must agree
//! to 1e-6 relative, or the linearization has a bug and this says so loudly).

use std::time::Instant;

use absinthe_model::cost_model::evaluate::{evaluate, Configuration, Cost};
use absinthe_model::cost_model::model::{Absinthe, CostModel};
use absinthe_model::cost_model::options::{Encoding, MilpOptions};
use absinthe_model::cost_model::search::{
    explain_infeasible, range_table, range_table_with, shortest_grouping,
};
use absinthe_model::encodings::lp::{Milp, MilpSize};
use absinthe_model::encodings::milp::{AbsintheMilp, Encoded, OBJECTIVE_SCALE};
use absinthe_model::formats::machine::ModelMachine;
use absinthe_model::language::analysis::Analysis;

use crate::method::Method;
use crate::{MilpSolution, SolveOptions, Solver, SolverError, Status};

/// Relative tolerance between the solver's objective and `evaluate`.
pub const AGREEMENT_TOLERANCE: f64 = 1e-6;

/// An optimised configuration and how it was found.
#[derive(Clone, Debug)]
pub struct Optimum {
    pub config: Configuration,
    /// `evaluate` of `config`.
    pub cost: Cost,
    /// The backend's report (objective and bound in MILP units, microseconds).
    pub solution: MilpSolution,
    /// The solver's objective for `config`, in seconds.
    pub objective_seconds: f64,
    /// The solver's best bound, in seconds.
    pub bound_seconds: f64,
    pub size: MilpSize,
    /// Seconds spent building the MILP.
    pub build_seconds: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum OptimizeError {
    #[error("no configuration satisfies the model's constraints: {0}")]
    Infeasible(String),
    #[error("{solver} found no feasible configuration within the time limit ({seconds:.1} s); raise --time-limit")]
    NoSolution { solver: &'static str, seconds: f64 },
    #[error("{solver} reported the MILP unbounded: this is a bug in the MILP encoding")]
    Unbounded { solver: &'static str },
    #[error("BUG: {0}")]
    Mismatch(String),
    #[error("{0}")]
    Unsupported(&'static str),
    /// `solve --time-limit` passed while the range table was built (the DP's, the range MILP's
    /// or the inline search's): the group ranges evaluated by then.
    #[error("{}", absinthe_model::cost_model::inline_search::deadline_message(*.0))]
    SearchTimeLimit(usize),
    /// A request that cannot be carried out as given (e.g. an inline set naming an output).
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Solver(#[from] SolverError),
}

impl From<absinthe_model::cost_model::inline_search::InlineSearchError> for OptimizeError {
    fn from(e: absinthe_model::cost_model::inline_search::InlineSearchError) -> Self {
        use absinthe_model::cost_model::inline_search::InlineSearchError;
        match e {
            InlineSearchError::Invalid(m) => OptimizeError::Invalid(m),
            InlineSearchError::Mismatch(m) => OptimizeError::Mismatch(m),
            InlineSearchError::TimeLimit(r) => OptimizeError::SearchTimeLimit(r),
        }
    }
}

/// Finds the optimal configuration of `analysis` on `machine` with `solver`: build the MILP,
/// warm-start it from the DP's optimum (the digits encoding, when `options.warm_start`), solve,
/// read the configuration back and hold the solver's objective against `evaluate`.
pub fn optimize(
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &MilpOptions,
    solver: &dyn Solver,
    solve_options: &SolveOptions,
) -> Result<Optimum, OptimizeError> {
    if options.encoding == Encoding::Digits {
        absinthe_model::encodings::milp::digits_admits(analysis, machine)
            .map_err(OptimizeError::Unsupported)?;
    }
    let started = Instant::now();
    let encoded = Encoded::build(analysis, machine, options);
    if let Encoded::Ranges(r) = &encoded {
        if let Some(ranges) = r.timed_out {
            return Err(OptimizeError::SearchTimeLimit(ranges));
        }
    }
    let build_seconds = started.elapsed().as_secs_f64();
    let start = if options.warm_start && matches!(encoded, Encoded::Digits(_)) {
        warm_start(analysis, machine, options, &encoded, solver, solve_options)
    } else {
        None
    };
    let mut solution = solve_from(solver, encoded.milp(), solve_options, start.as_ref())?;
    if let Some(start) = &start {
        keep_start(&mut solution, encoded.milp(), start);
    }
    check_status(&solution, analysis, machine, options, solver)?;
    let (config, cost) = decode(analysis, machine, options, &encoded, &solution, solver)?;
    let objective_seconds = agreed_objective(
        &encoded,
        &config,
        &cost,
        &solution,
        solver,
        solve_options,
        start.as_ref(),
    )?;
    Ok(Optimum {
        config,
        bound_seconds: solution.best_bound / OBJECTIVE_SCALE,
        objective_seconds,
        cost,
        size: encoded.milp().size(),
        solution,
        build_seconds,
    })
}

/// Solves `milp` with `solver`, from the warm start's point when there is one and the backend
/// takes one ([`Solver::with_initial_solution`]).
fn solve_from(
    solver: &dyn Solver,
    milp: &Milp,
    solve_options: &SolveOptions,
    start: Option<&WarmStart>,
) -> Result<MilpSolution, SolverError> {
    match (start, solver.with_initial_solution()) {
        (Some(start), Some(warm)) => warm.solve_from(milp, solve_options, &start.values),
        _ => solver.solve(milp, solve_options),
    }
}

/// A backend that ends (at its time limit) with nothing, or nothing better than the start,
/// reports the start with its own bound. An incumbent at a time limit that violates the rows
/// (CBC has returned one on the digits encoding of chain64) is no incumbent.
fn keep_start(solution: &mut MilpSolution, milp: &Milp, start: &WarmStart) {
    let violated =
        solution.status == Status::TimeLimit && milp.max_violation(&solution.values) > 1e-6;
    let worse = !solution.status.has_values() || violated || solution.objective > start.objective;
    if worse && !matches!(solution.status, Status::Infeasible | Status::Unbounded) {
        solution.values = start.values.clone();
        solution.objective = start.objective;
        solution.best_bound = solution.best_bound.min(start.objective);
        solution.gap = crate::relative_gap(solution.objective, solution.best_bound);
        if solution.status == Status::NoSolution {
            solution.status = Status::TimeLimit;
        }
    }
}

/// Turns a solve without a configuration into its error: infeasible (with the constraints'
/// explanation), no solution within the time limit, or unbounded.
fn check_status(
    solution: &MilpSolution,
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &MilpOptions,
    solver: &dyn Solver,
) -> Result<(), OptimizeError> {
    match solution.status {
        Status::Infeasible => {
            let reason = explain_infeasible(analysis, machine, &options.space).unwrap_or_else(|| {
                format!(
                    "{} reports the MILP infeasible, but enumeration finds feasible configurations: this is a bug",
                    solver.name()
                )
            });
            Err(OptimizeError::Infeasible(reason))
        }
        Status::NoSolution => {
            if let Some(reason) = explain_infeasible(analysis, machine, &options.space) {
                return Err(OptimizeError::Infeasible(reason));
            }
            Err(OptimizeError::NoSolution {
                solver: solver.name(),
                seconds: solution.seconds,
            })
        }
        Status::Unbounded => Err(OptimizeError::Unbounded {
            solver: solver.name(),
        }),
        Status::Optimal | Status::TimeLimit => Ok(()),
    }
}

/// The solver's configuration, well formed, with its streamed groups made canonical, and its
/// `evaluate`; an error when the model rejects it.
fn decode(
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &MilpOptions,
    encoded: &Encoded,
    solution: &MilpSolution,
    solver: &dyn Solver,
) -> Result<(Configuration, Cost), OptimizeError> {
    let config = encoded.decode(&solution.values);
    config
        .check_shape(analysis.stencils.len(), analysis.domain)
        .map_err(|e| OptimizeError::Mismatch(format!("decoded configuration is malformed: {e}")))?;
    if let Encoded::Digits(digits) = encoded {
        check_decoded(digits, &config, &solution.values)?;
    }
    let config = config.canonical_stream(
        analysis,
        machine,
        options.space.stream_shape(analysis, machine),
    );
    let cost = evaluate(analysis, machine, &config);
    if let Some(why) = &cost.infeasible {
        return Err(OptimizeError::Mismatch(format!(
            "{} returned a configuration the model rejects ({why}): the MILP admits an infeasible point",
            solver.name()
        )));
    }
    Ok((config, cost))
}

/// The solver's objective for `config` in seconds, once it agrees with `evaluate`. An incumbent
/// may carry slack in its `≥` variables; when the objectives disagree, the MILP fixed to the
/// configuration gives the encoding's exact value for it, and that must agree.
fn agreed_objective(
    encoded: &Encoded,
    config: &Configuration,
    cost: &Cost,
    solution: &MilpSolution,
    solver: &dyn Solver,
    solve_options: &SolveOptions,
    start: Option<&WarmStart>,
) -> Result<f64, OptimizeError> {
    let objective_seconds = solution.objective / OBJECTIVE_SCALE;
    if agree(objective_seconds, cost.total) {
        return Ok(objective_seconds);
    }
    let fixed = solve_from(solver, &encoded.fixed_to(config), solve_options, start)?;
    let fixed_seconds = fixed.objective / OBJECTIVE_SCALE;
    if !fixed.status.has_values() || !agree(fixed_seconds, cost.total) {
        return Err(OptimizeError::Mismatch(format!(
            "{}'s objective for groups {:?} tiles {:?} is {:e} s (fixed re-solve: {:e} s) but evaluate gives {:e} s: the linearization disagrees with the model",
            solver.name(),
            config.groups,
            config.tiles,
            objective_seconds,
            fixed_seconds,
            cost.total
        )));
    }
    Ok(fixed_seconds)
}

/// [`optimize`] by a [`Method`]: the exact dynamic program ([`optimize_dp`]) or a MILP backend.
pub fn optimize_with(
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &MilpOptions,
    method: Method,
    solve_options: &SolveOptions,
) -> Result<Optimum, OptimizeError> {
    match method {
        Method::Dp => optimize_dp(analysis, machine, options, solve_options),
        Method::Milp(backend) => {
            let solver = backend.solver()?;
            optimize(analysis, machine, options, solver.as_ref(), solve_options)
        }
    }
}

/// The exact optimum by dynamic programming over group boundaries (`search::range_table` and
/// `search::shortest_grouping`): every contiguous range's cheapest feasible tiling, then the
/// cheapest cover. No MILP is built; the report's size is zero and its bound equals the
/// objective (the search is exhaustive). `solve_options.threads` sets the worker threads.
pub fn optimize_dp(
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &MilpOptions,
    solve_options: &SolveOptions,
) -> Result<Optimum, OptimizeError> {
    let mut optimum = optimize_dp_with(analysis, &Absinthe::new(machine), options, solve_options)?;
    if let Some(why) = &optimum.cost.infeasible {
        return Err(OptimizeError::Mismatch(format!(
            "the DP chose a configuration the model rejects ({why})"
        )));
    }
    let total = optimum.cost.total;
    optimum.objective_seconds = total;
    optimum.bound_seconds = total;
    optimum.solution.objective = total * OBJECTIVE_SCALE;
    optimum.solution.best_bound = optimum.solution.objective;
    Ok(optimum)
}

/// [`optimize_dp`] for any cost model: `model`'s exact optimum (its seconds are the objective
/// and the bound); `cost` is `evaluate` of the configuration on `model.machine()`, for the
/// report (feasible in `model`, which may price another domain than `analysis`'s).
pub fn optimize_dp_with<M: CostModel>(
    analysis: &Analysis,
    model: &M,
    options: &MilpOptions,
    solve_options: &SolveOptions,
) -> Result<Optimum, OptimizeError> {
    let machine = model.machine();
    let started = Instant::now();
    let table = range_table_with(
        analysis,
        model,
        &options.space,
        solve_options.threads.unwrap_or(0),
        1,
    );
    if table.timed_out {
        return Err(OptimizeError::SearchTimeLimit(table.ranges_evaluated));
    }
    let Some((config, seconds_of_model)) = shortest_grouping(&table, analysis.stencils.len())
    else {
        let reason = explain_infeasible(analysis, machine, &options.space).unwrap_or_else(|| {
            "the DP found no feasible cover, but the constraints explain none: this is a bug"
                .to_string()
        });
        return Err(OptimizeError::Infeasible(reason));
    };
    let seconds = started.elapsed().as_secs_f64();
    let config = config.canonical_stream(
        analysis,
        machine,
        options.space.stream_shape(analysis, machine),
    );
    let cost = evaluate(analysis, machine, &config);
    let objective = seconds_of_model * OBJECTIVE_SCALE;
    Ok(Optimum {
        config,
        objective_seconds: seconds_of_model,
        bound_seconds: seconds_of_model,
        cost,
        size: MilpSize::default(),
        solution: MilpSolution {
            status: Status::Optimal,
            values: Vec::new(),
            objective,
            best_bound: objective,
            gap: 0.0,
            seconds,
            solver: Method::Dp.name(),
        },
        build_seconds: 0.0,
    })
}

/// The DP's configuration as a full point of a MILP, and that point's objective.
struct WarmStart {
    values: Vec<f64>,
    objective: f64,
}

/// A full point of `encoded` at the DP's optimal configuration: the MILP with that configuration
/// fixed, solved by `solver` (an LP in effect). None when the DP finds nothing or the fixed
/// solve fails; the MILP then starts cold.
fn warm_start(
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &MilpOptions,
    encoded: &Encoded,
    solver: &dyn Solver,
    solve_options: &SolveOptions,
) -> Option<WarmStart> {
    let table = range_table(
        analysis,
        machine,
        &options.space,
        solve_options.threads.unwrap_or(0),
    );
    let (config, _) = shortest_grouping(&table, analysis.stencils.len())?;
    let fixed = solver
        .solve(&encoded.fixed_to(&config), solve_options)
        .ok()?;
    fixed.status.has_values().then_some(WarmStart {
        values: fixed.values,
        objective: fixed.objective,
    })
}

/// Whether two objective values agree to [`AGREEMENT_TOLERANCE`].
pub fn agree(a: f64, b: f64) -> bool {
    (a - b).abs() <= AGREEMENT_TOLERANCE * a.abs().max(b.abs()).max(1e-12)
}

/// The decoded configuration is well formed and every stencil of a group has its group's tile
/// counts in the solver's values.
fn check_decoded(
    encoded: &AbsintheMilp,
    config: &Configuration,
    values: &[f64],
) -> Result<(), OptimizeError> {
    for (i, &g) in config.groups.iter().enumerate() {
        let n = encoded.tile_counts[i].map(|v| values[v.0].round() as usize);
        if n != config.tiles[g] {
            return Err(OptimizeError::Mismatch(format!(
                "stencil {i} has tile counts {n:?} in the solver's values but its group has {:?}",
                config.tiles[g]
            )));
        }
    }
    Ok(())
}
