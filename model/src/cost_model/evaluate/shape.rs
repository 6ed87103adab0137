//! What a group's stencils derive independently of its tiling: evaluation widths, loads,
//! stores and weights ([`GroupShape`]), and from it the group's time and cache test for any
//! tiling, so that a search derives it once per range.

use std::ops::Range;

use super::{
    cache_capacity, crowded, crowding_charge, exposed_share, limits_arrays, overhead_seconds,
    prefers_stream, stream_shape, stream_shape_on, tile_cells, Counts, PeelBodyCount, StreamShape,
};
use crate::cost_model::formula::{stencil_counts, stencil_terms, Numeric, StencilCounts};
use crate::formats::machine::{ModelMachine, Params};
use crate::formats::model_kind::ModelKind;
use crate::language::analysis::{Analysis, ArrayId, ArrayKind, Extent};

/// What a store counts in the stream weights of the default form, against 1 for a load: a store
/// to slow memory first reads the line it writes (write-allocate) and later writes it back, so
/// it moves twice the bytes of a load. Counted once, `learn` fits the base parameter `B` to the
/// stores of its training stencils, and `B` charges every loading stencil of a real program for
/// a store it does not make (docs/decisions/0006-stores-count-twice.md). The published form
/// counts it once (`ModelKind::store_weight`).
pub const STORE_WEIGHT: u64 = ModelKind::Linear.store_weight();

/// Weights (w, w^x, w^y, w^z) of one part of the model for one stencil.
pub type Weights = [u64; 4];

/// What the model derives for one stencil of a group that does not depend on tile counts.
#[derive(Clone, Debug, PartialEq)]
pub struct StencilShape {
    pub widths: Extent,
    pub loads: Vec<ArrayId>,
    pub store: bool,
    pub fast_weights: Weights,
    pub base_weights: Weights,
    pub stream_weights: Weights,
    pub compute_weights: Weights,
    /// `[fast, base, stream, compute]` weights as the count formulas take them.
    pub weights_u128: [[u128; 4]; 4],
    /// [`count_coefficients`] of the weights on the stencil's counted domain: what
    /// [`GroupShape::times`] counts with on the domain the shape was derived on.
    pub coefficients: [[[u128; 4]; 2]; 4],
}

/// Everything about the stencils `range` fused into one group that does not depend on its tile
/// counts: widths, loads, stores, weights, and the arrays its tiles keep in cache. The cost for
/// any tiling follows from it ([`GroupShape::time`], [`group_cost_of`](super::group_cost_of)), so a search over
/// tilings derives it once per range.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupShape {
    pub range: Range<usize>,
    pub stencils: Vec<StencilShape>,
    /// Distinct arrays touched by the group (the cache test counts them).
    pub arrays_touched: usize,
    /// `Σ s` over the group's stencils: what [`crowded`] multiplies the rows by.
    pub stream_weight: u64,
    /// The domain of the analysis the shape was derived on (its stencils' coefficients hold
    /// their counted domains).
    pub domain: [usize; 3],
}

