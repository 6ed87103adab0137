//! The seam between the exact searches and the cost model: [`CostModel`], the few questions the
//! range table, the DP over it and the inline search ask of a model, and [`Absinthe`], the
//! ABSINTHE linear model (`cost`) answering them.
//!
//! The searches rely on one property of every model: a group's cost depends only on its own
//! stencils and its tiling, so the optimum is a shortest path over group boundaries. The
//! search space itself (admissible tile counts, parallel efficiency, the user's restrictions,
//! streaming) belongs to the machine and the options, not to the model.

use std::ops::Range;

use crate::cost_model::evaluate::{group_shape, term_seconds, GroupShape, StreamShape};
use crate::formats::machine::ModelMachine;
use crate::language::analysis::Analysis;

/// What the exact searches ask of a cost model, per group (a contiguous range of stencils fused
/// into one loop nest). Times are in seconds.
pub trait CostModel: Sync {
    /// What the model derives once for a range, whatever its tiling (ABSINTHE: the
    /// [`GroupShape`]); the searches ask [`CostModel::fits`] and [`CostModel::group_seconds`]
    /// of it for every tiling.
    type Group;

    /// The machine the model prices: the searches read the search space (threads, slacks,
    /// streaming) and the operation weights an analysis is weighed with off it.
    fn machine(&self) -> &ModelMachine;

    /// The tile-independent part of the stencils `range` fused into one group.
    fn group(&self, analysis: &Analysis, range: Range<usize>) -> Self::Group;

    /// Whether the group's working set fits the machine's fast memory with `tiles` tile counts
    /// (streaming where that shrinks it when `stream` is Some). A group that fits no tiling ends
    /// the ranges from its start: a longer range from the same start must fit no more tilings.
    fn fits(
        &self,
        analysis: &Analysis,
        group: &Self::Group,
        stream: Option<StreamShape>,
        tiles: [usize; 3],
    ) -> bool;

    /// `(seconds, bound)` of the group with `tiles`: its time, and a lower bound of that time
    /// which does not decrease when the range grows at its end (the range table prunes with the
    /// least bound over a range's feasible tilings). A NaN time rules the tiling out.
    fn group_seconds(
        &self,
        analysis: &Analysis,
        group: &Self::Group,
        tiles: [usize; 3],
    ) -> (f64, f64);

    /// A lower bound of what stencil `stencil` adds to any group that holds it, in any tiling,
    /// in seconds: the bounds of stencils `0..s` summed bound every cover of them.
    fn stencil_bound(&self, analysis: &Analysis, stencil: usize) -> f64;
}

/// The ABSINTHE model (`evaluate::evaluate`) on one machine.
#[derive(Clone, Copy, Debug)]
pub struct Absinthe<'a> {
    pub machine: &'a ModelMachine,
}

impl<'a> Absinthe<'a> {
    pub fn new(machine: &'a ModelMachine) -> Absinthe<'a> {
        Absinthe { machine }
    }
}

impl CostModel for Absinthe<'_> {
    type Group = GroupShape;

    fn machine(&self) -> &ModelMachine {
        self.machine
    }

    fn group(&self, analysis: &Analysis, range: Range<usize>) -> GroupShape {
        group_shape(analysis, range, self.machine.model.store_weight())
    }

    /// [`GroupShape::fits_cache`]: the cache test in integers (on a GPU, shared memory).
    fn fits(
        &self,
        analysis: &Analysis,
        group: &GroupShape,
        stream: Option<StreamShape>,
        tiles: [usize; 3],
    ) -> bool {
        group.fits_cache(analysis, self.machine, stream, tiles)
    }

    /// [`GroupShape::times`]: the time, and its fast-memory part (widths, and so fast weights,
    /// only grow with the range).
    fn group_seconds(
        &self,
        analysis: &Analysis,
        group: &GroupShape,
        tiles: [usize; 3],
    ) -> (f64, f64) {
        group.times(analysis, self.machine, tiles)
    }

