//! `absinthe compare PROGRAM --solvers cbc,highs,z3`: the same MILP on several backends, side
//! by side; the optimal objectives must agree within the gap, or this is an error.

use std::path::PathBuf;
use std::process::ExitCode;

use absinthe_solvers::compare::compare;
use absinthe_solvers::method::Method;
use clap::Args;

use crate::args::{load_on, MachineArg, SearchArgs};
use crate::output::TableOrJson;
use crate::solving::inline_choice;

/// Solve one program with several backends and compare them.
///
/// Prints, per solver, its status, the objective (`evaluate` of its configuration), its gap,
/// wall time and the MILP's size. Solvers that finished (status optimal) must agree within the
/// relative gap; a disagreement exits with status 1.
///
/// `dp` (the exact dynamic program, no MILP) is one of the solvers; the MILP backends use
/// --encoding (ranges by default, digits for the ABSINTHE formulation).
///
/// Examples:
///   absinthe compare configs/heat4.yaml --solvers dp,cbc,highs,z3
///   absinthe compare configs/heat4.yaml --encoding digits --time-limit 60
///   absinthe compare configs/hdiff.yaml --solvers cbc,highs --time-limit 60 --format json
#[derive(Args, Clone)]
// `--ranks` comes with the search flags; this command refuses it, so its help leaves it out.
#[command(verbatim_doc_comment, mut_arg("ranks", |a| a.hide(true)))]
pub struct CompareArgs {
    /// The program file.
    pub program: PathBuf,
    #[command(flatten)]
    pub machine: MachineArg,
    #[command(flatten)]
    pub search: SearchArgs,
    /// The solvers to compare, comma-separated [default: dp and every MILP backend in this build].
    #[arg(long, value_delimiter = ',', value_name = "SOLVER,...", value_parser = crate::args::parse_method)]
    pub solvers: Option<Vec<Method>>,
    /// Output format on standard output (table or json).
    #[arg(long, value_enum, default_value_t = TableOrJson::Table)]
    pub format: TableOrJson,
}

pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    args.search.refuse_ranks("compare")?;
    if let Some(solvers) = &args.solvers {
        if let Some(n) = (1..solvers.len()).find(|&n| solvers[..n].contains(&solvers[n])) {
            anyhow::bail!("--solvers names {} twice", solvers[n]);
        }
    }
    let (original, original_analysis, _, view) = load_on(&args.program, &args.machine)?;
    let options = args.search.milp_options(&original)?;
    let solve_options = args.search.solve_options()?;
    let inline = inline_choice(&original, &original_analysis, &view, &args.search)?;
    let report = compare(
        &original.name,
        (&inline, &view),
        (&options, &solve_options),
        &args.solvers.clone().unwrap_or_else(Method::available),
        &|n| eprintln!("{n}"),
    );
    crate::output::print(args.format, &report, &report)?;
    if let Some(error) = report.error() {
        eprintln!("error: {error}");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
