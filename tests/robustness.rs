//! What a command does when its surroundings fail or are hostile: standard output that cannot
//! be written, a signal while a compiler runs, the generated harness given bad arguments or a
//! bad scalars file, timing files as outputs, and values on the edge of their ranges.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{absinthe, machine_with_compiler, root, stderr, stdout, temp_file};
use crate::hostile::assert_clean_error;

fn absinthe_in(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_absinthe"));
    c.args(args).current_dir(root());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run absinthe")
}

/// A result that cannot be written (a full disk) is an error naming standard output, not a
/// panic; `--help` too.
#[test]
fn a_full_standard_output_is_an_error() {
    for args in [
        &["check", "configs/hdiff.yaml"][..],
        &[
            "solve",
            "configs/hdiff.yaml",
            "--solver",
            "dp",
            "--format",
            "json",
        ],
        &["--help"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_absinthe"))
            .args(args)
            .current_dir(root())
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        assert_clean_error(&o, &["cannot write to standard output"]);
    }
}

/// Every flag is checked before anything is written: `solve --emit` with a bad `--gap` leaves
/// the file there as it was, and `codegen --solution` refuses what `solve` refuses.
#[test]
fn bad_flags_are_refused_before_any_output() {
    let dir = tempfile::tempdir().unwrap();
    let lp = temp_file(dir.path(), "p.lp", "precious\n");
    let o = absinthe(&[
        "solve",
        "configs/hdiff.yaml",
        "--gap",
        "nan",
        "--emit",
        "lp",
        lp.to_str().unwrap(),
    ]);
    assert_clean_error(&o, &["--gap"]);
    assert_eq!(std::fs::read_to_string(&lp).unwrap(), "precious\n");
    let sol = dir.path().join("s.yaml");
    let o = absinthe(&[
        "solve",
        "configs/hdiff.yaml",
        "--solver",
        "dp",
        "-o",
        sol.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.path().join("gen");
    for flag in [["--time-limit", "0"], ["--gap", "nan"]] {
        let mut args = vec![
            "codegen",
            "configs/hdiff.yaml",
            "--solution",
            sol.to_str().unwrap(),
        ];
        args.extend(flag);
        args.extend(["-o", out.to_str().unwrap()]);
        assert_clean_error(&absinthe(&args), &[flag[0]]);
    }
    assert!(!out.exists());
    // The same variant or solver twice, and a scalar smaller than any double.
    let o = absinthe(&["bench", "configs/hdiff.yaml", "--variants", "opt,naive,opt"]);
    assert_clean_error(&o, &["names the variant `opt` twice"]);
    let o = absinthe(&["compare", "configs/hdiff.yaml", "--solvers", "dp,dp"]);
    assert_clean_error(&o, &["--solvers names dp twice"]);
    let scaled = temp_file(
        dir.path(),
        "scaled.yaml",
        "name: scaled\ndomain: [8, 8, 2]\nhalo: [1, 1, 0]\noutputs: [o]\nscalars: [dt]\nstencils:\n  - name: o\n    expr: u(i-1,j,k) * dt\n",
    );
    let o = absinthe(&[
        "codegen",
        scaled.to_str().unwrap(),
        "--harness",
        "--scalar",
        "dt=1e-400",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_clean_error(&o, &["1e-400", "rounds to zero"]);
}

/// `learn --timings DIR` never writes over the timings it reads (measurements made on another
/// machine), and a timings file out of range is refused naming the case or line.
#[test]
fn gpu_timings_are_inputs_and_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let timings = dir.path().join("t");
    std::fs::create_dir(&timings).unwrap();
    let data = root().join("tests/data/h100-learn");
    let manifest = std::fs::read_to_string(data.join("manifest.json")).unwrap();
    let output = std::fs::read_to_string(data.join("output.txt")).unwrap();
    let write = |m: &str, o: &str| {
        std::fs::write(timings.join("manifest.json"), m).unwrap();
        std::fs::write(timings.join("output.txt"), o).unwrap();
    };
    write(&manifest, &output);
    let learn = |out: &Path| {
        absinthe(&[
            "learn",
            "--machine",
            "machines/h100.yaml",
            "--target",
            "cuda",
            "--quiet",
            "--timings",
            timings.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
    };
    for name in ["output.txt", "manifest.json"] {
        let o = learn(&timings.join(name));
        assert_clean_error(&o, &[&format!("{name} is an input of this command")]);
    }
    assert_eq!(
        std::fs::read_to_string(timings.join("output.txt")).unwrap(),
        output
    );
    assert_eq!(
        std::fs::read_to_string(timings.join("manifest.json")).unwrap(),
        manifest
    );

    let out = dir.path().join("gpu.yaml");
    let timing = output
        .lines()
        .find(|l| l.contains("ABSINTHE_CUDA_TIMING"))
        .unwrap();
    let median = |line: &str, to: &str| {
        let (head, tail) = line.split_once("\"median\":").unwrap();
        let rest = &tail[tail.find(',').unwrap()..];
        format!("{head}\"median\":{to}{rest}")
    };
    let huge = output.replacen(timing, &median(timing, "1e308"), 1);
    assert_ne!(huge, output, "the median was replaced");
    write(&manifest, &huge);
    assert_clean_error(&learn(&out), &["outside [1e-9 s, 1000 s]"]);
    write(&manifest, &format!("{output}{timing}\n"));
    assert_clean_error(
        &learn(&out),
        &["a second timing of", "the first is on line"],
    );
    for (from, to, why) in [
        ("\"runs\": 32", "\"runs\": 0", "runs: expected 1 to"),
        (
            "\"family\": \"fast\"",
            "\"family\": \"bogus\"",
            "family `bogus`",
        ),
        (
            "\"domain\": [\n    256",
            "\"domain\": [\n    0",
            "domain [0, 256, 64]",
        ),
    ] {
        let bad = manifest.replacen(from, to, 1);
        assert_ne!(bad, manifest, "{from}");
        write(&bad, &output);
        let o = learn(&out);
        assert_clean_error(&o, &["manifest.json", why]);
        assert!(!stderr(&o).contains("Diagnostic {"), "{}", stderr(&o));
    }
    assert!(!out.exists());
}

/// A program with a scalar, its harness built once.
fn scalar_harness(dir: &Path) -> PathBuf {
    let p = temp_file(
        dir,
        "scf.yaml",
        "name: scf\ntype: float\ndomain: [16, 16, 4]\nhalo: [1, 1, 0]\noutputs: [o]\nscalars: [dt, rdx]\nstencils:\n  - name: o\n    expr: u(i-1,j,k) * dt + u(i+1,j,k) * rdx\n",
    );
    let gen = dir.join("gen");
    let o = absinthe(&[
        "codegen",
        p.to_str().unwrap(),
        "--solver",
        "dp",
        "--harness",
        "-o",
        gen.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let exe = dir.join("h");
    let sources: Vec<PathBuf> = ["scf.cpp", "scf_harness.cpp"]
        .iter()
        .map(|f| gen.join(f))
        .collect();
    let built = Command::new("g++")
        .args(["-O1", "-fopenmp", "-ffp-contract=off", "-o"])
        .arg(&exe)
        .args(&sources)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    exe
}

/// The generated harness refuses arguments it would misread (a typo of `evict` timed warm
/// caches; `abc` timed nothing and reported success), and a scalars file that is not a flat
/// JSON object of numbers the program's type holds.
#[test]
fn the_harness_refuses_what_it_would_misread() {
    let dir = tempfile::tempdir().unwrap();
    let exe = scalar_harness(dir.path());
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = Command::new(&exe);
        c.args(args).env("OMP_NUM_THREADS", "1");
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let ok = run(&["2", "evict", "kernel", "verify"], &[]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    for (args, why) in [
        (&["abc"][..], "runs must be a whole number"),
        (&["-1"], "runs must be a whole number"),
        (&["1e9"], "runs must be a whole number"),
        (&["99999999999999999999"], "runs must be a whole number"),
        (&["3", "evicT"], "the flush"),
        (&["3", "-5"], "the flush"),
        (&["3", "0", "kernal"], "`kernel` or `reference`"),
        (&["3", "0", "kernel", "verifed"], "`verify` or `verified`"),
        (
            &["3", "0", "kernel", "verify", "extra"],
            "at most four arguments",
        ),
    ] {
        let o = run(args, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
    }
    let inputs = dir.path().join("in");
    std::fs::create_dir(&inputs).unwrap();
    let values: Vec<u8> = (0..18 * 18 * 4)
        .flat_map(|_| 1.0f32.to_le_bytes())
        .collect();
    std::fs::write(inputs.join("u.bin"), values).unwrap();
    let load = [("ABSINTHE_LOAD_INPUTS", inputs.to_str().unwrap())];
    for (json, why) in [
        (r#"{"dt": 1e39, "rdx": 1}"#, "`dt` is too large"),
        (r#"{"dt": 1e-50, "rdx": 1}"#, "`dt` is too small"),
        (r#"{"dt": 1e-400, "rdx": 1}"#, "`dt` is too small"),
        (
            r#"{"x": {"dt": 2}, "rdx": 1, "dt": 3}"#,
            "expected a number for \"x\"",
        ),
        (r#"{"dt": 2abc, "rdx": 1"#, "expected `,` or `}`"),
        (r#"{"dt": 2, "rdx": 1, "dt": 3}"#, "\"dt\" given twice"),
        (r#"{"dt": 2, "rdx": 1, "dx": 3}"#, "`dx` is not a scalar"),
        (r#"{"dt": 2}"#, "no number for the scalar `rdx`"),
        (r#"{"dt": 2, "rdx": 1} x"#, "text after the object"),
    ] {
        std::fs::write(inputs.join("scalars.json"), json).unwrap();
        let o = run(&["1"], &load);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{json}: {err}");
        assert!(err.contains(why), "{json}: {err}");
    }
    std::fs::write(
        inputs.join("scalars.json"),
        "{ \"dt\" : 2.5e-1 ,\n \"rdx\": -3 }\n",
    )
    .unwrap();
    let o = run(&["1"], &load);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The process id a stand-in compiler wrote to `pidfile` once it started (at most a minute on).
fn wait_for_pid(pidfile: &Path) -> String {
    let started = Instant::now();
    loop {
        let pid = std::fs::read_to_string(pidfile).unwrap_or_default();
        if !pid.trim().is_empty() {
            return pid.trim().to_string();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the compiler never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A signal while `cache --trace FILE` builds its trace removes the temporary the trace was to
/// be written to, and leaves FILE as it was.
#[test]
fn a_signal_during_a_trace_leaves_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("compiler.pid");
    let script = format!(
        "#!/bin/sh\necho $$ > {}\nexec sleep 60\n",
        pidfile.display()
    );
    let machine = machine_with_compiler(dir.path(), "slow", &script);
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let trace = temp_file(&out, "hdiff.trace", "ORIGINAL\n");
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let _ = std::fs::remove_file(&pidfile);
        let mut child = Command::new(env!("CARGO_BIN_EXE_absinthe"))
            .args(["cache", "configs/hdiff.yaml", "--machine"])
            .arg(&machine)
            .arg("--trace")
            .arg(&trace)
            .current_dir(root())
            .env("ABSINTHE_CACHE_DIR", dir.path().join("build"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for_pid(&pidfile);
        // SAFETY: sends a signal to the child this test started.
        unsafe {
            libc::kill(child.id() as i32, signal);
        }
        let status = child.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(signal)
        );
        let left: Vec<PathBuf> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(left, vec![trace.clone()], "signal {signal}");
        assert_eq!(std::fs::read_to_string(&trace).unwrap(), "ORIGINAL\n");
    }
}

/// `kill PID` (SIGTERM, what a job scheduler sends) to absinthe while it compiles ends the
/// compiler too, and a build interrupted so leaves temporaries the next build removes; an
/// empty `ABSINTHE_CACHE_DIR` is unset.
#[test]
fn a_signal_ends_the_compilers_and_their_temporaries_go() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("compiler.pid");
    let fast = dir.path().join("fast");
    let script = format!(
        "#!/bin/sh\nif [ -e {} ]; then exec g++ \"$@\"; fi\necho $$ > {}\nexec sleep 60\n",
        fast.display(),
        pidfile.display()
    );
    let machine = machine_with_compiler(dir.path(), "slow", &script);
    let home = dir.path().join("home");
    let mut child = Command::new(env!("CARGO_BIN_EXE_absinthe"))
        .args([
            "bench",
            "configs/hdiff.yaml",
            "--machine",
            machine.to_str().unwrap(),
        ])
        .args(["--variants", "opt", "--runs", "1", "--no-roofline"])
        .current_dir(root())
        .env("HOME", &home)
        .env("ABSINTHE_CACHE_DIR", "")
        .env("XDG_CACHE_HOME", "")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = wait_for_pid(&pidfile);
    // SAFETY: sends SIGTERM to the child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let status = child.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGTERM)
    );
    let gone = Instant::now();
    while Path::new("/proc").join(&pid).exists() {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if state.contains(") Z ") {
            break; // ended, not yet reaped
        }
        assert!(
            gone.elapsed() < Duration::from_secs(10),
            "the compiler outlived absinthe"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The empty variables counted as unset: the build directory is under $HOME.
    let cache = home.join(".cache/absinthe/build");
    let keys: Vec<PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(keys.len(), 1, "{keys:?}");
    // A temporary of an ended process is removed by the next build in its directory (the
    // same sources and compiler, which now compiles).
    let stale = keys[0].join("a.out.tmp999999999.0");
    let recent = keys[0].join("a.out.tmp999999998.0");
    let hours_ago = std::time::SystemTime::now() - Duration::from_secs(2 * 3600);
    std::fs::File::create(&stale)
        .unwrap()
        .set_modified(hours_ago)
        .unwrap();
    std::fs::write(&recent, "x").unwrap();
    std::fs::write(&fast, "").unwrap();
    let o = absinthe_in(
        &[
            "bench",
            "configs/hdiff.yaml",
            "--machine",
            machine.to_str().unwrap(),
            "--variants",
            "opt",
            "--runs",
            "1",
            "--no-roofline",
        ],
        &[
            ("HOME", home.to_str().unwrap()),
            ("ABSINTHE_CACHE_DIR", ""),
            ("XDG_CACHE_HOME", ""),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stale.exists(), "{}", stdout(&o));
    // One written lately may be a build of another host sharing the directory: kept.
    assert!(recent.exists());
}

/// More ranks than the node has cores is said, and a stencil named as YAML 1.1 reads a boolean
/// is quoted in the solution file (PyYAML, which the bench scripts use, would read `True`).
#[test]
fn oversubscribed_ranks_and_boolean_names_are_said_and_quoted() {
    let dir = tempfile::tempdir().unwrap();
    let default = std::fs::read_to_string(root().join("machines/default.yaml")).unwrap();
    let machine = temp_file(
        dir.path(),
        "m.yaml",
        &format!("{default}\nnetwork: {{latency_us: 1.0, bandwidth_gbs: 5.0}}\n"),
    );
    let m = machine.to_str().unwrap();
    let ranked = |grid| {
        absinthe(&[
            "solve",
            "configs/hdiff.yaml",
            "--machine",
            m,
            "--ranks",
            grid,
        ])
    };
    let o = ranked("2,2");
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("4 ranks on one node of 2 cores oversubscribe it"),
        "{err}"
    );
    assert!(!stderr(&ranked("2,1")).contains("oversubscribe"));

    let hdiff = std::fs::read_to_string(root().join("configs/hdiff.yaml")).unwrap();
    let renamed = hdiff.replace("lap", "on");
    let p = temp_file(dir.path(), "on.yaml", &renamed);
    let sol = dir.path().join("s.yaml");
    let args = [
        "solve",
        p.to_str().unwrap(),
        "--no-inline",
        "--solver",
        "dp",
        "-o",
        sol.to_str().unwrap(),
    ];
    let o = absinthe(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&sol).unwrap();
    assert!(
        text.contains("'on'") && !text.lines().any(|l| l.trim_start().starts_with("on:")),
        "{text}"
    );
    // The file reads back.
    let out = dir.path().join("gen");
    let o = absinthe(&[
        "codegen",
        p.to_str().unwrap(),
        "--solution",
        sol.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}
