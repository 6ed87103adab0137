//! The linearization primitives of the digits MILP (docs/MODEL.md, "Encodings"), each exact
//! over its whole domain and tested in isolation against brute force. All take the MILP being
//! built and return the linear expression standing for the nonlinear value.

use crate::encodings::lp::{LinExpr, Milp, Sense, VarId};

/// Largest value `e` can take given its variables' bounds (every variable must be bounded).
/// The MILP keeps every linearized quantity integer-valued with integer coefficients, so this
/// sum is exact in f64 and the bound is valid in an exact (SMT) reading too.
pub fn upper_bound(milp: &Milp, e: &LinExpr) -> f64 {
    let s = e.constant
        + e.terms
            .iter()
            .map(|&(v, c)| {
                let var = &milp.vars[v.0];
                (c * var.lower).max(c * var.upper)
            })
            .sum::<f64>();
    s
}

/// `prev AND NOT cut` for 0/1 `prev` and binary `cut`, by its convex hull (three rows). With it
/// `same(j, i) = same(j, i-1) AND NOT cut_{i-1}` is exact for contiguous groups.
pub fn and_not(milp: &mut Milp, prev: &LinExpr, cut: VarId, name: &str) -> LinExpr {
    let s = milp.add_var(name, 0.0, 1.0, false);
    let sv = LinExpr::var(s);
    let not_cut = LinExpr::constant(1.0).plus(&LinExpr::var(cut), -1.0);
    milp.add_relation(format!("{name}_prev"), &sv, Sense::Le, prev);
    milp.add_relation(format!("{name}_cut"), &sv, Sense::Le, &not_cut);
    let both = prev.clone().plus(&LinExpr::var(cut), -1.0);
    milp.add_relation(format!("{name}_both"), &sv, Sense::Ge, &both);
    sv
}

/// `n * y` where `n = Σ_k 2^k bits_k` and `0 <= y <= y_max`: `Σ_k 2^k z_k` with
/// `0 <= z_k <= y`, `z_k <= y_max b_k`, `z_k >= y - y_max (1 - b_k)`. Exact whatever the
/// objective's sign. A constant `y` needs no new variable.
pub fn digits_product(
    milp: &mut Milp,
    bits: &[VarId],
    y: &LinExpr,
    y_max: f64,
    name: &str,
) -> LinExpr {
    let y = y.normalized();
    let mut out = LinExpr::new();
    if y.terms.is_empty() {
        for (k, &b) in bits.iter().enumerate() {
            out.add(b, (1u64 << k) as f64 * y.constant);
        }
        return out;
    }
    if y_max <= 0.0 {
        return out;
    }
    for (k, &b) in bits.iter().enumerate() {
        let zname = format!("{name}_{k}");
        let z = milp.add_var(zname.clone(), 0.0, y_max, false);
        let zv = LinExpr::var(z);
        milp.add_relation(format!("{zname}_le_y"), &zv, Sense::Le, &y);
        milp.add_relation(
            format!("{zname}_le_bit"),
            &zv,
            Sense::Le,
            &LinExpr::term(b, y_max),
        );
        let rhs = y
            .clone()
            .plus(&LinExpr::term(b, y_max), 1.0)
            .plus(&LinExpr::constant(y_max), -1.0);
        milp.add_relation(format!("{zname}_ge"), &zv, Sense::Ge, &rhs);
        out.add(z, (1u64 << k) as f64);
    }
    out
}

/// Adds the four McCormick rows of `p = n * y` over the box `[n_lo, n_hi] x [y_lo, y_max]`,
/// where `n = Σ_k 2^k bits_k`. They hold at every point of the box, so the feasible set is
/// unchanged, and they tighten the LP relaxation, where fractional digits otherwise let a
/// binary-digit product fall far below `n * y`. With integer bounds (as the MILP has) every
/// coefficient is an integer, so the rows are exact in any reading.
pub fn mccormick(
    milp: &mut Milp,
    bits: &[VarId],
    (n_lo, n_hi): (f64, f64),
    y: &LinExpr,
    (y_lo, y_max): (f64, f64),
    p: &LinExpr,
    name: &str,
) {
    let y = y.normalized();
    if y.terms.is_empty() || y_max <= 0.0 {
        return;
    }
    let mut n = LinExpr::new();
    for (k, &b) in bits.iter().enumerate() {
        n.add(b, (1u64 << k) as f64);
    }
    let corners = [
        (n_lo, y_lo, Sense::Ge),
        (n_hi, y_max, Sense::Ge),
        (n_hi, y_lo, Sense::Le),
        (n_lo, y_max, Sense::Le),
    ];
    for (k, (a, c, sense)) in corners.into_iter().enumerate() {
        // p (>= | <=) a y + c n - a c, from the sign of (n - a)(y - c) at the box's corners.
        let rhs = y
            .scaled(a)
            .plus(&n, c)
            .plus(&LinExpr::constant(a * c), -1.0);
        milp.add_relation(format!("{name}_mc{k}"), p, sense, &rhs);
    }
}

