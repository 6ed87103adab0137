//! `bench --ranks PX,PY`: variants decomposed over MPI ranks beside the single-process optimum.

use absinthe_measure::bench::{BenchOptions, Build};
use absinthe_measure::ranks::RankRun;
use absinthe_model::cost_model::ranks::Grid;

use crate::args::{bench_of, plan_on};
use crate::bench::BenchArgs;
use crate::solving::solve_program;

pub fn run(args: &BenchArgs, grid: Grid) -> anyhow::Result<std::process::ExitCode> {
    grid.buildable(true).map_err(anyhow::Error::msg)?;
    let (path, machine, mut search) = (&args.program, &args.machine, args.search.clone());
    let ranked = solve_program(path, machine, &search, args.solver)?;
    search.ranks = None;
    let s = solve_program(path, machine, &search, args.solver)?;
    let (_, view) = machine.load(&s.program)?;
    let mut planned = None;
    if let Some(variants) = &args.variants {
        let build = Build::of_flags(args.exact, args.relaxed_math);
        let options = BenchOptions::new(args.runs, args.flush.flush()?, build, args.target);
        let bench = bench_of(path, machine, None, &args.scalars, options)?;
        let settings = search.plan_settings(&bench.program, args.solver, args.seed)?;
        planned = Some(plan_on(&bench, &variants.0, &settings)?);
    }
    let run = RankRun {
        original: (&s.original, &s.original_analysis),
        machine: &s.machine,
        view: &view,
        grid,
        runs: args.runs,
        ranked: (&ranked.inline.inline, &ranked.optimum.config),
        single: (&s.program, &s.analysis, &s.inline.inline, &s.optimum.config),
    };
    let report = run.time(planned, &crate::output::step)?;
    crate::output::print(args.format, &report.json(), &report)?;
    Ok(std::process::ExitCode::SUCCESS)
}
