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
pub use absinthe_model::cost_model::ranks::Grid;
use absinthe_model::cost_model::ranks::{
    holds, local_configuration, reach, split, Boundary, Widths,
};
use absinthe_model::formats::machine::ModelMachine;
use absinthe_model::language::analysis::{Analysis, Extent};
use absinthe_model::language::program::Program;
use serde::Serialize;

use crate::schedule::{lower, lower_within, Schedule};
use crate::CodegenError;

/// Per group, the arrays (by id) it exchanges before it runs, with their widths.
pub type GroupWidths = Vec<Vec<(usize, Widths)>>;

/// How to decompose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RankOptions {
    pub grid: Grid,
    /// Compute each group's inner box while its exchanges travel (else: exchange, then compute
    /// the sub-domain).
    pub overlap: bool,
}

/// The exchange of one array before a group, with the eight neighbours at once: from the
/// neighbour at relative position `(dx, dy)` come the cells `[-widths[0][0], 0)` (dx = -1),
/// `own[0]` (dx = 0) or `[n, n + widths[0][1])` (dx = 1) along x, likewise along y, over `z`;
/// a rank sends each neighbour the cells it takes from it.
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
    pub widths: Widths,
    /// The sub-domain's extent along x and y.
    pub n: [usize; 2],
    /// Along x and y, the cells a rank holds before the exchange: the sub-domain, grown on the
    /// domain's boundary sides by the halo (an input) or the stencil's extent. The same on the
    /// ranks of a grid row (along x) or column (along y).
    pub own: [[i64; 2]; 2],
    /// Along z, the levels exchanged: all the array holds.
    pub z: [i64; 2],
}

/// The kernel's pointer to an array's element (0, 0, 0) inside a box: `param + offset`.
#[derive(Clone, Debug, Serialize)]
pub struct Pointer {
    pub origin: String,
    pub param: String,
    pub offset: usize,
    pub input: bool,
}

/// A box of a rank's sub-domain where one group is computed on its own: its schedule is the
/// configuration lowered on the box (only group `group` is used), inside the rank's arrays.
#[derive(Clone, Debug, Serialize)]
pub struct Part {
    /// Its first cell along x and y in the sub-domain.
    pub at: [usize; 2],
    pub size: [usize; 3],
    pub schedule: Schedule,
    pub group: usize,
    pub pointers: Vec<Pointer>,
}

