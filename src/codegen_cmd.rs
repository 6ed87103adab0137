//! `absinthe codegen PROGRAM`: emit tiled OpenMP C++ or CUDA for a solution (solving first
//! when no `--solution` is given).

use std::path::PathBuf;
use std::process::ExitCode;

use absinthe_codegen::cuda::{plan, GpuLimits};
use absinthe_codegen::ranks::{decompose, RankOptions};
use absinthe_codegen::render::HarnessOptions;
use absinthe_codegen::{lower, lower_cuda, Schedule};
use absinthe_model::cost_model::boxes::BlockLimits;
use absinthe_model::cost_model::evaluate::{evaluate, Configuration};
use absinthe_model::formats::machine::{Machine, ModelMachine};
use absinthe_model::output::solution::Solution;
use absinthe_model::{Analysis, FileError};
use anyhow::Context;
use clap::Args;

use crate::args::load;
use crate::args::renderer;
use crate::args::Target;
use crate::args::{MachineArg, SearchArgs};
use crate::solving::solve_program;
use absinthe_codegen::files::{check_output, write_files};

/// Emit tiled OpenMP C++ or CUDA for a program: the kernels and, with `--harness`, a main
/// program that verifies them against the naive reference bit for bit and times them.
///
/// With `--target cuda` and no `--machine`, machines/h100.yaml is used (its `gpu:` section
/// sets the shared-memory limit and the number of tiles the MILP asks for). CUDA blocks own
/// x-y tiles and stream along z through rolling shared-memory buffers (`--no-stream`: whole
/// tiles). Build with FMA and `-DABSINTHE_FMA_BUILD` to time (verified within a tolerance),
/// or with `--fmad=false` for the bit-exact build.
///
/// Examples:
///   absinthe codegen configs/hdiff.yaml --harness -o out/
///   absinthe codegen configs/hdiff.yaml --solution hdiff.solution.yaml -o out/
///   g++ -O3 -march=native -fopenmp -ffp-contract=off -fno-trapping-math -fno-math-errno \
///       out/*.cpp -o hdiff && ./hdiff 64
///   absinthe codegen configs/hdiff.yaml --target cuda --harness -o cu/
///   nvcc -O3 -arch=sm_90 -DABSINTHE_FMA_BUILD -Xcompiler -fopenmp cu/hdiff.cu -lgomp \
///       -o hdiff_cuda && ./hdiff_cuda 64
///   nvcc -O3 -arch=sm_90 --fmad=false -Xcompiler -fopenmp,-ffp-contract=off cu/hdiff.cu \
///       -lgomp -o hdiff_exact
#[derive(Args, Clone)]
#[command(verbatim_doc_comment)]
pub struct CodegenArgs {
    /// The program file.
    pub program: PathBuf,
    #[command(flatten)]
    pub machine: MachineArg,
    /// A solution file (`absinthe solve -o`); without one the program is solved first.
    #[arg(long)]
    pub solution: Option<PathBuf>,
    #[command(flatten)]
    pub search: SearchArgs,
    #[command(flatten)]
    pub scalars: crate::args::ScalarArgs,
    /// How to solve: highs, cbc or z3 (MILP backends), or dp (exact dynamic program).
    #[arg(long, default_value = "highs", value_parser = crate::args::parse_method)]
    pub solver: absinthe_solvers::method::Method,
    #[arg(long, value_enum, default_value_t = Target::Openmp)]
    pub target: Target,
    /// Also emit the verification and timing harness (`<program>_harness.cpp`).
    #[arg(long)]
    pub harness: bool,
    /// With --target cuda: a streamed group copies the arrays its stencils read at x-y offsets
    /// into shared memory, plane by plane, while the block stays within the model's
    /// shared-memory capacity (docs/MODEL.md). Off by default: on an H100 it sped up 3 of 10
    /// programs and slowed 7 (docs/decisions/0028-input-staging-opt-in.md).
    #[arg(long)]
    pub stage: bool,
    /// With --ranks: compute the cells of each group that read no exchanged value while its
    /// exchanges travel, and the border after they arrive (by default each group exchanges,
    /// then computes its sub-domain: on a 2-core machine over shared memory the split cost more
    /// than the exchange it hid, docs/decisions/0031-mpi-decomposition.md).
    #[arg(long, requires = "ranks")]
    pub overlap: bool,
    /// Timed runs the harness does by default (the first quarter is discarded); with --harness.
    #[arg(long, default_value_t = 64, value_parser = crate::args::parse_runs, requires = "harness")]
    pub runs: usize,
    /// Read templates from this directory first (a copy of codegen/templates).
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// Output directory.
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,
}

/// The configuration to generate code for, with what lowering it takes.
struct Chosen {
    program: absinthe_model::Program,
    analysis: Analysis,
    config: Configuration,
    view: ModelMachine,
    /// The program as written and its analysis: what the harness verifies against.
    original: (absinthe_model::Program, Analysis),
    /// Where the configuration came from, for the summary line.
    source: String,
}

