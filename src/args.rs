//! Argument groups and loaders shared by the commands (no command module imports another).

use std::path::{Path, PathBuf};

use absinthe_codegen::render::{Flush, Renderer};
use absinthe_measure::bench::BenchOptions;
use absinthe_measure::variants::{PlanError, PlanSettings, Planned, Variant};
use absinthe_measure::Bench;
use absinthe_model::cost_model::forms::{load_priced, Overrides};
use absinthe_model::cost_model::inline_search::InlinePolicy;
use absinthe_model::cost_model::options::{Encoding, MilpOptions, SearchSpace, SpaceFlags};
use absinthe_model::formats::limits;
use absinthe_model::formats::machine::{Machine, ModelMachine};
use absinthe_model::formats::model_kind::ModelKind;
use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::inline::indices_of;
use absinthe_model::language::program::Program;
use absinthe_model::FileError;
use absinthe_solvers::method::Method;
use absinthe_solvers::SolveOptions;
use anyhow::{bail, Context};
use clap::Args;

/// The machine file used when `--machine` is not given.
pub const DEFAULT_MACHINE: &str = "machines/default.yaml";

/// The GPU machine used by `codegen --target cuda` and `bench --target cuda-emulated` when no
/// `--machine` is given.
pub const DEFAULT_GPU_MACHINE: &str = "machines/h100.yaml";

/// Code generation targets (`codegen --target`, `learn --target`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// Tiled OpenMP C++.
    Openmp,
    /// CUDA: one kernel per group, one thread block per tile (`<program>.cu`), plus the host
    /// emulation of the same kernels (`<program>_emu.cpp`, builds with g++).
    Cuda,
}

/// Which machine file to use.
#[derive(Args, Clone)]
pub struct MachineArg {
    /// Machine file with the learned parameters [default: machines/default.yaml].
    #[arg(long, short = 'm')]
    pub machine: Option<PathBuf>,
    /// Override the machine file's `cache_fraction`: the share of `cache_bytes` one tile's
    /// working set may fill, in (0, 1]. Larger values admit larger tiles and stream less.
    #[arg(long, value_name = "F", value_parser = limits::parse_cache_fraction)]
    pub cache_fraction: Option<f64>,
    /// Override the machine file's `group_arrays`: the most arrays (inputs, outputs and tile
    /// buffers) one group may touch in a program streamed along y (no z offsets), at least 2;
    /// `none` lifts the limit.
    #[arg(long, value_name = "N|none", value_parser = parse_group_arrays)]
    pub group_arrays: Option<GroupArrays>,
    /// The form of the performance model [default: the one the machine file was learned for,
    /// else linear; with a solution file, the file's own]:
    /// `linear`, the ABSINTHE form with a store counted twice, the compute part, the crowding
    /// charge, inlining and streaming; or `absinthe`, the original model as published (its six
    /// parameters, a store weighted like a load, none of the rest), a reproduction mode
    /// (docs/MODEL.md, "Model forms").
    #[arg(long, value_name = "linear|absinthe", value_parser = ModelKind::parse)]
    pub model: Option<ModelKind>,
}

/// How the caches are emptied before each timed run (`learn`, `bench`, `tune`).
#[derive(Args, Clone, Debug)]
pub struct FlushArgs {
    /// How to empty the caches before each timed run: `evict` writes back and invalidates every
    /// cache line of the arrays and tile buffers the run touches (clflushopt), so they come from
    /// memory, at the cost of their size; `read` reads a buffer of 1.25 x the last-level cache
    /// (or --flush-bytes), as earlier versions did. A machine file is learned and used with the
    /// same mode. [default: evict on x86-64 and AArch64, read elsewhere]
    #[arg(long, value_enum, value_name = "MODE")]
    pub flush: Option<FlushMode>,
    /// Bytes read before each run, implying `--flush read`, at most 16 GiB [default: 1.25 x the
    /// last-level cache from sysfs, at most 1 GiB; 0: no flush at all].
    #[arg(long, value_name = "BYTES", value_parser = limits::parse_flush_bytes)]
    pub flush_bytes: Option<u64>,
}

/// `--flush`'s modes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushMode {
    Evict,
    Read,
}

impl FlushArgs {
    /// The flush these flags ask for.
    pub fn flush(&self) -> anyhow::Result<Flush> {
        let evict = self.flush.map(|m| matches!(m, FlushMode::Evict));
        Flush::of_flags(evict, self.flush_bytes).map_err(anyhow::Error::msg)
    }
}

