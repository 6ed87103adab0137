//! Decomposition over MPI ranks (`codegen --ranks`): generated kernels run under `mpirun` on
//! random programs x configurations x process grids, their gathered outputs bit for bit against
//! the single-process reference (the harness poisons every cell the caller does not fill, so a
//! missing or short exchange shows); each group's exchange widths against an independent count
//! of the cells it reads; refusals with messages.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::Command;

use absinthe_codegen::children;
use absinthe_codegen::ranks::{decompose, Decomposition, Grid, RankOptions};
use absinthe_codegen::render::{HarnessOptions, Renderer};
use absinthe_model::cost_model::evaluate::{group_shape, Configuration, STORE_WEIGHT};
use absinthe_model::cost_model::ranks::{incoming, priced_rank, reach as model_reach};
use absinthe_model::formats::machine::{Machine, ModelMachine};
use absinthe_model::language::analysis::{Analysis, ArrayKind};
use absinthe_model::language::generate::{
    random_column_program, random_language_program, random_program, RandomShape,
};
use absinthe_model::language::program::Program;
use absinthe_model::support::parallel::parallel_map;
use absinthe_model::support::rng::Rng;

use crate::common::{absinthe, root, stderr, valid_configuration};

const GRIDS: [Grid; 5] = [
    Grid { px: 1, py: 1 },
    Grid { px: 2, py: 1 },
    Grid { px: 1, py: 2 },
    Grid { px: 2, py: 2 },
    Grid { px: 3, py: 2 },
];

fn machine() -> ModelMachine {
    Machine::load(&root().join("machines/default.yaml"))
        .unwrap()
        .model_view(8)
        .unwrap()
}

/// Writes the kernels and harness, builds them with mpicxx and runs them on the grid's ranks
/// (one OpenMP thread each, a deadlock killed after 120 s); the harness's stdout and stderr and
/// whether it exited 0.
fn build_and_run(d: &Decomposition, dir: &Path, env: &[(&str, &str)]) -> (String, bool) {
    let harness = HarnessOptions {
        runs: 2,
        ..HarnessOptions::default()
    };
    let files = Renderer::embedded().mpi(d, Some(&harness)).unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let mut sources = Vec::new();
    for (name, text) in &files.files {
        std::fs::write(dir.join(name), text).unwrap();
        if name.ends_with(".cpp") {
            sources.push(dir.join(name));
        }
    }
    let exe = dir.join("harness");
    let built = Command::new("mpicxx")
        .args(["-O1", "-fopenmp", "-ffp-contract=off", "-o"])
        .arg(&exe)
        .args(&sources)
        .output()
        .expect("mpicxx (scripts/setup.sh installs libopenmpi-dev)");
    assert!(
        built.status.success(),
        "mpicxx failed in {}:\n{}",
        dir.display(),
        String::from_utf8_lossy(&built.stderr)
    );
    // Each variable reaches the ranks through `mpirun -x NAME=VALUE`.
    let exports: Vec<OsString> = env
        .iter()
        .flat_map(|(k, v)| ["-x".into(), format!("{k}={v}").into()])
        .chain([exe.into_os_string()])
        .collect();
    let args: Vec<&OsStr> = exports.iter().map(OsString::as_os_str).collect();
    let out = children::mpirun(120, d.grid.ranks(), 1, &args)
        .expect("mpirun (scripts/setup.sh installs openmpi-bin)");
    assert_ne!(out.status.code(), Some(124), "{} deadlocked", dir.display());
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (text, out.status.success())
}

