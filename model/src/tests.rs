//! Unit tests of the model crate on hand-checked programs.

use crate::cost_model::evaluate::{evaluate, Configuration, Infeasibility, STORE_WEIGHT};
use crate::formats::machine::{Machine, ModelMachine};
use crate::language::analysis::Analysis;
use crate::language::program::Program;

const EXAMPLE2: &str = include_str!("../../configs/example2.yaml");
const HDIFF: &str = include_str!("../../configs/hdiff.yaml");

fn analyse(text: &str) -> Analysis {
    let p = Program::from_yaml(text).expect("valid program");
    Analysis::new(&p).expect("valid analysis")
}

fn errors(text: &str) -> Vec<String> {
    match Program::from_yaml(text) {
        Err(d) => d
            .iter()
            .map(|d| format!("{}: {}", d.path, d.message))
            .collect(),
        Ok(p) => match Analysis::new(&p) {
            Err(d) => d
                .iter()
                .map(|d| format!("{}: {}", d.path, d.message))
                .collect(),
            Ok(_) => vec![],
        },
    }
}

fn accesses(a: &Analysis, s: usize) -> Vec<(String, [i32; 3])> {
    a.stencils[s]
        .accesses
        .iter()
        .map(|(arr, o)| (a.arrays[*arr].name.clone(), *o))
        .collect()
}

#[test]
fn example2_analysis_by_hand() {
    let a = analyse(EXAMPLE2);
    let i0 = a.array_id("i0").unwrap();
    let i1 = a.array_id("i1").unwrap();
    let s0 = a.array_id("s0").unwrap();
    // s0 = 0.5 * (i0(i+1,j,k) + i0(i,j,k)): two distinct reads, c = 3.
    assert_eq!(
        accesses(&a, 0),
        vec![("i0".into(), [0, 0, 0]), ("i0".into(), [1, 0, 0])]
    );
    assert_eq!(a.stencils[0].fetch_weight, 3);
    assert_eq!(a.stencils[0].bounds[&i0], [(0, 1), (0, 0), (0, 0)]);
    // s1 = i1 * (s0(j+1) - s0(j-1)): three distinct reads, c = 4.
    assert_eq!(a.stencils[1].fetch_weight, 4);
    assert_eq!(a.stencils[1].bounds[&s0], [(0, 0), (-1, 1), (0, 0)]);
    assert_eq!(a.stencils[1].bounds[&i1], [(0, 0), (0, 0), (0, 0)]);
    // s0 is evaluated one row beyond the domain on both y sides for s1.
    assert_eq!(a.stencils[0].extent, [[0, 0], [1, 1], [0, 0]]);
    assert_eq!(a.stencils[1].extent, [[0, 0]; 3]);
    assert_eq!(a.stencils[0].readers, vec![1]);
    assert_eq!(a.outputs, vec![1]);
    assert_eq!(a.inputs.len(), 2);
}

#[test]
fn hdiff_analysis_by_hand() {
    let a = analyse(HDIFF);
    let id = |n: &str| a.array_id(n).unwrap();
    // lap reads the 5-point star of `in`: c = 6, box [-1,1] x [-1,1] x [0,0].
    assert_eq!(a.stencils[0].fetch_weight, 6);
    assert_eq!(a.stencils[0].bounds[&id("in")], [(-1, 1), (-1, 1), (0, 0)]);
    assert_eq!(a.stencils[1].fetch_weight, 3);
    assert_eq!(a.stencils[1].bounds[&id("lap")], [(0, 1), (0, 0), (0, 0)]);
    assert_eq!(a.stencils[2].fetch_weight, 3);
    assert_eq!(a.stencils[2].bounds[&id("lap")], [(0, 0), (0, 1), (0, 0)]);
    assert_eq!(a.stencils[3].fetch_weight, 6);
    assert_eq!(a.stencils[3].bounds[&id("fli")], [(-1, 0), (0, 0), (0, 0)]);
    assert_eq!(a.stencils[3].bounds[&id("flj")], [(0, 0), (-1, 0), (0, 0)]);
    // out on the domain; fli one column to the left; flj one row below; lap both.
    assert_eq!(a.stencils[3].extent, [[0, 0]; 3]);
    assert_eq!(a.stencils[1].extent, [[1, 0], [0, 0], [0, 0]]);
    assert_eq!(a.stencils[2].extent, [[0, 0], [1, 0], [0, 0]]);
    assert_eq!(a.stencils[0].extent, [[1, 1], [1, 1], [0, 0]]);
    assert_eq!(a.stencils[0].readers, vec![1, 2]);
}

#[test]
fn bad_programs_are_rejected_with_precise_messages() {
    let base = |stencils: &str, outputs: &str, halo: &str| {
        format!(
            "name: t\ndomain: [8, 8, 8]\nhalo: {halo}\noutputs: [{outputs}]\nstencils:\n{stencils}"
        )
    };
    let cases: Vec<(String, &str)> = vec![
        (
            base("  - name: a\n    expr: b(i,j,k)\n  - name: b\n    expr: x(i,j,k)\n", "a", "[1,1,1]"),
            "stencils[0].expr: stencil `a` reads `b`, which is defined later (stencils[1])",
        ),
        (
            base("  - name: a\n    expr: a(i-1,j,k)\n", "a", "[1,1,1]"),
            "stencils[0].expr: stencil `a` reads its own array `a`",
        ),
        (
            base("  - name: a\n    expr: x(i,j,k)\n  - name: b\n    expr: x(i,j,k)\n", "b", "[1,1,1]"),
            "stencils[0].name: stencil `a` is neither an output nor read by another stencil",
        ),
        (
            base("  - name: a\n    expr: x(i,j,k)\n", "x", "[1,1,1]"),
            "outputs[0]: `x` is an input array, not a stencil",
        ),
        (
            base("  - name: a\n    expr: x(i,j,k)\n", "zz", "[1,1,1]"),
            "outputs[0]: `zz` is not a stencil of this program",
        ),
        (
            base("  - name: a\n    expr: x(i-2,j,k)\n", "a", "[1,1,1]"),
            "stencils[0].expr: stencil `a` reads `x` 2 cell(s) beyond the domain on the i- side",
        ),
        (
            base("  - name: a\n    expr: x(i,j+1,k)\n  - name: b\n    expr: a(i,j+1,k)\n", "b", "[1,1,1]"),
            "the halo along j is 1, it must be at least 2",
        ),
        (
            base("  - name: a\n    expr: x(i,j,k)\n  - name: a\n    expr: x(i,j,k)\n", "a", "[1,1,1]"),
            "stencils[1].name: duplicate stencil name `a`",
        ),
        (
            base("  - name: a\n    let:\n      y: 1.0\n    expr: y + y(i,j,k)\n", "a", "[1,1,1]"),
            "stencils[0].let.y: local `y` has the name of an array",
        ),
        (
            base("  - name: a\n    expr: q + x(i,j,k)\n", "a", "[1,1,1]"),
            "stencils[0].expr: `q` is not defined",
        ),
        (
            base("  - name: a\n    expr: x(i,j,k) +\n", "a", "[1,1,1]"),
            "stencils[0].expr:",
        ),
        (
            "name: t\ndomain: [0, 8, -1]\nhalo: [1,1,1]\noutputs: [a]\nstencils:\n  - name: a\n    expr: x(i,j,k)\n".into(),
            "domain[0]: the domain extent along i must be between 1 and 2147483647, found 0",
        ),
        (
            "name: t\ndomain: [4, 8, 8]\nhalo: [1,-1,1]\noutputs: [a]\nstencils:\n  - name: a\n    expr: x(i,j,k)\n".into(),
            "halo[1]: the halo along j must be between 0 and 65536, found -1",
        ),
        (
            "name: t\ndomain: [4, 8, 8]\nhalo: [1,1,1]\nouputs: [a]\nstencils:\n  - name: a\n    expr: x(i,j,k)\n".into(),
            "unknown field `ouputs`",
        ),
        (
            base("  - name: a\n    expr: x(i,j,k)\n    flavour: sweet\n", "a", "[1,1,1]"),
            "stencils[0].flavour: unknown field `flavour`",
        ),
    ];
    for (text, expected) in cases {
        let errs = errors(&text);
        assert!(
            errs.iter().any(|e| e.contains(expected)),
            "expected an error containing {expected:?}, got {errs:?} for\n{text}"
        );
    }
}