/// Values of a program's run-time scalars (`codegen --harness`, `bench`, `tune`).
#[derive(Args, Clone, Debug, Default)]
pub struct ScalarArgs {
    /// The value of one of the program's run-time scalars (`scalars:`), e.g. `--scalar
    /// dt=10.0`; repeat it for several. The harness passes it to the kernel (as an exact
    /// hexadecimal literal, converted to the program's type). A scalar not given takes a fixed
    /// value in [0.5, 1.5) (`absinthe_value(2^32 + index, 0, 0, 0)`).
    #[arg(long = "scalar", value_name = "NAME=VALUE", value_parser = parse_scalar)]
    pub scalar: Vec<(String, f64)>,
}

impl ScalarArgs {
    /// The values of `program`'s scalars, in its order.
    pub fn values(&self, program: &Program) -> anyhow::Result<Vec<f64>> {
        program
            .scalar_values(&self.scalar)
            .map_err(anyhow::Error::msg)
    }
}

/// A `--scalar` value: `NAME=VALUE`, the value a finite number.
fn parse_scalar(text: &str) -> Result<(String, f64), String> {
    absinthe_model::language::scalars::parse_assignment(text)
}

/// A `--solver` value: `dp` or a MILP backend compiled into this build.
pub fn parse_method(text: &str) -> Result<absinthe_solvers::method::Method, String> {
    text.parse()
        .map_err(|e: absinthe_solvers::SolverError| e.to_string())
}

/// A `--solver` value where only an LP/MILP backend will do (`learn`'s fit).
pub fn parse_backend(text: &str) -> Result<absinthe_solvers::method::Backend, String> {
    text.parse()
        .map_err(|e: absinthe_solvers::SolverError| e.to_string())
}

/// A `--runs` value: 1 to [`limits::MAX_RUNS`].
pub fn parse_runs(text: &str) -> Result<usize, String> {
    limits::parse_count(text, "timed runs", limits::MAX_RUNS)
}

/// A `--threads` value for the solvers: 1 to [`limits::MAX_SOLVER_THREADS`].
pub fn parse_threads(text: &str) -> Result<usize, String> {
    limits::parse_count(text, "threads", limits::MAX_SOLVER_THREADS)
}

/// A `--group-arrays` value: a limit, or none.
#[derive(Clone, Copy, Debug)]
pub struct GroupArrays(pub Option<usize>);

fn parse_group_arrays(text: &str) -> Result<GroupArrays, String> {
    limits::parse_group_arrays(text).map(GroupArrays)
}

impl MachineArg {
    /// The machine file: `--machine`, else the shipped `machines/default.yaml` found from any
    /// working directory (see [`crate::output::shipped_file`]).
    pub fn path(&self) -> anyhow::Result<PathBuf> {
        match &self.machine {
            Some(p) => Ok(p.clone()),
            None => crate::output::shipped_file(DEFAULT_MACHINE)
                .context("no --machine given and the default machine file is missing"),
        }
    }

    /// Loads the machine file and its model view for a program, priced with `--model`, else
    /// the form the file's parameters were fitted for.
    pub fn load(&self, program: &Program) -> anyhow::Result<(Machine, ModelMachine)> {
        self.load_priced(program, self.model)
    }

    /// [`MachineArg::load`] for a program whose solution file was priced with `solved`: the
    /// view is priced the same way, and a `--model` that names another form is refused.
    pub fn load_for_solution(
        &self,
        program: &Program,
        solved: ModelKind,
    ) -> anyhow::Result<(Machine, ModelMachine)> {
        match self.model {
            Some(m) if m != solved => {
                bail!("--model {m}: the solution file was priced with the {solved} model")
            }
            _ => self.load_priced(program, Some(solved)),
        }
    }

    fn load_priced(
        &self,
        program: &Program,
        model: Option<ModelKind>,
    ) -> anyhow::Result<(Machine, ModelMachine)> {
        let overrides = Overrides {
            cache_fraction: self.cache_fraction,
            group_arrays: self.group_arrays.map(|GroupArrays(n)| n),
            model,
        };
        let priced = load_priced(&self.path()?, overrides, program.value_type.bytes())?;
        if let Some(w) = &priced.warning {
            eprintln!("warning: {w}");
        }
        Ok((priced.machine, priced.view))
    }
}

