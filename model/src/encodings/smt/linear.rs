//! Encoding (1), [`Encoding::Linear`](super::Encoding::Linear): a MILP row for row in exact
//! rationals (QF_LIRA).

use crate::encodings::lp::{Milp, VarId};
use crate::encodings::milp::AbsintheMilp;

use super::terms::{declare_var, expr_term, row};
use super::{Smt, Sort, OBJECTIVE};

/// Encoding (1): a MILP row for row, with its objective as [`OBJECTIVE`].
pub fn linear(milp: &Milp) -> Smt {
    let mut smt = Smt::new(if milp.vars.iter().any(|v| v.integer) {
        "QF_LIRA"
    } else {
        "QF_LRA"
    });
    for v in 0..milp.vars.len() {
        declare_var(&mut smt, milp, VarId(v));
    }
    for r in 0..milp.constraints.len() {
        smt.assertions.push(row(milp, r));
    }
    smt.declare(OBJECTIVE, Sort::Real);
    smt.assertions.push(format!(
        "(= {OBJECTIVE} {})",
        expr_term(milp, &milp.objective)
    ));
    smt.minimise = true;
    smt
}

/// The linear encoding of an ABSINTHE MILP, with its cut and tile-count names.
pub fn linear_absinthe(encoded: &AbsintheMilp) -> Smt {
    let m = &encoded.milp;
    let mut smt = linear(m);
    smt.cuts = encoded
        .cuts
        .iter()
        .map(|v| m.vars[v.0].name.clone())
        .collect();
    smt.tile_counts = encoded
        .tile_counts
        .iter()
        .map(|t| t.map(|v| m.vars[v.0].name.clone()))
        .collect();
    smt.streams = encoded
        .streams
        .iter()
        .map(|v| m.vars[v.0].name.clone())
        .collect();
    smt
}
