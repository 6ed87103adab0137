//! The test that proves the linearization: on random small programs and machines, the MILP
//! optimum of each backend equals the minimum of `evaluate` over every grouping and every tile
//! count, and the solver's objective equals `evaluate` of its configuration.

use absinthe_model::cost_model::evaluate::{evaluate, Configuration};
use absinthe_model::cost_model::forms::with_model;
use absinthe_model::cost_model::options::{Encoding, MilpOptions};
use absinthe_model::cost_model::search::{exhaustive, k_best};
use absinthe_model::formats::machine::ModelMachine;
use absinthe_model::formats::model_kind::ModelKind;
use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::generate::{random_program, RandomShape};
use absinthe_model::support::rng::Rng;
use absinthe_solvers::method::{Backend, Method};
use absinthe_solvers::optimize::{agree, optimize, optimize_dp, optimize_with, OptimizeError};
use absinthe_solvers::SolveOptions;

use crate::common::{analyse, random_machine};

/// How many best configurations the brute force keeps, to test `search::k_best`.
pub(crate) const K_BEST: usize = 5;

/// Every configuration: all groupings, all tile triples per group (1..=D each), each group
/// streaming or not. The [`K_BEST`] least costs of feasible (groups, tiles), cheapest first
/// (streaming never changes the cost, only whether a tiling fits). None when the enumeration
/// would be larger than `limit`.
pub(crate) fn naive_best(
    a: &Analysis,
    m: &ModelMachine,
    options: &MilpOptions,
    limit: usize,
) -> Option<Vec<f64>> {
    let n = a.stencils.len();
    let triples: Vec<[usize; 3]> = (1..=a.domain[0])
        .flat_map(|x| {
            (1..=a.domain[1]).flat_map(move |y| (1..=a.domain[2]).map(move |z| [x, y, z]))
        })
        .collect();
    let mut total = 0usize;
    for mask in 0..(1usize << (n - 1)) {
        let groups = 1 + mask.count_ones() as usize;
        total = total.saturating_add((2 * triples.len()).saturating_pow(groups as u32));
    }
    if total > limit {
        return None;
    }
    let mut best: Vec<f64> = Vec::new();
    for mask in 0..(1usize << (n - 1)) {
        let mut groups = vec![0usize; n];
        for i in 1..n {
            groups[i] = groups[i - 1] + ((mask >> (i - 1)) & 1);
        }
        let ng = groups[n - 1] + 1;
        let mut idx = vec![0usize; ng];
        loop {
            let mut config =
                Configuration::new(groups.clone(), idx.iter().map(|&k| triples[k]).collect());
            if options.space.admits(&config, a) {
                let flags = if options.space.no_stream {
                    1
                } else {
                    1usize << ng
                };
                let feasible = (0..flags).find_map(|streams| {
                    config.stream = (0..ng).filter(|g| (streams >> g) & 1 == 1).collect();
                    let cost = evaluate(a, m, &config);
                    cost.is_feasible().then_some(cost.total)
                });
                if let Some(t) = feasible {
                    let at = best.partition_point(|&b| b <= t);
                    if at < K_BEST {
                        best.insert(at, t);
                        best.truncate(K_BEST);
                    }
                }
            }
            // next tile assignment
            let mut g = 0;
            loop {
                if g == ng {
                    break;
                }
                idx[g] += 1;
                if idx[g] < triples.len() {
                    break;
                }
                idx[g] = 0;
                g += 1;
            }
            if g == ng {
                break;
            }
        }
    }
    Some(best)
}

fn random_options(rng: &mut Rng, a: &Analysis) -> MilpOptions {
    let n = a.stencils.len();
    let mut o = MilpOptions::default();
    if rng.chance(15) {
        let mut g = vec![0; n];
        for i in 1..n {
            g[i] = g[i - 1] + rng.chance(50) as usize;
        }
        o.space.fixed_groups = Some(g);
    }
    if rng.chance(15) {
        o.space.tiles_max = Some(a.domain.map(|d| rng.range(1, d as i64) as usize));
    }
    o.space.no_stream = rng.chance(15);
    if rng.chance(10) {
        o.space.tiles_min = Some(a.domain.map(|d| rng.range(1, (d as i64).min(2)) as usize));
        if let Some(max) = o.space.tiles_max {
            o.space.tiles_min = Some([0, 1, 2].map(|d| o.space.tiles_min.unwrap()[d].min(max[d])));
        }
    }
    o
}

