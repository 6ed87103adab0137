//! Exact certificates for a configuration (what `absinthe verify` runs):
//!
//! 1. **estimate** ([`check_estimate`]): the configuration is re-evaluated in exact rational
//!    arithmetic (`model::exact`) and checked against the program's restrictions, the feasibility
//!    constraints (decided exactly) and the claimed estimate.
//! 2. **soundness** ([`check_soundness`]): for every binary-digit product and exact maximum of
//!    the program's digits MILP, Z3 proves that no assignment of its rows within the bounds gives
//!    the output another value (`model::smt::soundness_queries`, each UNSAT).
//! 3. **optimality** ([`check_optimality`]): Z3 is asked for a point with
//!    `objective < estimate × (1 − gap)`; UNSAT certifies the configuration optimal within the
//!    gap, SAT yields a better configuration, re-evaluated exactly.
//!
//! A time limit turns an unfinished proof into [`Verdict::Unknown`].

use std::time::Instant;

use absinthe_model::cost_model::evaluate::Configuration;
use absinthe_model::cost_model::exact::{decimal, display, exact_cost, to_f64, Rational};
use absinthe_model::encodings::milp::{milp, OBJECTIVE_SCALE};
use absinthe_model::encodings::smt::{linear_absinthe, nonlinear, soundness_queries, QueryKind};
use absinthe_model::formats::machine::ModelMachine;
use absinthe_model::language::analysis::Analysis;
use absinthe_model::output::solution::Solution;
use serde::Serialize;

use crate::z3::{check, SmtStatus};
use crate::SolverError;

/// Why a certificate could not be produced (as opposed to a verdict).
#[derive(Debug, thiserror::Error)]
pub enum CertifyError {
    #[error(transparent)]
    Solver(#[from] SolverError),
    #[error("BUG: {0}")]
    Bug(String),
    /// Soundness or optimality asked on a GPU machine, which no SMT encoding models.
    #[error(
        "{}; on a GPU machine `verify` checks the estimate only: add --skip soundness --skip optimality",
        absinthe_model::encodings::milp::GPU_DIGITS_UNSUPPORTED
    )]
    Gpu,
    /// The linear optimality query on a program with a sweep, which the digits MILP refuses.
    #[error(
        "{}: verify with the nonlinear query (the default)",
        absinthe_model::encodings::milp::SWEEP_DIGITS_UNSUPPORTED
    )]
    Sweep,
}

/// The SMT encoding of the optimality query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    /// The model with genuine products (QF_NIRA).
    Nonlinear,
    /// The linearized digits MILP in exact rationals (QF_LIRA).
    Linear,
}

/// The outcome of one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Certified,
    Rejected,
    Unknown,
}

#[derive(Clone, Debug, Serialize)]
pub struct Step {
    pub step: &'static str,
    pub verdict: Verdict,
    pub detail: String,
    pub seconds: f64,
}

/// A configuration cheaper than the solution by more than the gap.
#[derive(Clone, Debug, Serialize)]
pub struct BetterConfiguration {
    pub groups: Vec<usize>,
    pub tiles: Vec<[usize; 3]>,
    pub exact_seconds: String,
    pub seconds: f64,
}

/// Relative tolerance between the file's `estimate_seconds` (an f64 printed by `solve`) and the
/// exact cost.
pub const ESTIMATE_TOLERANCE: f64 = 1e-9;