#[test]
fn expression_errors_carry_the_column() {
    let text = "name: t\ndomain: [4, 4, 4]\nhalo: [1,1,1]\noutputs: [a]\nstencils:\n  - name: a\n    expr: x(i,j,k) + sin(x(i,j,k))\n";
    let d = Program::from_yaml(text).unwrap_err();
    let s = d[0].snippet.as_ref().expect("snippet");
    assert_eq!(d[0].path, "stencils[0].expr");
    assert_eq!(s.column, 12, "{:?}", d[0]);
    assert!(d[0].message.contains("unknown function `sin`"));
}

fn test_machine() -> ModelMachine {
    let m = Machine::from_yaml(
        "name: hand\ncores: 4\ncache_bytes: 1048576\ncache_fraction: 0.5\nparams:\n  fast: {peel: 3.0e-10, body: 2.0e-11}\n  slow_base: {peel: 1.0e-10, body: 1.0e-11}\n  slow_stream: {peel: 1.0e-9, body: 1.0e-10}\n",
    )
    .unwrap();
    m.model_view(8).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1e-30)
}

/// The model's arithmetic (docs/MODEL.md) worked by hand for example2 (D = 64 x 64 x 60,
/// n = (1, 4, 6)).
#[test]
fn example2_evaluate_fused_by_hand() {
    let a = analyse(EXAMPLE2);
    let m = test_machine();
    let config = Configuration::new(vec![0, 0], vec![[1, 4, 6]]);
    let cost = evaluate(&a, &m, &config);
    assert!(cost.is_feasible(), "{:?}", cost.infeasible);
    let s: Vec<_> = cost.stencils().collect();
    // s0 is read by s1 at j-1 and j+1 inside the group: e^{y-} = e^{y+} = 1.
    assert_eq!(s[0].widths, [[0, 0], [1, 1], [0, 0]]);
    assert_eq!(s[1].widths, [[0, 0]; 3]);
    // s0 loads i0 and stores nothing; s1 loads i1 (s0 is produced in the group) and stores.
    assert_eq!(s[0].loads, vec![a.array_id("i0").unwrap()]);
    assert!(!s[0].store);
    assert_eq!(s[1].loads, vec![a.array_id("i1").unwrap()]);
    assert!(s[1].store);
    // Weights: c = 3, c^y = 3 * 2; m = 1, m^y = 2; s = 1, s^x = 1 (i0 at i+1), s^y = 2.
    // s1's store counts twice (STORE_WEIGHT).
    assert_eq!(s[0].fast_weights, [3, 0, 6, 0]);
    assert_eq!(s[0].base_weights, [1, 0, 2, 0]);
    assert_eq!(s[0].stream_weights, [1, 1, 2, 0]);
    assert_eq!(s[1].fast_weights, [4, 0, 0, 0]);
    assert_eq!(s[1].stream_weights, [3, 0, 0, 0]);
    // f^p = n^x (DyDz w + Dz n^y wy + Dy n^z wz) with DyDz = 3840, Dz n^y = 240, Dy n^z = 384.
    // f^b = 245760 w + 3840 wx + 15360 wy + 24576 wz.
    assert_eq!(s[0].counts.fast.peel, 3840 * 3 + 240 * 6); // 12960
    assert_eq!(s[0].counts.fast.body, 245760 * 3 + 15360 * 6); // 829440
    assert_eq!(s[0].counts.slow_base.peel, 3840 + 240 * 2); // 4320
    assert_eq!(s[0].counts.slow_base.body, 245760 + 15360 * 2); // 276480
    assert_eq!(s[0].counts.slow_stream.peel, 3840 + 240 * 2);
    assert_eq!(s[0].counts.slow_stream.body, 245760 + 3840 + 15360 * 2);
    // s0: peel = max(12960 * 3e-10, 4320e-10 + 4320e-9) = 4.752e-6,
    //     body = max(829440 * 2e-11, 276480e-11 + 280320e-10) = 3.07968e-5.
    assert!(close(s[0].peel, 4.752e-6));
    assert!(close(s[0].body, 3.07968e-5));
    // s1: peel = max(15360 * 3e-10, 3840e-10 + 11520e-9) = 1.1904e-5,
    //     body = max(983040 * 2e-11, 245760e-11 + 737280e-10) = 7.61856e-5.
    assert_eq!(s[1].counts.fast.peel, 3840 * 4);
    assert!(close(s[1].peel, 1.1904e-5));
    assert!(close(s[1].body, 7.61856e-5));
    // Overhead: 6 (1e-11 + 1e-10) * 24 tiles * 2 stencils = 3.168e-8.
    assert!(close(cost.groups[0].overhead, 3.168e-8));
    assert!(close(cost.total, 3.55488e-5 + 8.80896e-5 + 3.168e-8));
}

#[test]
fn example2_evaluate_unfused_by_hand() {
    let a = analyse(EXAMPLE2);
    let m = test_machine();
    let config = Configuration::new(vec![0, 1], vec![[1, 4, 6], [1, 4, 6]]);
    let cost = evaluate(&a, &m, &config);
    assert!(cost.is_feasible());
    let s: Vec<_> = cost.stencils().collect();
    // Unfused: no redundant rows; s0 stores (s1 reads it from another group), s1 loads s0 with
    // a boundary of one row on each y side. Stores count twice.
    assert_eq!(s[0].widths, [[0, 0]; 3]);
    assert!(s[0].store);
    assert_eq!(s[0].stream_weights, [3, 1, 0, 0]);
    assert_eq!(s[1].stream_weights, [4, 0, 2, 0]);
    // s0: peel = max(11520 * 3e-10, 3840e-10 + 11520e-9) = 1.1904e-5;
    //     body = max(737280 * 2e-11, 245760e-11 + 741120e-10) = 7.65696e-5.
    assert!(close(s[0].time, 1.1904e-5 + 7.65696e-5));
    // s1: peel = max(15360 * 3e-10, 3840e-10 + 15840e-9) = 1.6224e-5;
    //     body = max(983040 * 2e-11, 245760e-11 + 1013760e-10) = 1.038336e-4.
    assert_eq!(s[1].counts.slow_stream.peel, 3840 * 4 + 240 * 2);
    assert_eq!(s[1].counts.slow_stream.body, 245760 * 4 + 15360 * 2);
    assert!(close(s[1].time, 1.6224e-5 + 1.038336e-4));
    assert!(close(cost.total, 8.84736e-5 + 1.200576e-4 + 3.168e-8));
}

