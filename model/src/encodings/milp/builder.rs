//! The MILP under construction (`Builder`) and the exact pieces every part of it uses: the
//! "same group" tests, the binary digits of the tile counts and their products.

use std::collections::HashMap;

use crate::encodings::linearize::{
    and_not, gated_lower, lower_bound, mccormick, recorded_product, upper_bound, Linearization,
};
use crate::encodings::lp::{LinExpr, Milp, Sense, VarId};
use crate::language::program::DIMS;

pub(super) struct Builder {
    pub(super) milp: Milp,
    pub(super) cuts: Vec<VarId>,
    pub(super) same_memo: HashMap<(usize, usize), LinExpr>,
    pub(super) bits: Vec<[Vec<VarId>; 3]>,
    pub(super) linearizations: Vec<Linearization>,
    pub(super) tile_range: [(usize, usize); 3],
    /// What a store counts in the stream weights (`ModelKind::store_weight`).
    pub(super) store_weight: f64,
}

impl Builder {
    pub(super) fn upper(&self, e: &LinExpr) -> f64 {
        upper_bound(&self.milp, e)
    }

    /// `same(j, i)` for `j <= i`: 1 when no cut lies between them. Exact.
    pub(super) fn same(&mut self, j: usize, i: usize) -> LinExpr {
        if j == i {
            return LinExpr::constant(1.0);
        }
        if i == j + 1 {
            return LinExpr::constant(1.0).plus(&LinExpr::var(self.cuts[j]), -1.0);
        }
        if let Some(e) = self.same_memo.get(&(j, i)) {
            return e.clone();
        }
        let prev = self.same(j, i - 1);
        let s = and_not(
            &mut self.milp,
            &prev,
            self.cuts[i - 1],
            &format!("same_{j}_{i}"),
        );
        self.same_memo.insert((j, i), s.clone());
        s
    }

    /// `n_i^d * y` for `0 <= y <= y_max`, exactly.
    pub(super) fn times_tiles(
        &mut self,
        i: usize,
        d: usize,
        y: &LinExpr,
        y_max: f64,
        name: &str,
    ) -> LinExpr {
        let bits = self.bits[i][d].clone();
        let name = format!("{name}_{}{i}", DIMS[d]);
        let (output, record) = recorded_product(&mut self.milp, &bits, y, y_max, &name);
        if !record.vars().is_empty() {
            self.linearizations.push(record);
        }
        // The digit rows define the product; the McCormick rows only tighten the relaxation.
        let (lo, hi) = self.tile_range[d];
        let y_lo = lower_bound(&self.milp, y).max(0.0);
        mccormick(
            &mut self.milp,
            &bits,
            (lo as f64, hi as f64),
            y,
            (y_lo, y_max),
            &output,
            &name,
        );
        output
    }

    pub(super) fn tiles_expr(&self, i: usize, d: usize) -> LinExpr {
        let mut e = LinExpr::new();
        for (k, &b) in self.bits[i][d].iter().enumerate() {
            e.add(b, (1u64 << k) as f64);
        }
        e
    }

    pub(super) fn gated_lower(
        &mut self,
        x: &LinExpr,
        flag: &LinExpr,
        x_max: f64,
        name: &str,
    ) -> LinExpr {
        gated_lower(&mut self.milp, x, flag, x_max, name)
    }

    /// `|a - b| <= cut_k`: two binaries equal unless the group is cut after stencil `k` (rows
    /// `{name}_eq_up` and `{name}_eq_down`).
    pub(super) fn equal_unless_cut(&mut self, name: &str, a: VarId, b: VarId, k: usize) {
        let mut diff = LinExpr::var(a);
        diff.add(b, -1.0);
        let bound = LinExpr::var(self.cuts[k]);
        self.milp
            .add_relation(format!("{name}_eq_up"), &diff, Sense::Le, &bound);
        self.milp.add_relation(
            format!("{name}_eq_down"),
            &diff.scaled(-1.0),
            Sense::Le,
            &bound,
        );
    }
}
