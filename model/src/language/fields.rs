//! `fields:` (docs/MODEL.md, "Program file"): the arrays that have fewer dimensions than
//! (i, j, k), such as level heights `dz: [k]` or an orography `hsurf: [i, j]` among the inputs,
//! and 2-D stencils (`[i, j]`, computed once per column), and the check that every access to an
//! array lists exactly its own indices.

use std::collections::BTreeMap;

use indexmap::IndexMap;

use crate::formats::diagnostic::Diagnostic;
use crate::language::expr::{AccessSpan, Dims, INDEX_NAMES};
use crate::language::program::{is_identifier, reserved_reason, Stencil};

/// The declared fields, their dimension lists checked: names that are identifiers, dimensions
/// among i, j, k in that order, each at most once; a stencil's `[i, j]` (a 2-D stencil). An
/// entry `[i, j, k]` is accepted and dropped (it is what an undeclared array has).
pub(crate) fn read_fields(
    file: &IndexMap<String, Vec<String>>,
    stencils: &[Stencil],
    inputs: Option<&[String]>,
    errors: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Dims> {
    let mut fields = BTreeMap::new();
    for (name, list) in file {
        let path = format!("fields.{name}");
        if !is_identifier(name) {
            errors.push(Diagnostic::new(
                &path,
                format!("`{name}` is not an identifier ([A-Za-z_][A-Za-z0-9_]*)"),
            ));
            continue;
        }
        if let Some(why) = reserved_reason(name) {
            errors.push(Diagnostic::new(&path, format!("`{name}` {why}")));
            continue;
        }
        let Some(dims) = dims_of(list, &path, errors) else {
            continue;
        };
        if dims.is_full() {
            continue;
        }
        let stencil = stencils.iter().any(|s| s.name == *name);
        if stencil && dims != PLANE {
            errors.push(Diagnostic::new(
                &path,
                format!(
                    "`{name}` is a stencil: a stencil is 3-D ([i, j, k]) or 2-D ([i, j], computed \
                     once per column), not {dims}"
                ),
            ));
            continue;
        }
        if !stencil && inputs.is_some_and(|ins| !ins.contains(name)) {
            errors.push(Diagnostic::new(
                &path,
                format!("`{name}` is neither a stencil nor listed in `inputs`"),
            ));
            continue;
        }
        fields.insert(name.clone(), dims);
    }
    fields
}

/// The dimensions of a 2-D stencil.
pub const PLANE: Dims = Dims([true, true, false]);

/// The 2-D stencils' rules: computed once per column, by `expr:` from arrays without k, or by
/// one interval of one level (`k: [-1, null]`: the top) from any array at that level; never a
/// sweep. An error per broken rule.
pub(crate) fn check_planes(
    fields: &BTreeMap<String, Dims>,
    stencils: &[Stencil],
    nz: usize,
    errors: &mut Vec<Diagnostic>,
) {
    for (n, st) in stencils.iter().enumerate() {
        if fields.get(&st.name) != Some(&PLANE) {
            continue;
        }
        let base = format!("stencils[{n}]");
        if st.computation.is_sweep() {
            errors.push(Diagnostic::new(
                format!("{base}.computation"),
                format!(
                    "`{}` is a 2-D stencil ([i, j]): it is computed once per column, not swept",
                    st.name
                ),
            ));
        }
        if st.has_intervals() {
            let levels = st.bodies.iter().map(|b| b.levels.map(|l| l.resolve(nz)));
            let one = levels.collect::<Vec<_>>();
            if !matches!(one.as_slice(), [Some((lo, hi))] if *lo >= 0 && hi - lo == 1 && *hi <= nz as i64)
            {
                errors.push(Diagnostic::new(
                    format!("{base}.intervals"),
                    format!(
                        "`{}` is a 2-D stencil ([i, j]): its intervals are one interval of one level, the level it is computed at (`k: [-1, null]`: the top)",
                        st.name
                    ),
                ));
            }
            continue;
        }
        let body = &st.bodies[0];
        let mut leveled = Vec::new();
        for e in body.lets.iter().map(|l| &l.expr).chain([&body.expr]) {
            e.visit_accesses(&mut |array, _| {
                let dims = fields.get(array).copied().unwrap_or(Dims::ALL);
                if dims.has(2) && !leveled.contains(&array) {
                    leveled.push(array);
                }
            });
        }
        if let Some(array) = leveled.first() {
            errors.push(Diagnostic::new(
                format!("{base}.expr"),
                format!(
                    "`{}` is a 2-D stencil ([i, j]) and reads `{array}`, which has levels: give the level it is computed at with `intervals: [{{k: [-1, null], expr: ...}}]` (the top; [0, 1] the bottom)",
                    st.name
                ),
            ));
        }
    }
}

/// A dimension list such as `[i, j]` as [`Dims`]; an error (and None) when an entry is not i,
/// j or k, repeats, is out of order, or the list is empty.
fn dims_of(list: &[String], path: &str, errors: &mut Vec<Diagnostic>) -> Option<Dims> {
    let mut dims = [false; 3];
    let mut last: Option<usize> = None;
    for (n, entry) in list.iter().enumerate() {
        let Some(d) = INDEX_NAMES.iter().position(|x| x == entry) else {
            errors.push(Diagnostic::new(
                format!("{path}[{n}]"),
                format!("`{entry}` is not a dimension: a field's dimensions are among i, j, k"),
            ));
            return None;
        };
        if last.is_some_and(|l| l >= d) {
            errors.push(Diagnostic::new(
                format!("{path}[{n}]"),
                format!(
                    "`{entry}` out of order: a field lists its dimensions in the order i, j, k, \
                     each once"
                ),
            ));
            return None;
        }
        dims[d] = true;
        last = Some(d);
    }
    if last.is_none() {
        errors.push(Diagnostic::new(
            path,
            "a field has at least one dimension (a constant is a `scalars:` entry)",
        ));
        return None;
    }
    Some(Dims(dims))
}

/// Every access lists exactly its array's dimensions: a field its own (`dz(k+1)`), any other
/// array i, j and k. An error per offending access, at its column.
pub(crate) fn check_field_accesses(
    fields: &BTreeMap<String, Dims>,
    stencils: &[Stencil],
    errors: &mut Vec<Diagnostic>,
) {
    for body in stencils.iter().flat_map(|s| &s.bodies) {
        let sources = &body.sources;
        let lets = body.lets.iter().zip(&sources.lets);
        let texts = lets
            .map(|(l, (src, spans))| (format!("{}.let.{}", body.path, l.name), src, spans))
            .chain([(
                format!("{}.expr", body.path),
                &sources.expr,
                &sources.expr_accesses,
            )]);
        for (path, src, spans) in texts {
            for a in spans {
                if let Some(message) = access_problem(fields, a) {
                    let column = src.get(..a.span.start).map_or(1, |p| p.chars().count() + 1);
                    let len = src
                        .get(a.span.start..a.span.end)
                        .map_or(1, |s| s.chars().count());
                    errors.push(Diagnostic::new(&path, message).with_snippet(src, column, len));
                }
            }
        }
    }
}

/// What is wrong with access `a`, if anything.
fn access_problem(fields: &BTreeMap<String, Dims>, a: &AccessSpan) -> Option<String> {
    let want = fields.get(&a.array).copied().unwrap_or(Dims::ALL);
    if a.dims == want {
        return None;
    }
    let indices = want.names().join(", ");
    Some(if want.is_full() {
        format!(
            "`{}` is a 3-D array, read with the indices i, j, k; this access lists {} (declare \
             it under `fields:` if it has fewer dimensions)",
            a.array, a.dims
        )
    } else {
        format!(
            "`{}` is a field over {want} (`fields:`): read it with its own indices, \
             `{}({indices})` with offsets; this access lists {}",
            a.array, a.array, a.dims
        )
    })
}
