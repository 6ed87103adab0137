//! A value with its bound (`Tracked`), how an operation's result gets its bound (`settle`,
//! `settle_libm`), and the interval the other implementation's value lies in (`Range`).

use super::real::{ulp, Real};

/// Relative slack for magnitudes derived from a computed value (covers the half ulp of `T`
/// and a few libm ulps).
pub(super) const MAGNITUDE_SLACK: f64 = 1.0 + 1.0 / (1u64 << 20) as f64;
/// Relative slack for bounds computed in f64 arithmetic.
pub(super) const BOUND_SLACK: f64 = 1.0 + 1.0 / (1u64 << 40) as f64;

/// A value and its bound.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tracked<T> {
    pub(super) v: T,
    pub(super) e: f64,
}

impl<T: Real> Tracked<T> {
    pub(super) fn exact(v: T) -> Self {
        Tracked { v, e: 0.0 }
    }

    pub(super) fn unknown(v: T) -> Self {
        Tracked {
            v,
            e: f64::INFINITY,
        }
    }

    pub(super) fn is_nan_exactly(&self) -> bool {
        self.e == 0.0 && self.v.to_f64().is_nan()
    }

    /// The interval the other implementation's value lies in.
    pub(super) fn range(&self) -> Range {
        let x = self.v.to_f64();
        if self.e == 0.0 {
            Range::Point(x)
        } else if self.e.is_finite() && x.is_finite() {
            Range::Span((x - self.e).next_down(), (x + self.e).next_up())
        } else {
            Range::Unknown
        }
    }
}

/// A result `r` of `T` whose exact counterpart in the other implementation is within `d` of
/// the exact operation on our operands; `rounded` when the operation rounds its result (then
/// the two roundings may differ by one more ulp).
pub(super) fn settle<T: Real>(r: T, d: f64, rounded: bool) -> Tracked<T> {
    if d == 0.0 {
        return Tracked::exact(r);
    }
    let x = r.to_f64();
    if !(d.is_finite() && x.is_finite()) {
        return Tracked::unknown(r);
    }
    let m = (x.abs() + d) * MAGNITUDE_SLACK;
    if m >= T::MAX {
        return Tracked::unknown(r);
    }
    let e = if rounded { d + ulp::<T>(m) } else { d };
    Tracked {
        v: r,
        e: e * BOUND_SLACK,
    }
}

/// A libm result `r` that differs from the mathematical function at our operand by at most
/// `ulps` ulps, as does the other implementation's at its operand, which is within `prop` of
/// ours after the mathematical function.
pub(super) fn settle_libm<T: Real>(r: T, prop: f64, ulps: f64) -> Tracked<T> {
    let x = r.to_f64();
    if !(prop.is_finite() && x.is_finite()) {
        return Tracked::unknown(r);
    }
    let m = (x.abs() + prop) * MAGNITUDE_SLACK;
    if m >= T::MAX {
        return Tracked::unknown(r);
    }
    Tracked {
        v: r,
        e: (prop + 2.0 * ulps * ulp::<T>(m)) * BOUND_SLACK,
    }
}

/// Whether a result whose natural logarithm is `ln` overflows in `T` in every implementation
/// within a few ulps (C Annex F: an overflow gives infinity when rounding to nearest).
pub(super) fn certain_overflow<T: Real>(ln: f64) -> bool {
    ln > T::MAX.ln() * (1.0 + 1e-6)
}

/// What the other implementation's value may be: exactly ours, in a finite interval, or
/// anything.
#[derive(Clone, Copy, Debug)]
pub(super) enum Range {
    Point(f64),
    Span(f64, f64),
    Unknown,
}

impl Range {
    pub(super) fn ends(self) -> Option<(f64, f64)> {
        match self {
            Range::Point(x) => Some((x, x)),
            Range::Span(lo, hi) => Some((lo, hi)),
            Range::Unknown => None,
        }
    }
}
