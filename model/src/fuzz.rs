//! Fuzzing of every reader of user text: the program, machine and solution files and the
//! expression parser, fed shipped and generated files under random byte-level mutations with
//! hostile tokens (huge numbers, control characters, byte-order marks, YAML anchors, deep
//! nesting). Each property asserts that nothing panics, that every error names its file and
//! stays short, and that a valid program round-trips through [`Program::to_yaml`]; a valid
//! program is also analysed, inlined, searched and costed, so the numbers it carries reach the
//! arithmetic behind the readers.
//!
//! `make test` runs a few hundred cases per property; a long run sets `PROPTEST_CASES`, e.g.
//! `PROPTEST_CASES=200000 cargo test -p absinthe-model --release fuzz::`.

use proptest::prelude::*;

use crate::cost_model::evaluate::{evaluate, Configuration};
use crate::cost_model::options::SearchSpace;
use crate::cost_model::search::admissible_tilings;
use crate::formats::diagnostic::{Diagnostic, FileError};
use crate::formats::machine::Machine;
use crate::language::analysis::Analysis;
use crate::language::expr::parse_expr;
use crate::language::generate::{random_program, RandomShape};
use crate::language::program::Program;
use crate::output::solution::Solution;

const PROGRAMS: [&str; 6] = [
    include_str!("../../configs/hdiff.yaml"),
    include_str!("../../configs/cosmo_hdiff4.yaml"),
    include_str!("../../configs/heat4.yaml"),
    include_str!("../../configs/example2.yaml"),
    include_str!("../../configs/cosmo_hvdiff.yaml"),
    include_str!("../../configs/cosmo_colpres.yaml"),
];

const MACHINES: [&str; 3] = [
    include_str!("../../machines/default.yaml"),
    include_str!("../../machines/h100.yaml"),
    include_str!("../../machines/template.yaml"),
];

const HDIFF_SOLUTION: &str = "program: hdiff
inline: [lap]
groups:
- stencils: [fli, flj]
  tiles: [1, 2, 2]
  tile_size: [128, 64, 32]
- stencils: [out]
  tiles: [2, 2, 1]
  stream: true
";

/// Tokens a hostile user might type, spliced into valid files.
const TOKENS: [&str; 40] = [
    "0",
    "-1",
    "1e999",
    "nan",
    ".inf",
    "-.inf",
    "9223372036854775807",
    "18446744073709551616",
    "4294967296",
    "2147483647",
    "65536",
    "65537",
    "99999999999999999999999999",
    "i+2147483647",
    "k-65536",
    "\0",
    "\u{feff}",
    "\u{7f}",
    "\u{202e}",
    "é",
    "\t",
    "\r\n",
    "\n",
    "\n  - name: x\n    expr: x(i,j,k)\n",
    "[",
    "]",
    "{",
    "}",
    ":",
    ",",
    "(((((((((((((((((((((((((((((((((",
    ")",
    "&a ",
    "*a",
    "<<: *a",
    "!!binary ",
    "---\n",
    "? ",
    "'",
    "\"",
];

/// One edit of a text: delete a range, insert a token, or duplicate a range.
#[derive(Clone, Debug)]
enum Mutation {
    Delete { at: usize, len: usize },
    Insert { at: usize, token: usize },
    Repeat { at: usize, len: usize, times: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1usize..16).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(at, token)| Mutation::Insert { at, token }),
        (any::<usize>(), 1usize..32, 2usize..64).prop_map(|(at, len, times)| Mutation::Repeat {
            at,
            len,
            times
        }),
    ]
}

/// `text` with the mutations applied (positions wrap around and snap to character
/// boundaries).
fn mutate(text: &str, mutations: &[Mutation]) -> String {
    let mut t = text.to_string();
    let boundary = |t: &str, at: usize| {
        let mut at = at % (t.len() + 1);
        while !t.is_char_boundary(at) {
            at -= 1;
        }
        at
    };
    for m in mutations {
        match *m {
            Mutation::Delete { at, len } => {
                let start = boundary(&t, at);
                let end = boundary(&t, start.saturating_add(len).min(t.len()));
                t.replace_range(start..end, "");
            }
            Mutation::Insert { at, token } => {
                let at = boundary(&t, at);
                t.insert_str(at, TOKENS[token]);
            }
            Mutation::Repeat { at, len, times } => {
                let start = boundary(&t, at);
                let end = boundary(&t, start.saturating_add(len).min(t.len()));
                let piece = t[start..end].repeat(times);
                t.insert_str(end, &piece);
            }
        }
    }
    t
}

/// Every error names the file, and none is long however long the input.
fn check_errors(diagnostics: Vec<Diagnostic>) {
    assert!(!diagnostics.is_empty(), "an error without a diagnostic");
    let shown = FileError::new("fuzz.yaml", diagnostics.clone()).to_string();
    let paragraphs = shown
        .lines()
        .filter(|l| !l.starts_with("    |"))
        .collect::<Vec<_>>();
    for p in paragraphs {
        assert!(p.starts_with("error: fuzz.yaml"), "{p}");
    }
    let per = crate::formats::diagnostic::MAX_MESSAGE * 2
        + crate::formats::diagnostic::SNIPPET_WINDOW * 4
        + 64;
    assert!(
        shown.len() <= diagnostics.len() * per,
        "{} bytes",
        shown.len()
    );
}

