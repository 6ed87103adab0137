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
//! [`FLAG_ROUNDS`] rounds that interleave the flag sets, every run verified. A flag set's time
//! is the geometric mean over the kernels of their fastest round's median. A candidate replaces
//! the base flags only when it is [`MIN_GAIN`] faster ([`choose`]); one the compiler refuses is
//! skipped. Everything `learn` times afterwards is built with the flags chosen.

use absinthe_codegen::compile::Toolchain;
use absinthe_measure::variants::Variant;
use absinthe_model::formats::learned::FlagCalibration;
use absinthe_model::formats::machine::{Compiler, Machine};

use crate::calibrate::time_cases;
use crate::kernels::{kernel_bundles, programs_of, KERNELS};
use crate::{LearnError, LearnOptions, Progress};

/// Rounds over the flag sets, each timing every kernel once per set.
pub const FLAG_ROUNDS: usize = 4;

/// Timed runs per kernel and round (the harness discards the first quarter).
pub const FLAG_RUNS: usize = 12;

/// How much faster than the base flags a candidate must be to replace them: the noise between
/// two builds of the same flags on learn's kernels stays below it.
pub const MIN_GAIN: f64 = 0.02;

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
        }
    }
}

/// The index of the flag set to keep: the fastest, when it is at least [`MIN_GAIN`] faster
/// than the base set (index 0), else the base set.
pub fn choose(seconds: &[Option<f64>]) -> usize {
    let Some(Some(base)) = seconds.first().copied() else {
        return 0;
    };
    let best = seconds
        .iter()
        .enumerate()
        .filter_map(|(n, s)| s.map(|s| (n, s)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    match best {
        Some((n, s)) if s < base * (1.0 - MIN_GAIN) => n,
        _ => 0,
    }
}

/// Times learn's kernels built with each of `compiler`'s flag sets on `machine` (whose cores and
/// cache the kernels are solved for), with `options`' flush and threads.
pub fn choose_flags(
    compiler: &Compiler,
    machine: &Machine,
    options: &LearnOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<FlagChoice, LearnError> {
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
    let bundles = kernel_bundles(
        programs_of(&FLAG_KERNELS)?,
        &solved,
        &[Variant::Opt],
        options,
    )?;
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
    let sets = compiler.flag_sets();
    // One bar for the whole choice: each timing reports a build and a run per kernel.
    progress(Progress::Start {
        total: FLAG_ROUNDS * sets.len() * 2 * names.len(),
    });
    let step = |p: Progress| {
        if !matches!(p, Progress::Start { .. }) {
            progress(p)
        }
    };
    // Per set, per kernel: the fastest round's median; None once the compiler refused the set.
    let mut best: Vec<Option<Vec<f64>>> = vec![Some(vec![f64::INFINITY; names.len()]); sets.len()];
    let mut refused = Vec::new();
    for _ in 0..FLAG_ROUNDS {
        for (n, flags) in sets.iter().enumerate() {
            let Some(times) = best[n].as_mut() else {
                continue;
            };
            let timed = LearnOptions {
                toolchain: Toolchain::new(&compiler.cxx, flags).fused_multiply_add(),
                ..options.clone()
            };
            match time_cases(&names, &sources, &cases, (1, FLAG_RUNS), &timed, &step) {
                Ok(medians) => {
                    for (t, m) in times.iter_mut().zip(&medians) {
                        *t = t.min(m.first().copied().unwrap_or(f64::NAN));
                    }
                }
                // The base flags are the file's own: a failure there is learn's failure.
                Err(e) if n == 0 => return Err(e),
                Err(e) => {
                    refused.push((compiler.candidates[n - 1].clone(), compiler_error(&e)));
                    best[n] = None;
                }
            }
        }
    }
    let seconds: Vec<Option<f64>> = best
        .iter()
        .map(|t| t.as_ref().and_then(|t| geometric_mean(t)))
        .collect();
    let chosen = choose(&seconds);
    Ok(FlagChoice {
        sets: sets.into_iter().zip(seconds).collect(),
        chosen,
        refused,
        kernels: names,
        times: best,
    })
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

/// The geometric mean of `times`, None when one is not a positive finite time.
fn geometric_mean(times: &[f64]) -> Option<f64> {
    if times.is_empty() || times.iter().any(|t| !t.is_finite() || *t <= 0.0) {
        return None;
    }
    Some((times.iter().map(|t| t.ln()).sum::<f64>() / times.len() as f64).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_candidate_replaces_the_base_flags_only_when_clearly_faster() {
        assert_eq!(choose(&[Some(1.0), Some(0.97)]), 1);
        assert_eq!(choose(&[Some(1.0), Some(0.99)]), 0);
        assert_eq!(choose(&[Some(1.0), Some(1.2), Some(0.9), Some(0.95)]), 2);
        assert_eq!(choose(&[Some(1.0), None, Some(0.5)]), 2);
        assert_eq!(choose(&[Some(1.0), None]), 0);
        assert_eq!(choose(&[None, Some(0.5)]), 0);
        assert_eq!(choose(&[]), 0);
    }

    #[test]
    fn the_geometric_mean_refuses_a_missing_time() {
        assert!((geometric_mean(&[2.0, 8.0]).unwrap() - 4.0).abs() < 1e-12);
        assert_eq!(geometric_mean(&[2.0, f64::NAN]), None);
        assert_eq!(geometric_mean(&[2.0, f64::INFINITY]), None);
        assert_eq!(geometric_mean(&[]), None);
    }

    #[test]
    fn the_default_machine_has_parameters_to_choose_kernels_with() {
        let m = Machine::from_yaml(DEFAULT_MACHINE).unwrap();
        assert!(m.params.is_some());
    }
}
