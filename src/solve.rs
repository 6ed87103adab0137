//! `absinthe solve PROGRAM`: choose fusion and tiling together by solving the model's MILP.

use std::path::PathBuf;
use std::process::ExitCode;

use absinthe_model::cost_model::options::{Encoding, MilpOptions};
use absinthe_model::encodings::milp::{milp, Encoded};
use absinthe_model::formats::machine::ModelMachine;
use absinthe_model::language::analysis::Analysis;
use anyhow::bail;
use clap::{Args, ValueEnum};

use absinthe_model::cost_model::inline_search::InlineSearch;

use crate::args::{load_on, MachineArg, SearchArgs};
use crate::output::{solution_text, write_atomic, Format};
use crate::solving::{inline_choice, solve_program, Solved};
use absinthe_model::output::text::{human_seconds, table};

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
    /// rationals, with Z3's `minimize`).
    #[arg(long, num_args = 2, value_names = ["KIND", "FILE"])]
    pub emit: Option<Vec<String>>,
    /// Output format on standard output.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the solution (YAML, or JSON if the name ends in .json) to this file as well.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum EmitKind {
    Lp,
    Mps,
    Smt2,
}

fn emit_milp(
    analysis: &Analysis,
    view: &ModelMachine,
    options: &MilpOptions,
    emit: &[String],
) -> anyhow::Result<()> {
    let (kind, file) = match emit {
        [k, f] => (k.as_str(), PathBuf::from(f)),
        _ => bail!("--emit takes a kind and a file: --emit lp FILE"),
    };
    let kind = EmitKind::from_str(kind, true)
        .map_err(|_| anyhow::anyhow!("--emit: unknown kind `{kind}`; use lp, mps or smt2"))?;
    let mut text = Vec::new();
    if kind == EmitKind::Smt2 || options.encoding == Encoding::Digits {
        absinthe_model::encodings::milp::digits_supported(view).map_err(anyhow::Error::msg)?;
    }
    match kind {
        EmitKind::Lp => {
            let encoded = Encoded::build(analysis, view, options);
            absinthe_solvers::write_lp(encoded.milp(), &mut text)?
        }
        EmitKind::Mps => {
            let encoded = Encoded::build(analysis, view, options);
            absinthe_solvers::write_mps(encoded.milp(), &mut text)?
        }
        // The SMT encoding is of the ABSINTHE (digits) MILP, whose rows `verify` proves sound.
        EmitKind::Smt2 => {
            text = absinthe_model::encodings::smt::linear_absinthe(&milp(analysis, view, options))
                .to_smt2()
                .into_bytes()
        }
    }
    write_atomic(&file, &text)?;
    eprintln!("wrote the MILP to {}", file.display());
    Ok(())
}

/// The solution as text for people.
pub fn print_table(solved: &Solved) {
    print_summary(solved);
    print_groups(solved);
    print_stencils(solved);
}

/// The estimate, the inline set and the solver's status.
fn print_summary(solved: &Solved) {
    let s = &solved.solution;
    let solver = s.solver.as_ref();
    let size = &solved.optimum.size;
    match solved.ranks {
        Some(grid) => println!(
            "{} on {} over {}x{} ranks: estimated {} per run ({} model; each group on its slowest rank class, exchanges included; one process alone: {})",
            s.program,
            solved.machine.name,
            grid.px,
            grid.py,
            human_seconds(solved.optimum.objective_seconds),
            s.model,
            human_seconds(s.estimate_seconds.unwrap_or(0.0))
        ),
        None => println!(
            "{} on {}: estimated {} per run ({} model)",
            s.program,
            solved.machine.name,
            human_seconds(s.estimate_seconds.unwrap_or(0.0)),
            s.model
        ),
    }
    let inl = &solved.inline;
    match (&inl.search, inl.names.is_empty()) {
        (_, false) => println!(
            "inlined: {} ({}; model optimum without inlining {})",
            inl.names.join(" "),
            match inl.search {
                InlineSearch::None => "given".to_string(),
                s => format!(
                    "{} search, {} inline sets solved",
                    s.name(),
                    inl.sets_solved
                ),
            },
            inl.without_seconds
                .map_or("not solved".into(), human_seconds)
        ),
        (InlineSearch::None, true) => {
            if let Some(note) = &inl.note {
                println!("inlined: none ({note})");
            }
        }
        (s, true) => println!(
            "inlined: none ({} search over {} candidate(s), {} inline sets solved)",
            s.name(),
            inl.candidates,
            inl.sets_solved
        ),
    }
    if let Some(r) = solver {
        println!(
            "solver {}: {}, gap {:.3}%, {:.2} s; MILP {} variables ({} binary, {} integer), {} constraints",
            r.name,
            r.status,
            r.gap * 100.0,
            r.seconds,
            size.variables,
            size.binaries,
            size.integers,
            size.constraints
        );
    }
}

