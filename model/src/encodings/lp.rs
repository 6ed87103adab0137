//! A solver-neutral mixed-integer linear program: named variables with bounds and integrality,
//! linear constraints, a linear objective to minimise. `milp` builds one; the `solvers` crate
//! hands it to a backend or writes it as LP/MPS text.

use std::fmt;

/// Index of a variable in [`Milp::vars`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub usize);

#[derive(Clone, Debug, PartialEq)]
pub struct Var {
    /// Unique, made of `[A-Za-z0-9_]` (safe for LP and MPS files).
    pub name: String,
    pub lower: f64,
    /// May be `f64::INFINITY`.
    pub upper: f64,
    pub integer: bool,
}

impl Var {
    pub fn is_binary(&self) -> bool {
        self.integer && self.lower >= 0.0 && self.upper <= 1.0
    }
}

/// `Σ coef * var + constant`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct LinExpr {
    pub terms: Vec<(VarId, f64)>,
    pub constant: f64,
}

impl LinExpr {
    pub fn new() -> Self {
        LinExpr::default()
    }
    pub fn constant(c: f64) -> Self {
        LinExpr {
            terms: Vec::new(),
            constant: c,
        }
    }
    pub fn var(v: VarId) -> Self {
        LinExpr {
            terms: vec![(v, 1.0)],
            constant: 0.0,
        }
    }
    pub fn term(v: VarId, coef: f64) -> Self {
        LinExpr {
            terms: vec![(v, coef)],
            constant: 0.0,
        }
    }
    /// `self += coef * v`
    pub fn add(&mut self, v: VarId, coef: f64) -> &mut Self {
        self.terms.push((v, coef));
        self
    }
    /// `self += coef * other`
    pub fn add_expr(&mut self, other: &LinExpr, coef: f64) -> &mut Self {
        for &(v, c) in &other.terms {
            self.terms.push((v, c * coef));
        }
        self.constant += other.constant * coef;
        self
    }
    pub fn plus(mut self, other: &LinExpr, coef: f64) -> Self {
        self.add_expr(other, coef);
        self
    }
    pub fn scaled(&self, coef: f64) -> Self {
        LinExpr::new().plus(self, coef)
    }
    /// Value under an assignment.
    pub fn eval(&self, values: &[f64]) -> f64 {
        self.constant
            + self
                .terms
                .iter()
                .map(|&(v, c)| c * values[v.0])
                .sum::<f64>()
    }
    /// Merges repeated variables and drops zero coefficients.
    pub fn normalized(&self) -> LinExpr {
        let mut terms: Vec<(VarId, f64)> = self.terms.clone();
        terms.sort_by_key(|t| t.0);
        let mut out: Vec<(VarId, f64)> = Vec::with_capacity(terms.len());
        for (v, c) in terms {
            match out.last_mut() {
                Some(last) if last.0 == v => last.1 += c,
                _ => out.push((v, c)),
            }
        }
        out.retain(|t| t.1 != 0.0);
        LinExpr {
            terms: out,
            constant: self.constant,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sense {
    Le,
    Ge,
    Eq,
}

impl fmt::Display for Sense {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Sense::Le => "<=",
            Sense::Ge => ">=",
            Sense::Eq => "=",
        })
    }
}

/// `Σ coef * var  (sense)  rhs`; terms are normalized (no repeats, no zeros), no constant.
#[derive(Clone, Debug, PartialEq)]
pub struct Constraint {
    /// Unique, made of `[A-Za-z0-9_]`.
    pub name: String,
    pub terms: Vec<(VarId, f64)>,
    pub sense: Sense,
    pub rhs: f64,
}

impl Constraint {
    /// Amount by which `values` violate the constraint (0 when satisfied).
    pub fn violation(&self, values: &[f64]) -> f64 {
        let lhs: f64 = self.terms.iter().map(|&(v, c)| c * values[v.0]).sum();
        match self.sense {
            Sense::Le => (lhs - self.rhs).max(0.0),
            Sense::Ge => (self.rhs - lhs).max(0.0),
            Sense::Eq => (lhs - self.rhs).abs(),
        }
    }
}

/// Minimise `objective` subject to `constraints` and variable bounds.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Milp {
    pub name: String,
    pub vars: Vec<Var>,
    pub constraints: Vec<Constraint>,
    /// Normalized; its constant is part of the objective value.
    pub objective: LinExpr,
}

/// Sizes for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct MilpSize {
    pub variables: usize,
    pub binaries: usize,
    pub integers: usize,
    pub constraints: usize,
    pub nonzeros: usize,
}

impl Milp {
    pub fn new(name: impl Into<String>) -> Self {
        Milp {
            name: name.into(),
            ..Default::default()
        }
    }

    /// Adds a variable; `name` must be unique.
    pub fn add_var(
        &mut self,
        name: impl Into<String>,
        lower: f64,
        upper: f64,
        integer: bool,
    ) -> VarId {
        let id = VarId(self.vars.len());
        self.vars.push(Var {
            name: name.into(),
            lower,
            upper,
            integer,
        });
        id
    }

    pub fn add_binary(&mut self, name: impl Into<String>) -> VarId {
        self.add_var(name, 0.0, 1.0, true)
    }

    /// Adds `expr (sense) rhs`; the expression's constant moves to the right-hand side.
    pub fn add_constraint(
        &mut self,
        name: impl Into<String>,
        expr: &LinExpr,
        sense: Sense,
        rhs: f64,
    ) {
        let e = expr.normalized();
        self.constraints.push(Constraint {
            name: name.into(),
            terms: e.terms,
            sense,
            rhs: rhs - e.constant,
        });
    }

    /// `lhs (sense) rhs` for two expressions.
    pub fn add_relation(
        &mut self,
        name: impl Into<String>,
        lhs: &LinExpr,
        sense: Sense,
        rhs: &LinExpr,
    ) {
        let e = lhs.clone().plus(rhs, -1.0);
        self.add_constraint(name, &e, sense, 0.0);
    }

    pub fn set_objective(&mut self, objective: &LinExpr) {
        self.objective = objective.normalized();
    }

    pub fn size(&self) -> MilpSize {
        MilpSize {
            variables: self.vars.len(),
            binaries: self.vars.iter().filter(|v| v.is_binary()).count(),
            integers: self
                .vars
                .iter()
                .filter(|v| v.integer && !v.is_binary())
                .count(),
            constraints: self.constraints.len(),
            nonzeros: self.constraints.iter().map(|c| c.terms.len()).sum(),
        }
    }

    /// Largest bound or constraint violation of an assignment, and whether integers are integral
    /// within `tol`.
    pub fn max_violation(&self, values: &[f64]) -> f64 {
        let mut worst: f64 = 0.0;
        for (v, x) in self.vars.iter().zip(values) {
            worst = worst.max(v.lower - x).max(x - v.upper);
            if v.integer {
                worst = worst.max((x - x.round()).abs());
            }
        }
        for c in &self.constraints {
            worst = worst.max(c.violation(values));
        }
        worst
    }

    pub fn var_by_name(&self, name: &str) -> Option<VarId> {
        self.vars.iter().position(|v| v.name == name).map(VarId)
    }
}
