//! The accesses of a generated OpenMP kernel, thread by thread, in the order its loops run them
//! (`codegen/templates/kernel_body.j2`): each group's tiles split among the threads as
//! `schedule(static)` splits them, each tile's row loops with their reads (in source order),
//! tile-buffer writes and stores. A trace build of the same kernel records the same stream.
//! The naive reference (`harness_body.j2`) is walked the same way: each stencil over its box,
//! its k planes split among the threads.

use absinthe_codegen::schedule::{chunk_cells, row_chunks, GroupSchedule, StencilStep};
use absinthe_codegen::Schedule;
use serde::Serialize;

use crate::layout::Layout;

mod layer;

/// One access of the kernel's source: a read of a step, or its tile-buffer write or store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Site {
    pub group: usize,
    /// The stencil whose step makes the access.
    pub stencil: String,
    /// `read` or `write`.
    pub kind: &'static str,
    /// The program array accessed (for a write, the stencil's own).
    pub array: String,
    /// Whether it goes to the tile buffer (else to the global array).
    pub buffer: bool,
    /// From `(i, j, k)`.
    pub offset: [i32; 3],
}

/// What hears every access: a row's cells at once.
pub trait Sink {
    /// Cells `[lo, hi)` of a row: at each cell, every access of `rows` in order.
    fn row(&mut self, rows: &[RowAccess], lo: i64, hi: i64);
}

/// One access of every cell of a row.
#[derive(Clone, Copy, Debug)]
pub struct RowAccess {
    /// Its address at `i = 0`.
    pub base: u64,
    /// Its site (an index into [`Walk::sites`]).
    pub site: u32,
    /// Bytes it advances per cell: the value's, or 0 for a field without `i`.
    pub step: u64,
}

/// Where an access goes.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// A global array: the address of its element (0, 0, 0) and its strides in elements along
    /// (i, j, k) (0 along a field's missing dimensions).
    Global(u64, [i64; 3]),
    /// The tile buffer of the group's step `n`.
    Buffer(usize),
}

#[derive(Clone, Copy, Debug)]
struct Op {
    site: u32,
    target: Target,
    offset: [i64; 3],
}

/// A step's accesses per cell: reads in order, then the buffer write, then the store.
#[derive(Clone, Debug, Default)]
struct StepOps {
    reads: Vec<Op>,
    buffer_write: Option<Op>,
    store: Option<Op>,
}

/// Which code of a schedule runs: its kernel or the naive reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    Kernel,
    Reference,
}

/// The per-cell accesses of every step of a schedule (or of every stencil of its reference),
/// ready to walk.
pub struct Walk<'a> {
    schedule: &'a Schedule,
    layout: Layout,
    threads: usize,
    code: Code,
    pub sites: Vec<Site>,
    /// Per group (for the reference: per stencil, each its own group), its stencils.
    pub parts: Vec<(usize, Vec<String>)>,
    ops: Vec<Vec<StepOps>>,
}

/// A step's bounds in the current tile: loop box, store box, and its buffer's base index.
#[derive(Clone, Copy, Debug, Default)]
struct Bounds {
    lo: [i64; 3],
    hi: [i64; 3],
    store_lo: [i64; 3],
    store_hi: [i64; 3],
    buffer_base: i64,
}

/// The tiles `[lo, hi)` thread `t` of `threads` runs of a `schedule(static)` loop of `n`
/// iterations: the first `n % threads` threads one more than the others.
pub fn static_chunk(n: usize, threads: usize, t: usize) -> (usize, usize) {
    let (q, r) = (n / threads, n % threads);
    if t < r {
        (t * (q + 1), t * (q + 1) + q + 1)
    } else {
        (t * q + r, t * q + r + q)
    }
}

