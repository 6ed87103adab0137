//! Sizes a user controls are bounded before anything is allocated for them: YAML aliases, the
//! tile tables of generated code, the flush buffer, scalar values, and the errors one file may
//! print.

use crate::common::{absinthe, root, stderr, temp_file};
use crate::hostile::assert_clean_error;

/// `absinthe solve configs/hdiff.yaml --solver dp --machine machine`.
fn solve_on(machine: &std::path::Path) -> std::process::Output {
    let m = machine.to_str().unwrap();
    absinthe(&[
        "solve",
        "configs/hdiff.yaml",
        "--solver",
        "dp",
        "--machine",
        m,
    ])
}

/// An alias of a long string repeated 20,000 times in a 1 MB file would expand to 20 GB: every
/// reader refuses aliases, at their line and column, and takes anchors that nothing refers to.
#[test]
fn yaml_aliases_are_refused_where_they_stand() {
    let dir = tempfile::tempdir().unwrap();
    let hdiff = std::fs::read_to_string(root().join("configs/hdiff.yaml")).unwrap();
    let laughs = format!(
        "{hdiff}\ninputs: [&s {}, {}]\n",
        "a".repeat(1_000_000),
        vec!["*s"; 20_000].join(", ")
    );
    let p = temp_file(dir.path(), "laughs.yaml", &laughs);
    let o = absinthe(&["check", p.to_str().unwrap()]);
    let last = hdiff.lines().count() + 2;
    assert_clean_error(
        &o,
        &[
            "laughs.yaml: the alias `*s` at line",
            &format!("line {last} column 1000015"),
            "take no YAML aliases",
        ],
    );
    assert!(stderr(&o).len() < 2000, "{}", stderr(&o));
    // In a machine file too, in block style.
    let machine = std::fs::read_to_string(root().join("machines/default.yaml")).unwrap();
    let m = temp_file(
        dir.path(),
        "m.yaml",
        &format!("{machine}\nx: &big\n  - 1\ny:\n  - *big\n"),
    );
    assert_clean_error(&solve_on(&m), &["m.yaml", "the alias `*big`"]);
    // An anchor alone, a `*` inside a quoted expression, and `&&` are no aliases.
    let anchored = hdiff
        .replacen("name: hdiff", "name: &n hdiff", 1)
        .replace("outputs: [out]", "outputs: [out] # *n in a comment");
    let p = temp_file(dir.path(), "anchored.yaml", &anchored);
    let o = absinthe(&["check", p.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A solution file may ask for as many tiles as the domain has cells; code generation and the
/// cache model list every tile's loop bounds, so past a bound they refuse it, naming the file
/// and the key, instead of allocating gigabytes.
#[test]
fn tile_tables_past_the_bound_are_refused_with_the_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let hdiff = std::fs::read_to_string(root().join("configs/hdiff.yaml")).unwrap();
    let wide = hdiff
        .lines()
        .map(|l| match l.split(':').next() {
            Some("domain") => "domain: [2147483647, 2, 1]".to_string(),
            Some("halo") => "halo: [2, 2, 0]".to_string(),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let p = temp_file(dir.path(), "wide.yaml", &wide);
    let s = temp_file(
        dir.path(),
        "tiles.yaml",
        "program: hdiff\ninline: [lap, fli, flj]\ngroups:\n  - {stencils: [out], tiles: [2147483647, 1, 1]}\n",
    );
    let (p, s) = (p.to_str().unwrap(), s.to_str().unwrap());
    let out = dir.path().join("out");
    let o = absinthe(&["codegen", p, "--solution", s, "-o", out.to_str().unwrap()]);
    assert_clean_error(
        &o,
        &[
            "tiles.yaml: invalid configuration: groups[0].tiles",
            "use fewer tiles",
        ],
    );
    assert!(!out.exists(), "nothing is written");
    let o = absinthe(&["cache", p, "--solution", s]);
    assert_clean_error(&o, &["tiles.yaml", "groups[0].tiles", "use fewer tiles"]);
}

/// `--flush-bytes` sizes a buffer the harness allocates: past 16 GiB it is refused before
/// anything is built; a `float` program's scalar must fit a float.
#[test]
fn flush_buffers_and_float_scalars_are_bounded() {
    for command in ["bench", "tune"] {
        let o = absinthe(&[
            command,
            "configs/hdiff.yaml",
            "--flush-bytes",
            "1099511627777",
        ]);
        assert_clean_error(&o, &["--flush-bytes", "from 0 to 17179869184"]);
    }
    let dir = tempfile::tempdir().unwrap();
    let p = temp_file(
        dir.path(),
        "f.yaml",
        "name: f\ntype: float\ndomain: [8, 8, 4]\nhalo: [1, 1, 0]\nscalars: [dt]\noutputs: [out]\nstencils:\n  - name: out\n    expr: \"dt * in(i,j,k)\"\n",
    );
    let out = dir.path().join("cg");
    let o = absinthe(&[
        "codegen",
        p.to_str().unwrap(),
        "--harness",
        "--scalar",
        "dt=1e39",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_clean_error(&o, &["--scalar dt: 1e39 is too large for a float"]);
}

/// A file with a million errors prints the first fifty and counts the rest.
#[test]
fn a_file_prints_at_most_fifty_errors() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = vec!["u"; 100_000].join(", ");
    let text = format!(
        "name: p\ndomain: [8, 8, 4]\nhalo: [1, 1, 0]\ninputs: [{inputs}]\noutputs: [out]\nstencils:\n  - name: out\n    expr: \"u(i,j,k)\"\n"
    );
    let p = temp_file(dir.path(), "many.yaml", &text);
    let o = absinthe(&["check", p.to_str().unwrap()]);
    let err = stderr(&o);
    assert_clean_error(&o, &["more error(s) not shown"]);
    assert!(err.lines().count() <= 60, "{} lines", err.lines().count());
}

/// A subnormal cost parameter loses the precision `verify` checks estimates with, and an escaped
/// control character in a machine's name would reach the terminal: both refused, by key.
#[test]
fn subnormal_parameters_and_control_characters_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let default = std::fs::read_to_string(root().join("machines/default.yaml")).unwrap();
    for (edit, needles) in [
        (
            default.replace("peel: 2.3e-10", "peel: 5e-324"),
            ["params.fast.peel", "at least 1e-100"],
        ),
        (
            default.replace(
                "name: xeon-sapphire-rapids-2core-default",
                "name: \"m\\u001b[31mRED\"",
            ),
            ["name", "control character U+001B"],
        ),
    ] {
        assert_ne!(edit, default);
        let m = temp_file(dir.path(), "m.yaml", &edit);
        assert_clean_error(&solve_on(&m), &["m.yaml", needles[0], needles[1]]);
    }
}