fn exact_options() -> SolveOptions {
    SolveOptions {
        relative_gap: 1e-9,
        time_limit: Some(60.0),
        threads: Some(1),
        verbose: false,
    }
}

/// `optimize` with the backend `name`, or `optimize_dp` for `dp`, to the exact options.
fn solve_with(
    name: &str,
    a: &Analysis,
    m: &ModelMachine,
    options: &MilpOptions,
) -> Result<absinthe_solvers::optimize::Optimum, OptimizeError> {
    if name == "dp" {
        optimize_dp(a, m, options, &exact_options())
    } else {
        let solver = absinthe_solvers::by_name(name).unwrap();
        optimize(a, m, options, solver.as_ref(), &exact_options())
    }
}

fn check_case(seed: u64, shape: &RandomShape, naive_limit: usize) -> (bool, bool) {
    let text = random_program(seed, shape);
    let a = analyse(&text);
    let mut rng = absinthe_model::support::rng::Rng::new(seed.wrapping_mul(7919));
    let cells = a.domain.iter().product::<usize>();
    let m = random_machine(&mut rng, cells);
    // A quarter of the cases priced with the published form (`--model absinthe`).
    let m = if rng.chance(25) {
        with_model(&m, ModelKind::Absinthe).unwrap()
    } else {
        m
    };
    let options = random_options(&mut rng, &a);
    let dp = exhaustive(&a, &m, &options.space).map(|(c, t)| {
        let cost = evaluate(&a, &m, &c);
        assert!(cost.is_feasible());
        assert!(
            agree(cost.total, t),
            "seed {seed}: DP total {t} vs evaluate {}",
            cost.total
        );
        t
    });
    let naive = naive_best(&a, &m, &options, naive_limit);
    if let Some(naive) = &naive {
        // The k best configurations of the exact search, against brute force's k least costs.
        let top = k_best(&a, &m, &options.space, K_BEST, 0);
        let top_costs: Vec<f64> = top
            .iter()
            .map(|(c, t)| {
                let cost = evaluate(&a, &m, c);
                assert!(
                    cost.is_feasible(),
                    "seed {seed}: k_best gives an infeasible {c:?}"
                );
                assert!(
                    agree(cost.total, *t),
                    "seed {seed}: k_best total {t} vs evaluate {}",
                    cost.total
                );
                assert!(options.space.admits(c, &a));
                *t
            })
            .collect();
        assert_eq!(
            top_costs.len(),
            naive.len(),
            "seed {seed}: k_best {top_costs:?} vs brute force {naive:?}\n{text}"
        );
        for (x, y) in naive.iter().zip(&top_costs) {
            assert!(
                agree(*x, *y),
                "seed {seed}: brute force's best {naive:?} vs k_best {top_costs:?}\n{text}"
            );
        }
        let distinct: std::collections::HashSet<_> = top
            .iter()
            .map(|(c, _)| (c.groups.clone(), c.tiles.clone()))
            .collect();
        assert_eq!(
            distinct.len(),
            top.len(),
            "seed {seed}: k_best repeats a configuration"
        );
        match (naive.first().copied(), dp) {
            (None, None) => {}
            (Some(x), Some(y)) => assert!(agree(x, y), "seed {seed}: naive {x} vs DP {y}\n{text}"),
            other => panic!("seed {seed}: naive vs DP feasibility differ: {other:?}\n{text}"),
        }
    }
    // Both encodings on both MILP backends (the digits one cold and warm-started), and the DP
    // backend through `optimize_dp`.
    let runs: [(&str, Encoding, bool); 7] = [
        ("cbc", Encoding::Digits, false),
        ("highs", Encoding::Digits, false),
        ("highs", Encoding::Digits, true),
        ("cbc", Encoding::Ranges, false),
        ("highs", Encoding::Ranges, false),
        ("dp", Encoding::Ranges, false),
        ("cbc", Encoding::Digits, true),
    ];
    for (name, encoding, warm_start) in runs {
        let options = MilpOptions {
            encoding,
            warm_start,
            ..options.clone()
        };
        let result = solve_with(name, &a, &m, &options);
        let name = format!(
            "{name}/{}{}",
            encoding.name(),
            if warm_start { "/warm" } else { "" }
        );
        match (result, dp) {
            (Ok(opt), Some(best)) => {
                assert!(
                    agree(opt.cost.total, best),
                    "seed {seed}: {name} optimum {:e} ({:?} {:?}) but brute force finds {:e}\nmachine {m:?}\noptions {options:?}\n{text}",
                    opt.cost.total,
                    opt.config.groups,
                    opt.config.tiles,
                    best
                );
                assert!(agree(opt.objective_seconds, opt.cost.total));
                assert!(options.space.admits(&opt.config, &a));
            }
            (Err(OptimizeError::Infeasible(_)), None) => {}
            (r, b) => panic!(
                "seed {seed}: {name} gives {:?}, brute force {b:?}\nmachine {m:?}\noptions {options:?}\n{text}",
                r.map(|o| (o.config, o.cost.total))
            ),
        }
    }
    (naive.is_some(), dp.is_some())
}