/// The tile-independent part of [`group_cost`](super::group_cost), a store counting
/// `store_weight` in the stream weights (`ModelMachine::model`'s).
pub fn group_shape(analysis: &Analysis, range: Range<usize>, store_weight: u64) -> GroupShape {
    let in_group = |s: usize| range.contains(&s);
    let start = range.start;
    let len = range.len();

    // Evaluation widths, last stencil first.
    let mut widths: Vec<Extent> = vec![[[0; 2]; 3]; len];
    for i in range.clone().rev() {
        let mut e = [[0usize; 2]; 3];
        for &r in &analysis.stencils[i].readers {
            if !in_group(r) {
                continue;
            }
            let b = analysis.stencils[r].bounds[&analysis.stencils[i].array];
            let er = widths[r - start];
            for d in 0..3 {
                e[d][0] = e[d][0].max(er[d][0] + (-b[d].0).max(0) as usize);
                e[d][1] = e[d][1].max(er[d][1] + b[d].1.max(0) as usize);
            }
        }
        widths[i - start] = e;
    }

    let mut stencils = Vec::with_capacity(len);
    let mut touched = std::collections::BTreeSet::new();
    for i in range.clone() {
        touched.extend(analysis.touched(i));
        let info = &analysis.stencils[i];
        let e = widths[i - start];
        let ext = |d: usize| (e[d][0] + e[d][1]) as u64;
        let produced_in_group =
            |a: ArrayId| matches!(analysis.arrays[a].kind, ArrayKind::Stencil(p) if in_group(p));
        let earlier_readers =
            |a: ArrayId| (start..i).filter(move |&j| analysis.stencils[j].bounds.contains_key(&a));
        let mut loads = Vec::new();
        // Lines loaded per dimension, both sides together.
        let mut lines = [0u64; 3];
        for &a in info.bounds.keys() {
            if produced_in_group(a) {
                continue;
            }
            let alpha = |s: usize, d: usize, side: usize| -> u64 {
                let bd = analysis.stencils[s].bounds[&a][d];
                let reach = if side == 0 { -bd.0 } else { bd.1 }.max(0) as usize;
                (widths[s - start][d][side] + reach) as u64
            };
            let earlier: Vec<usize> = earlier_readers(a).collect();
            if earlier.is_empty() {
                loads.push(a);
                for (d, l) in lines.iter_mut().enumerate() {
                    *l += alpha(i, d, 0) + alpha(i, d, 1);
                }
            } else {
                for (d, l) in lines.iter_mut().enumerate() {
                    for side in 0..2 {
                        let before = earlier
                            .iter()
                            .map(|&j| alpha(j, d, side))
                            .max()
                            .unwrap_or(0);
                        *l += alpha(i, d, side).saturating_sub(before);
                    }
                }
            }
        }
        let store = info.is_output || info.readers.iter().any(|&r| !in_group(r));
        let w = store_weight * store as u64;
        let s_weight = loads.len() as u64 + w;
        let m = (s_weight > 0) as u64;
        let c = info.fetch_weight;
        let fast_weights = [c, c * ext(0), c * ext(1), c * ext(2)];
        let f = info.operations;
        let compute_weights = [f, f * ext(0), f * ext(1), f * ext(2)];
        let base_weights = [m, m * ext(0), m * ext(1), m * ext(2)];
        let stream_weights = [
            s_weight,
            lines[0] + w * ext(0),
            lines[1] + w * ext(1),
            lines[2] + w * ext(2),
        ];
        stencils.push(StencilShape::new(
            (e, loads, store),
            [fast_weights, base_weights, stream_weights, compute_weights],
            analysis.counted_domain(i),
        ));
    }
    let stream_weight = stencils.iter().map(|s| s.stream_weights[0]).sum();
    GroupShape {
        range,
        stencils,
        arrays_touched: touched.len(),
        stream_weight,
        domain: analysis.domain,
    }
}

/// The count formulas of `weights` with the domain `dom` multiplied in, so that the counts for
/// tile counts `n` take three products each: per part, the peel's `[p0, p1, p2]` in
/// `n^x (p0 + n^y p1 + n^z p2)` and the body's `[b0, b1, b2, b3]` in
/// `b0 + n^x b1 + n^y b2 + n^z b3`. They are the integers of `formula::peel_count` and
/// `formula::body_count`, grouped otherwise.
pub fn count_coefficients(weights: &[[u128; 4]; 4], dom: [u128; 3]) -> [[[u128; 4]; 2]; 4] {
    let [x, y, z] = dom;
    weights.map(|w| {
        [
            [w[0] * y * z, w[2] * z, w[3] * y, 0],
            [w[0] * x * y * z, w[1] * y * z, w[2] * x * z, w[3] * x * y],
        ]
    })
}

