//! Expressions as C: fully parenthesised from the AST, in the AST's order, so that the
//! reference and every fused or tiled variant round identically (with `-ffp-contract=off`).
//!
//! Literals are printed in the program's type (`1` becomes `1.0` or `1.0f`), as the value of
//! their decimal text rounded once to that type (a float literal is not rounded to double
//! first: `1.00000005960464477539062499` is `1.0f`, not the `1.0000001f` that its double,
//! printed and read as a float, would give); comparisons and
//! logic yield 0 or 1 converted to the program's type, so no integer arithmetic (or integer
//! division) ever happens; `abs` is the floating-point absolute value; `min`/`max` are
//! `a < b ? a : b` / `a > b ? a : b`, which the compiler must keep exact when it vectorises.

use absinthe_model::language::expr::{divisor_reciprocal, BinaryOp, Expr, Func, UnaryOp};
use absinthe_model::language::program::ValueType;

/// A literal of the program's type: `value` rounded to it.
pub fn literal(value: f64, vt: ValueType) -> String {
    let t = vt.c_name();
    if value.is_nan() {
        return format!("(({t})NAN)");
    }
    let rounded = match vt {
        ValueType::Double => value,
        ValueType::Float => value as f32 as f64,
    };
    if rounded.is_infinite() {
        return format!("(({t}){}INFINITY)", if value < 0.0 { "-" } else { "" });
    }
    // The shortest decimal that reads back as the same value of the type.
    let mut text = match vt {
        ValueType::Double => format!("{value:?}"),
        ValueType::Float => format!("{:?}", value as f32),
    };
    if !text.contains(['.', 'e', 'E']) {
        text.push_str(".0");
    }
    match vt {
        ValueType::Double => text,
        ValueType::Float => text + "f",
    }
}

/// The C identifier of a run-time scalar: the generated function's parameter `sc_<name>`.
pub fn scalar_ident(name: &str) -> String {
    format!("sc_{name}")
}

/// `value` as a C hexadecimal floating literal of type `double`, exact for every finite value
/// (`0x1.8p+3` is 12): what a harness writes for a value given on the command line, so that
/// nothing is lost to a decimal round trip. Infinities and NaN print as `INFINITY` and `NAN`.
pub fn hex_double(value: f64) -> String {
    if value.is_nan() {
        return "((double)NAN)".into();
    }
    let sign = if value.is_sign_negative() { "-" } else { "" };
    if value.is_infinite() {
        return format!("({sign}(double)INFINITY)");
    }
    let bits = value.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i64;
    let mantissa = bits & ((1u64 << 52) - 1);
    match (exponent, mantissa) {
        (0, 0) => format!("{sign}0x0p+0"),
        (0, m) => format!("{sign}0x0.{m:013x}p-1022"),
        (e, m) => format!("{sign}0x1.{m:013x}p{:+}", e - 1023),
    }
}

/// A literal written as `text` (its parsed value `value`), in the program's type: the decimal
/// rounded once to that type.
pub fn number(text: &str, value: f64, vt: ValueType) -> String {
    match (vt, text.parse::<f32>()) {
        (ValueType::Float, Ok(f)) => literal(f as f64, vt),
        _ => literal(value, vt),
    }
}

/// Prints `expr` as C. `access(array, offset)` prints an array read and `local(name)` a `let`
/// local's identifier.
pub fn c_expr(
    expr: &Expr,
    vt: ValueType,
    access: &dyn Fn(&str, [i32; 3]) -> String,
    local: &dyn Fn(&str) -> String,
) -> String {
    let mut out = String::new();
    write_expr(&mut out, expr, vt, access, local);
    out
}