impl<'a> Walk<'a> {
    /// The walk of `schedule`'s `code` (an OpenMP lowering) run by `threads` threads.
    pub fn new(schedule: &'a Schedule, threads: usize, code: Code) -> Walk<'a> {
        let layout = Layout::of(schedule, threads);
        let (sites, parts, ops) = match code {
            Code::Kernel => kernel_ops(schedule, &layout),
            Code::Reference => reference_ops(schedule, &layout),
        };
        Walk {
            schedule,
            layout,
            threads,
            code,
            sites,
            parts,
            ops,
        }
    }
}

/// Element strides along (i, j, k) of an array allocated over `alloc` with dimensions `dims`
/// (`ijk`, or a field's own): 0 along the missing ones.
fn strides_of(alloc: &[usize; 3], dims: &str) -> [i64; 3] {
    let mut stride = 1i64;
    [0, 1, 2].map(|d| {
        let own = dims.contains(["i", "j", "k"][d]);
        let s = if own { stride } else { 0 };
        stride *= alloc[d] as i64;
        s
    })
}

/// Kernel array `a` of `schedule` as a target.
fn global(schedule: &Schedule, layout: &Layout, a: usize) -> Target {
    let array = &schedule.arrays[a];
    Target::Global(layout.origin[a], strides_of(&array.alloc, &array.dims))
}

/// Sites, parts (per group its stencils) and per-cell operations of a walk.
type Ops = (Vec<Site>, Vec<(usize, Vec<String>)>, Vec<Vec<StepOps>>);

/// The naive reference's: one group per stencil, its reads and its store.
fn reference_ops(schedule: &Schedule, layout: &Layout) -> Ops {
    let mut sites = Vec::new();
    let mut ops = Vec::new();
    {
        let origin = |name: &str| match schedule.stencil_arrays.iter().position(|n| n == name) {
            Some(n) => {
                let dims = &schedule.stencil_dims[n];
                let alloc = [0, 1, 2].map(|d| {
                    let own = dims.contains(["i", "j", "k"][d]);
                    if own {
                        schedule.alloc[d]
                    } else {
                        1
                    }
                });
                Target::Global(layout.reference[n], strides_of(&alloc, dims))
            }
            None => {
                let a = schedule
                    .arrays
                    .iter()
                    .position(|a| a.name == name)
                    .expect("a reference read names an input or a stencil");
                global(schedule, layout, a)
            }
        };
        for (g, r) in schedule.reference.iter().enumerate() {
            let mut site = |kind, array: &str, offset: [i32; 3]| {
                sites.push(Site {
                    group: g,
                    stencil: r.name.clone(),
                    kind,
                    array: array.to_string(),
                    buffer: false,
                    offset,
                });
                (sites.len() - 1) as u32
            };
            let mut step_ops = StepOps::default();
            for rd in &r.reads {
                step_ops.reads.push(Op {
                    site: site("read", &rd.array, rd.offset),
                    target: origin(&rd.array),
                    offset: rd.offset.map(i64::from),
                });
            }
            step_ops.store = Some(Op {
                site: site("write", &r.name, [0; 3]),
                target: origin(&r.name),
                offset: [0; 3],
            });
            ops.push(vec![step_ops]);
        }
        let parts = schedule
            .reference
            .iter()
            .enumerate()
            .map(|(g, r)| (g, vec![r.name.clone()]))
            .collect();
        (sites, parts, ops)
    }
}

/// The kernel's: per group, per step, its reads, buffer write and store.
fn kernel_ops(schedule: &Schedule, layout: &Layout) -> Ops {
    let mut sites = Vec::new();
    let mut ops = Vec::new();
    let global = |name: &str| {
        let a = schedule
            .arrays
            .iter()
            .position(|a| a.name == name)
            .expect("a global read names a kernel array");
        global(schedule, layout, a)
    };
    for g in &schedule.groups {
        let mut group_ops = Vec::new();
        for st in &g.steps {
            let mut site = |kind, array: &str, buffer, offset: [i32; 3]| {
                sites.push(Site {
                    group: g.index,
                    stencil: st.name.clone(),
                    kind,
                    array: array.to_string(),
                    buffer,
                    offset,
                });
                (sites.len() - 1) as u32
            };
            let mut step_ops = StepOps::default();
            for r in &st.reads {
                let target = if r.buffer {
                    Target::Buffer(
                        g.steps
                            .iter()
                            .position(|p| p.name == r.array)
                            .expect("a buffer read names an in-group producer"),
                    )
                } else {
                    global(&r.array)
                };
                step_ops.reads.push(Op {
                    site: site("read", &r.array, r.buffer, r.offset),
                    target,
                    offset: r.offset.map(i64::from),
                });
            }
            let own = g.steps.iter().position(|p| p.name == st.name).unwrap_or(0);
            if st.buffer.is_some() {
                step_ops.buffer_write = Some(Op {
                    site: site("write", &st.name, true, [0; 3]),
                    target: Target::Buffer(own),
                    offset: [0; 3],
                });
            }
            if st.global.is_some() {
                step_ops.store = Some(Op {
                    site: site("write", &st.name, false, [0; 3]),
                    target: global(&st.name),
                    offset: [0; 3],
                });
            }
            group_ops.push(step_ops);
        }
        ops.push(group_ops);
    }
    let parts = schedule
        .groups
        .iter()
        .map(|g| (g.index, g.steps.iter().map(|s| s.name.clone()).collect()))
        .collect();
    (sites, parts, ops)
}

impl Walk<'_> {
    /// One past the highest address any access can have.
    pub fn end(&self) -> u64 {
        match self.code {
            Code::Kernel => self.layout.kernel_end,
            Code::Reference => self.layout.end,
        }
    }

