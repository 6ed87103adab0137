//! `absinthe compare PROGRAM --solvers cbc,highs,z3`: the same MILP on several backends, side
//! by side; the optimal objectives must agree within the gap, or this is an error.

use std::path::PathBuf;
use std::process::ExitCode;

use absinthe_model::cost_model::options::MilpOptions;
use absinthe_model::encodings::lp::MilpSize;
use absinthe_model::encodings::milp::Encoded;
use absinthe_model::formats::machine::ModelMachine;
use absinthe_model::language::analysis::Analysis;
use absinthe_solvers::method::Method;
use absinthe_solvers::optimize::optimize_with;
use absinthe_solvers::{SolveOptions, Status};
use clap::Args;
use serde::Serialize;

use crate::args::load_on;
use crate::args::{MachineArg, SearchArgs};
use crate::output::Format;
use crate::solving::inline_choice;
use absinthe_model::output::text::human_seconds;
use absinthe_model::output::text::table;

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
#[command(verbatim_doc_comment)]
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
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Clone, Debug, Serialize)]
struct Row {
    solver: String,
    status: RowStatus,
    /// `evaluate` of the solver's configuration, seconds.
    objective_seconds: Option<f64>,
    gap: Option<f64>,
    wall_seconds: f64,
    groups: Option<Vec<usize>>,
    tiles: Option<Vec<[usize; 3]>>,
    variables: usize,
    binaries: usize,
    constraints: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
struct Report {
    program: String,
    relative_gap: f64,
    agree: bool,
    rows: Vec<Row>,
    #[serde(skip_serializing_if = "Option::is_none")]
    disagreement: Option<String>,
}

/// How one solver's run ended: the solver's own status, or an error (in `error`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RowStatus {
    Solved(Status),
    Error,
}

impl std::fmt::Display for RowStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RowStatus::Solved(s) => s.fmt(f),
            RowStatus::Error => f.write_str("error"),
        }
    }
}

impl Serialize for RowStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    args.search.refuse_ranks("compare")?;
    let (original, original_analysis, _, view) = load_on(&args.program, &args.machine)?;
    let options = args.search.milp_options(&original)?;
    let solve_options = args.search.solve_options()?;
    // The solvers compete on the program `solve` would solve: the inline set chosen once (by
    // the exact search, `--inline` or `--no-inline`).
    let inline = inline_choice(&original, &original_analysis, &view, &args.search)?;
    if !inline.names.is_empty() {
        eprintln!(
            "inlined: {} (the solvers solve the rewritten program; --no-inline for the original)",
            inline.names.join(" ")
        );
    }
    let analysis = inline.analysis;
    let methods: Vec<Method> = match &args.solvers {
        Some(list) => list.clone(),
        None => Method::available(),
    };
    let size = Encoded::build(&analysis, &view, &options).milp().size();
    let rows: Vec<Row> = methods
        .iter()
        .map(|&method| solve_row(&analysis, &view, (&options, &solve_options), method, size))
        .collect();
    let gap = solve_options.relative_gap;
    let disagreement = disagreement(&rows, gap);
    let failed: Vec<String> = rows
        .iter()
        .filter_map(|r| r.error.as_ref().map(|e| format!("{}: {e}", r.solver)))
        .collect();
    let report = Report {
        program: original.name.clone(),
        relative_gap: gap,
        agree: disagreement.is_none() && failed.is_empty(),
        rows,
        disagreement: disagreement.clone(),
    };
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        _ => print_report(&report),
    }
    if let Some(d) = disagreement {
        eprintln!("error: the solvers disagree: {d}");
        return Ok(ExitCode::from(1));
    }
    if !failed.is_empty() {
        eprintln!("error: {}", failed.join("; "));
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_report(report: &Report) {
    if let Some(r) = report.rows.first() {
        println!(
            "{}: MILP {} variables ({} binary), {} constraints; relative gap {:e}",
            report.program, r.variables, r.binaries, r.constraints, report.relative_gap
        );
    }
    let rows: Vec<Vec<String>> = report
        .rows
        .iter()
        .map(|r| {
            vec![
                r.solver.clone(),
                r.status.to_string(),
                r.objective_seconds
                    .map_or("-".into(), |o| format!("{o:.9e}")),
                r.gap.map_or("-".into(), |g| format!("{:.4}%", g * 100.0)),
                human_seconds(r.wall_seconds),
                match (&r.groups, &r.tiles) {
                    (Some(g), Some(t)) => format!("groups {g:?} tiles {t:?}"),
                    _ => r.error.clone().unwrap_or_default(),
                },
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "solver",
                "status",
                "objective (s)",
                "gap",
                "wall",
                "configuration"
            ],
            &rows
        )
    );
    println!(
        "{}",
        if report.agree {
            "all solvers agree within the gap"
        } else {
            "the solvers DISAGREE"
        }
    );
}

/// `method`'s row: its optimum and how long it took, or its error. `size` is the MILP's (the
/// DP builds none).
fn solve_row(
    analysis: &Analysis,
    view: &ModelMachine,
    (options, solve_options): (&MilpOptions, &SolveOptions),
    method: Method,
    size: MilpSize,
) -> Row {
    let name = method.name().to_string();
    let size = if method == Method::Dp {
        MilpSize::default()
    } else {
        size
    };
    let started = std::time::Instant::now();
    let solved = optimize_with(analysis, view, options, method, solve_options);
    let wall_seconds = started.elapsed().as_secs_f64();
    let (status, error) = match &solved {
        Ok(o) => (RowStatus::Solved(o.solution.status), None),
        Err(e) => (RowStatus::Error, Some(e.to_string())),
    };
    let found = solved.ok();
    Row {
        solver: name,
        status,
        objective_seconds: found.as_ref().map(|o| o.cost.total),
        gap: found.as_ref().map(|o| o.solution.gap),
        wall_seconds,
        groups: found.as_ref().map(|o| o.config.groups.clone()),
        tiles: found.as_ref().map(|o| o.config.tiles.clone()),
        variables: size.variables,
        binaries: size.binaries,
        constraints: size.constraints,
        error,
    }
}

/// Optimal objectives must agree within the gap (plus evaluate's f64 rounding): what is wrong
/// when they do not.
fn disagreement(rows: &[Row], gap: f64) -> Option<String> {
    let optimal: Vec<(&str, f64)> = rows
        .iter()
        .filter(|r| r.status == RowStatus::Solved(Status::Optimal))
        .filter_map(|r| r.objective_seconds.map(|o| (r.solver.as_str(), o)))
        .collect();
    let lo = optimal.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    let hi = optimal.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    (hi.1 - lo.1 > (gap + 1e-9) * hi.1.abs()).then(|| {
        format!(
            "{} reports an optimum of {:e} s but {} one of {:e} s: more than the relative gap {gap:e} apart",
            hi.0, hi.1, lo.0, lo.1
        )
    })
}
