//! The model of a program decomposed over MPI ranks (docs/MODEL.md, "Many ranks"): the domain
//! is split over a PX x PY grid of ranks along x and y; before each group a rank receives from
//! its neighbours the cells the group reads beyond its sub-domain (the group's reach into each
//! array it reads from outside itself). Fusing more stencils widens the reach, and the cells
//! computed twice at rank borders, and saves exchanges: MODESTO's lateral communication.
//!
//! [`Ranked`] prices one rank, the one at grid coordinates (1, 1) (or 0 along a dimension of
//! one rank): its group's time on its sub-domain ([`Absinthe`] on the sub-domain, tile counts
//! taken over the whole domain as the generated code takes them), times the node's threads
//! over the rank's (the ranks of a node share it: the machine file's parameters are the whole
//! node's throughput), plus its exchanges, each
//! incoming message [`Network::message_seconds`] of its bytes. Exchanges are priced as not
//! overlapped with computation (the generated code's default). The exact searches take it
//! through the [`CostModel`] seam, so `solve --ranks` finds this model's optimum.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::cost_model::evaluate::{group_shape, Configuration, GroupShape, StreamShape};
use crate::cost_model::model::{Absinthe, CostModel};
use crate::formats::machine::ModelMachine;
use crate::formats::network::Network;
use crate::language::analysis::{Analysis, ArrayId, ArrayKind, Extent};

/// Cells received below 0 and beyond the sub-domain: `[[x-, x+], [y-, y+]]`.
pub type Widths = [[usize; 2]; 2];

/// Per dimension (x, y), whether the lower and the upper side of a sub-domain is the domain's
/// boundary (no neighbour there).
pub type Boundary = [[bool; 2]; 2];

/// A PX x PY grid of ranks along x and y (`--ranks PX,PY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Grid {
    pub px: usize,
    pub py: usize,
}

/// The most ranks along one dimension `--ranks` accepts.
pub const MAX_RANKS_PER_DIM: usize = 4096;

/// The most ranks `bench` starts (`learn` measures the network over as many).
pub const MAX_RUN_RANKS: usize = 1024;

/// The most ranks `codegen` writes code for: the code holds a table of every rank's class.
pub const MAX_CODE_RANKS: usize = 1 << 16;

impl Grid {
    /// Parses `PX,PY` (each 1..=[`MAX_RANKS_PER_DIM`]).
    pub fn parse(text: &str) -> Result<Grid, String> {
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        let [x, y] = parts[..] else {
            return Err(format!(
                "`{text}`: expected PX,PY (ranks along x and y, e.g. 2,1)"
            ));
        };
        let count = |s: &str, axis: &str| -> Result<usize, String> {
            match s.parse::<usize>() {
                Ok(n) if (1..=MAX_RANKS_PER_DIM).contains(&n) => Ok(n),
                _ => Err(format!(
                    "`{text}`: ranks along {axis} must be a whole number from 1 to {MAX_RANKS_PER_DIM}, not `{s}`"
                )),
            }
        };
        Ok(Grid {
            px: count(x, "x")?,
            py: count(y, "y")?,
        })
    }

    pub fn ranks(&self) -> usize {
        self.px * self.py
    }

    /// Refused unless `bench` can start a process for every rank (at most
    /// [`MAX_RUN_RANKS`]), or with `run` false, unless `codegen`'s code can list them (at most
    /// [`MAX_CODE_RANKS`]); `solve` prices any grid.
    pub fn buildable(&self, run: bool) -> Result<(), String> {
        let n = self.ranks();
        let (most, command, why) = if run {
            (MAX_RUN_RANKS, "bench", "starts a process for each")
        } else {
            (
                MAX_CODE_RANKS,
                "codegen",
                "lists each in the code it writes",
            )
        };
        if n > most {
            return Err(format!(
                "--ranks {},{}: {n} ranks; `{command}` takes at most {most} (it {why}; `solve --ranks` prices larger grids)",
                self.px, self.py
            ));
        }
        Ok(())
    }

