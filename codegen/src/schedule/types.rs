//! The schedule's types: what every target reads to emit code for one (program,
//! configuration). [`super::lower`] fills them; the templates only lay them out.

use absinthe_model::cost_model::boxes::{Interval, RegisterWindow};
use absinthe_model::cost_model::evaluate::Configuration;
use absinthe_model::language::analysis::Extent;
use serde::Serialize;

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
    /// Its dimensions as index names: `ijk`, or a field's own (`k`, `ij`).
    pub dims: String,
    /// Allocated values per dimension: the schedule's `alloc`, 1 along a field's absent ones.
    pub alloc: [usize; 3],
    /// The domain's first cell, `lead` cells in: the schedule's, 0 along absent dimensions.
    pub lead: [usize; 3],
    /// The linear index of element (0, 0, 0).
    pub origin_offset: usize,
    /// Values allocated: the product of `alloc`.
    pub cells: usize,
    /// Values per dimension in an `ABSINTHE_LOAD_INPUTS` file: the domain plus twice the halo
    /// along the array's dimensions, 1 along the others.
    pub file_extent: [usize; 3],
    /// Where a file's first value goes: `lead - halo` along the array's dimensions, else 0.
    pub file_shift: [usize; 3],
    /// The index of element (i, j, k) as C over its own dimensions, `(i + 2) + (j + 2) * 68`
    /// (for the header's documentation).
    pub layout: String,
}

