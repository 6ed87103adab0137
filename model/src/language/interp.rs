//! An interpreter of stencil programs: the reference semantics (docs/MODEL.md, "Program file")
//! computed in Rust, straight from the expression trees, with no C printing involved. It is the
//! independent reference the generated code is checked against (`tests/reference.rs`): a wrong
//! translation of an expression into C would pass the harness's own bit-for-bit check, whose
//! reference is printed by the same C printer, but not this one.
//!
//! # Semantics
//! What docs/MODEL.md states, and where it is silent, what is written here:
//! - Every array holds values of the program's type. For `type: float` every operation is done
//!   in `f32` and rounded after each operation (as C does on machines that evaluate float
//!   arithmetic in float, `FLT_EVAL_METHOD == 0`); for `double` in `f64`.
//! - A literal is the decimal number it is written as, rounded once to the program's type.
//! - `+ - * /` and `sqrt` are the IEEE-754 operations (correctly rounded); unary `-` flips the
//!   sign; `abs` and `fabs` are the floating-point absolute value; `floor` and `ceil` round to
//!   an integral value.
//! - Comparisons, `&&`, `||` and `!` yield 1 or 0 in the program's type. A value is true when
//!   it is not equal to 0 (so NaN is true). `c ? a : b` is `a` when `c` is true, else `b`.
//! - `min(a, b)` is `a < b ? a : b` and `max(a, b)` is `a > b ? a : b` (so `min(NaN, b)` is
//!   `b`, `min(a, NaN)` is NaN, `min(-0, +0)` is `+0`).
//! - `exp`, `log` and `pow` are the C library's functions, with the special cases of ISO C
//!   Annex F. Their results are not correctly rounded and differ between libraries, so the
//!   interpreter calls the platform's (through Rust's `std`) and tracks how far a conforming
//!   implementation may be from it (below).
//! - Inputs hold values on domain plus halo. Each stencil is evaluated, in program order, on
//!   the domain grown by its analysis extent ([`StencilInfo::extent`]); its `let` locals are
//!   evaluated in order before its expression.
//!
//! # Bounds
//! Next to every value the interpreter carries a bound on |C − interpreted|, where C is what
//! any implementation computes that performs the IEEE operations above exactly and whose `exp`,
//! `log` and `pow` are within [`LibmAccuracy`] ulps of the mathematical result (and so are the
//! platform's, which the interpreter calls). A value that no libm result flows into has bound
//! 0: it must match bit for bit. A libm result gets 2·U ulps (both libraries' errors), and
//! later operations propagate bounds with their exact error formulas plus one rounding
//! (interval reasoning, outward-rounded). Where a comparison, a truth test or a `min`/`max`
//! choice cannot be decided within the bounds the result may be either: comparisons get
//! bound 1 (0 against 1), conditionals the distance between their branches. A bound is
//! infinite (the element cannot be checked) where a conforming implementation might produce a
//! non-finite value, e.g. a division by an interval containing 0 or an overflow.
//!
//! [`StencilInfo::extent`]: crate::analysis::StencilInfo::extent

use std::collections::HashMap;
use std::fmt::Debug;
use std::ops::{Add, Div, Mul, Neg, Sub};

use crate::analysis::{Analysis, ArrayId, ArrayKind};
use crate::expr::{BinaryOp, Expr, Func, UnaryOp};
use crate::program::{Program, ValueType};