#[test]
fn milp_optimum_equals_brute_force_on_random_programs() {
    let shape = RandomShape {
        min_stencils: 1,
        max_stencils: 5,
        min_domain: 1,
        max_domain: 6,
        max_offset: 1,
        rich_expressions: false,
    };
    let mut naive_checked = 0;
    let mut feasible = 0;
    let cases = 80;
    for seed in 0..cases {
        let (naive, feas) = check_case(seed, &shape, 300_000);
        naive_checked += naive as usize;
        feasible += feas as usize;
    }
    // The generator must exercise both outcomes and the fully naive enumeration.
    assert!(
        feasible >= cases as usize / 3,
        "only {feasible} feasible cases"
    );
    assert!(feasible < cases as usize, "no infeasible case");
    assert!(
        naive_checked >= 15,
        "only {naive_checked} cases fully enumerated"
    );
}

#[test]
fn milp_optimum_equals_brute_force_with_wider_reads() {
    let shape = RandomShape {
        min_stencils: 2,
        max_stencils: 4,
        min_domain: 2,
        max_domain: 8,
        max_offset: 2,
        rich_expressions: false,
    };
    for seed in 1000..1030 {
        check_case(seed, &shape, 100_000);
    }
}

/// machines/default.yaml's model for 8 threads.
fn default_view() -> absinthe_model::formats::machine::ModelMachine {
    absinthe_model::formats::machine::Machine::load(
        &crate::common::root().join("machines/default.yaml"),
    )
    .unwrap()
    .model_view(8)
    .unwrap()
}

/// The shipped programs: the MILP optimum equals the exhaustive optimum on the real domains.
#[test]
fn milp_optimum_equals_exhaustive_on_shipped_programs() {
    let machine = default_view();
    for p in ["example2", "hdiff"] {
        let text = std::fs::read_to_string(crate::common::root().join(format!("configs/{p}.yaml")))
            .unwrap();
        let a = analyse(&text);
        let options = MilpOptions::default();
        let (_, best) = exhaustive(&a, &machine, &options.space).expect("feasible");
        let solver = absinthe_solvers::by_name("highs").unwrap();
        let opt = optimize(&a, &machine, &options, solver.as_ref(), &exact_options()).unwrap();
        assert!(
            agree(opt.cost.total, best),
            "{p}: MILP {:e} vs exhaustive {best:e}",
            opt.cost.total
        );
    }
}

