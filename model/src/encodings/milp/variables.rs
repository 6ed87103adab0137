//! The decision variables of the digits MILP: group indices and cuts, tile counts as binary
//! digits, stream flags, all equal within a group.

use crate::cost_model::evaluate::STREAM_TILES_X;
use crate::encodings::lp::{LinExpr, Sense, VarId};
use crate::language::analysis::Analysis;
use crate::language::program::DIMS;

use super::builder::Builder;
use super::MilpOptions;

impl Builder {
    /// Group indices `g_i` (integer, `g_0 = 0`) and cuts `cut_i = g_{i+1} - g_i` (binary, fixed
    /// by `--fix-groups`, and 1 beside a 2-D stencil).
    pub(super) fn group_variables(
        &mut self,
        analysis: &Analysis,
        options: &MilpOptions,
    ) -> Vec<VarId> {
        let b = self;
        let n_st = analysis.stencils.len();
        // Group indices and cuts.
        let mut group_index = Vec::new();
        for i in 0..n_st {
            let g = b.milp.add_var(format!("g_{i}"), 0.0, i as f64, true);
            group_index.push(g);
        }
        b.milp.vars[group_index[0].0].upper = 0.0;
        for i in 0..n_st.saturating_sub(1) {
            let (lo, hi) = match &options.space.fixed_groups {
                Some(g) => {
                    let c = (g[i + 1] != g[i]) as u8 as f64;
                    (c, c)
                }
                None if analysis.forced_cut(i) => (1.0, 1.0),
                None => (0.0, 1.0),
            };
            let c = b.milp.add_var(format!("cut_{i}"), lo, hi, true);
            b.cuts.push(c);
            // g_{i+1} - g_i - cut_i = 0
            let mut e = LinExpr::var(group_index[i + 1]);
            e.add(group_index[i], -1.0).add(c, -1.0);
            b.milp
                .add_constraint(format!("group_step_{i}"), &e, Sense::Eq, 0.0);
        }

        group_index
    }

    /// Tile counts `n_i^d` as sums of binary digits, equal within a group.
    pub(super) fn tile_variables(&mut self, n_st: usize) -> Vec<[VarId; 3]> {
        let b = self;
        let tile_range = b.tile_range;
        // Tile counts as binary digits; equal within a group.
        let mut tile_counts = Vec::new();
        for i in 0..n_st {
            let mut vars = [VarId(0); 3];
            let mut bits: [Vec<VarId>; 3] = Default::default();
            for d in 0..3 {
                let (lo, hi) = tile_range[d];
                let nbits = (usize::BITS - hi.leading_zeros()) as usize;
                for k in 0..nbits {
                    bits[d].push(b.milp.add_binary(format!("bit_{}{i}_{k}", DIMS[d])));
                }
                let v = b
                    .milp
                    .add_var(format!("n_{}{i}", DIMS[d]), lo as f64, hi as f64, true);
                let mut e = LinExpr::var(v);
                for (k, &bit) in bits[d].iter().enumerate() {
                    e.add(bit, -((1u64 << k) as f64));
                }
                b.milp
                    .add_constraint(format!("n_{}{i}_digits", DIMS[d]), &e, Sense::Eq, 0.0);
                vars[d] = v;
            }
            tile_counts.push(vars);
            b.bits.push(bits);
        }
        for i in 0..n_st.saturating_sub(1) {
            for d in 0..3 {
                let span = (tile_range[d].1 - tile_range[d].0) as f64;
                let mut diff = LinExpr::var(tile_counts[i + 1][d]);
                diff.add(tile_counts[i][d], -1.0);
                let bound = LinExpr::term(b.cuts[i], span);
                b.milp
                    .add_relation(format!("n_{}{i}_eq_up", DIMS[d]), &diff, Sense::Le, &bound);
                b.milp.add_relation(
                    format!("n_{}{i}_eq_down", DIMS[d]),
                    &diff.scaled(-1.0),
                    Sense::Le,
                    &bound,
                );
            }
        }

        tile_counts
    }

    /// Stream flags `stream_i` (binary), equal within a group: `|stream_{i+1} - stream_i| <=
    /// cut_i`.
    pub(super) fn stream_variables(&mut self, n_st: usize) -> Vec<VarId> {
        let b = self;
        let streams: Vec<VarId> = (0..n_st)
            .map(|i| b.milp.add_binary(format!("stream_{i}")))
            .collect();
        for i in 0..n_st.saturating_sub(1) {
            b.equal_unless_cut(&format!("stream_{i}"), streams[i + 1], streams[i], i);
        }
        streams
    }

    /// Streaming switched off (the options or the machine forbid it): every stream flag is 0.
    pub(super) fn forbid_streaming(&mut self, streams: &[VarId]) {
        for &v in streams {
            self.milp.vars[v.0].upper = 0.0;
        }
    }

    /// A streamed group spans whole rows (`evaluate::STREAM_TILES_X`): `n^x + (hi - X) stream <= hi`.
    pub(super) fn stream_rows(&mut self, streams: &[VarId]) {
        let x_hi = self.tile_range[0].1;
        let whole = STREAM_TILES_X as f64;
        if (x_hi as f64) > whole {
            for (i, &st) in streams.iter().enumerate() {
                let mut row = self.tiles_expr(i, 0);
                row.add(st, x_hi as f64 - whole);
                self.milp
                    .add_constraint(format!("stream_rows_{i}"), &row, Sense::Le, x_hi as f64);
            }
        }
    }
}
