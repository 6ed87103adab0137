//! The CBC backend (cargo feature `cbc`), through `coin_cbc`'s raw binding to the system's
//! `libCbcSolver` (found with pkg-config).
//!
//! CBC's C interface runs the same command-line driver as the `cbc` program, so settings are
//! its parameters: `ratioGap`, `allowableGap`, `seconds`, `threads`, `log`. Two quirks shape
//! this module:
//!
//! - The driver keeps global state, so two models solved at once (tests run in parallel
//!   threads) can crash. `coin_cbc`'s own lock is a default feature we leave off; instead one
//!   process-wide mutex here is held from the model's creation to its destruction.
//! - A model without integer variables skips the driver (no time limit, no logging control,
//!   and "unbounded" reads as "infeasible"). So the model always gets one integer column
//!   fixed at 1, which also carries the objective constant.
//!
//! Status comes from CBC's own verdicts: `is_continuous_unbounded` (the relaxation is
//! unbounded, resolved into unbounded or infeasible by a feasibility solve),
//! `is_proven_infeasible`, then the run's status: finished with an incumbent is optimal (proven,
//! or stopped within the gap); stopped (time, nodes, solutions) is a time limit with or without
//! an incumbent, which CBC holds when its objective value is not its 1e50 sentinel. The bound is
//! CBC's best possible objective value; the gap is recomputed with [`relative_gap`].

use std::ffi::CString;
use std::os::raw::c_int;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use absinthe_model::encodings::lp::{Milp, Sense};
use coin_cbc::raw::{Model, SecondaryStatus, Sense as CbcSense, Status as CbcStatus};

use crate::backend::{is_feasible, unbounded_or_infeasible, without_incumbent};
use crate::{relative_gap, MilpSolution, SolveOptions, Solver, SolverError, Status};

const NAME: &str = "cbc";

/// Serialises every use of CBC in this process (see the module documentation).
pub(crate) static CBC: Mutex<()> = Mutex::new(());

/// CBC reports "no value" as numbers this large (1e50 and friends).
const CBC_INFINITY: f64 = 1e30;

/// The COIN-OR CBC MILP solver. It takes no warm start (no [`crate::WithInitialSolution`]):
/// the binding's `Cbc_setInitialSolution` sets only the LP's starting point, not a MIP start,
/// and CBC returns that point as its answer although it violates rows. `optimize` keeps a warm
/// start's configuration itself when CBC ends with nothing better.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cbc;

impl Solver for Cbc {
    fn name(&self) -> &'static str {
        NAME
    }

    fn solve_validated(
        &self,
        milp: &Milp,
        options: &SolveOptions,
        started: Instant,
    ) -> Result<MilpSolution, SolverError> {
        let outcome = run(milp, options)?;
        let seconds = started.elapsed().as_secs_f64();
        let solution = match outcome {
            Outcome::Incumbent {
                status,
                values,
                objective,
                best_bound,
            } => MilpSolution {
                status,
                values,
                objective,
                best_bound,
                gap: relative_gap(objective, best_bound),
                seconds,
                solver: NAME,
            },
            Outcome::Infeasible => {
                without_incumbent(Status::Infeasible, f64::INFINITY, seconds, NAME)
            }
            Outcome::NoSolution { best_bound } => {
                without_incumbent(Status::NoSolution, best_bound, seconds, NAME)
            }
            Outcome::RelaxationUnbounded => {
                return unbounded_or_infeasible(self, milp, options, started);
            }
        };
        Ok(solution)
    }
}

/// What one CBC run found.
enum Outcome {
    Incumbent {
        status: Status,
        values: Vec<f64>,
        objective: f64,
        best_bound: f64,
    },
    Infeasible,
    NoSolution {
        best_bound: f64,
    },
    RelaxationUnbounded,
}

fn backend(reason: String) -> SolverError {
    SolverError::Backend {
        solver: NAME,
        reason,
    }
}

/// Builds, solves and reads one CBC model, holding [`CBC`] throughout.
fn run(milp: &Milp, options: &SolveOptions) -> Result<Outcome, SolverError> {
    // Declared before the model, so dropped after it: destruction is serialised too.
    let _cbc = CBC.lock().unwrap_or_else(PoisonError::into_inner);
    let mut model = Model::new();
    load(&mut model, milp)?;
    configure(&mut model, options)?;
    model.solve();

    let n = milp.vars.len();
    let values = model.col_solution()[..n].to_vec();
    let best_bound = from_cbc(model.best_possible_value());
    let status = model.status();
    let secondary = model.secondary_status();
    if status == CbcStatus::Abandoned {
        return Err(backend(
            "CBC abandoned the search (numerical trouble)".into(),
        ));
    }
    if model.is_continuous_unbounded() || secondary == SecondaryStatus::LinearRelaxationUnbounded {
        return Ok(Outcome::RelaxationUnbounded);
    }
    if model.is_proven_infeasible() {
        return Ok(Outcome::Infeasible);
    }
    // CBC holds an incumbent exactly when its objective value is not its 1e50 sentinel.
    let reported = model.obj_value();
    let has_incumbent = reported.abs() < CBC_INFINITY && values.iter().all(|x| x.is_finite());
    match status {
        // The search completed: proven optimal, or stopped within the gap.
        CbcStatus::Finished if has_incumbent => {
            // When the search closed the optimum bounds itself; CBC's bound may be stale.
            let best_bound = if best_bound.is_finite() {
                best_bound.min(reported)
            } else {
                reported
            };
            Ok(Outcome::Incumbent {
                status: Status::Optimal,
                values,
                objective: reported,
                best_bound,
            })
        }
        // Stopped on a limit (time, nodes, solutions) or by an event.
        CbcStatus::Stopped | CbcStatus::UserEvent => {
            if has_incumbent {
                Ok(Outcome::Incumbent {
                    status: Status::TimeLimit,
                    values,
                    objective: reported,
                    best_bound: best_bound.min(reported),
                })
            } else if is_feasible(milp, &values) {
                // No recorded incumbent, but the relaxation's point happens to be feasible.
                let objective = milp.objective.eval(&values);
                Ok(Outcome::Incumbent {
                    status: Status::TimeLimit,
                    values,
                    objective,
                    best_bound: best_bound.min(objective),
                })
            } else {
                Ok(Outcome::NoSolution { best_bound })
            }
        }
        _ => Err(backend(format!(
            "CBC ended without a verdict (status {status:?}, secondary status {secondary:?})"
        ))),
    }
}

