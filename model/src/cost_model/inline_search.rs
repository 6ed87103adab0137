//! Which stencils to inline: a search over inline sets, each rewritten (`model::inline`) and
//! solved exactly (docs/decisions/0005-inlining-by-search-over-sets.md).
//!
//! Inlining changes the program itself: the readers' access sets, the stencils a group holds,
//! the arrays its tiles touch. So an inline set is chosen outside the MILP: every set tried is
//! a program of its own, whose exact optimum over groupings, tilings and streaming is the range
//! table's shortest path (`search::range_table`, the DP the range MILP equals). The set with the
//! cheapest optimum wins, and the requested solver then solves that program once.
//! - With at most [`EXHAUSTIVE_CANDIDATES`] candidates (stencils that are not outputs) every
//!   subset is tried: the result is the exact optimum over inlining, grouping, tiling and
//!   streaming together (`inline_search_equals_brute_force_over_inline_sets` in
//!   tests/milp_exact.rs holds it equal to brute force).
//! - With more, up to [`GREEDY_CANDIDATES`], the search is greedy: from the empty set, add the
//!   one stencil that lowers the optimum most, until none does (at most `c (c + 1) / 2` solves);
//!   the set of every candidate (recompute everything, Halide's default) is solved too and
//!   wins when it is cheaper. The result is never worse than not inlining or inlining
//!   everything, but it is not proven optimal over inline sets.
//! - With more still, nothing is inlined unless the user names a set (`--inline`).
//!
//! The empty set is always tried, so under the model inlining can only improve the optimum.

use std::time::Instant;

use crate::cost_model::model::{Absinthe, CostModel};
use crate::cost_model::options::SearchSpace;
use crate::cost_model::search::{range_table_with, shortest_grouping};
use crate::formats::machine::ModelMachine;
use crate::formats::machine::OperationWeights;
use crate::language::analysis::Analysis;
use crate::language::inline::{candidates, inline_program, kept, InlineError};
use crate::language::program::Program;

/// Why an inline set cannot be chosen or applied.
#[derive(Debug, thiserror::Error)]
pub enum InlineSearchError {
    /// A request that cannot be carried out as given (an inline set naming an output).
    #[error("{0}")]
    Invalid(String),
    /// A rewritten program that fails analysis: a bug.
    #[error("BUG: {0}")]
    Mismatch(String),
    /// The search space's deadline stopped a range table ([`SearchSpace::deadline`]).
    #[error("{}", deadline_message(*.0))]
    TimeLimit(usize),
}

/// The message of a search stopped by its deadline after evaluating `ranges` group ranges.
pub fn deadline_message(ranges: usize) -> String {
    format!(
        "the exact search did not finish within the time limit ({ranges} group ranges evaluated); raise --time-limit"
    )
}

/// Every subset is tried up to this many candidates (64 solves).
pub const EXHAUSTIVE_CANDIDATES: usize = 6;

/// The greedy search runs up to this many candidates; beyond, nothing is inlined by default.
pub const GREEDY_CANDIDATES: usize = 24;

/// What to inline.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum InlinePolicy {
    /// Search the inline sets (the default).
    #[default]
    Search,
    /// Inline nothing: the schedule space of the original work plus streaming.
    Off,
    /// Exactly these stencils (sorted indices).
    Fixed(Vec<usize>),
}

/// How the inline set was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InlineSearch {
    /// Every subset of the candidates.
    Exhaustive,
    /// Greedy additions.
    Greedy,
    /// Not searched: inlining off, fixed groups, a set given, or too many candidates.
    None,
}

impl InlineSearch {
    pub fn name(self) -> &'static str {
        match self {
            InlineSearch::Exhaustive => "exhaustive",
            InlineSearch::Greedy => "greedy",
            InlineSearch::None => "none",
        }
    }
}

/// The chosen inline set and the program it makes.
#[derive(Clone, Debug)]
pub struct InlineChoice {
    /// Indices of the inlined stencils in the original program, sorted.
    pub inline: Vec<usize>,
    /// Their names.
    pub names: Vec<String>,
    /// The rewritten program and its analysis (the original when nothing is inlined).
    pub program: Program,
    pub analysis: Analysis,
    /// The original index of each stencil of `program`.
    pub kept: Vec<usize>,
    pub search: InlineSearch,
    /// Candidates (stencils that are not outputs).
    pub candidates: usize,
    /// Inline sets solved.
    pub sets_solved: usize,
    /// The model's optimum without inlining, in seconds (None: infeasible, or not solved).
    pub without_seconds: Option<f64>,
    /// The model's optimum with the chosen set, in seconds (None: not solved by the search).
    pub with_seconds: Option<f64>,
    /// Why nothing was searched, when [`InlineSearch::None`] and the policy asked for a search.
    pub note: Option<String>,
    /// Every inline set the search solved that has a feasible optimum, with the optimum's
    /// seconds, cheapest first (ties in the order solved). `tune --inline-sets` times the
    /// optima of the best few.
    pub tried: Vec<(Vec<usize>, f64)>,
    pub seconds: f64,
}

