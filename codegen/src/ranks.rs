//! Decomposition over MPI ranks (`codegen --ranks PX,PY`, docs/USAGE.md, "Many ranks"): the
//! domain is split over a PX x PY Cartesian grid of processes along x and y; each rank runs the
//! configuration on its sub-domain and, before each group, exchanges with its neighbours the
//! arrays the group reads from them, over exactly the width the group needs.
//!
//! What a rank computes. A group's stencils are evaluated on the rank's sub-domain grown by
//! their evaluation widths inside the group (`StencilCost::widths`: what the group's own
//! readers need), not by the program's extents: what a later group reads beyond the
//! sub-domain comes from the neighbour that owns it, by the exchange before that group. On a
//! side where the sub-domain meets the domain's boundary there is no neighbour, and the rank
//! evaluates every stencil over the program's extent there, as the single-process kernel does.
//! So fusing more stencils into a group widens the exchange and the cells computed twice at
//! rank borders, and saves exchanges: MODESTO's lateral communication.
//!
//! The exchange of one array runs in two phases: along x over the rows the array holds valid
//! values in, then along y over those rows widened by what the x phase received, so that the
//! corners come from the diagonal neighbours through the x phase of the neighbour along y.
//!
//! Ranks whose sub-domains have the same size and the same boundary sides run the same code: a
//! rank class. Each class gets a kernel of its own (the schedule's tile tables are constants).

use std::collections::BTreeMap;

use absinthe_model::cost_model::evaluate::{evaluate, Configuration, Cost};
use absinthe_model::formats::machine::ModelMachine;
use absinthe_model::language::analysis::{Analysis, ArrayKind, Extent};
use absinthe_model::language::program::Program;
use serde::Serialize;

use crate::schedule::{lower, Schedule};
use crate::CodegenError;

/// Cells received below 0 and beyond the sub-domain: `[[x-, x+], [y-, y+]]`.
pub type Widths = [[usize; 2]; 2];

/// Per group, the arrays (by id) it exchanges before it runs, with their widths.
pub type GroupWidths = Vec<Vec<(usize, Widths)>>;

/// A PX x PY process grid along x and y.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Grid {
    pub px: usize,
    pub py: usize,
}

/// The most ranks along one dimension `--ranks` accepts.
pub const MAX_RANKS_PER_DIM: usize = 4096;

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

/// One phase of an array's exchange: along `dim` (0: x, 1: y), the cells `[-widths[0], 0)`
/// come from the lower neighbour and `[n, n + widths[1])` from the upper one, over the box
/// `[lo, hi)` along the other dimensions (local coordinates; `lo`/`hi` along `dim` unused).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Phase {
    pub dim: usize,
    pub n: usize,
    pub widths: [usize; 2],
    pub lo: [i64; 3],
    pub hi: [i64; 3],
}

/// The exchange of one array before a group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Exchange {
    pub array: String,
    /// The kernel parameter it lives in.
    pub param: String,
    pub alloc: [usize; 3],
    pub lead: [usize; 3],
    /// Cells received below 0 and beyond the sub-domain along x and y: the group's reach into
    /// the array on each side (the same on every rank; a side without a neighbour receives
    /// nothing).
    pub widths: [[usize; 2]; 2],
    /// The x phase, then the y phase (a phase of zero widths is left out).
    pub phases: Vec<Phase>,
}

/// The ranks that run the same kernel.
#[derive(Clone, Debug, Serialize)]
pub struct RankClass {
    pub index: usize,
    /// Grid coordinates `[cx, cy]` of its ranks.
    pub ranks: Vec<[usize; 2]>,
    /// The global index of its sub-domain's first cell along x and y.
    pub offset: [usize; 2],
    /// Its sub-domain (x, y, and all of z).
    pub domain: [usize; 3],
    /// Per dimension (x, y), whether the lower and the upper side is the domain's boundary.
    pub boundary: [[bool; 2]; 2],
    pub schedule: Schedule,
    /// Per group, the exchanges before it, in the order of the kernel's parameters.
    pub exchanges: Vec<Vec<Exchange>>,
}

