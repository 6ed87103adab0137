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
        dims: Dims::ALL,
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
                dims: Dims::ALL,
                span: Span { start: 0, end: 11 }
            },
            AccessSpan {
                array: "out".into(),
                offset: [0, 1, 0],
                dims: Dims::ALL,
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
        ("in(i, i, k)", "the indices of an access are i, j, k in this order, each at most once: `i` after `i`", 7),
        ("in(j, i, k)", "the indices of an access are i, j, k in this order, each at most once: `i` after `j`", 7),
        ("f(x)", "an index of an access must be `i`, `j` or `k` with an optional constant offset, found `x`", 3),
        ("in(i+1.5, j, k)", "offset must be an integer constant, found `1.5`", 6),
        ("in(i, j, k+x)", "offset must be an integer constant, found `x`", 12),
        ("in(i+99999999999, j, k)", "offset `+99999999999` is out of range: an offset is at most 65536 cells", 6),
        ("in(i-65537, j, k)", "offset `-65537` is out of range", 6),
        ("in()", "an access to `in` needs its indices (i, j, k, or a field's own), found `)`", 4),
        (
            "in(i, j, k, l)",
            "an access to `in` lists its indices as i, j, k in this order, each at most once: nothing may follow `k`",
            11,
        ),
        (
            "in(k, i, j)",
            "an access to `in` lists its indices as i, j, k in this order, each at most once: nothing may follow `k`",
            5,
        ),
        ("in(i j, k)", "expected `,` or `)` after the index `i` of the access to `in` opened at column 3, found `j`", 6),
        ("in(i, j, k", "expected `,` or `)` after the index `k` of the access to `in` opened at column 3, found end of expression", 11),
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
        (arb_name(), prop::array::uniform3(-5i32..=5), 1usize..8).prop_map(
            |(array, offset, mask)| {
                // Any non-empty subset of (i, j, k), offsets 0 along the absent ones.
                let dims = Dims([0, 1, 2].map(|d| mask & (1 << d) != 0));
                let offset = [0, 1, 2].map(|d| if dims.has(d) { offset[d] } else { 0 });
                Expr::Access {
                    array,
                    offset,
                    dims,
                }
            }
        ),
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
            (inner.clone(), inner.clone(), inner.clone()).prop_map(|(c, t, o)| ternary(c, t, o)),
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
    "a", "in", "x1", "(", ")", "i", "j", "k", "+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!=",
    "&&", "||", "!", "?", ":", ",", "1", "0.5", "1e", "2.", ".5", "1e-3", "sqrt", "pow", "min",
    "sin", " ", " ", "#", "é", ".", "=", "&", "\u{3000}", "e", "_",
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
                        offset: s.offset,
                        dims: s.dims
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
