//! `absinthe verify PROGRAM --solution SOL`: exact certificates for a solution file.

use std::path::PathBuf;
use std::process::ExitCode;

use absinthe_measure::progress::Progress;
use absinthe_model::output::solution::Solution;
use absinthe_model::FileError;
use absinthe_solvers::certify::{Query, Verdict};
use absinthe_solvers::verify::{verify, Checks};
use clap::Args;

use crate::args::{load, MachineArg, SearchArgs};
use crate::output::TableOrJson;

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
// `--ranks`, `--inline` and `--no-inline` come with the search flags; verify refuses them, so
// its help leaves them out.
#[command(
    verbatim_doc_comment,
    mut_arg("ranks", |a| a.hide(true)),
    mut_arg("inline", |a| a.hide(true)),
    mut_arg("no_inline", |a| a.hide(true))
)]
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
    #[arg(long, value_enum, default_value_t = TableOrJson::Table)]
    pub format: TableOrJson,
}

/// The SMT encoding of the optimality query (`--smt-encoding`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum QueryArg {
    /// The model with genuine products (QF_NIRA).
    Nonlinear,
    /// The linearized digits MILP in exact rationals (QF_LIRA).
    Linear,
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
    args.search.refuse_ranks("verify")?;
    if args.search.inline.is_some() || args.search.no_inline {
        anyhow::bail!(
            "--inline and --no-inline choose the inline set a solve searches; verify certifies within the solution's own (`inline:`): drop them"
        );
    }
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
    // A configuration the file does not describe consistently is an error at its place in the
    // file, as for codegen and bench, not a verdict.
    solution
        .configuration(&analysis)
        .map_err(|d| FileError::new(&args.solution, d))?;
    let search = &args.search;
    let checks = Checks {
        soundness: !args.skip.contains(&Skip::Soundness),
        optimality: !args.skip.contains(&Skip::Optimality),
        query: match args.smt_encoding {
            QueryArg::Nonlinear => Query::Nonlinear,
            QueryArg::Linear => Query::Linear,
        },
    };
    let _progress = Progress::start(format!("verifying {}", args.solution.display()));
    let report = verify(
        (&program.name, args.solution.display().to_string()),
        (&analysis, &view),
        &solution,
        (&search.milp_options(&program)?, &search.solve_options()?),
        checks,
    )?;
    crate::output::print(args.format, &report, &report)?;
    Ok(match report.verdict() {
        Verdict::Certified => ExitCode::SUCCESS,
        Verdict::Rejected => ExitCode::from(1),
        Verdict::Unknown => ExitCode::from(2),
    })
}
