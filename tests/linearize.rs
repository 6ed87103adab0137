//! Each linearization primitive in isolation, against brute force over its whole small domain:
//! with the inputs fixed, both minimising and maximising the primitive's output must give the
//! exact nonlinear value (so the encoding pins it, whatever the objective's sign).

use absinthe_model::encodings::linearize::{
    and_not, digits_product, exact_max, gated, switched_max,
};
use absinthe_model::encodings::lp::{LinExpr, Milp, VarId};
use absinthe_solvers::{SolveOptions, Solver, Status};

fn solver() -> Box<dyn Solver> {
    absinthe_solvers::by_name("highs").unwrap()
}

/// Min and max of `out` over the MILP's feasible set.
fn range_of(m: &Milp, out: &LinExpr) -> (f64, f64) {
    let s = solver();
    let opts = SolveOptions {
        relative_gap: 0.0,
        ..SolveOptions::default()
    };
    let mut lo = m.clone();
    lo.set_objective(out);
    let mut hi = m.clone();
    hi.set_objective(&out.scaled(-1.0));
    let a = s.solve(&lo, &opts).unwrap();
    let b = s.solve(&hi, &opts).unwrap();
    assert_eq!(a.status, Status::Optimal);
    assert_eq!(b.status, Status::Optimal);
    (a.objective, -b.objective)
}

fn fixed(m: &mut Milp, name: &str, value: f64, integer: bool) -> VarId {
    m.add_var(name, value, value, integer)
}

#[test]
fn digits_product_is_exact() {
    let y_max = 5.0;
    for nbits in 1..=3usize {
        for n in 0..(1usize << nbits) {
            for y in [0.0, 1.0, 2.5, 5.0] {
                let mut m = Milp::new("t");
                let bits: Vec<VarId> = (0..nbits)
                    .map(|k| fixed(&mut m, &format!("b{k}"), ((n >> k) & 1) as f64, true))
                    .collect();
                let yv = fixed(&mut m, "y", y, false);
                let p = digits_product(&mut m, &bits, &LinExpr::var(yv), y_max, "p");
                let (lo, hi) = range_of(&m, &p);
                let want = n as f64 * y;
                assert!(
                    (lo - want).abs() < 1e-9 && (hi - want).abs() < 1e-9,
                    "{n} * {y}: [{lo}, {hi}]"
                );
            }
        }
    }
}

#[test]
fn digits_product_with_too_small_bound_is_not_exact() {
    // The bound must be a true bound: with y_max below y the product is cut off. This shows the
    // brute-force check above can fail.
    let mut m = Milp::new("t");
    let bits = vec![
        fixed(&mut m, "b0", 1.0, true),
        fixed(&mut m, "b1", 1.0, true),
    ];
    let yv = fixed(&mut m, "y", 4.0, false);
    let p = digits_product(&mut m, &bits, &LinExpr::var(yv), 2.0, "p");
    let mut hi = m.clone();
    hi.set_objective(&p.scaled(-1.0));
    let r = solver().solve(&hi, &SolveOptions::default()).unwrap();
    // Either no assignment is left, or the product cannot reach 3 * 4.
    assert!(
        r.status == Status::Infeasible || -r.objective < 12.0 - 1e-6,
        "3 * 4 should not be representable with y_max = 2: {:?} {}",
        r.status,
        -r.objective
    );
}

#[test]
fn exact_max_is_exact() {
    let values = [0.0, 1.0, 2.0, 3.5];
    for &a in &values {
        for &b in &values {
            let mut m = Milp::new("t");
            let av = fixed(&mut m, "a", a, false);
            let bv = fixed(&mut m, "b", b, false);
            let u = exact_max(&mut m, &LinExpr::var(av), &LinExpr::var(bv), 3.5, "u");
            let (lo, hi) = range_of(&m, &u);
            let want = a.max(b);
            assert!(
                (lo - want).abs() < 1e-9 && (hi - want).abs() < 1e-9,
                "max({a}, {b}): [{lo}, {hi}]"
            );
        }
    }
}

#[test]
fn gated_is_exact() {
    for flag in [0.0, 1.0] {
        for x in [0.0, 0.5, 2.0, 4.0] {
            let mut m = Milp::new("t");
            let f = fixed(&mut m, "f", flag, true);
            let xv = fixed(&mut m, "x", x, false);
            let v = gated(&mut m, &LinExpr::var(xv), &LinExpr::var(f), 4.0, "v");
            let (lo, hi) = range_of(&m, &v);
            assert!((lo - flag * x).abs() < 1e-9 && (hi - flag * x).abs() < 1e-9);
        }
    }
}

#[test]
fn same_group_chain_is_exact() {
    // same(0, 3) = no cut among cut_0, cut_1, cut_2, built as the MILP builds it.
    for mask in 0..8usize {
        let mut m = Milp::new("t");
        let cuts: Vec<VarId> = (0..3)
            .map(|k| fixed(&mut m, &format!("c{k}"), ((mask >> k) & 1) as f64, true))
            .collect();
        let mut same = LinExpr::constant(1.0).plus(&LinExpr::var(cuts[0]), -1.0);
        for (k, &c) in cuts.iter().enumerate().skip(1) {
            same = and_not(&mut m, &same, c, &format!("s{k}"));
        }
        let (lo, hi) = range_of(&m, &same);
        let want = (mask == 0) as u8 as f64;
        assert!(
            (lo - want).abs() < 1e-9 && (hi - want).abs() < 1e-9,
            "mask {mask}: [{lo}, {hi}]"
        );
    }
}

#[test]
fn switched_max_is_exact() {
    // max(0, s1 * t1, s2 * t2) over switches and term values.
    for s1 in [0.0, 1.0] {
        for s2 in [0.0, 1.0] {
            for (t1, t2) in [(0.0, 0.0), (1.0, 3.0), (3.0, 1.0), (2.0, 2.0)] {
                let mut m = Milp::new("t");
                let sw1 = fixed(&mut m, "s1", s1, true);
                let sw2 = fixed(&mut m, "s2", s2, true);
                let a = fixed(&mut m, "a", t1, false);
                let b = fixed(&mut m, "b", t2, false);
                // terms bounded by 3 through their variables' bounds
                m.vars[a.0].upper = t1;
                let terms = vec![
                    (LinExpr::var(a), LinExpr::var(sw1)),
                    (LinExpr::var(b), LinExpr::var(sw2)),
                ];
                let e = switched_max(&mut m, &terms, 3.0, true, "e");
                let (lo, hi) = range_of(&m, &e);
                let want = (s1 * t1).max(s2 * t2);
                assert!(
                    (lo - want).abs() < 1e-9 && (hi - want).abs() < 1e-9,
                    "{s1} {t1} {s2} {t2}: [{lo}, {hi}]"
                );
                // The single-term form too.
                let mut m = Milp::new("t");
                let sw = fixed(&mut m, "s", s1, true);
                let a = fixed(&mut m, "a", t1, false);
                let e = switched_max(
                    &mut m,
                    &[(LinExpr::var(a), LinExpr::var(sw))],
                    3.0,
                    true,
                    "e",
                );
                let (lo, hi) = range_of(&m, &e);
                assert!((lo - s1 * t1).abs() < 1e-9 && (hi - s1 * t1).abs() < 1e-9);
            }
        }
    }
}