#[test]
fn infeasibility_reasons() {
    let a = analyse(EXAMPLE2);
    let m = test_machine();
    let one = |tiles: [usize; 3]| {
        evaluate(&a, &m, &Configuration::new(vec![0, 0], vec![tiles])).infeasible
    };
    // 3 tiles for 4 threads.
    assert!(matches!(
        one([1, 1, 3]),
        Some(Infeasibility::TooFewTiles { .. })
    ));
    // 5 tiles: k = 2, 0.95 * 4 * 2 = 7.6 > 5.
    assert!(matches!(
        one([1, 1, 5]),
        Some(Infeasibility::ParallelEfficiency { .. })
    ));
    // 7 tiles of ceil(60/7) = 9 along k cover 63 > 60 / 0.98.
    assert!(matches!(
        one([1, 4, 7]),
        Some(Infeasibility::UnevenTiles { dim: 2, .. })
    ));
    // 4 tiles: 61440 cells x 2 arrays of s0 > 65536 values.
    assert!(matches!(
        one([1, 2, 2]),
        Some(Infeasibility::Cache {
            stencil: 0,
            arrays: 2,
            ..
        })
    ));
    // 8 tiles: 30720 cells x 2 arrays fit, x 4 arrays (with s1) do not.
    assert!(matches!(
        one([1, 2, 4]),
        Some(Infeasibility::Cache {
            stencil: 1,
            arrays: 4,
            ..
        })
    ));
    assert_eq!(one([1, 4, 4]), None);
}

#[test]
fn group_arrays_limit_rules_out_groups_that_touch_more_arrays_in_programs_streamed_along_y() {
    use crate::cost_model::evaluate::{group_shape, stream_shape};
    // hdiff has no z offsets: its groups stream along y.
    let a = analyse(HDIFF);
    assert_eq!(stream_shape(&a).dim, 1);
    let n = a.stencils.len();
    let mut m = test_machine();
    let fused = |tiles: [usize; 3], stream: bool| {
        let mut c = Configuration::new(vec![0; n], vec![tiles]);
        c.stream = if stream { vec![0] } else { vec![] };
        c
    };
    let tiles = [1, 2, 2];
    assert_eq!(evaluate(&a, &m, &fused(tiles, true)).infeasible, None);
    let arrays = group_shape(&a, 0..n, STORE_WEIGHT).arrays_touched;
    m.group_arrays = arrays - 1;
    let why = evaluate(&a, &m, &fused(tiles, true)).infeasible;
    assert!(
        matches!(why, Some(Infeasibility::Arrays { arrays: x, limit, .. }) if x == arrays && limit == arrays - 1),
        "{why:?}"
    );
    let text = why.unwrap().to_string();
    assert!(text.contains(&format!("touches {arrays} arrays")), "{text}");
    let shape = group_shape(&a, 0..n, STORE_WEIGHT);
    assert!(!shape.fits_cache(&a, &m, Some(stream_shape(&a)), tiles));
    // Unstreamed tiles of the same program are limited too (or the optimum would escape the
    // limit by not streaming).
    let unstreamed = [[1, 8, 16], [2, 8, 8], [1, 16, 8], [4, 8, 4]]
        .into_iter()
        .find(|&t| {
            let mut free = m;
            free.group_arrays = usize::MAX;
            evaluate(&a, &free, &fused(t, false)).infeasible.is_none()
        })
        .expect("an unstreamed tiling that fits");
    assert!(matches!(
        evaluate(&a, &m, &fused(unstreamed, false)).infeasible,
        Some(Infeasibility::Arrays { .. })
    ));
    // At the limit, feasible again.
    m.group_arrays = arrays;
    assert_eq!(evaluate(&a, &m, &fused(tiles, true)).infeasible, None);
    assert_eq!(evaluate(&a, &m, &fused(unstreamed, false)).infeasible, None);
    // A program with z offsets streams along z: the limit does not apply.
    let z = analyse(
        "name: z\ndomain: [32, 32, 32]\nhalo: [0, 0, 1]\noutputs: [b]\nstencils:\n  - name: a\n    expr: \"x(i,j,k-1) + x(i,j,k+1)\"\n  - name: b\n    expr: \"a(i,j,k) * y(i,j,k)\"\n",
    );
    assert_eq!(stream_shape(&z).dim, 2);
    let mut tight = test_machine();
    let both = Configuration::new(vec![0, 0], vec![[1, 2, 2]]);
    assert_eq!(evaluate(&z, &tight, &both).infeasible, None);
    tight.group_arrays = 2;
    assert_eq!(evaluate(&z, &tight, &both).infeasible, None);
    // The file's key is read and checked.
    let file = Machine::from_yaml("name: x\ngroup_arrays: 3\n").unwrap();
    assert_eq!(file.group_arrays, Some(3));
    let bad = Machine::from_yaml("name: x\ngroup_arrays: 1\n").unwrap_err();
    assert_eq!(bad[0].path, "group_arrays");
}

/// Streaming changes the working set of a tile and nothing else: example2 has no z offsets, so
/// it streams along y with a window of 1 + 1 (s0 is evaluated one row ahead) + 1 (s1 reads it
/// one row back) = 3 rows.
#[test]
fn streaming_shrinks_the_working_set_only() {
    use crate::cost_model::evaluate::{stream_shape, StreamShape};
    let a = analyse(EXAMPLE2);
    let m = test_machine();
    let shape = stream_shape(&a);
    assert_eq!(
        shape,
        StreamShape {
            dim: 1,
            window: 3,
            always: false
        }
    );
    let plain = Configuration::new(vec![0, 0], vec![[1, 2, 4]]);
    let streamed = Configuration {
        stream: vec![0],
        ..plain.clone()
    };
    let (p, s) = (evaluate(&a, &m, &plain), evaluate(&a, &m, &streamed));
    // Whole tiles: 4 arrays x 64 x 32 x 15 cells > 65536 values; streamed: 4 x 64 x 3.
    assert!(matches!(
        p.infeasible,
        Some(Infeasibility::Cache {
            stencil: 1,
            arrays: 4,
            ..
        })
    ));
    assert!(s.is_feasible(), "{:?}", s.infeasible);
    assert_eq!(p.total, s.total);
    assert_eq!(
        plain.clone().canonical_stream(&a, &m, Some(shape)),
        streamed
    );
    // Whole tiles that fit the cache do not stream.
    let short = Configuration::new(vec![0, 0], vec![[1, 32, 60]]);
    assert_eq!(short.clone().canonical_stream(&a, &m, Some(shape)), short);
    assert_eq!(
        plain.clone().smallest_working_set(a.domain, Some(shape)),
        streamed
    );
    // Stream lists must name groups in increasing order.
    let bad = Configuration {
        stream: vec![1],
        ..plain
    };
    assert!(bad.check_shape(2, a.domain).is_err());
}

