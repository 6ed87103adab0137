//! Operation counting: what an expression costs per evaluation, in adds.

use super::{BinaryOp, Expr, Func, UnaryOp};
use crate::formats::machine::OperationWeights;
use crate::language::program::ValueType;

/// The operations an expression does per evaluation, by kind: `simple` counts `+ - *`,
/// negation, comparisons, logic, selections, `min`, `max`, `fabs`, `abs`, `floor` and `ceil`
/// (each weighs one add), the rest count divisions, square roots and library calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct OperationCounts {
    pub simple: u64,
    pub divide: u64,
    pub sqrt: u64,
    pub call: u64,
    /// Divisions by a literal that the FMA build may compute through the reciprocal
    /// ([`divisor_reciprocal`]), and the simple operations that takes ([`Reciprocal::operations`]):
    /// weighed as those, or as divisions where the build divides
    /// (`OperationWeights::divide_literals`).
    pub literal_divide: u64,
    pub literal_simple: u64,
}

impl OperationCounts {
    /// Each count times `n`.
    pub fn times(&self, n: u64) -> OperationCounts {
        OperationCounts {
            simple: self.simple * n,
            divide: self.divide * n,
            sqrt: self.sqrt * n,
            call: self.call * n,
            literal_divide: self.literal_divide * n,
            literal_simple: self.literal_simple * n,
        }
    }

    /// The counts' weight in adds: the divisions by literals as the build computes them. The
    /// divider (divisions and square roots) works beside the pipes that do the rest, so the
    /// weight is the larger of the two: the measured weights are each operation's time once
    /// its unit is the bottleneck (`compile::operation_times`).
    pub fn weighed(&self, w: &OperationWeights) -> u64 {
        let (literal_divider, literal_pipes) = if w.divide_literals {
            (self.literal_divide * w.divide, 0)
        } else {
            (0, self.literal_simple)
        };
        let divider = self.divide * w.divide + self.sqrt * w.sqrt + literal_divider;
        let pipes = self.simple + literal_pipes + self.call * w.call;
        divider.max(pipes)
    }
}

impl std::ops::Add for OperationCounts {
    type Output = OperationCounts;
    fn add(self, o: OperationCounts) -> OperationCounts {
        OperationCounts {
            simple: self.simple + o.simple,
            divide: self.divide + o.divide,
            sqrt: self.sqrt + o.sqrt,
            call: self.call + o.call,
            literal_divide: self.literal_divide + o.literal_divide,
            literal_simple: self.literal_simple + o.literal_simple,
        }
    }
}

impl std::iter::Sum for OperationCounts {
    fn sum<I: Iterator<Item = OperationCounts>>(iter: I) -> OperationCounts {
        iter.fold(OperationCounts::default(), |a, b| a + b)
    }
}

impl Expr {
    /// The arithmetic this expression does per evaluation, in units of one add, with the default
    /// [`OperationWeights`]: `+ - *`, negation, comparisons, logic, a selection (`?:`), `min`,
    /// `max`, `fabs`, `abs`, `floor` and `ceil` count 1 each, and so does a division by a power of two (a
    /// multiply) or of two literals (folded); any other division [`DIVIDE_OPERATION`](crate::formats::machine::DIVIDE_OPERATION) and
    /// `sqrt` [`SQRT_OPERATION`](crate::formats::machine::SQRT_OPERATION) (their vector throughput is tens of times an add's); `exp`,
    /// `log` and `pow` [`CALL_OPERATION`](crate::formats::machine::CALL_OPERATION) (a scalar library call per lane). Loads and literals
    /// (negative ones too) count nothing: the fast part of the model counts accesses. The
    /// divisions and square roots run on the divider beside the rest: the weight is the larger
    /// of the two sums ([`OperationCounts::weighed`]). This is the weight of the model's compute
    /// part (`formula::Part::Compute`).
    pub fn operations(&self) -> u64 {
        self.operation_counts()
            .weighed(&OperationWeights::default())
    }

    /// The operations of [`Expr::operations`], by kind, in a program of doubles.
    pub fn operation_counts(&self) -> OperationCounts {
        self.operation_counts_in(ValueType::Double)
    }

    /// The operations of [`Expr::operations`], by kind, in a program of values `vt`: a division
    /// by a literal that the FMA build may compute with its reciprocal ([`divisor_reciprocal`])
    /// is counted apart, with its [`Reciprocal::operations`] simple operations
    /// ([`OperationCounts::literal_divide`]); [`Expr::operations`] weighs it as those.
    pub fn operation_counts_in(&self, vt: ValueType) -> OperationCounts {
        let mut n = OperationCounts::default();
        self.visit(&mut |e| match e {
            Expr::Number { .. } | Expr::Local(_) | Expr::Scalar(_) | Expr::Access { .. } => {}
            // A negative literal (`-4.0`) is a constant, not an operation.
            Expr::Unary {
                op: UnaryOp::Neg,
                operand,
            } if matches!(**operand, Expr::Number { .. }) => {}
            Expr::Unary { .. } | Expr::Ternary { .. } => n.simple += 1,
            // A division by a literal whose reciprocal is exact (a power of two) is a multiply
            // under any flags, and one of two literals is folded: each weighs one add.
            Expr::Binary {
                op: BinaryOp::Div,
                lhs,
                rhs,
            } if let Some(reciprocal) = divisor_reciprocal(lhs, rhs, vt) => {
                n.literal_divide += 1;
                n.literal_simple += reciprocal.operations();
            }
            Expr::Binary {
                op: BinaryOp::Div,
                lhs,
                rhs,
            } if !(exact_reciprocal(rhs) || both_literals(lhs, rhs)) => n.divide += 1,
            Expr::Binary { .. } => n.simple += 1,
            Expr::Call { func, .. } => match func {
                Func::Sqrt => n.sqrt += 1,
                Func::Exp | Func::Log | Func::Pow => n.call += 1,
                _ => n.simple += 1,
            },
        });
        n
    }
}

