//! Comparisons and truth values whose outcome may differ in the other implementation, and the
//! choices that depend on them (`?:`, `min`, `max`).

use crate::language::expr::BinaryOp;

use super::real::Real;
use super::tracked::{settle, Range, Tracked};

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
pub(super) struct Truth {
    pub(super) ours: bool,
    pub(super) can_true: bool,
    pub(super) can_false: bool,
}

impl Truth {
    pub(super) fn certain(self) -> bool {
        !(self.can_true && self.can_false)
    }

    pub(super) fn as_value<T: Real>(self) -> Tracked<T> {
        Tracked {
            v: if self.ours { T::ONE } else { T::ZERO },
            e: if self.certain() { 0.0 } else { 1.0 },
        }
    }
}

pub(super) fn truth<T: Real>(x: Tracked<T>) -> Truth {
    let (can_true, can_false) = possible(BinaryOp::Ne, x.range(), Range::Point(0.0));
    Truth {
        ours: x.v != T::ZERO,
        can_true,
        can_false,
    }
}

pub(super) fn comparison<T: Real>(op: BinaryOp, a: Tracked<T>, b: Tracked<T>) -> Truth {
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
pub(super) fn either<T: Real>(chosen: Tracked<T>, other: Tracked<T>) -> Tracked<T> {
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
pub(super) fn select<T: Real>(op: BinaryOp, a: Tracked<T>, b: Tracked<T>) -> Tracked<T> {
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
