//! `absinthe solve PROGRAM`: choose fusion and tiling together by solving the model's MILP.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use absinthe_model::analysis::Analysis;
use absinthe_model::machine::{Machine, ModelMachine};
use absinthe_model::milp::{milp, Encoded, Encoding, MilpOptions};
use absinthe_model::program::{check_group_indices, Program, DIMS};
use absinthe_model::solution::{Solution, SolverReport};
use absinthe_model::FileError;
use absinthe_solvers::optimize::{optimize_with, Optimum};
use absinthe_solvers::SolveOptions;
use anyhow::{bail, Context};
use clap::{Args, ValueEnum};

use crate::check::load;
use crate::output::{table, write_atomic, Format};

/// The machine file used when `--machine` is not given.
pub const DEFAULT_MACHINE: &str = "machines/default.yaml";

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
/// Examples:
///   absinthe solve configs/hdiff.yaml
///   absinthe solve configs/hdiff.yaml --solver cbc --format yaml -o hdiff.solution.yaml
///   absinthe solve configs/hdiff.yaml --solver dp
///   absinthe solve configs/hdiff.yaml --encoding digits --time-limit 60
///   absinthe solve configs/heat4.yaml --fix-groups 0,0,1,1 --tiles-max 1,64,64
///   absinthe solve configs/hdiff.yaml --emit mps hdiff.mps   # for CPLEX, Gurobi, SCIP
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
    #[arg(long, default_value = "highs")]
    pub solver: String,
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

/// Which machine file to use.
#[derive(Args, Clone)]
pub struct MachineArg {
    /// Machine file with the learned parameters [default: machines/default.yaml].
    #[arg(long, short = 'm')]
    pub machine: Option<PathBuf>,
}

impl MachineArg {
    /// The machine file: `--machine`, else the shipped `machines/default.yaml` found from any
    /// working directory (see [`crate::output::shipped_file`]).
    pub fn path(&self) -> anyhow::Result<PathBuf> {
        match &self.machine {
            Some(p) => Ok(p.clone()),
            None => crate::output::shipped_file(DEFAULT_MACHINE)
                .context("no --machine given and the default machine file is missing"),
        }
    }

    /// Loads the machine file and its model view for a program.
    pub fn load(&self, program: &Program) -> anyhow::Result<(Machine, ModelMachine)> {
        let path = self.path()?;
        let machine = Machine::load(&path)?;
        let view = machine
            .model_view(program.value_type.bytes())
            .map_err(|d| FileError::new(&path, d))?;
        Ok((machine, view))
    }
}

/// Solver and search settings shared by the commands that solve.
#[derive(Args, Clone)]
pub struct SearchArgs {
    /// Stop after this many seconds with the best configuration found and its gap.
    #[arg(long, value_name = "SECONDS")]
    pub time_limit: Option<f64>,
    /// Relative optimality gap at which the solver stops.
    #[arg(long, default_value_t = 1e-4)]
    pub gap: f64,
    /// Solver threads [default: the solver's own].
    #[arg(long)]
    pub threads: Option<usize>,
    /// Fix the group index of each stencil, e.g. 0,0,1,1 (starts at 0, steps of 0 or 1).
    #[arg(long, value_delimiter = ',', value_name = "G,G,...")]
    pub fix_groups: Option<Vec<usize>>,
    /// Lower bounds on the tile counts along i,j,k, e.g. 1,2,2.
    #[arg(long, value_delimiter = ',', value_name = "NX,NY,NZ")]
    pub tiles_min: Option<Vec<usize>>,
    /// Upper bounds on the tile counts along i,j,k.
    #[arg(long, value_delimiter = ',', value_name = "NX,NY,NZ")]
    pub tiles_max: Option<Vec<usize>>,
    /// How the MILP is written: ranges (one binary per range that may form a group; tight) or
    /// digits (the ABSINTHE encoding: group indices, binary-digit products).
    #[arg(long, default_value = "ranges", value_parser = parse_encoding)]
    pub encoding: Encoding,
    /// Do not start the digits MILP from the DP's optimum (by default it does, so a time limit
    /// always ends with a configuration, a bound and a gap).
    #[arg(long)]
    pub no_warm_start: bool,
    /// Show the solver's log.
    #[arg(long, short)]
    pub verbose: bool,
}

fn parse_encoding(s: &str) -> Result<Encoding, String> {
    Encoding::parse(s)
}

fn triple(
    v: &Option<Vec<usize>>,
    flag: &str,
    domain: [usize; 3],
) -> anyhow::Result<Option<[usize; 3]>> {
    match v {
        None => Ok(None),
        Some(v) if v.len() == 3 => {
            for d in 0..3 {
                if v[d] < 1 || v[d] > domain[d] {
                    bail!(
                        "{flag}: the tile count along {} must be between 1 and {}, found {}",
                        DIMS[d],
                        domain[d],
                        v[d]
                    );
                }
            }
            Ok(Some([v[0], v[1], v[2]]))
        }
        Some(v) => bail!("{flag} takes three numbers (i,j,k), found {}", v.len()),
    }
}