/// The cells of each array a group reads beyond the sub-domain when it computes what it stores
/// on the sub-domain: per stencil of the group, the box it is evaluated on (relative to
/// `[0, n)`) grows from its in-group readers' boxes by their offsets; the reads of arrays from
/// outside the group reach from those boxes by their offsets exactly. Counted here from the
/// analysis's access lists and the groups, without the model's evaluation widths.
fn reach(analysis: &Analysis, config: &Configuration) -> Vec<BTreeMap<String, [[usize; 2]; 2]>> {
    config
        .group_ranges()
        .into_iter()
        .map(|range| {
            let mut need: BTreeMap<usize, [[i64; 2]; 2]> = BTreeMap::new();
            for s in range.clone().rev() {
                let info = &analysis.stencils[s];
                let stored = info.is_output || info.readers.iter().any(|r| !range.contains(r));
                let mut n = stored.then_some([[0i64; 2]; 2]);
                for &r in info.readers.iter().filter(|r| range.contains(r)) {
                    let Some(nr) = need.get(&r) else { continue };
                    for (a, off) in &analysis.stencils[r].accesses {
                        if *a != info.array {
                            continue;
                        }
                        // A producer is evaluated on its reader's box grown by the reader's
                        // offsets toward each side (a box around the tile: an offset away from
                        // a side does not shrink it).
                        let m = n.get_or_insert([[0; 2]; 2]);
                        for d in 0..2 {
                            m[d][0] = m[d][0].max(nr[d][0] + (-off[d] as i64).max(0));
                            m[d][1] = m[d][1].max(nr[d][1] + (off[d] as i64).max(0));
                        }
                    }
                }
                need.insert(s, n.expect("every stencil is stored or read in its group"));
            }
            let mut widths: BTreeMap<String, [[usize; 2]; 2]> = BTreeMap::new();
            for s in range.clone() {
                for (a, off) in &analysis.stencils[s].accesses {
                    if matches!(analysis.arrays[*a].kind, ArrayKind::Stencil(p) if range.contains(&p))
                    {
                        continue;
                    }
                    let w = widths.entry(analysis.arrays[*a].name.clone()).or_default();
                    for d in 0..2 {
                        if analysis.arrays[*a].dims.has(d) {
                            w[d][0] = w[d][0].max((need[&s][d][0] - off[d] as i64).max(0) as usize);
                            w[d][1] = w[d][1].max((need[&s][d][1] + off[d] as i64).max(0) as usize);
                        }
                    }
                }
            }
            widths.retain(|_, w| w.iter().flatten().any(|&c| c > 0));
            widths
        })
        .collect()
}

/// The messages and cells the rank the ranked model prices received in the verified run (the
/// harness's `ABSINTHE_MPI_TRAFFIC` lines) are what the model counts for it
/// (`cost_model::ranks::incoming` over every group's reach).
fn assert_traffic_is_the_models(seed: u64, d: &Decomposition, text: &str) {
    let (program, analysis) = random_subject(seed);
    let config = &d.global.configuration;
    let (size, boundary) = priced_rank(analysis.domain, d.grid.dims());
    let mut local = analysis.clone();
    local.domain = size;
    let mut want = (0, 0);
    for range in config.group_ranges() {
        let shape = group_shape(&local, range.clone(), STORE_WEIGHT);
        let widths: Vec<_> = shape.stencils.iter().map(|s| s.widths).collect();
        for (a, w) in model_reach(&local, range, &widths) {
            let i = incoming(&local, boundary, a, w);
            want.0 += i.messages;
            want.1 += i.cells;
        }
    }
    let c = d.grid.dims().map(|p| 1.min(p - 1) as u64);
    let got = text
        .lines()
        .filter_map(|l| l.strip_prefix("ABSINTHE_MPI_TRAFFIC "))
        .map(|l| {
            let f: Vec<u64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
            (f[0], f[1], f[2], f[3])
        })
        .find(|t| (t.0, t.1) == (c[0], c[1]))
        .unwrap_or_else(|| panic!("seed {seed}: no traffic line for rank {c:?}:\n{text}"));
    assert_eq!(
        (got.2, got.3),
        want,
        "seed {seed} ({}): rank {c:?} received (messages, cells) {:?}, the model counts {want:?}",
        program.name,
        (got.2, got.3)
    );
}

