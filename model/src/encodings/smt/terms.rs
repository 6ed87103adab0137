//! SMT-LIB terms: exact rationals as reals and back, and a MILP's variables, expressions and
//! rows as real terms.

use std::collections::HashMap;

use num_traits::{One, Signed, Zero};

use crate::cost_model::exact::{decimal, Rational};
use crate::encodings::lp::{LinExpr, Milp, Sense, VarId};

use super::{Smt, Sort};

/// An exact rational as an SMT-LIB real term.
pub fn real(r: &Rational) -> String {
    let (n, d) = (r.numer().abs(), r.denom().clone());
    let body = if d.is_one() {
        format!("{n}.0")
    } else {
        format!("(/ {n}.0 {d}.0)")
    };
    if r.is_negative() {
        format!("(- {body})")
    } else {
        body
    }
}

/// A rational from an SMT-LIB numeral term as Z3 prints it: `3`, `3.5`, `(/ 3.0 4.0)`,
/// `(- 2)`, `(- (/ 1.0 3.0))`.
pub fn parse_value(text: &str) -> Option<Rational> {
    let t = text.trim();
    if let Some(inner) = t.strip_prefix("(-").and_then(|s| s.strip_suffix(')')) {
        return parse_value(inner).map(|v| -v);
    }
    if let Some(inner) = t.strip_prefix("(/").and_then(|s| s.strip_suffix(')')) {
        let mut parts = inner.split_whitespace();
        let n = parse_value(parts.next()?)?;
        let d = parse_value(parts.next()?)?;
        if d.is_zero() {
            return None;
        }
        return Some(n / d);
    }
    crate::cost_model::exact::parse_decimal(t)
}

pub(super) fn var_term(milp: &Milp, v: VarId) -> String {
    let var = &milp.vars[v.0];
    if var.integer {
        format!("(to_real {})", var.name)
    } else {
        var.name.clone()
    }
}

/// `Σ c x + constant` as a real term.
pub(super) fn linear_term(milp: &Milp, terms: &[(VarId, f64)], constant: &Rational) -> String {
    let mut parts: Vec<String> = terms
        .iter()
        .filter(|t| t.1 != 0.0)
        .map(|&(v, c)| {
            let c = decimal(c);
            if c.is_one() {
                var_term(milp, v)
            } else {
                format!("(* {} {})", real(&c), var_term(milp, v))
            }
        })
        .collect();
    if !constant.is_zero() || parts.is_empty() {
        parts.push(real(constant));
    }
    sum(parts)
}

pub(super) fn sum(parts: Vec<String>) -> String {
    match parts.len() {
        0 => "0.0".to_string(),
        1 => parts.into_iter().next().unwrap_or_default(),
        _ => format!("(+ {})", parts.join(" ")),
    }
}

pub(super) fn expr_term(milp: &Milp, e: &LinExpr) -> String {
    let e = e.normalized();
    linear_term(milp, &e.terms, &decimal(e.constant))
}

pub(super) fn declare_var(smt: &mut Smt, milp: &Milp, v: VarId) {
    let var = &milp.vars[v.0];
    let sort = if var.integer { Sort::Int } else { Sort::Real };
    smt.declare(var.name.clone(), sort);
    let x = var_term(milp, v);
    if var.lower.is_finite() {
        smt.assertions
            .push(format!("(<= {} {x})", real(&decimal(var.lower))));
    }
    if var.upper.is_finite() {
        smt.assertions
            .push(format!("(<= {x} {})", real(&decimal(var.upper))));
    }
}

pub(super) fn row(milp: &Milp, r: usize) -> String {
    row_with(milp, r, &HashMap::new())
}

/// A row with some variables replaced by terms.
pub(super) fn row_with(milp: &Milp, r: usize, subst: &HashMap<usize, String>) -> String {
    let c = &milp.constraints[r];
    let parts: Vec<String> = c
        .terms
        .iter()
        .filter(|t| t.1 != 0.0)
        .map(|&(v, coef)| {
            let x = subst
                .get(&v.0)
                .cloned()
                .unwrap_or_else(|| var_term(milp, v));
            format!("(* {} {x})", real(&decimal(coef)))
        })
        .collect();
    let lhs = sum(parts);
    let op = match c.sense {
        Sense::Le => "<=",
        Sense::Ge => ">=",
        Sense::Eq => "=",
    };
    format!("({op} {lhs} {})", real(&decimal(c.rhs)))
}
