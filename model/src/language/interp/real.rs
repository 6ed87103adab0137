//! The arithmetic of one value type (`Real`, for `f64` and `f32`) and the spacing of its
//! values (`ulp`).

use std::fmt::Debug;
use std::ops::{Add, Div, Mul, Neg, Sub};

/// The arithmetic of one value type.
pub(super) trait Real:
    Copy
    + Debug
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    const ZERO: Self;
    const ONE: Self;
    /// The largest finite value, as f64.
    const MAX: f64;
    /// Explicit significand bits (52, 23).
    const FRACTION_BITS: i32;
    /// Exponent of the smallest normal value (-1022, -126).
    const MIN_EXPONENT: i32;
    /// Round to nearest.
    fn from_f64(x: f64) -> Self;
    /// A literal as written, rounded once to this type.
    fn literal(text: &str) -> Option<Self>;
    fn to_f64(self) -> f64;
    fn sqrt(self) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn pow(self, y: Self) -> Self;
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    fn abs(self) -> Self;
}

/// The library functions of [`Real`] for a primitive float type: the type's own methods.
macro_rules! real_math {
    ($t:ty) => {
        fn sqrt(self) -> $t {
            <$t>::sqrt(self)
        }
        fn exp(self) -> $t {
            <$t>::exp(self)
        }
        fn ln(self) -> $t {
            <$t>::ln(self)
        }
        fn pow(self, y: $t) -> $t {
            <$t>::powf(self, y)
        }
        fn floor(self) -> $t {
            <$t>::floor(self)
        }
        fn ceil(self) -> $t {
            <$t>::ceil(self)
        }
        fn abs(self) -> $t {
            <$t>::abs(self)
        }
    };
}

impl Real for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    const MAX: f64 = f64::MAX;
    const FRACTION_BITS: i32 = 52;
    const MIN_EXPONENT: i32 = -1022;
    fn from_f64(x: f64) -> f64 {
        x
    }
    fn literal(text: &str) -> Option<f64> {
        text.parse().ok()
    }
    fn to_f64(self) -> f64 {
        self
    }
    real_math!(f64);
}

impl Real for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    const MAX: f64 = f32::MAX as f64;
    const FRACTION_BITS: i32 = 23;
    const MIN_EXPONENT: i32 = -126;
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
    fn literal(text: &str) -> Option<f32> {
        // Parsed as f32 directly: going through f64 would round twice.
        text.parse().ok()
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    real_math!(f32);
}

/// `2^e` for `-1074 <= e <= 1023`, exactly.
fn pow2(e: i32) -> f64 {
    if e >= -1022 {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (e + 1074).max(0))
    }
}

/// `x > 0` (false for NaN).
pub(super) fn positive(x: f64) -> bool {
    x > 0.0
}

/// The spacing of `T` among values of magnitude at most `m` (the largest ulp there).
pub(super) fn ulp<T: Real>(m: f64) -> f64 {
    let smallest = pow2(T::MIN_EXPONENT - T::FRACTION_BITS);
    if m.is_nan() || m < pow2(T::MIN_EXPONENT) {
        return smallest;
    }
    let exponent = ((m.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    pow2(exponent - T::FRACTION_BITS).max(smallest)
}
