//! Schedule lowering: one schedule drives every target (docs/ARCHITECTURE.md, "codegen/").
//!
//! [`lower`] turns a program, its analysis and a configuration into a [`Schedule`]: per group
//! the tile grid and, per stencil, the loop box of every tile (the tile core grown by the
//! model's evaluation widths, clipped to the box the reference evaluates), where the stencil's
//! values live (a global array, a tile-local buffer, or both) and the C expression that
//! computes them. The templates only lay these numbers out.
//!
//! Boxes are half-open intervals `[lo, hi)` in domain coordinates: index 0 is the first domain
//! cell, negative indices and indices `>= D` are halo cells.
//!
//! Invariants (checked by the property test in `tests/codegen.rs`):
//! - the store boxes of a stencil partition the box the reference evaluates it on, so every
//!   global element is written by exactly one tile and holds what the reference holds;
//!   a tile whose core touches the domain boundary also stores the reference's extent beyond
//!   the domain on that side;
//! - the loop box of a producer in a tile covers what its in-group readers read in that tile.

use absinthe_model::analysis::{Analysis, ArrayKind, Extent};
use absinthe_model::cost::{stream_shape, Configuration, Cost};
use absinthe_model::program::{Program, ValueType};
use serde::Serialize;

use crate::cexpr::c_expr;
use crate::CodegenError;

pub use absinthe_model::boxes::Interval;
use absinthe_model::boxes::{
    block_plan, stream_window, tile_intervals, RegisterWindow, MAX_BLOCK_THREADS,
};

/// The most arithmetic (`Expr::operations`, lets included) that stencils sharing one row loop
/// may do per element. Sharing saves a row loop's overhead and lets a reader take its
/// producer's value from a register, but one body with several large stencils runs out of
/// vector registers and spills, and walks every stream at once: cosmo_hdiff4_256 with its four
/// fully inlined outputs (about 50 operations each) in one loop took 22.8 ms, in two loops of
/// two 18.5 ms, in four loops 17.2 ms (same kernel otherwise, `g++ -O3 -march=native`, the FMA
/// build, medians of five interleaved runs of 16).
pub const ROW_LOOP_OPERATIONS: u64 = 64;

/// Where a global array comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Read by the program; initialised by the caller on domain plus halo.
    Input,
    /// A program output.
    Output,
    /// A stencil read by a later group: stored globally between groups.
    Temporary,
}

/// An array that lives in memory the caller allocates: `(D + 2H)` values per dimension,
/// x fastest, element `(i, j, k)` at `(i + Hx) + (j + Hy) * AX + (k + Hz) * AX * AY`.
#[derive(Clone, Debug, Serialize)]
pub struct GlobalArray {
    pub name: String,
    /// The kernel parameter: `a_<name>`.
    pub param: String,
    /// The pointer shifted to element (0, 0, 0) inside the kernel: `g_<name>`.
    pub origin: String,
    pub role: Role,
    /// Index among all arrays of the analysis (seeds the harness's input values).
    pub array_id: usize,
    /// For stencils: the box the reference evaluates (domain grown by the analysis extent).
    pub region: Option<[Interval; 3]>,
}

/// A tile-local buffer: one per thread, sized for the largest loop box of any tile.
#[derive(Clone, Debug, Serialize)]
pub struct LocalBuffer {
    /// Variable name of the thread's buffer.
    pub ident: String,
    pub shape: [usize; 3],
    /// Elements per thread: `shape[0] * shape[1] * shape[2]`.
    pub size: usize,
    pub stride_y: usize,
    pub stride_z: usize,
    /// The OpenMP layout: rows padded to 64 bytes, and when the group streams, `window`
    /// slots along the stream dimension instead of the tile's extent.
    pub host: HostLayout,
    /// The CUDA layout's extents (`boxes::block_plan`, what the GPU model counts): `shape`,
    /// with the rolling window along z when the group streams along z. Dense, x fastest.
    pub device: [usize; 3],
    /// On the CUDA target, set when the buffer is a register window (`boxes::block_plan`):
    /// each thread keeps the values of the cells it computes for the planes its readers still
    /// read, `ABS_REG(ident, abs_r, slot)` with the newest plane in slot `window - 1`.
    pub registers: Option<RegisterWindow>,
}