    /// The stencil alone at its least fast-memory time (widths 0, one tile).
    fn stencil_bound(&self, analysis: &Analysis, stencil: usize) -> f64 {
        let dom = analysis.counted_domain(stencil).map(|d| d as u128);
        let lone = group_shape(
            analysis,
            stencil..stencil + 1,
            self.machine.model.store_weight(),
        );
        let t = term_seconds(
            &self.machine.params,
            &lone.stencils[0].counts(dom, [1, 1, 1]),
        );
        t[0] + t[1]
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cost_model::options::SearchSpace;
    use crate::cost_model::search::{admissible_tilings, exhaustive, exhaustive_with};
    use crate::formats::machine::Machine;
    use crate::language::generate::{random_program, RandomShape};
    use crate::language::program::Program;

    /// A model unlike ABSINTHE, to show the searches take any: a stencil weighs one plus its
    /// accesses; a group pays a launch, recomputes a share of its weight that grows with the
    /// square of its length and falls with its tiles along x, and pays per tile; it fits when
    /// its stencils times the cells of one tile stay within `capacity`.
    struct Toy {
        machine: ModelMachine,
        capacity: usize,
    }

    const LAUNCH: f64 = 1.0;

    fn weight(analysis: &Analysis, stencil: usize) -> f64 {
        1.0 + analysis.stencils[stencil].accesses.len() as f64
    }

    impl CostModel for Toy {
        /// The range and its stencils' weight.
        type Group = (Range<usize>, f64);

        fn machine(&self) -> &ModelMachine {
            &self.machine
        }

        fn group(&self, analysis: &Analysis, range: Range<usize>) -> Self::Group {
            let w = range.clone().map(|i| weight(analysis, i)).sum();
            (range, w)
        }

        fn fits(
            &self,
            analysis: &Analysis,
            group: &Self::Group,
            _stream: Option<StreamShape>,
            tiles: [usize; 3],
        ) -> bool {
            let cells: usize = (0..3)
                .map(|d| analysis.domain[d].div_ceil(tiles[d]))
                .product();
            group.0.len() * cells <= self.capacity
        }

        fn group_seconds(
            &self,
            _analysis: &Analysis,
            group: &Self::Group,
            tiles: [usize; 3],
        ) -> (f64, f64) {
            let (range, w) = group;
            let total: usize = tiles.iter().product();
            let recompute = 0.25 * (range.len() - 1).pow(2) as f64 / tiles[0] as f64;
            (LAUNCH + w * (1.0 + recompute) + 0.01 * total as f64, *w)
        }

        fn stencil_bound(&self, analysis: &Analysis, stencil: usize) -> f64 {
            weight(analysis, stencil)
        }
    }

    /// A model's optimum by brute force: every grouping, every admissible tiling of every
    /// group.
    pub(crate) fn brute_force<M: CostModel>(
        analysis: &Analysis,
        model: &M,
        options: &SearchSpace,
    ) -> Option<f64> {
        let n = analysis.stencils.len();
        let tilings = admissible_tilings(analysis, model.machine(), options);
        let stream = options.stream_shape(analysis, model.machine());
        let best_group = |range: Range<usize>| {
            let group = model.group(analysis, range);
            tilings
                .iter()
                .filter(|&&(t, _)| model.fits(analysis, &group, stream, t))
                .map(|&(t, _)| model.group_seconds(analysis, &group, t).0)
                .min_by(f64::total_cmp)
        };
        (0..1u32 << (n - 1))
            .filter_map(|cuts| {
                let mut total = 0.0;
                let mut start = 0;
                for end in 1..=n {
                    if end == n || cuts & (1 << (end - 1)) != 0 {
                        total += best_group(start..end)?;
                        start = end;
                    }
                }
                Some(total)
            })
            .min_by(f64::total_cmp)
    }

    #[test]
    fn the_dp_optimum_of_another_model_equals_brute_force() {
        let machine = Machine::from_yaml(
            "name: toy\ncores: 4\ncache_bytes: 1048576\ncache_fraction: 0.5\nparams:\n  fast: {peel: 3.0e-10, body: 2.0e-11}\n  slow_base: {peel: 1.0e-10, body: 1.0e-11}\n  slow_stream: {peel: 1.0e-9, body: 1.0e-10}\n",
        )
        .unwrap()
        .model_view(8)
        .unwrap();
        let shape = RandomShape {
            min_stencils: 2,
            max_stencils: 7,
            min_domain: 4,
            max_domain: 12,
            ..RandomShape::default()
        };
        let options = SearchSpace::default();
        let mut feasible = 0;
        for seed in 0..40 {
            let program = Program::from_yaml(&random_program(seed, &shape)).unwrap();
            let analysis = Analysis::new(&program).unwrap();
            let cells: usize = analysis.domain.iter().product();
            let toy = Toy {
                machine,
                capacity: cells / 3,
            };
            let dp = exhaustive_with(&analysis, &toy, &options);
            let expected = brute_force(&analysis, &toy, &options);
            assert_eq!(dp.is_some(), expected.is_some(), "seed {seed}");
            let (Some((config, total)), Some(expected)) = (dp, expected) else {
                continue;
            };
            feasible += 1;
            assert!(
                (total - expected).abs() <= 1e-12 * expected,
                "seed {seed}: DP {total}, brute force {expected}"
            );
            // The DP's configuration costs what it says under the toy model.
            let recosted: f64 = config
                .group_ranges()
                .into_iter()
                .zip(&config.tiles)
                .map(|(r, &t)| toy.group_seconds(&analysis, &toy.group(&analysis, r), t).0)
                .sum();
            assert!((recosted - total).abs() <= 1e-12 * total, "seed {seed}");
            // The ABSINTHE model through the seam is the ABSINTHE search.
            assert_eq!(
                exhaustive_with(&analysis, &Absinthe::new(&machine), &options),
                exhaustive(&analysis, &machine, &options),
                "seed {seed}"
            );
        }
        assert!(
            feasible >= 20,
            "only {feasible} programs had a feasible grouping"
        );
    }
}
