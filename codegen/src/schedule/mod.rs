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
//!
//! The lowering runs per group (`group`) and, inside a group, per stencil (`step`); the other
//! modules hold what those read: the allocation and parameters of the global arrays (`arrays`),
//! the tile buffers (`buffers`), array elements as C (`access`), when steps share a row loop
//! (`row_loops`) and the naive reference (`reference`). The types the templates read are in
//! `types`.

mod access;
mod arrays;
mod buffers;
mod group;
mod reference;
mod row_loops;
mod step;
mod types;

pub use buffers::{buffer_page_offset, THREAD_STRIDE_BYTES};
pub use row_loops::{
    chunk_cells, loop_x_boxes, row_chunks, whole_blocks, ROW_CHUNK, ROW_LOOP_OPERATIONS,
};
pub use types::{
    GlobalArray, GroupSchedule, HostLayout, LocalBuffer, LocalDef, Prefetch, ReferenceStencil,
    Role, ScalarParam, Schedule, StagedArray, StencilStep, StepRead, StreamPlan,
};

use std::ops::Range;

use absinthe_model::cost_model::boxes::BlockLimits;
use absinthe_model::cost_model::evaluate::{stream_shape, Configuration, Cost};
use absinthe_model::formats::machine::MAX_BLOCK_THREADS;
use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::program::{Program, ValueType};

use crate::CodegenError;
use arrays::{global_arrays, Allocation};
use group::GroupLowering;
use reference::{reference_stencils, stencil_arrays_of, stencil_dims_of, stencil_origins_of};

/// Lowers a configuration. `cost` must be `evaluate(analysis, _, config)` (any machine: the
/// evaluation widths do not depend on it). Any configuration of valid shape is accepted,
/// feasible or not.
pub fn lower(
    program: &Program,
    analysis: &Analysis,
    config: &Configuration,
    cost: &Cost,
) -> Result<Schedule, CodegenError> {
    lower_openmp(program, analysis, config, cost, Scope::default())
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
        UNSTAGED,
        Scope::default(),
    )
}

/// [`lower`] for the CUDA kernels: a streamed group walks z (thread blocks own x-y tiles, its
/// buffers keep rolling windows of z planes), every stencil has its own loop nest, rows are
/// padded to 128 bytes, and indices are 32-bit where the arrays allow. Blocks have at most
/// `limits.threads` threads (`ModelMachine::block_threads`, the number the model's
/// shared-memory test used): the block shape decides which buffers fit register windows.
/// Streamed groups stage the arrays they read at x-y offsets in shared memory while the
/// block's shared memory stays within `limits.stage_values` (`BlockLimits::staged`: the
/// model's capacity; `BlockLimits::of`, the default: 0, staging nothing).
pub fn lower_cuda(
    program: &Program,
    analysis: &Analysis,
    config: &Configuration,
    cost: &Cost,
    limits: BlockLimits,
) -> Result<Schedule, CodegenError> {
    lower_with(
        program,
        analysis,
        config,
        cost,
        Target::Cuda,
        limits,
        Scope::default(),
    )
}

/// [`lower`] for a box of the domain computed inside arrays allocated for a larger one,
/// `within` cells (a rank's sub-domain, `crate::ranks`): the analysis's domain is the box, the
/// arrays' strides are those of `within`'s allocation; the caller points the kernel's origin
/// pointers at the box's first cell.
pub fn lower_within(
    program: &Program,
    analysis: &Analysis,
    config: &Configuration,
    cost: &Cost,
    within: [usize; 3],
) -> Result<Schedule, CodegenError> {
    let scope = Scope {
        within: Some(within),
        only: None,
    };
    lower_openmp(program, analysis, config, cost, scope)
}

/// [`lower`]'s schedule of group `only` alone, for the cache model's per-(range, tiling)
/// tables: `groups` holds that one group's schedule (as [`lower`] makes it, its `index` still
/// `only`) at position 0, and `reference` is empty; the other fields (arrays, configuration)
/// are the whole program's. Not for rendering: the harness expects every group and the
/// reference. A group that does not exist is an error.
pub fn lower_group(
    program: &Program,
    analysis: &Analysis,
    config: &Configuration,
    cost: &Cost,
    only: usize,
) -> Result<Schedule, CodegenError> {
    let groups = config.group_ranges().len();
    if only >= groups {
        return Err(CodegenError::Configuration(format!(
            "group {only} does not exist: the configuration has {groups}"
        )));
    }
    let scope = Scope {
        within: None,
        only: Some(only),
    };
    lower_openmp(program, analysis, config, cost, scope)
}

/// The OpenMP kernel's lowering of what `scope` covers.
fn lower_openmp(
    program: &Program,
    analysis: &Analysis,
    config: &Configuration,
    cost: &Cost,
    scope: Scope,
) -> Result<Schedule, CodegenError> {
    lower_with(
        program,
        analysis,
        config,
        cost,
        Target::OpenMp,
        UNSTAGED,
        scope,
    )
}