/// A run-time scalar of the program: a parameter of the generated function, of the program's
/// type.
#[derive(Clone, Debug, Serialize)]
pub struct ScalarParam {
    pub name: String,
    /// The parameter, `sc_<name>` ([`crate::cexpr::scalar_ident`]).
    pub ident: String,
    /// Index among the program's scalars: the harness's default value is
    /// `absinthe_value(2^32 + index, 0, 0, 0)`
    /// (`absinthe_model::language::interp::scalar_default`).
    pub index: usize,
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
    /// pages ([`THREAD_STRIDE_BYTES`](super::THREAD_STRIDE_BYTES)). The arena is page-aligned,
    /// so no two threads' buffers share a cache line, a 128-byte line pair or a page.
    pub thread_stride: usize,
    /// Elements from the start of the thread's (page-aligned) slice to the buffer: buffers
    /// start at different offsets within their pages
    /// ([`buffer_page_offset`](super::buffer_page_offset)), so that the rows of two buffers of
    /// one group do not alias modulo 4 KiB.
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

/// One interval of a stencil with `intervals:`, as C: the levels below `hi` (and at or above
/// the previous interval's) compute `code` after `lets`.
#[derive(Clone, Debug, Serialize)]
pub struct IntervalCode {
    /// The interval's first level above it (levels `[lo, hi)`, the intervals in order).
    pub hi: i64,
    /// Its branch of the chain the intervals make: `if (k < hi) `, `else if (k < hi) `, and
    /// `else ` for the last.
    pub branch: String,
    pub lets: Vec<LocalDef>,
    pub code: String,
}

/// A stencil's body as C: one on every level (`lets`, `code`), or by intervals (`intervals`
/// non-empty; then `lets` is empty and `code` too).
#[derive(Clone, Debug, Default, Serialize)]
pub struct BodyCode {
    pub lets: Vec<LocalDef>,
    pub code: String,
    pub intervals: Vec<IntervalCode>,
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
    /// In a group streamed along z on the CPU: how many rows ahead of the row step this stencil
    /// runs within each plane step (`GroupLowering::row_lags`); 0 otherwise.
    pub row_lag: i64,
    /// The analysis extent: the box the reference evaluates, beyond the domain.
    pub extent: Extent,
    /// Loop box per dimension per tile index along that dimension.
    pub loop_box: [Vec<Interval>; 3],
    /// Store box (the tile core, plus the reference extent at the domain boundary) per
    /// dimension per tile index; `None` when the stencil is not stored globally.
    pub store_box: Option<[Vec<Interval>; 3]>,
    /// The global array written (origin pointer name) when stored.
    pub global: Option<String>,
    /// Its element at `(i, j, k)` as C when stored: `g_<name>[i + j * SY + k * SZ]`, a 2-D
    /// stencil's without `k`.
    pub store: Option<String>,
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
    /// With `intervals:`, the body of each interval (then `lets` and `code` are empty).
    pub intervals: Vec<IntervalCode>,
    /// `parallel`, `forward` or `backward`: a backward sweep's loop walks k downwards.
    pub computation: String,
    /// Whether the OpenMP kernel stores this step's values with non-temporal stores
    /// ([`super::row_loops::nontemporal_steps`]).
    pub nontemporal: bool,
    /// Every memory read of the step's `let`s and expression at `(i, j, k)`, in source order
    /// (both arms of a conditional included): what the trace build records before the step's
    /// value and the cache model replays. Reads of a value variable or a register window are
    /// not memory reads and are not listed.
    pub reads: Vec<StepRead>,
}

/// One memory read of a step at `(i, j, k)`.
#[derive(Clone, Debug, Serialize)]
pub struct StepRead {
    /// The element as a C lvalue (what the trace build takes the address of).
    pub c: String,
    /// The program array read: an input's or a stencil's name.
    pub array: String,
    /// Whether the read goes to the producer's tile buffer, or on the CUDA target to a staged
    /// copy ([`StagedArray`]); else to the global array.
    pub buffer: bool,
    /// The offset from `(i, j, k)`.
    pub offset: [i32; 3],
}

/// A line a row loop prefetches before each block of its cells: an array's element in the next
/// row or plane along the stream at the block's first cell `ib`, as a C address, to read or to
/// write.
#[derive(Clone, Debug, Serialize)]
pub struct Prefetch {
    pub address: String,
    pub write: bool,
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
    /// one loop over `i` (`row_loops::joins_row_loop` says when they may). A reader in the same
    /// loop reads a producer at offset zero from the producer's value variable.
    pub loops: Vec<Vec<usize>>,
    /// Per row loop, the levels at which one of its steps' `intervals:` changes, ascending
    /// (the last interval's end left out); empty when none has intervals. The kernel runs such
    /// a loop once per band of levels between them, each under its own `k <` test, so the
    /// interval chain inside the loop is decided outside it: the compiler folds it away
    /// instead of computing every interval's body for every cell and blending the results.
    pub bands: Vec<Vec<i64>>,
    /// In a streamed group on the CPU, the cells of a chunk ([`super::row_loops::ROW_CHUNK`]):
    /// each row step (of a stream step along y, or of a plane step along z) runs its row loops
    /// chunk by chunk across the row ([`super::row_loops::chunk_cells`]). `None` for other
    /// groups.
    pub row_chunk: Option<i64>,
    /// In a streamed group on the CPU, per row loop, the lines it prefetches from the next line
    /// along the stream ([`super::row_loops::stream_prefetches`]); empty lists otherwise.
    pub prefetch: Vec<Vec<Prefetch>>,
    /// The cells one prefetched line holds: a row loop with prefetches runs its cells in
    /// blocks of this many, each block after its prefetches.
    pub prefetch_cells: usize,
    /// Per row loop, whether its blocks are all whole ([`super::row_loops::whole_blocks`]): each
    /// runs exactly `prefetch_cells` cells, the last of a chunk moved back to end with it.
    pub whole_blocks: Vec<bool>,
    /// Per row loop where one of its steps stores non-temporally, the first such step's store
    /// (`StencilStep::store`): the loop runs its cells up to that store's first line boundary
    /// one by one, then line by line (`prefetch_cells` each), each line's values of those steps
    /// computed into a local line and streamed out, then the cells left one by one.
    pub nontemporal: Vec<Option<String>>,
    /// On the CUDA target, the arrays this streamed group stages in shared memory
    /// (`boxes::block_plan`); empty on the other targets.
    pub staged: Vec<StagedArray>,
}

/// An array read from global memory that a streamed group's CUDA kernel stages in shared
/// memory (`boxes::StagedInput`): at stream step `t`, before its stencils run, the block copies
/// the planes `t + reach[0] ..= t + reach[1]` it has not yet copied, over the tile's read box,
/// into a rolling window of `extents[2]` planes (plane `q` in slot `q mod window`); the
/// stencils then read the copy.
#[derive(Clone, Debug, Serialize)]
pub struct StagedArray {
    /// The copy's variable: `in<array id>`.
    pub ident: String,
    /// The program array: an input's or an earlier group's stencil's name.
    pub array: String,
    /// Its origin pointer: `g_<name>`.
    pub origin: String,
    /// `[x, y, window]`: the longest read box along x and y, and the planes kept.
    pub extents: [usize; 3],
    pub reach: [i64; 2],
    /// Per dimension per tile index: the cells the group's stencils read in that tile
    /// (`boxes::read_hull`); along z, the planes.
    pub read_box: [Vec<Interval>; 3],
}

/// The naive reference: every stencil in program order over its reference box.
#[derive(Clone, Debug, Serialize)]
pub struct ReferenceStencil {
    pub name: String,
    /// The reference array's origin pointer name: `r_<name>`.
    pub target: String,
    /// Its element at `(i, j, k)` as C.
    pub store: String,
    /// The box evaluated (a 2-D stencil's: its level along k).
    pub region: [Interval; 3],
    pub lets: Vec<LocalDef>,
    pub code: String,
    /// With `intervals:`, the body of each interval (then `lets` and `code` are empty).
    pub intervals: Vec<IntervalCode>,
    /// `parallel`, `forward` or `backward`: a sweep's reference walks k in order.
    pub computation: String,
    /// Every memory read at `(i, j, k)` in source order (as [`StencilStep::reads`]): inputs
    /// and the reference arrays of the stencils read.
    pub reads: Vec<StepRead>,
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
    /// each output written once over its reference box (`absinthe_model::cost_model::traffic::compulsory_bytes`).
    pub compulsory_bytes: u64,
    /// The C type of indices in the kernels: `int` on the CUDA target when every index fits
    /// (32-bit arithmetic), else `long`.
    pub index_type: String,
    /// Kernel parameters in order: inputs, outputs, temporaries.
    pub arrays: Vec<GlobalArray>,
    /// The run-time scalars, parameters after the arrays in this order.
    pub scalars: Vec<ScalarParam>,
    /// Their declarations as they follow the arrays in a parameter list,
    /// `, const double sc_dt, const double sc_kdiff` (empty without scalars).
    pub scalar_params: String,
    /// Their names as they follow the arrays in a call, `, sc_dt, sc_kdiff`.
    pub scalar_args: String,
    /// All stencils' reference arrays and the inputs, for the harness.
    pub stencil_arrays: Vec<String>,
    /// Each reference array's linear index of element (0, 0, 0), as `stencil_arrays`.
    pub stencil_origins: Vec<usize>,
    /// Each reference array's dimensions, as `stencil_arrays`: `ijk`, or `ij` for a 2-D stencil.
    pub stencil_dims: Vec<String>,
    pub groups: Vec<GroupSchedule>,
    pub reference: Vec<ReferenceStencil>,
    /// The configuration lowered (group index per stencil, tile counts per group).
    pub configuration: Configuration,
}