fn write_expr(
    out: &mut String,
    expr: &Expr,
    vt: ValueType,
    access: &dyn Fn(&str, [i32; 3]) -> String,
    local: &dyn Fn(&str) -> String,
) {
    let t = vt.c_name();
    let sub = |out: &mut String, e: &Expr| write_expr(out, e, vt, access, local);
    match expr {
        Expr::Number { text, value } => out.push_str(&number(text, *value, vt)),
        Expr::Local(name) => out.push_str(&local(name)),
        Expr::Scalar(name) => out.push_str(&scalar_ident(name)),
        Expr::Access { array, offset, .. } => out.push_str(&access(array, *offset)),
        Expr::Unary { op, operand } => match op {
            UnaryOp::Neg => {
                out.push_str("(-");
                sub(out, operand);
                out.push(')');
            }
            UnaryOp::Not => {
                out.push_str(&format!("(({t})(!"));
                sub(out, operand);
                out.push_str("))");
            }
        },
        Expr::Binary {
            op: BinaryOp::Div,
            lhs,
            rhs,
        } if let Some(reciprocal) = divisor_reciprocal(lhs, rhs, vt) => {
            // A literal divisor the FMA build divides by with its reciprocal (the prelude's
            // `ABSINTHE_DIVIDE_BY`; every other build divides).
            out.push_str("ABSINTHE_DIVIDE_BY(");
            sub(out, lhs);
            out.push_str(", ");
            sub(out, rhs);
            out.push_str(", ");
            out.push_str(&literal(reciprocal.z, vt));
            out.push_str(", ");
            out.push_str(&literal(reciprocal.low, vt));
            out.push(')');
        }
        Expr::Binary { op, lhs, rhs } => {
            let logical = !matches!(
                op,
                BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div
            );
            if logical {
                out.push_str(&format!("(({t})("));
            } else {
                out.push('(');
            }
            sub(out, lhs);
            out.push(' ');
            out.push_str(op.symbol());
            out.push(' ');
            sub(out, rhs);
            out.push_str(if logical { "))" } else { ")" });
        }
        Expr::Ternary {
            cond,
            then,
            otherwise,
        } => {
            out.push_str("((");
            sub(out, cond);
            out.push_str(") != 0 ? ");
            sub(out, then);
            out.push_str(" : ");
            sub(out, otherwise);
            out.push(')');
        }
        Expr::Call { func, args } => {
            let name = match func {
                Func::Sqrt => "std::sqrt",
                Func::Fabs | Func::Abs => "std::fabs",
                Func::Exp => "std::exp",
                Func::Log => "std::log",
                Func::Pow => "std::pow",
                Func::Min => "absinthe_min",
                Func::Max => "absinthe_max",
                Func::Floor => "std::floor",
                Func::Ceil => "std::ceil",
            };
            out.push_str(name);
            out.push('(');
            for (n, a) in args.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                sub(out, a);
            }
            out.push(')');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use absinthe_model::language::expr::parse_expr;

    fn show(src: &str, vt: ValueType) -> String {
        let e = parse_expr(src).unwrap();
        c_expr(
            &e,
            vt,
            &|a, o| format!("{a}[{},{},{}]", o[0], o[1], o[2]),
            &|l| format!("l_{l}"),
        )
    }

    #[test]
    fn sums_are_left_nested_and_literals_typed() {
        assert_eq!(
            show("a(i,j,k) + 1 + b(i+1,j,k)", ValueType::Double),
            "((a[0,0,0] + 1.0) + b[1,0,0])"
        );
        assert_eq!(show("1 / 2", ValueType::Float), "(1.0f / 2.0f)");
    }

    #[test]
    fn float_literals_are_rounded_once() {
        // Just below 1 + 2^-24, halfway between 1 and the next float: the float nearest the
        // decimal is 1; its double is the halfway point, whose shortest decimal
        // (1.0000000596046448) reads as 1 + 2^-23.
        assert_eq!(
            show("1.00000005960464477539062499", ValueType::Float),
            "1.0f"
        );
        assert_eq!(
            show("1.00000005960464477539062499", ValueType::Double),
            "1.0000000596046448"
        );
        assert_eq!(show("0.1", ValueType::Float), "0.1f");
        assert_eq!(show("16777217", ValueType::Float), "16777216.0f");
        assert_eq!(show("1e39", ValueType::Float), "((float)INFINITY)");
        assert_eq!(show("1e39", ValueType::Double), "1e39");
    }

    #[test]
    fn hex_doubles_are_exact() {
        assert_eq!(hex_double(12.0), "0x1.8000000000000p+3");
        assert_eq!(hex_double(-0.0), "-0x0p+0");
        assert_eq!(
            hex_double(f64::MIN_POSITIVE / 2.0),
            "0x0.8000000000000p-1022"
        );
        assert_eq!(hex_double(0.1), "0x1.999999999999ap-4");
        let e = parse_expr("dt * a(i,j,k) + x")
            .unwrap()
            .with_scalars(&["dt".to_string()]);
        let c = c_expr(
            &e,
            ValueType::Double,
            &|a, o| format!("{a}[{},{},{}]", o[0], o[1], o[2]),
            &|l| format!("l_{l}"),
        );
        assert_eq!(c, "((sc_dt * a[0,0,0]) + l_x)");
    }

    #[test]
    fn comparisons_are_floating() {
        assert_eq!(
            show("(a(i,j,k) > 1) / 2", ValueType::Double),
            "(((double)(a[0,0,0] > 1.0)) / 2.0)"
        );
        assert_eq!(
            show("abs(a(i,j,k))", ValueType::Float),
            "std::fabs(a[0,0,0])"
        );
    }
}
