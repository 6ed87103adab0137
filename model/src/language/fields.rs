//! `fields:` (docs/MODEL.md, "Program file"): the input arrays that have fewer dimensions than
//! (i, j, k), such as level heights `dz: [k]` or an orography `hsurf: [i, j]`, and the check that
//! every access to an array lists exactly its own indices.

use std::collections::BTreeMap;

use indexmap::IndexMap;

use crate::formats::diagnostic::Diagnostic;
use crate::language::expr::{AccessSpan, Dims, INDEX_NAMES};
use crate::language::program::{is_identifier, reserved_reason, Stencil};

/// The declared fields, their dimension lists checked: names that are identifiers and not
/// stencils, dimensions among i, j, k in that order, each at most once. An entry `[i, j, k]` is
/// accepted and dropped (it is what an undeclared array has).
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
        if stencils.iter().any(|s| s.name == *name) {
            errors.push(Diagnostic::new(
                &path,
                format!(
                    "`{name}` is a stencil, and stencils are 3-D ([i, j, k]): a field with \
                     fewer dimensions ({dims}) can only be an input in this version"
                ),
            ));
            continue;
        }
        if inputs.is_some_and(|ins| !ins.contains(name)) {
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