    /// `[px, py]`.
    pub fn dims(&self) -> [usize; 2] {
        [self.px, self.py]
    }
}

/// Cells owned by each of `parts` ranks along a dimension of `n` cells: the first `n % parts`
/// ranks own one more.
pub fn split(n: usize, parts: usize) -> Vec<[usize; 2]> {
    let (base, extra) = (n / parts, n % parts);
    let mut start = 0;
    (0..parts)
        .map(|p| {
            let len = base + usize::from(p < extra);
            let owned = [start, start + len];
            start += len;
            owned
        })
        .collect()
}

/// The arrays the stencils `range` read from outside the group (inputs, earlier groups'
/// stencils), with the cells the group reaches beyond a sub-domain on each side along x and y:
/// a stencil evaluated `widths` beyond the sub-domain (its evaluation widths in the group)
/// reads `widths + offset` beyond it. Arrays reached on no side are left out; a field lacking a
/// dimension is reached along it by no one. In array order.
pub fn reach(
    analysis: &Analysis,
    range: Range<usize>,
    widths: &[Extent],
) -> Vec<(ArrayId, Widths)> {
    let mut out: BTreeMap<ArrayId, Widths> = BTreeMap::new();
    for (s, sw) in range.clone().zip(widths) {
        for (&a, b) in &analysis.stencils[s].bounds {
            if matches!(analysis.arrays[a].kind, ArrayKind::Stencil(p) if range.contains(&p)) {
                continue;
            }
            let w = out.entry(a).or_default();
            for d in 0..2 {
                if !analysis.arrays[a].dims.has(d) {
                    continue;
                }
                let lo = sw[d][0] as i64 - b[d].0 as i64;
                let hi = sw[d][1] as i64 + b[d].1 as i64;
                w[d][0] = w[d][0].max(lo.max(0) as usize);
                w[d][1] = w[d][1].max(hi.max(0) as usize);
            }
        }
    }
    out.into_iter()
        .filter(|(_, w)| w.iter().flatten().any(|&c| c > 0))
        .collect()
}

/// Along dimension `d`, the cells `[lo, hi)` of array `a` a rank with sub-domain
/// `local.domain` holds before an exchange: the sub-domain, grown on the domain's boundary
/// sides (and along z) by the halo (an input) or the stencil's extent; `[0, 1)` along a
/// dimension the array lacks.
pub fn holds(local: &Analysis, boundary: Boundary, a: ArrayId, d: usize) -> [i64; 2] {
    if !local.arrays[a].dims.has(d) {
        return [0, 1];
    }
    let beyond = match local.arrays[a].kind {
        ArrayKind::Input => [local.halo[d]; 2],
        ArrayKind::Stencil(s) => local.stencils[s].extent[d],
    };
    let side = |s: usize| {
        if d == 2 || boundary[d][s] {
            beyond[s] as i64
        } else {
            0
        }
    };
    [-side(0), local.domain[d] as i64 + side(1)]
}

/// What a rank receives in one exchange.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Incoming {
    pub messages: u64,
    pub cells: u64,
    /// Contiguous runs of cells: each box's rows (its y extent times its levels).
    pub runs: u64,
}

/// The messages a rank receives in the exchange of array `a` reached by `widths`, their cells
/// and runs: one from each neighbour (the eight around it, less those beyond the domain's
/// boundary) that holds cells it reads, as the generated code exchanges them.
pub fn incoming(local: &Analysis, boundary: Boundary, a: ArrayId, widths: Widths) -> Incoming {
    let z = holds(local, boundary, a, 2);
    let along = |d: usize, dir: i64| -> Option<u64> {
        match dir {
            -1 if !boundary[d][0] => Some(widths[d][0] as u64),
            1 if !boundary[d][1] => Some(widths[d][1] as u64),
            0 => {
                let h = holds(local, boundary, a, d);
                Some((h[1] - h[0]) as u64)
            }
            _ => None,
        }
    };
    let levels = (z[1] - z[0]) as u64;
    let mut sum = Incoming::default();
    for dy in -1..=1 {
        for dx in -1..=1 {
            if (dx, dy) == (0, 0) {
                continue;
            }
            if let (Some(x), Some(y)) = (along(0, dx), along(1, dy)) {
                if x * y > 0 {
                    sum.messages += 1;
                    sum.cells += x * y * levels;
                    sum.runs += y * levels;
                }
            }
        }
    }
    sum
}

