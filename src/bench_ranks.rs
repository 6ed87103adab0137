//! `bench --ranks PX,PY`: the ranked optimum and the single-process optimum decomposed over MPI
//! ranks, beside the single-process kernel on all threads, in one run (the measuring is
//! `absinthe_measure::ranks`).

use std::process::ExitCode;

use absinthe_measure::ranks::{RankBench, RankRow, RankVariant};
use absinthe_model::cost_model::ranks::Grid;

use crate::bench::BenchArgs;
use crate::output::Format;
use crate::output::{human_seconds, table};
use crate::solving::solve_program;

pub fn run(args: &BenchArgs, grid: Grid) -> anyhow::Result<ExitCode> {
    let ranked = solve_program(&args.program, &args.machine, &args.search, args.solver)?;
    let single_search = crate::args::SearchArgs {
        ranks: None,
        ..args.search.clone()
    };
    let single = solve_program(&args.program, &args.machine, &single_search, args.solver)?;
    let (_, view) = args.machine.load(&single.program)?;
    let bench = RankBench {
        program: &single.program,
        analysis: &single.analysis,
        original: (&single.original, &single.original_analysis),
        machine: &single.machine,
        view: &view,
        grid,
        runs: args.runs,
    };
    let variants = [
        ("opt", &ranked.optimum.config, false),
        ("opt+overlap", &ranked.optimum.config, true),
        ("single", &single.optimum.config, false),
    ];
    let mut rows: Vec<RankRow> = Vec::new();
    for (label, config, overlap) in variants {
        eprintln!("timing {label} on {}x{} ranks ...", grid.px, grid.py);
        rows.push(bench.run(&RankVariant {
            label: label.into(),
            config: config.clone(),
            overlap,
        })?);
    }
    eprintln!(
        "timing the single-process optimum on {} threads ...",
        view.threads
    );
    let one = bench.single_process(&single.optimum.config)?;
    if args.format == Format::Json {
        let json = serde_json::json!({
            "ranks": grid.dims(),
            "threads_per_rank": bench.rank_threads(),
            "one_process_seconds": one,
            "one_process_threads": view.threads,
            "rows": rows,
        });
        println!("{}", serde_json::to_string_pretty(&json)?);
        return Ok(ExitCode::SUCCESS);
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let m = &r.measured;
            vec![
                r.variant.clone(),
                format!("{:?}", r.groups),
                r.tiles
                    .iter()
                    .map(|t| format!("{}x{}x{}", t[0], t[1], t[2]))
                    .collect::<Vec<_>>()
                    .join(" "),
                human_seconds(m.median),
                human_seconds(m.compute),
                human_seconds(m.exchange_alone),
                format!("{:.0}%", 100.0 * m.hidden),
                r.predicted_seconds.map_or("-".into(), human_seconds),
                format!("{:.2}", m.median / one),
            ]
        })
        .collect();
    println!(
        "{} over {}x{} ranks x {} thread(s), every output verified bit for bit against the single-process reference:",
        single.program.name,
        grid.px,
        grid.py,
        bench.rank_threads()
    );
    print!(
        "{}",
        table(
            &[
                "variant",
                "groups",
                "tiles",
                "time",
                "compute only",
                "exchanges alone",
                "hidden",
                "predicted",
                "/ 1 process"
            ],
            &cells
        )
    );
    println!(
        "1 process x {} threads (the single-process optimum): {}",
        view.threads,
        human_seconds(one)
    );
    Ok(ExitCode::SUCCESS)
}