/// Passes the MILP column-wise, plus the integer column fixed at 1 that carries the constant.
fn load(model: &mut Model, milp: &Milp) -> Result<(), SolverError> {
    let n = milp.vars.len();
    let mut columns: Vec<Vec<(c_int, f64)>> = vec![Vec::new(); n];
    for (row, constraint) in milp.constraints.iter().enumerate() {
        let row = c_int::try_from(row).map_err(|_| backend("too many constraints".into()))?;
        for &(var, coef) in &constraint.terms {
            let column = &mut columns[var.0];
            match column.last_mut() {
                Some(last) if last.0 == row => last.1 += coef,
                _ => column.push((row, coef)),
            }
        }
    }
    let mut start: Vec<c_int> = Vec::with_capacity(n + 2);
    let mut index = Vec::new();
    let mut value = Vec::new();
    start.push(0);
    for column in &columns {
        for &(row, coef) in column {
            index.push(row);
            value.push(coef);
        }
        start.push(c_int::try_from(index.len()).map_err(|_| backend("too many nonzeros".into()))?);
    }
    // The constant column: no constraint entries.
    start.push(*start.last().unwrap_or(&0));

    let mut lower: Vec<f64> = milp.vars.iter().map(|v| v.lower).collect();
    let mut upper: Vec<f64> = milp.vars.iter().map(|v| v.upper).collect();
    let mut cost = vec![0.0; n];
    for &(var, coef) in &milp.objective.terms {
        cost[var.0] += coef;
    }
    lower.push(1.0);
    upper.push(1.0);
    cost.push(milp.objective.constant);

    let (row_lower, row_upper): (Vec<f64>, Vec<f64>) = milp
        .constraints
        .iter()
        .map(|c| match c.sense {
            Sense::Le => (f64::NEG_INFINITY, c.rhs),
            Sense::Ge => (c.rhs, f64::INFINITY),
            Sense::Eq => (c.rhs, c.rhs),
        })
        .unzip();
    model.load_problem(
        n + 1,
        milp.constraints.len(),
        &start,
        &index,
        &value,
        Some(&lower),
        Some(&upper),
        Some(&cost),
        Some(&row_lower),
        Some(&row_upper),
    );
    model.set_obj_sense(CbcSense::Minimize);
    for (i, var) in milp.vars.iter().enumerate() {
        if var.integer {
            model.set_integer(i);
        }
    }
    model.set_integer(n);
    Ok(())
}

fn configure(model: &mut Model, options: &SolveOptions) -> Result<(), SolverError> {
    let mut set = |name: &str, value: String| -> Result<(), SolverError> {
        let name = CString::new(name).map_err(|_| backend(format!("bad parameter {name}")))?;
        let value = CString::new(value).map_err(|_| backend("bad parameter value".into()))?;
        model.set_parameter(&name, &value);
        Ok(())
    };
    let log = if options.verbose { "1" } else { "0" };
    set("log", log.into())?;
    set("slogLevel", log.into())?;
    set("ratioGap", number(options.relative_gap))?;
    // Small enough that the relative gap governs (objectives are in microseconds).
    set("allowableGap", number(1e-9))?;
    if let Some(limit) = options.time_limit {
        // Wall-clock seconds, as for every backend (CBC counts CPU time by default).
        set("timeMode", "elapsed".into())?;
        set("seconds", number(limit))?;
    }
    if let Some(threads) = options.threads.filter(|&t| t > 1) {
        set("threads", threads.to_string())?;
    }
    model.set_log_level(if options.verbose { 1 } else { 0 });
    Ok(())
}

/// A number as CBC's parameter parser reads it (plain decimal or exponent, never `inf`).
fn number(x: f64) -> String {
    format!("{x:e}")
}

/// CBC's huge sentinels as infinities.
fn from_cbc(x: f64) -> f64 {
    if x >= CBC_INFINITY {
        f64::INFINITY
    } else if x <= -CBC_INFINITY {
        f64::NEG_INFINITY
    } else {
        x
    }
}
