//! Operation counting: what an expression costs per evaluation, in adds.

use super::{BinaryOp, Expr, Func, UnaryOp};
use crate::formats::machine::OperationWeights;

/// The operations an expression does per evaluation, by kind: `simple` counts `+ - *`,
/// negation, comparisons, logic, selections, `min`, `max`, `fabs`, `abs`, `floor` and `ceil`
/// (each weighs one add), the rest count divisions, square roots and library calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct OperationCounts {
    pub simple: u64,
    pub divide: u64,
    pub sqrt: u64,
    pub call: u64,
}

impl OperationCounts {
    /// Each count times `n`.
    pub fn times(&self, n: u64) -> OperationCounts {
        OperationCounts {
            simple: self.simple * n,
            divide: self.divide * n,
            sqrt: self.sqrt * n,
            call: self.call * n,
        }
    }

    /// The counts' weight in adds.
    pub fn weighed(&self, w: &OperationWeights) -> u64 {
        self.simple + self.divide * w.divide + self.sqrt * w.sqrt + self.call * w.call
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
    /// (negative ones too) count nothing: the fast part of the model counts accesses. This is
    /// the weight of the model's compute part (`formula::Part::Compute`).
    pub fn operations(&self) -> u64 {
        self.operation_counts()
            .weighed(&OperationWeights::default())
    }

    /// The operations of [`Expr::operations`], by kind.
    pub fn operation_counts(&self) -> OperationCounts {
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