/// A tile buffer as the OpenMP kernel lays it out (the CUDA kernels use [`LocalBuffer`]'s own
/// strides).
#[derive(Clone, Debug, Serialize)]
pub struct HostLayout {
    pub stride_y: usize,
    pub stride_z: usize,
    /// Elements per thread, a multiple of 64 bytes.
    pub size: usize,
    /// Elements from one thread's slice to the next: `offset + size` rounded up to whole 4 KiB
    /// pages ([`THREAD_STRIDE_BYTES`]). The arena is page-aligned, so no two threads' buffers
    /// share a cache line, a 128-byte line pair or a page.
    pub thread_stride: usize,
    /// Elements from the start of the thread's (page-aligned) slice to the buffer: buffers
    /// start at different offsets within their pages ([`buffer_page_offset`]), so that the
    /// rows of two buffers of one group do not alias modulo 4 KiB.
    pub offset: usize,
    /// Slots of the rolling buffer along the stream dimension (plane `q` lives in slot
    /// `q mod window`); `None` when the group does not stream.
    pub window: Option<usize>,
}

/// How a streamed group walks its tiles: all stencils advance one line (`dim` = 1) or plane
/// (`dim` = 2) at a time; stencil `s` computes line `t + lag_s` at step `t`.
#[derive(Clone, Debug, Serialize)]
pub struct StreamPlan {
    pub dim: usize,
    /// The other outer dimension (looped inside the stream step).
    pub other: usize,
}

/// One `let` local, as C.
#[derive(Clone, Debug, Serialize)]
pub struct LocalDef {
    pub ident: String,
    pub code: String,
}

/// One stencil of a group as the tile loop runs it.
#[derive(Clone, Debug, Serialize)]
pub struct StencilStep {
    pub stencil: usize,
    pub name: String,
    /// C-safe prefix of this step's variables: `s<index>`.
    pub ident: String,
    /// The model's evaluation widths `[[e-, e+]; 3]`.
    pub widths: Extent,
    /// In a streamed group: how far ahead of the stream step this stencil runs (its forward
    /// width along the stream dimension); 0 otherwise.
    pub lag: i64,
    /// The analysis extent: the box the reference evaluates, beyond the domain.
    pub extent: Extent,
    /// Loop box per dimension per tile index along that dimension.
    pub loop_box: [Vec<Interval>; 3],
    /// Store box (the tile core, plus the reference extent at the domain boundary) per
    /// dimension per tile index; `None` when the stencil is not stored globally.
    pub store_box: Option<[Vec<Interval>; 3]>,
    /// The global array written (origin pointer name) when stored.
    pub global: Option<String>,
    /// The tile-local buffer when in-group readers read this stencil.
    pub buffer: Option<LocalBuffer>,
    /// Whether this stencil reads the buffer of an in-group producer.
    pub reads_buffers: bool,
    /// On the CUDA target: whether a barrier must follow this stencil's phase, because it
    /// writes a tile buffer in shared memory (its readers run after the barrier) or reads one
    /// (the next write of that buffer runs after it). Register windows need none: a thread
    /// reads only values it computed itself.
    pub barrier: bool,
    /// On the CUDA target, set when this stencil writes or reads a register window: it walks
    /// its loop box in `[x, y]` rounds of the block (unrolled, so that the window's indices are
    /// constants), round `abs_r = ry * rounds[0] + rx`.
    pub rounds: Option<[usize; 2]>,
    /// The buffer element at `(i, j, k)` as C, in the OpenMP layout.
    pub buffer_write: Option<String>,
    /// The C variable holding the value computed at `(i, j, k)`: `v_s<index>`.
    pub value: String,
    pub lets: Vec<LocalDef>,
    /// The expression as C, reading locals, local buffers and global arrays.
    pub code: String,
}

/// One group: a tile loop over its fused stencils.
#[derive(Clone, Debug, Serialize)]
pub struct GroupSchedule {
    pub index: usize,
    pub stencils: Vec<String>,
    /// The configuration's tile counts `n^d`.
    pub tile_counts: [usize; 3],
    /// `ceil(D / n)`.
    pub tile_size: [usize; 3],
    /// Non-empty tiles per dimension, `ceil(D / tile_size)` (at most `n^d`: with tile size
    /// `ceil(D/n)` the last tiles may lie entirely beyond the domain; they are not run).
    pub grid: [usize; 3],
    pub tiles_total: usize,
    /// The tile cores per dimension.
    pub cores: [Vec<Interval>; 3],
    pub steps: Vec<StencilStep>,
    /// Set when the group streams.
    pub stream: Option<StreamPlan>,
    /// The CUDA thread block `[x, y]` (`boxes::block_plan`; the register windows' rounds
    /// follow from it).
    pub block: [usize; 2],
    /// The row loops of the OpenMP kernel: consecutive steps (indices into `steps`) that share
    /// one loop over `i` ([`lower`] says when they may). A reader in the same loop reads a
    /// producer at offset zero from the producer's value variable.
    pub loops: Vec<Vec<usize>>,
}

