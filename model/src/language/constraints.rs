//! A program's `constraints:` (docs/MODEL.md, "Program file"), and the group-index vectors
//! they and the command line give, checked.

use crate::formats::diagnostic::Diagnostic;
use crate::language::program::{Constraints, DIMS};

/// Checks a program's `constraints:` against its domain and stencil count.
pub(crate) fn check_constraints(
    constraints: &Constraints,
    domain: [usize; 3],
    stencils: usize,
    errors: &mut Vec<Diagnostic>,
) {
    if let Some(groups) = &constraints.groups {
        if let Err(msg) = check_group_indices(groups, stencils) {
            errors.push(Diagnostic::new("constraints.groups", msg));
        }
    }
    for (key, bound) in [
        ("tiles_min", constraints.tiles_min),
        ("tiles_max", constraints.tiles_max),
    ] {
        if let Some(b) = bound {
            for d in 0..3 {
                if b[d] < 1 || b[d] > domain[d] {
                    errors.push(Diagnostic::new(
                        format!("constraints.{key}[{d}]"),
                        format!(
                            "a tile count along {} must be between 1 and the domain extent {}, found {}",
                            DIMS[d], domain[d], b[d]
                        ),
                    ));
                }
            }
        }
    }
    if let (Some(lo), Some(hi)) = (constraints.tiles_min, constraints.tiles_max) {
        for d in 0..3 {
            if lo[d] > hi[d] {
                errors.push(Diagnostic::new(
                    format!("constraints.tiles_min[{d}]"),
                    format!("tiles_min {} exceeds tiles_max {}", lo[d], hi[d]),
                ));
            }
        }
    }
}

/// Checks a group-index vector: one entry per stencil, starting at 0, steps of 0 or 1.
pub fn check_group_indices(groups: &[usize], stencils: usize) -> Result<(), String> {
    if groups.len() != stencils {
        return Err(format!(
            "{} group indices given for {} stencils",
            groups.len(),
            stencils
        ));
    }
    if groups.first().is_some_and(|&g| g != 0) {
        return Err("the first group index must be 0".into());
    }
    for (n, w) in groups.windows(2).enumerate() {
        if w[1] != w[0] && w[1] != w[0] + 1 {
            return Err(format!(
                "group indices must grow by 0 or 1 from one stencil to the next; entry {} is {} after {}",
                n + 1,
                w[1],
                w[0]
            ));
        }
    }
    Ok(())
}
