//! How a stencil's levels are computed: GT4Py's `computation(PARALLEL | FORWARD | BACKWARD)`
//! and `interval(start, end)` (docs/MODEL.md, "Sweeps and intervals"), and the check that a
//! stencil's intervals cover the domain's levels.

use serde::{Deserialize, Serialize};

use crate::formats::diagnostic::Diagnostic;
use crate::formats::limits;
use crate::language::program::Body;

/// GT4Py's `computation(...)`: how a stencil's levels are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Computation {
    /// Every level independently (the default).
    #[default]
    Parallel,
    /// Level by level from the bottom: the stencil may read its own values at `k-1`, `k-2`, ...
    Forward,
    /// Level by level from the top: the stencil may read its own values at `k+1`, `k+2`, ...
    Backward,
}

impl Computation {
    pub fn name(self) -> &'static str {
        match self {
            Computation::Parallel => "parallel",
            Computation::Forward => "forward",
            Computation::Backward => "backward",
        }
    }

    /// A sweep: the levels are computed in order (forward or backward).
    pub fn is_sweep(self) -> bool {
        self != Computation::Parallel
    }
}

/// The levels of one interval, GT4Py's `interval(start, end)`: counted from the bottom, a
/// negative value from the top, `end` None for the top.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Levels {
    pub start: i64,
    pub end: Option<i64>,
}

impl Levels {
    /// The levels `[start, end)` in a domain of `nz` levels (possibly empty or out of range:
    /// the program reader refuses those).
    pub fn resolve(self, nz: usize) -> (i64, i64) {
        let at = |v: i64| if v < 0 { nz as i64 + v } else { v };
        (at(self.start), self.end.map_or(nz as i64, at))
    }
}

/// The intervals of the stencil at `base` cover the domain's `nz` levels, each non-empty,
/// without overlap: at most [`limits::MAX_INTERVALS`].
pub(crate) fn check_intervals(
    base: &str,
    bodies: &[Body],
    nz: usize,
    errors: &mut Vec<Diagnostic>,
) {
    if bodies.is_empty() || bodies.len() > limits::MAX_INTERVALS {
        errors.push(Diagnostic::new(
            format!("{base}.intervals"),
            format!(
                "a stencil has 1 to {} intervals, found {}",
                limits::MAX_INTERVALS,
                bodies.len()
            ),
        ));
        return;
    }
    let mut ranges = Vec::new();
    for (m, b) in bodies.iter().enumerate() {
        let levels = b.levels.expect("an interval's body has levels");
        let (lo, hi) = levels.resolve(nz);
        let written = format!(
            "[{}, {}]",
            levels.start,
            levels.end.map_or("null".to_string(), |e| e.to_string())
        );
        let why = if lo < 0 || hi > nz as i64 {
            Some(format!("the domain's levels are 0..{nz}"))
        } else if lo >= hi {
            Some("an interval must hold at least one level".to_string())
        } else {
            None
        };
        if let Some(why) = why {
            errors.push(Diagnostic::new(
                format!("{base}.intervals[{m}].k"),
                format!("interval {written} is levels [{lo}, {hi}) of the domain's {nz}: {why}"),
            ));
            return;
        }
        ranges.push((lo, hi, m));
    }
    ranges.sort_unstable();
    let mut next = 0;
    for &(lo, hi, m) in &ranges {
        if lo != next {
            let why = if lo > next {
                format!("levels [{next}, {lo}) are in no interval")
            } else {
                format!("it overlaps an earlier interval at levels [{lo}, {next})")
            };
            errors.push(Diagnostic::new(
                format!("{base}.intervals[{m}].k"),
                format!("the intervals must cover the domain's {nz} levels without overlap: {why}"),
            ));
            return;
        }
        next = hi;
    }
    if next != nz as i64 {
        errors.push(Diagnostic::new(
            format!("{base}.intervals"),
            format!(
                "the intervals must cover the domain's {nz} levels without overlap: levels [{next}, {nz}) are in no interval"
            ),
        ));
    }
}
