//! How the timed build divides by literals, chosen by measurement
//! (docs/decisions/0054-division-by-a-literal-through-its-reciprocal.md).
//!
//! The timed build computes `x / y` for a literal `y` through the reciprocal of `y` and FMAs
//! (`absinthe_divide_by`), or with a division instruction; both give the correctly rounded
//! quotient. Which is faster depends on the CPU: on an AVX-512 Xeon the reciprocal ran the
//! dividing programs in 0.78-0.94 of the division's time; on a Zen 3 EPYC the division ran most
//! of them faster (0.62-0.92 of the reciprocal's time on upwind31 at 256x256x60, either way on
//! upwind51), its divider working beside the floating-point pipes that the reciprocal's
//! operations load. So `learn` times [`DIVISION_KERNELS`], kernels of its own that divide by
//! literals, built both ways with the flags chosen before
//! ([`crate::flags::time_builds`]: [`DIVISION_ROUNDS`] rounds, each running both builds of a
//! kernel one after the other, every other round in reverse order, every run verified), and
//! writes `compiler.division: divide` when the division is faster with 95% confidence over the
//! rounds ([`crate::flags::choose`]); else the reciprocal, the default, stays.

use absinthe_codegen::compile::Toolchain;
use absinthe_model::formats::learned::DivisionCalibration;
use absinthe_model::formats::machine::{Division, Machine};

use crate::flags::{choose, time_builds};
use crate::stats::geometric_mean;
use crate::{LearnError, LearnOptions, Progress};

/// Rounds of the choice, each timing every kernel once per form.
pub const DIVISION_ROUNDS: usize = 12;

/// The kernels timed: learn_divide, every stencil of which divides by a literal (two of them
/// inside selections). None is a program results are reported on.
pub const DIVISION_KERNELS: [(&str, &str); 1] = [(
    "learn_divide",
    include_str!("../programs/learn_divide.yaml"),
)];

/// The forms compared, the default first (the base a form must beat).
pub const FORMS: [Division; 2] = [Division::Reciprocal, Division::Divide];

/// What the choice measured, and the form chosen.
#[derive(Clone, Debug)]
pub struct DivisionChoice {
    pub kernels: Vec<String>,
    /// Per form of [`FORMS`], the geometric mean of the kernels' fastest medians, in seconds.
    pub seconds: Vec<f64>,
    /// Per round, the division's time over the reciprocal's (the geometric mean over the
    /// kernels).
    pub ratios: Vec<f64>,
    pub chosen: Division,
}

impl DivisionChoice {
    pub fn record(&self) -> DivisionCalibration {
        DivisionCalibration {
            kernels: self.kernels.clone(),
            reciprocal_seconds: self.seconds[0],
            divide_seconds: self.seconds[1],
            ratios: self.ratios.clone(),
        }
    }
}

/// Times [`DIVISION_KERNELS`] built by `toolchain` (the compiler and flags chosen) dividing each
/// way of [`FORMS`], on `machine` as [`time_builds`] does, in `rounds` rounds (at least two).
/// None when no kernel has a feasible optimum on `machine` (nothing to time).
pub fn choose_division(
    toolchain: &Toolchain,
    machine: &Machine,
    options: &LearnOptions,
    rounds: usize,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Option<DivisionChoice>, LearnError> {
    let builds: Vec<Toolchain> = FORMS
        .iter()
        .map(|&form| toolchain.clone().dividing(form).fused_multiply_add())
        .collect();
    let timed = time_builds(
        &DIVISION_KERNELS,
        machine,
        &builds,
        options,
        rounds,
        progress,
    )?;
    if timed.kernels.is_empty() {
        return Ok(None);
    }
    if let Some((_, error)) = timed.refused.first() {
        return Err(LearnError::Run(format!(
            "building the division kernels to divide: {error}"
        )));
    }
    let seconds: Vec<f64> = timed
        .times
        .iter()
        .map(|t| t.as_deref().and_then(geometric_mean).unwrap_or(f64::NAN))
        .collect();
    if seconds.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
        return Err(LearnError::Run(format!(
            "the division kernels' times are not positive: {seconds:?}"
        )));
    }
    let ratios = timed.ratios.get(1).cloned().flatten().unwrap_or_default();
    let chosen = FORMS[choose(&timed.ratios)];
    Ok(Some(DivisionChoice {
        kernels: timed.kernels,
        seconds,
        ratios,
        chosen,
    }))
}
