//! Instances shared by the crate's tests: a seeded generator and random small MILPs.

use absinthe_model::encodings::lp::{LinExpr, Milp, Sense, VarId};

/// A tiny linear congruential generator (Knuth's MMIX constants): seeded, reproducible.
pub(crate) struct Lcg(u64);

impl Lcg {
    pub(crate) fn new(seed: u64) -> Self {
        Lcg(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1))
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    /// Uniform in `low..=high`.
    pub(crate) fn int(&mut self, low: i64, high: i64) -> i64 {
        low + (self.next() % (high - low + 1) as u64) as i64
    }
}

pub(crate) fn expr(terms: &[(VarId, f64)]) -> LinExpr {
    LinExpr {
        terms: terms.to_vec(),
        constant: 0.0,
    }
}

/// Six integers in [0, 3], four random constraints, a random objective (halves), generated
/// from `seed`; about a third are infeasible.
pub(crate) fn random_milp(seed: u64) -> Milp {
    let mut rng = Lcg::new(seed);
    let mut milp = Milp::new(format!("random_{seed}"));
    let vars: Vec<VarId> = (0..6)
        .map(|i| milp.add_var(format!("x{i}"), 0.0, 3.0, true))
        .collect();
    for k in 0..4 {
        let terms: Vec<(VarId, f64)> = vars
            .iter()
            .map(|&v| (v, rng.int(-5, 5) as f64))
            .filter(|t| t.1 != 0.0)
            .collect();
        let sense = match rng.int(0, 7) {
            0 => Sense::Eq,
            1..=4 => Sense::Le,
            _ => Sense::Ge,
        };
        let rhs = rng.int(-6, 12) as f64;
        milp.add_constraint(format!("c{k}"), &expr(&terms), sense, rhs);
    }
    let mut objective = expr(
        &vars
            .iter()
            .map(|&v| (v, rng.int(-10, 10) as f64 / 2.0))
            .collect::<Vec<_>>(),
    );
    objective.constant = rng.int(-3, 3) as f64 * 0.25;
    milp.set_objective(&objective);
    milp
}