/// The naive reference: every stencil in program order over its reference box.
#[derive(Clone, Debug, Serialize)]
pub struct ReferenceStencil {
    pub name: String,
    /// The reference array's origin pointer name: `r_<name>`.
    pub target: String,
    pub region: [Interval; 3],
    pub lets: Vec<LocalDef>,
    pub code: String,
}

/// Everything a target needs to emit code for one (program, configuration).
#[derive(Clone, Debug, Serialize)]
pub struct Schedule {
    pub program: String,
    /// C identifier of the kernel function.
    pub kernel: String,
    /// `double` or `float`.
    pub value_type: String,
    pub value_bytes: usize,
    pub domain: [usize; 3],
    pub halo: [usize; 3],
    /// Allocated extent per dimension: `D + 2H`.
    pub alloc: [usize; 3],
    /// `Lx + Hy * AX + Hz * AX * AY`: the linear index of element (0, 0, 0).
    pub origin_offset: usize,
    /// Cells before the domain along each dimension in the allocation: the halo, except along
    /// x on the CUDA target, where it is rounded up so that every row's first domain element
    /// is 128-byte aligned (with `alloc[0]` a multiple of 128 bytes).
    pub lead: [usize; 3],
    /// Bytes a run must move at least: each input read once over the box its readers touch,
    /// each output written once over its reference box (`absinthe_model::traffic::compulsory_bytes`).
    pub compulsory_bytes: u64,
    /// The C type of indices in the kernels: `int` on the CUDA target when every index fits
    /// (32-bit arithmetic), else `long`.
    pub index_type: String,
    /// Kernel parameters in order: inputs, outputs, temporaries.
    pub arrays: Vec<GlobalArray>,
    /// All stencils' reference arrays and the inputs, for the harness.
    pub stencil_arrays: Vec<String>,
    pub groups: Vec<GroupSchedule>,
    pub reference: Vec<ReferenceStencil>,
    /// The configuration lowered (group index per stencil, tile counts per group).
    pub configuration: Configuration,
}

/// Per-dimension `[lo, hi)` boxes of a stencil over the tiles along one dimension: cores, loop
/// boxes, store boxes (`boxes::tile_intervals`, the geometry the GPU model counts too).
fn boxes(
    domain: usize,
    tile: usize,
    grid: usize,
    widths: [usize; 2],
    extent: [usize; 2],
) -> (Vec<Interval>, Vec<Interval>, Vec<Interval>) {
    let mut cores = Vec::with_capacity(grid);
    let mut loops = Vec::with_capacity(grid);
    let mut stores = Vec::with_capacity(grid);
    for t in 0..grid {
        let (c, l, st) = tile_intervals(domain, tile, t, widths, extent);
        cores.push(c);
        loops.push(l);
        stores.push(st);
    }
    (cores, loops, stores)
}

/// A C identifier for the kernel of a program.
fn kernel_name(program: &str) -> String {
    let mut s: String = program
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert_str(0, "p_");
    }
    s + "_kernel"
}

/// Lowers a configuration. `cost` must be `evaluate(analysis, _, config)` (any machine: the
/// evaluation widths do not depend on it). Any configuration of valid shape is accepted,
/// feasible or not.
pub fn lower(
    program: &Program,
    analysis: &Analysis,
    config: &Configuration,
    cost: &Cost,
) -> Result<Schedule, CodegenError> {
    lower_with(
        program,
        analysis,
        config,
        cost,
        Target::OpenMp,
        MAX_BLOCK_THREADS,
    )
}

/// What a lowering is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// The OpenMP kernel: streamed groups as configured, consecutive steps may share a row loop.
    OpenMp,
    /// The original schedule (no streaming, one loop nest per stencil): learn's runtime-tile
    /// kernels.
    Plain,
    /// The CUDA kernels: streamed groups walk z, one loop nest per stencil, rows padded to 128
    /// bytes.
    Cuda,
}