/// `boxes::longest_loop` (O(1), at the clipping breakpoints) equals the longest loop box over
/// every tile, for widths within and beyond the extents.
#[test]
fn longest_loop_equals_the_longest_tile() {
    use crate::cost_model::boxes::{grid, longest_loop, tile_intervals};
    let mut rng = crate::support::rng::Rng::new(17);
    for _ in 0..20_000 {
        let domain = rng.range(1, 60) as usize;
        let tile = rng.range(1, domain as i64) as usize;
        let widths = [rng.below(7), rng.below(7)];
        let extent = [rng.below(7), rng.below(7)];
        let brute = (0..grid(domain, tile))
            .map(|t| {
                let l = tile_intervals(domain, tile, t, widths, extent).1;
                (l[1] - l[0]).max(0) as usize
            })
            .max()
            .unwrap();
        assert_eq!(
            longest_loop(domain, tile, widths, extent),
            brute,
            "D {domain} T {tile} widths {widths:?} extent {extent:?}"
        );
    }
}

/// The GPU model's shared-memory test worked by hand for hdiff (D = 128 x 128 x 64) with
/// tiles (4, 8, 16), i.e. 32 x 16 x 4 cells: the block keeps lap (x and y widths [1, 1]:
/// 34 x 18), fli (x [1, 0]: 33 x 16) and flj (y [1, 0]: 32 x 17); out is stored, not buffered,
/// and the inputs are read from global memory. Streamed along z each buffer keeps one plane
/// (no z offsets): 612 + 528 + 544 = 1684 values; whole tiles keep 4 planes: 6736.
#[test]
fn gpu_shared_memory_by_hand() {
    use crate::cost_model::evaluate::{group_shape, stream_shape_on, Infeasibility};
    let a = analyse(HDIFF);
    let mut m = test_machine();
    m.gpu = true;
    m.threads = 4;
    m.cache_values = 2000.0;
    let shape = group_shape(&a, 0..4, STORE_WEIGHT);
    assert_eq!(shape.shared_values(&a, [4, 8, 16], true, 256), 1684);
    assert_eq!(shape.shared_values(&a, [4, 8, 16], false, 256), 6736);
    let s = stream_shape_on(&a, &m);
    assert_eq!((s.dim, s.always), (2, true));
    let plain = Configuration::new(vec![0; 4], vec![[4, 8, 16]]);
    assert_eq!(
        evaluate(&a, &m, &plain).infeasible,
        Some(Infeasibility::SharedMemory {
            group: 0,
            buffers: 3,
            values: 6736,
            capacity: 2000
        })
    );
    let streamed = plain.clone().canonical_stream(&a, &m, Some(s));
    assert_eq!(streamed.stream, vec![0]);
    let cost = evaluate(&a, &m, &streamed);
    assert!(cost.is_feasible(), "{:?}", cost.infeasible);
    // Streaming does not change the time.
    assert_eq!(cost.total, evaluate(&a, &m, &plain).total);
}

/// On a GPU, hdiff (D = 128 x 128 x 64) with tiles (4, 8, 16): each stencil's fast and compute
/// bodies are its per-cell bodies times its loop boxes' lane slots over their cells along x and
/// y (lap's 34-wide boxes overhang a 32-wide block), peels and slow memory unchanged; the
/// search's group time (`GroupShape::time`) equals `evaluate`'s; on a CPU nothing is scaled.
#[test]
fn gpu_counts_fast_and_compute_bodies_per_lane_slot() {
    use crate::cost_model::boxes::lane_slots;
    use crate::cost_model::evaluate::group_shape;
    let a = analyse(HDIFF);
    let cpu = test_machine();
    let mut gpu = cpu;
    gpu.gpu = true;
    gpu.threads = 4;
    gpu.block_threads = 256;
    let tiles = [4, 8, 16];
    let config = Configuration::new(vec![0; 4], vec![tiles]);
    let per_cell = evaluate(&a, &cpu, &config);
    let on_gpu = evaluate(&a, &gpu, &config);
    let shape = group_shape(&a, 0..4, STORE_WEIGHT);
    let block = shape.block_plan(&a, tiles, true, 256).block;
    let mut grew = 0;
    for (s, (c, g)) in per_cell.stencils().zip(on_gpu.stencils()).enumerate() {
        let (mut slots, mut cells) = (1u128, 1u128);
        for d in 0..2 {
            let (sl, ce) = lane_slots(
                128,
                128 / tiles[d],
                c.widths[d],
                a.stencils[s].extent[d],
                block[d],
            );
            slots *= sl;
            cells *= ce;
        }
        grew += usize::from(slots > cells);
        assert_eq!(
            g.counts.fast.body,
            c.counts.fast.body * slots / cells,
            "stencil {s}"
        );
        assert_eq!(g.counts.compute.body, c.counts.compute.body * slots / cells);
        assert_eq!(g.counts.fast.peel, c.counts.fast.peel);
        assert_eq!(g.counts.slow_stream, c.counts.slow_stream);
        assert_eq!(g.counts.slow_base, c.counts.slow_base);
    }
    assert!(grew > 0, "no loop box overhangs the block {block:?}");
    let time = shape.time(&a, &gpu, tiles);
    assert!(
        (time - on_gpu.total).abs() <= 1e-12 * on_gpu.total,
        "{time} vs {}",
        on_gpu.total
    );
    assert_eq!(shape.time(&a, &cpu, tiles), per_cell.total);
}

#[test]
fn operations_count_arithmetic_by_its_weight_lets_included() {
    use crate::formats::machine::{CALL_OPERATION, DIVIDE_OPERATION, SQRT_OPERATION};
    use crate::language::expr::{
        parse_expr, RECIPROCAL_DIVISION_OPERATIONS, SPLIT_RECIPROCAL_DIVISION_OPERATIONS,
    };
    use crate::language::program::ValueType;
    let e = parse_expr(
        "a(i,j,k) / 1e300 + sqrt(b(i,j,k)) * -c(i,j,k) > 0.0 ? exp(a(i,j,k)) : min(a(i,j,k), 1.0)",
    )
    .unwrap();
    // / + sqrt * neg > ?: exp min: the divider's division and square root beside the pipes'
    // six simple operations and the call.
    let expected = (DIVIDE_OPERATION + SQRT_OPERATION).max(6 + CALL_OPERATION);
    assert_eq!(e.operations(), expected);
    // A division by a power of two is a multiply, one of two literals folded; one by a literal
    // whose rounded reciprocal is close enough a multiply and two FMAs (and three more simple
    // operations); one by a literal whose reciprocal needs its rest (49) a multiply and an FMA
    // more; by anything else (a variable, 1e300 or, as a float, 1e31, whose reciprocal's rest is
    // subnormal, or 3e38, whose reciprocal is), a division. Which way a literal goes depends on the type it is rounded to.
    let (r, split) = (
        RECIPROCAL_DIVISION_OPERATIONS,
        SPLIT_RECIPROCAL_DIVISION_OPERATIONS,
    );
    for (text, vt, divisions, simple) in [
        ("a(i,j,k) / 2.0", ValueType::Double, 0, 1),
        ("a(i,j,k) / -0.25", ValueType::Double, 0, 1),
        ("6.0 / 3.0", ValueType::Double, 0, 1),
        ("1.0 / a(i,j,k)", ValueType::Double, 1, 0),
        ("a(i,j,k) / 1e300", ValueType::Double, 1, 0),
        ("a(i,j,k) / 49.0", ValueType::Double, 0, split),
        ("a(i,j,k) / 0.3", ValueType::Double, 0, r),
        ("a(i,j,k) / -60.0", ValueType::Double, 0, r),
        ("a(i,j,k) / 3.0", ValueType::Float, 0, r),
        ("a(i,j,k) / 7.0", ValueType::Float, 0, split),
        ("a(i,j,k) / 1e31", ValueType::Float, 1, 0),
        ("a(i,j,k) / 3e38", ValueType::Float, 1, 0),
    ] {
        let counts = parse_expr(text).unwrap().operation_counts_in(vt);
        assert_eq!(
            (counts.divide, counts.simple + counts.literal_simple),
            (divisions, simple),
            "{text}"
        );
        // A division through the reciprocal is counted apart, to be weighed as the build does.
        assert_eq!(counts.literal_divide, u64::from(simple > 1), "{text}");
    }
    assert_eq!(parse_expr("a(i,j,k)").unwrap().operations(), 0);
    // hdiff: lap = -4.0 * in + 4 neighbours: 1 mul + 4 adds (a negative literal is a number).
    let a = analyse(HDIFF);
    assert_eq!(a.stencils[0].operations, 5);
    let program = Program::from_yaml(
        "name: lets\ndomain: [4, 4, 4]\nhalo: [0, 0, 0]\noutputs: [s]\nstencils:\n  - name: s\n    let:\n      d: \"a(i,j,k) * 2.0\"\n      e: \"d + d\"\n    expr: \"e / d\"\n",
    )
    .unwrap();
    let a = Analysis::new(&program).unwrap();
    assert_eq!(a.stencils[0].operations, DIVIDE_OPERATION.max(1 + 1));
}

