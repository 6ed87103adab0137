//! The `absinthe` binary on good and bad files.

use crate::common::{absinthe, stderr, stdout, temp_file};

const SHIPPED: [&str; 4] = ["example2", "hdiff", "heat4", "j3d7pt"];

#[test]
fn check_accepts_every_shipped_program() {
    let dir = crate::common::root().join("configs");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let p = path.to_string_lossy().into_owned();
        let o = absinthe(&["check", &p]);
        assert!(o.status.success(), "{p}: {}", stderr(&o));
        let o = absinthe(&["check", &p, "--format", "json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        assert!(v["stencils"].as_array().is_some_and(|s| !s.is_empty()));
    }
}

#[test]
fn check_json_reports_hdiff_by_hand() {
    let o = absinthe(&["check", "configs/hdiff.yaml", "--format", "json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let lap = &v["stencils"][0];
    assert_eq!(lap["name"], "lap");
    assert_eq!(lap["fetch_weight"], 6);
    assert_eq!(lap["extent"], serde_json::json!([[1, 1], [1, 1], [0, 0]]));
    assert_eq!(lap["reads"][0]["array"], "in");
    assert_eq!(
        lap["reads"][0]["box"],
        serde_json::json!([[-1, 1], [-1, 1], [0, 0]])
    );
    assert_eq!(v["inputs"], serde_json::json!(["in", "wgt"]));
    assert_eq!(v["outputs"], serde_json::json!(["out"]));
}

#[test]
fn check_table_lists_stencils() {
    let o = absinthe(&["check", "configs/hdiff.yaml"]);
    let out = stdout(&o);
    for s in ["lap", "fli", "flj", "out (out)", "[-1..1, -1..1, 0]"] {
        assert!(out.contains(s), "missing {s:?} in\n{out}");
    }
}

#[test]
fn bad_files_get_file_key_and_caret() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "stencils:\n  - name: a\n    expr: x(i,j,k) + sin(x(i,j,k))\n",
            vec![
                "stencils[0].expr",
                "unknown function `sin`",
                "    |            ^^^",
            ],
        ),
        (
            "stencils:\n  - name: a\n    expr: x(i-3,j,k)\n",
            vec![
                "stencils[0].expr",
                "on the i- side",
                "must be at least 3",
                "^",
            ],
        ),
        (
            "stencils:\n  - name: a\n    expr: b(i,j,k)\n  - name: b\n    expr: x(i,j,k)\n",
            vec!["stencils[0].expr", "defined later"],
        ),
        (
            "stencils:\n  - name: a\n    expr: x(i,j,k)\n    colour: red\n",
            vec!["bad3.yaml:8:5: stencils[0].colour: unknown field `colour`"],
        ),
        (
            "fields:\n  dz: [k]\nstencils:\n  - name: a\n    expr: x(i,j,k) * dz(i+1, j, k)\n",
            vec![
                "stencils[0].expr",
                "`dz` is a field over [k]",
                "    |            ^^^^^^^^^^^^^\n",
            ],
        ),
    ];
    for (n, (stencils, expected)) in cases.iter().enumerate() {
        let text = format!("name: t\ndomain: [8, 8, 8]\nhalo: [1, 1, 1]\noutputs: [a]\n{stencils}");
        let path = temp_file(dir.path(), &format!("bad{n}.yaml"), &text);
        let o = absinthe(&["check", path.to_str().unwrap()]);
        assert!(!o.status.success());
        let err = stderr(&o);
        assert!(err.contains(&format!("bad{n}.yaml")), "{err}");
        for e in expected {
            assert!(err.contains(e), "expected {e:?} in\n{err}");
        }
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn missing_file_is_a_clear_error() {
    let o = absinthe(&["check", "configs/nope.yaml"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("configs/nope.yaml: cannot read the file"),
        "{}",
        stderr(&o)
    );
}

/// `--flush evict` reads no buffer, so a buffer size with it is refused, for every command
/// that times (before anything is built).
#[test]
fn flush_bytes_with_evict_is_refused() {
    for cmd in ["bench", "tune"] {
        let o = absinthe(&[
            cmd,
            "configs/example2.yaml",
            "--flush",
            "evict",
            "--flush-bytes",
            "1000",
        ]);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("--flush-bytes sizes the buffer of `--flush read`"),
            "{cmd}: {}",
            stderr(&o)
        );
    }
    let o = absinthe(&["bench", "configs/example2.yaml", "--flush", "sometimes"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("possible values: evict, read"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn solve_every_shipped_program_with_both_backends() {
    for p in SHIPPED {
        for solver in ["cbc", "highs"] {
            let path = format!("configs/{p}.yaml");
            let o = absinthe(&["solve", &path, "--solver", solver, "--format", "json"]);
            assert!(o.status.success(), "{p} {solver}: {}", stderr(&o));
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
            assert_eq!(v["program"], p);
            assert_eq!(v["solver"]["name"], solver);
            assert_eq!(v["solver"]["status"], "optimal");
            let est = v["estimate_seconds"].as_f64().unwrap();
            let obj = v["solver"]["objective_seconds"].as_f64().unwrap();
            assert!(
                (est - obj).abs() <= 1e-6 * est,
                "{p} {solver}: {est} vs {obj}"
            );
            let groups = v["groups"].as_array().unwrap();
            let named: usize = groups
                .iter()
                .map(|g| g["stencils"].as_array().unwrap().len())
                .sum();
            assert_eq!(named, v["stencils"].as_object().unwrap().len());
            assert!(v["milp"]["variables"].as_u64().unwrap() > 0);
        }
    }
}

#[test]
fn solve_writes_a_solution_file_and_emits_lp_and_mps() {
    let dir = tempfile::tempdir().unwrap();
    let sol = dir.path().join("s.yaml");
    let lp = dir.path().join("m.lp");
    let mps = dir.path().join("m.mps");
    let o = absinthe(&[
        "solve",
        "configs/example2.yaml",
        "-o",
        sol.to_str().unwrap(),
        "--emit",
        "lp",
        lp.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&sol).unwrap();
    let s: absinthe_model::output::solution::Solution =
        absinthe_model::formats::yaml::from_str(&text).unwrap();
    assert_eq!(s.program, "example2");
    assert!(std::fs::read_to_string(&lp).unwrap().contains("Subject To"));
    let o = absinthe(&[
        "solve",
        "configs/example2.yaml",
        "--emit",
        "mps",
        mps.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    assert!(std::fs::read_to_string(&mps).unwrap().contains("ENDATA"));
    // Table output names the groups and the dominant memory.
    let out = stdout(&o);
    assert!(
        out.contains("group") && out.contains("dominant memory"),
        "{out}"
    );
}

#[test]
fn fixed_groups_are_respected() {
    let o = absinthe(&[
        "solve",
        "configs/hdiff.yaml",
        "--fix-groups",
        "0,1,1,2",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let groups: Vec<Vec<String>> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            g["stencils"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect()
        })
        .collect();
    assert_eq!(groups, vec![vec!["lap"], vec!["fli", "flj"], vec!["out"]]);
    let bad = absinthe(&["solve", "configs/hdiff.yaml", "--fix-groups", "0,2,2,2"]);
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("--fix-groups"), "{}", stderr(&bad));
}

/// `absinthe solve configs/hdiff.yaml --machine m`.
fn solve_hdiff_on(m: &std::path::Path) -> std::process::Output {
    absinthe(&[
        "solve",
        "configs/hdiff.yaml",
        "--machine",
        m.to_str().unwrap(),
    ])
}

#[test]
fn infeasible_machine_names_the_binding_constraint() {
    let dir = tempfile::tempdir().unwrap();
    let m = temp_file(
        dir.path(),
        "tiny.yaml",
        "name: tiny\ncores: 2\ncache_bytes: 8\ncache_fraction: 1.0\nparams:\n  fast: {peel: 1.0e-10, body: 1.0e-11}\n  slow_base: {peel: 0.0, body: 0.0}\n  slow_stream: {peel: 1.0e-9, body: 1.0e-10}\n",
    );
    let o = solve_hdiff_on(&m);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("cache:") && err.contains("cache capacity of 1 values"),
        "{err}"
    );
}

#[test]
fn machine_errors_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let m = temp_file(
        dir.path(),
        "neg.yaml",
        "name: neg\ncores: 2\ncache_bytes: 65536\nparams:\n  fast: {peel: -1.0e-10, body: 1.0e-11}\n  slow_base: {peel: 0.0, body: 0.0}\n  slow_stream: {peel: 1.0e-9, body: 1.0e-10}\n",
    );
    let o = solve_hdiff_on(&m);
    assert!(!o.status.success());
    assert!(
        stderr(&o)
            .contains("neg.yaml:5:10: params.fast.peel: parameters must be non-negative seconds"),
        "{}",
        stderr(&o)
    );
    // A crowding charge needs its limit; a negative charge is refused like any parameter.
    for (name, crowded, expected) in [
        (
            "nolimit.yaml",
            "{stream_body: 1.0e-10}",
            "nolimit.yaml:8:3: params.crowded.row_streams: row_streams must be at least 1",
        ),
        (
            "negcrowd.yaml",
            "{row_streams: 128, stream_body: -1.0e-10}",
            "negcrowd.yaml:8:31: params.crowded.stream_body: parameters must be non-negative",
        ),
    ] {
        let m = temp_file(
            dir.path(),
            name,
            &format!("name: c\ncores: 2\ncache_bytes: 65536\nparams:\n  fast: {{peel: 1.0e-10, body: 1.0e-11}}\n  slow_base: {{peel: 0.0, body: 0.0}}\n  slow_stream: {{peel: 1.0e-9, body: 1.0e-10}}\n  crowded: {crowded}\n"),
        );
        let o = solve_hdiff_on(&m);
        assert!(!o.status.success());
        assert!(stderr(&o).contains(expected), "{}", stderr(&o));
    }
    let m = temp_file(
        dir.path(),
        "noparams.yaml",
        "name: bare\ncores: 2\ncache_bytes: 65536\n",
    );
    let o = solve_hdiff_on(&m);
    assert!(
        stderr(&o).contains("params: missing: run `absinthe learn"),
        "{}",
        stderr(&o)
    );
}

/// `--cache-fraction` overrides the machine file's: a machine whose third of the cache holds
/// no tile becomes feasible with all of it, and a value out of range is a clear error.
#[test]
fn cache_fraction_flag_overrides_the_machine_file() {
    let dir = tempfile::tempdir().unwrap();
    let m = temp_file(
        dir.path(),
        "small.yaml",
        "name: small\ncores: 2\ncache_bytes: 24\ncache_fraction: 0.3333\nparams:\n  fast: {peel: 1.0e-10, body: 1.0e-11}\n  slow_base: {peel: 0.0, body: 0.0}\n  slow_stream: {peel: 1.0e-9, body: 1.0e-10}\n",
    );
    let solve = |extra: &[&str]| {
        let mut args = vec![
            "solve",
            "configs/example2.yaml",
            "--machine",
            m.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        absinthe(&args)
    };
    // 24 bytes x 1/3 is one double: no tile of example2 fits; 24 bytes are three.
    let o = solve(&[]);
    assert!(!o.status.success(), "{}", stdout(&o));
    assert!(stderr(&o).contains("cache"), "{}", stderr(&o));
    let o = solve(&["--cache-fraction", "1.0", "--format", "json"]);
    let out = stdout(&o);
    let err = stderr(&o);
    // With three values per tile the 2-stencil program may still not fit; what matters is that
    // the override reached the model: the error (if any) names a capacity of 3 values.
    assert!(
        o.status.success() || err.contains("cache capacity of 3 values"),
        "{out}\n{err}"
    );
    let o = solve(&["--cache-fraction", "1.5"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("--cache-fraction must be in (0, 1], found 1.5"),
        "{}",
        stderr(&o)
    );
}

/// `--scalar NAME=VALUE` reaches the harness as an exact literal, the kernel takes the scalars
/// as arguments, and the harness verifies with them; bad values and names are refused.
#[test]
fn scalars_from_the_command_line_reach_the_harness() {
    let dir = tempfile::tempdir().unwrap();
    let text =
        std::fs::read_to_string(crate::common::root().join("configs/cosmo_smag_params.yaml"))
            .unwrap()
            .replace("domain: [64, 64, 60]", "domain: [20, 12, 3]");
    let program = temp_file(dir.path(), "smag.yaml", &text);
    let p = program.to_str().unwrap();
    let out = dir.path().join("out");
    let o = absinthe(&[
        "codegen",
        p,
        "--harness",
        "-o",
        out.to_str().unwrap(),
        "--scalar",
        "dt=20",
        "--scalar",
        "rdx=4.5454545e-4",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let header = std::fs::read_to_string(out.join("cosmo_smag_params.h")).unwrap();
    assert!(
        header.contains("    , const double sc_dt // scalar `dt`"),
        "{header}"
    );
    let harness = std::fs::read_to_string(out.join("cosmo_smag_params_harness.cpp")).unwrap();
    assert!(harness.contains("    double sc_dt = (double)0x1.4000000000000p+4;"));
    assert!(harness.contains(&format!(
        "    double sc_rdx = (double){};",
        absinthe_codegen::cexpr::hex_double(4.5454545e-4)
    )));
    // rdy and cs_dx2 were not given: their defaults.
    assert!(harness.contains(&format!(
        "    double sc_rdy = (double){};",
        absinthe_codegen::cexpr::hex_double(absinthe_model::language::interp::scalar_default(2))
    )));
    let exe = out.join("harness");
    let build = std::process::Command::new("g++")
        .args(["-O1", "-fopenmp", "-ffp-contract=off", "-o"])
        .arg(&exe)
        .arg(out.join("cosmo_smag_params.cpp"))
        .arg(out.join("cosmo_smag_params_harness.cpp"))
        .output()
        .unwrap();
    assert!(
        build.status.success(),
        "{}",
        String::from_utf8_lossy(&build.stderr)
    );
    let run = std::process::Command::new(&exe).arg("2").output().unwrap();
    let line = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success() && line.contains("\"verified\":true"),
        "{line}"
    );
    for (args, message) in [
        (
            vec!["--scalar", "dx=1"],
            "has no scalar `dx`; its scalars are dt, rdx, rdy, cs_dx2",
        ),
        (
            vec!["--scalar", "dt=1", "--scalar", "dt=2"],
            "--scalar dt: given twice",
        ),
        (
            vec!["--scalar", "dt=inf"],
            "the value of `dt` must be finite",
        ),
        (vec!["--scalar", "dt"], "`dt` is not NAME=VALUE"),
        (vec!["--scalar", "dt=fast"], "`fast` is not a number"),
    ] {
        let mut all = vec!["codegen", p, "--harness", "-o", out.to_str().unwrap()];
        all.extend(args);
        let o = absinthe(&all);
        assert!(!o.status.success());
        assert!(stderr(&o).contains(message), "{}", stderr(&o));
    }
    let o = absinthe(&[
        "codegen",
        p,
        "-o",
        out.to_str().unwrap(),
        "--scalar",
        "dt=1",
    ]);
    assert!(stderr(&o).contains("--scalar sets a value in the harness: add --harness"));
}

/// The generated header documents every field's layout and marks its parameter, and its
/// `#pragma once` is a directive of its own line.
#[test]
fn headers_document_fields_and_stay_headers() {
    let dir = tempfile::tempdir().unwrap();
    for (program, expected) in [
        (
            "hdiff",
            &["// are scratch.\n#pragma once\n", "// input\n"][..],
        ),
        (
            "cosmo_colpres",
            &[
                "//   dz (k): double[60][1][1], element (k) at index (k + 0).\n",
                "//   ps (ij): double[1][66][66], element (i, j) at index (i + 1) + (j + 1) * 66.\n",
                "// in the program's order.\n#pragma once\n",
                "__restrict a_dz, // input (field over k)\n",
                "__restrict a_psx, // output (field over ij)\n",
            ][..],
        ),
    ] {
        let out = dir.path().join(program);
        let path = format!("configs/{program}.yaml");
        let o = absinthe(&["codegen", &path, "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let header = std::fs::read_to_string(out.join(format!("{program}.h"))).unwrap();
        for e in expected {
            assert!(header.contains(e), "{program}: {e:?} not in\n{header}");
        }
    }
}

/// Flags a command would silently ignore are refused: search flags beside a solution file, a
/// rank grid or inline set for `verify`, YAML where a command prints only tables and JSON.
#[test]
fn flags_a_command_would_ignore_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sol = dir.path().join("s.yaml");
    let s = sol.to_str().unwrap();
    let o = absinthe(&["solve", "configs/hdiff.yaml", "--solver", "dp", "-o", s]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.path().join("cg");
    let out = out.to_str().unwrap();
    let refused: [(&[&str], &str); 6] = [
        (
            &[
                "codegen",
                "configs/hdiff.yaml",
                "--solution",
                s,
                "--no-inline",
                "--tiles-max",
                "4,4,4",
                "-o",
                out,
            ],
            "--no-inline, --tiles-max choose the configuration",
        ),
        (
            &[
                "codegen",
                "configs/hdiff.yaml",
                "--solution",
                s,
                "--inline",
                "lap",
                "-o",
                out,
            ],
            "--inline chooses the configuration",
        ),
        (
            &[
                "verify",
                "configs/hdiff.yaml",
                "--solution",
                s,
                "--ranks",
                "2,1",
            ],
            "verify does not take --ranks",
        ),
        (
            &[
                "verify",
                "configs/hdiff.yaml",
                "--solution",
                s,
                "--no-inline",
            ],
            "verify certifies within the solution's own",
        ),
        (
            &[
                "verify",
                "configs/hdiff.yaml",
                "--solution",
                s,
                "--format",
                "yaml",
            ],
            "invalid value 'yaml' for '--format",
        ),
        (
            &["compare", "configs/hdiff.yaml", "--format", "yaml"],
            "invalid value 'yaml' for '--format",
        ),
    ];
    for (args, needle) in refused {
        if args[0] == "verify" && !cfg!(feature = "z3") {
            continue;
        }
        let o = absinthe(args);
        let err = stderr(&o);
        assert!(matches!(o.status.code(), Some(1 | 2)), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    assert!(!std::path::Path::new(out).exists());
}

/// Every command's `--help` teaches by example, and its example commands stay whole where clap
/// wraps help text (at 100 columns when standard output is not a terminal): a longer command
/// is continued with a backslash on its next line. Rendered unwrapped (`COLUMNS`), every line
/// that starts a command fits in 100 columns.
#[test]
fn every_help_has_examples_that_are_not_wrapped() {
    let commands = [
        "", "check", "solve", "verify", "compare", "codegen", "bench", "tune", "learn", "cache",
    ];
    for command in commands {
        let args: Vec<&str> = [command, "--help"]
            .into_iter()
            .filter(|a| !a.is_empty())
            .collect();
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_absinthe"))
            .args(&args)
            .env("COLUMNS", "1000")
            .output()
            .unwrap();
        let help = stdout(&o);
        assert!(
            help.contains("Examples:") || help.contains("Typical session:"),
            "`absinthe {command} --help` has no examples:\n{help}"
        );
        for line in help.lines() {
            let text = line.trim_start();
            if ["absinthe ", "g++ ", "nvcc ", "mpirun "]
                .iter()
                .any(|c| text.starts_with(c))
            {
                assert!(
                    line.len() <= 100,
                    "`absinthe {command} --help` wraps: {line}"
                );
            }
        }
    }
}
