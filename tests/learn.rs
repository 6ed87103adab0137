//! `absinthe learn` end to end on this machine (a tiny budget), the runtime-tiled kernel
//! against the naive reference bit for bit, and the accuracy plot.

use std::process::Command;

use absinthe_codegen::compile::Toolchain;
use absinthe_codegen::{lower, lower_plain, runtime_tiles};
use absinthe_measure::accuracy::{plot, Point};
use absinthe_model::cost_model::evaluate::{evaluate, Configuration};
use absinthe_model::formats::machine::Machine;
use absinthe_model::language::program::Program;
use absinthe_model::Analysis;

use crate::common::{absinthe, root, stderr, stdout};

/// A machine file without params, with comments and keys that must survive, compiling at -O1
/// so the test builds quickly.
const MACHINE: &str = "# A hand-made header that learn must keep.\n# Second comment line.\nname: tiny-learn\n# the slack stays as written\nslack: {cores: 0.05, size: 0.02}\ncache_fraction: 0.3333\ncompiler: {cxx: g++, flags: [-O1, -fopenmp]}   # fast builds\n";

/// `learn` on `machine` with a tiny budget (2 shapes; `repeats` runs each).
fn learn_command(machine: &std::path::Path, repeats: &str, extra: &[&str]) -> Command {
    learn_command_with(machine, "2", repeats, extra)
}

/// `learn` on `machine` with `shapes` shapes of `repeats` runs each; the cache fraction is kept
/// unless `extra` asks for a calibration (`--calibration-domain`).
fn learn_command_with(
    machine: &std::path::Path,
    shapes: &str,
    repeats: &str,
    extra: &[&str],
) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_absinthe"));
    cmd.args(["learn", "--machine"])
        .arg(machine)
        .args(["--shapes", shapes, "--repeats", repeats, "-q"])
        .args(extra)
        .args((!extra.contains(&"--calibration-domain")).then_some("--keep-cache-fraction"))
        .args((!extra.contains(&"--calibration-domain")).then_some("--keep-group-arrays"))
        .args((!extra.contains(&"--kernel-variants")).then_some("--no-kernel-refit"))
        .args((!extra.contains(&"--division-rounds")).then_some("--keep-division"))
        .env(
            "ABSINTHE_CACHE_DIR",
            root().join("target/absinthe-test-cache"),
        )
        .current_dir(root());
    cmd
}