#[test]
fn operations_are_counted_by_kind_and_weighed_with_the_machines_weights() {
    use crate::formats::machine::OperationWeights;
    use crate::language::expr::{parse_expr, OperationCounts};
    let e = parse_expr("a(i,j,k) / b(i,j,k) + sqrt(a(i,j,k)) / exp(b(i,j,k)) * pow(a(i,j,k), 2.0)")
        .unwrap();
    let counts = e.operation_counts();
    assert_eq!(
        counts,
        OperationCounts {
            simple: 2,
            divide: 2,
            sqrt: 1,
            call: 2,
            ..OperationCounts::default()
        }
    );
    let w = OperationWeights {
        divide: 7,
        sqrt: 11,
        call: 13,
        divide_literals: false,
    };
    // The divider's two divisions and square root (25) beside the pipes' two adds and two
    // calls (28); with heavier divisions, the divider's.
    assert_eq!(counts.weighed(&w), 2 + 2 * 13);
    let heavy = OperationWeights { divide: 70, ..w };
    assert_eq!(counts.weighed(&heavy), 2 * 70 + 11);
    assert_eq!(e.operations(), counts.weighed(&OperationWeights::default()));
    // An analysis counts lets and expression together, and reweighs in place.
    let program = Program::from_yaml(
        "name: lets\ndomain: [4, 4, 4]\nhalo: [0, 0, 0]\noutputs: [s]\nstencils:\n  - name: s\n    let:\n      d: \"sqrt(a(i,j,k))\"\n    expr: \"d / a(i,j,k) + 1.0\"\n",
    )
    .unwrap();
    let mut a = Analysis::new(&program).unwrap();
    assert_eq!(a.operation_weights, OperationWeights::default());
    a.weigh_operations(w);
    assert_eq!(a.stencils[0].operations, 11 + 7);
    assert_eq!(a.operation_weights, w);
    assert_eq!(
        Analysis::weighed(&program, w).unwrap().stencils[0].operations,
        18
    );
}

#[test]
fn machine_operation_weights_read_default_and_are_validated() {
    use crate::formats::machine::OperationWeights;
    let base = "name: hand\ncores: 4\ncache_bytes: 1048576\nparams:\n  fast: {peel: 3.0e-10, body: 2.0e-11}\n  slow_base: {peel: 1.0e-10, body: 1.0e-11}\n  slow_stream: {peel: 1.0e-9, body: 1.0e-10}\n";
    let plain = Machine::from_yaml(base).unwrap();
    assert_eq!(
        plain.params.unwrap().operations,
        OperationWeights::default()
    );
    let with = Machine::from_yaml(&format!(
        "{base}  operations: {{divide: 12, sqrt: 40, call: 900}}\n"
    ))
    .unwrap();
    assert_eq!(
        with.params.unwrap().operations,
        OperationWeights {
            divide: 12,
            sqrt: 40,
            call: 900,
            divide_literals: false,
        }
    );
    let view = with.model_view(8).unwrap();
    assert_eq!(view.params.operations.call, 900);
    for (bad, key) in [
        (
            "{divide: 0, sqrt: 40, call: 900}",
            "params.operations.divide",
        ),
        (
            "{divide: 12, sqrt: 40, call: 100001}",
            "params.operations.call",
        ),
    ] {
        let d = Machine::from_yaml(&format!("{base}  operations: {bad}\n")).unwrap_err();
        assert!(d.iter().any(|d| d.path == key), "{d:?}");
    }
    // A misspelt or missing weight is named.
    let d =
        Machine::from_yaml(&format!("{base}  operations: {{divide: 12, sqrt: 40}}\n")).unwrap_err();
    assert!(d[0].message.contains("call"), "{d:?}");
    let d = Machine::from_yaml(&format!(
        "{base}  operations: {{divide: 12, sqrt: 40, call: 9, exp: 3}}\n"
    ))
    .unwrap_err();
    assert!(d[0].message.contains("exp"), "{d:?}");
}

#[test]
fn the_compute_part_prices_divisions_with_the_machines_weight() {
    use crate::formats::machine::OperationWeights;
    // One stencil with two divisions: its compute body is its operations times its cells, and
    // its operations follow the machine's division weight.
    let program = Program::from_yaml(
        "name: div\ndomain: [8, 8, 8]\nhalo: [0, 0, 0]\noutputs: [s]\nstencils:\n  - name: s\n    expr: \"a(i,j,k) / b(i,j,k) + b(i,j,k) / a(i,j,k)\"\n",
    )
    .unwrap();
    let config = Configuration::new(vec![0], vec![[1, 1, 1]]);
    let mut m = test_machine();
    let mut bodies = Vec::new();
    for divide in [30, 300] {
        m.params.operations = OperationWeights {
            divide,
            ..OperationWeights::default()
        };
        let a = Analysis::weighed(&program, m.params.operations).unwrap();
        let cost = evaluate(&a, &m, &config);
        bodies.push(cost.groups[0].stencils[0].counts.compute.body);
    }
    assert_eq!(bodies[0], 2 * 30 * 512);
    assert_eq!(bodies[1], 2 * 300 * 512);
}

