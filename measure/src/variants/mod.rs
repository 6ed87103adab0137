//! The variants `absinthe bench` builds and times: which configurations (`opt`, `naive`,
//! `unfused`, `fused`, `groups:...`, `random:N`, `top:K`, `sets:M`, `autotune`), solved,
//! enumerated or drawn, with their predictions.

mod drawn;
mod planner;
mod sweeps;

use absinthe_model::cost_model::evaluate::Configuration;
use absinthe_model::cost_model::inline_search::InlinePolicy;
use absinthe_model::cost_model::options::MilpOptions;
use absinthe_model::formats::machine::ModelMachine;
use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::constraints::check_group_indices;
use absinthe_solvers::method::{Backend, Method};
use absinthe_solvers::optimize::{optimize_with, OptimizeError};
use absinthe_solvers::SolveOptions;

pub use drawn::{distinct_best, random_configurations, TIE, TOP_SCAN};
pub use planner::{plan, Plan};
pub use sweeps::{
    autotune_counts, autotune_tilings, measured_sweeps, sweep, Probe, StepTimes, SweepStep, Swept,
    NEAR_FASTEST, SWEEP_ORDER,
};

/// One requested variant.
#[derive(Clone, Debug, PartialEq)]
pub enum Variant {
    Opt,
    Naive,
    Unfused,
    Fused,
    /// The optimum in the original schedule space: no group streams (`--no-stream`), nothing
    /// inlined.
    Unstreamed,
    /// The optimum with nothing inlined (`--no-inline`).
    NoInline,
    Groups(Vec<usize>),
    Random(usize),
    /// The original work's exhaustive tile auto-tuning for the optimum's groups.
    Autotune,
    /// The `K` best configurations by the model (exact search), cheapest first.
    Top(usize),
    /// The optima of `M` other inline sets than `opt`'s among those the inline search solved
    /// (`InlineChoice::tried`): every stencil inlined first, then the cheapest.
    InlineSets(usize),
    /// The configuration (and inline set) of a solution file, e.g. one `tune` wrote.
    Solution(std::path::PathBuf),
}

/// What `bench` times when no variants are named: the reference, every stencil its own group,
/// and the optimum.
pub const BENCH_DEFAULT: [Variant; 3] = [Variant::Naive, Variant::Unfused, Variant::Opt];

/// The most configurations `random:N`, `top:K` and `sets:M` may ask for: each is built and
/// timed.
pub const MAX_DRAWN: usize = 4096;

/// A command's input files: the program, the machine file and the solution files among
/// `variants` (`solution:FILE`), which no output of the command may replace.
pub fn input_files<'a>(
    program: &'a std::path::Path,
    machine: &'a std::path::Path,
    variants: &'a [Variant],
) -> Vec<&'a std::path::Path> {
    let solutions = variants.iter().filter_map(|v| match v {
        Variant::Solution(path) => Some(path.as_path()),
        _ => None,
    });
    [program, machine].into_iter().chain(solutions).collect()
}

/// The one variant `absinthe cache` counts (`--variant`): a single configuration the model
/// describes, so neither a set (`random:N`, `top:K`, ...) nor a sweep.
pub fn parse_countable(text: &str) -> Result<Variant, String> {
    let one_of = "--variant takes one of opt, naive, unfused, fused, unstreamed, noinline or groups:G,G,... (a solution file with --solution)";
    let parsed = parse_variants(text).map_err(|e| {
        if e.starts_with("unknown variant") {
            format!("{one_of}; found `{text}`")
        } else {
            e
        }
    })?;
    match parsed[..] {
        [ref one @ (Variant::Opt
        | Variant::Naive
        | Variant::Unfused
        | Variant::Fused
        | Variant::Unstreamed
        | Variant::NoInline
        | Variant::Groups(_))] => Ok(one.clone()),
        _ => Err(format!("{one_of}; found `{text}`")),
    }
}

