//! `bench --ranks PX,PY`: variants decomposed over MPI ranks, beside the single-process
//! optimum on all threads, in one run (the measuring is `absinthe_measure::ranks`). By default
//! the ranked optimum (`opt`, and `opt+overlap`) and the single-process optimum decomposed
//! (`single`); with `--variants`, those variants as planned for one process, `opt` standing for
//! the ranked optimum.

use std::process::ExitCode;

use absinthe_measure::bench::BenchOptions;
use absinthe_measure::ranks::{RankBench, RankRow, RankVariant};
use absinthe_measure::variants::Variant;
use absinthe_model::cost_model::evaluate::Configuration;
use absinthe_model::cost_model::inline_search::apply as inline_apply;
use absinthe_model::cost_model::ranks::Grid;
use absinthe_model::formats::machine::ModelMachine;
use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::program::Program;

use crate::args::{bench_of, plan_on};
use crate::bench::BenchArgs;
use crate::output::Format;
use crate::solving::{solve_program, Solved};
use absinthe_model::output::text::{human_seconds, table};

/// One decomposed variant to time: its stencils inlined (indices into the original program),
/// its configuration of the program with them inlined, and whether it overlaps.
struct Job {
    label: String,
    inline: Vec<usize>,
    config: Configuration,
    overlap: bool,
}

/// The variants `--variants` asks for (without it: `opt`, `opt+overlap`, `single`).
fn jobs(args: &BenchArgs, ranked: &Solved, single: &Solved) -> anyhow::Result<Vec<Job>> {
    let opt = |label: &str, overlap| Job {
        label: label.into(),
        inline: ranked.inline.inline.clone(),
        config: ranked.optimum.config.clone(),
        overlap,
    };
    let Some(variants) = &args.variants else {
        return Ok(vec![
            opt("opt", false),
            opt("opt+overlap", true),
            Job {
                label: "single".into(),
                inline: single.inline.inline.clone(),
                config: single.optimum.config.clone(),
                overlap: false,
            },
        ]);
    };
    let options = BenchOptions {
        roofline: false,
        cache_model: false,
        ..args.options()?
    };
    let bench = bench_of(&args.program, &args.machine, None, &args.scalars, options)?;
    let settings = args
        .search
        .plan_settings(&bench.program, args.solver, args.seed)?;
    let mut out = Vec::new();
    for p in plan_on(&bench, &variants.0, &settings)? {
        if p.variant == Some(Variant::Opt) {
            out.extend([opt("opt", false), opt("opt+overlap", true)]);
        } else if p.reference {
            eprintln!(
                "note: {}: the naive reference is not decomposed over ranks; left out",
                p.name
            );
        } else if let Some(why) = &p.skipped {
            eprintln!("note: {}: {why}; left out", p.name);
        } else {
            out.push(Job {
                label: p.name,
                inline: p.inline,
                config: p.config,
                overlap: false,
            });
        }
    }
    Ok(out)
}

pub fn run(args: &BenchArgs, grid: Grid) -> anyhow::Result<ExitCode> {
    let ranked = solve_program(&args.program, &args.machine, &args.search, args.solver)?;
    let single_search = crate::args::SearchArgs {
        ranks: None,
        ..args.search.clone()
    };
    let single = solve_program(&args.program, &args.machine, &single_search, args.solver)?;
    let (_, view) = args.machine.load(&single.program)?;
    let settings = (grid, args.runs);
    let jobs = jobs(args, &ranked, &single)?;
    let mut rows: Vec<RankRow> = Vec::new();
    for job in &jobs {
        let (program, analysis, _) =
            inline_apply(&single.original, view.params.operations, &job.inline)?;
        let bench = rank_bench(&single, &view, settings, &program, &analysis);
        eprintln!("timing {} on {}x{} ranks ...", job.label, grid.px, grid.py);
        rows.push(bench.run(&RankVariant {
            label: job.label.clone(),
            config: job.config.clone(),
            overlap: job.overlap,
        })?);
    }
    let bench = rank_bench(&single, &view, settings, &single.program, &single.analysis);
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
    println!(
        "{} over {}x{} ranks x {} thread(s), every output verified bit for bit against the single-process reference:",
        single.program.name,
        grid.px,
        grid.py,
        bench.rank_threads()
    );
    print!("{}", rows_table(&rows, one));
    println!(
        "1 process x {} threads (the single-process optimum): {}",
        view.threads,
        human_seconds(one)
    );
    Ok(ExitCode::SUCCESS)
}

/// The bench of `program` (with its `analysis`, some inline set of `single`'s original program)
/// over `grid` ranks, `runs` runs a variant, verified against `single`'s original.
fn rank_bench<'a>(
    single: &'a Solved,
    view: &'a ModelMachine,
    (grid, runs): (Grid, usize),
    program: &'a Program,
    analysis: &'a Analysis,
) -> RankBench<'a> {
    RankBench {
        program,
        analysis,
        original: (&single.original, &single.original_analysis),
        machine: &single.machine,
        view,
        grid,
        runs,
    }
}

/// The rows as a table, each time also over the single process's `one`.
fn rows_table(rows: &[RankRow], one: f64) -> String {
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
            "/ 1 process",
        ],
        &cells,
    )
}
