//! Printing an [`Expr`] back as source text (`Display`), with the precedence helpers it needs.

use std::fmt;

use super::{Dims, Expr, Func, UnaryOp, INDEX_NAMES};

const TERNARY_PRECEDENCE: u8 = 0;
const UNARY_PRECEDENCE: u8 = 7;
const PRIMARY_PRECEDENCE: u8 = 8;

impl Expr {
    /// Binding strength of the node's outermost construct, on the scale of
    /// [`BinaryOp::precedence`](super::BinaryOp::precedence): 0 for the conditional, 7 for
    /// unary, 8 for primaries.
    fn precedence(&self) -> u8 {
        match self {
            Expr::Ternary { .. } => TERNARY_PRECEDENCE,
            Expr::Binary { op, .. } => op.precedence(),
            Expr::Unary { .. } => UNARY_PRECEDENCE,
            Expr::Number { .. }
            | Expr::Local(_)
            | Expr::Scalar(_)
            | Expr::Access { .. }
            | Expr::Call { .. } => PRIMARY_PRECEDENCE,
        }
    }

    /// Whether the printed form starts with `-`, so that a `-` before it would read as `--`.
    fn prints_with_leading_minus(&self) -> bool {
        match self {
            Expr::Unary {
                op: UnaryOp::Neg, ..
            } => true,
            Expr::Number { text, .. } => text.starts_with('-'),
            _ => false,
        }
    }

    // Printing recurses once per tree level, so the recursive path calls `fmt` directly
    // (no `write!` machinery) and leaves leaf formatting to separate functions.

    fn fmt_operand(&self, f: &mut fmt::Formatter<'_>, parenthesize: bool) -> fmt::Result {
        if parenthesize {
            f.write_str("(")?;
            fmt::Display::fmt(self, f)?;
            f.write_str(")")
        } else {
            fmt::Display::fmt(self, f)
        }
    }

    #[inline(never)]
    fn fmt_access(
        f: &mut fmt::Formatter<'_>,
        array: &str,
        offset: &[i32; 3],
        dims: Dims,
    ) -> fmt::Result {
        write!(f, "{array}(")?;
        let written = INDEX_NAMES
            .iter()
            .zip(offset)
            .enumerate()
            .filter(|(d, _)| dims.has(*d));
        for (n, (_, (index, off))) in written.enumerate() {
            if n > 0 {
                f.write_str(", ")?;
            }
            f.write_str(index)?;
            if *off != 0 {
                write!(f, "{off:+}")?;
            }
        }
        f.write_str(")")
    }

    #[inline(never)]
    fn fmt_call(f: &mut fmt::Formatter<'_>, func: Func, args: &[Expr]) -> fmt::Result {
        f.write_str(func.name())?;
        f.write_str("(")?;
        for (n, arg) in args.iter().enumerate() {
            if n > 0 {
                f.write_str(", ")?;
            }
            fmt::Display::fmt(arg, f)?;
        }
        f.write_str(")")
    }
}

/// Prints source text with the fewest parentheses that parse back to the same tree: a left
/// operand is wrapped when it binds looser than its operator, a right operand when it binds
/// looser or equally (operators are left-associative), a condition when it is itself a
/// conditional. Numbers print as written.
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Number { text, .. } => f.write_str(text),
            Expr::Local(name) | Expr::Scalar(name) => f.write_str(name),
            Expr::Access {
                array,
                offset,
                dims,
            } => Expr::fmt_access(f, array, offset, *dims),
            Expr::Unary { op, operand } => {
                f.write_str(op.symbol())?;
                // `- -a`, not `--a` (which reads as C's decrement) nor `-(-a)` (which nests one
                // level deeper than the source, past the parser's limit for long chains).
                if *op == UnaryOp::Neg && operand.prints_with_leading_minus() {
                    f.write_str(" ")?;
                }
                operand.fmt_operand(f, operand.precedence() < UNARY_PRECEDENCE)
            }
            Expr::Binary { op, lhs, rhs } => {
                let p = op.precedence();
                lhs.fmt_operand(f, lhs.precedence() < p)?;
                f.write_str(" ")?;
                f.write_str(op.symbol())?;
                f.write_str(" ")?;
                rhs.fmt_operand(f, rhs.precedence() <= p)
            }
            Expr::Ternary {
                cond,
                then,
                otherwise,
            } => {
                cond.fmt_operand(f, cond.precedence() == TERNARY_PRECEDENCE)?;
                f.write_str(" ? ")?;
                fmt::Display::fmt(then, f)?;
                f.write_str(" : ")?;
                fmt::Display::fmt(otherwise, f)
            }
            Expr::Call { func, args } => Expr::fmt_call(f, *func, args),
        }
    }
}