/// Large programs: every backend's reported objective is `evaluate` of the configuration it
/// reports, and the exact backends agree. The digits MILP gets a time limit and starts from the
/// DP (it must still end with a configuration, a bound and a gap).
#[test]
fn large_programs_report_what_evaluate_gives() {
    let machine = default_view();
    let programs = [
        absinthe_model::language::generate::chain(64, [64, 64, 60]),
        absinthe_model::language::generate::dycore(150, [32, 32, 20], 1),
    ];
    for text in programs {
        let a = analyse(&text);
        let mut objectives = Vec::new();
        for (name, encoding) in [
            ("dp", Encoding::Ranges),
            ("highs", Encoding::Ranges),
            ("cbc", Encoding::Ranges),
            ("highs", Encoding::Digits),
        ] {
            let options = MilpOptions {
                encoding,
                warm_start: true,
                ..MilpOptions::default()
            };
            let solve = SolveOptions {
                time_limit: Some(10.0),
                ..SolveOptions::default()
            };
            let opt = optimize_with(&a, &machine, &options, name.parse().unwrap(), &solve)
                .unwrap_or_else(|e| panic!("{} stencils, {name}: {e}", a.stencils.len()));
            let cost = evaluate(&a, &machine, &opt.config);
            assert!(cost.is_feasible());
            assert!(
                agree(opt.objective_seconds, cost.total),
                "{name}: claims {:e}, evaluate gives {:e}",
                opt.objective_seconds,
                cost.total
            );
            assert!(opt.bound_seconds <= opt.objective_seconds * (1.0 + 1e-9));
            if opt.solution.status == absinthe_solvers::Status::Optimal {
                objectives.push((name, cost.total));
            }
        }
        // dp and the range MILP always prove optimality; the warm-started digits MILP holds
        // the DP's configuration at least.
        assert!(objectives.len() >= 3, "{objectives:?}");
        for (name, o) in &objectives {
            assert!(
                agree(*o, objectives[0].1) || (o - objectives[0].1).abs() <= 1e-4 * o,
                "{name} {o:e} vs dp {:e}",
                objectives[0].1
            );
        }
    }
}

/// The inline search (`model::inline_search`) against brute force: on random programs with at most
/// `EXHAUSTIVE_CANDIDATES` stencils that may be inlined, its optimum equals the least cost
/// over every inline set, grouping, tiling and streaming flag (fully naive enumeration per
/// set), the empty set among them; the solved optimum of the chosen program equals it too.
#[test]
fn inline_search_equals_brute_force_over_inline_sets() {
    use absinthe_model::cost_model::inline_search::{choose_inline, InlinePolicy, InlineSearch};
    use absinthe_model::language::inline::{candidates, inline_program};
    use absinthe_model::language::program::Program;

    let shape = RandomShape {
        min_stencils: 2,
        max_stencils: 5,
        min_domain: 1,
        max_domain: 5,
        max_offset: 1,
        rich_expressions: false,
    };
    let (mut checked, mut inlined) = (0, 0);
    for seed in 0..60u64 {
        let text = random_program(seed + 500, &shape);
        let p = Program::from_yaml(&text).unwrap();
        let a = analyse(&text);
        let mut rng = Rng::new(seed.wrapping_mul(104_729));
        let m = random_machine(&mut rng, a.domain.iter().product());
        let mut options = random_options(&mut rng, &a);
        options.space.fixed_groups = None;
        let cands = candidates(&a);
        if cands.is_empty() {
            continue;
        }
        let mut brute: Option<f64> = None;
        let mut complete = true;
        for mask in 0..(1usize << cands.len()) {
            let set: Vec<usize> = (0..cands.len())
                .filter(|b| mask & (1 << b) != 0)
                .map(|b| cands[b])
                .collect();
            let Ok(q) = inline_program(&p, &set) else {
                continue;
            };
            let qa = Analysis::new(&q).unwrap();
            match naive_best(&qa, &m, &options, 200_000) {
                Some(best) => {
                    if let Some(&t) = best.first() {
                        brute = Some(brute.map_or(t, |b: f64| b.min(t)));
                    }
                }
                None => complete = false,
            }
        }
        let choice = choose_inline(&p, &a, &m, &options.space, &InlinePolicy::Search, 1).unwrap();
        assert_eq!(choice.search, InlineSearch::Exhaustive, "seed {seed}");
        if !complete {
            continue;
        }
        checked += 1;
        match (brute, choice.with_seconds) {
            (None, None) => {}
            (Some(b), Some(t)) => {
                assert!(
                    agree(b, t),
                    "seed {seed}: search {t}, brute force {b}\n{text}"
                );
                let solved = optimize_with(
                    &choice.analysis,
                    &m,
                    &options,
                    Method::Milp(Backend::Highs),
                    &exact_options(),
                )
                .unwrap();
                assert!(
                    agree(solved.cost.total, b),
                    "seed {seed}: HiGHS {}",
                    solved.cost.total
                );
                inlined += !choice.inline.is_empty() as usize;
            }
            other => {
                panic!("seed {seed}: search and brute force disagree on feasibility: {other:?}")
            }
        }
    }
    assert!(checked >= 30, "only {checked} cases fully enumerated");
    assert!(inlined >= 5, "only {inlined} optima inline something");
}