/// Tile counts over a box of `local` cells for tile counts `tiles` over `domain`: the same
/// tile size (at least one tile per dimension). What a rank's kernel, an overlap box and the
/// ranked model tile their cells with.
pub fn local_tiles(domain: [usize; 3], local: [usize; 3], tiles: [usize; 3]) -> [usize; 3] {
    [0, 1, 2].map(|d| {
        let size = domain[d].div_ceil(tiles[d].max(1));
        local[d].div_ceil(size).max(1)
    })
}

/// `config` with its tile counts taken over a box of `local` cells ([`local_tiles`]).
pub fn local_configuration(
    domain: [usize; 3],
    local: [usize; 3],
    config: &Configuration,
) -> Configuration {
    Configuration {
        tiles: config
            .tiles
            .iter()
            .map(|&t| local_tiles(domain, local, t))
            .collect(),
        ..config.clone()
    }
}

/// One rank's OpenMP threads when the ranks of `grid` share a node of `node_threads`: an equal
/// share, at least one.
pub fn rank_threads(node_threads: usize, grid: [usize; 2]) -> usize {
    (node_threads / (grid[0] * grid[1])).max(1)
}

/// A rank with neighbours wherever the `grid` has them: coordinates (1, 1), or 0 along a
/// dimension of one rank; its sub-domain's size along x and y and its boundary sides (the rank
/// whose received traffic the MPI tests compare with [`incoming`]'s count).
pub fn priced_rank(domain: [usize; 3], grid: [usize; 2]) -> ([usize; 3], Boundary) {
    let c = grid.map(|p| 1.min(p - 1));
    let size = [0, 1].map(|d| {
        let owned = split(domain[d], grid[d])[c[d]];
        owned[1] - owned[0]
    });
    let boundary = [0, 1].map(|d| [c[d] == 0, c[d] + 1 == grid[d]]);
    ([size[0], size[1], domain[2]], boundary)
}

/// Every rank class of a `grid` over `domain`: the distinct (sub-domain, boundary sides) of its
/// ranks, in the order of their first rank (x fastest); the first has the largest sub-domain
/// (uneven splits give the first ranks one more cell).
pub fn rank_classes(domain: [usize; 3], grid: [usize; 2]) -> Vec<([usize; 3], Boundary)> {
    let xs = split(domain[0], grid[0]);
    let ys = split(domain[1], grid[1]);
    let mut out: Vec<([usize; 3], Boundary)> = Vec::new();
    for (cy, y) in ys.iter().enumerate() {
        for (cx, x) in xs.iter().enumerate() {
            let size = [x[1] - x[0], y[1] - y[0], domain[2]];
            let boundary = [[cx == 0, cx + 1 == grid[0]], [cy == 0, cy + 1 == grid[1]]];
            if !out.contains(&(size, boundary)) {
                out.push((size, boundary));
            }
        }
    }
    out
}

/// One rank class as the ranked model sees it: the program on its sub-domain, and its boundary
/// sides.
struct PricedClass {
    local: Analysis,
    boundary: Boundary,
}