/// Splits the variant list; the numbers after `groups:` belong to it.
pub fn parse_variants(list: &str) -> Result<Vec<Variant>, String> {
    let mut out = Vec::new();
    if list.trim().is_empty() {
        return Err("no variant given".into());
    }
    for token in list.split(',').map(str::trim) {
        if token.is_empty() {
            return Err(format!(
                "`{list}` has an empty entry (two commas in a row, or one at an end)"
            ));
        }
        let negative = token.parse::<i64>().is_ok() && token.parse::<usize>().is_err();
        if negative && matches!(out.last(), Some(Variant::Groups(_))) {
            return Err(format!(
                "group index `{token}`: the indices after `groups:` are whole numbers from 0"
            ));
        }
        if let Ok(n) = token.parse::<usize>() {
            match out.last_mut() {
                Some(Variant::Groups(g)) => {
                    g.push(n);
                    continue;
                }
                _ => {
                    return Err(format!(
                        "unexpected number `{token}` (group indices follow `groups:`)"
                    ))
                }
            }
        }
        out.push(match token {
            "opt" => Variant::Opt,
            "naive" => Variant::Naive,
            "unfused" => Variant::Unfused,
            "fused" => Variant::Fused,
            "unstreamed" => Variant::Unstreamed,
            "noinline" => Variant::NoInline,
            "autotune" => Variant::Autotune,
            t if t.starts_with("groups:") => {
                let first = &t["groups:".len()..];
                let g = first.parse::<usize>().map_err(|_| match first.parse::<i64>() {
                    Ok(_) => format!(
                        "group index `{first}`: the indices after `groups:` are whole numbers from 0"
                    ),
                    Err(_) => format!("`{t}`: expected groups:0,0,1,..."),
                })?;
                Variant::Groups(vec![g])
            }
            t if t.starts_with("random:") => match t["random:".len()..].parse() {
                Ok(n) if (1..=MAX_DRAWN).contains(&n) => Variant::Random(n),
                _ => return Err(format!("`{t}`: expected random:N with N from 1 to {MAX_DRAWN}")),
            },
            t if t.starts_with("top:") => match t["top:".len()..].parse() {
                Ok(k) if (1..=MAX_DRAWN).contains(&k) => Variant::Top(k),
                _ => return Err(format!("`{t}`: expected top:K with K from 1 to {MAX_DRAWN}")),
            },
            t if t.starts_with("solution:") => match &t["solution:".len()..] {
                "" => return Err(format!("`{t}`: expected solution:FILE")),
                path => Variant::Solution(path.into()),
            },
            t if t.starts_with("sets:") => match t["sets:".len()..].parse() {
                Ok(m) if (1..=MAX_DRAWN).contains(&m) => Variant::InlineSets(m),
                _ => return Err(format!("`{t}`: expected sets:M with M from 1 to {MAX_DRAWN}")),
            },
            t => {
                return Err(format!(
                "unknown variant `{t}`; use opt, naive, unfused, fused, unstreamed, noinline, groups:G,G,..., random:N, top:K, sets:M, autotune, solution:FILE"
            ))
            }
        });
    }
    if out.is_empty() {
        return Err("no variant given".into());
    }
    named_once(list, &out)?;
    Ok(out)
}

/// Refuses a list that names a variant twice: the same variant twice would build and time it
/// twice under two rows; so would two draws of one kind (random:2,random:3 both draw random0
/// and random1) and two names of one solution file.
fn named_once(list: &str, out: &[Variant]) -> Result<(), String> {
    let same = |a: &Variant, b: &Variant| match (a, b) {
        (Variant::Random(_), Variant::Random(_))
        | (Variant::Top(_), Variant::Top(_))
        | (Variant::InlineSets(_), Variant::InlineSets(_)) => true,
        (Variant::Solution(x), Variant::Solution(y)) => {
            x == y
                || matches!((std::fs::canonicalize(x), std::fs::canonicalize(y)),
                    (Ok(x), Ok(y)) if x == y)
        }
        _ => a == b,
    };
    if let Some((first, twice)) = (1..out.len()).find_map(|n| {
        out[..n]
            .iter()
            .find(|v| same(v, &out[n]))
            .map(|v| (v, &out[n]))
    }) {
        let (first, twice) = (token_of(first), token_of(twice));
        return Err(if first == twice {
            format!("`{list}` names the variant `{twice}` twice")
        } else {
            format!("`{list}` names `{first}` and `{twice}`, which draw or name the same variants: give one")
        });
    }
    Ok(())
}