fn lower_with(
    program: &Program,
    analysis: &Analysis,
    config: &Configuration,
    cost: &Cost,
    target: Target,
    block_threads: usize,
) -> Result<Schedule, CodegenError> {
    let share_rows = target == Target::OpenMp;
    let domain = analysis.domain;
    let halo = analysis.halo;
    config
        .check_shape(program.stencils.len(), domain)
        .map_err(CodegenError::Configuration)?;
    let ranges = config.group_ranges();
    if cost.groups.len() != ranges.len()
        || cost.groups.iter().zip(&ranges).any(|(g, r)| g.range != *r)
    {
        return Err(CodegenError::Configuration(
            "the cost does not belong to this configuration".into(),
        ));
    }
    let vt = program.value_type;
    let mut lead = halo;
    let mut alloc = [0, 1, 2].map(|d| domain[d] + 2 * halo[d]);
    if target == Target::Cuda {
        // Coalesced rows: the domain's first column and the row pitch on 128-byte boundaries.
        let line = 128 / vt.bytes();
        lead[0] = halo[0].div_ceil(line) * line;
        alloc[0] = (lead[0] + domain[0] + halo[0]).div_ceil(line) * line;
    }
    let origin_offset = lead[0] + lead[1] * alloc[0] + lead[2] * alloc[0] * alloc[1];
    let cells: usize = alloc.iter().product();
    let index_type = if target == Target::Cuda && cells < i32::MAX as usize / 2 {
        "int"
    } else {
        "long"
    };
    let region_of = |s: usize| -> [Interval; 3] {
        let e = analysis.stencils[s].extent;
        [0, 1, 2].map(|d| [-(e[d][0] as i64), (domain[d] + e[d][1]) as i64])
    };
    let group_of = |s: usize| config.groups[s];
    // The model's store rule (`cost::group_shape`): an output, or read by another group.
    let stored_flags: Vec<bool> = cost.stencils().map(|c| c.store).collect();
    let stored = |s: usize| stored_flags[s];

    // Global arrays: inputs, outputs, temporaries.
    let mut arrays = Vec::new();
    for &a in &analysis.inputs {
        let name = &analysis.arrays[a].name;
        arrays.push(GlobalArray {
            name: name.clone(),
            param: format!("a_{name}"),
            origin: format!("g_{name}"),
            role: Role::Input,
            array_id: a,
            region: None,
        });
    }
    for want in [Role::Output, Role::Temporary] {
        for (s, info) in analysis.stencils.iter().enumerate() {
            let role = if info.is_output {
                Role::Output
            } else if stored(s) {
                Role::Temporary
            } else {
                continue;
            };
            if role == want {
                arrays.push(GlobalArray {
                    name: info.name.clone(),
                    param: format!("a_{}", info.name),
                    origin: format!("g_{}", info.name),
                    role,
                    array_id: info.array,
                    region: Some(region_of(s)),
                });
            }
        }
    }

    let access_global = |off: [i32; 3], origin: &str| -> String {
        format!("{origin}[{}]", linear(off, &["SY".into(), "SZ".into()]))
    };

    let reference = reference_stencils(program, analysis);

    // The groups.
    // The CUDA kernels stream along z whatever the accesses (`cost::stream_shape_on`).
    let stream_dim = if target == Target::Cuda {
        2
    } else {
        stream_shape(analysis).dim
    };
    let value_bytes = vt.bytes();
    let mut groups = Vec::new();
    for (g, range) in ranges.iter().enumerate() {
        let streams = config.streams(g);
        // A streamed group runs stencil `s` `lag(s)` lines ahead of the stream step; a buffer
        // keeps the lines from the oldest one an in-group reader still reads to its newest.
        let lag = |s: usize| -> i64 {
            if streams {
                cost.groups[g].stencils[s - range.start].widths[stream_dim][1] as i64
            } else {
                0
            }
        };
        let group_widths: Vec<Extent> = cost.groups[g].stencils.iter().map(|s| s.widths).collect();
        let window = |p: usize| -> Option<usize> {
            streams
                .then(|| stream_window(analysis, range, &group_widths, p, stream_dim))
                .flatten()
        };
        let device = block_plan(
            analysis,
            range,
            &group_widths,
            config.tiles[g],
            streams && stream_dim == 2,
            block_threads,
        );
        let registers_of = |p: usize| -> Option<RegisterWindow> {
            if target != Target::Cuda {
                return None;
            }
            device
                .buffers
                .iter()
                .find(|b| b.stencil == p)
                .and_then(|b| b.registers)
        };
        let counts = config.tiles[g];
        let tile_size = config.tile_size(g, domain);
        let grid = [0, 1, 2].map(|d| domain[d].div_ceil(tile_size[d]));
        let mut cores: [Vec<Interval>; 3] = Default::default();
        let mut steps: Vec<StencilStep> = Vec::new();
        let mut loops: Vec<Vec<usize>> = Vec::new();
        for s in range.clone() {
            let info = &analysis.stencils[s];
            let widths = cost.groups[g].stencils[s - range.start].widths;
            let mut loop_box: [Vec<Interval>; 3] = Default::default();
            let mut store_box: [Vec<Interval>; 3] = Default::default();
            for d in 0..3 {
                let (c, l, st) = boxes(domain[d], tile_size[d], grid[d], widths[d], info.extent[d]);
                cores[d] = c;
                loop_box[d] = l;
                store_box[d] = st;
            }
            let read_in_group = info.readers.iter().any(|&r| group_of(r) == g);
            let is_stored = stored(s);
            let buffer = read_in_group.then(|| {
                let shape = [0, 1, 2].map(|d| {
                    loop_box[d]
                        .iter()
                        .map(|b| (b[1] - b[0]) as usize)
                        .max()
                        .unwrap_or(0)
                });
                LocalBuffer {
                    ident: format!("b{s}"),
                    shape,
                    size: shape[0] * shape[1] * shape[2],
                    stride_y: shape[0],
                    stride_z: shape[0] * shape[1],
                    host: host_layout(
                        shape,
                        window(s),
                        stream_dim,
                        value_bytes,
                        buffer_page_offset(s),
                    ),
                    device: device
                        .buffers
                        .iter()
                        .find(|b| b.stencil == s)
                        .map(|b| b.extents)
                        .expect("a buffered stencil has a block buffer"),
                    registers: registers_of(s),
                }
            });
            if buffer.is_none() && !is_stored {
                return Err(CodegenError::Configuration(format!(
                    "stencil `{}` is neither stored nor read in its group",
                    info.name
                )));
            }
            if buffer.is_none() && loop_box != store_box {
                return Err(CodegenError::Configuration(format!(
                    "stencil `{}` has no in-group reader but non-zero evaluation widths",
                    info.name
                )));
            }
            // Does this step share the previous step's row loop? Not when either writes a
            // buffer and its global array (three loops per row), when their loop boxes or lags
            // differ, or when it reads a producer of that loop where the shared loops have not
            // computed it yet: only an earlier plane, an earlier row of this plane, or this
            // very element are there (`#pragma omp simd` rules out the element before).
            // Nor when the loop's arithmetic would pass `ROW_LOOP_OPERATIONS`.
            let split_store = |st: &StencilStep| st.buffer.is_some() && st.global.is_some();
            let operations = |s: usize| analysis.stencils[s].operations;
            let joins = share_rows
                && !(read_in_group && is_stored)
                && loops.last().is_some_and(|lp| {
                    let first = &steps[lp[0]];
                    lp.iter()
                        .map(|&n| operations(steps[n].stencil))
                        .sum::<u64>()
                        + operations(s)
                        <= ROW_LOOP_OPERATIONS
                        && first.loop_box == loop_box
                        && first.lag == lag(s)
                        && lp.iter().all(|&n| !split_store(&steps[n]))
                        && info.accesses.iter().all(|(a, off)| {
                            let in_loop = lp
                                .iter()
                                .any(|&n| analysis.stencils[steps[n].stencil].array == *a);
                            !in_loop
                                || off[2] < 0
                                || (off[2] == 0 && (off[1] < 0 || (off[1] == 0 && off[0] == 0)))
                        })
                });
            let same_loop: Vec<usize> = if joins {
                loops
                    .last()
                    .unwrap()
                    .iter()
                    .map(|&n| steps[n].stencil)
                    .collect()
            } else {
                Vec::new()
            };
            let access = |array: &str, off: [i32; 3]| -> String {
                match program.stencil_index(array) {
                    Some(p) if same_loop.contains(&p) && off == [0; 3] => format!("v_s{p}"),
                    Some(p) if group_of(p) == g => {
                        let b = steps
                            .iter()
                            .find(|st| st.stencil == p)
                            .and_then(|st| st.buffer.as_ref())
                            .expect("in-group producer has a buffer");
                        match b.registers {
                            // Plane k + dz of p, read at step t by this stencil (k = t + lag(s)),
                            // was computed at step t + lag(s) + dz - lag(p) and shifted down once
                            // per step since: its slot counts back from the newest, window - 1.
                            Some(r) => register_access(
                                b,
                                r.window as i64 - 1 - (lag(p) - lag(s) - off[2] as i64),
                            ),
                            None => buffer_access(b, off, stream_dim),
                        }
                    }
                    _ => access_global(off, &format!("g_{array}")),
                }
            };
            let st = &program.stencils[s];
            // Step locals are named per stencil: steps sharing a row loop share its scope.
            let step_local = |name: &str| format!("l{s}_{name}");
            let lets = st
                .lets
                .iter()
                .map(|l| LocalDef {
                    ident: step_local(&l.name),
                    code: c_expr(&l.expr, vt, &access, &step_local),
                })
                .collect();
            let code = c_expr(&st.expr, vt, &access, &step_local);
            let buffer_write = buffer.as_ref().map(|b| match b.registers {
                Some(r) => register_access(b, r.window as i64 - 1),
                None => buffer_access(b, [0; 3], stream_dim),
            });
            // The in-group producers this stencil reads: each one's register window, if any.
            let read_windows: Vec<Option<RegisterWindow>> = info
                .accesses
                .iter()
                .filter_map(|(a, _)| match analysis.arrays[*a].kind {
                    ArrayKind::Stencil(p) if group_of(p) == g => Some(registers_of(p)),
                    _ => None,
                })
                .collect();
            let own_window = buffer.as_ref().and_then(|b| b.registers);
            let register_rounds = own_window
                .or_else(|| read_windows.iter().flatten().next().copied())
                .map(|r| r.rounds);
            let barrier = (buffer.is_some() && own_window.is_none())
                || read_windows.iter().any(Option::is_none);
            steps.push(StencilStep {
                stencil: s,
                name: info.name.clone(),
                ident: format!("s{s}"),
                widths,
                lag: lag(s),
                buffer_write,
                value: format!("v_s{s}"),
                extent: info.extent,
                reads_buffers: !read_windows.is_empty(),
                barrier,
                rounds: register_rounds,
                loop_box,
                store_box: is_stored.then_some(store_box),
                global: is_stored.then(|| format!("g_{}", info.name)),
                buffer,
                lets,
                code,
            });
            if joins {
                loops.last_mut().unwrap().push(steps.len() - 1);
            } else {
                loops.push(vec![steps.len() - 1]);
            }
        }
        // Streaming along y walks a tile plane by plane: every stencil's z box must be the same
        // (it is: the stream dimension is y only when no access has a z offset).
        if streams
            && stream_dim == 1
            && steps
                .iter()
                .any(|st| st.loop_box[2] != steps[0].loop_box[2])
        {
            return Err(CodegenError::Configuration(format!(
                "group {g} streams along y, but its stencils' z loop boxes differ"
            )));
        }
        groups.push(GroupSchedule {
            index: g,
            stencils: range
                .clone()
                .map(|s| analysis.stencils[s].name.clone())
                .collect(),
            tile_counts: counts,
            tile_size,
            grid,
            tiles_total: grid.iter().product(),
            cores,
            steps,
            stream: streams.then_some(StreamPlan {
                dim: stream_dim,
                other: 3 - stream_dim,
            }),
            block: device.block,
            loops,
        });
    }

    let stencil_arrays = stencil_arrays_of(analysis);
    Ok(Schedule {
        program: program.name.clone(),
        kernel: kernel_name(&program.name),
        value_type: vt.c_name().to_string(),
        value_bytes: match vt {
            ValueType::Double => 8,
            ValueType::Float => 4,
        },
        domain,
        halo,
        alloc,
        origin_offset,
        lead,
        compulsory_bytes: absinthe_model::traffic::compulsory_bytes(analysis, vt.bytes()),
        index_type: index_type.to_string(),
        arrays,
        stencil_arrays,
        groups,
        reference,
        configuration: config.clone(),
    })
}

