//! Generated OpenMP code against the naive reference, bit for bit: random programs (float and
//! double, rich expressions) under random configurations — any grouping, any tile counts from
//! 1 to D including ones that do not divide the domain, feasible or not — batched many cases
//! per compiled binary; a few cases under AddressSanitizer; `absinthe codegen` and
//! `absinthe bench` end to end.

use absinthe_codegen::compile::{
    operation_times, stream_bandwidth, HarnessResult, OperationTimes, Toolchain,
};
use absinthe_codegen::render::{BundleCase, HarnessOptions, Renderer};
use absinthe_codegen::{lower, Schedule};
use absinthe_model::cost_model::evaluate::{
    evaluate, stencil_seconds, Configuration, Counts, STORE_WEIGHT,
};
use absinthe_model::formats::machine::{Machine, ModelMachine};
use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::program::Program;
use absinthe_model::support::rng::Rng;

use crate::common::{
    absinthe, build_and_run_bundles, random_configuration, root, stderr, stdout, temp_file,
};

fn machine() -> ModelMachine {
    Machine::load(&root().join("machines/default.yaml"))
        .unwrap()
        .model_view(8)
        .unwrap()
}

fn toolchain(flags: &[&str]) -> Toolchain {
    let flags: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
    Toolchain::new("g++", &flags).with_cache_dir(root().join("target/absinthe-test-cache"))
}

fn random_case(seed: u64) -> (Program, Analysis) {
    crate::common::random_codegen_case(seed)
}

fn schedules(seeds: std::ops::Range<u64>, configs_per_program: usize) -> Vec<(String, Schedule)> {
    let m = machine();
    let mut out = Vec::new();
    for seed in seeds {
        let (program, analysis) = random_case(seed);
        let mut rng = Rng::new(seed.wrapping_mul(7919));
        for c in 0..configs_per_program {
            let config = random_configuration(&mut rng, program.stencils.len(), analysis.domain);
            let cost = evaluate(&analysis, &m, &config);
            let schedule = lower(&program, &analysis, &config, &cost).unwrap();
            out.push((
                format!(
                    "seed{seed}.{c} {:?} {:?} stream {:?}",
                    config.groups, config.tiles, config.stream
                ),
                schedule,
            ));
        }
    }
    out
}

/// Compiles the cases into bundles (in parallel threads) and runs every harness once.
fn check_bundles(
    cases: &[(String, Schedule)],
    per_bundle: usize,
    flags: &[&str],
    env: &[(&str, &str)],
) -> usize {
    let renderer = Renderer::embedded();
    let options: Vec<HarnessOptions> = cases
        .iter()
        .map(|(label, _)| HarnessOptions {
            runs: 0,
            flush: absinthe_codegen::render::Flush::NONE,
            label: label.clone(),
            ..HarnessOptions::default()
        })
        .collect();
    let sources: Vec<String> = cases
        .chunks(per_bundle)
        .zip(options.chunks(per_bundle))
        .map(|(cs, hs)| {
            let bundle: Vec<BundleCase> = cs
                .iter()
                .zip(hs)
                .map(|((_, s), h)| BundleCase { s, h })
                .collect();
            renderer.bundle(&bundle).unwrap()
        })
        .collect();
    let tc = toolchain(flags);
    let results: Vec<Vec<HarnessResult>> = build_and_run_bundles(&tc, &sources, env);
    let mut count = 0;
    for r in results.iter().flatten() {
        assert!(
            r.verified,
            "{} differs from the reference: {:?}",
            r.label, r.mismatch
        );
        count += 1;
    }
    assert_eq!(count, cases.len());
    count
}

#[test]
fn random_programs_and_configurations_match_the_reference_bit_for_bit() {
    let mut cases = schedules(0..100, 4);
    // Every other case runs its groups streamed along y in chunks of 1 to 3 cells (64 in the
    // product, wider than these domains), so that rows take several chunks, some empty.
    let chunked = crate::common::chunk_rows_finely(&mut cases);
    assert!(
        chunked >= 20,
        "{chunked} groups stream rows in several chunks"
    );
    // Streamed groups along both dimensions are among the cases.
    for dim in [1, 2] {
        let streamed = cases
            .iter()
            .flat_map(|(_, s)| &s.groups)
            .filter(|g| g.stream.as_ref().is_some_and(|p| p.dim == dim))
            .count();
        assert!(
            streamed >= 20,
            "{streamed} groups stream along dimension {dim}"
        );
    }
    // ... and row loops that several stencils share.
    let shared = cases
        .iter()
        .flat_map(|(_, s)| &s.groups)
        .filter(|g| g.loops.iter().any(|l| l.len() > 1))
        .count();
    assert!(shared >= 10, "{shared} groups share a row loop");
    // ... and prefetched row loops in whole blocks (the last of a chunk moved back) and not.
    let prefetched = |whole: bool| {
        cases
            .iter()
            .flat_map(|(_, s)| &s.groups)
            .flat_map(|g| g.prefetch.iter().zip(&g.whole_blocks))
            .filter(|(p, w)| !p.is_empty() && **w == whole)
            .count()
    };
    let (whole, partial) = (prefetched(true), prefetched(false));
    assert!(
        whole >= 20 && partial >= 20,
        "{whole} prefetched row loops in whole blocks, {partial} not"
    );
    let n = check_bundles(&cases, 50, &["-O1"], &[("OMP_NUM_THREADS", "3")]);
    assert!(n >= 400);
}

#[test]
fn generated_code_is_clean_under_address_sanitizer() {
    let mut cases = schedules(1000..1012, 2);
    // Single-cell tiles everywhere, and one tile, for a few programs.
    let m = machine();
    for seed in 2000..2004 {
        let (program, analysis) = random_case(seed);
        let n = program.stencils.len();
        for tiles in [analysis.domain, [1, 1, 1]] {
            for stream in [vec![], vec![0]] {
                let config = Configuration {
                    stream,
                    ..Configuration::new(vec![0; n], vec![tiles])
                };
                let cost = evaluate(&analysis, &m, &config);
                cases.push((
                    format!("asan seed{seed} {tiles:?} stream {:?}", config.stream),
                    lower(&program, &analysis, &config, &cost).unwrap(),
                ));
            }
        }
    }
    // Sweeps, intervals, fields and 2-D stencils: whole columns, one group (a 2-D stencil
    // alone) or one per stencil, single-cell and whole-plane tiles.
    let (mut fields, mut planes) = (0, 0);
    for seed in 0..8 {
        let text = absinthe_model::language::generate::random_column_program(seed);
        let program = Program::from_yaml(&text).unwrap();
        let analysis = Analysis::new(&program).unwrap();
        let n = program.stencils.len();
        fields += usize::from(!program.fields.is_empty());
        planes += usize::from((0..n).any(|s| analysis.is_plane(s)));
        let [nx, ny, _] = analysis.domain;
        for tiles in [[1, 1, 1], [nx, ny, 1]] {
            for groups in [vec![0; n], (0..n).collect()] {
                let groups_count = groups.last().unwrap() + 1;
                let config = Configuration::new(groups, vec![tiles; groups_count]);
                let config = crate::common::with_plane_cuts(config, &analysis);
                let cost = evaluate(&analysis, &m, &config);
                cases.push((
                    format!(
                        "asan column seed{seed} {tiles:?} groups {:?}",
                        config.groups
                    ),
                    lower(&program, &analysis, &config, &cost).unwrap(),
                ));
            }
        }
    }
    assert!(
        fields >= 2 && planes >= 2,
        "{fields} with fields, {planes} with 2-D stencils"
    );
    check_bundles(
        &cases,
        16,
        &["-O1", "-fsanitize=address", "-fno-omit-frame-pointer"],
        &[
            ("OMP_NUM_THREADS", "2"),
            ("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1"),
        ],
    );
}