fn chosen(args: &CodegenArgs) -> anyhow::Result<Chosen> {
    if let Some(grid) = args.search.ranks {
        grid.buildable(false).map_err(anyhow::Error::msg)?;
    }
    if let Some(sol) = &args.solution {
        args.search.refuse_search_flags("codegen")?;
        let (original, original_analysis) = load(&args.program)?;
        let solution = Solution::load(sol)?;
        let program = solution
            .program_on_ranks(&original, args.search.ranks)
            .map_err(|d| FileError::new(sol, d))?;
        let (_, view) = args.machine.load_for_solution(&program, solution.model)?;
        let analysis = Analysis::weighed(&program, view.params.operations)
            .map_err(|d| FileError::new(sol, d))?;
        let config = solution
            .configuration(&analysis)
            .map_err(|d| FileError::new(sol, d))?;
        Ok(Chosen {
            program,
            analysis,
            config,
            view,
            original: (original, original_analysis),
            source: format!("{}", sol.display()),
        })
    } else {
        let solved = solve_program(&args.program, &args.machine, &args.search, args.solver)?;
        let (_, view) = args.machine.load(&solved.program)?;
        Ok(Chosen {
            program: solved.program,
            analysis: solved.analysis,
            config: solved.optimum.config,
            view,
            original: (solved.original, solved.original_analysis),
            source: format!("the {} optimum", solved.optimum.solution.solver),
        })
    }
}

fn schedule(args: &CodegenArgs, c: &Chosen) -> anyhow::Result<Schedule> {
    let cost = evaluate(&c.analysis, &c.view, &c.config);
    if let (Some(path), Some(why), None) = (&args.solution, &cost.infeasible, args.search.ranks) {
        let p = path.display();
        eprintln!("note: {p}: the model calls this configuration infeasible ({why}); generated as written");
    }
    // A streamed group walks z in CUDA (blocks own x-y tiles) in blocks of at most the device's
    // threads (as the model's shared-memory test), staging inputs within it with --stage.
    let schedule = if args.target == Target::Cuda {
        let limits = if args.stage {
            BlockLimits::staged(&c.view)
        } else {
            BlockLimits::of(&c.view)
        };
        lower_cuda(&c.program, &c.analysis, &c.config, &cost, limits)
    } else {
        lower(&c.program, &c.analysis, &c.config, &cost)
    };
    // A configuration from a file is that file's: its errors name it (and the key).
    let schedule = schedule.map_err(|e| match &args.solution {
        Some(path) => anyhow::anyhow!("{}: {e}", path.display()),
        None => e.into(),
    })?;
    Ok(schedule.with_reference(&c.original.0, &c.original.1))
}

pub fn run(mut args: CodegenArgs) -> anyhow::Result<ExitCode> {
    // Checked even where a solution file makes no solve run: a bad value is a mistake.
    args.search.solve_options()?;
    // An output that cannot be a directory is refused before the solve, not after it.
    check_output(&args.output, true)?;
    if args.target == Target::Cuda && args.machine.machine.is_none() {
        let gpu = crate::output::shipped_file(crate::args::DEFAULT_GPU_MACHINE)
            .context("--target cuda without --machine uses the shipped H100 file")?;
        args.machine.machine = Some(gpu);
    }
    let renderer = renderer(args.templates.as_deref())?;
    if args.target == Target::Cuda && args.search.ranks.is_some() {
        anyhow::bail!("--ranks generates OpenMP code for MPI ranks: drop --target cuda");
    }
    if args.stage && args.target != Target::Cuda {
        anyhow::bail!("--stage stages inputs in a CUDA block's shared memory: add --target cuda");
    }
    let machine = Machine::load(&args.machine.path()?)?;
    if let Some(why) = machine.target_mismatch(args.target == Target::Cuda) {
        anyhow::bail!("{}: {why}", args.machine.path()?.display());
    }
    let chosen = chosen(&args)?;
    let schedule = schedule(&args, &chosen)?;
    let source = &chosen.source;
    let scalars = match args.harness {
        true => args.scalars.values(&load(&args.program)?.0)?,
        false if !args.scalars.scalar.is_empty() => {
            anyhow::bail!("--scalar sets a value in the harness: add --harness")
        }
        false => Vec::new(),
    };
    let harness = args.harness.then(|| HarnessOptions {
        runs: args.runs,
        scalars,
        ..HarnessOptions::default()
    });
    let files = match (args.target, args.search.ranks) {
        (_, Some(grid)) => {
            let c = &chosen;
            let d = decompose(
                &c.program,
                &c.analysis,
                &c.config,
                &c.view,
                RankOptions {
                    grid,
                    overlap: args.overlap,
                },
                (&c.original.0, &c.original.1),
            )?;
            renderer.mpi(&d, harness.as_ref())?
        }
        (Target::Openmp, None) => renderer.openmp(&schedule, harness.as_ref())?,
        (Target::Cuda, None) => {
            let limits = GpuLimits::of_machine(&machine);
            renderer.cuda(&schedule, &plan(&schedule, &limits)?, harness.as_ref())?
        }
    };
    let machine = args.machine.path()?;
    let mut inputs = vec![args.program.as_path(), machine.as_path()];
    inputs.extend(args.solution.as_deref());
    write_files(&args.output, &files.files, &inputs)?;
    eprintln!(
        "wrote {} to {} (configuration from {source}: groups {:?}, tiles {:?}, streamed groups {:?})",
        files
            .files
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        args.output.display(),
        schedule.configuration.groups,
        schedule.configuration.tiles,
        schedule.configuration.stream
    );
    if schedule.reference.len() != schedule.configuration.groups.len() {
        eprintln!(
            "inlined: {} (a harness, --harness, verifies against the original program's reference)",
            schedule.inlined_names()
        );
    }
    Ok(ExitCode::SUCCESS)
}