impl SearchArgs {
    /// The search restrictions: the program's `constraints:` block, overridden by the flags.
    pub fn milp_options(&self, program: &Program) -> anyhow::Result<MilpOptions> {
        let mut options = MilpOptions {
            encoding: self.encoding,
            warm_start: !self.no_warm_start,
            fixed_groups: program.constraints.groups.clone(),
            tiles_min: program.constraints.tiles_min,
            tiles_max: program.constraints.tiles_max,
        };
        if let Some(g) = &self.fix_groups {
            check_group_indices(g, program.stencils.len())
                .map_err(|e| anyhow::anyhow!("--fix-groups: {e}"))?;
            options.fixed_groups = Some(g.clone());
        }
        if let Some(t) = triple(&self.tiles_min, "--tiles-min", program.domain)? {
            options.tiles_min = Some(t);
        }
        if let Some(t) = triple(&self.tiles_max, "--tiles-max", program.domain)? {
            options.tiles_max = Some(t);
        }
        if let (Some(lo), Some(hi)) = (options.tiles_min, options.tiles_max) {
            for d in 0..3 {
                if lo[d] > hi[d] {
                    bail!(
                        "the tile count bounds along {} are empty: minimum {} > maximum {}",
                        DIMS[d],
                        lo[d],
                        hi[d]
                    );
                }
            }
        }
        Ok(options)
    }

    pub fn solve_options(&self) -> anyhow::Result<SolveOptions> {
        if !(self.gap >= 0.0 && self.gap < 1.0) {
            bail!("--gap must be in [0, 1), found {}", self.gap);
        }
        if let Some(t) = self.time_limit {
            if !(t > 0.0 && t.is_finite()) {
                bail!("--time-limit must be a positive number of seconds, found {t}");
            }
        }
        if self.threads == Some(0) {
            bail!("--threads must be at least 1");
        }
        Ok(SolveOptions {
            relative_gap: self.gap,
            time_limit: self.time_limit,
            threads: self.threads,
            verbose: self.verbose,
            initial: None,
        })
    }
}

/// Everything a solve produced, for the commands built on it.
pub struct Solved {
    pub program: Program,
    pub analysis: Analysis,
    pub machine: Machine,
    pub optimum: Optimum,
    pub solution: Solution,
}

/// Loads, solves and describes; shared by `solve`, `codegen` and `bench`.
pub fn solve_program(
    program_path: &Path,
    machine_arg: &MachineArg,
    search: &SearchArgs,
    solver_name: &str,
    emit: Option<&[String]>,
) -> anyhow::Result<Solved> {
    let (program, analysis) = load(program_path)?;
    let (machine, view) = machine_arg.load(&program)?;
    let options = search.milp_options(&program)?;
    let solve_options = search.solve_options()?;
    if let Some(emit) = emit {
        emit_milp(&analysis, &view, &options, emit)?;
    }
    let optimum = optimize_with(&analysis, &view, &options, solver_name, &solve_options)
        .with_context(|| format!("solving {}", program_path.display()))?;
    let mut solution = Solution::describe(&program.name, &analysis, &optimum.config, &optimum.cost);
    solution.machine = Some(machine.name.clone());
    solution.solver = Some(SolverReport {
        name: optimum.solution.solver.to_string(),
        status: optimum.solution.status.to_string(),
        gap: optimum.solution.gap,
        seconds: optimum.solution.seconds,
        objective_seconds: Some(optimum.objective_seconds),
        bound_seconds: Some(optimum.bound_seconds),
    });
    solution.milp = Some(optimum.size);
    Ok(Solved {
        program,
        analysis,
        machine,
        optimum,
        solution,
    })
}

#[derive(Clone, Copy, ValueEnum)]
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
            text = absinthe_model::smt::linear_absinthe(&milp(analysis, view, options))
                .to_smt2()
                .into_bytes()
        }
    }
    write_atomic(&file, &text)?;
    eprintln!("wrote the MILP to {}", file.display());
    Ok(())
}

/// Seconds as a readable quantity.
pub fn human_seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.3} us", s * 1e6)
    }
}

/// The solution as text for people.
pub fn print_table(solved: &Solved) {
    let s = &solved.solution;
    let solver = s.solver.as_ref();
    let size = &solved.optimum.size;
    println!(
        "{} on {}: estimated {} per run",
        s.program,
        solved.machine.name,
        human_seconds(s.estimate_seconds.unwrap_or(0.0))
    );
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
            ]
        })
        .collect();
    print!(
        "{}",
        table(&["group", "stencils", "tiles", "tile size"], &rows)
    );
    println!();
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

/// Serialises a solution as YAML or JSON.
pub fn solution_text(solution: &Solution, json: bool) -> anyhow::Result<String> {
    Ok(if json {
        serde_json::to_string_pretty(solution)? + "\n"
    } else {
        absinthe_model::yaml::to_string(solution).map_err(anyhow::Error::msg)?
    })
}

pub fn run(args: SolveArgs) -> anyhow::Result<ExitCode> {
    let solved = solve_program(
        &args.program,
        &args.machine,
        &args.search,
        &args.solver,
        args.emit.as_deref(),
    )?;
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