    /// At least as many accesses as all threads make together, without walking: per row loop,
    /// the cells of its first step's loop box over every tile (the boxes of a grid's tiles
    /// are products, so their volumes sum to the product of each dimension's sum) times the
    /// accesses per cell of its steps; a stored, buffered step's store is counted over its
    /// whole loop box. For the reference, each stencil's region times its reads and store.
    pub fn accesses_at_most(&self) -> u128 {
        let volume = |boxes: [u128; 3]| boxes.iter().product::<u128>();
        let len = |i: &[i64; 2]| (i[1] - i[0]).max(0) as u128;
        if self.code == Code::Reference {
            return self
                .schedule
                .reference
                .iter()
                .zip(&self.ops)
                .map(|(r, ops)| {
                    let per_cell = ops[0].reads.len() + usize::from(ops[0].store.is_some());
                    volume(r.region.each_ref().map(len)) * per_cell as u128
                })
                .sum();
        }
        let mut total = 0u128;
        for (g, ops) in self.schedule.groups.iter().zip(&self.ops) {
            for lp in &g.loops {
                let st = &g.steps[lp[0]];
                let cells = volume(st.loop_box.each_ref().map(|b| b.iter().map(len).sum()));
                let per_cell: usize = lp
                    .iter()
                    .map(|&n| {
                        let o = &ops[n];
                        o.reads.len()
                            + usize::from(o.buffer_write.is_some())
                            + usize::from(o.store.is_some())
                    })
                    .sum();
                total += cells * per_cell as u128;
            }
        }
        total
    }

    /// The accesses every site of group `gi` makes over all threads and tiles, indexed by site
    /// (0 for the other groups' sites), without walking: a row loop runs its first step's loop
    /// box, every tile's, and each of its steps' reads and buffer write every cell of it; a
    /// stored, buffered step stores over its store box, any other stored step over its loop
    /// box.
    pub fn group_accesses(&self, gi: usize) -> Vec<u64> {
        let len = |i: &[i64; 2]| (i[1] - i[0]).max(0) as u64;
        let cells = |boxes: &[Vec<[i64; 2]>; 3]| -> u64 {
            boxes
                .iter()
                .map(|b| b.iter().map(len).sum::<u64>())
                .product()
        };
        let (g, ops) = (&self.schedule.groups[gi], &self.ops[gi]);
        let mut out = vec![0; self.sites.len()];
        for lp in &g.loops {
            let first = cells(&g.steps[lp[0]].loop_box);
            for &n in lp {
                let (st, o) = (&g.steps[n], &ops[n]);
                for op in o.reads.iter().chain(&o.buffer_write) {
                    out[op.site as usize] += first;
                }
                if let Some(op) = &o.store {
                    out[op.site as usize] += match (&st.buffer, &st.store_box) {
                        (Some(_), Some(b)) if st.global.is_some() => cells(b),
                        _ => first,
                    };
                }
            }
        }
        out
    }

