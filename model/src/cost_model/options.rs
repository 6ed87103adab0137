//! The options every search takes: the restrictions of the search space (fixed groups, tile
//! count bounds, no streaming), which the DP, the range table and both MILPs honour alike, and
//! the encoding a MILP search writes.

use crate::cost_model::evaluate::{stream_shape_on, Configuration, StreamShape};
use crate::formats::machine::ModelMachine;
use crate::language::analysis::Analysis;
use crate::language::constraints::check_group_indices;
use crate::language::program::{Program, DIMS};

/// How the optimisation problem is written as a MILP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// One binary per range that may form a group, with its best tiling (`crate::encodings::ranges`): an
    /// integral LP relaxation; the default.
    #[default]
    Ranges,
    /// The ABSINTHE encoding (`milp::milp`): group-index constraints and binary-digit products of
    /// tile counts, the formulation of the literature.
    Digits,
}

impl Encoding {
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Ranges => "ranges",
            Encoding::Digits => "digits",
        }
    }

    /// Parses `ranges` or `digits`.
    pub fn parse(s: &str) -> Result<Encoding, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ranges" => Ok(Encoding::Ranges),
            "digits" => Ok(Encoding::Digits),
            other => Err(format!(
                "unknown encoding `{other}`; the encodings are ranges (default) and digits (ABSINTHE)"
            )),
        }
    }
}

/// The restrictions of the search space, which the DP, the range table, the inline search and
/// both MILPs honour alike.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SearchSpace {
    /// Fixed group index per stencil.
    pub fixed_groups: Option<Vec<usize>>,
    /// Lower bounds on tile counts per dimension.
    pub tiles_min: Option<[usize; 3]>,
    /// Upper bounds on tile counts per dimension.
    pub tiles_max: Option<[usize; 3]>,
    /// Keep to the original schedule space: no group streams.
    pub no_stream: bool,
    /// When the range tables must stop (`solve --time-limit`): a table cut short is marked
    /// [`timed_out`](crate::cost_model::search::RangeTable::timed_out) and its users refuse it
    /// rather than answer from part of the space.
    pub deadline: Option<std::time::Instant>,
}

/// What a command line narrows a program's search space with (`--fix-groups`, `--tiles-min`,
/// `--tiles-max`, `--no-stream`), as given.
#[derive(Clone, Copy, Debug, Default)]
pub struct SpaceFlags<'a> {
    pub fix_groups: Option<&'a [usize]>,
    pub tiles_min: Option<&'a [usize]>,
    pub tiles_max: Option<&'a [usize]>,
    pub no_stream: bool,
}

impl SearchSpace {
    /// The space of `program`: its `constraints:`, with `flags` taking the place of the groups
    /// and tile bounds they give. The messages name the flags.
    pub fn of_program(program: &Program, flags: SpaceFlags) -> Result<SearchSpace, String> {
        let mut space = SearchSpace {
            fixed_groups: program.constraints.groups.clone(),
            tiles_min: program.constraints.tiles_min,
            tiles_max: program.constraints.tiles_max,
            no_stream: flags.no_stream,
            ..SearchSpace::default()
        };
        if let Some(g) = flags.fix_groups {
            check_group_indices(g, program.stencils.len())
                .map_err(|e| format!("--fix-groups: {e}"))?;
            space.fixed_groups = Some(g.to_vec());
        }
        let bounds = (flags.tiles_min, flags.tiles_max);
        space.bound_tiles(bounds, ["--tiles-min", "--tiles-max"], program.domain)?;
        if program.whole_columns() && space.tiles_min.is_some_and(|t| t[2] > 1) {
            return Err("--tiles-min (or the program's constraints.tiles_min) asks for more than one tile along k, but the program computes whole columns (a sweep or a 2-D stencil): one tile along k".into());
        }
        Ok(space)
    }

