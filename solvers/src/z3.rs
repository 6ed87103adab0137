//! The Z3 backend (cargo feature `z3`), through the `z3` crate against the system libz3.
//!
//! Z3 works on the exact encodings of `absinthe_model::encodings::smt`: a [`Milp`] becomes the SMT-LIB
//! text of [`smt::linear`] (every coefficient the exact rational of its decimal), which Z3
//! parses; [`Z3`] then minimises it with Z3's `Optimize`, making Z3 a third [`Solver`] for
//! comparisons. [`check`] decides the satisfiability of any [`Smt`] (the certificates of
//! `absinthe verify`), and [`minimise`] optimises one.
//!
//! Z3 optimises exactly, but its `Optimize` answer is only taken as an incumbent: the backend
//! reports `optimal` once a satisfiability check of "objective < incumbent x (1 - gap)" is
//! unsat (Debian's Z3 4.8 was seen to claim optimality for a far-from-optimal point). A time
//! limit interrupts the run (a watchdog thread calls
//! Z3's interrupt, besides the `timeout` parameter): satisfiability then reads `unknown`, and an
//! interrupted optimisation reports the best model Z3 holds, if any, with no proven bound.

use std::collections::HashMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ::z3::ast::{Bool, Int, Real};
use ::z3::{Config, Context, Model, Optimize, SatResult};
use absinthe_model::cost_model::exact::{decimal, to_f64, Rational};
use absinthe_model::encodings::lp::Milp;
use absinthe_model::encodings::smt::{self, parse_value, Smt, Sort, OBJECTIVE};
use absinthe_model::formats::limits::MAX_TIME_LIMIT;
use num_traits::Signed;

use crate::backend::is_feasible;
use crate::{relative_gap, MilpSolution, SolveOptions, Solver, SolverError, Status};

const NAME: &str = "z3";

/// Z3's `Optimize` on the exact linear encoding of a MILP. It takes no warm start (no
/// [`crate::WithInitialSolution`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Z3;

impl Solver for Z3 {
    fn name(&self) -> &'static str {
        NAME
    }

    fn solve_validated(
        &self,
        milp: &Milp,
        options: &SolveOptions,
        started: Instant,
    ) -> Result<MilpSolution, SolverError> {
        let encoded = smt::linear(milp);
        let mut outcome = minimise(&encoded, options.time_limit)?;
        // Z3's `Optimize` (4.8 as shipped by Debian) has been seen to report `sat` (optimal)
        // for a point far from the optimum on a MILP of a few hundred variables. Its claim is
        // therefore only an incumbent until a plain satisfiability check of
        // "objective < incumbent x (1 - gap)" answers unsat. A sat answer is a better point:
        // keep searching from it (linear search) until unsat or the time limit.
        let mut proven = false;
        if outcome.status == SmtStatus::Sat {
            while let Some(incumbent) = outcome.objective.clone() {
                let remaining = options
                    .time_limit
                    .map(|t| t - started.elapsed().as_secs_f64());
                if remaining.is_some_and(|r| r <= 0.05) {
                    break;
                }
                // incumbent - |incumbent| x gap: below the incumbent for either sign.
                let threshold = &incumbent - incumbent.abs() * decimal(options.relative_gap);
                let mut below = encoded.clone();
                below.objective_below(&threshold);
                let check_outcome = check(&below, remaining)?;
                match check_outcome.status {
                    SmtStatus::Unsat => {
                        proven = true;
                        break;
                    }
                    SmtStatus::Sat
                        if check_outcome
                            .objective
                            .as_ref()
                            .is_some_and(|o| *o < incumbent) =>
                    {
                        outcome.values = check_outcome.values;
                        outcome.objective = check_outcome.objective;
                    }
                    _ => break,
                }
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        let values: Vec<f64> = match &outcome.values {
            Some(values) => milp
                .vars
                .iter()
                .map(|v| values.get(&v.name).map_or(v.lower.max(0.0), to_f64))
                .collect(),
            None => Vec::new(),
        };
        let objective = outcome.objective.as_ref().map(to_f64);
        let (status, objective, best_bound) = match (&outcome.status, objective) {
            (SmtStatus::Unsat, _) => (Status::Infeasible, f64::INFINITY, f64::INFINITY),
            (_, Some(o)) if proven => (Status::Optimal, o, o - o.abs() * options.relative_gap),
            // An interrupted `Optimize` may hold a model that breaks the rows: no incumbent.
            (_, Some(o)) if !values.is_empty() && is_feasible(milp, &values) => {
                (Status::TimeLimit, o, f64::NEG_INFINITY)
            }
            _ => (Status::NoSolution, f64::INFINITY, f64::NEG_INFINITY),
        };
        Ok(MilpSolution {
            status,
            values: if status.has_values() {
                values
            } else {
                Vec::new()
            },
            objective,
            best_bound,
            gap: if status.has_values() {
                relative_gap(objective, best_bound)
            } else {
                f64::INFINITY
            },
            seconds,
            solver: NAME,
        })
    }
}

/// How a satisfiability question ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SmtStatus {
    Sat,
    Unsat,
    /// Interrupted by the time limit, or Z3 gave up; the reason Z3 gives.
    Unknown(String),
}

impl std::fmt::Display for SmtStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SmtStatus::Sat => f.write_str("sat"),
            SmtStatus::Unsat => f.write_str("unsat"),
            SmtStatus::Unknown(why) => write!(f, "unknown ({why})"),
        }
    }
}

/// What Z3 answered.
#[derive(Clone, Debug)]
pub struct SmtOutcome {
    pub status: SmtStatus,
    /// Every declared constant's value in the model, when there is one.
    pub values: Option<HashMap<String, Rational>>,
    /// The value of [`OBJECTIVE`] in the model, when declared.
    pub objective: Option<Rational>,
    pub seconds: f64,
}