/// What a lowering covers: the arrays of a larger allocation (`within`, [`lower_within`]), one
/// group alone (`only`, [`lower_group`]).
#[derive(Clone, Copy, Debug, Default)]
struct Scope {
    within: Option<[usize; 3]>,
    only: Option<usize>,
}

/// The block limits of the CPU targets (whose schedules carry a block plan nobody runs).
const UNSTAGED: BlockLimits = BlockLimits {
    threads: MAX_BLOCK_THREADS,
    stage_values: 0,
};

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

/// What the lowering of every group reads.
struct Lowering<'a> {
    program: &'a Program,
    analysis: &'a Analysis,
    config: &'a Configuration,
    cost: &'a Cost,
    target: Target,
    /// What a CUDA block may hold.
    limits: BlockLimits,
    /// Per stencil, whether it is stored globally: the model's store rule
    /// (`evaluate::group_shape`), an output or read by another group.
    stored: Vec<bool>,
    /// The dimension a streamed group walks: the CUDA kernels stream along z whatever the
    /// accesses (`evaluate::stream_shape_on`).
    stream_dim: usize,
    /// The 3-D arrays' allocated extents (a field's strides come from them).
    alloc: [usize; 3],
    /// Per stencil, whether the OpenMP kernel may store it non-temporally
    /// ([`memory_bound_groups`]; [`row_loops::nontemporal_steps`] says which of these do).
    memory_bound: Vec<bool>,
}

/// Per stencil, whether the model prices its group's bodies' memory above their compute: the
/// slow bodies of the group's stencils summed above their fast bodies (`StencilCost::slow_body`,
/// `fast_body`; a machine of zero parameters, as learn's training kernels are lowered on,
/// prices neither). The stencils of a group of one row loop share one loop body, whose memory
/// and arithmetic overlap across them: a stencil that reads only what another's loads brought
/// in is priced by its arithmetic alone, yet stores into a loop bound by memory. None on the
/// other targets.
fn memory_bound_groups(cost: &Cost, target: Target) -> Vec<bool> {
    cost.groups
        .iter()
        .flat_map(|g| {
            let slow: f64 = g.stencils.iter().map(|c| c.slow_body).sum();
            let fast: f64 = g.stencils.iter().map(|c| c.fast_body).sum();
            let bound = target == Target::OpenMp && slow > fast;
            g.stencils.iter().map(move |_| bound)
        })
        .collect()
}

fn lower_with(
    program: &Program,
    analysis: &Analysis,
    config: &Configuration,
    cost: &Cost,
    target: Target,
    limits: BlockLimits,
    scope: Scope,
) -> Result<Schedule, CodegenError> {
    let ranges = config.group_ranges();
    check_configuration(program, analysis, config, cost, &ranges)?;
    check_levels(analysis, config)?;
    let vt = program.value_type;
    let allocation = Allocation::of(analysis, scope.within, vt, target);
    let lowering = Lowering {
        program,
        analysis,
        config,
        cost,
        target,
        limits,
        stored: cost.stencils().map(|c| c.store).collect(),
        stream_dim: match target {
            Target::Cuda => 2,
            Target::OpenMp | Target::Plain => stream_shape(analysis).dim,
        },
        alloc: allocation.alloc,
        memory_bound: memory_bound_groups(cost, target),
    };
    let arrays = global_arrays(analysis, &lowering.stored, &allocation);
    let reference = match scope.only {
        Some(_) => Vec::new(),
        None => reference_stencils(program, analysis, allocation.alloc),
    };
    let groups = ranges
        .into_iter()
        .enumerate()
        .filter(|(g, _)| scope.only.is_none_or(|o| o == *g))
        .map(|(g, range)| GroupLowering::new(&lowering, g, range).schedule())
        .collect::<Result<Vec<_>, _>>()?;
    let scalars: Vec<ScalarParam> = program
        .scalars
        .iter()
        .enumerate()
        .map(|(index, name)| ScalarParam {
            name: name.clone(),
            ident: crate::cexpr::scalar_ident(name),
            index,
        })
        .collect();
    Ok(Schedule {
        program: program.name.clone(),
        kernel: kernel_name(&program.name),
        value_type: vt.c_name().to_string(),
        value_bytes: match vt {
            ValueType::Double => 8,
            ValueType::Float => 4,
        },
        domain: analysis.domain,
        halo: analysis.halo,
        alloc: allocation.alloc,
        origin_offset: allocation.origin_offset,
        lead: allocation.lead,
        compulsory_bytes: absinthe_model::cost_model::traffic::compulsory_bytes(
            analysis,
            vt.bytes(),
        ),
        index_type: allocation.index_type.to_string(),
        arrays,
        scalar_params: scalars
            .iter()
            .map(|p| format!(", const {} {}", vt.c_name(), p.ident))
            .collect(),
        scalar_args: scalars.iter().map(|p| format!(", {}", p.ident)).collect(),
        scalars,
        stencil_arrays: stencil_arrays_of(analysis),
        stencil_origins: stencil_origins_of(analysis, allocation.lead, allocation.alloc),
        stencil_dims: stencil_dims_of(analysis),
        groups,
        reference,
        configuration: config.clone(),
    })
}