/// The greedy inline search (more than `EXHAUSTIVE_CANDIDATES` candidates) keeps every set it
/// solved with that set's exact optimum, cheapest first; it always solves the empty set and the
/// set of every candidate, and chooses the cheapest set it solved, so it is never worse than
/// inlining nothing or everything. Checked on random programs of 8-10 stencils, each solved
/// set's recorded optimum against the DP of the rewritten program.
#[test]
fn greedy_inline_search_records_its_sets_and_tries_everything_inlined() {
    use absinthe_model::cost_model::inline_search::EXHAUSTIVE_CANDIDATES;
    use absinthe_model::cost_model::inline_search::{choose_inline, InlinePolicy, InlineSearch};
    use absinthe_model::language::inline::{candidates, inline_program};
    use absinthe_model::language::program::Program;

    let shape = RandomShape {
        min_stencils: 8,
        max_stencils: 10,
        min_domain: 2,
        max_domain: 6,
        max_offset: 1,
        rich_expressions: false,
    };
    let mut greedy = 0;
    for seed in 0..40u64 {
        let text = random_program(seed + 9_000, &shape);
        let p = Program::from_yaml(&text).unwrap();
        let a = analyse(&text);
        let cands = candidates(&a);
        if cands.len() <= EXHAUSTIVE_CANDIDATES {
            continue;
        }
        let mut rng = Rng::new(seed.wrapping_mul(7_907));
        let m = random_machine(&mut rng, a.domain.iter().product());
        let options = MilpOptions::default();
        let choice = choose_inline(&p, &a, &m, &options.space, &InlinePolicy::Search, 1).unwrap();
        assert_eq!(choice.search, InlineSearch::Greedy, "seed {seed}");
        greedy += 1;
        let optimum_of = |set: &[usize]| -> Option<f64> {
            let q = inline_program(&p, set).ok()?;
            let qa = Analysis::new(&q).unwrap();
            optimize_with(&qa, &m, &options, Method::Dp, &exact_options())
                .ok()
                .map(|o| o.cost.total)
        };
        for w in choice.tried.windows(2) {
            assert!(w[0].1 <= w[1].1, "seed {seed}: tried not cheapest first");
        }
        for (set, t) in &choice.tried {
            let expected = optimum_of(set).expect("a recorded set is feasible");
            assert!(
                agree(*t, expected),
                "seed {seed}: {set:?} recorded {t}, DP {expected}"
            );
        }
        for set in [Vec::new(), cands.clone()] {
            if let Some(t) = optimum_of(&set) {
                assert!(
                    choice.tried.iter().any(|(s, _)| *s == set),
                    "seed {seed}: {set:?} not solved"
                );
                let chosen = choice.with_seconds.expect("a feasible set exists");
                assert!(
                    chosen <= t * (1.0 + 1e-9),
                    "seed {seed}: {chosen} > {t} of {set:?}"
                );
            }
        }
        let (chosen, cheapest) = (choice.with_seconds, choice.tried.first().map(|(_, t)| *t));
        assert!(
            matches!((chosen, cheapest), (Some(c), Some(t)) if agree(c, t)) || chosen == cheapest,
            "seed {seed}: chose {chosen:?}, the cheapest solved is {cheapest:?}"
        );
    }
    assert!(
        greedy >= 10,
        "only {greedy} programs took the greedy search"
    );
}

