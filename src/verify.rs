//! `absinthe verify PROGRAM --solution SOL`: exact certificates for a solution file.
//!
//! 1. **estimate**: the configuration is re-evaluated in exact rational arithmetic
//!    (`model::exact`) and checked against the program's restrictions, the feasibility
//!    constraints (decided exactly) and the file's `estimate_seconds`.
//! 2. **soundness**: for every binary-digit product and exact maximum of this program's MILP,
//!    Z3 proves that no assignment of its rows within the bounds gives the output another value
//!    than the product (maximum) (`model::smt::soundness_queries`, each UNSAT).
//! 3. **optimality**: Z3 is asked for a point of the exact linear encoding with
//!    `objective < estimate × (1 − gap)`; UNSAT certifies the solution optimal within the gap,
//!    SAT yields a better configuration, which is re-evaluated exactly and shown.
//!
//! A time limit turns an unfinished proof into "unknown". Exit status: 0 when everything asked
//! is certified, 1 when the solution is rejected (or a proof fails), 2 when something is
//! unknown.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use absinthe_model::analysis::Analysis;
use absinthe_model::cost::Configuration;
use absinthe_model::exact::{decimal, display, exact_cost, to_f64, Rational};
use absinthe_model::machine::ModelMachine;
use absinthe_model::milp::{milp, OBJECTIVE_SCALE};
use absinthe_model::smt::{linear_absinthe, nonlinear, soundness_queries, QueryKind};
use absinthe_model::solution::Solution;
use absinthe_model::FileError;
use absinthe_solvers::z3::{check, SmtStatus};
use clap::Args;
use serde::Serialize;

use crate::args::load;
use crate::args::{MachineArg, SearchArgs};
use crate::output::human_seconds;
use crate::output::{table, Format};