    /// How many `chunk`-byte pieces (a divisor of the allocations' alignment) the allocations
    /// group `gi` of the kernel can reach hold: its arrays' and its tile buffers'.
    pub fn group_pieces(&self, gi: usize, chunk: u64) -> u64 {
        let mut arrays: Vec<usize> = self.ops[gi]
            .iter()
            .flat_map(|o| o.reads.iter().chain(&o.buffer_write).chain(&o.store))
            .filter_map(|op| match op.target {
                Target::Global(origin, _) => self.layout.origin.iter().position(|&o| o == origin),
                Target::Buffer(_) => None,
            })
            .collect();
        arrays.sort_unstable();
        arrays.dedup();
        let spans = arrays.iter().map(|&a| self.layout.array_span[a]);
        spans
            .chain(self.layout.buffer_spans[gi].iter().copied())
            .map(|(start, end)| (end - start) / chunk)
            .sum()
    }

    /// How many groups the kernel has.
    pub fn groups(&self) -> usize {
        self.schedule.groups.len()
    }

    /// How many tiles group `gi` has.
    pub fn group_tiles(&self, gi: usize) -> usize {
        self.schedule.groups[gi].tiles_total
    }

    /// Group `gi`'s tiles along each dimension.
    pub fn group_grid(&self, gi: usize) -> [usize; 3] {
        self.schedule.groups[gi].grid
    }

    /// The threads that run the code.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Every access thread `t` makes, in order, to `sink`.
    pub fn run<S: Sink>(&self, t: usize, sink: &mut S) {
        if self.code == Code::Reference {
            self.run_reference(t, sink);
            return;
        }
        for gi in 0..self.schedule.groups.len() {
            self.run_group(t, gi, sink, &mut |_, _| false);
        }
    }

    /// Group `gi`'s accesses of thread `t` of the kernel, in order, to `sink`. `stop` is asked
    /// after every tile and, in a streamed tile, after every step along the stream (every row
    /// loop's rows of that step made), with the thread's tiles finished so far; the walk ends
    /// where it answers true. Whether it did.
    pub fn run_group<S: Sink>(
        &self,
        t: usize,
        gi: usize,
        sink: &mut S,
        stop: &mut dyn FnMut(&mut S, usize) -> bool,
    ) -> bool {
        let g = &self.schedule.groups[gi];
        let (lo, hi) = static_chunk(g.tiles_total, self.threads, t);
        for tile in lo..hi {
            let tx = tile % g.grid[0];
            let ty = (tile / g.grid[0]) % g.grid[1];
            let tz = tile / (g.grid[0] * g.grid[1]);
            let mut tw = TileWalk {
                walk: self,
                g,
                ops: &self.ops[gi],
                buffers: &self.layout.buffers[gi],
                thread: t,
                bounds: bounds_of(g, [tx, ty, tz]),
                rows: Vec::new(),
            };
            let done = tile - lo;
            if tw.run(sink, &mut |s| stop(s, done)) || stop(sink, done + 1) {
                return true;
            }
        }
        false
    }

    /// The reference's accesses of thread `t`: each stencil over its box, the thread's
    /// `schedule(static)` share of its k planes, rows along i.
    fn run_reference<S: Sink>(&self, t: usize, sink: &mut S) {
        let s = self.schedule;
        let vb = s.value_bytes as i64;
        let mut rows: Vec<RowAccess> = Vec::new();
        for (r, ops) in s.reference.iter().zip(&self.ops) {
            let [x, y, z] = r.region;
            let (lo, hi) = static_chunk((z[1] - z[0]).max(0) as usize, self.threads, t);
            for k in z[0] + lo as i64..z[0] + hi as i64 {
                for j in y[0]..y[1] {
                    rows.clear();
                    for op in ops[0].reads.iter().chain(&ops[0].store) {
                        let Target::Global(origin, st) = op.target else {
                            unreachable!("the reference reads no buffer")
                        };
                        rows.push(RowAccess {
                            base: global_address(origin, st, op.offset, j, k, vb),
                            site: op.site,
                            step: (st[0] * vb) as u64,
                        });
                    }
                    sink.row(&rows, x[0], x[1]);
                }
            }
        }
    }
}

