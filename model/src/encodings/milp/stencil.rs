//! One stencil of the digits MILP: its store and loads, its weights per part, its cost terms
//! (`formula`, over [`MilpTerms`]) and its feasibility rows.

use std::collections::HashMap;

use crate::cost_model::evaluate::stream_shape;
use crate::cost_model::formula;
use crate::encodings::lp::{LinExpr, VarId};
use crate::formats::machine::ModelMachine;
use crate::language::analysis::Analysis;
use crate::language::program::DIMS;

use super::builder::Builder;
use super::loads::{Loads, Running};
use super::terms::MilpTerms;

/// What one stencil hands the next: the running maxima of access extents, the arrays touched
/// since the group's start (the cache row's count), and, when the machine charges crowding,
/// the crowded flags so far and the group's stream weight up to the previous stencil.
#[derive(Default)]
pub(super) struct Carried {
    running: Running,
    count: Option<LinExpr>,
    crowded_flags: Vec<VarId>,
    streams_prefix: Option<LinExpr>,
}

/// A weight with its upper bound.
type Bounded = (LinExpr, f64);

/// Stencil `i`'s weights per part (fast, slow base, slow stream, compute), each a constant
/// and one per dimension, in `formula::stencil_counts`'s order.
type Weights = [[Bounded; 4]; 4];

/// Stencil `i`'s crowded flag, its group's stream weight up to `i` and its `whole_rows_i` flag
/// ([`Builder::crowded_flag`]).
type Crowd = (VarId, LinExpr, VarId);

impl Builder {
    /// Stencil `i`: adds its cost to `objective` and its rows to the MILP; `widths` are the
    /// evaluation widths, `stream` its stream flag.
    pub(super) fn stencil(
        &mut self,
        (analysis, machine): (&Analysis, &ModelMachine),
        i: usize,
        widths: &[[[LinExpr; 2]; 3]],
        stream: VarId,
        carried: &mut Carried,
        objective: &mut LinExpr,
    ) {
        let ext: [LinExpr; 3] =
            [0, 1, 2].map(|d| widths[i][d][0].clone().plus(&widths[i][d][1], 1.0));
        let store = self.store_flag(analysis, i);
        let loads = self.loads_and_lines(analysis, i, widths, &mut carried.running);
        let (s_weight, base) = self.base_flag(i, &loads, &store);
        let weights = self.weights(analysis, i, &ext, &loads, [&store, &base, &s_weight]);

        // Crowding (`evaluate::crowded`): charged when the machine has a charge and a limit.
        let crowding = machine.params.crowded;
        let crowd = (crowding.stream_body > 0.0 && crowding.row_streams > 0).then(|| {
            let (flag, prefix, whole) = self.crowded_flag(
                i,
                &s_weight,
                carried.streams_prefix.as_ref(),
                &carried.crowded_flags,
            );
            carried.crowded_flags.push(flag);
            carried.streams_prefix = Some(prefix.clone());
            (flag, prefix, whole)
        });
        let (total, cross) = self.cost(analysis, machine, i, &weights, crowd, objective);

        self.parallel_rows(i, &total, machine);
        self.even_tile_rows(i, analysis.domain, machine);
        let count = self.cache_row(
            analysis,
            machine,
            i,
            &total,
            &cross,
            stream,
            carried.count.take(),
        );
        carried.count = Some(count);
    }

