//! A solution certified step by step ([`crate::certify`]): the estimate exactly, then, as
//! asked, the linearization's soundness and the solution's optimality, with one verdict for
//! them all.

use absinthe_model::cost_model::options::MilpOptions;
use absinthe_model::formats::machine::ModelMachine;
use absinthe_model::language::analysis::Analysis;
use absinthe_model::output::solution::Solution;
use serde::Serialize;

use crate::certify::{
    check_estimate, check_optimality, check_soundness, BetterConfiguration, CertifyError, Query,
    Step, Verdict,
};
use crate::SolveOptions;

/// The steps [`verify`] runs after the estimate.
#[derive(Clone, Copy, Debug)]
pub struct Checks {
    /// Prove every product and maximum of the digits MILP exact.
    pub soundness: bool,
    /// Look for a configuration better than the solution by more than the gap.
    pub optimality: bool,
    /// The encoding of the optimality query.
    pub query: Query,
}

/// The steps run on one solution file and their verdicts.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub program: String,
    /// The solution file.
    pub solution: String,
    pub gap: f64,
    /// Every step certified.
    pub certified: bool,
    pub steps: Vec<Step>,
    /// The configuration the optimality step found, when it is better.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub better: Option<BetterConfiguration>,
}

impl Report {
    /// Certified when every step is, rejected when one is, else unknown (`absinthe verify`
    /// exits with 0, 1 and 2).
    pub fn verdict(&self) -> Verdict {
        if self.certified {
            Verdict::Certified
        } else if self.steps.iter().any(|s| s.verdict == Verdict::Rejected) {
            Verdict::Rejected
        } else {
            Verdict::Unknown
        }
    }
}

/// Certifies `solution` (the file `file`) of the program `program` analysed as `analysis`: the
/// estimate, then the steps `checks` asks for, each Z3 query within the time limit of
/// `solve_options` and optimality within its relative gap. Soundness and optimality are
/// refused on a GPU machine.
pub fn verify(
    (program, file): (&str, String),
    (analysis, view): (&Analysis, &ModelMachine),
    solution: &Solution,
    (options, solve_options): (&MilpOptions, &SolveOptions),
    checks: Checks,
) -> Result<Report, CertifyError> {
    if view.gpu && (checks.soundness || checks.optimality) {
        return Err(CertifyError::Gpu);
    }
    let linear = checks.optimality && checks.query == Query::Linear;
    if linear && absinthe_model::encodings::milp::digits_encodes(analysis).is_err() {
        return Err(CertifyError::Sweep);
    }
    let mut steps = Vec::new();
    let mut better = None;
    let (estimate, checked) = check_estimate(analysis, view, solution, options);
    steps.push(estimate);
    if let Some((_, exact)) = &checked {
        if checks.soundness {
            let time_limit = solve_options.time_limit;
            steps.push(check_soundness(analysis, view, options, time_limit)?);
        }
        if checks.optimality {
            let (step, found) = check_optimality(
                analysis,
                view,
                options,
                exact,
                solve_options.relative_gap,
                solve_options.time_limit,
                checks.query,
            )?;
            steps.push(step);
            better = found;
        }
    }
    Ok(Report {
        program: program.to_string(),
        solution: file,
        gap: solve_options.relative_gap,
        certified: steps.iter().all(|s| s.verdict == Verdict::Certified),
        steps,
        better,
    })
}
