//! `absinthe solve PROGRAM`: choose fusion and tiling together by solving the model's MILP.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use absinthe_solvers::solve::{emit, EmitKind};
use anyhow::bail;
use clap::Args;

use crate::args::{load_on, MachineArg, SearchArgs};
use crate::output::{solution_text, Format};
use crate::solving::{inline_choice, solve_program};
use absinthe_codegen::files::{outputs_apart, write_atomic};

/// Choose which stencils to fuse and how to tile them, by solving one MILP.
///
/// Prints the groups, their tile counts and sizes, the estimated time and what dominates each
/// stencil. `--format yaml|json` prints the solution file that `codegen` and `verify` read.
///
/// Solvers: highs (default), cbc, z3 solve the MILP; dp is the exact dynamic program over
/// group boundaries (no MILP; fastest on large programs). Encodings of the MILP: ranges
/// (default; one binary per range that may form a group, integral LP relaxation) and digits
/// (the ABSINTHE formulation: group indices and binary-digit products of tile counts).
///
/// Inlining: a stencil that is not an output may be computed where it is read instead of
/// stored. The inline sets are searched (every set up to 6 candidates, greedily up to 24), each
/// solved exactly; the solution lists the inlined stencils under `inline:` and its groups are
/// those of the rewritten program. `--no-inline` keeps every stencil, `--inline A,B` fixes the
/// set. `--emit` writes the problem of the rewritten program.
///
/// Examples:
///   absinthe solve configs/hdiff.yaml
///   absinthe solve configs/hdiff.yaml --solver cbc --format yaml -o hdiff.solution.yaml
///   absinthe solve configs/hdiff.yaml --solver dp
///   absinthe solve configs/hdiff.yaml --encoding digits --time-limit 60
///   absinthe solve configs/heat4.yaml --fix-groups 0,0,1,1 --tiles-max 1,64,64
///   absinthe solve configs/hdiff.yaml --emit mps hdiff.mps   # for CPLEX, Gurobi, SCIP
///   absinthe solve configs/cosmo_hdiff4.yaml --inline flx_u,fly_u --no-stream
#[derive(Args, Clone)]
#[command(verbatim_doc_comment)]
pub struct SolveArgs {
    /// The program file.
    pub program: PathBuf,
    #[command(flatten)]
    pub machine: MachineArg,
    #[command(flatten)]
    pub search: SearchArgs,
    /// The solver: highs, cbc or z3 (MILP backends), or dp (exact dynamic program).
    #[arg(long, default_value = "highs", value_parser = crate::args::parse_method)]
    pub solver: absinthe_solvers::method::Method,
    /// Also write the problem as a file for another solver: `--emit lp FILE`, `--emit mps FILE`
    /// (the MILP of --encoding), or `--emit smt2 FILE` (SMT-LIB 2, the digits MILP in exact
    /// rationals, with Z3's `minimize`). It is written before the solve, so that a problem
    /// that is infeasible, slow or refused later can still be inspected.
    #[arg(long, num_args = 2, value_names = ["KIND", "FILE"])]
    pub emit: Option<Vec<String>>,
    /// Output format on standard output.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the solution (YAML, or JSON if the name ends in .json) to this file as well.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

pub fn run(args: SolveArgs) -> anyhow::Result<ExitCode> {
    let machine = args.machine.path()?;
    let emitted = args.emit.as_deref().and_then(|k| k.get(1)).map(Path::new);
    outputs_apart(
        &[args.output.as_deref(), emitted],
        &[&args.program, &machine],
    )?;
    // Every flag is checked before anything is written.
    args.search.solve_options()?;
    if let Some(kind_file) = args.emit.as_deref() {
        // The problem of the program `solve` solves (the chosen stencils inlined), written
        // before solving, so that an infeasible or slow problem can still be inspected.
        let (program, analysis, _, view) = load_on(&args.program, &args.machine)?;
        let inline = inline_choice(&program, &analysis, &view, &args.search)?;
        let options = args.search.milp_options(&inline.program)?;
        let [kind, file] = kind_file else {
            bail!("--emit takes a kind and a file: --emit lp FILE")
        };
        if args.search.ranks.is_some() {
            bail!("--emit writes the MILP of one process, and --ranks solves over ranks: drop one")
        }
        let text = emit(&inline.analysis, &view, &options, EmitKind::parse(kind)?)?;
        write_atomic(Path::new(file), &text)?;
        eprintln!("wrote the MILP to {file}");
    }
    let solved = solve_program(&args.program, &args.machine, &args.search, args.solver)?;
    let json = args.format == Format::Json;
    match args.format {
        Format::Table => crate::output::emit(format_args!("{solved}"))?,
        _ => crate::output::emit(format_args!("{}", solution_text(&solved.solution, json)?))?,
    }
    if let Some(out) = &args.output {
        let json = absinthe_model::output::solution::Solution::json_named(out);
        write_atomic(out, solution_text(&solved.solution, json)?.as_bytes())?;
        eprintln!("wrote the solution to {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
}
