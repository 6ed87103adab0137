//! Inlining: a stencil computed where it is read instead of stored
//! (docs/decisions/0005-inlining-by-search-over-sets.md).
//!
//! [`inline_program`] rewrites a program so that each inlined stencil `P` disappears and every
//! reader evaluates `P`'s expression, shifted by the offset of each of its reads of `P`, as a
//! `let` local. The values are the same to the bit: every inlined value is computed by the same
//! expression in the same type as the stored value was (the language is pure, and a `let` holds
//! a value of the program's type like an array element does), so the rewritten program's
//! outputs equal the original's (`tests/reference.rs` holds them equal through the
//! interpreter; the harness of an inlined configuration is verified against the original
//! program's reference).
//!
//! For a reader `C` of `P` at offset `o`, the rewrite hoists `P`'s lets and its value into `C`
//! as lets named `_P_<o>_<let>` and `_P_<o>` (for example `_flx_u_m1_0_0`), first in `C`'s let
//! list (they read only arrays and each other), and replaces `P(i+o)` by the local. A chain
//! `P1 → P2 → C` with both inlined carries `P1`'s locals inside `P2`'s, renamed once more.
//!
//! What inlining changes in the model follows from the rewritten program alone: the reader's
//! distinct reads (its fetch weight), the group's stencil count and the arrays its tiles touch.
//! `cost_model::inline_search` searches the inline sets; the rest of the tool sees an ordinary program.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::language::analysis::Analysis;
use crate::language::expr::{parse_expr_spanned, Expr};
use crate::language::program::{Body, Let, Program, Stencil, StencilSources};

/// At most this many distinct reads in a rewritten stencil: larger inline sets are not
/// candidates (the code would grow without bound along chains).
pub const MAX_INLINED_READS: usize = 64;

/// At most this many lets in a rewritten stencil.
pub const MAX_INLINED_LETS: usize = 256;

/// Why an inline set cannot be applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InlineError {
    #[error("`{0}` is not a stencil of the program")]
    Unknown(String),
    #[error("`{0}` is an output: an output must be stored, it cannot be inlined")]
    Output(String),
    #[error("`{0}` is listed twice")]
    Twice(String),
    #[error(
        "`{0}` is a sweep, has intervals or is 2-D: it is computed level by level or once per column, it cannot be inlined"
    )]
    ByLevel(String),
    #[error(
        "inlining makes stencil `{stencil}` too large ({reads} distinct reads, {lets} lets; at most {max_reads} and {max_lets})"
    )]
    TooLarge {
        stencil: String,
        reads: usize,
        lets: usize,
        max_reads: usize,
        max_lets: usize,
    },
}

/// The stencils that may be inlined: every stencil that is not an output, a sweep, 2-D, or
/// computed by intervals.
pub fn candidates(analysis: &Analysis) -> Vec<usize> {
    (0..analysis.stencils.len())
        .filter(|&s| {
            let st = &analysis.stencils[s];
            !st.is_output && !st.computation.is_sweep() && !st.intervals && st.plane.is_none()
        })
        .collect()
}

/// The indices of `names` in `program`, sorted, checked: stencils, not outputs, each once.
pub fn indices_of(program: &Program, names: &[String]) -> Result<Vec<usize>, InlineError> {
    let mut out = BTreeSet::new();
    for name in names {
        let s = program
            .stencil_index(name)
            .ok_or_else(|| InlineError::Unknown(name.clone()))?;
        if program.outputs.contains(name) {
            return Err(InlineError::Output(name.clone()));
        }
        if !inlinable(program, &program.stencils[s]) {
            return Err(InlineError::ByLevel(name.clone()));
        }
        if !out.insert(s) {
            return Err(InlineError::Twice(name.clone()));
        }
    }
    Ok(out.into_iter().collect())
}

/// The stencils of `program` kept by inlining `inline` (sorted indices): the old index of each
/// stencil of the rewritten program.
pub fn kept(program: &Program, inline: &[usize]) -> Vec<usize> {
    (0..program.stencils.len())
        .filter(|s| inline.binary_search(s).is_err())
        .collect()
}

