//! The stencil expression language: a C-like expression over array accesses with constant
//! offsets, `let` locals, literals and a fixed set of math calls.
//!
//! `parse_expr` turns source text into an [`Expr`]; `Display` prints an `Expr` back as source
//! text that parses to the same tree (the round-trip property the tests check). Code generators
//! print expressions through [`Expr::visit_accesses`] and their own printers.

use std::fmt;

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
    /// `name(i+a, j+b, k+c)`.
    Access {
        array: String,
        offset: [i32; 3],
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

/// Deepest nesting of parentheses, calls, unary operators and conditionals the parser accepts;
/// deeper input is an error rather than a stack overflow.
pub const MAX_NESTING: usize = 256;

/// Deepest expression tree the parser builds (a sum of n terms is n deep), so that recursive
/// walks over a parsed [`Expr`] (printing, comparing, evaluating, generating code) need a
/// bounded stack. At both limits, parsing, printing, comparing and dropping fit in 512 KiB of
/// stack in an unoptimized build (the tests run on 2 MiB threads).
pub const MAX_TREE_DEPTH: usize = 1024;

/// The index variables, in the order every access lists them.
pub const INDEX_NAMES: [&str; 3] = ["i", "j", "k"];

/// Functions that C programmers may reach for but the language lacks; calling one is reported
/// as an unknown function rather than as a malformed array access.
const KNOWN_FOREIGN_FUNCTIONS: &[&str] = &[
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "exp2", "expm1", "log2", "log10", "log1p", "cbrt", "hypot", "fmin", "fmax", "fmod",
    "round", "trunc", "rint", "lround", "fma", "erf", "erfc", "tgamma", "lgamma", "copysign",
    "sqrtf", "fabsf", "powf", "expf", "logf", "floorf", "ceilf", "fminf", "fmaxf", "sign", "sgn",
    "square", "sq", "ln",
];

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

const TERNARY_PRECEDENCE: u8 = 0;
const UNARY_PRECEDENCE: u8 = 7;
const PRIMARY_PRECEDENCE: u8 = 8;

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
            if let Expr::Access { array, offset } = e {
                f(array, *offset);
            }
        });
    }

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

    /// Calls `f` on every use of a `let` local, in source order (a local used twice is visited
    /// twice).
    pub fn visit_locals<'a>(&'a self, f: &mut impl FnMut(&'a str)) {
        self.visit(&mut |e| {
            if let Expr::Local(name) = e {
                f(name);
            }
        });
    }

    /// Pre-order walk: a node, then its children left to right (source order).
    fn visit<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        f(self);
        match self {
            Expr::Number { .. } | Expr::Local(_) | Expr::Access { .. } => {}
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

    /// Binding strength of the node's outermost construct, on the scale of
    /// [`BinaryOp::precedence`]: 0 for the conditional, 7 for unary, 8 for primaries.
    fn precedence(&self) -> u8 {
        match self {
            Expr::Ternary { .. } => TERNARY_PRECEDENCE,
            Expr::Binary { op, .. } => op.precedence(),
            Expr::Unary { .. } => UNARY_PRECEDENCE,
            Expr::Number { .. } | Expr::Local(_) | Expr::Access { .. } | Expr::Call { .. } => {
                PRIMARY_PRECEDENCE
            }
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
    fn fmt_access(f: &mut fmt::Formatter<'_>, array: &str, offset: &[i32; 3]) -> fmt::Result {
        write!(f, "{array}(")?;
        for (d, (index, off)) in INDEX_NAMES.iter().zip(offset).enumerate() {
            if d > 0 {
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
            Expr::Local(name) => f.write_str(name),
            Expr::Access { array, offset } => Expr::fmt_access(f, array, offset),
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

/// A byte range `start..end` of the source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

/// A syntax error: what is wrong, and where. Displays as `column C: MESSAGE`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("column {column}: {message}")]
pub struct ParseError {
    pub message: String,
    /// The offending text (empty at the end of the input).
    pub span: Span,
    /// 1-based character column of `span.start`, computed from the source at construction.
    column: usize,
}

impl ParseError {
    /// An error at `span` of `src`.
    pub fn new(src: &str, message: impl Into<String>, span: Span) -> Self {
        ParseError {
            message: message.into(),
            span,
            column: column_at(src, span.start),
        }
    }

    /// 1-based column, in characters, of the start of the offending text.
    pub fn column(&self) -> usize {
        self.column
    }
}

/// An array access as written: the array, its offset along (i, j, k), and where it is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AccessSpan {
    pub array: String,
    pub offset: [i32; 3],
    /// From the first character of the name to the closing `)`.
    pub span: Span,
}

/// Parses an expression.
///
/// ```
/// use absinthe_model::expr::{parse_expr, BinaryOp, Expr};
///
/// let expr = parse_expr("in(i-1,j,k)*0.5").unwrap();
/// assert!(matches!(expr, Expr::Binary { op: BinaryOp::Mul, .. }));
/// assert_eq!(expr.to_string(), "in(i-1, j, k) * 0.5");
///
/// let err = parse_expr("sqrt(a b").unwrap_err();
/// assert_eq!(err.column(), 8);
/// assert_eq!(
///     err.to_string(),
///     "column 8: expected `)` to close the call of `sqrt` opened at column 5, found `b`"
/// );
/// ```
pub fn parse_expr(src: &str) -> Result<Expr, ParseError> {
    parse_expr_spanned(src).map(|(expr, _)| expr)
}

/// Parses an expression and lists its array accesses in source order with their spans.
pub fn parse_expr_spanned(src: &str) -> Result<(Expr, Vec<AccessSpan>), ParseError> {
    let tokens = lex(src)?;
    if tokens.is_empty() {
        return Err(ParseError::new(src, "empty expression", Span::default()));
    }
    let mut parser = Parser {
        src,
        tokens,
        pos: 0,
        depth: 0,
        accesses: Vec::new(),
    };
    let node = parser.parse_ternary().map_err(|error| *error)?;
    if let Some(token) = parser.peek() {
        return Err(*parser.error(
            format!(
                "trailing input after the expression: `{}`",
                parser.text(token.span)
            ),
            token.span,
        ));
    }
    Ok((*node.expr, parser.accesses))
}

/// 1-based character column of byte offset `byte` (counting every character that starts
/// before it, so it never panics off a character boundary).
fn column_at(src: &str, byte: usize) -> usize {
    src.char_indices().take_while(|&(i, _)| i < byte).count() + 1
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum TokenKind {
    Number(f64),
    Ident,
    Plus,
    Minus,
    Star,
    Slash,
    Lt,
    Le,
    Gt,
    Ge,
    EqEq,
    Ne,
    AndAnd,
    OrOr,
    Bang,
    Question,
    Colon,
    LParen,
    RParen,
    Comma,
}

#[derive(Clone, Copy, Debug)]
struct Token {
    kind: TokenKind,
    span: Span,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_continue(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn lex(src: &str) -> Result<Vec<Token>, ParseError> {
    let char_at = |p: usize| src.get(p..).and_then(|rest| rest.chars().next());
    let mut tokens = Vec::new();
    let mut pos = 0;
    while let Some(c) = char_at(pos) {
        let start = pos;
        if c.is_whitespace() {
            pos += c.len_utf8();
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && char_at(pos + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let (end, value) = lex_number(src, start)?;
            tokens.push(Token {
                kind: TokenKind::Number(value),
                span: Span { start, end },
            });
            pos = end;
            continue;
        }
        if is_ident_start(c) {
            pos += 1;
            while char_at(pos).is_some_and(is_ident_continue) {
                pos += 1;
            }
            tokens.push(Token {
                kind: TokenKind::Ident,
                span: Span { start, end: pos },
            });
            continue;
        }
        let next = char_at(pos + c.len_utf8());
        let (kind, len) = match (c, next) {
            ('+', _) => (TokenKind::Plus, 1),
            ('-', _) => (TokenKind::Minus, 1),
            ('*', _) => (TokenKind::Star, 1),
            ('/', _) => (TokenKind::Slash, 1),
            ('<', Some('=')) => (TokenKind::Le, 2),
            ('<', _) => (TokenKind::Lt, 1),
            ('>', Some('=')) => (TokenKind::Ge, 2),
            ('>', _) => (TokenKind::Gt, 1),
            ('=', Some('=')) => (TokenKind::EqEq, 2),
            ('!', Some('=')) => (TokenKind::Ne, 2),
            ('!', _) => (TokenKind::Bang, 1),
            ('&', Some('&')) => (TokenKind::AndAnd, 2),
            ('|', Some('|')) => (TokenKind::OrOr, 2),
            ('?', _) => (TokenKind::Question, 1),
            (':', _) => (TokenKind::Colon, 1),
            ('(', _) => (TokenKind::LParen, 1),
            (')', _) => (TokenKind::RParen, 1),
            (',', _) => (TokenKind::Comma, 1),
            _ => {
                let hint = match c {
                    '=' => "; equality is written `==` (there is no assignment)",
                    '&' => "; logical and is written `&&`",
                    '|' => "; logical or is written `||`",
                    '[' | ']' => "; arrays are accessed as `name(i, j, k)`",
                    _ => "",
                };
                return Err(ParseError::new(
                    src,
                    format!("unexpected character `{}`{hint}", c.escape_debug()),
                    Span {
                        start,
                        end: start + c.len_utf8(),
                    },
                ));
            }
        };
        pos += len;
        tokens.push(Token {
            kind,
            span: Span { start, end: pos },
        });
    }
    Ok(tokens)
}

/// Lexes a number literal starting at `start` (a digit, or `.` before a digit): `digits`,
/// `digits.`, `digits.digits`, `.digits`, each with an optional exponent `e[+-]digits`.
/// Returns the end offset and the value.
fn lex_number(src: &str, start: usize) -> Result<(usize, f64), ParseError> {
    let bytes = src.as_bytes();
    let is_digit = |p: usize| bytes.get(p).is_some_and(u8::is_ascii_digit);
    let mut pos = start;
    let mut malformed = false;
    while is_digit(pos) {
        pos += 1;
    }
    if bytes.get(pos) == Some(&b'.') {
        pos += 1;
        while is_digit(pos) {
            pos += 1;
        }
    }
    if matches!(bytes.get(pos), Some(b'e' | b'E')) {
        pos += 1;
        if matches!(bytes.get(pos), Some(b'+' | b'-')) {
            pos += 1;
        }
        if !is_digit(pos) {
            malformed = true;
        }
        while is_digit(pos) {
            pos += 1;
        }
    }
    // Letters, digits, `_` or `.` glued to the literal (`1.2.3`, `2x`, `1e`) make it malformed;
    // take them all so the message shows the whole word.
    while bytes
        .get(pos)
        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'.')
    {
        malformed = true;
        pos += 1;
    }
    // Only ASCII bytes were consumed, so both ends are character boundaries.
    let text = src.get(start..pos).unwrap_or_default();
    let span = Span { start, end: pos };
    // What an error quotes of the literal: its first 40 characters.
    let shown = match text.get(..40) {
        Some(head) if head.len() < text.len() => format!("{head}..."),
        _ => text.to_string(),
    };
    let value = match text.parse::<f64>() {
        Ok(value) if !malformed => value,
        _ => {
            return Err(ParseError::new(
                src,
                format!("invalid number literal `{shown}`"),
                span,
            ))
        }
    };
    if !value.is_finite() {
        return Err(ParseError::new(
            src,
            format!("number literal `{shown}` is too large for a double"),
            span,
        ));
    }
    Ok((pos, value))
}

/// A parsed subtree and its height (1 for a leaf), kept to bound [`MAX_TREE_DEPTH`]. Boxed,
/// like the errors in [`Parse`], so that the results the recursive functions pass around are
/// two words: nesting multiplies their frames, which are large in unoptimized builds.
struct Node {
    expr: Box<Expr>,
    height: usize,
}

impl Node {
    fn leaf(expr: Expr) -> Self {
        Node {
            expr: Box::new(expr),
            height: 1,
        }
    }
}

type Parse<T> = Result<T, Box<ParseError>>;

struct Parser<'s> {
    src: &'s str,
    tokens: Vec<Token>,
    pos: usize,
    /// Current nesting of parentheses, calls, unary operators and conditionals.
    depth: usize,
    accesses: Vec<AccessSpan>,
}

/// `expr?` for the recursive parsing functions: in unoptimized builds the `?` operator's
/// temporaries make each frame several times larger, and nesting multiplies frames.
macro_rules! propagate {
    ($result:expr) => {
        match $result {
            Ok(value) => value,
            Err(error) => return Err(error),
        }
    };
}

const ORDINALS: [&str; 3] = ["first", "second", "third"];

impl<'s> Parser<'s> {
    fn peek(&self) -> Option<Token> {
        self.tokens.get(self.pos).copied()
    }

    fn peek_kind(&self) -> Option<TokenKind> {
        self.peek().map(|t| t.kind)
    }

    fn peek_kind_at(&self, ahead: usize) -> Option<TokenKind> {
        self.tokens.get(self.pos + ahead).map(|t| t.kind)
    }

    fn bump(&mut self) {
        self.pos += 1;
    }

    fn text(&self, span: Span) -> &'s str {
        self.src.get(span.start..span.end).unwrap_or_default()
    }

    /// The current token's span, or an empty span at the end of the input.
    fn here(&self) -> Span {
        self.peek().map_or(
            Span {
                start: self.src.len(),
                end: self.src.len(),
            },
            |t| t.span,
        )
    }

    /// The current token for a "found ..." clause.
    /// The next token as an error quotes it: its first 40 characters.
    fn found(&self) -> String {
        match self.peek() {
            Some(t) => {
                let text = self.text(t.span);
                let shown: String = text.chars().take(40).collect();
                let more = if shown.len() < text.len() { "..." } else { "" };
                format!("`{shown}{more}`")
            }
            None => "end of expression".to_string(),
        }
    }

    fn error(&self, message: impl Into<String>, span: Span) -> Box<ParseError> {
        Box::new(ParseError::new(self.src, message, span))
    }

    fn column(&self, span: Span) -> usize {
        column_at(self.src, span.start)
    }

    /// Enters one level of nesting, refusing to go deeper than [`MAX_NESTING`].
    fn enter(&mut self) -> Parse<()> {
        if self.depth >= MAX_NESTING {
            return Err(self.too_nested_error());
        }
        self.depth += 1;
        Ok(())
    }

    /// Builds an inner node over children of the given heights, refusing trees deeper than
    /// [`MAX_TREE_DEPTH`]; `at` is the operator that would make it too deep.
    fn node(&self, expr: Expr, heights: impl IntoIterator<Item = usize>, at: Span) -> Parse<Node> {
        let height = 1 + heights.into_iter().max().unwrap_or(0);
        if height > MAX_TREE_DEPTH {
            return Err(self.too_deep_error(at));
        }
        Ok(Node {
            expr: Box::new(expr),
            height,
        })
    }

    #[cold]
    #[inline(never)]
    fn too_nested_error(&self) -> Box<ParseError> {
        self.error(
            format!("expression is nested too deeply (more than {MAX_NESTING} levels)"),
            self.here(),
        )
    }

    #[cold]
    #[inline(never)]
    fn too_deep_error(&self, at: Span) -> Box<ParseError> {
        self.error(
            format!(
                "expression is too deep (more than {MAX_TREE_DEPTH} nested operations); \
                 split it with `let` locals"
            ),
            at,
        )
    }

    // The recursive descent below keeps its frames small (nesting costs stack per level):
    // messages are formatted in the cold `*_error` functions, not in the recursive ones, and
    // binary operators are reduced with explicit stacks rather than one frame per level.

    /// `binary ('?' ternary ':' ternary)?` — right-associative.
    fn parse_ternary(&mut self) -> Parse<Node> {
        // Depth is restored on success only: an error ends the parse.
        propagate!(self.enter());
        let cond = propagate!(self.parse_binary());
        let node = if self.peek_kind() == Some(TokenKind::Question) {
            self.parse_conditional(cond)?
        } else {
            cond
        };
        self.depth -= 1;
        Ok(node)
    }

    /// At `?` after the condition: `'?' ternary ':' ternary`.
    #[inline(never)]
    fn parse_conditional(&mut self, cond: Node) -> Parse<Node> {
        let question = self.here();
        self.bump();
        let then = propagate!(self.parse_ternary());
        if self.peek_kind() != Some(TokenKind::Colon) {
            return Err(self.missing_colon_error(question));
        }
        self.bump();
        let otherwise = propagate!(self.parse_ternary());
        self.node(
            Expr::Ternary {
                cond: cond.expr,
                then: then.expr,
                otherwise: otherwise.expr,
            },
            [cond.height, then.height, otherwise.height],
            question,
        )
    }

    fn peek_binary_op(&self) -> Option<(BinaryOp, Span)> {
        let token = self.peek()?;
        let op = match token.kind {
            TokenKind::Plus => BinaryOp::Add,
            TokenKind::Minus => BinaryOp::Sub,
            TokenKind::Star => BinaryOp::Mul,
            TokenKind::Slash => BinaryOp::Div,
            TokenKind::Lt => BinaryOp::Lt,
            TokenKind::Le => BinaryOp::Le,
            TokenKind::Gt => BinaryOp::Gt,
            TokenKind::Ge => BinaryOp::Ge,
            TokenKind::EqEq => BinaryOp::Eq,
            TokenKind::Ne => BinaryOp::Ne,
            TokenKind::AndAnd => BinaryOp::And,
            TokenKind::OrOr => BinaryOp::Or,
            _ => return None,
        };
        Some((op, token.span))
    }

    /// `unary (op unary)*` over the left-associative binary operators, by operator precedence
    /// with an explicit stack of pending left operands: an operator first reduces every
    /// pending operator that binds at least as tightly (so equal precedence groups left).
    fn parse_binary(&mut self) -> Parse<Node> {
        let mut pending: Vec<(Node, BinaryOp, Span)> = Vec::new();
        let mut current = propagate!(self.parse_unary());
        while let Some((op, span)) = self.peek_binary_op() {
            self.bump();
            while pending
                .last()
                .is_some_and(|(_, top, _)| top.precedence() >= op.precedence())
            {
                if let Some((lhs, top, top_span)) = pending.pop() {
                    current = propagate!(self.binary_node(lhs, top, current, top_span));
                }
            }
            pending.push((current, op, span));
            current = propagate!(self.parse_unary());
        }
        while let Some((lhs, op, span)) = pending.pop() {
            current = propagate!(self.binary_node(lhs, op, current, span));
        }
        Ok(current)
    }

    fn binary_node(&self, lhs: Node, op: BinaryOp, rhs: Node, at: Span) -> Parse<Node> {
        self.node(
            Expr::Binary {
                op,
                lhs: lhs.expr,
                rhs: rhs.expr,
            },
            [lhs.height, rhs.height],
            at,
        )
    }

    /// `('-' | '!' | '+') unary | primary`; a unary `+` is dropped.
    fn parse_unary(&mut self) -> Parse<Node> {
        match self.peek_kind() {
            Some(TokenKind::Minus) => self.parse_prefixed(Some(UnaryOp::Neg)),
            Some(TokenKind::Bang) => self.parse_prefixed(Some(UnaryOp::Not)),
            Some(TokenKind::Plus) => self.parse_prefixed(None),
            _ => self.parse_primary(),
        }
    }

    /// At a prefix operator (`None` for the dropped `+`): the operator and its operand.
    #[inline(never)]
    fn parse_prefixed(&mut self, op: Option<UnaryOp>) -> Parse<Node> {
        let at = self.here();
        self.bump();
        propagate!(self.enter());
        let operand = propagate!(self.parse_unary());
        self.depth -= 1;
        match op {
            Some(op) => self.node(
                Expr::Unary {
                    op,
                    operand: operand.expr,
                },
                [operand.height],
                at,
            ),
            None => Ok(operand),
        }
    }

    /// A number, a parenthesized expression, a local, a call or an access.
    fn parse_primary(&mut self) -> Parse<Node> {
        match self.peek_kind() {
            Some(TokenKind::LParen) => self.parse_parenthesized(),
            Some(TokenKind::Number(value)) => Ok(self.parse_number(value)),
            Some(TokenKind::Ident) => self.parse_name(),
            _ => Err(self.missing_operand_error()),
        }
    }

    /// At `(`: `'(' ternary ')'`.
    #[inline(never)]
    fn parse_parenthesized(&mut self) -> Parse<Node> {
        let open = self.here();
        self.bump();
        let inner = propagate!(self.parse_ternary());
        if self.peek_kind() != Some(TokenKind::RParen) {
            return Err(self.unclosed_paren_error(open));
        }
        self.bump();
        Ok(inner)
    }

    /// At a number token, whose value the lexer computed.
    #[inline(never)]
    fn parse_number(&mut self, value: f64) -> Node {
        let span = self.here();
        self.bump();
        Node::leaf(Expr::Number {
            text: self.text(span).to_string(),
            value,
        })
    }

    /// At an identifier: a local, a call or an access.
    #[inline(never)]
    fn parse_name(&mut self) -> Parse<Node> {
        let name_span = self.here();
        self.bump();
        let name = self.text(name_span);
        let called = self.peek_kind() == Some(TokenKind::LParen);
        if let Some(func) = Func::from_name(name) {
            if called && !self.looks_like_access() {
                return self.parse_call(func, name_span);
            }
        } else if !called && !INDEX_NAMES.contains(&name) {
            return Ok(Node::leaf(Expr::Local(name.to_string())));
        } else if called
            && !INDEX_NAMES.contains(&name)
            && (self.looks_like_access() || !KNOWN_FOREIGN_FUNCTIONS.contains(&name))
        {
            return self.parse_access(name, name_span);
        }
        Err(self.misused_name_error(name_span, called))
    }

    /// At `(`: whether the parentheses start with an index (`i`, `i+`, `i-`, `i,`) as an
    /// access does.
    fn looks_like_access(&self) -> bool {
        let starts_with_i = self
            .tokens
            .get(self.pos + 1)
            .is_some_and(|t| t.kind == TokenKind::Ident && self.text(t.span) == INDEX_NAMES[0]);
        starts_with_i
            && matches!(
                self.peek_kind_at(2),
                Some(TokenKind::Plus | TokenKind::Minus | TokenKind::Comma)
            )
    }

    /// `func '(' (ternary (',' ternary)*)? ')'` with the function's arity.
    fn parse_call(&mut self, func: Func, name_span: Span) -> Parse<Node> {
        let open = self.here();
        self.bump();
        let mut args = Vec::new();
        let mut heights = Vec::new();
        let close = if self.peek_kind() == Some(TokenKind::RParen) {
            let close = self.here();
            self.bump();
            close
        } else {
            loop {
                let arg = propagate!(self.parse_ternary());
                args.push(*arg.expr);
                heights.push(arg.height);
                match self.peek_kind() {
                    Some(TokenKind::Comma) => self.bump(),
                    Some(TokenKind::RParen) => {
                        let close = self.here();
                        self.bump();
                        break close;
                    }
                    _ => return Err(self.unclosed_call_error(func, open)),
                }
            }
        };
        if args.len() != func.arity() {
            return Err(self.arity_error(func, args.len(), name_span, close));
        }
        self.node(Expr::Call { func, args }, heights, name_span)
    }

    #[cold]
    #[inline(never)]
    fn missing_colon_error(&self, question: Span) -> Box<ParseError> {
        self.error(
            format!(
                "expected `:` of the conditional whose `?` is at column {}, found {}",
                self.column(question),
                self.found()
            ),
            self.here(),
        )
    }

    #[cold]
    #[inline(never)]
    fn missing_operand_error(&self) -> Box<ParseError> {
        match self.peek() {
            None => self.error(
                "unexpected end of expression, expected an operand",
                self.here(),
            ),
            Some(token) => self.error(
                format!("expected an operand, found {}", self.found()),
                token.span,
            ),
        }
    }

    #[cold]
    #[inline(never)]
    fn unclosed_paren_error(&self, open: Span) -> Box<ParseError> {
        self.error(
            format!(
                "expected `)` to close the `(` opened at column {}, found {}",
                self.column(open),
                self.found()
            ),
            self.here(),
        )
    }

    #[cold]
    #[inline(never)]
    fn unclosed_call_error(&self, func: Func, open: Span) -> Box<ParseError> {
        self.error(
            format!(
                "expected `)` to close the call of `{}` opened at column {}, found {}",
                func.name(),
                self.column(open),
                self.found()
            ),
            self.here(),
        )
    }

    #[cold]
    #[inline(never)]
    fn arity_error(&self, func: Func, got: usize, name_span: Span, close: Span) -> Box<ParseError> {
        let plural = if func.arity() == 1 { "" } else { "s" };
        self.error(
            format!(
                "`{}` takes {} argument{plural}, got {got}",
                func.name(),
                func.arity(),
            ),
            Span {
                start: name_span.start,
                end: close.end,
            },
        )
    }

    /// An index variable or function name used as a value or array, or an unknown function.
    #[cold]
    #[inline(never)]
    fn misused_name_error(&self, name_span: Span, called: bool) -> Box<ParseError> {
        let name = self.text(name_span);
        let message = if INDEX_NAMES.contains(&name) {
            let role = if called { "an array name" } else { "a value" };
            format!("`{name}` is an index variable and cannot be used as {role}")
        } else if Func::from_name(name).is_some() {
            if called {
                format!("`{name}` is a function name and cannot be used as an array name")
            } else {
                format!(
                    "`{name}` is a function name and cannot be used as a value; \
                     call it as `{name}(...)`"
                )
            }
        } else {
            format!(
                "unknown function `{name}`; the functions are {}",
                Func::ALL.map(Func::name).join(", ")
            )
        };
        self.error(message, name_span)
    }

    /// `name '(' 'i' offset? ',' 'j' offset? ',' 'k' offset? ')'` where
    /// `offset = ('+' | '-') integer`.
    fn parse_access(&mut self, array: &str, name_span: Span) -> Parse<Node> {
        let open = self.here();
        self.bump();
        let mut offset = [0i32; 3];
        for (d, index) in INDEX_NAMES.iter().enumerate() {
            match self.peek() {
                Some(t) if t.kind == TokenKind::Ident && self.text(t.span) == *index => self.bump(),
                Some(t) if t.kind == TokenKind::RParen => {
                    return Err(self.error(
                        format!("an access to `{array}` needs three indices (i, j, k), found {d}"),
                        t.span,
                    ))
                }
                _ => {
                    return Err(self.error(
                        format!(
                            "the {} index of an access must be `{index}` with an optional \
                             constant offset, found {}",
                            ORDINALS[d],
                            self.found()
                        ),
                        self.here(),
                    ))
                }
            }
            if let Some(sign @ (TokenKind::Plus | TokenKind::Minus)) = self.peek_kind() {
                self.bump();
                offset[d] = self.parse_offset(sign == TokenKind::Minus)?;
            }
            let separator = self.peek();
            match (d, separator.map(|t| t.kind)) {
                (0 | 1, Some(TokenKind::Comma)) | (2, Some(TokenKind::RParen)) => self.bump(),
                (0 | 1, Some(TokenKind::RParen)) => {
                    return Err(self.error(
                        format!(
                            "an access to `{array}` needs three indices (i, j, k), found {}",
                            d + 1
                        ),
                        self.here(),
                    ))
                }
                (0 | 1, _) => {
                    return Err(self.error(
                        format!(
                            "expected `,` after the {} index of the access to `{array}`, \
                             found {}",
                            ORDINALS[d],
                            self.found()
                        ),
                        self.here(),
                    ))
                }
                (_, Some(TokenKind::Comma)) => {
                    return Err(self.error(
                        format!("an access to `{array}` takes exactly three indices (i, j, k)"),
                        self.here(),
                    ))
                }
                _ => {
                    return Err(self.error(
                        format!(
                            "expected `)` to close the access to `{array}` opened at column \
                             {}, found {}",
                            self.column(open),
                            self.found()
                        ),
                        self.here(),
                    ))
                }
            }
        }
        // The loop consumed the closing `)` last.
        let close_end = self
            .tokens
            .get(self.pos - 1)
            .map_or(self.src.len(), |t| t.span.end);
        self.accesses.push(AccessSpan {
            array: array.to_string(),
            offset,
            span: Span {
                start: name_span.start,
                end: close_end,
            },
        });
        Ok(Node::leaf(Expr::Access {
            array: array.to_string(),
            offset,
        }))
    }

    /// After the sign of an offset: an integer literal of at most
    /// [`MAX_OFFSET`](crate::formats::limits::MAX_OFFSET).
    fn parse_offset(&mut self, negative: bool) -> Parse<i32> {
        let token = self.peek();
        let digits = match token {
            Some(t) if matches!(t.kind, TokenKind::Number(_)) => {
                let text = self.text(t.span);
                text.bytes()
                    .all(|b| b.is_ascii_digit())
                    .then_some((text, t.span))
            }
            _ => None,
        };
        let Some((text, span)) = digits else {
            return Err(self.error(
                format!("offset must be an integer constant, found {}", self.found()),
                self.here(),
            ));
        };
        self.bump();
        let max = crate::formats::limits::MAX_OFFSET;
        let value =
            text.parse::<i32>()
                .ok()
                .filter(|m| *m <= max)
                .map(|m| if negative { -m } else { m });
        value.ok_or_else(|| {
            let sign = if negative { "-" } else { "+" };
            let shown: String = text.chars().take(24).collect();
            let more = if shown.len() < text.len() { "..." } else { "" };
            self.error(
                format!("offset `{sign}{shown}{more}` is out of range: an offset is at most {max} cells (the largest halo absinthe accepts)"),
                span,
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn num(text: &str) -> Expr {
        Expr::Number {
            text: text.to_string(),
            value: text.parse().expect("test literal"),
        }
    }

    fn local(name: &str) -> Expr {
        Expr::Local(name.to_string())
    }

    fn access(array: &str, offset: [i32; 3]) -> Expr {
        Expr::Access {
            array: array.to_string(),
            offset,
        }
    }

    fn unary(op: UnaryOp, operand: Expr) -> Expr {
        Expr::Unary {
            op,
            operand: Box::new(operand),
        }
    }

    fn binary(op: BinaryOp, lhs: Expr, rhs: Expr) -> Expr {
        Expr::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        }
    }

    fn ternary(cond: Expr, then: Expr, otherwise: Expr) -> Expr {
        Expr::Ternary {
            cond: Box::new(cond),
            then: Box::new(then),
            otherwise: Box::new(otherwise),
        }
    }

    fn call(func: Func, args: Vec<Expr>) -> Expr {
        Expr::Call { func, args }
    }

    fn parse(src: &str) -> Expr {
        parse_expr(src).unwrap_or_else(|e| panic!("`{src}` should parse: {e}"))
    }

    fn a() -> Expr {
        local("a")
    }
    fn b() -> Expr {
        local("b")
    }
    fn c() -> Expr {
        local("c")
    }
    fn d() -> Expr {
        local("d")
    }
    fn e() -> Expr {
        local("e")
    }

    use BinaryOp::*;
    use UnaryOp::*;

    #[test]
    fn literals_keep_their_text_and_value() {
        for (text, value) in [
            ("1", 1.0),
            ("0.5", 0.5),
            ("1.0e-3", 0.001),
            (".5", 0.5),
            ("2.", 2.0),
            ("1E+3", 1000.0),
            ("1.e5", 100000.0),
            ("007", 7.0),
        ] {
            assert_eq!(
                parse(text),
                Expr::Number {
                    text: text.to_string(),
                    value
                },
                "{text}"
            );
        }
        assert_eq!(parse("  ( 0.25 )  "), num("0.25"));
    }

    #[test]
    fn names_parse_to_locals_and_accesses() {
        assert_eq!(parse("d"), local("d"));
        assert_eq!(parse("_x9"), local("_x9"));
        assert_eq!(parse("in2"), local("in2"));
        assert_eq!(parse("in(i, j, k)"), access("in", [0, 0, 0]));
        assert_eq!(parse("in(i-1,j,k+2)"), access("in", [-1, 0, 2]));
        assert_eq!(
            parse("  lap ( i + 3 ,j- 2,\tk+0 ) "),
            access("lap", [3, -2, 0])
        );
        assert_eq!(parse("x(i-0,j+10,k-7)"), access("x", [0, 10, -7]));
        // Index-like and function-like prefixes are ordinary names.
        assert_eq!(
            parse("ii + kk + sqrt2"),
            binary(Add, binary(Add, local("ii"), local("kk")), local("sqrt2"))
        );
        assert_eq!(parse("sin(i, j, k)"), access("sin", [0, 0, 0]));
        assert_eq!(
            parse("a(i-65536, j+65536, k)"),
            access("a", [-65536, 65536, 0])
        );
    }

    #[test]
    fn unary_operators() {
        assert_eq!(parse("-a"), unary(Neg, a()));
        assert_eq!(parse("!a"), unary(Not, a()));
        assert_eq!(parse("+a"), a());
        assert_eq!(parse("+-+a"), unary(Neg, a()));
        assert_eq!(parse("--a"), unary(Neg, unary(Neg, a())));
        assert_eq!(parse("-!a"), unary(Neg, unary(Not, a())));
        assert_eq!(parse("-1"), unary(Neg, num("1")));
        assert_eq!(parse("- in(i,j,k)"), unary(Neg, access("in", [0; 3])));
    }

    #[test]
    fn every_binary_operator() {
        for (src, op) in [
            ("a + b", Add),
            ("a - b", Sub),
            ("a * b", Mul),
            ("a / b", Div),
            ("a < b", Lt),
            ("a <= b", Le),
            ("a > b", Gt),
            ("a >= b", Ge),
            ("a == b", Eq),
            ("a != b", Ne),
            ("a && b", And),
            ("a || b", Or),
        ] {
            assert_eq!(parse(src), binary(op, a(), b()), "{src}");
            assert_eq!(parse(&src.replace(' ', "")), binary(op, a(), b()), "{src}");
            assert_eq!(op.symbol(), src.split(' ').nth(1).unwrap_or_default());
        }
        assert_eq!(BinaryOp::ALL.len(), 12);
    }

    #[test]
    fn every_function() {
        for func in Func::ALL {
            let args: Vec<Expr> = [a(), b()].into_iter().take(func.arity()).collect();
            let src = if func.arity() == 1 {
                format!("{}(a)", func.name())
            } else {
                format!("{}( a ,b )", func.name())
            };
            assert_eq!(parse(&src), call(func, args), "{src}");
            assert_eq!(Func::from_name(func.name()), Some(func));
        }
        assert_eq!(Func::Pow.arity(), 2);
        assert_eq!(Func::Min.arity(), 2);
        assert_eq!(Func::Max.arity(), 2);
        assert_eq!(Func::Fabs.arity(), 1);
        assert_eq!(Func::from_name("sin"), None);
        assert_eq!(Func::from_name("Sqrt"), None);
        assert_eq!(
            parse("max(a ? b : c, min(d, e))"),
            call(
                Func::Max,
                vec![ternary(a(), b(), c()), call(Func::Min, vec![d(), e()])]
            )
        );
    }

    #[test]
    fn precedence_and_associativity() {
        let cases = [
            ("a+b*c", binary(Add, a(), binary(Mul, b(), c()))),
            ("a*b+c", binary(Add, binary(Mul, a(), b()), c())),
            ("a-b-c", binary(Sub, binary(Sub, a(), b()), c())),
            ("a-(b-c)", binary(Sub, a(), binary(Sub, b(), c()))),
            ("a*b/c", binary(Div, binary(Mul, a(), b()), c())),
            ("a/b*c", binary(Mul, binary(Div, a(), b()), c())),
            ("-a*b", binary(Mul, unary(Neg, a()), b())),
            ("-(a*b)", unary(Neg, binary(Mul, a(), b()))),
            (
                "!a && b || c",
                binary(Or, binary(And, unary(Not, a()), b()), c()),
            ),
            ("a || b && c", binary(Or, a(), binary(And, b(), c()))),
            (
                "a < b == c > d",
                binary(Eq, binary(Lt, a(), b()), binary(Gt, c(), d())),
            ),
            ("a == b != c", binary(Ne, binary(Eq, a(), b()), c())),
            ("a < b + c", binary(Lt, a(), binary(Add, b(), c()))),
            (
                "a ? b : c ? d : e",
                ternary(a(), b(), ternary(c(), d(), e())),
            ),
            (
                "(a ? b : c) ? d : e",
                ternary(ternary(a(), b(), c()), d(), e()),
            ),
            (
                "a ? b ? c : d : e",
                ternary(a(), ternary(b(), c(), d()), e()),
            ),
            (
                "a || b ? c + d : e",
                ternary(binary(Or, a(), b()), binary(Add, c(), d()), e()),
            ),
            ("a - -b", binary(Sub, a(), unary(Neg, b()))),
            ("a--b", binary(Sub, a(), unary(Neg, b()))),
            (
                "-4.0 * in(i,j,k) + in(i-1,j,k)",
                binary(
                    Add,
                    binary(Mul, unary(Neg, num("4.0")), access("in", [0; 3])),
                    access("in", [-1, 0, 0]),
                ),
            ),
        ];
        for (src, expected) in cases {
            assert_eq!(parse(src), expected, "{src}");
        }
    }

    #[test]
    fn display_uses_minimal_parentheses() {
        let cases = [
            (binary(Sub, a(), binary(Sub, b(), c())), "a - (b - c)"),
            (binary(Sub, binary(Sub, a(), b()), c()), "a - b - c"),
            (binary(Add, a(), binary(Add, b(), c())), "a + (b + c)"),
            (binary(Mul, binary(Add, a(), b()), c()), "(a + b) * c"),
            (binary(Add, a(), binary(Mul, b(), c())), "a + b * c"),
            (binary(Mul, a(), binary(Div, b(), c())), "a * (b / c)"),
            (unary(Neg, unary(Neg, a())), "- -a"),
            (unary(Neg, num("1")), "-1"),
            (unary(Not, unary(Not, a())), "!!a"),
            (binary(Sub, a(), unary(Neg, b())), "a - -b"),
            (unary(Neg, binary(Mul, a(), b())), "-(a * b)"),
            (binary(Mul, unary(Neg, a()), b()), "-a * b"),
            (unary(Not, binary(Lt, a(), b())), "!(a < b)"),
            (
                ternary(ternary(a(), b(), c()), d(), e()),
                "(a ? b : c) ? d : e",
            ),
            (
                ternary(a(), b(), ternary(c(), d(), e())),
                "a ? b : c ? d : e",
            ),
            (
                ternary(a(), ternary(b(), c(), d()), e()),
                "a ? b ? c : d : e",
            ),
            (binary(Add, ternary(a(), b(), c()), d()), "(a ? b : c) + d"),
            (binary(Or, binary(And, a(), b()), c()), "a && b || c"),
            (binary(And, a(), binary(Or, b(), c())), "a && (b || c)"),
            (access("in", [-1, 0, 2]), "in(i-1, j, k+2)"),
            (
                call(Func::Pow, vec![a(), binary(Add, b(), num("1"))]),
                "pow(a, b + 1)",
            ),
            (num("1.0e-3"), "1.0e-3"),
        ];
        for (expr, text) in cases {
            assert_eq!(expr.to_string(), text);
            assert_eq!(parse(text), expr, "{text}");
        }
    }

    #[test]
    fn spans_list_accesses_in_source_order() {
        let src = "in(i-1,j,k) + 2*out( i , j+1 , k )";
        let (expr, spans) = parse_expr_spanned(src).expect("parses");
        assert_eq!(
            spans,
            vec![
                AccessSpan {
                    array: "in".into(),
                    offset: [-1, 0, 0],
                    span: Span { start: 0, end: 11 }
                },
                AccessSpan {
                    array: "out".into(),
                    offset: [0, 1, 0],
                    span: Span { start: 16, end: 34 }
                },
            ]
        );
        assert_eq!(&src[16..34], "out( i , j+1 , k )");
        let mut visited = Vec::new();
        expr.visit_accesses(&mut |array, offset| visited.push((array.to_string(), offset)));
        assert_eq!(
            visited,
            vec![
                ("in".to_string(), [-1, 0, 0]),
                ("out".to_string(), [0, 1, 0])
            ]
        );
    }

    #[test]
    fn visitors_walk_in_source_order() {
        let expr = parse("d * (in(i+1,j,k) - lap(i,j,k-1)) > 0.0 ? e : min(d, x(i,j+2,k))");
        let mut arrays = Vec::new();
        expr.visit_accesses(&mut |array, offset| arrays.push(format!("{array}{offset:?}")));
        assert_eq!(arrays, ["in[1, 0, 0]", "lap[0, 0, -1]", "x[0, 2, 0]"]);
        let mut locals = Vec::new();
        expr.visit_locals(&mut |name| locals.push(name));
        assert_eq!(locals, ["d", "e", "d"]);
    }

    #[test]
    fn malformed_inputs_name_the_problem_and_column() {
        let cases: &[(&str, &str, usize)] = &[
            ("", "empty expression", 1),
            ("   ", "empty expression", 1),
            ("sqrt(a b", "expected `)` to close the call of `sqrt` opened at column 5, found `b`", 8),
            ("sin(x)", "unknown function `sin`; the functions are sqrt, fabs, abs, exp, log, pow, min, max, floor, ceil", 1),
            ("1 + pow(a)", "`pow` takes 2 arguments, got 1", 5),
            ("sqrt(a, b)", "`sqrt` takes 1 argument, got 2", 1),
            ("pow()", "`pow` takes 2 arguments, got 0", 1),
            ("in(i, i, k)", "the second index of an access must be `j` with an optional constant offset, found `i`", 7),
            ("in(j, i, k)", "the first index of an access must be `i` with an optional constant offset, found `j`", 4),
            ("f(x)", "the first index of an access must be `i`", 3),
            ("in(i+1.5, j, k)", "offset must be an integer constant, found `1.5`", 6),
            ("in(i, j, k+x)", "offset must be an integer constant, found `x`", 12),
            ("in(i+99999999999, j, k)", "offset `+99999999999` is out of range: an offset is at most 65536 cells", 6),
            ("in(i-65537, j, k)", "offset `-65537` is out of range", 6),
            ("in(i, j)", "an access to `in` needs three indices (i, j, k), found 2", 8),
            ("in()", "an access to `in` needs three indices (i, j, k), found 0", 4),
            ("in(i, j, k, l)", "an access to `in` takes exactly three indices", 11),
            ("in(i j, k)", "expected `,` after the first index of the access to `in`, found `j`", 6),
            ("in(i, j, k", "expected `)` to close the access to `in` opened at column 3, found end of expression", 11),
            ("a *", "unexpected end of expression, expected an operand", 4),
            ("-", "unexpected end of expression, expected an operand", 2),
            ("a ? b : ", "unexpected end of expression, expected an operand", 9),
            ("a + )", "expected an operand, found `)`", 5),
            ("min(a, )", "expected an operand, found `)`", 8),
            ("a # b", "unexpected character `#`", 3),
            ("a = b", "unexpected character `=`; equality is written `==`", 3),
            ("a & b", "unexpected character `&`; logical and is written `&&`", 3),
            ("(a))", "trailing input after the expression: `)`", 4),
            ("a b", "trailing input after the expression: `b`", 3),
            ("k + 1", "`k` is an index variable and cannot be used as a value", 1),
            ("2 * i(i, j, k)", "`i` is an index variable and cannot be used as an array name", 5),
            ("sqrt + 1", "`sqrt` is a function name and cannot be used as a value", 1),
            ("min(i, j, k)", "`min` is a function name and cannot be used as an array name", 1),
            ("1e + 2", "invalid number literal `1e`", 1),
            ("x + 1.2.3", "invalid number literal `1.2.3`", 5),
            ("2x", "invalid number literal `2x`", 1),
            ("1e-", "invalid number literal `1e-`", 1),
            ("1e999", "number literal `1e999` is too large for a double", 1),
            ("2 * (a + b", "expected `)` to close the `(` opened at column 5, found end of expression", 11),
            ("a ? b", "expected `:` of the conditional whose `?` is at column 3, found end of expression", 6),
            ("a ? b ; c", "unexpected character `;`", 7),
            // Columns count characters, not bytes: each U+3000 is three bytes.
            ("\u{3000}\u{3000}#", "unexpected character `#`", 3),
            ("\u{3000}é + a", "unexpected character `é`", 2),
            ("a + ×", "unexpected character `×`", 5),
        ];
        assert!(cases.len() >= 20);
        for &(src, message, column) in cases {
            let err = match parse_expr(src) {
                Ok(expr) => panic!("`{src}` should fail but parsed to {expr:?}"),
                Err(err) => err,
            };
            assert!(
                err.message.contains(message),
                "`{src}`: message `{}` lacks `{message}`",
                err.message
            );
            assert_eq!(err.column(), column, "`{src}`: column of `{}`", err.message);
            assert_eq!(err.to_string(), format!("column {column}: {}", err.message));
            assert!(err.span.start <= err.span.end && err.span.end <= src.len());
            assert!(src.is_char_boundary(err.span.start) && src.is_char_boundary(err.span.end));
        }
    }

    #[test]
    fn error_spans_cover_the_offending_text() {
        let src = "a + sin(x)";
        let err = parse_expr(src).expect_err("unknown function");
        assert_eq!(&src[err.span.start..err.span.end], "sin");
        let src = "in(i+1.5, j, k)";
        let err = parse_expr(src).expect_err("bad offset");
        assert_eq!(&src[err.span.start..err.span.end], "1.5");
        let src = "pow(a)";
        let err = parse_expr(src).expect_err("arity");
        assert_eq!(&src[err.span.start..err.span.end], "pow(a)");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let nested = |n: usize| format!("{}a{}", "(".repeat(n), ")".repeat(n));
        assert_eq!(parse(&nested(200)), a());
        for src in [
            nested(300),
            "(".repeat(100_000),
            format!("{}a", "-".repeat(100_000)),
            format!("{}a", "!".repeat(300)),
            format!("{}a", "sqrt(".repeat(300)),
            "a ? b : ".repeat(300) + "c",
        ] {
            let err = parse_expr(&src).expect_err("too deep");
            assert!(
                err.message
                    .contains("nested too deeply (more than 256 levels)"),
                "{}",
                err.message
            );
        }
        // The worst case for the parser's stack per level: every precedence level in a row.
        // Right at the limit (the whole expression is one level, each `(`, call, `?` branch
        // and unary operator one more), every kind of nesting still parses and prints back.
        for (prefix, closing, levels) in [
            ("a * (", ")", 255),
            ("-(", ")", 127),
            ("sqrt(", ")", 255),
            ("max(a, ", ")", 255),
            ("a ? b : ", "", 255),
            ("a ? (", ") : c", 127),
            // Every precedence level on the way down, with the tree still under its limit.
            ("a || b && c == d < e + f * (", ")", 140),
        ] {
            let nest = |n: usize| format!("{}g{}", prefix.repeat(n), closing.repeat(n));
            let expr =
                parse_expr(&nest(levels)).unwrap_or_else(|e| panic!("`{prefix}` x {levels}: {e}"));
            assert_eq!(parse(&expr.to_string()), expr);
            if levels >= 255 {
                let err = parse_expr(&nest(levels + 1)).expect_err("past the limit");
                assert!(err.message.contains("nested too deeply"), "{}", err.message);
            }
        }
    }

    #[test]
    fn long_chains_are_bounded() {
        let sum = |n: usize| vec!["a"; n].join(" + ");
        let expr = parse(&sum(1000));
        assert_eq!(parse(&expr.to_string()), expr);
        let err = parse_expr(&sum(5000)).expect_err("too deep");
        assert!(err.message.contains("too deep"), "{}", err.message);
        assert!(err.column() > 1);
    }

    const LITERALS: [&str; 9] = ["0", "1", "0.5", "2.25", "1.0e-3", "3.", "10", ".5", "4E+2"];
    const NAMES: [&str; 14] = [
        "a", "b", "in", "out", "x1", "_t", "i2", "jj", "k_", "sqrtx", "pow2", "e", "E", "e1",
    ];

    fn arb_name() -> impl Strategy<Value = String> {
        let first = prop::sample::select(b"abcdefgijkxyzABE_".to_vec());
        let rest = prop::collection::vec(prop::sample::select(b"aeijk019_XZ".to_vec()), 0..4);
        prop_oneof![
            prop::sample::select(NAMES.to_vec()).prop_map(str::to_string),
            (first, rest).prop_map(|(f, r)| {
                std::iter::once(f)
                    .chain(r)
                    .map(char::from)
                    .collect::<String>()
            }),
        ]
        .prop_filter("reserved name", |n| {
            !INDEX_NAMES.contains(&n.as_str()) && Func::from_name(n).is_none()
        })
    }

    fn arb_expr() -> impl Strategy<Value = Expr> {
        let leaf = prop_oneof![
            prop::sample::select(LITERALS.to_vec()).prop_map(num),
            arb_name().prop_map(Expr::Local),
            (arb_name(), prop::array::uniform3(-5i32..=5))
                .prop_map(|(array, offset)| Expr::Access { array, offset }),
        ];
        leaf.prop_recursive(6, 48, 3, |inner| {
            prop_oneof![
                (prop::sample::select(vec![Neg, Not]), inner.clone())
                    .prop_map(|(op, operand)| unary(op, operand)),
                (
                    prop::sample::select(BinaryOp::ALL.to_vec()),
                    inner.clone(),
                    inner.clone()
                )
                    .prop_map(|(op, lhs, rhs)| binary(op, lhs, rhs)),
                (inner.clone(), inner.clone(), inner.clone())
                    .prop_map(|(c, t, o)| ternary(c, t, o)),
                (
                    prop::sample::select(Func::ALL.to_vec()),
                    prop::collection::vec(inner, 2)
                )
                    .prop_map(|(func, mut args)| {
                        args.truncate(func.arity());
                        call(func, args)
                    }),
            ]
        })
    }

    const TOKEN_ALPHABET: [&str; 44] = [
        "a", "in", "x1", "(", ")", "i", "j", "k", "+", "-", "*", "/", "<", "<=", ">", ">=", "==",
        "!=", "&&", "||", "!", "?", ":", ",", "1", "0.5", "1e", "2.", ".5", "1e-3", "sqrt", "pow",
        "min", "sin", " ", " ", "#", "é", ".", "=", "&", "\u{3000}", "e", "_",
    ];

    fn check_error(src: &str, err: &ParseError) {
        assert!(err.span.start <= err.span.end && err.span.end <= src.len());
        assert!(src.is_char_boundary(err.span.start) && src.is_char_boundary(err.span.end));
        assert!(err.column() >= 1 && err.column() <= src.chars().count() + 1);
        assert!(!err.message.is_empty());
    }

    /// Whatever parses prints back to text that parses to the same tree.
    fn check_any(src: &str) {
        match parse_expr_spanned(src) {
            Ok((expr, spans)) => {
                assert_eq!(parse_expr(&expr.to_string()).as_ref(), Ok(&expr), "{src}");
                for s in spans {
                    let text = src
                        .get(s.span.start..s.span.end)
                        .expect("span on boundaries");
                    assert_eq!(
                        parse_expr(text),
                        Ok(Expr::Access {
                            array: s.array,
                            offset: s.offset
                        })
                    );
                }
            }
            Err(err) => check_error(src, &err),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn printing_round_trips(expr in arb_expr()) {
            let text = expr.to_string();
            prop_assert_eq!(parse_expr(&text), Ok(expr.clone()), "printed as `{}`", text);
            let (_, spans) = parse_expr_spanned(&text).expect("parsed above");
            let mut visited = Vec::new();
            expr.visit_accesses(&mut |array, offset| visited.push((array.to_string(), offset)));
            let listed: Vec<_> = spans.iter().map(|s| (s.array.clone(), s.offset)).collect();
            prop_assert_eq!(listed, visited);
        }

        #[test]
        fn never_panics_on_token_soup(
            parts in prop::collection::vec(prop::sample::select(TOKEN_ALPHABET.to_vec()), 0..24)
        ) {
            check_any(&parts.concat());
        }

        #[test]
        fn never_panics_on_arbitrary_text(chars in prop::collection::vec(any::<char>(), 0..32)) {
            check_any(&chars.into_iter().collect::<String>());
        }

        #[test]
        fn never_panics_on_printable_ascii(bytes in prop::collection::vec(0x20u8..0x7f, 0..32)) {
            check_any(&bytes.into_iter().map(char::from).collect::<String>());
        }
    }
}