/// One row per group: its stencils, tiles and whether it streams.
fn print_groups(solved: &Solved) {
    let s = &solved.solution;
    println!();
    let rows: Vec<Vec<String>> = s
        .groups
        .iter()
        .enumerate()
        .map(|(g, gr)| {
            let ts = gr.tile_size.unwrap_or([0; 3]);
            vec![
                g.to_string(),
                gr.stencils.join(" "),
                format!("{}x{}x{}", gr.tiles[0], gr.tiles[1], gr.tiles[2]),
                format!("{}x{}x{}", ts[0], ts[1], ts[2]),
                if gr.stream { "yes" } else { "no" }.to_string(),
                if gr.crowded { "yes" } else { "no" }.to_string(),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "group",
                "stencils",
                "tiles",
                "tile size",
                "streams",
                "crowded"
            ],
            &rows
        )
    );
    println!();
}

/// One row per stencil: its widths, times, dominant memory, loads and store.
fn print_stencils(solved: &Solved) {
    let cost = &solved.optimum.cost;
    let rows: Vec<Vec<String>> = cost
        .stencils()
        .enumerate()
        .map(|(i, c)| {
            let (peel, body) = c.dominant();
            vec![
                solved.analysis.stencils[i].name.clone(),
                solved.optimum.config.groups[i].to_string(),
                (0..3)
                    .map(|d| format!("{}/{}", c.widths[d][0], c.widths[d][1]))
                    .collect::<Vec<_>>()
                    .join(" "),
                human_seconds(c.peel),
                human_seconds(c.body),
                human_seconds(c.time),
                format!("peel:{peel} body:{body}"),
                c.loads
                    .iter()
                    .map(|&a| solved.analysis.arrays[a].name.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
                if c.store { "yes".into() } else { "no".into() },
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "stencil",
                "group",
                "widths i j k (-/+)",
                "peel",
                "body",
                "time",
                "dominant memory",
                "loads",
                "store"
            ],
            &rows
        )
    );
    let overhead: f64 = cost.groups.iter().map(|g| g.overhead).sum();
    println!("\ntile-loop overhead: {}", human_seconds(overhead));
}

pub fn run(args: SolveArgs) -> anyhow::Result<ExitCode> {
    if let Some(emit) = args.emit.as_deref() {
        // The problem of the program `solve` solves (the chosen stencils inlined), written
        // before solving, so that an infeasible or slow problem can still be inspected.
        let (program, analysis, _, view) = load_on(&args.program, &args.machine)?;
        let inline = inline_choice(&program, &analysis, &view, &args.search)?;
        let options = args.search.milp_options(&inline.program)?;
        emit_milp(&inline.analysis, &view, &options, emit)?;
    }
    let solved = solve_program(&args.program, &args.machine, &args.search, args.solver)?;
    match args.format {
        Format::Table => print_table(&solved),
        Format::Json => print!("{}", solution_text(&solved.solution, true)?),
        Format::Yaml => print!("{}", solution_text(&solved.solution, false)?),
    }
    if let Some(out) = &args.output {
        let json = out.extension().is_some_and(|e| e == "json");
        write_atomic(out, solution_text(&solved.solution, json)?.as_bytes())?;
        eprintln!("wrote the solution to {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
}
