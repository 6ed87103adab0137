//! Solving a program and describing the result: shared by `solve`, `codegen` and `bench`.

use std::path::Path;

use absinthe_measure::progress::Progress;
use absinthe_model::cost_model::inline_search::{choose_inline, InlineChoice};
use absinthe_model::cost_model::search::tile_count_note;
use absinthe_model::formats::machine::ModelMachine;
use absinthe_model::{Analysis, Program};
use absinthe_solvers::method::Method;
pub use absinthe_solvers::solve::Solved;
use absinthe_solvers::solve::{solve, Settings};
use anyhow::Context;

use crate::args::{load_on, MachineArg, SearchArgs};

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

/// Loads, chooses the inline set, solves and describes (for `solve`, `codegen` and `bench`).
pub fn solve_program(
    program_path: &Path,
    machine_arg: &MachineArg,
    search: &SearchArgs,
    method: Method,
) -> anyhow::Result<Solved> {
    let (original, original_analysis, machine, view) = load_on(program_path, machine_arg)?;
    let options = search.milp_options(&original)?;
    let solve_options = search.solve_options()?;
    let path = program_path.display();
    if let Some(note) = tile_count_note(&original_analysis, &view, &options.space) {
        eprintln!("note: {path}: {note}");
    }
    let progress = Progress::start(format!("solving {path}"));
    let inline = search
        .inline_policy(&original)
        .with_context(|| format!("choosing what to inline in {path}"))?;
    Ok(solve(
        &path.to_string(),
        (original, original_analysis),
        (machine, &view),
        &Settings {
            options,
            solve_options,
            inline,
            ranks: search.ranks,
            method,
        },
        &|p| progress.phase(p),
        &|n| eprintln!("{n}"),
    )?)
}