/// The ABSINTHE model of a decomposed program, its exchanges included: every group's time is
/// its slowest rank class's (the ranks meet at every group's exchange), each class its own
/// sub-domain's computation at its share of the node plus what it receives.
pub struct Ranked {
    /// One rank's view: the node's, its threads shared among the ranks.
    rank: ModelMachine,
    /// The node's threads over the rank's: the machine file's parameters are the whole node's
    /// throughput (learned with every core busy), of which one rank gets this share's inverse.
    share: f64,
    /// Every rank class ([`rank_classes`]).
    classes: Vec<PricedClass>,
    network: Network,
    value_bytes: f64,
    /// Along x and y, with more than one rank there, the cells of the narrowest sub-domain: a
    /// group that reaches further beyond a sub-domain would need cells a neighbour does not own
    /// (`codegen --ranks` refuses it), so no configuration has it. `usize::MAX` along a
    /// dimension of one rank.
    narrowest: [usize; 2],
}

impl Ranked {
    /// `node` is the machine file's view of a node, whose threads the `grid`'s ranks share
    /// (each at least one); `grid` the ranks along x and y (each at least 1 and at most the
    /// domain's cells there).
    pub fn new(
        analysis: &Analysis,
        node: &ModelMachine,
        grid: [usize; 2],
        network: Network,
        value_bytes: usize,
    ) -> Ranked {
        let classes = rank_classes(analysis.domain, grid)
            .into_iter()
            .map(|(size, boundary)| {
                let mut local = analysis.clone();
                local.domain = size;
                PricedClass { local, boundary }
            })
            .collect();
        let mut rank = *node;
        rank.threads = rank_threads(node.threads, grid);
        let narrowest = [0, 1].map(|d| match grid[d] {
            1 => usize::MAX,
            parts => analysis.domain[d] / parts,
        });
        Ranked {
            narrowest,
            share: node.threads as f64 / rank.threads as f64,
            rank,
            classes,
            network,
            value_bytes: value_bytes as f64,
        }
    }

    /// Seconds of every group's exchanges in `config`, on the rank class that receives the
    /// most.
    pub fn exchanges_of(&self, config: &Configuration) -> f64 {
        let shapes: Vec<GroupShape> = config
            .group_ranges()
            .into_iter()
            .map(|r| group_shape(&self.classes[0].local, r, self.rank.model.store_weight()))
            .collect();
        self.classes
            .iter()
            .map(|c| {
                shapes
                    .iter()
                    .map(|g| self.exchange_seconds(c, g))
                    .sum::<f64>()
            })
            .fold(0.0, f64::max)
    }

    /// Why no configuration is feasible because a sub-domain is too narrow: the first group
    /// that reads beyond its sub-domain farther than the narrowest sub-domain's cells, among
    /// the groups `fixed` gives (`--fix-groups`: a fused group's evaluation widths add to its
    /// reach), else among the stencils alone. None when every group's reach fits.
    pub fn too_narrow(&self, analysis: &Analysis, fixed: Option<&[usize]>) -> Option<String> {
        let n = analysis.stencils.len();
        let ranges = match fixed {
            Some(groups) if groups.len() == n => crate::cost_model::evaluate::ranges_of(groups),
            _ => (0..n).map(|s| s..s + 1).collect(),
        };
        ranges.into_iter().find_map(|range| {
            let widths: Vec<Extent> = if range.len() == 1 {
                vec![Extent::default()]
            } else {
                let shape = crate::cost_model::evaluate::group_shape(analysis, range.clone(), 1);
                shape.stencils.iter().map(|s| s.widths).collect()
            };
            let (a, d, w) = reach(analysis, range.clone(), &widths)
                .into_iter()
                .find_map(|(a, w)| self.too_far(&w).map(|d| (a, d, w)))?;
            let names: Vec<&str> = range.map(|s| analysis.stencils[s].name.as_str()).collect();
            let who = match names.as_slice() {
                [one] => format!("`{one}`"),
                _ => format!("the group [{}]", names.join(", ")),
            };
            Some(format!(
                "--ranks leaves sub-domains of {} cell(s) along {axis}, but {who} reads `{}` {} cells beyond its own along {axis}: a neighbour would have to send cells it does not own (use fewer ranks along {axis}, groups that fuse less, or --no-inline where inlining widened the reach)",
                self.narrowest[d],
                analysis.arrays[a].name,
                w[d][0].max(w[d][1]),
                axis = ["x", "y"][d],
            ))
        })
    }