impl SmtOutcome {
    /// The value of a constant in the model.
    pub fn value(&self, name: &str) -> Option<Rational> {
        self.values.as_ref()?.get(name).cloned()
    }
}

fn backend(reason: impl Into<String>) -> SolverError {
    SolverError::Backend {
        solver: NAME,
        reason: reason.into(),
    }
}

fn context(time_limit: Option<f64>) -> Result<Context, SolverError> {
    let mut config = Config::new();
    config.set_model_generation(true);
    if let Some(limit) = time_limit {
        if !(limit > 0.0 && limit <= MAX_TIME_LIMIT) {
            return Err(SolverError::InvalidOptions(format!(
                "the time limit must be a positive number of seconds, at most {MAX_TIME_LIMIT}, found {limit}"
            )));
        }
        config.set_timeout_msec((limit * 1000.0).ceil() as u64);
    }
    Ok(Context::new(&config))
}

/// A Z3 solver holding the script's assertions; fails when Z3 did not read them all (the
/// context's error handler is silent, so a parse error shows as missing assertions).
fn parse<'ctx>(ctx: &'ctx Context, smt: &Smt) -> Result<::z3::Solver<'ctx>, SolverError> {
    let solver = ::z3::Solver::new(ctx);
    solver.from_string(smt.script());
    let read = solver.get_assertions().len();
    if read != smt.assertions.len() {
        return Err(backend(format!(
            "Z3 read {read} of the {} assertions of the SMT-LIB text: the encoding is malformed",
            smt.assertions.len()
        )));
    }
    Ok(solver)
}

/// Runs `work` with a watchdog that interrupts Z3 after `time_limit`.
fn with_limit<T>(ctx: &Context, time_limit: Option<f64>, work: impl FnOnce() -> T) -> T {
    let Some(limit) = time_limit else {
        return work();
    };
    let handle = ctx.handle();
    std::thread::scope(|scope| {
        let (done, wait) = mpsc::channel::<()>();
        scope.spawn(move || {
            let grace = Duration::from_secs_f64(limit + 0.5);
            if let Err(mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(grace) {
                handle.interrupt();
            }
        });
        let result = work();
        drop(done);
        result
    })
}

fn read_model(ctx: &Context, smt: &Smt, model: &Model) -> HashMap<String, Rational> {
    let mut values = HashMap::new();
    for (name, sort) in &smt.declarations {
        let text = match sort {
            Sort::Int => model
                .eval(&Int::new_const(ctx, name.as_str()), true)
                .map(|v| v.to_string()),
            Sort::Real => model
                .eval(&Real::new_const(ctx, name.as_str()), true)
                .map(|v| v.to_string()),
        };
        if let Some(v) = text.as_deref().and_then(parse_value) {
            values.insert(name.clone(), v);
        }
    }
    values
}

/// Whether `smt`'s assertions are satisfiable, with the model when they are.
pub fn check(smt: &Smt, time_limit: Option<f64>) -> Result<SmtOutcome, SolverError> {
    let started = Instant::now();
    let ctx = context(time_limit)?;
    let solver = parse(&ctx, smt)?;
    let result = with_limit(&ctx, time_limit, || solver.check());
    let (status, values) = match result {
        SatResult::Sat => (
            SmtStatus::Sat,
            solver.get_model().map(|m| read_model(&ctx, smt, &m)),
        ),
        SatResult::Unsat => (SmtStatus::Unsat, None),
        SatResult::Unknown => (
            SmtStatus::Unknown(
                solver
                    .get_reason_unknown()
                    .unwrap_or_else(|| "no reason given".into()),
            ),
            None,
        ),
    };
    let objective = values.as_ref().and_then(|v| v.get(OBJECTIVE).cloned());
    Ok(SmtOutcome {
        status,
        values,
        objective,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Minimises [`OBJECTIVE`] subject to `smt`'s assertions with Z3's `Optimize`. `Sat` means
/// optimal; an interrupted run is `Unknown` with the best model Z3 holds, if any.
pub fn minimise(smt: &Smt, time_limit: Option<f64>) -> Result<SmtOutcome, SolverError> {
    if !smt.declarations.iter().any(|(n, _)| n == OBJECTIVE) {
        return Err(backend(format!(
            "the SMT problem declares no `{OBJECTIVE}` to minimise"
        )));
    }
    let started = Instant::now();
    let ctx = context(time_limit)?;
    let solver = parse(&ctx, smt)?;
    let parsed: Vec<Bool> = solver.get_assertions();
    let optimize = Optimize::new(&ctx);
    for a in &parsed {
        optimize.assert(a);
    }
    let objective = Real::new_const(&ctx, OBJECTIVE);
    optimize.minimize(&objective);
    let result = with_limit(&ctx, time_limit, || optimize.check(&[]));
    let model = match result {
        SatResult::Unsat => None,
        _ => optimize.get_model(),
    };
    let values = model.map(|m| read_model(&ctx, smt, &m));
    let status = match result {
        SatResult::Sat => SmtStatus::Sat,
        SatResult::Unsat => SmtStatus::Unsat,
        SatResult::Unknown => SmtStatus::Unknown(
            optimize
                .get_reason_unknown()
                .unwrap_or_else(|| "no reason given".into()),
        ),
    };
    // An interrupted run may hold a partial model; keep it only if it names the objective.
    let objective_value = values.as_ref().and_then(|v| v.get(OBJECTIVE).cloned());
    Ok(SmtOutcome {
        status,
        values: if objective_value.is_some() {
            values
        } else {
            None
        },
        objective: objective_value,
        seconds: started.elapsed().as_secs_f64(),
    })
}