/// A streamed group spans whole rows on a CPU (`evaluate::STREAM_TILES_X`), in every encoding:
/// with the default machine, cosmo_pgrad_256 without inlining streams tiles 2 wide along x
/// without the rule; with it the DP, the range MILP and the digits MILP all stream whole-row
/// tiles at the same cost. The digits MILP needs its own row: without it the solve fails its
/// agreement check (its configuration is infeasible under `evaluate`).
#[test]
fn streamed_groups_span_whole_rows_in_every_encoding() {
    use crate::common::{absinthe, stderr, stdout};
    let mut estimates = Vec::new();
    for args in [
        &["--solver", "dp"][..],
        &["--solver", "highs"][..],
        &["--solver", "highs", "--encoding", "digits"][..],
    ] {
        let mut all = vec![
            "solve",
            "configs/cosmo_pgrad_256.yaml",
            "--no-inline",
            "--format",
            "json",
        ];
        all.extend_from_slice(args);
        let o = absinthe(&all);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let mut streamed = 0;
        for g in v["groups"].as_array().unwrap() {
            if g["stream"] == serde_json::Value::Bool(true) {
                streamed += 1;
                assert_eq!(g["tiles"][0], 1, "{args:?}: {g}");
            }
        }
        assert!(streamed > 0, "{args:?}: nothing streams: {v}");
        estimates.push(v["estimate_seconds"].as_f64().unwrap());
    }
    for e in &estimates {
        assert!((e / estimates[0] - 1.0).abs() < 1e-3, "{estimates:?}");
    }
}

/// A program with 2-D stencils and a sweep (`cosmo_colpres`, at a small domain): the range
/// MILP with each backend and the DP find the exhaustive optimum and keep each 2-D stencil a
/// group of its own; the digits MILP refuses the sweep.
#[test]
fn two_d_stencils_stay_alone_in_every_encoding() {
    let m = default_view();
    let text = std::fs::read_to_string(crate::common::root().join("configs/cosmo_colpres.yaml"))
        .unwrap()
        .replace("domain: [64, 64, 60]", "domain: [16, 12, 6]");
    let a = analyse(&text);
    assert!(a.is_plane(1) && a.is_plane(2));
    let options = MilpOptions::default();
    let (best_config, best) = exhaustive(&a, &m, &options.space).expect("feasible");
    assert!(best_config
        .group_ranges()
        .into_iter()
        .all(|r| a.may_group(r)));
    // The program has a sweep, which the digits MILP refuses (`milp::digits_encodes`).
    let digits = MilpOptions {
        encoding: Encoding::Digits,
        ..options.clone()
    };
    let refused = solve_with("highs", &a, &m, &digits)
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("does not encode programs with sweeps"),
        "{refused}"
    );
    for (name, encoding) in [
        ("highs", Encoding::Ranges),
        ("cbc", Encoding::Ranges),
        ("dp", Encoding::Ranges),
    ] {
        let options = MilpOptions {
            encoding,
            ..options.clone()
        };
        let result = solve_with(name, &a, &m, &options).unwrap();
        let groups = &result.config.groups;
        assert!(
            agree(result.cost.total, best),
            "{name} {encoding:?}: {:e} vs exhaustive {best:e}",
            result.cost.total
        );
        assert!(
            groups[1] != groups[0] && groups[2] != groups[1] && groups[3] != groups[2],
            "{name} {encoding:?}: {groups:?}"
        );
    }
}
