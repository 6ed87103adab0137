//! Feasibility rows per stencil: parallel efficiency, even tiles, and the cache (with the
//! machine's limit on the arrays a group touches).

use crate::cost_model::evaluate::{cache_capacity, limits_arrays, stream_shape};
use crate::encodings::lp::{LinExpr, Sense, VarId};
use crate::formats::machine::ModelMachine;
use crate::language::analysis::Analysis;
use crate::language::program::DIMS;

use super::builder::Builder;
use super::loads::previous_toucher;

impl Builder {
    /// Parallel efficiency: `N >= T` and `(1 - σ_T) T k <= N <= T k` for an integer `k`.
    pub(super) fn parallel_rows(&mut self, i: usize, total: &LinExpr, machine: &ModelMachine) {
        let b = self;
        let threads = machine.threads as f64;
        let max_tiles: f64 = b.tile_range.iter().map(|r| r.1 as f64).product();
        b.milp
            .add_constraint(format!("threads_{i}"), total, Sense::Ge, threads);
        let k_max = (max_tiles / threads).ceil().max(1.0);
        let k = b.milp.add_var(format!("rounds_{i}"), 1.0, k_max, true);
        b.milp.add_relation(
            format!("rounds_{i}_le"),
            total,
            Sense::Le,
            &LinExpr::term(k, threads),
        );
        b.milp.add_relation(
            format!("rounds_{i}_ge"),
            &LinExpr::term(k, (1.0 - machine.slack.cores) * threads),
            Sense::Le,
            total,
        );
    }

    /// Even tiles: `D <= n t <= D / (1 - σ_D)` for an integer tile size `t`.
    pub(super) fn even_tile_rows(&mut self, i: usize, dom: [usize; 3], machine: &ModelMachine) {
        let b = self;
        let tile_range = b.tile_range;
        let dom_f = dom.map(|d| d as f64);
        for d in 0..3 {
            let (lo, hi) = tile_range[d];
            let t_lo = dom[d].div_ceil(hi) as f64;
            let t_hi = dom[d].div_ceil(lo) as f64;
            let t = b
                .milp
                .add_var(format!("size_{}{i}", DIMS[d]), t_lo, t_hi, true);
            let nt = b.times_tiles(i, d, &LinExpr::var(t), t_hi, "nt");
            let max_cover = (dom_f[d] * (1.0 + 1e-9) / (1.0 - machine.slack.size)).floor();
            b.milp
                .add_constraint(format!("even_{}{i}_lo", DIMS[d]), &nt, Sense::Ge, dom_f[d]);
            b.milp
                .add_constraint(format!("even_{}{i}_hi", DIMS[d]), &nt, Sense::Le, max_cover);
        }
    }

    /// The arrays touched from the group's start to stencil `i`: its own, less those an
    /// earlier stencil of the group touched, plus the previous stencil's count when it is in
    /// the same group.
    fn group_array_count(
        &mut self,
        analysis: &Analysis,
        i: usize,
        count_prev: Option<LinExpr>,
    ) -> LinExpr {
        let touched_here = analysis.touched(i).len() as f64;
        let mut count = LinExpr::constant(touched_here);
        for a in analysis.stencils[i].reads() {
            if let Some(j) = previous_toucher(analysis, a, i) {
                let s = self.same(j, i);
                count.add_expr(&s, -1.0);
            }
        }
        if let Some(prev) = count_prev {
            let prev_ub = self.upper(&prev);
            let same_prev = self.same(i - 1, i);
            let carried = self.gated_lower(&prev, &same_prev, prev_ub, &format!("carried_{i}"));
            count.add_expr(&carried, 1.0);
        }
        count
    }

    /// Cache: the arrays touched from the group's start to `i` are at most the machine's
    /// `group_arrays` in a program streamed along y, and times the cells per tile they fit the
    /// capacity: `count D^x D^y D^z <= C N` unless the group streams, `count W Π_{d<s} D^d <=
    /// C Π_{d<s} n^d` if it does (`evaluate::tile_cells`), each row switched off by a big-M of the
    /// stream flag. Returns the count, which the next stencil carries.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn cache_row(
        &mut self,
        analysis: &Analysis,
        machine: &ModelMachine,
        i: usize,
        total: &LinExpr,
        cross: &LinExpr,
        stream: VarId,
        count_prev: Option<LinExpr>,
    ) -> LinExpr {
        let count = self.group_array_count(analysis, i, count_prev);
        let b = self;
        let cells: f64 = analysis.domain.iter().map(|&d| d as f64).product();
        let capacity = cache_capacity(machine) as f64;
        let shape = stream_shape(analysis);
        let count_ub = b.upper(&count);
        // The machine's limit on the arrays a group walks, in programs streamed along y
        // (`evaluate::limits_arrays`): count <= group_arrays.
        if machine.group_arrays < usize::MAX && limits_arrays(shape) {
            b.milp.add_relation(
                format!("arrays_{i}"),
                &count,
                Sense::Le,
                &LinExpr::constant(machine.group_arrays as f64),
            );
        }
        // count * cells <= C * N + M stream
        let row = count.scaled(cells).plus(total, -capacity);
        b.milp.add_relation(
            format!("cache_{i}"),
            &row,
            Sense::Le,
            &LinExpr::term(stream, count_ub * cells),
        );
        // count * W * Π_{d<s} D^d <= C * N_cross + M (1 - stream)
        let stream_cells: f64 = shape.window as f64
            * analysis.domain[..shape.dim]
                .iter()
                .map(|&d| d as f64)
                .product::<f64>();
        let big = count_ub * stream_cells;
        let row = count.scaled(stream_cells).plus(cross, -capacity);
        b.milp.add_relation(
            format!("cache_stream_{i}"),
            &row,
            Sense::Le,
            &LinExpr::constant(big).plus(&LinExpr::var(stream), -big),
        );
        count
    }
}
