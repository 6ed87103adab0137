//! `absinthe verify` and `absinthe compare`, and the Z3 encodings behind them: certificates for
//! solver optima, rejections of tampered solutions with the right reason, a soundness check
//! that fails on a broken linearization, and three backends that agree.

use absinthe_model::cost_model::evaluate::evaluate;
use absinthe_model::cost_model::exact::{decimal, exact_cost};
use absinthe_model::cost_model::options::MilpOptions;
use absinthe_model::cost_model::search::exhaustive;
use absinthe_model::encodings::linearize::{recorded_max, recorded_product};
use absinthe_model::encodings::lp::{LinExpr, Milp};
use absinthe_model::encodings::smt::{nonlinear, soundness_queries_of, DigitRange};
use absinthe_solvers::z3::{check, SmtStatus};

use crate::common::{absinthe, analyse, stdout, temp_file};

const MACHINE: &str = "machines/default.yaml";

/// Solves `program` with HiGHS and returns the solution file's text.
fn solve(program: &str, extra: &[&str]) -> String {
    let mut args = vec!["--format", "yaml"];
    args.extend_from_slice(extra);
    solve_on(program, MACHINE, &args)
}

/// `absinthe solve program --machine machine extra...`, which must succeed: its standard output.
fn solve_on(program: &str, machine: &str, extra: &[&str]) -> String {
    let mut args = vec!["solve", program, "--machine", machine];
    args.extend_from_slice(extra);
    let o = absinthe(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    stdout(&o)
}

fn verify(program: &str, solution: &std::path::Path, extra: &[&str]) -> (i32, String) {
    verify_on(program, MACHINE, solution, extra)
}

/// `absinthe verify` of `solution` on `machine` with a 60 s limit: exit code and all output.
fn verify_on(
    program: &str,
    machine: &str,
    solution: &std::path::Path,
    extra: &[&str],
) -> (i32, String) {
    let s = solution.to_string_lossy().into_owned();
    let mut args = vec![
        "verify",
        program,
        "--machine",
        machine,
        "--solution",
        &s,
        "--time-limit",
        "60",
    ];
    args.extend_from_slice(extra);
    let o = absinthe(&args);
    (
        o.status.code().unwrap_or(-1),
        stdout(&o) + &String::from_utf8_lossy(&o.stderr),
    )
}

#[test]
fn verify_certifies_solver_optima() {
    let dir = tempfile::tempdir().unwrap();
    for (name, extra) in [
        ("example2", &[][..]),
        ("j3d7pt", &[][..]),
        ("hdiff", &["--skip", "soundness"][..]),
    ] {
        let program = format!("configs/{name}.yaml");
        let sol = temp_file(dir.path(), &format!("{name}.yaml"), &solve(&program, &[]));
        let (code, out) = verify(&program, &sol, extra);
        assert_eq!(code, 0, "{name}: {out}");
        assert!(
            out.contains("certified") && !out.contains("unknown"),
            "{name}: {out}"
        );
        if extra.is_empty() {
            assert!(out.contains("proved exact (UNSAT)"), "{name}: {out}");
        }
    }
}

#[test]
fn verify_rejects_a_wrong_estimate() {
    let dir = tempfile::tempdir().unwrap();
    let text = solve("configs/example2.yaml", &[]);
    let line = text
        .lines()
        .find(|l| l.starts_with("estimate_seconds:"))
        .unwrap();
    let value: f64 = line["estimate_seconds:".len()..].trim().parse().unwrap();
    let tampered = text.replace(line, &format!("estimate_seconds: {:e}", value * 0.99));
    let sol = temp_file(dir.path(), "s.yaml", &tampered);
    let (code, out) = verify("configs/example2.yaml", &sol, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("wrong estimate"), "{out}");
    assert!(out.contains("REJECTED"), "{out}");
}

/// A configuration outside the program's restrictions is rejected with the restriction it
/// breaks: a sweep's groups compute whole columns.
#[test]
fn verify_names_the_restriction_a_configuration_breaks() {
    let dir = tempfile::tempdir().unwrap();
    let text =
        "program: cosmo_vdiff_implicit\ngroups:\n- stencils: [cp, dp, tnew]\n  tiles: [1, 32, 2]\n";
    let sol = temp_file(dir.path(), "s.yaml", text);
    let (code, out) = verify("configs/cosmo_vdiff_implicit.yaml", &sol, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("group 0 has 2 tiles along k, outside 1..=1 (the program has a sweep"),
        "{out}"
    );
}

#[test]
fn verify_rejects_infeasible_tiles() {
    let dir = tempfile::tempdir().unwrap();
    // One tile for all threads, without tile sizes so that only the model can object.
    let text = "program: example2\ngroups:\n- stencils: [s0, s1]\n  tiles: [1, 1, 1]\n";
    let sol = temp_file(dir.path(), "s.yaml", text);
    let (code, out) = verify("configs/example2.yaml", &sol, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("infeasible") && out.contains("1 tiles for"),
        "{out}"
    );
    // Uneven tiles: 7 tiles of 10 along i cover 70 cells of 64.
    let text = "program: example2\ngroups:\n- stencils: [s0, s1]\n  tiles: [7, 8, 2]\n";
    let sol = temp_file(dir.path(), "u.yaml", text);
    let (code, out) = verify("configs/example2.yaml", &sol, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("infeasible") && out.contains("tiles of 10 along i"),
        "{out}"
    );
}

#[test]
fn verify_rejects_a_suboptimal_grouping_and_shows_the_better_one() {
    let dir = tempfile::tempdir().unwrap();
    let (p, m) = tiny_files(dir.path());
    // The optimum fuses both stencils (see compare_agrees_across_backends); force them apart.
    let o = absinthe(&[
        "solve",
        &p,
        "--machine",
        &m,
        "--fix-groups",
        "0,1",
        "--format",
        "yaml",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sol = temp_file(dir.path(), "s.yaml", &stdout(&o));
    let s = sol.to_string_lossy().into_owned();
    let o = absinthe(&[
        "verify",
        &p,
        "--machine",
        &m,
        "--solution",
        &s,
        "--skip",
        "soundness",
        "--time-limit",
        "60",
    ]);
    let out = stdout(&o) + &String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("suboptimal"), "{out}");
    assert!(out.contains("better configuration: groups [0, 0]"), "{out}");
}

/// `n * y` for `n` in 1..=6 (three digits) and `y` in [0, 10].
fn product_milp(
    y_max: f64,
) -> (
    Milp,
    Vec<absinthe_model::encodings::linearize::Linearization>,
    Vec<DigitRange>,
) {
    let mut m = Milp::new("product");
    let bits: Vec<_> = (0..3).map(|k| m.add_binary(format!("b{k}"))).collect();
    let y = m.add_var("y", 0.0, 10.0, false);
    let (_, record) = recorded_product(&mut m, &bits, &LinExpr::var(y), y_max, "z");
    let digits = vec![DigitRange {
        bits,
        lo: 1.0,
        hi: 6.0,
    }];
    (m, vec![record], digits)
}

#[test]
fn soundness_check_can_fail_on_a_broken_linearization() {
    let (m, records, digits) = product_milp(10.0);
    let q = soundness_queries_of(&m, &records, &digits);
    assert_eq!(
        check(&q[0].smt, Some(20.0)).unwrap().status,
        SmtStatus::Unsat
    );
    // y_max = 5 < 10: z_k <= 5 b_k cuts off n * y for y > 5.
    let (m, records, digits) = product_milp(5.0);
    let q = soundness_queries_of(&m, &records, &digits);
    let outcome = check(&q[0].smt, Some(20.0)).unwrap();
    assert_eq!(outcome.status, SmtStatus::Sat);
    assert!(outcome.value("y").is_some_and(|y| y > decimal(5.0)));
    // A maximum with too small a big-M is caught as well.
    let mut m = Milp::new("max");
    let a = m.add_var("a", 0.0, 8.0, false);
    let b = m.add_var("b", 0.0, 8.0, false);
    let (_, ok) = recorded_max(&mut m, &LinExpr::var(a), &LinExpr::var(b), 8.0, "u");
    let (_, broken) = recorded_max(&mut m, &LinExpr::var(a), &LinExpr::var(b), 3.0, "w");
    let q = soundness_queries_of(&m, &[ok, broken], &[]);
    assert_eq!(
        check(&q[0].smt, Some(20.0)).unwrap().status,
        SmtStatus::Unsat
    );
    assert_eq!(check(&q[1].smt, Some(20.0)).unwrap().status, SmtStatus::Sat);
}

const TINY: &str = "name: tiny\ndomain: [8, 6, 4]\nhalo: [1, 1, 0]\noutputs: [b]\nstencils:\n  - name: a\n    expr: 0.5 * (x(i+1,j,k) + x(i-1,j,k))\n  - name: b\n    expr: a(i,j+1,k) - a(i,j-1,k) + a(i,j,k)\n";

const TINY_MACHINE: &str = "name: tiny\ncores: 4\ncache_bytes: 1536\ncache_fraction: 1.0\nvalue_bytes: 8\nparams:\n  fast: {peel: 2.0e-9, body: 1.0e-9}\n  slow_base: {peel: 3.0e-8, body: 5.0e-10}\n  slow_stream: {peel: 1.0e-8, body: 2.0e-9}\n";

/// TINY and TINY_MACHINE written to `dir`: (program path, machine path).
fn tiny_files(dir: &std::path::Path) -> (String, String) {
    let program = temp_file(dir, "tiny.yaml", TINY);
    let machine = temp_file(dir, "m.yaml", TINY_MACHINE);
    (
        program.to_string_lossy().into_owned(),
        machine.to_string_lossy().into_owned(),
    )
}

fn tiny_machine() -> absinthe_model::formats::machine::ModelMachine {
    machine_of(TINY_MACHINE)
}

fn machine_of(text: &str) -> absinthe_model::formats::machine::ModelMachine {
    absinthe_model::formats::machine::Machine::from_yaml(text)
        .unwrap()
        .model_view(8)
        .unwrap()
}

/// A program like TINY with reads along z, so that the tiles' depth costs recomputation.
const TINY_Z: &str = "name: tinyz\ndomain: [8, 6, 8]\nhalo: [1, 1, 2]\noutputs: [b]\nstencils:\n  - name: a\n    expr: 0.5 * (x(i,j,k+1) + x(i,j,k-1))\n  - name: b\n    expr: a(i,j+1,k) - a(i,j-1,k) + a(i,j,k-1)\n";

/// TINY_MACHINE with a crowding charge (`evaluate::crowded`) that TINY_Z's groups cross: a group
/// of stream weight 3 with whole-row tiles fewer than 4 along z keeps more than 6 row streams
/// in flight.
fn tiny_crowded_text() -> String {
    format!("{TINY_MACHINE}  crowded: {{row_streams: 6, stream_body: 4.0e-9}}\n")
}

#[test]
fn nonlinear_encoding_certifies_the_exhaustive_optimum() {
    let plain = tiny_machine();
    let crowded = machine_of(&tiny_crowded_text());
    let options = MilpOptions::default();
    certify_with_nonlinear(&analyse(TINY), &plain);
    // The charge moves TINY_Z's optimum: the plain optimum is crowded.
    let analysis = analyse(TINY_Z);
    let (plain_best, _) = exhaustive(&analysis, &plain, &options.space).expect("feasible");
    let (crowded_best, _) = exhaustive(&analysis, &crowded, &options.space).expect("feasible");
    assert!(
        evaluate(&analysis, &crowded, &plain_best)
            .groups
            .iter()
            .any(|g| g.crowded),
        "{plain_best:?}"
    );
    assert_ne!(plain_best, crowded_best);
    certify_with_nonlinear(&analysis, &plain);
    certify_with_nonlinear(&analysis, &crowded);
}

/// The nonlinear encoding of `analysis` on `machine` has nothing below the exhaustive optimum
/// and a configuration within 0.1% of it.
fn certify_with_nonlinear(
    analysis: &absinthe_model::Analysis,
    machine: &absinthe_model::formats::machine::ModelMachine,
) {
    let options = MilpOptions::default();
    let (best, seconds) = exhaustive(analysis, machine, &options.space).expect("feasible");
    let exact_best = exact_cost(analysis, machine, &best).total;
    // The nonlinear encoding: nothing below the optimum, something below 1.001 × it.
    let scale = decimal(1e6);
    let mut below = nonlinear(analysis, machine, &options);
    below.objective_below(&(&exact_best * &scale));
    assert_eq!(check(&below, Some(60.0)).unwrap().status, SmtStatus::Unsat);
    let mut above = nonlinear(analysis, machine, &options);
    above.objective_below(&(&exact_best * &scale * decimal(1.001)));
    let outcome = check(&above, Some(60.0)).unwrap();
    assert_eq!(outcome.status, SmtStatus::Sat);
    let config = above.decode(|n| outcome.value(n)).unwrap();
    let cost = evaluate(analysis, machine, &config);
    assert!(
        cost.is_feasible() && (cost.total - seconds).abs() <= 1e-3 * seconds,
        "{config:?} vs {best:?}"
    );
}

/// With a crowding charge (`evaluate::crowded`): the digits MILP's solution of TINY_Z is certified
/// by `verify` (the exact estimate, the soundness proofs of its linearizations, the optimality
/// query on the linear SMT encoding), and HiGHS, CBC and the DP agree on the optimum.
#[test]
fn verify_certifies_an_optimum_with_crowding() {
    certified_and_agreed_on(&tiny_crowded_text());
}

/// TINY_MACHINE with an exposed share (`params.exposed`), alone and with the crowding charge.
fn tiny_exposed_text(base: &str, exposed: f64) -> String {
    format!("{base}  exposed: {exposed}\n")
}

/// With an exposed share (`max + θ min` per term), the exhaustive optimum of TINY and TINY_Z is
/// certified by the nonlinear encoding; the digits MILP's solution (whose objective then has a
/// constant) by `verify`; and HiGHS, CBC (both warm-started) and the DP agree on the optimum.
#[test]
fn verify_certifies_an_optimum_with_an_exposed_share() {
    let plain = tiny_machine();
    for exposed in [0.25, 1.0] {
        let machine = machine_of(&tiny_exposed_text(TINY_MACHINE, exposed));
        certify_with_nonlinear(&analyse(TINY), &machine);
        certify_with_nonlinear(&analyse(TINY_Z), &machine);
        // The share prices every configuration at least as high as the plain `max`.
        let analysis = analyse(TINY_Z);
        let (best, seconds) =
            exhaustive(&analysis, &machine, &MilpOptions::default().space).expect("feasible");
        assert!(
            seconds > evaluate(&analysis, &plain, &best).total,
            "{best:?}"
        );
    }
    certified_and_agreed_on(&tiny_exposed_text(TINY_MACHINE, 0.25));
    certified_and_agreed_on(&tiny_exposed_text(&tiny_crowded_text(), 0.5));
}

/// On the machine `text`: HiGHS, CBC and the DP agree on TINY_Z's optimum, and `verify`
/// certifies the digits MILP's solution.
fn certified_and_agreed_on(text: &str) {
    let dir = tempfile::tempdir().unwrap();
    let p = temp_file(dir.path(), "tinyz.yaml", TINY_Z);
    let m = temp_file(dir.path(), "m.yaml", text);
    let (p, m) = (p.to_string_lossy(), m.to_string_lossy());
    let mut objectives = Vec::new();
    for (solver, encoding) in [("highs", "digits"), ("cbc", "digits"), ("dp", "ranges")] {
        let args = [
            "--solver",
            solver,
            "--encoding",
            encoding,
            "--format",
            "json",
        ];
        let v: serde_json::Value = serde_json::from_str(&solve_on(&p, &m, &args)).unwrap();
        objectives.push(v["estimate_seconds"].as_f64().unwrap());
    }
    assert!(
        objectives
            .iter()
            .all(|x| (x - objectives[0]).abs() <= 1e-9 * objectives[0]),
        "{objectives:?}"
    );
    let text = solve_on(&p, &m, &["--encoding", "digits", "--format", "yaml"]);
    let sol = temp_file(dir.path(), "s.yaml", &text);
    let (code, out) = verify_on(&p, &m, &sol, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("certified") && !out.contains("unknown"),
        "{out}"
    );
}

#[test]
fn compare_agrees_across_backends() {
    let dir = tempfile::tempdir().unwrap();
    let (p, m) = tiny_files(dir.path());
    let o = absinthe(&[
        "compare",
        &p,
        "--machine",
        &m,
        "--solvers",
        "cbc,highs,z3",
        "--time-limit",
        "60",
        "--format",
        "json",
    ]);
    let out = stdout(&o);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["agree"], true);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for r in rows {
        assert_eq!(r["status"], "optimal", "{r}");
    }
    let o = absinthe(&[
        "compare",
        "configs/example2.yaml",
        "--machine",
        MACHINE,
        "--solvers",
        "cbc,highs",
    ]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert!(stdout(&o).contains("all solvers agree"));
}

#[test]
fn emit_smt2_writes_an_smt_lib_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("e.smt2");
    let f = file.to_string_lossy().into_owned();
    let o = absinthe(&[
        "solve",
        "configs/example2.yaml",
        "--machine",
        MACHINE,
        "--no-inline",
        "--emit",
        "smt2",
        &f,
    ]);
    assert!(o.status.success());
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("(set-logic QF_LIRA)"));
    assert!(text.contains("(declare-fun cut_0 () Int)"));
    assert!(text.contains("(minimize objective)"));
    assert!(text.trim_end().ends_with("(get-model)"));
}