impl StencilShape {
    /// The shape of a stencil of evaluation widths `widths` that loads `loads` and stores or
    /// not, with weights `[fast, base, stream, compute]`, on its counted domain `counted`.
    fn new(
        (widths, loads, store): (Extent, Vec<ArrayId>, bool),
        [fast_weights, base_weights, stream_weights, compute_weights]: [Weights; 4],
        counted: [usize; 3],
    ) -> StencilShape {
        let weights_u128 = [fast_weights, base_weights, stream_weights, compute_weights]
            .map(|w| w.map(u128::from));
        StencilShape {
            widths,
            loads,
            store,
            fast_weights,
            base_weights,
            stream_weights,
            compute_weights,
            weights_u128,
            coefficients: count_coefficients(&weights_u128, counted.map(|d| d as u128)),
        }
    }

    /// `formula::stencil_counts` of the weights on the counted domain the shape was derived
    /// on, for tile counts `n`, from [`count_coefficients`]: the same integers, in a quarter of
    /// the products (the range table's inner loop).
    pub fn counts_at(&self, n: [u128; 3]) -> StencilCounts<u128> {
        self.coefficients.map(|[p, b]| {
            [
                Some(n[0] * (p[0] + n[1] * p[1] + n[2] * p[2])),
                Some(b[0] + n[0] * b[1] + n[1] * b[2] + n[2] * b[3]),
            ]
        })
    }

    /// The access counts for tile counts `n` on a domain `dom` (`formula::stencil_counts`).
    pub fn counts(&self, dom: [u128; 3], n: [u128; 3]) -> Counts {
        self.counts_on_lanes(dom, n, [1, 1])
    }

    /// [`StencilShape::counts`] on a GPU: the fast and compute bodies per lane slot
    /// ([`scale_to_lanes`]).
    pub fn counts_on_lanes(&self, dom: [u128; 3], n: [u128; 3], lanes: [u128; 2]) -> Counts {
        let params = [[0.0f64; 2]; 4];
        let mut numeric = Numeric {
            n,
            params: &params,
            crowded: None,
            exposed: None,
        };
        let mut c = stencil_counts(&mut numeric, dom, &self.weights_u128);
        scale_to_lanes(&mut c, lanes);
        counts_of(&c)
    }
}

fn counts_of(c: &StencilCounts<u128>) -> Counts {
    let part = |p: usize| PeelBodyCount {
        peel: c[p][0].unwrap_or(0),
        body: c[p][1].unwrap_or(0),
    };
    Counts {
        fast: part(0),
        slow_base: part(1),
        slow_stream: part(2),
        compute: part(3),
    }
}

/// On a GPU, a stencil's fast and compute body counts per lane slot instead of per cell
/// (`[slots, cells]` from [`GroupShape::gpu_lanes`]): an idle lane of a round costs what a busy
/// one does. On an H200 the training chains whose first stencils' loop boxes overhang the
/// block by a halo ran 1.6-1.8x slower than the counts said, against those without
/// (docs/decisions/0034-gpu-lane-slots.md).
pub fn scale_to_lanes(counts: &mut StencilCounts<u128>, [slots, cells]: [u128; 2]) {
    for part in [0, 3] {
        if let Some(body) = counts[part][1].as_mut() {
            *body = *body * slots / cells.max(1);
        }
    }
}

impl GroupShape {
    /// Whether the group is [`crowded`] with `tiles` under the machine's limit.
    pub fn crowded(&self, domain: [usize; 3], params: &Params, tiles: [usize; 3]) -> bool {
        crowded(
            domain,
            tiles,
            self.stream_weight,
            params.crowded.row_streams,
        )
    }

    /// The group's time for `tiles` (feasibility not checked): the same number as
    /// [`group_cost_of`](super::group_cost_of)'s `time`, without building the report.
    pub fn time(&self, analysis: &Analysis, machine: &ModelMachine, tiles: [usize; 3]) -> f64 {
        self.times(analysis, machine, tiles).0
    }

