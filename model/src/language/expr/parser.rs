//! The recursive-descent parser, its syntax errors and its limits.

use super::lexer::{column_at, lex, Span, Token, TokenKind};
use super::{BinaryOp, Dims, Expr, Func, UnaryOp, INDEX_NAMES};

/// Deepest nesting of parentheses, calls, unary operators and conditionals the parser accepts;
/// deeper input is an error rather than a stack overflow.
pub const MAX_NESTING: usize = 256;

/// Deepest expression tree the parser builds (a sum of n terms is n deep), so that recursive
/// walks over a parsed [`Expr`] (printing, comparing, evaluating, generating code) need a
/// bounded stack. At both limits, parsing, printing, comparing and dropping fit in 512 KiB of
/// stack in an unoptimized build (the tests run on 2 MiB threads).
pub const MAX_TREE_DEPTH: usize = 1024;

/// Functions that C programmers may reach for but the language lacks; calling one is reported
/// as an unknown function rather than as a malformed array access.
const KNOWN_FOREIGN_FUNCTIONS: &[&str] = &[
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "exp2", "expm1", "log2", "log10", "log1p", "cbrt", "hypot", "fmin", "fmax", "fmod",
    "round", "trunc", "rint", "lround", "fma", "erf", "erfc", "tgamma", "lgamma", "copysign",
    "sqrtf", "fabsf", "powf", "expf", "logf", "floorf", "ceilf", "fminf", "fmaxf", "sign", "sgn",
    "square", "sq", "ln",
];

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
    /// The indices written.
    pub dims: Dims,
    /// From the first character of the name to the closing `)`.
    pub span: Span,
}

/// Parses an expression.
///
/// ```
/// use absinthe_model::language::expr::{parse_expr, BinaryOp, Expr};
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

    /// `name '(' index (',' index)* ')'` where `index = ('i' | 'j' | 'k') (('+' | '-')
    /// integer)?`, the indices in the order i, j, k, each at most once: all three for a 3-D
    /// array, the field's own for a field (`dz(k+1)`, `hsurf(i-1, j)`; which ones an array takes
    /// is checked against `fields:` by the program reader).
    fn parse_access(&mut self, array: &str, name_span: Span) -> Parse<Node> {
        let open = self.here();
        self.bump();
        let mut offset = [0i32; 3];
        let mut dims = [false; 3];
        let mut last: Option<usize> = None;
        loop {
            let token = self.peek();
            let d = token
                .filter(|t| t.kind == TokenKind::Ident)
                .and_then(|t| INDEX_NAMES.iter().position(|n| *n == self.text(t.span)));
            let Some(d) = d else {
                let message = match (last, token.map(|t| t.kind)) {
                    (None, Some(TokenKind::RParen)) => format!(
                        "an access to `{array}` needs its indices (i, j, k, or a field's own), found `)`"
                    ),
                    // `foo(x)`: a name that is not a function reads an array, which may be
                    // a misspelt function.
                    (None, _) => format!(
                        "`{array}(...)` reads the array `{array}` (no function has that name; the \
                         functions are {}), and an index of an access must be `i`, `j` or `k` \
                         with an optional constant offset, found {}",
                        Func::ALL.map(Func::name).join(", "),
                        self.found()
                    ),
                    _ => format!(
                        "an index of an access must be `i`, `j` or `k` with an optional constant \
                         offset, found {}",
                        self.found()
                    ),
                };
                return Err(self.error(message, self.here()));
            };
            if let Some(l) = last.filter(|&l| l >= d) {
                return Err(self.error(
                    format!(
                        "the indices of an access are i, j, k in this order, each at most once: \
                         `{}` after `{}`",
                        INDEX_NAMES[d], INDEX_NAMES[l]
                    ),
                    self.here(),
                ));
            }
            self.bump();
            dims[d] = true;
            last = Some(d);
            if let Some(sign @ (TokenKind::Plus | TokenKind::Minus)) = self.peek_kind() {
                self.bump();
                offset[d] = self.parse_offset(sign == TokenKind::Minus)?;
            }
            match self.peek_kind() {
                Some(TokenKind::RParen) => {
                    self.bump();
                    break;
                }
                Some(TokenKind::Comma) if d < 2 => self.bump(),
                Some(TokenKind::Comma) => {
                    return Err(self.error(
                        format!(
                            "an access to `{array}` lists its indices as i, j, k in this order, \
                             each at most once: nothing may follow `k`"
                        ),
                        self.here(),
                    ))
                }
                _ => {
                    return Err(self.error(
                        format!(
                            "expected `,` or `)` after the index `{}` of the access to `{array}` \
                             opened at column {}, found {}",
                            INDEX_NAMES[d],
                            self.column(open),
                            self.found()
                        ),
                        self.here(),
                    ))
                }
            }
        }
        let dims = Dims(dims);
        // The loop consumed the closing `)` last.
        let close_end = self
            .tokens
            .get(self.pos - 1)
            .map_or(self.src.len(), |t| t.span.end);
        self.accesses.push(AccessSpan {
            array: array.to_string(),
            offset,
            dims,
            span: Span {
                start: name_span.start,
                end: close_end,
            },
        });
        Ok(Node::leaf(Expr::Access {
            array: array.to_string(),
            offset,
            dims,
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
