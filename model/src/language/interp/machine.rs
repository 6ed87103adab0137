//! The interpreter's state (`Machine`): every array over domain plus halo with its bounds,
//! each stencil evaluated in program order over its analysis extent, and an expression's value
//! at one point.

use std::collections::HashMap;

use crate::language::analysis::{Analysis, ArrayId, ArrayKind};
use crate::language::expr::Expr;
use crate::language::levels::Computation;
use crate::language::program::{Program, Stencil};

use super::operations::{binary, call, unary};
use super::real::Real;
use super::tracked::Tracked;
use super::truth::{either, truth};
use super::{Evaluation, InterpError, LibmAccuracy, OutputValues};

/// An array over domain plus halo.
struct Field<T> {
    values: Vec<T>,
    bounds: Vec<f64>,
    computed: Vec<bool>,
}

/// The interpreter's state: every array's field over domain plus halo, and what reading and
/// evaluating need.
struct Machine<'a, T> {
    analysis: &'a Analysis,
    ids: HashMap<&'a str, ArrayId>,
    fields: Vec<Field<T>>,
    alloc: [usize; 3],
    halo: [usize; 3],
    accuracy: LibmAccuracy,
    /// The run-time scalars' values, rounded to `T`.
    scalars: HashMap<&'a str, T>,
}

/// Runs `program` in `T` (see [`super::interpret`]).
pub(super) fn run<T: Real>(
    program: &Program,
    analysis: &Analysis,
    input: &dyn Fn(ArrayId, [i64; 3]) -> f64,
    scalars: &[f64],
    accuracy: &LibmAccuracy,
) -> Result<Evaluation, InterpError> {
    let mut m = Machine::<T>::new(analysis, input, accuracy);
    if program.stencils.len() != analysis.stencils.len() {
        return Err(InterpError(
            "the analysis does not belong to this program".into(),
        ));
    }
    if scalars.len() != program.scalars.len() {
        return Err(InterpError(format!(
            "{} scalar values given for the program's {} scalars",
            scalars.len(),
            program.scalars.len()
        )));
    }
    m.scalars = program
        .scalars
        .iter()
        .zip(scalars)
        .map(|(name, &v)| (name.as_str(), T::from_f64(v)))
        .collect();
    for (s, stencil) in program.stencils.iter().enumerate() {
        m.evaluate_stencil(s, stencil)?;
    }
    Ok(Evaluation {
        value_type: program.value_type,
        domain: analysis.domain,
        outputs: m.outputs()?,
    })
}

impl<'a, T: Real> Machine<'a, T> {
    /// The inputs filled from `input` (rounded to `T`), every stencil's array not yet computed.
    fn new(
        analysis: &'a Analysis,
        input: &dyn Fn(ArrayId, [i64; 3]) -> f64,
        accuracy: &LibmAccuracy,
    ) -> Self {
        let (domain, halo) = (analysis.domain, analysis.halo);
        let alloc = [0, 1, 2].map(|d| domain[d] + 2 * halo[d]);
        let cells = alloc[0] * alloc[1] * alloc[2];
        let cell_at = |n: usize| -> [i64; 3] {
            [
                (n % alloc[0]) as i64 - halo[0] as i64,
                (n / alloc[0] % alloc[1]) as i64 - halo[1] as i64,
                (n / (alloc[0] * alloc[1])) as i64 - halo[2] as i64,
            ]
        };
        let fields = analysis
            .arrays
            .iter()
            .enumerate()
            .map(|(id, a)| match a.kind {
                // A field's value at (i, j, k) is its value at its own coordinates: stored as
                // a 3-D array constant along the dimensions it lacks.
                ArrayKind::Input => Field {
                    values: (0..cells)
                        .map(|n| T::from_f64(input(id, a.dims.project(cell_at(n)))))
                        .collect(),
                    bounds: vec![0.0; cells],
                    computed: vec![true; cells],
                },
                ArrayKind::Stencil(_) => Field {
                    values: vec![T::ZERO; cells],
                    bounds: vec![0.0; cells],
                    computed: vec![false; cells],
                },
            })
            .collect();
        Machine {
            analysis,
            ids: analysis
                .arrays
                .iter()
                .enumerate()
                .map(|(id, a)| (a.name.as_str(), id))
                .collect(),
            fields,
            alloc,
            halo,
            accuracy: *accuracy,
            scalars: HashMap::new(),
        }
    }