/// A division by a literal weighs as the build computes it: the reciprocal's simple operations,
/// or the machine's division weight where its file says the timed build divides
/// (`compiler.division: divide`) and on a GPU, whose CUDA code divides. The weight is not
/// written to the file.
#[test]
fn a_division_by_a_literal_weighs_as_the_build_divides() {
    use crate::formats::machine::Division;
    use crate::language::expr::{parse_expr, RECIPROCAL_DIVISION_OPERATIONS};
    let e = parse_expr("a(i,j,k) / 60.0 + a(i,j,k) / b(i,j,k)").unwrap();
    let counts = e.operation_counts();
    assert_eq!(
        (
            counts.divide,
            counts.literal_divide,
            counts.literal_simple,
            counts.simple
        ),
        (1, 1, RECIPROCAL_DIVISION_OPERATIONS, 1)
    );
    let base = "name: hand\ncores: 4\ncache_bytes: 1048576\nparams:\n  fast: {peel: 3.0e-10, body: 2.0e-11}\n  slow_base: {peel: 1.0e-10, body: 1.0e-11}\n  slow_stream: {peel: 1.0e-9, body: 1.0e-10}\n  operations: {divide: 12, sqrt: 40, call: 900}\n";
    let weight = |text: &str| {
        let m = Machine::from_yaml(text).unwrap();
        let w = m.model_view(8).unwrap().params.operations;
        (m.compiler.division, counts.weighed(&w))
    };
    // The divider's division beside the pipes' add and the reciprocal's operations; with a
    // machine that divides, two divisions beside one add.
    let through = (1 + RECIPROCAL_DIVISION_OPERATIONS).max(12);
    assert_eq!(weight(base), (Division::Reciprocal, through));
    let reciprocal = format!("{base}compiler: {{cxx: g++, division: reciprocal}}\n");
    assert_eq!(weight(&reciprocal).1, through);
    let divide = format!("{base}compiler: {{cxx: g++, division: divide}}\n");
    assert_eq!(weight(&divide), (Division::Divide, 12 + 12));
    let light = base.replace("divide: 12", "divide: 2");
    assert_eq!(weight(&light).1, 1 + RECIPROCAL_DIVISION_OPERATIONS);
    let gpu = format!(
        "{base}gpu: {{sm_count: 132, shared_bytes_per_block: 232448, registers_per_thread: 255, max_threads_per_block: 1024}}\n"
    );
    assert_eq!(weight(&gpu), (Division::Reciprocal, 12 + 12));
    // Not a weight: the file's operations read and write as before.
    let m = Machine::from_yaml(&divide).unwrap();
    let written = serde_yaml_ng::to_string(&m).unwrap();
    assert!(written.contains("division: divide"), "{written}");
    assert!(!written.contains("divide_literals"), "{written}");
    let d = Machine::from_yaml(&format!("{base}compiler: {{cxx: g++, division: halve}}\n"))
        .unwrap_err();
    assert!(d.iter().any(|d| d.path.contains("compiler")), "{d:?}");
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "operation weights")]
fn costing_an_analysis_weighed_for_another_machine_is_caught() {
    use crate::formats::machine::OperationWeights;
    let program = Program::from_yaml(
        "name: div\ndomain: [8, 8, 8]\nhalo: [0, 0, 0]\noutputs: [s]\nstencils:\n  - name: s\n    expr: \"a(i,j,k) / b(i,j,k)\"\n",
    )
    .unwrap();
    let mut m = test_machine();
    m.params.operations = OperationWeights {
        divide: 5,
        ..OperationWeights::default()
    };
    let a = Analysis::new(&program).unwrap();
    evaluate(&a, &m, &Configuration::new(vec![0], vec![[1, 1, 1]]));
}

#[test]
fn compute_counts_are_operations_times_cells_with_their_halo() {
    // One untiled group: lap's compute body is f x (cells + its halo of width 1 on each side
    // along x and y), as its fast weights count accesses.
    let a = analyse(HDIFF);
    let m = test_machine();
    let cells = a.domain.iter().map(|&d| d as u128).product::<u128>();
    let one = evaluate(&a, &m, &Configuration::new(vec![0; 4], vec![[1, 1, 1]]));
    let lap = &one.groups[0].stencils[0];
    let f = a.stencils[0].operations;
    assert_eq!(lap.compute_weights, [f, 2 * f, 2 * f, 0]);
    let (dx, dy) = (a.domain[0] as u128, a.domain[1] as u128);
    assert_eq!(
        lap.counts.compute.body,
        f as u128 * (cells + 2 * cells / dx + 2 * cells / dy)
    );
    for s in one.stencils() {
        let f = s.compute_weights[0] as u128;
        let ratio = s.fast_weights[0] as u128;
        // compute counts are the fast counts scaled by f / c.
        assert_eq!(s.counts.compute.body * ratio, s.counts.fast.body * f);
        assert_eq!(s.counts.compute.peel * ratio, s.counts.fast.peel * f);
    }
}

#[test]
fn crowding_counts_row_streams_and_charges_the_stream_body() {
    use crate::cost_model::evaluate::crowded;
    // cosmo_pgrad's grid at 64 x 64 x 60, one group of stream weight 12, limit 128: whole rows
    // one row tall keep 12 x 60 / n^z row streams in flight.
    let d = [64, 64, 60];
    assert!(crowded(d, [1, 64, 1], 12, 128), "60 planes: 720 streams");
    assert!(crowded(d, [1, 64, 5], 12, 128), "12 planes: 144");
    assert!(!crowded(d, [1, 64, 6], 12, 128), "10 planes: exactly 120");
    assert!(!crowded(d, [1, 64, 30], 12, 128), "2 planes: 24");
    // Split along x, every row of every plane is its own stream: 12 x 16 x 15 = 2880.
    assert!(crowded(d, [2, 4, 4], 12, 128));
    assert!(
        !crowded(d, [2, 64, 30], 12, 128),
        "one row of two planes: 24"
    );
    assert!(!crowded(d, [1, 1, 1], 12, 0), "no limit, never crowded");

    // The charge: `Q^b` per stream-body access of every stencil of a crowded group, on the
    // slow side of its body; nothing for an uncrowded one.
    let a = analyse(HDIFF);
    let mut m = test_machine();
    let deep = Configuration::new(vec![0; 4], vec![[1, 2, 2]]);
    let plain = evaluate(&a, &m, &deep);
    m.params.crowded.row_streams = 4;
    m.params.crowded.stream_body = 3.0e-10;
    let charged = evaluate(&a, &m, &deep);
    assert!(charged.groups[0].crowded && !plain.groups[0].crowded);
    for (p, c) in plain.stencils().zip(charged.stencils()) {
        let extra = 3.0e-10 * c.counts.slow_stream.body as f64;
        assert!(close(c.slow_body, p.slow_body + extra), "{c:?}");
        assert!(close(c.body, c.fast_body.max(c.slow_body)));
    }
    assert!(charged.total > plain.total);
}