/// Certify a solution file exactly: its estimate, the linearization, its optimality.
///
/// Re-evaluates the configuration in rational arithmetic, proves with Z3 that every product
/// and maximum of the MILP is linearized exactly for this program, and asks Z3 for a
/// configuration better than the solution by more than the gap. `--time-limit` applies to
/// each Z3 query; an unfinished proof reads "unknown".
///
/// Examples:
///   absinthe verify configs/hdiff.yaml --solution hdiff.solution.yaml
///   absinthe verify configs/heat4.yaml --solution s.yaml --skip soundness --time-limit 30
#[derive(Args, Clone)]
#[command(verbatim_doc_comment)]
pub struct VerifyArgs {
    /// The program file.
    pub program: PathBuf,
    #[command(flatten)]
    pub machine: MachineArg,
    /// The solution file (YAML or JSON) to verify.
    #[arg(long, short = 's')]
    pub solution: PathBuf,
    #[command(flatten)]
    pub search: SearchArgs,
    /// Steps to leave out: soundness, optimality (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "STEP,...")]
    pub skip: Vec<String>,
    /// The encoding of the optimality query: the model with genuine products of tile counts
    /// (`nonlinear`, exact in the machine file's decimals; Z3 decides it far faster), or the
    /// linearized ABSINTHE MILP (`linear`, coefficients as the MILP's decimals). (`--encoding`
    /// is the MILP encoding of solving; verification always proves the digits MILP's rows.)
    #[arg(long, value_enum, default_value_t = Query::Nonlinear)]
    pub smt_encoding: Query,
    /// Output format on standard output (table or json).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// The SMT encoding of the optimality query.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
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
struct Step {
    step: &'static str,
    verdict: Verdict,
    detail: String,
    seconds: f64,
}

#[derive(Clone, Debug, Serialize)]
struct BetterConfiguration {
    groups: Vec<usize>,
    tiles: Vec<[usize; 3]>,
    exact_seconds: String,
    seconds: f64,
}

#[derive(Clone, Debug, Serialize)]
struct Report {
    program: String,
    solution: String,
    gap: f64,
    certified: bool,
    steps: Vec<Step>,
    #[serde(skip_serializing_if = "Option::is_none")]
    better: Option<BetterConfiguration>,
}

/// Relative tolerance between the file's `estimate_seconds` (an f64 printed by `solve`) and the
/// exact cost.
const ESTIMATE_TOLERANCE: f64 = 1e-9;

fn step(name: &'static str, verdict: Verdict, detail: String, started: Instant) -> Step {
    Step {
        step: name,
        verdict,
        detail,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// Step 1: the configuration, its feasibility and its estimate, exactly.
fn check_estimate(
    analysis: &Analysis,
    view: &ModelMachine,
    solution: &Solution,
    options: &absinthe_model::milp::MilpOptions,
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
    if !options.admits(&config, analysis.domain) {
        return reject(
            "the configuration violates the program's constraints (fixed groups or tile-count bounds)"
                .to_string(),
        );
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
            if !absinthe_model::exact::agree_relative(&claimed, exact, &tolerance) {
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
fn check_soundness(
    analysis: &Analysis,
    view: &ModelMachine,
    options: &absinthe_model::milp::MilpOptions,
    time_limit: Option<f64>,
) -> anyhow::Result<Step> {
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
fn check_optimality(
    analysis: &Analysis,
    view: &ModelMachine,
    options: &absinthe_model::milp::MilpOptions,
    exact: &Rational,
    gap: f64,
    time_limit: Option<f64>,
    query: Query,
) -> anyhow::Result<(Step, Option<BetterConfiguration>)> {
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
            let config = smt
                .decode(|name| outcome.value(name))
                .ok_or_else(|| anyhow::anyhow!("Z3's model lacks the cut or tile-count values"))?;
            config
                .check_shape(analysis.stencils.len(), analysis.domain)
                .map_err(|e| anyhow::anyhow!("Z3's configuration is malformed: {e}"))?;
            let cost = exact_cost(analysis, view, &config);
            if cost.infeasible.is_some() || cost.total >= bound_seconds {
                anyhow::bail!(
                    "BUG: Z3 found a MILP point with {below} whose configuration (groups {:?}, tiles {:?}) costs {} s exactly{}: the linearization disagrees with the model",
                    config.groups,
                    config.tiles,
                    display(&cost.total),
                    cost.infeasible.map(|w| format!(" and is infeasible ({w})")).unwrap_or_default()
                );
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

pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    for s in &args.skip {
        if s != "soundness" && s != "optimality" {
            anyhow::bail!("--skip: unknown step `{s}`; the steps are soundness and optimality");
        }
    }
    let (program, analysis) = load(&args.program)?;
    let (_, view) = args.machine.load(&program)?;
    let options = args.search.milp_options(&program)?;
    let solve_options = args.search.solve_options()?;
    let solution = Solution::load(&args.solution).map_err(anyhow::Error::new)?;
    if solution.program != program.name {
        return Err(FileError::single(
            &args.solution,
            absinthe_model::Diagnostic::new(
                "program",
                format!(
                    "the solution is for `{}`, not `{}`",
                    solution.program, program.name
                ),
            ),
        )
        .into());
    }
    let mut steps = Vec::new();
    let mut better = None;
    let (estimate, checked) = check_estimate(&analysis, &view, &solution, &options);
    steps.push(estimate);
    if let Some((_, exact)) = &checked {
        if !args.skip.iter().any(|s| s == "soundness") {
            steps.push(check_soundness(
                &analysis,
                &view,
                &options,
                solve_options.time_limit,
            )?);
        }
        if !args.skip.iter().any(|s| s == "optimality") {
            let (s, b) = check_optimality(
                &analysis,
                &view,
                &options,
                exact,
                solve_options.relative_gap,
                solve_options.time_limit,
                args.smt_encoding,
            )?;
            steps.push(s);
            better = b;
        }
    }
    let certified = steps.iter().all(|s| s.verdict == Verdict::Certified);
    let report = Report {
        program: program.name.clone(),
        solution: args.solution.display().to_string(),
        gap: solve_options.relative_gap,
        certified,
        steps,
        better,
    };
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        _ => print_report(&report),
    }
    Ok(if certified {
        ExitCode::SUCCESS
    } else if report.steps.iter().any(|s| s.verdict == Verdict::Rejected) {
        ExitCode::from(1)
    } else {
        ExitCode::from(2)
    })
}

fn print_report(report: &Report) {
    println!("verify {} against {}:", report.solution, report.program);
    let rows: Vec<Vec<String>> = report
        .steps
        .iter()
        .map(|s| {
            vec![
                s.step.to_string(),
                format!("{:?}", s.verdict).to_lowercase(),
                human_seconds(s.seconds),
                s.detail.clone(),
            ]
        })
        .collect();
    print!("{}", table(&["step", "verdict", "time", "detail"], &rows));
    if let Some(b) = &report.better {
        println!(
            "\nbetter configuration: groups {:?}, tiles {:?}, exact cost {} ({})",
            b.groups,
            b.tiles,
            b.exact_seconds,
            human_seconds(b.seconds)
        );
    }
    println!(
        "\n{}",
        if report.certified {
            "certified"
        } else if report.steps.iter().any(|s| s.verdict == Verdict::Rejected) {
            "REJECTED"
        } else {
            "not certified (unknown)"
        }
    );
}
