//! One group's lowering: its tile grid, its stencils' steps in program order and the row loops
//! they share.

use std::ops::Range;

use absinthe_model::cost_model::boxes::{
    block_plan, read_hull, stream_window, tile_intervals, BlockPlan, Interval, RegisterWindow,
    StagedInput,
};
use absinthe_model::language::analysis::{Analysis, Extent};

use super::access::staged_ident;
use super::row_loops::{
    loop_x_boxes, nontemporal_steps, stream_prefetches, whole_blocks, PREFETCH_BYTES, ROW_CHUNK,
};
use super::types::{GroupSchedule, StagedArray, StencilStep, StreamPlan};
use super::{Lowering, Target};
use crate::CodegenError;

/// What every step of one group reads.
pub(super) struct GroupLowering<'a> {
    pub lowering: &'a Lowering<'a>,
    /// The group's index.
    pub index: usize,
    /// The group's stencils.
    pub range: Range<usize>,
    /// Whether the group streams (along `lowering.stream_dim`).
    pub streams: bool,
    /// The model's evaluation widths of the group's stencils, in order.
    pub widths: Vec<Extent>,
    /// The CUDA block and tile buffers (`boxes::block_plan`).
    pub device: BlockPlan,
    /// `ceil(D / n)`.
    pub tile_size: [usize; 3],
    /// Non-empty tiles per dimension, `ceil(D / tile_size)`.
    pub grid: [usize; 3],
}

impl<'a> GroupLowering<'a> {
    pub fn new(lowering: &'a Lowering<'a>, index: usize, range: Range<usize>) -> Self {
        let (config, domain) = (lowering.config, lowering.analysis.domain);
        let streams = config.streams(index);
        let widths: Vec<Extent> = lowering.cost.groups[index]
            .stencils
            .iter()
            .map(|s| s.widths)
            .collect();
        let device = block_plan(
            lowering.analysis,
            &range,
            &widths,
            config.tiles[index],
            streams && lowering.stream_dim == 2,
            lowering.limits,
        );
        let tile_size = config.tile_size(index, domain);
        GroupLowering {
            lowering,
            index,
            range,
            streams,
            widths,
            device,
            tile_size,
            grid: [0, 1, 2].map(|d| domain[d].div_ceil(tile_size[d])),
        }
    }

    /// Whether stencil `s` belongs to this group.
    pub fn contains(&self, s: usize) -> bool {
        self.lowering.config.groups[s] == self.index
    }

    /// The model's evaluation widths of stencil `s` of this group.
    pub fn widths_of(&self, s: usize) -> Extent {
        self.widths[s - self.range.start]
    }

    /// How many lines ahead of the stream step stencil `s` runs in a streamed group (its
    /// forward width along the stream dimension); 0 when the group does not stream.
    pub fn lag(&self, s: usize) -> i64 {
        if self.streams {
            self.widths_of(s)[self.lowering.stream_dim][1] as i64
        } else {
            0
        }
    }

    /// The rolling window of producer `p` in a streamed group: its buffer keeps the lines from
    /// the oldest one an in-group reader still reads to its newest.
    pub fn window(&self, p: usize) -> Option<usize> {
        let (analysis, dim) = (self.lowering.analysis, self.lowering.stream_dim);
        self.streams
            .then(|| stream_window(analysis, &self.range, &self.widths, p, dim))
            .flatten()
    }

    /// On the CUDA target, the register window of producer `p`'s buffer, if it has one.
    pub fn registers_of(&self, p: usize) -> Option<RegisterWindow> {
        if self.lowering.target != Target::Cuda {
            return None;
        }
        self.device
            .buffers
            .iter()
            .find(|b| b.stencil == p)
            .and_then(|b| b.registers)
    }

    /// The group's schedule: a step per stencil, consecutive steps sharing a row loop where
    /// [`super::row_loops`] allows.
    pub fn schedule(&self) -> Result<GroupSchedule, CodegenError> {
        let mut steps: Vec<StencilStep> = Vec::new();
        let mut loops: Vec<Vec<usize>> = Vec::new();
        for s in self.range.clone() {
            let (step, joins) = self.step(s, &steps, loops.last().map(Vec::as_slice))?;
            steps.push(step);
            let n = steps.len() - 1;
            match loops.last_mut() {
                Some(row_loop) if joins => row_loop.push(n),
                _ => loops.push(vec![n]),
            }
        }
        self.check_stream_along_y(&steps)?;
        if self.streams && self.lowering.stream_dim == 2 && self.lowering.target == Target::OpenMp {
            row_lags(self.lowering.analysis, &mut steps, &loops);
        }
        let analysis = self.lowering.analysis;
        let stream_dim = self.lowering.stream_dim;
        let bands = loops.iter().map(|lp| interval_bands(&steps, lp)).collect();
        let nontemporal =
            nontemporal_steps(analysis, &mut steps, &loops, &self.lowering.memory_bound);
        let prefetch = if self.streams && self.lowering.target == Target::OpenMp {
            stream_prefetches(analysis, &steps, &loops, stream_dim)
        } else {
            vec![Vec::new(); loops.len()]
        };
        let prefetch_cells = PREFETCH_BYTES / self.lowering.program.value_type.bytes();
        let whole_blocks = whole_blocks(
            &loop_x_boxes(&steps, &loops),
            ROW_CHUNK,
            prefetch_cells as i64,
        );
        Ok(GroupSchedule {
            index: self.index,
            stencils: self
                .range
                .clone()
                .map(|s| analysis.stencils[s].name.clone())
                .collect(),
            tile_counts: self.lowering.config.tiles[self.index],
            tile_size: self.tile_size,
            grid: self.grid,
            tiles_total: self.grid.iter().product(),
            cores: self.cores(),
            steps,
            stream: self.streams.then_some(StreamPlan {
                dim: stream_dim,
                other: 3 - stream_dim,
            }),
            block: self.device.block,
            loops,
            bands,
            row_chunk: (self.streams && self.lowering.target != Target::Cuda).then_some(ROW_CHUNK),
            prefetch,
            prefetch_cells,
            whole_blocks,
            nontemporal,
            staged: self.staged(),
        })
    }

