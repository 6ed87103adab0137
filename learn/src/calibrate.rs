//! Choosing `cache_fraction` by measurement (`absinthe learn`, after the fit).
//!
//! The model admits a tile when its working set fits `cache_bytes * cache_fraction` (the model's
//! cache constraint, docs/MODEL.md, "Constraints"). The original work fixes the fraction at 1/3 of
//! L2, which leaves room for the hardware's own use of the cache. How much room a machine needs is
//! a property of its prefetchers and of the caches behind L2, not of the model: on an AMD EPYC
//! (512 KiB L2 per core, 32 MiB L3), the optimum of cosmo_pgrad_256 that streams whole rows is
//! ruled out at 1/3 and ran 1.5x faster than the one chosen there
//! (docs/decisions/0012-learned-cache-fraction.md). So `learn` measures it: for each fraction of
//! [`CACHE_FRACTIONS`] it solves the calibration programs ([`training::wide_program`]: chains of
//! gradients that touch 19 arrays, on a wide and a small domain) with the parameters just fitted,
//! builds each distinct optimum once, times them all in [`SETTING_ROUNDS`] rounds (caches
//! flushed, every run verified), and keeps the file's own fraction unless the fastest ran faster
//! with confidence, round by round ([`choose`]). Of the fractions that then tie with the fastest,
//! it keeps the one nearest the file's own: fractions near the best differ by less than a shared
//! machine moves between runs, and a rule that took the fastest of them wrote a different
//! fraction each time `learn` ran (docs/decisions/0012-learned-cache-fraction.md).

use absinthe_codegen::lower;
use absinthe_codegen::render::Renderer;
use absinthe_model::cost_model::evaluate::{evaluate, Configuration};
use absinthe_model::cost_model::inline_search::apply as inline_apply;
use absinthe_model::formats::learned::{CacheCalibration, GroupArraysCalibration};
use absinthe_model::formats::machine::Machine;

use absinthe_measure::runner::{median, Rounds, RunEvent, Runner, Sources};
use absinthe_measure::variants::{plan, PlanSettings, Variant};

use crate::stats::{geometric_mean, paired};
use crate::{training, training_runs, LearnError, LearnOptions, Progress};

/// The fractions of `cache_bytes` tried (the file's own is tried too).
pub const CACHE_FRACTIONS: [f64; 5] = [0.25, 1.0 / 3.0, 0.5, 0.75, 1.0];

/// A setting counts as slower than another only when its optima ran more than this share slower
/// (and slower with confidence, [`slower`]): a change of fraction changes every program's
/// tiles, and the machine's noise is a few percent.
pub const KEEP_TOLERANCE: f64 = 0.02;

/// Rounds of the calibrations' timings, each timing every distinct optimum once: the choice
/// compares the settings round by round.
pub const SETTING_ROUNDS: usize = 8;

/// The domains of the calibration programs: long rows (whether whole rows fit is what the
/// fraction decides for many-array programs) and a small domain.
pub const CALIBRATION_DOMAINS: [[usize; 3]; 2] = [[256, 128, 60], [64, 64, 60]];

/// The calibration programs' domains: `extents` (`--calibration-domain`, three per domain,
/// each at least 4), or [`CALIBRATION_DOMAINS`] when empty.
pub fn domains(extents: &[usize]) -> Result<Vec<[usize; 3]>, LearnError> {
    if extents.is_empty() {
        return Ok(CALIBRATION_DOMAINS.to_vec());
    }
    if !extents.len().is_multiple_of(3) || extents.iter().any(|&n| n < 4) {
        return Err(LearnError::Invalid(format!(
            "--calibration-domain takes three extents of at least 4 (x,y,z), found {extents:?}"
        )));
    }
    let domains: Vec<[usize; 3]> = extents.chunks(3).map(|d| [d[0], d[1], d[2]]).collect();
    if let Some(d) = domains.iter().find(|d| {
        d.iter()
            .try_fold(1u128, |cells, &n| cells.checked_mul(n as u128))
            .is_none_or(|cells| cells > MAX_CALIBRATION_CELLS)
    }) {
        return Err(LearnError::Invalid(format!(
            "--calibration-domain {},{},{}: more than {MAX_CALIBRATION_CELLS} cells; a calibration program keeps 19 arrays of them (the default domains are 256,128,60 and 64,64,60)",
            d[0], d[1], d[2]
        )));
    }
    Ok(domains)
}

