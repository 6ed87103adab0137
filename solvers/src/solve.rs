//! A program solved on a machine: the inline set, the search over the rewritten program (a MILP
//! backend or the DP; over a grid of ranks, the DP of one rank), and the [`Solution`] that
//! describes the optimum. Also the problem as a file for another solver ([`emit`]).

use absinthe_model::cost_model::inline_search::{
    choose_inline, InlineChoice, InlinePolicy, InlineSearchError,
};
use absinthe_model::cost_model::options::{Encoding, MilpOptions};
use absinthe_model::cost_model::ranks::{Grid, Ranked};
use absinthe_model::encodings::milp::{digits_admits, milp, Encoded};
use absinthe_model::encodings::smt::linear_absinthe;
use absinthe_model::formats::machine::{Machine, ModelMachine};
use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::program::Program;
use absinthe_model::output::solution::{Solution, SolverReport};

use crate::method::Method;
use crate::optimize::{optimize_dp_with, optimize_with, OptimizeError, Optimum};
use crate::{write_lp, write_mps, SolveOptions};

/// Everything a solve produced, for the commands built on it.
pub struct Solved {
    /// The program as written, and its analysis.
    pub original: Program,
    pub original_analysis: Analysis,
    /// The program solved: `original` with `inline.names` inlined (the same when none).
    pub program: Program,
    pub analysis: Analysis,
    pub inline: InlineChoice,
    pub machine: Machine,
    pub optimum: Optimum,
    pub solution: Solution,
    /// With a grid of ranks: the grid, and `optimum.objective_seconds` is one rank's time.
    pub ranks: Option<Grid>,
    /// With a grid of ranks: the configuration's estimate as one process over the whole
    /// domain (the solution's `estimate_seconds` before it became one rank's time).
    pub single_seconds: Option<f64>,
}

/// How [`solve`] searches.
#[derive(Clone)]
pub struct Settings {
    /// The restrictions on the configurations and the MILP's encoding.
    pub options: MilpOptions,
    /// What the backend receives; its `threads` also bound the inline search's.
    pub solve_options: SolveOptions,
    /// What to inline.
    pub inline: InlinePolicy,
    /// A grid of ranks to decompose the domain over: the exact DP then prices one rank's
    /// sub-domain and its halo exchanges.
    pub ranks: Option<Grid>,
    /// The search over the rewritten program (ignored with `ranks`, which takes the DP).
    pub method: Method,
}

