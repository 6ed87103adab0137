//! `absinthe bench PROGRAM`: generate, compile, run and verify several variants of a program
//! (the naive reference, unfused, fused, the optimum, fixed groupings, random configurations)
//! and compare the model's prediction with the measured time and a streaming roofline.

use std::path::PathBuf;
use std::process::ExitCode;

use absinthe_model::language::program::Program;
use clap::Args;

use absinthe_measure::bench::Verification;
use absinthe_measure::bench::{accuracy_points, BenchOptions, BenchTarget, Build, Row};
use absinthe_measure::runner::rounds_for;
use absinthe_measure::variants::{parse_variants, Variant};
use clap::builder::{PossibleValuesParser, TypedValueParser};

use crate::args::{bench_of, plan_on, FlushArgs, MachineArg, SearchArgs};
use crate::output::Format;
use absinthe_model::output::text::human_seconds;
use absinthe_model::output::text::{groups_cell, table, tiles_cell};

/// Generate, compile, run and verify variants of a program; compare predicted and measured.
///
/// Variants (comma-separated): `opt` (the MILP optimum), `naive` (the reference itself:
/// unfused, untiled, parallel over k), `unfused` (every stencil its own group, MILP-chosen
/// tiles), `fused` (one group, if the model finds it feasible), `unstreamed` (the optimum in
/// the original schedule space: no group streams; on CUDA the whole-tile kernels, to compare
/// with `opt`'s z-streaming ones), `groups:0,0,1,...` (fixed
/// groups, MILP-chosen tiles), `random:N` (N random feasible configurations, seeded),
/// `noinline` (the optimum with nothing inlined; `opt` inlines what the search chose),
/// `top:K` (the K best configurations by the model, from the exact search, named top1..topK,
/// with `opt`'s inline set), `sets:M` (the optima of M other inline sets than `opt`'s: every
/// stencil inlined, then the cheapest the search found, named set2..),
/// `solution:FILE` (the configuration and inline set of a solution file, e.g. one `tune`
/// wrote), `autotune` (the original work's exhaustive tile auto-tuning for the optimum's
/// groups: tile sizes 1, 2, 4, ... along x and y and 1, 2, 4, 12, 30, 60 along z, the same for
/// every group; 294 variants at 64x64x60).
/// A variant that fails verification makes the command exit with status 1.
///
/// Examples:
///   absinthe bench configs/hdiff.yaml --variants naive,unfused,opt
///   absinthe bench configs/heat4.yaml --variants opt,groups:0,0,1,1,random:4 --format json
///   absinthe bench configs/heat4.yaml --variants solution:heat4.tuned.yaml,opt,autotune
///   absinthe bench configs/hdiff.yaml --target cuda-emulated --machine machines/h100.yaml \
///       --variants naive,unstreamed,opt
#[derive(Args, Clone)]
#[command(verbatim_doc_comment)]
pub struct BenchArgs {
    /// The program file.
    pub program: PathBuf,
    #[command(flatten)]
    pub machine: MachineArg,
    #[command(flatten)]
    pub search: SearchArgs,
    /// How to solve: highs, cbc or z3 (MILP backends), or dp (exact dynamic program).
    #[arg(long, default_value = "highs", value_parser = crate::args::parse_method)]
    pub solver: absinthe_solvers::method::Method,
    /// Variants to run, e.g. naive,unfused,opt,groups:0,0,1,random:3 [default: naive,unfused,opt;
    /// with --ranks: opt, opt+overlap and the single-process optimum decomposed].
    #[arg(long, value_parser = |s: &str| parse_variants(s).map(Variants))]
    pub variants: Option<Variants>,
    /// Timed runs per variant; the first quarter is discarded.
    #[arg(long, default_value_t = 64, value_parser = crate::args::parse_runs)]
    pub runs: usize,
    #[command(flatten)]
    pub flush: FlushArgs,
    #[command(flatten)]
    pub scalars: crate::args::ScalarArgs,
    /// Also time every variant with warm caches (no flush before a run, so the arrays stay in
    /// the caches the previous run left them in), interleaved with the flushed runs, into
    /// `measured_warm_seconds`. Flushed minus warm is what fetching the arrays from memory
    /// adds; the model's fast and compute parts should account for the warm time alone.
    #[arg(long)]
    pub warm: bool,
    /// Seed of `random:N`.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Skip the bandwidth measurement and the roofline columns.
    #[arg(long)]
    pub no_roofline: bool,
    /// Read templates from this directory first.
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// Draw predicted against measured time into FILE.png or FILE.svg (log axes, the
    /// diagonal and the ±20% lines, the optimum marked).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Build for bit-exact verification (`-ffp-contract=off`, every value compared bit for bit)
    /// instead of the timed build (FMA contraction allowed, values compared within 1024 ulps
    /// of each array's largest magnitude).
    #[arg(long)]
    pub exact: bool,
    /// Build the kernels with relaxed floating-point math: the timed build plus
    /// `-fassociative-math -freciprocal-math -fno-signed-zeros`, so the compiler may
    /// reassociate and distribute arithmetic (`(a/60) u - (b/60) w` becomes one product by
    /// 1/60), as Halide does by default. NaN and infinity semantics are kept. The reference
    /// is built without them and the kernels are verified against it within the same 1024 ulps
    /// of each array's largest magnitude; a program whose values cancel badly fails that check
    /// and the command says so.
    #[arg(long, conflicts_with = "exact")]
    pub relaxed_math: bool,
    /// What to build: the OpenMP kernels, or the host emulation of the CUDA kernels (one
    /// block at a time on the CPU; it verifies the GPU index arithmetic, its times are not GPU
    /// times).
    #[arg(long, default_value = "openmp", value_parser = PossibleValuesParser::new(BenchTarget::NAMES).try_map(|s| s.parse::<BenchTarget>()))]
    pub target: BenchTarget,
}

