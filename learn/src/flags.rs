//! The compiler flags `learn` chooses, before anything else is timed.
//!
//! A machine file may list `compiler.candidates`: flags to try beside its own. What a compiler
//! makes of a stencil row loop depends on how it is tuned for the CPU, and no setting wins on
//! every CPU: on an AMD EPYC (Zen 4), GCC 12 tunes for Zen 3 and keeps a base register per
//! read of an inlined row loop, reloading reads from memory; tuned for Ice Lake with 512-bit
//! vectors preferred it loads each read once (docs/decisions/0017-compiler-flags.md). So
//! `learn` times [`FLAG_KERNELS`], its own kernels and none of the programs results are
//! reported on, built with the base flags ([`Compiler::base_flags`]) and with each
//! candidate added: each kernel's optimum under the machine's parameters (the shipped default
//! parameters when the file has none: the optimum is only a representative kernel here), in
//! [`FLAG_ROUNDS`] rounds, each running every kernel's builds one after the other (every other
//! round in reverse order, so that a machine slowly getting faster or slower favours no set),
//! every run verified. Within a round a candidate's kernels are compared with the base flags'
//! (the geometric mean of their ratios), and a candidate replaces the base flags only when it is
//! faster with 95% confidence over the rounds ([`choose`]). Both guard against the machine: a
//! shared one's memory bandwidth moves by a third within minutes, and two builds of the same
//! flags timed set after set measured 0.87-1.02 of each other's time, as much as a candidate
//! gains on some machines. One the compiler refuses is skipped. Everything `learn` times
//! afterwards is built with the flags chosen.

use absinthe_codegen::compile::Toolchain;
use absinthe_measure::variants::Variant;
use absinthe_model::formats::learned::FlagCalibration;
use absinthe_model::formats::machine::{Compiler, Machine};

use crate::calibrate::{build_cases, run_cases};
use crate::kernels::{kernel_bundles, programs_of, KERNELS};
use crate::stats::{geometric_mean, paired};
use crate::{LearnError, LearnOptions, Progress};

/// Rounds over the flag sets, each timing every kernel once per set.
pub const FLAG_ROUNDS: usize = 12;

/// Timed runs per kernel and round (the harness discards the first quarter).
pub const FLAG_RUNS: usize = 12;

/// The kernels timed: learn's refit kernels ([`KERNELS`]) and two that spend their time in
/// large row loops once their producers are inlined, where code generation shows most: a
/// fourth-order diffusion with a clamped flux and flux-form advection with minmod-limited
/// slopes. None is a program results are reported on.
pub const FLAG_KERNELS: [(&str, &str); 6] = [
    KERNELS[0],
    KERNELS[1],
    KERNELS[2],
    KERNELS[3],
    ("learn_hyper", include_str!("../programs/learn_hyper.yaml")),
    ("learn_muscl", include_str!("../programs/learn_muscl.yaml")),
];

/// The shipped default machine, whose parameters choose the kernels' optima when the machine
/// file has none.
const DEFAULT_MACHINE: &str = include_str!("../../machines/default.yaml");

/// What the choice measured, and the flags chosen.
#[derive(Clone, Debug)]
pub struct FlagChoice {
    /// Each flag set tried ([`Compiler::flag_sets`]) and its time; None where the compiler
    /// refused the set.
    pub sets: Vec<(Vec<String>, Option<f64>)>,
    /// The index of the set chosen.
    pub chosen: usize,
    /// The kernels timed, and per set each one's fastest median (None where refused).
    pub kernels: Vec<String>,
    pub times: Vec<Option<Vec<f64>>>,
    /// Per set, per round: the geometric mean over the kernels of the set's median over the
    /// base set's in the same round (1 for the base set; None where refused).
    pub ratios: Vec<Option<Vec<f64>>>,
    /// Each refused candidate's flags and the compiler's error.
    pub refused: Vec<(Vec<String>, String)>,
}

