//! Hostile and odd inputs: each gets a clear error naming the file and key, or a correct
//! result; none panics, runs away with memory, or exits 0 with a wrong result.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output};

use crate::common::{absinthe, machine_with_compiler, root, stderr, stdout, temp_file};

fn hdiff() -> String {
    std::fs::read_to_string(root().join("configs/hdiff.yaml")).unwrap()
}

/// hdiff with its `domain:` or `halo:` line replaced.
fn hdiff_with(key: &str, value: &str) -> String {
    hdiff()
        .lines()
        .map(|l| {
            if l.starts_with(&format!("{key}:")) {
                format!("{key}: {value}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// An exit that is an error the tool chose (1 or clap's 2), not a panic (101) or a signal.
pub(crate) fn assert_clean_error(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert!(
        matches!(o.status.code(), Some(1) | Some(2)),
        "status {:?}: {err}",
        o.status
    );
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "missing `{n}` in: {err}");
    }
}

fn absinthe_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_absinthe"));
    c.args(args).current_dir(root());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run absinthe")
}

const GPU_MACHINE: &str = "name: wraps
cores: 2
cache_bytes: 1000000
params:
  fast: {peel: 1e-10, body: 1e-11}
  slow_base: {peel: 1e-10, body: 1e-11}
  slow_stream: {peel: 1e-10, body: 1e-11}
gpu: {sm_count: 4294967296, blocks_per_sm: 4294967296, shared_bytes_per_block: 1000, registers_per_thread: 255, max_threads_per_block: 1024}
";

/// Device limits whose product wrapped to 0 and divided by it, and a block narrower than a warp.
#[test]
fn gpu_limits_out_of_range_are_errors_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let m = temp_file(dir.path(), "gpu.yaml", GPU_MACHINE);
    let m = m.to_str().unwrap();
    for target in ["openmp", "cuda"] {
        let out = dir.path().join(target);
        let o = absinthe(&[
            "codegen",
            "configs/hdiff.yaml",
            "--machine",
            m,
            "--target",
            target,
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_clean_error(&o, &["gpu.yaml", "gpu.sm_count", "gpu.blocks_per_sm"]);
    }
    let o = absinthe(&["solve", "configs/hdiff.yaml", "--machine", m]);
    assert_clean_error(&o, &["gpu.sm_count must be between 1 and 4096"]);
    // Fewer threads per block than a warp: the kernels' blocks are whole warps along x, so the
    // limit could not be honoured; it is refused rather than rounded up. Shared memory smaller
    // than one value: no tile fits, as in a CPU cache that small.
    for (name, from, to, said) in [
        (
            "narrow.yaml",
            "max_threads_per_block: 1024",
            "max_threads_per_block: 1",
            &["gpu.max_threads_per_block must be between 32 and 4096, found 1"][..],
        ),
        (
            "tiny.yaml",
            "shared_bytes_per_block: 1000",
            "shared_bytes_per_block: 1",
            &[
                "gpu.shared_bytes_per_block: shared_bytes_per_block x cache_fraction is 0.33",
                "less than one 8-byte value: no tile would fit",
            ],
        ),
    ] {
        let text = GPU_MACHINE.replace("4294967296", "4").replace(from, to);
        let m = temp_file(dir.path(), name, &text);
        let o = absinthe(&[
            "solve",
            "configs/hdiff.yaml",
            "--machine",
            m.to_str().unwrap(),
        ]);
        assert_clean_error(&o, &[&[name][..], said].concat());
    }
}

/// Domains `check` accepted whose tilings the search listed one by one, and domains past the
/// limits.
#[test]
fn huge_domains_are_bounded_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = temp_file(
        dir.path(),
        "far.yaml",
        &hdiff_with("domain", "[1099511627776, 1, 1]"),
    );
    let o = absinthe(&["check", p.to_str().unwrap()]);
    assert_clean_error(
        &o,
        &["far.yaml:3:10: domain[0]", "between 1 and 2147483647"],
    );
    let p = temp_file(
        dir.path(),
        "cells.yaml",
        &hdiff_with("domain", "[2000000, 2000000, 1]"),
    );
    let o = absinthe(&["check", p.to_str().unwrap()]);
    assert_clean_error(&o, &["cells.yaml:3:1: domain:", "more than the 2^40"]);
    // Accepted, and solved over a thinned set of tilings, saying so (progress lines on, not
    // asserted: the solve may end within their first 2 s).
    let p = temp_file(
        dir.path(),
        "big.yaml",
        &hdiff_with("domain", "[10000, 10000, 10000]"),
    );
    let o = absinthe_env(
        &["solve", p.to_str().unwrap(), "--solver", "dp"],
        &[("ABSINTHE_PROGRESS", "1")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the search keeps"),
        "no note on the thinned tilings: {}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("estimated"), "{}", stdout(&o));
}

/// The cache model's work is bounded before it starts: the state of every thread filled (many
/// cores), the accesses counted (a domain that large lines let past the state's bound), and the
/// accesses traced.
#[test]
fn cache_model_work_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let default = std::fs::read_to_string(root().join("machines/default.yaml")).unwrap();
    let eight: Vec<String> = (0..8)
        .map(|n| format!("{{name: L{n}, bytes: {}, line: 8, ways: 1}}", 4096u64 << n))
        .collect();
    let many = temp_file(
        dir.path(),
        "many.yaml",
        &format!(
            "{}caches: [{}]\n",
            default.replace("cores: 2", "cores: 4096"),
            eight.join(", ")
        ),
    );
    let wide = temp_file(
        dir.path(),
        "wide.yaml",
        &format!("{default}caches: [{{name: L1, bytes: 1048576, line: 4096, ways: 1}}]\n"),
    );
    let cube = temp_file(
        dir.path(),
        "cube.yaml",
        &hdiff_with("domain", "[2048, 2048, 2048]"),
    );
    let big = temp_file(
        dir.path(),
        "big.yaml",
        &hdiff_with("domain", "[512, 256, 64]"),
    );
    let trace = dir.path().join("big.trace");
    for (args, needle) in [
        (
            vec![
                "configs/hdiff.yaml",
                "--machine",
                many.to_str().unwrap(),
                "--variant",
                "naive",
            ],
            "4096 threads, each keeping state for",
        ),
        (
            vec![
                cube.to_str().unwrap(),
                "--machine",
                wide.to_str().unwrap(),
                "--variant",
                "naive",
            ],
            "the model counts at most 34359738368",
        ),
        // A sample that would count every group whole is bounded alike.
        (
            vec![
                cube.to_str().unwrap(),
                "--machine",
                wide.to_str().unwrap(),
                "--variant",
                "fused",
                "--sample",
                "1099511627776",
            ],
            "the model counts at most 34359738368",
        ),
        (
            vec![
                big.to_str().unwrap(),
                "--machine",
                "machines/default.yaml",
                "--trace",
                trace.to_str().unwrap(),
            ],
            "a variant of more than 134217728 is not traced",
        ),
    ] {
        let o = absinthe(&[&["cache"][..], &args].concat());
        assert_clean_error(&o, &[needle]);
    }
    assert!(!trace.exists());
    // `bench` says why a row has no cache counts.
    let fine = temp_file(
        dir.path(),
        "fine.yaml",
        &format!("{default}caches: [{}]\n", eight.join(", ")),
    );
    let mid = temp_file(
        dir.path(),
        "mid.yaml",
        &hdiff_with("domain", "[256, 256, 64]"),
    );
    let o = absinthe(&[
        "bench",
        mid.to_str().unwrap(),
        "--machine",
        fine.to_str().unwrap(),
        "--variants",
        "naive",
        "--runs",
        "1",
        "--no-roofline",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("\"cache_error\""), "{}", stdout(&o));
    assert!(
        stderr(&o).contains(
            "warning: naive: no cache counts: cache model: the arrays' lines times the levels"
        ),
        "{}",
        stderr(&o)
    );
}

/// A trace is put in place only when its run verified, ended well and wrote every access it
/// reported: a stand-in compiler builds programs that fall short of each.
#[test]
fn a_trace_that_falls_short_leaves_the_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let trace = temp_file(dir.path(), "keep.trace", "ORIGINAL\n");
    for (name, verified, end, needle) in [
        // The harness ends with status 1 when the run did not verify.
        ("unverified", "false", "exit 1", "did not verify"),
        ("crashes", "true", "kill -SEGV $$", "SIGSEGV"),
        (
            "short",
            "true",
            "",
            "reported 27648 accesses, but the trace has 1 line",
        ),
    ] {
        // The program it "compiles" writes one line to the trace, prints the result line and
        // ends as `end` says.
        let program = format!(
            "#!/bin/sh\necho '0 R 8' > \"$4\"\necho 'ABSINTHE_TRACE {{\"verified\":{verified},\"threads\":2,\"accesses\":27648}}'\n{end}\n"
        );
        let m = machine_with_compiler(
            dir.path(),
            name,
            &format!(
                "#!/bin/sh\nout=\"\"; prev=\"\"\nfor a in \"$@\"; do [ \"$prev\" = \"-o\" ] && out=$a; prev=$a; done\ncat > \"$out\" <<'EOF'\n{program}EOF\nchmod +x \"$out\"\n"
            ),
        );
        let cache = dir.path().join(format!("build-{name}"));
        let o = absinthe_env(
            &[
                "cache",
                "configs/hdiff.yaml",
                "--machine",
                m.to_str().unwrap(),
                "--trace",
                trace.to_str().unwrap(),
            ],
            &[("ABSINTHE_CACHE_DIR", cache.to_str().unwrap())],
        );
        assert_clean_error(&o, &[needle]);
        assert_eq!(
            std::fs::read_to_string(&trace).unwrap(),
            "ORIGINAL\n",
            "{name}"
        );
        let left = std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".tmp")
            })
            .count();
        assert_eq!(left, 0, "{name}: a temporary was left");
    }
}