    /// `(time, fast)` for `tiles`: the group's time as [`GroupShape::time`], and its fast-memory
    /// part alone (`Σ fast_peel + fast_body` plus the loop overhead, counted per cell also on a
    /// GPU), a lower bound of the time that only grows when the range grows (widths, and so
    /// fast weights, only grow).
    pub fn times(
        &self,
        analysis: &Analysis,
        machine: &ModelMachine,
        tiles: [usize; 3],
    ) -> (f64, f64) {
        let params = &machine.params;
        let lanes = self.gpu_lanes(analysis, machine, tiles);
        let table = params.table();
        let crowded = self.crowded(analysis.domain, params, tiles);
        let mut numeric = Numeric {
            n: tiles.map(|t| t as u128),
            params: &table,
            crowded: crowding_charge(params, crowded),
            exposed: exposed_share(params),
        };
        let (mut sum, mut fast) = (0.0, 0.0);
        // A shape priced on another domain (a rank's) counts from the formulas.
        let derived_here = analysis.domain == self.domain;
        for (i, (s, stencil)) in self.range.clone().zip(&self.stencils).enumerate() {
            let mut counts = if derived_here {
                stencil.counts_at(numeric.n)
            } else {
                let dom = analysis.counted_domain(s).map(|d| d as u128);
                stencil_counts(&mut numeric, dom, &stencil.weights_u128)
            };
            let t = stencil_terms(&mut numeric, &counts, "");
            // The bound counts per cell: a lane slot per cell at least, and the block shape,
            // and so the slots, may change when the range grows.
            fast += t.fast_peel + t.fast_body;
            let t = match &lanes {
                Some(l) => {
                    scale_to_lanes(&mut counts, l[i]);
                    stencil_terms(&mut numeric, &counts, "")
                }
                None => t,
            };
            sum += t.peel + t.body;
        }
        let total = tiles.iter().map(|&t| t as u64).product::<u64>();
        let overhead = overhead_seconds(params, total, self.stencils.len());
        (sum + overhead, fast + overhead)
    }

    /// Whether the group's working set fits the cache with `tiles`, streaming where that
    /// shrinks it ([`prefers_stream`]; `stream` None: never): `arrays * cells <= C * N`
    /// ([`tile_cells`]), in integers, and `arrays <= group_arrays` where [`limits_arrays`].
    pub fn fits_cache(
        &self,
        analysis: &Analysis,
        machine: &ModelMachine,
        stream: Option<StreamShape>,
        tiles: [usize; 3],
    ) -> bool {
        let shape = stream.unwrap_or(StreamShape {
            dim: 2,
            window: 1,
            always: false,
        });
        let streams = stream.is_some_and(|s| prefers_stream(analysis.domain, s, tiles));
        if machine.gpu {
            return self.shared_values(analysis, tiles, streams, machine.block_threads)
                <= cache_capacity(machine);
        }
        let (cells, total) = tile_cells(analysis.domain, shape, tiles, streams);
        // The program's stream shape walks every access: asked for only past the limit.
        (self.arrays_touched <= machine.group_arrays || !limits_arrays(stream_shape(analysis)))
            && self.arrays_touched as u128 * cells <= cache_capacity(machine) as u128 * total
    }
}

impl GroupShape {
    /// On a GPU: the values of shared memory one thread block of this group needs with
    /// `tiles`, streamed along z or not, in blocks of at most `max_threads` threads: the sum of
    /// its tile buffers' sizes as the CUDA kernels lay them out (`boxes::block_plan`, halos and
    /// rolling windows included), less the buffers kept in register windows. Inputs and stored
    /// arrays are read and written in global memory and not counted.
    pub fn shared_values(
        &self,
        analysis: &Analysis,
        tiles: [usize; 3],
        stream: bool,
        max_threads: usize,
    ) -> u64 {
        self.block_plan(analysis, tiles, stream, max_threads)
            .shared_values()
    }