impl FlagChoice {
    pub fn flags(&self) -> &[String] {
        &self.sets[self.chosen].0
    }

    pub fn record(&self) -> FlagCalibration {
        FlagCalibration {
            flags: self.sets.iter().map(|s| s.0.clone()).collect(),
            seconds: self.sets.iter().map(|s| s.1).collect(),
            ratios: self.ratios.clone(),
        }
    }
}

/// The index of the flag set to keep (`ratios` per set, per round, as [`FlagChoice::ratios`]):
/// of the candidates faster than the base set (index 0) with 95% confidence, the one with the
/// smallest ratio; else the base set.
pub fn choose(ratios: &[Option<Vec<f64>>]) -> usize {
    if ratios.first().is_none_or(Option::is_none) {
        return 0;
    }
    ratios
        .iter()
        .enumerate()
        .skip(1)
        .filter_map(|(n, r)| r.as_deref().and_then(paired).map(|p| (n, p)))
        .filter(|(_, (_, upper))| *upper < 1.0)
        .min_by(|a, b| a.1 .0.total_cmp(&b.1 .0))
        .map_or(0, |(n, _)| n)
}

/// Times learn's kernels built with each of `compiler`'s flag sets on `machine` (whose cores and
/// cache the kernels are solved for), with `options`' flush and threads, in `rounds` rounds (at
/// least two: the choice compares rounds).
pub fn choose_flags(
    compiler: &Compiler,
    machine: &Machine,
    options: &LearnOptions,
    rounds: usize,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<FlagChoice, LearnError> {
    let sets = compiler.flag_sets();
    let toolchains: Vec<Toolchain> = sets
        .iter()
        .map(|flags| {
            Toolchain::new(&compiler.cxx, flags)
                .dividing(compiler.division)
                .fused_multiply_add()
        })
        .collect();
    let timed = time_builds(
        &FLAG_KERNELS,
        machine,
        &toolchains,
        options,
        rounds,
        progress,
    )?;
    let seconds: Vec<Option<f64>> = timed
        .times
        .iter()
        .map(|t| t.as_ref().and_then(|t| geometric_mean(t)))
        .collect();
    let chosen = choose(&timed.ratios);
    Ok(FlagChoice {
        sets: sets.into_iter().zip(seconds).collect(),
        chosen,
        refused: timed
            .refused
            .into_iter()
            .map(|(n, e)| (compiler.candidates[n - 1].clone(), e))
            .collect(),
        kernels: timed.kernels,
        times: timed.times,
        ratios: timed.ratios,
    })
}

/// What [`time_builds`] measured: the kernels timed, per build each one's fastest median, per
/// build and round the geometric mean of its kernels' medians over the first build's (None
/// where the compiler refused the build), and each refused build's index and the compiler's
/// error.
pub struct BuildTimes {
    pub kernels: Vec<String>,
    pub times: PerSet,
    pub ratios: PerSet,
    pub refused: Vec<(usize, String)>,
}

/// Times `kernels` (name, YAML) built with each of `toolchains` (timed builds) on `machine`
/// (whose cores and cache the kernels are solved for; the shipped default parameters where it
/// has none: the optimum is only a representative kernel here), with `options`' flush and
/// threads, in `rounds` rounds. The first build is the base: its failure is learn's failure; a
/// later one the compiler refuses is left out.
pub fn time_builds(
    kernels: &[(&str, &str)],
    machine: &Machine,
    toolchains: &[Toolchain],
    options: &LearnOptions,
    rounds: usize,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<BuildTimes, LearnError> {
    let solved = match machine.params {
        Some(_) => machine.clone(),
        None => {
            let default = Machine::from_yaml(DEFAULT_MACHINE)
                .map_err(|d| LearnError::MachineFile(format!("machines/default.yaml: {d:?}")))?;
            Machine {
                params: default.params,
                ..machine.clone()
            }
        }
    };
    let bundles = kernel_bundles(programs_of(kernels)?, &solved, &[Variant::Opt], options)?;
    // The kernels with a feasible optimum on this machine.
    let mut names = Vec::new();
    let mut sources = Vec::new();
    let mut cases = Vec::new();
    for ((name, source), case) in bundles
        .names
        .into_iter()
        .zip(bundles.sources)
        .zip(bundles.cases)
    {
        if source.is_some() {
            names.push(name);
            sources.push(source);
            cases.push(case);
        }
    }
    // One bar for the whole choice: a build per kernel and toolchain, then each round a run of
    // each.
    progress(Progress::Start {
        total: (1 + rounds) * toolchains.len() * names.len(),
    });
    let step = |p: Progress| {
        if !matches!(p, Progress::Start { .. }) {
            progress(p)
        }
    };
    // Per build, the kernels' executables; None where the compiler refused the build.
    let mut exes = Vec::new();
    let mut refused = Vec::new();
    for (n, toolchain) in toolchains.iter().enumerate() {
        let built_with = LearnOptions {
            toolchain: toolchain.clone(),
            ..options.clone()
        };
        match build_cases(&sources, &built_with, &step) {
            Ok(built) => exes.push(Some(built)),
            // The base build is the file's own: a failure there is learn's failure.
            Err(e) if n == 0 => return Err(e),
            Err(e) => {
                refused.push((n, compiler_error(&e)));
                exes.push(None);
            }
        }
    }
    let medians = time_rounds(&names, &cases, &exes, options, rounds, &step)?;
    let (times, ratios) = fastest_and_ratios(&medians, names.len());
    Ok(BuildTimes {
        kernels: names,
        times,
        ratios,
        refused,
    })
}

/// Per set, per round, per kernel: the median of the kernel built with the set's flags (`exes`,
/// None where refused). A kernel's sets run one after the other, seconds apart, so that the
/// machine's memory bandwidth, which on a shared machine moves by a third within minutes, is the
/// same for the builds compared; every other round runs them in reverse order.
fn time_rounds(
    names: &[String],
    cases: &[Vec<String>],
    exes: &[Option<Vec<Option<std::path::PathBuf>>>],
    options: &LearnOptions,
    rounds: usize,
    step: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<Option<Vec<Vec<f64>>>>, LearnError> {
    let alive: Vec<usize> = (0..exes.len()).filter(|&n| exes[n].is_some()).collect();
    let mut medians: Vec<Option<Vec<Vec<f64>>>> = exes
        .iter()
        .map(|e| e.as_ref().map(|_| Vec::new()))
        .collect();
    for round in 0..rounds {
        let mut order = alive.clone();
        if round % 2 == 1 {
            order.reverse();
        }
        let runs: Vec<(usize, usize)> = (0..names.len())
            .flat_map(|k| order.iter().map(move |&n| (n, k)))
            .collect();
        let run_names: Vec<String> = runs.iter().map(|&(_, k)| names[k].clone()).collect();
        let run_exes: Vec<_> = runs
            .iter()
            .map(|&(n, k)| exes[n].as_ref().and_then(|e| e[k].clone()))
            .collect();
        let run_cases_of: Vec<Vec<String>> = runs.iter().map(|&(_, k)| cases[k].clone()).collect();
        let timed = run_cases(
            &run_names,
            &run_exes,
            &run_cases_of,
            (1, FLAG_RUNS),
            options,
            step,
        )?;
        for &n in &alive {
            let of_set = runs
                .iter()
                .zip(&timed)
                .filter(|((m, _), _)| *m == n)
                .map(|(_, t)| t.first().copied().unwrap_or(f64::NAN));
            if let Some(rounds) = medians[n].as_mut() {
                rounds.push(of_set.collect());
            }
        }
    }
    Ok(medians)
}

/// Per flag set a list of numbers; None where the compiler refused the set.
type PerSet = Vec<Option<Vec<f64>>>;

/// From [`time_rounds`]' medians: per set, each kernel's fastest median, and per round the
/// geometric mean of its kernels' medians over the base set's (None where refused).
fn fastest_and_ratios(medians: &[Option<Vec<Vec<f64>>>], kernels: usize) -> (PerSet, PerSet) {
    let base = medians.first().cloned().flatten().unwrap_or_default();
    let times = medians
        .iter()
        .map(|m| {
            m.as_ref().map(|rounds| {
                (0..kernels)
                    .map(|k| rounds.iter().map(|r| r[k]).fold(f64::INFINITY, f64::min))
                    .collect()
            })
        })
        .collect();
    let ratios = medians
        .iter()
        .map(|m| {
            m.as_ref().map(|rounds| {
                rounds
                    .iter()
                    .zip(&base)
                    .map(|(r, b)| {
                        let quotients: Vec<f64> = r.iter().zip(b).map(|(t, b)| t / b).collect();
                        geometric_mean(&quotients).unwrap_or(f64::NAN)
                    })
                    .collect()
            })
        })
        .collect();
    (times, ratios)
}

/// The line of a failed build that says why: the compiler's first error, else the first line.
fn compiler_error(e: &LearnError) -> String {
    let text = e.to_string();
    let mut lines = text.lines().map(str::trim);
    let first = lines.next().unwrap_or_default().to_string();
    lines
        .find(|l| l.contains("error"))
        .map_or(first, str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_candidate_replaces_the_base_flags_only_when_surely_faster() {
        let base = Some(vec![1.0; 6]);
        // Faster in every round by 3% ± 1%: chosen.
        let faster = Some(vec![0.97, 0.96, 0.98, 0.97, 0.975, 0.965]);
        assert_eq!(choose(&[base.clone(), faster.clone()]), 1);
        // The same flags built twice: noise of ±2% around 1, kept.
        let same = Some(vec![1.02, 0.98, 1.01, 0.99, 1.015, 0.985]);
        assert_eq!(choose(&[base.clone(), same.clone()]), 0);
        // 2% faster on average but as often slower as faster: not sure enough.
        let noisy = Some(vec![0.90, 1.05, 0.92, 1.04, 0.95, 1.02]);
        assert_eq!(choose(&[base.clone(), noisy]), 0);
        // The faster of two sure candidates; a refused one is passed over.
        let fastest = Some(vec![0.90, 0.91, 0.89, 0.90, 0.92, 0.90]);
        assert_eq!(choose(&[base.clone(), faster.clone(), None, fastest]), 3);
        assert_eq!(choose(&[base.clone(), None]), 0);
        // One round proves nothing; no base, nothing to compare.
        assert_eq!(choose(&[Some(vec![1.0]), Some(vec![0.5])]), 0);
        assert_eq!(choose(&[None, faster]), 0);
        assert_eq!(choose(&[]), 0);
    }

    #[test]
    fn ratios_are_taken_within_each_round_against_the_base_set() {
        // Two kernels, two rounds; the second round runs everything twice as slow.
        let base = Some(vec![vec![1.0, 4.0], vec![2.0, 8.0]]);
        let half = Some(vec![vec![0.5, 4.0], vec![1.0, 8.0]]);
        let (times, ratios) = fastest_and_ratios(&[base, None, half], 2);
        assert_eq!(
            times,
            vec![Some(vec![1.0, 4.0]), None, Some(vec![0.5, 4.0])]
        );
        assert_eq!(ratios[0], Some(vec![1.0, 1.0]));
        assert_eq!(ratios[1], None);
        let r = ratios[2].clone().unwrap();
        assert!(r.iter().all(|x| (x - 0.5f64.sqrt()).abs() < 1e-12), "{r:?}");
    }

    #[test]
    fn the_default_machine_has_parameters_to_choose_kernels_with() {
        let m = Machine::from_yaml(DEFAULT_MACHINE).unwrap();
        assert!(m.params.is_some());
    }
}
