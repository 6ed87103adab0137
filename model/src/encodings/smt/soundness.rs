//! The soundness queries: for every binary-digit product and exact maximum of the MILP, "the
//! rows hold and the output differs from the product (maximum), or the intended values violate
//! a row", each of which must be UNSAT.

use std::collections::{BTreeSet, HashMap};

use crate::cost_model::exact::decimal;
use crate::encodings::linearize::Linearization;
use crate::encodings::lp::{Milp, VarId};
use crate::encodings::milp::AbsintheMilp;

use super::terms::{declare_var, expr_term, real, row, row_with, sum, var_term};
use super::Smt;

/// The binary digits of one tile count and its range `lo <= Σ 2^k bits_k <= hi`.
#[derive(Clone, Debug, PartialEq)]
pub struct DigitRange {
    pub bits: Vec<VarId>,
    pub lo: f64,
    pub hi: f64,
}

/// One soundness claim: `smt` is satisfiable exactly when the linearization is wrong somewhere
/// within the bounds.
#[derive(Clone, Debug, PartialEq)]
pub struct SoundnessQuery {
    /// The linearization's name (its variables' prefix in the MILP).
    pub name: String,
    pub kind: QueryKind,
    pub smt: Smt,
}

/// What a soundness query is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryKind {
    /// A binary-digit product.
    Product,
    /// An exact maximum.
    Max,
}

impl std::fmt::Display for QueryKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            QueryKind::Product => "product",
            QueryKind::Max => "max",
        })
    }
}

/// Soundness claims for every recorded linearization of an ABSINTHE MILP.
pub fn soundness_queries(encoded: &AbsintheMilp) -> Vec<SoundnessQuery> {
    let digits: Vec<DigitRange> = encoded
        .tile_bits
        .iter()
        .zip(&encoded.tile_counts)
        .flat_map(|(bits, counts)| {
            (0..3).map(move |d| {
                let n = &encoded.milp.vars[counts[d].0];
                DigitRange {
                    bits: bits[d].clone(),
                    lo: n.lower,
                    hi: n.upper,
                }
            })
        })
        .collect();
    soundness_queries_of(&encoded.milp, &encoded.linearizations, &digits)
}

/// Soundness claims for `records` of `milp`. Each asserts: the bounds of every variable
/// involved, the range of every tile count whose digits appear, the rows of the linearizations
/// that produce its inputs (transitively), and then either "its own rows hold and the output
/// differs from the nonlinear value" (unsound) or "the intended values of its variables
/// (`z_k = b_k y`; `u = max(a, b)` with its selector) violate one of its rows" (incomplete: a
/// too-small bound cuts inputs off). UNSAT proves it exact over the whole input range. For a
/// product the value is `Σ_k 2^k (b_k ? y : 0)`, which is `n * y` for binary digits (written
/// so, the claim stays linear and decidable); for a maximum it is `ite(a >= b, a, b)`.
pub fn soundness_queries_of(
    milp: &Milp,
    records: &[Linearization],
    digits: &[DigitRange],
) -> Vec<SoundnessQuery> {
    let mut producer: HashMap<usize, usize> = HashMap::new();
    for (k, r) in records.iter().enumerate() {
        for v in r.vars() {
            producer.insert(v, k);
        }
    }
    let mut digit_of: HashMap<usize, usize> = HashMap::new();
    for (k, dr) in digits.iter().enumerate() {
        for b in &dr.bits {
            digit_of.insert(b.0, k);
        }
    }
    let claims = Claims {
        milp,
        records,
        digits,
        producer,
        digit_of,
    };
    (0..records.len()).map(|k| claims.query(k)).collect()
}

/// The linearizations of a MILP with what their queries look up: the record that produces
/// each variable, and the tile count each digit belongs to.
struct Claims<'a> {
    milp: &'a Milp,
    records: &'a [Linearization],
    digits: &'a [DigitRange],
    producer: HashMap<usize, usize>,
    digit_of: HashMap<usize, usize>,
}

