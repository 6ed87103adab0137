//! The reports as text for people: a solve's estimate, groups and stencils; a comparison of
//! solvers; a verification's steps.

use std::fmt::{self, Display, Formatter};

use absinthe_model::cost_model::inline_search::InlineSearch;
use absinthe_model::output::text::{human_seconds, table};

use crate::compare;
use crate::solve::Solved;

/// The solution: the summary, then one row per group and one per stencil.
impl Display for Solved {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.summary(f)?;
        self.groups(f)?;
        self.stencils(f)
    }
}

impl Solved {
    /// The estimate, the inline set and the solver's status.
    fn summary(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let s = &self.solution;
        let size = &self.optimum.size;
        match self.ranks {
            Some(grid) => writeln!(
                f,
                "{} on {} over {}x{} ranks: estimated {} per run ({} model; each group on its slowest rank class, exchanges included; one process alone: {})",
                s.program,
                self.machine.name,
                grid.px,
                grid.py,
                human_seconds(self.optimum.objective_seconds),
                s.model,
                human_seconds(self.single_seconds.unwrap_or(f64::NAN))
            )?,
            None => writeln!(
                f,
                "{} on {}: estimated {} per run ({} model)",
                s.program,
                self.machine.name,
                human_seconds(s.estimate_seconds.unwrap_or(0.0)),
                s.model
            )?,
        }
        let inl = &self.inline;
        match (&inl.search, inl.names.is_empty()) {
            (_, false) => writeln!(
                f,
                "inlined: {} ({}; model optimum without inlining {})",
                inl.names.join(" "),
                match inl.search {
                    InlineSearch::None => "given".to_string(),
                    s => format!(
                        "{} search, {} inline sets solved",
                        s.name(),
                        inl.sets_solved
                    ),
                },
                inl.without_seconds
                    .map_or("not solved".into(), human_seconds)
            )?,
            (InlineSearch::None, true) => {
                if let Some(note) = &inl.note {
                    writeln!(f, "inlined: none ({note})")?;
                }
            }
            (s, true) => writeln!(
                f,
                "inlined: none ({} search over {} candidate(s), {} inline sets solved)",
                s.name(),
                inl.candidates,
                inl.sets_solved
            )?,
        }
        if let Some(r) = &s.solver {
            writeln!(
                f,
                "solver {}: {}, gap {:.3}%, {:.2} s; MILP {} variables ({} binary, {} integer), {} constraints",
                r.name,
                r.status,
                r.gap * 100.0,
                r.seconds,
                size.variables,
                size.binaries,
                size.integers,
                size.constraints
            )?;
        }
        Ok(())
    }

    /// One row per group: its stencils, tiles and whether it streams.
    fn groups(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let rows: Vec<Vec<String>> = self
            .solution
            .groups
            .iter()
            .enumerate()
            .map(|(g, gr)| {
                let ts = gr.tile_size.unwrap_or([0; 3]);
                vec![
                    g.to_string(),
                    gr.stencils.join(" "),
                    format!("{}x{}x{}", gr.tiles[0], gr.tiles[1], gr.tiles[2]),
                    format!("{}x{}x{}", ts[0], ts[1], ts[2]),
                    if gr.stream { "yes" } else { "no" }.to_string(),
                    if gr.crowded { "yes" } else { "no" }.to_string(),
                ]
            })
            .collect();
        let header = [
            "group",
            "stencils",
            "tiles",
            "tile size",
            "streams",
            "crowded",
        ];
        write!(f, "\n{}\n", table(&header, &rows))
    }