/// `bench` starts a process per rank and `codegen` lists every rank in its code: more than
/// 1024 and 65536 ranks are refused before any work, where `solve` prices the grid.
#[test]
fn runs_over_too_many_ranks_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = temp_file(
        dir.path(),
        "sq.yaml",
        &hdiff_with("domain", "[512, 256, 4]"),
    );
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    for (args, says) in [
        (
            vec![
                "codegen",
                p.to_str().unwrap(),
                "--ranks",
                "512,256",
                "-o",
                out,
            ],
            "--ranks 512,256: 131072 ranks; `codegen` takes at most 65536",
        ),
        (
            vec![
                "bench",
                p.to_str().unwrap(),
                "--ranks",
                "64,32",
                "--runs",
                "1",
            ],
            "--ranks 64,32: 2048 ranks; `bench` takes at most 1024",
        ),
    ] {
        let o = absinthe(&args);
        assert_clean_error(&o, &[says]);
    }
    assert!(!Path::new(out).exists());
}

/// A number quoted as a string is called a string; only digits past a double's range are
/// called out of range.
#[test]
fn quoted_numbers_are_strings_not_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    let default = std::fs::read_to_string(root().join("machines/default.yaml")).unwrap();
    for (value, needle) in [
        (
            "'0.5'",
            "cache_fraction: expected a number, found string \"0.5\"",
        ),
        (
            "1e999",
            "cache_fraction: the number `1e999` is out of the range of a double",
        ),
    ] {
        let text = default.replace(
            "cache_fraction: 0.3333",
            &format!("cache_fraction: {value}"),
        );
        let m = temp_file(dir.path(), "q.yaml", &text);
        let o = absinthe(&[
            "solve",
            "configs/hdiff.yaml",
            "--machine",
            m.to_str().unwrap(),
        ]);
        assert_clean_error(&o, &[needle]);
    }
}

/// A halo so large that the generated code's pointer offsets overflowed, and offsets whose
/// inlined sum wrapped.
#[test]
fn halos_and_offsets_past_the_limits_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = temp_file(
        dir.path(),
        "halo.yaml",
        &hdiff_with("halo", "[9223372036854775807, 1, 0]"),
    );
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    for args in [vec!["check"], vec!["solve"], vec!["codegen", "-o", out]] {
        let o = absinthe(&[&args[..], &[p.to_str().unwrap()]].concat());
        assert_clean_error(&o, &["halo.yaml:4:8: halo[0]", "between 0 and 65536"]);
    }
    let text = "name: wrap\ndomain: [16, 16, 4]\nhalo: [4, 0, 0]\noutputs: [b]\nstencils:\n  - name: a\n    expr: in(i+2147483647, j, k)\n  - name: b\n    expr: a(i+2147483647, j, k)\n";
    let p = temp_file(dir.path(), "wrap.yaml", text);
    let o = absinthe(&["check", p.to_str().unwrap()]);
    assert_clean_error(
        &o,
        &["wrap.yaml:7:16: stencils[0].expr", "out of range", "^^^"],
    );
    // Offsets within the bound whose inlined sum leaves the halo: the analysis refuses them.
    let text = text.replace("2147483647", "40000");
    let p = temp_file(dir.path(), "far.yaml", &text);
    let o = absinthe(&["check", p.to_str().unwrap()]);
    assert_clean_error(&o, &["the halo along i is 4, it must be at least 80000"]);
}

#[test]
fn thread_and_run_counts_are_bounded() {
    for threads in ["100000000", "10000", "0"] {
        let o = absinthe(&["solve", "configs/hdiff.yaml", "--threads", threads]);
        assert_clean_error(&o, &["--threads", "from 1 to 256"]);
    }
    for cmd in ["bench", "tune"] {
        let o = absinthe(&[cmd, "configs/hdiff.yaml", "--runs", "0"]);
        assert_clean_error(&o, &["--runs", "from 1 to"]);
    }
    let o = absinthe(&["bench", "configs/hdiff.yaml", "--variants", "random:0"]);
    assert_clean_error(&o, &["random:N with N from 1 to 4096"]);
    let m = "name: many\ncores: 100000\ncache_bytes: 1000\n";
    let dir = tempfile::tempdir().unwrap();
    let p = temp_file(dir.path(), "many.yaml", m);
    let o = absinthe(&[
        "solve",
        "configs/hdiff.yaml",
        "--machine",
        p.to_str().unwrap(),
    ]);
    assert_clean_error(
        &o,
        &["many.yaml:2:1: cores: cores must be between 1 and 4096"],
    );
}

/// Makes a FIFO at `path`.
fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

fn solve_to(out: &Path) -> Output {
    absinthe(&[
        "solve",
        "configs/hdiff.yaml",
        "--format",
        "yaml",
        "-o",
        out.to_str().unwrap(),
    ])
}

/// `-o` writes through a symbolic link, into a FIFO, fails on a full device, and keeps the
/// mode of the file it replaces.
#[test]
fn output_paths_are_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let target = temp_file(dir.path(), "target.yaml", "old\n");
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = dir.path().join("link.yaml");
    std::os::unix::fs::symlink("target.yaml", &link).unwrap();
    let o = solve_to(&link);
    assert!(o.status.success(), "{}", stderr(&o));
    let meta = std::fs::symlink_metadata(&link).unwrap();
    assert!(meta.file_type().is_symlink(), "the link was replaced");
    let written = std::fs::read_to_string(&target).unwrap();
    assert!(written.starts_with("program: hdiff"), "{written}");
    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    // A dangling link: its target is created.
    let dangling = dir.path().join("dangling.yaml");
    std::os::unix::fs::symlink("made.yaml", &dangling).unwrap();
    assert!(solve_to(&dangling).status.success());
    assert!(dir.path().join("made.yaml").is_file());
    assert!(std::fs::symlink_metadata(&dangling)
        .unwrap()
        .file_type()
        .is_symlink());

    // A dangling link as codegen's output directory: the directory it names is made, through
    // a second link too.
    std::os::unix::fs::symlink("second", dir.path().join("out")).unwrap();
    std::os::unix::fs::symlink("made/code", dir.path().join("second")).unwrap();
    let out = dir.path().join("out");
    let o = absinthe(&["codegen", "configs/hdiff.yaml", "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.path().join("made/code/hdiff.cpp").is_file());
    assert!(std::fs::symlink_metadata(&out)
        .unwrap()
        .file_type()
        .is_symlink());

    // A FIFO is written to, not replaced.
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let o = solve_to(&fifo);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(reader.join().unwrap().starts_with("program: hdiff"));
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());

    // A device that refuses the write: an error, and the device stays a device.
    if Path::new("/dev/full").exists() {
        let o = solve_to(Path::new("/dev/full"));
        assert_clean_error(&o, &["/dev/full", "No space left on device"]);
        let m = std::fs::metadata("/dev/full").unwrap();
        assert!(m.file_type().is_char_device());
    }
}

/// A relative `ABSINTHE_CACHE_DIR`, and a cached executable truncated behind the tool's back.
#[test]
fn relative_and_corrupt_build_caches_work() {
    let dir = tempfile::tempdir().unwrap();
    let run = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_absinthe"));
        c.args([
            "bench",
            root().join("configs/example2.yaml").to_str().unwrap(),
            "--machine",
            root().join("machines/default.yaml").to_str().unwrap(),
            "--variants",
            "opt",
            "--runs",
            "2",
            "--no-roofline",
        ])
        .current_dir(dir.path())
        .env("ABSINTHE_CACHE_DIR", "relcache");
        c.output().unwrap()
    };
    let o = run();
    assert!(o.status.success(), "{}", stderr(&o));
    let entries: Vec<_> = std::fs::read_dir(dir.path().join("relcache"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!entries.is_empty());
    for e in &entries {
        let exe = e.join("a.out");
        let len = std::fs::metadata(&exe).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&exe)
            .unwrap()
            .set_len(len / 2)
            .unwrap();
    }
    let o = run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("yes"), "{}", stdout(&o));
    // A cache that cannot be a directory is named, with the variable it comes from, once.
    std::fs::remove_dir_all(dir.path().join("relcache")).unwrap();
    std::fs::write(dir.path().join("relcache"), "").unwrap();
    let o = run();
    assert_clean_error(
        &o,
        &[
            "cannot use the build cache",
            "relcache (from ABSINTHE_CACHE_DIR",
        ],
    );
    assert_eq!(
        stderr(&o).matches("cannot use the build cache").count(),
        1,
        "{}",
        stderr(&o)
    );
}