/// Solver and search settings shared by the commands that solve.
#[derive(Args, Clone)]
pub struct SearchArgs {
    /// Stop after S seconds: a MILP with its best configuration and gap, solve's searches with an error.
    #[arg(long, value_name = "S", value_parser = SolveOptions::parse_time_limit)]
    pub time_limit: Option<f64>,
    /// Relative optimality gap at which the solver stops, in [0, 1).
    #[arg(long, default_value_t = 1e-4, value_parser = SolveOptions::parse_gap)]
    pub gap: f64,
    /// Solver threads, 1 to 256 [default: the solver's own].
    #[arg(long, value_parser = parse_threads)]
    pub threads: Option<usize>,
    /// Fix the group index of each stencil, e.g. 0,0,1,1 (starts at 0, steps of 0 or 1).
    #[arg(long, value_delimiter = ',', value_name = "G,G,...")]
    pub fix_groups: Option<Vec<usize>>,
    /// Lower bounds on the tile counts along i,j,k, e.g. 1,2,2.
    #[arg(long, value_delimiter = ',', value_name = "NX,NY,NZ")]
    pub tiles_min: Option<Vec<usize>>,
    /// Upper bounds on the tile counts along i,j,k.
    #[arg(long, value_delimiter = ',', value_name = "NX,NY,NZ")]
    pub tiles_max: Option<Vec<usize>>,
    /// How the MILP is written: ranges (one binary per range that may form a group; tight) or
    /// digits (the ABSINTHE encoding: group indices, binary-digit products).
    #[arg(long, default_value = "ranges", value_parser = parse_encoding)]
    pub encoding: Encoding,
    /// Keep to the original schedule space: no group streams (by default a group streams
    /// along z, or y for programs without z offsets, when that shrinks its working set).
    #[arg(long)]
    pub no_stream: bool,
    /// Inline nothing. By default the stencils that are not outputs may be computed where they
    /// are read instead of stored: every inline set is tried when there are at most 6 such
    /// stencils, a greedy search runs up to 24, and the set with the cheapest optimum wins.
    #[arg(long, conflicts_with = "inline")]
    pub no_inline: bool,
    /// Inline exactly these stencils (names, e.g. flx_u,fly_u), instead of searching.
    #[arg(long, value_delimiter = ',', value_name = "NAME,NAME,...")]
    pub inline: Option<Vec<String>>,
    /// Do not start the digits MILP from the DP's optimum (by default it does, so a time limit
    /// always ends with a configuration, a bound and a gap).
    #[arg(long)]
    pub no_warm_start: bool,
    /// Show the solver's log.
    #[arg(long, short)]
    pub verbose: bool,
    /// Decompose the domain over a PX,PY grid of MPI ranks along x and y: the search prices
    /// one rank's sub-domain, with the node's threads shared among the ranks, plus its halo
    /// exchanges before each group (the machine file's `network:`, from `learn --ranks`), with
    /// the exact DP; `codegen` and `bench` generate the decomposed code (docs/USAGE.md, "Many
    /// ranks").
    #[arg(long, value_name = "PX,PY", value_parser = absinthe_model::cost_model::ranks::Grid::parse)]
    pub ranks: Option<absinthe_model::cost_model::ranks::Grid>,
}

fn parse_encoding(s: &str) -> Result<Encoding, String> {
    Encoding::parse(s)
}

impl SearchArgs {
    /// The search restrictions: the program's `constraints:` block, overridden by the flags.
    pub fn milp_options(&self, program: &Program) -> anyhow::Result<MilpOptions> {
        let flags = SpaceFlags {
            fix_groups: self.fix_groups.as_deref(),
            tiles_min: self.tiles_min.as_deref(),
            tiles_max: self.tiles_max.as_deref(),
            no_stream: self.no_stream,
        };
        Ok(MilpOptions {
            encoding: self.encoding,
            warm_start: !self.no_warm_start,
            space: SearchSpace::of_program(program, flags).map_err(anyhow::Error::msg)?,
        })
    }

    /// What to inline in `program` (`--no-inline`, `--inline NAMES`, or a search).
    pub fn inline_policy(&self, program: &Program) -> anyhow::Result<InlinePolicy> {
        Ok(match (&self.inline, self.no_inline) {
            (Some(names), _) => InlinePolicy::Fixed(
                indices_of(program, names).map_err(|e| anyhow::anyhow!("--inline: {e}"))?,
            ),
            (None, true) => InlinePolicy::Off,
            (None, false) => InlinePolicy::Search,
        })
    }

    /// How variants are planned: these restrictions on `program`, `solver`, and the seed of
    /// `random:N`.
    pub fn plan_settings(
        &self,
        program: &Program,
        solver: Method,
        seed: u64,
    ) -> anyhow::Result<PlanSettings> {
        Ok(PlanSettings {
            options: self.milp_options(program)?,
            inline: self.inline_policy(program)?,
            solver,
            solve_options: self.solve_options()?,
            seed,
        })
    }

