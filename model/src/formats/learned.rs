//! The `learned:` section of a machine file: the provenance `absinthe learn` writes (when, where,
//! the fits' quality, how the caches were flushed, the calibrations and the refit) and the form
//! of the model its parameters were fitted for.

use serde::{Deserialize, Serialize};

use crate::formats::model_kind::ModelKind;

/// R² of the two fits.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitQuality {
    pub fast: f64,
    pub slow: f64,
}

/// How `learn` emptied the caches before each timed run (`learned.flush`): `evict` (every
/// cache line of the arrays evicted) or `read BYTES` (a buffer of that size read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushKind {
    Evict,
    Read(u64),
}

impl std::fmt::Display for FlushKind {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            FlushKind::Evict => f.write_str("evict"),
            FlushKind::Read(bytes) => write!(f, "read {bytes}"),
        }
    }
}

impl std::str::FromStr for FlushKind {
    type Err = String;
    fn from_str(s: &str) -> Result<FlushKind, String> {
        let bad = || format!("`{s}` is not `evict` or `read BYTES`");
        match s.split_whitespace().collect::<Vec<_>>()[..] {
            ["evict"] => Ok(FlushKind::Evict),
            ["read", bytes] => bytes.parse().map(FlushKind::Read).map_err(|_| bad()),
            _ => Err(bad()),
        }
    }
}

impl Serialize for FlushKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FlushKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<FlushKind, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Provenance written by `absinthe learn`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Learned {
    pub at: String,
    pub host: String,
    pub samples: u64,
    pub r2: FitQuality,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_seconds: Option<f64>,
    /// How the caches were emptied before each timed run of the slow family and the kernels:
    /// `evict`, or `read BYTES` (files without it were learned with a read of 1.25 x the
    /// last-level cache). `bench` and `tune` warn when they time another way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush: Option<FlushKind>,
    /// How `learn` chose `cache_fraction`, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_calibration: Option<CacheCalibration>,
    /// How `learn` chose `group_arrays`, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_arrays_calibration: Option<GroupArraysCalibration>,
    /// How `learn` chose `params.crowded.row_streams`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crowding_calibration: Option<CrowdingCalibration>,
    /// The refit to real kernels after the synthetic fit, when `learn` ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_refit: Option<KernelRefit>,
    /// How `learn` chose `compiler.flags`, when the file lists candidates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flag_calibration: Option<FlagCalibration>,
    /// How `learn` chose `compiler.division`, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub division_calibration: Option<DivisionCalibration>,
    /// The form of the model the parameters were fitted for (`learn --model`; absent:
    /// `linear`). Commands price with it unless `--model` says otherwise.
    #[serde(default, skip_serializing_if = "ModelKind::is_default")]
    pub model: ModelKind,
}

/// The refit of the parameters to the training programs and real kernels together
/// (`learn::kernels`): the kernels and how many of their variants were timed, the kernel
/// rows' weight, the alternations run, and the share of kernel variants predicted within 20%
/// (and the Spearman correlation over them) by the synthetic fit alone and by the refit. `r2`
/// above is the refit's, on the synthetic samples; `r2_synthetic_fit` the synthetic fit's own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelRefit {
    pub programs: Vec<String>,
    pub variants: u64,
    pub weight: f64,
    pub rounds: u64,
    pub within_20_before: f64,
    pub within_20_after: f64,
    pub spearman_before: f64,
    pub spearman_after: f64,
    pub r2_synthetic_fit: FitQuality,
}

/// The fits behind a learned crowding limit (`Params::crowded`): for each row-stream limit
/// tried (0: no crowding charge), the slow family's sum of absolute deviations in seconds and
/// its R². `learn` keeps the limit of the smallest deviation, the criterion the fit itself
/// minimises.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrowdingCalibration {
    pub limits: Vec<u64>,
    pub deviations: Vec<f64>,
    pub r2_slow: Vec<f64>,
}

/// The measurements behind a learned `group_arrays`: for each limit tried (None: no limit), the
/// time of the model's optima of the calibration programs under it (in seconds: the geometric
/// mean of `rounds`; absent where the model found no feasible configuration), and per round the
/// geometric mean of their medians in that round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupArraysCalibration {
    pub limits: Vec<Option<usize>>,
    pub seconds: Vec<Option<f64>>,
    /// Per limit, per round: the geometric mean of the optima's medians in that round, from
    /// which the choice is made (`learn::calibrate::choose_limit`; absent where infeasible).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<Option<Vec<f64>>>,
}

/// The measurements behind a learned `cache_fraction`: for each fraction tried, the time of the
/// model's optima of the calibration programs at that fraction (in seconds: the geometric mean of
/// `rounds`; absent where the model found no feasible configuration), and per round the
/// geometric mean of their medians in that round, from which the choice is made
/// (`learn::calibrate::choose`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheCalibration {
    pub fractions: Vec<f64>,
    pub seconds: Vec<Option<f64>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<Option<Vec<f64>>>,
}

/// The measurements behind learned `compiler.flags`: each flag set tried (the base flags first,
/// then each candidate added to them), the time of learn's kernels built with it (the
/// geometric mean of their fastest medians, in seconds; absent where the compiler refused the
/// flags) and, per round, its kernels' times over the base flags' in the same round (the
/// geometric mean of the ratios), from which the choice is made (`learn::flags::choose`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlagCalibration {
    pub flags: Vec<Vec<String>>,
    pub seconds: Vec<Option<f64>>,
    #[serde(default)]
    pub ratios: Vec<Option<Vec<f64>>>,
}

/// The measurements behind a learned `compiler.division`: the kernels timed, the geometric mean
/// of their fastest medians built to divide by literals through the reciprocal and with a
/// division, in seconds, and per round the division's time over the reciprocal's (the geometric
/// mean over the kernels), from which the choice is made (`learn::division`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DivisionCalibration {
    pub kernels: Vec<String>,
    pub reciprocal_seconds: f64,
    pub divide_seconds: f64,
    pub ratios: Vec<f64>,
}
