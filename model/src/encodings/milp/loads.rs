//! What each stencil moves through slow memory: its store flag `w_i`, its loads `ℓ_{i,a}`, the
//! load lines per dimension (the growth beyond what an earlier in-group reader loaded, from the
//! running maxima of access extents), its base flag and its stream weight.

use std::collections::HashMap;

use crate::encodings::linearize::{gated, recorded_max};
use crate::encodings::lp::{LinExpr, Sense, VarId};
use crate::language::analysis::{Analysis, ArrayId, ArrayKind, Bounds};
use crate::language::program::DIMS;

use super::builder::Builder;

/// Running maxima `U` of access extents per (array, reader), per dimension and side.
pub(super) type Running = HashMap<(ArrayId, usize), [[LinExpr; 2]; 3]>;

/// What stencil `i` loads from slow memory.
pub(super) struct Loads {
    /// `|L_i|`.
    pub(super) sum: LinExpr,
    /// `ℓ_{i,a}` per array read.
    pub(super) flags: Vec<LinExpr>,
    /// Load lines per dimension, both sides together.
    pub(super) lines: [LinExpr; 3],
}

/// For array `a` read by stencil `i`: the latest stencil before `i` that reads or writes `a`.
pub(super) fn previous_toucher(analysis: &Analysis, a: ArrayId, i: usize) -> Option<usize> {
    (0..i)
        .rev()
        .find(|&j| analysis.stencils[j].array == a || analysis.stencils[j].bounds.contains_key(&a))
}

/// For array `a` read by stencil `i`: the latest earlier stencil that reads it.
fn previous_reader(analysis: &Analysis, a: ArrayId, i: usize) -> Option<usize> {
    (0..i)
        .rev()
        .find(|&j| analysis.stencils[j].bounds.contains_key(&a))
}

impl Builder {
    /// The store flag `w_i`: 1 for an output, else 1 when a reader lies after the group ends.
    pub(super) fn store_flag(&mut self, analysis: &Analysis, i: usize) -> LinExpr {
        let info = &analysis.stencils[i];
        if info.is_output {
            LinExpr::constant(1.0)
        } else {
            let last = *info.readers.iter().max().unwrap_or(&i);
            LinExpr::constant(1.0).plus(&self.same(i, last), -1.0)
        }
    }

    /// Loads `ℓ_{i,a}` of stencil `i` (exact, from the "same group" tests), the running maxima
    /// of access extents per array and the load lines per dimension (the growth beyond what an
    /// earlier in-group reader loaded).
    pub(super) fn loads_and_lines(
        &mut self,
        analysis: &Analysis,
        i: usize,
        widths: &[[[LinExpr; 2]; 3]],
        running: &mut Running,
    ) -> Loads {
        let info = &analysis.stencils[i];
        let mut load_sum = LinExpr::new();
        let mut load_flags = Vec::new();
        let mut lines: [LinExpr; 3] = Default::default();
        for (&a, bd) in &info.bounds {
            let load = match previous_toucher(analysis, a, i) {
                Some(j) => LinExpr::constant(1.0).plus(&self.same(j, i), -1.0),
                None => LinExpr::constant(1.0),
            };
            load_sum.add_expr(&load, 1.0);
            load_flags.push(load.clone());
            self.array_lines(analysis, i, (a, bd), widths, running, &mut lines);
        }

        Loads {
            sum: load_sum,
            flags: load_flags,
            lines,
        }
    }