    /// The first dimension along which reaching `w` beyond a sub-domain goes past the narrowest
    /// sub-domain's cells.
    fn too_far(&self, w: &Widths) -> Option<usize> {
        (0..2).find(|&d| w[d][0].max(w[d][1]) > self.narrowest[d])
    }

    /// The largest sub-domain (the first rank class's), and how many classes are priced.
    pub fn sub_domains(&self) -> ([usize; 3], usize) {
        (self.classes[0].local.domain, self.classes.len())
    }

    /// One rank's OpenMP threads.
    pub fn rank_threads(&self) -> usize {
        self.rank.threads
    }

    /// Seconds of the exchanges of class `c` before the group `shape`: per incoming message,
    /// the latency and its bytes at the bandwidth, and per contiguous run its cost.
    fn exchange_seconds(&self, c: &PricedClass, shape: &GroupShape) -> f64 {
        let widths: Vec<Extent> = shape.stencils.iter().map(|s| s.widths).collect();
        reach(&c.local, shape.range.clone(), &widths)
            .into_iter()
            .map(|(a, w)| {
                let i = incoming(&c.local, c.boundary, a, w);
                let n = &self.network;
                i.messages as f64 * n.latency_us * 1e-6
                    + i.cells as f64 * self.value_bytes / (n.bandwidth_gbs * 1e9)
                    + i.runs as f64 * n.run_ns * 1e-9
            })
            .sum()
    }
}

impl CostModel for Ranked {
    /// The group's shape (the same on every sub-domain), each class's exchange seconds, and
    /// whether its reach fits the narrowest sub-domain (`Ranked::narrowest`).
    type Group = (GroupShape, Vec<f64>, bool);

    fn machine(&self) -> &ModelMachine {
        &self.rank
    }

    fn group(&self, _analysis: &Analysis, range: Range<usize>) -> Self::Group {
        let shape = group_shape(
            &self.classes[0].local,
            range,
            self.rank.model.store_weight(),
        );
        let exchanges = self
            .classes
            .iter()
            .map(|c| self.exchange_seconds(c, &shape))
            .collect();
        let widths: Vec<Extent> = shape.stencils.iter().map(|s| s.widths).collect();
        let within = reach(&self.classes[0].local, shape.range.clone(), &widths)
            .iter()
            .all(|(_, w)| self.too_far(w).is_none());
        (shape, exchanges, within)
    }

    /// Whether the group's reach fits the narrowest sub-domain and every class's tiles fit.
    fn fits(
        &self,
        analysis: &Analysis,
        group: &Self::Group,
        stream: Option<StreamShape>,
        tiles: [usize; 3],
    ) -> bool {
        group.2
            && self.classes.iter().all(|c| {
                let local = local_tiles(analysis.domain, c.local.domain, tiles);
                Absinthe::new(&self.rank).fits(&c.local, &group.0, stream, local)
            })
    }

    /// The slowest class's time: the group on its sub-domain at the rank's share of the node,
    /// plus its exchanges (which only grow when the range grows at its end: its reach into
    /// each array it reads from outside only widens); the bound likewise (a maximum of bounds
    /// that only grow).
    fn group_seconds(
        &self,
        analysis: &Analysis,
        group: &Self::Group,
        tiles: [usize; 3],
    ) -> (f64, f64) {
        let model = Absinthe::new(&self.rank);
        self.classes
            .iter()
            .zip(&group.1)
            .map(|(c, exchange)| {
                let local = local_tiles(analysis.domain, c.local.domain, tiles);
                let (time, bound) = model.group_seconds(&c.local, &group.0, local);
                (time * self.share + exchange, bound * self.share + exchange)
            })
            .fold((0.0, 0.0), |a, b| (a.0.max(b.0), a.1.max(b.1)))
    }