/// The input values the generated harness uses (`absinthe_value` in `harness_body.j2`), bit
/// for bit: a SplitMix64-style hash of the array id and the element's indices (relative to the
/// domain origin, negative in the halo) mapped to `[0.5, 1.5)`. The harness converts it to the
/// program's type (round to nearest), as [`interpret`] does.
pub fn absinthe_value(array: u64, i: i64, j: i64, k: i64) -> f64 {
    let mut z = array.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z ^= (i.wrapping_add(4096) as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^= (j.wrapping_add(4096) as u64).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= (k.wrapping_add(4096) as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    // 2^-53, exactly; (z >> 11) < 2^53 converts exactly.
    0.5 + (z >> 11) as f64 * f64::from_bits(((1023 - 53) as u64) << 52)
}

/// The inputs of the generated harness: `absinthe_value(array id, i, j, k)`.
pub fn harness_inputs(array: ArrayId, at: [i64; 3]) -> f64 {
    absinthe_value(array as u64, at[0], at[1], at[2])
}

/// How far (in ulps of the result's type, at the result's magnitude) a library's `exp`, `log`
/// and `pow` may be from the mathematical result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LibmAccuracy {
    pub exp_ulps: f64,
    pub log_ulps: f64,
    pub pow_ulps: f64,
}

impl LibmAccuracy {
    /// glibc 2.28 and later (the OpenMP kernels and the CUDA host emulation, and Rust's `std`
    /// on Linux, which calls the same library): the routines documented in glibc's sources
    /// (`sysdeps/ieee754/dbl-64/e_exp.c`, `e_log.c`, `e_pow.c`, `flt-32/e_expf.c`, `e_logf.c`,
    /// `e_powf.c`) have worst-case errors of 0.51, 0.52, 0.52 ulp (double) and 0.502, 0.82,
    /// 0.82 ulp (float); before 2.28 the double ones were correctly rounded. 1 ulp covers all.
    pub fn glibc() -> LibmAccuracy {
        LibmAccuracy {
            exp_ulps: 1.0,
            log_ulps: 1.0,
            pow_ulps: 1.0,
        }
    }

    /// CUDA's device library (CUDA C++ Programming Guide, "Mathematical Functions", maximum
    /// ulp error over the full range): `exp` 1, `log` 1, `pow` 2 (double); `expf` 2, `logf` 1,
    /// `powf` 4 (float). The larger of the two per function, for a kernel on a GPU.
    pub fn cuda() -> LibmAccuracy {
        LibmAccuracy {
            exp_ulps: 2.0,
            log_ulps: 1.0,
            pow_ulps: 4.0,
        }
    }
}

/// One output array over the domain.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputValues {
    /// The stencil's index in the program.
    pub stencil: usize,
    pub name: String,
    /// Values over the domain, `i` fastest, then `j`, then `k`: element `(i, j, k)` at
    /// `i + j * nx + k * nx * ny`. Float values are widened to `f64` (exactly).
    pub values: Vec<f64>,
    /// Per element, the bound on |C − interpreted| (module docs): 0 where the element must
    /// match bit for bit, infinite where it cannot be checked.
    pub bounds: Vec<f64>,
}

/// What [`interpret`] computes: the program's outputs, in program order.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    pub value_type: ValueType,
    pub domain: [usize; 3],
    pub outputs: Vec<OutputValues>,
}

/// An interpreter failure: a program the analysis should have rejected (a bug if it happens).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("interpreter: {0}")]
pub struct InterpError(pub String);

/// Runs `program` on inputs `input(array id, [i, j, k])` (indices relative to the domain
/// origin, halo included; converted to the program's type by rounding to nearest) and returns
/// its outputs over the domain with their bounds under `accuracy`.
pub fn interpret(
    program: &Program,
    analysis: &Analysis,
    input: &dyn Fn(ArrayId, [i64; 3]) -> f64,
    accuracy: &LibmAccuracy,
) -> Result<Evaluation, InterpError> {
    match program.value_type {
        ValueType::Double => run::<f64>(program, analysis, input, accuracy),
        ValueType::Float => run::<f32>(program, analysis, input, accuracy),
    }
}

/// How a generated value compares with the interpreted one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agreement {
    /// Bound 0 and the same bits (any NaN matches any NaN: the language does not define NaN
    /// payloads or signs, and compilers may swap the operands of `+` and `*`).
    Exact,
    /// Finite bound, and |got − expected| within it.
    WithinBound,
    /// Infinite bound: not checked.
    Unchecked,
    /// Neither: the generated code is wrong (or the interpreter is).
    Mismatch,
}

/// Compares a value `got` from generated code with the interpreted `expected` and its `bound`
/// (both as `f64`; float values widened, which keeps their bits distinct).
pub fn agreement(got: f64, expected: f64, bound: f64) -> Agreement {
    if bound == 0.0 {
        if got.to_bits() == expected.to_bits() || (got.is_nan() && expected.is_nan()) {
            Agreement::Exact
        } else {
            Agreement::Mismatch
        }
    } else if bound.is_finite() {
        if (got - expected).abs() <= bound {
            Agreement::WithinBound
        } else {
            Agreement::Mismatch
        }
    } else {
        Agreement::Unchecked
    }
}

/// The arithmetic of one value type.
trait Real:
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
fn positive(x: f64) -> bool {
    x > 0.0
}