/// The most cells of a calibration domain (`--calibration-domain`): 19 arrays of doubles, 2.5
/// GB.
pub const MAX_CALIBRATION_CELLS: u128 = 1 << 24;

/// What one fraction's optima measured.
#[derive(Clone, Debug, PartialEq)]
pub struct FractionResult {
    pub fraction: f64,
    /// Per calibration program: the optimum's case (index into that program's distinct
    /// optima) and its median seconds; None where the model found no feasible configuration.
    pub per_program: Vec<Option<(usize, f64)>>,
    /// The geometric mean of `rounds`, by which the fastest is found; None when some program
    /// had no optimum.
    pub seconds: Option<f64>,
    /// Per round, the geometric mean of the optima's medians in that round (None as `seconds`).
    pub rounds: Option<Vec<f64>>,
}

/// The calibration's measurements and the fraction chosen.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    pub programs: Vec<String>,
    /// One row per fraction tried, smallest first.
    pub results: Vec<FractionResult>,
    /// Per program, a one-line description of each distinct optimum (case index order).
    pub cases: Vec<Vec<String>>,
    pub chosen: f64,
}

impl Calibration {
    /// The record written into the machine file's `learned` block.
    pub fn record(&self) -> CacheCalibration {
        CacheCalibration {
            fractions: self.results.iter().map(|r| r.fraction).collect(),
            seconds: self.results.iter().map(|r| r.seconds).collect(),
            rounds: self.results.iter().map(|r| r.rounds.clone()).collect(),
        }
    }
}

/// The fractions tried: [`CACHE_FRACTIONS`] and `current` (unless within 0.001 of one of
/// them), smallest first.
pub fn fractions_to_try(current: f64) -> Vec<f64> {
    let mut out = CACHE_FRACTIONS.to_vec();
    if !out.iter().any(|f| (f - current).abs() < 1e-3) {
        out.push(current);
    }
    out.sort_by(f64::total_cmp);
    out
}

/// The fraction to keep ([`choose_setting`]): the file's own unless the fastest ran faster with
/// confidence; else, of the fractions not slower than the fastest, the one nearest the file's
/// own (by ratio; of two as near, the smaller). `current` when nothing was measured.
pub fn choose(results: &[FractionResult], current: f64) -> f64 {
    let rows: Vec<(f64, Option<&[f64]>)> = results
        .iter()
        .map(|r| (r.fraction, r.rounds.as_deref()))
        .collect();
    choose_setting(
        &rows,
        current,
        |f| (f - current).abs() < 1e-3,
        |f| (f / current).ln().abs(),
    )
}

/// Whether the setting timed `a` (per round) ran slower than the one timed `b` in the same
/// rounds: `b`'s time over `a`'s is below 1 with 95% confidence over the rounds
/// ([`paired`]), and by more than [`KEEP_TOLERANCE`] at its geometric mean.
pub fn slower(a: &[f64], b: &[f64]) -> bool {
    let ratios: Vec<f64> = b.iter().zip(a).map(|(b, a)| b / a).collect();
    paired(&ratios).is_some_and(|(mean, upper)| upper < 1.0 && mean * (1.0 + KEEP_TOLERANCE) < 1.0)
}

