//! Checks of a whole program after its stencils are read (`Program::from_yaml`): literals that
//! its type cannot hold, the declared inputs, the outputs.

use std::collections::{BTreeMap, HashSet};

use crate::formats::diagnostic::Diagnostic;
use crate::language::program::{name_problem, Stencil, ValueType};

/// Whether the number `text` (`1e-400`, `0.0`) has a non-zero digit before its exponent: a value
/// that parses to zero though written as non-zero is too small for its type.
pub(crate) fn nonzero_digits(text: &str) -> bool {
    let mantissa = text.split(['e', 'E']).next().unwrap_or(text);
    mantissa.bytes().any(|c| c.is_ascii_digit() && c != b'0')
}

/// A program's literals fit its type: the generated code reads each in it, and a `float`
/// literal that rounds past `FLT_MAX` would become infinity (the lexer refuses only what
/// overflows a double), one with a non-zero digit that rounds to zero (`1e-400`; `1e-50` in a
/// float) would silently be zero.
pub(crate) fn check_literals(
    stencils: &[Stencil],
    value_type: ValueType,
    errors: &mut Vec<Diagnostic>,
) {
    let float = value_type == ValueType::Float;
    let problem = |text: &str| {
        let value = match float {
            true => text.parse::<f32>().map(f64::from),
            false => text.parse::<f64>(),
        };
        let nonzero = nonzero_digits(text);
        let kind = if float {
            "a float (type: float)"
        } else {
            "a double"
        };
        match value {
            Ok(v) if v.is_infinite() || v.is_nan() => Some(format!("is too large for {kind}")),
            Ok(v) if v == 0.0 && nonzero => {
                Some(format!("is too small for {kind}: it rounds to zero"))
            }
            Ok(_) => None,
            Err(_) => Some(format!("is not a number {kind} can hold")),
        }
    };
    for b in stencils.iter().flat_map(|s| &s.bodies) {
        let exprs = b
            .lets
            .iter()
            .zip(&b.sources.lets)
            .map(|(l, (src, _))| (format!("{}.let.{}", b.path, l.name), &l.expr, src.as_str()));
        let body = (format!("{}.expr", b.path), &b.expr, b.sources.expr.as_str());
        for (path, e, src) in exprs.chain([body]) {
            e.visit_numbers(&mut |text, _| {
                if let Some(why) = problem(text) {
                    let d = Diagnostic::new(path.clone(), format!("number literal `{text}` {why}"));
                    errors.push(match literal_column(src, text) {
                        Some(column) => d.with_snippet(src, column, text.chars().count()),
                        None => d,
                    });
                }
            });
        }
    }
}

/// The 1-based character column of the literal `text` written on its own in `src` (not inside
/// a longer number or a name), for a caret.
fn literal_column(src: &str, text: &str) -> Option<usize> {
    let part_of = |c: char| c.is_ascii_alphanumeric() || c == '.' || c == '_';
    src.match_indices(text)
        .find(|&(at, _)| {
            let before = src[..at].chars().next_back();
            let after = src[at + text.len()..].chars().next();
            !before.is_some_and(part_of) && !after.is_some_and(part_of)
        })
        .map(|(at, _)| src[..at].chars().count() + 1)
}

/// A program has at least one output, none listed twice.
pub(crate) fn check_outputs(outputs: &[String], errors: &mut Vec<Diagnostic>) {
    let mut outputs_seen = HashSet::new();
    for (n, o) in outputs.iter().enumerate() {
        if !outputs_seen.insert(o) {
            errors.push(Diagnostic::new(
                format!("outputs[{n}]"),
                format!("`{o}` is listed twice"),
            ));
        }
    }
    if outputs.is_empty() {
        errors.push(Diagnostic::new(
            "outputs",
            "a program needs at least one output",
        ));
    }
}

/// Checks a program's declared `inputs:`: identifiers, not reserved, not written by a stencil
/// (`stencils` maps each stencil's name to its index), each listed once, each read (an input
/// nothing reads would be allocated, filled and passed for nothing, and is most often a read
/// forgotten or misspelt).
pub(crate) fn check_inputs(
    inputs: &[String],
    stencils: &BTreeMap<&str, usize>,
    bodies: &[Stencil],
    errors: &mut Vec<Diagnostic>,
) {
    let mut read = HashSet::new();
    for b in bodies.iter().flat_map(|s| &s.bodies) {
        for e in b.lets.iter().map(|l| &l.expr).chain([&b.expr]) {
            e.visit_accesses(&mut |name, _| {
                read.insert(name);
            });
        }
    }
    // A read of a name neither declared nor a stencil is most often the misspelling of an
    // input, which the analysis names with a hint: the input it misspells is not reported.
    let declared: HashSet<&str> = inputs.iter().map(String::as_str).collect();
    let misspelt = read
        .iter()
        .any(|r| !stencils.contains_key(r) && !declared.contains(r));
    for (n, name) in inputs.iter().enumerate().filter(|_| !misspelt) {
        if !read.contains(name.as_str()) && !stencils.contains_key(name.as_str()) {
            errors.push(Diagnostic::new(
                format!("inputs[{n}]"),
                format!("no stencil reads the input `{name}`: read it, or drop it from `inputs:`"),
            ));
        }
    }
    let mut inputs_seen = HashSet::new();
    for (n, name) in inputs.iter().enumerate() {
        let path = format!("inputs[{n}]");
        if let Some(problem) = name_problem(name, "an input") {
            errors.push(Diagnostic::new(path, problem));
        } else if let Some(&m) = stencils.get(name.as_str()) {
            errors.push(Diagnostic::new(
                path,
                format!("`{name}` is written by stencils[{m}], so it is not an input"),
            ));
        } else if !inputs_seen.insert(name) {
            errors.push(Diagnostic::new(path, format!("`{name}` is listed twice")));
        }
    }
}