#[test]
fn scalars_are_read_bare_and_checked() {
    let text = |scalars: &str, body: &str| {
        format!(
            "name: t\ndomain: [8, 8, 8]\nhalo: [1, 1, 0]\noutputs: [out]\nscalars: {scalars}\nstencils:\n  - name: out\n{body}"
        )
    };
    let ok = text(
        "[dt, kdiff]",
        "    let:\n      f: kdiff * (x(i+1,j,k) - x(i,j,k))\n    expr: x(i,j,k) + dt * f\n",
    );
    let p = Program::from_yaml(&ok).unwrap();
    assert_eq!(p.scalars, ["dt", "kdiff"]);
    let mut scalars = Vec::new();
    p.stencils[0].bodies[0]
        .expr
        .visit_scalars(&mut |s| scalars.push(s.to_string()));
    p.stencils[0].bodies[0].lets[0]
        .expr
        .visit_scalars(&mut |s| scalars.push(s.to_string()));
    assert_eq!(scalars, ["dt", "kdiff"]);
    // A scalar costs nothing: the same operations as a literal in its place.
    let literal = Program::from_yaml(
        &ok.replace("scalars: [dt, kdiff]\n", "")
            .replace("dt *", "2.0 *")
            .replace("kdiff *", "3.0 *"),
    )
    .unwrap();
    assert_eq!(
        analyse(&ok).stencils[0].operations,
        Analysis::new(&literal).unwrap().stencils[0].operations
    );
    // Printed and read back: the same program.
    let back = Program::from_yaml(&p.to_yaml()).unwrap();
    assert_eq!(back.scalars, p.scalars);
    assert_eq!(
        back.stencils[0].bodies[0].expr,
        p.stencils[0].bodies[0].expr
    );
    assert_eq!(
        back.stencils[0].bodies[0].lets,
        p.stencils[0].bodies[0].lets
    );
    // Values: given, default, refused.
    assert_eq!(
        p.scalar_values(&[("kdiff".into(), 2.0)]).unwrap(),
        [crate::language::interp::scalar_default(0), 2.0]
    );
    for (given, message) in [
        (
            vec![("dx".to_string(), 1.0)],
            "has no scalar `dx`; its scalars are dt, kdiff",
        ),
        (
            vec![("dt".into(), 1.0), ("dt".into(), 2.0)],
            "--scalar dt: given twice",
        ),
        (vec![("dt".into(), f64::INFINITY)], "must be finite"),
    ] {
        let e = p.scalar_values(&given).unwrap_err();
        assert!(e.contains(message), "{e}");
    }
    let expr = "    expr: x(i,j,k) + dt\n";
    let cases = [
        (text("[x]", expr), "scalars[0]: `x` is an array read by stencils[0]; a scalar and an array may not share a name"),
        (text("[out]", expr), "scalars[0]: `out` is the array written by stencils[0]"),
        (text("[dt, dt]", expr), "scalars[1]: `dt` is listed twice"),
        (text("[k]", expr), "scalars[0]: `k` is an index variable and cannot name a scalar"),
        (text("[exp]", expr), "scalars[0]: `exp` is a function name"),
        (text("[2t]", expr), "scalars[0]: `2t` is not an identifier"),
        (text("[a]", "    let:\n      a: x(i,j,k)\n    expr: a\n"), "stencils[0].let.a: local `a` has the name of a scalar"),
        (text("[]", expr), "stencils[0].expr: `dt` is not defined: a bare name must be a `let` local defined before this expression or a scalar listed under `scalars:`"),
        (text("dt", expr), "scalars"),
    ];
    for (program, want) in cases {
        let got = errors(&program);
        assert!(got.iter().any(|e| e.contains(want)), "{got:?} lacks {want}");
    }
}

#[test]
fn sweeps_and_intervals_are_checked() {
    let text = |stencils: &str| {
        format!("name: t\ndomain: [4, 4, 5]\nhalo: [1, 1, 1]\noutputs: [x]\nstencils:\n{stencils}")
    };
    let forward = |rest: &str| {
        text(&format!(
            "  - name: x\n    computation: forward\n    intervals:\n      - k: [0, 1]\n        expr: a(i,j,k)\n      - k: [1, null]\n        expr: {rest}\n"
        ))
    };
    let ok = forward("a(i,j,k) + 0.5 * x(i,j,k-1)");
    let a = analyse(&ok);
    assert!(a.has_sweeps());
    assert_eq!(a.stencils[0].self_reads, [[0, 0, -1]]);
    assert_eq!(a.stencils[0].extent, [[0; 2]; 3]);
    let p = Program::from_yaml(&ok).unwrap();
    let back = Program::from_yaml(&p.to_yaml()).unwrap();
    assert_eq!(back.stencils, {
        let mut s = p.stencils.clone();
        for (b, c) in s[0].bodies.iter_mut().zip(&back.stencils[0].bodies) {
            b.sources = c.sources.clone();
        }
        s
    });
    let cases = [
        (
            forward("a(i,j,k) + x(i,j,k+1)"),
            "stencils[0].intervals[1].expr: stencil `x`: `x(i, j, k+1)`: a forward sweep reads its own array only at k-1, k-2, ...",
        ),
        (
            forward("a(i,j,k) + x(i+1,j,k-1)"),
            "`x(i+1, j, k-1)`: a forward sweep reads its own array only at k-1",
        ),
        (
            forward("a(i,j,k) + x(i,j,k-2)"),
            "`x(i, j, k-2)` at level 1 reads level -1, outside the domain's levels 0..5",
        ),
        (
            text("  - name: x\n    expr: a(i,j,k) + x(i,j,k-1)\n"),
            "stencils[0].expr: stencil `x` reads its own array `x`: a stencil may not read what it writes (a cycle), unless it is a sweep",
        ),
        (
            text("  - name: x\n    intervals:\n      - k: [0, 2]\n        expr: a(i,j,k)\n      - k: [3, null]\n        expr: a(i,j,k)\n"),
            "stencils[0].intervals[1].k: the intervals must cover the domain's 5 levels without overlap: levels [2, 3) are in no interval",
        ),
        (
            text("  - name: x\n    intervals:\n      - k: [0, 3]\n        expr: a(i,j,k)\n      - k: [-3, null]\n        expr: a(i,j,k)\n"),
            "it overlaps an earlier interval at levels [2, 3)",
        ),
        (
            text("  - name: x\n    intervals:\n      - k: [0, -1]\n        expr: a(i,j,k)\n"),
            "stencils[0].intervals: the intervals must cover the domain's 5 levels without overlap: levels [4, 5) are in no interval",
        ),
        (
            text("  - name: x\n    intervals:\n      - k: [2, 2]\n        expr: a(i,j,k)\n"),
            "stencils[0].intervals[0].k: interval [2, 2] is levels [2, 2) of the domain's 5: an interval must hold at least one level",
        ),
        (
            text("  - name: x\n    intervals:\n      - k: [0, 9]\n        expr: a(i,j,k)\n"),
            "interval [0, 9] is levels [0, 9)",
        ),
        (
            text("  - name: x\n    expr: a(i,j,k)\n    intervals:\n      - k: [0, null]\n        expr: a(i,j,k)\n"),
            "stencils[0].intervals: a stencil has either `expr:` (every level) or `intervals:`, not both",
        ),
        (
            text("  - name: x\n    computation: sideways\n    expr: a(i,j,k)\n"),
            "computation",
        ),
        (
            text("  - name: x\n    let:\n      b: a(i,j,k)\n    intervals:\n      - k: [0, null]\n        expr: a(i,j,k)\n"),
            "stencils[0].let: a stencil with `intervals:` has its `let` locals in each interval",
        ),
        (
            text("  - name: y\n    intervals:\n      - k: [0, null]\n        expr: a(i,j,k)\n  - name: x\n    expr: y(i,j,k+1)\n"),
            "stencils[1].expr: stencil `x` reads `y` 1 level(s) beyond the domain's top (5 levels) on the k+ side, but `y` is computed by intervals",
        ),
        (
            text("  - name: y\n    intervals:\n      - k: [0, null]\n        expr: a(i,j,k)\n  - name: x\n    intervals:\n      - k: [0, -1]\n        expr: y(i,j,k+1)\n      - k: [-1, null]\n        expr: y(i,j,k-2)\n"),
            "",
        ),
    ];
    for (program, want) in cases {
        let got = errors(&program);
        if want.is_empty() {
            assert!(got.is_empty(), "{got:?}\n{program}");
        } else {
            assert!(got.iter().any(|e| e.contains(want)), "{got:?} lacks {want}");
        }
    }
    // A sweep is never inlined; a program with one is costed in whole columns, unstreamed.
    let b = analyse(&text("  - name: y\n    computation: forward\n    intervals:\n      - k: [0, 1]\n        expr: a(i,j,k)\n      - k: [1, null]\n        expr: y(i,j,k-1)\n  - name: x\n    expr: y(i,j,k)\n"));
    assert!(crate::language::inline::candidates(&b).is_empty());
    let m = test_machine();
    let split = Configuration::new(vec![0], vec![[1, 1, 5]]);
    assert!(matches!(
        evaluate(&a, &m, &split).infeasible,
        Some(Infeasibility::Sweep { tiles_z: 5, .. })
    ));
}