/// Every step's bounds in tile `tile` of group `g`.
fn bounds_of(g: &GroupSchedule, tile: [usize; 3]) -> Vec<Bounds> {
    g.steps
        .iter()
        .map(|st| {
            let mut b = Bounds::default();
            for d in 0..3 {
                let l = st.loop_box[d][tile[d]];
                b.lo[d] = l[0];
                b.hi[d] = l[1];
                if let Some(s) = &st.store_box {
                    b.store_lo[d] = s[d][tile[d]][0];
                    b.store_hi[d] = s[d][tile[d]][1];
                }
            }
            if let Some(buf) = &st.buffer {
                let (y, z) = (buf.host.stride_y as i64, buf.host.stride_z as i64);
                b.buffer_base = -match &g.stream {
                    None => b.lo[0] + b.lo[1] * y + b.lo[2] * z,
                    Some(s) if s.dim == 2 => b.lo[0] + b.lo[1] * y,
                    Some(_) => b.lo[0],
                };
            }
            b
        })
        .collect()
}

/// One tile of one group as one thread runs it.
struct TileWalk<'w, 'a> {
    walk: &'w Walk<'a>,
    g: &'w GroupSchedule,
    ops: &'w [StepOps],
    buffers: &'w [Option<Vec<u64>>],
    thread: usize,
    bounds: Vec<Bounds>,
    /// Scratch: the accesses of the current row.
    rows: Vec<RowAccess>,
}

impl TileWalk<'_, '_> {
    /// The tile's accesses to `sink`, asking `stop` after every step along the stream (see
    /// [`Walk::run_group`]); whether it stopped.
    fn run<S: Sink>(&mut self, sink: &mut S, stop: &mut dyn FnMut(&mut S) -> bool) -> bool {
        let g = self.g;
        match &g.stream {
            Some(s) => {
                let d = s.dim;
                let (t_lo, t_hi) = self.steps(d, |st| st.lag);
                if d == 2 {
                    let (u_lo, u_hi) = self.steps(1, |st| st.row_lag);
                    let (chunk, chunks) = self.chunks();
                    for t in t_lo..t_hi {
                        for u in u_lo..u_hi {
                            for c in 0..chunks {
                                for lp in &g.loops {
                                    let (st, b) = (&g.steps[lp[0]], self.bounds[lp[0]]);
                                    let (j, k) = (u + st.row_lag, t + st.lag);
                                    if b.lo[2] <= k && k < b.hi[2] && b.lo[1] <= j && j < b.hi[1] {
                                        let x = chunk_cells(b.lo[0], b.hi[0], c, chunks, chunk);
                                        self.row(lp, j, k, x, sink);
                                    }
                                }
                            }
                        }
                        if stop(sink) {
                            return true;
                        }
                    }
                } else {
                    let first = self.bounds[0];
                    let (chunk, chunks) = self.chunks();
                    for k in first.lo[2]..first.hi[2] {
                        for t in t_lo..t_hi {
                            for c in 0..chunks {
                                for lp in &g.loops {
                                    let (st, b) = (&g.steps[lp[0]], self.bounds[lp[0]]);
                                    let j = t + st.lag;
                                    if b.lo[1] <= j && j < b.hi[1] {
                                        let x = chunk_cells(b.lo[0], b.hi[0], c, chunks, chunk);
                                        self.row(lp, j, k, x, sink);
                                    }
                                }
                            }
                            if stop(sink) {
                                return true;
                            }
                        }
                    }
                }
            }
            None => {
                for lp in &g.loops {
                    let b = self.bounds[lp[0]];
                    for k in b.lo[2]..b.hi[2] {
                        for j in b.lo[1]..b.hi[1] {
                            self.row(lp, j, k, (b.lo[0], b.hi[0]), sink);
                        }
                    }
                }
            }
        }
        false
    }

    /// The steps `[lo, hi)` along `d` that cover every line of every stencil's loop box, less
    /// its `lag` (the stream lag, or the row lag within a plane step), as the kernel's
    /// `stream_range` computes them.
    fn steps(&self, d: usize, lag: impl Fn(&StencilStep) -> i64) -> (i64, i64) {
        self.g
            .steps
            .iter()
            .zip(&self.bounds)
            .map(|(st, b)| (b.lo[d] - lag(st), b.hi[d] - lag(st)))
            .fold((i64::MAX, i64::MIN), |(lo, hi), (l, h)| {
                (lo.min(l), hi.max(h))
            })
    }