    /// The load lines of array `a`, read by stencil `i` within `bd`, added to `lines`; and its
    /// running maxima at `i`, recorded in `running` for the later readers.
    fn array_lines(
        &mut self,
        analysis: &Analysis,
        i: usize,
        (a, bd): (ArrayId, &Bounds),
        widths: &[[[LinExpr; 2]; 3]],
        running: &mut Running,
        lines: &mut [LinExpr; 3],
    ) {
        let n_st = analysis.stencils.len();
        let produced = match analysis.arrays[a].kind {
            ArrayKind::Stencil(p) => self.same(p, i),
            ArrayKind::Input => LinExpr::new(),
        };
        let prev_reader = previous_reader(analysis, a, i);
        let has_later_reader =
            ((i + 1)..n_st).any(|k| analysis.stencils[k].bounds.contains_key(&a));
        let mut u_here: [[LinExpr; 2]; 3] = Default::default();
        for d in 0..3 {
            for side in 0..2 {
                let reach = if side == 0 { -bd[d].0 } else { bd[d].1 }.max(0) as f64;
                let alpha = widths[i][d][side]
                    .clone()
                    .plus(&LinExpr::constant(reach), 1.0);
                let alpha_ub = self.upper(&alpha);
                let tag = format!("{}{i}_{}_{}", DIMS[d], ["m", "p"][side], a);
                // V = same(prev, i) * U_prev, exactly.
                let (v, v_ub) = match prev_reader {
                    Some(j) => {
                        let u_prev = running[&(a, j)][d][side].clone();
                        let u_ub = self.upper(&u_prev);
                        let same = self.same(j, i);
                        let v = gated(&mut self.milp, &u_prev, &same, u_ub, &format!("v_{tag}"));
                        (v, u_ub)
                    }
                    None => (LinExpr::new(), 0.0),
                };
                u_here[d][side] =
                    self.running_max((&alpha, alpha_ub), (&v, v_ub), has_later_reader, &tag);
                if alpha_ub <= 0.0 {
                    continue;
                }
                let line = self.growth_line((&alpha, alpha_ub), &v, &produced, &tag);
                lines[d].add(line, 1.0);
            }
        }
        running.insert((a, i), u_here);
    }

    /// `U = max(alpha, V)`, exactly, where a later reader will use it.
    fn running_max(
        &mut self,
        (alpha, alpha_ub): (&LinExpr, f64),
        (v, v_ub): (&LinExpr, f64),
        has_later_reader: bool,
        tag: &str,
    ) -> LinExpr {
        if v_ub <= 0.0 {
            alpha.clone()
        } else if !has_later_reader {
            LinExpr::new() // unused
        } else {
            let (u, record) = recorded_max(
                &mut self.milp,
                alpha,
                v,
                alpha_ub.max(v_ub),
                &format!("u_{tag}"),
            );
            self.linearizations.push(record);
            u
        }
    }

    /// `lines >= alpha - V - ub * produced`: the growth `max(0, alpha - V)`, or the full access
    /// extent when `V = 0`; none when the array is produced in the group.
    fn growth_line(
        &mut self,
        (alpha, alpha_ub): (&LinExpr, f64),
        v: &LinExpr,
        produced: &LinExpr,
        tag: &str,
    ) -> VarId {
        let line = self
            .milp
            .add_var(format!("lines_{tag}"), 0.0, alpha_ub, false);
        let rhs = alpha.clone().plus(v, -1.0).plus(produced, -alpha_ub);
        self.milp.add_relation(
            format!("lines_{tag}_ge"),
            &LinExpr::var(line),
            Sense::Ge,
            &rhs,
        );
        line
    }

    /// The base flag `m_i = [|L_i| + w_i > 0]` (exact) and the stream weight `|L_i| + w_i`.
    pub(super) fn base_flag(
        &mut self,
        i: usize,
        loads: &Loads,
        store: &LinExpr,
    ) -> (LinExpr, LinExpr) {
        let (load_sum, load_flags) = (&loads.sum, &loads.flags);
        let s_weight = load_sum.clone().plus(store, self.store_weight).normalized();
        let base = if s_weight.terms.is_empty() {
            LinExpr::constant((s_weight.constant > 0.0) as u8 as f64)
        } else {
            let m = self.milp.add_var(format!("m_{i}"), 0.0, 1.0, false);
            let mv = LinExpr::var(m);
            for (k, f) in load_flags.iter().chain(std::iter::once(store)).enumerate() {
                self.milp
                    .add_relation(format!("m_{i}_ge_{k}"), &mv, Sense::Ge, f);
            }
            self.milp
                .add_relation(format!("m_{i}_le"), &mv, Sense::Le, &s_weight);
            mv
        };

        (s_weight, base)
    }
}