/// The rewritten program and analysis of an inline set, and the original index of each kept
/// stencil. The analysis weighs operations with `weights` (the machine's `params.operations`,
/// see `Analysis::weigh_operations`).
pub fn apply(
    program: &Program,
    weights: OperationWeights,
    inline: &[usize],
) -> Result<(Program, Analysis, Vec<usize>), InlineSearchError> {
    let rewritten =
        inline_program(program, inline).map_err(|e| InlineSearchError::Invalid(e.to_string()))?;
    analysed(program, rewritten, weights, inline)
}

/// The analysis of a rewritten program. Inlining removes only stencils that are read, and reads
/// compose within the halo, so it always analyses; if not, that is a bug, said as one.
fn analysed(
    program: &Program,
    rewritten: Program,
    weights: OperationWeights,
    inline: &[usize],
) -> Result<(Program, Analysis, Vec<usize>), InlineSearchError> {
    let analysis = Analysis::weighed(&rewritten, weights).map_err(|d| {
        InlineSearchError::Mismatch(format!(
            "the program with {inline:?} inlined fails analysis: {}",
            d.iter()
                .map(|d| format!("{}: {}", d.path, d.message))
                .collect::<Vec<_>>()
                .join("; ")
        ))
    })?;
    Ok((rewritten, analysis, kept(program, inline)))
}

/// Chooses the inline set of `program` by `policy` (see the module documentation), by the
/// ABSINTHE model of `machine`.
pub fn choose_inline(
    program: &Program,
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &SearchSpace,
    policy: &InlinePolicy,
    threads: usize,
) -> Result<InlineChoice, InlineSearchError> {
    choose_inline_with(
        program,
        analysis,
        &Absinthe::new(machine),
        options,
        policy,
        threads,
    )
}

/// [`choose_inline`] for any cost model: each inline set's program is solved by `model`'s
/// range table and DP.
pub fn choose_inline_with<M: CostModel>(
    program: &Program,
    analysis: &Analysis,
    model: &M,
    options: &SearchSpace,
    policy: &InlinePolicy,
    threads: usize,
) -> Result<InlineChoice, InlineSearchError> {
    let mut sets = InlineSets {
        program,
        model,
        options,
        threads,
        started: Instant::now(),
        candidates: candidates(analysis),
        solved: 0,
        tried: Vec::new(),
    };
    if !model.machine().model.inlines() {
        return match policy {
            InlinePolicy::Fixed(set) if !set.is_empty() => Err(InlineSearchError::Invalid(
                format!("the {} model inlines nothing", model.machine().model),
            )),
            _ => Ok(sets.unsearched(analysis, None)),
        };
    }
    match policy {
        InlinePolicy::Off => return Ok(sets.unsearched(analysis, None)),
        InlinePolicy::Fixed(set) => {
            if options.fixed_groups.is_some() && !set.is_empty() {
                return Err(InlineSearchError::Invalid(
                    "--inline cannot be combined with fixed groups (they index the original stencils)"
                        .into(),
                ));
            }
            return sets.finish(set.clone(), InlineSearch::None, None, None);
        }
        InlinePolicy::Search => {}
    }
    if let Some(note) = why_not_searched(&sets.candidates, options) {
        return Ok(sets.unsearched(analysis, note));
    }
    let without = sets.seconds_of(&[])?;
    let (set, with, search) = if sets.candidates.len() <= EXHAUSTIVE_CANDIDATES {
        let (set, with) = sets.every_subset(without)?;
        (set, with, InlineSearch::Exhaustive)
    } else {
        let (set, with) = sets.greedy(without)?;
        (set, with, InlineSearch::Greedy)
    };
    sets.finish(set, search, without, with)
}

/// Why the search over inline sets does not run, when the policy asks for it: `Some(None)`
/// without a note (no candidates), `Some(Some(note))` with one, `None` when it runs.
fn why_not_searched(cands: &[usize], options: &SearchSpace) -> Option<Option<String>> {
    if cands.is_empty() {
        return Some(None);
    }
    if options.fixed_groups.is_some() {
        return Some(Some(
            "not searched: the groups are fixed (they index the original stencils)".into(),
        ));
    }
    if cands.len() > GREEDY_CANDIDATES {
        return Some(Some(format!(
            "not searched: {} stencils could be inlined (the search runs up to {GREEDY_CANDIDATES}); name a set with --inline",
            cands.len()
        )));
    }
    None
}

/// Whether the optimum `t` is better than `best` (None: infeasible), by more than rounding.
fn better(t: Option<f64>, best: Option<f64>) -> bool {
    match (t, best) {
        (Some(t), Some(b)) => t < b * (1.0 - 1e-9),
        (Some(_), None) => true,
        _ => false,
    }
}

/// The search over the inline sets of one program: what it solves them with, and what it has
/// solved.
struct InlineSets<'a, M: CostModel> {
    program: &'a Program,
    model: &'a M,
    options: &'a SearchSpace,
    threads: usize,
    started: Instant,
    /// The stencils that may be inlined (not outputs).
    candidates: Vec<usize>,
    /// Inline sets solved.
    solved: usize,
    /// Every set solved with a feasible optimum, and its seconds, in the order solved.
    tried: Vec<(Vec<usize>, f64)>,
}

