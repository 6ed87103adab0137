//! The global arrays: how the caller allocates them (lead, padded extents, the origin's linear
//! index, the index type) and which ones the kernel takes as parameters.

use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::expr::{Dims, INDEX_NAMES};
use absinthe_model::language::program::ValueType;

use super::access::field_index;
use super::reference::compared_region;
use super::types::{GlobalArray, Role};
use super::Target;

/// How every global array is allocated: `alloc` values per dimension, the domain's first cell
/// `lead` cells in.
pub(super) struct Allocation {
    pub lead: [usize; 3],
    pub alloc: [usize; 3],
    /// The linear index of element (0, 0, 0).
    pub origin_offset: usize,
    /// The C type of indices: `int` on the CUDA target when every index fits, else `long`.
    pub index_type: &'static str,
}

impl Allocation {
    /// Domain (or `within`, a larger domain the arrays are allocated for) plus halo per
    /// dimension; on the CUDA target the domain's first column and the row
    /// pitch lie on 128-byte boundaries (coalesced rows).
    pub fn of(
        analysis: &Analysis,
        within: Option<[usize; 3]>,
        value_type: ValueType,
        target: Target,
    ) -> Allocation {
        let (domain, halo) = (within.unwrap_or(analysis.domain), analysis.halo);
        let mut lead = halo;
        let mut alloc = [0, 1, 2].map(|d| domain[d] + 2 * halo[d]);
        if target == Target::Cuda {
            let line = 128 / value_type.bytes();
            lead[0] = halo[0].div_ceil(line) * line;
            alloc[0] = (lead[0] + domain[0] + halo[0]).div_ceil(line) * line;
        }
        let origin_offset = lead[0] + lead[1] * alloc[0] + lead[2] * alloc[0] * alloc[1];
        let cells: usize = alloc.iter().product();
        let index_type = if target == Target::Cuda && cells < i32::MAX as usize / 2 {
            "int"
        } else {
            "long"
        };
        Allocation {
            lead,
            alloc,
            origin_offset,
            index_type,
        }
    }
}

/// The kernel's array parameters in order: inputs, outputs, temporaries (the stencils that are
/// `stored` but not outputs).
pub(super) fn global_arrays(
    analysis: &Analysis,
    stored: &[bool],
    allocation: &Allocation,
) -> Vec<GlobalArray> {
    let array = |a: usize, role: Role, region| {
        let name = &analysis.arrays[a].name;
        let dims = analysis.arrays[a].dims;
        let alloc = dims.extents(allocation.alloc);
        let lead = [0, 1, 2].map(|d| if dims.has(d) { allocation.lead[d] } else { 0 });
        GlobalArray {
            name: name.clone(),
            param: format!("a_{name}"),
            origin: format!("g_{name}"),
            role,
            array_id: a,
            region,
            dims: dims.names().concat(),
            origin_offset: lead[0] + lead[1] * alloc[0] + lead[2] * alloc[0] * alloc[1],
            alloc,
            lead,
            cells: alloc.iter().product(),
            file_extent: dims.extents([0, 1, 2].map(|d| analysis.domain[d] + 2 * analysis.halo[d])),
            file_shift: [0, 1, 2].map(|d| lead[d] - if dims.has(d) { analysis.halo[d] } else { 0 }),
            layout: layout(dims, lead, alloc),
        }
    };
    let mut arrays = Vec::new();
    for &a in &analysis.inputs {
        arrays.push(array(a, Role::Input, None));
    }
    for want in [Role::Output, Role::Temporary] {
        for (s, info) in analysis.stencils.iter().enumerate() {
            let role = if info.is_output {
                Role::Output
            } else if stored[s] {
                Role::Temporary
            } else {
                continue;
            };
            if role == want {
                arrays.push(array(info.array, role, Some(compared_region(analysis, s))));
            }
        }
    }
    arrays
}

/// `(i + lead) + (j + lead) * stride + ...` over the dimensions in `dims`.
fn layout(dims: Dims, lead: [usize; 3], alloc: [usize; 3]) -> String {
    field_index(dims, alloc, |d| {
        format!("({} + {})", INDEX_NAMES[d], lead[d])
    })
}
