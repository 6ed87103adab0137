//! Run-time scalars (`scalars:`): the checks of their names, and their values for a run
//! (`--scalar NAME=VALUE`, else each one's default).

use std::collections::{BTreeMap, HashSet};

use crate::formats::diagnostic::Diagnostic;
use crate::formats::limits;
use crate::language::program::{name_problem, Program, Stencil, ValueType};

/// A scalar's value given as text, `NAME=VALUE` (`--scalar`): the name an identifier, the value
/// a finite number.
pub fn parse_assignment(text: &str) -> Result<(String, f64), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not NAME=VALUE"))?;
    let name = name.trim();
    if !crate::language::program::is_identifier(name) {
        return Err(format!("`{name}` is not a scalar name"));
    }
    let value_text = value;
    let value: f64 = value
        .trim()
        .parse()
        .map_err(|_| format!("`{}` is not a number", value.trim()))?;
    if !value.is_finite() {
        return Err(format!(
            "the value of `{name}` must be finite, found {value}"
        ));
    }
    // A non-zero digit that parses to zero (`1e-400`) is smaller than any double.
    let text = value_text.trim();
    if value == 0.0 && crate::language::checks::nonzero_digits(text) {
        return Err(format!(
            "the value of `{name}`, {text}, is too small for a double: it rounds to zero"
        ));
    }
    Ok((name.to_string(), value))
}

impl Program {
    /// The values of the program's scalars, in the order of `scalars:`: each one `given`
    /// (`--scalar NAME=VALUE`), the others their default
    /// ([`scalar_default`](crate::language::interp::scalar_default)). A name the program does
    /// not declare, a name given twice, and a value that is not finite are errors.
    pub fn scalar_values(&self, given: &[(String, f64)]) -> Result<Vec<f64>, String> {
        let mut values: Vec<Option<f64>> = vec![None; self.scalars.len()];
        for (name, value) in given {
            let Some(n) = self.scalars.iter().position(|s| s == name) else {
                return Err(if self.scalars.is_empty() {
                    format!(
                        "--scalar {name}: program `{}` has no scalars (no `scalars:` list)",
                        self.name
                    )
                } else {
                    format!(
                        "--scalar {name}: program `{}` has no scalar `{name}`; its scalars are {}",
                        self.name,
                        self.scalars.join(", ")
                    )
                });
            };
            if !value.is_finite() {
                return Err(format!(
                    "--scalar {name}: the value must be finite, found {value}"
                ));
            }
            // A float program's harness passes the value as a float: one that rounds past
            // FLT_MAX would become infinity, one below the smallest float zero.
            if self.value_type == ValueType::Float && (*value as f32).is_infinite() {
                return Err(format!(
                    "--scalar {name}: {value:e} is too large for a float (the program's type: float)"
                ));
            }
            if self.value_type == ValueType::Float && *value != 0.0 && *value as f32 == 0.0 {
                return Err(format!(
                    "--scalar {name}: {value:e} is too small for a float (the program's type: float): it rounds to zero"
                ));
            }
            if values[n].replace(*value).is_some() {
                return Err(format!("--scalar {name}: given twice"));
            }
        }
        Ok(values
            .into_iter()
            .enumerate()
            .map(|(n, v)| v.unwrap_or_else(|| crate::language::interp::scalar_default(n)))
            .collect())
    }
}

/// Checks a program's `scalars:`: identifiers, not reserved, each listed once, at most
/// [`limits::MAX_SCALARS`], and not the name of an array (a stencil, a declared input, or an
/// array read) or of a `let` local.
pub(crate) fn check_scalars(
    scalars: &[String],
    stencils: &[Stencil],
    inputs: &Option<Vec<String>>,
    errors: &mut Vec<Diagnostic>,
) {
    if scalars.len() > limits::MAX_SCALARS {
        errors.push(Diagnostic::new(
            "scalars",
            format!(
                "the program has {} scalars; absinthe handles at most {}",
                scalars.len(),
                limits::MAX_SCALARS
            ),
        ));
        return;
    }
    // Every name that is an array, with what makes it one (the first such place).
    let mut arrays: BTreeMap<String, String> = BTreeMap::new();
    for (n, s) in stencils.iter().enumerate() {
        arrays
            .entry(s.name.clone())
            .or_insert_with(|| format!("the array written by stencils[{n}]"));
    }
    for (n, name) in inputs.iter().flatten().enumerate() {
        arrays
            .entry(name.clone())
            .or_insert_with(|| format!("the input listed at inputs[{n}]"));
    }
    for (n, s) in stencils.iter().enumerate() {
        for e in s.exprs() {
            e.visit_accesses(&mut |a, _| {
                arrays
                    .entry(a.to_string())
                    .or_insert_with(|| format!("an array read by stencils[{n}]"));
            });
        }
    }
    let mut seen = HashSet::new();
    for (n, name) in scalars.iter().enumerate() {
        let path = format!("scalars[{n}]");
        if let Some(problem) = name_problem(name, "a scalar") {
            errors.push(Diagnostic::new(path, problem));
        } else if !seen.insert(name) {
            errors.push(Diagnostic::new(path, format!("`{name}` is listed twice")));
        } else if let Some(what) = arrays.get(name) {
            errors.push(Diagnostic::new(
                path,
                format!("`{name}` is {what}; a scalar and an array may not share a name"),
            ));
        }
    }
    for b in stencils.iter().flat_map(|s| &s.bodies) {
        for l in &b.lets {
            if scalars.contains(&l.name) {
                errors.push(Diagnostic::new(
                    format!("{}.let.{}", b.path, l.name),
                    format!(
                        "local `{}` has the name of a scalar of the program; a `let` name may not shadow a scalar",
                        l.name
                    ),
                ));
            }
        }
    }
}