/// A small machine to cost accepted programs on.
fn machine() -> crate::formats::machine::ModelMachine {
    Machine::from_yaml(MACHINES[0])
        .expect("shipped machine")
        .model_view(8)
        .expect("complete")
}

/// Reads a program text the way `check` and `solve` do, and pushes a valid one through the
/// round trip, the analysis, inlining, the tiling list and the cost model.
fn exercise_program(text: &str) {
    let program = match Program::from_yaml(text) {
        Ok(p) => p,
        Err(d) => return check_errors(d),
    };
    let printed = program.to_yaml();
    let again = Program::from_yaml(&printed).unwrap_or_else(|e| panic!("{e:?}\n{printed}"));
    assert_eq!(again.to_yaml(), printed);
    assert_eq!(again.domain, program.domain);
    assert_eq!(again.halo, program.halo);
    for (a, b) in again.stencils.iter().zip(&program.stencils) {
        assert!(a.exprs().eq(b.exprs()));
    }
    let analysis = match Analysis::new(&program) {
        Ok(a) => a,
        Err(d) => return check_errors(d),
    };
    let view = machine();
    let tilings = admissible_tilings(&analysis, &view, &SearchSpace::default());
    assert!(tilings.len() <= crate::formats::limits::MAX_TILINGS);
    let n = analysis.stencils.len();
    let config = Configuration::new((0..n).collect(), vec![[1, 1, 1]; n]);
    let cost = evaluate(&analysis, &view, &config);
    assert!(!cost.total.is_nan());
    let inlinable: Vec<usize> = (0..n)
        .filter(|&i| !analysis.stencils[i].is_output)
        .collect();
    if let Ok(inlined) = crate::language::inline::inline_program(&program, &inlinable) {
        // An inlined program reads within the same halo, so it analyses too.
        Analysis::new(&inlined).unwrap_or_else(|e| panic!("{e:?}"));
    }
}

fn shape() -> impl Strategy<Value = RandomShape> {
    (1usize..6, 1usize..40, 0i64..4, any::<bool>()).prop_map(|(n, d, o, rich)| RandomShape {
        min_stencils: 1,
        max_stencils: n,
        min_domain: 1,
        max_domain: d,
        max_offset: o,
        rich_expressions: rich,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn program_reader(base in 0..PROGRAMS.len(), edits in prop::collection::vec(mutation(), 1..6)) {
        exercise_program(&mutate(PROGRAMS[base], &edits));
    }

    #[test]
    fn generated_programs(seed in any::<u64>(), shape in shape(), edits in prop::collection::vec(mutation(), 0..4)) {
        exercise_program(&mutate(&random_program(seed, &shape), &edits));
    }

    #[test]
    fn machine_reader(base in 0..MACHINES.len(), edits in prop::collection::vec(mutation(), 1..6)) {
        match Machine::from_yaml(&mutate(MACHINES[base], &edits)) {
            Err(d) => check_errors(d),
            Ok(m) => {
                if let Ok(view) = m.model_view(8) {
                    assert!(view.threads >= 1);
                    assert!(view.cache_values.is_finite() && view.cache_values > 0.0);
                    let program = Program::from_yaml(PROGRAMS[0]).expect("shipped");
                    let analysis = Analysis::new(&program).expect("shipped");
                    let tilings = admissible_tilings(&analysis, &view, &SearchSpace::default());
                    let config = Configuration::new(vec![0, 1, 2, 3], vec![[1, 1, 1]; 4]);
                    let _ = evaluate(&analysis, &view, &config);
                    assert!(tilings.len() <= crate::formats::limits::MAX_TILINGS);
                }
            }
        }
    }

    #[test]
    fn solution_reader(edits in prop::collection::vec(mutation(), 1..6)) {
        let text = mutate(HDIFF_SOLUTION, &edits);
        let solution: Solution = match crate::formats::yaml::from_str(&text) {
            Ok(s) => s,
            Err(d) => return { check_errors(vec![d]); Ok(()) },
        };
        let program = Program::from_yaml(PROGRAMS[0]).expect("shipped");
        let inlined = match solution.program_for(&program) {
            Ok(p) => p,
            Err(d) => return { check_errors(d); Ok(()) },
        };
        let analysis = Analysis::new(&inlined).expect("inlined hdiff analyses");
        match solution.configuration(&analysis) {
            Err(d) => check_errors(d),
            Ok(config) => {
                let cost = evaluate(&analysis, &machine(), &config);
                assert!(!cost.total.is_nan());
            }
        }
    }

    #[test]
    fn expression_parser(
        base in 0..PROGRAMS.len(),
        edits in prop::collection::vec(mutation(), 0..8),
        noise in "[ -~]{0,40}",
    ) {
        // Expressions of the shipped programs, mutated, or printable noise.
        let program = Program::from_yaml(PROGRAMS[base]).expect("shipped");
        let exprs: Vec<String> = program.stencils.iter().map(|s| s.bodies[0].expr.to_string()).collect();
        let source = if edits.is_empty() { noise } else { mutate(&exprs[edits.len() % exprs.len()], &edits) };
        match parse_expr(&source) {
            Ok(e) => {
                let printed = e.to_string();
                let again = parse_expr(&printed).unwrap_or_else(|err| panic!("{err:?}: {printed}"));
                assert_eq!(again, e);
            }
            Err(err) => {
                let d = Diagnostic::new("stencils[0].expr", err.message.clone())
                    .with_snippet(&source, err.column(), 1);
                check_errors(vec![d]);
            }
        }
    }
}