/// Whether `e` is a literal whose reciprocal is exact: a power of two.
fn exact_reciprocal(e: &Expr) -> bool {
    match e {
        Expr::Number { value, .. } => {
            let v = value.abs();
            v.is_normal() && v.to_bits() & ((1u64 << 52) - 1) == 0
        }
        Expr::Unary {
            op: UnaryOp::Neg,
            operand,
        } => exact_reciprocal(operand),
        _ => false,
    }
}

fn both_literals(a: &Expr, b: &Expr) -> bool {
    matches!(a, Expr::Number { .. }) && matches!(b, Expr::Number { .. })
}

/// What a division by a literal costs in the FMA build when it multiplies by the reciprocal
/// alone ([`divisor_reciprocal`]): a multiply, two FMAs, a sign copy, a comparison and a
/// selection, each at an add's throughput.
pub const RECIPROCAL_DIVISION_OPERATIONS: u64 = 6;

/// The same with the reciprocal's rest: a multiply by it and an FMA more.
pub const SPLIT_RECIPROCAL_DIVISION_OPERATIONS: u64 = 8;

/// The literal divisor of `lhs / rhs` as the program's type `vt` holds it, when that is a finite,
/// normal value that is not a power of two (whose reciprocal is exact and any build multiplies)
/// and `lhs` is not a literal (the compiler folds the quotient).
fn literal_divisor(lhs: &Expr, rhs: &Expr, vt: ValueType) -> Option<f64> {
    if exact_reciprocal(rhs) || both_literals(lhs, rhs) {
        return None;
    }
    let (text, value, negative) = match rhs {
        Expr::Number { text, value } => (text, *value, false),
        Expr::Unary {
            op: UnaryOp::Neg,
            operand,
        } => match &**operand {
            Expr::Number { text, value } => (text, *value, true),
            _ => return None,
        },
        _ => return None,
    };
    // As `cexpr::number` prints it: a float literal is its decimal text rounded once to float.
    let y = match vt {
        ValueType::Double => value,
        ValueType::Float => text.parse::<f32>().map_or(value as f32, |f| f) as f64,
    };
    let y = if negative { -y } else { y };
    normal_in(y, vt).then_some(y)
}

/// Whether `v` (a value of type `vt`) is a normal number of that type.
fn normal_in(v: f64, vt: ValueType) -> bool {
    match vt {
        ValueType::Double => v.is_normal(),
        ValueType::Float => (v as f32).is_normal(),
    }
}

/// How the FMA build divides by a literal `y`: through `z`, its reciprocal rounded to the
/// program's type, and `low`, the rest `1/y - z` rounded to the type where `z` alone is not
/// near enough (else 0). See [`divisor_reciprocal`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reciprocal {
    pub z: f64,
    pub low: f64,
}

impl Reciprocal {
    /// Its simple operations in the generated `absinthe_divide_by`.
    pub fn operations(&self) -> u64 {
        if self.low == 0.0 {
            RECIPROCAL_DIVISION_OPERATIONS
        } else {
            SPLIT_RECIPROCAL_DIVISION_OPERATIONS
        }
    }
}

/// How the FMA build divides `lhs` by the literal divisor `y` of `lhs / rhs` (the generated
/// `absinthe_divide_by`): `q` within one unit in the last place of `x / y` for every `x`, then
/// `r = x - q y` (exact) and `q + r z`, which is the correctly rounded quotient (Markstein's
/// theorem, `z` being the correctly rounded reciprocal) wherever nothing underflows or
/// overflows. With `p` the type's precision (53 or 24):
/// - where `z y` differs from 1 by at most 2^-(p+1), `q = x z`: its error before rounding is
///   under half a unit, and its rounding adds at most half of one (`low` is 0; of the 192
///   integers from 3 to 200 that are not powers of two, 169 as doubles and 143 as floats; 60 and
///   12, not 49);
/// - otherwise `q = x z + x low` in one FMA, `low` the rest `1/y - z` rounded: `z + low` is
///   within about 2^-2p of `1/y` in relative terms, so `q` is within half a unit and a sliver,
///   when `low` is a normal number (every divisor but those whose reciprocal or rest falls below
///   the normal range, such as 1e300, which keep the division).
pub fn divisor_reciprocal(lhs: &Expr, rhs: &Expr, vt: ValueType) -> Option<Reciprocal> {
    let y = literal_divisor(lhs, rhs, vt)?;
    let (z, error, bound, low) = match vt {
        ValueType::Double => {
            let z = 1.0 / y;
            // z y - 1 is exact in one FMA: |z y - 1| < 2^-52 and z y's bits end at 2^-105.
            let rest = z.mul_add(-y, 1.0);
            (z, rest.abs(), 2f64.powi(-54), rest / y)
        }
        ValueType::Float => {
            let z = 1.0f32 / y as f32;
            // A product of two floats is exact in a double, and so is its difference from 1.
            let rest = 1.0 - z as f64 * y;
            (
                z as f64,
                rest.abs(),
                2f64.powi(-25),
                (rest / y) as f32 as f64,
            )
        }
    };
    if !normal_in(z, vt) {
        return None;
    }
    if error <= bound {
        return Some(Reciprocal { z, low: 0.0 });
    }
    normal_in(low, vt).then_some(Reciprocal { z, low })
}