#[test]
fn fields_are_read_with_their_own_indices() {
    let text = |fields: &str, expr: &str| {
        format!(
            "name: f\ndomain: [4, 4, 5]\nhalo: [1, 1, 1]\noutputs: [x]\n{fields}stencils:\n  - name: x\n    expr: \"{expr}\"\n"
        )
    };
    let good = text(
        "fields:\n  dz: [k]\n  hs: [i, j]\n",
        "a(i,j,k) * dz(k+1) + hs(i-1, j)",
    );
    let a = analyse(&good);
    let dims = |n: &str| a.arrays[a.array_id(n).unwrap()].dims.to_string();
    assert_eq!(
        (dims("dz"), dims("hs"), dims("a")),
        ("[k]".into(), "[i, j]".into(), "[i, j, k]".into())
    );
    // Reads of a field keep offset 0 along the dimensions it lacks.
    assert!(accesses(&a, 0).contains(&("dz".into(), [0, 0, 1])));
    // The program prints back to itself, fields included.
    let yaml = Program::from_yaml(&good).unwrap().to_yaml();
    assert!(yaml.contains("fields:"), "{yaml}");
    assert_eq!(Program::from_yaml(&yaml).unwrap().to_yaml(), yaml);
    for (fields, expr, want) in [
        (
            "fields:\n  dz: [k]\n",
            "dz(i+1, j, k)",
            "stencils[0].expr: `dz` is a field over [k] (`fields:`): read it with its own indices, `dz(k)` with offsets; this access lists [i, j, k]",
        ),
        (
            "",
            "a(i, j)",
            "stencils[0].expr: `a` is a 3-D array, read with the indices i, j, k; this access lists [i, j]",
        ),
        ("fields:\n  dz: [k, i]\n", "dz(k)", "fields.dz[1]: `i` out of order"),
        ("fields:\n  dz: [z]\n", "dz(k)", "fields.dz[0]: `z` is not a dimension"),
        ("fields:\n  dz: []\n", "dz(k)", "fields.dz: a field has at least one dimension"),
        ("fields:\n  x: [k]\n", "a(i,j,k)", "fields.x: `x` is a stencil: a stencil is 3-D ([i, j, k]) or 2-D"),
        ("fields:\n  q: [k]\n", "a(i,j,k)", "fields.q: no stencil reads `q`"),
        ("fields:\n  dz: [k]\n", "dz(k+2)", "reads `dz` 2 cell(s) beyond the domain on the k+ side"),
    ] {
        let got = errors(&text(fields, expr));
        assert!(
            got.iter().any(|e| e.contains(want)),
            "{fields} {expr}: {got:?}"
        );
    }
}

#[test]
fn two_d_stencils_are_computed_once_per_column_in_groups_of_their_own() {
    let text = |fields: &str, stencils: &str| {
        format!(
            "name: c\ndomain: [4, 4, 5]\nhalo: [1, 1, 0]\noutputs: [q]\nfields:\n  pl: [i, j]\n{fields}stencils:\n{stencils}"
        )
    };
    let good = text(
        "",
        "  - name: pl\n    intervals:\n      - k: [-1, null]\n        expr: \"a(i,j,k)\"\n  - name: q\n    expr: \"pl(i+1, j) * a(i,j,k)\"\n",
    );
    let a = analyse(&good);
    assert_eq!(a.stencils[0].plane, Some(4));
    assert_eq!(a.stencils[0].extent, [[0, 1], [0, 0], [0, 0]]);
    assert!(a.has_sweeps() && a.forced_cut(0) && !a.may_group(0..2));
    for (fields, stencils, want) in [
        (
            "",
            "  - name: pl\n    expr: \"a(i,j,k)\"\n  - name: q\n    expr: \"pl(i, j)\"\n",
            "stencils[0].expr: `pl` is a 2-D stencil ([i, j]) and reads `a`, which has levels",
        ),
        (
            "",
            "  - name: pl\n    intervals:\n      - k: [0, 2]\n        expr: \"a(i,j,k)\"\n  - name: q\n    expr: \"pl(i, j)\"\n",
            "stencils[0].intervals: `pl` is a 2-D stencil ([i, j]): its intervals are one interval of one level",
        ),
        (
            "",
            "  - name: pl\n    intervals:\n      - k: [0, 1]\n        expr: \"a(i,j,k)\"\n  - name: q\n    expr: \"pl(i, j, k)\"\n",
            "`pl` is a field over [i, j]",
        ),
        (
            "  q: [k]\n",
            "  - name: pl\n    intervals:\n      - k: [0, 1]\n        expr: \"a(i,j,k)\"\n  - name: q\n    expr: \"pl(i, j)\"\n",
            "fields.q: `q` is a stencil: a stencil is 3-D ([i, j, k]) or 2-D ([i, j], computed once per column), not [k]",
        ),
    ] {
        let got = errors(&text(fields, stencils));
        assert!(got.iter().any(|e| e.contains(want)), "{stencils}: {got:?}");
    }
}

/// A deadline already past stops every range table: the inline search and the exhaustive
/// searches refuse their part-built tables instead of answering from them; without one, the
/// same searches answer.
#[test]
fn a_past_deadline_stops_the_searches() {
    use crate::cost_model::inline_search::{choose_inline, InlinePolicy, InlineSearchError};
    use crate::cost_model::options::SearchSpace;
    use crate::cost_model::search::{exhaustive, k_best, range_table};
    let program = Program::from_yaml(HDIFF).unwrap();
    let a = analyse(HDIFF);
    let m = test_machine();
    let open = SearchSpace::default();
    let past = SearchSpace {
        deadline: Some(std::time::Instant::now()),
        ..SearchSpace::default()
    };
    assert!(!range_table(&a, &m, &open, 1).timed_out);
    assert!(range_table(&a, &m, &past, 1).timed_out);
    assert!(exhaustive(&a, &m, &open).is_some());
    assert!(exhaustive(&a, &m, &past).is_none());
    assert!(!k_best(&a, &m, &open, 2, 1).is_empty());
    assert!(k_best(&a, &m, &past, 2, 1).is_empty());
    assert!(choose_inline(&program, &a, &m, &open, &InlinePolicy::Search, 1).is_ok());
    assert!(matches!(
        choose_inline(&program, &a, &m, &past, &InlinePolicy::Search, 1),
        Err(InlineSearchError::TimeLimit(_))
    ));
}