impl Claims<'_> {
    /// The soundness query of record `k`.
    fn query(&self, k: usize) -> SoundnessQuery {
        let (milp, record) = (self.milp, &self.records[k]);
        let rows = self.rows_of(k);
        let mut vars = BTreeSet::new();
        for &r in &rows {
            vars.extend(milp.constraints[r].terms.iter().map(|t| t.0 .0));
        }
        let claim = claim(milp, record, &mut vars);
        let mut smt = self.declarations(&vars);
        let own_rows = record.rows();
        for &r in rows.iter().filter(|r| !own_rows.contains(r)) {
            smt.assertions.push(row(milp, r));
        }
        let own: Vec<String> = own_rows.clone().map(|r| row(milp, r)).collect();
        let intended = intended_rows(milp, record);
        // Unsound (rows hold, value differs) or incomplete (intended values violate a row).
        smt.assertions.push(format!(
            "(or (and {} {claim}) (not (and true {})))",
            own.join(" "),
            intended.join(" ")
        ));
        SoundnessQuery {
            name: record.name().to_string(),
            kind: match record {
                Linearization::Product { .. } => QueryKind::Product,
                Linearization::Max { .. } => QueryKind::Max,
            },
            smt,
        }
    }

    /// The rows of record `k` and of the records producing the variables they use,
    /// transitively.
    fn rows_of(&self, k: usize) -> BTreeSet<usize> {
        let mut included = BTreeSet::new();
        let mut stack = vec![k];
        let mut rows = BTreeSet::new();
        while let Some(r) = stack.pop() {
            if !included.insert(r) {
                continue;
            }
            for row in self.records[r].rows() {
                rows.insert(row);
                for &(v, _) in &self.milp.constraints[row].terms {
                    if let Some(&p) = self.producer.get(&v.0) {
                        stack.push(p);
                    }
                }
            }
        }
        rows
    }

    /// A QF_LIRA problem declaring `vars` with their bounds, and the range of every tile count
    /// whose digits appear among them (its other digits declared too).
    fn declarations(&self, vars: &BTreeSet<usize>) -> Smt {
        let milp = self.milp;
        let mut smt = Smt::new("QF_LIRA");
        let mut ranges = BTreeSet::new();
        for &v in vars {
            declare_var(&mut smt, milp, VarId(v));
            if let Some(&d) = self.digit_of.get(&v) {
                ranges.insert(d);
            }
        }
        for d in ranges {
            let dr = &self.digits[d];
            for &b in &dr.bits {
                if !vars.contains(&b.0) {
                    declare_var(&mut smt, milp, b);
                }
            }
            let n = sum(dr
                .bits
                .iter()
                .enumerate()
                .map(|(i, &b)| format!("(* {}.0 {})", 1u64 << i, var_term(milp, b)))
                .collect());
            smt.assertions.push(format!(
                "(and (<= {} {n}) (<= {n} {}))",
                real(&decimal(dr.lo)),
                real(&decimal(dr.hi))
            ));
        }
        smt
    }
}

/// "The output differs from the nonlinear value" of `record`, adding the variables it names to
/// `vars`.
fn claim(milp: &Milp, record: &Linearization, vars: &mut BTreeSet<usize>) -> String {
    match record {
        Linearization::Product {
            bits, y, output, ..
        } => {
            vars.extend(bits.iter().map(|b| b.0));
            vars.extend(y.terms.iter().map(|t| t.0 .0));
            vars.extend(output.terms.iter().map(|t| t.0 .0));
            let yt = expr_term(milp, y);
            let value = sum(bits
                .iter()
                .enumerate()
                .map(|(i, &b)| {
                    format!(
                        "(* {}.0 (ite (= {} 1) {yt} 0.0))",
                        1u64 << i,
                        milp.vars[b.0].name
                    )
                })
                .collect());
            format!("(not (= {} {value}))", expr_term(milp, output))
        }
        Linearization::Max { a, b, output, .. } => {
            for e in [a, b, output] {
                vars.extend(e.terms.iter().map(|t| t.0 .0));
            }
            let (at, bt) = (expr_term(milp, a), expr_term(milp, b));
            format!(
                "(not (= {} (ite (>= {at} {bt}) {at} {bt})))",
                expr_term(milp, output)
            )
        }
    }
}

/// Completeness: `record`'s own rows with the intended values of its new variables
/// substituted, which hold for every input within the bounds unless a too-small bound cuts
/// inputs off.
fn intended_rows(milp: &Milp, record: &Linearization) -> Vec<String> {
    let new_vars = record.vars();
    let mut subst = HashMap::new();
    match record {
        Linearization::Product { bits, y, .. } => {
            let yt = expr_term(milp, y);
            for (k, v) in new_vars.clone().enumerate() {
                let b = &milp.vars[bits[k].0].name;
                subst.insert(v, format!("(ite (= {b} 1) {yt} 0.0)"));
            }
        }
        Linearization::Max { a, b, .. } => {
            let (at, bt) = (expr_term(milp, a), expr_term(milp, b));
            let mut it = new_vars.clone();
            if let Some(u) = it.next() {
                subst.insert(u, format!("(ite (>= {at} {bt}) {at} {bt})"));
            }
            if let Some(sel) = it.next() {
                subst.insert(sel, format!("(ite (>= {at} {bt}) 0.0 1.0)"));
            }
        }
    }
    record.rows().map(|r| row_with(milp, r, &subst)).collect()
}