    /// Refuses the flags that choose which configuration a solve finds (`--inline`,
    /// `--no-inline`, `--fix-groups`, `--tiles-min`, `--tiles-max`, `--no-stream`) where a
    /// solution file gives the configuration: `command` would otherwise ignore them.
    pub fn refuse_search_flags(&self, command: &str) -> anyhow::Result<()> {
        let flags = [
            (self.inline.is_some(), "--inline"),
            (self.no_inline, "--no-inline"),
            (self.fix_groups.is_some(), "--fix-groups"),
            (self.tiles_min.is_some(), "--tiles-min"),
            (self.tiles_max.is_some(), "--tiles-max"),
            (self.no_stream, "--no-stream"),
        ];
        let given: Vec<&str> = flags.iter().filter(|f| f.0).map(|f| f.1).collect();
        match given.len() {
            0 => Ok(()),
            n => bail!(
                "{} {} the configuration a solve finds; {command} --solution takes the file's: drop {}",
                given.join(", "),
                if n == 1 { "chooses" } else { "choose" },
                if n == 1 { "it" } else { "them" }
            ),
        }
    }

    /// Refuses `--ranks` in a command that does not decompose (`command` names it).
    pub fn refuse_ranks(&self, command: &str) -> anyhow::Result<()> {
        match self.ranks {
            Some(_) => bail!("{command} does not take --ranks (solve, codegen and bench do)"),
            None => Ok(()),
        }
    }

    pub fn solve_options(&self) -> anyhow::Result<SolveOptions> {
        let options = SolveOptions {
            relative_gap: self.gap,
            time_limit: self.time_limit,
            threads: self.threads,
            verbose: self.verbose,
        };
        options.check().map_err(anyhow::Error::msg)?;
        Ok(options)
    }
}

/// Loads and analyses a program, with file-located errors.
pub fn load(path: &std::path::Path) -> anyhow::Result<(Program, Analysis)> {
    let program = Program::load(path)?;
    let analysis = Analysis::new(&program).map_err(|d| FileError::new(path, d))?;
    Ok((program, analysis))
}

/// Loads and analyses a program and loads the machine file, the analysis weighed with the
/// machine's operation weights (`Analysis::weigh_operations`): what every command that costs a
/// program on a machine starts from.
pub fn load_on(
    path: &std::path::Path,
    machine: &MachineArg,
) -> anyhow::Result<(Program, Analysis, Machine, ModelMachine)> {
    let (program, mut analysis) = load(path)?;
    let (machine, view) = machine.load(&program)?;
    analysis.weigh_operations(view.params.operations);
    Ok((program, analysis, machine, view))
}

/// The template renderer for `--templates`.
pub fn renderer(templates: Option<&Path>) -> anyhow::Result<Renderer> {
    Ok(match templates {
        Some(dir) => Renderer::from_dir(dir)?,
        None => Renderer::embedded(),
    })
}

/// Sets up the timing of `program` on `machine` (`bench`, `tune`), with the values of its
/// scalars: progress and warnings go to standard error, among them a flush other than the one
/// the machine file was learned with.
pub fn bench_of(
    program: &Path,
    machine: &MachineArg,
    templates: Option<&Path>,
    scalars: &ScalarArgs,
    options: BenchOptions,
) -> anyhow::Result<Bench> {
    let bench = untimed_bench_of(program, machine, templates, scalars, options)?;
    if let Some(warning) = bench.flush_mismatch() {
        eprintln!("warning: {}: {warning}", machine.path()?.display());
    }
    Ok(bench)
}

/// [`bench_of`] for a command that times nothing (`cache`): no warning about the flush.
pub fn untimed_bench_of(
    program: &Path,
    machine: &MachineArg,
    templates: Option<&Path>,
    scalars: &ScalarArgs,
    mut options: BenchOptions,
) -> anyhow::Result<Bench> {
    let (program, analysis, machine_file, view) = load_on(program, machine)?;
    options.scalars = scalars.values(&program)?;
    let renderer = renderer(templates)?;
    if options.roofline {
        crate::output::step("measuring streaming bandwidth ...");
    }
    Ok(
        Bench::new((program, analysis), (machine_file, view), renderer, options)?
            .on_progress(crate::output::step),
    )
}

/// Plans `variants` on `bench` with `settings`, the planner's notes to standard error and a
/// file's errors shown as its own diagnostics (`output::format_error`).
pub fn plan_on(
    bench: &Bench,
    variants: &[Variant],
    settings: &PlanSettings,
) -> anyhow::Result<Vec<Planned>> {
    crate::output::step(&format!("planning variants of {} ...", bench.program.name));
    let plan = bench.plan(variants, settings).map_err(|e| match e {
        PlanError::File(f) => anyhow::Error::new(f),
        e => e.into(),
    })?;
    for note in &plan.notes {
        eprintln!("{note}");
    }
    Ok(plan.planned)
}