/// How a rank runs one group: it posts the exchanges, computes `inner` (the boxes that read no
/// exchanged cell) while they travel, waits, and computes `outer`; without an inner box, it
/// computes the whole group after the wait.
#[derive(Clone, Debug, Serialize)]
pub struct RankGroup {
    pub exchanges: Vec<Exchange>,
    pub inner: Vec<Part>,
    pub outer: Vec<Part>,
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
    pub boundary: Boundary,
    pub schedule: Schedule,
    /// Per group, its exchanges and the boxes it is computed in.
    pub groups: Vec<RankGroup>,
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
/// Refused: more ranks along a dimension than cells, and sub-domains narrower than a width
/// they must send.
pub fn decompose(
    program: &Program,
    analysis: &Analysis,
    config: &Configuration,
    machine: &ModelMachine,
    options: RankOptions,
    original: (&Program, &Analysis),
) -> Result<Decomposition, CodegenError> {
    let grid = options.grid;
    let cost = evaluate(analysis, machine, config);
    let global = lower(program, analysis, config, &cost)?.with_reference(original.0, original.1);
    let widths = group_widths(analysis, config, &cost);
    let xs = split(analysis.domain[0], grid.px);
    let ys = split(analysis.domain[1], grid.py);
    check_widths(analysis, grid, &xs, &ys, &widths)?;
    let mut classes: Vec<RankClass> = Vec::new();
    let mut keys: BTreeMap<([usize; 2], Boundary), usize> = BTreeMap::new();
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
                    (&widths, options.overlap),
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

/// Per group, the arrays it reads from outside itself (inputs, earlier groups' stencils) with
/// the cells its stencils reach beyond the sub-domain on each side along x and y: a reader
/// evaluated `widths` beyond the tile core reads `widths + offset` beyond it. Arrays reached
/// on no side are left out; a field lacking a dimension is reached along it by no one.
pub fn group_widths(analysis: &Analysis, config: &Configuration, cost: &Cost) -> GroupWidths {
    config
        .group_ranges()
        .into_iter()
        .zip(&cost.groups)
        .map(|(range, group)| {
            let widths: Vec<Extent> = group.stencils.iter().map(|s| s.widths).collect();
            reach(analysis, range, &widths)
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
    (index, domain, boundary): (usize, [usize; 3], Boundary),
    (widths, overlap): (&GroupWidths, bool),
    original: (&Program, &Analysis),
) -> Result<RankClass, CodegenError> {
    let local = local_analysis(analysis, cost, domain, boundary);
    let local_config = local_configuration(analysis.domain, domain, config);
    let local_cost = evaluate(&local, machine, &local_config);
    let mut schedule =
        lower(program, &local, &local_config, &local_cost)?.with_reference(original.0, original.1);
    schedule.kernel = format!("{}_c{index}", schedule.kernel);
    let groups = widths
        .iter()
        .enumerate()
        .map(|(g, arrays)| {
            let exchanges: Vec<Exchange> = arrays
                .iter()
                .map(|&(a, w)| exchange(&local, &schedule, boundary, a, w))
                .collect();
            let (inner, outer) = if overlap {
                parts(
                    (program, analysis, config, machine),
                    cost,
                    (index, domain, boundary),
                    g,
                    &exchanges,
                )?
            } else {
                (Vec::new(), Vec::new())
            };
            Ok(RankGroup {
                exchanges,
                inner,
                outer,
            })
        })
        .collect::<Result<Vec<_>, CodegenError>>()?;
    Ok(RankClass {
        index,
        ranks: Vec::new(),
        offset: [0, 0],
        domain,
        boundary,
        schedule,
        groups,
    })
}

/// The analysis a rank's kernel is lowered with: its sub-domain, and each stencil evaluated
/// over its in-group widths on the sides where a neighbour is (the program's extent on the
/// domain's boundary sides and along z).
pub fn local_analysis(
    analysis: &Analysis,
    cost: &Cost,
    domain: [usize; 3],
    boundary: Boundary,
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
    boundary: Boundary,
    a: usize,
    widths: Widths,
) -> Exchange {
    let name = &local.arrays[a].name;
    let global = schedule
        .arrays
        .iter()
        .find(|g| &g.name == name)
        .expect("an array read from outside a group is a kernel parameter");
    Exchange {
        array: name.clone(),
        param: global.param.clone(),
        alloc: global.alloc,
        lead: global.lead,
        widths,
        n: [local.domain[0], local.domain[1]],
        own: [0, 1].map(|d| holds(local, boundary, a, d)),
        z: holds(local, boundary, a, 2),
    }
}

/// The boxes a rank computes group `g` in: the sub-domain less a border as wide as the group's
/// exchanges on each side with a neighbour (computed while they travel), and the border's
/// strips (after they arrived): the strips below and above along y span the sub-domain's x, the
/// strips beside along x the interior's y. Each box's stencils are evaluated as a rank's are,
/// with the box's sides inside the sub-domain taken as sides with a neighbour. No inner box when
/// the group exchanges nothing or the border covers the sub-domain.
fn parts(
    (program, analysis, config, machine): (&Program, &Analysis, &Configuration, &ModelMachine),
    cost: &Cost,
    (class, domain, boundary): (usize, [usize; 3], Boundary),
    g: usize,
    exchanges: &[Exchange],
) -> Result<(Vec<Part>, Vec<Part>), CodegenError> {
    let border: Widths = [0, 1].map(|d| {
        [0, 1].map(|side| {
            if boundary[d][side] {
                0
            } else {
                exchanges
                    .iter()
                    .map(|e| e.widths[d][side])
                    .max()
                    .unwrap_or(0)
            }
        })
    });
    let (n, m) = (domain[0], domain[1]);
    let inside = |d: usize| border[d][0] + border[d][1] < domain[d];
    if exchanges.is_empty() || !inside(0) || !inside(1) {
        return Ok((Vec::new(), Vec::new()));
    }
    let [[w, e], [s, t]] = border;
    let interior = [[w, n - e], [s, m - t]];
    let strips = [
        [[0, n], [0, s]],
        [[0, n], [m - t, m]],
        [[0, w], [s, m - t]],
        [[n - e, n], [s, m - t]],
    ];
    let part = |b: usize, r: [[usize; 2]; 2]| -> Result<Part, CodegenError> {
        let size = [r[0][1] - r[0][0], r[1][1] - r[1][0], domain[2]];
        let on = [0, 1].map(|d| {
            [
                r[d][0] == 0 && boundary[d][0],
                r[d][1] == domain[d] && boundary[d][1],
            ]
        });
        let local = local_analysis(analysis, cost, size, on);
        let box_config = local_configuration(analysis.domain, size, config);
        let box_cost = evaluate(&local, machine, &box_config);
        let mut schedule = lower_within(program, &local, &box_config, &box_cost, domain)?;
        schedule.kernel = format!("{}_c{class}_g{g}_b{b}", schedule.kernel);
        let pointers = schedule
            .arrays
            .iter()
            .map(|a| {
                let shift = |d: usize, stride: usize| {
                    if a.dims.contains(["i", "j"][d]) {
                        r[d][0] * stride
                    } else {
                        0
                    }
                };
                Pointer {
                    origin: a.origin.clone(),
                    param: a.param.clone(),
                    offset: a.origin_offset + shift(0, 1) + shift(1, a.alloc[0]),
                    input: a.role == crate::schedule::Role::Input,
                }
            })
            .collect();
        Ok(Part {
            at: [r[0][0], r[1][0]],
            size,
            schedule,
            group: g,
            pointers,
        })
    };
    let inner = vec![part(0, interior)?];
    let mut outer = Vec::new();
    for (b, r) in strips.into_iter().enumerate() {
        if r[0][0] < r[0][1] && r[1][0] < r[1][1] {
            outer.push(part(b + 1, r)?);
        }
    }
    Ok((inner, outer))
}
