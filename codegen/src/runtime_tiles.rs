//! One fused group whose tile counts are kernel arguments (`absinthe learn`): a single build
//! serves every tile shape. The kernel is laid out from an ordinary [`Schedule`] of a
//! one-group configuration (its expressions, evaluation widths, extents and buffers do not
//! depend on the tile counts); the loop boxes the static path precomputes per tile are
//! computed in C++ from `n^x, n^y, n^z` with the same rule. The generated program verifies
//! every shape bit for bit against the naive reference (the shared harness's) before timing it.
//!
//! Run the built executable with `runs evict|flush_bytes verify|verified nx ny nz [nx ny nz ...]`
//! ([`arguments`]); it prints one `ABSINTHE_TILES {"tiles":[..],"verified":..,"threads":..,
//! "times":[..]}` line per shape, parsed by [`parse_tile_results`]. `verified` skips the
//! reference and the comparison, for shapes an earlier run of the same executable verified.

use minijinja::context;
use serde::Deserialize;

use crate::render::{Flush, HarnessOptions, TEMPLATES};
use crate::schedule::Schedule;
use crate::CodegenError;

/// The runtime-tiled program's template.
const RUNTIME_TEMPLATE: &str = include_str!("../templates/runtime_tiles.cpp.j2");

/// The measurements of one tile shape.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct TileResult {
    /// The tile counts asked for (the kernel clamps each to `[1, D]`).
    pub tiles: [usize; 3],
    /// Whether the shape's outputs equal the reference's; `None` when the run was told the
    /// shapes were verified before ([`arguments`]' `verify` false).
    pub verified: Option<bool>,
    pub threads: usize,
    /// Seconds of every timed run, in order.
    pub times: Vec<f64>,
}

/// The source (`<program>_runtime.cpp`, self-contained) of the runtime-tiled kernel and its
/// driver for `schedule`, which must have exactly one group.
pub fn render(schedule: &Schedule) -> Result<Vec<(String, String)>, CodegenError> {
    if schedule.groups.len() != 1 {
        return Err(CodegenError::Configuration(format!(
            "runtime tile counts need a single fused group, found {} groups",
            schedule.groups.len()
        )));
    }
    if let Some(a) = schedule
        .arrays
        .iter()
        .find(|a| a.region.is_some() && a.dims != "ijk")
    {
        return Err(CodegenError::Configuration(format!(
            "runtime tile counts do not compute 2-D stencils (`{}`)",
            a.name
        )));
    }
    let g = &schedule.groups[0];
    if g.steps
        .iter()
        .any(|s| !s.intervals.is_empty() || s.computation != "parallel")
    {
        return Err(CodegenError::Configuration(
            "runtime tile counts need stencils computed on every level at once (no sweep, no intervals)".into(),
        ));
    }
    if g.stream.is_some() || g.loops.iter().any(|l| l.len() > 1) {
        return Err(CodegenError::Configuration(
            "runtime tile counts need the original schedule (lower it with `lower_plain`)".into(),
        ));
    }
    let mut env = crate::render::template_environment();
    env.set_loader(|name| {
        if name == "runtime_tiles.cpp.j2" {
            return Ok(Some(RUNTIME_TEMPLATE.to_string()));
        }
        Ok(TEMPLATES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| t.to_string()))
    });
    let h = HarnessOptions {
        runs: 1,
        flush: Flush::NONE,
        label: schedule.program.clone(),
        ..HarnessOptions::default()
    };
    let text = env
        .get_template("runtime_tiles.cpp.j2")
        .and_then(|t| t.render(context! { s => schedule, h => h }))
        .map_err(|e| CodegenError::Template(format!("runtime_tiles.cpp.j2: {e:#}")))?;
    let stem = crate::render::file_stem(&schedule.program);
    Ok(vec![(format!("{stem}_runtime.cpp"), text)])
}

/// The arguments that time `shapes` (tile counts) `runs` times each, each first verified
/// against the reference with `verify` (without it, an earlier run must have verified them).
pub fn arguments(runs: usize, flush: Flush, verify: bool, shapes: &[[usize; 3]]) -> Vec<String> {
    let check = if verify { "verify" } else { "verified" };
    let mut args = vec![runs.to_string(), flush.arg(), check.to_string()];
    for s in shapes {
        args.extend(s.iter().map(|n| n.to_string()));
    }
    args
}

/// Every `ABSINTHE_TILES` line of the program's standard output.
pub fn parse_tile_results(stdout: &str) -> Result<Vec<TileResult>, CodegenError> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("ABSINTHE_TILES "))
        .map(|j| {
            serde_json::from_str(j).map_err(|e| CodegenError::Run {
                program: "runtime-tiled kernel".into(),
                message: format!("bad result line `{j}`: {e}"),
            })
        })
        .collect()
}