    /// One row per stencil: its widths, times, dominant memory, loads and store.
    fn stencils(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let cost = &self.optimum.cost;
        let rows: Vec<Vec<String>> = cost
            .stencils()
            .enumerate()
            .map(|(i, c)| {
                let (peel, body) = c.dominant();
                vec![
                    self.analysis.stencils[i].name.clone(),
                    self.optimum.config.groups[i].to_string(),
                    (0..3)
                        .map(|d| format!("{}/{}", c.widths[d][0], c.widths[d][1]))
                        .collect::<Vec<_>>()
                        .join(" "),
                    human_seconds(c.peel),
                    human_seconds(c.body),
                    human_seconds(c.time),
                    format!("peel:{peel} body:{body}"),
                    c.loads
                        .iter()
                        .map(|&a| self.analysis.arrays[a].name.as_str())
                        .collect::<Vec<_>>()
                        .join(","),
                    if c.store { "yes".into() } else { "no".into() },
                ]
            })
            .collect();
        let header = [
            "stencil",
            "group",
            "widths i j k (-/+)",
            "peel",
            "body",
            "time",
            "dominant memory",
            "loads",
            "store",
        ];
        let overhead: f64 = cost.groups.iter().map(|g| g.overhead).sum();
        write!(f, "{}", table(&header, &rows))?;
        writeln!(f, "\ntile-loop overhead: {}", human_seconds(overhead))
    }
}

/// The MILP's size, one row per solver, and whether they agree.
impl Display for compare::Report {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        // The size of the MILP the MILP backends solve (the DP's rows build none).
        let milp = self.rows.iter().find(|r| r.variables > 0);
        if let Some(r) = milp.or(self.rows.first()) {
            writeln!(
                f,
                "{}: MILP {} variables ({} binary), {} constraints; relative gap {:e}",
                self.program, r.variables, r.binaries, r.constraints, self.relative_gap
            )?;
        }
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                vec![
                    r.solver.clone(),
                    r.status.to_string(),
                    r.objective_seconds
                        .map_or("-".into(), |o| format!("{o:.9e}")),
                    r.gap.map_or("-".into(), |g| format!("{:.4}%", g * 100.0)),
                    human_seconds(r.wall_seconds),
                    match (&r.groups, &r.tiles) {
                        (Some(g), Some(t)) => format!("groups {g:?} tiles {t:?}"),
                        _ => r.error.clone().unwrap_or_default(),
                    },
                ]
            })
            .collect();
        let header = [
            "solver",
            "status",
            "objective (s)",
            "gap",
            "wall",
            "configuration",
        ];
        write!(f, "{}", table(&header, &rows))?;
        let failed: Vec<&str> = self
            .rows
            .iter()
            .filter(|r| r.error.is_some())
            .map(|r| r.solver.as_str())
            .collect();
        let verdict = match (&self.disagreement, failed.as_slice()) {
            (Some(_), _) => "the solvers DISAGREE".to_string(),
            (None, []) => "all solvers agree within the gap".to_string(),
            (None, f) => format!(
                "no disagreement among those that solved; FAILED: {}",
                f.join(", ")
            ),
        };
        writeln!(f, "{verdict}")
    }
}

/// One row per step, the better configuration when one was found, and the verdict.
#[cfg(feature = "z3")]
impl Display for crate::verify::Report {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        use crate::certify::Verdict;
        writeln!(f, "verify {} against {}:", self.solution, self.program)?;
        let rows: Vec<Vec<String>> = self
            .steps
            .iter()
            .map(|s| {
                vec![
                    s.step.to_string(),
                    format!("{:?}", s.verdict).to_lowercase(),
                    human_seconds(s.seconds),
                    s.detail.clone(),
                ]
            })
            .collect();
        write!(
            f,
            "{}",
            table(&["step", "verdict", "time", "detail"], &rows)
        )?;
        if let Some(b) = &self.better {
            writeln!(
                f,
                "\nbetter configuration: groups {:?}, tiles {:?}, exact cost {} ({})",
                b.groups,
                b.tiles,
                b.exact_seconds,
                human_seconds(b.seconds)
            )?;
        }
        let verdict = match self.verdict() {
            Verdict::Certified => "certified",
            Verdict::Rejected => "REJECTED",
            Verdict::Unknown => "not certified (unknown)",
        };
        writeln!(f, "\n{verdict}")
    }
}