/// A byte-order mark before a valid program or machine file.
#[test]
fn byte_order_marks_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let p = temp_file(dir.path(), "bom.yaml", &format!("\u{feff}{}", hdiff()));
    let machine = std::fs::read_to_string(root().join("machines/default.yaml")).unwrap();
    let m = temp_file(dir.path(), "bomm.yaml", &format!("\u{feff}{machine}"));
    let o = absinthe(&[
        "solve",
        p.to_str().unwrap(),
        "--machine",
        m.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn diagnostics_point_at_the_byte_and_stay_short() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines: Vec<String> = hdiff().lines().map(String::from).collect();
    let at = lines.iter().position(|l| l.contains("name: lap")).unwrap();
    lines[at].push('\0');
    let p = temp_file(dir.path(), "nul.yaml", &lines.join("\n"));
    let o = absinthe(&["check", p.to_str().unwrap()]);
    let column = lines[at].chars().count();
    assert_clean_error(
        &o,
        &[
            "nul.yaml",
            &format!("U+0000 at line {} column {column}", at + 1),
        ],
    );

    let huge = hdiff().replace("-4.0 *", &format!("{} *", "1".repeat(1_000_000)));
    let p = temp_file(dir.path(), "literal.yaml", &huge);
    let o = absinthe(&["check", p.to_str().unwrap()]);
    assert_clean_error(&o, &["literal.yaml:8:11: stencils[0].expr"]);
    assert!(stderr(&o).len() < 2000, "{} bytes", stderr(&o).len());

    let deep = hdiff().replace("-4.0 *", &"1 +".repeat(100_000));
    let p = temp_file(dir.path(), "deep.yaml", &deep);
    let o = absinthe(&["check", p.to_str().unwrap()]);
    assert_clean_error(&o, &["deep.yaml:8:3082: stencils[0].expr", "too deep"]);
    assert!(stderr(&o).len() < 2000, "{} bytes", stderr(&o).len());
}

/// hdiff's solution handed to heat4.
#[test]
fn a_solution_for_another_program_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sol = dir.path().join("hdiff.solution.yaml");
    assert!(solve_to(&sol).status.success());
    let sol = sol.to_str().unwrap();
    let out = dir.path().join("out");
    let expect = [
        "hdiff.solution.yaml:1:1: program:",
        "for the program `hdiff`, not `heat4`",
    ];
    let o = absinthe(&[
        "codegen",
        "configs/heat4.yaml",
        "--solution",
        sol,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_clean_error(&o, &expect);
    assert!(!out.exists(), "codegen wrote files for a refused solution");
    let variant = format!("solution:{sol}");
    let o = absinthe(&["bench", "configs/heat4.yaml", "--variants", &variant]);
    assert_clean_error(&o, &expect);
}

/// A solution whose tile counts and sizes disagree is an error at the entry in the file, the
/// same for `verify` as for `codegen` and `cache`.
#[test]
fn a_solution_that_contradicts_itself_is_placed() {
    let dir = tempfile::tempdir().unwrap();
    let sol = dir.path().join("hdiff.solution.yaml");
    assert!(solve_to(&sol).status.success());
    let text = std::fs::read_to_string(&sol).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let at = lines
        .iter()
        .position(|l| l == "  tile_size:")
        .expect("a tile_size entry");
    lines[at + 1] = "  - 7".into();
    let line = at + 2;
    let bad = lines.join("\n") + "\n";
    std::fs::write(&sol, &bad).unwrap();
    let sol = sol.to_str().unwrap();
    let place = format!("hdiff.solution.yaml:{line}:5: groups[0].tile_size[0]");
    for args in [
        vec!["verify", "configs/hdiff.yaml", "--solution", sol],
        vec!["cache", "configs/hdiff.yaml", "--solution", sol],
    ] {
        let o = absinthe(&args);
        assert_clean_error(&o, &[&place]);
    }
}

/// `--flush-bytes 0` times with no flush, and the header says so.
#[test]
fn no_flush_is_reported_as_no_flush() {
    let o = absinthe(&[
        "bench",
        "configs/example2.yaml",
        "--variants",
        "opt",
        "--runs",
        "2",
        "--flush-bytes",
        "0",
        "--no-roofline",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("caches not flushed between runs"), "{out}");
    assert!(!out.contains("caches flushed before each run"), "{out}");
}

/// A misspelt array name: refused with a hint when inputs are declared, warned about when not.
#[test]
fn misspelt_inputs_are_caught() {
    let dir = tempfile::tempdir().unwrap();
    let declared = hdiff()
        .replace("outputs: [out]", "outputs: [out]\ninputs: [in, wgt]")
        .replace("wgt(i,j,k)", "wgtt(i,j,k)");
    let p = temp_file(dir.path(), "declared.yaml", &declared);
    let o = absinthe(&["check", p.to_str().unwrap()]);
    assert_clean_error(
        &o,
        &[
            "declared.yaml:15:11: stencils[3].expr",
            "`wgtt` is neither a stencil nor a declared input; did you mean `wgt`?",
            "^^^",
        ],
    );
    let ok = hdiff().replace("outputs: [out]", "outputs: [out]\ninputs: [in, wgt]");
    let p = temp_file(dir.path(), "ok.yaml", &ok);
    assert!(absinthe(&["check", p.to_str().unwrap()]).status.success());
    let bad = hdiff().replace("outputs: [out]", "outputs: [out]\ninputs: [in, wgt, lap]");
    let p = temp_file(dir.path(), "stencil.yaml", &bad);
    let o = absinthe(&["check", p.to_str().unwrap()]);
    assert_clean_error(&o, &["inputs[2]", "written by stencils[0]"]);

    let undeclared = hdiff().replace("in(i-1,j,k)", "lapp(i-1,j,k)");
    let p = temp_file(dir.path(), "undeclared.yaml", &undeclared);
    let o = absinthe(&["check", p.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The warning is located at the first read of the misspelt name, like an error.
    let err = stderr(&o);
    assert!(
        err.contains("warning: ")
            && err.contains("undeclared.yaml:8:")
            && err.contains(
                ": stencils[0].expr: the input `lapp` is one letter away from the stencil `lap`"
            )
            && err.contains("^^^"),
        "{err}"
    );
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(report["warnings"].as_array().map(Vec::len), Some(1));
}

/// Options a command would ignore or refuse: not in its `--help`, refused when given.
#[test]
fn help_lists_only_what_a_command_takes() {
    for (command, hidden) in [
        ("cache", &["--ranks"][..]),
        ("compare", &["--ranks"]),
        ("tune", &["--ranks"]),
        ("verify", &["--ranks", "--inline ", "--no-inline"]),
    ] {
        let help = stdout(&absinthe(&[command, "--help"]));
        for h in hidden {
            assert!(!help.contains(h), "{command} --help lists {h}: {help}");
        }
    }
    assert!(stdout(&absinthe(&["solve", "--help"])).contains("--ranks"));
    let o = absinthe(&["cache", "configs/hdiff.yaml", "--ranks", "2,1"]);
    assert_clean_error(&o, &["cache does not take --ranks"]);

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let o = absinthe(&["codegen", "configs/hdiff.yaml", "--runs", "3", "-o", out]);
    assert_clean_error(&o, &["--harness"]);
    let o = absinthe(&["codegen", "configs/hdiff.yaml", "--stage", "-o", out]);
    assert_clean_error(&o, &["--stage", "add --target cuda"]);
    // A template that is not a regular file is an error, not a silent fallback (a FIFO would
    // block the read), and a template's errors name the user's copy.
    let templates = dir.path().join("templates");
    std::fs::create_dir(&templates).unwrap();
    std::fs::create_dir(templates.join("kernel.cpp.j2")).unwrap();
    let t = templates.to_str().unwrap();
    let o = absinthe(&["codegen", "configs/hdiff.yaml", "--templates", t, "-o", out]);
    assert_clean_error(&o, &["kernel.cpp.j2 is not a regular file"]);
    std::fs::remove_dir(templates.join("kernel.cpp.j2")).unwrap();
    std::fs::write(templates.join("kernel.cpp.j2"), "{{ s.x }").unwrap();
    let o = absinthe(&["codegen", "configs/hdiff.yaml", "--templates", t, "-o", out]);
    assert_clean_error(&o, &[&format!("{t}/kernel.cpp.j2: syntax error")]);
    assert!(!Path::new(out).exists());
}

/// Compiler flags that would reach the compiler as empty arguments, or more candidates than
/// learn times: refused with the key by every command that reads the machine file.
#[test]
fn empty_or_too_many_compiler_flags_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(root().join("machines/default.yaml")).unwrap();
    let base: String = base
        .lines()
        .filter(|l| !l.starts_with("compiler:"))
        .map(|l| format!("{l}\n"))
        .collect();
    let nine = ["[-O2]"; 9].join(", ");
    for (name, compiler, needle) in [
        (
            "flag.yaml",
            "{cxx: g++, flags: [-O3, \"\"]}".to_string(),
            "compiler.flags[1]",
        ),
        (
            "none.yaml",
            "{cxx: g++, candidates: [[]]}".to_string(),
            "compiler.candidates[0]",
        ),
        (
            "blank.yaml",
            "{cxx: g++, candidates: [[-O2, \" \"]]}".to_string(),
            "compiler.candidates[0][1]",
        ),
        (
            "nine.yaml",
            format!("{{cxx: g++, candidates: [{nine}]}}"),
            "at most 8 candidates",
        ),
        (
            "list.yaml",
            "{cxx: g++, candidates: -O2}".to_string(),
            "candidates",
        ),
    ] {
        let m = temp_file(dir.path(), name, &format!("{base}compiler: {compiler}\n"));
        for cmd in ["solve", "bench"] {
            let o = absinthe(&[cmd, "configs/hdiff.yaml", "--machine", m.to_str().unwrap()]);
            assert_clean_error(&o, &[name, needle]);
        }
        let o = absinthe(&[
            "learn",
            "--machine",
            m.to_str().unwrap(),
            "--out",
            "/dev/null",
        ]);
        assert_clean_error(&o, &[name, needle]);
    }
}

/// Cache levels the cache model would divide by, index with or loop over without end: refused
/// with the key, whatever command reads the machine file; a variant `cache` cannot model is
/// refused by name.
#[test]
fn cache_levels_out_of_range_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(root().join("machines/default.yaml")).unwrap();
    for (name, caches, needle) in [
        ("line.yaml", "[{name: L1, bytes: 1024, line: 48, ways: 2}]", "caches[0].line"),
        ("ways.yaml", "[{name: L1, bytes: 1024, line: 64, ways: 0}]", "caches[0].ways"),
        ("sets.yaml", "[{name: L1, bytes: 1000, line: 64, ways: 2}]", "caches[0].bytes"),
        ("huge.yaml", "[{name: L1, bytes: 18446744073709551615, line: 64, ways: 1}]", "caches[0].bytes"),
        ("none.yaml", "[]", "caches must list 1 to 8 levels"),
        (
            "control.yaml",
            r#"[{name: "L1\e[31m", bytes: 1024, line: 64, ways: 2}]"#,
            "caches[0].name holds the control character U+001B",
        ),
        (
            "twice.yaml",
            "[{name: L1, bytes: 1024, line: 64, ways: 2}, {name: L1, bytes: 4096, line: 64, ways: 2}]",
            "caches[1].name",
        ),
    ] {
        let m = temp_file(dir.path(), name, &format!("{base}caches: {caches}\n"));
        for cmd in ["cache", "solve"] {
            let o = absinthe(&[cmd, "configs/hdiff.yaml", "--machine", m.to_str().unwrap()]);
            assert_clean_error(&o, &[name, needle]);
        }
    }
    let o = absinthe(&["cache", "configs/hdiff.yaml", "--variant", "random:3"]);
    assert_clean_error(&o, &["--variant takes one of", "random:3"]);
}

/// A chain of 300 tiny stencils, whose range tables take seconds (every range fits the cache,
/// so no start closes early): `solve --time-limit` stops the DP's, the range MILP's and the
/// inline search's tables at the limit with an error, instead of running past it.
#[test]
fn the_exact_search_stops_at_the_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from(
        "name: tiny\ndomain: [8, 8, 4]\nhalo: [1, 1, 0]\noutputs: [s299]\nstencils:\n",
    );
    for i in 0..300 {
        let src = if i == 0 {
            "in".to_string()
        } else {
            format!("s{}", i - 1)
        };
        text.push_str(&format!(
            "  - name: s{i}\n    expr: \"{src}(i,j,k) + 1.0\"\n"
        ));
    }
    let p = temp_file(dir.path(), "tiny.yaml", &text);
    let p = p.to_str().unwrap();
    let out = dir.path().join("s.yaml");
    for extra in [&["--solver", "dp"][..], &["--no-inline"], &[]] {
        let mut args = vec![
            "solve",
            p,
            "--time-limit",
            "0.2",
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        let o = absinthe(&args);
        assert_clean_error(
            &o,
            &[
                "the exact search did not finish within the time limit",
                "raise --time-limit",
            ],
        );
        assert!(
            !out.exists(),
            "{extra:?}: a stopped search writes no solution"
        );
    }
}

/// Time limits past what the solvers take (Z3 counts milliseconds in 32 bits and the watchdog
/// builds a `Duration`), HiGHS threads through `ABSINTHE_HIGHS_OPTIONS`, and cost parameters or
/// network bandwidths that overflow the estimates: each a clear error naming what is wrong.
#[test]
fn time_limits_threads_and_costs_past_their_bounds_are_refused() {
    for (cmd, limit) in [
        ("solve", "1e20"),
        ("compare", "1e300"),
        ("solve", "4294967.297"),
    ] {
        let mut args = vec![cmd, "configs/hdiff.yaml", "--time-limit", limit];
        if cmd == "solve" {
            args.extend(["--solver", "z3"]);
        }
        let o = absinthe(&args);
        assert_clean_error(&o, &["--time-limit", "at most 1000000"]);
    }
    // A number past its bound is shown as written short, not in 309 digits.
    let o = absinthe(&["solve", "configs/hdiff.yaml", "--gap", "1e308"]);
    assert_clean_error(&o, &["--gap must be in [0, 1), found 1e308"]);
    let o = absinthe_env(
        &["solve", "configs/hdiff.yaml"],
        &[("ABSINTHE_HIGHS_OPTIONS", "threads=100000")],
    );
    assert_clean_error(
        &o,
        &["ABSINTHE_HIGHS_OPTIONS: threads must be from 1 to 256"],
    );
    let dir = tempfile::tempdir().unwrap();
    for (name, params, needle) in [
        (
            "huge.yaml",
            "params:\n  fast: {peel: 1e308, body: 1e-11}\n  slow_base: {peel: 0.0, body: 0.0}\n  slow_stream: {peel: 1e-9, body: 1e-10}\n",
            "huge.yaml:5:10: params.fast.peel: parameters must be non-negative seconds, at most 0.001",
        ),
        (
            "slow.yaml",
            "params:\n  fast: {peel: 1e-10, body: 1e-11}\n  slow_base: {peel: 0.0, body: 0.0}\n  slow_stream: {peel: 1e-9, body: 1e-10}\nnetwork: {latency_us: 1.0, bandwidth_gbs: 5e-324}\n",
            "slow.yaml:8:28: network.bandwidth_gbs: network.bandwidth_gbs must be from 0.000001",
        ),
        (
            "exposed.yaml",
            "params:\n  fast: {peel: 1e-10, body: 1e-11}\n  slow_base: {peel: 0.0, body: 0.0}\n  slow_stream: {peel: 1e-9, body: 1e-10}\n  exposed: 1.5\n",
            "exposed.yaml:8:3: params.exposed: the share of the smaller side that the larger does not hide must be in [0, 1], found 1.5",
        ),
        (
            "unexposed.yaml",
            "params:\n  fast: {peel: 1e-10, body: 1e-11}\n  slow_base: {peel: 0.0, body: 0.0}\n  slow_stream: {peel: 1e-9, body: 1e-10}\n  exposed: .nan\n",
            "unexposed.yaml:8:3: params.exposed: the share of the smaller side that the larger does not hide must be in [0, 1], found NaN",
        ),
    ] {
        let m = temp_file(
            dir.path(),
            name,
            &format!("name: m\ncores: 2\ncache_bytes: 65536\n{params}"),
        );
        let o = absinthe(&["solve", "configs/hdiff.yaml", "--machine", m.to_str().unwrap()]);
        assert_clean_error(&o, &[needle]);
    }
}

/// Inputs that would lose something silently, or whose error would give a wrong reason, are
/// refused with the right one: duplicate `let:`, `fields:` and top-level keys (at both lines),
/// float literals past a float, long program names, nested brackets, endless files, a sweep
/// program asked for several tiles along k or the digits MILP, and `in(k, i, j)`.
#[test]
fn silent_losses_and_wrong_reasons_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let body = |lets: &str, expr: &str, extra: &str| {
        format!(
            "name: p\ndomain: [8, 8, 4]\nhalo: [1, 1, 0]\noutputs: [out]\n{extra}stencils:\n  - name: out\n{lets}    expr: \"{expr}\"\n"
        )
    };
    for (name, text, needles) in [
        (
            "dup.yaml",
            body("    let:\n      a: \"1.0\"\n      a: \"2.0\"\n", "a * in(i,j,k)", ""),
            vec!["dup.yaml:8:7: stencils[0].let: the key `a` is given twice"],
        ),
        (
            "dupfield.yaml",
            body("", "in(i,j,k) * dz(k)", "fields:\n  dz: [k]\n  dz: [k]\n"),
            vec!["dupfield.yaml:6:3: fields: the key `dz` is given twice"],
        ),
        (
            "duptop.yaml",
            body("", "in(i,j,k)", "\"halo\": [1, 1, 0]\n"),
            vec!["duptop.yaml: the key `halo` is given twice, at line 3 and at line 5 column 1"],
        ),
        (
            "duptop.json",
            "{\"name\": \"p\",\n \"domain\": [8, 8, 4],\n \"halo\": [1, 1, 0],\n \"outputs\": [\"out\"],\n \"halo\": [1, 1, 0],\n \"stencils\": [{\"name\": \"out\", \"expr\": \"in(i,j,k)\"}]}\n".to_string(),
            vec!["duptop.json: the key `halo` is given twice, at line 3 and at line 5 column 2"],
        ),
        (
            "float.yaml",
            body("", "in(i,j,k) + 1e39", "type: float\n"),
            vec!["float.yaml:8:24: stencils[0].expr: number literal `1e39` is too large for a float"],
        ),
        (
            "order.yaml",
            body("", "in(k,i,j)", ""),
            vec!["order.yaml:7:16: stencils[0].expr: an access to `in` lists its indices as i, j, k in this order"],
        ),
        (
            "long.yaml",
            body("", "in(i,j,k)", "").replace("name: p", &format!("name: {}", "a".repeat(300))),
            vec!["long.yaml:1:1: name: the name has 300 bytes; at most 128"],
        ),
        (
            "deep.yaml",
            format!("name: {}{}\n", "[".repeat(10_000), "]".repeat(10_000)),
            vec!["deep.yaml: brackets nested more than 64 deep at line 1 column 71"],
        ),
    ] {
        let p = temp_file(dir.path(), name, &text);
        let o = absinthe(&["check", p.to_str().unwrap()]);
        assert_clean_error(&o, &needles);
    }
    let o = absinthe(&["check", "/dev/zero"]);
    assert_clean_error(&o, &["/dev/zero: the file is larger than 16 MiB"]);
    let sweep = "configs/cosmo_vadv_implicit.yaml";
    let o = absinthe(&["solve", sweep, "--tiles-min", "1,1,2"]);
    assert_clean_error(&o, &["--tiles-min", "computes whole columns"]);
    let o = absinthe(&["solve", sweep, "--encoding", "digits"]);
    assert_clean_error(
        &o,
        &["the digits MILP does not encode programs with sweeps"],
    );
}

/// An output that would replace an input, or a file the code generator cannot write, fails
/// before anything is written.
#[test]
fn outputs_never_replace_inputs_or_leave_part_of_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let p = temp_file(dir.path(), "p.yaml", &hdiff());
    let o = absinthe(&["solve", p.to_str().unwrap(), "-o", p.to_str().unwrap()]);
    assert_clean_error(&o, &["p.yaml is an input of this command"]);
    assert_eq!(std::fs::read_to_string(&p).unwrap(), hdiff());
    let same = dir.path().join("same");
    let same = same.to_str().unwrap();
    let o = absinthe(&[
        "solve",
        p.to_str().unwrap(),
        "--emit",
        "lp",
        same,
        "-o",
        same,
    ]);
    assert_clean_error(&o, &["same is named for two outputs"]);
    assert!(!dir.path().join("same").exists());
    // A device named twice is two writes to it, not one file replacing another.
    let o = absinthe(&[
        "solve",
        p.to_str().unwrap(),
        "--emit",
        "lp",
        "/dev/null",
        "-o",
        "/dev/null",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.path().join("cg");
    std::fs::create_dir_all(out.join("hdiff.cpp")).unwrap();
    let o = absinthe(&["codegen", "configs/hdiff.yaml", "-o", out.to_str().unwrap()]);
    assert_clean_error(&o, &["hdiff.cpp is a directory, not a file"]);
    let left: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        vec![std::ffi::OsString::from("hdiff.cpp")],
        "{left:?}"
    );
}

/// The outputs written by other means than `write_atomic`: `cache --trace` (the trace harness
/// writes it), `bench --plot` and `codegen -o DIR`'s files. None replaces an input; a failed
/// trace write is an error and leaves a device a device; a PNG plot's directory is made, and a
/// plot comes after the results it draws.
#[test]
fn traces_plots_and_generated_files_never_replace_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let text = hdiff_with("domain", "[8, 8, 4]");
    let p = temp_file(dir.path(), "p.yaml", &text);
    let ps = p.to_str().unwrap();
    let o = absinthe(&["cache", ps, "--trace", ps]);
    assert_clean_error(&o, &["p.yaml is an input of this command"]);
    assert_eq!(std::fs::read_to_string(&p).unwrap(), text);

    let o = absinthe(&["cache", ps, "--trace", "/dev/full"]);
    assert_clean_error(&o, &["cannot write the trace to /dev/full"]);
    let full = std::fs::metadata("/dev/full").unwrap();
    assert!(full.file_type().is_char_device(), "/dev/full was replaced");

    let svg = temp_file(dir.path(), "p.svg", &text);
    let o = absinthe(&[
        "bench",
        svg.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_clean_error(&o, &["p.svg is an input of this command"]);
    assert_eq!(std::fs::read_to_string(&svg).unwrap(), text);

    let out = dir.path().join("gen");
    std::fs::create_dir_all(&out).unwrap();
    let header = temp_file(&out, "hdiff.h", &text);
    let o = absinthe(&[
        "codegen",
        header.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_clean_error(&o, &["hdiff.h is an input of this command"]);
    assert_eq!(std::fs::read_to_string(&header).unwrap(), text);
    assert!(!out.join("hdiff.cpp").exists());

    let png = dir.path().join("new/dir/plot.png");
    let o = absinthe(&[
        "bench",
        ps,
        "--variants",
        "naive,opt",
        "--runs",
        "2",
        "--no-roofline",
        "--plot",
        png.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("opt"), "{}", stdout(&o));
    assert!(std::fs::metadata(&png).unwrap().len() > 0);
}

/// A trace into a FIFO nothing reads, two generated files linked to one, an output that cannot
/// be a directory, and variants that draw the same configurations twice are refused before any
/// work, and leave every file as it was.
#[test]
fn outputs_and_variants_that_cannot_work_are_refused_first() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let p = temp_file(d, "p.yaml", &hdiff_with("domain", "[8, 8, 4]"));
    let ps = p.to_str().unwrap();
    let fifo = d.join("fifo");
    mkfifo(&fifo);
    let o = absinthe(&["cache", ps, "--trace", fifo.to_str().unwrap()]);
    assert_clean_error(&o, &["cannot write", "it is a FIFO that no process reads"]);

    let shared = temp_file(d, "shared.txt", "old\n");
    let out = d.join("linked");
    std::fs::create_dir(&out).unwrap();
    for name in ["hdiff.h", "hdiff.cpp"] {
        std::os::unix::fs::symlink(&shared, out.join(name)).unwrap();
    }
    let o = absinthe(&["codegen", ps, "-o", out.to_str().unwrap()]);
    assert_clean_error(&o, &["hdiff.cpp are one file (through a link)"]);
    assert_eq!(std::fs::read_to_string(&shared).unwrap(), "old\n");

    let o = absinthe(&["codegen", ps, "-o", shared.to_str().unwrap()]);
    assert_clean_error(&o, &["shared.txt is not a directory"]);

    for (variants, said) in [
        (
            "random:2,random:3",
            "names `random:2` and `random:3`, which draw or name the same",
        ),
        ("top:1,opt,top:4", "names `top:1` and `top:4`"),
        (
            "groups:0,0,1",
            "variant groups:0,0,1: 3 group indices given for 4 stencils",
        ),
    ] {
        let o = absinthe(&["bench", ps, "--variants", variants, "--runs", "1"]);
        assert_clean_error(&o, &[said]);
        assert!(!stderr(&o).contains("measuring"), "{}", stderr(&o));
    }
}

/// A group refused by the machine's `group_arrays` limit is reported as that, not as the cache.
#[test]
fn the_group_arrays_limit_is_named_as_the_reason() {
    let o = absinthe(&["solve", "configs/hdiff.yaml", "--group-arrays", "2"]);
    assert_clean_error(
        &o,
        &[
            "group_arrays: the group [out] touches 4 arrays",
            "limit of 2",
        ],
    );
    assert!(!stderr(&o).contains("cache capacity"), "{}", stderr(&o));
}

/// Errors point at the line and column of the file (in an expression, the caret's), and give
/// the right reason: a misspelt function read as an array, an interval past the domain, a
/// literal that rounds to zero, an input nothing reads.
#[test]
fn errors_give_the_line_column_and_right_reason() {
    let dir = tempfile::tempdir().unwrap();
    let body = |expr: &str, extra: &str| {
        format!(
            "name: p\ndomain: [8, 8, 4]\nhalo: [1, 1, 1]\noutputs: [out]\n{extra}stencils:\n  - name: out\n    expr: {expr}\n"
        )
    };
    let interval = "name: p\ndomain: [8, 8, 4]\nhalo: [0, 0, 0]\noutputs: [out]\nstencils:\n  - name: out\n    intervals:\n      - k: [0, 5]\n        expr: \"in(i,j,k)\"\n";
    for (name, text, needles) in [
        (
            "caret.yaml",
            body("in(i,j,k) + sin(in(i,j,k))", ""),
            vec!["caret.yaml:7:23: stencils[0].expr: unknown function `sin`"],
        ),
        (
            "quoted.yaml",
            body("\"in(i,j,k) + sin(in(i,j,k))\"", ""),
            vec!["quoted.yaml:7:24: stencils[0].expr"],
        ),
        (
            "call.yaml",
            body("foo(in(i,j,k))", ""),
            vec!["`foo(...)` reads the array `foo` (no function has that name", "found `in`"],
        ),
        (
            "past.yaml",
            interval.to_string(),
            vec!["past.yaml:8:9: stencils[0].intervals[0].k: interval [0, 5] is levels [0, 5) of the domain's 4: the domain's levels are 0..4"],
        ),
        (
            "tiny.yaml",
            body("in(i,j,k) * 1e-400", ""),
            vec!["stencils[0].expr: number literal `1e-400` is too small for a double: it rounds to zero"],
        ),
        (
            "tinyfloat.yaml",
            body("in(i,j,k) * 1e-50", "type: float\n"),
            vec!["number literal `1e-50` is too small for a float (type: float): it rounds to zero"],
        ),
        (
            "unused.yaml",
            body("in(i,j,k)", "inputs: [in, wgt]\n"),
            vec!["unused.yaml:5:14: inputs[1]: no stencil reads the input `wgt`"],
        ),
        (
            "domain.yaml",
            body("in(i,j,k)", "").replace("[8, 8, 4]", "[8, 0, 4]"),
            vec!["domain.yaml:2:13: domain[1]: the domain extent along j"],
        ),
    ] {
        let p = temp_file(dir.path(), name, &text);
        let o = absinthe(&["check", p.to_str().unwrap()]);
        assert_clean_error(&o, &needles);
    }
    // Zeros written as zeros are zeros.
    let p = temp_file(
        dir.path(),
        "zero.yaml",
        &body("in(i,j,k) * 0.0e-400 + 0.000", ""),
    );
    let o = absinthe(&["check", p.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A solution file's figures are checked, an inlined stencil listed in a group is named as
/// inlined, a configuration the model calls infeasible is generated with a note saying so, a
/// solution named `.JSON` is JSON, and a HiGHS option that is not a number is refused.
#[test]
fn solution_files_are_checked_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let json = d.join("s.JSON");
    let o = absinthe(&["solve", "configs/hdiff.yaml", "-o", json.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&json).unwrap();
    let solution: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let yaml = d.join("s.yaml");
    let o = absinthe(&["solve", "configs/hdiff.yaml", "-o", yaml.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let yaml_text = std::fs::read_to_string(&yaml).unwrap();
    let verify = |path: &Path| {
        absinthe(&[
            "verify",
            "configs/hdiff.yaml",
            "-s",
            path.to_str().unwrap(),
            "--skip",
            "soundness,optimality",
        ])
    };
    let bad = |name: &str, from: &str, to: &str| {
        assert!(yaml_text.contains(from), "{from} in {yaml_text}");
        temp_file(d, name, &yaml_text.replacen(from, to, 1))
    };
    let status = bad("status.yaml", "status: optimal", "status: bogus");
    assert_clean_error(
        &verify(&status),
        &["solver.status: `bogus` is not a status"],
    );
    let gap = bad("gap.yaml", "gap: 0.0", "gap: .nan");
    assert_clean_error(&verify(&gap), &["solver.gap: must be 0 or more, found NaN"]);
    let twice = bad("twice.yaml", "- flj\n", "- lap\n");
    assert_clean_error(
        &verify(&twice),
        &["twice.yaml:", "inline[2]: `lap` is listed twice"],
    );
    let huge = bad(
        "huge.yaml",
        "tiles:\n  - 1",
        "tiles:\n  - 1180591620717411303424",
    );
    assert_clean_error(
        &verify(&huge),
        &["tiles[0]: expected a whole number of 0 or more, found integer `1180591620717411303424`, too large"],
    );
    let mut negative = solution.clone();
    negative["estimate_seconds"] = serde_json::json!(-1.0);
    let estimate = temp_file(d, "estimate.json", &negative.to_string());
    assert_clean_error(
        &verify(&estimate),
        &[
            "estimate.json:1:",
            "estimate_seconds: must be a finite number of 0 or more, found -1",
        ],
    );
    let inlined = bad("inlined.yaml", "- stencils:\n", "- stencils:\n  - fli\n");
    let o = verify(&inlined);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_clean_error(
        &o,
        &[
            "inlined.yaml:",
            "groups[0].stencils[0]: `fli` is inlined (`inline:`)",
        ],
    );
    // One tile for two threads: infeasible for the model, generated as written.
    let tiles = solution["groups"][0]["tiles"].clone();
    let mut one = solution.clone();
    one["groups"][0]["tiles"] = serde_json::json!([1, 1, 1]);
    one["groups"][0]["stream"] = serde_json::json!(false);
    one["groups"][0]
        .as_object_mut()
        .unwrap()
        .remove("tile_size");
    let one_path = temp_file(d, "one.json", &one.to_string());
    assert_ne!(tiles, one["groups"][0]["tiles"]);
    let out = d.join("gen");
    let o = absinthe(&[
        "codegen",
        "configs/hdiff.yaml",
        "--solution",
        one_path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the model calls this configuration infeasible (group 0: 1 tiles for 2 threads); generated as written"),
        "{}",
        stderr(&o)
    );
    let highs = |options: &str| {
        absinthe_env(
            &["solve", "configs/hdiff.yaml"],
            &[("ABSINTHE_HIGHS_OPTIONS", options)],
        )
    };
    let o = highs("mip_heuristic_effort=nan");
    assert_clean_error(&o, &["`nan` is not a finite number"]);
    // Options absinthe sets, or that would end the search before the optimum is proved.
    let o = highs("mip_rel_gap=5");
    assert_clean_error(&o, &["`mip_rel_gap` is not taken: it is set by --gap"]);
    let o = highs("objective_bound=-1");
    assert_clean_error(
        &o,
        &["`objective_bound` is not taken: it would stop the search"],
    );
    let o = highs("output_flag=1");
    assert_clean_error(&o, &["`output_flag` is not taken: it is set by --verbose"]);
    let o = highs("made_up=3");
    assert_clean_error(&o, &["HiGHS refused option `made_up` = 3: an unknown name"]);
    // A string option is passed as a string.
    let o = highs("presolve=off");
    assert!(o.status.success(), "{}", stderr(&o));
}

/// machines/default.yaml with its `key:` line replaced by `key: value`.
fn default_machine_with(key: &str, value: &str) -> String {
    let default = std::fs::read_to_string(root().join("machines/default.yaml")).unwrap();
    let line = format!("{key}: {value}");
    default
        .lines()
        .map(|l| {
            if l.starts_with(&format!("{key}:")) {
                line.as_str()
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The default machine with a network (what `learn --ranks` adds), in `dir`.
fn networked_machine(dir: &Path) -> String {
    let default = std::fs::read_to_string(root().join("machines/default.yaml")).unwrap();
    let text = format!("{default}\nnetwork: {{latency_us: 1.0, bandwidth_gbs: 10.0}}\n");
    temp_file(dir, "net.yaml", &text)
        .to_str()
        .unwrap()
        .to_string()
}

/// A solution solved over ranks says so and is taken only on its grid; `--emit` refuses
/// `--ranks`; an inline set that reads past a sub-domain falls back to none inlined; a 2-D
/// stencil fused by fixed groups, a machine file of the other kind, a cache smaller than a
/// value and a float scalar that rounds to zero are named as the reason.
#[test]
fn ranks_targets_and_machine_limits_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let net = networked_machine(d);
    let ranked = d.join("ranked.yaml");
    let o = absinthe(&[
        "solve",
        "configs/heat4.yaml",
        "-m",
        &net,
        "--ranks",
        "2,1",
        "-o",
        ranked.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&ranked).unwrap();
    assert!(text.contains("ranks:\n- 2\n- 1\n"), "{text}");
    let r = ranked.to_str().unwrap();
    let o = absinthe(&["verify", "configs/heat4.yaml", "-m", &net, "-s", r]);
    assert_clean_error(
        &o,
        &[
            "ranked.yaml:",
            "ranks: the solution was priced over 2x1 ranks",
        ],
    );
    let out = d.join("gen");
    let gen = |ranks: &[&str]| {
        let mut args = vec!["codegen", "configs/heat4.yaml", "-m", &net, "--solution", r];
        args.extend(ranks);
        args.extend(["-o", out.to_str().unwrap()]);
        absinthe(&args)
    };
    assert_clean_error(
        &gen(&[]),
        &["this command runs one process: give `codegen --ranks 2,1`"],
    );
    assert_clean_error(
        &gen(&["--ranks", "1,2"]),
        &["this command decomposes over 1x2"],
    );
    let o = gen(&["--ranks", "2,1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("infeasible"), "{}", stderr(&o));
    let lp = d.join("x.lp");
    let o = absinthe(&[
        "solve",
        "configs/heat4.yaml",
        "-m",
        &net,
        "--ranks",
        "2,1",
        "--emit",
        "lp",
        lp.to_str().unwrap(),
    ]);
    assert_clean_error(&o, &["--emit writes the MILP of one process"]);
    assert!(!lp.exists());
    // hdiff's inlined fluxes read 2 cells out; sub-domains of one cell hold none of them.
    let o = absinthe(&[
        "solve",
        "configs/hdiff.yaml",
        "-m",
        &net,
        "--ranks",
        "128,128",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("solving with nothing inlined"),
        "{}",
        stderr(&o)
    );

    let colpres = "configs/cosmo_colpres.yaml";
    let reason = "the group [mass, ps] holds `ps`, a 2-D stencil, which is a group of its own";
    for solver in ["dp", "highs"] {
        let o = absinthe(&[
            "solve",
            colpres,
            "--fix-groups",
            "0,0,1,2",
            "--solver",
            solver,
        ]);
        assert_clean_error(&o, &[reason]);
        assert!(!stderr(&o).contains("bug"), "{}", stderr(&o));
    }
    let o = absinthe(&["cache", colpres, "--variant", "groups:0,0,1,2"]);
    assert_clean_error(
        &o,
        &["variant groups:0,0,1,2: infeasible: fixed groups", reason],
    );

    let o = absinthe(&[
        "codegen",
        "configs/heat4.yaml",
        "-m",
        "machines/default.yaml",
        "--target",
        "cuda",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_clean_error(
        &o,
        &["machines/default.yaml: machine `", "has no `gpu:` section"],
    );
    let o = absinthe(&[
        "codegen",
        "configs/heat4.yaml",
        "-m",
        "machines/h100.yaml",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_clean_error(
        &o,
        &["machines/h100.yaml: machine `nvidia-h100-sxm5` describes a GPU"],
    );

    let tiny = temp_file(d, "tiny.yaml", &default_machine_with("cache_bytes", "1"));
    let o = absinthe(&["solve", "configs/hdiff.yaml", "-m", tiny.to_str().unwrap()]);
    assert_clean_error(
        &o,
        &[
            "tiny.yaml:",
            ": cache_bytes: cache_bytes x cache_fraction is",
            "less than one 8-byte value",
        ],
    );

    let smag = std::fs::read_to_string(root().join("configs/cosmo_smag_params.yaml")).unwrap();
    let float = temp_file(
        d,
        "float.yaml",
        &smag.replace("type: double", "type: float"),
    );
    let o = absinthe(&[
        "codegen",
        float.to_str().unwrap(),
        "--harness",
        "--scalar",
        "dt=1e-50",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_clean_error(
        &o,
        &[
            "--scalar dt: 1e-50 is too small for a float",
            "rounds to zero",
        ],
    );
}

/// Errors the YAML reader makes are placed as the others (`FILE:LINE:COLUMN: KEY:`) in the
/// reader's words; a caret marks the read that breaks a rule, not the first read of its array;
/// a solution's entry out of order is one error, and one listed twice says so.
#[test]
fn reader_errors_and_carets_point_at_the_fault() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let default = std::fs::read_to_string(root().join("machines/default.yaml")).unwrap();
    let cores = default
        .lines()
        .position(|l| l.starts_with("cores:"))
        .unwrap()
        + 1;
    let m = temp_file(d, "neg.yaml", &default_machine_with("cores", "-1"));
    let o = absinthe(&["solve", "configs/hdiff.yaml", "-m", m.to_str().unwrap()]);
    assert_clean_error(
        &o,
        &[&format!(
            "neg.yaml:{cores}:8: cores: expected a whole number of 0 or more, found integer `-1`"
        )],
    );
    assert!(!stderr(&o).contains("usize"), "{}", stderr(&o));
    // A bidirectional override reaches the terminal as an escape, never as itself.
    let bidi = temp_file(
        d,
        "bidi.yaml",
        "name: t\ndomain: [8, 8, 4]\nhalo: [1, 1, 1]\noutputs: [out]\nstencils:\n  - name: out\n    expr: \"in(i,j,k) \u{202e}+* 2\"\n",
    );
    let o = absinthe(&["check", bidi.to_str().unwrap()]);
    assert_clean_error(
        &o,
        &["bidi.yaml:7:22: stencils[0].expr: unexpected character `\\u{202e}`"],
    );
    assert!(!stderr(&o).contains('\u{202e}'), "{}", stderr(&o));
    // A `!` inside an expression is the language's not, not a YAML tag.
    let not = temp_file(
        d,
        "not.yaml",
        "name: t\ndomain: [8, 8, 4]\nhalo: [1, 1, 1]\noutputs: [out, o2]\nstencils:\n  - name: out\n    expr: in(i,j,k) * (1.0 - !in(i,j,k))\n  - name: o2\n    expr: max(in(i,j,k), !in(i,j,k))\n",
    );
    let o = absinthe(&["check", not.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    // A FIFO that no process writes is refused at once, not waited on.
    let fifo = d.join("fifo.yaml");
    mkfifo(&fifo);
    let o = absinthe(&["check", fifo.to_str().unwrap()]);
    assert_clean_error(&o, &["fifo.yaml: it is a FIFO that no process writes"]);
    for (name, text, needle) in [
        ("seq.yaml", "- 1\n- 2\n".to_string(), "seq.yaml:1:1: expected a mapping of keys, found sequence"),
        ("multi.yaml", format!("{}\n---\n{}", hdiff(), hdiff()), "multi.yaml: the file holds more than one YAML document"),
        (
            "sweep.yaml",
            "name: p\ndomain: [8, 8, 4]\nhalo: [1, 1, 0]\noutputs: [a]\nstencils:\n  - name: a\n    computation: forward\n    intervals:\n      - k: [0, 1]\n        expr: \"1.0\"\n      - k: [1, null]\n        expr: \"a(i,j,k-1) + x(i,j,k) + a(i+1,j,k-1)\"\n".to_string(),
            "sweep.yaml:12:40: stencils[0].intervals[1].expr: stencil `a`: `a(i+1, j, k-1)`",
        ),
        (
            "syntax.yaml",
            "# a header\nname: t\ndomain: [8, 8, 4]\nhalo: [1, 1, 1]\noutputs: [out]\nstencils:\n  - name: out\n    expr: in(i,j,k)\n bad: 1\n".to_string(),
            "syntax.yaml:9:2: did not find expected key, while parsing a block mapping at line 2 column 1",
        ),
        (
            "indent.yaml",
            "name: t\ndomain: [8, 8, 4]\nhalo: [1, 1, 1]\noutputs: [out]\nstencils:\n  - name: out\n    expr: in(i,j,k)\n     typo: 1\n".to_string(),
            "indent.yaml:8:10: stencils[0]: mapping values are not allowed in this context",
        ),
        (
            "tag.yaml",
            "name: t\ndomain: [!!str 8, 8, 4]\nhalo: [1, 1, 1]\noutputs: [out]\nstencils:\n  - name: out\n    expr: in(i,j,k)\n".to_string(),
            "tag.yaml: the tag `!!str` at line 2 column 10: absinthe's files take no YAML tags",
        ),
        (
            "tagflow.yaml",
            "name: t\ndomain: [8, 8, 4]\nhalo: [1, 1, 1]\noutputs: [out]\nstencils: [{name: out, expr: !x in(i,j,k)}]\n".to_string(),
            "tagflow.yaml: the tag `!x` at line 5 column 30",
        ),
        (
            "bare.yaml",
            "name: t\ndomain: [8, 8, 4]\nhalo: [1, 1, 1]\noutputs: [out]\nstencils:\n  - name: out\n    expr: \"in(i,j,k) + in\"\n".to_string(),
            "bare.yaml:7:24: stencils[0].expr: `in` is not defined",
        ),
        (
            "reach.yaml",
            "name: p\ndomain: [8, 8, 4]\nhalo: [1, 1, 0]\noutputs: [a]\nstencils:\n  - name: a\n    expr: \"x(i,j,k) + x(i+5,j,k)\"\n".to_string(),
            "reach.yaml:7:23: stencils[0].expr: stencil `a` reads `x` 5 cell(s) beyond",
        ),
    ] {
        let p = temp_file(d, name, &text);
        assert_clean_error(&absinthe(&["check", p.to_str().unwrap()]), &[needle]);
    }
    let json = d.join("s.json");
    let o = absinthe(&[
        "solve",
        "configs/heat4.yaml",
        "--no-inline",
        "--fix-groups",
        "0,0,1,1",
        "-o",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    s["groups"][0]["stencils"] = serde_json::json!(["t2", "t1"]);
    let swapped = temp_file(d, "swapped.json", &s.to_string());
    let o = absinthe(&[
        "codegen",
        "configs/heat4.yaml",
        "--solution",
        swapped.to_str().unwrap(),
        "-o",
        d.join("g").to_str().unwrap(),
    ]);
    assert_clean_error(
        &o,
        &["`t1` is stencil 0 of the program, but it comes after stencil 1 (`t2`)"],
    );
    assert_eq!(stderr(&o).matches("error:").count(), 2, "{}", stderr(&o));
    s["groups"][0]["stencils"] = serde_json::json!(["t1", "t2"]);
    s["groups"][1]["stencils"] = serde_json::json!(["t3", "t4", "t3"]);
    let twice = temp_file(d, "twice.json", &s.to_string());
    let o = absinthe(&[
        "codegen",
        "configs/heat4.yaml",
        "--solution",
        twice.to_str().unwrap(),
        "-o",
        d.join("g").to_str().unwrap(),
    ]);
    assert_clean_error(
        &o,
        &["groups[1].stencils[2]: `t3` is stencil 2 of the program, but it is listed before"],
    );
}

/// `cache --trace /dev/stdout` writes the trace to absinthe's standard output (a pipe here),
/// every access, ahead of the report; not to the harness's own, which absinthe reads.
#[test]
fn a_trace_to_standard_output_reaches_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = temp_file(dir.path(), "p.yaml", &hdiff_with("domain", "[8, 8, 4]"));
    let o = absinthe(&[
        "cache",
        p.to_str().unwrap(),
        "--trace",
        "/dev/stdout",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let report = out.find("\n{").expect("the JSON report follows the trace") + 1;
    let access = |l: &str| {
        let f: Vec<&str> = l.split(' ').collect();
        f.len() == 3 && (f[1] == "R" || f[1] == "W") && f[2].parse::<u64>().is_ok()
    };
    let lines: Vec<&str> = out[..report].lines().collect();
    assert!(
        lines.iter().all(|l| access(l)),
        "{}",
        &out[..report.min(2000)]
    );
    let json: serde_json::Value = serde_json::from_str(&out[report..]).unwrap();
    assert_eq!(
        lines.len() as u64,
        json["levels"][0]["accesses"].as_u64().unwrap()
    );
}

/// `learn` refuses, before it measures anything: a GPU's machine file without `--target cuda`,
/// `--write-programs` beside flags it would ignore, numbers past their range, a calibration
/// domain too large to allocate, and an output path that names a directory. `--write-programs`
/// writes all its programs or none.
#[test]
fn learn_refuses_what_it_would_measure_wrongly_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("o.yaml");
    let out = out.to_str().unwrap();
    let learn = |extra: &[&str]| {
        let mut args = vec!["learn", "--machine", "machines/template.yaml"];
        args.extend_from_slice(extra);
        absinthe(&args)
    };
    let o = absinthe(&["learn", "--machine", "machines/h100.yaml", "--out", out]);
    assert_clean_error(&o, &["describes a GPU", "learn --target cuda"]);
    let programs = d.join("programs");
    std::fs::create_dir_all(programs.join("learn_slow1w0.yaml")).unwrap();
    let p = programs.to_str().unwrap();
    let o = learn(&["--write-programs", p, "--ranks", "2"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = learn(&["--write-programs", p]);
    assert_clean_error(&o, &["learn_slow1w0.yaml is a directory, not a file"]);
    assert_eq!(std::fs::read_dir(&programs).unwrap().count(), 1);
    for (flag, value) in [("--repeats", "18446744073709551615"), ("--shapes", "0")] {
        let o = learn(&["--out", out, flag, value]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    }
    let o = learn(&["--out", out, "--calibration-domain", "99999,99999,9999"]);
    assert_clean_error(&o, &["more than 16777216 cells"]);
    let o = learn(&["--out", &format!("{out}/")]);
    assert_clean_error(&o, &["ends in `/`, which names a directory"]);
    assert!(!stderr(&o).contains("learning "), "{}", stderr(&o));
    assert!(!Path::new(out).exists());
}

/// The `compiler:` section takes each key's default where it is left out; text keys refuse
/// YAML's null, booleans and numbers, control characters, and an empty flag list; a machine
/// needs a name.
#[test]
fn compiler_keys_default_one_by_one_and_take_only_text() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(root().join("machines/default.yaml")).unwrap();
    let without: String = base
        .lines()
        .filter(|l| !l.starts_with("compiler:"))
        .collect::<Vec<_>>()
        .join("\n");
    assert_ne!(
        without, base,
        "machines/default.yaml has a one-line compiler section"
    );
    for (n, (section, said)) in [
        ("compiler: {flags: [-O3]}", None),
        ("compiler: {cxx: g++}", None),
        (
            "compiler: {cxx: null}",
            Some("compiler.cxx: expected text, found null"),
        ),
        ("compiler: {cxx: true}", Some("found the boolean true")),
        ("compiler: {flags: [-O3, 3]}", Some("found the number 3")),
        (
            "compiler: {flags: []}",
            Some("no flags builds without optimisation"),
        ),
        (
            "compiler: {cxx: \"g\\u001b[31m++\"}",
            Some("control character U+001B"),
        ),
        ("name: ''", Some("the name is empty")),
    ]
    .into_iter()
    .enumerate()
    {
        let text = if section.starts_with("name") {
            base.lines()
                .map(|l| if l.starts_with("name:") { section } else { l })
                .collect::<Vec<_>>()
                .join("\n")
        } else {
            format!("{without}\n{section}\n")
        };
        let m = temp_file(dir.path(), &format!("m{n}.yaml"), &text);
        let o = absinthe(&[
            "solve",
            "configs/hdiff.yaml",
            "--machine",
            m.to_str().unwrap(),
        ]);
        match said {
            None => assert!(o.status.success(), "{section}: {}", stderr(&o)),
            Some(said) => assert_clean_error(&o, &[said]),
        }
    }
}

/// `cache --solution` refuses the flags that choose a solve's configuration, as `codegen
/// --solution` does; `--gap` and `--time-limit` out of range are usage errors.
#[test]
fn flags_a_command_would_ignore_or_misread_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sol = dir.path().join("hdiff.solution.yaml");
    assert!(solve_to(&sol).status.success());
    let o = absinthe(&[
        "cache",
        "configs/hdiff.yaml",
        "--solution",
        sol.to_str().unwrap(),
        "--no-inline",
    ]);
    assert_clean_error(&o, &["--no-inline chooses the configuration a solve finds"]);
    for (flag, value) in [("--gap", "nan"), ("--gap", "1"), ("--time-limit", "0")] {
        let o = absinthe(&["solve", "configs/hdiff.yaml", flag, value]);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}: {}", stderr(&o));
    }
    let o = absinthe(&[
        "bench",
        "configs/hdiff.yaml",
        "--ranks",
        "2,1",
        "--target",
        "cuda-emulated",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// A key given twice inside a nested mapping is placed at the second, naming the first's line
/// (the YAML parser places the mapping that holds it).
#[test]
fn a_nested_key_given_twice_is_placed_at_the_second() {
    let dir = tempfile::tempdir().unwrap();
    let p = temp_file(
        dir.path(),
        "p.yaml",
        "name: p\ndomain: [8, 8, 4]\nhalo: [1, 1, 1]\noutputs: [out]\nstencils:\n  - name: out\n    expr: \"in(i,j,k)\"\n    name: again\n",
    );
    let o = absinthe(&["check", p.to_str().unwrap()]);
    assert_clean_error(
        &o,
        &["p.yaml:8:5: stencils[0].name: the key `name` is given twice, here and at line 6"],
    );
    let m = temp_file(
        dir.path(),
        "m.yaml",
        "name: m\ncores: 2\ncache_bytes: 1048576\ncaches:\n  - name: L1\n    bytes: 49152\n    line: 64\n    ways: 12\n    shared: false\n    ways: 8\n",
    );
    let o = absinthe(&[
        "solve",
        "configs/hdiff.yaml",
        "--machine",
        m.to_str().unwrap(),
    ]);
    assert_clean_error(
        &o,
        &["m.yaml:10:5: caches[0].ways: the key `ways` is given twice"],
    );
}