/// A configuration decomposed over a grid of ranks.
#[derive(Clone, Debug, Serialize)]
pub struct Decomposition {
    pub grid: Grid,
    /// The single-process schedule: its reference is what the ranks' gathered outputs are
    /// verified against.
    pub global: Schedule,
    pub classes: Vec<RankClass>,
    /// The class of the rank at grid coordinates `(cx, cy)`: `class_of[cx + cy * px]`.
    pub class_of: Vec<usize>,
    /// Per group, the widths it exchanges per array: `(array, [[x-, x+], [y-, y+]])`.
    pub widths: Vec<Vec<(String, [[usize; 2]; 2])>>,
    /// The global index of each rank column's and row's first cell.
    pub x_offsets: Vec<usize>,
    pub y_offsets: Vec<usize>,
}

/// Decomposes `config` (of `program`, analysed as `analysis`; `original` and
/// `original_analysis` give the reference, as [`Schedule::with_reference`]) over `grid`.
/// Refused: 2-D stencils and fields over i or j without all three indices (not decomposed
/// yet), more ranks along a dimension than cells, and sub-domains narrower than a width they
/// must send.
pub fn decompose(
    program: &Program,
    analysis: &Analysis,
    config: &Configuration,
    machine: &ModelMachine,
    grid: Grid,
    original: (&Program, &Analysis),
) -> Result<Decomposition, CodegenError> {
    refuse_undecomposed(program, analysis)?;
    let cost = evaluate(analysis, machine, config);
    let global = lower(program, analysis, config, &cost)?.with_reference(original.0, original.1);
    let widths = group_widths(analysis, config, &cost);
    let xs = split(analysis.domain[0], grid.px);
    let ys = split(analysis.domain[1], grid.py);
    check_widths(analysis, grid, &xs, &ys, &widths)?;
    let mut classes: Vec<RankClass> = Vec::new();
    let mut keys: BTreeMap<([usize; 2], [[bool; 2]; 2]), usize> = BTreeMap::new();
    let mut class_of = vec![0; grid.ranks()];
    for cy in 0..grid.py {
        for cx in 0..grid.px {
            let size = [xs[cx][1] - xs[cx][0], ys[cy][1] - ys[cy][0]];
            let boundary = [[cx == 0, cx + 1 == grid.px], [cy == 0, cy + 1 == grid.py]];
            let index = *keys.entry((size, boundary)).or_insert(classes.len());
            if index == classes.len() {
                let domain = [size[0], size[1], analysis.domain[2]];
                let mut class = rank_class(
                    (program, analysis, config, machine),
                    &cost,
                    (index, domain, boundary),
                    &widths,
                    original,
                )?;
                class.offset = [xs[cx][0], ys[cy][0]];
                classes.push(class);
            }
            classes[index].ranks.push([cx, cy]);
            class_of[cx + cy * grid.px] = index;
        }
    }
    Ok(Decomposition {
        grid,
        global,
        classes,
        class_of,
        x_offsets: xs.iter().map(|o| o[0]).collect(),
        y_offsets: ys.iter().map(|o| o[0]).collect(),
        widths: widths
            .into_iter()
            .map(|g| {
                g.into_iter()
                    .map(|(a, w)| (analysis.arrays[a].name.clone(), w))
                    .collect()
            })
            .collect(),
    })
}