/// The setting to keep among `rows` (setting, its time per round; None: not measured, or some
/// program had no optimum): the current one (`is_current`) unless it ran [`slower`] than the
/// fastest (by geometric mean); else, of the settings not slower than the fastest, the one
/// nearest the current one (`distance`; of equals, the first). `current` when nothing was
/// measured.
fn choose_setting<T: Copy>(
    rows: &[(T, Option<&[f64]>)],
    current: T,
    is_current: impl Fn(T) -> bool,
    distance: impl Fn(T) -> f64,
) -> T {
    // The settings measured, with their times per round and geometric mean.
    let measured: Vec<(T, &[f64], f64)> = rows
        .iter()
        .filter_map(|&(s, r)| r.and_then(|r| geometric_mean(r).map(|g| (s, r, g))))
        .collect();
    let Some(&(_, best, _)) = measured.iter().min_by(|a, b| a.2.total_cmp(&b.2)) else {
        return current;
    };
    if let Some(&(_, own, _)) = measured.iter().find(|m| is_current(m.0)) {
        if !slower(own, best) {
            return current;
        }
    }
    measured
        .iter()
        .filter(|m| !slower(m.1, best))
        .min_by(|a, b| distance(a.0).total_cmp(&distance(b.0)))
        .map_or(current, |m| m.0)
}

/// A one-line description of a configuration: groups, tiles, streamed groups, inlined count.
fn describe(config: &Configuration, inlined: usize) -> String {
    let tiles: Vec<String> = config
        .tiles
        .iter()
        .enumerate()
        .map(|(g, t)| {
            let s = if config.stream.contains(&g) { "s" } else { "" };
            format!("{}x{}x{}{s}", t[0], t[1], t[2])
        })
        .collect();
    format!(
        "groups {:?}, tiles {}, {inlined} inlined",
        config.groups,
        tiles.join(" ")
    )
}

