//! Solution files (docs/MODEL.md, "Solution file"): what `solve` writes and `codegen`/`verify`
//! read.

use std::path::Path;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::cost_model::evaluate::{Configuration, Cost};
use crate::cost_model::ranks::Grid;
use crate::encodings::lp::MilpSize;
use crate::formats::diagnostic::{Diagnostic, FileError};
use crate::formats::model_kind::ModelKind;
use crate::formats::yaml;
use crate::language::analysis::Analysis;
use crate::language::inline::{indices_of, inline_program, InlineError};
use crate::language::program::Program;
use crate::language::program::DIMS;

/// How the configuration was found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolverReport {
    pub name: String,
    pub status: String,
    /// Relative gap between the incumbent and the best bound.
    pub gap: f64,
    /// Wall time of the solve.
    pub seconds: f64,
    /// The solver's own objective, in seconds (beside `estimate_seconds`, which is `evaluate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective_seconds: Option<f64>,
    /// Best proven lower bound, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_seconds: Option<f64>,
}

/// One fused group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupReport {
    pub stencils: Vec<String>,
    /// Tile counts (n^x, n^y, n^z).
    pub tiles: [usize; 3],
    /// `ceil(D / n)` per dimension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tile_size: Option<[usize; 3]>,
    /// Whether the group streams along the program's stream dimension (absent: no).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    /// Whether the group keeps more row streams in flight than the machine's limit and pays
    /// its crowding charge (`evaluate::crowded`; absent: no). A report, not read back.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub crowded: bool,
}

/// The model's terms for one stencil.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StencilReport {
    /// `[[e^{i-}, e^{i+}], [e^{j-}, e^{j+}], [e^{k-}, e^{k+}]]`.
    pub extent: [[usize; 2]; 3],
    /// `max(fast, slow)` peel seconds.
    pub peel: f64,
    /// `max(fast, slow)` body seconds.
    pub body: f64,
    pub fast_peel: f64,
    pub fast_body: f64,
    pub slow_peel: f64,
    pub slow_body: f64,
    pub loads: Vec<String>,
    pub store: bool,
}

/// How `absinthe tune` chose the configuration: the model's best few, each built and timed,
/// then sweeps of the fastest one's tile counts, measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuneReport {
    /// Configurations built and timed (the model's best, then those of the sweeps).
    pub candidates: usize,
    /// How many of the candidates the measured sweeps (`tune --refine`) added.
    #[serde(default)]
    pub refined: usize,
    /// The model's rank of this configuration among the candidates, by predicted time (1: the
    /// model's own optimum).
    pub model_rank: usize,
    /// Its measured median, in seconds.
    pub measured_seconds: f64,
    /// The measured median of the model's optimum (its best configuration, timed first), in
    /// seconds.
    pub model_optimum_measured_seconds: Option<f64>,
}

/// A solution file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Solution {
    pub program: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// The form of the model that priced it (absent in older files: `linear`).
    #[serde(default)]
    pub model: ModelKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub solver: Option<SolverReport>,
    /// `evaluate` of the configuration, in seconds; with `ranks`, one rank's time per run,
    /// its halo exchanges included (what `solve --ranks` minimised).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate_seconds: Option<f64>,
    /// The grid of MPI ranks `[PX, PY]` the configuration was priced over (`solve --ranks`);
    /// absent: one process. Only `codegen --ranks` with the same grid takes such a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<[usize; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub milp: Option<MilpSize>,
    /// Present when `tune` chose this configuration by measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tuned: Option<TuneReport>,
    /// Stencils computed where they are read instead of stored (`model::inline`), in program
    /// order; `groups` and `stencils` describe the program with them inlined. Absent: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inline: Vec<String>,
    pub groups: Vec<GroupReport>,
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub stencils: IndexMap<String, StencilReport>,
}

impl Solution {
    /// The report of a configuration and its cost under the model `model`.
    pub fn describe(
        program_name: &str,
        (analysis, model): (&Analysis, ModelKind),
        config: &Configuration,
        cost: &Cost,
    ) -> Solution {
        let groups = config
            .group_ranges()
            .into_iter()
            .enumerate()
            .map(|(g, r)| GroupReport {
                stencils: r.map(|s| analysis.stencils[s].name.clone()).collect(),
                tiles: config.tiles[g],
                tile_size: Some(config.tile_size(g, analysis.domain)),
                stream: config.streams(g),
                crowded: cost.groups.get(g).is_some_and(|c| c.crowded),
            })
            .collect();
        let stencils = cost
            .stencils()
            .enumerate()
            .map(|(i, c)| {
                (
                    analysis.stencils[i].name.clone(),
                    StencilReport {
                        extent: c.widths,
                        peel: c.peel,
                        body: c.body,
                        fast_peel: c.fast_peel,
                        fast_body: c.fast_body,
                        slow_peel: c.slow_peel,
                        slow_body: c.slow_body,
                        loads: c
                            .loads
                            .iter()
                            .map(|&a| analysis.arrays[a].name.clone())
                            .collect(),
                        store: c.store,
                    },
                )
            })
            .collect();
        Solution {
            program: program_name.to_string(),
            machine: None,
            model,
            solver: None,
            estimate_seconds: Some(cost.total),
            ranks: None,
            milp: None,
            tuned: None,
            inline: Vec::new(),
            groups,
            stencils,
        }
    }

