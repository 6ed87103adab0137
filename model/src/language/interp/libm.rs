//! `exp`, `log` and `pow`: the platform library's results, with the special cases of ISO C
//! Annex F exact, and otherwise a bound of `ulps` ulps for each library plus what the operands'
//! bounds propagate.

use super::real::{positive, Real};
use super::tracked::{certain_overflow, settle_libm, Range, Tracked, BOUND_SLACK, MAGNITUDE_SLACK};

/// `exp(a)`, within `ulps` ulps.
pub(super) fn exp<T: Real>(a: Tracked<T>, ulps: f64) -> Tracked<T> {
    let x = a.v.to_f64();
    let r = a.v.exp();
    let y = r.to_f64();
    if a.e == 0.0 {
        if !x.is_finite() || certain_overflow::<T>(x) {
            // exp(±inf) = inf, +0; exp(NaN) = NaN; far beyond the largest value, inf.
            return Tracked::exact(r);
        }
        return settle_libm(r, 0.0, ulps);
    }
    if let Range::Span(lo, _) = a.range() {
        if certain_overflow::<T>(lo) {
            return Tracked::exact(r);
        }
    }
    // |e^a' - e^a| <= e^a (e^ea - 1), and e^a <= |r| (1 + slack).
    settle_libm(
        r,
        y.abs() * MAGNITUDE_SLACK * a.e.exp_m1() * BOUND_SLACK,
        ulps,
    )
}

/// `log(a)`, within `ulps` ulps.
pub(super) fn log<T: Real>(a: Tracked<T>, ulps: f64) -> Tracked<T> {
    let x = a.v.to_f64();
    let r = a.v.ln();
    if a.e == 0.0 {
        if x.is_nan() || x <= 0.0 || x == f64::INFINITY {
            // Annex F: NaN below 0, -inf at ±0 (the pole), +inf at +inf.
            return Tracked::exact(r);
        }
        return settle_libm(r, 0.0, ulps);
    }
    let Range::Span(lo, _) = a.range() else {
        return Tracked::unknown(r);
    };
    if !positive(lo) {
        return Tracked::unknown(r);
    }
    // |ln a' - ln a| <= ln(a / lo) = -ln(1 - (a - lo) / a).
    settle_libm(r, -(-(x - lo) / x).ln_1p() * BOUND_SLACK, ulps)
}

/// `pow(a, b)`, within `ulps` ulps.
pub(super) fn pow<T: Real>(a: Tracked<T>, b: Tracked<T>, ulps: f64) -> Tracked<T> {
    let r = a.v.pow(b.v);
    let y = b.v.to_f64();
    if a.e == 0.0 && b.e == 0.0 {
        return pow_of_exact(a, b, r, ulps);
    }
    if b.e == 0.0 && y == y.trunc() && y.abs() <= 1e6 {
        return integral_power(a, y, r, ulps);
    }
    general_power(a, b, r, ulps)
}

/// `r = pow(a, b)` for exact operands: Annex F's special cases exact, else a libm result.
fn pow_of_exact<T: Real>(a: Tracked<T>, b: Tracked<T>, r: T, ulps: f64) -> Tracked<T> {
    let (x, y, z) = (a.v.to_f64(), b.v.to_f64(), r.to_f64());
    if z.is_nan() {
        // Annex F: NaN only for a NaN operand (the exceptions give 1) or a
        // negative finite base with a non-integral finite exponent.
        return Tracked::exact(r);
    }
    if z.is_infinite() && (!x.is_finite() || !y.is_finite() || (x == 0.0 && y < 0.0)) {
        // Annex F: infinite operands, or the pole at a zero base.
        return Tracked::exact(r);
    }
    if z == 1.0 && (y == 0.0 || x == 1.0) {
        return Tracked::exact(r); // pow(x, ±0) = pow(1, y) = 1
    }
    if z.is_infinite() && certain_overflow::<T>(y * x.abs().ln()) {
        return Tracked::exact(r); // |pow(x, y)| = e^(y ln|x|), far beyond
    }
    settle_libm(r, 0.0, ulps)
}

/// `r = pow(a, n)` for an exact integral exponent `n`: pow(x, 0) = 1 for every x, and
/// otherwise |a'^n - a^n| <= |n| max|ξ^(n-1)| |a' - a| over ξ between a and a'.
fn integral_power<T: Real>(a: Tracked<T>, y: f64, r: T, ulps: f64) -> Tracked<T> {
    let x = a.v.to_f64();
    if y == 0.0 {
        return Tracked::exact(r);
    }
    let Some((lo, hi)) = a.range().ends().filter(|_| x.is_finite()) else {
        return Tracked::unknown(r);
    };
    let big = lo.abs().max(hi.abs());
    let slope = if y >= 1.0 {
        big.powf(y - 1.0)
    } else if lo > 0.0 || hi < 0.0 {
        lo.abs().min(hi.abs()).powf(y - 1.0)
    } else {
        return Tracked::unknown(r);
    };
    settle_libm(
        r,
        y.abs() * slope * MAGNITUDE_SLACK * a.e * BOUND_SLACK,
        ulps,
    )
}

/// `r = pow(a, b) = e^(b ln a)` for `a > 0`.
fn general_power<T: Real>(a: Tracked<T>, b: Tracked<T>, r: T, ulps: f64) -> Tracked<T> {
    let (x, y, z) = (a.v.to_f64(), b.v.to_f64(), r.to_f64());
    let (Range::Span(lo, _) | Range::Point(lo)) = a.range() else {
        return Tracked::unknown(r);
    };
    if !(lo > 0.0 && x.is_finite() && y.is_finite() && b.e.is_finite()) {
        return Tracked::unknown(r);
    }
    let l = x.ln();
    let el = if a.e == 0.0 {
        0.0
    } else {
        -(-(x - lo) / x).ln_1p() * BOUND_SLACK
    };
    let ey = (y.abs() * el + l.abs() * b.e + el * b.e) * BOUND_SLACK;
    settle_libm(
        r,
        z.abs() * MAGNITUDE_SLACK * ey.exp_m1() * BOUND_SLACK,
        ulps,
    )
}