/// `program` with the stencils `inline` (sorted indices) computed where they are read. The
/// program's name, domain, halo, type and outputs are kept; fixed groups in its constraints are
/// dropped when anything is inlined (they index the original stencils).
pub fn inline_program(program: &Program, inline: &[usize]) -> Result<Program, InlineError> {
    let mut sorted = inline.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != inline.len() {
        let twice = inline
            .iter()
            .find(|s| inline.iter().filter(|t| t == s).count() > 1)
            .map(|&s| program.stencils[s].name.clone())
            .unwrap_or_default();
        return Err(InlineError::Twice(twice));
    }
    for &s in &sorted {
        let Some(st) = program.stencils.get(s) else {
            return Err(InlineError::Unknown(format!("stencils[{s}]")));
        };
        if program.outputs.contains(&st.name) {
            return Err(InlineError::Output(st.name.clone()));
        }
    }
    if sorted.is_empty() {
        return Ok(program.clone());
    }
    // The definition of every inlined stencil, itself rewritten (earlier inlined stencils
    // already substituted), by name.
    let mut bodies: HashMap<String, (Vec<Let>, Expr)> = HashMap::new();
    let mut stencils = Vec::new();
    for (s, st) in program.stencils.iter().enumerate() {
        if sorted.binary_search(&s).is_ok() {
            if !inlinable(program, st) {
                return Err(InlineError::ByLevel(st.name.clone()));
            }
            let (lets, expr) = substitute(&st.bodies[0], &bodies, &program.scalars);
            // Every reader holds a shifted copy of each of these reads and lets, so a body past
            // the bounds here makes its readers too large: stop before a chain of such
            // bodies grows exponentially.
            check_size(&st.name, &lets, &expr)?;
            bodies.insert(st.name.clone(), (lets, expr));
            continue;
        }
        let mut rewritten = Vec::new();
        for b in &st.bodies {
            let (lets, expr) = substitute(b, &bodies, &program.scalars);
            check_size(&st.name, &lets, &expr)?;
            rewritten.push(with_sources(b, lets, expr));
        }
        stencils.push(Stencil {
            name: st.name.clone(),
            computation: st.computation,
            bodies: rewritten,
        });
    }
    let mut constraints = program.constraints.clone();
    constraints.groups = None;
    Ok(Program {
        stencils,
        constraints,
        ..program.clone()
    })
}

/// [`InlineError::TooLarge`] when a rewritten body of `stencil` has more distinct reads than
/// [`MAX_INLINED_READS`] or more lets than [`MAX_INLINED_LETS`].
fn check_size(stencil: &str, lets: &[Let], expr: &Expr) -> Result<(), InlineError> {
    let mut reads = BTreeSet::new();
    for e in lets.iter().map(|l| &l.expr).chain([expr]) {
        e.visit_accesses(&mut |a, o| {
            reads.insert((a.to_string(), o));
        });
    }
    if reads.len() > MAX_INLINED_READS || lets.len() > MAX_INLINED_LETS {
        return Err(InlineError::TooLarge {
            stencil: stencil.to_string(),
            reads: reads.len(),
            lets: lets.len(),
            max_reads: MAX_INLINED_READS,
            max_lets: MAX_INLINED_LETS,
        });
    }
    Ok(())
}

/// Whether a stencil can be computed where it is read: one body on every level, not a sweep
/// (a reader at level k would need the levels before it, or the body of another level).
fn inlinable(program: &Program, st: &Stencil) -> bool {
    !st.computation.is_sweep() && !st.has_intervals() && program.dims(&st.name).is_full()
}

/// `body` with new lets and expression, its source texts their printed forms (what error
/// messages quote).
fn with_sources(body: &Body, lets: Vec<Let>, expr: Expr) -> Body {
    let spans = |e: &Expr| -> (String, Vec<crate::language::expr::AccessSpan>) {
        let text = e.to_string();
        // The printer's output parses back to the same tree (the parser's round-trip
        // property); only the access spans are taken from the parse.
        let spans = parse_expr_spanned(&text)
            .map(|(_, s)| s)
            .unwrap_or_default();
        (text, spans)
    };
    let (text, accesses) = spans(&expr);
    let sources = StencilSources {
        expr: text,
        expr_accesses: accesses,
        lets: lets.iter().map(|l| spans(&l.expr)).collect(),
    };
    Body {
        levels: body.levels,
        lets,
        expr,
        sources,
        path: body.path.clone(),
    }
}