/// The naive reference of `program`: every stencil in program order over the box the
/// semantics evaluates it on, reading the reference arrays `r_<name>` and the inputs.
fn reference_stencils(program: &Program, analysis: &Analysis) -> Vec<ReferenceStencil> {
    let vt = program.value_type;
    let domain = analysis.domain;
    let local_ident = |name: &str| format!("l_{name}");
    program
        .stencils
        .iter()
        .enumerate()
        .map(|(s, st)| {
            let access = |array: &str, off: [i32; 3]| -> String {
                let origin = if program.stencil_index(array).is_some() {
                    format!("r_{array}")
                } else {
                    format!("g_{array}")
                };
                format!("{origin}[{}]", linear(off, &["SY".into(), "SZ".into()]))
            };
            let e = analysis.stencils[s].extent;
            ReferenceStencil {
                name: st.name.clone(),
                target: format!("r_{}", st.name),
                region: [0, 1, 2].map(|d| [-(e[d][0] as i64), (domain[d] + e[d][1]) as i64]),
                lets: st
                    .lets
                    .iter()
                    .map(|l| LocalDef {
                        ident: local_ident(&l.name),
                        code: c_expr(&l.expr, vt, &access, &local_ident),
                    })
                    .collect(),
                code: c_expr(&st.expr, vt, &access, &local_ident),
            }
        })
        .collect()
}