impl<M: CostModel> InlineSets<'_, M> {
    /// The model's exact optimum of the program with `set` inlined (seconds), None when
    /// infeasible or too large to rewrite; each set is solved once.
    fn seconds_of(&mut self, set: &[usize]) -> Result<Option<f64>, InlineSearchError> {
        if let Some((_, t)) = self.tried.iter().find(|(s, _)| s == set) {
            return Ok(Some(*t));
        }
        let rewritten = match inline_program(self.program, set) {
            Ok(p) => p,
            Err(InlineError::TooLarge { .. }) => return Ok(None),
            Err(e) => return Err(InlineSearchError::Invalid(e.to_string())),
        };
        let weights = self.model.machine().params.operations;
        let (_, a, _) = analysed(self.program, rewritten, weights, set)?;
        self.solved += 1;
        let table = range_table_with(&a, self.model, self.options, self.threads, 1);
        if table.timed_out {
            return Err(InlineSearchError::TimeLimit(table.ranges_evaluated));
        }
        let t = shortest_grouping(&table, a.stencils.len()).map(|(_, t)| t);
        if let Some(t) = t {
            self.tried.push((set.to_vec(), t));
        }
        Ok(t)
    }

    /// Every subset of the candidates, by size, then in lexicographic order of their masks:
    /// ties keep the smaller (and then the earlier) set. The best set and its optimum.
    fn every_subset(
        &mut self,
        without: Option<f64>,
    ) -> Result<(Vec<usize>, Option<f64>), InlineSearchError> {
        let cands = self.candidates.clone();
        let (mut best_set, mut best) = (Vec::new(), without);
        let mut masks: Vec<u32> = (1..(1u32 << cands.len())).collect();
        masks.sort_by_key(|m| (m.count_ones(), *m));
        for m in masks {
            let set: Vec<usize> = (0..cands.len())
                .filter(|b| m & (1 << b) != 0)
                .map(|b| cands[b])
                .collect();
            let t = self.seconds_of(&set)?;
            if better(t, best) {
                best = t;
                best_set = set;
            }
        }
        Ok((best_set, best))
    }

    /// Greedy additions from the empty set, then every candidate at once (greedy additions can
    /// stop short of it: each single addition may cost more while all of them together cost
    /// less). The best set and its optimum.
    fn greedy(
        &mut self,
        without: Option<f64>,
    ) -> Result<(Vec<usize>, Option<f64>), InlineSearchError> {
        let cands = self.candidates.clone();
        let (mut best_set, mut best) = (Vec::new(), without);
        loop {
            let mut step: Option<(Vec<usize>, Option<f64>)> = None;
            for &c in &cands {
                if best_set.contains(&c) {
                    continue;
                }
                let mut set = best_set.clone();
                set.push(c);
                set.sort_unstable();
                let t = self.seconds_of(&set)?;
                if better(t, step.as_ref().map_or(best, |s| s.1)) {
                    step = Some((set, t));
                }
            }
            match step {
                Some((set, t)) => {
                    best_set = set;
                    best = t;
                }
                None => break,
            }
        }
        let all = self.seconds_of(&cands)?;
        if better(all, best) {
            best_set = cands;
            best = all;
        }
        Ok((best_set, best))
    }

    /// Nothing inlined and nothing solved: the program itself, weighed with the machine's
    /// operation weights whatever its caller did.
    fn unsearched(&self, analysis: &Analysis, note: Option<String>) -> InlineChoice {
        let mut own = analysis.clone();
        own.weigh_operations(self.model.machine().params.operations);
        InlineChoice {
            inline: Vec::new(),
            names: Vec::new(),
            program: self.program.clone(),
            analysis: own,
            kept: (0..analysis.stencils.len()).collect(),
            search: InlineSearch::None,
            candidates: self.candidates.len(),
            sets_solved: 0,
            without_seconds: None,
            with_seconds: None,
            note,
            tried: Vec::new(),
            seconds: self.started.elapsed().as_secs_f64(),
        }
    }

    /// The choice of `inline`, with the program it makes and what the search found.
    fn finish(
        self,
        inline: Vec<usize>,
        search: InlineSearch,
        without: Option<f64>,
        with: Option<f64>,
    ) -> Result<InlineChoice, InlineSearchError> {
        let mut tried = self.tried;
        tried.sort_by(|a, b| a.1.total_cmp(&b.1));
        let weights = self.model.machine().params.operations;
        let (rewritten, a, kept) = apply(self.program, weights, &inline)?;
        Ok(InlineChoice {
            names: inline
                .iter()
                .map(|&s| self.program.stencils[s].name.clone())
                .collect(),
            inline,
            program: rewritten,
            analysis: a,
            kept,
            search,
            candidates: self.candidates.len(),
            sets_solved: self.solved,
            without_seconds: without,
            with_seconds: with,
            note: None,
            tried,
            seconds: self.started.elapsed().as_secs_f64(),
        })
    }
}