/// `st`'s lets and expression with every read of a stencil in `bodies` replaced by a local
/// holding its value at that offset; the hoisted lets come first, in order of first read.
/// No hoisted local takes the name of one of the program's `scalars` (so that the inlined
/// program, printed, reads back the same).
fn substitute(
    st: &Body,
    bodies: &HashMap<String, (Vec<Let>, Expr)>,
    scalars: &[String],
) -> (Vec<Let>, Expr) {
    // Names in use: the stencil's own lets and the scalars.
    let mut taken: BTreeSet<String> = st
        .lets
        .iter()
        .map(|l| l.name.clone())
        .chain(scalars.iter().cloned())
        .collect();
    let mut hoisted: Vec<Let> = Vec::new();
    // (array, offset) -> the local holding its value.
    let mut locals: BTreeMap<(String, [i32; 3]), String> = BTreeMap::new();
    let mut order = Vec::new();
    for e in st.lets.iter().map(|l| &l.expr).chain([&st.expr]) {
        e.visit_accesses(&mut |a, o| {
            if bodies.contains_key(a) && !locals.contains_key(&(a.to_string(), o)) {
                locals.insert((a.to_string(), o), String::new());
                order.push((a.to_string(), o));
            }
        });
    }
    for (array, o) in order {
        let (lets, expr) = &bodies[&array];
        let prefix = fresh(&mut taken, &format!("_{array}_{}", offset_tag(o)));
        let mut renamed: HashMap<String, String> = HashMap::new();
        for l in lets {
            let name = fresh(
                &mut taken,
                &format!("{prefix}_{}", l.name.trim_start_matches('_')),
            );
            hoisted.push(Let {
                name: name.clone(),
                expr: shift(&l.expr, o, &renamed),
            });
            renamed.insert(l.name.clone(), name);
        }
        hoisted.push(Let {
            name: prefix.clone(),
            expr: shift(expr, o, &renamed),
        });
        locals.insert((array, o), prefix);
    }
    let replace = |e: &Expr| {
        map_expr(e, &mut |node| match node {
            Expr::Access { array, offset, .. } => locals
                .get(&(array.clone(), *offset))
                .map(|name| Expr::Local(name.clone())),
            _ => None,
        })
    };
    let mut lets = hoisted;
    lets.extend(st.lets.iter().map(|l| Let {
        name: l.name.clone(),
        expr: replace(&l.expr),
    }));
    let hoisted_count = lets.len() - st.lets.len();
    share_equal_lets(lets, replace(&st.expr), hoisted_count)
}

/// Common subexpressions among the hoisted lets (the first `hoisted` of `lets`): a hoisted let
/// whose expression, with earlier duplicates renamed, equals an earlier hoisted let's is
/// dropped, and every later use reads the earlier one. Along a chain the same producer value
/// is reached through several paths (`out` reads `flx` at 0 and -1, each reads `lap` at
/// its own 0 and +1: `lap` at 0 twice); each value is computed once per cell, which is
/// what the compute part of the model counts (`Expr::operations`) and what the C++ compiler
/// would find anyway. Values do not change: equal expressions over the same reads evaluate to
/// the same bits.
fn share_equal_lets(lets: Vec<Let>, expr: Expr, hoisted: usize) -> (Vec<Let>, Expr) {
    let mut alias: HashMap<String, String> = HashMap::new();
    let mut seen: HashMap<String, String> = HashMap::new();
    let rename = |e: &Expr, alias: &HashMap<String, String>| {
        map_expr(e, &mut |node| match node {
            Expr::Local(name) => alias.get(name).map(|n| Expr::Local(n.clone())),
            _ => None,
        })
    };
    let mut out = Vec::with_capacity(lets.len());
    for (n, l) in lets.into_iter().enumerate() {
        let e = rename(&l.expr, &alias);
        if n < hoisted {
            let key = e.to_string();
            if let Some(first) = seen.get(&key) {
                alias.insert(l.name, first.clone());
                continue;
            }
            seen.insert(key, l.name.clone());
        }
        out.push(Let {
            name: l.name,
            expr: e,
        });
    }
    let expr = rename(&expr, &alias);
    (out, expr)
}

