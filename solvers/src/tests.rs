//! Every backend against optima computed by hand or by enumeration.

use absinthe_model::encodings::lp::{LinExpr, Milp, Sense, VarId};

use crate::testing::{expr, random_milp, Lcg};
use crate::{available, by_name, relative_gap, MilpSolution, SolveOptions, Solver, Status};

/// The MILP backends. Z3, an SMT optimiser without a relative gap whose time-limited answers
/// are unproven incumbents, has its own tests (tests/verify.rs).
/// Every backend compiled in, Z3 included: the conformance suite runs on each.
fn backends() -> Vec<Box<dyn Solver>> {
    let names: Vec<&str> = available();
    assert!(!names.is_empty(), "tests need at least one backend");
    names.into_iter().map(|n| by_name(n).unwrap()).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

/// An optimal solution with the expected objective, feasible values that reproduce it, and a
/// consistent bound and gap.
fn assert_optimal(milp: &Milp, solution: &MilpSolution, expected: f64) {
    let who = format!("{} on {}", solution.solver, milp.name);
    assert_eq!(solution.status, Status::Optimal, "{who}: {solution:?}");
    assert!(
        close(solution.objective, expected),
        "{who}: objective {} != {expected}",
        solution.objective
    );
    assert_incumbent(milp, solution);
    assert!(
        solution.gap <= 1e-4 + 1e-9,
        "{who}: gap {} above the requested 1e-4",
        solution.gap
    );
}

/// Values present, feasible, and reproducing the reported objective; bound below objective.
fn assert_incumbent(milp: &Milp, solution: &MilpSolution) {
    let who = format!("{} on {}", solution.solver, milp.name);
    assert_eq!(solution.values.len(), milp.vars.len(), "{who}");
    let violation = milp.max_violation(&solution.values);
    assert!(violation <= 1e-6, "{who}: violation {violation}");
    let evaluated = milp.objective.eval(&solution.values);
    assert!(
        close(evaluated, solution.objective),
        "{who}: values evaluate to {evaluated}, reported {}",
        solution.objective
    );
    assert!(
        solution.best_bound <= solution.objective + 1e-6 * solution.objective.abs().max(1.0),
        "{who}: bound {} above objective {}",
        solution.best_bound,
        solution.objective
    );
    let expected_gap = relative_gap(solution.objective, solution.best_bound);
    assert!(
        solution.gap == expected_gap || (solution.gap - expected_gap).abs() <= 1e-12,
        "{who}: gap {} inconsistent",
        solution.gap
    );
    assert!(
        solution.seconds >= 0.0 && solution.seconds.is_finite(),
        "{who}"
    );
}

/// Enumerates every integer point of a pure integer MILP with finite bounds.
fn brute_force(milp: &Milp) -> Option<f64> {
    let ranges: Vec<(i64, i64)> = milp
        .vars
        .iter()
        .map(|v| {
            assert!(v.integer && v.lower.is_finite() && v.upper.is_finite());
            (v.lower.ceil() as i64, v.upper.floor() as i64)
        })
        .collect();
    let mut point: Vec<i64> = ranges.iter().map(|r| r.0).collect();
    let mut best: Option<f64> = None;
    loop {
        let values: Vec<f64> = point.iter().map(|&x| x as f64).collect();
        if milp
            .constraints
            .iter()
            .all(|c| c.violation(&values) <= 1e-9)
        {
            let objective = milp.objective.eval(&values);
            best = Some(best.map_or(objective, |b: f64| b.min(objective)));
        }
        // Next point, odometer style.
        let mut i = 0;
        loop {
            if i == point.len() {
                return best;
            }
            if point[i] < ranges[i].1 {
                point[i] += 1;
                break;
            }
            point[i] = ranges[i].0;
            i += 1;
        }
    }
}

/// Maximise value under one weight capacity (as a minimisation of the negated value).
fn knapsack(constant: f64) -> Milp {
    let values = [10.0, 13.0, 7.0, 8.0, 4.0, 9.0, 6.0];
    let weights = [5.0, 6.0, 3.0, 4.0, 2.0, 5.0, 3.0];
    let mut milp = Milp::new("knapsack");
    let items: Vec<VarId> = (0..values.len())
        .map(|i| milp.add_binary(format!("take_{i}")))
        .collect();
    let weight: Vec<(VarId, f64)> = items.iter().copied().zip(weights).collect();
    milp.add_constraint("capacity", &expr(&weight), Sense::Le, 14.0);
    let mut objective = expr(
        &items
            .iter()
            .copied()
            .zip(values.map(|v| -v))
            .collect::<Vec<_>>(),
    );
    objective.constant = constant;
    milp.set_objective(&objective);
    milp
}

#[test]
fn knapsack_matches_enumeration() {
    let milp = knapsack(0.0);
    let expected = brute_force(&milp).unwrap();
    // By hand: 13 + 7 + 10 (weights 6 + 3 + 5) or 13 + 7 + 4 + 6 (6 + 3 + 2 + 3).
    assert_eq!(expected, -30.0);
    for solver in backends() {
        let solution = solver.solve(&milp, &SolveOptions::default()).unwrap();
        assert_optimal(&milp, &solution, expected);
    }
}

/// A warm start goes only to the backends that take one (HiGHS; not CBC or Z3). One that takes
/// it ends at the optimum from a poor feasible point, and with no time to search keeps the
/// optimal point it was given.
#[test]
fn warm_starts_go_only_to_backends_that_take_them() {
    for solver in backends() {
        let takes = solver.with_initial_solution().is_some();
        assert_eq!(takes, solver.name() == "highs", "{}", solver.name());
    }
    let milp = knapsack(0.0);
    let optimum = by_name("highs")
        .unwrap()
        .solve(&milp, &SolveOptions::default());
    for solver in backends() {
        let Some(warm) = solver.with_initial_solution() else {
            continue;
        };
        let nothing_taken = vec![0.0; milp.vars.len()];
        let solution = warm
            .solve_from(&milp, &SolveOptions::default(), &nothing_taken)
            .unwrap();
        assert_optimal(&milp, &solution, -30.0);
        let no_time = SolveOptions {
            time_limit: Some(0.0),
            ..SolveOptions::default()
        };
        let optimum = optimum.as_ref().unwrap();
        let kept = warm.solve_from(&milp, &no_time, &optimum.values).unwrap();
        assert!(kept.status.has_values(), "{kept:?}");
        assert_incumbent(&milp, &kept);
        assert_eq!(kept.objective, -30.0, "{kept:?}");
    }
}

#[test]
fn objective_constant_is_part_of_objective_and_bound() {
    let milp = knapsack(100.5);
    for solver in backends() {
        let solution = solver.solve(&milp, &SolveOptions::default()).unwrap();
        assert_optimal(&milp, &solution, 70.5);
        // Proven within the default relative gap 1e-4 (Z3 proves exactly that much).
        assert!(
            solution.best_bound <= 70.5 + 1e-9 && solution.best_bound >= 70.5 * (1.0 - 1e-4) - 1e-9,
            "{solution:?}"
        );
    }
    // A pure LP with a constant, and an objective that is only a constant.
    let mut lp = Milp::new("lp_constant");
    let x = lp.add_var("x", 1.0, 4.0, false);
    lp.set_objective(&LinExpr::term(x, 1.0).plus(&LinExpr::constant(2.5), 1.0));
    let mut constant_only = Milp::new("constant_only");
    let y = constant_only.add_var("y", 0.0, 3.0, true);
    constant_only.add_constraint("y_at_least_two", &LinExpr::var(y), Sense::Ge, 2.0);
    constant_only.set_objective(&LinExpr::constant(-7.0));
    for solver in backends() {
        let solution = solver.solve(&lp, &SolveOptions::default()).unwrap();
        assert_optimal(&lp, &solution, 3.5);
        let solution = solver
            .solve(&constant_only, &SolveOptions::default())
            .unwrap();
        assert_optimal(&constant_only, &solution, -7.0);
    }
}

/// `3x + 2y - z = 7`, `x + y + z <= 12`, `y - w >= 1.5` with x, y, z integer in [0, 10] and w
/// continuous in [-5, 5]; minimise `2x + 3y + z - 4w`.
fn equality_and_general_integers() -> Milp {
    let mut milp = Milp::new("equality_general");
    let x = milp.add_var("x", 0.0, 10.0, true);
    let y = milp.add_var("y", 0.0, 10.0, true);
    let z = milp.add_var("z", 0.0, 10.0, true);
    let w = milp.add_var("w", -5.0, 5.0, false);
    milp.add_constraint(
        "balance",
        &expr(&[(x, 3.0), (y, 2.0), (z, -1.0)]),
        Sense::Eq,
        7.0,
    );
    milp.add_constraint(
        "total",
        &expr(&[(x, 1.0), (y, 1.0), (z, 1.0)]),
        Sense::Le,
        12.0,
    );
    milp.add_constraint("slack", &expr(&[(y, 1.0), (w, -1.0)]), Sense::Ge, 1.5);
    milp.set_objective(&expr(&[(x, 2.0), (y, 3.0), (z, 1.0), (w, -4.0)]));
    milp
}

#[test]
fn equality_and_general_integers_match_enumeration() {
    let milp = equality_and_general_integers();
    // Enumerate the integers; the best w is as large as allowed: min(5, y - 1.5).
    let mut expected = f64::INFINITY;
    for x in 0..=10 {
        for y in 0..=10 {
            for z in 0..=10 {
                let (x, y, z) = (x as f64, y as f64, z as f64);
                let w = (y - 1.5).min(5.0);
                if 3.0 * x + 2.0 * y - z == 7.0 && x + y + z <= 12.0 && w >= -5.0 {
                    expected = expected.min(2.0 * x + 3.0 * y + z - 4.0 * w);
                }
            }
        }
    }
    // By hand: x = 0, y = 4, z = 1, w = 2.5.
    assert_eq!(expected, 3.0);
    for solver in backends() {
        let solution = solver.solve(&milp, &SolveOptions::default()).unwrap();
        assert_optimal(&milp, &solution, expected);
        let rounded: Vec<f64> = solution.values.iter().map(|v| v.round()).collect();
        assert_eq!(&rounded[..3], &[0.0, 4.0, 1.0], "{}", solver.name());
        assert!(close(solution.values[3], 2.5), "{}", solver.name());
    }
}

#[test]
fn free_variables() {
    // x free and continuous, y integer in [-2, 5], z a free integer:
    // x - 2y >= -7.3, z - x >= 0.2; minimise x + 0.5y + z.
    // Optimum: y = -2, x = -11.3, z = ceil(-11.1) = -11, objective -23.3.
    let mut milp = Milp::new("free");
    let x = milp.add_var("x", f64::NEG_INFINITY, f64::INFINITY, false);
    let y = milp.add_var("y", -2.0, 5.0, true);
    let z = milp.add_var("z", f64::NEG_INFINITY, f64::INFINITY, true);
    milp.add_constraint("x_floor", &expr(&[(x, 1.0), (y, -2.0)]), Sense::Ge, -7.3);
    milp.add_constraint("z_above", &expr(&[(z, 1.0), (x, -1.0)]), Sense::Ge, 0.2);
    milp.set_objective(&expr(&[(x, 1.0), (y, 0.5), (z, 1.0)]));
    for solver in backends() {
        let solution = solver.solve(&milp, &SolveOptions::default()).unwrap();
        assert_optimal(&milp, &solution, -23.3);
    }
}

#[test]
fn infeasible_problems() {
    // The relaxation is infeasible.
    let mut relaxation = Milp::new("infeasible_relaxation");
    let x = relaxation.add_var("x", 0.0, 10.0, true);
    let y = relaxation.add_var("y", 0.0, 10.0, false);
    relaxation.add_constraint("low", &expr(&[(x, 1.0), (y, 1.0)]), Sense::Ge, 3.0);
    relaxation.add_constraint("high", &expr(&[(x, 1.0), (y, 1.0)]), Sense::Le, 2.0);
    relaxation.set_objective(&expr(&[(x, 1.0)]));
    // The relaxation is feasible (x = 0.5) but no integer is.
    let mut parity = Milp::new("infeasible_parity");
    let x = parity.add_var("x", 0.0, 10.0, true);
    parity.add_constraint("half", &expr(&[(x, 2.0)]), Sense::Eq, 1.0);
    parity.set_objective(&expr(&[(x, 1.0)]));
    // A pure LP.
    let mut lp = relaxation.clone();
    lp.name = "infeasible_lp".into();
    lp.vars[0].integer = false;
    for solver in backends() {
        for milp in [&relaxation, &parity, &lp] {
            let solution = solver.solve(milp, &SolveOptions::default()).unwrap();
            assert_eq!(
                solution.status,
                Status::Infeasible,
                "{} on {}",
                solver.name(),
                milp.name
            );
            assert!(solution.values.is_empty());
            assert_eq!(solution.objective, f64::INFINITY);
            assert_eq!(solution.gap, f64::INFINITY);
        }
    }
}

#[test]
fn unbounded_problems() {
    // x - y <= 2 with x, y >= 0 integer; minimise -x - y.
    let mut milp = Milp::new("unbounded");
    let x = milp.add_var("x", 0.0, f64::INFINITY, true);
    let y = milp.add_var("y", 0.0, f64::INFINITY, true);
    milp.add_constraint("spread", &expr(&[(x, 1.0), (y, -1.0)]), Sense::Le, 2.0);
    milp.set_objective(&expr(&[(x, -1.0), (y, -1.0)]));
    let mut lp = milp.clone();
    lp.name = "unbounded_lp".into();
    for var in &mut lp.vars {
        var.integer = false;
    }
    // A free variable with nothing holding it.
    let mut free = Milp::new("unbounded_free");
    let f = free.add_var("f", f64::NEG_INFINITY, f64::INFINITY, false);
    let b = free.add_binary("b");
    free.add_constraint("link", &expr(&[(f, 1.0), (b, 1.0)]), Sense::Le, 4.0);
    free.set_objective(&expr(&[(f, 1.0), (b, 1.0)]));
    // Z3 is left out: its `Optimize` (4.8.12) reports no unboundedness, and the backend's
    // search for a better point would run until a time limit (a known limitation).
    for solver in backends().into_iter().filter(|s| s.name() != "z3") {
        for milp in [&milp, &lp, &free] {
            let solution = solver.solve(milp, &SolveOptions::default()).unwrap();
            assert_eq!(
                solution.status,
                Status::Unbounded,
                "{} on {}",
                solver.name(),
                milp.name
            );
            assert!(solution.values.is_empty());
            assert_eq!(solution.objective, f64::NEG_INFINITY);
        }
    }
}

/// A multi-dimensional knapsack with `n` items and 6 capacities, generated from `seed`.
fn hard_knapsack(n: usize, seed: u64) -> Milp {
    let mut rng = Lcg::new(seed);
    let mut milp = Milp::new(format!("knapsack_{n}_{seed}"));
    let items: Vec<VarId> = (0..n)
        .map(|i| milp.add_binary(format!("item_{i}")))
        .collect();
    for k in 0..6 {
        let weights: Vec<(VarId, f64)> = items
            .iter()
            .map(|&v| (v, rng.int(10, 100) as f64))
            .collect();
        let capacity = weights.iter().map(|w| w.1).sum::<f64>() / 2.0;
        milp.add_constraint(
            format!("capacity_{k}"),
            &expr(&weights),
            Sense::Le,
            capacity,
        );
    }
    let value: Vec<(VarId, f64)> = items
        .iter()
        .map(|&v| (v, -(rng.int(10, 100) as f64)))
        .collect();
    milp.set_objective(&expr(&value));
    milp
}

#[test]
fn time_limit_reports_incumbent_or_nothing() {
    let milp = hard_knapsack(120, 7);
    for limit in [0.01, 0.3] {
        let options = SolveOptions {
            time_limit: Some(limit),
            relative_gap: 0.0,
            ..SolveOptions::default()
        };
        for solver in backends() {
            let solution = solver.solve(&milp, &options).unwrap();
            match solution.status {
                Status::Optimal | Status::TimeLimit => assert_incumbent(&milp, &solution),
                // Only plausible at the tiniest limit, before any heuristic ran.
                Status::NoSolution if limit < 0.1 => {
                    assert!(solution.values.is_empty());
                    assert_eq!(solution.objective, f64::INFINITY);
                }
                other => panic!("{} at {limit}s: {other}", solver.name()),
            }
            // Limits are approximate; this only catches a limit that was ignored.
            assert!(
                solution.seconds < 20.0,
                "{}: {}s",
                solver.name(),
                solution.seconds
            );
        }
    }
}

#[test]
fn random_integer_programs_match_enumeration() {
    let solvers = backends();
    let (mut feasible, mut infeasible) = (0, 0);
    for seed in 0..50 {
        let milp = random_milp(seed);
        let expected = brute_force(&milp);
        for solver in &solvers {
            let solution = solver.solve(&milp, &SolveOptions::default()).unwrap();
            match expected {
                Some(optimum) => assert_optimal(&milp, &solution, optimum),
                None => assert_eq!(
                    solution.status,
                    Status::Infeasible,
                    "{} on {}: {solution:?}",
                    solver.name(),
                    milp.name
                ),
            }
        }
        match expected {
            Some(_) => feasible += 1,
            None => infeasible += 1,
        }
    }
    // The generator exercises both outcomes.
    assert!(
        feasible >= 15 && infeasible >= 5,
        "{feasible} feasible, {infeasible} infeasible"
    );
}

#[test]
fn solves_in_parallel_threads() {
    // CBC keeps global state; its backend serialises itself, HiGHS runs concurrently.
    let handles: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                for seed in 0..3 {
                    let milp = random_milp(100 + t * 10 + seed);
                    let expected = brute_force(&milp);
                    for solver in backends() {
                        let solution = solver.solve(&milp, &SolveOptions::default()).unwrap();
                        match expected {
                            Some(optimum) => assert_optimal(&milp, &solution, optimum),
                            None => assert_eq!(solution.status, Status::Infeasible),
                        }
                    }
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().expect("a solving thread panicked");
    }
}

#[test]
fn options_are_accepted() {
    let milp = equality_and_general_integers();
    let options = SolveOptions {
        relative_gap: 0.0,
        time_limit: Some(60.0),
        threads: Some(2),
        verbose: false,
    };
    for solver in backends() {
        let solution = solver.solve(&milp, &options).unwrap();
        assert_optimal(&milp, &solution, 3.0);
        assert_eq!(solution.gap, 0.0);
    }
    let bad = SolveOptions {
        relative_gap: f64::NAN,
        ..SolveOptions::default()
    };
    for solver in backends() {
        let error = solver.solve(&milp, &bad).unwrap_err();
        assert!(error.to_string().contains("relative gap"), "{error}");
    }
}

#[test]
fn malformed_models_are_errors() {
    let mut milp = knapsack(0.0);
    milp.constraints[0].terms[0].1 = f64::NAN;
    let mut inverted = knapsack(0.0);
    inverted.vars[2].lower = 2.0;
    for solver in backends() {
        let error = solver.solve(&milp, &SolveOptions::default()).unwrap_err();
        assert!(error.to_string().contains("capacity"), "{error}");
        let error = solver
            .solve(&inverted, &SolveOptions::default())
            .unwrap_err();
        assert!(error.to_string().contains("take_2"), "{error}");
    }
}

#[test]
fn models_without_variables() {
    let mut trivial = Milp::new("empty");
    trivial.set_objective(&LinExpr::constant(4.0));
    let mut impossible = trivial.clone();
    impossible.add_constraint("never", &LinExpr::new(), Sense::Ge, 1.0);
    for solver in backends() {
        let solution = solver.solve(&trivial, &SolveOptions::default()).unwrap();
        assert_eq!(
            (solution.status, solution.objective),
            (Status::Optimal, 4.0)
        );
        let solution = solver.solve(&impossible, &SolveOptions::default()).unwrap();
        assert_eq!(solution.status, Status::Infeasible);
    }
}

/// `--solver` values parse to methods, case-insensitively; an unknown one lists every method
/// of this build, the DP first.
#[test]
fn methods_parse_from_their_names() {
    use crate::method::{Backend, Method};
    assert_eq!("dp".parse::<Method>().unwrap(), Method::Dp);
    assert_eq!(" DP ".parse::<Method>().unwrap(), Method::Dp);
    for m in Method::available() {
        assert_eq!(m.name().parse::<Method>().unwrap(), m);
        assert_eq!(m.to_string().to_uppercase().parse::<Method>().unwrap(), m);
    }
    assert_eq!(Method::available()[0], Method::Dp);
    let error = "gurobi".parse::<Method>().unwrap_err().to_string();
    assert!(
        error.contains("unknown solver `gurobi`; available: dp"),
        "{error}"
    );
    assert!("dp".parse::<Backend>().is_err(), "the DP is no LP backend");
    #[cfg(feature = "highs")]
    assert_eq!("highs".parse::<Backend>().unwrap(), Backend::Highs);
}

#[test]
fn backends_by_name() {
    for name in available() {
        assert_eq!(by_name(name).unwrap().name(), name);
        assert_eq!(by_name(&name.to_uppercase()).unwrap().name(), name);
    }
    let error = by_name("gurobi").err().unwrap().to_string();
    assert!(error.contains("unknown solver `gurobi`"), "{error}");
    for name in available() {
        assert!(error.contains(name), "{error}");
    }
    #[cfg(not(feature = "cbc"))]
    assert!(by_name("cbc")
        .err()
        .unwrap()
        .to_string()
        .contains("feature `cbc`"));
    #[cfg(not(feature = "highs"))]
    assert!(by_name("highs")
        .err()
        .unwrap()
        .to_string()
        .contains("feature `highs`"));
}

#[test]
fn status_words() {
    let all = [
        (Status::Optimal, "optimal"),
        (Status::TimeLimit, "time_limit"),
        (Status::NoSolution, "no_solution"),
        (Status::Infeasible, "infeasible"),
        (Status::Unbounded, "unbounded"),
    ];
    for (status, word) in all {
        assert_eq!(status.to_string(), word);
        assert_eq!(
            serde_json::to_string(&status).unwrap(),
            format!("\"{word}\"")
        );
    }
    assert_eq!(relative_gap(100.0, 99.0), 0.01);
    assert_eq!(relative_gap(-5.0, -5.0), 0.0);
    assert_eq!(relative_gap(0.0, -1e-12), 1e-3);
    assert_eq!(relative_gap(3.0, f64::NEG_INFINITY), f64::INFINITY);
}

/// The written LP and MPS files, read back by the solvers' own readers, have the same optimum
/// as the MILP.
mod files_read_by_solvers {
    use std::path::PathBuf;

    use absinthe_model::encodings::lp::Milp;

    use super::{brute_force, close, equality_and_general_integers, knapsack, random_milp};
    use crate::write_mps;

    /// Instances with known optima (`None`: infeasible).
    fn instances() -> Vec<(Milp, Option<f64>)> {
        let mut instances = vec![
            (knapsack(100.5), Some(70.5)),
            (equality_and_general_integers(), Some(3.0)),
        ];
        for seed in 0..20 {
            let milp = random_milp(seed);
            let optimum = brute_force(&milp);
            instances.push((milp, optimum));
        }
        instances
    }

    /// Writes `milp` with `writer` to a file unique to this process and `reader`.
    fn written(
        milp: &Milp,
        reader: &str,
        extension: &str,
        writer: fn(&Milp, &mut std::fs::File) -> std::io::Result<()>,
    ) -> PathBuf {
        let path = std::env::temp_dir().join(format!(
            "absinthe_solvers_{}_{reader}_{}.{extension}",
            std::process::id(),
            milp.name
        ));
        let mut file = std::fs::File::create(&path).unwrap();
        writer(milp, &mut file).unwrap();
        path
    }

    #[cfg(feature = "highs")]
    fn lp_file(milp: &Milp, reader: &str) -> PathBuf {
        written(milp, reader, "lp", crate::write_lp)
    }

    fn mps_file(milp: &Milp, reader: &str) -> PathBuf {
        written(milp, reader, "mps", write_mps)
    }

    #[cfg(feature = "highs")]
    #[test]
    fn highs_reads_lp_and_mps() {
        use highs::{ColProblem, HighsModelStatus, Sense};
        use std::ffi::{c_char, c_void, CString};

        // From HiGHS's C API, which the `highs` crate links but does not wrap. HighsInt is
        // 32 bits (HiGHS is built without HIGHSINT64); it returns -1 on error.
        extern "C" {
            fn Highs_readModel(highs: *mut c_void, filename: *const c_char) -> i32;
        }

        for (milp, optimum) in instances() {
            for path in [lp_file(&milp, "highs"), mps_file(&milp, "highs")] {
                let mut model = ColProblem::new().optimise(Sense::Minimise);
                model.make_quiet();
                let name = CString::new(path.to_str().unwrap()).unwrap();
                // SAFETY: a live HiGHS instance and a NUL-terminated path.
                let status = unsafe { Highs_readModel(model.as_mut_ptr(), name.as_ptr()) };
                assert_eq!(status, 0, "HiGHS could not read {}", path.display());
                let solved = model.try_solve().unwrap();
                match optimum {
                    Some(optimum) => {
                        assert_eq!(solved.status(), HighsModelStatus::Optimal, "{path:?}");
                        assert!(
                            close(solved.objective_value(), optimum),
                            "{path:?}: {} != {optimum}",
                            solved.objective_value()
                        );
                    }
                    None => assert_eq!(solved.status(), HighsModelStatus::Infeasible, "{path:?}"),
                }
                std::fs::remove_file(&path).unwrap();
            }
        }
    }

    #[cfg(feature = "cbc")]
    #[test]
    fn cbc_reads_mps() {
        use coin_cbc::raw::Model;
        use std::ffi::CString;

        for (milp, optimum) in instances() {
            let path = mps_file(&milp, "cbc");
            let _cbc = crate::cbc::CBC.lock().unwrap_or_else(|e| e.into_inner());
            let mut model = Model::new();
            model.set_log_level(0);
            model.set_parameter(c"log", c"0");
            model.set_parameter(c"slogLevel", c"0");
            model.read_mps(&CString::new(path.to_str().unwrap()).unwrap());
            assert_eq!(model.num_cols(), milp.vars.len(), "{path:?}");
            assert_eq!(model.num_rows(), milp.constraints.len(), "{path:?}");
            for (i, var) in milp.vars.iter().enumerate() {
                assert_eq!(model.is_integer(i), var.integer, "{path:?}");
                assert_eq!(model.col_lower()[i], var.lower, "{path:?}");
            }
            model.solve();
            match optimum {
                Some(optimum) => {
                    assert!(model.is_proven_optimal(), "{path:?}");
                    let values = model.col_solution().to_vec();
                    assert!(close(milp.objective.eval(&values), optimum), "{path:?}");
                }
                None => assert!(model.is_proven_infeasible(), "{path:?}"),
            }
            std::fs::remove_file(&path).unwrap();
        }
    }
}

/// The model crate checks a solution file's `solver.status` against its own list: it must be
/// exactly the statuses `solve` writes.
#[test]
fn solution_files_accept_every_status_solve_writes() {
    use absinthe_model::output::solution::Solution;
    let all = [
        Status::Optimal,
        Status::TimeLimit,
        Status::NoSolution,
        Status::Infeasible,
        Status::Unbounded,
    ];
    // A status added to the enum fails to compile here until it is listed above.
    for s in all {
        match s {
            Status::Optimal
            | Status::TimeLimit
            | Status::NoSolution
            | Status::Infeasible
            | Status::Unbounded => {}
        }
    }
    let written: Vec<String> = all.iter().map(|s| s.to_string()).collect();
    assert_eq!(written, Solution::STATUSES);
}