/// The names of every stencil's reference array, in array-id order.
fn stencil_arrays_of(analysis: &Analysis) -> Vec<String> {
    analysis
        .arrays
        .iter()
        .filter(|a| matches!(a.kind, ArrayKind::Stencil(_)))
        .map(|a| a.name.clone())
        .collect()
}

impl Schedule {
    /// The same kernel, verified against the reference of `original` instead of the program it
    /// was lowered from: for a configuration of an inlined program (`model::inline`), whose
    /// outputs must equal the original program's bit for bit. Both programs have the same
    /// domain, halo, type, inputs and outputs; the reference keeps every original stencil.
    /// The inputs keep the original program's array ids, which seed the harness's input
    /// values (`absinthe_value`), so both programs run on the same inputs as the interpreter
    /// gives the original.
    pub fn with_reference(mut self, original: &Program, analysis: &Analysis) -> Schedule {
        self.reference = reference_stencils(original, analysis);
        self.stencil_arrays = stencil_arrays_of(analysis);
        for a in &mut self.arrays {
            if let Some(id) = analysis.array_id(&a.name) {
                a.array_id = id;
            }
        }
        self
    }
}

/// [`lower`] in the original schedule: no group streams and every stencil has its own loop nest
/// (`GroupSchedule::loops` of one step each). What learn's runtime-tile kernels take.
pub fn lower_plain(
    program: &Program,
    analysis: &Analysis,
    config: &Configuration,
    cost: &Cost,
) -> Result<Schedule, CodegenError> {
    let config = Configuration {
        stream: Vec::new(),
        ..config.clone()
    };
    lower_with(
        program,
        analysis,
        &config,
        cost,
        Target::Plain,
        MAX_BLOCK_THREADS,
    )
}