/// `_P_m1_0_2` style: an offset as identifier characters (`m` for minus).
fn offset_tag(o: [i32; 3]) -> String {
    o.map(|v| {
        if v < 0 {
            format!("m{}", -v)
        } else {
            v.to_string()
        }
    })
    .join("_")
}

/// `base`, or `base_2`, `base_3`, ... whichever is free; marks it taken.
fn fresh(taken: &mut BTreeSet<String>, base: &str) -> String {
    let mut name = base.to_string();
    let mut k = 2;
    while taken.contains(&name) {
        name = format!("{base}_{k}");
        k += 1;
    }
    taken.insert(name.clone());
    name
}

/// `e` with every access shifted by `o` and locals renamed by `renamed`.
fn shift(e: &Expr, o: [i32; 3], renamed: &HashMap<String, String>) -> Expr {
    map_expr(e, &mut |node| match node {
        // A field keeps offset 0 along the dimensions it lacks.
        Expr::Access {
            array,
            offset,
            dims,
        } => Some(Expr::Access {
            array: array.clone(),
            offset: [0, 1, 2].map(|d| offset[d] + if dims.has(d) { o[d] } else { 0 }),
            dims: *dims,
        }),
        Expr::Local(name) => renamed.get(name).map(|n| Expr::Local(n.clone())),
        _ => None,
    })
}