/// `seed`'s program: a rich random program, one over the whole language (sweeps, intervals,
/// scalars, fields) or a column program (sweeps, 2-D stencils, fields); domains 6-14 along x
/// and y.
fn random_subject(seed: u64) -> (Program, Analysis) {
    let shape = RandomShape {
        min_stencils: 1,
        max_stencils: 5,
        min_domain: 6,
        max_domain: 14,
        max_offset: 2,
        rich_expressions: true,
    };
    let text = match seed % 3 {
        2 => random_language_program(seed, &shape),
        // Column programs (2-D stencils among them) on a domain grown to 7-11 x 7-10.
        1 => {
            let text = random_column_program(seed);
            let line = text.lines().find(|l| l.starts_with("domain:")).unwrap();
            let d: Vec<usize> = line["domain: [".len()..line.len() - 1]
                .split(", ")
                .map(|v| v.parse().unwrap())
                .collect();
            let grown = format!("domain: [{}, {}, {}]", d[0] + 6, d[1] + 6, d[2]);
            text.replacen(line, &grown, 1)
        }
        _ => random_program(seed, &shape),
    };
    let program = Program::from_yaml(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let analysis = Analysis::new(&program).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    (program, analysis)
}

#[test]
fn decomposed_kernels_match_the_single_process_reference() {
    let m = machine();
    let dir = tempfile::tempdir().unwrap();
    let mut cases = Vec::new();
    let mut refused: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut seed = 0u64;
    while cases.len() < 30 {
        seed += 1;
        assert!(seed < 400, "too few decomposable cases: {refused:?}");
        let (program, analysis) = random_subject(seed);
        let mut rng = Rng::new(seed.wrapping_mul(0x9E37_79B9));
        let config = valid_configuration(&mut rng, &analysis);
        let grid = GRIDS[cases.len() % GRIDS.len()];
        let d = match decompose(
            &program,
            &analysis,
            &config,
            &m,
            RankOptions {
                grid,
                overlap: !seed.is_multiple_of(4),
            },
            (&program, &analysis),
        ) {
            Ok(d) => d,
            Err(e) => {
                let e = e.to_string();
                let why = if e.contains("a neighbour would have to send") {
                    "sub-domain narrower than a width"
                } else {
                    panic!("seed {seed}: unexpected refusal: {e}")
                };
                *refused.entry(why).or_default() += 1;
                continue;
            }
        };
        // Each exchanged width is the group's reach, counted independently.
        let expected = reach(&analysis, &config);
        for (g, arrays) in d.widths.iter().enumerate() {
            let got: BTreeMap<String, [[usize; 2]; 2]> = arrays.iter().cloned().collect();
            assert_eq!(got, expected[g], "seed {seed}, group {g}");
        }
        cases.push((seed, d));
    }
    let results = parallel_map(cases.len(), 2, |n| {
        let (seed, d) = &cases[n];
        build_and_run(d, &dir.path().join(format!("case{seed}")), &[])
    });
    let mut exchanged_temporaries = 0;
    let overlapped = cases
        .iter()
        .filter(|(_, d)| {
            d.classes
                .iter()
                .any(|c| c.groups.iter().any(|g| !g.inner.is_empty()))
        })
        .count();
    for ((seed, d), (text, ok)) in cases.iter().zip(&results) {
        assert_traffic_is_the_models(*seed, d, text);
        assert!(
            *ok && text.contains("\"verified\":true"),
            "seed {seed} on {}x{} ranks, groups {:?}:\n{text}",
            d.grid.px,
            d.grid.py,
            d.global.configuration.groups
        );
        let temporaries: Vec<&str> = d
            .global
            .arrays
            .iter()
            .filter(|a| a.role != absinthe_codegen::schedule::Role::Input)
            .map(|a| a.name.as_str())
            .collect();
        if d.grid.ranks() > 1
            && d.widths
                .iter()
                .flatten()
                .any(|(a, _)| temporaries.contains(&a.as_str()))
        {
            exchanged_temporaries += 1;
        }
    }
    for grid in GRIDS {
        assert!(cases.iter().any(|(_, d)| d.grid == grid));
    }
    // Fields over [i, j] (inputs, and 2-D stencils computed once per column) are exchanged as
    // one level.
    let planar = |d: &Decomposition, stencil: bool| {
        d.global.arrays.iter().any(|a| {
            a.dims.contains("i")
                && a.dims.contains("j")
                && !a.dims.contains("k")
                && stencil == (a.role != absinthe_codegen::schedule::Role::Input)
        })
    };
    let ij_fields = cases.iter().filter(|(_, d)| planar(d, false)).count();
    let planes = cases.iter().filter(|(_, d)| planar(d, true)).count();
    // ... and exchanged: an [i, j] array read across a rank border.
    let exchanged_planar = cases
        .iter()
        .filter(|(_, d)| {
            d.grid.ranks() > 1
                && d.widths.iter().flatten().any(|(name, _)| {
                    d.global
                        .arrays
                        .iter()
                        .any(|a| &a.name == name && a.dims == "ij")
                })
        })
        .count();
    assert!(
        ij_fields >= 3 && planes >= 3 && exchanged_planar >= 3,
        "{ij_fields} cases with [i, j] inputs, {planes} with 2-D stencils, {exchanged_planar} exchange one"
    );
    assert!(
        exchanged_temporaries >= 5,
        "only {exchanged_temporaries} cases exchange an earlier group's stencil"
    );
    assert!(
        overlapped >= 5,
        "only {overlapped} cases compute an inner box while exchanging"
    );
    eprintln!(
        "{} decomposed kernels verified bit for bit ({exchanged_temporaries} exchanging earlier groups' stencils, {overlapped} overlapping exchanges with inner boxes, {ij_fields} with [i, j] inputs, {planes} with 2-D stencils, {exchanged_planar} exchanging an [i, j] array); refused: {refused:?}",
        cases.len()
    );
}

/// Without its exchanges the same kernel reads the poison the harness leaves in the halos, and
/// the harness says so: the exchanges are what makes the other test pass.
#[test]
fn skipping_the_exchanges_fails_verification() {
    let text = std::fs::read_to_string(root().join("configs/hdiff.yaml")).unwrap();
    let program = Program::from_yaml(&text).unwrap();
    let analysis = Analysis::new(&program).unwrap();
    let config = Configuration::new(vec![0, 1, 2, 3], vec![[2, 2, 1]; 4]);
    let d = decompose(
        &program,
        &analysis,
        &config,
        &machine(),
        RankOptions {
            grid: Grid { px: 2, py: 2 },
            overlap: true,
        },
        (&program, &analysis),
    )
    .unwrap();
    assert_eq!(d.classes.len(), 4);
    let dir = tempfile::tempdir().unwrap();
    let (text, ok) = build_and_run(&d, &dir.path().join("on"), &[]);
    assert!(ok && text.contains("\"verified\":true"), "{text}");
    let (text, ok) = build_and_run(
        &d,
        &dir.path().join("off"),
        &[("ABSINTHE_SKIP_EXCHANGES", "1")],
    );
    assert!(!ok && text.contains("\"verified\":false"), "{text}");
    assert!(text.contains("MISMATCH"), "{text}");
}

/// The default machine with a network, as `learn --ranks` writes it, in `dir`.
fn machine_with_network(dir: &Path) -> String {
    let default = std::fs::read_to_string(root().join("machines/default.yaml")).unwrap();
    let machine = dir.join("machine.yaml");
    std::fs::write(
        &machine,
        format!("{default}\nnetwork: {{latency_us: 1.0, bandwidth_gbs: 5.0, run_ns: 5.0}}\n"),
    )
    .unwrap();
    machine.to_str().unwrap().to_string()
}

/// `bench --ranks --variants`: the variants asked for, `opt` the ranked optimum with its
/// overlapped twin, the naive reference left out with a note, every row verified; three ranks,
/// more than a two-core machine has cores.
#[test]
fn bench_over_ranks_times_the_variants_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let machine = machine_with_network(dir.path());
    let o = absinthe(&[
        "bench",
        "configs/hdiff.yaml",
        "--machine",
        &machine,
        "--ranks",
        "3,1",
        "--variants",
        "naive,groups:0,1,2,3,opt",
        "--runs",
        "2",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("naive reference is not decomposed"),
        "{}",
        stderr(&o)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let labels: Vec<&str> = rows
        .iter()
        .map(|r| r["variant"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["groups:0,1,2,3", "opt", "opt+overlap"], "{v}");
    assert_eq!(rows[0]["groups"], serde_json::json!([0, 1, 2, 3]));
    for r in rows {
        assert!(r["measured"]["median"].as_f64().unwrap() > 0.0, "{r}");
    }
}

#[test]
fn bad_grids_and_narrow_sub_domains_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let machine = machine_with_network(dir.path());
    let machine = machine.as_str();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    for (args, says) in [
        (
            vec!["--ranks", "0,1"],
            "ranks along x must be a whole number from 1",
        ),
        (vec!["--ranks", "2"], "expected PX,PY"),
        (
            vec!["--ranks", "2,1", "--target", "cuda"],
            "drop --target cuda",
        ),
        (
            vec!["--ranks", "200,1"],
            "200 ranks along x but the domain has 128 cells",
        ),
        (
            vec!["--ranks", "128,1", "--inline", "lap,fli,flj"],
            "a neighbour would have to send cells it does not own",
        ),
        (
            vec!["--ranks", "128,1", "--no-inline", "--fix-groups", "0,0,0,0"],
            "but the group [lap, fli, flj, out] reads `in` 2 cells beyond its own along x",
        ),
        (
            vec!["--ranks", "2,2", "--machine", "machines/h100.yaml"],
            "describes a GPU",
        ),
    ] {
        let mut all = vec!["codegen", "configs/hdiff.yaml", "-o", out];
        if !args.contains(&"--machine") {
            all.extend(["--machine", machine]);
        }
        all.extend(args.iter().copied());
        let o = absinthe(&all);
        assert!(!o.status.success(), "{args:?} was accepted");
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
    assert!(!Path::new(out).exists(), "a refused run wrote {out}");
    let o = absinthe(&[
        "solve",
        "configs/hdiff.yaml",
        "--machine",
        "machines/h100.yaml",
        "--ranks",
        "2,2",
    ]);
    assert!(
        stderr(&o).contains("--ranks: machine `nvidia-h100-sxm5` describes a GPU"),
        "{}",
        stderr(&o)
    );
    // What solve prices, codegen builds: no group of the ranked optimum reaches further than
    // the 1-cell sub-domains (a fused hdiff reaches 2), and the fully inlined program, whose
    // output alone reaches 2, is refused by solve with the reason.
    let sol = dir.path().join("s.yaml");
    let sol = sol.to_str().unwrap();
    let ranks = ["--machine", machine, "--ranks", "128,128"];
    let o = absinthe(
        &[
            &["solve", "configs/hdiff.yaml", "--no-inline", "-o", sol][..],
            &ranks,
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = absinthe(
        &[
            &[
                "codegen",
                "configs/hdiff.yaml",
                "--solution",
                sol,
                "-o",
                out,
            ][..],
            &ranks,
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = absinthe(&[&["solve", "configs/hdiff.yaml"][..], &ranks].concat());
    assert!(
        stderr(&o).contains("sub-domains of 1 cell(s) along x, but `out` reads `in` 2 cells"),
        "{}",
        stderr(&o)
    );
    for command in ["tune", "cache", "compare"] {
        let o = absinthe(&[command, "configs/hdiff.yaml", "--ranks", "2,1"]);
        assert!(!o.status.success());
        assert!(
            stderr(&o).contains(&format!("{command} does not take --ranks")),
            "{command}: {}",
            stderr(&o)
        );
    }
}

/// A machine file's `network:` is checked like the rest of the file.
#[test]
fn bad_networks_are_refused_by_key() {
    let default = std::fs::read_to_string(root().join("machines/default.yaml")).unwrap();
    for (network, key) in [
        ("{latency_us: -1, bandwidth_gbs: 5}", "network.latency_us"),
        ("{latency_us: 1, bandwidth_gbs: 0}", "network.bandwidth_gbs"),
        (
            "{latency_us: 1, bandwidth_gbs: 5, run_ns: .nan}",
            "network.run_ns",
        ),
        ("{latency_us: 1, bandwidth_gbs: 5, hops: 3}", "hops"),
    ] {
        let text = format!("{default}\nnetwork: {network}\n");
        let errors = Machine::from_yaml(&text).unwrap_err();
        assert!(
            errors.iter().any(|d| format!("{d:?}").contains(key)),
            "{network}: {errors:?}"
        );
    }
}