    /// Restricts the space to tile counts between `tiles_min` and `tiles_max` per dimension of
    /// `domain` (either absent: kept as it is), each given as three counts; `flags` names them
    /// in the messages.
    pub fn bound_tiles(
        &mut self,
        (tiles_min, tiles_max): (Option<&[usize]>, Option<&[usize]>),
        flags: [&str; 2],
        domain: [usize; 3],
    ) -> Result<(), String> {
        if let Some(t) = tiles_min {
            self.tiles_min = Some(tile_counts(t, flags[0], domain)?);
        }
        if let Some(t) = tiles_max {
            self.tiles_max = Some(tile_counts(t, flags[1], domain)?);
        }
        if let (Some(lo), Some(hi)) = (self.tiles_min, self.tiles_max) {
            for d in 0..3 {
                if lo[d] > hi[d] {
                    return Err(format!(
                        "the tile count bounds along {} are empty: minimum {} > maximum {}",
                        DIMS[d], lo[d], hi[d]
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Three tile counts (i, j, k), each between 1 and the domain's extent; `flag` names them.
fn tile_counts(v: &[usize], flag: &str, domain: [usize; 3]) -> Result<[usize; 3], String> {
    let &[x, y, z] = v else {
        return Err(format!(
            "{flag} takes three numbers (i,j,k), found {}",
            v.len()
        ));
    };
    for (d, n) in [x, y, z].into_iter().enumerate() {
        if n < 1 || n > domain[d] {
            return Err(format!(
                "{flag}: the tile count along {} must be between 1 and {}, found {n}",
                DIMS[d], domain[d]
            ));
        }
    }
    Ok([x, y, z])
}

/// How a MILP search is written and started: the space it searches, the encoding, and the warm
/// start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MilpOptions {
    pub space: SearchSpace,
    /// The MILP encoding (the search space is the same for both).
    pub encoding: Encoding,
    /// Start the digits MILP from the exact DP's configuration (`solvers::optimize`).
    pub warm_start: bool,
}

impl SearchSpace {
    /// Tile-count range per dimension after clipping to 1..=D.
    pub fn tile_range(&self, domain: [usize; 3]) -> [(usize, usize); 3] {
        [0, 1, 2].map(|d| {
            let lo = self.tiles_min.map_or(1, |t| t[d]).clamp(1, domain[d]);
            let hi = self
                .tiles_max
                .map_or(domain[d], |t| t[d])
                .clamp(1, domain[d]);
            (lo, hi)
        })
    }

    /// [`SearchSpace::tile_range`] for `analysis`'s program: in a program with a sweep, one
    /// tile along z (its levels are computed in order, so each tile walks whole columns). The
    /// encodings bound their tile variables with it; the DP and the range table meet the same
    /// rule as a feasibility test (`Infeasibility::Sweep`).
    pub fn tile_range_of(&self, analysis: &Analysis) -> [(usize, usize); 3] {
        let mut range = self.tile_range(analysis.domain);
        if analysis.has_sweeps() {
            range[2] = (1, 1);
        }
        range
    }

    /// The program's stream shape, or None when streaming is off (asked for, or a program with
    /// a sweep).
    pub fn stream_shape(&self, analysis: &Analysis, machine: &ModelMachine) -> Option<StreamShape> {
        (!self.no_stream && machine.streams && !analysis.has_sweeps())
            .then(|| stream_shape_on(analysis, machine))
    }

    /// Whether a configuration of `analysis`'s program respects these restrictions (and, in a
    /// program with a sweep, computes whole columns unstreamed).
    pub fn admits(&self, config: &Configuration, analysis: &Analysis) -> bool {
        self.refusal(config, analysis).is_none()
    }

    /// Which of these restrictions a configuration breaks first, in words; None when it
    /// respects them all.
    pub fn refusal(&self, config: &Configuration, analysis: &Analysis) -> Option<String> {
        if (self.no_stream || analysis.has_sweeps()) && !config.stream.is_empty() {
            return Some(match analysis.has_sweeps() {
                true => "groups stream, but the program has a sweep: no group streams".into(),
                false => "groups stream, but streaming is off (--no-stream)".into(),
            });
        }
        if let Some(g) = self.fixed_groups.as_ref().filter(|g| **g != config.groups) {
            return Some(format!(
                "the groups {:?} are not the fixed groups {g:?} (constraints.groups or --fix-groups)",
                config.groups
            ));
        }
        if let Some(r) = config
            .group_ranges()
            .into_iter()
            .find(|r| !analysis.may_group(r.clone()))
        {
            return Some(format!(
                "stencils {}..{} are grouped with a 2-D stencil, which is a group of its own",
                r.start,
                r.end - 1
            ));
        }
        let range = self.tile_range_of(analysis);
        let (g, d) = (0..config.tiles.len())
            .flat_map(|g| (0..3).map(move |d| (g, d)))
            .find(|&(g, d)| !(range[d].0..=range[d].1).contains(&config.tiles[g][d]))?;
        Some(format!(
            "group {g} has {} tiles along {}, outside {}..={}{}",
            config.tiles[g][d],
            DIMS[d],
            range[d].0,
            range[d].1,
            match d == 2 && analysis.has_sweeps() {
                true => " (the program has a sweep: whole columns)",
                false => " (constraints.tiles_min/tiles_max or --tiles-min/--tiles-max)",
            }
        ))
    }
}
