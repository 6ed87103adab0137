//! Evaluation widths `e_i^{d±}`: how far beyond its tile each stencil is evaluated for its
//! in-group readers, exact wherever a running maximum reads it.

use crate::encodings::linearize::switched_max;
use crate::encodings::lp::LinExpr;
use crate::language::analysis::Analysis;
use crate::language::program::DIMS;

use super::builder::Builder;

impl Builder {
    /// Evaluation widths `e_i^{d±}`, last stencil first: the max over in-group readers of their
    /// width plus reach (exact where `exact_width` says so).
    pub(super) fn width_expressions(
        &mut self,
        analysis: &Analysis,
        exact_width: &[bool],
    ) -> Vec<[[LinExpr; 2]; 3]> {
        let b = self;
        let n_st = analysis.stencils.len();
        // Evaluation widths e[i][d][side], last stencil first.
        let mut widths: Vec<[[LinExpr; 2]; 3]> = vec![Default::default(); n_st];
        for i in (0..n_st).rev() {
            let info = &analysis.stencils[i];
            for d in 0..3 {
                for side in 0..2 {
                    let ub = info.extent[d][side] as f64;
                    let readers: Vec<(usize, f64)> = info
                        .readers
                        .iter()
                        .map(|&r| {
                            let bd = analysis.stencils[r].bounds[&info.array][d];
                            let reach = if side == 0 { -bd.0 } else { bd.1 }.max(0) as f64;
                            (r, reach)
                        })
                        .collect();
                    if readers.is_empty() || ub == 0.0 {
                        widths[i][d][side] = LinExpr::new();
                        continue;
                    }
                    let sname = ["m", "p"][side];
                    let name = format!("e_{}{i}_{sname}", DIMS[d]);
                    let mut terms = Vec::new();
                    for &(r, reach) in &readers {
                        let t = widths[r][d][side]
                            .clone()
                            .plus(&LinExpr::constant(reach), 1.0);
                        let same = b.same(i, r);
                        terms.push((t, same));
                    }
                    let ev = switched_max(&mut b.milp, &terms, ub, exact_width[i], &name);
                    widths[i][d][side] = ev;
                }
            }
        }

        widths
    }
}

/// Which evaluation widths must be exact: those feeding a running maximum, and everything they
/// are bounded by (their readers' widths).
pub(super) fn exact_widths(analysis: &Analysis) -> Vec<bool> {
    let n_st = analysis.stencils.len();
    let mut exact_width = vec![false; n_st];
    for i in 0..n_st {
        let feeds_max = analysis.stencils[i]
            .reads()
            .any(|a| ((i + 1)..n_st).any(|k| analysis.stencils[k].bounds.contains_key(&a)));
        exact_width[i] |= feeds_max;
    }
    for p in 0..n_st {
        if exact_width[p] {
            for &r in &analysis.stencils[p].readers.clone() {
                exact_width[r] = true;
            }
        }
    }

    exact_width
}