#[test]
fn schedule_store_boxes_partition_the_reference_box() {
    for (_, s) in schedules(500..540, 3) {
        for g in &s.groups {
            for st in &g.steps {
                let Some(store) = &st.store_box else { continue };
                for (d, stores) in store.iter().enumerate() {
                    let region = [
                        -(st.extent[d][0] as i64),
                        (s.domain[d] + st.extent[d][1]) as i64,
                    ];
                    assert_eq!(stores.first().unwrap()[0], region[0]);
                    assert_eq!(stores.last().unwrap()[1], region[1]);
                    for w in stores.windows(2) {
                        assert_eq!(w[0][1], w[1][0]);
                        assert!(w[0][0] < w[0][1]);
                    }
                    for (l, b) in st.loop_box[d].iter().zip(stores) {
                        assert!(
                            l[0] <= b[0] && b[1] <= l[1],
                            "loop box covers the store box"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn codegen_writes_kernel_and_harness_for_both_targets() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gen");
    let o = absinthe(&[
        "codegen",
        "configs/hdiff.yaml",
        "--target",
        "openmp",
        "--harness",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in ["hdiff.h", "hdiff.cpp", "hdiff_harness.cpp"] {
        let text = std::fs::read_to_string(out.join(f)).unwrap();
        assert!(text.contains("hdiff_kernel"), "{f}");
    }
    let kernel = std::fs::read_to_string(out.join("hdiff.cpp")).unwrap();
    assert!(kernel.contains("#pragma omp parallel for schedule(static)"));
    assert!(kernel.contains("#pragma omp simd"));

    let o = absinthe(&[
        "codegen",
        "configs/hdiff.yaml",
        "--target",
        "cuda",
        "-o",
        out.to_str().unwrap(),
    ]);
    // The CUDA target writes the .cu (tests/cuda.rs covers the rest).
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.join("hdiff.cu").is_file());
}

#[test]
fn bench_runs_naive_unfused_and_opt_and_all_verify() {
    let o = absinthe(&[
        "bench",
        "configs/example2.yaml",
        "--variants",
        "naive,unfused,opt,fused,groups:0,1,random:2",
        "--runs",
        "3",
        "--flush-bytes",
        "1000000",
        "--no-roofline",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = v.as_array().unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["variant"].as_str().unwrap())
        .collect();
    assert_eq!(&names[..4], ["naive", "unfused", "opt", "fused"]);
    assert_eq!(names[4], "groups:0,1");
    assert_eq!(rows.len(), 7, "{names:?}");
    for r in rows {
        assert_eq!(r["verified"], true, "{r}");
        assert!(r["groups"].is_array() && r["tiles"].is_array(), "{r}");
        for key in ["predicted_seconds", "measured_seconds", "min", "max"] {
            assert!(r.get(key).is_some(), "{key} missing in {r}");
        }
    }
    let unfused = &rows[1];
    assert_eq!(unfused["groups"], serde_json::json!([0, 1]));
    // The cache model's levels (from sysfs: the default machine file lists none) on every row,
    // the naive reference's included.
    if absinthe_codegen::host::sysfs_caches().is_some() {
        for r in rows {
            let levels = r["cache"].as_array().unwrap_or_else(|| panic!("{r}"));
            assert!(!levels.is_empty());
            for l in levels {
                assert!(
                    l["name"].is_string() && l["accesses"].as_u64() > Some(0),
                    "{l}"
                );
                assert!(l["compulsory"].as_u64() > Some(0), "{l}");
            }
        }
    }
}

/// `config` of `program` lowered for OpenMP.
fn lowered(program: &Program, analysis: &Analysis, config: &Configuration) -> Schedule {
    lower(
        program,
        analysis,
        config,
        &evaluate(analysis, &machine(), config),
    )
    .unwrap()
}

/// Every stencil of `program` in one group of `tiles`, streamed: the stream's dimension, the
/// cells of a prefetched line, and per row loop its prefetches as (address, to write).
fn streamed_as_one_group(
    program: &Program,
    analysis: &Analysis,
    tiles: [usize; 3],
) -> (usize, usize, Vec<Vec<(String, bool)>>) {
    let config = Configuration {
        groups: vec![0; program.stencils.len()],
        tiles: vec![tiles],
        stream: vec![0],
    };
    let schedule = lowered(program, analysis, &config);
    let g = &schedule.groups[0];
    let lines = g
        .prefetch
        .iter()
        .map(|lp| lp.iter().map(|p| (p.address.clone(), p.write)).collect())
        .collect();
    (
        g.stream.as_ref().expect("the group streams").dim,
        g.prefetch_cells,
        lines,
    )
}

/// A streamed group prefetches, one line per block of each row loop's cells, the next line
/// along the stream of every 3-D array it reads or stores, in the first row loop that touches
/// it: at the furthest row and plane read moved one line along the stream (along z: `w` at
/// `k + 1` -> `k + 2`, `v` at `j` and `j - 1` -> `j`; along y: `u` at `j + 1` -> `j + 2`), for
/// writing what it only stores. A group of one row loop, and unstreamed groups, prefetch
/// nothing.
#[test]
fn streamed_row_loops_prefetch_the_next_line() {
    let program =
        Program::load(&root().join("configs/cosmo_divdamp.yaml")).expect("cosmo_divdamp loads");
    let analysis = Analysis::new(&program).expect("cosmo_divdamp analyses");
    let (dim, cells, lines) = streamed_as_one_group(&program, &analysis, [1, 2, 1]);
    assert_eq!((dim, cells), (2, 8), "along z, 64-byte lines of doubles");
    let read = |a: &str, k: &str| (format!("&g_{a}[ib + j * SY + {k} * SZ]"), false);
    let write = |a: &str| (format!("&g_{a}[ib + j * SY + (k + 1) * SZ]"), true);
    assert_eq!(
        lines,
        vec![
            vec![
                read("u", "(k + 1)"),
                read("v", "(k + 1)"),
                read("w", "(k + 2)"),
                read("rdz", "(k + 1)")
            ],
            vec![write("unew"), write("vnew"), write("wnew")],
        ]
    );
    let whole = Configuration::new(vec![0, 0, 0, 0], vec![[1, 2, 1]]);
    let one_loop = Configuration {
        groups: vec![0, 1, 2, 3],
        tiles: vec![[1, 2, 1]; 4],
        stream: vec![0, 1, 2, 3],
    };
    for config in [whole, one_loop] {
        let schedule = lowered(&program, &analysis, &config);
        for g in &schedule.groups {
            assert!(g.prefetch.iter().all(Vec::is_empty), "{config:?}");
        }
    }
    // Along y, in floats: the Laplacian's row loop reads u up to j + 1, the output's loop
    // reads u at j.
    let program = Program::from_yaml(
        "name: rows\ndomain: [64, 32, 4]\nhalo: [1, 2, 0]\noutputs: [out]\ntype: float\nstencils:\n  \
         - name: lap\n    expr: \"u(i+1,j,k) + u(i-1,j,k) + u(i,j+1,k) + u(i,j-1,k) - 4.0 * u(i,j,k)\"\n  \
         - name: out\n    expr: \"u(i,j,k) - 0.1 * lap(i,j+1,k)\"\n",
    )
    .unwrap();
    let analysis = Analysis::new(&program).unwrap();
    let (dim, cells, lines) = streamed_as_one_group(&program, &analysis, [1, 1, 1]);
    assert_eq!((dim, cells), (1, 16), "along y, 64-byte lines of floats");
    assert_eq!(
        lines,
        vec![
            vec![("&g_u[ib + (j + 2) * SY + k * SZ]".to_string(), false)],
            vec![("&g_out[ib + (j + 1) * SY + k * SZ]".to_string(), true)],
        ]
    );
}

/// A final output of a memory-bound stencil in a group of one row loop is stored
/// non-temporally (`StencilStep::nontemporal`), line by line through a local line; an output
/// another stencil reads and groups of several row loops keep ordinary stores. The kernels
/// match the reference bit for bit: doubles and floats, a halo that leaves rows unaligned (cells
/// before the first line boundary and after the last), whole tiles and streams.
#[test]
fn final_outputs_of_memory_bound_single_loop_groups_stream_out_and_verify() {
    let text = |ty: &str, halo: &str| {
        format!(
            "name: nt_{ty}\ndomain: [300, 6, 5]\nhalo: {halo}\noutputs: [out, mid]\ntype: {ty}\nstencils:\n  \
             - name: mid\n    expr: \"a(i,j,k) + b(i,j,k)\"\n  \
             - name: out\n    expr: \"a(i,j,k) * 0.5 + mid(i,j,k) + b(i,j,k+1)\"\n"
        )
    };
    let mut cases = Vec::new();
    for (ty, halo) in [("double", "[0, 0, 1]"), ("float", "[3, 1, 1]")] {
        let program = Program::from_yaml(&text(ty, halo)).unwrap();
        let analysis = Analysis::new(&program).unwrap();
        for (groups, stream) in [
            (vec![0, 1], vec![]),
            (vec![0, 1], vec![0, 1]),
            (vec![0, 0], vec![0]),
        ] {
            let config = Configuration {
                tiles: vec![[1, 2, 1]; groups.iter().max().unwrap() + 1],
                groups,
                stream,
            };
            let schedule = lowered(&program, &analysis, &config);
            let flags: Vec<(String, bool)> = schedule
                .groups
                .iter()
                .flat_map(|g| g.steps.iter().map(|s| (s.name.clone(), s.nontemporal)))
                .collect();
            // `mid` is read by `out`; `out` streams out only where its group is one row loop.
            let one_loop = schedule.groups.iter().all(|g| g.loops.len() == 1);
            assert_eq!(
                flags,
                [("mid".to_string(), false), ("out".to_string(), one_loop)],
                "{ty} {config:?}"
            );
            cases.push((format!("{ty} {config:?}"), schedule));
        }
    }
    assert!(cases.iter().any(|(_, s)| s
        .groups
        .iter()
        .any(|g| g.nontemporal.iter().any(Option::is_some))));
    check_bundles(&cases, cases.len(), &[], &[]);
}

/// In a group of one row loop, whether final outputs are stored non-temporally is decided for
/// the loop, not per stencil: the model's slow bodies of the group summed above its fast bodies.
/// Here `p` loads the three inputs (memory-bound alone) and `q`, which reads what `p`'s loads
/// brought in at many offsets, is priced by its fast side alone; the loop is memory-bound, so
/// both stream out. A group whose arithmetic outweighs its memory stores neither so. The kernels
/// match the reference bit for bit.
#[test]
fn a_single_loop_group_stores_its_final_outputs_non_temporally_as_one_loop() {
    let text = |q: &str| {
        format!(
            "name: nt_loop\ndomain: [300, 6, 5]\nhalo: [1, 1, 1]\noutputs: [p, q]\ntype: double\n\
             stencils:\n  - name: p\n    expr: \"a(i,j,k) + b(i,j,k) + c(i,j,k)\"\n  \
             - name: q\n    expr: \"{q}\"\n"
        )
    };
    // Sums of one array's reads over a box of offsets: many distinct reads, little else.
    let reads = |array: &str, r: [i32; 3]| {
        let mut terms = Vec::new();
        for dk in -r[2]..=r[2] {
            for dj in -r[1]..=r[1] {
                for di in -r[0]..=r[0] {
                    terms.push(format!("{array}(i{di:+},j{dj:+},k{dk:+})"));
                }
            }
        }
        terms.join(" + ")
    };
    // 19 distinct reads: priced by its accesses in fast memory alone, but fewer than the loop's
    // memory is worth.
    let light = format!(
        "{} + {} + c(i,j,k)",
        reads("a", [1, 1, 0]),
        reads("b", [1, 1, 0])
    );
    // 57: more than the loop's memory is worth.
    let heavy = format!(
        "{} + {} + {}",
        reads("a", [1, 1, 1]),
        reads("b", [1, 1, 1]),
        reads("c", [1, 0, 0])
    );
    let config = Configuration {
        groups: vec![0, 0],
        tiles: vec![[1, 2, 1]],
        stream: vec![0],
    };
    let mut cases = Vec::new();
    for (q, loop_bound) in [(light, true), (heavy, false)] {
        let program = Program::from_yaml(&text(&q)).unwrap();
        let analysis = Analysis::new(&program).unwrap();
        let cost = evaluate(&analysis, &machine(), &config);
        let [p_cost, q_cost]: [_; 2] = cost.stencils().collect::<Vec<_>>().try_into().unwrap();
        assert!(
            p_cost.slow_body > p_cost.fast_body,
            "{q}: p is memory-bound alone"
        );
        assert!(
            q_cost.slow_body < q_cost.fast_body,
            "{q}: q is priced by its fast side"
        );
        let slow = p_cost.slow_body + q_cost.slow_body;
        let fast = p_cost.fast_body + q_cost.fast_body;
        assert_eq!(slow > fast, loop_bound, "{q}: the loop's sides");
        let schedule = lowered(&program, &analysis, &config);
        assert_eq!(schedule.groups[0].loops.len(), 1, "{q}: one row loop");
        let flags: Vec<bool> = schedule.groups[0]
            .steps
            .iter()
            .map(|s| s.nontemporal)
            .collect();
        assert_eq!(flags, [loop_bound, loop_bound], "{q}");
        cases.push((q.to_string(), schedule));
    }
    check_bundles(&cases, cases.len(), &[], &[]);
}

/// Every row loop of the generated kernels vectorises (GCC's `-fopt-info-vec-optimized`
/// reports each `#pragma omp simd` loop), streamed groups and whole tiles alike, built with the
/// flags the toolchain builds with: cosmo_smag's `sqrt` only with `-fno-math-errno`.
#[test]
fn generated_row_loops_vectorise() {
    let dir = tempfile::tempdir().unwrap();
    let build_flags = Toolchain::new("g++", &["-O3".to_string()]).all_flags();
    for program in [
        "configs/cosmo_hdiff4.yaml",
        "configs/cosmo_adv5.yaml",
        "configs/cosmo_pgrad.yaml",
        "configs/cosmo_smag.yaml",
        "configs/cosmo_smag_params.yaml",
    ] {
        // Streamed (nothing inlined: the working sets then miss the cache), the default
        // (inlined), and whole tiles.
        for (k, flags) in [
            &["--no-inline"][..],
            &[][..],
            &["--no-inline", "--no-stream"][..],
        ]
        .into_iter()
        .enumerate()
        {
            let stream = k == 0;
            let out = dir
                .path()
                .join(format!("{}_{k}", program.replace(['/', '.'], "_")));
            let mut args = vec!["codegen", program, "-o", out.to_str().unwrap()];
            args.extend_from_slice(flags);
            let o = absinthe(&args);
            assert!(o.status.success(), "{}", stderr(&o));
            let cpp = std::fs::read_dir(&out)
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.extension().is_some_and(|e| e == "cpp"))
                .unwrap();
            let text = std::fs::read_to_string(&cpp).unwrap();
            if stream {
                assert!(
                    text.contains("absinthe_slot("),
                    "{program}: nothing streams"
                );
            }
            // The row loops: from each `omp simd` pragma (1-based line) to the next one. GCC
            // reports a vectorised loop at its first body statement.
            let lines: Vec<&str> = text.lines().collect();
            let pragmas: Vec<usize> = (0..lines.len())
                .filter(|&n| lines[n].trim() == "#pragma omp simd")
                .map(|n| n + 1)
                .collect();
            let rows: Vec<(usize, usize)> = pragmas
                .iter()
                .zip(pragmas.iter().skip(1).chain([&usize::MAX]))
                .map(|(&a, &b)| (a, b))
                .collect();
            assert!(!rows.is_empty());
            let o = std::process::Command::new("g++")
                .args(&build_flags)
                .arg("-fopt-info-vec-optimized")
                .args(["-c", "-o", "/dev/null"])
                .arg(&cpp)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", stderr(&o));
            let report = stderr(&o);
            let vectorised: std::collections::BTreeSet<usize> = report
                .lines()
                .filter(|l| l.contains("loop vectorized"))
                .filter_map(|l| l.split(':').nth(1)?.parse().ok())
                .collect();
            let missed: Vec<usize> = rows
                .iter()
                .filter(|(a, b)| vectorised.range(a + 1..*b).next().is_none())
                .map(|(a, _)| a + 1)
                .collect();
            assert!(
                missed.is_empty(),
                "{program} (stream {stream}): row loops at lines {missed:?} of {} not vectorised\n{report}",
                cpp.display()
            );
        }
    }
}

/// A row loop whose stencil has `intervals:` runs under a test of the level that decides the
/// interval chain inside it (`GroupSchedule::bands`): each band's loop is headed by
/// `if (k < N)`, `else if (k < N)` or `else`, and every level the chain inside tests has a
/// band of its own. Without it GCC if-converts the chain and computes every interval's body
/// for every cell (cosmo_hvdiff's optimum ran 3.2x slower).
#[test]
fn interval_chains_are_decided_outside_the_row_loops() {
    let dir = tempfile::tempdir().unwrap();
    for program in [
        "configs/cosmo_hvdiff.yaml",
        "configs/cosmo_vdiff_implicit.yaml",
        "configs/cosmo_vadv_implicit.yaml",
    ] {
        for (n, flags) in [&[][..], &["--no-inline"][..], &["--no-stream"][..]]
            .into_iter()
            .enumerate()
        {
            let out = dir
                .path()
                .join(format!("{}_{n}", program.replace(['/', '.'], "_")));
            let mut args = vec!["codegen", program, "-o", out.to_str().unwrap()];
            args.extend_from_slice(flags);
            let o = absinthe(&args);
            assert!(o.status.success(), "{}", stderr(&o));
            let name = std::path::Path::new(program).file_stem().unwrap();
            let text = std::fs::read_to_string(out.join(name).with_extension("cpp")).unwrap();
            let lines: Vec<&str> = text.lines().map(str::trim).collect();
            let level = |l: &str| -> Option<i64> {
                let rest = l
                    .strip_prefix("else ")
                    .unwrap_or(l)
                    .strip_prefix("if (k < ")?;
                rest.strip_suffix(") {")?.parse().ok()
            };
            let pragmas: Vec<usize> = (0..lines.len())
                .filter(|&n| lines[n] == "#pragma omp simd")
                .collect();
            // The levels at which a band ends: the tests right before a row loop.
            let bands: Vec<i64> = pragmas
                .iter()
                .filter_map(|&p| level(lines[p - 1]))
                .collect();
            let mut chains = 0;
            for (m, &p) in pragmas.iter().enumerate() {
                let end = pragmas.get(m + 1).copied().unwrap_or(lines.len());
                // Its body's tests, less the next loop's band header.
                let inside: Vec<i64> = (p + 1..end)
                    .filter(|&q| q + 1 != end)
                    .filter_map(|q| level(lines[q]))
                    .collect();
                if inside.is_empty() {
                    continue;
                }
                chains += 1;
                let header = lines[p - 1];
                assert!(
                    level(header).is_some() || header == "else {",
                    "{program} {flags:?}: the row loop at line {} has no band test before it",
                    p + 1
                );
                for hi in inside {
                    assert!(
                        bands.contains(&hi),
                        "{program} {flags:?}: level {hi} tested inside the row loop at line {} \
                         but no band of the kernel ends there",
                        p + 1
                    );
                }
            }
            assert!(chains > 0, "{program} {flags:?}: no interval chain found");
        }
    }
}

/// Runs `tune PROGRAM --top TOP --inline-sets SETS --refine 0 --confirm CONFIRM` (exact build,
/// a few runs) and checks what every run must hold: every candidate verified, ranked 1.. in the
/// model's order, the CONFIRM fastest (all when fewer; none when CONFIRM < 2) timed again with
/// four times the runs and the winner the fastest of those (of all, without a confirmation),
/// and the solution file that of the winner (inline set, tiles, `tuned` section), which
/// `codegen --harness` accepts. Returns the report.
fn tune_and_check(program: &str, top: &str, sets: &str, confirm: usize) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tuned.yaml");
    let o = absinthe(&[
        "tune",
        program,
        "--top",
        top,
        "--inline-sets",
        sets,
        "--refine",
        "0",
        "--confirm",
        &confirm.to_string(),
        "--runs",
        "3",
        "--flush-bytes",
        "1000000",
        "--exact",
        "--format",
        "json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let candidates = v["candidates"].as_array().unwrap();
    let confirmed = if confirm < 2 {
        0
    } else {
        confirm.min(candidates.len())
    };
    assert_eq!(v["confirmed"], confirmed, "{v}");
    assert_eq!((&v["runs"], &v["confirm_runs"]), (&3.into(), &12.into()));
    let mut last = 0.0;
    let mut fastest = (0, f64::INFINITY);
    for (k, c) in candidates.iter().enumerate() {
        assert_eq!(c["rank"], k + 1);
        assert_eq!(c["verified"], true, "{c}");
        let p = c["predicted_seconds"].as_f64().unwrap();
        assert!(p >= last, "candidates not in the model's order: {v}");
        last = p;
        let m = c["measured_seconds"].as_f64().unwrap();
        let eligible = confirmed == 0 || c["confirmed"] == true;
        if eligible && m < fastest.1 {
            fastest = (k + 1, m);
        }
    }
    assert_eq!(
        candidates.iter().filter(|c| c["confirmed"] == true).count(),
        confirmed,
        "{v}"
    );
    assert_eq!(v["winner_rank"], fastest.0, "{v}");
    let solution = absinthe_model::output::solution::Solution::load(&out).unwrap();
    let tuned = solution.tuned.as_ref().expect("a tuned section");
    assert_eq!(tuned.model_rank, fastest.0);
    assert_eq!(tuned.candidates, candidates.len());
    let winner = &candidates[fastest.0 - 1];
    assert_eq!(serde_json::json!(solution.inline), winner["inline"], "{v}");
    let tiles: Vec<[usize; 3]> = solution.groups.iter().map(|g| g.tiles).collect();
    assert_eq!(serde_json::json!(tiles), winner["tiles"]);
    let code = dir.path().join("code");
    let o = absinthe(&[
        "codegen",
        program,
        "--solution",
        out.to_str().unwrap(),
        "--harness",
        "-o",
        code.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    v
}

/// `tune` times the model's best few configurations, cheapest first, times them again together
/// (the default `--confirm 4` takes all three), and writes the fastest verified one as a
/// solution file that `codegen` accepts.
#[test]
fn tune_times_the_models_best_and_writes_the_fastest() {
    let v = tune_and_check("configs/example2.yaml", "3", "0", 4);
    assert_eq!(v["candidates"].as_array().unwrap().len(), 3, "{v}");
}

/// `tune --refine N` sweeps the fastest of the model's best: here one sweep of N tile counts of
/// one group along z, timed in one run with the configuration it started from, and the faster
/// of those written (a solution `bench --variants solution:FILE` times again); a bad solution
/// file is refused naming it.
#[test]
fn tune_refines_the_fastest_by_a_measured_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tuned.yaml");
    let out_s = out.to_str().unwrap();
    let o = absinthe(&[
        "tune",
        "configs/example2.yaml",
        "--top",
        "2",
        "--inline-sets",
        "0",
        "--refine",
        "4",
        "--confirm",
        "0",
        "--runs",
        "3",
        "--flush-bytes",
        "1000000",
        "--exact",
        "--format",
        "json",
        "-o",
        out_s,
    ]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let candidates = v["candidates"].as_array().unwrap();
    let stage = |s: &str| -> Vec<&serde_json::Value> {
        candidates.iter().filter(|c| c["stage"] == s).collect()
    };
    let (model, refined) = (stage("model"), stage("refine"));
    assert_eq!((model.len(), refined.len()), (2, 4), "{v}");
    assert_eq!(v["refined"], 4);
    // The model's order: the feasible by prediction, then those it rules out.
    let key = |c: &serde_json::Value| {
        (
            c["feasible"] == false,
            c["predicted_seconds"].as_f64().unwrap(),
        )
    };
    for (k, pair) in candidates.windows(2).enumerate() {
        assert_eq!(pair[0]["rank"], k + 1);
        assert!(
            key(&pair[0]) <= key(&pair[1]),
            "not in the model's order: {v}"
        );
    }
    assert!(model.iter().all(|c| c["feasible"] == true), "{v}");
    let tiles = |c: &serde_json::Value| -> Vec<[usize; 3]> {
        serde_json::from_value(c["tiles"].clone()).unwrap()
    };
    // The sweep started from one of the model's candidates: every configuration it timed has
    // that one's groups and inline set, and differs in one tile count along z, to counts the
    // original auto-tuning tries along 60 planes.
    let from = &refined[0]["swept_from"];
    let start = model
        .iter()
        .find(|m| m["rank"] == *from)
        .unwrap_or_else(|| panic!("no start for the sweep: {v}"));
    for r in &refined {
        assert_eq!(r["swept_from"], *from, "one sweep: {v}");
        assert_eq!(
            (&r["groups"], &r["inline"]),
            (&start["groups"], &start["inline"])
        );
        let (a, b) = (tiles(start), tiles(r));
        let changed: Vec<usize> = (0..a.len()).filter(|&g| a[g] != b[g]).collect();
        assert_eq!(changed.len(), 1, "{r}");
        assert_eq!(a[changed[0]][..2], b[changed[0]][..2], "{r}");
    }
    for r in &refined {
        for t in tiles(r) {
            assert!([60, 30, 15, 5, 2, 1].contains(&t[2]), "{r}");
        }
    }
    // One run timed the start again with the sweep: the winner is the fastest of those.
    let mut ran: Vec<&serde_json::Value> = refined.clone();
    ran.push(start);
    let fastest = ran
        .iter()
        .min_by(|a, b| {
            let t = |c: &serde_json::Value| c["measured_seconds"].as_f64().unwrap();
            t(a).total_cmp(&t(b))
        })
        .unwrap();
    assert!(ran.iter().all(|c| c["verified"] == true), "{v}");
    assert_eq!(v["winner_rank"], fastest["rank"], "{v}");
    let solution = absinthe_model::output::solution::Solution::load(&out).unwrap();
    let solution_tiles: Vec<[usize; 3]> = solution.groups.iter().map(|g| g.tiles).collect();
    assert_eq!(solution_tiles, tiles(fastest));
    let tuned = solution.tuned.as_ref().expect("a tuned section");
    assert_eq!((tuned.candidates, tuned.refined), (6, 4));

    // `bench --variants solution:FILE` times that configuration.
    let o = absinthe(&[
        "bench",
        "configs/example2.yaml",
        "--variants",
        &format!("solution:{out_s},naive"),
        "--runs",
        "2",
        "--no-roofline",
        "--flush-bytes",
        "1000000",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(rows[0]["variant"], "solution:tuned.yaml");
    assert_eq!(rows[0]["tiles"], serde_json::json!(solution_tiles));
    assert_eq!(rows[0]["verified"], true);
    // A solution of another program is refused, naming the file and the key at fault.
    let o = absinthe(&[
        "bench",
        "configs/hdiff.yaml",
        "--variants",
        &format!("solution:{out_s}"),
        "--no-roofline",
    ]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("\nerror: ") && !e.contains("error: error") && e.contains("tuned.yaml:1:1: "),
        "{e}"
    );
    assert!(
        e.contains(
            "tuned.yaml:1:1: program: the solution is for the program `example2`, not `hdiff`"
        ),
        "{e}"
    );
}

/// `tune --inline-sets` also times the optima of other inline sets than the optimum's, and the
/// solution carries the winner's set; `--confirm 2` times the two fastest of the five again and
/// writes the faster of them.
#[test]
fn tune_times_other_inline_sets_and_writes_the_winners_set() {
    let v = tune_and_check("configs/hdiff.yaml", "2", "3", 2);
    let candidates = v["candidates"].as_array().unwrap();
    // hdiff has three candidates for inlining (lap, fli, flj): the exhaustive search solves
    // all eight sets, so three others than the optimum's exist.
    assert_eq!(candidates.len(), 5, "{v}");
    let mut sets: Vec<String> = candidates.iter().map(|c| c["inline"].to_string()).collect();
    sets.sort();
    sets.dedup();
    assert_eq!(sets.len(), 4, "{v}");
}

/// Inlining end to end: `solve --inline` writes the set into the solution, `codegen` from that
/// solution builds a harness that verifies bit for bit against the original program's
/// reference, `bench` runs `opt` (inlined) beside `noinline`, and bad sets are clear errors.
#[test]
fn inlined_solutions_build_verify_and_bad_sets_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sol = dir.path().join("s.yaml");
    let sol_s = sol.to_str().unwrap();
    let o = absinthe(&[
        "solve",
        "configs/hdiff.yaml",
        "--inline",
        "fli,flj",
        "--format",
        "yaml",
        "-o",
        sol_s,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&sol).unwrap();
    assert!(text.contains("inline:\n- fli\n- flj\n"), "{text}");
    assert!(stdout(&o).contains("inline:"), "{}", stdout(&o));

    // codegen from the solution: the harness's reference is the original program's.
    let gen = dir.path().join("gen");
    let o = absinthe(&[
        "codegen",
        "configs/hdiff.yaml",
        "--solution",
        sol_s,
        "--harness",
        "-o",
        gen.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("inlined: fli flj"), "{}", stderr(&o));
    let files: Vec<(String, String)> = ["hdiff.h", "hdiff.cpp", "hdiff_harness.cpp"]
        .iter()
        .map(|f| (f.to_string(), std::fs::read_to_string(gen.join(f)).unwrap()))
        .collect();
    let harness = &files[2].1;
    assert!(harness.contains("r_fli") && harness.contains("r_flj"));
    let exe = toolchain(&["-O1"]).build(&files, &[]).unwrap();
    let r = absinthe_codegen::compile::run_harness(&exe, &["1".into(), "0".into()], &[])
        .unwrap()
        .swap_remove(0);
    assert!(r.verified, "{:?}", r.mismatch);

    // bench: opt with the set, noinline without.
    let rows = quick_bench(
        "configs/hdiff.yaml",
        "noinline,opt",
        &["--inline", "lap,fli,flj", "--exact"],
    );
    assert_eq!(rows[0]["variant"], "noinline");
    assert!(rows[0].get("inline").is_none(), "{}", rows[0]);
    assert_eq!(rows[1]["inline"], serde_json::json!(["lap", "fli", "flj"]));
    assert_eq!(rows[1]["groups"], serde_json::json!([0]));
    for r in rows {
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(r["verification"], "bit-exact", "{r}");
    }

    // A solution naming a stencil the program lacks: the file, the key and the name.
    std::fs::write(&sol, text.replace("- flj\n", "- flk\n")).unwrap();
    let o = absinthe(&[
        "codegen",
        "configs/hdiff.yaml",
        "--solution",
        sol_s,
        "-o",
        gen.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("s.yaml") && e.contains("inline[1]") && e.contains("`flk`"),
        "{e}"
    );
    // Outputs cannot be inlined; --inline and --no-inline exclude each other.
    let o = absinthe(&["solve", "configs/hdiff.yaml", "--inline", "out"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("--inline: `out` is an output"),
        "{}",
        stderr(&o)
    );
    let o = absinthe(&[
        "solve",
        "configs/hdiff.yaml",
        "--inline",
        "lap",
        "--no-inline",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}

/// `bench PROGRAM --variants VARIANTS` with two timed runs, a small flush and no roofline,
/// plus `extra`: its JSON rows, after checking that it succeeded.
fn quick_bench(program: &str, variants: &str, extra: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec!["--no-roofline"];
    args.extend_from_slice(extra);
    quick_bench_roofline(program, variants, &args)
}

/// [`quick_bench`] with the roofline measured.
fn quick_bench_roofline(program: &str, variants: &str, extra: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec![
        "bench",
        program,
        "--variants",
        variants,
        "--runs",
        "2",
        "--flush-bytes",
        "100000",
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let o = absinthe(&args);
    assert!(
        o.status.success(),
        "{program}: {}\n{}",
        stdout(&o),
        stderr(&o)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    v.as_array().unwrap().clone()
}

/// The COSMO-like example kernels (Smagorinsky diffusion with `sqrt`, vertical advection and
/// diffusion along z, divergence damping with three outputs, a saturation adjustment with `exp`
/// and `max`): the optimum, inlined and streamed, and the optimum with nothing inlined match
/// the naive reference bit for bit.
#[test]
fn cosmo_example_kernels_verify_bit_for_bit() {
    for program in [
        "configs/cosmo_smag.yaml",
        "configs/cosmo_vadv.yaml",
        "configs/cosmo_divdamp.yaml",
        "configs/cosmo_satad.yaml",
    ] {
        let rows = quick_bench(program, "opt,noinline", &["--exact"]);
        assert_eq!(rows.len(), 2, "{program}");
        for r in &rows {
            assert_eq!(r["verified"], true, "{program}: {r}");
            assert_eq!(r["verification"], "bit-exact", "{program}: {r}");
            assert!(
                !r["stream"].as_array().unwrap().is_empty(),
                "{program}: {r}"
            );
            // Warm runs only with `--warm`.
            assert!(r["measured_warm_seconds"].is_null(), "{program}: {r}");
        }
    }
}

/// `bench --relaxed-math`: the kernels of cosmo_adv5 (its divisions by 60 become products by
/// the reciprocal, its fluxes reassociate) verify within the tolerance against the IEEE
/// reference, and every row says which build it was. `--exact` and `--relaxed-math` exclude
/// each other. With `--warm` every row also has a time with warm caches.
#[test]
fn bench_relaxed_math_verifies_against_the_ieee_reference() {
    let rows = quick_bench(
        "configs/cosmo_adv5.yaml",
        "noinline,opt",
        &["--relaxed-math", "--warm"],
    );
    assert_eq!(rows.len(), 2);
    for r in &rows {
        let warm = r["measured_warm_seconds"].as_f64();
        assert!(warm.is_some_and(|t| t > 0.0), "{r}");
    }
    let params = machine().params;
    let program = Program::load(&root().join("configs/cosmo_adv5.yaml")).expect("cosmo_adv5 loads");
    let analysis = Analysis::new(&program).expect("cosmo_adv5 analyses");
    let arrays: Vec<&str> = analysis.arrays.iter().map(|a| a.name.as_str()).collect();
    for r in &rows {
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(r["verification"], "tolerance", "{r}");
        assert_eq!(r["build"], "relaxed-math", "{r}");
        // The model counts make up the prediction: opt's inlined stencils are not among
        // them, noinline has every stencil.
        let model = &r["model"];
        assert_eq!(model["domain"], serde_json::json!([64, 64, 60]), "{r}");
        let stencils = model["stencils"].as_array().unwrap();
        let crowded: Vec<bool> = serde_json::from_value(model["crowded"].clone()).unwrap();
        // The stream weights are what the stream counts count: none, no stream counts.
        let (mut streamed, mut total) = (0, 0.0);
        for s in stencils {
            let w: [u64; 4] = serde_json::from_value(s["stream_weights"].clone()).unwrap();
            let c: Counts = serde_json::from_value(s["counts"].clone()).unwrap();
            assert_eq!(w == [0; 4], c.slow_stream.body == 0, "{s}");
            // `loads` and `store` are what the stream weight counts, a store twice.
            let loads: Vec<String> = serde_json::from_value(s["loads"].clone()).unwrap();
            let store = s["store"].as_bool().unwrap();
            assert_eq!(
                loads.len() as u64 + STORE_WEIGHT * u64::from(store),
                w[0],
                "{s}"
            );
            assert!(loads.iter().all(|a| arrays.contains(&a.as_str())), "{s}");
            streamed += w[0];
            let t = stencil_seconds(&params, &c, crowded[s["group"].as_u64().unwrap() as usize]);
            total += t.peel + t.body;
        }
        assert!(streamed > 0, "{r}");
        let overhead: Vec<u128> = serde_json::from_value(model["overhead"].clone()).unwrap();
        total += overhead.iter().sum::<u128>() as f64
            * (params.slow_base.body + params.slow_stream.body);
        let predicted = r["predicted_seconds"].as_f64().unwrap();
        assert!((total - predicted).abs() <= 1e-9 * predicted, "{total} {r}");
        let expected = if r["variant"] == "opt" {
            8 - r["inline"].as_array().unwrap().len()
        } else {
            8
        };
        assert_eq!(stencils.len(), expected, "{r}");
    }
    let o = absinthe(&[
        "bench",
        "configs/cosmo_adv5.yaml",
        "--relaxed-math",
        "--exact",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}

/// Row loops share at most `ROW_LOOP_OPERATIONS` of arithmetic: cosmo_hdiff4 with every
/// intermediate inlined is one group of four outputs of about 50 operations each, and gets
/// four row loops (one shared loop spilled registers); chain8's small stencils still share
/// (six loops for eight stencils in one group).
#[test]
fn large_stencils_get_their_own_row_loops_small_ones_share() {
    let dir = tempfile::tempdir().unwrap();
    let loops = |program: &str, extra: &[&str]| -> (usize, String) {
        let out = dir.path().join(program);
        let mut args = vec![
            "codegen",
            program,
            "--machine",
            "machines/default.yaml",
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = absinthe(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let stem = std::path::Path::new(program)
            .file_stem()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let code = std::fs::read_to_string(out.join(format!("{stem}.cpp"))).unwrap();
        (
            code.matches("#pragma omp simd").count(),
            stderr(&o) + &stdout(&o),
        )
    };
    let all = "lap_u,flx_u,fly_u,lap_v,flx_v,fly_v,lap_w,flx_w,fly_w,lap_pp,flx_pp,fly_pp";
    let (n, said) = loops("configs/cosmo_hdiff4.yaml", &["--inline", all]);
    assert!(said.contains("groups [0, 0, 0, 0]"), "{said}");
    assert_eq!(n, 4, "{said}");
    let (n, said) = loops("configs/chain8.yaml", &["--no-inline"]);
    assert!(said.contains("groups [0, 0, 0, 0, 0, 0, 0, 0]"), "{said}");
    assert!(n < 8, "{n} row loops for 8 stencils: {said}");
}

/// Each thread's tile buffers are whole 4 KiB pages of a page-aligned arena, of their own
/// (`schedule::THREAD_STRIDE_BYTES`): cosmo_hdiff4 with its fluxes inlined keeps four
/// laplacian buffers of 216 doubles per thread, which packed at 1728 bytes shared a 128-byte
/// line pair between the two threads; at a page-multiple stride from a 64-byte aligned base
/// they still shared a page (the L2 streamer prefetches within one). Within its slice each
/// buffer starts at its own line offset (`schedule::buffer_page_offset`).
#[test]
fn threads_tile_buffers_are_whole_pages_apart() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("h");
    let fluxes = "flx_u,fly_u,flx_v,fly_v,flx_w,fly_w,flx_pp,fly_pp";
    let o = absinthe(&[
        "codegen",
        "configs/cosmo_hdiff4.yaml",
        "--machine",
        "machines/default.yaml",
        "--inline",
        fluxes,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let code = std::fs::read_to_string(out.join("cosmo_hdiff4.cpp")).unwrap();
    // `b = b_all + omp_get_thread_num() * STRIDEL + OFFSET;` (no offset when it is 0).
    let slices: Vec<(usize, usize)> = code
        .lines()
        .filter_map(|l| l.split("omp_get_thread_num() * ").nth(1))
        .map(|rest| {
            let rest = rest.trim_end_matches(';');
            let (stride, offset) = rest.split_once("L + ").unwrap_or((rest, "0"));
            let stride = stride.trim_end_matches('L');
            (stride.parse().unwrap(), offset.parse().unwrap())
        })
        .collect();
    assert!(slices.len() >= 2, "fewer than two tile buffers:\n{code}");
    for (stride, offset) in &slices {
        assert_eq!(stride * 8 % 4096, 0, "a thread stride of {stride} doubles");
        assert_eq!(
            offset * 8 % 64,
            0,
            "an offset of {offset} doubles is not whole lines"
        );
        assert!(offset < stride, "offset {offset} past the stride {stride}");
        assert!(
            code.contains(&format!("(std::size_t)nthreads * {stride})")),
            "the arena is not sized for {stride} per thread"
        );
    }
    let mut offsets: Vec<usize> = slices.iter().map(|s| s.1).collect();
    offsets.sort_unstable();
    offsets.dedup();
    assert_eq!(
        offsets.len(),
        slices.len(),
        "two buffers at one offset: {slices:?}"
    );
    let header = std::fs::read_to_string(out.join("cosmo_hdiff4.h")).unwrap();
    assert!(
        header.contains("std::aligned_alloc(4096,"),
        "the tile-buffer arena is not page-aligned:\n{header}"
    );
}

/// A producer with two divisions, read at five offsets: recomputing it where it is read
/// (inlining it, or fusing it with overlapped halos) copies its divisions.
const DIVISIONS: &str = "name: divs\ndomain: [64, 64, 16]\nhalo: [1, 1, 0]\noutputs: [out]\nstencils:\n  - name: q\n    expr: a(i,j,k) / b(i,j,k) + b(i,j,k) / a(i,j,k)\n  - name: out\n    expr: q(i-1,j,k) + q(i+1,j,k) + q(i,j-1,k) + q(i,j+1,k) - 4.0 * q(i,j,k)\n";

/// A machine file with a compute part whose division weighs `divide` adds.
fn division_machine(divide: u64) -> String {
    format!(
        "name: divide-{divide}\ncores: 2\ncache_bytes: 2097152\ncache_fraction: 0.3333\ncompiler: {{cxx: g++, flags: [-O1, -fopenmp]}}\nparams:\n  fast:        {{peel: 2.3e-10, body: 2.2e-11}}\n  slow_base:   {{peel: 0.0,     body: 0.0}}\n  slow_stream: {{peel: 1.2e-9,  body: 1.3e-10}}\n  compute:     {{peel: 1.5e-11, body: 7.0e-12}}\n  operations:  {{divide: {divide}, sqrt: 50, call: 300}}\n"
    )
}

/// The machine file's operation weights (`params.operations`) reach every command that costs
/// a program: with a division at one add the optimum inlines the producer, at 1000 it computes
/// it once per cell in a group of its own; `verify` certifies that optimum, `codegen` writes
/// it and `bench` verifies it on the same machine. (Debug builds also check, wherever the
/// model meets a machine, that the analysis was weighed with its weights:
/// `evaluate::debug_check_weights`.)
#[test]
fn the_machines_operation_weights_reach_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let program = temp_file(dir.path(), "divs.yaml", DIVISIONS);
    let program = program.to_str().unwrap();
    let solve = |divide: u64| {
        let m = temp_file(
            dir.path(),
            &format!("m{divide}.yaml"),
            &division_machine(divide),
        );
        let sol = dir.path().join(format!("sol{divide}.yaml"));
        let o = absinthe(&[
            "solve",
            program,
            "--machine",
            m.to_str().unwrap(),
            "--format",
            "json",
            "-o",
            sol.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(sol.is_file());
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        (m, sol, v)
    };
    let (_, _, cheap) = solve(1);
    assert_eq!(cheap["inline"], serde_json::json!(["q"]), "{cheap}");
    let (m, sol, dear) = solve(1000);
    assert!(dear.get("inline").is_none(), "{dear}");
    let groups: Vec<&serde_json::Value> = dear["groups"].as_array().unwrap().iter().collect();
    assert_eq!(groups.len(), 2, "q computed once per cell: {dear}");
    assert!(
        dear["estimate_seconds"].as_f64().unwrap() > cheap["estimate_seconds"].as_f64().unwrap()
    );
    let m = m.to_str().unwrap();
    let o = absinthe(&[
        "verify",
        program,
        "--machine",
        m,
        "--solution",
        sol.to_str().unwrap(),
        "--time-limit",
        "60",
    ]);
    let out = stdout(&o) + &stderr(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("certified") && !out.contains("unknown"),
        "{out}"
    );
    let gen = dir.path().join("gen");
    let o = absinthe(&[
        "codegen",
        program,
        "--machine",
        m,
        "--solution",
        sol.to_str().unwrap(),
        "-o",
        gen.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(gen.join("divs.cpp").is_file());
    let rows = quick_bench(program, "opt,noinline", &["--machine", m]);
    assert_eq!(rows.len(), 2);
}

/// The weights from the operation-cost measurement's times: per kind what one more operation a
/// cell adds once its unit is the bottleneck, in adds (the ones `ops72` adds to `ops36`); a
/// division is a quarter of what four divisions and four adds add, less an add.
#[test]
fn operation_weights_are_one_more_operation_in_adds() {
    let add = 5.0e-12;
    let t = OperationTimes {
        base: 1.0e-10,
        // The first adds hide in the loads' slack: only the second 36 count.
        ops36: 1.0e-10 + 20.0 * add,
        ops72: 1.0e-10 + 56.0 * add,
        // Four divisions and four adds: 4 * (30 + 1) adds.
        divide4: 1.0e-10 + 100.0 * add,
        divide8: 1.0e-10 + 224.0 * add,
        // sqrt 50.
        sqrt1: 1.0e-10 + 35.0 * add,
        sqrt2: 1.0e-10 + 85.0 * add,
        // exp 301.
        call1: 1.0e-10 + 220.0 * add,
        call2: 1.0e-10 + 521.0 * add,
    };
    let w = t.weights().unwrap();
    assert_eq!((w.divide, w.sqrt, w.call), (30, 50, 301));
    let [divide, sqrt, call] = t.seconds();
    assert!((divide - 30.0 * add).abs() < 1e-15, "{divide}");
    assert!((sqrt - 50.0 * add).abs() < 1e-15, "{sqrt}");
    assert!((call - 301.0 * add).abs() < 1e-15, "{call}");
    // Noise that swamps the adds gives no weights; an operation cheaper than an add weighs one.
    assert!(OperationTimes {
        ops72: t.ops36,
        ..t
    }
    .weights()
    .is_none());
    let cheap = OperationTimes {
        divide8: t.divide4 - 10.0 * add,
        ..t
    };
    assert_eq!(cheap.weights().unwrap().divide, 1);
}

/// The operation-cost program's `ops36` and `ops72` add what their names say to the plain loop:
/// 36 and 72 adds, subtractions and multiplies a cell, counted in the rendered source (the
/// sums both use, then each variant's own block), so that `add_seconds` divides by what the
/// difference really holds.
#[test]
fn operation_program_adds_36_and_then_36_more_operations() {
    let source = Renderer::embedded().operations(2, 1, 1, 1).unwrap();
    let code: String = source
        .lines()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    let between = |from: &str, to: &str| -> usize {
        let start = code.find(from).unwrap_or_else(|| panic!("no `{from}`")) + from.len();
        let len = code[start..]
            .find(to)
            .unwrap_or_else(|| panic!("no `{to}` after `{from}`"));
        code[start..start + len]
            .chars()
            .filter(|c| matches!(c, '+' | '-' | '*'))
            .count()
    };
    // The twelve sums and differences of the inputs, declared before `v0`.
    let shared = between("const double a1", "const double v0");
    let first = between("if (K == 1 || K == 2)", "if (K == 2)");
    let second = between("if (K == 2)", "if (K == 3)");
    assert_eq!(shared + first, 36, "ops36: {shared} + {first}");
    assert_eq!(second, 36, "ops72 over ops36");
}

/// The roofline's triad (`templates/stream.cpp.j2`) builds, runs and reads back a bandwidth
/// (bench reports it; no other test turns the roofline on).
#[test]
fn stream_bandwidth_builds_runs_and_reads_back() {
    let bytes_per_second = stream_bandwidth(
        &toolchain(&["-O2", "-fopenmp"]),
        &Renderer::embedded(),
        8 << 20,
        &[("OMP_NUM_THREADS", "2")],
    )
    .unwrap();
    // Between 100 MB/s and 10 TB/s: read back as a rate, not seconds or bytes.
    assert!(
        (1e8..1e13).contains(&bytes_per_second),
        "{bytes_per_second}"
    );
}

/// `bench` with its roofline puts the divider's roof beside the bandwidth bound: the program's
/// compulsory divisions (`q` over its reader's box, one more cell along i, and `out` over the
/// domain) at a measured time each; none in the relaxed-math build, which multiplies by the
/// literals' reciprocals. The literal (1e300) is a divisor whose reciprocal's rest is subnormal,
/// so the FMA build divides by it (`divisor_reciprocal`); by 3 or 49 it would not, and the roof
/// would count nothing.
#[test]
fn bench_reports_the_dividers_roof() {
    let dir = tempfile::tempdir().unwrap();
    let program = temp_file(
        dir.path(),
        "divs.yaml",
        "name: divs\ndomain: [16, 8, 4]\nhalo: [1, 0, 0]\noutputs: [out]\nstencils:\n  - name: q\n    expr: \"u(i,j,k) / 1e300\"\n  - name: out\n    expr: \"q(i,j,k) - q(i-1,j,k) / 1e300\"\n",
    );
    let program = program.to_str().unwrap();
    let run = |extra: &[&str]| quick_bench_roofline(program, "opt", extra)[0].clone();
    let divisions = (17 * 8 * 4 + 16 * 8 * 4) as f64;
    let row = run(&[]);
    let each = row["divider_seconds"].as_f64().expect("a divider roof") / divisions;
    // Under a microsecond a division (a lower bound: zero when noise swamps the difference it
    // is measured by), read back per division, not per cell or in total.
    assert!((0.0..1e-6).contains(&each), "{row}");
    assert!(row["roofline_seconds"].as_f64().unwrap() > 0.0, "{row}");
    assert!(run(&["--relaxed-math"]).get("divider_seconds").is_none());
}

/// learn's operation-cost measurement (`templates/operations.cpp.j2`) builds with the
/// toolchain's flags, runs and reads back a time per cell for every variant.
#[test]
fn operation_times_build_run_and_read_back() {
    let t = operation_times(
        &toolchain(&["-O2", "-fopenmp"]),
        &Renderer::embedded(),
        2,
        &[("OMP_NUM_THREADS", "2")],
    )
    .unwrap();
    for v in [
        t.base, t.ops36, t.ops72, t.divide4, t.divide8, t.sqrt1, t.sqrt2, t.call1, t.call2,
    ] {
        assert!(v.is_finite() && v > 0.0, "{t:?}");
    }
}

/// The harness's default flush (`evict`) writes back and invalidates every cache line of the
/// arrays a run touches and of every tile buffer alive (the arenas list themselves), the
/// reference's arrays before the first run only, and the result line says how many bytes the
/// last flush evicted; a read flush reads its buffer, and `0` nothing.
/// Whether the lines really leave the caches is measured, not asserted
/// (docs/decisions/0015-flush-by-eviction-to-dram.md).
#[test]
fn the_evict_flush_covers_the_arrays_and_the_tile_buffers() {
    use absinthe_codegen::render::Flush;
    use absinthe_codegen::schedule::Role;
    let cases = schedules(0..16, 2);
    let has_buffer = |s: &Schedule| {
        s.groups
            .iter()
            .any(|g| g.steps.iter().any(|st| st.buffer.is_some()))
    };
    let with = cases
        .iter()
        .find(|(_, s)| has_buffer(s))
        .expect("a case with tile buffers");
    let without = cases
        .iter()
        .find(|(_, s)| !has_buffer(s))
        .expect("a case without");
    // Each case alone in its process (arenas of other cases would be listed too).
    let runs: Vec<(&(String, Schedule), Flush)> = vec![
        (with, Flush::Evict),
        (without, Flush::Evict),
        (with, Flush::Read(1 << 20)),
        (with, Flush::NONE),
    ];
    let renderer = Renderer::embedded();
    let options: Vec<HarnessOptions> = runs
        .iter()
        .map(|((label, _), flush)| HarnessOptions {
            runs: 2,
            flush: *flush,
            label: label.clone(),
            ..HarnessOptions::default()
        })
        .collect();
    let sources: Vec<String> = runs
        .iter()
        .zip(&options)
        .map(|(((_, s), _), h)| renderer.bundle(&[BundleCase { s, h }]).unwrap())
        .collect();
    let results = build_and_run_bundles(&toolchain(&[]), &sources, &[("OMP_NUM_THREADS", "2")]);
    // Each array a timed run touches over its own extent (a field's is smaller); the
    // reference's arrays are evicted by the first flush only, and the last is reported.
    let arrays_bytes = |s: &Schedule| -> u64 {
        let inputs: usize = s
            .arrays
            .iter()
            .filter(|a| a.role == Role::Input)
            .map(|a| a.cells)
            .sum();
        let stored: usize = s
            .arrays
            .iter()
            .filter(|a| a.role != Role::Input)
            .map(|a| a.cells)
            .sum();
        ((inputs + stored) * s.value_bytes) as u64
    };
    let r: Vec<&HarnessResult> = results.iter().map(|r| &r[0]).collect();
    for x in &r {
        assert!(x.verified, "{} differs: {:?}", x.label, x.mismatch);
    }
    assert_eq!(r[0].flush, "evict");
    let buffers = r[0].flushed_bytes - arrays_bytes(&with.1);
    assert!(
        buffers > 0 && buffers.is_multiple_of(4096),
        "{} bytes evicted besides the arrays of {}: the tile buffers' arena is not evicted",
        buffers,
        with.0
    );
    assert_eq!(r[1].flush, "evict");
    assert_eq!(
        r[1].flushed_bytes,
        arrays_bytes(&without.1),
        "{}",
        without.0
    );
    assert_eq!((r[2].flush.as_str(), r[2].flushed_bytes), ("read", 1 << 20));
    assert_eq!((r[3].flush.as_str(), r[3].flushed_bytes), ("read", 0));
}

/// A harness told `verified` (what `measure::runner` passes after the first round) compares
/// nothing and says so: a kernel made wrong by hand fails its verifying run and passes the
/// other, so only the first round can catch a wrong kernel, and the runner pools the first
/// round's verdict. The reference is still computed when it is what is timed.
#[test]
fn a_harness_told_verified_skips_the_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let gen = dir.path().join("gen");
    let o = absinthe(&[
        "codegen",
        "configs/hdiff.yaml",
        "--harness",
        "-o",
        gen.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut files: Vec<(String, String)> = ["hdiff.h", "hdiff.cpp", "hdiff_harness.cpp"]
        .iter()
        .map(|f| (f.to_string(), std::fs::read_to_string(gen.join(f)).unwrap()))
        .collect();
    assert!(files[1].1.contains("(-4.0)"), "{}", files[1].1);
    files[1].1 = files[1].1.replace("(-4.0)", "(-4.5)");
    let exe = toolchain(&["-O1"]).build(&files, &[]).unwrap();
    let run = |args: &[&str]| {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        absinthe_codegen::compile::run_harness(&exe, &args, &[])
            .unwrap()
            .swap_remove(0)
    };
    let checked = run(&["2", "0", "kernel", "verify"]);
    assert!(!checked.verified && checked.mismatch.is_some());
    assert_eq!(checked.verification, "bit-exact");
    for timed in ["kernel", "reference"] {
        let r = run(&["2", "0", timed, "verified"]);
        assert!(r.verified && r.mismatch.is_none(), "{timed}: {r:?}");
        assert_eq!(
            (r.verification.as_str(), r.timed.as_str()),
            ("earlier run", timed)
        );
        assert_eq!(r.times.len(), 2);
    }
}

/// The header `absinthe codegen` writes into `dir` for a program that divides by 60 (`p.h`).
fn header_dividing_by_60(dir: &std::path::Path) -> String {
    let program = temp_file(
        dir,
        "p.yaml",
        "name: p\ndomain: [8, 8, 2]\nhalo: [0, 0, 0]\noutputs: [out]\nstencils:\n  - name: out\n    expr: \"u(i,j,k) / 60.0\"\n",
    );
    let out = absinthe(&[
        "codegen",
        program.to_str().unwrap(),
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::read_to_string(dir.join("p.h")).unwrap()
}

/// The FMA build divides by a literal through its reciprocal (`absinthe_divide_by` in every
/// generated header, `divisor_reciprocal` choosing the divisors and whether the reciprocal's
/// rest joins it): the quotient is IEEE division's, bit for bit, for every float of one binade
/// (every significand; elsewhere in the normal range the exponent only scales) by float
/// divisors, and for random doubles and doubles next to multiples of the divisor by double
/// divisors, with signed zeros, infinities, NaN and quotients that overflow as IEEE. Divisors
/// whose reciprocal's rest falls below the normal range keep the division.
#[test]
fn division_by_a_literal_through_its_reciprocal_is_correctly_rounded() {
    use absinthe_model::language::expr::{divisor_reciprocal, Expr, Reciprocal};
    use absinthe_model::language::program::ValueType;
    let literal = |v: f64| Expr::Number {
        text: format!("{v:?}"),
        value: v,
    };
    let x = Expr::Local("x".into());
    let z = |y: f64, vt: ValueType| divisor_reciprocal(&x, &literal(y), vt);
    // Powers of two multiply in every build, a literal over a literal is folded, 60's
    // reciprocal alone is near enough, 49's needs its rest, and 1e300's rest is subnormal: it
    // divides.
    assert_eq!(z(64.0, ValueType::Double), None);
    assert_eq!(
        divisor_reciprocal(&literal(3.0), &literal(60.0), ValueType::Double),
        None
    );
    assert_eq!(z(60.0, ValueType::Double).map(|r| r.low), Some(0.0));
    assert!(z(49.0, ValueType::Double).is_some_and(|r| r.low != 0.0));
    assert_eq!(z(1e300, ValueType::Double), None);
    let split = |v: &[(f64, Reciprocal)]| v.iter().filter(|(_, r)| r.low != 0.0).count();
    // Each divisor with the constants the FMA build divides by it through.
    let through = |ys: &[f64], vt: ValueType| -> Vec<(f64, Reciprocal)> {
        ys.iter()
            .map(|&y| (y, z(y, vt).expect("a divisor through its reciprocal")))
            .collect()
    };
    let doubles = through(
        &[
            60.0, 12.0, 3.0, 7.0, 10.0, 0.3, 1e-3, 2200.0, 1.1, -60.0, 49.0, 77.0, 1e5, 1e9, -49.0,
            0.7e-3,
        ],
        ValueType::Double,
    );
    assert!(split(&doubles) >= 6, "{doubles:?}");
    let floats = through(
        &[
            3.0, 10.0, 12.0, 0.3, 1.1, 2200.0, -3.0, 1000.0, 1e-3, 7.0, -7.0,
        ],
        ValueType::Float,
    );
    assert!(split(&floats) >= 2, "{floats:?}");
    let dir = tempfile::tempdir().unwrap();
    let header = header_dividing_by_60(dir.path());
    let triples = |v: &[(f64, Reciprocal)], t: &str| {
        v.iter()
            .map(|(y, r)| format!("{{({t}){y:?}, ({t}){:?}, ({t}){:?}}}", r.z, r.low))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let main = format!(
        r#"#include "p.h"
#include <cfloat>
#include <cstring>
#include <vector>
template <typename T, typename B> static bool same(T a, T b)
{{
    B x, y;
    std::memcpy(&x, &a, sizeof a);
    std::memcpy(&y, &b, sizeof b);
    return x == y || (a != a && b != b);
}}
template <typename T, typename B> static long check(const std::vector<T>& xs, T y, T z, T low)
{{
    std::vector<T> fast(xs.size()), ieee(xs.size());
    #pragma omp simd
    for (size_t n = 0; n < xs.size(); ++n) fast[n] = ABSINTHE_DIVIDE_BY(xs[n], y, z, low);
    for (size_t n = 0; n < xs.size(); ++n) ieee[n] = xs[n] / y;
    long bad = 0;
    for (size_t n = 0; n < xs.size(); ++n)
        if (!same<T, B>(fast[n], ieee[n])) {{
            if (bad++ < 3) std::printf("%a / %a: %a against %a\n", (double)xs[n], (double)y, (double)fast[n], (double)ieee[n]);
        }}
    return bad;
}}
int main()
{{
    const double doubles[][3] = {{ {doubles} }};
    const float floats[][3] = {{ {floats} }};
    unsigned long long s = 88172645463325252ULL;
    auto next = [&]() {{ s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; }};
    long bad = 0;
    for (auto& d : doubles) {{
        std::vector<double> xs = {{0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0, d[0], 3 * d[0], DBL_MAX, -DBL_MAX, 1e300}};
        for (int n = 0; n < 1000000; ++n) {{
            unsigned long long bits = (next() & ((1ULL << 52) - 1)) | ((unsigned long long)(next() % 1200 + 400) << 52);
            double x;
            std::memcpy(&x, &bits, 8);
            xs.push_back(next() & 1 ? -x : x);
            xs.push_back(std::nextafter((double)(next() % 1000000 + 1) * d[0], next() & 1 ? INFINITY : -INFINITY));
        }}
        bad += check<double, unsigned long long>(xs, d[0], d[1], d[2]);
    }}
    for (auto& f : floats) {{
        std::vector<float> xs = {{0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MAX, -FLT_MAX, 1e38f}};
        for (unsigned m = 0; m < (1u << 23); ++m) {{
            unsigned bits = (127u << 23) | m;
            float x;
            std::memcpy(&x, &bits, 4);
            xs.push_back(x);
        }}
        bad += check<float, unsigned>(xs, f[0], f[1], f[2]);
    }}
    std::printf("%ld\n", bad);
    return bad != 0;
}}
"#,
        doubles = triples(&doubles, "double"),
        floats = triples(&floats, "float"),
    );
    let tc = toolchain(&["-O3", "-march=native", "-fopenmp"]).fused_multiply_add();
    let exe = tc
        .build(&[("p.h".into(), header), ("main.cpp".into(), main)], &[])
        .unwrap();
    let run = std::process::Command::new(&exe).output().unwrap();
    assert!(
        run.status.success(),
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&run.stdout).trim(), "0");
}

/// How the timed build divides by literals follows the machine file's `compiler.division`
/// (`Toolchain::of`): through the reciprocal by default, with a division where it says `divide`;
/// the exact build divides either way.
#[test]
fn the_timed_build_divides_as_the_machine_file_says() {
    use absinthe_model::formats::machine::Division;
    let dir = tempfile::tempdir().unwrap();
    let header = header_dividing_by_60(dir.path());
    assert!(header.contains("ABSINTHE_DIVIDE_BY("), "{header}");
    // The macro's expansion, as text.
    let main = "#include \"p.h\"\n#include <cstdio>\n#define ABSINTHE_TEXT(...) #__VA_ARGS__\n#define ABSINTHE_SHOW(...) ABSINTHE_TEXT(__VA_ARGS__)\nint main() { std::puts(ABSINTHE_SHOW(ABSINTHE_DIVIDE_BY(x, y, z, low))); return 0; }\n";
    let expansion = |tc: Toolchain| {
        let exe = tc
            .with_cache_dir(root().join("target/absinthe-test-cache"))
            .build(
                &[
                    ("p.h".into(), header.clone()),
                    ("main.cpp".into(), main.into()),
                ],
                &[],
            )
            .unwrap();
        let run = std::process::Command::new(&exe).output().unwrap();
        assert!(run.status.success());
        String::from_utf8_lossy(&run.stdout).trim().to_string()
    };
    let machine = |division: &str| {
        Machine::from_yaml(&format!(
            "name: m\ncompiler: {{cxx: g++, flags: [-O1]{division}}}\n"
        ))
        .unwrap()
    };
    let reciprocal = machine("");
    assert_eq!(reciprocal.compiler.division, Division::Reciprocal);
    let divide = machine(", division: divide");
    assert_eq!(divide.compiler.division, Division::Divide);
    let through = "absinthe_divide_by((x), (y), (z), (low))";
    let division = "((x) / (y))";
    let timed = |m: &Machine| expansion(Toolchain::of(&m.compiler).fused_multiply_add());
    assert_eq!(timed(&reciprocal), through);
    assert_eq!(timed(&divide), division);
    assert_eq!(expansion(Toolchain::of(&divide.compiler)), division);
    assert_eq!(expansion(Toolchain::of(&reciprocal.compiler)), division);
}