    /// The program `groups` describes: `program` with the stencils of `inline` inlined
    /// (`model::inline`). A solution for another program (its `program:` key) is refused; errors
    /// name the key at fault.
    pub fn program_for(&self, program: &Program) -> Result<Program, Vec<Diagnostic>> {
        self.program_on_ranks(program, None)
    }

    /// [`Solution::program_for`] for a command that decomposes over `ranks` (None: one
    /// process). A solution priced over a grid of ranks is taken only on that grid: its
    /// estimate and its tiles are one rank's.
    pub fn program_on_ranks(
        &self,
        program: &Program,
        ranks: Option<Grid>,
    ) -> Result<Program, Vec<Diagnostic>> {
        let ranks = ranks.map(|g| [g.px, g.py]);
        if let Some([px, py]) = self.ranks.filter(|r| Some(*r) != ranks) {
            let here = match ranks {
                Some([x, y]) => format!("this command decomposes over {x}x{y}"),
                None => "this command runs one process".to_string(),
            };
            return Err(vec![Diagnostic::new(
                "ranks",
                format!(
                    "the solution was priced over {px}x{py} ranks (`solve --ranks {px},{py}`), and {here}: give `codegen --ranks {px},{py}`, or solve without --ranks"
                ),
            )]);
        }
        if self.program != program.name {
            return Err(vec![Diagnostic::new(
                "program",
                format!(
                    "the solution is for the program `{}`, not `{}`",
                    self.program, program.name
                ),
            )]);
        }
        if self.inline.is_empty() {
            return Ok(program.clone());
        }
        // The entry at fault: a name's first listing, or for one listed twice its repeat.
        let at = |name: &str, twice: bool| {
            let mut listed = self.inline.iter().enumerate().filter(|(_, n)| *n == name);
            let k = listed.nth(usize::from(twice)).map_or(0, |(k, _)| k);
            format!("inline[{k}]")
        };
        let indices = indices_of(program, &self.inline).map_err(|e| {
            let name = match &e {
                InlineError::Unknown(n)
                | InlineError::Output(n)
                | InlineError::Twice(n)
                | InlineError::ByLevel(n) => n,
                InlineError::TooLarge { stencil, .. } => stencil,
            };
            let twice = matches!(e, InlineError::Twice(_));
            vec![Diagnostic::new(at(name, twice), e.to_string())]
        })?;
        inline_program(program, &indices)
            .map_err(|e| vec![Diagnostic::new("inline", e.to_string())])
    }

    /// Whether a solution written to `path` is JSON: its name ends in `.json`, in any case
    /// (else it is YAML).
    pub fn json_named(path: &Path) -> bool {
        path.extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"))
    }

    /// Reads a solution file: its configuration is checked against a program later
    /// ([`Solution::configuration`]); the reported figures here.
    pub fn load(path: &Path) -> Result<Solution, FileError> {
        // JSON is YAML, so one parser reads both.
        crate::formats::diagnostic::load_file(path, |text| {
            let solution: Solution = yaml::from_str(text).map_err(|d| vec![d])?;
            let errors = solution.report_problems();
            if errors.is_empty() {
                Ok(solution)
            } else {
                Err(errors)
            }
        })
    }

    /// The statuses `solve` reports (the solvers' `Status`).
    pub const STATUSES: [&'static str; 5] = [
        "optimal",
        "time_limit",
        "no_solution",
        "infeasible",
        "unbounded",
    ];