/// Why [`solve`] found no configuration. The inline set's and the search's errors name the
/// program by the file it was read from.
#[derive(Debug, thiserror::Error)]
pub enum SolveError {
    /// Choosing the inline set failed.
    #[error("choosing what to inline in {0}")]
    Inline(String, #[source] InlineSearchError),
    /// The search over the rewritten program failed.
    #[error("solving {0}")]
    Search(String, #[source] OptimizeError),
    /// The grid of ranks does not fit the domain, or the machine has no `network:` to price
    /// its exchanges with.
    #[error("{0}")]
    Ranks(String),
    /// The DP over the ranked model failed.
    #[error(transparent)]
    Ranked(OptimizeError),
    /// The sub-domains of the grid are narrower than a stencil reads beyond its own cells.
    #[error("{0}")]
    TooNarrow(String),
}

/// Chooses the inline set of `original` (read from `file`), solves the rewritten program and
/// describes the optimum. `phase` names each step as it starts; `note` receives what is worth a
/// line of its own (with ranks: what the rank model priced).
///
/// With ranks and the inline search, an inline set that reads further than a sub-domain holds
/// leaves no configuration: the program is then solved with nothing inlined, which reads least
/// far, and `note` says so.
pub fn solve(
    file: &str,
    (original, original_analysis): (Program, Analysis),
    (machine, view): (Machine, &ModelMachine),
    settings: &Settings,
    phase: &dyn Fn(String),
    note: &dyn Fn(String),
) -> Result<Solved, SolveError> {
    let searched = settings.ranks.is_some() && settings.inline == InlinePolicy::Search;
    let again = searched.then(|| (original.clone(), original_analysis.clone(), machine.clone()));
    let first = solve_once(
        file,
        (original, original_analysis),
        (machine, view),
        settings,
        phase,
        note,
    );
    match (first, again) {
        (Err(SolveError::TooNarrow(why)), Some((original, analysis, machine))) => {
            note(format!(
                "--ranks: with the inline set the search chose, {why}; solving with nothing inlined"
            ));
            let plain = Settings {
                inline: InlinePolicy::Off,
                ..settings.clone()
            };
            solve_once(
                file,
                (original, analysis),
                (machine, view),
                &plain,
                phase,
                note,
            )
        }
        (first, _) => first,
    }
}

fn solve_once(
    file: &str,
    (original, original_analysis): (Program, Analysis),
    (machine, view): (Machine, &ModelMachine),
    settings: &Settings,
    phase: &dyn Fn(String),
    note: &dyn Fn(String),
) -> Result<Solved, SolveError> {
    // --time-limit bounds the range tables too (the DP's, the range MILP's, the inline
    // search's): a search it stops is an error, not an optimum of part of the space.
    let mut settings = settings.clone();
    let deadline = settings
        .solve_options
        .time_limit
        .and_then(|t| std::time::Duration::try_from_secs_f64(t).ok())
        .map(|t| std::time::Instant::now() + t);
    settings.options.space.deadline = deadline;
    let settings = &settings;
    phase("choosing the inline set".into());
    let inline = choose_inline(
        &original,
        &original_analysis,
        view,
        &settings.options.space,
        &settings.inline,
        settings.solve_options.threads.unwrap_or(0),
    )
    .map_err(|e| SolveError::Inline(file.to_string(), e))?;
    let program = inline.program.clone();
    let analysis = inline.analysis.clone();
    phase(format!(
        "{} on {} stencils, {} inlined",
        settings.method,
        analysis.stencils.len(),
        inline.names.len()
    ));
    let optimum = match settings.ranks {
        Some(grid) => {
            let value_bytes = program.value_type.bytes();
            optimize_ranked(
                &analysis,
                (&machine, view),
                (grid, value_bytes),
                settings,
                note,
            )?
        }
        None => optimize_with(
            &analysis,
            view,
            &settings.options,
            settings.method,
            &remaining(&settings.solve_options, deadline),
        )
        .map_err(|e| SolveError::Search(file.to_string(), e))?,
    };
    let mut solution = describe(
        &program.name,
        (&analysis, view),
        &machine,
        &optimum,
        &inline,
    );
    let mut single_seconds = None;
    if let Some(grid) = settings.ranks {
        // One rank's time, halo exchanges included: what the ranked DP minimised.
        solution.ranks = Some([grid.px, grid.py]);
        single_seconds = solution.estimate_seconds;
        solution.estimate_seconds = Some(optimum.objective_seconds);
    }
    Ok(Solved {
        original,
        original_analysis,
        program,
        analysis,
        inline,
        machine,
        optimum,
        solution,
        ranks: settings.ranks,
        single_seconds,
    })
}

/// `options` with the time left until `deadline` as the solver's limit (at least a
/// millisecond): the inline search has spent part of `--time-limit` already.
fn remaining(options: &SolveOptions, deadline: Option<std::time::Instant>) -> SolveOptions {
    let mut options = options.clone();
    if let Some(d) = deadline {
        let left = d.saturating_duration_since(std::time::Instant::now());
        options.time_limit = Some(left.as_secs_f64().max(1e-3));
    }
    options
}

/// The exact optimum of one rank of a `grid` decomposition: the DP over the [`Ranked`] model,
/// the node's threads shared among its ranks; `note` receives what it priced.
fn optimize_ranked(
    analysis: &Analysis,
    (machine, view): (&Machine, &ModelMachine),
    (grid, value_bytes): (Grid, usize),
    settings: &Settings,
    note: &dyn Fn(String),
) -> Result<Optimum, SolveError> {
    for (d, p) in grid.dims().into_iter().enumerate() {
        if p > analysis.domain[d] {
            return Err(SolveError::Ranks(format!(
                "--ranks: {p} ranks along {} but the domain has {} cells there",
                ["x", "y"][d],
                analysis.domain[d]
            )));
        }
    }
    if let Some(why) = machine.target_mismatch(false) {
        return Err(SolveError::Ranks(format!("--ranks: {why}")));
    }
    let Some(network) = machine.network.clone() else {
        return Err(SolveError::Ranks(format!(
            "--ranks {},{} prices the halo exchanges with the machine file's `network:` section, which machine `{}` lacks: measure it with `absinthe learn --machine FILE --ranks 2`",
            grid.px,
            grid.py,
            machine.name
        )));
    };
    let model = Ranked::new(analysis, view, grid.dims(), network, value_bytes);
    let fixed = settings.options.space.fixed_groups.as_deref();
    let optimum = optimize_dp_with(analysis, &model, &settings.options, &settings.solve_options)
        .map_err(|e| match (&e, model.too_narrow(analysis, fixed)) {
            (OptimizeError::Infeasible(_), Some(why)) => SolveError::TooNarrow(why),
            _ => SolveError::Ranked(e),
        })?;
    let (largest, classes) = model.sub_domains();
    let ranks = grid.px * grid.py;
    let cores = view.threads;
    if ranks > cores {
        note(format!(
            "ranks {}x{}: {ranks} ranks on one node of {} cores oversubscribe it; the estimate assumes a core per rank, as on {} nodes (the machine file describes one node)",
            grid.px,
            grid.py,
            cores,
            ranks.div_ceil(cores.max(1))
        ));
    }
    note(format!(
        "ranks {}x{}: priced each group on the slowest of {classes} rank class(es) (largest sub-domain {largest:?}) with {} thread(s) per rank: {:.1} us per run, at most {:.1} us of it in one rank's halo exchanges (the exact DP)",
        grid.px,
        grid.py,
        model.rank_threads(),
        optimum.objective_seconds * 1e6,
        model.exchanges_of(&optimum.config) * 1e6
    ));
    Ok(optimum)
}

/// The solution file's description of `optimum`: groups, tiles, costs, the inline set, the
/// machine and the solver's report.
fn describe(
    program: &str,
    (analysis, view): (&Analysis, &ModelMachine),
    machine: &Machine,
    optimum: &Optimum,
    inline: &InlineChoice,
) -> Solution {
    let mut solution = Solution::describe(
        program,
        (analysis, view.model),
        &optimum.config,
        &optimum.cost,
    );
    solution.inline = inline.names.clone();
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
    solution
}

/// A file format for another solver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmitKind {
    /// CPLEX LP: the MILP of the chosen encoding.
    Lp,
    /// MPS: the MILP of the chosen encoding.
    Mps,
    /// SMT-LIB 2: the digits MILP in exact rationals, with Z3's `minimize`.
    Smt2,
}

impl EmitKind {
    /// The kind called `name` (`lp`, `mps` or `smt2`, ASCII case ignored).
    pub fn parse(name: &str) -> Result<EmitKind, EmitError> {
        [
            ("lp", EmitKind::Lp),
            ("mps", EmitKind::Mps),
            ("smt2", EmitKind::Smt2),
        ]
        .into_iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, kind)| kind)
        .ok_or_else(|| EmitError::UnknownKind(name.to_string()))
    }
}

