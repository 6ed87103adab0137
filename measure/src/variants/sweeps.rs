//! Measured searches over tile counts: the original work's auto-tuning grid, coordinate
//! sweeps of one group's tile count, and the measured search `tune --refine` runs.

use std::collections::HashSet;

use absinthe_model::cost_model::evaluate::{evaluate, Configuration};
use absinthe_model::cost_model::options::SearchSpace;
use absinthe_model::formats::machine::ModelMachine;
use absinthe_model::language::analysis::Analysis;

use super::drawn::TIE;

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
    options: &SearchSpace,
    config: &Configuration,
    g: usize,
    d: usize,
    ladder: &[usize],
) -> Vec<Swept> {
    let stream = options.stream_shape(analysis, view);
    // A sweep keeps the groups; the tile bounds and streaming restrictions still apply.
    let bounds = SearchSpace {
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
        if !bounds.admits(&next, analysis) || out.iter().any(|s| s.config == next) {
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
    options: &SearchSpace,
    probes: &mut Vec<Probe>,
    budget: usize,
    mut time: impl FnMut(&SweepStep) -> Result<StepTimes, E>,
) -> Result<Option<usize>, E> {
    let Some(mut best) = fastest(probes, 0) else {
        return Ok(None);
    };
    let Some(domain) = spaces.first().map(|a| a.domain) else {
        return Ok(None);
    };
    let search = SweepSearch {
        spaces,
        view,
        options,
        ladders: autotune_counts(domain),
    };
    let mut done: HashSet<(usize, usize, usize)> = HashSet::new();
    let mut left = budget;
    while left > 0 {
        let Some((source, group, dim, swept)) = search.next(probes, best, &mut done, left) else {
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
        if let Some(k) =
            fastest(probes, first).filter(|&k| probes[k].seconds.is_some_and(|t| t < now))
        {
            best = k;
        }
    }
    Ok(Some(best))
}

/// The fastest timed probe of `probes[from..]`.
fn fastest(probes: &[Probe], from: usize) -> Option<usize> {
    (from..probes.len())
        .filter_map(|k| probes[k].seconds.map(|t| (k, t)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(k, _)| k)
}

/// What [`measured_sweeps`] sweeps in: the programs, the machine, the search restrictions and
/// the auto-tuning ladders of the domain.
struct SweepSearch<'a> {
    spaces: &'a [Analysis],
    view: &'a ModelMachine,
    options: &'a SearchSpace,
    ladders: [Vec<usize>; 3],
}

impl SweepSearch<'_> {
    /// The sweeps in the order they are tried, as (probe, dimensions): along z and y, those of
    /// the fastest so far and of its near ties (measured within noise of it, or predicted the
    /// same); the fastest's along x; the rest along z and y. Sources other than the fastest go
    /// by their latest time.
    fn order(probes: &[Probe], best: usize) -> Vec<(usize, &'static [usize])> {
        let mut sources: Vec<usize> = (0..probes.len())
            .filter(|&k| k != best && probes[k].seconds.is_some())
            .collect();
        sources.sort_by(|&a, &b| {
            let time = |k: usize| probes[k].seconds.unwrap_or(f64::INFINITY);
            time(a).total_cmp(&time(b))
        });
        sources.insert(0, best);
        let near = probes[best].seconds.unwrap_or(f64::INFINITY) * (1.0 + NEAR_FASTEST);
        let model_tie = |k: usize| {
            let (p, q) = (probes[k].predicted, probes[best].predicted);
            (p - q).abs() <= TIE * q.abs()
        };
        let is_near =
            |k: usize| k == best || probes[k].seconds.is_some_and(|t| t <= near) || model_tie(k);
        let (near, far): (Vec<usize>, Vec<usize>) = sources.into_iter().partition(|&k| is_near(k));
        near.into_iter()
            .map(|k| (k, &SWEEP_ORDER[..2]))
            .chain([(best, &SWEEP_ORDER[2..])])
            .chain(far.into_iter().map(|k| (k, &SWEEP_ORDER[..2])))
            .collect()
    }

    /// The next sweep with an untimed configuration, as (probe, group, dimension, at most
    /// `left` configurations); each probe's groups the slowest by the model first. `done`
    /// holds the sweeps tried.
    fn next(
        &self,
        probes: &[Probe],
        best: usize,
        done: &mut HashSet<(usize, usize, usize)>,
        left: usize,
    ) -> Option<(usize, usize, usize, Vec<Swept>)> {
        for (source, dims) in Self::order(probes, best) {
            let (space, analysis) = (probes[source].space, &self.spaces[probes[source].space]);
            let cost = evaluate(analysis, self.view, &probes[source].config);
            let mut groups: Vec<usize> = (0..cost.groups.len()).collect();
            groups.sort_by(|&a, &b| cost.groups[b].time.total_cmp(&cost.groups[a].time));
            for g in groups {
                for &d in dims {
                    if !done.insert((source, g, d)) {
                        continue;
                    }
                    let config = &probes[source].config;
                    let swept: Vec<Swept> = sweep(
                        analysis,
                        self.view,
                        self.options,
                        config,
                        g,
                        d,
                        &self.ladders[d],
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
                        return Some((source, g, d, swept));
                    }
                }
            }
        }
        None
    }
}
