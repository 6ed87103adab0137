//! Crowding (`evaluate::crowded`) in the digits MILP: the crowded flag of each stencil, the group's
//! stream weight carried from stencil to stencil, and the two threshold rows.

use crate::encodings::lp::{LinExpr, Sense, VarId};

use super::builder::Builder;

impl Builder {
    /// Stencil `i`'s crowded flag (`evaluate::crowded`), when the machine charges crowding: a
    /// binary `crowded_i`, equal within a group, and the group's stream weight up to `i`,
    /// `S_i >= s_i + same(i-1, i) S_{i-1}` (a prefix of the group's `Σ s`; the rows below hold
    /// for the whole group at its last stencil, and the earlier ones are implied). Returns the
    /// flag, the prefix and the `whole_rows_i` binary (1 only when `n^x = 1`); the caller adds
    /// the two threshold rows ([`Builder::crowded_rows`]) once `n^y n^z` is formed.
    pub(super) fn crowded_flag(
        &mut self,
        i: usize,
        s_weight: &LinExpr,
        prefix_prev: Option<&LinExpr>,
        flags: &[VarId],
    ) -> (VarId, LinExpr, VarId) {
        let flag = self.milp.add_binary(format!("crowded_{i}"));
        if i > 0 {
            self.equal_unless_cut(&format!("crowded_{i}"), flag, flags[i - 1], i - 1);
        }
        let mut prefix = s_weight.clone();
        if let Some(prev) = prefix_prev {
            let prev_ub = self.upper(prev);
            let same = self.same(i - 1, i);
            let carried = self.gated_lower(prev, &same, prev_ub, &format!("streams_{i}"));
            prefix.add_expr(&carried, 1.0);
        }
        // whole_rows = 1 only when n^x = 1: n^x + (hi - 1) whole_rows <= hi.
        let whole = self.milp.add_binary(format!("whole_rows_{i}"));
        let x_hi = self.tile_range[0].1 as f64;
        let mut row = self.tiles_expr(i, 0);
        row.add(whole, x_hi - 1.0);
        self.milp
            .add_constraint(format!("whole_rows_{i}_le"), &row, Sense::Le, x_hi);
        (flag, prefix.normalized(), whole)
    }

    /// The two threshold rows of [`Builder::crowded_flag`], with the group's stream weight
    /// `S` (its prefix at `i`), the limit `L` and `N^{yz} = n^y n^z`: with whole rows `S D^z
    /// <= L n^z + M (crowded + 1 - whole)`, else `S D^y D^z <= L N^{yz} + M (crowded + whole)`.
    /// The first is the weaker one when `n^x = 1` (`n^y <= D^y`), so the solver sets `whole`
    /// exactly when it may, and `crowded` is 0 exactly when `evaluate::crowded` is false.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn crowded_rows(
        &mut self,
        i: usize,
        dom: [usize; 3],
        limit: u64,
        (flag, prefix, whole): (VarId, &LinExpr, VarId),
        nz: &LinExpr,
        nyz: &LinExpr,
    ) {
        let limit = limit as f64;
        let (dy, dz) = (dom[1] as f64, dom[2] as f64);
        let s_ub = self.upper(prefix);
        let big = s_ub * dz;
        // S D^z - L n^z - M crowded + M whole <= M
        let mut row = prefix.scaled(dz).plus(nz, -limit);
        row.add(flag, -big).add(whole, big);
        self.milp
            .add_constraint(format!("crowded_{i}_rows"), &row, Sense::Le, big);
        let big = s_ub * dy * dz;
        // S D^y D^z - L N^{yz} - M crowded - M whole <= 0
        let mut row = prefix.scaled(dy * dz).plus(nyz, -limit);
        row.add(flag, -big).add(whole, -big);
        self.milp
            .add_constraint(format!("crowded_{i}_planes"), &row, Sense::Le, 0.0);
    }
}