    /// The weights of stencil `i` with evaluation extents `ext`: fetch and operations times
    /// `1, E^d`, the base flag `m, m^d = m E^d`, the stream weight `s, s^d = lines^d + w E^d`
    /// (`flags` are `w`, `m` and `s`).
    fn weights(
        &mut self,
        analysis: &Analysis,
        i: usize,
        ext: &[LinExpr; 3],
        loads: &Loads,
        [store, base, s_weight]: [&LinExpr; 3],
    ) -> Weights {
        let info = &analysis.stencils[i];
        let ext_ub: [f64; 3] = [0, 1, 2].map(|d| self.upper(&ext[d]));
        let mut base_d: [LinExpr; 3] = Default::default();
        let mut stream_d: [LinExpr; 3] = Default::default();
        for d in 0..3 {
            let me = format!("mE_{}{i}", DIMS[d]);
            base_d[d] = self.gated_lower(&ext[d], base, ext_ub[d], &me);
            let we = self.gated_lower(&ext[d], store, ext_ub[d], &format!("wE_{}{i}", DIMS[d]));
            stream_d[d] = loads.lines[d].clone().plus(&we, self.store_weight);
        }
        let scaled = |k: f64| -> [Bounded; 4] {
            [
                (LinExpr::constant(k), k),
                (ext[0].scaled(k), k * ext_ub[0]),
                (ext[1].scaled(k), k * ext_ub[1]),
                (ext[2].scaled(k), k * ext_ub[2]),
            ]
        };
        let bounded = |e: &LinExpr| (e.clone(), self.upper(e));
        let base_w = [base, &base_d[0], &base_d[1], &base_d[2]].map(bounded);
        let stream_w = [s_weight, &stream_d[0], &stream_d[1], &stream_d[2]].map(bounded);
        [
            scaled(info.fetch_weight as f64),
            base_w,
            stream_w,
            scaled(info.operations as f64),
        ]
    }

    /// The cost of stencil `i`, added to `objective`: `formula`'s counts and seconds over MILP
    /// expressions, every product of a tile count with a bounded expression a binary-digit
    /// product (shared when the same product appears twice; a part whose parameter is zero gets
    /// none), and the loop-bound overhead of the tile total `N = n^x (n^y n^z)`. Adds the
    /// crowding rows; returns `N` and the tile counts inside the stream dimension
    /// (`evaluate::tile_cells`): `n^x n^y` along z, `n^x` along y.
    fn cost(
        &mut self,
        analysis: &Analysis,
        machine: &ModelMachine,
        i: usize,
        weights: &Weights,
        crowd: Option<Crowd>,
        objective: &mut LinExpr,
    ) -> (LinExpr, LinExpr) {
        let dom = analysis.counted_domain(i);
        let crowding = machine.params.crowded;
        let nz = self.tiles_expr(i, 2);
        let mut terms = MilpTerms {
            b: self,
            i,
            params: machine.params.table(),
            memo: HashMap::new(),
            crowd: crowd
                .as_ref()
                .map(|(flag, _, _)| (*flag, crowding.stream_body)),
            exposed: machine.params.exposed,
        };
        let counts = formula::stencil_counts(&mut terms, dom.map(|d| d as u128), weights);
        let t = formula::stencil_terms(&mut terms, &counts, &i.to_string());
        objective.add_expr(&t.peel, 1.0).add_expr(&t.body, 1.0);

        let tile_range = terms.b.tile_range;
        let nz_count = (nz.clone(), tile_range[2].1 as f64);
        let nyz = formula::Algebra::times_tiles(&mut terms, 1, &nz_count);
        let total_count = formula::Algebra::times_tiles(&mut terms, 0, &nyz);
        let overhead = formula::overhead(&mut terms, &total_count, 1);
        objective.add_expr(&overhead, 1.0);
        if let Some((flag, prefix, whole)) = &crowd {
            let limit = crowding.row_streams;
            let flags = (*flag, prefix, *whole);
            terms.b.crowded_rows(i, dom, limit, flags, &nz, &nyz.0);
        }
        let cross = if stream_shape(analysis).dim == 2 {
            let ny = (terms.b.tiles_expr(i, 1), tile_range[1].1 as f64);
            formula::Algebra::times_tiles(&mut terms, 0, &ny).0
        } else {
            terms.b.tiles_expr(i, 0)
        };
        (total_count.0, cross)
    }
}