    /// The first class's bound: a group's time is at least that class's, whose stencils' times
    /// are at least their bounds.
    fn stencil_bound(&self, _analysis: &Analysis, stencil: usize) -> f64 {
        Absinthe::new(&self.rank).stencil_bound(&self.classes[0].local, stencil) * self.share
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_cover_the_domain_with_sizes_one_apart() {
        assert_eq!(split(10, 3), vec![[0, 4], [4, 7], [7, 10]]);
        assert_eq!(split(4, 4), vec![[0, 1], [1, 2], [2, 3], [3, 4]]);
        assert_eq!(split(5, 1), vec![[0, 5]]);
    }

    #[test]
    fn grids_parse_with_errors_that_name_the_text() {
        assert_eq!(Grid::parse("2,1"), Ok(Grid { px: 2, py: 1 }));
        assert_eq!(Grid::parse(" 3 , 2 "), Ok(Grid { px: 3, py: 2 }));
        for bad in ["2", "0,1", "2,x", "1,2,3", "", "-1,2", "5000,1"] {
            let e = Grid::parse(bad).unwrap_err();
            assert!(e.contains(&format!("`{bad}`")), "{bad}: {e}");
        }
    }

    /// The exact DP over the ranked model finds the optimum brute force finds, on random
    /// programs and grids.
    #[test]
    fn the_dp_optimum_of_the_ranked_model_equals_brute_force() {
        use crate::cost_model::model::tests::brute_force;
        use crate::cost_model::options::SearchSpace;
        use crate::cost_model::search::exhaustive_with;
        use crate::formats::machine::Machine;
        use crate::language::generate::{random_program, RandomShape};
        use crate::language::program::Program;
        let machine = Machine::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../machines/default.yaml"),
        )
        .unwrap()
        .model_view(8)
        .unwrap();
        let shape = RandomShape {
            min_stencils: 2,
            max_stencils: 6,
            min_domain: 6,
            max_domain: 14,
            ..RandomShape::default()
        };
        let network = Network {
            latency_us: 1.0,
            bandwidth_gbs: 5.0,
            run_ns: 5.0,
            source: String::new(),
        };
        let options = SearchSpace::default();
        let mut compared = 0;
        for seed in 0..30u64 {
            let program = Program::from_yaml(&random_program(seed, &shape)).unwrap();
            let analysis = Analysis::new(&program).unwrap();
            let grid = [[2, 1], [1, 2], [2, 2], [3, 2]][seed as usize % 4];
            let model = Ranked::new(&analysis, &machine, grid, network.clone(), 8);
            let dp = exhaustive_with(&analysis, &model, &options);
            let expected = brute_force(&analysis, &model, &options);
            assert_eq!(dp.is_some(), expected.is_some(), "seed {seed}");
            if let (Some((_, total)), Some(expected)) = (dp, expected) {
                compared += 1;
                assert!(
                    (total - expected).abs() <= 1e-12 * expected,
                    "seed {seed}: DP {total}, brute force {expected}"
                );
            }
        }
        assert!(compared >= 20, "only {compared} programs compared");
    }

    #[test]
    fn rank_classes_are_the_distinct_sub_domains_and_sides() {
        let t = true;
        let f = false;
        assert_eq!(
            rank_classes([10, 7, 4], [3, 1]),
            vec![
                ([4, 7, 4], [[t, f], [t, t]]),
                ([3, 7, 4], [[f, f], [t, t]]),
                ([3, 7, 4], [[f, t], [t, t]]),
            ]
        );
        assert_eq!(
            rank_classes([10, 7, 4], [1, 1]),
            vec![([10, 7, 4], [[t, t], [t, t]])]
        );
        assert_eq!(rank_classes([12, 8, 4], [4, 4]).len(), 9);
    }

    #[test]
    fn the_priced_rank_has_neighbours_where_the_grid_allows() {
        assert_eq!(
            priced_rank([10, 7, 4], [3, 1]),
            ([3, 7, 4], [[false, false], [true, true]])
        );
        assert_eq!(
            priced_rank([10, 7, 4], [2, 2]),
            ([5, 3, 4], [[false, true], [false, true]])
        );
    }
}