/// Refuses what no target computes level by level: in a program with a sweep, a group split
/// along z or streamed (each tile walks whole columns, `Infeasibility::Sweep`); a 2-D stencil
/// grouped with others.
fn check_levels(analysis: &Analysis, config: &Configuration) -> Result<(), CodegenError> {
    let ranges = config.group_ranges();
    if let Some((g, r)) = ranges
        .iter()
        .enumerate()
        .find(|(_, r)| !analysis.may_group((*r).clone()))
    {
        return Err(CodegenError::Configuration(format!(
            "groups[{g}]: the group holds stencils {}..{} and a 2-D stencil: a 2-D stencil is a group of its own",
            r.start,
            r.end - 1
        )));
    }
    if analysis.has_sweeps() {
        if let Some(g) =
            (0..config.tiles.len()).find(|&g| config.tiles[g][2] > 1 || config.stream.contains(&g))
        {
            return Err(CodegenError::Configuration(format!(
                "groups[{g}].tiles: the program has a sweep, so every group computes whole columns (1 tile along z) and none streams; this one has {} tiles along z{}",
                config.tiles[g][2],
                if config.stream.contains(&g) { " and streams" } else { "" }
            )));
        }
    }
    Ok(())
}

/// Refuses a configuration of the wrong shape for the program, and a cost evaluated for
/// another configuration (its groups' ranges differ from `ranges`).
fn check_configuration(
    program: &Program,
    analysis: &Analysis,
    config: &Configuration,
    cost: &Cost,
    ranges: &[Range<usize>],
) -> Result<(), CodegenError> {
    config
        .check_shape(program.stencils.len(), analysis.domain)
        .map_err(CodegenError::Configuration)?;
    if cost.groups.len() != ranges.len()
        || cost.groups.iter().zip(ranges).any(|(g, r)| g.range != *r)
    {
        return Err(CodegenError::Configuration(
            "the cost does not belong to this configuration".into(),
        ));
    }
    check_tile_bounds(config, ranges)
}

/// The most loop-bound entries the generated code lists: every step of a group lists its box
/// in each tile along each dimension (`kernel_g0_s1_loop_x[]`), so a group of `s` stencils
/// with `n` tiles lists `s (n^x + n^y + n^z)` of them, about ten bytes of source and
/// sixteen of the generator's memory each. 2^22 is 40 MiB of source.
pub const MAX_TILE_BOUNDS: usize = 1 << 22;

/// Refuses a configuration whose loop-bound tables would exceed [`MAX_TILE_BOUNDS`], naming the
/// group whose tiles reach it.
fn check_tile_bounds(config: &Configuration, ranges: &[Range<usize>]) -> Result<(), CodegenError> {
    let mut total = 0usize;
    for (g, (t, r)) in config.tiles.iter().zip(ranges).enumerate() {
        let per_step = t.iter().fold(0usize, |a, &n| a.saturating_add(n));
        total = total.saturating_add(r.len().saturating_mul(per_step));
        if total > MAX_TILE_BOUNDS {
            return Err(CodegenError::Configuration(format!(
                "groups[{g}].tiles: {:?} tiles for {} stencil(s); the generated code lists every tile's loop bounds, and the groups up to this one would list {total}, more than {MAX_TILE_BOUNDS}: use fewer tiles",
                t,
                r.len()
            )));
        }
    }
    Ok(())
}

/// A C identifier for the kernel of a program. Every identifier the generated code derives from
/// it starts with it (`<kernel>_g0_s1_loop_x`, `<kernel>_launch`), and every identifier derived
/// from a name in the program starts with one of [`USER_PREFIXES`] or `l<digits>_` (a step's
/// `let` locals): a kernel name that starts with one of those gets `p_` in front, so that no
/// program, array, scalar or local name can make the two kinds meet (a program `a` with an
/// input `kernel_g0_s0_loop_x` would otherwise pass the input as the loop-bound table).
pub fn kernel_name(program: &str) -> String {
    let mut s: String = program
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    s.push_str("_kernel");
    if s.starts_with(|c: char| c == '_' || c.is_ascii_digit()) || has_user_prefix(&s) {
        s.insert_str(0, "p_");
    }
    s
}

/// The prefixes of the C identifiers made from a program's names: inputs' parameters (`a_`),
/// arrays' origins (`g_`), scalars (`sc_`), the reference's `let` locals (`l_`) and arrays
/// (`ra_`, `r_`).
pub const USER_PREFIXES: [&str; 6] = ["a_", "g_", "sc_", "l_", "ra_", "r_"];

/// Whether `ident` starts with one of [`USER_PREFIXES`] or with `l<digits>_`.
fn has_user_prefix(ident: &str) -> bool {
    let digits = ident.strip_prefix('l').map_or(0, |rest| {
        rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len()
    });
    let step_local = digits > 0 && ident[1 + digits..].starts_with('_');
    step_local || USER_PREFIXES.iter().any(|p| ident.starts_with(p))
}