/// The parsed `--variants` list.
#[derive(Clone, Debug)]
pub struct Variants(pub Vec<Variant>);

impl BenchArgs {
    /// The bench's options from the flags (`scalars` filled by `bench_of`).
    pub fn options(&self) -> anyhow::Result<BenchOptions> {
        Ok(BenchOptions {
            runs: self.runs,
            flush: self.flush.flush()?,
            warm: self.warm,
            build: Build::of_flags(self.exact, self.relaxed_math),
            target: self.target,
            scalars: Vec::new(),
            roofline: !self.no_roofline,
            cache_model: self.format == Format::Json,
        })
    }
}

pub fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let options = args.options()?;
    let bench = bench_of(
        &args.program,
        &args.machine,
        args.templates.as_deref(),
        &args.scalars,
        options,
    )?;
    let settings = args
        .search
        .plan_settings(&bench.program, args.solver, args.seed)?;
    let variants = match &args.variants {
        Some(v) => v.0.clone(),
        None => vec![Variant::Naive, Variant::Unfused, Variant::Opt],
    };
    let planned = plan_on(&bench, &variants, &settings)?;
    let (rows, failed) = bench.time(&planned)?;
    if args.format != Format::Table {
        for r in rows
            .iter()
            .filter(|r| r.roofline_fraction.is_some_and(|f| f > 1.0))
        {
            eprintln!(
                "warning: {} measured faster than the bandwidth bound allows ({:.0}%): the timing was disturbed; run again",
                r.variant,
                r.roofline_fraction.unwrap_or(0.0) * 100.0
            );
        }
    }
    let (program, bw) = (&bench.program, bench.bandwidth);
    let points = accuracy_points(planned.iter().zip(&rows));
    if let Some(path) = &args.plot {
        let title = format!(
            "{}: predicted vs measured ({} variants)",
            program.name,
            points.len()
        );
        absinthe_measure::accuracy::plot(path, &title, &points)?;
        eprintln!("wrote {}", path.display());
    }
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&rows)?),
        Format::Yaml => print!(
            "{}",
            absinthe_model::formats::yaml::to_string(&rows).map_err(anyhow::Error::msg)?
        ),
        Format::Table => print_table(
            program,
            &rows,
            bw,
            args.runs,
            bench.options.build,
            &bench.flush_phrase(),
        ),
    }
    // R² and rank correlation over two points say nothing.
    if points.len() >= 3 {
        let summary = accuracy_summary(
            &absinthe_measure::accuracy::summarize(&points),
            bench.view.model,
        );
        // The summary goes with the table; beside JSON or YAML it goes to standard error.
        if args.format == Format::Table {
            println!("\n{summary}");
        } else {
            eprintln!("{summary}");
        }
    }
    if let (Format::Table, Some(summary)) = (args.format, speedup_summary(program, &rows)) {
        println!("\n{summary}");
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_table(
    program: &Program,
    rows: &[Row],
    bw: Option<f64>,
    runs: usize,
    build: Build,
    flush: &str,
) {
    let rounds = rounds_for(runs);
    let opt = |x: Option<f64>| x.map_or("-".to_string(), human_seconds);
    // `--warm`: a column after `measured`.
    let warm = rows.iter().any(|r| r.measured_warm_seconds.is_some());
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut cells = vec![
                r.variant.clone(),
                groups_cell(&r.groups),
                tiles_cell(&r.tiles),
                if r.predicted_seconds.is_finite() {
                    human_seconds(r.predicted_seconds)
                } else {
                    "-".into()
                },
                opt(r.measured_seconds),
                opt(r.min),
                opt(r.max),
                r.roofline_fraction.map_or("-".into(), |f| {
                    let mark = if f > 1.0 { " (!)" } else { "" };
                    format!("{:.1}%{mark}", f * 100.0)
                }),
                r.schedule.clone(),
                match r.verified {
                    Some(true) if r.verification == Some(Verification::Tolerance) => {
                        "yes (tol)".into()
                    }
                    Some(true) => "yes".into(),
                    Some(false) => "NO".into(),
                    None => "-".into(),
                },
                r.status.to_string(),
            ];
            if warm {
                cells.insert(5, opt(r.measured_warm_seconds));
            }
            cells
        })
        .collect();
    println!(
        "{}: median of the runs kept from {} ({} interleaved round(s) of {}, the first quarter of each discarded), {}{}; {}",
        program.name,
        rounds * runs.div_ceil(rounds),
        rounds,
        runs.div_ceil(rounds),
        flush,
        if warm {
            " (`warm`: as many runs with none flushed)"
        } else {
            ""
        },
        match rows.iter().find_map(|r| r.verification) {
            Some(Verification::Tolerance) if build == Build::RelaxedMath => "relaxed-math build (FMA, reassociation and reciprocals in the kernels; the reference IEEE), verified within 1024 ulps of each array's largest magnitude",
            Some(Verification::Tolerance) => "FMA build, verified within 1024 ulps of each array's largest magnitude (--exact: bit for bit)",
            _ => "exact build (-ffp-contract=off), verified bit for bit",
        }
    );
    if let (Some(b), Some(r)) = (bw, rows.first()) {
        println!(
            "roofline: triad bandwidth {:.2} GB/s; compulsory traffic {:.1} MB (inputs read once over the box their readers touch, halo included; outputs written once) -> at least {}",
            b / 1e9,
            r.compulsory_bytes as f64 / 1e6,
            opt(r.roofline_seconds)
        );
    }
    println!();
    let mut headers = vec![
        "variant",
        "groups",
        "tiles",
        "predicted",
        "measured",
        "min",
        "max",
        "roofline",
        "schedule",
        "verified",
        "status",
    ];
    if warm {
        headers.insert(5, "warm");
    }
    print!("{}", table(&headers, &body));
    print_noise_note(rows);
}