fn step(name: &'static str, verdict: Verdict, detail: String, started: Instant) -> Step {
    Step {
        step: name,
        verdict,
        detail,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// Step 1: the configuration, its feasibility and its estimate, exactly.
pub fn check_estimate(
    analysis: &Analysis,
    view: &ModelMachine,
    solution: &Solution,
    options: &absinthe_model::cost_model::options::MilpOptions,
) -> (Step, Option<(Configuration, Rational)>) {
    let started = Instant::now();
    let reject = |detail: String| (step("estimate", Verdict::Rejected, detail, started), None);
    let config = match solution.configuration(analysis) {
        Ok(c) => c,
        Err(diags) => {
            let why: Vec<String> = diags
                .iter()
                .map(|d| format!("{}: {}", d.path, d.message))
                .collect();
            return reject(format!("malformed configuration: {}", why.join("; ")));
        }
    };
    if let Some(why) = options.space.refusal(&config, analysis) {
        return reject(format!("the configuration violates a restriction: {why}"));
    }
    let cost = exact_cost(analysis, view, &config);
    if let Some(why) = &cost.infeasible {
        return reject(format!("infeasible: {why}"));
    }
    let exact = &cost.total;
    let detail = match solution.estimate_seconds {
        None => format!(
            "feasible; exact cost {} s (the file gives no estimate)",
            display(exact)
        ),
        Some(estimate) => {
            let claimed = decimal(estimate);
            let tolerance = decimal(ESTIMATE_TOLERANCE);
            if !absinthe_model::cost_model::exact::agree_relative(&claimed, exact, &tolerance) {
                return reject(format!(
                    "wrong estimate: the file says {estimate:e} s but the exact cost is {} s (relative difference {:e})",
                    display(exact),
                    ((estimate - to_f64(exact)) / to_f64(exact)).abs()
                ));
            }
            format!(
                "feasible; exact cost {} s = the file's estimate {estimate:e} s within {ESTIMATE_TOLERANCE:e}",
                display(exact)
            )
        }
    };
    (
        step("estimate", Verdict::Certified, detail, started),
        Some((config, exact.clone())),
    )
}

/// Step 2: every product and maximum of the MILP, proved exact by Z3.
pub fn check_soundness(
    analysis: &Analysis,
    view: &ModelMachine,
    options: &absinthe_model::cost_model::options::MilpOptions,
    time_limit: Option<f64>,
) -> Result<Step, CertifyError> {
    let started = Instant::now();
    let encoded = milp(analysis, view, options);
    let queries = soundness_queries(&encoded);
    let (mut products, mut maxima) = (0, 0);
    let mut unknown = Vec::new();
    for q in &queries {
        let outcome = check(&q.smt, time_limit)?;
        match outcome.status {
            SmtStatus::Unsat => {
                if q.kind == QueryKind::Product {
                    products += 1
                } else {
                    maxima += 1
                }
            }
            SmtStatus::Sat => {
                return Ok(step(
                    "soundness",
                    Verdict::Rejected,
                    format!(
                        "the {} `{}` is not exact: Z3 found an assignment of its rows where the output differs from the {}",
                        q.kind, q.name, q.kind
                    ),
                    started,
                ))
            }
            SmtStatus::Unknown(why) => unknown.push(format!("{} ({why})", q.name)),
        }
    }
    if !unknown.is_empty() {
        return Ok(step(
            "soundness",
            Verdict::Unknown,
            format!(
                "{products} products and {maxima} maxima proved exact; unknown within the time limit: {}",
                unknown.join(", ")
            ),
            started,
        ));
    }
    Ok(step(
        "soundness",
        Verdict::Certified,
        format!(
            "all {products} binary-digit products and {maxima} exact maxima proved exact (UNSAT)"
        ),
        started,
    ))
}

/// Step 3: no configuration is better than `exact × (1 - gap)`.
#[allow(clippy::too_many_arguments)]
pub fn check_optimality(
    analysis: &Analysis,
    view: &ModelMachine,
    options: &absinthe_model::cost_model::options::MilpOptions,
    exact: &Rational,
    gap: f64,
    time_limit: Option<f64>,
    query: Query,
) -> Result<(Step, Option<BetterConfiguration>), CertifyError> {
    let started = Instant::now();
    let mut smt = match query {
        Query::Nonlinear => nonlinear(analysis, view, options),
        Query::Linear => linear_absinthe(&milp(analysis, view, options)),
    };
    let factor = decimal(1.0) - decimal(gap);
    let bound_seconds = exact * &factor;
    smt.objective_below(&(&bound_seconds * decimal(OBJECTIVE_SCALE)));
    let outcome = check(&smt, time_limit)?;
    let below = format!(
        "objective < {:e} s (the solution's exact cost × (1 − {gap:e}))",
        to_f64(&bound_seconds)
    );
    match outcome.status {
        SmtStatus::Unsat => Ok((
            step(
                "optimality",
                Verdict::Certified,
                format!("no configuration has {below}: optimal within the gap (UNSAT)"),
                started,
            ),
            None,
        )),
        SmtStatus::Unknown(why) => Ok((
            step(
                "optimality",
                Verdict::Unknown,
                format!("Z3 could not decide whether a configuration has {below}: {why}"),
                started,
            ),
            None,
        )),
        SmtStatus::Sat => {
            let config = smt.decode(|name| outcome.value(name)).ok_or_else(|| {
                CertifyError::Bug("Z3's model lacks the cut or tile-count values".into())
            })?;
            config
                .check_shape(analysis.stencils.len(), analysis.domain)
                .map_err(|e| CertifyError::Bug(format!("Z3's configuration is malformed: {e}")))?;
            let cost = exact_cost(analysis, view, &config);
            if cost.infeasible.is_some() || cost.total >= bound_seconds {
                return Err(CertifyError::Bug(format!(
                    "Z3 found a MILP point with {below} whose configuration (groups {:?}, tiles {:?}) costs {} s exactly{}: the linearization disagrees with the model",
                    config.groups,
                    config.tiles,
                    display(&cost.total),
                    cost.infeasible.map(|w| format!(" and is infeasible ({w})")).unwrap_or_default()
                )));
            }
            let better = BetterConfiguration {
                groups: config.groups.clone(),
                tiles: config.tiles.clone(),
                exact_seconds: display(&cost.total),
                seconds: to_f64(&cost.total),
            };
            Ok((
                step(
                    "optimality",
                    Verdict::Rejected,
                    format!(
                        "suboptimal: groups {:?} tiles {:?} cost {:e} s, less than the solution's {:e} s by more than the gap",
                        config.groups,
                        config.tiles,
                        to_f64(&cost.total),
                        to_f64(exact)
                    ),
                    started,
                ),
                Some(better),
            ))
        }
    }
}