/// Why a problem could not be written ([`EmitKind::parse`], [`emit`]).
#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    #[error("--emit: unknown kind `{0}`; use lp, mps or smt2")]
    UnknownKind(String),
    /// The encoding does not model this machine (the digits MILP and SMT on a GPU).
    #[error("{0}")]
    Unsupported(&'static str),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The problem of `analysis` on `view` under `options` as a `kind` file.
pub fn emit(
    analysis: &Analysis,
    view: &ModelMachine,
    options: &MilpOptions,
    kind: EmitKind,
) -> Result<Vec<u8>, EmitError> {
    if kind == EmitKind::Smt2 || options.encoding == Encoding::Digits {
        digits_admits(analysis, view).map_err(EmitError::Unsupported)?;
    }
    let mut text = Vec::new();
    match kind {
        EmitKind::Lp => write_lp(Encoded::build(analysis, view, options).milp(), &mut text)?,
        EmitKind::Mps => write_mps(Encoded::build(analysis, view, options).milp(), &mut text)?,
        // The SMT encoding is of the ABSINTHE (digits) MILP, whose rows `certify` proves sound.
        EmitKind::Smt2 => {
            text = linear_absinthe(&milp(analysis, view, options))
                .to_smt2()
                .into_bytes()
        }
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emit_kinds_parse_ignoring_case() {
        assert_eq!(EmitKind::parse("LP").unwrap(), EmitKind::Lp);
        assert_eq!(EmitKind::parse("Smt2").unwrap(), EmitKind::Smt2);
        assert_eq!(
            EmitKind::parse("cplex").unwrap_err().to_string(),
            "--emit: unknown kind `cplex`; use lp, mps or smt2"
        );
    }
}
