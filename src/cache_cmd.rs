//! `absinthe cache PROGRAM`: each cache level's misses of a variant's kernel, counted without
//! running it, and with `--trace` the compiled kernel's own access stream.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use absinthe_measure::bench::BenchOptions;
use absinthe_measure::variants::{input_files, parse_countable, Variant};
use anyhow::Context;
use clap::Args;

use crate::args::{plan_on, untimed_bench_of, MachineArg, SearchArgs};
use crate::output::TableOrJson;
use absinthe_codegen::files::outputs_apart;
use absinthe_measure::progress::Progress;

/// Count the cache misses of a variant's OpenMP kernel (for `naive`, of the reference the
/// harness verifies against) without running it (HAYSTACK's model):
/// for the loop order the generated code executes, every access of every thread goes through
/// each cache level as through an LRU cache of the thread's own (write-allocate, no
/// prefetching, levels independent; a shared level is each thread's equal share). Each miss is
/// compulsory (the thread's first access of the line) or capacity (any other), counted for a
/// fully associative cache and for the level's sets and ways (where capacity includes
/// conflicts).
///
/// The machine file is one `solve` takes (learned, or `machines/default.yaml`): the variants
/// are planned and lowered with its model, and run with its `cores` threads. The levels come
/// from its `caches:` list, else from sysfs.
///
/// With `--trace FILE` the kernel is also built with its trace harness, run once on the
/// harness's inputs (and verified), and every access it makes is written to FILE, one line
/// each, thread by thread in execution order: `THREAD R|W ADDRESS` (decimal bytes). Replaying
/// it through any LRU simulator gives the fully associative counts above, and the
/// set-associative ones of each level whose sets times its line divide 2 MiB; other levels'
/// sets depend on where the arrays lie beyond 2 MiB, which the model fixes and a run does not
/// (docs/MODEL.md, "Cache model"). The trace build keeps every access in memory: a variant of
/// more than 134,217,728 accesses is not traced.
///
/// Examples:
///   absinthe cache configs/hdiff.yaml
///   absinthe cache configs/hdiff.yaml --variant unfused --accesses
///   absinthe cache configs/hdiff.yaml --solution hdiff.solution.yaml --format json
///   absinthe cache configs/heat4.yaml --variant groups:0,0,1,1 --trace heat4.trace
#[derive(Args, Clone)]
// `--ranks` comes with the search flags; this command refuses it, so its help leaves it out.
#[command(verbatim_doc_comment, mut_arg("ranks", |a| a.hide(true)))]
pub struct CacheArgs {
    /// The program file.
    pub program: PathBuf,
    #[command(flatten)]
    pub machine: MachineArg,
    #[command(flatten)]
    pub search: SearchArgs,
    /// How to solve: highs, cbc or z3 (MILP backends), or dp (exact dynamic program).
    #[arg(long, default_value = "highs", value_parser = crate::args::parse_method)]
    pub solver: absinthe_solvers::method::Method,
    /// The variant: opt, naive (the reference's loops), unfused, fused, unstreamed, noinline
    /// or groups:G,G,... (as `bench --variants` takes them).
    #[arg(long, default_value = "opt", conflicts_with = "solution")]
    pub variant: String,
    /// A solution file (`absinthe solve -o`, `absinthe tune`) instead of a variant.
    #[arg(long, value_name = "FILE")]
    pub solution: Option<PathBuf>,
    /// Also build the kernel's trace build, run it, and write every access to FILE.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Estimate instead of counting: each group from empty caches, from a sample of about
    /// ACCESSES accesses of its first thread whose misses per access at the sample's end are
    /// charged to the rest (docs/MODEL.md, "Sampled counts"). With 2097152, tiled groups are
    /// estimated 4-112x faster than counted (untiled ones are counted whole, at the count's
    /// cost); a larger sample is closer (the errors measured: docs/RESULTS.md, "Cache model").
    /// At least 65536: smaller samples end in the first, cold tiles. The JSON carries
    /// `"sampled": ACCESSES`. Not for `naive` or with --trace.
    #[arg(long, value_name = "ACCESSES", conflicts_with = "trace", value_parser = clap::value_parser!(u64).range(65536..=1 << 40))]
    pub sample: Option<u64>,
    /// Also list every access site (the JSON always has them).
    #[arg(long)]
    pub accesses: bool,
    #[arg(long, value_enum, default_value_t = TableOrJson::Table)]
    pub format: TableOrJson,
}

pub fn run(args: CacheArgs) -> anyhow::Result<ExitCode> {
    args.search.refuse_ranks("cache")?;
    let variant = match &args.solution {
        Some(path) => {
            args.search.refuse_search_flags("cache")?;
            Variant::Solution(path.clone())
        }
        None => parse_countable(&args.variant).map_err(anyhow::Error::msg)?,
    };
    let (machine, variants) = (args.machine.path()?, [variant]);
    outputs_apart(
        &[args.trace.as_deref()],
        &input_files(&args.program, &machine, &variants),
    )?;
    let [variant] = variants;
    let options = BenchOptions::untimed();
    // The scalars' values do not change which addresses a run touches: their defaults.
    let scalars = crate::args::ScalarArgs::default();
    let bench = untimed_bench_of(&args.program, &args.machine, None, &scalars, options)?;
    let settings = args.search.plan_settings(&bench.program, args.solver, 1)?;
    let planned = plan_on(&bench, &[variant], &settings)?;
    let p = &planned[0];
    if let Some(why) = &p.skipped {
        anyhow::bail!("variant {}: {why}", p.name);
    }
    let levels = bench.cache_levels()?;
    crate::output::step(&format!(
        "counting the accesses of {} ({}) with {} thread(s) ...",
        bench.program.name,
        p.name,
        bench.threads()
    ));
    let started = Instant::now();
    let report = {
        let _progress = Progress::start(format!("counting {}", p.name));
        bench
            .cache_counts(p, &levels, args.sample)
            .with_context(|| format!("variant {}", p.name))?
    };
    eprintln!("{}", report.done(started.elapsed().as_secs_f64()));
    if let Some(path) = &args.trace {
        crate::output::step("building and running the trace build ...");
        let run = {
            let _progress = Progress::start(format!("tracing {}", p.name));
            bench.trace(p, path, report.levels[0].counts.accesses)?
        };
        eprintln!(
            "wrote {} accesses of {} thread(s) to {} (the run verified)",
            run.accesses,
            run.threads,
            path.display(),
        );
    }
    crate::output::print(args.format, &report, report.text(args.accesses))?;
    Ok(ExitCode::SUCCESS)
}
