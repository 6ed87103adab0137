//! The stencil expression language: a C-like expression over array accesses with constant
//! offsets, `let` locals, literals and a fixed set of math calls.
//!
//! `parse_expr` turns source text into an [`Expr`]; `Display` prints an `Expr` back as source
//! text that parses to the same tree (the round-trip property the tests check). Code generators
//! print expressions through [`Expr::visit_accesses`] and their own printers.

mod dims;
mod lexer;
mod operations;
mod parser;
mod printer;
#[cfg(test)]
mod tests;

pub use dims::Dims;
pub use lexer::Span;
pub use operations::{
    divisor_reciprocal, OperationCounts, Reciprocal, RECIPROCAL_DIVISION_OPERATIONS,
    SPLIT_RECIPROCAL_DIVISION_OPERATIONS,
};
pub use parser::{
    parse_expr, parse_expr_spanned, AccessSpan, ParseError, MAX_NESTING, MAX_TREE_DEPTH,
};

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `!x`
    Not,
}

/// Binary operators, loosest binding last in C order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

/// The math functions a stencil may call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Func {
    Sqrt,
    Fabs,
    Abs,
    Exp,
    Log,
    Pow,
    Min,
    Max,
    Floor,
    Ceil,
}

/// An expression tree. Accesses carry the array name and the constant offset along (i, j, k).
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A numeric literal; `text` is the literal as written (kept so printing is exact).
    Number {
        text: String,
        value: f64,
    },
    /// A `let` local of the enclosing stencil.
    Local(String),
    /// A run-time scalar of the program (`scalars:`), an argument of the generated function.
    /// The parser reads every bare name as a [`Expr::Local`]; the program reader turns those
    /// that name a declared scalar into this.
    Scalar(String),
    /// `name(i+a, j+b, k+c)`; for a field with fewer dimensions only its own indices are
    /// written (`dz(k+1)`), and the offset is 0 along the others.
    Access {
        array: String,
        offset: [i32; 3],
        /// The indices the access lists.
        dims: Dims,
    },
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `cond ? then : otherwise`
    Ternary {
        cond: Box<Expr>,
        then: Box<Expr>,
        otherwise: Box<Expr>,
    },
    Call {
        func: Func,
        args: Vec<Expr>,
    },
}

/// The index variables, in the order every access lists them.
pub const INDEX_NAMES: [&str; 3] = ["i", "j", "k"];

impl UnaryOp {
    /// The operator as written in source.
    pub fn symbol(self) -> &'static str {
        match self {
            UnaryOp::Neg => "-",
            UnaryOp::Not => "!",
        }
    }
}

impl BinaryOp {
    /// Every binary operator.
    pub const ALL: [BinaryOp; 12] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Lt,
        BinaryOp::Le,
        BinaryOp::Gt,
        BinaryOp::Ge,
        BinaryOp::Eq,
        BinaryOp::Ne,
        BinaryOp::And,
        BinaryOp::Or,
    ];

    /// The operator as written in source.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::And => "&&",
            BinaryOp::Or => "||",
        }
    }

    /// C's binding strength, higher binds tighter: `||` 1, `&&` 2, `== !=` 3, `< <= > >=` 4,
    /// `+ -` 5, `* /` 6. (The conditional is below all of them, unary operators above.)
    /// All binary operators are left-associative.
    pub fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => 1,
            BinaryOp::And => 2,
            BinaryOp::Eq | BinaryOp::Ne => 3,
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => 4,
            BinaryOp::Add | BinaryOp::Sub => 5,
            BinaryOp::Mul | BinaryOp::Div => 6,
        }
    }
}

impl Func {
    /// Every function, in the order error messages list them.
    pub const ALL: [Func; 10] = [
        Func::Sqrt,
        Func::Fabs,
        Func::Abs,
        Func::Exp,
        Func::Log,
        Func::Pow,
        Func::Min,
        Func::Max,
        Func::Floor,
        Func::Ceil,
    ];

