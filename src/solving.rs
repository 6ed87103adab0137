//! Solving a program and describing the result: shared by `solve`, `codegen` and `bench`.

use std::path::Path;

use absinthe_model::analysis::Analysis;
use absinthe_model::machine::Machine;
use absinthe_model::program::Program;
use absinthe_model::solution::{Solution, SolverReport};
use absinthe_solvers::optimize::{optimize_with, Optimum};
use anyhow::Context;

use crate::args::{load, MachineArg, SearchArgs};

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
) -> anyhow::Result<Solved> {
    let (program, analysis) = load(program_path)?;
    let (machine, view) = machine_arg.load(&program)?;
    let options = search.milp_options(&program)?;
    let solve_options = search.solve_options()?;
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
