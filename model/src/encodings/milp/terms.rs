//! `formula`'s algebra over the digits MILP (`MilpTerms`): the cost terms of one stencil.

use std::collections::HashMap;

use crate::cost_model::formula;
use crate::encodings::lp::{LinExpr, Sense, VarId};

use super::builder::Builder;
use super::OBJECTIVE_SCALE;

/// A product `n^d y` by dimension and `y`'s terms and constant (as bits).
type ProductKey = (usize, Vec<(usize, u64)>, u64);

/// `formula`'s algebra over the MILP of stencil `i`: counts are expressions with their upper
/// bounds, a tile count times an expression is a binary-digit product (McCormick rows added,
/// memoised per expression), seconds are in objective units, and `max(fast, slow)` is a
/// variable `≥` both (exact at the optimum: every cost is non-negative and only grows with it).
pub(super) struct MilpTerms<'a> {
    pub(super) b: &'a mut Builder,
    pub(super) i: usize,
    pub(super) params: [[f64; 2]; 4],
    pub(super) memo: HashMap<ProductKey, (LinExpr, f64)>,
    /// The stencil's crowded flag (binary, equal within its group) and the charge `Q^b`, when
    /// the machine charges crowding.
    pub(super) crowd: Option<(VarId, f64)>,
    /// The exposed share θ (`Params::exposed`): each term costs `(1 - θ) m + θ (fast + slow)`
    /// for its max `m`, convex, so the variable `m` is still exact at the optimum.
    pub(super) exposed: f64,
}

impl formula::Algebra for MilpTerms<'_> {
    type Count = (LinExpr, f64);
    type Time = LinExpr;
    fn count_sum(&mut self, terms: &[(u128, &(LinExpr, f64))]) -> (LinExpr, f64) {
        let mut e = LinExpr::new();
        let mut ub = 0.0;
        for (k, (x, x_ub)) in terms {
            e.add_expr(x, *k as f64);
            ub += *k as f64 * x_ub;
        }
        (e.normalized(), ub)
    }
    fn times_tiles(&mut self, d: usize, (y, y_ub): &(LinExpr, f64)) -> (LinExpr, f64) {
        let y = y.normalized();
        let n_hi = self.b.tile_range[d].1 as f64;
        if y.terms.is_empty() {
            return (
                self.b.tiles_expr(self.i, d).scaled(y.constant),
                y.constant * n_hi,
            );
        }
        // `n (k y') = k (n y')`: the product is formed (and shared) for `y'`, the expression
        // scaled to a first coefficient of 1, so that `n E` and `n c E` share one product. Only
        // when every coefficient of `y'` stays an integer, so that the rows stay exact.
        let k = y.terms[0].1;
        let integral = |c: f64| (c / k).fract() == 0.0;
        if k > 0.0 && k != 1.0 && y.terms.iter().all(|&(_, c)| integral(c)) && integral(y.constant)
        {
            // Divided, not multiplied by 1/k: the quotients are exact integers.
            let mut unit_expr = LinExpr::constant(y.constant / k);
            for &(v, c) in &y.terms {
                unit_expr.add(v, c / k);
            }
            let unit = (unit_expr, y_ub / k);
            let (p, _) = self.times_tiles(d, &unit);
            return (p.scaled(k), y_ub * n_hi);
        }
        let key = (
            d,
            y.terms.iter().map(|&(v, c)| (v.0, c.to_bits())).collect(),
            y.constant.to_bits(),
        );
        if let Some(p) = self.memo.get(&key) {
            return p.clone();
        }
        let name = format!("p{}", self.memo.len());
        let p = self.b.times_tiles(self.i, d, &y, *y_ub, &name);
        let out = (p, y_ub * n_hi);
        self.memo.insert(key, out.clone());
        out
    }
    fn param_is_zero(&self, part: formula::Part, term: formula::Term) -> bool {
        // The crowding charge multiplies the stream body's count.
        let crowding =
            self.crowd.is_some() && part == formula::Part::Stream && term == formula::Term::Body;
        self.params[part as usize][term as usize] == 0.0 && !crowding
    }
    fn crowding(&mut self, (v, v_ub): &(LinExpr, f64)) -> Option<LinExpr> {
        let (flag, q) = self.crowd?;
        // `flag * v` from below: exact at the optimum, where it only adds cost.
        let gated = self.b.gated_lower(
            v,
            &LinExpr::var(flag),
            *v_ub,
            &format!("crowded_body_{}", self.i),
        );
        Some(gated.scaled(OBJECTIVE_SCALE * q))
    }
    fn seconds(
        &mut self,
        part: formula::Part,
        term: formula::Term,
        (v, _): &(LinExpr, f64),
    ) -> LinExpr {
        v.scaled(OBJECTIVE_SCALE * self.params[part as usize][term as usize])
    }
    fn time_zero(&mut self) -> LinExpr {
        LinExpr::new()
    }
    fn time_add(&mut self, a: &LinExpr, b: &LinExpr) -> LinExpr {
        a.clone().plus(b, 1.0)
    }
    fn time_max(
        &mut self,
        fast: &LinExpr,
        slow: &LinExpr,
        term: formula::Term,
        name: &str,
    ) -> LinExpr {
        let name = format!("{}_{name}", term.name());
        let m = self.b.milp.add_var(&name, 0.0, f64::INFINITY, false);
        let mv = LinExpr::var(m);
        self.b
            .milp
            .add_relation(format!("{name}_fast"), &mv, Sense::Ge, fast);
        self.b
            .milp
            .add_relation(format!("{name}_slow"), &mv, Sense::Ge, slow);
        mv
    }
    fn exposed(&mut self, max: &LinExpr, fast: &LinExpr, slow: &LinExpr) -> Option<LinExpr> {
        let theta = self.exposed;
        (theta > 0.0).then(|| max.scaled(1.0 - theta).plus(fast, theta).plus(slow, theta))
    }
}