/// [`lower`] for the CUDA kernels: a streamed group walks z (thread blocks own x-y tiles, its
/// buffers keep rolling windows of z planes), every stencil has its own loop nest, rows are
/// padded to 128 bytes, and indices are 32-bit where the arrays allow. Blocks have at most
/// `block_threads` threads (`ModelMachine::block_threads`, the number the model's
/// shared-memory test used): the block shape decides which buffers fit register windows.
pub fn lower_cuda(
    program: &Program,
    analysis: &Analysis,
    config: &Configuration,
    cost: &Cost,
    block_threads: usize,
) -> Result<Schedule, CodegenError> {
    lower_with(program, analysis, config, cost, Target::Cuda, block_threads)
}

/// Where buffer `b{stencil}` starts in its thread's page-aligned slice, in bytes: a multiple of
/// 64 that differs from buffer to buffer (steps of 9 lines, modulo a page). Threads' slices are
/// page-aligned; without a stagger every buffer would start at offset 0 of a page, and the same
/// row of two buffers of one group would alias in the L1 modulo 4 KiB (the harness staggers its
/// arrays for the same reason). On cosmo_hdiff4_256 (two buffers in separate groups) offsets of
/// 0-2240 bytes measured within 2% of each other (docs/decisions/0025-harness-memory-layout.md).
pub fn buffer_page_offset(stencil: usize) -> usize {
    (stencil * 9 % 64) * 64
}