/// A variant as `--variants` writes it.
fn token_of(v: &Variant) -> String {
    match v {
        Variant::Opt => "opt".into(),
        Variant::Naive => "naive".into(),
        Variant::Unfused => "unfused".into(),
        Variant::Fused => "fused".into(),
        Variant::Unstreamed => "unstreamed".into(),
        Variant::NoInline => "noinline".into(),
        Variant::Autotune => "autotune".into(),
        Variant::Groups(g) => {
            let g: Vec<String> = g.iter().map(usize::to_string).collect();
            format!("groups:{}", g.join(","))
        }
        Variant::Random(n) => format!("random:{n}"),
        Variant::Top(k) => format!("top:{k}"),
        Variant::Solution(p) => format!("solution:{}", p.display()),
        Variant::InlineSets(m) => format!("sets:{m}"),
    }
}

/// A variant ready to build.
#[derive(Clone, Debug)]
pub struct Planned {
    pub name: String,
    /// The requested variant it realises (None for configurations the tuner's sweeps add).
    pub variant: Option<Variant>,
    /// The stencils inlined (sorted indices into the program): `config` is a configuration of
    /// the program with them inlined (`inline_search::apply`). Empty for most variants.
    pub inline: Vec<usize>,
    pub config: Configuration,
    pub predicted: f64,
    /// Time the reference instead of the kernel.
    pub reference: bool,
    /// Why it is not run (e.g. infeasible).
    pub skipped: Option<String>,
}

/// How variants are solved: the search restrictions, the solver (`dp` or a MILP backend) and its
/// settings, and the seed of `random:N`.
pub struct PlanSettings {
    pub options: MilpOptions,
    /// What `opt` (and `top:K`, `autotune`, which start from its program) inline.
    pub inline: InlinePolicy,
    pub solver: Method,
    pub solve_options: SolveOptions,
    pub seed: u64,
}

impl PlanSettings {
    /// What `learn`'s calibrations and kernel refit plan with: the full search space, the
    /// inline search, `solver` at its defaults, seed 1.
    pub fn learn(solver: Backend) -> PlanSettings {
        PlanSettings {
            options: Default::default(),
            inline: InlinePolicy::Search,
            solver: Method::Milp(solver),
            solve_options: SolveOptions::default(),
            seed: 1,
        }
    }
}

/// Why variants could not be planned.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{0}")]
    Variant(String),
    #[error(transparent)]
    Solve(#[from] OptimizeError),
    #[error(transparent)]
    Inline(#[from] absinthe_model::cost_model::inline_search::InlineSearchError),
    /// A file a variant names (`solution:FILE`) is unreadable or does not fit the program.
    #[error(transparent)]
    File(#[from] absinthe_model::formats::diagnostic::FileError),
}

/// The optimum with the groups fixed (or free): None when infeasible.
pub(crate) fn solve_with_groups(
    analysis: &Analysis,
    view: &ModelMachine,
    settings: &PlanSettings,
    groups: Option<Vec<usize>>,
) -> Result<Option<(Configuration, f64)>, PlanError> {
    let mut options = settings.options.clone();
    if let Some(g) = groups {
        check_group_indices(&g, analysis.stencils.len()).map_err(|why| {
            let list: Vec<String> = g.iter().map(usize::to_string).collect();
            PlanError::Variant(format!("variant groups:{}: {why}", list.join(",")))
        })?;
        options.space.fixed_groups = Some(g);
    }
    match optimize_with(
        analysis,
        view,
        &options,
        settings.solver,
        &settings.solve_options,
    ) {
        Ok(o) => Ok(Some((o.config, o.cost.total))),
        Err(OptimizeError::Infeasible(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