/// Smallest value `e` can take given its variables' bounds.
pub fn lower_bound(milp: &Milp, e: &LinExpr) -> f64 {
    e.constant
        + e.terms
            .iter()
            .map(|&(v, c)| {
                let var = &milp.vars[v.0];
                (c * var.lower).min(c * var.upper)
            })
            .sum::<f64>()
}

/// `flag * x` for a 0/1 expression `flag` and `0 <= x <= x_max`, exactly (four rows).
pub fn gated(milp: &mut Milp, x: &LinExpr, flag: &LinExpr, x_max: f64, name: &str) -> LinExpr {
    let flag = flag.normalized();
    if flag.terms.is_empty() {
        return x.scaled(flag.constant);
    }
    if x_max <= 0.0 {
        return LinExpr::new();
    }
    let v = milp.add_var(name, 0.0, x_max, false);
    let vv = LinExpr::var(v);
    milp.add_relation(format!("{name}_le_x"), &vv, Sense::Le, x);
    milp.add_relation(
        format!("{name}_le_flag"),
        &vv,
        Sense::Le,
        &flag.scaled(x_max),
    );
    let rhs = x
        .clone()
        .plus(&LinExpr::constant(x_max), -1.0)
        .plus(&flag, x_max);
    milp.add_relation(format!("{name}_ge"), &vv, Sense::Ge, &rhs);
    vv
}

/// A lower bound `v >= flag * x` (one row): exact at the optimum where `v` only adds cost.
pub fn gated_lower(
    milp: &mut Milp,
    x: &LinExpr,
    flag: &LinExpr,
    x_max: f64,
    name: &str,
) -> LinExpr {
    let flag = flag.normalized();
    if flag.terms.is_empty() {
        return x.scaled(flag.constant);
    }
    if x_max <= 0.0 {
        return LinExpr::new();
    }
    let v = milp.add_var(name, 0.0, x_max, false);
    let rhs = x
        .clone()
        .plus(&LinExpr::constant(x_max), -1.0)
        .plus(&flag, x_max);
    milp.add_relation(format!("{name}_ge"), &LinExpr::var(v), Sense::Ge, &rhs);
    LinExpr::var(v)
}

/// `max(a, b)` for `0 <= a, b <= big`, exactly, with one binary selector.
pub fn exact_max(milp: &mut Milp, a: &LinExpr, b: &LinExpr, big: f64, name: &str) -> LinExpr {
    let u = milp.add_var(name, 0.0, big, false);
    let uv = LinExpr::var(u);
    let sel = milp.add_binary(format!("{name}_sel"));
    milp.add_relation(format!("{name}_ge_a"), &uv, Sense::Ge, a);
    milp.add_relation(format!("{name}_ge_b"), &uv, Sense::Ge, b);
    let r1 = a.clone().plus(&LinExpr::term(sel, big), 1.0);
    milp.add_relation(format!("{name}_le_a"), &uv, Sense::Le, &r1);
    let r2 = b
        .clone()
        .plus(&LinExpr::constant(big), 1.0)
        .plus(&LinExpr::term(sel, big), -1.0);
    milp.add_relation(format!("{name}_le_b"), &uv, Sense::Le, &r2);
    uv
}

