//! `absinthe tune PROGRAM --top K`: model-guided auto-tuning. The K best configurations by the
//! model that are not ties of each other (the exact search, `search::k_best`, then
//! `variants::distinct_best`), and the optima of the next-best inline sets
//! (`--inline-sets`), are built, verified and timed like `bench` variants; the fastest
//! verified one is written as a solution file.

use std::path::PathBuf;
use std::process::ExitCode;

use absinthe_model::cost::evaluate;
use absinthe_model::solution::{Solution, TuneReport};
use absinthe_solvers::inline::apply as inline_apply;
use anyhow::bail;
use clap::Args;
use serde::Serialize;

use crate::args::{MachineArg, SearchArgs};
use crate::bench::{accuracy_points, measure, BenchArgs, BenchTarget, Measured};
use crate::output::{groups_cell, human_seconds, table, tiles_cell, write_atomic, Format};
use crate::solve::solution_text;

/// Model-guided auto-tuning: build, verify and time the model's K best configurations and keep
/// the fastest.
///
/// The K best configurations (groupings and tilings) by the model come from the exact search
/// (the DP over group boundaries, keeping the K best tilings of every range and the K best
/// covers of every prefix), so they are exactly the model's best. Of those, a configuration
/// with the same groups and streamed groups as a better one and a prediction within 0.1% of
/// it is a tie and is skipped (the 8K best are scanned for K that are not ties): the model
/// cannot tell ties apart, so timing one of them teaches as much as timing all. The K best
/// share the optimum's inline set; `--inline-sets M` adds the optima of M other inline sets
/// the inline search solved (every stencil inlined first, then the cheapest), because whether
/// recomputing a producer beats storing it is where the model errs most (cosmo_hdiff4 at
/// 256x256x60: the model has storing two or three laplacians within 3% of inlining them all;
/// measured, storing three ran 10% slower). Each is generated, built and verified like a
/// `bench` variant and timed with the caches flushed (the variants run round-robin, so load on
/// the machine spreads over all of them). The fastest verified one is written as a solution
/// file for `codegen` and `verify`, with a `tuned` section that records its measured time and
/// its rank by the model. The table shows each candidate's prediction error; a winner far
/// down the model's ranking says the machine file predicts this program poorly (re-run
/// `absinthe learn`).
///
/// Examples:
///   absinthe tune configs/cosmo_hdiff4.yaml --machine build/demo/machine.yaml
///   absinthe tune configs/hdiff.yaml --top 16 --runs 64 -o hdiff.tuned.yaml
///   absinthe tune configs/heat4.yaml --format json
#[derive(Args, Clone)]
#[command(verbatim_doc_comment)]
pub struct TuneArgs {
    /// The program file.
    pub program: PathBuf,
    #[command(flatten)]
    pub machine: MachineArg,
    #[command(flatten)]
    pub search: SearchArgs,
    /// How many of the model's best configurations to build and time (1-64).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub top: u64,
    /// Also time the optima of this many other inline sets than the optimum's: every stencil
    /// inlined, then the cheapest the inline search found (0-16; 0: only the optimum's set).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(0..=16))]
    pub inline_sets: u64,
    /// Timed runs per candidate; the first quarter of each round is discarded.
    #[arg(long, default_value_t = 32)]
    pub runs: usize,
    /// Bytes streamed before each run to flush the caches [default: 1.25 x the last-level
    /// cache, at most 1 GiB].
    #[arg(long)]
    pub flush_bytes: Option<u64>,
    /// Build and verify bit for bit (`-ffp-contract=off`) instead of the timed FMA build.
    #[arg(long)]
    pub exact: bool,
    /// Build the candidates with relaxed floating-point math (`bench --relaxed-math`).
    #[arg(long, conflicts_with = "exact")]
    pub relaxed_math: bool,
    /// Read templates from this directory first.
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// Draw predicted against measured time of the candidates into FILE.png or FILE.svg.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Where to write the winner's solution (YAML, or JSON if the name ends in .json)
    /// [default: PROGRAM's file stem + .tuned.yaml, in the current directory].
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Output format on standard output (the candidates and the winner).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// One timed candidate.
#[derive(Serialize)]
struct Candidate {
    /// The model's rank among the candidates (by predicted time), 1 = its optimum.
    rank: usize,
    /// Its index among the planned variants.
    #[serde(skip)]
    index: usize,
    /// The stencils computed where they are read (names; the groups and tiles are of the
    /// program with them inlined).
    inline: Vec<String>,
    groups: Vec<usize>,
    tiles: Vec<[usize; 3]>,
    stream: Vec<usize>,
    predicted_seconds: f64,
    measured_seconds: Option<f64>,
    /// `predicted / measured - 1`.
    prediction_error: Option<f64>,
    verified: Option<bool>,
}

/// What `--format json|yaml` prints.
#[derive(Serialize)]
struct Report {
    program: String,
    machine: String,
    candidates: Vec<Candidate>,
    /// The model's rank of the fastest verified candidate.
    winner_rank: usize,
    winner_seconds: f64,
    /// `measured(rank 1) / measured(winner)`.
    speedup_over_model_optimum: Option<f64>,
    solution_file: PathBuf,
}

pub fn run(args: TuneArgs) -> anyhow::Result<ExitCode> {
    let bench_args = BenchArgs {
        program: args.program.clone(),
        machine: args.machine.clone(),
        search: args.search.clone(),
        solver: "dp".into(),
        variants: if args.inline_sets > 0 {
            format!("top:{},sets:{}", args.top, args.inline_sets)
        } else {
            format!("top:{}", args.top)
        },
        runs: args.runs,
        flush_bytes: args.flush_bytes,
        warm: false,
        seed: 1,
        no_roofline: true,
        templates: args.templates.clone(),
        plot: None,
        format: args.format,
        exact: args.exact,
        relaxed_math: args.relaxed_math,
        target: BenchTarget::Openmp,
    };
    let m = measure(&bench_args)?;
    if let Some(path) = &args.plot {
        let points = accuracy_points(&m.planned, &m.rows);
        let title = format!(
            "{}: the model's {} best, predicted vs measured",
            m.program.name,
            points.len()
        );
        absinthe_learn::accuracy::plot(path, &title, &points)?;
        eprintln!("wrote {}", path.display());
    }
    let mut candidates: Vec<Candidate> = m
        .planned
        .iter()
        .zip(&m.rows)
        .enumerate()
        .filter(|(_, (p, _))| p.skipped.is_none())
        .map(|(k, (p, r))| Candidate {
            rank: 0,
            index: k,
            inline: p
                .inline
                .iter()
                .map(|&s| m.program.stencils[s].name.clone())
                .collect(),
            groups: p.config.groups.clone(),
            tiles: p.config.tiles.clone(),
            stream: p.config.stream.clone(),
            predicted_seconds: p.predicted,
            measured_seconds: r.measured_seconds,
            prediction_error: r
                .measured_seconds
                .filter(|&t| t > 0.0)
                .map(|t| p.predicted / t - 1.0),
            verified: r.verified,
        })
        .collect();
    // The model's order: the K best of the optimum's inline set, then the other sets' optima,
    // merged by prediction (stable: planned order breaks ties).
    candidates.sort_by(|a, b| a.predicted_seconds.total_cmp(&b.predicted_seconds));
    for (k, c) in candidates.iter_mut().enumerate() {
        c.rank = k + 1;
    }
    if candidates.is_empty() {
        bail!(
            "{}: no configuration is feasible under the model (see `absinthe solve`)",
            args.program.display()
        );
    }
    let Some(winner) = candidates
        .iter()
        .filter(|c| c.verified == Some(true))
        .filter_map(|c| c.measured_seconds.map(|t| (c, t)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c)
    else {
        bail!("no candidate passed verification; nothing to write");
    };
    let winner_seconds = winner.measured_seconds.unwrap_or(f64::NAN);
    // The model's optimum as a reference, if it verified.
    let optimum_seconds = candidates[0]
        .measured_seconds
        .filter(|_| candidates[0].verified == Some(true));
    let k = winner.index;
    let config = &m.planned[k].config;
    // The winner's configuration is of the program with its inline set inlined.
    let inline = &m.planned[k].inline;
    let (_, analysis, _) = inline_apply(&m.program, m.view.params.operations, inline)?;
    let cost = evaluate(&analysis, &m.view, config);
    let mut solution = Solution::describe(&m.program.name, &analysis, config, &cost);
    solution.inline = inline
        .iter()
        .map(|&s| m.program.stencils[s].name.clone())
        .collect();
    solution.machine = Some(m.machine.name.clone());
    solution.tuned = Some(TuneReport {
        candidates: candidates.len(),
        model_rank: winner.rank,
        measured_seconds: winner_seconds,
        model_optimum_measured_seconds: optimum_seconds,
    });
    let output = args.output.clone().unwrap_or_else(|| {
        let stem = args
            .program
            .file_stem()
            .map_or("program".into(), |s| s.to_string_lossy().into_owned());
        PathBuf::from(format!("{stem}.tuned.yaml"))
    });
    let json = output.extension().is_some_and(|e| e == "json");
    write_atomic(&output, solution_text(&solution, json)?.as_bytes())?;

    let report = Report {
        program: m.program.name.clone(),
        machine: m.machine.name.clone(),
        winner_rank: winner.rank,
        winner_seconds,
        speedup_over_model_optimum: optimum_seconds.map(|t| t / winner_seconds),
        solution_file: output.clone(),
        candidates,
    };
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        Format::Yaml => print!(
            "{}",
            absinthe_model::yaml::to_string(&report).map_err(anyhow::Error::msg)?
        ),
        Format::Table => print_table(&m, &report, args.runs),
    }
    eprintln!("wrote the solution to {}", output.display());
    Ok(if m.failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_table(m: &Measured, report: &Report, runs: usize) {
    let opt = |x: Option<f64>| x.map_or("-".to_string(), human_seconds);
    let body: Vec<Vec<String>> = report
        .candidates
        .iter()
        .map(|c| {
            vec![
                c.rank.to_string(),
                groups_cell(&c.groups),
                tiles_cell(&c.tiles),
                if c.stream.is_empty() {
                    "-".into()
                } else {
                    groups_cell(&c.stream)
                },
                c.inline.len().to_string(),
                human_seconds(c.predicted_seconds),
                opt(c.measured_seconds),
                c.prediction_error
                    .map_or("-".into(), |e| format!("{:+.1}%", e * 100.0)),
                match c.verified {
                    Some(true) => "yes",
                    Some(false) => "NO",
                    None => "-",
                }
                .into(),
                if c.rank == report.winner_rank {
                    "<- fastest"
                } else {
                    ""
                }
                .into(),
            ]
        })
        .collect();
    let sets = {
        let mut s: Vec<&Vec<String>> = report.candidates.iter().map(|c| &c.inline).collect();
        s.sort();
        s.dedup();
        s.len()
    };
    println!(
        "{} on {}: the model's {} best configurations over {sets} inline set(s), built, verified and timed (median of {} runs, caches flushed)",
        m.program.name,
        m.machine.name,
        report.candidates.len(),
        runs
    );
    println!();
    print!(
        "{}",
        table(
            &[
                "rank",
                "groups",
                "tiles",
                "streams",
                "inlined",
                "predicted",
                "measured",
                "error",
                "verified",
                ""
            ],
            &body
        )
    );
    println!();
    match report.speedup_over_model_optimum {
        Some(s) if report.winner_rank > 1 => println!(
            "fastest: the model's rank {} ({}), {:.1}% faster than the model's optimum",
            report.winner_rank,
            human_seconds(report.winner_seconds),
            (s - 1.0) * 100.0
        ),
        _ => println!(
            "fastest: the model's optimum (rank 1, {})",
            human_seconds(report.winner_seconds)
        ),
    }
}
