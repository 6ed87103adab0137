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

use absinthe_model::output::solution::Solution;
use absinthe_model::FileError;
use absinthe_solvers::certify::{
    check_estimate, check_optimality, check_soundness, BetterConfiguration, Query, Step, Verdict,
};
use clap::Args;
use serde::Serialize;

use crate::args::load;
use crate::args::{MachineArg, SearchArgs};
use crate::output::Format;
use absinthe_model::output::text::human_seconds;
use absinthe_model::output::text::table;

/// Certify a solution file exactly: its estimate, the linearization, its optimality.
///
/// Re-evaluates the configuration in rational arithmetic, proves with Z3 that every product
/// and maximum of the MILP is linearized exactly for this program, and asks Z3 for a
/// configuration better than the solution by more than the gap. `--time-limit` applies to
/// each Z3 query; an unfinished proof reads "unknown". A solution with stencils inlined
/// (`inline:`) is certified on the program with them inlined: optimality is proven within that
/// inline set (the set itself was chosen by `solve`'s search over inline sets).
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
    #[arg(long, value_enum, value_delimiter = ',', value_name = "STEP,...")]
    pub skip: Vec<Skip>,
    /// The encoding of the optimality query: the model with genuine products of tile counts
    /// (`nonlinear`, exact in the machine file's decimals; Z3 decides it far faster), or the
    /// linearized ABSINTHE MILP (`linear`, coefficients as the MILP's decimals). (`--encoding`
    /// is the MILP encoding of solving; verification always proves the digits MILP's rows.)
    #[arg(long, value_enum, default_value_t = QueryArg::Nonlinear)]
    pub smt_encoding: QueryArg,
    /// Output format on standard output (table or json).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// The SMT encoding of the optimality query (`--smt-encoding`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum QueryArg {
    /// The model with genuine products (QF_NIRA).
    Nonlinear,
    /// The linearized digits MILP in exact rationals (QF_LIRA).
    Linear,
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

/// The steps `verify` may leave out (`--skip`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Skip {
    /// The linearization's soundness queries.
    Soundness,
    /// The optimality query.
    Optimality,
}

pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let skips = |step: Skip| args.skip.contains(&step);
    let (original, _) = load(&args.program)?;
    let solution = Solution::load(&args.solution).map_err(anyhow::Error::new)?;
    // A solution with stencils inlined describes (and is certified on) the rewritten program:
    // soundness and optimality hold within its inline set.
    let program = solution
        .program_for(&original)
        .map_err(|d| FileError::new(&args.solution, d))?;
    let (_, view) = args.machine.load_for_solution(&program, solution.model)?;
    let analysis = absinthe_model::Analysis::weighed(&program, view.params.operations)
        .map_err(|d| FileError::new(&args.solution, d))?;
    let options = args.search.milp_options(&program)?;
    let solve_options = args.search.solve_options()?;
    if view.gpu && !(skips(Skip::Soundness) && skips(Skip::Optimality)) {
        anyhow::bail!(
            "{}; on a GPU machine `verify` checks the estimate only: add --skip soundness --skip optimality",
            absinthe_model::encodings::milp::GPU_DIGITS_UNSUPPORTED
        );
    }
    let mut steps = Vec::new();
    let mut better = None;
    let (estimate, checked) = check_estimate(&analysis, &view, &solution, &options);
    steps.push(estimate);
    if let Some((_, exact)) = &checked {
        if !skips(Skip::Soundness) {
            steps.push(check_soundness(
                &analysis,
                &view,
                &options,
                solve_options.time_limit,
            )?);
        }
        if !skips(Skip::Optimality) {
            let (s, b) = check_optimality(
                &analysis,
                &view,
                &options,
                exact,
                solve_options.relative_gap,
                solve_options.time_limit,
                match args.smt_encoding {
                    QueryArg::Nonlinear => Query::Nonlinear,
                    QueryArg::Linear => Query::Linear,
                },
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