/// The spacing of `T` among values of magnitude at most `m` (the largest ulp there).
fn ulp<T: Real>(m: f64) -> f64 {
    let smallest = pow2(T::MIN_EXPONENT - T::FRACTION_BITS);
    if m.is_nan() || m < pow2(T::MIN_EXPONENT) {
        return smallest;
    }
    let exponent = ((m.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    pow2(exponent - T::FRACTION_BITS).max(smallest)
}

/// Relative slack for magnitudes derived from a computed value (covers the half ulp of `T`
/// and a few libm ulps).
const MAGNITUDE_SLACK: f64 = 1.0 + 1.0 / (1u64 << 20) as f64;
/// Relative slack for bounds computed in f64 arithmetic.
const BOUND_SLACK: f64 = 1.0 + 1.0 / (1u64 << 40) as f64;

/// A value and its bound.
#[derive(Clone, Copy, Debug)]
struct Tracked<T> {
    v: T,
    e: f64,
}

impl<T: Real> Tracked<T> {
    fn exact(v: T) -> Self {
        Tracked { v, e: 0.0 }
    }

    fn unknown(v: T) -> Self {
        Tracked {
            v,
            e: f64::INFINITY,
        }
    }

    fn is_nan_exactly(&self) -> bool {
        self.e == 0.0 && self.v.to_f64().is_nan()
    }

    /// The interval the other implementation's value lies in.
    fn range(&self) -> Range {
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
fn settle<T: Real>(r: T, d: f64, rounded: bool) -> Tracked<T> {
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
fn settle_libm<T: Real>(r: T, prop: f64, ulps: f64) -> Tracked<T> {
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
fn certain_overflow<T: Real>(ln: f64) -> bool {
    ln > T::MAX.ln() * (1.0 + 1e-6)
}

/// What the other implementation's value may be: exactly ours, in a finite interval, or
/// anything.
#[derive(Clone, Copy, Debug)]
enum Range {
    Point(f64),
    Span(f64, f64),
    Unknown,
}

impl Range {
    fn ends(self) -> Option<(f64, f64)> {
        match self {
            Range::Point(x) => Some((x, x)),
            Range::Span(lo, hi) => Some((lo, hi)),
            Range::Unknown => None,
        }
    }
}

/// Which outcomes (true, false) a comparison may have in the other implementation.
fn possible(op: BinaryOp, a: Range, b: Range) -> (bool, bool) {
    if let (Range::Point(x), Range::Point(y)) = (a, b) {
        let t = compare(op, x, y);
        return (t, !t);
    }
    let (Some((alo, ahi)), Some((blo, bhi))) = (a.ends(), b.ends()) else {
        return (true, true);
    };
    if alo.is_nan() || blo.is_nan() {
        // Only an exact NaN (a point) gets here: every comparison with it is false but `!=`.
        let t = op == BinaryOp::Ne;
        return (t, !t);
    }
    match op {
        BinaryOp::Lt => (alo < bhi, ahi >= blo),
        BinaryOp::Le => (alo <= bhi, ahi > blo),
        BinaryOp::Gt => possible(BinaryOp::Lt, b, a),
        BinaryOp::Ge => possible(BinaryOp::Le, b, a),
        // One of them is a span of positive width, so `false` is always possible.
        BinaryOp::Eq => (alo <= bhi && blo <= ahi, true),
        BinaryOp::Ne => (true, alo <= bhi && blo <= ahi),
        _ => unreachable!("not a comparison: {op:?}"),
    }
}

fn compare(op: BinaryOp, x: f64, y: f64) -> bool {
    match op {
        BinaryOp::Lt => x < y,
        BinaryOp::Le => x <= y,
        BinaryOp::Gt => x > y,
        BinaryOp::Ge => x >= y,
        BinaryOp::Eq => x == y,
        BinaryOp::Ne => x != y,
        _ => unreachable!("not a comparison: {op:?}"),
    }
}

/// A truth value (ours) and the outcomes possible in the other implementation.
#[derive(Clone, Copy, Debug)]
struct Truth {
    ours: bool,
    can_true: bool,
    can_false: bool,
}

impl Truth {
    fn certain(self) -> bool {
        !(self.can_true && self.can_false)
    }

    fn as_value<T: Real>(self) -> Tracked<T> {
        Tracked {
            v: if self.ours { T::ONE } else { T::ZERO },
            e: if self.certain() { 0.0 } else { 1.0 },
        }
    }
}

fn truth<T: Real>(x: Tracked<T>) -> Truth {
    let (can_true, can_false) = possible(BinaryOp::Ne, x.range(), Range::Point(0.0));
    Truth {
        ours: x.v != T::ZERO,
        can_true,
        can_false,
    }
}

fn comparison<T: Real>(op: BinaryOp, a: Tracked<T>, b: Tracked<T>) -> Truth {
    let (can_true, can_false) = possible(op, a.range(), b.range());
    let ours = compare(op, a.v.to_f64(), b.v.to_f64());
    debug_assert!(if ours { can_true } else { can_false });
    Truth {
        ours,
        can_true,
        can_false,
    }
}

/// `chosen` where the other implementation may have chosen `other` instead.
fn either<T: Real>(chosen: Tracked<T>, other: Tracked<T>) -> Tracked<T> {
    let (x, y) = (chosen.v.to_f64(), other.v.to_f64());
    if chosen.e == 0.0 && other.e == 0.0 && x.to_bits() == y.to_bits() {
        return chosen;
    }
    if !(x.is_finite() && y.is_finite()) {
        return Tracked::unknown(chosen.v);
    }
    settle(chosen.v, chosen.e.max((x - y).abs() + other.e), false)
}

/// `a < b ? a : b` (`min`) or `a > b ? a : b` (`max`).
fn select<T: Real>(op: BinaryOp, a: Tracked<T>, b: Tracked<T>) -> Tracked<T> {
    let t = comparison(op, a, b);
    let chosen = if t.ours { a } else { b };
    if t.certain() {
        return chosen;
    }
    // min and max are 1-Lipschitz in each operand.
    let (x, y) = (a.v.to_f64(), b.v.to_f64());
    if !(x.is_finite() && y.is_finite()) {
        return Tracked::unknown(chosen.v);
    }
    settle(chosen.v, a.e.max(b.e), false)
}

fn arithmetic<T: Real>(op: BinaryOp, a: Tracked<T>, b: Tracked<T>) -> Tracked<T> {
    let r = match op {
        BinaryOp::Add => a.v + b.v,
        BinaryOp::Sub => a.v - b.v,
        BinaryOp::Mul => a.v * b.v,
        BinaryOp::Div => a.v / b.v,
        _ => unreachable!("not arithmetic: {op:?}"),
    };
    if (a.e == 0.0 && b.e == 0.0) || a.is_nan_exactly() || b.is_nan_exactly() {
        return Tracked::exact(r);
    }
    let (x, y) = (a.v.to_f64().abs(), b.v.to_f64().abs());
    let d = match op {
        BinaryOp::Add | BinaryOp::Sub => a.e + b.e,
        BinaryOp::Mul => x * b.e + y * a.e + a.e * b.e,
        _ => {
            // |a/b - a'/b'| = |a (b' - b) + b (a - a')| / |b b'|, with |b'| >= |b| - eb > 0.
            let low = (y - b.e).next_down();
            if !positive(low) {
                return Tracked::unknown(r);
            }
            (x * b.e + y * a.e) / (y * low)
        }
    };
    settle(r, d, true)
}

fn call<T: Real>(func: Func, args: &[Tracked<T>], accuracy: &LibmAccuracy) -> Tracked<T> {
    let a = args[0];
    let x = a.v.to_f64();
    match func {
        Func::Fabs | Func::Abs => Tracked {
            v: a.v.abs(),
            e: a.e,
        },
        Func::Sqrt => {
            let r = a.v.sqrt();
            if a.e == 0.0 {
                return Tracked::exact(r);
            }
            // |√a - √a'| = |a - a'| / (√a + √a'), with a' >= low > 0.
            let low = (x - a.e).next_down();
            if !positive(low) {
                return Tracked::unknown(r);
            }
            settle(r, a.e / (x.sqrt() + low.sqrt()), true)
        }
        Func::Floor | Func::Ceil => {
            let f = |v: f64| {
                if func == Func::Floor {
                    v.floor()
                } else {
                    v.ceil()
                }
            };
            let r = if func == Func::Floor {
                a.v.floor()
            } else {
                a.v.ceil()
            };
            if a.e == 0.0 {
                return Tracked::exact(r);
            }
            let (Range::Span(lo, hi), true) = (a.range(), x.is_finite()) else {
                return Tracked::unknown(r);
            };
            let (fx, flo, fhi) = (f(x), f(lo), f(hi));
            settle(r, (fx - flo).max(fhi - fx), false)
        }
        Func::Min => select(BinaryOp::Lt, a, args[1]),
        Func::Max => select(BinaryOp::Gt, a, args[1]),
        Func::Exp => {
            let r = a.v.exp();
            let y = r.to_f64();
            if a.e == 0.0 {
                if !x.is_finite() || certain_overflow::<T>(x) {
                    // exp(±inf) = inf, +0; exp(NaN) = NaN; far beyond the largest value, inf.
                    return Tracked::exact(r);
                }
                return settle_libm(r, 0.0, accuracy.exp_ulps);
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
                accuracy.exp_ulps,
            )
        }
        Func::Log => {
            let r = a.v.ln();
            if a.e == 0.0 {
                if x.is_nan() || x <= 0.0 || x == f64::INFINITY {
                    // Annex F: NaN below 0, -inf at ±0 (the pole), +inf at +inf.
                    return Tracked::exact(r);
                }
                return settle_libm(r, 0.0, accuracy.log_ulps);
            }
            let Range::Span(lo, _) = a.range() else {
                return Tracked::unknown(r);
            };
            if !positive(lo) {
                return Tracked::unknown(r);
            }
            // |ln a' - ln a| <= ln(a / lo) = -ln(1 - (a - lo) / a).
            settle_libm(r, -(-(x - lo) / x).ln_1p() * BOUND_SLACK, accuracy.log_ulps)
        }
        Func::Pow => {
            let b = args[1];
            let r = a.v.pow(b.v);
            let z = r.to_f64();
            let y = b.v.to_f64();
            if a.e == 0.0 && b.e == 0.0 {
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
                return settle_libm(r, 0.0, accuracy.pow_ulps);
            }
            if b.e == 0.0 && y == y.trunc() && y.abs() <= 1e6 {
                // An integral exponent n: pow(x, 0) = 1 for every x, and otherwise
                // |a'^n - a^n| <= |n| max|ξ^(n-1)| |a' - a| over ξ between a and a'.
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
                return settle_libm(
                    r,
                    y.abs() * slope * MAGNITUDE_SLACK * a.e * BOUND_SLACK,
                    accuracy.pow_ulps,
                );
            }
            // pow(a, b) = e^(b ln a) for a > 0.
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
                accuracy.pow_ulps,
            )
        }
    }
}

/// An array over domain plus halo.
struct Field<T> {
    values: Vec<T>,
    bounds: Vec<f64>,
    computed: Vec<bool>,
}

struct Machine<'a, T> {
    analysis: &'a Analysis,
    ids: HashMap<&'a str, ArrayId>,
    fields: Vec<Field<T>>,
    alloc: [usize; 3],
    halo: [usize; 3],
    accuracy: LibmAccuracy,
}

impl<'a, T: Real> Machine<'a, T> {
    /// Linear index of `at` (domain coordinates), if inside domain plus halo.
    fn index(&self, at: [i64; 3]) -> Option<usize> {
        let mut linear = 0usize;
        let mut stride = 1usize;
        for d in 0..3 {
            let p = at[d] + self.halo[d] as i64;
            if p < 0 || p >= self.alloc[d] as i64 {
                return None;
            }
            linear += p as usize * stride;
            stride *= self.alloc[d];
        }
        Some(linear)
    }

    fn read(&self, array: &str, at: [i64; 3]) -> Result<Tracked<T>, InterpError> {
        let id = *self
            .ids
            .get(array)
            .ok_or_else(|| InterpError(format!("unknown array `{array}`")))?;
        let n = self.index(at).ok_or_else(|| {
            InterpError(format!(
                "`{array}` read at {at:?}, outside domain plus halo"
            ))
        })?;
        let f = &self.fields[id];
        if !f.computed[n] {
            return Err(InterpError(format!(
                "`{array}` read at {at:?}, where it was not computed"
            )));
        }
        Ok(Tracked {
            v: f.values[n],
            e: f.bounds[n],
        })
    }

    fn eval(
        &self,
        expr: &Expr,
        at: [i64; 3],
        locals: &[(&str, Tracked<T>)],
    ) -> Result<Tracked<T>, InterpError> {
        Ok(match expr {
            Expr::Number { text, value } => {
                Tracked::exact(T::literal(text).unwrap_or_else(|| T::from_f64(*value)))
            }
            Expr::Local(name) => locals
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, v)| *v)
                .ok_or_else(|| InterpError(format!("undefined local `{name}`")))?,
            Expr::Access { array, offset } => {
                let p = [0, 1, 2].map(|d| at[d] + offset[d] as i64);
                self.read(array, p)?
            }
            Expr::Unary { op, operand } => {
                let a = self.eval(operand, at, locals)?;
                match op {
                    UnaryOp::Neg => Tracked { v: -a.v, e: a.e },
                    UnaryOp::Not => {
                        let t = truth(a);
                        Truth {
                            ours: !t.ours,
                            can_true: t.can_false,
                            can_false: t.can_true,
                        }
                        .as_value()
                    }
                }
            }
            Expr::Binary { op, lhs, rhs } => {
                let a = self.eval(lhs, at, locals)?;
                let b = self.eval(rhs, at, locals)?;
                match op {
                    BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div => {
                        arithmetic(*op, a, b)
                    }
                    BinaryOp::And | BinaryOp::Or => {
                        let (p, q) = (truth(a), truth(b));
                        let t = if *op == BinaryOp::And {
                            Truth {
                                ours: p.ours && q.ours,
                                can_true: p.can_true && q.can_true,
                                can_false: p.can_false || q.can_false,
                            }
                        } else {
                            Truth {
                                ours: p.ours || q.ours,
                                can_true: p.can_true || q.can_true,
                                can_false: p.can_false && q.can_false,
                            }
                        };
                        t.as_value()
                    }
                    _ => comparison(*op, a, b).as_value(),
                }
            }
            Expr::Ternary {
                cond,
                then,
                otherwise,
            } => {
                let c = truth(self.eval(cond, at, locals)?);
                let a = self.eval(then, at, locals)?;
                let b = self.eval(otherwise, at, locals)?;
                let (chosen, other) = if c.ours { (a, b) } else { (b, a) };
                if c.certain() {
                    chosen
                } else {
                    either(chosen, other)
                }
            }
            Expr::Call { func, args } => {
                let values = args
                    .iter()
                    .map(|a| self.eval(a, at, locals))
                    .collect::<Result<Vec<_>, _>>()?;
                if values.len() != func.arity() {
                    return Err(InterpError(format!(
                        "`{}` called with {} arguments",
                        func.name(),
                        values.len()
                    )));
                }
                call(*func, &values, &self.accuracy)
            }
        })
    }
}

fn run<T: Real>(
    program: &Program,
    analysis: &Analysis,
    input: &dyn Fn(ArrayId, [i64; 3]) -> f64,
    accuracy: &LibmAccuracy,
) -> Result<Evaluation, InterpError> {
    let domain = analysis.domain;
    let halo = analysis.halo;
    let alloc = [0, 1, 2].map(|d| domain[d] + 2 * halo[d]);
    let cells = alloc[0] * alloc[1] * alloc[2];
    let mut m = Machine::<T> {
        analysis,
        ids: analysis
            .arrays
            .iter()
            .enumerate()
            .map(|(id, a)| (a.name.as_str(), id))
            .collect(),
        fields: Vec::new(),
        alloc,
        halo,
        accuracy: *accuracy,
    };
    let cell_at = |n: usize| -> [i64; 3] {
        [
            (n % alloc[0]) as i64 - halo[0] as i64,
            (n / alloc[0] % alloc[1]) as i64 - halo[1] as i64,
            (n / (alloc[0] * alloc[1])) as i64 - halo[2] as i64,
        ]
    };
    for (id, a) in analysis.arrays.iter().enumerate() {
        m.fields.push(match a.kind {
            ArrayKind::Input => Field {
                values: (0..cells)
                    .map(|n| T::from_f64(input(id, cell_at(n))))
                    .collect(),
                bounds: vec![0.0; cells],
                computed: vec![true; cells],
            },
            ArrayKind::Stencil(_) => Field {
                values: vec![T::ZERO; cells],
                bounds: vec![0.0; cells],
                computed: vec![false; cells],
            },
        });
    }
    if program.stencils.len() != analysis.stencils.len() {
        return Err(InterpError(
            "the analysis does not belong to this program".into(),
        ));
    }
    for (s, stencil) in program.stencils.iter().enumerate() {
        let info = &m.analysis.stencils[s];
        let region = [0, 1, 2].map(|d| {
            (
                -(info.extent[d][0] as i64),
                (domain[d] + info.extent[d][1]) as i64,
            )
        });
        let target = info.array;
        let mut results = Vec::new();
        for k in region[2].0..region[2].1 {
            for j in region[1].0..region[1].1 {
                for i in region[0].0..region[0].1 {
                    let at = [i, j, k];
                    let mut locals: Vec<(&str, Tracked<T>)> = Vec::new();
                    for l in &stencil.lets {
                        let v = m.eval(&l.expr, at, &locals)?;
                        locals.push((l.name.as_str(), v));
                    }
                    let v = m.eval(&stencil.expr, at, &locals)?;
                    let n = m.index(at).ok_or_else(|| {
                        InterpError(format!(
                            "`{}` evaluated at {at:?}, outside domain plus halo",
                            stencil.name
                        ))
                    })?;
                    results.push((n, v));
                }
            }
        }
        let f = &mut m.fields[target];
        for (n, v) in results {
            f.values[n] = v.v;
            f.bounds[n] = v.e;
            f.computed[n] = true;
        }
    }
    let mut outputs = Vec::new();
    for &s in &analysis.outputs {
        let info = &analysis.stencils[s];
        let mut values = Vec::with_capacity(domain[0] * domain[1] * domain[2]);
        let mut bounds = Vec::with_capacity(values.capacity());
        for k in 0..domain[2] as i64 {
            for j in 0..domain[1] as i64 {
                for i in 0..domain[0] as i64 {
                    let v = m.read(&info.name, [i, j, k])?;
                    values.push(v.v.to_f64());
                    bounds.push(v.e);
                }
            }
        }
        outputs.push(OutputValues {
            stencil: s,
            name: info.name.clone(),
            values,
            bounds,
        });
    }
    Ok(Evaluation {
        value_type: program.value_type,
        domain,
        outputs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(text: &str) -> (Program, Analysis) {
        let p = Program::from_yaml(text).expect("valid program");
        let a = Analysis::new(&p).expect("valid analysis");
        (p, a)
    }

    /// example2 on a 3x3x1 domain with inputs chosen by hand:
    /// s0 = 0.5 * (i0(i+1,j,k) + i0(i,j,k)), s1 = i1(i,j,k) * (s0(i,j+1,k) - s0(i,j-1,k)).
    const EXAMPLE2_SMALL: &str = r#"name: example2
domain: [3, 3, 1]
halo: [1, 1, 0]
outputs: [s1]
stencils:
  - name: s0
    expr: "0.5 * (i0(i+1,j,k) + i0(i,j,k))"
  - name: s1
    expr: "i1(i,j,k) * (s0(i,j+1,k) - s0(i,j-1,k))"
"#;

    /// i0 = i + 10 j (exact in both types), i1 = 1 + k + 0.25 i.
    fn example2_inputs(a: &Analysis) -> impl Fn(ArrayId, [i64; 3]) -> f64 + '_ {
        move |id, [i, j, k]| match a.arrays[id].name.as_str() {
            "i0" => (i + 10 * j) as f64,
            "i1" => 1.0 + k as f64 + 0.25 * i as f64,
            other => panic!("no input {other}"),
        }
    }

    #[test]
    fn example2_by_hand() {
        let (p, a) = program(EXAMPLE2_SMALL);
        let e = interpret(&p, &a, &example2_inputs(&a), &LibmAccuracy::glibc()).unwrap();
        assert_eq!(e.outputs.len(), 1);
        assert_eq!(e.outputs[0].name, "s1");
        // s0(i, j) = 0.5 (i+1 + 10j + i + 10j) = i + 0.5 + 10 j, so
        // s0(i, j+1) - s0(i, j-1) = 20 and s1 = 20 (1 + 0.25 i) = 20, 25, 30 on every row.
        let want: Vec<f64> = (0..3).flat_map(|_| [20.0, 25.0, 30.0]).collect();
        assert_eq!(e.outputs[0].values, want);
        assert!(e.outputs[0].bounds.iter().all(|&b| b == 0.0));
    }

    #[test]
    fn float_program_rounds_every_operation_to_f32() {
        let text = r#"name: f
domain: [3, 1, 1]
halo: [0, 0, 0]
outputs: [s, u]
type: float
stencils:
  - name: s
    let:
      t: x(i,j,k) * 0.1
    expr: "t + x(i,j,k) * 0.2"
  - name: u
    expr: "x(i,j,k) * 0 + 16777216 + 1"
"#;
        let (p, a) = program(text);
        // Inputs are rounded to float first: 1/3 + i.
        let input = |_: ArrayId, [i, _, _]: [i64; 3]| 1.0 / 3.0 + i as f64;
        let e = interpret(&p, &a, &input, &LibmAccuracy::glibc()).unwrap();
        let by_hand = |i: i64| {
            let x = (1.0f64 / 3.0 + i as f64) as f32;
            let t = x * 0.1f32;
            (t + x * 0.2f32) as f64
        };
        let in_double = |i: i64| {
            let x = (1.0f64 / 3.0 + i as f64) as f32 as f64;
            ((x * 0.1 + x * 0.2) as f32) as f64
        };
        let s = &e.outputs[0].values;
        assert_eq!(s, &[by_hand(0), by_hand(1), by_hand(2)]);
        assert!(
            (0..3).any(|i| s[i as usize] != in_double(i)),
            "double arithmetic rounded at the end differs somewhere"
        );
        // 2^24 + 1 is halfway between floats and rounds back to 2^24 (to even); in double
        // arithmetic the 1 would survive.
        assert_eq!(e.outputs[1].values, vec![16777216.0; 3]);
    }

    #[test]
    fn float_literals_are_rounded_once() {
        // 1 + 2^-24 is halfway between two floats; the literal just below it rounds down to 1
        // in one step, but to 1 + 2^-23 through double (which rounds it onto the halfway
        // point, whose shortest decimal lies above it).
        let text = "1.00000005960464477539062499";
        assert_eq!(<f32 as Real>::literal(text), Some(1.0f32));
        let via_double: f32 = format!("{:?}", text.parse::<f64>().unwrap())
            .parse()
            .unwrap();
        assert_eq!(via_double, 1.0f32 + f32::EPSILON);
    }

    #[test]
    fn language_semantics_of_logic_min_max_and_calls() {
        let text = r#"name: l
domain: [1, 1, 1]
halo: [0, 0, 0]
outputs: [a, b, c, d, e, f, g]
stencils:
  - name: a
    expr: "(x(i,j,k) > 0.5) + 2 * (x(i,j,k) == 0.75) + 4 * !x(i,j,k) + 8 * (x(i,j,k) && 0)"
  - name: b
    expr: "min(x(i,j,k), 2) + max(x(i,j,k), 2) * 10"
  - name: c
    expr: "x(i,j,k) - 1 ? 7 : 9"
  - name: d
    expr: "abs(-x(i,j,k)) + floor(-x(i,j,k)) * 10 + ceil(x(i,j,k)) * 100"
  - name: e
    expr: "sqrt(x(i,j,k) - 1)"
  - name: f
    expr: "min(-0.0, 0.0)"
  - name: g
    expr: "log(0.0 * x(i,j,k))"
"#;
        let (p, a) = program(text);
        let input = |_: ArrayId, _: [i64; 3]| 0.75;
        let e = interpret(&p, &a, &input, &LibmAccuracy::glibc()).unwrap();
        let v: Vec<f64> = e.outputs.iter().map(|o| o.values[0]).collect();
        assert_eq!(v[0], 1.0 + 2.0);
        assert_eq!(v[1], 0.75 + 20.0);
        assert_eq!(v[2], 7.0, "-0.25 is true");
        assert_eq!(v[3], 0.75 - 10.0 + 100.0);
        assert!(v[4].is_nan());
        assert_eq!(v[5].to_bits(), 0.0f64.to_bits(), "min(-0, +0) is +0");
        assert_eq!(v[6], f64::NEG_INFINITY);
        for o in &e.outputs {
            assert_eq!(o.bounds, vec![0.0], "{}: no libm error flows in", o.name);
        }
    }

    #[test]
    fn libm_results_get_bounds_that_propagate() {
        let text = r#"name: t
domain: [1, 1, 1]
halo: [0, 0, 0]
outputs: [a, b, c, d, e, f, g, h]
stencils:
  - name: a
    expr: "exp(x(i,j,k))"
  - name: b
    expr: "exp(x(i,j,k)) * 4 - 1"
  - name: c
    expr: "exp(x(i,j,k)) > 1 ? 5 : 6"
  - name: d
    expr: "exp(x(i,j,k)) - exp(x(i,j,k)) < 0"
  - name: e
    expr: "1 / (exp(x(i,j,k)) - exp(x(i,j,k)))"
  - name: f
    expr: "pow(exp(x(i,j,k)) - 2, 2.0)"
  - name: g
    expr: "exp(x(i,j,k)) - exp(x(i,j,k)) == 0 ? 10 : 20"
  - name: h
    expr: "pow(exp(x(i,j,k)) - 2, 0.0) + exp(1000)"
"#;
        let (p, a) = program(text);
        let input = |_: ArrayId, _: [i64; 3]| 0.5;
        let e = interpret(&p, &a, &input, &LibmAccuracy::glibc()).unwrap();
        let ulp_e = f64::EPSILON; // e^0.5 ~ 1.65 is in [1, 2)
        let bound = |n: usize| e.outputs[n].bounds[0];
        assert!(bound(0) >= 2.0 * ulp_e && bound(0) < 2.01 * ulp_e);
        // (r + 2u) * 4 - 1: 8 ulps of [1, 2) plus the rounding of the product (at 4-8: 4
        // ulps) and of the difference (at 4-8: 4 ulps).
        assert!(
            bound(1) >= 16.0 * ulp_e && bound(1) < 16.1 * ulp_e,
            "{}",
            bound(1)
        );
        assert_eq!(bound(2), 0.0, "e^0.5 > 1 is certain");
        assert_eq!(bound(3), 1.0, "0 < 0 is uncertain within the bounds");
        assert_eq!(bound(4), f64::INFINITY, "division by an interval around 0");
        // An integral power of a negative inexact base: |2 a ξ| |a' - a| plus the libm ulps.
        assert!(bound(5) > 0.0 && bound(5) < 1e-15, "{}", bound(5));
        // Either branch may be taken: the distance between them.
        assert!(bound(6) >= 10.0 && bound(6) < 10.1, "{}", bound(6));
        // pow(x, 0) is 1 whatever x is; exp(1000) overflows in every library.
        assert_eq!(e.outputs[7].values[0], f64::INFINITY);
        assert_eq!(bound(7), 0.0);
    }

    #[test]
    fn agreement_detects_one_ulp() {
        let x = 1.0f64 / 3.0;
        assert_eq!(agreement(x, x, 0.0), Agreement::Exact);
        assert_eq!(agreement(x.next_up(), x, 0.0), Agreement::Mismatch);
        assert_eq!(agreement(-0.0, 0.0, 0.0), Agreement::Mismatch);
        assert_eq!(agreement(f64::NAN, -f64::NAN, 0.0), Agreement::Exact);
        assert_eq!(agreement(f64::NAN, 1.0, 0.0), Agreement::Mismatch);
        let f = (1.0f32 / 3.0) as f64;
        let f_next = (1.0f32 / 3.0).next_up() as f64;
        assert_eq!(agreement(f_next, f, 0.0), Agreement::Mismatch);
        assert_eq!(
            agreement(x.next_up(), x, 2.0 * f64::EPSILON),
            Agreement::WithinBound
        );
        assert_eq!(agreement(x + 1e-10, x, 1e-12), Agreement::Mismatch);
        assert_eq!(agreement(f64::NAN, x, 1e-12), Agreement::Mismatch);
        assert_eq!(agreement(5.0, x, f64::INFINITY), Agreement::Unchecked);
    }

    #[test]
    fn absinthe_value_matches_the_c_harness() {
        // Bits printed by the C function of harness_body.j2 (tests/reference.rs compiles it
        // and compares many more points).
        for (a, i, j, k, bits) in [
            (0u64, 0i64, 0i64, 0i64, 0x3fe6_4a40_0644_cc6bu64),
            (3, -2, 5, 1, 0x3feb_ec10_cd22_20c5),
            (7, 100, -3, 40, 0x3fea_6a6e_1a2f_057f),
        ] {
            assert_eq!(
                absinthe_value(a, i, j, k).to_bits(),
                bits,
                "({a}, {i}, {j}, {k})"
            );
        }
    }

    #[test]
    fn random_programs_interpret_without_errors() {
        use crate::generate::{random_language_program, RandomShape};
        let shape = RandomShape {
            max_domain: 5,
            max_offset: 2,
            rich_expressions: true,
            ..RandomShape::default()
        };
        for seed in 0..200 {
            let text = random_language_program(seed, &shape);
            let (p, a) = program(&text);
            let e = interpret(&p, &a, &harness_inputs, &LibmAccuracy::glibc())
                .unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(e.outputs.len(), a.outputs.len());
        }
    }
}