    /// On a GPU (None on a CPU), per stencil of the group, the lane slots its loop boxes take
    /// against their cells over all tiles, `[slots, cells]` per x-y plane: the block
    /// ([`GroupShape::block_plan`]) walks each stencil's loop box in rounds of `bx x by`
    /// threads, and a round with fewer cells than threads leaves lanes idle that still issue
    /// ([`boxes::lane_slots`](crate::cost_model::boxes::lane_slots) along x and y).
    pub fn gpu_lanes(
        &self,
        analysis: &Analysis,
        machine: &ModelMachine,
        tiles: [usize; 3],
    ) -> Option<Vec<[u128; 2]>> {
        if !machine.gpu {
            return None;
        }
        let stream = prefers_stream(analysis.domain, stream_shape_on(analysis, machine), tiles);
        let block = self
            .block_plan(analysis, tiles, stream, machine.block_threads)
            .block;
        let domain = analysis.domain;
        Some(
            self.range
                .clone()
                .zip(&self.stencils)
                .map(|(s, stencil)| {
                    let mut lanes = [1u128, 1u128];
                    for d in 0..2 {
                        let tile = domain[d].div_ceil(tiles[d].max(1));
                        let (slots, cells) = crate::cost_model::boxes::lane_slots(
                            domain[d],
                            tile,
                            stencil.widths[d],
                            analysis.stencils[s].extent[d],
                            block[d],
                        );
                        lanes[0] *= slots;
                        lanes[1] *= cells.max(1);
                    }
                    lanes
                })
                .collect(),
        )
    }

    /// The block shape and tile buffers of this group's CUDA kernel (`boxes::block_plan`),
    /// staging nothing: what the shared-memory test counts (staged inputs only ever use the
    /// capacity the buffers leave free).
    pub fn block_plan(
        &self,
        analysis: &Analysis,
        tiles: [usize; 3],
        stream: bool,
        max_threads: usize,
    ) -> crate::cost_model::boxes::BlockPlan {
        let widths: Vec<Extent> = self.stencils.iter().map(|s| s.widths).collect();
        crate::cost_model::boxes::block_plan(
            analysis,
            &self.range,
            &widths,
            tiles,
            stream,
            crate::cost_model::boxes::BlockLimits {
                threads: max_threads,
                stage_values: 0,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::language::generate::{random_language_program, RandomShape};
    use crate::language::program::Program;

    /// `counts_at` gives the integers of `formula::stencil_counts` for every stencil of every
    /// range of random programs (2-D fields among them), at random tile counts up to the domain.
    #[test]
    fn counts_at_equals_the_count_formulas() {
        let shape = RandomShape {
            max_stencils: 6,
            max_domain: 40,
            ..RandomShape::default()
        };
        let params = [[0.0f64; 2]; 4];
        let mut rng = crate::support::rng::Rng::new(3);
        for seed in 0..60 {
            let program = Program::from_yaml(&random_language_program(seed, &shape)).unwrap();
            let a = Analysis::new(&program).unwrap();
            let n = a.stencils.len();
            for start in 0..n {
                for end in start + 1..=n {
                    let group = group_shape(&a, start..end, STORE_WEIGHT);
                    for _ in 0..4 {
                        let tiles = a.domain.map(|d| rng.range(1, d as i64) as u128);
                        let mut numeric = Numeric {
                            n: tiles,
                            params: &params,
                            crowded: None,
                            exposed: None,
                        };
                        for (s, stencil) in (start..end).zip(&group.stencils) {
                            let dom = a.counted_domain(s).map(|d| d as u128);
                            let want = stencil_counts(&mut numeric, dom, &stencil.weights_u128);
                            assert_eq!(stencil.counts_at(tiles), want, "seed {seed}, stencil {s}");
                        }
                    }
                }
            }
        }
    }
}
