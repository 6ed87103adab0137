//! Planning variants: each requested [`Variant`] solved, enumerated or drawn into the
//! configurations to build, with their predictions.

use absinthe_model::cost_model::evaluate::{evaluate, Configuration, Cost};
use absinthe_model::cost_model::inline_search::{
    apply as inline_apply, choose_inline, InlineChoice,
};
use absinthe_model::cost_model::options::{MilpOptions, SearchSpace};
use absinthe_model::cost_model::search::{explain_infeasible, k_best};
use absinthe_model::formats::diagnostic::{Diagnostic, FileError};
use absinthe_model::formats::machine::ModelMachine;
use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::program::Program;

use super::drawn::{distinct_best, random_configurations, TOP_SCAN};
use super::sweeps::autotune_tilings;
use super::{solve_with_groups, PlanError, PlanSettings, Planned, Variant};

/// The planned variants, and notes for people on what could not be planned as asked (fewer
/// configurations than requested).
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub planned: Vec<Planned>,
    pub notes: Vec<String>,
}

/// The configurations of `variants`: solved (opt, unfused, fused, groups:...), the reference
/// (naive), or drawn (random:N). Infeasible ones are kept, marked skipped.
pub fn plan(
    variants: &[Variant],
    program: &Program,
    analysis: &Analysis,
    view: &ModelMachine,
    settings: &PlanSettings,
) -> Result<Plan, PlanError> {
    let mut planner = Planner {
        program,
        analysis,
        view,
        settings,
        chosen: None,
        plan: Plan::default(),
    };
    for v in variants {
        let first = planner.plan.planned.len();
        planner.variant(v)?;
        for p in &mut planner.plan.planned[first..] {
            p.variant = Some(v.clone());
        }
    }
    Ok(planner.plan)
}

/// What planning needs, and what it has planned so far.
struct Planner<'a> {
    program: &'a Program,
    analysis: &'a Analysis,
    view: &'a ModelMachine,
    settings: &'a PlanSettings,
    /// The inline set of `opt`, chosen once.
    chosen: Option<InlineChoice>,
    plan: Plan,
}