/// Threads' tile buffers start this many bytes apart at least (a page). Packed at `size`, the
/// two threads' rolling buffers of cosmo_hdiff4 (1728 bytes each) shared a 128-byte line pair,
/// which the L2's adjacent-line prefetcher fetches together: the kernel ran 1.17-1.26 ms with
/// packed buffers against 1.01-1.03 ms with page-separated ones, in one run. A page-multiple
/// stride alone is not enough: from a 64-byte aligned base the two threads' buffers of
/// cosmo_hdiff4 at 256x256x60 still shared a page, and the L2 streamer, which prefetches within
/// a page, ran the kernel at 13.2 ms against 12.0 ms with a page-aligned arena
/// (docs/decisions/0025-harness-memory-layout.md).
pub const THREAD_STRIDE_BYTES: usize = 4096;

/// The OpenMP layout of a tile buffer of `shape` (see [`HostLayout`]): rows padded to 64 bytes,
/// planes padded off multiples of 4 KiB (which alias in the L1), the thread's slice a multiple
/// of 64 bytes, threads' slices whole pages apart ([`THREAD_STRIDE_BYTES`]), the buffer
/// `offset_bytes` into its slice.
fn host_layout(
    shape: [usize; 3],
    window: Option<usize>,
    stream_dim: usize,
    value_bytes: usize,
    offset_bytes: usize,
) -> HostLayout {
    let line = 64 / value_bytes;
    let mut ext = shape;
    if let Some(w) = window {
        ext[stream_dim] = w;
        // Streaming along y walks one plane at a time: the buffer holds one plane's window.
        if stream_dim == 1 {
            ext[2] = 1;
        }
    }
    let stride_y = ext[0].div_ceil(line) * line;
    let mut stride_z = stride_y * ext[1];
    if (stride_z * value_bytes).is_multiple_of(4096) {
        stride_z += line;
    }
    let size = (stride_z * ext[2]).div_ceil(line) * line;
    let page = THREAD_STRIDE_BYTES / value_bytes;
    let offset = offset_bytes / value_bytes;
    HostLayout {
        stride_y,
        stride_z,
        size,
        thread_stride: (offset + size).div_ceil(page) * page,
        offset,
        window,
    }
}

/// An element of a tile buffer at `off` from `(i, j, k)` as C, in the OpenMP layout: a streamed
/// buffer's coordinate along the stream dimension is a slot, `absinthe_slot(q, window)`.
fn buffer_access(b: &LocalBuffer, off: [i32; 3], stream_dim: usize) -> String {
    let id = &b.ident;
    match b.host.window {
        None => format!(
            "{id}[{id}_base + {}]",
            linear(off, &[format!("{id}_Y"), format!("{id}_Z")])
        ),
        Some(w) => {
            let i = shifted("i", off[0]);
            if stream_dim == 2 {
                let (j, k) = (shifted("j", off[1]), shifted("k", off[2]));
                format!("{id}[{id}_base + {i} + {j} * {id}_Y + absinthe_slot({k}, {w}) * {id}_Z]")
            } else {
                // One plane at a time (no access has a z offset when streaming along y).
                let j = shifted("j", off[1]);
                format!("{id}[{id}_base + {i} + absinthe_slot({j}, {w}) * {id}_Y]")
            }
        }
    }
}

/// A register window's value at `slot` for the thread's current round, as C (the macro of
/// `absinthe_cuda_emu.h`: a register array on the device, per-thread storage in the emulation).
fn register_access(b: &LocalBuffer, slot: i64) -> String {
    format!("ABS_REG({}, abs_r, {slot})", b.ident)
}

/// The index variable `v` shifted by `o`, as C: `v`, `(v + o)` or `(v - |o|)`.
fn shifted(v: &str, o: i32) -> String {
    match o {
        0 => v.to_string(),
        o if o > 0 => format!("({v} + {o})"),
        o => format!("({v} - {})", -o),
    }
}

/// `(i + ox) + (j + oy) * SY + (k + oz) * SZ` as C.
fn linear(off: [i32; 3], strides: &[String; 2]) -> String {
    format!(
        "{} + {} * {} + {} * {}",
        shifted("i", off[0]),
        shifted("j", off[1]),
        strides[0],
        shifted("k", off[2]),
        strides[1]
    )
}