fn refuse_undecomposed(program: &Program, analysis: &Analysis) -> Result<(), CodegenError> {
    if let Some(s) = (0..analysis.stencils.len()).find(|&s| analysis.is_plane(s)) {
        return Err(CodegenError::Configuration(format!(
            "stencil `{}` is 2-D ([i, j]): --ranks does not decompose 2-D stencils yet",
            program.stencils[s].name
        )));
    }
    if let Some(a) = analysis
        .arrays
        .iter()
        .find(|a| (a.dims.has(0) || a.dims.has(1)) && !(0..3).all(|d| a.dims.has(d)))
    {
        return Err(CodegenError::Configuration(format!(
            "field `{}` is over [{}]: --ranks decomposes fields over [k] only (each rank holds all of it) and 3-D arrays",
            a.name,
            a.dims.names().join(", ")
        )));
    }
    Ok(())
}

/// Per group, the arrays it reads from outside itself (inputs, earlier groups' stencils) with
/// the cells its stencils reach beyond the sub-domain on each side along x and y: a reader
/// evaluated `widths` beyond the tile core reads `widths + offset` beyond it. Arrays reached
/// on no side are left out; a field lacking a dimension is reached along it by no one.
pub fn group_widths(
    analysis: &Analysis,
    config: &Configuration,
    cost: &Cost,
) -> GroupWidths {
    config
        .group_ranges()
        .iter()
        .zip(&cost.groups)
        .map(|(range, group)| {
            let mut reach: BTreeMap<usize, [[usize; 2]; 2]> = BTreeMap::new();
            for (s, sc) in range.clone().zip(&group.stencils) {
                for (&a, b) in &analysis.stencils[s].bounds {
                    if matches!(analysis.arrays[a].kind, ArrayKind::Stencil(p) if range.contains(&p))
                    {
                        continue;
                    }
                    let w = reach.entry(a).or_default();
                    for d in 0..2 {
                        if !analysis.arrays[a].dims.has(d) {
                            continue;
                        }
                        w[d][0] = w[d][0].max((sc.widths[d][0] as i64 - b[d].0 as i64).max(0) as usize);
                        w[d][1] = w[d][1].max((sc.widths[d][1] as i64 + b[d].1 as i64).max(0) as usize);
                    }
                }
            }
            reach
                .into_iter()
                .filter(|(_, w)| w.iter().flatten().any(|&c| c > 0))
                .collect()
        })
        .collect()
}