impl Planner<'_> {
    /// Every stencil its own group.
    fn unfused(&self) -> Vec<usize> {
        (0..self.analysis.stencils.len()).collect()
    }

    /// The inline search's choice for `opt` (and the variants that start from its program).
    fn choice(&mut self) -> Result<InlineChoice, PlanError> {
        if let Some(c) = &self.chosen {
            return Ok(c.clone());
        }
        let c = choose_inline(
            self.program,
            self.analysis,
            self.view,
            &self.settings.options.space,
            &self.settings.inline,
            self.settings.solve_options.threads.unwrap_or(0),
        )?;
        self.chosen = Some(c.clone());
        Ok(c)
    }

    /// Adds `name`: `found` with the stencils `inline` inlined, or, when nothing was found,
    /// a skipped variant with the groups `fallback` and one tile per group.
    fn push(
        &mut self,
        name: String,
        inline: &[usize],
        found: Option<(Configuration, f64)>,
        reference: bool,
        fallback: Vec<usize>,
    ) {
        self.plan.planned.push(match found {
            Some((config, predicted)) => Planned {
                name,
                variant: None,
                inline: inline.to_vec(),
                config,
                predicted,
                reference,
                skipped: None,
            },
            None => Planned {
                name,
                variant: None,
                inline: Vec::new(),
                config: Configuration::new(
                    fallback.clone(),
                    vec![[1, 1, 1]; fallback.last().map_or(1, |g| g + 1)],
                ),
                predicted: f64::NAN,
                reference,
                skipped: Some("infeasible".into()),
            },
        });
    }

    /// The optimum of the program, with the groups `groups` fixed, pushed as `name`.
    fn solved(&mut self, name: &str, groups: Option<Vec<usize>>) -> Result<(), PlanError> {
        let found = solve_with_groups(self.analysis, self.view, self.settings, groups.clone())?;
        let fallback = groups.clone().unwrap_or_else(|| self.unfused());
        let infeasible = found.is_none();
        self.push(name.into(), &[], found, false, fallback);
        let mut space = self.settings.options.space.clone();
        space.fixed_groups = groups;
        if infeasible {
            self.explain_last(self.analysis, &space);
        }
        Ok(())
    }

    /// Why the variant pushed last found no configuration, where the constraints say it (a
    /// 2-D stencil fused, a cache too small, fewer tiles than threads).
    fn explain_last(&mut self, analysis: &Analysis, space: &SearchSpace) {
        let why = explain_infeasible(analysis, self.view, space);
        if let (Some(why), Some(last)) = (why, self.plan.planned.last_mut()) {
            last.skipped = Some(format!("infeasible: {why}"));
        }
    }

    fn variant(&mut self, v: &Variant) -> Result<(), PlanError> {
        let (analysis, view) = (self.analysis, self.view);
        let n = analysis.stencils.len();
        match v {
            Variant::Opt => {
                let c = self.choice()?;
                let found = solve_with_groups(&c.analysis, view, self.settings, None)?;
                let infeasible = found.is_none();
                self.push("opt".into(), &c.inline, found, false, self.unfused());
                if infeasible {
                    let space = self.settings.options.space.clone();
                    self.explain_last(&c.analysis, &space);
                }
            }
            Variant::NoInline => self.solved("noinline", None)?,
            Variant::Unfused => self.solved("unfused", Some(self.unfused()))?,
            Variant::Fused => self.solved("fused", Some(vec![0; n]))?,
            Variant::Unstreamed => {
                let plain = PlanSettings {
                    inline: self.settings.inline.clone(),
                    options: MilpOptions {
                        space: SearchSpace {
                            no_stream: true,
                            ..self.settings.options.space.clone()
                        },
                        ..self.settings.options.clone()
                    },
                    solver: self.settings.solver,
                    solve_options: self.settings.solve_options.clone(),
                    seed: self.settings.seed,
                };
                let found = solve_with_groups(analysis, view, &plain, None)?;
                self.push("unstreamed".into(), &[], found, false, self.unfused());
            }
            Variant::Groups(g) => {
                let list: Vec<String> = g.iter().map(|x| x.to_string()).collect();
                self.solved(&format!("groups:{}", list.join(",")), Some(g.clone()))?;
            }
            Variant::Naive => {
                // The reference is untiled and unfused: its prediction is the unfused
                // configuration with one tile per group.
                let config = Configuration::new(self.unfused(), vec![[1, 1, 1]; n]);
                let predicted = evaluate(analysis, view, &config).total;
                self.push(
                    "naive".into(),
                    &[],
                    Some((config, predicted)),
                    true,
                    self.unfused(),
                );
            }
            Variant::Autotune => self.autotune()?,
            Variant::Top(k) => self.top(*k)?,
            Variant::InlineSets(m) => self.inline_sets(*m)?,
            Variant::Solution(path) => {
                let (inline, config, cost) = solution_configuration(self.program, view, path)?;
                let name = path.file_name().map_or(path.display().to_string(), |n| {
                    n.to_string_lossy().into_owned()
                });
                // A configuration the model calls infeasible is still built (and timed, or
                // counted) as written, but given no prediction: the model's figure would mean
                // nothing.
                let predicted = match &cost.infeasible {
                    None => cost.total,
                    Some(why) => {
                        self.plan.notes.push(format!(
                            "solution:{name}: the model calls this configuration infeasible ({why}); it is used as written, with no prediction"
                        ));
                        f64::NAN
                    }
                };
                let found = Some((config, predicted));
                self.push(
                    format!("solution:{name}"),
                    &inline,
                    found,
                    false,
                    self.unfused(),
                );
            }
            Variant::Random(count) => self.random(*count),
        }
        Ok(())
    }

    /// The optimum's groups, every group with the same tile triple from the original work's
    /// grid (tuning groups one by one would need a kernel per group); every triple runs,
    /// feasible under the model or not (that is what auto-tuning measures), streaming where its
    /// whole tiles miss the cache. `opt`'s inline set: the groups are those of its program.
    fn autotune(&mut self) -> Result<(), PlanError> {
        let c = self.choice()?;
        let (a, view) = (&c.analysis, self.view);
        let Some((opt, _)) = solve_with_groups(a, view, self.settings, None)? else {
            self.push("autotune".into(), &[], None, false, self.unfused());
            return Ok(());
        };
        let ngroups = opt.tiles.len();
        let stream = self.settings.options.space.stream_shape(a, view);
        for tiles in autotune_tilings(a.domain) {
            let config = Configuration::new(opt.groups.clone(), vec![tiles; ngroups])
                .canonical_stream(a, view, stream);
            let predicted = evaluate(a, view, &config).total;
            let name = format!("tune{}x{}x{}", tiles[0], tiles[1], tiles[2]);
            self.push(
                name,
                &c.inline,
                Some((config, predicted)),
                false,
                self.unfused(),
            );
        }
        Ok(())
    }

    /// The model's `k` best that are not ties, with `opt`'s inline set.
    fn top(&mut self, k: usize) -> Result<(), PlanError> {
        let c = self.choice()?;
        let (a, view) = (&c.analysis, self.view);
        let stream = self.settings.options.space.stream_shape(a, view);
        let scanned = k_best(a, view, &self.settings.options.space, k * TOP_SCAN, 0)
            .into_iter()
            .map(|(config, t)| (config.canonical_stream(a, view, stream), t))
            .collect();
        let best = distinct_best(scanned, k);
        if best.is_empty() {
            self.push("top1".into(), &[], None, false, self.unfused());
        }
        if best.len() < k && !best.is_empty() {
            self.plan.notes.push(format!(
                "top:{k}: only {} configurations that are not ties among the model's {} best",
                best.len(),
                k * TOP_SCAN
            ));
        }
        for (rank, found) in best.into_iter().enumerate() {
            let name = format!("top{}", rank + 1);
            self.push(name, &c.inline, Some(found), false, self.unfused());
        }
        Ok(())
    }

    /// Other inline sets the search solved, each at its optimum: everything inlined first (the
    /// far end of the store-or-recompute trade-off, Halide's default, which the model's
    /// ranking may put far down), then the cheapest.
    fn inline_sets(&mut self, m: usize) -> Result<(), PlanError> {
        let c = self.choice()?;
        let all = absinthe_model::language::inline::candidates(self.analysis);
        let mut others: Vec<&(Vec<usize>, f64)> =
            c.tried.iter().filter(|(set, _)| *set != c.inline).collect();
        others.sort_by_key(|(set, _)| *set != all);
        if others.len() < m {
            self.plan.notes.push(format!(
                "sets:{m}: the inline search solved only {} other inline set(s)",
                others.len()
            ));
        }
        for (k, (set, _)) in others.into_iter().take(m).enumerate() {
            let (_, a, _) = inline_apply(self.program, self.view.params.operations, set)?;
            let found = solve_with_groups(&a, self.view, self.settings, None)?;
            let fallback = (0..a.stencils.len()).collect();
            self.push(format!("set{}", k + 2), set, found, false, fallback);
        }
        Ok(())
    }

    /// `count` random feasible configurations, seeded.
    fn random(&mut self, count: usize) {
        let (analysis, view) = (self.analysis, self.view);
        let settings = self.settings;
        let found = random_configurations(
            analysis,
            view,
            &settings.options.space,
            count,
            settings.seed,
        );
        if found.len() < count {
            self.plan.notes.push(format!(
                "random:{count}: found only {} feasible configurations",
                found.len()
            ));
        }
        for (k, config) in found.into_iter().enumerate() {
            let predicted = evaluate(analysis, view, &config).total;
            let name = format!("random{k}");
            self.push(name, &[], Some((config, predicted)), false, self.unfused());
        }
    }
}

/// The inline set (indices into `program`), configuration and cost of the solution file at
/// `path`, checked against `program` (errors name the file and key).
fn solution_configuration(
    program: &Program,
    view: &ModelMachine,
    path: &std::path::Path,
) -> Result<(Vec<usize>, Configuration, Cost), PlanError> {
    let file_error = |d: Vec<Diagnostic>| PlanError::File(FileError::new(path, d));
    let solution = absinthe_model::output::solution::Solution::load(path)?;
    // The groups describe the program with `inline` inlined: errors name the entry at fault.
    solution.program_for(program).map_err(file_error)?;
    let inline = absinthe_model::language::inline::indices_of(program, &solution.inline)
        .map_err(|e| file_error(vec![Diagnostic::new("inline", e.to_string())]))?;
    let (_, analysis, _) = inline_apply(program, view.params.operations, &inline)?;
    let config = solution.configuration(&analysis).map_err(file_error)?;
    let cost = evaluate(&analysis, view, &config);
    Ok((inline, config, cost))
}