/// A copy of `e` in which every node for which `f` answers `Some` is replaced by the answer.
fn map_expr(e: &Expr, f: &mut impl FnMut(&Expr) -> Option<Expr>) -> Expr {
    if let Some(r) = f(e) {
        return r;
    }
    match e {
        Expr::Number { .. } | Expr::Local(_) | Expr::Scalar(_) | Expr::Access { .. } => e.clone(),
        Expr::Unary { op, operand } => Expr::Unary {
            op: *op,
            operand: Box::new(map_expr(operand, f)),
        },
        Expr::Binary { op, lhs, rhs } => Expr::Binary {
            op: *op,
            lhs: Box::new(map_expr(lhs, f)),
            rhs: Box::new(map_expr(rhs, f)),
        },
        Expr::Ternary {
            cond,
            then,
            otherwise,
        } => Expr::Ternary {
            cond: Box::new(map_expr(cond, f)),
            then: Box::new(map_expr(then, f)),
            otherwise: Box::new(map_expr(otherwise, f)),
        },
        Expr::Call { func, args } => Expr::Call {
            func: *func,
            args: args.iter().map(|a| map_expr(a, f)).collect(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::language::analysis::Analysis;

    fn program(text: &str) -> Program {
        Program::from_yaml(text).unwrap()
    }

    const CHAIN: &str = r#"
name: t
domain: [8, 8, 4]
halo: [3, 3, 1]
outputs: [out]
stencils:
  - name: lap
    expr: "4 * u(i,j,k) - u(i+1,j,k) - u(i-1,j,k) - u(i,j+1,k) - u(i,j-1,k)"
  - name: flx
    let: { d: "lap(i+1,j,k) - lap(i,j,k)" }
    expr: "d * (u(i+1,j,k) - u(i,j,k)) > 0 ? 0 : d"
  - name: out
    expr: "u(i,j,k) - 0.25 * (flx(i,j,k) - flx(i-1,j,k)) + lap(i,j,k)"
"#;

    #[test]
    fn a_chain_inlines_into_lets_and_keeps_the_reads() {
        let p = program(CHAIN);
        let q = inline_program(&p, &[0, 1]).unwrap();
        assert_eq!(q.stencils.len(), 1);
        let out = &q.stencils[0].bodies[0];
        let names: Vec<&str> = out.lets.iter().map(|l| l.name.as_str()).collect();
        // flx at 0 and -1, each with lap at two offsets, then lap at 0 read directly. lap at
        // 0 is reached three times (flx at 0, flx at -1 at its +1, and directly): it is
        // computed once, and the later paths read the first local.
        assert_eq!(
            names,
            [
                "_flx_0_0_0_lap_1_0_0",
                "_flx_0_0_0_lap_0_0_0",
                "_flx_0_0_0_d",
                "_flx_0_0_0",
                "_flx_m1_0_0_lap_0_0_0",
                "_flx_m1_0_0_d",
                "_flx_m1_0_0",
            ]
        );
        // The inner lap of flx at -1 is shifted by -1: lap(i, j, k) reads u(i-1, j, k).
        assert_eq!(
            out.lets[4].expr.to_string(),
            "4 * u(i-1, j, k) - u(i, j, k) - u(i-2, j, k) - u(i-1, j+1, k) - u(i-1, j-1, k)"
        );
        // flx at -1 takes the difference of lap at 0 (flx at 0's local) and at -1.
        assert_eq!(
            out.lets[5].expr.to_string(),
            "_flx_0_0_0_lap_0_0_0 - _flx_m1_0_0_lap_0_0_0"
        );
        assert_eq!(
            out.expr.to_string(),
            "u(i, j, k) - 0.25 * (_flx_0_0_0 - _flx_m1_0_0) + _flx_0_0_0_lap_0_0_0"
        );
        // Three laps of five operations, two fluxes of one (d) and four, and the output's four
        // (before sharing: five laps).
        assert_eq!(
            out.lets
                .iter()
                .map(|l| l.expr.operations())
                .chain([out.expr.operations()])
                .sum::<u64>(),
            3 * 5 + 2 * (1 + 4) + 4
        );
        let a = Analysis::new(&q).unwrap();
        // The distinct reads of u: x from -2 to 2 on row j, and (−1..1, ±1).
        let reads: BTreeSet<[i32; 3]> = a.stencils[0].accesses.iter().map(|&(_, o)| o).collect();
        assert_eq!(reads.len(), 5 + 6);
        assert_eq!(a.stencils[0].fetch_weight, 12);
    }

    #[test]
    fn bad_inline_sets_are_refused_with_names() {
        let p = program(CHAIN);
        assert_eq!(
            inline_program(&p, &[2]).unwrap_err(),
            InlineError::Output("out".into())
        );
        assert_eq!(
            inline_program(&p, &[0, 0]).unwrap_err(),
            InlineError::Twice("lap".into())
        );
        assert_eq!(
            indices_of(&p, &["flux".into()]).unwrap_err(),
            InlineError::Unknown("flux".into())
        );
        assert_eq!(
            indices_of(&p, &["flx".into(), "lap".into()]).unwrap(),
            [0, 1]
        );
        assert_eq!(inline_program(&p, &[]).unwrap(), p);
    }

    /// A chain of wide stencils, each reading the one before over an 8x8 box: inlining the
    /// whole chain would multiply the reads at every step (64^5 copies for six). The first
    /// intermediate body past the bounds ends the rewrite, before a reader is built.
    #[test]
    fn a_chain_past_the_bounds_stops_at_its_first_wide_body() {
        let mut text = String::from(
            "name: wide\ndomain: [8, 8, 4]\nhalo: [24, 24, 0]\noutputs: [s5]\nstencils:\n",
        );
        let mut prev = "in".to_string();
        for m in 0..6 {
            let reads: Vec<String> = (-4..4)
                .flat_map(|a| (-4..4).map(move |b| (a, b)))
                .map(|(a, b)| format!("{prev}(i{a:+},j{b:+},k)"))
                .collect();
            text.push_str(&format!(
                "  - name: s{m}\n    expr: \"{}\"\n",
                reads.join(" + ")
            ));
            prev = format!("s{m}");
        }
        let p = program(&text);
        match inline_program(&p, &[0, 1, 2, 3, 4]) {
            Err(InlineError::TooLarge { stencil, reads, .. }) => {
                assert_eq!(stencil, "s1");
                assert_eq!(reads, 15 * 15);
            }
            other => panic!("{other:?}"),
        }
    }
}