    /// Stencil `s` evaluated over the domain grown by its extent, its `let` locals in order
    /// before its expression, and stored in its array.
    fn evaluate_stencil(&mut self, s: usize, stencil: &Stencil) -> Result<(), InterpError> {
        let domain = self.analysis.domain;
        let info = &self.analysis.stencils[s];
        let region = [0, 1, 2].map(|d| {
            (
                -(info.extent[d][0] as i64),
                (domain[d] + info.extent[d][1]) as i64,
            )
        });
        // Level by level, each level stored before the next is computed: a sweep reads the
        // levels before it (a backward sweep walks down).
        let levels: Vec<i64> = match (info.plane, stencil.computation) {
            // A 2-D stencil once, at its level; stored on every level below.
            (Some(level), _) => vec![level],
            (None, Computation::Backward) => (region[2].0..region[2].1).rev().collect(),
            _ => (region[2].0..region[2].1).collect(),
        };
        let array = info.array;
        for k in levels {
            let body = (0..stencil.bodies.len())
                .find(|&b| {
                    let (lo, hi) = stencil.body_levels(b, domain[2]);
                    stencil.bodies[b].levels.is_none() || (lo <= k && k < hi)
                })
                .map(|b| &stencil.bodies[b])
                .ok_or_else(|| {
                    InterpError(format!(
                        "`{}` has no interval holding level {k}",
                        stencil.name
                    ))
                })?;
            let mut results = Vec::new();
            for j in region[1].0..region[1].1 {
                for i in region[0].0..region[0].1 {
                    let at = [i, j, k];
                    let mut locals: Vec<(&str, Tracked<T>)> = Vec::new();
                    for l in &body.lets {
                        let v = self.eval(&l.expr, at, &locals)?;
                        locals.push((l.name.as_str(), v));
                    }
                    let v = self.eval(&body.expr, at, &locals)?;
                    let n = self.index(at).ok_or_else(|| {
                        InterpError(format!(
                            "`{}` evaluated at {at:?}, outside domain plus halo",
                            stencil.name
                        ))
                    })?;
                    results.push((n, v));
                }
            }
            // A 2-D stencil's value at (i, j) holds at every level (as a field's).
            let plane = self.alloc[0] * self.alloc[1];
            let copies = if info.plane.is_some() {
                self.alloc[2]
            } else {
                1
            };
            let f = &mut self.fields[array];
            for (n, v) in results {
                for c in 0..copies {
                    let n = if copies > 1 { n % plane + c * plane } else { n };
                    f.values[n] = v.v;
                    f.bounds[n] = v.e;
                    f.computed[n] = true;
                }
            }
        }
        Ok(())
    }

    /// The output arrays over the domain, in the analysis's order.
    fn outputs(&self) -> Result<Vec<OutputValues>, InterpError> {
        let domain = self.analysis.domain;
        let mut outputs = Vec::new();
        for &s in &self.analysis.outputs {
            let info = &self.analysis.stencils[s];
            let mut values = Vec::with_capacity(domain[0] * domain[1] * domain[2]);
            let mut bounds = Vec::with_capacity(values.capacity());
            // A 2-D output over the domain's (i, j) only.
            let levels = if info.plane.is_some() { 1 } else { domain[2] };
            for k in 0..levels as i64 {
                for j in 0..domain[1] as i64 {
                    for i in 0..domain[0] as i64 {
                        let v = self.read(&info.name, [i, j, k])?;
                        values.push(v.v.to_f64());
                        bounds.push(v.e);
                    }
                }
            }
            outputs.push(OutputValues {
                stencil: s,
                name: info.name.clone(),
                values,
                bounds,
            });
        }
        Ok(outputs)
    }

    /// Linear index of `at` (domain coordinates), if inside domain plus halo.
    fn index(&self, at: [i64; 3]) -> Option<usize> {
        let mut linear = 0usize;
        let mut stride = 1usize;
        for d in 0..3 {
            let p = at[d] + self.halo[d] as i64;
            if p < 0 || p >= self.alloc[d] as i64 {
                return None;
            }
            linear += p as usize * stride;
            stride *= self.alloc[d];
        }
        Some(linear)
    }

    fn read(&self, array: &str, at: [i64; 3]) -> Result<Tracked<T>, InterpError> {
        let id = *self
            .ids
            .get(array)
            .ok_or_else(|| InterpError(format!("unknown array `{array}`")))?;
        let n = self.index(at).ok_or_else(|| {
            InterpError(format!(
                "`{array}` read at {at:?}, outside domain plus halo"
            ))
        })?;
        let f = &self.fields[id];
        if !f.computed[n] {
            return Err(InterpError(format!(
                "`{array}` read at {at:?}, where it was not computed"
            )));
        }
        Ok(Tracked {
            v: f.values[n],
            e: f.bounds[n],
        })
    }

    /// `expr` at `at`, with the `let` locals evaluated so far.
    fn eval(
        &self,
        expr: &Expr,
        at: [i64; 3],
        locals: &[(&str, Tracked<T>)],
    ) -> Result<Tracked<T>, InterpError> {
        Ok(match expr {
            Expr::Number { text, value } => {
                Tracked::exact(T::literal(text).unwrap_or_else(|| T::from_f64(*value)))
            }
            Expr::Local(name) => locals
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, v)| *v)
                .ok_or_else(|| InterpError(format!("undefined local `{name}`")))?,
            Expr::Scalar(name) => self
                .scalars
                .get(name.as_str())
                .map(|&v| Tracked::exact(v))
                .ok_or_else(|| InterpError(format!("undefined scalar `{name}`")))?,
            Expr::Access { array, offset, .. } => {
                let p = [0, 1, 2].map(|d| at[d] + offset[d] as i64);
                self.read(array, p)?
            }
            Expr::Unary { op, operand } => unary(*op, self.eval(operand, at, locals)?),
            Expr::Binary { op, lhs, rhs } => {
                let a = self.eval(lhs, at, locals)?;
                let b = self.eval(rhs, at, locals)?;
                binary(*op, a, b)
            }
            Expr::Ternary {
                cond,
                then,
                otherwise,
            } => {
                let c = truth(self.eval(cond, at, locals)?);
                let a = self.eval(then, at, locals)?;
                let b = self.eval(otherwise, at, locals)?;
                let (chosen, other) = if c.ours { (a, b) } else { (b, a) };
                if c.certain() {
                    chosen
                } else {
                    either(chosen, other)
                }
            }
            Expr::Call { func, args } => {
                let values = args
                    .iter()
                    .map(|a| self.eval(a, at, locals))
                    .collect::<Result<Vec<_>, _>>()?;
                if values.len() != func.arity() {
                    return Err(InterpError(format!(
                        "`{}` called with {} arguments",
                        func.name(),
                        values.len()
                    )));
                }
                call(*func, &values, &self.accuracy)
            }
        })
    }
}
