//! One problem on several solvers, side by side: each solver's status, objective (`evaluate` of
//! its configuration), gap and wall time, and whether the optimal objectives agree within the
//! relative gap.

use absinthe_model::cost_model::inline_search::InlineChoice;
use absinthe_model::cost_model::options::MilpOptions;
use absinthe_model::encodings::lp::MilpSize;
use absinthe_model::encodings::milp::Encoded;
use absinthe_model::formats::machine::ModelMachine;
use absinthe_model::language::analysis::Analysis;
use serde::Serialize;

use crate::method::Method;
use crate::optimize::optimize_with;
use crate::{SolveOptions, Status};

/// One solver's run.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub solver: String,
    pub status: RowStatus,
    /// `evaluate` of the solver's configuration, seconds.
    pub objective_seconds: Option<f64>,
    pub gap: Option<f64>,
    pub wall_seconds: f64,
    pub groups: Option<Vec<usize>>,
    pub tiles: Option<Vec<[usize; 3]>>,
    /// The size of the MILP the solver solved (zero for the DP, which builds none).
    pub variables: usize,
    pub binaries: usize,
    pub constraints: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Every solver's run on one program.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub program: String,
    pub relative_gap: f64,
    /// No disagreement and no solver failed.
    pub agree: bool,
    pub rows: Vec<Row>,
    /// Which optimal objectives lie more than the gap apart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disagreement: Option<String>,
}

/// How one solver's run ended: the solver's own status, or an error (in `error`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowStatus {
    Solved(Status),
    Error,
}

impl std::fmt::Display for RowStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RowStatus::Solved(s) => s.fmt(f),
            RowStatus::Error => f.write_str("error"),
        }
    }
}

impl Serialize for RowStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl Report {
    /// What makes the comparison fail: the disagreement, else each failed solver's error.
    pub fn error(&self) -> Option<String> {
        let failed: Vec<String> = self
            .rows
            .iter()
            .filter_map(|r| r.error.as_ref().map(|e| format!("{}: {e}", r.solver)))
            .collect();
        match &self.disagreement {
            Some(d) => Some(format!("the solvers disagree: {d}")),
            None => (!failed.is_empty()).then(|| failed.join("; ")),
        }
    }
}

/// Solves the program `inline` makes of `program` (the inline set chosen once, so that every
/// solver competes on the same problem) on `view` with each of `methods`, in order. `note`
/// receives the inline set first, when there is one.
pub fn compare(
    program: &str,
    (inline, view): (&InlineChoice, &ModelMachine),
    (options, solve_options): (&MilpOptions, &SolveOptions),
    methods: &[Method],
    note: &dyn Fn(String),
) -> Report {
    if !inline.names.is_empty() {
        note(format!(
            "inlined: {} (the solvers solve the rewritten program; --no-inline for the original)",
            inline.names.join(" ")
        ));
    }
    let analysis = &inline.analysis;
    let size = Encoded::build(analysis, view, options).milp().size();
    let rows: Vec<Row> = methods
        .iter()
        .map(|&method| solve_row(analysis, view, (options, solve_options), method, size))
        .collect();
    let gap = solve_options.relative_gap;
    let disagreement = disagreement(&rows, gap);
    let failed = rows.iter().any(|r| r.error.is_some());
    Report {
        program: program.to_string(),
        relative_gap: gap,
        agree: disagreement.is_none() && !failed,
        rows,
        disagreement,
    }
}

/// `method`'s row: its optimum and how long it took, or its error. `size` is the MILP's (the
/// DP builds none).
fn solve_row(
    analysis: &Analysis,
    view: &ModelMachine,
    (options, solve_options): (&MilpOptions, &SolveOptions),
    method: Method,
    size: MilpSize,
) -> Row {
    let name = method.name().to_string();
    let size = if method == Method::Dp {
        MilpSize::default()
    } else {
        size
    };
    let started = std::time::Instant::now();
    let solved = optimize_with(analysis, view, options, method, solve_options);
    let wall_seconds = started.elapsed().as_secs_f64();
    let (status, error) = match &solved {
        Ok(o) => (RowStatus::Solved(o.solution.status), None),
        Err(e) => (RowStatus::Error, Some(e.to_string())),
    };
    let found = solved.ok();
    Row {
        solver: name,
        status,
        objective_seconds: found.as_ref().map(|o| o.cost.total),
        gap: found.as_ref().map(|o| o.solution.gap),
        wall_seconds,
        groups: found.as_ref().map(|o| o.config.groups.clone()),
        tiles: found.as_ref().map(|o| o.config.tiles.clone()),
        variables: size.variables,
        binaries: size.binaries,
        constraints: size.constraints,
        error,
    }
}

/// Optimal objectives must agree within the gap (plus evaluate's f64 rounding): what is wrong
/// when they do not.
fn disagreement(rows: &[Row], gap: f64) -> Option<String> {
    let optimal: Vec<(&str, f64)> = rows
        .iter()
        .filter(|r| r.status == RowStatus::Solved(Status::Optimal))
        .filter_map(|r| r.objective_seconds.map(|o| (r.solver.as_str(), o)))
        .collect();
    let lo = optimal.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    let hi = optimal.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    (hi.1 - lo.1 > (gap + 1e-9) * hi.1.abs()).then(|| {
        format!(
            "{} reports an optimum of {:e} s but {} one of {:e} s: more than the relative gap {gap:e} apart",
            hi.0, hi.1, lo.0, lo.1
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(solver: &str, status: RowStatus, objective: Option<f64>, error: Option<&str>) -> Row {
        Row {
            solver: solver.into(),
            status,
            objective_seconds: objective,
            gap: objective.map(|_| 0.0),
            wall_seconds: 1e-3,
            groups: objective.map(|_| vec![0, 0]),
            tiles: objective.map(|_| vec![[1, 2, 1]]),
            variables: 3,
            binaries: 2,
            constraints: 4,
            error: error.map(String::from),
        }
    }

    fn report(rows: Vec<Row>) -> Report {
        let disagreement = disagreement(&rows, 1e-4);
        let agree = disagreement.is_none() && rows.iter().all(|r| r.error.is_none());
        Report {
            program: "p".into(),
            relative_gap: 1e-4,
            agree,
            rows,
            disagreement,
        }
    }

    #[test]
    fn optima_apart_by_more_than_the_gap_disagree_and_failures_are_errors() {
        let optimal = RowStatus::Solved(Status::Optimal);
        let close = report(vec![
            row("dp", optimal, Some(1.0), None),
            row("highs", optimal, Some(1.00005), None),
            row("cbc", RowStatus::Solved(Status::TimeLimit), Some(2.0), None),
        ]);
        assert!(close.agree && close.error().is_none());
        let apart = report(vec![
            row("dp", optimal, Some(1.0), None),
            row("highs", optimal, Some(1.01), None),
        ]);
        assert!(apart
            .error()
            .unwrap()
            .starts_with("the solvers disagree: highs reports"));
        let failed = report(vec![
            row("dp", optimal, Some(1.0), None),
            row("z3", RowStatus::Error, None, Some("no solution")),
        ]);
        assert_eq!(failed.error().as_deref(), Some("z3: no solution"));
        let text = failed.to_string();
        assert!(
            text.starts_with("p: MILP 3 variables (2 binary), 4 constraints; relative gap 1e-4\n")
        );
        assert!(text.contains("\nz3      error    -"));
        assert!(
            text.ends_with("no solution\nno disagreement among those that solved; FAILED: z3\n")
        );
        assert!(apart.to_string().ends_with("the solvers DISAGREE\n"));
    }
}