    /// The cells of a chunk of this tile's row steps and how many chunks a row step takes
    /// (`GroupSchedule::row_chunk`; one chunk of every row when the group has none).
    fn chunks(&self) -> (i64, i64) {
        let chunk = self.g.row_chunk.unwrap_or(i64::MAX);
        let spans = self.g.loops.iter().map(|lp| {
            let b = self.bounds[lp[0]];
            b.hi[0] - b.lo[0]
        });
        (chunk, row_chunks(spans, chunk))
    }

    /// `op` in row `(j, k)`: its address at `i = 0`, its site and step.
    fn row_access(&self, op: &Op, j: i64, k: i64) -> RowAccess {
        let vb = self.walk.schedule.value_bytes as i64;
        let (base, step) = match op.target {
            Target::Global(origin, s) => {
                (global_address(origin, s, op.offset, j, k, vb), s[0] * vb)
            }
            Target::Buffer(_) => (self.row_address(op, j, k), vb),
        };
        RowAccess {
            base,
            site: op.site,
            step: step as u64,
        }
    }

    /// The address at `(0, j, k)` of `op`.
    fn row_address(&self, op: &Op, j: i64, k: i64) -> u64 {
        let s = self.walk.schedule;
        let vb = s.value_bytes as i64;
        let [ox, oy, oz] = op.offset;
        match op.target {
            Target::Global(origin, s) => global_address(origin, s, op.offset, j, k, vb),
            Target::Buffer(n) => {
                let st = &self.g.steps[n];
                let b = st.buffer.as_ref().expect("a buffer target has a buffer");
                let (y, z) = (b.host.stride_y as i64, b.host.stride_z as i64);
                let slot = |q: i64, w: usize| q.rem_euclid(w as i64);
                let index = self.bounds[n].buffer_base
                    + ox
                    + match (b.host.window, &self.g.stream) {
                        (Some(w), Some(sp)) if sp.dim == 2 => (j + oy) * y + slot(k + oz, w) * z,
                        (Some(w), _) => slot(j + oy, w) * y,
                        (None, _) => (j + oy) * y + (k + oz) * z,
                    };
                let base = self.buffers[n]
                    .as_ref()
                    .expect("a buffered step has addresses")[self.thread];
                base.wrapping_add_signed(index * vb)
            }
        }
    }

    /// Cells `[x.0, x.1)` of row `(j, k)` of the row loop `lp`.
    fn row<S: Sink>(&mut self, lp: &[usize], j: i64, k: i64, x: (i64, i64), sink: &mut S) {
        let first = lp[0];
        let st = &self.g.steps[first];
        let b = self.bounds[first];
        let mut rows = std::mem::take(&mut self.rows);
        if st.buffer.is_some() && st.global.is_some() {
            // A stored, buffered step: three loops, the middle one also storing.
            let keep =
                b.store_lo[1] <= j && j < b.store_hi[1] && b.store_lo[2] <= k && k < b.store_hi[2];
            let (seg0, seg1) = if keep {
                (b.store_lo[0], b.store_hi[0])
            } else {
                (b.hi[0], b.hi[0])
            };
            let seg0 = seg0.max(x.0).min(x.1);
            let seg1 = seg1.max(seg0).min(x.1);
            let ops = &self.ops[first];
            for (lo, hi, store) in [(x.0, seg0, false), (seg0, seg1, true), (seg1, x.1, false)] {
                rows.clear();
                let parts = ops.reads.iter().chain(&ops.buffer_write);
                let parts = parts.chain(ops.store.as_ref().filter(|_| store));
                rows.extend(parts.map(|op| self.row_access(op, j, k)));
                sink.row(&rows, lo, hi);
            }
        } else {
            rows.clear();
            for &n in lp {
                let ops = &self.ops[n];
                let parts = ops.reads.iter().chain(&ops.buffer_write).chain(&ops.store);
                rows.extend(parts.map(|op| self.row_access(op, j, k)));
            }
            sink.row(&rows, x.0, x.1);
        }
        self.rows = rows;
    }
}

/// The address of element `(0 + ox, j + oy, k + oz)` of the array at `origin` with element
/// strides `s`, values of `vb` bytes.
fn global_address(origin: u64, s: [i64; 3], offset: [i64; 3], j: i64, k: i64, vb: i64) -> u64 {
    let [ox, oy, oz] = offset;
    origin.wrapping_add_signed((ox * s[0] + (j + oy) * s[1] + (k + oz) * s[2]) * vb)
}