/// The footnote of a roofline fraction over 100% (marked `(!)`): timing noise, not a result.
fn print_noise_note(rows: &[Row]) {
    if rows
        .iter()
        .any(|r| r.roofline_fraction.is_some_and(|f| f > 1.0))
    {
        println!(
            "(!) faster than the bandwidth bound allows: the timing or the bandwidth measurement was disturbed (other load on the machine?); not a result, run again"
        );
    }
}

/// One paragraph for people: what `opt` chose, how much faster it ran than `naive` and
/// `unfused` (when measured), and how far the model's prediction was from the measurement.
/// None when a variant failed verification: a wrong result's speed means nothing.
fn speedup_summary(program: &Program, rows: &[Row]) -> Option<String> {
    if rows.iter().any(|r| r.verified == Some(false)) {
        return None;
    }
    let opt = rows.iter().find(|r| r.of == Some(Variant::Opt))?;
    let measured = opt.measured_seconds?;
    let ranges = absinthe_model::cost_model::evaluate::ranges_of(&opt.groups);
    // `groups` index the stencils that are not inlined.
    let kept: Vec<&str> = program
        .stencils
        .iter()
        .map(|s| s.name.as_str())
        .filter(|n| !opt.inline.iter().any(|i| i == n))
        .collect();
    let groups: Vec<String> = ranges
        .iter()
        .zip(&opt.tiles)
        .enumerate()
        .map(|(g, (r, t))| {
            let names: Vec<&str> = r.clone().map(|i| kept[i]).collect();
            let streamed = if opt.stream.contains(&g) {
                ", streamed"
            } else {
                ""
            };
            format!(
                "[{}] in {}x{}x{} tiles{streamed}",
                names.join(" "),
                t[0],
                t[1],
                t[2]
            )
        })
        .collect();
    let mut out = format!(
        "summary: opt runs {} stencils as {} group{}: {}.",
        opt.groups.len(),
        ranges.len(),
        if ranges.len() == 1 { "" } else { "s" },
        groups.join(", ")
    );
    if !opt.inline.is_empty() {
        out.push_str(&format!(
            "\n  inlined (computed where read): {}",
            opt.inline.join(" ")
        ));
    }
    for (base, variant) in [("naive", Variant::Naive), ("unfused", Variant::Unfused)] {
        if let Some(m) = rows
            .iter()
            .find(|r| r.of.as_ref() == Some(&variant))
            .and_then(|r| r.measured_seconds)
        {
            out.push_str(&format!(
                "\n  {:.2}x faster than {base} ({} -> {})",
                m / measured,
                human_seconds(m),
                human_seconds(measured)
            ));
        }
    }
    if opt.predicted_seconds.is_finite() && measured > 0.0 {
        out.push_str(&format!(
            "\n  the model predicted {} for opt: {:+.0}% off the measured {}",
            human_seconds(opt.predicted_seconds),
            (opt.predicted_seconds / measured - 1.0) * 100.0,
            human_seconds(measured)
        ));
    }
    Some(out)
}

fn accuracy_summary(
    s: &absinthe_measure::accuracy::Summary,
    model: absinthe_model::formats::model_kind::ModelKind,
) -> String {
    format!(
        "{model} model's accuracy over {} generated variants: R² {:.3}, {:.0}% within 20% of measured, Spearman rank correlation {:.3}",
        s.variants,
        s.r2,
        s.within_20_percent * 100.0,
        s.spearman
    )
}