    /// The name as written in source (and in C, except `min`/`max`, which code generators map).
    pub fn name(self) -> &'static str {
        match self {
            Func::Sqrt => "sqrt",
            Func::Fabs => "fabs",
            Func::Abs => "abs",
            Func::Exp => "exp",
            Func::Log => "log",
            Func::Pow => "pow",
            Func::Min => "min",
            Func::Max => "max",
            Func::Floor => "floor",
            Func::Ceil => "ceil",
        }
    }

    /// Number of arguments: 2 for `pow`, `min`, `max`; 1 for the others.
    pub fn arity(self) -> usize {
        match self {
            Func::Pow | Func::Min | Func::Max => 2,
            _ => 1,
        }
    }

    /// The function called `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Func> {
        Func::ALL.into_iter().find(|f| f.name() == name)
    }
}

impl Expr {
    /// Calls `f` on every array access, in source order (left to right).
    pub fn visit_accesses<'a>(&'a self, f: &mut impl FnMut(&'a str, [i32; 3])) {
        self.visit(&mut |e| {
            if let Expr::Access { array, offset, .. } = e {
                f(array, *offset);
            }
        });
    }

    /// Calls `f` on every use of a `let` local, in source order (a local used twice is visited
    /// twice).
    pub fn visit_locals<'a>(&'a self, f: &mut impl FnMut(&'a str)) {
        self.visit(&mut |e| {
            if let Expr::Local(name) = e {
                f(name);
            }
        });
    }

    /// Calls `f` on every number literal, in source order.
    pub fn visit_numbers<'a>(&'a self, f: &mut impl FnMut(&'a str, f64)) {
        self.visit(&mut |e| {
            if let Expr::Number { text, value } = e {
                f(text, *value);
            }
        });
    }

    /// Calls `f` on every use of a run-time scalar, in source order.
    pub fn visit_scalars<'a>(&'a self, f: &mut impl FnMut(&'a str)) {
        self.visit(&mut |e| {
            if let Expr::Scalar(name) = e {
                f(name);
            }
        });
    }

    /// The same tree with every bare name in `scalars` read as that scalar (see
    /// [`Expr::Scalar`]).
    pub fn with_scalars(&self, scalars: &[String]) -> Expr {
        let sub = |e: &Expr| Box::new(e.with_scalars(scalars));
        match self {
            Expr::Local(name) if scalars.contains(name) => Expr::Scalar(name.clone()),
            Expr::Number { .. } | Expr::Local(_) | Expr::Scalar(_) | Expr::Access { .. } => {
                self.clone()
            }
            Expr::Unary { op, operand } => Expr::Unary {
                op: *op,
                operand: sub(operand),
            },
            Expr::Binary { op, lhs, rhs } => Expr::Binary {
                op: *op,
                lhs: sub(lhs),
                rhs: sub(rhs),
            },
            Expr::Ternary {
                cond,
                then,
                otherwise,
            } => Expr::Ternary {
                cond: sub(cond),
                then: sub(then),
                otherwise: sub(otherwise),
            },
            Expr::Call { func, args } => Expr::Call {
                func: *func,
                args: args.iter().map(|a| a.with_scalars(scalars)).collect(),
            },
        }
    }

    /// Pre-order walk: a node, then its children left to right (source order).
    fn visit<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        f(self);
        match self {
            Expr::Number { .. } | Expr::Local(_) | Expr::Scalar(_) | Expr::Access { .. } => {}
            Expr::Unary { operand, .. } => operand.visit(f),
            Expr::Binary { lhs, rhs, .. } => {
                lhs.visit(f);
                rhs.visit(f);
            }
            Expr::Ternary {
                cond,
                then,
                otherwise,
            } => {
                cond.visit(f);
                then.visit(f);
                otherwise.visit(f);
            }
            Expr::Call { args, .. } => args.iter().for_each(|a| a.visit(f)),
        }
    }
}