    /// How the array named `name` is staged in shared memory, if the group stages it.
    pub fn staged_input(&self, name: &str) -> Option<&StagedInput> {
        self.device
            .inputs
            .iter()
            .find(|i| self.lowering.analysis.arrays[i.array].name == name)
    }

    /// The arrays the group's CUDA kernel stages (`boxes::block_plan`), with their read boxes
    /// per tile.
    fn staged(&self) -> Vec<StagedArray> {
        let analysis = self.lowering.analysis;
        self.device
            .inputs
            .iter()
            .map(|input| {
                let name = &analysis.arrays[input.array].name;
                StagedArray {
                    ident: staged_ident(input.array),
                    array: name.clone(),
                    origin: format!("g_{name}"),
                    extents: input.extents,
                    reach: input.reach,
                    read_box: [0, 1, 2].map(|d| {
                        (0..self.grid[d])
                            .map(|t| {
                                read_hull(
                                    analysis,
                                    &self.range,
                                    &self.widths,
                                    self.tile_size,
                                    input.array,
                                    d,
                                    t,
                                )
                                .expect("a staged array is read in the group")
                            })
                            .collect()
                    }),
                }
            })
            .collect()
    }

    /// The tile cores per dimension.
    fn cores(&self) -> [Vec<Interval>; 3] {
        let domain = self.lowering.analysis.domain;
        [0, 1, 2].map(|d| {
            (0..self.grid[d])
                .map(|t| tile_intervals(domain[d], self.tile_size[d], t, [0, 0], [0, 0]).0)
                .collect()
        })
    }

    /// Streaming along y walks a tile plane by plane: every stencil's z box must be the same (it
    /// is: the stream dimension is y only when no access has a z offset).
    fn check_stream_along_y(&self, steps: &[StencilStep]) -> Result<(), CodegenError> {
        if self.streams
            && self.lowering.stream_dim == 1
            && steps
                .iter()
                .any(|st| st.loop_box[2] != steps[0].loop_box[2])
        {
            return Err(CodegenError::Configuration(format!(
                "group {} streams along y, but its stencils' z loop boxes differ",
                self.index
            )));
        }
        Ok(())
    }
}

/// Sets the row lags of a group streamed along z: within a plane step the row loops advance one
/// row at a time, loop after loop, and a loop runs `row_lag` rows ahead of the row step, enough
/// that every row a later loop reads of it at that step is already computed: the largest
/// `row_lag` of a reader plus its read's y offset (at least 0). A row a reader takes from its
/// producer was then computed a few rows earlier and is still in the first-level cache, where
/// whole planes one loop after another pass every plane through the second level (decision
/// 0037). Loops are set last to first; reads within one loop are of earlier rows or planes
/// (`row_loops::joins_row_loop`) and need no lag.
fn row_lags(analysis: &Analysis, steps: &mut [StencilStep], loops: &[Vec<usize>]) {
    for li in (0..loops.len()).rev() {
        let mut lag = 0;
        for &n in &loops[li] {
            let array = analysis.stencils[steps[n].stencil].array;
            for &m in loops[li + 1..].iter().flatten() {
                for (a, off) in &analysis.stencils[steps[m].stencil].accesses {
                    if *a == array {
                        lag = lag.max(steps[m].row_lag + i64::from(off[1].max(0)));
                    }
                }
            }
        }
        for &n in &loops[li] {
            steps[n].row_lag = lag;
        }
    }
}

/// The levels at which the intervals of row loop `lp`'s steps change, ascending and without
/// repeats: each interval's end but the last's ([`GroupSchedule::bands`]).
fn interval_bands(steps: &[StencilStep], lp: &[usize]) -> Vec<i64> {
    let mut his: Vec<i64> = lp
        .iter()
        .flat_map(|&n| {
            let ivs = &steps[n].intervals;
            ivs[..ivs.len().saturating_sub(1)].iter().map(|iv| iv.hi)
        })
        .collect();
    his.sort_unstable();
    his.dedup();
    his
}
