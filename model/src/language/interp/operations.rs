//! The operators on tracked values (`-`, `!`, `+ - * /`, logic, comparisons) and the library
//! calls (`sqrt`, `abs`, `fabs`, `floor`, `ceil`, `min`, `max`, and through [`super::libm`]
//! `exp`, `log`, `pow`).

use crate::language::expr::{BinaryOp, Func, UnaryOp};

use super::libm::{exp, log, pow};
use super::real::{positive, Real};
use super::tracked::{settle, Range, Tracked};
use super::truth::{comparison, select, truth, Truth};
use super::LibmAccuracy;

/// `op a`: the sign flipped, or the truth value negated.
pub(super) fn unary<T: Real>(op: UnaryOp, a: Tracked<T>) -> Tracked<T> {
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

/// `a op b`: arithmetic, logic (`&&`, `||`) or a comparison, each yielding a value.
pub(super) fn binary<T: Real>(op: BinaryOp, a: Tracked<T>, b: Tracked<T>) -> Tracked<T> {
    match op {
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div => arithmetic(op, a, b),
        BinaryOp::And | BinaryOp::Or => {
            let (p, q) = (truth(a), truth(b));
            let t = if op == BinaryOp::And {
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
        _ => comparison(op, a, b).as_value(),
    }
}

/// `a op b` for `+ - * /`.
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

/// `func(args)`, where the arity is checked.
pub(super) fn call<T: Real>(
    func: Func,
    args: &[Tracked<T>],
    accuracy: &LibmAccuracy,
) -> Tracked<T> {
    let a = args[0];
    match func {
        Func::Fabs | Func::Abs => Tracked {
            v: a.v.abs(),
            e: a.e,
        },
        Func::Sqrt => sqrt(a),
        Func::Floor | Func::Ceil => rounding(func, a),
        Func::Min => select(BinaryOp::Lt, a, args[1]),
        Func::Max => select(BinaryOp::Gt, a, args[1]),
        Func::Exp => exp(a, accuracy.exp_ulps),
        Func::Log => log(a, accuracy.log_ulps),
        Func::Pow => pow(a, args[1], accuracy.pow_ulps),
    }
}

/// `sqrt(a)`, correctly rounded.
fn sqrt<T: Real>(a: Tracked<T>) -> Tracked<T> {
    let x = a.v.to_f64();
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

/// `floor(a)` or `ceil(a)` (`func`).
fn rounding<T: Real>(func: Func, a: Tracked<T>) -> Tracked<T> {
    let x = a.v.to_f64();
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
