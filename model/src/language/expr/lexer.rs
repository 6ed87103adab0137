//! The lexer: source text to tokens, number literals, and source positions (spans, columns).

use super::parser::ParseError;

/// A byte range `start..end` of the source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

/// 1-based character column of byte offset `byte` (counting every character that starts
/// before it, so it never panics off a character boundary).
pub(super) fn column_at(src: &str, byte: usize) -> usize {
    src.char_indices().take_while(|&(i, _)| i < byte).count() + 1
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum TokenKind {
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
pub(super) struct Token {
    pub(super) kind: TokenKind,
    pub(super) span: Span,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_continue(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

pub(super) fn lex(src: &str) -> Result<Vec<Token>, ParseError> {
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
