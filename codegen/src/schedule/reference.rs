//! The naive reference every harness verifies against: every stencil in program order over the
//! box the semantics evaluates it on.

use std::cell::RefCell;

use absinthe_model::cost_model::boxes::Interval;
use absinthe_model::language::analysis::{Analysis, ArrayKind};
use absinthe_model::language::program::Program;

use super::access::global_access;
use super::types::{ReferenceStencil, Schedule, StepRead};

/// The box the reference evaluates stencil `s` on: the domain grown by its analysis extent (a
/// 2-D stencil's: its level along k).
pub(super) fn reference_region(analysis: &Analysis, s: usize) -> [Interval; 3] {
    let e = analysis.stencils[s].extent;
    let domain = analysis.domain;
    let mut region = [0, 1, 2].map(|d| [-(e[d][0] as i64), (domain[d] + e[d][1]) as i64]);
    if let Some(level) = analysis.stencils[s].plane {
        region[2] = [level, level + 1];
    }
    region
}

/// The box of stencil `s`'s array that the harness compares: the reference's, in the array's
/// own coordinates (a 2-D stencil's one level is its level 0).
pub(super) fn compared_region(analysis: &Analysis, s: usize) -> [Interval; 3] {
    let mut region = reference_region(analysis, s);
    if analysis.stencils[s].plane.is_some() {
        region[2] = [0, 1];
    }
    region
}

/// The naive reference of `program`: every stencil in program order over the box the
/// semantics evaluates it on, reading the reference arrays `r_<name>` and the inputs.
pub(super) fn reference_stencils(
    program: &Program,
    analysis: &Analysis,
    alloc: [usize; 3],
) -> Vec<ReferenceStencil> {
    let vt = program.value_type;
    let local_ident = |name: &str| format!("l_{name}");
    program
        .stencils
        .iter()
        .enumerate()
        .map(|(s, st)| {
            let reads = RefCell::new(Vec::new());
            let access = |array: &str, off: [i32; 3]| -> String {
                let origin = if program.stencil_index(array).is_some() {
                    format!("r_{array}")
                } else {
                    format!("g_{array}")
                };
                let c = global_access(analysis, alloc, array, off, &origin);
                reads.borrow_mut().push(StepRead {
                    c: c.clone(),
                    array: array.to_string(),
                    buffer: false,
                    offset: off,
                });
                c
            };
            let body = super::step::body_code(st, program.domain[2], vt, &access, &local_ident);
            ReferenceStencil {
                name: st.name.clone(),
                target: format!("r_{}", st.name),
                store: global_access(analysis, alloc, &st.name, [0; 3], &format!("r_{}", st.name)),
                region: reference_region(analysis, s),
                lets: body.lets,
                code: body.code,
                intervals: body.intervals,
                computation: st.computation.name().to_string(),
                reads: reads.into_inner(),
            }
        })
        .collect()
}

/// The names of every stencil's reference array, in array-id order.
pub(super) fn stencil_arrays_of(analysis: &Analysis) -> Vec<String> {
    analysis
        .arrays
        .iter()
        .filter(|a| matches!(a.kind, ArrayKind::Stencil(_)))
        .map(|a| a.name.clone())
        .collect()
}

/// The dimensions of every stencil's reference array (as [`stencil_arrays_of`]).
pub(super) fn stencil_dims_of(analysis: &Analysis) -> Vec<String> {
    analysis
        .arrays
        .iter()
        .filter(|a| matches!(a.kind, ArrayKind::Stencil(_)))
        .map(|a| a.dims.names().concat())
        .collect()
}

/// The linear index of element (0, 0, 0) of every stencil's reference array (as
/// [`stencil_arrays_of`]), `lead` cells in along each of its dimensions of `alloc`.
pub(super) fn stencil_origins_of(
    analysis: &Analysis,
    lead: [usize; 3],
    alloc: [usize; 3],
) -> Vec<usize> {
    analysis
        .arrays
        .iter()
        .filter(|a| matches!(a.kind, ArrayKind::Stencil(_)))
        .map(|a| {
            let l = [0, 1, 2].map(|d| if a.dims.has(d) { lead[d] } else { 0 });
            l[0] + l[1] * alloc[0] + l[2] * alloc[0] * alloc[1]
        })
        .collect()
}

impl Schedule {
    /// The same kernel, verified against the reference of `original` instead of the program it
    /// was lowered from: for a configuration of an inlined program (`model::inline`), whose
    /// outputs must equal the original program's bit for bit. Both programs have the same
    /// domain, halo, type, inputs and outputs; the reference keeps every original stencil.
    /// The inputs keep the original program's array ids, which seed the harness's input
    /// values (`absinthe_value`), so both programs run on the same inputs as the interpreter
    /// gives the original.
    pub fn with_reference(mut self, original: &Program, analysis: &Analysis) -> Schedule {
        self.reference = reference_stencils(original, analysis, self.alloc);
        self.stencil_arrays = stencil_arrays_of(analysis);
        self.stencil_origins = stencil_origins_of(analysis, self.lead, self.alloc);
        self.stencil_dims = stencil_dims_of(analysis);
        for a in &mut self.arrays {
            if let Some(id) = analysis.array_id(&a.name) {
                a.array_id = id;
            }
        }
        self
    }

    /// The stencils of the reference that the kernels compute where they are read, separated
    /// by spaces.
    pub fn inlined_names(&self) -> String {
        let kept: std::collections::HashSet<&str> = self
            .groups
            .iter()
            .flat_map(|g| g.steps.iter().map(|s| s.name.as_str()))
            .collect();
        self.reference
            .iter()
            .filter(|r| !kept.contains(r.name.as_str()))
            .map(|r| r.name.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }
}
