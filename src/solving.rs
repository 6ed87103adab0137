//! Solving a program and describing the result: shared by `solve`, `codegen` and `bench`.

use std::path::Path;

use absinthe_model::cost_model::inline_search::{choose_inline, InlineChoice};
use absinthe_model::cost_model::options::MilpOptions;
use absinthe_model::cost_model::ranks::{Grid, Ranked};
use absinthe_model::cost_model::search::tile_count_note;
use absinthe_model::formats::machine::{Machine, ModelMachine};
use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::program::Program;
use absinthe_model::output::solution::{Solution, SolverReport};
use absinthe_solvers::method::Method;
use absinthe_solvers::optimize::{optimize_dp_with, optimize_with, Optimum};
use absinthe_solvers::SolveOptions;
use anyhow::{bail, Context};

use crate::args::{load_on, MachineArg, SearchArgs};
use absinthe_measure::progress::Progress;

/// Everything a solve produced, for the commands built on it.
pub struct Solved {
    /// The program as written, and its analysis.
    pub original: Program,
    pub original_analysis: Analysis,
    /// The program solved: `original` with `inline.names` inlined (the same when none).
    pub program: Program,
    pub analysis: Analysis,
    pub inline: InlineChoice,
    pub machine: Machine,
    pub optimum: Optimum,
    pub solution: Solution,
    /// With `--ranks`: the grid, and `optimum.objective_seconds` is one rank's time.
    pub ranks: Option<Grid>,
}

/// The inline set `search` asks for (`--inline`, `--no-inline`, or the search), and the program
/// it makes: what `solve`, `solve --emit` and `compare` all solve.
pub fn inline_choice(
    program: &Program,
    analysis: &Analysis,
    view: &ModelMachine,
    search: &SearchArgs,
) -> anyhow::Result<InlineChoice> {
    Ok(choose_inline(
        program,
        analysis,
        view,
        &search.milp_options(program)?.space,
        &search.inline_policy(program)?,
        search.threads.unwrap_or(0),
    )?)
}

/// What `--ranks` prices: the grid, and the program's value size.
struct Rank {
    grid: Grid,
    value_bytes: usize,
}

/// The exact optimum of one rank of a `grid` decomposition (`--ranks`): the DP over the
/// [`Ranked`] model, the node's threads shared among its ranks.
fn optimize_ranked(
    analysis: &Analysis,
    machine: &Machine,
    view: &ModelMachine,
    Rank { grid, value_bytes }: Rank,
    options: &MilpOptions,
    solve_options: &SolveOptions,
) -> anyhow::Result<Optimum> {
    for (d, p) in grid.dims().into_iter().enumerate() {
        if p > analysis.domain[d] {
            bail!(
                "--ranks: {p} ranks along {} but the domain has {} cells there",
                ["x", "y"][d],
                analysis.domain[d]
            );
        }
    }
    let Some(network) = machine.network.clone() else {
        bail!(
            "--ranks {},{} prices the halo exchanges with the machine file's `network:` section, which machine `{}` lacks: measure it with `absinthe learn --machine FILE --ranks 2`",
            grid.px,
            grid.py,
            machine.name
        );
    };
    let model = Ranked::new(analysis, view, grid.dims(), network, value_bytes);
    let optimum = optimize_dp_with(analysis, &model, options, solve_options)?;
    let (largest, classes) = model.sub_domains();
    eprintln!(
        "ranks {}x{}: priced each group on the slowest of {classes} rank class(es) (largest sub-domain {largest:?}) with {} thread(s) per rank: {:.1} us per run, at most {:.1} us of it in one rank's halo exchanges (the exact DP)",
        grid.px,
        grid.py,
        model.rank_threads(),
        optimum.objective_seconds * 1e6,
        model.exchanges_of(&optimum.config) * 1e6
    );
    Ok(optimum)
}

/// Loads, chooses the inline set, solves and describes; shared by `solve`, `codegen` and
/// `bench`.
pub fn solve_program(
    program_path: &Path,
    machine_arg: &MachineArg,
    search: &SearchArgs,
    method: Method,
) -> anyhow::Result<Solved> {
    let (original, original_analysis, machine, view) = load_on(program_path, machine_arg)?;
    let options = search.milp_options(&original)?;
    let solve_options = search.solve_options()?;
    if let Some(note) = tile_count_note(&original_analysis, &view, &options.space) {
        eprintln!("note: {}: {note}", program_path.display());
    }
    let progress = Progress::start(format!("solving {}", program_path.display()));
    progress.phase("choosing the inline set");
    let inline = inline_choice(&original, &original_analysis, &view, search)
        .with_context(|| format!("choosing what to inline in {}", program_path.display()))?;
    let program = inline.program.clone();
    let analysis = inline.analysis.clone();
    progress.phase(format!(
        "{method} on {} stencils, {} inlined",
        analysis.stencils.len(),
        inline.names.len()
    ));
    let optimum = match search.ranks {
        Some(grid) => {
            let rank = Rank {
                grid,
                value_bytes: program.value_type.bytes(),
            };
            optimize_ranked(&analysis, &machine, &view, rank, &options, &solve_options)?
        }
        None => optimize_with(&analysis, &view, &options, method, &solve_options)
            .with_context(|| format!("solving {}", program_path.display()))?,
    };
    drop(progress);
    let mut solution = Solution::describe(
        &program.name,
        (&analysis, view.model),
        &optimum.config,
        &optimum.cost,
    );
    solution.inline = inline.names.clone();
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
        original,
        original_analysis,
        program,
        analysis,
        inline,
        machine,
        optimum,
        solution,
        ranks: search.ranks,
    })
}