/// Refuses more ranks than cells along a dimension, and sub-domains narrower than a width they
/// send (the cells would live on a rank further away).
fn check_widths(
    analysis: &Analysis,
    grid: Grid,
    xs: &[[usize; 2]],
    ys: &[[usize; 2]],
    widths: &GroupWidths,
) -> Result<(), CodegenError> {
    for (d, (parts, owned)) in [(grid.px, xs), (grid.py, ys)].into_iter().enumerate() {
        let axis = ["x", "y"][d];
        let n = analysis.domain[d];
        if parts > n {
            return Err(CodegenError::Configuration(format!(
                "--ranks: {parts} ranks along {axis} but the domain has {n} cells along {axis}"
            )));
        }
        let narrowest = owned.iter().map(|o| o[1] - o[0]).min().unwrap_or(n);
        for (g, arrays) in widths.iter().enumerate() {
            for (a, w) in arrays {
                let wide = w[d][0].max(w[d][1]);
                if parts > 1 && wide > narrowest {
                    return Err(CodegenError::Configuration(format!(
                        "--ranks: {parts} ranks along {axis} leave sub-domains of {narrowest} cells, but group {g} reads `{}` {wide} cells beyond its sub-domain along {axis}: a neighbour would have to send cells it does not own (use fewer ranks along {axis} or a larger domain)",
                        analysis.arrays[*a].name
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The kernel and exchanges of the ranks with sub-domain `domain` and boundary sides
/// `boundary`.
fn rank_class(
    (program, analysis, config, machine): (&Program, &Analysis, &Configuration, &ModelMachine),
    cost: &Cost,
    (index, domain, boundary): (usize, [usize; 3], [[bool; 2]; 2]),
    widths: &GroupWidths,
    original: (&Program, &Analysis),
) -> Result<RankClass, CodegenError> {
    let local = local_analysis(analysis, cost, domain, boundary);
    let local_config = Configuration {
        tiles: config
            .tiles
            .iter()
            .map(|t| {
                [0, 1, 2].map(|d| {
                    let size = analysis.domain[d].div_ceil(t[d]);
                    local.domain[d].div_ceil(size).max(1)
                })
            })
            .collect(),
        ..config.clone()
    };
    let local_cost = evaluate(&local, machine, &local_config);
    let mut schedule =
        lower(program, &local, &local_config, &local_cost)?.with_reference(original.0, original.1);
    schedule.kernel = format!("{}_c{index}", schedule.kernel);
    let exchanges = widths
        .iter()
        .map(|arrays| {
            arrays
                .iter()
                .map(|&(a, w)| exchange(&local, &schedule, boundary, a, w))
                .collect()
        })
        .collect();
    Ok(RankClass {
        index,
        ranks: Vec::new(),
        offset: [0, 0],
        domain,
        boundary,
        schedule,
        exchanges,
    })
}

/// The analysis a rank's kernel is lowered with: its sub-domain, and each stencil evaluated
/// over its in-group widths on the sides where a neighbour is (the program's extent on the
/// domain's boundary sides and along z).
pub fn local_analysis(
    analysis: &Analysis,
    cost: &Cost,
    domain: [usize; 3],
    boundary: [[bool; 2]; 2],
) -> Analysis {
    let mut local = analysis.clone();
    local.domain = domain;
    for (info, sc) in local.stencils.iter_mut().zip(cost.stencils()) {
        let extent: Extent = [0, 1, 2].map(|d| {
            [0, 1].map(|side| {
                if d == 2 || boundary[d][side] {
                    info.extent[d][side]
                } else {
                    sc.widths[d][side]
                }
            })
        });
        info.extent = extent;
    }
    local
}

/// The exchange of array `a` before a group that reaches `widths` into it.
fn exchange(
    local: &Analysis,
    schedule: &Schedule,
    boundary: [[bool; 2]; 2],
    a: usize,
    widths: [[usize; 2]; 2],
) -> Exchange {
    let name = &local.arrays[a].name;
    let global = schedule
        .arrays
        .iter()
        .find(|g| &g.name == name)
        .expect("an array read from outside a group is a kernel parameter");
    let dims = local.arrays[a].dims;
    // Where the array holds values before the exchange: the sub-domain, grown on the domain's
    // boundary sides (and along z) by the halo (an input) or the stencil's extent.
    let beyond = |d: usize| -> [usize; 2] {
        match local.arrays[a].kind {
            ArrayKind::Input => [local.halo[d]; 2],
            ArrayKind::Stencil(s) => local.stencils[s].extent[d],
        }
    };
    let valid = |d: usize, received: [usize; 2]| -> [i64; 2] {
        if !dims.has(d) {
            return [0, 1];
        }
        let b = beyond(d);
        let n = local.domain[d] as i64;
        let side = |s: usize| {
            if d == 2 || boundary[d][s] {
                b[s] as i64
            } else {
                received[s] as i64
            }
        };
        [-side(0), n + side(1)]
    };
    let none = [0, 0];
    let mut phases = Vec::new();
    if widths[0] != none {
        let (y, z) = (valid(1, none), valid(2, none));
        phases.push(Phase {
            dim: 0,
            n: local.domain[0],
            widths: widths[0],
            lo: [0, y[0], z[0]],
            hi: [0, y[1], z[1]],
        });
    }
    if widths[1] != none {
        let (x, z) = (valid(0, widths[0]), valid(2, none));
        phases.push(Phase {
            dim: 1,
            n: local.domain[1],
            widths: widths[1],
            lo: [x[0], 0, z[0]],
            hi: [x[1], 0, z[1]],
        });
    }
    Exchange {
        array: name.clone(),
        param: global.param.clone(),
        alloc: global.alloc,
        lead: global.lead,
        widths,
        phases,
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
}