#[test]
fn tiny_learn_writes_params_and_provenance_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.yaml");
    std::fs::write(&path, MACHINE).unwrap();
    let data = dir.path().join("data");
    let out = learn_command(&path, "2", &["--keep-data", data.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let text = std::fs::read_to_string(&path).unwrap();
    // Everything that was there is still there, in order, comments included.
    assert!(
        text.starts_with(MACHINE),
        "the original text was not kept:\n{text}"
    );
    let m = Machine::from_yaml(&text).unwrap();
    let params = m.params.expect("params written");
    assert!(params
        .named()
        .iter()
        .all(|(_, v)| v.is_finite() && *v >= 0.0));
    assert!(params.named().iter().any(|(_, v)| *v > 0.0), "{params:?}");
    let learned = m.learned.clone().expect("learned written");
    // 15 programs x 2 shapes x 2 repeats.
    assert_eq!(learned.samples, 60);
    assert!(
        learned.at.ends_with('Z') && learned.at.len() == 20,
        "{}",
        learned.at
    );
    assert!(!learned.host.is_empty());
    assert!(learned.r2.fast.is_finite() && learned.r2.slow.is_finite());
    assert!(learned.wall_seconds.unwrap() > 0.0);
    // Learned with the default flush, and timing another way is flagged.
    assert_eq!(
        learned.flush,
        Some(absinthe_model::formats::learned::FlushKind::Evict),
        "{text}"
    );
    let bench = Command::new(env!("CARGO_BIN_EXE_absinthe"))
        .args(["bench", "configs/example2.yaml", "--machine"])
        .arg(&path)
        .args(["--variants", "opt", "--runs", "1", "--no-roofline"])
        .args(["--flush", "read", "--flush-bytes", "0"])
        .env(
            "ABSINTHE_CACHE_DIR",
            root().join("target/absinthe-test-cache"),
        )
        .current_dir(root())
        .output()
        .unwrap();
    assert!(bench.status.success(), "{}", stderr(&bench));
    assert!(
        stderr(&bench).contains("learned with `flush: evict`, timed now with no flush"),
        "{}",
        stderr(&bench)
    );
    // The slow fit at every crowding limit, recorded; a charge only with a limit.
    let c = learned
        .crowding_calibration
        .expect("crowding fits recorded");
    assert_eq!(c.limits, absinthe_learn::CROWDING_LIMITS.to_vec());
    assert_eq!(c.deviations.len(), c.limits.len());
    assert_eq!(c.r2_slow.len(), c.limits.len());
    assert_eq!(
        params.crowded.stream_body > 0.0,
        params.crowded.row_streams > 0,
        "{params:?}"
    );
    // The operation weights, measured and written (their bounds are checked on reading).
    assert!(text.contains("\n  operations:  {divide: "), "{text}");
    assert!(
        stdout(&out).contains("operation weights, in adds"),
        "{}",
        stdout(&out)
    );
    // cores and cache_bytes were absent: filled in from this machine.
    let cpus = std::thread::available_parallelism().unwrap().get();
    assert_eq!(m.cores, Some(cpus));
    assert!(m.cache_bytes.unwrap() > 0);
    assert!(m.model_view(8).is_ok());
    let csv = std::fs::read_to_string(data.join("measurements.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 60);
    assert!(csv.starts_with("program,family,"));
}

/// Without `--no-kernel-refit`, learn times the real kernels (here each one's optimum and one
/// random configuration) and refits the parameters to them and the training programs
/// together: it records what it timed and how the kernels were predicted before and after,
/// and `r2` is then the refit's. The file carries the default form's exposed share, which the
/// refit fitted with.
#[test]
fn learn_refits_the_parameters_to_real_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.yaml");
    std::fs::write(&path, MACHINE).unwrap();
    let out = learn_command(&path, "2", &["--kernel-variants", "1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let m = Machine::load(&path).unwrap();
    let params = m.params.expect("params written");
    assert!(params
        .named()
        .iter()
        .all(|(_, v)| v.is_finite() && *v >= 0.0));
    assert_eq!(params.slow_base.body, 0.0, "held at zero: {params:?}");
    assert_eq!(params.exposed, absinthe_learn::EXPOSED, "{params:?}");
    let learned = m.learned.expect("learned written");
    let k = learned.kernel_refit.expect("the refit recorded");
    let names: Vec<&str> = absinthe_learn::kernels::KERNELS
        .iter()
        .map(|k| k.0)
        .collect();
    assert_eq!(k.programs, names);
    // The optimum and one random configuration of each, where feasible.
    assert!(k.variants >= 4 && k.variants <= 8, "{k:?}");
    assert!(k.rounds >= 1 && k.rounds as usize <= absinthe_learn::kernels::REFIT_ROUNDS);
    for share in [k.within_20_before, k.within_20_after] {
        assert!((0.0..=1.0).contains(&share), "{k:?}");
    }
    assert!(k.r2_synthetic_fit.fast.is_finite() && k.r2_synthetic_fit.slow.is_finite());
    let text = stdout(&out);
    assert!(
        text.contains("kernel refit:") && text.contains("kernels within 20%"),
        "{text}"
    );
}

/// With `compiler.candidates`, learn first times its flag kernels built with the base flags and
/// with each candidate added, records every set and its time, skips a set the compiler refuses
/// with a warning, and writes the set `flags::choose` picks from the recorded times into
/// `compiler.flags`, keeping the candidates; `--keep-flags` skips the step.
#[test]
fn learn_chooses_the_compiler_flags_by_measurement() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.yaml");
    let machine = MACHINE.replace(
        "flags: [-O1, -fopenmp]}",
        "flags: [-O1, -fopenmp], candidates: [[-O2], [-fno-such-flag-for-absinthe]]}",
    );
    assert_ne!(machine, MACHINE);
    std::fs::write(&path, &machine).unwrap();
    // Two rounds (the default twelve time the same kernels again).
    let out = learn_command(&path, "2", &["--flag-rounds", "2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(
        stderr(&out).contains("refused the candidate flags `-fno-such-flag-for-absinthe`"),
        "{}",
        stderr(&out)
    );
    let m = Machine::load(&path).unwrap();
    let c = m
        .learned
        .clone()
        .unwrap()
        .flag_calibration
        .expect("the choice recorded");
    let sets: Vec<Vec<&str>> = vec![
        vec!["-O1", "-fopenmp"],
        vec!["-O1", "-fopenmp", "-O2"],
        vec!["-O1", "-fopenmp", "-fno-such-flag-for-absinthe"],
    ];
    assert_eq!(c.flags, sets);
    assert!(c.seconds[0].is_some_and(|s| s > 0.0) && c.seconds[1].is_some_and(|s| s > 0.0));
    assert_eq!(c.seconds[2], None, "{c:?}");
    assert_eq!(c.ratios.len(), 3, "{c:?}");
    assert!(c.ratios[0]
        .as_ref()
        .is_some_and(|r| r.len() == 2 && r.iter().all(|x| *x == 1.0)));
    assert_eq!(c.ratios[1].as_ref().map(Vec::len), Some(2), "{c:?}");
    assert_eq!(c.ratios[2], None);
    let chosen = absinthe_learn::flags::choose(&c.ratios);
    assert_eq!(m.compiler.flags, c.flags[chosen], "{c:?}");
    assert_eq!(m.compiler.candidates.len(), 2);
    let text = stdout(&out);
    assert!(text.contains("compiler.flags: "), "{text}");
    for kernel in absinthe_learn::flags::FLAG_KERNELS {
        assert!(text.contains(kernel.0), "{text}");
    }
    // Learning again from the learned file starts from the same base flags.
    assert_eq!(m.compiler.base_flags(), sets[0]);
    // One round cannot be compared with another: refused before anything runs.
    let out = learn_command(&path, "2", &["--flag-rounds", "1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--flag-rounds"), "{}", stderr(&out));
    // --keep-flags leaves the flags and records no choice.
    std::fs::write(&path, &machine).unwrap();
    let out = learn_command(&path, "2", &["--keep-flags"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let m = Machine::load(&path).unwrap();
    assert_eq!(m.compiler.flags, ["-O1", "-fopenmp"]);
    assert!(m.learned.unwrap().flag_calibration.is_none());
}

/// Without `--keep-division`, learn times its division kernel built to divide by literals
/// through the reciprocal and with a division, records both times and the ratios round by
/// round, and writes the form `flags::choose` picks from them into `compiler.division` (absent:
/// the reciprocal); `--keep-division` keeps the file's form, `divide` included.
#[test]
fn learn_chooses_the_division_by_measurement() {
    use absinthe_model::formats::machine::Division;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.yaml");
    std::fs::write(&path, MACHINE).unwrap();
    let out = learn_command(&path, "2", &["--keep-flags", "--division-rounds", "3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let m = Machine::load(&path).unwrap();
    let c = m
        .learned
        .clone()
        .unwrap()
        .division_calibration
        .expect("the choice recorded");
    assert_eq!(c.kernels, ["learn_divide"]);
    assert!(
        c.reciprocal_seconds > 0.0 && c.divide_seconds > 0.0,
        "{c:?}"
    );
    assert_eq!(c.ratios.len(), 3, "{c:?}");
    let ratios = [Some(vec![1.0; 3]), Some(c.ratios.clone())];
    let chosen = absinthe_learn::division::FORMS[absinthe_learn::flags::choose(&ratios)];
    assert_eq!(m.compiler.division, chosen, "{c:?}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text.contains("division: divide"),
        chosen == Division::Divide,
        "{text}"
    );
    let report = stdout(&out);
    assert!(report.contains("compiler.division: "), "{report}");
    assert!(report.contains("learn_divide"), "{report}");
    // --keep-division keeps a file's `divide` and records no choice.
    let dividing = MACHINE.replace(
        "flags: [-O1, -fopenmp]}",
        "flags: [-O1, -fopenmp], division: divide}",
    );
    assert_ne!(dividing, MACHINE);
    std::fs::write(&path, &dividing).unwrap();
    let out = learn_command(&path, "2", &["--keep-flags"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let m = Machine::load(&path).unwrap();
    assert_eq!(m.compiler.division, Division::Divide);
    assert!(m.learned.unwrap().division_calibration.is_none());
}

/// Without `--keep-cache-fraction`, learn times the model's optima of the calibration programs
/// (here one, on a tiny domain) at every fraction tried, records the times, and writes the
/// fraction that the rule of `calibrate::choose` picks from them.
#[test]
fn learn_chooses_the_cache_fraction_by_measurement() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.yaml");
    std::fs::write(&path, MACHINE).unwrap();
    let o = learn_command(&path, "2", &["--calibration-domain", "32,16,12"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let m = Machine::load(&path).unwrap();
    let c = m
        .learned
        .clone()
        .unwrap()
        .cache_calibration
        .expect("calibration recorded");
    let tried = absinthe_learn::calibrate::fractions_to_try(0.3333);
    assert_eq!(c.fractions.len(), tried.len());
    for (written, tried) in c.fractions.iter().zip(&tried) {
        assert!((written - tried).abs() < 1e-4, "{c:?}");
    }
    assert!(
        c.seconds.iter().all(|s| s.is_some_and(|s| s > 0.0)),
        "{c:?}"
    );
    assert_eq!(c.rounds.len(), tried.len(), "{c:?}");
    let rows: Vec<absinthe_learn::calibrate::FractionResult> = c
        .fractions
        .iter()
        .zip(&c.seconds)
        .zip(&c.rounds)
        .map(
            |((&fraction, &seconds), rounds)| absinthe_learn::calibrate::FractionResult {
                fraction,
                per_program: vec![seconds.map(|s| (0, s))],
                seconds,
                rounds: rounds.clone(),
            },
        )
        .collect();
    let expected = absinthe_learn::calibrate::choose(&rows, 0.3333);
    assert!(
        (m.cache_fraction - expected).abs() < 1e-4,
        "wrote {}, the rule picks {expected}: {c:?}",
        m.cache_fraction
    );
    let out = stdout(&o);
    assert!(out.contains("learn_wide6_32x16x12"), "{out}");
    assert!(out.contains("cache_fraction: "), "{out}");
    // Then `group_arrays`, by the same measurement under each limit tried.
    let g = m
        .learned
        .as_ref()
        .unwrap()
        .group_arrays_calibration
        .clone()
        .expect("group-arrays calibration recorded");
    assert_eq!(
        g.limits,
        absinthe_learn::calibrate::limits_to_try(None),
        "{g:?}"
    );
    assert!(
        g.seconds.iter().all(|s| s.is_some_and(|s| s > 0.0)),
        "{g:?}"
    );
    assert_eq!(g.rounds.len(), g.limits.len(), "{g:?}");
    let rows: Vec<absinthe_learn::calibrate::LimitResult> = g
        .limits
        .iter()
        .zip(&g.seconds)
        .zip(&g.rounds)
        .map(
            |((&limit, &seconds), rounds)| absinthe_learn::calibrate::LimitResult {
                limit,
                per_program: vec![seconds.map(|s| (0, s))],
                seconds,
                rounds: rounds.clone(),
            },
        )
        .collect();
    assert_eq!(
        m.group_arrays,
        absinthe_learn::calibrate::choose_limit(&rows, None),
        "{g:?}"
    );
    assert!(out.contains("learn_fields4_32x16x12"), "{out}");
    assert!(out.contains("group_arrays: "), "{out}");
}

/// `--generated-kernels` times the generated kernel of every shape (bundled per program),
/// verified bit for bit by their harnesses: one kept run per shape and round.
#[test]
fn learn_can_time_the_generated_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.yaml");
    std::fs::write(&path, MACHINE).unwrap();
    let data = dir.path().join("data");
    let o = learn_command(
        &path,
        "2",
        &["--generated-kernels", "--keep-data", data.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let m = Machine::load(&path).unwrap();
    assert!(m.params.is_some());
    // 15 programs x 2 shapes x 2 rounds of one run (the harness drops none of one run).
    assert_eq!(m.learned.unwrap().samples, 60);
    let csv = std::fs::read_to_string(data.join("measurements.csv")).unwrap();
    let seconds = column(&csv, "seconds");
    assert!(csv.lines().skip(1).all(|l| {
        let seconds: f64 = l.split(',').nth(seconds).unwrap().parse().unwrap();
        seconds > 0.0
    }));
}

/// The index of a CSV column by its header.
fn column(csv: &str, name: &str) -> usize {
    let header = csv.lines().next().unwrap();
    header
        .split(',')
        .position(|c| c == name)
        .unwrap_or_else(|| panic!("no column {name} in {header}"))
}

/// `--streamed-shapes` (with five shapes, one streamed shape per slow program) also times the
/// three slow programs that stream along y as generated kernels streamed over whole rows,
/// verified by their harnesses, marked `streamed` in the CSV.
#[test]
fn learn_can_time_streamed_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.yaml");
    std::fs::write(&path, MACHINE).unwrap();
    let data = dir.path().join("data");
    let o = learn_command_with(
        &path,
        "5",
        "2",
        &["--streamed-shapes", "--keep-data", data.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let csv = std::fs::read_to_string(data.join("measurements.csv")).unwrap();
    let (streamed, seconds, tiles_x) = (
        column(&csv, "streamed"),
        column(&csv, "seconds"),
        column(&csv, "tiles_x"),
    );
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|r| r[streamed] == "1")
        .collect();
    // 3 programs x 1 shape x 2 rounds of one run.
    assert_eq!(rows.len(), 6, "{csv}");
    for r in &rows {
        assert!(
            r[0].starts_with("learn_slow") && r[0].ends_with("w0"),
            "{r:?}"
        );
        assert_eq!(r[tiles_x], "1");
        assert!(r[seconds].parse::<f64>().unwrap() > 0.0);
    }
    let m = Machine::load(&path).unwrap();
    assert_eq!(
        m.learned.unwrap().samples,
        csv.lines().count() as u64 - 1,
        "every run enters the fit"
    );
}

#[test]
fn interrupted_learn_leaves_the_file_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.yaml");
    std::fs::write(&path, MACHINE).unwrap();
    let mut cmd = learn_command(&path, "50", &[]);
    // A shell that runs the tests in the background (`nohup make test &`) leaves SIGINT
    // ignored, and an ignored signal stays ignored across exec: give learn the default
    // disposition, as a terminal's Ctrl-C finds it.
    // SAFETY: `signal` is async-signal-safe, the only call between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = cmd.stderr(std::process::Stdio::piped()).spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // Still running: it is the interrupt that stops it, not a bad argument.
    assert!(child.try_wait().unwrap().is_none(), "learn ended early");
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), MACHINE);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "no temporary file is left behind");
}

#[test]
fn runtime_tiled_kernels_match_the_reference_bit_for_bit() {
    for (file, shapes) in [
        (
            "configs/hdiff.yaml",
            vec![[1, 1, 1], [3, 5, 7], [7, 2, 60], [64, 64, 60], [2, 9, 1]],
        ),
        (
            "configs/example2.yaml",
            vec![[1, 1, 1], [5, 3, 2], [4, 4, 4]],
        ),
    ] {
        let program = Program::load(&root().join(file)).unwrap();
        let analysis = Analysis::new(&program).unwrap();
        let machine = absinthe_learn::training::lowering_machine(2);
        let config = Configuration::new(vec![0; program.stencils.len()], vec![[2, 3, 4]]);
        let cost = evaluate(&analysis, &machine, &config);
        let schedule = lower_plain(&program, &analysis, &config, &cost).unwrap();
        let files = runtime_tiles::render(&schedule).unwrap();
        let exe = Toolchain::new("g++", &["-O1".to_string(), "-fopenmp".to_string()])
            .with_cache_dir(root().join("target/absinthe-test-cache"))
            .build(&files, &[])
            .unwrap();
        let shapes: Vec<[usize; 3]> = shapes
            .into_iter()
            .map(|s| [0, 1, 2].map(|d| s[d].min(analysis.domain[d])))
            .collect();
        // Verified, then (as learn's later rounds) timed without the reference: twice each.
        for verify in [true, false] {
            let out = Command::new(&exe)
                .args(runtime_tiles::arguments(
                    2,
                    absinthe_codegen::render::Flush::NONE,
                    verify,
                    &shapes,
                ))
                .env("OMP_NUM_THREADS", "2")
                .output()
                .unwrap();
            let results = runtime_tiles::parse_tile_results(&stdout(&out)).unwrap();
            assert_eq!(results.len(), shapes.len(), "{file}: {}", stderr(&out));
            for (r, s) in results.iter().zip(&shapes) {
                assert_eq!(r.tiles, *s);
                assert_eq!(
                    r.verified,
                    verify.then_some(true),
                    "{file} at tile counts {s:?} (verify: {verify})"
                );
                assert_eq!(r.times.len(), 2);
                assert!(r.times.iter().all(|t| t.is_finite() && *t >= 0.0));
            }
            assert!(out.status.success());
        }
        // Anything but `verify` or `verified` is refused with the usage.
        let out = Command::new(&exe)
            .args(["1", "0", "check", "1", "1", "1"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains("verify|verified"), "{}", stderr(&out));
    }
}

#[test]
fn rendering_runtime_tiles_needs_one_group() {
    let program = Program::load(&root().join("configs/hdiff.yaml")).unwrap();
    let analysis = Analysis::new(&program).unwrap();
    let n = program.stencils.len();
    let config = Configuration::new((0..n).collect(), vec![[1, 1, 1]; n]);
    let cost = evaluate(
        &analysis,
        &absinthe_learn::training::lowering_machine(2),
        &config,
    );
    let schedule = lower(&program, &analysis, &config, &cost).unwrap();
    let err = runtime_tiles::render(&schedule).unwrap_err().to_string();
    assert!(err.contains("single fused group"), "{err}");
}

fn points() -> Vec<Point> {
    (1..=12)
        .map(|k| Point {
            label: format!("v{k}"),
            predicted: k as f64 * 1e-3,
            measured: k as f64 * 1e-3 * (1.0 + 0.03 * (k % 4) as f64),
            optimum: k == 1,
        })
        .collect()
}

#[test]
fn plots_are_valid_png_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("acc.png");
    plot(&png, "test", &points()).unwrap();
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert!(bytes.len() > 2000);
    let svg = dir.path().join("acc.svg");
    plot(&svg, "test", &points()).unwrap();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.trim_start().starts_with("<svg") && text.trim_end().ends_with("</svg>"));
    assert!(text.contains("<circle") || text.contains("<polygon"));
    let err = plot(&dir.path().join("acc.gif"), "test", &points()).unwrap_err();
    assert!(err.to_string().contains(".png or .svg"), "{err}");
}

#[test]
fn bench_plot_draws_predicted_against_measured() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("heat.png");
    let out = absinthe(&[
        "bench",
        "configs/heat4.yaml",
        "--machine",
        "machines/default.yaml",
        "--variants",
        "opt,unfused,fused,random:4",
        "--runs",
        "4",
        "--no-roofline",
        "--plot",
        png.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Spearman"), "{text}");
    assert!(text.contains("within 20%"), "{text}");
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
}
