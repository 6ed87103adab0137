//! Operation counting: what an expression costs per evaluation, in adds.

use super::{BinaryOp, Expr, Func, UnaryOp};

/// What a division counts in [`Expr::operations`], against 1 for an add or a multiply, where
/// the machine file has no measured weight ([`OperationWeights`]). Measured in a vectorised
/// row loop over cache-resident planes (`codegen/templates/operations.cpp.j2`, built as the generated
/// kernels are): one division per cell adds 18 adds' time, a second one 41 (the divider's
/// throughput, 16 cycles per 8 lanes with AVX-512, is the limit;
/// docs/decisions/0016-operation-weights-measured.md). At 4, the optima of division-heavy
/// programs, whose inlining copies the divisions, are predicted 1.5-2.2x too fast.
pub const DIVIDE_OPERATION: u64 = 30;
/// What `sqrt` counts in [`Expr::operations`] by default: 36 and 63 adds for a first and a
/// second per cell, measured as [`DIVIDE_OPERATION`] (with `-fno-math-errno`, which every build
/// has, or GCC keeps a scalar call for `errno` and it costs 100-130).
pub const SQRT_OPERATION: u64 = 50;
/// What `exp`, `log` or `pow` counts in [`Expr::operations`] by default: a scalar library call
/// per lane (GCC vectorises them only under `-ffast-math`), 220-400 adds measured as
/// [`DIVIDE_OPERATION`].
pub const CALL_OPERATION: u64 = 300;

/// What a division, a `sqrt` and a library call (`exp`, `log`, `pow`) count in the compute part
/// of the model, in adds. `absinthe learn` measures them on the machine it learns
/// (`params.operations` in the machine file); files without them, and programs analysed
/// without a machine, get the defaults ([`DIVIDE_OPERATION`], [`SQRT_OPERATION`],
/// [`CALL_OPERATION`]), measured on an AVX-512 Xeon.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperationWeights {
    pub divide: u64,
    pub sqrt: u64,
    pub call: u64,
}

impl Default for OperationWeights {
    fn default() -> Self {
        OperationWeights::DEFAULT
    }
}

impl OperationWeights {
    /// The defaults, usable in constants (`Params::ZERO`).
    pub const DEFAULT: OperationWeights = OperationWeights {
        divide: DIVIDE_OPERATION,
        sqrt: SQRT_OPERATION,
        call: CALL_OPERATION,
    };

    /// Whether these are the defaults (a machine file then need not write them).
    pub fn is_default(&self) -> bool {
        *self == OperationWeights::default()
    }
}

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
    /// `max`, `fabs`, `abs`, `floor` and `ceil` count 1 each; a division [`DIVIDE_OPERATION`] and
    /// `sqrt` [`SQRT_OPERATION`] (their vector throughput is tens of times an add's); `exp`,
    /// `log` and `pow` [`CALL_OPERATION`] (a scalar library call per lane). Loads and literals
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
            Expr::Number { .. } | Expr::Local(_) | Expr::Access { .. } => {}
            // A negative literal (`-4.0`) is a constant, not an operation.
            Expr::Unary {
                op: UnaryOp::Neg,
                operand,
            } if matches!(**operand, Expr::Number { .. }) => {}
            Expr::Unary { .. } | Expr::Ternary { .. } => n.simple += 1,
            Expr::Binary { op, .. } => match op {
                BinaryOp::Div => n.divide += 1,
                _ => n.simple += 1,
            },
            Expr::Call { func, .. } => match func {
                Func::Sqrt => n.sqrt += 1,
                Func::Exp | Func::Log | Func::Pow => n.call += 1,
                _ => n.simple += 1,
            },
        });
        n
    }
}