/// `max(0, max_k switch_k * term_k)` for 0/1 expressions `switch_k` and terms in `[0, ub_k]`,
/// in a new variable bounded by `ub`. With `exact`, a selector per term makes it exact; without,
/// only the lower bounds are written (exact at the optimum where the value only adds cost).
pub fn switched_max(
    milp: &mut Milp,
    terms: &[(LinExpr, LinExpr)],
    ub: f64,
    exact: bool,
    name: &str,
) -> LinExpr {
    let e = milp.add_var(name, 0.0, ub, false);
    let ev = LinExpr::var(e);
    for (k, (t, switch)) in terms.iter().enumerate() {
        // e >= t - ub(t) (1 - switch)
        let big = upper_bound(milp, t);
        let rhs = t
            .clone()
            .plus(&LinExpr::constant(big), -1.0)
            .plus(switch, big);
        milp.add_relation(format!("{name}_ge_{k}"), &ev, Sense::Ge, &rhs);
    }
    if !exact {
        return ev;
    }
    if let [(t, switch)] = terms {
        milp.add_relation(format!("{name}_le_term"), &ev, Sense::Le, t);
        milp.add_relation(
            format!("{name}_le_switch"),
            &ev,
            Sense::Le,
            &switch.scaled(ub),
        );
        return ev;
    }
    // One selector per term plus one for "no switch on".
    let none = milp.add_binary(format!("{name}_sel_none"));
    let mut sum = LinExpr::var(none);
    milp.add_relation(
        format!("{name}_le_none"),
        &ev,
        Sense::Le,
        &LinExpr::constant(ub).plus(&LinExpr::var(none), -ub),
    );
    for (k, (t, switch)) in terms.iter().enumerate() {
        let sel = milp.add_binary(format!("{name}_sel_{k}"));
        sum.add(sel, 1.0);
        milp.add_relation(
            format!("{name}_sel_{k}_switch"),
            &LinExpr::var(sel),
            Sense::Le,
            switch,
        );
        let rhs = t
            .clone()
            .plus(&LinExpr::constant(ub), 1.0)
            .plus(&LinExpr::var(sel), -ub);
        milp.add_relation(format!("{name}_le_{k}"), &ev, Sense::Le, &rhs);
    }
    milp.add_constraint(format!("{name}_sel_one"), &sum, Sense::Eq, 1.0);
    ev
}

/// What one exact linearization stands for, recorded so that it can be proved sound
/// (`smt::soundness_queries`): the variables and rows it added, and the nonlinear value its
/// output must equal on every assignment of the rows within the variables' bounds.
#[derive(Clone, Debug, PartialEq)]
pub enum Linearization {
    /// `output = (Σ_k 2^k bits_k) * y` for `0 <= y <= y_max` ([`digits_product`]).
    Product {
        name: String,
        bits: Vec<VarId>,
        y: LinExpr,
        y_max: f64,
        output: LinExpr,
        /// Variables and constraints it added (index ranges into the MILP).
        vars: std::ops::Range<usize>,
        rows: std::ops::Range<usize>,
    },
    /// `output = max(a, b)` for `0 <= a, b <= big` ([`exact_max`]).
    Max {
        name: String,
        a: LinExpr,
        b: LinExpr,
        big: f64,
        output: LinExpr,
        vars: std::ops::Range<usize>,
        rows: std::ops::Range<usize>,
    },
}

impl Linearization {
    pub fn name(&self) -> &str {
        match self {
            Linearization::Product { name, .. } | Linearization::Max { name, .. } => name,
        }
    }
    /// Rows the linearization added.
    pub fn rows(&self) -> std::ops::Range<usize> {
        match self {
            Linearization::Product { rows, .. } | Linearization::Max { rows, .. } => rows.clone(),
        }
    }
    /// Variables the linearization added.
    pub fn vars(&self) -> std::ops::Range<usize> {
        match self {
            Linearization::Product { vars, .. } | Linearization::Max { vars, .. } => vars.clone(),
        }
    }
}

/// [`digits_product`] with its [`Linearization`] record.
pub fn recorded_product(
    milp: &mut Milp,
    bits: &[VarId],
    y: &LinExpr,
    y_max: f64,
    name: &str,
) -> (LinExpr, Linearization) {
    recording(
        milp,
        |milp| digits_product(milp, bits, y, y_max, name),
        |output, vars, rows| Linearization::Product {
            name: name.to_string(),
            bits: bits.to_vec(),
            y: y.normalized(),
            y_max,
            output,
            vars,
            rows,
        },
    )
}

/// Runs `build` and describes what it added (the variables and rows it created) with `record`.
fn recording(
    milp: &mut Milp,
    build: impl FnOnce(&mut Milp) -> LinExpr,
    record: impl FnOnce(LinExpr, std::ops::Range<usize>, std::ops::Range<usize>) -> Linearization,
) -> (LinExpr, Linearization) {
    let (v0, r0) = (milp.vars.len(), milp.constraints.len());
    let output = build(milp);
    let rec = record(
        output.clone(),
        v0..milp.vars.len(),
        r0..milp.constraints.len(),
    );
    (output, rec)
}

/// [`exact_max`] with its [`Linearization`] record.
pub fn recorded_max(
    milp: &mut Milp,
    a: &LinExpr,
    b: &LinExpr,
    big: f64,
    name: &str,
) -> (LinExpr, Linearization) {
    recording(
        milp,
        |milp| exact_max(milp, a, b, big, name),
        |output, vars, rows| Linearization::Max {
            name: name.to_string(),
            a: a.normalized(),
            b: b.normalized(),
            big,
            output,
            vars,
            rows,
        },
    )
}