/// Measures the model's optima of the calibration programs on `domains` at each fraction of
/// [`fractions_to_try`] and chooses one (see the module's documentation). `machine` must hold
/// the parameters to solve with; its `cache_fraction` is the current one.
pub fn calibrate(
    machine: &Machine,
    options: &LearnOptions,
    domains: &[[usize; 3]],
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Calibration, LearnError> {
    let programs = training::wide_programs(domains)?;
    let fractions = fractions_to_try(machine.cache_fraction);
    let with = |fraction: f64| Machine {
        cache_fraction: fraction,
        ..machine.clone()
    };
    let (results, cases) = measure_settings(&fractions, with, &programs, options, progress)?;
    let results: Vec<FractionResult> = results
        .into_iter()
        .map(|(fraction, per_program, seconds, rounds)| FractionResult {
            fraction,
            per_program,
            seconds,
            rounds,
        })
        .collect();
    let chosen = choose(&results, machine.cache_fraction);
    Ok(Calibration {
        programs: programs.iter().map(|p| p.program.name.clone()).collect(),
        results,
        cases,
        chosen,
    })
}

/// The limits on the arrays per group tried (None: no limit; the file's own is tried too).
pub const GROUP_ARRAYS: [Option<usize>; 6] = [None, Some(16), Some(12), Some(10), Some(8), Some(6)];

/// What the optima under one `group_arrays` limit measured.
#[derive(Clone, Debug, PartialEq)]
pub struct LimitResult {
    pub limit: Option<usize>,
    /// Per calibration program: the optimum's case and its median seconds (see
    /// [`FractionResult::per_program`]).
    pub per_program: Vec<Option<(usize, f64)>>,
    /// The geometric mean of `rounds`, by which the fastest is found; None when some program
    /// had no optimum.
    pub seconds: Option<f64>,
    /// Per round, the geometric mean of the optima's medians in that round (None as `seconds`).
    pub rounds: Option<Vec<f64>>,
}

/// The group-arrays calibration's measurements and the limit chosen.
#[derive(Clone, Debug, PartialEq)]
pub struct LimitCalibration {
    pub programs: Vec<String>,
    /// One row per limit tried, no limit first, then the largest.
    pub results: Vec<LimitResult>,
    pub cases: Vec<Vec<String>>,
    pub chosen: Option<usize>,
}

impl LimitCalibration {
    /// The record written into the machine file's `learned` block.
    pub fn record(&self) -> GroupArraysCalibration {
        GroupArraysCalibration {
            limits: self.results.iter().map(|r| r.limit).collect(),
            seconds: self.results.iter().map(|r| r.seconds).collect(),
            rounds: self.results.iter().map(|r| r.rounds.clone()).collect(),
        }
    }
}

/// The limits tried: [`GROUP_ARRAYS`] and `current`, no limit first, then the largest.
pub fn limits_to_try(current: Option<usize>) -> Vec<Option<usize>> {
    let mut out = GROUP_ARRAYS.to_vec();
    if !out.contains(&current) {
        out.push(current);
    }
    out.sort_by_key(|l| std::cmp::Reverse(l.unwrap_or(usize::MAX)));
    out
}

/// The limit to keep, by the rule of [`choose`] ([`choose_setting`]): the file's own unless the
/// fastest ran faster with confidence; else, of the limits not slower than the fastest, the one
/// nearest the file's own (by ratio; no limit is nearest no limit, then the largest).
/// `current` when nothing was measured.
pub fn choose_limit(results: &[LimitResult], current: Option<usize>) -> Option<usize> {
    let rows: Vec<(Option<usize>, Option<&[f64]>)> = results
        .iter()
        .map(|r| (r.limit, r.rounds.as_deref()))
        .collect();
    let distance = |l: Option<usize>| match (l, current) {
        (None, None) => 0.0,
        (Some(l), None) => 1.0 / l as f64,
        (None, Some(_)) => f64::INFINITY,
        (Some(l), Some(c)) => (l as f64 / c as f64).ln().abs(),
    };
    choose_setting(&rows, current, |l| l == current, distance)
}

/// Measures the model's optima of the group-arrays calibration programs
/// ([`training::fields_programs`] and [`training::wide_programs`] on `domains`) under each limit
/// of [`limits_to_try`] and chooses one. The fields programs stream along y, where the limit
/// applies (`evaluate::limits_arrays`; one group of four fields walks 13 arrays); the chains
/// stream along z and keep their optima under every limit, and stay in the score so that
/// a rule that reaches them is measured on them. `machine` holds the parameters and the
/// fraction to solve with.
pub fn calibrate_group_arrays(
    machine: &Machine,
    options: &LearnOptions,
    domains: &[[usize; 3]],
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<LimitCalibration, LearnError> {
    let mut programs = training::fields_programs(domains)?;
    programs.extend(training::wide_programs(domains)?);
    let limits = limits_to_try(machine.group_arrays);
    let with = |limit: Option<usize>| Machine {
        group_arrays: limit,
        ..machine.clone()
    };
    let (results, cases) = measure_settings(&limits, with, &programs, options, progress)?;
    let results: Vec<LimitResult> = results
        .into_iter()
        .map(|(limit, per_program, seconds, rounds)| LimitResult {
            limit,
            per_program,
            seconds,
            rounds,
        })
        .collect();
    let chosen = choose_limit(&results, machine.group_arrays);
    Ok(LimitCalibration {
        programs: programs.iter().map(|p| p.program.name.clone()).collect(),
        results,
        cases,
        chosen,
    })
}

/// Per setting of `settings` (applied to the machine by `with`): the calibration programs'
/// optima timed, per program its optimum's case and median, and their geometric mean; and
/// the cases' descriptions per program.
fn measure_settings<S: Copy>(
    settings: &[S],
    with: impl Fn(S) -> Machine,
    programs: &[training::TrainingProgram],
    options: &LearnOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Settings<S>, LearnError> {
    let machines: Vec<Machine> = settings.iter().map(|&s| with(s)).collect();
    let measured = measure_optima(&machines, programs, options, progress)?;
    let results = settings
        .iter()
        .zip(measured.per_setting)
        .map(|(&s, (per_program, seconds, rounds))| (s, per_program, seconds, rounds))
        .collect();
    Ok((results, measured.cases))
}

/// Per calibration program: its optimum's case and median seconds (None where infeasible).
type PerProgram = Vec<Option<(usize, f64)>>;

/// One setting's row: the setting, per program its optimum's case and median, the geometric
/// mean of the medians, and per round the geometric mean of that round's medians.
type SettingRow<S> = (S, PerProgram, Option<f64>, Option<Vec<f64>>);

/// Every setting's row, and the cases' descriptions per program.
type Settings<S> = (Vec<SettingRow<S>>, Vec<Vec<String>>);

/// The optima of the calibration programs under each machine setting, timed.
struct Optima {
    /// Per setting: per program its optimum's case and median over the rounds (None where
    /// infeasible), the geometric mean of the medians, and per round the geometric mean of that
    /// round's medians (both None when some program had no optimum).
    per_setting: Vec<(PerProgram, Option<f64>, Option<Vec<f64>>)>,
    /// Per program, a one-line description of each distinct optimum (case index order).
    cases: Vec<Vec<String>>,
}

/// Solves every program on each of `machines`, builds each distinct optimum once, and times
/// them all in interleaved rounds (caches flushed, every run verified).
fn measure_optima(
    machines: &[Machine],
    programs: &[training::TrainingProgram],
    options: &LearnOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Optima, LearnError> {
    let settings = PlanSettings::learn(options.solver);
    let renderer = Renderer::embedded();
    // Per program: the distinct optima (inline set, configuration, lowered kernel), and each
    // setting's case.
    let mut sources = Vec::new();
    let mut cases_of: Vec<Vec<Option<usize>>> = Vec::new();
    let mut descriptions = Vec::new();
    for p in programs {
        let mut distinct: Vec<(Vec<usize>, Configuration)> = Vec::new();
        let mut schedules = Vec::new();
        let mut case_of = Vec::new();
        for m in machines {
            let view = m
                .model_view(p.program.value_type.bytes())
                .map_err(|d| LearnError::MachineFile(format!("{d:?}")))?;
            let planned = plan(&[Variant::Opt], &p.program, &p.analysis, &view, &settings)
                .map_err(|e| LearnError::Calibrate(format!("{}: {e}", p.program.name)))?;
            let Some(opt) = planned.planned.into_iter().find(|o| o.skipped.is_none()) else {
                case_of.push(None);
                continue;
            };
            let key = (opt.inline.clone(), opt.config.clone());
            if let Some(k) = distinct.iter().position(|d| *d == key) {
                case_of.push(Some(k));
                continue;
            }
            let (prog, an, _) = inline_apply(&p.program, view.params.operations, &opt.inline)
                .map_err(|e| LearnError::Calibrate(format!("{}: {e}", p.program.name)))?;
            let cost = evaluate(&an, &view, &opt.config);
            schedules.push(
                lower(&prog, &an, &opt.config, &cost)?.with_reference(&p.program, &p.analysis),
            );
            case_of.push(Some(distinct.len()));
            distinct.push(key);
        }
        let labels = (0..schedules.len()).map(|k| format!("case{k}")).collect();
        sources.push(if schedules.is_empty() {
            None
        } else {
            Some(training_runs::bundle_source(&renderer, &schedules, labels)?)
        });
        descriptions.push(
            distinct
                .iter()
                .map(|(inline, c)| describe(c, inline.len()))
                .collect::<Vec<_>>(),
        );
        cases_of.push(case_of);
    }
    let names: Vec<String> = programs.iter().map(|p| p.program.name.clone()).collect();
    let rounds = SETTING_ROUNDS.min(options.repeats).max(2);
    let per_round = options.repeats.div_ceil(rounds).max(4);
    progress(Progress::Start {
        total: names.len() * (1 + rounds),
    });
    let exes = build_cases(&sources, options, progress)?;
    // Per round, per program, per case: its median in that round.
    let timed = (0..rounds)
        .map(|_| {
            run_cases(
                &names,
                &exes,
                &descriptions,
                (1, per_round),
                options,
                progress,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Optima {
        per_setting: (0..machines.len())
            .map(|f| setting_times(&timed, &cases_of, f))
            .collect(),
        cases: descriptions,
    })
}

/// Setting `f`'s times from `timed` (per round, per program, per case: its median in that round)
/// and `cases_of` (per program, per setting: its optimum's case): per program its case and
/// median over the rounds; per round the geometric mean of that round's medians, and the
/// geometric mean of those.
pub(crate) fn setting_times(
    timed: &[Vec<Vec<f64>>],
    cases_of: &[Vec<Option<usize>>],
    f: usize,
) -> (PerProgram, Option<f64>, Option<Vec<f64>>) {
    let per_program: PerProgram = cases_of
        .iter()
        .enumerate()
        .map(|(p, case_of)| {
            case_of[f].map(|c| {
                let rounds: Vec<f64> = timed.iter().map(|round| round[p][c]).collect();
                (c, median(&rounds))
            })
        })
        .collect();
    let gm = |times: Option<Vec<f64>>| times.and_then(|t| geometric_mean(&t));
    let per_round = timed
        .iter()
        .map(|round| {
            gm(cases_of
                .iter()
                .enumerate()
                .map(|(p, case_of)| case_of[f].map(|c| round[p][c]))
                .collect())
        })
        .collect::<Option<Vec<f64>>>();
    (per_program, gm(per_round.clone()), per_round)
}

/// Builds each program's bundle (`sources[k]`, None: nothing to time) and times it in
/// `runs.0` interleaved rounds of `runs.1` runs (caches flushed, every run verified; the
/// harness discards the first quarter of each round's runs); per program, the median
/// of each case, whose descriptions (`cases[k]`, one per harness result line) name it in
/// errors. The kernel refit's timing (the calibrations time round by round, [`measure_optima`]).
pub(crate) fn time_cases(
    names: &[String],
    sources: &[Option<String>],
    cases: &[Vec<String>],
    runs: (usize, usize),
    options: &LearnOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<Vec<f64>>, LearnError> {
    progress(Progress::Start {
        total: names.len() * (1 + runs.0),
    });
    let exes = build_cases(sources, options, progress)?;
    run_cases(names, &exes, cases, runs, options, progress)
}

/// Builds each program's bundle with `options`' toolchain (None where there is nothing to
/// build), reporting each build to `progress`.
pub(crate) fn build_cases(
    sources: &[Option<String>],
    options: &LearnOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<Option<std::path::PathBuf>>, LearnError> {
    let sources: Vec<Sources> = sources
        .iter()
        .map(|s| {
            s.as_ref()
                .map(|src| vec![("bundle.cpp".to_string(), src.clone())])
        })
        .collect();
    let built = |_| {
        progress(Progress::Step {
            what: "build".into(),
        })
    };
    Ok(runner(options)
        .build(&sources, &built)
        .into_iter()
        .map(Option::transpose)
        .collect::<Result<_, _>>()?)
}

fn runner(options: &LearnOptions) -> Runner<'_> {
    Runner {
        toolchain: &options.toolchain,
        env: vec![("OMP_NUM_THREADS".into(), options.threads.to_string())],
        jobs: options.jobs,
    }
}

/// Times built programs (`exes`, as [`build_cases`] returns them) as [`time_cases`] does.
pub(crate) fn run_cases(
    names: &[String],
    exes: &[Option<std::path::PathBuf>],
    cases: &[Vec<String>],
    (rounds, per_round): (usize, usize),
    options: &LearnOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<Vec<f64>>, LearnError> {
    // Rounds interleave the programs, as in the fit's measurements.
    let mut ran = |e: RunEvent| {
        if let RunEvent::Ran { index, .. } = e {
            progress(Progress::Step {
                what: names[index].clone(),
            });
        }
    };
    let rounds = Rounds { rounds, per_round };
    let pooled =
        runner(options).run_rounds(exes, rounds, &[options.flush], &|_| "kernel", &mut ran)?;
    pooled
        .into_iter()
        .zip(names.iter().zip(cases))
        .map(|(pooled, (name, cases))| {
            let Some(results) = pooled.and_then(|mut flushes| flushes.pop()) else {
                return Ok(vec![f64::NAN; cases.len()]);
            };
            if results.len() != cases.len() {
                return Err(LearnError::Run(format!(
                    "{name}: {} result lines for {} cases",
                    results.len(),
                    cases.len()
                )));
            }
            results
                .iter()
                .zip(cases)
                .map(|(r, case)| {
                    if r.verified {
                        Ok(median(&r.times))
                    } else {
                        Err(LearnError::Run(format!(
                            "{name}: the configuration {case} differs from the reference"
                        )))
                    }
                })
                .collect()
        })
        .collect()
}
