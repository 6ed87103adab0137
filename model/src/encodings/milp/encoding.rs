//! A MILP of either encoding (`Encoded`), and the machines the digits encoding refuses.

use crate::cost_model::evaluate::Configuration;
use crate::encodings::lp::Milp;
use crate::formats::machine::ModelMachine;
use crate::language::analysis::Analysis;

use super::{milp, AbsintheMilp, Encoding, MilpOptions};

/// Why the digits MILP and the SMT encodings refuse a GPU machine: their cache rows count arrays
/// times tile cells (the CPU test), while on a GPU the model counts the tile buffers a thread
/// block keeps in shared memory, halos and rolling windows included
/// (`evaluate::GroupShape::shared_values`), a test only the range table evaluates exactly.
pub const GPU_DIGITS_UNSUPPORTED: &str = "the digits MILP and the SMT encodings model a CPU cache, not the shared memory of a GPU thread block; on a GPU machine use the ranges encoding (the default) or --solver dp, which evaluate the GPU model exactly";

/// `Err` with [`GPU_DIGITS_UNSUPPORTED`] when `machine` is a GPU: for the commands that need the
/// digits MILP or an SMT encoding.
pub fn digits_supported(machine: &ModelMachine) -> Result<(), &'static str> {
    if machine.gpu {
        Err(GPU_DIGITS_UNSUPPORTED)
    } else {
        Ok(())
    }
}

/// Why the digits MILP refuses a program with a sweep (`computation: forward` or `backward`):
/// its objective disagrees with the model's there (cosmo_vadv_implicit: 0.4% below `evaluate`
/// at the optimum), which its check of every solution reports as a bug. The range table and the
/// DP evaluate such programs exactly.
pub const SWEEP_DIGITS_UNSUPPORTED: &str = "the digits MILP does not encode programs with sweeps (computation: forward or backward); use the ranges encoding (the default) or --solver dp, which evaluate them exactly";

/// `Err` with [`SWEEP_DIGITS_UNSUPPORTED`] when `analysis` has a sweep: for the commands that
/// build the digits MILP.
pub fn digits_encodes(analysis: &Analysis) -> Result<(), &'static str> {
    if analysis.stencils.iter().any(|s| s.computation.is_sweep()) {
        Err(SWEEP_DIGITS_UNSUPPORTED)
    } else {
        Ok(())
    }
}

/// Whether the digits MILP can be built for `analysis` on `machine`: [`digits_supported`], then
/// [`digits_encodes`].
pub fn digits_admits(analysis: &Analysis, machine: &ModelMachine) -> Result<(), &'static str> {
    digits_supported(machine)?;
    digits_encodes(analysis)
}

/// A MILP of either encoding, with what is needed to read a configuration back.
#[derive(Clone, Debug)]
pub enum Encoded {
    Digits(AbsintheMilp),
    Ranges(crate::encodings::ranges::RangeMilp),
}

impl Encoded {
    /// Builds the MILP of `options.encoding`.
    pub fn build(analysis: &Analysis, machine: &ModelMachine, options: &MilpOptions) -> Encoded {
        match options.encoding {
            Encoding::Digits => Encoded::Digits(milp(analysis, machine, options)),
            Encoding::Ranges => Encoded::Ranges(crate::encodings::ranges::range_milp(
                analysis, machine, options,
            )),
        }
    }

    pub fn milp(&self) -> &Milp {
        match self {
            Encoded::Digits(m) => &m.milp,
            Encoded::Ranges(m) => &m.milp,
        }
    }

    pub fn decode(&self, values: &[f64]) -> Configuration {
        match self {
            Encoded::Digits(m) => m.decode(values),
            Encoded::Ranges(m) => m.decode(values),
        }
    }

    pub fn fixed_to(&self, config: &Configuration) -> Milp {
        match self {
            Encoded::Digits(m) => m.fixed_to(config),
            Encoded::Ranges(m) => m.fixed_to(config),
        }
    }
}
