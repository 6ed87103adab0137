//! The variants `absinthe bench` builds and times: which configurations (`opt`, `naive`,
//! `unfused`, `fused`, `groups:...`, `random:N`, `top:K`, `sets:M`, `autotune`), solved,
//! enumerated or drawn, with their predictions.

use absinthe_model::analysis::Analysis;
use absinthe_model::cost::{evaluate, group_shape, ranges_of, Configuration};
use absinthe_model::inline_search::{
    apply as inline_apply, choose_inline, InlineChoice, InlinePolicy,
};
use absinthe_model::machine::ModelMachine;
use absinthe_model::milp::MilpOptions;
use absinthe_model::program::check_group_indices;
use absinthe_model::program::Program;
use absinthe_model::rng::Rng;
use absinthe_model::search::{admissible_tilings, k_best};
use absinthe_solvers::method::{Backend, Method};
use absinthe_solvers::optimize::{optimize_with, OptimizeError};
use absinthe_solvers::SolveOptions;

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

/// The most configurations `random:N`, `top:K` and `sets:M` may ask for: each is built and
/// timed.
pub const MAX_DRAWN: usize = 4096;

/// Splits the variant list; the numbers after `groups:` belong to it.
pub fn parse_variants(list: &str) -> Result<Vec<Variant>, String> {
    let mut out = Vec::new();
    for token in list.split(',').map(str::trim).filter(|t| !t.is_empty()) {
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
                let g = first
                    .parse::<usize>()
                    .map_err(|_| format!("`{t}`: expected groups:0,0,1,..."))?;
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
    Ok(out)
}

/// A variant ready to build.
#[derive(Clone, Debug)]
pub struct Planned {
    pub name: String,
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
    Inline(#[from] absinthe_model::inline_search::InlineSearchError),
    /// A file a variant names (`solution:FILE`) is unreadable or does not fit the program.
    #[error(transparent)]
    File(#[from] absinthe_model::diagnostic::FileError),
}

/// The optimum with the groups fixed (or free): None when infeasible.
fn solve_with_groups(
    analysis: &Analysis,
    view: &ModelMachine,
    settings: &PlanSettings,
    groups: Option<Vec<usize>>,
) -> Result<Option<(Configuration, f64)>, PlanError> {
    let mut options = settings.options.clone();
    if let Some(g) = groups {
        check_group_indices(&g, analysis.stencils.len()).map_err(PlanError::Variant)?;
        options.fixed_groups = Some(g);
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

/// Tile sizes the original work's auto-tuning tries along x and y: powers of two up to the
/// domain (and the domain itself).
fn power_of_two_sizes(d: usize) -> Vec<usize> {
    let mut out: Vec<usize> = std::iter::successors(Some(1usize), |s| Some(s * 2))
        .take_while(|&s| s < d)
        .collect();
    out.push(d);
    out
}

/// Tile sizes the original work's auto-tuning tries along z: 1, 2, 4, 12, 30, 60 (those below
/// the domain) and the domain.
fn z_sizes(d: usize) -> Vec<usize> {
    let mut out: Vec<usize> = [1, 2, 4, 12, 30, 60]
        .into_iter()
        .filter(|&s| s < d)
        .collect();
    out.push(d);
    out
}

/// The tile counts the original work's auto-tuning tries along each dimension of `domain`:
/// tile sizes from [`power_of_two_sizes`] along x and y and [`z_sizes`] along z, as counts
/// `ceil(D / s)`, without duplicates, in increasing size (decreasing count).
pub fn autotune_counts(domain: [usize; 3]) -> [Vec<usize>; 3] {
    let counts = |sizes: Vec<usize>, d: usize| -> Vec<usize> {
        let mut c: Vec<usize> = sizes.into_iter().map(|s| d.div_ceil(s)).collect();
        c.dedup();
        c
    };
    [
        counts(power_of_two_sizes(domain[0]), domain[0]),
        counts(power_of_two_sizes(domain[1]), domain[1]),
        counts(z_sizes(domain[2]), domain[2]),
    ]
}

/// The tile-count triples of the original work's exhaustive auto-tuning on `domain`: every
/// combination of [`autotune_counts`], in order.
pub fn autotune_tilings(domain: [usize; 3]) -> Vec<[usize; 3]> {
    let [xs, ys, zs] = autotune_counts(domain);
    let mut out = Vec::new();
    for &x in &xs {
        for &y in &ys {
            for &z in &zs {
                out.push([x, y, z]);
            }
        }
    }
    out
}

/// One configuration a sweep tries, with the model's prediction and whether the model finds it
/// feasible (the prediction of an infeasible one ignores what rules it out).
#[derive(Clone, Debug, PartialEq)]
pub struct Swept {
    pub config: Configuration,
    pub predicted: f64,
    pub feasible: bool,
}

/// The configurations one step of a coordinate sweep tries: `config` with group `g`'s tile count
/// along dimension `d` set to each count of `ladder` other than its own, every group streaming
/// exactly when its whole tiles miss the cache (`Configuration::canonical_stream`, as the
/// auto-tuning grid's configurations do). The feasible ones come first, cheapest first, then
/// those the model rules out (the cache, or too few tiles for the threads), cheapest first,
/// `NaN` last. Like the grid, a configuration the model finds infeasible is kept: that is what
/// measuring is for; one the search restrictions rule out (`options`: `--tiles-max`, the
/// program's `constraints`) is not. `tune --refine` sweeps the fastest configuration measured
/// so far this way.
pub fn sweep(
    analysis: &Analysis,
    view: &ModelMachine,
    options: &MilpOptions,
    config: &Configuration,
    g: usize,
    d: usize,
    ladder: &[usize],
) -> Vec<Swept> {
    let stream = options.stream_shape(analysis, view);
    // A sweep keeps the groups; the tile bounds and streaming restrictions still apply.
    let bounds = MilpOptions {
        fixed_groups: None,
        ..options.clone()
    };
    let mut out: Vec<Swept> = Vec::new();
    for &count in ladder {
        if count == config.tiles[g][d] || count == 0 || count > analysis.domain[d] {
            continue;
        }
        let mut tiles = config.tiles.clone();
        tiles[g][d] = count;
        let next = Configuration::new(config.groups.clone(), tiles)
            .canonical_stream(analysis, view, stream);
        if !bounds.admits(&next, analysis.domain) || out.iter().any(|s| s.config == next) {
            continue;
        }
        let cost = evaluate(analysis, view, &next);
        out.push(Swept {
            config: next,
            predicted: cost.total,
            feasible: cost.is_feasible(),
        });
    }
    out.sort_by(|a, b| {
        (!a.feasible, a.predicted.is_nan())
            .cmp(&(!b.feasible, b.predicted.is_nan()))
            .then(a.predicted.total_cmp(&b.predicted))
    });
    out
}

/// The dimensions a measured search sweeps, in order: z, y, x (on cosmo_pgrad the order that
/// reaches the auto-tuning grid's best in the fewest timings;
/// docs/decisions/0022-tune-sweeps-and-confirmation.md).
pub const SWEEP_ORDER: [usize; 3] = [2, 1, 0];

/// A candidate measured within this fraction of the fastest so far is not clearly slower, so a
/// measured search sweeps it along z and y before it sweeps the fastest along x. On the shared
/// machine one configuration's medians differ by up to 4% between two runs, and a start 5-7%
/// slower than the fastest can lead to a faster valley (hdiff: its model optimum with every
/// flux and the laplacian inlined against the laplacian stored;
/// docs/decisions/0022-tune-sweeps-and-confirmation.md).
pub const NEAR_FASTEST: f64 = 0.10;

/// A configuration a measured search knows: where it came from and its latest time.
#[derive(Clone, Debug)]
pub struct Probe {
    /// Which of the search's programs (inline sets) it configures.
    pub space: usize,
    pub config: Configuration,
    pub predicted: f64,
    pub feasible: bool,
    /// Its latest measured time (`None`: not verified, or not timed).
    pub seconds: Option<f64>,
    /// The probe whose sweep tried it (`None`: a starting candidate).
    pub from: Option<usize>,
}

/// One sweep a measured search asks to have timed: `swept` (new configurations), and the
/// fastest so far, `probes[best]`, again in the same run.
pub struct SweepStep<'a> {
    /// The probe the sweep starts from, and the group and dimension it moves.
    pub source: usize,
    pub group: usize,
    pub dim: usize,
    pub swept: &'a [Swept],
    pub best: usize,
    /// How many more configurations the budget allows after this sweep.
    pub left: usize,
}

/// What timing one [`SweepStep`] gave: each swept configuration's time (`None`: it failed
/// verification) and the fastest so far's time in the same run.
pub struct StepTimes {
    pub swept: Vec<Option<f64>>,
    pub best: Option<f64>,
}

/// A measured search over tile counts (`tune --refine`), from the timed `probes`, each a
/// configuration of one of the programs `spaces` (the program with one inline set inlined; all
/// on one domain), adding at most `budget` more. Each step sweeps one group of one probe along
/// one dimension ([`sweep`] over [`autotune_counts`], in the probe's program), and `time` times
/// the sweep in one run together with the fastest so far, which a swept configuration replaces
/// only when it ran faster in that same run.
///
/// Which sweep comes next, the first with an untimed configuration of (each probe's groups the
/// slowest by the model first):
/// 1. along z, then y ([`SWEEP_ORDER`]), the fastest so far, then its near ties, fastest
///    first: the probes measured within [`NEAR_FASTEST`] of it, and those the model cannot
///    tell from it (predicted within [`TIE`]);
/// 2. along x, the fastest so far;
/// 3. along z, then y, every other probe, fastest first.
///
/// So where coordinate sweeps stall at a configuration none of whose single moves ran faster
/// (hdiff's best by the model, whole planes 32 deep, streamed, within noise of its z neighbours and
/// of the model's optimum with another inline set), the search goes on from those instead of
/// stopping. A model tie is swept however slowly it ran: the model cannot rank it, and the valley
/// may be one move from it (cosmo_hdiff4's whole rows one row tall, two planes deep, are a y sweep
/// from whole planes two deep, which the model predicts equal to its optimum and which ran 24%
/// slower than it). Sweeps along x start only from the fastest so far, and after its near ties:
/// every optimum of twelve measured auto-tuning grids of the six accuracy programs has rows
/// spanning the domain or half of it, and an x sweep costs a timing per rung of the longest ladder.
/// The search ends when the budget is spent or no sweep has an untimed configuration left. Returns
/// the fastest probe.
pub fn measured_sweeps<E>(
    spaces: &[Analysis],
    view: &ModelMachine,
    options: &MilpOptions,
    probes: &mut Vec<Probe>,
    budget: usize,
    mut time: impl FnMut(&SweepStep) -> Result<StepTimes, E>,
) -> Result<Option<usize>, E> {
    let fastest = |probes: &[Probe], from: usize| {
        (from..probes.len())
            .filter_map(|k| probes[k].seconds.map(|t| (k, t)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(k, _)| k)
    };
    let Some(mut best) = fastest(probes, 0) else {
        return Ok(None);
    };
    let Some(domain) = spaces.first().map(|a| a.domain) else {
        return Ok(None);
    };
    let ladders = autotune_counts(domain);
    let mut done: std::collections::HashSet<(usize, usize, usize)> = Default::default();
    let mut left = budget;
    while left > 0 {
        // Sources: the fastest so far first, then the others by their latest time.
        let mut sources: Vec<usize> = (0..probes.len())
            .filter(|&k| k != best && probes[k].seconds.is_some())
            .collect();
        sources.sort_by(|&a, &b| {
            probes[a]
                .seconds
                .unwrap()
                .total_cmp(&probes[b].seconds.unwrap())
        });
        sources.insert(0, best);
        // The sweeps in the order they are tried: along z and y, those of the fastest so far and
        // of its near ties (measured within noise of it, or predicted the same); the fastest's
        // along x; the rest along z and y.
        let near = probes[best].seconds.unwrap_or(f64::INFINITY) * (1.0 + NEAR_FASTEST);
        let model_tie = |k: usize| {
            let (p, q) = (probes[k].predicted, probes[best].predicted);
            (p - q).abs() <= TIE * q.abs()
        };
        let is_near =
            |k: usize| k == best || probes[k].seconds.is_some_and(|t| t <= near) || model_tie(k);
        let order = sources
            .iter()
            .filter(|&&k| is_near(k))
            .map(|&k| (k, &SWEEP_ORDER[..2]))
            .chain([(best, &SWEEP_ORDER[2..])])
            .chain(
                sources
                    .iter()
                    .filter(|&&k| !is_near(k))
                    .map(|&k| (k, &SWEEP_ORDER[..2])),
            );
        let mut next = None;
        'find: for (source, dims) in order {
            let (space, analysis) = (probes[source].space, &spaces[probes[source].space]);
            let cost = evaluate(analysis, view, &probes[source].config);
            let mut groups: Vec<usize> = (0..cost.groups.len()).collect();
            groups.sort_by(|&a, &b| cost.groups[b].time.total_cmp(&cost.groups[a].time));
            for g in groups {
                for &d in dims {
                    if !done.insert((source, g, d)) {
                        continue;
                    }
                    let swept: Vec<Swept> = sweep(
                        analysis,
                        view,
                        options,
                        &probes[source].config,
                        g,
                        d,
                        &ladders[d],
                    )
                    .into_iter()
                    .filter(|s| {
                        !probes
                            .iter()
                            .any(|p| p.space == space && p.config == s.config)
                    })
                    .take(left)
                    .collect();
                    if !swept.is_empty() {
                        next = Some((source, g, d, swept));
                        break 'find;
                    }
                }
            }
        }
        let Some((source, group, dim, swept)) = next else {
            break;
        };
        left -= swept.len();
        let times = time(&SweepStep {
            source,
            group,
            dim,
            swept: &swept,
            best,
            left,
        })?;
        probes[best].seconds = times.best;
        let first = probes.len();
        let space = probes[source].space;
        probes.extend(
            swept
                .into_iter()
                .zip(times.swept)
                .map(|(s, seconds)| Probe {
                    space,
                    config: s.config,
                    predicted: s.predicted,
                    feasible: s.feasible,
                    seconds,
                    from: Some(source),
                }),
        );
        // Compared within this run only: the fastest so far was timed again beside them.
        let now = probes[best].seconds.unwrap_or(f64::INFINITY);
        if let Some(k) = fastest(probes, first).filter(|&k| probes[k].seconds.unwrap() < now) {
            best = k;
        }
    }
    Ok(Some(best))
}

/// Up to `n` distinct feasible configurations drawn at random: random cuts between groups
/// (each with probability one half), then for each group a tiling drawn uniformly from the
/// admissible, parallel-efficient triples that fit the cache (`search::admissible_tilings`),
/// streaming where the whole tile does not fit. Drawing from the feasible triples instead of
/// from all of `1..=D` per dimension finds configurations of large programs too.
pub fn random_configurations(
    analysis: &Analysis,
    view: &ModelMachine,
    options: &MilpOptions,
    n: usize,
    seed: u64,
) -> Vec<Configuration> {
    let mut rng = Rng::new(seed);
    let stencils = analysis.stencils.len();
    let tilings = admissible_tilings(analysis.domain, view, options);
    let stream = options.stream_shape(analysis, view);
    let mut feasible_of: std::collections::HashMap<(usize, usize), Vec<[usize; 3]>> =
        std::collections::HashMap::new();
    let mut out: Vec<Configuration> = Vec::new();
    for _ in 0..n.saturating_mul(200) {
        if out.len() == n {
            break;
        }
        let mut groups = vec![0];
        for _ in 1..stencils {
            let last = *groups.last().unwrap_or(&0);
            groups.push(if rng.chance(50) { last + 1 } else { last });
        }
        let mut tiles = Vec::new();
        for r in ranges_of(&groups) {
            let feasible = feasible_of.entry((r.start, r.end)).or_insert_with(|| {
                let shape = group_shape(analysis, r.clone());
                tilings
                    .iter()
                    .map(|&(t, _)| t)
                    .filter(|&t| shape.fits_cache(analysis, view, stream, t))
                    .collect()
            });
            if feasible.is_empty() {
                break;
            }
            tiles.push(feasible[rng.below(feasible.len())]);
        }
        if tiles.len() != groups.last().map_or(1, |g| g + 1) {
            continue;
        }
        let config = Configuration::new(groups, tiles).canonical_stream(analysis, view, stream);
        if !out.contains(&config) && evaluate(analysis, view, &config).is_feasible() {
            out.push(config);
        }
    }
    out
}

/// `top:K` scans the model's `K * TOP_SCAN` best configurations for `K` distinct ones
/// ([`distinct_best`]).
pub const TOP_SCAN: usize = 8;

/// Predictions within this share of each other are a tie (see [`distinct_best`]).
pub const TIE: f64 = 1e-3;

/// The first `k` of `ranked` (cheapest first) that are not ties of one taken before: a
/// configuration is skipped when one already taken has the same groups and the same streamed groups
/// and a prediction within [`TIE`] of its own. On cosmo_hdiff4 the model's eight best were one
/// streamed tiling with 2 to 60 tiles along z, predicted within 0.04% of each other, while the
/// measured best of the original work's auto-tuning grid (unstreamed 1x4x60) was the model's 26th
/// (docs/decisions/0022-tune-sweeps-and-confirmation.md): measuring eight ties teaches `tune` no
/// more than measuring one.
pub fn distinct_best(ranked: Vec<(Configuration, f64)>, k: usize) -> Vec<(Configuration, f64)> {
    let mut taken: Vec<(Configuration, f64)> = Vec::new();
    for (config, t) in ranked {
        if taken.len() == k {
            break;
        }
        let tie = taken.iter().any(|(c, u)| {
            c.groups == config.groups && c.stream == config.stream && (t - u).abs() <= TIE * u.abs()
        });
        if !tie {
            taken.push((config, t));
        }
    }
    taken
}

/// The inline set (indices into `program`), configuration and prediction of the solution file
/// at `path`, checked against `program` (errors name the file and key).
fn solution_configuration(
    program: &Program,
    view: &ModelMachine,
    path: &std::path::Path,
) -> Result<(Vec<usize>, Configuration, f64), PlanError> {
    let file_error = |d: Vec<absinthe_model::diagnostic::Diagnostic>| {
        PlanError::File(absinthe_model::diagnostic::FileError::new(path, d))
    };
    let solution = absinthe_model::solution::Solution::load(path)?;
    // The groups describe the program with `inline` inlined: errors name the entry at fault.
    solution.program_for(program).map_err(file_error)?;
    let inline = absinthe_model::inline::indices_of(program, &solution.inline).map_err(|e| {
        file_error(vec![absinthe_model::diagnostic::Diagnostic::new(
            "inline",
            e.to_string(),
        )])
    })?;
    let (_, analysis, _) = inline_apply(program, view.params.operations, &inline)?;
    let config = solution.configuration(&analysis).map_err(file_error)?;
    let predicted = evaluate(&analysis, view, &config).total;
    Ok((inline, config, predicted))
}

/// The configurations of `variants`: solved (opt, unfused, fused, groups:...), the reference
/// (naive), or drawn (random:N). Infeasible ones are kept, marked skipped.
pub fn plan(
    variants: &[Variant],
    program: &Program,
    analysis: &Analysis,
    view: &ModelMachine,
    settings: &PlanSettings,
) -> Result<Vec<Planned>, PlanError> {
    let n = analysis.stencils.len();
    let mut planned = Vec::new();
    let unfused: Vec<usize> = (0..n).collect();
    // The inline set of `opt`, chosen once.
    let mut chosen: Option<InlineChoice> = None;
    let mut choice = || -> Result<InlineChoice, PlanError> {
        if let Some(c) = &chosen {
            return Ok(c.clone());
        }
        let c = choose_inline(
            program,
            analysis,
            view,
            &settings.options,
            &settings.inline,
            settings.solve_options.threads.unwrap_or(0),
        )?;
        chosen = Some(c.clone());
        Ok(c)
    };
    let mut push = |name: String,
                    inline: &[usize],
                    found: Option<(Configuration, f64)>,
                    reference: bool,
                    fallback: Vec<usize>| {
        planned.push(match found {
            Some((config, predicted)) => Planned {
                name,
                inline: inline.to_vec(),
                config,
                predicted,
                reference,
                skipped: None,
            },
            None => Planned {
                name,
                inline: Vec::new(),
                config: Configuration::new(
                    fallback.clone(),
                    vec![[1, 1, 1]; fallback.last().map_or(1, |g| g + 1)],
                ),
                predicted: f64::NAN,
                reference,
                skipped: Some("infeasible".into()),
            },
        });
    };
    for v in variants.iter().cloned() {
        match v {
            Variant::Opt => {
                let c = choice()?;
                push(
                    "opt".into(),
                    &c.inline,
                    solve_with_groups(&c.analysis, view, settings, None)?,
                    false,
                    unfused.clone(),
                )
            }
            Variant::NoInline => push(
                "noinline".into(),
                &[],
                solve_with_groups(analysis, view, settings, None)?,
                false,
                unfused.clone(),
            ),
            Variant::Unfused => push(
                "unfused".into(),
                &[],
                solve_with_groups(analysis, view, settings, Some(unfused.clone()))?,
                false,
                unfused.clone(),
            ),
            Variant::Fused => push(
                "fused".into(),
                &[],
                solve_with_groups(analysis, view, settings, Some(vec![0; n]))?,
                false,
                vec![0; n],
            ),
            Variant::Unstreamed => {
                let plain = PlanSettings {
                    inline: settings.inline.clone(),
                    options: MilpOptions {
                        no_stream: true,
                        ..settings.options.clone()
                    },
                    solver: settings.solver,
                    solve_options: settings.solve_options.clone(),
                    seed: settings.seed,
                };
                push(
                    "unstreamed".into(),
                    &[],
                    solve_with_groups(analysis, view, &plain, None)?,
                    false,
                    unfused.clone(),
                )
            }
            Variant::Groups(g) => {
                let name = format!(
                    "groups:{}",
                    g.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                );
                let found = solve_with_groups(analysis, view, settings, Some(g.clone()))?;
                push(name, &[], found, false, g);
            }
            Variant::Naive => {
                // The reference is untiled and unfused: its prediction is the unfused
                // configuration with one tile per group.
                let config = Configuration::new(unfused.clone(), vec![[1, 1, 1]; n]);
                let predicted = evaluate(analysis, view, &config).total;
                push(
                    "naive".into(),
                    &[],
                    Some((config, predicted)),
                    true,
                    unfused.clone(),
                );
            }
            Variant::Autotune => {
                // The optimum's groups, every group with the same tile triple from the original
                // work's grid (tuning groups one by one would need a kernel per group); every
                // triple runs, feasible under the model or not (that is what auto-tuning
                // measures), streaming where its whole tiles miss the cache.
                // `opt`'s inline set: the groups are those of its program.
                let c = choice()?;
                let a = &c.analysis;
                let Some((opt, _)) = solve_with_groups(a, view, settings, None)? else {
                    push("autotune".into(), &[], None, false, unfused.clone());
                    continue;
                };
                let ngroups = opt.tiles.len();
                let stream = settings.options.stream_shape(a, view);
                for tiles in autotune_tilings(a.domain) {
                    let config = Configuration::new(opt.groups.clone(), vec![tiles; ngroups])
                        .canonical_stream(a, view, stream);
                    let predicted = evaluate(a, view, &config).total;
                    push(
                        format!("tune{}x{}x{}", tiles[0], tiles[1], tiles[2]),
                        &c.inline,
                        Some((config, predicted)),
                        false,
                        unfused.clone(),
                    );
                }
            }
            Variant::Top(k) => {
                // The model's best with `opt`'s inline set.
                let c = choice()?;
                let a = &c.analysis;
                let stream = settings.options.stream_shape(a, view);
                let scanned = k_best(a, view, &settings.options, k * TOP_SCAN, 0)
                    .into_iter()
                    .map(|(config, t)| (config.canonical_stream(a, view, stream), t))
                    .collect();
                let best = distinct_best(scanned, k);
                if best.is_empty() {
                    push("top1".into(), &[], None, false, unfused.clone());
                }
                if best.len() < k && !best.is_empty() {
                    eprintln!(
                        "top:{k}: only {} configurations that are not ties among the model's {} best",
                        best.len(),
                        k * TOP_SCAN
                    );
                }
                for (rank, (config, predicted)) in best.into_iter().enumerate() {
                    push(
                        format!("top{}", rank + 1),
                        &c.inline,
                        Some((config, predicted)),
                        false,
                        unfused.clone(),
                    );
                }
            }
            Variant::InlineSets(m) => {
                // Other inline sets the search solved, each at its optimum: everything inlined
                // first (the far end of the store-or-recompute trade-off, Halide's default,
                // which the model's ranking may put far down), then the cheapest.
                let c = choice()?;
                let all = absinthe_model::inline::candidates(analysis);
                let mut others: Vec<&(Vec<usize>, f64)> =
                    c.tried.iter().filter(|(set, _)| *set != c.inline).collect();
                others.sort_by_key(|(set, _)| *set != all);
                if others.len() < m {
                    eprintln!(
                        "sets:{m}: the inline search solved only {} other inline set(s)",
                        others.len()
                    );
                }
                for (k, (set, _)) in others.into_iter().take(m).enumerate() {
                    let (_, a, _) = inline_apply(program, view.params.operations, set)?;
                    push(
                        format!("set{}", k + 2),
                        set,
                        solve_with_groups(&a, view, settings, None)?,
                        false,
                        (0..a.stencils.len()).collect(),
                    );
                }
            }
            Variant::Solution(path) => {
                let (inline, config, predicted) = solution_configuration(program, view, &path)?;
                push(
                    format!(
                        "solution:{}",
                        path.file_name().map_or(path.display().to_string(), |n| n
                            .to_string_lossy()
                            .into_owned())
                    ),
                    &inline,
                    Some((config, predicted)),
                    false,
                    unfused.clone(),
                );
            }
            Variant::Random(count) => {
                let found =
                    random_configurations(analysis, view, &settings.options, count, settings.seed);
                if found.len() < count {
                    eprintln!(
                        "random:{count}: found only {} feasible configurations",
                        found.len()
                    );
                }
                for (k, config) in found.into_iter().enumerate() {
                    let predicted = evaluate(analysis, view, &config).total;
                    push(
                        format!("random{k}"),
                        &[],
                        Some((config, predicted)),
                        false,
                        unfused.clone(),
                    );
                }
            }
        }
    }
    Ok(planned)
}