    /// What is wrong with the figures the file reports: a status `solve` never writes, a
    /// time or gap that is negative or not a number. They are read back (`verify` compares the
    /// estimate, `tune` and the reports print them), so none is taken unchecked.
    fn report_problems(&self) -> Vec<Diagnostic> {
        // (key, value, whether +inf is a value it may take: a gap without a bound)
        let mut figures: Vec<(String, f64, bool)> = Vec::new();
        let mut errors = Vec::new();
        let most = crate::cost_model::ranks::MAX_RANKS_PER_DIM;
        if let Some([px, py]) = self.ranks {
            if ![px, py].iter().all(|n| (1..=most).contains(n)) {
                errors.push(Diagnostic::new(
                    "ranks",
                    format!("ranks along x and y must be whole numbers from 1 to {most}, found [{px}, {py}]"),
                ));
            }
        }
        if let Some(r) = &self.solver {
            figures.push(("solver.gap".into(), r.gap, true));
            figures.push(("solver.seconds".into(), r.seconds, false));
            let bounds = [
                ("objective_seconds", r.objective_seconds),
                ("bound_seconds", r.bound_seconds),
            ];
            for (key, v) in bounds {
                if let Some(v) = v.filter(|v| v.is_nan()) {
                    errors.push(Diagnostic::new(
                        format!("solver.{key}"),
                        format!("must be a number, found {v}"),
                    ));
                }
            }
            if !Self::STATUSES.contains(&r.status.as_str()) {
                errors.push(Diagnostic::new(
                    "solver.status",
                    format!(
                        "`{}` is not a status `solve` reports ({})",
                        r.status,
                        Self::STATUSES.join(", ")
                    ),
                ));
            }
        }
        if let Some(v) = self.estimate_seconds {
            figures.push(("estimate_seconds".into(), v, false));
        }
        if let Some(t) = &self.tuned {
            figures.push(("tuned.measured_seconds".into(), t.measured_seconds, false));
            if let Some(v) = t.model_optimum_measured_seconds {
                figures.push(("tuned.model_optimum_measured_seconds".into(), v, false));
            }
        }
        for (name, r) in &self.stencils {
            let terms = [
                ("peel", r.peel),
                ("body", r.body),
                ("fast_peel", r.fast_peel),
                ("fast_body", r.fast_body),
                ("slow_peel", r.slow_peel),
                ("slow_body", r.slow_body),
            ];
            figures.extend(terms.map(|(key, v)| (format!("stencils.{name}.{key}"), v, false)));
        }
        for (path, v, inf_ok) in figures {
            if v.is_nan() || v < 0.0 || (v.is_infinite() && !inf_ok) {
                let what = if inf_ok {
                    "0 or more"
                } else {
                    "a finite number of 0 or more"
                };
                errors.push(Diagnostic::new(path, format!("must be {what}, found {v}")));
            }
        }
        errors
    }

    /// The configuration this solution describes, checked against the program: every stencil
    /// in exactly one group, groups contiguous and in program order, tile counts in 1..=D and
    /// tile sizes (when given) equal to `ceil(D / n)`.
    pub fn configuration(&self, analysis: &Analysis) -> Result<Configuration, Vec<Diagnostic>> {
        let mut errors = Vec::new();
        let n = analysis.stencils.len();
        let mut groups = Vec::new();
        let mut next = 0usize;
        let mut listed = vec![false; n];
        for (g, group) in self.groups.iter().enumerate() {
            if group.stencils.is_empty() {
                errors.push(Diagnostic::new(
                    format!("groups[{g}].stencils"),
                    "a group needs at least one stencil",
                ));
            }
            for (k, name) in group.stencils.iter().enumerate() {
                let path = format!("groups[{g}].stencils[{k}]");
                match analysis.stencils.iter().position(|s| &s.name == name) {
                    None if self.inline.contains(name) => errors.push(Diagnostic::new(
                        path,
                        format!("`{name}` is inlined (`inline:`): it is computed where it is read and belongs to no group"),
                    )),
                    None => errors.push(Diagnostic::new(path, format!("`{name}` is not a stencil of the program"))),
                    Some(i) if i != next => {
                        let expected = match analysis.stencils.get(next) {
                            _ if listed[i] => "it is listed before".to_string(),
                            _ if i < next => format!(
                                "it comes after stencil {} (`{}`), listed before it",
                                next - 1,
                                analysis.stencils[next - 1].name
                            ),
                            Some(s) => format!("stencil {next} (`{}`) was expected here", s.name),
                            None => format!("every one of the program's {n} stencils is listed before it"),
                        };
                        errors.push(Diagnostic::new(
                            path,
                            format!(
                                "`{name}` is stencil {i} of the program, but {expected}: groups list every stencil once, in program order"
                            ),
                        ));
                        // Go on after the furthest listed, so that one entry out of place
                        // is not an error at every entry after it.
                        next = next.max(i + 1);
                        listed[i] = true;
                    }
                    Some(i) => {
                        groups.push(g);
                        listed[i] = true;
                        next += 1;
                    }
                }
            }
            for d in 0..3 {
                let t = group.tiles[d];
                if t < 1 || t > analysis.domain[d] {
                    errors.push(Diagnostic::new(
                        format!("groups[{g}].tiles[{d}]"),
                        format!(
                            "tile count along {} must be between 1 and {}, found {t}",
                            DIMS[d], analysis.domain[d]
                        ),
                    ));
                } else if let Some(size) = group.tile_size {
                    let expected = analysis.domain[d].div_ceil(t);
                    if size[d] != expected {
                        errors.push(Diagnostic::new(
                            format!("groups[{g}].tile_size[{d}]"),
                            format!(
                                "{} tiles along {} of a domain of {} have size {expected}, not {}",
                                t, DIMS[d], analysis.domain[d], size[d]
                            ),
                        ));
                    }
                }
            }
        }
        if errors.is_empty() && next != n {
            errors.push(Diagnostic::new(
                "groups",
                format!("the groups cover {next} of the program's {n} stencils; stencil `{}` is missing", analysis.stencils[next].name),
            ));
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Configuration {
            groups,
            tiles: self.groups.iter().map(|g| g.tiles).collect(),
            stream: (0..self.groups.len())
                .filter(|&g| self.groups[g].stream)
                .collect(),
        })
    }
}
