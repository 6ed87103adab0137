//! Compulsory traffic: the bytes any schedule of a program must move between memory and the
//! caches, the bound `bench`'s roofline column divides by the measured bandwidth.

use crate::language::analysis::Analysis;
use crate::language::expr::OperationCounts;

/// Compulsory traffic of a program, in bytes: every input read once over the box its readers
/// touch (the domain grown by their reference extents and access offsets: halo included), every
/// output written once over the box the reference evaluates, each along its own dimensions (a
/// field over `[k]` is one column, a 2-D output one level). Counted as the triad bandwidth
/// counts (a write is one transfer).
pub fn compulsory_bytes(analysis: &Analysis, value_bytes: usize) -> u64 {
    let dom = analysis.domain.map(|d| d as i64);
    let volume = |array: usize, lo: [i64; 3], hi: [i64; 3]| -> u64 {
        (0..3)
            .filter(|&d| analysis.arrays[array].dims.has(d))
            .map(|d| (hi[d] - lo[d]).max(0) as u64)
            .product()
    };
    let mut total = 0u64;
    for &a in &analysis.inputs {
        let (mut lo, mut hi) = ([i64::MAX; 3], [i64::MIN; 3]);
        for s in &analysis.stencils {
            for (array, off) in &s.accesses {
                if *array != a {
                    continue;
                }
                for d in 0..3 {
                    lo[d] = lo[d].min(-(s.extent[d][0] as i64) + off[d] as i64);
                    hi[d] = hi[d].max(dom[d] + s.extent[d][1] as i64 + off[d] as i64);
                }
            }
        }
        if lo[0] != i64::MAX {
            total += volume(a, lo, hi);
        }
    }
    for &s in &analysis.outputs {
        let e = analysis.stencils[s].extent;
        let lo = [0, 1, 2].map(|d| -(e[d][0] as i64));
        let hi = [0, 1, 2].map(|d| dom[d] + e[d][1] as i64);
        total += volume(analysis.stencils[s].array, lo, hi);
    }
    total * value_bytes as u64
}

/// Compulsory operations of a program, by kind: every stencil evaluated once on each cell of the
/// box the reference evaluates it on (its extent beyond the domain included), along its own
/// dimensions, what a schedule that recomputes nothing does (a reader that leaves the box's
/// corners unread needs fewer, which the roof ignores). With each kind's measured throughput
/// this is `bench`'s divider roof (divisions, square roots and calls; adds and multiplies
/// overlap with the loads).
pub fn compulsory_operations(analysis: &Analysis) -> OperationCounts {
    let dom = analysis.domain.map(|d| d as u64);
    analysis
        .stencils
        .iter()
        .map(|s| {
            let dims = analysis.arrays[s.array].dims;
            let span = |d: usize| dom[d] + s.extent[d][0] as u64 + s.extent[d][1] as u64;
            let columns: u64 = (0..2).filter(|&d| dims.has(d)).map(span).product();
            // The levels beyond the domain a stencil without intervals is evaluated on.
            let beyond = if dims.has(2) && !s.intervals {
                s.operation_counts
                    .times(s.extent[2][0] as u64 + s.extent[2][1] as u64)
            } else {
                OperationCounts::default()
            };
            (s.column_operations + beyond).times(columns)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::language::program::Program;

    /// hdiff at 128x128x64 with halo [2, 2, 0]: `in` is read over the domain grown by two
    /// cells in i and j (lap's extent 1 plus its offset 1), `wgt` over the domain, `out` written
    /// over the domain.
    #[test]
    fn hdiff_moves_its_inputs_over_their_halo_and_its_output_once() {
        let program = Program::from_yaml(include_str!("../../../configs/hdiff.yaml")).unwrap();
        let analysis = Analysis::new(&program).unwrap();
        let cells = |x: u64, y: u64| x * y * 64;
        let expected = cells(132, 132) + cells(128, 128) + cells(128, 128);
        assert_eq!(compulsory_bytes(&analysis, 8), expected * 8);
    }

    /// cosmo_colpres: `rho` read over the domain grown along x by `psx`'s reach through `ps`
    /// and `mass`, the field `dz` over its one column, the 2-D output `psx` over one level and
    /// `p` over the domain.
    #[test]
    fn fields_and_2d_outputs_move_over_their_own_dimensions() {
        let program =
            Program::from_yaml(include_str!("../../../configs/cosmo_colpres.yaml")).unwrap();
        let analysis = Analysis::new(&program).unwrap();
        let expected = 66 * 64 * 60 + 60 + 64 * 64 + 64 * 64 * 60;
        assert_eq!(compulsory_bytes(&analysis, 8), expected * 8);
    }

    /// `q` is evaluated over its readers' box (one more cell below along i), one division per
    /// cell; `r` has two intervals, two divisions on the first level and one on the others.
    /// (The divisor, 1e300, is one the FMA build divides by: see `expr::divisor_reciprocal`.)
    #[test]
    fn compulsory_operations_count_each_stencil_once_over_its_box() {
        let program = Program::from_yaml(
            r#"
name: ops
domain: [8, 6, 4]
halo: [1, 0, 0]
outputs: [out, r]
stencils:
  - name: q
    expr: "u(i,j,k) / 1e300"
  - name: out
    expr: "q(i,j,k) - q(i-1,j,k)"
  - name: r
    intervals:
      - k: [0, 1]
        expr: "u(i,j,k) / 1e300 / 1e300"
      - k: [1, null]
        expr: "sqrt(u(i,j,k)) / 1e300"
"#,
        )
        .unwrap();
        let analysis = Analysis::new(&program).unwrap();
        let ops = compulsory_operations(&analysis);
        assert_eq!(ops.divide, 9 * 6 * 4 + 8 * 6 * 2 + 8 * 6 * 3);
        assert_eq!(ops.sqrt, 8 * 6 * 3);
        assert_eq!(ops.simple, 8 * 6 * 4);
        // A 2-D stencil once per column of its box (one more cell along i: `out` reads m at
        // i+1); a reader one level up widens a 3-D stencil's box along k.
        let program = Program::from_yaml(
            r#"
name: ops2
domain: [8, 6, 4]
halo: [1, 0, 1]
outputs: [out]
fields:
  m: [i, j]
  w: [i, j]
stencils:
  - name: m
    expr: "w(i,j) / 1e300"
  - name: q
    expr: "u(i,j,k) / 1e300"
  - name: out
    expr: "q(i,j,k+1) / m(i+1,j)"
"#,
        )
        .unwrap();
        let ops = compulsory_operations(&Analysis::new(&program).unwrap());
        assert_eq!(ops.divide, 9 * 6 + 8 * 6 * 5 + 8 * 6 * 4);
    }
}
